#!/usr/bin/env python3
"""bench/knob_sweep.py - compares ptc code-generation knobs (PTC_CUDA_*
environment variables, read at code generation) on vs_torch workloads in
one process, interleaved, by GPU time: each variant is its own
ptc.from_fx compile made with its environment set; then, for several
rounds, every variant (and Inductor with --inductor) runs a batch of calls
back to back between two CUDA events, in turn, so clock and load drift hit
every variant alike. Prints per workload the median (and min) us a call of
each variant and its ratio to the first variant and to Inductor.

Usage (on the GPU machine):
    PTC_PYTHONPATH=build/python python3 bench/knob_sweep.py \
        --only pointwise,row_sum [--dtype float32] [--inductor] \
        --var base: --var w16:PTC_CUDA_PW_WAVES=16 \
        --var u2:PTC_CUDA_PW_UNROLL=2,PTC_CUDA_PW_WAVES=0 [--rounds 9] [--calls 40]
A variant is LABEL:NAME=VALUE[,NAME=VALUE...] (LABEL: alone = the defaults).
Needs torch with CUDA (and torch.compile for --inductor). Exit status 0
when every variant compiled and matched eager within the vs_torch
tolerance; 1 otherwise; 77 without a CUDA device.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import vs_torch_models as W  # noqa: E402

TOL = {torch.float32: 1e-4, torch.bfloat16: 3e-2}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", required=True, help="comma-separated vs_torch workload names")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--var", action="append", default=[], metavar="LABEL:K=V,...")
    p.add_argument("--inductor", action="store_true", help="time torch.compile (Inductor) too")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--calls", type=int, default=40, help="calls a batch")
    return p.parse_args()


def parse_var(text):
    label, _, rest = text.partition(":")
    env = {}
    for kv in filter(None, (s.strip() for s in rest.split(","))):
        k, _, v = kv.partition("=")
        env[k] = v
    return label or rest or "base", env


def compile_variant(ptc, spec, env):
    """ptc.from_fx of the workload with `env` set during the compile only
    (ptc compiles at the first call: that call is made here, under `env`)."""
    with W.environment(env):
        gm = spec.trace(spec.module, spec.inputs) if spec.trace else torch.fx.symbolic_trace(spec.module)
        fn = ptc.from_fx(gm, list(spec.inputs), backend="cuda")
        fn(*spec.inputs)
        torch.cuda.synchronize()
        return fn


def batch_us(fn, inputs, calls):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(calls):
        fn(*inputs)
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1000.0 / calls


def max_err(out, ref):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    scale = max(1.0, max(float(r.abs().max()) for r in refs))
    return max(float((o.float() - r.float()).abs().max()) for o, r in zip(outs, refs)) / scale


def main():
    a = parse_args()
    if not torch.cuda.is_available():
        print("knob_sweep: no CUDA device")
        return 77
    pp = os.environ.get("PTC_PYTHONPATH")
    if pp:
        sys.path.insert(0, pp)
    import ptc

    dtype = getattr(torch, a.dtype)
    variants = [parse_var(v) for v in (a.var or ["base:"])]
    bad = 0
    for name in [s.strip() for s in a.only.split(",") if s.strip()]:
        spec = W.build(name, "cuda", dtype, False)
        with torch.no_grad():
            ref = spec.module(*spec.inputs)
            systems = []
            if a.inductor:
                systems.append(("inductor", torch.compile(spec.module)))
            for label, env in variants:
                try:
                    systems.append((label, compile_variant(ptc, spec, env)))
                except Exception as e:  # one variant failing must not hide the others
                    bad += 1
                    print(f"  {label}: FAILED {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            for label, fn in systems:
                err = max_err(fn(*spec.inputs), ref)
                if err > TOL.get(dtype, 3e-2):
                    bad += 1
                    print(f"  {label}: WRONG, max error {err:.3g}")
                for _ in range(3):
                    fn(*spec.inputs)
            times = {label: [] for label, _ in systems}
            for _ in range(a.rounds):
                for label, fn in systems:
                    times[label].append(batch_us(fn, spec.inputs, a.calls))
        print(f"== {name} ({a.dtype}), {a.rounds} rounds of {a.calls} calls, us a call")
        med = {k: statistics.median(v) for k, v in times.items()}
        first = variants[0][0] if variants[0][0] in med else None
        for label, _ in systems:
            line = f"  {label:>14}: {med[label]:9.2f} (min {min(times[label]):9.2f})"
            if first and label != "inductor":
                line += f"  x{med[first] / med[label]:.3f} vs {first}"
            if "inductor" in med and label != "inductor":
                line += f"  x{med['inductor'] / med[label]:.3f} vs inductor"
            print(line)
        sys.stdout.flush()
        if a.inductor:
            torch._dynamo.reset()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
