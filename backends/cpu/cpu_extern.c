/* cpu_extern.c - the CPU backend's extern calls: dispatch of IR_EXTERN
 * nodes by kind (GEMM and convolution in cpu_ext_matmul.c / cpu_ext_conv.c,
 * ref-kernel fallback and host custom ops through lib/runtime), plus the
 * element helpers they share: typed load/store, f32 temporaries for f16/bf16
 * operands, and the activation epilogue. */
#include "cpu_rt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- elements ----------------------------------------------------------------- */

double cpu_elem_load(int32_t dtype, const void* base, int64_t off) {
  switch (dtype) {
    case PTC_F32: return ((const float*)base)[off];
    case PTC_F64: return ((const double*)base)[off];
    case PTC_F16: return ptc_f16_to_f32(((const uint16_t*)base)[off]);
    case PTC_BF16: return ptc_bf16_to_f32(((const uint16_t*)base)[off]);
    default: return (double)cpu_elem_load_i(dtype, base, off);
  }
}

int64_t cpu_elem_load_i(int32_t dtype, const void* base, int64_t off) {
  switch (dtype) {
    case PTC_I8: return ((const int8_t*)base)[off];
    case PTC_I16: return ((const int16_t*)base)[off];
    case PTC_I32: return ((const int32_t*)base)[off];
    case PTC_I64: return ((const int64_t*)base)[off];
    case PTC_U8: return ((const uint8_t*)base)[off];
    case PTC_BOOL: return ((const uint8_t*)base)[off] != 0;
    default: return (int64_t)cpu_elem_load(dtype, base, off);
  }
}

void cpu_elem_store(int32_t dtype, void* base, int64_t off, double v) {
  switch (dtype) {
    case PTC_F32: ((float*)base)[off] = (float)v; return;
    case PTC_F64: ((double*)base)[off] = v; return;
    case PTC_F16: ((uint16_t*)base)[off] = ptc_f32_to_f16((float)v); return;
    case PTC_BF16: ((uint16_t*)base)[off] = ptc_f32_to_bf16((float)v); return;
    case PTC_BOOL: ((uint8_t*)base)[off] = v != 0; return;
    default: cpu_elem_store_i(dtype, base, off, isfinite(v) ? (int64_t)v : 0); return;
  }
}

void cpu_elem_store_i(int32_t dtype, void* base, int64_t off, int64_t v) {
  switch (dtype) {
    case PTC_I8: ((int8_t*)base)[off] = (int8_t)v; return;
    case PTC_I16: ((int16_t*)base)[off] = (int16_t)v; return;
    case PTC_I32: ((int32_t*)base)[off] = (int32_t)v; return;
    case PTC_I64: ((int64_t*)base)[off] = v; return;
    case PTC_U8: ((uint8_t*)base)[off] = (uint8_t)v; return;
    case PTC_BOOL: ((uint8_t*)base)[off] = v != 0; return;
    default: cpu_elem_store(dtype, base, off, (double)v); return;
  }
}

int64_t cpu_view_numel(const runtime_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; d++) n *= t->shape[d];
  return n;
}

bool cpu_next_index(int32_t rank, const int64_t* shape, int64_t* idx) {
  for (int32_t d = rank - 1; d >= 0; d--) {
    if (++idx[d] < shape[d]) return true;
    idx[d] = 0;
  }
  return false;
}

int64_t cpu_view_offset(const runtime_tensor* t, const int64_t* idx) {
  int64_t o = 0;
  for (int32_t d = 0; d < t->rank; d++) o += idx[d] * t->strides[d];
  return o;
}

/* ---- temporaries ----------------------------------------------------------------- */

ptc_status cpu_temp_like(ptc_context* ctx, const runtime_tensor* t, int32_t dtype,
                         cpu_temp* out) {
  memset(out, 0, sizeof *out);
  out->view = *t;
  out->view.dtype = dtype;
  runtime_tensor_contiguous(&out->view);
  int64_t n = cpu_view_numel(t), bytes;
  if (!ptc_mul_ok(n, (int64_t)ptc_dtype_size(dtype), &bytes))
    return PTC_ERR(RESOURCE_EXHAUSTED, "cpu backend: temporary too large");
  out->bytes = (size_t)bytes + 64;
  out->view.data = ptc_alloc_ctx(ctx, out->bytes, 64);
  if (!out->view.data) return PTC_ERR(RESOURCE_EXHAUSTED, "cpu backend: out of memory (%lld bytes)",
                                      (long long)bytes);
  out->ctx = ctx;
  return PTC_OK;
}

void cpu_temp_free(cpu_temp* t) {
  if (t->bytes) ptc_free_ctx(t->ctx, t->view.data, t->bytes, 64);
  memset(t, 0, sizeof *t);
}

void cpu_convert(const runtime_tensor* src, const runtime_tensor* dst) {
  if (cpu_view_numel(src) <= 0) return;
  int64_t idx[PTC_MAX_RANK] = {0};
  do {
    double v = cpu_elem_load(src->dtype, src->data, cpu_view_offset(src, idx));
    cpu_elem_store(dst->dtype, dst->data, cpu_view_offset(dst, idx), v);
  } while (cpu_next_index(src->rank, src->shape, idx));
}

ptc_status cpu_temp_convert(ptc_context* ctx, const runtime_tensor* t, int32_t dtype,
                            cpu_temp* out) {
  PTC_TRY(cpu_temp_like(ctx, t, dtype, out));
  cpu_convert(t, &out->view);
  return PTC_OK;
}

/* ---- activations (ir_activation), the formulas of backends/ref ----------------------- */

static double act_relu(double x) { return x < 0 ? 0 : x; }
static double act_gelu(double x) { return 0.5 * x * (1 + erf(x * 0.70710678118654752440)); }
static double act_gelu_tanh(double x) {
  return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}
static double act_silu(double x) { return x / (1 + exp(-x)); }
static double act_sigmoid(double x) { return 1 / (1 + exp(-x)); }

static double (*const act_table[])(double) = {
    [IR_ACT_RELU] = act_relu,       [IR_ACT_GELU] = act_gelu, [IR_ACT_GELU_TANH] = act_gelu_tanh,
    [IR_ACT_SILU] = act_silu,       [IR_ACT_SIGMOID] = act_sigmoid, [IR_ACT_TANH] = tanh,
};

double cpu_activate(int32_t act, double x) {
  int32_t n = (int32_t)(sizeof act_table / sizeof act_table[0]);
  return act > 0 && act < n && act_table[act] ? act_table[act](x) : x;
}

bool cpu_activation_valid(int32_t act) {
  return act == IR_ACT_NONE ||
         (act > 0 && act < (int32_t)(sizeof act_table / sizeof act_table[0]) && act_table[act]);
}

/* ---- dispatch ---------------------------------------------------------------------- */

static ptc_status ext_fallback(const cpu_ext_call* c) {
  return runtime_fallback_run(c->ctx, c->p->graph, c->ext->graph_node, c->in, c->ext->n_in,
                              c->out, c->ext->n_out, c->syms, c->n_syms, c->seed);
}

static ptc_status ext_custom(const cpu_ext_call* c) {
  const ptc_graph* g = c->p->graph;
  if (c->ext->graph_node >= g->nodes.len)
    return PTC_ERR(INTERNAL, "cpu backend: custom extern names node %u of %zu", c->ext->graph_node,
                   g->nodes.len);
  const gnode* n = graph_node(g, c->ext->graph_node);
  return ptc_status_prefix(runtime_custom_run(c->ctx, n, c->in, c->ext->n_in, c->out, c->ext->n_out),
                           "node %s", n->name);
}

static ptc_status (*const ext_table[])(const cpu_ext_call*) = {
    [IR_EXT_MATMUL] = cpu_ext_matmul,
    [IR_EXT_CONV] = cpu_ext_conv,
    [IR_EXT_FALLBACK] = ext_fallback,
    [IR_EXT_CUSTOM] = ext_custom,
};

ptc_status cpu_extern_run(ptc_context* ctx, const ir_program* p, const ir_node* n,
                          const runtime_tensor* in, const runtime_tensor* out,
                          const int64_t* sym_values, size_t n_syms, uint64_t seed) {
  int32_t k = n->ext.kind;
  if (k < 0 || k >= (int32_t)(sizeof ext_table / sizeof ext_table[0]) || !ext_table[k])
    return PTC_ERR(INTERNAL, "cpu backend: unknown extern kind %d", (int)k);
  cpu_ext_call c = {ctx, p, &n->ext, in, out, sym_values, n_syms, seed};
  return ext_table[k](&c);
}

const char* cpu_extern_kind_name(int32_t kind) {
  static const char* const names[] = {"matmul", "conv", "fallback", "custom"};
  return kind >= 0 && kind < 4 ? names[kind] : "?";
}
