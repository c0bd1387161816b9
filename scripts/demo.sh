#!/usr/bin/env bash
# demo.sh - quick start: installs the Debian packages libptc needs, builds it
# (meson + ninja, in build/) and runs the demo: the MLP and transformer-block
# examples on the reference backend, then `ptc info` and `ptc run` on the
# graph the MLP example saved as JSON.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

bash scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build

echo
echo "==== examples/mlp.c (also saves its graph to build/mlp.json) ===="
build/examples/example_mlp build/mlp.json
echo
echo "==== examples/transformer_block.c ===="
build/examples/example_transformer
echo
echo "==== ptc info ===="
build/ptc info
echo
echo "==== ptc run build/mlp.json (random inputs from --seed) ===="
build/ptc run build/mlp.json --seed 1
echo
echo "demo: ok (next: bash scripts/test.sh runs every test)"
