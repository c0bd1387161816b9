"""fx_demo.py - libptc from PyTorch: a small MLP traced with torch.fx,
compiled by ptc.from_fx for the cpu backend, checked against eager, called
with three batch sizes (one recompile, then the batch dim stays symbolic),
and a short ptc.explain report.

Run: PYTHONPATH=build/python /usr/bin/python3 examples/python/fx_demo.py
"""
import time

import torch
import torch.nn as nn

import ptc


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.LayerNorm(128),
                          nn.Linear(128, 10)).eval()
    gm = torch.fx.symbolic_trace(model)
    x = torch.randn(8, 64)
    with torch.no_grad():
        t0 = time.perf_counter()
        compiled = ptc.from_fx(gm, [x], backend="cpu")
        out = compiled(x)
        print("first call (compile + run): %.2f s" % (time.perf_counter() - t0))
        worst = (out - model(x)).abs().max().item()
        print("batch 8: max |ptc - eager| = %.2e" % worst)
        for batch in (3, 17):
            xb = torch.randn(batch, 64)
            err = (compiled(xb) - model(xb)).abs().max().item()
            print("batch %d: max |ptc - eager| = %.2e" % (batch, err))
            worst = max(worst, err)
        cf = compiled.compiled
        print("compiles: %d, dynamic dims (input, dim): %s" % (cf.num_compiles,
                                                              sorted(cf.dynamic_dims)))
        if worst > 1e-4:
            raise SystemExit("fx_demo: results differ from eager")
        report = ptc.explain(gm, x, verbose=False)
        print("explain: %d kernels after fusion; sources in %s" % (
            report.num_kernels, report.debug_dir))


if __name__ == "__main__":
    main()
