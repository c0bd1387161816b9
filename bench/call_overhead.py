#!/usr/bin/env python3
# call_overhead.py - where the per-call host time of a tiny compiled graph
# goes (issue 5: "tiny graph under 15 us per call from Python"). Times, per
# call, every layer of ptc's Python call paths on the tiny graph of
# bench/vs_torch_models.py (ten pointwise ops on 32x32) and the torch
# operations they are made of:
#
#   paths:      eager; ptc-fx (CompiledGraph from ptc.from_fx) and what it
#               wraps (the C CompiledFunction, Executable.run allocating
#               its outputs / into given outputs); ptc.compile of the
#               module and of a plain function; torch.compile with
#               backend=ptc.backend (ptc-backend), with a backend whose
#               callable returns a fixed output (Dynamo's own guard + wrapper
#               cost: the floor of any torch.compile backend) and with
#               backend=gm.forward (the ops eagerly); Inductor with --inductor
#   components: torch.empty (device string / torch.device / empty_like),
#               to_dlpack, data_ptr(), the current-stream query,
#               requires_grad, an empty Python call
#
# in the default mode and, with --modes default,reduce-overhead, with CUDA
# graphs. Each figure is the median of samples of N back-to-back calls
# with the device synchronised at both ends (the rate a loop sustains).
#
# Usage: PTC_PYTHONPATH=<build>/python python3 bench/call_overhead.py
#          [--device cpu|cuda] [--modes default,reduce-overhead] [--inductor]
#          [--quick] [--json OUT]

import argparse
import json
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    p = argparse.ArgumentParser(description="per-call host time of ptc's Python paths")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--modes", default="default")
    p.add_argument("--inductor", action="store_true", help="also time torch.compile (Inductor)")
    p.add_argument("--quick", action="store_true", help="fewer samples")
    p.add_argument("--json", default=None)
    p.add_argument("--shape", default="32,32")
    p.add_argument("--dtypes", default="float32",
                   help="comma-separated dtypes of the tiny graph's input, timed in turn in this "
                        "process (e.g. float32,bfloat16: the same process state for both)")
    p.add_argument("--no-components", action="store_true", help="skip the component table")
    a = p.parse_args()
    a.dtypes = [d.strip() for d in a.dtypes.split(",") if d.strip()]
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    a.shape = tuple(int(s) for s in a.shape.split(","))
    return a


ARGS = parse_args()
pp = os.environ.get("PTC_PYTHONPATH")
if pp:
    sys.path.insert(0, pp)
sys.path.insert(0, HERE)
import torch  # noqa: E402

import ptc  # noqa: E402
import vs_torch_models as W  # noqa: E402

DEV = ARGS.device
TORCH2 = hasattr(torch, "compile")


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def per_call(fn, args, inner=2000):
    """Median seconds per call over samples of `inner` calls (half as many
    with --quick)."""
    for _ in range(200):
        fn(*args)
    samples = 5 if ARGS.quick else 11
    if ARGS.quick:
        inner //= 2
    ts = []
    for _ in range(samples):
        sync()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn(*args)
        sync()
        ts.append((time.perf_counter() - t0) / inner)
    return statistics.median(ts), min(ts)


def tiny_fn(x):
    y = torch.abs(-x) + 0.5
    y = torch.sqrt(y) * 0.1
    y = torch.sigmoid(torch.tanh(y))
    return (torch.relu(y) - 0.25) * 3.0


def check(out, ref):
    if isinstance(out, (tuple, list)):
        out = out[0]
    err = (out.float() - ref.float()).abs().max().item()
    return err <= (1e-4 if ref.dtype == torch.float32 else 2e-2), err


def rows_for_mode(mode, x, ref):
    """[(name, fn, args)] of the paths, built (first call done) for `mode`."""
    m = W.Tiny().to(DEV).eval()
    out = []

    def add(name, make):
        try:
            t0 = time.perf_counter()
            fn, args = make()
            r = fn(*args)
            sync()
            first = time.perf_counter() - t0
            if name.startswith("  Executable.run") or name.startswith("  CompiledFunction"):
                r = r[0]
            ok, err = check(r, ref)
            out.append((name, fn, args, first, ok, err, None))
        except Exception as e:  # noqa: BLE001
            out.append((name, None, None, None, False, None, f"{type(e).__name__}: {e}"))
            traceback.print_exc()

    kw = dict(backend=DEV, mode=None if mode == "default" else mode)
    add("eager", lambda: (m, (x,)))
    fx = {}

    def make_fx():
        fx["g"] = ptc.from_fx(torch.fx.symbolic_trace(m), [x], **kw)
        return fx["g"], (x,)
    add("ptc-fx (from_fx CompiledGraph)", make_fx)
    if "g" in fx:
        fx["g"](x)
        cf = fx["g"].compiled
        add("  CompiledFunction (C)", lambda: (cf, (x,)))
        exe = cf.executables[-1]
        add("  Executable.run([x])", lambda: (exe.run, ([x],)))
        outs = [torch.empty_like(x)]
        add("  Executable.run([x], outputs)", lambda: (exe.run, ([x], outs)))
    try:
        ptc.compile  # noqa: B018
        have_capture = getattr(ptc._C, "DYN_SUPPORTED", 0) and hasattr(ptc._C, "dyn_enable")
    except Exception:  # noqa: BLE001
        have_capture = False
    if have_capture:
        add("ptc-compile (module)", lambda: (ptc.compile(m, **kw), (x,)))
        import types
        code = tiny_fn.__code__.replace(co_name="tiny_fn_" + mode.replace("-", "_"))
        f2 = types.FunctionType(code, tiny_fn.__globals__, code.co_name)
        add("ptc-compile (function)", lambda: (ptc.compile(f2, **kw), (x,)))
    if TORCH2:
        def make_backend():
            b = ptc.make_backend(DEV, mode=kw["mode"])
            return torch.compile(W.Tiny().to(DEV).eval(), backend=b), (x,)
        add("ptc-backend (torch.compile)", make_backend)

        def floor(gm, example_inputs):
            outs = gm(*example_inputs)  # computed once: the calls do no work
            return lambda *args: outs
        add("torch.compile floor (backend returns a fixed output)",
            lambda: (torch.compile(W.Tiny().to(DEV).eval(), backend=floor), (x,)))

        def noop(gm, example_inputs):
            return gm.forward
        add("torch.compile backend=gm.forward (eager ops)",
            lambda: (torch.compile(W.Tiny().to(DEV).eval(), backend=noop), (x,)))
        if ARGS.inductor:
            add("inductor", lambda: (torch.compile(W.Tiny().to(DEV).eval(), mode=kw["mode"]), (x,)))
    return out


def component_rows(x):
    dev_str = "cuda:0" if DEV == "cuda" else "cpu"
    dev_obj = torch.device(dev_str)
    shape = tuple(x.shape)
    from torch.utils.dlpack import to_dlpack
    tmpl = torch.empty(0, device=dev_obj)
    comps = [
        ("python call of a no-op function", lambda: None, ()),
        ("template.new_empty(shape) (0-element template)", tmpl.new_empty, (shape,)),
        ("torch.empty(shape, dtype, device=str)", lambda: torch.empty(shape, dtype=torch.float32, device=dev_str), ()),
        ("torch.empty(shape, dtype, device=torch.device)", lambda: torch.empty(shape, dtype=torch.float32, device=dev_obj), ()),
        ("torch.empty_like(x)", torch.empty_like, (x,)),
        ("to_dlpack(x) (+ capsule freed)", to_dlpack, (x,)),
        ("x.data_ptr()", x.data_ptr, ()),
        ("x.requires_grad", lambda: x.requires_grad, ()),
        ("x.device", lambda: x.device, ()),
        ("x.shape + x.stride()", lambda: (x.shape, x.stride()), ()),
    ]
    if DEV == "cuda":
        comps.append(("torch._C._cuda_getCurrentRawStream(0)", torch._C._cuda_getCurrentRawStream, (0,)))
        comps.append(("torch.cuda.current_stream()", torch.cuda.current_stream, ()))
        comps.append(("eager x + 1 (one torch op)", lambda: x + 1, ()))
    return comps


def main():
    x = torch.randn(*ARGS.shape, device=DEV)
    res = {"device": DEV, "torch": torch.__version__, "python": sys.version.split()[0],
           "ptc": ptc.version(), "modes": {}, "components": {}}
    if DEV == "cuda":
        res["gpu"] = torch.cuda.get_device_name(0)
    print(f"## call_overhead: {DEV}, tiny graph {ARGS.shape}, torch {res['torch']}, "
          f"Python {res['python']}" + (f", {res['gpu']}" if DEV == "cuda" else ""))
    with torch.no_grad():
      for dt in ARGS.dtypes:
        x = torch.randn(*ARGS.shape, device=DEV).to(getattr(torch, dt))
        ref = tiny_fn(x)
        for mode in ARGS.modes:
            rows = rows_for_mode(mode, x, ref)
            print()
            print(f"### {dt}, mode {mode}: us per call (median of samples; min)")
            print()
            print("| path | us/call | min | first call s | ok |")
            print("| --- | ---: | ---: | ---: | --- |")
            out = {}
            for name, fn, args, first, ok, err, error in rows:
                if error:
                    print(f"| {name} | error: {error[:80]} | | | |")
                    out[name] = {"error": error}
                    continue
                med, mn = per_call(fn, args)
                out[name] = {"us": med * 1e6, "min_us": mn * 1e6, "first_s": first, "ok": ok, "err": err}
                print(f"| {name} | {med * 1e6:.2f} | {mn * 1e6:.2f} | {first:.2f} | "
                      f"{'ok' if ok else 'WRONG %.2g' % err} |", flush=True)
            res["modes"][mode if len(ARGS.dtypes) == 1 else f"{dt}/{mode}"] = out
            if TORCH2:
                torch._dynamo.reset()
            if hasattr(ptc, "reset"):
                ptc.reset()
      if not ARGS.no_components:
        x = torch.randn(*ARGS.shape, device=DEV)
        print()
        print("### components: us per call")
        print()
        print("| operation | us/call |")
        print("| --- | ---: |")
        for name, fn, args in component_rows(x):
            med, _ = per_call(fn, args, inner=5000)
            res["components"][name] = med * 1e6
            print(f"| {name} | {med * 1e6:.3f} |", flush=True)
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
