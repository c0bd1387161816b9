/* ops_reduce.c - op table of the reduce family (placeholder until filled). */
#include "op.h"

const op_def ptc_ops_reduce[] = {{NULL, 0, 0, 0, NULL, NULL}};
const size_t ptc_ops_reduce_count = 0;
