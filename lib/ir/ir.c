/* ir.c - ir_program lifetime: the env clone with the shared loop variables,
 * buffers and nodes (deep-copied into the program arena; bodies moved in),
 * and small queries (ir_uses_rvar, ir_body_count, ir_opcode_name). */
#include "ir_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Creates loop variable `prefix`<k> (a fresh name if a graph symbol already
 * has it) with range [0, 2^62]. */
static ptc_status make_loop_var(sym_env* env, const char* prefix, int k, const sym_expr** out) {
  char name[32];
  snprintf(name, sizeof name, "%s%d", prefix, k);
  while (sym_find_var(env, name) >= 0) {
    size_t n = strlen(name);
    if (n + 2 >= sizeof name) return PTC_ERR(INTERNAL, "ir: cannot name loop variable");
    name[n] = '_';
    name[n + 1] = 0;
  }
  return sym_new_var(env, name, SYM_NO_HINT, 0, IR_INDEX_MAX, out);
}

ptc_status ir_program_create(ptc_context* ctx, const ptc_graph* g, ir_program** out) {
  if (!g || !out) return PTC_ERR(INVALID_ARGUMENT, "ir_program_create: NULL argument");
  ir_program* p = calloc(1, sizeof *p);
  if (!p) return ptc_status_oom();
  p->ctx = ctx;
  p->graph = g;
  ptc_arena_init(&p->arena, 0);
  ptc_vec_init(&p->buffers, sizeof(ir_buffer));
  ptc_vec_init(&p->nodes, sizeof(ir_node));
  p->env = sym_env_clone(g->env);
  if (!p->env) {
    ir_program_destroy(p);
    return ptc_status_oom();
  }
  p->n_size_syms = sym_num_vars(p->env);
  ptc_status s = PTC_OK;
  for (int k = 0; k < PTC_MAX_RANK && !s; k++) s = make_loop_var(p->env, "x", k, &p->xvars[k]);
  for (int k = 0; k < PTC_MAX_RANK && !s; k++) s = make_loop_var(p->env, "r", k, &p->rvars[k]);
  if (s) {
    ir_program_destroy(p);
    return s;
  }
  *out = p;
  return PTC_OK;
}

void ir_program_destroy(ir_program* p) {
  if (!p) return;
  for (size_t i = 0; i < p->nodes.len; i++) ir_body_free(&ir_node_at(p, i)->body);
  ptc_vec_free(&p->nodes);
  ptc_vec_free(&p->buffers);
  ptc_arena_free(&p->arena);
  sym_env_destroy(p->env);
  free(p);
}

/* Copies n expression pointers into the program arena (NULL for n == 0). */
static bool copy_exprs(ir_program* p, const sym_expr** src, uint32_t n, const sym_expr*** dst) {
  *dst = NULL;
  if (n == 0) return true;
  if (!src) return false;
  *dst = ptc_arena_memdup(&p->arena, src, n * sizeof *src);
  return *dst != NULL;
}

static void buffer_name(const ir_program* p, const ir_buffer* b, size_t id, char* name,
                        size_t cap) {
  char tmp[64];
  bool alias = false;
  for (size_t i = 0; i < id && b->kind == IR_BUF_INPUT; i++)
    alias |= ir_buf(p, (int32_t)i)->kind == IR_BUF_INPUT &&
             ir_buf(p, (int32_t)i)->graph_input == b->graph_input;
  if (b->kind == IR_BUF_INPUT && !alias)
    snprintf(tmp, sizeof tmp, "in%d", (int)b->graph_input);
  else if (b->kind == IR_BUF_INPUT)
    snprintf(tmp, sizeof tmp, "in%d_%zu", (int)b->graph_input, id);
  else if (b->kind == IR_BUF_CONSTANT)
    snprintf(tmp, sizeof tmp, "c%zu", id);
  else if (b->kind == IR_BUF_VIEW)
    snprintf(tmp, sizeof tmp, "buf%d_v%zu", (int)b->base, id);
  else
    snprintf(tmp, sizeof tmp, "buf%zu", id);
  ptc_copy_out(tmp, name, cap);
}

ptc_status ir_add_buffer(ir_program* p, const ir_buffer* b, int32_t* id) {
  if (p->buffers.len >= INT32_MAX) return PTC_ERR(RESOURCE_EXHAUSTED, "ir: too many buffers");
  if (b->kind == IR_BUF_VIEW &&
      (b->base < 0 || (size_t)b->base >= p->buffers.len ||
       ir_buf(p, b->base)->kind != IR_BUF_COMPUTED))
    return PTC_ERR(INVALID_ARGUMENT, "ir: a view buffer's base %d is not a computed buffer",
                   (int)b->base);
  ir_buffer c = *b;
  if (!copy_exprs(p, b->shape, b->rank, &c.shape) ||
      !copy_exprs(p, b->strides, b->rank, &c.strides))
    return ptc_status_oom();
  if (b->kind != IR_BUF_COMPUTED) c.producer = -1;
  size_t idx = p->buffers.len;
  buffer_name(p, b, idx, c.name, sizeof c.name);
  if (!ptc_vec_push(&p->buffers, &c)) return ptc_status_oom();
  *id = (int32_t)idx;
  return PTC_OK;
}

static ptc_status copy_node(ir_program* p, const ir_node* n, ir_node* c) {
  *c = *n;
  if (!copy_exprs(p, n->ranges, n->n_ranges, &c->ranges) ||
      !copy_exprs(p, n->rranges, n->n_rranges, &c->rranges))
    return ptc_status_oom();
  if (n->kind == IR_EXTERN) {
    c->ext.in = n->ext.n_in ? ptc_arena_memdup(&p->arena, n->ext.in, n->ext.n_in * sizeof(int32_t))
                            : NULL;
    c->ext.out = n->ext.n_out
                     ? ptc_arena_memdup(&p->arena, n->ext.out, n->ext.n_out * sizeof(int32_t))
                     : NULL;
    if ((n->ext.n_in && !c->ext.in) || (n->ext.n_out && !c->ext.out)) return ptc_status_oom();
  }
  if (n->origin && !(c->origin = ptc_arena_strdup(&p->arena, n->origin))) return ptc_status_oom();
  return PTC_OK;
}

static void set_producers(ir_program* p, const ir_node* n, size_t index) {
  if (n->kind != IR_EXTERN) {
    if (n->out_buf >= 0 && (size_t)n->out_buf < p->buffers.len)
      ir_buf(p, n->out_buf)->producer = (int32_t)index;
    return;
  }
  for (uint32_t k = 0; k < n->ext.n_out; k++)
    if (n->ext.out[k] >= 0 && (size_t)n->ext.out[k] < p->buffers.len)
      ir_buf(p, n->ext.out[k])->producer = (int32_t)index;
}

ptc_status ir_add_node(ir_program* p, const ir_node* n, size_t* index) {
  ir_node c;
  ir_body body = n->body;
  ptc_status s = ir_body_ok(&body) ? copy_node(p, n, &c) : ptc_status_oom();
  if (!s && !ptc_vec_push(&p->nodes, &c)) s = ptc_status_oom();
  if (s) {
    ir_body_free(&body); /* moved in: consumed on failure too */
    return s;
  }
  size_t idx = p->nodes.len - 1;
  set_producers(p, &c, idx);
  if (index) *index = idx;
  return PTC_OK;
}

/* ---- queries ---------------------------------------------------------------------- */

bool ir_expr_mentions(const sym_expr* e, const ir_sym_pred* pred) {
  if (!e) return false;
  if (e->kind == SYM_VAR) return pred->fn(pred, (size_t)e->value);
  for (uint32_t i = 0; i < e->n; i++)
    if (ir_expr_mentions(e->args[i], pred)) return true;
  return false;
}

static bool is_rvar(const ir_sym_pred* pr, size_t sym) {
  const ir_program* p = pr->p;
  for (int k = 0; k < PTC_MAX_RANK; k++)
    if (p->rvars[k] && (size_t)p->rvars[k]->value == sym) return true;
  return false;
}

bool ir_uses_rvar(const ir_program* p, const sym_expr* e) {
  ir_sym_pred pr = {is_rvar, p, NULL};
  return ir_expr_mentions(e, &pr);
}

uint32_t ir_body_count(const ir_body* b, ir_opcode op) {
  uint32_t c = 0;
  if (!ir_body_ok(b)) return 0;
  for (uint32_t i = 0; i < b->n; i++) c += b->ops[i].opcode == op;
  return c;
}

static const char* const opcode_names[IR_OPCODE_COUNT] = {
    [IR_LOAD] = "load", [IR_CONST] = "const", [IR_INDEX_EXPR] = "index_expr",
    [IR_RAND] = "rand", [IR_RANDN] = "randn", [IR_NEG] = "neg", [IR_ABS] = "abs",
    [IR_EXP] = "exp", [IR_EXP2] = "exp2", [IR_EXPM1] = "expm1", [IR_LOG] = "log",
    [IR_LOG2] = "log2", [IR_LOG1P] = "log1p", [IR_SQRT] = "sqrt", [IR_RSQRT] = "rsqrt",
    [IR_SIN] = "sin", [IR_COS] = "cos", [IR_TAN] = "tan", [IR_TANH] = "tanh",
    [IR_SIGMOID] = "sigmoid", [IR_RELU] = "relu", [IR_ERF] = "erf", [IR_FLOOR] = "floor",
    [IR_CEIL] = "ceil", [IR_ROUND] = "round", [IR_TRUNC] = "trunc",
    [IR_RECIPROCAL] = "reciprocal", [IR_SIGN] = "sign", [IR_NOT] = "not", [IR_ISNAN] = "isnan",
    [IR_ISINF] = "isinf", [IR_BNOT] = "bitwise_not", [IR_ADD] = "add", [IR_SUB] = "sub",
    [IR_MUL] = "mul", [IR_DIV] = "div", [IR_FLOORDIV] = "floordiv", [IR_MOD] = "mod",
    [IR_POW] = "pow", [IR_MAX] = "max", [IR_MIN] = "min", [IR_ATAN2] = "atan2", [IR_EQ] = "eq",
    [IR_NE] = "ne", [IR_LT] = "lt", [IR_LE] = "le", [IR_GT] = "gt", [IR_GE] = "ge",
    [IR_AND] = "and", [IR_OR] = "or", [IR_XOR] = "xor", [IR_BAND] = "bitwise_and",
    [IR_BOR] = "bitwise_or", [IR_BXOR] = "bitwise_xor", [IR_WHERE] = "where",
    [IR_TO_DTYPE] = "to_dtype", [IR_INDIRECT] = "indirect", [IR_REDUCE] = "reduce",
    [IR_STORE] = "store",
};

const char* ir_opcode_name(ir_opcode op) {
  return (unsigned)op < IR_OPCODE_COUNT && opcode_names[op] ? opcode_names[op] : "?";
}
