"""test_dynamo_side_effects.py - side effects of ptc.compile'd code must
match plain Python on every call (cache hits included): global writes,
attribute writes on user objects and modules, closure (nonlocal) writes,
list append/extend/pop/setitem on input lists, dict setitem/update/pop on
input dicts, in-place tensor ops on inputs (also through views and on
slices), effects in their original order, effects before a graph break,
and objects created in compiled code returned for real.
"""

import collections

import pytest

import torch
import torch.nn as nn

import ptc
from dynamo_util import assert_same, check, fresh_dynamo  # noqa: F401

torch.manual_seed(0)


def r(*shape):
    return torch.randn(*shape)


# ---- globals -------------------------------------------------------------------------------------

COUNTER = 0
LAST = None
LOG = []


def f_global_write(x):
    global COUNTER, LAST
    COUNTER += 1
    y = x * COUNTER
    LAST = y + 1
    return y


def test_global_writes_each_call():
    global COUNTER, LAST
    COUNTER, LAST = 0, None
    cf = ptc.compile(f_global_write)
    x = r(3)
    for i in range(1, 4):
        out = cf(x)
        assert COUNTER == i, "global write replayed on call %d: COUNTER=%d" % (i, COUNTER)
        torch.testing.assert_close(out, x * i)
        torch.testing.assert_close(LAST, x * i + 1)


def test_global_container_mutation():
    LOG.clear()

    def f(x):
        LOG.append(x.shape[0])
        LOG.append(x * 2)
        return x + len(LOG)
    cf = ptc.compile(f)
    x = r(2)
    out1 = cf(x)
    out2 = cf(x)
    assert len(LOG) == 4
    assert LOG[0] == 2 and LOG[2] == 2
    torch.testing.assert_close(LOG[1], x * 2)
    torch.testing.assert_close(out1, x + 2)
    torch.testing.assert_close(out2, x + 4)
    LOG.clear()


def test_global_new_name():
    g = globals()
    g.pop("CREATED_BY_F", None)

    def f(x):
        global CREATED_BY_F
        CREATED_BY_F = x.sum()
        return x * 2
    try:
        cf = ptc.compile(f)
        x = r(3)
        assert_same(cf(x), x * 2)
        torch.testing.assert_close(g["CREATED_BY_F"], x.sum())
    finally:
        g.pop("CREATED_BY_F", None)


# ---- attributes ------------------------------------------------------------------------------------

class State:
    def __init__(self):
        self.count = 0
        self.last = None
        self.history = []


def test_attribute_writes():
    def f(s, x):
        s.count += 1
        s.last = x * s.count
        s.history.append(s.count)
        s.new_attr = "set"
        return s.last + 1
    check(f, State(), r(3))
    s = State()
    cf = ptc.compile(f)
    x = r(3)
    for i in range(1, 4):
        out = cf(s, x)
        assert s.count == i and s.history == list(range(1, i + 1)) and s.new_attr == "set"
        torch.testing.assert_close(s.last, x * i)
        torch.testing.assert_close(out, x * i + 1)


def test_attribute_write_then_read_in_trace():
    def f(s, x):
        s.count = 10
        return x * s.count
    s = State()
    out = ptc.compile(f)(s, r(3) * 0 + 1)
    assert s.count == 10
    torch.testing.assert_close(out, torch.full((3,), 10.0))


def test_attribute_delete():
    def f(s, x):
        del s.last
        return x + 1
    s = State()
    ptc.compile(f)(s, r(3))
    assert not hasattr(s, "last")


def test_module_attribute_write():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            self.cached = self.lin(x)
            return self.cached * 2
    m = M()
    cm = ptc.compile(m)
    x = r(2, 3)
    with torch.no_grad():
        for i in range(1, 4):
            out = cm(x)
            assert m.calls == i
            torch.testing.assert_close(m.cached, m.lin(x))
            torch.testing.assert_close(out, m.lin(x) * 2)


def test_buffer_in_place_update():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("steps", torch.zeros(()))
            self.register_buffer("acc", torch.zeros(3))

        def forward(self, x):
            self.steps += 1
            self.acc.add_(x)
            return x * self.steps
    m, ref = M(), M()
    cm = ptc.compile(m)
    for i in range(3):
        x = r(3)
        assert_same(cm(x), ref(x), path="call %d" % i)
        assert_same(m.steps, ref.steps)
        assert_same(m.acc, ref.acc)


# ---- closures ----------------------------------------------------------------------------------------

def test_nonlocal_write():
    total = 0
    seen = []

    def f(x):
        nonlocal total
        total += x.shape[0]
        seen.append(total)
        return x * total
    cf = ptc.compile(f)
    x = r(2)
    for i in range(1, 4):
        out = cf(x)
        assert total == 2 * i and seen == [2 * k for k in range(1, i + 1)]
        torch.testing.assert_close(out, x * (2 * i))


def test_closure_created_and_called_with_write():
    def f(x):
        acc = [x]

        def push(v):
            acc.append(v * 2)
        push(x + 1)
        push(x + 2)
        return acc
    check(f, r(3), graphs=1, breaks=0)


# ---- input lists and dicts -------------------------------------------------------------------------------

def test_list_append_on_input():
    def f(lst, x):
        lst.append(x * 2)
        lst.append(len(lst))
        return x + 1
    check(f, [r(3)], r(3), graphs=1, breaks=0)
    lst = []
    cf = ptc.compile(f)
    x = r(3)
    for i in range(3):
        cf(lst, x)
    assert len(lst) == 6 and lst[1] == 1 and lst[3] == 3 and lst[5] == 5


def test_list_methods_on_input():
    def f(lst, x):
        a = lst.pop()
        lst.extend([x, a])
        lst.insert(0, "head")
        lst[1] = lst[1] * 3
        lst.reverse()
        del lst[-1]
        lst.remove(a)
        return x * 2
    check(f, [r(3), r(3), r(3)], r(3))


def test_list_sort_and_clear():
    def f(lst, other, x):
        lst.sort()
        other.clear()
        return x + lst[0]
    check(f, [3, 1, 2], [1, 2], r(3))


def test_dict_update_on_input():
    def f(d, x):
        d["new"] = x * 2
        d.update(count=d.get("count", 0) + 1)
        d.update({"t": x + 1})
        d.setdefault("k", 5)
        v = d.pop("gone")
        return x * v
    check(f, {"gone": 3.0, "count": 1}, r(3), graphs=1, breaks=0)


def test_dict_delete_and_order():
    def f(d, x):
        del d["a"]
        d["a"] = x
        d["z"] = x * 2
        return list(d.keys())
    check(f, {"a": 1, "b": 2}, r(3))


def test_nested_containers_mutation():
    def f(cfg, x):
        cfg["layers"].append(x.shape[0])
        cfg["stats"]["calls"] += 1
        return x * cfg["stats"]["calls"]
    check(f, {"layers": [], "stats": {"calls": 0}}, r(3))


def test_same_list_aliased_twice():
    def f(a, b, x):
        a.append(1)
        return x * len(b)
    lst = [0]
    cf = ptc.compile(f)
    out = cf(lst, lst, r(3) * 0 + 1)
    assert lst == [0, 1]
    torch.testing.assert_close(out, torch.full((3,), 2.0))


# ---- in-place tensor ops on inputs -------------------------------------------------------------------

def test_inplace_on_input():
    def f(x, y):
        x.add_(1)
        y.mul_(x)
        return x * 2
    check(f, r(3), r(3), graphs=1, breaks=0)


def test_inplace_returns_same_object():
    def f(x):
        return x.add_(1)
    x = r(3)
    before = x.clone()
    out = ptc.compile(f)(x)
    assert out is x, "x.add_(1) returns x itself"
    torch.testing.assert_close(x, before + 1)


def test_setitem_on_input():
    def f(x, v):
        x[0] = 5.0
        x[1:, 0] = v
        x[x < 0] = 0.0
        return x.sum()
    check(f, r(4, 3), r(3))


def test_inplace_through_view_of_input():
    def f(x):
        y = x.view(-1)
        y.mul_(2)
        x[0].zero_()
        return y + 1
    check(f, r(3, 4))


def test_inplace_input_then_read():
    def f(x):
        a = x * 1
        x.sub_(a.mean())
        b = x * 1
        x.div_(2)
        return a, b, x
    check(f, r(5))


def test_inplace_out_argument():
    def f(x, out):
        torch.add(x, 1, out=out)
        return out * 2
    check(f, r(3), torch.empty(3))


def test_inplace_on_input_requires_grad_leaf_error():
    def f(x):
        x.add_(1)
        return x
    x = torch.ones(3, requires_grad=True)
    try:
        f(x.clone().detach().requires_grad_(True))
        eager_exc = None
    except RuntimeError as e:
        eager_exc = e
    assert eager_exc is not None
    try:
        ptc.compile(f)(x)
        comp_exc = None
    except RuntimeError as e:
        comp_exc = e
    assert comp_exc is not None and str(comp_exc) == str(eager_exc)
    torch.testing.assert_close(x.detach(), torch.ones(3))


# ---- order of effects and breaks ------------------------------------------------------------------

def test_effects_in_order():
    events = []

    class Rec:
        pass
    rec = Rec()

    def f(x, d):
        events.append("a")
        d["k"] = len(events)
        events.append("b")
        rec.n = len(events) + d["k"]
        x.mul_(rec.n)
        events.append(x.shape[0])
        return x
    cf = ptc.compile(f)
    for _ in range(2):
        events.clear()
        d = {}
        x = torch.ones(2)
        out = cf(x, d)
        assert events == ["a", "b", 2] and d == {"k": 1} and rec.n == 3
        torch.testing.assert_close(x, torch.full((2,), 3.0))
        assert out is x


def test_effects_before_a_break(capsys):
    state = {"n": 0}

    def f(x, lst):
        state["n"] += 1
        lst.append(x * 2)
        print("n is", state["n"], len(lst))
        lst.append(x * 3)
        return x + state["n"]
    cf = ptc.compile(f)
    lst = []
    x = r(3)
    capsys.readouterr()
    for i in range(1, 3):
        out = cf(x, lst)
        assert capsys.readouterr().out == "n is %d %d\n" % (i, 2 * i - 1)
        torch.testing.assert_close(out, x + i)
    assert len(lst) == 4
    torch.testing.assert_close(lst[3], x * 3)


def test_inplace_before_a_break(capsys):
    def f(x):
        x.add_(1)
        print(x)
        x.mul_(2)
        return x
    check(f, torch.arange(3.0))


# ---- created objects ------------------------------------------------------------------------------------

Point = collections.namedtuple("Point", "x y")


class Holder:
    def __init__(self, t, tag):
        self.t = t
        self.tag = tag


def test_created_objects_returned():
    def f(x):
        p = Point(x + 1, x * 2)
        h = Holder(x - 1, "h")
        lst = [p, h, {"p": p}]
        return lst
    ref = f(torch.ones(2))
    out = ptc.compile(f)(torch.ones(2))
    assert isinstance(out[0], Point) and isinstance(out[1], Holder)
    assert out[2]["p"] is out[0], "aliasing of created objects preserved"
    assert_same(out, ref)


def test_created_list_aliasing():
    def f(x):
        a = [x]
        b = [a, a]
        return b
    out = ptc.compile(f)(r(2))
    assert out[0] is out[1]


def test_created_object_escapes_to_input():
    def f(store, x):
        h = Holder(x * 2, "stored")
        store.append(h)
        return h
    store = []
    out = ptc.compile(f)(store, torch.ones(2))
    assert store[0] is out and out.tag == "stored"
    torch.testing.assert_close(out.t, torch.full((2,), 2.0))


# ---- effects around graph breaks and cache machinery -----------------------------------------------

def test_list_mutation_across_a_break(capsys):
    def f(x, lst):
        lst.append(x * 2)
        print("len", len(lst))
        lst.append(lst[-1] + 1)
        made = [x]
        print("made", len(made))
        made.append(x + 1)
        return lst[-1] * 2, made
    check(f, r(3), [r(3)])


def test_global_written_before_and_read_after_a_break(capsys):
    global COUNTER
    COUNTER = 0

    def f(x):
        global COUNTER
        COUNTER = COUNTER + 10
        print("c", COUNTER)
        return x * COUNTER
    cf = ptc.compile(f)
    x = torch.ones(2)
    for i in range(1, 3):
        out = cf(x)
        assert COUNTER == 10 * i
        torch.testing.assert_close(out, x * (10 * i))
    assert capsys.readouterr().out == "c 10\nc 20\n"


def test_reset_called_from_compiled_code():
    def g(x):
        ptc.reset()
        return x + 1

    def f(x):
        y = x * 2
        z = g(y)
        return z * 3
    cf = ptc.compile(f)
    for _ in range(3):
        x = r(3)
        torch.testing.assert_close(cf(x), f(x))


def test_compiled_function_recursing_through_its_wrapper():
    def f(x, n):
        if n == 0:
            return x
        return cf(x * 2, n - 1) + 1
    cf = ptc.compile(f)
    x = r(2)
    torch.testing.assert_close(cf(x, 3), f(x, 3))


class Flaky:
    def __init__(self):
        self.calls = 0

    @property
    def k(self):
        self.calls += 1
        if self.calls > 1:
            raise RuntimeError("k is gone")
        return 2.0


def test_property_raising_on_a_later_call():
    def f(x, o):
        return x * o.k
    o1, o2 = Flaky(), Flaky()
    cf = ptc.compile(f)
    x = r(2)
    torch.testing.assert_close(cf(x, o1), f(x, o2))
    with pytest.raises(RuntimeError) as eager:
        f(x, o2)
    with pytest.raises(RuntimeError) as comp:
        cf(x, o1)
    assert str(comp.value) == str(eager.value)
    assert o1.calls == o2.calls


# ---- augmented assignment mutates in place -----------------------------------------------------------

def test_augmented_assignment_on_inputs():
    def f(x, lst, d, s):
        x += 1  # Tensor.__iadd__: the caller's tensor changes
        x *= 2
        lst += [x.sum()]
        lst[0:1] = ["a", "b"]
        d |= {"k": 3}
        s |= {5}
        return x
    x = torch.zeros(3)
    lst, d, s = [0], {}, {1}
    out = ptc.compile(f)(x, lst, d, s)
    assert out is x
    torch.testing.assert_close(x, torch.full((3,), 2.0))
    assert lst[:2] == ["a", "b"] and len(lst) == 3
    torch.testing.assert_close(lst[2], torch.tensor(6.0))
    assert d == {"k": 3} and s == {1, 5}


def test_augmented_assignment_on_attribute_and_item():
    class O:
        pass
    o = O()
    o.t = torch.zeros(2)
    o.n = 1
    holder = [torch.zeros(2)]

    def f(x):
        o.t += x
        o.n += 1
        holder[0] -= x
        return o.t * o.n
    cf = ptc.compile(f)
    for i in range(1, 3):
        out = cf(torch.ones(2))
        torch.testing.assert_close(o.t, torch.full((2,), float(i)))
        assert o.n == 1 + i
        torch.testing.assert_close(holder[0], torch.full((2,), -float(i)))
        torch.testing.assert_close(out, torch.full((2,), float(i * (1 + i))))


# ---- references: compiled calls keep nothing alive --------------------------------------------------------

def test_no_reference_leak_per_call(capsys):
    import gc
    import sys
    import weakref

    def f(x, lst, d):
        y = x * 2
        lst.append(y)
        print("", end="")
        d["k"] = y + 1
        return y.sum(), lst.pop()
    cf = ptc.compile(f)
    x, lst, d = r(4), [], {}
    for _ in range(5):
        cf(x, lst, d)
    gc.collect()
    rx, rl, rd = sys.getrefcount(x), sys.getrefcount(lst), sys.getrefcount(d)
    n_before = len(gc.get_objects())
    for _ in range(300):
        cf(x, lst, d)
    gc.collect()
    assert (sys.getrefcount(x), sys.getrefcount(lst), sys.getrefcount(d)) == (rx, rl, rd)
    assert len(gc.get_objects()) - n_before < 50, "objects grow with the number of calls"
    out = cf(x, lst, d)
    ref = weakref.ref(out[1])
    del out
    d.clear()
    gc.collect()
    assert ref() is None, "a returned tensor is kept alive by the capture"
