"""test_dynamo_models.py - nn.Modules through ptc.compile (bytecode capture):
modules with parameters, nested submodules, ModuleList / Sequential /
ModuleDict iteration (unrolled), super() calls and helper methods, the
compiled module staying a module (attribute access, state_dict, train/eval,
parameters reach the original), a hand-written transformer block (several
sequence lengths: automatic dynamic), GPT-style causal attention with a
sliced mask buffer, and torchvision resnet18 / mobilenet_v2 (random weights,
eval, 1x3x64x64 to keep CI time low on 2 cores). Each model: the compiled
output against eager, one graph and no break.

Tolerances (float32): ptc's cpu backend sums in another order than ATen, so
rtol 1e-4 / atol 1e-5 for small models, atol 1e-4 for attention (softmax and
layer norm over 64-wide rows); for the torchvision models the bound is
relative to the output's scale (|out - ref| <= 1e-4 * max|ref| + 1e-4 * |ref|),
as in test_models.py.
"""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ptc
from model_util import randomize_bn
from dynamo_util import HAS_CUDA, Delta, assert_same, fresh_dynamo  # noqa: F401




def run_model(model, inputs_list, backend="cpu", rtol=1e-4, atol=1e-5, scale_atol=False,
              graphs=1, breaks=0):
    """Compiles the module, runs it on each input tuple under no_grad, compares
    with eager; the first call compiles `graphs` graphs with `breaks` breaks.
    Returns the compiled module."""
    cm = ptc.compile(model, backend=backend)
    assert isinstance(cm, nn.Module), "ptc.compile(module) stays a module"
    with torch.no_grad():
        for i, inputs in enumerate(inputs_list):
            ref = model(*inputs)
            with Delta() as d:
                out = cm(*inputs)
            a = atol * ref.abs().max().item() if scale_atol else atol
            assert_same(out, ref, rtol=rtol, atol=a, path="input %d" % i)
            if i == 0:
                if graphs is not None:
                    assert d.graphs == graphs, "%d graphs, expected %d: %r" % (d.graphs, graphs, d)
                if breaks is not None:
                    assert d.breaks == breaks, "%d breaks, expected %d: %r" % (d.breaks, breaks, d)
    return cm


# ---- small modules ----------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self, d_in=16, hidden=32, d_out=8):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, d_out)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Stack(nn.Module):
    """ModuleList, Sequential and ModuleDict iteration, a parameter used
    directly, a buffer, a helper method and a plain attribute."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
        self.seq = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh())
        self.heads = nn.ModuleDict({"a": nn.Linear(8, 2), "b": nn.Linear(8, 3)})
        self.gain = nn.Parameter(torch.randn(8))
        self.register_buffer("shift", torch.randn(8))
        self.depth_scale = 0.5

    def block(self, x, i):
        return torch.relu(self.layers[i](x)) + x * self.depth_scale

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x) if i == 0 else self.block(x, i)
        x = self.seq(x) * self.gain + self.shift
        for m in self.seq:
            if isinstance(m, nn.Linear):
                x = x + m.bias
        outs = {name: head(x) for name, head in self.heads.items()}
        return outs, len(self.layers)


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        return self.lin(x)


class Derived(Base):
    def __init__(self):
        super().__init__()
        self.extra = nn.Linear(6, 6)

    def forward(self, x):
        y = super().forward(x)
        return self.extra(y) + Base.forward(self, x)


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = F.max_pool2d(x, 2)
        return self.fc(torch.flatten(self.pool(x), 1))


def test_mlp():
    torch.manual_seed(0)
    run_model(MLP(), [(torch.randn(4, 16),), (torch.randn(4, 16),)])


@pytest.mark.parametrize("backend", ["eager", "ref"])
def test_mlp_other_backends(backend):
    torch.manual_seed(0)
    run_model(MLP(), [(torch.randn(4, 16),)], backend=backend)


def test_module_containers_iteration():
    torch.manual_seed(1)
    run_model(Stack(), [(torch.randn(5, 8),), (torch.randn(5, 8),)])


def test_super_forward():
    torch.manual_seed(2)
    run_model(Derived(), [(torch.randn(3, 6),)])


def test_conv_bn_eval():
    torch.manual_seed(3)
    m = randomize_bn(Conv(), torch.Generator().manual_seed(3)).eval()
    run_model(m, [(torch.randn(2, 3, 8, 8),)])


def test_function_calling_module():
    torch.manual_seed(4)
    m = MLP().eval()

    def f(x, y):
        return m(x) + m(y) * 2
    cf = ptc.compile(f)
    x, y = torch.randn(2, 16), torch.randn(2, 16)
    with torch.no_grad():
        with Delta() as d:
            out = cf(x, y)
        assert_same(out, f(x, y), rtol=1e-4, atol=1e-5)
    assert d.graphs == 1 and d.breaks == 0, d


def test_compiled_module_is_a_module():
    torch.manual_seed(5)
    m = MLP()
    cm = ptc.compile(m)
    assert isinstance(cm, nn.Module)
    assert cm.fc1 is m.fc1
    assert cm.fc1.weight is m.fc1.weight
    assert [p for p in cm.parameters()] == [p for p in m.parameters()] or \
        all(a is b for a, b in zip(cm.parameters(), m.parameters()))
    sd = cm.state_dict()
    assert any(k.endswith("fc1.weight") for k in sd)
    cm.eval()
    assert not m.training
    cm.extra_scale = 5.0  # a write through the compiled module reaches the original
    assert m.extra_scale == 5.0
    cm.train()
    assert m.training
    x = torch.randn(2, 16)
    with torch.no_grad():
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)


def test_module_output_requires_grad_in_grad_mode():
    # a module called in grad mode: parameters require grad, so must the output
    torch.manual_seed(6)
    m = MLP()
    cm = ptc.compile(m)
    x = torch.randn(3, 16)
    ref = m(x)
    out = cm(x)
    assert_same(out, ref, rtol=1e-4, atol=1e-5)
    out.sum().backward()
    g = m.fc1.weight.grad.clone()
    m.zero_grad()
    ref.sum().backward()
    torch.testing.assert_close(g, m.fc1.weight.grad, rtol=1e-4, atol=1e-5)


def test_module_training_step_matches_eager():
    torch.manual_seed(7)
    m1 = MLP()
    m2 = MLP()
    m2.load_state_dict(m1.state_dict())
    cm = ptc.compile(m2)
    opt1 = torch.optim.SGD(m1.parameters(), lr=0.1)
    opt2 = torch.optim.SGD(m2.parameters(), lr=0.1)
    for step in range(3):
        x, y = torch.randn(4, 16), torch.randn(4, 8)
        for model, opt in ((m1, opt1), (cm, opt2)):
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
        with torch.no_grad():
            x = torch.randn(4, 16)
            assert_same(cm(x), m1(x), rtol=1e-4, atol=1e-5, path="after step %d" % step)


# ---- transformer block --------------------------------------------------------------------------

class TransformerBlock(nn.Module):
    """Pre-LN transformer block written by hand: multi-head attention with an
    optional causal mask, GELU MLP, residuals."""

    def __init__(self, d=64, heads=4, ff=128, max_len=32, causal=True):
        super().__init__()
        self.d, self.h, self.hd = d, heads, d // heads
        self.causal = causal
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)).view(1, 1, max_len, max_len))

    def attention(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(self.d, dim=2)
        q = q.view(B, T, self.h, self.hd).transpose(1, 2)
        k = k.view(B, T, self.h, self.hd).transpose(1, 2)
        v = v.view(B, T, self.h, self.hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd))
        if self.causal:
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def test_transformer_block():
    torch.manual_seed(8)
    m = TransformerBlock().eval()
    run_model(m, [(torch.randn(2, 16, 64),), (torch.randn(2, 16, 64),)], atol=1e-4)


def test_transformer_block_not_causal_ref_backend():
    torch.manual_seed(9)
    m = TransformerBlock(causal=False).eval()
    run_model(m, [(torch.randn(1, 8, 64),)], backend="ref", atol=1e-4)


def test_transformer_block_sequence_lengths():
    # sizes 8, 12, 16, 20: static then dynamic -> 2 compiles in all
    torch.manual_seed(10)
    m = TransformerBlock().eval()
    cm = ptc.compile(m)
    with torch.no_grad(), Delta() as d:
        for t in [8, 12, 16, 20]:
            x = torch.randn(2, t, 64)
            assert_same(cm(x), m(x), rtol=1e-4, atol=1e-4, path="T=%d" % t)
    assert d.graphs == 2, d


def test_transformer_stack_module_list():
    torch.manual_seed(11)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 64)
            self.pos = nn.Parameter(torch.randn(1, 32, 64) * 0.02)
            self.blocks = nn.ModuleList([TransformerBlock() for _ in range(2)])
            self.ln = nn.LayerNorm(64)
            self.head = nn.Linear(64, 50, bias=False)

        def forward(self, idx):
            t = idx.shape[1]
            x = self.emb(idx) + self.pos[:, :t]
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln(x))
    m = Model().eval()
    run_model(m, [(torch.randint(0, 50, (2, 10)),)], atol=1e-4)


# ---- torchvision ---------------------------------------------------------------------------------

def _torchvision():
    return pytest.importorskip("torchvision", reason="torchvision is not installed")


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_torchvision(name):
    tv = _torchvision()
    torch.manual_seed(12)
    model = getattr(tv.models, name)()  # random weights (no download)
    randomize_bn(model, torch.Generator().manual_seed(12)).eval()
    x = torch.randn(1, 3, 64, 64)
    run_model(model, [(x,)], rtol=1e-4, atol=1e-4, scale_atol=True)


def test_torchvision_explain_counts():
    tv = _torchvision()
    torch.manual_seed(13)
    model = tv.models.resnet18().eval()
    with torch.no_grad():
        e = ptc.explain(lambda x: model(x), torch.randn(1, 3, 64, 64))
    assert e.graph_count == 1, str(e)
    assert e.break_reasons == []
    assert e.op_count >= 40  # 20 convs, 20 batch norms, relus, adds, pool, fc


# ---- cuda (skipped without a GPU) ------------------------------------------------------------------

@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("backend", ["cuda", "auto"])
def test_cuda_models(backend):
    torch.manual_seed(14)
    mlp = MLP().cuda().eval()
    run_model(mlp, [(torch.randn(4, 16, device="cuda"),), (torch.randn(4, 16, device="cuda"),)],
              backend=backend, rtol=1e-4, atol=1e-4)
    blk = TransformerBlock().cuda().eval()
    run_model(blk, [(torch.randn(2, 16, 64, device="cuda"),)], backend=backend, rtol=1e-3, atol=1e-3)


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
def test_cuda_side_effects_and_break(capsys):
    def f(x, lst):
        x.mul_(2)
        lst.append(x.sum())
        print("n", len(lst))
        return torch.relu(x) + 1
    x = torch.randn(8, device="cuda")
    xr = x.clone()
    lst, lr = [], []
    out = ptc.compile(f, backend="cuda")(x, lst)
    ref = f(xr, lr)
    assert_same(out, ref, rtol=1e-5, atol=1e-5)
    assert_same(x, xr)
    assert_same(lst, lr, rtol=1e-5, atol=1e-5)


# ---- fullgraph / dynamic on whole models ------------------------------------------------------------

def test_resnet18_fullgraph():
    tv = _torchvision()
    torch.manual_seed(15)
    model = randomize_bn(tv.models.resnet18(), torch.Generator().manual_seed(15)).eval()
    cm = ptc.compile(model, fullgraph=True)
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        ref = model(x)
        out = cm(x)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4 * ref.abs().max().item())


def test_transformer_block_dynamic_true():
    torch.manual_seed(16)
    m = TransformerBlock().eval()
    cm = ptc.compile(m, dynamic=True)
    with torch.no_grad(), Delta() as d:
        for t in [6, 9, 13]:
            x = torch.randn(2, t, 64)
            assert_same(cm(x), m(x), rtol=1e-4, atol=1e-4, path="T=%d" % t)
    assert d.graphs == 1, d


# ---- patterns common in model code ------------------------------------------------------------------

class Config:
    hidden = 16
    eps = 1e-5
    use_gate = True


class ModelCodePatterns(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.proj = nn.Linear(cfg.hidden, cfg.hidden)
        self.norm = nn.LayerNorm(cfg.hidden, eps=cfg.eps)

    def forward(self, x, mask=None, **kwargs):
        scale = x.shape[-1] ** -0.5
        h = self.proj(x) * scale
        if getattr(self.cfg, "use_gate", False):
            h = h * torch.sigmoid(h)
        att = torch.einsum("bid,bjd->bij", h, h)
        if mask is not None:
            att = att.masked_fill(~mask, float("-inf"))
        att = att.softmax(-1)
        out = self.norm(torch.einsum("bij,bjd->bid", att, h) + x)
        img = F.interpolate(out.unsqueeze(1), scale_factor=2, mode="nearest").squeeze(1)
        return {"hidden": out, "up": img, "extra": kwargs.get("tag")}


def test_model_code_patterns():
    torch.manual_seed(17)
    m = ModelCodePatterns(Config()).eval()
    x = torch.randn(2, 5, 16)
    mask = torch.ones(2, 5, 5, dtype=torch.bool).tril()
    cm = ptc.compile(m)
    with torch.no_grad():
        for args, kw in [((x,), {}), ((x, mask), {"tag": "t"}), ((x,), {"tag": "u"})]:
            assert_same(cm(*args, **kw), m(*args, **kw), rtol=1e-4, atol=1e-4, path=str(sorted(kw)))


def test_warning_in_forward_each_call():
    import warnings

    class W(nn.Module):
        def forward(self, x):
            if x.shape[0] > 1:
                warnings.warn("batch larger than one")
            return x * 2
    m = W()
    cm = ptc.compile(m)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert_same(cm(torch.ones(2, 2)), torch.full((2, 2), 2.0))
    assert sum("batch larger" in str(w.message) for w in caught) == 3


def test_compiled_training_step_function():
    # forward, loss, backward and the optimizer step all inside the compiled function
    torch.manual_seed(18)
    m1, m2 = MLP(), MLP()
    m2.load_state_dict(m1.state_dict())
    o1 = torch.optim.SGD(m1.parameters(), lr=0.05, momentum=0.9)
    o2 = torch.optim.SGD(m2.parameters(), lr=0.05, momentum=0.9)

    def step(model, opt, x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    cstep = ptc.compile(step)
    for i in range(4):
        x, y = torch.randn(4, 16), torch.randn(4, 8)
        l1 = step(m1, o1, x, y)
        l2 = cstep(m2, o2, x, y)
        torch.testing.assert_close(l2, l1, rtol=1e-4, atol=1e-5)
        for (n, p1), p2 in zip(m1.named_parameters(), m2.parameters()):
            torch.testing.assert_close(p2, p1, rtol=1e-4, atol=1e-5, msg=lambda s: "step %d %s: %s" % (i, n, s))


def test_compiled_submodule_inside_compiled_module():
    torch.manual_seed(19)
    m = TransformerBlock().eval()
    x = torch.randn(2, 8, 64)
    with torch.no_grad():
        ref = m(x)
        m.mlp = ptc.compile(m.mlp, backend="eager")
        out = ptc.compile(m)(x)
    assert_same(out, ref, rtol=1e-4, atol=1e-4)
