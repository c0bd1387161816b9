/* ir_interp_internal.h - private interface of the IR interpreter
 * (ir_interp.c: storage and loops; ir_interp_math.c: scalar semantics of
 * the body ops and reductions; ir_interp_ext.c: extern calls through the
 * ref backend's kernels). */
#ifndef PTC_LIB_IR_INTERP_INTERNAL_H
#define PTC_LIB_IR_INTERP_INTERNAL_H

#include "ir_internal.h"

/* Storage of one buffer: element e of the buffer's storage is data[e]. */
typedef struct interp_buf {
  void* data;
  int64_t n;        /* storage elements (bounds checks) */
  bool owned;
} interp_buf;

typedef struct interp {
  const ir_program* p;
  int64_t* vals;    /* every env symbol: sizes, loop vars, indirect indices */
  size_t n_vals;
  interp_buf* bufs; /* per buffer */
  uint64_t seed;
} interp;

/** Value of e with the current symbol values. */
ptc_status interp_eval(const interp* it, const sym_expr* e, int64_t* out);

/* ---- scalar semantics (ir_interp_math.c) --------------------------------------------------- */
/** Result of unary op `op` on x (of dtype xdt) as dtype dt; *err set on a
 * data error (e.g. bitwise not of a float). */
ir_scalar interp_unary(ir_opcode op, ir_scalar x, int32_t xdt, int32_t dt, const char** err);
/** Result of binary op `op` on a, b (of dtype adt) as dtype dt. */
ir_scalar interp_binary(ir_opcode op, ir_scalar a, ir_scalar b, int32_t adt, int32_t dt,
                        const char** err);

/** Reduction accumulator. */
typedef struct interp_acc {
  ir_scalar v;      /* running value (in the value's dtype domain) */
  int64_t best;     /* argmax/argmin: index of the best value */
  int64_t count;    /* values folded */
} interp_acc;
void interp_acc_init(interp_acc* a, ir_rtype rt, int32_t vdt);
void interp_acc_fold(interp_acc* a, ir_rtype rt, ir_scalar v, int32_t vdt, int64_t index);
/** Final value as dtype dt; error for an empty max/min/argmax/argmin. */
ptc_status interp_acc_result(const interp_acc* a, ir_rtype rt, int32_t vdt, int32_t dt,
                             ir_scalar* out);

/** Applies an extern activation to a float. */
double interp_activation(int32_t act, double x);

/* ---- externs (ir_interp_ext.c) --------------------------------------------------------------- */
ptc_status interp_extern(interp* it, const ir_node* n);

#endif /* PTC_LIB_IR_INTERP_INTERNAL_H */
