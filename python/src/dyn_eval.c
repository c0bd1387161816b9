/* dyn_eval.c - the symbolic bytecode evaluator of the capture (issue 6):
 * dyn_convert_frame decodes a frame's code, wraps its arguments (dyn_wrap:
 * guards, graph inputs) and interprets the instructions over a symbolic
 * stack and locals of DynVars, one handler per opcode of CPython 3.11/3.12.
 * Calls of user Python functions are inlined as nested symbolic frames.
 * Anything unsupported is a graph break: the trace restarts from scratch
 * with the root instruction group where it happened remembered, and the
 * restarted trace hands the state before that group to dyn_output_break.
 * A root RETURN hands the return value to dyn_output_return. The generic
 * opcode handlers (stack, containers, jumps) live here; calls, inlining and
 * the conversion driver in dyn_eval_call.c. */
#include "dyn_eval_priv.h"
#include "opcode.h"

#include <stdarg.h>
#include <string.h>

/* ---------------------------------------------------------------- breaks */

/* Weak: dyn_call.c also defines it (the one linked wins); the evaluator
 * fills the location (innermost frame) itself when it is missing. */
__attribute__((weak)) int dyn_break(dyn_tx* tx, const char* fmt, ...) {
  if (tx->brk.active) return DYN_CALL_BREAK;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tx->brk.reason, sizeof tx->brk.reason, fmt, ap);
  va_end(ap);
  tx->brk.active = 1;
  dyn_evtx* E = dyn_ev(tx);
  Py_CLEAR(tx->brk.filename);
  tx->brk.line = -1;
  if (E->cur) {
    tx->brk.filename = E->cur->code->co_filename;
    Py_INCREF(tx->brk.filename);
    if (E->cur->ip >= 0 && E->cur->ip < E->cur->dc->n) tx->brk.line = E->cur->dc->insns[E->cur->ip].line;
  }
  return DYN_CALL_BREAK;
}

#if PTC_DYN_SUPPORTED

/* ---------------------------------------------------------------- stack */

int ev_push(dyn_eframe* f, DynVar* v) {
  if (!v) return -1;
  if (f->sp >= f->cap) {
    Py_DECREF(v);
    PyErr_SetString(PyExc_SystemError, "dyn_eval: symbolic stack overflow");
    return -1;
  }
  f->stack[f->sp++] = v;
  return 0;
}

DynVar* ev_pop(dyn_eframe* f) {
  if (f->sp <= 0) {
    PyErr_SetString(PyExc_SystemError, "dyn_eval: symbolic stack underflow");
    return NULL;
  }
  return f->stack[--f->sp];
}

static int need(dyn_eframe* f, int n) {
  if (f->sp < n) {
    PyErr_SetString(PyExc_SystemError, "dyn_eval: symbolic stack underflow");
    return -1;
  }
  return 0;
}

static void popn(dyn_eframe* f, int n) {
  for (int i = 0; i < n && f->sp > 0; i++) Py_DECREF(f->stack[--f->sp]);
}

/* Maps a dyn_call.c-style result to the evaluator's status. */
static int st_of(int rc) {
  if (rc == DYN_CALL_OK) return S_OK;
  if (rc == DYN_CALL_BREAK) return S_BREAK;
  if (rc == DYN_CALL_INLINE) {
    PyErr_SetString(PyExc_SystemError, "dyn_eval: unexpected DYN_CALL_INLINE");
    return S_ERR;
  }
  if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "dyn_eval: error without exception");
  return S_ERR;
}

/* A constant from co_consts: tuples become DV_TUPLEs of constants (so they
 * behave like the tuples the trace builds), the rest DV_CONST. */
DynVar* ev_const(PyObject* c) {
  if (PyTuple_CheckExact(c)) {
    Py_ssize_t n = PyTuple_GET_SIZE(c);
    PyObject* items = PyList_New(n);
    if (!items) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
      DynVar* it = ev_const(PyTuple_GET_ITEM(c, i));
      if (!it) {
        Py_DECREF(items);
        return NULL;
      }
      PyList_SET_ITEM(items, i, (PyObject*)it);
    }
    DynVar* v = dyn_var_seq(DV_TUPLE, items);
    Py_DECREF(items);
    return v;
  }
  return dyn_var_const(c);
}

static DynVar* const_bool(int b) { return dyn_var_const(b ? Py_True : Py_False); }

/* ---------------------------------------------------------------- sequences */

/* The items of a sequence tracker as a new list of DynVars (tuples, lists,
 * namedtuples, constant tuples/lists, or anything dyn_iter can list). */
static int seq_items(dyn_evtx* E, DynVar* v, PyObject** out) {
  if ((v->kind == DV_TUPLE || v->kind == DV_LIST || v->kind == DV_NAMEDTUPLE) && v->items &&
      PyList_Check(v->items)) {
    *out = PyList_GetSlice(v->items, 0, PyList_GET_SIZE(v->items));
    return *out ? S_OK : S_ERR;
  }
  if (v->kind == DV_CONST && (PyTuple_Check(v->value) || PyList_Check(v->value))) {
    Py_ssize_t n = PySequence_Length(v->value);
    PyObject* l = PyList_New(n);
    for (Py_ssize_t i = 0; l && i < n; i++) {
      DynVar* c = ev_const(PySequence_Fast_GET_ITEM(v->value, i));
      if (!c) Py_CLEAR(l);
      else PyList_SET_ITEM(l, i, (PyObject*)c);
    }
    *out = l;
    return l ? S_OK : S_ERR;
  }
  DynVar* it = NULL;
  if (v->kind == DV_ITER) {
    Py_INCREF(v);
    it = v;
  } else {
    int rc = dyn_iter(&E->tx, v, &it);
    if (rc != DYN_CALL_OK) return st_of(rc);
  }
  if (it->kind != DV_ITER || !it->items || !PyList_Check(it->items)) {
    Py_DECREF(it);
    dyn_break(&E->tx, "cannot unpack a %s", dyn_var_kind_name(v));
    return S_BREAK;
  }
  Py_ssize_t start = it->index;
  *out = PyList_GetSlice(it->items, start, PyList_GET_SIZE(it->items));
  it->index = PyList_GET_SIZE(it->items);
  Py_DECREF(it);
  return *out ? S_OK : S_ERR;
}

static int op_unpack_sequence(dyn_evtx* E, dyn_eframe* f, int n) {
  if (need(f, 1) < 0) return S_ERR;
  PyObject* items = NULL;
  int st = seq_items(E, f->stack[f->sp - 1], &items);
  if (st != S_OK) return st;
  if (PyList_GET_SIZE(items) != n) {
    Py_DECREF(items);
    dyn_break(&E->tx, "unpacking %d values into %d names", (int)PyList_GET_SIZE(items), n);
    return S_BREAK;
  }
  popn(f, 1);
  for (int i = n - 1; i >= 0; i--) {
    PyObject* it = PyList_GET_ITEM(items, i);
    Py_INCREF(it);
    if (ev_push(f, (DynVar*)it) < 0) {
      Py_DECREF(items);
      return S_ERR;
    }
  }
  Py_DECREF(items);
  return S_OK;
}

static int op_unpack_ex(dyn_evtx* E, dyn_eframe* f, int arg) {
  int before = arg & 0xFF, after = arg >> 8;
  if (need(f, 1) < 0) return S_ERR;
  PyObject* items = NULL;
  int st = seq_items(E, f->stack[f->sp - 1], &items);
  if (st != S_OK) return st;
  Py_ssize_t n = PyList_GET_SIZE(items);
  if (n < before + after) {
    Py_DECREF(items);
    dyn_break(&E->tx, "not enough values to unpack");
    return S_BREAK;
  }
  popn(f, 1);
  for (Py_ssize_t i = n - 1; i >= n - after; i--) {
    PyObject* it = PyList_GET_ITEM(items, i);
    Py_INCREF(it);
    if (ev_push(f, (DynVar*)it) < 0) goto fail;
  }
  PyObject* mid = PyList_GetSlice(items, before, n - after);
  DynVar* lv = mid ? dyn_var_seq(DV_LIST, mid) : NULL;
  Py_XDECREF(mid);
  if (ev_push(f, lv) < 0) goto fail;
  for (int i = before - 1; i >= 0; i--) {
    PyObject* it = PyList_GET_ITEM(items, i);
    Py_INCREF(it);
    if (ev_push(f, (DynVar*)it) < 0) goto fail;
  }
  Py_DECREF(items);
  return S_OK;
fail:
  Py_DECREF(items);
  return S_ERR;
}

static int op_build_seq(dyn_eframe* f, int kind, int n) {
  if (need(f, n) < 0) return S_ERR;
  PyObject* items = PyList_New(n);
  if (!items) return S_ERR;
  for (int i = 0; i < n; i++) {
    DynVar* v = f->stack[f->sp - n + i];
    Py_INCREF(v);
    PyList_SET_ITEM(items, i, (PyObject*)v);
  }
  popn(f, n);
  DynVar* v = dyn_var_seq(kind, items);
  Py_DECREF(items);
  return ev_push(f, v) < 0 ? S_ERR : S_OK;
}

/* A constant hashable key of a dict/set being built, or NULL (break). */
static PyObject* const_key(DynVar* k) {
  PyObject* c = dyn_var_as_const(k);
  if (!c) return NULL;
  if (PyObject_Hash(c) == -1) {
    PyErr_Clear();
    Py_DECREF(c);
    return NULL;
  }
  return c;
}

static int op_build_set(dyn_evtx* E, dyn_eframe* f, int n) {
  if (need(f, n) < 0) return S_ERR;
  PyObject* seen = PySet_New(NULL);
  PyObject* items = seen ? PyList_New(0) : NULL;
  if (!items) {
    Py_XDECREF(seen);
    return S_ERR;
  }
  int st = S_OK;
  for (int i = 0; i < n && st == S_OK; i++) {
    DynVar* v = f->stack[f->sp - n + i];
    PyObject* c = const_key(v);
    if (!c) {
      dyn_break(&E->tx, "set of a non-constant %s", dyn_var_kind_name(v));
      st = S_BREAK;
      break;
    }
    int has = PySet_Contains(seen, c);
    if (has < 0 || (!has && (PySet_Add(seen, c) < 0 || PyList_Append(items, (PyObject*)v) < 0)))
      st = S_ERR;
    Py_DECREF(c);
  }
  Py_DECREF(seen);
  if (st != S_OK) {
    Py_DECREF(items);
    return st;
  }
  popn(f, n);
  DynVar* v = dyn_var_seq(DV_SET, items);
  Py_DECREF(items);
  return ev_push(f, v) < 0 ? S_ERR : S_OK;
}

static int dict_put(dyn_evtx* E, PyObject* d, DynVar* k, DynVar* v) {
  PyObject* c = const_key(k);
  if (!c) {
    dyn_break(&E->tx, "dict with a non-constant %s key", dyn_var_kind_name(k));
    return S_BREAK;
  }
  int rc = PyDict_SetItem(d, c, (PyObject*)v);
  Py_DECREF(c);
  return rc < 0 ? S_ERR : S_OK;
}

static int push_new_dict(dyn_eframe* f, PyObject* d) {
  DynVar* v = dyn_var_new(DV_DICT, NULL, d, NULL, NULL);
  Py_DECREF(d);
  if (v) v->created = 1;
  return ev_push(f, v) < 0 ? S_ERR : S_OK;
}

static int op_build_map(dyn_evtx* E, dyn_eframe* f, int n) {
  if (need(f, 2 * n) < 0) return S_ERR;
  PyObject* d = PyDict_New();
  if (!d) return S_ERR;
  for (int i = 0; i < n; i++) {
    int st = dict_put(E, d, f->stack[f->sp - 2 * n + 2 * i], f->stack[f->sp - 2 * n + 2 * i + 1]);
    if (st != S_OK) {
      Py_DECREF(d);
      return st;
    }
  }
  popn(f, 2 * n);
  return push_new_dict(f, d);
}

static int op_build_const_key_map(dyn_evtx* E, dyn_eframe* f, int n) {
  if (need(f, n + 1) < 0) return S_ERR;
  PyObject* keys = NULL;
  int st = seq_items(E, f->stack[f->sp - 1], &keys);
  if (st != S_OK) return st;
  PyObject* d = PyList_GET_SIZE(keys) == n ? PyDict_New() : NULL;
  if (!d) {
    Py_DECREF(keys);
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "BUILD_CONST_KEY_MAP: bad keys");
    return S_ERR;
  }
  for (int i = 0; i < n; i++) {
    st = dict_put(E, d, (DynVar*)PyList_GET_ITEM(keys, i), f->stack[f->sp - 1 - n + i]);
    if (st != S_OK) {
      Py_DECREF(keys);
      Py_DECREF(d);
      return st;
    }
  }
  Py_DECREF(keys);
  popn(f, n + 1);
  return push_new_dict(f, d);
}

/* The (key, value) pairs of a mapping tracker into dict `d` (DICT_UPDATE,
 * DICT_MERGE when `merge`: duplicate keys break like Python raises). */
static int dict_update(dyn_evtx* E, PyObject* d, DynVar* m, int merge) {
  PyObject* src = NULL;
  if (m->kind == DV_DICT && m->items && PyDict_Check(m->items)) {
    src = m->items;
    Py_INCREF(src);
  } else if (m->kind == DV_CONST && PyDict_Check(m->value)) {
    src = PyDict_New();
    Py_ssize_t pos = 0;
    PyObject *k, *val;
    while (src && PyDict_Next(m->value, &pos, &k, &val)) {
      DynVar* c = ev_const(val);
      if (!c || PyDict_SetItem(src, k, (PyObject*)c) < 0) Py_CLEAR(src);
      Py_XDECREF(c);
    }
    if (!src) return S_ERR;
  } else {
    dyn_break(&E->tx, "dict update from a %s", dyn_var_kind_name(m));
    return S_BREAK;
  }
  Py_ssize_t pos = 0;
  PyObject *k, *val;
  while (PyDict_Next(src, &pos, &k, &val)) {
    if (merge && PyDict_Contains(d, k) != 0) {
      Py_DECREF(src);
      dyn_break(&E->tx, "duplicate keyword argument");
      return S_BREAK;
    }
    if (PyDict_SetItem(d, k, val) < 0) {
      Py_DECREF(src);
      return S_ERR;
    }
  }
  Py_DECREF(src);
  return S_OK;
}

/* target trackers of LIST_APPEND/SET_ADD/... must be made in the trace */
static int created_target(dyn_evtx* E, DynVar* t, int kind) {
  if (t->kind != kind || !t->created || !t->items) {
    dyn_break(&E->tx, "in-place build of a %s", dyn_var_kind_name(t));
    return S_BREAK;
  }
  return S_OK;
}

static int op_list_extend(dyn_evtx* E, dyn_eframe* f, int arg) {
  if (need(f, arg + 1) < 0) return S_ERR;
  DynVar* t = f->stack[f->sp - 1 - arg];
  int st = created_target(E, t, DV_LIST);
  if (st != S_OK) return st;
  PyObject* items = NULL;
  st = seq_items(E, f->stack[f->sp - 1], &items);
  if (st != S_OK) return st;
  Py_ssize_t n = PyList_GET_SIZE(t->items);
  int rc = PyList_SetSlice(t->items, n, n, items);
  Py_DECREF(items);
  if (rc < 0) return S_ERR;
  popn(f, 1);
  return S_OK;
}

static int op_set_update(dyn_evtx* E, dyn_eframe* f, int arg) {
  if (need(f, arg + 1) < 0) return S_ERR;
  DynVar* t = f->stack[f->sp - 1 - arg];
  int st = created_target(E, t, DV_SET);
  if (st != S_OK) return st;
  PyObject* items = NULL;
  st = seq_items(E, f->stack[f->sp - 1], &items);
  if (st != S_OK) return st;
  PyObject* seen = PySet_New(NULL);
  for (Py_ssize_t i = 0; seen && i < PyList_GET_SIZE(t->items); i++) {
    PyObject* c = const_key((DynVar*)PyList_GET_ITEM(t->items, i));
    if (!c || PySet_Add(seen, c) < 0) Py_CLEAR(seen);
    Py_XDECREF(c);
  }
  for (Py_ssize_t i = 0; seen && i < PyList_GET_SIZE(items); i++) {
    DynVar* v = (DynVar*)PyList_GET_ITEM(items, i);
    PyObject* c = const_key(v);
    if (!c) {
      Py_DECREF(seen);
      Py_DECREF(items);
      dyn_break(&E->tx, "set of a non-constant %s", dyn_var_kind_name(v));
      return S_BREAK;
    }
    int has = PySet_Contains(seen, c);
    if (has < 0 || (!has && (PySet_Add(seen, c) < 0 || PyList_Append(t->items, (PyObject*)v) < 0)))
      Py_CLEAR(seen);
    Py_DECREF(c);
  }
  Py_DECREF(items);
  if (!seen) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "set update");
    return S_ERR;
  }
  Py_DECREF(seen);
  popn(f, 1);
  return S_OK;
}

/* FORMAT_VALUE on constants of plain types; anything else breaks. */
static int op_format_value(dyn_evtx* E, dyn_eframe* f, int arg) {
  int has_spec = (arg & 4) != 0;
  if (need(f, 1 + has_spec) < 0) return S_ERR;
  DynVar* spec = has_spec ? f->stack[f->sp - 1] : NULL;
  DynVar* v = f->stack[f->sp - 1 - has_spec];
  PyObject* c = v->kind == DV_CONST ? v->value : NULL;
  int plain = c && (c == Py_None || PyLong_CheckExact(c) || PyFloat_CheckExact(c) ||
                    PyUnicode_CheckExact(c) || PyBool_Check(c) || PyComplex_CheckExact(c));
  if (!plain || (spec && !(spec->kind == DV_CONST && PyUnicode_Check(spec->value)))) {
    dyn_break(&E->tx, "formatting a %s", dyn_var_kind_name(v));
    return S_BREAK;
  }
  PyObject* conv;
  switch (arg & 3) {
    case 1: conv = PyObject_Str(c); break;
    case 2: conv = PyObject_Repr(c); break;
    case 3: conv = PyObject_ASCII(c); break;
    default: Py_INCREF(c); conv = c;
  }
  PyObject* r = conv ? PyObject_Format(conv, spec ? spec->value : NULL) : NULL;
  Py_XDECREF(conv);
  if (!r) return S_ERR;
  popn(f, 1 + has_spec);
  DynVar* rv = dyn_var_const(r);
  Py_DECREF(r);
  return ev_push(f, rv) < 0 ? S_ERR : S_OK;
}

static int op_build_string(dyn_evtx* E, dyn_eframe* f, int n) {
  if (need(f, n) < 0) return S_ERR;
  PyObject* parts = PyTuple_New(n);
  if (!parts) return S_ERR;
  for (int i = 0; i < n; i++) {
    DynVar* v = f->stack[f->sp - n + i];
    if (v->kind != DV_CONST || !PyUnicode_Check(v->value)) {
      Py_DECREF(parts);
      dyn_break(&E->tx, "building a string from a %s", dyn_var_kind_name(v));
      return S_BREAK;
    }
    Py_INCREF(v->value);
    PyTuple_SET_ITEM(parts, i, v->value);
  }
  PyObject* empty = PyUnicode_FromString("");
  PyObject* r = empty ? PyUnicode_Join(empty, parts) : NULL;
  Py_XDECREF(empty);
  Py_DECREF(parts);
  if (!r) return S_ERR;
  popn(f, n);
  DynVar* rv = dyn_var_const(r);
  Py_DECREF(r);
  return ev_push(f, rv) < 0 ? S_ERR : S_OK;
}

static int op_build_slice(dyn_eframe* f, int n) {
  if (need(f, n) < 0) return S_ERR;
  PyObject* items = PyList_New(3);
  if (!items) return S_ERR;
  for (int i = 0; i < 3; i++) {
    DynVar* v = i < n ? f->stack[f->sp - n + i] : dyn_var_const(Py_None);
    if (!v) {
      Py_DECREF(items);
      return S_ERR;
    }
    if (i < n) Py_INCREF(v);
    PyList_SET_ITEM(items, i, (PyObject*)v);
  }
  popn(f, n);
  DynVar* v = dyn_var_new(DV_SLICE, NULL, items, NULL, NULL);
  Py_DECREF(items);
  if (v) v->created = 1;
  return ev_push(f, v) < 0 ? S_ERR : S_OK;
}

/* ---------------------------------------------------------------- truth, jumps */

/* 1/0 when v is known (not) None, else break. */
static int is_none(dyn_evtx* E, DynVar* v, int* out) {
  switch (v->kind) {
    case DV_CONST:
      *out = v->value == Py_None;
      return S_OK;
    case DV_TENSOR: case DV_SYMINT: case DV_TUPLE: case DV_LIST: case DV_DICT: case DV_SET:
    case DV_SLICE: case DV_RANGE: case DV_NAMEDTUPLE: case DV_FUNCTION: case DV_METHOD:
    case DV_MODULE: case DV_ITER: case DV_GRAD_CTX: case DV_OBJ_NEW:
      *out = 0;
      return S_OK;
    case DV_OBJECT:
      if (v->value) {
        *out = v->value == Py_None;
        return S_OK;
      }
      /* fall through */
    default:
      dyn_break(&E->tx, "`is None` on a %s", dyn_var_kind_name(v));
      return S_BREAK;
  }
}

/* POP_JUMP_IF_* / JUMP_IF_*_OR_POP. mode: 0 false, 1 true, 2 none, 3 not none. */
static int op_cond_jump(dyn_evtx* E, dyn_eframe* f, const dyn_insn* in, int mode, int keep,
                        int* next) {
  if (need(f, 1) < 0) return S_ERR;
  DynVar* v = f->stack[f->sp - 1];
  int b = 0, st;
  if (mode >= 2) {
    st = is_none(E, v, &b);
    if (mode == 3) b = !b;
  } else {
    st = st_of(dyn_truth(&E->tx, v, &b));
    if (st == S_BREAK && v->kind == DV_TENSOR)
      snprintf(E->tx.brk.reason, sizeof E->tx.brk.reason,
               "data-dependent branch on a tensor's value");
    if (mode == 0) b = !b;
  }
  if (st != S_OK) return st;
  /* b: take the jump */
  if (b) {
    *next = in->target;
    if (!keep) popn(f, 1);
  } else {
    popn(f, 1);
  }
  return S_OK;
}

/* ---------------------------------------------------------------- iteration */

static int op_get_iter(dyn_evtx* E, dyn_eframe* f) {
  if (need(f, 1) < 0) return S_ERR;
  DynVar* v = f->stack[f->sp - 1];
  if (v->kind == DV_ITER) return S_OK;
  DynVar* it = NULL;
  int st = st_of(dyn_iter(&E->tx, v, &it));
  if (st != S_OK) return st;
  popn(f, 1);
  return ev_push(f, it) < 0 ? S_ERR : S_OK;
}

static int op_for_iter(dyn_evtx* E, dyn_eframe* f, const dyn_insn* in, int* next) {
  if (need(f, 1) < 0) return S_ERR;
  DynVar* it = f->stack[f->sp - 1];
  if (it->kind != DV_ITER || !it->items || !PyList_Check(it->items)) {
    dyn_break(&E->tx, "iteration over a %s", dyn_var_kind_name(it));
    return S_BREAK;
  }
  if (it->index < PyList_GET_SIZE(it->items)) {
    PyObject* v = PyList_GET_ITEM(it->items, it->index);
    it->index++;
    Py_INCREF(v);
    return ev_push(f, (DynVar*)v) < 0 ? S_ERR : S_OK;
  }
  popn(f, 1);
  *next = in->target;
#ifdef END_FOR
  if (in->target >= 0 && in->target < f->dc->n && f->dc->insns[in->target].opcode == END_FOR)
    *next = in->target + 1;
#endif
  return S_OK;
}

/* ---------------------------------------------------------------- locals, cells */

static int op_load_fast(dyn_evtx* E, dyn_eframe* f, int i, int clear) {
  if (i < 0 || i >= f->n_locals) {
    PyErr_SetString(PyExc_SystemError, "dyn_eval: bad local index");
    return S_ERR;
  }
  DynVar* v = f->locals[i];
  if (clear) {
    f->locals[i] = NULL;
    if (!v) {
      Py_INCREF(E->null_var);
      v = (DynVar*)E->null_var;
    }
    return ev_push(f, v) < 0 ? S_ERR : S_OK;
  }
  if (!v) {
    dyn_break(&E->tx, "local variable '%s' referenced before assignment",
              PyUnicode_AsUTF8(PyTuple_GET_ITEM(f->code->co_localsplusnames, i)));
    return S_BREAK;
  }
  Py_INCREF(v);
  return ev_push(f, v) < 0 ? S_ERR : S_OK;
}

static int op_store_fast(dyn_eframe* f, int i) {
  DynVar* v = ev_pop(f);
  if (!v) return S_ERR;
  if (i < 0 || i >= f->n_locals) {
    Py_DECREF(v);
    PyErr_SetString(PyExc_SystemError, "dyn_eval: bad local index");
    return S_ERR;
  }
  if (v->kind == DV_NULL) Py_CLEAR(v); /* LOAD_FAST_AND_CLEAR restoring "unbound" */
  Py_XSETREF(f->locals[i], v);
  return S_OK;
}

/* A DV_CELL tracker for a real cell (one per cell object in the trace);
 * `contents` is the source of its contents, `index` the root closure
 * index (or -1). */
DynVar* ev_real_cell(dyn_evtx* E, PyObject* cell, DynSource* contents, Py_ssize_t index) {
  PyObject* key = PyLong_FromVoidPtr(cell);
  if (!key) return NULL;
  PyObject* hit = PyDict_GetItemWithError(E->cells, key);
  if (hit) {
    Py_DECREF(key);
    Py_INCREF(hit);
    return (DynVar*)hit;
  }
  DynVar* v = PyErr_Occurred() ? NULL : dyn_var_new(DV_CELL, cell, NULL, (PyObject*)contents, NULL);
  if (v) {
    v->index = index;
    if (PyDict_SetItem(E->cells, key, (PyObject*)v) < 0) Py_CLEAR(v);
  }
  Py_DECREF(key);
  return v;
}

static DynVar* cell_at(dyn_evtx* E, dyn_eframe* f, int i) {
  DynVar* c = i >= 0 && i < f->n_locals ? f->locals[i] : NULL;
  if (!c || c->kind != DV_CELL) {
    dyn_break(&E->tx, "closure variable without a cell");
    return NULL;
  }
  return c;
}

static int op_make_cell(dyn_eframe* f, int i) {
  if (i < 0 || i >= f->n_locals) {
    PyErr_SetString(PyExc_SystemError, "dyn_eval: bad cell index");
    return S_ERR;
  }
  PyObject* items = PyList_New(0);
  if (!items) return S_ERR;
  if (f->locals[i] && PyList_Append(items, (PyObject*)f->locals[i]) < 0) {
    Py_DECREF(items);
    return S_ERR;
  }
  DynVar* c = dyn_var_new(DV_CELL, NULL, items, NULL, NULL);
  Py_DECREF(items);
  if (!c) return S_ERR;
  c->created = 1;
  c->index = -1;
  Py_XSETREF(f->locals[i], c);
  return S_OK;
}

/* The contents of cell tracker c: *out borrowed. S_OK / S_BREAK / S_ERR. */
int ev_cell_contents(dyn_evtx* E, DynVar* c, DynVar** out) {
  if (!c->items) { /* a real cell read for the first time */
    PyObject* real = c->value ? PyCell_GET(c->value) : NULL;
    if (!real || !c->extra) {
      dyn_break(&E->tx, "free variable referenced before assignment");
      return S_BREAK;
    }
    DynVar* v = dyn_wrap(&E->tx, real, (DynSource*)c->extra);
    if (!v) return S_ERR;
    c->items = PyList_New(1);
    if (!c->items) {
      Py_DECREF(v);
      return S_ERR;
    }
    PyList_SET_ITEM(c->items, 0, (PyObject*)v);
  }
  if (PyList_GET_SIZE(c->items) == 0) {
    dyn_break(&E->tx, "free variable referenced before assignment");
    return S_BREAK;
  }
  *out = (DynVar*)PyList_GET_ITEM(c->items, 0);
  return S_OK;
}

static int op_load_deref(dyn_evtx* E, dyn_eframe* f, int i) {
  DynVar* c = cell_at(E, f, i);
  if (!c) return S_BREAK;
  DynVar* v = NULL;
  int st = ev_cell_contents(E, c, &v);
  if (st != S_OK) return st;
  Py_INCREF(v);
  return ev_push(f, v) < 0 ? S_ERR : S_OK;
}

static int op_store_deref(dyn_evtx* E, dyn_eframe* f, int i) {
  DynVar* c = cell_at(E, f, i);
  if (!c) return S_BREAK;
  DynVar* v = ev_pop(f);
  if (!v) return S_ERR;
  PyObject* items = PyList_New(1);
  if (!items) {
    Py_DECREF(v);
    return S_ERR;
  }
  PyList_SET_ITEM(items, 0, (PyObject*)v);
  if (!c->items) {
    c->items = items;
  } else {
    int rc = PyList_SetSlice(c->items, 0, PyList_GET_SIZE(c->items), items);
    Py_DECREF(items);
    if (rc < 0) return S_ERR;
  }
  if (!c->created && !c->mutated) {
    c->mutated = 1;
    PyObject* fx = Py_BuildValue("(sO)", "cell", (PyObject*)c);
    int rc = fx ? PyList_Append(E->tx.side_effects, fx) : -1;
    Py_XDECREF(fx);
    if (rc < 0) return S_ERR;
  }
  return S_OK;
}

static int op_copy_free_vars(dyn_evtx* E, dyn_eframe* f, int n) {
  int base = f->n_locals - n;
  if (base < 0) {
    PyErr_SetString(PyExc_SystemError, "COPY_FREE_VARS: bad count");
    return S_ERR;
  }
  for (int j = 0; j < n; j++) {
    DynVar* c = NULL;
    if (f->closure && PyTuple_Check(f->closure) && j < PyTuple_GET_SIZE(f->closure)) {
      c = (DynVar*)PyTuple_GET_ITEM(f->closure, j);
      if (!PyObject_TypeCheck(c, &DynVar_Type) || c->kind != DV_CELL) c = NULL;
      else Py_INCREF(c);
    }
    if (!c) {
      dyn_break(&E->tx, "closure of an unknown function");
      return S_BREAK;
    }
    Py_XSETREF(f->locals[base + j], c);
  }
  return S_OK;
}

/* ---------------------------------------------------------------- globals */

static int op_load_global(dyn_evtx* E, dyn_eframe* f, const dyn_insn* in) {
  PyObject* name = in->argval ? in->argval
                              : PyTuple_GET_ITEM(f->code->co_names, in->arg >> 1);
  int is_root_globals = f->globals == E->tx.view->globals;
  if ((in->arg & 1) && ev_push(f, (Py_INCREF(E->null_var), (DynVar*)E->null_var)) < 0)
    return S_ERR;
  if (is_root_globals) {
    PyObject* w = PyDict_GetItemWithError(E->globals_w, name);
    if (w) {
      Py_INCREF(w);
      return ev_push(f, (DynVar*)w) < 0 ? S_ERR : S_OK;
    }
    if (PyErr_Occurred()) return S_ERR;
  }
  PyObject* real = PyDict_GetItemWithError(f->globals, name);
  int in_globals = real != NULL;
  if (!real && !PyErr_Occurred() && f->builtins && PyDict_Check(f->builtins))
    real = PyDict_GetItemWithError(f->builtins, name);
  if (!real) {
    if (PyErr_Occurred()) return S_ERR;
    dyn_break(&E->tx, "name '%s' is not defined", PyUnicode_AsUTF8(name));
    return S_BREAK;
  }
  DynSource* src;
  if (is_root_globals) {
    src = dyn_source_global(name);
  } else {
    DynSource* base = dyn_source_const(in_globals ? f->globals : f->builtins);
    src = base ? dyn_source_item(base, name) : NULL;
    Py_XDECREF(base);
  }
  if (!src) return S_ERR;
  DynVar* v = dyn_wrap(&E->tx, real, src);
  Py_DECREF(src);
  return ev_push(f, v) < 0 ? S_ERR : S_OK;
}

static int op_store_global(dyn_evtx* E, dyn_eframe* f, const dyn_insn* in) {
  PyObject* name = in->argval ? in->argval : PyTuple_GET_ITEM(f->code->co_names, in->arg);
  if (f->globals != E->tx.view->globals) {
    dyn_break(&E->tx, "write to global '%s' of another module", PyUnicode_AsUTF8(name));
    return S_BREAK;
  }
  DynVar* v = ev_pop(f);
  if (!v) return S_ERR;
  PyObject* fx = Py_BuildValue("(sOOO)", "global", f->globals, name, (PyObject*)v);
  int rc = fx ? PyList_Append(E->tx.side_effects, fx) : -1;
  Py_XDECREF(fx);
  if (rc == 0) rc = PyDict_SetItem(E->globals_w, name, (PyObject*)v);
  Py_DECREF(v);
  return rc < 0 ? S_ERR : S_OK;
}

/* ---------------------------------------------------------------- attributes */

/* getattr through dyn_call.c; a property getter comes back as a method to
 * call (inlined). */
static int get_attr(dyn_evtx* E, dyn_eframe* f, DynVar* obj, PyObject* name, DynVar** out) {
  DynVar* r = NULL;
  int rc = dyn_getattr(&E->tx, obj, name, &r);
  if (rc == DYN_CALL_INLINE) {
    DynVar* prop = r;
    rc = ev_call(E, f, prop, NULL, 0, NULL, out);
    Py_XDECREF(prop);
    return rc;
  }
  int st = st_of(rc);
  if (st == S_OK) *out = r;
  return st;
}

static int op_load_attr(dyn_evtx* E, dyn_eframe* f, PyObject* name, int method) {
  if (need(f, 1) < 0) return S_ERR;
  DynVar* obj = f->stack[f->sp - 1];
  DynVar* r = NULL;
  int st = ev_is_super(E, obj) ? ev_super_attr(E, obj, name, &r) : get_attr(E, f, obj, name, &r);
  if (st != S_OK) return st;
  popn(f, 1);
  if (!method) return ev_push(f, r) < 0 ? S_ERR : S_OK;
  if (r->kind == DV_METHOD && r->value && r->extra && PyObject_TypeCheck(r->value, &DynVar_Type) &&
      PyObject_TypeCheck(r->extra, &DynVar_Type)) {
    /* [function, self] like CPython's method call convention */
    DynVar* fn = (DynVar*)r->value;
    DynVar* self = (DynVar*)r->extra;
    Py_INCREF(fn);
    Py_INCREF(self);
    Py_DECREF(r);
    if (ev_push(f, fn) < 0) {
      Py_DECREF(self);
      return S_ERR;
    }
    return ev_push(f, self) < 0 ? S_ERR : S_OK;
  }
  Py_INCREF(E->null_var);
  if (ev_push(f, (DynVar*)E->null_var) < 0) {
    Py_DECREF(r);
    return S_ERR;
  }
  return ev_push(f, r) < 0 ? S_ERR : S_OK;
}

static PyObject* name_of(dyn_eframe* f, const dyn_insn* in, int idx) {
  if (in->argval && PyUnicode_Check(in->argval)) return in->argval;
  return PyTuple_GET_ITEM(f->code->co_names, idx);
}

/* ---------------------------------------------------------------- operators */

static int op_binary(dyn_evtx* E, dyn_eframe* f, int op) {
  if (need(f, 2) < 0) return S_ERR;
  DynVar* r = NULL;
  int st = st_of(dyn_binop(&E->tx, op, f->stack[f->sp - 2], f->stack[f->sp - 1], &r));
  if (st != S_OK) return st;
  popn(f, 2);
  return ev_push(f, r) < 0 ? S_ERR : S_OK;
}

static int op_unary(dyn_evtx* E, dyn_eframe* f, int op) {
  if (need(f, 1) < 0) return S_ERR;
  DynVar* r = NULL;
  int st;
  if (op == DYN_OP_NOT) {
    int b = 0;
    st = st_of(dyn_truth(&E->tx, f->stack[f->sp - 1], &b));
    if (st == S_BREAK && f->stack[f->sp - 1]->kind == DV_TENSOR)
      snprintf(E->tx.brk.reason, sizeof E->tx.brk.reason, "`not` on a tensor's value");
    if (st == S_OK && !(r = const_bool(!b))) st = S_ERR;
  } else {
    st = st_of(dyn_unop(&E->tx, op, f->stack[f->sp - 1], &r));
  }
  if (st != S_OK) return st;
  popn(f, 1);
  return ev_push(f, r) < 0 ? S_ERR : S_OK;
}

static int op_compare(dyn_evtx* E, dyn_eframe* f, int op) {
  if (need(f, 2) < 0) return S_ERR;
  DynVar* r = NULL;
  int st = st_of(dyn_compare(&E->tx, op, f->stack[f->sp - 2], f->stack[f->sp - 1], &r));
  if (st != S_OK) return st;
  popn(f, 2);
  return ev_push(f, r) < 0 ? S_ERR : S_OK;
}

static int op_contains(dyn_evtx* E, dyn_eframe* f, int invert) {
  if (need(f, 2) < 0) return S_ERR;
  int b = 0;
  int st = st_of(dyn_contains(&E->tx, f->stack[f->sp - 1], f->stack[f->sp - 2], &b));
  if (st != S_OK) return st;
  popn(f, 2);
  return ev_push(f, const_bool(invert ? !b : b)) < 0 ? S_ERR : S_OK;
}

static int op_subscr(dyn_evtx* E, dyn_eframe* f) {
  if (need(f, 2) < 0) return S_ERR;
  DynVar* r = NULL;
  int st = st_of(dyn_subscr(&E->tx, f->stack[f->sp - 2], f->stack[f->sp - 1], &r));
  if (st != S_OK) return st;
  popn(f, 2);
  return ev_push(f, r) < 0 ? S_ERR : S_OK;
}

static int op_store_subscr(dyn_evtx* E, dyn_eframe* f) {
  if (need(f, 3) < 0) return S_ERR;
  /* TOS = key, TOS1 = container, TOS2 = value */
  int st = st_of(dyn_store_subscr(&E->tx, f->stack[f->sp - 2], f->stack[f->sp - 1],
                                  f->stack[f->sp - 3]));
  if (st != S_OK) return st;
  popn(f, 3);
  return S_OK;
}

#ifdef BINARY_SLICE
/* 3.12 BINARY_SLICE / STORE_SLICE: container[start:stop] */
static int op_slice(dyn_evtx* E, dyn_eframe* f, int store) {
  if (need(f, 3 + store) < 0) return S_ERR;
  if (op_build_slice(f, 2) != S_OK) return S_ERR;
  /* stack: [value?, container, slice] */
  if (store) return op_store_subscr(E, f);
  return op_subscr(E, f);
}
#endif

/* ---------------------------------------------------------------- with blocks */

static int set_og_grad(dyn_evtx* E, int mode) {
  E->tx.grad_enabled = mode;
  return PyObject_SetAttrString(E->tx.og, "grad_enabled", mode ? Py_True : Py_False);
}

/* Whether a graph input or parameter traced so far requires grad: the
 * graph cannot express grad-mode changes for them (an FX graph run with
 * autograd would record what the with-block excluded), so a with-block that
 * changes the mode breaks then. 1 / 0 / -1. */
static int grad_sensitive(dyn_evtx* E) {
  PyObject* ins = PyObject_GetAttrString(E->tx.og, "inputs");
  PyObject* params = ins ? PyObject_GetAttrString(E->tx.og, "_params") : NULL;
  int found = 0;
  for (Py_ssize_t i = 0; !found && ins && PyList_Check(ins) && i < PyList_GET_SIZE(ins); i++) {
    PyObject* rg = PyObject_GetAttrString(PyList_GET_ITEM(ins, i), "requires_grad");
    found = rg ? PyObject_IsTrue(rg) : -1;
    Py_XDECREF(rg);
  }
  if (!found && params && PyDict_Check(params)) {
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (!found && PyDict_Next(params, &pos, &k, &v)) {
      if (!PyTuple_Check(v) || PyTuple_GET_SIZE(v) < 1) continue;
      PyObject* rg = PyObject_GetAttrString(PyTuple_GET_ITEM(v, 0), "requires_grad");
      found = rg ? PyObject_IsTrue(rg) : -1;
      Py_XDECREF(rg);
    }
  }
  if (!ins || !params) found = -1;
  Py_XDECREF(ins);
  Py_XDECREF(params);
  return found;
}

static int grad_change_check(dyn_evtx* E) {
  int s = grad_sensitive(E);
  if (s < 0) return S_ERR;
  if (s) {
    dyn_break(&E->tx, "grad-mode change (torch.no_grad/enable_grad) around tensors that "
                      "require grad");
    return S_BREAK;
  }
  return S_OK;
}

static int op_before_with(dyn_evtx* E, dyn_eframe* f) {
  if (need(f, 1) < 0) return S_ERR;
  DynVar* m = f->stack[f->sp - 1];
  if (m->kind != DV_GRAD_CTX || m->extra) {
    dyn_break(&E->tx, "`with` on a %s (only torch.no_grad/enable_grad are traced)",
              dyn_var_kind_name(m));
    return S_BREAK;
  }
  PyObject* tag = PyUnicode_FromString("__exit__");
  DynVar* ex = tag ? dyn_var_new(DV_GRAD_CTX, NULL, NULL, tag, NULL) : NULL;
  Py_XDECREF(tag);
  if (!ex) return S_ERR;
  ex->index = E->tx.grad_enabled; /* the mode to restore */
  int mode = (int)m->index;
  if (mode != E->tx.grad_enabled) {
    int st = grad_change_check(E);
    if (st != S_OK) return st;
  }
  popn(f, 1);
  if (ev_push(f, ex) < 0 || ev_push(f, dyn_var_const(Py_None)) < 0) return S_ERR;
  return set_og_grad(E, mode) < 0 ? S_ERR : S_OK;
}

/* Calling the __exit__ pushed by BEFORE_WITH (the normal exit path). */
int ev_with_exit(dyn_evtx* E, DynVar* ex, DynVar** out) {
  if ((int)ex->index != E->tx.grad_enabled) {
    int st = grad_change_check(E);
    if (st != S_OK) return st;
  }
  if (set_og_grad(E, (int)ex->index) < 0) return S_ERR;
  *out = dyn_var_const(Py_None);
  return *out ? S_OK : S_ERR;
}

/* ---------------------------------------------------------------- MAKE_FUNCTION */

static int is_comprehension(PyCodeObject* co) {
  const char* n = PyUnicode_AsUTF8(co->co_name);
  if (!n) {
    PyErr_Clear();
    return 0;
  }
  return !strcmp(n, "<listcomp>") || !strcmp(n, "<dictcomp>") || !strcmp(n, "<setcomp>") ||
         !strcmp(n, "<genexpr>");
}

static int op_make_function(dyn_evtx* E, dyn_eframe* f, int flags) {
  int n = 1 + ((flags & 1) != 0) + ((flags & 2) != 0) + ((flags & 4) != 0) + ((flags & 8) != 0);
  if (need(f, n) < 0) return S_ERR;
  DynVar* codev = f->stack[f->sp - 1];
  if (codev->kind != DV_CONST || !PyCode_Check(codev->value)) {
    dyn_break(&E->tx, "MAKE_FUNCTION of a non-constant code");
    return S_BREAK;
  }
  int k = f->sp - 2;
  PyObject* closure = Py_None;
  PyObject* kwdefaults = Py_None;
  PyObject* defaults = Py_None;
  PyObject* ctuple = NULL;
  if (flags & 8) {
    DynVar* c = f->stack[k--];
    if (c->kind != DV_TUPLE || !c->items) {
      dyn_break(&E->tx, "closure is not a tuple");
      return S_BREAK;
    }
    ctuple = PyList_AsTuple(c->items);
    if (!ctuple) return S_ERR;
    closure = ctuple;
  }
  if (flags & 4) k--; /* annotations: ignored */
  if (flags & 2) kwdefaults = (PyObject*)f->stack[k--];
  if (flags & 1) defaults = (PyObject*)f->stack[k--];
  PyObject* extra = PyTuple_Pack(5, codev->value, f->globals, defaults, kwdefaults, closure);
  Py_XDECREF(ctuple);
  if (!extra) return S_ERR;
  /* a comprehension (3.11) without closure and defaults: a real function
   * object, so that a graph break inside it (at the root CALL) can pass it
   * to the plain-Python group; it never escapes the expression. */
  PyObject* real = NULL;
  if (!(flags & 0xB) && is_comprehension((PyCodeObject*)codev->value)) {
    real = PyFunction_NewWithQualName(codev->value, f->globals,
                                      ((PyCodeObject*)codev->value)->co_qualname);
    if (!real) {
      Py_DECREF(extra);
      return S_ERR;
    }
  }
  DynVar* fn = dyn_var_new(DV_FUNCTION, real, NULL, real ? NULL : extra, NULL);
  Py_DECREF(extra);
  Py_XDECREF(real);
  if (!fn) return S_ERR;
  fn->created = 1;
  popn(f, n);
  return ev_push(f, fn) < 0 ? S_ERR : S_OK;
}

/* ---------------------------------------------------------------- imports */

/* IMPORT_NAME of a module that is already imported (no import side effect
 * to replay): the module object, as `import` would return it. */
static int op_import_name(dyn_evtx* E, dyn_eframe* f, PyObject* name) {
  if (need(f, 2) < 0) return S_ERR;
  DynVar* level = f->stack[f->sp - 2];
  DynVar* fromlist = f->stack[f->sp - 1];
  PyObject* fl = dyn_var_as_const(fromlist);
  int absolute = level->kind == DV_CONST && PyLong_Check(level->value) &&
                 PyLong_AsLong(level->value) == 0;
  int has_from = fl && fl != Py_None && PyObject_IsTrue(fl) == 1;
  Py_XDECREF(fl);
  PyErr_Clear();
  PyObject* modules = PyImport_GetModuleDict();
  PyObject* full = absolute ? PyDict_GetItemWithError(modules, name) : NULL;
  if (!full || full == Py_None) {
    if (PyErr_Occurred()) return S_ERR;
    dyn_break(&E->tx, "import of %s (not yet imported, or relative)", PyUnicode_AsUTF8(name));
    return S_BREAK;
  }
  PyObject* mod = full;
  PyObject* key = name;
  if (!has_from) { /* `import a.b` binds the top package a */
    Py_ssize_t dot = PyUnicode_FindChar(name, '.', 0, PyUnicode_GET_LENGTH(name), 1);
    if (dot == -2) return S_ERR;
    if (dot >= 0) {
      PyObject* top = PyUnicode_Substring(name, 0, dot);
      mod = top ? PyDict_GetItemWithError(modules, top) : NULL;
      if (!mod) {
        Py_XDECREF(top);
        if (PyErr_Occurred()) return S_ERR;
        dyn_break(&E->tx, "import of %s", PyUnicode_AsUTF8(name));
        return S_BREAK;
      }
      key = top; /* owned below */
    }
  }
  DynVar* v = NULL;
  if (PyModule_Check(mod)) {
    /* guarded: sys.modules[key] is still this module */
    DynSource* base = dyn_source_const(modules);
    DynSource* src = base ? dyn_source_item(base, key) : NULL;
    v = src ? dyn_wrap(&E->tx, mod, src) : NULL;
    Py_XDECREF(base);
    Py_XDECREF(src);
  }
  if (key != name) Py_DECREF(key);
  if (!v) {
    if (PyErr_Occurred()) return S_ERR;
    dyn_break(&E->tx, "import of %s (not a module object)", PyUnicode_AsUTF8(name));
    return S_BREAK;
  }
  popn(f, 2);
  return ev_push(f, v) < 0 ? S_ERR : S_OK;
}

static int op_import_from(dyn_evtx* E, dyn_eframe* f, PyObject* name) {
  if (need(f, 1) < 0) return S_ERR;
  DynVar* r = NULL;
  int st = get_attr(E, f, f->stack[f->sp - 1], name, &r);
  if (st != S_OK) return st;
  return ev_push(f, r) < 0 ? S_ERR : S_OK;
}

/* ---------------------------------------------------------------- dispatch */

/* Executes one instruction of frame `f`. *next is preset to ip + 1. */
int ev_step(dyn_evtx* E, dyn_eframe* f, const dyn_insn* in, int* next) {
  int op = in->opcode, arg = in->arg;
  switch (op) {
    case NOP:
    case RESUME:
    case CACHE:
    case EXTENDED_ARG:
#ifdef PRECALL
    case PRECALL:
#endif
      return S_OK;
    case POP_TOP:
      if (need(f, 1) < 0) return S_ERR;
      popn(f, 1);
      return S_OK;
#ifdef END_FOR
    case END_FOR:
      if (need(f, 2) < 0) return S_ERR;
      popn(f, 2);
      return S_OK;
#endif
    case PUSH_NULL:
      Py_INCREF(E->null_var);
      return ev_push(f, (DynVar*)E->null_var) < 0 ? S_ERR : S_OK;
    case COPY: {
      if (need(f, arg) < 0 || arg < 1) return S_ERR;
      DynVar* v = f->stack[f->sp - arg];
      Py_INCREF(v);
      return ev_push(f, v) < 0 ? S_ERR : S_OK;
    }
    case SWAP: {
      if (need(f, arg) < 0 || arg < 1) return S_ERR;
      DynVar* t = f->stack[f->sp - 1];
      f->stack[f->sp - 1] = f->stack[f->sp - arg];
      f->stack[f->sp - arg] = t;
      return S_OK;
    }
    case LOAD_CONST: {
      PyObject* c = in->argval ? in->argval : PyTuple_GET_ITEM(f->code->co_consts, arg);
      return ev_push(f, ev_const(c)) < 0 ? S_ERR : S_OK;
    }
    case LOAD_FAST:
      return op_load_fast(E, f, arg, 0);
#ifdef LOAD_FAST_CHECK
    case LOAD_FAST_CHECK:
      return op_load_fast(E, f, arg, 0);
#endif
#ifdef LOAD_FAST_AND_CLEAR
    case LOAD_FAST_AND_CLEAR:
      return op_load_fast(E, f, arg, 1);
#endif
    case STORE_FAST:
      return op_store_fast(f, arg);
    case DELETE_FAST:
      if (arg < 0 || arg >= f->n_locals) return S_ERR;
      if (!f->locals[arg]) {
        dyn_break(&E->tx, "del of an unbound local");
        return S_BREAK;
      }
      Py_CLEAR(f->locals[arg]);
      return S_OK;
    case MAKE_CELL:
      return op_make_cell(f, arg);
    case LOAD_CLOSURE: {
      DynVar* c = cell_at(E, f, arg);
      if (!c) return S_BREAK;
      Py_INCREF(c);
      return ev_push(f, c) < 0 ? S_ERR : S_OK;
    }
    case LOAD_DEREF:
      return op_load_deref(E, f, arg);
    case STORE_DEREF:
      return op_store_deref(E, f, arg);
    case COPY_FREE_VARS:
      return op_copy_free_vars(E, f, arg);
    case LOAD_GLOBAL:
      return op_load_global(E, f, in);
    case STORE_GLOBAL:
      return op_store_global(E, f, in);
    case LOAD_ATTR:
#if PY_VERSION_HEX >= 0x030C0000
      return op_load_attr(E, f, name_of(f, in, arg >> 1), arg & 1);
#else
      return op_load_attr(E, f, name_of(f, in, arg), 0);
#endif
#ifdef LOAD_METHOD
    case LOAD_METHOD:
      return op_load_attr(E, f, name_of(f, in, arg), 1);
#endif
    case STORE_ATTR: {
      if (need(f, 2) < 0) return S_ERR;
      int st = st_of(dyn_setattr(&E->tx, f->stack[f->sp - 1], name_of(f, in, arg),
                                 f->stack[f->sp - 2]));
      if (st == S_OK) popn(f, 2);
      return st;
    }
    case BINARY_OP:
      return op_binary(E, f, arg);
    case UNARY_NEGATIVE:
      return op_unary(E, f, DYN_OP_NEG);
#ifdef UNARY_POSITIVE
    case UNARY_POSITIVE:
      return op_unary(E, f, DYN_OP_POS);
#endif
    case UNARY_NOT:
      return op_unary(E, f, DYN_OP_NOT);
    case UNARY_INVERT:
      return op_unary(E, f, DYN_OP_INVERT);
    case COMPARE_OP:
#if PY_VERSION_HEX >= 0x030C0000
      return op_compare(E, f, arg >> 4);
#else
      return op_compare(E, f, arg);
#endif
    case IS_OP:
      return op_compare(E, f, arg ? DYN_OP_IS_NOT : DYN_OP_IS);
    case CONTAINS_OP:
      return op_contains(E, f, arg);
    case BINARY_SUBSCR:
      return op_subscr(E, f);
    case STORE_SUBSCR:
      return op_store_subscr(E, f);
#ifdef BINARY_SLICE
    case BINARY_SLICE:
      return op_slice(E, f, 0);
#endif
#ifdef STORE_SLICE
    case STORE_SLICE:
      return op_slice(E, f, 1);
#endif
    case BUILD_TUPLE:
      return op_build_seq(f, DV_TUPLE, arg);
    case BUILD_LIST:
      return op_build_seq(f, DV_LIST, arg);
    case BUILD_SET:
      return op_build_set(E, f, arg);
    case BUILD_MAP:
      return op_build_map(E, f, arg);
    case BUILD_CONST_KEY_MAP:
      return op_build_const_key_map(E, f, arg);
    case BUILD_SLICE:
      return op_build_slice(f, arg);
    case BUILD_STRING:
      return op_build_string(E, f, arg);
    case FORMAT_VALUE:
      return op_format_value(E, f, arg);
    case LIST_APPEND: {
      if (need(f, arg + 1) < 0) return S_ERR;
      DynVar* t = f->stack[f->sp - 1 - arg];
      int st = created_target(E, t, DV_LIST);
      if (st != S_OK) return st;
      if (PyList_Append(t->items, (PyObject*)f->stack[f->sp - 1]) < 0) return S_ERR;
      popn(f, 1);
      return S_OK;
    }
    case SET_ADD: {
      if (need(f, arg + 1) < 0) return S_ERR;
      DynVar* v = f->stack[f->sp - 1];
      Py_INCREF(v);
      DynVar* one[1] = {v};
      PyObject* l = PyList_New(1);
      if (!l) {
        Py_DECREF(v);
        return S_ERR;
      }
      PyList_SET_ITEM(l, 0, (PyObject*)one[0]);
      DynVar* tmp = dyn_var_seq(DV_LIST, l);
      Py_DECREF(l);
      if (!tmp) return S_ERR;
      Py_SETREF(f->stack[f->sp - 1], tmp);
      return op_set_update(E, f, arg);
    }
    case MAP_ADD: {
      if (need(f, arg + 2) < 0) return S_ERR;
      DynVar* t = f->stack[f->sp - 2 - arg];
      int st = created_target(E, t, DV_DICT);
      if (st == S_OK) st = dict_put(E, t->items, f->stack[f->sp - 2], f->stack[f->sp - 1]);
      if (st == S_OK) popn(f, 2);
      return st;
    }
    case LIST_EXTEND:
      return op_list_extend(E, f, arg);
    case SET_UPDATE:
      return op_set_update(E, f, arg);
    case DICT_UPDATE:
    case DICT_MERGE: {
      if (need(f, arg + 1) < 0) return S_ERR;
      DynVar* t = f->stack[f->sp - 1 - arg];
      int st = created_target(E, t, DV_DICT);
      if (st == S_OK) st = dict_update(E, t->items, f->stack[f->sp - 1], op == DICT_MERGE);
      if (st == S_OK) popn(f, 1);
      return st;
    }
#ifdef LIST_TO_TUPLE
    case LIST_TO_TUPLE:
#endif
#ifdef CALL_INTRINSIC_1
    case CALL_INTRINSIC_1:
      if (op == CALL_INTRINSIC_1 && arg == 5) return op_unary(E, f, DYN_OP_POS);
      if (op == CALL_INTRINSIC_1 && arg != 6) {
        dyn_break(&E->tx, "unsupported intrinsic %d", arg);
        return S_BREAK;
      }
#endif
      {
        if (need(f, 1) < 0) return S_ERR;
        DynVar* l = f->stack[f->sp - 1];
        if (l->kind != DV_LIST || !l->items) {
          dyn_break(&E->tx, "tuple() of a %s", dyn_var_kind_name(l));
          return S_BREAK;
        }
        PyObject* items = PyList_GetSlice(l->items, 0, PyList_GET_SIZE(l->items));
        DynVar* t = items ? dyn_var_seq(DV_TUPLE, items) : NULL;
        Py_XDECREF(items);
        if (!t) return S_ERR;
        Py_SETREF(f->stack[f->sp - 1], t);
        return S_OK;
      }
    case UNPACK_SEQUENCE:
      return op_unpack_sequence(E, f, arg);
    case UNPACK_EX:
      return op_unpack_ex(E, f, arg);
    case GET_ITER:
      return op_get_iter(E, f);
    case FOR_ITER:
      return op_for_iter(E, f, in, next);
    case JUMP_FORWARD:
    case JUMP_BACKWARD:
    case JUMP_BACKWARD_NO_INTERRUPT:
      *next = in->target;
      return S_OK;
#ifdef POP_JUMP_FORWARD_IF_FALSE
    case POP_JUMP_FORWARD_IF_FALSE:
    case POP_JUMP_BACKWARD_IF_FALSE:
      return op_cond_jump(E, f, in, 0, 0, next);
    case POP_JUMP_FORWARD_IF_TRUE:
    case POP_JUMP_BACKWARD_IF_TRUE:
      return op_cond_jump(E, f, in, 1, 0, next);
    case POP_JUMP_FORWARD_IF_NONE:
    case POP_JUMP_BACKWARD_IF_NONE:
      return op_cond_jump(E, f, in, 2, 0, next);
    case POP_JUMP_FORWARD_IF_NOT_NONE:
    case POP_JUMP_BACKWARD_IF_NOT_NONE:
      return op_cond_jump(E, f, in, 3, 0, next);
#endif
#ifdef POP_JUMP_IF_FALSE
    case POP_JUMP_IF_FALSE:
      return op_cond_jump(E, f, in, 0, 0, next);
    case POP_JUMP_IF_TRUE:
      return op_cond_jump(E, f, in, 1, 0, next);
    case POP_JUMP_IF_NONE:
      return op_cond_jump(E, f, in, 2, 0, next);
    case POP_JUMP_IF_NOT_NONE:
      return op_cond_jump(E, f, in, 3, 0, next);
#endif
#ifdef JUMP_IF_FALSE_OR_POP
    case JUMP_IF_FALSE_OR_POP:
      return op_cond_jump(E, f, in, 0, 1, next);
    case JUMP_IF_TRUE_OR_POP:
      return op_cond_jump(E, f, in, 1, 1, next);
#endif
    case MAKE_FUNCTION:
      return op_make_function(E, f, arg);
    case BEFORE_WITH:
      return op_before_with(E, f);
    case KW_NAMES: {
      PyObject* names = in->argval && PyTuple_Check(in->argval)
                            ? in->argval : PyTuple_GET_ITEM(f->code->co_consts, arg);
      f->kwnames = names;
      return S_OK;
    }
    case CALL:
      return ev_op_call(E, f, arg);
    case CALL_FUNCTION_EX:
      return ev_op_call_ex(E, f, arg);
    case RETURN_GENERATOR:
      if (!f->gen_items) break;
      /* the first resumption pushes the sent value (None) */
      return ev_push(f, dyn_var_const(Py_None)) < 0 ? S_ERR : S_OK;
    case YIELD_VALUE: {
      if (!f->gen_items) break;
      DynVar* v = ev_pop(f);
      if (!v) return S_ERR;
      int rc = PyList_Append(f->gen_items, (PyObject*)v);
      Py_DECREF(v);
      if (rc < 0) return S_ERR;
      return ev_push(f, dyn_var_const(Py_None)) < 0 ? S_ERR : S_OK;
    }
#ifdef LOAD_SUPER_ATTR
    case LOAD_SUPER_ATTR: {
      /* [super, class, self] -> attribute (method bit: arg & 1) */
      if (need(f, 3) < 0) return S_ERR;
      DynVar* sup = NULL;
      int st = ev_make_super(E, f->stack[f->sp - 3], f->stack[f->sp - 2], f->stack[f->sp - 1], &sup);
      if (st != S_OK) return st;
      popn(f, 3);
      if (ev_push(f, sup) < 0) return S_ERR;
      return op_load_attr(E, f, name_of(f, in, arg >> 2), arg & 1);
    }
#endif
    case IMPORT_NAME:
      return op_import_name(E, f, name_of(f, in, arg));
    case IMPORT_FROM:
      return op_import_from(E, f, name_of(f, in, arg));
    case LOAD_ASSERTION_ERROR:
      return ev_push(f, dyn_var_const(PyExc_AssertionError)) < 0 ? S_ERR : S_OK;
    case RAISE_VARARGS:
      dyn_break(&E->tx, "raise statement");
      return S_BREAK;
    case RETURN_VALUE: {
      DynVar* v = ev_pop(f);
      if (!v) return S_ERR;
      return ev_return(E, f, v);
    }
#ifdef RETURN_CONST
    case RETURN_CONST: {
      PyObject* c = in->argval ? in->argval : PyTuple_GET_ITEM(f->code->co_consts, arg);
      DynVar* v = ev_const(c);
      if (!v) return S_ERR;
      return ev_return(E, f, v);
    }
#endif
    default:
      break;
  }
  const char* nm = dyn_opname(op);
  dyn_break(&E->tx, "unsupported opcode %s", nm ? nm : "?");
  return S_BREAK;
}

#endif /* PTC_DYN_SUPPORTED */
