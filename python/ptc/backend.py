"""ptc/backend.py - the torch.compile backend: `ptc.backend` and `ptc.make_backend`.

    model = torch.compile(model, backend=ptc.backend)                  # PyTorch >= 2
    model = torch.compile(model, backend=ptc.make_backend("ref"))

Dynamo captures the program (bytecode -> torch.fx.GraphModule) and hands each
graph to the backend; the backend turns it into a libptc graph with
`ptc.from_fx` and returns the compiled callable. What this file adds on top of
from_fx:

- graphs with unsupported targets run eagerly (`gm.forward`) after a
  `warnings.warn` that lists every unsupported target with its node name;
- Dynamo's size inputs (graphs captured with dynamic shapes take the
  symbolic sizes as extra int/SymInt placeholders) are handled by from_fx,
  which maps each to the tensor dimension with the same symbolic expression;
  one that is no plain tensor dimension is unsupported (eager, warned);
- gradients: ptc computes none. Dynamo hands a backend the graph as it is
  called in grad mode too, so a call that needs gradients (grad mode on and a
  parameter of the graph module, or an input, requires grad) runs the graph
  eagerly with a one-time warning; under `torch.no_grad()` /
  `torch.inference_mode()` ptc runs.

Parameters: recent PyTorch 2.x (inline_inbuilt_nn_modules, the default since
2.5) passes module parameters and buffers as graph inputs (placeholders
whose example values are `nn.Parameter`s) instead of `get_attr` nodes;
`num_parameter_inputs` counts the nn.Parameter ones.

Freezing (default on; PTC_FREEZE_PARAMS=0 or make_backend(freeze=False)
turns it off): for inference graphs - grad mode off, or no input requiring
grad - parameter and buffer inputs are compiled as constants, like
Inductor's freezing, so constant work (conv + batch-norm folding,
lib/runtime/pass_conv_bn.c) happens once at compile time. Recognised as
parameters/buffers: example inputs that are nn.Parameters, and placeholders
whose Dynamo source (node.meta["grapharg"].source) goes through a module's
`_buffers` / `_parameters` (UnspecializedParamBufferSource, torch >= 2.5;
ParamBufferSource). The returned FrozenGraph guards every call: each frozen
input must be the same tensor object with the same data_ptr() and
_version as when it was frozen (an in-place update - optimizer.step(),
load_state_dict(), bn.running_mean.mul_() - bumps _version; `p.data = t`
moves data_ptr); otherwise it freezes again (recompiles) before computing,
and after FrozenGraph.max_refreezes re-freezes it compiles the graph with
the parameters as inputs for good. Not seen by the guard (as with
Inductor's freezing): writes that bypass the version counter
(`p.data.copy_(...)`, writes through `.data` or numpy/DLPack aliases).
A call that needs gradients (grad mode on and a frozen input requiring
grad) runs eagerly. Graphs that write to a parameter or buffer (batch norm
in training mode) are not frozen.

This module imports on any torch version (1.13 included) and never imports
torch._dynamo; only using it as a backend needs PyTorch >= 2.
"""

import operator
import os
import sys
import threading
import types
import warnings

__all__ = ["backend", "make_backend", "Backend", "CompiledForDynamo", "FrozenGraph"]


class CompiledForDynamo:
    """What the backend returns for a graph ptc compiled: callable with the
    graph module's positional arguments, returns its outputs.

    Attributes: compiled_graph (the ptc.from_fx result; `.compiled` is its
    CompiledFunction), gm (the graph module, run eagerly when gradients are
    needed), num_parameter_inputs (inputs that were nn.Parameters at compile
    time), eager_calls (calls that ran eagerly because gradients were needed).
    Thread-safety: as the CompiledFunction (runs may be concurrent).
    """

    def __init__(self, compiled_graph, gm, num_parameter_inputs):
        self.compiled_graph = compiled_graph
        self.gm = gm
        self.num_parameter_inputs = num_parameter_inputs
        self._params_need_grad = any(p.requires_grad for p in gm.parameters())
        self.eager_calls = 0
        self._warned = False
        self._lock = threading.Lock()

    @property
    def compiled(self):
        """The CompiledFunction (executable cache) behind this graph."""
        return self.compiled_graph.compiled

    def _eager(self, args, why):
        with self._lock:
            self.eager_calls += 1
            warn = not self._warned
            self._warned = True
        if warn:
            warnings.warn("ptc.backend: %s; this graph runs eagerly in PyTorch whenever "
                          "gradients are needed (ptc computes no gradients)" % why,
                          stacklevel=3)
        return self.gm.forward(*args)

    def __call__(self, *args):
        import torch

        if self._params_need_grad and torch.is_grad_enabled():
            return self._eager(args, "grad mode is on and the graph's parameters require grad")
        return self.compiled_graph(*args)


# ---- freezing parameter inputs ------------------------------------------------------------

_SOURCE_CLASSES = ("UnspecializedParamBufferSource", "ParamBufferSource")


def freeze_enabled():
    """Whether the environment allows freezing (PTC_FREEZE_PARAMS is not "0"),
    read at each compile. Thread-safe."""
    return os.environ.get("PTC_FREEZE_PARAMS", "1").strip() not in ("0", "off", "false")


def param_kind(placeholder, value):
    """"parameter", "buffer" or None: whether graph input `value` (of FX
    placeholder `placeholder`, may be None) is a module parameter or buffer.
    nn.Parameter instances are parameters; a plain tensor is a buffer when
    Dynamo's source for it (placeholder.meta["grapharg"].source, a chain of
    `.base` links) passes through a module's `_buffers` or `_parameters`
    (UnspecializedParamBufferSource with inline_inbuilt_nn_modules,
    ParamBufferSource). Never imports torch._dynamo; never raises."""
    import torch

    if not isinstance(value, torch.Tensor):
        return None
    if isinstance(value, torch.nn.Parameter):
        return "parameter"
    meta = getattr(placeholder, "meta", None) or {}
    src = getattr(meta.get("grapharg"), "source", None)
    for _ in range(64):
        if src is None:
            break
        if type(src).__name__ in _SOURCE_CLASSES or \
                getattr(src, "member", None) in ("_buffers", "_parameters"):
            return "buffer"
        src = getattr(src, "base", None)
    return None


def _freezable(t):
    """A tensor the guard can watch: a plain torch.Tensor / nn.Parameter
    (no subclass), strided, with a version counter (inference tensors have
    none)."""
    import torch

    if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.layout != torch.strided:
        return False
    try:
        t._version
        t.data_ptr()
    except RuntimeError:
        return False
    return True


def _getter(idx):
    """f(args) -> tuple of args[i] for i in idx (operator.itemgetter, always a tuple)."""
    idx = tuple(idx)
    if not idx:
        return lambda args: ()
    if len(idx) == 1:
        i = idx[0]
        return lambda args: (args[i],)
    return operator.itemgetter(*idx)


def _frozen_module(gm, frozen):
    """A GraphModule computing gm whose placeholders {index: tensor} in
    `frozen` are get_attr attributes holding those tensors (the same
    objects, no copy); the other placeholders keep their order."""
    import torch.fx
    from .fx import _fetch_attr

    root = {}
    for node in gm.graph.nodes:
        if node.op in ("get_attr", "call_module") and node.target not in root:
            root[node.target] = _fetch_attr(gm, node.target)
    used = set(root) | {t.split(".")[0] for t in root}
    g = torch.fx.Graph()
    env = {}
    attrs = []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, ph in enumerate(placeholders):
        if i in frozen:
            name, k = ph.name, 0
            while name in used:
                k += 1
                name = "%s_frozen%d" % (ph.name, k)
            used.add(name)
            root[name] = frozen[i]
            attrs.append((ph, name))
        else:
            env[ph] = g.node_copy(ph, lambda n: env[n])
    for ph, name in attrs:
        env[ph] = g.get_attr(name)
        env[ph].meta = dict(ph.meta)
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            env[node] = g.node_copy(node, lambda n: env[n])
    return torch.fx.GraphModule(root, g, class_name=type(gm).__name__)


class _FrozenState:
    """One freeze: the frozen tensors, their data_ptr()s and _versions then,
    and the CompiledGraph built with them as constants. `checks` holds
    (argument index, tensor, _version, data_ptr) per frozen input: what the
    per-call guard compares, one tuple each (a plain loop over them costs
    about half of mapping over parallel lists)."""

    __slots__ = ("refs", "ptrs", "versions", "graph", "checks")

    def __init__(self, refs, ptrs, versions, graph, indices):
        self.refs, self.ptrs, self.versions, self.graph = refs, ptrs, versions, graph
        self.checks = tuple(zip(indices, refs, versions, ptrs))

    def holds(self, args):
        """Every frozen argument in `args` is the tensor frozen, with the same
        _version and data_ptr()."""
        ptr = _PTR
        for i, t, v, p in self.checks:
            a = args[i]
            if a is not t or a._version != v or ptr(a) != p:
                return False
        return True


_VERSION = operator.attrgetter("_version")
_REQUIRES_GRAD = operator.attrgetter("requires_grad")


class FrozenGraph:
    """What the backend returns for an inference graph whose parameter and
    buffer inputs it froze: callable with the graph module's positional
    arguments (all of them, parameters included), returns its outputs.

    Each call checks that every frozen argument is the tensor object frozen,
    with the same data_ptr() and _version (~18 us per call for resnet18's
    102 frozen tensors on the H100 machine's host before session 10's loop
    form, less than passing them as inputs costs), then calls the
    CompiledGraph's CompiledFunction directly where the CompiledGraph has
    its fast path (no CompiledGraph.__call__ frame: the frozen graph has no
    version-guarded constants of its own, guard_versions=False);
    on a mismatch it freezes the current arguments again (a new from_fx
    compile) before computing, never running with stale constants; after
    `max_refreezes` re-freezes it compiles the graph with the parameters as
    inputs (`unfrozen`) and uses that from then on. A call in grad mode with
    a frozen argument requiring grad runs gm eagerly (warned once).

    Attributes: gm, frozen_inputs (placeholder indices frozen),
    num_parameter_inputs, compiled_graph (the current CompiledGraph; the
    unfrozen one once frozen no more), compiled (its CompiledFunction),
    refreezes, eager_calls, unfrozen (None or the unfrozen CompiledGraph).
    Thread-safety: calls may be concurrent; re-freezing is serialised by a
    lock and publishes the new state atomically.
    """

    max_refreezes = 8

    def __init__(self, owner, gm, example_inputs, frozen_inputs, num_parameter_inputs):
        self.gm = gm
        self.frozen_inputs = tuple(frozen_inputs)
        self.num_parameter_inputs = num_parameter_inputs
        self.refreezes = 0
        self.eager_calls = 0
        self.unfrozen = None
        self._owner = owner
        self._nargs = len(example_inputs)
        fz = set(self.frozen_inputs)
        self._rest_idx = tuple(i for i in range(self._nargs) if i not in fz)
        self._get_frozen = _getter(self.frozen_inputs)
        self._get_rest = _getter(self._rest_idx)
        self._lock = threading.Lock()
        self._warned = False
        self._state = None
        _bind_torch()
        self._freeze(example_inputs)  # UnsupportedError: the caller does not freeze

    @property
    def compiled_graph(self):
        """The CompiledGraph calls currently go to."""
        st = self._state
        return st.graph if st is not None else self.unfrozen

    @property
    def compiled(self):
        """The CompiledFunction behind compiled_graph."""
        return self.compiled_graph.compiled

    def _freeze(self, args):
        from .fx import from_fx

        ts = self._get_frozen(args)
        # recorded before building: a change while compiling fails the guard
        versions = list(map(_VERSION, ts))
        ptrs = list(map(_PTR, ts))
        fgm = _frozen_module(self.gm, dict(zip(self.frozen_inputs, ts)))
        o = self._owner
        cg = from_fx(fgm, list(self._get_rest(args)), backend=o.backend, mode=o.mode,
                     dynamic=o.dynamic, debug_dir=o.debug_dir, guard_versions=False)
        self._state = _FrozenState(ts, ptrs, versions, cg, self.frozen_inputs)

    def __call__(self, *args):
        st = self._state
        if st is not None and len(args) == self._nargs and st.holds(args) and not (
                _grad_enabled() and any(map(_REQUIRES_GRAD, self._get_frozen(args)))):
            cg = st.graph
            # cg's CompiledFunction, once cg's first call found its fast path
            # (cg has no version-guarded constants: built with guard_versions=False)
            fast = cg._fast
            if fast is None or cg._snap:
                return cg(*self._get_rest(args))
            out = fast(*self._get_rest(args))
            return out[0] if cg._fast_single else out
        return self._slow(args)

    def _slow(self, args):
        """A call that failed the fast path's checks: unfrozen, grad needed,
        or a frozen argument changed (re-freeze first)."""
        from .fx import UnsupportedError

        if len(args) != self._nargs:
            raise TypeError("%s: expected %d arguments, got %d" % (
                type(self.gm).__name__, self._nargs, len(args)))
        unfrozen = self.unfrozen
        if unfrozen is not None:  # its CompiledFunction handles grad itself
            return unfrozen(*args)
        ts = self._get_frozen(args)
        if _grad_enabled() and any(map(_REQUIRES_GRAD, ts)):
            return self._eager(args)
        with self._lock:
            st = self._state
            if self.unfrozen is None and not (st is not None and st.holds(args)):
                self._state = None
                if self.refreezes < self.max_refreezes:
                    self.refreezes += 1
                    try:
                        self._freeze(args)
                    except UnsupportedError:
                        self._unfreeze(args)
                else:
                    self._unfreeze(args)
            st = self._state
        if st is None:
            return self.unfrozen(*args)
        return st.graph(*self._get_rest(args))

    def _unfreeze(self, args):
        from .fx import from_fx

        o = self._owner
        warnings.warn("ptc.backend: the frozen parameters of %s changed %d times; compiling "
                      "it with parameters as inputs from now on" % (
                          type(self.gm).__name__, self.refreezes), stacklevel=4)
        self.unfrozen = from_fx(self.gm, list(args), backend=o.backend, mode=o.mode,
                                dynamic=o.dynamic, debug_dir=o.debug_dir)

    def _eager(self, args):
        with self._lock:
            self.eager_calls += 1
            warn = not self._warned
            self._warned = True
        if warn:
            warnings.warn("ptc.backend: grad mode is on and a parameter of the graph requires "
                          "grad; this graph runs eagerly in PyTorch whenever gradients are "
                          "needed (ptc computes no gradients)", stacklevel=3)
        return self.gm.forward(*args)


def _grad_enabled():
    """torch.is_grad_enabled() (rebound to it by _bind_torch)."""
    import torch

    return torch.is_grad_enabled()


def _PTR(t):
    """t.data_ptr() (rebound to torch.Tensor.data_ptr by _bind_torch)."""
    return t.data_ptr()


def _bind_torch():
    """Binds the guard's helpers to torch's C functions (one lookup less per
    call). Idempotent; thread-safe (rebinding to the same objects)."""
    global _grad_enabled, _PTR
    import torch

    _grad_enabled = torch.is_grad_enabled
    _PTR = torch.Tensor.data_ptr


class Backend:
    """A torch.compile backend compiling through libptc.

    Backend(backend="cpu", mode=None, debug_dir=None, dynamic=None,
    freeze=None) - the libptc backend name ("cpu", "ref", ...), compile mode,
    debug-dump folder, the CompiledFunction's dynamic policy (None: automatic
    dynamic after a size-caused recompile) and whether parameter/buffer
    inputs of inference graphs are frozen (None: unless PTC_FREEZE_PARAMS=0).

    Calling it as Dynamo does, `b(gm, example_inputs, **kwargs)`, returns a
    FrozenGraph when it froze parameter/buffer inputs (see the module
    comment), else a CompiledForDynamo (or, when no parameter of the graph
    needs grad, the CompiledGraph it would forward every call to: the same
    results, one Python call less), or `gm.forward` when the graph has
    unsupported targets (with a warning listing them). Other errors
    (ptc.Error from compiling, TypeError) propagate. `compiled` lists every
    FrozenGraph / CompiledForDynamo made, in order; `fallbacks` the messages
    of graphs that run eagerly. Thread-safe.
    """

    def __init__(self, backend="cpu", mode=None, debug_dir=None, dynamic=None, freeze=None):
        self.backend = backend
        self.mode = mode
        self.debug_dir = debug_dir
        self.dynamic = dynamic
        self.freeze = freeze
        self.compiled = []
        self.fallbacks = []
        self._lock = threading.Lock()
        # Dynamo names backends after __name__ in its logs and caches.
        self.__name__ = "ptc_" + str(backend)

    def __repr__(self):
        return "ptc.make_backend(backend=%r, mode=%r, debug_dir=%r, freeze=%r)" % (
            self.backend, self.mode, self.debug_dir, self.freeze)

    def _fallback(self, gm, msg):
        with self._lock:
            self.fallbacks.append(msg)
        warnings.warn(msg, stacklevel=3)
        return gm.forward

    def _freeze_candidates(self, gm, example_inputs):
        """Placeholder indices of the parameter/buffer inputs to freeze, or
        [] (freezing off, no such input, or not an inference graph: grad
        mode on and an input requiring grad)."""
        import torch

        if not (freeze_enabled() if self.freeze is None else self.freeze):
            return []
        if torch.is_grad_enabled() and any(
                isinstance(v, torch.Tensor) and v.requires_grad for v in example_inputs):
            return []
        phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
        return [i for i, v in enumerate(example_inputs)
                if param_kind(phs[i] if i < len(phs) else None, v) and _freezable(v)]

    def __call__(self, gm, example_inputs, **kwargs):
        import torch
        from .fx import UnsupportedError, from_fx

        example_inputs = list(example_inputs)
        n_params = sum(1 for v in example_inputs if isinstance(v, torch.nn.Parameter))
        frozen = self._freeze_candidates(gm, example_inputs)
        if frozen:
            try:
                out = FrozenGraph(self, gm, example_inputs, frozen, n_params)
            except UnsupportedError:
                out = None  # e.g. the graph writes to a buffer: not frozen
            if out is not None:
                with self._lock:
                    self.compiled.append(out)
                return out
        try:
            cg = from_fx(gm, example_inputs, backend=self.backend, mode=self.mode,
                         dynamic=self.dynamic, debug_dir=self.debug_dir)
        except UnsupportedError as e:
            return self._fallback(gm, "ptc.backend: running graph eagerly; unsupported "
                                  "targets:\n%s" % e)
        out = CompiledForDynamo(cg, gm, n_params)
        with self._lock:
            self.compiled.append(out)
        # Without parameters needing grad, CompiledForDynamo.__call__ only
        # forwards to the CompiledGraph: Dynamo gets that one (a Python
        # call less per run); `compiled` still lists the wrapper.
        return out if out._params_need_grad else cg


def make_backend(backend="cpu", mode=None, debug_dir=None, dynamic=None, freeze=None):
    """Returns a configured torch.compile backend (a Backend instance).

    backend: libptc backend name; mode: compile mode (None = default);
    debug_dir: folder for libptc's debug dumps (graph, IR, fusion decisions,
    generated sources); dynamic: the CompiledFunction's policy (None, True,
    False); freeze: compile parameter/buffer inputs of inference graphs as
    guarded constants (None: yes unless PTC_FREEZE_PARAMS=0; True; False).
    Never fails (bad names surface at the first compile as ptc.Error).
    """
    return Backend(backend=backend, mode=mode, debug_dir=debug_dir, dynamic=dynamic,
                   freeze=freeze)


def backend(gm, example_inputs, **kwargs):
    """The default torch.compile backend: libptc's "cpu" backend.

    torch.compile(model, backend=ptc.backend). Returns what Backend.__call__
    returns (a CompiledForDynamo or its CompiledGraph), or gm.forward after a
    warning listing unsupported targets.
    """
    return _DEFAULT(gm, example_inputs, **kwargs)


_DEFAULT = Backend("cpu")
# The default Backend instance (its .compiled / .fallbacks), reachable as
# ptc.backend.default whether ptc.backend is this module or the function.
default = _DEFAULT
backend.default = _DEFAULT


class _CallableModule(types.ModuleType):
    """`ptc.backend` names both this module and the function above; whichever
    of the two the package attribute ends up holding (it depends on import
    order), `torch.compile(model, backend=ptc.backend)` must work, so the
    module itself is callable as the default backend."""

    def __call__(self, gm, example_inputs, **kwargs):
        return _DEFAULT(gm, example_inputs, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
