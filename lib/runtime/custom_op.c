/* custom_op.c - host-registered extern ops (ptc_register_extern_op): the
 * descriptor is validated and copied into an op_def that the context's op
 * table owns (lib/graph/op_lookup.c), with a meta function derived from the
 * output rules, and a libffi call interface prepared once. Backends call
 * runtime_custom_run, which builds the argument values for one node and
 * calls the host function with ffi_call. */
#include "../graph/op.h"
#include "backend.h"

#include <ffi.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ITEMS 64
#define NAME_CAP 64

typedef struct custom_op {
  op_def def; /* first: gnode.op points here */
  char name[NAME_CAP];
  op_attr_spec attrs[MAX_ITEMS + 1];
  char attr_names[MAX_ITEMS][NAME_CAP];
  uint32_t n_inputs, n_outputs, n_args;
  int32_t input_dtypes[MAX_ITEMS]; /* -1 = any */
  ptc_extern_output outputs[MAX_ITEMS];
  ptc_extern_arg args[MAX_ITEMS];  /* names point into attr_names */
  void (*fn)(void);
  void* user;
  ffi_cif cif;
  ffi_type* types[MAX_ITEMS + 1];
} custom_op;

void ptc_extern_op_desc_init(ptc_extern_op_desc* d) {
  if (!d) return;
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
}

bool runtime_is_custom_op(const struct op_def* op) { return op && (op->flags & OP_CUSTOM); }

/* ---- validation ------------------------------------------------------------ */

static bool ident_ok(const char* s, const char* extra) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n >= NAME_CAP) return false;
  if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || strchr(extra, c);
    if (!ok) return false;
  }
  return true;
}

#define BAD(...) ptc_status_prefix(PTC_ERR(INVALID_ARGUMENT, __VA_ARGS__), "ptc_register_extern_op")

static ptc_status check_counts(const ptc_extern_op_desc* d) {
  if (!ident_ok(d->name, ".:"))
    return BAD("name '%s' is not 1 to 63 characters of [A-Za-z0-9_.:] starting with a letter or '_'",
               d->name ? d->name : "(null)");
  if (!d->fn) return BAD("%s: fn is NULL", d->name);
  if (d->n_inputs > MAX_ITEMS) return BAD("%s: n_inputs %u exceeds 64", d->name, d->n_inputs);
  if (d->n_outputs < 1 || d->n_outputs > MAX_ITEMS)
    return BAD("%s: n_outputs %u is not 1 to 64", d->name, d->n_outputs);
  if (!d->outputs) return BAD("%s: outputs is NULL", d->name);
  if (d->n_args > MAX_ITEMS) return BAD("%s: n_args %u exceeds 64", d->name, d->n_args);
  if (d->n_args && !d->args) return BAD("%s: args is NULL", d->name);
  return PTC_OK;
}

static ptc_status check_dtypes_outputs(const ptc_extern_op_desc* d) {
  for (uint32_t k = 0; d->input_dtypes && k < d->n_inputs; k++)
    if (d->input_dtypes[k] != -1 && !ptc_dtype_valid(d->input_dtypes[k]))
      return BAD("%s: input_dtypes[%u]: invalid dtype %d", d->name, k, (int)d->input_dtypes[k]);
  for (uint32_t o = 0; o < d->n_outputs; o++) {
    const ptc_extern_output* r = &d->outputs[o];
    if (r->shape_of_input < 0 || (uint32_t)r->shape_of_input >= d->n_inputs)
      return BAD("%s: outputs[%u].shape_of_input %d is not an input (the op has %u)", d->name, o,
                 (int)r->shape_of_input, d->n_inputs);
    if (r->dtype != -1 && !ptc_dtype_valid(r->dtype))
      return BAD("%s: outputs[%u].dtype: invalid dtype %d", d->name, o, (int)r->dtype);
  }
  return PTC_OK;
}

static ptc_status check_arg(const ptc_extern_op_desc* d, uint32_t i, bool* out_seen) {
  const ptc_extern_arg* a = &d->args[i];
  switch (a->kind) {
    case PTC_EXTERN_ARG_INPUT:
    case PTC_EXTERN_ARG_NUMEL:
    case PTC_EXTERN_ARG_DIM:
      if (a->index < 0 || (uint32_t)a->index >= d->n_inputs)
        return BAD("%s: args[%u]: input index %d out of range (the op has %u inputs)", d->name, i,
                   (int)a->index, d->n_inputs);
      return PTC_OK;
    case PTC_EXTERN_ARG_OUTPUT:
      if (a->index < 0 || (uint32_t)a->index >= d->n_outputs)
        return BAD("%s: args[%u]: output index %d out of range (the op has %u outputs)", d->name,
                   i, (int)a->index, d->n_outputs);
      out_seen[a->index] = true;
      return PTC_OK;
    case PTC_EXTERN_ARG_ATTR_INT:
    case PTC_EXTERN_ARG_ATTR_FLOAT:
      if (!ident_ok(a->name, ""))
        return BAD("%s: args[%u]: attribute name '%s' is not an identifier", d->name, i,
                   a->name ? a->name : "(null)");
      return PTC_OK;
    case PTC_EXTERN_ARG_USER: return PTC_OK;
    default: return BAD("%s: args[%u]: unknown kind %d", d->name, i, (int)a->kind);
  }
}

static ptc_status check_args(const ptc_extern_op_desc* d) {
  bool seen[MAX_ITEMS] = {false};
  for (uint32_t i = 0; i < d->n_args; i++) PTC_TRY(check_arg(d, i, seen));
  for (uint32_t o = 0; o < d->n_outputs; o++)
    if (!seen[o]) return BAD("%s: output %u is not passed to the function (no OUTPUT argument)",
                             d->name, o);
  for (uint32_t i = 0; i < d->n_args; i++) /* one attribute name, one type */
    for (uint32_t j = 0; j < i; j++) {
      const ptc_extern_arg *a = &d->args[i], *b = &d->args[j];
      bool attrs = a->name && b->name && a->kind >= PTC_EXTERN_ARG_ATTR_INT &&
                   a->kind <= PTC_EXTERN_ARG_ATTR_FLOAT && b->kind >= PTC_EXTERN_ARG_ATTR_INT &&
                   b->kind <= PTC_EXTERN_ARG_ATTR_FLOAT;
      if (attrs && strcmp(a->name, b->name) == 0 && a->kind != b->kind)
        return BAD("%s: attribute '%s' is used both as int and as float", d->name, a->name);
    }
  return PTC_OK;
}

/* ---- the op_def ---------------------------------------------------------------- */

static ptc_status custom_meta(meta_ctx* m) {
  const custom_op* c = (const custom_op*)m->op;
  for (uint32_t k = 0; k < c->n_inputs; k++) {
    if (!m->in[k]) return meta_fail(m, "input %u is required", k);
    if (c->input_dtypes[k] != -1 && m->in[k]->dtype != c->input_dtypes[k])
      return meta_fail(m, "input %u must be %s, got %s", k, ptc_dtype_name(c->input_dtypes[k]),
                       ptc_dtype_name(m->in[k]->dtype));
  }
  for (uint32_t i = 0; i < c->n_args; i++) {
    const ptc_extern_arg* a = &c->args[i];
    if (a->kind != PTC_EXTERN_ARG_DIM) continue;
    int64_t r = m->in[a->index]->rank;
    if (a->dim < -r || a->dim >= r)
      return meta_fail(m, "argument %u: dim %d is out of range for input %d of rank %lld", i,
                       (int)a->dim, (int)a->index, (long long)r);
  }
  for (uint32_t o = 0; o < c->n_outputs; o++) {
    const meta_tensor* like = m->in[c->outputs[o].shape_of_input];
    int32_t dt = c->outputs[o].dtype == -1 ? like->dtype : c->outputs[o].dtype;
    PTC_TRY(meta_add_out(m, dt, like->rank, like->shape));
  }
  return PTC_OK;
}

/* Copies the argument list; attribute specs get one entry per name. */
static void copy_args(custom_op* c, const ptc_extern_op_desc* d) {
  uint32_t n_attrs = 0;
  for (uint32_t i = 0; i < d->n_args; i++) {
    c->args[i] = d->args[i];
    bool is_attr = d->args[i].kind == PTC_EXTERN_ARG_ATTR_INT ||
                   d->args[i].kind == PTC_EXTERN_ARG_ATTR_FLOAT;
    if (!is_attr) {
      c->args[i].name = NULL;
      continue;
    }
    uint32_t a = 0;
    while (a < n_attrs && strcmp(c->attr_names[a], d->args[i].name) != 0) a++;
    if (a == n_attrs) {
      snprintf(c->attr_names[a], NAME_CAP, "%s", d->args[i].name);
      c->attrs[a].name = c->attr_names[a];
      c->attrs[a].type =
          d->args[i].kind == PTC_EXTERN_ARG_ATTR_INT ? PTC_ATTR_INT : PTC_ATTR_FLOAT;
      c->attrs[a].required = true;
      n_attrs++;
    }
    c->args[i].name = c->attr_names[a];
  }
  c->attrs[n_attrs].name = NULL;
}

static ffi_type* ffi_type_of(int32_t kind) {
  switch (kind) {
    case PTC_EXTERN_ARG_NUMEL:
    case PTC_EXTERN_ARG_DIM:
    case PTC_EXTERN_ARG_ATTR_INT: return &ffi_type_sint64;
    case PTC_EXTERN_ARG_ATTR_FLOAT: return &ffi_type_double;
    default: return &ffi_type_pointer;
  }
}

static ptc_status build_op(const ptc_extern_op_desc* d, custom_op* c) {
  snprintf(c->name, sizeof c->name, "%s", d->name);
  c->n_inputs = d->n_inputs;
  c->n_outputs = d->n_outputs;
  c->n_args = d->n_args;
  for (uint32_t k = 0; k < d->n_inputs; k++) c->input_dtypes[k] = d->input_dtypes ? d->input_dtypes[k] : -1;
  memcpy(c->outputs, d->outputs, d->n_outputs * sizeof *d->outputs);
  copy_args(c, d);
  c->fn = d->fn;
  c->user = d->user;
  for (uint32_t i = 0; i < c->n_args; i++) c->types[i] = ffi_type_of(c->args[i].kind);
  if (ffi_prep_cif(&c->cif, FFI_DEFAULT_ABI, c->n_args, &ffi_type_void, c->types) != FFI_OK)
    return PTC_ERR(INTERNAL, "ptc_register_extern_op: %s: libffi cannot prepare the call", d->name);
  c->def.name = c->name;
  c->def.min_in = (int16_t)d->n_inputs;
  c->def.max_in = (int16_t)d->n_inputs;
  c->def.flags = OP_CUSTOM;
  c->def.attrs = c->attrs;
  c->def.meta = custom_meta;
  return PTC_OK;
}

ptc_status ptc_register_extern_op(ptc_context* ctx, const ptc_extern_op_desc* desc) {
  if (!ctx || !desc) return BAD("NULL argument");
  if (desc->struct_size < offsetof(ptc_extern_op_desc, user) + sizeof(void*))
    return BAD("desc struct_size %zu is too small (call ptc_extern_op_desc_init)",
               desc->struct_size);
  PTC_TRY(check_counts(desc));
  PTC_TRY(check_dtypes_outputs(desc));
  PTC_TRY(check_args(desc));
  custom_op* c = calloc(1, sizeof *c);
  if (!c) return ptc_status_oom();
  ptc_status s = build_op(desc, c);
  if (!s) s = graph_register_op(ctx, &c->def, c, free);
  if (s) {
    free(c);
    return ptc_status_prefix(s, "ptc_register_extern_op");
  }
  ptc_log(ctx, PTC_LOG_INFO, "registered extern op %s (%u inputs, %u outputs, %u arguments)",
          c->name, c->n_inputs, c->n_outputs, c->n_args);
  return PTC_OK;
}

/* ---- calls ------------------------------------------------------------------------ */

typedef struct call_frame {
  ptc_context* ctx;
  runtime_tensor view[2 * MAX_ITEMS]; /* inputs then outputs, contiguous */
  size_t bytes[2 * MAX_ITEMS];        /* > 0: view.data is a temporary */
} call_frame;

static int64_t numel_of(const runtime_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; d++) n *= t->shape[d];
  return n;
}

/* view[i] = t, or a contiguous temporary (filled from t when `fill`). */
static ptc_status make_contiguous(call_frame* f, size_t i, const runtime_tensor* t, bool fill) {
  f->view[i] = *t;
  if (runtime_tensor_is_contiguous(t)) return PTC_OK;
  runtime_tensor_contiguous(&f->view[i]);
  size_t bytes = (size_t)numel_of(t) * ptc_dtype_size(t->dtype);
  f->view[i].data = ptc_alloc_ctx(f->ctx, bytes + 64, 64);
  if (!f->view[i].data) return ptc_status_oom();
  f->bytes[i] = bytes + 64;
  if (fill) runtime_tensor_copy(t, &f->view[i]);
  return PTC_OK;
}

typedef union arg_value {
  void* p;
  int64_t i;
  double f;
} arg_value;

static void arg_of(const custom_op* c, const gnode* n, const call_frame* f,
                   const ptc_extern_arg* a, arg_value* v) {
  const runtime_tensor* in = a->index >= 0 ? &f->view[a->index] : NULL;
  switch (a->kind) {
    case PTC_EXTERN_ARG_INPUT: v->p = in->data; break;
    case PTC_EXTERN_ARG_OUTPUT: v->p = f->view[c->n_inputs + (uint32_t)a->index].data; break;
    case PTC_EXTERN_ARG_NUMEL: v->i = numel_of(in); break;
    case PTC_EXTERN_ARG_DIM: v->i = in->shape[a->dim < 0 ? a->dim + in->rank : a->dim]; break;
    case PTC_EXTERN_ARG_ATTR_INT: {
      const gattr* g = gattrs_find(&n->attrs, a->name);
      v->i = g ? g->i : 0;
      break;
    }
    case PTC_EXTERN_ARG_ATTR_FLOAT: {
      const gattr* g = gattrs_find(&n->attrs, a->name);
      v->f = g ? g->f : 0.0;
      break;
    }
    default: v->p = c->user; break;
  }
}

ptc_status runtime_custom_run(ptc_context* ctx, const gnode* n, const runtime_tensor* in,
                              size_t n_in, const runtime_tensor* out, size_t n_out) {
  if (!runtime_is_custom_op(n->op)) return PTC_ERR(INTERNAL, "%s is not a custom op", n->op->name);
  const custom_op* c = (const custom_op*)n->op;
  if (n_in != c->n_inputs || n_out != c->n_outputs)
    return PTC_ERR(INTERNAL, "%s: called with %zu inputs and %zu outputs", c->name, n_in, n_out);
  call_frame* f = calloc(1, sizeof *f);
  if (!f) return ptc_status_oom();
  f->ctx = ctx;
  ptc_status s = PTC_OK;
  for (size_t k = 0; !s && k < n_in; k++) s = make_contiguous(f, k, &in[k], true);
  for (size_t k = 0; !s && k < n_out; k++) s = make_contiguous(f, n_in + k, &out[k], false);
  if (!s) {
    arg_value vals[MAX_ITEMS];
    void* ptrs[MAX_ITEMS + 1];
    for (uint32_t i = 0; i < c->n_args; i++) {
      arg_of(c, n, f, &c->args[i], &vals[i]);
      ptrs[i] = &vals[i];
    }
    ffi_arg ret = 0;
    ffi_call((ffi_cif*)&c->cif, FFI_FN(c->fn), &ret, ptrs);
    for (size_t k = 0; k < n_out; k++)
      if (f->bytes[n_in + k]) runtime_tensor_copy(&f->view[n_in + k], &out[k]);
  }
  for (size_t i = 0; i < n_in + n_out; i++)
    if (f->bytes[i]) ptc_free_ctx(ctx, f->view[i].data, f->bytes[i], 64);
  free(f);
  return s;
}
