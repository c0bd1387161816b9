/* bind.c - checks run-time inputs against a graph's input metadata and
 * guards, and binds size symbols to concrete values. */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNBOUND INT64_MIN

typedef struct bind_device {
  int32_t type;        /* the backend's device type */
  const char* backend; /* its name, for messages */
} bind_device;

static ptc_status check_one(const bind_device* dev, size_t i, const gvalue* v,
                            const ptc_tensor* t) {
  if (!t) return PTC_ERR(INVALID_ARGUMENT, "input %zu (%s): NULL tensor", i, v->name);
  if (t->device.device_type != dev->type) {
    char got[32];
    snprintf(got, sizeof got, "%s", runtime_device_name(t->device.device_type));
    return PTC_ERR(INVALID_ARGUMENT, "input %zu (%s): tensor on %s, but backend '%s' runs on "
                   "%s tensors", i, v->name, got, dev->backend, runtime_device_name(dev->type));
  }
  int32_t dt = ptc_dtype_from_dl(t->dtype);
  if (dt != v->dtype)
    return PTC_ERR(INVALID_ARGUMENT, "input %zu (%s): expected dtype %s, got %s", i, v->name,
                   ptc_dtype_name(v->dtype), dt < 0 ? "an unsupported DLPack dtype" : ptc_dtype_name(dt));
  if (t->ndim < 0 || (uint32_t)t->ndim != v->rank)
    return PTC_ERR(INVALID_ARGUMENT, "input %zu (%s): expected rank %u, got %d", i, v->name,
                   v->rank, (int)t->ndim);
  if (t->ndim > 0 && !t->shape)
    return PTC_ERR(INVALID_ARGUMENT, "input %zu (%s): shape is NULL", i, v->name);
  if (!t->data) {
    bool empty = false;
    for (int32_t d = 0; d < t->ndim; d++) empty |= t->shape[d] == 0;
    if (!empty) return PTC_ERR(INVALID_ARGUMENT, "input %zu (%s): data is NULL", i, v->name);
  }
  for (int32_t d = 0; d < t->ndim; d++) {
    if (t->shape[d] < 0)
      return PTC_ERR(INVALID_ARGUMENT, "input %zu dim %d: negative size %lld", i, (int)d,
                     (long long)t->shape[d]);
    if (t->strides && t->strides[d] < 0)
      return PTC_ERR(INVALID_ARGUMENT, "input %zu dim %d: negative strides are not supported", i,
                     (int)d);
  }
  return PTC_OK;
}

/* The only unbound symbol of `e`, or -1 if there are none or several. */
static long sole_unbound(const sym_expr* e, const int64_t* vals, size_t n_syms, long found) {
  if (found == -2) return -2;
  if (e->kind == SYM_VAR) {
    if ((size_t)e->value >= n_syms || vals[e->value] != UNBOUND) return found;
    if (found >= 0 && found != (long)e->value) return -2;
    return (long)e->value;
  }
  for (uint32_t i = 0; i < e->n; i++) found = sole_unbound(e->args[i], vals, n_syms, found);
  return found;
}

/* Binds the one unbound symbol u of a size expression linear in u (such as
 * 2*u or u + 3) from the observed size; leaves it unbound otherwise. */
static void solve_linear(const sym_expr* e, int64_t* vals, size_t n_syms, int64_t size) {
  long u = sole_unbound(e, vals, n_syms, -1);
  if (u < 0) return;
  int64_t f2, f3;
  vals[u] = 2;
  ptc_status s2 = sym_eval(e, vals, n_syms, &f2);
  vals[u] = 3;
  ptc_status s3 = sym_eval(e, vals, n_syms, &f3);
  vals[u] = UNBOUND;
  if (s2 || s3) {
    ptc_status_destroy(s2);
    ptc_status_destroy(s3);
    return;
  }
  int64_t a = f3 - f2, b = f2 - 2 * a;
  if (a != 0 && (size - b) % a == 0) vals[u] = (size - b) / a; /* checked by the caller */
}

ptc_status runtime_bind_inputs(const ptc_graph* g, const ptc_tensor* inputs, size_t n_in,
                               int64_t* vals, size_t n_syms) {
  return runtime_bind_inputs_on(g, PTC_DEVICE_CPU, "this backend", inputs, n_in, vals, n_syms);
}

ptc_status runtime_bind_inputs_on(const ptc_graph* g, int32_t device_type, const char* backend,
                                  const ptc_tensor* inputs, size_t n_in, int64_t* vals,
                                  size_t n_syms) {
  bind_device dev = {device_type, backend};
  if (n_in != g->inputs.len)
    return PTC_ERR(INVALID_ARGUMENT, "expected %zu inputs, got %zu", g->inputs.len, n_in);
  if (n_in && !inputs) return PTC_ERR(INVALID_ARGUMENT, "inputs is NULL");
  for (size_t k = 0; k < n_syms; k++) vals[k] = UNBOUND;
  /* first pass: metadata, static sizes, bare symbols */
  for (size_t i = 0; i < n_in; i++) {
    const gvalue* v = graph_value(g, PTC_VEC_AT(&g->inputs, ptc_value, i));
    const ptc_tensor* t = &inputs[i];
    PTC_TRY(check_one(&dev, i, v, t));
    for (uint32_t d = 0; d < v->rank; d++) {
      const sym_expr* e = v->shape[d];
      int64_t c, got = t->shape[d];
      if (sym_is_const(e, &c)) {
        if (c != got)
          return PTC_ERR(INVALID_ARGUMENT, "input %zu dim %u: expected %lld, got %lld", i, d,
                         (long long)c, (long long)got);
      } else if (e->kind == SYM_VAR && (size_t)e->value < n_syms) {
        int64_t* slot = &vals[e->value];
        if (*slot == UNBOUND) {
          *slot = got;
        } else if (*slot != got) {
          return PTC_ERR(INVALID_ARGUMENT,
                         "input %zu dim %u: expected %s = %lld (bound by an earlier input), got %lld",
                         i, d, sym_var_name(g->env, (size_t)e->value), (long long)*slot,
                         (long long)got);
        }
      }
    }
  }
  /* second pass: compound expressions */
  for (size_t i = 0; i < n_in; i++) {
    const gvalue* v = graph_value(g, PTC_VEC_AT(&g->inputs, ptc_value, i));
    for (uint32_t d = 0; d < v->rank; d++) {
      const sym_expr* e = v->shape[d];
      int64_t c;
      if (sym_is_const(e, &c) || e->kind == SYM_VAR) continue;
      solve_linear(e, vals, n_syms, inputs[i].shape[d]);
      int64_t want = 0;
      ptc_status s = sole_unbound(e, vals, n_syms, -1) != -1
                         ? PTC_ERR(INVALID_ARGUMENT, "unbound")
                         : sym_eval(e, vals, n_syms, &want);
      if (s) {
        ptc_status_destroy(s);
        char buf[128];
        sym_format(g->env, e, buf, sizeof buf);
        return PTC_ERR(INVALID_ARGUMENT,
                       "input %zu dim %u: size %s uses a symbol that no input dimension binds",
                       i, d, buf);
      }
      if (want != inputs[i].shape[d]) {
        char buf[128];
        sym_format(g->env, e, buf, sizeof buf);
        return PTC_ERR(INVALID_ARGUMENT, "input %zu dim %u: expected %s = %lld, got %lld", i, d,
                       buf, (long long)want, (long long)inputs[i].shape[d]);
      }
    }
  }
  for (size_t k = 0; k < n_syms; k++)
    if (vals[k] == UNBOUND) {
      /* a symbol no input binds (e.g. only in an attribute): use its hint */
      int64_t h = sym_var_hint(g->env, k);
      if (h == SYM_NO_HINT)
        return PTC_ERR(INVALID_ARGUMENT, "symbol %s is not bound by any input dimension",
                       sym_var_name(g->env, k));
      vals[k] = h;
    }
  return sym_check_guards(g->env, vals, n_syms);
}

ptc_status runtime_value_shape(const ptc_graph* g, ptc_value v, const int64_t* vals,
                               size_t n_syms, int64_t* shape) {
  const gvalue* gv = graph_value(g, v);
  for (uint32_t d = 0; d < gv->rank; d++) {
    PTC_TRY(sym_eval(gv->shape[d], vals, n_syms, &shape[d]));
    if (shape[d] < 0)
      return PTC_ERR(INVALID_ARGUMENT, "value %s dim %u evaluates to a negative size %lld",
                     gv->name, d, (long long)shape[d]);
  }
  return PTC_OK;
}
