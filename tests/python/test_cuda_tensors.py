"""test_cuda_tensors.py - the Python binding with CUDA tensors (issue 5): models
through ptc.from_fx and the torch.compile backend on the "cuda" backend
against eager on the GPU, runs ordered on torch's current stream (a side
stream whose work is still queued when ptc is called), bf16, the GEMM
epilogues (linear + bias + gelu on 3-D inputs), convolutions on the device
(bias, groups, stride/padding, relu) and pooling on the device, outputs on
the right device. Skipped
where torch has no GPU or ptc's cuda backend is unavailable (CI)."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.fx

import ptc
from cuda_util import no_tf32, requires_cuda  # noqa: F401 (no_tf32: autouse fixture)

pytestmark = requires_cuda


def _compile(m, inputs, **kw):
    gm = torch.fx.symbolic_trace(m)
    return ptc.from_fx(gm, list(inputs), backend="cuda", **kw)


def _close(a, b, tol):
    assert a.device == b.device, (a.device, b.device)
    assert a.dtype == b.dtype and a.shape == b.shape
    err = (a.float() - b.float()).abs().max().item()
    scale = max(1.0, b.float().abs().max().item())
    assert err / scale <= tol, f"max abs err {err} (scale {scale}, tol {tol})"


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 32)

    def forward(self, x):
        return torch.softmax(self.fc2(F.gelu(self.fc1(x))), dim=-1)


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(512)

    def forward(self, x):
        y = self.ln(x)
        v, m = torch.var_mean(x, dim=-1, keepdim=True)
        return y * torch.rsqrt(v + 1e-5) + m, x.sum(0)


def test_from_fx_cuda_mlp():
    torch.manual_seed(0)
    m = Mlp().cuda().eval()
    x = torch.randn(8, 16, 64, device="cuda")  # 3-D: batch folded into one GEMM
    fn = _compile(m, [x])
    with torch.no_grad():
        out = fn(x)
        ref = m(x)
    _close(out, ref, 1e-4)
    assert out.is_cuda


def test_from_fx_cuda_norms_bf16():
    torch.manual_seed(0)
    m = Norms().cuda().eval().to(torch.bfloat16)
    x = torch.randn(64, 512, device="cuda", dtype=torch.bfloat16)
    fn = _compile(m, [x])
    with torch.no_grad():
        outs = fn(x)
        refs = m(x)
    for o, r in zip(outs, refs):
        _close(o, r, 3e-2)


@pytest.mark.parametrize("act", ["gelu", "gelu_tanh", "silu", "relu", "sigmoid"])
def test_linear_activation_epilogue(act):
    torch.manual_seed(1)
    lin = nn.Linear(96, 160).cuda().eval()
    f = {"gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "silu": F.silu,
         "relu": F.relu, "sigmoid": torch.sigmoid}[act]

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def forward(self, x):
            return f(self.lin(x))

    m = M()
    x = torch.randn(4, 33, 96, device="cuda")
    fn = _compile(m, [x])
    with torch.no_grad():
        _close(fn(x), m(x), 1e-4)


@pytest.mark.parametrize("cfg", [
    dict(cin=3, cout=16, k=7, stride=2, padding=3, bias=False, groups=1, act=True),
    dict(cin=16, cout=32, k=3, stride=1, padding=1, bias=True, groups=1, act=False),
    dict(cin=16, cout=16, k=3, stride=1, padding=1, bias=True, groups=4, act=True),
    dict(cin=8, cout=8, k=3, stride=2, padding=1, bias=False, groups=8, act=False),
    dict(cin=16, cout=24, k=1, stride=1, padding=0, bias=True, groups=1, act=True),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_conv2d_on_device(cfg, dtype):
    torch.manual_seed(2)
    conv = nn.Conv2d(cfg["cin"], cfg["cout"], cfg["k"], stride=cfg["stride"],
                     padding=cfg["padding"], bias=cfg["bias"], groups=cfg["groups"])
    bn = nn.BatchNorm2d(cfg["cout"])
    m = nn.Sequential(conv, bn, nn.ReLU()) if cfg["act"] else nn.Sequential(conv)
    m = m.cuda().eval().to(dtype)
    x = torch.randn(3, cfg["cin"], 20, 18, device="cuda", dtype=dtype)
    fn = _compile(m, [x])
    with torch.no_grad():
        _close(fn(x), m(x), 1e-4 if dtype == torch.float32 else 3e-2)


def test_conv1d_on_device():
    torch.manual_seed(3)
    m = nn.Sequential(nn.Conv1d(6, 10, 5, padding=2, dilation=1), nn.Tanh()).cuda().eval()
    x = torch.randn(2, 6, 40, device="cuda")
    fn = _compile(m, [x])
    with torch.no_grad():
        _close(fn(x), m(x), 1e-4)


@pytest.mark.parametrize("pool", [
    lambda: nn.MaxPool2d(3, stride=2, padding=1),
    lambda: nn.MaxPool2d((2, 3), stride=(1, 2), dilation=(2, 1)),
    lambda: nn.AvgPool2d(3, stride=2, padding=1),
    lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False, ceil_mode=True),
    lambda: nn.AdaptiveAvgPool2d((1, 1)),
    lambda: nn.AdaptiveAvgPool2d((5, 3)),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_pool2d_on_device(pool, dtype):
    torch.manual_seed(5)
    m = nn.Sequential(pool()).cuda().eval()
    x = torch.randn(2, 5, 17, 14, device="cuda", dtype=dtype)
    fn = _compile(m, [x])
    with torch.no_grad():
        _close(fn(x), m(x), 1e-5 if dtype == torch.float32 else 2e-2)


class Chain(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x * 2.0 + 1.0).sum(-1)


def test_runs_on_current_stream():
    """The input is written on a side stream behind a long sleep kernel; ptc
    must run after it on that stream (torch's current stream), and its output
    must be complete when that stream is synchronised."""
    n = 1 << 22
    x = torch.zeros(64, n // 64, device="cuda")
    src = torch.randn(64, n // 64, device="cuda")
    fn = _compile(Chain(), [x])
    ref = Chain()(src)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    for _ in range(3):
        x.zero_()
        torch.cuda.synchronize()
        with torch.cuda.stream(s):
            torch.cuda._sleep(20_000_000)  # ~10 ms of queued work before the copy
            x.copy_(src)
            out = fn(x)
        s.synchronize()
        _close(out, ref, 1e-4)


def test_backend_cuda():
    if not hasattr(torch, "compile"):
        pytest.skip("torch.compile needs torch 2")
    import ptc.backend
    torch.manual_seed(4)
    m = Mlp().cuda().eval()
    b = ptc.backend.make_backend("cuda")
    cm = torch.compile(m, backend=b)
    x = torch.randn(32, 64, device="cuda")
    with torch.no_grad():
        out = cm(x)
        ref = m(x)
    _close(out, ref, 1e-4)
    assert not b.fallbacks, b.fallbacks


def test_cpu_tensor_refused_by_cuda_executable():
    x = torch.randn(4, 8, device="cuda")
    fn = _compile(Chain(), [x])
    with pytest.raises(Exception):
        fn(torch.randn(4, 8))


# ---- float32 matmul precision (TF32) ----------------------------------------------------
# ptc.from_fx reads torch.get_float32_matmul_precision() and
# torch.backends.cudnn.allow_tf32 when it converts a graph and passes them to
# ptc_compile (matmul_precision / conv_precision): "highest" = full f32 math,
# "high" = TF32 tensor cores like torch under the same setting. Also run with
# PTC_CUDA_BLASLT=0 (the generated tensor-core GEMM instead of cuBLASLt).

class _Mm(nn.Module):
    def forward(self, a, b):
        return a @ b


def _mm_errors(precision):
    """(ptc's max error, torch's max error, scale) vs a float64 product of
    the same f32 inputs, with torch.set_float32_matmul_precision(precision)
    while compiling and running both."""
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        torch.manual_seed(5)
        a = torch.randn(3, 200, 1024, device="cuda")
        b = torch.randn(1024, 136, device="cuda")
        fn = _compile(_Mm(), [a, b])
        out = fn(a, b)
        ref = a @ b
    finally:
        torch.set_float32_matmul_precision(old)
    exact = a.double() @ b.double()
    scale = exact.abs().max().item()
    return ((out.double() - exact).abs().max().item(), (ref.double() - exact).abs().max().item(),
            scale)


def test_matmul_precision_highest_is_full_f32():
    err, _, scale = _mm_errors("highest")
    assert err / scale < 2e-6, (err, scale)   # TF32 (10-bit mantissa) would be ~1e-3


def test_matmul_precision_high_matches_torch_tf32():
    err, terr, scale = _mm_errors("high")
    # torch uses TF32 here; ptc must too (same order of error), and stay within
    # TF32's accuracy
    assert err / scale < 5e-3, (err, scale)
    assert err > terr / 20, (err, terr)


def test_conv_precision_follows_cudnn_allow_tf32():
    torch.manual_seed(6)
    conv = nn.Conv2d(64, 64, 3, padding=1).cuda().eval()
    x = torch.randn(2, 64, 20, 20, device="cuda")
    fn = _compile(conv, [x])  # allow_tf32 False (fixture): full f32
    with torch.no_grad():
        exact = F.conv2d(x.double(), conv.weight.double(), conv.bias.double(), padding=1)
        err = (fn(x).double() - exact).abs().max().item()
    assert err / exact.abs().max().item() < 2e-6, err


# ---- scaled_dot_product_attention (attention helper, issue 5) --------------------------
# f16/bf16 sdpa with head dims 32/64/128 runs as one fused flash-attention
# kernel (backends/cuda/cuda_attn.c); other cases take the decomposition.
class _Sdpa(nn.Module):
    def __init__(self, causal=False, scale=None):
        super().__init__()
        self.causal, self.scale = causal, scale

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, scale=self.scale)


class _SdpaMask(nn.Module):
    def forward(self, q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)


class _SdpaHeads(nn.Module):
    """HF-style: projections viewed as [B, L, H, E] and transposed (strided q/k/v)."""
    def __init__(self, d=256, h=4):
        super().__init__()
        self.h, self.qkv = h, nn.Linear(d, 3 * d)

    def forward(self, x):
        b, l, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = [t.view(b, l, self.h, d // self.h).transpose(1, 2) for t in (q, k, v)]
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return o.transpose(1, 2).reshape(b, l, d)


_ATTN_TOL = {torch.float16: 4e-3, torch.bfloat16: 2e-2, torch.float32: 1e-4}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 4, 128, 128, 64), (1, 3, 17, 17, 64), (2, 2, 1000, 1000, 32),
                                   (1, 2, 33, 70, 128), (2, 1, 1, 1, 64)])
def test_sdpa_cuda(dtype, causal, shape):
    b, h, l, s, e = shape
    torch.manual_seed(11)
    q = torch.randn(b, h, l, e, device="cuda", dtype=dtype)
    k = torch.randn(b, h, s, e, device="cuda", dtype=dtype)
    v = torch.randn(b, h, s, e, device="cuda", dtype=dtype)
    m = _Sdpa(causal)
    fn = _compile(m, [q, k, v])
    _close(fn(q, k, v), m(q, k, v), _ATTN_TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("kind", ["float", "bool"])
def test_sdpa_cuda_mask(dtype, kind):
    torch.manual_seed(12)
    q = torch.randn(2, 4, 70, 64, device="cuda", dtype=dtype)
    k = torch.randn(2, 4, 90, 64, device="cuda", dtype=dtype)
    v = torch.randn(2, 4, 90, 64, device="cuda", dtype=dtype)
    if kind == "bool":
        mask = torch.rand(2, 1, 70, 90, device="cuda") < 0.8
        mask[:, :, :, 0] = True  # no fully masked row (torch gives NaN there)
    else:
        mask = torch.randn(70, 90, device="cuda", dtype=dtype)
    m = _SdpaMask()
    fn = _compile(m, [q, k, v, mask])
    _close(fn(q, k, v, mask), m(q, k, v, mask), _ATTN_TOL[dtype])


def test_sdpa_cuda_scale_and_strided_heads():
    torch.manual_seed(13)
    q, k, v = (torch.randn(2, 3, 50, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    m = _Sdpa(False, 0.3)
    _close(_compile(m, [q, k, v])(q, k, v), m(q, k, v), 4e-3)
    heads = _SdpaHeads().cuda().to(torch.bfloat16).eval()
    x = torch.randn(2, 100, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        _close(_compile(heads, [x])(x), heads(x), 3e-2)


# ---- mode="reduce-overhead": CUDA graphs (issue 5) ------------------------------------
# The first call of a shape runs plainly, the second records a CUDA graph
# and replays it, later calls replay; inputs are copied into the graph's
# static inputs and outputs out of its static outputs (or, for calls on the
# same buffers as the call before, a graph on those buffers runs), so outputs
# of earlier calls stay valid and changed inputs are seen
# (backends/cuda/cuda_graph.h).
def _graph_line(fn):
    text = fn.compiled.executables[0].format()
    return next((l for l in text.splitlines() if l.startswith("graph mode")), "")


def _graph_count(line, what):
    import re
    m = re.search(r"(\d+) " + what, line)
    return int(m.group(1)) if m else -1


def test_reduce_overhead_from_fx_replays_with_new_inputs():
    torch.manual_seed(21)
    m = Chain()
    x = torch.randn(64, 1000, device="cuda")
    fn = _compile(m, [x], mode="reduce-overhead")
    outs, refs = [], []
    for i in range(5):
        xi = torch.randn(64, 1000, device="cuda") if i % 2 else x.mul_(1.5)  # in place, then new
        outs.append(fn(xi))
        refs.append(m(xi))
    for o, r in zip(outs, refs):  # earlier outputs are not overwritten by later replays
        _close(o, r, 1e-5)
    line = _graph_line(fn)
    assert line.startswith("graph mode (reduce-overhead): on"), line
    assert _graph_count(line, "CUDA graphs recorded") >= 1, line
    assert _graph_count(line, "replays") == 4, line


def test_reduce_overhead_shape_changes_and_streams():
    torch.manual_seed(22)
    m = Mlp().cuda().eval()
    x = torch.randn(8, 64, device="cuda")
    fn = _compile(m, [x], mode="reduce-overhead", dynamic=True)
    s = torch.cuda.Stream()
    with torch.no_grad():
        for i, b in enumerate([8, 16, 8, 16, 8, 3, 3, 3]):
            xi = torch.randn(b, 64, device="cuda")
            if i % 2:
                with torch.cuda.stream(s):
                    s.wait_stream(torch.cuda.current_stream())
                    out = fn(xi)
                s.synchronize()
            else:
                out = fn(xi)
            _close(out, m(xi), 1e-4)
    line = _graph_line(fn)
    assert _graph_count(line, "CUDA graphs recorded") >= 3, line
    assert _graph_count(line, "replays") == 5, line


def test_reduce_overhead_torch_compile_backend():
    if not hasattr(torch, "compile"):
        pytest.skip("torch.compile needs torch 2")
    import ptc.backend
    torch.manual_seed(23)
    m = Mlp().cuda().eval()
    b = ptc.backend.make_backend("cuda", mode="reduce-overhead")
    cm = torch.compile(m, backend=b)
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(32, 64, device="cuda")
            _close(cm(x), m(x), 1e-4)
    assert not b.fallbacks, b.fallbacks


def test_reduce_overhead_ptc_compile():
    if not (hasattr(ptc._C, "dyn_enable") and getattr(ptc._C, "DYN_SUPPORTED", 0)):
        pytest.skip("ptc.compile (bytecode capture) is not built here (-Ddynamo=false)")
    torch.manual_seed(24)
    m = Mlp().cuda().eval()
    cm = ptc.compile(m, backend="cuda", mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(16, 64, device="cuda")
            _close(cm(x), m(x), 1e-4)
