"""test_dynamo_output.py - the bytecode capture's output side: the
OutputGraph (python/ptc/_dyn_graph.py) used directly (FX graph recorded
next to a trace-time ptc graph, metadata, Unsupported at once, symbolic
sizes and shape guards, compile through from_fx and eager), and, when
ptc.compile exists, end-to-end cases of what dyn_output.c/dyn_runner.c
rebuild (return structures, unchanged inputs returned as the same
objects, side effects, in-place ops on inputs)."""
import operator

import pytest
import torch

import ptc
from ptc._dyn_graph import OutputGraph, Proxy, SymProxy
from ptc._mapping import Unsupported

BACKENDS = ["eager", "cpu"]


def _og(backend="cpu"):
    return OutputGraph(backend=backend)


# ---- OutputGraph ------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_elementwise_chain(backend):
    og = _og(backend)
    x, y = torch.randn(4, 8), torch.randn(8)
    px, py = og.add_input(x, "x"), og.add_input(y, "y")
    a = og.call_function(torch.add, (px, py), {})
    b = og.call_method("relu", (a,), {})
    c = og.call_function(operator.mul, (b, 2.0), {})
    assert isinstance(c, Proxy)
    assert og.tensor_attr(c, "shape") == (4, 8)
    assert og.tensor_attr(c, "dtype") == torch.float32
    assert og.tensor_attr(c, "ndim") == 2
    assert og.n_ops == 3
    fn, info = og.compile([c, a])
    assert info["ops"] == 3 and "relu" in info["graph"]
    r = fn(x, y)
    assert isinstance(r, tuple) and len(r) == 2
    torch.testing.assert_close(r[0], torch.relu(x + y) * 2)
    torch.testing.assert_close(r[1], x + y)


def test_metadata():
    og = _og()
    x = torch.randn(3, 5, dtype=torch.float64)
    px = og.add_input(x, "x")
    assert og.tensor_attr(px, "device") == torch.device("cpu")
    assert og.tensor_attr(px, "is_cuda") is False
    assert og.tensor_attr(px, "is_floating_point") is True
    assert og.tensor_attr(px, "requires_grad") is False
    assert og.tensor_attr(px, "numel") == 15
    t = og.tensor_attr(px, "T")
    assert og.tensor_attr(t, "shape") == (5, 3)
    mt = og.tensor_attr(px, "mT")
    assert og.tensor_attr(mt, "shape") == (5, 3)
    with pytest.raises(Unsupported):
        og.tensor_attr(px, "data")
    with pytest.raises(Unsupported):
        og.tensor_attr(px, "grad")
    fn, _ = og.compile([t, mt])
    r = fn(x)
    torch.testing.assert_close(r[0], x.T)
    torch.testing.assert_close(r[1], x.mT)


def test_unsupported_leaves_no_node():
    og = _og()
    x = torch.randn(4)
    px = og.add_input(x, "x")
    before = len(og.graph.nodes)
    with pytest.raises(Unsupported) as e:
        og.call_function(print, (px,), {})
    assert "print" in str(e.value)
    with pytest.raises(Unsupported):
        og.call_method("item", (px,), {})
    with pytest.raises(Unsupported):
        og.call_method("tolist", (px,), {})
    assert len(og.graph.nodes) == before
    y = og.call_method("sin", (px,), {})
    fn, _ = og.compile([y])
    torch.testing.assert_close(fn(x)[0], x.sin())


def test_param_same_object_and_module():
    og = _og()
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    px = og.add_input(x, "x")
    w = og.add_param(lin.weight, "w")
    assert og.add_param(lin.weight, "w2") is w  # one get_attr per tensor object
    assert w.param is lin.weight
    y = og.call_module(lin, (px,), {})
    z = og.call_function(torch.matmul, (px, og.tensor_attr(w, "T")), {})
    fn, info = og.compile([y, z])
    assert getattr(og.root, w.node.target) is lin.weight
    r = fn(x)
    with torch.no_grad():
        torch.testing.assert_close(r[0], lin(x))
        torch.testing.assert_close(r[1], x @ lin.weight.T)


def test_tuple_results_and_getitem():
    og = _og()
    x = torch.randn(6, 4)
    px = og.add_input(x, "x")
    parts = og.call_method("chunk", (px, 3), {})
    assert isinstance(parts, tuple) and len(parts) == 3
    m = og.call_function(torch.max, (px, 1), {})
    assert isinstance(m[0], Proxy) and isinstance(m.values, Proxy)
    s = og.call_function(operator.add, (parts[0], parts[2]), {})
    fn, _ = og.compile([s, m.indices])
    r = fn(x)
    torch.testing.assert_close(r[0], x[0:2] + x[4:6])
    torch.testing.assert_close(r[1], x.max(1).indices)


@pytest.mark.parametrize("backend", BACKENDS)
def test_inplace_on_input_writes_back(backend):
    og = _og(backend)
    x, y = torch.randn(4), torch.randn(4)
    px, py = og.add_input(x, "x"), og.add_input(y, "y")
    r = og.call_method("add_", (px, py), {})
    assert r is px  # the same tensor, new value
    z = og.call_function(operator.mul, (px, 2.0), {})
    fn, _ = og.compile([z])
    x0 = x.clone()
    out = fn(x, y)
    torch.testing.assert_close(x, x0 + y)
    torch.testing.assert_close(out[0], (x0 + y) * 2)


def test_inplace_refused_on_params_and_views():
    og = _og()
    lin = torch.nn.Linear(2, 2)
    x = torch.randn(4, 2)
    px = og.add_input(x, "x")
    w = og.add_param(lin.weight, "w")
    with pytest.raises(Unsupported):
        og.call_method("add_", (w, 1.0), {})
    v = og.call_method("view", (px, 8), {})
    with pytest.raises(Unsupported):
        og.call_method("mul_", (v, 2.0), {})


def test_inplace_refused_on_tensors_with_views():
    og = _og()
    x = torch.randn(4, 2)
    px = og.add_input(x, "x")
    v = og.call_method("view", (px, 8), {})
    assert v.alias is not None and px.has_views
    with pytest.raises(Unsupported):
        og.call_method("add_", (px, 1.0), {})  # the view would not see it
    y = og.call_function(operator.mul, (px, 2.0), {})
    u = og.call_method("unsqueeze", (y, 0), {})
    with pytest.raises(Unsupported):
        og.call_method("mul_", (u, 2.0), {})
    z = og.call_function(operator.add, (px, 1.0), {})
    assert og.call_method("relu_", (z,), {}) is z  # no views: fine


def test_dynamic_dims_and_shape_guards():
    og = _og()
    x = torch.randn(4, 8)
    px = og.add_input(x, "x", dynamic_dims=(0,))
    shape = og.tensor_attr(px, "shape")
    assert isinstance(shape[0], SymProxy) and shape[1] == 8
    s0 = shape[0]
    assert s0.hint == 4
    s2 = og.sym_binop("*", s0, 2)
    assert isinstance(s2, SymProxy) and s2.hint == 8
    assert og.sym_binop("-", s0, s0) == 0
    assert og.sym_binop("**", s0, 2).hint == 16
    assert og.shape_guard() is None  # nothing decided yet
    assert og.sym_compare(">", s0, 3) is True
    v = og.call_method("view", (px, s2, 4), {})
    r = og.call_method("relu", (v,), {})
    g = og.shape_guard()
    assert g is not None
    assert g(torch.randn(6, 8)) and not g(torch.randn(3, 8))
    fn, info = og.compile([r, s2])
    out = fn(x)
    torch.testing.assert_close(out[0], x.view(8, 4).relu())
    assert out[1] == 8 and isinstance(out[1], int)
    x2 = torch.randn(7, 8)
    out = fn(x2)
    torch.testing.assert_close(out[0], x2.view(14, 4).relu())
    assert out[1] == 14


def test_symbolic_size_as_scalar_operand_stays_symbolic():
    og = _og()
    x = torch.randn(5, 3)
    px = og.add_input(x, "x", dynamic_dims=(0,))
    s0 = og.tensor_attr(px, "shape")[0]
    y = og.call_function(operator.add, (og.call_method("relu", (px,), {}), s0), {})
    assert og.shape_guards() == []  # not specialised to 5
    assert og.tensor_attr(y, "dtype") == torch.float32
    fn, _ = og.compile([y])
    for n in (5, 7):
        x = torch.randn(n, 3)
        torch.testing.assert_close(fn(x)[0], x.relu() + n)
    og = _og()
    xi = torch.randint(0, 5, (4, 2), dtype=torch.int32)
    p = og.add_input(xi, "x", dynamic_dims=(0,))
    z = og.call_function(torch.mul, (p, og.tensor_attr(p, "shape")[0]), {})
    assert og.tensor_attr(z, "dtype") == torch.int32 and og.shape_guards() == []
    fn, _ = og.compile([z])
    assert torch.equal(fn(xi)[0], xi * 4)


def test_sym_int_specialises():
    og = _og()
    x = torch.randn(5, 3)
    px = og.add_input(x, "x", dynamic_dims=(0,))
    s0 = og.tensor_attr(px, "shape")[0]
    assert og.sym_int(s0) == 5
    g = og.shape_guard()
    assert g(torch.randn(5, 3)) and not g(torch.randn(6, 3))


def test_autograd_runs_the_graph_module_with_grad_modes():
    og = _og()
    lin = torch.nn.Linear(3, 2)
    x = torch.randn(4, 3)
    px = og.add_input(x, "x")
    with torch.enable_grad():
        og.grad_enabled = False
        a = og.call_module(lin, (px,), {})  # traced under no_grad
        assert og.tensor_attr(a, "requires_grad") is False
        og.grad_enabled = True
        b = og.call_module(lin, (px,), {})
        assert og.tensor_attr(b, "requires_grad") is True
        assert og.needs_autograd
        assert any(t is lin.weight for t in og.grad_params())
        fn, info = og.compile([a, b])
        assert info.get("autograd") and "_set_grad_enabled" in info["graph"]
        ra, rb = fn(x)
        assert torch.is_grad_enabled()
    assert not ra.requires_grad and rb.requires_grad
    rb.sum().backward()
    assert lin.weight.grad is not None


def test_no_grad_params_compile_with_ptc():
    og = _og()
    lin = torch.nn.Linear(3, 2)
    x = torch.randn(4, 3)
    with torch.no_grad():
        og = _og()
        px = og.add_input(x, "x")
        y = og.call_module(lin, (px,), {})
        assert og.grad_params() == [] and not og.needs_autograd
        fn, info = og.compile([y])
        assert not info.get("autograd")
        torch.testing.assert_close(fn(x)[0], lin(x))


def test_empty_graph():
    og = _og()
    x = torch.randn(3)
    og.add_input(x, "x")
    fn, info = og.compile([])
    assert fn is None and info["ops"] == 0


def test_compile_direct_function():
    og = _og()
    x = torch.randn(8)
    px = og.add_input(x, "x")
    y = og.call_method("exp", (px,), {})
    fn, _ = og.compile([y])
    assert isinstance(fn, ptc.CompiledFunction)  # no Python wrapper per call
    torch.testing.assert_close(fn(x)[0], x.exp())


# ---- DynRunner plans (dyn_runner.c through its test entry point) --------------------------

(DP_CONST, DP_OUT, DP_INPUT, DP_SRC, DP_TUPLE, DP_LIST, DP_DICT, DP_SET, DP_CALL, DP_SLICE,
 DP_MEMO, DP_METHOD, DP_ITER, DP_CELL) = range(14)
DE_SETATTR, DE_DELATTR, DE_LIST, DE_DICT, DE_GLOBAL, DE_CELL = range(32, 38)

needs_runner = pytest.mark.skipif(not hasattr(ptc._C, "DynRunner") or
                                  not hasattr(ptc._C, "_dyn_source"),
                                  reason="DynRunner / _dyn_source not registered")


def _src(i, name):
    return ptc._C._dyn_source("local", i, name=name)


@needs_runner
def test_runner_plans_and_effects():
    import collections
    P = collections.namedtuple("P", "a b")

    class O:
        pass

    def method(self):
        return self

    def mk_cell():
        q = 1
        return (lambda: q).__closure__[0]

    o, cell, g = O(), mk_cell(), {}
    ident = lambda *a: a  # noqa: E731  the "compiled graph": outputs = inputs
    x = torch.randn(3)
    plan = (DP_TUPLE, (
        (DP_DICT, ("a", "b"), ((DP_OUT, 0), (DP_LIST, ((DP_INPUT, 0),), 1)), 0),
        (DP_MEMO, 1),
        (DP_SET, ((DP_CONST, 1), (DP_CONST, 2)), 2),
        (DP_CALL, P, ((DP_CONST, 1), (DP_OUT, 0))),
        (DP_CALL, torch.Size, ((DP_TUPLE, ((DP_CONST, 2), (DP_CONST, 3))),)),
        (DP_SLICE, (DP_CONST, 1), (DP_CONST, None), (DP_CONST, 2)),
        (DP_METHOD, (DP_CONST, method), (DP_CONST, o)),
        (DP_ITER, ((DP_CONST, 1), (DP_CONST, 2))),
        (DP_SRC, _src(1, "lst")),
    ))
    effects = (
        (DE_SETATTR, (DP_CONST, o), "v", (DP_OUT, 0)),
        (DE_DELATTR, (DP_CONST, o), "v"),
        (DE_SETATTR, (DP_CONST, o), "w", (DP_MEMO, 0)),
        (DE_LIST, (DP_SRC, _src(1, "lst")), (DP_TUPLE, ((DP_CONST, 5), (DP_INPUT, 0)))),
        (DE_DICT, (DP_SRC, _src(2, "d")), ("k",), (DP_TUPLE, ((DP_OUT, 0),))),
        (DE_GLOBAL, g, "G", (DP_MEMO, 0)),
        (DE_CELL, (DP_CONST, cell), (DP_CONST, 7)),
    )
    r = ptc._C.DynRunner(ident, (_src(0, "x"),), effects, plan, 1, 3)
    lst, d = [1], {"z": 1}
    res = r((x, lst, d), g)
    assert res[0]["a"] is x and res[0]["b"] == [x] and res[1] is res[0]["b"]
    assert res[2] == {1, 2} and res[3] == P(1, x) and isinstance(res[3], P)
    assert res[4] == torch.Size([2, 3]) and res[5] == slice(1, None, 2)
    assert res[6]() is o and list(res[7]) == [1, 2]
    assert res[8] is lst
    assert not hasattr(o, "v") and o.w is res[0]
    assert lst == [5, x] and lst[1] is x and d == {"k": x}
    assert g["G"] is res[0] and cell.cell_contents == 7
    import gc
    import sys
    for _ in range(200):
        r((x, lst, d), g)
    gc.collect()
    before = sys.getallocatedblocks()
    for _ in range(2000):
        r((x, lst, d), g)
    gc.collect()
    assert sys.getallocatedblocks() - before < 50  # no per-run leak


@needs_runner
def test_runner_errors_are_exceptions():
    ident = lambda *a: a  # noqa: E731
    x = torch.randn(3)
    with pytest.raises(Exception):
        ptc._C.DynRunner(ident, (_src(5, "q"),), (), (DP_OUT, 0), 1, 0)((x,))
    with pytest.raises(SystemError):
        ptc._C.DynRunner(ident, (_src(0, "x"),), (), (DP_OUT, 3), 1, 0)((x,))
    with pytest.raises(SystemError):
        ptc._C.DynRunner(ident, (_src(0, "x"),), (), (99, 0), 1, 0)((x,))
    with pytest.raises(SystemError):
        ptc._C.DynRunner(lambda *a: 1, (_src(0, "x"),), (), (DP_OUT, 0), 1, 0)((x,))


# ---- end to end (needs ptc.compile: the frame hook and the evaluator) -------------------

def _have_compile():
    try:
        return callable(getattr(ptc, "compile", None)) and hasattr(ptc._C, "dyn_enable")
    except Exception:
        return False


needs_compile = pytest.mark.skipif(not _have_compile(), reason="ptc.compile not built yet")

G_STATE = []


@needs_compile
def test_e2e_return_structures():
    def f(x, y):
        a = x + y
        d = {}
        d["sum"] = a
        d["pair"] = (a * 2, x)
        d["lst"] = [y, a.relu()]
        d["n"] = 3
        return d

    cf = ptc.compile(f, backend="cpu")
    x, y = torch.randn(4), torch.randn(4)
    for _ in range(2):
        r, e = cf(x, y), f(x, y)
        assert r.keys() == e.keys() and r["n"] == 3
        assert r["pair"][1] is x and r["lst"][0] is y  # unchanged inputs: same objects
        torch.testing.assert_close(r["sum"], e["sum"])
        torch.testing.assert_close(r["pair"][0], e["pair"][0])
        torch.testing.assert_close(r["lst"][1], e["lst"][1])


@needs_compile
def test_e2e_inplace_input_and_effects():
    class Box:
        pass

    def f(x, box, lst):
        x.mul_(2)
        box.last = x + 1
        lst.append(x.sum())
        G_STATE.append(1)
        return x

    box, lst = Box(), []
    x = torch.randn(5)
    x0 = x.clone()
    G_STATE.clear()
    cf = ptc.compile(f, backend="cpu")
    r = cf(x, box, lst)
    assert r is x
    torch.testing.assert_close(x, x0 * 2)
    torch.testing.assert_close(box.last, x0 * 2 + 1)
    assert len(lst) == 1 and len(G_STATE) == 1
    torch.testing.assert_close(lst[0], (x0 * 2).sum())


@needs_compile
def test_e2e_views_keep_aliasing():
    def f(x):
        y = x * 2
        return x.view(-1), x[1], y, y.t(), x.float()

    x = torch.randn(3, 4)
    r = ptc.compile(f, backend="cpu")(x)
    assert r[0].data_ptr() == x.data_ptr() and r[0].shape == (12,)
    assert r[1].data_ptr() == x[1].data_ptr()
    assert r[3].data_ptr() == r[2].data_ptr()  # a view of the other output
    assert r[4] is x  # same-dtype cast returns the tensor itself
    torch.testing.assert_close(r[3], (x * 2).t())


@needs_compile
def test_e2e_view_mutated_after_a_break():
    def f(x):
        y = x.view(-1)
        print("break")
        y.mul_(2)
        return y + 1

    x = torch.randn(3, 4)
    x0 = x.clone()
    r = ptc.compile(f, backend="cpu")(x)
    torch.testing.assert_close(x, x0 * 2)
    torch.testing.assert_close(r, (x0 * 2).view(-1) + 1)


def test_inplace_on_input_sharing_memory_refused_and_guarded():
    og = _og()
    base = torch.randn(2, 4)
    x, v = base, base[0]
    px, pv = og.add_input(x, "x"), og.add_input(v, "v")
    with pytest.raises(Unsupported):
        og.call_method("add_", (px, 1.0), {})
    og = _og()
    x, y = torch.randn(4), torch.randn(4)
    px, py = og.add_input(x, "x"), og.add_input(y, "y")
    og.call_method("add_", (px, py), {})
    g = og.shape_guard()
    assert g(x, y) and not g(x, x[:2])


@needs_compile
def test_e2e_split_and_reshape_views_keep_aliasing():
    def f(x):
        a, b = x.chunk(2)
        r = x.reshape(-1)
        print("break")
        a.mul_(0)
        r.add_(1)
        return a, b, r

    x = torch.randn(4, 3)
    x0 = x.clone()
    ra, rb, rr = ptc.compile(f, backend="cpu")(x)
    e = x0.clone()
    ea, eb, er = f(e)
    torch.testing.assert_close(x, e)
    torch.testing.assert_close(ra, ea)
    torch.testing.assert_close(rb, eb)
    assert rr.data_ptr() == x.data_ptr()


@needs_compile
def test_e2e_break_state_rebuilt():
    import collections
    Pair = collections.namedtuple("Pair", "a b")

    def f(x, n):
        lst = [x * 2, n]
        d = {"k": x + 1, "lst": lst}
        p = Pair(x, lst)
        sz = x.shape
        print("break", len(lst))
        lst.append(x.sum())
        return lst, d, p, sz, d["lst"] is lst, p.b is lst

    x = torch.randn(3)
    r = ptc.compile(f, backend="cpu")(x, 4)
    e = f(x, 4)
    assert r[4] is True and r[5] is True  # one list object, shared as in eager
    assert r[1]["lst"] is r[0] and r[2].b is r[0] and isinstance(r[2], Pair)
    assert r[2].a is x and r[3] == e[3] and r[0][1] == 4
    for a, b in ((r[0][0], e[0][0]), (r[0][2], e[0][2]), (r[1]["k"], e[1]["k"])):
        torch.testing.assert_close(a, b)
