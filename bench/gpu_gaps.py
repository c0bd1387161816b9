#!/usr/bin/env python3
"""bench/gpu_gaps.py - whether a vs_torch workload is GPU bound or host bound,
per system: the wall time per call over 300 back-to-back calls (best of 3),
the host's issue time per call (the same calls before the final
synchronise), and from torch.profiler over 40 calls the kernels per call,
their mean GPU time and the mean / largest idle gap between consecutive
kernels. A system whose wall time is its kernel time plus small gaps is GPU
bound; one whose issue time reaches its wall time is host bound. With
--start, also what a batch of n calls costs after a device sync (as
vs_torch's samples start), fitted as start + n * per-call, and the host
time of the first call after the sync.

Usage (on the GPU machine):
    PTC_PYTHONPATH=build/python python3 bench/gpu_gaps.py \
        [--only sdpa,attention] [--systems eager,inductor,ptc-fx,ptc-backend] \
        [--dtype bfloat16|float32] [--start]
Exit status: 0 when every system ran, 77 without a CUDA device.
"""
import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import profile_cuda as P  # noqa: E402
import vs_torch_models as W  # noqa: E402


def wall_and_issue(fn, inputs, calls=300):
    """(best wall seconds per call, issue seconds per call of that round)."""
    best, issue = None, None
    for _ in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*inputs)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / calls
        if best is None or wall < best:
            best, issue = wall, (t1 - t0) / calls
    return best, issue


def sample_start(fn, inputs, sizes=(1, 4, 16, 64, 137), reps=15):
    """What a batch of n calls costs after a device sync, as vs_torch's samples
    are taken: the median seconds of each batch size, fitted as start + n *
    per_call (least squares); also the median host time of the first call
    after the sync. Returns (start us, per-call us, first-call host us)."""
    pts, first = [], []
    for n in sizes:
        ts = []
        for _ in range(reps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn(*inputs)
            first.append(time.perf_counter() - t0)
            for _ in range(n - 1):
                fn(*inputs)
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t0)
        ts.sort()
        pts.append((n, ts[len(ts) // 2]))
    mx = sum(n for n, _ in pts) / len(pts)
    my = sum(t for _, t in pts) / len(pts)
    b = sum((n - mx) * (t - my) for n, t in pts) / sum((n - mx) ** 2 for n, _ in pts)
    first.sort()
    return (my - b * mx) * 1e6, b * 1e6, first[len(first) // 2] * 1e6


def kernel_gaps(fn, inputs, calls=40):
    """Kernels of the profiled calls (the first quarter dropped): count per
    call, mean duration, mean and largest gap between them, in us."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(*inputs)
        torch.cuda.synchronize()
    ks = sorted((e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                if e.device_type == torch.autograd.DeviceType.CUDA)
    ks = ks[len(ks) // 4:]
    if len(ks) < 2:
        return None
    gaps = [ks[i + 1][0] - ks[i][1] for i in range(len(ks) - 1)]
    names = {}
    for _, _, n in ks:
        names[n[:60]] = names.get(n[:60], 0) + 1
    busy = sum(e - s for s, e, _ in ks) / len(ks)
    return len(ks) / (calls - calls // 4), busy, sum(gaps) / len(gaps), max(gaps), names


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="sdpa,attention")
    p.add_argument("--systems", default="eager,inductor,ptc-fx,ptc-backend")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="bfloat16")
    p.add_argument("--start", action="store_true",
                   help="also fit the cost of a batch of calls after a sync as start + n * per-call")
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("gpu_gaps: no CUDA device")
        return 77
    os.environ.setdefault("PTC_CACHE_DIR", tempfile.mkdtemp(prefix="gpu-gaps-ptc-"))
    if os.environ.get("PTC_PYTHONPATH"):
        sys.path.insert(0, os.environ["PTC_PYTHONPATH"])
    failed = 0
    for name in [s for s in a.only.split(",") if s]:
        spec = W.build(name, "cuda", getattr(torch, a.dtype), False, "no")

        def run(system):
            fn = P.make_system(system, spec, None)
            with torch.no_grad():
                for _ in range(5):
                    fn(*spec.inputs)
                wall, issue = wall_and_issue(fn, spec.inputs)
                g = kernel_gaps(fn, spec.inputs)
            line = f"{name} {system}: wall {wall * 1e6:.1f} us/call, issue {issue * 1e6:.1f} us/call"
            if g:
                per, busy, gmean, gmax, names = g
                line += (f"; {per:.1f} kernels/call of {busy:.1f} us on average, gaps {gmean:.2f} us "
                         f"(max {gmax:.2f}); {names}")
            if a.start:
                with torch.no_grad():
                    st, per, first = sample_start(fn, spec.inputs)
                line += (f"\n  after a sync: start {st:.1f} us + {per:.2f} us a call; the first "
                         f"call's host time {first:.1f} us")
            print(line)

        failed += P.each_system(a.systems, run, f"{name} ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
