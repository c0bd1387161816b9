"""test_conv_bn.py - the conv-bn fold (lib/runtime/pass_conv_bn.c) seen from
Python: torchvision-style conv -> BatchNorm(eval) -> relu blocks (a basic
residual block with a downsample, a conv1d stack, a grouped conv, a conv
with bias) through ptc.from_fx on the cpu backend (and on cuda where there
is a GPU) against torch in eval mode, with the fold on (default) and off
(PTC_FOLD_CONV_BN=0); the fold must leave fewer kernels per call. ptc.compile
(ptc's own bytecode capture) runs the residual block too; the torch.compile
backend's frozen parameters (python/ptc/backend.py) fold as constants."""
import copy
import sys

import pytest
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

import ptc
from cuda_util import no_tf32, requires_cuda  # noqa: F401 (no_tf32: autouse fixture)


class BasicBlock(nn.Module):
    """torchvision.models.resnet.BasicBlock (stride 2 with a downsample)."""

    def __init__(self, cin=8, cout=16, stride=2):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                        nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.downsample(x))


class Conv1dStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(6, 12, 3, padding=1)  # with bias
        self.b1 = nn.BatchNorm1d(12)
        self.c2 = nn.Conv1d(12, 12, 3, padding=1, groups=3, bias=False)
        self.b2 = nn.BatchNorm1d(12, affine=False)

    def forward(self, x):
        return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))))


class GroupedBias(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1, groups=4, bias=True)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


def _randomize_bn(m):
    """Non-trivial running statistics and affine parameters (fresh modules
    have mean 0, var 1, weight 1, bias 0, which would hide mistakes)."""
    g = torch.Generator().manual_seed(0)
    for mod in m.modules():
        if isinstance(mod, nn.modules.batchnorm._BatchNorm):
            c = mod.num_features
            mod.running_mean.copy_(torch.rand(c, generator=g) - 0.5)
            mod.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            if mod.affine:
                mod.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
                mod.bias.data.copy_(torch.rand(c, generator=g) - 0.5)
    return m.eval()


MODELS = [
    ("basic_block", BasicBlock, (2, 8, 12, 12)),
    ("conv1d_stack", Conv1dStack, (3, 6, 20)),
    ("grouped_bias", GroupedBias, (2, 8, 9, 9)),
]


def _err(a, b):
    return ((a.float() - b.float()).abs().max() / max(1.0, b.float().abs().max().item())).item()


def _run_from_fx(m, x, backend):
    gm = torch.fx.symbolic_trace(m)
    fn = ptc.from_fx(gm, [x], backend=backend)
    y = fn(x)
    exes = fn.compiled.executables
    return y, exes[-1].num_kernels


@pytest.mark.parametrize("name,cls,shape", MODELS, ids=[m[0] for m in MODELS])
def test_from_fx_cpu(name, cls, shape, monkeypatch):
    torch.manual_seed(1)
    m = _randomize_bn(cls())
    x = torch.randn(*shape)
    with torch.no_grad():
        want = m(x)
        monkeypatch.delenv("PTC_FOLD_CONV_BN", raising=False)
        got, k_fold = _run_from_fx(copy.deepcopy(m), x, "cpu")
        monkeypatch.setenv("PTC_FOLD_CONV_BN", "0")
        got0, k_plain = _run_from_fx(copy.deepcopy(m), x, "cpu")
    assert _err(got, want) < 1e-4
    assert _err(got0, want) < 1e-4
    assert k_fold < k_plain, (k_fold, k_plain)


def test_from_fx_cpu_bf16():
    torch.manual_seed(2)
    m = _randomize_bn(GroupedBias()).to(torch.bfloat16)
    x = torch.randn(2, 8, 9, 9).to(torch.bfloat16)
    with torch.no_grad():
        want = _randomize_bn(GroupedBias()).eval()  # f32 reference of the same weights
        want.load_state_dict({k: v.float() for k, v in m.state_dict().items()})
        ref = want(x.float())
        got, _ = _run_from_fx(m, x, "cpu")
    assert got.dtype == torch.bfloat16
    assert _err(got, ref) < 3e-2


@pytest.mark.skipif(not (3, 11) <= sys.version_info[:2] <= (3, 12),
                    reason="ptc.compile needs CPython 3.11 or 3.12")
def test_ptc_compile_basic_block():
    torch.manual_seed(3)
    m = _randomize_bn(BasicBlock())
    x = torch.randn(2, 8, 12, 12)
    with torch.no_grad():
        want = m(x)
        got = ptc.compile(m, backend="cpu")(x)
    assert _err(got, want) < 1e-4


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_from_fx_cuda(dtype):
    torch.manual_seed(4)
    m = _randomize_bn(BasicBlock()).cuda()
    x = torch.randn(4, 8, 16, 16, device="cuda")
    with torch.no_grad():
        want = m(x)
        md = copy.deepcopy(m).to(dtype)
        got, _ = _run_from_fx(md, x.to(dtype), "cuda")
    assert _err(got, want) < (1e-3 if dtype == torch.float32 else 5e-2)


@pytest.mark.parametrize("fold", ["default", "0"])
def test_backend_frozen_params_fold(fold, monkeypatch):
    """The torch.compile backend path: parameters and BN buffers arrive as
    graph inputs (a Dynamo-shaped lifted graph); frozen into constants they
    fold by default (fewer kernels than with PTC_FOLD_CONV_BN=0), results
    equal eager either way."""
    from test_frozen_params import Runner

    torch.manual_seed(5)
    m = _randomize_bn(BasicBlock())
    x = torch.randn(2, 8, 12, 12)
    monkeypatch.delenv("PTC_FREEZE_PARAMS", raising=False)
    if fold == "0":
        monkeypatch.setenv("PTC_FOLD_CONV_BN", "0")
    else:
        monkeypatch.delenv("PTC_FOLD_CONV_BN", raising=False)
    with torch.no_grad():
        want = m(x)
        r = Runner(m)
        got = r(x)
        monkeypatch.setenv("PTC_FOLD_CONV_BN", "0")
        r0 = Runner(m)
        r0(x)
    assert _err(got, want) < 1e-4
    k, k0 = r.fn.compiled.executables[-1].num_kernels, r0.fn.compiled.executables[-1].num_kernels
    assert (k < k0) if fold == "default" else (k == k0), (k, k0)


@pytest.mark.skipif(not (3, 11) <= sys.version_info[:2] <= (3, 12),
                    reason="ptc.compile needs CPython 3.11 or 3.12")
def test_ptc_compile_inplace_update_refolds():
    """ptc.compile folds the block's constant parameters into copies; an
    in-place update of a BN running stat or a conv weight after the first
    call must reach the results (the capture's guard checks the _version of
    constants held as copies, fx.snapshot_constants, and recompiles)."""
    torch.manual_seed(6)
    m = _randomize_bn(BasicBlock())
    x = torch.randn(2, 8, 12, 12)
    with torch.no_grad():
        f = ptc.compile(m, backend="cpu")
        assert _err(f(x), m(x)) < 1e-4
        m.bn1.running_mean.add_(0.5)
        assert _err(f(x), m(x)) < 1e-4
        m.conv1.weight.mul_(1.5)
        assert _err(f(x), m(x)) < 1e-4
        assert _err(f(x), m(x)) < 1e-4  # no further change: the new entry


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=requires_cuda)])
def test_from_fx_inplace_update_refolds(device):
    """from_fx: folded constants (cpu) and uploaded constants (cuda) are
    copies taken at compile time; in-place updates (a BN running stat, a
    conv weight, load_state_dict) rebuild before the next call computes."""
    torch.manual_seed(7)
    m = _randomize_bn(BasicBlock()).to(device)
    other = _randomize_bn(BasicBlock()).to(device)
    x = torch.randn(2, 8, 12, 12, device=device)
    gm = torch.fx.symbolic_trace(m)
    with torch.no_grad():
        f = ptc.from_fx(gm, [x], backend=device)
        assert _err(f(x), m(x)) < 1e-4
        m.bn2.running_var.mul_(2.0)
        assert _err(f(x), m(x)) < 1e-4
        m.downsample[0].weight.add_(0.25)
        assert _err(f(x), m(x)) < 1e-4
        m.load_state_dict(other.state_dict())
        assert _err(f(x), m(x)) < 1e-4
        assert _err(f(x), other(x)) < 1e-4
    assert f._stale_count == 3, f._stale_count


def test_from_fx_live_parameters_not_rebuilt():
    """cpu constants that are borrowed and not folded (no batch norm) are
    read live: an in-place update reaches the result with no rebuild."""
    m = nn.Sequential(nn.Linear(6, 5), nn.ReLU())
    x = torch.randn(3, 6)
    f = ptc.from_fx(torch.fx.symbolic_trace(m), [x])
    with torch.no_grad():
        assert _err(f(x), m(x)) < 1e-5
        m[0].weight.mul_(-2.0)
        assert _err(f(x), m(x)) < 1e-5
    assert f._stale_count == 0 and not f._snap


def test_from_fx_inplace_update_cap():
    """After max_recompiles in-place updates the graph runs eagerly (still
    right, warned once)."""
    torch.manual_seed(8)
    m = _randomize_bn(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()))
    x = torch.randn(1, 3, 8, 8)
    f = ptc.from_fx(torch.fx.symbolic_trace(m), [x], max_recompiles=2)
    with torch.no_grad(), pytest.warns(UserWarning, match="updated in place"):
        for _ in range(4):
            m[1].running_mean.add_(0.1)
            assert _err(f(x), m(x)) < 1e-4
    assert f._eager
