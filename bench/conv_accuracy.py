#!/usr/bin/env python3
"""bench/conv_accuracy.py - how far resnet18's fp32 output is from a float64
reference under ptc's CUDA convolution forms, next to eager PyTorch (cuDNN,
TF32 convolutions as PyTorch's default) and, when asked, Inductor. Each
form runs in its own process, because the kernels read their tuning knobs
(PTC_CUDA_CONV_TMA_CFG, PTC_CUDA_CONV_TMA) once.

Usage (on the GPU machine):
    PTC_PYTHONPATH=build/python python3 bench/conv_accuracy.py \
        [--forms "default;PTC_CUDA_CONV_TMA_CFG=0,2,8,2;PTC_CUDA_CONV_TMA=0|PTC_X=1"]
        [--batch 32] [--seeds 0,1] [--inductor]
Prints, per form and seed, the max abs error and the error over the
reference's largest magnitude (vs_torch's normalised error, whose model
tolerance is 1e-2) against float64 and against eager fp32.
Exit status: 0 when every form ran.
"""
import argparse
import json
import os
import subprocess
import sys


def child(batch, seed, with_inductor):
    """Runs in the form's process: prints one JSON line of errors."""
    import torch
    import torchvision
    if os.environ.get("PTC_PYTHONPATH"):
        sys.path.insert(0, os.environ["PTC_PYTHONPATH"])
    import ptc
    torch.manual_seed(seed)
    m = torchvision.models.resnet18().cuda().eval()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    with torch.no_grad():
        ref = m.double()(x.double()).float()
        m = m.float()
        eager = m(x)
        gm = torch.fx.symbolic_trace(m)
        out = ptc.from_fx(gm, [x], backend="cuda")(x)
        out = out[0] if isinstance(out, (list, tuple)) else out
        res = {"ptc": out}
        if with_inductor:
            res["inductor"] = torch.compile(m)(x)
    scale = float(ref.abs().max())
    row = {"scale": scale, "eager_vs_ref": float((eager - ref).abs().max())}
    for k, v in res.items():
        row[k + "_vs_ref"] = float((v - ref).abs().max())
        row[k + "_vs_eager"] = float((v - eager).abs().max())
    print(json.dumps(row))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--forms", default="default;PTC_CUDA_CONV_TMA_CFG=0,2,8,2;PTC_CUDA_CONV_TMA=0",
                   help="';'-separated forms: 'default' or NAME=VALUE[|NAME=VALUE...] environments")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seeds", default="0")
    p.add_argument("--inductor", action="store_true", help="also Inductor (in the first form's process)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        child(a.batch, a.seed, a.inductor)
        return 0
    status = 0
    print(f"{'form':<36} {'seed':>4} {'eager/ref':>10} {'ptc/ref':>10} {'ptc/eager':>10} "
          f"{'ind/ref':>10} {'norm ptc/ref':>12}")
    for i, form in enumerate(f.strip() for f in a.forms.split(";") if f.strip()):
        env = dict(os.environ)
        if form != "default":
            # NAME=VALUE pairs split by '|' (values hold commas)
            for part in form.split("|"):
                k, _, v = part.partition("=")
                env[k.strip()] = v.strip()
        for seed in (int(s) for s in a.seeds.split(",")):
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--batch", str(a.batch),
                   "--seed", str(seed)] + (["--inductor"] if a.inductor and i == 0 else [])
            r = subprocess.run(cmd, env=env, capture_output=True, text=True)
            lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
            if r.returncode or not lines:
                print(f"{form:<36} {seed:>4} failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
                status = 1
                continue
            d = json.loads(lines[-1])
            ind = f"{d['inductor_vs_ref']:.3g}" if "inductor_vs_ref" in d else "-"
            print(f"{form:<36} {seed:>4} {d['eager_vs_ref']:>10.3g} {d['ptc_vs_ref']:>10.3g} "
                  f"{d['ptc_vs_eager']:>10.3g} {ind:>10} {d['ptc_vs_ref'] / max(1.0, d['scale']):>12.3g}",
                  flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
