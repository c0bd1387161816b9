#!/usr/bin/env python3
# vs_torch.py - libptc against PyTorch, in one process and one run, on the
# same inputs: PyTorch eager, torch.compile (Inductor, PyTorch >= 2), ptc
# through the FX bridge (ptc.from_fx on torch.fx.symbolic_trace) and ptc as a
# torch.compile backend (PyTorch >= 2). For each workload and system: the
# first call (compile) time, the median of repeated warm calls, the maximum
# error against eager (rows out of tolerance are marked WRONG), speed-ups of
# ptc, achieved GB/s or GFLOP/s, and the machine's copy bandwidth as the
# ceiling of the memory-bound rows. Prints a Markdown table, writes JSON.
# Workloads and sizes: bench/vs_torch_models.py. How to read it:
# docs/benchmarks.md (section vs_torch).
#
# Usage: PTC_PYTHONPATH=<build>/python /usr/bin/python3 bench/vs_torch.py
#          [--device cpu|cuda] [--dtype float32|bfloat16] [--json OUT]
#          [--only NAME,...] [--systems eager,inductor,ptc-fx,ptc-backend,ptc-compile]
#          [--repeat N] [--quick] [--threads N] [--mode MODE] [--hf auto|yes|no]
#          [--blas auto|system] [--keep-cache] [--compile-in subprocess|process]

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import traceback
import warnings

SYSTEMS = ["eager", "inductor", "ptc-fx", "ptc-backend", "ptc-compile"]
HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="libptc against PyTorch eager and torch.compile")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--json", metavar="OUT", default=None,
                   help="JSON results (default bench/results/vs_torch-<device>-<dtype>.json)")
    p.add_argument("--only", default=None, help="comma-separated workload names (or substrings)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of " + ",".join(SYSTEMS))
    p.add_argument("--repeat", type=int, default=None, help="timed samples per measurement (default: ~1 s worth)")
    p.add_argument("--quick", action="store_true", help="~0.2 s per measurement, smaller models")
    p.add_argument("--threads", type=int, default=None,
                   help="cpu threads for torch and ptc (default: the CPUs this process may use)")
    p.add_argument("--mode", default=None,
                   help="compile mode passed to both torch.compile (Inductor) and ptc "
                        "(e.g. reduce-overhead, max-autotune; default: each one's default)")
    p.add_argument("--hf", choices=["auto", "yes", "no"], default="auto",
                   help="BERT/GPT-2 from transformers (auto: when importable) or hand-written")
    p.add_argument("--blas", choices=["auto", "system"], default="auto",
                   help="cpu: auto re-runs under Debian's OpenBLAS when torch would load the netlib "
                        "reference BLAS and OpenBLAS is installed; system keeps what the loader picks")
    p.add_argument("--no-interleave", action="store_true",
                   help="time each system alone in turn (default: samples of all systems taken in turn)")
    p.add_argument("--keep-cache", action="store_true",
                   help="use the usual ptc/Inductor caches (default: fresh empty ones, so first calls are cold)")
    p.add_argument("--compile-in", choices=["subprocess", "process"], default="subprocess",
                   help="where each ptc system's first call (the compile column) is timed: subprocess "
                        "(default): a fresh process per workload and system (after its own start-up) "
                        "with fresh ptc and NVRTC caches, so no module an earlier system or workload "
                        "loaded or compiled (attention, GEMM, welford, support modules are process-wide; "
                        "NVRTC caches programs) is reused; process: the first call in this process")
    p.add_argument("--cold-systems", default="ptc-fx",
                   help="with --compile-in subprocess: the comma-separated ptc systems whose first "
                        "call is timed in a fresh process (default ptc-fx, the direct one: a fresh "
                        "process costs ~10 s on the GPU machine); 'all' for every ptc system. The "
                        "others, and the model workloads (resnet18, bert, gpt2), report the first "
                        "call in this process, marked '*' in the table")
    p.add_argument("--cold-child", default=None, help=argparse.SUPPRESS)  # NAME:SYSTEM, internal
    a = p.parse_args(argv)
    a.systems = [s.strip() for s in a.systems.split(",") if s.strip()]
    a.cold_systems = [s for s in SYSTEMS if s.startswith("ptc")] if a.cold_systems == "all" else \
        [s.strip() for s in a.cold_systems.split(",") if s.strip()]
    for s in a.systems:
        if s not in SYSTEMS:
            p.error(f"unknown system {s!r} (choose from {', '.join(SYSTEMS)})")
    return a


ARGS = parse_args()

# Thread count and cache folders must be set before torch/ptc start.
if ARGS.device == "cpu":
    if ARGS.threads is None:
        ARGS.threads = int(os.environ.get("OMP_NUM_THREADS", 0)) or len(os.sched_getaffinity(0))
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
CACHE_ROOT = None
if not ARGS.keep_cache:
    CACHE_ROOT = tempfile.mkdtemp(prefix="vs_torch-cache-")
    os.environ["PTC_CACHE_DIR"] = os.path.join(CACHE_ROOT, "ptc")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(CACHE_ROOT, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(CACHE_ROOT, "triton")
    # NVRTC (CUDA 12.9+) keeps its own cache of compiled programs in the
    # driver's compute cache (~/.nv/ComputeCache, CUDA_CACHE_PATH), read when
    # the driver starts: without a fresh one, a module compiled by any
    # earlier process on the machine (a test run, an earlier benchmark) comes
    # back in milliseconds whatever PTC_CACHE_DIR says.
    os.environ["CUDA_CACHE_PATH"] = os.path.join(CACHE_ROOT, "nv")

import torch  # noqa: E402

OPENBLAS_DIRS = ["/usr/lib/x86_64-linux-gnu/openblas-openmp", "/usr/lib/x86_64-linux-gnu/openblas-pthread",
                 "/usr/lib/aarch64-linux-gnu/openblas-openmp", "/usr/lib/aarch64-linux-gnu/openblas-pthread"]


def loaded_blas():
    """Path of the BLAS shared library this process loaded (None if none is visible)."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if ".so" in line}
    except OSError:
        return None
    for name in ("mkl", "openblas", "blis", "libblas"):
        for lib in sorted(libs):
            if name in os.path.basename(lib).lower():
                return lib
    return None


def maybe_reexec_with_openblas():
    """Debian's torch links libblas.so.3, which is the netlib reference BLAS (about
    15x slower at GEMM) unless an optimised one is the selected alternative. A
    baseline on reference BLAS is no baseline: re-run this script with OpenBLAS
    first on the library path when it is installed (libopenblas0-openmp)."""
    if ARGS.blas != "auto" or ARGS.device != "cpu" or os.environ.get("VS_TORCH_REEXEC"):
        return
    blas = loaded_blas()
    if not blas or "/blas/libblas" not in blas:
        return
    for d in OPENBLAS_DIRS:
        if os.path.exists(os.path.join(d, "libblas.so.3")):
            env = dict(os.environ, VS_TORCH_REEXEC="1",
                       LD_LIBRARY_PATH=d + (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else ""))
            if CACHE_ROOT:
                shutil.rmtree(CACHE_ROOT, ignore_errors=True)
            print(f"vs_torch: torch loaded the reference BLAS ({blas}); re-running with "
                  f"LD_LIBRARY_PATH={d} (--blas system to keep it)", file=sys.stderr, flush=True)
            os.execve(sys.executable, [sys.executable] + sys.argv, env)


maybe_reexec_with_openblas()

sys.path.insert(0, HERE)
import vs_torch_models as W  # noqa: E402

TORCH_VERSION = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
TORCH2 = TORCH_VERSION >= (2, 0) and hasattr(torch, "compile")
# Interleaved timing keeps Inductor's and ptc.backend's torch.compile of the same
# module alive together; Dynamo guards cache entries on the backend from 2.2 on.
INTERLEAVE = not ARGS.no_interleave and (not TORCH2 or TORCH_VERSION >= (2, 2))


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def import_ptc():
    """Imports ptc from $PTC_PYTHONPATH (or sys.path); exits with a clear message."""
    pp = os.environ.get("PTC_PYTHONPATH")
    if pp:
        sys.path.insert(0, pp)
    try:
        import ptc
        return ptc
    except Exception as e:  # ImportError, or the extension refusing this Python
        where = f"PTC_PYTHONPATH={pp}" if pp else "PTC_PYTHONPATH is not set"
        sys.exit(f"vs_torch: cannot import ptc ({type(e).__name__}: {e}); {where}.\n"
                 f"Build the binding and point PTC_PYTHONPATH at the build's python/ folder:\n"
                 f"  meson setup /tmp/b && ninja -C /tmp/b\n"
                 f"  PTC_PYTHONPATH=/tmp/b/python {sys.executable} {' '.join(sys.argv)}\n"
                 f"or leave ptc out with --systems eager,inductor.")


# ---- timing -------------------------------------------------------------------------------
def sync():
    if ARGS.device == "cuda":
        torch.cuda.synchronize()


def timed_call(fn, inputs):
    sync()
    t0 = time.perf_counter()
    out = fn(*inputs)
    sync()
    return out, time.perf_counter() - t0


def plan(fn, inputs):
    """Warm-up calls (a short batch for fast calls: its per-call time sizes the
    samples), then (inner, samples): a sample is a batch of `inner` calls
    lasting at least 25 ms (20 with --quick; one call for all but small
    workloads); the samples fill ~1 s (0.2 s with --quick), 3 to 200 of them
    (30 with --quick), or exactly --repeat."""
    target = 0.2 if ARGS.quick else 1.0
    min_sample = 0.02 if ARGS.quick else 0.025
    # warm-up, which also estimates the time of one call
    _, t1 = timed_call(fn, inputs)
    if not ARGS.quick and t1 < 0.5:
        _, t = timed_call(fn, inputs)
        t1 = min(t1, t)
    if t1 < min_sample:
        # a short batch: the first call after a device sync can take several
        # times a warm one (Dynamo's, on the GPU machine ~0.4 ms for a 50 us
        # kernel), and a sample sized from it would hold too few calls for
        # that start to wash out (session 10: ptc-backend rmsnorm 0.084 ms
        # against 0.050 in 200-call batches)
        t1 = min(t1, sample(fn, inputs, max(2, min(50, int(0.002 / max(t1, 1e-7)) + 1))))
    inner = max(1, int(min_sample / max(t1, 1e-7)) + 1) if t1 < min_sample else 1
    if ARGS.repeat:
        samples = ARGS.repeat
    else:
        samples = int(target / max(t1 * inner, 1e-9))
        samples = max(3, min(samples, 30 if ARGS.quick else 200))
    return inner, samples


def sample(fn, inputs, inner):
    """Seconds per call over one batch of `inner` calls, device synchronised at both ends."""
    sync()
    t0 = time.perf_counter()
    for _ in range(inner):
        fn(*inputs)
    sync()
    return (time.perf_counter() - t0) / inner


# ---- outputs and correctness ---------------------------------------------------------------
def flatten(out):
    """Tensors of an output structure (tensor, tuple/list, dict, ModelOutput), in order."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict) or hasattr(out, "to_tuple"):
        if "last_hidden_state" in out:  # a transformers output: the hidden state is what we compare
            return [out["last_hidden_state"]]
        return [t for v in out.values() for t in flatten(v)]
    if isinstance(out, (list, tuple)):
        return [t for v in out for t in flatten(v)]
    return []


def compare(ref, out, tol):
    """(max abs error, normalised error, ok, message)."""
    r, o = flatten(ref), flatten(out)
    if len(r) != len(o):
        return None, None, False, f"{len(o)} outputs, eager has {len(r)}"
    worst_abs, worst_norm = 0.0, 0.0
    for i, (a, b) in enumerate(zip(r, o)):
        if tuple(a.shape) != tuple(b.shape):
            return None, None, False, f"output {i}: shape {tuple(b.shape)}, eager {tuple(a.shape)}"
        if a.dtype != b.dtype:
            return None, None, False, f"output {i}: dtype {b.dtype}, eager {a.dtype}"
        if a.numel() == 0:
            continue
        a32, b32 = a.detach().float(), b.detach().float()
        if a32.device != b32.device:
            b32 = b32.to(a32.device)
        nan_mismatch = bool((torch.isnan(a32) != torch.isnan(b32)).any())
        diff = (a32 - b32).abs()
        diff = torch.where(torch.isnan(a32) & torch.isnan(b32), torch.zeros_like(diff), diff)
        same_inf = torch.isinf(a32) & (a32 == b32)
        diff = torch.where(same_inf, torch.zeros_like(diff), diff)
        err = float(diff.max()) if not nan_mismatch else float("inf")
        finite = a32[torch.isfinite(a32)]
        scale = max(1.0, float(finite.abs().max())) if finite.numel() else 1.0
        worst_abs = max(worst_abs, err)
        worst_norm = max(worst_norm, err / scale)
    ok = worst_norm <= tol
    return worst_abs, worst_norm, ok, "" if ok else f"max abs err {worst_abs:.3g} (normalised {worst_norm:.3g} > tol {tol:g})"


# ---- systems -------------------------------------------------------------------------------
def first_line(e):
    s = str(e).strip().splitlines()
    return f"{type(e).__name__}: {s[0] if s else ''}"


def ptc_backend_for(ptc):
    """A fresh torch.compile backend for this device (its .compiled and .fallbacks
    tell what happened to each graph Dynamo handed it), or plain ptc.backend."""
    import importlib
    try:
        return importlib.import_module("ptc.backend").make_backend(ARGS.device, mode=ARGS.mode)
    except (ImportError, AttributeError):
        if ARGS.mode:
            raise RuntimeError("--mode needs ptc.backend.make_backend")
        return ptc.backend


def prepare(system, spec, ptc, r):
    """A callable running `spec.module` under `system` (compilation may be lazy)."""
    m = spec.module
    if system == "eager":
        return m
    if system == "inductor":
        return torch.compile(m, mode=ARGS.mode) if ARGS.mode else torch.compile(m)
    if system == "ptc-backend":
        r["_backend"] = ptc_backend_for(ptc)
        return torch.compile(m, backend=r["_backend"])
    if system == "ptc-compile":
        # ptc's own bytecode capture (ptc.compile, no torch.compile involved)
        r["_stats0"] = ptc.compile_stats()
        return ptc.compile(m, backend=ARGS.device, mode=ARGS.mode)
    if system == "ptc-fx":
        gm = spec.trace(m, spec.inputs) if spec.trace else torch.fx.symbolic_trace(m)
        r["tracer"] = getattr(gm, "tracer_used", "torch.fx.symbolic_trace")
        return ptc.from_fx(gm, list(spec.inputs), backend=ARGS.device, mode=ARGS.mode)
    raise KeyError(system)


def ptc_details(system, fn, r):
    """Kernel counts, graph counts and eager fallbacks of a ptc system (for the JSON
    and the fallback marking); never raises."""
    try:
        if system == "ptc-fx":
            exes = fn.compiled.executables
            r["kernels"] = exes[-1].num_kernels if exes else None
            r["num_compiles"] = fn.compiled.num_compiles
        elif system == "ptc-compile":
            s0, s1 = r.pop("_stats0", {}), sys.modules["ptc"].compile_stats()
            r["graphs"] = s1.get("graphs", 0) - s0.get("graphs", 0)
            r["breaks"] = s1.get("breaks", 0) - s0.get("breaks", 0)
        elif system == "ptc-backend":
            b = r.pop("_backend", None)
            if b is not None and hasattr(b, "compiled"):
                r["graphs"] = len(b.compiled)
                r["kernels"] = sum(c.compiled.executables[-1].num_kernels
                                   for c in b.compiled if c.compiled.executables)
                r["fallbacks"] = list(b.fallbacks)
                r["eager_calls"] = sum(getattr(c, "eager_calls", 0) for c in b.compiled)
                if not b.compiled and not b.fallbacks:
                    r["fallbacks"] = ["Dynamo never called ptc.backend: nothing ran through ptc"]
    except Exception as e:
        r["details_error"] = first_line(e)


def _error(r, e):
    r.pop("_backend", None)
    return dict(status="error", error=first_line(e), message=str(e),
                traceback=traceback.format_exc(), **{k: v for k, v in r.items() if k != "status"})


def cache_compiles(folder):
    """What the ptc kernel cache under `folder` holds: one entry per compiled
    binary (cuda .cubin, cpu .so), the first line of its source kept beside it
    when there is one (e.g. '// libptc float32 attention kernel (...)'; the
    cuda backend keeps a miss's source only on errors), else the file name."""
    out = []
    for root, _, files in os.walk(folder):
        for f in files:
            stem, ext = os.path.splitext(f)
            if ext not in (".cubin", ".so"):
                continue
            label = f[:16] + "..." + ext
            for src in (".cu", ".c"):
                try:
                    with open(os.path.join(root, stem + src), errors="replace") as fh:
                        label = fh.readline().strip()[:80]
                    break
                except OSError:
                    pass
            out.append(label)
    return sorted(out)


def cold_first_call(name, system):
    """First call (seconds) of `system` on workload `name` in a fresh process of
    this script (--cold-child): its own start-up first (as startup() here), then
    the timed first call with an empty ptc cache folder. Returns (seconds, what
    the child's cache folder compiled); raises RuntimeError when the child fails."""
    import subprocess
    argv = [sys.executable, os.path.abspath(__file__), "--device", ARGS.device, "--dtype", ARGS.dtype,
            "--hf", ARGS.hf, "--blas", ARGS.blas, "--cold-child", f"{name}:{system}"]
    if ARGS.quick:
        argv.append("--quick")
    if ARGS.mode:
        argv += ["--mode", ARGS.mode]
    if ARGS.keep_cache:
        argv.append("--keep-cache")
    if ARGS.threads:
        argv += ["--threads", str(ARGS.threads)]
    env = dict(os.environ)
    if not ARGS.keep_cache:  # the child makes its own fresh folders (ptc, NVRTC / driver, Inductor)
        for k in ("PTC_CACHE_DIR", "CUDA_CACHE_PATH", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
            env.pop(k, None)
        env["CUDA_CACHE_DISABLE"] = "1"  # and no NVRTC program cache at all in the child
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)
    for line in p.stdout.splitlines():
        if line.startswith("COLD_FIRST_CALL "):
            d = json.loads(line[len("COLD_FIRST_CALL "):])
            return d["first_call_s"], d.get("compiled", [])
    tail = " | ".join((p.stderr or "").strip().splitlines()[-3:])
    raise RuntimeError(f"cold child exited {p.returncode}: {tail}")


MODEL_WORKLOADS = ("resnet18", "bert", "gpt2")


def cold_in_subprocess(name, system):
    """Whether the compile column of `system` on workload `name` comes from a
    fresh process: --compile-in subprocess, a system of --cold-systems, and a
    micro workload (the cold-compile target is per micro workload; the models'
    first calls are timed in this process)."""
    return (ARGS.compile_in == "subprocess" and system.startswith("ptc") and system in ARGS.cold_systems
            and name not in MODEL_WORKLOADS)


def cold_child_main(ptc):
    """--cold-child NAME:SYSTEM: start-up of SYSTEM, then its timed first call on
    workload NAME with an empty cache folder; prints COLD_FIRST_CALL {json}."""
    name, system = ARGS.cold_child.split(":", 1)
    startup([system], ptc)
    dtype = getattr(torch, ARGS.dtype)
    spec = W.build(name, ARGS.device, dtype, ARGS.quick, ARGS.hf)
    folder = None
    if CACHE_ROOT:
        folder = os.path.join(CACHE_ROOT, "ptc", f"{name}-{system}-cold")
        os.environ["PTC_CACHE_DIR"] = folder
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sync()
        t0 = time.perf_counter()
        fn = prepare(system, spec, ptc, {})
        fn(*spec.inputs)
        sync()
        dt = time.perf_counter() - t0
    print("COLD_FIRST_CALL " + json.dumps(dict(first_call_s=dt, compiled=cache_compiles(folder) if folder else [])),
          flush=True)


def setup_system(system, spec, ref, ptc, tol, ref_s):
    """Prepares `system` on the workload: first call (timed: the compile), check
    against eager, warm-up and sampling plan. Returns (result dict, fn or None).
    Eager's first call is the one that computed `ref` (it took `ref_s`)."""
    r = dict(status="ok")
    if system in ("inductor", "ptc-backend") and not TORCH2:
        return dict(status="n/a", why="n/a (torch<2)"), None
    if system == "eager":
        r["first_call_s"] = ref_s
        try:
            with torch.no_grad():
                r["inner"], r["samples"] = plan(spec.module, spec.inputs)
            return r, spec.module
        except Exception as e:
            return _error(r, e), None
    if CACHE_ROOT and system.startswith("ptc"):
        # libptc reads PTC_CACHE_DIR at every compile: a fresh folder per workload
        # and system keeps each first call cold (ptc-backend would otherwise hit
        # the kernels ptc-fx just compiled).
        os.environ["PTC_CACHE_DIR"] = os.path.join(CACHE_ROOT, "ptc", f"{spec.name}-{system}")
    fn = None
    try:
        gc.collect()
        with torch.no_grad():
            sync()
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fn = prepare(system, spec, ptc, r)
                out = fn(*spec.inputs)
                sync()
            r["first_call_s"] = time.perf_counter() - t0
            r["warnings"] = sorted({str(x.message) for x in caught if "ptc" in str(x.message)})
            if CACHE_ROOT and system.startswith("ptc"):
                r["compiled"] = cache_compiles(os.environ["PTC_CACHE_DIR"])
            if system != "eager":
                abs_err, norm_err, ok, msg = compare(ref, out, tol)
                r.update(max_abs_err=abs_err, norm_err=norm_err, tol=tol)
                if not ok:
                    r["status"] = "WRONG"
                    r["wrong"] = msg
            del out
        if cold_in_subprocess(spec.name, system):
            # the compile column: a fresh process, so that no module loaded here
            # by an earlier system or workload is reused
            r["first_call_inproc_s"] = r["first_call_s"]
            try:
                r["first_call_s"], r["compiled_cold"] = cold_first_call(spec.name, system)
            except Exception as e:  # noqa: BLE001
                r["cold_error"] = first_line(e)
        with torch.no_grad():
            r["inner"], r["samples"] = plan(fn, spec.inputs)
        return r, fn
    except Exception as e:
        return _error(r, e), None


def finish_system(system, fn, r, times):
    r["median_s"] = statistics.median(times)
    r["min_s"], r["max_s"] = min(times), max(times)
    if system.startswith("ptc"):
        ptc_details(system, fn, r)
        if r.get("fallbacks") or r.get("eager_calls"):
            r["eager_fallback"] = True


def _release(device_too=True):
    gc.collect()
    if device_too and ARGS.device == "cuda":
        torch.cuda.empty_cache()


def run_workload(spec, ref, ref_s, systems, ptc, tol):
    """Every system on one workload. With INTERLEAVE, all systems are prepared
    first and their timed samples then taken in turn (eager, inductor, ptc-fx,
    ptc-backend, eager, ...), so load from other processes that comes and goes
    hits every system alike; otherwise each system is timed and released in turn."""
    res = {}
    if TORCH2:
        torch._dynamo.reset()
    live = {}
    for s in systems:
        r, fn = setup_system(s, spec, ref, ptc, tol, ref_s)
        res[s] = r
        log(f"  {s:12s} {r['status']:6s}"
            + (f"  first call {r['first_call_s']:.2f} s" if "first_call_s" in r else "")
            + (f" (fresh process, {len(r['compiled_cold'])} compiled; here {r['first_call_inproc_s']:.2f} s, "
               f"{len(r.get('compiled', []))} compiled)" if "compiled_cold" in r else "")
            + (f" (in this process: {r['cold_error']})" if "cold_error" in r else "")
            + (f"  err {r['max_abs_err']:.2e}" if r.get("max_abs_err") is not None else "")
            + (f"  {r['error']}" if r["status"] == "error" else "")
            + (f"  {r.get('why', '')}" if r["status"] == "n/a" else ""))
        if fn is None:
            continue
        live[s] = [fn, []]
        if not INTERLEAVE:
            _time_round_robin(spec, res, {s: live.pop(s)})
            if s in ("inductor", "ptc-backend"):
                torch._dynamo.reset()
            _release()
    if live:
        _time_round_robin(spec, res, live)
    if TORCH2:
        torch._dynamo.reset()
    if hasattr(ptc, "reset"):
        ptc.reset()  # ptc.compile's cache entries of this workload
    _release()
    return res


def _time_round_robin(spec, res, live):
    """Takes each live system's samples in turn, then finishes their results."""
    with torch.no_grad():
        while True:
            pending = [s for s, (fn, times) in live.items()
                       if res[s]["status"] != "error" and len(times) < res[s]["samples"]]
            if not pending:
                break
            for s in pending:
                fn, times = live[s]
                try:
                    times.append(sample(fn, spec.inputs, res[s]["inner"]))
                except Exception as e:
                    res[s] = _error(res[s], e)
    for s, (fn, times) in live.items():
        if res[s]["status"] != "error":
            finish_system(s, fn, res[s], times)
            log(f"  {s:12s} {res[s]['median_s'] * 1e3:.3f} ms (median of {len(times)} x {res[s]['inner']})")
    for s in list(live):
        live[s][0] = None
    live.clear()


class _Startup(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x * 3.0 - 1.0)


def startup(systems, ptc):
    """Compiles a trivial module once per compiling system before the workloads, so
    one-time process start-up (Inductor's compile workers and first C++ build,
    Dynamo's import) is reported once here and not charged to the first workload.
    Returns {system: seconds}; failures are left to the workloads to report."""
    spec = W.Spec("startup", "tiny", "", _Startup().to(ARGS.device).eval(),
                  (torch.randn(8, 3, device=ARGS.device),), "pointwise")
    out = {}
    for s in systems:
        if s == "eager" or (s in ("inductor", "ptc-backend") and not TORCH2):
            continue
        if CACHE_ROOT and s.startswith("ptc"):
            os.environ["PTC_CACHE_DIR"] = os.path.join(CACHE_ROOT, "ptc", "startup-" + s)
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sync()
                t0 = time.perf_counter()
                fn = prepare(s, spec, ptc, {})
                fn(*spec.inputs)
                sync()
                out[s] = time.perf_counter() - t0
                del fn
        except Exception as e:
            log(f"start-up of {s} failed: {first_line(e)}")
        if s in ("inductor", "ptc-backend"):
            torch._dynamo.reset()
    return out


# ---- machine --------------------------------------------------------------------------------
def last_level_cache_bytes():
    """Size of the CPU's largest cache level (0 if unknown), from sysfs."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for d in os.listdir(base):
            try:
                with open(os.path.join(base, d, "size")) as f:
                    txt = f.read().strip().upper()
            except OSError:
                continue
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(txt[-1:], 1)
            num = txt.rstrip("KMG")
            if num.isdigit():
                best = max(best, int(num) * mult)
    except OSError:
        pass
    return best


def copy_bandwidth():
    """GB/s of dst.copy_(src) (read + write bytes, median) on a float tensor of
    1 GiB on cuda, on cpu of 256 MiB or twice the last-level cache, whichever
    is larger (so that it streams from DRAM)."""
    nbytes = (1 << 30) if ARGS.device == "cuda" else max(256 << 20, 2 * last_level_cache_bytes())
    nbytes = nbytes // 4096 * 4096
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=ARGS.device)
    dst = torch.empty_like(src)
    for _ in range(2):
        dst.copy_(src)
    times = []
    for _ in range(5 if ARGS.quick else 15):
        sync()
        t0 = time.perf_counter()
        dst.copy_(src)
        sync()
        times.append(time.perf_counter() - t0)
    del src, dst
    return 2 * nbytes / statistics.median(times) / 1e9


def machine_info(ptc):
    info = dict(python=platform.python_version(), torch=torch.__version__,
                device=ARGS.device, dtype=ARGS.dtype, platform=platform.platform())
    if ARGS.device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cuda"] = torch.version.cuda
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info["cpu"] = model
    info["cpus"] = len(os.sched_getaffinity(0))
    info["torch_threads"] = torch.get_num_threads()
    info["loadavg_start"] = os.getloadavg()
    mkl = getattr(getattr(torch.backends, "mkl", None), "is_available", lambda: False)()
    info["blas"] = "MKL (linked into torch)" if mkl else (loaded_blas() or "not loaded / static")
    if ptc is not None:
        info["ptc"] = ptc.version()
        try:
            info["ptc_backends"] = [list(b) for b in ptc.backends()]
        except Exception as e:
            info["ptc_backends"] = first_line(e)
    try:
        import torchvision
        info["torchvision"] = torchvision.__version__
    except Exception:
        pass
    t = W._transformers()
    if t is not None:
        info["transformers"] = t.__version__
    return info


# ---- report ---------------------------------------------------------------------------------
def fmt_time(w, r):
    if r is None:
        return "-"
    if r["status"] == "n/a":
        return r["why"]
    if r["status"] == "error":
        msg = r["error"]
        return "error: " + (msg if len(msg) <= 48 else msg[:45] + "...")
    t = r["median_s"] * (1e6 if w["kind"] == "tiny" else 1e3)
    s = f"{t:.1f}" if t >= 10 else f"{t:.3g}"
    if w["kind"] == "tiny":
        s += " us"
    if r.get("eager_fallback"):
        n = len(r.get("fallbacks", []))
        s += f" (eager fallback: {n} of {n + r.get('graphs', 0)} graphs)" if n else " (eager fallback)"
    if r.get("breaks"):
        s += f" ({r.get('graphs', 0)} graphs, {r['breaks']} breaks)"
    return s + (" WRONG" if r["status"] == "WRONG" else "")


def ptc_choice(res):
    """The ptc system the ratios use: ptc-backend when it ran (same Dynamo capture
    as Inductor), else ptc-compile (ptc's own capture), else ptc-fx."""
    for s in ("ptc-backend", "ptc-compile", "ptc-fx"):
        r = res.get(s)
        if r and r["status"] in ("ok", "WRONG") and "median_s" in r:
            return s
    return None


def ratio(res, base, p):
    b, q = res.get(base), res.get(p) if p else None
    if not b or not q or "median_s" not in b or "median_s" not in q:
        return None
    return b["median_s"] / q["median_s"]


def fastest_ptc(res):
    """The ptc system with the lowest median (the tiny row: what a caller
    choosing its path gets per call), or None."""
    runs = [(r["median_s"], s) for s, r in res.items()
            if s.startswith("ptc") and r.get("status") == "ok" and "median_s" in r]
    return min(runs)[1] if runs else None


def summarise(w, ceiling):
    res = w["systems"]
    p = fastest_ptc(res) if w.get("kind") == "tiny" else ptc_choice(res)
    w["ptc_used"] = p
    w["speedup_vs_eager"] = ratio(res, "eager", p)
    w["speedup_vs_inductor"] = ratio(res, "inductor", p)
    for s, r in res.items():
        if "median_s" in r:
            if w["kind"] == "mem" and w["bytes"]:
                r["gbps"] = w["bytes"] / r["median_s"] / 1e9
                r["pct_of_copy"] = 100.0 * r["gbps"] / ceiling if ceiling else None
            elif w["kind"] == "flops" and w["flops"]:
                r["gflops"] = w["flops"] / r["median_s"] / 1e9


def throughput_cell(w):
    r = w["systems"].get(w.get("ptc_used") or "", None)
    if not r:
        return "-"
    if "gbps" in r:
        return f"{r['gbps']:.1f} GB/s ({r['pct_of_copy']:.0f}%)"
    if "gflops" in r:
        return f"{r['gflops']:.0f} GFLOP/s"
    return "-"


def compile_cell(w, systems):
    parts = []
    for s in systems:
        if s == "eager":
            continue
        r = w["systems"].get(s)
        cell = f"{r['first_call_s']:.2f}" if r and "first_call_s" in r and r["status"] != "error" else "-"
        if cell != "-" and ARGS.compile_in == "subprocess" and s.startswith("ptc") and "compiled_cold" not in r:
            cell += "*"  # timed in this process (not a --cold-systems system, a model, or the child failed)
        parts.append(cell)
    return " / ".join(parts)


def dynamo_floor(spec):
    """Seconds per call of torch.compile on the tiny workload with a backend
    whose callable returns a fixed output: Dynamo's own guard check and
    wrappers, the floor under any torch.compile backend (ptc-backend
    included). None when it cannot be measured."""
    if not TORCH2:
        return None
    try:
        def floor(gm, example_inputs):
            outs = gm(*example_inputs)
            return lambda *args: outs
        torch._dynamo.reset()
        fn = torch.compile(spec.module, backend=floor)
        with torch.no_grad():
            inner, samples = plan(fn, spec.inputs)
            times = [sample(fn, spec.inputs, inner) for _ in range(samples)]
        torch._dynamo.reset()
        return statistics.median(times)
    except Exception as e:  # noqa: BLE001
        log(f"dynamo floor: {first_line(e)}")
        return None


def print_report(meta, results, systems):
    short = {"eager": "eager", "inductor": "inductor", "ptc-fx": "ptc-fx", "ptc-backend": "ptc-backend",
             "ptc-compile": "ptc-compile"}
    compiled = [s for s in systems if s != "eager"]
    ran = [s for s in compiled if not (s in ("inductor", "ptc-backend") and not TORCH2)]
    print()
    print(f"## vs_torch: {meta['device']} {meta['dtype']}" + (f", mode {ARGS.mode}" if ARGS.mode else ""))
    print()
    if meta["device"] == "cuda":
        print(f"- GPU: {meta.get('gpu')} (CUDA {meta.get('cuda')})")
    print(f"- CPU: {meta['cpu']}, {meta['cpus']} CPUs usable, torch threads {meta['torch_threads']}; "
          f"load average {meta['loadavg_start'][0]:.1f} at the start, {meta['loadavg_end'][0]:.1f} at the end "
          f"(other processes share the CPUs when it exceeds {meta['cpus']})")
    if meta["device"] == "cpu":
        print(f"- torch's BLAS: {meta['blas']}")
    print(f"- torch {meta['torch']}, ptc {meta.get('ptc', 'not loaded')}, Python {meta['python']}"
          + (f", torchvision {meta['torchvision']}" if "torchvision" in meta else "")
          + (f", transformers {meta['transformers']}" if "transformers" in meta else ""))
    if meta.get("startup_s"):
        print("- one-time start-up, first compile of a trivial module in the process (not in the "
              "compile column): " + ", ".join(f"{k} {v:.2f} s" for k, v in meta["startup_s"].items()))
    llc = f"; last-level cache {meta['llc_bytes'] >> 20} MiB" if meta.get("llc_bytes") and meta["device"] == "cpu" else ""
    print(f"- copy bandwidth (dst.copy_(src), read+write): {meta['copy_gbps']:.1f} GB/s "
          f"= the memory ceiling of the memory-bound rows{llc}")
    print(f"- times: median of warm calls, ms (tiny: us per call); ratios are speed-ups of ptc "
          f"(>1 = ptc faster), ptc = ptc-backend when it ran, else ptc-compile, else ptc-fx "
          f"(column 'ratios of'; the tiny row: the fastest ptc system, its per-call host time); "
          f"throughput: ptc's GB/s (% of the copy bandwidth) or GFLOP/s; "
          f"compile: first call in s ({' / '.join(ran)}); caches {'kept' if meta['keep_cache'] else 'cold'}"
          + (f"; the first call of {', '.join(ARGS.cold_systems)} on each micro workload in a fresh "
             f"process after its own start-up (--compile-in, --cold-systems), '*' = in this process"
             if ARGS.compile_in == "subprocess" else "; ptc first calls in this process (may reuse modules "
             "an earlier system or workload loaded or NVRTC cached)"))
    print()
    head = ["workload"] + [f"{short[s]} ms" for s in systems] + \
        ["ptc/eager", "ptc/inductor", "ratios of", "throughput", "compile s"]
    rows = []
    for w in results:
        if w.get("status") == "n/a":
            rows.append([w["name"], w["why"]] + [""] * (len(systems) + 4))
            continue
        if w.get("status") == "error":
            rows.append([w["name"]] + ["error: " + w["error"][:45]] + [""] * (len(systems) + 4))
            continue
        res = w["systems"]
        rr = [w["name"]] + [fmt_time(w, res.get(s)) for s in systems]
        se, si = w["speedup_vs_eager"], w["speedup_vs_inductor"]
        rr.append(f"{se:.2f}x" if se else "-")
        rr.append(f"{si:.2f}x" if si else ("n/a (torch<2)" if not TORCH2 else "-"))
        rr.append(w.get("ptc_used") or "-")
        rr.append(throughput_cell(w))
        rr.append(compile_cell(w, ["eager"] + ran))
        rows.append(rr)
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(" --- " for _ in head) + "|")
    for rr in rows:
        print("| " + " | ".join(rr) + " |")
    for w in results:
        if w.get("dynamo_floor_s"):
            print(f"\n{w['name']}: torch.compile's own per-call cost (Dynamo's guards and wrappers, "
                  f"measured with a backend returning a fixed output) is "
                  f"{w['dynamo_floor_s'] * 1e6:.1f} us of every torch.compile system's time "
                  f"(inductor, ptc-backend)")
    print()
    print("Workloads:")
    for w in results:
        extra = f" [{w['note']}]" if w.get("note") else ""
        tr = w.get("systems", {}).get("ptc-fx", {}).get("tracer")
        if tr and tr != "torch.fx.symbolic_trace":
            extra += f" [ptc-fx traced with {tr}]"
        print(f"- {w['name']}: {w.get('desc') or w.get('why') or w.get('error', '')}{extra}")
    print()
    print("Max abs error against eager (normalised error = abs / max(1, max|eager|)):")
    for w in results:
        cells = []
        for s in compiled:
            r = w.get("systems", {}).get(s)
            if r and r.get("max_abs_err") is not None:
                flag = " WRONG" if r["status"] == "WRONG" else ""
                cells.append(f"{s} {r['max_abs_err']:.2e}{flag}")
            elif r and r.get("status") == "WRONG":
                cells.append(f"{s} WRONG ({r['wrong']})")
        if cells:
            print(f"- {w['name']}: " + ", ".join(cells) + f" (tol {w.get('tol', 0):g})")
    errors = [(w["name"], s, r) for w in results for s, r in w.get("systems", {}).items()
              if r["status"] == "error"]
    if errors:
        print()
        print("Errors (full message):")
        for name, s, r in errors:
            msg = r["message"].strip().replace("\n", "\n    ")
            print(f"- {name} / {s}: {r['error'].split(':', 1)[0]}: {msg}")
    falls = [(w["name"], s, r) for w in results for s, r in w.get("systems", {}).items()
             if r.get("eager_fallback") or r.get("warnings")]
    if falls:
        print()
        print("ptc warnings and eager fallbacks:")
        for name, s, r in falls:
            for msg in sorted(set(r.get("fallbacks", [])) | set(r.get("warnings", []))):
                print(f"- {name} / {s}: " + msg.strip().replace("\n", "\n    "))


# ---- main -----------------------------------------------------------------------------------
def select(names):
    if not ARGS.only:
        return names
    wanted = [x.strip() for x in ARGS.only.split(",") if x.strip()]
    out = [n for n in names if any(n == x for x in wanted) or any(x in n for x in wanted)]
    if not out:
        sys.exit(f"vs_torch: --only {ARGS.only}: no workload matches (have {', '.join(names)})")
    return out


def main():
    if ARGS.device == "cuda" and not torch.cuda.is_available():
        sys.exit("vs_torch: --device cuda but torch.cuda.is_available() is False")
    if ARGS.device == "cpu":
        torch.set_num_threads(ARGS.threads)
    dtype = getattr(torch, ARGS.dtype)
    systems = ARGS.systems
    ptc = import_ptc() if any(s.startswith("ptc") for s in systems) else None
    if ARGS.cold_child:
        cold_child_main(ptc if ptc else import_ptc())
        if CACHE_ROOT:
            shutil.rmtree(CACHE_ROOT, ignore_errors=True)
        return

    meta = machine_info(ptc)
    meta["keep_cache"] = ARGS.keep_cache
    meta["args"] = {k: v for k, v in vars(ARGS).items()}
    log(f"vs_torch: {meta['device']} {meta['dtype']}, torch {meta['torch']}, "
        f"ptc {meta.get('ptc', '-')}, threads {meta['torch_threads']}")
    meta["llc_bytes"] = last_level_cache_bytes()
    meta["copy_gbps"] = copy_bandwidth()
    log(f"copy bandwidth {meta['copy_gbps']:.1f} GB/s")

    meta["startup_s"] = startup(systems, ptc)
    if meta["startup_s"]:
        log("start-up (first compile in the process): " +
            ", ".join(f"{k} {v:.2f} s" for k, v in meta["startup_s"].items()))

    results = []
    t_start = time.perf_counter()
    for name in select(W.WORKLOADS):
        w = dict(name=name)
        try:
            spec = W.build(name, ARGS.device, dtype, ARGS.quick, ARGS.hf)
        except W.NotApplicable as e:
            w.update(status="n/a", why=f"n/a ({e})")
            results.append(w)
            log(f"{name}: n/a ({e})")
            continue
        except Exception as e:
            w.update(status="error", error=first_line(e), traceback=traceback.format_exc())
            results.append(w)
            log(f"{name}: build error: {first_line(e)}")
            continue
        tol = W.TOLERANCE[dtype][spec.tol]
        w.update(kind=spec.kind, desc=spec.desc, note=spec.note, bytes=spec.bytes,
                 flops=spec.flops, tol=tol, systems={},
                 inputs=[dict(shape=list(t.shape), dtype=str(t.dtype)) for t in spec.inputs])
        log(f"{name}: {spec.desc}{' [' + spec.note + ']' if spec.note else ''}")
        try:
            with torch.no_grad():
                ref, ref_s = timed_call(spec.module, spec.inputs)
        except Exception as e:
            w.update(status="error", error="eager: " + first_line(e), traceback=traceback.format_exc())
            results.append(w)
            log(f"{name}: eager error: {first_line(e)}")
            continue
        w["systems"] = run_workload(spec, ref, ref_s, systems, ptc, tol)
        if spec.kind == "tiny" and "ptc-backend" in systems:
            w["dynamo_floor_s"] = dynamo_floor(spec)
        summarise(w, meta["copy_gbps"])
        results.append(w)
        del spec, ref
        gc.collect()
    meta["total_s"] = time.perf_counter() - t_start
    meta["loadavg_end"] = os.getloadavg()

    print_report(meta, results, systems)
    out = ARGS.json or os.path.join(HERE, "results", f"vs_torch-{ARGS.device}-{ARGS.dtype}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(dict(meta=meta, workloads=results), f, indent=1, default=str)
    log(f"\nwrote {out} (total {meta['total_s']:.0f} s)")
    if CACHE_ROOT:
        shutil.rmtree(CACHE_ROOT, ignore_errors=True)


if __name__ == "__main__":
    main()
