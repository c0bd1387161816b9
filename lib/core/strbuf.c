/* strbuf.c - growable NUL-terminated strings and the two-call copy-out. */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ptc_sb_init(ptc_strbuf* sb) { memset(sb, 0, sizeof *sb); }

static bool sb_grow(ptc_strbuf* sb, size_t extra) {
  if (sb->oom) return false;
  size_t need = sb->len + extra + 1;
  if (need <= sb->cap) return true;
  size_t cap = sb->cap ? sb->cap : 64;
  while (cap < need) cap *= 2;
  char* d = realloc(sb->data, cap);
  if (!d) {
    sb->oom = true;
    return false;
  }
  sb->data = d;
  sb->cap = cap;
  return true;
}

void ptc_sb_appendn(ptc_strbuf* sb, const char* s, size_t n) {
  if (!sb_grow(sb, n)) return;
  memcpy(sb->data + sb->len, s, n);
  sb->len += n;
  sb->data[sb->len] = 0;
}

void ptc_sb_append(ptc_strbuf* sb, const char* s) { ptc_sb_appendn(sb, s, strlen(s)); }

void ptc_sb_printf(ptc_strbuf* sb, const char* fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  char probe[1];
  int n = vsnprintf(probe, sizeof probe, fmt, ap); /* length only */
  va_end(ap);
  if (n > 0 && sb_grow(sb, (size_t)n)) {
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap2);
    sb->len += (size_t)n;
  }
  va_end(ap2);
}

void ptc_sb_free(ptc_strbuf* sb) {
  free(sb->data);
  ptc_sb_init(sb);
}

char* ptc_sb_take(ptc_strbuf* sb) {
  if (sb->oom) {
    ptc_sb_free(sb);
    return NULL;
  }
  if (!sb->data && !sb_grow(sb, 0)) return NULL;
  if (sb->len == 0) sb->data[0] = 0;
  char* d = sb->data;
  ptc_sb_init(sb);
  return d;
}

size_t ptc_copy_out(const char* s, char* buf, size_t cap) {
  size_t n = strlen(s);
  if (buf && cap) {
    size_t k = n < cap - 1 ? n : cap - 1;
    memcpy(buf, s, k);
    buf[k] = 0;
  }
  return n;
}
