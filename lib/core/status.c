/* status.c - ptc_status error objects: code, message, optional details. */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct status_detail {
  char* key;
  char* text;
} status_detail;

struct ptc_status_s {
  int32_t code;
  bool is_static;
  char* message;
  size_t n_details;
  status_detail* details;
};

static struct ptc_status_s oom_status = {PTC_CODE_RESOURCE_EXHAUSTED, true,
                                         (char*)"out of memory", 0, NULL};

ptc_status ptc_status_oom(void) { return &oom_status; }

ptc_status ptc_status_newv(int32_t code, const char* fmt, va_list ap) {
  struct ptc_status_s* s = calloc(1, sizeof *s);
  if (!s) return &oom_status;
  va_list ap2;
  va_copy(ap2, ap);
  char probe[1];
  int n = vsnprintf(probe, sizeof probe, fmt, ap2); /* length only */
  va_end(ap2);
  if (n < 0) n = 0;
  s->message = malloc((size_t)n + 1);
  if (!s->message) {
    free(s);
    return &oom_status;
  }
  vsnprintf(s->message, (size_t)n + 1, fmt, ap);
  s->code = code == PTC_CODE_OK ? PTC_CODE_UNKNOWN : code;
  return s;
}

ptc_status ptc_status_new(int32_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ptc_status s = ptc_status_newv(code, fmt, ap);
  va_end(ap);
  return s;
}

ptc_status ptc_status_add_detail(ptc_status s, const char* key, const char* text) {
  if (!s || s->is_static || !key || !text) return s;
  status_detail* d = realloc(s->details, (s->n_details + 1) * sizeof *d);
  if (!d) return s;
  s->details = d;
  char* k = strdup(key);
  char* t = strdup(text);
  if (!k || !t) {
    free(k);
    free(t);
    return s;
  }
  d[s->n_details].key = k;
  d[s->n_details].text = t;
  s->n_details++;
  return s;
}

ptc_status ptc_status_prefix(ptc_status s, const char* fmt, ...) {
  if (!s || s->is_static) return s;
  char prefix[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  size_t n = strlen(prefix) + 2 + strlen(s->message) + 1;
  char* m = malloc(n);
  if (!m) return s;
  snprintf(m, n, "%s: %s", prefix, s->message);
  free(s->message);
  s->message = m;
  return s;
}

int32_t ptc_status_code(ptc_status s) { return s ? s->code : PTC_CODE_OK; }

const char* ptc_status_message(ptc_status s) { return s ? s->message : ""; }

const char* ptc_status_detail(ptc_status s, const char* key) {
  if (!s) return NULL;
  for (size_t i = 0; i < s->n_details; i++)
    if (!key || strcmp(s->details[i].key, key) == 0) return s->details[i].text;
  return NULL;
}

void ptc_status_destroy(ptc_status s) {
  if (!s || s->is_static) return;
  for (size_t i = 0; i < s->n_details; i++) {
    free(s->details[i].key);
    free(s->details[i].text);
  }
  free(s->details);
  free(s->message);
  free(s);
}

const char* ptc_code_name(int32_t code) {
  static const char* const names[] = {
      "OK",        "CANCELLED",        "UNKNOWN",     "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
      "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  if (code < 0 || code > 16) return "UNKNOWN_CODE";
  return names[code];
}
