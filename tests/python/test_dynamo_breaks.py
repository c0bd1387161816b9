"""test_dynamo_breaks.py - graph breaks of ptc.compile: print between tensor
ops (2 graphs + 1 break, the same printed output), .item()/.tolist()/float()
feeding Python, data-dependent branches and loops, ops ptc does not map,
numpy calls, breaks inside inlined functions (rolled back to the call site),
inside loops, with/try blocks, with values on the stack and live locals of
every kind, several breaks in one frame, exceptions after a break, and
fullgraph=True raising an error that names the break (reason, file:line).
Each case compares the compiled function with plain Python: results,
arguments after the call, captured stdout, number of graphs and breaks.
"""

import inspect
import os

import numpy as np
import pytest
import torch

import ptc
import ptc.dynamo
from dynamo_util import Delta, assert_same, check, clone, fresh_dynamo  # noqa: F401

torch.manual_seed(0)


def r(*shape):
    return torch.randn(*shape)


def _line_of(fn, text):
    """file:line of the first source line of fn containing text."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line and not line.lstrip().startswith("def "):
            return os.path.basename(inspect.getsourcefile(fn)), first + i
    raise AssertionError("%r not in %s" % (text, fn.__name__))


def _same_output(capsys, fn, *args, calls=2, graphs=None, breaks=None, rtol=1e-5, atol=1e-6):
    """check() plus: each compiled call prints exactly what the eager call printed."""
    ref_args = clone(list(args))
    capsys.readouterr()
    ref = fn(*ref_args)
    printed = capsys.readouterr().out
    cf = ptc.compile(fn, backend="cpu")
    for i in range(calls):
        a = clone(list(args))
        with Delta() as d:
            out = cf(*a)
        got = capsys.readouterr().out
        assert got == printed, "call %d printed %r, eager printed %r" % (i, got, printed)
        assert_same(out, ref, rtol, atol, path="call %d: result" % i)
        assert_same(a, ref_args, rtol, atol, path="call %d: arguments" % i)
        if i == 0:
            if graphs is not None:
                assert d.graphs == graphs, "%d graphs, expected %d (%r)" % (d.graphs, graphs, d)
            if breaks is not None:
                assert d.breaks == breaks, "%d breaks, expected %d (%r)" % (d.breaks, breaks, d)
        else:
            assert d.graphs == 0, "call %d compiled again: %r" % (i, d)
    return cf


# ---- print ------------------------------------------------------------------------------------

def f_print(x):
    y = x * 2 + 1
    print("between", y.shape, 42)
    return torch.relu(y) - 1


def test_print_between_ops(capsys):
    _same_output(capsys, f_print, r(3, 4), graphs=2, breaks=1)


def test_print_explain():
    e = ptc.explain(f_print, r(3, 4))
    assert e.graph_count == 2
    assert len(e.break_reasons) == 1
    reason, where = e.break_reasons[0]
    assert "print" in reason
    fname, line = _line_of(f_print, "print(")
    assert where.endswith("%s:%d" % (fname, line)) or where == "%s:%d" % (fname, line), where


def test_print_tensor_value(capsys):
    def f(x):
        y = x.abs() + 1
        print(y)
        return y * 2
    _same_output(capsys, f, torch.arange(4.0), graphs=2, breaks=1)


def test_print_with_kwargs(capsys):
    def f(x):
        y = x - 1
        print("a", "b", sep="-", end="!\n")
        return y * y
    _same_output(capsys, f, r(3), graphs=2, breaks=1)


def test_two_prints(capsys):
    def f(x):
        a = x + 1
        print("one")
        b = a * 2
        print("two", b.shape[0])
        return b - a
    _same_output(capsys, f, r(5), graphs=3, breaks=2)


def test_print_in_loop(capsys):
    def f(x, n):
        for i in range(n):
            x = x * 2
            print("step", i)
        return x + 1
    _same_output(capsys, f, r(3), 3)


def test_live_locals_of_every_kind(capsys):
    class O:
        pass

    def f(x, lst, o):
        a = x + 1
        d = {"k": a * 2}
        t = (a, 3)
        n = 5
        s = "str"
        o.v = a
        none = None
        sz = x.shape
        print("mid", n, s)
        return a + d["k"] + t[0] * n + lst[0] + o.v * len(s) + sz[0], none, t[1], o.v
    _same_output(capsys, f, r(4), [r(4)], O(), graphs=2, breaks=1)


def test_break_with_values_on_stack():
    def f(x):
        return torch.relu(x) * 2 + float(x.sum()) + x.shape[0]
    check(f, r(4))


def test_break_returns_inputs_by_identity(capsys):
    def f(x, y):
        z = x * y
        print("z")
        return x, z, y
    x, y = r(3), r(3)
    cf = ptc.compile(f)
    for _ in range(2):
        out = cf(x, y)
        assert out[0] is x and out[2] is y
        assert_same(out[1], x * y)


# ---- .item(), .tolist(), float(): values feeding Python --------------------------------------------

def test_item_feeds_python_branch():
    def f(x):
        s = x.sum().item()
        if s > 0:
            return x * 2
        return x * 3
    cf = ptc.compile(f)
    for x in [torch.ones(3), -torch.ones(3), torch.ones(3) * 2, -torch.ones(3) * 5]:
        assert_same(cf(x), f(x), path=str(x))


def test_item_in_tensor_math():
    def f(x):
        m = x.max().item()
        return x / m + 1
    cf = ptc.compile(f)
    for _ in range(3):
        x = torch.rand(5) + 0.5
        assert_same(cf(x), f(x))


def test_int_of_tensor_indexes():
    def f(x):
        i = int(x.argmax())
        return x[i] * 2 + x[0]
    cf = ptc.compile(f)
    for x in [torch.tensor([1.0, 5.0, 2.0]), torch.tensor([9.0, 0.0, 1.0])]:
        assert_same(cf(x), f(x))


def test_tolist():
    def f(x):
        vals = (x * 2).tolist()
        total = 0.0
        for v in vals:
            total += v
        return torch.tensor(vals) + total, vals
    check(f, torch.arange(4.0))


def test_item_break_counts():
    def f(x):
        y = x * 2
        s = y.sum().item()
        return y + s
    with Delta() as d:
        ptc.compile(f)(r(3))
    assert d.breaks >= 1
    e = ptc.explain(f, r(3))
    assert any("item" in reason for reason, _ in e.break_reasons), e.break_reasons


# ---- data-dependent control flow --------------------------------------------------------------

def f_datadep(x):
    y = x * 2
    if y.sum() > 0:
        z = y + 10
    else:
        z = y - 10
    return torch.sigmoid(z)


def test_data_dependent_branch():
    cf = ptc.compile(f_datadep)
    pos, neg = torch.ones(3), -torch.ones(3)
    with Delta() as d:
        assert_same(cf(pos), f_datadep(pos))
    assert d.graphs == 2 and d.breaks == 1, d
    assert_same(cf(neg), f_datadep(neg))
    with Delta() as d:
        assert_same(cf(pos), f_datadep(pos))
        assert_same(cf(neg), f_datadep(neg))
    assert d.graphs == 0, "both branches are cached: %r" % d


def test_data_dependent_explain_reason():
    e = ptc.explain(f_datadep, torch.ones(3))
    assert e.graph_count == 2
    assert len(e.break_reasons) == 1
    fname, line = _line_of(f_datadep, "if y.sum()")
    assert e.break_reasons[0][1].endswith("%s:%d" % (fname, line)), e.break_reasons


def test_data_dependent_loop():
    def f(x):
        n = 0
        while (x.abs() > 1).any():
            x = x / 2
            n += 1
        return x, n
    cf = ptc.compile(f)
    for x in [torch.tensor([0.5, 0.2]), torch.tensor([3.0, -9.0]), torch.tensor([100.0])]:
        assert_same(cf(x), f(x))


def test_tensor_truth_in_boolean_ops():
    def f(x):
        if x.numel() > 2 and bool((x > 0).all()):
            return x + 1
        return x - 1
    cf = ptc.compile(f)
    for x in [torch.ones(3), -torch.ones(3), torch.ones(2)]:
        assert_same(cf(x), f(x))


# ---- unsupported ops and other libraries ------------------------------------------------------------

def test_unsupported_op_trace():
    def f(x):
        a = x @ x.t() + 1
        t = torch.trace(a)
        return a * t
    check(f, r(3, 3), graphs=2, breaks=1, rtol=1e-4, atol=1e-4)
    e = ptc.explain(f, r(3, 3))
    assert len(e.break_reasons) == 1
    assert "trace" in e.break_reasons[0][0], e.break_reasons


def test_unsupported_op_data_dependent_shape():
    def f(x):
        y = x * 2
        idx = torch.nonzero(y > 0)
        return idx, y.sum()
    cf = ptc.compile(f)
    for x in [torch.tensor([1.0, -1.0, 2.0]), torch.tensor([-1.0, -1.0, 3.0, 4.0])]:
        assert_same(cf(x), f(x))


def test_numpy_call():
    # y.numpy(), np.tanh and torch.from_numpy are each unsupported: at least
    # one break, the first one at y.numpy() or np.tanh
    def f(x):
        y = x * 2
        a = np.tanh(y.numpy())
        z = torch.from_numpy(a)
        return z + y
    with Delta() as d:
        check(f, r(4))
    assert d.breaks >= 1, d
    e = ptc.explain(f, r(4))
    assert "numpy" in e.break_reasons[0][0], e.break_reasons


def test_numpy_constant_no_break():
    def f(x):
        return x * np.pi + 1
    check(f, r(4))


# ---- breaks in nested code ---------------------------------------------------------------------

def g_prints(y):
    z = y + 1
    print("in g")
    return z * 2


def f_calls_g(x):
    a = x * 3
    b = g_prints(a)
    return b - 1


def test_break_inside_inlined_call(capsys):
    # f: graph before the call, break at the call; g runs as its own frame
    # (graph, break at print, resume graph); then f's resume graph.
    _same_output(capsys, f_calls_g, r(4), graphs=4, breaks=2)


def test_break_inside_inlined_call_deeper(capsys):
    def h(y):
        return g_prints(y * 5) + 1

    def f(x):
        return h(x + 2) * 7
    _same_output(capsys, f, r(3))


def test_break_inside_no_grad(capsys):
    def f(x, w):
        with torch.no_grad():
            y = x @ w
            print("inside")
            y = y * 2
        z = x @ w
        return y, z, torch.is_grad_enabled()
    _same_output(capsys, f, r(2, 3), torch.randn(3, 3, requires_grad=True), rtol=1e-4, atol=1e-5)
    assert torch.is_grad_enabled()


def test_break_inside_try(capsys):
    def f(x, d):
        y = x + 1
        try:
            print("try")
            v = d["k"]
        except KeyError:
            v = 3.0
        return y * v
    _same_output(capsys, f, r(3), {})
    _same_output(capsys, f, r(3), {"k": 2.0})


def test_exception_after_break(capsys):
    def f(x):
        y = x * 2
        print("before")
        if y.shape[0] == 3:
            raise ValueError("after the break: %d" % y.shape[0])
        return y
    capsys.readouterr()
    with pytest.raises(ValueError) as eager:
        f(r(3))
    cf = ptc.compile(f)
    with pytest.raises(ValueError) as comp:
        cf(r(3))
    assert str(comp.value) == str(eager.value)
    assert capsys.readouterr().out == "before\nbefore\n"


def test_break_in_module_forward(capsys):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            h = self.lin(x)
            print("h", h.shape)
            return torch.relu(h)
    m = M().eval()
    x = r(2, 4)
    capsys.readouterr()
    with torch.no_grad():
        ref = m(x)
        printed = capsys.readouterr().out
        cm = ptc.compile(m)
        for _ in range(2):
            out = cm(x)
            assert capsys.readouterr().out == printed
            assert_same(out, ref, rtol=1e-4, atol=1e-5)


# ---- fullgraph=True ------------------------------------------------------------------------------

def test_fullgraph_raises_naming_the_break():
    cf = ptc.compile(f_print, fullgraph=True)
    with pytest.raises(ptc.dynamo.Unsupported) as info:
        cf(r(3, 4))
    msg = str(info.value)
    fname, line = _line_of(f_print, "print(")
    assert "print" in msg, msg
    assert "%s:%d" % (fname, line) in msg, msg


def test_fullgraph_data_dependent_raises():
    cf = ptc.compile(f_datadep, fullgraph=True)
    with pytest.raises(ptc.dynamo.Unsupported) as info:
        cf(torch.ones(3))
    fname, line = _line_of(f_datadep, "if y.sum()")
    assert "%s:%d" % (fname, line) in str(info.value), str(info.value)


def test_fullgraph_inlined_break_names_inner_line():
    cf = ptc.compile(f_calls_g, fullgraph=True)
    with pytest.raises(ptc.dynamo.Unsupported) as info:
        cf(r(3))
    fname, line = _line_of(g_prints, "print(")
    assert "%s:%d" % (fname, line) in str(info.value), str(info.value)


def test_fullgraph_ok_without_break():
    def f(x):
        return torch.relu(x * 2) + 1
    check(f, r(4), fullgraph=True, graphs=1, breaks=0)


# ---- state rebuilt at a break: argument kinds, cells, unbound locals ------------------------------------

def test_break_with_varargs_and_kwonly(capsys):
    def f(x, *rest, scale=2.0, **kw):
        y = x * scale
        print("rest", len(rest), sorted(kw))
        for t in rest:
            y = y + t
        return y * kw.get("k", 1.0)
    _same_output(capsys, f, r(3), r(3), r(3))
    cf = ptc.compile(f)
    x, a = r(3), r(3)
    capsys.readouterr()
    assert_same(cf(x, a, scale=3.0, k=4.0), f(x, a, scale=3.0, k=4.0))


def test_break_in_method_with_super(capsys):
    class A(torch.nn.Module):
        def forward(self, x):
            return x * 2

    class B(A):
        def forward(self, x):
            y = super().forward(x)
            print("B")
            return super().forward(y) + 1
    m = B()
    _same_output(capsys, lambda x: m(x), r(3))


def test_break_with_cell_variable(capsys):
    def f(x):
        k = x * 2

        def add(t):
            return t + k
        print("cell")
        k = k + 1
        return add(x)
    _same_output(capsys, f, r(3))


def test_break_in_lambda(capsys):
    g = lambda x: print("lam") or x * 3  # noqa: E731

    def f(x):
        return g(x + 1) - 1
    _same_output(capsys, f, r(3))


def test_unbound_local_after_break():
    def f(x, flag):
        if flag:
            y = x * 2
        print("mid")
        return y + 1
    cf = ptc.compile(f)
    assert_same(cf(r(2) * 0, True), torch.ones(2))
    with pytest.raises(UnboundLocalError) as eager:
        f(r(2), False)
    with pytest.raises(UnboundLocalError) as comp:
        cf(r(2), False)
    assert str(comp.value) == str(eager.value)


def test_deleted_local_across_break():
    def f(x):
        y = x + 1
        z = y * 2
        del y
        print("deleted")
        return z + 1, "y" in dir()
    check(f, r(2))


def test_many_breaks_in_a_loop(capsys):
    def f(x):
        for i in range(30):
            x = x + i
            if i % 3 == 0:
                print(i, end=" ")
        return x
    _same_output(capsys, f, torch.zeros(2))


def test_returned_generator():
    def f(xs):
        y = [t * 2 for t in xs]
        return (t + 1 for t in y)
    xs = [r(2), r(2)]
    assert_same(list(ptc.compile(f)(xs)), list(f(xs)))
