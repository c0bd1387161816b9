"""_map_nn.py - mapping entries of matrix products (matmul, mm, bmm, addmm,
baddbmm, linear, einsum by permute/reshape/bmm), convolutions, pooling,
interpolate, scaled dot-product attention, embedding, one_hot and pad.

Registered into the single table of _map_core."""
import operator

import torch
import torch.nn.functional as F

from ._map_core import Unsupported, concrete, is_int, is_value, optional, register, \
    tensor_method_keys


def _no_out(out):
    if out is not None:
        raise Unsupported("out= is not supported")


# ---- matrix products ------------------------------------------------------------------------

@register(torch.matmul, operator.matmul, torch.Tensor.__matmul__, *tensor_method_keys("matmul"))
def _matmul(b, input, other, *, out=None):
    _no_out(out)
    return b.op("matmul", [b.as_value(input), b.as_value(other)])


@register(torch.Tensor.__rmatmul__)
def _rmatmul(b, input, other):
    return b.op("matmul", [b.as_value(other), input])


@register(torch.dot, *tensor_method_keys("dot"))
def _dot(b, input, other, *, out=None):
    _no_out(out)
    return b.op("matmul", [input, other])


@register(torch.mm, *tensor_method_keys("mm"))
def _mm(b, input, mat2, *, out=None):
    _no_out(out)
    return b.op("mm", [input, mat2])


@register(torch.bmm, *tensor_method_keys("bmm"))
def _bmm(b, input, mat2, *, out=None):
    _no_out(out)
    return b.op("bmm", [input, mat2])


def _scale_attrs(beta, alpha):
    a = {}
    if beta != 1:
        a["beta"] = float(concrete(beta))
    if alpha != 1:
        a["alpha"] = float(concrete(alpha))
    return a


@register(torch.addmm, *tensor_method_keys("addmm"))
def _addmm(b, input, mat1, mat2, *, beta=1, alpha=1, out=None):
    _no_out(out)
    return b.op("addmm", [b.as_value(input, mat1), mat1, mat2], _scale_attrs(beta, alpha))


@register(torch.baddbmm, *tensor_method_keys("baddbmm"))
def _baddbmm(b, input, batch1, batch2, *, beta=1, alpha=1, out=None):
    _no_out(out)
    return b.op("baddbmm", [b.as_value(input, batch1), batch1, batch2],
                _scale_attrs(beta, alpha))


def linear(b, x, weight, bias=None):
    ins = [x, b.as_value(weight)]
    if bias is not None:
        ins.append(b.as_value(bias))
    return b.op("linear", ins)


@register(F.linear)
def _f_linear(b, input, weight, bias=None):
    return linear(b, input, weight, bias)


@register(torch.outer, *tensor_method_keys("outer"))
def _outer(b, input, vec2):
    u = b.op("unsqueeze", [input], {"dim": 1})
    v = b.op("unsqueeze", [vec2], {"dim": 0})
    return b.op("mul", [u, v])


# ---- einsum -------------------------------------------------------------------------------

def _parse_einsum(eq, nops):
    eq = eq.replace(" ", "")
    if "." in eq:
        raise Unsupported("einsum with an ellipsis")
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs = eq
        letters = lhs.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = lhs.split(",")
    if len(ins) != nops:
        raise Unsupported("einsum equation has %d operands, got %d" % (len(ins), nops))
    for s in ins + [out]:
        if len(set(s)) != len(s):
            raise Unsupported("einsum with a repeated index in one operand (diagonal)")
    return ins, out


def _sum_away(b, x, labels, keep):
    """Sums the dims of x whose labels are not in `keep`."""
    drop = [i for i, c in enumerate(labels) if c not in keep]
    if drop:
        x = b.op("sum", [x], {"dim": drop})
        labels = "".join(c for c in labels if c in keep)
    return x, labels


def einsum(b, eq, ops):
    """einsum of one or two operands: one operand = sum + permute; two =
    permute both to [batch, free, contracted] / [batch, contracted, free],
    reshape to 3-D, bmm, reshape back and permute to the output order."""
    ins, out = _parse_einsum(eq, len(ops))
    if len(ops) == 1:
        x, lab = _sum_away(b, ops[0], ins[0], out)
        return b.op("permute", [x], {"dims": [lab.index(c) for c in out]}) \
            if lab != out else x
    if len(ops) != 2:
        raise Unsupported("einsum with %d operands (one or two are mapped)" % len(ops))
    (a, la), (c, lc) = (ops[0], ins[0]), (ops[1], ins[1])
    a, la = _sum_away(b, a, la, lc + out)
    c, lc = _sum_away(b, c, lc, la + out)
    size = {}
    for x, lab in ((a, la), (c, lc)):
        for ch, s in zip(lab, x.shape):
            size.setdefault(ch, s)
    batch = [ch for ch in la if ch in lc and ch in out]
    contr = [ch for ch in la if ch in lc and ch not in out]
    fa = [ch for ch in la if ch not in lc]
    fc = [ch for ch in lc if ch not in la]

    def prod(chs):
        n = 1
        for ch in chs:
            n = n * size[ch]
        return n

    pa = b.op("permute", [a], {"dims": [la.index(ch) for ch in batch + fa + contr]})
    pc = b.op("permute", [c], {"dims": [lc.index(ch) for ch in batch + contr + fc]})
    pa = b.op("reshape", [pa], {"shape": [prod(batch), prod(fa), prod(contr)]})
    pc = b.op("reshape", [pc], {"shape": [prod(batch), prod(contr), prod(fc)]})
    r = b.op("bmm", [pa, pc])
    labels = batch + fa + fc
    r = b.op("reshape", [r], {"shape": [size[ch] for ch in labels]})
    order = [labels.index(ch) for ch in out]
    if order != list(range(len(order))):
        r = b.op("permute", [r], {"dims": order})
    return r


@register(torch.einsum)
def _einsum(b, equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not all(is_value(o) for o in operands):
        raise Unsupported("einsum operands must be tensors")
    return einsum(b, equation, list(operands))


# ---- convolution and pooling ------------------------------------------------------------------

def _spatial(v, what):
    if v is None:
        return None
    if is_int(v):
        return [int(concrete(v))]
    return [int(concrete(e)) for e in v]


def conv(b, op, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    attrs = {"stride": _spatial(stride, "stride"), "dilation": _spatial(dilation, "dilation"),
             "groups": int(concrete(groups))}
    if isinstance(padding, str):
        attrs["padding_str"] = padding
    else:
        attrs["padding"] = _spatial(padding, "padding")
    ins = [x, b.as_value(weight)] + ([b.as_value(bias)] if bias is not None else [])
    return b.op(op, ins, attrs)


@register(F.conv1d, torch.conv1d)
def _conv1d(b, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return conv(b, "conv1d", input, weight, bias, stride, padding, dilation, groups)


@register(F.conv2d, torch.conv2d)
def _conv2d(b, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return conv(b, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def max_pool2d(b, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        raise Unsupported("max_pool2d with return_indices=True")
    stride = _spatial(stride, "stride")
    return b.op("max_pool2d", [x], {"kernel_size": _spatial(kernel_size, "kernel_size"),
                                    "stride": stride or None,
                                    "padding": _spatial(padding, "padding"),
                                    "dilation": _spatial(dilation, "dilation"),
                                    "ceil_mode": bool(ceil_mode)})


@register(F.max_pool2d, torch.max_pool2d)
def _max_pool2d(b, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
    return max_pool2d(b, input, kernel_size, stride, padding, dilation, ceil_mode,
                      return_indices)


def avg_pool2d(b, x, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    stride = _spatial(stride, "stride")
    return b.op("avg_pool2d", [x], {"kernel_size": _spatial(kernel_size, "kernel_size"),
                                    "stride": stride or None,
                                    "padding": _spatial(padding, "padding"),
                                    "ceil_mode": bool(ceil_mode),
                                    "count_include_pad": bool(count_include_pad),
                                    "divisor_override": divisor_override})


@register(F.avg_pool2d)
def _avg_pool2d(b, input, kernel_size, stride=None, padding=0, ceil_mode=False,
                count_include_pad=True, divisor_override=None):
    return avg_pool2d(b, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override)


def _one(v):
    v = _spatial(v, "")
    return None if v is None else [1, v[0]] if v else None


def pool1d(b, fn, x, *args):
    """1-d pooling as 2-d pooling over [.., 1, L]."""
    x2 = b.op("unsqueeze", [x], {"dim": -2})
    return b.op("squeeze", [fn(b, x2, *args)], {"dim": [-2]})


@register(F.max_pool1d, torch.max_pool1d)
def _max_pool1d(b, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
    pad = _spatial(padding, "padding")
    return pool1d(b, max_pool2d, input, _one(kernel_size), _one(stride) if stride else None,
                  [0, pad[0]], _one(dilation), ceil_mode, return_indices)


@register(F.avg_pool1d, torch.avg_pool1d)
def _avg_pool1d(b, input, kernel_size, stride=None, padding=0, ceil_mode=False,
                count_include_pad=True):
    pad = _spatial(padding, "padding")
    return pool1d(b, avg_pool2d, input, _one(kernel_size), _one(stride) if stride else None,
                  [0, pad[0]], ceil_mode, count_include_pad)


def adaptive_avg_pool2d(b, x, output_size):
    os = [output_size, output_size] if is_int(output_size) or output_size is None \
        else list(output_size)
    if len(os) == 1:
        os = os * 2
    os = [x.shape[x.ndim - 2 + i] if v is None else v for i, v in enumerate(os)]
    return b.op("adaptive_avg_pool2d", [x], {"output_size": [int(concrete(v)) for v in os]})


@register(F.adaptive_avg_pool2d)
def _adaptive_avg_pool2d(b, input, output_size):
    return adaptive_avg_pool2d(b, input, output_size)


def interpolate(b, x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    if mode not in ("nearest", "bilinear"):
        raise Unsupported("interpolate mode %r (nearest and bilinear are mapped)" % (mode,))
    if antialias:
        raise Unsupported("interpolate with antialias=True")
    if x.ndim != 4:
        raise Unsupported("interpolate of a rank-%d input (4-d is mapped)" % x.ndim)
    attrs = {"mode": mode}
    if mode == "bilinear":
        attrs["align_corners"] = bool(align_corners)
    if size is not None:
        attrs["size"] = [size, size] if is_int(size) else list(size)
    elif scale_factor is not None:
        sf = [float(scale_factor)] * 2 if isinstance(scale_factor, (int, float)) \
            else [float(s) for s in scale_factor]
        if recompute_scale_factor:
            attrs["size"] = [int(concrete(x.shape[2 + i]) * sf[i]) for i in range(2)]
        else:
            attrs["scale_factor"] = sf
    else:
        raise Unsupported("interpolate needs size or scale_factor")
    return b.op("interpolate", [x], attrs)


@register(F.interpolate, F.upsample)
def _interpolate(b, input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None, antialias=False):
    return interpolate(b, input, size, scale_factor, mode, align_corners,
                       recompute_scale_factor, antialias)


# ---- attention, embedding, pad ------------------------------------------------------------------

def sdpa(b, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    if dropout_p:
        raise Unsupported("scaled_dot_product_attention with dropout_p=%g" % dropout_p)
    ins = [q, k, v]
    if attn_mask is not None:
        ins.append(b.as_value(attn_mask))
    return b.op("scaled_dot_product_attention", ins,
                {"is_causal": bool(is_causal) or None,
                 "scale": None if scale is None else float(scale)})


@register(optional(F, "scaled_dot_product_attention"))
def _f_sdpa(b, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
            enable_gqa=False):
    if enable_gqa:
        raise Unsupported("scaled_dot_product_attention with enable_gqa=True")
    return sdpa(b, query, key, value, attn_mask, dropout_p, is_causal, scale)


def embedding(b, indices, weight, padding_idx=None, max_norm=None):
    if max_norm is not None:
        raise Unsupported("embedding with max_norm (renormalises the weight in place)")
    return b.op("embedding", [b.as_value(weight), indices],
                {"padding_idx": None if padding_idx is None else int(padding_idx)})


@register(F.embedding)
def _f_embedding(b, input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False):
    return embedding(b, input, weight, padding_idx, max_norm)


@register(torch.embedding)
def _t_embedding(b, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return embedding(b, indices, weight, None)


@register(F.one_hot)
def _f_one_hot(b, tensor, num_classes=-1):
    if num_classes is None or num_classes < 0:
        raise Unsupported("one_hot without num_classes (data-dependent size)")
    cls = b.op("arange", [], {"end": int(num_classes), "dtype": torch.int64})
    eq = b.op("eq", [b.op("unsqueeze", [tensor], {"dim": -1}), cls])
    return b.op("to_dtype", [eq], {"dtype": torch.int64})


def pad(b, x, p, mode="constant", value=None):
    if mode != "constant":
        raise Unsupported("pad mode %r (constant is mapped)" % (mode,))
    return b.op("pad", [x], {"pad": list(p), "value": None if value is None else
                             float(concrete(value))})


@register(F.pad)
def _f_pad(b, input, pad_, mode="constant", value=None):
    return pad(b, input, pad_, mode, value)


@register(torch.constant_pad_nd)
def _constant_pad_nd(b, input, pad_, value=0):
    return pad(b, input, pad_, "constant", value)
