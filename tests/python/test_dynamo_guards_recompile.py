"""test_dynamo_guards_recompile.py - guards and recompilation of ptc.compile:
every guard kind must fail (and recompile, giving the plain-Python answer)
when what it protects changes: tensor dtype, device (cuda cases skipped
without a GPU), requires_grad, rank and sizes, a global value, a global
tensor or function rebound, a closure value, a module attribute, a submodule
swapped, a parameter replaced, train/eval, grad mode, constant arguments,
container lengths and dict keys, an object's type. Parameters updated in place
must be seen without recompiling (they are read at run time, not baked in).
Automatic dynamic shapes: sizes 2,3,4,5,... compile exactly twice;
dynamic=True once; dynamic=False once per size. The recompile cap: past it a
one-time warning, then plain Python with correct results.
"""

import warnings

import pytest
import torch
import torch.nn as nn

import ptc
import ptc.dynamo
from dynamo_util import HAS_CUDA, Delta, assert_same, fresh_dynamo  # noqa: F401

torch.manual_seed(0)


def r(*shape, **kw):
    return torch.randn(*shape, **kw)


def n_entries(fn):
    """Cache entries of fn's code object (ptc._C.dyn_entries)."""
    return len(ptc._C.dyn_entries(fn.__code__))


def run_all(cf, fn, inputs, **tol):
    """Calls compiled and eager on each argument tuple; compares."""
    for i, args in enumerate(inputs):
        assert_same(cf(*args), fn(*args), path="input %d" % i, **tol)


# ---- tensor guards ------------------------------------------------------------------------------

def f_basic(x):
    return torch.sigmoid(x * 2 + 1)


def test_guard_dtype():
    cf = ptc.compile(f_basic)
    x = r(4)
    with Delta() as d:
        run_all(cf, f_basic, [(x,), (x.double(),), (x.double(),), (x,)])
    assert d.graphs == 2, d
    assert d.recompiles == 1, d


def test_guard_int_dtype():
    def f(x):
        return x * 3 + 1
    cf = ptc.compile(f)
    run_all(cf, f, [(torch.arange(4),), (torch.arange(4.0),), (torch.arange(4, dtype=torch.int32),)])


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("backend", ["eager", "auto"])
def test_guard_device(backend):
    cf = ptc.compile(f_basic, backend=backend)
    x = r(4)
    with Delta() as d:
        for t in [x, x.cuda(), x, x.cuda()]:
            out = cf(t)
            assert out.device == t.device
            assert_same(out, f_basic(t), rtol=1e-5, atol=1e-5)
    assert d.graphs == 2, d


def test_guard_requires_grad():
    cf = ptc.compile(f_basic)
    x = r(4)
    xg = x.clone().requires_grad_(True)
    out0 = cf(x)
    assert not out0.requires_grad
    out1 = cf(xg)
    assert_same(out1, f_basic(xg))
    assert out1.requires_grad
    out1.sum().backward()
    xe = x.clone().requires_grad_(True)
    f_basic(xe).sum().backward()
    torch.testing.assert_close(xg.grad, xe.grad)
    assert not cf(x).requires_grad


def test_guard_rank():
    cf = ptc.compile(f_basic)
    run_all(cf, f_basic, [(r(4),), (r(2, 2),), (r(2, 2, 2),), (r(4),)])


def test_guard_strides():
    def f(x):
        return x.view(-1) * 2 if x.is_contiguous() else x.reshape(-1) + 1
    cf = ptc.compile(f)
    a = r(3, 4)
    run_all(cf, f, [(a,), (a.t(),), (a,), (r(4, 6)[:, :3],)])


def test_guard_tensor_subclass_and_param():
    cf = ptc.compile(f_basic)
    p = nn.Parameter(r(4), requires_grad=False)
    run_all(cf, f_basic, [(r(4),), (p,)])


# ---- globals, closures, constants -----------------------------------------------------------------

SCALE = 2.0
GTENSOR = torch.ones(3)
MODE = "add"


def gfun(x):
    return x + 1


def f_global(x):
    y = x * SCALE + GTENSOR
    if MODE == "add":
        y = y + 1
    return gfun(y)


def test_guard_changed_global():
    global SCALE, GTENSOR, MODE, gfun
    saved = (SCALE, GTENSOR, MODE, gfun)
    try:
        cf = ptc.compile(f_global)
        x = r(3)
        assert_same(cf(x), f_global(x))
        SCALE = 3.0
        assert_same(cf(x), f_global(x), path="SCALE changed")
        GTENSOR = torch.full((3,), 5.0)
        assert_same(cf(x), f_global(x), path="GTENSOR rebound")
        GTENSOR.mul_(2)
        assert_same(cf(x), f_global(x), path="GTENSOR changed in place")
        MODE = "keep"
        assert_same(cf(x), f_global(x), path="MODE changed")

        def other(t):
            return t * 10
        gfun = other
        assert_same(cf(x), f_global(x), path="gfun rebound")
    finally:
        SCALE, GTENSOR, MODE, gfun = saved


def test_guard_global_deleted_then_restored():
    global SCALE
    saved = SCALE
    cf = ptc.compile(f_global)
    x = r(3)
    cf(x)
    try:
        del SCALE
        with pytest.raises(NameError):
            f_global(x)
        with pytest.raises(NameError):
            cf(x)
    finally:
        SCALE = saved
    assert_same(cf(x), f_global(x))


def test_guard_closure_value():
    k = 2.0
    mult = [1.0]

    def f(x):
        return x * k + mult[0]
    cf = ptc.compile(f)
    x = r(3)
    assert_same(cf(x), f(x))
    k = 5.0  # noqa: F841 - read through the closure cell
    assert_same(cf(x), f(x), path="closure cell rebound")
    mult[0] = 7.0
    assert_same(cf(x), f(x), path="closed-over list changed")


def test_guard_constant_args():
    def f(x, n, flag, name):
        y = x * n
        if flag:
            y = y + 1
        return y, name + "!"
    cf = ptc.compile(f)
    run_all(cf, f, [(r(3), 2, True, "a"), (r(3), 3, True, "a"), (r(3), 2, False, "a"),
                    (r(3), 2, True, "b"), (r(3), 2.0, True, "a"), (r(3), 2, 1, "a")])


def test_guard_container_len_and_keys():
    def f(xs, d):
        s = xs[0]
        for t in xs[1:]:
            s = s + t
        for k in d:
            s = s * d[k]
        return s
    cf = ptc.compile(f)
    run_all(cf, f, [([r(2), r(2)], {"a": 2.0}), ([r(2), r(2), r(2)], {"a": 2.0}),
                    ([r(2)], {"a": 2.0, "b": 3.0}), ([r(2)], {"b": 3.0}), ([r(2)], {"a": 4.0})])


def test_guard_list_item_type():
    def f(xs):
        return [t * 2 for t in xs]
    cf = ptc.compile(f)
    run_all(cf, f, [([r(2), 3],), ([r(2), r(2)],), ([2, 3],)])


def test_guard_object_type():
    class A:
        def val(self):
            return 1.0

    class B:
        def val(self):
            return 2.0

    def f(x, o):
        return x * o.val()
    cf = ptc.compile(f)
    run_all(cf, f, [(r(3), A()), (r(3), B()), (r(3), A())])


def test_guard_object_attribute():
    class Cfg:
        pass
    c = Cfg()
    c.scale = 2.0
    c.use_bias = True

    def f(x):
        y = x * c.scale
        if c.use_bias:
            y = y + 1
        return y
    cf = ptc.compile(f)
    x = r(3)
    assert_same(cf(x), f(x))
    c.scale = 4.0
    assert_same(cf(x), f(x), path="attribute changed")
    c.use_bias = False
    assert_same(cf(x), f(x), path="flag changed")
    del c.scale
    c.scale = 0.5
    assert_same(cf(x), f(x), path="attribute re-set")


def test_guard_grad_mode():
    def f(x, w):
        return x @ w
    cf = ptc.compile(f)
    x, w = r(2, 3), r(3, 3, requires_grad=True)
    out1 = cf(x, w)
    with torch.no_grad():
        out2 = cf(x, w)
    out3 = cf(x, w)
    assert out1.requires_grad and not out2.requires_grad and out3.requires_grad
    assert_same(out2, (x @ w).detach(), rtol=1e-5, atol=1e-5)


def test_guard_grad_mode_branch():
    def f(x):
        if torch.is_grad_enabled():
            return x + 1
        return x - 1
    cf = ptc.compile(f)
    x = r(3)
    assert_same(cf(x), x + 1)
    with torch.no_grad():
        assert_same(cf(x), x - 1)
    assert_same(cf(x), x + 1)


# ---- modules ------------------------------------------------------------------------------------

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.act = nn.ReLU()
        self.scale = 2.0
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        h = self.act(self.lin(x)) * self.scale
        if self.training:
            h = h + 100.0
        return h


def test_guard_module_attribute():
    m = Net().eval()
    cm = ptc.compile(m)
    x = r(2, 4)
    with torch.no_grad():
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
        m.scale = 3.0
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path="scale changed on the module")
        m.scale = 2
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path="scale became an int")


def test_guard_submodule_swapped():
    m = Net().eval()
    cm = ptc.compile(m)
    x = r(2, 4)
    with torch.no_grad():
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
        m.act = nn.Tanh()
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path="act swapped")
        m.lin = nn.Linear(4, 4)
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path="lin swapped")


def test_guard_parameter_replaced():
    m = Net().eval()
    cm = ptc.compile(m)
    x = r(2, 4)
    with torch.no_grad():
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
        m.lin.weight = nn.Parameter(torch.randn(4, 4))
        assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path="weight replaced")


def test_parameter_updated_in_place_no_recompile():
    m = Net().eval()
    cm = ptc.compile(m)
    x = r(2, 4)
    with torch.no_grad():
        cm(x)
        with Delta() as d:
            for step in range(3):
                m.lin.weight.add_(0.5)
                m.lin.bias.mul_(-1)
                assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path="step %d" % step)
    assert d.graphs == 0, "an in-place parameter update must not recompile: %r" % d


def test_guard_train_eval():
    m = Net()
    m.drop.p = 0.0  # deterministic in train mode
    cm = ptc.compile(m)
    x = r(2, 4)
    with torch.no_grad():
        for mode in ["eval", "train", "eval", "train"]:
            getattr(m, mode)()
            assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5, path=mode)
    cm.eval()
    assert not m.training


def test_guard_batchnorm_train_eval():
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    ref = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    ref.load_state_dict(m.state_dict())
    cm = ptc.compile(m)
    x = r(2, 3, 6, 6)
    with torch.no_grad():
        for mode in ["train", "eval", "train"]:
            getattr(m, mode)()
            getattr(ref, mode)()
            assert_same(cm(x), ref(x), rtol=1e-4, atol=1e-4, path=mode)
            # training-mode BatchNorm updates its running statistics: same as eager
            assert_same(m[1].running_mean, ref[1].running_mean, rtol=1e-4, atol=1e-5, path=mode + " mean")
            assert_same(m[1].running_var, ref[1].running_var, rtol=1e-4, atol=1e-5, path=mode + " var")
            assert int(m[1].num_batches_tracked) == int(ref[1].num_batches_tracked)


def test_guard_different_module_instances():
    def f(m, x):
        return m(x) * 2
    a, b = nn.Linear(3, 3), nn.Linear(3, 3)
    cf = ptc.compile(f)
    x = r(2, 3)
    with torch.no_grad():
        run_all(cf, f, [(a, x), (b, x), (a, x)], rtol=1e-4, atol=1e-5)


# ---- dynamic shapes -----------------------------------------------------------------------------

def f_dyn(x):
    y = torch.relu(x) * 2 + x.shape[0]
    return y.sum(0), y.reshape(-1)


def test_automatic_dynamic_two_compiles():
    cf = ptc.compile(f_dyn)
    with Delta() as d:
        for n in [2, 3, 4, 5, 6, 7, 9, 17]:
            x = r(n, 3)
            assert_same(cf(x), f_dyn(x), path="n=%d" % n)
    assert d.graphs == 2, "sizes 2,3,4,...: exactly 2 compiles (static, then dynamic): %r" % d
    assert n_entries(f_dyn) == 2


def test_automatic_dynamic_two_dims():
    def f(x, y):
        return (x @ y).softmax(-1)
    cf = ptc.compile(f)
    with Delta() as d:
        for m, k, n in [(2, 3, 4), (3, 3, 4), (4, 5, 6), (5, 2, 7), (6, 8, 3)]:
            x, y = r(m, k), r(k, n)
            assert_same(cf(x, y), f(x, y), rtol=1e-4, atol=1e-5, path=str((m, k, n)))
    assert d.graphs <= 3, d


def test_automatic_dynamic_then_size_one():
    cf = ptc.compile(f_dyn)
    for n in [2, 3, 1, 4, 1, 5]:
        x = r(n, 3)
        assert_same(cf(x), f_dyn(x), path="n=%d" % n)


def test_automatic_dynamic_list_length():
    def f(xs):
        out = xs[0]
        for t in xs[1:]:
            out = out + t
        return out
    cf = ptc.compile(f)
    for n in [1, 2, 3, 4]:
        xs = [r(3) for _ in range(n)]
        assert_same(cf(xs), f(xs), path="len %d" % n)


def test_dynamic_true_one_compile():
    cf = ptc.compile(f_dyn, dynamic=True)
    with Delta() as d:
        for n in [2, 3, 4, 5]:
            x = r(n, 3)
            assert_same(cf(x), f_dyn(x), path="n=%d" % n)
    assert d.graphs == 1, d


def test_dynamic_false_one_compile_per_size():
    cf = ptc.compile(f_dyn, dynamic=False)
    with Delta() as d:
        for n in [2, 3, 4, 2, 3]:
            x = r(n, 3)
            assert_same(cf(x), f_dyn(x), path="n=%d" % n)
    assert d.graphs == 3, d


def test_dynamic_shape_guard_branch():
    def f(x):
        if x.shape[0] * 2 > 7:
            return x[:4] * 2
        return x.sum(0, keepdim=True)
    cf = ptc.compile(f)
    for n in [2, 3, 5, 6, 2, 4, 8, 3]:
        x = r(n, 2)
        assert_same(cf(x), f(x), path="n=%d" % n)


def test_dynamic_shape_arithmetic_returned():
    def f(x):
        n = x.shape[0]
        return x.view(n // 2, 2, -1).sum(1), n * 3, n // 2, (n + 1) % 3
    cf = ptc.compile(f)
    for n in [2, 4, 6, 8, 10]:
        x = r(n, 3)
        assert_same(cf(x), f(x), path="n=%d" % n)


def test_dynamic_shape_to_creation_op():
    def f(x):
        return x + torch.arange(x.shape[-1]), torch.zeros(x.shape[0], 2)
    cf = ptc.compile(f)
    for n in [2, 3, 4, 5]:
        x = r(3, n)
        assert_same(cf(x), f(x), path="n=%d" % n)


# ---- recompile cap -------------------------------------------------------------------------------

def test_recompile_cap_warns_once_then_correct():
    # a string argument is always specialised (no automatic dynamic for it):
    # each new value is a new cache entry until the cap (8 by default)
    def f(x, tag):
        return x * len(tag) + 1

    cf = ptc.compile(f)
    x = r(3)
    tags = ["t" * (n + 1) for n in range(20)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for t in tags:
            assert_same(cf(x, t), f(x, t), path=t)
        for t in tags:  # again, past the cap: still correct, no new warning
            assert_same(cf(x, t), f(x, t), path="again " + t)
    msgs = [str(w.message) for w in caught]
    cap = [m for m in msgs if "recompile limit" in m]
    assert len(cap) == 1, "expected exactly one recompile-cap warning, got %r" % msgs
    assert n_entries(f) <= 8 + 1


def test_recompile_cap_per_code_object():
    def f(x, tag):
        return x * len(tag)

    def g(x, tag):
        return x + len(tag)
    cf, cg = ptc.compile(f), ptc.compile(g)
    x = r(3)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for n in range(12):
            assert_same(cf(x, "t" * n), f(x, "t" * n))
    with Delta() as d:
        for n in range(3):
            assert_same(cg(x, "t" * n), g(x, "t" * n))
    assert d.graphs == 3, "g has its own cap: %r" % d


def test_recompile_cap_counts_per_self_object():
    # one forward code shared by 12 module instances, each captured on its
    # own (the print inside forward breaks the caller's graph): entries
    # specialised on another `self` do not count against the cap (as in
    # TorchDynamo), so no layer falls back to plain Python
    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            y = self.lin(x).relu()
            print("layer", y.shape[0])
            return y * 2

    layers = torch.nn.ModuleList(Layer() for _ in range(12)).eval()

    def f(x):
        for layer in layers:
            x = layer(x)
        return x
    cf = ptc.compile(f)
    x = r(2, 4)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            assert_same(cf(x), f(x), rtol=1e-4, atol=1e-5)
    msgs = [str(w.message) for w in caught if "recompile limit" in str(w.message)]
    assert not msgs, msgs
    assert n_entries(Layer.forward) >= 12


# ---- the compile options are part of the cache key ---------------------------------------------------

def test_backend_is_part_of_the_cache_key():
    # two wrappers of one function with different backends: each call runs an
    # entry compiled for its own backend
    def f(x):
        return torch.relu(x) * 2
    a, b = ptc.compile(f, backend="eager"), ptc.compile(f, backend="cpu")
    x = r(4)
    assert_same(a(x), f(x))
    assert_same(b(x), f(x))
    backends = sorted(e.get("backend") for e in ptc._C.dyn_entries(f.__code__))
    assert backends == ["cpu", "eager"], "entries: %r" % backends


def test_fullgraph_after_a_non_fullgraph_compile():
    def f(x):
        y = x + 1
        print("break")
        return y * 2
    x = r(3)
    ptc.compile(f)(x)  # caches entries with a graph break
    with pytest.raises(ptc.dynamo.Unsupported):
        ptc.compile(f, fullgraph=True)(x)


# ---- skip rules ---------------------------------------------------------------------------------------

def test_stdlib_and_torch_frames_not_captured():
    import json
    import torch.nn.functional as F

    def f(x, cfg):
        s = json.dumps(cfg, sort_keys=True)
        y = F.hardtanh(x * len(s))  # torch's Python wrapper runs (or is mapped), never cached
        return y + torch.broadcast_shapes((2, 1), (1, 2))[0]
    cf = ptc.compile(f)
    x = r(4)
    assert_same(cf(x, {"b": 1, "a": [1, 2]}), f(x, {"b": 1, "a": [1, 2]}))
    for code in (json.dumps.__code__, json.JSONEncoder.encode.__code__,
                 F.hardtanh.__code__, torch.broadcast_shapes.__code__):
        assert ptc._C.dyn_entries(code) == [], code.co_filename
