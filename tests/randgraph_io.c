/* randgraph_io.c - inputs and checking for generated graphs: random host
 * tensors (some with a permuted memory layout), f16/bf16 conversions, and
 * the dtype-aware comparison of two backends' outputs (argmax/argmin by the
 * values at the indices). Public API only. */
#include "randgraph.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- half and bfloat16 --------------------------------------------------------------- */
static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7FFFFFu;
  int32_t e = (int32_t)((x >> 23) & 0xFF);
  if (e == 0xFF) return (uint16_t)(sign | 0x7C00u | (mant ? 0x200u : 0));
  int32_t he = e - 127 + 15;
  if (he >= 31) return (uint16_t)(sign | 0x7C00u);
  if (he <= 0) { /* subnormal half */
    if (he < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - he), h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)he << 10) | (mant >> 13), rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* a carry rounds up the exponent */
  return (uint16_t)(sign | h);
}

static double f16_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
  return (h & 0x8000) ? -v : v;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
  x += 0x7FFFu + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

static double bf16_to_double(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* ---- element access -------------------------------------------------------------------- */
static int32_t dtype_of(const ptc_tensor* t) { return ptc_dtype_from_dl(t->dtype); }

static bool is_float_dt(int32_t dt) {
  return dt == PTC_F32 || dt == PTC_F64 || dt == PTC_F16 || dt == PTC_BF16;
}

/* Element offset (in elements) of row-major position `lin`. */
static int64_t offset_of(const ptc_tensor* t, int64_t lin) {
  int64_t off = 0, stride = 1;
  for (int32_t d = t->ndim - 1; d >= 0; d--) {
    int64_t i = lin % t->shape[d];
    lin /= t->shape[d];
    off += i * (t->strides ? t->strides[d] : stride);
    stride *= t->shape[d];
  }
  return off;
}

static const char* elem_ptr(const ptc_tensor* t, int64_t lin) {
  size_t es = ptc_dtype_size(dtype_of(t));
  return (const char*)t->data + t->byte_offset + (size_t)offset_of(t, lin) * es;
}

static double load_f(const ptc_tensor* t, int64_t lin) {
  const char* p = elem_ptr(t, lin);
  switch (dtype_of(t)) {
    case PTC_F32: { float v; memcpy(&v, p, 4); return v; }
    case PTC_F64: { double v; memcpy(&v, p, 8); return v; }
    case PTC_F16: { uint16_t v; memcpy(&v, p, 2); return f16_to_double(v); }
    case PTC_BF16: { uint16_t v; memcpy(&v, p, 2); return bf16_to_double(v); }
    default: return NAN;
  }
}

static int64_t load_i(const ptc_tensor* t, int64_t lin) {
  const char* p = elem_ptr(t, lin);
  switch (dtype_of(t)) {
    case PTC_I8: return *(const int8_t*)p;
    case PTC_U8: case PTC_BOOL: return *(const uint8_t*)p;
    case PTC_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case PTC_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case PTC_I64: { int64_t v; memcpy(&v, p, 8); return v; }
    default: return (int64_t)load_f(t, lin);
  }
}

static void store(void* base, int32_t dt, int64_t i, double v) {
  char* p = (char*)base + (size_t)i * ptc_dtype_size(dt);
  switch (dt) {
    case PTC_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case PTC_F64: memcpy(p, &v, 8); break;
    case PTC_F16: { uint16_t h = f32_to_f16((float)v); memcpy(p, &h, 2); break; }
    case PTC_BF16: { uint16_t h = f32_to_bf16((float)v); memcpy(p, &h, 2); break; }
    case PTC_I32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    case PTC_I64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case PTC_I16: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
    case PTC_I8: *(int8_t*)p = (int8_t)v; break;
    case PTC_U8: case PTC_BOOL: *(uint8_t*)p = (uint8_t)v; break;
    default: break;
  }
}

/* ---- inputs ------------------------------------------------------------------------------- */
static uint64_t mix(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* A value exactly representable in dt: floats in [-1, 1) on a grid the
 * dtype holds exactly (1/1024 for f16, 1/128 for bf16), ints in [-8, 8]. */
static double random_value(int32_t dt, uint64_t* s) {
  uint64_t r = mix(s);
  switch (dt) {
    case PTC_F16: return (double)((int64_t)(r % 2048) - 1024) / 1024.0;
    case PTC_BF16: return (double)((int64_t)(r % 256) - 128) / 128.0;
    case PTC_F32: case PTC_F64: return (double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0;
    case PTC_BOOL: return (double)(r & 1);
    default: return (double)((int64_t)(r % 17) - 8);
  }
}

static bool make_one(const rg_input* in, const int64_t* sym_values, uint64_t seed, uint32_t i,
                     rg_inputs* out) {
  int64_t* shape = out->shape[i];
  int64_t* strides = out->strides[i];
  int64_t numel = 1;
  for (uint32_t d = 0; d < in->rank; d++) {
    shape[d] = in->sym[d] >= 0 ? sym_values[in->sym[d]] : in->size[d];
    numel *= shape[d];
  }
  /* row-major, or column-major (the reverse permutation) when strided */
  int64_t acc = 1;
  for (uint32_t k = 0; k < in->rank; k++) {
    uint32_t d = in->strided ? k : in->rank - 1 - k;
    strides[d] = acc;
    acc *= shape[d] ? shape[d] : 1;
  }
  size_t es = ptc_dtype_size(in->dtype);
  out->data[i] = malloc((size_t)(numel ? numel : 1) * es);
  if (!out->data[i]) return false;
  uint64_t s = seed * 0x100000001B3ull + i * 0x9E3779B9ull + 1;
  for (int64_t k = 0; k < numel; k++) store(out->data[i], in->dtype, k, random_value(in->dtype, &s));
  ptc_tensor* t = &out->t[i];
  memset(t, 0, sizeof *t);
  t->data = out->data[i];
  t->device.device_type = PTC_DEVICE_CPU;
  t->ndim = (int32_t)in->rank;
  t->dtype = ptc_dtype_to_dl(in->dtype);
  t->shape = shape;
  t->strides = strides;
  return true;
}

bool rg_inputs_make(const rg_graph* rg, const int64_t* sym_values, uint64_t seed,
                    rg_inputs* out) {
  memset(out, 0, sizeof *out);
  for (uint32_t i = 0; i < rg->n_inputs; i++) {
    out->n = i + 1;
    if (!make_one(&rg->inputs[i], sym_values, seed, i, out)) {
      rg_inputs_free(out);
      return false;
    }
  }
  return true;
}

void rg_inputs_free(rg_inputs* in) {
  for (uint32_t i = 0; i < in->n; i++) free(in->data[i]);
  memset(in, 0, sizeof *in);
}

/* ---- comparison ------------------------------------------------------------------------------ */
static const struct {
  int32_t dtype;
  double rtol, atol;
} tolerances[] = {
    {PTC_F32, 1e-4, 1e-5}, {PTC_F64, 1e-9, 1e-12}, {PTC_F16, 2e-3, 1e-3}, {PTC_BF16, 1.6e-2, 1e-2},
};

static double allowed(const rg_output* o, double want) {
  double rtol = 0, atol = 0;
  for (size_t i = 0; i < sizeof tolerances / sizeof tolerances[0]; i++)
    if (tolerances[i].dtype == o->dtype) rtol = tolerances[i].rtol, atol = tolerances[i].atol;
  return fmax(atol, 2 * o->err) + rtol * fabs(want);
}

static bool close_enough(const rg_output* o, double got, double want) {
  if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
  if (isinf(got) || isinf(want)) return got == want;
  return fabs(got - want) <= allowed(o, want);
}

typedef struct msgbuf {
  char* p;
  size_t cap, len;
} msgbuf;

static void say(msgbuf* m, const char* fmt, ...) {
  if (!m->p || m->len + 1 >= m->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(m->p + m->len, m->cap - m->len, fmt, ap);
  va_end(ap);
  if (n > 0) m->len = m->len + (size_t)n < m->cap ? m->len + (size_t)n : m->cap - 1;
}

static int64_t numel_of(const ptc_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

static bool same_layout(const ptc_tensor* a, const ptc_tensor* b) {
  if (a->ndim != b->ndim || dtype_of(a) != dtype_of(b)) return false;
  for (int32_t d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

static void shape_str(const ptc_tensor* t, char* buf, size_t cap) {
  size_t len = (size_t)snprintf(buf, cap, "%s [", ptc_dtype_name(dtype_of(t)));
  for (int32_t d = 0; d < t->ndim && len < cap; d++)
    len += (size_t)snprintf(buf + len, cap - len, d ? ", %lld" : "%lld", (long long)t->shape[d]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
}

static int compare_values(uint32_t i, const rg_output* o, const ptc_tensor* g, const ptc_tensor* w,
                          msgbuf* m) {
  int64_t n = numel_of(w), bad = 0, first = -1;
  bool exact = !is_float_dt(o->dtype);
  double worst = 0;
  for (int64_t k = 0; k < n; k++) {
    bool ok = exact ? load_i(g, k) == load_i(w, k) : close_enough(o, load_f(g, k), load_f(w, k));
    if (ok) continue;
    if (first < 0) first = k;
    bad++;
    if (!exact) worst = fmax(worst, fabs(load_f(g, k) - load_f(w, k)));
  }
  if (!bad) return 0;
  char sh[128];
  shape_str(w, sh, sizeof sh);
  if (exact)
    say(m, "output %u (%s): %lld of %lld elements differ; first at %lld: got %lld, want %lld\n",
        i, sh, (long long)bad, (long long)n, (long long)first, (long long)load_i(g, first),
        (long long)load_i(w, first));
  else
    say(m, "output %u (%s): %lld of %lld elements differ (max |diff| %.3g); first at %lld: got "
        "%.9g, want %.9g, allowed %.3g (modelled error %.3g)\n", i, sh, (long long)bad,
        (long long)n, worst, (long long)first, load_f(g, first), load_f(w, first),
        allowed(o, load_f(w, first)), o->err);
  return 1;
}

/* Row-major position in the values tensor v of index `idx` taken at output
 * position `p` of an argmax over dim `dim` (-1: flat index). */
static int64_t arg_position(const ptc_tensor* v, const ptc_tensor* out, int64_t p, int32_t dim,
                            bool keepdim, int64_t idx) {
  if (dim < 0) return idx;
  int64_t mi[PTC_MAX_RANK];
  for (int32_t d = out->ndim - 1; d >= 0; d--) {
    mi[d] = p % out->shape[d];
    p /= out->shape[d];
  }
  int64_t lin = 0;
  for (int32_t d = 0, od = 0; d < v->ndim; d++) {
    int64_t i = d == dim ? idx : mi[od];
    if (d != dim || keepdim) od++;
    lin = lin * v->shape[d] + i;
  }
  return lin;
}

static int compare_arg(uint32_t i, const rg_graph* rg, const ptc_results* want, const ptc_tensor* g,
                       const ptc_tensor* w, msgbuf* m) {
  const rg_output* o = &rg->outputs[i];
  const ptc_tensor* v = ptc_results_get(want, (size_t)o->arg_of);
  const rg_output* vo = &rg->outputs[o->arg_of];
  if (!v) return 1;
  int64_t len = o->arg_dim < 0 ? numel_of(v) : v->shape[o->arg_dim];
  int64_t n = numel_of(w);
  for (int64_t p = 0; p < n; p++) {
    int64_t ig = load_i(g, p), iw = load_i(w, p);
    if (ig == iw) continue;
    if (ig < 0 || ig >= len) {
      say(m, "output %u (argmax/argmin): index %lld out of range [0, %lld) at %lld\n", i,
          (long long)ig, (long long)len, (long long)p);
      return 1;
    }
    double vg = load_f(v, arg_position(v, w, p, o->arg_dim, o->arg_keepdim, ig));
    double vw = load_f(v, arg_position(v, w, p, o->arg_dim, o->arg_keepdim, iw));
    if (!is_float_dt(vo->dtype) ? vg != vw : !close_enough(vo, vg, vw)) {
      say(m, "output %u (arg%s): at %lld got index %lld (value %.9g), want %lld (value %.9g)\n",
          i, o->arg_is_max ? "max" : "min", (long long)p, (long long)ig, vg, (long long)iw, vw);
      return 1;
    }
  }
  return 0;
}

int rg_compare(const rg_graph* rg, const ptc_results* got, const ptc_results* want, char* msg,
               size_t cap) {
  msgbuf m = {msg, cap, 0};
  if (msg && cap) msg[0] = 0;
  if (ptc_results_count(got) != rg->n_outputs || ptc_results_count(want) != rg->n_outputs) {
    say(&m, "output counts differ: got %zu, want %zu (graph has %u)\n", ptc_results_count(got),
        ptc_results_count(want), rg->n_outputs);
    return 1;
  }
  int bad = 0;
  for (uint32_t i = 0; i < rg->n_outputs; i++) {
    const ptc_tensor* g = ptc_results_get(got, i);
    const ptc_tensor* w = ptc_results_get(want, i);
    if (!same_layout(g, w)) {
      char a[128], b[128];
      shape_str(g, a, sizeof a);
      shape_str(w, b, sizeof b);
      say(&m, "output %u: got %s, want %s\n", i, a, b);
      bad++;
      continue;
    }
    bad += rg->outputs[i].arg_of >= 0 ? compare_arg(i, rg, want, g, w, &m)
                                      : compare_values(i, &rg->outputs[i], g, w, &m);
  }
  return bad;
}
