"""cases_nn.py - PyTorch reference cases for the nn family: matrix products,
convolutions, pooling, interpolate, scaled dot-product attention, embedding
and constant pad.

f32/f64 expectations come from torch's own kernels; f16/bf16 ones from the
same torch call on float64 copies of the inputs, rounded once (torch 1.13's
CPU kernels lack several half-precision ops, and the ref backend computes in
double and rounds once). torch 1.13 has no scaled_dot_product_attention: its
expectation is explicit float64 math.
"""
import math
import warnings

import torch
import torch.nn.functional as F

from casegen import A

warnings.filterwarnings("ignore", message="Using padding='same'")

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
ALL = [F32, F64, F16, BF16]
SHORT = {F32: "f32", F64: "f64", F16: "f16", BF16: "bf16"}


def rnd(*shape, dtype=F32):
    return torch.randn(shape, dtype=F64).to(dtype)


def run(fn, *ts):
    """fn(*ts); for f16/bf16 inputs, computed in float64 and rounded once."""
    dt = next(t.dtype for t in ts if t is not None and t.is_floating_point())
    if dt not in (F16, BF16):
        return fn(*ts)
    up = [t.double() if t is not None and t.is_floating_point() else t for t in ts]
    return fn(*up).to(dt)


def attrs_of(**kw):
    """Typed attributes from python values (bool, int/list, float, str)."""
    out = {}
    for k, v in kw.items():
        if v is None:
            continue
        if isinstance(v, bool):
            out[k] = A.bool(v)
        elif isinstance(v, int):
            out[k] = A.ints([v]) if k not in ("groups", "divisor_override", "padding_idx") \
                else A.int(v)
        elif isinstance(v, float):
            out[k] = A.float(v)
        elif isinstance(v, str):
            out[k] = A.string(v)
        elif isinstance(v, (list, tuple)) and v and isinstance(v[0], float):
            out[k] = A.floats(v)
        else:
            out[k] = A.ints(v)
    return out


# ---- matrix products ----------------------------------------------------------
def mm_cases(C):
    for dt in ALL:
        s = SHORT[dt]
        a, b = rnd(3, 4, dtype=dt), rnd(4, 5, dtype=dt)
        C.add("mm_3x4x5_" + s, "mm", [a, b], run(torch.mm, a, b))
    a, b = rnd(16, 32), rnd(32, 16)
    C.add("mm_16x32x16_f32", "mm", [a, b], torch.mm(a, b))
    a, b = rnd(4, 3).t(), rnd(5, 4).t()
    C.add("mm_transposed_f32", "mm", [a, b], torch.mm(a, b))
    a, b = rnd(1, 4).expand(3, 4), rnd(4, 1, dtype=F32).expand(4, 2)
    C.add("mm_expanded_f32", "mm", [a, b], torch.mm(a, b))
    a, b = rnd(3, 1), rnd(1, 2)
    C.add("mm_k1_f32", "mm", [a, b], torch.mm(a, b))
    a, b = rnd(8, 6, dtype=F16)[::2], rnd(6, 3, dtype=F16)
    C.add("mm_strided_f16", "mm", [a, b], run(torch.mm, a, b))

    for dt in ALL:
        a, b = rnd(2, 3, 4, dtype=dt), rnd(2, 4, 5, dtype=dt)
        C.add("bmm_2x3x4x5_" + SHORT[dt], "bmm", [a, b], run(torch.bmm, a, b))
    a, b = rnd(3, 4, 5), rnd(3, 6, 5).transpose(1, 2)
    C.add("bmm_transposed_f32", "bmm", [a, b], torch.bmm(a, b))
    a, b = rnd(1, 3, 4).expand(2, 3, 4), rnd(2, 4, 2)
    C.add("bmm_expanded_f32", "bmm", [a, b], torch.bmm(a, b))


MATMUL_SHAPES = [
    ((5,), (5,)), ((4,), (4, 3)), ((3, 4), (4,)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)),
    ((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (3, 4, 2)),
    ((1, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (1, 3, 4, 2)), ((6,), (3, 1, 6, 2)),
]


def matmul_cases(C):
    for i, (sa, sb) in enumerate(MATMUL_SHAPES):
        a, b = rnd(*sa), rnd(*sb)
        C.add("matmul_%d_f32" % i, "matmul", [a, b], torch.matmul(a, b))
    for dt in (F64, F16, BF16):
        a, b = rnd(2, 1, 3, 4, dtype=dt), rnd(3, 4, 2, dtype=dt)
        C.add("matmul_bcast_" + SHORT[dt], "matmul", [a, b], run(torch.matmul, a, b))
    a, b = rnd(2, 4, 3).transpose(1, 2), rnd(5, 4).t()
    C.add("matmul_transposed_f32", "matmul", [a, b], torch.matmul(a, b))
    a, b = rnd(4, 1).expand(4, 3), rnd(3, 1).expand(3, 2)
    C.add("matmul_expanded_f32", "matmul", [a, b], torch.matmul(a, b))


def addmm_cases(C):
    m1, m2 = rnd(3, 4), rnd(4, 5)
    for i, ishape in enumerate([(3, 5), (5,), (1, 5), (3, 1), ()]):
        x = rnd(*ishape)
        C.add("addmm_in%d_f32" % i, "addmm", [x, m1, m2], torch.addmm(x, m1, m2))
    x = rnd(3, 5)
    C.add("addmm_beta_alpha_f32", "addmm", [x, m1, m2],
          torch.addmm(x, m1, m2, beta=0.5, alpha=-2.0),
          attrs={"beta": A.float(0.5), "alpha": A.float(-2.0)})
    xn = torch.full((3, 5), float("nan"))
    C.add("addmm_beta0_nan_f32", "addmm", [xn, m1, m2], torch.addmm(xn, m1, m2, beta=0.0),
          attrs={"beta": A.float(0.0)})
    for dt in (F64, F16, BF16):
        x, a, b = rnd(5, dtype=dt), rnd(3, 4, dtype=dt), rnd(5, 4, dtype=dt).t()
        C.add("addmm_" + SHORT[dt], "addmm", [x, a, b],
              run(lambda p, q, r: torch.addmm(p, q, r, beta=2.0, alpha=0.5), x, a, b),
              attrs={"beta": A.float(2.0), "alpha": A.float(0.5)})

    for dt in ALL:
        x, b1, b2 = rnd(2, 3, 5, dtype=dt), rnd(2, 3, 4, dtype=dt), rnd(2, 4, 5, dtype=dt)
        C.add("baddbmm_" + SHORT[dt], "baddbmm", [x, b1, b2], run(torch.baddbmm, x, b1, b2))
    b1, b2 = rnd(2, 3, 4), rnd(2, 5, 4).transpose(1, 2)
    for i, ishape in enumerate([(3, 5), (5,), (2, 1, 5)]):
        x = rnd(*ishape)
        C.add("baddbmm_in%d_f32" % i, "baddbmm", [x, b1, b2],
              torch.baddbmm(x, b1, b2, beta=-1.0, alpha=3.0),
              attrs={"beta": A.float(-1.0), "alpha": A.float(3.0)})


def linear_cases(C):
    w, bias = rnd(4, 5), rnd(4)
    for i, xs in enumerate([(5,), (3, 5), (2, 3, 5)]):
        x = rnd(*xs)
        C.add("linear_bias%d_f32" % i, "linear", [x, w, bias], F.linear(x, w, bias))
        C.add("linear_nobias%d_f32" % i, "linear", [x, w, None], F.linear(x, w))
    x, wt = rnd(2, 6), rnd(6, 3).t()
    C.add("linear_wT_f32", "linear", [x, wt], F.linear(x, wt))
    C.add("linear_2inputs_f32", "linear", [x, wt[:, :6]], F.linear(x, wt))
    for dt in (F64, F16, BF16):
        x, w2, b2 = rnd(3, 8, dtype=dt), rnd(6, 8, dtype=dt), rnd(6, dtype=dt)
        C.add("linear_" + SHORT[dt], "linear", [x, w2, b2], run(F.linear, x, w2, b2))


# ---- convolution ------------------------------------------------------------------
def conv_case(C, name, op, x, w, b, **kw):
    fn = F.conv2d if op == "conv2d" else F.conv1d
    targs = dict(kw)
    if "padding_str" in targs:
        targs["padding"] = targs.pop("padding_str")
    out = run(lambda p, q, r: fn(p, q, r, **targs), x, w, b)
    C.add(name, op, [x, w, b], out, attrs=attrs_of(**kw))


def conv_cases(C):
    x, w, b = rnd(2, 3, 8, 8), rnd(4, 3, 3, 3), rnd(4)
    conv_case(C, "conv2d_basic_f32", "conv2d", x, w, b)
    conv_case(C, "conv2d_nobias_f32", "conv2d", x, w, None)
    conv_case(C, "conv2d_s2p1_f32", "conv2d", x, w, b, stride=2, padding=1)
    conv_case(C, "conv2d_dil2_f32", "conv2d", x, w, b, dilation=2, padding=2)
    conv_case(C, "conv2d_asym_f32", "conv2d", x, w, b, stride=[1, 2], padding=[0, 1],
              dilation=[2, 1])
    conv_case(C, "conv2d_same_f32", "conv2d", x, w, b, padding_str="same")
    conv_case(C, "conv2d_same_even_f32", "conv2d", x, rnd(4, 3, 2, 4), b, padding_str="same",
              dilation=[1, 1])
    conv_case(C, "conv2d_valid_f32", "conv2d", x, w, b, padding_str="valid")
    xg = rnd(2, 4, 8, 8)
    conv_case(C, "conv2d_groups2_f32", "conv2d", xg, rnd(4, 2, 3, 3), b, groups=2, padding=1)
    conv_case(C, "conv2d_depthwise_f32", "conv2d", xg, rnd(8, 1, 3, 3), rnd(8), groups=4,
              stride=2)
    conv_case(C, "conv2d_unbatched_f32", "conv2d", rnd(3, 8, 8), w, b, padding=1)
    wt = rnd(3, 3, 3, 4).permute(3, 0, 1, 2)
    conv_case(C, "conv2d_wperm_f32", "conv2d", x, wt, b, padding=1)
    conv_case(C, "conv2d_xT_f32", "conv2d", rnd(2, 3, 8, 8).transpose(2, 3), w, b)
    conv_case(C, "conv2d_k1_f32", "conv2d", x, rnd(4, 3, 1, 1), b)
    for dt in (F64, F16, BF16):
        conv_case(C, "conv2d_" + SHORT[dt], "conv2d", rnd(1, 3, 6, 6, dtype=dt),
                  rnd(4, 3, 3, 3, dtype=dt), rnd(4, dtype=dt), padding=1, stride=2)

    x1, w1, b1 = rnd(2, 3, 10), rnd(4, 3, 3), rnd(4)
    conv_case(C, "conv1d_basic_f32", "conv1d", x1, w1, b1)
    conv_case(C, "conv1d_s2p1d2_f32", "conv1d", x1, w1, b1, stride=2, padding=1, dilation=2)
    conv_case(C, "conv1d_groups_f32", "conv1d", rnd(2, 4, 9), rnd(6, 2, 3), None, groups=2)
    conv_case(C, "conv1d_same_f32", "conv1d", x1, rnd(4, 3, 4), b1, padding_str="same",
              dilation=2)
    conv_case(C, "conv1d_unbatched_f32", "conv1d", rnd(3, 10), w1, b1, padding=2)
    conv_case(C, "conv1d_wT_f32", "conv1d", x1, rnd(3, 3, 4).permute(2, 0, 1), None)
    for dt in (F64, F16, BF16):
        conv_case(C, "conv1d_" + SHORT[dt], "conv1d", rnd(2, 3, 7, dtype=dt),
                  rnd(2, 3, 3, dtype=dt), rnd(2, dtype=dt), padding=1)


# ---- pooling --------------------------------------------------------------------------
def pool_cases(C):
    def maxp(name, x, **kw):
        C.add(name, "max_pool2d", [x], run(lambda t: F.max_pool2d(t, **kw), x),
              attrs=attrs_of(**kw))

    x = rnd(2, 3, 8, 8)
    maxp("max_pool2d_k2_f32", x, kernel_size=2)
    maxp("max_pool2d_k3s2p1_f32", x, kernel_size=3, stride=2, padding=1)
    maxp("max_pool2d_dil2_f32", x, kernel_size=3, stride=1, dilation=2, padding=1)
    maxp("max_pool2d_rect_f32", x, kernel_size=[2, 3], stride=[1, 2], padding=[1, 0])
    maxp("max_pool2d_ceil_f32", rnd(1, 2, 7, 7), kernel_size=3, stride=2, ceil_mode=True)
    maxp("max_pool2d_ceil_clip_f32", rnd(1, 2, 5, 5), kernel_size=2, stride=3, padding=1,
         ceil_mode=True)
    maxp("max_pool2d_unbatched_f32", rnd(3, 6, 6), kernel_size=2)
    maxp("max_pool2d_T_f32", rnd(1, 2, 6, 8).transpose(2, 3), kernel_size=2, stride=1)
    xs = rnd(1, 1, 4, 4)
    xs[0, 0, 0, 1] = float("nan")
    xs[0, 0, 2, 2] = float("inf")
    xs[0, 0, 3, 0] = float("-inf")
    maxp("max_pool2d_special_f32", xs, kernel_size=2)
    for dt in (F64, F16, BF16):
        maxp("max_pool2d_" + SHORT[dt], rnd(2, 2, 6, 6, dtype=dt), kernel_size=3, stride=2,
             padding=1, ceil_mode=True)

    def avgp(name, x, **kw):
        C.add(name, "avg_pool2d", [x], run(lambda t: F.avg_pool2d(t, **kw), x),
              attrs=attrs_of(**kw))

    avgp("avg_pool2d_k2_f32", x, kernel_size=2)
    avgp("avg_pool2d_k3s2p1_f32", x, kernel_size=3, stride=2, padding=1)
    avgp("avg_pool2d_nopadcount_f32", x, kernel_size=3, stride=2, padding=1,
         count_include_pad=False)
    avgp("avg_pool2d_ceil_f32", rnd(1, 2, 7, 7), kernel_size=3, stride=2, padding=1,
         ceil_mode=True)
    avgp("avg_pool2d_ceil_nopad_f32", rnd(1, 2, 7, 7), kernel_size=3, stride=2, padding=1,
         ceil_mode=True, count_include_pad=False)
    avgp("avg_pool2d_divisor_f32", x, kernel_size=2, stride=[2, 1], divisor_override=3)
    avgp("avg_pool2d_unbatched_f32", rnd(3, 5, 6), kernel_size=[2, 3])
    avgp("avg_pool2d_T_f32", rnd(1, 2, 6, 8).transpose(2, 3), kernel_size=2)
    for dt in (F64, F16, BF16):
        avgp("avg_pool2d_" + SHORT[dt], rnd(2, 2, 6, 6, dtype=dt), kernel_size=3, stride=2,
             padding=1)

    def adp(name, x, os):
        C.add(name, "adaptive_avg_pool2d", [x],
              run(lambda t: F.adaptive_avg_pool2d(t, os), x),
              attrs={"output_size": A.ints(os if isinstance(os, list) else [os])})

    adp("adaptive_avg_pool2d_3x2_f32", rnd(2, 3, 7, 5), [3, 2])
    adp("adaptive_avg_pool2d_1_f32", rnd(2, 3, 7, 5), 1)
    adp("adaptive_avg_pool2d_same_f32", rnd(1, 2, 4, 5), [4, 5])
    adp("adaptive_avg_pool2d_up_f32", rnd(1, 2, 3, 2), [5, 4])
    adp("adaptive_avg_pool2d_4x4_f32", rnd(1, 2, 10, 6), 4)
    adp("adaptive_avg_pool2d_unbatched_f32", rnd(3, 9, 9), [2, 4])
    adp("adaptive_avg_pool2d_T_f32", rnd(1, 2, 6, 8).transpose(1, 3), [3, 3])
    for dt in (F64, F16, BF16):
        adp("adaptive_avg_pool2d_" + SHORT[dt], rnd(2, 2, 7, 6, dtype=dt), [3, 4])


# ---- interpolate ----------------------------------------------------------------------------
def interp_cases(C):
    def interp(name, x, mode, size=None, scale=None, align=None):
        kw = {"mode": mode}
        attrs = {"mode": A.string(mode)}
        if size is not None:
            kw["size"] = size
            attrs["size"] = A.ints(size if isinstance(size, list) else [size])
        if scale is not None:
            kw["scale_factor"] = scale
            attrs["scale_factor"] = A.floats(scale if isinstance(scale, list) else [scale])
        if align is not None:
            kw["align_corners"] = align
            attrs["align_corners"] = A.bool(align)
        C.add(name, "interpolate", [x], run(lambda t: F.interpolate(t, **kw), x), attrs=attrs)

    x = rnd(2, 3, 4, 5)
    interp("interp_nearest_size_f32", x, "nearest", size=[7, 9])
    interp("interp_nearest_down_f32", rnd(1, 2, 9, 7), "nearest", size=[4, 3])
    interp("interp_nearest_x2_f32", x, "nearest", scale=2.0)
    interp("interp_nearest_x1_5_f32", x, "nearest", scale=1.5)
    interp("interp_nearest_sf_mixed_f32", rnd(1, 2, 7, 9), "nearest", scale=[0.5, 1.3])
    interp("interp_nearest_size1_f32", x, "nearest", size=6)
    interp("interp_bilinear_size_f32", x, "bilinear", size=[7, 9])
    interp("interp_bilinear_ac_f32", x, "bilinear", size=[7, 9], align=True)
    interp("interp_bilinear_down_f32", rnd(1, 2, 9, 7), "bilinear", size=[4, 3], align=False)
    interp("interp_bilinear_down_ac_f32", rnd(1, 2, 9, 7), "bilinear", size=[4, 1], align=True)
    interp("interp_bilinear_sf_f32", x, "bilinear", scale=1.7)
    interp("interp_bilinear_sf2_f32", x, "bilinear", scale=[2.0, 0.6], align=False)
    interp("interp_bilinear_T_f32", rnd(2, 3, 5, 4).transpose(2, 3), "bilinear", size=[6, 6])
    for dt in (F64, F16, BF16):
        interp("interp_nearest_" + SHORT[dt], rnd(1, 2, 3, 4, dtype=dt), "nearest", size=[5, 6])
        interp("interp_bilinear_" + SHORT[dt], rnd(1, 2, 3, 4, dtype=dt), "bilinear",
               size=[5, 6], align=dt == F64)


# ---- scaled dot-product attention ---------------------------------------------------------
def sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    """softmax(q @ k^T * scale + mask) @ v in float64; fully masked rows give 0."""
    dt = q.dtype
    q, k, v = q.double(), k.double(), v.double()
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    att = torch.matmul(q, k.transpose(-2, -1)) * s
    L, S = att.shape[-2:]
    if causal:
        att = att.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        if mask.dtype == torch.bool:
            att = att.masked_fill(~mask, float("-inf"))
        else:
            att = att + mask.double()
    mx = att.amax(-1, keepdim=True)
    full = mx == float("-inf")
    p = torch.exp(att - torch.where(full, torch.zeros_like(mx), mx))
    p = p / p.sum(-1, keepdim=True)
    p = torch.where(full, torch.zeros_like(p), p)
    return torch.matmul(p, v).to(dt)


def sdpa_cases(C):
    def sd(name, q, k, v, mask=None, causal=None, scale=None):
        attrs = {}
        if causal is not None:
            attrs["is_causal"] = A.bool(causal)
        if scale is not None:
            attrs["scale"] = A.float(scale)
        inputs = [q, k, v] + ([mask] if mask is not None else [])
        C.add(name, "scaled_dot_product_attention", inputs,
              sdpa_ref(q, k, v, mask, bool(causal), scale), attrs=attrs)

    q, k, v = rnd(2, 3, 4, 8), rnd(2, 3, 4, 8), rnd(2, 3, 4, 8)
    sd("sdpa_basic_f32", q, k, v)
    sd("sdpa_causal_f32", q, k, v, causal=True)
    sd("sdpa_scale_f32", q, k, v, scale=0.3)
    q2, k2, v2 = rnd(2, 5, 8), rnd(2, 7, 8), rnd(2, 7, 6)
    sd("sdpa_LneS_f32", q2, k2, v2)
    sd("sdpa_LneS_causal_f32", q2, k2, v2, causal=True)
    sd("sdpa_boolmask_f32", q2, k2, v2, mask=torch.rand(5, 7) > 0.3)
    sd("sdpa_floatmask_f32", q2, k2, v2, mask=rnd(2, 1, 7))
    fm = torch.ones(5, 7, dtype=torch.bool)
    fm[2] = False
    sd("sdpa_fullmasked_row_f32", q2, k2, v2, mask=fm)
    sd("sdpa_bcast_f32", rnd(2, 3, 4, 8), rnd(3, 6, 8), rnd(1, 3, 6, 5))
    sd("sdpa_2d_f32", rnd(4, 8), rnd(6, 8), rnd(6, 3), causal=False)
    sd("sdpa_kT_f32", q2, rnd(2, 8, 7).transpose(1, 2), v2, mask=rnd(5, 7))
    for dt in (F64, F16, BF16):
        sd("sdpa_" + SHORT[dt], rnd(2, 4, 8, dtype=dt), rnd(2, 6, 8, dtype=dt),
           rnd(2, 6, 8, dtype=dt), mask=rnd(4, 6, dtype=dt))


# ---- embedding and pad ----------------------------------------------------------------------
def embed_pad_cases(C):
    w = rnd(10, 4)
    cases = [
        ("embedding_1d_f32", w, torch.tensor([1, 0, 9, 3])),
        ("embedding_2d_i32_f32", w, torch.randint(0, 10, (2, 3), dtype=torch.int32)),
        ("embedding_scalar_f32", w, torch.tensor(7)),
        ("embedding_wT_f32", rnd(4, 10).t(), torch.tensor([[2, 2], [5, 8]])),
        ("embedding_idx_strided_f32", w, torch.randint(0, 10, (3, 4))[:, ::2]),
        ("embedding_f16", rnd(6, 3, dtype=F16), torch.tensor([5, 0, 1])),
        ("embedding_bf16", rnd(6, 3, dtype=BF16), torch.tensor([4, 4])),
        ("embedding_i64_weight", torch.randint(-50, 50, (5, 3)), torch.tensor([0, 4, 2])),
    ]
    for name, wt, ix in cases:
        C.add(name, "embedding", [wt, ix], F.embedding(ix, wt))
    ix = torch.tensor([0, 2, 0])
    C.add("embedding_padding_idx_f32", "embedding", [w, ix], F.embedding(ix, w, padding_idx=0),
          attrs={"padding_idx": A.int(0)})

    def pad(name, x, p, **kw):
        attrs = {"pad": A.ints(p)}
        if "value" in kw:
            attrs["value"] = A.float(kw["value"])
        if "mode" in kw:
            attrs["mode"] = A.string(kw["mode"])
        C.add(name, "pad", [x], F.pad(x, p, **kw), attrs=attrs)

    x = rnd(2, 3, 4)
    pad("pad_last_f32", x, [1, 2])
    pad("pad_two_f32", x, [1, 1, 2, 0], value=1.5)
    pad("pad_all_f32", x, [0, 1, 1, 0, 2, 1], mode="constant", value=-3.0)
    pad("pad_neg_f32", x, [-1, 2])
    pad("pad_crop_f32", x, [-1, -1, 0, -2])
    pad("pad_empty_f32", x, [])
    pad("pad_T_f32", rnd(4, 3).t(), [2, 1, 1, 1])
    pad("pad_expand_f32", rnd(3, 1).expand(3, 4), [1, 0])
    pad("pad_i64", torch.randint(-5, 5, (2, 3)), [1, 1], value=7.0)
    pad("pad_bool", torch.rand(2, 3) > 0.5, [0, 2], value=1.0)
    for dt in (F64, F16, BF16):
        pad("pad_" + SHORT[dt], rnd(2, 3, dtype=dt), [1, 1, 1, 0], value=0.25)


def cases(C):
    mm_cases(C)
    matmul_cases(C)
    addmm_cases(C)
    linear_cases(C)
    conv_cases(C)
    pool_cases(C)
    interp_cases(C)
    sdpa_cases(C)
    embed_pad_cases(C)
