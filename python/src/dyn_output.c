/* dyn_output.c - the end of a trace: turns the OutputGraph and the trackers
 * into a cache entry. Walks the values the bytecode needs afterwards (the
 * return value; or the stack and the bound locals at a graph break) and the
 * operands of the side effects, and builds plans for the runner
 * (dyn_runner.c, tags in dyn.h): constants; graph inputs (unchanged or
 * mutated in place: the same object as the caller's); graph outputs (every
 * other tensor / symbolic size reached, through containers); pre-existing
 * objects re-read through their sources; lists/tuples/dicts/sets/slices/
 * namedtuples/torch.Size created in the trace built for real (one object per
 * tracker per run). Then compiles the graph (og.compile), adds the shape
 * guard and fills a dyn_entry; for a break also the transformed function
 * (dyn_codegen.c). A value that cannot be rebuilt is a graph break
 * (dyn_break), never a guess. */
#include "dyn.h"

#include <string.h>

/* Defined by files written at the same time (dyn_eval.c, dyn_var.c,
 * dyn_codegen.c): referenced weakly so that ptc._C links before they land.
 * dyn_output_* are only called by the evaluator, which needs them anyway;
 * a missing codegen makes every break unexpressible. */
#pragma weak dyn_break
#pragma weak dyn_var_kind_name
#pragma weak DynVar_Type
#pragma weak dyn_codegen_break_ex

/* Planning state of one entry. */
typedef struct out_ctx {
  dyn_tx* tx;
  PyObject* outputs;   /* list of Proxy/SymProxy: graph outputs in order */
  PyObject* out_index; /* dict id(proxy) -> output number */
  PyObject* memo;      /* dict id(DynVar) -> memo slot (created containers) */
  PyObject* busy;      /* set of id(DynVar) being planned (cycles) */
  int n_memo;
  int depth;           /* nesting of plan_of */
  char why[256];       /* set when a value cannot be rebuilt */
} out_ctx;

static PyObject* plan_of(out_ctx* c, DynVar* v);

/* "cannot rebuild" (NULL without an exception, reason in c->why). */
static PyObject* refuse(out_ctx* c, const char* fmt, const char* arg) {
  if (!c->why[0]) snprintf(c->why, sizeof c->why, fmt, arg);
  return NULL;
}

static PyObject* tag2(int tag, PyObject* a) { return Py_BuildValue("(iO)", tag, a); }
static PyObject* tag2n(int tag, Py_ssize_t n) { return Py_BuildValue("(in)", tag, n); }

/* Graph output number of a Proxy/SymProxy (added on first use). */
static PyObject* plan_output(out_ctx* c, PyObject* proxy) {
  PyObject* key = PyLong_FromVoidPtr(proxy);
  if (!key) return NULL;
  PyObject* hit = PyDict_GetItemWithError(c->out_index, key);
  Py_ssize_t k;
  if (hit) {
    k = PyLong_AsSsize_t(hit);
  } else if (PyErr_Occurred()) {
    Py_DECREF(key);
    return NULL;
  } else {
    k = PyList_GET_SIZE(c->outputs);
    PyObject* kk = PyLong_FromSsize_t(k);
    int rc = kk ? PyDict_SetItem(c->out_index, key, kk) : -1;
    Py_XDECREF(kk);
    if (rc == 0) rc = PyList_Append(c->outputs, proxy);
    if (rc < 0) {
      Py_DECREF(key);
      return NULL;
    }
  }
  Py_DECREF(key);
  return tag2n(DP_OUT, k);
}

static PyObject* plan_proxy(out_ctx* c, PyObject* proxy);
static int memo_lookup(out_ctx* c, DynVar* v, Py_ssize_t* slot, int* seen);

/* The Proxy / SymProxy classes of ptc._dyn_graph (borrowed, cached). */
static PyObject *g_proxy_type, *g_symproxy_type;
static int graph_types(void) {
  if (g_proxy_type) return 0;
  /* from sys.modules: PyImport_ImportModule would look __import__ up in the
   * builtins of the frame being converted (code run by exec may have none) */
  PyObject* name = PyUnicode_FromString("ptc._dyn_graph");
  PyObject* m = name ? PyImport_GetModule(name) : NULL;
  Py_XDECREF(name);
  if (!m && !PyErr_Occurred()) PyErr_SetString(PyExc_ImportError, "ptc._dyn_graph not imported");
  if (!m) return -1;
  g_proxy_type = PyObject_GetAttrString(m, "Proxy");
  g_symproxy_type = g_proxy_type ? PyObject_GetAttrString(m, "SymProxy") : NULL;
  Py_DECREF(m);
  if (!g_symproxy_type) {
    Py_CLEAR(g_proxy_type);
    return -1;
  }
  return 0;
}

/* Whether an alias argument holds a Proxy/SymProxy (needs a plan). */
static int has_graph_value(PyObject* a) {
  if (Py_TYPE(a) == (PyTypeObject*)g_proxy_type || Py_TYPE(a) == (PyTypeObject*)g_symproxy_type)
    return 1;
  if (PyTuple_Check(a) || PyList_Check(a)) {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(a); i++)
      if (has_graph_value(PySequence_Fast_GET_ITEM(a, i))) return 1;
    return 0;
  }
  if (PySlice_Check(a)) {
    PySliceObject* sl = (PySliceObject*)a;
    return has_graph_value(sl->start) || has_graph_value(sl->stop) || has_graph_value(sl->step);
  }
  return 0;
}

/* Plan of one argument of a replayed view call. */
static PyObject* plan_arg(out_ctx* c, PyObject* a) {
  if (!has_graph_value(a)) return tag2(DP_CONST, a);
  if (Py_TYPE(a) == (PyTypeObject*)g_proxy_type) return plan_proxy(c, a);
  if (Py_TYPE(a) == (PyTypeObject*)g_symproxy_type) return plan_output(c, a);
  if (PySlice_Check(a)) {
    PySliceObject* sl = (PySliceObject*)a;
    PyObject* p0 = plan_arg(c, sl->start);
    PyObject* p1 = p0 ? plan_arg(c, sl->stop) : NULL;
    PyObject* p2 = p1 ? plan_arg(c, sl->step) : NULL;
    if (!p2) {
      Py_XDECREF(p0);
      Py_XDECREF(p1);
      return NULL;
    }
    return Py_BuildValue("(iNNN)", DP_SLICE, p0, p1, p2);
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(a);
  PyObject* t = PyTuple_New(n);
  for (Py_ssize_t i = 0; t && i < n; i++) {
    PyObject* p = plan_arg(c, PySequence_Fast_GET_ITEM(a, i));
    if (!p) Py_CLEAR(t);
    else PyTuple_SET_ITEM(t, i, p);
  }
  if (!t) return NULL;
  if (PyTuple_Check(a)) return Py_BuildValue("(iN)", DP_TUPLE, t);
  return Py_BuildValue("(iO(N))", DP_CALL, (PyObject*)&PyList_Type,
                       Py_BuildValue("(iN)", DP_TUPLE, t));
}

/* A view/alias of another tensor (proxy.alias = (callable, args)): the call
 * replayed by the runner on the real base, so that aliasing is as in eager
 * (one object per run). */
static PyObject* plan_alias(out_ctx* c, PyObject* proxy, PyObject* alias) {
  if (!PyTuple_Check(alias) || PyTuple_GET_SIZE(alias) != 2 ||
      !PyTuple_Check(PyTuple_GET_ITEM(alias, 1)))
    return refuse(c, "%s", "a malformed view record");
  Py_ssize_t slot;
  int seen;
  DynVar* key = (DynVar*)proxy; /* memo keys are object addresses */
  if (memo_lookup(c, key, &slot, &seen) < 0) return NULL;
  if (seen) return tag2n(DP_MEMO, slot);
  PyObject* args = PyTuple_GET_ITEM(alias, 1);
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject* t = PyTuple_New(n);
  for (Py_ssize_t i = 0; t && i < n; i++) {
    PyObject* p = plan_arg(c, PyTuple_GET_ITEM(args, i));
    if (!p) Py_CLEAR(t);
    else PyTuple_SET_ITEM(t, i, p);
  }
  if (!t) return NULL;
  return Py_BuildValue("(iONn)", DP_CALL, PyTuple_GET_ITEM(alias, 0), t, slot);
}

/* A tensor: graph input (same object), parameter/constant (same object),
 * a view replayed on its base, or a graph output. */
static PyObject* plan_proxy(out_ctx* c, PyObject* proxy) {
  if (graph_types() < 0) return NULL;
  PyObject* idx = PyObject_GetAttrString(proxy, "input_index");
  if (!idx) return NULL;
  Py_ssize_t i = PyLong_AsSsize_t(idx);
  Py_DECREF(idx);
  if (i == -1 && PyErr_Occurred()) return NULL;
  if (i >= 0) return tag2n(DP_INPUT, i);
  PyObject* param = PyObject_GetAttrString(proxy, "param");
  if (!param) return NULL;
  if (param != Py_None) {
    PyObject* r = tag2(DP_CONST, param);
    Py_DECREF(param);
    return r;
  }
  Py_DECREF(param);
  PyObject* alias = PyObject_GetAttrString(proxy, "alias");
  if (!alias) return NULL;
  PyObject* r = NULL;
  if (alias != Py_None) {
    if (++c->depth > 100) r = refuse(c, "%s", "a too long chain of views");
    else r = plan_alias(c, proxy, alias);
    c->depth--;
  } else {
    r = plan_output(c, proxy);
  }
  Py_DECREF(alias);
  return r;
}

static PyObject* plan_tensor(out_ctx* c, DynVar* v) {
  if (!v->value) return refuse(c, "%s", "a tensor without a graph value");
  return plan_proxy(c, v->value);
}

/* A tuple of plans for a list of DynVars (items[start:]). */
static PyObject* plan_items(out_ctx* c, PyObject* items, Py_ssize_t start) {
  if (!items || !PyList_Check(items)) return refuse(c, "%s", "a container without items");
  Py_ssize_t n = PyList_GET_SIZE(items);
  if (start < 0) start = 0;
  if (start > n) start = n;
  PyObject* t = PyTuple_New(n - start);
  for (Py_ssize_t i = start; t && i < n; i++) {
    PyObject* it = PyList_GET_ITEM(items, i);
    PyObject* p = PyObject_TypeCheck(it, &DynVar_Type) ? plan_of(c, (DynVar*)it)
                                                       : refuse(c, "%s", "a non-tracker item");
    if (!p) Py_CLEAR(t);
    else PyTuple_SET_ITEM(t, i - start, p);
  }
  return t;
}

/* Keys and value plans of a DV_DICT's items dict. */
static int plan_dict_items(out_ctx* c, DynVar* v, PyObject** keys, PyObject** vals) {
  *keys = *vals = NULL;
  if (!v->items || !PyDict_Check(v->items)) {
    refuse(c, "%s", "a dict without items");
    return -1;
  }
  PyObject* k = PyDict_Keys(v->items);
  PyObject* vl = PyDict_Values(v->items);
  PyObject* kt = k ? PyList_AsTuple(k) : NULL;
  PyObject* vp = vl ? plan_items(c, vl, 0) : NULL;
  Py_XDECREF(k);
  Py_XDECREF(vl);
  if (!kt || !vp) {
    Py_XDECREF(kt);
    Py_XDECREF(vp);
    return -1;
  }
  *keys = kt;
  *vals = vp;
  return 0;
}

/* Memo slot of a created container (-1: first use, *slot = new slot). */
static int memo_lookup(out_ctx* c, DynVar* v, Py_ssize_t* slot, int* seen) {
  PyObject* key = PyLong_FromVoidPtr(v);
  if (!key) return -1;
  PyObject* hit = PyDict_GetItemWithError(c->memo, key);
  int rc = 0;
  if (hit) {
    *slot = PyLong_AsSsize_t(hit);
    *seen = 1;
  } else if (PyErr_Occurred()) {
    rc = -1;
  } else {
    *seen = 0;
    *slot = c->n_memo++;
    PyObject* s = PyLong_FromSsize_t(*slot);
    rc = s ? PyDict_SetItem(c->memo, key, s) : -1;
    Py_XDECREF(s);
  }
  Py_DECREF(key);
  return rc;
}

/* A list/dict/set created in the trace (built once per run). */
static PyObject* plan_created_container(out_ctx* c, DynVar* v) {
  Py_ssize_t slot;
  int seen;
  if (memo_lookup(c, v, &slot, &seen) < 0) return NULL;
  if (seen) return tag2n(DP_MEMO, slot);
  if (v->kind == DV_DICT) {
    PyObject *keys, *vals;
    if (plan_dict_items(c, v, &keys, &vals) < 0) return NULL;
    PyObject* r = Py_BuildValue("(iNNn)", DP_DICT, keys, vals, slot);
    return r;
  }
  PyObject* items = plan_items(c, v->items, 0);
  if (!items) return NULL;
  return Py_BuildValue("(iNn)", v->kind == DV_LIST ? DP_LIST : DP_SET, items, slot);
}

static int is_namedtuple_class(PyObject* cls) {
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &PyTuple_Type)) return 0;
  return PyObject_HasAttrString(cls, "_fields") && PyObject_HasAttrString(cls, "_make");
}

/* A tuple created in the trace: plain, torch.Size (extra = the class) or a
 * namedtuple / structseq (DV_NAMEDTUPLE: value = the class). */
static PyObject* plan_created_tuple(out_ctx* c, DynVar* v) {
  PyObject* items = plan_items(c, v->items, 0);
  if (!items) return NULL;
  PyObject* cls = v->kind == DV_NAMEDTUPLE ? v->value : v->extra;
  if (!cls || cls == (PyObject*)&PyTuple_Type) return Py_BuildValue("(iN)", DP_TUPLE, items);
  if (!PyType_Check(cls)) {
    Py_DECREF(items);
    return refuse(c, "%s", "a tuple of an unknown class");
  }
  if (is_namedtuple_class(cls)) return Py_BuildValue("(iON)", DP_CALL, cls, items);
  /* torch.Size, structseqs: cls(tuple of items) */
  return Py_BuildValue("(iO(N))", DP_CALL, cls, Py_BuildValue("(iN)", DP_TUPLE, items));
}

static PyObject* plan_slice(out_ctx* c, DynVar* v) {
  if (!v->items || !PyList_Check(v->items) || PyList_GET_SIZE(v->items) != 3)
    return refuse(c, "%s", "a malformed slice");
  PyObject* p = plan_items(c, v->items, 0);
  if (!p) return NULL;
  PyObject* r = Py_BuildValue("(iOOO)", DP_SLICE, PyTuple_GET_ITEM(p, 0), PyTuple_GET_ITEM(p, 1),
                              PyTuple_GET_ITEM(p, 2));
  Py_DECREF(p);
  return r;
}

static PyObject* plan_method(out_ctx* c, DynVar* v) {
  if (!v->value || !v->extra || !PyObject_TypeCheck(v->extra, &DynVar_Type))
    return refuse(c, "%s", "a bound method without its object");
  PyObject* fn = PyObject_TypeCheck(v->value, &DynVar_Type) ? plan_of(c, (DynVar*)v->value)
                                                            : tag2(DP_CONST, v->value);
  if (!fn) return NULL;
  PyObject* self = plan_of(c, (DynVar*)v->extra);
  if (!self) {
    Py_DECREF(fn);
    return NULL;
  }
  return Py_BuildValue("(iNN)", DP_METHOD, fn, self);
}

/* Plan for a tracker by kind (no source shortcut). */
static PyObject* plan_by_kind(out_ctx* c, DynVar* v) {
  switch (v->kind) {
    case DV_CONST:
    case DV_RANGE: return tag2(DP_CONST, v->value ? v->value : Py_None);
    case DV_TENSOR: return plan_tensor(c, v);
    case DV_SYMINT: return v->value ? plan_output(c, v->value) : refuse(c, "%s", "a size");
    case DV_TUPLE:
    case DV_NAMEDTUPLE: return plan_created_tuple(c, v);
    case DV_LIST:
    case DV_DICT:
    case DV_SET: return plan_created_container(c, v);
    case DV_SLICE: return plan_slice(c, v);
    case DV_FUNCTION:
      if (v->value) return tag2(DP_CONST, v->value);
      return refuse(c, "%s", "a function created in the traced code (closure/lambda)");
    case DV_METHOD: return plan_method(c, v);
    case DV_MODULE:
    case DV_OBJECT:
      if (v->value && !v->created) return tag2(DP_CONST, v->value);
      return refuse(c, "%s", "an object created in the traced code");
    case DV_ITER: {
      PyObject* items = plan_items(c, v->items, v->index);
      return items ? Py_BuildValue("(iN)", DP_ITER, items) : NULL;
    }
    default: return refuse(c, "a %s value", dyn_var_kind_name(v));
  }
}

/* Whether a tracker with a source is the real object at that source. */
static int source_is_the_value(DynVar* v) {
  if (!v->source || v->created) return 0;
  switch (v->kind) {
    case DV_TUPLE:
    case DV_LIST:
    case DV_DICT:
    case DV_SET:
    case DV_NAMEDTUPLE:
    case DV_MODULE:
    case DV_OBJECT:
    case DV_OBJ_NEW: return 1;
    default: return 0;
  }
}

static PyObject* plan_of(out_ctx* c, DynVar* v) {
  if (source_is_the_value(v)) return tag2(DP_SRC, (PyObject*)v->source);
  PyObject* key = PyLong_FromVoidPtr(v);
  if (!key) return NULL;
  int busy = PySet_Contains(c->busy, key);
  if (busy) {
    Py_DECREF(key);
    return busy < 0 ? NULL : refuse(c, "%s", "a container that contains itself");
  }
  if (PySet_Add(c->busy, key) < 0) {
    Py_DECREF(key);
    return NULL;
  }
  PyObject* r = ++c->depth > 100 ? refuse(c, "%s", "a too deeply nested value")
                                 : plan_by_kind(c, v);
  c->depth--;
  PySet_Discard(c->busy, key);
  Py_DECREF(key);
  return r;
}

/* ---- side effects ----------------------------------------------------------------------- */

static int is_var(PyObject* o) { return o && PyObject_TypeCheck(o, &DynVar_Type); }

/* Whether an effect's target was created in the trace (its final state is
 * built for real: the effect is already in it). */
static int created_target(DynVar* v) { return !v->source && (v->created || !v->value); }

static PyObject* plan_cell(out_ctx* c, DynVar* cell) {
  if (cell->value && PyCell_Check(cell->value)) return tag2(DP_CONST, cell->value);
  if (cell->source && cell->source->kind == DS_CLOSURE) return tag2n(DP_CELL, cell->source->index);
  return NULL;
}

/* One effect tuple of tx->side_effects -> an effect plan, Py_None (skip),
 * or NULL (error / cannot rebuild). */
static PyObject* plan_effect(out_ctx* c, PyObject* e) {
  if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) < 2 || !PyUnicode_Check(PyTuple_GET_ITEM(e, 0)))
    return refuse(c, "%s", "a malformed side effect");
  const char* kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(e, 0));
  Py_ssize_t n = PyTuple_GET_SIZE(e);
  PyObject* a1 = PyTuple_GET_ITEM(e, 1);
  if (!kind) return NULL;
  if ((!strcmp(kind, "setattr") && n == 4) || (!strcmp(kind, "delattr") && n == 3)) {
    if (!is_var(a1)) return refuse(c, "%s", "an attribute write on a non-tracker");
    if (created_target((DynVar*)a1)) return Py_NewRef(Py_None);
    PyObject* obj = plan_of(c, (DynVar*)a1);
    if (!obj) return NULL;
    if (n == 3) return Py_BuildValue("(iNO)", DE_DELATTR, obj, PyTuple_GET_ITEM(e, 2));
    PyObject* val = is_var(PyTuple_GET_ITEM(e, 3)) ? plan_of(c, (DynVar*)PyTuple_GET_ITEM(e, 3))
                                                    : refuse(c, "%s", "a non-tracker value");
    if (!val) {
      Py_DECREF(obj);
      return NULL;
    }
    return Py_BuildValue("(iNON)", DE_SETATTR, obj, PyTuple_GET_ITEM(e, 2), val);
  }
  if ((!strcmp(kind, "list_replace") || !strcmp(kind, "dict_replace")) && n == 2) {
    if (!is_var(a1)) return refuse(c, "%s", "a container write on a non-tracker");
    DynVar* v = (DynVar*)a1;
    if (!v->source) return Py_NewRef(Py_None); /* created: built from its final items */
    PyObject* target = tag2(DP_SRC, (PyObject*)v->source);
    if (!target) return NULL;
    if (kind[0] == 'l') {
      PyObject* items = plan_items(c, v->items, 0);
      if (!items) {
        Py_DECREF(target);
        return NULL;
      }
      return Py_BuildValue("(iN(iN))", DE_LIST, target, DP_TUPLE, items);
    }
    PyObject *keys, *vals;
    if (plan_dict_items(c, v, &keys, &vals) < 0) {
      Py_DECREF(target);
      return NULL;
    }
    return Py_BuildValue("(iNN(iN))", DE_DICT, target, keys, DP_TUPLE, vals);
  }
  if (!strcmp(kind, "global") && n == 4) {
    PyObject* val = is_var(PyTuple_GET_ITEM(e, 3)) ? plan_of(c, (DynVar*)PyTuple_GET_ITEM(e, 3))
                                                    : refuse(c, "%s", "a non-tracker value");
    if (!val) return NULL;
    /* the root frame's globals: taken from the frame at run time (None) */
    PyObject* g = a1 == c->tx->view->globals ? Py_None : a1;
    return Py_BuildValue("(iOON)", DE_GLOBAL, g, PyTuple_GET_ITEM(e, 2), val);
  }
  if (!strcmp(kind, "cell") && n == 2) {
    if (!is_var(a1)) return refuse(c, "%s", "a cell write on a non-tracker");
    DynVar* cell = (DynVar*)a1;
    PyObject* target = plan_cell(c, cell);
    if (!target) {
      if (PyErr_Occurred()) return NULL;
      return Py_NewRef(Py_None); /* a cell made in the trace */
    }
    if (!cell->items || !PyList_Check(cell->items) || PyList_GET_SIZE(cell->items) == 0)
      return Py_BuildValue("(iN)", DE_CELL, target);
    PyObject* it = PyList_GET_ITEM(cell->items, 0);
    PyObject* val = is_var(it) ? plan_of(c, (DynVar*)it) : refuse(c, "%s", "a non-tracker value");
    if (!val) {
      Py_DECREF(target);
      return NULL;
    }
    return Py_BuildValue("(iNN)", DE_CELL, target, val);
  }
  return refuse(c, "side effect '%s' not supported", kind);
}

static PyObject* plan_effects(out_ctx* c) {
  PyObject* list = PyList_New(0);
  PyObject* fx = c->tx->side_effects;
  if (!list) return NULL;
  Py_ssize_t n = fx && PyList_Check(fx) ? PyList_GET_SIZE(fx) : 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* p = plan_effect(c, PyList_GET_ITEM(fx, i));
    if (!p || (p != Py_None && PyList_Append(list, p) < 0)) {
      Py_XDECREF(p);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(p);
  }
  PyObject* t = PyList_AsTuple(list);
  Py_DECREF(list);
  return t;
}

/* ---- entries ------------------------------------------------------------------------------- */

static int ctx_init(out_ctx* c, dyn_tx* tx) {
  memset(c, 0, sizeof *c);
  c->tx = tx;
  c->outputs = PyList_New(0);
  c->out_index = PyDict_New();
  c->memo = PyDict_New();
  c->busy = PySet_New(NULL);
  return c->outputs && c->out_index && c->memo && c->busy ? 0 : -1;
}

static void ctx_free(out_ctx* c) {
  Py_XDECREF(c->outputs);
  Py_XDECREF(c->out_index);
  Py_XDECREF(c->memo);
  Py_XDECREF(c->busy);
}

/* NULL, with the trace marked broken when the failure was "cannot rebuild"
 * (no exception). */
static void *refused(out_ctx* c, const char* where) {
  if (!PyErr_Occurred())
    dyn_break(c->tx, "cannot rebuild %s: %s", where, c->why[0] ? c->why : "unsupported value");
  return NULL;
}

/* An exception of ptc refusing the graph as a whole (Unsupported,
 * UnsupportedError, ptc.Error from compiling) becomes a graph break with its
 * message: the frame then runs plainly (or the trace restarts before the
 * return), without an internal-error warning. Other exceptions stay. */
static void unsupported_to_break(dyn_tx* tx) {
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  const char* tname = et && PyType_Check(et) ? ((PyTypeObject*)et)->tp_name : "";
  const char* dot = strrchr(tname, '.');
  const char* base = dot ? dot + 1 : tname;
  if (strcmp(base, "Unsupported") && strcmp(base, "UnsupportedError") && strcmp(base, "Error")) {
    PyErr_Restore(et, ev, tb);
    return;
  }
  PyObject* msg = ev ? PyObject_Str(ev) : NULL;
  const char* m = msg ? PyUnicode_AsUTF8(msg) : NULL;
  if (!m) PyErr_Clear();
  dyn_break(tx, "graph not compilable: %.400s", m ? m : base);
  Py_XDECREF(msg);
  Py_XDECREF(et);
  Py_XDECREF(ev);
  Py_XDECREF(tb);
}

/* When the trace ran ops in grad mode, whether the graph needs autograd
 * (og.compile then runs it eagerly) depends on the parameters'
 * requires_grad flags: one TRUTH guard per parameter. 0 / -1. */
static int add_grad_guards(dyn_tx* tx) {
  PyObject* params = PyObject_CallMethod(tx->og, "grad_params", NULL);
  if (!params) return -1;
  PyObject* name = PyUnicode_InternFromString("requires_grad");
  int rc = name && PyList_Check(params) ? 0 : -1;
  for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(params); i++) {
    PyObject* t = PyList_GET_ITEM(params, i);
    PyObject* flag = PyObject_GetAttr(t, name);
    int on = flag ? PyObject_IsTrue(flag) : -1;
    Py_XDECREF(flag);
    DynSource* base = on < 0 ? NULL : dyn_source_const(t);
    DynSource* src = base ? dyn_source_attr(base, name) : NULL;
    rc = src ? dyn_guards_add(tx->guards, DG_TRUTH, src, NULL, on) : -1;
    Py_XDECREF((PyObject*)src);
    Py_XDECREF((PyObject*)base);
  }
  Py_XDECREF(name);
  Py_DECREF(params);
  return rc;
}

/* og.compile(outputs) -> runner; adds the shape guard to tx->guards.
 * *info = the info dict (new). */
static DynRunner* compile_runner(out_ctx* c, PyObject* effects, PyObject* plan, PyObject** info) {
  dyn_tx* tx = c->tx;
  *info = NULL;
  PyObject* inputs = PyList_AsTuple(tx->inputs);
  if (!inputs) return NULL;
  PyObject* res = PyObject_CallMethod(tx->og, "compile", "O", c->outputs);
  if (!res) unsupported_to_break(tx);
  PyObject* compiled = NULL;
  if (res && (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2 ||
              !PyDict_Check(PyTuple_GET_ITEM(res, 1)))) {
    PyErr_SetString(PyExc_TypeError, "OutputGraph.compile must return (callable, info dict)");
    Py_CLEAR(res);
  }
  DynRunner* r = NULL;
  if (!res) goto done;
  compiled = PyTuple_GET_ITEM(res, 0);
  PyObject* sg = PyObject_CallMethod(tx->og, "shape_guard", NULL);
  if (!sg) goto done;
  int rc = sg == Py_None ? 0 : dyn_guards_add_shape(tx->guards, sg, inputs);
  Py_DECREF(sg);
  if (rc < 0 || add_grad_guards(tx) < 0) goto done;
  r = dyn_runner_new(compiled, inputs, effects, plan, (int)PyList_GET_SIZE(c->outputs),
                     c->n_memo);
  if (!r) goto done;
  *info = PyDict_Copy(PyTuple_GET_ITEM(res, 1));
  PyObject* g = *info ? dyn_guards_describe(tx->guards) : NULL;
  if (!g || PyDict_SetItemString(*info, "guards", g) < 0) {
    Py_CLEAR(*info);
    Py_CLEAR(r);
  }
  Py_XDECREF(g);
done:
  Py_XDECREF(res);
  Py_DECREF(inputs);
  return r;
}

static dyn_entry* make_entry(dyn_tx* tx, DynRunner* r, PyObject* info, PyObject* fn) {
  dyn_entry* e = PyMem_Calloc(1, sizeof *e);
  if (!e) {
    PyErr_NoMemory();
    return NULL;
  }
  e->guards = (DynGuardSet*)Py_NewRef((PyObject*)tx->guards);
  e->runner = (DynRunner*)Py_NewRef((PyObject*)r);
  e->info = Py_NewRef(info);
  if (fn) {
    e->fn = Py_NewRef(fn);
    e->code = Py_NewRef(PyFunction_GET_CODE(fn));
  }
  return e;
}

static int set_info_str(PyObject* info, const char* key, const char* val) {
  PyObject* s = PyUnicode_FromString(val);
  int rc = s ? PyDict_SetItemString(info, key, s) : -1;
  Py_XDECREF(s);
  return rc;
}

dyn_entry* dyn_output_return(dyn_tx* tx, DynVar* retval) {
  out_ctx c;
  dyn_entry* e = NULL;
  PyObject *plan = NULL, *effects = NULL, *info = NULL;
  DynRunner* r = NULL;
  if (ctx_init(&c, tx) < 0) goto done;
  plan = plan_of(&c, retval);
  if (!plan) {
    refused(&c, "the return value");
    goto done;
  }
  effects = plan_effects(&c);
  if (!effects) {
    refused(&c, "a side effect");
    goto done;
  }
  r = compile_runner(&c, effects, plan, &info);
  if (!r || set_info_str(info, "kind", "return") < 0) goto done;
  e = make_entry(tx, r, info, NULL);
done:
  Py_XDECREF(plan);
  Py_XDECREF(effects);
  Py_XDECREF(info);
  Py_XDECREF((PyObject*)r);
  ctx_free(&c);
  return e;
}

/* (stack items..., live locals...) plan; fills stack_null and live. */
static PyObject* plan_state(out_ctx* c, DynVar* const* stack, int n_stack, DynVar* const* locals,
                            int n_locals, char* stack_null, int* live, int* n_live) {
  *n_live = 0;
  for (int i = 0; i < n_locals; i++)
    if (locals[i]) live[(*n_live)++] = i;
  PyObject* t = PyTuple_New(n_stack + *n_live);
  for (int i = 0; t && i < n_stack + *n_live; i++) {
    DynVar* v = i < n_stack ? stack[i] : locals[live[i - n_stack]];
    PyObject* p;
    if (i < n_stack && (!v || v->kind == DV_NULL)) {
      stack_null[i] = 1;
      p = tag2(DP_CONST, Py_None);
    } else {
      p = v ? plan_of(c, v) : refuse(c, "%s", "an unbound stack item");
    }
    if (!p) Py_CLEAR(t);
    else PyTuple_SET_ITEM(t, i, p);
  }
  if (!t) return NULL;
  return Py_BuildValue("(iN)", DP_TUPLE, t);
}

dyn_entry* dyn_output_break(dyn_tx* tx, const dyn_code* code, int index, int end_index,
                            DynVar* const* stack, int n_stack, DynVar* const* locals,
                            int n_locals) {
  out_ctx c;
  dyn_entry* e = NULL;
  PyObject *plan = NULL, *effects = NULL, *info = NULL, *fn = NULL;
  DynRunner* r = NULL;
  char* stack_null = PyMem_Calloc((size_t)n_stack + 1, 1);
  int* live = PyMem_Calloc((size_t)n_locals + 1, sizeof(int));
  int n_live = 0;
  if (ctx_init(&c, tx) < 0 || !stack_null || !live) {
    if (!PyErr_Occurred()) PyErr_NoMemory();
    goto done;
  }
  plan = plan_state(&c, stack, n_stack, locals, n_locals, stack_null, live, &n_live);
  if (!plan) {
    refused(&c, "the state at the graph break");
    goto done;
  }
  effects = plan_effects(&c);
  if (!effects) {
    refused(&c, "a side effect");
    goto done;
  }
  const char* why = "graph breaks are not available (no bytecode generator)";
  fn = !dyn_codegen_break_ex ? NULL : dyn_codegen_break_ex(code, index, end_index, n_stack, stack_null, live, n_live,
                            tx->view->globals, &why);
  if (!fn) {
    if (!PyErr_Occurred()) dyn_break(tx, "%s", why ? why : "graph break not expressible");
    goto done;
  }
  r = compile_runner(&c, effects, plan, &info);
  if (!r || set_info_str(info, "kind", "break") < 0) goto done;
  e = make_entry(tx, r, info, fn);
done:
  PyMem_Free(stack_null);
  PyMem_Free(live);
  Py_XDECREF(plan);
  Py_XDECREF(effects);
  Py_XDECREF(info);
  Py_XDECREF(fn);
  Py_XDECREF((PyObject*)r);
  ctx_free(&c);
  return e;
}
