#!/usr/bin/env bash
# cuda-device-check.sh - builds libptc on the GPU machine and runs the cuda
# suite there in one call, then prints a summary.
#
# Where: the GPU machine reached with the session's device tool (CUDA 13
# toolkit and driver, no libffi-dev / libcjson-dev: those come from
# .devdeps/, see scripts/device-deps.sh; name .devdeps in `carry`). Run from
# the repository root:
#
#   bash scripts/cuda-device-check.sh [--seeds N] [--no-ops] [--threads N] [--probe] [--src TAR]
#
# --src TAR builds and tests the source tree in TAR (a `git archive` tarball,
# .tar or .tar.gz) instead of this checkout: useful when the checkout that
# travels holds other people's unfinished work.
#
# Steps: unpack the build deps, meson setup + ninja (only the library and the
# cuda tests), `nvidia-smi -L`, then
#   1. test_cuda_nvrtc  - every kernel of 50 random graphs compiled for the
#                         device's arch family (sm_80, sm_90) by NVRTC;
#   2. test_cuda_gpu    - API checks (caller stream, device mismatches,
#                         kernel errors), the random-graph differential suite
#                         against the ref backend, and every op case of
#                         tests/data against PyTorch's outputs, on the GPU;
#   3. (--probe) cuda_probe - timings of a few workloads (bandwidth against the
#                         device-to-device copy, matmul TFLOP/s with and
#                         without cuBLASLt, cold compile time, tiny-graph
#                         host time per call).
# Logs go to $OUT (the device tool's output folder) when set, else to the
# build folder. Exit status: 0 when every step passed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SEEDS=300
PROBE=0
SRC_TAR=
THREADS=$(nproc 2>/dev/null || echo 8)
OPS=1
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) SEEDS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --no-ops) OPS=0; shift ;;
    --probe) PROBE=1; shift ;;
    --src) SRC_TAR=$2; shift 2 ;;
    *) echo "usage: $0 [--seeds N] [--threads N] [--no-ops] [--probe] [--src TAR]" >&2; exit 2 ;;
  esac
done
BUILD=${BUILD:-/tmp/ptc-cuda-build}
LOGS=${OUT:-$BUILD/logs}
mkdir -p "$LOGS"
export PTC_CACHE_DIR=${PTC_CACHE_DIR:-/tmp/ptc-cuda-cache}

t0=$(date +%s)
summary=()
status=0
note() { summary+=("$1"); echo "== $1"; }

# ---- build ------------------------------------------------------------------
if [ -d .devdeps ]; then
  eval "$(bash scripts/device-deps.sh env)"
fi
if [ -n "${SRC_TAR:-}" ]; then
  SRC_DIR=/tmp/ptc-src
  rm -rf "$SRC_DIR" && mkdir -p "$SRC_DIR" && tar -xf "$SRC_TAR" -C "$SRC_DIR" ||
    { echo "cuda-device-check: cannot unpack $SRC_TAR"; exit 1; }
  cd "$SRC_DIR"
  note "source: $SRC_TAR"
fi
if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" -Dpython=disabled --buildtype=debugoptimized >"$LOGS/setup.log" 2>&1 ||
    { tail -30 "$LOGS/setup.log"; echo "cuda-device-check: meson setup failed"; exit 1; }
fi
if ! ninja -C "$BUILD" tests/cuda/test_cuda_gpu tests/cuda/test_cuda_nvrtc tests/cuda/cuda_probe \
    >"$LOGS/build.log" 2>&1; then
  grep -E "error|FAILED" "$LOGS/build.log" | head -30
  echo "cuda-device-check: build failed"
  exit 1
fi
note "build: ok ($(( $(date +%s) - t0 )) s)"
nvidia-smi -L 2>/dev/null | head -4

# ---- 1. NVRTC compile-only -----------------------------------------------------
t1=$(date +%s)
"$BUILD/tests/cuda/test_cuda_nvrtc" --seeds 50 >"$LOGS/nvrtc.log" 2>&1
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 77 ] && status=1 && grep -m 20 FAIL "$LOGS/nvrtc.log"
note "test_cuda_nvrtc (rc $rc, $(( $(date +%s) - t1 )) s): $(grep '^test_cuda_nvrtc:' "$LOGS/nvrtc.log")"

# ---- 2. on the GPU -----------------------------------------------------------------
t2=$(date +%s)
cases=()
if [ "$OPS" = 1 ]; then
  for f in elementwise reduce nn shape; do cases+=("tests/data/ops_$f.json"); done
fi
"$BUILD/tests/cuda/test_cuda_gpu" --seeds "$SEEDS" --threads "$THREADS" "${cases[@]}" \
  >"$LOGS/gpu.log" 2>&1
rc=$?
[ $rc -ne 0 ] && status=1
grep -m 40 -E "^FAIL|^  \(" "$LOGS/gpu.log"
note "test_cuda_gpu (rc $rc, $(( $(date +%s) - t2 )) s): $(grep -E '^device:' "$LOGS/gpu.log")"
note "  $(grep -E '^api checks:' "$LOGS/gpu.log")"
note "  $(grep -E '^test_cuda_gpu:' "$LOGS/gpu.log")"
fails=$(grep -c '^FAIL' "$LOGS/gpu.log")
note "  FAIL lines: $fails (first ones above; full log $LOGS/gpu.log)"

# ---- 3. timings (informative; the comparison with PyTorch is bench/vs_torch.py) ----
if [ "$PROBE" = 1 ]; then
  t3=$(date +%s)
  "$BUILD/tests/cuda/cuda_probe" >"$LOGS/probe.log" 2>&1
  PTC_CUBLASLT=0 "$BUILD/tests/cuda/cuda_probe" --mm >"$LOGS/probe_nolt.log" 2>&1
  note "cuda_probe ($(( $(date +%s) - t3 )) s; cold compiles in a fresh cache):"
  while IFS= read -r l; do note "  $l"; done <"$LOGS/probe.log"
  note "  without cuBLASLt (support GEMM):"
  while IFS= read -r l; do note "  $l"; done < <(grep "^mm" "$LOGS/probe_nolt.log")
fi

echo
echo "==== cuda-device-check summary ($(( $(date +%s) - t0 )) s) ===="
for l in "${summary[@]}"; do echo "$l"; done
exit $status
