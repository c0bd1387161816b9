#!/usr/bin/env bash
# row_gap_gpu.sh - one GPU-machine call for the fp32 row-reduction gap
# (session 21: Inductor's fp32 row_sum kernel 83.7 us against ptc's 85.7,
# torch.profiler): after `scripts/gpu-check.sh --src TAR --build` (build in
# /tmp/ptc-gpu-build, tree in /tmp/ptc-gpu-src), runs
#  - bench/knob_sweep.py on float32 row_sum and var_mean with Inductor and
#    the row-kernel knobs that change the grid, the block and the load hint
#    (PTC_CUDA_GRID, PTC_CUDA_ROW_BLOCK, PTC_CUDA_ROW_LD, PTC_CUDA_ROW_UNROLL),
#    interleaved, GPU time by events (ROW_LD=3 is an L2 evict_first policy,
#    like the eviction_policy='evict_first' of Inductor's reduction loads);
#  - with --ncu: Nsight Compute on the row_sum kernels of Inductor
#    (`triton_red_*`, its autotuning launches included: each launch's grid
#    and block say which config it is) and of ptc (`ptc_k*`): speed of
#    light, memory workload, occupancy and launch statistics.
# Extra arguments LABEL:K=V[,K=V...] add knob_sweep variants; ONLY=
# (default row_sum,var_mean) and DTYPE= (default float32) pick the sweep's
# workloads and dtype, BUILTIN=0 leaves out the built-in variants but base.
# Logs go to $OUT (sweep.txt, ncu.txt). Time limits: T_SWEEP (default
# 240 s), T_NCU (200 s).
#
#   bash bench/row_gap_gpu.sh [--ncu] [LABEL:K=V,... ...]
set -uo pipefail
B=${BUILD:-/tmp/ptc-gpu-build}
O=${OUT:-/tmp/row-gap-logs}
mkdir -p "$O"
NCU=0
if [ "${1:-}" = --ncu ]; then NCU=1; shift; fi
eval "$(bash scripts/device-deps.sh env)"
cd /tmp/ptc-gpu-src || { echo "row_gap_gpu: no /tmp/ptc-gpu-src (run gpu-check.sh --build first)"; exit 1; }
export PTC_CACHE_DIR=${PTC_CACHE_DIR:-/tmp/ptc-gpu-cache}
export PTC_PYTHONPATH=$B/python
PYT=${PY:-/opt/torch/.venv/bin/python3}
t0=$(date +%s)
el() { echo "$(( $(date +%s) - t0 )) s"; }

vars=(--var base:)
[ "${BUILTIN:-1}" = 0 ] || vars+=(--var g8:PTC_CUDA_GRID=8 --var g64:PTC_CUDA_GRID=64
      --var b512:PTC_CUDA_ROW_BLOCK=512 --var ld0:PTC_CUDA_ROW_LD=0
      --var ld1:PTC_CUDA_ROW_LD=1 --var ld3:PTC_CUDA_ROW_LD=3
      --var ld4:PTC_CUDA_ROW_LD=4 --var u2:PTC_CUDA_ROW_UNROLL=2)
for v in "$@"; do vars+=(--var "$v"); done
timeout "${T_SWEEP:-240}" "$PYT" bench/knob_sweep.py --only "${ONLY:-row_sum,var_mean}" --dtype "${DTYPE:-float32}" \
  --inductor --rounds 11 --calls 40 "${vars[@]}" >"$O/sweep.txt" 2>&1
echo "== sweep rc $? ($(el))"
grep -E "^==|: " "$O/sweep.txt" | grep -v Warning | head -120

if [ "$NCU" = 1 ]; then
  NCUB=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
  if [ -z "$NCUB" ]; then
    echo "== ncu: not found"
  else
    timeout "${T_NCU:-200}" "$NCUB" -k 'regex:triton_red|ptc_k' -c 12 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
      --section LaunchStats \
      "$PYT" bench/knob_sweep.py --only row_sum --dtype float32 --inductor --rounds 1 \
      --calls 1 --var base: >"$O/ncu.txt" 2>&1
    echo "== ncu rc $? ($(el))"
    grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|Grid Size|Block Size|Achieved Occupancy|Registers Per" \
      "$O/ncu.txt" | head -120
  fi
fi
