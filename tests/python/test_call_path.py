"""test_call_path.py - the per-call paths of the Python binding (issue 5,
host time of small graphs): how tensors are lent to libptc (torch's getters
on torch 1.x, DLPack on torch 2) for every kind of input, outputs allocated
from per-dtype templates (new_empty), CompiledGraph's direct call of its
CompiledFunction, and ptc.compile's module call without nn.Module.__call__
(hooks on the wrapper, the wrapped module or global still run; a patched
Module.__call__ is still called), the default-dtype guard read in C and
module attribute guards read from the module dict (a monkeypatched torch
function is seen). Runs on the cpu backend."""
import sys

import pytest
import torch
import torch.fx

import ptc

HAS_DYN = (sys.version_info[:2] in ((3, 11), (3, 12))
           and getattr(ptc._C, "DYN_SUPPORTED", 0) and hasattr(ptc._C, "dyn_enable"))
needs_dyn = pytest.mark.skipif(not HAS_DYN, reason="ptc._C without the bytecode capture")


def tiny(x):
    y = torch.abs(-x) + 0.5
    y = torch.sqrt(y) * 0.1
    y = torch.sigmoid(torch.tanh(y))
    return (torch.relu(y) - 0.25) * 3.0


class Tiny(torch.nn.Module):
    def forward(self, x):
        return tiny(x)


class Mixed(torch.nn.Module):
    """Inputs of several dtypes; outputs of several dtypes and ranks."""

    def forward(self, x, mask, idx):
        s = torch.where(mask, x, -x)
        return s * 2, (s > 0), idx + 1, s.sum()


@pytest.fixture(autouse=True)
def fresh_capture():
    if HAS_DYN:
        ptc.reset()
    yield
    if HAS_DYN:
        ptc.reset()


def _fx(m, inputs):
    return ptc.from_fx(torch.fx.symbolic_trace(m), list(inputs), backend="cpu")


def test_inputs_of_every_kind():
    """Contiguous, transposed, sliced (offset), zero-dim, empty, bool, int,
    requiring grad (under no_grad), nn.Parameter: each call right."""
    m = Tiny()
    base = torch.randn(6, 8)
    cases = [base, base.t(), base[2:, 1:5], torch.tensor(0.7), torch.randn(0, 3),
             torch.nn.Parameter(torch.randn(4, 4)), torch.randn(5, requires_grad=True),
             base[:, ::2], base.unsqueeze(1).expand(6, 3, 8)]
    with torch.no_grad():
        for x in cases:
            fn = _fx(m, [x])
            for _ in range(2):
                out = fn(x)
                ref = tiny(x)
                assert out.shape == ref.shape and out.dtype == ref.dtype
                assert not out.requires_grad
                torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)


def test_mixed_dtypes_and_outputs():
    m = Mixed()
    x = torch.randn(3, 5)
    mask = torch.rand(3, 5) > 0.5
    idx = torch.arange(15, dtype=torch.int64).reshape(3, 5)
    fn = _fx(m, [x, mask, idx])
    for _ in range(3):
        outs, refs = fn(x, mask, idx), m(x, mask, idx)
        assert len(outs) == 4
        for o, r in zip(outs, refs):
            assert o.dtype == r.dtype and o.shape == r.shape and o.is_contiguous()
            torch.testing.assert_close(o, r)
    a, b = fn(x, mask, idx)[0], fn(x, mask, idx)[0]
    assert a.data_ptr() != b.data_ptr()  # fresh outputs every call


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16, torch.int32,
                                   torch.uint8, torch.bool])
def test_output_templates_per_dtype(dtype):
    x = (torch.rand(4, 6) * 10).to(dtype)

    class Id2(torch.nn.Module):
        def forward(self, t):
            return t.clone(), t.reshape(-1)[:5].clone()

    fn = _fx(Id2(), [x])
    a, b = fn(x)
    assert a.dtype == dtype and b.dtype == dtype and a.shape == (4, 6) and b.shape == (5,)
    assert torch.equal(a, x) and torch.equal(b, x.reshape(-1)[:5])


def test_executable_run_given_outputs():
    x = torch.randn(4, 4)
    fn = _fx(Tiny(), [x])
    fn(x)
    exe = fn.compiled.executables[-1]
    out = torch.empty(4, 4)
    res = exe.run([x], [out])
    assert res[0] is out
    torch.testing.assert_close(out, tiny(x))
    res2 = exe.run([x.t().contiguous().t()])  # strided input, allocated output
    torch.testing.assert_close(res2[0], tiny(x))


def test_compiled_graph_direct_call():
    """After the first call, CompiledGraph calls its CompiledFunction
    directly: one output comes back as the tensor, several as the tuple."""
    x = torch.randn(3, 3)
    fn = _fx(Tiny(), [x])
    out = fn(x)
    assert isinstance(out, torch.Tensor)
    assert fn._fast is fn.compiled and fn._fast_single
    torch.testing.assert_close(fn(x), tiny(x))

    class Two(torch.nn.Module):
        def forward(self, t):
            return t + 1, t * 2

    g = _fx(Two(), [x])
    g(x)
    r = g(x)
    assert isinstance(r, tuple) and len(r) == 2 and g._fast_single is False
    with pytest.raises(TypeError):
        fn(x, x)  # wrong arity still goes the checked way


@needs_dyn
def test_module_call_hooks_still_run():
    m = Tiny()
    cm = ptc.compile(m)
    x = torch.randn(5)
    calls = []
    with torch.no_grad():
        torch.testing.assert_close(cm(x), tiny(x))
        h1 = m.register_forward_hook(lambda mod, inp, out: calls.append("inner"))
        h2 = cm.register_forward_pre_hook(lambda mod, inp: calls.append("outer-pre"))
        torch.testing.assert_close(cm(x), tiny(x))
        assert calls == ["outer-pre", "inner"]
        h1.remove()
        h2.remove()
        calls.clear()
        cm(x)
        assert calls == []
        hg = torch.nn.modules.module.register_module_forward_hook(
            lambda mod, inp, out: calls.append(type(mod).__name__))
        try:
            cm(x)
        finally:
            hg.remove()
        assert sorted(calls) == ["OptimizedModule", "Tiny"]
        calls.clear()
        torch.testing.assert_close(cm(x=x), tiny(x))  # keyword arguments
        assert calls == []
    s = ptc.compile_stats()
    assert s["graphs"] == 1 and s["cache_hits"] >= 4, s


@needs_dyn
def test_module_call_patched_module_call_is_used():
    """torch.fx patches nn.Module.__call__ while tracing: an OptimizedModule
    call then goes through the patched function."""
    cm = ptc.compile(Tiny())
    x = torch.randn(4)
    seen = []
    orig = torch.nn.Module.__call__

    def patched(self, *args, **kwargs):
        seen.append(type(self).__name__)
        return orig(self, *args, **kwargs)

    with torch.no_grad():
        cm(x)
        torch.nn.Module.__call__ = patched
        try:
            out = cm(x)
        finally:
            torch.nn.Module.__call__ = orig
        torch.testing.assert_close(out, tiny(x))
        assert "OptimizedModule" in seen


@needs_dyn
def test_module_call_subclass_call_override():
    """A wrapped module overriding __call__ is called through it."""
    seen = []

    class Own(Tiny):
        def __call__(self, *args, **kwargs):
            seen.append("own")
            return super().__call__(*args, **kwargs)

    cm = ptc.compile(Own())
    x = torch.randn(4)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), tiny(x))
    assert seen == ["own"]


@needs_dyn
def test_default_dtype_guard_in_c():
    from ptc import dynamo

    def f(x):
        return x + torch.ones(3)

    rep = str(dynamo.explain(f, torch.randn(3)))
    assert "torch.get_default_dtype()" in rep
    fn = ptc.compile(f)
    x = torch.randn(3, dtype=torch.float64)
    saved = torch.get_default_dtype()
    try:
        assert fn(x).dtype == torch.float64
        torch.set_default_dtype(torch.float64)
        out = fn(x)
        assert out.dtype == f(x).dtype
        torch.testing.assert_close(out, f(x))
    finally:
        torch.set_default_dtype(saved)


@needs_dyn
def test_module_attribute_guard_sees_monkeypatch():
    fn = ptc.compile(tiny)
    x = torch.randn(6)
    with torch.no_grad():
        torch.testing.assert_close(fn(x), tiny(x))
        orig = torch.relu
        torch.relu = lambda t: t * 0.0  # G['torch'].relu changes: the guard fails
        try:
            out = fn(x)
            torch.testing.assert_close(out, tiny(x))  # tiny reads the patched relu too
            assert float(out.abs().max()) == pytest.approx(0.75)
        finally:
            torch.relu = orig
        torch.testing.assert_close(fn(x), tiny(x))


@needs_dyn
@pytest.mark.parametrize("make", [
    lambda: torch.nn.LayerNorm(16),
    lambda: torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4)),
])
def test_compile_of_a_torch_module_is_captured(make):
    """ptc.compile(nn.LayerNorm(n)): torch's own forward frames are never
    captured, so the module ran eagerly (the H100 layernorm row of ptc.compile
    was torch's eager time); it now goes through ptc.dynamo._module_call and
    runs as one ptc graph, through the C call path and through .forward."""
    torch.manual_seed(0)
    m = make().eval()
    x = torch.randn(5, 16)
    f = ptc.compile(m, backend="cpu")
    s0 = ptc.compile_stats()
    with torch.no_grad():
        ref = m(x)
        outs = [f(x), f(x), f.forward(x)]
    s1 = ptc.compile_stats()
    for y in outs:
        torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)
    assert s1["graphs"] - s0["graphs"] == 1
    assert s1["cache_hits"] - s0["cache_hits"] >= 2
    assert s1["fallbacks"] == s0["fallbacks"] and s1["breaks"] == s0["breaks"]
