"""ptc - PyTorch front end of libptc, the embeddable tensor-program compiler.

Public surface: Error, version, backends, ops, Graph, compile_graph,
CompiledFunction, Executable, Value, SymInt, mark_dynamic (eager), and
from_fx, backend, explain, UnsupportedError, and the bytecode capture's
compile, disable, reset, compile_stats (ptc.dynamo) (imported on first use,
so that `import ptc` works without torch.fx and before those modules exist).
"""
import importlib as _importlib

from . import _C
from ._C import (
    CompiledFunction,
    Error,
    Executable,
    Graph,
    SymInt,
    Value,
    backends,
    ops,
    version,
)
from ._C import compile as compile_graph
from ._dynamic import mark_dynamic

__version__ = version()

# name -> (module, attribute) resolved lazily by __getattr__.
_LAZY = {
    "from_fx": ("fx", "from_fx"),
    "CompiledGraph": ("fx", "CompiledGraph"),
    "UnsupportedError": ("fx", "UnsupportedError"),
    "backend": ("backend", "backend"),
    "make_backend": ("backend", "make_backend"),
    "explain": ("explain", "explain"),
    "Explanation": ("explain", "Explanation"),
    "compile": ("dynamo", "compile"),
    "disable": ("dynamo", "disable"),
    "reset": ("dynamo", "reset"),
    "compile_stats": ("dynamo", "compile_stats"),
}

__all__ = [
    "Error", "version", "backends", "ops", "Graph", "Value", "SymInt", "Executable",
    "compile_graph", "CompiledFunction", "mark_dynamic",
] + list(_LAZY)


def __getattr__(name):
    """Imports ptc.fx / ptc.backend / ptc.explain / ptc.dynamo on first use of their names."""
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(_importlib.import_module("." + module, __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ptc' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
