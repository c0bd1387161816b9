/* replay.h - graph replay: rebuild a graph node by node into a new graph of
 * the same context, through the public ptc_graph_add_* calls, so that every
 * meta function runs again (internal).
 *
 * A replay first re-creates the source graph's size symbols by name, in the
 * same order (so symbol i of the source is symbol i of the destination and
 * sym_import moves expressions across), then the graph inputs in input
 * order, the constants, the nodes in order and the outputs. Hooks let a
 * caller change input dims (graph_make_dynamic), replace a node by other
 * nodes (decompositions) and inspect the graph after each node.
 *
 * Thread-safety: a replay reads its source graph and writes a graph it owns;
 * distinct replays are independent.
 */
#ifndef PTC_LIB_DECOMP_REPLAY_H
#define PTC_LIB_DECOMP_REPLAY_H

#include "../graph/graph.h"
#include "../graph/op.h"

typedef struct replay replay;

typedef struct replay_hooks {
  void* user;
  /** Constants point at the source graph's data instead of copies of the
   * owned ones (the source must outlive the result). */
  bool borrow_constants;
  /** Optional: may rewrite the dims of graph input `input` (destination
   * symbol ids) before it is added. */
  ptc_status (*input_dims)(void* user, replay* r, size_t input, ptc_dim* dims, uint32_t rank);
  /** Optional: called for each source node. Either emits replacement nodes
   * into replay_dst(r), maps every source output with replay_set and sets
   * *handled, or leaves *handled false to have the node copied. */
  ptc_status (*rewrite)(void* user, replay* r, uint32_t node, bool* handled);
  /** Optional: called after source node `node` has been copied or
   * rewritten; its error is returned as is. */
  ptc_status (*after_node)(void* user, replay* r, uint32_t node);
  /** Optional: turns the error `s` of replaying source node `node` (owned;
   * from the building calls or the rewrite hook) into the
   * status to report. Default: "node <name> (<op>): " + message. */
  ptc_status (*node_error)(void* user, replay* r, uint32_t node, ptc_status s);
} replay_hooks;

/** Replays `g` into a new graph (*out, owned by the caller). `hooks` may be
 * NULL (a plain re-validated copy). Errors: those of the building calls and
 * hooks (a node's prefixed with "node <name> (<op>)"), RESOURCE_EXHAUSTED. */
ptc_status replay_run(const ptc_graph* g, const replay_hooks* hooks, ptc_graph** out);

/** The graph being replayed / the graph being built. */
const ptc_graph* replay_src(const replay* r);
ptc_graph* replay_dst(replay* r);
/** Destination value of source value `v` (PTC_VALUE_NONE for NONE or a
 * value not replayed yet). */
ptc_value replay_map(const replay* r, ptc_value v);
/** Maps source value `v` to destination value `to`. */
void replay_set(replay* r, ptc_value v, ptc_value to);
/** Copies source node `node` with its attributes converted to ptc_attr
 * form (symbols re-expressed in the destination) and maps its outputs. */
ptc_status replay_copy_node(replay* r, uint32_t node);

/** Converts stored attributes into public ones for ptc_graph_add_node on
 * `dst` (whose env has the source env's symbols at the same indices).
 * Arrays live in `scratch`; out[n] must have room for a->n entries. */
ptc_status replay_attrs(ptc_graph* dst, const gattrs* a, ptc_arena* scratch, ptc_attr* out);
/** One expression list as (ints, syms) in `dst`: constants go to ints,
 * symbolic elements to syms (graph_sym_id) with their hint in ints. */
ptc_status replay_exprs(ptc_graph* dst, const sym_expr* const* e, size_t n, ptc_arena* scratch,
                        int64_t** ints, ptc_sym** syms);

#endif /* PTC_LIB_DECOMP_REPLAY_H */
