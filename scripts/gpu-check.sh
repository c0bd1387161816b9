#!/usr/bin/env bash
# gpu-check.sh - everything the cuda backend has to pass on the GPU machine,
# in one call of the device tool: one build (library, cuda tests, ptc._C for
# that machine's Python), then the selected steps.
#
#   bash scripts/gpu-check.sh [--src TAR] [--c] [--seeds N] [--py] [--py-tests NAMES]
#                             [--vs-torch DTYPES] [--vs-args "ARGS"] [--probe] [--build]
#                             [--no-dynamo] [--jobs N] [--bench]
#
#   --src TAR   build and test the tree in TAR (`git archive --format=tar -o
#               snap.tar HEAD`), not the checkout that travelled (which may
#               hold other people's unfinished work)
#   --c         test_cuda_nvrtc (NVRTC compile of 50 random graphs) and
#               test_cuda_gpu (API checks incl. the caller stream, the
#               random-graph differential suite against ref with --seeds N
#               (default 300), every op case of tests/data, CUDA-graph mode
#               (mode reduce-overhead: random graphs, shape changes, the
#               graph cap, streams, output buffers, the error flag, and the
#               per-call host time of plain vs graph runs)), then the GPU
#               runs of test_cuda_gemm / _attn / _attn_match / _split /
#               _rows / _tune / _welford / _lowp / _trig / _conv / _conv_tma / _pdl
#               / _aot (test_cuda_attn's three extra wgmma passes as jobs of
#               their own: attn_wg0..2)
#   --py        the meson suite 'python' (pytest) on the GPU machine: the CPU
#               tests and tests/python/test_cuda_tensors.py (CUDA tensors,
#               torch's current stream, from_fx/backend on cuda, device
#               convolutions, GEMM epilogues); --py-tests NAMES runs only the
#               comma-separated meson test names (e.g. test_cuda_tensors)
#   --vs-torch  bench/vs_torch.py --device cuda for each dtype of the
#               comma-separated list (float32,bfloat16); --vs-args adds
#               arguments (e.g. "--quick" or "--only softmax,layernorm")
#   --jobs N    with --c: run the kernel-family tests N at a time, beside
#               test_cuda_gpu (which then takes half the CPUs): session 11
#               ran the affected tests in 135 s this way against 317 s one
#               after another (default 1: one after another)
#   --bench     the complete benchmark in one call, as the closing notes
#               report it: bench/vs_torch.py --quick on the micro workloads
#               (one process per dtype, every system, the cold compile
#               column), then each model (resnet18, bert, gpt2) at the
#               issue's sizes in its own process, for float32 and bfloat16
#               (BENCH_DTYPES overrides); about 9-10 minutes on the H100,
#               more than one device call with a build first: split it
#               with BENCH_PARTS=micro, then KEEP_BUILD=1 BENCH_PARTS=models
#               (the same --src tar is then not unpacked or built again);
#               tables in bench-micro-<dtype>.txt, bench-models.txt and
#               the JSON files in bench-json.tar under the log folder
#   --probe     tests/cuda/cuda_probe (bandwidth, GEMM, compile, host time)
#   --build     only the build (no step; for commands run after it)
#   --no-dynamo build ptc._C without the bytecode capture (-Ddynamo=false;
#               ptc.compile then raises and test_cuda_compile skips)
#
# With no step flag: --c --py. Where: the GPU machine (name .devdeps in
# `carry`, see scripts/device-deps.sh). Logs go to $OUT when set (the device
# tool's output folder; at most 8 files come back), else to the build folder.
# The build includes the bytecode capture (ptc.compile: test_cuda_compile,
# vs_torch's ptc-compile system) unless --no-dynamo.
# Exit status: 0 when every step passed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-/tmp/ptc-gpu-build}
PY=${PY:-$(command -v python3)}
SRC_TAR=
SEEDS=300
C=0 PYT=0 PROBE=0
VS_DTYPES=
VS_ARGS=
PY_TESTS=
DYNAMO=true
BUILD_ONLY=0
JOBS=1
BENCH=0
while [ $# -gt 0 ]; do
  case "$1" in
    --src) SRC_TAR=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
    --c) C=1; shift ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --py) PYT=1; shift ;;
    --py-tests) PYT=1; PY_TESTS=$2; shift 2 ;;
    --probe) PROBE=1; shift ;;
    --vs-torch) VS_DTYPES=$2; shift 2 ;;
    --vs-args) VS_ARGS=$2; shift 2 ;;
    --no-dynamo) DYNAMO=false; shift ;;
    --build) BUILD_ONLY=1; shift ;;
    --jobs) JOBS=$2; shift 2 ;;
    --bench) BENCH=1; shift ;;
    *) echo "usage: $0 [--src TAR] [--c] [--seeds N] [--jobs N] [--py] [--py-tests NAMES] [--vs-torch DTYPES] [--vs-args ARGS] [--bench] [--probe] [--build] [--no-dynamo]" >&2
       exit 2 ;;
  esac
done
[ $((C + PYT + PROBE + BUILD_ONLY + BENCH)) -eq 0 ] && [ -z "$VS_DTYPES" ] && C=1 && PYT=1
case "$JOBS" in ''|*[!0-9]*|0) echo "gpu-check: --jobs wants a positive number" >&2; exit 2 ;; esac
LOGS=${OUT:-$BUILD/logs}
mkdir -p "$LOGS" /tmp/ptc-gpu-logs
export PTC_CACHE_DIR=${PTC_CACHE_DIR:-/tmp/ptc-gpu-cache}
export PYTHONUNBUFFERED=1
t0=$(date +%s)
status=0
summary=()
note() { summary+=("$1"); echo "== $1"; }

if [ -d .devdeps ]; then
  eval "$(bash scripts/device-deps.sh env)"
  # A pkg-config sysroot would also prefix the Python headers' folder; find
  # cJSON's headers through CPATH instead (see device-python-check.sh).
  unset PKG_CONFIG_SYSROOT_DIR
  export CPATH=/tmp/devdeps/usr/include${CPATH:+:$CPATH}
fi
if [ -n "$SRC_TAR" ]; then
  SRC_DIR=/tmp/ptc-gpu-src
  # With KEEP_BUILD=1 and the tree of the same tar already unpacked, keep
  # it: unpacking again renews every file's time and ninja would rebuild
  # everything (session 12's --bench call lost a minute to that).
  sum=$(sha1sum "$SRC_TAR" | cut -d' ' -f1)
  if [ "${KEEP_BUILD:-0}" = 1 ] && [ "$(cat "$SRC_DIR/.gpu-check-src" 2>/dev/null)" = "$sum" ]; then
    note "source: $SRC_TAR (unpacked already)"
  else
    rm -rf "$SRC_DIR" && mkdir -p "$SRC_DIR" && tar -xf "$SRC_TAR" -C "$SRC_DIR" ||
      { echo "gpu-check: cannot unpack $SRC_TAR"; exit 1; }
    echo "$sum" >"$SRC_DIR/.gpu-check-src"
    note "source: $SRC_TAR"
  fi
  cd "$SRC_DIR" || exit 1
fi
echo "== $(nvidia-smi -L 2>/dev/null | head -1); $("$PY" -c 'import sys,torch;print("python",sys.version.split()[0],"torch",torch.__version__)' 2>&1)"
# A build folder left on a warm machine by another tree's run may be
# configured for other sources (files added or removed): with --src, start
# from an empty one unless KEEP_BUILD=1.
if [ -n "$SRC_TAR" ] && [ "${KEEP_BUILD:-0}" != 1 ]; then
  rm -rf "$BUILD"
fi
if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" -Dpython=enabled -Dpython_exe="$PY" -Ddynamo=$DYNAMO \
    >/tmp/ptc-gpu-logs/setup.log 2>&1 ||
    { tail -n 40 /tmp/ptc-gpu-logs/setup.log; echo "gpu-check: meson setup failed"; exit 1; }
fi
if ! ninja -C "$BUILD" >/tmp/ptc-gpu-logs/build.log 2>&1; then
  grep -E "error|FAILED" /tmp/ptc-gpu-logs/build.log | head -n 40
  echo "gpu-check: build failed"
  exit 1
fi
note "build ok ($(( $(date +%s) - t0 )) s)"

if [ "$C" = 1 ]; then
  t1=$(date +%s)
  "$BUILD/tests/cuda/test_cuda_nvrtc" --seeds 50 >"$LOGS/nvrtc.log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 77 ] && status=1 && grep -m 20 FAIL "$LOGS/nvrtc.log"
  note "test_cuda_nvrtc (rc $rc, $(( $(date +%s) - t1 )) s): $(grep '^test_cuda_nvrtc:' "$LOGS/nvrtc.log")"
  t2=$(date +%s)
  cases=()
  for f in elementwise reduce nn shape; do cases+=("tests/data/ops_$f.json"); done
  gpu_threads=$(nproc)
  [ "$JOBS" -gt 1 ] && gpu_threads=$(( (gpu_threads + 1) / 2 ))
  # each test leaves its status and seconds in /tmp/ptc-gpu-logs/k-NAME.{rc,s}
  run_bg() { # NAME COMMAND...: run in the background, log to k-NAME.log
    local name=$1; shift
    ( t=$(date +%s); "$@" >"/tmp/ptc-gpu-logs/k-$name.log" 2>&1; echo $? >"/tmp/ptc-gpu-logs/k-$name.rc"
      echo $(( $(date +%s) - t )) >"/tmp/ptc-gpu-logs/k-$name.s" ) &
  }
  rm -f /tmp/ptc-gpu-logs/k-*
  run_bg gpu "$BUILD/tests/cuda/test_cuda_gpu" --seeds "$SEEDS" --threads "$gpu_threads" "${cases[@]}"
  gpu_pid=$!
  [ "$JOBS" -gt 1 ] || wait "$gpu_pid"
  # the GPU halves of the kernel-family tests (tensor-core GEMM, fused
  # attention and its rewrite, split and row reductions, autotuning,
  # welford, f16/bf16 math, implicit-GEMM and Hopper TMA convolutions, the ahead-of-time
  # table), JOBS at a time beside test_cuda_gpu, one log for all in order
  # (test_cuda_attn's extra wgmma passes, about 90 s each on the H100, run
  # as jobs of their own, first, so that they are not the tail)
  ktests=()
  for t in attn:--wg-pass:0 attn:--wg-pass:1 attn:--wg-pass:2 attn:--no-wg-passes gemm \
           attn_match split rows tune welford lowp trig conv conv_tma aot pdl; do
    IFS=: read -r bin a1 a2 <<<"$t"
    [ -x "$BUILD/tests/cuda/test_cuda_$bin" ] || continue
    name=$bin${a2:+_wg$a2}
    while [ "$(jobs -rp | grep -cv "^$gpu_pid\$")" -ge "$JOBS" ]; do wait -n; done
    run_bg "$name" "$BUILD/tests/cuda/test_cuda_$bin" ${a1:+"$a1"} ${a2:+"$a2"}
    ktests+=("$name")
  done
  wait
  cp /tmp/ptc-gpu-logs/k-gpu.log "$LOGS/gpu.log"
  gpu_rc=$(cat /tmp/ptc-gpu-logs/k-gpu.rc 2>/dev/null || echo 1)
  [ "$gpu_rc" -ne 0 ] && status=1
  grep -m 40 -E "^FAIL|^  \(" "$LOGS/gpu.log"
  note "test_cuda_gpu (rc $gpu_rc, $(cat /tmp/ptc-gpu-logs/k-gpu.s 2>/dev/null) s; all $(( $(date +%s) - t2 )) s): $(grep -E '^device:' "$LOGS/gpu.log")"
  note "  $(grep -E '^api checks:' "$LOGS/gpu.log")"
  while IFS= read -r l; do note "  $l"; done < <(grep -E '^graph mode|^  graph api' "$LOGS/gpu.log")
  note "  $(grep -E '^test_cuda_gpu:' "$LOGS/gpu.log")"
  : >"$LOGS/kernels.log"
  for t in "${ktests[@]}"; do
    echo "==== test_cuda_$t" >>"$LOGS/kernels.log"
    cat "/tmp/ptc-gpu-logs/k-$t.log" >>"$LOGS/kernels.log"
    rc=$(cat "/tmp/ptc-gpu-logs/k-$t.rc" 2>/dev/null || echo 1)
    [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && status=1 && tail -n 15 "/tmp/ptc-gpu-logs/k-$t.log"
    note "test_cuda_$t (rc $rc, $(cat "/tmp/ptc-gpu-logs/k-$t.s" 2>/dev/null) s): $(tail -n 1 "/tmp/ptc-gpu-logs/k-$t.log")"
  done
fi

if [ "$PYT" = 1 ]; then
  t3=$(date +%s)
  # shellcheck disable=SC2086
  meson test -C "$BUILD" --suite python --num-processes 8 --print-errorlogs ${PY_TESTS//,/ } \
    >/tmp/ptc-gpu-logs/python-tests.log 2>&1
  rc=$?
  cp "$BUILD/meson-logs/testlog.txt" "$LOGS/python-testlog.txt" 2>/dev/null
  grep -E "^ *[0-9]+/[0-9]+ |^Ok:|^Fail:|^Skipped:" /tmp/ptc-gpu-logs/python-tests.log
  grep -hE "^=+ .*(passed|failed).* =+$" "$BUILD/meson-logs/testlog.txt" | sed 's/^/   /'
  [ $rc -eq 0 ] && note "python suite passed ($(( $(date +%s) - t3 )) s)" ||
    { note "python suite FAILED (rc $rc)"; status=1; }
fi

if [ "$PROBE" = 1 ]; then
  "$BUILD/tests/cuda/cuda_probe" 2>&1 | tee "$LOGS/probe.log"
fi

if [ -n "$VS_DTYPES" ]; then
  IFS=, read -r -a dts <<<"$VS_DTYPES"
  for dt in "${dts[@]}"; do
    t4=$(date +%s)
    # shellcheck disable=SC2086
    PTC_PYTHONPATH="$BUILD/python" timeout "${VS_TIMEOUT:-280}" "$PY" bench/vs_torch.py --device cuda \
      --dtype "$dt" --json "$LOGS/vs_torch-cuda-$dt.json" $VS_ARGS \
      >"$LOGS/vs_torch-cuda-$dt.txt" 2>&1
    rc=$?
    # the table (stdout) follows the progress lines (stderr) in the file
    sed -n '/^## vs_torch/,/^Workloads:/p' "$LOGS/vs_torch-cuda-$dt.txt"
    [ $rc -ne 0 ] && tail -n 30 "$LOGS/vs_torch-cuda-$dt.txt"
    [ $rc -eq 0 ] && note "vs_torch cuda $dt done ($(( $(date +%s) - t4 )) s)" ||
      { note "vs_torch cuda $dt exit $rc"; status=1; }
  done
fi

if [ "$BENCH" = 1 ]; then
  # The issue's benchmark as the closing notes report it: one process per
  # dtype for the micro workloads, one per model and dtype at full size
  # (a model's first calls take most of a minute; one process each keeps a
  # slow one from costing the others their figures).
  BJ=/tmp/ptc-gpu-logs/bench-json
  # BENCH_PARTS="micro" or "models" runs one half (default both: about
  # 9-10 minutes, more than one device call allows when a build comes first)
  parts=" ${BENCH_PARTS:-micro models} "
  mkdir -p "$BJ"
  [ "$parts" != " models " ] && rm -f "$BJ"/micro-*
  [ "$parts" != " micro " ] && rm -f "$BJ"/resnet18-* "$BJ"/bert-* "$BJ"/gpt2-* && : >"$LOGS/bench-models.txt"
  for dt in ${BENCH_DTYPES:-bfloat16 float32}; do
    [[ $parts == *" micro "* ]] || break
    t4=$(date +%s)
    PTC_PYTHONPATH="$BUILD/python" timeout "${VS_TIMEOUT:-280}" "$PY" bench/vs_torch.py --device cuda \
      --dtype "$dt" --quick --only pointwise,softmax,layernorm,rmsnorm,row_sum,col_sum,var_mean,mm_bias_gelu,attention,sdpa,tiny \
      --json "$BJ/micro-$dt.json" >"$LOGS/bench-micro-$dt.txt" 2>&1
    rc=$?
    sed -n '/^## vs_torch/,/^Workloads:/p' "$LOGS/bench-micro-$dt.txt"
    [ $rc -eq 0 ] && note "bench micro $dt done ($(( $(date +%s) - t4 )) s)" ||
      { tail -n 30 "$LOGS/bench-micro-$dt.txt"; note "bench micro $dt exit $rc"; status=1; }
  done
  for dt in ${BENCH_DTYPES:-bfloat16 float32}; do
    [[ $parts == *" models "* ]] || break
    for m in resnet18 bert gpt2; do
      t4=$(date +%s)
      PTC_PYTHONPATH="$BUILD/python" timeout "${BENCH_MODEL_TIMEOUT:-120}" "$PY" bench/vs_torch.py --device cuda \
        --dtype "$dt" --only "$m" --json "$BJ/$m-$dt.json" >"$BJ/$m-$dt.txt" 2>&1
      rc=$?
      cat "$BJ/$m-$dt.txt" >>"$LOGS/bench-models.txt"
      [ $rc -eq 0 ] && note "bench $m $dt ($(( $(date +%s) - t4 )) s): $(grep -E "^\| $m " "$BJ/$m-$dt.txt")" ||
        { tail -n 20 "$BJ/$m-$dt.txt"; note "bench $m $dt exit $rc"; status=1; }
    done
  done
  tar -cf "$LOGS/bench-json.tar" -C "$BJ" .
fi

echo
echo "==== gpu-check summary ($(( $(date +%s) - t0 )) s) ===="
for l in "${summary[@]}"; do echo "$l"; done
exit $status
