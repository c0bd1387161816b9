/* dyn_call_int.h - private header shared by dyn_call.c (dispatch, tensors,
 * operators) and dyn_call_obj.c (builtins, containers, modules, objects):
 * the cache of Python objects they compare against and the helpers that
 * convert trackers to OutputGraph arguments and back. Not part of dyn.h's
 * contract. */
#ifndef PTC_DYN_CALL_INT_H
#define PTC_DYN_CALL_INT_H

#include "dyn.h"

/* dyn_var.c may land after this file: referenced weakly so that ptc._C
 * links and imports before it does (nothing here runs without a trace,
 * which needs dyn_eval.c/dyn_var.c). */
#pragma weak DynVar_Type
#pragma weak dyn_var_new
#pragma weak dyn_var_const
#pragma weak dyn_var_seq
#pragma weak dyn_var_as_const
#pragma weak dyn_var_kind_name
#pragma weak dyn_wrap

/** Objects looked up once (strong references, process lifetime). */
typedef struct dc_cache {
  int ready;
  PyObject *builtins_mod, *operator_mod, *math_mod, *torch, *map_core, *dyn_graph;
  PyObject *tensor_type, *parameter_type, *nn_module, *module_list, *sequential, *module_dict;
  PyObject *torch_size, *torch_dtype, *torch_device;
  PyObject *lookup, *unsupported, *c_error, *fmt_target, *proxy_type, *symproxy_type;
  PyObject *no_grad, *enable_grad, *set_grad_enabled;
  PyObject *module_call, *module_getattr, *module_setattr; /* nn.Module's */
  PyObject *global_hooks;  /* tuple of torch's global module hook dicts */
  PyObject *builtin_ids;   /* dict builtin function/type -> index (enum dc_builtin) */
  PyObject *operator_ids;  /* dict operator function -> index (enum dc_opfn) */
  PyObject *safe_types;    /* tuple of types whose constants are computed on for real */
} dc_cache;
extern dc_cache dcc;

/** Fills dcc on first use. 0 / -1. */
int dc_init(void);

/** dyn_break with a Python-style format (PyUnicode_FromFormat: %s %d %S %R %U). */
int dc_break(dyn_tx* tx, const char* fmt, ...);
/** Turns the pending Python exception (from the OutputGraph or a real call
 * on constants) into a break "what: Type: message". Returns DYN_CALL_BREAK. */
int dc_break_exc(dyn_tx* tx, const char* what);

/** 1 when `o` is a constant of a safe builtin type (None/bool/int/float/
 * complex/str/bytes/Ellipsis/torch dtype|device|Size, tuples/frozensets of
 * those) that may be computed on for real. */
int dc_safe_const(PyObject* o);
/** 1 when v (recursively through containers) holds a tensor or SymInt. */
int dc_has_graph_value(DynVar* v);

/** Tracker -> argument for the OutputGraph (Proxy, SymProxy, constants,
 * nested tuples/lists/dicts/slices). DYN_CALL_OK (*out new ref),
 * DYN_CALL_BREAK or DYN_CALL_ERROR. `what` names the call for messages. */
int dc_to_py(dyn_tx* tx, DynVar* v, const char* what, PyObject** out);
/** OutputGraph result -> tracker (a returned Proxy that belongs to an
 * existing tracker gives that tracker back). */
int dc_from_py(dyn_tx* tx, PyObject* r, DynVar** out);
/** og.<meth>(first, args, kwargs) where `first` may be NULL (call_method:
 * og.call_method(name, args, kwargs) passes the name as first). Args are
 * trackers (array) and kwargs a dict {str: DynVar} or NULL. */
int dc_og_call(dyn_tx* tx, const char* meth, PyObject* first, DynVar* const* args,
               Py_ssize_t n, PyObject* kwargs, const char* what, DynVar** out);
/** og.tensor_attr(proxy, name) -> tracker. */
int dc_tensor_attr(dyn_tx* tx, DynVar* t, const char* name, DynVar** out);
/** og.sym_int(s) for a DV_SYMINT, the value for an int DV_CONST: *out new
 * ref to a Python int. Break for other kinds. */
int dc_as_int(dyn_tx* tx, DynVar* v, PyObject** out);
/** Constant of a var for real computation: DV_CONST value (safe types),
 * DV_SYMINT specialised through og.sym_int, containers of those rebuilt;
 * NULL without exception (*brk = 1 not set) when not constant. */
int dc_const_of(dyn_tx* tx, DynVar* v, PyObject** out);

/** Items of an iterable tracker (new list of DynVar; for a DV_LIST this is
 * a copy). BREAK when unknown. */
int dc_items(dyn_tx* tx, DynVar* v, PyObject** out);
/** A new created tracker of kind TUPLE/LIST from a list of DynVar. */
DynVar* dc_seq(int kind, PyObject* list);
/** Registers iterator `it` made from a snapshot of list/dict `container`
 * (0 / -1); dc_check_watch breaks when `container` is about to change while
 * such an iterator is not exhausted. */
int dc_watch(dyn_tx* tx, DynVar* container, DynVar* it);
int dc_check_watch(dyn_tx* tx, DynVar* container);
/** Records that a pre-existing container/object changed (effect tuple once
 * for lists/dicts). 0 / -1. */
int dc_mark_mutated(dyn_tx* tx, DynVar* v);
/** Wraps a real value read from `base_var` at attribute `name` (source
 * ATTR(base source or CONST(base value), name)). */
int dc_wrap_attr(dyn_tx* tx, DynVar* base_var, PyObject* base_obj, PyObject* name,
                 PyObject* value, DynVar** out);
/** A source for a var's real object: its source, or a CONST source of its
 * value; NULL (no exception) when it has neither. New reference. */
DynSource* dc_source_of(DynVar* v);
/** The real object of a tracker with a source (evaluated against the root
 * frame) or its value; new reference or NULL without exception. */
PyObject* dc_real_of(dyn_tx* tx, DynVar* v);

/** The real function `f` called with the constant values of the args;
 * the result must be a safe constant. */
int dc_call_real_consts(dyn_tx* tx, PyObject* f, DynVar* const* a, Py_ssize_t n, PyObject* kwargs,
                        const char* what, DynVar** out);

/* shared by dyn_call.c and dyn_call_ops.c */
#define DC_MAX_UNROLL 100000
extern const char* const dc_bin_names[13];  /* operator.add ... by BINARY_OP arg */
extern const char* const dc_ibin_names[13]; /* operator.iadd ... */
extern const char* const dc_bin_syms[13];   /* "+" ... */
extern const char* const dc_cmp_names[6];   /* operator.lt ... by Py_LT.. */
extern const char* const dc_cmp_syms[6];
/** v is an int constant (not bool). */
int dc_is_int_const(DynVar* v);
/** dc_og_call, then the checks of an in-place op when the result is the
 * Proxy of one of the positional tensor args (the op wrote into it). */
int dc_og_call_checked(dyn_tx* tx, const char* meth, PyObject* first, DynVar* const* args,
                       Py_ssize_t n, PyObject* kwargs, const char* what, DynVar** out);
/** Breaks when an in-place write to tensor `t` cannot be expressed (a view
 * of it exists in the graph; an input that requires grad in grad mode). */
int dc_check_inplace(dyn_tx* tx, DynVar* t, const char* what);
/** *out = a bool constant. */
int dc_bool_out(int b, DynVar** out);
/** Result `r` (new ref or NULL with an exception) of a real computation on
 * constants -> a constant tracker, or a break (exception / unsafe result). */
int dc_const_result(dyn_tx* tx, PyObject* r, const char* what, DynVar** out);

/* small helpers of dyn_call_obj.c / dyn_call_builtins.c */
static inline int nkw(PyObject* kwargs) { return kwargs ? (int)PyDict_Size(kwargs) : 0; }


static inline int out_const(PyObject* v, DynVar** out) {
  *out = dyn_var_const(v);
  return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
}
static inline int out_bool(int b, DynVar** out) { return out_const(b ? Py_True : Py_False, out); }
static inline int out_ssize(Py_ssize_t n, DynVar** out) {
  PyObject* v = PyLong_FromSsize_t(n);
  if (!v) return DYN_CALL_ERROR;
  int rc = out_const(v, out);
  Py_DECREF(v);
  return rc;
}

static inline int out_iter(PyObject* items, const char* marker, DynVar** out) {
  PyObject* m = marker ? PyUnicode_FromString(marker) : NULL;
  *out = dyn_var_new(DV_ITER, NULL, items, m, NULL);
  Py_XDECREF(m);
  if (!*out) return DYN_CALL_ERROR;
  (*out)->index = 0;
  (*out)->created = 1;
  return DYN_CALL_OK;
}

static inline DynVar* tuple_of(DynVar* a, DynVar* b) {
  PyObject* l = PyList_New(2);
  if (!l) return NULL;
  Py_INCREF(a);
  Py_INCREF(b);
  PyList_SET_ITEM(l, 0, (PyObject*)a);
  PyList_SET_ITEM(l, 1, (PyObject*)b);
  DynVar* t = dc_seq(DV_TUPLE, l);
  Py_DECREF(l);
  return t;
}

static inline DynVar* new_dict(PyObject* items) {
  DynVar* d = dyn_var_new(DV_DICT, NULL, items, NULL, NULL);
  if (d) d->created = 1;
  return d;
}

/** A dict view (d.keys()...): a DV_TUPLE whose extra is the view's name. */
static inline int dc_is_view(DynVar* v) {
  return v->kind == DV_TUPLE && v->extra && PyUnicode_Check(v->extra);
}
/** Refreshes the views of dict tracker d after a mutation. 0 / -1. */
int dc_dict_changed(DynVar* d);
/** type t uses object's __getattribute__ (slot "__getattribute__") or
 * __setattr__ ("__setattr__"), or the generic C slots. */
int dc_uses_object_slot(PyTypeObject* t, const char* slot);

/* dyn_call_obj.c / dyn_call_builtins.c */
/** Names of the builtins dc_call_builtin knows (NULL-terminated; index =
 * the value in dcc.builtin_ids). */
extern const char* const dc_builtin_names[];
/** A DV_FUNCTION for function `func` found as attribute `name` of
 * type(obj) (identity-guarded through type(source) when obj has one). */
int dc_class_func(dyn_tx* tx, DynVar* obj, PyObject* func, PyObject* name, DynVar** out);
/** Builtin function / type calls (len, isinstance, range, list(...)...):
 * returns -2 when `fn` is not a builtin handled there. */
int dc_call_builtin(dyn_tx* tx, PyObject* fn, DynVar* const* args, Py_ssize_t n,
                    PyObject* kwargs, DynVar** out);
/** Methods of builtin containers and constants called as descriptors
 * (list.append(l, x), str.join(s, xs)...): -2 when not handled there. */
int dc_call_descr(dyn_tx* tx, PyObject* fn, DynVar* const* args, Py_ssize_t n,
                  PyObject* kwargs, DynVar** out);
/** Calls of nn.Module trackers (mapped -> og.call_module, else inline forward). */
int dc_call_module(dyn_tx* tx, DynVar* m, DynVar* const* args, Py_ssize_t n, PyObject* kwargs,
                   DynVar** out, PyObject** inline_args, PyObject** inline_kwargs);
/** nn.Module.__call__(m, args...) called explicitly (super().__call__(...)
 * inside a module class's own __call__ override): the module-call path of
 * dc_call_module without looking at type(m).__call__. */
int dc_call_module_base(dyn_tx* tx, DynVar* m, DynVar* const* args, Py_ssize_t n,
                        PyObject* kwargs, DynVar** out, PyObject** inline_args,
                        PyObject** inline_kwargs);
/** A dict/list/tuple/set subclass instance (DV_OBJECT, no unusable reason)
 * whose truth value and length are the C base type's (no Python
 * __bool__/__len__): 1 with its real length in *n (no user code runs), 0
 * when not such an object, -1 on error. The caller installs the guard. */
int dc_base_len(DynVar* v, Py_ssize_t* n);
/** Attribute read of an object whose class defines a Python __getattribute__
 * or __getattr__ (e.g. a config mapping attribute names): the value is read
 * for real; a constant (None/bool/int/float/str/..., tuples of those) or a
 * class/Python module/function is wrapped with an ATTR source (the guard
 * re-reads it through the same getattr). *missing = 1 (no var, no break,
 * DYN_CALL_OK) when the read raised AttributeError; other values break. */
int dc_getattr_real(dyn_tx* tx, DynVar* obj, PyObject* name, DynVar** out, int* missing);
/** Attribute reads / writes of modules and user objects. */
int dc_getattr_object(dyn_tx* tx, DynVar* obj, PyObject* name, DynVar** out);
int dc_setattr_object(dyn_tx* tx, DynVar* obj, PyObject* name, DynVar* value);
/** Attribute read of builtin containers/constants/namedtuples (methods -> DV_METHOD). */
int dc_getattr_builtin(dyn_tx* tx, DynVar* obj, PyObject* name, DynVar** out);
/** ModuleList/Sequential/ModuleDict methods (__len__, __iter__, keys,
 * values, items, __getitem__, __contains__) on a module tracker; -2 when
 * `f` is not one of them. */
int dc_call_container_method(dyn_tx* tx, PyObject* f, DynVar* const* a, Py_ssize_t n,
                             PyObject* kwargs, DynVar** out);
/** Calling a namedtuple class (-2 when cls is not one). */
int dc_call_namedtuple(dyn_tx* tx, PyObject* cls, DynVar* const* a, Py_ssize_t n, PyObject* kwargs,
                       DynVar** out);
/** Submodules of a ModuleList/Sequential/ModuleDict in order (new list of
 * DynVar), with a keys guard on its _modules; BREAK for other modules. */
int dc_module_children(dyn_tx* tx, DynVar* m, PyObject** out, PyObject** keys);

#endif /* PTC_DYN_CALL_INT_H */
