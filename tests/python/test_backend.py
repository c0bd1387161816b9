"""test_backend.py - ptc as a torch.compile backend (PyTorch >= 2 only).

torch.compile(model, backend=ptc.backend / ptc.make_backend(...)) must equal
eager (rtol 1e-4, atol 1e-4: float32, ptc sums in another order) for an MLP
and a transformer encoder block; a graph with a target ptc does not map runs
eagerly after a warning listing it; calls that need gradients run eagerly
(ptc computes none). On torch 1.13 (no torch.compile) the module is skipped
with that reason; `import ptc.backend` must still work there.
"""

import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ptc

TOL = dict(rtol=1e-4, atol=1e-4)
TORCH_MAJOR = int(torch.__version__.split(".")[0])


def test_backend_imports_on_any_torch():
    import ptc.backend as mod

    b = ptc.make_backend("ref") if hasattr(ptc, "make_backend") else mod.make_backend("ref")
    assert callable(ptc.backend) and callable(b)
    assert b.backend == "ref" and b.compiled == [] and b.fallbacks == []


needs_compile = pytest.mark.skipif(
    TORCH_MAJOR < 2 or not hasattr(torch, "compile"),
    reason="torch %s has no torch.compile (PyTorch >= 2 needed)" % torch.__version__)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x))).softmax(dim=-1)


class EncoderBlock(nn.Module):
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
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.hd).permute(2, 0, 3, 1, 4).unbind(0)
        att = F.softmax(q @ k.transpose(-2, -1) * self.hd ** -0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, self.d)
        x = self.ln1(x + self.proj(y))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


def _compiled(model, backend):
    torch._dynamo.reset()
    return torch.compile(model, backend=backend)


@needs_compile
@pytest.mark.parametrize("which", ["mlp", "encoder"])
def test_matches_eager(which):
    torch.manual_seed(0)
    model, x = ((MLP(), torch.randn(8, 32)) if which == "mlp"
                else (EncoderBlock(), torch.randn(2, 16, 64)))
    model.eval()
    b = ptc.backend.default
    n_before = len(b.compiled)
    cm = _compiled(model, ptc.backend)
    with torch.no_grad():
        expected = model(x)
        out = cm(x)
        out2 = cm(x)
    torch.testing.assert_close(out, expected, **TOL)
    torch.testing.assert_close(out2, expected, **TOL)
    # Dynamo gave ptc at least one graph, which ran in ptc.
    assert len(b.compiled) > n_before
    assert all(c.compiled.num_compiles >= 1 for c in b.compiled[n_before:])


@needs_compile
def test_make_backend_ref_and_dynamic_batch():
    torch.manual_seed(1)
    model = MLP().eval()
    b = ptc.make_backend("ref")
    cm = _compiled(model, b)
    with torch.no_grad():
        for batch in (2, 5, 9, 2):
            x = torch.randn(batch, 32)
            torch.testing.assert_close(cm(x), model(x), **TOL)
    assert b.compiled and b.fallbacks == []
    # Dynamo recompiles once with a symbolic batch (its size input is mapped
    # to x.size(0) by from_fx); no graph per batch size.
    assert len(b.compiled) <= 2, len(b.compiled)
    assert all(c.compiled.executables[0].backend == "ref" for c in b.compiled)
    inline = getattr(getattr(torch._dynamo, "config", None), "inline_inbuilt_nn_modules", False)
    if inline:  # parameters arrive as graph inputs (fc1/fc2 weight and bias)
        assert all(c.num_parameter_inputs == 4 for c in b.compiled)
    else:       # parameters are get_attr constants of the graph module
        assert all(c.num_parameter_inputs == 0 for c in b.compiled)


@needs_compile
def test_unsupported_op_falls_back_with_warning():
    # torch.cummax has no ptc mapping: the whole graph runs eagerly.
    def f(x):
        values, _ = torch.cummax(x * 2.0, dim=1)
        return values + 1.0

    b = ptc.make_backend("cpu")
    cf = _compiled(f, b)
    x = torch.randn(4, 6)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = cf(x)
    torch.testing.assert_close(out, f(x))
    msgs = [str(m.message) for m in w if "ptc.backend" in str(m.message)]
    assert msgs and "cummax" in msgs[0], [str(m.message) for m in w]
    assert b.fallbacks and "cummax" in b.fallbacks[0]
    assert b.compiled == []


@needs_compile
def test_grad_mode_runs_eagerly():
    torch.manual_seed(2)
    model = MLP()
    b = ptc.make_backend("ref")
    cm = _compiled(model, b)
    x = torch.randn(4, 32)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = cm(x)
    # Gradients flow as in eager (ptc computed nothing here).
    out.sum().backward()
    ref = model(x)
    torch.testing.assert_close(out, ref, **TOL)
    assert model.fc1.weight.grad is not None
    assert any("grad" in str(m.message) for m in w), [str(m.message) for m in w]
