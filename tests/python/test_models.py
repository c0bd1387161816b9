"""test_models.py - whole models through torch.fx.symbolic_trace + ptc.from_fx,
compared with PyTorch eager; and ptc.explain.

Models: an MLP, a small CNN with BatchNorm (eval), torchvision resnet18 and
mobilenet_v2 (random weights, eval), a transformer encoder block written with
nn.Linear/LayerNorm/softmax attention, and GPT-style causal self-attention
(nanoGPT's registered tril buffer sliced to the sequence length, and a triu
mask built in the forward). The small models run on "cpu" and "ref"; the
torchvision models on "cpu" only (the reference interpreter's naive
convolutions would take minutes at 224x224).

Tolerances (float32 everywhere): ptc's cpu backend sums in another order than
ATen (tiled GEMM/conv externs, fused reductions, vectorised exp/tanh/erf), so
results differ by rounding: rtol 1e-4 / atol 1e-5 for the MLP and CNN, atol
1e-4 for the attention models (softmax and layer norm of 64-wide rows); for the
18- and 53-layer torchvision models the error grows with depth, so the bound
is relative to the output's scale: |out - ref| <= 1e-4 * max|ref| + 1e-4 * |ref|
(observed: about 1e-6 * max|ref| for both).
BatchNorm running statistics and affine parameters are randomised so that the
eval-mode normalisation is not the identity.
"""

import math
import os
import re

import pytest
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

import ptc
from model_util import randomize_bn




def _compile_and_compare(model, inputs, backend, rtol, atol, gm=None, scale_atol=False):
    """Traces (unless gm is given), compiles with from_fx, runs, compares with
    eager. Returns the from_fx result."""
    model.eval()
    if gm is None:
        gm = torch.fx.symbolic_trace(model)
    with torch.no_grad():
        expected = model(*inputs)
    cg = ptc.from_fx(gm, list(inputs), backend=backend)
    out = cg(*inputs)
    if scale_atol:
        atol = atol * expected.abs().max().item()
    torch.testing.assert_close(out, expected, rtol=rtol, atol=atol)
    # It ran in ptc (one compile, for this backend), not eagerly.
    assert cg.compiled.num_compiles == 1
    assert all(e.backend == backend for e in cg.compiled.executables)
    return cg


# ---- models -----------------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self, d_in=32, hidden=64, d_out=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, d_out)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = F.gelu(self.fc2(x))
        return self.fc3(x)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(self.gap(x), 1))


class EncoderBlock(nn.Module):
    """Post-LN transformer encoder block: multi-head softmax attention + GELU FFN."""

    def __init__(self, d=64, heads=4, ff=128):
        super().__init__()
        self.d, self.h, self.hd = d, heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ff)
        self.fc2 = nn.Linear(ff, d)

    def forward(self, x):
        b, t = x.size(0), x.size(1)
        qkv = self.qkv(x).view(b, t, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.hd)
        att = F.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, self.d)
        x = self.ln1(x + self.proj(y))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class CausalSelfAttention(nn.Module):
    """GPT-2 style causal attention (as nanoGPT writes it).

    mask="buffer": a registered tril buffer of the maximum length, sliced to
    the sequence length and compared with 0; mask="triu": a triu mask built
    in the forward from the scores' shape.
    """

    def __init__(self, d=64, heads=4, max_len=32, mask="buffer"):
        super().__init__()
        self.d, self.h, self.mask = d, heads, mask
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.register_buffer("bias", torch.tril(torch.ones(max_len, max_len))
                             .view(1, 1, max_len, max_len))

    def forward(self, x):
        b, t, c = x.size(0), x.size(1), self.d
        qkv = self.c_attn(x).split(self.d, dim=2)
        q = qkv[0].view(b, t, self.h, c // self.h).transpose(1, 2)
        k = qkv[1].view(b, t, self.h, c // self.h).transpose(1, 2)
        v = qkv[2].view(b, t, self.h, c // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.h))
        if self.mask == "buffer":
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        else:
            future = torch.ones_like(att).triu(1).bool()
            att = att.masked_fill(future, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class _BufferTracer(torch.fx.Tracer):
    # Buffers read in forward (nanoGPT's mask) become get_attr nodes, so
    # slicing them by a traced size is traceable.
    proxy_buffer_attributes = True


def _trace_with_buffers(model):
    return torch.fx.GraphModule(model, _BufferTracer().trace(model))


# ---- tests ------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["cpu", "ref"])
def test_mlp(backend):
    torch.manual_seed(0)
    _compile_and_compare(MLP(), [torch.randn(4, 32)], backend, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", ["cpu", "ref"])
def test_cnn_batchnorm(backend):
    torch.manual_seed(1)
    model = randomize_bn(SmallCNN(), torch.Generator().manual_seed(1))
    _compile_and_compare(model, [torch.randn(2, 3, 16, 16)], backend, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", ["cpu", "ref"])
def test_transformer_encoder_block(backend):
    torch.manual_seed(2)
    _compile_and_compare(EncoderBlock(), [torch.randn(2, 16, 64)], backend, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mask", ["buffer", "triu"])
@pytest.mark.parametrize("backend", ["cpu", "ref"])
def test_gpt_causal_attention(backend, mask):
    torch.manual_seed(3)
    model = CausalSelfAttention(mask=mask).eval()
    x = torch.randn(2, 16, 64)  # shorter than max_len: the buffer is sliced
    gm = _trace_with_buffers(model) if mask == "buffer" else None
    _compile_and_compare(model, [x], backend, rtol=1e-4, atol=1e-4, gm=gm)


def _torchvision():
    return pytest.importorskip("torchvision", reason="python3-torchvision is not installed")


# 224x224, batch 2: the models' real input size (resnet18 ~3.6 GFLOP, mobilenet_v2
# ~0.6 GFLOP per run). What costs time is compiling the kernels: with a cold
# kernel cache about 7 s (resnet18, 41 steps) and 21 s (mobilenet_v2, 107
# steps) on 2 cores.
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_torchvision(name):
    tv = _torchvision()
    torch.manual_seed(4)
    model = getattr(tv.models, name)()  # random weights (no download)
    randomize_bn(model, torch.Generator().manual_seed(4)).eval()
    x = torch.randn(2, 3, 224, 224)
    _compile_and_compare(model, [x], "cpu", rtol=1e-4, atol=1e-4, scale_atol=True)


# ---- ptc.explain ------------------------------------------------------------------------------

def test_explain_encoder_block(tmp_path, capsys):
    torch.manual_seed(5)
    model = EncoderBlock().eval()
    x = torch.randn(2, 16, 64)
    rep = ptc.explain(model, x, backend="cpu", debug_dir=str(tmp_path))
    printed = capsys.readouterr().out
    assert printed.strip() == str(rep).strip()
    assert rep.unsupported is None
    assert rep.debug_dir == str(tmp_path)
    # The graph: matches the compiled one and shows the model's ops.
    assert rep.num_nodes == rep.compiled.graph.num_nodes > 0
    assert rep.graph == rep.compiled.graph.format()
    for op in ("linear", "softmax", "layer_norm", "gelu"):
        assert op in rep.graph, op
    # Kernels after fusion: what the executable reports, and its count; the
    # softmax/layer-norm reductions fuse with their neighbours.
    exe = rep.compiled.compiled.executables[0]
    assert rep.num_kernels == exe.num_kernels > 0
    assert rep.kernels == exe.format() and "backend cpu" in rep.kernels
    fusions = re.search(r"(\d+) fusions", rep.kernels)
    assert fusions and int(fusions.group(1)) > 0, rep.kernels
    # Where the generated sources are: the kernel cache paths it names exist,
    # and the debug dir holds a copy of each kernel's source.
    cached = re.findall(r"\((/[^,()]+\.c),", rep.kernels)
    assert cached and all(os.path.isfile(p) for p in cached), rep.kernels
    sources = [f for f in rep.files if f.endswith(".c")]
    assert len(sources) == len(cached), (rep.files, cached)
    for f in rep.files:
        assert os.path.isfile(os.path.join(rep.debug_dir, f))
    assert str(tmp_path) in printed and sources[0] in printed
    assert rep.guards == []  # static sizes: no shape guard


def test_explain_function_default_tempdir():
    def f(a, b):
        return torch.softmax(a * b + 1.0, dim=-1)

    a, b = torch.randn(3, 5), torch.randn(3, 5)
    rep = ptc.explain(f, a, b, backend="ref", verbose=False)
    assert os.path.isdir(rep.debug_dir) and "ptc-explain-" in rep.debug_dir
    assert rep.num_kernels > 0 and rep.graph
    torch.testing.assert_close(rep.compiled(a, b), f(a, b))


@torch.fx.wrap
def _not_a_torch_op(x):
    return x * 2


def test_explain_reports_unsupported():
    def f(x):
        return torch.relu(_not_a_torch_op(x))

    rep = ptc.explain(f, torch.randn(4), verbose=False)
    assert rep.unsupported is not None and "_not_a_torch_op" in rep.unsupported
    assert rep.num_kernels == 0 and rep.compiled is None
    assert "unsupported" in str(rep)


def test_explain_rejects_non_callable():
    with pytest.raises(TypeError, match="GraphModule"):
        ptc.explain(42, torch.randn(2), verbose=False)


# ---- autograd: ptc computes no gradients ------------------------------------------------------

def test_grad_needed_runs_eagerly_then_ptc_under_no_grad():
    torch.manual_seed(6)
    model = MLP().eval()
    x = torch.randn(4, 32, requires_grad=True)
    cg = ptc.from_fx(torch.fx.symbolic_trace(model), [x], backend="ref")
    with pytest.warns(UserWarning, match="grad"):
        out = cg(x)
    # Eager ran: the result carries autograd history and gradients flow.
    assert out.grad_fn is not None
    out.sum().backward()
    expected_grad = torch.autograd.grad(model(x).sum(), x)[0]
    torch.testing.assert_close(x.grad, expected_grad)
    assert cg.compiled.num_compiles == 0
    # Without grad mode the same input runs in ptc.
    with torch.no_grad():
        out = cg(x)
        expected = model(x)
    assert out.grad_fn is None
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
    assert cg.compiled.num_compiles == 1
