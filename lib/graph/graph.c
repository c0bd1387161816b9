/* graph.c - ptc_graph lifetime, symbols, inputs, constants, outputs and
 * read-only queries. Nodes are added in node.c. */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

ptc_status ptc_graph_create(ptc_context* ctx, ptc_graph** out) {
  if (!ctx || !out) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_create: NULL argument");
  ptc_graph* g = calloc(1, sizeof *g);
  if (!g) return ptc_status_oom();
  g->env = sym_env_create();
  if (!g->env) {
    free(g);
    return ptc_status_oom();
  }
  g->ctx = ptc_context_retain(ctx);
  ptc_arena_init(&g->arena, 0);
  ptc_vec_init(&g->values, sizeof(gvalue));
  ptc_vec_init(&g->nodes, sizeof(gnode));
  ptc_vec_init(&g->inputs, sizeof(ptc_value));
  ptc_vec_init(&g->outputs, sizeof(ptc_value));
  ptc_vec_init(&g->syms, sizeof(const sym_expr*));
  *out = g;
  return PTC_OK;
}

void ptc_graph_destroy(ptc_graph* g) {
  if (!g) return;
  for (size_t i = 0; i < g->values.len; i++) free(graph_value(g, (ptc_value)i)->owned);
  ptc_vec_free(&g->values);
  ptc_vec_free(&g->nodes);
  ptc_vec_free(&g->inputs);
  ptc_vec_free(&g->outputs);
  ptc_vec_free(&g->syms);
  ptc_arena_free(&g->arena);
  sym_env_destroy(g->env);
  ptc_context_release(g->ctx);
  free(g);
}

ptc_sym graph_sym_id(ptc_graph* g, const sym_expr* e, bool* oom) {
  int64_t c;
  if (!e || sym_is_const(e, &c)) return 0;
  for (size_t i = 0; i < g->syms.len; i++)
    if (PTC_VEC_AT(&g->syms, const sym_expr*, i) == e) return (ptc_sym)(i + 1);
  if (!ptc_vec_push(&g->syms, &e)) {
    *oom = true;
    return 0;
  }
  return (ptc_sym)g->syms.len;
}

const sym_expr* graph_sym_expr(const ptc_graph* g, ptc_sym s) {
  if (s == 0 || s > g->syms.len) return NULL;
  return PTC_VEC_AT(&g->syms, const sym_expr*, s - 1);
}

void ptc_symbol_options_init(ptc_symbol_options* o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->hint = -1;
  o->min_value = 2;
  o->max_value = (int64_t)1 << 62;
}

static bool is_ident(const char* s) {
  if (!s || !*s) return false;
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (const char* p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_'))
      return false;
  /* reserved function names of the expression syntax */
  return strcmp(s, "min") && strcmp(s, "max") && strcmp(s, "ceildiv") && strcmp(s, "modidx");
}

ptc_status ptc_graph_add_symbol(ptc_graph* g, const char* name, const ptc_symbol_options* opts,
                                ptc_sym* out) {
  if (!g || !out) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_symbol: NULL argument");
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  if (opts) {
    if (opts->struct_size < sizeof o)
      return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_symbol: options struct_size too small");
    o = *opts;
  }
  if (!is_ident(name))
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_symbol: '%s' is not a valid symbol name",
                   name ? name : "(null)");
  if (o.hint == 0 || o.hint == 1) {
    *out = 0; /* 0/1 specialisation: the size is static */
    return PTC_OK;
  }
  if (o.hint < -1)
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_symbol: %s: negative hint %lld", name,
                   (long long)o.hint);
  const sym_expr* e = NULL;
  PTC_TRY(ptc_status_prefix(
      sym_new_var(g->env, name, o.hint < 0 ? SYM_NO_HINT : o.hint, o.min_value, o.max_value, &e),
      "ptc_graph_add_symbol"));
  bool oom = false;
  ptc_sym id = graph_sym_id(g, e, &oom);
  if (oom) return ptc_status_oom();
  *out = id;
  return PTC_OK;
}

bool graph_contiguous_strides(sym_env* env, uint32_t rank, const sym_expr* const* shape,
                              const sym_expr** out) {
  const sym_expr* acc = sym_const(env, 1);
  for (uint32_t i = rank; i-- > 0;) {
    if (!acc) return false;
    out[i] = acc;
    acc = sym_mul(env, acc, shape[i]);
  }
  return acc != NULL || rank == 0;
}

static ptc_dim* public_dims(ptc_graph* g, uint32_t rank, const sym_expr* const* e, bool* oom) {
  ptc_dim* d = ptc_arena_alloc(&g->arena, (rank + 1) * sizeof *d);
  if (!d) {
    *oom = true;
    return NULL;
  }
  for (uint32_t i = 0; i < rank; i++) {
    int64_t c;
    if (sym_is_const(e[i], &c)) {
      d[i].value = c;
    } else {
      d[i].sym = graph_sym_id(g, e[i], oom);
      if (!sym_hint(g->env, e[i], &d[i].value)) d[i].value = -1;
    }
  }
  return d;
}

ptc_status graph_push_value(ptc_graph* g, int32_t kind, int32_t dtype, uint32_t rank,
                            const sym_expr* const* shape, const sym_expr* const* strides,
                            const char* name, ptc_value* out) {
  if (g->values.len >= PTC_VALUE_NONE - 1)
    return PTC_ERR(RESOURCE_EXHAUSTED, "graph has too many values");
  gvalue v;
  memset(&v, 0, sizeof v);
  v.kind = kind;
  v.dtype = dtype;
  v.rank = rank;
  bool oom = false;
  v.shape = ptc_arena_alloc(&g->arena, (rank + 1) * sizeof *v.shape);
  v.strides = ptc_arena_alloc(&g->arena, (rank + 1) * sizeof *v.strides);
  if (!v.shape || !v.strides) return ptc_status_oom();
  memcpy(v.shape, shape, rank * sizeof *shape);
  if (strides)
    memcpy(v.strides, strides, rank * sizeof *strides);
  else if (!graph_contiguous_strides(g->env, rank, shape, v.strides))
    return ptc_status_oom();
  v.pub_shape = public_dims(g, rank, v.shape, &oom);
  v.pub_strides = public_dims(g, rank, v.strides, &oom);
  char tmp[32];
  if (!name) {
    snprintf(tmp, sizeof tmp, "v%zu", g->values.len);
    name = tmp;
  }
  v.name = ptc_arena_strdup(&g->arena, name);
  if (oom || !v.name || !ptc_vec_push(&g->values, &v)) return ptc_status_oom();
  *out = (ptc_value)(g->values.len - 1);
  return PTC_OK;
}

static ptc_status check_dtype(const char* fn, int32_t dtype) {
  if (!ptc_dtype_valid(dtype))
    return PTC_ERR(INVALID_ARGUMENT, "%s: invalid dtype %d", fn, (int)dtype);
  return PTC_OK;
}

ptc_status ptc_graph_add_input(ptc_graph* g, const char* name, int32_t dtype,
                               const ptc_dim* shape, size_t rank, const int64_t* strides,
                               ptc_value* out) {
  if (!g || !out || (rank && !shape))
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_input: NULL argument");
  PTC_TRY(check_dtype("ptc_graph_add_input", dtype));
  if (rank > PTC_MAX_RANK)
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_input: rank %zu exceeds the limit %d", rank,
                   PTC_MAX_RANK);
  const sym_expr* sh[PTC_MAX_RANK];
  const sym_expr* st[PTC_MAX_RANK];
  int64_t numel = 1;
  for (size_t i = 0; i < rank; i++) {
    if (shape[i].sym) {
      sh[i] = graph_sym_expr(g, shape[i].sym);
      if (!sh[i])
        return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_input: dim %zu: unknown symbol id %u", i,
                       shape[i].sym);
    } else {
      if (shape[i].value < 0)
        return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_input: dim %zu: negative size %lld", i,
                       (long long)shape[i].value);
      if (!ptc_mul_ok(numel, shape[i].value, &numel))
        return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_input: the number of elements overflows");
      sh[i] = sym_const(g->env, shape[i].value);
      if (!sh[i]) return ptc_status_oom();
    }
    if (strides) {
      if (strides[i] < 0)
        return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_input: dim %zu: negative stride", i);
      st[i] = sym_const(g->env, strides[i]);
      if (!st[i]) return ptc_status_oom();
    }
  }
  char tmp[32];
  if (!name) {
    snprintf(tmp, sizeof tmp, "in%zu", g->inputs.len);
    name = tmp;
  }
  ptc_value v;
  PTC_TRY(graph_push_value(g, PTC_VALUE_INPUT, dtype, (uint32_t)rank, sh, strides ? st : NULL,
                           name, &v));
  if (!ptc_vec_push(&g->inputs, &v)) {
    g->values.len--;
    return ptc_status_oom();
  }
  *out = v;
  return PTC_OK;
}

ptc_status ptc_graph_add_constant(ptc_graph* g, const char* name, int32_t dtype,
                                  const int64_t* shape, size_t rank, const void* data,
                                  uint32_t flags, ptc_value* out) {
  if (!g || !out || (rank && !shape))
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_constant: NULL argument");
  PTC_TRY(check_dtype("ptc_graph_add_constant", dtype));
  if (flags > PTC_CONSTANT_BORROW)
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_constant: unknown flags 0x%x", flags);
  if (rank > PTC_MAX_RANK)
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_constant: rank %zu exceeds the limit %d",
                   rank, PTC_MAX_RANK);
  const sym_expr* sh[PTC_MAX_RANK];
  int64_t numel = 1, nbytes;
  for (size_t i = 0; i < rank; i++) {
    if (shape[i] < 0)
      return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_constant: dim %zu: negative size %lld", i,
                     (long long)shape[i]);
    if (!ptc_mul_ok(numel, shape[i], &numel))
      return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_constant: the number of elements overflows");
    sh[i] = sym_const(g->env, shape[i]);
    if (!sh[i]) return ptc_status_oom();
  }
  if (!ptc_mul_ok(numel, (int64_t)ptc_dtype_size(dtype), &nbytes))
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_constant: the byte size overflows");
  if (nbytes > 0 && !data)
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_constant: data is NULL for %lld bytes",
                   (long long)nbytes);
  void* owned = NULL;
  if (flags == PTC_CONSTANT_COPY && nbytes > 0) {
    owned = malloc((size_t)nbytes);
    if (!owned) return ptc_status_oom();
    memcpy(owned, data, (size_t)nbytes);
  }
  char tmp[32];
  if (!name) {
    snprintf(tmp, sizeof tmp, "const%zu", g->values.len);
    name = tmp;
  }
  ptc_value v;
  ptc_status s = graph_push_value(g, PTC_VALUE_CONSTANT, dtype, (uint32_t)rank, sh, NULL, name, &v);
  if (s) {
    free(owned);
    return s;
  }
  gvalue* gv = graph_value(g, v);
  gv->owned = owned;
  gv->data = flags == PTC_CONSTANT_COPY ? owned : data;
  gv->nbytes = (size_t)nbytes;
  *out = v;
  return PTC_OK;
}

ptc_status ptc_graph_add_output(ptc_graph* g, ptc_value v) {
  if (!g) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_output: NULL graph");
  if (v >= g->values.len)
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_output: unknown value id %u", v);
  if (!ptc_vec_push(&g->outputs, &v)) return ptc_status_oom();
  return PTC_OK;
}

ptc_status ptc_graph_value_info(const ptc_graph* g, ptc_value v, ptc_value_info* info) {
  if (!g || !info) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_value_info: NULL argument");
  if (info->struct_size < sizeof *info)
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_value_info: struct_size too small");
  if (v >= g->values.len)
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_value_info: unknown value id %u", v);
  const gvalue* gv = graph_value(g, v);
  info->kind = gv->kind;
  info->dtype = gv->dtype;
  info->rank = gv->rank;
  info->shape = gv->pub_shape;
  info->strides = gv->pub_strides;
  info->name = gv->name;
  return PTC_OK;
}

size_t ptc_graph_num_values(const ptc_graph* g) { return g ? g->values.len : 0; }
size_t ptc_graph_num_nodes(const ptc_graph* g) { return g ? g->nodes.len : 0; }
size_t ptc_graph_num_inputs(const ptc_graph* g) { return g ? g->inputs.len : 0; }
size_t ptc_graph_num_outputs(const ptc_graph* g) { return g ? g->outputs.len : 0; }

ptc_value ptc_graph_input(const ptc_graph* g, size_t i) {
  return g && i < g->inputs.len ? PTC_VEC_AT(&g->inputs, ptc_value, i) : PTC_VALUE_NONE;
}
ptc_value ptc_graph_output(const ptc_graph* g, size_t i) {
  return g && i < g->outputs.len ? PTC_VEC_AT(&g->outputs, ptc_value, i) : PTC_VALUE_NONE;
}

size_t ptc_graph_sym_format(const ptc_graph* g, ptc_sym s, char* buf, size_t cap) {
  const sym_expr* e = g ? graph_sym_expr(g, s) : NULL;
  if (!e) {
    if (buf && cap) buf[0] = 0;
    return 0;
  }
  return sym_format(g->env, e, buf, cap);
}

size_t ptc_graph_num_guards(const ptc_graph* g) { return g ? sym_num_guards(g->env) : 0; }

size_t ptc_graph_guard_format(const ptc_graph* g, size_t i, char* buf, size_t cap) {
  if (!g || i >= sym_num_guards(g->env)) {
    if (buf && cap) buf[0] = 0;
    return 0;
  }
  return sym_guard_format(g->env, i, buf, cap);
}

const gattr* gattrs_find(const gattrs* a, const char* name) {
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->a[i].name, name) == 0) return &a->a[i];
  return NULL;
}

void graph_format_shape(const sym_env* env, uint32_t rank, const sym_expr* const* shape,
                        ptc_strbuf* sb) {
  ptc_sb_append(sb, "[");
  for (uint32_t i = 0; i < rank; i++) {
    if (i) ptc_sb_append(sb, ", ");
    sym_format_sb(env, shape[i], sb);
  }
  ptc_sb_append(sb, "]");
}

bool graph_static_numel(const gvalue* v, int64_t* numel) {
  int64_t n = 1;
  for (uint32_t i = 0; i < v->rank; i++) {
    int64_t c;
    if (!sym_is_const(v->shape[i], &c) || !ptc_mul_ok(n, c, &n)) return false;
  }
  *numel = n;
  return true;
}
