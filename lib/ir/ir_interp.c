/* ir_interp.c - the IR interpreter (tests and the oracle of the code
 * generators; slow on purpose: every index expression is evaluated with
 * sym_eval at every point). Inputs are copied into storage laid out as the
 * graph declares (alias buffers of an input share it), constants are read in
 * place, computed buffers are allocated zeroed (view buffers share their
 * base's). Nodes run in order; a
 * reduction runs its body in three phases per outer point: ops that do not
 * depend on the reduction vars, the inner loop (inner ops, then folding
 * every IR_REDUCE), and the ops after the reduction. */
#include "ir_interp_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../backends/ref/ref.h"

ptc_status interp_eval(const interp* it, const sym_expr* e, int64_t* out) {
  if (!e) return PTC_ERR(INTERNAL, "ir_interpret: missing index expression");
  return sym_eval(e, it->vals, it->n_vals, out);
}

/* ---- storage ------------------------------------------------------------------------------- */

static ptc_status alloc_storage(interp_buf* b, int64_t n, int32_t dtype) {
  size_t es = ptc_dtype_size(dtype);
  if (n < 0 || (uint64_t)n > SIZE_MAX / 4 / (es ? es : 1))
    return PTC_ERR(RESOURCE_EXHAUSTED, "ir_interpret: buffer of %lld elements", (long long)n);
  b->data = calloc((size_t)n + 1, es);
  b->n = n;
  b->owned = true;
  return b->data ? PTC_OK : ptc_status_oom();
}

/* The input tensor copied into storage with the declared layout of b. */
static ptc_status input_storage(interp* it, const ir_buffer* b, const ptc_tensor* t,
                                interp_buf* out) {
  int64_t shape[PTC_MAX_RANK], dst[PTC_MAX_RANK], src[PTC_MAX_RANK], extent;
  if (ptc_dtype_from_dl(t->dtype) != b->dtype || (uint32_t)t->ndim != b->rank)
    return PTC_ERR(INVALID_ARGUMENT, "ir_interpret: input %d has the wrong dtype or rank",
                   (int)b->graph_input);
  PTC_TRY(interp_eval(it, b->numel, &extent));
  PTC_TRY(alloc_storage(out, extent, b->dtype));
  int64_t numel = 1, acc = 1;
  for (int32_t d = (int32_t)b->rank - 1; d >= 0; d--) {
    PTC_TRY(interp_eval(it, b->strides[d], &dst[d]));
    shape[d] = t->shape[d];
    src[d] = t->strides ? t->strides[d] : acc;
    acc *= shape[d];
    numel *= shape[d];
  }
  size_t es = ptc_dtype_size(b->dtype);
  const char* base = (const char*)t->data + t->byte_offset;
  int64_t idx[PTC_MAX_RANK] = {0};
  for (int64_t e = 0; e < numel; e++) {
    int64_t so = 0, dof = 0;
    for (uint32_t d = 0; d < b->rank; d++) {
      so += idx[d] * src[d];
      dof += idx[d] * dst[d];
    }
    if (dof < 0 || dof >= extent)
      return PTC_ERR(INVALID_ARGUMENT, "ir_interpret: input %d does not fit its layout",
                     (int)b->graph_input);
    memcpy((char*)out->data + dof * (int64_t)es, base + so * (int64_t)es, es);
    for (int32_t d = (int32_t)b->rank - 1; d >= 0 && ++idx[d] == shape[d]; d--) idx[d] = 0;
  }
  return PTC_OK;
}

static ptc_status setup_buffer(interp* it, int32_t id, const ptc_tensor* inputs) {
  const ir_program* p = it->p;
  const ir_buffer* b = ir_buf(p, id);
  interp_buf* ib = &it->bufs[id];
  if (b->kind == IR_BUF_VIEW) { /* a view shares its computed base's storage */
    if (b->base < 0 || b->base >= id) return PTC_ERR(INTERNAL, "ir_interpret: view %s", b->name);
    *ib = it->bufs[b->base];
    ib->owned = false;
    return PTC_OK;
  }
  for (int32_t k = 0; k < id; k++) { /* an alias shares its leaf's storage */
    const ir_buffer* o = ir_buf(p, k);
    if (b->kind != IR_BUF_COMPUTED && o->kind == b->kind && o->graph_value == b->graph_value) {
      *ib = it->bufs[k];
      ib->owned = false;
      return PTC_OK;
    }
  }
  if (b->kind == IR_BUF_INPUT) return input_storage(it, b, &inputs[b->graph_input], ib);
  if (b->kind == IR_BUF_CONSTANT) {
    const gvalue* gv = graph_value(p->graph, b->graph_value);
    ib->data = (void*)gv->data;
    ib->n = (int64_t)(gv->nbytes / (ptc_dtype_size(b->dtype) ? ptc_dtype_size(b->dtype) : 1));
    ib->owned = false;
    return PTC_OK;
  }
  int64_t n;
  PTC_TRY(interp_eval(it, b->numel, &n));
  return alloc_storage(ib, n, b->dtype);
}

/* ---- body ops -------------------------------------------------------------------------------- */

typedef struct frame {
  const ir_body* body;
  ir_scalar* regs;
  uint8_t* phase;      /* PRE / INNER / POST */
  interp_acc* acc;     /* per op (IR_REDUCE) */
} frame;

enum { PH_PRE = 0, PH_INNER = 1, PH_POST = 2 };

static int32_t dt_of(const frame* f, ir_val v) { return f->body->ops[v].dtype; }

static ptc_status checked_index(const interp* it, const ir_op* op, int64_t* e) {
  PTC_TRY(interp_eval(it, op->index, e));
  const interp_buf* b = &it->bufs[op->buf];
  if (*e < 0 || *e >= b->n)
    return PTC_ERR(OUT_OF_RANGE, "ir_interpret: %s of %s at element %lld outside its %lld elements",
                   ir_opcode_name((ir_opcode)op->opcode), ir_buf(it->p, op->buf)->name,
                   (long long)*e, (long long)b->n);
  return PTC_OK;
}

static ptc_status op_load(interp* it, const frame* f, const ir_op* op, ir_scalar* r) {
  if (op->args[0] >= 0 && f->regs[op->args[0]].i == 0) {
    r->f = op->f;
    r->i = op->i;
    return PTC_OK;
  }
  int64_t e;
  PTC_TRY(checked_index(it, op, &e));
  *r = ir_scalar_load(it->bufs[op->buf].data, op->dtype, e);
  return PTC_OK;
}

static ptc_status op_store(interp* it, const frame* f, const ir_op* op) {
  int64_t e;
  PTC_TRY(checked_index(it, op, &e));
  ir_scalar v = ir_scalar_convert(f->regs[op->args[0]], dt_of(f, op->args[0]), op->dtype);
  ir_scalar_store(it->bufs[op->buf].data, op->dtype, e, v);
  return PTC_OK;
}

static ptc_status op_indirect(interp* it, const frame* f, const ir_op* op, ir_scalar* r) {
  int64_t v = f->regs[op->args[0]].i, bound = op->bound;
  if (op->bound_expr) PTC_TRY(interp_eval(it, op->bound_expr, &bound));
  int64_t w = v < 0 ? v + bound : v;
  if (w < 0 || w >= bound)
    return PTC_ERR(INVALID_ARGUMENT, "index %lld is out of bounds for dimension with size %lld",
                   (long long)v, (long long)bound);
  it->vals[op->sym->value] = w;
  r->i = w;
  return PTC_OK;
}

static ptc_status op_rand(interp* it, const ir_op* op, ir_scalar* r) {
  int64_t e;
  PTC_TRY(interp_eval(it, op->index, &e));
  if (op->opcode == IR_RANDN) {
    r->f = ir_round_float(ref_normal(it->seed, (uint64_t)op->i, (uint64_t)e), op->dtype);
    return PTC_OK;
  }
  double sc = op->dtype == PTC_F64 ? 9007199254740992.0 : 16777216.0;
  r->f = floor(ref_uniform(it->seed, (uint64_t)op->i, (uint64_t)e) * sc) / sc;
  return PTC_OK;
}

static ptc_status op_math(const frame* f, const ir_op* op, ir_scalar* r) {
  const char* err = NULL;
  ir_scalar a = op->args[0] >= 0 ? f->regs[op->args[0]] : (ir_scalar){0, 0};
  int32_t adt = op->args[0] >= 0 ? dt_of(f, op->args[0]) : op->dtype;
  if (op->opcode == IR_WHERE) {
    ir_val pick = a.i ? op->args[1] : op->args[2];
    *r = ir_scalar_convert(f->regs[pick], dt_of(f, pick), op->dtype);
  } else if (op->opcode == IR_TO_DTYPE) {
    *r = ir_scalar_convert(a, adt, op->dtype);
  } else if (op->opcode >= IR_ADD) {
    ir_scalar b = ir_scalar_convert(f->regs[op->args[1]], dt_of(f, op->args[1]), adt);
    *r = interp_binary((ir_opcode)op->opcode, a, b, adt, op->dtype, &err);
  } else {
    *r = interp_unary((ir_opcode)op->opcode, a, adt, op->dtype, &err);
  }
  return err ? PTC_ERR(INVALID_ARGUMENT, "ir_interpret: %s: %s",
                       ir_opcode_name((ir_opcode)op->opcode), err)
             : PTC_OK;
}

static ptc_status run_op(interp* it, const frame* f, uint32_t i) {
  const ir_op* op = &f->body->ops[i];
  ir_scalar* r = &f->regs[i];
  switch (op->opcode) {
    case IR_LOAD: return op_load(it, f, op, r);
    case IR_STORE: return op_store(it, f, op);
    case IR_CONST:
      r->f = op->f;
      r->i = op->i;
      return PTC_OK;
    case IR_INDEX_EXPR: {
      int64_t e;
      PTC_TRY(interp_eval(it, op->index, &e));
      *r = ir_scalar_of_i(e, op->dtype);
      return PTC_OK;
    }
    case IR_RAND:
    case IR_RANDN: return op_rand(it, op, r);
    case IR_INDIRECT: return op_indirect(it, f, op, r);
    case IR_REDUCE: return PTC_OK; /* folded by the reduction loop */
    default: return op_math(f, op, r);
  }
}

static ptc_status run_phase(interp* it, const frame* f, uint8_t phase) {
  for (uint32_t i = 0; i < f->body->n; i++)
    if (f->phase[i] == phase && f->body->ops[i].opcode != IR_REDUCE) PTC_TRY(run_op(it, f, i));
  return PTC_OK;
}

static void compute_phases(const ir_body* b, uint8_t* phase) {
  for (uint32_t i = 0; i < b->n; i++) {
    const ir_op* op = &b->ops[i];
    uint8_t ph = op->inner ? PH_INNER : PH_PRE;
    for (int k = 0; k < 3; k++)
      if (op->args[k] >= 0 && phase[op->args[k]] == PH_POST) ph = PH_POST;
    phase[i] = op->opcode == IR_REDUCE ? PH_POST : ph;
  }
}

/* ---- loops ------------------------------------------------------------------------------------- */

typedef struct loops {
  uint32_t n;
  int64_t size[PTC_MAX_RANK];
  const sym_expr* const* vars;
} loops;

static ptc_status loops_init(interp* it, loops* l, uint32_t n, const sym_expr* const* sizes,
                             const sym_expr* const* vars, int64_t* total) {
  l->n = n;
  l->vars = vars;
  *total = 1;
  for (uint32_t k = 0; k < n; k++) {
    PTC_TRY(interp_eval(it, sizes[k], &l->size[k]));
    *total *= l->size[k] > 0 ? l->size[k] : 0;
  }
  return PTC_OK;
}

/* Sets the loop vars to point `e` (row-major). */
static void loops_set(interp* it, const loops* l, int64_t e) {
  for (uint32_t k = l->n; k-- > 0;) {
    it->vals[l->vars[k]->value] = e % l->size[k];
    e /= l->size[k];
  }
}

static ptc_status reduce_point(interp* it, const frame* f, const loops* rl, int64_t rtotal) {
  const ir_body* b = f->body;
  PTC_TRY(run_phase(it, f, PH_PRE));
  for (uint32_t i = 0; i < b->n; i++)
    if (b->ops[i].opcode == IR_REDUCE)
      interp_acc_init(&f->acc[i], (ir_rtype)b->ops[i].rtype, dt_of(f, b->ops[i].args[0]));
  for (int64_t e = 0; e < rtotal; e++) {
    loops_set(it, rl, e);
    PTC_TRY(run_phase(it, f, PH_INNER));
    for (uint32_t i = 0; i < b->n; i++) {
      const ir_op* op = &b->ops[i];
      if (op->opcode != IR_REDUCE) continue;
      int64_t index = op->args[1] >= 0 ? f->regs[op->args[1]].i : 0;
      interp_acc_fold(&f->acc[i], (ir_rtype)op->rtype, f->regs[op->args[0]],
                      dt_of(f, op->args[0]), index);
    }
  }
  for (uint32_t i = 0; i < b->n; i++) {
    const ir_op* op = &b->ops[i];
    if (op->opcode == IR_REDUCE)
      PTC_TRY(interp_acc_result(&f->acc[i], (ir_rtype)op->rtype, dt_of(f, op->args[0]),
                                op->dtype, &f->regs[i]));
  }
  return run_phase(it, f, PH_POST);
}

static ptc_status run_loops(interp* it, const ir_node* n, const frame* f) {
  loops xl, rl;
  int64_t xtotal, rtotal = 1;
  PTC_TRY(loops_init(it, &xl, n->n_ranges, n->ranges, it->p->xvars, &xtotal));
  if (n->kind == IR_REDUCTION)
    PTC_TRY(loops_init(it, &rl, n->n_rranges, n->rranges, it->p->rvars, &rtotal));
  for (int64_t e = 0; e < xtotal; e++) {
    loops_set(it, &xl, e);
    if (n->kind == IR_REDUCTION)
      PTC_TRY(reduce_point(it, f, &rl, rtotal));
    else
      PTC_TRY(run_phase(it, f, PH_PRE));
  }
  return PTC_OK;
}

static ptc_status run_body_node(interp* it, const ir_node* n) {
  const ir_body* b = &n->body;
  if (!ir_body_ok(b)) return PTC_ERR(INTERNAL, "ir_interpret: invalid body");
  frame f = {b, calloc(b->n + 1, sizeof(ir_scalar)), calloc(b->n + 1, 1),
             calloc(b->n + 1, sizeof(interp_acc))};
  ptc_status s = f.regs && f.phase && f.acc ? PTC_OK : ptc_status_oom();
  if (!s) {
    compute_phases(b, f.phase);
    s = run_loops(it, n, &f);
  }
  free(f.regs);
  free(f.phase);
  free(f.acc);
  return s;
}

/* ---- outputs ------------------------------------------------------------------------------------ */

static ptc_status copy_output(interp* it, int32_t id, const ptc_tensor* t) {
  const ir_buffer* b = ir_buf(it->p, id);
  int32_t tdt = ptc_dtype_from_dl(t->dtype);
  if (tdt < 0 || (uint32_t)t->ndim != b->rank)
    return PTC_ERR(INVALID_ARGUMENT, "ir_interpret: output tensor has the wrong dtype or rank");
  int64_t shape[PTC_MAX_RANK], st[PTC_MAX_RANK], tst[PTC_MAX_RANK], off, numel = 1, acc = 1;
  PTC_TRY(interp_eval(it, b->offset, &off));
  for (int32_t d = (int32_t)b->rank - 1; d >= 0; d--) {
    PTC_TRY(interp_eval(it, b->shape[d], &shape[d]));
    PTC_TRY(interp_eval(it, b->strides[d], &st[d]));
    if (shape[d] != t->shape[d])
      return PTC_ERR(INVALID_ARGUMENT, "ir_interpret: output tensor dim %d is %lld, expected %lld",
                     (int)d, (long long)t->shape[d], (long long)shape[d]);
    tst[d] = t->strides ? t->strides[d] : acc;
    acc *= shape[d];
    numel *= shape[d];
  }
  void* dst = (char*)t->data + t->byte_offset;
  int64_t idx[PTC_MAX_RANK] = {0};
  for (int64_t e = 0; e < numel; e++) {
    int64_t so = off, dof = 0;
    for (uint32_t d = 0; d < b->rank; d++) {
      so += idx[d] * st[d];
      dof += idx[d] * tst[d];
    }
    if (so < 0 || so >= it->bufs[id].n)
      return PTC_ERR(INTERNAL, "ir_interpret: output %s read outside its storage", b->name);
    ir_scalar v = ir_scalar_load(it->bufs[id].data, b->dtype, so);
    ir_scalar_store(dst, tdt, dof, ir_scalar_convert(v, b->dtype, tdt));
    for (int32_t d = (int32_t)b->rank - 1; d >= 0 && ++idx[d] == shape[d]; d--) idx[d] = 0;
  }
  return PTC_OK;
}

/* ---- entry ------------------------------------------------------------------------------------------ */

static ptc_status run_all(interp* it, const ptc_tensor* inputs, const ptc_tensor* outputs) {
  const ir_program* p = it->p;
  for (size_t i = 0; i < p->buffers.len; i++) PTC_TRY(setup_buffer(it, (int32_t)i, inputs));
  for (size_t i = 0; i < p->nodes.len; i++) {
    const ir_node* n = ir_node_at(p, i);
    ptc_status s = n->kind == IR_EXTERN ? interp_extern(it, n) : run_body_node(it, n);
    if (s) return ptc_status_prefix(s, "node %zu (%s)", i, n->origin ? n->origin : "?");
  }
  for (size_t i = 0; i < p->n_outputs; i++) PTC_TRY(copy_output(it, p->output_bufs[i], &outputs[i]));
  return PTC_OK;
}

ptc_status ir_interpret(const ir_program* p, const ptc_tensor* inputs, size_t n_in,
                        const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                        size_t n_syms, uint64_t seed) {
  if (!p) return PTC_ERR(INVALID_ARGUMENT, "ir_interpret: NULL program");
  if (n_in != p->n_inputs || n_out != p->n_outputs || n_syms < p->n_size_syms)
    return PTC_ERR(INVALID_ARGUMENT,
                   "ir_interpret: expected %zu inputs, %zu outputs, %zu symbol values",
                   p->n_inputs, p->n_outputs, p->n_size_syms);
  interp it;
  memset(&it, 0, sizeof it);
  it.p = p;
  it.seed = seed;
  it.n_vals = sym_num_vars(p->env);
  it.vals = calloc(it.n_vals + 1, sizeof *it.vals);
  it.bufs = calloc(p->buffers.len + 1, sizeof *it.bufs);
  ptc_status s = it.vals && it.bufs ? PTC_OK : ptc_status_oom();
  if (!s) {
    for (size_t i = 0; i < p->n_size_syms; i++) it.vals[i] = sym_values[i];
    s = run_all(&it, inputs, outputs);
  }
  for (size_t i = 0; it.bufs && i < p->buffers.len; i++)
    if (it.bufs[i].owned) free(it.bufs[i].data);
  free(it.bufs);
  free(it.vals);
  return s;
}
