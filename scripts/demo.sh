#!/usr/bin/env bash
# demo.sh - quick start: installs the Debian packages libptc needs, builds it
# (meson + ninja, in build/) and runs the demo: the MLP and transformer-block
# examples on the reference backend, the transformer block again on the
# compiled cpu backend, `ptc info`, and `ptc check` comparing the two
# backends on the graph the transformer example saved as JSON; then, when the
# Python binding was built, examples/python/fx_demo.py (torch.fx -> ptc) and
# examples/python/compile_demo.py (ptc.compile).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

bash scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build

echo
echo "==== examples/mlp.c (ref backend) ===="
build/examples/example_mlp build/mlp.json
echo
echo "==== examples/transformer_block.c (ref backend) ===="
build/examples/example_transformer build/transformer.json
echo
echo "==== examples/transformer_block.c --backend cpu (last lines) ===="
build/examples/example_transformer --backend cpu | tail -n 3
echo
echo "==== ptc info ===="
build/ptc info
echo
echo "==== ptc check build/transformer.json --backend cpu --against ref ===="
build/ptc check build/transformer.json --backend cpu --against ref --seed 1
if [ -d build/python/ptc ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo
  echo "==== examples/python/fx_demo.py (torch.fx model through ptc.from_fx) ===="
  PYTHONPATH=build/python /usr/bin/python3 examples/python/fx_demo.py
  echo
  echo "==== examples/python/compile_demo.py (ptc.compile: bytecode capture, a graph break) ===="
  PYTHONPATH=build/python /usr/bin/python3 examples/python/compile_demo.py
fi
echo
echo "demo: ok (next: bash scripts/test.sh runs every test)"
