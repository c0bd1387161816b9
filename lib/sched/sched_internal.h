/* sched_internal.h - private state shared by the scheduler's sources:
 * per-node dependencies, the buffer -> writer/readers tables, the fusion
 * groups (kernels being formed), loop-variable classes and the renaming
 * x_{n+k} -> r_k of inner pointwise nodes. Not used outside lib/sched. */
#ifndef PTC_LIB_SCHED_INTERNAL_H
#define PTC_LIB_SCHED_INTERNAL_H

#include "sched.h"

/* One read or write. index NULL: the whole buffer or an unknown element
 * (extern calls, loads through an IR_INDIRECT symbol); never matches. */
typedef struct sdep {
  int32_t buf;
  const sym_expr* index;
} sdep;

typedef struct sdeps {
  sdep* reads;
  uint32_t n_reads;
  sdep* writes;
  uint32_t n_writes;
} sdeps;

/* A kernel being formed. Members sorted by node index (program order, so
 * producers come before consumers). */
typedef struct sgroup {
  uint32_t* nodes;
  uint8_t* inner; /* per member: inner pointwise node */
  uint32_t n, cap;
  uint32_t n_ranges, n_rranges;
  const sym_expr* const* ranges; /* borrowed from a member node */
  const sym_expr* const* rranges;
  bool alive, is_extern, is_red;
  uint32_t first, last; /* smallest / largest member node index */
  uint32_t stamp;       /* new value on every change */
} sgroup;

/* Class of an env symbol. */
enum { SVAR_OTHER = 0, SVAR_X, SVAR_R, SVAR_INDIRECT };

typedef struct sched_ctx {
  const ir_program* p;
  sym_env* env;
  sched_options opt;
  size_t n_nodes, n_bufs, n_vars;
  sdeps* deps;        /* per node */
  int32_t* writer;    /* per buffer: writing node or -1 */
  uint32_t* rd_start; /* readers of b: rd_node[rd_start[b] .. rd_start[b+1]) */
  uint32_t* rd_node;  /*   ascending node indices, unique */
  uint8_t* is_output; /* per buffer: a graph output */
  uint8_t* var_class; /* per env symbol: SVAR_* */
  const sym_expr** rename[PTC_MAX_RANK + 1]; /* lazily built, n_vars entries */
  sgroup* groups;                            /* initially one per node, group i = node i */
  uint32_t* grp_of;                          /* per node */
  uint32_t next_stamp;
  uint32_t* gmark; /* scratch per group */
  uint32_t* bmark; /* scratch per buffer */
  uint32_t epoch;
  uint32_t* stack; /* scratch, n_nodes entries */
  uint32_t* topo;  /* per live group: position in a topological order */
  uint32_t* order; /* position -> group (UINT32_MAX: empty), kept by merges */
  bool oom;        /* sticky: an allocation failed */
  ptc_strbuf* log;
} sched_ctx;

/* ---- deps.c -------------------------------------------------------------- */
/** Reads/writes of node i (deduplicated). */
ptc_status sdeps_extract(const ir_program* p, size_t i, sdeps* out);
void sdeps_free(sdeps* d);
/** Fills c->deps, writer, readers and is_output; validates buffer ids and
 * the program order (a node reads only buffers written before it). */
ptc_status sched_build_deps(sched_ctx* c);
/** Write index of buffer b by its writer node (NULL if whole/unknown). */
const sym_expr* sched_write_index(const sched_ctx* c, int32_t b);

/* ---- loops.c ------------------------------------------------------------- */
/** Classifies env symbols (x, r, indirect). */
ptc_status sched_classify_vars(sched_ctx* c);
/** Index e of node member in a kernel with n_outer outer loops: renamed
 * x_{n_outer+k} -> r_k when `inner`. NULL stays NULL; sets c->oom on failure. */
const sym_expr* sched_kidx(sched_ctx* c, bool inner, uint32_t n_outer, const sym_expr* e);
/** True if e mentions a symbol of class cls. */
bool sched_expr_uses(const sched_ctx* c, const sym_expr* e, int cls);
/** Loop structure of merging a and b: result ranges; *inner_a / *inner_b
 * set to 1 when that group's members all become inner nodes. */
typedef struct sshape {
  uint32_t n, m;
  const sym_expr* const* ranges;
  const sym_expr* const* rranges;
  bool red;
  uint8_t inner_a, inner_b;
} sshape;
bool sched_merge_shape(const sgroup* a, const sgroup* b, sshape* out);
/** True when the outer loop nest of a shape has one point (no ranges or all 1). */
bool sched_shape_trivial_outer(const sshape* s);
/** "[s0, 128]" or "[s0] x r[128]". */
void sched_format_loops(const sched_ctx* c, const sgroup* g, ptc_strbuf* sb);
/** Bytes of buffer b at the hints (numel hint, 8192 elements if unbacked). */
int64_t sched_buf_bytes_hint(const sched_ctx* c, int32_t b);
/** Symbolic bytes of buffer b's storage (numel * dtype size); NULL on OOM. */
const sym_expr* sched_buf_bytes(const sched_ctx* c, int32_t b);

/* ---- groups.c ------------------------------------------------------------ */
ptc_status sched_groups_init(sched_ctx* c);
void sched_groups_free(sched_ctx* c);
/** Merges group b into a (members re-sorted); b dies. The merge must be
 * legal (no path between a and b through another group); c->topo stays a
 * topological order of the groups (used to prune cycle checks: a path
 * X -> ... -> Y needs topo[X] < topo[Y]). */
ptc_status sched_group_merge(sched_ctx* c, uint32_t a, uint32_t b, const sshape* s);
/** Pushes the groups reading what group g writes (may repeat) via callback. */
typedef void (*sched_group_fn)(sched_ctx* c, uint32_t g, void* user);
void sched_group_successors(sched_ctx* c, uint32_t g, sched_group_fn fn, void* user);
/** "amax+sum+div" style label of the members' origins. */
void sched_group_label(const sched_ctx* c, const sgroup* g, ptc_strbuf* sb);
/** New epoch for gmark/bmark scratch marks. */
uint32_t sched_next_epoch(sched_ctx* c);

/* ---- fuse_legal.c -------------------------------------------------------- */
typedef struct sscore {
  int kind;         /* 2 vertical, 1 horizontal */
  int64_t bytes;    /* bytes of the buffers both touch */
  int64_t neg_dist; /* -distance in the original node order */
} sscore;
typedef enum sverdict { SV_OK = 0, SV_REFUSE, SV_REFUSE_CYCLE } sverdict;
/** Decides whether groups a and b may fuse. On SV_OK, *shape and *score
 * are filled; otherwise `why` receives the reason. */
sverdict sched_can_fuse(sched_ctx* c, uint32_t a, uint32_t b, sshape* shape, sscore* score,
                        ptc_strbuf* why);

/* ---- fuse.c -------------------------------------------------------------- */
/** Greedy fusion rounds over c->groups; logs every decision. */
ptc_status sched_fuse(sched_ctx* c, sched_plan* s);

/* ---- order.c ------------------------------------------------------------- */
/** Topological order of the live groups (stable w.r.t. node order) into
 * s->kernels. */
ptc_status sched_build_kernels(sched_ctx* c, sched_plan* s);

/* ---- memplan.c ----------------------------------------------------------- */
/** Buffer homes, kernel-local buffers, slots and in-place reuse. */
ptc_status sched_plan_memory(sched_ctx* c, sched_plan* s);

#endif /* PTC_LIB_SCHED_INTERNAL_H */
