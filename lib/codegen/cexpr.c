/* cexpr.c - C-family expression emission shared by backends/cpu and
 * backends/cuda (see cexpr.h). */
#include "cexpr.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- dtype facts -------------------------------------------------------------- */
typedef struct dt_row {
  uint8_t cls; /* cexpr_cls */
  int8_t rank; /* signed ints: i8 < i16 < i32 < i64 (range containment) */
} dt_row;

static const dt_row dt_rows[PTC_DTYPE_COUNT] = {
    [PTC_F32] = {CEXPR_F32, 0}, [PTC_F64] = {CEXPR_F64, 0}, [PTC_F16] = {CEXPR_F32, 0},
    [PTC_BF16] = {CEXPR_F32, 0}, [PTC_I8] = {CEXPR_INT, 1},  [PTC_I16] = {CEXPR_INT, 2},
    [PTC_I32] = {CEXPR_INT, 3}, [PTC_I64] = {CEXPR_INT, 4},  [PTC_U8] = {CEXPR_INT, 1},
    [PTC_BOOL] = {CEXPR_BOOL, 0},
};

static const dt_row* drow(int32_t dt) {
  return dt >= 0 && dt < PTC_DTYPE_COUNT ? &dt_rows[dt] : &dt_rows[PTC_F32];
}

cexpr_cls cexpr_cls_of(int32_t dtype) { return (cexpr_cls)drow(dtype)->cls; }

const char* cexpr_ctype(const cexpr_dialect* d, cexpr_cls c) {
  switch (c) {
    case CEXPR_F32: return "float";
    case CEXPR_F64: return "double";
    case CEXPR_INT: return d->i64;
    case CEXPR_BOOL: return d->u8;
  }
  return "float";
}

const char* cexpr_storage_type(const cexpr_dialect* d, int32_t dtype) {
  switch (dtype) {
    case PTC_F64: return "double";
    case PTC_F16:
    case PTC_BF16: return d->u16;
    case PTC_I8: return d->i8;
    case PTC_I16: return d->i16;
    case PTC_I32: return d->i32;
    case PTC_I64: return d->i64;
    case PTC_U8:
    case PTC_BOOL: return d->u8;
    default: return "float";
  }
}

/* Cast that wraps a 64-bit int to integer dtype dt; NULL = none needed. */
static const char* narrow_type(const cexpr_dialect* d, int32_t dt) {
  switch (dt) {
    case PTC_I8:
    case PTC_I16:
    case PTC_I32:
    case PTC_U8: return cexpr_storage_type(d, dt);
    default: return NULL;
  }
}

/* Whether every value of integer dtype `from` is a value of `to`. */
static bool int_fits(int32_t from, int32_t to) {
  if (from == to || to == PTC_I64 || from == PTC_BOOL) return true;
  if (from == PTC_U8) return to == PTC_I16 || to == PTC_I32;
  if (to == PTC_U8) return false;
  return drow(from)->rank <= drow(to)->rank;
}

void cexpr_wrap_int(const cexpr_dialect* d, ptc_strbuf* sb, int32_t to, const char* expr) {
  const char* n = narrow_type(d, to);
  if (n)
    ptc_sb_printf(sb, "(%s)(%s)(%s)", d->i64, n, expr);
  else
    ptc_sb_append(sb, expr);
}

/* ---- conversions ------------------------------------------------------------------ */
static void conv_to_f32class(ptc_strbuf* sb, int32_t from, int32_t to, const char* expr) {
  ptc_strbuf v;
  ptc_sb_init(&v);
  cexpr_cls cf = cexpr_cls_of(from);
  if (cf == CEXPR_F32)
    ptc_sb_append(&v, expr);
  else if (cf == CEXPR_INT)
    ptc_sb_printf(&v, "(float)(double)(%s)", expr); /* ref: int -> double -> float */
  else
    ptc_sb_printf(&v, "(float)(%s)", expr);
  const char* round = to == PTC_F16 ? "ptc_round_f16" : to == PTC_BF16 ? "ptc_round_bf16" : NULL;
  if (round && from != to)
    ptc_sb_printf(sb, "%s(%s)", round, v.data ? v.data : "0");
  else
    ptc_sb_append(sb, v.data ? v.data : "0");
  if (v.oom) sb->oom = true;
  ptc_sb_free(&v);
}

void cexpr_conv(const cexpr_dialect* d, ptc_strbuf* sb, int32_t from, int32_t to,
                const char* expr) {
  if (from == to) {
    ptc_sb_append(sb, expr);
    return;
  }
  cexpr_cls cf = cexpr_cls_of(from);
  switch (cexpr_cls_of(to)) {
    case CEXPR_F32: conv_to_f32class(sb, from, to, expr); return;
    case CEXPR_F64: ptc_sb_printf(sb, "(double)(%s)", expr); return;
    case CEXPR_BOOL: ptc_sb_printf(sb, "(%s)((%s) != 0)", d->u8, expr); return;
    case CEXPR_INT: break;
  }
  if (cf == CEXPR_F32 || cf == CEXPR_F64) {
    ptc_strbuf v;
    ptc_sb_init(&v);
    ptc_sb_printf(&v, "ptc_f2i((double)(%s))", expr);
    cexpr_wrap_int(d, sb, to, v.data ? v.data : "0");
    if (v.oom) sb->oom = true;
    ptc_sb_free(&v);
  } else if (cf == CEXPR_BOOL || int_fits(from, to)) {
    ptc_sb_printf(sb, "(%s)(%s)", d->i64, expr);
  } else {
    cexpr_wrap_int(d, sb, to, expr);
  }
}

void cexpr_load(const cexpr_dialect* d, ptc_strbuf* sb, int32_t dt, const char* ptr,
                const char* idx) {
  switch (dt) {
    case PTC_F16: ptc_sb_printf(sb, "%s(%s[%s])", d->f16_load, ptr, idx); return;
    case PTC_BF16: ptc_sb_printf(sb, "%s(%s[%s])", d->bf16_load, ptr, idx); return;
    case PTC_F32:
    case PTC_F64: ptc_sb_printf(sb, "%s[%s]", ptr, idx); return;
    case PTC_BOOL: ptc_sb_printf(sb, "(%s)(%s[%s] != 0)", d->u8, ptr, idx); return;
    default: ptc_sb_printf(sb, "(%s)%s[%s]", d->i64, ptr, idx); return;
  }
}

void cexpr_encode(const cexpr_dialect* d, ptc_strbuf* sb, int32_t dt, const char* val) {
  switch (dt) {
    case PTC_F16: ptc_sb_printf(sb, "%s(%s)", d->f16_store, val); return;
    case PTC_BF16: ptc_sb_printf(sb, "%s(%s)", d->bf16_store, val); return;
    case PTC_F32:
    case PTC_F64:
    case PTC_I64: ptc_sb_append(sb, val); return;
    default: ptc_sb_printf(sb, "(%s)(%s)", cexpr_storage_type(d, dt), val); return;
  }
}

/* ---- literals -------------------------------------------------------------------- */
void cexpr_float_lit(const cexpr_dialect* d, ptc_strbuf* sb, double v, cexpr_cls c) {
  bool f32 = c != CEXPR_F64;
  if (f32 && !isnan(v)) v = (double)(float)v;
  if (isnan(v)) {
    ptc_sb_append(sb, f32 ? d->nan_f : d->nan_d);
    return;
  }
  if (isinf(v)) {
    ptc_sb_append(sb, f32 ? (v > 0 ? d->inf_f : d->ninf_f) : (v > 0 ? d->inf_d : d->ninf_d));
    return;
  }
  char buf[64];
  snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
  bool has_point = strpbrk(buf, ".e") != NULL;
  ptc_sb_printf(sb, "%s%s%s%s%s", v < 0 ? "(" : "", buf, has_point ? "" : ".0", f32 ? "f" : "",
                v < 0 ? ")" : "");
}

void cexpr_int_lit(const cexpr_dialect* d, ptc_strbuf* sb, int64_t v) {
  if (v == INT64_MIN)
    ptc_sb_append(sb, d->i64_min);
  else if (v >= INT32_MIN && v <= INT32_MAX)
    ptc_sb_printf(sb, v < 0 ? "(%lld)" : "%lld", (long long)v);
  else
    ptc_sb_printf(sb, "%s%lld%s", d->big_pre, (long long)v, d->big_post);
}

/* Value of integer v as dtype dt (wrap-around), at codegen time. */
static int64_t wrap_now(int32_t dt, int64_t v) {
  uint64_t u = (uint64_t)v;
  switch (dt) {
    case PTC_I8: return (int8_t)(uint8_t)u;
    case PTC_I16: return (int16_t)(uint16_t)u;
    case PTC_I32: return (int32_t)(uint32_t)u;
    case PTC_U8: return (uint8_t)u;
    case PTC_BOOL: return v != 0;
    default: return v;
  }
}

void cexpr_const(const cexpr_dialect* d, ptc_strbuf* sb, int32_t dt, double f, int64_t i) {
  switch (dt) {
    case PTC_F16: cexpr_float_lit(d, sb, ptc_f16_to_f32(ptc_f32_to_f16((float)f)), CEXPR_F32); return;
    case PTC_BF16:
      cexpr_float_lit(d, sb, ptc_bf16_to_f32(ptc_f32_to_bf16((float)f)), CEXPR_F32);
      return;
    case PTC_F32: cexpr_float_lit(d, sb, f, CEXPR_F32); return;
    case PTC_F64: cexpr_float_lit(d, sb, f, CEXPR_F64); return;
    case PTC_BOOL: ptc_sb_append(sb, i ? d->true_lit : d->false_lit); return;
    default: cexpr_int_lit(d, sb, wrap_now(dt, i)); return;
  }
}

/* ---- table ops ------------------------------------------------------------------- */
const cexpr_op_row* cexpr_row(const cexpr_op_row* rows, size_t n_rows, uint32_t opcode) {
  if (opcode >= n_rows) return NULL;
  const cexpr_op_row* r = &rows[opcode];
  return r->nargs ? r : NULL;
}

/* Expands template t with the given substitutions. */
static void expand(const cexpr_dialect* d, ptc_strbuf* sb, const char* t,
                   const char* const* args, cexpr_cls c, const char* ctx_arg) {
  static const char* const lib_suffix[] = {"f", "", "", ""};
  static const char* const helper_suffix[] = {"f32", "f64", "i64", "i64"};
  for (const char* q = t; *q; q++) {
    if (*q != '$' || !q[1]) {
      ptc_sb_appendn(sb, q, 1);
      continue;
    }
    char k = *++q;
    if (k >= '0' && k <= '2')
      ptc_sb_append(sb, args[k - '0']);
    else if (k == 'F')
      ptc_sb_append(sb, lib_suffix[c]);
    else if (k == 'S')
      ptc_sb_append(sb, helper_suffix[c]);
    else if (k == 'T')
      ptc_sb_append(sb, cexpr_ctype(d, c));
    else if (k == 'K')
      ptc_sb_append(sb, ctx_arg);
  }
}

/* Dtype the arguments of a table op are converted to. */
static int32_t domain_dtype(const cexpr_op_row* r, int32_t dtype, const int32_t* arg_dt) {
  if (r->dom != CEXPR_DOM_ARGS) return dtype;
  int32_t dt = arg_dt[0];
  if (r->nargs > 1) dt = ptc_promote_types(dt, arg_dt[1]);
  return dt;
}

bool cexpr_math(const cexpr_dialect* d, const cexpr_op_row* r, ptc_strbuf* sb, int32_t dtype,
                const char* const* args, const int32_t* arg_dt, const char* ctx_arg,
                bool* uses_ctx) {
  if (!r) return false;
  int32_t dom = domain_dtype(r, dtype, arg_dt);
  cexpr_cls c = cexpr_cls_of(dom);
  const char* t = c == CEXPR_F32 || c == CEXPR_F64 ? r->f : (c == CEXPR_BOOL && r->b) ? r->b : r->i;
  if (!t) return false;
  ptc_strbuf conv[3];
  const char* cargs[3] = {"", "", ""};
  for (int i = 0; i < r->nargs; i++) {
    ptc_sb_init(&conv[i]);
    int32_t to = (r->dom == CEXPR_DOM_WHERE && i == 0) ? PTC_BOOL : dom;
    cexpr_conv(d, &conv[i], arg_dt[i], to, args[i]);
    cargs[i] = conv[i].data ? conv[i].data : "0";
  }
  ptc_strbuf e;
  ptc_sb_init(&e);
  expand(d, &e, t, cargs, c == CEXPR_BOOL ? CEXPR_INT : c, ctx_arg);
  const char* ex = e.data ? e.data : "0";
  if (r->dom == CEXPR_DOM_ARGS)
    ptc_sb_printf(sb, "(%s)%s", d->u8, ex);
  else if (c == CEXPR_BOOL && !r->b && r->dom != CEXPR_DOM_WHERE)
    ptc_sb_printf(sb, "(%s)((%s) != 0)", d->u8, ex);
  else if (c == CEXPR_INT && r->dom != CEXPR_DOM_WHERE)
    cexpr_wrap_int(d, sb, dtype, ex);
  else
    ptc_sb_append(sb, ex);
  if (t == r->i && r->int_checked) *uses_ctx = true;
  for (int i = 0; i < r->nargs; i++) {
    if (conv[i].oom) sb->oom = true;
    ptc_sb_free(&conv[i]);
  }
  if (e.oom) sb->oom = true;
  ptc_sb_free(&e);
  return true;
}
