/* vec.c - growable arrays of fixed-size items. */
#include "core.h"

#include <stdlib.h>
#include <string.h>

void ptc_vec_init(ptc_vec* v, size_t item_size) {
  v->data = NULL;
  v->len = v->cap = 0;
  v->item = item_size;
}

bool ptc_vec_reserve(ptc_vec* v, size_t n) {
  if (n <= v->cap) return true;
  size_t cap = v->cap ? v->cap : 8;
  while (cap < n) {
    if (cap > SIZE_MAX / 2) return false;
    cap *= 2;
  }
  if (cap > SIZE_MAX / v->item) return false;
  void* d = realloc(v->data, cap * v->item);
  if (!d) return false;
  v->data = d;
  v->cap = cap;
  return true;
}

void* ptc_vec_push(ptc_vec* v, const void* x) {
  if (!ptc_vec_reserve(v, v->len + 1)) return NULL;
  void* p = (char*)v->data + v->len * v->item;
  if (x)
    memcpy(p, x, v->item);
  else
    memset(p, 0, v->item);
  v->len++;
  return p;
}

void ptc_vec_free(ptc_vec* v) {
  free(v->data);
  v->data = NULL;
  v->len = v->cap = 0;
}
