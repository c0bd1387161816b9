#!/usr/bin/env bash
# test_cli.sh BUILD_DIR SOURCE_DIR - smoke test of the `ptc` tool as a user
# meets it: version, help, info, exit statuses, and print/run/check on the
# graph that examples/mlp.c saves as JSON (plus a missing and a corrupt file).
set -u
build=${1:?usage: test_cli.sh BUILD_DIR SOURCE_DIR}
ptc=$build/ptc
mlp=$build/examples/example_mlp
fail=0
bad() { echo "FAIL: $*"; fail=1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# expect RC DESCRIPTION CMD...: runs CMD, output in $tmp/out, checks the exit status.
expect() {
  local want=$1 what=$2
  shift 2
  "$@" >"$tmp/out" 2>&1
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "$what: exit $rc, expected $want; output:"
    head -n 20 "$tmp/out"
    return 1
  fi
  return 0
}
contains() { grep -q -- "$1" "$tmp/out" || { bad "$2: output lacks '$1'"; head -n 20 "$tmp/out"; }; }

[ -x "$ptc" ] || { echo "FAIL: $ptc not built"; exit 1; }
expect 0 "ptc --version" "$ptc" --version && contains "ptc 0.1.0" "ptc --version"
expect 0 "ptc help" "$ptc" help && contains "usage: ptc" "ptc help"
expect 0 "ptc info" "$ptc" info && contains "ref" "ptc info"
expect 2 "ptc without a command" "$ptc"
expect 2 "ptc bogus" "$ptc" bogus-command
expect 2 "ptc run on a missing file" "$ptc" run "$tmp/missing.json" && contains "error" "missing file"

if expect 0 "example_mlp saving its graph" "$mlp" "$tmp/mlp.json"; then
  expect 0 "ptc print" "$ptc" print "$tmp/mlp.json" && contains "linear" "ptc print"
  expect 0 "ptc run" "$ptc" run "$tmp/mlp.json" --seed 3 && cp "$tmp/out" "$tmp/run1"
  expect 0 "ptc run (again)" "$ptc" run "$tmp/mlp.json" --seed 3 &&
    { cmp -s "$tmp/out" "$tmp/run1" || bad "ptc run with the same seed printed different output"; }
  expect 0 "ptc check ref vs ref" "$ptc" check "$tmp/mlp.json" --backend ref --against ref
  expect 2 "ptc run --backend nosuch" "$ptc" run "$tmp/mlp.json" --backend nosuch
  head -c 100 "$tmp/mlp.json" >"$tmp/truncated.json"
  expect 2 "ptc run on a truncated file" "$ptc" run "$tmp/truncated.json"
fi

[ "$fail" -eq 0 ] && echo "ok: ptc CLI (version, help, info, print, run, check, errors)"
exit "$fail"
