#!/bin/sh
# cli_test.sh - end-to-end checks of the `ptc` tool: usage and exit codes,
# info, print, run (random and file inputs, checksums), check (ref vs ref),
# and error reporting. Usage: cli_test.sh path/to/ptc
set -u
PTC=${1:?usage: cli_test.sh path/to/ptc}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ptc_cli_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
fails=0

fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# expect STATUS PATTERN CMD... : exit status and a fixed string in stdout+stderr
expect() {
  want=$1 pat=$2
  shift 2
  out=$("$@" 2>&1)
  got=$?
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want: $out"
  case $out in *"$pat"*) ;; *) fail "'$*' output lacks '$pat': $out" ;; esac
}

cat > "$TMP/g.json" <<'JSON'
{"format": "ptc-graph", "version": 1, "symbols": [{"name": "s0", "hint": 2}],
 "values": [{"id": 0, "kind": "input", "name": "x", "dtype": "f32", "shape": ["s0", 3],
             "strides": null},
            {"id": 1, "kind": "constant", "name": "c", "dtype": "f32", "shape": [3],
             "data": "AAAAAAAAAAAAAAAA"}],
 "nodes": [{"op": "add", "inputs": [0, 1], "attrs": {}, "outputs": [2]},
           {"op": "relu", "inputs": [2], "attrs": {}, "outputs": [3]}],
 "outputs": [3]}
JSON
cat > "$TMP/in.json" <<'JSON'
{"inputs": [{"dtype": "f32", "shape": [2, 3], "data": [1, -2, 3, -4, 5, -6]}]}
JSON
printf '{"format": "ptc-graph", "version": 1, "nodes": [{"op": "nope", "outputs": [0]}]}' \
  > "$TMP/badop.json"
printf '{"format": ' > "$TMP/broken.json"
cat > "$TMP/nohint.json" <<'JSON'
{"format": "ptc-graph", "version": 1, "symbols": [{"name": "u0"}],
 "values": [{"id": 0, "kind": "input", "name": "x", "dtype": "f32", "shape": ["u0"]}],
 "nodes": [{"op": "neg", "inputs": [0], "outputs": [1]}], "outputs": [1]}
JSON

expect 0 "usage: ptc" "$PTC" help
expect 2 "usage: ptc" "$PTC"
expect 2 "unknown command 'frobnicate'" "$PTC" frobnicate
expect 0 "ref: available" "$PTC" info
expect 0 "call_function" "$PTC" print "$TMP/g.json"
expect 0 "s0: hint 2" "$PTC" print "$TMP/g.json"
expect 0 "output 0: f32 [2, 3] sum=9 abs_sum=9" "$PTC" run "$TMP/g.json" --inputs "$TMP/in.json"
expect 0 "output 0: f32 [2, 3] sum=" "$PTC" run "$TMP/g.json" --seed 7
a=$("$PTC" run "$TMP/g.json" --seed=7)
b=$("$PTC" run "$TMP/g.json" --seed 7)
[ "$a" = "$b" ] || fail "the same seed gave different outputs"
expect 0 "PASS" "$PTC" check "$TMP/g.json" --backend ref --against ref --seed 3
expect 2 "needs --against" "$PTC" check "$TMP/g.json"
expect 2 "unknown backend 'nope'" "$PTC" check "$TMP/g.json" --backend ref --against nope
expect 2 "unknown op 'nope'" "$PTC" print "$TMP/badop.json"
expect 2 "malformed JSON" "$PTC" print "$TMP/broken.json"
expect 2 "not found" "$PTC" print "$TMP/missing.json"
expect 2 "has no hint" "$PTC" run "$TMP/nohint.json"
expect 2 "unknown option --bogus" "$PTC" run "$TMP/g.json" --bogus 1
expect 2 "bad value 'x' for --seed" "$PTC" run "$TMP/g.json" --seed x
expect 2 "expected 6 numbers, got 2" sh -c \
  "printf '{\"inputs\": [{\"dtype\": \"f32\", \"shape\": [2, 3], \"data\": [1, 2]}]}' > '$TMP/short.json' && '$PTC' run '$TMP/g.json' --inputs '$TMP/short.json'"

if [ "$fails" -ne 0 ]; then
  echo "cli_test: $fails failure(s)" >&2
  exit 1
fi
echo "cli_test: all passed"
