/* dyn_runner.c - the DynRunner type: executes a cache entry of the bytecode
 * capture. Per call: fetch the graph's input tensors through their sources
 * (a local argument is read straight from the frame), call the compiled
 * graph (vectorcall), evaluate every plan the entry needs (the operands of
 * the side effects, then the result), apply the side effects in program
 * order and return the result. Plans are tuples with small-int tags (dyn.h,
 * enum dyn_plan_tag) built once by dyn_output.c; the common case (result =
 * one graph output, no effects) touches no Python-level code besides the
 * compiled graph. */
#include "dyn.h"

#include <string.h>

/* Per-run state shared by the plan evaluator. */
typedef struct run_ctx {
  const dyn_frame_view* v;
  PyObject* const* inputs; /* fetched graph inputs (strong, owned by the caller) */
  Py_ssize_t n_inputs;
  PyObject* outs;          /* tuple of graph outputs or NULL */
  PyObject** memo;         /* n_memo slots (strong or NULL) */
  int n_memo;
} run_ctx;

static PyObject* eval_plan(run_ctx* c, PyObject* p);

static inline long plan_tag(PyObject* p) { return PyLong_AsLong(PyTuple_GET_ITEM(p, 0)); }

static PyObject* bad_plan(const char* what) {
  PyErr_Format(PyExc_SystemError, "ptc capture runner: malformed plan (%s)", what);
  return NULL;
}

/* Evaluates a tuple of plans into a new tuple. */
static PyObject* eval_items(run_ctx* c, PyObject* plans) {
  Py_ssize_t n = PyTuple_GET_SIZE(plans);
  PyObject* t = PyTuple_New(n);
  for (Py_ssize_t i = 0; t && i < n; i++) {
    PyObject* x = eval_plan(c, PyTuple_GET_ITEM(plans, i));
    if (!x) Py_CLEAR(t);
    else PyTuple_SET_ITEM(t, i, x);
  }
  return t;
}

static int memo_index(run_ctx* c, PyObject* p, Py_ssize_t pos, Py_ssize_t* out) {
  Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(p, pos));
  if (k < 0 || k >= c->n_memo) {
    if (!PyErr_Occurred()) bad_plan("memo slot");
    return -1;
  }
  *out = k;
  return 0;
}

/* A created list/dict/set: built once per run (memo slot), then shared. */
static PyObject* eval_container(run_ctx* c, PyObject* p, long tag) {
  Py_ssize_t k;
  if (memo_index(c, p, tag == DP_DICT ? 3 : 2, &k) < 0) return NULL;
  if (c->memo[k]) return Py_NewRef(c->memo[k]);
  PyObject* obj = NULL;
  if (tag == DP_DICT) {
    PyObject* keys = PyTuple_GET_ITEM(p, 1);
    PyObject* vals = eval_items(c, PyTuple_GET_ITEM(p, 2));
    if (!vals) return NULL;
    obj = PyDict_New();
    for (Py_ssize_t i = 0; obj && i < PyTuple_GET_SIZE(keys); i++)
      if (PyDict_SetItem(obj, PyTuple_GET_ITEM(keys, i), PyTuple_GET_ITEM(vals, i)) < 0)
        Py_CLEAR(obj);
    Py_DECREF(vals);
  } else {
    PyObject* items = eval_items(c, PyTuple_GET_ITEM(p, 1));
    if (!items) return NULL;
    obj = tag == DP_LIST ? PySequence_List(items) : PySet_New(items);
    Py_DECREF(items);
  }
  if (obj) c->memo[k] = Py_NewRef(obj);
  return obj;
}

static PyObject* eval_output(run_ctx* c, PyObject* p) {
  Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(p, 1));
  if (!c->outs || k < 0 || k >= PyTuple_GET_SIZE(c->outs)) {
    if (!PyErr_Occurred()) bad_plan("graph output index");
    return NULL;
  }
  return Py_NewRef(PyTuple_GET_ITEM(c->outs, k));
}

static PyObject* eval_input(run_ctx* c, PyObject* p) {
  Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(p, 1));
  if (i < 0 || i >= c->n_inputs) {
    if (!PyErr_Occurred()) bad_plan("graph input index");
    return NULL;
  }
  return Py_NewRef(c->inputs[i]);
}

static PyObject* eval_cell(run_ctx* c, PyObject* p) {
  Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(p, 1));
  PyObject* cl = c->v->closure;
  if (!cl || !PyTuple_Check(cl) || i < 0 || i >= PyTuple_GET_SIZE(cl)) {
    if (!PyErr_Occurred()) bad_plan("closure cell index");
    return NULL;
  }
  return Py_NewRef(PyTuple_GET_ITEM(cl, i));
}

static PyObject* eval_slice(run_ctx* c, PyObject* p) {
  PyObject* a[3] = {NULL, NULL, NULL};
  PyObject* r = NULL;
  for (int i = 0; i < 3; i++)
    if (!(a[i] = eval_plan(c, PyTuple_GET_ITEM(p, 1 + i)))) goto done;
  r = PySlice_New(a[0], a[1], a[2]);
done:
  for (int i = 0; i < 3; i++) Py_XDECREF(a[i]);
  return r;
}

/* callable(*items); with a 4th item, built once per run (memo slot). */
static PyObject* eval_call(run_ctx* c, PyObject* p) {
  Py_ssize_t k = -1;
  if (PyTuple_GET_SIZE(p) >= 4) {
    if (memo_index(c, p, 3, &k) < 0) return NULL;
    if (c->memo[k]) return Py_NewRef(c->memo[k]);
  }
  PyObject* items = eval_items(c, PyTuple_GET_ITEM(p, 2));
  if (!items) return NULL;
  PyObject* r = PyObject_Call(PyTuple_GET_ITEM(p, 1), items, NULL);
  Py_DECREF(items);
  if (r && k >= 0) c->memo[k] = Py_NewRef(r);
  return r;
}

static PyObject* eval_method(run_ctx* c, PyObject* p) {
  PyObject* fn = eval_plan(c, PyTuple_GET_ITEM(p, 1));
  if (!fn) return NULL;
  PyObject* self = eval_plan(c, PyTuple_GET_ITEM(p, 2));
  PyObject* r = self ? PyMethod_New(fn, self) : NULL;
  Py_DECREF(fn);
  Py_XDECREF(self);
  return r;
}

static PyObject* eval_iter(run_ctx* c, PyObject* p) {
  PyObject* items = eval_items(c, PyTuple_GET_ITEM(p, 1));
  if (!items) return NULL;
  PyObject* r = PyObject_GetIter(items);
  Py_DECREF(items);
  return r;
}

/* One plan -> new reference. */
static PyObject* eval_plan(run_ctx* c, PyObject* p) {
  if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) < 2) return bad_plan("not a tagged tuple");
  long tag = plan_tag(p);
  switch (tag) {
    case DP_CONST: return Py_NewRef(PyTuple_GET_ITEM(p, 1));
    case DP_OUT: return eval_output(c, p);
    case DP_INPUT: return eval_input(c, p);
    case DP_SRC: return dyn_source_eval((DynSource*)PyTuple_GET_ITEM(p, 1), c->v);
    case DP_TUPLE: return eval_items(c, PyTuple_GET_ITEM(p, 1));
    case DP_LIST:
    case DP_DICT:
    case DP_SET: return eval_container(c, p, tag);
    case DP_CALL: return eval_call(c, p);
    case DP_SLICE: return eval_slice(c, p);
    case DP_MEMO: {
      Py_ssize_t k;
      if (memo_index(c, p, 1, &k) < 0) return NULL;
      if (!c->memo[k]) return bad_plan("memo slot used before it is built");
      return Py_NewRef(c->memo[k]);
    }
    case DP_METHOD: return eval_method(c, p);
    case DP_ITER: return eval_iter(c, p);
    case DP_CELL: return eval_cell(c, p);
    default: return PyErr_Occurred() ? NULL : bad_plan("unknown tag");
  }
}

/* ---- side effects ------------------------------------------------------------------ */

/* Operands of effect `e` (items 1..) evaluated into ops[] (strong). Items
 * that are not plans (names, NULL markers) are taken as they are. */
static int eval_effect_operands(run_ctx* c, PyObject* e, PyObject** ops, int max) {
  Py_ssize_t n = PyTuple_GET_SIZE(e);
  for (Py_ssize_t i = 1; i < n && i <= max; i++) {
    PyObject* x = PyTuple_GET_ITEM(e, i);
    long tag = plan_tag(e);
    int is_plan = PyTuple_Check(x) && PyTuple_GET_SIZE(x) >= 2 && PyLong_Check(PyTuple_GET_ITEM(x, 0));
    /* DE_DICT's keys (item 2) are a plain tuple of constants */
    if (tag == DE_DICT && i == 2) is_plan = 0;
    ops[i - 1] = is_plan ? eval_plan(c, x) : Py_NewRef(x);
    if (!ops[i - 1]) return -1;
  }
  return 0;
}

static int apply_list(PyObject* lst, PyObject* items) {
  if (!PyList_Check(lst)) {
    PyErr_SetString(PyExc_TypeError, "ptc capture: list effect on a non-list");
    return -1;
  }
  return PyList_SetSlice(lst, 0, PyList_GET_SIZE(lst), items);
}

static int apply_dict(PyObject* d, PyObject* keys, PyObject* vals) {
  if (PyDict_Check(d)) {
    PyDict_Clear(d);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); i++)
      if (PyDict_SetItem(d, PyTuple_GET_ITEM(keys, i), PyTuple_GET_ITEM(vals, i)) < 0) return -1;
    return 0;
  }
  PyObject* r = PyObject_CallMethod(d, "clear", NULL);
  if (!r) return -1;
  Py_DECREF(r);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); i++)
    if (PyObject_SetItem(d, PyTuple_GET_ITEM(keys, i), PyTuple_GET_ITEM(vals, i)) < 0) return -1;
  return 0;
}

static int apply_effect(run_ctx* c, PyObject* e, PyObject** ops) {
  switch (plan_tag(e)) {
    case DE_SETATTR: return PyObject_SetAttr(ops[0], ops[1], ops[2]);
    case DE_DELATTR: return PyObject_DelAttr(ops[0], ops[1]);
    case DE_LIST: return apply_list(ops[0], ops[1]);
    case DE_DICT: return apply_dict(ops[0], ops[1], ops[2]);
    case DE_GLOBAL: {
      PyObject* g = ops[0] == Py_None ? c->v->globals : ops[0];
      if (!g) {
        PyErr_SetString(PyExc_SystemError, "ptc capture runner: global write without globals");
        return -1;
      }
      return PyObject_SetItem(g, ops[1], ops[2]);
    }
    case DE_CELL:
      if (!PyCell_Check(ops[0])) {
        PyErr_SetString(PyExc_TypeError, "ptc capture: cell effect on a non-cell");
        return -1;
      }
      return PyCell_Set(ops[0], PyTuple_GET_SIZE(e) >= 3 ? ops[1] : NULL);
    default: bad_plan("unknown effect"); return -1;
  }
}

/* Evaluates every effect's operands, then applies the effects in order. */
static int run_effects(run_ctx* c, PyObject* effects) {
  Py_ssize_t n = PyTuple_GET_SIZE(effects);
  if (n == 0) return 0;
  PyObject** ops = PyMem_Calloc((size_t)n * 3, sizeof(PyObject*));
  if (!ops) {
    PyErr_NoMemory();
    return -1;
  }
  int rc = 0;
  for (Py_ssize_t i = 0; rc == 0 && i < n; i++)
    rc = eval_effect_operands(c, PyTuple_GET_ITEM(effects, i), ops + 3 * i, 3);
  for (Py_ssize_t i = 0; rc == 0 && i < n; i++)
    rc = apply_effect(c, PyTuple_GET_ITEM(effects, i), ops + 3 * i);
  for (Py_ssize_t i = 0; i < 3 * n; i++) Py_XDECREF(ops[i]);
  PyMem_Free(ops);
  return rc;
}

/* ---- running ------------------------------------------------------------------------ */

/* Graph input i: a frame argument read directly, else the source. */
static PyObject* fetch_input(DynSource* s, const dyn_frame_view* v) {
  if (s->kind == DS_LOCAL && s->index >= 0 && s->index < v->n_locals && v->locals[s->index])
    return Py_NewRef(v->locals[s->index]);
  return dyn_source_eval(s, v);
}

static PyObject* call_graph(DynRunner* r, PyObject* const* in, Py_ssize_t n) {
  PyObject* outs = PyObject_Vectorcall(r->compiled, in, (size_t)n, NULL);
  if (!outs) return NULL;
  if (!PyTuple_Check(outs) || PyTuple_GET_SIZE(outs) < r->n_outputs) {
    PyErr_Format(PyExc_SystemError,
                 "ptc capture runner: the compiled graph returned %.100s, expected a tuple "
                 "of %d outputs", Py_TYPE(outs)->tp_name, r->n_outputs);
    Py_DECREF(outs);
    return NULL;
  }
  return outs;
}

static PyObject* run_plans(DynRunner* r, run_ctx* c) {
  PyObject* small[8] = {NULL};
  PyObject** memo = r->n_memo <= 8 ? small : PyMem_Calloc((size_t)r->n_memo, sizeof(PyObject*));
  if (!memo) return PyErr_NoMemory();
  c->memo = memo;
  c->n_memo = r->n_memo;
  PyObject* res = NULL;
  /* the result first: its DP_SRC reads see the values before the effects */
  res = eval_plan(c, r->result_plan);
  if (res && run_effects(c, r->effects) < 0) Py_CLEAR(res);
  for (int i = 0; i < r->n_memo; i++) Py_XDECREF(memo[i]);
  if (memo != small) PyMem_Free(memo);
  return res;
}

PyObject* dyn_runner_run(DynRunner* r, const dyn_frame_view* v) {
  Py_ssize_t n = PyTuple_GET_SIZE(r->inputs);
  PyObject* small[8];
  PyObject** in = n <= 8 ? small : PyMem_Malloc((size_t)(n + 1) * sizeof(PyObject*));
  if (!in) return PyErr_NoMemory();
  Py_ssize_t got = 0;
  PyObject *outs = NULL, *res = NULL;
  for (; got < n; got++)
    if (!(in[got] = fetch_input((DynSource*)PyTuple_GET_ITEM(r->inputs, got), v))) goto done;
  if (r->compiled != Py_None && !(outs = call_graph(r, in, n))) goto done;
  PyObject* p = r->result_plan;
  if (PyTuple_GET_SIZE(r->effects) == 0 && outs && PyTuple_GET_SIZE(p) == 2 &&
      PyLong_AsLong(PyTuple_GET_ITEM(p, 0)) == DP_OUT) { /* the common case */
    Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(p, 1));
    if (k >= 0 && k < PyTuple_GET_SIZE(outs)) {
      res = Py_NewRef(PyTuple_GET_ITEM(outs, k));
      goto done;
    }
  }
  run_ctx c = {v, in, n, outs, NULL, 0};
  res = run_plans(r, &c);
done:
  Py_XDECREF(outs);
  for (Py_ssize_t i = 0; i < got; i++) Py_DECREF(in[i]);
  if (in != small) PyMem_Free(in);
  return res;
}

/* ---- the type ---------------------------------------------------------------------- */

static void runner_dealloc(PyObject* o) {
  DynRunner* r = (DynRunner*)o;
  PyObject_GC_UnTrack(o);
  Py_CLEAR(r->compiled);
  Py_CLEAR(r->inputs);
  Py_CLEAR(r->effects);
  Py_CLEAR(r->result_plan);
  Py_TYPE(o)->tp_free(o);
}

static int runner_traverse(PyObject* o, visitproc visit, void* arg) {
  DynRunner* r = (DynRunner*)o;
  Py_VISIT(r->compiled);
  Py_VISIT(r->inputs);
  Py_VISIT(r->effects);
  Py_VISIT(r->result_plan);
  return 0;
}

static int runner_clear(PyObject* o) {
  DynRunner* r = (DynRunner*)o;
  Py_CLEAR(r->compiled);
  Py_CLEAR(r->inputs);
  Py_CLEAR(r->effects);
  Py_CLEAR(r->result_plan);
  return 0;
}

static PyObject* runner_repr(PyObject* o) {
  DynRunner* r = (DynRunner*)o;
  return PyUnicode_FromFormat("<DynRunner inputs=%zd outputs=%d effects=%zd>",
                              r->inputs ? PyTuple_GET_SIZE(r->inputs) : 0, r->n_outputs,
                              r->effects ? PyTuple_GET_SIZE(r->effects) : 0);
}

static PyObject* runner_get(PyObject* o, void* which) {
  DynRunner* r = (DynRunner*)o;
  PyObject* x = which == (void*)0   ? r->compiled
                : which == (void*)1 ? r->inputs
                : which == (void*)2 ? r->effects
                                    : r->result_plan;
  return Py_NewRef(x ? x : Py_None);
}

/* Test/benchmark entry points: DynRunner(compiled, inputs, effects, plan,
 * n_outputs, n_memo) and runner(locals_tuple, globals_dict=None) running it
 * for a frame whose fast locals are the tuple's items. */
static PyObject* runner_tp_new(PyTypeObject* tp, PyObject* args, PyObject* kw) {
  PyObject *compiled, *inputs, *effects, *plan;
  int n_outputs, n_memo = 0;
  if (kw && PyDict_GET_SIZE(kw)) {
    PyErr_SetString(PyExc_TypeError, "DynRunner takes positional arguments only");
    return NULL;
  }
  if (!PyArg_ParseTuple(args, "OO!O!O!i|i:DynRunner", &compiled, &PyTuple_Type, &inputs,
                        &PyTuple_Type, &effects, &PyTuple_Type, &plan, &n_outputs, &n_memo))
    return NULL;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(inputs); i++)
    if (!PyObject_TypeCheck(PyTuple_GET_ITEM(inputs, i), &DynSource_Type)) {
      PyErr_SetString(PyExc_TypeError, "DynRunner: inputs must be DynSources");
      return NULL;
    }
  return (PyObject*)dyn_runner_new(compiled, inputs, effects, plan, n_outputs, n_memo);
}

static PyObject* runner_tp_call(PyObject* o, PyObject* args, PyObject* kw) {
  PyObject *locals, *globals = Py_None;
  if (!PyArg_ParseTuple(args, "O!|O:DynRunner.__call__", &PyTuple_Type, &locals, &globals))
    return NULL;
  dyn_frame_view v;
  memset(&v, 0, sizeof v);
  v.globals = globals == Py_None ? NULL : globals;
  v.locals = (PyObject* const*)&PyTuple_GET_ITEM(locals, 0);
  v.n_locals = v.n_args = PyTuple_GET_SIZE(locals);
  return dyn_runner_run((DynRunner*)o, &v);
}

static PyGetSetDef runner_getset[] = {
    {"compiled", runner_get, NULL, "the compiled graph (callable) or None", (void*)0},
    {"inputs", runner_get, NULL, "tuple of DynSource: the graph inputs", (void*)1},
    {"effects", runner_get, NULL, "tuple of effect plans", (void*)2},
    {"result_plan", runner_get, NULL, "plan of the result", (void*)3},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject DynRunner_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ptc._C.DynRunner",
    .tp_basicsize = sizeof(DynRunner),
    .tp_dealloc = runner_dealloc,
    .tp_repr = runner_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Executor of a bytecode-capture cache entry (graph + effects + result plan).",
    .tp_traverse = runner_traverse,
    .tp_clear = runner_clear,
    .tp_getset = runner_getset,
    .tp_new = runner_tp_new,
    .tp_call = runner_tp_call,
};

DynRunner* dyn_runner_new(PyObject* compiled, PyObject* inputs, PyObject* effects,
                          PyObject* result_plan, int n_outputs, int n_memo) {
  if (!(DynRunner_Type.tp_flags & Py_TPFLAGS_READY) && PyType_Ready(&DynRunner_Type) < 0)
    return NULL;
  if (!PyTuple_Check(inputs) || !PyTuple_Check(effects) || !PyTuple_Check(result_plan)) {
    PyErr_SetString(PyExc_TypeError, "dyn_runner_new: inputs, effects and plan must be tuples");
    return NULL;
  }
  DynRunner* r = PyObject_GC_New(DynRunner, &DynRunner_Type);
  if (!r) return NULL;
  r->compiled = Py_NewRef(compiled ? compiled : Py_None);
  r->inputs = Py_NewRef(inputs);
  r->effects = Py_NewRef(effects);
  r->result_plan = Py_NewRef(result_plan);
  r->n_outputs = n_outputs;
  r->n_memo = n_memo < 0 ? 0 : n_memo;
  PyObject_GC_Track((PyObject*)r);
  return r;
}
