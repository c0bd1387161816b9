#!/usr/bin/env bash
# conv_igemm_gpu.sh - one GPU-machine call for the implicit-GEMM convolution
# work: after `scripts/gpu-check.sh --src TAR --build` (build in
# /tmp/ptc-gpu-build, tree in /tmp/ptc-gpu-src), runs test_cuda_conv (GPU
# half) and its --bench (resnet18 b32 convolutions, bf16 and TF32) with the
# default kernels and with each PTC_* setting given as an argument
# (e.g. PTC_CUDA_CONV_DEFER=0), then, with --vs, bench/vs_torch.py on
# resnet18 for the dtypes listed (float32,bfloat16; eager, inductor,
# ptc-backend), and with --vs-env VAR=VALUE once more per dtype for
# ptc-backend alone with that setting. Logs go to $OUT (at most 5 files:
# test.txt, bench.txt, vs.txt).
#
#   bash bench/conv_igemm_gpu.sh [--vs DTYPES] [--vs-env VAR=VALUE] [VAR=VALUE ...]
set -uo pipefail
B=${BUILD:-/tmp/ptc-gpu-build}
O=${OUT:-/tmp/conv-igemm-logs}
mkdir -p "$O"
VS=
VSENV=
if [ "${1:-}" = "--vs" ]; then VS=$2; shift 2; fi
if [ "${1:-}" = "--vs-env" ]; then VSENV=$2; shift 2; fi
eval "$(bash scripts/device-deps.sh env)"
cd /tmp/ptc-gpu-src || exit 1
export PTC_CACHE_DIR=${PTC_CACHE_DIR:-/tmp/ptc-gpu-cache}
t0=$(date +%s)
"$B/tests/cuda/test_cuda_conv" >"$O/test.txt" 2>&1
echo "== test_cuda_conv: rc $? ($(( $(date +%s) - t0 )) s)"; grep -E "FAIL|passed" "$O/test.txt" | head -20
{
  echo "#### default"
  "$B/tests/cuda/test_cuda_conv" --bench
  for v in "$@"; do
    echo "#### $v"
    env "$v" "$B/tests/cuda/test_cuda_conv" --bench
  done
} >"$O/bench.txt" 2>&1
echo "== bench ($(( $(date +%s) - t0 )) s)"; grep -E "^####|sum over" "$O/bench.txt"
if [ -n "$VS" ]; then
  export PTC_PYTHONPATH=$B/python
  for dt in ${VS//,/ }; do
    /opt/torch/.venv/bin/python3 bench/vs_torch.py --device cuda --dtype "$dt" --only resnet18 \
      --systems eager,inductor,ptc-backend 2>&1 | tail -n 12
    if [ -n "$VSENV" ]; then
      echo "#### $dt with $VSENV (ptc-backend)"
      env "$VSENV" /opt/torch/.venv/bin/python3 bench/vs_torch.py --device cuda --dtype "$dt" \
        --only resnet18 --systems ptc-backend 2>&1 | tail -n 9
    fi
  done >"$O/vs.txt" 2>&1
  echo "== vs_torch ($(( $(date +%s) - t0 )) s)"; cat "$O/vs.txt"
fi
