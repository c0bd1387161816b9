"""test_dynamo_basic.py - ptc.compile (bytecode capture) on straight-line code:
tensor ops and operators, Python constants and containers, inlined user
functions (closures, defaults, *args/**kwargs, keyword-only, nested and
recursive), methods, builtins, math on constants, torch.no_grad, shape
queries and shape-dependent control flow, generators and comprehensions,
exceptions raised inside compiled code, the decorator form, ptc.disable and
the explain report. Each case compares ptc.compile(f)(...) with f(...)
(dynamo_util.check: outputs, arguments after the call, graphs/breaks).
"""

import collections
import dataclasses
import functools
import math
import operator

import pytest
import torch
import torch.nn.functional as F

import ptc
from dynamo_util import TORCH2, Delta, assert_same, check, clone, fresh_dynamo  # noqa: F401

torch.manual_seed(0)


def r(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype)


# ---- tensor ops ------------------------------------------------------------------------------

def f_elementwise(x, y):
    a = x + y
    b = a * 2.0 - y / 3
    c = torch.relu(b) + torch.sigmoid(a)
    d = torch.exp(-c.abs()) ** 2
    return torch.tanh(d) + x.neg()


def f_matmul_reduce(x, w):
    h = x @ w
    h = torch.matmul(h, w.t())
    return h.sum(dim=1, keepdim=True) + h.mean() - h.amax(dim=0)


def f_shapes(x):
    y = x.reshape(4, 6).permute(1, 0).contiguous()
    z = y.view(2, 12)[:, 3:9]
    w = torch.cat([z, z * 2], dim=1)
    s = torch.stack([w, w + 1], dim=0)
    return s.transpose(0, 1).flatten(1)[..., None].squeeze(-1)


def f_methods(x):
    return x.softmax(-1).log().clamp(min=-3.0).sum(-1).unsqueeze(0).expand(3, -1)


def f_functional(x, w, b):
    h = F.linear(x, w, b)
    h = F.gelu(h)
    h = F.layer_norm(h, (h.shape[-1],))
    return F.softmax(h, dim=-1)


def f_compare_where(x, y):
    m = (x > y) & (x > 0)
    return torch.where(m, x, y * 0.5), m


def f_indexing(x):
    a = x[0]
    b = x[:, 1]
    c = x[1:3, ::2]
    d = x[-1, None]
    return a + 1, b * 2, c.sum(), d


def f_creation(x):
    z = torch.zeros(x.shape)
    o = torch.ones_like(x)
    a = torch.arange(x.shape[1], dtype=x.dtype)
    f = torch.full((2, x.shape[1]), 3.0)
    return x + z + o * a + f.sum(0)


def f_dtype(x):
    a = x.to(torch.float64) * 2
    b = x.int() + 1
    c = (x > 0).float()
    return a, b, c, x.double().sum()


def f_inplace_local(x):
    y = x.clone()
    y.add_(1)
    y.mul_(2)
    y[0] = 0.0
    return y


def f_scalars(x):
    return 3 * x + 2.5 - x * (1 / 3) + 7 // 2 + 2 ** 3


@pytest.mark.parametrize("fn,args", [
    (f_elementwise, (r(4, 5), r(4, 5))),
    (f_matmul_reduce, (r(3, 8), r(8, 8))),
    (f_shapes, (r(2, 3, 4),)),
    (f_methods, (r(5, 7),)),
    (f_functional, (r(3, 6), r(5, 6), r(5))),
    (f_compare_where, (r(4, 4), r(4, 4))),
    (f_indexing, (r(4, 6),)),
    (f_creation, (r(2, 5),)),
    (f_dtype, (r(3, 3),)),
    (f_inplace_local, (r(3, 4),)),
    (f_scalars, (r(6),)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_tensor_ops(fn, args):
    check(fn, *args, graphs=1, breaks=0, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", ["eager", "ref", "cpu"])
def test_backends(backend):
    check(f_elementwise, r(4, 5), r(4, 5), backend=backend, graphs=1, breaks=0, rtol=1e-4, atol=1e-5)


def test_integer_and_bool_tensors():
    def f(x, m):
        return (x * 3 + 1) // 2, x % 5, m & (x > 2), (~m).sum()
    check(f, torch.arange(12).reshape(3, 4), torch.rand(3, 4) > 0.5, graphs=1, breaks=0)


def test_return_values_kinds():
    def f(x):
        return {"a": x + 1, "b": [x * 2, (x - 1, 3)], "c": None, "d": "s", "e": 1.5}
    check(f, r(3), graphs=1, breaks=0)


def test_returns_input_itself():
    def f(x, y):
        z = x * y
        return x, z, y
    x, y = r(3), r(3)
    cf = ptc.compile(f)
    out = cf(x, y)
    assert out[0] is x and out[2] is y, "unchanged inputs must come back as the same objects"
    assert_same(out, f(x, y))


def test_no_tensor_ops_runs_plain():
    def f(a, b):
        return [a + b, a * b, str(a)]
    check(f, 3, 4)


# ---- Python constants and containers ------------------------------------------------------------

Pair = collections.namedtuple("Pair", ["left", "right"])


@dataclasses.dataclass
class Box:
    t: torch.Tensor
    k: float


def test_tuple_list_dict_inputs():
    def f(t, lst, d):
        a, b = t
        s = lst[0] + lst[-1]
        for k in ("x", "y"):
            s = s + d[k] * len(lst)
        return a * b + s, tuple(lst[1:]), {k: v + 1 for k, v in d.items()}
    check(f, (r(3), r(3)), [r(3), r(3), r(3)], {"x": r(3), "y": r(3)}, graphs=1, breaks=0)


def test_containers_built_in_trace():
    def f(x):
        lst = [x, x + 1]
        lst.append(x * 2)
        lst.extend([x - 1])
        lst.insert(0, x.neg())
        last = lst.pop()
        d = {"a": x}
        d["b"] = x * 3
        d.update({"c": last})
        s = {1, 2, 3}
        s.add(4)
        t = tuple(lst) + (d["b"],)
        acc = t[0]
        for i in range(1, len(t)):
            acc = acc + t[i]
        return acc, d, len(s), sorted(s), list(d.keys())
    check(f, r(4), graphs=1)


def test_constants_in_containers():
    def f(x, cfg):
        scale = cfg["scale"]
        dims = cfg["dims"]
        if cfg["act"] == "relu":
            x = torch.relu(x)
        return x.sum(dim=dims) * scale, cfg["dims"][::-1]
    check(f, r(2, 3, 4), {"scale": 0.5, "dims": (0, 2), "act": "relu"}, graphs=1, breaks=0)


def test_slices_and_ranges():
    def f(x, n):
        out = []
        for i in range(0, n, 2):
            out.append(x[i:i + 2].sum())
        sl = slice(1, None, 2)
        return torch.stack(out), x[sl], list(range(n))[sl]
    check(f, r(8, 3), 6, graphs=1, breaks=0)


def test_namedtuple_input_and_output():
    def f(p):
        q = Pair(p.left + p.right, p.right * 2)
        return q, q.left.sum(), p._replace(left=p.right)
    check(f, Pair(r(3), r(3)))


def test_dataclass_input():
    def f(b):
        return b.t * b.k + 1
    check(f, Box(r(4), 2.5), graphs=1, breaks=0)


def test_dataclass_created():
    def f(x):
        b = Box(x + 1, 3.0)
        return b
    check(f, r(3))


def test_str_formatting_constants():
    def f(x, name):
        key = "%s_%d" % (name, 3)
        tag = f"{name}-{x.shape[0]}"
        return x + len(key), tag, key.upper()
    check(f, r(5), "ab", graphs=1, breaks=0)


# ---- user functions: inlining ------------------------------------------------------------------

def helper_default(x, k=2.0, *, bias=1.0):
    return x * k + bias


def helper_varargs(*xs, **kw):
    s = xs[0]
    for t in xs[1:]:
        s = s + t
    for name in sorted(kw):
        s = s * kw[name]
    return s


def helper_recursive(x, n):
    if n == 0:
        return x
    return helper_recursive(x * 1.5, n - 1) + 1


def test_inline_defaults_kwonly():
    def f(x):
        return helper_default(x) + helper_default(x, 3.0) + helper_default(x, bias=-1.0) + \
            helper_default(x, k=0.5, bias=0.0)
    check(f, r(4), graphs=1, breaks=0)


def test_inline_varargs_kwargs():
    def f(x, y):
        args = (x, y, x)
        kw = {"b": 2.0, "a": 0.5}
        return helper_varargs(*args, **kw), helper_varargs(x, y, c=3.0), helper_varargs(y)
    check(f, r(3), r(3), graphs=1, breaks=0)


def test_inline_closure():
    scale = 3.0
    offsets = [1.0, 2.0]

    def inner(x):
        return x * scale + offsets[1]

    def f(x):
        return inner(x) + inner(x * 2)
    check(f, r(4), graphs=1, breaks=0)


def test_nested_function_made_in_trace():
    def f(x, k):
        def g(y, m=k):
            return y * m + k
        h = lambda z: g(z) - 1  # noqa: E731
        return h(x) + g(x, 2)
    check(f, r(4), 3, graphs=1, breaks=0)


def test_closure_over_tensor_made_in_trace():
    def f(x):
        w = x * 2

        def add(y):
            return y + w
        return add(x) + add(w)
    check(f, r(4), graphs=1, breaks=0)


def test_recursion_on_constants():
    def f(x):
        return helper_recursive(x, 4)
    check(f, r(3), graphs=1, breaks=0)


def test_functools_partial():
    def f(x):
        g = functools.partial(helper_default, k=4.0)
        return g(x, bias=2.0)
    check(f, r(3))


def test_decorated_helper():
    def twice(fn):
        @functools.wraps(fn)
        def w(*a, **k):
            return fn(fn(*a, **k))
        return w

    @twice
    def inc(x):
        return x + 1

    def f(x):
        return inc(x) * 2
    check(f, r(3), graphs=1, breaks=0)


def test_operator_module():
    def f(x, y):
        return operator.add(x, y), operator.mul(x, 2), operator.getitem(x, 1)
    check(f, r(3), r(3), graphs=1, breaks=0)


# ---- methods and user objects -----------------------------------------------------------------

class Scaler:
    factor = 2.0

    def __init__(self, k):
        self.k = k
        self.calls = 0

    def apply(self, x):
        return x * self.k + self.factor

    @staticmethod
    def st(x):
        return x - 1

    @classmethod
    def cm(cls, x):
        return x * cls.factor

    @property
    def double_k(self):
        return self.k * 2


def test_methods_static_class_property():
    def f(s, x):
        return s.apply(x) + Scaler.st(x) + s.cm(x) + s.double_k + s.st(x)
    check(f, Scaler(1.5), r(4), graphs=1, breaks=0)


def test_object_attribute_reads():
    class Cfg:
        def __init__(self):
            self.eps = 1e-3
            self.w = torch.randn(4)
            self.names = ["a", "b"]
    c = Cfg()

    def f(x):
        return (x + c.w) / (c.eps + len(c.names))
    check(f, r(4), graphs=1, breaks=0)


def test_bound_method_passed_around():
    s = Scaler(3.0)

    def f(x):
        fn = s.apply
        fns = [fn, torch.relu]
        for g in fns:
            x = g(x)
        return x
    check(f, r(4), graphs=1, breaks=0)


# ---- builtins and math -------------------------------------------------------------------------

def test_builtins():
    def f(xs, x):
        n = len(xs)
        out = x
        for i, t in enumerate(xs):
            out = out + t * i
        for a, b in zip(xs, xs[1:]):
            out = out + a * b
        if isinstance(x, torch.Tensor) and not isinstance(n, float):
            out = out * min(n, 2) + max(1, n, 3) + abs(-2)
        return out, int(2.7), float(3), bool(n), round(2.567, 2), sum([1, 2, 3]), divmod(7, 3)
    check(f, [r(3), r(3), r(3)], r(3), graphs=1, breaks=0)


def test_getattr_hasattr_on_objects():
    class O:
        k = 2.0

    def f(x, o):
        out = x * getattr(o, "k")
        if hasattr(o, "k") and not hasattr(o, "missing"):
            out = out + getattr(o, "missing", 3.0)
        return out
    check(f, r(3), O(), graphs=1, breaks=0)


def test_getattr_hasattr_on_tensors():
    def f(x):
        out = x
        if hasattr(x, "shape") and not hasattr(x, "no_such_attr"):
            out = out + getattr(x, "ndim") + getattr(x, "nope", 5)
        return out
    check(f, r(3), graphs=1, breaks=0)


def test_builtin_min_max_on_shapes():
    def f(x, y):
        n = min(x.shape[0], y.shape[0])
        m = max(x.size(1), y.size(1))
        return x[:n] + y[:n], torch.zeros(m)
    check(f, r(5, 3), r(4, 3), graphs=1, breaks=0)


def test_math_on_constants():
    def f(x, d):
        scale = 1.0 / math.sqrt(d)
        c = math.cos(math.pi / 3) + math.log(math.e) + math.ceil(2.1) + math.floor(-1.5)
        return x * scale + c + math.exp(0.5) * math.tanh(0.3) + min(math.inf, 3.0) + math.gcd(12, 18)
    check(f, r(4), 16, graphs=1, breaks=0)


# ---- grad mode --------------------------------------------------------------------------------

def test_no_grad_context_inside():
    def f(x, w):
        with torch.no_grad():
            y = x @ w
        z = (x @ w) * 2
        return y, z, torch.is_grad_enabled()
    w = torch.randn(4, 4, requires_grad=True)
    check(f, r(3, 4), w, rtol=1e-4, atol=1e-5)


def test_enable_grad_inside_no_grad():
    def f(x):
        with torch.no_grad():
            a = x * 2
            with torch.enable_grad():
                b = x * 3
        return a, b
    check(f, torch.randn(3, requires_grad=True))


def test_called_under_no_grad():
    def f(x, w):
        return torch.tanh(x @ w)
    w = torch.randn(4, 4, requires_grad=True)
    cf = ptc.compile(f)
    x = r(2, 4)
    with torch.no_grad():
        ref = f(x, w)
        out = cf(x, w)
    assert_same(out, ref, rtol=1e-4, atol=1e-5)
    assert not out.requires_grad


def test_gradients_flow_through_compiled_code():
    def f(x, w):
        return (torch.tanh(x @ w) * 2).sum()
    x = r(3, 4)
    w1 = torch.randn(4, 4, requires_grad=True)
    w2 = w1.detach().clone().requires_grad_(True)
    f(x, w1).backward()
    out = ptc.compile(f)(x, w2)
    assert out.requires_grad, "compiled result lost autograd (eager result requires grad)"
    out.backward()
    torch.testing.assert_close(w2.grad, w1.grad, rtol=1e-4, atol=1e-5)


# ---- shapes ------------------------------------------------------------------------------------

def test_shape_queries():
    def f(x):
        b, c = x.shape
        n = x.size(0) * x.size(-1) + x.dim() + x.ndim + x.numel() + len(x)
        return x.reshape(c, b) * n, x.shape, x.size(), x.dtype, x.device, x.is_floating_point()
    check(f, r(3, 4), graphs=1, breaks=0)


def test_shape_dependent_control_flow():
    def f(x):
        if x.shape[0] > 3:
            return x.sum(0)
        elif x.dim() == 2 and x.shape[1] == 1:
            return x * 2
        return x.mean(0)
    cf = ptc.compile(f)
    for shape in [(5, 2), (2, 2), (4, 1), (2, 1), (6, 3), (3, 3)]:
        x = r(*shape)
        assert_same(cf(x), f(x), rtol=1e-5, atol=1e-6, path=str(shape))


def test_shape_loop_unrolled():
    def f(x):
        acc = x[0]
        for i in range(1, x.shape[0]):
            acc = acc * x[i]
        return acc
    cf = ptc.compile(f)
    for n in [2, 3, 4, 5]:
        x = r(n, 3)
        assert_same(cf(x), f(x), path="n=%d" % n)


def test_dtype_branch():
    def f(x):
        if x.dtype == torch.float64:
            return x * 2
        if x.is_floating_point():
            return x + 1
        return x - 1
    cf = ptc.compile(f)
    for x in [r(3), r(3, dtype=torch.float64), torch.arange(3)]:
        assert_same(cf(x), f(x), path=str(x.dtype))


# ---- generators and comprehensions ------------------------------------------------------------

def gen_scaled(xs, k):
    for x in xs:
        yield x * k


def test_list_comprehension():
    def f(xs):
        ys = [t * 2 for t in xs if t.shape[0] == 3]
        d = {i: t.sum() for i, t in enumerate(ys)}
        s = {len(ys), 4}
        return ys, d, s
    check(f, [r(3), r(2), r(3)], graphs=1)


def test_generator_expression():
    def f(xs):
        total = sum(t.sum() for t in xs)
        return total, all(t.dim() == 1 for t in xs), any(t.shape[0] > 2 for t in xs)
    check(f, [r(3), r(2)])


def test_user_generator():
    def f(xs):
        out = list(gen_scaled(xs, 3.0))
        return torch.stack(out) + 1
    check(f, [r(4), r(4)])


def test_compiled_generator_function():
    cf = ptc.compile(gen_scaled)
    xs = [r(3), r(3)]
    assert_same(list(cf(xs, 2.0)), list(gen_scaled(xs, 2.0)))


# ---- exceptions --------------------------------------------------------------------------------

def _raises_same(fn, *args):
    """Eager and compiled raise the same exception type and message."""
    with pytest.raises(Exception) as eager:
        fn(*clone(list(args)))
    cf = ptc.compile(fn)
    for _ in range(2):
        with pytest.raises(Exception) as comp:
            cf(*clone(list(args)))
        assert type(comp.value) is type(eager.value), \
            "compiled raised %r, eager %r" % (comp.value, eager.value)
        assert str(comp.value) == str(eager.value)
    return cf


def test_exception_user_raise():
    def f(x):
        y = x * 2
        if y.shape[0] == 3:
            raise ValueError("bad size %d" % y.shape[0])
        return y
    _raises_same(f, r(3))


def test_exception_in_inlined_function():
    def g(d, k):
        return d[k]

    def f(x, d):
        y = x + 1
        return g(d, "missing") * y
    _raises_same(f, r(3), {"present": 1})


def test_exception_index_and_attribute():
    def f(x, lst):
        return x * lst[5]
    _raises_same(f, r(3), [1, 2])

    class O:
        a = 1

    def g(x, o):
        return x + o.b
    _raises_same(g, r(3), O())


def test_exception_zero_division_and_assert():
    def f(x, n):
        return x * (1 / n)
    _raises_same(f, r(3), 0)

    # (defined through exec: pytest rewrites the assert statements of test modules)
    ns = {}
    exec(compile("def g(x):\n    y = x + 1\n    assert y.dim() == 3, 'need a 3-d tensor'\n    return y\n",
                 __file__ + ":assert-case", "exec"), ns)
    _raises_same(ns["g"], r(3))


def test_exception_wrong_call():
    def f(x):
        return helper_default(x, 1.0, 2.0)
    _raises_same(f, r(3))


def test_exception_torch_shape_mismatch():
    def f(x, y):
        return torch.relu(x) + y
    _raises_same(f, r(3, 4), r(3, 5))


def test_exception_then_good_call():
    def f(x, n):
        if n < 0:
            raise RuntimeError("negative")
        return x * n
    cf = ptc.compile(f)
    with pytest.raises(RuntimeError, match="negative"):
        cf(r(3), -1)
    x = r(3)
    assert_same(cf(x, 2), f(x, 2))


def test_try_except_inside():
    def f(x, d):
        try:
            k = d["k"]
        except KeyError:
            k = 2.0
        return x * k
    check(f, r(3), {})
    check(f, r(3), {"k": 4.0})


# ---- the public surface -----------------------------------------------------------------------

def test_decorator_forms():
    @ptc.compile
    def f(x):
        return x * 2 + 1

    @ptc.compile(backend="eager")
    def g(x):
        return x - 1
    x = r(3)
    assert_same(f(x), x * 2 + 1)
    assert_same(g(x), x - 1)


def test_disable():
    calls = []

    @ptc.disable
    def plain(x):
        calls.append(1)
        return x.sum().item()

    def f(x):
        return x * plain(x)
    check(f, r(4))


def test_reset_recompiles():
    def f(x):
        return x * 3
    cf = ptc.compile(f)
    x = r(3)
    with Delta() as d:
        cf(x)
        cf(x)
    assert d.graphs == 1
    ptc.reset()
    with Delta() as d:
        assert_same(cf(x), f(x))
    assert d.graphs == 1


def test_kwargs_call():
    def f(x, *, alpha=1.0, beta):
        return x * alpha + beta
    cf = ptc.compile(f)
    x = r(3)
    assert_same(cf(x, beta=2.0), f(x, beta=2.0))
    assert_same(cf(x, alpha=3.0, beta=r(3) * 0 + 1), f(x, alpha=3.0, beta=torch.ones(3)))


def test_nested_compiled_calls():
    def inner(x):
        return x + 1

    cinner = ptc.compile(inner)

    def outer(x):
        return cinner(x) * 2
    check(outer, r(3))


def test_explain_report():
    def f(x):
        y = x * 2
        return torch.relu(y) + 1
    e = ptc.explain(f, r(4))
    assert e.graph_count == 1
    assert len(e.graphs) == 1
    assert e.break_reasons == []
    assert e.op_count >= 3
    assert any("L['x']" in g or "x" in g for g in e.guards)
    text = str(e)
    assert "relu" in text


def test_explain_fx_still_works():
    import torch.fx

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) * 2
    gm = torch.fx.symbolic_trace(M())
    e = ptc.explain(gm, r(3))
    assert e.num_kernels >= 1


# ---- what ptc.compile accepts -----------------------------------------------------------------------

class CallableObj:
    def __init__(self):
        self.k = 3.0

    def __call__(self, x):
        return x * self.k

    def method(self, x, y=1.0):
        return torch.relu(x) + y * self.k


def test_compile_bound_method_lambda_partial_callable():
    o = CallableObj()
    x = r(4)
    assert_same(ptc.compile(o.method)(x, y=2.0), o.method(x, y=2.0))
    assert_same(ptc.compile(lambda t: t * 2 + 1)(x), x * 2 + 1)
    assert_same(ptc.compile(functools.partial(helper_default, k=5.0))(x), helper_default(x, k=5.0))
    assert_same(ptc.compile(o)(x), o(x))
    assert_same(ptc.compile(torch.relu)(x), torch.relu(x))


def test_compiled_module_kwargs_and_dict_output():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x, *, scale=1.0, extra=None):
            out = {"y": self.lin(x) * scale}
            if extra is not None:
                out["e"] = extra + 1
            return out
    m = M().eval()
    cm = ptc.compile(m)
    x = r(2, 3)
    with torch.no_grad():
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
        assert_same(cm(x, scale=2.0, extra=x), m(x, scale=2.0, extra=x), rtol=1e-4, atol=1e-5)
        assert_same(cm.forward(x), m(x), rtol=1e-4, atol=1e-5)


def test_compile_rejects_bad_arguments():
    with pytest.raises(TypeError):
        ptc.compile(3)
    with pytest.raises(ValueError):
        ptc.compile(f_elementwise, backend="no-such-backend")
    with pytest.raises(ValueError):
        ptc.compile(f_elementwise, dynamic="yes")


# ---- next to torch.compile (PyTorch 2) --------------------------------------------------------------

@pytest.mark.skipif(not TORCH2, reason="torch.compile needs PyTorch 2")
def test_alongside_torch_compile():
    def f(x):
        return torch.relu(x) * 2

    def g(x):
        return torch.sigmoid(x) + 1

    tf = torch.compile(g, backend="eager")
    pf = ptc.compile(f)
    x = r(4)
    for _ in range(2):
        assert_same(tf(x), g(x))
        with Delta() as d:
            assert_same(pf(x), f(x))
        assert d.graphs + d.hits >= 1, "ptc.compile still captures after torch.compile ran: %r" % d

    def h(x):  # a torch.compile'd function called from ptc-compiled code
        return tf(x) * 3

    assert_same(ptc.compile(h)(x), h(x))
    assert_same(tf(x), g(x))
