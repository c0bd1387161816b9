/* dyn_call.c - the "Calls" part of the bytecode capture (issue 6): dyn_call
 * dispatch, tensor methods and attributes through the OutputGraph
 * (python/ptc/_dyn_graph.py), trackers <-> OutputGraph values, iteration
 * items, getattr/setattr dispatch and dyn_break. Operators, comparisons,
 * truth, iteration and subscripts are in dyn_call_ops.c; builtins,
 * container methods, nn.Modules and user objects in dyn_call_obj.c (shared
 * helpers: dyn_call_int.h). Soundness first:
 * whatever is not known to behave exactly as Python would is a graph break
 * with a precise reason. */
#include "dyn_call_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

dc_cache dcc;

/* ---------------------------------------------------------------------------
 * Cache of Python objects
 * ------------------------------------------------------------------------- */
static PyObject* imp_attr(const char* mod, const char* attr) {
  PyObject* m = PyImport_ImportModule(mod);
  if (!m) return NULL;
  if (!attr) return m;
  PyObject* r = PyObject_GetAttrString(m, attr);
  Py_DECREF(m);
  return r;
}

/* operator functions: code = kind * 100 + arg */
enum { OPK_BIN = 1, OPK_UN = 2, OPK_CMP = 3, OPK_SUBSCR = 4, OPK_SETITEM = 5, OPK_CONTAINS = 6,
       OPK_IS = 7, OPK_ISNOT = 8, OPK_TRUTH = 9 };
const char* const dc_bin_names[13] = {"add", "and_", "floordiv", "lshift", "matmul", "mul",
                                          "mod", "or_", "pow", "rshift", "sub", "truediv", "xor"};
const char* const dc_ibin_names[13] = {"iadd", "iand", "ifloordiv", "ilshift", "imatmul",
                                           "imul", "imod", "ior", "ipow", "irshift", "isub",
                                           "itruediv", "ixor"};
const char* const dc_bin_syms[13] = {"+", "&", "//", "<<", "@", "*", "%", "|", "**", ">>",
                                         "-", "/", "^"};
const char* const dc_cmp_names[6] = {"lt", "le", "eq", "ne", "gt", "ge"};
const char* const dc_cmp_syms[6] = {"<", "<=", "==", "!=", ">", ">="};

static int add_opid(PyObject* d, const char* name, int code) {
  PyObject* f = PyObject_GetAttrString(dcc.operator_mod, name);
  if (!f) {
    PyErr_Clear();
    return 0;
  }
  PyObject* c = PyLong_FromLong(code);
  int r = c ? PyDict_SetItem(d, f, c) : -1;
  Py_XDECREF(c);
  Py_DECREF(f);
  return r;
}

static int build_operator_ids(void) {
  PyObject* d = PyDict_New();
  if (!d) return -1;
  dcc.operator_ids = d;
  for (int i = 0; i < 13; i++)
    if (add_opid(d, dc_bin_names[i], OPK_BIN * 100 + i) < 0 ||
        add_opid(d, dc_ibin_names[i], OPK_BIN * 100 + 13 + i) < 0)
      return -1;
  for (int i = 0; i < 6; i++)
    if (add_opid(d, dc_cmp_names[i], OPK_CMP * 100 + i) < 0) return -1;
  if (add_opid(d, "neg", OPK_UN * 100 + (DYN_OP_NEG - DYN_OP_NOT)) < 0 ||
      add_opid(d, "pos", OPK_UN * 100 + (DYN_OP_POS - DYN_OP_NOT)) < 0 ||
      add_opid(d, "invert", OPK_UN * 100 + (DYN_OP_INVERT - DYN_OP_NOT)) < 0 ||
      add_opid(d, "inv", OPK_UN * 100 + (DYN_OP_INVERT - DYN_OP_NOT)) < 0 ||
      add_opid(d, "not_", OPK_UN * 100 + 0) < 0 || add_opid(d, "truth", OPK_TRUTH * 100) < 0 ||
      add_opid(d, "getitem", OPK_SUBSCR * 100) < 0 ||
      add_opid(d, "setitem", OPK_SETITEM * 100) < 0 ||
      add_opid(d, "contains", OPK_CONTAINS * 100) < 0 || add_opid(d, "is_", OPK_IS * 100) < 0 ||
      add_opid(d, "is_not", OPK_ISNOT * 100) < 0)
    return -1;
  return 0;
}

int dc_init(void) {
  if (dcc.ready) return 0;
#define GET(field, mod, attr)                       \
  do {                                              \
    if (!dcc.field && !(dcc.field = imp_attr(mod, attr))) return -1; \
  } while (0)
  GET(builtins_mod, "builtins", NULL);
  GET(operator_mod, "operator", NULL);
  GET(math_mod, "math", NULL);
  GET(torch, "torch", NULL);
  GET(map_core, "ptc._map_core", NULL);
  GET(dyn_graph, "ptc._dyn_graph", NULL);
  GET(tensor_type, "torch", "Tensor");
  GET(parameter_type, "torch.nn", "Parameter");
  GET(nn_module, "torch.nn", "Module");
  GET(module_list, "torch.nn", "ModuleList");
  GET(sequential, "torch.nn", "Sequential");
  GET(module_dict, "torch.nn", "ModuleDict");
  GET(torch_size, "torch", "Size");
  GET(torch_dtype, "torch", "dtype");
  GET(torch_device, "torch", "device");
  GET(lookup, "ptc._map_core", "lookup");
  GET(unsupported, "ptc._map_core", "Unsupported");
  GET(c_error, "ptc._C", "Error");
  GET(fmt_target, "ptc._map_core", "fmt_target");
  GET(proxy_type, "ptc._dyn_graph", "Proxy");
  GET(symproxy_type, "ptc._dyn_graph", "SymProxy");
  GET(no_grad, "torch", "no_grad");
  GET(enable_grad, "torch", "enable_grad");
  GET(set_grad_enabled, "torch", "set_grad_enabled");
#undef GET
  if (!dcc.module_call) {
    dcc.module_call = PyObject_GetAttrString(dcc.nn_module, "__call__");
    dcc.module_getattr = dcc.module_call ? PyObject_GetAttrString(dcc.nn_module, "__getattr__") : NULL;
    dcc.module_setattr = dcc.module_getattr ? PyObject_GetAttrString(dcc.nn_module, "__setattr__") : NULL;
    if (!dcc.module_setattr) return -1;
  }
  if (!dcc.global_hooks) {
    PyObject* mm = PyImport_ImportModule("torch.nn.modules.module");
    if (!mm) return -1;
    PyObject* l = PyList_New(0);
    const char* names[] = {"_global_forward_hooks", "_global_forward_pre_hooks",
                           "_global_backward_hooks", "_global_backward_pre_hooks"};
    for (int i = 0; l && i < 4; i++) {
      PyObject* h = PyObject_GetAttrString(mm, names[i]);
      if (!h) {
        PyErr_Clear();
        continue;
      }
      if (PyList_Append(l, h) < 0) Py_CLEAR(l);
      Py_DECREF(h);
    }
    Py_DECREF(mm);
    if (!l) return -1;
    dcc.global_hooks = PyList_AsTuple(l);
    Py_DECREF(l);
    if (!dcc.global_hooks) return -1;
  }
  if (!dcc.safe_types) {
    PyObject* layout = PyObject_GetAttrString(dcc.torch, "strided");
    PyObject* mf = layout ? PyObject_GetAttrString(dcc.torch, "contiguous_format") : NULL;
    if (!mf) {
      Py_XDECREF(layout);
      return -1;
    }
    dcc.safe_types = PyTuple_Pack(4, dcc.torch_dtype, dcc.torch_device, (PyObject*)Py_TYPE(layout),
                                  (PyObject*)Py_TYPE(mf));
    Py_DECREF(layout);
    Py_DECREF(mf);
    if (!dcc.safe_types) return -1;
  }
  if (!dcc.operator_ids && build_operator_ids() < 0) return -1;
  if (!dcc.builtin_ids) {
    PyObject* d = PyDict_New();
    if (!d) return -1;
    for (int i = 0; dc_builtin_names[i]; i++) {
      PyObject* f = PyObject_GetAttrString(dcc.builtins_mod, dc_builtin_names[i]);
      if (!f) {
        PyErr_Clear();
        continue;
      }
      PyObject* c = PyLong_FromLong(i);
      int r = c ? PyDict_SetItem(d, f, c) : -1;
      Py_XDECREF(c);
      Py_DECREF(f);
      if (r < 0) {
        Py_DECREF(d);
        return -1;
      }
    }
    dcc.builtin_ids = d;
  }
  dcc.ready = 1;
  return 0;
}

/* ---------------------------------------------------------------------------
 * Breaks
 * ------------------------------------------------------------------------- */
int dyn_break(dyn_tx* tx, const char* fmt, ...) {
  if (!tx->brk.active) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tx->brk.reason, sizeof tx->brk.reason, fmt, ap);
    va_end(ap);
    tx->brk.active = 1;
  }
  return DYN_CALL_BREAK;
}

int dc_break(dyn_tx* tx, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  PyObject* s = PyUnicode_FromFormatV(fmt, ap);
  va_end(ap);
  const char* c = s ? PyUnicode_AsUTF8(s) : NULL;
  if (!c) PyErr_Clear();
  dyn_break(tx, "%s", c ? c : fmt);
  Py_XDECREF(s);
  return DYN_CALL_BREAK;
}

int dc_break_exc(dyn_tx* tx, const char* what) {
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  if (!t) return dc_break(tx, "%s: failed", what);
  if (!PyErr_GivenExceptionMatches(t, PyExc_Exception)) {
    PyErr_Restore(t, v, tb); /* KeyboardInterrupt & co: a real error */
    return DYN_CALL_ERROR;
  }
  PyErr_NormalizeException(&t, &v, &tb);
  PyObject* msg = v ? PyObject_Str(v) : NULL;
  if (!msg) PyErr_Clear();
  int unsup = dcc.unsupported && PyErr_GivenExceptionMatches(t, dcc.unsupported);
  if (unsup)
    dc_break(tx, "%s", msg ? PyUnicode_AsUTF8(msg) : "unsupported");
  else
    dc_break(tx, "%s: %s: %s", what, ((PyTypeObject*)t)->tp_name,
             msg ? PyUnicode_AsUTF8(msg) : "?");
  if (PyErr_Occurred()) PyErr_Clear();
  Py_XDECREF(msg);
  Py_XDECREF(t);
  Py_XDECREF(v);
  Py_XDECREF(tb);
  return DYN_CALL_BREAK;
}

/* ---------------------------------------------------------------------------
 * Classification helpers
 * ------------------------------------------------------------------------- */
int dc_safe_const(PyObject* o) {
  if (o == Py_None || o == Py_Ellipsis || PyBool_Check(o) || PyLong_CheckExact(o) ||
      PyFloat_CheckExact(o) || PyComplex_CheckExact(o) || PyUnicode_CheckExact(o) ||
      PyBytes_CheckExact(o) || PyRange_Check(o))
    return 1;
  if (dcc.safe_types) {
    Py_ssize_t n = PyTuple_GET_SIZE(dcc.safe_types);
    for (Py_ssize_t i = 0; i < n; i++)
      if ((PyObject*)Py_TYPE(o) == PyTuple_GET_ITEM(dcc.safe_types, i)) return 1;
  }
  if (PyTuple_CheckExact(o) || (dcc.torch_size && (PyObject*)Py_TYPE(o) == dcc.torch_size)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++)
      if (!dc_safe_const(PyTuple_GET_ITEM(o, i))) return 0;
    return 1;
  }
  if (PyFrozenSet_CheckExact(o)) {
    PyObject* it = PyObject_GetIter(o);
    PyObject* k;
    int ok = it != NULL;
    while (ok && (k = PyIter_Next(it))) {
      ok = dc_safe_const(k);
      Py_DECREF(k);
    }
    Py_XDECREF(it);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      ok = 0;
    }
    return ok;
  }
  return 0;
}

int dc_is_int_const(DynVar* v) {
  return v->kind == DV_CONST && PyLong_Check(v->value) && !PyBool_Check(v->value);
}

static int has_items_list(DynVar* v) {
  return (v->kind == DV_TUPLE || v->kind == DV_LIST || v->kind == DV_NAMEDTUPLE ||
          v->kind == DV_SET || v->kind == DV_SLICE) &&
         v->items && PyList_Check(v->items);
}

int dc_has_graph_value(DynVar* v) {
  if (v->kind == DV_TENSOR || v->kind == DV_SYMINT) return 1;
  if (has_items_list(v)) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v->items); i++)
      if (dc_has_graph_value((DynVar*)PyList_GET_ITEM(v->items, i))) return 1;
  } else if (v->kind == DV_DICT && v->items && PyDict_Check(v->items)) {
    Py_ssize_t pos = 0;
    PyObject *k, *val;
    while (PyDict_Next(v->items, &pos, &k, &val))
      if (dc_has_graph_value((DynVar*)val)) return 1;
  }
  return 0;
}

DynVar* dc_seq(int kind, PyObject* list) { return dyn_var_seq(kind, list); }

DynSource* dc_source_of(DynVar* v) {
  if (v->source) {
    Py_INCREF(v->source);
    return v->source;
  }
  if (v->value && (v->kind == DV_CONST || v->kind == DV_MODULE || v->kind == DV_OBJECT))
    return dyn_source_const(v->value);
  return NULL;
}

PyObject* dc_real_of(dyn_tx* tx, DynVar* v) {
  if (v->kind != DV_TENSOR && v->kind != DV_SYMINT && v->value &&
      (v->kind == DV_CONST || v->kind == DV_MODULE || v->kind == DV_OBJECT ||
       v->kind == DV_FUNCTION || v->kind == DV_RANGE)) {
    Py_INCREF(v->value);
    return v->value;
  }
  if (v->source && tx->view) {
    PyObject* r = dyn_source_eval(v->source, tx->view);
    if (!r) PyErr_Clear();
    return r;
  }
  return NULL;
}

/* ---------------------------------------------------------------------------
 * Trackers <-> OutputGraph values
 * ------------------------------------------------------------------------- */
static PyObject* owners(dyn_tx* tx) {
  PyObject* d = PyObject_GetAttrString(tx->og, "_dyn_owners");
  if (d) return d;
  PyErr_Clear();
  d = PyDict_New();
  if (d && PyObject_SetAttrString(tx->og, "_dyn_owners", d) < 0) Py_CLEAR(d);
  return d;
}

static int register_owner(dyn_tx* tx, DynVar* v) {
  PyObject* d = owners(tx);
  if (!d) return -1;
  PyObject* k = PyLong_FromVoidPtr(v->value);
  int r = -1;
  if (k) {
    PyObject* cur = PyDict_GetItemWithError(d, k);
    if (cur || PyErr_Occurred()) r = cur ? 0 : -1;
    else r = PyDict_SetItem(d, k, (PyObject*)v);
  }
  Py_XDECREF(k);
  Py_DECREF(d);
  return r;
}

int dc_to_py(dyn_tx* tx, DynVar* v, const char* what, PyObject** out) {
  *out = NULL;
  switch (v->kind) {
    case DV_TENSOR:
      if (register_owner(tx, v) < 0) return DYN_CALL_ERROR;
      /* fallthrough */
    case DV_SYMINT:
    case DV_RANGE:
      Py_INCREF(v->value);
      *out = v->value;
      return DYN_CALL_OK;
    case DV_CONST:
      Py_INCREF(v->value);
      *out = v->value;
      return DYN_CALL_OK;
    case DV_TUPLE:
    case DV_LIST:
    case DV_NAMEDTUPLE: {
      Py_ssize_t n = PyList_GET_SIZE(v->items);
      PyObject* l = PyList_New(n);
      if (!l) return DYN_CALL_ERROR;
      for (Py_ssize_t i = 0; i < n; i++) {
        PyObject* x;
        int r = dc_to_py(tx, (DynVar*)PyList_GET_ITEM(v->items, i), what, &x);
        if (r != DYN_CALL_OK) {
          Py_DECREF(l);
          return r;
        }
        PyList_SET_ITEM(l, i, x);
      }
      if (v->kind == DV_LIST) {
        *out = l;
        return DYN_CALL_OK;
      }
      PyObject* t = PyList_AsTuple(l);
      Py_DECREF(l);
      if (!t) return DYN_CALL_ERROR;
      if (v->kind == DV_NAMEDTUPLE) {
        PyObject* nt = PyObject_Call(v->value, t, NULL);
        Py_DECREF(t);
        if (!nt) return dc_break_exc(tx, what);
        *out = nt;
        return DYN_CALL_OK;
      }
      *out = t;
      return DYN_CALL_OK;
    }
    case DV_DICT: {
      PyObject* d = PyDict_New();
      Py_ssize_t pos = 0;
      PyObject *k, *val;
      while (d && PyDict_Next(v->items, &pos, &k, &val)) {
        PyObject* x;
        int r = dc_to_py(tx, (DynVar*)val, what, &x);
        if (r != DYN_CALL_OK) {
          Py_DECREF(d);
          return r;
        }
        if (PyDict_SetItem(d, k, x) < 0) Py_CLEAR(d);
        Py_DECREF(x);
      }
      if (!d) return DYN_CALL_ERROR;
      *out = d;
      return DYN_CALL_OK;
    }
    case DV_SLICE: {
      PyObject* p[3] = {NULL, NULL, NULL};
      for (int i = 0; i < 3; i++) {
        int r = dc_to_py(tx, (DynVar*)PyList_GET_ITEM(v->items, i), what, &p[i]);
        if (r != DYN_CALL_OK) {
          for (int j = 0; j < i; j++) Py_DECREF(p[j]);
          return r;
        }
      }
      *out = PySlice_New(p[0], p[1], p[2]);
      for (int j = 0; j < 3; j++) Py_DECREF(p[j]);
      return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
    }
    default:
      return dc_break(tx, "%s: a %s argument is not supported", what, dyn_var_kind_name(v));
  }
}

static DynVar* find_tensor_tracker(dyn_tx* tx, PyObject* proxy) {
  if (!tx->wrapped || !PyDict_Check(tx->wrapped)) return NULL;
  Py_ssize_t pos = 0;
  PyObject *k, *val;
  while (PyDict_Next(tx->wrapped, &pos, &k, &val))
    if (Py_TYPE(val) == &DynVar_Type && ((DynVar*)val)->kind == DV_TENSOR &&
        ((DynVar*)val)->value == proxy)
      return (DynVar*)val;
  return NULL;
}

static int from_proxy(dyn_tx* tx, PyObject* r, DynVar** out) {
  PyObject* d = owners(tx);
  if (!d) return DYN_CALL_ERROR;
  PyObject* k = PyLong_FromVoidPtr(r);
  PyObject* cur = k ? PyDict_GetItemWithError(d, k) : NULL;
  if (!cur && !PyErr_Occurred()) cur = (PyObject*)find_tensor_tracker(tx, r);
  int rc = DYN_CALL_OK;
  if (cur) {
    Py_INCREF(cur);
    *out = (DynVar*)cur;
    if (PyDict_SetItem(d, k, cur) < 0) rc = DYN_CALL_ERROR;
  } else if (PyErr_Occurred()) {
    rc = DYN_CALL_ERROR;
  } else {
    *out = dyn_var_new(DV_TENSOR, r, NULL, NULL, NULL);
    if (!*out || PyDict_SetItem(d, k, (PyObject*)*out) < 0) rc = DYN_CALL_ERROR;
  }
  Py_XDECREF(k);
  Py_DECREF(d);
  if (rc != DYN_CALL_OK) Py_CLEAR(*out);
  return rc;
}

static int list_from_py(dyn_tx* tx, PyObject* seq, PyObject** out) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject* l = PyList_New(n);
  if (!l) return DYN_CALL_ERROR;
  for (Py_ssize_t i = 0; i < n; i++) {
    DynVar* x;
    int r = dc_from_py(tx, PySequence_Fast_GET_ITEM(seq, i), &x);
    if (r != DYN_CALL_OK) {
      Py_DECREF(l);
      return r;
    }
    PyList_SET_ITEM(l, i, (PyObject*)x);
  }
  *out = l;
  return DYN_CALL_OK;
}

int dc_from_py(dyn_tx* tx, PyObject* r, DynVar** out) {
  *out = NULL;
  if ((PyObject*)Py_TYPE(r) == dcc.proxy_type) return from_proxy(tx, r, out);
  if ((PyObject*)Py_TYPE(r) == dcc.symproxy_type) {
    *out = dyn_var_new(DV_SYMINT, r, NULL, NULL, NULL);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  if (dc_safe_const(r)) {
    *out = dyn_var_const(r);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  if (PyTuple_Check(r) || PyList_CheckExact(r)) {
    PyObject* items;
    int rc = list_from_py(tx, r, &items);
    if (rc != DYN_CALL_OK) return rc;
    if (PyList_CheckExact(r)) {
      *out = dc_seq(DV_LIST, items);
    } else if ((PyObject*)Py_TYPE(r) == dcc.torch_size) {
      *out = dc_seq(DV_TUPLE, items);
      if (*out) {
        Py_INCREF(dcc.torch_size);
        (*out)->extra = dcc.torch_size;
      }
    } else if (PyTuple_CheckExact(r)) {
      *out = dc_seq(DV_TUPLE, items);
    } else if (PyObject_HasAttrString((PyObject*)Py_TYPE(r), "_fields")) {
      *out = dyn_var_new(DV_NAMEDTUPLE, (PyObject*)Py_TYPE(r), items, NULL, NULL);
      if (*out) (*out)->created = 1;
    } else {
      Py_DECREF(items);
      return dc_break(tx, "unexpected %s value from the graph", Py_TYPE(r)->tp_name);
    }
    Py_DECREF(items);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  return dc_break(tx, "unexpected %s value from the graph", Py_TYPE(r)->tp_name);
}

/* A tensor shape (tuple of int|SymProxy) -> torch.Size constant, or a
 * DV_TUPLE marked torch.Size when some dims are symbolic. */
static int shape_var(dyn_tx* tx, PyObject* shape, DynVar** out) {
  int all_int = 1;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++)
    if (!PyLong_Check(PyTuple_GET_ITEM(shape, i))) all_int = 0;
  if (all_int) {
    PyObject* s = PyObject_CallOneArg(dcc.torch_size, shape);
    if (!s) return DYN_CALL_ERROR;
    *out = dyn_var_const(s);
    Py_DECREF(s);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  PyObject* items;
  int rc = list_from_py(tx, shape, &items);
  if (rc != DYN_CALL_OK) return rc;
  *out = dc_seq(DV_TUPLE, items);
  Py_DECREF(items);
  if (!*out) return DYN_CALL_ERROR;
  Py_INCREF(dcc.torch_size);
  (*out)->extra = dcc.torch_size;
  return DYN_CALL_OK;
}

int dc_tensor_attr(dyn_tx* tx, DynVar* t, const char* name, DynVar** out) {
  *out = NULL;
  if (register_owner(tx, t) < 0) return DYN_CALL_ERROR;
  PyObject* r = PyObject_CallMethod(tx->og, "tensor_attr", "Os", t->value, name);
  if (!r) {
    char what[96];
    snprintf(what, sizeof what, "tensor.%s", name);
    return dc_break_exc(tx, what);
  }
  int rc = (strcmp(name, "shape") == 0 && PyTuple_Check(r)) ? shape_var(tx, r, out)
                                                             : dc_from_py(tx, r, out);
  Py_DECREF(r);
  return rc;
}

int dc_og_call(dyn_tx* tx, const char* meth, PyObject* first, DynVar* const* args,
               Py_ssize_t n, PyObject* kwargs, const char* what, DynVar** out) {
  *out = NULL;
  PyObject* pa = PyTuple_New(n);
  PyObject* pk = PyDict_New();
  int rc = DYN_CALL_OK;
  if (!pa || !pk) rc = DYN_CALL_ERROR;
  for (Py_ssize_t i = 0; rc == DYN_CALL_OK && i < n; i++) {
    PyObject* x;
    rc = dc_to_py(tx, args[i], what, &x);
    if (rc == DYN_CALL_OK) PyTuple_SET_ITEM(pa, i, x);
  }
  if (rc == DYN_CALL_OK && kwargs) {
    Py_ssize_t pos = 0;
    PyObject *k, *val;
    while (rc == DYN_CALL_OK && PyDict_Next(kwargs, &pos, &k, &val)) {
      PyObject* x;
      rc = dc_to_py(tx, (DynVar*)val, what, &x);
      if (rc == DYN_CALL_OK) {
        if (PyDict_SetItem(pk, k, x) < 0) rc = DYN_CALL_ERROR;
        Py_DECREF(x);
      }
    }
  }
  PyObject* r = NULL;
  if (rc == DYN_CALL_OK) {
    r = PyObject_CallMethod(tx->og, meth, "OOO", first, pa, pk);
    if (!r) rc = dc_break_exc(tx, what);
  }
  if (rc == DYN_CALL_OK) rc = dc_from_py(tx, r, out);
  Py_XDECREF(r);
  Py_XDECREF(pa);
  Py_XDECREF(pk);
  return rc;
}

int dc_as_int(dyn_tx* tx, DynVar* v, PyObject** out) {
  *out = NULL;
  if (v->kind == DV_CONST && PyLong_Check(v->value)) {
    Py_INCREF(v->value);
    *out = v->value;
    return DYN_CALL_OK;
  }
  if (v->kind == DV_SYMINT) {
    PyObject* r = PyObject_CallMethod(tx->og, "sym_int", "O", v->value);
    if (!r) return dc_break_exc(tx, "int() of a dynamic size");
    if (!PyLong_Check(r)) {
      Py_DECREF(r);
      return dc_break(tx, "int() of a dynamic size gave a non-int");
    }
    *out = r;
    return DYN_CALL_OK;
  }
  return dc_break(tx, "expected an int, got a %s", dyn_var_kind_name(v));
}

int dc_const_of(dyn_tx* tx, DynVar* v, PyObject** out) {
  *out = NULL;
  if (v->kind == DV_CONST) {
    if (!dc_safe_const(v->value))
      return dc_break(tx, "operation on a %s constant", Py_TYPE(v->value)->tp_name);
    Py_INCREF(v->value);
    *out = v->value;
    return DYN_CALL_OK;
  }
  if (v->kind == DV_RANGE) {
    Py_INCREF(v->value);
    *out = v->value;
    return DYN_CALL_OK;
  }
  if (v->kind == DV_SYMINT) return dc_as_int(tx, v, out);
  if ((v->kind == DV_TUPLE || v->kind == DV_LIST) && v->items) {
    Py_ssize_t n = PyList_GET_SIZE(v->items);
    PyObject* t = PyTuple_New(n);
    if (!t) return DYN_CALL_ERROR;
    for (Py_ssize_t i = 0; i < n; i++) {
      PyObject* x;
      int r = dc_const_of(tx, (DynVar*)PyList_GET_ITEM(v->items, i), &x);
      if (r != DYN_CALL_OK) {
        Py_DECREF(t);
        return r;
      }
      PyTuple_SET_ITEM(t, i, x);
    }
    if (v->kind == DV_LIST) { /* a fresh list: the callee may keep or change it */
      PyObject* l = PySequence_List(t);
      Py_DECREF(t);
      if (!l) return DYN_CALL_ERROR;
      t = l;
    } else if (v->extra == dcc.torch_size) {
      PyObject* s = PyObject_CallOneArg(dcc.torch_size, t);
      Py_DECREF(t);
      if (!s) return DYN_CALL_ERROR;
      t = s;
    }
    *out = t;
    return DYN_CALL_OK;
  }
  return dc_break(tx, "operation on a %s (not a constant)", dyn_var_kind_name(v));
}

/* Iterators made from a snapshot of a list/dict (enumerate, zip, reversed,
 * iter(dict)) are watched: mutating the container while one of them is
 * still running would diverge from Python (which sees the change or raises
 * RuntimeError), so it breaks instead. */
int dc_watch(dyn_tx* tx, DynVar* container, DynVar* it) {
  if (container->kind != DV_LIST && container->kind != DV_DICT) return 0;
  PyObject* l = PyObject_GetAttrString(tx->og, "_dyn_watch");
  if (!l) {
    PyErr_Clear();
    l = PyList_New(0);
    if (!l || PyObject_SetAttrString(tx->og, "_dyn_watch", l) < 0) {
      Py_XDECREF(l);
      return -1;
    }
  }
  PyObject* pair = PyTuple_Pack(2, (PyObject*)container, (PyObject*)it);
  int r = pair ? PyList_Append(l, pair) : -1;
  Py_XDECREF(pair);
  Py_DECREF(l);
  return r;
}

int dc_check_watch(dyn_tx* tx, DynVar* container) {
  PyObject* l = PyObject_GetAttrString(tx->og, "_dyn_watch");
  if (!l) {
    PyErr_Clear();
    return DYN_CALL_OK;
  }
  int rc = DYN_CALL_OK;
  for (Py_ssize_t i = 0; PyList_Check(l) && i < PyList_GET_SIZE(l); i++) {
    PyObject* pair = PyList_GET_ITEM(l, i);
    DynVar* it = (DynVar*)PyTuple_GET_ITEM(pair, 1);
    if (PyTuple_GET_ITEM(pair, 0) == (PyObject*)container && it->items &&
        it->index < PyList_GET_SIZE(it->items)) {
      rc = dc_break(tx, "a %s mutated while an iterator over it is running", dyn_var_kind_name(container));
      break;
    }
  }
  Py_DECREF(l);
  return rc;
}

int dc_mark_mutated(dyn_tx* tx, DynVar* v) {
  if (!v->source || v->created) return 0;
  if (v->mutated) return 0;
  v->mutated = 1;
  const char* kind = v->kind == DV_LIST ? "list_replace" : v->kind == DV_DICT ? "dict_replace" : NULL;
  if (!kind) return 0;
  PyObject* e = Py_BuildValue("(sO)", kind, (PyObject*)v);
  if (!e) return -1;
  int r = PyList_Append(tx->side_effects, e);
  Py_DECREF(e);
  return r;
}

/* ---------------------------------------------------------------------------
 * Iteration items
 * ------------------------------------------------------------------------- */
static PyObject* consts_list(PyObject* iterable) {
  PyObject* seq = PySequence_List(iterable);
  if (!seq) return NULL;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seq); i++) {
    DynVar* c = dyn_var_const(PyList_GET_ITEM(seq, i));
    if (!c) {
      Py_DECREF(seq);
      return NULL;
    }
    PyList_SetItem(seq, i, (PyObject*)c);
  }
  return seq;
}


static int tensor_items(dyn_tx* tx, DynVar* t, PyObject** out) {
  DynVar* shape;
  int rc = dc_tensor_attr(tx, t, "shape", &shape);
  if (rc != DYN_CALL_OK) return rc;
  PyObject* sc = NULL;
  rc = dc_const_of(tx, shape, &sc);
  Py_DECREF(shape);
  if (rc != DYN_CALL_OK) return rc;
  if (PyTuple_GET_SIZE(sc) == 0) {
    Py_DECREF(sc);
    return dc_break(tx, "iteration over a 0-d tensor");
  }
  Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(sc, 0));
  Py_DECREF(sc);
  if (n < 0 || n > 4096) return dc_break(tx, "iteration over a tensor of %zd rows", n);
  PyObject* l = PyList_New(0);
  if (!l) return DYN_CALL_ERROR;
  for (Py_ssize_t i = 0; i < n; i++) {
    DynVar* k = NULL;
    PyObject* pi = PyLong_FromSsize_t(i);
    if (pi) k = dyn_var_const(pi);
    Py_XDECREF(pi);
    if (!k) {
      Py_DECREF(l);
      return DYN_CALL_ERROR;
    }
    DynVar* x;
    rc = dyn_subscr(tx, t, k, &x);
    Py_DECREF(k);
    if (rc != DYN_CALL_OK) {
      Py_DECREF(l);
      return rc;
    }
    PyList_Append(l, (PyObject*)x);
    Py_DECREF(x);
  }
  *out = l;
  return DYN_CALL_OK;
}

int dc_items(dyn_tx* tx, DynVar* v, PyObject** out) {
  *out = NULL;
  switch (v->kind) {
    case DV_TUPLE:
    case DV_LIST:
    case DV_NAMEDTUPLE:
    case DV_SET:
      *out = PyList_GetSlice(v->items, 0, PyList_GET_SIZE(v->items));
      return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
    case DV_ITER: {
      Py_ssize_t n = PyList_GET_SIZE(v->items);
      Py_ssize_t i = v->index < n ? v->index : n;
      *out = PyList_GetSlice(v->items, i, n);
      if (!(v->extra && PyUnicode_Check(v->extra))) v->index = n; /* list(it) consumes it */
      return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
    }
    case DV_DICT: {
      PyObject* keys = PyDict_Keys(v->items);
      if (!keys) return DYN_CALL_ERROR;
      *out = consts_list(keys);
      Py_DECREF(keys);
      return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
    }
    case DV_RANGE:
      if (PyObject_Length(v->value) > DC_MAX_UNROLL) return dc_break(tx, "range too long to unroll");
      *out = consts_list(v->value);
      return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
    case DV_CONST: {
      PyObject* c = v->value;
      if (PyTuple_Check(c) || PyUnicode_CheckExact(c) || PyBytes_CheckExact(c) ||
          PyFrozenSet_CheckExact(c) || PyRange_Check(c)) {
        if (PyObject_Length(c) > DC_MAX_UNROLL) return dc_break(tx, "sequence too long to unroll");
        *out = consts_list(c);
        return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
      }
      return dc_break(tx, "iteration over a %s", Py_TYPE(c)->tp_name);
    }
    case DV_MODULE: {
      PyObject* keys = NULL;
      int rc = dc_module_children(tx, v, out, &keys);
      if (rc != DYN_CALL_OK) return rc;
      if (PyObject_IsInstance(v->value, dcc.module_dict) == 1) {
        Py_DECREF(*out);
        *out = consts_list(keys);
      }
      Py_XDECREF(keys);
      return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
    }
    case DV_TENSOR:
      return tensor_items(tx, v, out);
    default:
      return dc_break(tx, "iteration over a %s", dyn_var_kind_name(v));
  }
}

/* ---------------------------------------------------------------------------
 * Tensors
 * ------------------------------------------------------------------------- */
static int in_list(const char* s, const char* const* l) {
  for (; *l; l++)
    if (strcmp(s, *l) == 0) return 1;
  return 0;
}

static const char* const tensor_break_methods[] = {
    "item", "tolist", "numpy", "backward", "__bool__", "__int__", "__float__", "__index__",
    "__complex__", "data_ptr", "register_hook", "retain_grad", "storage", "untyped_storage",
    "_storage", "set_", "resize_", "resize_as_", "share_memory_", "pin_memory", "record_stream",
    "__array__", "__reduce_ex__", "__deepcopy__", "__setstate__", "apply_", "map_", "map2_",
    "requires_grad_", "detach_", "__repr__", "__str__", "__format__", "__hash__",
    "__contains__", "stride", "is_contiguous", "storage_offset", "is_set_to", "is_pinned",
    "is_shared", "get_device", "__iter__", "__len__", "__dlpack__", "__dlpack_device__",
    "element_size", "__reversed__", "__getstate__", "__reduce__", "_version", NULL};

static const char* const tensor_break_attrs[] = {
    "data", "grad", "grad_fn", "_version", "is_leaf", "_base", "retains_grad", "output_nr",
    "_cdata", "names", "H", "mH", "_backward_hooks", "__dict__", "__class__", NULL};

static int kw_count(PyObject* kwargs) { return kwargs ? (int)PyDict_Size(kwargs) : 0; }

/* Checks an in-place write to tensor tracker `t` is expressible: no view of
 * it was taken in the graph, not an input requiring grad with grad mode on. */
int dc_check_inplace(dyn_tx* tx, DynVar* t, const char* what) {
  PyObject* rg = PyObject_GetAttrString(t->value, "requires_grad");
  PyObject* ii = rg ? PyObject_GetAttrString(t->value, "input_index") : NULL;
  if (!ii) {
    Py_XDECREF(rg);
    return DYN_CALL_ERROR;
  }
  int leaf_rg = PyObject_IsTrue(rg) == 1 && PyLong_AsLong(ii) >= 0 && tx->grad_enabled;
  Py_DECREF(rg);
  Py_DECREF(ii);
  if (leaf_rg)
    return dc_break(tx, "%s: in-place op on an input that requires grad", what);
  PyObject* node = PyObject_GetAttrString(t->value, "node");
  PyObject* users = node ? PyObject_GetAttrString(node, "users") : NULL;
  PyObject* alias = users ? PyObject_GetAttrString(dcc.dyn_graph, "_ALIAS_NAMES") : NULL;
  Py_XDECREF(node);
  if (!alias) {
    Py_XDECREF(users);
    return DYN_CALL_ERROR;
  }
  int rc = DYN_CALL_OK;
  PyObject* it = PyObject_GetIter(users);
  PyObject* u;
  while (rc == DYN_CALL_OK && it && (u = PyIter_Next(it))) {
    PyObject* tg = PyObject_GetAttrString(u, "target");
    PyObject* name = NULL;
    if (tg) {
      if (PyUnicode_Check(tg)) {
        name = tg;
        Py_INCREF(name);
      } else {
        name = PyObject_GetAttrString(tg, "__name__");
        if (!name) PyErr_Clear();
      }
    } else {
      PyErr_Clear();
    }
    if (name && PySet_Contains(alias, name) == 1)
      rc = dc_break(tx, "%s: in-place write to a tensor that has a view (%U) in the graph", what,
                    name);
    Py_XDECREF(name);
    Py_XDECREF(tg);
    Py_DECREF(u);
  }
  if (PyErr_Occurred() && rc == DYN_CALL_OK) rc = DYN_CALL_ERROR;
  Py_XDECREF(it);
  Py_DECREF(users);
  Py_DECREF(alias);
  return rc;
}

/* Result of an og call whose positional args were `args`: an in-place op
 * returns the Proxy of one of them (the same object, updated) -> checks. */
static int after_og(dyn_tx* tx, DynVar* const* args, Py_ssize_t n, DynVar* res, const char* what) {
  if (res->kind != DV_TENSOR) return DYN_CALL_OK;
  for (Py_ssize_t i = 0; i < n; i++)
    if (args[i]->kind == DV_TENSOR && args[i]->value == res->value)
      return dc_check_inplace(tx, args[i], what);
  return DYN_CALL_OK;
}

int dc_og_call_checked(dyn_tx* tx, const char* meth, PyObject* first, DynVar* const* args,
                           Py_ssize_t n, PyObject* kwargs, const char* what, DynVar** out) {
  int rc = dc_og_call(tx, meth, first, args, n, kwargs, what, out);
  if (rc != DYN_CALL_OK) return rc;
  rc = after_og(tx, args, n, *out, what);
  if (rc != DYN_CALL_OK) Py_CLEAR(*out);
  return rc;
}

static int dim_index(dyn_tx* tx, DynVar* shape, DynVar* d, DynVar** out) {
  return dyn_subscr(tx, shape, d, out);
}

static int tensor_method(dyn_tx* tx, PyObject* name, DynVar* const* args, Py_ssize_t n,
                         PyObject* kwargs, DynVar** out) {
  const char* nm = PyUnicode_AsUTF8(name);
  if (!nm) return DYN_CALL_ERROR;
  char what[128];
  snprintf(what, sizeof what, "Tensor.%s", nm);
  DynVar* self = args[0];
  if (in_list(nm, tensor_break_methods))
    return dc_break(tx, "Tensor.%s() is not capturable (needs real tensor data or state)", nm);
  if ((strcmp(nm, "size") == 0 || strcmp(nm, "shape") == 0) && kw_count(kwargs) == 0 && n <= 2) {
    DynVar* shape;
    int rc = dc_tensor_attr(tx, self, "shape", &shape);
    if (rc != DYN_CALL_OK || n == 1) {
      *out = shape;
      return rc;
    }
    if (!dc_is_int_const(args[1])) {
      Py_DECREF(shape);
      return dc_break(tx, "Tensor.size(d) with a non-constant d");
    }
    rc = dim_index(tx, shape, args[1], out);
    Py_DECREF(shape);
    return rc;
  }
  if (n == 1 && kw_count(kwargs) == 0) {
    const char* attr = NULL;
    if (!strcmp(nm, "dim") || !strcmp(nm, "ndimension")) attr = "ndim";
    else if (!strcmp(nm, "numel") || !strcmp(nm, "nelement")) attr = "numel";
    else if (!strcmp(nm, "is_floating_point")) attr = "is_floating_point";
    else if (!strcmp(nm, "is_complex")) attr = "is_complex";
    else if (!strcmp(nm, "type")) return dc_break(tx, "Tensor.type() (a type string)");
    if (attr) return dc_tensor_attr(tx, self, attr, out);
  }
  if (!strcmp(nm, "__getitem__") && n == 2 && !kwargs) return dyn_subscr(tx, self, args[1], out);
  if (n == 2 && !kwargs && nm[0] == '_' && nm[1] == '_') { /* x.__add__(y) and friends */
    for (int i = 0; i < 13; i++) {
      char dn[32];
      const char* b = dc_bin_names[i];
      size_t bl = strlen(b);
      if (b[bl - 1] == '_') bl--; /* and_ / or_ */
      snprintf(dn, sizeof dn, "__%.*s__", (int)bl, b);
      if (!strcmp(nm, dn)) return dyn_binop(tx, i, args[0], args[1], out);
      snprintf(dn, sizeof dn, "__r%.*s__", (int)bl, b);
      if (!strcmp(nm, dn)) return dyn_binop(tx, i, args[1], args[0], out);
      snprintf(dn, sizeof dn, "__i%.*s__", (int)bl, b);
      if (!strcmp(nm, dn)) return dyn_binop(tx, 13 + i, args[0], args[1], out);
    }
    for (int i = 0; i < 6; i++) {
      char dn[32];
      snprintf(dn, sizeof dn, "__%s__", dc_cmp_names[i]);
      if (!strcmp(nm, dn)) return dyn_compare(tx, i, args[0], args[1], out);
    }
  }
  if (!strcmp(nm, "__setitem__") && n == 3 && !kwargs) {
    int rc = dyn_store_subscr(tx, self, args[1], args[2]);
    if (rc == DYN_CALL_OK) *out = dyn_var_const(Py_None);
    return rc;
  }
  return dc_og_call_checked(tx, "call_method", name, args, n, kwargs, what, out);
}

/* getattr(tensor, name) */
static int tensor_getattr(dyn_tx* tx, DynVar* t, PyObject* name, DynVar** out) {
  const char* nm = PyUnicode_AsUTF8(name);
  if (!nm) return DYN_CALL_ERROR;
  if (in_list(nm, tensor_break_attrs))
    return dc_break(tx, "tensor attribute .%s is not capturable", nm);
  if (!strcmp(nm, "shape")) return dc_tensor_attr(tx, t, "shape", out);
  PyObject* d = PyObject_GetAttr(dcc.tensor_type, name);
  if (!d) {
    PyErr_Clear();
    return dc_break(tx, "tensor has no attribute .%s (or an instance attribute)", nm);
  }
  int is_data = Py_TYPE(d) == &PyGetSetDescr_Type || Py_TYPE(d) == &PyMemberDescr_Type ||
                PyObject_TypeCheck(d, &PyProperty_Type);
  if (!is_data && PyCallable_Check(d)) {
    DynVar* fv = dyn_var_const(d);
    Py_DECREF(d);
    if (!fv) return DYN_CALL_ERROR;
    *out = dyn_var_new(DV_METHOD, (PyObject*)fv, NULL, (PyObject*)t, NULL);
    Py_DECREF(fv);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  Py_DECREF(d);
  if (!is_data) return dc_break(tx, "tensor attribute .%s", nm);
  return dc_tensor_attr(tx, t, nm, out);
}

/* fn is the unbound torch.Tensor attribute of that name */
static PyObject* tensor_method_name(PyObject* fn) {
  PyObject* name = PyObject_GetAttrString(fn, "__name__");
  if (!name) {
    PyErr_Clear();
    return NULL;
  }
  if (PyUnicode_Check(name)) {
    PyObject* d = PyObject_GetAttr(dcc.tensor_type, name);
    if (!d) PyErr_Clear();
    int same = d == fn;
    Py_XDECREF(d);
    if (same) return name;
  }
  Py_DECREF(name);
  return NULL;
}

/* ---------------------------------------------------------------------------
 * getattr / setattr
 * ------------------------------------------------------------------------- */
int dyn_getattr(dyn_tx* tx, DynVar* obj, PyObject* name, DynVar** out) {
  *out = NULL;
  if (dc_init() < 0) return DYN_CALL_ERROR;
  switch (obj->kind) {
    case DV_TENSOR:
      return tensor_getattr(tx, obj, name, out);
    case DV_MODULE:
    case DV_OBJECT:
      return dc_getattr_object(tx, obj, name, out);
    case DV_METHOD: {
      const char* nm = PyUnicode_AsUTF8(name);
      if (nm && !strcmp(nm, "__self__")) *out = (DynVar*)obj->extra;
      else if (nm && !strcmp(nm, "__func__")) *out = (DynVar*)obj->value;
      if (!*out) return dc_break(tx, "attribute .%U of a method", name);
      Py_INCREF(*out);
      return DYN_CALL_OK;
    }
    default:
      return dc_getattr_builtin(tx, obj, name, out);
  }
}

int dyn_setattr(dyn_tx* tx, DynVar* obj, PyObject* name, DynVar* value) {
  if (dc_init() < 0) return DYN_CALL_ERROR;
  if (obj->kind == DV_MODULE || obj->kind == DV_OBJECT) return dc_setattr_object(tx, obj, name, value);
  if (obj->kind == DV_TENSOR) return dc_break(tx, "setting attribute .%U of a tensor", name);
  return dc_break(tx, "setting attribute .%U of a %s", name, dyn_var_kind_name(obj));
}

/* ---------------------------------------------------------------------------
 * dyn_call
 * ------------------------------------------------------------------------- */
static int inline_result(DynVar* fn, DynVar* const* args, Py_ssize_t n, PyObject* kwargs,
                         DynVar** out, PyObject** ia, PyObject** ik) {
  PyObject* l = PyList_New(n);
  if (!l) return DYN_CALL_ERROR;
  for (Py_ssize_t i = 0; i < n; i++) {
    Py_INCREF(args[i]);
    PyList_SET_ITEM(l, i, (PyObject*)args[i]);
  }
  PyObject* k = kwargs ? PyDict_Copy(kwargs) : PyDict_New();
  if (!k) {
    Py_DECREF(l);
    return DYN_CALL_ERROR;
  }
  Py_INCREF(fn);
  *out = fn;
  *ia = l;
  *ik = k;
  return DYN_CALL_INLINE;
}

static int operator_call(dyn_tx* tx, int code, DynVar* const* a, Py_ssize_t n, PyObject* kwargs,
                         DynVar** out) {
  int kind = code / 100, arg = code % 100;
  if (kw_count(kwargs)) return dc_break(tx, "operator function with keyword arguments");
  int want = kind == OPK_UN || kind == OPK_TRUTH ? 1 : kind == OPK_SETITEM ? 3 : 2;
  if (n != want) return dc_break(tx, "operator function called with %zd arguments", n);
  switch (kind) {
    case OPK_BIN: return dyn_binop(tx, arg, a[0], a[1], out);
    case OPK_UN: return dyn_unop(tx, DYN_OP_NOT + arg, a[0], out);
    case OPK_CMP: return dyn_compare(tx, arg, a[0], a[1], out);
    case OPK_SUBSCR: return dyn_subscr(tx, a[0], a[1], out);
    case OPK_SETITEM: {
      int rc = dyn_store_subscr(tx, a[0], a[1], a[2]);
      if (rc == DYN_CALL_OK) *out = dyn_var_const(Py_None);
      return rc;
    }
    case OPK_CONTAINS: return dyn_compare(tx, DYN_OP_IN, a[1], a[0], out);
    case OPK_IS: return dyn_compare(tx, DYN_OP_IS, a[0], a[1], out);
    case OPK_ISNOT: return dyn_compare(tx, DYN_OP_IS_NOT, a[0], a[1], out);
    case OPK_TRUTH: {
      int t = 0;
      int rc = dyn_truth(tx, a[0], &t);
      if (rc == DYN_CALL_OK) rc = dc_bool_out(t, out);
      return rc;
    }
  }
  return dc_break(tx, "operator function");
}

static int all_consts(dyn_tx* tx, DynVar* const* a, Py_ssize_t n, PyObject* kwargs, PyObject** pa,
                      PyObject** pk) {
  *pa = PyTuple_New(n);
  *pk = NULL;
  if (!*pa) return DYN_CALL_ERROR;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* c;
    int rc = dc_const_of(tx, a[i], &c);
    if (rc != DYN_CALL_OK) {
      Py_CLEAR(*pa);
      return rc;
    }
    PyTuple_SET_ITEM(*pa, i, c);
  }
  if (kwargs && PyDict_Size(kwargs)) {
    *pk = PyDict_New();
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (*pk && PyDict_Next(kwargs, &pos, &k, &v)) {
      PyObject* c;
      int rc = dc_const_of(tx, (DynVar*)v, &c);
      if (rc != DYN_CALL_OK) {
        Py_CLEAR(*pa);
        Py_CLEAR(*pk);
        return rc;
      }
      if (PyDict_SetItem(*pk, k, c) < 0) Py_CLEAR(*pk);
      Py_DECREF(c);
    }
    if (!*pk) {
      Py_CLEAR(*pa);
      return DYN_CALL_ERROR;
    }
  }
  return DYN_CALL_OK;
}

int dc_call_real_consts(dyn_tx* tx, PyObject* f, DynVar* const* a, Py_ssize_t n, PyObject* kwargs,
                        const char* what, DynVar** out) {
  PyObject *pa, *pk;
  int rc = all_consts(tx, a, n, kwargs, &pa, &pk);
  if (rc != DYN_CALL_OK) return rc;
  PyObject* r = PyObject_Call(f, pa, pk);
  Py_DECREF(pa);
  Py_XDECREF(pk);
  return dc_const_result(tx, r, what, out);
}

static PyObject* target_name(PyObject* f) {
  PyObject* s = PyObject_CallOneArg(dcc.fmt_target, f);
  if (!s) {
    PyErr_Clear();
    s = PyUnicode_FromString(Py_TYPE(f)->tp_name);
  }
  return s;
}

static int module_name_starts(PyObject* f, const char* prefix) {
  PyObject* m = PyObject_GetAttrString(f, "__module__");
  if (!m) {
    PyErr_Clear();
    return 0;
  }
  int r = PyUnicode_Check(m) && strncmp(PyUnicode_AsUTF8(m), prefix, strlen(prefix)) == 0;
  Py_DECREF(m);
  return r;
}

static int has_mapping(PyObject* f) {
  PyObject* c = PyObject_CallOneArg(dcc.lookup, f);
  if (!c) {
    PyErr_Clear();
    return 0;
  }
  int r = c != Py_None;
  Py_DECREF(c);
  return r;
}

static int og_function(dyn_tx* tx, PyObject* f, DynVar* const* a, Py_ssize_t n, PyObject* kwargs,
                       DynVar** out) {
  PyObject* s = target_name(f);
  const char* what = s ? PyUnicode_AsUTF8(s) : "call";
  if (!what) {
    PyErr_Clear();
    what = "call";
  }
  int rc = dc_og_call_checked(tx, "call_function", f, a, n, kwargs, what, out);
  Py_XDECREF(s);
  return rc;
}

/* A Python function value (not a tensor method, not mapped): inline it,
 * unless it is a torch internal. */
static int python_function(dyn_tx* tx, DynVar* fnvar, PyObject* f, DynVar* const* a, Py_ssize_t n,
                           PyObject* kwargs, DynVar** out, PyObject** ia, PyObject** ik) {
  if (module_name_starts(f, "torch") && !module_name_starts(f, "torch.nn.modules")) {
    PyObject* s = target_name(f);
    int rc = dc_break(tx, "no ptc mapping for %U", s);
    Py_XDECREF(s);
    return rc;
  }
  DynVar* fv = fnvar;
  if (!fv || fv->kind != DV_FUNCTION) {
    fv = dyn_var_new(DV_FUNCTION, f, NULL, NULL, NULL);
    if (!fv) return DYN_CALL_ERROR;
  } else {
    Py_INCREF(fv);
  }
  int rc = inline_result(fv, a, n, kwargs, out, ia, ik);
  Py_DECREF(fv);
  return rc;
}

/* f is torch.<path> ("jit.is_scripting"); missing paths never match. */
static int is_torch_attr(PyObject* f, const char* path) {
  PyObject* o = dcc.torch;
  Py_INCREF(o);
  char buf[96];
  snprintf(buf, sizeof buf, "%s", path);
  for (char* part = strtok(buf, "."); part && o; part = strtok(NULL, ".")) {
    PyObject* n = PyObject_GetAttrString(o, part);
    if (!n) PyErr_Clear();
    Py_DECREF(o);
    o = n;
  }
  int r = o && o == f;
  Py_XDECREF(o);
  return r;
}

/* Introspection functions with a fixed answer in eager code:
 * torch.jit.is_scripting/is_tracing -> False, torch._C._get_tracing_state
 * -> None, torch.compiler.is_compiling / torch._dynamo.is_compiling ->
 * False (the captured program must behave as plain Python), and
 * torch._assert(cond, msg) with a known-true cond -> None. -2 otherwise. */
static int torch_fixed(dyn_tx* tx, PyObject* f, DynVar* const* a, Py_ssize_t n, PyObject* kwargs,
                       DynVar** out) {
  if (!PyFunction_Check(f) && !PyCFunction_Check(f)) return -2;
  static const char* const falses[] = {"jit.is_scripting", "jit.is_tracing",
                                       "compiler.is_compiling", "_dynamo.is_compiling",
                                       "_utils.is_compiling", NULL};
  for (int i = 0; falses[i]; i++)
    if (is_torch_attr(f, falses[i])) {
      if (n || kw_count(kwargs)) return dc_break(tx, "torch.%s with arguments", falses[i]);
      return dc_bool_out(0, out);
    }
  if (is_torch_attr(f, "_C._get_tracing_state")) {
    if (n || kw_count(kwargs)) return dc_break(tx, "torch._C._get_tracing_state with arguments");
    *out = dyn_var_const(Py_None);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  if (is_torch_attr(f, "_assert")) {
    if (n < 1 || n > 2 || kw_count(kwargs)) return dc_break(tx, "torch._assert arguments");
    int t = 0;
    int rc = dyn_truth(tx, a[0], &t);
    if (rc != DYN_CALL_OK) return rc;
    if (!t) return dc_break(tx, "torch._assert fails (AssertionError in Python)");
    *out = dyn_var_const(Py_None);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  return -2;
}

/* torch.is_tensor / is_floating_point / is_complex / numel /
 * is_grad_enabled; -2 when f is none of them. */
static int torch_query(dyn_tx* tx, PyObject* f, DynVar* const* a, Py_ssize_t n, PyObject* kwargs,
                       DynVar** out) {
  static const char* const names[] = {"is_tensor", "is_floating_point", "is_complex", "numel",
                                      "is_grad_enabled", NULL};
  int which = -1;
  for (int i = 0; names[i] && which < 0; i++) {
    PyObject* g = PyObject_GetAttrString(dcc.torch, names[i]);
    if (!g) PyErr_Clear();
    if (g == f) which = i;
    Py_XDECREF(g);
  }
  if (which < 0) return -2;
  if (kw_count(kwargs)) return dc_break(tx, "torch.%s with keyword arguments", names[which]);
  if (which == 4) {
    if (n) return dc_break(tx, "torch.is_grad_enabled with arguments");
    return dc_bool_out(tx->grad_enabled, out);
  }
  if (n != 1) return dc_break(tx, "torch.%s with %zd arguments", names[which], n);
  if (which == 0) {
    if (a[0]->kind == DV_TENSOR) return dc_bool_out(1, out);
    if (a[0]->kind == DV_OBJECT || a[0]->kind == DV_MODULE || a[0]->kind == DV_ITER)
      return dc_break(tx, "torch.is_tensor of a %s", dyn_var_kind_name(a[0]));
    return dc_bool_out(0, out);
  }
  if (a[0]->kind != DV_TENSOR) return dc_break(tx, "torch.%s of a %s", names[which], dyn_var_kind_name(a[0]));
  return dc_tensor_attr(tx, a[0], names[which], out);
}

static int call_value(dyn_tx* tx, DynVar* fnvar, PyObject* f, DynVar* const* a, Py_ssize_t n,
                      PyObject* kwargs, DynVar** out, PyObject** ia, PyObject** ik) {
  /* grad-mode context managers */
  if (f == dcc.no_grad || f == dcc.enable_grad) {
    if (n || kw_count(kwargs)) return dc_break(tx, "torch.no_grad/enable_grad with arguments");
    *out = dyn_var_new(DV_GRAD_CTX, NULL, NULL, NULL, NULL);
    if (!*out) return DYN_CALL_ERROR;
    (*out)->index = f == dcc.enable_grad;
    return DYN_CALL_OK;
  }
  if (f == dcc.set_grad_enabled) {
    if (n != 1 || kw_count(kwargs) || a[0]->kind != DV_CONST || !PyBool_Check(a[0]->value))
      return dc_break(tx, "torch.set_grad_enabled with a non-constant mode");
    int mode = a[0]->value == Py_True;
    if (mode != tx->grad_enabled)
      return dc_break(tx, "torch.set_grad_enabled(%s) changes the global grad mode", mode ? "True" : "False");
    *out = dyn_var_new(DV_GRAD_CTX, NULL, NULL, NULL, NULL);
    if (!*out) return DYN_CALL_ERROR;
    (*out)->index = mode;
    return DYN_CALL_OK;
  }
  /* nn.Module.__call__(m, ...) (super().__call__ in a __call__ override):
   * the module-call path (mapped -> call_module, else inline forward) */
  if (f == dcc.module_call && n >= 1 && a[0]->kind == DV_MODULE)
    return dc_call_module_base(tx, a[0], a + 1, n - 1, kwargs, out, ia, ik);
  /* builtins */
  int rc = dc_call_builtin(tx, f, a, n, kwargs, out);
  if (rc != -2) return rc;
  /* operator.* */
  PyObject* code = PyDict_GetItemWithError(dcc.operator_ids, f);
  if (code) return operator_call(tx, (int)PyLong_AsLong(code), a, n, kwargs, out);
  if (PyErr_Occurred()) PyErr_Clear(); /* unhashable callee */
  /* torch.Tensor methods called unbound (also what DV_METHOD of a tensor gives) */
  if (n >= 1 && a[0]->kind == DV_TENSOR) {
    PyObject* name = tensor_method_name(f);
    if (name) {
      rc = tensor_method(tx, name, a, n, kwargs, out);
      Py_DECREF(name);
      return rc;
    }
  }
  /* math.* on constants */
  if (PyCFunction_Check(f) && PyCFunction_GET_SELF(f) == dcc.math_mod)
    return dc_call_real_consts(tx, f, a, n, kwargs, "math function", out);
  /* methods of builtin containers / constants */
  rc = dc_call_descr(tx, f, a, n, kwargs, out);
  if (rc != -2) return rc;
  /* tuple.__new__(cls, iterable): namedtuple construction inlined */
  if (PyCFunction_Check(f) && PyCFunction_GET_SELF(f) == (PyObject*)&PyTuple_Type &&
      n == 2 && !kw_count(kwargs) && a[0]->kind == DV_CONST && PyType_Check(a[0]->value)) {
    PyObject* cls = a[0]->value;
    PyObject* items;
    if (cls != (PyObject*)&PyTuple_Type && !PyObject_HasAttrString(cls, "_fields"))
      return dc_break(tx, "tuple.__new__ of %s", ((PyTypeObject*)cls)->tp_name);
    rc = dc_items(tx, a[1], &items);
    if (rc != DYN_CALL_OK) return rc;
    if (cls == (PyObject*)&PyTuple_Type) {
      *out = dc_seq(DV_TUPLE, items);
    } else {
      *out = dyn_var_new(DV_NAMEDTUPLE, cls, items, NULL, NULL);
      if (*out) (*out)->created = 1;
    }
    Py_DECREF(items);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  /* torch predicates / metadata functions answered from the trackers */
  rc = torch_query(tx, f, a, n, kwargs, out);
  if (rc != -2) return rc;
  rc = torch_fixed(tx, f, a, n, kwargs, out);
  if (rc != -2) return rc;
  /* ModuleList / Sequential / ModuleDict methods */
  rc = dc_call_container_method(tx, f, a, n, kwargs, out);
  if (rc != -2) return rc;
  /* the mapping table */
  if (has_mapping(f)) return og_function(tx, f, a, n, kwargs, out);
  if (PyFunction_Check(f)) return python_function(tx, fnvar, f, a, n, kwargs, out, ia, ik);
  if (PyType_Check(f)) {
    PyTypeObject* t = (PyTypeObject*)f;
    rc = dc_call_namedtuple(tx, f, a, n, kwargs, out);
    if (rc != -2) return rc;
    if (f == dcc.torch_size || f == dcc.torch_device)
      return dc_call_real_consts(tx, f, a, n, kwargs, t->tp_name, out);
    if (PyType_IsSubtype(t, (PyTypeObject*)PyExc_BaseException))
      return dc_break(tx, "creating an exception (%s)", t->tp_name);
    return dc_break(tx, "creating an instance of class %s", t->tp_name);
  }
  PyObject* s = target_name(f);
  if (module_name_starts(f, "torch"))
    rc = dc_break(tx, "no ptc mapping for %U", s);
  else
    rc = dc_break(tx, "call to %U (not capturable)", s);
  Py_XDECREF(s);
  return rc;
}

static int call_impl(dyn_tx* tx, DynVar* fn, DynVar* const* args, Py_ssize_t n, PyObject* kwargs,
                     DynVar** out, PyObject** ia, PyObject** ik);

static int call_method_var(dyn_tx* tx, DynVar* fn, DynVar* const* args, Py_ssize_t n,
                           PyObject* kwargs, DynVar** out, PyObject** ia, PyObject** ik) {
  DynVar** all = PyMem_Malloc(sizeof(DynVar*) * (size_t)(n + 1));
  if (!all) {
    PyErr_NoMemory();
    return DYN_CALL_ERROR;
  }
  all[0] = (DynVar*)fn->extra;
  for (Py_ssize_t i = 0; i < n; i++) all[i + 1] = args[i];
  int rc = call_impl(tx, (DynVar*)fn->value, all, n + 1, kwargs, out, ia, ik);
  PyMem_Free(all);
  return rc;
}

static int call_impl(dyn_tx* tx, DynVar* fn, DynVar* const* args, Py_ssize_t n, PyObject* kwargs,
                     DynVar** out, PyObject** ia, PyObject** ik) {
  switch (fn->kind) {
    case DV_METHOD:
      if (!fn->extra || !fn->value) return dc_break(tx, "call of an incomplete method");
      return call_method_var(tx, fn, args, n, kwargs, out, ia, ik);
    case DV_FUNCTION:
      if (!fn->value) return inline_result(fn, args, n, kwargs, out, ia, ik);
      return call_value(tx, fn, fn->value, args, n, kwargs, out, ia, ik);
    case DV_CONST:
      return call_value(tx, fn, fn->value, args, n, kwargs, out, ia, ik);
    case DV_MODULE:
      return dc_call_module(tx, fn, args, n, kwargs, out, ia, ik);
    case DV_OBJECT: {
      if (fn->extra && PyUnicode_Check(fn->extra))
        return dc_break(tx, "call of an unsupported value (%U)", fn->extra);
      PyObject* cname = PyUnicode_InternFromString("__call__");
      if (!cname) return DYN_CALL_ERROR;
      PyObject* c = _PyType_Lookup(Py_TYPE(fn->value), cname);
      if (!c || !PyFunction_Check(c)) {
        Py_DECREF(cname);
        return dc_break(tx, "call of a %s object", Py_TYPE(fn->value)->tp_name);
      }
      DynVar* fv;
      int rc = dc_class_func(tx, fn, c, cname, &fv);
      Py_DECREF(cname);
      if (rc != DYN_CALL_OK) return rc;
      DynVar** all = PyMem_Malloc(sizeof(DynVar*) * (size_t)(n + 1));
      if (!all) {
        Py_DECREF(fv);
        PyErr_NoMemory();
        return DYN_CALL_ERROR;
      }
      all[0] = fn;
      for (Py_ssize_t i = 0; i < n; i++) all[i + 1] = args[i];
      rc = inline_result(fv, all, n + 1, kwargs, out, ia, ik);
      PyMem_Free(all);
      Py_DECREF(fv);
      return rc;
    }
    default:
      return dc_break(tx, "call of a %s", dyn_var_kind_name(fn));
  }
}

int dyn_call(dyn_tx* tx, DynVar* fn, DynVar* const* args, Py_ssize_t nargs, PyObject* kwnames,
             DynVar** out, PyObject** inline_args, PyObject** inline_kwargs) {
  *out = NULL;
  PyObject *ia_local = NULL, *ik_local = NULL;
  PyObject** ia = inline_args ? inline_args : &ia_local;
  PyObject** ik = inline_kwargs ? inline_kwargs : &ik_local;
  *ia = NULL;
  *ik = NULL;
  if (dc_init() < 0) return DYN_CALL_ERROR;
  PyObject* kwargs = NULL;
  Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  if (nk) {
    kwargs = PyDict_New();
    if (!kwargs) return DYN_CALL_ERROR;
    for (Py_ssize_t i = 0; i < nk; i++)
      if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), (PyObject*)args[nargs + i]) < 0) {
        Py_DECREF(kwargs);
        return DYN_CALL_ERROR;
      }
  }
  int rc = call_impl(tx, fn, args, nargs, kwargs, out, ia, ik);
  Py_XDECREF(kwargs);
  if (rc == DYN_CALL_INLINE && (!inline_args || !inline_kwargs)) {
    Py_CLEAR(*out);
    Py_CLEAR(ia_local);
    Py_CLEAR(ik_local);
    rc = dc_break(tx, "call needs inlining here");
  }
  if (rc != DYN_CALL_OK && rc != DYN_CALL_INLINE) Py_CLEAR(*out);
  return rc;
}
