/* node.c - ptc_graph_add_node: arity and id checks, attribute schema
 * validation and storage, running the op's meta function, and recording the
 * node and its output values. */
#include "op.h"

#include <stdlib.h>
#include <string.h>

static const char* attr_type_name(int32_t t) {
  static const char* const n[] = {"int", "float", "bool", "ints", "floats", "string", "dtype", "sym"};
  return t >= 0 && t <= PTC_ATTR_SYM ? n[t] : "unknown";
}

static bool type_accepts(int32_t want, int32_t got) {
  if (want == got) return true;
  if (want == PTC_ATTR_INTS && (got == PTC_ATTR_INT || got == PTC_ATTR_SYM)) return true;
  if (want == PTC_ATTR_FLOAT && (got == PTC_ATTR_INT || got == PTC_ATTR_BOOL)) return true;
  if (want == PTC_ATTR_SYM && got == PTC_ATTR_INT) return true;
  if (want == PTC_ATTR_FLOATS && (got == PTC_ATTR_INTS)) return true;
  return false;
}

static int cmp_attr(const void* a, const void* b) {
  return strcmp(((const gattr*)a)->name, ((const gattr*)b)->name);
}

/* Converts one public attribute into its stored form (arena-owned). */
static ptc_status store_attr(ptc_graph* g, const char* opname, const op_attr_spec* spec,
                             const ptc_attr* a, gattr* o) {
  o->name = ptc_arena_strdup(&g->arena, a->name);
  if (!o->name) return ptc_status_oom();
  o->type = a->type;
  switch (a->type) {
    case PTC_ATTR_INT:
    case PTC_ATTR_BOOL:
      o->i = a->i;
      o->f = (double)a->i;
      if (spec->type == PTC_ATTR_INTS || spec->type == PTC_ATTR_SYM) {
        o->type = spec->type;
        o->sym = sym_const(g->env, a->i);
        o->count = 1;
        o->exprs = ptc_arena_alloc(&g->arena, sizeof *o->exprs);
        if (!o->sym || !o->exprs) return ptc_status_oom();
        o->exprs[0] = o->sym;
        if (spec->type == PTC_ATTR_SYM) o->type = PTC_ATTR_INT; /* keep plain int */
      }
      break;
    case PTC_ATTR_FLOAT: o->f = a->f; break;
    case PTC_ATTR_DTYPE:
      if (!ptc_dtype_valid((int32_t)a->i))
        return PTC_ERR(INVALID_ARGUMENT, "%s: attribute '%s': invalid dtype %lld", opname, a->name,
                       (long long)a->i);
      o->i = a->i;
      break;
    case PTC_ATTR_STRING:
      if (!a->s) return PTC_ERR(INVALID_ARGUMENT, "%s: attribute '%s': NULL string", opname, a->name);
      o->s = ptc_arena_strdup(&g->arena, a->s);
      if (!o->s) return ptc_status_oom();
      break;
    case PTC_ATTR_SYM:
      o->sym = graph_sym_expr(g, a->sym);
      if (!o->sym)
        return PTC_ERR(INVALID_ARGUMENT, "%s: attribute '%s': unknown symbol id %u", opname,
                       a->name, a->sym);
      if (spec->type == PTC_ATTR_INTS) {
        o->type = PTC_ATTR_INTS;
        o->count = 1;
        o->exprs = ptc_arena_alloc(&g->arena, sizeof *o->exprs);
        if (!o->exprs) return ptc_status_oom();
        o->exprs[0] = o->sym;
      }
      break;
    case PTC_ATTR_INTS:
      if (a->count > (1u << 20))
        return PTC_ERR(INVALID_ARGUMENT, "%s: attribute '%s': %zu elements is too many", opname,
                       a->name, a->count);
      if (a->count && !a->ints && !a->syms)
        return PTC_ERR(INVALID_ARGUMENT, "%s: attribute '%s': NULL list", opname, a->name);
      o->count = a->count;
      if (spec->type == PTC_ATTR_FLOATS) { /* ints given for a float list */
        double* f = ptc_arena_alloc(&g->arena, (a->count + 1) * sizeof *f);
        if (!f) return ptc_status_oom();
        for (size_t i = 0; i < a->count; i++) f[i] = a->ints ? (double)a->ints[i] : 0;
        o->type = PTC_ATTR_FLOATS;
        o->floats = f;
        break;
      }
      o->exprs = ptc_arena_alloc(&g->arena, (a->count + 1) * sizeof *o->exprs);
      if (!o->exprs) return ptc_status_oom();
      for (size_t i = 0; i < a->count; i++) {
        if (a->syms && a->syms[i]) {
          o->exprs[i] = graph_sym_expr(g, a->syms[i]);
          if (!o->exprs[i])
            return PTC_ERR(INVALID_ARGUMENT, "%s: attribute '%s': element %zu: unknown symbol id %u",
                           opname, a->name, i, a->syms[i]);
        } else {
          o->exprs[i] = sym_const(g->env, a->ints ? a->ints[i] : 0);
          if (!o->exprs[i]) return ptc_status_oom();
        }
      }
      break;
    case PTC_ATTR_FLOATS:
      if (a->count > (1u << 20))
        return PTC_ERR(INVALID_ARGUMENT, "%s: attribute '%s': too many elements", opname, a->name);
      if (a->count && !a->floats)
        return PTC_ERR(INVALID_ARGUMENT, "%s: attribute '%s': NULL list", opname, a->name);
      o->count = a->count;
      o->floats = ptc_arena_memdup(&g->arena, a->floats, a->count * sizeof(double));
      if (!o->floats) return ptc_status_oom();
      break;
    default: break;
  }
  return PTC_OK;
}

static ptc_status build_attrs(ptc_graph* g, const op_def* op, const ptc_attr* attrs,
                              size_t n_attrs, gattrs* out) {
  if (n_attrs && !attrs) return PTC_ERR(INVALID_ARGUMENT, "%s: attrs is NULL", op->name);
  if (n_attrs > 256) return PTC_ERR(INVALID_ARGUMENT, "%s: too many attributes", op->name);
  gattr* st = ptc_arena_alloc(&g->arena, (n_attrs + 1) * sizeof *st);
  if (!st) return ptc_status_oom();
  for (size_t i = 0; i < n_attrs; i++) {
    const ptc_attr* a = &attrs[i];
    if (!a->name) return PTC_ERR(INVALID_ARGUMENT, "%s: attribute %zu has no name", op->name, i);
    const op_attr_spec* spec = NULL;
    for (const op_attr_spec* s = op->attrs; s && s->name; s++)
      if (strcmp(s->name, a->name) == 0) spec = s;
    if (!spec) {
      ptc_strbuf sb;
      ptc_sb_init(&sb);
      for (const op_attr_spec* s = op->attrs; s && s->name; s++)
        ptc_sb_printf(&sb, "%s%s", sb.len ? ", " : "", s->name);
      ptc_status e = PTC_ERR(INVALID_ARGUMENT, "%s: unknown attribute '%s' (expected: %s)",
                             op->name, a->name, sb.len ? sb.data : "none");
      ptc_sb_free(&sb);
      return e;
    }
    for (size_t j = 0; j < i; j++)
      if (strcmp(attrs[j].name, a->name) == 0)
        return PTC_ERR(INVALID_ARGUMENT, "%s: attribute '%s' given twice", op->name, a->name);
    if (!type_accepts(spec->type, a->type))
      return PTC_ERR(INVALID_ARGUMENT, "%s: attribute '%s': expected %s, got %s", op->name,
                     a->name, attr_type_name(spec->type), attr_type_name(a->type));
    PTC_TRY(store_attr(g, op->name, spec, a, &st[i]));
  }
  for (const op_attr_spec* s = op->attrs; s && s->name; s++) {
    if (!s->required) continue;
    bool found = false;
    for (size_t i = 0; i < n_attrs; i++) found |= strcmp(attrs[i].name, s->name) == 0;
    if (!found)
      return PTC_ERR(INVALID_ARGUMENT, "%s: missing required attribute '%s' (%s)", op->name,
                     s->name, attr_type_name(s->type));
  }
  qsort(st, n_attrs, sizeof *st, cmp_attr);
  out->n = n_attrs;
  out->a = st;
  return PTC_OK;
}

static ptc_status check_outputs(ptc_graph* g, const meta_ctx* m) {
  for (size_t o = 0; o < m->n_out; o++) {
    const meta_out* mo = &m->out[o];
    if (!ptc_dtype_valid(mo->dtype) || mo->rank > PTC_MAX_RANK)
      return PTC_ERR(INTERNAL, "%s: meta produced an invalid output %zu", m->op->name, o);
    int64_t numel = 1;
    for (uint32_t d = 0; d < mo->rank; d++) {
      int64_t c;
      if (!mo->shape[d]) return ptc_status_oom();
      if (!sym_is_const(mo->shape[d], &c)) {
        int64_t lo, hi;
        sym_bounds(g->env, mo->shape[d], &lo, &hi);
        if (hi < 0)
          return PTC_ERR(INVALID_ARGUMENT, "%s: output %zu dim %u is always negative", m->op->name,
                         o, d);
        continue;
      }
      if (c < 0)
        return PTC_ERR(INVALID_ARGUMENT, "%s: output %zu dim %u would be negative (%lld)",
                       m->op->name, o, d, (long long)c);
      if (!ptc_mul_ok(numel, c, &numel) ||
          !ptc_mul_ok(numel, (int64_t)ptc_dtype_size(mo->dtype), &(int64_t){0}))
        return PTC_ERR(INVALID_ARGUMENT, "%s: output %zu: the number of elements overflows",
                       m->op->name, o);
    }
  }
  return PTC_OK;
}

ptc_status ptc_graph_add_node(ptc_graph* g, const char* opname, const ptc_value* inputs,
                              size_t n_inputs, const ptc_attr* attrs, size_t n_attrs,
                              ptc_value* outputs, size_t max_outputs, size_t* n_outputs) {
  if (!g || !opname) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_add_node: NULL argument");
  if (max_outputs && !outputs)
    return PTC_ERR(INVALID_ARGUMENT, "%s: outputs is NULL with max_outputs %zu", opname,
                   max_outputs);
  const op_def* op = graph_find_op(g, opname);
  if (!op) return PTC_ERR(NOT_FOUND, "unknown op '%s'", opname);
  if ((int64_t)n_inputs < op->min_in || (op->max_in >= 0 && (int64_t)n_inputs > op->max_in)) {
    if (op->max_in < 0)
      return PTC_ERR(INVALID_ARGUMENT, "%s: expected at least %d inputs, got %zu", op->name,
                     op->min_in, n_inputs);
    if (op->min_in == op->max_in)
      return PTC_ERR(INVALID_ARGUMENT, "%s: expected %d inputs, got %zu", op->name, op->min_in,
                     n_inputs);
    return PTC_ERR(INVALID_ARGUMENT, "%s: expected %d to %d inputs, got %zu", op->name,
                   op->min_in, op->max_in, n_inputs);
  }
  if (n_inputs && !inputs) return PTC_ERR(INVALID_ARGUMENT, "%s: inputs is NULL", op->name);
  if (n_inputs > 4096) return PTC_ERR(INVALID_ARGUMENT, "%s: too many inputs", op->name);

  meta_ctx* m = calloc(1, sizeof *m);
  meta_tensor* mt = calloc(n_inputs + 1, sizeof *mt);
  const meta_tensor** mp = calloc(n_inputs + 1, sizeof *mp);
  ptc_status st = PTC_OK;
  size_t guards_before = sym_num_guards(g->env);
  if (!m || !mt || !mp) {
    st = ptc_status_oom();
    goto done;
  }
  for (size_t i = 0; i < n_inputs; i++) {
    if (inputs[i] == PTC_VALUE_NONE) continue;
    if (inputs[i] >= g->values.len) {
      st = PTC_ERR(INVALID_ARGUMENT, "%s: input %zu: unknown value id %u", op->name, i, inputs[i]);
      goto done;
    }
    const gvalue* v = graph_value(g, inputs[i]);
    mt[i].dtype = v->dtype;
    mt[i].rank = v->rank;
    mt[i].shape = v->shape;
    mt[i].strides = v->strides;
    mt[i].is_constant = v->kind == PTC_VALUE_CONSTANT;
    mt[i].const_data = v->kind == PTC_VALUE_CONSTANT ? v->data : NULL;
    mp[i] = &mt[i];
  }
  gattrs ga;
  st = build_attrs(g, op, attrs, n_attrs, &ga);
  if (st) goto done;
  m->op = op;
  m->env = g->env;
  m->arena = &g->arena;
  m->n_in = n_inputs;
  m->in = mp;
  m->attrs = &ga;
  guards_before = sym_num_guards(g->env);
  st = op->meta(m);
  if (st) goto done;
  st = check_outputs(g, m);
  if (st) goto done;
  if (n_outputs) *n_outputs = m->n_out;
  if (m->n_out > max_outputs) {
    st = PTC_ERR(OUT_OF_RANGE, "%s: produces %zu outputs but max_outputs is %zu", op->name,
                 m->n_out, max_outputs);
    goto done;
  }
  /* commit: values, then the node */
  size_t first_value = g->values.len;
  ptc_value* outs = ptc_arena_alloc(&g->arena, (m->n_out + 1) * sizeof *outs);
  ptc_value* ins = ptc_arena_memdup(&g->arena, inputs, n_inputs * sizeof *inputs);
  char nm[64];
  snprintf(nm, sizeof nm, "%s_%zu", op->name, g->nodes.len);
  const char* node_name = ptc_arena_strdup(&g->arena, nm);
  if (!outs || !ins || !node_name || !ptc_vec_reserve(&g->nodes, g->nodes.len + 1)) {
    st = ptc_status_oom();
    goto done;
  }
  for (size_t o = 0; o < m->n_out; o++) {
    char vn[100];
    if (m->n_out == 1)
      snprintf(vn, sizeof vn, "%s", nm);
    else
      snprintf(vn, sizeof vn, "%s.%zu", nm, o);
    st = graph_push_value(g, PTC_VALUE_NODE, m->out[o].dtype, m->out[o].rank,
                          (const sym_expr* const*)m->out[o].shape,
                          (const sym_expr* const*)m->out[o].strides, vn, &outs[o]);
    if (st) {
      g->values.len = first_value;
      goto done;
    }
    gvalue* gv = graph_value(g, outs[o]);
    gv->node = (uint32_t)g->nodes.len;
    gv->out_index = (uint32_t)o;
  }
  gnode nd;
  memset(&nd, 0, sizeof nd);
  nd.op = op;
  nd.n_in = (uint32_t)n_inputs;
  nd.in = ins;
  nd.attrs = ga;
  nd.n_out = (uint32_t)m->n_out;
  nd.out = outs;
  nd.name = node_name;
  ptc_vec_push(&g->nodes, &nd);
  for (size_t o = 0; o < m->n_out; o++) outputs[o] = outs[o];
done:
  if (st) sym_truncate_guards(g->env, guards_before); /* failed: leave no guards */
  free(m);
  free(mt);
  free(mp);
  return st;
}
