/* randgraph.c - the random-graph generator's driver: random numbers, the
 * pool of usable values, inputs and constants, node insertion with the
 * error model, the graph's first inputs and outputs, run sizes and
 * printing. The op families live in randgraph_ops.c. Public API only. */
#include "randgraph_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void rg_options_init(rg_options* o, uint64_t seed) {
  memset(o, 0, sizeof *o);
  o->seed = seed;
  o->min_ops = 2;
  o->max_ops = 8;
  o->dynamic_percent = 25;
  o->lowp_percent = 10;
  o->int_percent = 10;
  o->strided_percent = 10;
  o->view_percent = 18;
  o->max_numel = 6000;
}

/* ---- random numbers: splitmix64 ---------------------------------------------------- */
uint64_t rg_next(rg_gen* G) {
  uint64_t z = (G->rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int64_t rg_int(rg_gen* G, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  return lo + (int64_t)(rg_next(G) % (uint64_t)(hi - lo + 1));
}

bool rg_chance(rg_gen* G, uint32_t pct) { return rg_next(G) % 100 < pct; }

double rg_unit(rg_gen* G) { return (double)(rg_next(G) >> 11) * (1.0 / 9007199254740992.0); }

/* ---- dtypes -------------------------------------------------------------------------- */
bool rg_is_float(int32_t dt) {
  return dt == PTC_F32 || dt == PTC_F64 || dt == PTC_F16 || dt == PTC_BF16;
}

bool rg_is_int(int32_t dt) {
  return dt == PTC_I8 || dt == PTC_I16 || dt == PTC_I32 || dt == PTC_I64 || dt == PTC_U8;
}

static const struct {
  int32_t dtype;
  double roundoff, limit;
} dtype_facts[] = {
    {PTC_F32, 5.96e-8, 1e4},  {PTC_F64, 1.12e-16, 1e6}, {PTC_F16, 4.89e-4, 200},
    {PTC_BF16, 3.91e-3, 200}, {PTC_I32, 0, 1e6},        {PTC_I64, 0, 1e9},
};

double rg_unit_roundoff(int32_t dt) {
  for (size_t i = 0; i < sizeof dtype_facts / sizeof dtype_facts[0]; i++)
    if (dtype_facts[i].dtype == dt) return dtype_facts[i].roundoff;
  return 0;
}

double rg_mag_limit(int32_t dt) {
  for (size_t i = 0; i < sizeof dtype_facts / sizeof dtype_facts[0]; i++)
    if (dtype_facts[i].dtype == dt) return dtype_facts[i].limit;
  return 1e4;
}

/* A value whose magnitude passes this is dropped from the pool (f16 overflows
 * at 65504; ints must not overflow). */
static double hard_limit(int32_t dt) {
  switch (dt) {
    case PTC_F16: return 3e4;
    case PTC_I32: return 1e9;
    case PTC_I64: return 1e17;
    case PTC_F64: return 1e200;
    default: return 1e30;
  }
}

/* ---- shapes ------------------------------------------------------------------------------ */
/* Symbol values of run k: the hint, the smallest size, and a bigger one. */
static int64_t run_size(int64_t hint, uint32_t k) {
  if (k == 0) return hint;
  if (k == 1) return hint == 2 ? 3 : 2;
  return hint + 5;
}

/* Largest growth factor of any symbol over its hint. */
static double sym_growth(const rg_graph* rg) {
  double r = 1;
  for (uint32_t i = 0; i < rg->n_syms; i++) {
    double f = (double)run_size(rg->hints[i], 2) / (double)rg->hints[i];
    if (f > r) r = f;
  }
  return r;
}

int32_t rg_sym_index(const rg_gen* G, ptc_sym s) {
  for (uint32_t i = 0; s && i < G->rg->n_syms; i++)
    if (G->sym_ids[i] == s) return (int32_t)i;
  return -1;
}

int64_t rg_dim_max(const rg_gen* G, const ptc_dim* d) {
  if (!d->sym) return d->value;
  int32_t k = rg_sym_index(G, d->sym);
  if (k >= 0) return run_size(G->rg->hints[k], 2);
  double g = sym_growth(G->rg);
  return (int64_t)ceil((double)d->value * g * g); /* compound: assume degree <= 2 */
}

int64_t rg_numel_max(const rg_gen* G, uint32_t rank, const ptc_dim* dims) {
  int64_t n = 1;
  for (uint32_t i = 0; i < rank; i++) {
    n *= rg_dim_max(G, &dims[i]);
    if (n > ((int64_t)1 << 40)) return (int64_t)1 << 40;
  }
  return n;
}

bool rg_dim_eq(const ptc_dim* a, const ptc_dim* b) {
  if (a->sym || b->sym) return a->sym == b->sym;
  return a->value == b->value;
}

/* ---- pool ---------------------------------------------------------------------------------- */
static bool usable(const rg_val* v) { return !v->is_arg && v->rank <= RG_MAX_RANK; }

int32_t rg_pick(rg_gen* G, rg_filter ok) {
  int32_t cand[RG_MAX_VALS];
  uint32_t n = 0;
  for (uint32_t i = 0; i < G->n_pool; i++)
    if (usable(&G->pool[i]) && (!ok || ok(&G->pool[i]))) cand[n++] = (int32_t)i;
  if (!n) return -1;
  if (n > 3 && rg_chance(G, 75)) return cand[n - 1 - (uint32_t)rg_int(G, 0, 2)];
  return cand[rg_int(G, 0, (int64_t)n - 1)];
}

static double input_mag(int32_t dtype) { return rg_is_float(dtype) ? 1.0 : dtype == PTC_BOOL ? 1 : 8; }

static int32_t push_leaf(rg_gen* G, ptc_value v, int32_t dtype, uint32_t rank,
                         const ptc_dim* dims, double mag) {
  rg_val* p = &G->pool[G->n_pool];
  memset(p, 0, sizeof *p);
  p->v = v;
  p->dtype = dtype;
  p->rank = rank;
  memcpy(p->dims, dims, rank * sizeof *dims);
  p->mag = mag;
  p->lo = dtype == PTC_BOOL ? 0 : -mag;
  p->exact = true;
  p->is_leaf = true;
  p->arg_src = -1;
  return (int32_t)G->n_pool++;
}

int32_t rg_new_input(rg_gen* G, int32_t dtype, uint32_t rank, const ptc_dim* dims) {
  rg_graph* rg = G->rg;
  if (rg->n_inputs >= RG_MAX_INPUTS || G->n_pool >= RG_MAX_VALS || rank > 4) return -1;
  if (rg_numel_max(G, rank, dims) > G->o->max_numel) return -1;
  rg_input* in = &rg->inputs[rg->n_inputs];
  memset(in, 0, sizeof *in);
  in->dtype = dtype;
  in->rank = rank;
  for (uint32_t d = 0; d < rank; d++) {
    in->sym[d] = rg_sym_index(G, dims[d].sym);
    if (dims[d].sym && in->sym[d] < 0) return -1; /* compound expressions are not inputs */
    in->size[d] = dims[d].value;
  }
  in->strided = rank >= 2 && rg_chance(G, G->o->strided_percent);
  char name[16];
  snprintf(name, sizeof name, "x%u", rg->n_inputs);
  ptc_value v;
  ptc_status s = ptc_graph_add_input(G->g, name, dtype, dims, rank, NULL, &v);
  if (s) {
    ptc_status_destroy(s);
    return -1;
  }
  rg->n_inputs++;
  return push_leaf(G, v, dtype, rank, dims, input_mag(dtype));
}

/* Constant payload of n elements of dtype with values in [-scale, scale). */
static void* constant_data(rg_gen* G, int32_t dtype, int64_t n, double scale) {
  size_t es = ptc_dtype_size(dtype);
  unsigned char* p = calloc((size_t)(n ? n : 1), es);
  if (!p) return NULL;
  for (int64_t i = 0; i < n; i++) {
    double v = (rg_unit(G) * 2 - 1) * scale;
    void* e = p + (size_t)i * es;
    switch (dtype) {
      case PTC_F32: *(float*)e = (float)v; break;
      case PTC_F64: *(double*)e = v; break;
      case PTC_I32: *(int32_t*)e = (int32_t)rg_int(G, -8, 8); break;
      case PTC_I64: *(int64_t*)e = rg_int(G, -8, 8); break;
      case PTC_BOOL: *(uint8_t*)e = (uint8_t)(rg_next(G) & 1); break;
      default: free(p); return NULL; /* f16/bf16 constants: use inputs instead */
    }
  }
  return p;
}

int32_t rg_new_constant(rg_gen* G, int32_t dtype, uint32_t rank, const int64_t* shape,
                        double scale) {
  if (G->n_pool >= RG_MAX_VALS || rank > RG_MAX_RANK) return -1;
  int64_t n = 1;
  ptc_dim dims[RG_MAX_RANK];
  for (uint32_t d = 0; d < rank; d++) {
    n *= shape[d];
    dims[d] = (ptc_dim){shape[d], 0, 0};
  }
  if (n > G->o->max_numel) return -1;
  void* data = constant_data(G, dtype, n, scale);
  if (!data) return -1;
  char name[16];
  snprintf(name, sizeof name, "c%u", G->n_const++);
  ptc_value v;
  ptc_status s = ptc_graph_add_constant(G->g, name, dtype, shape, rank, data, PTC_CONSTANT_COPY, &v);
  free(data);
  if (s) {
    ptc_status_destroy(s);
    return -1;
  }
  return push_leaf(G, v, dtype, rank, dims, rg_is_float(dtype) ? scale : input_mag(dtype));
}

uint32_t rg_broadcast_dims(rg_gen* G, const rg_val* v, ptc_dim* out) {
  uint32_t drop = v->rank > 1 && rg_chance(G, 25) ? (uint32_t)rg_int(G, 1, v->rank - 1) : 0;
  uint32_t r = v->rank - drop;
  for (uint32_t i = 0; i < r; i++) {
    const ptc_dim* d = &v->dims[drop + i];
    bool compound = d->sym && rg_sym_index(G, d->sym) < 0;
    out[i] = compound || rg_chance(G, 20) ? (ptc_dim){1, 0, 0} : *d;
  }
  return r;
}

/* ---- nodes ------------------------------------------------------------------------------ */
static void note_op(rg_graph* rg, const char* op) {
  size_t len = strlen(rg->ops);
  if (len + strlen(op) + 2 < sizeof rg->ops)
    snprintf(rg->ops + len, sizeof rg->ops - len, "%s%s", len ? " " : "", op);
  rg->n_ops++;
}

/* Fills pool entry `p` from the graph's metadata of value v and the model. */
static bool fill_val(rg_gen* G, rg_val* p, ptc_value v, const rg_model* m) {
  ptc_value_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ptc_status s = ptc_graph_value_info(G->g, v, &info);
  if (s) {
    ptc_status_destroy(s);
    return false;
  }
  memset(p, 0, sizeof *p);
  p->v = v;
  p->dtype = info.dtype;
  p->rank = info.rank;
  if (info.rank > RG_MAX_RANK) return false;
  memcpy(p->dims, info.shape, info.rank * sizeof *info.shape);
  p->arg_src = -1;
  bool exact_dtype = !rg_is_float(info.dtype);
  p->mag = info.dtype == PTC_BOOL ? 1 : m->mag;
  p->lo = m->lo;
  p->exact = m->exact;
  /* the op's own rounding in the output dtype (exact values never round) */
  p->err = exact_dtype ? 0 : m->exact ? m->err : m->err + rg_unit_roundoff(info.dtype) * p->mag;
  if (!(p->mag <= hard_limit(info.dtype)) || !isfinite(p->err)) return false;
  return true;
}

uint32_t rg_add(rg_gen* G, const char* op, const ptc_value* in, size_t n_in,
                const ptc_attr* attrs, size_t n_attrs, const rg_model* model,
                int32_t* out_idx) {
  ptc_value outs[4];
  size_t n_out = 0;
  ptc_status s = ptc_graph_add_node(G->g, op, in, n_in, attrs, n_attrs, outs, 4, &n_out);
  if (s) {
    ptc_status_destroy(s);
    return 0;
  }
  note_op(G->rg, op);
  for (size_t i = 0; i < n_in; i++)
    for (uint32_t k = 0; k < G->n_pool; k++)
      if (G->pool[k].v == in[i]) G->pool[k].uses++;
  uint32_t added = 0;
  for (size_t i = 0; i < n_out && G->n_pool < RG_MAX_VALS; i++) {
    if (!fill_val(G, &G->pool[G->n_pool], outs[i], model)) continue;
    if (out_idx) out_idx[added] = (int32_t)G->n_pool;
    G->n_pool++;
    added++;
  }
  /* a node whose outputs cannot be used stays in the graph as dead code */
  return added == n_out ? added : 0;
}

int32_t rg_add1(rg_gen* G, const char* op, const ptc_value* in, size_t n_in,
                const ptc_attr* attrs, size_t n_attrs, const rg_model* model) {
  int32_t idx[4] = {-1, -1, -1, -1};
  return rg_add(G, op, in, n_in, attrs, n_attrs, model, idx) == 1 ? idx[0] : -1;
}

/* ---- the graph --------------------------------------------------------------------------- */
static int32_t pick_main_dtype(rg_gen* G) {
  const rg_options* o = G->o;
  uint64_t r = rg_next(G) % 100;
  if (r < o->lowp_percent) return rg_chance(G, 50) ? PTC_F16 : PTC_BF16;
  if (r < o->lowp_percent + o->int_percent) return rg_chance(G, 50) ? PTC_I32 : PTC_I64;
  if (r < o->lowp_percent + o->int_percent + 8) return PTC_F64;
  return PTC_F32;
}

static int64_t pick_size(rg_gen* G) {
  uint64_t r = rg_next(G) % 100;
  if (r < 10) return 1;
  if (r < 60) return rg_int(G, 2, 8);
  if (r < 95) return rg_int(G, 9, 17);
  return rg_int(G, 18, 70);
}

static ptc_status make_symbols(rg_gen* G) {
  rg_graph* rg = G->rg;
  if (!rg_chance(G, G->o->dynamic_percent)) return PTC_OK;
  rg->n_syms = rg_chance(G, 30) ? 2 : 1;
  for (uint32_t i = 0; i < rg->n_syms; i++) {
    ptc_symbol_options so;
    ptc_symbol_options_init(&so);
    so.hint = rg->hints[i] = rg_int(G, 2, 12);
    char name[16];
    snprintf(name, sizeof name, "s%u", i);
    ptc_status s = ptc_graph_add_symbol(G->g, name, &so, &G->sym_ids[i]);
    if (s) return s;
  }
  return PTC_OK;
}

/* The first input: rank 1-4, symbols on some dims; numel within budget. */
static int32_t first_input(rg_gen* G) {
  static const uint32_t rank_pct[] = {15, 50, 80, 100}; /* cumulative for ranks 1..4 */
  uint64_t r = rg_next(G) % 100;
  uint32_t rank = 1;
  while (rank < 4 && r >= rank_pct[rank - 1]) rank++;
  ptc_dim dims[4];
  for (int tries = 0; tries < 50; tries++) {
    for (uint32_t d = 0; d < rank; d++) dims[d] = (ptc_dim){pick_size(G), 0, 0};
    for (uint32_t i = 0; i < G->rg->n_syms && i < rank; i++) {
      uint32_t d = i == 0 ? 0 : (uint32_t)rg_int(G, 1, rank - 1);
      dims[d] = (ptc_dim){G->rg->hints[i], G->sym_ids[i], 0};
    }
    if (rg_numel_max(G, rank, dims) <= G->o->max_numel / 2) break;
    if (tries == 49) rank = 1;
  }
  return rg_new_input(G, G->main_dtype, rank, dims);
}

static bool out_candidate(const rg_val* v) { return !v->is_output && v->rank <= RG_MAX_RANK; }
static bool sink(const rg_val* v) { return out_candidate(v) && !v->is_leaf && !v->uses; }

static ptc_status add_output(rg_gen* G, int32_t i) {
  rg_graph* rg = G->rg;
  rg_val* p = &G->pool[i];
  if (rg->n_outputs >= RG_MAX_OUTPUTS || p->is_output) return PTC_OK;
  ptc_status s = ptc_graph_add_output(G->g, p->v);
  if (s) return s;
  p->is_output = true;
  rg_output* o = &rg->outputs[rg->n_outputs++];
  memset(o, 0, sizeof *o);
  o->dtype = p->dtype;
  o->mag = p->mag;
  o->err = p->err;
  o->arg_of = -1;
  return PTC_OK;
}

/* An argmax/argmin output and the values it indexes (also an output). */
static ptc_status add_arg_output(rg_gen* G, int32_t i) {
  rg_graph* rg = G->rg;
  if (rg->n_outputs + 2 > RG_MAX_OUTPUTS) return PTC_OK;
  rg_val* p = &G->pool[i];
  ptc_status s = add_output(G, i);
  if (s) return s;
  uint32_t idx_out = rg->n_outputs - 1;
  rg_val* src = &G->pool[p->arg_src];
  /* the values may already be an output: a second copy is fine */
  src->is_output = false;
  s = add_output(G, p->arg_src);
  if (s) return s;
  rg_output* o = &rg->outputs[idx_out];
  o->arg_of = (int32_t)rg->n_outputs - 1;
  o->arg_dim = p->arg_dim;
  o->arg_keepdim = p->arg_keepdim;
  o->arg_is_max = p->arg_is_max;
  return PTC_OK;
}

/* Every argmax result (with its values), every computed value nothing reads
 * (newest first, so no work is dead), and sometimes a random other one. */
static ptc_status make_outputs(rg_gen* G) {
  for (uint32_t i = 0; i < G->n_pool; i++)
    if (G->pool[i].is_arg) {
      ptc_status s = add_arg_output(G, (int32_t)i);
      if (s) return s;
    }
  for (uint32_t i = G->n_pool; i-- > 0;)
    if (usable(&G->pool[i]) && sink(&G->pool[i])) {
      ptc_status s = add_output(G, (int32_t)i);
      if (s) return s;
    }
  for (uint32_t i = G->n_pool; i-- > 0 && !G->rg->n_outputs;)
    if (usable(&G->pool[i]) && out_candidate(&G->pool[i])) {
      ptc_status s = add_output(G, (int32_t)i);
      if (s) return s;
    }
  uint32_t extra = rg_chance(G, 20) ? 1 : 0;
  for (uint32_t k = 0; k < extra; k++) {
    int32_t i = rg_pick(G, out_candidate);
    if (i < 0) break;
    ptc_status s = add_output(G, i);
    if (s) return s;
  }
  /* nothing fitted any step: the first input is the output */
  return G->rg->n_outputs ? PTC_OK : add_output(G, 0);
}

static ptc_status generate(rg_gen* G) {
  ptc_status s = make_symbols(G);
  if (s) return s;
  G->main_dtype = pick_main_dtype(G);
  if (first_input(G) < 0) {
    ptc_dim d = {4, 0, 0};
    if (rg_new_input(G, G->main_dtype, 1, &d) < 0) return NULL; /* reported below */
  }
  uint32_t steps = (uint32_t)rg_int(G, G->o->min_ops, G->o->max_ops);
  /* whether (and before which step) an extern-view block comes, from the
   * seed alone, so that graphs without one are those of earlier versions */
  uint64_t h = G->o->seed * 0x9E3779B97F4A7C15ull + 0x5851F42D4C957F2Dull;
  h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  uint32_t block_at = h % 100 < G->o->view_percent ? (uint32_t)((h >> 8) % (steps + 1)) : UINT32_MAX;
  for (uint32_t k = 0; k <= steps; k++) {
    if (k == block_at) rg_view_block(G);
    int tries = 0;
    while (k < steps && tries++ < 8 && !rg_step(G)) continue; /* a step that fitted nothing retries */
  }
  return make_outputs(G);
}

ptc_status rg_generate(ptc_context* ctx, const rg_options* o, rg_graph* out) {
  memset(out, 0, sizeof *out);
  out->seed = o->seed;
  static const rg_gen zero;
  rg_gen gen = zero; /* ~25 KiB: fine on the stack */
  rg_gen* G = &gen;
  G->rg = out;
  G->o = o;
  G->rng = o->seed * 0x2545F4914F6CDD1Dull + 12345;
  ptc_status s = ptc_graph_create(ctx, &out->g);
  if (!s) {
    G->g = out->g;
    s = generate(G);
  }
  if (!s && (out->n_inputs == 0 || ptc_graph_num_outputs(out->g) == 0))
    s = ptc_graph_add_output(out->g, PTC_VALUE_NONE); /* INVALID_ARGUMENT: nothing made */
  if (s) rg_graph_free(out);
  return s;
}

void rg_graph_free(rg_graph* rg) {
  if (!rg) return;
  ptc_graph_destroy(rg->g);
  rg->g = NULL;
}

uint32_t rg_num_runs(const rg_graph* rg) { return rg->n_syms ? RG_MAX_RUNS : 1; }

void rg_run_sizes(const rg_graph* rg, uint32_t k, int64_t* sym_values) {
  for (uint32_t i = 0; i < rg->n_syms; i++) sym_values[i] = run_size(rg->hints[i], k);
}

void rg_print(const rg_graph* rg, const int64_t* sym_values, FILE* f) {
  fprintf(f, "seed %llu:", (unsigned long long)rg->seed);
  for (uint32_t i = 0; i < rg->n_syms; i++)
    fprintf(f, " s%u=%lld (hint %lld)", i, (long long)(sym_values ? sym_values[i] : rg->hints[i]),
            (long long)rg->hints[i]);
  fprintf(f, "\n  ops: %s\n", rg->ops);
  for (uint32_t i = 0; i < rg->n_inputs; i++)
    if (rg->inputs[i].strided) fprintf(f, "  input %u is passed with a permuted layout\n", i);
  if (rg->g) {
    ptc_status s = ptc_graph_print(rg->g, f);
    ptc_status_destroy(s);
  }
}
