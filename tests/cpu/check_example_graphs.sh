#!/bin/sh
# check_example_graphs.sh - runs `ptc check G.json --backend A --against B`
# on every examples/graphs/*.json (random inputs, two seeds each) and counts
# the results. Backend A missing: a failure when PTC_EXPECT_CPU=1, else a
# note and A is replaced by B (the files are still loaded, compiled and run).
# Usage: check_example_graphs.sh PTC_BINARY GRAPH_DIR [A [B]]
# Exit status: 0 when every graph matched, 1 otherwise.
ptc=$1
dir=$2
a=${3:-cpu}
b=${4:-ref}
if [ ! -x "$ptc" ] || [ ! -d "$dir" ]; then
  echo "usage: $0 PTC_BINARY GRAPH_DIR [A [B]]"
  exit 1
fi
if ! "$ptc" info | grep -q "^  $a: available"; then
  if [ "${PTC_EXPECT_CPU:-0}" = 1 ]; then
    echo "FAIL: backend '$a' is not available but PTC_EXPECT_CPU=1"
    "$ptc" info
    exit 1
  fi
  echo "note: backend '$a' is not available; checking '$b' against itself"
  a=$b
fi
pass=0
fail=0
for g in "$dir"/*.json; do
  for seed in 1 2; do
    if out=$("$ptc" check "$g" --backend "$a" --against "$b" --seed "$seed" \
             --rtol 1e-4 --atol 1e-5 2>&1); then
      pass=$((pass + 1))
      echo "ok   $(basename "$g") seed $seed: $(echo "$out" | tail -n 1)"
    else
      fail=$((fail + 1))
      echo "FAIL $(basename "$g") seed $seed:"
      echo "$out"
    fi
  done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
