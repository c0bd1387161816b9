/* dyn_call_builtins.c - builtin functions for the bytecode capture (issue 6):
 * len, isinstance/issubclass, range, enumerate, zip, reversed, sorted,
 * min/max, abs, sum, getattr/hasattr/setattr, type, the list/tuple/dict/set/
 * frozenset/int/float/bool/str constructors, iter/next, callable, divmod,
 * round, all/any, pow, chr/ord, repr, slice, format on trackers (constants
 * computed for real, sizes compared through the OutputGraph); print, id,
 * super, eval... break the graph. */
#include "dyn_call_int.h"

#include <string.h>

const char* const dc_builtin_names[] = {
    "len", "isinstance", "issubclass", "range", "enumerate", "zip", "reversed", "sorted", "min",
    "max", "abs", "sum", "getattr", "hasattr", "setattr", "type", "list", "tuple", "dict", "set",
    "frozenset", "int", "float", "bool", "str", "iter", "next", "callable", "divmod", "round",
    "all", "any", "pow", "chr", "ord", "repr", "slice", "format", "delattr", "print", "id",
    "hash", "super", "map", "filter", "object", "vars", "globals", "locals", "open", "input",
    "eval", "exec", "compile", "breakpoint", "__import__", "dir", NULL};
enum {
  B_LEN, B_ISINSTANCE, B_ISSUBCLASS, B_RANGE, B_ENUMERATE, B_ZIP, B_REVERSED, B_SORTED, B_MIN,
  B_MAX, B_ABS, B_SUM, B_GETATTR, B_HASATTR, B_SETATTR, B_TYPE, B_LIST, B_TUPLE, B_DICT, B_SET,
  B_FROZENSET, B_INT, B_FLOAT, B_BOOL, B_STR, B_ITER, B_NEXT, B_CALLABLE, B_DIVMOD, B_ROUND,
  B_ALL, B_ANY, B_POW, B_CHR, B_ORD, B_REPR, B_SLICE, B_FORMAT, B_DELATTR /* first "break" */
};

static DynVar* kwarg(PyObject* kwargs, const char* name) {
  if (!kwargs) return NULL;
  PyObject* v = PyDict_GetItemString(kwargs, name);
  return (DynVar*)v;
}

/* The Python type a tracker stands for (borrowed), or NULL. */
static PyObject* kind_type(dyn_tx* tx, DynVar* v, PyObject** hold) {
  *hold = NULL;
  switch (v->kind) {
    case DV_CONST: case DV_MODULE: case DV_OBJECT:
      return (PyObject*)Py_TYPE(v->value);
    case DV_TENSOR:
      if (v->source) {
        *hold = dc_real_of(tx, v);
        if (*hold) return (PyObject*)Py_TYPE(*hold);
      }
      return dcc.tensor_type;
    case DV_SYMINT: return (PyObject*)&PyLong_Type;
    case DV_TUPLE: return v->extra == dcc.torch_size ? dcc.torch_size : (PyObject*)&PyTuple_Type;
    case DV_LIST: return (PyObject*)&PyList_Type;
    case DV_DICT: return (PyObject*)&PyDict_Type;
    case DV_SET: return (PyObject*)&PySet_Type;
    case DV_SLICE: return (PyObject*)&PySlice_Type;
    case DV_RANGE: return (PyObject*)&PyRange_Type;
    case DV_NAMEDTUPLE: return v->value;
    case DV_FUNCTION: return v->value ? (PyObject*)Py_TYPE(v->value) : (PyObject*)&PyFunction_Type;
    case DV_METHOD: return (PyObject*)&PyMethod_Type;
    default: return NULL;
  }
}

/* ---------------------------------------------------------------------------
 * Attribute existence (no code run): modules, objects, classes, modules
 * ------------------------------------------------------------------------- */
static int guard_missing(dyn_tx* tx, DynVar* obj, PyObject* name) {
  DynSource* s = dc_source_of(obj);
  if (!s) return PyErr_Occurred() ? -1 : 0;
  DynSource* a = dyn_source_attr(s, name);
  Py_DECREF(s);
  if (!a) return -1;
  int r = dyn_guards_add(tx->guards, DG_NOT_HASATTR, a, NULL, 0);
  Py_DECREF(a);
  return r;
}

/* 1 / 0, or DYN_CALL_BREAK (as -2) when unknown */
/* hasattr through a custom __getattribute__/__getattr__, read for real:
 * present -> a guarded value (its guard also fails when it disappears),
 * missing -> a NOT_HASATTR guard. 1 / 0, -1 error, -3 broke (tx->brk). */
static int real_has_attr(dyn_tx* tx, DynVar* obj, PyObject* name) {
  DynVar* v = NULL;
  int missing = 0;
  int rc = dc_getattr_real(tx, obj, name, &v, &missing);
  Py_XDECREF(v);
  if (rc == DYN_CALL_ERROR) return -1;
  if (rc != DYN_CALL_OK) return -3;
  if (missing && guard_missing(tx, obj, name) < 0) return -1;
  return !missing;
}

/* 1 / 0, -1 error, -2 unknown (caller breaks), -3 broke already */
static int has_attr(dyn_tx* tx, DynVar* obj, PyObject* name) {
  if ((obj->kind == DV_MODULE || obj->kind == DV_OBJECT) && obj->value &&
      !(obj->extra && PyUnicode_Check(obj->extra)) &&
      !dc_uses_object_slot(Py_TYPE(obj->value), "__getattribute__"))
    return real_has_attr(tx, obj, name);
  if (obj->items && PyDict_Check(obj->items) && (obj->kind == DV_MODULE || obj->kind == DV_OBJECT) &&
      PyDict_GetItem(obj->items, name))
    return 1;
  if (obj->kind == DV_MODULE || obj->kind == DV_OBJECT) {
    PyTypeObject* t = Py_TYPE(obj->value);
    if (!dc_uses_object_slot(t, "__getattribute__")) return -2;
    if (_PyType_Lookup(t, name)) return 1;
    PyObject* d = PyObject_GenericGetDict(obj->value, NULL);
    if (!d) {
      PyErr_Clear();
      return -2;
    }
    int in = PyDict_Contains(d, name) == 1;
    if (!in && obj->kind == DV_MODULE) {
      const char* subs[] = {"_parameters", "_buffers", "_modules"};
      for (int i = 0; i < 3 && !in; i++) {
        PyObject* sd = PyDict_GetItemString(d, subs[i]);
        if (sd && PyDict_Check(sd) && PyDict_Contains(sd, name) == 1) in = 1;
      }
    }
    Py_DECREF(d);
    if (!in) {
      PyObject* ga = PyUnicode_InternFromString("__getattr__");
      PyObject* g = ga ? _PyType_Lookup(t, ga) : NULL;
      Py_XDECREF(ga);
      if (g && !(obj->kind == DV_MODULE && g == dcc.module_getattr)) {
        if (obj->extra && PyUnicode_Check(obj->extra)) return -2;
        return real_has_attr(tx, obj, name);
      }
      if (guard_missing(tx, obj, name) < 0) return -1;
    }
    return in;
  }
  if (obj->kind == DV_CONST && (PyModule_Check(obj->value) || PyType_Check(obj->value) ||
                                dc_safe_const(obj->value))) {
    int r = PyObject_HasAttr(obj->value, name);
    if (!r && guard_missing(tx, obj, name) < 0) return -1;
    return r;
  }
  if (obj->kind == DV_TENSOR) {
    PyObject* d = PyObject_GetAttr(dcc.tensor_type, name);
    if (d) {
      Py_DECREF(d);
      return 1;
    }
    PyErr_Clear();
    if (!obj->source) return 0; /* made by an op in the trace: no instance attributes */
    PyObject* real = dc_real_of(tx, obj);
    if (!real) return -2;
    int r = PyObject_HasAttr(real, name);
    Py_DECREF(real);
    if (r == 0 && guard_missing(tx, obj, name) < 0) return -1;
    return r;
  }
  return -2;
}

/* ---------------------------------------------------------------------------
 * Builtins
 * ------------------------------------------------------------------------- */
static int b_len(dyn_tx* tx, DynVar* v, DynVar** out) {
  switch (v->kind) {
    case DV_TUPLE: case DV_LIST: case DV_NAMEDTUPLE: case DV_SET:
      return out_ssize(PyList_GET_SIZE(v->items), out);
    case DV_DICT:
      return out_ssize(PyDict_Size(v->items), out);
    case DV_RANGE:
      return out_ssize(PyObject_Length(v->value), out);
    case DV_CONST: {
      if (!dc_safe_const(v->value)) return dc_break(tx, "len() of a %s", Py_TYPE(v->value)->tp_name);
      Py_ssize_t n = PyObject_Length(v->value);
      if (n < 0) return dc_break_exc(tx, "len()");
      return out_ssize(n, out);
    }
    case DV_ITER:
      if (v->extra && PyUnicode_Check(v->extra))
        return out_ssize(PyList_GET_SIZE(v->items) - v->index, out);
      return dc_break(tx, "len() of an iterator (TypeError in Python)");
    case DV_TENSOR: {
      DynVar* shape;
      int rc = dc_tensor_attr(tx, v, "shape", &shape);
      if (rc != DYN_CALL_OK) return rc;
      PyObject* items = NULL;
      rc = dc_items(tx, shape, &items);
      if (rc == DYN_CALL_OK && PyList_GET_SIZE(items) == 0) rc = dc_break(tx, "len() of a 0-d tensor");
      if (rc == DYN_CALL_OK) {
        *out = (DynVar*)PyList_GET_ITEM(items, 0);
        Py_INCREF(*out);
      }
      Py_XDECREF(items);
      Py_DECREF(shape);
      return rc;
    }
    case DV_MODULE: {
      PyObject *ch, *keys;
      int rc = dc_module_children(tx, v, &ch, &keys);
      if (rc != DYN_CALL_OK) return rc;
      rc = out_ssize(PyList_GET_SIZE(ch), out);
      Py_DECREF(ch);
      Py_XDECREF(keys);
      return rc;
    }
    case DV_OBJECT: { /* dict/list subclasses with the C base's len */
      Py_ssize_t len;
      int r = dc_base_len(v, &len);
      if (r < 0) return DYN_CALL_ERROR;
      if (!r) return dc_break(tx, "len() of a %s", dyn_var_kind_name(v));
      DynSource* s = dc_source_of(v);
      if (!s) return DYN_CALL_ERROR;
      r = dyn_guards_add(tx->guards, DG_LEN, s, (PyObject*)Py_TYPE(v->value), len);
      Py_DECREF(s);
      if (r < 0) return DYN_CALL_ERROR;
      return out_ssize(len, out);
    }
    default:
      return dc_break(tx, "len() of a %s", dyn_var_kind_name(v));
  }
}

static int b_isinstance(dyn_tx* tx, DynVar* const* a, Py_ssize_t n, int sub, DynVar** out) {
  if (n != 2 || a[1]->kind != DV_CONST) {
    if (n == 2 && a[1]->kind == DV_TUPLE) {
      PyObject* c = dyn_var_as_const(a[1]);
      if (c) {
        DynVar* cv = dyn_var_const(c);
        Py_DECREF(c);
        if (!cv) return DYN_CALL_ERROR;
        DynVar* aa[2] = {a[0], cv};
        int rc = b_isinstance(tx, aa, 2, sub, out);
        Py_DECREF(cv);
        return rc;
      }
    }
    return dc_break(tx, "%s with a non-constant class", sub ? "issubclass" : "isinstance");
  }
  PyObject* cls = a[1]->value;
  if (sub) {
    if (a[0]->kind != DV_CONST) return dc_break(tx, "issubclass of a %s", dyn_var_kind_name(a[0]));
    int r = PyObject_IsSubclass(a[0]->value, cls);
    if (r < 0) return dc_break_exc(tx, "issubclass");
    return out_bool(r, out);
  }
  PyObject* real = NULL;
  if (a[0]->kind == DV_CONST || a[0]->kind == DV_MODULE || a[0]->kind == DV_OBJECT ||
      ((a[0]->kind == DV_TENSOR || a[0]->kind == DV_LIST || a[0]->kind == DV_DICT ||
        a[0]->kind == DV_TUPLE) && a[0]->source))
    real = dc_real_of(tx, a[0]);
  int r = 0;
  if (real) {
    r = PyObject_IsInstance(real, cls);
    Py_DECREF(real);
  } else {
    PyObject* hold;
    PyObject* t = kind_type(tx, a[0], &hold);
    if (!t) return dc_break(tx, "isinstance of a %s", dyn_var_kind_name(a[0]));
    r = PyObject_IsSubclass(t, cls);
    Py_XDECREF(hold);
  }
  if (r < 0) return dc_break_exc(tx, "isinstance");
  return out_bool(r, out);
}

static int b_range(dyn_tx* tx, DynVar* const* a, Py_ssize_t n, DynVar** out) {
  if (n < 1 || n > 3) return dc_break(tx, "range() with %zd arguments", n);
  PyObject* args = PyTuple_New(n);
  if (!args) return DYN_CALL_ERROR;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* x;
    int rc = dc_as_int(tx, a[i], &x);
    if (rc != DYN_CALL_OK) {
      Py_DECREF(args);
      return rc;
    }
    PyTuple_SET_ITEM(args, i, x);
  }
  PyObject* r = PyObject_Call((PyObject*)&PyRange_Type, args, NULL);
  Py_DECREF(args);
  if (!r) return dc_break_exc(tx, "range()");
  *out = dyn_var_new(DV_RANGE, r, NULL, NULL, NULL);
  Py_DECREF(r);
  return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
}

static int b_enumerate(dyn_tx* tx, DynVar* const* a, Py_ssize_t n, PyObject* kwargs, DynVar** out) {
  DynVar* startv = n == 2 ? a[1] : kwarg(kwargs, "start");
  if (n < 1 || n > 2 || nkw(kwargs) > (startv && n == 1 ? 1 : 0))
    return dc_break(tx, "enumerate() arguments");
  Py_ssize_t start = 0;
  if (startv) {
    PyObject* s;
    int rc = dc_as_int(tx, startv, &s);
    if (rc != DYN_CALL_OK) return rc;
    start = PyLong_AsSsize_t(s);
    Py_DECREF(s);
  }
  PyObject* items;
  int rc = dc_items(tx, a[0], &items);
  if (rc != DYN_CALL_OK) return rc;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
    PyObject* k = PyLong_FromSsize_t(start + i);
    DynVar* kv = k ? dyn_var_const(k) : NULL;
    Py_XDECREF(k);
    DynVar* t = kv ? tuple_of(kv, (DynVar*)PyList_GET_ITEM(items, i)) : NULL;
    Py_XDECREF(kv);
    if (!t) {
      Py_DECREF(items);
      return DYN_CALL_ERROR;
    }
    PyList_SetItem(items, i, (PyObject*)t);
  }
  rc = out_iter(items, NULL, out);
  Py_DECREF(items);
  if (rc == DYN_CALL_OK && dc_watch(tx, a[0], *out) < 0) {
    Py_CLEAR(*out);
    return DYN_CALL_ERROR;
  }
  return rc;
}

static int b_zip(dyn_tx* tx, DynVar* const* a, Py_ssize_t n, PyObject* kwargs, DynVar** out) {
  if (nkw(kwargs)) return dc_break(tx, "zip() with keyword arguments");
  PyObject* lists = PyList_New(0);
  if (!lists) return DYN_CALL_ERROR;
  Py_ssize_t m = PY_SSIZE_T_MAX;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* items;
    int rc = dc_items(tx, a[i], &items);
    if (rc != DYN_CALL_OK) {
      Py_DECREF(lists);
      return rc;
    }
    if (PyList_GET_SIZE(items) < m) m = PyList_GET_SIZE(items);
    PyList_Append(lists, items);
    Py_DECREF(items);
  }
  if (n == 0) m = 0;
  PyObject* res = PyList_New(0);
  for (Py_ssize_t j = 0; res && j < m; j++) {
    PyObject* row = PyList_New(n);
    for (Py_ssize_t i = 0; row && i < n; i++) {
      PyObject* x = PyList_GET_ITEM(PyList_GET_ITEM(lists, i), j);
      Py_INCREF(x);
      PyList_SET_ITEM(row, i, x);
    }
    DynVar* t = row ? dc_seq(DV_TUPLE, row) : NULL;
    Py_XDECREF(row);
    if (!t || PyList_Append(res, (PyObject*)t) < 0) Py_CLEAR(res);
    Py_XDECREF(t);
  }
  Py_DECREF(lists);
  if (!res) return DYN_CALL_ERROR;
  int rc = out_iter(res, NULL, out);
  Py_DECREF(res);
  for (Py_ssize_t i = 0; rc == DYN_CALL_OK && i < n; i++)
    if (dc_watch(tx, a[i], *out) < 0) {
      Py_CLEAR(*out);
      rc = DYN_CALL_ERROR;
    }
  return rc;
}

static int b_reversed(dyn_tx* tx, DynVar* v, DynVar** out) {
  if (!(v->kind == DV_TUPLE || v->kind == DV_LIST || v->kind == DV_NAMEDTUPLE ||
        v->kind == DV_RANGE || v->kind == DV_DICT ||
        (v->kind == DV_CONST && (PyTuple_Check(v->value) || PyUnicode_CheckExact(v->value)))))
    return dc_break(tx, "reversed() of a %s", dyn_var_kind_name(v));
  PyObject* items;
  int rc = dc_items(tx, v, &items);
  if (rc != DYN_CALL_OK) return rc;
  PyList_Reverse(items);
  rc = out_iter(items, NULL, out);
  Py_DECREF(items);
  if (rc == DYN_CALL_OK && dc_watch(tx, v, *out) < 0) {
    Py_CLEAR(*out);
    return DYN_CALL_ERROR;
  }
  return rc;
}

/* items of the single iterable argument, or the arguments themselves */
static int arg_items(dyn_tx* tx, DynVar* const* a, Py_ssize_t n, PyObject** out) {
  if (n == 1) return dc_items(tx, a[0], out);
  *out = PyList_New(n);
  if (!*out) return DYN_CALL_ERROR;
  for (Py_ssize_t i = 0; i < n; i++) {
    Py_INCREF(a[i]);
    PyList_SET_ITEM(*out, i, (PyObject*)a[i]);
  }
  return DYN_CALL_OK;
}

static int b_minmax(dyn_tx* tx, DynVar* const* a, Py_ssize_t n, PyObject* kwargs, int is_max,
                    DynVar** out) {
  if (nkw(kwargs) || n < 1) return dc_break(tx, "%s() with keyword arguments", is_max ? "max" : "min");
  PyObject* items;
  int rc = arg_items(tx, a, n, &items);
  if (rc != DYN_CALL_OK) return rc;
  if (PyList_GET_SIZE(items) == 0) {
    Py_DECREF(items);
    return dc_break(tx, "%s() of an empty sequence (ValueError in Python)", is_max ? "max" : "min");
  }
  DynVar* best = (DynVar*)PyList_GET_ITEM(items, 0);
  for (Py_ssize_t i = 1; i < PyList_GET_SIZE(items); i++) {
    DynVar* x = (DynVar*)PyList_GET_ITEM(items, i);
    if (x->kind == DV_TENSOR || best->kind == DV_TENSOR) {
      Py_DECREF(items);
      return dc_break(tx, "%s() of tensors (data-dependent)", is_max ? "max" : "min");
    }
    DynVar* c;
    rc = dyn_compare(tx, is_max ? Py_GT : Py_LT, x, best, &c);
    if (rc != DYN_CALL_OK) break;
    int t = 0;
    rc = dyn_truth(tx, c, &t);
    Py_DECREF(c);
    if (rc != DYN_CALL_OK) break;
    if (t) best = x;
  }
  if (rc == DYN_CALL_OK) {
    Py_INCREF(best);
    *out = best;
  }
  Py_DECREF(items);
  return rc;
}

static int b_sum(dyn_tx* tx, DynVar* const* a, Py_ssize_t n, PyObject* kwargs, DynVar** out) {
  DynVar* startv = n == 2 ? a[1] : kwarg(kwargs, "start");
  if (n < 1 || n > 2 || nkw(kwargs) > (startv && n == 1 ? 1 : 0)) return dc_break(tx, "sum() arguments");
  if (startv && startv->kind == DV_CONST && (PyUnicode_Check(startv->value) || PyBytes_Check(startv->value)))
    return dc_break(tx, "sum() of strings (TypeError in Python)");
  PyObject* items;
  int rc = dc_items(tx, a[0], &items);
  if (rc != DYN_CALL_OK) return rc;
  DynVar* acc = startv;
  if (acc) Py_INCREF(acc);
  else {
    PyObject* z = PyLong_FromLong(0);
    acc = z ? dyn_var_const(z) : NULL;
    Py_XDECREF(z);
  }
  for (Py_ssize_t i = 0; acc && rc == DYN_CALL_OK && i < PyList_GET_SIZE(items); i++) {
    DynVar* r;
    rc = dyn_binop(tx, 0 /* NB_ADD */, acc, (DynVar*)PyList_GET_ITEM(items, i), &r);
    Py_DECREF(acc);
    acc = rc == DYN_CALL_OK ? r : NULL;
  }
  Py_DECREF(items);
  if (rc != DYN_CALL_OK) {
    Py_XDECREF(acc);
    return rc;
  }
  if (!acc) return DYN_CALL_ERROR;
  *out = acc;
  return DYN_CALL_OK;
}

static int b_truthy_all(dyn_tx* tx, DynVar* v, int any, DynVar** out) {
  PyObject* items;
  int rc = dc_items(tx, v, &items);
  if (rc != DYN_CALL_OK) return rc;
  int res = !any;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
    int t = 0;
    rc = dyn_truth(tx, (DynVar*)PyList_GET_ITEM(items, i), &t);
    if (rc != DYN_CALL_OK) break;
    if (any && t) {
      res = 1;
      break;
    }
    if (!any && !t) {
      res = 0;
      break;
    }
  }
  Py_DECREF(items);
  if (rc != DYN_CALL_OK) return rc;
  return out_bool(res, out);
}

static int b_seq_ctor(dyn_tx* tx, int kind, DynVar* const* a, Py_ssize_t n, PyObject* kwargs,
                      DynVar** out) {
  if (nkw(kwargs) || n > 1) return dc_break(tx, "list()/tuple() arguments");
  PyObject* items;
  if (n == 0) {
    items = PyList_New(0);
    if (!items) return DYN_CALL_ERROR;
  } else {
    int rc = dc_items(tx, a[0], &items);
    if (rc != DYN_CALL_OK) return rc;
  }
  *out = dc_seq(kind, items);
  Py_DECREF(items);
  return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
}


static int b_dict(dyn_tx* tx, DynVar* const* a, Py_ssize_t n, PyObject* kwargs, DynVar** out) {
  if (n > 1) return dc_break(tx, "dict() arguments");
  PyObject* items = PyDict_New();
  if (!items) return DYN_CALL_ERROR;
  int rc = DYN_CALL_OK;
  if (n == 1) {
    if (a[0]->kind == DV_DICT) {
      if (PyDict_Update(items, a[0]->items) < 0) rc = DYN_CALL_ERROR;
    } else {
      PyObject* pairs;
      rc = dc_items(tx, a[0], &pairs);
      for (Py_ssize_t i = 0; rc == DYN_CALL_OK && i < PyList_GET_SIZE(pairs); i++) {
        PyObject* kv;
        rc = dc_items(tx, (DynVar*)PyList_GET_ITEM(pairs, i), &kv);
        if (rc != DYN_CALL_OK) break;
        if (PyList_GET_SIZE(kv) != 2) {
          rc = dc_break(tx, "dict() from a sequence of non-pairs");
        } else {
          PyObject* k;
          rc = dc_const_of(tx, (DynVar*)PyList_GET_ITEM(kv, 0), &k);
          if (rc == DYN_CALL_OK) {
            if (PyDict_SetItem(items, k, PyList_GET_ITEM(kv, 1)) < 0) rc = dc_break_exc(tx, "dict()");
            Py_DECREF(k);
          }
        }
        Py_DECREF(kv);
      }
      if (rc == DYN_CALL_OK || pairs) Py_XDECREF(pairs);
    }
  }
  if (rc == DYN_CALL_OK && kwargs && PyDict_Update(items, kwargs) < 0) rc = DYN_CALL_ERROR;
  if (rc == DYN_CALL_OK) {
    *out = new_dict(items);
    if (!*out) rc = DYN_CALL_ERROR;
  }
  Py_DECREF(items);
  return rc;
}

static int b_set(dyn_tx* tx, DynVar* const* a, Py_ssize_t n, int frozen, DynVar** out) {
  if (n > 1) return dc_break(tx, "set() arguments");
  PyObject* s = frozen ? PyFrozenSet_New(NULL) : PySet_New(NULL);
  if (!s) return DYN_CALL_ERROR;
  int rc = DYN_CALL_OK;
  if (n == 1) {
    PyObject* items;
    rc = dc_items(tx, a[0], &items);
    for (Py_ssize_t i = 0; rc == DYN_CALL_OK && i < PyList_GET_SIZE(items); i++) {
      PyObject* c;
      rc = dc_const_of(tx, (DynVar*)PyList_GET_ITEM(items, i), &c);
      if (rc == DYN_CALL_OK) {
        if (PySet_Add(s, c) < 0) rc = dc_break_exc(tx, "set()");
        Py_DECREF(c);
      }
    }
    if (rc == DYN_CALL_OK || items) Py_XDECREF(items);
  }
  if (rc == DYN_CALL_OK) {
    if (frozen) {
      rc = out_const(s, out);
    } else {
      PyObject* l = PyList_New(0);
      PyObject* it = l ? PyObject_GetIter(s) : NULL;
      PyObject* x;
      while (it && (x = PyIter_Next(it))) {
        DynVar* c = dyn_var_const(x);
        Py_DECREF(x);
        if (!c || PyList_Append(l, (PyObject*)c) < 0) Py_CLEAR(l);
        Py_XDECREF(c);
        if (!l) break;
      }
      Py_XDECREF(it);
      *out = l ? dc_seq(DV_SET, l) : NULL;
      Py_XDECREF(l);
      rc = *out ? DYN_CALL_OK : DYN_CALL_ERROR;
    }
  }
  Py_DECREF(s);
  return rc;
}

static int b_next(dyn_tx* tx, DynVar* const* a, Py_ssize_t n, DynVar** out) {
  if (n < 1 || n > 2 || a[0]->kind != DV_ITER || (a[0]->extra && PyUnicode_Check(a[0]->extra)))
    return dc_break(tx, "next() of a %s", n ? dyn_var_kind_name(a[0]) : "nothing");
  DynVar* it = a[0];
  if (it->index < PyList_GET_SIZE(it->items)) {
    *out = (DynVar*)PyList_GET_ITEM(it->items, it->index);
    it->index++;
    Py_INCREF(*out);
    return DYN_CALL_OK;
  }
  if (n == 2) {
    Py_INCREF(a[1]);
    *out = a[1];
    return DYN_CALL_OK;
  }
  return dc_break(tx, "next() of an exhausted iterator (StopIteration)");
}

static int b_callable(dyn_tx* tx, DynVar* v, DynVar** out) {
  switch (v->kind) {
    case DV_FUNCTION: case DV_METHOD: case DV_MODULE: return out_bool(1, out);
    case DV_TENSOR: case DV_SYMINT: case DV_TUPLE: case DV_LIST: case DV_DICT: case DV_SET:
    case DV_SLICE: case DV_RANGE: case DV_NAMEDTUPLE: case DV_ITER:
      return out_bool(0, out);
    case DV_CONST: case DV_OBJECT: return out_bool(PyCallable_Check(v->value), out);
    default: return dc_break(tx, "callable() of a %s", dyn_var_kind_name(v));
  }
}

static int const_name(dyn_tx* tx, DynVar* v, PyObject** name) {
  if (v->kind != DV_CONST || !PyUnicode_Check(v->value))
    return dc_break(tx, "attribute name is not a constant string");
  *name = v->value;
  return DYN_CALL_OK;
}

int dc_call_builtin(dyn_tx* tx, PyObject* fn, DynVar* const* a, Py_ssize_t n, PyObject* kwargs,
                    DynVar** out) {
  PyObject* code = PyDict_GetItemWithError(dcc.builtin_ids, fn);
  if (!code) {
    PyErr_Clear();
    return -2;
  }
  int b = (int)PyLong_AsLong(code);
  if (b >= B_DELATTR) return dc_break(tx, "call to builtins.%s", dc_builtin_names[b]);
  int k = nkw(kwargs);
  switch (b) {
    case B_LEN:
      if (n != 1 || k) break;
      return b_len(tx, a[0], out);
    case B_ISINSTANCE:
    case B_ISSUBCLASS:
      if (k) break;
      return b_isinstance(tx, a, n, b == B_ISSUBCLASS, out);
    case B_RANGE:
      if (k) break;
      return b_range(tx, a, n, out);
    case B_ENUMERATE: return b_enumerate(tx, a, n, kwargs, out);
    case B_ZIP: return b_zip(tx, a, n, kwargs, out);
    case B_REVERSED:
      if (n != 1 || k) break;
      return b_reversed(tx, a[0], out);
    case B_SORTED: {
      if (n != 1) break;
      DynVar* key = kwarg(kwargs, "key");
      if (key && !(key->kind == DV_CONST && key->value == Py_None))
        return dc_break(tx, "sorted() with a key function");
      PyObject* items;
      int rc = dc_items(tx, a[0], &items);
      if (rc != DYN_CALL_OK) return rc;
      DynVar* lv = dc_seq(DV_TUPLE, items);
      Py_DECREF(items);
      if (!lv) return DYN_CALL_ERROR;
      PyObject* c;
      rc = dc_const_of(tx, lv, &c);
      Py_DECREF(lv);
      if (rc != DYN_CALL_OK) return rc;
      PyObject* kw2 = PyDict_New();
      DynVar* rev = kwarg(kwargs, "reverse");
      if (kw2 && rev) {
        if (rev->kind != DV_CONST) {
          Py_DECREF(kw2);
          Py_DECREF(c);
          return dc_break(tx, "sorted() with a non-constant reverse");
        }
        PyDict_SetItemString(kw2, "reverse", rev->value);
      }
      PyObject* args = kw2 ? PyTuple_Pack(1, c) : NULL;
      PyObject* r = args ? PyObject_Call(fn, args, kw2) : NULL;
      Py_XDECREF(args);
      Py_XDECREF(kw2);
      Py_DECREF(c);
      if (!r) return dc_break_exc(tx, "sorted()");
      PyObject* l = PyList_New(PyList_GET_SIZE(r));
      for (Py_ssize_t i = 0; l && i < PyList_GET_SIZE(r); i++) {
        DynVar* cv = dyn_var_const(PyList_GET_ITEM(r, i));
        if (!cv) Py_CLEAR(l);
        else PyList_SET_ITEM(l, i, (PyObject*)cv);
      }
      Py_DECREF(r);
      *out = l ? dc_seq(DV_LIST, l) : NULL;
      Py_XDECREF(l);
      return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
    }
    case B_MIN:
    case B_MAX: return b_minmax(tx, a, n, kwargs, b == B_MAX, out);
    case B_ABS:
      if (n != 1 || k) break;
      if (a[0]->kind == DV_TENSOR) {
        PyObject* f = PyObject_GetAttrString(dcc.operator_mod, "abs");
        if (!f) return DYN_CALL_ERROR;
        int rc = dc_og_call(tx, "call_function", f, a, 1, NULL, "abs()", out);
        Py_DECREF(f);
        return rc;
      }
      return dc_call_real_consts(tx, fn, a, n, NULL, "abs()", out);
    case B_SUM: return b_sum(tx, a, n, kwargs, out);
    case B_GETATTR: {
      if (k || n < 2 || n > 3) break;
      PyObject* name = NULL;
      int rc = const_name(tx, a[1], &name);
      if (rc != DYN_CALL_OK) return rc;
      if (n == 3) {
        int h = has_attr(tx, a[0], name);
        if (h == -1) return DYN_CALL_ERROR;
        if (h == -3) return DYN_CALL_BREAK; /* dc_getattr_real broke: tx->brk says why */
        if (h == -2) return dc_break(tx, "getattr() with a default on a %s", dyn_var_kind_name(a[0]));
        if (!h) {
          Py_INCREF(a[2]);
          *out = a[2];
          return DYN_CALL_OK;
        }
      }
      return dyn_getattr(tx, a[0], name, out);
    }
    case B_HASATTR: {
      if (k || n != 2) break;
      PyObject* name = NULL;
      int rc = const_name(tx, a[1], &name);
      if (rc != DYN_CALL_OK) return rc;
      int h = has_attr(tx, a[0], name);
      if (h == -1) return DYN_CALL_ERROR;
      if (h == -3) return DYN_CALL_BREAK; /* dc_getattr_real broke: tx->brk says why */
      if (h == -2) return dc_break(tx, "hasattr() on a %s", dyn_var_kind_name(a[0]));
      return out_bool(h, out);
    }
    case B_SETATTR: {
      if (k || n != 3) break;
      PyObject* name = NULL;
      int rc = const_name(tx, a[1], &name);
      if (rc == DYN_CALL_OK) rc = dyn_setattr(tx, a[0], name, a[2]);
      if (rc == DYN_CALL_OK) rc = out_const(Py_None, out);
      return rc;
    }
    case B_TYPE: {
      if (k || n != 1) break;
      PyObject* hold;
      PyObject* t = kind_type(tx, a[0], &hold);
      if (!t) return dc_break(tx, "type() of a %s", dyn_var_kind_name(a[0]));
      int rc = out_const(t, out);
      Py_XDECREF(hold);
      return rc;
    }
    case B_LIST: return b_seq_ctor(tx, DV_LIST, a, n, kwargs, out);
    case B_TUPLE:
      if (n == 1 && !k && a[0]->kind == DV_CONST && PyTuple_CheckExact(a[0]->value)) {
        Py_INCREF(a[0]);
        *out = a[0];
        return DYN_CALL_OK;
      }
      return b_seq_ctor(tx, DV_TUPLE, a, n, kwargs, out);
    case B_DICT: return b_dict(tx, a, n, kwargs, out);
    case B_SET:
    case B_FROZENSET:
      if (k) break;
      return b_set(tx, a, n, b == B_FROZENSET, out);
    case B_INT:
      if (n == 1 && !k && a[0]->kind == DV_SYMINT) {
        PyObject* v;
        int rc = dc_as_int(tx, a[0], &v);
        if (rc != DYN_CALL_OK) return rc;
        rc = out_const(v, out);
        Py_DECREF(v);
        return rc;
      }
      /* fallthrough */
    case B_FLOAT:
    case B_STR:
    case B_DIVMOD:
    case B_ROUND:
    case B_POW:
    case B_CHR:
    case B_ORD:
    case B_REPR:
    case B_FORMAT:
      for (Py_ssize_t i = 0; i < n; i++)
        if (a[i]->kind == DV_TENSOR)
          return dc_break(tx, "builtins.%s() of a tensor (needs its data)", dc_builtin_names[b]);
      return dc_call_real_consts(tx, fn, a, n, kwargs, dc_builtin_names[b], out);
    case B_BOOL: {
      if (k || n > 1) break;
      if (n == 0) return out_bool(0, out);
      int t = 0;
      int rc = dyn_truth(tx, a[0], &t);
      if (rc != DYN_CALL_OK) return rc;
      return out_bool(t, out);
    }
    case B_ITER:
      if (n != 1 || k) break;
      return dyn_iter(tx, a[0], out);
    case B_NEXT:
      if (k) break;
      return b_next(tx, a, n, out);
    case B_CALLABLE:
      if (n != 1 || k) break;
      return b_callable(tx, a[0], out);
    case B_ALL:
    case B_ANY:
      if (n != 1 || k) break;
      return b_truthy_all(tx, a[0], b == B_ANY, out);
    case B_SLICE: {
      if (k || n < 1 || n > 3) break;
      DynVar* none = dyn_var_const(Py_None);
      if (!none) return DYN_CALL_ERROR;
      DynVar* p[3];
      if (n == 1) {
        p[0] = none; p[1] = a[0]; p[2] = none;
      } else {
        p[0] = a[0]; p[1] = a[1]; p[2] = n == 3 ? a[2] : none;
      }
      PyObject* l = PyList_New(3);
      for (int i = 0; l && i < 3; i++) {
        Py_INCREF(p[i]);
        PyList_SET_ITEM(l, i, (PyObject*)p[i]);
      }
      Py_DECREF(none);
      *out = l ? dyn_var_new(DV_SLICE, NULL, l, NULL, NULL) : NULL;
      Py_XDECREF(l);
      if (*out) (*out)->created = 1;
      return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
    }
  }
  return dc_break(tx, "builtins.%s() with these arguments", dc_builtin_names[b]);
}

