"""_map_core.py - the registry of the torch -> ptc op mapping and the builder
context its converters work with.

TABLE is THE single mapping table (re-exported by ptc._mapping): keys are
torch callables (torch.add, torch.Tensor.add, operator.add, F.relu, ...),
method-name strings (call_method targets such as "view") and nn.Module
classes; values are converter functions

    conv(b, *args, **kwargs) -> Value | tuple | int | SymInt | other Python value

where `b` is a Builder, tensor arguments are ptc Values, and everything else
(Python scalars, SymInts, dtypes, lists, slices, ...) is passed as is. Module
converters receive the module instance first: conv(b, module, *args,
**kwargs). Converters raise Unsupported(reason) for argument forms they do
not handle. Nothing here knows about FX: the bytecode capture reuses it.

Optional converter attributes (set by `register`):
  conv.mutates(args, kwargs) -> int | None   index of the positional argument
      an in-place op writes (its result replaces that tensor for later uses)
  conv.check_module(module) -> str | None    why a module cannot be mapped
  conv.returns_none = True                   the call's own result is None (the
      converter returns the mutated argument's new value: x[i] = v)
"""
import torch

from . import _C

TABLE = {}
DUPLICATES = []  # (key, kept converter, ignored converter) registered twice


class Unavailable:
    """A converter result (or tuple item) that ptc does not compute, e.g. the
    save_mean output of aten.native_batch_norm in inference: fine while
    nothing uses it; a node using it (or an output returning it) is
    unsupported, with `why` as the reason."""
    __slots__ = ("why",)

    def __init__(self, why):
        self.why = why

    def __repr__(self):
        return "Unavailable(%r)" % self.why


# set by _map_aten: converter for an ATen OpOverload/OpOverloadPacket that
# has no explicit entry (same-named torch function's converter), or None
ATEN_FALLBACK = None
ATEN_FORMAT = None


class Unsupported(Exception):
    """Raised by a converter for an argument form (or module configuration)
    it cannot map to ptc; the message says why."""


def register(*keys, mutates=None, check_module=None, returns_none=False):
    """Decorator: registers the converter under every key. `mutates` is an
    int (index of the argument written in place) or a function
    (args, kwargs) -> int | None; returns_none: the torch call returns None
    (e.g. x[i] = v), the converter's result is only the written tensor's new
    value."""
    def deco(fn):
        conv = fn
        if mutates is not None or check_module is not None or returns_none:
            # a fresh function object: the attributes belong to these keys
            # only, not to other registrations of the same converter
            def conv(*args, **kwargs):
                return fn(*args, **kwargs)
            conv.__name__ = fn.__name__
            conv.__qualname__ = fn.__qualname__
            conv.__doc__ = fn.__doc__
            conv.__wrapped__ = fn
            if mutates is not None:
                conv.mutates = mutates if callable(mutates) else (lambda a, k, i=mutates: i)
            if check_module is not None:
                conv.check_module = check_module
            conv.returns_none = returns_none
        for k in keys:
            if k is None:
                continue
            if k in TABLE and TABLE[k] is not conv:
                # two torch names for one object in this torch version (an
                # alias): the first registration wins; a test checks none here
                DUPLICATES.append((k, TABLE[k].__name__, conv.__name__))
                continue
            TABLE[k] = conv
        return fn
    return deco


def if_new(*keys):
    """The keys not registered yet (for torch.Tensor dunders that alias a
    method, e.g. Tensor.__neg__ is Tensor.neg in some versions)."""
    return [k for k in keys if k is not None and k not in TABLE]


def optional(obj, *path):
    """obj.path... or None when an attribute is missing (torch-version guard)."""
    for p in path:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


def tensor_method_keys(*names):
    """For each method name: the string key (call_method) and the
    torch.Tensor function (when this torch has it)."""
    keys = []
    for n in names:
        keys.append(n)
        keys.append(getattr(torch.Tensor, n, None))
    return keys


def is_value(x):
    return isinstance(x, _C.Value)


def is_sym(x):
    return isinstance(x, _C.SymInt)


def is_int(x):
    """int or SymInt (not bool)."""
    return (isinstance(x, int) and not isinstance(x, bool)) or isinstance(x, _C.SymInt)


def is_scalar(x):
    return isinstance(x, (bool, int, float)) or isinstance(x, _C.SymInt)


def concrete(x):
    """A Python number from a scalar: SymInts are specialised (int() records
    the guard `expr == hint`)."""
    if isinstance(x, _C.SymInt):
        return int(x)
    return x


def _namespaces():
    import builtins
    import operator
    import torch.nn.functional as F
    return [("operator", operator), ("builtins", builtins), ("torch", torch),
            ("torch.nn.functional", F), ("torch.Tensor", torch.Tensor),
            ("torch.special", getattr(torch, "special", None)),
            ("torch.linalg", getattr(torch, "linalg", None))]


def fmt_target(t):
    """Human-readable name of a mapping key / FX target: "torch.add",
    "torch.Tensor.view", "method .view", "module torch.nn.Linear", ..."""
    if isinstance(t, str):
        return "method ." + t
    if ATEN_FORMAT is not None and not isinstance(t, (str, type)):
        f = ATEN_FORMAT(t)
        if f is not None:
            return f
    if isinstance(t, type):
        mod = t.__module__
        if mod.startswith("torch.nn.modules"):
            mod = "torch.nn"
        return "module %s.%s" % (mod, t.__qualname__)
    name = getattr(t, "__name__", None)
    if name:
        for ns_name, ns in _namespaces():
            if ns is not None and getattr(ns, name, None) is t:
                return "%s.%s" % (ns_name, name)
    mod = getattr(t, "__module__", None)
    qual = getattr(t, "__qualname__", None) or name or repr(t)
    return "%s.%s" % (mod, qual) if mod else qual


def lookup(target, module=None):
    """Converter for a key, or None. For module classes, a subclass that does
    not override forward uses its base class's converter. ATen overloads
    (torch.ops.aten.*) without an entry use the converter of the same-named
    torch function (_map_aten.aten_fallback)."""
    try:
        conv = TABLE.get(target)
    except TypeError:  # unhashable target
        return None
    if conv is None and ATEN_FALLBACK is not None and not isinstance(target, (str, type)):
        conv = ATEN_FALLBACK(target)
    if conv is not None or not isinstance(target, type):
        return conv
    for base in target.__mro__[1:]:
        c = TABLE.get(base)
        if c is not None:
            if getattr(target, "forward", None) is getattr(base, "forward", None):
                return c
            return None
    return None


_DTYPE_CATEGORY = {}


def dtype_category(dt):
    """0 bool, 1 integer, 2 floating (ATen's promotion categories)."""
    if dt == torch.bool:
        return 0
    return 2 if dt.is_floating_point else 1


def scalar_category(v):
    if isinstance(v, bool):
        return 0
    if isinstance(v, float):
        return 2
    return 1


class MinMaxResult(tuple):
    """(values, indices) as torch.return_types.* (tuple with named fields)."""
    __slots__ = ()

    def __new__(cls, values, indices):
        return tuple.__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]


class Builder:
    """What converters build with: the ptc Graph, constants (borrowed, one
    Value per tensor object), Python scalars turned into graph values with
    torch's promotion rules, and size arithmetic.

    `scope` is a name prefix for module parameters (the module's path);
    `device` is what x.device reports while tracing."""

    def __init__(self, graph, device=None):
        self.graph = graph
        self.device = torch.device("cpu") if device is None else device
        self.scope = ""
        self._consts = {}
        self._names = set()
        self.strided_inputs = set()  # ids of inputs added with explicit strides

    # ---- nodes -----------------------------------------------------------------
    def ops(self, op, inputs, attrs=None):
        """add_node; returns the tuple of outputs. Attribute values of None
        are left out."""
        if attrs:
            attrs = {k: v for k, v in attrs.items() if v is not None}
        return self.graph.add_node(op, list(inputs), attrs or None)

    def op(self, op, inputs, attrs=None):
        """add_node for a single-output op."""
        out = self.ops(op, inputs, attrs)
        return out[0]

    # ---- constants ---------------------------------------------------------------
    def unique_name(self, base):
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "c"
        if base[0].isdigit():
            base = "c_" + base
        name, i = base, 1
        while name in self._names:
            name = "%s_%d" % (base, i)
            i += 1
        self._names.add(name)
        return name

    def constant(self, tensor, name=None):
        """A graph constant for a torch tensor (one Value per tensor object;
        contiguous cpu tensors are borrowed without a copy)."""
        key = id(tensor)
        hit = self._consts.get(key)
        if hit is not None and hit[0] is tensor:
            return hit[1]
        t = tensor.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        v = self.graph.add_constant(self.unique_name(name or "const"), t)
        self._consts[key] = (tensor, v)
        return v

    def param(self, module, attr):
        """Module parameter/buffer `attr` as a constant (None stays None)."""
        t = getattr(module, attr, None)
        if t is None:
            return None
        name = (self.scope + "." + attr) if self.scope else attr
        return self.constant(t, name)

    def as_value(self, x, like=None):
        """A Value for x: Values pass through; torch tensors become constants;
        Python scalars become 0-d values of torch's result dtype next to
        `like` (a Value or dtype), else of torch.tensor(x)'s dtype."""
        if is_value(x):
            return x
        if isinstance(x, torch.Tensor):
            return self.constant(x)
        if is_scalar(x):
            return self.scalar(x, self.promote_scalar(like, x) if like is not None
                               else self.default_dtype(x))
        raise Unsupported("expected a tensor, got %s" % type(x).__name__)

    # ---- scalars and dtypes ---------------------------------------------------------
    @staticmethod
    def default_dtype(v):
        if isinstance(v, bool):
            return torch.bool
        if isinstance(v, float):
            return torch.get_default_dtype()
        return torch.int64

    @staticmethod
    def promote_scalar(like, v):
        """torch.result_type(tensor_of_dtype(like), v)."""
        dt = like.dtype if is_value(like) else like
        v = concrete(v)
        return torch.result_type(torch.empty((), dtype=dt)[None], v)

    def scalar(self, v, dtype):
        """0-d value holding v (a creation node, no constant memory)."""
        v = concrete(v)
        if isinstance(v, bool) and dtype != torch.bool:
            v = int(v)
        return self.op("full", [], {"size": [], "fill_value": v, "dtype": dtype})

    def size_value(self, s):
        """0-d i64 value equal to size s (int or SymInt) at run time."""
        if is_sym(s):
            ones = self.op("ones", [], {"size": [s], "dtype": torch.int64})
            return self.op("sum", [ones], {"dtype": torch.int64})
        return self.scalar(int(s), torch.int64)

    def to_dtype(self, x, dtype):
        if x.dtype == dtype:
            return x
        return self.op("to_dtype", [x], {"dtype": dtype})

    # ---- sizes ---------------------------------------------------------------------
    def sym(self, op, a, c):
        return self.graph.sym(op, a, c)

    @staticmethod
    def numel(shape):
        n = 1
        for s in shape:
            n = n * s
        return n
