"""test_examples.py - the Python example the quick-start demo runs
(examples/python/fx_demo.py) works as a user runs it: a fresh interpreter
with the built package on PYTHONPATH, exit status 0, results equal eager,
one recompile for three batch sizes."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_fx_demo_runs(tmp_path):
    env = dict(os.environ)
    path = os.environ.get("PTC_PYTHONPATH")
    if path:
        env["PYTHONPATH"] = os.path.abspath(path)
    env["PTC_CACHE_DIR"] = str(tmp_path / "cache")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "fx_demo.py")],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "compiles: 2, dynamic dims (input, dim): [(0, 0)]" in r.stdout, r.stdout
    assert "batch 17: max |ptc - eager|" in r.stdout
