"""test_cuda_conv.py - the cuda backend's convolution paths (issue 5) against
eager on the GPU: the implicit-GEMM tensor-core kernel (bf16/f16, and f32
as TF32 when torch.backends.cudnn.allow_tf32 allows it: conv_precision
"high"), 1x1 stride-1 convolutions read straight from the input (no
im2col), im2col with one matrix per image (large output planes) and with
the images side by side in one wide GEMM (output planes under 256 pixels;
full f32, or PTC_CUDA_CONV_IGEMM=0), strides, dilation, padding, groups,
bias or none, activations in the GEMM (no bias) or in the bias pass.
Skipped where torch has no GPU or ptc's cuda backend is unavailable (CI)."""
import copy
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.fx

import ptc
from cuda_util import no_tf32, requires_cuda  # noqa: F401 (no_tf32: autouse fixture)

pytestmark = requires_cuda


def _compile(m, inputs):
    gm = torch.fx.symbolic_trace(m)
    return ptc.from_fx(gm, list(inputs), backend="cuda")


def _err(a, b):
    assert a.device == b.device, (a.device, b.device)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    err = (a.float() - b.float()).abs().max().item()
    return err / max(1.0, b.float().abs().max().item())


class ConvAct(nn.Module):
    def __init__(self, conv, act):
        super().__init__()
        self.conv = conv
        self.act = act

    def forward(self, x):
        y = self.conv(x)
        if self.act == "relu":
            return F.relu(y)
        if self.act == "silu":
            return F.silu(y)
        return y


# (cin, cout, k, stride, padding, dilation, groups, bias, act, n, h, w)
CASES = [
    # 1x1 stride 1: the input is the GEMM operand
    (32, 48, 1, 1, 0, 1, 1, False, "relu", 3, 9, 11),
    (32, 48, 1, 1, 0, 1, 1, True, "silu", 2, 16, 20),
    (32, 48, 1, 1, 0, 1, 2, True, None, 4, 5, 5),
    (16, 8, 1, 1, 0, 1, 1, False, "silu", 1, 7, 3),
    # 1x1 with a stride (resnet's downsample): im2col
    (32, 64, 1, 2, 0, 1, 1, False, None, 4, 14, 14),
    # large planes: one im2col matrix per image
    (8, 24, 3, 1, 1, 1, 1, False, "relu", 3, 20, 18),
    (8, 24, 3, 1, 1, 1, 2, True, "silu", 2, 19, 17),
    (6, 10, (3, 5), (2, 1), (1, 2), (1, 2), 1, True, "relu", 2, 33, 30),
    # small planes: the images side by side in one wide GEMM
    (64, 96, 3, 1, 1, 1, 1, False, "relu", 4, 7, 7),
    (64, 96, 3, 1, 1, 1, 1, True, None, 5, 7, 7),
    (64, 64, 3, 2, 1, 1, 4, False, "silu", 3, 14, 14),
    (16, 16, 3, 1, 2, 2, 16, True, "relu", 6, 9, 8),
    (12, 20, 5, 1, 0, 1, 1, False, None, 2, 11, 12),
]


@pytest.mark.parametrize("case", CASES, ids=[f"c{i}" for i in range(len(CASES))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_conv_paths(case, dtype):
    cin, cout, k, stride, padding, dilation, groups, bias, act, n, h, w = case
    torch.manual_seed(11)
    conv = nn.Conv2d(cin, cout, k, stride=stride, padding=padding, dilation=dilation,
                     groups=groups, bias=bias)
    m = ConvAct(conv, act).cuda().eval().to(dtype)
    x = torch.randn(n, cin, h, w, device="cuda", dtype=dtype)
    fn = _compile(m, [x])
    with torch.no_grad():
        err = _err(fn(x), m(x))
    assert err <= (1e-4 if dtype == torch.float32 else 3e-2), err


def test_conv_chained_blocks():
    """conv + batchnorm + relu + residual, as in resnet: the 1x1 and 3x3
    paths feeding each other with the pointwise kernels between them."""
    torch.manual_seed(12)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(32, 32, 3, padding=1, bias=False)
            self.b1 = nn.BatchNorm2d(32)
            self.c2 = nn.Conv2d(32, 32, 1, bias=False)
            self.b2 = nn.BatchNorm2d(32)

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            return F.relu(self.b2(self.c2(y)) + x)

    m = nn.Sequential(Block(), Block()).cuda().eval()
    for bn in (mod for mod in m.modules() if isinstance(mod, nn.BatchNorm2d)):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    for x in (torch.randn(4, 32, 8, 8, device="cuda"), torch.randn(2, 32, 24, 24, device="cuda")):
        fn = _compile(m, [x])
        with torch.no_grad():
            assert _err(fn(x), m(x)) <= 1e-4


def test_conv_tf32_when_allowed():
    """allow_tf32 (torch's default) compiles f32 convolutions with TF32:
    close to the f32 result at TF32's precision, and not bit-equal to it
    (so TF32 really ran) on an H100/A100-class GPU."""
    torch.manual_seed(13)
    m = ConvAct(nn.Conv2d(64, 64, 3, padding=1, bias=False), None).cuda().eval()
    x = torch.randn(8, 64, 28, 28, device="cuda")
    with torch.no_grad():
        ref = m.double()(x.double()).float()
        m.float()
    fn_full = _compile(m, [x])
    torch.backends.cudnn.allow_tf32 = True
    fn_tf32 = _compile(m, [x])
    with torch.no_grad():
        e_full = _err(fn_full(x), ref)
        e_tf32 = _err(fn_tf32(x), ref)
    assert e_full <= 1e-5, e_full
    assert e_tf32 <= 5e-3, e_tf32
    if torch.cuda.get_device_capability() >= (8, 0):
        assert e_tf32 > 4 * e_full, (e_tf32, e_full)


# resnet-like layers and odd ones, for the implicit GEMM: (cin, cout, k,
# stride, padding, dilation, groups, bias, act, n, h, w)
IGEMM_CASES = [
    (3, 64, 7, 2, 3, 1, 1, False, "relu", 2, 64, 60),    # stem: K 147, weight copy
    (64, 64, 3, 1, 1, 1, 1, False, None, 4, 28, 28),     # BM 64, paired stores
    (64, 128, 3, 2, 1, 1, 1, True, "relu", 3, 28, 27),   # BM 128, ragged plane
    (64, 128, 1, 2, 0, 1, 1, False, None, 4, 28, 28),    # downsample
    (256, 512, 3, 1, 1, 1, 1, False, "relu", 8, 7, 7),   # split K
    (24, 40, (5, 3), (2, 1), (2, 1), (1, 2), 2, True, "silu", 2, 19, 17),
    (32, 32, 3, 1, 1, 1, 32, True, None, 2, 12, 12),     # depthwise
]


@pytest.mark.parametrize("case", IGEMM_CASES, ids=[f"c{i}" for i in range(len(IGEMM_CASES))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16],
                         ids=["tf32", "bf16", "f16"])
def test_conv_igemm(case, dtype):
    """The implicit GEMM against eager in float64 (f32 with TF32 allowed, as
    torch's default conv settings give)."""
    cin, cout, k, stride, padding, dilation, groups, bias, act, n, h, w = case
    torch.manual_seed(14)
    conv = nn.Conv2d(cin, cout, k, stride=stride, padding=padding, dilation=dilation,
                     groups=groups, bias=bias)
    m = ConvAct(conv, act).cuda().eval().to(dtype)
    x = torch.randn(n, cin, h, w, device="cuda", dtype=dtype)
    if dtype == torch.float32:
        torch.backends.cudnn.allow_tf32 = True
    fn = _compile(m, [x])
    with torch.no_grad():
        ref = copy.deepcopy(m).double()(x.double()).to(dtype)
        err = _err(fn(x), ref)
    tol = {torch.float32: 5e-3, torch.bfloat16: 3e-2, torch.float16: 5e-3}[dtype]
    assert err <= tol, err


def test_conv_igemm_matches_im2col():
    """PTC_CUDA_CONV_IGEMM=0 (im2col + GEMM) and the default (implicit GEMM)
    agree on a bf16 resnet block; the policy is read per call."""
    torch.manual_seed(15)
    m = nn.Sequential(nn.Conv2d(32, 64, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(64),
                      nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1)).cuda().eval().to(torch.bfloat16)
    x = torch.randn(4, 32, 30, 30, device="cuda", dtype=torch.bfloat16)
    fn = _compile(m, [x])
    old = os.environ.get("PTC_CUDA_CONV_IGEMM")
    try:
        with torch.no_grad():
            os.environ["PTC_CUDA_CONV_IGEMM"] = "0"
            a = fn(x).clone()
            os.environ["PTC_CUDA_CONV_IGEMM"] = "2"
            b = fn(x).clone()
            ref = copy.deepcopy(m).double()(x.double()).to(torch.bfloat16)
    finally:
        if old is None:
            os.environ.pop("PTC_CUDA_CONV_IGEMM", None)
        else:
            os.environ["PTC_CUDA_CONV_IGEMM"] = old
    assert _err(a, ref) <= 3e-2
    assert _err(b, ref) <= 3e-2
