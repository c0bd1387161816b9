"""_map_elementwise.py - mapping entries of pointwise ops: unary math,
activations (torch, Tensor methods and torch.nn.functional), binary ops and
their Python operators with ATen type promotion (Python scalars become ptc's
`other` attribute, reversed operators follow torch.Tensor.__r*__), where,
clamp, masked_fill, dtype conversions and dropout in eval mode.

Registered into the single table of _map_core."""
import operator

import torch
import torch.nn.functional as F

from ._map_core import (Unsupported, concrete, if_new, is_sym, is_value, optional, register,
                        tensor_method_keys)

# ---- unary ------------------------------------------------------------------------------

UNARY = ["neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "sin",
         "cos", "tan", "tanh", "sigmoid", "relu", "erf", "floor", "ceil", "trunc",
         "reciprocal", "sign", "logical_not", "isnan", "isinf"]
# torch-level aliases of ptc unary ops
UNARY_ALIASES = {"negative": "neg", "absolute": "abs", "fix": "trunc"}
# ops whose in-place method form ("relu_") exists on Tensor
INPLACE_UNARY = ["neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt",
                 "sin", "cos", "tan", "tanh", "sigmoid", "relu", "erf", "floor", "ceil",
                 "trunc", "reciprocal", "sign"]


def _unary(op):
    def conv(b, input, *, out=None):
        if out is not None:
            raise Unsupported("out= is not supported")
        if not is_value(input):
            raise Unsupported("expected a tensor input, got %s" % type(input).__name__)
        return b.op(op, [input])
    conv.__name__ = "unary_" + op
    return conv


for _name in UNARY:
    register(getattr(torch, _name, None), *tensor_method_keys(_name))(_unary(_name))
for _alias, _op in UNARY_ALIASES.items():
    register(getattr(torch, _alias, None), *tensor_method_keys(_alias))(_unary(_op))
for _name in INPLACE_UNARY:
    register(*tensor_method_keys(_name + "_"), mutates=0)(_unary(_name))
register(optional(torch, "special", "expit"))(_unary("sigmoid"))
register(optional(torch, "special", "erf"))(_unary("erf"))


def _inplace_kw(args, kwargs, pos):
    """mutates(): the input (0) when `inplace` (kwarg or positional pos) is true."""
    v = kwargs.get("inplace", args[pos] if len(args) > pos else False)
    return 0 if v is True else None


@register(torch.round, *tensor_method_keys("round"))
def _round(b, input, *, decimals=0, out=None):
    if out is not None:
        raise Unsupported("out= is not supported")
    return b.op("round", [input], {"decimals": int(decimals)} if decimals else None)


# ---- activations ----------------------------------------------------------------------------

@register(F.relu, mutates=lambda a, k: _inplace_kw(a, k, 1))
def _f_relu(b, input, inplace=False):
    return b.op("relu", [input])


@register(F.relu_, mutates=0)
def _f_relu_(b, input):
    return b.op("relu", [input])


def _gelu(b, input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise Unsupported("gelu approximate=%r" % (approximate,))
    return b.op("gelu", [input], {"approximate": approximate} if approximate != "none" else None)


register(F.gelu)(_gelu)


@register(F.silu, mutates=lambda a, k: _inplace_kw(a, k, 1))
def _f_silu(b, input, inplace=False):
    return b.op("silu", [input])


@register(F.sigmoid)
def _f_sigmoid(b, input):
    return b.op("sigmoid", [input])


@register(F.tanh)
def _f_tanh(b, input):
    return b.op("tanh", [input])


def hardtanh(b, x, lo, hi):
    return b.op("clamp", [x], {"min": concrete(lo), "max": concrete(hi)})


@register(F.hardtanh, mutates=lambda a, k: _inplace_kw(a, k, 3))
def _f_hardtanh(b, input, min_val=-1.0, max_val=1.0, inplace=False):
    return hardtanh(b, input, min_val, max_val)


@register(F.relu6, mutates=lambda a, k: _inplace_kw(a, k, 1))
def _f_relu6(b, input, inplace=False):
    return hardtanh(b, input, 0.0, 6.0)


def hardsigmoid(b, x):
    """min(max(x + 3, 0), 6) / 6 (ATen's kernel)."""
    t = b.op("add", [x], {"other": 3.0})
    t = b.op("clamp", [t], {"min": 0.0, "max": 6.0})
    return b.op("div", [t], {"other": 6.0})


def hardswish(b, x):
    """x * min(max(x + 3, 0), 6) / 6 (ATen's kernel)."""
    t = b.op("add", [x], {"other": 3.0})
    t = b.op("clamp", [t], {"min": 0.0, "max": 6.0})
    t = b.op("mul", [x, t])
    return b.op("div", [t], {"other": 6.0})


@register(F.hardsigmoid, mutates=lambda a, k: _inplace_kw(a, k, 1))
def _f_hardsigmoid(b, input, inplace=False):
    return hardsigmoid(b, input)


@register(F.hardswish, mutates=lambda a, k: _inplace_kw(a, k, 1))
def _f_hardswish(b, input, inplace=False):
    return hardswish(b, input)


def leaky_relu(b, x, slope):
    pos = b.op("gt", [x], {"other": 0})
    neg = b.op("mul", [x], {"other": float(concrete(slope))})
    return b.op("where", [pos, x, neg])


@register(F.leaky_relu, mutates=lambda a, k: _inplace_kw(a, k, 2))
def _f_leaky_relu(b, input, negative_slope=0.01, inplace=False):
    return leaky_relu(b, input, negative_slope)


def elu(b, x, alpha=1.0, scale=1.0, input_scale=1.0):
    """x > 0 ? scale * x : scale * alpha * expm1(x * input_scale)."""
    pos = b.op("gt", [x], {"other": 0})
    t = x if input_scale == 1.0 else b.op("mul", [x], {"other": float(input_scale)})
    neg = b.op("mul", [b.op("expm1", [t])], {"other": float(alpha * scale)})
    p = x if scale == 1.0 else b.op("mul", [x], {"other": float(scale)})
    return b.op("where", [pos, p, neg])


@register(F.elu, mutates=lambda a, k: _inplace_kw(a, k, 2))
def _f_elu(b, input, alpha=1.0, inplace=False):
    return elu(b, input, float(alpha))


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


@register(F.selu, mutates=lambda a, k: _inplace_kw(a, k, 1))
def _f_selu(b, input, inplace=False):
    return elu(b, input, SELU_ALPHA, SELU_SCALE)


@register(F.celu, mutates=lambda a, k: _inplace_kw(a, k, 2))
def _f_celu(b, input, alpha=1.0, inplace=False):
    alpha = float(alpha)
    return elu(b, input, alpha, 1.0, 1.0 / alpha)


def softplus(b, x, beta=1.0, threshold=20.0):
    """(x * beta) > threshold ? x : log1p(exp(x * beta)) / beta."""
    xb = x if beta == 1 else b.op("mul", [x], {"other": beta})
    big = b.op("gt", [xb], {"other": threshold})
    sp = b.op("log1p", [b.op("exp", [xb])])
    if beta != 1:
        sp = b.op("div", [sp], {"other": beta})
    return b.op("where", [big, x, sp])


@register(F.softplus)
def _f_softplus(b, input, beta=1, threshold=20):
    return softplus(b, input, concrete(beta), concrete(threshold))


@register(F.mish, mutates=lambda a, k: _inplace_kw(a, k, 1))
def _f_mish(b, input, inplace=False):
    return b.op("mul", [input, b.op("tanh", [softplus(b, input)])])


@register(F.logsigmoid)
def _f_logsigmoid(b, input):
    """min(x, 0) - log1p(exp(-|x|))."""
    lo = b.op("clamp", [input], {"max": 0})
    t = b.op("log1p", [b.op("exp", [b.op("neg", [b.op("abs", [input])])])])
    return b.op("sub", [lo, t])


@register(F.softsign)
def _f_softsign(b, input):
    d = b.op("add", [b.op("abs", [input])], {"other": 1})
    return b.op("div", [input, d])


@register(F.threshold, mutates=lambda a, k: _inplace_kw(a, k, 3))
def _f_threshold(b, input, threshold, value, inplace=False):
    keep = b.op("gt", [input], {"other": concrete(threshold)})
    return b.op("where", [keep, input, b.as_value(concrete(value), input)])


# ---- dropout (identity in eval mode) -------------------------------------------------------

def dropout(b, x, p, training):
    if training and concrete(p) > 0:
        raise Unsupported("dropout in training mode (p=%g): ptc computes inference graphs; "
                          "call .eval()" % concrete(p))
    return x


@register(F.dropout, F.dropout1d if hasattr(F, "dropout1d") else None, F.dropout2d, F.dropout3d,
          F.alpha_dropout, F.feature_alpha_dropout,
          mutates=lambda a, k: None)
def _f_dropout(b, input, p=0.5, training=True, inplace=False):
    return dropout(b, input, p, training)


@register(torch.dropout, torch.alpha_dropout, torch.feature_dropout)
def _t_dropout(b, input, p, train):
    return dropout(b, input, p, train)


# ---- binary -----------------------------------------------------------------------------

COMMUTATIVE = {"add", "mul", "maximum", "minimum", "eq", "ne", "logical_and", "logical_or",
               "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"}
FLIPPED = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}
PY_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
          "div": operator.truediv, "remainder": operator.mod, "pow": operator.pow,
          "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
          "gt": operator.gt, "ge": operator.ge, "bitwise_and": operator.and_,
          "bitwise_or": operator.or_, "bitwise_xor": operator.xor, "maximum": max,
          "minimum": min, "floordiv": operator.floordiv}


def scalar_attr(v):
    """A Python scalar for an attribute (SymInts specialised)."""
    v = concrete(v)
    if not isinstance(v, (bool, int, float)):
        raise Unsupported("expected a number, got %s" % type(v).__name__)
    return v


def binary(b, op, a, c, attrs=None):
    """a <op> c with torch's promotion: two Values; a Value and a Python
    scalar (attribute `other`); a scalar and a Value (swapped when
    commutative, flipped for comparisons, else the scalar becomes a 0-d
    value of torch.result_type); two scalars: computed in Python."""
    attrs = dict(attrs or {})
    if is_value(a) and is_value(c):
        return b.op(op, [a, c], attrs)
    if is_value(a):
        if isinstance(c, torch.Tensor):
            return b.op(op, [a, b.constant(c)], attrs)
        attrs["other"] = scalar_attr(c)
        return b.op(op, [a], attrs)
    if is_value(c):
        if isinstance(a, torch.Tensor):
            return b.op(op, [b.constant(a), c], attrs)
        if op in COMMUTATIVE and "alpha" not in attrs:
            attrs["other"] = scalar_attr(a)
            return b.op(op, [c], attrs)
        if op in FLIPPED:
            attrs["other"] = scalar_attr(a)
            return b.op(FLIPPED[op], [c], attrs)
        av = b.scalar(a, b.promote_scalar(c, a))
        return b.op(op, [av, c], attrs)
    if op in PY_OPS and not attrs:
        return PY_OPS[op](a, c)
    raise Unsupported("%s of two non-tensors with attributes %s" % (op, sorted(attrs)))


def _no_out(out):
    if out is not None:
        raise Unsupported("out= is not supported")


def _binary_conv(op):
    def conv(b, input, other, *, out=None):
        _no_out(out)
        return binary(b, op, input, other)
    conv.__name__ = "binary_" + op
    return conv


BINARY = ["mul", "remainder", "pow", "maximum", "minimum", "atan2", "eq", "ne", "lt", "le", "gt",
          "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
          "bitwise_xor"]
BINARY_ALIASES = {"multiply": "mul", "greater": "gt", "greater_equal": "ge", "less": "lt",
                  "less_equal": "le", "not_equal": "ne", "arctan2": "atan2"}
INPLACE_BINARY = ["mul", "remainder", "pow", "atan2", "eq", "ne", "lt", "le", "gt", "ge",
                  "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
                  "bitwise_xor"]

for _name in BINARY:
    register(getattr(torch, _name, None), *tensor_method_keys(_name))(_binary_conv(_name))
for _alias, _op in BINARY_ALIASES.items():
    register(getattr(torch, _alias, None), *tensor_method_keys(_alias))(_binary_conv(_op))


def _inplace(conv, dtype_fixed=True):
    """In-place variant: the result is cast back to self's dtype (torch
    refuses a promotion it cannot cast; ptc keeps self's dtype too)."""
    def ip(b, input, *args, **kwargs):
        r = conv(b, input, *args, **kwargs)
        if is_value(input) and is_value(r) and r.dtype != input.dtype and dtype_fixed:
            r = b.to_dtype(r, input.dtype)
        return r
    ip.__name__ = conv.__name__ + "_"
    return ip


for _name in INPLACE_BINARY:
    register(*tensor_method_keys(_name + "_"), mutates=0)(_inplace(_binary_conv(_name)))


def _alpha_attrs(alpha):
    alpha = scalar_attr(alpha)
    return {} if alpha == 1 and not isinstance(alpha, bool) else {"alpha": alpha}


@register(torch.add, *tensor_method_keys("add"))
def _add(b, input, other, *, alpha=1, out=None):
    _no_out(out)
    return binary(b, "add", input, other, _alpha_attrs(alpha))


@register(torch.sub, torch.subtract, *tensor_method_keys("sub", "subtract"))
def _sub(b, input, other, *, alpha=1, out=None):
    _no_out(out)
    return binary(b, "sub", input, other, _alpha_attrs(alpha))


register(*tensor_method_keys("add_"), mutates=0)(_inplace(_add))
register(*tensor_method_keys("sub_"), mutates=0)(_inplace(_sub))


@register(torch.rsub)
def _rsub(b, input, other, *, alpha=1):
    """other - alpha * input."""
    if is_value(other):
        return binary(b, "sub", other, input, _alpha_attrs(alpha))
    t = input if alpha == 1 else binary(b, "mul", input, alpha)
    return b.op("neg", [binary(b, "sub", t, other)])


def _div_attrs(rounding_mode):
    if rounding_mode is None:
        return {}
    if rounding_mode not in ("trunc", "floor"):
        raise Unsupported("rounding_mode=%r" % (rounding_mode,))
    return {"rounding_mode": rounding_mode}


@register(torch.div, torch.divide, *tensor_method_keys("div", "divide"))
def _div(b, input, other, *, rounding_mode=None, out=None):
    _no_out(out)
    return binary(b, "div", input, other, _div_attrs(rounding_mode))


register(*tensor_method_keys("div_"), mutates=0)(_inplace(_div))


@register(torch.true_divide, *tensor_method_keys("true_divide"))
def _true_divide(b, input, other, *, out=None):
    _no_out(out)
    return binary(b, "div", input, other)


@register(torch.floor_divide, *tensor_method_keys("floor_divide"))
def _floor_divide(b, input, other, *, out=None):
    _no_out(out)
    if not is_value(input) and not is_value(other):
        return operator.floordiv(input, other)
    return binary(b, "div", input, other, {"rounding_mode": "floor"})


@register(torch.clamp, torch.clip, *tensor_method_keys("clamp", "clip"))
def _clamp(b, input, min=None, max=None, *, out=None):
    _no_out(out)
    ins, attrs = [input], {}
    for nm, v in (("min", min), ("max", max)):
        if is_value(v) or isinstance(v, torch.Tensor):
            ins.append(b.as_value(v))
        else:
            ins.append(None)
            if v is not None:
                attrs[nm] = scalar_attr(v)
    while ins[-1] is None:
        ins.pop()
    if len(ins) == 1 and not attrs:
        raise Unsupported("clamp without min or max")
    return b.op("clamp", ins, attrs)


register(*tensor_method_keys("clamp_", "clip_"), mutates=0)(_inplace(_clamp))


@register(torch.clamp_min, *tensor_method_keys("clamp_min"))
def _clamp_min(b, input, min):
    return _clamp(b, input, min=min)


@register(torch.clamp_max, *tensor_method_keys("clamp_max"))
def _clamp_max(b, input, max):
    return _clamp(b, input, max=max)


@register(torch.where)
def _where(b, condition, input=None, other=None):
    if input is None and other is None:
        raise Unsupported("torch.where(condition) has a data-dependent output shape")
    if not is_value(condition):
        raise Unsupported("where with a non-tensor condition")
    # a scalar operand promotes like a wrapped number next to the other operand
    if not is_value(input) and not is_value(other):
        dt = torch.result_type(torch.tensor(concrete(input)), concrete(other))
        return b.op("where", [condition, b.scalar(input, dt), b.scalar(other, dt)])
    x = b.as_value(input, other if is_value(other) else None)
    y = b.as_value(other, input if is_value(input) else None)
    return b.op("where", [condition, x, y])


@register(*tensor_method_keys("where"))
def _where_m(b, input, condition, other):
    """x.where(condition, y) == torch.where(condition, x, y)."""
    return _where(b, condition, input, other)


def masked_fill(b, input, mask, value):
    if is_value(value) or isinstance(value, torch.Tensor):
        return b.op("masked_fill", [input, mask, b.as_value(value)])
    return b.op("masked_fill", [input, mask], {"value": scalar_attr(value)})


@register(torch.masked_fill, *tensor_method_keys("masked_fill"))
def _masked_fill(b, input, mask, value):
    return masked_fill(b, input, mask, value)


register(*tensor_method_keys("masked_fill_"), mutates=0)(_masked_fill)


@register(torch.lerp, *tensor_method_keys("lerp"))
def _lerp(b, input, end, weight):
    """input + weight * (end - input)."""
    d = binary(b, "sub", end, input)
    return binary(b, "add", input, binary(b, "mul", d, weight))


@register(torch.addcmul, *tensor_method_keys("addcmul"))
def _addcmul(b, input, tensor1, tensor2, *, value=1):
    t = binary(b, "mul", tensor1, tensor2)
    if value != 1:
        t = binary(b, "mul", t, value)
    return binary(b, "add", input, t)


@register(torch.addcdiv, *tensor_method_keys("addcdiv"))
def _addcdiv(b, input, tensor1, tensor2, *, value=1):
    t = binary(b, "div", tensor1, tensor2)
    if value != 1:
        t = binary(b, "mul", t, value)
    return binary(b, "add", input, t)


@register(torch.square, *tensor_method_keys("square"))
def _square(b, input):
    return binary(b, "mul", input, input)


# ---- Python operators ------------------------------------------------------------------

def _py_or(op, fn):
    """Converter of operator.<op>: tensors through `fn`, plain Python values
    (ints, floats, SymInts: sizes) with the Python operator itself."""
    def conv(b, a, c):
        if is_value(a) or is_value(c):
            return fn(b, a, c)
        try:
            return op(a, c)
        except TypeError:
            if is_sym(a) or is_sym(c):  # e.g. SymInt ** float: specialise
                return op(concrete(a), concrete(c))
            raise
    conv.__name__ = "operator_" + op.__name__.strip("_")
    return conv


def _rdiv(b, a, c):
    if is_value(a):
        return binary(b, "div", a, c)
    # scalar / tensor: torch.Tensor.__rtruediv__ is reciprocal(self) * other
    return binary(b, "mul", b.op("reciprocal", [c]), a)


def _rpow(b, a, c):
    if is_value(a):
        return binary(b, "pow", a, c)
    # scalar ** tensor: torch.tensor(other, dtype=result_type) ** self
    return b.op("pow", [b.scalar(a, b.promote_scalar(c, a)), c])


def _rsub_op(b, a, c):
    if is_value(a):
        return binary(b, "sub", a, c)
    # scalar - tensor: torch.rsub(self, other) = other - self = -(self - other)
    return b.op("neg", [binary(b, "sub", c, a)])


def _floordiv_op(b, a, c):
    return binary(b, "div", a, c, {"rounding_mode": "floor"})


def _invert(b, x):
    if not is_value(x):
        return operator.invert(x)
    if x.dtype == torch.bool:
        return b.op("logical_not", [x])
    if x.dtype.is_floating_point:
        raise Unsupported("~ on a floating tensor")
    return b.op("sub", [b.op("neg", [x])], {"other": 1})  # ~x == -x - 1


def _bin(op):
    return lambda b, a, c: binary(b, op, a, c)


register(operator.add, torch.Tensor.__add__, torch.Tensor.__radd__)(
    _py_or(operator.add, _bin("add")))
register(operator.sub, torch.Tensor.__sub__)(_py_or(operator.sub, _rsub_op))
register(operator.mul, torch.Tensor.__mul__, torch.Tensor.__rmul__)(
    _py_or(operator.mul, _bin("mul")))
register(operator.truediv, torch.Tensor.__truediv__)(_py_or(operator.truediv, _rdiv))
register(operator.floordiv, torch.Tensor.__floordiv__)(_py_or(operator.floordiv, _floordiv_op))
register(operator.mod, torch.Tensor.__mod__)(_py_or(operator.mod, _bin("remainder")))
register(operator.pow, torch.Tensor.__pow__)(_py_or(operator.pow, _rpow))
register(operator.and_, torch.Tensor.__and__)(_py_or(operator.and_, _bin("bitwise_and")))
register(operator.or_, torch.Tensor.__or__)(_py_or(operator.or_, _bin("bitwise_or")))
register(operator.xor, torch.Tensor.__xor__)(_py_or(operator.xor, _bin("bitwise_xor")))
for _pyop, _op in ((operator.eq, "eq"), (operator.ne, "ne"), (operator.lt, "lt"),
                   (operator.le, "le"), (operator.gt, "gt"), (operator.ge, "ge")):
    register(_pyop, getattr(torch.Tensor, "__%s__" % _op), "__%s__" % _op)(_py_or(_pyop, _bin(_op)))


@register(torch.Tensor.__rsub__)
def _t_rsub(b, input, other):
    return _rsub_op(b, other, input)


@register(torch.Tensor.__rtruediv__)
def _t_rtruediv(b, input, other):
    return _rdiv(b, other, input)


@register(torch.Tensor.__rpow__)
def _t_rpow(b, input, other):
    return _rpow(b, other, input)


@register(torch.Tensor.__rfloordiv__)
def _t_rfloordiv(b, input, other):
    return binary(b, "div", other, input, {"rounding_mode": "floor"})


@register(operator.neg, *if_new(torch.Tensor.__neg__))
def _op_neg(b, x):
    return b.op("neg", [x]) if is_value(x) else operator.neg(x)


@register(operator.pos)
def _op_pos(b, x):
    return x if is_value(x) else operator.pos(x)


@register(operator.abs, *if_new(torch.Tensor.__abs__))
def _op_abs(b, x):
    return b.op("abs", [x]) if is_value(x) else operator.abs(x)


register(operator.invert, torch.bitwise_not, *tensor_method_keys("bitwise_not"),
         *if_new(torch.Tensor.__invert__))(_invert)


# in-place operators (x += y) as traced: operator.iadd etc.
def _iop(fn):
    def conv(b, a, c):
        r = fn(b, a, c)
        if is_value(a) and is_value(r) and r.dtype != a.dtype:
            r = b.to_dtype(r, a.dtype)
        return r
    return conv


def _a_is_value(args, kwargs):
    return 0 if args and is_value(args[0]) else None


for _pyop, _inop, _fn in ((operator.add, operator.iadd, _bin("add")),
                          (operator.sub, operator.isub, _rsub_op),
                          (operator.mul, operator.imul, _bin("mul")),
                          (operator.truediv, operator.itruediv, _rdiv)):
    _c = _iop(_py_or(_pyop, _fn))
    _c.__name__ = "operator_" + _inop.__name__
    register(_inop, mutates=_a_is_value)(_c)


# ---- dtype conversions -----------------------------------------------------------------

def _is_dtype(x):
    return isinstance(x, torch.dtype)


def convert(b, x, dtype):
    """x.to(dtype): the same Value when the dtype already matches (torch
    returns self then)."""
    if not is_value(x):
        raise Unsupported("dtype conversion of a non-tensor")
    return b.to_dtype(x, dtype)


@register(*tensor_method_keys("to"))
def _to(b, input, *args, **kwargs):
    """to(dtype), to(device), to(device, dtype), to(other), with
    non_blocking/copy/memory_format accepted (copy=True copies)."""
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", False)
    mf = kwargs.pop("memory_format", None)
    if kwargs:
        raise Unsupported("Tensor.to() keywords %s" % sorted(kwargs))
    if mf not in (None, torch.preserve_format, torch.contiguous_format):
        raise Unsupported("memory_format=%s" % (mf,))
    for a in args:
        if _is_dtype(a):
            dtype = a
        elif is_value(a):
            dtype = a.dtype
        elif isinstance(a, (torch.device, str, bool)) or a is None:
            continue
        else:
            raise Unsupported("Tensor.to(%s)" % type(a).__name__)
    r = input if dtype is None else convert(b, input, dtype)
    if copy and r is input:
        r = b.op("clone", [input])
    return r


@register(*tensor_method_keys("type"))
def _type(b, input, dtype=None, non_blocking=False, **kwargs):
    if dtype is None:
        raise Unsupported("Tensor.type() without a dtype returns a string")
    if isinstance(dtype, str):
        names = {"torch.FloatTensor": torch.float32, "torch.DoubleTensor": torch.float64,
                 "torch.HalfTensor": torch.float16, "torch.BFloat16Tensor": torch.bfloat16,
                 "torch.LongTensor": torch.int64, "torch.IntTensor": torch.int32,
                 "torch.ShortTensor": torch.int16, "torch.CharTensor": torch.int8,
                 "torch.ByteTensor": torch.uint8, "torch.BoolTensor": torch.bool}
        if dtype not in names:
            raise Unsupported("Tensor.type(%r)" % dtype)
        dtype = names[dtype]
    return convert(b, input, dtype)


@register(*tensor_method_keys("type_as"))
def _type_as(b, input, other):
    return convert(b, input, other.dtype)


def _cast(dtype):
    def conv(b, input, memory_format=None):
        return convert(b, input, dtype)
    conv.__name__ = "cast_" + str(dtype).replace("torch.", "")
    return conv


for _m, _dt in (("float", torch.float32), ("double", torch.float64), ("half", torch.float16),
                ("bfloat16", torch.bfloat16), ("long", torch.int64), ("int", torch.int32),
                ("short", torch.int16), ("char", torch.int8), ("byte", torch.uint8),
                ("bool", torch.bool)):
    register(*tensor_method_keys(_m))(_cast(_dt))


# ---- misc ------------------------------------------------------------------------------

@register(torch.nan_to_num, *tensor_method_keys("nan_to_num"))
def _nan_to_num(b, input, nan=0.0, posinf=None, neginf=None):
    if not input.dtype.is_floating_point:
        return input
    fi = torch.finfo(input.dtype)
    posinf = fi.max if posinf is None else posinf
    neginf = fi.min if neginf is None else neginf
    x = b.op("masked_fill", [input, b.op("isnan", [input])], {"value": float(nan)})
    inf = b.op("isinf", [x])
    pos = b.op("logical_and", [inf, b.op("gt", [x], {"other": 0})])
    neg = b.op("logical_and", [inf, b.op("lt", [x], {"other": 0})])
    x = b.op("masked_fill", [x, pos], {"value": float(posinf)})
    return b.op("masked_fill", [x, neg], {"value": float(neginf)})


# ---- math functions ptc has no op for: short compositions -------------------------------------

def _float_in(b, x):
    """Integer/bool inputs compute in float32, as torch's unary float ops."""
    return x if x.dtype.is_floating_point else b.to_dtype(x, torch.float32)


def _one_minus_sq_sqrt(b, x):
    """sqrt((1 - x) * (1 + x)) (more accurate than 1 - x*x near |x| = 1)."""
    t = b.op("mul", [_rsub_op(b, 1, x), b.op("add", [x], {"other": 1})])
    return b.op("sqrt", [t])


def _composed(name, fn):
    def conv(b, input, *, out=None):
        _no_out(out)
        return fn(b, _float_in(b, input))
    conv.__name__ = "composed_" + name
    return conv


_COMPOSED = {
    # atan(x) = atan2(x, 1)
    "atan": lambda b, x: b.op("atan2", [x], {"other": 1.0}),
    "asin": lambda b, x: b.op("atan2", [x, _one_minus_sq_sqrt(b, x)]),
    "acos": lambda b, x: b.op("atan2", [_one_minus_sq_sqrt(b, x), x]),
    # sinh via expm1 keeps small arguments exact; cosh = (e^x + e^-x) / 2
    "sinh": lambda b, x: b.op("mul", [b.op("sub", [b.op("expm1", [x]),
                                                   b.op("expm1", [b.op("neg", [x])])])],
                              {"other": 0.5}),
    "cosh": lambda b, x: b.op("mul", [b.op("add", [b.op("exp", [x]),
                                                   b.op("exp", [b.op("neg", [x])])])],
                              {"other": 0.5}),
    "log10": lambda b, x: b.op("div", [b.op("log", [x])], {"other": 2.302585092994046}),
    "frac": lambda b, x: b.op("sub", [x, b.op("trunc", [x])]),
    "deg2rad": lambda b, x: b.op("mul", [x], {"other": 0.017453292519943295}),
    "rad2deg": lambda b, x: b.op("mul", [x], {"other": 57.29577951308232}),
}
for _name, _fn in _COMPOSED.items():
    register(getattr(torch, _name, None), *tensor_method_keys(_name))(_composed(_name, _fn))
register(getattr(torch, "arctan", None), *tensor_method_keys("arctan"))(
    _composed("arctan", _COMPOSED["atan"]))
register(getattr(torch, "arcsin", None), *tensor_method_keys("arcsin"))(
    _composed("arcsin", _COMPOSED["asin"]))
register(getattr(torch, "arccos", None), *tensor_method_keys("arccos"))(
    _composed("arccos", _COMPOSED["acos"]))


@register(torch.hypot, *tensor_method_keys("hypot"))
def _hypot(b, input, other, *, out=None):
    _no_out(out)
    s = b.op("add", [binary(b, "mul", input, input), binary(b, "mul", other, other)])
    return b.op("sqrt", [s])


@register(F.glu)
def _f_glu(b, input, dim=-1):
    a, g = b.ops("chunk", [input], {"chunks": 2, "dim": int(concrete(dim))})
    return b.op("mul", [a, b.op("sigmoid", [g])])
