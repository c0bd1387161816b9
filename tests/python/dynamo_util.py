"""dynamo_util.py - shared helpers of the ptc.compile (bytecode capture) tests
(tests/python/test_dynamo_*.py owned by the tests helper).

- `fresh_dynamo` (autouse when imported into a test module): ptc.reset()
  before and after each test, so caches and counters start empty; fails the
  test when the capture warned about an internal error.
- `clone(x)`: a deep copy of an argument structure (tensors cloned with
  their requires_grad flag, containers rebuilt, nn.Modules shared, other
  objects deep-copied) so that eager and compiled runs see equal inputs and
  their side effects on inputs can be compared.
- `assert_same(out, ref)`: recursive comparison of results (tensors with
  torch.testing.assert_close plus dtype/shape/requires_grad, containers by
  type and length, other values with ==).
- `stats()` / `Delta`: the capture counters of ptc.compile_stats() under
  stable names (frames, graphs, breaks, hits, recompiles), and their change
  over a block.
- `check(fn, *args, ...)`: runs fn eagerly and compiled (several calls, on
  fresh copies of the arguments), compares outputs and the arguments after
  the call (side effects on inputs), optionally the number of graphs and
  graph breaks of the first compiled call. Returns the compiled function.
"""

import copy
import dataclasses
import warnings

import pytest
import torch
import torch.nn as nn

import ptc

# stable name -> ptc.compile_stats() key (ptc/dynamo.py).
_STAT_NAMES = {
    "frames": "frames_converted",
    "graphs": "graphs",
    "breaks": "breaks",
    "hits": "cache_hits",
    "recompiles": "recompiles",
}

HAS_CUDA = torch.cuda.is_available()
TORCH2 = int(torch.__version__.split(".")[0]) >= 2


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Empty capture caches and counters around every test; the test fails
    when the capture reported an internal error (a RuntimeWarning "ptc.compile:
    internal error ...": it ran plain Python, but that is a bug)."""
    ptc.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    ptc.reset()
    internal = [str(w.message) for w in caught if "internal error" in str(w.message)]
    for w in caught:
        if "internal error" not in str(w.message):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if internal:
        pytest.fail("ptc.compile reported internal errors:\n" + "\n".join(internal), pytrace=False)


def stats():
    """The capture counters under stable names (see _STAT_NAMES)."""
    raw = dict(ptc.compile_stats())
    return {key: int(raw[name]) for key, name in _STAT_NAMES.items()}


class Delta:
    """with Delta() as d: ...  then d.graphs, d.breaks, d.frames, d.hits, d.recompiles."""

    def __enter__(self):
        self._before = stats()
        return self

    def __exit__(self, *exc):
        after = stats()
        for k, v in after.items():
            setattr(self, k, v - self._before[k])
        return False

    def __repr__(self):
        return "Delta(" + ", ".join("%s=%s" % (k, getattr(self, k, "?")) for k in _STAT_NAMES) + ")"


def clone(x):
    """Deep copy of an argument structure (see the module docstring)."""
    if isinstance(x, torch.Tensor):
        c = x.detach().clone()
        if x.requires_grad:
            c.requires_grad_(True)
        return c
    if isinstance(x, nn.Module):
        return x
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[clone(v) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(clone(v) for v in x)
    if isinstance(x, dict):
        return type(x)((k, clone(v)) for k, v in x.items())
    if isinstance(x, (int, float, bool, str, type(None), complex, bytes, range, slice,
                      torch.dtype, torch.device)):
        return x
    if dataclasses.is_dataclass(x):
        return dataclasses.replace(x, **{f.name: clone(getattr(x, f.name))
                                         for f in dataclasses.fields(x)})
    return copy.deepcopy(x)


def assert_same(out, ref, rtol=1e-5, atol=1e-6, grad=True, path="out"):
    """Recursive equality of a compiled result and the eager one."""
    if isinstance(ref, torch.Tensor):
        assert isinstance(out, torch.Tensor), "%s: %r is not a tensor" % (path, type(out))
        assert out.dtype == ref.dtype, "%s: dtype %s, eager %s" % (path, out.dtype, ref.dtype)
        assert out.shape == ref.shape, "%s: shape %s, eager %s" % (path, tuple(out.shape), tuple(ref.shape))
        assert out.device == ref.device, "%s: device %s, eager %s" % (path, out.device, ref.device)
        if grad:
            assert out.requires_grad == ref.requires_grad, \
                "%s: requires_grad %s, eager %s" % (path, out.requires_grad, ref.requires_grad)
        torch.testing.assert_close(out.detach(), ref.detach(), rtol=rtol, atol=atol, equal_nan=True,
                                   msg=lambda m: "%s: %s" % (path, m))
        return
    if isinstance(ref, nn.Module):
        assert out is ref, "%s: a different module" % path
        return
    assert type(out) is type(ref), "%s: type %s, eager %s" % (path, type(out).__name__, type(ref).__name__)
    if isinstance(ref, (list, tuple)):
        assert len(out) == len(ref), "%s: length %d, eager %d" % (path, len(out), len(ref))
        for i, (a, b) in enumerate(zip(out, ref)):
            assert_same(a, b, rtol, atol, grad, "%s[%d]" % (path, i))
        return
    if isinstance(ref, dict):
        assert list(out.keys()) == list(ref.keys()), "%s: keys %s, eager %s" % (path, list(out), list(ref))
        for k in ref:
            assert_same(out[k], ref[k], rtol, atol, grad, "%s[%r]" % (path, k))
        return
    if dataclasses.is_dataclass(ref) or (hasattr(ref, "__dict__") and not isinstance(ref, type)
                                         and type(ref).__module__ not in ("builtins",)):
        assert_same(dict(vars(out)), dict(vars(ref)), rtol, atol, grad, path + ".__dict__")
        return
    if isinstance(ref, float) and ref != ref:
        assert out != out, "%s: %r, eager nan" % (path, out)
        return
    assert out == ref, "%s: %r, eager %r" % (path, out, ref)


def check(fn, *args, backend="cpu", calls=2, rtol=1e-5, atol=1e-6, graphs=None, breaks=None,
          grad=True, compiled=None, **compile_kw):
    """Eager vs compiled (see the module docstring). `graphs`/`breaks`: expected
    counter changes of the FIRST compiled call (None: not checked); later calls
    must compile nothing new. Returns the compiled function."""
    ref_args = clone(list(args))
    ref = fn(*ref_args)
    cf = compiled if compiled is not None else ptc.compile(fn, backend=backend, **compile_kw)
    for i in range(calls):
        a = clone(list(args))
        with Delta() as d:
            out = cf(*a)
        assert_same(out, ref, rtol, atol, grad, "call %d: result" % i)
        assert_same(a, ref_args, rtol, atol, grad, "call %d: arguments after the call" % i)
        if i == 0:
            if graphs is not None:
                assert d.graphs == graphs, "first call: %d graphs compiled, expected %d (%r)" % (d.graphs, graphs, d)
            if breaks is not None:
                assert d.breaks == breaks, "first call: %d graph breaks, expected %d (%r)" % (d.breaks, breaks, d)
        else:
            assert d.graphs == 0 and d.recompiles == 0, "call %d recompiled: %r" % (i, d)
    return cf
