/* ir_ops.c - the body builder (the define-by-run ops interface): each call
 * appends one op to a body and returns its value. The builder validates its
 * arguments, computes the `inner` flag (the op depends on a reduction var,
 * directly through an index or through an argument, or on an indirect index
 * defined by an inner op), eliminates common subexpressions (an op equal to
 * an earlier one of the body returns that op's value; stores and reductions
 * are always new), and never fails loudly: on allocation failure or a bad
 * argument (including -1 from an earlier failure) the body is poisoned,
 * every later call returns -1, and ir_body_ok reports false. */
#include "ir_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POISONED UINT32_MAX

bool ir_body_ok(const ir_body* b) { return b && b->n != POISONED; }

void ir_body_free(ir_body* b) {
  if (!b) return;
  free(b->ops);
  b->ops = NULL;
  b->n = b->cap = 0;
}

static ir_val poison(ir_body* b) {
  if (b) b->n = POISONED;
  return -1;
}

static bool arg_ok(const ir_body* b, ir_val v) { return v >= 0 && (uint32_t)v < b->n; }

/* A blank op (no args, no buffer). */
static ir_op blank(uint16_t opcode, int32_t dtype) {
  ir_op op;
  memset(&op, 0, sizeof op);
  op.opcode = opcode;
  op.dtype = dtype;
  op.args[0] = op.args[1] = op.args[2] = -1;
  op.buf = -1;
  return op;
}

static bool same_op(const ir_op* a, const ir_op* b) {
  return a->opcode == b->opcode && a->dtype == b->dtype && a->rtype == b->rtype &&
         a->args[0] == b->args[0] && a->args[1] == b->args[1] && a->args[2] == b->args[2] &&
         a->buf == b->buf && a->index == b->index && a->bound == b->bound &&
         a->bound_expr == b->bound_expr && a->i == b->i && memcmp(&a->f, &b->f, sizeof a->f) == 0;
}

/* Value of an earlier op equal to `op` (ignoring the symbol an indirect
 * defines), or -1. */
static ir_val find_same(const ir_body* b, const ir_op* op) {
  if (op->opcode == IR_STORE || op->opcode == IR_REDUCE) return -1;
  for (uint32_t i = b->n; i-- > 0;)
    if (same_op(&b->ops[i], op)) return (ir_val)i;
  return -1;
}

/* Appends op; -1 (body poisoned) on failure. */
static ir_val push(ir_body* b, const ir_op* op) {
  if (!ir_body_ok(b)) return -1;
  if (b->n == b->cap) {
    uint32_t cap = b->cap ? b->cap * 2 : 16;
    ir_op* ops = cap > b->cap && cap < POISONED / 2 ? realloc(b->ops, cap * sizeof *ops) : NULL;
    if (!ops) return poison(b);
    b->ops = ops;
    b->cap = cap;
  }
  b->ops[b->n++] = *op;
  return (ir_val)(b->n - 1);
}

/* Appends op unless an equal op exists. */
static ir_val emit(ir_body* b, const ir_op* op) {
  ir_val same = find_same(b, op);
  return same >= 0 ? same : push(b, op);
}

/* Symbol predicate: a reduction var, or an indirect symbol defined by an
 * inner IR_INDIRECT of the body. */
static bool inner_sym(const ir_sym_pred* pr, size_t sym) {
  const ir_program* p = pr->p;
  const ir_body* b = pr->data;
  for (int k = 0; k < PTC_MAX_RANK; k++)
    if (p->rvars[k] && (size_t)p->rvars[k]->value == sym) return true;
  for (uint32_t i = 0; i < b->n; i++)
    if (b->ops[i].opcode == IR_INDIRECT && b->ops[i].inner && b->ops[i].sym &&
        (size_t)b->ops[i].sym->value == sym)
      return true;
  return false;
}

static uint8_t index_inner(const ir_program* p, const ir_body* b, const sym_expr* e) {
  ir_sym_pred pr = {inner_sym, p, b};
  return ir_expr_mentions(e, &pr) ? 1 : 0;
}

static uint8_t args_inner(const ir_body* b, ir_val x, ir_val y, ir_val z) {
  return (x >= 0 && b->ops[x].inner) || (y >= 0 && b->ops[y].inner) ||
         (z >= 0 && b->ops[z].inner);
}

static bool buf_ok(const ir_program* p, int32_t buf) {
  return p && buf >= 0 && (size_t)buf < p->buffers.len;
}

/* ---- leaves ---------------------------------------------------------------------------- */

ir_val ir_ops_load_masked(ir_program* p, ir_body* b, int32_t buf, const sym_expr* index,
                          ir_val mask, double other) {
  if (!ir_body_ok(b)) return -1;
  if (!buf_ok(p, buf) || !index || (mask != -1 && !arg_ok(b, mask))) return poison(b);
  ir_op op = blank(IR_LOAD, ir_buf(p, buf)->dtype);
  op.buf = buf;
  op.index = index;
  op.args[0] = mask;
  op.inner = index_inner(p, b, index) || (mask >= 0 && b->ops[mask].inner);
  op.f = mask >= 0 ? other : 0.0;
  op.i = (int64_t)op.f;
  return emit(b, &op);
}

ir_val ir_ops_load(ir_program* p, ir_body* b, int32_t buf, const sym_expr* index) {
  return ir_ops_load_masked(p, b, buf, index, -1, 0.0);
}

ir_val ir_ops_const_f(ir_body* b, double v, int32_t dtype) {
  if (!ir_body_ok(b)) return -1;
  if (!ptc_dtype_valid(dtype)) return poison(b);
  ir_op op = blank(IR_CONST, dtype);
  op.f = v;
  op.i = (int64_t)v;
  return emit(b, &op);
}

ir_val ir_ops_const_i(ir_body* b, int64_t v, int32_t dtype) {
  if (!ir_body_ok(b)) return -1;
  if (!ptc_dtype_valid(dtype)) return poison(b);
  ir_op op = blank(IR_CONST, dtype);
  op.f = (double)v;
  op.i = v;
  return emit(b, &op);
}

ir_val ir_ops_index_expr(ir_program* p, ir_body* b, const sym_expr* e, int32_t dtype) {
  if (!ir_body_ok(b)) return -1;
  if (!p || !e || !ptc_dtype_valid(dtype)) return poison(b);
  ir_op op = blank(IR_INDEX_EXPR, dtype);
  op.index = e;
  op.inner = index_inner(p, b, e);
  return emit(b, &op);
}

ir_val ir_ops_rand(ir_program* p, ir_body* b, int normal, const sym_expr* index, int64_t stream,
                   int32_t dtype) {
  if (!ir_body_ok(b)) return -1;
  if (!p || !index || !ptc_dtype_is_float(dtype)) return poison(b);
  ir_op op = blank(normal ? IR_RANDN : IR_RAND, dtype);
  op.index = index;
  op.i = stream;
  op.inner = index_inner(p, b, index);
  return emit(b, &op);
}

/* ---- math ------------------------------------------------------------------------------ */

static ir_val math_op_f(ir_body* b, ir_opcode opc, ir_val x, ir_val y, ir_val z, int nargs,
                        int32_t dtype, int64_t flags) {
  if (!ir_body_ok(b)) return -1;
  ir_val a[3] = {x, y, z};
  for (int k = 0; k < nargs; k++)
    if (!arg_ok(b, a[k])) return poison(b);
  if (!ptc_dtype_valid(dtype)) return poison(b);
  ir_op op = blank((uint16_t)opc, dtype);
  for (int k = 0; k < nargs; k++) op.args[k] = a[k];
  op.inner = args_inner(b, op.args[0], op.args[1], op.args[2]);
  op.i = flags;
  return emit(b, &op);
}

static ir_val math_op(ir_body* b, ir_opcode opc, ir_val x, ir_val y, ir_val z, int nargs,
                      int32_t dtype) {
  return math_op_f(b, opc, x, y, z, nargs, dtype, 0);
}

ir_val ir_ops_unary(ir_body* b, ir_opcode op, ir_val x, int32_t dtype) {
  if (op < IR_NEG || op > IR_BNOT) return poison(b);
  return math_op(b, op, x, -1, -1, 1, dtype);
}

ir_val ir_ops_unary_flags(ir_body* b, ir_opcode op, ir_val x, int32_t dtype, int64_t flags) {
  if (op < IR_NEG || op > IR_BNOT) return poison(b);
  return math_op_f(b, op, x, -1, -1, 1, dtype, flags);
}

ir_val ir_ops_binary(ir_body* b, ir_opcode op, ir_val x, ir_val y, int32_t dtype) {
  if (op < IR_ADD || op > IR_BXOR) return poison(b);
  return math_op(b, op, x, y, -1, 2, dtype);
}

ir_val ir_ops_where(ir_body* b, ir_val c, ir_val x, ir_val y, int32_t dtype) {
  return math_op(b, IR_WHERE, c, x, y, 3, dtype);
}

ir_val ir_ops_to_dtype(ir_body* b, ir_val x, int32_t dtype) {
  return math_op(b, IR_TO_DTYPE, x, -1, -1, 1, dtype);
}

/* ---- indirect indexing, reductions, stores -------------------------------------------- */

/* A fresh index symbol "i<k>" ranging over [0, hi]. */
static const sym_expr* new_index_sym(ir_program* p, int64_t hi) {
  char name[32];
  size_t k = sym_num_vars(p->env);
  const sym_expr* s = NULL;
  do snprintf(name, sizeof name, "i%zu", k++);
  while (sym_find_var(p->env, name) >= 0);
  ptc_status st = sym_new_var(p->env, name, SYM_NO_HINT, 0, hi, &s);
  ptc_status_destroy(st);
  return st ? NULL : s;
}

ir_val ir_ops_indirect(ir_program* p, ir_body* b, ir_val x, const sym_expr* bound,
                       const sym_expr** sym) {
  if (!ir_body_ok(b)) return -1;
  if (!p || !bound || !arg_ok(b, x) || ptc_dtype_is_float(b->ops[x].dtype)) return poison(b);
  int64_t bv = -1;
  bool is_static = sym_is_const(bound, &bv);
  ir_op op = blank(IR_INDIRECT, PTC_I64);
  op.args[0] = x;
  op.bound = is_static ? bv : 0;
  op.bound_expr = is_static ? NULL : bound;
  op.inner = b->ops[x].inner;
  ir_val same = find_same(b, &op); /* the same index value: the same symbol */
  if (same < 0) {
    op.sym = new_index_sym(p, is_static ? (bv > 0 ? bv - 1 : 0) : IR_INDEX_MAX);
    if (!op.sym) return poison(b);
    same = push(b, &op);
  }
  if (sym && same >= 0) *sym = b->ops[same].sym;
  return same;
}

ir_val ir_ops_reduce(ir_body* b, ir_rtype rt, ir_val x, ir_val index, int32_t dtype) {
  if (!ir_body_ok(b)) return -1;
  bool arg = rt == IR_R_ARGMAX || rt == IR_R_ARGMIN;
  if ((unsigned)rt > IR_R_ALL || !arg_ok(b, x) || (arg && !arg_ok(b, index)) ||
      (!arg && index != -1) || !ptc_dtype_valid(dtype))
    return poison(b);
  ir_op op = blank(IR_REDUCE, dtype);
  op.rtype = (uint8_t)rt;
  op.args[0] = x;
  op.args[1] = index;
  op.inner = 0; /* its result exists once per outer point */
  return push(b, &op);
}

ir_val ir_ops_store(ir_program* p, ir_body* b, int32_t buf, const sym_expr* index, ir_val v) {
  if (!ir_body_ok(b)) return -1;
  if (!buf_ok(p, buf) || !index || !arg_ok(b, v)) return poison(b);
  ir_op op = blank(IR_STORE, ir_buf(p, buf)->dtype);
  op.buf = buf;
  op.index = index;
  op.args[0] = v;
  op.inner = index_inner(p, b, index) || b->ops[v].inner;
  return push(b, &op);
}
