/* op_lookup.c - op lookup for a graph: the built-in registry first, then
 * the ops registered on the graph's context (host custom ops). The
 * per-context table hangs on the context (ptc_context.ext_ops), is created
 * on first registration and destroyed with the context. */
#include "op.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct op_entry {
  const op_def* def;
  void* owner;
  void (*free_owner)(void*);
} op_entry;

typedef struct op_table {
  ptc_ctx_ext base; /* first: the context sees only this */
  pthread_mutex_t lock;
  ptc_vec entries;  /* op_entry */
} op_table;

static void table_destroy(ptc_ctx_ext* x) {
  op_table* t = (op_table*)x;
  for (size_t i = 0; i < t->entries.len; i++) {
    op_entry* e = &PTC_VEC_AT(&t->entries, op_entry, i);
    if (e->free_owner) e->free_owner(e->owner);
  }
  ptc_vec_free(&t->entries);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

/* The context's table, created if `create` (NULL on OOM or when absent). */
static op_table* table_of(ptc_context* ctx, bool create) {
  ptc_ctx_ext* x = atomic_load(&ctx->ext_ops);
  if (x || !create) return (op_table*)x;
  op_table* t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->base.destroy = table_destroy;
  pthread_mutex_init(&t->lock, NULL);
  ptc_vec_init(&t->entries, sizeof(op_entry));
  ptc_ctx_ext* expected = NULL;
  if (atomic_compare_exchange_strong(&ctx->ext_ops, &expected, &t->base)) return t;
  table_destroy(&t->base); /* another thread won */
  return (op_table*)expected;
}

static const op_def* table_find(op_table* t, const char* name) {
  for (size_t i = 0; i < t->entries.len; i++) {
    const op_def* d = PTC_VEC_AT(&t->entries, op_entry, i).def;
    if (strcmp(d->name, name) == 0) return d;
  }
  return NULL;
}

const op_def* graph_find_op(const ptc_graph* g, const char* name) {
  const op_def* d = op_find(name);
  if (d || !name || !g || !g->ctx) return d;
  op_table* t = table_of(g->ctx, false);
  if (!t) return NULL;
  pthread_mutex_lock(&t->lock);
  d = table_find(t, name);
  pthread_mutex_unlock(&t->lock);
  return d;
}

ptc_status graph_register_op(ptc_context* ctx, const op_def* def, void* owner,
                             void (*free_owner)(void* owner)) {
  if (op_find(def->name))
    return PTC_ERR(ALREADY_EXISTS, "op '%s' is a built-in op", def->name);
  op_table* t = table_of(ctx, true);
  if (!t) return ptc_status_oom();
  op_entry e = {def, owner, free_owner};
  ptc_status s = PTC_OK;
  pthread_mutex_lock(&t->lock);
  if (table_find(t, def->name))
    s = PTC_ERR(ALREADY_EXISTS, "op '%s' is already registered on this context", def->name);
  else if (!ptc_vec_push(&t->entries, &e))
    s = ptc_status_oom();
  pthread_mutex_unlock(&t->lock);
  return s;
}
