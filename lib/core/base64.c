/* base64.c - RFC 4648 base64 for inline weights in JSON graphs. */
#include "core.h"

#include <stdlib.h>

static const char enc_tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char* ptc_base64_encode(const void* p, size_t n) {
  const unsigned char* b = p;
  size_t out_len = (n + 2) / 3 * 4;
  char* o = malloc(out_len + 1);
  if (!o) return NULL;
  size_t j = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)b[i] << 16;
    if (i + 1 < n) v |= (uint32_t)b[i + 1] << 8;
    if (i + 2 < n) v |= b[i + 2];
    o[j++] = enc_tab[(v >> 18) & 63];
    o[j++] = enc_tab[(v >> 12) & 63];
    o[j++] = i + 1 < n ? enc_tab[(v >> 6) & 63] : '=';
    o[j++] = i + 2 < n ? enc_tab[v & 63] : '=';
  }
  o[j] = 0;
  return o;
}

static int dec_char(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool ptc_base64_decode(const char* s, size_t len, void** out, size_t* out_len) {
  if (len % 4) return false;
  size_t pad = 0;
  if (len >= 1 && s[len - 1] == '=') pad++;
  if (len >= 2 && s[len - 2] == '=') pad++;
  size_t n = len / 4 * 3 - pad;
  unsigned char* o = malloc(n ? n : 1);
  if (!o) return false;
  size_t j = 0;
  for (size_t i = 0; i < len; i += 4) {
    int v[4];
    for (int k = 0; k < 4; k++) {
      char c = s[i + k];
      bool is_pad_pos = i + 4 == len && k >= 4 - (int)pad;
      v[k] = is_pad_pos ? 0 : dec_char(c);
      if (v[k] < 0 || (c == '=' && !is_pad_pos)) {
        free(o);
        return false;
      }
    }
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
    if (j < n) o[j++] = (unsigned char)(w >> 16);
    if (j < n) o[j++] = (unsigned char)(w >> 8);
    if (j < n) o[j++] = (unsigned char)w;
  }
  *out = o;
  *out_len = n;
  return true;
}
