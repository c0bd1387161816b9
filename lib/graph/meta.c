/* meta.c - helpers for meta functions: errors, outputs, attribute access,
 * dims, broadcasting with symbolic sizes, ATen type promotion. */
#include "op.h"

#include <stdio.h>
#include <string.h>

ptc_status meta_fail(const meta_ctx* m, const char* fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return PTC_ERR(INVALID_ARGUMENT, "%s: %s", m->op ? m->op->name : "?", msg);
}

void* meta_alloc(meta_ctx* m, size_t size) { return ptc_arena_alloc(m->arena, size ? size : 1); }

static ptc_status add_out(meta_ctx* m, int32_t dtype, uint32_t rank,
                          const sym_expr* const* shape, const sym_expr* const* strides) {
  if (m->n_out >= sizeof m->out / sizeof m->out[0])
    return meta_fail(m, "too many outputs (limit %zu)", sizeof m->out / sizeof m->out[0]);
  if (rank > PTC_MAX_RANK)
    return meta_fail(m, "output rank %u exceeds the limit %d", rank, PTC_MAX_RANK);
  meta_out* o = &m->out[m->n_out];
  o->dtype = dtype;
  o->rank = rank;
  o->shape = meta_alloc(m, (rank + 1) * sizeof *o->shape);
  if (!o->shape) return ptc_status_oom();
  for (uint32_t i = 0; i < rank; i++) {
    if (!shape[i]) return ptc_status_oom();
    o->shape[i] = shape[i];
  }
  if (strides) {
    o->strides = meta_alloc(m, (rank + 1) * sizeof *o->strides);
    if (!o->strides) return ptc_status_oom();
    for (uint32_t i = 0; i < rank; i++) {
      if (!strides[i]) return ptc_status_oom();
      o->strides[i] = strides[i];
    }
  }
  m->n_out++;
  return PTC_OK;
}

ptc_status meta_add_out(meta_ctx* m, int32_t dtype, uint32_t rank, const sym_expr* const* shape) {
  return add_out(m, dtype, rank, shape, NULL);
}

ptc_status meta_add_view(meta_ctx* m, int32_t dtype, uint32_t rank, const sym_expr* const* shape,
                         const sym_expr* const* strides) {
  return add_out(m, dtype, rank, shape, strides);
}

static const gattr* find(const meta_ctx* m, const char* name) {
  return m->attrs ? gattrs_find(m->attrs, name) : NULL;
}

bool meta_has(const meta_ctx* m, const char* name) { return find(m, name) != NULL; }

int64_t meta_int(const meta_ctx* m, const char* name, int64_t dflt) {
  const gattr* a = find(m, name);
  if (!a) return dflt;
  if (a->type == PTC_ATTR_FLOAT) return (int64_t)a->f;
  return a->i;
}

double meta_float(const meta_ctx* m, const char* name, double dflt) {
  const gattr* a = find(m, name);
  if (!a) return dflt;
  return a->type == PTC_ATTR_FLOAT ? a->f : (double)a->i;
}

bool meta_bool(const meta_ctx* m, const char* name, bool dflt) {
  const gattr* a = find(m, name);
  return a ? a->i != 0 : dflt;
}

const char* meta_str(const meta_ctx* m, const char* name, const char* dflt) {
  const gattr* a = find(m, name);
  return a && a->s ? a->s : dflt;
}

int32_t meta_dtype(const meta_ctx* m, const char* name, int32_t dflt) {
  const gattr* a = find(m, name);
  return a ? (int32_t)a->i : dflt;
}

const sym_expr** meta_exprs(const meta_ctx* m, const char* name, size_t* n) {
  const gattr* a = find(m, name);
  if (!a || a->type != PTC_ATTR_INTS) {
    *n = 0;
    return NULL;
  }
  *n = a->count;
  return a->exprs;
}

ptc_status meta_ints(const meta_ctx* m, const char* name, int64_t* out, size_t cap, size_t* n) {
  size_t k;
  const sym_expr** e = meta_exprs(m, name, &k);
  if (k > cap) return meta_fail(m, "attribute '%s' has %zu elements (at most %zu)", name, k, cap);
  for (size_t i = 0; i < k; i++)
    if (!sym_is_const(e[i], &out[i]))
      return meta_fail(m, "attribute '%s' element %zu must be a static integer", name, i);
  *n = k;
  return PTC_OK;
}

ptc_status meta_dim(const meta_ctx* m, int64_t dim, uint32_t rank, uint32_t* out) {
  int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r)
    return meta_fail(m, "dim %lld is out of range for a tensor of rank %u", (long long)dim, rank);
  *out = (uint32_t)(dim < 0 ? dim + r : dim);
  return PTC_OK;
}

const char* meta_shape_str(meta_ctx* m, uint32_t rank, const sym_expr* const* shape) {
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  graph_format_shape(m->env, rank, shape, &sb);
  const char* r = sb.oom ? "[?]" : ptc_arena_strdup(m->arena, sb.data);
  ptc_sb_free(&sb);
  return r ? r : "[?]";
}

ptc_status meta_broadcast(meta_ctx* m, uint32_t ra, const sym_expr* const* a, uint32_t rb,
                          const sym_expr* const* b, uint32_t* rout, const sym_expr*** out) {
  uint32_t r = ra > rb ? ra : rb;
  const sym_expr** o = meta_alloc(m, (r + 1) * sizeof *o);
  if (!o) return ptc_status_oom();
  for (uint32_t i = 0; i < r; i++) {
    const sym_expr* x = i + ra >= r ? a[i + ra - r] : NULL;
    const sym_expr* y = i + rb >= r ? b[i + rb - r] : NULL;
    int64_t cx = -1, cy = -1;
    bool kx = x && sym_is_const(x, &cx), ky = y && sym_is_const(y, &cy);
    if (!x || (kx && cx == 1 && y)) {
      o[i] = y;
    } else if (!y || (ky && cy == 1) || x == y) {
      o[i] = x;
    } else if (kx && ky) {
      goto fail;
    } else {
      /* symbolic vs other: sizes >= 2 so they must be equal (guarded) */
      bool eq = false;
      ptc_status s = sym_guard(m->env, SYM_EQ, x, y, &eq);
      if (s) return ptc_status_prefix(s, "%s: broadcasting", m->op->name);
      if (!eq) goto fail;
      o[i] = kx ? x : y; /* prefer the static size */
    }
  }
  *rout = r;
  *out = o;
  return PTC_OK;
fail:
  return meta_fail(m, "cannot broadcast %s with %s", meta_shape_str(m, ra, a),
                   meta_shape_str(m, rb, b));
}

ptc_status meta_broadcast_inputs(meta_ctx* m, size_t first, uint32_t* rout,
                                 const sym_expr*** out) {
  uint32_t r = 0;
  const sym_expr** sh = NULL;
  for (size_t i = first; i < m->n_in; i++) {
    if (!m->in[i]) continue;
    if (!sh) {
      r = m->in[i]->rank;
      sh = (const sym_expr**)m->in[i]->shape;
      continue;
    }
    PTC_TRY(meta_broadcast(m, r, sh, m->in[i]->rank, m->in[i]->shape, &r, &sh));
  }
  if (!sh) {
    sh = meta_alloc(m, sizeof *sh);
    if (!sh) return ptc_status_oom();
  }
  *rout = r;
  *out = sh;
  return PTC_OK;
}

int32_t meta_result_type(const meta_ctx* m, size_t first, int scalar_cat) {
  int32_t dimmed = -1, zerodim = -1;
  for (size_t i = first; i < m->n_in; i++) {
    const meta_tensor* t = m->in[i];
    if (!t) continue;
    int32_t* slot = t->rank > 0 ? &dimmed : &zerodim;
    *slot = *slot < 0 ? t->dtype : ptc_promote_types(*slot, t->dtype);
  }
  int32_t r = dimmed;
  if (zerodim >= 0) {
    if (r < 0 || ptc_dtype_category(zerodim) > ptc_dtype_category(r)) r = zerodim;
  }
  if (scalar_cat >= 0) {
    int rc = r < 0 ? -1 : ptc_dtype_category(r);
    if (scalar_cat > rc) r = scalar_cat == 2 ? PTC_F32 : scalar_cat == 1 ? PTC_I64 : PTC_BOOL;
  }
  return r < 0 ? PTC_F32 : r;
}

const sym_expr* meta_numel(meta_ctx* m, uint32_t rank, const sym_expr* const* shape) {
  const sym_expr* n = sym_const(m->env, 1);
  for (uint32_t i = 0; i < rank && n; i++) n = sym_mul(m->env, n, shape[i]);
  return n;
}

ptc_status meta_expect_eq(meta_ctx* m, const sym_expr* expected, const sym_expr* got,
                          const char* what) {
  if (expected == got) return PTC_OK;
  bool eq = false;
  ptc_status s = sym_guard(m->env, SYM_EQ, expected, got, &eq);
  if (s) return ptc_status_prefix(s, "%s: %s", m->op->name, what);
  if (eq) return PTC_OK;
  ptc_strbuf a, b;
  ptc_sb_init(&a);
  ptc_sb_init(&b);
  sym_format_sb(m->env, expected, &a);
  sym_format_sb(m->env, got, &b);
  ptc_status e = meta_fail(m, "%s: expected %s, got %s", what, a.data ? a.data : "?",
                           b.data ? b.data : "?");
  ptc_sb_free(&a);
  ptc_sb_free(&b);
  return e;
}

ptc_status meta_expect_dtype(const meta_ctx* m, size_t input, const char* argname, unsigned mask) {
  const meta_tensor* t = input < m->n_in ? m->in[input] : NULL;
  if (!t) return PTC_OK;
  int c = ptc_dtype_category(t->dtype);
  if (mask & (1u << c)) return PTC_OK;
  char want[64] = "";
  const char* names[] = {"bool", "integer", "floating"};
  for (int i = 0; i < 3; i++)
    if (mask & (1u << i)) {
      if (want[0]) strcat(want, " or ");
      strcat(want, names[i]);
    }
  bool vowel = want[0] == 'i';
  return meta_fail(m, "argument '%s' must be %s %s tensor, got %s", argname, vowel ? "an" : "a",
                   want, ptc_dtype_name(t->dtype));
}
