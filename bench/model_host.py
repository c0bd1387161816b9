#!/usr/bin/env python3
# model_host.py - where the host time of one model call goes under
# torch.compile(backend=ptc's cuda backend) (issue 5: models are host-bound
# when the GPU idles between launches). For each model of
# bench/vs_torch_models.py (resnet18, bert, gpt2; the sizes unless
# --quick) and each system (ptc-backend; inductor with --inductor) it prints:
#   wall    ms per call of back-to-back calls (synchronised at both ends)
#   host    ms the call takes on the host with an idle GPU before it (the
#           enqueue time: the device synchronised before each timed call,
#           not after); host < wall means the GPU is the limit
#   in-ptc  ms per call inside ptc's compiled graphs (the Python callables
#           Dynamo got from the backend), the rest is Dynamo's guards and glue
#   graphs  graphs Dynamo handed to the backend, their inputs and kernels
# and, with PTC_CUDA_HOSTPROF=1 in the environment, libptc's own split of
# its run time at exit (bind, kernel launches, extern steps, error check).
#
# Usage: PTC_PYTHONPATH=<build>/python python3 bench/model_host.py
#          [--models gpt2,bert,resnet18] [--dtype bfloat16] [--quick] [--inductor]
#          [--calls N]

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
p = argparse.ArgumentParser(description="host time of one model call through ptc.backend")
p.add_argument("--models", default="gpt2,bert,resnet18")
p.add_argument("--dtype", default="bfloat16")
p.add_argument("--quick", action="store_true")
p.add_argument("--inductor", action="store_true")
p.add_argument("--calls", type=int, default=30)
p.add_argument("--device", default="cuda", help="cpu: a check of this script without a GPU")
ARGS = p.parse_args()
pp = os.environ.get("PTC_PYTHONPATH")
if pp:
    sys.path.insert(0, pp)
sys.path.insert(0, HERE)
import torch  # noqa: E402
if hasattr(torch, "compile"):
    import torch._dynamo  # noqa: E402,F401  (torch._dynamo.reset between systems)

import ptc  # noqa: E402
import ptc.backend  # noqa: E402
import vs_torch_models as W  # noqa: E402


class Timed:
    """Wraps a compiled graph: sums the host time of its calls."""
    total = 0.0

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        t = time.perf_counter()
        try:
            return self.fn(*args)
        finally:
            Timed.total += time.perf_counter() - t


def measure(fn, inputs, calls):
    sync = torch.cuda.synchronize if ARGS.device == "cuda" else (lambda: None)
    for _ in range(3):
        fn(*inputs)
    sync()
    hosts = []
    for _ in range(calls):
        sync()
        t = time.perf_counter()
        fn(*inputs)
        hosts.append(time.perf_counter() - t)
    sync()
    Timed.total = 0.0
    walls = []
    for _ in range(5):
        sync()
        t = time.perf_counter()
        for _ in range(calls):
            fn(*inputs)
        sync()
        walls.append((time.perf_counter() - t) / calls)
    inside = Timed.total / (5 * calls)
    return statistics.median(hosts) * 1e3, statistics.median(walls) * 1e3, inside * 1e3


def main():
    dtype = getattr(torch, ARGS.dtype)
    for name in ARGS.models.split(","):
        spec = W.build(name, ARGS.device, dtype, ARGS.quick)
        systems = ["ptc-backend"] + (["inductor"] if ARGS.inductor else [])
        for system in systems:
            torch._dynamo.reset()
            b = None
            if system == "ptc-backend":
                b = ptc.backend.make_backend(ARGS.device)

                def backend(gm, ex, _b=b, **kw):
                    r = _b(gm, ex, **kw)
                    return Timed(r) if callable(r) else r
                fn = torch.compile(spec.module, backend=backend)
            else:
                fn = torch.compile(spec.module)
            with torch.no_grad():
                t0 = time.perf_counter()
                fn(*spec.inputs)
                if ARGS.device == "cuda":
                    torch.cuda.synchronize()
                first = time.perf_counter() - t0
                host, wall, inside = measure(fn, spec.inputs, ARGS.calls)
            line = (f"{name} {ARGS.dtype} {system}: wall {wall:.3f} ms/call, host {host:.3f} ms/call"
                    f" (enqueue, idle GPU)")
            if b is not None:
                ins = [len(c.compiled_graph._kinds) if hasattr(c, "compiled_graph") else "?"
                       for c in b.compiled]
                kern = [c.compiled.executables[-1].num_kernels if c.compiled.executables else 0
                        for c in b.compiled]
                line += (f", in ptc's graphs {inside:.3f} ms/call; {len(b.compiled)} graph(s) "
                         f"(inputs {ins}, kernels+externs {kern}), {len(b.fallbacks)} eager "
                         f"fallback(s)")
            line += f"; first call {first:.2f} s"
            print(line, flush=True)
            del fn


if __name__ == "__main__":
    main()
