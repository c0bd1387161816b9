/* cuda_launch.c - how generated and attention kernels are launched. On
 * sm_90+ they go through cuLaunchKernelEx with programmatic stream
 * serialization (programmatic dependent launch): the driver may start a
 * kernel before the previous kernel on the stream has fully ended, which
 * shortens the gap between back-to-back kernels (H100, vs_torch --quick:
 * f32 row sum 86.9 -> 85.4 us, bf16 softmax 47.4 -> 45.7; bench/
 * pdl_probe.cu shows up to 1.7 us a kernel). It is safe because each of
 * these kernels starts with ptc_pdl_enter() (cuda_prelude.cuh), whose
 * griddepcontrol.wait holds it until the kernels before it have ended and
 * their writes are visible; the other hand-written kernels (GEMM,
 * convolution, welford) lack that wait and keep plain launches.
 * PTC_CUDA_PDL=0 turns it off. */
#include "cuda_rt.h"

#include <string.h>

bool cuda_pdl_wanted(int cc_major, bool have_launch_ex, const char* env) {
  if (env && strcmp(env, "0") == 0) return false;
  return cc_major >= 9 && have_launch_ex;
}

bool cuda_pdl_capture_ok(int driver_version) { return driver_version >= 12030; }

cu_result cuda_launch_pdl(const cuda_device* d, cu_function fn, unsigned gx, unsigned gy,
                          unsigned bx, unsigned by, unsigned shmem, cu_stream s, void** params) {
  const cu_api* cu = &cuda_libs_get()->cu;
  bool pdl = d && d->pdl;
  int capturing = CU_CAPTURE_STATUS_NONE;
  if (pdl && !d->pdl_capture && cu->StreamIsCapturing &&
      cu->StreamIsCapturing(s, &capturing) == CU_SUCCESS && capturing != CU_CAPTURE_STATUS_NONE)
    pdl = false;
  if (!pdl) return cu->LaunchKernel(fn, gx, gy, 1, bx, by, 1, shmem, s, params, NULL);
  cu_launch_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.id = CU_LAUNCH_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmatic_serialization = 1;
  cu_launch_config cfg = {.grid_x = gx, .grid_y = gy, .grid_z = 1, .block_x = bx, .block_y = by,
                          .block_z = 1, .shared_bytes = shmem, .stream = s, .attrs = &attr,
                          .n_attrs = 1};
  cu_result r = cu->LaunchKernelEx(&cfg, fn, params, NULL);
  if (r == CU_ERROR_NOT_SUPPORTED) /* the attribute refused here: launch plainly */
    r = cu->LaunchKernel(fn, gx, gy, 1, bx, by, 1, shmem, s, params, NULL);
  return r;
}
