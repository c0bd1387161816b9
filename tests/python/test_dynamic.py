"""test_dynamic.py - dynamic batch sizes through ptc.from_fx and its
CompiledFunction: automatic dynamic after a size-caused recompile,
ptc.mark_dynamic up front, and dynamic=False recompiling per size up to the
cap, then running eagerly with a one-time warning.

Results are compared with eager at rtol 1e-4 / atol 1e-5 (float32; ptc sums
in another order than ATen).
"""

import warnings

import pytest
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

import ptc

TOL = dict(rtol=1e-4, atol=1e-5)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.ln = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        h = F.gelu(self.ln(self.fc1(x)))
        return torch.softmax(self.fc2(h), dim=-1) + x.sum(dim=1, keepdim=True)


def _model():
    torch.manual_seed(0)
    model = Net().eval()
    return model, torch.fx.symbolic_trace(model)


def _check(cg, model, batch):
    x = torch.randn(batch, 16)
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(cg(x), expected, **TOL)


def test_automatic_dynamic_batch_1_3_8_17():
    model, gm = _model()
    cg = ptc.from_fx(gm, [torch.randn(1, 16)], backend="cpu")
    cf = cg.compiled
    _check(cg, model, 1)
    assert cf.num_compiles == 1
    _check(cg, model, 3)  # size-caused recompile: dim 0 becomes dynamic
    assert cf.num_compiles == 2
    assert (0, 0) in cf.dynamic_dims and (0, 1) not in cf.dynamic_dims
    assert len(cf.recompile_reasons) >= 1 and all(isinstance(r, str) and r
                                                  for r in cf.recompile_reasons)
    reasons = list(cf.recompile_reasons)
    for batch in (8, 17, 3, 8):
        _check(cg, model, batch)
    assert cf.num_compiles == 2, cf.recompile_reasons
    assert list(cf.recompile_reasons) == reasons
    # Batch 1 was compiled static (sizes 0/1 specialise) and still hits.
    _check(cg, model, 1)
    assert cf.num_compiles == 2


def test_mark_dynamic_single_compile():
    model, gm = _model()
    x = torch.randn(3, 16)
    ptc.mark_dynamic(x, 0)  # marks the tensor itself
    assert 0 in x._ptc_dynamic_dims
    cg = ptc.from_fx(gm, [x], backend="cpu")
    cf = cg.compiled
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(cg(x), expected, **TOL)
    for batch in (8, 17, 5, 2):
        _check(cg, model, batch)
    assert cf.num_compiles == 1, cf.recompile_reasons
    assert cf.dynamic_dims == frozenset({(0, 0)})


def test_dynamic_true_single_compile():
    model, gm = _model()
    cg = ptc.from_fx(gm, [torch.randn(4, 16)], backend="ref", dynamic=True)
    for batch in (4, 9, 2):
        _check(cg, model, batch)
    assert cg.compiled.num_compiles == 1, cg.compiled.recompile_reasons


def test_static_recompiles_up_to_cap_then_eager():
    # "ref" compiles in microseconds; the recompile policy is the same for
    # every backend.
    model, gm = _model()
    cg = ptc.from_fx(gm, [torch.randn(2, 16)], backend="ref", dynamic=False)
    cf = cg.compiled
    sizes = list(range(2, 30))
    caught = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for batch in sizes:
            _check(cg, model, batch)  # eager or not, the results are right
        caught = [str(x.message) for x in w]
    n = cf.num_compiles
    # Every size compiled on its own until the cap: never dynamic.
    assert cf.dynamic_dims == frozenset()
    assert 2 <= n < len(sizes), "no cap was hit in %d sizes" % len(sizes)
    assert len(cf.recompile_reasons) == n - 1
    # One warning, naming the eager fallback, however many calls fell back.
    fallback = [m for m in caught if "eager" in m.lower() or "fall" in m.lower()]
    assert len(fallback) == 1, caught
    # Sizes compiled before the cap still run in ptc, without a new compile.
    _check(cg, model, 2)
    _check(cg, model, sizes[n + 3])
    assert cf.num_compiles == n
