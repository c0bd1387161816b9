"""test_dynamo_edge.py - corner cases of ptc.compile where a capture can give
a wrong answer silently: aliasing (inputs passed twice, views returned or
mutated, the same tensor returned twice, in-place writes on views of inputs
and on aliased graph values, .detach()/.data), side effects that precede an
exception, mutable defaults, class attributes and monkeypatched methods,
modules changed between calls (hooks, .data swaps, .double(), requires_grad),
names resolved at run time (other modules' globals, globals shadowing
builtins, patched builtins, closure cells), global torch state (default
dtype, grad-mode contexts, the RNG), constants that compare equal but differ
(signed zero, NaN, bool/int, tuple/list, dict key order, enums, __eq__),
optional inputs, varying *args/**kwargs, dynamic sizes (broadcasting against
a dim that becomes 1, empty tensors, size-dependent ops, mismatches, sizes
returned as Python values), dtype promotion and special values, exceptions
handled inside compiled code, loop/with/return forms, user context managers,
recursion, threads, a 300-local function. Each case compares with plain
Python.
"""

import sys
import threading
import warnings

import pytest
import torch

import ptc
from dynamo_util import Delta, assert_same, check, clone, fresh_dynamo  # noqa: F401

torch.manual_seed(0)


def r(*shape, **kw):
    return torch.randn(*shape, **kw)


# ---- aliasing ------------------------------------------------------------------------------------

def test_same_tensor_passed_twice():
    def f(x, y):
        x.add_(1)
        return y * 2
    cf = ptc.compile(f)
    for args_kind in ["distinct", "same", "distinct", "same"]:
        a = torch.ones(3)
        b = a if args_kind == "same" else torch.ones(3)
        ea = torch.ones(3)
        eb = ea if args_kind == "same" else torch.ones(3)
        assert_same(cf(a, b), f(ea, eb), path=args_kind)
        assert_same(a, ea, path=args_kind + " x after")


def test_returned_view_aliases_input():
    def f(x):
        y = x * 1
        return x[0], x.t(), y
    x = r(3, 4)
    out = ptc.compile(f)(x)
    out[0].fill_(7.0)
    assert bool((x[0] == 7.0).all()), "x[0] returned by compiled code must be a view of x"
    out[1][1, 1] = -5.0
    assert float(x[1, 1]) == -5.0, "x.t() returned by compiled code must be a view of x"


def test_same_value_returned_twice():
    def f(x):
        y = x + 1
        return y, y, [y]
    out = ptc.compile(f)(r(3))
    assert out[0] is out[1] and out[2][0] is out[0]


def test_inplace_on_aliased_intermediate():
    def f(x):
        y = x * 2
        z = y
        y.add_(1)
        w = y.view(-1)
        w.mul_(3)
        return z, w
    check(f, r(2, 3))


def test_inplace_on_input_slice_argument():
    def f(x):
        x.mul_(2)
        return x.sum()
    base = torch.arange(6.0)
    ref_base = base.clone()
    out = ptc.compile(f)(base[2:5])
    ref = f(ref_base[2:5])
    assert_same(out, ref)
    assert_same(base, ref_base, path="base of the sliced input")


def test_inplace_through_view_of_input_no_break():
    def f(x):
        x.view(-1)[1:3].fill_(9.0)
        x.t()[0].add_(100.0)
        return x * 1
    check(f, r(3, 4))


def test_detach_shares_storage():
    def f(x):
        d = x.detach()
        d.add_(1)
        return x * 2
    check(f, r(3))


def test_input_list_contains_same_tensor_twice():
    def f(xs):
        xs[0].add_(1)
        return xs[1] * 1
    cf = ptc.compile(f)
    t = torch.zeros(2)
    out = cf([t, t])
    assert_same(out, torch.ones(2))
    u, v = torch.zeros(2), torch.zeros(2)
    out = cf([u, v])
    assert_same(out, torch.zeros(2))
    assert_same(u, torch.ones(2))


# ---- side effects and exceptions -----------------------------------------------------------------------

G_STATE = {"n": 0}
G_FLAG = None


def test_effects_before_an_exception_happen():
    global G_FLAG

    def f(x, lst, d):
        global G_FLAG
        lst.append(1)
        G_FLAG = "set"
        y = x * 2
        return y + d["missing"]
    G_FLAG = None
    lst = []
    with pytest.raises(KeyError):
        ptc.compile(f)(r(3), lst, {})
    assert lst == [1], "the append before the exception must have happened"
    assert G_FLAG == "set", "the global write before the exception must have happened"
    G_FLAG = None


def test_inplace_before_an_exception_happens():
    def f(x, y):
        x.add_(1)
        return x + y  # shape mismatch
    x = torch.zeros(3)
    with pytest.raises(RuntimeError):
        ptc.compile(f)(x, torch.zeros(4))
    assert_same(x, torch.ones(3))


def test_exception_inside_loop_after_effects():
    def f(x, out):
        for i in range(5):
            out.append(i)
            if i == 3:
                raise IndexError("stop at %d" % i)
            x = x + 1
        return x
    out = []
    with pytest.raises(IndexError, match="stop at 3"):
        ptc.compile(f)(r(2), out)
    assert out == [0, 1, 2, 3]


def test_mutable_default_argument():
    def f(x, acc=[]):  # noqa: B006 - the point of the test
        acc.append(x.shape[0])
        return x * len(acc)
    ref_f = f
    cf = ptc.compile(f)
    x = torch.ones(2)
    outs = [cf(x) for _ in range(3)]
    assert f.__defaults__[0] == [2, 2, 2]
    for i, o in enumerate(outs):
        assert_same(o, x * (i + 1))
    assert ref_f is f


def test_global_dict_counter():
    G_STATE["n"] = 0

    def f(x):
        G_STATE["n"] += 1
        return x + G_STATE["n"]
    cf = ptc.compile(f)
    x = torch.zeros(2)
    for i in range(1, 4):
        assert_same(cf(x), torch.full((2,), float(i)))
    assert G_STATE["n"] == 3


def test_global_tensor_inplace():
    t = torch.zeros(3)
    holder = {"t": t}

    def f(x):
        holder["t"].add_(x)
        return holder["t"] * 1
    cf = ptc.compile(f)
    for i in range(1, 3):
        out = cf(torch.ones(3))
        assert_same(out, torch.full((3,), float(i)))
    assert_same(t, torch.full((3,), 2.0))


def test_parameter_modified_inside_compiled_code():
    lin = torch.nn.Linear(3, 3)
    ref = torch.nn.Linear(3, 3)
    ref.load_state_dict(lin.state_dict())

    def step(m, x):
        with torch.no_grad():
            m.weight.mul_(0.5)
            return m(x)
    cf = ptc.compile(step)
    x = r(2, 3)
    for i in range(3):
        assert_same(cf(lin, x), step(ref, x), rtol=1e-4, atol=1e-5, path="step %d" % i)
    assert_same(lin.weight.detach(), ref.weight.detach())


def test_attribute_on_tensor_object():
    def f(x):
        x.tag = "seen"
        return x + 1
    x = r(2)
    ptc.compile(f)(x)
    assert getattr(x, "tag", None) == "seen"


# ---- guards on things that change between calls ------------------------------------------------------

class K:
    factor = 2.0

    def scale(self, x):
        return x * self.factor


def test_class_attribute_changed():
    k = K()

    def f(x):
        return k.scale(x) + K.factor
    cf = ptc.compile(f)
    x = r(3)
    try:
        assert_same(cf(x), f(x))
        K.factor = 5.0
        assert_same(cf(x), f(x), path="class attribute changed")
    finally:
        K.factor = 2.0


def test_method_monkeypatched_on_instance_and_class():
    k = K()

    def f(x):
        return k.scale(x)
    cf = ptc.compile(f)
    x = r(3)
    saved = K.scale
    try:
        assert_same(cf(x), f(x))
        k.scale = lambda t: t - 100
        assert_same(cf(x), f(x), path="instance attribute shadows the method")
        del k.scale
        K.scale = lambda self, t: t + 100
        assert_same(cf(x), f(x), path="class method replaced")
    finally:
        K.scale = saved


def test_optional_input_none_then_tensor():
    def f(x, bias=None):
        y = x * 2
        if bias is not None:
            y = y + bias
        return y
    cf = ptc.compile(f)
    x = r(3)
    assert_same(cf(x), f(x))
    assert_same(cf(x, r(3) * 0 + 1), f(x, torch.ones(3)))
    assert_same(cf(x, None), f(x, None))
    assert_same(cf(x, bias=torch.ones(3)), f(x, bias=torch.ones(3)))


def test_varying_args_and_kwargs():
    def f(*xs, **kw):
        s = xs[0]
        for t in xs[1:]:
            s = s + t
        for k in sorted(kw):
            s = s * kw[k]
        return s
    cf = ptc.compile(f)
    a = r(2)
    for args, kw in [((a,), {}), ((a, a), {}), ((a,), {"p": 2.0}), ((a, a, a), {"p": 2.0, "q": 3.0}),
                     ((a,), {"q": 3.0}), ((a,), {"p": 2.0})]:
        assert_same(cf(*args, **kw), f(*args, **kw), path="%d args %r" % (len(args), kw))


def test_list_of_floats_changed():
    def f(x, ws):
        return x * ws[0] + ws[1]
    cf = ptc.compile(f)
    x = r(3)
    ws = [1.0, 2.0]
    assert_same(cf(x, ws), f(x, ws))
    ws[0] = 10.0
    assert_same(cf(x, ws), f(x, ws), path="list item changed in place")


def test_dict_value_object_identity():
    m1, m2 = torch.nn.ReLU(), torch.nn.Tanh()

    def f(x, mods):
        return mods["act"](x)
    cf = ptc.compile(f)
    x = r(3)
    d = {"act": m1}
    assert_same(cf(x, d), f(x, d))
    d["act"] = m2
    assert_same(cf(x, d), f(x, d), path="module in the dict replaced")


# ---- dynamic sizes ---------------------------------------------------------------------------------

def test_broadcasting_with_dynamic_dim_becoming_one():
    def f(x, y):
        return x + y
    cf = ptc.compile(f)
    for n, m in [(2, 2), (3, 3), (4, 1), (1, 5), (6, 6), (5, 1)]:
        x, y = r(n, 4), r(m, 4)
        assert_same(cf(x, y), f(x, y), path="%d,%d" % (n, m))


def test_empty_tensors():
    def f(x):
        return x * 2 + 1, x.sum(0), x.shape[0]
    cf = ptc.compile(f)
    for n in [2, 0, 3, 0, 4]:
        x = r(n, 3)
        assert_same(cf(x), f(x), path="n=%d" % n)


def test_size_one_then_many():
    def f(x):
        return x.squeeze(0) * 2 if x.shape[0] == 1 else x.mean(0)
    cf = ptc.compile(f)
    for n in [1, 2, 3, 1, 4]:
        x = r(n, 3)
        assert_same(cf(x), f(x), path="n=%d" % n)


def test_dynamic_view_error_message():
    def f(x):
        return x.view(x.shape[0] // 2, -1, 3) * 1
    cf = ptc.compile(f)
    for n in [2, 4, 6]:
        x = r(n, 3)
        assert_same(cf(x), f(x))
    x = r(5, 3)
    with pytest.raises(RuntimeError) as eager:
        f(x)
    with pytest.raises(RuntimeError) as comp:
        cf(x)
    assert str(comp.value) == str(eager.value)


def test_shape_as_python_values():
    def f(x):
        n = x.shape[0]
        d = {n: "size"}
        lst = [0] * n
        return x.sum() + len(lst), d, x.shape[0] / 3, list(x.shape), n in (2, 3)
    cf = ptc.compile(f)
    for n in [2, 3, 4, 5]:
        x = r(n, 2)
        assert_same(cf(x), f(x), path="n=%d" % n)


# ---- dtypes ---------------------------------------------------------------------------------------

def test_dtype_promotion():
    def f(i, b, h):
        return i * 1.5, i / 2, i // 2, i % 3, b + b, b * 2, h + i, i.float() + h, -i, i ** 2
    i = torch.tensor([-3, 0, 5, 7])
    b = torch.tensor([True, False, True, True])
    h = torch.tensor([0.5, 1.5, -2.0, 3.0], dtype=torch.float64)
    check(f, i, b, h)


def test_int64_large_values():
    def f(x):
        return x * (2 ** 40) + 1, x // 7, x.abs() % 5
    check(f, torch.tensor([1, -2, 3], dtype=torch.int64))


def test_mixed_precision_module():
    lin = torch.nn.Linear(3, 3).double()

    def f(x):
        return lin(x.double()).float()
    with torch.no_grad():
        check(f, r(2, 3), rtol=1e-5, atol=1e-6)


# ---- recursion, threads ---------------------------------------------------------------------------

def rec(x, n):
    if n == 0:
        return x
    return rec(x + 1, n - 1) * 1.0


def test_deep_recursion():
    def f(x):
        return rec(x, 60)
    check(f, r(3))


def test_recursion_error_same():
    def inf(x):
        return inf(x + 1)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)
    try:
        with pytest.raises(RecursionError):
            ptc.compile(inf)(r(2))
    finally:
        sys.setrecursionlimit(limit)
    # the capture still works afterwards
    check(lambda x: x * 2 + 1, r(3))


def test_threads():
    def f(x):
        return torch.sigmoid(x * 3) - x
    cf = ptc.compile(f)
    xs = [r(8) for _ in range(8)]
    results = [None] * 8
    errors = []

    def work(i):
        try:
            for _ in range(5):
                results[i] = cf(xs[i])
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(8):
        assert_same(results[i], f(xs[i]), path="thread %d" % i)


def test_uncompiled_thread_not_captured():
    # a thread running plain code while another runs compiled code is not captured
    def plain(x):
        return x * 5
    stop = threading.Event()
    out = {}

    def other():
        while not stop.is_set():
            out["v"] = plain(torch.ones(2))
    t = threading.Thread(target=other)
    t.start()
    try:
        cf = ptc.compile(lambda x: torch.relu(x) + 1)
        for _ in range(20):
            cf(r(4))
    finally:
        stop.set()
        t.join()
    assert ptc._C.dyn_entries(plain.__code__) == []
    assert_same(out["v"], torch.full((2,), 5.0))


# ---- syntax forms ---------------------------------------------------------------------------------

def test_syntax_forms():
    def f(x, xs, opt):
        if (n := x.shape[0]) > 2:
            x = x * n
        ok = 0 < n < 10
        first, *rest = xs
        last = rest[-1] if rest else first
        v = opt or 3.0
        w = opt and 5.0
        y = x + v + (w or 0)
        z = sorted(xs, key=lambda t: t.shape[0])
        return y, ok, first + last, len(z), [t.shape[0] for t in z], -n if not ok else n
    check(f, r(4), [r(3), r(1), r(3)], None)
    check(f, r(2), [r(3)], 2.0)


def test_nested_functions_and_closures_returned():
    def f(x):
        k = x.shape[0]

        def g(y):
            return y * k
        return g(x), g
    cf = ptc.compile(f)
    x = r(3)
    out, g = cf(x)
    ref, rg = f(x)
    assert_same(out, ref)
    assert_same(g(torch.ones(2)), rg(torch.ones(2)))


def test_string_and_type_introspection():
    def f(x, name):
        parts = name.split("_")
        key = "-".join(p.upper() for p in parts)
        return x * len(key), key, type(x).__name__, isinstance(x, (list, torch.Tensor)), str(x.dtype)
    check(f, r(2), "a_bb_c")


# ---- modules changed between calls ----------------------------------------------------------------

class Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x)) + 1


def test_forward_hook_registered_after_compile():
    m = Lin().eval()
    cm = ptc.compile(m)
    x = r(2, 4)
    with torch.no_grad():
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
        h = m.lin.register_forward_hook(lambda mod, inp, out: out * 10)
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path="forward hook on a submodule")
        h.remove()
        h2 = m.register_forward_pre_hook(lambda mod, inp: (inp[0] * -1,))
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path="pre-hook on the module")
        h2.remove()
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path="hooks removed")


def test_parameter_data_swapped():
    m = Lin().eval()
    cm = ptc.compile(m)
    x = r(2, 4)
    with torch.no_grad():
        cm(x)
        m.lin.weight.data = torch.randn(4, 4)
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path=".data replaced (same shape)")
        m.lin.weight.data = torch.randn(4, 4).t()
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path=".data replaced (transposed strides)")


def test_module_converted_to_double():
    m = Lin().eval()
    cm = ptc.compile(m)
    x = r(2, 4)
    with torch.no_grad():
        cm(x)
        m.double()
        xd = x.double()
        assert_same(cm(xd), m(xd), rtol=1e-6, atol=1e-8, path="after .double()")


def test_parameter_requires_grad_toggled():
    m = Lin()
    cm = ptc.compile(m)
    x = r(2, 4)
    assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
    m.requires_grad_(False)
    assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path="requires_grad off")
    m.requires_grad_(True)
    out = cm(x)
    assert_same(out, m(x), rtol=1e-4, atol=1e-5, path="requires_grad on again")
    out.sum().backward()
    assert m.lin.weight.grad is not None


# ---- names resolved at run time -------------------------------------------------------------------

def _make_module(src, name):
    """A module made from source (its globals are its own)."""
    import types
    mod = types.ModuleType(name)
    mod.__dict__["torch"] = torch
    exec(compile(src, __file__ + ":" + name, "exec"), mod.__dict__)
    return mod


def test_global_of_another_module_changed():
    mod = _make_module("K = 2.0\ndef helper(x):\n    return x * K\n", "edge_helper_mod")

    def f(x):
        return mod.helper(x) + 1
    cf = ptc.compile(f)
    x = r(3)
    assert_same(cf(x), f(x))
    mod.K = 7.0
    assert_same(cf(x), f(x), path="the helper's module global changed")


def test_global_shadows_builtin_after_compile():
    mod = _make_module("def f(x):\n    return x * len(x)\n", "edge_shadow_mod")
    cf = ptc.compile(mod.f)
    x = r(3)
    assert_same(cf(x), mod.f(x))
    mod.len = lambda t: 100
    assert_same(cf(x), mod.f(x), path="a global named len now shadows the builtin")
    del mod.len
    assert_same(cf(x), mod.f(x), path="shadowing global removed")


def test_builtins_module_patched():
    import builtins
    mod = _make_module("def f(x):\n    return x * abs(-2)\n", "edge_builtins_mod")
    cf = ptc.compile(mod.f)
    x = r(3)
    assert_same(cf(x), mod.f(x))
    saved = builtins.abs
    try:
        builtins.abs = lambda v: 10
        assert_same(cf(x), mod.f(x), path="builtins.abs patched")
    finally:
        builtins.abs = saved


def test_inlined_closure_cell_changed():
    def make():
        k = [2.0]

        def helper(x):
            return x * k[0]

        def setk(v):
            k[0] = v
        return helper, setk
    helper, setk = make()

    def f(x):
        return helper(x) + 1
    cf = ptc.compile(f)
    x = r(3)
    assert_same(cf(x), f(x))
    setk(9.0)
    assert_same(cf(x), f(x), path="a closure cell of an inlined function changed")


# ---- exceptions handled inside compiled code -------------------------------------------------------

def test_tensor_error_caught_inside():
    def f(x, y):
        try:
            z = x + y
        except RuntimeError:
            z = x.sum() + y.sum()
        return z * 2
    check(f, r(3), r(4))
    check(f, r(3), r(3))


def test_exception_from_inlined_call_caught():
    def inner(x, k):
        if k < 0:
            raise ValueError("neg")
        return x * k

    def f(x, k):
        try:
            return inner(x, k)
        except ValueError as e:
            return x - len(str(e))
    check(f, r(3), -1)
    check(f, r(3), 2)


def test_index_error_message_from_tensor_indexing():
    def f(x):
        y = x * 2
        return y[10]
    with pytest.raises(IndexError) as eager:
        f(r(3))
    with pytest.raises(IndexError) as comp:
        ptc.compile(f)(r(3))
    assert str(comp.value) == str(eager.value)


def test_finally_runs():
    log = []

    def f(x):
        try:
            return x * 2
        finally:
            log.append("finally")
    out = ptc.compile(f)(torch.ones(2))
    assert log == ["finally"]
    assert_same(out, torch.full((2,), 2.0))


# ---- loops and control flow forms ------------------------------------------------------------------

def test_loop_break_continue_else():
    def f(x, n):
        for i in range(n):
            if i == 1:
                continue
            if i == 4:
                break
            x = x * 2
        else:
            x = x - 100
        while n > 0:
            n -= 2
            x = x + n
        return x, n
    for n in [3, 6]:
        check(f, r(2), n)


def test_return_inside_loop_and_with():
    def f(x, xs):
        for t in xs:
            if t.shape[0] == 2:
                with torch.no_grad():
                    return x + t
        return x
    check(f, r(2), [r(3), r(2), r(2)])
    check(f, r(2), [r(3)])


def test_break_inside_comprehension(capsys):
    def f(xs):
        return [print("item") or t * 2 for t in xs]
    xs = [r(2), r(2)]
    ref = f(xs)
    printed = capsys.readouterr().out
    out = ptc.compile(f)(xs)
    assert capsys.readouterr().out == printed
    assert_same(out, ref)


def test_break_inside_nested_loops(capsys):
    def f(x):
        for i in range(2):
            for j in range(2):
                x = x + i * j
                print(i, j)
        return x * 2
    capsys.readouterr()
    ref = f(torch.zeros(2))
    printed = capsys.readouterr().out
    cf = ptc.compile(f)
    for _ in range(2):
        out = cf(torch.zeros(2))
        assert capsys.readouterr().out == printed
        assert_same(out, ref)


def test_import_inside_function():
    def f(x):
        import math as m
        from collections import OrderedDict
        d = OrderedDict(a=1)
        return x * m.pi + d["a"]
    check(f, r(3))


# ---- python protocol on user classes ------------------------------------------------------------------

class Counter:
    def __init__(self):
        self.reads = 0

    @property
    def value(self):
        self.reads += 1
        return 2.0


class Vec:
    def __init__(self, t):
        self.t = t

    def __add__(self, other):
        return Vec(self.t + other.t)

    def __getitem__(self, i):
        return self.t[i]

    def __len__(self):
        return self.t.shape[0]


class Dyn:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return len(name)


def test_property_with_side_effect():
    c = Counter()

    def f(x):
        return x * c.value + c.value
    cf = ptc.compile(f)
    for i in range(1, 4):
        cf(r(2))
        assert c.reads == 2 * i, "the property getter runs on every call (reads=%d)" % c.reads


def test_operator_overloading_and_protocols():
    def f(a, b):
        s = a + b
        return s.t * 2, s[0], len(s)
    check(f, Vec(r(3)), Vec(r(3)))


def test_dunder_getattr():
    def f(x, d):
        return x * d.abc + d.z
    check(f, r(2), Dyn())


# ---- randomness --------------------------------------------------------------------------------------

def test_random_ops_follow_torch_rng():
    def f(x):
        return x + torch.randn(3), torch.rand(2)
    x = torch.zeros(3)
    cf = ptc.compile(f)
    for _ in range(2):
        torch.manual_seed(123)
        ref = f(x)
        after_ref = torch.rand(1)
        torch.manual_seed(123)
        out = cf(x)
        after_out = torch.rand(1)
        assert_same(out, ref)
        assert_same(after_out, after_ref, path="the RNG state after the call")


def test_dropout_train_mode_follows_torch_rng():
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)).train()
    cm = ptc.compile(m)
    x = r(3, 4)
    with torch.no_grad():
        for _ in range(2):
            torch.manual_seed(7)
            ref = m(x)
            torch.manual_seed(7)
            out = cm(x)
            assert_same(out, ref, rtol=1e-4, atol=1e-5)


# ---- tensor-returning structures and comparisons --------------------------------------------------------

def test_namedtuple_results_of_torch_ops():
    def f(x):
        s = torch.sort(x, dim=-1)
        m = torch.max(x, dim=0)
        return s.values * 2, s.indices, m.values + 1, m.indices
    check(f, r(3, 4))


def test_builtin_max_on_tensors_is_data_dependent():
    def f(a, b):
        return max(a, b) * 2, min(a.sum(), b.sum())
    cf = ptc.compile(f)
    for a, b in [(torch.tensor(1.0), torch.tensor(2.0)), (torch.tensor(3.0), torch.tensor(-1.0))]:
        assert_same(cf(a, b), f(a, b))


def test_shape_and_dtype_comparisons():
    def f(x):
        out = x
        if x.shape == (3, 4):
            out = out + 1
        if x.size() == torch.Size([3, 4]):
            out = out * 2
        if torch.float32 == x.dtype:
            out = out - 1
        if x.shape[-1] % 2 == 0:
            out = out / 2
        return out
    cf = ptc.compile(f)
    for shape, dt in [((3, 4), torch.float32), ((3, 5), torch.float32), ((3, 4), torch.float64), ((2, 6), torch.float32)]:
        x = torch.randn(*shape, dtype=dt)
        assert_same(cf(x), f(x), path="%s %s" % (shape, dt))


def test_grad_mode_contexts():
    def f(x):
        with torch.set_grad_enabled(False):
            a = x * 2
        with torch.inference_mode():
            b = x * 3
        return a, b * 1, torch.is_grad_enabled()
    check(f, torch.randn(3, requires_grad=True), grad=False)
    out = ptc.compile(f)(torch.randn(3, requires_grad=True))
    assert not out[0].requires_grad


# ---- big code objects ----------------------------------------------------------------------------------

def test_many_locals_and_long_jumps(capsys):
    # 300 locals, long straight-line code and a break in the middle: EXTENDED_ARG
    # in LOAD_FAST/STORE_FAST and jumps in the transformed and resume code
    lines = ["def big(x):"]
    for i in range(300):
        lines.append("    v%d = x + %d" % (i, i))
    lines.append("    if x.shape[0] == 2:")
    lines.append("        print('mid')")
    for i in range(300):
        lines.append("    v%d = v%d * 0.5 + v%d" % (i, i, (i + 7) % 300))
    lines.append("    return " + " + ".join("v%d" % i for i in range(0, 300, 25)))
    ns = {}
    exec(compile("\n".join(lines), __file__ + ":big", "exec"), ns)
    big = ns["big"]
    x = torch.ones(2)
    capsys.readouterr()
    ref = big(x)
    printed = capsys.readouterr().out
    cf = ptc.compile(big)
    for _ in range(2):
        out = cf(x)
        assert capsys.readouterr().out == printed
        assert_same(out, ref, rtol=1e-5, atol=1e-4)


# ---- dynamic sizes: ops whose output count or validity depends on a size ---------------------------

@pytest.mark.parametrize("op", ["split", "chunk", "unbind", "slices", "narrow_view", "cat_expand", "index_last"])
def test_dynamic_size_dependent_ops(op):
    def f(x, y):
        if op == "split":
            return [t.sum(0) for t in x.split(2)]
        if op == "chunk":
            return [t * 2 for t in torch.chunk(x, 3)]
        if op == "unbind":
            return [t + 1 for t in x.unbind(0)]
        if op == "slices":
            n = x.shape[0]
            return x[: n // 2], x[-2:], x[1:-1], x[n - 1]
        if op == "narrow_view":
            return x.narrow(0, 1, x.shape[0] - 1).reshape(-1), x.view(-1, 2).sum(1)
        if op == "cat_expand":
            return torch.cat([x, y], 0), y[:1].expand(x.shape[0], -1)
        return x[x.shape[0] - 1] + y[-1]
    cf = ptc.compile(f)
    for n in [2, 3, 4, 5, 6, 7, 4]:
        x, y = r(n, 2), r(n + 1, 2)
        assert_same(cf(x, y), f(x, y), path="n=%d" % n)


def test_dynamic_sizes_mismatch_error():
    def f(x, y):
        return x + y
    cf = ptc.compile(f)
    for n in [2, 3, 4]:
        x, y = r(n, 2), r(n, 2)
        assert_same(cf(x, y), f(x, y), path="n=%d" % n)
    x, y = r(4, 2), r(5, 2)
    with pytest.raises(RuntimeError) as eager:
        f(x, y)
    with pytest.raises(RuntimeError) as comp:
        cf(x, y)
    assert str(comp.value) == str(eager.value)


def test_dynamic_reduction_mean_and_var():
    def f(x):
        return x.mean(0), x.var(0), x.sum() / x.shape[0], F_softmax(x)
    cf = ptc.compile(f)
    for n in [2, 3, 5, 8]:
        x = r(n, 3)
        assert_same(cf(x), f(x), rtol=1e-5, atol=1e-5, path="n=%d" % n)


def F_softmax(x):
    return torch.nn.functional.softmax(x, dim=0)


def test_dynamic_then_non_contiguous():
    def f(x):
        return x * 2 + 1
    cf = ptc.compile(f)
    for x in [r(2, 3), r(3, 3), r(4, 3), r(3, 5).t(), r(6, 2)[::2], r(5, 3)]:
        assert_same(cf(x), f(x), path=str(tuple(x.shape)) + str(x.stride()))


# ---- dynamic sizes with effects and breaks -----------------------------------------------------------

def test_dynamic_sizes_with_inplace_input_and_break(capsys):
    def f(x, lst):
        x.mul_(2)
        n = x.shape[0]
        lst.append(n)
        print("n", n)
        return x[: n - 1].sum(0) + n
    cf = ptc.compile(f)
    for n in [2, 3, 4, 5, 3]:
        x, lst = r(n, 3), []
        xe, le = x.clone(), []
        capsys.readouterr()
        ref = f(xe, le)
        printed = capsys.readouterr().out
        out = cf(x, lst)
        assert capsys.readouterr().out == printed
        assert_same(out, ref, path="n=%d" % n)
        assert_same(x, xe, path="x after, n=%d" % n)
        assert lst == le


def test_item_with_dynamic_sizes():
    def f(x):
        m = x.abs().max().item()
        return x / (m + x.shape[0])
    cf = ptc.compile(f)
    for n in [2, 3, 4, 5, 6]:
        x = r(n)
        assert_same(cf(x), f(x), path="n=%d" % n)


def test_recompile_cap_on_resume_functions():
    # the part after a break sees a new Python float every call: its resume
    # function hits the cap, then runs plainly; results stay right
    def f(x):
        s = x.sum().item()
        return x * s + 1
    cf = ptc.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(15):
            x = r(3)
            assert_same(cf(x), f(x))


# ---- global torch state read by compiled code -----------------------------------------------------------

def test_default_dtype_changed_after_compile():
    def f(x):
        return torch.zeros(3) + x.sum(), torch.tensor([1.5, 2.5]), torch.arange(3.0)
    cf = ptc.compile(f)
    x = r(2)
    assert_same(cf(x), f(x))
    saved = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        assert_same(cf(x), f(x), path="default dtype float64")
    finally:
        torch.set_default_dtype(saved)
    assert_same(cf(x), f(x), path="default dtype restored")


def test_no_grad_decorated_helper():
    @torch.no_grad()
    def helper(t):
        return t * 2

    def f(x):
        return helper(x) + x
    x = torch.randn(3, requires_grad=True)
    out = ptc.compile(f)(x)
    ref = f(x)
    assert_same(out, ref)
    out.sum().backward()
    torch.testing.assert_close(x.grad, torch.ones(3))


def test_inplace_on_non_leaf_input_with_grad():
    def f(y):
        y.mul_(3)
        return (y * y).sum()
    leaf1 = torch.randn(4, requires_grad=True)
    leaf2 = leaf1.detach().clone().requires_grad_(True)
    ref = f(leaf1 * 1)
    ref.backward()
    out = ptc.compile(f)(leaf2 * 1)
    out.backward()
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(leaf2.grad, leaf1.grad)


def test_requires_grad_set_inside():
    def f(x):
        x.requires_grad_(True)
        return (x * 2).sum()
    x = torch.ones(3)
    out = ptc.compile(f)(x)
    assert x.requires_grad and out.requires_grad
    out.backward()
    torch.testing.assert_close(x.grad, torch.full((3,), 2.0))


def test_zero_dim_tensor_inputs():
    def f(a, b, n):
        return a * n + b, (a > b), a + 0, float(n) * b
    check(f, torch.tensor(3.0), torch.tensor(-1.5), 4)


# ---- special values through the cpu backend ------------------------------------------------------------

def test_nan_and_inf_propagation():
    def f(x, y):
        return (torch.relu(x), x.clamp(min=0.0), torch.maximum(x, y), torch.minimum(x, y), x.amax(-1),
                x.sum(-1), torch.softmax(y, -1), torch.sigmoid(x), x / y, torch.exp(x), torch.log(y))
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[nan, 1.0, -2.0, inf], [0.5, -inf, 3.0, 1.0]])
    y = torch.tensor([[1.0, nan, -inf, 2.0], [-inf, -inf, 0.0, -0.0]])
    check(f, x, y)


# ---- constants that compare equal but are not the same ---------------------------------------------------

def test_signed_zero_constant():
    import math

    def f(x, s):
        if math.copysign(1.0, s) < 0:
            return x - 1
        return x * s
    cf = ptc.compile(f)
    x = torch.ones(3)
    assert_same(cf(x, 0.0), f(x, 0.0))
    out, ref = cf(x, -0.0), f(x, -0.0)
    assert_same(out, ref, path="-0.0 after 0.0")


def test_signed_zero_in_tensor_math():
    def f(x, s):
        return 1.0 / (x * s)
    cf = ptc.compile(f)
    x = torch.ones(2)
    assert_same(cf(x, 0.0), f(x, 0.0))
    assert_same(cf(x, -0.0), f(x, -0.0), path="-0.0 after 0.0 (+inf vs -inf)")


def test_nan_constant_argument():
    def f(x, s):
        return x + s, s != s
    cf = ptc.compile(f)
    x = torch.ones(2)
    for s in [float("nan"), 1.0, float("nan")]:
        assert_same(cf(x, s), f(x, s), path=repr(s))


def test_bool_vs_int_and_tuple_vs_list():
    def f(x, flag, xs):
        y = x * 2 if flag is True else x * 3
        if isinstance(xs, list):
            y = y + 1
        return y + len(xs)
    cf = ptc.compile(f)
    x = torch.ones(2)
    for flag, xs in [(True, [1]), (1, [1]), (True, (1,)), (1, (1,)), (True, [1])]:
        assert_same(cf(x, flag, xs), f(x, flag, xs), path="%r %r" % (flag, xs))


def test_dict_key_order():
    def f(d):
        return torch.cat(list(d.values())), list(d)
    cf = ptc.compile(f)
    a, b = torch.zeros(1), torch.ones(1)
    assert_same(cf({"a": a, "b": b}), f({"a": a, "b": b}))
    assert_same(cf({"b": b, "a": a}), f({"b": b, "a": a}), path="same keys, other order")


class _Mode:
    pass


def test_enum_and_sentinel_arguments():
    import enum

    class Mode(enum.Enum):
        A = 1
        B = 2

    ADD, MUL = _Mode(), _Mode()

    def f(x, mode, op):
        y = x * 2 if mode == Mode.A else x * 3
        if mode is Mode.B:
            y = y - 1
        return y + 1 if op is ADD else y * 5
    cf = ptc.compile(f)
    x = torch.ones(2)
    for mode, op in [(Mode.A, ADD), (Mode.B, ADD), (Mode.A, MUL), (Mode.B, MUL), (Mode.A, ADD)]:
        assert_same(cf(x, mode, op), f(x, mode, op), path="%s %s" % (mode, "ADD" if op is ADD else "MUL"))


def test_object_with_eq_argument():
    class Key:
        def __init__(self, k):
            self.k = k

        def __eq__(self, other):
            return isinstance(other, Key) and self.k == other.k

        __hash__ = None

    def f(x, a, b):
        return x + 1 if a == b else x - 1
    cf = ptc.compile(f)
    x = torch.ones(2)
    for a, b in [(Key(1), Key(1)), (Key(1), Key(2)), (Key(3), Key(3))]:
        assert_same(cf(x, a, b), f(x, a, b), path="%d %d" % (a.k, b.k))


def test_dynamic_sizes_returned_as_python_values():
    def f(x):
        return x.shape, x.size(), x.numel(), x.size(0), x.shape[1:], x * 1
    cf = ptc.compile(f)
    for n in [2, 3, 4, 5]:
        x = r(n, 3)
        out, ref = cf(x), f(x)
        assert_same(out, ref, path="n=%d" % n)
        assert type(out[0]) is torch.Size and all(type(v) is int for v in out[0])
        assert type(out[2]) is int and type(out[3]) is int


def test_grad_attribute_read_each_call():
    def sgd(p, lr):
        with torch.no_grad():
            p.sub_(lr * p.grad)
        return p.grad.norm()
    p1 = torch.randn(4, requires_grad=True)
    p2 = p1.detach().clone().requires_grad_(True)
    cf = ptc.compile(sgd)
    for i in range(3):
        for p in (p1, p2):
            p.grad = None
            (p * p * (i + 1)).sum().backward()
        n1 = sgd(p1, 0.1)
        n2 = cf(p2, 0.1)
        torch.testing.assert_close(n2, n1)
        torch.testing.assert_close(p2.detach(), p1.detach(), msg=lambda s: "step %d: %s" % (i, s))


def test_data_attribute_writes():
    def f(x):
        x.data.mul_(2)
        y = x.data + 1
        return y
    check(f, r(3))


class Ctx:
    def __init__(self, log, suppress=False):
        self.log, self.suppress = log, suppress

    def __enter__(self):
        self.log.append("enter")
        return 3.0

    def __exit__(self, *exc):
        self.log.append("exit:%s" % (exc[0].__name__ if exc[0] else None))
        return self.suppress


def test_user_context_manager():
    def f(x, log):
        with Ctx(log) as k:
            y = x * k
        return y + 1
    check(f, r(3), [])


def test_user_context_manager_suppressing_exception():
    def f(x, log):
        y = x + 1
        with Ctx(log, suppress=True):
            y = y * 2
            raise ValueError("swallowed")
        return y - 1
    check(f, r(3), [])


def test_contextlib_contextmanager():
    import contextlib

    @contextlib.contextmanager
    def scaled(log):
        log.append("in")
        try:
            yield 2.0
        finally:
            log.append("out")

    def f(x, log):
        with scaled(log) as k:
            x = x * k
        return x
    check(f, r(3), [])
