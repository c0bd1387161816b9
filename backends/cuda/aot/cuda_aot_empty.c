/* cuda_aot_empty.c - the empty table of ahead-of-time cubins
 * (backends/cuda/cuda_aot.h): linked when the meson option aot_kernels is
 * off, and into the generator that builds the real table. */
#include "backends/cuda/cuda_aot.h"

const cuda_aot_entry ptc_cuda_aot_table[1] = {{"", 0, NULL, 0, "", 0}};
const size_t ptc_cuda_aot_count = 0;
const int ptc_cuda_aot_cuda_version = 0;
