"""_dyn_graph.py - the OutputGraph of the bytecode capture (issue 6): the
adapter between the symbolic evaluator (python/src/dyn_*.c) and issue 4's
mapping table and FX bridge.

While a frame is traced, every tensor operation is recorded twice at once:
- as a node of a torch.fx.Graph (placeholders for graph inputs, get_attr on
  a root nn.Module for parameters/buffers/global tensors, call_function /
  call_method / call_module), which is what gets compiled at the end
  (ptc.from_fx, or the GraphModule itself for backend "eager");
- through the issue-4 converters on a ptc Builder (a trace-time _C.Graph),
  which gives each value its metadata (shape, dtype) and tells at once when
  an op cannot be mapped (Unsupported with the converter's reason; the FX
  node is then not added).

Dynamic dims of inputs are symbols of the trace graph ("s<input>_<dim>");
sizes derived from them are SymProxy objects (FX nodes: x.size(d),
operator.add/mul/..., so they can be op arguments and graph outputs).
Every decision taken on a symbolic size (a comparison, int(), a converter
specialising) is a guard of the trace graph; shape_guard() compiles them
into one Python callable over the input tensors.

Views: a result that eager returns as a view/alias of its first argument
(view, transpose, basic indexing, same-dtype casts, ...) records
`proxy.alias = (callable, args)`; dyn_output.c rebuilds such values by
replaying the call on the real base, so aliasing is as in eager across graph
breaks and in return values. In-place writes to a view or to a tensor that
has views are Unsupported (the graph computes views as copies), as are
writes to parameters/buffers and to inputs sharing memory with another
input (entries whose graph writes an input also guard that the inputs are
disjoint).

Autograd: an op traced in grad mode on a tensor that requires grad (input,
parameter, module parameter) makes compile() return the GraphModule itself
(with set_grad_enabled nodes where the traced grad mode changes), since ptc
computes no gradients; grad_params() lists the tensors whose requires_grad
flag the entry then guards. Otherwise the graph goes through ptc.from_fx
(parameters are borrowed constants: contiguous cpu tensors are read live,
others are copied when compiled).
"""
import builtins
import operator

import torch
import torch.fx

from . import _C
from ._mapping import Builder, MinMaxResult, Unavailable, Unsupported, fmt_target, lookup

__all__ = ["OutputGraph", "Proxy", "SymProxy"]

# errors a converter may raise for an argument form it cannot map
_CONV_ERRORS = (Unsupported, TypeError, ValueError, IndexError, _C.Error, NotImplementedError,
                RuntimeError, AttributeError, KeyError, ZeroDivisionError, OverflowError)

# call targets whose result may alias their input (in-place writes through
# them are refused, as in ptc.from_fx)
_ALIAS_NAMES = {
    "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "transpose",
    "transpose_", "permute", "t", "narrow", "select", "expand", "expand_as", "squeeze",
    "unsqueeze", "split", "split_with_sizes", "chunk", "unbind", "contiguous", "detach", "to",
    "type", "type_as", "float", "double", "half", "bfloat16", "long", "int", "short", "char",
    "byte", "bool", "movedim", "moveaxis", "swapaxes", "swapdims", "as_strided", "broadcast_to",
    "dropout", "adjoint", "getitem", "getattr", "__getitem__", "view_as_real", "diagonal",
    "squeeze_", "unsqueeze_", "identity", "slice", "_unsafe_view", "alias", "T", "mT",
}

# elementwise binary ops whose Python-scalar operand may be a symbolic size
_ARITH = set()
for _n in ("add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "pow",
           "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
           "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
           "__rpow__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "add_", "sub_", "mul_",
           "div_", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"):
    _ARITH.add(_n)
    for _ns in (torch, torch.Tensor):
        if getattr(_ns, _n, None) is not None:
            _ARITH.add(getattr(_ns, _n))
for _op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
            operator.mod, operator.pow, operator.iadd, operator.isub, operator.imul,
            operator.itruediv, operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
            operator.ge):
    _ARITH.add(_op)

# calls whose eager result is always a view of their first argument
_VIEW_OPS = {"view", "view_as", "transpose", "permute", "t", "unsqueeze", "squeeze", "select",
             "narrow", "expand", "expand_as", "unflatten", "movedim", "moveaxis", "swapaxes",
             "swapdims", "diagonal", "detach", "alias", "as_strided", "adjoint", "mT", "T",
             "view_as_real", "unfold"}
# casts that return the tensor itself when the dtype does not change
_CAST_OPS = {"to", "type", "float", "double", "half", "bfloat16", "int", "long", "short",
             "char", "byte", "bool", "type_as"}


# calls whose eager result may be a view (reshape, contiguous...): rebuilt by
# replaying them too, which is exact because a tensor with views is never
# written in place inside the graph (the replay sees the same data)
_VIEW_OPS |= {"reshape", "reshape_as", "flatten", "contiguous", "broadcast_to", "ravel"}
# calls returning a tuple of views of their first argument
_SPLIT_OPS = {"split", "chunk", "unbind", "split_with_sizes", "tensor_split", "hsplit", "vsplit"}


def _replay_item(fn, i, *args):
    """Item i of fn(*args) (a split/chunk/unbind view, replayed)."""
    return fn(*args)[i]


def _replay_target(kind, target, args, kwargs):
    """(name, callable) of a call the runner may replay in eager on its real
    first argument, or None."""
    if kind == "call_module" or kwargs or not args or not isinstance(args[0], Proxy):
        return None
    if isinstance(args[0].value, Unavailable):
        return None
    if kind == "call_method":
        fn = getattr(torch.Tensor, target, None)
        return (target, fn) if fn is not None else None
    name = getattr(target, "__name__", "")
    if target is operator.getitem:
        return ("getitem", target)
    if getattr(torch, name, None) is not target and getattr(torch.Tensor, name, None) is not target:
        return None
    return (name, target)


def _basic_index(idx):
    """Basic indexing (ints, slices, None, Ellipsis; sizes): a view."""
    items = idx if isinstance(idx, tuple) else (idx,)
    for it in items:
        if it is None or it is Ellipsis or isinstance(it, SymProxy):
            continue
        if isinstance(it, int) and not isinstance(it, bool):
            continue
        if isinstance(it, slice) and all(
                x is None or isinstance(x, SymProxy) or
                (isinstance(x, int) and not isinstance(x, bool))
                for x in (it.start, it.stop, it.step)):
            continue
        return False
    return True


_SYM_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
            "%": operator.mod}
_CMP_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}


class Proxy:
    """A tensor of the graph. node: its torch.fx.Node; value: the ptc Value
    (shape/dtype) or a ptc.Unavailable; input_index: graph input number or
    -1; param: the real tensor for add_param proxies (else None);
    requires_grad, device: metadata."""
    __slots__ = ("node", "value", "input_index", "param", "requires_grad", "device", "alias",
                 "has_views", "__weakref__")

    def __init__(self, node, value, device, requires_grad=False, input_index=-1, param=None):
        self.node = node
        self.value = value
        self.device = device
        self.requires_grad = requires_grad
        self.input_index = input_index
        self.param = param
        # (callable, args): eager returns a view/alias of args[0] here; the
        # runner replays the call on the real base so aliasing is kept
        self.alias = None
        self.has_views = False  # some other Proxy is a view of this one

    def __repr__(self):
        v = self.value
        if isinstance(v, Unavailable):
            return "Proxy(%s, unavailable)" % self.node.name
        return "Proxy(%s, %s%s)" % (self.node.name, str(v.dtype).replace("torch.", ""),
                                    list(v.shape))


class SymProxy:
    """A dynamic size: node (FX node computing it), sym (_C.SymInt of the
    trace graph), expr (its expression over the input symbols
    s<input>_<dim>, Python syntax)."""
    __slots__ = ("node", "sym", "__weakref__")

    def __init__(self, node, sym):
        self.node = node
        self.sym = sym

    @property
    def expr(self):
        return str(self.sym)

    @property
    def hint(self):
        return self.sym.hint

    def __repr__(self):
        return "SymProxy(%s, hint=%d)" % (self.sym, self.sym.hint)


def _storage_ptr(t):
    st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return st.data_ptr()


def _overlap(a, b):
    """Whether two tensors share storage (conservative: same storage)."""
    if a is b:
        return False
    try:
        return _storage_ptr(a) == _storage_ptr(b) and a.numel() > 0 and b.numel() > 0
    except (RuntimeError, NotImplementedError):
        return True


def _disjoint(written, inputs):
    """No input written in place (positions `written`) shares memory with
    the input at another position; the same tensor passed at two positions
    counts as overlapping (the entry was traced with distinct tensors)."""
    for i in written:
        w = inputs[i]
        for j, t in enumerate(inputs):
            if j != i and (t is w or _overlap(w, t)):
                return False
    return True


def _layout(t):
    return (t.data_ptr(), t.stride(), t.dtype)


def _same_layout(consts, layouts):
    """Every borrowed constant still has the memory, strides and dtype it
    had at compile time."""
    for t, lay in zip(consts, layouts):
        if _layout(t) != lay:
            return False
    return True


def _ceildiv(a, b):
    return -(-a // b)


def _modidx(x, d, k):
    return (x // d) % k


class OutputGraph:
    """See the module comment and the brief's API block."""

    def __init__(self, backend="cpu", mode=None, device=None):
        self.backend = backend
        self.mode = mode
        self.graph = torch.fx.Graph()
        self.root = torch.nn.Module()
        self._tg = _C.Graph()
        self._b = Builder(self._tg, device)
        self._device_set = device is not None
        self.inputs = []          # the input tensors, in add_input order
        self.input_names = []
        self.dynamic = set()      # (input index, dim) traced as symbols
        self._placeholders = []
        self._params = {}         # id(tensor) -> (tensor, Proxy)
        self._modules = {}        # id(module) -> (module, name)
        self._attr_names = set()
        self._aux = set()         # FX nodes we may drop when unused (sizes, getitem)
        self._symbols = {}        # symbol name -> (input index, dim)
        self.n_ops = 0
        # grad mode of the ops being recorded (dyn_eval.c sets it at with-blocks)
        self.grad_enabled = torch.is_grad_enabled()
        self.initial_grad = self.grad_enabled
        self.needs_autograd = False  # an op ran in grad mode on a tensor requiring grad
        self.mutated_inputs = set()  # input indexes written in place
        self._compiled = False

    # ---- inputs ---------------------------------------------------------------------
    def _set_device(self, t):
        if not self._device_set:
            self._b.device = t.device
            self._device_set = True
        elif t.device != self._b.device and t.dim() != 0:
            raise Unsupported("tensors on several devices in one graph (%s and %s)"
                              % (self._b.device, t.device))

    def _insert_point(self):
        if self._placeholders:
            return self.graph.inserting_after(self._placeholders[-1])
        first = next(iter(self.graph.nodes), None)
        if first is None:
            return self.graph.inserting_after(None)
        return self.graph.inserting_before(first)

    def add_input(self, tensor, name, dynamic_dims=()):
        """A graph input (placeholder number len(inputs)). dynamic_dims: dims
        traced as symbols (those of size >= 2)."""
        if not isinstance(tensor, torch.Tensor) or type(tensor) not in (
                torch.Tensor, torch.nn.Parameter):
            raise Unsupported("graph input %s is a %s (plain tensors only)"
                              % (name, type(tensor).__name__))
        self._set_device(tensor)
        i = len(self.inputs)
        pname = self._b.unique_name("a%d_%s" % (i, name))
        shape, dyn = [], False
        for d, s in enumerate(tensor.shape):
            if d in dynamic_dims and s >= 2:
                sym_name = "s%d_%d" % (i, d)
                shape.append(self._tg.add_symbol(sym_name, int(s)))
                self._symbols[sym_name] = (i, d)
                self.dynamic.add((i, d))
                dyn = True
            else:
                shape.append(int(s))
        strides = None if dyn or tensor.is_contiguous() else list(tensor.stride())
        try:
            value = self._tg.add_input(pname, tensor.dtype, shape, strides)
        except (_C.Error, TypeError, ValueError) as e:
            raise Unsupported("graph input %s: %s" % (name, e))
        if strides is not None:
            self._b.strided_inputs.add(value.id)
        with self._insert_point():
            node = self.graph.placeholder(pname)
        self._placeholders.append(node)
        self.inputs.append(tensor)
        self.input_names.append(name)
        return Proxy(node, value, tensor.device, bool(tensor.requires_grad), input_index=i)

    def add_param(self, tensor, name):
        """A module parameter/buffer or other tensor read from outside the
        frame's arguments: a get_attr constant (the same tensor object)."""
        hit = self._params.get(id(tensor))
        if hit is not None and hit[0] is tensor:
            return hit[1]
        if type(tensor) not in (torch.Tensor, torch.nn.Parameter):
            raise Unsupported("tensor %s is a %s (plain tensors only)" % (name, type(tensor).__name__))
        self._set_device(tensor)
        attr = self._b.unique_name("p_" + name)
        try:
            value = self._b.constant(tensor, attr)
        except (_C.Error, TypeError, ValueError, RuntimeError) as e:
            raise Unsupported("tensor %s: %s" % (name, e))
        if isinstance(tensor, torch.nn.Parameter):
            self.root.register_parameter(attr, tensor)
        else:
            self.root.register_buffer(attr, tensor, persistent=False)
        self._attr_names.add(attr)
        node = self.graph.get_attr(attr)
        p = Proxy(node, value, tensor.device, bool(tensor.requires_grad), param=tensor)
        self._params[id(tensor)] = (tensor, p)
        return p

    # ---- argument mapping -----------------------------------------------------------------
    def _map_args(self, a, fx):
        """Nested args -> (ptc values for the converter) or (FX args)."""
        if isinstance(a, Proxy):
            if fx:
                return a.node
            if isinstance(a.value, Unavailable):
                raise Unsupported(a.value.why)
            return a.value
        if isinstance(a, SymProxy):
            return a.node if fx else a.sym
        if isinstance(a, torch.Tensor):
            return self._map_args(self.add_param(a, "const"), fx)
        if isinstance(a, tuple):
            r = tuple(self._map_args(x, fx) for x in a)
            if hasattr(a, "_fields") and not isinstance(a, torch.Size):
                return type(a)(*r)
            return r
        if isinstance(a, list):
            return [self._map_args(x, fx) for x in a]
        if isinstance(a, dict):
            return {k: self._map_args(v, fx) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self._map_args(a.start, fx), self._map_args(a.stop, fx),
                         self._map_args(a.step, fx))
        return a

    def _arg_device(self, args):
        found = []

        def walk(a):
            if isinstance(a, Proxy):
                found.append(a)
            elif isinstance(a, (tuple, list)):
                for x in a:
                    walk(x)
            elif isinstance(a, dict):
                for x in a.values():
                    walk(x)
        walk(args)
        dev = found[0].device if found else self._b.device
        # as eager autograd: such graphs are compiled as the GraphModule
        # itself (ptc computes no gradients)
        rg = bool(self.grad_enabled) and any(p.requires_grad for p in found)
        return dev, rg

    # ---- ops ------------------------------------------------------------------------------
    def call_function(self, target, args, kwargs):
        return self._call("call_function", target, target, None, args, kwargs)

    def call_method(self, name, args, kwargs):
        if not args or not isinstance(args[0], Proxy):
            raise Unsupported("method .%s on a non-tensor" % name)
        return self._call("call_method", name, name, None, args, kwargs)

    def call_module(self, module, args, kwargs):
        return self._call("call_module", None, type(module), module, args, kwargs)

    @staticmethod
    def _module_tensors(module):
        return list(module.parameters()) + list(module.buffers())

    def _module_name(self, module):
        hit = self._modules.get(id(module))
        if hit is not None and hit[0] is module:
            return hit[1]
        name = self._b.unique_name("m_" + type(module).__name__.lower())
        self.root.add_module(name, module)
        self._modules[id(module)] = (module, name)
        return name

    def _call(self, kind, fx_target, key, module, args, kwargs):
        args = tuple(args)
        kwargs = dict(kwargs or {})
        args = self._symbolic_scalars(key, args)
        desc = fmt_target(key)
        conv = lookup(key)
        if conv is None:
            raise Unsupported("%s: no ptc mapping for this target" % desc)
        if module is not None:
            check = getattr(conv, "check_module", None)
            why = check(module) if check is not None else None
            if why:
                raise Unsupported("%s: %s" % (desc, why))
        vargs = self._map_args(args, False)
        vkwargs = self._map_args(kwargs, False)
        call_args = ((module,) + vargs) if module is not None else vargs
        mut = getattr(conv, "mutates", None)
        idx = mut(call_args, vkwargs) if mut is not None else None
        orig = ((None,) + args) if module is not None else args
        mtarget = orig[idx] if idx is not None and idx < len(orig) else None
        if isinstance(mtarget, Proxy):
            self._check_mutation(mtarget)
            if mtarget.input_index >= 0:
                i = mtarget.input_index
                if any(j != i and _overlap(self.inputs[i], t) for j, t in enumerate(self.inputs)):
                    raise Unsupported("in-place write to graph input %s, which shares memory "
                                      "with another input" % self.input_names[i])
        if module is not None:
            fx_target = self._module_name(module)
            self._b.scope = fx_target
        try:
            res = conv(self._b, *call_args, **vkwargs)
        except _CONV_ERRORS as e:
            why = str(e) if isinstance(e, Unsupported) else "%s: %s" % (type(e).__name__, e)
            raise Unsupported("%s: %s" % (desc, why)) from None
        finally:
            self._b.scope = ""
        if isinstance(mtarget, Proxy) and isinstance(res, _C.Value):
            old = mtarget.value
            if mtarget.input_index >= 0 and (
                    [str(s) for s in old.shape] != [str(s) for s in res.shape] or
                    old.dtype != res.dtype):
                raise Unsupported("%s: in-place op changes the shape or dtype of graph input %s"
                                  % (desc, self.input_names[mtarget.input_index]))
        fx_args = self._map_args(args, True)
        fx_kwargs = self._map_args(kwargs, True)
        if not _has_graph_value(res) and not getattr(conv, "returns_none", False) and \
                not isinstance(mtarget, Proxy):
            return res  # a Python value computed at trace time (dtype, ndim...)
        node = self.graph.create_node(kind, fx_target, fx_args, fx_kwargs)
        dev, rg = self._arg_device(args)
        if module is not None and self.grad_enabled and not rg:
            rg = any(t.requires_grad for t in self._module_tensors(module))
        node.meta["ptc_grad"] = bool(self.grad_enabled)
        if rg:
            self.needs_autograd = True
        if isinstance(mtarget, Proxy) and isinstance(res, _C.Value):
            self.n_ops += 1
            if mtarget.input_index >= 0:
                self.mutated_inputs.add(mtarget.input_index)
            mtarget.value = res
            return None if getattr(conv, "returns_none", False) else mtarget
        if getattr(conv, "returns_none", False):
            self.n_ops += 1
            return None
        out = self._wrap(res, node, dev, rg, top=True)
        if isinstance(out, Proxy) and isinstance(res, _C.Value):
            out.alias = self._alias_of(kind, fx_target, args, kwargs, res)
            if out.alias is not None:
                args[0].has_views = True
        elif isinstance(out, (tuple, list)):
            self._split_aliases(kind, fx_target, args, kwargs, out)
        if _has_tensor(res):
            self.n_ops += 1
        else:
            self._aux.add(node)
        return out

    def _symbolic_scalars(self, key, args):
        """tensor <op> size with a symbolic size: the converters would
        specialise the size (a Python scalar operand is baked into the
        graph), so the size becomes a 0-d tensor of the result dtype
        computed at run time (ones([s]).sum()); dtypes follow eager's
        tensor-with-int promotion."""
        try:
            if key not in _ARITH:
                return args
        except TypeError:  # unhashable target
            return args
        if not any(isinstance(a, SymProxy) for a in args):
            return args
        like = next((a for a in args if isinstance(a, Proxy)), None)
        if like is None or isinstance(like.value, Unavailable):
            return args
        dt = Builder.promote_scalar(like.value.dtype, 1)
        out = []
        for a in args:
            if isinstance(a, SymProxy):
                ones = self.call_function(torch.ones, ((a,),), {"dtype": torch.int64})
                a = self.call_method("sum", (ones,), {})
                if dt != torch.int64:
                    a = self.call_method("to", (a, dt), {})
            out.append(a)
        return tuple(out)

    def _alias_of(self, kind, target, args, kwargs, res):
        """(callable, args) when eager's result of this call is always a view
        or the input itself (so it must be rebuilt by replaying the call on
        the real base, not returned as a fresh tensor), else None."""
        named = _replay_target(kind, target, args, kwargs)
        if named is None:
            return None
        name, fn = named
        base = args[0]
        if name in _VIEW_OPS:
            pass
        elif name in _CAST_OPS:
            if res.dtype != base.value.dtype or any(
                    isinstance(a, (torch.device, str)) for a in args[1:]):
                return None  # a real conversion: a copy
        elif name in ("getitem", "__getitem__"):
            if not _basic_index(args[1] if len(args) > 1 else None):
                return None
        else:
            return None
        return (fn, args)

    def _split_aliases(self, kind, target, args, kwargs, items):
        """Items of split/chunk/unbind results are views of args[0]: each
        is rebuilt as fn(*args)[i] on the real base."""
        named = _replay_target(kind, target, args, kwargs)
        if named is None or named[0] not in _SPLIT_OPS:
            return
        found = False
        for i, it in enumerate(items):
            if isinstance(it, Proxy) and isinstance(it.value, _C.Value):
                it.alias = (_replay_item, (named[1], i) + tuple(args))
                found = True
        if found:
            args[0].has_views = True

    def _check_mutation(self, p):
        if p.alias is not None or p.has_views:
            # the graph computes views as copies: a write through a view, or
            # to a tensor whose views are used later, would not reach them
            raise Unsupported("in-place write to a tensor that is a view or has views")
        n = p.node
        if p.param is not None or n.op == "get_attr":
            raise Unsupported("in-place update of module state or a global tensor "
                              "(ptc graphs do not mutate parameters or buffers)")
        if n.op in ("call_function", "call_method"):
            t = n.target
            name = t if isinstance(t, str) else getattr(t, "__name__", "")
            if name in _ALIAS_NAMES or t in (operator.getitem, builtins.getattr):
                raise Unsupported("in-place write through %s (a view or alias of another "
                                  "tensor)" % fmt_target(t))

    def _wrap(self, res, node, dev, rg, top=False):
        """Converter result -> Proxy / SymProxy / constant (getitem nodes for
        the items of a tuple result)."""
        if isinstance(res, (_C.Value, Unavailable)):
            return Proxy(node, res, dev, rg)
        if isinstance(res, _C.SymInt):
            return SymProxy(node, res)
        if isinstance(res, (tuple, list)) and _has_graph_value(res):
            items = []
            for i, r in enumerate(res):
                if _has_graph_value(r):
                    sub = self.graph.call_function(operator.getitem, (node, i))
                    self._aux.add(sub)
                    items.append(self._wrap(r, sub, dev, rg))
                else:
                    items.append(r)
            if isinstance(res, MinMaxResult):
                return MinMaxResult(*items)
            return list(items) if isinstance(res, list) else tuple(items)
        return res

    # ---- tensor metadata --------------------------------------------------------------------
    def _size_node(self, p, d):
        node = self.graph.call_method("size", (p.node, d))
        self._aux.add(node)
        return node

    def _dim(self, p, d, s):
        if isinstance(s, _C.SymInt):
            return SymProxy(self._size_node(p, d), s)
        return int(s)

    def tensor_attr(self, proxy, name):
        """Metadata of a tensor: shape (tuple of int|SymProxy), dtype, device,
        ndim, requires_grad, is_cuda, is_floating_point / is_complex (the
        answer of the method call), T, mT (new proxies), numel. Raises
        Unsupported for anything else (data, grad, ...)."""
        if not isinstance(proxy, Proxy):
            raise Unsupported("tensor attribute %s of a non-tensor" % name)
        v = proxy.value
        if isinstance(v, Unavailable):
            raise Unsupported(v.why)
        if name == "shape":
            return tuple(self._dim(proxy, d, s) for d, s in enumerate(v.shape))
        if name == "dtype":
            return v.dtype
        if name == "device":
            return proxy.device
        if name == "ndim":
            return len(v.shape)
        if name == "requires_grad":
            return bool(proxy.requires_grad)
        if name == "is_cuda":
            return proxy.device.type == "cuda"
        if name == "is_floating_point":
            return v.dtype.is_floating_point
        if name == "is_complex":
            return v.dtype.is_complex
        if name == "numel":
            n = 1
            for d, s in enumerate(v.shape):
                n = self.sym_binop("*", n, self._dim(proxy, d, s))
            return n
        if name == "T":
            nd = len(v.shape)
            if nd < 2:
                return proxy
            return self.call_method("permute", (proxy,) + tuple(range(nd - 1, -1, -1)), {})
        if name == "mT":
            if len(v.shape) < 2:
                raise Unsupported("tensor.mT of a tensor with fewer than 2 dimensions")
            return self.call_method("transpose", (proxy, -2, -1), {})
        raise Unsupported("tensor attribute .%s" % name)

    # ---- sizes ----------------------------------------------------------------------------------
    def _sym_value(self, a):
        if isinstance(a, SymProxy):
            return a.sym
        if isinstance(a, bool) or not isinstance(a, int):
            raise Unsupported("size arithmetic on a %s" % type(a).__name__)
        return a

    def sym_binop(self, op, a, b):
        """a op b for op in + - * // % ** (ints or SymProxy)."""
        if not isinstance(a, SymProxy) and not isinstance(b, SymProxy):
            if op == "**":
                return a ** b
            return _SYM_OPS[op](a, b)
        if op == "**":
            if isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 16:
                r = 1
                for _ in range(b):
                    r = self.sym_binop("*", r, a)
                return r
            return self.sym_int(a) ** self.sym_int(b)
        if op not in _SYM_OPS:
            raise Unsupported("size operation %s" % op)
        x, y = self._sym_value(a), self._sym_value(b)
        try:
            r = self._tg.sym(op, x, y)
        except (_C.Error, ValueError) as e:
            raise Unsupported("size arithmetic %s: %s" % (op, e))
        if not isinstance(r, _C.SymInt):
            return int(r)
        fa = a.node if isinstance(a, SymProxy) else a
        fb = b.node if isinstance(b, SymProxy) else b
        node = self.graph.call_function(_SYM_OPS[op], (fa, fb))
        self._aux.add(node)
        return SymProxy(node, r)

    def sym_compare(self, op, a, b):
        """bool(a op b); records a shape guard when it depends on a symbol."""
        if not isinstance(a, SymProxy) and not isinstance(b, SymProxy):
            return bool(_CMP_OPS[op](a, b))
        try:
            return bool(self._tg.decide(op, self._sym_value(a), self._sym_value(b)))
        except _C.Error as e:
            raise Unsupported("size comparison %s: %s" % (op, e))

    def sym_int(self, s):
        """The value of a size, specialised (guard `s == value`)."""
        if not isinstance(s, SymProxy):
            return s
        return int(s.sym)

    def shape_guards(self):
        """The guards decided on symbolic sizes (strings over s<i>_<d>)."""
        return list(self._tg.guards())

    def shape_guard(self):
        """callable(*input tensors) -> bool checking every shape guard, or
        None when there are none."""
        guards = self.shape_guards()
        if self.mutated_inputs and len(self.inputs) > 1:
            # inputs written in place must not share memory with other inputs
            # (the graph reads every input before its write-back)
            guards.append("_disjoint((%s), (%s))" % (
                "".join("%d, " % i for i in sorted(self.mutated_inputs)),
                "".join("t%d, " % i for i in range(len(self.inputs)))))
        ns = {"ceildiv": _ceildiv, "modidx": _modidx, "min": min, "max": max,
              "_disjoint": _disjoint}
        if self.backend != "eager":
            # compiled graphs borrow parameters' memory at compile time:
            # `p.data = other` (same Parameter object, new storage or strides)
            # must recompile, never read freed or stale memory
            consts = [t for t, _ in self._params.values()]
            for m, _ in self._modules.values():
                consts.extend(self._module_tensors(m))
            if consts:
                ns["_consts"] = tuple(consts)
                ns["_layout"] = tuple(_layout(t) for t in consts)
                ns["_same_layout"] = _same_layout
                guards.append("_same_layout(_consts, _layout)")
            # constants the compiled graph holds as copies (device backends,
            # folded conv + batch norm): an in-place update must recompile
            from .fx import same_versions, snapshot_constants
            snap = snapshot_constants(self._pick_backend(), consts, self.graph, self.root)
            if snap:
                ns["_snap"] = tuple(snap)
                ns["_snap_versions"] = tuple(t._version for t in snap)
                ns["_same_versions"] = same_versions
                guards.append("_same_versions(_snap, _snap_versions)")
        if not guards:
            return None
        params = ", ".join("t%d" % i for i in range(len(self.inputs)))
        lines = ["def shape_guard(%s):" % params]
        for sym, (i, d) in sorted(self._symbols.items()):
            lines.append("    %s = t%d.shape[%d]" % (sym, i, d))
        lines.append("    return " + " and ".join("(%s)" % g for g in guards))
        src = "\n".join(lines) + "\n"
        exec(compile(src, "<ptc shape guard>", "exec"), ns)
        fn = ns["shape_guard"]
        fn.source = src
        return fn

    # ---- compile ---------------------------------------------------------------------------------
    def _pick_backend(self):
        """The backend of this graph: backend "auto" is cuda when a graph
        input or constant is a CUDA tensor (and ptc's cuda backend is
        available), else cpu; others as given."""
        if self.backend != "auto":
            return self.backend
        tensors = list(self.inputs) + [t for t, _ in self._params.values()]
        for m, _ in self._modules.values():
            tensors.extend(self._module_tensors(m))
        if any(t.device.type == "cuda" for t in tensors) and _cuda_backend_usable():
            return "cuda"
        return "cpu"

    def grad_params(self):
        """Parameters/constants whose requires_grad flag the entry must
        guard (the compile decision depends on it): all of them when some op
        was traced in grad mode, else none."""
        if not (self.initial_grad or any(n.meta.get("ptc_grad") for n in self.graph.nodes)):
            return []
        ts = [t for t, _ in self._params.values()]
        for m, _ in self._modules.values():
            ts.extend(self._module_tensors(m))
        return ts

    def _grad_mode_nodes(self):
        """torch._C._set_grad_enabled calls where the traced grad mode
        changes, and back to the entry mode before the output."""
        mode = self.initial_grad
        for node in list(self.graph.nodes):
            want = node.meta.get("ptc_grad")
            if node.op == "output":
                want = self.initial_grad
            if want is None or want == mode:
                continue
            with self.graph.inserting_before(node):
                self.graph.call_function(torch._C._set_grad_enabled, (want,))
            mode = want

    def _drop_unused_aux(self):
        for node in reversed(list(self.graph.nodes)):
            if node in self._aux and not node.users:
                self.graph.erase_node(node)

    def compile(self, outputs):
        """Compiles the graph with `outputs` (Proxy|SymProxy list). Returns
        (callable(*input tensors) -> tuple, info dict); the callable is None
        when there is nothing to run (no op, no output)."""
        if self._compiled:
            raise RuntimeError("OutputGraph.compile called twice")
        self._compiled = True
        outs = []
        for o in outputs:
            if isinstance(o, Proxy):
                if isinstance(o.value, Unavailable):
                    raise Unsupported(o.value.why)
                outs.append(o.node)
            elif isinstance(o, SymProxy):
                outs.append(o.node)
            else:
                raise TypeError("OutputGraph.compile: output %r is not a Proxy/SymProxy" % (o,))
        self.graph.output(tuple(outs))
        self._drop_unused_aux()
        gm = torch.fx.GraphModule(self.root, self.graph, class_name="PtcCaptured")
        info = {"graph": gm.code, "ops": self.n_ops, "backend": self.backend,
                "inputs": list(self.input_names), "outputs": len(outs),
                "shape_guards": self.shape_guards()}
        if not outs and self.n_ops == 0:
            return None, info  # nothing to run (the runner only rebuilds values)
        if self.needs_autograd:
            # gradients are needed: the GraphModule itself runs, with the
            # grad mode each op was traced under
            info["autograd"] = True
            self._grad_mode_nodes()
            gm = torch.fx.GraphModule(self.root, self.graph, class_name="PtcCaptured")
            info["graph"] = gm.code
            return gm.forward, info
        if self.backend == "eager":
            return gm.forward, info
        from .fx import from_fx
        backend = self._pick_backend()
        info["backend"] = backend
        cg = from_fx(gm, list(self.inputs), backend=backend, mode=self.mode,
                     dynamic_dims=frozenset(self.dynamic), guard_versions=False)
        return _direct(cg), info


def _cuda_backend_usable():
    try:
        have = {name: ok for name, ok, _why in _C.backends()}
        return bool(have.get("cuda")) and torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - no CUDA build of torch
        return False


def _direct(cg):
    """The C CompiledFunction inside a from_fx result when calling it
    directly gives the same tuple (outputs are all fresh tensors in order,
    no size outputs, no write-back of mutated inputs): one Python call less
    per run. Otherwise the CompiledGraph itself."""
    specs = list(cg._specs.values())
    if len(specs) != 1 or cg._const_idx or cg._sources:
        return cg
    t = specs[0].template
    if t is None or t.writebacks or t.tree != ("seq", "tuple", [("slot", k) for k in range(t.n_slots)]):
        return cg
    return specs[0].compiled


def _has_graph_value(r):
    if isinstance(r, (_C.Value, _C.SymInt, Unavailable)):
        return True
    if isinstance(r, (tuple, list)):
        return any(_has_graph_value(x) for x in r)
    return False


def _has_tensor(r):
    if isinstance(r, (_C.Value, Unavailable)):
        return True
    if isinstance(r, (tuple, list)):
        return any(_has_tensor(x) for x in r)
    return False
