#!/usr/bin/env python3
"""bench/profile_cuda.py - where the GPU time of a vs_torch workload goes, per
system: each system (eager, inductor, ptc-backend, ptc-fx) runs the workload
under torch.profiler, whose CUPTI tracer sees every kernel on the device,
ptc's own (NVRTC-compiled, launched through the Driver API) included, and
cuBLASLt's. Prints per system the GPU time per call, the kernel count per
call, the top kernels by total time and a grouping by kind (GEMM, attention,
reductions, pointwise, copies, other), so the gap between ptc and Inductor
on a model can be read off one run.

Usage (on the GPU machine):
    PTC_PYTHONPATH=build/python python3 bench/profile_cuda.py \
        [--dtype float32|bfloat16] [--only bert,gpt2,resnet18] [--quick]
        [--systems inductor,ptc-backend] [--top 12] [--calls 5]
Needs torch >= 2 with CUDA. Exit status: 0 when every system profiled.
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import vs_torch_models as W  # noqa: E402

KINDS = [("gemm", ("gemm", "sm90_xmma", "sm80_xmma", "cutlass", "ampere", "cublas", "nvjet", "mm_")),
         ("attention", ("flash", "fmha", "attn", "attention")),
         ("conv", ("conv", "im2col", "implicit")),
         ("copy", ("copy", "memcpy", "memset", "transpose", "ptc_copy")),
         ("reduction", ("red", "softmax", "norm", "persist", "welford", "sum", "mean"))]


def kind_of(name):
    low = name.lower()
    for kind, keys in KINDS:
        if any(k in low for k in keys):
            return kind
    return "pointwise/other"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--only", default="bert,gpt2,resnet18")
    p.add_argument("--systems", default="inductor,ptc-backend")
    p.add_argument("--quick", action="store_true", help="the smaller --quick model sizes")
    p.add_argument("--hf", choices=["auto", "yes", "no"], default="auto")
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--calls", type=int, default=5, help="profiled calls (after 3 warm-up calls)")
    p.add_argument("--mode", default=None)
    return p.parse_args()


def make_system(system, spec, mode):
    m = spec.module
    if system == "eager":
        return m
    if system == "inductor":
        return torch.compile(m, mode=mode) if mode else torch.compile(m)
    import ptc
    if system == "ptc-backend":
        import importlib
        return torch.compile(m, backend=importlib.import_module("ptc.backend").make_backend("cuda", mode=mode))
    if system == "ptc-fx":
        gm = spec.trace(m, spec.inputs) if spec.trace else torch.fx.symbolic_trace(m)
        return ptc.from_fx(gm, list(spec.inputs), backend="cuda", mode=mode)
    raise SystemExit(f"unknown system {system}")


def profile(fn, inputs, calls):
    with torch.no_grad():
        for _ in range(3):
            fn(*inputs)
        torch.cuda.synchronize()
        acts = [torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            for _ in range(calls):
                fn(*inputs)
            torch.cuda.synchronize()
    rows = {}
    for e in prof.events():
        dev_t = getattr(e, "device_time", None)
        if dev_t is None:
            dev_t = getattr(e, "cuda_time", 0)
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        r = rows.setdefault(e.name, [0.0, 0])
        r[0] += dev_t
        r[1] += 1
    return rows


def report(system, rows, calls, top):
    total = sum(t for t, _ in rows.values()) / calls
    count = sum(n for _, n in rows.values()) / calls
    print(f"  {system}: {total / 1000:.3f} ms GPU time per call, {count:.0f} kernels per call")
    kinds = {}
    for name, (t, n) in rows.items():
        k = kinds.setdefault(kind_of(name), [0.0, 0])
        k[0] += t / calls
        k[1] += n / calls
    print("    by kind: " + ", ".join(f"{k} {v[0] / 1000:.3f} ms ({v[1]:.0f})"
                                      for k, v in sorted(kinds.items(), key=lambda kv: -kv[1][0])))
    for name, (t, n) in sorted(rows.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"    {t / calls / 1000:8.4f} ms  x{n / calls:5.1f}  {name[:110]}")


def each_system(systems, run, prefix=""):
    """Calls run(system) for each name of the comma-separated `systems`; an
    exception is printed as that system's FAILED line (prefix first) and does not
    stop the others; Dynamo is reset after each. Returns the number that failed."""
    failed = 0
    for system in [s.strip() for s in systems.split(",") if s.strip()]:
        try:
            run(system)
        except Exception as e:  # one system failing must not hide the others
            failed += 1
            print(f"{prefix}{system}: FAILED {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        torch._dynamo.reset()
        sys.stdout.flush()
    return failed


def main():
    a = parse_args()
    if not torch.cuda.is_available():
        print("profile_cuda: no CUDA device")
        return 77
    os.environ.setdefault("PTC_CACHE_DIR", tempfile.mkdtemp(prefix="profile-ptc-"))
    pp = os.environ.get("PTC_PYTHONPATH")
    if pp:
        sys.path.insert(0, pp)
    dtype = getattr(torch, a.dtype)
    failed = 0
    for name in [s.strip() for s in a.only.split(",") if s.strip()]:
        spec = W.build(name, "cuda", dtype, a.quick, a.hf)
        print(f"== {name}: {spec.desc if hasattr(spec, 'desc') else ''} ({a.dtype})")

        def run(system):
            fn = make_system(system, spec, a.mode)
            report(system, profile(fn, spec.inputs, a.calls), a.calls, a.top)

        failed += each_system(a.systems, run, "  ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
