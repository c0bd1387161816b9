/* ref_reduce.c - reference kernels of the reduce family (placeholder until filled). */
#include "ref.h"

const ref_kernel_entry ref_kernels_reduce[] = {{NULL, NULL}};
const size_t ref_kernels_reduce_count = 0;
