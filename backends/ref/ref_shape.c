/* ref_shape.c - reference kernels of the shape family (placeholder until filled). */
#include "ref.h"

const ref_kernel_entry ref_kernels_shape[] = {{NULL, NULL}};
const size_t ref_kernels_shape_count = 0;
