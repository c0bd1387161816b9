"""_mapping.py - THE op mapping table torch -> ptc (one table, shared by the
FX bridge and the bytecode capture).

    TABLE[key] = converter
    key: a torch callable (torch.add, torch.Tensor.add, operator.add,
         torch.nn.functional.relu, builtins.getattr, ...), a method name
         string (FX call_method targets: "view", "size", ...) or an
         nn.Module class (call_module targets).
    converter(b, *args, **kwargs) -> Value | tuple | int | SymInt | Python value
         b: Builder (graph, constants, scalar promotion, size arithmetic);
         tensor arguments are ptc Values; module converters get the module
         instance as first argument. Converters raise Unsupported(reason).
    converter.mutates(args, kwargs) -> int | None (in-place ops: index of the
         argument written; the converter returns its new value),
    converter.returns_none (the torch call itself returns None: x[i] = v),
    converter.check_module(module) -> str | None.

The entries live in the family files _map_elementwise, _map_shape,
_map_reduce, _map_nn, _map_modules and _map_aten (torch.ops.aten
overloads), which register into the one dict defined in _map_core; this module imports them all and is the public face.
"""
from . import _map_elementwise  # noqa: F401  (registers entries)
from . import _map_shape  # noqa: F401
from . import _map_reduce  # noqa: F401
from . import _map_nn  # noqa: F401
from . import _map_modules  # noqa: F401
from . import _map_aten  # noqa: F401  (ATen overloads; after the others)
from ._map_core import (TABLE, Builder, MinMaxResult, Unavailable, Unsupported, fmt_target,
                        is_value, lookup)

__all__ = ["TABLE", "Builder", "MinMaxResult", "Unavailable", "Unsupported", "fmt_target",
           "lookup", "is_value", "entries_by_kind"]


def entries_by_kind():
    """{"function": n, "method": n, "module": n}: table size by key kind
    ("function" counts torch/operator/F callables and torch.Tensor.* functions)."""
    kinds = {"function": 0, "method": 0, "module": 0}
    for k in TABLE:
        if isinstance(k, str):
            kinds["method"] += 1
        elif isinstance(k, type):
            kinds["module"] += 1
        else:
            kinds["function"] += 1
    return kinds
