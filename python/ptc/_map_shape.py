"""_map_shape.py - mapping entries of shape ops and sizes: views/reshapes,
permutes, squeeze/unsqueeze, expand/repeat, cat/stack/split/chunk/unbind,
gather/scatter/index_select, tril/triu, flip/roll, indexing with
ints/slices/None/Ellipsis/index tensors (operator.getitem), creation ops
(full, zeros, ones, *_like, new_*, arange, eye, tensor), and size queries
(size(), shape, dim(), numel()) that return ints or SymInts from the Value's
metadata so dynamic sizes stay symbolic.

Registered into the single table of _map_core."""
import builtins
import math
import operator

import torch

from ._map_core import (Unsupported, concrete, is_int, is_sym, is_value, optional, register,
                        tensor_method_keys)


def _dims_arg(args):
    """(*ints) or a single list/tuple/torch.Size -> list."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0])
    return list(args)


def _check_ints(vals, what):
    for v in vals:
        if not is_int(v):
            raise Unsupported("%s must be ints, got %s" % (what, type(v).__name__))
    return vals


def _ints(vals, what):
    """Static ints (SymInts specialised) for INT-typed attributes."""
    return [int(concrete(v)) for v in _check_ints(list(vals), what)]


def norm_dim(d, ndim):
    d = int(concrete(d))
    n = max(ndim, 1)
    if d < -n or d >= n:
        raise Unsupported("dim %d out of range for rank %d" % (d, ndim))
    return d % n


def _value(x, what="input"):
    if not is_value(x):
        raise Unsupported("%s must be a tensor, got %s" % (what, type(x).__name__))
    return x


# ---- sizes -----------------------------------------------------------------------------

@register(*tensor_method_keys("size"))
def _size(b, input, dim=None):
    if dim is None:
        return tuple(input.shape)
    return input.shape[norm_dim(dim, input.ndim)]


@register(*tensor_method_keys("dim", "ndimension"))
def _dim(b, input):
    return input.ndim


@register(*tensor_method_keys("numel", "nelement"), torch.numel)
def _numel(b, input):
    return b.numel(input.shape)


@register(*tensor_method_keys("element_size"))
def _element_size(b, input):
    return torch.empty((), dtype=input.dtype).element_size()


@register(*tensor_method_keys("is_floating_point"), torch.is_floating_point)
def _is_floating_point(b, input):
    return input.dtype.is_floating_point


@register(*tensor_method_keys("is_contiguous"))
def _is_contiguous(b, input, memory_format=None):
    """False for graph inputs declared with non-contiguous strides, else True
    (ptc computes every other value densely; a view of an input answers True
    where eager may say False)."""
    return input.id not in b.strided_inputs


@register(builtins.len)
def _len(b, obj):
    if is_value(obj):
        if obj.ndim == 0:
            raise Unsupported("len() of a 0-d tensor")
        return obj.shape[0]
    return len(obj)


@register(torch.Size)
def _size_ctor(b, sizes=()):
    """torch.Size(list of sizes) in a traced graph: the sizes as a tuple
    (ints or SymInts; torch.Size itself only holds ints)."""
    vals = list(sizes)
    for v in vals:
        if not (is_int(v) or is_sym(v)):
            raise Unsupported("torch.Size of %s" % type(v).__name__)
    return torch.Size(vals) if all(isinstance(v, int) for v in vals) else tuple(vals)


def transpose(b, x, d0, d1):
    return b.op("transpose", [x], {"dim0": int(concrete(d0)), "dim1": int(concrete(d1))})


def _reverse_dims(b, x):
    return b.op("permute", [x], {"dims": list(range(x.ndim - 1, -1, -1))})


_ATTRS = {
    "shape": lambda b, x: tuple(x.shape),
    "dtype": lambda b, x: x.dtype,
    "ndim": lambda b, x: x.ndim,
    "device": lambda b, x: b.device,
    "is_cuda": lambda b, x: b.device.type == "cuda",
    "requires_grad": lambda b, x: False,
    "layout": lambda b, x: torch.strided,
    "data": lambda b, x: x,
    "T": lambda b, x: x if x.ndim < 2 else _reverse_dims(b, x),
    "mT": lambda b, x: transpose(b, x, -2, -1),
}


@register(builtins.getattr)
def _getattr(b, obj, name, *default):
    """getattr(x, "shape" / "dtype" / "ndim" / "device" / "T" / "mT" / ...)
    on tensors; plain getattr on other objects (e.g. .values of max())."""
    if is_value(obj):
        fn = _ATTRS.get(name)
        if fn is None:
            raise Unsupported("tensor attribute %r" % (name,))
        return fn(b, obj)
    return getattr(obj, name, *default)


# ---- views and reshapes -------------------------------------------------------------------

@register(*tensor_method_keys("view"))
def _view(b, input, *shape):
    if len(shape) == 1 and isinstance(shape[0], torch.dtype):
        if shape[0] == input.dtype:
            return input
        raise Unsupported("view(dtype) reinterpreting %s as %s" % (input.dtype, shape[0]))
    return b.op("view", [input], {"size": _check_ints(_dims_arg(shape), "view sizes")})


@register(*tensor_method_keys("reshape"))
def _reshape_m(b, input, *shape):
    return b.op("reshape", [input], {"shape": _check_ints(_dims_arg(shape), "reshape sizes")})


@register(torch.reshape)
def _reshape(b, input, shape):
    return b.op("reshape", [input], {"shape": _check_ints(list(shape), "reshape sizes")})


@register(*tensor_method_keys("view_as"))
def _view_as(b, input, other):
    return b.op("view", [input], {"size": list(other.shape)})


@register(*tensor_method_keys("reshape_as"))
def _reshape_as(b, input, other):
    return b.op("reshape", [input], {"shape": list(other.shape)})


def flatten(b, x, start_dim=0, end_dim=-1):
    return b.op("flatten", [x], {"start_dim": int(concrete(start_dim)),
                                 "end_dim": int(concrete(end_dim))})


@register(torch.flatten, *tensor_method_keys("flatten"))
def _flatten(b, input, start_dim=0, end_dim=-1):
    return flatten(b, input, start_dim, end_dim)


def unflatten(b, x, dim, sizes):
    return b.op("unflatten", [x], {"dim": int(concrete(dim)),
                                   "sizes": _check_ints(list(sizes), "unflatten sizes")})


@register(torch.unflatten if hasattr(torch, "unflatten") else None,
          *tensor_method_keys("unflatten"))
def _unflatten(b, input, dim, sizes):
    return unflatten(b, input, dim, sizes)


@register(*tensor_method_keys("permute"))
def _permute_m(b, input, *dims):
    return b.op("permute", [input], {"dims": _ints(_dims_arg(dims), "permute dims")})


@register(torch.permute)
def _permute(b, input, dims):
    return b.op("permute", [input], {"dims": _ints(dims, "permute dims")})


@register(torch.transpose, torch.swapaxes, torch.swapdims,
          *tensor_method_keys("transpose", "swapaxes", "swapdims"))
def _transpose(b, input, dim0, dim1):
    return transpose(b, input, dim0, dim1)


@register(*tensor_method_keys("transpose_"), mutates=0)
def _transpose_(b, input, dim0, dim1):
    return transpose(b, input, dim0, dim1)


@register(torch.t, *tensor_method_keys("t"))
def _t(b, input):
    if input.ndim > 2:
        raise Unsupported("t() expects a tensor with <= 2 dimensions")
    return input if input.ndim < 2 else transpose(b, input, 0, 1)


@register(torch.adjoint if hasattr(torch, "adjoint") else None, *tensor_method_keys("adjoint"))
def _adjoint(b, input):
    return transpose(b, input, -2, -1)


@register(torch.movedim, torch.moveaxis, *tensor_method_keys("movedim", "moveaxis"))
def _movedim(b, input, source, destination):
    src = [source] if is_int(source) else list(source)
    dst = [destination] if is_int(destination) else list(destination)
    n = input.ndim
    src = [norm_dim(s, n) for s in src]
    dst = [norm_dim(d, n) for d in dst]
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter([i for i in range(n) if i not in src])
    order = [o if o is not None else next(rest) for o in order]
    return b.op("permute", [input], {"dims": order})


@register(torch.squeeze, *tensor_method_keys("squeeze"))
def _squeeze(b, input, dim=None):
    if dim is None:
        return b.op("squeeze", [input])
    dims = [dim] if is_int(dim) else list(dim)
    return b.op("squeeze", [input], {"dim": _ints(dims, "squeeze dims")})


@register(torch.unsqueeze, *tensor_method_keys("unsqueeze"))
def _unsqueeze(b, input, dim):
    return b.op("unsqueeze", [input], {"dim": int(concrete(dim))})


@register(*tensor_method_keys("unsqueeze_"), mutates=0)
def _unsqueeze_(b, input, dim):
    return _unsqueeze(b, input, dim)


@register(*tensor_method_keys("squeeze_"), mutates=0)
def _squeeze_(b, input, dim=None):
    return _squeeze(b, input, dim)


@register(*tensor_method_keys("expand"))
def _expand(b, input, *sizes, implicit=False):
    return b.op("expand", [input], {"size": _check_ints(_dims_arg(sizes), "expand sizes")})


@register(torch.broadcast_to, *tensor_method_keys("broadcast_to"))
def _broadcast_to(b, input, size):
    return b.op("expand", [input], {"size": _check_ints(list(size), "sizes")})


@register(*tensor_method_keys("expand_as"))
def _expand_as(b, input, other):
    return b.op("expand", [input], {"size": list(other.shape)})


def repeat(b, x, reps):
    """x.repeat(reps): view as [1, s0, 1, s1, ...], expand to
    [r0, s0, r1, s1, ...] and reshape to [r0*s0, r1*s1, ...]."""
    reps = _check_ints(list(reps), "repeat sizes")
    if len(reps) < x.ndim:
        raise Unsupported("repeat: fewer repeats than dimensions")
    shape = [1] * (len(reps) - x.ndim) + list(x.shape)
    inter, big, out = [], [], []
    for r, s in zip(reps, shape):
        inter += [1, s]
        big += [r, s]
        out.append(r * s)
    v = b.op("reshape", [x], {"shape": inter})
    v = b.op("expand", [v], {"size": big})
    return b.op("reshape", [v], {"shape": out})


@register(*tensor_method_keys("repeat"))
def _repeat(b, input, *sizes):
    return repeat(b, input, _dims_arg(sizes))


@register(torch.tile, *tensor_method_keys("tile"))
def _tile(b, input, *dims):
    reps = _dims_arg(dims)
    if len(reps) < input.ndim:
        reps = [1] * (input.ndim - len(reps)) + reps
    return repeat(b, input, reps)


@register(*tensor_method_keys("contiguous"))
def _contiguous(b, input, memory_format=torch.contiguous_format):
    if memory_format not in (torch.contiguous_format, torch.preserve_format):
        raise Unsupported("contiguous(memory_format=%s)" % memory_format)
    return b.op("contiguous", [input])  # ptc tracks view strides: a real op


@register(torch.clone, *tensor_method_keys("clone"))
def _clone(b, input, *, memory_format=None):
    if memory_format not in (None, torch.contiguous_format, torch.preserve_format):
        raise Unsupported("clone(memory_format=%s)" % memory_format)
    return b.op("clone", [input])


@register(torch.detach, *tensor_method_keys("detach"))
def _detach(b, input):
    return input


# ---- joining and splitting ------------------------------------------------------------------

def _tensors(b, seq):
    out = [b.as_value(t) for t in seq]
    if not out:
        raise Unsupported("an empty tensor list")
    return out


@register(torch.cat, torch.concat, optional(torch, "concatenate"))
def _cat(b, tensors, dim=0, *, out=None):
    if out is not None:
        raise Unsupported("out= is not supported")
    return b.op("cat", _tensors(b, tensors), {"dim": int(concrete(dim))})


@register(torch.stack)
def _stack(b, tensors, dim=0, *, out=None):
    if out is not None:
        raise Unsupported("out= is not supported")
    return b.op("stack", _tensors(b, tensors), {"dim": int(concrete(dim))})


@register(torch.hstack)
def _hstack(b, tensors):
    ts = _tensors(b, tensors)
    return b.op("cat", ts, {"dim": 0 if ts[0].ndim == 1 else 1})


@register(torch.vstack)
def _vstack(b, tensors):
    ts = [t if t.ndim >= 2 else b.op("view", [t], {"size": [1, b.numel(t.shape)]})
          for t in _tensors(b, tensors)]
    return b.op("cat", ts, {"dim": 0})


def split(b, x, size_or_sections, dim=0):
    dim = int(concrete(dim))
    if is_int(size_or_sections):
        return b.ops("split", [x], {"split_size": int(concrete(size_or_sections)), "dim": dim})
    sizes = _ints(size_or_sections, "split sizes")
    return b.ops("split", [x], {"split_sizes": sizes, "dim": dim})


@register(torch.split, *tensor_method_keys("split"))
def _split(b, tensor, split_size_or_sections, dim=0):
    return split(b, tensor, split_size_or_sections, dim)


@register(torch.split_with_sizes if hasattr(torch, "split_with_sizes") else None,
          *tensor_method_keys("split_with_sizes"))
def _split_with_sizes(b, input, split_sizes, dim=0):
    return split(b, input, list(split_sizes), dim)


@register(torch.chunk, *tensor_method_keys("chunk"))
def _chunk(b, input, chunks, dim=0):
    return b.ops("chunk", [input], {"chunks": int(concrete(chunks)), "dim": int(concrete(dim))})


@register(torch.unbind, *tensor_method_keys("unbind"))
def _unbind(b, input, dim=0):
    d = norm_dim(dim, input.ndim)
    n = int(concrete(input.shape[d]))
    return tuple(b.op("select", [input], {"dim": d, "index": i}) for i in range(n))


@register(torch.narrow, *tensor_method_keys("narrow"))
def _narrow(b, input, dim, start, length):
    if is_value(start):
        raise Unsupported("narrow with a tensor start")
    return b.op("narrow", [input], {"dim": int(concrete(dim)), "start": start, "length": length})


@register(torch.select, *tensor_method_keys("select"))
def _select(b, input, dim, index):
    return b.op("select", [input], {"dim": int(concrete(dim)), "index": index})


# ---- gather / scatter / index ----------------------------------------------------------------

@register(torch.gather, *tensor_method_keys("gather"))
def _gather(b, input, dim, index, *, sparse_grad=False, out=None):
    return b.op("gather", [input, b.as_value(index)], {"dim": int(concrete(dim))})


@register(torch.index_select, *tensor_method_keys("index_select"))
def _index_select(b, input, dim, index, *, out=None):
    return b.op("index_select", [input, b.as_value(index)], {"dim": int(concrete(dim))})


def scatter(b, x, dim, index, src=None, value=None, reduce=None):
    if reduce is not None:
        raise Unsupported("scatter reduce=%r" % (reduce,))
    dim = int(concrete(dim))
    if src is not None and (is_value(src) or isinstance(src, torch.Tensor)):
        return b.op("scatter", [x, b.as_value(index), b.as_value(src)], {"dim": dim})
    v = src if src is not None else value
    return b.op("scatter", [x, b.as_value(index), None], {"dim": dim, "value": concrete(v)})


@register(torch.scatter, *tensor_method_keys("scatter"))
def _scatter(b, input, dim, index, src=None, *, value=None, reduce=None):
    return scatter(b, input, dim, index, src, value, reduce)


@register(*tensor_method_keys("scatter_"), mutates=0)
def _scatter_(b, input, dim, index, src=None, *, value=None, reduce=None):
    return scatter(b, input, dim, index, src, value, reduce)


@register(torch.scatter_add, *tensor_method_keys("scatter_add"))
def _scatter_add(b, input, dim, index, src):
    return b.op("scatter_add", [input, b.as_value(index), b.as_value(src)],
                {"dim": int(concrete(dim))})


@register(*tensor_method_keys("scatter_add_"), mutates=0)
def _scatter_add_(b, input, dim, index, src):
    return _scatter_add(b, input, dim, index, src)


@register(torch.tril, *tensor_method_keys("tril"))
def _tril(b, input, diagonal=0, *, out=None):
    return b.op("tril", [input], {"diagonal": int(concrete(diagonal))})


@register(torch.triu, *tensor_method_keys("triu"))
def _triu(b, input, diagonal=0, *, out=None):
    return b.op("triu", [input], {"diagonal": int(concrete(diagonal))})


@register(*tensor_method_keys("tril_"), mutates=0)
def _tril_(b, input, diagonal=0):
    return _tril(b, input, diagonal)


@register(*tensor_method_keys("triu_"), mutates=0)
def _triu_(b, input, diagonal=0):
    return _triu(b, input, diagonal)


def arange_value(b, start, end, step=1, dtype=None):
    """arange; a symbolic length (SymInt bounds, integer results) is built
    as cumsum(ones(n)) so it stays dynamic."""
    syms = any(is_sym(v) for v in (start, end, step))
    floats = any(isinstance(v, float) for v in (start, end, step))
    if syms and not floats and (dtype is None or dtype == torch.int64) and is_int(step) \
            and not is_sym(step) and step != 0:
        n = b.sym("ceildiv", end - start, step) if step > 0 else \
            b.sym("ceildiv", start - end, -step)
        ones = b.op("ones", [], {"size": [n], "dtype": torch.int64})
        idx = b.op("sub", [b.op("cumsum", [ones], {"dim": 0})], {"other": 1})
        if step != 1:
            idx = b.op("mul", [idx], {"other": int(step)})
        if not (is_int(start) and not is_sym(start) and start == 0):
            idx = b.op("add", [idx, b.size_value(start)])
        return idx
    if dtype is None and floats:
        dtype = torch.get_default_dtype()  # torch.arange(3.0) follows the default dtype
    attrs = {"start": concrete(start), "end": concrete(end), "step": concrete(step),
             "dtype": dtype}
    return b.op("arange", [], attrs)


@register(torch.flip, *tensor_method_keys("flip"))
def _flip(b, input, *dims):
    dims = _dims_arg(dims)
    x = input
    for d in dims:
        d = norm_dim(d, x.ndim)
        n = x.shape[d]
        idx = arange_value(b, n - 1, -1, -1)
        x = b.op("index_select", [x, idx], {"dim": d})
    return x


@register(torch.roll, *tensor_method_keys("roll"))
def _roll(b, input, shifts, dims=None):
    if dims is None:
        flat = b.op("reshape", [input], {"shape": [-1]})
        return b.op("view", [_roll(b, flat, shifts, 0)], {"size": list(input.shape)})
    shifts = [shifts] if is_int(shifts) else list(shifts)
    dims = [dims] if is_int(dims) else list(dims)
    if len(shifts) != len(dims):
        raise Unsupported("roll: shifts and dims differ in length")
    x = input
    for s, d in zip(shifts, dims):
        d = norm_dim(d, x.ndim)
        n = int(concrete(x.shape[d]))
        s = int(concrete(s)) % n if n else 0
        if s == 0:
            continue
        tail = b.op("slice", [x], {"dim": d, "start": n - s})
        head = b.op("slice", [x], {"dim": d, "end": n - s})
        x = b.op("cat", [tail, head], {"dim": d})
    return x


# ---- indexing ---------------------------------------------------------------------------------

def _slice(b, x, d, s):
    step = 1 if s.step is None else concrete(s.step)
    if not isinstance(step, int) or step <= 0:
        raise Unsupported("slice step must be a positive int, got %r" % (s.step,))
    start, stop = s.start, s.stop
    if is_value(start) or is_value(stop):
        raise Unsupported("slice bounds given as tensors")
    if (start is None or (isinstance(start, int) and start == 0)) and stop is None and step == 1:
        return x
    attrs = {"dim": d, "step": step}
    if start is not None:
        attrs["start"] = start
    if stop is not None:
        attrs["end"] = stop
    return b.op("slice", [x], attrs)


def index(b, x, idx):
    """x[idx] for ints, slices, None, Ellipsis and integer index tensors
    (lists of ints become constant index tensors). Ints are applied as
    select first, then index tensors at their remaining positions, as torch
    does."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    entries = []
    for e in idx:
        if isinstance(e, bool) or (is_value(e) and e.dtype == torch.bool) or \
                (isinstance(e, torch.Tensor) and e.dtype == torch.bool):
            raise Unsupported("boolean mask indexing has a data-dependent shape")
        if isinstance(e, list):
            e = torch.tensor(e)
            if e.dtype not in (torch.int64, torch.int32):
                raise Unsupported("index list of %s" % e.dtype)
        entries.append(e)
    consumed = sum(1 for e in entries if e is not None and e is not Ellipsis)
    if sum(1 for e in entries if e is Ellipsis) > 1:
        raise Unsupported("an index can only have a single ellipsis")
    if consumed > x.ndim:
        raise Unsupported("too many indices for a tensor of rank %d" % x.ndim)
    d, adv, skip = 0, {}, x.ndim - consumed
    for e in entries:
        if e is None:
            x = b.op("unsqueeze", [x], {"dim": d})
            d += 1
        elif e is Ellipsis:
            d += skip
        elif isinstance(e, slice):
            x = _slice(b, x, d, e)
            d += 1
        elif is_int(e):
            x = b.op("select", [x], {"dim": d, "index": e})
        elif is_value(e) or isinstance(e, torch.Tensor):
            v = b.as_value(e)
            if v.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
                raise Unsupported("index tensor of dtype %s" % v.dtype)
            adv[d] = v
            d += 1
        else:
            raise Unsupported("index of type %s" % type(e).__name__)
    if adv:
        ins = [x] + [adv.get(i) for i in range(max(adv) + 1)]
        x = b.op("index", ins)
    return x


@register(operator.getitem, torch.Tensor.__getitem__)
def _getitem(b, obj, idx):
    if is_value(obj):
        return index(b, obj, idx)
    if is_value(idx):
        raise Unsupported("indexing a %s with a tensor" % type(obj).__name__)
    return obj[idx]


def _norm_bound(b, v, n, default):
    """A slice bound clamped to [0, n] as Python does (ints or SymInts)."""
    if v is None:
        return default
    if is_value(v):
        raise Unsupported("slice bounds given as tensors")
    if v < 0:
        v = v + n
        return 0 if v < 0 else v
    return n if v > n else v


def setitem(b, x, idx, value):
    """x[idx] = value for ints, slices (positive steps), None and Ellipsis:
    a mask of the written region (per-dim arange tests) selects between x
    and the value (a scalar, or a tensor broadcast to the region and spread
    to x's shape with index_select). Returns the new value of x."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    if any(is_value(e) or isinstance(e, (torch.Tensor, list, bool)) for e in idx):
        raise Unsupported("assignment through index tensors (advanced indexing)")
    consumed = sum(1 for e in idx if e is not None and e is not Ellipsis)
    if consumed > x.ndim or sum(1 for e in idx if e is Ellipsis) > 1:
        raise Unsupported("bad index for a tensor of rank %d" % x.ndim)
    per_dim = []  # (dim, kind, start, stop, step)
    d = 0
    for e in idx:
        if e is None:
            continue
        if e is Ellipsis:
            d += x.ndim - consumed
            continue
        n = x.shape[d]
        if isinstance(e, slice):
            step = 1 if e.step is None else concrete(e.step)
            if not isinstance(step, int) or step <= 0:
                raise Unsupported("slice step must be a positive int, got %r" % (e.step,))
            start = _norm_bound(b, e.start, n, 0)
            stop = _norm_bound(b, e.stop, n, n)
            if not (isinstance(start, int) and start == 0 and stop is n and step == 1):
                per_dim.append((d, "slice", start, stop, step))
        elif is_int(e):
            i = e + n if e < 0 else e
            per_dim.append((d, "int", i, i + 1, 1))
        else:
            raise Unsupported("index of type %s" % type(e).__name__)
        d += 1
    mask = None
    ar_of = {}
    for dim, kind, start, stop, step in per_dim:
        n = x.shape[dim]
        ar = arange_value(b, 0, n)
        ar_of[dim] = ar
        m = b.op("logical_and", [b.op("ge", [ar, b.size_value(start)]),
                                 b.op("lt", [ar, b.size_value(stop)])])
        if step != 1:
            off = b.op("sub", [ar, b.size_value(start)])
            m = b.op("logical_and", [m, b.op("eq", [b.op("remainder", [off], {"other": step})],
                                             {"other": 0})])
        shape = [1] * x.ndim
        shape[dim] = n
        m = b.op("reshape", [m], {"shape": shape})
        mask = m if mask is None else b.op("logical_and", [mask, m])
    if mask is None:  # x[...] = value / x[:] = value
        mask = b.op("full", [], {"size": [1] * x.ndim, "fill_value": True, "dtype": torch.bool})
    if not is_value(value) and not isinstance(value, torch.Tensor):
        return b.op("masked_fill", [x, mask], {"value": concrete(value)})
    v = b.to_dtype(b.as_value(value), x.dtype)
    # the region's shape, then back to rank x.ndim (ints as size-1 dims)
    region = index(b, x, idx)
    if any(isinstance(sz, int) and sz == 0 for sz in region.shape):
        return x  # nothing is written
    v = b.op("expand", [v], {"size": list(region.shape)})
    kept = [sz for sz, k in zip(region.shape, _region_dims(idx, x.ndim)) if k]
    int_dims = {p[0] for p in per_dim if p[1] == "int"}
    it = iter(kept)
    sizes = [1 if dim in int_dims else next(it) for dim in range(x.ndim)]
    v = b.op("reshape", [v], {"shape": sizes})
    for dim, kind, start, stop, step in per_dim:
        if kind == "int":
            gi = b.op("zeros", [], {"size": [x.shape[dim]], "dtype": torch.int64})
        else:
            length = sizes[dim]
            gi = b.op("sub", [ar_of[dim], b.size_value(start)])
            gi = b.op("div", [gi], {"other": step, "rounding_mode": "floor"})
            gi = b.op("clamp", [gi, None, b.op("sub", [b.size_value(length)], {"other": 1})],
                      {"min": 0})
        v = b.op("index_select", [v, gi], {"dim": dim})
    return b.op("where", [mask, v, x])


def _region_dims(idx, ndim):
    """For each dim of x[idx] (ints dropped): False for a dim added by None."""
    consumed = sum(1 for e in idx if e is not None and e is not Ellipsis)
    out = []
    for e in idx:
        if e is None:
            out.append(False)
        elif e is Ellipsis:
            out.extend([True] * (ndim - consumed))
        elif isinstance(e, slice):
            out.append(True)
    if Ellipsis not in idx:
        out.extend([True] * (ndim - consumed))
    return out


@register(operator.setitem, torch.Tensor.__setitem__, mutates=0, returns_none=True)
def _setitem(b, obj, idx, value):
    if not is_value(obj):
        raise Unsupported("item assignment on a %s" % type(obj).__name__)
    return setitem(b, obj, idx, value)


# ---- creation -----------------------------------------------------------------------------------

def _no_layout(layout=None, pin_memory=None, requires_grad=False, memory_format=None, out=None):
    if layout not in (None, torch.strided):
        raise Unsupported("layout=%s" % layout)
    if out is not None:
        raise Unsupported("out= is not supported")


def _size_list(size):
    size = _dims_arg(size)
    return _check_ints(size, "sizes")


@register(torch.full)
def _full(b, size, fill_value, *, dtype=None, device=None, **kw):
    _no_layout(**kw)
    if is_value(fill_value):
        raise Unsupported("full with a tensor fill value")
    fill = concrete(fill_value)
    if dtype is None and isinstance(fill, float):
        dtype = torch.get_default_dtype()
    return b.op("full", [], {"size": _size_list([size]), "fill_value": fill, "dtype": dtype})


def _zeros_like_op(op):
    def conv(b, *size, dtype=None, device=None, names=None, **kw):
        _no_layout(**kw)
        return b.op(op, [], {"size": _size_list(size), "dtype": dtype or torch.get_default_dtype()})
    conv.__name__ = "creation_" + op
    return conv


register(torch.zeros)(_zeros_like_op("zeros"))
register(torch.ones)(_zeros_like_op("ones"))
register(torch.empty)(_zeros_like_op("zeros"))  # contents unspecified: zeros


def _like(op, value=None):
    def conv(b, input, *, dtype=None, device=None, **kw):
        _no_layout(**kw)
        return b.op(op, [], {"size": list(input.shape), "dtype": dtype or input.dtype})
    conv.__name__ = "like_" + op
    return conv


register(torch.zeros_like)(_like("zeros"))
register(torch.ones_like)(_like("ones"))
register(torch.empty_like)(_like("zeros"))


@register(torch.full_like)
def _full_like(b, input, fill_value, *, dtype=None, device=None, **kw):
    _no_layout(**kw)
    return b.op("full", [], {"size": list(input.shape), "fill_value": concrete(fill_value),
                             "dtype": dtype or input.dtype})


@register(*tensor_method_keys("fill_"), mutates=0)
def _fill_(b, input, value):
    if is_value(value):
        return b.op("expand", [b.to_dtype(value, input.dtype)], {"size": list(input.shape)})
    return b.op("fill", [input], {"value": concrete(value)})


@register(*tensor_method_keys("zero_"), mutates=0)
def _zero_(b, input):
    return b.op("fill", [input], {"value": 0})


def _new(op):
    def conv(b, input, *size, dtype=None, device=None, **kw):
        _no_layout(**kw)
        return b.op(op, [], {"size": _size_list(size), "dtype": dtype or input.dtype})
    conv.__name__ = "new_" + op
    return conv


register(*tensor_method_keys("new_zeros"))(_new("zeros"))
register(*tensor_method_keys("new_ones"))(_new("ones"))
register(*tensor_method_keys("new_empty"))(_new("zeros"))


@register(*tensor_method_keys("new_full"))
def _new_full(b, input, size, fill_value, *, dtype=None, device=None, **kw):
    _no_layout(**kw)
    return b.op("full", [], {"size": _size_list([size]), "fill_value": concrete(fill_value),
                             "dtype": dtype or input.dtype})


@register(*tensor_method_keys("new_tensor"))
def _new_tensor(b, input, data, *, dtype=None, device=None, requires_grad=False):
    return _tensor(b, data, dtype=dtype or input.dtype)


@register(torch.tensor, torch.as_tensor)
def _tensor(b, data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    def leaves(d):
        if isinstance(d, (list, tuple)):
            for e in d:
                yield from leaves(e)
        else:
            yield d
    if any(is_value(v) or is_sym(v) for v in leaves(data)):
        raise Unsupported("torch.tensor() of traced values")
    if isinstance(data, torch.Tensor):
        t = data.to(dtype) if dtype is not None else data
        return b.constant(t)
    t = torch.tensor(data, dtype=dtype)
    if t.dim() == 0:
        return b.scalar(t.item(), t.dtype)
    return b.constant(t, "tensor")


@register(torch.scalar_tensor)
def _scalar_tensor(b, s, *, dtype=None, device=None, **kw):
    return b.scalar(s, dtype or torch.get_default_dtype())


@register(torch.arange)
def _arange(b, *args, dtype=None, device=None, **kw):
    _no_layout(**kw)
    if any(is_value(a) for a in args):
        raise Unsupported("arange with tensor bounds")
    if len(args) == 1:
        start, end, step = 0, args[0], 1
    elif len(args) == 2:
        (start, end), step = args, 1
    elif len(args) == 3:
        start, end, step = args
    else:
        raise Unsupported("arange with %d positional arguments" % len(args))
    return arange_value(b, start, end, step, dtype)


@register(torch.eye)
def _eye(b, n, m=None, *, dtype=None, device=None, **kw):
    _no_layout(**kw)
    return b.op("eye", [], {"n": n, "m": m, "dtype": dtype})


# ---- Python-level calls in captured graphs (sizes, grad mode, asserts) -----------------------

def _number(fn, name):
    def conv(b, *args):
        if any(is_value(a) for a in args):
            raise Unsupported("%s of a tensor" % name)
        return fn(*[concrete(a) for a in args])
    conv.__name__ = "py_" + name
    return conv


register(math.sqrt)(_number(math.sqrt, "math.sqrt"))
register(math.floor)(_number(math.floor, "math.floor"))
register(math.ceil)(_number(math.ceil, "math.ceil"))
register(math.log)(_number(math.log, "math.log"))
register(math.pow)(_number(math.pow, "math.pow"))
register(optional(torch, "sym_float"))(_number(float, "sym_float"))
register(optional(torch, "sym_int"))(_number(int, "sym_int"))


def _sym_minmax(op, pyfn):
    def conv(b, a, c):
        if is_value(a) or is_value(c):
            raise Unsupported("%s of a tensor" % op)
        if is_sym(a) or is_sym(c):
            return b.sym(op, a, c)
        return pyfn(a, c)
    conv.__name__ = "sym_" + op
    return conv


register(optional(torch, "sym_max"))(_sym_minmax("max", max))
register(optional(torch, "sym_min"))(_sym_minmax("min", min))


@register(torch._C._set_grad_enabled,
          optional(torch, "autograd", "grad_mode", "_enter_inference_mode"),
          optional(torch, "autograd", "grad_mode", "_exit_inference_mode"))
def _grad_mode(b, *args):
    """Grad-mode switches in captured graphs: ptc computes no gradients."""
    return None


@register(torch._assert, optional(torch, "_check"), optional(torch, "_check_is_size"))
def _assert(b, condition, message=None):
    """Asserts on sizes are decided at trace time (SymInt comparisons record
    guards); a tensor condition cannot be checked."""
    if is_value(condition):
        raise Unsupported("an assert on tensor values")
    if callable(message):
        message = message()
    if is_int(condition):  # _check_is_size(n)
        if not condition >= 0:
            raise Unsupported("size check failed")
        return None
    if not condition:
        raise Unsupported("assertion failed while tracing: %s" % (message,))
    return None


@register(torch.diff, *tensor_method_keys("diff"))
def _diff(b, input, n=1, dim=-1, prepend=None, append=None):
    """x[1:] - x[:-1] along dim, n times (prepend/append tensors are
    concatenated first; bool inputs use !=, as torch does)."""
    n = int(concrete(n))
    if n < 0:
        raise Unsupported("diff with n < 0")
    d = norm_dim(dim, input.ndim)
    parts = [b.as_value(t) for t in (prepend,) if t is not None] + [input] + \
        [b.as_value(t) for t in (append,) if t is not None]
    x = b.op("cat", parts, {"dim": d}) if len(parts) > 1 else input
    op = "ne" if x.dtype == torch.bool else "sub"
    for _ in range(n):
        length = x.shape[d]
        if is_int(length) and not is_sym(length) and int(length) <= 1:
            # torch: an empty result along dim
            return b.op("slice", [x], {"dim": d, "start": 0, "end": 0})
        hi = b.op("slice", [x], {"dim": d, "start": 1})
        lo = b.op("slice", [x], {"dim": d, "end": -1})
        x = b.op(op, [hi, lo])
    return x
