"""test_dynamo_eval.py - the symbolic bytecode evaluator of ptc.compile
(python/src/dyn_eval*.c, dyn_var.c): one case per group of opcodes and per
evaluator feature (inlining and argument binding, closures and cells,
comprehensions, unrolled loops, unpacking, container building, jumps,
with-blocks, graph breaks placed at the right instruction, fullgraph
errors, aliasing of inputs, the graphs_log info). Each case compares the
compiled function with plain Python (outputs and arguments after the call)
and, where it matters, the number of graphs and breaks."""

import math

import pytest
import torch

import ptc
from dynamo_util import Delta, check, fresh_dynamo  # noqa: F401 (autouse fixture)

X = torch.randn(4, 8)
Y = torch.randn(4, 8)


def x():
    return X.clone()


def y():
    return Y.clone()


# ---------------------------------------------------------------- straight-line code

def test_arith_and_locals():
    def f(a, b):
        c = a + b
        d = c * 2 - a / 3
        e = -d
        return e @ b.t(), +c, ~(a > 0)

    check(f, x(), y(), backend="eager", graphs=1, breaks=0)


def test_constants_tuples_and_unpacking():
    def f(a):
        p, q = a.chunk(2, dim=0)
        c, *d = (1, 2, 3)
        first, *mid, last = [a, a + 1, a + 2, a + 3]
        return (p * c + q * d[0]).sum() + first + last + mid[1]

    check(f, x(), backend="eager", graphs=1, breaks=0)


def test_build_containers():
    def f(a):
        t = (a, 1)
        l = [a, a * 2]
        l2 = [*l, *t[:1]]
        d = {"x": a, "y": 2}
        d2 = {**d, "z": 3}
        s = {1, 2, 2, 3}
        return t, l2, d2, len(s), sorted(d2)

    check(f, x(), backend="eager", graphs=1, breaks=0)


def test_slices_and_subscripts():
    def f(a):
        b = a[:, 1:5:2]
        c = a[0]
        d = a[..., -1]
        return b.sum() + c[::2].sum() + d

    check(f, x(), backend="eager", graphs=1, breaks=0)


def test_format_and_strings():
    def f(a, name):
        n = a.shape[0]
        s = f"{name}-{n}-{n + 1:03d}-{n!r}"
        if name.startswith("re") and "lu" in name:
            return torch.relu(a) * len(s)
        return a

    check(f, x(), "relu", backend="eager", graphs=1, breaks=0)


# ---------------------------------------------------------------- control flow

def test_branches_on_constants_and_shapes():
    def f(a, flag, n):
        if flag and n > 1 or n == 0:
            a = a + 1
        if 0 < n < 5:
            a = a * n
        r = a * 2 if not flag else a / 2
        if a.shape[0] == 4 and a.dim() == 2:
            r = r + 1
        return r

    check(f, x(), True, 3, backend="eager", graphs=1, breaks=0)
    check(f, x(), False, 0, backend="eager", graphs=1, breaks=0)


def test_is_none_jumps():
    def f(a, b=None, c=None):
        if b is None:
            a = a + 1
        if c is not None:
            a = a + c
        return a

    check(f, x(), None, y(), backend="eager", graphs=1, breaks=0)


def test_while_and_for_loops_unrolled():
    def f(a, xs):
        i = 0
        while i < 3:
            a = a + i
            i += 1
        for t in xs[1:]:
            a = a + t
        for j, (p, q) in enumerate(zip(xs, reversed(xs))):
            a = a + p * q * j
        for k, v in {"u": 1, "v": 2}.items():
            a = a * v
        return a

    check(f, x(), [x(), y(), x() * 3], backend="eager", graphs=1, breaks=0)


def test_try_and_assert_without_exception():
    def f(a):
        try:
            b = a + 1
        except ValueError:
            b = a - 1
        assert b.shape[0] == 4, "bad"
        return b

    check(f, x(), backend="eager", graphs=1, breaks=0)


# ---------------------------------------------------------------- calls and inlining

def _helper(a, b=2, *rest, scale=1.0, **kw):
    r = a * b * scale
    for t in rest:
        r = r + t
    return r + kw.get("shift", 0)


def test_inline_argument_binding():
    def f(a):
        return (_helper(a) + _helper(a, 3) + _helper(a, 3, a, a, scale=0.5)
                + _helper(a, scale=2.0, shift=1) + _helper(b=4, a=a)
                + _helper(*(a, 2), **{"shift": 3}))

    check(f, x(), backend="eager", graphs=1, breaks=0)


def test_closures_lambdas_nonlocal():
    def f(a):
        k = 3
        c = 0

        def g(t):
            return t * k

        def inc():
            nonlocal c
            c += 1

        inc()
        inc()
        h = lambda t: t.sin() + c  # noqa: E731
        return g(a) + h(a)

    check(f, x(), backend="eager", graphs=1, breaks=0)


def test_comprehensions():
    def f(a):
        l = [a * i for i in range(3)]
        d = {f"k{i}": a + i for i in range(2)}
        s = {i % 2 for i in range(5)}
        g = [u + v for u in l for v in l if v.shape == u.shape]
        return l, d, len(s), len(g)

    check(f, x(), backend="eager", graphs=1, breaks=0)


def test_break_inside_comprehension_is_sound(capsys):
    def f(xs):
        a = xs[0] * 2
        out = [torch.relu(t) + print(i) if False else t.sum().item() for i, t in enumerate(xs)]
        return a, out

    check(f, [x(), y()], backend="eager")


def _rec(a, n):
    if n == 0:
        return a
    return _rec(a + 1, n - 1)


def test_recursion_inlined_within_depth():
    def f(a):
        return _rec(a, 3)

    check(f, x(), backend="eager", graphs=1, breaks=0)


def test_user_object_method_and_attributes():
    class O:
        def __init__(self):
            self.k = 3

        def scale(self, t):
            return t * self.k

    def f(a, o):
        o.k = o.k + 1
        return o.scale(a)

    o1, o2 = O(), O()
    ref = f(x(), o1)
    out = ptc.compile(f, backend="eager")(x(), o2)
    torch.testing.assert_close(out, ref)
    assert o2.k == o1.k == 4


_STATE = [0]
_COUNT = 0


def test_global_write_replayed():
    def f(a):
        global _COUNT
        _COUNT = _COUNT + 1
        return a * 2

    global _COUNT
    _COUNT = 0
    cf = ptc.compile(f, backend="eager")
    cf(x())
    cf(x())
    assert _COUNT == 2


def test_cell_of_outer_function_written():
    def make():
        n = 0

        def step(a):
            nonlocal n
            n += 1
            return a + 1

        return step, lambda: n

    step, get = make()
    cf = ptc.compile(step, backend="eager")
    out = cf(x())
    cf(x())
    torch.testing.assert_close(out, X + 1)
    assert get() == 2


def test_inplace_on_input():
    def f(a):
        a.add_(1)
        return a * 2

    check(f, x(), backend="eager", graphs=1, breaks=0)


def test_math_on_constants():
    def f(a):
        return a * math.sqrt(a.shape[1]) + math.pi

    check(f, x(), backend="eager", graphs=1, breaks=0)


# ---------------------------------------------------------------- with blocks

def test_no_grad_block():
    def f(a):
        with torch.no_grad():
            b = a * 2
        return b + 1

    check(f, x(), backend="eager", graphs=1, breaks=0)


# ---------------------------------------------------------------- graph breaks

def test_break_on_print_resumes(capsys):
    def f(a):
        b = a + 1
        print("hello")
        return b * 2

    check(f, x(), backend="eager", graphs=2, breaks=1)
    assert capsys.readouterr().out.count("hello") == 3  # eager + two compiled calls


def test_break_on_data_dependent_branch():
    def f(a):
        s = a.sum()
        if s > 0:
            return a + 1
        return a - 1

    check(f, x(), backend="eager", breaks=1)
    check(f, -x().abs(), backend="eager")


def test_break_inside_inlined_call_rolls_back_to_call_site(capsys):
    def inner(t):
        t = t + 1
        print("inner")
        return t * 2

    def f(a):
        b = a * 3
        return inner(b) - 1

    check(f, x(), backend="eager", breaks=1)


def test_generator_call_breaks_soundly():
    def gen(t):
        yield t + 1

    def f(a):
        return list(gen(a))[0] * 2

    check(f, x(), backend="eager")


def test_raise_inside_compiled_code():
    def f(a):
        b = a + 1
        if b.shape[0] == 4:
            raise ValueError("boom %d" % b.shape[0])
        return b

    with pytest.raises(ValueError, match="boom 4"):
        f(x())
    with pytest.raises(ValueError, match="boom 4"):
        ptc.compile(f, backend="eager")(x())


def test_fullgraph_names_the_break():
    def f(a):
        print("x")
        return a + 1

    with pytest.raises(RuntimeError) as ei:
        ptc.compile(f, backend="eager", fullgraph=True)(x())
    msg = str(ei.value)
    assert "print" in msg and "test_dynamo_eval.py:" in msg


def test_no_tensor_ops_is_skipped():
    def f(a, n):
        return [n, n + 1]

    with Delta() as d:
        out = ptc.compile(f, backend="eager")(x(), 3)
    assert out == [3, 4]
    assert d.graphs == 0


# ---------------------------------------------------------------- inputs

def test_aliased_inputs_share_one_tracker():
    def f(xs):
        s = xs[0]
        for t in xs[1:]:
            s = s + t
        return s

    a, b = x(), y()
    cf = ptc.compile(f, backend="eager")
    torch.testing.assert_close(cf([a, b, a]), a + b + a)
    # distinct objects now: the same-object guard fails, a recompile is correct
    c = x() * 5
    torch.testing.assert_close(cf([a, b, c]), a + b + c)


def test_graphs_log_info():
    def f(a):
        b = a + 1
        print("log")
        return b * 2

    e = ptc.explain(f, x())
    assert e.graph_count == 2
    assert len(e.break_reasons) == 1
    reason, where = e.break_reasons[0]
    assert "print" in reason and "test_dynamo_eval.py:" in where


def test_generator_expressions_run_eagerly():
    def f(a, xs):
        s = sum(t * 2 for t in xs)
        if any(v > 2 for v in (1, 3)):
            s = s + 1
        return s + a, tuple(i * a for i in range(2))

    check(f, x(), [x(), y()], backend="eager", graphs=1, breaks=0)


def test_generator_expression_with_side_effects_is_sound():
    def f(a, log):
        s = sum(log.append(i) or i for i in range(3))
        return a * s

    check(f, x(), [], backend="eager")


def test_view_alive_across_break(capsys):
    def f(a):
        v = a.view(-1)
        print("b")
        v.mul_(2)
        return a + 1

    check(f, x(), backend="eager")
    check(f, x(), backend="cpu")


def test_import_of_loaded_modules():
    def f(a):
        import math
        import os.path
        from torch.nn import functional as F
        return F.relu(a) * math.pi + len(os.path.sep)

    check(f, x(), backend="eager", graphs=1, breaks=0)


class _Base(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, a):
        return torch.relu(self.lin(a))


class _Child(_Base):
    def forward(self, a):
        return super().forward(a) * 2 + super(_Child, self).forward(a)


class _MyLinear(torch.nn.Linear):
    def forward(self, a):
        return super().forward(a) + 1


@pytest.mark.parametrize("cls", [_Child, lambda: _MyLinear(8, 3)])
def test_super_calls_inlined(cls):
    torch.manual_seed(0)
    m = cls()
    with Delta() as d:
        out = ptc.compile(m, backend="eager")(x())
    torch.testing.assert_close(out, m(x()))
    assert d.graphs == 1 and d.breaks == 0


def _posonly(a, b=1, /, c=2, *, d=3, **kw):
    return a * b + c + d + len(kw)


def test_binding_positional_only_and_errors():
    def f(a):
        return _posonly(a) + _posonly(a, 2, 3, d=4) + _posonly(a, b=5)  # b -> **kw

    check(f, x(), backend="eager", graphs=1, breaks=0)

    def g(a):
        return _posonly(a, 1, 2, 3)  # too many positionals: Python raises

    with pytest.raises(TypeError):
        g(x())
    with pytest.raises(TypeError):
        ptc.compile(g, backend="eager")(x())


def test_star_args_and_kwargs_of_the_frame():
    def f(*xs, scale=1.0, **opts):
        s = xs[0]
        for t in xs[1:]:
            s = s + t
        return s * scale + opts.get("shift", 0)

    check(f, x(), y(), backend="eager", graphs=1, breaks=0)
    cf = ptc.compile(f, backend="eager")
    torch.testing.assert_close(cf(x(), scale=2.0, shift=1), f(x(), scale=2.0, shift=1))


def test_float_zero_sign_is_guarded():
    def f(a, s):
        return 1.0 / (a * s)

    cf = ptc.compile(f, backend="eager")
    a = torch.ones(2)
    torch.testing.assert_close(cf(a, 0.0), f(a, 0.0))
    torch.testing.assert_close(cf(a, -0.0), f(a, -0.0))  # -inf, not a stale +inf
