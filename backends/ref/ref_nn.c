/* ref_nn.c - reference kernels of the nn family (placeholder until filled). */
#include "ref.h"

const ref_kernel_entry ref_kernels_nn[] = {{NULL, NULL}};
const size_t ref_kernels_nn_count = 0;
