#!/usr/bin/env python3
"""reduce_split.py - timing of few-row huge reductions on CUDA (the cuda
backend's split reductions): x.sum() / x.mean() / x.amax() / x.argmax() /
x.var() over 2^26 elements and a [4, 2^24] row sum, fp32 and bf16, eager vs
ptc (torch.compile with ptc's cuda backend) and, for the sums, Inductor.
Times are CUDA-event means over 50 calls (best of 5); GB/s counts the bytes
read, "% of copy" compares with a D2D copy's (read + write) bandwidth.

Usage: PTC_PYTHONPATH=<build>/python python3 bench/reduce_split.py [--no-inductor]
(PTC_CUDA_SPLIT=0 times the unsplit kernels.) Needs a CUDA device.
"""
import os
import sys
import time

import torch

pp = os.environ.get("PTC_PYTHONPATH")
if pp:
    sys.path.insert(0, pp)
import ptc.backend  # noqa: E402

WORK = [("sum 2^26", lambda a: a.sum(), (1 << 26,)),
        ("mean 2^26", lambda a: a.mean(), (1 << 26,)),
        ("rowsum 4x2^24", lambda a: a.sum(1), (4, 1 << 24)),
        ("amax 2^26", lambda a: a.amax(), (1 << 26,)),
        ("argmax 2^26", lambda a: a.argmax(), (1 << 26,)),
        ("var 2^26", lambda a: a.var(), (1 << 26,))]


def bench(f, x, it=50):
    for _ in range(3):
        f(x)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = 1e9
    for _ in range(5):
        s.record()
        for _ in range(it):
            f(x)
        e.record()
        torch.cuda.synchronize()
        best = min(best, s.elapsed_time(e) / it)
    return best  # ms


def main():
    if not torch.cuda.is_available():
        print("reduce_split: no CUDA device")
        return 0
    inductor = "--no-inductor" not in sys.argv[1:]
    be = ptc.backend.make_backend("cuda")
    torch.manual_seed(0)
    for dt in (torch.float32, torch.bfloat16):
        xc = torch.randn(1 << 26, device="cuda", dtype=dt)
        y = torch.empty_like(xc)
        cp = bench(lambda a: y.copy_(a), xc)
        gbs = 2 * xc.numel() * xc.element_size() / cp / 1e6
        print(f"{dt}: D2D copy {cp * 1e3:.1f} us ({gbs:.0f} GB/s)", flush=True)
        for name, fn, shape in WORK:
            if dt == torch.bfloat16 and not name.startswith(("sum", "mean", "rowsum")):
                continue
            x = torch.randn(shape, device="cuda", dtype=dt)
            ref = fn(x if "argmax" in name else x.double())
            t0 = time.time()
            fp = torch.compile(fn, backend=be, dynamic=False)
            out = fp(x)
            tc = time.time() - t0
            err = (out.double() - ref.double()).abs().max().item()
            te, tp = bench(fn, x), bench(fp, x)
            rb = x.numel() * x.element_size()
            line = f"  {name:14s} {str(dt)[6:]:9s} eager {te * 1e3:7.1f} us  ptc {tp * 1e3:7.1f} us"
            if inductor and name.startswith(("sum", "rowsum")):
                fi = torch.compile(fn, dynamic=False)
                fi(x)
                line += f"  inductor {bench(fi, x) * 1e3:7.1f} us"
            line += (f"  ptc {rb / tp / 1e6:.0f} GB/s ({100 * rb / tp / 1e6 / gbs:.0f}% of copy)"
                     f"  err {err:.3g}  compile {tc:.2f} s")
            print(line, flush=True)
            torch._dynamo.reset()
    return 0


if __name__ == "__main__":
    sys.exit(main())
