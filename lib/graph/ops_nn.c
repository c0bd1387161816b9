/* ops_nn.c - op table of the nn family (placeholder until filled). */
#include "op.h"

const op_def ptc_ops_nn[] = {{NULL, 0, 0, 0, NULL, NULL}};
const size_t ptc_ops_nn_count = 0;
