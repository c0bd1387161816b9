"""test_vs_torch_compile.py - bench/vs_torch.py's compile column: each ptc
system's first call is timed in a fresh process (--compile-in subprocess, the
default, for the systems of --cold-systems, default ptc-fx) with fresh ptc and
NVRTC caches, so modules loaded or compiled earlier in the benchmark's process
are not reused; the other systems' first calls are timed in the process and
marked '*'; --compile-in process keeps the in-process timing. Runs the cpu device on one small workload (the cuda
path is the same code; on the GPU machine the same script runs with
--device cuda)."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "vs_torch.py")


def _run(tmp_path, *extra, systems="eager,ptc-fx"):
    out = tmp_path / "vs.json"
    env = dict(os.environ)
    env["PTC_PYTHONPATH"] = os.environ.get("PTC_PYTHONPATH", "")
    p = subprocess.run([sys.executable, SCRIPT, "--device", "cpu", "--only", "softmax", "--quick",
                        "--systems", systems, "--repeat", "3", "--json", str(out), *extra],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(out.read_text()), p.stdout + p.stderr


@pytest.mark.skipif(not os.environ.get("PTC_PYTHONPATH"), reason="needs PTC_PYTHONPATH (meson test sets it)")
def test_first_call_in_fresh_process(tmp_path):
    d, text = _run(tmp_path)
    r = d["workloads"][0]["systems"]["ptc-fx"]
    assert r["status"] == "ok", r
    # the compile column comes from the fresh process; the in-process first call is kept beside it
    assert "cold_error" not in r, r.get("cold_error")
    assert r["first_call_s"] > 0 and r["first_call_inproc_s"] > 0
    # both first calls compiled the softmax kernel into their own empty cache folders
    assert len(r["compiled_cold"]) >= 1 and len(r["compiled"]) >= 1, r
    assert "fresh process" in text


@pytest.mark.skipif(not os.environ.get("PTC_PYTHONPATH"), reason="needs PTC_PYTHONPATH (meson test sets it)")
def test_first_call_in_process(tmp_path):
    d, _ = _run(tmp_path, "--compile-in", "process")
    r = d["workloads"][0]["systems"]["ptc-fx"]
    assert r["status"] == "ok", r
    assert "first_call_inproc_s" not in r and "compiled_cold" not in r
    assert len(r["compiled"]) >= 1


@pytest.mark.skipif(not os.environ.get("PTC_PYTHONPATH"), reason="needs PTC_PYTHONPATH (meson test sets it)")
def test_cold_systems_select_the_fresh_processes(tmp_path):
    # default --cold-systems: only ptc-fx gets a fresh process; ptc-compile is timed here, marked '*'
    d, text = _run(tmp_path, systems="eager,ptc-fx,ptc-compile")
    res = d["workloads"][0]["systems"]
    assert res["ptc-fx"]["status"] == "ok" and "compiled_cold" in res["ptc-fx"], res["ptc-fx"]
    assert res["ptc-compile"]["status"] == "ok", res["ptc-compile"]
    assert "compiled_cold" not in res["ptc-compile"] and "first_call_inproc_s" not in res["ptc-compile"]
    assert "*" in next(line for line in text.splitlines() if line.startswith("| softmax"))
    # 'all': every ptc system in its own fresh process, no '*'
    d, text = _run(tmp_path, "--cold-systems", "all", systems="eager,ptc-fx,ptc-compile")
    res = d["workloads"][0]["systems"]
    assert all("compiled_cold" in res[s] for s in ("ptc-fx", "ptc-compile")), res
    assert "*" not in next(line for line in text.splitlines() if line.startswith("| softmax"))
