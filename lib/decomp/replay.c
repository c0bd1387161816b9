/* replay.c - placeholder: graph_make_dynamic is being written (lib/decomp). */
#include "../graph/graph.h"

ptc_status graph_make_dynamic(const ptc_graph* g, const ptc_dynamic_dim* dims, size_t n,
                              ptc_graph** out) {
  (void)g; (void)dims; (void)n; (void)out;
  return PTC_ERR(UNIMPLEMENTED, "dynamic_dims: not implemented yet");
}
