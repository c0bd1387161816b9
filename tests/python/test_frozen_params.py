"""test_frozen_params.py - the torch.compile backend freezing parameter and
buffer inputs (python/ptc/backend.py: FrozenGraph).

Dynamo (torch >= 2.5, inline_inbuilt_nn_modules) hands the backend module
parameters and buffers as graph inputs. On torch 1.13 (no Dynamo) the same
kind of graph is made here by tracing a module through its submodules and
lifting every get_attr to a placeholder whose example value is the tensor
itself and whose meta["grapharg"].source is a chain shaped like Dynamo's
(GetItemSource(UnspecializedParamBufferSource(..., "_buffers"), name)).
Checked: results equal eager PyTorch; parameters and BN buffers become
constants so conv+BN folds (fewer kernels); the guard rebuilds after an
in-place update of a weight or a BN running stat, `p.data = t`, a different
module's tensors, load_state_dict, updates under inference_mode; grad mode
with parameters requiring grad is not frozen (gradients flow); the
PTC_FREEZE_PARAMS=0 / freeze=False knobs; the re-freeze cap; a graph that
writes a buffer is not frozen; a frozen weight compiles to the kernels
from_fx makes of the get_attr module; warm calls skip CompiledGraph.__call__. With torch >= 2 the same through
torch.compile (and on CUDA where there is a GPU)."""
import copy
import os
import sys
import warnings

import pytest
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

import ptc
from ptc.backend import CompiledForDynamo, FrozenGraph, make_backend, param_kind
from cuda_util import no_tf32, requires_cuda  # noqa: F401 (no_tf32: autouse fixture)

TORCH2 = int(torch.__version__.split(".")[0]) >= 2 and hasattr(torch, "compile")
needs_compile = pytest.mark.skipif(not TORCH2, reason="torch %s has no torch.compile"
                                   % torch.__version__)


class BasicBlock(nn.Module):
    """torchvision.models.resnet.BasicBlock (stride 2 with a downsample)."""

    def __init__(self, cin=8, cout=16, stride=2):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = nn.Conv2d(cin, cout, 1, stride, bias=False)
        self.bnd = nn.BatchNorm2d(cout)
        self.fc = nn.Linear(cout, 5)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out = F.relu(out + self.bnd(self.down(x)))
        return self.fc(out.mean((2, 3)))


def _randomize(m, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm):
                c = mod.num_features
                mod.running_mean.copy_(torch.rand(c, generator=g) - 0.5)
                mod.running_var.copy_(torch.rand(c, generator=g) + 0.5)
                mod.weight.copy_(torch.rand(c, generator=g) + 0.5)
                mod.bias.copy_(torch.rand(c, generator=g) - 0.5)
    return m.eval()


def _model(seed=0):
    torch.manual_seed(seed)
    return _randomize(BasicBlock(), seed)


# ---- Dynamo-shaped graphs on any torch ---------------------------------------------------

class _Src:
    """Stand-ins named like Dynamo's source classes (param_kind reads the
    class names and the .base / .member links, never imports Dynamo)."""

    def __init__(self, base=None, member=None):
        self.base, self.member = base, member


class LocalSource(_Src):
    pass


class UnspecializedNNModuleSource(_Src):
    pass


class UnspecializedParamBufferSource(_Src):
    pass


class GetItemSource(_Src):
    pass


class _GraphArg:
    def __init__(self, source):
        self.source = source


def _functional(mod, x, attr):
    """(F function, args) of a leaf module call with its tensors from attr(name)."""
    if isinstance(mod, nn.Conv2d):
        return F.conv2d, (x, attr("weight"), attr("bias"), mod.stride, mod.padding,
                          mod.dilation, mod.groups)
    if isinstance(mod, nn.ReLU):
        return F.relu, (x,)
    if isinstance(mod, nn.Linear):
        return F.linear, (x, attr("weight"), attr("bias"))
    if isinstance(mod, nn.modules.batchnorm._BatchNorm):
        return F.batch_norm, (x, attr("running_mean"), attr("running_var"), attr("weight"),
                              attr("bias"), mod.training, mod.momentum, mod.eps)
    raise NotImplementedError(type(mod))


def lifted(m):
    """(gm, names): m traced (leaf modules rewritten to their F functions)
    with every parameter and buffer a placeholder after the input, in
    first-use order, as Dynamo's inlined nn modules give them; names[i] the
    attribute path of placeholder i + 1."""
    gm = torch.fx.symbolic_trace(m)
    g = gm.graph
    names, phs = [], {}

    def attr_of(owner):
        def attr(name):
            t = getattr(m.get_submodule(owner), name, None)
            if t is None:
                return None
            path = owner + "." + name
            if path not in phs:
                mod = m.get_submodule(owner)
                member = "_parameters" if name in mod._parameters else "_buffers"
                first = next(n for n in g.nodes if n.op != "placeholder")
                with g.inserting_before(first):
                    ph = g.placeholder("l_self_" + path.replace(".", "_"))
                base = UnspecializedNNModuleSource(LocalSource())
                ph.meta["grapharg"] = _GraphArg(GetItemSource(
                    UnspecializedParamBufferSource(base, member)))
                phs[path] = ph
                names.append(path)
            return phs[path]
        return attr

    for node in list(g.nodes):
        if node.op == "call_module":
            mod = m.get_submodule(node.target)
            with g.inserting_before(node):
                fn, args = _functional(mod, node.args[0], attr_of(node.target))
                new = g.call_function(fn, args)
            node.replace_all_uses_with(new)
            g.erase_node(node)
        elif node.op == "get_attr":
            raise NotImplementedError(node.target)
    g.lint()
    gm.recompile()
    return gm, names


def _fetch(m, name):
    obj = m
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


class Runner:
    """Calls a backend-compiled lifted graph as Dynamo would: the module's
    current parameters/buffers passed with x on every call."""

    def __init__(self, m, backend="cpu", **kw):
        self.gm, self.names = lifted(m)
        self.b = make_backend(backend, **kw)
        self.m = m
        self.fn = None

    def args(self, x, m=None):
        m = self.m if m is None else m
        return [x] + [_fetch(m, n) for n in self.names]

    def __call__(self, x, m=None):
        a = self.args(x, m)
        if self.fn is None:
            self.fn = self.b(self.gm, a)
        return self.fn(*a)


def _close(got, want, tol=1e-4):
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)


def _kernels(fn):
    return fn.compiled.executables[-1].num_kernels


def test_param_kind():
    ph_buf = type("N", (), {"meta": {"grapharg": _GraphArg(GetItemSource(
        UnspecializedParamBufferSource(LocalSource(), "_buffers")))}})()
    ph_plain = type("N", (), {"meta": {"grapharg": _GraphArg(LocalSource())}})()
    assert param_kind(None, nn.Parameter(torch.ones(2))) == "parameter"
    assert param_kind(ph_buf, torch.ones(2)) == "buffer"
    assert param_kind(ph_plain, torch.ones(2)) is None
    assert param_kind(None, torch.ones(2)) is None
    assert param_kind(ph_buf, 3) is None


def test_frozen_matches_eager_and_folds(monkeypatch):
    monkeypatch.delenv("PTC_FREEZE_PARAMS", raising=False)
    monkeypatch.delenv("PTC_FOLD_CONV_BN", raising=False)
    m = _model()
    x = torch.randn(2, 8, 12, 12)
    with torch.no_grad():
        want = m(x)
        r = Runner(m)
        _close(r(x), want)
        _close(r(x), want)
        plain = Runner(copy.deepcopy(m), freeze=False)
        _close(plain(x), want)
    assert isinstance(r.fn, FrozenGraph), type(r.fn)
    # every parameter and buffer input (BN running stats included) is frozen
    assert len(r.fn.frozen_inputs) == len(r.names) == 17, r.names
    assert r.fn.num_parameter_inputs == 11 and r.fn.refreezes == 0
    assert not isinstance(plain.fn, FrozenGraph)
    # constants: the three conv+BN pairs fold (fewer kernels than unfrozen)
    assert _kernels(r.fn) < _kernels(plain.fn), (_kernels(r.fn), _kernels(plain.fn))


def test_env_knob_off(monkeypatch):
    monkeypatch.setenv("PTC_FREEZE_PARAMS", "0")
    m = _model()
    x = torch.randn(2, 8, 12, 12)
    with torch.no_grad():
        r = Runner(m)
        _close(r(x), m(x))
    assert not isinstance(r.fn, FrozenGraph)
    monkeypatch.setenv("PTC_FREEZE_PARAMS", "1")
    with torch.no_grad():
        r = Runner(m)
        r(x)
    assert isinstance(r.fn, FrozenGraph)


def _updates():
    """(name, in-place change of module m): each must reach the results."""
    def weight(m):
        m.conv1.weight.mul_(1.5)

    def running_mean(m):
        m.bn1.running_mean.add_(0.25)

    def running_var(m):
        m.bn2.running_var.mul_(2.0)

    def linear_bias(m):
        m.fc.bias.sub_(1.0)

    def data_swap(m):  # same Parameter object, new memory, _version unchanged
        m.conv2.weight.data = m.conv2.weight.data * 0.5

    def load_state(m):
        m.load_state_dict(_model(seed=7).state_dict())

    return [weight, running_mean, running_var, linear_bias, data_swap, load_state]


@pytest.mark.parametrize("update", _updates(), ids=lambda f: f.__name__)
def test_inplace_update_after_first_call(update):
    m = _model()
    x = torch.randn(2, 8, 12, 12)
    r = Runner(m)
    with torch.no_grad():
        _close(r(x), m(x))
        fz = r.fn
        update(m)
        want = m(x)
        _close(r(x), want)     # re-frozen before computing
        _close(r(x), want)     # and served frozen again
    assert fz.refreezes == 1 and fz.unfrozen is None
    assert isinstance(fz.compiled_graph, ptc.fx.CompiledGraph)


def test_update_under_inference_mode():
    m = _model()
    x = torch.randn(2, 8, 12, 12)
    r = Runner(m)
    with torch.inference_mode():
        _close(r(x), m(x))
        m.bn1.running_mean.add_(0.5)   # a normal tensor: its version still moves
        m.conv2.weight.mul_(0.75)
        _close(r(x), m(x))
    assert r.fn.refreezes == 1


def test_other_module_same_graph():
    """Dynamo reuses a graph for another instance of the same class; the
    frozen tensors are then other objects."""
    m1, m2 = _model(0), _model(3)
    x = torch.randn(2, 8, 12, 12)
    r = Runner(m1)
    with torch.no_grad():
        _close(r(x), m1(x))
        _close(r(x, m2), m2(x))
        _close(r(x, m2), m2(x))
    assert r.fn.refreezes == 1


def test_refreeze_cap_then_unfrozen():
    m = _model()
    x = torch.randn(2, 8, 12, 12)
    r = Runner(m)
    with torch.no_grad():
        r(x)
        fz = r.fn
        fz.max_refreezes = 2
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for i in range(5):
                m.bn2.running_mean.add_(0.1)
                _close(r(x), m(x))
    assert fz.refreezes == 2 and fz.unfrozen is not None
    assert any("changed" in str(e.message) for e in w), [str(e.message) for e in w]
    with torch.no_grad():
        m.conv1.weight.mul_(0.9)   # unfrozen: reads the live parameters
        _close(r(x), m(x))


def test_grad_mode_not_frozen():
    """Training: grad mode on and parameters requiring grad - not frozen,
    runs eagerly with gradients flowing."""
    m = _model()
    m.train()
    x = torch.randn(2, 8, 12, 12)
    r = Runner(copy.deepcopy(m).eval())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.eval()
        out = r(x, m)
    assert not isinstance(r.fn, FrozenGraph), type(r.fn)
    out.sum().backward()
    assert m.conv1.weight.grad is not None
    _close(out.detach(), m(x).detach())


def test_frozen_then_grad_call_runs_eagerly():
    m = _model()
    x = torch.randn(2, 8, 12, 12)
    r = Runner(m)
    with torch.no_grad():
        r(x)
    assert isinstance(r.fn, FrozenGraph)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = r(x)   # grad mode on, parameters require grad
    out.sum().backward()
    assert m.fc.weight.grad is not None and r.fn.eager_calls == 1
    assert any("grad" in str(e.message) for e in w)
    # parameters not requiring grad: frozen even in grad mode
    m.requires_grad_(False)
    _close(r(x), m(x))
    assert r.fn.eager_calls == 1 and r.fn.refreezes == 0


def test_buffer_written_by_graph_not_frozen():
    """BatchNorm in training mode writes its running stats: not frozen (the
    graph then runs as before, here eagerly), the stats move as in eager."""
    m = _model()
    m.train()
    ref = copy.deepcopy(m)
    x = torch.randn(2, 8, 12, 12)
    r = Runner(m)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = r(x)
        want = ref(x)
    assert not isinstance(r.fn, FrozenGraph)
    _close(got, want)
    _close(m.bn1.running_mean, ref.bn1.running_mean)


def test_plain_inputs_untouched():
    """Inputs that are no parameter/buffer (no source, plain tensors) stay
    inputs: a graph without parameters is returned as before."""
    def f(x, y):
        return torch.relu(x) * y + 1.0

    gm = torch.fx.symbolic_trace(f)
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    fn = make_backend("cpu")(gm, [x, y])
    assert not isinstance(fn, FrozenGraph)
    _close(fn(x, y), f(x, y))


# the benchmark's RMSNorm (bench/vs_torch_models.py): a get_attr weight after a row reduction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "bench"))
from vs_torch_models import RMSNorm  # noqa: E402


def _lift_get_attrs(m):
    """(gm, names): m traced with each get_attr (a parameter here) turned into
    a placeholder after the input, as Dynamo's inlined nn modules pass them."""
    gm = torch.fx.symbolic_trace(m)
    g = gm.graph
    names = []
    for node in list(g.nodes):
        if node.op == "get_attr":
            last = [n for n in g.nodes if n.op == "placeholder"][-1]
            with g.inserting_after(last):
                ph = g.placeholder("l_self_parameters_" + node.target.replace(".", "_") + "_")
            node.replace_all_uses_with(ph)
            g.erase_node(node)
            names.append(node.target)
    gm.recompile()
    return gm, names


def _kernel_sources(folder):
    """The kernel cache files a debug dump's (cuda_)kernels.txt names, in order."""
    import glob
    import re
    out = []
    for f in sorted(glob.glob(str(folder / "*kernels.txt"))):
        out += re.findall(r"\(([^,()]+\.(?:c|cu)), (?:compiled|cache hit)\)", open(f).read())
    return out


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=requires_cuda)])
def test_frozen_compiles_the_kernels_of_from_fx(device, tmp_path):
    """A frozen parameter is the same constant from_fx makes of a get_attr:
    the frozen graph compiles to the very kernels (same generated sources,
    same count) that ptc.from_fx builds for the traced module, so the
    backend's per-call GPU work equals ptc-fx's (session 10: rmsnorm through
    the backend measured slower; the kernel turned out identical, the
    difference was host time)."""
    torch.manual_seed(0)
    m = RMSNorm(256).to(device).eval()
    x = torch.randn(64, 256, device=device)
    with torch.no_grad():
        want = m(x)
        fx = ptc.from_fx(torch.fx.symbolic_trace(m), [x], backend=device,
                         debug_dir=str(tmp_path / "fx"))
        _close(fx(x), want)
        gm, names = _lift_get_attrs(m)
        args = [x] + [_fetch(m, n) for n in names]
        fz = make_backend(device, debug_dir=str(tmp_path / "frozen"))(gm, args)
        _close(fz(*args), want)
    assert isinstance(fz, FrozenGraph) and fz.frozen_inputs == (1,)
    assert _kernels(fz) == _kernels(fx) == 1
    src_fx, src_fz = _kernel_sources(tmp_path / "fx"), _kernel_sources(tmp_path / "frozen")
    assert src_fx and src_fx == src_fz, (src_fx, src_fz)


def test_frozen_fast_path_calls_compiled_function(monkeypatch):
    """A warm call whose frozen tensors are unchanged goes from the guard
    straight to the CompiledFunction, not through CompiledGraph.__call__
    (one Python frame less per call); a changed weight still re-freezes."""
    import ptc.fx

    torch.manual_seed(0)
    m = RMSNorm(32).eval()
    x = torch.randn(8, 32)
    gm, names = _lift_get_attrs(m)
    args = [x] + [_fetch(m, n) for n in names]
    with torch.no_grad():
        fz = make_backend("cpu")(gm, args)
        assert isinstance(fz, FrozenGraph)
        _close(fz(*args), m(x))  # the CompiledGraph's first call finds its fast path
        calls = []
        orig = ptc.fx.CompiledGraph.__call__

        def counting(self, *a):
            calls.append(1)
            return orig(self, *a)
        monkeypatch.setattr(ptc.fx.CompiledGraph, "__call__", counting)
        for _ in range(5):
            _close(fz(*args), m(x))
        assert calls == [], len(calls)
        m.weight.mul_(2.0)  # in-place update: the guard fails, re-freeze, new values
        _close(fz(*args), m(x))
        assert fz.refreezes == 1
        _close(fz(*args), m(x))


# ---- torch.compile (torch >= 2) ----------------------------------------------------------

def _dynamo_compile(m, b):
    torch._dynamo.reset()
    return torch.compile(m, backend=b)


def _torch_compile_case(device, dtype, tol):
    m = _model().to(device=device, dtype=dtype)
    x = torch.randn(4, 8, 16, 16, device=device, dtype=dtype)
    b = make_backend(device)
    cm = _dynamo_compile(m, b)
    with torch.no_grad():
        _close(cm(x), m(x), tol)
    frozen = [c for c in b.compiled if isinstance(c, FrozenGraph)]
    assert frozen and b.fallbacks == [], (b.compiled, b.fallbacks)
    inline = getattr(torch._dynamo.config, "inline_inbuilt_nn_modules", False)
    if inline:  # 11 parameters and 6 BN running stats
        assert sum(len(c.frozen_inputs) for c in frozen) == 17, \
            [c.frozen_inputs for c in frozen]
    with torch.no_grad():
        m.bn1.running_mean.add_(0.25)       # in-place buffer update
        _close(cm(x), m(x), tol)
        m.conv2.weight.mul_(1.25)           # in-place weight update
        _close(cm(x), m(x), tol)
        m.load_state_dict(_model(seed=5).to(device=device, dtype=dtype).state_dict())
        _close(cm(x), m(x), tol)
    # a training step (grad mode: Dynamo compiles that graph separately, not frozen)
    m.train()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cm(x).float().square().mean().backward()
    opt.step()
    m.eval()
    with torch.no_grad():
        _close(cm(x), m(x), tol)
    return b


@needs_compile
def test_torch_compile_cpu():
    b = _torch_compile_case("cpu", torch.float32, 1e-4)
    assert any(c.refreezes >= 1 for c in b.compiled if isinstance(c, FrozenGraph))


@requires_cuda
@needs_compile
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_torch_compile_cuda(dtype):
    _torch_compile_case("cuda", dtype, 1e-3 if dtype == torch.float32 else 6e-2)


@needs_compile
def test_torch_compile_grad_mode_not_frozen():
    m = _model()
    b = make_backend("cpu")
    cm = _dynamo_compile(m, b)
    x = torch.randn(2, 8, 12, 12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = cm(x)
    out.sum().backward()
    assert m.conv1.weight.grad is not None
    assert not any(isinstance(c, FrozenGraph) for c in b.compiled)
    assert all(isinstance(c, CompiledForDynamo) for c in b.compiled)
