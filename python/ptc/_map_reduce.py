"""_map_reduce.py - mapping entries of reductions and normalisations: sum,
mean, prod, amax/amin, max/min (all three overloads), argmax/argmin,
any/all, var/std/var_mean/std_mean (unbiased or correction), logsumexp,
cumsum, softmax/log_softmax/softmin (with torch's implicit-dim rule), topk,
sort/argsort, norm/normalize (p=2), layer_norm, group_norm, batch_norm
(inference) and rms_norm.

Registered into the single table of _map_core."""
import torch
import torch.nn.functional as F

from ._map_core import (MinMaxResult, Unsupported, concrete, is_int, is_value, optional,
                        register, tensor_method_keys)


def dims_attr(dim):
    """dim argument -> INTS attribute (None: all dims)."""
    if dim is None:
        return None
    if is_int(dim):
        return [int(concrete(dim))]
    return [int(concrete(d)) for d in dim]


def _no_out(out):
    if out is not None:
        raise Unsupported("out= is not supported")


def _reduce(op):
    def conv(b, input, dim=None, keepdim=False, *, dtype=None, out=None):
        _no_out(out)
        if isinstance(dim, torch.dtype):  # sum(x, dtype) positional legacy form
            dim, dtype = None, dim
        return b.op(op, [input], {"dim": dims_attr(dim), "keepdim": bool(keepdim) or None,
                                  "dtype": dtype})
    conv.__name__ = "reduce_" + op
    return conv


register(torch.sum, *tensor_method_keys("sum"))(_reduce("sum"))
register(torch.mean, *tensor_method_keys("mean"))(_reduce("mean"))
register(torch.prod, *tensor_method_keys("prod"))(_reduce("prod"))


def _minmax(op):
    def conv(b, input, dim=(), keepdim=False, *, out=None):
        _no_out(out)
        d = dims_attr(dim)
        return b.op(op, [input], {"dim": d if d else None, "keepdim": bool(keepdim) or None})
    conv.__name__ = "reduce_" + op
    return conv


register(torch.amax, *tensor_method_keys("amax"))(_minmax("amax"))
register(torch.amin, *tensor_method_keys("amin"))(_minmax("amin"))


def _argminmax(op):
    def conv(b, input, dim=None, keepdim=False, *, out=None):
        _no_out(out)
        return b.op(op, [input], {"dim": None if dim is None else int(concrete(dim)),
                                  "keepdim": bool(keepdim) or None})
    conv.__name__ = "reduce_" + op
    return conv


register(torch.argmax, *tensor_method_keys("argmax"))(_argminmax("argmax"))
register(torch.argmin, *tensor_method_keys("argmin"))(_argminmax("argmin"))


def _max_min(red, arg, binop):
    """torch.max(x) / torch.max(x, dim, keepdim) -> (values, indices) /
    torch.max(x, other)."""
    def conv(b, input, *args, **kwargs):
        _no_out(kwargs.pop("out", None))
        other = kwargs.pop("other", None)
        if args and (is_value(args[0]) or isinstance(args[0], torch.Tensor)):
            other, args = args[0], args[1:]
        if other is not None:
            if args or kwargs:
                raise Unsupported("max/min(input, other) takes no further arguments")
            return b.op(binop, [input, b.as_value(other)])
        dim = kwargs.pop("dim", args[0] if args else None)
        keepdim = kwargs.pop("keepdim", args[1] if len(args) > 1 else False)
        if kwargs:
            raise Unsupported("unexpected keywords %s" % sorted(kwargs))
        if dim is None:
            return b.op(red, [input])
        d = int(concrete(dim))
        attrs = {"dim": [d], "keepdim": bool(keepdim) or None}
        vals = b.op(red, [input], attrs)
        idx = b.op(arg, [input], {"dim": d, "keepdim": bool(keepdim) or None})
        return MinMaxResult(vals, idx)
    conv.__name__ = "max_min_" + red
    return conv


register(torch.max, *tensor_method_keys("max"))(_max_min("amax", "argmax", "maximum"))
register(torch.min, *tensor_method_keys("min"))(_max_min("amin", "argmin", "minimum"))


def _logical(op):
    def conv(b, input, dim=None, keepdim=False, *, out=None):
        _no_out(out)
        return b.op(op, [input], {"dim": dims_attr(dim), "keepdim": bool(keepdim) or None})
    conv.__name__ = "reduce_" + op
    return conv


register(torch.any, *tensor_method_keys("any"))(_logical("any"))
register(torch.all, *tensor_method_keys("all"))(_logical("all"))


def _var_attrs(args, kwargs):
    """torch's var/std overloads -> (dim, keepdim, attrs with unbiased/correction)."""
    args = list(args)
    dim, unbiased, keepdim = None, None, False
    if args and isinstance(args[0], bool):
        unbiased = args.pop(0)
    else:
        if args:
            dim = args.pop(0)
        if args:
            unbiased = args.pop(0)
        if args:
            keepdim = args.pop(0)
    if args:
        raise Unsupported("too many positional arguments")
    dim = kwargs.pop("dim", dim)
    unbiased = kwargs.pop("unbiased", unbiased)
    keepdim = kwargs.pop("keepdim", keepdim)
    correction = kwargs.pop("correction", None)
    _no_out(kwargs.pop("out", None))
    if kwargs:
        raise Unsupported("unexpected keywords %s" % sorted(kwargs))
    attrs = {"dim": dims_attr(dim), "keepdim": bool(keepdim) or None}
    if correction is not None:
        attrs["correction"] = concrete(correction)
    elif unbiased is not None:
        attrs["unbiased"] = bool(unbiased)
    return attrs


def _var_like(op, sqrt_first=False):
    def conv(b, input, *args, **kwargs):
        attrs = _var_attrs(args, kwargs)
        if op == "std_mean":
            var, mean = b.ops("var_mean", [input], attrs)
            return (b.op("sqrt", [var]), mean)
        out = b.ops(op, [input], attrs)
        return tuple(out) if op == "var_mean" else out[0]
    conv.__name__ = "reduce_" + op
    return conv


register(torch.var, *tensor_method_keys("var"))(_var_like("var"))
register(torch.std, *tensor_method_keys("std"))(_var_like("std"))
register(torch.var_mean)(_var_like("var_mean"))
register(torch.std_mean)(_var_like("std_mean"))


@register(torch.logsumexp, *tensor_method_keys("logsumexp"))
def _logsumexp(b, input, dim, keepdim=False, *, out=None):
    _no_out(out)
    return b.op("logsumexp", [input], {"dim": dims_attr(dim), "keepdim": bool(keepdim) or None})


@register(torch.cumsum, *tensor_method_keys("cumsum"))
def _cumsum(b, input, dim, *, dtype=None, out=None):
    _no_out(out)
    return b.op("cumsum", [input], {"dim": int(concrete(dim)), "dtype": dtype})


# ---- softmax -----------------------------------------------------------------------------

def implicit_softmax_dim(ndim):
    """torch.nn.functional._get_softmax_dim."""
    return 0 if ndim in (0, 1, 3) else 1


def softmax(b, op, x, dim, dtype=None):
    if dim is None:
        dim = implicit_softmax_dim(x.ndim)
    return b.op(op, [x], {"dim": int(concrete(dim)), "dtype": dtype})


@register(torch.softmax, *tensor_method_keys("softmax"))
def _softmax(b, input, dim, dtype=None):
    return softmax(b, "softmax", input, dim, dtype)


@register(torch.log_softmax, *tensor_method_keys("log_softmax"))
def _log_softmax(b, input, dim, dtype=None):
    return softmax(b, "log_softmax", input, dim, dtype)


@register(F.softmax, optional(torch, "special", "softmax"))
def _f_softmax(b, input, dim=None, _stacklevel=3, dtype=None):
    return softmax(b, "softmax", input, dim, dtype)


@register(F.log_softmax, optional(torch, "special", "log_softmax"))
def _f_log_softmax(b, input, dim=None, _stacklevel=3, dtype=None):
    return softmax(b, "log_softmax", input, dim, dtype)


@register(F.softmin)
def _f_softmin(b, input, dim=None, _stacklevel=3, dtype=None):
    x = input if dtype is None else b.to_dtype(input, dtype)
    return softmax(b, "softmax", b.op("neg", [x]), dim)


# ---- topk / sort --------------------------------------------------------------------------

@register(torch.topk, *tensor_method_keys("topk"))
def _topk(b, input, k, dim=-1, largest=True, sorted=True, *, out=None):
    _no_out(out)
    v, i = b.ops("topk", [input], {"k": k, "dim": int(concrete(dim)), "largest": bool(largest),
                                   "sorted": bool(sorted)})
    return MinMaxResult(v, i)


def _sort_attrs(args, kwargs):
    args = list(args)
    stable = kwargs.pop("stable", None)
    if args and isinstance(args[0], bool) and "dim" in kwargs:  # sort(stable, dim=, ...)
        stable = args.pop(0)
    dim = kwargs.pop("dim", args.pop(0) if args else -1)
    descending = kwargs.pop("descending", args.pop(0) if args else False)
    _no_out(kwargs.pop("out", None))
    if kwargs or args:
        raise Unsupported("unexpected sort arguments")
    return {"dim": int(concrete(dim)), "descending": bool(descending),
            "stable": None if stable is None else bool(stable)}


@register(torch.sort, *tensor_method_keys("sort"))
def _sort(b, input, *args, **kwargs):
    v, i = b.ops("sort", [input], _sort_attrs(args, kwargs))
    return MinMaxResult(v, i)


@register(torch.argsort, *tensor_method_keys("argsort"))
def _argsort(b, input, *args, **kwargs):
    return b.ops("sort", [input], _sort_attrs(args, kwargs))[1]


# ---- norms --------------------------------------------------------------------------------

def norm2(b, x, dim, keepdim):
    sq = b.op("mul", [x, x])
    return b.op("sqrt", [b.op("sum", [sq], {"dim": dims_attr(dim),
                                            "keepdim": bool(keepdim) or None})])


@register(torch.norm, *tensor_method_keys("norm"))
def _norm(b, input, p="fro", dim=None, keepdim=False, dtype=None, out=None):
    _no_out(out)
    if p not in ("fro", 2, 2.0, None):
        raise Unsupported("norm with p=%r (only the 2-norm is mapped)" % (p,))
    x = input if dtype is None else b.to_dtype(input, dtype)
    return norm2(b, x, dim, keepdim)


@register(F.normalize)
def _f_normalize(b, input, p=2.0, dim=1, eps=1e-12, out=None):
    _no_out(out)
    if p not in (2, 2.0):
        raise Unsupported("normalize with p=%r (only p=2 is mapped)" % (p,))
    n = norm2(b, input, dim, True)
    n = b.op("clamp", [n], {"min": float(eps)})
    return b.op("div", [input, n])


# ---- normalisation layers -----------------------------------------------------------------

def layer_norm(b, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    ns = [normalized_shape] if is_int(normalized_shape) else list(normalized_shape)
    return b.op("layer_norm", [x, b.as_value(weight) if weight is not None else None,
                               b.as_value(bias) if bias is not None else None],
                {"normalized_shape": ns, "eps": float(eps)})


@register(F.layer_norm)
def _f_layer_norm(b, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return layer_norm(b, input, normalized_shape, weight, bias, eps)


@register(torch.layer_norm)
def _t_layer_norm(b, input, normalized_shape, weight=None, bias=None, eps=1e-5,
                  cudnn_enable=True):
    return layer_norm(b, input, normalized_shape, weight, bias, eps)


def group_norm(b, x, num_groups, weight=None, bias=None, eps=1e-5):
    return b.op("group_norm", [x, b.as_value(weight) if weight is not None else None,
                               b.as_value(bias) if bias is not None else None],
                {"num_groups": int(concrete(num_groups)), "eps": float(eps)})


@register(F.group_norm)
def _f_group_norm(b, input, num_groups, weight=None, bias=None, eps=1e-5):
    return group_norm(b, input, num_groups, weight, bias, eps)


@register(torch.group_norm)
def _t_group_norm(b, input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return group_norm(b, input, num_groups, weight, bias, eps)


def batch_norm(b, x, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    if training:
        raise Unsupported("batch_norm in training mode (batch statistics); call .eval()")
    if running_mean is None or running_var is None:
        raise Unsupported("batch_norm without running statistics uses batch statistics")
    ins = [x] + [b.as_value(t) if t is not None else None
                 for t in (weight, bias, running_mean, running_var)]
    return b.op("batch_norm", ins, {"eps": float(eps)})


@register(F.batch_norm)
def _f_batch_norm(b, input, running_mean, running_var, weight=None, bias=None, training=False,
                  momentum=0.1, eps=1e-5):
    return batch_norm(b, input, running_mean, running_var, weight, bias, training, momentum, eps)


@register(torch.batch_norm)
def _t_batch_norm(b, input, weight, bias, running_mean, running_var, training, momentum, eps,
                  cudnn_enabled=True):
    return batch_norm(b, input, running_mean, running_var, weight, bias, training, momentum, eps)


def rms_norm(b, x, normalized_shape, weight=None, eps=None):
    ns = [normalized_shape] if is_int(normalized_shape) else list(normalized_shape)
    return b.op("rms_norm", [x] + ([b.as_value(weight)] if weight is not None else []),
                {"normalized_shape": ns, "eps": None if eps is None else float(eps)})


@register(optional(F, "rms_norm"))
def _f_rms_norm(b, input, normalized_shape, weight=None, eps=None):
    return rms_norm(b, input, normalized_shape, weight, eps)
