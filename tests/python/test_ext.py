"""test_ext.py - the ptc._C extension against its contract: module functions
and Error, the zero-copy DLPack exchange (inputs, caller outputs, borrowed
constants), every dtype, strided and broadcast inputs, zero-size and 0-d
tensors, Graph/Value/SymInt API and its errors, Executable checks and
devices, CompiledFunction caching / recompiles / automatic dynamic /
mark_dynamic / fallbacks, and 8 threads sharing one Executable."""
import gc
import os
import sys
import threading
import warnings

import pytest
import torch

import ptc
from ptc import _C

BACKENDS = ["ref", "cpu"]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
          torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool]


def rand(shape, dtype=torch.float32, gen=None):
    gen = gen or torch.Generator().manual_seed(0)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(dtype)
    lo, hi = (0, 100) if dtype == torch.uint8 else (-50, 50)
    return torch.randint(lo, hi, shape, generator=gen).to(dtype)


def unary_graph(op, shape, dtype=torch.float32, attrs=None, strides=None):
    g = ptc.Graph()
    x = g.add_input("x", dtype, shape, strides)
    y, = g.add_node(op, [x], attrs)
    g.add_output(y)
    return g


def binary_graph(op, shape_a, shape_b, dtype=torch.float32):
    g = ptc.Graph()
    a = g.add_input("a", dtype, shape_a)
    b = g.add_input("b", dtype, shape_b)
    y, = g.add_node(op, [a, b])
    g.add_output(y)
    return g


# ---- module ------------------------------------------------------------------------------

def test_module_functions():
    assert ptc.version() == _C.version() and ptc.version().count(".") == 2
    names = [b[0] for b in ptc.backends()]
    assert "ref" in names and "cpu" in names
    for name, ok, reason in ptc.backends():
        assert isinstance(ok, bool)
        assert (reason is None) == ok
    ops = ptc.ops()
    assert "add" in ops and "softmax" in ops and len(ops) == len(set(ops))
    assert sys.version_info[:2] in [(3, 11), (3, 12)]


def test_package_surface_lazy():
    for name in ["Error", "version", "backends", "ops", "Graph", "compile_graph",
                 "CompiledFunction", "mark_dynamic"]:
        assert hasattr(ptc, name), name
    assert ptc.compile_graph is _C.compile
    with pytest.raises(AttributeError):
        ptc.no_such_name  # noqa: B018


def test_error_attributes():
    g = ptc.Graph()
    x = g.add_input("x", "f32", [2])
    with pytest.raises(ptc.Error) as ei:
        g.add_node("no_such_op", [x])
    e = ei.value
    assert isinstance(e, RuntimeError)
    assert e.code == "NOT_FOUND"
    assert "no_such_op" in e.message
    assert str(e) == e.message if e.detail is None else str(e) == e.message + "\n" + e.detail
    plain = ptc.Error("by hand")
    assert plain.code == "UNKNOWN" and plain.detail is None


# ---- zero-copy exchange -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_inputs_lent_without_copy(dtype):
    base = rand((6, 8), dtype)
    for t in [base, base.t(), base[1:, ::2], base[2], base[0, 0], base[:, :1].expand(6, 5)]:
        d = _C._describe(t)
        assert d["data"] + d["byte_offset"] == t.data_ptr()
        assert d["shape"] == tuple(t.shape)
        assert d["strides"] is None or d["strides"] == t.stride()
        assert d["dtype"] == {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
                              torch.bfloat16: "bf16", torch.int8: "i8", torch.int16: "i16",
                              torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8",
                              torch.bool: "bool"}[dtype]


def test_requires_grad_input_is_lent_detached():
    t = torch.randn(3, requires_grad=True)
    d = _C._describe(t)
    assert d["requires_grad"] is True and d["data"] == t.data_ptr()


@pytest.mark.parametrize("backend", BACKENDS)
def test_outputs_written_in_place(backend):
    ex = ptc.compile_graph(unary_graph("relu", [4, 5]), backend=backend)
    x = torch.randn(4, 5)
    out = torch.full((4, 5), 7.0)
    ptr = out.data_ptr()
    res = ex.run([x], outputs=[out])
    assert res[0] is out and out.data_ptr() == ptr
    torch.testing.assert_close(out, torch.relu(x))
    # the output may alias the input: relu in place on x's own memory
    y = torch.randn(4, 5)
    expect = torch.relu(y)
    ex.run([y], outputs=[y])
    torch.testing.assert_close(y, expect)
    # a strided caller output (a transposed view) is written through its strides
    big = torch.zeros(5, 4)
    ex.run([x], outputs=[big.t()])
    torch.testing.assert_close(big.t(), torch.relu(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_constants_borrowed_not_copied(backend):
    w = torch.randn(5)
    g = ptc.Graph()
    x = g.add_input("x", torch.float32, [3, 5])
    c = g.add_constant("w", w)
    cc = g.add_constant("wc", w, copy=True)
    assert c.kind == "constant" and cc.kind == "constant"
    y, = g.add_node("add", [x, c])
    z, = g.add_node("add", [x, cc])
    g.add_output(y)
    g.add_output(z)
    ex = ptc.compile_graph(g, backend=backend)
    x_in = torch.randn(3, 5)
    before = w.clone()
    w.add_(10.0)  # borrowed memory: the next run sees the change; the copy does not
    ptr = w.data_ptr()
    del g
    gc.collect()
    borrowed, copied = ex.run([x_in])
    assert w.data_ptr() == ptr
    torch.testing.assert_close(borrowed, x_in + w)
    torch.testing.assert_close(copied, x_in + before)


def test_borrowed_constant_kept_alive_by_executable():
    g = ptc.Graph()
    x = g.add_input("x", torch.float32, [1000])
    w = torch.arange(1000, dtype=torch.float32)
    expect = w.clone()
    c = g.add_constant("w", w)
    y, = g.add_node("mul", [x, c])
    g.add_output(y)
    ex = ptc.compile_graph(g, backend="ref")
    refs = sys.getrefcount(w)
    del g, c, w
    gc.collect()
    torch.zeros(1000).fill_(-1)  # would reuse freed memory
    out, = ex.run([torch.ones(1000)])
    torch.testing.assert_close(out, expect)
    assert refs >= 3  # our local + argument + the graph's keep list


def test_noncontiguous_constant_is_copied():
    w = torch.randn(4, 3).t()
    g = ptc.Graph()
    x = g.add_input("x", torch.float32, [3, 4])
    c = g.add_constant("w", w)
    y, = g.add_node("add", [x, c])
    g.add_output(y)
    ex = ptc.compile_graph(g, backend="ref")
    xi = torch.randn(3, 4)
    expect = xi + w
    w.mul_(0)
    torch.testing.assert_close(ex.run([xi])[0], expect)


# ---- dtypes, layouts, sizes ----------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trip(backend, dtype):
    op, ref = ("logical_or", torch.logical_or) if dtype == torch.bool else ("maximum", torch.maximum)
    ex = ptc.compile_graph(binary_graph(op, [3, 4], [3, 4], dtype), backend=backend)
    a, b = rand((3, 4), dtype), rand((3, 4), dtype, torch.Generator().manual_seed(1))
    out, = ex.run([a, b])
    assert out.dtype == dtype and out.shape == (3, 4) and out.is_contiguous()
    assert torch.equal(out, ref(a, b))
    g = ptc.Graph()
    x = g.add_input("x", dtype, [3, 4])
    assert x.dtype == dtype


@pytest.mark.parametrize("backend", BACKENDS)
def test_strided_and_broadcast_inputs(backend):
    ex = ptc.compile_graph(binary_graph("mul", [4, 6], [4, 6]), backend=backend)
    base = torch.randn(6, 4)
    big = torch.randn(8, 12)
    col = torch.randn(4, 1)
    cases = [
        (base.t(), big[::2, ::2]),                 # transposed, sliced with steps
        (big[2:6, 3:9], col.expand(4, 6)),         # offset slice, stride-0 broadcast
        (torch.randn(6).expand(4, 6), base.t()),   # broadcast row
    ]
    for a, b in cases:
        out, = ex.run([a, b])
        torch.testing.assert_close(out, a * b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_size_and_zero_dim(backend):
    ex = ptc.compile_graph(unary_graph("neg", [0, 3]), backend=backend)
    out, = ex.run([torch.randn(0, 3)])
    assert out.shape == (0, 3)
    ex0 = ptc.compile_graph(unary_graph("exp", []), backend=backend)
    x = torch.tensor(1.5)
    out, = ex0.run([x])
    assert out.shape == () and torch.allclose(out, torch.exp(x))


# ---- Graph, Value, SymInt ----------------------------------------------------------------------

def test_graph_building_and_values():
    g = ptc.Graph()
    s = g.add_symbol("batch", 8)
    assert isinstance(s, ptc.SymInt) and s.hint == 8 and str(s) == "batch"
    assert g.add_symbol("one", 1) == 1 and isinstance(g.add_symbol("zero", 0), int)
    x = g.add_input("x", "f32", [s, 4])
    assert x.kind == "input" and x.name == "x" and x.ndim == 2 and x.dtype == torch.float32
    assert x.shape[1] == 4 and x.shape[0].id == s.id
    y, = g.add_node("sum", [x], {"dim": [1], "keepdim": False})
    assert y.kind == "node" and y.ndim == 1
    r, = g.add_node("reshape", [x], {"shape": [s * 2, 2]})
    assert str(r.shape[0]) == "2*batch"
    g.add_output(y)
    g.add_output(r)
    assert (g.num_inputs, g.num_outputs, g.num_nodes) == (1, 2, 2)
    assert g.inputs == (x,) and g.outputs == (y, r) and g.value(x.id) == x
    assert hash(g.value(x.id)) == hash(x)
    text = str(g)
    assert "sum" in text and "reshape" in text and text == g.format()
    assert '"sum"' in g.to_json()
    ex = ptc.compile_graph(g, backend="ref")
    xi = torch.randn(5, 4)
    out_sum, out_r = ex.run([xi])
    torch.testing.assert_close(out_sum, xi.sum(1))
    torch.testing.assert_close(out_r, xi.reshape(10, 2))


def test_attribute_kinds():
    g = ptc.Graph()
    x = g.add_input("x", torch.float32, [2, 3])
    y, = g.add_node("to_dtype", [x], {"dtype": torch.float64})
    assert y.dtype == torch.float64
    c, = g.add_node("clamp", [x], {"min": -0.5, "max": 0.5})
    m, = g.add_node("mean", [x], {"dim": [0, 1], "keepdim": True})
    g.add_output(c)
    g.add_output(m)
    ex = ptc.compile_graph(g, backend="ref")
    xi = torch.randn(2, 3)
    oc, om = ex.run([xi])
    torch.testing.assert_close(oc, xi.clamp(-0.5, 0.5))
    torch.testing.assert_close(om, xi.mean((0, 1), keepdim=True))


def test_graph_api_errors():
    g = ptc.Graph()
    a = g.add_input("a", torch.float32, [4, 3])
    b = g.add_input("b", torch.float32, [5])
    with pytest.raises(ptc.Error) as ei:
        g.add_node("add", [a, b])
    assert ei.value.code == "INVALID_ARGUMENT"
    assert str(ei.value) == "add: cannot broadcast [4, 3] with [5]"
    with pytest.raises(ptc.Error) as ei:
        g.add_node("not_an_op", [a])
    assert ei.value.code == "NOT_FOUND"
    with pytest.raises(ptc.Error) as ei:
        g.add_node("sum", [a], {"dim": "zero"})
    assert "dim" in str(ei.value)
    with pytest.raises(TypeError, match="attribute 'dim'"):
        g.add_node("sum", [a], {"dim": object()})
    with pytest.raises(TypeError):
        g.add_node("relu", [a.id])
    with pytest.raises(TypeError):
        g.add_input("x", torch.float32, 5)
    with pytest.raises(ValueError, match="unknown dtype name"):
        g.add_input("x", "float128", [2])
    with pytest.raises(ValueError, match="no ptc dtype"):
        g.add_input("x", torch.complex64, [2])
    with pytest.raises(TypeError):
        g.add_input("x", 3.0, [2])
    with pytest.raises(ValueError, match="rank"):
        g.add_input("x", torch.float32, [1] * 17)
    other = ptc.Graph()
    o = other.add_input("o", torch.float32, [4, 3])
    with pytest.raises(ValueError, match="another Graph"):
        g.add_node("add", [a, o])
    with pytest.raises(ptc.Error):
        ptc.compile_graph(ptc.Graph(), backend="ref")  # no outputs
    g.add_output(a)
    with pytest.raises(ptc.Error) as ei:
        ptc.compile_graph(g, backend="no_such_backend")
    assert ei.value.code == "NOT_FOUND"
    with pytest.raises(TypeError):
        ptc.compile_graph("graph")
    with pytest.raises(TypeError):
        ptc.compile_graph(g, dynamic_dims=[1])


def test_symint_arithmetic_and_guards():
    g = ptc.Graph()
    s = g.add_symbol("s", 6)
    t = g.add_symbol("t", 4)
    assert str(s * 4 // 4) == "s"
    assert isinstance(s * 4 - s * 4, int) and (s * 4 - s * 4) == 0
    assert str(2 + s) == str(s + 2)
    assert (s + t).hint == 10 and (s * t).hint == 24 and (s % 4).hint == 2 and (-s).hint == -6
    assert (10 - s).hint == 4
    assert g.sym("ceildiv", s, 4).hint == 2 and g.sym("max", s, t).hint == 6
    assert g.guards() == []
    assert s > 1                      # statically known from the range [2, ...): no guard
    assert g.guards() == []
    assert (s > t) is True            # decided from the hints: guard recorded
    assert len(g.guards()) == 1
    assert g.decide("==", s, 6) is True
    assert int(s) == 6 and len([0] * s) == 6
    assert any("6" in gd for gd in g.guards())
    assert hash(s) == hash(g.sym("+", s, 0))
    with pytest.raises(ValueError):
        g.sym("**", s, 2)
    with pytest.raises(ValueError):
        g.decide("=~", s, 2)
    with pytest.raises(ptc.Error):
        g.sym("//", s, 0)
    other = ptc.Graph().add_symbol("u", 3)
    with pytest.raises(ValueError, match="another Graph"):
        s + other  # noqa: B018
    with pytest.raises(TypeError):
        s + 1.5  # noqa: B018


def test_guard_checked_at_run():
    g = ptc.Graph()
    s = g.add_symbol("s", 6)
    t = g.add_symbol("t", 6)
    a = g.add_input("a", torch.float32, [s])
    b = g.add_input("b", torch.float32, [t])
    assert s == t  # guard s == t
    y, = g.add_node("add", [a, b])
    g.add_output(y)
    ex = ptc.compile_graph(g, backend="ref")
    assert ex.accepts([torch.randn(9), torch.randn(9)])
    assert not ex.accepts([torch.randn(9), torch.randn(8)])
    with pytest.raises(ptc.Error):
        ex.check([torch.randn(9), torch.randn(8)])


# ---- Executable ---------------------------------------------------------------------------------

def test_executable_checks_and_messages():
    ex = ptc.compile_graph(unary_graph("relu", [32, 128]), backend="ref")
    assert (ex.num_inputs, ex.num_outputs, ex.backend) == (1, 1, "ref")
    assert ex.num_kernels >= 1 and "ref" in ex.format()
    ex.check([torch.randn(32, 128)])
    with pytest.raises(ptc.Error) as ei:
        ex.check([torch.randn(32, 64)])
    assert ei.value.code == "INVALID_ARGUMENT"
    assert str(ei.value) == "input 0 dim 1: expected 128, got 64"
    with pytest.raises(ptc.Error, match="expected dtype f32, got f64"):
        ex.run([torch.randn(32, 128, dtype=torch.float64)])
    with pytest.raises(ptc.Error):
        ex.run([torch.randn(32)])
    with pytest.raises(ptc.Error):
        ex.run([])
    with pytest.raises(TypeError, match="input 0: expected a torch.Tensor"):
        ex.run([3])
    with pytest.raises(TypeError):
        ex.run(torch.randn(32, 128))  # a tensor is a sequence of rows, not tensors
    with pytest.raises(TypeError):
        ex.run(5)
    with pytest.raises(TypeError):
        ex.run([torch.randn(32, 128)], bogus=1)
    with pytest.raises(ptc.Error):
        ex.run([torch.randn(32, 128)], outputs=[torch.empty(3)])
    assert ex.accepts([torch.randn(32, 128)]) is True
    assert ex.accepts([torch.randn(32, 64)]) is False


def test_device_errors():
    ex = ptc.compile_graph(unary_graph("relu", [4]), backend="cpu")
    with pytest.raises(ptc.Error) as ei:
        ex.run([torch.randn(4, device="meta")])
    assert ei.value.code == "UNIMPLEMENTED"
    assert "input 0: tensor on meta" in str(ei.value) and "'cpu' runs on cpu tensors" in str(ei.value)
    assert ex.accepts([torch.randn(4, device="meta")]) is False
    g = ptc.Graph()
    with pytest.raises(ptc.Error, match="constants must be cpu"):
        g.add_constant("w", torch.randn(3, device="meta"))
    if torch.cuda.is_available():
        with pytest.raises(ptc.Error) as ei:
            ex.run([torch.randn(4, device="cuda")])
        assert ei.value.code == "UNIMPLEMENTED" and "cuda" in str(ei.value)


def test_seed_changes_random_output():
    g = ptc.Graph()
    x = g.add_input("x", torch.float32, [64])
    r, = g.add_node("rand", [], {"size": [64], "dtype": torch.float32})
    y, = g.add_node("add", [x, r])
    g.add_output(y)
    ex = ptc.compile_graph(g, backend="ref")
    z = torch.zeros(64)
    a, = ex.run([z], seed=1)
    b, = ex.run([z], seed=1)
    c, = ex.run([z], seed=2)
    assert torch.equal(a, b) and not torch.equal(a, c)


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_share_one_executable(backend):
    g = ptc.Graph()
    s = g.add_symbol("n", 64)
    x = g.add_input("x", torch.float32, [s, 16])
    y, = g.add_node("softmax", [x], {"dim": 1})
    g.add_output(y)
    ex = ptc.compile_graph(g, backend=backend)
    errors = []

    def work(k):
        try:
            gen = torch.Generator().manual_seed(k)
            for i in range(30):
                xi = torch.randn(8 + k + i, 16, generator=gen)
                out, = ex.run([xi])
                torch.testing.assert_close(out, torch.softmax(xi, 1))
        except Exception as e:  # collected and re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# ---- CompiledFunction ---------------------------------------------------------------------------

class Builder:
    """build callback: y = relu(x0 * x1?) over every input, dims in `dyn` symbolic."""

    def __init__(self, op="relu"):
        self.op = op
        self.calls = []

    def __call__(self, examples, dyn):
        assert isinstance(dyn, frozenset)
        self.calls.append((tuple(tuple(t.shape) for t in examples), dyn))
        g = ptc.Graph()
        ins = []
        for i, t in enumerate(examples):
            shape = [g.add_symbol(f"s{i}_{d}", n) if (i, d) in dyn else n
                     for d, n in enumerate(t.shape)]
            ins.append(g.add_input(f"x{i}", t.dtype, shape, None if dyn else t.stride()))
        v = ins[0]
        for other in ins[1:]:
            v, = g.add_node("mul", [v, other])
        y, = g.add_node(self.op, [v])
        g.add_output(y)
        return g


def eager(*xs):
    v = xs[0]
    for o in xs[1:]:
        v = v * o
    return (torch.relu(v),)


def test_compiled_hit_and_outputs():
    b = Builder()
    cf = ptc.CompiledFunction(b, backend="cpu", name="f")
    x = torch.randn(4, 8)
    out = cf(x)
    assert isinstance(out, tuple) and len(out) == 1
    torch.testing.assert_close(out[0], torch.relu(x))
    for _ in range(3):
        torch.testing.assert_close(cf(torch.randn(4, 8))[0].shape, torch.Size([4, 8]))
    assert cf.num_compiles == 1 and cf.num_entries == 1 and len(b.calls) == 1
    assert cf.recompile_reasons == [] and cf.dynamic_dims == frozenset()
    assert isinstance(cf.executables[0], ptc.Executable)
    assert cf.name == "f" and cf.backend == "cpu" and "f" in repr(cf)
    with pytest.raises(TypeError):
        cf(x, y=x)
    with pytest.raises(TypeError):
        cf("x")
    cf.reset()
    assert cf.num_compiles == 0 and cf.num_entries == 0
    cf(x)
    assert cf.num_compiles == 1


def test_automatic_dynamic_batch():
    b = Builder()
    cf = ptc.CompiledFunction(b, backend="cpu")
    for n in [1, 3, 8, 17]:
        x = torch.randn(n, 5)
        torch.testing.assert_close(cf(x)[0], torch.relu(x))
    # batch 1 compiles static, batch 3 recompiles with dim 0 dynamic, 8 and 17 hit
    assert cf.num_compiles == 2
    assert cf.dynamic_dims == frozenset({(0, 0)})
    assert b.calls[1][1] == frozenset({(0, 0)})
    assert len(cf.recompile_reasons) == 1
    assert "input 0 dim 0: expected 1, got 3" in cf.recompile_reasons[0]
    # a dtype change recompiles (keeping dim 0 dynamic) and is explained
    cf(torch.randn(6, 5, dtype=torch.float64))
    assert cf.num_compiles == 3 and "dtype changed from f32 to f64" in cf.recompile_reasons[-1]
    cf(torch.randn(9, 5, dtype=torch.float64))
    assert cf.num_compiles == 3


def test_dynamic_false_and_true():
    cf = ptc.CompiledFunction(Builder(), backend="ref", dynamic=False)
    for n in [2, 3, 4]:
        cf(torch.randn(n, 5))
    assert cf.num_compiles == 3 and cf.dynamic_dims == frozenset()
    b = Builder()
    cf = ptc.CompiledFunction(b, backend="ref", dynamic=True)
    for n in [2, 3, 4]:
        cf(torch.randn(n, 5))
    assert cf.num_compiles == 1 and b.calls[0][1] == frozenset({(0, 0), (0, 1)})
    cf(torch.randn(1, 5))  # size 1 is specialised: a new static entry
    assert b.calls[-1][1] == frozenset({(0, 1)})


def test_mark_dynamic():
    b = Builder()
    cf = ptc.CompiledFunction(b, backend="ref")
    x = ptc.mark_dynamic(torch.randn(4, 6), 0)
    assert x._ptc_dynamic_dims == {0}
    cf(x)
    assert b.calls[0][1] == frozenset({(0, 0)})
    cf(torch.randn(7, 6))
    assert cf.num_compiles == 1
    y = torch.randn(4, 6, 3)
    ptc.mark_dynamic(y, [-1, 1])
    assert y._ptc_dynamic_dims == {1, 2}
    with pytest.raises(IndexError):
        ptc.mark_dynamic(y, 3)
    cf2 = ptc.CompiledFunction(b, backend="ref")
    z = torch.randn(5, 3)
    z._dynamo_dynamic_indices = {1}  # torch 2's mark_dynamic attribute
    cf2(z)
    assert b.calls[-1][1] == frozenset({(0, 1)})


def test_recompile_cap_warns_once_and_falls_back():
    calls = []

    def fallback(x):
        calls.append(x.shape)
        return torch.relu(x)

    cf = ptc.CompiledFunction(Builder(), backend="ref", dynamic=False, max_recompiles=2,
                              fallback=fallback, name="capped")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in [2, 3, 4, 5, 6, 7]:
            x = torch.randn(n, 3)
            torch.testing.assert_close(cf(x)[0], torch.relu(x))
    assert cf.num_compiles == 3
    assert calls == [torch.Size([5, 3]), torch.Size([6, 3]), torch.Size([7, 3])]
    msgs = [str(m.message) for m in w if "ptc" in str(m.message)]
    assert len(msgs) == 1
    assert "'capped'" in msgs[0] and "max_recompiles=2" in msgs[0]
    assert "expected 4, got 5" in msgs[0]
    cf(torch.randn(3, 3))  # cached entries still hit
    assert len(calls) == 3
    nofb = ptc.CompiledFunction(Builder(), backend="ref", dynamic=False, max_recompiles=0)
    nofb(torch.randn(2, 3))
    with pytest.raises(ptc.Error, match="recompile limit"):
        nofb(torch.randn(3, 3))


def test_grad_mode_falls_back():
    calls = []

    def fallback(x):
        calls.append(1)
        return (x * 2,)

    cf = ptc.CompiledFunction(Builder(), backend="ref", fallback=fallback, name="g")
    x = torch.randn(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = cf(x)
        cf(x)
    assert out[0].requires_grad and len(calls) == 2 and cf.num_compiles == 0
    assert len([m for m in w if "gradients" in str(m.message)]) == 1
    with torch.no_grad():
        out = cf(x)
    torch.testing.assert_close(out[0], torch.relu(x.detach()))
    assert cf.num_compiles == 1 and len(calls) == 2
    nofb = ptc.CompiledFunction(Builder(), backend="ref")
    with pytest.raises(ptc.Error, match="gradients"):
        nofb(x)


def test_stride_class_keys():
    b = Builder()
    cf = ptc.CompiledFunction(b, backend="ref")
    base = torch.randn(6, 4)
    cf(base)
    cf(base.t().contiguous().t().contiguous())  # contiguous again: hit
    assert cf.num_compiles == 1
    t = torch.randn(4, 6).t()  # same shape, transposed strides
    torch.testing.assert_close(cf(t)[0], torch.relu(t))
    assert cf.num_compiles == 2 and "strides" in cf.recompile_reasons[-1]
    cf(torch.randn(4, 6).t())
    assert cf.num_compiles == 2


def test_compiled_multiple_inputs_and_build_errors():
    cf = ptc.CompiledFunction(Builder(), backend="ref", fallback=eager)
    a, c = torch.randn(3, 4), torch.randn(3, 4)
    torch.testing.assert_close(cf(a, c)[0], eager(a, c)[0])
    cf(a, c, torch.randn(3, 4))
    assert "number of inputs changed" in cf.recompile_reasons[-1]

    bad = ptc.CompiledFunction(lambda ex, dyn: 42)
    with pytest.raises(TypeError, match="expected a ptc Graph"):
        bad(a)

    def raises(ex, dyn):
        raise KeyError("boom")

    with pytest.raises(KeyError):
        ptc.CompiledFunction(raises)(a)
    with pytest.raises(TypeError):
        ptc.CompiledFunction(5)
    with pytest.raises(TypeError):
        ptc.CompiledFunction(Builder(), dynamic="yes")
    with pytest.raises(ValueError):
        ptc.CompiledFunction(Builder(), max_recompiles=-1)


def test_static_builder_gets_dynamic_dims_from_compile():
    """A build that ignores dynamic_dims still gets a dynamic executable:
    the wanted dims go to ptc_compile's dynamic_dims."""
    def static_build(examples, dyn):
        g = ptc.Graph()
        x = g.add_input("x", examples[0].dtype, list(examples[0].shape))
        y, = g.add_node("neg", [x])
        g.add_output(y)
        return g

    cf = ptc.CompiledFunction(static_build, backend="ref")
    for n in [2, 5, 9, 11]:
        x = torch.randn(n, 3)
        torch.testing.assert_close(cf(x)[0], -x)
    assert cf.num_compiles == 2


def test_compiled_threads():
    cf = ptc.CompiledFunction(Builder(), backend="cpu", dynamic=True)
    cf(torch.randn(8, 8))
    errors = []

    def work(k):
        try:
            for i in range(20):
                x = torch.randn(4 + k, 8 + i)
                torch.testing.assert_close(cf(x)[0], torch.relu(x))
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and cf.num_compiles == 1


def test_no_reference_leaks_per_call():
    ex = ptc.compile_graph(unary_graph("relu", [16]), backend="ref")
    cf = ptc.CompiledFunction(Builder(), backend="ref")
    x = torch.randn(16)
    ex.run([x])
    cf(x)
    before = sys.getrefcount(x)
    for _ in range(200):
        ex.run([x])
        cf(x)
        ex.accepts([x])
    assert sys.getrefcount(x) == before


def _rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 // 1024


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                    reason="ASan's quarantine grows RSS without leaks")
def test_failed_and_bool_lends_do_not_leak():
    """torch's DLPack exporter leaks the tensor when it throws (meta device,
    bool on torch 1.13): such tensors must never reach it."""
    ex = ptc.compile_graph(unary_graph("logical_not", [256, 256], torch.bool), backend="ref")
    xb = torch.zeros(256, 256, dtype=torch.bool)  # 64 KiB
    meta = torch.empty(256, 256, device="meta")
    for _ in range(20):
        ex.run([xb])
    gc.collect()
    before = _rss_kib()
    for _ in range(300):  # ~19 MiB if each call leaked its input
        ex.run([xb])
        _C._describe(xb)
        with pytest.raises(ptc.Error):
            ex.run([meta])
    gc.collect()
    assert _rss_kib() - before < 8 * 1024


def test_strict_recompiles_only_for_sizes():
    cf = ptc.CompiledFunction(Builder(), backend="ref", strict=True)
    cf(torch.randn(4, 3))
    cf(torch.randn(6, 3))          # sizes: recompiles (automatic dynamic)
    cf(torch.randn(3, 4).t())      # strides: accepted
    assert cf.num_compiles == 2
    with pytest.raises(ptc.Error, match="expected dtype f32, got f64"):
        cf(torch.randn(4, 3, dtype=torch.float64))
    with pytest.raises(ptc.Error):
        cf(torch.randn(4, 3, 2))
    assert cf.num_compiles == 2
