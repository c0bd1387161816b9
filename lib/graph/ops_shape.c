/* ops_shape.c - op table of the shape family (placeholder until filled). */
#include "op.h"

const op_def ptc_ops_shape[] = {{NULL, 0, 0, 0, NULL, NULL}};
const size_t ptc_ops_shape_count = 0;
