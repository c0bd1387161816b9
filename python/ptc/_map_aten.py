"""_map_aten.py - ATen overloads (torch.ops.aten.*) in the one mapping table,
for graphs from make_fx / torch._dynamo.export / AOT autograd.

Two parts, both answered by _map_core.lookup:
- explicit TABLE entries keyed by torch._ops.OpOverload (aten.view.default,
  aten.sym_size.int, ...) or OpOverloadPacket (aten.sym_size) where the
  ATen convention differs from any torch Python function: private ops
  (aten._softmax, aten._to_copy, aten.native_layer_norm, ...), extra
  outputs (native_batch_norm), INT64_MAX slice ends, dim=[] meaning "all";
- `aten_fallback(op)`: any other overload of a public ATen op `name` uses
  the converter registered for torch.<name>, torch.Tensor.<name> or
  torch.nn.functional.<name>, in that order. torch's Python bindings are
  generated from the same ATen schemas (same argument order and names), so
  aten.add.Tensor(x, y, alpha=2) is torch.add(x, y, alpha=2); converters
  refuse (Unsupported) the argument forms they do not handle.

Every ATen attribute is looked up defensively (`aten(...)`), so torch
versions lacking an overload (torch 1.13 has no
_native_batch_norm_legit_no_training, ...) import fine.
"""
import torch
import torch.nn.functional as F

from . import _map_core
from ._map_core import (TABLE, Unavailable, Unsupported, concrete, is_int, is_value, register)
from ._map_reduce import dims_attr

_OpOverload = getattr(getattr(torch, "_ops", None), "OpOverload", None)
_OpOverloadPacket = getattr(getattr(torch, "_ops", None), "OpOverloadPacket", None)
_ATEN_TYPES = tuple(t for t in (_OpOverload, _OpOverloadPacket) if t is not None)
_INT64_MAX = 2 ** 63 - 1


def aten(name, overload=None):
    """torch.ops.aten.<name>[.<overload>], or None when this torch lacks it."""
    try:
        packet = getattr(torch.ops.aten, name)
        return packet if overload is None else getattr(packet, overload)
    except (AttributeError, RuntimeError):
        return None


def is_aten(target):
    return bool(_ATEN_TYPES) and isinstance(target, _ATEN_TYPES)


def aten_name(target):
    """(op name, overload name or None) of an OpOverload / OpOverloadPacket."""
    if _OpOverload is not None and isinstance(target, _OpOverload):
        return target.overloadpacket.__name__, target._overloadname
    return getattr(target, "__name__", str(target)), None


def fmt_aten(target):
    """"aten.add.Tensor" / "aten.add" (the namespace of the op, usually aten);
    None for targets that are not ATen ops."""
    if not is_aten(target):
        return None
    if _OpOverload is not None and isinstance(target, _OpOverload):
        ns = target._schema.name.split("::")[0]
        return "%s.%s.%s" % (ns, target.overloadpacket.__name__, target._overloadname)
    q = getattr(target, "_qualified_op_name", None)
    return q.replace("::", ".") if q else str(target)


def aten_fallback(target):
    """The converter of the same-named public torch function / Tensor method /
    F function for an ATen overload or packet (see the module comment), or
    None (also for targets that are not ATen ops). Explicit entries (for the
    overload, then its packet) win."""
    if not is_aten(target):
        return None
    name, _ = aten_name(target)
    if _OpOverload is not None and isinstance(target, _OpOverload):
        conv = TABLE.get(target.overloadpacket)
        if conv is not None:
            return conv
    if not name or name.startswith("_"):
        return None
    for ns in (torch, torch.Tensor, F):
        fn = getattr(ns, name, None)
        if fn is not None:
            try:
                conv = TABLE.get(fn)
            except TypeError:
                conv = None
            if conv is not None:
                return conv
    return None


def _conv(key):
    return TABLE[key]


# ---- sizes

@register(aten("sym_size", "int"), aten("sym_size"))
def _aten_sym_size(b, input, dim=None):
    return _conv(torch.Tensor.size)(b, input, dim)


@register(aten("sym_numel", "default"), aten("sym_numel"))
def _aten_sym_numel(b, input):
    return b.numel(input.shape)


# ---- views and copies

@register(aten("_unsafe_view", "default"), aten("view", "default"))
def _aten_view(b, input, size):
    return _conv(torch.Tensor.view)(b, input, list(size))


@register(aten("_reshape_alias", "default"))
def _aten_reshape_alias(b, input, size, stride):
    """torch 1.13's make_fx view of a contiguous reshape (the strides are
    those of the contiguous result)."""
    return _conv(torch.reshape)(b, input, list(size))


@register(aten("slice", "Tensor"))
def _aten_slice(b, input, dim=0, start=None, end=None, step=1):
    """aten.slice: end INT64_MAX (x[a:]) and start 0 are "no bound"."""
    if isinstance(end, int) and end >= 2 ** 62:
        end = None
    if isinstance(start, int) and start == 0:
        start = None
    idx = [slice(None)] * (int(concrete(dim)) % max(input.ndim, 1)) + \
        [slice(start, end, step)]
    return _conv(torch.Tensor.__getitem__)(b, input, tuple(idx))


@register(aten("index", "Tensor"))
def _aten_index(b, input, indices):
    """aten.index: a list of index tensors, None for a whole dim (x[:, i])."""
    idx = tuple(slice(None) if i is None else i for i in indices)
    return _conv(torch.Tensor.__getitem__)(b, input, idx)


@register(aten("_to_copy", "default"))
def _aten_to_copy(b, input, *, dtype=None, layout=None, device=None, pin_memory=None,
                  non_blocking=False, memory_format=None):
    if layout not in (None, torch.strided):
        raise Unsupported("_to_copy to layout %s" % (layout,))
    if memory_format not in (None, torch.preserve_format, torch.contiguous_format):
        raise Unsupported("memory_format=%s" % (memory_format,))
    if dtype is None or dtype == input.dtype:
        return b.op("clone", [input])
    return b.to_dtype(input, dtype)


@register(aten("alias", "default"), aten("lift_fresh_copy", "default"),
          aten("lift_fresh", "default"))
def _aten_alias(b, input):
    return input


# ---- softmax / normalisation

@register(aten("_softmax", "default"))
def _aten_softmax(b, input, dim, half_to_float):
    dt = torch.float32 if half_to_float else None
    return b.op("softmax", [input], {"dim": int(concrete(dim)), "dtype": dt})


@register(aten("_log_softmax", "default"))
def _aten_log_softmax(b, input, dim, half_to_float):
    dt = torch.float32 if half_to_float else None
    return b.op("log_softmax", [input], {"dim": int(concrete(dim)), "dtype": dt})


@register(aten("native_layer_norm", "default"))
def _aten_native_layer_norm(b, input, normalized_shape, weight, bias, eps):
    """(out, mean, rstd); mean/rstd have the normalised dims kept as size 1
    (unused ones are dropped by libptc's dead-code pass)."""
    out = _conv(F.layer_norm)(b, input, normalized_shape, weight, bias, eps)
    n = 1 if is_int(normalized_shape) else len(normalized_shape)
    dims = list(range(input.ndim - n, input.ndim))
    mean = b.op("mean", [input], {"dim": dims, "keepdim": True})
    var = b.op("var", [input], {"dim": dims, "keepdim": True, "correction": 0})
    eps_v = b.scalar(float(eps), var.dtype)
    rstd = b.op("rsqrt", [b.op("add", [var, eps_v])])
    return (out, mean, rstd)


def _bn_extras(why):
    return Unavailable("batch_norm %s is not computed by ptc (inference only)" % why)


@register(aten("native_batch_norm", "default"))
def _aten_native_batch_norm(b, input, weight, bias, running_mean, running_var, training,
                            momentum, eps):
    out = _conv(F.batch_norm)(b, input, running_mean, running_var, weight, bias, training,
                              momentum, eps)
    return (out, _bn_extras("save_mean"), _bn_extras("save_invstd"))


@register(aten("_native_batch_norm_legit_no_training", "default"))
def _aten_bn_no_training(b, input, weight, bias, running_mean, running_var, momentum, eps):
    return _aten_native_batch_norm(b, input, weight, bias, running_mean, running_var, False,
                                   momentum, eps)


@register(aten("native_dropout", "default"))
def _aten_native_dropout(b, input, p, train):
    if train and p:
        raise Unsupported("native_dropout in training mode")
    return (input, Unavailable("the dropout mask is not computed by ptc"))


# ---- reductions with dim=[] meaning "all dims"

def _all_if_empty(dim):
    return None if dim is not None and not is_int(dim) and len(dim) == 0 else dim


@register(aten("sum", "dim_IntList"))
def _aten_sum(b, input, dim, keepdim=False, *, dtype=None):
    return _conv(torch.sum)(b, input, _all_if_empty(dim), keepdim, dtype=dtype)


@register(aten("mean", "dim"))
def _aten_mean(b, input, dim, keepdim=False, *, dtype=None):
    return _conv(torch.mean)(b, input, _all_if_empty(dim), keepdim, dtype=dtype)


def _minmax(op):
    def conv(b, input, dim=(), keepdim=False):
        return b.op(op, [input], {"dim": dims_attr(_all_if_empty(dim)),
                                  "keepdim": bool(keepdim) or None})
    conv.__name__ = "aten_" + op
    return conv


register(aten("amax", "default"))(_minmax("amax"))
register(aten("amin", "default"))(_minmax("amin"))


# ---- convolution / pooling / linear algebra

@register(aten("convolution", "default"))
def _aten_convolution(b, input, weight, bias, stride, padding, dilation, transposed,
                      output_padding, groups):
    if transposed:
        raise Unsupported("transposed convolution")
    key = {3: F.conv1d, 4: F.conv2d}.get(weight.ndim if is_value(weight) else weight.dim())
    if key is None:
        raise Unsupported("%d-d convolution weight" % weight.ndim)
    return _conv(key)(b, input, weight, bias, list(stride), list(padding), list(dilation),
                      int(concrete(groups)))


@register(aten("max_pool2d_with_indices", "default"))
def _aten_max_pool2d_with_indices(b, input, kernel_size, stride=(), padding=0, dilation=1,
                                  ceil_mode=False):
    out = _conv(F.max_pool2d)(b, input, kernel_size, list(stride) or None, padding, dilation,
                              ceil_mode)
    return (out, Unavailable("max_pool2d indices are not computed by ptc"))


@register(aten("_adaptive_avg_pool2d", "default"))
def _aten_adaptive_avg_pool2d(b, input, output_size):
    return _conv(F.adaptive_avg_pool2d)(b, input, output_size)



@register(aten("_scaled_dot_product_flash_attention_for_cpu", "default"))
def _aten_sdpa_flash_cpu(b, query, key, value, dropout_p=0.0, is_causal=False, *,
                         attn_mask=None, scale=None):
    """(out, logsumexp); the logsumexp is not computed."""
    out = _conv(F.scaled_dot_product_attention)(b, query, key, value, attn_mask, dropout_p,
                                                is_causal, scale=scale)
    return (out, Unavailable("scaled_dot_product_attention logsumexp is not computed by ptc"))


_map_core.ATEN_FALLBACK = aten_fallback
_map_core.ATEN_FORMAT = fmt_aten
