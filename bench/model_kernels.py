#!/usr/bin/env python3
"""bench/model_kernels.py - the memory-bound kernels of the transformer models
of bench/vs_torch.py at their model shapes (GPT-2 b8 s256 and BERT-base b16
s128: 2048 rows of 768), timed as GPU time per call (torch.profiler sees
ptc's own launches) for torch eager, Inductor and ptc (ptc.from_fx, cuda
backend), with the GB/s an ideal fused kernel reaches.

Workloads: add_ln (residual + bias add, then LayerNorm; returns both, as a
pre-norm GPT-2 block), ln (LayerNorm alone), bias_gelu_tanh (GPT-2's gelu_new
written out with pow, after a bias add), bias_gelu_erf (BERT), softmax of
masked scaled attention scores (GPT-2 [8,12,256,256], BERT [16,12,128,128]),
qkv_copy (a [8,256,768] activation laid out as [8,12,256,64] for attention).

Also the memory-bound micro workloads of bench/vs_torch.py at their sizes
(m_pointwise, m_softmax, m_layernorm, m_rmsnorm, m_col_sum, m_row_sum,
m_var_mean), by GPU time rather than wall time.

ptc tuning variants: --variants "base;PTC_CUDA_X=1,PTC_CUDA_Y=2" compiles ptc
once per variant with those environment variables set (knobs read at code
generation; see docs/cuda.md) and reports each; MODE=m passes ptc's mode; a
value may hold commas (PTC_CUDA_COL=64,16: a piece without '=' continues
the value before it).

Usage (GPU machine):
    PTC_PYTHONPATH=build/python python3 bench/model_kernels.py \
        [--dtype bfloat16,float32] [--only add_ln,ln,...] [--systems eager,inductor,ptc]
        [--variants "base;..."] [--calls 20] [--wall]
Exit status: 0 when everything ran, 77 without a CUDA device.
"""
import argparse
import math
import os
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vs_torch_models as W  # noqa: E402


class AddLN(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.b = nn.Parameter(torch.randn(n) * 0.1)
        self.ln = nn.LayerNorm(n, eps=1e-5)

    def forward(self, x, y):
        h = x + (y + self.b)
        return h, self.ln(h)


class LN(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ln = nn.LayerNorm(n, eps=1e-5)

    def forward(self, x):
        return self.ln(x)


class BiasGeluTanh(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.b = nn.Parameter(torch.randn(n) * 0.1)

    def forward(self, y):
        x = y + self.b
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class BiasGeluErf(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.b = nn.Parameter(torch.randn(n) * 0.1)

    def forward(self, y):
        return F.gelu(y + self.b)


class ScoresSoftmax(nn.Module):
    def __init__(self, s, causal):
        super().__init__()
        self.causal = causal
        self.register_buffer("mask", torch.tril(torch.ones(s, s, dtype=torch.bool)).view(1, 1, s, s))

    def forward(self, scores):
        scores = scores * 0.125
        if self.causal:
            scores = scores.masked_fill(~self.mask, float("-inf"))
        return torch.softmax(scores, dim=-1)


class QKVCopy(nn.Module):
    def forward(self, x):
        return x.view(x.size(0), x.size(1), 12, 64).transpose(1, 2).contiguous()


def workloads(dtype, dev):
    def r(*shape):
        return torch.randn(*shape, device=dev, dtype=torch.float32).to(dtype)
    es = torch.empty((), dtype=dtype).element_size()
    n = 2048 * 768
    return {
        "add_ln": (AddLN(768), (r(8, 256, 768), r(8, 256, 768)), 4 * n * es),
        "ln": (LN(768), (r(8, 256, 768),), 2 * n * es),
        "bias_gelu_tanh": (BiasGeluTanh(3072), (r(8, 256, 3072),), 2 * 4 * n * es),
        "bias_gelu_erf": (BiasGeluErf(3072), (r(16, 128, 3072),), 2 * 4 * n * es),
        "softmax_gpt2": (ScoresSoftmax(256, True), (r(8, 12, 256, 256),), 2 * 8 * 12 * 256 * 256 * es),
        "softmax_bert": (ScoresSoftmax(128, False), (r(16, 12, 128, 128),), 2 * 16 * 12 * 128 * 128 * es),
        "qkv_copy": (QKVCopy(), (r(8, 256, 768),), 2 * n * es),
        # the micro workloads of bench/vs_torch.py (issue 5 sizes)
        "m_pointwise": (W.PointwiseChain(), (r(1 << 26),), 2 * (1 << 26) * es),
        "m_softmax": (W.RowSoftmax(), (r(8192, 4096),), 2 * 8192 * 4096 * es),
        "m_layernorm": (nn.LayerNorm(4096), (r(8192, 4096),), 2 * 8192 * 4096 * es),
        "m_rmsnorm": (W.RMSNorm(4096), (r(8192, 4096),), 2 * 8192 * 4096 * es),
        "m_col_sum": (W.ColSum(), (r(16384, 4096),), 16384 * 4096 * es),
        "m_row_sum": (W.RowSum(), (r(16384, 4096),), 16384 * 4096 * es),
        "m_var_mean": (W.VarMean(), (r(16384, 4096),), 16384 * 4096 * es),
    }


def gpu_time_per_call(fn, inputs, calls):
    with torch.no_grad():
        for _ in range(3):
            fn(*inputs)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn(*inputs)
            torch.cuda.synchronize()
    total, n = 0.0, 0
    names = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        t = getattr(e, "device_time", None)
        if t is None:
            t = getattr(e, "cuda_time", 0)
        total += t
        n += 1
        names[e.name] = names.get(e.name, 0) + 1
    return total / calls / 1000.0, n / calls, sorted(names)


def wall_per_call(fn, inputs, calls):
    """Wall time per call (ms) of calls back-to-back calls, host time included
    (one synchronize at the end); best of 3 batches."""
    import time
    best = 1e9
    with torch.no_grad():
        for _ in range(3):
            fn(*inputs)
        torch.cuda.synchronize()
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn(*inputs)
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - t0) / calls * 1e3)
    return best


def check(ref, out, dtype):
    ref = ref if isinstance(ref, tuple) else (ref,)
    out = out if isinstance(out, (tuple, list)) else (out,)
    tol = 2e-2 if dtype != torch.float32 else 1e-4
    for a, b in zip(ref, out):
        # as bench/vs_torch.py: the largest difference over max(1, max |ref|)
        # (f32 column sums of 16384 values differ from eager's order by ~3e-4)
        d = (a.float() - b.float()).abs().max().item()
        scale = max(1.0, a.float().abs().max().item())
        if not d / scale <= tol:
            return "MISMATCH max |d| %.3g (normalised %.3g)" % (d, d / scale)
    return "ok"


def variant_env(var):
    """(environment dict, mode) of a --variants entry: NAME=VALUE pieces
    separated by commas (a piece without '=' continues the value before it,
    PTC_CUDA_COL=64,16); MODE=m is ptc's mode, not a variable; "base" or
    None: none."""
    env, mode, kvs = {}, None, []
    if not var or var == "base":
        return env, mode
    for kv in var.split(","):
        if "=" in kv or not kvs:
            kvs.append(kv)
        else:
            kvs[-1] += "," + kv
    for kv in kvs:
        k, _, v = kv.partition("=")
        if k == "MODE":
            mode = v
        else:
            env[k] = v
    return env, mode


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtype", default="bfloat16,float32")
    p.add_argument("--only", default="")
    p.add_argument("--systems", default="eager,inductor,ptc")
    p.add_argument("--variants", default="base")
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--wall", action="store_true",
                   help="also the wall time per call (host time included, best of 3 batches)")
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("model_kernels: no CUDA device")
        return 77
    os.environ.setdefault("PTC_CACHE_DIR", tempfile.mkdtemp(prefix="mk-ptc-"))
    pp = os.environ.get("PTC_PYTHONPATH")
    if pp:
        sys.path.insert(0, pp)
    systems = [s for s in a.systems.split(",") if s]
    variants = [v.strip() for v in a.variants.split(";") if v.strip()]
    only = [s for s in a.only.split(",") if s]
    copy_gbs = None
    x = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    tt, _, _ = gpu_time_per_call(lambda: y.copy_(x), (), 10)
    copy_gbs = 2 * x.numel() / (tt * 1e-3) / 1e9
    del x, y
    print(f"D2D copy: {copy_gbs:.0f} GB/s")
    failed = 0
    for dname in [d for d in a.dtype.split(",") if d]:
        dtype = getattr(torch, dname)
        torch.manual_seed(0)
        for name, (mod, inputs, nbytes) in workloads(dtype, "cuda").items():
            if only and name not in only:
                continue
            mod = mod.to("cuda", dtype).eval()
            with torch.no_grad():
                ref = mod(*inputs)
            row = []
            for system in systems:
                runs = [("", None)] if system != "ptc" else [(v, v) for v in variants]
                for label, var in runs:
                    env, mode = variant_env(var)
                    try:
                        with W.environment(env):
                            if system == "eager":
                                fn = mod
                            elif system == "inductor":
                                torch._dynamo.reset()
                                fn = torch.compile(mod)
                            else:
                                import ptc
                                fn = ptc.from_fx(torch.fx.symbolic_trace(mod), list(inputs), backend="cuda",
                                                 mode=mode)
                            with torch.no_grad():
                                ok = check(ref, fn(*inputs), dtype)
                            ms, nk, names = gpu_time_per_call(fn, inputs, a.calls)
                            wall = wall_per_call(fn, inputs, a.calls) if a.wall else None
                        gbs = nbytes / (ms * 1e-3) / 1e9
                        tag = system + (f"[{label}]" if label and label != "base" else "")
                        ws = f", wall {wall * 1000:.2f} us" if wall is not None else ""
                        row.append(f"{tag} {ms * 1000:.2f} us ({gbs:.0f} GB/s, {100 * gbs / copy_gbs:.0f}%, "
                                   f"{nk:.0f} k{ws}) {ok}")
                    except Exception as e:
                        failed += 1
                        row.append(f"{system}[{label}] FAILED {type(e).__name__}: {str(e).splitlines()[0][:100]}")
            print(f"{dname} {name}:\n  " + "\n  ".join(row), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
