#!/usr/bin/env bash
# test.sh - the project's whole test run (what CI runs, via .ci/run).
#
# Legs, each counted on its own:
#   meson     build/ with the default options; every registered test
#             (unit tests, differential tests against PyTorch's outputs,
#             packaging checks) except suite 'python', counted from meson's
#             testlog.json
#   python    build/'s suite 'python' (pytest files of the ptc package,
#             tests/python), run on its own with a fresh PTC_CACHE_DIR under
#             build/; prints the interpreter and torch version it used. When
#             /usr/bin/python3 has torch but the suite has no tests (the
#             extension was not configured, e.g. missing Python headers), that
#             counts as a failure rather than silently vanishing
#   asan      build-asan/ with -Db_sanitize=address,undefined (and
#             -Dwerror=false, see below); the C test suite again (packaging
#             and python suites excluded: CPython loading an ASan-built
#             extension needs LD_PRELOAD of the runtime), any sanitizer
#             report fails
#   valgrind  memcheck --leak-check=full on the C unit tests and one ops
#             data file, using build/'s binaries
#   fuzz      build-fuzz/ with clang, -Dfuzzing=true and ASan+UBSan; fuzz_json and
#             fuzz_sym for FUZZ_SECONDS (default 60) each on copies of their
#             corpora (skipped with a note while fuzz/meson.build is absent)
# A step that cannot run (setup, compile, a missing binary) counts as a
# failed test. The last line printed is exactly "N passed, N failed"; the exit
# status is 0 only if nothing failed.
#
# Environment: FUZZ_SECONDS, JOBS (parallel tests, default nproc),
# SKIP_DEPS=1 (do not run install-deps.sh).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

TOTAL_PASS=0
TOTAL_FAIL=0
LEG_LINES=()
FAILURES=()

say() { printf '\n==== %s ====\n' "$*"; }
# count LEG PASSED FAILED [NOTE]: adds a leg's numbers to the totals.
count() {
  TOTAL_PASS=$((TOTAL_PASS + $2))
  TOTAL_FAIL=$((TOTAL_FAIL + $3))
  LEG_LINES+=("$(printf '%-9s %4d passed, %4d failed%s' "$1" "$2" "$3" "${4:+  ($4)}")")
}
# failed LEG WHAT: one failed step (counted as one failed test).
failed() {
  FAILURES+=("$1: $2")
  echo "FAILED: $1: $2"
}

# meson_build LEG DIR [SETUP OPTIONS...]: configures (once) and builds DIR.
meson_build() {
  local leg=$1 dir=$2
  shift 2
  if [ ! -f "$dir/build.ninja" ]; then
    if ! meson setup "$dir" "$@"; then
      failed "$leg" "meson setup $dir $*"
      return 1
    fi
  fi
  if ! ninja -C "$dir"; then
    failed "$leg" "ninja -C $dir"
    return 1
  fi
  return 0
}

# meson_tests LEG DIR [MESON TEST ARGS...]: runs the suite and counts it from
# the JSON test log. Prints "passed failed skipped" into LAST_COUNTS.
LAST_COUNTS="0 0 0"
meson_tests() {
  local leg=$1 dir=$2
  shift 2
  local log=$dir/meson-logs/testlog.json
  rm -f "$log"
  meson test -C "$dir" --print-errorlogs --num-processes "$JOBS" "$@"
  local rc=$?
  if [ ! -f "$log" ]; then
    failed "$leg" "meson test wrote no $log (exit $rc)"
    LAST_COUNTS="0 1 0"
    return
  fi
  # One JSON object per line: {"name": ..., "result": "OK"|"FAIL"|"SKIP"|...}
  local parsed
  parsed=$("$PY" - "$log" "$leg" <<'EOF'
import json, sys
path, leg = sys.argv[1], sys.argv[2]
passed = failed = skipped = 0
for line in open(path, encoding="utf-8", errors="replace"):
    line = line.strip()
    if not line:
        continue
    try:
        t = json.loads(line)
    except ValueError:
        failed += 1
        print("FAILED: %s: unreadable testlog line" % leg, file=sys.stderr)
        continue
    r = t.get("result", "")
    if r in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif r == "SKIP":
        skipped += 1
    else:
        failed += 1
        print("FAILED: %s: %s (%s)" % (leg, t.get("name", "?"), r), file=sys.stderr)
print(passed, failed, skipped)
EOF
  ) || parsed="0 1 0"
  local p f s
  read -r p f s <<<"$parsed"
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    failed "$leg" "meson test exited $rc with no failed test in the log"
    f=1
  fi
  if [ "$f" -gt 0 ]; then
    "$PY" - "$log" "$leg" <<'EOF'
import json, sys
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        t = json.loads(line)
    except ValueError:
        continue
    if t.get("result") not in ("OK", "EXPECTEDFAIL", "SKIP"):
        print("%s: %s" % (sys.argv[2], t.get("name")))
EOF
  fi >"$dir/failed-tests.txt" 2>/dev/null
  while read -r line; do [ -n "$line" ] && FAILURES+=("$line"); done <"$dir/failed-tests.txt"
  LAST_COUNTS="$p $f $s"
}

# ---- deps ----------------------------------------------------------------------
say "dependencies"
if [ "${SKIP_DEPS:-0}" != 1 ]; then
  if ! bash scripts/install-deps.sh; then
    failed deps "scripts/install-deps.sh"
    count deps 0 1
  fi
fi

# ---- leg 1: meson suite -----------------------------------------------------------
say "meson: build/ (all registered tests)"
MAIN_BUILT=0
if meson_build meson build; then
  MAIN_BUILT=1
  meson_tests meson build --no-suite python
  read -r p f s <<<"$LAST_COUNTS"
  count meson "$p" "$f" "$( [ "$s" -gt 0 ] && echo "$s skipped")"
else
  count meson 0 1 "build failed"
fi

# ---- leg 1b: the python suite of build/ ------------------------------------------------
say "python: build/'s suite 'python' (the ptc package, pytest)"
if [ "$MAIN_BUILT" = 1 ]; then
  # "N INTERPRETER": the number of tests in suite 'python' and the program
  # the first one runs (its interpreter), from meson's introspection.
  py_info=$(meson introspect --tests build | "$PY" -c '
import json, sys
tests = [t for t in json.load(sys.stdin)
         if any(s == "python" or s.endswith(":python") for s in t.get("suite", []))]
print(len(tests), tests[0]["cmd"][0] if tests else "-")
' 2>/dev/null) || py_info="0 -"
  read -r py_n py_exe <<<"$py_info"
  if [ "${py_n:-0}" -gt 0 ]; then
    # A fresh compiled-kernel cache per run, inside build/, so the suite
    # measures cold compiles and never reads a stale user cache.
    export PTC_CACHE_DIR=$ROOT/build/ptc-cache-python
    rm -rf "$PTC_CACHE_DIR"
    mkdir -p "$PTC_CACHE_DIR"
    py_t0=$(date +%s)
    meson_tests python build --suite python
    read -r p f s <<<"$LAST_COUNTS"
    unset PTC_CACHE_DIR
    py_ver=$("$py_exe" -c 'import sys, torch; print("Python %d.%d.%d, torch %s" % (sys.version_info[:3] + (torch.__version__,)))' 2>/dev/null) ||
      py_ver="version unknown"
    # pytest's own counts, from each file's closing line in the test log.
    py_cases=$("$PY" - build/meson-logs/testlog.json <<'EOF'
import json, re, sys
tot = {}
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        t = json.loads(line)
    except ValueError:
        continue
    # pytest's closing line: "3 passed, 1 skipped in 4.02s" (maybe in ===).
    summary = [l for l in (t.get("stdout") or "").splitlines()
               if re.search(r"\d+ (passed|failed|skipped|errors?)\b.* in [\d.]+s", l)]
    for n, what in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", summary[-1] if summary else ""):
        tot[what] = tot.get(what, 0) + int(n)
print(", ".join("%d %s" % (v, k) for k, v in sorted(tot.items())) or "no pytest summary")
EOF
    ) || py_cases="pytest counts unreadable"
    echo "python: suite 'python' ran $py_n test files ($p passed, $f failed, $s skipped; pytest cases: $py_cases) in $(( $(date +%s) - py_t0 ))s with $py_exe ($py_ver)"
    count python "$p" "$f" "$( [ "$s" -gt 0 ] && echo "$s skipped")"
  elif "$PY" -c 'import torch' >/dev/null 2>&1; then
    failed python "$PY has torch but build/ registered no test in suite 'python' (meson option python disabled or Python headers missing?)"
    count python 0 1
  else
    echo "note: $PY has no torch and build/ has no python suite; python tests skipped"
    count python 0 0 "skipped: no torch"
  fi
else
  count python 0 0 "not run: build/ did not build"
fi

# ---- leg 2: sanitizers -------------------------------------------------------------
say "asan: build-asan/ (-Db_sanitize=address,undefined)"
# -Dwerror=false here only: GCC's sanitizer instrumentation makes warnings
# such as -Wformat-truncation and -Wmaybe-uninitialized fire on paths the
# instrumentation itself adds (false positives); warnings still print, and
# the main gcc build and the clang fuzz build keep -Werror.
# -Daot_kernels=disabled (here and in build-fuzz/): the ahead-of-time cubin
# table is generated and checked (test_cuda_aot) in build/; running NVRTC's
# ~20 s of compiles again under the sanitizers would only repeat that.
# -Dpython=disabled (here and in build-fuzz/): the ptc._C extension is only
# tested from build/; CPython loading an ASan-built extension would need the
# sanitizer runtime preloaded.
if meson_build asan build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=false -Dpython=disabled \
    -Daot_kernels=disabled; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1:print_summary=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1}
  meson_tests asan build-asan --no-suite packaging --no-suite python --timeout-multiplier 4
  read -r p f s <<<"$LAST_COUNTS"
  count asan "$p" "$f" "$( [ "$s" -gt 0 ] && echo "$s skipped")"
  unset ASAN_OPTIONS UBSAN_OPTIONS
else
  count asan 0 1 "build failed"
fi

# ---- leg 3: valgrind ---------------------------------------------------------------
say "valgrind: memcheck on build/'s C unit tests + one ops data file"
vp=0
vf=0
vnote=()
VALGRIND=(valgrind --quiet --leak-check=full --error-exitcode=1 --track-fds=no)
# run_valgrind NAME BINARY [ARGS...]: one counted run, in tests/ (the suite's workdir).
run_valgrind() {
  local name=$1
  shift
  echo "-- valgrind $name"
  if (cd tests && timeout 1800 "${VALGRIND[@]}" "$@" >"$ROOT/build/valgrind-$name.log" 2>&1); then
    vp=$((vp + 1))
    tail -n 1 "build/valgrind-$name.log"
  else
    vf=$((vf + 1))
    failed valgrind "$name"
    tail -n 40 "build/valgrind-$name.log"
  fi
}
if [ "$MAIN_BUILT" = 1 ] && command -v valgrind >/dev/null 2>&1; then
  for t in test_core test_sym test_graph test_json test_passes test_badinput; do
    if [ -x "build/tests/$t" ]; then
      run_valgrind "$t" "$ROOT/build/tests/$t"
    elif [ -f "tests/$t.c" ]; then
      vf=$((vf + 1))
      failed valgrind "$t: tests/$t.c exists but build/tests/$t was not built"
    else
      vnote+=("$t absent")
    fi
  done
  # The smallest ops data file keeps the (slow) memcheck run short.
  data=$(ls -S tests/data/ops_*.json 2>/dev/null | tail -n 1)
  if [ -n "$data" ] && [ -x build/tests/test_ops_torch ]; then
    run_valgrind "test_ops_torch-$(basename "$data" .json)" "$ROOT/build/tests/test_ops_torch" \
      "$ROOT/$data"
  else
    vf=$((vf + 1))
    failed valgrind "no ops data file or test_ops_torch binary"
  fi
elif [ "$MAIN_BUILT" != 1 ]; then
  vf=$((vf + 1))
  failed valgrind "build/ did not build"
else
  vf=$((vf + 1))
  failed valgrind "valgrind is not installed"
fi
count valgrind "$vp" "$vf" "${vnote[*]:-}"

# ---- leg 4: fuzzing ----------------------------------------------------------------
say "fuzz: build-fuzz/ (clang, -Dfuzzing=true), ${FUZZ_SECONDS}s per harness"
if [ ! -f fuzz/meson.build ]; then
  echo "note: fuzz/meson.build is absent; fuzzing skipped"
  count fuzz 0 0 "skipped: fuzz/meson.build absent"
elif ! command -v clang >/dev/null 2>&1; then
  failed fuzz "clang is not installed"
  count fuzz 0 1
elif CC=clang meson_build fuzz build-fuzz -Dfuzzing=true -Db_sanitize=address,undefined \
    -Db_lundef=false -Dpython=disabled -Daot_kernels=disabled; then
  fp=0
  ff=0
  for h in fuzz_json fuzz_sym; do
    bin=build-fuzz/fuzz/$h
    if [ ! -x "$bin" ]; then
      ff=$((ff + 1))
      failed fuzz "$h was not built"
      continue
    fi
    # Seeds: fuzz/corpus/<name> or fuzz/corpus/<name without fuzz_>; the
    # fuzzer writes new inputs into a scratch copy, never into the tree.
    run=build-fuzz/corpus-run/$h
    rm -rf "$run" "build-fuzz/artifacts/$h"
    mkdir -p "$run" "build-fuzz/artifacts/$h"
    for seed in "fuzz/corpus/$h" "fuzz/corpus/${h#fuzz_}"; do
      [ -d "$seed" ] && cp -r "$seed"/. "$run"/
    done
    dict=()
    [ -f "fuzz/${h#fuzz_}.dict" ] && dict=(-dict="fuzz/${h#fuzz_}.dict")
    echo "-- $h: $(find "$run" -type f | wc -l) seed inputs ${dict[*]:-}"
    if "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        "${dict[@]}" -artifact_prefix="build-fuzz/artifacts/$h/" "$run" \
        >"build-fuzz/$h.log" 2>&1; then
      fp=$((fp + 1))
      grep -E 'stat::number_of_executed_units|Done' "build-fuzz/$h.log" | tail -n 2
    else
      ff=$((ff + 1))
      failed fuzz "$h (crash or leak; see build-fuzz/$h.log and build-fuzz/artifacts/$h/)"
      tail -n 40 "build-fuzz/$h.log"
    fi
  done
  count fuzz "$fp" "$ff"
else
  count fuzz 0 1 "build failed"
fi

# ---- summary -------------------------------------------------------------------------
if [ $((TOTAL_PASS + TOTAL_FAIL)) -eq 0 ]; then
  failed all "no test ran"
  TOTAL_FAIL=1
fi
say "summary"
for l in "${LEG_LINES[@]}"; do echo "$l"; done
if [ ${#FAILURES[@]} -gt 0 ]; then
  echo "failures:"
  for l in "${FAILURES[@]}"; do echo "  $l"; done
fi
echo "$TOTAL_PASS passed, $TOTAL_FAIL failed"
[ "$TOTAL_FAIL" -eq 0 ]
