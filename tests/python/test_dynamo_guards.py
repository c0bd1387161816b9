"""test_dynamo_guards.py - the capture's sources and guard sets (dyn_guard.c),
the hook's skip rules and the enable/disable/reset surface (dyn_hook.c,
ptc/dynamo.py), tested directly through ptc._C's test entry points, without
the evaluator."""
import json
import sys
import threading
import timeit

import pytest
import torch

import ptc
from ptc import _C

pytestmark = pytest.mark.skipif(not getattr(_C, "DYN_SUPPORTED", 0),
                                reason="ptc._C built without the bytecode capture")


def L(i, name):
    return _C._dyn_source("local", i, name=name)


def G(name):
    return _C._dyn_source("global", name)


def check(gs, locals_, globals_=None, closure=None):
    """-1 when every guard holds, else the index of the failing one."""
    return gs.check(list(locals_), globals_ if globals_ is not None else {}, closure)


# ---- sources ----------------------------------------------------------------------------------

class Obj:
    pass


def test_source_repr_and_eval():
    o = Obj()
    o.w = [10, {"k": 7}]
    s = _C._dyn_source("item", "k", base=_C._dyn_source("item", 1, base=_C._dyn_source(
        "attr", "w", base=L(0, "o"))))
    assert repr(s) == "<DynSource L['o'].w[1]['k']>"
    assert s.eval([o], {}) == 7
    assert G("n").eval([], {"n": 3}) == 3
    assert G("len").eval([], {}) is len  # falls back to builtins
    assert _C._dyn_source("type", base=L(0, "o")).eval([o], {}) is Obj
    assert _C._dyn_source("const", o).eval([], {}) is o
    assert _C._dyn_source("grad_mode").eval([], {}) is torch.is_grad_enabled()
    with torch.no_grad():
        assert _C._dyn_source("grad_mode").eval([], {}) is False


def test_source_eval_closure_and_errors():
    def mk():
        a = 5

        def inner():
            return a
        return inner
    c = _C._dyn_source("closure", 0)
    assert c.eval([], {}, None, mk().__closure__) == 5
    with pytest.raises(NameError):
        G("nope").eval([], {})
    with pytest.raises(AttributeError):
        _C._dyn_source("attr", "missing", base=L(0, "o")).eval([Obj()], {})
    with pytest.raises(IndexError):
        _C._dyn_source("item", 5, base=L(0, "xs")).eval([[1]], {})


def test_source_equality():
    a = _C._dyn_source("attr", "w", base=L(0, "m"))
    b = _C._dyn_source("attr", "w", base=L(0, "m"))
    c = _C._dyn_source("attr", "b", base=L(0, "m"))
    assert a == b and a != c
    assert _C._dyn_source("item", 1, base=L(0, "x")) != _C._dyn_source("item", 2, base=L(0, "x"))


# ---- guards -----------------------------------------------------------------------------------

def test_tensor_guard_static():
    x = torch.randn(4, 8)
    gs = _C.DynGuardSet()
    gs.add_tensor(L(0, "x"), x)
    assert check(gs, [x]) == -1
    assert check(gs, [torch.randn(4, 8)]) == -1
    assert check(gs, [torch.randn(4, 9)]) == 0  # size
    assert check(gs, [torch.randn(4, 8, dtype=torch.float64)]) == 0  # dtype
    assert check(gs, [torch.randn(4, 8, requires_grad=True)]) == 0  # requires_grad
    assert check(gs, [torch.randn(8, 4).t()]) == 0  # strides
    assert check(gs, [torch.randn(4)]) == 0  # rank
    assert check(gs, [torch.nn.Parameter(torch.randn(4, 8))]) == 0  # exact type
    assert check(gs, [3]) == 0
    assert check(gs, []) == 0  # unbound local: a failure, not an error
    d = gs.describe()
    assert len(d) == 1 and d[0].startswith("TENSOR L['x']") and "[4, 8]" in d[0], d


def test_tensor_guard_dynamic_dims():
    x = torch.randn(4, 8)
    gs = _C.DynGuardSet()
    gs.add_tensor(L(0, "x"), x, {0})
    assert check(gs, [torch.randn(9, 8)]) == -1
    assert check(gs, [torch.randn(2, 8)]) == -1
    assert check(gs, [torch.randn(1, 8)]) == 0  # dynamic dims are >= 2
    assert check(gs, [torch.randn(9, 7)]) == 0
    assert check(gs, [torch.randn(8, 9).t()[:, :8]]) == 0  # not contiguous
    gs2 = _C.DynGuardSet()
    gs2.add_tensor(L(0, "x"), torch.randn(3, 1), {0, 1})  # size-1 dims stay static
    assert check(gs2, [torch.randn(5, 1)]) == -1
    assert check(gs2, [torch.randn(5, 2)]) == 0


def test_tensor_guard_subclass_slow_path():
    p = torch.nn.Parameter(torch.randn(3))
    gs = _C.DynGuardSet()
    gs.add_tensor(L(0, "p"), p)
    assert check(gs, [torch.nn.Parameter(torch.randn(3))]) == -1
    assert check(gs, [torch.randn(3)]) == 0


def test_simple_guards_and_order():
    o = Obj()
    o.training = True
    gs = _C.DynGuardSet()
    gs.add(_C.DG_TYPE, L(0, "o"), Obj)
    gs.add(_C.DG_ID, G("torch"), torch)
    gs.add(_C.DG_EQ, L(1, "n"), 3)
    gs.add(_C.DG_LEN, L(2, "xs"), list, 2)
    gs.add(_C.DG_DICT_KEYS, L(3, "d"), ("a", "b"))
    gs.add(_C.DG_TRUTH, _C._dyn_source("attr", "training", base=L(0, "o")), None, 1)
    gs.add(_C.DG_NOT_HASATTR, _C._dyn_source("attr", "extra", base=L(0, "o")))
    gs.add(_C.DG_EQ, L(1, "n"), 3)  # duplicate: ignored
    assert gs.size() == 7
    g = {"torch": torch}
    ok = [o, 3, [1, 2], {"a": 1, "b": 2}]
    assert check(gs, ok, g) == -1
    assert check(gs, [Obj()] + ok[1:], g) == 5  # training attribute missing -> TRUTH fails
    assert check(gs, [1] + ok[1:], g) == 0
    assert check(gs, ok, {"torch": json}) == 1
    assert check(gs, [o, 3.0] + ok[2:], g) == 2  # 3.0 == 3 but another type
    assert check(gs, [o, 4] + ok[2:], g) == 2
    assert check(gs, [o, 3, (1, 2)] + ok[3:], g) == 3
    assert check(gs, [o, 3, [1]] + ok[3:], g) == 3
    assert check(gs, ok[:3] + [{"b": 2, "a": 1}], g) == 4  # key order matters
    o.training = False
    assert check(gs, ok, g) == 5
    o.training = True
    o.extra = 1
    assert check(gs, ok, g) == 6
    del o.extra
    assert check(gs, ok, g) == -1
    kinds = [line.split()[0] for line in gs.describe()]
    assert kinds == ["TYPE", "ID", "EQ", "LEN", "DICT_KEYS", "TRUTH", "NOT_HASATTR"]


def test_grad_mode_guard():
    gs = _C.DynGuardSet()
    gs.add(_C.DG_TRUTH, _C._dyn_source("grad_mode"), None, 1)
    assert check(gs, []) == -1
    with torch.no_grad():
        assert check(gs, []) == 0


def test_shape_guard():
    calls = []

    def fn(a, b):
        calls.append((a.shape[0], b.shape[0]))
        return a.shape[0] == b.shape[0]
    gs = _C.DynGuardSet()
    gs.add(_C.DG_SHAPE, None, (fn, (L(0, "a"), L(1, "b"))))
    assert check(gs, [torch.ones(3), torch.ones(3)]) == -1
    assert check(gs, [torch.ones(3), torch.ones(4)]) == 0
    assert calls == [(3, 3), (3, 4)]
    assert gs.describe()[0].startswith("SHAPE ")

    def boom(a):
        raise RuntimeError("x")
    gs2 = _C.DynGuardSet()
    gs2.add(_C.DG_SHAPE, None, (boom, (L(0, "a"),)))
    assert check(gs2, [torch.ones(1)]) == 0  # an error is a failure


def test_bad_guard_arguments():
    gs = _C.DynGuardSet()
    with pytest.raises(TypeError):
        gs.add(_C.DG_TYPE, L(0, "x"), 3)
    with pytest.raises(ValueError):
        gs.add(_C.DG_TENSOR, L(0, "x"), None)
    with pytest.raises(TypeError):
        gs.add(_C.DG_SHAPE, None, (1, 2))


def test_memoised_bases_on_modules():
    m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    gs = _C.DynGuardSet()
    base = _C._dyn_source("attr", "0", base=L(0, "m"))
    for name in ("weight", "bias"):
        p = getattr(m[0], name)
        gs.add(_C.DG_ID, _C._dyn_source("attr", name, base=base), p)
    assert check(gs, [m]) == -1
    m[0].weight = torch.nn.Parameter(torch.randn(2, 2))
    assert check(gs, [m]) == 0


def test_guard_check_cost():
    """Per-call cost of a 2-tensor guard set (printed; a loose bound only)."""
    x, y = torch.randn(4, 8), torch.randn(8)
    gs = _C.DynGuardSet()
    gs.add_tensor(L(0, "x"), x)
    gs.add_tensor(L(1, "y"), y)
    args, g = [x, y], {}
    n = 20000
    t = min(timeit.repeat(lambda: gs.check(args, g), number=n, repeat=3)) / n * 1e6
    print("2-tensor guard check: %.2f us per call (through a Python method call)" % t)
    assert t < 50


# ---- hook surface -----------------------------------------------------------------------------

def test_skip_rules():
    def user(x):
        return x
    assert not _C._dyn_skipped(user.__code__)
    assert _C._dyn_skipped(json.dumps.__code__)  # stdlib
    assert _C._dyn_skipped(torch.nn.Linear.forward.__code__)  # torch
    import ptc.dynamo
    assert _C._dyn_skipped(ptc.dynamo.compile.__code__)  # ptc itself
    assert not _C._dyn_skipped(compile("def f(): pass", "<string>", "exec"))


def test_skip_rules_capture_installed_packages():
    tv = pytest.importorskip("torchvision")
    ptc.compile(lambda x: x, backend="eager")(1)  # the rules exist after a first enable
    assert not _C._dyn_skipped(tv.models.resnet.BasicBlock.forward.__code__)


def test_enable_returns_previous_and_is_per_thread():
    class C:
        backend, mode, dynamic, fullgraph, cache_size_limit, graphs_log = "eager", None, None, False, 8, []
    c1, c2 = C(), C()
    assert _C.dyn_enable(c1) is None
    try:
        seen = []
        t = threading.Thread(target=lambda: seen.append(_C.dyn_enable(None)))
        t.start()
        t.join()
        assert seen == [None]  # the other thread had no config
        assert _C.dyn_stats()["threads_enabled"] == 1
        assert _C.dyn_enable(c2) is c1
    finally:
        assert _C.dyn_enable(None) is c2
    assert _C.dyn_stats()["threads_enabled"] == 0


def test_compile_surface_without_capture_changes_nothing():
    def f(x, n=2):
        return x * n + 1
    cf = ptc.compile(f, backend="eager")
    x = torch.randn(3)
    torch.testing.assert_close(cf(x), f(x))
    assert cf.__name__ == "f" and cf.__wrapped__ is f
    dec = ptc.compile(backend="eager")(f)
    torch.testing.assert_close(dec(x, n=3), f(x, n=3))
    m = torch.nn.Linear(3, 2)
    cm = ptc.compile(m, backend="eager")
    assert isinstance(cm, torch.nn.Module) and cm._orig_mod is m
    assert cm.in_features == 3 and cm.weight is m.weight
    torch.testing.assert_close(cm(x), m(x))
    with pytest.raises(ValueError):
        ptc.compile(f, backend="tpu")
    with pytest.raises(TypeError):
        ptc.compile(42)


def test_disable_and_reset():
    calls = []

    @ptc.disable
    def g(x):
        calls.append(_C.dyn_enable(None))  # capture is off inside
        return x + 1
    assert ptc.compile(lambda x: g(x) * 2, backend="eager")(torch.ones(2)).tolist() == [4.0, 4.0]
    assert calls == [None]
    ptc.reset()
    s = ptc.compile_stats()
    assert s["graphs"] == 0 and s["cache_hits"] == 0


def test_explain_dispatch():
    import torch.fx
    from ptc.dynamo import CaptureExplanation
    from ptc.explain import Explanation

    def f(x):
        return torch.relu(x) + 1
    assert isinstance(ptc.explain(f, torch.randn(3)), CaptureExplanation)
    gm = torch.fx.symbolic_trace(f)
    assert isinstance(ptc.explain(gm, torch.randn(3), verbose=False), Explanation)


@pytest.mark.skipif(sys.version_info[:2] in ((3, 11), (3, 12)), reason="supported Python")
def test_refuses_other_pythons():
    with pytest.raises(RuntimeError, match="3.11 and 3.12"):
        ptc.compile(lambda x: x)


# ---- the hook with the real converter -----------------------------------------------------------

def _stats():
    return dict(ptc.compile_stats())


def test_hook_caches_and_hits():
    def f(x):
        return torch.relu(x) * 2 + 1
    ptc.reset()
    cf = ptc.compile(f, backend="eager")
    x = torch.randn(5)
    for _ in range(3):
        torch.testing.assert_close(cf(x), f(x))
    s = _stats()
    assert s["frames_converted"] == 1 and s["cache_hits"] == 2, s
    (entry,) = _C.dyn_entries(f.__code__)
    assert entry["hits"] == 3 and not entry["is_break"]
    assert any(g.startswith("TENSOR L['x']") for g in entry["guards"]), entry["guards"]
    ptc.reset()
    assert _C.dyn_entries(f.__code__) == []


def test_hook_threads_each_with_own_config():
    def f(x):
        return x * 3 - 1
    cf = ptc.compile(f, backend="eager")
    errors = []

    def work():
        try:
            for _ in range(50):
                x = torch.randn(4)
                torch.testing.assert_close(cf(x), f(x))
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert _stats()["threads_enabled"] == 0


def test_hook_recursion_and_generators():
    def fact(x, n):
        return x if n <= 1 else fact(x * n, n - 1)

    def gen(x):
        for i in range(3):
            yield x + i

    def f(x):
        return fact(x, 4) + sum(gen(x))
    x = torch.randn(3)
    torch.testing.assert_close(ptc.compile(f, backend="eager")(x), f(x))


def test_hook_user_exception_propagates_unchanged():
    class Boom(Exception):
        pass

    def f(x):
        y = x + 1
        if x.shape[0] == 2:
            raise Boom("two")
        return y
    cf = ptc.compile(f, backend="eager")
    with pytest.raises(Boom, match="two"):
        cf(torch.randn(2))
    torch.testing.assert_close(cf(torch.ones(3)), torch.ones(3) + 1)


def test_hook_cap_and_disable():
    calls = []

    @ptc.disable
    def untouched(x):
        calls.append(x.shape[0])
        return x

    def f(x, k):
        return untouched(x) * len(k)
    cf = ptc.compile(f, backend="eager", cache_size_limit=2)
    import warnings
    x = torch.randn(3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in range(5):
            torch.testing.assert_close(cf(x, "k" * (n + 1)), x * (n + 1))
    assert len(calls) == 5
    cap = [str(m.message) for m in w if "recompile limit" in str(m.message)]
    assert len(cap) <= 1, cap
    assert len(_C.dyn_entries(f.__code__)) <= 2
