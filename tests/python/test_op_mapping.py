"""test_op_mapping.py - every entry of the torch -> ptc op mapping table
(ptc._mapping.TABLE) against PyTorch eager, plus the FX bridge's behaviour.

Per-entry tests: SPECS below is a list of cases; each names the table keys
it exercises (torch function, "method" string, torch.Tensor function or
nn.Module class sharing one calling convention) and makes inputs, args and
kwargs for a dtype and layout. For every key, a one-node torch.fx graph
calling that key is compiled with ptc.from_fx and compared with the same
call in eager PyTorch (outputs, output dtypes, and inputs written by in-place
ops): on the "ref" backend in float32 (contiguous and non-contiguous inputs)
and each further dtype the spec lists (float64 / bfloat16 / int64 / bool
where the op supports them); on the "cpu" backend once per spec (its first
key, float32, non-contiguous inputs where the spec has them), since cpu
compiles cost a C compile each. Half-precision ops torch 1.13 lacks on CPU
are referenced by the same call on float32 copies rounded once.
test_table_coverage fails when a table key has no case.

Bridge tests (symbolic_trace): symbolic sizes (x.view(x.size(0), -1) with a
dynamic batch, no recompiles), Python-scalar promotion matching torch's
result dtype exactly, non-tensor inputs specialised with recompiles, in-place
writes to inputs, output structures and pass-through, and
ptc.UnsupportedError listing every unsupported node with its name.

The cpu backend's kernel cache goes to a fresh temporary PTC_CACHE_DIR per
session so that cpu tests really compile.
"""
import builtins
import math
import operator
import os
import tempfile
import warnings

import pytest
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

import ptc
from ptc import _mapping as M

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I64, I32, U8, BOOL = torch.int64, torch.int32, torch.uint8, torch.bool
FL = (F32, F64, BF16)
NUM = (F32, F64, BF16, I64)
TOL = {F32: (1e-4, 1e-5), F64: (1e-7, 1e-9), F16: (1e-2, 1e-2), BF16: (2e-2, 2e-2)}
TORCH2 = int(torch.__version__.split(".")[0]) >= 2

# eager calls of deprecated spellings (F.sigmoid, implicit softmax dim, x.T of 3-d) warn
pytestmark = pytest.mark.filterwarnings("ignore:.*(deprecated|Implicit dimension):UserWarning")


@pytest.fixture(scope="module", autouse=True)
def _cache_dir():
    """A fresh kernel cache for this module's cpu compiles."""
    old = os.environ.get("PTC_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="ptc-cache-") as d:
        os.environ["PTC_CACHE_DIR"] = d
        yield d
    if old is None:
        os.environ.pop("PTC_CACHE_DIR", None)
    else:
        os.environ["PTC_CACHE_DIR"] = old


# ---- case machinery --------------------------------------------------------------------------

class P(int):
    """Placeholder marker in a case's args: input number i."""


class Gen:
    """Input maker for one (dtype, layout) variant. t(): random values of the
    variant's dtype (non-contiguous when nc: transposed storage for >= 2-D,
    every other element for 1-D)."""

    def __init__(self, dt, nc, seed):
        self.dt, self.nc = dt, nc
        self.g = torch.Generator().manual_seed(1234 + seed)

    def _vals(self, shape, dt, lo, hi):
        if dt == BOOL:
            return torch.rand(shape, generator=self.g) > 0.5
        if dt.is_floating_point:
            return (torch.rand(shape, generator=self.g, dtype=F64) * (hi - lo) + lo).to(dt)
        return torch.randint(int(math.floor(lo)), int(math.ceil(hi)) + 1, shape,
                             generator=self.g).to(dt)

    def t(self, *shape, lo=-2.0, hi=2.0, dt=None, nc=None):
        dt = dt or self.dt
        nc = self.nc if nc is None else nc
        if nc and len(shape) >= 2:
            s = list(shape)
            s[-1], s[-2] = s[-2], s[-1]
            return self._vals(s, dt, lo, hi).transpose(-1, -2)
        if nc and len(shape) == 1:
            return self._vals([shape[0] * 2], dt, lo, hi)[::2]
        return self._vals(list(shape), dt, lo, hi)

    def pos(self, *shape, **kw):
        return self.t(*shape, lo=0.25, hi=3.0, **kw)

    def i(self, *shape, lo=0, hi=3, dt=I64):
        return self.t(*shape, lo=lo, hi=hi, dt=dt, nc=False)

    def b(self, *shape):
        return self.t(*shape, dt=BOOL)

    def pick(self, contig, noncontig):
        return noncontig if self.nc else contig


class S:
    """One case: keys (None entries ignored: absent in this torch), make(g) ->
    (inputs, args, kwargs), dtypes, whether a non-contiguous variant is
    meaningful, module(dt) for nn.Module keys, tolerance scale; wide_ref: the
    half / bfloat16 reference is computed on float32 copies and rounded once
    (torch 1.13's CPU convolutions accumulate bfloat16 in bfloat16 on CPUs
    without AVX-512: errors of several bfloat16 ulps, where ptc accumulates
    in float32 as PyTorch's GPU kernels do)."""

    def __init__(self, keys, make, dtypes=(F32,), nc=True, module=None, tol=1.0, cpu=True,
                 name=None, via_clone=False, expect=NotImplemented, pick=None, wide_ref=False):
        self.wide_ref = wide_ref
        self.keys = [k for k in keys if k is not None]
        self.pick = pick  # the graph returns result[pick] (ops with outputs ptc leaves out)
        self.expect = expect  # a fixed expected result instead of the eager call
        self.via_clone = via_clone
        self.make, self.dtypes, self.nc = make, tuple(dtypes), nc
        self.module, self.tol, self.cpu = module, tol, cpu
        self.name = name


def K(name, fn=True, method=True, tensor=True):
    """torch.<name>, "<name>", torch.Tensor.<name> (those that exist)."""
    keys = []
    if fn:
        keys.append(getattr(torch, name, None))
    if method and hasattr(torch.Tensor, name):
        keys.append(name)
    if tensor:
        keys.append(getattr(torch.Tensor, name, None))
    return keys


def _dummy(*args, **kwargs):
    raise AssertionError("placeholder target")


def one_node_gm(key, n_inputs, args, kwargs, module=None, via_clone=False, pick=None):
    """A GraphModule whose single node calls `key` (FX code generation cannot
    print some table keys, e.g. method descriptors, so the node is created
    with a stand-in target that is replaced afterwards; eager references are
    computed by calling the key directly). via_clone: the node gets clones of
    the inputs (in-place ops that change a shape cannot write back to inputs);
    pick: the graph returns node[pick] instead of the node."""
    g = torch.fx.Graph()
    root = nn.Module()
    phs = [g.placeholder("x%d" % i) for i in range(n_inputs)]
    if via_clone:
        phs = [g.call_method("clone", (p,)) for p in phs]

    def sub(a):
        if isinstance(a, P):
            return phs[int(a)]
        if isinstance(a, tuple):
            return tuple(sub(x) for x in a)
        if isinstance(a, list):
            return [sub(x) for x in a]
        if isinstance(a, dict):
            return {k: sub(v) for k, v in a.items()}
        return a
    if isinstance(key, str):
        node = g.call_method(key, sub(tuple(args)), sub(dict(kwargs)))
    elif _is_module_class(key):
        root.add_module("m", module)
        node = g.call_module("m", sub(tuple(args)), sub(dict(kwargs)))
    else:
        node = g.call_function(_dummy, sub(tuple(args)), sub(dict(kwargs)))
    g.output(node if pick is None else g.call_function(operator.getitem, (node, pick)))
    gm = torch.fx.GraphModule(root, g)
    node.target = key if not _is_module_class(key) else "m"
    return gm


def _subst(a, ins):
    if isinstance(a, P):
        return ins[int(a)]
    if isinstance(a, tuple):
        return tuple(_subst(x, ins) for x in a)
    if isinstance(a, list):
        return [_subst(x, ins) for x in a]
    if isinstance(a, dict):
        return {k: _subst(v, ins) for k, v in a.items()}
    return a


def _is_module_class(key):
    return isinstance(key, type) and issubclass(key, torch.nn.Module)


def _call(key, module, args, kwargs):
    if isinstance(key, str):
        return getattr(args[0], key)(*args[1:], **kwargs)
    if _is_module_class(key):
        return module(*args, **kwargs)
    return key(*args, **kwargs)


LOW = (F16, BF16)


def eager(key, module, ins, args, kwargs, wide=False):
    """The key called in eager PyTorch; where torch 1.13 lacks the half /
    bfloat16 CPU kernel, or with wide=True, on float32 copies rounded back
    once (in-place writes copied back into the inputs)."""
    if not (wide and any(t.dtype in LOW for t in ins)):
        try:
            with torch.no_grad():
                return _call(key, module, _subst(args, ins), _subst(kwargs, ins))
        except RuntimeError as e:
            if "Half" not in str(e) and "BFloat16" not in str(e):
                raise
    low = next(d for d in [t.dtype for t in ins] + list(kwargs.values()) if d in LOW)
    up = [t.float() if t.dtype in LOW else t for t in ins]
    mod = module.float() if module is not None else None
    with torch.no_grad():
        r = _call(key, mod, _subst(args, up), _subst(kwargs, up))
        for a, b in zip(ins, up):
            if a.dtype in LOW:
                a.copy_(b)
    if module is not None:
        module.to(low)

    def down(x):
        if isinstance(x, torch.Tensor) and x.dtype == F32:
            return x.to(low)
        if isinstance(x, tuple):
            return type(x)(*[down(v) for v in x]) if hasattr(x, "_fields") else \
                tuple(down(v) for v in x)
        if isinstance(x, list):
            return [down(v) for v in x]
        return x
    return down(r)


def check(out, ref, tol, where="output"):
    """out (ptc) matches ref (eager): tensors by value, dtype and shape;
    sequences element-wise; Python values exactly (same type)."""
    if isinstance(ref, torch.Tensor):
        assert isinstance(out, torch.Tensor), "%s: got %r, expected a tensor" % (where, out)
        assert out.dtype == ref.dtype, "%s: dtype %s, expected %s" % (where, out.dtype, ref.dtype)
        rtol, atol = TOL.get(ref.dtype, (0, 0))
        torch.testing.assert_close(out, ref, rtol=rtol * tol, atol=atol * tol, equal_nan=True,
                                   msg=lambda m: "%s: %s" % (where, m))
    elif isinstance(ref, dict):
        assert isinstance(out, dict) and set(out) == set(ref), "%s: keys %r, expected %r" % (
            where, list(out), list(ref))
        for k in ref:
            check(out[k], ref[k], tol, "%s[%r]" % (where, k))
    elif isinstance(ref, (tuple, list)):
        assert isinstance(out, (tuple, list)), "%s: got %r, expected %r" % (where, out, ref)
        assert len(out) == len(ref), "%s: %d items, expected %d" % (where, len(out), len(ref))
        for k, (o, r) in enumerate(zip(out, ref)):
            check(o, r, tol, "%s[%d]" % (where, k))
    else:
        assert type(out) is type(ref) and out == ref, "%s: %r, expected %r" % (where, out, ref)


def ident(k):
    s = M.fmt_target(k).replace("method .", "m.").replace("module torch.nn.", "nn.")
    return s.replace("torch.nn.functional.", "F.").replace(" ", "")


def run_case(spec, key, dt, nc, backend, seed):
    g = Gen(dt, nc, seed)
    ins, args, kwargs = spec.make(g)
    module = spec.module(dt) if spec.module is not None else None
    gm = one_node_gm(key, len(ins), args, kwargs, module, spec.via_clone, spec.pick)
    ref_in = [t.clone() for t in ins]
    ptc_in = [t.clone() for t in ins]
    if spec.via_clone:
        ins = [t.clone() for t in ref_in]
    if spec.expect is NotImplemented:
        expected = eager(key, module, ins if spec.via_clone else ref_in, args, kwargs,
                         spec.wide_ref)
    else:
        expected = spec.expect
    if spec.pick is not None:
        expected = expected[spec.pick]
    cg = ptc.from_fx(gm, ptc_in, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an eager fallback would warn
        out = cg(*ptc_in)
    check(out, expected, spec.tol)
    for k, (a, b) in enumerate(zip(ptc_in, ref_in)):
        check(a, b, spec.tol, "input %d after the call" % k)
    assert cg.compiled.num_compiles == 1


# ---- the cases -------------------------------------------------------------------------------

def un(lo=-2.0, hi=2.0, shape=(3, 5)):
    return lambda g: ([g.t(*shape, lo=lo, hi=hi)], (P(0),), {})


UNARY_DOMAIN = {"log": (0.1, 4), "log2": (0.1, 4), "log1p": (-0.5, 4), "sqrt": (0, 4),
                "rsqrt": (0.1, 4), "reciprocal": (0.5, 3), "tan": (-1.2, 1.2)}
SPECS = []
for _n in ["neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "sin",
           "cos", "tan", "tanh", "sigmoid", "relu", "erf", "floor", "ceil", "trunc",
           "reciprocal", "sign", "logical_not", "isnan", "isinf", "negative", "absolute",
           "fix"]:
    _lo, _hi = UNARY_DOMAIN.get(_n, (-2.5, 2.5))
    SPECS.append(S(K(_n), un(_lo, _hi), NUM))
    if hasattr(torch.Tensor, _n + "_") and _n not in ("logical_not", "isnan", "isinf",
                                                     "negative", "absolute", "fix"):
        SPECS.append(S(K(_n + "_", fn=False), un(_lo, _hi), FL))
SPECS += [
    S(K("atan") + K("arctan") + K("sinh") + K("cosh") + K("frac") + K("deg2rad") + K("rad2deg"),
      un(-3, 3), FL),
    S(K("asin") + K("arcsin") + K("acos") + K("arccos"), un(-1, 1), FL),
    S(K("log10"), un(0.01, 100), FL),
    S(K("sinh"), un(-1e-3, 1e-3), (F32,), name="sinh_small"),
    S(K("hypot"), lambda g: ([g.t(3, 4), g.t(4)], (P(0), P(1)), {}), FL),
    S([F.glu], lambda g: ([g.t(3, 8)], (P(0), -1), {}), FL),
    S([getattr(getattr(torch, "special", None), "expit", None)], un(), FL),
    S([getattr(getattr(torch, "special", None), "erf", None)], un(), FL),
    S(K("round"), un(-4, 4), NUM),
    S(K("round"), lambda g: ([g.t(3, 5, lo=-40, hi=40)], (P(0),), {"decimals": 1}), FL,
      name="round_decimals"),
    S([F.relu], un(), NUM),
    S([F.relu], lambda g: ([g.t(3, 5)], (P(0),), {"inplace": True}), FL, name="relu_inplace"),
    S([torch.relu_], un(), FL),
    S([F.gelu], un(-3, 3), FL),
    S([F.gelu], lambda g: ([g.t(3, 5, lo=-3, hi=3)], (P(0),), {"approximate": "tanh"}), FL,
      name="gelu_tanh") if TORCH2 or "approximate" in (F.gelu.__doc__ or "") else None,
    S([F.silu], un(-4, 4), FL),
    S([F.sigmoid], un(-4, 4), FL),
    S([F.tanh], un(), FL),
    S([F.hardtanh], lambda g: ([g.t(3, 5)], (P(0), -0.5, 0.75), {}), FL),
    S([F.relu6], un(-2, 8), FL),
    S([F.hardsigmoid], un(-5, 5), FL),
    S([F.hardswish], un(-5, 5), FL),
    S([F.leaky_relu], lambda g: ([g.t(3, 5)], (P(0), 0.2), {}), FL),
    S([F.elu], lambda g: ([g.t(3, 5)], (P(0),), {"alpha": 0.7}), FL),
    S([F.selu], un(), FL),
    S([F.celu], lambda g: ([g.t(3, 5)], (P(0),), {"alpha": 1.5}), FL),
    S([F.softplus], lambda g: ([g.t(3, 5, lo=-6, hi=6)], (P(0),), {"beta": 2, "threshold": 5}),
      FL),
    S([F.softplus], un(-30, 30), FL, name="softplus_default"),
    S([F.mish], un(-3, 3), FL),
    S([F.logsigmoid], un(-20, 20), FL),
    S([F.softsign], un(), FL),
    S([F.threshold], lambda g: ([g.t(3, 5)], (P(0), 0.3, -1.0), {}), FL),
    S([F.dropout, F.alpha_dropout, F.feature_alpha_dropout, F.dropout2d],
      lambda g: ([g.t(2, 3, 4, 5)], (P(0), 0.3, False), {}), FL),
    S([getattr(F, "dropout1d", None)], lambda g: ([g.t(2, 3, 4)], (P(0), 0.3, False), {}), FL),
    S([F.dropout3d], lambda g: ([g.t(2, 3, 2, 4, 5)], (P(0),), {"training": False}), FL),
    S([torch.dropout, torch.alpha_dropout, torch.feature_dropout],
      lambda g: ([g.t(2, 3, 4, 5, nc=False)], (P(0), 0.3, False), {}), FL, nc=False),
]


def _bin_inputs(op):
    def make(g):
        if op in ("pow",):
            a = g.t(3, 4, lo=0.5, hi=2.5) if g.dt.is_floating_point else g.t(3, 4, lo=0, hi=3)
            b = g.t(4, lo=-2, hi=2) if g.dt.is_floating_point else g.t(4, lo=0, hi=3)
        elif op in ("remainder", "floor_divide") and not g.dt.is_floating_point:
            a, b = g.t(3, 4, lo=-9, hi=9), g.t(4, lo=1, hi=4)
        elif op in ("remainder", "floor_divide"):
            a, b = g.t(3, 4, lo=-9, hi=9), g.t(4, lo=0.5, hi=3)
        elif op in ("eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum"):
            a, b = g.t(3, 4, lo=-2, hi=2).round(), g.t(4, lo=-2, hi=2).round()
        else:
            a, b = g.t(3, 4), g.pick(g.t(3, 4), g.t(4))
        return [a, b], (P(0), P(1)), {}
    return make


BIN_DTYPES = {"bitwise_and": (I64, BOOL), "bitwise_or": (I64, BOOL), "bitwise_xor": (I64, BOOL),
              "logical_and": NUM + (BOOL,), "logical_or": NUM + (BOOL,),
              "logical_xor": NUM + (BOOL,)}
for _n, _alias in [("mul", "multiply"), ("remainder", None), ("pow", None), ("maximum", None),
                   ("minimum", None), ("atan2", "arctan2"), ("eq", None), ("ne", "not_equal"),
                   ("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                   ("ge", "greater_equal"), ("logical_and", None), ("logical_or", None),
                   ("logical_xor", None), ("bitwise_and", None), ("bitwise_or", None),
                   ("bitwise_xor", None)]:
    _dts = BIN_DTYPES.get(_n, NUM if _n != "atan2" else FL)
    SPECS.append(S(K(_n) + (K(_alias) if _alias else []), _bin_inputs(_n), _dts))
    if _n not in ("maximum", "minimum"):
        SPECS.append(S(K(_n + "_", fn=False), _bin_inputs(_n),
                       tuple(d for d in _dts if d.is_floating_point or _n.startswith("bitwise"))
                       or FL))

SPECS += [
    S(K("add"), lambda g: ([g.t(3, 4), g.t(4)], (P(0), P(1)), {"alpha": 2}), NUM),
    S(K("add"), lambda g: ([g.t(3, 4)], (P(0), 2.5), {}), NUM, name="add_scalar"),
    S(K("sub") + K("subtract"), lambda g: ([g.t(3, 4), g.t(3, 1)], (P(0), P(1)), {"alpha": 3}),
      NUM),
    S(K("add_", fn=False), lambda g: ([g.t(3, 4), g.t(4)], (P(0), P(1)), {}), NUM),
    S(K("sub_", fn=False), lambda g: ([g.t(3, 4)], (P(0), 1.5), {}), FL),
    S([torch.rsub], lambda g: ([g.t(3, 4)], (P(0), 2), {"alpha": 3}), NUM),
    S([torch.rsub], lambda g: ([g.t(3, 4), g.t(4)], (P(0), P(1)), {}), NUM, name="rsub_tt"),
    S(K("div") + K("divide"), lambda g: ([g.t(3, 4), g.t(4, lo=0.5, hi=2)], (P(0), P(1)), {}),
      NUM),
    S(K("div"), lambda g: ([g.t(3, 4, lo=-9, hi=9), g.t(4, lo=1, hi=3)], (P(0), P(1)),
                           {"rounding_mode": "floor"}), NUM, name="div_floor"),
    S(K("div"), lambda g: ([g.t(3, 4, lo=-9, hi=9)], (P(0), 2), {"rounding_mode": "trunc"}),
      NUM, name="div_trunc_scalar"),
    S(K("div_", fn=False), lambda g: ([g.t(3, 4), g.t(4, lo=0.5, hi=2)], (P(0), P(1)), {}), FL),
    S(K("true_divide"), lambda g: ([g.t(3, 4), g.t(4, lo=0.5, hi=2)], (P(0), P(1)), {}), NUM),
    S(K("floor_divide"), _bin_inputs("floor_divide"), NUM),
    S(K("clamp") + K("clip"), lambda g: ([g.t(3, 4)], (P(0),), {"min": -0.5, "max": 1}), NUM),
    S(K("clamp"), lambda g: ([g.t(3, 4), g.t(4, lo=-1, hi=0), g.t(3, 1, lo=0, hi=1)],
                             (P(0), P(1), P(2)), {}), FL, name="clamp_tensors"),
    S(K("clamp_", fn=False) + K("clip_", fn=False),
      lambda g: ([g.t(3, 4)], (P(0),), {"min": 0.25}), FL),
    S(K("clamp_min"), lambda g: ([g.t(3, 4)], (P(0), 0.5), {}), NUM),
    S(K("clamp_max"), lambda g: ([g.t(3, 4)], (P(0), -0.5), {}), NUM),
    S([torch.where], lambda g: ([g.b(3, 4), g.t(3, 4), g.t(4)], (P(0), P(1), P(2)), {}), NUM),
    S(K("where", fn=False), lambda g: ([g.t(3, 4), g.b(4), g.t(3, 1)], (P(0), P(1), P(2)), {}),
      NUM, name="where_method"),
    S([torch.where], lambda g: ([g.b(3, 4), g.t(3, 4)], (P(0), P(1), 0.5), {}), NUM,
      name="where_scalar"),
    S(K("masked_fill") + K("masked_fill_", fn=False),
      lambda g: ([g.t(3, 4), g.b(4)], (P(0), P(1), -1.5), {}), FL),
    S(K("masked_fill"), lambda g: ([g.t(3, 4), g.b(3, 4)], (P(0), P(1), 7), {}), (I64,),
      name="masked_fill_int"),
    S(K("lerp"), lambda g: ([g.t(3, 4), g.t(3, 4), g.t(4, lo=0, hi=1)], (P(0), P(1), P(2)),
                            {}), FL),
    S(K("addcmul"), lambda g: ([g.t(3, 4), g.t(3, 4), g.t(4)], (P(0), P(1), P(2)),
                               {"value": 0.5}), FL),
    S(K("addcdiv"), lambda g: ([g.t(3, 4), g.t(3, 4), g.t(4, lo=0.5, hi=2)], (P(0), P(1), P(2)),
                               {"value": 2}), FL),
    S(K("square"), un(), NUM),
    S(K("nan_to_num"), lambda g: ([g.t(3, 4) / g.t(3, 4, lo=-1, hi=1).round()], (P(0),),
                                  {"nan": 0.5}), FL),
]


def _op(op, a_scalar=None, b_scalar=None, dts=NUM, lo=-2.0, hi=2.0, bool_in=False):
    """Python operator case: tensor op tensor, tensor op scalar, scalar op tensor."""
    def make(g):
        if a_scalar is not None:
            return [g.t(3, 4, lo=lo, hi=hi)], (a_scalar, P(0)), {}
        if b_scalar is not None:
            return [g.t(3, 4, lo=lo, hi=hi)], (P(0), b_scalar), {}
        return [g.t(3, 4, lo=lo, hi=hi), g.pick(g.t(3, 4, lo=lo, hi=hi), g.t(4, lo=lo, hi=hi))], \
            (P(0), P(1)), {}
    return make


def _inplace_op(op, b):
    return lambda g: ([g.t(3, 4)], (P(0), b), {})


SPECS += [
    S([operator.add, torch.Tensor.__add__], _op("add"), NUM),
    S([operator.add, torch.Tensor.__radd__], _op("add", b_scalar=3), NUM, name="add_scalar_op"),
    S([operator.add], _op("add", a_scalar=0.5), NUM, name="radd"),
    S([operator.sub, torch.Tensor.__sub__], _op("sub"), NUM),
    S([operator.sub], _op("sub", a_scalar=2.5), NUM, name="rsub_op"),
    S([operator.mul, torch.Tensor.__mul__, torch.Tensor.__rmul__], _op("mul", b_scalar=1.5),
      NUM),
    S([operator.mul], _op("mul", a_scalar=3), NUM + (BOOL,), name="rmul_op"),
    S([operator.truediv, torch.Tensor.__truediv__], _op("div", lo=0.5, hi=3), NUM),
    S([operator.truediv], _op("div", a_scalar=2, lo=0.5, hi=3), NUM, name="rdiv_op"),
    S([operator.floordiv, torch.Tensor.__floordiv__], _op("fd", b_scalar=2, lo=-9, hi=9), NUM),
    S([operator.floordiv], _op("fd", a_scalar=7, lo=1, hi=4), NUM, name="rfloordiv_op"),
    S([operator.mod, torch.Tensor.__mod__], _op("mod", b_scalar=3, lo=-9, hi=9), NUM),
    S([operator.pow, torch.Tensor.__pow__], _op("pow", b_scalar=2), NUM),
    S([operator.pow], _op("pow", a_scalar=2.0, lo=-2, hi=2), FL, name="rpow_op"),
    S([operator.pow], _op("pow", a_scalar=3, lo=0, hi=3), (I64,), name="rpow_int"),
    S([operator.and_, torch.Tensor.__and__], _op("and"), (I64, BOOL)),
    S([operator.or_, torch.Tensor.__or__], _op("or"), (I64, BOOL)),
    S([operator.xor, torch.Tensor.__xor__], _op("xor"), (I64, BOOL)),
    S([operator.eq, torch.Tensor.__eq__, "__eq__"], _op("eq", b_scalar=1), (I64,)),
    S([operator.ne, torch.Tensor.__ne__, "__ne__"], _op("ne", lo=-1, hi=1), (I64,)),
    S([operator.lt, torch.Tensor.__lt__, "__lt__"], _op("lt", b_scalar=0.5), NUM),
    S([operator.le, torch.Tensor.__le__, "__le__"], _op("le"), NUM),
    S([operator.gt], _op("gt", a_scalar=0.25), NUM, name="gt_reversed"),
    S([operator.gt, torch.Tensor.__gt__, "__gt__"], _op("gt"), NUM),
    S([operator.ge, torch.Tensor.__ge__, "__ge__"], _op("ge", b_scalar=0), NUM),
    S([torch.Tensor.__rsub__], lambda g: ([g.t(3, 4)], (P(0), 2), {}), NUM),
    S([torch.Tensor.__rtruediv__], lambda g: ([g.t(3, 4, lo=0.5, hi=2)], (P(0), 3), {}), NUM),
    S([torch.Tensor.__rpow__], lambda g: ([g.t(3, 4)], (P(0), 1.5), {}), FL),
    S([torch.Tensor.__rfloordiv__], lambda g: ([g.t(3, 4, lo=1, hi=4)], (P(0), 9), {}), NUM),
    S([operator.neg], un(), NUM),
    S([operator.pos], un(), NUM),
    S([operator.abs], un(), NUM),
    S([operator.invert] + K("bitwise_not") + [torch.Tensor.__invert__],
      lambda g: ([g.t(3, 4, lo=-5, hi=5)], (P(0),), {}), (I64, BOOL)),
    S([operator.iadd], _inplace_op("iadd", 1.5), FL),
    S([operator.isub], lambda g: ([g.t(3, 4), g.t(4)], (P(0), P(1)), {}), FL),
    S([operator.imul], _inplace_op("imul", 2), NUM),
    S([operator.itruediv], _inplace_op("itruediv", 4.0), FL),
]

# dtype conversions
SPECS += [
    S(K("to", fn=False), lambda g: ([g.t(3, 4, lo=-9, hi=9)], (P(0), I32), {}), NUM),
    S(K("to", fn=False), lambda g: ([g.t(3, 4)], (P(0),), {"dtype": F64, "copy": True}), NUM,
      name="to_kw"),
    S(K("to", fn=False), lambda g: ([g.t(3, 4), g.t(2, dt=BF16)], (P(0), P(1)), {}), NUM,
      name="to_other"),
    S(K("to", fn=False), lambda g: ([g.t(3, 4)], (P(0), "cpu", F16), {}), NUM,
      name="to_device_dtype"),
    S(K("type", fn=False), lambda g: ([g.t(3, 4)], (P(0), F64), {}), NUM),
    S(K("type", fn=False), lambda g: ([g.t(3, 4)], (P(0), "torch.IntTensor"), {}), NUM,
      name="type_str"),
    S(K("type_as", fn=False), lambda g: ([g.t(3, 4), g.i(2, dt=I32)], (P(0), P(1)), {}), NUM),
]
for _m in ["float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte",
           "bool"]:
    SPECS.append(S(K(_m, fn=False), lambda g: ([g.t(3, 4, lo=-3, hi=9)], (P(0),), {}), NUM))

# sizes and attributes (results are Python values)
SPECS += [
    S(K("size", fn=False), lambda g: ([g.t(3, 4)], (P(0),), {}), NUM),
    S(K("size", fn=False), lambda g: ([g.t(3, 4)], (P(0), -1), {}), NUM, name="size_dim"),
    S(K("dim", fn=False) + K("ndimension", fn=False), un(), NUM),
    S(K("numel", fn=False) + K("nelement", fn=False) + [torch.numel], un(), NUM),
    S(K("element_size", fn=False), un(), NUM),
    S(K("is_floating_point"), un(), NUM),
    S(K("is_contiguous", fn=False), un(), NUM),
    S([builtins.len], un(), NUM),
    S([torch.Size], lambda g: ([g.t(3, 4)], ([3, 4],), {}), name="size_ctor"),
]
for _attr in ["shape", "dtype", "ndim", "T", "mT" if hasattr(torch.Tensor, "mT") else "T"]:
    SPECS.append(S([builtins.getattr], lambda g, a=_attr: ([g.t(2, 3, 4)], (P(0), a), {}), NUM,
                   name="getattr_" + _attr))

# views, reshapes, permutes
SPECS += [
    S(K("view", fn=False), lambda g: ([g.t(2, 3, 4, nc=False)], (P(0), 4, -1), {}), NUM,
      nc=False),
    S(K("view", fn=False), lambda g: ([g.t(2, 3, 4)], (P(0), [2, 3, 2, 2]), {}), NUM,
      name="view_list"),
    S(K("reshape", fn=False), lambda g: ([g.t(2, 3, 4)], (P(0), 4, -1), {}), NUM),
    S([torch.reshape], lambda g: ([g.t(2, 3, 4)], (P(0), (-1, 2)), {}), NUM),
    S(K("view_as", fn=False), lambda g: ([g.t(2, 6, nc=False), g.t(3, 4)], (P(0), P(1)), {}),
      NUM),
    S(K("reshape_as", fn=False), lambda g: ([g.t(2, 6), g.t(3, 4)], (P(0), P(1)), {}), NUM),
    S(K("flatten"), lambda g: ([g.t(2, 3, 4, 5)], (P(0), 1, 2), {}), NUM),
    S(K("unflatten") if hasattr(torch, "unflatten") else K("unflatten", fn=False),
      lambda g: ([g.t(2, 12)], (P(0), 1, (3, -1)), {}), NUM),
    S(K("permute", fn=False), lambda g: ([g.t(2, 3, 4)], (P(0), 2, 0, 1), {}), NUM),
    S([torch.permute], lambda g: ([g.t(2, 3, 4)], (P(0), (1, 2, 0)), {}), NUM),
    S(K("transpose") + K("swapaxes") + K("swapdims"),
      lambda g: ([g.t(2, 3, 4)], (P(0), 0, -1), {}), NUM),
    S(K("transpose_", fn=False), lambda g: ([g.t(2, 3, 4)], (P(0), 1, 2), {}), FL,
      via_clone=True),
    S(K("t"), lambda g: ([g.t(3, 4)], (P(0),), {}), NUM),
    S(K("adjoint"), lambda g: ([g.t(2, 3, 4)], (P(0),), {}), FL),
    S(K("movedim") + K("moveaxis"), lambda g: ([g.t(2, 3, 4, 5)], (P(0), (0, 1), (2, 0)), {}),
      NUM),
    S(K("squeeze"), lambda g: ([g.t(2, 1, 4, 1)], (P(0),), {}), NUM),
    S(K("squeeze"), lambda g: ([g.t(2, 1, 4, 1)], (P(0), 1), {}), NUM, name="squeeze_dim"),
    S(K("unsqueeze"), lambda g: ([g.t(3, 4)], (P(0), -2), {}), NUM),
    S(K("unsqueeze_", fn=False), lambda g: ([g.t(3, 4)], (P(0), 0), {}), FL, via_clone=True),
    S(K("squeeze_", fn=False), lambda g: ([g.t(3, 1)], (P(0),), {}), FL, via_clone=True),
    S(K("expand", fn=False), lambda g: ([g.t(3, 1)], (P(0), 2, 3, 4), {}), NUM),
    S(K("broadcast_to"), lambda g: ([g.t(1, 4)], (P(0), (3, 4)), {}), NUM),
    S(K("expand_as", fn=False), lambda g: ([g.t(4), g.t(2, 3, 4)], (P(0), P(1)), {}), NUM),
    S(K("repeat", fn=False), lambda g: ([g.t(2, 3)], (P(0), 2, 1, 3), {}), NUM),
    S(K("tile"), lambda g: ([g.t(2, 3)], (P(0), (2,)), {}), NUM),
    S(K("contiguous", fn=False), lambda g: ([g.t(3, 4)], (P(0),), {}), NUM),
    S(K("clone"), lambda g: ([g.t(3, 4)], (P(0),), {}), NUM),
    S(K("detach"), lambda g: ([g.t(3, 4)], (P(0),), {}), NUM),
]

# joining, splitting, indexing
SPECS += [
    S([torch.cat, torch.concat, getattr(torch, "concatenate", None)],
      lambda g: ([g.t(3, 4), g.t(2, 4)], ([P(0), P(1)],), {}), NUM),
    S([torch.cat], lambda g: ([g.t(3, 4), g.t(3, 2, dt=F64)], ([P(0), P(1)], 1), {}), NUM,
      name="cat_dim_promote"),
    S([torch.stack], lambda g: ([g.t(3, 4), g.t(3, 4)], ([P(0), P(1)],), {"dim": -1}), NUM),
    S([torch.hstack], lambda g: ([g.t(3, 4), g.t(3, 2)], ([P(0), P(1)],), {}), NUM),
    S([torch.vstack], lambda g: ([g.t(4), g.t(2, 4)], ([P(0), P(1)],), {}), NUM),
    S(K("split"), lambda g: ([g.t(7, 4)], (P(0), 3), {}), NUM),
    S(K("split"), lambda g: ([g.t(7, 4)], (P(0), [1, 3], 1), {}), NUM, name="split_sizes"),
    S(K("split_with_sizes"), lambda g: ([g.t(7, 4)], (P(0), [2, 5]), {}), NUM),
    S(K("chunk"), lambda g: ([g.t(4, 7)], (P(0), 3, -1), {}), NUM),
    S(K("unbind"), lambda g: ([g.t(3, 4)], (P(0), 1), {}), NUM),
    S(K("narrow"), lambda g: ([g.t(5, 6)], (P(0), 1, 2, 3), {}), NUM),
    S(K("select"), lambda g: ([g.t(5, 6)], (P(0), 0, -2), {}), NUM),
    S(K("gather"), lambda g: ([g.t(4, 5), g.i(4, 3, hi=4)], (P(0), 1, P(1)), {}), NUM),
    S(K("index_select"), lambda g: ([g.t(4, 5), g.i(6, hi=3)], (P(0), 0, P(1)), {}), NUM),
    S(K("scatter"), lambda g: ([g.t(4, 5), torch.tensor([[0, 1, 2], [3, 0, 1]]), g.t(2, 3)],
                               (P(0), 1, P(1), P(2)), {}), FL),
    S(K("scatter"), lambda g: ([g.t(4, 5), torch.tensor([[0, 1, 2], [3, 0, 1]])],
                               (P(0), 1, P(1)), {"value": 2.5}), FL, name="scatter_value"),
    S(K("scatter_", fn=False),
      lambda g: ([g.t(4, 5), torch.tensor([[1, 2], [0, 3]]), g.t(2, 2)],
                 (P(0), 0, P(1), P(2)), {}), FL),
    S(K("scatter_add"), lambda g: ([g.t(4, 5), g.i(3, 5, hi=3), g.t(3, 5)],
                                   (P(0), 0, P(1), P(2)), {}), (F32, F64)),
    S(K("scatter_add_", fn=False), lambda g: ([g.t(4, 5), g.i(3, 5, hi=3), g.t(3, 5)],
                                              (P(0), 0, P(1), P(2)), {}), (F32, F64)),
    S(K("tril"), lambda g: ([g.t(4, 5)], (P(0), -1), {}), NUM),
    S(K("triu"), lambda g: ([g.t(2, 4, 5)], (P(0),), {"diagonal": 1}), NUM),
    S(K("tril_", fn=False), lambda g: ([g.t(4, 5)], (P(0),), {}), FL),
    S(K("triu_", fn=False), lambda g: ([g.t(4, 5)], (P(0), 2), {}), FL),
    S(K("flip"), lambda g: ([g.t(3, 4, 5)], (P(0), [0, 2]), {}), NUM),
    S(K("roll"), lambda g: ([g.t(3, 5)], (P(0), (2, -1), (1, 0)), {}), NUM),
    S(K("roll"), lambda g: ([g.t(3, 5)], (P(0), 4), {}), NUM, name="roll_flat"),
    S([operator.getitem, torch.Tensor.__getitem__],
      lambda g: ([g.t(4, 5, 6)], (P(0), (1, slice(None), slice(1, None, 2))), {}), NUM),
    S([operator.getitem], lambda g: ([g.t(4, 5, 6)], (P(0), (Ellipsis, None, slice(-3, None))),
                                     {}), NUM, name="getitem_ellipsis"),
    S([operator.getitem], lambda g: ([g.t(4, 5, 6), g.i(2, 3, hi=4)],
                                     (P(0), (slice(None), P(1))), {}), NUM,
      name="getitem_tensor"),
    S([operator.getitem], lambda g: ([g.t(4, 5, 6)], (P(0), (None, 2, [0, 3, 1])), {}), NUM,
      name="getitem_list"),
    S([operator.setitem, torch.Tensor.__setitem__],
      lambda g: ([g.t(4, 5, 6)], (P(0), (1, slice(None), slice(1, None, 2)), 2.5), {}), NUM),
    S([operator.setitem], lambda g: ([g.t(4, 5, 6), g.t(5)],
                                     (P(0), (slice(1, 3), Ellipsis, -2), P(1)), {}), NUM,
      name="setitem_tensor_int"),
    S([operator.setitem], lambda g: ([g.t(4, 5, 6), g.t(3, 1)],
                                     (P(0), (slice(None, None, 2), slice(-3, None)), P(1)), {}),
      NUM, name="setitem_tensor_step"),
    S([operator.setitem], lambda g: ([g.t(4, 5), g.t(5, dt=F64)], (P(0), (None, 0), P(1)), {}),
      NUM, name="setitem_none_cast"),
]

# creation
SPECS += [
    S([torch.full], lambda g: ([], ((2, 3), 1.5), {"dtype": g.dt}), NUM, nc=False),
    S([torch.full], lambda g: ([], ([4], 7), {}), (F32,), nc=False, name="full_int"),
    S([torch.zeros], lambda g: ([], (2, 3), {"dtype": g.dt}), NUM, nc=False),
    S([torch.ones], lambda g: ([], ((2, 3),), {"dtype": g.dt}), NUM, nc=False),
    S([torch.empty], lambda g: ([], (0, 3), {"dtype": g.dt}), NUM, nc=False),
    S([torch.zeros_like, torch.ones_like], lambda g: ([g.t(3, 4)], (P(0),), {}), NUM),
    S([torch.zeros_like], lambda g: ([g.t(3, 4)], (P(0),), {"dtype": I32}), NUM,
      name="zeros_like_dtype"),
    S([torch.empty_like], lambda g: ([g.t(3, 0)], (P(0),), {}), NUM),
    S([torch.full_like], lambda g: ([g.t(3, 4)], (P(0), 2), {}), NUM),
    S(K("fill_", fn=False), lambda g: ([g.t(3, 4)], (P(0), -3), {}), NUM),
    S(K("zero_", fn=False), lambda g: ([g.t(3, 4)], (P(0),), {}), NUM),
    S(K("new_zeros", fn=False) + K("new_ones", fn=False),
      lambda g: ([g.t(3, 4)], (P(0), (2, 5)), {}), NUM),
    S(K("new_empty", fn=False), lambda g: ([g.t(3, 4)], (P(0), (0, 5)), {"dtype": F64}), NUM),
    S(K("new_full", fn=False), lambda g: ([g.t(3, 4)], (P(0), (2,), 4), {}), NUM),
    S(K("new_tensor", fn=False), lambda g: ([g.t(3, 4)], (P(0), [[1, 2], [3, 4]]), {}), NUM),
    S([torch.tensor, torch.as_tensor], lambda g: ([], ([[1.5, 2], [3, 4]],), {"dtype": g.dt}),
      NUM, nc=False),
    S([torch.tensor], lambda g: ([], (2.5,), {}), (F32,), nc=False, name="tensor_scalar"),
    S([torch.scalar_tensor], lambda g: ([], (3,), {"dtype": g.dt}), NUM, nc=False),
    S([torch.arange], lambda g: ([], (1, 11, 3), {"dtype": g.dt}), NUM, nc=False),
    S([torch.arange], lambda g: ([], (0.5, 3.0, 0.25), {}), (F32,), nc=False,
      name="arange_float"),
    S([torch.eye], lambda g: ([], (3, 4), {"dtype": g.dt}), (F32, F64, I64), nc=False),
]

# reductions
SPECS += [
    S(K("sum"), lambda g: ([g.t(3, 4, 5)], (P(0), (0, 2)), {}), NUM),
    S(K("sum"), lambda g: ([g.t(3, 4)], (P(0),), {"dtype": F64}), NUM, name="sum_all_dtype"),
    S(K("mean"), lambda g: ([g.t(3, 4, 5)], (P(0), -1, True), {}), FL),
    S(K("mean"), un(), FL, name="mean_all"),
    S(K("prod"), lambda g: ([g.t(3, 4, lo=0.5, hi=1.5)], (P(0), 1), {}), NUM),
    S(K("amax") + K("amin"), lambda g: ([g.t(3, 4, 5)], (P(0), (0, 1)), {}), NUM),
    S(K("amax"), un(), NUM, name="amax_all"),
    S(K("argmax") + K("argmin"), lambda g: ([g.t(3, 4)], (P(0), 1), {"keepdim": True}), FL),
    S(K("argmax"), un(), FL, name="argmax_flat"),
    S(K("max") + K("min"), lambda g: ([g.t(3, 4)], (P(0), 1), {}), FL),
    S(K("max") + K("min"), un(), NUM, name="max_all"),
    S(K("max"), lambda g: ([g.t(3, 4), g.t(4)], (P(0), P(1)), {}), NUM, name="max_binary"),
    S(K("any") + K("all"), lambda g: ([g.b(3, 4)], (P(0), 1), {}), (BOOL, F32)),
    S(K("any"), lambda g: ([g.b(3, 4)], (P(0),), {}), (BOOL,), name="any_all"),
    S(K("var") + K("std"), lambda g: ([g.t(3, 6)], (P(0), 1), {}), FL),
    S(K("var"), lambda g: ([g.t(3, 6)], (P(0), False), {}), FL, name="var_unbiased"),
    S([torch.var], lambda g: ([g.t(3, 6)], (P(0),), {"dim": 0, "correction": 0,
                                                     "keepdim": True}), FL,
      name="var_correction") if TORCH2 or "correction" in (torch.var.__doc__ or "") else None,
    S([torch.var_mean, torch.std_mean], lambda g: ([g.t(3, 6)], (P(0), 1), {"keepdim": True}),
      FL),
    S(K("logsumexp"), lambda g: ([g.t(3, 6, lo=-5, hi=5)], (P(0), 1), {}), FL),
    S(K("cumsum"), lambda g: ([g.t(3, 6)], (P(0), 1), {}), NUM),
    S(K("softmax") + K("log_softmax"), lambda g: ([g.t(3, 6, lo=-4, hi=4)], (P(0), -1), {}), FL),
    S([F.softmax, F.log_softmax, F.softmin, getattr(getattr(torch, "special", None), "softmax",
                                                    None),
       getattr(getattr(torch, "special", None), "log_softmax", None)],
      lambda g: ([g.t(3, 6, lo=-4, hi=4)], (P(0), 0), {}), FL),
    S([F.softmax], lambda g: ([g.t(2, 3, 6)], (P(0),), {"dtype": F64}), FL,
      name="softmax_implicit_dim"),
    S(K("topk"), lambda g: ([torch.randperm(24, generator=g.g).reshape(4, 6).to(g.dt)],
                            (P(0), 3), {}), FL, nc=False),
    S(K("sort"), lambda g: ([torch.randperm(24, generator=g.g).reshape(4, 6).to(g.dt)],
                            (P(0),), {"descending": True}), NUM, nc=False),
    S(K("argsort"), lambda g: ([torch.randperm(24, generator=g.g).reshape(4, 6).to(g.dt)],
                               (P(0), 0), {}), NUM, nc=False),
    S(K("norm"), lambda g: ([g.t(3, 6)], (P(0),), {"dim": 1}), FL),
    S([F.normalize], lambda g: ([g.t(3, 6)], (P(0),), {}), FL),
]

# normalisations
SPECS += [
    S([F.layer_norm], lambda g: ([g.t(2, 3, 6), g.t(6), g.t(6)], (P(0), (6,), P(1), P(2)),
                                 {"eps": 1e-3}), FL, tol=2),
    S([torch.layer_norm], lambda g: ([g.t(2, 3, 6)], (P(0), [3, 6]), {}), FL, tol=2),
    S([F.group_norm], lambda g: ([g.t(2, 4, 5), g.t(4), g.t(4)], (P(0), 2, P(1), P(2)), {}), FL,
      tol=2),
    S([torch.group_norm], lambda g: ([g.t(2, 4, 5)], (P(0), 4), {}), FL, tol=2),
    S([F.batch_norm], lambda g: ([g.t(2, 3, 5), g.t(3), g.pos(3), g.t(3), g.t(3)],
                                 (P(0), P(1), P(2), P(3), P(4)), {}), FL, tol=2),
    S([torch.batch_norm], lambda g: ([g.t(2, 3, 5), g.pos(3), g.t(3)],
                                     (P(0), None, None, P(2), P(1), False, 0.1, 1e-5, False),
                                     {}), FL, tol=2),
    S([getattr(F, "rms_norm", None)], lambda g: ([g.t(2, 6), g.t(6)], (P(0), (6,), P(1)), {}),
      FL, tol=2),
]

# matrix products, convolution, pooling, misc nn
SPECS += [
    S([torch.matmul, operator.matmul, torch.Tensor.__matmul__, "matmul", torch.Tensor.matmul],
      lambda g: ([g.t(2, 3, 4), g.t(4, 5)], (P(0), P(1)), {}), FL, tol=2),
    S([torch.Tensor.__rmatmul__], lambda g: ([g.t(4, 5), g.t(3, 4)], (P(0), P(1)), {}), FL,
      tol=2),
    S(K("dot"), lambda g: ([g.t(6), g.t(6)], (P(0), P(1)), {}), FL, tol=2),
    S(K("mm"), lambda g: ([g.t(3, 4), g.t(4, 5)], (P(0), P(1)), {}), FL, tol=2),
    S(K("bmm"), lambda g: ([g.t(2, 3, 4), g.t(2, 4, 5)], (P(0), P(1)), {}), FL, tol=2),
    S(K("addmm"), lambda g: ([g.t(5), g.t(3, 4), g.t(4, 5)], (P(0), P(1), P(2)),
                             {"beta": 0.5, "alpha": 2}), FL, tol=2),
    S(K("baddbmm"), lambda g: ([g.t(3, 5), g.t(2, 3, 4), g.t(2, 4, 5)], (P(0), P(1), P(2)),
                               {"alpha": 0.5}), FL, tol=2),
    S([F.linear], lambda g: ([g.t(2, 3, 4), g.t(5, 4), g.t(5)], (P(0), P(1), P(2)), {}), FL,
      tol=2),
    S(K("outer"), lambda g: ([g.t(3), g.t(4)], (P(0), P(1)), {}), FL),
    S([torch.einsum], lambda g: ([g.t(2, 3, 4), g.t(2, 4, 5)], ("bij,bjk->bik", P(0), P(1)),
                                 {}), FL, tol=2),
    S([torch.einsum], lambda g: ([g.t(2, 3, 4), g.t(4, 5)], ("bij,jk->kbi", [P(0), P(1)]),
                                 {}), FL, tol=2, name="einsum_list"),
    S([torch.einsum], lambda g: ([g.t(2, 3, 4)], ("ijk->ki", P(0)), {}), FL, tol=2,
      name="einsum_unary"),
    S([F.conv1d, torch.conv1d],
      lambda g: ([g.t(2, 4, 9), g.t(6, 2, 3), g.t(6)], (P(0), P(1), P(2)),
                 {"stride": 2, "padding": 1, "groups": 2}), FL, tol=3, wide_ref=True),
    S([F.conv2d, torch.conv2d],
      lambda g: ([g.t(2, 3, 7, 7), g.t(4, 3, 3, 3), g.t(4)], (P(0), P(1), P(2)),
                 {"stride": (1, 2), "padding": (1, 0), "dilation": 1}), FL, tol=3,
      wide_ref=True),
    S([F.conv2d], lambda g: ([g.t(1, 3, 6, 6), g.t(4, 3, 3, 3)], (P(0), P(1)),
                             {"padding": "same"}), FL, tol=3, name="conv2d_same",
      wide_ref=True),
    S([F.max_pool2d, torch.max_pool2d],
      lambda g: ([g.t(2, 3, 7, 7)], (P(0), 3), {"stride": 2, "padding": 1}), FL),
    S([F.max_pool2d], lambda g: ([g.t(1, 2, 7, 7)], (P(0), (2, 3)), {"ceil_mode": True}), FL,
      name="max_pool2d_ceil"),
    S([F.avg_pool2d], lambda g: ([g.t(2, 3, 7, 7)], (P(0), 3, 2, 1), {
        "count_include_pad": False}), FL),
    S([F.max_pool1d, torch.max_pool1d], lambda g: ([g.t(2, 3, 9)], (P(0), 3, 2), {}), FL),
    S([F.avg_pool1d], lambda g: ([g.t(2, 3, 9)], (P(0), 2), {}), FL),
    S([F.adaptive_avg_pool2d], lambda g: ([g.t(2, 3, 7, 5)], (P(0), (3, None)), {}), FL),
    S([F.adaptive_avg_pool2d], lambda g: ([g.t(2, 3, 7, 5)], (P(0), 1), {}), FL,
      name="adaptive_avg_pool2d_1"),
    S([F.interpolate, F.upsample],
      lambda g: ([g.t(1, 2, 4, 5)], (P(0),), {"scale_factor": 2.0, "mode": "nearest"}), FL),
    S([F.interpolate], lambda g: ([g.t(1, 2, 4, 5)], (P(0),), {"size": (6, 7),
                                                               "mode": "bilinear",
                                                               "align_corners": False}), FL,
      tol=2, name="interpolate_bilinear"),
    S([F.embedding], lambda g: ([g.i(2, 3, hi=9), g.t(10, 4)], (P(0), P(1)),
                                {"padding_idx": 2}), FL),
    S([torch.embedding], lambda g: ([g.t(10, 4), g.i(5, hi=9)], (P(0), P(1)), {}), FL),
    S([F.one_hot], lambda g: ([g.i(2, 3, hi=4)], (P(0), 5), {}), (I64,)),
    S([F.pad], lambda g: ([g.t(2, 3, 4)], (P(0), (1, 2, 0, 1)), {"value": 0.5}), NUM),
    S([torch.constant_pad_nd], lambda g: ([g.t(2, 3)], (P(0), [1, 1]), {}), NUM),
]
if hasattr(F, "scaled_dot_product_attention"):
    SPECS += [
        S([F.scaled_dot_product_attention],
          lambda g: ([g.t(2, 2, 5, 8), g.t(2, 2, 6, 8), g.t(2, 2, 6, 4)], (P(0), P(1), P(2)),
                     {}), FL, tol=2),
        S([F.scaled_dot_product_attention],
          lambda g: ([g.t(2, 2, 5, 8), g.t(2, 2, 5, 8), g.t(2, 2, 5, 4)], (P(0), P(1), P(2)),
                     {"is_causal": True}), FL, tol=2, name="sdpa_causal"),
        S([F.scaled_dot_product_attention],
          lambda g: ([g.t(2, 5, 8), g.t(2, 6, 8), g.t(2, 6, 4), g.b(5, 6) | torch.eye(5, 6).bool()],
                     (P(0), P(1), P(2), P(3)), {}), FL, tol=2, name="sdpa_mask"),
    ]


# modules
def _mod(factory, make, dtypes=FL, tol=1, nc=True):
    return dict(module=lambda dt: (factory().to(dt) if dt.is_floating_point else factory()).eval(),
                make=make, dtypes=dtypes, tol=tol, nc=nc)


def _x(*shape):
    return lambda g: ([g.t(*shape)], (P(0),), {})


def _bn(cls, n):
    def f():
        m = cls(n)
        with torch.no_grad():
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
            m.weight.uniform_(0.5, 1.5)
            m.bias.uniform_(-0.5, 0.5)
        return m
    return f


MODULE_SPECS = [
    (nn.Linear, _mod(lambda: nn.Linear(4, 5), _x(2, 3, 4), tol=2)),
    (nn.Conv1d, _mod(lambda: nn.Conv1d(3, 4, 3, padding=1), _x(2, 3, 8), tol=3)),
    (nn.Conv2d, _mod(lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False),
                     _x(2, 3, 8, 8), tol=3)),
    (nn.BatchNorm1d, _mod(_bn(nn.BatchNorm1d, 3), _x(4, 3, 5), tol=2)),
    (nn.BatchNorm2d, _mod(_bn(nn.BatchNorm2d, 3), _x(2, 3, 4, 5), tol=2)),
    (nn.LayerNorm, _mod(lambda: nn.LayerNorm(6), _x(2, 3, 6), tol=2)),
    (nn.GroupNorm, _mod(lambda: nn.GroupNorm(2, 4), _x(2, 4, 5), tol=2)),
    (getattr(nn, "RMSNorm", None), _mod(lambda: nn.RMSNorm(6), _x(2, 6), tol=2)),
    (nn.Embedding, _mod(lambda: nn.Embedding(10, 4, padding_idx=0),
                        lambda g: ([g.i(2, 5, hi=9)], (P(0),), {}))),
    (nn.ReLU, _mod(lambda: nn.ReLU(inplace=True), _x(3, 4), dtypes=NUM)),
    (nn.ReLU6, _mod(nn.ReLU6, lambda g: ([g.t(3, 4, lo=-3, hi=9)], (P(0),), {}))),
    (nn.Hardtanh, _mod(lambda: nn.Hardtanh(-0.5, 0.5), _x(3, 4))),
    (nn.GELU, _mod(nn.GELU, _x(3, 4))),
    (nn.SiLU, _mod(nn.SiLU, _x(3, 4))),
    (nn.Tanh, _mod(nn.Tanh, _x(3, 4))),
    (nn.Sigmoid, _mod(nn.Sigmoid, _x(3, 4))),
    (nn.Hardswish, _mod(nn.Hardswish, lambda g: ([g.t(3, 4, lo=-5, hi=5)], (P(0),), {}))),
    (nn.Hardsigmoid, _mod(nn.Hardsigmoid, lambda g: ([g.t(3, 4, lo=-5, hi=5)], (P(0),), {}))),
    (nn.LeakyReLU, _mod(lambda: nn.LeakyReLU(0.1), _x(3, 4))),
    (nn.ELU, _mod(nn.ELU, _x(3, 4))),
    (nn.SELU, _mod(nn.SELU, _x(3, 4))),
    (nn.CELU, _mod(lambda: nn.CELU(0.5), _x(3, 4))),
    (nn.Softplus, _mod(nn.Softplus, _x(3, 4))),
    (nn.Mish, _mod(nn.Mish, _x(3, 4))),
    (nn.Softsign, _mod(nn.Softsign, _x(3, 4))),
    (nn.LogSigmoid, _mod(nn.LogSigmoid, _x(3, 4))),
    (nn.Threshold, _mod(lambda: nn.Threshold(0.1, 20.0), _x(3, 4))),
    (nn.Softmax, _mod(lambda: nn.Softmax(dim=1), _x(3, 4))),
    (nn.LogSoftmax, _mod(lambda: nn.LogSoftmax(dim=-1), _x(3, 4))),
    (nn.Softmin, _mod(lambda: nn.Softmin(dim=0), _x(3, 4))),
    (nn.Dropout, _mod(lambda: nn.Dropout(0.4), _x(3, 4))),
    (getattr(nn, "Dropout1d", None), _mod(lambda: nn.Dropout1d(0.4), _x(2, 3, 4))),
    (nn.Dropout2d, _mod(lambda: nn.Dropout2d(0.4), _x(2, 3, 4, 5))),
    (nn.Dropout3d, _mod(lambda: nn.Dropout3d(0.4), _x(2, 3, 2, 4, 5))),
    (nn.AlphaDropout, _mod(lambda: nn.AlphaDropout(0.4), _x(3, 4))),
    (nn.Identity, _mod(nn.Identity, _x(3, 4), dtypes=NUM)),
    (nn.Flatten, _mod(nn.Flatten, _x(2, 3, 4), dtypes=NUM)),
    (nn.Unflatten, _mod(lambda: nn.Unflatten(1, (2, 3)), _x(4, 6), dtypes=NUM)),
    (nn.MaxPool2d, _mod(lambda: nn.MaxPool2d(3, 2, 1), _x(2, 3, 7, 7))),
    (nn.AvgPool2d, _mod(lambda: nn.AvgPool2d(2, ceil_mode=True), _x(2, 3, 7, 7))),
    (nn.MaxPool1d, _mod(lambda: nn.MaxPool1d(2), _x(2, 3, 8))),
    (nn.AvgPool1d, _mod(lambda: nn.AvgPool1d(3, 1, 1), _x(2, 3, 8))),
    (nn.AdaptiveAvgPool2d, _mod(lambda: nn.AdaptiveAvgPool2d((2, 3)), _x(2, 3, 7, 7))),
    (nn.Upsample, _mod(lambda: nn.Upsample(scale_factor=2, mode="bilinear"), _x(1, 2, 3, 4))),
    (nn.ZeroPad2d, _mod(lambda: nn.ZeroPad2d((1, 0, 2, 1)), _x(1, 2, 3, 4), dtypes=NUM)),
    (nn.ConstantPad1d, _mod(lambda: nn.ConstantPad1d(2, 3.5), _x(2, 3, 4))),
    (nn.ConstantPad2d, _mod(lambda: nn.ConstantPad2d((1, 1, 0, 2), -1.0), _x(2, 3, 4))),
    (nn.MultiheadAttention, _mod(lambda: nn.MultiheadAttention(8, 2, batch_first=True),
                                 lambda g: ([g.t(2, 5, 8), g.t(2, 6, 8)], (P(0), P(1), P(1)),
                                            {}), dtypes=(F32, F64), tol=3)),
    (nn.TransformerEncoderLayer, _mod(
        lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0),
        lambda g: ([g.t(5, 2, 8)], (P(0),), {}), dtypes=(F32, F64), tol=5)),
    (nn.TransformerEncoder, _mod(
        lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(
            8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, activation="gelu",
            norm_first=True), 2, enable_nested_tensor=False),
        lambda g: ([g.t(2, 5, 8)], (P(0),), {}), dtypes=(F32, F64), tol=5)),
]
for _cls, _kw in MODULE_SPECS:
    if _cls is not None:
        SPECS.append(S([_cls], **_kw))
# MultiheadAttention variants: not batch_first with weights and masks; unbatched
SPECS += [
    S([nn.MultiheadAttention],
      module=lambda dt: nn.MultiheadAttention(8, 2, kdim=6, vdim=4).to(dt).eval(),
      make=lambda g: ([g.t(5, 2, 8), g.t(7, 2, 6), g.t(7, 2, 4), g.b(2, 7) & (torch.arange(7) > 0),
                       torch.randn(5, 7, generator=g.g).to(g.dt)],
                      (P(0), P(1), P(2)), {"key_padding_mask": P(3), "attn_mask": P(4),
                                           "need_weights": True}),
      dtypes=(F32, F64), tol=3, name="mha_weights_masks"),
    S([nn.MultiheadAttention],
      module=lambda dt: nn.MultiheadAttention(8, 4).to(dt).eval(),
      make=lambda g: ([g.t(5, 8), torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)],
                      (P(0), P(0), P(0)), {"attn_mask": P(1), "need_weights": False,
                                           "average_attn_weights": False}),
      dtypes=(F32,), tol=3, name="mha_unbatched_boolmask"),
]
# fused attention fast paths (what eval-mode MultiheadAttention / TransformerEncoderLayer
# call, and what Dynamo captures from them)
def _native_mha_case(g):
    q, kv = g.t(2, 6, 8), g.t(2, 6, 8)  # the fused kernel wants equal shapes
    w, bias, pw, pb = g.t(24, 8, lo=-0.5, hi=0.5), g.t(24), g.t(8, 8, lo=-0.5, hi=0.5), g.t(8)
    kpm = g.b(2, 6) & (torch.arange(6) > 0)
    return [q, kv, w, bias, pw, pb, kpm], (P(0), P(1), P(1), 8, 2, P(2), P(3), P(4), P(5), P(6),
                                           True, True, 1), {}


def _native_encoder_case(g):
    ws = [g.t(24, 8, lo=-0.5, hi=0.5), g.t(24), g.t(8, 8, lo=-0.5, hi=0.5), g.t(8),
          g.t(8, lo=0.5, hi=1.5), g.t(8), g.t(8, lo=0.5, hi=1.5), g.t(8),
          g.t(16, 8, lo=-0.5, hi=0.5), g.t(16), g.t(8, 16, lo=-0.5, hi=0.5), g.t(8)]
    args = (P(0), 8, 2, P(1), P(2), P(3), P(4), g.pick(False, True), g.pick(False, True), 1e-5,
            P(5), P(6), P(7), P(8), P(9), P(10), P(11), P(12))
    return [g.t(2, 5, 8)] + ws, args, {}


SPECS += [
    S([getattr(torch, "_native_multi_head_attention", None)], _native_mha_case, (F32, F64),
      tol=3),
    S([getattr(torch, "_transformer_encoder_layer_fwd", None)], _native_encoder_case,
      (F32, F64), tol=5),
]

# Python-level calls of captured graphs (numbers, grad mode, asserts)
SPECS += [
    S([math.sqrt], lambda g: ([], (16,), {}), nc=False, cpu=False),
    S([math.floor, math.ceil], lambda g: ([], (2.5,), {}), nc=False, cpu=False),
    S([math.log, math.pow], lambda g: ([], (8.0, 2.0), {}), nc=False, cpu=False),
    S([getattr(torch, "sym_float", None), getattr(torch, "sym_int", None)],
      lambda g: ([], (3,), {}), nc=False, cpu=False),
    S([getattr(torch, "sym_max", None), getattr(torch, "sym_min", None)],
      lambda g: ([], (3, 5), {}), nc=False, cpu=False),
    S([torch._C._set_grad_enabled], lambda g: ([], (True,), {}), nc=False, cpu=False),
    S([torch._assert, getattr(torch, "_check", None)], lambda g: ([], (True, "ok"), {}),
      nc=False, cpu=False),
    S([getattr(torch, "_check_is_size", None)], lambda g: ([], (3,), {}), nc=False, cpu=False),
    S([getattr(getattr(torch.autograd, "grad_mode", None), "_enter_inference_mode", None),
       getattr(getattr(torch.autograd, "grad_mode", None), "_exit_inference_mode", None)],
      lambda g: ([], (None,), {}), nc=False, cpu=False, expect=None),
]
# torch.diff (composition of slices and sub / != for bool)
SPECS += [
    S(K("diff"), un(), NUM + (BOOL,)),
    S(K("diff", method=False, tensor=False),
      lambda g: ([g.t(4, 3), g.t(1, 3), g.t(2, 3)], (P(0),),
                 {"n": 2, "dim": 0, "prepend": P(1), "append": P(2)}), FL, name="diff_n2"),
]


def A(name, overload="default"):
    """torch.ops.aten.<name>.<overload> (None when this torch lacks it;
    overload None: the packet)."""
    try:
        packet = getattr(torch.ops.aten, name)
        return packet if overload is None else getattr(packet, overload)
    except (AttributeError, RuntimeError):
        return None


INT64_MAX = 2 ** 63 - 1
# ATen overloads (graphs from make_fx / dynamo export): explicit table entries
SPECS += [
    S([A("sym_size", "int"), A("sym_size", None)], lambda g: ([g.t(3, 5)], (P(0), 1), {}),
      cpu=False),
    S([A("sym_numel"), A("sym_numel", None)], un(), cpu=False),
    S([A("view"), A("_unsafe_view")], lambda g: ([g.t(3, 4)], (P(0), [2, -1]), {}), NUM,
      nc=False),
    S([A("_reshape_alias")], lambda g: ([g.t(3, 4)], (P(0), [2, 6], [6, 1]), {}), nc=False),
    S([A("slice", "Tensor")], lambda g: ([g.t(4, 6)], (P(0), 1, 1, INT64_MAX, 2), {}), NUM),
    S([A("slice", "Tensor")], lambda g: ([g.t(5, 3)], (P(0), 0, -3, -1), {}), name="slice_neg"),
    S([A("index", "Tensor")], lambda g: ([g.t(3, 5), g.i(4, hi=4)], (P(0), [None, P(1)]), {})),
    S([A("_to_copy")], lambda g: ([g.t(3, 4)], (P(0),), {"dtype": F64}), NUM),
    S([A("_to_copy")], un(), name="to_copy_same"),
    S([A("alias"), A("lift_fresh_copy"), A("lift_fresh")], un(), cpu=False),
    S([A("_softmax"), A("_log_softmax")], lambda g: ([g.t(3, 5)], (P(0), 1, False), {}), FL),
    S([A("native_layer_norm")],
      lambda g: ([g.t(2, 3, 5), g.t(5), g.t(5)], (P(0), [5], P(1), P(2), 1e-5), {}), FL),
    S([A("native_batch_norm")],
      lambda g: ([g.t(2, 3, 4), g.t(3), g.t(3), g.t(3), g.pos(3)],
                 (P(0), P(1), P(2), P(3), P(4), False, 0.1, 1e-5), {}), FL, pick=0),
    S([A("_native_batch_norm_legit_no_training")],
      lambda g: ([g.t(2, 3, 4), g.t(3), g.t(3), g.t(3), g.pos(3)],
                 (P(0), P(1), P(2), P(3), P(4), 0.1, 1e-5), {}), FL, pick=0),
    S([A("native_dropout")], lambda g: ([g.t(3, 4)], (P(0), 0.5, False), {}), pick=0,
      cpu=False),
    S([A("sum", "dim_IntList"), A("mean", "dim"), A("amax"), A("amin")],
      lambda g: ([g.t(3, 4, 5)], (P(0), [0, 2], True), {}), FL),
    S([A("sum", "dim_IntList"), A("mean", "dim"), A("amax"), A("amin")],
      lambda g: ([g.t(3, 4)], (P(0), []), {}), name="reduce_all_dims"),
    S([A("convolution")],
      lambda g: ([g.t(2, 3, 6, 6), g.t(4, 3, 3, 3), g.t(4)],
                 (P(0), P(1), P(2), [1, 1], [1, 1], [1, 1], False, [0, 0], 1), {}), FL,
      wide_ref=True),
    S([A("convolution")],
      lambda g: ([g.t(2, 4, 7), g.t(6, 2, 3), g.t(6)],
                 (P(0), P(1), P(2), [2], [0], [1], False, [0], 2), {}), name="convolution_1d"),
    S([A("max_pool2d_with_indices")], lambda g: ([g.t(2, 3, 6, 6)], (P(0), [2, 2], [2, 2]), {}),
      pick=0),
    S([A("_adaptive_avg_pool2d")], lambda g: ([g.t(2, 3, 4, 4)], (P(0), [1, 1]), {})),
    S([A("_scaled_dot_product_flash_attention_for_cpu")],
      lambda g: ([g.t(2, 3, 4, 8), g.t(2, 3, 5, 8), g.t(2, 3, 5, 8)], (P(0), P(1), P(2)),
                 {"is_causal": False}), pick=0, tol=10, nc=False),  # torch 2.11's kernel misreads strided inputs
]
# ATen overloads without an entry: the same-named torch function's converter
SPECS += [
    S([A("add", "Tensor"), A("sub", "Tensor")],
      lambda g: ([g.t(3, 4), g.t(4)], (P(0), P(1)), {"alpha": 2}), NUM, cpu=False),
    S([A("mul", "Tensor"), A("div", "Tensor"), A("maximum"), A("atan2")],
      lambda g: ([g.t(3, 4), g.t(4, lo=0.5, hi=2)], (P(0), P(1)), {}), cpu=False),
    S([A("div", "Tensor_mode")],
      lambda g: ([g.t(3, 4, lo=-9, hi=9), g.t(4, lo=1, hi=3)], (P(0), P(1)),
                 {"rounding_mode": "floor"}), NUM, cpu=False),
    S([A("pow", "Tensor_Scalar"), A("mul", "Scalar"), A("add", "Scalar"), A("rsub", "Scalar")],
      lambda g: ([g.t(3, 4, lo=0.5, hi=2)], (P(0), 3), {}), cpu=False),
    S([A(n) for n in ("neg", "exp", "tanh", "sigmoid", "rsqrt", "relu", "gelu", "silu", "t",
                      "clone", "erf", "sqrt", "log")],
      un(0.5, 2.0), cpu=False),
    S([A("gelu")], lambda g: ([g.t(3, 4)], (P(0),), {"approximate": "tanh"}),
      name="aten_gelu_tanh", cpu=False),
    S([A("addmm")], lambda g: ([g.t(4), g.t(3, 5), g.t(5, 4)], (P(0), P(1), P(2)),
                               {"beta": 0.5, "alpha": 2}), FL, cpu=False),
    S([A("mm")], lambda g: ([g.t(3, 5), g.t(5, 4)], (P(0), P(1)), {}), cpu=False),
    S([A("bmm")], lambda g: ([g.t(2, 3, 5), g.t(2, 5, 4)], (P(0), P(1)), {}), cpu=False),
    S([A("permute")], lambda g: ([g.t(2, 3, 4)], (P(0), [2, 0, 1]), {}), cpu=False),
    S([A("expand")], lambda g: ([g.t(3, 1)], (P(0), [2, 3, 4]), {}), cpu=False),
    S([A("unsqueeze"), A("squeeze", "dim")], lambda g: ([g.t(3, 1, 4)], (P(0), 1), {}),
      cpu=False),
    S([A("select", "int")], lambda g: ([g.t(3, 2, 4)], (P(0), 1, -1), {}), cpu=False),
    S([A("cat")], lambda g: ([g.t(3, 4), g.t(2, 4)], ([P(0), P(1)], 0), {}), cpu=False),
    S([A("split", "Tensor")], lambda g: ([g.t(5, 4)], (P(0), 2, 0), {}), cpu=False),
    S([A("split_with_sizes")], lambda g: ([g.t(4, 5)], (P(0), [2, 3], 1), {}), cpu=False),
    S([A("embedding")], lambda g: ([g.t(10, 4), g.i(2, 3, hi=9)], (P(0), P(1)), {}),
      cpu=False),
    S([A("where", "self")], lambda g: ([g.b(3, 4), g.t(3, 4), g.t(4)], (P(0), P(1), P(2)), {}),
      cpu=False),
    S([A("var_mean", "correction")], lambda g: ([g.t(3, 5)], (P(0), [1]),
                                                {"correction": 1, "keepdim": True}), FL,
      cpu=False),
    S([A("full")], lambda g: ([], ([2, 3], 1.5), {"dtype": F32, "layout": torch.strided,
                                                  "device": torch.device("cpu"),
                                                  "pin_memory": False}), nc=False, cpu=False),
    S([A("scalar_tensor")], lambda g: ([], (2.5,), {"dtype": F64}), nc=False, cpu=False),
]
SPECS = [s for s in SPECS if s is not None and s.keys]


def _items():
    items = []
    for si, s in enumerate(SPECS):
        for key in s.keys:
            for dt in s.dtypes:
                for nc in ((False, True) if dt == s.dtypes[0] and s.nc else (False,)):
                    items.append(pytest.param(
                        si, key, dt, nc, "ref",
                        id="%s-%s-%s-%d-ref" % (ident(key), str(dt).replace("torch.", ""),
                                                "nc" if nc else "c", si)))
        if s.cpu:
            key, dt = s.keys[0], s.dtypes[0]
            items.append(pytest.param(si, key, dt, s.nc, "cpu",
                                      id="%s-%s-%d-cpu" % (ident(key),
                                                           str(dt).replace("torch.", ""), si)))
    return items


@pytest.mark.parametrize("si,key,dt,nc,backend", _items())
def test_entry(si, key, dt, nc, backend):
    run_case(SPECS[si], key, dt, nc, backend, si)


def test_table_coverage():
    """Every key of the mapping table has at least one case above."""
    covered = set()
    for s in SPECS:
        covered.update(s.keys)
    missing = [M.fmt_target(k) for k in M.TABLE if k not in covered]
    assert not missing, "table entries without a test case:\n" + "\n".join(sorted(missing))


def test_table_is_one_registry():
    """lookup() answers from the one TABLE; every value is callable."""
    assert len(M.TABLE) > 300
    for k, conv in M.TABLE.items():
        assert callable(conv), k
        assert M.lookup(k) is conv
    from ptc import _map_core
    assert not _map_core.DUPLICATES, _map_core.DUPLICATES
    kinds = M.entries_by_kind()
    assert kinds["method"] > 0 and kinds["module"] > 0 and kinds["function"] > 0


# ---- the FX bridge ----------------------------------------------------------------------------

BACKENDS = ["ref", "cpu"]


def _trace(fn):
    return torch.fx.symbolic_trace(fn)


def _view_rows(x):
    return x.view(x.size(0), -1).sum(1) * x.shape[1] + x.reshape(x.shape[0] // 1, -1)[:, :2].T


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_batch_sizes_stay_symbolic(backend):
    """x.view(x.size(0), -1): after the first size-caused recompile the batch
    dim is a symbol, so every further batch size runs without recompiling."""
    cg = ptc.from_fx(_trace(_view_rows), [torch.randn(2, 3, 4)], backend=backend)
    for n in (2, 3, 5, 8, 17):
        x = torch.randn(n, 3, 4)
        torch.testing.assert_close(cg(x), _view_rows(x), rtol=1e-4, atol=1e-5)
    assert cg.compiled.num_compiles == 2, cg.compiled.recompile_reasons
    assert (0, 0) in cg.compiled.dynamic_dims
    assert "s_x_0" in str(cg.graph)


def _size_arith(x):
    h = x.shape[1] // 2
    return x.reshape(x.shape[0] * 2, h)[: x.size(0) + 1] + x.new_zeros(1, h)


def test_size_arithmetic_dynamic_from_start():
    """dynamic=True: sizes computed with operator.* on SymInts (floordiv, mul,
    add inside a slice) are exact for every size, with one compile."""
    cg = ptc.from_fx(_trace(_size_arith), [torch.randn(3, 4)], backend="ref", dynamic=True)
    for n, m in ((3, 4), (5, 6), (2, 10)):
        x = torch.randn(n, m)
        torch.testing.assert_close(cg(x), _size_arith(x))
    assert cg.compiled.num_compiles == 1


PROMOTION = [
    ("int+float", lambda x: x + 2.5, I64),
    ("f16*float", lambda x: x * 2.5, F16),
    ("bf16-int", lambda x: 3 - x, BF16),
    ("float/int", lambda x: 2 / x, I32),
    ("int**int", lambda x: x ** 2, I64),
    ("int**float", lambda x: x ** 0.5, I64),
    ("float**tensor", lambda x: 2.0 ** x, F32),
    ("int**tensor", lambda x: 2 ** x, I32),
    ("bool+int", lambda x: x + 1, BOOL),
    ("bool*bool", lambda x: x * True, BOOL),
    ("i32*int", lambda x: x * 2, I32),
    ("i32*float", lambda x: x * 2.0, I32),
    ("u8+int", lambda x: x + 3, U8),
    ("int//float", lambda x: x // 2.5, I64),
    ("int%int", lambda x: 7 % (x + 4), I64),
    ("f64+float", lambda x: x + 0.1, F64),
    ("int>float", lambda x: x > 0.5, I64),
    ("float<tensor", lambda x: 0.5 < x, I32),
    ("where-scalar", lambda x: torch.where(x > 0, x, 0.5), I64),
    ("where-scalars", lambda x: torch.where(x > 0, 1.0, 0), I64),
    ("masked_fill-int", lambda x: x.masked_fill(x > 0, 2.7), I32),
    ("clamp-int-float", lambda x: torch.clamp(x, min=0.5), I64),
    ("0d-f64*f32", lambda x: x * torch.tensor(2.0, dtype=F64), F32),
    ("sum-int", lambda x: x.sum(), I32),
    ("mean-f16", lambda x: x.mean(0), F16),
    ("neg-rsub-u8", lambda x: 1 - x, U8),
]


@pytest.mark.parametrize("fn,dt", [pytest.param(f, d, id=n) for n, f, d in PROMOTION])
def test_python_scalar_promotion(fn, dt):
    """Python scalars mixed with tensors give torch's result dtype and values."""
    x = Gen(dt, False, 7).t(3, 4, lo=-3, hi=3)
    cg = ptc.from_fx(_trace(fn), [x], backend="ref")
    out, ref = cg(x), eager(fn, None, [x], (P(0),), {})
    check(out, ref, 1.0)


def _scaled(x, n: int, flag: bool):
    return x * n + flag


def test_non_tensor_inputs_specialised():
    """int/bool placeholders are baked in; other values compile another
    specialisation, the same values reuse theirs."""
    gm = _trace(_scaled)
    x = torch.randn(3, 4)
    cg = ptc.from_fx(gm, [x, 3, True], backend="ref")
    for n, f in ((3, True), (5, True), (3, False), (3, True)):
        torch.testing.assert_close(cg(x, n, f), gm(x, n, f))
    assert cg.specialisations == 3


def _writes_input(x, y):
    x.add_(y)
    z = y * 2
    F.relu(z, inplace=True)
    z.mul_(x[0])
    return x * 2, z, y


@pytest.mark.parametrize("backend", BACKENDS)
def test_inplace_writes(backend):
    """In-place ops: a written input is updated in the caller's tensor after
    the call; in-place ops on intermediates are seen by later uses."""
    gm = _trace(_writes_input)
    x, y = torch.randn(3, 4), torch.randn(4)
    x_ref = x.clone()
    cg = ptc.from_fx(gm, [x.clone(), y], backend=backend)
    out = cg(x, y)
    ref = gm(x_ref, y)
    check(list(out), list(ref), 1.0)
    torch.testing.assert_close(x, x_ref)
    assert out[2] is y  # an input returned as is


class _Structured(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x, y):
        m = torch.max(x, 1)
        return {"sum": x + y, "pair": [x, (y.shape, m.values, m.indices)], "w": self.w,
                "n": x.size(0), "dtype": x.dtype, "none": None}


def test_output_structure_and_passthrough():
    """Dicts, lists, tuples, namedtuple fields, sizes and Python values keep
    eager's structure; inputs and parameters are returned as the same objects."""
    m = _Structured()
    gm = _trace(m)
    x, y = torch.randn(3, 4), torch.randn(4)
    cg = ptc.from_fx(gm, [x, y], backend="ref")
    out, ref = cg(x, y), gm(x, y)
    assert set(out) == set(ref)
    check(out["sum"], ref["sum"], 1.0)
    assert out["pair"][0] is x and out["w"] is m.w
    assert tuple(out["pair"][1][0]) == (4,)
    check(list(out["pair"][1][1:]), list(ref["pair"][1][1:]), 1.0)
    assert out["n"] == 3 and type(out["n"]) is int
    assert out["dtype"] == F32 and out["none"] is None


def _three_sizes(x):
    return {"y": x.sin() + x.size(0), "rows": x.shape[0]}


def test_recompile_cap_falls_back_to_eager():
    """dynamic=False and max_recompiles=1: the third size runs eagerly with a
    warning, still returning the FX output structure."""
    gm = _trace(_three_sizes)
    cg = ptc.from_fx(gm, [torch.randn(2, 3)], backend="ref", dynamic=False, max_recompiles=1)
    for n in (2, 3):
        x = torch.randn(n, 3)
        check(cg(x), gm(x), 1.0)
    x = torch.randn(4, 3)
    with pytest.warns(UserWarning, match="eagerly"):
        out = cg(x)
    check(out, gm(x), 1.0)
    assert cg.compiled.num_compiles == 2


class _Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)  # left in training mode

    def forward(self, x):
        a = torch.cumprod(x, 1)           # no mapping
        b = F.pad(x, (1, 1), mode="reflect")  # argument form refused
        c = self.bn(x)                    # module configuration refused
        d = torch.fft.fft(x).real if hasattr(torch, "fft") else x  # no mapping
        return a.sum() + b.sum() + c.sum() + d.sum() + x.relu().sum()


def test_unsupported_error_lists_every_node():
    gm = _trace(_Unsupported())
    with pytest.raises(ptc.UnsupportedError) as info:
        ptc.from_fx(gm, [torch.randn(3, 4)], backend="ref")
    e = info.value
    assert isinstance(e, NotImplementedError)
    lines = str(e).splitlines()
    names = [p[0] for p in e.problems]
    assert names == ["cumprod", "pad", "bn", "fft_fft"], str(e)
    assert len(lines) == 4
    assert lines[0].startswith("node cumprod: torch.cumprod: ")
    assert "reflect" in lines[1] and lines[1].startswith("node pad: ")
    assert lines[2].startswith("node bn: module torch.nn.BatchNorm1d (bn): ")
    assert "training" in lines[2]
    # users of failed nodes add no noise; the static check sees targets only
    static = [p[0] for p in ptc.fx.unsupported_nodes(gm)]
    assert static == ["cumprod", "bn", "fft_fft"]


@pytest.mark.skipif(not TORCH2, reason="SymInt placeholders exist on PyTorch 2 only")
def test_symint_placeholder_maps_to_tensor_dim():
    """A Dynamo-style SymInt placeholder is the ptc size of the tensor dim with
    the same symbol."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, n):
        return x.view(n, -1) * 2

    x = torch.randn(4, 6)
    gm = make_fx(f, tracing_mode="symbolic")(x, 4)
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if not any(isinstance(p.meta.get("val"), torch.SymInt) for p in phs):
        pytest.skip("this PyTorch traced n as a constant")
    cg = ptc.from_fx(gm, [x, 4], backend="ref")
    torch.testing.assert_close(cg(x, 4), f(x, 4))


@pytest.mark.parametrize("backend", BACKENDS)
def test_parameters_are_borrowed(backend):
    """Parameters become constants that borrow the module's memory: an
    in-place update after compiling is seen by the next call (no copy)."""
    m = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4)).eval()
    x = torch.randn(3, 8)
    cg = ptc.from_fx(_trace(m), [x], backend=backend)
    with torch.no_grad():
        torch.testing.assert_close(cg(x), m(x))
        m[0].weight.mul_(2)
        m[2].bias.add_(1)
        torch.testing.assert_close(cg(x), m(x))
    assert cg.compiled.num_compiles == 1


def _assigns(x):
    y = x * 2
    y[:, 1:3] = 0.5
    y[0] = x[-1].sin()
    y[1:, ::2] += 1
    return y


def _assigns_gm():
    """_assigns as an FX graph (torch 1.13's symbolic_trace cannot record
    item assignment; Dynamo records operator.setitem like this)."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(operator.mul, (x, 2))
    g.call_function(operator.setitem, (y, (slice(None), slice(1, 3)), 0.5))
    s = g.call_method("sin", (g.call_function(operator.getitem, (x, -1)),))
    g.call_function(operator.setitem, (y, 0, s))
    idx = (slice(1, None), slice(None, None, 2))
    t = g.call_function(operator.iadd, (g.call_function(operator.getitem, (y, idx)), 1))
    g.call_function(operator.setitem, (y, idx, t))
    g.output(y)
    return torch.fx.GraphModule(nn.Module(), g)


@pytest.mark.parametrize("backend", BACKENDS)
def test_item_assignment_dynamic(backend):
    """x[idx] = v and x[idx] += v on intermediates, with a dynamic first dim."""
    gm = _assigns_gm()
    for n in (3, 4):
        x = torch.randn(n, 5)
        torch.testing.assert_close(gm(x), _assigns(x))
    cg = ptc.from_fx(gm, [torch.randn(3, 5)], backend=backend, dynamic=True)
    for n in (3, 4, 7):
        x = torch.randn(n, 5)
        torch.testing.assert_close(cg(x), _assigns(x))
    assert cg.compiled.num_compiles == 1


def _writes_through_index(x, y):
    x[0].mul_(2)
    x[1:, ::2].add_(y[:, None])
    return x.sum(0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_inplace_through_index(backend):
    """In-place ops on x[idx] write into x (here a graph input, written back)."""
    gm = _trace(_writes_through_index)
    x, y = torch.randn(3, 4), torch.randn(2)
    x_ref = x.clone()
    cg = ptc.from_fx(gm, [x.clone(), y], backend=backend)
    out = cg(x, y)
    torch.testing.assert_close(out, _writes_through_index(x_ref, y))
    torch.testing.assert_close(x, x_ref)


# ---- ATen graphs (make_fx) -------------------------------------------------------------------

def _make_fx(fn, *xs):
    from torch.fx.experimental.proxy_tensor import make_fx
    with torch.no_grad():
        return make_fx(fn)(*xs)


_LIN = nn.Linear(3, 5).eval()
_LN = nn.LayerNorm(5).eval()
_CONV = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                      nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1)).eval()
_EMB = nn.Embedding(10, 4)
_ATEN_FNS = {
    "linear_ln_gelu_slice": (lambda x: F.gelu(_LN(_LIN(x)))[:, 1:], lambda: [torch.randn(4, 3)]),
    "view_softmax_sum": (lambda x: x.view(2, -1).softmax(-1) * 2 + x.sum(),
                         lambda: [torch.randn(4, 3)]),
    "conv_bn_relu_pool": (lambda x: _CONV(x).flatten(1), lambda: [torch.randn(2, 3, 8, 8)]),
    "embedding_log_softmax": (lambda i: _EMB(i).mean(1).log_softmax(-1),
                              lambda: [torch.randint(0, 10, (2, 5))]),
    "split_cat_expand_amax": (
        lambda x: torch.cat(x.split(2, 1), 0).transpose(0, 1).unsqueeze(0).expand(2, -1, -1)
        .amax(), lambda: [torch.randn(4, 4)]),
    "where_var_mean": (lambda x, m: torch.var_mean(torch.where(m, x, torch.zeros(())), 1),
                       lambda: [torch.randn(4, 4), torch.rand(4, 4) > 0.5]),
    "diff_index": (lambda x, i: torch.diff(x, dim=0)[:, i] / x.shape[0],
                   lambda: [torch.randn(5, 4), torch.tensor([0, 2, 3])]),
}


@pytest.mark.parametrize("name", sorted(_ATEN_FNS))
def test_make_fx_aten_graphs(name):
    """Functions traced by make_fx (ATen overloads in the graph) match eager."""
    fn, make = _ATEN_FNS[name]
    xs = make()
    gm = _make_fx(fn, *xs)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert any(M.fmt_target(t).startswith("aten.") for t in targets), targets
    cg = ptc.from_fx(gm, xs, backend="ref")
    with torch.no_grad():
        torch.testing.assert_close(cg(*xs), fn(*xs), rtol=1e-4, atol=1e-5)


def test_make_fx_aten_cpu():
    fn, make = _ATEN_FNS["linear_ln_gelu_slice"]
    xs = make()
    cg = ptc.from_fx(_make_fx(fn, *xs), xs, backend="cpu")
    with torch.no_grad():
        torch.testing.assert_close(cg(*xs), fn(*xs), rtol=1e-4, atol=1e-5)


def test_aten_lookup_rule():
    """An ATen overload without an entry uses the same-named torch converter;
    private ATen ops and ops without a torch namesake have none; entries for
    an overload win over the rule."""
    aten = torch.ops.aten
    assert M.lookup(aten.add.Tensor) is M.TABLE[torch.add]
    assert M.lookup(aten.view.default) is M.TABLE[aten.view.default]
    assert M.lookup(aten.t.default) is M.TABLE[torch.t]
    assert M.lookup(aten.gelu.default) is M.TABLE[F.gelu]
    assert M.lookup(aten._fft_r2c.default) is None
    assert M.lookup(aten.cumprod.default) is None
    assert M.fmt_target(aten.add.Tensor) == "aten.add.Tensor"
    static = ptc.fx.unsupported_nodes(_make_fx(lambda x: x.cumprod(0) + 1, torch.randn(3)))
    assert [(p[1], p[2]) for p in static] == [("aten.cumprod.default",
                                               "no ptc mapping for this target")]


def test_aten_unavailable_output_is_reported():
    """native_batch_norm's save_mean is not computed: unused it is fine, used it
    makes the node that reads it unsupported (with the reason)."""
    g = torch.fx.Graph()
    x, w, bb, rm, rv = [g.placeholder(n) for n in ("x", "w", "b", "rm", "rv")]
    bn = g.call_function(torch.ops.aten.native_batch_norm.default,
                         (x, w, bb, rm, rv, False, 0.1, 1e-5))
    out = g.call_function(operator.getitem, (bn, 0))
    mean = g.call_function(operator.getitem, (bn, 1))
    use = g.call_function(torch.ops.aten.add.Tensor, (mean, 1))
    g.output((out, use))
    gm = torch.fx.GraphModule(nn.Module(), g)
    ins = [torch.randn(2, 3, 4), torch.randn(3), torch.randn(3), torch.randn(3), torch.rand(3)]
    with pytest.raises(ptc.UnsupportedError) as info:
        ptc.from_fx(gm, ins, backend="ref")
    assert [p[0] for p in info.value.problems] == [use.name], str(info.value)
    assert "save_mean" in str(info.value)
