/* arena.c - bump allocator: many small allocations, freed with one call. */
#include "core.h"

#include <stdlib.h>
#include <string.h>

struct ptc_arena_block {
  ptc_arena_block* next;
  size_t used, cap;
  _Alignas(16) unsigned char mem[];
};

void ptc_arena_init(ptc_arena* a, size_t block_size) {
  a->head = NULL;
  a->block_size = block_size ? block_size : 64 * 1024;
}

void* ptc_arena_alloc(ptc_arena* a, size_t size) {
  size_t need = (size + 15) & ~(size_t)15;
  if (need < size) return NULL;
  ptc_arena_block* b = a->head;
  if (!b || b->cap - b->used < need) {
    size_t cap = need > a->block_size ? need : a->block_size;
    b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->cap = cap;
    b->used = 0;
    b->next = a->head;
    a->head = b;
  }
  void* p = b->mem + b->used;
  b->used += need;
  memset(p, 0, size);
  return p;
}

void* ptc_arena_memdup(ptc_arena* a, const void* p, size_t size) {
  void* q = ptc_arena_alloc(a, size ? size : 1);
  if (q && size) memcpy(q, p, size);
  return q;
}

char* ptc_arena_strdup(ptc_arena* a, const char* s) {
  return s ? ptc_arena_memdup(a, s, strlen(s) + 1) : NULL;
}

void ptc_arena_free(ptc_arena* a) {
  ptc_arena_block* b = a->head;
  while (b) {
    ptc_arena_block* n = b->next;
    free(b);
    b = n;
  }
  a->head = NULL;
}
