"""fx.py - the FX bridge: `ptc.from_fx(gm, example_inputs, ...)` turns a
torch.fx.GraphModule into libptc graphs through the op mapping table
(ptc._mapping) and returns a CompiledGraph, a callable with the graph
module's signature.

How it works:
- A first walk over the FX graph with the example inputs (the "trial
  build") converts every node; each node that cannot be converted (no table
  entry for its target, an argument form the converter refuses, a ptc error)
  is recorded as "node <name>: <target>: <why>" and its users are skipped, so
  ptc.UnsupportedError lists EVERY problem at once.
- The returned CompiledGraph wraps a _C.CompiledFunction whose build callback
  re-walks the FX graph for the inputs and dynamic dims it is given (dynamic
  dims become graph symbols, so automatic dynamic and mark_dynamic work; the
  first call reuses the trial build's graph).
- The CompiledFunction is strict (strict=True): a call whose tensors differ
  from the compiled ones in dtype, rank or device raises libptc's error
  (e.g. "input 0 (x): expected dtype f32, got f64"); size and stride
  changes recompile (automatic dynamic).
- Placeholders: tensors become graph inputs (contiguous ones declared
  contiguous, others with their strides, inputs with dynamic dims declared
  contiguous); non-tensor placeholders (ints, floats, bools, None, ...) are
  specialised: the graph bakes in their value and a call with other values
  compiles another CompiledFunction (up to MAX_SPECIALISATIONS, then eager);
  torch 2 SymInt placeholders (node.meta["example_value"] is a torch.SymInt)
  map to the ptc size of the tensor dimension with the same symbolic
  expression (unsupported when there is none).
- get_attr tensors (parameters, buffers) become graph constants borrowed
  without a copy (one Value per tensor object); call_module converters get
  the module and name their constants after its path.
- In-place ops (x.add_(y), F.relu(x, inplace=True), nn.ReLU(inplace=True))
  rebind the mutated node to the result for later uses; a mutated tensor
  placeholder is written back into the caller's tensor after each call
  (copy_), as eager does; in-place writes to module state (get_attr) or
  through a view/alias of another tensor are unsupported.
- Outputs keep the FX output structure (tuple / list / dict / single /
  nested, named (values, indices) pairs). Output leaves that are graph
  inputs (placeholders) or module attributes (get_attr) pass through
  unchanged, the same objects eager returns; every other tensor leaf is a
  fresh tensor computed by ptc, even where eager would return an alias (a
  view of an input, x.contiguous(), x.to(x.dtype): ptc returns a copy).
  Size leaves (ints / SymInts) are computed at run time as 0-d i64 outputs
  and returned as Python ints; other Python values (dtypes, None, ...) are
  returned as recorded at compile time.

Thread-safety: a CompiledGraph may be called from several threads once
compiled (the CompiledFunction is); compiling is serialised by a lock.
"""
import builtins
import operator
import threading
import warnings

import torch
import torch.fx

from . import _C
from ._mapping import MinMaxResult, Unavailable, Unsupported, fmt_target, is_value, lookup
from ._mapping import Builder
from ._map_shape import setitem

__all__ = ["from_fx", "CompiledGraph", "UnsupportedError", "unsupported_nodes"]

MAX_SPECIALISATIONS = 8
_VERSION = operator.attrgetter("_version")

# targets whose result may alias their input (in-place writes through them
# would also modify the input: refused)
_ALIAS_NAMES = {
    "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "transpose",
    "transpose_", "permute", "t", "narrow", "select", "expand", "expand_as", "squeeze",
    "unsqueeze", "split", "split_with_sizes", "chunk", "unbind", "contiguous", "detach", "to",
    "type", "type_as", "float", "double", "half", "bfloat16", "long", "int", "short", "char",
    "byte", "bool", "movedim", "moveaxis", "swapaxes", "swapdims", "as_strided", "broadcast_to",
    "dropout", "adjoint", "getitem", "getattr", "__getitem__", "view_as_real", "diagonal",
    "squeeze_", "unsqueeze_", "identity", "slice", "_unsafe_view", "alias", "split_with_sizes",
}


class UnsupportedError(NotImplementedError):
    """from_fx could not map some nodes. str(e) lists each as
    "node <name>: <target>: <why>", one per line; e.problems holds the
    (node name, target description, reason) triples."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("\n".join("node %s: %s: %s" % p for p in self.problems))


_POISON = object()


class _Failed(Exception):
    """A node failed during a non-collecting build."""


def _node_target(gm, node):
    """(converter key, module or None) of a call node."""
    if node.op == "call_module":
        mod = gm.get_submodule(node.target)
        return type(mod), mod
    return node.target, None


def _describe(gm, node):
    if node.op == "call_module":
        try:
            mod = gm.get_submodule(node.target)
            return "%s (%s)" % (fmt_target(type(mod)), node.target)
        except AttributeError:
            return "module %s" % node.target
    if node.op == "get_attr":
        return "attribute %s" % node.target
    return fmt_target(node.target)


def _map(a, fn):
    """Maps fn over the Nodes inside nested tuples/lists/dicts/slices."""
    if isinstance(a, torch.fx.Node):
        return fn(a)
    if isinstance(a, tuple):
        r = tuple(_map(x, fn) for x in a)
        return type(a)(*r) if hasattr(a, "_fields") else r
    if isinstance(a, list):
        return [_map(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: _map(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(_map(a.start, fn), _map(a.stop, fn), _map(a.step, fn))
    return a


def _has_poison(a):
    found = []
    _map_values(a, lambda v: found.append(v is _POISON))
    return any(found)


def _unavailable(a):
    """The first ptc.Unavailable inside nested args, or None."""
    found = []
    _map_values(a, lambda v: found.append(v) if isinstance(v, Unavailable) else None)
    return found[0] if found else None


def _is_getitem(node):
    return node.op == "call_function" and node.target is operator.getitem


def _map_values(a, fn):
    if isinstance(a, (tuple, list)):
        for x in a:
            _map_values(x, fn)
    elif isinstance(a, dict):
        for x in a.values():
            _map_values(x, fn)
    elif isinstance(a, slice):
        for x in (a.start, a.stop, a.step):
            _map_values(x, fn)
    else:
        fn(a)


def _fetch_attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _may_fold(graph, root=None):
    """Whether ptc's compile-time passes may fold constants of this FX graph
    into new values (conv + batch_norm, lib/runtime/pass_conv_bn.c): the
    graph calls a batch norm (or a module that cannot be looked up)."""
    root = graph.owning_module if root is None else root
    for node in graph.nodes:
        if node.op == "call_module":
            try:
                mod = _fetch_attr(root, node.target)
            except AttributeError:
                return True
            if "BatchNorm" in type(mod).__name__:
                return True
        elif node.op in ("call_function", "call_method") and "batch_norm" in fmt_target(node.target):
            return True
    return False


def snapshot_constants(backend, consts, graph, root=None):
    """The graph constants (torch tensors) whose values a graph compiled for
    `backend` holds as a copy taken at compile time, so an in-place update
    of one (a bumped tensor._version) must recompile: every constant of a
    device backend (uploaded at compile time); on "cpu", every constant
    when the graph may fold constants (_may_fold), else those not borrowed
    (CPU tensors that are not contiguous are copied). "ref" and cpu
    constants otherwise are read live on every call."""
    consts = list(consts)
    if backend not in ("cpu", "ref"):
        return consts
    if backend == "cpu" and graph is not None and _may_fold(graph, root):
        return consts
    return [t for t in consts if t.device.type != "cpu" or not t.is_contiguous()]


def same_versions(tensors, versions):
    """Every tensor still has the _version it had when it was recorded
    (versions: a tuple)."""
    return tuple(map(_VERSION, tensors)) == versions


def unsupported_nodes(gm):
    """Static check (no example inputs): (node name, target, reason) for
    every call node whose target has no mapping or whose module
    configuration is refused. from_fx reports these plus argument-form
    problems found while converting."""
    out = []
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        try:
            key, mod = _node_target(gm, node)
        except AttributeError as e:
            out.append((node.name, "module %s" % node.target, str(e)))
            continue
        conv = lookup(key)
        if conv is None:
            out.append((node.name, _describe(gm, node), "no ptc mapping for this target"))
            continue
        check = getattr(conv, "check_module", None)
        if mod is not None and check is not None:
            why = check(mod)
            if why:
                out.append((node.name, _describe(gm, node), why))
    return out


def _sym_expr(v):
    node = getattr(v, "node", None)
    return getattr(node, "expr", None) if node is not None else None


def _example_meta(node):
    return node.meta.get("example_value", node.meta.get("val"))


def _is_symint(v):
    st = getattr(torch, "SymInt", None)
    return st is not None and isinstance(v, st)


class _Template:
    """The output structure: a tree of ("slot", k) / ("int", k) / ("arg", i)
    / ("attr", name) / ("py", value) / ("seq", kind, children) /
    ("dict", keys, children) leaves, plus write-back slots
    [(placeholder index, k)]."""

    def __init__(self, tree, n_slots, writebacks):
        self.tree, self.n_slots, self.writebacks = tree, n_slots, writebacks

    def key(self):
        return (_freeze(self.tree), self.n_slots, tuple(self.writebacks))


def _freeze(t):
    if isinstance(t, (list, tuple)):
        return tuple(_freeze(x) for x in t)
    if isinstance(t, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in t.items()))
    try:
        hash(t)
        return (type(t).__name__, t)
    except TypeError:
        return repr(t)


class _Converter:
    """Walks one FX graph into ptc graphs (one per build)."""

    def __init__(self, gm):
        self.gm = gm
        self.nodes = list(gm.graph.nodes)
        self.placeholders = [n for n in self.nodes if n.op == "placeholder"]
        self.output = next(n for n in self.nodes if n.op == "output")
        self.lock = threading.Lock()
        self.last_graph = None

    # ---- placeholders ----------------------------------------------------------------------
    def classify(self, example_inputs):
        """Per placeholder: "tensor", "symint" or "const"; example values;
        SymInt sources {placeholder index: (tensor placeholder index, dim)}."""
        ex = list(example_inputs)
        kinds, values, sources, problems = [], [], {}, []
        dim_of_expr = {}
        for i, ph in enumerate(self.placeholders):
            v = ex[i] if i < len(ex) else (ph.args[0] if ph.args else None)
            values.append(v)
            if isinstance(v, torch.Tensor):
                kinds.append("tensor")
                fake = _example_meta(ph)
                for d, s in enumerate(getattr(fake, "shape", ()) or ()):
                    e = _sym_expr(s)
                    if e is not None:
                        dim_of_expr.setdefault(e, (i, d))
            elif _is_symint(v) or _is_symint(_example_meta(ph)):
                kinds.append("symint")
            else:
                kinds.append("const")
        for i, ph in enumerate(self.placeholders):
            if kinds[i] != "symint":
                continue
            sym = values[i] if _is_symint(values[i]) else _example_meta(ph)
            src = dim_of_expr.get(_sym_expr(sym))
            if src is None:
                problems.append((ph.name, "placeholder (SymInt %s)" % sym,
                                 "size input that is not a dimension of a tensor input"))
            else:
                sources[i] = src
        return kinds, values, sources, problems

    # ---- one build ---------------------------------------------------------------------------
    def build(self, kinds, consts, sources, tensors, dynamic_dims, collect):
        """Returns (graph, template, problems). tensors: the tensor inputs in
        placeholder order; consts: {placeholder index: value}."""
        g = _C.Graph()
        device = tensors[0].device if tensors else torch.device("cpu")
        b = Builder(g, device)
        env, problems, mutated = {}, [], {}
        ti = 0
        tensor_ph = {}
        for i, ph in enumerate(self.placeholders):
            if kinds[i] == "tensor":
                t = tensors[ti]
                shape = []
                dyn = False
                for d, s in enumerate(t.shape):
                    if (ti, d) in dynamic_dims and s >= 2:
                        shape.append(g.add_symbol("s_%s_%d" % (ph.name, d), int(s)))
                        dyn = True
                    else:
                        shape.append(int(s))
                strides = None if dyn or t.is_contiguous() else list(t.stride())
                env[ph] = g.add_input(ph.name, t.dtype, shape, strides)
                if strides is not None:
                    b.strided_inputs.add(env[ph].id)
                b._names.add(ph.name)
                tensor_ph[i] = ti
                ti += 1
            elif kinds[i] == "const":
                env[ph] = consts[i]
        for i, ph in enumerate(self.placeholders):
            if kinds[i] == "symint":
                if i not in sources:
                    env[ph] = _POISON
                    continue
                src_i, d = sources[i]
                env[ph] = env[self.placeholders[src_i]].shape[d]

        def fail(node, why):
            if not collect:
                raise UnsupportedError([(node.name, _describe(self.gm, node), why)])
            problems.append((node.name, _describe(self.gm, node), why))
            env[node] = _POISON

        for node in self.nodes:
            if node.op in ("placeholder", "output"):
                continue
            if node.op == "get_attr":
                try:
                    obj = _fetch_attr(self.gm, node.target)
                except AttributeError as e:
                    fail(node, str(e))
                    continue
                if isinstance(obj, torch.Tensor):
                    try:
                        env[node] = b.constant(obj, node.target)
                    except Exception as e:  # e.g. a dtype ptc lacks
                        fail(node, "%s: %s" % (type(e).__name__, e))
                else:
                    env[node] = obj
                continue
            args = _map(node.args, lambda n: env[n])
            kwargs = _map(dict(node.kwargs), lambda n: env[n])
            if _has_poison(args) or _has_poison(kwargs):
                env[node] = _POISON
                continue
            missing = _unavailable(args) or _unavailable(kwargs)
            if missing is not None and not _is_getitem(node):
                fail(node, missing.why)
                continue
            try:
                key, mod = _node_target(self.gm, node)
            except AttributeError as e:
                fail(node, str(e))
                continue
            conv = lookup(key)
            if conv is None:
                fail(node, "no ptc mapping for this target")
                continue
            check = getattr(conv, "check_module", None)
            if mod is not None and check is not None:
                why = check(mod)
                if why:
                    fail(node, why)
                    continue
            call_args = (mod,) + tuple(args) if mod is not None else tuple(args)
            b.scope = node.target if mod is not None else ""
            try:
                res = conv(b, *call_args, **kwargs)
            except (Unsupported, TypeError, ValueError, IndexError, _C.Error,
                    NotImplementedError, RuntimeError, AttributeError, KeyError) as e:
                why = str(e) if isinstance(e, Unsupported) else "%s: %s" % (type(e).__name__, e)
                fail(node, why)
                continue
            finally:
                b.scope = ""
            env[node] = res
            mut = getattr(conv, "mutates", None)
            idx = mut(call_args, kwargs) if mut is not None else None
            if idx is not None:
                fx_args = ((None,) + tuple(node.args)) if mod is not None else tuple(node.args)
                target = fx_args[idx] if idx < len(fx_args) else None
                why = self._mutation(target, res, env, mutated, b)
                if why:
                    fail(node, why)
            if getattr(conv, "returns_none", False) and env.get(node) is not _POISON:
                env[node] = None
        template = None
        if not problems:
            template = self._outputs(b, env, mutated)
        self.last_graph = g
        self.last_constants = [t for t, _ in b._consts.values()]
        return g, template, problems

    def _mutation(self, target, res, env, mutated, b):
        """Records an in-place write of `res` to FX node `target` (None = not
        a node); a write into an indexed view (getitem) also updates its base
        (as x[idx] = res). Returns why it is unsupported, or None."""
        if not isinstance(target, torch.fx.Node) or not is_value(res):
            return None
        if target.op == "get_attr":
            return "in-place update of module state %s (ptc graphs do not mutate " \
                   "parameters or buffers)" % target.target
        if target.op == "placeholder":
            cur = env.get(target)
            if is_value(cur) and (tuple(cur.shape) != tuple(res.shape) or
                                  cur.dtype != res.dtype):
                return "in-place op changes the shape or dtype of graph input %s (only " \
                       "values can be written back)" % target.name
            mutated[self.placeholders.index(target)] = res
        elif target.op == "call_module":
            pass
        else:
            t = target.target
            base = target.args[0] if target.args else None
            if t in (operator.getitem, torch.Tensor.__getitem__) and \
                    isinstance(base, torch.fx.Node) and is_value(env.get(base)):
                # a write into x[idx] is x[idx] = new value: update the base too
                idx = _map(target.args[1], lambda n: env[n])
                try:
                    new_base = setitem(b, env[base], idx, res)
                except (Unsupported, _C.Error) as e:
                    return "in-place write through an index: %s" % e
                why = self._mutation(base, new_base, env, mutated, b)
                if why:
                    return why
            else:
                name = t if isinstance(t, str) else getattr(t, "__name__", "")
                packet = getattr(t, "overloadpacket", None)  # ATen OpOverload
                if packet is not None:
                    name = getattr(packet, "__name__", name)
                if name in _ALIAS_NAMES or t in (operator.getitem, builtins.getattr):
                    return "in-place write through %s (a view or alias of another tensor)" \
                        % fmt_target(t)
        env[target] = res
        return None

    def _outputs(self, b, env, mutated):
        slots = {}
        g = b.graph

        def slot_of(v):
            if v.kind != "node":
                v = b.op("clone", [v])
            k = slots.get(v.id)
            if k is None:
                k = slots[v.id] = len(slots)
                g.add_output(v)
            return k

        def leaf(v):
            if is_value(v):
                return ("slot", slot_of(v))
            if isinstance(v, MinMaxResult):
                return ("seq", "minmax", [leaf(x) for x in v])
            if isinstance(v, Unavailable):
                raise UnsupportedError([("output", "output", v.why)])
            if isinstance(v, (tuple, list)):
                return ("seq", "list" if isinstance(v, list) else "tuple", [leaf(x) for x in v])
            if isinstance(v, dict):
                return ("dict", list(v.keys()), [leaf(x) for x in v.values()])
            if isinstance(v, _C.SymInt) or (isinstance(v, int) and not isinstance(v, bool)):
                return ("int", slot_of(b.size_value(v)))
            return ("py", v)

        def walk(a):
            if isinstance(a, torch.fx.Node):
                if a.op == "placeholder":
                    return ("arg", self.placeholders.index(a))
                if a.op == "get_attr" and isinstance(env.get(a), _C.Value):
                    return ("attr", a.target)
                return leaf(env[a])
            if isinstance(a, (tuple, list)):
                kind = "list" if isinstance(a, list) else "tuple"
                return ("seq", kind, [walk(x) for x in a])
            if isinstance(a, dict):
                return ("dict", list(a.keys()), [walk(x) for x in a.values()])
            return ("py", a)

        tree = walk(self.output.args[0])
        wb = []
        for i in sorted(mutated):
            wb.append((i, slot_of(mutated[i])))
        if not slots:  # libptc compiles no graph without outputs: a 0-d dummy
            slot_of(b.scalar(0, torch.int64))
        return _Template(tree, len(slots), wb)


def _rebuild(t, outs, args, gm):
    kind = t[0]
    if kind == "slot":
        return outs[t[1]]
    if kind == "int":
        return int(outs[t[1]].item())
    if kind == "arg":
        return args[t[1]]
    if kind == "attr":
        return _fetch_attr(gm, t[1])
    if kind == "py":
        return t[1]
    if kind == "seq":
        items = [_rebuild(c, outs, args, gm) for c in t[2]]
        if t[1] == "list":
            return items
        if t[1] == "minmax":
            return MinMaxResult(*items)
        return tuple(items)
    if kind == "dict":
        return {k: _rebuild(c, outs, args, gm) for k, c in zip(t[1], t[2])}
    raise AssertionError(kind)


def _extract(t, value, slots, args):
    """Fills slots[k] from an eager output `value` following template t."""
    kind = t[0]
    if kind == "slot":
        slots[t[1]] = value
    elif kind == "int":
        slots[t[1]] = torch.tensor(int(value), dtype=torch.int64)
    elif kind == "seq":
        for c, v in zip(t[2], value):
            _extract(c, v, slots, args)
    elif kind == "dict":
        for k, c in zip(t[1], t[2]):
            _extract(c, value[k], slots, args)


class _Specialisation:
    """One CompiledFunction for one tuple of non-tensor placeholder values."""

    def __init__(self, owner, consts):
        self.owner = owner
        self.consts = consts
        self.template = None
        self.compiled = None


class CompiledGraph:
    """The result of from_fx: call it like the GraphModule.

    Attributes: compiled (the CompiledFunction of the example inputs'
    non-tensor values), graph (the last ptc Graph built), fallback (the
    GraphModule itself, the eager fallback), gm, specialisations (number of
    CompiledFunctions, one per distinct tuple of non-tensor inputs)."""

    def __init__(self, gm, converter, kinds, sources, backend, mode, dynamic, debug_dir,
                 max_recompiles, guard_versions=True):
        self.gm = gm
        self.fallback = gm
        self._conv = converter
        self._kinds = kinds
        self._sources = sources
        self._opts = dict(backend=backend, mode=mode, dynamic=dynamic, debug_dir=debug_dir,
                          max_recompiles=max_recompiles, strict=True)
        self._opts.update(zip(("matmul_precision", "conv_precision"), torch_precisions()))
        self._tensor_idx = [i for i, k in enumerate(kinds) if k == "tensor"]
        self._const_idx = [i for i, k in enumerate(kinds) if k == "const"]
        self._specs = {}
        self._lock = threading.Lock()
        self._trial = None
        self._warned = False
        self._fast = None  # the CompiledFunction when calls may go straight to it
        self._fast_single = False  # ... and its output is the 1-tuple's tensor
        self._nargs = len(kinds)
        self.compiled = None
        self._extra_dyn = frozenset()  # from_fx(dynamic_dims=): dynamic in every build
        # constants held as compile-time copies (snapshot_constants) and their
        # _version then: an in-place update drops the compiled functions
        self._guard_versions = guard_versions
        self._snap = ()
        self._snap_versions = ()
        self._stale_count = 0
        self._eager = False

    @property
    def graph(self):
        return self._conv.last_graph

    @property
    def specialisations(self):
        return len(self._specs)

    def _key(self, args):
        vals = []
        for i in self._const_idx:
            v = args[i] if i < len(args) else None
            try:
                hash(v)
            except TypeError:
                v = repr(v)
            vals.append((type(v).__name__, v))
        return tuple(vals)

    def _spec(self, key, args):
        with self._lock:
            sp = self._specs.get(key)
            if sp is not None:
                return sp
            if len(self._specs) >= MAX_SPECIALISATIONS:
                return None
            consts = {i: args[i] for i in self._const_idx}
            sp = _Specialisation(self, consts)
            sp.compiled = _C.CompiledFunction(
                self._make_build(sp), fallback=self._make_fallback(sp),
                name=type(self.gm).__name__, **self._opts)
            self._specs[key] = sp
            if self.compiled is None:
                self.compiled = sp.compiled
            return sp

    def _make_build(self, sp):
        conv = self._conv

        def build(tensors, dynamic_dims):
            dynamic_dims = frozenset(dynamic_dims) | self._extra_dyn
            trial = self._trial
            if trial is not None and trial[0] is sp and trial[1] == _sig(tensors, dynamic_dims):
                self._trial = None
                g, template = trial[2], trial[3]
            else:
                with conv.lock:
                    g, template, _ = conv.build(self._kinds, sp.consts, self._sources,
                                                list(tensors), dynamic_dims, collect=False)
            self._note_constants(conv.last_constants)
            if sp.template is None:
                sp.template = template
            elif sp.template.key() != template.key():
                raise UnsupportedError([("output", "output", "the output structure changed "
                                         "between compiles (%s)" % type(self.gm).__name__)])
            return g
        return build

    def _make_fallback(self, sp):
        gm = self.gm

        def fallback(*tensors):
            args = self._merge(tensors, sp)
            res = gm(*args)
            t = sp.template
            slots = [None] * t.n_slots
            _extract(t.tree, res, slots, args)
            for i, k in t.writebacks:
                slots[k] = args[i]
            return tuple(slots)
        return fallback

    def _merge(self, tensors, sp):
        args = [None] * len(self._kinds)
        it = iter(tensors)
        for i, k in enumerate(self._kinds):
            if k == "tensor":
                args[i] = next(it)
            elif k == "const":
                args[i] = sp.consts[i]
        for i, (src, d) in self._sources.items():
            args[i] = args[src].shape[d]
        return args

    def _fast_path(self, sp):
        """A call path without the general bookkeeping, for graphs whose
        inputs are all tensors and whose output is one tensor or a flat
        tuple of the slots in order (the common case): (the
        CompiledFunction, whether the result is its one output), None
        otherwise."""
        t = sp.template
        if self._const_idx or self._sources or t is None or t.writebacks:
            return None
        compiled = sp.compiled
        tree = t.tree
        if tree == ("slot", 0):
            return compiled, True
        if tree[0] == "seq" and tree[1] == "tuple" and \
                [c for c in tree[2]] == [("slot", k) for k in range(t.n_slots)]:
            return compiled, False
        return None

    def _note_constants(self, consts):
        """Records the constants of a build that are compile-time copies,
        with their versions (kept with those of earlier builds)."""
        if not self._guard_versions:
            return
        snap = snapshot_constants(self._opts["backend"], consts, self.gm.graph)
        with self._lock:
            known = {id(t): (t, v) for t, v in zip(self._snap, self._snap_versions)}
            for t in snap:
                known[id(t)] = (t, t._version)
            self._snap = tuple(t for t, _ in known.values())
            self._snap_versions = tuple(v for _, v in known.values())

    def _stale(self):
        """A snapshot constant was updated in place: forget every compiled
        function (the next call rebuilds with the new values); after
        max_recompiles such updates, run the GraphModule eagerly."""
        with self._lock:
            if same_versions(self._snap, self._snap_versions):
                return  # another thread did it
            self._specs.clear()
            self._fast = None
            self.compiled = None
            self._trial = None
            self._snap, self._snap_versions = (), ()
            self._stale_count += 1
            if self._stale_count > self._opts["max_recompiles"]:
                self._guard_versions = False
                self._eager = True
                warnings.warn("ptc: %s: constants updated in place more than %d times; "
                              "running eagerly" % (type(self.gm).__name__,
                                                   self._opts["max_recompiles"]), stacklevel=3)

    def __call__(self, *args):
        if self._snap and not same_versions(self._snap, self._snap_versions):
            self._stale()
        fast = self._fast
        if fast is not None and len(args) == self._nargs:
            # the CompiledFunction itself (C): its tuple, or its one output
            out = fast(*args)
            return out[0] if self._fast_single else out
        return self._call(args)

    def _call(self, args):
        if len(args) != len(self._kinds):
            raise TypeError("%s: expected %d arguments, got %d" % (
                type(self.gm).__name__, len(self._kinds), len(args)))
        if self._eager:
            return self.gm(*args)
        sp = self._spec(self._key(args), args)
        if sp is None:
            if not self._warned:
                self._warned = True
                warnings.warn("ptc: %s specialised on more than %d distinct non-tensor "
                              "inputs; running eagerly" % (type(self.gm).__name__,
                                                           MAX_SPECIALISATIONS), stacklevel=2)
            return self.gm(*args)
        tensors = [args[i] for i in self._tensor_idx]
        for i, (src, d) in self._sources.items():
            if int(args[i]) != args[src].shape[d]:
                raise ValueError("%s: size input %d is %d but dimension %d of input %d is %d"
                                 % (type(self.gm).__name__, i, int(args[i]), d, src,
                                    args[src].shape[d]))
        outs = sp.compiled(*tensors)
        t = sp.template
        if self._fast is None and len(self._specs) == 1:
            fp = self._fast_path(sp)
            if fp is not None:
                self._fast_single = fp[1]
                self._fast = fp[0]
        for i, k in t.writebacks:
            if outs[k] is not args[i]:
                with torch.no_grad():
                    args[i].copy_(outs[k])
        return _rebuild(t.tree, outs, args, self.gm)


def _sig(tensors, dynamic_dims):
    return (tuple((t.dtype, tuple(t.shape), tuple(t.stride())) for t in tensors),
            frozenset(dynamic_dims))


def torch_precisions():
    """(matmul_precision, conv_precision) as torch's current settings give
    them: torch.get_float32_matmul_precision() ("highest", "high" or
    "medium": TF32 for float32 matmuls unless "highest") and "high" when
    torch.backends.cudnn.allow_tf32 (TF32 for float32 convolutions, torch's
    default) else "highest". Read when a graph is converted, as Inductor
    reads them when it compiles."""
    get = getattr(torch, "get_float32_matmul_precision", None)
    mm = get() if get is not None else "highest"
    cudnn = getattr(torch.backends, "cudnn", None)
    conv = "high" if getattr(cudnn, "allow_tf32", False) else "highest"
    return mm, conv


def _initial_dynamic(tensors, dynamic):
    """The dims CompiledFunction makes dynamic on the first compile."""
    dims = set()
    for i, t in enumerate(tensors):
        if dynamic is True:
            dims.update((i, d) for d, s in enumerate(t.shape) if s >= 2)
        for attr in ("_ptc_dynamic_dims", "_dynamo_dynamic_indices"):
            for d in getattr(t, attr, ()) or ():
                if 0 <= d < t.dim() and t.shape[d] >= 2:
                    dims.add((i, d))
    return frozenset(dims)


def from_fx(gm, example_inputs, backend="cpu", mode=None, dynamic=None, debug_dir=None,
            max_recompiles=8, dynamic_dims=None, guard_versions=True):
    """Compiles a torch.fx.GraphModule with libptc.

    gm: the GraphModule (parameters/buffers it holds become borrowed
    constants; call it in eval mode: dropout/batch-norm training is
    unsupported). example_inputs: one value per placeholder (tensors; ints
    and other Python values are specialised; torch 2 SymInts must be
    dimensions of tensor inputs). backend, mode, debug_dir: passed to
    _C.compile; dynamic: None (automatic dynamic after a size-caused
    recompile), True (every dim >= 2 dynamic from the start) or False;
    max_recompiles: the CompiledFunction's cap before eager fallback;
    dynamic_dims: a set of (tensor input index, dim) traced as dynamic from
    the first compile on (dims of size >= 2; the bytecode capture's);
    guard_versions: check, on every call, the _version of the constants the
    compiled graph holds as copies (snapshot_constants: on a device backend
    all of them, on cpu those folded by compile-time passes or copied) and
    rebuild after an in-place update (optimizer step, load_state_dict, BN
    statistics); False where the caller guards them itself (the
    torch.compile backend's frozen parameters, ptc.compile's guards).
    Parameters read live (cpu, borrowed, not folded) need no check.

    Returns a CompiledGraph. Raises UnsupportedError listing every node that
    cannot be converted (see the module comment). Compiling itself happens
    on the first call."""
    if not isinstance(gm, torch.fx.GraphModule):
        raise TypeError("from_fx expects a torch.fx.GraphModule, got %s" % type(gm).__name__)
    conv = _Converter(gm)
    kinds, values, sources, problems = conv.classify(example_inputs)
    tensors = [v for v, k in zip(values, kinds) if k == "tensor"]
    consts = {i: v for i, (v, k) in enumerate(zip(values, kinds)) if k == "const"}
    extra = frozenset(dynamic_dims or ())
    dims = _initial_dynamic(tensors, dynamic) | extra
    g, template, walk_problems = conv.build(kinds, consts, sources, tensors, dims, collect=True)
    problems += walk_problems
    if problems:
        raise UnsupportedError(problems)
    cg = CompiledGraph(gm, conv, kinds, sources, backend, mode, dynamic, debug_dir,
                       max_recompiles, guard_versions)
    cg._extra_dyn = extra
    args = list(values)
    sp = cg._spec(cg._key(args), args)
    # The output template is known from the trial build: the eager fallback
    # (grad needed, recompile cap) may run before the first compile.
    sp.template = template
    cg._trial = (sp, _sig(tensors, dims), g, template)
    cg._note_constants(conv.last_constants)
    sp.template = template
    return cg
