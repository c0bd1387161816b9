#!/usr/bin/env python3
# vs_torch_capture.py - the cost and the reach of ptc.compile's bytecode
# capture (issue 6). Three tables, printed as Markdown (and written as JSON):
#
# 1. Per-call time of a compiled 10-op function on tiny tensors: plain
#    eager; ptc.compile with backend "eager" (guards + dispatch + the captured
#    torch.fx graph run by torch: the capture's own overhead) and "cpu"
#    (libptc's kernels); the FX path (ptc.from_fx on torch.fx.symbolic_trace);
#    torch.compile (Inductor and backend="eager") when torch >= 2. The
#    difference between ptc.compile(backend="cpu") and ptc.from_fx (the same
#    libptc graph) is the frame hook's guard check + runner against
#    from_fx's Python wrapper. Samples of all systems are taken in turn.
# 2. Guards per call site (ptc.explain) for a few function shapes.
# 3. Capture statistics on the test models (an MLP, a hand-written
#    transformer block, torchvision resnet18 and mobilenet_v2 with random
#    weights, functions with graph breaks): graphs, breaks (with reasons),
#    ops captured, guards, first-call time, warm-call time against eager, and
#    the max error against eager.
#
# Usage: PTC_PYTHONPATH=<build>/python /usr/bin/python3 bench/vs_torch_capture.py
#          [--quick] [--json OUT] [--only tiny,guards,models] [--threads N]
#          [--models mlp,transformer,resnet18,mobilenet_v2,breaks]

import argparse
import gc
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="ptc.compile (bytecode capture): overhead and capture statistics")
    p.add_argument("--quick", action="store_true", help="~0.2 s per timing, fewer samples")
    p.add_argument("--json", metavar="OUT", default=None,
                   help="JSON results (default bench/results/vs_torch_capture.json)")
    p.add_argument("--only", default="tiny,guards,models", help="comma-separated tables: tiny,guards,models")
    p.add_argument("--models", default="mlp,transformer,resnet18,mobilenet_v2,breaks",
                   help="comma-separated models of the capture table")
    p.add_argument("--threads", type=int, default=None, help="torch/ptc cpu threads (default: usable CPUs)")
    a = p.parse_args(argv)
    a.only = {s.strip() for s in a.only.split(",") if s.strip()}
    a.models = [s.strip() for s in a.models.split(",") if s.strip()]
    return a


ARGS = parse_args()
if ARGS.threads is None:
    ARGS.threads = int(os.environ.get("OMP_NUM_THREADS", 0)) or len(os.sched_getaffinity(0))
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)

import torch  # noqa: E402

OPENBLAS_DIRS = ["/usr/lib/x86_64-linux-gnu/openblas-openmp", "/usr/lib/x86_64-linux-gnu/openblas-pthread",
                 "/usr/lib/aarch64-linux-gnu/openblas-openmp", "/usr/lib/aarch64-linux-gnu/openblas-pthread"]


def reexec_with_openblas():
    """Debian's torch links libblas.so.3, the netlib reference BLAS unless an
    optimised one is selected: an eager baseline on it is no baseline. Re-runs
    this script with OpenBLAS first on the library path when it is installed
    (as bench/vs_torch.py does)."""
    if os.environ.get("VS_TORCH_CAPTURE_REEXEC"):
        return
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if ".so" in line}
    except OSError:
        return
    if not any("/blas/libblas" in lib for lib in libs):
        return
    for d in OPENBLAS_DIRS:
        if os.path.exists(os.path.join(d, "libblas.so.3")):
            old = os.environ.get("LD_LIBRARY_PATH")
            env = dict(os.environ, VS_TORCH_CAPTURE_REEXEC="1", LD_LIBRARY_PATH=d + (":" + old if old else ""))
            print(f"vs_torch_capture: torch loaded the reference BLAS; re-running with LD_LIBRARY_PATH={d}",
                  file=sys.stderr, flush=True)
            os.execve(sys.executable, [sys.executable] + sys.argv, env)


reexec_with_openblas()
import torch.fx  # noqa: E402
import torch.nn as nn  # noqa: E402

torch.set_num_threads(ARGS.threads)
TORCH_VERSION = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
TORCH2 = TORCH_VERSION >= (2, 0) and hasattr(torch, "compile")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def import_ptc():
    """Imports ptc from $PTC_PYTHONPATH (or sys.path); exits with a clear message."""
    pp = os.environ.get("PTC_PYTHONPATH")
    if pp:
        sys.path.insert(0, pp)
    try:
        import ptc
        ptc.compile  # noqa: B018 - the capture must be there
        return ptc
    except Exception as e:  # noqa: BLE001
        where = f"PTC_PYTHONPATH={pp}" if pp else "PTC_PYTHONPATH is not set"
        sys.exit(f"vs_torch_capture: cannot import ptc with ptc.compile ({type(e).__name__}: {e}); {where}.\n"
                 f"  meson setup /tmp/b -Dpython=enabled && ninja -C /tmp/b\n"
                 f"  PTC_PYTHONPATH=/tmp/b/python {sys.executable} {' '.join(sys.argv)}")


ptc = import_ptc()


# ---- timing ------------------------------------------------------------------------------------
def _plan(fn, args):
    """Warm-up calls; returns `inner`, the calls per sample (a sample >= 5 ms)."""
    for _ in range(3):
        fn(*args)
    t0 = time.perf_counter()
    fn(*args)
    t1 = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(0.005 / t1) + 1), t1


def _sample(fn, args, inner):
    t0 = time.perf_counter()
    for _ in range(inner):
        fn(*args)
    return (time.perf_counter() - t0) / inner


def time_many(cands, target=None):
    """Median seconds per call of each (fn, args) in `cands`, samples taken in
    turn (one sample of each candidate per round) so that load changes on a
    shared machine hit all of them alike; ~1 s per candidate (0.2 s with
    --quick)."""
    target = target or (0.2 if ARGS.quick else 1.0)
    plans = [_plan(fn, args) for fn, args in cands]
    rounds = max(5, min(int(target / max(max(t * i for i, t in plans), 1e-9)), 30 if ARGS.quick else 200))
    times = [[] for _ in cands]
    for _ in range(rounds):
        for k, ((fn, args), (inner, _t)) in enumerate(zip(cands, plans)):
            times[k].append(_sample(fn, args, inner))
    return [statistics.median(t) for t in times]


def per_call(fn, args, target=None):
    """Median seconds per call of one callable."""
    return time_many([(fn, args)], target)[0]


def max_err(out, ref):
    """Max abs error over the tensors of two results (nested tuples/lists/dicts)."""
    def flat(v):
        if isinstance(v, torch.Tensor):
            return [v]
        if isinstance(v, dict):
            return [t for x in v.values() for t in flat(x)]
        if isinstance(v, (list, tuple)):
            return [t for x in v for t in flat(x)]
        return []
    a, b = flat(out), flat(ref)
    if len(a) != len(b):
        return float("inf")
    err = 0.0
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return float("inf")
        if x.numel():
            err = max(err, float((x.detach().double() - y.detach().double()).abs().max()))
    return err


def first_line(e):
    s = str(e).strip().splitlines()
    return f"{type(e).__name__}: {s[0] if s else ''}"


# ---- 1. a 10-op function on tiny tensors --------------------------------------------------------
def ten_ops(x, y):
    a = x + y
    b = a * 2.0
    c = torch.relu(b)
    d = c - x
    e = torch.sigmoid(d)
    f = e * y
    g = torch.tanh(f)
    h = g + 1.0
    i = torch.exp(h)
    return i.mean()


class TenOps(nn.Module):
    def forward(self, x, y):
        return ten_ops(x, y)


def fresh_copy(fn, tag):
    """fn with a code object of its own (the capture caches entries per code
    object, whatever the backend: two ptc.compile wrappers of one function
    would share them)."""
    import types
    code = fn.__code__.replace(co_name=fn.__code__.co_name + "_" + tag)
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)


def tiny_table():
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    args = (x, y)
    ref = ten_ops(*args)
    systems = [("eager", lambda: ten_ops)]
    systems.append(("ptc.compile eager", lambda: ptc.compile(fresh_copy(ten_ops, "eager"), backend="eager")))
    systems.append(("ptc.compile cpu", lambda: ptc.compile(fresh_copy(ten_ops, "cpu"), backend="cpu")))
    systems.append(("torch.fx GraphModule", lambda: torch.fx.symbolic_trace(TenOps())))
    systems.append(("ptc.from_fx cpu", lambda: ptc.from_fx(torch.fx.symbolic_trace(TenOps()), list(args), backend="cpu")))
    if TORCH2:
        systems.append(("torch.compile inductor", lambda: torch.compile(ten_ops)))
        systems.append(("torch.compile eager", lambda: torch.compile(ten_ops, backend="eager")))
    rows = []
    for name, make in systems:
        row = {"system": name}
        try:
            t0 = time.perf_counter()
            fn = make()
            out = fn(*args)
            row["first_ms"] = (time.perf_counter() - t0) * 1e3
            row["err"] = max_err(out, ref)
            row["fn"] = fn
        except Exception as e:  # noqa: BLE001
            row["error"] = first_line(e)
            log(f"tiny / {name}: {traceback.format_exc()}")
        rows.append(row)
    live = [r for r in rows if "fn" in r]
    for r, t in zip(live, time_many([(r["fn"], args) for r in live])):
        r["us"] = t * 1e6
        del r["fn"]
    st = ptc.compile_stats()
    hits_ok = st.get("cache_hits", 0) > 0
    base = next((r["us"] for r in rows if r["system"] == "eager" and "us" in r), None)
    print()
    print("### Per-call time of a 10-op function on 8x8 float32 tensors")
    print()
    print("| system | first call (ms) | warm call (us) | vs eager | max abs err |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        if "error" in r:
            print(f"| {r['system']} | - | - | - | {r['error']} |")
            continue
        ratio = f"{r['us'] / base:.2f}x" if base else "-"
        print(f"| {r['system']} | {r['first_ms']:.1f} | {r['us']:.1f} | {ratio} | {r['err']:.2g} |")
    if not hits_ok:
        print()
        print("WARNING: no ptc.compile cache hits were counted: the compiled rows ran plain Python.")
    pc = next((r for r in rows if r["system"] == "ptc.compile cpu" and "us" in r), None)
    pf = next((r for r in rows if r["system"] == "ptc.from_fx cpu" and "us" in r), None)
    if pc and pf:
        print()
        print(f"ptc.compile cpu minus ptc.from_fx cpu (the same libptc graph behind the frame hook's "
              f"guard check + runner instead of from_fx's Python wrapper): {pc['us'] - pf['us']:+.1f} us per call.")
    return rows


# ---- 2. guards per call site --------------------------------------------------------------------
SCALE = 0.5


def site_tensors(x, y):
    return torch.relu(x) * y


def site_globals(x):
    return x * SCALE + math.pi


class Holder:
    def __init__(self):
        self.k = 3.0
        self.w = torch.randn(8)


HOLDER = Holder()


def site_object(x, h):
    return x * h.k + h.w


def site_containers(xs, cfg):
    out = xs[0]
    for t in xs[1:]:
        out = out + t * cfg["scale"]
    return out


def guards_table():
    mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8)).eval()
    sites = [
        ("f(x, y): two tensors", site_tensors, (torch.randn(8), torch.randn(8))),
        ("f(x): a global float, math.pi", site_globals, (torch.randn(8),)),
        ("f(x, obj): object attributes", site_object, (torch.randn(8), HOLDER)),
        ("f(xs, cfg): list of 3 tensors, dict", site_containers,
         ([torch.randn(8) for _ in range(3)], {"scale": 2.0})),
        ("MLP (Sequential of 3) called in f", lambda x: mlp(x), (torch.randn(2, 8),)),
    ]
    rows = []
    for name, fn, args in sites:
        row = {"site": name}
        try:
            with torch.no_grad():
                e = ptc.explain(fn, *args)
            row.update(guards=len(e.guards), graphs=e.graph_count, breaks=len(e.break_reasons),
                       ops=e.op_count, guard_list=list(e.guards))
            cf = ptc.compile(fresh_copy(fn, "timed") if hasattr(fn, "__code__") else fn, backend="eager")
            with torch.no_grad():
                row["eager_us"], row["us"] = (t * 1e6 for t in time_many([(fn, args), (cf, args)]))
        except Exception as e:  # noqa: BLE001
            row["error"] = first_line(e)
            log(f"guards / {name}: {traceback.format_exc()}")
        rows.append(row)
    print()
    print("### Guards per call site (ptc.explain), and per-call time with backend eager")
    print()
    print("| call site | guards | graphs | ops | eager (us) | ptc.compile eager (us) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        if "error" in r:
            print(f"| {r['site']} | - | - | - | - | {r['error']} |")
            continue
        print(f"| {r['site']} | {r['guards']} | {r['graphs']} | {r['ops']} | {r['eager_us']:.1f} | {r['us']:.1f} |")
    return rows


# ---- 3. capture statistics on models ------------------------------------------------------------
class TransformerBlock(nn.Module):
    """Pre-LN block: causal multi-head attention (mask buffer sliced to T), GELU MLP."""

    def __init__(self, d=64, heads=4, ff=256, max_len=64):
        super().__init__()
        self.d, self.h, self.hd = d, heads, d // heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)).view(1, 1, max_len, max_len))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(self.ln1(x)).split(self.d, dim=2)
        q = q.view(B, T, self.h, self.hd).transpose(1, 2)
        k = k.view(B, T, self.h, self.hd).transpose(1, 2)
        v = v.view(B, T, self.h, self.hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln2(x))


def with_breaks(x):
    """Three graph breaks: print, .item() feeding Python, a data-dependent branch."""
    y = torch.relu(x) * 2
    print("", end="")
    s = y.sum().item()
    y = y / (s + 1.0)
    if y.mean() > 0:
        y = y + 1
    return torch.tanh(y)


def _randomize_bn(model):
    g = torch.Generator().manual_seed(0)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model


def model_cases():
    torch.manual_seed(0)
    cases = {}
    cases["mlp"] = ("MLP 64-256-256-10, batch 8",
                    lambda: nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.ReLU(),
                                          nn.Linear(256, 10)).eval(), lambda: (torch.randn(8, 64),))
    cases["transformer"] = ("transformer block d=64, 4 heads, 2x32 tokens",
                            lambda: TransformerBlock().eval(), lambda: (torch.randn(2, 32, 64),))
    size = 64 if ARGS.quick else 112
    try:
        import torchvision
        cases["resnet18"] = (f"torchvision resnet18, 1x3x{size}x{size}",
                             lambda: _randomize_bn(torchvision.models.resnet18()).eval(),
                             lambda: (torch.randn(1, 3, size, size),))
        cases["mobilenet_v2"] = (f"torchvision mobilenet_v2, 1x3x{size}x{size}",
                                 lambda: _randomize_bn(torchvision.models.mobilenet_v2()).eval(),
                                 lambda: (torch.randn(1, 3, size, size),))
    except ImportError:
        log("torchvision not importable: resnet18 / mobilenet_v2 rows left out")
    cases["breaks"] = ("function with print, .item() and a data-dependent branch",
                       lambda: with_breaks, lambda: (torch.randn(4, 16),))
    return cases


def models_table():
    cases = model_cases()
    rows = []
    for key in ARGS.models:
        if key not in cases:
            continue
        desc, make, make_inputs = cases[key]
        row = {"model": key, "desc": desc}
        try:
            model, inputs = make(), make_inputs()
            # the capture explain takes a plain callable (a module would get the FX report)
            call = (lambda *a, _m=model: _m(*a)) if isinstance(model, nn.Module) else model
            with torch.no_grad():
                ref = model(*inputs)
                e = ptc.explain(call, *inputs)
                row.update(graphs=e.graph_count, breaks=len(e.break_reasons), ops=e.op_count,
                           guards=len(e.guards), reasons=["%s (%s)" % br for br in e.break_reasons])
                ptc.reset()
                cm = ptc.compile(model, backend="cpu")
                t0 = time.perf_counter()
                out = cm(*inputs)
                row["first_s"] = time.perf_counter() - t0
                row["err"] = max_err(out, ref)
                row["scale"] = max(1.0, float(ref.abs().max())) if isinstance(ref, torch.Tensor) else 1.0
                row["eager_ms"], row["ptc_ms"] = (t * 1e3 for t in time_many([(model, inputs), (cm, inputs)]))
        except Exception as e:  # noqa: BLE001
            row["error"] = first_line(e)
            log(f"models / {key}: {traceback.format_exc()}")
        rows.append(row)
        gc.collect()
    print()
    print("### Capture statistics (ptc.explain) and timings, backend cpu, under torch.no_grad()")
    print()
    print("| model | graphs | breaks | ops captured | guards | first call (s) | eager (ms) | ptc.compile (ms) | speed-up | max abs err |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        if "error" in r and "graphs" not in r:
            print(f"| {r['model']} | - | - | - | - | - | - | - | - | {r['error']} |")
            continue
        t = (f"{r['first_s']:.2f} | {r['eager_ms']:.3f} | {r['ptc_ms']:.3f} | {r['eager_ms'] / r['ptc_ms']:.2f}x | "
             f"{r['err']:.2g}" if "ptc_ms" in r else f"- | - | - | - | {r.get('error', '')}")
        print(f"| {r['model']} | {r['graphs']} | {r['breaks']} | {r['ops']} | {r['guards']} | {t} |")
    print()
    print("First call: capture + guards + graph build after ptc.reset(); ptc.explain ran the model just "
          "before, so libptc's kernels come from its disk cache (warm). Guards: all entries of the call.")
    print()
    print("Models:")
    for r in rows:
        extra = ("; breaks: " + "; ".join(r["reasons"])) if r.get("reasons") else ""
        print(f"- {r['model']}: {r['desc']}{extra}")
    return rows


def main():
    meta = {
        "python": platform.python_version(), "torch": torch.__version__,
        "ptc": ptc.version() if hasattr(ptc, "version") else "?",
        "cpu": platform.processor() or platform.machine(), "threads": ARGS.threads,
        "quick": ARGS.quick,
    }
    print("## vs_torch_capture: ptc.compile (bytecode capture)")
    print()
    print(f"- torch {meta['torch']}, ptc {meta['ptc']}, Python {meta['python']}, "
          f"{meta['threads']} threads{', --quick' if ARGS.quick else ''}")
    if not TORCH2:
        print("- torch.compile rows left out (torch < 2)")
    results = {"meta": meta}
    warnings.simplefilter("ignore")
    if "tiny" in ARGS.only:
        results["tiny"] = tiny_table()
    if "guards" in ARGS.only:
        results["guards"] = guards_table()
    if "models" in ARGS.only:
        results["models"] = models_table()
    out = ARGS.json or os.path.join(HERE, "results", "vs_torch_capture.json")
    try:
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            json.dump(results, f, indent=1, default=str)
        log(f"vs_torch_capture: wrote {out}")
    except OSError as e:
        log(f"vs_torch_capture: cannot write {out}: {e}")


if __name__ == "__main__":
    main()
