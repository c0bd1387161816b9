/* rg_interp.h - runs a random graph through the IR interpreter for the ir
 * test programs (test_ir_random, test_rg_views): lower with given options,
 * interpret into result tensors the caller allocated. */
#ifndef PTC_TESTS_IR_RG_INTERP_H
#define PTC_TESTS_IR_RG_INTERP_H

#include "lib/ir/ir.h"
#include "tests/randgraph.h"

/* Lowers g with options `o` and interprets it into the tensors of `got`
 * (allocated by the caller with the output shapes; filled with 0xA5 bytes
 * first, so an element the program never writes shows). Errors: those of
 * binding, lowering and interpreting; INTERNAL past 64 size symbols or
 * RG_MAX_OUTPUTS outputs. */
ptc_status rg_interpret(const ptc_graph* g, const ir_lower_options* o, const rg_inputs* in,
                        const ptc_results* got);

#endif
