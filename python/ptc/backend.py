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


class Backend:
    """A torch.compile backend compiling through libptc.

    Backend(backend="cpu", mode=None, debug_dir=None, dynamic=None) - the
    libptc backend name ("cpu", "ref", ...), compile mode, debug-dump folder
    and the CompiledFunction's dynamic policy (None: automatic dynamic after
    a size-caused recompile).

    Calling it as Dynamo does, `b(gm, example_inputs, **kwargs)`, returns a
    CompiledForDynamo (or, when no parameter of the graph needs grad, the
    CompiledGraph it would forward every call to: the same results, one
    Python call less), or `gm.forward` when the graph has unsupported targets
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
        n_params = sum(1 for v in example_inputs if isinstance(v, torch.nn.Parameter))
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
