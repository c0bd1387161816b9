/* rg_interp.c - a random graph through the IR interpreter (rg_interp.h). */
#include "rg_interp.h"

#include <string.h>

#include "lib/runtime/backend.h"

ptc_status rg_interpret(const ptc_graph* g, const ir_lower_options* o, const rg_inputs* in,
                        const ptc_results* got) {
  size_t n_syms = sym_num_vars(g->env), n_out = ptc_results_count(got);
  int64_t syms[64] = {0};
  ptc_tensor outs[RG_MAX_OUTPUTS];
  if (n_syms > 64 || n_out > RG_MAX_OUTPUTS) return PTC_ERR(INTERNAL, "too many symbols/outputs");
  for (size_t k = 0; k < n_out; k++) {
    outs[k] = *ptc_results_get(got, k);
    size_t bytes = ptc_dtype_size(ptc_dtype_from_dl(outs[k].dtype));
    for (int32_t d = 0; d < outs[k].ndim; d++) bytes *= (size_t)outs[k].shape[d];
    memset(outs[k].data, 0xA5, bytes);
  }
  PTC_TRY(runtime_bind_inputs(g, in->t, in->n, syms, n_syms));
  ir_program* p = NULL;
  PTC_TRY(ir_lower(g->ctx, g, o, &p));
  ptc_status s = ir_interpret(p, in->t, in->n, outs, n_out, syms, n_syms, 0);
  ir_program_destroy(p);
  return s;
}
