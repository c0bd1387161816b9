/* module.c - the ptc._C module: import-time Python version check, the
 * process-wide ptc_context, _C.Error and status conversion, version(),
 * backends(), ops(), and the vectorcall argument parser used by the types. */
#include "ptcpy.h"
#include "dyn.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

ptc_context* ptcpy_ctx = NULL;
PyObject* ptcpy_Error = NULL;

/* ---- errors ------------------------------------------------------------------ */

/* Raises Error(text) with .code/.message/.detail set. */
static PyObject* raise_error(const char* code, PyObject* message, const char* detail) {
  PyObject* text = detail && *detail ? PyUnicode_FromFormat("%U\n%s", message, detail)
                                     : (Py_INCREF(message), message);
  if (!text) return NULL;
  PyObject* exc = PyObject_CallOneArg(ptcpy_Error, text);
  Py_DECREF(text);
  if (!exc) return NULL;
  PyObject* pcode = PyUnicode_FromString(code);
  PyObject* pdetail = detail ? PyUnicode_FromString(detail) : (Py_INCREF(Py_None), Py_None);
  if (pcode && pdetail && PyObject_SetAttrString(exc, "code", pcode) == 0 &&
      PyObject_SetAttrString(exc, "message", message) == 0 &&
      PyObject_SetAttrString(exc, "detail", pdetail) == 0)
    PyErr_SetObject(ptcpy_Error, exc);
  Py_XDECREF(pcode);
  Py_XDECREF(pdetail);
  Py_DECREF(exc);
  return NULL;
}

PyObject* ptcpy_raise(ptc_status s) {
  PyObject* msg = PyUnicode_DecodeUTF8(ptc_status_message(s), (Py_ssize_t)strlen(ptc_status_message(s)),
                                       "replace");
  if (msg) {
    raise_error(ptc_code_name(ptc_status_code(s)), msg, ptc_status_detail(s, NULL));
    Py_DECREF(msg);
  }
  ptc_status_destroy(s);
  return NULL;
}

PyObject* ptcpy_raise_code(const char* code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  PyObject* msg = PyUnicode_FromFormatV(fmt, ap);
  va_end(ap);
  if (!msg) return NULL;
  raise_error(code, msg, NULL);
  Py_DECREF(msg);
  return NULL;
}

/* ---- argument parsing -------------------------------------------------------- */

int ptcpy_parse_args(const char* fname, PyObject* const* args, Py_ssize_t nargs,
                     PyObject* kwnames, const char* const* names, int n, int n_required,
                     PyObject** out) {
  for (int i = 0; i < n; i++) out[i] = NULL;
  if (nargs > n) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional arguments (%zd given)", fname,
                 n, nargs);
    return -1;
  }
  for (Py_ssize_t i = 0; i < nargs; i++) out[i] = args[i];
  Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nk; k++) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    int found = -1;
    for (int i = 0; i < n && found < 0; i++)
      if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0) found = i;
    if (found < 0) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fname, key);
      return -1;
    }
    if (out[found]) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname,
                   names[found]);
      return -1;
    }
    out[found] = args[nargs + k];
  }
  for (int i = 0; i < n_required; i++)
    if (!out[i]) {
      PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fname, names[i]);
      return -1;
    }
  return 0;
}

int ptcpy_opt_str(PyObject* o, const char* what, const char** out) {
  *out = NULL;
  if (!o || o == Py_None) return 0;
  if (!PyUnicode_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s must be a str or None, not %.100s", what,
                 Py_TYPE(o)->tp_name);
    return -1;
  }
  *out = PyUnicode_AsUTF8(o);
  return *out ? 0 : -1;
}

/* ---- module functions -------------------------------------------------------- */

static PyObject* mod_version(PyObject* self, PyObject* unused) {
  return PyUnicode_FromString(ptc_version_string());
}

static PyObject* mod_backends(PyObject* self, PyObject* unused) {
  size_t n = ptc_backend_count();
  PyObject* list = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; list && i < n; i++) {
    const char* name = ptc_backend_name(i);
    const char* reason = NULL;
    int ok = ptc_backend_available(name, &reason);
    PyObject* item = Py_BuildValue("(sOz)", name, ok ? Py_True : Py_False, ok ? NULL : reason);
    if (!item) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, item);
  }
  return list;
}

static PyObject* mod_ops(PyObject* self, PyObject* unused) {
  size_t n = ptc_op_count();
  PyObject* list = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; list && i < n; i++) {
    PyObject* s = PyUnicode_FromString(ptc_op_name(i));
    if (!s) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, s);
  }
  return list;
}

static PyMethodDef module_methods[] = {
    {"version", mod_version, METH_NOARGS, "version() -> str: the libptc version string."},
    {"backends", mod_backends, METH_NOARGS,
     "backends() -> list of (name, available, reason or None) of libptc's backends."},
    {"ops", mod_ops, METH_NOARGS, "ops() -> list of registered op names."},
    {"compile", (PyCFunction)(void (*)(void))ptcpy_compile_fn, METH_FASTCALL | METH_KEYWORDS,
     "compile(graph, backend='cpu', mode=None, dynamic_dims=(), debug_dir=None,\n"
     "        disable_fusion=False) -> Executable\n"
     "Compiles a Graph (a snapshot; the GIL is released while compiling)."},
    {"_describe", ptcpy_describe, METH_O,
     "_describe(tensor) -> dict: how a cpu tensor is lent to libptc (tests)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "ptc._C",
    "ptc._C: CPython binding of libptc (graphs, compile, run, compiled functions).", -1,
    module_methods, NULL, NULL, NULL, NULL};

/* Error class with default attribute values for instances raised by users. */
static int add_error(PyObject* m) {
  PyObject* dict = Py_BuildValue("{s:s,s:s,s:O}", "code", "UNKNOWN", "message", "", "detail",
                                 Py_None);
  if (!dict) return -1;
  ptcpy_Error = PyErr_NewExceptionWithDoc(
      "ptc._C.Error",
      "Raised for every libptc error. .code is the status code name (\"INVALID_ARGUMENT\"),\n"
      ".message the message, .detail an optional payload (e.g. a compiler log) or None.",
      PyExc_RuntimeError, dict);
  Py_DECREF(dict);
  if (!ptcpy_Error) return -1;
  Py_INCREF(ptcpy_Error);
  return PyModule_AddObject(m, "Error", ptcpy_Error);
}

/* 0 when the running Python is 3.11 or 3.12 (and this module was built
 * for one of them), else -1 with ImportError naming the supported ones. */
static int check_python_version(void) {
  int major = 0, minor = 0;
  int built_ok = PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000;
  if (sscanf(Py_GetVersion(), "%d.%d", &major, &minor) == 2 && built_ok && major == 3 &&
      (minor == 11 || minor == 12))
    return 0;
  PyErr_Format(PyExc_ImportError,
               "ptc._C supports Python 3.11 and 3.12 only (built for %s, running %d.%d)",
               PY_VERSION, major, minor);
  return -1;
}

PyMODINIT_FUNC PyInit__C(void) {
  if (check_python_version() < 0) return NULL;
  if (ptc_version_number() != PTC_VERSION_NUMBER) {
    PyErr_Format(PyExc_ImportError,
                 "ptc._C was built for libptc %s but loaded libptc %s",
                 PTC_VERSION_STRING, ptc_version_string());
    return NULL;
  }
  if (!ptcpy_ctx) {
    ptc_status s = ptc_context_create(NULL, &ptcpy_ctx);
    if (s) {
      PyErr_Format(PyExc_ImportError, "ptc._C: cannot create the libptc context: %s",
                   ptc_status_message(s));
      ptc_status_destroy(s);
      return NULL;
    }
  }
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return NULL;
  if (ptcpy_tensor_init() < 0 || add_error(m) < 0 || ptcpy_graph_types_init(m) < 0 || ptcpy_exec_type_init(m) < 0 ||
      ptcpy_compiled_type_init(m) < 0
#ifndef PTC_NO_DYN
      || ptcpy_dyn_init(m) < 0
#endif
  ) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
