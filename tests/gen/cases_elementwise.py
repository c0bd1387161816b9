"""cases_elementwise.py - PyTorch reference cases for the elementwise family:
unary math, binary ops with ATen type promotion (rank-0 tensors and Python
scalars given as attribute `other`), where/clamp/masked_fill/to_dtype/
dropout, creation ops, and shape-only checks of the random ops.

torch 1.13's CPU kernels lack many float16 ops (exp, sin, clamp, ...): for
those the expectation is the same torch call on float32 copies rounded once
to float16, which is how ATen computes half precision (float op-math) where
it has the kernel.
"""
import math

import torch
import torch.nn.functional as F

from casegen import A, DTYPES

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I8, I16, I32, I64, U8, BOOL = (torch.int8, torch.int16, torch.int32, torch.int64,
                               torch.uint8, torch.bool)
FLOATS = [F32, F64, F16, BF16]
INTS = [I8, I16, I32, I64, U8]
NAN, INF = float("nan"), float("inf")


def dn(dt):
    return DTYPES[dt]


def rnd(shape, dt, lo=-4.0, hi=4.0, whole=False):
    """Random tensor: uniform floats in [lo, hi) (whole numbers if `whole`),
    ints in [lo, hi] (u8 >= 0)."""
    if dt == BOOL:
        return torch.rand(shape) > 0.5
    if dt.is_floating_point:
        v = torch.rand(shape, dtype=F64) * (hi - lo) + lo
        return (v.round() if whole else v).to(dt)
    info = torch.iinfo(dt)
    ilo, ihi = max(int(lo), info.min), min(int(hi), info.max)
    return torch.randint(ilo, ihi + 1, shape, dtype=dt)


def nonzero(t):
    """Replaces zeros by ones (integer divisors)."""
    return torch.where(t == 0, torch.ones_like(t), t)


def with_edges(t, edges):
    """Copy of a 1-D float tensor with its first elements set to edges."""
    t = t.clone()
    n = min(len(edges), t.numel())
    t[:n] = torch.tensor(edges[:n], dtype=F64).to(t.dtype)
    return t


def call(fn, *args):
    """fn(*args); if torch lacks the half/bfloat16 CPU kernel, runs on float32
    copies and rounds float results to the low-precision dtype."""
    try:
        return fn(*args)
    except RuntimeError as e:
        if "Half" not in str(e) and "BFloat16" not in str(e):
            raise
    low = next(a.dtype for a in args if isinstance(a, torch.Tensor) and a.dtype in (F16, BF16))
    up = [a.float() if isinstance(a, torch.Tensor) and a.dtype in (F16, BF16) else a
          for a in args]
    r = fn(*up)
    return r.to(low) if r.is_floating_point() else r


def fattr(v):
    """Float attribute; NaN and infinities as the strings the loader reads
    (A.float would write a bare NaN token, which is not JSON)."""
    v = float(v)
    if math.isnan(v):
        return {"float": "nan"}
    if math.isinf(v):
        return {"float": "inf" if v > 0 else "-inf"}
    return A.float(v)


def scalar_attr(v):
    if isinstance(v, bool):
        return A.bool(v)
    if isinstance(v, int):
        return A.int(v)
    return fattr(v)


def layouts(shape, dt, gen):
    """(tag, tensor) pairs: contiguous, transposed, strided and expanded
    layouts of the same logical shape (2-D shapes)."""
    r, c = shape
    yield "contig", gen((r, c), dt)
    yield "t", gen((c, r), dt).t()
    yield "step", gen((r * 2, c), dt)[::2]
    yield "expand", gen((r, 1), dt).expand(r, c)


# ---- unary ----------------------------------------------------------------------------

def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


# op -> (torch function, float domain lo, hi, float edge values, integer inputs allowed)
FLOAT_EDGES = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 0.5, -2.5]
POS_EDGES = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 1e-3]
UNARY = {
    "neg": (torch.neg, -4, 4, FLOAT_EDGES, True),
    "abs": (torch.abs, -4, 4, FLOAT_EDGES, True),
    "exp": (torch.exp, -5, 5, FLOAT_EDGES, True),
    "exp2": (torch.exp2, -5, 5, FLOAT_EDGES, True),
    "expm1": (torch.expm1, -3, 3, FLOAT_EDGES + [1e-5], True),
    "log": (torch.log, 0.01, 10, POS_EDGES, True),
    "log2": (torch.log2, 0.01, 10, POS_EDGES, True),
    "log1p": (torch.log1p, -0.9, 10, POS_EDGES + [1e-6], True),
    "sqrt": (torch.sqrt, 0.0, 10, POS_EDGES, True),
    "rsqrt": (torch.rsqrt, 0.05, 10, POS_EDGES, True),
    "sin": (torch.sin, -6, 6, FLOAT_EDGES, True),
    "cos": (torch.cos, -6, 6, FLOAT_EDGES, True),
    "tan": (torch.tan, -1.3, 1.3, FLOAT_EDGES, True),
    "tanh": (torch.tanh, -4, 4, FLOAT_EDGES, True),
    "sigmoid": (torch.sigmoid, -8, 8, FLOAT_EDGES, True),
    "relu": (torch.relu, -4, 4, FLOAT_EDGES, True),
    "gelu": (F.gelu, -4, 4, FLOAT_EDGES, False),
    "silu": (F.silu, -6, 6, FLOAT_EDGES, False),
    "erf": (torch.erf, -3, 3, FLOAT_EDGES, True),
    "floor": (torch.floor, -4, 4, FLOAT_EDGES, True),
    "ceil": (torch.ceil, -4, 4, FLOAT_EDGES, True),
    "round": (torch.round, -4, 4, FLOAT_EDGES + [1.5, 2.5, -0.5, 3.5], True),
    "trunc": (torch.trunc, -4, 4, FLOAT_EDGES, True),
    "reciprocal": (torch.reciprocal, -4, 4, FLOAT_EDGES, True),
    "sign": (torch.sign, -4, 4, FLOAT_EDGES, True),
    "logical_not": (torch.logical_not, -2, 2, FLOAT_EDGES, True),
    "isnan": (torch.isnan, -2, 2, FLOAT_EDGES, True),
    "isinf": (torch.isinf, -2, 2, FLOAT_EDGES, True),
}
# ops that take bool inputs in ATen
UNARY_BOOL_OK = {"exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "sin", "cos",
                 "tan", "tanh", "sigmoid", "erf", "reciprocal", "sign", "logical_not", "isnan",
                 "isinf"}


def unary_cases(C):
    for op, (fn, lo, hi, edges, ints_ok) in UNARY.items():
        gen = lambda shape, dt: rnd(shape, dt, lo, hi)  # noqa: E731
        for dt in FLOATS:
            x = with_edges(gen((24,), dt), edges)
            C.add("%s_%s_edges" % (op, dn(dt)), op, [x], call(fn, x))
            for tag, x in layouts((3, 4), dt, gen):
                C.add("%s_%s_%s" % (op, dn(dt), tag), op, [x], call(fn, x))
        C.add("%s_f32_rank0" % op, op, [torch.tensor(0.75)], fn(torch.tensor(0.75)))
        C.add("%s_f32_empty" % op, op, [torch.zeros(0, 3)], fn(torch.zeros(0, 3)))
        if ints_ok:
            ilo, ihi = (0, 9) if lo >= 0 else (-4, 4)
            for dt in INTS:
                x = rnd((3, 5), dt, ilo, ihi)
                C.add("%s_%s" % (op, dn(dt)), op, [x], fn(x))
            x = rnd((5, 3), I32, ilo, ihi).t()
            C.add("%s_i32_t" % op, op, [x], fn(x))
            if op in ("abs", "neg"):
                x = torch.tensor([-128, 127, 0, -1, 5], dtype=I8)
                C.add("%s_i8_wrap" % op, op, [x], fn(x))
        if op in UNARY_BOOL_OK:
            x = torch.tensor([[True, False, True], [False, False, True]])
            C.add("%s_bool" % op, op, [x], fn(x))
    # gelu tanh approximation
    for dt in FLOATS:
        x = with_edges(rnd((20,), dt, -5, 5), FLOAT_EDGES)
        C.add("gelu_tanh_%s" % dn(dt), "gelu", [x], call(gelu_tanh, x),
              attrs={"approximate": A.string("tanh")})
    x = rnd((4, 3), F32).t()
    C.add("gelu_none_attr_t", "gelu", [x], F.gelu(x), attrs={"approximate": A.string("none")})
    # round(decimals)
    for dt in (F32, F64, BF16):
        for d in (1, 2, -1):
            x = rnd((4, 6), dt, -300, 300)
            C.add("round_dec%d_%s" % (d, dn(dt)), "round", [x], torch.round(x, decimals=d),
                  attrs={"decimals": A.int(d)})
    x = torch.tensor([1.005, 2.675, 0.125, 1234.5678, -0.125, 0.375, 2.5, -7.25])
    C.add("round_dec2_f32_ties", "round", [x], torch.round(x, decimals=2),
          attrs={"decimals": A.int(2)})
    x = rnd((3, 4), I64, -50, 50)
    C.add("round_dec0_i64", "round", [x], torch.round(x), attrs={"decimals": A.int(0)})


# ---- binary ---------------------------------------------------------------------------------

def t_other(v, x):
    """A rank-0 tensor promoting with x like the Python scalar v (for torch
    functions without a scalar overload): int -> i64, bool -> bool, float ->
    f32, or f64 next to an f64 tensor so that v keeps its precision."""
    if isinstance(v, float) and x.dtype == F64:
        return torch.tensor(v, dtype=F64)
    return torch.tensor(v)


# op -> (torch function of (a, b), whether two bool tensors are accepted)
BINARY = {
    "add": (torch.add, True),
    "sub": (torch.sub, False),
    "mul": (torch.mul, True),
    "div": (torch.div, True),
    "remainder": (torch.remainder, False),
    "pow": (torch.pow, False),
    "maximum": (torch.maximum, True),
    "minimum": (torch.minimum, True),
    "atan2": (torch.atan2, True),
    "eq": (torch.eq, True),
    "ne": (torch.ne, True),
    "lt": (torch.lt, True),
    "le": (torch.le, True),
    "gt": (torch.gt, True),
    "ge": (torch.ge, True),
    "logical_and": (torch.logical_and, True),
    "logical_or": (torch.logical_or, True),
    "logical_xor": (torch.logical_xor, True),
    "bitwise_and": (torch.bitwise_and, True),
    "bitwise_or": (torch.bitwise_or, True),
    "bitwise_xor": (torch.bitwise_xor, True),
}
BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor"}
COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
# torch functions without a Python-scalar overload
TENSOR_ONLY = {"maximum", "minimum", "atan2", "logical_and", "logical_or", "logical_xor"}


def operands(op, shape_a, shape_b, dta, dtb):
    """Inputs suited to op: positive float bases for pow, nonzero int divisors,
    small integer exponents, repeated values for comparisons."""
    if op == "pow":
        a = rnd(shape_a, dta, 0.1, 3) if dta.is_floating_point else rnd(shape_a, dta, -3, 3)
        b = rnd(shape_b, dtb, -2, 2) if dtb.is_floating_point else rnd(shape_b, dtb, 0, 4)
        return a, b
    if op in COMPARE:
        return rnd(shape_a, dta, -2, 2, True), rnd(shape_b, dtb, -2, 2, True)
    a, b = rnd(shape_a, dta), rnd(shape_b, dtb)
    if op in ("remainder", "div") and not b.is_floating_point():
        b = nonzero(b)
    return a, b


def bin_add(C, name, op, fn, a, b, attrs=None, **kw):
    out = call(fn, a, b)
    C.add(name, op, [a, b], out, attrs=attrs, **kw)


def binary_dtypes(op):
    if op in BITWISE:
        return INTS + [BOOL]
    ds = FLOATS + INTS
    if BINARY[op][1]:
        ds = ds + [BOOL]
    return ds


MIXED = [(I32, F16), (U8, I8), (I64, F32), (BOOL, I16), (F16, BF16), (F32, F64), (U8, BF16),
         (I16, I64)]


def binary_cases(C):
    for op, (fn, _) in BINARY.items():
        ds = binary_dtypes(op)
        for dt in ds:
            a, b = operands(op, (3, 4), (3, 4), dt, dt)
            if op == "div" and dt.is_floating_point:  # true division by zero
                a = with_edges(a.reshape(-1), [1.0, -1.0, 0.0, NAN, INF]).reshape(3, 4)
                b = with_edges(b.reshape(-1), [0.0, 0.0, 0.0, 1.0, 2.0]).reshape(3, 4)
            if op in COMPARE | {"maximum", "minimum", "logical_and", "logical_or",
                                "logical_xor"} and dt.is_floating_point:
                a = with_edges(a.reshape(-1), [NAN, 1.0, NAN, INF]).reshape(3, 4)
                b = with_edges(b.reshape(-1), [1.0, NAN, NAN, INF]).reshape(3, 4)
            bin_add(C, "%s_%s" % (op, dn(dt)), op, fn, a, b)
        # broadcasting and layouts
        dt = ds[0]
        a, b = operands(op, (3, 1), (1, 4), dt, dt)
        bin_add(C, "%s_%s_bcast" % (op, dn(dt)), op, fn, a, b)
        a, b = operands(op, (2, 3, 4), (4,), I32 if op != "pow" else I64,
                        I32 if op != "pow" else I64)
        bin_add(C, "%s_i32_bcast3" % op, op, fn, a, b)
        a, b = operands(op, (4, 3), (6, 4), dt, dt)
        bin_add(C, "%s_%s_noncontig" % (op, dn(dt)), op, fn, a.t(), b[::2])
        a, b = operands(op, (3, 1), (3, 4), dt, dt)
        bin_add(C, "%s_%s_expand" % (op, dn(dt)), op, fn, a.expand(3, 4), b)
        # type promotion between tensors
        for da, db in MIXED:
            if da not in ds or db not in ds:
                continue
            a, b = operands(op, (2, 5), (2, 5), da, db)
            bin_add(C, "%s_%s_%s" % (op, dn(da), dn(db)), op, fn, a, b)
        # rank-0 tensors: lower priority than dimensioned tensors of their category
        for da, db in [(F16, F64), (I8, I64), (I32, F64), (U8, I8), (F32, I32)]:
            if da not in ds or db not in ds:
                continue
            a, b = operands(op, (2, 3), (), da, db)
            bin_add(C, "%s_%s_r0%s" % (op, dn(da), dn(db)), op, fn, a, b)
            a, b = operands(op, (), (), da, db)
            bin_add(C, "%s_r0%s_r0%s" % (op, dn(da), dn(db)), op, fn, a, b)
        scalar_cases(C, op, fn, ds)


def scalar_cases(C, op, fn, ds):
    """One tensor input plus attribute `other` (a Python scalar)."""
    if op in BITWISE:
        vals = [3, 300, True, -6]
    elif op == "pow":
        vals = [2, 3, 0.5, -1.5, 2.0]
    elif op in ("div", "remainder"):
        vals = [3, -2, 2.5, -0.75]
    elif op in COMPARE:
        vals = [1, 200, 0.1, -1.5, True]
    else:
        vals = [3, 300, 2.5, 0.1, True, -2]
    for dt in ds:
        for v in vals:
            if dt == BOOL and op in ("sub",):
                continue
            if op == "pow" and isinstance(v, int) and v < 0 and not dt.is_floating_point:
                continue
            if op == "pow" and not dt.is_floating_point and not isinstance(v, float) \
                    and dt != BOOL:
                x = rnd((3, 4), dt, -3, 3)
            elif op == "pow":
                x = rnd((3, 4), dt, 0.1, 3) if dt.is_floating_point else rnd((3, 4), dt, 0, 3)
            else:
                x = rnd((3, 4), dt)
            if op == "sub" and isinstance(v, bool):
                continue
            if op == "remainder" and dt == BOOL:
                continue
            other = t_other(v, x) if op in TENSOR_ONLY else v
            try:
                out = call(fn, x, other)
            except RuntimeError:
                continue  # combination ATen rejects
            name = "%s_%s_scalar_%s" % (op, dn(dt), str(v).replace(".", "p").replace("-", "m"))
            C.add(name, op, [x], out, attrs={"other": scalar_attr(v)})


def binary_attr_cases(C):
    # alpha
    for dt, alpha in [(F32, 0.5), (F64, -2.0), (F16, 1.5), (I32, 3), (I8, -2), (BOOL, 2)]:
        for op, fn in [("add", torch.add), ("sub", torch.sub)]:
            if op == "sub" and dt == BOOL:
                continue
            a, b = rnd((3, 4), dt), rnd((3, 4), dt)
            C.add("%s_alpha_%s" % (op, dn(dt)), op, [a, b], fn(a, b, alpha=alpha),
                  attrs={"alpha": scalar_attr(alpha)})
    a = rnd((3, 4), F32)
    C.add("add_alpha_scalar_f32", "add", [a], torch.add(a, 2.5, alpha=2),
          attrs={"other": A.float(2.5), "alpha": A.int(2)})
    # div rounding modes
    for mode in ("trunc", "floor"):
        for dt in FLOATS + INTS:
            a = rnd((4, 5), dt, -20, 20)
            b = rnd((4, 5), dt, -6, 6)
            if not dt.is_floating_point:
                b = nonzero(b)
            if dt.is_floating_point:
                a = with_edges(a.reshape(-1), [-3.0, 3.0, 1.0, -0.0, 7.0, -7.0, 0.0]) \
                    .reshape(4, 5)
                b = with_edges(b.reshape(-1), [2.0, -2.0, 0.0, 3.0, 2.0, 2.0, 0.0]).reshape(4, 5)
            C.add("div_%s_%s" % (mode, dn(dt)), "div", [a, b],
                  call(lambda x, y: torch.div(x, y, rounding_mode=mode), a, b),
                  attrs={"rounding_mode": A.string(mode)})
        a = rnd((3, 4), I8, -120, 120)
        C.add("div_%s_i8_scalar300" % mode, "div", [a], torch.div(a, 300, rounding_mode=mode),
              attrs={"other": A.int(300), "rounding_mode": A.string(mode)})
        a = rnd((3, 4), I32, -20, 20)
        C.add("div_%s_i32_scalarf" % mode, "div", [a], torch.div(a, 2.5, rounding_mode=mode),
              attrs={"other": A.float(2.5), "rounding_mode": A.string(mode)})
        a, b = rnd((4, 3), I64, -30, 30).t(), nonzero(rnd((4,), I64, -5, 5))
        C.add("div_%s_i64_bcast_t" % mode, "div", [a, b], torch.div(a, b, rounding_mode=mode),
              attrs={"rounding_mode": A.string(mode)})
    a = torch.tensor([-7, 7, -7, 7, -128, 127], dtype=I8)
    b = torch.tensor([3, -3, -3, 3, -1, -1], dtype=I8)
    C.add("remainder_i8_signs", "remainder", [a, b], torch.remainder(a, b))
    C.add("div_floor_i8_signs", "div", [a, b], torch.div(a, b, rounding_mode="floor"),
          attrs={"rounding_mode": A.string("floor")})
    C.add("div_trunc_i8_signs", "div", [a, b], torch.div(a, b, rounding_mode="trunc"),
          attrs={"rounding_mode": A.string("trunc")})
    a = torch.tensor([-3.0, 3.0, -3.0, 3.0, 5.5, -5.5, 0.0, -0.0])
    b = torch.tensor([2.0, -2.0, -2.0, 2.0, 1.5, 1.5, 3.0, 3.0])
    C.add("remainder_f32_signs", "remainder", [a, b], torch.remainder(a, b))
    a = torch.tensor([2, 1, -1, 0, -1, 3], dtype=I64)
    b = torch.tensor([-1, -2, -3, 2, -4, 40], dtype=I64)
    C.add("pow_i64_negexp", "pow", [a, b], torch.pow(a, b))
    a = torch.tensor([-2.0, -1.5, -0.5, 2.0, 0.0, 0.0])
    b = torch.tensor([3.0, 2.0, 0.5, -1.0, -1.0, 0.0])
    C.add("pow_f32_special", "pow", [a, b], torch.pow(a, b))
    # comparisons cast the scalar to the common dtype
    a = torch.tensor([1, -128, 100, -56], dtype=I8)
    C.add("lt_i8_scalar_wrap", "lt", [a], a < 200, attrs={"other": A.int(200)})
    C.add("eq_i8_scalar_wrap", "eq", [a], a == 200, attrs={"other": A.int(200)})
    a = torch.tensor([0.1, 0.2, 0.3], dtype=F16)
    C.add("eq_f16_scalar_round", "eq", [a], a == 0.1, attrs={"other": A.float(0.1)})
    a = torch.tensor([2 ** 24 + 1, 5], dtype=I64)
    b = torch.tensor([float(2 ** 24), 5.0])
    C.add("eq_i64_f32_round", "eq", [a, b], a == b)
    a = torch.tensor([1, 0, 2], dtype=U8)
    C.add("lt_u8_scalar_neg", "lt", [a], a < -1, attrs={"other": A.int(-1)})


# ---- where / clamp / masked_fill / to_dtype / dropout -------------------------------------------

def where_cases(C):
    for dt in FLOATS + INTS + [BOOL]:
        c, x, y = rnd((3, 4), BOOL), rnd((3, 4), dt), rnd((3, 4), dt)
        C.add("where_%s" % dn(dt), "where", [c, x, y], torch.where(c, x, y))
    c, x, y = rnd((3, 1), BOOL), rnd((1, 4), F32), rnd((4,), F32)
    C.add("where_bcast", "where", [c, x, y], torch.where(c, x, y))
    c, x, y = rnd((4, 3), BOOL).t(), rnd((6, 4), F64)[::2], rnd((3, 1), F64).expand(3, 4)
    C.add("where_noncontig", "where", [c, x, y], torch.where(c, x, y))
    for dx, dy, sy in [(I8, F64, ()), (I32, F16, (3, 4)), (U8, I8, (3, 4)), (F16, F32, ()),
                       (I64, BOOL, (3, 4))]:
        c, x, y = rnd((3, 4), BOOL), rnd((3, 4), dx), rnd(sy, dy)
        C.add("where_%s_%s%s" % (dn(dx), dn(dy), "_r0" if sy == () else ""), "where",
              [c, x, y], torch.where(c, x, y))
    c, x, y = torch.tensor(True), torch.tensor(2.5), rnd((2, 3), F32)
    C.add("where_r0cond", "where", [c, x, y], torch.where(c, x, y))


def clamp_cases(C):
    for dt in FLOATS + INTS:
        x = rnd((3, 5), dt, -6, 6)
        if dt.is_floating_point:
            x = with_edges(x.reshape(-1), [NAN, INF, -INF]).reshape(3, 5)
        for tag, lo, hi in [("both", -2, 3), ("min", 1, None), ("max", None, 2),
                            ("minf", -1.5, None), ("inv", 3, -1)]:
            kw, attrs = {}, {}
            if lo is not None:
                kw["min"] = lo
                attrs["min"] = scalar_attr(lo)
            if hi is not None:
                kw["max"] = hi
                attrs["max"] = scalar_attr(hi)
            C.add("clamp_%s_%s" % (dn(dt), tag), "clamp", [x],
                  call(lambda t: torch.clamp(t, **kw), x), attrs=attrs)
    x = torch.tensor([True, False, True])
    C.add("clamp_bool_minint", "clamp", [x], torch.clamp(x, min=0), attrs={"min": A.int(0)})
    # tensor bounds (broadcast, optional, non-contiguous)
    x, lo, hi = rnd((3, 4), F32), rnd((4,), F32, -1, 0), rnd((3, 1), F32, 0, 1)
    C.add("clamp_tensors_f32", "clamp", [x, lo, hi], torch.clamp(x, lo, hi))
    C.add("clamp_tensor_min_only", "clamp", [x, lo, None], torch.clamp(x, min=lo))
    C.add("clamp_tensor_max_only", "clamp", [x, None, hi], torch.clamp(x, max=hi))
    x, lo = rnd((4, 3), I32, -5, 5).t(), rnd((), I64, -1, 0)
    C.add("clamp_i32_r0tensor", "clamp", [x, lo, None], torch.clamp(x, min=lo))
    x, lo, hi = rnd((3, 4), I32, -5, 5), rnd((3, 4), F32, -2, 0), rnd((3, 4), F32, 0, 2)
    C.add("clamp_i32_f32tensors", "clamp", [x, lo, hi], torch.clamp(x, lo, hi))
    x = with_edges(rnd((6,), F32), [1.0, 2.0])
    lo = torch.tensor([NAN, 0.0, 0.0, 0.0, 0.0, 0.0])
    C.add("clamp_tensor_nan_bound", "clamp", [x, lo, None], torch.clamp(x, min=lo))
    x = rnd((3, 4), I16, -10, 10)
    C.add("clamp_i16_float_min", "clamp", [x], torch.clamp(x, min=0.5), attrs={"min": A.float(0.5)})


def masked_fill_cases(C):
    for dt in FLOATS + INTS + [BOOL]:
        x, m = rnd((3, 4), dt), rnd((3, 4), BOOL)
        v = True if dt == BOOL else (2 if not dt.is_floating_point else -1.5)
        C.add("masked_fill_%s" % dn(dt), "masked_fill", [x, m], x.masked_fill(m, v),
              attrs={"value": scalar_attr(v)})
    x, m = rnd((3,), F32), torch.tensor([[True], [False]])
    C.add("masked_fill_bcast", "masked_fill", [x, m], x.masked_fill(m, 7.0),
          attrs={"value": A.float(7.0)})
    x, m = rnd((4, 3), F64).t(), rnd((6, 4), BOOL)[::2]
    C.add("masked_fill_noncontig", "masked_fill", [x, m], x.masked_fill(m, NAN),
          attrs={"value": fattr(NAN)})
    x, m = rnd((3, 4), I64), rnd((3, 4), BOOL)
    C.add("masked_fill_i64_float", "masked_fill", [x, m], x.masked_fill(m, 2.7),
          attrs={"value": A.float(2.7)})
    v = torch.tensor(-3.25, dtype=F64)
    x, m = rnd((2, 5), F32), rnd((2, 5), BOOL)
    C.add("masked_fill_value_tensor", "masked_fill", [x, m, v], x.masked_fill(m, v))
    x, m, v = rnd((2, 5), I32), rnd((5,), BOOL), torch.tensor(9)
    C.add("masked_fill_value_tensor_i32", "masked_fill", [x, m, v], x.masked_fill(m, v))


def to_dtype_cases(C):
    pairs = [(F32, I32), (F32, BOOL), (F32, F16), (F32, BF16), (F64, F32), (F16, F32),
             (BF16, F16), (I64, I8), (I32, U8), (I64, F32), (BOOL, F32), (BOOL, I64),
             (U8, I8), (F64, I64), (I16, F64), (F16, I16), (BF16, BOOL), (I8, BOOL)]
    for src, dst in pairs:
        if src.is_floating_point:
            x = rnd((3, 4), src, -100, 100)
            x = with_edges(x.reshape(-1), [0.0, -0.0, 2.7, -2.7, 0.5]).reshape(3, 4)
            if src == F32 and dst.is_floating_point:
                x = with_edges(x.reshape(-1), [NAN, INF, -INF, 1e-30, 70000.0]).reshape(3, 4)
        else:
            x = rnd((3, 4), src, -200, 200)
        C.add("to_dtype_%s_%s" % (dn(src), dn(dst)), "to_dtype", [x], x.to(dst),
              attrs={"dtype": A.dtype(dst)})
    x = rnd((4, 3), F64).t()
    C.add("to_dtype_f64_f32_t", "to_dtype", [x], x.to(F32), attrs={"dtype": A.dtype(F32)})
    x = rnd((3, 1), I32).expand(3, 4)
    C.add("to_dtype_i32_f64_expand", "to_dtype", [x], x.to(F64), attrs={"dtype": A.dtype(F64)})
    x = torch.tensor(3.5)
    C.add("to_dtype_r0", "to_dtype", [x], x.to(I64), attrs={"dtype": A.dtype(I64)})
    x = rnd((3, 4), F32)
    C.add("to_dtype_same", "to_dtype", [x], x.clone(), attrs={"dtype": A.dtype(F32)})


def dropout_cases(C):
    for dt in (F32, F16, F64):
        x = rnd((3, 4), dt)
        C.add("dropout_eval_%s" % dn(dt), "dropout", [x], F.dropout(x, 0.5, training=False),
              attrs={"p": A.float(0.5), "train": A.bool(False)})
    x = rnd((4, 3), F32).t()
    C.add("dropout_default_t", "dropout", [x], x.clone())
    C.add("dropout_p1", "dropout", [x], F.dropout(x, 1.0, training=False),
          attrs={"p": A.float(1.0)})


# ---- creation -------------------------------------------------------------------------------------

def creation_cases(C):
    for v, dt in [(2.5, None), (3, None), (True, None), (False, None), (-1.5, I32), (7, F16),
                  (2.25, F64), (0.1, BF16), (1, BOOL), (300, U8), (-4, I8)]:
        size = [2, 3]
        kw = {} if dt is None else {"dtype": dt}
        attrs = {"size": A.ints(size), "fill_value": scalar_attr(v)}
        if dt is not None:
            attrs["dtype"] = A.dtype(dt)
        name = "full_%s_%s" % (str(v).replace(".", "p").replace("-", "m"),
                               "dflt" if dt is None else dn(dt))
        try:
            out = torch.full(size, v, **kw)
        except RuntimeError:
            continue
        C.add(name, "full", [], out, attrs=attrs)
    C.add("full_rank0", "full", [], torch.full([], 4.5), attrs={"size": A.ints([]),
                                                                 "fill_value": A.float(4.5)})
    C.add("full_empty", "full", [], torch.full([0, 3], 1.0),
          attrs={"size": A.ints([0, 3]), "fill_value": A.float(1.0)})
    C.add("full_nan", "full", [], torch.full([3], NAN),
          attrs={"size": A.ints([3]), "fill_value": fattr(NAN)})
    C.add("full_int_size", "full", [], torch.full([5], 2),
          attrs={"size": A.int(5), "fill_value": A.int(2)})
    for op, fn in [("zeros", torch.zeros), ("ones", torch.ones)]:
        C.add("%s_dflt" % op, op, [], fn([2, 3, 2]), attrs={"size": A.ints([2, 3, 2])})
        for dt in (F64, F16, BF16, I8, I64, U8, BOOL):
            C.add("%s_%s" % (op, dn(dt)), op, [], fn([4], dtype=dt),
                  attrs={"size": A.ints([4]), "dtype": A.dtype(dt)})
        C.add("%s_rank0" % op, op, [], fn([]), attrs={"size": A.ints([])})
    for dt in FLOATS + INTS + [BOOL]:
        x = rnd((2, 3), dt)
        v = 3 if not dt.is_floating_point else 1.25
        C.add("fill_%s" % dn(dt), "fill", [x], torch.full_like(x, v),
              attrs={"value": scalar_attr(v)})
    x = rnd((4, 3), F32).t()
    C.add("fill_t_dtype", "fill", [x], torch.full_like(x, 2.5, dtype=F64),
          attrs={"value": A.float(2.5), "dtype": A.dtype(F64)})
    x = rnd((3, 4), I32)
    C.add("fill_i32_float_trunc", "fill", [x], torch.full_like(x, 2.7),
          attrs={"value": A.float(2.7)})
    C.add("fill_r0", "fill", [torch.tensor(1.0)], torch.tensor(-2.0),
          attrs={"value": A.float(-2.0)})
    arange_cases(C)
    for n, m, dt in [(3, None, None), (2, 4, None), (4, 2, I64), (3, 3, BOOL), (1, 5, F16),
                     (0, 3, None), (3, 0, F64), (5, None, BF16)]:
        attrs = {"n": A.int(n)}
        args = [n] if m is None else [n, m]
        if m is not None:
            attrs["m"] = A.int(m)
        if dt is not None:
            attrs["dtype"] = A.dtype(dt)
        out = torch.eye(*args)
        if dt is not None:
            out = out.to(dt)
        C.add("eye_%d_%s_%s" % (n, m, "dflt" if dt is None else dn(dt)), "eye", [], out,
              attrs=attrs)


def arange_cases(C):
    specs = [
        ((0, 5, 1), None), ((5,), None), ((2, 11, 3), None), ((5, -1, -2), None),
        ((0, 1, 0.1), None), ((0.5, 5), None), ((-1.0, 1.0, 0.25), None), ((1, 2.5, 0.5), None),
        ((0, 10, 1), F64), ((0, 1, 0.1), F16), ((0, 3, 0.5), BF16), ((0.5, 5), I64),
        ((0.5, 5.7, 1.5), I32), ((10, 0, -3), I8), ((0, 4), U8), ((3, 3), None),
        ((-5, 5, 0.3), F32), ((0, 20, 7), I16),
    ]
    for args, dt in specs:
        kw = {} if dt is None else {"dtype": dt}
        if len(args) == 1:
            start, end, step = None, args[0], None
        elif len(args) == 2:
            (start, end), step = args, None
        else:
            start, end, step = args
        attrs = {"end": scalar_attr(end)}
        if start is not None:
            attrs["start"] = scalar_attr(start)
        if step is not None:
            attrs["step"] = scalar_attr(step)
        if dt is not None:
            attrs["dtype"] = A.dtype(dt)
        name = "arange_%s_%s" % ("_".join(str(a).replace(".", "p").replace("-", "m")
                                          for a in args), "dflt" if dt is None else dn(dt))
        C.add(name, "arange", [], torch.arange(*args, **kw), attrs=attrs)


# ---- random (shape and dtype only) ----------------------------------------------------------------

def random_cases(C):
    for op in ("rand", "randn"):
        for dt, size in [(None, [3, 4]), (F64, [5]), (F16, [2, 2, 2]), (BF16, [])]:
            attrs = {"size": A.ints(size)}
            if dt is not None:
                attrs["dtype"] = A.dtype(dt)
            out = torch.zeros(size, dtype=dt or F32)
            C.add("%s_shape_%s" % (op, "dflt" if dt is None else dn(dt)), op, [], out,
                  attrs=attrs, check="shape")
        C.add("%s_seeded" % op, op, [], torch.zeros(4, 3),
              attrs={"size": A.ints([4, 3]), "seed": A.int(42)}, check="shape")
    x = torch.rand(3, 4)
    C.add("bernoulli_shape_f32", "bernoulli", [x], torch.bernoulli(x), check="shape")
    x = torch.rand(4, 3, dtype=F64).t()
    C.add("bernoulli_shape_f64_t", "bernoulli", [x], torch.bernoulli(x), check="shape")
    x = torch.zeros(2, 5, dtype=I64)
    C.add("bernoulli_shape_i64_p", "bernoulli", [x], torch.bernoulli(x.double(), 0.3).long(),
          attrs={"p": A.float(0.3)}, check="shape")
    # degenerate probabilities are deterministic
    x = torch.tensor([[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    C.add("bernoulli_p01", "bernoulli", [x], x.clone())
    x = torch.zeros(3, 2, dtype=F16)
    C.add("bernoulli_attr_p1_f16", "bernoulli", [x], torch.ones(3, 2, dtype=F16),
          attrs={"p": A.float(1.0)})


def cases(C):
    unary_cases(C)
    binary_cases(C)
    binary_attr_cases(C)
    where_cases(C)
    clamp_cases(C)
    masked_fill_cases(C)
    to_dtype_cases(C)
    dropout_cases(C)
    creation_cases(C)
    random_cases(C)
