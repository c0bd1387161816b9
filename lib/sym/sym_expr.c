/* sym_expr.c - expression storage of a sym_env: arena-owned nodes,
 * hash-consing through an open-addressing table keyed by (kind, value, args),
 * per-node facts (bounds, value at the hints) computed once at creation, the
 * canonical orderings used by the builders, and a small pointer memo map. */
#include "sym_internal.h"

#include <stdlib.h>
#include <string.h>

static uint64_t node_hash(sym_kind kind, int64_t value, const sym_expr* const* args, uint32_t n) {
  uint64_t h = ptc_hash_mix(0x5ca1ab1eull + (uint64_t)kind, (uint64_t)value);
  h = ptc_hash_mix(h, n);
  for (uint32_t i = 0; i < n; i++) h = ptc_hash_mix(h, args[i]->hash);
  return h;
}

static bool node_equal(const sym_expr* e, sym_kind kind, int64_t value,
                       const sym_expr* const* args, uint32_t n) {
  if (e->kind != kind || e->value != value || e->n != n) return false;
  for (uint32_t i = 0; i < n; i++)
    if (e->args[i] != args[i]) return false;
  return true;
}

static bool table_grow(sym_env* env) {
  size_t ncap = env->tcap ? env->tcap * 2 : 256;
  if (ncap > SIZE_MAX / sizeof(uint32_t)) return false;
  uint32_t* t = calloc(ncap, sizeof *t);
  if (!t) return false;
  for (size_t i = 0; i < env->count; i++) {
    size_t j = (size_t)env->nodes[i].e->hash & (ncap - 1);
    while (t[j]) j = (j + 1) & (ncap - 1);
    t[j] = (uint32_t)(i + 1);
  }
  free(env->table);
  env->table = t;
  env->tcap = ncap;
  return true;
}

/* Value of the new node at the hints, from its args' stored values. */
static void node_hint(const sym_env* env, sym_kind kind, int64_t value,
                      const sym_expr* const* args, uint32_t n, sym_node* out) {
  out->hint = 0;
  out->hint_state = SYM_HINT_OK;
  if (kind == SYM_CONST) {
    out->hint = value;
    return;
  }
  if (kind == SYM_VAR) {
    int64_t h = env->vars[value].hint;
    if (h == SYM_NO_HINT) out->hint_state = SYM_HINT_UNBACKED;
    else out->hint = h;
    return;
  }
  int64_t small[8] = {0};
  int64_t* v = n <= 8 ? small : malloc((size_t)n * sizeof *v);
  if (!v) {
    out->hint_state = SYM_HINT_ERROR;
    return;
  }
  uint8_t state = SYM_HINT_OK;
  for (uint32_t i = 0; i < n; i++) {
    const sym_node* c = &env->nodes[args[i]->id];
    if (c->hint_state > state) state = c->hint_state;
    v[i] = c->hint;
  }
  if (state == SYM_HINT_OK && sym_apply(kind, v, n, &out->hint) != SYM_EVAL_OK)
    state = SYM_HINT_ERROR;
  out->hint_state = state;
  if (v != small) free(v);
}

const sym_expr* sym_intern(sym_env* env, sym_kind kind, int64_t value,
                           const sym_expr* const* args, uint32_t n) {
  uint64_t h = node_hash(kind, value, args, n);
  if (env->tcap) {
    size_t j = (size_t)h & (env->tcap - 1);
    while (env->table[j]) {
      const sym_expr* e = env->nodes[env->table[j] - 1].e;
      if (e->hash == h && node_equal(e, kind, value, args, n)) return e;
      j = (j + 1) & (env->tcap - 1);
    }
  }
  if (env->count >= UINT32_MAX - 1) return NULL;
  if ((env->count + 1) * 2 > env->tcap && !table_grow(env)) return NULL;
  if (env->count == env->cap) {
    size_t ncap = env->cap ? env->cap * 2 : 256;
    sym_node* nn = realloc(env->nodes, ncap * sizeof *nn);
    if (!nn) return NULL;
    env->nodes = nn;
    env->cap = ncap;
  }
  sym_expr* e = ptc_arena_alloc(&env->arena, sizeof(sym_expr) + (size_t)n * sizeof(e->args[0]));
  if (!e) return NULL;
  e->kind = (uint8_t)kind;
  e->n = n;
  e->id = (uint32_t)env->count;
  e->hash = h;
  e->value = value;
  for (uint32_t i = 0; i < n; i++) e->args[i] = args[i];

  sym_node* node = &env->nodes[env->count];
  node->e = e;
  sym_interval(env, kind, value, args, n, &node->lo, &node->hi);
  node_hint(env, kind, value, args, n, node);
  env->count++;

  size_t j = (size_t)h & (env->tcap - 1);
  while (env->table[j]) j = (j + 1) & (env->tcap - 1);
  env->table[j] = e->id + 1;
  return e;
}

const sym_node* sym_node_of(const sym_env* env, const sym_expr* e) {
  if (!env || !e || e->id >= env->count) return NULL;
  const sym_node* n = &env->nodes[e->id];
  return n->e == e ? n : NULL;
}

void sym_store_free(sym_env* env) {
  free(env->nodes);
  free(env->table);
  env->nodes = NULL;
  env->table = NULL;
  env->count = env->cap = env->tcap = 0;
}

/* ---- canonical ordering ------------------------------------------------------ */

uint32_t sym_factors(const sym_expr* e, const sym_expr* const** f, const sym_expr** tmp) {
  if (e->kind == SYM_MUL) {
    *f = e->args;
    return e->args[e->n - 1]->kind == SYM_CONST ? e->n - 1 : e->n;
  }
  *tmp = e;
  *f = (const sym_expr* const*)tmp;
  return 1;
}

int64_t sym_coef(const sym_expr* e) {
  if (e->kind == SYM_MUL && e->args[e->n - 1]->kind == SYM_CONST) return e->args[e->n - 1]->value;
  if (e->kind == SYM_CONST) return e->value;
  return 1;
}

int sym_base_cmp(const sym_expr* a, const sym_expr* b) {
  const sym_expr *ta, *tb;
  const sym_expr* const* fa;
  const sym_expr* const* fb;
  uint32_t na = sym_factors(a, &fa, &ta);
  uint32_t nb = sym_factors(b, &fb, &tb);
  uint32_t m = na < nb ? na : nb;
  for (uint32_t i = 0; i < m; i++) {
    if (fa[i]->id != fb[i]->id) return fa[i]->id < fb[i]->id ? -1 : 1;
  }
  return na < nb ? -1 : na > nb ? 1 : 0;
}

int sym_expr_cmp(const sym_expr* a, const sym_expr* b) {
  bool ca = a->kind == SYM_CONST, cb = b->kind == SYM_CONST;
  if (ca != cb) return ca ? 1 : -1;
  if (a->id != b->id) return a->id < b->id ? -1 : 1;
  return 0;
}

/* ---- pointer memo map ------------------------------------------------------------ */

static size_t ptr_slot(const sym_expr* k, size_t cap) {
  return (size_t)ptc_hash_mix((uint64_t)(uintptr_t)k, 0x9e37u) & (cap - 1);
}

const sym_expr* sym_map_get(const sym_map* m, const sym_expr* k) {
  if (!m->cap) return NULL;
  size_t j = ptr_slot(k, m->cap);
  while (m->keys[j]) {
    if (m->keys[j] == k) return m->vals[j];
    j = (j + 1) & (m->cap - 1);
  }
  return NULL;
}

bool sym_map_put(sym_map* m, const sym_expr* k, const sym_expr* v) {
  if ((m->len + 1) * 2 > m->cap) {
    size_t ncap = m->cap ? m->cap * 2 : 64;
    const sym_expr** nk = calloc(ncap, sizeof *nk);
    const sym_expr** nv = calloc(ncap, sizeof *nv);
    if (!nk || !nv) {
      free(nk);
      free(nv);
      return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->keys[i]) continue;
      size_t j = ptr_slot(m->keys[i], ncap);
      while (nk[j]) j = (j + 1) & (ncap - 1);
      nk[j] = m->keys[i];
      nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
  }
  size_t j = ptr_slot(k, m->cap);
  while (m->keys[j] && m->keys[j] != k) j = (j + 1) & (m->cap - 1);
  if (!m->keys[j]) m->len++;
  m->keys[j] = k;
  m->vals[j] = v;
  return true;
}

void sym_map_free(sym_map* m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}
