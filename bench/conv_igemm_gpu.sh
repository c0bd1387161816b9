#!/usr/bin/env bash
# conv_igemm_gpu.sh - one GPU-machine call for the convolution kernel work
# (the implicit GEMM, cuda_conv_igemm.c, and the Hopper wgmma kernels,
# cuda_conv_wg.c): after `scripts/gpu-check.sh --src TAR --build` (build in
# /tmp/ptc-gpu-build, tree in /tmp/ptc-gpu-src), runs test_cuda_conv (GPU
# half) and its --bench (resnet18 b32 convolutions, bf16 and TF32: implicit
# GEMM, extern policies, wgmma kernels per tile shape) with the default
# kernels and with each PTC_* setting given as an argument, torch's own
# per-layer times of the same 20 convolutions (cuDNN, NCHW, TF32 allowed as
# torch's default, and bf16), then, with --vs, bench/vs_torch.py on
# resnet18 for the dtypes listed (float32,bfloat16; systems --vs-sys,
# default eager,inductor,ptc-backend), and with --vs-env VAR=VALUE[,...]
# once more per dtype and setting for ptc-backend alone with it. Logs go to $OUT
# (at most 5 files: test.txt, bench.txt, cudnn.txt, vs.txt, ncu.txt). Step time limits:
# T_TEST (default 90 s; 0 skips the test), T_BENCH (60 s per bench run).
# With --ncu LAYERS (e.g. l1): first Nsight Compute's full set on the
# convolution kernels (implicit GEMM and wgmma, bf16 and TF32) of those
# layers (test_cuda_conv --profile), then every kernel's duration for all
# layers, into ncu.txt. cudnn.txt has cuDNN NCHW and channels-last.
#
#   bash bench/conv_igemm_gpu.sh [--ncu LAYERS] [--vs DTYPES] [--vs-sys SYSTEMS] [--vs-env VAR=VALUE] [VAR=VALUE ...]
set -uo pipefail
B=${BUILD:-/tmp/ptc-gpu-build}
O=${OUT:-/tmp/conv-igemm-logs}
mkdir -p "$O"
VS=
VSSYS=eager,inductor,ptc-backend
VSENV=
NCU=
if [ "${1:-}" = "--ncu" ]; then NCU=$2; shift 2; fi
if [ "${1:-}" = "--vs" ]; then VS=$2; shift 2; fi
if [ "${1:-}" = "--vs-sys" ]; then VSSYS=$2; shift 2; fi
if [ "${1:-}" = "--vs-env" ]; then VSENV=$2; shift 2; fi
eval "$(bash scripts/device-deps.sh env)"
cd /tmp/ptc-gpu-src || exit 1
export PTC_CACHE_DIR=${PTC_CACHE_DIR:-/tmp/ptc-gpu-cache}
PYT=${PY:-/opt/torch/.venv/bin/python3}
t0=$(date +%s)
if [ -n "$NCU" ]; then
  NCUB=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
  {
    echo "#### ncu: $NCUB"
    PTC_BENCH_LAYERS=$NCU timeout "${T_NCU:-90}" "$NCUB" --clock-control none --set full -c 4 \
      -k 'regex:ptc_cwg_(bf16|tf32)_m|ptc_cig_(bf16|tf32)_[mt]' "$B/tests/cuda/test_cuda_conv" --profile
  } >"$O/ncu.txt" 2>&1
  echo "== ncu ($(( $(date +%s) - t0 )) s)"; grep -E "^####|==ERR|==WARN" "$O/ncu.txt" | head
fi
if [ "${T_TEST:-90}" != 0 ]; then
  timeout "${T_TEST:-90}" stdbuf -oL "$B/tests/cuda/test_cuda_conv" >"$O/test.txt" 2>&1
  echo "== test_cuda_conv: rc $? ($(( $(date +%s) - t0 )) s)"; grep -E "FAIL|passed|wgmma" "$O/test.txt" | head -30
fi
{
  echo "#### default"
  timeout "${T_BENCH:-60}" stdbuf -oL "$B/tests/cuda/test_cuda_conv" --bench
  for v in "$@"; do
    echo "#### $v"
    env "$v" timeout "${T_BENCH:-60}" stdbuf -oL "$B/tests/cuda/test_cuda_conv" --bench
  done
} >"$O/bench.txt" 2>&1
echo "== bench ($(( $(date +%s) - t0 )) s)"; grep -E "^####|sum over|wgmma" "$O/bench.txt"
# torch (cuDNN) on the same 20 convolutions, NCHW and channels-last, no
# bias, ms per call (T_CUDNN=0 skips it)
[ "${T_CUDNN:-60}" != 0 ] && timeout "${T_CUDNN:-60}" "$PYT" - >"$O/cudnn.txt" 2>&1 <<'PYEOF'
import torch, torch.nn.functional as F
torch.backends.cudnn.benchmark = True
L = [("conv1", 3, 224, 64, 7, 2, 3, 1), ("l1", 64, 56, 64, 3, 1, 1, 4), ("l2.0", 64, 56, 128, 3, 2, 1, 1),
     ("l2", 128, 28, 128, 3, 1, 1, 3), ("l2.ds", 64, 56, 128, 1, 2, 0, 1), ("l3.0", 128, 28, 256, 3, 2, 1, 1),
     ("l3", 256, 14, 256, 3, 1, 1, 3), ("l3.ds", 128, 28, 256, 1, 2, 0, 1), ("l4.0", 256, 14, 512, 3, 2, 1, 1),
     ("l4", 512, 7, 512, 3, 1, 1, 3), ("l4.ds", 256, 14, 512, 1, 2, 0, 1)]
for dt, cl in ((torch.float32, False), (torch.bfloat16, False), (torch.float32, True), (torch.bfloat16, True)):
    tot = 0.0
    for name, c, hw, oc, k, s, p, cnt in L:
        x = torch.randn(32, c, hw, hw, device="cuda", dtype=dt)
        w = torch.randn(oc, c, k, k, device="cuda", dtype=dt)
        if cl:
            x = x.to(memory_format=torch.channels_last)
            w = w.to(memory_format=torch.channels_last)
        for _ in range(5): F.conv2d(x, w, stride=s, padding=p)
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        n = 50
        e0.record()
        for _ in range(n): F.conv2d(x, w, stride=s, padding=p)
        e1.record(); torch.cuda.synchronize()
        ms = e0.elapsed_time(e1) / n
        tot += ms * cnt
        lay = "channels_last" if cl else "NCHW"
        print(f"cudnn {dt} {lay} {name:6s} c{c} {hw}x{hw} oc{oc} k{k} s{s}: {ms:.4f} ms")
    print(f"cudnn {dt} {lay} resnet18 b32 convolutions (sum over its 20 layers): {tot:.3f} ms "
          f"(allow_tf32 {torch.backends.cudnn.allow_tf32})")
PYEOF
[ "${T_CUDNN:-60}" != 0 ] && { echo "== cudnn ($(( $(date +%s) - t0 )) s)"; grep "sum over" "$O/cudnn.txt"; tail -n 3 "$O/cudnn.txt" | grep -i error; }
if [ -n "$NCU" ]; then
  {
    echo "#### ncu durations (every layer)"
    timeout 40 "$NCUB" --clock-control none --metrics gpu__time_duration.sum --csv \
      "$B/tests/cuda/test_cuda_conv" --profile
  } >>"$O/ncu.txt" 2>&1
  echo "== ncu durations ($(( $(date +%s) - t0 )) s)"
fi
if [ -n "$VS" ]; then
  export PTC_PYTHONPATH=$B/python
  for dt in ${VS//,/ }; do
    "$PYT" bench/vs_torch.py --device cuda --dtype "$dt" --only resnet18 \
      --systems "$VSSYS" 2>&1 | tail -n 12
    for ve in ${VSENV//,/ }; do
      echo "#### $dt with $ve (ptc-backend)"
      env "$ve" "$PYT" bench/vs_torch.py --device cuda --dtype "$dt" \
        --only resnet18 --systems ptc-backend 2>&1 | tail -n 9
    done
  done >"$O/vs.txt" 2>&1
  echo "== vs_torch ($(( $(date +%s) - t0 )) s)"; cat "$O/vs.txt"
fi
