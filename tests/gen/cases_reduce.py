"""cases_reduce.py - PyTorch reference cases of the reduce family: sum, mean,
prod, amax, amin, argmax, argmin, any, all, var, std, var_mean, logsumexp,
softmax, log_softmax, cumsum, topk, sort, layer_norm, rms_norm, batch_norm,
group_norm.

Half-precision expectations come from PyTorch when it implements the op for
the dtype on CPU, else from the float64 result rounded once (what ATen's
float-accumulating kernels approximate). Inputs are small; non-contiguous
inputs come from .t()/.transpose(), slicing with steps and .expand().
"""
import torch
import torch.nn.functional as F
from casegen import A

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16


def rnd(shape, dtype=F32, scale=1.0):
    return (torch.randn(shape, dtype=F64) * scale).to(dtype)


def rint(shape, lo, hi, dtype):
    return torch.randint(lo, hi, shape, dtype=torch.int64).to(dtype)


def distinct(shape, dtype=F32):
    """Values without ties (exact in every float dtype): a shuffled range."""
    n = 1
    for s in shape:
        n *= s
    v = (torch.randperm(n, dtype=F64) - n // 2) * 0.25
    return v.reshape(shape).to(dtype)


def run(fn, *xs):
    """fn on the inputs; half inputs fall back to float64 then round."""
    try:
        return fn(*xs)
    except RuntimeError:
        dts = [x.dtype for x in xs if isinstance(x, torch.Tensor)]
        up = [x.to(F64) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
              for x in xs]
        out = fn(*up)
        to = dts[0]
        if isinstance(out, tuple):
            return tuple(o.to(to) if o.is_floating_point() else o for o in out)
        return out.to(to)


def via64(fn, *xs):
    """fn evaluated in float64, rounded to the first input's dtype."""
    to = xs[0].dtype
    up = [x.to(F64) if isinstance(x, torch.Tensor) else x for x in xs]
    out = fn(*up)
    if isinstance(out, tuple):
        return tuple(o.to(to) if o.is_floating_point() else o for o in out)
    return out.to(to)


def dim_attrs(dim, keepdim):
    at = {}
    if dim is not None:
        at["dim"] = A.ints(dim) if isinstance(dim, (list, tuple)) else A.int(dim)
    if keepdim is not None:
        at["keepdim"] = A.bool(keepdim)
    return at


def tdims(dim):
    """torch's dim argument for a case dim (None = all)."""
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return None
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


def reduce_all_dims(fn, x, dim, keepdim):
    d = tdims(dim)
    if d is None:
        d = tuple(range(x.dim()))
    return fn(x, d, keepdim)


def noncontig(gen=rnd):
    """Named non-contiguous variants of small tensors with values from gen."""
    return [
        ("t", gen((5, 6)).t()),                           # [6, 5] transposed
        ("step", gen((4, 10))[:, ::3]),                   # [4, 4] stepped
        ("expand", gen((1, 5)).expand(3, 5)),             # [3, 5] stride 0
        ("perm3", gen((3, 4, 5)).permute(2, 0, 1)),       # [5, 3, 4]
    ]


# ---- reductions ---------------------------------------------------------------------------
SHAPES = [((), [None, 0, -1]), ((7,), [None, 0, -1, []]),
          ((3, 4, 5), [None, 1, -1, [0, 2], [-1, -3], [0, 1, 2]]),
          ((2, 3, 4, 5), [0, [1, 3], [-2, 0, 3]])]


def sum_like(C, op, tfn):
    for shape, dims in SHAPES:
        for dim in dims:
            for keep in (False, True):
                x = rnd(shape)
                if op == "prod":
                    x = 1 + 0.3 * x
                name = "%s_f32_r%d_d%s_k%d" % (op, len(shape), dim, keep)
                C.add(name, op, [x], tfn(x, dim, keep), attrs=dim_attrs(dim, keep))
    for dt in (F64, F16, BF16):
        x = rnd((4, 6), dt) if op != "prod" else (1 + 0.2 * rnd((4, 6))).to(dt)
        C.add("%s_%s" % (op, dt), op, [x], run(lambda a: tfn(a, [1], False), x),
              attrs=dim_attrs([1], False))
    for nm, x in noncontig():
        if op == "prod":
            x = 1 + 0.3 * x
        C.add("%s_nc_%s" % (op, nm), op, [x], tfn(x, [0], True), attrs=dim_attrs([0], True))
        C.add("%s_nc_%s_all" % (op, nm), op, [x], tfn(x, None, False))


def ints_accum(C, op, tfn):
    for dt, lo, hi in ((torch.int32, -5, 6), (torch.int8, -3, 4), (torch.uint8, 0, 5),
                       (torch.int64, -4, 5), (torch.int16, -3, 4)):
        x = rint((3, 5), lo, hi, dt)
        C.add("%s_%s_d1" % (op, dt), op, [x], tfn(x, 1, False), attrs=dim_attrs(1, False))
        C.add("%s_%s_all" % (op, dt), op, [x], tfn(x, None, False))
    b = torch.rand(4, 5) > 0.4
    C.add("%s_bool" % op, op, [b], tfn(b, 0, True), attrs=dim_attrs(0, True))
    x = rint((3, 4), -3, 4, torch.int32)
    C.add("%s_i32_dtype_f32" % op, op, [x], getattr(torch, op)(x, 1, dtype=F32),
          attrs={"dim": A.ints([1]), "dtype": A.dtype(F32)})
    x = rnd((3, 4)) * 3
    C.add("%s_f32_dtype_f64" % op, op, [x], getattr(torch, op)(x, 0, dtype=F64),
          attrs={"dim": A.ints([0]), "dtype": A.dtype(F64)})
    C.add("%s_f32_dtype_i32" % op, op, [x], getattr(torch, op)(x, 0, dtype=torch.int32),
          attrs={"dim": A.ints([0]), "dtype": A.dtype(torch.int32)})


def t_sum(x, dim, keep):
    d = tdims(dim)
    return torch.sum(x) if d is None and not keep else \
        torch.sum(x, d if d is not None else tuple(range(x.dim())), keep)


def t_prod(x, dim, keep):
    d = tdims(dim)
    if d is None:
        r = torch.prod(x)
        return r.reshape([1] * x.dim()) if keep else r
    ds = sorted([di % max(x.dim(), 1) for di in (d if isinstance(d, tuple) else (d,))],
                reverse=True)
    r = x
    for di in ds:
        r = torch.prod(r, di, keep) if x.dim() else torch.prod(r)
    return r


def t_mean(x, dim, keep):
    d = tdims(dim)
    return torch.mean(x) if d is None and not keep else \
        torch.mean(x, d if d is not None else tuple(range(x.dim())), keep)


def t_amax(x, dim, keep):
    d = tdims(dim)
    return torch.amax(x, d if d is not None else (), keep)


def t_amin(x, dim, keep):
    d = tdims(dim)
    return torch.amin(x, d if d is not None else (), keep)


def reductions(C):
    sum_like(C, "sum", t_sum)
    ints_accum(C, "sum", t_sum)
    sum_like(C, "prod", t_prod)
    ints_accum(C, "prod", t_prod)
    sum_like(C, "mean", t_mean)
    x = rint((3, 4), -5, 6, torch.int32)
    C.add("mean_i32_dtype_f32", "mean", [x], torch.mean(x, 1, dtype=F32),
          attrs={"dim": A.ints([1]), "dtype": A.dtype(F32)})
    x = rnd((3, 4))
    C.add("mean_f32_dtype_f64", "mean", [x], torch.mean(x, 0, dtype=F64),
          attrs={"dim": A.ints([0]), "dtype": A.dtype(F64)})
    # zero-size reductions
    z = torch.zeros(3, 0)
    C.add("sum_empty_dim", "sum", [z], torch.sum(z, 1), attrs=dim_attrs(1, False))
    C.add("prod_empty_dim", "prod", [z], torch.prod(z, 1), attrs=dim_attrs(1, False))
    C.add("sum_empty_all", "sum", [z], torch.sum(z))
    C.add("mean_empty_dim", "mean", [z], torch.mean(z, 1), attrs=dim_attrs(1, False))
    C.add("amax_keep_empty_outer", "amax", [z], torch.amax(z, 0), attrs=dim_attrs(0, False))
    minmax(C)
    argminmax(C)
    logical(C)
    variance(C)
    logsumexp(C)


def minmax(C):
    for op, fn in (("amax", t_amax), ("amin", t_amin)):
        for shape, dims in SHAPES:
            for dim in dims:
                for keep in (False, True):
                    x = rnd(shape)
                    C.add("%s_f32_r%d_d%s_k%d" % (op, len(shape), dim, keep), op, [x],
                          fn(x, dim, keep), attrs=dim_attrs(dim, keep))
        for dt in (F64, F16, BF16, torch.int32, torch.int64, torch.uint8, torch.int8):
            x = rnd((4, 5), dt) if dt in (F64, F16, BF16) else rint((4, 5), -100, 100, dt) \
                if dt != torch.uint8 else rint((4, 5), 0, 255, dt)
            C.add("%s_%s" % (op, dt), op, [x], fn(x, [-1], False), attrs=dim_attrs([-1], False))
        b = torch.rand(3, 4) > 0.5
        C.add("%s_bool" % op, op, [b], fn(b, 1, False), attrs=dim_attrs(1, False))
        for nm, x in noncontig():
            C.add("%s_nc_%s" % (op, nm), op, [x], fn(x, [1], True), attrs=dim_attrs([1], True))
        x = rnd((3, 5))
        x[1, 2] = float("nan")
        x[2, 0] = float("inf")
        x[0, 4] = float("-inf")
        C.add("%s_nan_inf" % op, op, [x], fn(x, 1, False), attrs=dim_attrs(1, False))


def argminmax(C):
    for op in ("argmax", "argmin"):
        fn = getattr(torch, op)
        for shape in ((), (7,), (3, 4, 5), (2, 3, 4, 5)):
            x = distinct(shape) if shape else rnd(shape)
            C.add("%s_r%d_flat" % (op, len(shape)), op, [x], fn(x))
            C.add("%s_r%d_flat_keep" % (op, len(shape)), op, [x], fn(x, keepdim=True),
                  attrs={"keepdim": A.bool(True)})
            for d in (0, -1):
                for keep in (False, True):
                    C.add("%s_r%d_d%d_k%d" % (op, len(shape), d, keep), op, [x],
                          fn(x, d, keep), attrs=dim_attrs(d, keep))
        # ties: first index wins
        x = torch.tensor([[1., 3., 3., 0.], [2., 2., -1., -1.], [5., 5., 5., 5.]])
        C.add("%s_ties" % op, op, [x], fn(x, 1), attrs=dim_attrs(1, None))
        C.add("%s_ties_flat" % op, op, [x], fn(x))
        xi = rint((4, 6), -3, 3, torch.int32)
        C.add("%s_i32_ties" % op, op, [xi], fn(xi, 0), attrs=dim_attrs(0, None))
        xn = rnd((3, 5))
        xn[1, 3] = float("nan")
        xn[1, 4] = float("nan")
        C.add("%s_nan" % op, op, [xn], fn(xn, 1), attrs=dim_attrs(1, None))
        for dt in (F64, F16, BF16, torch.uint8, torch.int64):
            x = distinct((4, 5), dt) if dt.is_floating_point else \
                torch.randperm(20).reshape(4, 5).to(dt)
            C.add("%s_%s" % (op, dt), op, [x], fn(x, -1), attrs=dim_attrs(-1, None))
        for nm, x in noncontig(distinct):
            C.add("%s_nc_%s" % (op, nm), op, [x], fn(x, 1, True), attrs=dim_attrs(1, True))


def t_any(x, dim, keep):
    r = reduce_all_dims(lambda a, d, k: (a != 0).sum(d, keepdim=k) > 0, x, dim, keep)
    return r.to(torch.uint8) if x.dtype == torch.uint8 else r


def t_all(x, dim, keep):
    r = reduce_all_dims(lambda a, d, k: (a == 0).sum(d, keepdim=k) == 0, x, dim, keep)
    return r.to(torch.uint8) if x.dtype == torch.uint8 else r


def logical(C):
    for op, fn, tfn in (("any", t_any, torch.any), ("all", t_all, torch.all)):
        b = torch.rand(3, 4, 5) > 0.3
        for dim in (None, 0, -1, [0, 2]):
            for keep in (False, True):
                C.add("%s_bool_d%s_k%d" % (op, dim, keep), op, [b], fn(b, dim, keep),
                      attrs=dim_attrs(dim, keep))
        # single-dim cases straight from torch
        C.add("%s_torch_d1" % op, op, [b], tfn(b, 1), attrs=dim_attrs(1, None))
        C.add("%s_torch_all" % op, op, [b], tfn(b))
        xf = rnd((4, 5))
        xf[xf.abs() < 0.8] = 0
        xf[0] = 0
        xf[1, 1] = float("nan")
        C.add("%s_f32" % op, op, [xf], tfn(xf, 1), attrs=dim_attrs(1, None))
        xi = rint((4, 5), -1, 2, torch.int32)
        C.add("%s_i32" % op, op, [xi], tfn(xi, 0), attrs=dim_attrs(0, None))
        xu = rint((4, 5), 0, 2, torch.uint8)
        C.add("%s_u8" % op, op, [xu], tfn(xu, 1), attrs=dim_attrs(1, None))
        C.add("%s_u8_all" % op, op, [xu], tfn(xu))
        s = torch.tensor(True)
        C.add("%s_scalar" % op, op, [s], tfn(s))
        e = torch.zeros(2, 0, dtype=torch.bool)
        C.add("%s_empty" % op, op, [e], tfn(e, 1), attrs=dim_attrs(1, None))
        for nm, x in noncontig():
            xb = x > 0
            C.add("%s_nc_%s" % (op, nm), op, [xb], fn(xb, [0], False),
                  attrs=dim_attrs([0], False))


def var_float_corr(op, x, dim, corr):
    """var/std/var_mean with a fractional correction (torch 1.13 takes ints
    only): sum of squared deviations / (n - corr) in float64."""
    x64 = x.to(F64)
    mean = x64.mean(dim)
    var = ((x64 - mean.unsqueeze(dim)) ** 2).sum(dim) / (x.shape[dim] - corr)
    if op == "std":
        return var.sqrt().to(x.dtype)
    if op == "var_mean":
        return var.to(x.dtype), mean.to(x.dtype)
    return var.to(x.dtype)


def variance(C):
    for op in ("var", "std", "var_mean"):
        fn = getattr(torch, op)
        for shape, dims in SHAPES[1:]:
            for dim in dims:
                for keep in (False, True):
                    x = rnd(shape) * 2 + 1
                    d = tdims(dim)
                    want = fn(x, d if d is not None else tuple(range(x.dim())), keepdim=keep)
                    C.add("%s_r%d_d%s_k%d" % (op, len(shape), dim, keep), op, [x], want,
                          attrs=dim_attrs(dim, keep))
        x = rnd((4, 6)) + 3
        for corr in (0, 2):
            C.add("%s_corr%d" % (op, corr), op, [x], fn(x, 1, correction=corr),
                  attrs={"dim": A.ints([1]), "correction": A.int(corr)})
        C.add("%s_corr_float" % op, op, [x], var_float_corr(op, x, 1, 0.5),
              attrs={"dim": A.ints([1]), "correction": A.float(0.5)})
        C.add("%s_unbiased_false" % op, op, [x], fn(x, 0, unbiased=False),
              attrs={"dim": A.ints([0]), "unbiased": A.bool(False)})
        C.add("%s_unbiased_true" % op, op, [x], fn(x, 0, unbiased=True),
              attrs={"dim": A.ints([0]), "unbiased": A.bool(True)})
        C.add("%s_all" % op, op, [x], fn(x))
        C.add("%s_one_elem" % op, op, [x[:, :1]], fn(x[:, :1], 1),
              attrs={"dim": A.ints([1])})
        C.add("%s_big_corr" % op, op, [x], fn(x, 1, correction=7),
              attrs={"dim": A.ints([1]), "correction": A.int(7)})
        for dt in (F64, F16, BF16):
            xh = (rnd((3, 8)) + 2).to(dt)
            C.add("%s_%s" % (op, dt), op, [xh], run(lambda a: fn(a, 1), xh),
                  attrs={"dim": A.ints([1])})
        for nm, xn in noncontig():
            C.add("%s_nc_%s" % (op, nm), op, [xn], fn(xn, [0], keepdim=True),
                  attrs=dim_attrs([0], True))
        s = rnd(())
        C.add("%s_scalar" % op, op, [s], fn(s, unbiased=False),
              attrs={"unbiased": A.bool(False)})


def logsumexp(C):
    op = "logsumexp"
    for shape, dims in SHAPES:
        for dim in dims:
            if dim is None or dim == []:
                continue
            for keep in (False, True):
                x = rnd(shape, scale=3)
                d = tdims(dim)
                C.add("lse_r%d_d%s_k%d" % (len(shape), dim, keep), op, [x],
                      torch.logsumexp(x, d, keep), attrs=dim_attrs(dim, keep))
    x = rnd((3, 6)) * 1000
    C.add("lse_large", op, [x], torch.logsumexp(x, 1), attrs=dim_attrs(1, None))
    C.add("lse_large_neg", op, [-x.abs() - 5000], torch.logsumexp(-x.abs() - 5000, 1),
          attrs=dim_attrs(1, None))
    x = rnd((4, 5))
    x[0] = float("-inf")
    x[1, 2] = float("inf")
    x[2, 3] = float("nan")
    x[3, :2] = float("-inf")
    C.add("lse_inf_nan", op, [x], torch.logsumexp(x, 1), attrs=dim_attrs(1, None))
    for dt in (F64, F16, BF16):
        xh = rnd((3, 7), dt, scale=4)
        C.add("lse_%s" % dt, op, [xh], run(lambda a: torch.logsumexp(a, 1), xh),
              attrs=dim_attrs(1, None))
    xi = rint((3, 4), -3, 4, torch.int32)
    C.add("lse_i32", op, [xi], torch.logsumexp(xi, 1), attrs=dim_attrs(1, None))
    for nm, xn in noncontig():
        C.add("lse_nc_%s" % nm, op, [xn], torch.logsumexp(xn, [0, 1]),
              attrs=dim_attrs([0, 1], None))
    z = torch.zeros(2, 0)
    C.add("lse_empty", op, [z], torch.logsumexp(z, 1), attrs=dim_attrs(1, None))


# ---- ops along a dim -------------------------------------------------------------------------
def softmaxes(C):
    for op, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
        for shape, dims in (((), (0, -1)), ((7,), (0,)), ((3, 4, 5), (0, 1, -1)),
                            ((2, 3, 4, 5), (1, -1))):
            for d in dims:
                x = rnd(shape, scale=2)
                C.add("%s_r%d_d%d" % (op, len(shape), d), op, [x], fn(x, d),
                      attrs={"dim": A.int(d)})
        x = rnd((4, 6)) * 1000
        C.add("%s_large" % op, op, [x], fn(x, 1), attrs={"dim": A.int(1)})
        C.add("%s_large_shift" % op, op, [x + 1e4], fn(x + 1e4, 0), attrs={"dim": A.int(0)})
        x = rnd((3, 5))
        x[0, :3] = float("-inf")
        x[1, 0] = float("-inf")
        C.add("%s_neg_inf" % op, op, [x], fn(x, 1), attrs={"dim": A.int(1)})
        for dt in (F64, F16, BF16):
            xh = rnd((3, 8), dt, scale=3)
            C.add("%s_%s" % (op, dt), op, [xh], run(lambda a: fn(a, -1), xh),
                  attrs={"dim": A.int(-1)})
        x = rnd((3, 4))
        C.add("%s_dtype_f64" % op, op, [x], fn(x, 1, dtype=F64),
              attrs={"dim": A.int(1), "dtype": A.dtype(F64)})
        xh = rnd((3, 4), F16)
        C.add("%s_f16_dtype_f32" % op, op, [xh], fn(xh, 1, dtype=F32),
              attrs={"dim": A.int(1), "dtype": A.dtype(F32)})
        xi = rint((3, 4), -3, 4, torch.int64)
        C.add("%s_i64_dtype_f32" % op, op, [xi], fn(xi, 1, dtype=F32),
              attrs={"dim": A.int(1), "dtype": A.dtype(F32)})
        for nm, xn in noncontig():
            C.add("%s_nc_%s" % (op, nm), op, [xn], fn(xn, 0), attrs={"dim": A.int(0)})
            C.add("%s_nc_%s_last" % (op, nm), op, [xn], fn(xn, -1), attrs={"dim": A.int(-1)})


def cumsums(C):
    op = "cumsum"
    for shape, dims in (((), (0, -1)), ((7,), (0,)), ((3, 4, 5), (0, 1, -1)),
                        ((2, 3, 4, 5), (2,))):
        for d in dims:
            x = rnd(shape)
            C.add("cumsum_r%d_d%d" % (len(shape), d), op, [x], torch.cumsum(x, d),
                  attrs={"dim": A.int(d)})
    for dt in (F64, F16, BF16):
        x = rnd((3, 6), dt)
        C.add("cumsum_%s" % dt, op, [x], run(lambda a: torch.cumsum(a, 1), x),
              attrs={"dim": A.int(1)})
    for dt in (torch.int32, torch.int8, torch.uint8, torch.int64):
        x = rint((3, 6), 0 if dt == torch.uint8 else -50, 100, dt)
        C.add("cumsum_%s" % dt, op, [x], torch.cumsum(x, 1), attrs={"dim": A.int(1)})
    b = torch.rand(3, 6) > 0.5
    C.add("cumsum_bool", op, [b], torch.cumsum(b, 0), attrs={"dim": A.int(0)})
    xi = rint((3, 5), -100, 100, torch.int32)
    C.add("cumsum_i32_dtype_i16", op, [xi], torch.cumsum(xi, 1, dtype=torch.int16),
          attrs={"dim": A.int(1), "dtype": A.dtype(torch.int16)})
    C.add("cumsum_i32_dtype_f32", op, [xi], torch.cumsum(xi, 1, dtype=F32),
          attrs={"dim": A.int(1), "dtype": A.dtype(F32)})
    x = rnd((2, 5))
    x[0, 2] = float("nan")
    x[1, 1] = float("inf")
    C.add("cumsum_nan_inf", op, [x], torch.cumsum(x, 1), attrs={"dim": A.int(1)})
    for nm, xn in noncontig():
        C.add("cumsum_nc_%s" % nm, op, [xn], torch.cumsum(xn, 0), attrs={"dim": A.int(0)})
    z = torch.zeros(2, 0)
    C.add("cumsum_empty", op, [z], torch.cumsum(z, 1), attrs={"dim": A.int(1)})


def sorts(C):
    op = "sort"
    for shape, dims in (((), (0,)), ((9,), (0, -1)), ((3, 4, 5), (0, 1, -1)),
                        ((2, 3, 4, 5), (1,))):
        for d in dims:
            for desc in (False, True):
                x = distinct(shape) if shape else rnd(shape)
                C.add("sort_r%d_d%d_desc%d" % (len(shape), d, desc), op, [x],
                      torch.sort(x, dim=d, descending=desc),
                      attrs={"dim": A.int(d), "descending": A.bool(desc)})
    x = distinct((4, 7))
    C.add("sort_default", op, [x], torch.sort(x))
    for dt in (F64, F16, BF16, torch.int32, torch.int64, torch.uint8, torch.int8):
        x = distinct((3, 8), dt) if dt.is_floating_point else \
            torch.randperm(24).reshape(3, 8).to(dt)
        for desc in (False, True):
            C.add("sort_%s_desc%d" % (dt, desc), op, [x], torch.sort(x, descending=desc),
                  attrs={"descending": A.bool(desc)})
    # ties with stable=True: original order kept (both directions)
    xt = rint((3, 10), 0, 4, torch.int64)
    for desc in (False, True):
        C.add("sort_stable_ties_desc%d" % desc, op, [xt],
              torch.sort(xt, dim=1, descending=desc, stable=True),
              attrs={"dim": A.int(1), "descending": A.bool(desc), "stable": A.bool(True)})
    xf = rint((3, 10), 0, 3, torch.int64).to(F32)
    C.add("sort_unstable_ties", op, [xf], torch.sort(xf, dim=1), attrs={"dim": A.int(1)},
          check="sorted_last")
    b = torch.rand(2, 6) > 0.5
    C.add("sort_bool_stable", op, [b], torch.sort(b, stable=True),
          attrs={"stable": A.bool(True)})
    xn = distinct((2, 6))
    xn[0, 1] = float("nan")
    xn[1, 4] = float("inf")
    xn[1, 0] = float("-inf")
    for desc in (False, True):
        C.add("sort_nan_desc%d" % desc, op, [xn], torch.sort(xn, descending=desc),
              attrs={"descending": A.bool(desc)})
    for nm, x in noncontig(distinct):
        C.add("sort_nc_%s" % nm, op, [x], torch.sort(x, 1), attrs={"dim": A.int(1)})


def topks(C):
    op = "topk"
    for shape, d, ks in (((9,), 0, (1, 4, 9)), ((3, 4, 5), 1, (2, 4)), ((3, 4, 5), -1, (3,)),
                         ((2, 3, 4, 5), 0, (1, 2))):
        for k in ks:
            for largest in (True, False):
                x = distinct(shape)
                C.add("topk_r%d_d%d_k%d_l%d" % (len(shape), d, k, largest), op, [x],
                      torch.topk(x, k, dim=d, largest=largest),
                      attrs={"k": A.int(k), "dim": A.int(d), "largest": A.bool(largest)})
    x = distinct((4, 6))
    C.add("topk_default_dim", op, [x], torch.topk(x, 3), attrs={"k": A.int(3)})
    C.add("topk_sorted_true", op, [x], torch.topk(x, 2, sorted=True),
          attrs={"k": A.int(2), "sorted": A.bool(True)})
    C.add("topk_k0", op, [x], torch.topk(x, 0), attrs={"k": A.int(0)})
    s = rnd(())
    C.add("topk_scalar", op, [s], torch.topk(s, 1), attrs={"k": A.int(1)})
    for dt in (F64, F16, BF16, torch.int32, torch.int64, torch.uint8):
        x = distinct((3, 8), dt) if dt.is_floating_point else \
            torch.randperm(24).reshape(3, 8).to(dt)
        C.add("topk_%s" % dt, op, [x], run(lambda a: torch.topk(a, 3), x), attrs={"k": A.int(3)})
    xn = distinct((2, 6))
    xn[0, 3] = float("nan")
    C.add("topk_nan_largest", op, [xn], torch.topk(xn, 2), attrs={"k": A.int(2)})
    for nm, x in noncontig(distinct):
        C.add("topk_nc_%s" % nm, op, [x], torch.topk(x, 2, dim=0),
              attrs={"k": A.int(2), "dim": A.int(0)})


# ---- normalisations -------------------------------------------------------------------------
def layer_norms(C):
    op = "layer_norm"
    for shape, ns in (((4, 6), [6]), ((2, 3, 4), [3, 4]), ((2, 3, 4), [4]), ((5,), [5]),
                      ((2, 2, 3, 4), [2, 3, 4])):
        x = rnd(shape, scale=2) + 1
        w = rnd(ns)
        b = rnd(ns)
        for tag, ins in (("wb", [x, w, b]), ("w", [x, w, None]), ("none", [x]),
                         ("b", [x, None, b])):
            C.add("ln_r%d_n%d_%s" % (len(shape), len(ns), tag), op, ins,
                  F.layer_norm(x, ns, ins[1] if len(ins) > 1 else None,
                               ins[2] if len(ins) > 2 else None),
                  attrs={"normalized_shape": A.ints(ns)})
    x = rnd((3, 5))
    C.add("ln_eps", op, [x], F.layer_norm(x, [5], eps=0.1),
          attrs={"normalized_shape": A.ints([5]), "eps": A.float(0.1)})
    for dt in (F64, F16, BF16):
        x = rnd((3, 8), dt)
        w = rnd((8,), dt)
        b = rnd((8,), dt)
        C.add("ln_%s" % dt, op, [x, w, b], run(lambda a, c, e: F.layer_norm(a, [8], c, e),
                                                x, w, b),
              attrs={"normalized_shape": A.ints([8])})
    for nm, xn in noncontig():
        n = xn.shape[-1]
        w = rnd((n, 2))[:, 0]
        C.add("ln_nc_%s" % nm, op, [xn, w, None], F.layer_norm(xn, [n], w),
              attrs={"normalized_shape": A.ints([n])})
    op = "rms_norm"
    for shape, ns in (((4, 6), [6]), ((2, 3, 4), [3, 4]), ((5,), [5])):
        x = rnd(shape, scale=2)
        w = rnd(ns)
        for dt in (F32, F64, F16, BF16):
            xd, wd = x.to(dt), w.to(dt)
            eps = torch.finfo(dt).eps
            dims = tuple(range(-len(ns), 0))
            C.add("rms_r%d_%s" % (len(shape), dt), op, [xd, wd],
                  via64(lambda a, c: a * torch.rsqrt(a.pow(2).mean(dims, keepdim=True) + eps)
                        * c, xd, wd),
                  attrs={"normalized_shape": A.ints(ns)})
        C.add("rms_r%d_noweight_eps" % len(shape), op, [x],
              via64(lambda a: a * torch.rsqrt(a.pow(2).mean(dims, keepdim=True) + 1e-3), x),
              attrs={"normalized_shape": A.ints(ns), "eps": A.float(1e-3)})
    xn = rnd((6, 4)).t()
    C.add("rms_nc_t", op, [xn], via64(lambda a: a * torch.rsqrt(
        a.pow(2).mean(-1, keepdim=True) + torch.finfo(F32).eps), xn),
        attrs={"normalized_shape": A.ints([6])})


def batch_norms(C):
    op = "batch_norm"
    for shape in ((4, 3), (2, 3, 5), (2, 3, 4, 5)):
        cdim = shape[1]
        x = rnd(shape, scale=2)
        rm, rv = rnd((cdim,)), torch.rand(cdim) + 0.5
        w, b = rnd((cdim,)), rnd((cdim,))
        for tag, ww, bb in (("wb", w, b), ("none", None, None), ("w", w, None)):
            C.add("bn_r%d_%s" % (len(shape), tag), op, [x, ww, bb, rm, rv],
                  F.batch_norm(x, rm, rv, ww, bb, training=False),
                  attrs={"training": A.bool(False), "momentum": A.float(0.1)})
    x = rnd((2, 3, 4))
    rm, rv = rnd((3,)), torch.rand(3) + 0.5
    C.add("bn_eps", op, [x, None, None, rm, rv],
          F.batch_norm(x, rm, rv, eps=0.3), attrs={"eps": A.float(0.3)})
    for dt in (F64, F16, BF16):
        xd = rnd((2, 4, 3), dt)
        rmd, rvd = rnd((4,), dt), (torch.rand(4) + 0.5).to(dt)
        wd, bd = rnd((4,), dt), rnd((4,), dt)
        C.add("bn_%s" % dt, op, [xd, wd, bd, rmd, rvd],
              run(lambda a, m, v, c, e: F.batch_norm(a, m, v, c, e), xd, rmd, rvd, wd, bd))
    xn = rnd((2, 5, 3, 4)).transpose(1, 3)  # [2, 4, 3, 5]
    rm, rv = rnd((4,)), torch.rand(4) + 0.5
    C.add("bn_nc", op, [xn, None, None, rm, rv], F.batch_norm(xn, rm, rv))


def group_norms(C):
    op = "group_norm"
    for shape, g in (((2, 6, 4), 3), ((2, 4, 3, 3), 2), ((3, 4), 1), ((2, 4, 5), 4),
                     ((1, 6, 2, 2, 2), 2)):
        cdim = shape[1]
        x = rnd(shape, scale=2) + 0.5
        w, b = rnd((cdim,)), rnd((cdim,))
        for tag, ww, bb in (("wb", w, b), ("none", None, None), ("b", None, b)):
            C.add("gn_r%d_g%d_%s" % (len(shape), g, tag), op, [x, ww, bb],
                  F.group_norm(x, g, ww, bb), attrs={"num_groups": A.int(g)})
    x = rnd((2, 4, 3))
    C.add("gn_eps", op, [x], F.group_norm(x, 2, eps=0.2),
          attrs={"num_groups": A.int(2), "eps": A.float(0.2)})
    for dt in (F64, F16, BF16):
        xd = rnd((2, 6, 3), dt)
        wd, bd = rnd((6,), dt), rnd((6,), dt)
        C.add("gn_%s" % dt, op, [xd, wd, bd],
              run(lambda a, c, e: F.group_norm(a, 3, c, e), xd, wd, bd),
              attrs={"num_groups": A.int(3)})
    xn = rnd((2, 5, 6)).transpose(1, 2)  # [2, 6, 5]
    w = rnd((6, 2))[:, 1]
    C.add("gn_nc", op, [xn, w, None], F.group_norm(xn, 2, w), attrs={"num_groups": A.int(2)})


# ---- rows long enough for the cuda backend's row kernels -----------------------------------
def cuda_rows(C):
    """Shapes for the cuda code generator's reduction paths: vector row
    access (row lengths divisible by the vector width or not, bf16 / f64 /
    int widths, a row stride that breaks alignment), rows held in registers
    (several rows per block, one row per 512 threads), column reductions
    over many rows, argmax/argmin ties across lanes."""
    def sm(nm, x, d=-1):
        C.add("rows_softmax_%s" % nm, "softmax", [x], run(lambda a: torch.softmax(a, d), x),
              attrs={"dim": A.int(d)})
    sm("f32_3x1000", rnd((3, 1000), scale=3))
    sm("f32_1x2064", rnd((1, 2064), scale=3))
    sm("bf16_2x520", rnd((2, 520), BF16, scale=3))
    sm("f32_20x100", rnd((20, 100), scale=3))
    sm("f32_2x1026", rnd((2, 1026), scale=3))
    for nm, x in (("f32_3x512", rnd((3, 512), scale=2) + 1), ("bf16_2x520", rnd((2, 520), BF16)),
                  ("f32_2x514", rnd((2, 514)))):
        n = x.shape[-1]
        w, b = rnd((n,), x.dtype), rnd((n,), x.dtype)
        C.add("rows_ln_%s" % nm, "layer_norm", [x, w, b],
              run(lambda a, c, e: F.layer_norm(a, [n], c, e), x, w, b),
              attrs={"normalized_shape": A.ints([n])})
    for dt in (F32, BF16):
        x, w = rnd((2, 768), dt, scale=2), rnd((768,), dt)
        eps = torch.finfo(dt).eps
        C.add("rows_rms_%s" % dt, "rms_norm", [x, w],
              via64(lambda a, c: a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + eps) * c, x, w),
              attrs={"normalized_shape": A.ints([768])})
    xs = [("f32_3x516", rnd((3, 516))), ("bf16_2x516", rnd((2, 516), BF16)),
          ("f32_stride515", rnd((3, 515))[:, :512]), ("f32_from4", rnd((3, 520))[:, 4:516]),
          ("i32_3x512", rint((3, 512), -50, 50, torch.int32)),
          ("i64_2x512", rint((2, 512), -50, 50, torch.int64))]
    for nm, x in xs:
        C.add("rows_sum_%s" % nm, "sum", [x], run(lambda a: a.sum(1), x), attrs=dim_attrs(1, None))
    for nm, x in (("f32_130x40", rnd((130, 40))), ("bf16_100x24", rnd((100, 24), BF16))):
        C.add("rows_colsum_%s" % nm, "sum", [x], run(lambda a: a.sum(0), x),
              attrs=dim_attrs(0, None))
    for nm, x in (("f32_2x1024", rnd((2, 1024)) + 3), ("bf16_2x520", rnd((2, 520), BF16))):
        C.add("rows_var_mean_%s" % nm, "var_mean", [x], run(lambda a: torch.var_mean(a, 1), x),
              attrs={"dim": A.ints([1])})
    x = rint((4, 512), 0, 4, torch.int64).to(F32)
    C.add("rows_argmax_ties", "argmax", [x], torch.argmax(x, 1), attrs=dim_attrs(1, None))
    x = rint((2, 520), 0, 4, torch.int64).to(BF16)
    C.add("rows_argmin_ties_bf16", "argmin", [x], torch.argmin(x, 1), attrs=dim_attrs(1, None))
    x = rnd((2, 600), F64)
    C.add("rows_amax_f64", "amax", [x], torch.amax(x, 1), attrs=dim_attrs(1, None))


# ---- few huge rows: the cuda backend's split reductions ------------------------------------
def cuda_split(C):
    """Rows long enough (>= 16384 elements, at most a few rows) for the cuda
    backend to split each row over several blocks (partials + a last-block
    fold): every reduction kind, f32/bf16/f64/int, row lengths that allow
    vector access or not, full reductions and [rows, n] row reductions.
    Values are small integers (or +-1 / 2 / 0.5 for prod) so the expected
    sums are exact and the JSON stays compact."""
    def small(shape, dt, lo=-3, hi=4):
        return rint(shape, lo, hi, dt)

    def red(nm, op, x, out, dim):
        C.add("split_%s_%s" % (op, nm), op, [x], out, attrs=dim_attrs(dim, None) if dim is not None
              else None)
    x = small((16384,), F32)
    red("f32_all_16384", "sum", x, x.sum(), None)
    x = small((2, 8219), F32)
    red("f32_all_2x8219", "sum", x, x.sum(), None)
    x = small((2, 16387), F32)
    red("f32_rows_2x16387", "sum", x, x.sum(1), 1)
    x = small((2, 16384), BF16)
    red("bf16_rows_2x16384", "sum", x, run(lambda a: a.sum(1), x), 1)
    x = small((16384,), F64)
    red("f64_all_16384", "mean", x, x.mean(), None)
    x = small((128, 130), F32)
    red("f32_all_128x130", "mean", x, x.mean(), None)
    x = small((16400,), torch.int32, -50, 50)
    red("i32_all_16400", "sum", x, x.sum(), None)
    x = small((1, 16384), torch.int8)
    red("i8_rows_1x16384", "sum", x, x.sum(1), 1)
    x = small((16387,), F32, -1000, 1000)
    red("f32_all_16387", "amax", x, x.amax(), None)
    x = small((1, 16384), torch.int64, -1000, 1000)
    red("i64_rows_1x16384", "amin", x, x.amin(1), 1)
    v = torch.tensor([1., -1., 1., 1., 1., -1., 1., -1.] * 12 + [2., 0.5, 2., 0.5])
    x = v[torch.randint(0, 100, (16384,))]
    red("f32_all_16384", "prod", x, x.prod(), None)
    x = small((16389,), F32, 0, 30)
    C.add("split_argmax_f32_ties", "argmax", [x], torch.argmax(x))
    x = small((1, 16384), BF16, 0, 30)
    C.add("split_argmin_bf16_ties", "argmin", [x], torch.argmin(x, 1), attrs=dim_attrs(1, None))
    b = torch.ones(16384, dtype=torch.bool)
    b[16383] = False
    C.add("split_all_bool", "all", [b], torch.all(b))
    b = torch.zeros(2, 16384, dtype=torch.bool)
    b[1, 15000] = True
    C.add("split_any_bool_rows", "any", [b], torch.any(b, 1), attrs=dim_attrs(1, None))
    x = small((16384,), F32) + 0.5
    C.add("split_var_mean_f32_all", "var_mean", [x], torch.var_mean(x))

# ---- cuda column splits and prefetched rows -----------------------------------------------
def cuda_cols(C):
    """Column reductions over few columns and many rows, whose rows the cuda
    backend splits over blocks (per-column partials, the last block of a
    column tile folds them): sums, a mean with a ragged last tile, argmax
    with ties across chunks (the first index wins) - and a bf16 softmax with
    rows long enough to be prefetched a tile ahead."""
    def small(shape, dt, lo=-3, hi=4):
        return rint(shape, lo, hi, dt)

    def col(nm, op, x, out):
        C.add("colsplit_%s_%s" % (op, nm), op, [x], out, attrs=dim_attrs(0, None))
    x = small((520, 40), F32)
    col("f32_520x40", "sum", x, x.sum(0))
    x = small((600, 24), BF16)
    col("bf16_600x24", "sum", x, run(lambda a: a.sum(0), x))
    x = small((600, 33), F32)
    col("f32_600x33", "mean", x, x.mean(0))
    x = small((700, 20), F32, 0, 30)
    C.add("colsplit_argmax_f32_ties", "argmax", [x], torch.argmax(x, 0), attrs={"dim": A.int(0)})
    x = rnd((3, 2048), BF16, scale=3)
    C.add("rows_softmax_bf16_3x2048", "softmax", [x], run(lambda a: torch.softmax(a, -1), x),
          attrs={"dim": A.int(-1)})


def cases(C):
    reductions(C)
    softmaxes(C)
    cumsums(C)
    sorts(C)
    topks(C)
    layer_norms(C)
    batch_norms(C)
    group_norms(C)
    cuda_rows(C)
    cuda_split(C)
    cuda_cols(C)
