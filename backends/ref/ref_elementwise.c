/* ref_elementwise.c - reference kernels of the elementwise family (placeholder until filled). */
#include "ref.h"

const ref_kernel_entry ref_kernels_elementwise[] = {{NULL, NULL}};
const size_t ref_kernels_elementwise_count = 0;
