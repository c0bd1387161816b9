"""ptc/backend.py - the torch.compile backend: `ptc.backend` and `ptc.make_backend`.

    model = torch.compile(model, backend=ptc.backend)                  # PyTorch >= 2
    model = torch.compile(model, backend=ptc.make_backend("ref"))

Dynamo captures the program (bytecode -> torch.fx.GraphModule) and hands each
graph to the backend; the backend turns it into a libptc graph with
`ptc.from_fx` and returns the compiled callable. What this file adds on top of
from_fx:

- graphs with unsupported targets run eagerly (`gm.forward`) after a
  `warnings.warn` that lists every unsupported target with its node name;
- Dynamo's size placeholders (graphs captured with dynamic shapes take the
  symbolic sizes as extra int/SymInt inputs) are rewritten into `x.size(d)`
  of the tensor input they come from, so ptc sees tensors only; a size whose
  origin is not a plain tensor dimension makes the graph run eagerly (warned);
- gradients: ptc computes none. Dynamo hands a backend the graph as it is
  called in grad mode too, so a call that needs gradients (grad mode on and a
  parameter of the graph module, or an input, requires grad) runs the graph
  eagerly with a one-time warning; under `torch.no_grad()` /
  `torch.inference_mode()` ptc runs.

Parameters: recent PyTorch 2.x (inline_inbuilt_nn_modules, the default since
2.5) passes module parameters and buffers as graph inputs (placeholders
whose example values are `nn.Parameter`s) instead of `get_attr` nodes. They
are treated as ordinary inputs (no copy: their memory crosses by DLPack on
every call); `CompiledForDynamo.num_parameter_inputs` counts them.

This module imports on any torch version (1.13 included) and never imports
torch._dynamo; only using it as a backend needs PyTorch >= 2.
"""

import sys
import threading
import types
import warnings

__all__ = ["backend", "make_backend", "Backend", "CompiledForDynamo"]


def _is_size_value(v):
    """True for a Python int or a torch.SymInt (Dynamo's size inputs)."""
    import torch

    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    sym_int = getattr(torch, "SymInt", None)
    return sym_int is not None and isinstance(v, sym_int)


def _sym_expr(v):
    """The sympy expression behind a SymInt (fake-tensor metadata), or None."""
    node = getattr(v, "node", None)
    return getattr(node, "expr", None) if node is not None else None


class _NoSizeSource(Exception):
    """A size placeholder that is not a plain dimension of a tensor input."""


def _rewrite_size_placeholders(gm, example_inputs):
    """Returns (gm2, tensor_positions).

    gm2 has no int/SymInt placeholders: each one is replaced by
    `t.size(d)` of the tensor placeholder whose (fake) example value has that
    symbol as dimension d. tensor_positions lists the positions in the
    original argument list that gm2 takes (tensors, in order). Returns
    (gm, None) when there is nothing to rewrite. Raises _NoSizeSource with
    the placeholder's name when a size cannot be traced back to a tensor dim.
    """
    import torch
    import torch.fx

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return gm, None
    size_idx = [i for i, v in enumerate(example_inputs) if _is_size_value(v)]
    if not size_idx:
        return gm, None

    # Where does each symbol appear as a whole dimension of a tensor input?
    dim_of_expr = {}
    for i, (ph, v) in enumerate(zip(placeholders, example_inputs)):
        if not isinstance(v, torch.Tensor):
            continue
        fake = ph.meta.get("example_value", ph.meta.get("val"))
        shape = getattr(fake, "shape", None)
        if shape is None:
            continue
        for d, s in enumerate(shape):
            e = _sym_expr(s)
            if e is not None and e not in dim_of_expr:
                dim_of_expr[e] = (i, d)

    graph = torch.fx.Graph()
    env = {}
    out = graph.graph_copy(gm.graph, env)
    graph.output(out)
    new_ph = {old: env[old] for old in placeholders}
    first_body = next((n for n in graph.nodes if n.op != "placeholder"), None)
    for i in size_idx:
        old = placeholders[i]
        sym = old.meta.get("example_value", old.meta.get("val"))
        src = dim_of_expr.get(_sym_expr(sym)) if sym is not None else None
        if src is None:
            raise _NoSizeSource(old.name)
        t_i, d = src
        with graph.inserting_before(first_body):
            size_node = graph.call_method("size", (new_ph[placeholders[t_i]], d))
        new_ph[old].replace_all_uses_with(size_node)
        graph.erase_node(new_ph[old])
    graph.lint()
    gm2 = torch.fx.GraphModule(gm, graph)
    positions = [i for i in range(len(example_inputs)) if i not in set(size_idx)]
    return gm2, positions


class CompiledForDynamo:
    """What the backend returns for a graph ptc compiled: callable with the
    graph module's positional arguments, returns its outputs.

    Attributes: compiled_graph (the ptc.from_fx result; `.compiled` is its
    CompiledFunction), gm (the graph module, run eagerly when gradients are
    needed), num_parameter_inputs (inputs that were nn.Parameters at compile
    time), eager_calls (calls that ran eagerly because gradients were needed).
    Thread-safety: as the CompiledFunction (runs may be concurrent).
    """

    def __init__(self, compiled_graph, gm, positions, num_parameter_inputs):
        self.compiled_graph = compiled_graph
        self.gm = gm
        self._positions = positions
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
        if self._positions is not None:
            args_ptc = [args[i] for i in self._positions]
        else:
            args_ptc = list(args)
        return self.compiled_graph(*args_ptc)


class Backend:
    """A torch.compile backend compiling through libptc.

    Backend(backend="cpu", mode=None, debug_dir=None, dynamic=None) - the
    libptc backend name ("cpu", "ref", ...), compile mode, debug-dump folder
    and the CompiledFunction's dynamic policy (None: automatic dynamic after
    a size-caused recompile; Dynamo's own dynamic graphs arrive with their
    size inputs rewritten, see the module comment).

    Calling it as Dynamo does, `b(gm, example_inputs, **kwargs)`, returns a
    CompiledForDynamo, or `gm.forward` when the graph has unsupported targets
    (with a warning listing them). Other errors (ptc.Error from compiling,
    TypeError) propagate. `compiled` lists every CompiledForDynamo made, in
    order; `fallbacks` the messages of graphs that run eagerly. Thread-safe.
    """

    def __init__(self, backend="cpu", mode=None, debug_dir=None, dynamic=None):
        self.backend = backend
        self.mode = mode
        self.debug_dir = debug_dir
        self.dynamic = dynamic
        self.compiled = []
        self.fallbacks = []
        self._lock = threading.Lock()
        # Dynamo names backends after __name__ in its logs and caches.
        self.__name__ = "ptc_" + str(backend)

    def __repr__(self):
        return "ptc.make_backend(backend=%r, mode=%r, debug_dir=%r)" % (
            self.backend, self.mode, self.debug_dir)

    def _fallback(self, gm, msg):
        with self._lock:
            self.fallbacks.append(msg)
        warnings.warn(msg, stacklevel=3)
        return gm.forward

    def __call__(self, gm, example_inputs, **kwargs):
        import torch
        from .fx import UnsupportedError, from_fx

        example_inputs = list(example_inputs)
        try:
            gm_ptc, positions = _rewrite_size_placeholders(gm, example_inputs)
        except _NoSizeSource as e:
            return self._fallback(gm, "ptc.backend: running graph eagerly: size input %s is not "
                                  "a dimension of a tensor input" % e.args[0])
        examples = ([example_inputs[i] for i in positions] if positions is not None
                    else example_inputs)
        bad = [type(v).__name__ for v in examples if not isinstance(v, torch.Tensor)]
        if bad:
            return self._fallback(gm, "ptc.backend: running graph eagerly: non-tensor graph "
                                  "inputs (%s)" % ", ".join(bad))
        n_params = sum(1 for v in examples if isinstance(v, torch.nn.Parameter))
        try:
            cg = from_fx(gm_ptc, examples, backend=self.backend, mode=self.mode,
                         dynamic=self.dynamic, debug_dir=self.debug_dir)
        except UnsupportedError as e:
            return self._fallback(gm, "ptc.backend: running graph eagerly; unsupported "
                                  "targets:\n%s" % e)
        out = CompiledForDynamo(cg, gm, positions, n_params)
        with self._lock:
            self.compiled.append(out)
        return out


def make_backend(backend="cpu", mode=None, debug_dir=None, dynamic=None):
    """Returns a configured torch.compile backend (a Backend instance).

    backend: libptc backend name; mode: compile mode (None = default);
    debug_dir: folder for libptc's debug dumps (graph, IR, fusion decisions,
    generated sources); dynamic: the CompiledFunction's policy (None, True,
    False). Never fails (bad names surface at the first compile as ptc.Error).
    """
    return Backend(backend=backend, mode=mode, debug_dir=debug_dir, dynamic=dynamic)


def backend(gm, example_inputs, **kwargs):
    """The default torch.compile backend: libptc's "cpu" backend.

    torch.compile(model, backend=ptc.backend). Returns a CompiledForDynamo, or
    gm.forward after a warning listing unsupported targets.
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
