"""_map_modules.py - mapping entries of torch.nn module classes (call_module
targets): Linear, Conv1d/2d, BatchNorm1d/2d (inference with running stats),
LayerNorm, GroupNorm, RMSNorm, Embedding, activations, Dropout (eval),
pooling, Flatten/Unflatten, Identity, Softmax/LogSoftmax/Softmin, Upsample,
constant pads, MultiheadAttention (batch_first or not, with or without
weights, attn_mask/key_padding_mask), TransformerEncoderLayer and
TransformerEncoder. Parameters and buffers become graph constants
(borrowed, no copy) named after the module's path (Builder.scope).

Module converters are called conv(b, module, *args, **kwargs).
Registered into the single table of _map_core."""
import math

import torch
import torch.nn as nn

from . import _map_elementwise as E
from . import _map_nn as N
from . import _map_reduce as R
from . import _map_shape as S
from ._map_core import TABLE, Unsupported, lookup, optional, register


def _mod_inplace(args, kwargs):
    """mutates() of activation modules: the input when module.inplace."""
    return 1 if getattr(args[0], "inplace", False) else None


def _training(what):
    def check(m):
        if m.training:
            return "%s in training mode: ptc computes inference graphs; call .eval()" % what
        return None
    return check


# ---- layers with parameters -----------------------------------------------------------

@register(nn.Linear)
def _linear(b, m, input):
    return N.linear(b, input, b.param(m, "weight"), b.param(m, "bias"))


def _conv_check(m):
    if m.padding_mode != "zeros":
        return "padding_mode=%r (zeros is mapped)" % m.padding_mode
    return None


@register(nn.Conv1d, check_module=_conv_check)
def _conv1d(b, m, input):
    return N.conv(b, "conv1d", input, b.param(m, "weight"), b.param(m, "bias"), m.stride,
                  m.padding, m.dilation, m.groups)


@register(nn.Conv2d, check_module=_conv_check)
def _conv2d(b, m, input):
    return N.conv(b, "conv2d", input, b.param(m, "weight"), b.param(m, "bias"), m.stride,
                  m.padding, m.dilation, m.groups)


def _bn_check(m):
    if m.training and m.track_running_stats:
        return "batch norm in training mode (batch statistics, running-stat updates); " \
               "call .eval()"
    if m.running_mean is None:
        return "batch norm without running statistics (track_running_stats=False)"
    return None


@register(nn.BatchNorm1d, nn.BatchNorm2d, check_module=_bn_check)
def _batch_norm(b, m, input):
    reason = _bn_check(m)
    if reason:
        raise Unsupported(reason)
    return R.batch_norm(b, input, b.param(m, "running_mean"), b.param(m, "running_var"),
                        b.param(m, "weight"), b.param(m, "bias"), False, 0.0, m.eps)


@register(nn.LayerNorm)
def _layer_norm(b, m, input):
    return R.layer_norm(b, input, m.normalized_shape, b.param(m, "weight"),
                        b.param(m, "bias"), m.eps)


@register(nn.GroupNorm)
def _group_norm(b, m, input):
    return R.group_norm(b, input, m.num_groups, b.param(m, "weight"), b.param(m, "bias"),
                        m.eps)


@register(optional(nn, "RMSNorm"))
def _rms_norm(b, m, input):
    return R.rms_norm(b, input, m.normalized_shape, b.param(m, "weight"), m.eps)


def _emb_check(m):
    if m.max_norm is not None:
        return "Embedding with max_norm (renormalises the weight in place)"
    return None


@register(nn.Embedding, check_module=_emb_check)
def _embedding(b, m, input):
    return N.embedding(b, input, b.param(m, "weight"), m.padding_idx, m.max_norm)


# ---- activations ------------------------------------------------------------------------

@register(nn.ReLU, mutates=_mod_inplace)
def _relu(b, m, input):
    return b.op("relu", [input])


@register(nn.ReLU6, mutates=_mod_inplace)
def _relu6(b, m, input):
    return E.hardtanh(b, input, 0.0, 6.0)


@register(nn.Hardtanh, mutates=_mod_inplace)
def _hardtanh(b, m, input):
    return E.hardtanh(b, input, m.min_val, m.max_val)


@register(nn.GELU)
def _gelu(b, m, input):
    return E._gelu(b, input, getattr(m, "approximate", "none"))


@register(nn.SiLU, mutates=_mod_inplace)
def _silu(b, m, input):
    return b.op("silu", [input])


@register(nn.Tanh)
def _tanh(b, m, input):
    return b.op("tanh", [input])


@register(nn.Sigmoid)
def _sigmoid(b, m, input):
    return b.op("sigmoid", [input])


@register(nn.Hardswish, mutates=_mod_inplace)
def _hardswish(b, m, input):
    return E.hardswish(b, input)


@register(nn.Hardsigmoid, mutates=_mod_inplace)
def _hardsigmoid(b, m, input):
    return E.hardsigmoid(b, input)


@register(nn.LeakyReLU, mutates=_mod_inplace)
def _leaky_relu(b, m, input):
    return E.leaky_relu(b, input, m.negative_slope)


@register(nn.ELU, mutates=_mod_inplace)
def _elu(b, m, input):
    return E.elu(b, input, float(m.alpha))


@register(nn.SELU, mutates=_mod_inplace)
def _selu(b, m, input):
    return E.elu(b, input, E.SELU_ALPHA, E.SELU_SCALE)


@register(nn.CELU, mutates=_mod_inplace)
def _celu(b, m, input):
    return E.elu(b, input, float(m.alpha), 1.0, 1.0 / float(m.alpha))


@register(nn.Softplus)
def _softplus(b, m, input):
    return E.softplus(b, input, m.beta, m.threshold)


@register(nn.Mish, mutates=_mod_inplace)
def _mish(b, m, input):
    return b.op("mul", [input, b.op("tanh", [E.softplus(b, input)])])


@register(nn.Softsign)
def _softsign(b, m, input):
    return E._f_softsign(b, input)


@register(nn.LogSigmoid)
def _logsigmoid(b, m, input):
    return E._f_logsigmoid(b, input)


@register(nn.Threshold, mutates=_mod_inplace)
def _threshold(b, m, input):
    return E._f_threshold(b, input, m.threshold, m.value)


@register(nn.Softmax)
def _softmax(b, m, input):
    return R.softmax(b, "softmax", input, m.dim)


@register(nn.LogSoftmax)
def _log_softmax(b, m, input):
    return R.softmax(b, "log_softmax", input, m.dim)


@register(nn.Softmin)
def _softmin(b, m, input):
    return R.softmax(b, "softmax", b.op("neg", [input]), m.dim)


# ---- shape-only and pooling modules -------------------------------------------------------

@register(nn.Dropout, optional(nn, "Dropout1d"), nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout,
          check_module=lambda m: _training("dropout")(m) if m.p > 0 else None)
def _dropout(b, m, input):
    return E.dropout(b, input, m.p, m.training)


@register(nn.Identity)
def _identity(b, m, input, *args, **kwargs):
    return input


@register(nn.Flatten)
def _flatten(b, m, input):
    return S.flatten(b, input, m.start_dim, m.end_dim)


@register(nn.Unflatten)
def _unflatten(b, m, input):
    return S.unflatten(b, input, m.dim, m.unflattened_size)


@register(nn.MaxPool2d)
def _max_pool2d(b, m, input):
    return N.max_pool2d(b, input, m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode,
                        m.return_indices)


@register(nn.AvgPool2d)
def _avg_pool2d(b, m, input):
    return N.avg_pool2d(b, input, m.kernel_size, m.stride, m.padding, m.ceil_mode,
                        m.count_include_pad, m.divisor_override)


@register(nn.MaxPool1d)
def _max_pool1d(b, m, input):
    return N._max_pool1d(b, input, m.kernel_size, m.stride, m.padding, m.dilation,
                         m.ceil_mode, m.return_indices)


@register(nn.AvgPool1d)
def _avg_pool1d(b, m, input):
    return N._avg_pool1d(b, input, m.kernel_size, m.stride, m.padding, m.ceil_mode,
                         m.count_include_pad)


@register(nn.AdaptiveAvgPool2d)
def _adaptive_avg_pool2d(b, m, input):
    return N.adaptive_avg_pool2d(b, input, m.output_size)


@register(nn.Upsample)
def _upsample(b, m, input):
    return N.interpolate(b, input, m.size, m.scale_factor, m.mode, m.align_corners,
                         getattr(m, "recompute_scale_factor", None))


@register(nn.ZeroPad2d, nn.ConstantPad1d, nn.ConstantPad2d)
def _const_pad(b, m, input):
    return N.pad(b, input, m.padding, "constant", getattr(m, "value", 0.0))


# ---- attention -------------------------------------------------------------------------------

def _mha_check(m):
    if m.bias_k is not None or m.bias_v is not None:
        return "MultiheadAttention with add_bias_kv=True"
    if m.add_zero_attn:
        return "MultiheadAttention with add_zero_attn=True"
    if m.training and m.dropout > 0:
        return "MultiheadAttention with dropout in training mode; call .eval()"
    return None


def _scoped(b, name):
    return b.scope + "." + name if b.scope else name


def _to_float_mask(b, mask, dtype):
    """MHA masks: bool True = masked -> -inf; float masks are added as is."""
    if mask.dtype == torch.bool:
        zeros = b.op("zeros", [], {"size": list(mask.shape), "dtype": dtype})
        return b.op("masked_fill", [zeros, mask], {"value": float("-inf")})
    return b.to_dtype(mask, dtype)


def attention(b, query, key, value, num_heads, w, bias, out_w, out_b, batch_first,
              key_padding_mask=None, need_weights=True, attn_mask=None,
              average_attn_weights=True, is_causal=False):
    """torch's multi-head attention forward on Values: w / bias are the
    (q, k, v) projection weights and biases (bias entries may be None),
    out_w / out_b the output projection. Batched inputs are [L, B, E]
    ([B, L, E] when batch_first), unbatched ones [L, E]. Masks as
    nn.MultiheadAttention: bool True = not allowed, float = added;
    attn_mask [L, S] or [B*H, L, S], key_padding_mask [B, S]. Returns
    (output, weights or None)."""
    batched = query.ndim == 3
    if not batched:
        query, key, value = (b.op("unsqueeze", [t], {"dim": 1}) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = b.op("unsqueeze", [key_padding_mask], {"dim": 0})
    elif batch_first:  # work in [L, B, E] as torch does
        query, key, value = (S.transpose(b, t, 0, 1) for t in (query, key, value))
    E_ = query.shape[2]
    H = int(num_heads)
    D = E_ // H
    L, B = query.shape[0], query.shape[1]
    Sk = key.shape[0]
    q, k, v = (N.linear(b, x, wi, bi) for x, wi, bi in zip((query, key, value), w, bias))

    def heads(t, n):  # [n, B, E] -> [B, H, n, D]
        t = b.op("reshape", [t], {"shape": [n, B, H, D]})
        return b.op("permute", [t], {"dims": [1, 2, 0, 3]})

    q, k, v = heads(q, L), heads(k, Sk), heads(v, Sk)
    mask = None
    if attn_mask is not None:
        am = attn_mask
        if am.ndim == 3:  # [B*H, L, S]
            am = b.op("reshape", [am], {"shape": [B, H, L, Sk]})
        mask = _to_float_mask(b, am, q.dtype)
    elif is_causal:
        causal = b.op("ones", [], {"size": [L, Sk], "dtype": torch.bool})
        causal = b.op("logical_not", [b.op("tril", [causal])])
        mask = _to_float_mask(b, causal, q.dtype)
    if key_padding_mask is not None:
        kp = b.op("reshape", [key_padding_mask], {"shape": [B, 1, 1, Sk]})
        kp = _to_float_mask(b, kp, q.dtype)
        mask = kp if mask is None else b.op("add", [mask, kp])
    scale = 1.0 / math.sqrt(D)
    weights = None
    if need_weights:
        sc = b.op("matmul", [b.op("mul", [q], {"other": scale}), S.transpose(b, k, -2, -1)])
        if mask is not None:
            sc = b.op("add", [sc, mask])
        p = b.op("softmax", [sc], {"dim": -1})
        o = b.op("matmul", [p, v])
        weights = p
        if average_attn_weights:
            weights = b.op("mean", [p], {"dim": [1]})
        if not batched:
            weights = b.op("squeeze", [weights], {"dim": [0]})
    else:
        o = N.sdpa(b, q, k, v, mask, 0.0, False, scale)
    o = b.op("permute", [o], {"dims": [2, 0, 1, 3]})  # [L, B, H, D]
    o = b.op("reshape", [o], {"shape": [L, B, E_]})
    o = N.linear(b, o, out_w, out_b)
    if not batched:
        o = b.op("squeeze", [o], {"dim": [1]})
    elif batch_first:
        o = S.transpose(b, o, 0, 1)
    return (o, weights)


def _split3(b, t):
    """A packed [3E, ...] projection tensor/Value -> three Values (None -> Nones)."""
    if t is None:
        return (None, None, None)
    return tuple(b.ops("chunk", [b.as_value(t)], {"chunks": 3, "dim": 0}))


def mha(b, m, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
        average_attn_weights=True, is_causal=False):
    """nn.MultiheadAttention.forward with the module's parameters as constants."""
    reason = _mha_check(m)
    if reason:
        raise Unsupported(reason)
    E_ = m.embed_dim
    if m._qkv_same_embed_dim:
        w = tuple(b.constant(m.in_proj_weight[i * E_:(i + 1) * E_],
                             _scoped(b, "in_proj_weight_" + "qkv"[i])) for i in range(3))
    else:
        w = tuple(b.param(m, "%s_proj_weight" % c) for c in "qkv")
    bias = (None, None, None)
    if m.in_proj_bias is not None:
        bias = tuple(b.constant(m.in_proj_bias[i * E_:(i + 1) * E_],
                                _scoped(b, "in_proj_bias_" + "qkv"[i])) for i in range(3))
    out_w = b.constant(m.out_proj.weight, _scoped(b, "out_proj.weight"))
    out_b = None if m.out_proj.bias is None else \
        b.constant(m.out_proj.bias, _scoped(b, "out_proj.bias"))
    return attention(b, query, key, value, m.num_heads, w, bias, out_w, out_b, m.batch_first,
                     key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal)


def _fast_path_masks(mask, mask_type):
    """(attn_mask, key_padding_mask) of the fused kernels' (mask, mask_type)."""
    if mask is None or mask_type is None:
        return None, None
    if mask_type == 1:
        return None, mask
    if mask_type == 0:
        return mask, None
    raise Unsupported("fused attention mask_type=%r" % (mask_type,))


@register(optional(torch, "_native_multi_head_attention"))
def _native_mha(b, query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight,
                proj_bias, mask=None, need_weights=True, average_attn_weights=True,
                mask_type=None):
    """The fused MultiheadAttention fast path (batch_first inputs [B, L, E])."""
    am, kpm = _fast_path_masks(mask, mask_type)
    out, w = attention(b, query, key, value, num_head, _split3(b, qkv_weight),
                       _split3(b, qkv_bias), b.as_value(proj_weight),
                       None if proj_bias is None else b.as_value(proj_bias), True, kpm,
                       bool(need_weights), am, bool(average_attn_weights))
    return (out, w)


@register(optional(torch, "_transformer_encoder_layer_fwd"))
def _native_encoder_layer(b, src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                          proj_bias, use_gelu, norm_first, eps, norm_weight_1, norm_bias_1,
                          norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2,
                          ffn_bias_2, mask=None, mask_type=None):
    """The fused TransformerEncoderLayer fast path (batch_first [B, L, E])."""
    am, kpm = _fast_path_masks(mask, mask_type)
    E_ = src.shape[-1]

    def sa(x):
        return attention(b, x, x, x, num_heads, _split3(b, qkv_weight), _split3(b, qkv_bias),
                         b.as_value(proj_weight), b.as_value(proj_bias), True, kpm, False,
                         am)[0]

    def ln(x, w_, b_):
        return R.layer_norm(b, x, [E_], w_, b_, eps)

    def ff(x):
        h = N.linear(b, x, b.as_value(ffn_weight_1), b.as_value(ffn_bias_1))
        h = b.op("gelu", [h]) if use_gelu else b.op("relu", [h])
        return N.linear(b, h, b.as_value(ffn_weight_2), b.as_value(ffn_bias_2))

    x = src
    if norm_first:
        x = b.op("add", [x, sa(ln(x, norm_weight_1, norm_bias_1))])
        x = b.op("add", [x, ff(ln(x, norm_weight_2, norm_bias_2))])
    else:
        x = ln(b.op("add", [x, sa(x)]), norm_weight_1, norm_bias_1)
        x = ln(b.op("add", [x, ff(x)]), norm_weight_2, norm_bias_2)
    return x


@register(nn.MultiheadAttention, check_module=_mha_check)
def _mha(b, m, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
         average_attn_weights=True, is_causal=False):
    return mha(b, m, query, key, value, key_padding_mask, need_weights, attn_mask,
               average_attn_weights, is_causal)


class _SubScope:
    def __init__(self, b, name):
        self.b, self.name = b, name

    def __enter__(self):
        self.prev = self.b.scope
        self.b.scope = self.prev + "." + self.name if self.prev else self.name

    def __exit__(self, *exc):
        self.b.scope = self.prev


def call_submodule(b, parent, name, *args, **kwargs):
    """Converts parent.<name>(*args) through the table (for composite modules)."""
    sub = getattr(parent, name)
    conv = lookup(type(sub))
    if conv is None:
        raise Unsupported("submodule %s of type %s is not mapped" % (name, type(sub).__name__))
    check = getattr(conv, "check_module", None)
    reason = check(sub) if check else None
    if reason:
        raise Unsupported("%s: %s" % (name, reason))
    with _SubScope(b, name):
        return conv(b, sub, *args, **kwargs)


def _activation(b, m, x):
    act = m.activation
    if isinstance(act, nn.Module):
        return call_submodule(b, m, "activation", x)
    conv = TABLE.get(act)
    if conv is None:
        raise Unsupported("activation %r is not mapped" % (act,))
    return conv(b, x)


def _encoder_layer_check(m):
    if m.training and (m.dropout.p > 0 or m.self_attn.dropout > 0):
        return "TransformerEncoderLayer with dropout in training mode; call .eval()"
    return _mha_check(m.self_attn)


@register(nn.TransformerEncoderLayer, check_module=_encoder_layer_check)
def _encoder_layer(b, m, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
    def sa(x):
        o = call_submodule(b, m, "self_attn", x, x, x, attn_mask=src_mask,
                           key_padding_mask=src_key_padding_mask, need_weights=False,
                           is_causal=bool(is_causal) and src_mask is None)[0]
        return o

    def ff(x):
        h = call_submodule(b, m, "linear1", x)
        return call_submodule(b, m, "linear2", _activation(b, m, h))

    x = src
    if m.norm_first:
        x = b.op("add", [x, sa(call_submodule(b, m, "norm1", x))])
        x = b.op("add", [x, ff(call_submodule(b, m, "norm2", x))])
    else:
        x = call_submodule(b, m, "norm1", b.op("add", [x, sa(x)]))
        x = call_submodule(b, m, "norm2", b.op("add", [x, ff(x)]))
    return x


def _encoder_check(m):
    for layer in m.layers:
        r = _encoder_layer_check(layer)
        if r:
            return r
    return None


@register(nn.TransformerEncoder, check_module=_encoder_check)
def _encoder(b, m, src, mask=None, src_key_padding_mask=None, is_causal=None):
    x = src
    for i in range(len(m.layers)):
        with _SubScope(b, "layers"):
            x = call_submodule(b, m.layers, str(i), x, src_mask=mask,
                               src_key_padding_mask=src_key_padding_mask)
    if m.norm is not None:
        x = call_submodule(b, m, "norm", x)
    return x


__all__ = ["mha", "attention", "call_submodule"]
