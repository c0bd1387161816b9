"""test_examples.py - the Python examples the quick-start demo runs
(examples/python/fx_demo.py, compile_demo.py) work as a user runs them: a
fresh interpreter with the built package on PYTHONPATH, exit status 0,
results equal eager (fx_demo: one recompile for three batch sizes;
compile_demo: a graph break, every batch within 1e-4 of eager)."""
import re
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(tmp_path, name):
    env = dict(os.environ)
    path = os.environ.get("PTC_PYTHONPATH")
    if path:
        env["PYTHONPATH"] = os.path.abspath(path)
    env["PTC_CACHE_DIR"] = str(tmp_path / "cache")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", name)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_compile_demo_runs(tmp_path):
    out = _run(tmp_path, "compile_demo.py")
    errs = [float(e) for e in re.findall(r"batch \d+: max \|ptc - eager\| = (\S+)", out)]
    assert len(errs) == 4 and max(errs) < 1e-4, out
    m = re.search(r"graph breaks: (\d+)", out)
    assert m and int(m.group(1)) >= 1, out
    assert "call to builtins.print" in out, out


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
