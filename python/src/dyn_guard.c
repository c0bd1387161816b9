/* dyn_guard.c - sources (where a value lives, relative to a frame) and guard
 * sets (the conditions under which a cache entry may run). Guard checking is
 * the per-call hot path of ptc.compile: it stays in C, compares types,
 * dtypes and identities by pointer and reads tensor metadata through the
 * tensor type's own getset/method descriptors (resolved once), not through
 * attribute lookup. */
#include "dyn.h"

#include <string.h>

/* ======================================================================
 * Sources
 * ====================================================================== */

/* DynSource deallocator. */
static void source_dealloc(PyObject* o) {
  DynSource* s = (DynSource*)o;
  Py_XDECREF(s->key);
  Py_XDECREF((PyObject*)s->base);
  Py_XDECREF(s->local_name);
  Py_TYPE(o)->tp_free(o);
}

/* repr(): <DynSource L['x'].w>. */
static PyObject* source_tp_repr(PyObject* o) {
  PyObject* r = dyn_source_repr((DynSource*)o);
  if (!r) return NULL;
  PyObject* out = PyUnicode_FromFormat("<DynSource %U>", r);
  Py_DECREF(r);
  return out;
}

/* DynSource.eval (tests): evaluates against a view made of Python lists. */
static PyObject* source_eval_py(PyObject* o, PyObject* args) {
  /* DynSource.eval(locals_list, globals, builtins=None, closure=None): tests */
  PyObject *locals, *globals, *builtins = NULL, *closure = NULL;
  if (!PyArg_ParseTuple(args, "O!O!|OO", &PyList_Type, &locals, &PyDict_Type, &globals,
                        &builtins, &closure))
    return NULL;
  dyn_frame_view v = {0};
  v.globals = globals;
  v.builtins = (builtins && builtins != Py_None) ? builtins : PyEval_GetBuiltins();
  v.locals = (PyObject* const*)((PyListObject*)locals)->ob_item;
  v.n_locals = v.n_args = PyList_GET_SIZE(locals);
  v.closure = (closure && closure != Py_None) ? closure : NULL;
  return dyn_source_eval((DynSource*)o, &v);
}

static PyMethodDef source_methods[] = {
    {"eval", source_eval_py, METH_VARARGS,
     "eval(locals, globals, builtins=None, closure=None): the value at this source (tests)."},
    {NULL, NULL, 0, NULL}};

/* ==/!= through dyn_source_equal. */
static PyObject* source_richcompare(PyObject* a, PyObject* b, int op) {
  if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(b, &DynSource_Type))
    Py_RETURN_NOTIMPLEMENTED;
  int eq = dyn_source_equal((DynSource*)a, (DynSource*)b);
  if (eq < 0) return NULL;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

PyTypeObject DynSource_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ptc._C.DynSource",
    .tp_basicsize = sizeof(DynSource),
    .tp_dealloc = source_dealloc,
    .tp_repr = source_tp_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Where a value lives relative to a captured frame (ptc.compile internals).",
    .tp_richcompare = source_richcompare,
    .tp_methods = source_methods,
};

/* A new source (key/base referenced). */
static DynSource* source_new(int kind, Py_ssize_t index, PyObject* key, DynSource* base) {
  DynSource* s = PyObject_New(DynSource, &DynSource_Type);
  if (!s) return NULL;
  s->kind = kind;
  s->index = index;
  s->key = key;
  Py_XINCREF(key);
  s->base = base;
  Py_XINCREF((PyObject*)base);
  s->local_name = NULL;
  return s;
}

/* Constructors (dyn.h). */
DynSource* dyn_source_local(Py_ssize_t index, PyObject* name) {
  DynSource* s = source_new(DS_LOCAL, index, NULL, NULL);
  if (s) {
    s->local_name = name;
    Py_XINCREF(name);
  }
  return s;
}
DynSource* dyn_source_global(PyObject* name) { return source_new(DS_GLOBAL, 0, name, NULL); }
DynSource* dyn_source_closure(Py_ssize_t index) { return source_new(DS_CLOSURE, index, NULL, NULL); }
DynSource* dyn_source_attr(DynSource* base, PyObject* name) {
  return source_new(DS_ATTR, 0, name, base);
}
DynSource* dyn_source_item(DynSource* base, PyObject* key) {
  return source_new(DS_ITEM, 0, key, base);
}
DynSource* dyn_source_const(PyObject* obj) { return source_new(DS_CONST, 0, obj, NULL); }
DynSource* dyn_source_grad_mode(void) { return source_new(DS_GRAD_MODE, 0, NULL, NULL); }
DynSource* dyn_source_default_dtype(void) { return source_new(DS_DEFAULT_DTYPE, 0, NULL, NULL); }
DynSource* dyn_source_type(DynSource* base) { return source_new(DS_TYPE, 0, NULL, base); }

/* torch.is_grad_enabled, imported on first use (borrowed into a static). */
static PyObject* g_is_grad_enabled;

/* torch.is_grad_enabled() (new reference). */
static PyObject* grad_mode_value(void) {
  if (!g_is_grad_enabled) {
    PyObject* torch = PyImport_ImportModule("torch");
    if (!torch) return NULL;
    g_is_grad_enabled = PyObject_GetAttrString(torch, "is_grad_enabled");
    Py_DECREF(torch);
    if (!g_is_grad_enabled) return NULL;
  }
  return PyObject_CallNoArgs(g_is_grad_enabled);
}

/* torch.get_default_dtype, imported on first use (borrowed into a static). */
static PyObject* g_get_default_dtype;

/* torch.get_default_dtype() (new reference). */
static PyObject* default_dtype_value(void) {
  if (!g_get_default_dtype) {
    PyObject* torch = PyImport_ImportModule("torch");
    if (!torch) return NULL;
    g_get_default_dtype = PyObject_GetAttrString(torch, "get_default_dtype");
    Py_DECREF(torch);
    if (!g_get_default_dtype) return NULL;
  }
  return PyObject_CallNoArgs(g_get_default_dtype);
}

/* DS_LOCAL: the argument slot (UnboundLocalError when empty). */
static PyObject* eval_local(DynSource* s, const dyn_frame_view* v) {
  PyObject* o = (s->index >= 0 && s->index < v->n_locals) ? v->locals[s->index] : NULL;
  if (!o) {
    PyErr_Format(PyExc_UnboundLocalError, "source: local %zd is unbound", s->index);
    return NULL;
  }
  return Py_NewRef(o);
}

/* DS_GLOBAL: globals, then builtins (NameError when absent). */
static PyObject* eval_global(DynSource* s, const dyn_frame_view* v) {
  PyObject* o = v->globals ? PyDict_GetItemWithError(v->globals, s->key) : NULL;
  if (!o && !PyErr_Occurred() && v->builtins) {
    if (PyDict_Check(v->builtins))
      o = PyDict_GetItemWithError(v->builtins, s->key);
    else
      return PyObject_GetItem(v->builtins, s->key);
  }
  if (!o) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_NameError, "name '%U' is not defined", s->key);
    return NULL;
  }
  return Py_NewRef(o);
}

/* DS_CLOSURE: the contents of closure cell `index`. */
static PyObject* eval_closure(DynSource* s, const dyn_frame_view* v) {
  if (!v->closure || !PyTuple_Check(v->closure) || s->index < 0 ||
      s->index >= PyTuple_GET_SIZE(v->closure)) {
    PyErr_SetString(PyExc_ValueError, "source: no such closure cell");
    return NULL;
  }
  PyObject* cell = PyTuple_GET_ITEM(v->closure, s->index);
  PyObject* o = PyCell_Check(cell) ? PyCell_GET(cell) : NULL;
  if (!o) {
    PyErr_SetString(PyExc_ValueError, "source: empty closure cell");
    return NULL;
  }
  return Py_NewRef(o);
}

/* base[key] with list/tuple/dict fast paths. */
static PyObject* eval_item(PyObject* base, PyObject* key) {
  if (PyLong_CheckExact(key) && (PyList_CheckExact(base) || PyTuple_CheckExact(base))) {
    Py_ssize_t i = PyLong_AsSsize_t(key);
    if (i == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t n = Py_SIZE(base);
    if (i < 0) i += n;
    if (i < 0 || i >= n) {
      PyErr_SetString(PyExc_IndexError, "source: index out of range");
      return NULL;
    }
    return Py_NewRef(PyList_CheckExact(base) ? PyList_GET_ITEM(base, i) : PyTuple_GET_ITEM(base, i));
  }
  if (PyDict_CheckExact(base)) {
    PyObject* o = PyDict_GetItemWithError(base, key);
    if (!o) {
      if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, key);
      return NULL;
    }
    return Py_NewRef(o);
  }
  return PyObject_GetItem(base, key);
}

/* getattr(base, name); for a plain module and a non-dunder name straight
 * from the module's dict (what the generic lookup finds there: the module
 * type's data descriptors all have dunder names), else PyObject_GetAttr
 * (absent names: module __getattr__, the AttributeError). */
static PyObject* module_attr(PyObject* base, PyObject* name) {
  if (PyModule_CheckExact(base) && PyUnicode_Check(name) &&
      !(PyUnicode_GET_LENGTH(name) >= 2 && PyUnicode_READ_CHAR(name, 0) == '_' &&
        PyUnicode_READ_CHAR(name, 1) == '_')) {
    PyObject* d = PyModule_GetDict(base); /* borrowed */
    PyObject* o = d ? PyDict_GetItemWithError(d, name) : NULL;
    if (o) return Py_NewRef(o);
    if (PyErr_Occurred()) return NULL;
  }
  return PyObject_GetAttr(base, name);
}

/* Per-check memo of evaluated bases (a small open-addressing table keyed by
 * source pointer) so guards on L['self'].a.b.w and L['self'].a.b.v do not
 * walk L['self'].a.b twice. Values are strong references. */
#define MEMO_CAP 128
typedef struct memo {
  DynSource* k[MEMO_CAP];
  PyObject* v[MEMO_CAP];
  int n;
  int inited; /* k[] zeroed (done on first use: most checks never need it) */
} memo;

/* Drops the memo's references. */
static void memo_clear(memo* m) {
  if (!m || !m->inited || !m->n) return;
  for (int i = 0; i < MEMO_CAP; i++)
    if (m->k[i]) {
      m->k[i] = NULL;
      Py_CLEAR(m->v[i]);
    }
  m->n = 0;
}

/* The slot of `s` in the memo (its own or the first free), -1 when full. */
static int memo_slot(memo* m, DynSource* s) {
  size_t h = ((size_t)s >> 4) * 2654435761u;
  for (int p = 0; p < MEMO_CAP; p++) {
    int i = (int)((h + (size_t)p) % MEMO_CAP);
    if (m->k[i] == s || !m->k[i]) return i;
  }
  return -1;
}

static PyObject* source_eval_m(DynSource* s, const dyn_frame_view* v, memo* m);

/* Evaluates a base source through the memo (when one is given). */
static PyObject* eval_base(DynSource* b, const dyn_frame_view* v, memo* m) {
  if (!m || b->kind == DS_LOCAL || b->kind == DS_CONST) return source_eval_m(b, v, m);
  if (!m->inited) {
    memset(m->k, 0, sizeof m->k);
    m->inited = 1;
  }
  int i = memo_slot(m, b);
  if (i >= 0 && m->k[i] == b) return Py_NewRef(m->v[i]);
  PyObject* o = source_eval_m(b, v, m);
  if (o && i >= 0 && m->n < MEMO_CAP * 3 / 4) {
    m->k[i] = b;
    m->v[i] = Py_NewRef(o);
    m->n++;
  }
  return o;
}

/* dyn_source_eval with an optional memo for bases. */
static PyObject* source_eval_m(DynSource* s, const dyn_frame_view* v, memo* m) {
  PyObject *base, *o;
  switch (s->kind) {
  case DS_LOCAL: return eval_local(s, v);
  case DS_GLOBAL: return eval_global(s, v);
  case DS_CLOSURE: return eval_closure(s, v);
  case DS_CONST: return Py_NewRef(s->key);
  case DS_GRAD_MODE: return grad_mode_value();
  case DS_DEFAULT_DTYPE: return default_dtype_value();
  case DS_ATTR:
  case DS_ITEM:
  case DS_TYPE:
    base = eval_base(s->base, v, m);
    if (!base) return NULL;
    if (s->kind == DS_ATTR)
      o = module_attr(base, s->key);
    else if (s->kind == DS_ITEM)
      o = eval_item(base, s->key);
    else
      o = Py_NewRef((PyObject*)Py_TYPE(base));
    Py_DECREF(base);
    return o;
  default:
    PyErr_Format(PyExc_SystemError, "source: unknown kind %d", s->kind);
    return NULL;
  }
}

PyObject* dyn_source_eval(DynSource* s, const dyn_frame_view* v) { return source_eval_m(s, v, NULL); }

/* (dyn.h) */
PyObject* dyn_source_repr(DynSource* s) {
  PyObject *b, *r;
  switch (s->kind) {
  case DS_LOCAL:
    if (s->local_name) return PyUnicode_FromFormat("L[%R]", s->local_name);
    return PyUnicode_FromFormat("L[%zd]", s->index);
  case DS_GLOBAL: return PyUnicode_FromFormat("G[%R]", s->key);
  case DS_CLOSURE: return PyUnicode_FromFormat("C[%zd]", s->index);
  case DS_CONST: return PyUnicode_FromFormat("K(%s@%p)", Py_TYPE(s->key)->tp_name, (void*)s->key);
  case DS_GRAD_MODE: return PyUnicode_FromString("torch.is_grad_enabled()");
  case DS_DEFAULT_DTYPE: return PyUnicode_FromString("torch.get_default_dtype()");
  case DS_ATTR:
  case DS_ITEM:
  case DS_TYPE:
    b = dyn_source_repr(s->base);
    if (!b) return NULL;
    if (s->kind == DS_ATTR)
      r = PyUnicode_FromFormat("%U.%U", b, s->key);
    else if (s->kind == DS_ITEM)
      r = PyUnicode_FromFormat("%U[%R]", b, s->key);
    else
      r = PyUnicode_FromFormat("type(%U)", b);
    Py_DECREF(b);
    return r;
  default: return PyUnicode_FromFormat("<source kind %d>", s->kind);
  }
}

/* (dyn.h) Same kind, index and key along the whole base chain. */
int dyn_source_equal(DynSource* a, DynSource* b) {
  while (1) {
    if (a == b) return 1;
    if (!a || !b || a->kind != b->kind || a->index != b->index) return 0;
    if (a->key != b->key) {
      if (!a->key || !b->key || a->kind == DS_CONST || Py_TYPE(a->key) != Py_TYPE(b->key)) return 0;
      int eq = PyObject_RichCompareBool(a->key, b->key, Py_EQ);
      if (eq <= 0) {
        PyErr_Clear();
        return 0;
      }
    }
    a = a->base;
    b = b->base;
  }
}

/* ======================================================================
 * Tensor metadata access (fast path)
 * ====================================================================== */
/* The getset getters / method descriptors of torch's tensor base type,
 * resolved once from the first tensor guard. A guard's tensor type uses the
 * fast path only when its own lookups find these same descriptors. */
static struct {
  int ready;
  PyObject *d_dtype, *d_device, *d_requires_grad, *d_shape, *d_stride; /* strong */
  PyObject* d_is_cpu; /* strong or NULL: a cpu device is checked through is_cpu (no
                         torch.device object made per check) */
} T;

/* The MRO lookup of `name` on `tp` (borrowed, NULL when absent). */
static PyObject* type_lookup(PyTypeObject* tp, const char* name) {
  PyObject* n = PyUnicode_InternFromString(name);
  if (!n) return NULL;
  PyObject* d = _PyType_Lookup(tp, n); /* borrowed, no exception */
  Py_DECREF(n);
  return d;
}

/* Resolves T from the first tensor type seen (0; leaves T unset for
 * unusual types, which then use getattr). */
static int tensor_descrs_init(PyTypeObject* tp) {
  if (T.ready) return 0;
  PyObject* d[5];
  const char* names[5] = {"dtype", "device", "requires_grad", "shape", "stride"};
  for (int i = 0; i < 5; i++) {
    d[i] = type_lookup(tp, names[i]);
    int want_getset = i < 4;
    if (!d[i] || (want_getset ? !Py_IS_TYPE(d[i], &PyGetSetDescr_Type)
                              : !Py_IS_TYPE(d[i], &PyMethodDescr_Type)))
      return 0; /* unusual tensor type: leave the fast path off */
  }
  T.d_dtype = Py_NewRef(d[0]);
  T.d_device = Py_NewRef(d[1]);
  T.d_requires_grad = Py_NewRef(d[2]);
  T.d_shape = Py_NewRef(d[3]);
  T.d_stride = Py_NewRef(d[4]);
  PyObject* c = type_lookup(tp, "is_cpu");
  T.d_is_cpu = c && Py_IS_TYPE(c, &PyGetSetDescr_Type) ? Py_NewRef(c) : NULL;
  T.ready = 1;
  return 0;
}

/* Whether tensors of type `tp` read their metadata through T's descriptors. */
static int tensor_type_fast(PyTypeObject* tp) {
  return T.ready && type_lookup(tp, "dtype") == T.d_dtype &&
         type_lookup(tp, "device") == T.d_device &&
         type_lookup(tp, "requires_grad") == T.d_requires_grad &&
         type_lookup(tp, "shape") == T.d_shape && type_lookup(tp, "stride") == T.d_stride &&
         (!T.d_is_cpu || type_lookup(tp, "is_cpu") == T.d_is_cpu);
}

/* Calls a getset descriptor's getter directly. */
static inline PyObject* getset_get(PyObject* descr, PyObject* obj) {
  PyGetSetDef* gs = ((PyGetSetDescrObject*)descr)->d_getset;
  return gs->get(obj, gs->closure);
}

/* Reads t.<name> (fast: descriptor getter directly; else getattr). */
static PyObject* tensor_attr(PyObject* t, int fast, PyObject* descr, const char* name) {
  if (fast) return getset_get(descr, t);
  return PyObject_GetAttrString(t, name);
}

/* t.stride() (new tuple). */
static PyObject* tensor_stride(PyObject* t, int fast) {
  if (fast) return PyObject_Vectorcall(T.d_stride, &t, 1, NULL);
  return PyObject_CallMethod(t, "stride", NULL);
}

/* Reads a tuple of ints into out[0..n); 0, or -1 (exception) / 1 (length
 * differs). */
static int read_ints(PyObject* tup, int64_t* out, int n) {
  if (!PyTuple_Check(tup)) {
    PyErr_SetString(PyExc_TypeError, "guard: expected a tuple of ints");
    return -1;
  }
  if (PyTuple_GET_SIZE(tup) != n) return 1;
  for (int i = 0; i < n; i++) {
    long long x = PyLong_AsLongLong(PyTuple_GET_ITEM(tup, i));
    if (x == -1 && PyErr_Occurred()) return -1;
    out[i] = x;
  }
  return 0;
}

/* ======================================================================
 * Guard sets
 * ====================================================================== */

/* Releases one guard's references and arrays. */
static void guard_clear(dyn_guard* g) {
  Py_CLEAR(g->src);
  Py_CLEAR(g->expected);
  Py_CLEAR(g->dtype);
  Py_CLEAR(g->device);
  Py_CLEAR(g->tensor_sources);
  Py_CLEAR(g->tensor_type);
  PyMem_Free(g->sizes);
  PyMem_Free(g->strides);
  g->sizes = g->strides = NULL;
}

/* DynGuardSet deallocator. */
static void guardset_dealloc(PyObject* o) {
  DynGuardSet* gs = (DynGuardSet*)o;
  for (Py_ssize_t i = 0; i < gs->n; i++) guard_clear(&gs->g[i]);
  PyMem_Free(gs->g);
  Py_TYPE(o)->tp_free(o);
}

/* DynGuardSet.describe(). */
static PyObject* gs_py_describe(PyObject* o, PyObject* unused) {
  (void)unused;
  return dyn_guards_describe((DynGuardSet*)o);
}

/* DynGuardSet.add(kind, source, expected=None, n=0) (tests). */
static PyObject* gs_py_add(PyObject* o, PyObject* args) {
  int kind;
  PyObject *src, *expected = Py_None;
  Py_ssize_t n = 0;
  if (!PyArg_ParseTuple(args, "iO|On", &kind, &src, &expected, &n)) return NULL;
  if (src != Py_None && !PyObject_TypeCheck(src, &DynSource_Type))
    return PyErr_Format(PyExc_TypeError, "add: expected a DynSource");
  if (dyn_guards_add((DynGuardSet*)o, kind, src == Py_None ? NULL : (DynSource*)src,
                     expected == Py_None ? NULL : expected, n) < 0)
    return NULL;
  Py_RETURN_NONE;
}

/* DynGuardSet.add_tensor(source, t, dynamic_dims=None) (tests). */
static PyObject* gs_py_add_tensor(PyObject* o, PyObject* args) {
  PyObject *src, *t, *dims = NULL;
  if (!PyArg_ParseTuple(args, "O!O|O", &DynSource_Type, &src, &t, &dims)) return NULL;
  if (dyn_guards_add_tensor((DynGuardSet*)o, (DynSource*)src, t, dims == Py_None ? NULL : dims) < 0)
    return NULL;
  Py_RETURN_NONE;
}

/* DynGuardSet.check(...) (tests). */
static PyObject* gs_py_check(PyObject* o, PyObject* args) {
  /* check(locals_list, globals, closure=None) -> -1 when all hold, else the
   * index of the failing guard (tests). */
  PyObject *locals, *globals, *closure = NULL;
  if (!PyArg_ParseTuple(args, "O!O!|O", &PyList_Type, &locals, &PyDict_Type, &globals, &closure))
    return NULL;
  dyn_frame_view v = {0};
  v.globals = globals;
  v.builtins = PyEval_GetBuiltins();
  v.locals = (PyObject* const*)((PyListObject*)locals)->ob_item;
  v.n_locals = v.n_args = PyList_GET_SIZE(locals);
  v.closure = (closure && closure != Py_None) ? closure : NULL;
  Py_ssize_t failed = -1;
  int r = dyn_guards_check((DynGuardSet*)o, &v, &failed);
  if (r < 0) return NULL;
  return PyLong_FromSsize_t(r ? -1 : failed);
}

/* DynGuardSet.size(). */
static PyObject* gs_py_len(PyObject* o, PyObject* unused) {
  (void)unused;
  return PyLong_FromSsize_t(((DynGuardSet*)o)->n);
}

/* DynGuardSet() from Python (tests). */
static PyObject* gs_py_new(PyTypeObject* tp, PyObject* args, PyObject* kw) {
  (void)tp;
  (void)args;
  (void)kw;
  return (PyObject*)dyn_guards_new();
}

static PyMethodDef gs_methods[] = {
    {"describe", gs_py_describe, METH_NOARGS, "describe() -> list of str, one per guard."},
    {"add", gs_py_add, METH_VARARGS, "add(kind, source, expected=None, n=0) (tests)."},
    {"add_tensor", gs_py_add_tensor, METH_VARARGS, "add_tensor(source, t, dynamic_dims=None) (tests)."},
    {"check", gs_py_check, METH_VARARGS,
     "check(locals, globals, closure=None) -> -1 if all hold else the failing index (tests)."},
    {"size", gs_py_len, METH_NOARGS, "size() -> number of guards."},
    {NULL, NULL, 0, NULL}};

PyTypeObject DynGuardSet_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ptc._C.DynGuardSet",
    .tp_basicsize = sizeof(DynGuardSet),
    .tp_dealloc = guardset_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An ordered set of guards of a ptc.compile cache entry.",
    .tp_methods = gs_methods,
    .tp_new = gs_py_new,
};

/* (dyn.h) An empty guard set. */
DynGuardSet* dyn_guards_new(void) {
  DynGuardSet* gs = PyObject_New(DynGuardSet, &DynGuardSet_Type);
  if (!gs) return NULL;
  gs->g = NULL;
  gs->n = gs->cap = 0;
  return gs;
}

/* A new zeroed slot at the end of gs (NULL + MemoryError). */
static dyn_guard* guards_push(DynGuardSet* gs) {
  if (gs->n == gs->cap) {
    Py_ssize_t cap = gs->cap ? gs->cap * 2 : 8;
    dyn_guard* g = PyMem_Realloc(gs->g, (size_t)cap * sizeof(dyn_guard));
    if (!g) {
      PyErr_NoMemory();
      return NULL;
    }
    gs->g = g;
    gs->cap = cap;
  }
  dyn_guard* g = &gs->g[gs->n++];
  memset(g, 0, sizeof *g);
  return g;
}

/* Index of a guard with this kind and source (and, for SHAPE/NOT_HASATTR,
 * this expected object), or -1. */
static Py_ssize_t guards_find(DynGuardSet* gs, int kind, DynSource* src, PyObject* expected) {
  for (Py_ssize_t i = 0; i < gs->n; i++) {
    dyn_guard* g = &gs->g[i];
    if (g->kind != kind) continue;
    if (kind == DG_SHAPE) {
      if (g->expected == expected) return i;
      continue;
    }
    if (!dyn_source_equal(g->src, src)) continue;
    if (kind == DG_NOT_HASATTR && g->expected != expected &&
        !(g->expected && expected && PyUnicode_Check(expected) &&
          PyUnicode_Compare(g->expected, expected) == 0))
      continue;
    return i;
  }
  return -1;
}

/* (dyn.h) */
int dyn_guards_add_shape(DynGuardSet* gs, PyObject* fn, PyObject* tensor_sources) {
  if (!PyCallable_Check(fn) || !PyTuple_Check(tensor_sources)) {
    PyErr_SetString(PyExc_TypeError, "shape guard: expected a callable and a tuple of sources");
    return -1;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tensor_sources); i++)
    if (!PyObject_TypeCheck(PyTuple_GET_ITEM(tensor_sources, i), &DynSource_Type)) {
      PyErr_SetString(PyExc_TypeError, "shape guard: tensor_sources must hold DynSources");
      return -1;
    }
  if (guards_find(gs, DG_SHAPE, NULL, fn) >= 0) return 0;
  dyn_guard* g = guards_push(gs);
  if (!g) return -1;
  g->kind = DG_SHAPE;
  g->expected = Py_NewRef(fn);
  g->tensor_sources = Py_NewRef(tensor_sources);
  return 0;
}

/* (dyn.h) Validates the arguments of each kind, then appends. */
int dyn_guards_add(DynGuardSet* gs, int kind, DynSource* src, PyObject* expected, Py_ssize_t n) {
  if (kind == DG_SHAPE) {
    if (!expected || !PyTuple_Check(expected) || PyTuple_GET_SIZE(expected) != 2) {
      PyErr_SetString(PyExc_TypeError, "DG_SHAPE: expected (callable, tuple of sources)");
      return -1;
    }
    return dyn_guards_add_shape(gs, PyTuple_GET_ITEM(expected, 0), PyTuple_GET_ITEM(expected, 1));
  }
  if (kind < DG_TYPE || kind > DG_SHAPE || kind == DG_TENSOR || !src) {
    PyErr_Format(PyExc_ValueError, "dyn_guards_add: bad guard kind %d (or no source)", kind);
    return -1;
  }
  if ((kind == DG_TYPE || kind == DG_LEN) && (!expected || !PyType_Check(expected))) {
    PyErr_SetString(PyExc_TypeError, "TYPE/LEN guard: expected must be a type");
    return -1;
  }
  if ((kind == DG_ID || kind == DG_EQ) && !expected) {
    PyErr_SetString(PyExc_TypeError, "ID/EQ guard: expected is required");
    return -1;
  }
  if (kind == DG_DICT_KEYS && (!expected || !PyTuple_Check(expected))) {
    PyErr_SetString(PyExc_TypeError, "DICT_KEYS guard: expected must be a tuple of keys");
    return -1;
  }
  if (kind == DG_NOT_HASATTR && !(expected && PyUnicode_Check(expected)) && src->kind != DS_ATTR) {
    PyErr_SetString(PyExc_TypeError, "NOT_HASATTR guard: an attribute source or a name");
    return -1;
  }
  if (guards_find(gs, kind, src, expected) >= 0) return 0;
  dyn_guard* g = guards_push(gs);
  if (!g) return -1;
  g->kind = kind;
  g->src = (DynSource*)Py_NewRef((PyObject*)src);
  g->expected = Py_XNewRef(expected);
  g->n = n;
  return 0;
}

/* Whether dim `i` is in the set/sequence `dims` (-1 on error). */
static int dims_contains(PyObject* dims, int i) {
  PyObject* k = PyLong_FromLong(i);
  if (!k) return -1;
  int r = PySequence_Contains(dims, k);
  Py_DECREF(k);
  return r;
}

/* Whether sizes/strides describe a contiguous tensor (size-1 dims free). */
static int tensor_is_contiguous(int ndim, const int64_t* sizes, const int64_t* strides) {
  int64_t expect = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    if (sizes[i] != 1 && strides[i] != expect) return 0;
    expect *= sizes[i];
  }
  return 1;
}

/* Fills a DG_TENSOR guard from the live tensor. 0 / -1. */
static int tensor_guard_fill(dyn_guard* g, PyObject* t, PyObject* dynamic_dims) {
  PyTypeObject* tp = Py_TYPE(t);
  if (tensor_descrs_init(tp) < 0) return -1;
  g->fast = tensor_type_fast(tp);
  g->tensor_type = Py_NewRef((PyObject*)tp);
  PyObject* shape = NULL;
  PyObject* stride = NULL;
  PyObject* rg = NULL;
  int rc = -1;
  g->dtype = tensor_attr(t, g->fast, T.d_dtype, "dtype");
  g->device = g->dtype ? tensor_attr(t, g->fast, T.d_device, "device") : NULL;
  rg = g->device ? tensor_attr(t, g->fast, T.d_requires_grad, "requires_grad") : NULL;
  shape = rg ? tensor_attr(t, g->fast, T.d_shape, "shape") : NULL;
  stride = shape ? tensor_stride(t, g->fast) : NULL;
  if (!stride) goto done;
  if (g->fast && T.d_is_cpu) {
    PyObject* is_cpu = getset_get(T.d_is_cpu, t);
    if (!is_cpu) goto done;
    if (is_cpu == Py_True) g->fast |= 2;
    Py_DECREF(is_cpu);
  }
  g->requires_grad = PyObject_IsTrue(rg);
  if (g->requires_grad < 0 || !PyTuple_Check(shape)) goto done;
  g->ndim = (int)PyTuple_GET_SIZE(shape);
  g->sizes = PyMem_Calloc((size_t)g->ndim + 1, sizeof(int64_t));
  g->strides = PyMem_Calloc((size_t)g->ndim + 1, sizeof(int64_t));
  if (!g->sizes || !g->strides) {
    PyErr_NoMemory();
    goto done;
  }
  if (read_ints(shape, g->sizes, g->ndim) != 0 || read_ints(stride, g->strides, g->ndim) != 0) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "tensor guard: stride rank differs");
    goto done;
  }
  int any_dynamic = 0;
  for (int i = 0; dynamic_dims && i < g->ndim; i++) {
    int c = dims_contains(dynamic_dims, i);
    if (c < 0) goto done;
    if (c && g->sizes[i] >= 2) {
      g->sizes[i] = -1;
      any_dynamic = 1;
    }
  }
  if (any_dynamic) {
    /* dynamic inputs are compiled as contiguous: check contiguity, not values */
    int64_t* real = PyMem_Calloc((size_t)g->ndim + 1, sizeof(int64_t));
    if (!real) {
      PyErr_NoMemory();
      goto done;
    }
    read_ints(shape, real, g->ndim);
    g->contiguous = tensor_is_contiguous(g->ndim, real, g->strides);
    PyMem_Free(real);
    if (g->contiguous)
      for (int i = 0; i < g->ndim; i++) g->strides[i] = INT64_MIN;
  }
  rc = 0;
done:
  Py_XDECREF(shape);
  Py_XDECREF(stride);
  Py_XDECREF(rg);
  return rc;
}

/* (dyn.h) */
int dyn_guards_add_tensor(DynGuardSet* gs, DynSource* src, PyObject* t, PyObject* dynamic_dims) {
  if (!src) {
    PyErr_SetString(PyExc_ValueError, "tensor guard: no source");
    return -1;
  }
  if (guards_find(gs, DG_TENSOR, src, NULL) >= 0) return 0;
  dyn_guard* g = guards_push(gs);
  if (!g) return -1;
  g->kind = DG_TENSOR;
  g->src = (DynSource*)Py_NewRef((PyObject*)src);
  if (tensor_guard_fill(g, t, dynamic_dims) < 0) {
    guard_clear(g);
    gs->n--;
    return -1;
  }
  return 0;
}

/* ---- checking ---- */

/* 1 holds, 0 fails, -1 error (exception set). */
static int check_tensor(const dyn_guard* g, PyObject* x) {
  if ((PyObject*)Py_TYPE(x) != g->tensor_type) return 0;
  int fast = g->fast;
  PyObject* o = tensor_attr(x, fast, T.d_dtype, "dtype");
  if (!o) return -1;
  int ok = o == g->dtype;
  Py_DECREF(o);
  if (!ok) return 0;
  o = tensor_attr(x, fast, T.d_requires_grad, "requires_grad");
  if (!o) return -1;
  ok = (o == Py_True) == (g->requires_grad != 0);
  Py_DECREF(o);
  if (!ok) return 0;
  if (fast & 2) { /* a cpu tensor: is_cpu, no device object */
    o = getset_get(T.d_is_cpu, x);
    if (!o) return -1;
    ok = o == Py_True;
    Py_DECREF(o);
    if (!ok) return 0;
  } else {
    o = tensor_attr(x, fast, T.d_device, "device");
    if (!o) return -1;
    ok = PyObject_RichCompareBool(o, g->device, Py_EQ);
    Py_DECREF(o);
    if (ok <= 0) return ok;
  }
  int64_t buf[16];
  int n = g->ndim;
  int64_t* v = n <= 8 ? buf : PyMem_Malloc(2 * (size_t)n * sizeof(int64_t));
  if (!v) return -1;
  int64_t* st = v + n;
  int r = -1;
  o = tensor_attr(x, fast, T.d_shape, "shape");
  if (!o) goto done;
  int rr = read_ints(o, v, n);
  Py_DECREF(o);
  if (rr != 0) {
    r = rr < 0 ? -1 : 0;
    goto done;
  }
  r = 0;
  for (int i = 0; i < n; i++)
    if (g->sizes[i] >= 0 ? v[i] != g->sizes[i] : v[i] < 2) goto done;
  o = tensor_stride(x, fast);
  if (!o) {
    r = -1;
    goto done;
  }
  rr = read_ints(o, st, n);
  Py_DECREF(o);
  if (rr != 0) {
    r = rr < 0 ? -1 : 0;
    goto done;
  }
  if (g->contiguous && !tensor_is_contiguous(n, v, st)) goto done;
  for (int i = 0; i < n; i++)
    if (g->strides[i] != INT64_MIN && st[i] != g->strides[i]) goto done;
  r = 1;
done:
  if (v != buf) PyMem_Free(v);
  return r;
}

/* DG_DICT_KEYS: a dict whose keys are `keys` in order. 1 / 0 / -1. */
static int check_dict_keys(PyObject* x, PyObject* keys) {
  Py_ssize_t n = PyTuple_GET_SIZE(keys);
  if (PyDict_CheckExact(x)) {
    if (PyDict_GET_SIZE(x) != n) return 0;
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *val;
    while (PyDict_Next(x, &pos, &k, &val)) {
      PyObject* e = PyTuple_GET_ITEM(keys, i++);
      if (k == e) continue;
      int eq = PyObject_RichCompareBool(k, e, Py_EQ);
      if (eq <= 0) return eq;
    }
    return 1;
  }
  if (!PyDict_Check(x)) return 0;
  PyObject* ks = PyObject_CallMethod(x, "keys", NULL);
  PyObject* t = ks ? PySequence_Tuple(ks) : NULL;
  Py_XDECREF(ks);
  if (!t) return -1;
  int eq = PyObject_RichCompareBool(t, keys, Py_EQ);
  Py_DECREF(t);
  return eq;
}

/* DG_NOT_HASATTR (both forms, see dyn.h). 1 / 0 / -1. */
static int check_not_hasattr(const dyn_guard* g, const dyn_frame_view* v, memo* m) {
  DynSource* base = g->src;
  PyObject* name = g->expected;
  if (!name || !PyUnicode_Check(name)) {
    base = g->src->base;
    name = g->src->key;
  }
  PyObject* obj = eval_base(base, v, m);
  if (!obj) return -1;
  PyObject* res = NULL;
  int r = _PyObject_LookupAttr(obj, name, &res);
  Py_DECREF(obj);
  Py_XDECREF(res);
  return r < 0 ? -1 : !r;
}

/* DG_SHAPE: calls the guard function with the tensors. 1 / 0 / -1. */
static int check_shape(const dyn_guard* g, const dyn_frame_view* v, memo* m) {
  Py_ssize_t n = PyTuple_GET_SIZE(g->tensor_sources);
  PyObject* small[8];
  PyObject** args = n <= 8 ? small : PyMem_Malloc((size_t)(n + 1) * sizeof(PyObject*));
  if (!args) return -1;
  Py_ssize_t got = 0;
  int r = -1;
  for (; got < n; got++) {
    args[got] = source_eval_m((DynSource*)PyTuple_GET_ITEM(g->tensor_sources, got), v, m);
    if (!args[got]) goto done;
  }
  PyObject* res = PyObject_Vectorcall(g->expected, args, (size_t)n, NULL);
  if (res) {
    r = PyObject_IsTrue(res);
    Py_DECREF(res);
  }
done:
  for (Py_ssize_t i = 0; i < got; i++) Py_DECREF(args[i]);
  if (args != small) PyMem_Free(args);
  return r;
}

/* One guard: 1 holds, 0 fails, -1 error. */
static int check_one(const dyn_guard* g, const dyn_frame_view* v, memo* m) {
  if (g->kind == DG_SHAPE) return check_shape(g, v, m);
  if (g->kind == DG_NOT_HASATTR) return check_not_hasattr(g, v, m);
  PyObject* x = source_eval_m(g->src, v, m);
  if (!x) return -1;
  int r;
  switch (g->kind) {
  case DG_TYPE: r = (PyObject*)Py_TYPE(x) == g->expected; break;
  case DG_ID: r = x == g->expected; break;
  case DG_EQ:
    if (x == g->expected) r = 1;
    else if (Py_TYPE(x) != Py_TYPE(g->expected)) r = 0;
    else r = PyObject_RichCompareBool(x, g->expected, Py_EQ);
    break;
  case DG_LEN:
    if ((PyObject*)Py_TYPE(x) != g->expected) r = 0;
    else if (PyTuple_CheckExact(x) || PyList_CheckExact(x)) r = Py_SIZE(x) == g->n;
    else {
      Py_ssize_t len = PyObject_Length(x);
      r = len < 0 ? -1 : len == g->n;
    }
    break;
  case DG_DICT_KEYS: r = check_dict_keys(x, g->expected); break;
  case DG_TENSOR: r = check_tensor(g, x); break;
  case DG_TRUTH:
    r = x == Py_True ? 1 : x == Py_False ? 0 : PyObject_IsTrue(x);
    if (r >= 0) r = r == (g->n != 0);
    break;
  default:
    PyErr_Format(PyExc_SystemError, "guard: unknown kind %d", g->kind);
    r = -1;
  }
  Py_DECREF(x);
  return r;
}

/* (dyn.h) In order; the first failure stops. */
int dyn_guards_check(DynGuardSet* gs, const dyn_frame_view* v, Py_ssize_t* failed) {
  memo m;
  m.n = 0;
  m.inited = 0;
  int res = 1;
  for (Py_ssize_t i = 0; i < gs->n; i++) {
    int r = check_one(&gs->g[i], v, &m);
    if (r == 1) continue;
    if (r < 0) PyErr_Clear(); /* a source that no longer evaluates: the guard fails */
    if (failed) *failed = i;
    res = 0;
    break;
  }
  memo_clear(&m);
  return res;
}

/* ---- description ---- */

/* "[4, s, 8]" from int64 values (`dyn` prints for the marker value). */
static PyObject* ints_str(const int64_t* v, int n, int64_t marker, const char* dyn) {
  PyObject* parts = PyList_New(n);
  if (!parts) return NULL;
  for (int i = 0; i < n; i++) {
    PyObject* s = v[i] == marker ? PyUnicode_FromString(dyn) : PyUnicode_FromFormat("%lld", (long long)v[i]);
    if (!s) {
      Py_DECREF(parts);
      return NULL;
    }
    PyList_SET_ITEM(parts, i, s);
  }
  PyObject* sep = PyUnicode_FromString(", ");
  PyObject* j = sep ? PyUnicode_Join(sep, parts) : NULL;
  Py_XDECREF(sep);
  Py_DECREF(parts);
  if (!j) return NULL;
  PyObject* r = PyUnicode_FromFormat("[%U]", j);
  Py_DECREF(j);
  return r;
}

/* One TENSOR line. */
static PyObject* describe_tensor(const dyn_guard* g, PyObject* src) {
  PyObject* sizes = ints_str(g->sizes, g->ndim, -1, "s");
  PyObject* strides = sizes ? ints_str(g->strides, g->ndim, INT64_MIN, "*") : NULL;
  PyObject* r = NULL;
  if (strides)
    r = PyUnicode_FromFormat("TENSOR %U %s %S %S %U stride=%U%s requires_grad=%s", src,
                             ((PyTypeObject*)g->tensor_type)->tp_name, g->dtype, g->device, sizes,
                             strides, g->contiguous ? " contiguous" : "",
                             g->requires_grad ? "True" : "False");
  Py_XDECREF(sizes);
  Py_XDECREF(strides);
  return r;
}

/* One line per guard kind. */
static PyObject* describe_one(const dyn_guard* g) {
  if (g->kind == DG_SHAPE) {
    PyObject* names = PyList_New(0);
    if (!names) return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(g->tensor_sources); i++) {
      PyObject* s = dyn_source_repr((DynSource*)PyTuple_GET_ITEM(g->tensor_sources, i));
      if (!s || PyList_Append(names, s) < 0) {
        Py_XDECREF(s);
        Py_DECREF(names);
        return NULL;
      }
      Py_DECREF(s);
    }
    PyObject* r = PyUnicode_FromFormat("SHAPE %R over %S", g->expected, names);
    Py_DECREF(names);
    return r;
  }
  PyObject* src = dyn_source_repr(g->src);
  if (!src) return NULL;
  PyObject* r;
  switch (g->kind) {
  case DG_TYPE: r = PyUnicode_FromFormat("TYPE %U is %s", src, ((PyTypeObject*)g->expected)->tp_name); break;
  case DG_ID:
    r = PyUnicode_FromFormat("ID %U is <%s at %p>", src, Py_TYPE(g->expected)->tp_name,
                             (void*)g->expected);
    break;
  case DG_EQ: r = PyUnicode_FromFormat("EQ %U == %R", src, g->expected); break;
  case DG_LEN:
    r = PyUnicode_FromFormat("LEN %U: %s of length %zd", src,
                             ((PyTypeObject*)g->expected)->tp_name, g->n);
    break;
  case DG_DICT_KEYS: r = PyUnicode_FromFormat("DICT_KEYS %U == %R", src, g->expected); break;
  case DG_TENSOR: r = describe_tensor(g, src); break;
  case DG_TRUTH: r = PyUnicode_FromFormat("TRUTH %U is %s", src, g->n ? "True" : "False"); break;
  case DG_NOT_HASATTR:
    if (g->expected && PyUnicode_Check(g->expected))
      r = PyUnicode_FromFormat("NOT_HASATTR %U.%U", src, g->expected);
    else
      r = PyUnicode_FromFormat("NOT_HASATTR %U", src);
    break;
  default: r = PyUnicode_FromFormat("? %U", src);
  }
  Py_DECREF(src);
  return r;
}

/* (dyn.h) */
PyObject* dyn_guards_describe(DynGuardSet* gs) {
  PyObject* out = PyList_New(gs->n);
  if (!out) return NULL;
  for (Py_ssize_t i = 0; i < gs->n; i++) {
    PyObject* s = describe_one(&gs->g[i]);
    if (!s) {
      Py_DECREF(out);
      return NULL;
    }
    PyList_SET_ITEM(out, i, s);
  }
  return out;
}
