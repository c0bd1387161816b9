/* ops_elementwise.c - op table of the elementwise family (placeholder until filled). */
#include "op.h"

const op_def ptc_ops_elementwise[] = {{NULL, 0, 0, 0, NULL, NULL}};
const size_t ptc_ops_elementwise_count = 0;
