/* dyn_module.c - registers the bytecode capture (dyn_*.c) in ptc._C:
 * its types and the _C.dyn_* functions used by ptc/dynamo.py, plus the test
 * entry points of the other dyn_*.c files. Functions of files that may not
 * be written yet are referenced weakly and registered only when present. */
#include "dyn.h"

#include <string.h>

#pragma weak DynVar_Type
#pragma weak DynRunner_Type
#pragma weak dyn_py_decode
#pragma weak dyn_py_roundtrip
#pragma weak dyn_py_test_break
#pragma weak dyn_unsupported_error

/* dyn_hook.c: the Python entry points of the hook (registered below). */
/** _C.dyn_enable(config_or_None) -> the thread's previous config (None when
 * off); installs the frame hook while at least one thread has a config.
 * RuntimeError on Pythons other than 3.11/3.12. */
PyObject* dyn_py_enable(PyObject* self, PyObject* cfg);
/** _C.dyn_run(config_or_None, fn, *args, **kwargs) -> fn(*args, **kwargs)
 * run with `config` as the thread's capture config (restored after). */
PyObject* dyn_py_run(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames);
/** _C.dyn_call_descriptor(cls) -> a method descriptor of `cls` (an
 * OptimizedModule class) for cls.__call__ (calls reach C without a Python
 * frame). A call module(*args, **kwargs): when torch's Module.__call__
 * would call forward directly (no hooks on the wrapper, the wrapped module
 * or globally, Module.__call__ not patched, the wrapped type's __call__ and
 * _call_impl torch's own), runs module._orig_mod.forward(*args, **kwargs)
 * under module._ptc_config without the two Module.__call__ layers; else
 * torch.nn.Module.__call__(module, *args, **kwargs). (Under torch.jit.trace
 * the tracer's scope names are then not recorded.) */
PyObject* dyn_py_call_descriptor(PyObject* self, PyObject* cls);
/** _C.dyn_reset(): drops every code object's cache entries, skip marks and
 * automatic-dynamic memory, and zeroes the counters. */
PyObject* dyn_py_reset(PyObject* self, PyObject* unused);
/** _C.dyn_stats() -> dict of counters (frames_seen, frames_converted,
 * entries, graphs, breaks, cache_hits, recompiles, skipped,
 * cache_limit_hits, errors, fallbacks, threads_enabled). */
PyObject* dyn_py_stats(PyObject* self, PyObject* unused);
/** _C.dyn_entries(code) -> list of the code's entries' info dicts (most
 * recent first) with guards (list of str), hits and is_break added. */
PyObject* dyn_py_entries(PyObject* self, PyObject* code);
/** _C._dyn_skipped(code) -> bool: the hook's filename rules (tests). */
PyObject* dyn_py_skipped(PyObject* self, PyObject* code);

/* _C._dyn_source(kind, arg=None, base=None, name=None) -> DynSource (tests):
 * kind "local" (arg = index, name), "global" (arg = name), "closure"
 * (arg = index), "attr"/"item" (base, arg = name/key), "const" (arg),
 * "grad_mode", "default_dtype", "type" (base). */
static PyObject* py_source(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"kind", "arg", "base", "name", NULL};
  const char* kind;
  PyObject *arg = Py_None, *base = Py_None, *name = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|OOO", kwlist, &kind, &arg, &base, &name))
    return NULL;
  DynSource* b = NULL;
  if (base != Py_None) {
    if (!PyObject_TypeCheck(base, &DynSource_Type))
      return PyErr_Format(PyExc_TypeError, "_dyn_source: base must be a DynSource");
    b = (DynSource*)base;
  }
  int needs_base = !strcmp(kind, "attr") || !strcmp(kind, "item") || !strcmp(kind, "type");
  if (needs_base && !b) return PyErr_Format(PyExc_TypeError, "_dyn_source: %s needs a base", kind);
  if (!strcmp(kind, "local") || !strcmp(kind, "closure")) {
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred()) return NULL;
    return (PyObject*)(kind[0] == 'l' ? dyn_source_local(i, name) : dyn_source_closure(i));
  }
  if (!strcmp(kind, "global")) return (PyObject*)dyn_source_global(arg);
  if (!strcmp(kind, "attr")) return (PyObject*)dyn_source_attr(b, arg);
  if (!strcmp(kind, "item")) return (PyObject*)dyn_source_item(b, arg);
  if (!strcmp(kind, "const")) return (PyObject*)dyn_source_const(arg);
  if (!strcmp(kind, "grad_mode")) return (PyObject*)dyn_source_grad_mode();
  if (!strcmp(kind, "default_dtype")) return (PyObject*)dyn_source_default_dtype();
  if (!strcmp(kind, "type")) return (PyObject*)dyn_source_type(b);
  return PyErr_Format(PyExc_ValueError, "_dyn_source: unknown kind '%s'", kind);
}

/* _C._dyn_unsupported_error() -> the fullgraph break exception class, or
 * None while dyn_eval.c does not provide it. */
static PyObject* py_unsupported_error(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  if (!dyn_unsupported_error) Py_RETURN_NONE;
  PyObject* cls = dyn_unsupported_error();
  return Py_XNewRef(cls);
}

/* _C._dyn_guard_bench(guard_set, locals, globals, n) -> seconds per
 * dyn_guards_check over a frame view of `locals` (measurements). */
static PyObject* py_guard_bench(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *gs, *locals, *globals;
  Py_ssize_t n;
  if (!PyArg_ParseTuple(args, "O!O!O!n", &DynGuardSet_Type, &gs, &PyList_Type, &locals,
                        &PyDict_Type, &globals, &n))
    return NULL;
  dyn_frame_view v = {0};
  v.globals = globals;
  v.builtins = PyEval_GetBuiltins();
  v.locals = (PyObject* const*)((PyListObject*)locals)->ob_item;
  v.n_locals = v.n_args = PyList_GET_SIZE(locals);
  PyObject* clock = PyImport_ImportModule("time");
  PyObject* t0 = clock ? PyObject_CallMethod(clock, "perf_counter", NULL) : NULL;
  int ok = 1;
  for (Py_ssize_t i = 0; t0 && i < n && ok == 1; i++) ok = dyn_guards_check((DynGuardSet*)gs, &v, NULL);
  PyObject* t1 = t0 ? PyObject_CallMethod(clock, "perf_counter", NULL) : NULL;
  PyObject* r = NULL;
  if (t1 && ok >= 0)
    r = PyFloat_FromDouble((PyFloat_AsDouble(t1) - PyFloat_AsDouble(t0)) / (double)(n > 0 ? n : 1));
  Py_XDECREF(clock);
  Py_XDECREF(t0);
  Py_XDECREF(t1);
  return r;
}

static PyMethodDef dyn_methods[] = {
    {"dyn_enable", dyn_py_enable, METH_O,
     "dyn_enable(config_or_None) -> previous: sets this thread's capture config "
     "(None turns capture off)."},
    {"dyn_run", (PyCFunction)(void (*)(void))dyn_py_run, METH_FASTCALL | METH_KEYWORDS,
     "dyn_run(config_or_None, fn, *args, **kwargs) -> fn(*args, **kwargs) with `config` as "
     "this thread's capture config (the previous one restored after)."},
    {"dyn_call_descriptor", dyn_py_call_descriptor, METH_O,
     "dyn_call_descriptor(cls) -> method descriptor for an OptimizedModule class's __call__."},
    {"dyn_reset", dyn_py_reset, METH_NOARGS, "dyn_reset(): drops every capture cache entry."},
    {"dyn_stats", dyn_py_stats, METH_NOARGS, "dyn_stats() -> dict of capture counters."},
    {"dyn_entries", dyn_py_entries, METH_O,
     "dyn_entries(code) -> list of info dicts of the code's cache entries."},
    {"_dyn_skipped", dyn_py_skipped, METH_O,
     "_dyn_skipped(code) -> whether the filename rules skip this code (tests)."},
    {"_dyn_source", (PyCFunction)(void (*)(void))py_source, METH_VARARGS | METH_KEYWORDS,
     "_dyn_source(kind, arg=None, base=None, name=None) -> DynSource (tests)."},
    {"_dyn_guard_bench", py_guard_bench, METH_VARARGS,
     "_dyn_guard_bench(guard_set, locals, globals, n) -> seconds per guard check."},
    {"_dyn_unsupported_error", py_unsupported_error, METH_NOARGS,
     "_dyn_unsupported_error() -> the fullgraph break exception class or None."},
    {NULL, NULL, 0, NULL}};

/* Registers one optional function (weak symbol: skipped when absent). */
static int add_optional(PyObject* m, const char* name, PyCFunction fn, int flags, const char* doc) {
  static PyMethodDef defs[8];
  static int n_defs;
  if (!fn) return 0;
  if (n_defs >= 8) return 0;
  PyMethodDef* d = &defs[n_defs++];
  d->ml_name = name;
  d->ml_meth = fn;
  d->ml_flags = flags;
  d->ml_doc = doc;
  PyObject* f = PyCFunction_NewEx(d, NULL, NULL);
  if (!f) return -1;
  int r = PyModule_AddObject(m, name, f);
  if (r < 0) Py_DECREF(f);
  return r;
}

/* Readies and adds a type (skipped when its file is not linked). */
static int add_type(PyObject* m, PyTypeObject* tp, const char* name) {
  if (!tp) return 0;
  if (PyType_Ready(tp) < 0) return -1;
  Py_INCREF(tp);
  if (PyModule_AddObject(m, name, (PyObject*)tp) < 0) {
    Py_DECREF(tp);
    return -1;
  }
  return 0;
}

/* (dyn.h) */
int ptcpy_dyn_init(PyObject* m) {
  if (add_type(m, &DynSource_Type, "DynSource") < 0 ||
      add_type(m, &DynGuardSet_Type, "DynGuardSet") < 0 ||
      add_type(m, &DynVar_Type, "DynVar") < 0 || add_type(m, &DynRunner_Type, "DynRunner") < 0)
    return -1;
  if (PyModule_AddFunctions(m, dyn_methods) < 0) return -1;
  if (add_optional(m, "_dyn_decode", dyn_py_decode, METH_O,
                   "_dyn_decode(code) -> list of (opname, arg, offset, target, line).") < 0 ||
      add_optional(m, "_dyn_roundtrip", dyn_py_roundtrip, METH_O,
                   "_dyn_roundtrip(code) -> code re-assembled from its decoded instructions.") < 0 ||
      add_optional(m, "_dyn_test_break", dyn_py_test_break, METH_VARARGS,
                   "_dyn_test_break(code, index, end_index, n_stack, live_locals, stack_null, "
                   "globals) -> transformed function or refusal reason (tests).") < 0)
    return -1;
  /* guard kinds, for tests and dynamo.py */
  static const struct { const char* n; int v; } kinds[] = {
      {"DG_TYPE", DG_TYPE}, {"DG_ID", DG_ID}, {"DG_EQ", DG_EQ}, {"DG_LEN", DG_LEN},
      {"DG_DICT_KEYS", DG_DICT_KEYS}, {"DG_TENSOR", DG_TENSOR}, {"DG_TRUTH", DG_TRUTH},
      {"DG_NOT_HASATTR", DG_NOT_HASATTR}, {"DG_SHAPE", DG_SHAPE}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (PyModule_AddIntConstant(m, kinds[i].n, kinds[i].v) < 0) return -1;
  return PyModule_AddIntConstant(m, "DYN_SUPPORTED", PTC_DYN_SUPPORTED);
}
