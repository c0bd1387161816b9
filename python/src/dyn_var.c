/* dyn_var.c - the variable trackers of the bytecode capture (DynVar: one
 * symbolic value of the evaluator) and the variable builder dyn_wrap, which
 * turns a real Python value found at a source into a tracker and installs
 * the guards its use needs (tensor inputs become graph placeholders,
 * parameters and other tensors reached through attributes/globals become
 * graph constants guarded by identity, constants are guarded by equality,
 * containers by length/keys, modules and functions by identity). */
#include "dyn_eval_priv.h"

#include <string.h>

/* ---------------------------------------------------------------- type */

static int dynvar_traverse(PyObject* self, visitproc visit, void* arg) {
  DynVar* v = (DynVar*)self;
  Py_VISIT(v->value);
  Py_VISIT(v->items);
  Py_VISIT(v->extra);
  Py_VISIT((PyObject*)v->source);
  return 0;
}

static int dynvar_clear(PyObject* self) {
  DynVar* v = (DynVar*)self;
  Py_CLEAR(v->value);
  Py_CLEAR(v->items);
  Py_CLEAR(v->extra);
  Py_CLEAR(v->source);
  return 0;
}

static void dynvar_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  dynvar_clear(self);
  Py_TYPE(self)->tp_free(self);
}

static PyObject* dynvar_repr(PyObject* self) {
  DynVar* v = (DynVar*)self;
  if (v->kind == DV_CONST && v->value) return PyUnicode_FromFormat("DynVar(const %R)", v->value);
  if (v->source) {
    PyObject* r = dyn_source_repr(v->source);
    if (!r) return NULL;
    PyObject* s = PyUnicode_FromFormat("DynVar(%s at %U)", dyn_var_kind_name(v), r);
    Py_DECREF(r);
    return s;
  }
  return PyUnicode_FromFormat("DynVar(%s)", dyn_var_kind_name(v));
}

PyTypeObject DynVar_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ptc._C.DynVar",
    .tp_basicsize = sizeof(DynVar),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "a symbolic value of the bytecode capture (internal)",
    .tp_dealloc = dynvar_dealloc,
    .tp_traverse = dynvar_traverse,
    .tp_clear = dynvar_clear,
    .tp_repr = dynvar_repr,
};

static int dynvar_ready(void) {
  if (DynVar_Type.tp_flags & Py_TPFLAGS_READY) return 0;
  return PyType_Ready(&DynVar_Type);
}

/* ---------------------------------------------------------------- constructors */

DynVar* dyn_var_new(int kind, PyObject* value, PyObject* items, PyObject* extra,
                    DynSource* source) {
  if (dynvar_ready() < 0) return NULL;
  DynVar* v = PyObject_GC_New(DynVar, &DynVar_Type);
  if (!v) return NULL;
  v->kind = kind;
  v->value = value;
  Py_XINCREF(value);
  v->items = items;
  Py_XINCREF(items);
  v->extra = extra;
  Py_XINCREF(extra);
  v->source = source;
  Py_XINCREF((PyObject*)source);
  v->index = 0;
  v->created = 0;
  v->mutated = 0;
  PyObject_GC_Track((PyObject*)v);
  return v;
}

DynVar* dyn_var_const(PyObject* value) {
  return dyn_var_new(DV_CONST, value, NULL, NULL, NULL);
}

DynVar* dyn_var_seq(int kind, PyObject* list_of_vars) {
  DynVar* v = dyn_var_new(kind, NULL, list_of_vars, NULL, NULL);
  if (v) v->created = 1;
  return v;
}

/* ---------------------------------------------------------------- constants */

static PyObject* as_const_list(PyObject* items) {
  if (!items || !PyList_Check(items)) return NULL;
  Py_ssize_t n = PyList_GET_SIZE(items);
  PyObject* out = PyList_New(n);
  if (!out) {
    PyErr_Clear();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* it = PyList_GET_ITEM(items, i);
    PyObject* c = PyObject_TypeCheck(it, &DynVar_Type) ? dyn_var_as_const((DynVar*)it) : NULL;
    if (!c) {
      Py_DECREF(out);
      return NULL;
    }
    PyList_SET_ITEM(out, i, c);
  }
  return out;
}

PyObject* dyn_var_as_const(DynVar* v) {
  if (!v) return NULL;
  switch (v->kind) {
    case DV_CONST:
    case DV_RANGE:
      if (!v->value) return NULL;
      Py_INCREF(v->value);
      return v->value;
    case DV_TUPLE:
    case DV_LIST:
    case DV_SET:
    case DV_SLICE:
    case DV_NAMEDTUPLE: {
      PyObject* l = as_const_list(v->items);
      if (!l) return NULL;
      PyObject* r = NULL;
      if (v->kind == DV_LIST) return l;
      if (v->kind == DV_TUPLE && v->extra == NULL) {
        r = PyList_AsTuple(l);
      } else if (v->kind == DV_SET) {
        r = PySet_New(l);
      } else if (v->kind == DV_SLICE && PyList_GET_SIZE(l) == 3) {
        r = PySlice_New(PyList_GET_ITEM(l, 0), PyList_GET_ITEM(l, 1), PyList_GET_ITEM(l, 2));
      } else if ((v->kind == DV_NAMEDTUPLE && v->value) || (v->kind == DV_TUPLE && v->extra)) {
        PyObject* cls = v->kind == DV_NAMEDTUPLE ? v->value : v->extra;
        PyObject* t = PyList_AsTuple(l);
        PyObject* a = t ? PyTuple_Pack(1, t) : NULL;
        /* namedtuples: tuple.__new__(cls, items), never a user __new__ */
        if (a && v->kind == DV_NAMEDTUPLE && PyType_Check(cls) &&
            PyType_IsSubtype((PyTypeObject*)cls, &PyTuple_Type))
          r = PyTuple_Type.tp_new((PyTypeObject*)cls, a, NULL);
        else if (a && v->kind == DV_TUPLE)
          r = PyObject_CallOneArg(cls, t);
        Py_XDECREF(a);
        Py_XDECREF(t);
      }
      Py_DECREF(l);
      if (!r) PyErr_Clear();
      return r;
    }
    case DV_DICT: {
      if (!v->items || !PyDict_Check(v->items)) return NULL;
      PyObject* out = PyDict_New();
      if (!out) {
        PyErr_Clear();
        return NULL;
      }
      Py_ssize_t pos = 0;
      PyObject *k, *it;
      while (PyDict_Next(v->items, &pos, &k, &it)) {
        PyObject* c = PyObject_TypeCheck(it, &DynVar_Type) ? dyn_var_as_const((DynVar*)it) : NULL;
        if (!c || PyDict_SetItem(out, k, c) < 0) {
          Py_XDECREF(c);
          Py_DECREF(out);
          PyErr_Clear();
          return NULL;
        }
        Py_DECREF(c);
      }
      return out;
    }
    default:
      return NULL;
  }
}

const char* dyn_var_kind_name(DynVar* v) {
  if (!v) return "NULL";
  switch (v->kind) {
    case DV_CONST:
      if (!v->value) return "constant";
      if (v->value == Py_None) return "None";
      return Py_TYPE(v->value)->tp_name;
    case DV_TENSOR: return "tensor";
    case DV_SYMINT: return "symbolic int";
    case DV_TUPLE: return "tuple";
    case DV_LIST: return "list";
    case DV_DICT: return "dict";
    case DV_SET: return "set";
    case DV_SLICE: return "slice";
    case DV_RANGE: return "range";
    case DV_NAMEDTUPLE: return "namedtuple";
    case DV_FUNCTION: return "function";
    case DV_METHOD: return "method";
    case DV_MODULE: return "nn.Module";
    case DV_OBJECT: return v->value ? Py_TYPE(v->value)->tp_name : "object";
    case DV_CELL: return "cell";
    case DV_ITER: return "iterator";
    case DV_NULL: return "NULL";
    case DV_GRAD_CTX: return "grad mode context";
    case DV_OBJ_NEW: return "new object";
    default: return "unknown";
  }
}

/* ---------------------------------------------------------------- torch lookups */

PyObject* dyn_var_torch_attr(const char* dotted) {
  static PyObject* cache = NULL; /* dict dotted name -> object */
  if (!cache && !(cache = PyDict_New())) return NULL;
  PyObject* hit = PyDict_GetItemString(cache, dotted);
  if (hit) return hit;
  const char* dot = strchr(dotted, '.');
  PyObject* obj = PyImport_ImportModule("torch");
  while (obj && dot) {
    const char* next = strchr(dot + 1, '.');
    size_t len = next ? (size_t)(next - dot - 1) : strlen(dot + 1);
    PyObject* name = PyUnicode_FromStringAndSize(dot + 1, (Py_ssize_t)len);
    PyObject* o2 = name ? PyObject_GetAttr(obj, name) : NULL;
    Py_XDECREF(name);
    Py_DECREF(obj);
    obj = o2;
    dot = next;
  }
  if (!obj) return NULL;
  int rc = PyDict_SetItemString(cache, dotted, obj);
  Py_DECREF(obj);
  if (rc < 0) return NULL;
  return PyDict_GetItemString(cache, dotted);
}

int dyn_var_is_plain_tensor(PyObject* value) {
  PyObject* t = dyn_var_torch_attr("torch.Tensor");
  PyObject* p = dyn_var_torch_attr("torch.nn.Parameter");
  if (!t || !p) return -1;
  return (PyObject*)Py_TYPE(value) == t || (PyObject*)Py_TYPE(value) == p;
}

static int isinstance_torch(PyObject* value, const char* dotted) {
  PyObject* cls = dyn_var_torch_attr(dotted);
  if (!cls) return -1;
  return PyObject_IsInstance(value, cls);
}

/* ---------------------------------------------------------------- guard helpers */

/* Small predicates for guards CPython's C API cannot express as data
 * (used as DG_SHAPE callables over their sources), defined once. */
static const char* const helper_src =
    "import math\n"
    "def same_zero_sign(expected, v):\n"
    "    return type(v) is float and math.copysign(1.0, v) == math.copysign(1.0, expected)\n";

static PyObject* helper(const char* name) {
  static PyObject* ns = NULL;
  if (!ns) {
    PyObject* d = PyDict_New();
    PyObject* b = d ? PyEval_GetBuiltins() : NULL;
    if (!b || PyDict_SetItemString(d, "__builtins__", b) < 0) {
      Py_XDECREF(d);
      return NULL;
    }
    PyObject* r = PyRun_String(helper_src, Py_file_input, d, d);
    if (!r) {
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(r);
    ns = d;
  }
  PyObject* fn = PyDict_GetItemString(ns, name);
  if (!fn) PyErr_Format(PyExc_SystemError, "dyn_var helper %s missing", name);
  return fn;
}

/* A DG_SHAPE guard fn(*values at srcs) with fn = functools.partial(helper, arg). */
static int helper_guard(dyn_tx* tx, const char* name, PyObject* arg, PyObject* srcs) {
  static PyObject* partial = NULL;
  if (!partial) {
    PyObject* ft = PyImport_ImportModule("functools");
    partial = ft ? PyObject_GetAttrString(ft, "partial") : NULL;
    Py_XDECREF(ft);
    if (!partial) return -1;
  }
  PyObject* h = helper(name);
  PyObject* fn = h ? PyObject_CallFunctionObjArgs(partial, h, arg, NULL) : NULL;
  int rc = fn ? dyn_guards_add_shape(tx->guards, fn, srcs) : -1;
  Py_XDECREF(fn);
  return rc;
}

int dyn_var_global_guards(dyn_tx* tx) {
  /* ID torch.get_default_dtype() is <dtype>: a C call per check, no Python
   * helper frame */
  DynSource* src = dyn_source_default_dtype();
  PyObject* d = src ? dyn_source_eval(src, NULL) : NULL;
  int rc = d ? dyn_guards_add(tx->guards, DG_ID, src, d, 0) : -1;
  Py_XDECREF(d);
  Py_XDECREF((PyObject*)src);
  return rc;
}

/* 0.0 and -0.0 are equal: a float zero also guards its sign. */
static int float_sign_guard(dyn_tx* tx, PyObject* value, DynSource* src) {
  if (!src || !PyFloat_Check(value) || PyFloat_AS_DOUBLE(value) != 0.0) return 0;
  PyObject* srcs = PyTuple_Pack(1, (PyObject*)src);
  int rc = srcs ? helper_guard(tx, "same_zero_sign", value, srcs) : -1;
  Py_XDECREF(srcs);
  return rc;
}

/* ---------------------------------------------------------------- names */

/* Appends an identifier-safe rendering of `src` to `buf` (used for graph
 * input and parameter names: "x", "self_lin_weight", "xs_0"). */
static void src_name(DynSource* s, char* buf, size_t cap) {
  char tmp[160] = "";
  if (!s) {
    snprintf(buf, cap, "v");
    return;
  }
  switch (s->kind) {
    case DS_LOCAL:
      snprintf(buf, cap, "%s", s->local_name && PyUnicode_Check(s->local_name)
                                   ? PyUnicode_AsUTF8(s->local_name) : "arg");
      break;
    case DS_GLOBAL:
      snprintf(buf, cap, "%s", s->key && PyUnicode_Check(s->key) ? PyUnicode_AsUTF8(s->key) : "g");
      break;
    case DS_CLOSURE:
      snprintf(buf, cap, "closure%d", (int)s->index);
      break;
    case DS_ATTR:
    case DS_ITEM: {
      src_name(s->base, tmp, sizeof tmp);
      PyObject* k = s->key ? PyObject_Str(s->key) : NULL;
      if (!k) PyErr_Clear();
      const char* ks = k ? PyUnicode_AsUTF8(k) : "k";
      if (!ks) {
        PyErr_Clear();
        ks = "k";
      }
      if (s->base && s->base->kind == DS_CONST)
        snprintf(buf, cap, "%s", ks);
      else
        snprintf(buf, cap, "%s_%s", tmp, ks);
      Py_XDECREF(k);
      break;
    }
    default:
      snprintf(buf, cap, "c");
  }
  for (char* p = buf; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
      *p = '_';
}

/* ---------------------------------------------------------------- classification */

static int is_const_type(PyObject* v) {
  return v == Py_None || v == Py_Ellipsis || v == Py_NotImplemented || PyBool_Check(v) ||
         PyLong_CheckExact(v) || PyFloat_CheckExact(v) || PyComplex_CheckExact(v) ||
         PyUnicode_CheckExact(v) || PyBytes_CheckExact(v) || PyLong_Check(v) ||
         PyFloat_Check(v) || PyUnicode_Check(v);
}

/* torch.dtype / device / layout / memory_format / Size: DV_CONST by equality. */
static int is_torch_const(PyObject* v) {
  static const char* names[] = {"torch.dtype", "torch.device", "torch.layout",
                                "torch.memory_format", "torch.Size", "torch.finfo",
                                "torch.iinfo"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    PyObject* cls = dyn_var_torch_attr(names[i]);
    if (!cls) {
      PyErr_Clear();
      continue;
    }
    if ((PyObject*)Py_TYPE(v) == cls) return 1;
  }
  return 0;
}

/* A Python function that belongs to a library we map instead of inlining
 * (torch, ptc, numpy): its __module__ names one of them. */
static int is_library_function(PyObject* fn) {
  PyObject* mod = PyObject_GetAttrString(fn, "__module__");
  if (!mod) {
    PyErr_Clear();
    return 0;
  }
  int lib = 0;
  if (PyUnicode_Check(mod)) {
    const char* m = PyUnicode_AsUTF8(mod);
    if (m) {
      static const char* pfx[] = {"torch", "ptc", "numpy", "functools", "typing", "abc"};
      for (size_t i = 0; i < sizeof pfx / sizeof pfx[0]; i++) {
        size_t n = strlen(pfx[i]);
        if (strncmp(m, pfx[i], n) == 0 && (m[n] == 0 || m[n] == '.')) lib = 1;
      }
    } else {
      PyErr_Clear();
    }
  }
  Py_DECREF(mod);
  return lib;
}

static int is_namedtuple_type(PyTypeObject* tp) {
  if (!PyType_IsSubtype(tp, &PyTuple_Type) || tp == &PyTuple_Type) return 0;
  PyObject* f = PyObject_GetAttrString((PyObject*)tp, "_fields");
  if (!f) {
    PyErr_Clear();
    return 0;
  }
  int ok = PyTuple_Check(f);
  Py_DECREF(f);
  return ok;
}

/* Whether a tensor found at `src` is a graph input (reached from the frame's
 * arguments or closure cells through items and attributes of plain objects)
 * rather than a constant (parameters; tensors held by nn.Modules - buffers -,
 * globals). */
static int tensor_is_input(dyn_tx* tx, PyObject* t, DynSource* src) {
  PyObject* param = dyn_var_torch_attr("torch.nn.Parameter");
  if (!param) {
    PyErr_Clear();
    return 0;
  }
  if (PyObject_TypeCheck(t, (PyTypeObject*)param)) return 0;
  for (DynSource* s = src; s; s = s->base) {
    if (s->kind == DS_ITEM) continue;
    if (s->kind == DS_ATTR) {
      if (!s->base || !tx) return 0;
      PyObject* obj = dyn_source_eval(s->base, tx->view);
      int mod = obj ? isinstance_torch(obj, "torch.nn.Module") : 1;
      Py_XDECREF(obj);
      PyErr_Clear();
      if (mod) return 0;
      continue;
    }
    return s->kind == DS_LOCAL || s->kind == DS_CLOSURE;
  }
  return 0;
}

/* ---------------------------------------------------------------- wrap helpers */

static int guard(dyn_tx* tx, int kind, DynSource* src, PyObject* expected, Py_ssize_t n) {
  if (!src) return 0;
  return dyn_guards_add(tx->guards, kind, src, expected, n);
}

/* A tracker for a value the trace cannot use: any use breaks with `why`
 * (DV_OBJECT whose extra is the reason str). */
static DynVar* unusable(PyObject* value, DynSource* src, const char* why) {
  PyObject* w = PyUnicode_FromString(why);
  if (!w) return NULL;
  DynVar* v = dyn_var_new(DV_OBJECT, value, NULL, w, src);
  Py_DECREF(w);
  return v;
}

static int remember(dyn_tx* tx, PyObject* value, DynVar* v) {
  PyObject* key = PyLong_FromVoidPtr(value);
  if (!key) return -1;
  int rc = PyDict_SetItem(tx->wrapped, key, (PyObject*)v);
  Py_DECREF(key);
  return rc;
}

/* The dims of tensor `t` at `src` to trace as dynamic (a new tuple). */
static PyObject* dynamic_dims_for(dyn_tx* tx, PyObject* t, DynSource* src) {
  PyObject* cfg = tx->config ? PyObject_GetAttrString(tx->config, "dynamic") : NULL;
  if (!cfg) PyErr_Clear();
  PyObject* dims = NULL;
  if (cfg == Py_True) {
    PyObject* shape = PyObject_GetAttrString(t, "shape");
    Py_ssize_t nd = shape ? PyObject_Length(shape) : -1;
    dims = nd >= 0 ? PyList_New(0) : NULL;
    for (Py_ssize_t d = 0; dims && d < nd; d++) {
      PyObject* sz = PySequence_GetItem(shape, d);
      long s = sz ? PyLong_AsLong(sz) : -1;
      Py_XDECREF(sz);
      if (s >= 2) {
        PyObject* di = PyLong_FromSsize_t(d);
        if (!di || PyList_Append(dims, di) < 0) Py_CLEAR(dims);
        Py_XDECREF(di);
      }
    }
    Py_XDECREF(shape);
  } else if (cfg != Py_False && tx->dynamic && PyDict_Check(tx->dynamic)) {
    PyObject* r = dyn_source_repr(src);
    PyObject* hit = r ? PyDict_GetItemWithError(tx->dynamic, r) : NULL;
    Py_XDECREF(r);
    if (hit) dims = PySequence_List(hit);
  }
  Py_XDECREF(cfg);
  if (PyErr_Occurred()) {
    Py_XDECREF(dims);
    return NULL;
  }
  if (!dims) return PyTuple_New(0);
  if (PyList_Sort(dims) < 0) {
    Py_DECREF(dims);
    return NULL;
  }
  PyObject* tup = PyList_AsTuple(dims);
  Py_DECREF(dims);
  return tup;
}

static DynVar* wrap_tensor(dyn_tx* tx, PyObject* t, DynSource* src) {
  char name[200];
  src_name(src, name, sizeof name);
  int input = tensor_is_input(tx, t, src);
  PyObject* proxy = NULL;
  PyObject* dims = NULL;
  if (input) {
    dims = dynamic_dims_for(tx, t, src);
    if (!dims) return NULL;
    proxy = PyObject_CallMethod(tx->og, "add_input", "OsO", t, name, dims);
  } else {
    proxy = PyObject_CallMethod(tx->og, "add_param", "Os", t, name);
  }
  if (!proxy) {
    /* ptc cannot take it (device mix, dtype, ...): usable only by plain Python */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject* msg = ev ? PyObject_Str(ev) : NULL;
    char why[300];
    snprintf(why, sizeof why, "tensor %s: %s", name,
             msg && PyUnicode_Check(msg) ? PyUnicode_AsUTF8(msg) : "not supported");
    Py_XDECREF(msg);
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
    PyErr_Clear();
    Py_XDECREF(dims);
    return unusable(t, src, why);
  }
  DynVar* v = dyn_var_new(DV_TENSOR, proxy, NULL, NULL, src);
  Py_DECREF(proxy);
  if (!v) {
    Py_XDECREF(dims);
    return NULL;
  }
  int rc;
  if (input) {
    PyObject* dset = PyFrozenSet_New(dims);
    rc = dset ? dyn_guards_add_tensor(tx->guards, src, t, PyTuple_GET_SIZE(dims) ? dset : NULL)
              : -1;
    Py_XDECREF(dset);
    if (rc == 0) rc = PyList_Append(tx->inputs, (PyObject*)src);
  } else {
    rc = guard(tx, DG_ID, src, t, 0);
  }
  Py_XDECREF(dims);
  if (rc < 0 || remember(tx, t, v) < 0) {
    Py_DECREF(v);
    return NULL;
  }
  return v;
}

enum { WRAP_MAX_ITEMS = 1024 };

static DynVar* wrap_sequence(dyn_tx* tx, PyObject* value, PyObject* fast, DynSource* src,
                             int kind) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject* items = PyList_New(0);
  if (!items) return NULL;
  DynVar* v = dyn_var_new(kind, value, items, NULL, src);
  Py_DECREF(items);
  if (!v) return NULL;
  if (kind == DV_NAMEDTUPLE) {
    Py_INCREF(Py_TYPE(value));
    Py_SETREF(v->value, (PyObject*)Py_TYPE(value));
    Py_INCREF(value);
    v->extra = value; /* the real object */
  }
  if (guard(tx, DG_LEN, src, (PyObject*)Py_TYPE(value), n) < 0 || remember(tx, value, v) < 0) {
    Py_DECREF(v);
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* key = PyLong_FromSsize_t(i);
    DynSource* is = key ? dyn_source_item(src, key) : NULL;
    Py_XDECREF(key);
    DynVar* it = is ? dyn_wrap(tx, PySequence_Fast_GET_ITEM(fast, i), is) : NULL;
    Py_XDECREF(is);
    if (!it || PyList_Append(v->items, (PyObject*)it) < 0) {
      Py_XDECREF(it);
      Py_DECREF(v);
      return NULL;
    }
    Py_DECREF(it);
  }
  return v;
}

static DynVar* wrap_dict(dyn_tx* tx, PyObject* value, DynSource* src) {
  PyObject* keys = PyDict_Keys(value);
  if (!keys) return NULL;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys); i++) {
    PyObject* k = PyList_GET_ITEM(keys, i);
    if (!(PyUnicode_CheckExact(k) || PyLong_CheckExact(k) || PyBool_Check(k) || k == Py_None)) {
      Py_DECREF(keys);
      DynVar* v = unusable(value, src, "dict with non-constant keys");
      if (v && guard(tx, DG_TYPE, src, (PyObject*)Py_TYPE(value), 0) < 0) Py_CLEAR(v);
      return v;
    }
  }
  PyObject* kt = PyList_AsTuple(keys);
  PyObject* items = kt ? PyDict_New() : NULL;
  DynVar* v = items ? dyn_var_new(DV_DICT, value, items, NULL, src) : NULL;
  Py_XDECREF(items);
  if (!v || guard(tx, DG_DICT_KEYS, src, kt, 0) < 0 || remember(tx, value, v) < 0) {
    Py_XDECREF(v);
    Py_XDECREF(kt);
    Py_DECREF(keys);
    return NULL;
  }
  Py_DECREF(kt);
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys); i++) {
    PyObject* k = PyList_GET_ITEM(keys, i);
    PyObject* real = PyDict_GetItemWithError(value, k);
    DynSource* is = real ? dyn_source_item(src, k) : NULL;
    DynVar* it = is ? dyn_wrap(tx, real, is) : NULL;
    Py_XDECREF(is);
    if (!it || PyDict_SetItem(v->items, k, (PyObject*)it) < 0) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "dict changed while wrapped");
      Py_XDECREF(it);
      Py_DECREF(keys);
      Py_DECREF(v);
      return NULL;
    }
    Py_DECREF(it);
  }
  Py_DECREF(keys);
  return v;
}

/* A guard "the objects at sources a and b are the same object" (a DG_SHAPE
 * guard over both: a fresh functools.partial(operator.is_) per pair, since
 * shape guards are de-duplicated by callable identity). */
static int same_object_guard(dyn_tx* tx, DynSource* a, DynSource* b) {
  static PyObject* partial = NULL;
  static PyObject* is_ = NULL;
  if (!partial) {
    PyObject* ft = PyImport_ImportModule("functools");
    PyObject* op = ft ? PyImport_ImportModule("operator") : NULL;
    partial = ft && op ? PyObject_GetAttrString(ft, "partial") : NULL;
    is_ = partial ? PyObject_GetAttrString(op, "is_") : NULL;
    Py_XDECREF(ft);
    Py_XDECREF(op);
    if (!is_) {
      Py_CLEAR(partial);
      return -1;
    }
  }
  PyObject* fn = PyObject_CallOneArg(partial, is_);
  PyObject* srcs = fn ? PyTuple_Pack(2, (PyObject*)a, (PyObject*)b) : NULL;
  int rc = srcs ? dyn_guards_add_shape(tx->guards, fn, srcs) : -1;
  Py_XDECREF(fn);
  Py_XDECREF(srcs);
  return rc;
}

/* The tracker already made for this real object (by identity), re-reached
 * through `src`: identity-guarded trackers get the same identity guard on
 * the new source; others (inputs, containers, objects) keep one tracker
 * with a guard that both sources hold the same object. (Objects that are
 * distinct while tracing but aliased in a later call are not detected:
 * only in-place writes could tell the difference.) */
static DynVar* rewrap(dyn_tx* tx, PyObject* value, DynVar* old, DynSource* src) {
  if (!src || !old->source || dyn_source_equal(old->source, src)) {
    Py_INCREF(old);
    return old;
  }
  int id_guarded = old->kind == DV_MODULE || old->kind == DV_FUNCTION ||
                   old->kind == DV_CONST ||
                   (old->kind == DV_TENSOR && !tensor_is_input(tx, value, old->source));
  if (id_guarded ? guard(tx, DG_ID, src, value, 0) < 0
                 : same_object_guard(tx, old->source, src) < 0)
    return NULL;
  Py_INCREF(old);
  return old;
}

/* ---------------------------------------------------------------- dyn_wrap */

DynVar* dyn_wrap(dyn_tx* tx, PyObject* value, DynSource* src) {
  if (!value) {
    PyErr_SetString(PyExc_SystemError, "dyn_wrap: NULL value");
    return NULL;
  }
  /* constants: by equality, never shared */
  if (is_const_type(value) || is_torch_const(value)) {
    int kind = (value == Py_None || value == Py_Ellipsis || value == Py_NotImplemented) ? DG_ID
                                                                                        : DG_EQ;
    if (guard(tx, kind, src, value, 0) < 0 || float_sign_guard(tx, value, src) < 0) return NULL;
    return dyn_var_new(DV_CONST, value, NULL, NULL, src);
  }
  if (PyRange_Check(value)) {
    if (guard(tx, DG_EQ, src, value, 0) < 0) return NULL;
    return dyn_var_new(DV_RANGE, value, NULL, NULL, src);
  }
  PyObject* key = PyLong_FromVoidPtr(value);
  if (!key) return NULL;
  PyObject* old = PyDict_GetItemWithError(tx->wrapped, key);
  Py_DECREF(key);
  if (old) return rewrap(tx, value, (DynVar*)old, src);
  if (PyErr_Occurred()) return NULL;

  int r = isinstance_torch(value, "torch.Tensor");
  if (r < 0) return NULL;
  if (r) {
    int plain = dyn_var_is_plain_tensor(value);
    if (plain < 0) return NULL;
    if (!plain) {
      if (guard(tx, DG_TYPE, src, (PyObject*)Py_TYPE(value), 0) < 0) return NULL;
      return unusable(value, src, "tensor subclass");
    }
    return wrap_tensor(tx, value, src);
  }
  r = isinstance_torch(value, "torch.nn.Module");
  if (r < 0) return NULL;
  if (r) {
    PyObject* items = PyDict_New();
    DynVar* v = items ? dyn_var_new(DV_MODULE, value, items, NULL, src) : NULL;
    Py_XDECREF(items);
    if (!v) return NULL;
    PyObject* training = PyObject_GetAttrString(value, "training");
    int t = training ? PyObject_IsTrue(training) : -1;
    Py_XDECREF(training);
    if (t < 0 || guard(tx, DG_ID, src, value, 0) < 0) {
      Py_DECREF(v);
      return NULL;
    }
    if (src) {
      PyObject* nm = PyUnicode_FromString("training");
      DynSource* ts = nm ? dyn_source_attr(src, nm) : NULL;
      Py_XDECREF(nm);
      if (!ts || guard(tx, DG_TRUTH, ts, NULL, t) < 0) {
        Py_XDECREF(ts);
        Py_DECREF(v);
        return NULL;
      }
      Py_DECREF(ts);
    }
    if (remember(tx, value, v) < 0) {
      Py_DECREF(v);
      return NULL;
    }
    return v;
  }
  if (PyList_CheckExact(value) || PyTuple_CheckExact(value) ||
      (PyTuple_Check(value) && is_namedtuple_type(Py_TYPE(value)))) {
    Py_ssize_t n = PySequence_Length(value);
    if (n > WRAP_MAX_ITEMS) {
      if (guard(tx, DG_TYPE, src, (PyObject*)Py_TYPE(value), 0) < 0) return NULL;
      return unusable(value, src, "sequence too long to trace");
    }
    PyObject* fast = PySequence_Fast(value, "sequence");
    if (!fast) return NULL;
    int kind = PyList_CheckExact(value) ? DV_LIST : PyTuple_CheckExact(value) ? DV_TUPLE
                                                                              : DV_NAMEDTUPLE;
    DynVar* v = wrap_sequence(tx, value, fast, src, kind);
    Py_DECREF(fast);
    return v;
  }
  if (PyDict_CheckExact(value)) {
    if (PyDict_GET_SIZE(value) > WRAP_MAX_ITEMS) {
      if (guard(tx, DG_TYPE, src, (PyObject*)Py_TYPE(value), 0) < 0) return NULL;
      return unusable(value, src, "dict too large to trace");
    }
    return wrap_dict(tx, value, src);
  }
  if (PyAnySet_CheckExact(value)) {
    PyObject* items = PyList_New(0);
    PyObject* it = items ? PyObject_GetIter(value) : NULL;
    PyObject* x;
    while (it && (x = PyIter_Next(it))) {
      if (!is_const_type(x)) {
        Py_DECREF(x);
        Py_DECREF(it);
        Py_DECREF(items);
        if (guard(tx, DG_TYPE, src, (PyObject*)Py_TYPE(value), 0) < 0) return NULL;
        return unusable(value, src, "set with non-constant elements");
      }
      DynVar* c = dyn_var_const(x);
      Py_DECREF(x);
      if (!c || PyList_Append(items, (PyObject*)c) < 0) {
        Py_XDECREF(c);
        Py_DECREF(it);
        Py_DECREF(items);
        return NULL;
      }
      Py_DECREF(c);
    }
    Py_XDECREF(it);
    if (!items || PyErr_Occurred()) {
      Py_XDECREF(items);
      return NULL;
    }
    PyObject* snap = PyFrozenSet_CheckExact(value) ? (Py_INCREF(value), value) : PySet_New(value);
    int rc = snap ? guard(tx, DG_EQ, src, snap, 0) : -1;
    Py_XDECREF(snap);
    DynVar* v = rc < 0 ? NULL : dyn_var_new(DV_SET, value, items, NULL, src);
    Py_DECREF(items);
    if (v && remember(tx, value, v) < 0) Py_CLEAR(v);
    return v;
  }
  if (PySlice_Check(value)) {
    PySliceObject* s = (PySliceObject*)value;
    PyObject* parts[3] = {s->start, s->stop, s->step};
    PyObject* items = PyList_New(3);
    if (!items) return NULL;
    for (int i = 0; i < 3; i++) {
      if (!is_const_type(parts[i])) {
        Py_DECREF(items);
        return unusable(value, src, "slice of non-constants");
      }
      DynVar* c = dyn_var_const(parts[i]);
      if (!c) {
        Py_DECREF(items);
        return NULL;
      }
      PyList_SET_ITEM(items, i, (PyObject*)c);
    }
    DynVar* v = guard(tx, DG_EQ, src, value, 0) < 0 ? NULL
                                                    : dyn_var_new(DV_SLICE, NULL, items, NULL, src);
    Py_DECREF(items);
    return v;
  }
  if (PyFunction_Check(value)) {
    int lib = is_library_function(value);
    DynVar* v = dyn_var_new(lib ? DV_CONST : DV_FUNCTION, value, NULL, NULL, src);
    if (!v || guard(tx, DG_ID, src, value, 0) < 0 || remember(tx, value, v) < 0) {
      Py_XDECREF(v);
      return NULL;
    }
    return v;
  }
  if (PyMethod_Check(value)) {
    PyObject* fn = PyMethod_GET_FUNCTION(value);
    PyObject* self = PyMethod_GET_SELF(value);
    PyObject* nf = PyUnicode_FromString("__func__");
    PyObject* ns = PyUnicode_FromString("__self__");
    DynSource* fs = nf && src ? dyn_source_attr(src, nf) : NULL;
    DynSource* ss = ns && src ? dyn_source_attr(src, ns) : NULL;
    Py_XDECREF(nf);
    Py_XDECREF(ns);
    if (PyErr_Occurred()) {
      Py_XDECREF(fs);
      Py_XDECREF(ss);
      return NULL;
    }
    DynVar* fv = dyn_wrap(tx, fn, fs);
    DynVar* sv = fv ? dyn_wrap(tx, self, ss) : NULL;
    Py_XDECREF(fs);
    Py_XDECREF(ss);
    DynVar* v = sv ? dyn_var_new(DV_METHOD, (PyObject*)fv, NULL, (PyObject*)sv, src) : NULL;
    Py_XDECREF(fv);
    Py_XDECREF(sv);
    if (v && guard(tx, DG_TYPE, src, (PyObject*)Py_TYPE(value), 0) < 0) Py_CLEAR(v);
    return v;
  }
  if (PyType_Check(value) || PyModule_Check(value) || PyCFunction_Check(value) ||
      PyCode_Check(value) || Py_TYPE(value) == &PyMethodDescr_Type ||
      Py_TYPE(value) == &PyWrapperDescr_Type || Py_TYPE(value) == &PyClassMethodDescr_Type ||
      Py_TYPE(value) == &PyGetSetDescr_Type || Py_TYPE(value) == &PyMemberDescr_Type) {
    if (guard(tx, DG_ID, src, value, 0) < 0) return NULL;
    DynVar* v = dyn_var_new(DV_CONST, value, NULL, NULL, src);
    if (v && remember(tx, value, v) < 0) Py_CLEAR(v);
    return v;
  }
  /* any other object: tracked by type; attribute reads go through sources */
  PyObject* items = PyDict_New();
  DynVar* v = items ? dyn_var_new(DV_OBJECT, value, items, NULL, src) : NULL;
  Py_XDECREF(items);
  if (!v || guard(tx, DG_TYPE, src, (PyObject*)Py_TYPE(value), 0) < 0 ||
      remember(tx, value, v) < 0) {
    Py_XDECREF(v);
    return NULL;
  }
  return v;
}
