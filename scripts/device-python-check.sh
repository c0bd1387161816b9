#!/usr/bin/env bash
# device-python-check.sh - the Python binding on the GPU machine in one call:
# builds libptc and ptc._C against that machine's Python (3.12, PyTorch 2.x),
# runs the meson suite 'python' (pytest), then optionally the CPU benchmarks
# (bench/vs_torch.py --device cpu with Inductor, bench/cpu_bench).
#
# Where: the GPU machine reached with the session's device tool; name
# .devdeps in `carry` (libffi/cJSON packages, see scripts/device-deps.sh).
#
#   bash scripts/device-python-check.sh [--tests] [--vs-torch ARGS...] [--cpu-bench]
#
# With no step flag, runs --tests. Logs and JSON go to $OUT when set (the
# device tool's output folder), else to the build folder. Exit status: 0
# when every step passed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-/tmp/ptc-py-build}
PY=${PY:-$(command -v python3)}
TESTS=0
CPU_BENCH=0
VS=0
VS_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tests) TESTS=1; shift ;;
    --cpu-bench) CPU_BENCH=1; shift ;;
    --vs-torch) VS=1; shift; while [ $# -gt 0 ] && [[ "$1" != --tests && "$1" != --cpu-bench ]]; do VS_ARGS+=("$1"); shift; done ;;
    *) echo "usage: $0 [--tests] [--cpu-bench] [--vs-torch ARGS...]" >&2; exit 2 ;;
  esac
done
[ $((TESTS + CPU_BENCH + VS)) -eq 0 ] && TESTS=1
LOGS=${OUT:-$BUILD/logs}
mkdir -p "$LOGS"
export PTC_CACHE_DIR=${PTC_CACHE_DIR:-/tmp/ptc-py-cache}
status=0
summary=()
note() { summary+=("$1"); echo "== $1"; }

if [ -d .devdeps ]; then
  eval "$(bash scripts/device-deps.sh env)"
  # A pkg-config sysroot would also prefix the Python headers' folder (from
  # python-3.12.pc) and hide them; find cJSON's headers through CPATH instead.
  unset PKG_CONFIG_SYSROOT_DIR
  export CPATH=/tmp/devdeps/usr/include${CPATH:+:$CPATH}
fi
echo "== $(uname -m), $(nproc) cpus, $("$PY" -c 'import sys,torch;print("python",sys.version.split()[0],"torch",torch.__version__)' 2>&1), meson $(meson --version)"
if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" -Dpython=enabled -Dpython_exe="$PY" >"$LOGS/setup.log" 2>&1 ||
    { tail -n 40 "$LOGS/setup.log"; echo "meson setup failed"; exit 1; }
fi
if ! ninja -C "$BUILD" >"$LOGS/build.log" 2>&1; then
  grep -E "error|FAILED" "$LOGS/build.log" | head -n 40
  echo "build failed"
  exit 1
fi
note "build ok"

if [ "$TESTS" = 1 ]; then
  meson test -C "$BUILD" --suite python --num-processes "$(nproc)" --print-errorlogs \
    >"$LOGS/python-tests.log" 2>&1
  rc=$?
  cp "$BUILD/meson-logs/testlog.txt" "$LOGS/python-testlog.txt" 2>/dev/null
  grep -E "^ *[0-9]+/[0-9]+ |^Ok:|^Fail:|^Skipped:" "$LOGS/python-tests.log"
  # pytest's own summary lines ("N passed, M skipped in ...")
  grep -hE "^=+ .*(passed|failed).* =+$" "$BUILD/meson-logs/testlog.txt" | sed 's/^/   /'
  [ $rc -eq 0 ] && note "python suite passed" || { note "python suite FAILED (rc $rc)"; status=1; }
fi

if [ "$VS" = 1 ]; then
  PTC_PYTHONPATH="$BUILD/python" timeout 560 "$PY" bench/vs_torch.py --device cpu \
    --json "$LOGS/vs_torch-cpu.json" "${VS_ARGS[@]}" 2>&1 | tee "$LOGS/vs_torch-cpu.txt" | tail -n 60
  rc=${PIPESTATUS[0]}
  [ $rc -eq 0 ] && note "vs_torch cpu done" || { note "vs_torch cpu exit $rc"; status=1; }
fi

if [ "$CPU_BENCH" = 1 ]; then
  if [ -x "$BUILD/bench/cpu_bench" ]; then
    timeout 300 "$BUILD/bench/cpu_bench" 2>&1 | tee "$LOGS/cpu_bench.txt" | tail -n 40
    rc=${PIPESTATUS[0]}
    [ $rc -eq 0 ] && note "cpu_bench done" || { note "cpu_bench exit $rc"; status=1; }
  else
    note "cpu_bench not built"; status=1
  fi
fi

echo "== summary"
for l in "${summary[@]}"; do echo "  $l"; done
exit $status
