/* py_graph.c - the Graph type (a ptc_graph being built: symbols, inputs,
 * constants borrowed from torch tensors, nodes with attributes, outputs,
 * size arithmetic and guards, printing/JSON) and its Value handles. SymInt
 * lives in py_symint.c. A Graph is used under the GIL; while a compile of it
 * runs without the GIL (another thread), mutating calls raise RuntimeError. */
#include "ptcpy.h"

#include <string.h>

/* ---- helpers ------------------------------------------------------------------- */

static int check_mutable(PtcGraph* g) {
  if (g->busy) {
    PyErr_SetString(PyExc_RuntimeError,
                    "ptc Graph is being compiled in another thread; it cannot change now");
    return -1;
  }
  return 0;
}

static int as_i64(PyObject* o, const char* what, int64_t* out) {
  if (PyBool_Check(o) || !PyIndex_Check(o) || PyObject_TypeCheck(o, &PtcSymInt_Type)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(o)->tp_name);
    return -1;
  }
  PyObject* i = PyNumber_Index(o);
  if (!i) return -1;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
  Py_DECREF(i);
  if (overflow) {
    PyErr_Format(PyExc_ValueError, "%s does not fit in 64 bits", what);
    return -1;
  }
  if (v == -1 && PyErr_Occurred()) return -1;
  *out = v;
  return 0;
}

int ptcpy_dim_from_py(PtcGraph* g, PyObject* o, const char* what, ptc_dim* d) {
  memset(d, 0, sizeof *d);
  if (PyObject_TypeCheck(o, &PtcSymInt_Type)) {
    PtcSymInt* s = (PtcSymInt*)o;
    if (g && s->graph != g) {
      PyErr_Format(PyExc_ValueError, "%s: SymInt %R belongs to another Graph", what, o);
      return -1;
    }
    d->sym = s->id;
    d->value = s->hint;
    return 0;
  }
  if (PyBool_Check(o) || !PyIndex_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int or a SymInt, not %.100s", what,
                 Py_TYPE(o)->tp_name);
    return -1;
  }
  return as_i64(o, what, &d->value);
}

PyObject* ptcpy_dim_to_py(PtcGraph* g, ptc_dim d) {
  if (d.sym == 0) return PyLong_FromLongLong(d.value);
  PtcSymInt* s = PyObject_New(PtcSymInt, &PtcSymInt_Type);
  if (!s) return NULL;
  Py_INCREF(g);
  s->graph = g;
  s->id = d.sym;
  s->hint = d.value;
  return (PyObject*)s;
}

static PyObject* new_value(PtcGraph* g, ptc_value id) {
  PtcValue* v = PyObject_New(PtcValue, &PtcValue_Type);
  if (!v) return NULL;
  Py_INCREF(g);
  v->graph = g;
  v->id = id;
  return (PyObject*)v;
}

static int value_arg(PtcGraph* g, PyObject* o, const char* what, ptc_value* out) {
  if (o == Py_None) {
    *out = PTC_VALUE_NONE;
    return 0;
  }
  if (!PyObject_TypeCheck(o, &PtcValue_Type)) {
    PyErr_Format(PyExc_TypeError, "%s must be a Value or None, not %.100s", what,
                 Py_TYPE(o)->tp_name);
    return -1;
  }
  PtcValue* v = (PtcValue*)o;
  if (v->graph != g) {
    PyErr_Format(PyExc_ValueError, "%s: Value %R belongs to another Graph", what, o);
    return -1;
  }
  *out = v->id;
  return 0;
}

/* Text of a two-call formatter into a new str. */
PyObject* ptcpy_text_of(ptc_status (*fmt)(const void*, char*, size_t, size_t*), const void* obj) {
  char small[4096];
  size_t needed = 0;
  ptc_status s = fmt(obj, small, sizeof small, &needed);
  if (!s) return PyUnicode_DecodeUTF8(small, (Py_ssize_t)strlen(small), "replace");
  if (ptc_status_code(s) != PTC_CODE_OUT_OF_RANGE) return ptcpy_raise(s);
  ptc_status_destroy(s);
  char* big = PyMem_Malloc(needed + 1);
  if (!big) return PyErr_NoMemory();
  s = fmt(obj, big, needed + 1, &needed);
  PyObject* r = s ? ptcpy_raise(s) : PyUnicode_DecodeUTF8(big, (Py_ssize_t)strlen(big), "replace");
  PyMem_Free(big);
  return r;
}

static ptc_status graph_fmt(const void* g, char* buf, size_t cap, size_t* needed) {
  return ptc_graph_format((const ptc_graph*)g, buf, cap, needed);
}

/* ---- Graph ------------------------------------------------------------------------ */

static PyObject* graph_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
    PyErr_SetString(PyExc_TypeError, "Graph() takes no arguments");
    return NULL;
  }
  PtcGraph* self = (PtcGraph*)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->keep = PyList_New(0);
  if (!self->keep) {
    Py_DECREF(self);
    return NULL;
  }
  ptc_status s = ptc_graph_create(ptcpy_ctx, &self->g);
  if (s) {
    Py_DECREF(self);
    return ptcpy_raise(s);
  }
  return (PyObject*)self;
}

static void graph_dealloc(PtcGraph* self) {
  ptc_graph_destroy(self->g);
  Py_XDECREF(self->keep);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* graph_add_symbol(PtcGraph* self, PyObject* const* args, Py_ssize_t nargs,
                                  PyObject* kwnames) {
  static const char* const names[] = {"name", "hint", "min", "max"};
  PyObject* a[4];
  if (ptcpy_parse_args("add_symbol", args, nargs, kwnames, names, 4, 2, a) < 0) return NULL;
  if (check_mutable(self) < 0) return NULL;
  if (!PyUnicode_Check(a[0])) return PyErr_Format(PyExc_TypeError, "add_symbol: name must be a str");
  const char* name = PyUnicode_AsUTF8(a[0]);
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  if (!name || as_i64(a[1], "add_symbol: hint", &o.hint) < 0) return NULL;
  if (a[2] && as_i64(a[2], "add_symbol: min", &o.min_value) < 0) return NULL;
  if (a[3] && as_i64(a[3], "add_symbol: max", &o.max_value) < 0) return NULL;
  ptc_sym sym = 0;
  ptc_status s = ptc_graph_add_symbol(self->g, name, &o, &sym);
  if (s) return ptcpy_raise(s);
  ptc_dim d = {o.hint, sym, 0};
  return ptcpy_dim_to_py(self, d);
}

static PyObject* graph_add_input(PtcGraph* self, PyObject* const* args, Py_ssize_t nargs,
                                 PyObject* kwnames) {
  static const char* const names[] = {"name", "dtype", "shape", "strides"};
  PyObject* a[4];
  if (ptcpy_parse_args("add_input", args, nargs, kwnames, names, 4, 3, a) < 0) return NULL;
  if (check_mutable(self) < 0) return NULL;
  const char* name;
  if (ptcpy_opt_str(a[0], "add_input: name", &name) < 0) return NULL;
  int32_t dt = ptcpy_dtype_from_obj(a[1]);
  if (dt < 0) return NULL;
  PyObject* shape = PySequence_Fast(a[2], "add_input: shape must be a sequence of int | SymInt");
  if (!shape) return NULL;
  Py_ssize_t rank = PySequence_Fast_GET_SIZE(shape);
  ptc_dim dims[PTC_MAX_RANK];
  int64_t strides[PTC_MAX_RANK];
  int has_strides = a[3] && a[3] != Py_None;
  PyObject* res = NULL;
  if (rank > PTC_MAX_RANK) {
    PyErr_Format(PyExc_ValueError, "add_input: rank %zd exceeds PTC_MAX_RANK (%d)", rank,
                 PTC_MAX_RANK);
    goto done;
  }
  for (Py_ssize_t i = 0; i < rank; i++)
    if (ptcpy_dim_from_py(self, PySequence_Fast_GET_ITEM(shape, i), "add_input: shape entry",
                          &dims[i]) < 0)
      goto done;
  if (has_strides) {
    PyObject* st = PySequence_Fast(a[3], "add_input: strides must be a sequence of int");
    if (!st) goto done;
    int bad = PySequence_Fast_GET_SIZE(st) != rank;
    if (bad)
      PyErr_Format(PyExc_ValueError, "add_input: %zd strides for a rank-%zd shape",
                   PySequence_Fast_GET_SIZE(st), rank);
    for (Py_ssize_t i = 0; !bad && i < rank; i++)
      bad = as_i64(PySequence_Fast_GET_ITEM(st, i),
                   "add_input: stride (strides are static ints)", &strides[i]) < 0;
    Py_DECREF(st);
    if (bad) goto done;
  }
  ptc_value v;
  ptc_status s = ptc_graph_add_input(self->g, name, dt, dims, (size_t)rank,
                                     has_strides ? strides : NULL, &v);
  res = s ? ptcpy_raise(s) : new_value(self, v);
done:
  Py_DECREF(shape);
  return res;
}

static PyObject* graph_add_constant(PtcGraph* self, PyObject* const* args, Py_ssize_t nargs,
                                    PyObject* kwnames) {
  static const char* const names[] = {"name", "tensor", "copy"};
  PyObject* a[3];
  if (ptcpy_parse_args("add_constant", args, nargs, kwnames, names, 3, 2, a) < 0) return NULL;
  if (check_mutable(self) < 0 || ptcpy_torch_load() < 0) return NULL;
  const char* name;
  if (ptcpy_opt_str(a[0], "add_constant: name", &name) < 0) return NULL;
  int copy = a[2] ? PyObject_IsTrue(a[2]) : 0;
  if (copy < 0) return NULL;
  ptcpy_in in;
  if (ptcpy_in_import(a[1], 0, "add_constant: tensor", PTC_DEVICE_CPU, NULL, &in) < 0) return NULL;
  PyObject* contig = NULL;
  if (!ptcpy_is_contiguous(&in.t)) {
    /* libptc takes contiguous constants: copy through torch first */
    ptcpy_in_release(&in, 1);
    copy = 1;
    contig = PyObject_CallMethodNoArgs(a[1], ptcpy_s_contiguous);
    if (!contig ||
        ptcpy_in_import(contig, 0, "add_constant: tensor", PTC_DEVICE_CPU, NULL, &in) < 0) {
      Py_XDECREF(contig);
      return NULL;
    }
  }
  int32_t dt = ptc_dtype_from_dl(in.t.dtype);
  PyObject* res = NULL;
  if (dt < 0) {
    PyErr_SetString(PyExc_ValueError, "add_constant: the tensor's dtype has no ptc dtype");
  } else {
    ptc_value v;
    const char* data = (const char*)in.t.data + in.t.byte_offset;
    ptc_status s = ptc_graph_add_constant(self->g, name, dt, in.t.shape, (size_t)in.t.ndim, data,
                                          copy ? PTC_CONSTANT_COPY : PTC_CONSTANT_BORROW, &v);
    if (s) {
      ptcpy_raise(s);
    } else if (!copy && PyList_Append(self->keep, a[1]) < 0) {
      /* cannot keep the tensor alive: the graph must not keep the pointer */
      res = NULL;
    } else {
      res = new_value(self, v);
    }
  }
  ptcpy_in_release(&in, 1);
  Py_XDECREF(contig);
  return res;
}

/* ---- attributes ---------------------------------------------------------------------- */

typedef struct attr_buf {
  ptc_attr* attrs;
  size_t n;
  void** allocs;
  size_t n_allocs;
} attr_buf;

static void attr_buf_free(attr_buf* b) {
  for (size_t i = 0; i < b->n_allocs; i++) PyMem_Free(b->allocs[i]);
  PyMem_Free(b->allocs);
  PyMem_Free(b->attrs);
}

static void* attr_alloc(attr_buf* b, size_t bytes) {
  void* p = PyMem_Malloc(bytes ? bytes : 1);
  if (!p) {
    PyErr_NoMemory();
    return NULL;
  }
  b->allocs[b->n_allocs++] = p;
  return p;
}

/* list/tuple attribute: INTS (with syms) or FLOATS when an entry is a float. */
static int seq_attr(PtcGraph* g, attr_buf* b, ptc_attr* a, PyObject* seq, const char* key) {
  PyObject* f = PySequence_Fast(seq, "attribute list");
  if (!f) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
  int floats = 0;
  for (Py_ssize_t i = 0; i < n; i++) floats |= PyFloat_Check(PySequence_Fast_GET_ITEM(f, i));
  int rc = -1;
  a->count = (size_t)n;
  if (floats) {
    double* v = attr_alloc(b, (size_t)n * sizeof *v);
    a->type = PTC_ATTR_FLOATS;
    a->floats = v;
    for (Py_ssize_t i = 0; v && i < n; i++) {
      PyObject* it = PySequence_Fast_GET_ITEM(f, i);
      if (PyObject_TypeCheck(it, &PtcSymInt_Type) || !(PyFloat_Check(it) || PyLong_Check(it))) {
        PyErr_Format(PyExc_TypeError, "attribute '%s': a float list holds %.100s", key,
                     Py_TYPE(it)->tp_name);
        goto out;
      }
      v[i] = PyFloat_AsDouble(it);
      if (v[i] == -1.0 && PyErr_Occurred()) goto out;
    }
    rc = v ? 0 : -1;
  } else {
    int64_t* v = attr_alloc(b, (size_t)n * sizeof *v);
    ptc_sym* syms = v ? attr_alloc(b, (size_t)n * sizeof *syms) : NULL;
    a->type = PTC_ATTR_INTS;
    a->ints = v;
    int any_sym = 0;
    for (Py_ssize_t i = 0; syms && i < n; i++) {
      ptc_dim d;
      if (ptcpy_dim_from_py(g, PySequence_Fast_GET_ITEM(f, i), key, &d) < 0) goto out;
      v[i] = d.value;
      syms[i] = d.sym;
      any_sym |= d.sym != 0;
    }
    a->syms = any_sym ? syms : NULL;
    rc = syms ? 0 : -1;
  }
out:
  Py_DECREF(f);
  return rc;
}

static int one_attr(PtcGraph* g, attr_buf* b, PyObject* key, PyObject* val) {
  if (!PyUnicode_Check(key)) {
    PyErr_SetString(PyExc_TypeError, "attribute names must be str");
    return -1;
  }
  if (val == Py_None) return 0; /* absent optional attribute */
  ptc_attr* a = &b->attrs[b->n];
  memset(a, 0, sizeof *a);
  a->name = PyUnicode_AsUTF8(key);
  if (!a->name) return -1;
  int rc = 0;
  if (PyBool_Check(val)) {
    a->type = PTC_ATTR_BOOL;
    a->i = val == Py_True;
  } else if (PyObject_TypeCheck(val, &PtcSymInt_Type)) {
    ptc_dim d;
    rc = ptcpy_dim_from_py(g, val, a->name, &d);
    a->type = PTC_ATTR_SYM;
    a->sym = d.sym;
    a->i = d.value;
  } else if (PyLong_Check(val)) {
    a->type = PTC_ATTR_INT;
    rc = as_i64(val, a->name, &a->i);
  } else if (PyFloat_Check(val)) {
    a->type = PTC_ATTR_FLOAT;
    a->f = PyFloat_AS_DOUBLE(val);
  } else if (PyUnicode_Check(val)) {
    a->type = PTC_ATTR_STRING;
    a->s = PyUnicode_AsUTF8(val);
    rc = a->s ? 0 : -1;
  } else if (strcmp(Py_TYPE(val)->tp_name, "torch.dtype") == 0) {
    a->type = PTC_ATTR_DTYPE;
    a->i = ptcpy_dtype_from_obj(val);
    rc = a->i < 0 ? -1 : 0;
  } else if (PyList_Check(val) || PyTuple_Check(val)) {
    rc = seq_attr(g, b, a, val, a->name);
  } else {
    PyErr_Format(PyExc_TypeError,
                 "attribute '%s': unsupported value type %.100s (bool, int, float, str, "
                 "torch.dtype, SymInt, or a list of int/SymInt/float)",
                 a->name, Py_TYPE(val)->tp_name);
    rc = -1;
  }
  if (rc == 0) b->n++;
  return rc;
}

static int attrs_from_dict(PtcGraph* g, PyObject* d, attr_buf* b) {
  memset(b, 0, sizeof *b);
  if (!d || d == Py_None) return 0;
  if (!PyDict_Check(d)) {
    PyErr_Format(PyExc_TypeError, "attrs must be a dict or None, not %.100s", Py_TYPE(d)->tp_name);
    return -1;
  }
  Py_ssize_t n = PyDict_GET_SIZE(d);
  b->attrs = PyMem_Calloc((size_t)n + 1, sizeof *b->attrs);
  b->allocs = PyMem_Calloc(2 * (size_t)n + 1, sizeof *b->allocs);
  if (!b->attrs || !b->allocs) {
    PyErr_NoMemory();
    return -1;
  }
  Py_ssize_t pos = 0;
  PyObject *key, *val;
  while (PyDict_Next(d, &pos, &key, &val))
    if (one_attr(g, b, key, val) < 0) return -1;
  return 0;
}

static PyObject* graph_add_node(PtcGraph* self, PyObject* const* args, Py_ssize_t nargs,
                                PyObject* kwnames) {
  static const char* const names[] = {"op", "inputs", "attrs"};
  PyObject* a[3];
  if (ptcpy_parse_args("add_node", args, nargs, kwnames, names, 3, 2, a) < 0) return NULL;
  if (check_mutable(self) < 0) return NULL;
  if (!PyUnicode_Check(a[0])) return PyErr_Format(PyExc_TypeError, "add_node: op must be a str");
  const char* op = PyUnicode_AsUTF8(a[0]);
  if (!op) return NULL;
  PyObject* ins = PySequence_Fast(a[1], "add_node: inputs must be a sequence of Value | None");
  if (!ins) return NULL;
  Py_ssize_t n_in = PySequence_Fast_GET_SIZE(ins);
  ptc_value* in_ids = PyMem_Calloc((size_t)n_in + 1, sizeof *in_ids);
  attr_buf b;
  memset(&b, 0, sizeof b);
  PyObject* res = NULL;
  ptc_value small[8];
  ptc_value* outs = small;
  if (!in_ids) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n_in; i++)
    if (value_arg(self, PySequence_Fast_GET_ITEM(ins, i), "add_node: input", &in_ids[i]) < 0)
      goto done;
  if (attrs_from_dict(self, a[2], &b) < 0) goto done;
  size_t n_out = 0, cap = 8;
  ptc_status s;
  for (;;) {
    s = ptc_graph_add_node(self->g, op, in_ids, (size_t)n_in, b.attrs, b.n, outs, cap, &n_out);
    if (!s || ptc_status_code(s) != PTC_CODE_OUT_OF_RANGE || n_out <= cap) break;
    ptc_status_destroy(s);
    cap = n_out;
    if (outs != small) PyMem_Free(outs);
    outs = PyMem_Calloc(cap, sizeof *outs);
    if (!outs) {
      outs = small;
      PyErr_NoMemory();
      goto done;
    }
  }
  if (s) {
    ptcpy_raise(s);
    goto done;
  }
  res = PyTuple_New((Py_ssize_t)n_out);
  for (size_t i = 0; res && i < n_out; i++) {
    PyObject* v = new_value(self, outs[i]);
    if (!v) Py_CLEAR(res);
    else PyTuple_SET_ITEM(res, (Py_ssize_t)i, v);
  }
done:
  if (outs != small) PyMem_Free(outs);
  attr_buf_free(&b);
  PyMem_Free(in_ids);
  Py_DECREF(ins);
  return res;
}

static PyObject* graph_add_output(PtcGraph* self, PyObject* v) {
  ptc_value id;
  if (check_mutable(self) < 0 || value_arg(self, v, "add_output: value", &id) < 0) return NULL;
  if (id == PTC_VALUE_NONE) return PyErr_Format(PyExc_TypeError, "add_output: value is None");
  ptc_status s = ptc_graph_add_output(self->g, id);
  if (s) return ptcpy_raise(s);
  Py_RETURN_NONE;
}

/* "+" -> PTC_SYM_ADD etc.; -1 with ValueError when unknown. */
static int sym_op_code(PyObject* o) {
  static const char* const ops[] = {"+", "-", "*", "//", "%", "ceildiv", "min", "max"};
  for (int i = 0; PyUnicode_Check(o) && i < 8; i++)
    if (PyUnicode_CompareWithASCIIString(o, ops[i]) == 0) return i;
  PyErr_Format(PyExc_ValueError, "sym: unknown op %R (one of + - * // %% ceildiv min max)", o);
  return -1;
}

static int rel_code(PyObject* o) {
  static const char* const rels[] = {"==", "!=", "<", "<=", ">", ">="};
  for (int i = 0; PyUnicode_Check(o) && i < 6; i++)
    if (PyUnicode_CompareWithASCIIString(o, rels[i]) == 0) return i;
  PyErr_Format(PyExc_ValueError, "decide: unknown relation %R (one of == != < <= > >=)", o);
  return -1;
}

PyObject* ptcpy_graph_sym(PtcGraph* g, int op, PyObject* a, PyObject* b) {
  ptc_dim x, y, r;
  if (check_mutable(g) < 0 || ptcpy_dim_from_py(g, a, "sym: a", &x) < 0 ||
      ptcpy_dim_from_py(g, b, "sym: b", &y) < 0)
    return NULL;
  ptc_status s = ptc_graph_sym_op(g->g, op, x, y, &r);
  return s ? ptcpy_raise(s) : ptcpy_dim_to_py(g, r);
}

int ptcpy_graph_decide(PtcGraph* g, int rel, PyObject* a, PyObject* b) {
  ptc_dim x, y;
  if (check_mutable(g) < 0 || ptcpy_dim_from_py(g, a, "decide: a", &x) < 0 ||
      ptcpy_dim_from_py(g, b, "decide: b", &y) < 0)
    return -1;
  int r = 0;
  ptc_status s = ptc_graph_sym_decide(g->g, rel, x, y, &r);
  if (s) {
    ptcpy_raise(s);
    return -1;
  }
  return r;
}

static PyObject* graph_sym(PtcGraph* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) return PyErr_Format(PyExc_TypeError, "sym(op, a, b) takes 3 arguments");
  int op = sym_op_code(args[0]);
  return op < 0 ? NULL : ptcpy_graph_sym(self, op, args[1], args[2]);
}

static PyObject* graph_decide(PtcGraph* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) return PyErr_Format(PyExc_TypeError, "decide(rel, a, b) takes 3 arguments");
  int rel = rel_code(args[0]);
  int r = rel < 0 ? -1 : ptcpy_graph_decide(self, rel, args[1], args[2]);
  if (r < 0) return NULL;
  return PyBool_FromLong(r);
}

static PyObject* graph_guards(PtcGraph* self, PyObject* unused) {
  size_t n = ptc_graph_num_guards(self->g);
  PyObject* list = PyList_New(0);
  for (size_t i = 0; list && i < n; i++) {
    size_t len = ptc_graph_guard_format(self->g, i, NULL, 0);
    char* buf = PyMem_Malloc(len + 1);
    if (!buf) {
      Py_DECREF(list);
      return PyErr_NoMemory();
    }
    ptc_graph_guard_format(self->g, i, buf, len + 1);
    PyObject* s = PyUnicode_FromString(buf);
    PyMem_Free(buf);
    if (!s || PyList_Append(list, s) < 0) Py_CLEAR(list);
    Py_XDECREF(s);
  }
  return list;
}

static PyObject* graph_format(PtcGraph* self, PyObject* unused) {
  return ptcpy_text_of(graph_fmt, self->g);
}

static PyObject* graph_str(PtcGraph* self) { return ptcpy_text_of(graph_fmt, self->g); }

static PyObject* graph_to_json(PtcGraph* self, PyObject* unused) {
  char* json = NULL;
  ptc_status s = ptc_graph_to_json(self->g, NULL, &json);
  if (s) return ptcpy_raise(s);
  PyObject* r = PyUnicode_FromString(json);
  ptc_free(json);
  return r;
}

static PyObject* graph_value(PtcGraph* self, PyObject* arg) {
  int64_t id;
  if (as_i64(arg, "value: id", &id) < 0) return NULL;
  if (id < 0 || (uint64_t)id >= ptc_graph_num_values(self->g))
    return PyErr_Format(PyExc_IndexError, "value id %lld out of range", (long long)id);
  return new_value(self, (ptc_value)id);
}

static PyObject* value_list(PtcGraph* self, int outputs) {
  size_t n = outputs ? ptc_graph_num_outputs(self->g) : ptc_graph_num_inputs(self->g);
  PyObject* t = PyTuple_New((Py_ssize_t)n);
  for (size_t i = 0; t && i < n; i++) {
    PyObject* v =
        new_value(self, outputs ? ptc_graph_output(self->g, i) : ptc_graph_input(self->g, i));
    if (!v) Py_CLEAR(t);
    else PyTuple_SET_ITEM(t, (Py_ssize_t)i, v);
  }
  return t;
}

static PyObject* graph_get_inputs(PtcGraph* self, void* c) { return value_list(self, 0); }
static PyObject* graph_get_outputs(PtcGraph* self, void* c) { return value_list(self, 1); }
static PyObject* graph_get_num_nodes(PtcGraph* self, void* c) {
  return PyLong_FromSize_t(ptc_graph_num_nodes(self->g));
}
static PyObject* graph_get_num_inputs(PtcGraph* self, void* c) {
  return PyLong_FromSize_t(ptc_graph_num_inputs(self->g));
}
static PyObject* graph_get_num_outputs(PtcGraph* self, void* c) {
  return PyLong_FromSize_t(ptc_graph_num_outputs(self->g));
}

static PyMethodDef graph_methods[] = {
    {"add_symbol", (PyCFunction)(void (*)(void))graph_add_symbol, METH_FASTCALL | METH_KEYWORDS,
     "add_symbol(name, hint, min=2, max=2**62) -> SymInt | int (hints 0/1 give the int)"},
    {"add_input", (PyCFunction)(void (*)(void))graph_add_input, METH_FASTCALL | METH_KEYWORDS,
     "add_input(name, dtype, shape, strides=None) -> Value (strides are static ints)"},
    {"add_constant", (PyCFunction)(void (*)(void))graph_add_constant,
     METH_FASTCALL | METH_KEYWORDS,
     "add_constant(name, tensor, copy=False) -> Value. A contiguous cpu tensor is borrowed\n"
     "(the Graph and its Executables keep a reference); otherwise libptc copies it."},
    {"add_node", (PyCFunction)(void (*)(void))graph_add_node, METH_FASTCALL | METH_KEYWORDS,
     "add_node(op, inputs, attrs=None) -> tuple[Value, ...] (None input = absent; None\n"
     "attribute value = attribute not given)"},
    {"add_output", (PyCFunction)graph_add_output, METH_O, "add_output(value) -> None"},
    {"sym", (PyCFunction)(void (*)(void))graph_sym, METH_FASTCALL,
     "sym(op, a, b) -> int | SymInt; op in + - * // % ceildiv min max"},
    {"decide", (PyCFunction)(void (*)(void))graph_decide, METH_FASTCALL,
     "decide(rel, a, b) -> bool; records a guard when not statically known"},
    {"guards", (PyCFunction)graph_guards, METH_NOARGS, "guards() -> list[str]"},
    {"format", (PyCFunction)graph_format, METH_NOARGS, "format() -> str (the node table)"},
    {"to_json", (PyCFunction)graph_to_json, METH_NOARGS, "to_json() -> str"},
    {"value", (PyCFunction)graph_value, METH_O, "value(id) -> Value"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef graph_getset[] = {
    {"num_nodes", (getter)graph_get_num_nodes, NULL, "number of nodes", NULL},
    {"num_inputs", (getter)graph_get_num_inputs, NULL, "number of inputs", NULL},
    {"num_outputs", (getter)graph_get_num_outputs, NULL, "number of outputs", NULL},
    {"inputs", (getter)graph_get_inputs, NULL, "tuple of input Values", NULL},
    {"outputs", (getter)graph_get_outputs, NULL, "tuple of output Values", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject PtcGraph_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ptc._C.Graph",
    .tp_basicsize = sizeof(PtcGraph),
    .tp_dealloc = (destructor)graph_dealloc,
    .tp_str = (reprfunc)graph_str,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Graph(): a libptc graph being built (symbols, inputs, constants, nodes, outputs).",
    .tp_methods = graph_methods,
    .tp_getset = graph_getset,
    .tp_new = graph_new,
};

/* ---- Value ------------------------------------------------------------------------------ */

static void value_dealloc(PtcValue* self) {
  Py_XDECREF(self->graph);
  PyObject_Free(self);
}

static int value_info(PtcValue* self, ptc_value_info* info) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  ptc_status s = ptc_graph_value_info(self->graph->g, self->id, info);
  if (s) {
    ptcpy_raise(s);
    return -1;
  }
  return 0;
}

static PyObject* value_get_graph(PtcValue* self, void* c) {
  Py_INCREF(self->graph);
  return (PyObject*)self->graph;
}
static PyObject* value_get_id(PtcValue* self, void* c) { return PyLong_FromUnsignedLong(self->id); }
static PyObject* value_get_name(PtcValue* self, void* c) {
  ptc_value_info info;
  return value_info(self, &info) < 0 ? NULL : PyUnicode_FromString(info.name ? info.name : "");
}
static PyObject* value_get_kind(PtcValue* self, void* c) {
  ptc_value_info info;
  if (value_info(self, &info) < 0) return NULL;
  return PyUnicode_FromString(info.kind == PTC_VALUE_INPUT      ? "input"
                              : info.kind == PTC_VALUE_CONSTANT ? "constant"
                                                                : "node");
}
static PyObject* value_get_dtype(PtcValue* self, void* c) {
  ptc_value_info info;
  if (value_info(self, &info) < 0) return NULL;
  PyObject* d = ptcpy_dtype_to_torch(info.dtype);
  Py_XINCREF(d);
  return d;
}
static PyObject* dims_tuple(PtcGraph* g, const ptc_dim* dims, uint32_t rank) {
  PyObject* t = PyTuple_New(rank);
  for (uint32_t i = 0; t && i < rank; i++) {
    PyObject* d = ptcpy_dim_to_py(g, dims[i]);
    if (!d) Py_CLEAR(t);
    else PyTuple_SET_ITEM(t, i, d);
  }
  return t;
}
static PyObject* value_get_shape(PtcValue* self, void* c) {
  ptc_value_info info;
  return value_info(self, &info) < 0 ? NULL : dims_tuple(self->graph, info.shape, info.rank);
}
static PyObject* value_get_strides(PtcValue* self, void* c) {
  ptc_value_info info;
  return value_info(self, &info) < 0 ? NULL : dims_tuple(self->graph, info.strides, info.rank);
}
static PyObject* value_get_ndim(PtcValue* self, void* c) {
  ptc_value_info info;
  return value_info(self, &info) < 0 ? NULL : PyLong_FromUnsignedLong(info.rank);
}

static PyObject* value_repr(PtcValue* self) {
  ptc_value_info info;
  if (value_info(self, &info) < 0) return NULL;
  PyObject* shape = dims_tuple(self->graph, info.shape, info.rank);
  if (!shape) return NULL;
  const char* dt = ptc_dtype_name(info.dtype);
  PyObject* r = PyUnicode_FromFormat("Value(%u '%s': %s%R)", (unsigned)self->id,
                                     info.name ? info.name : "", dt ? dt : "?", shape);
  Py_DECREF(shape);
  return r;
}

static Py_hash_t value_hash(PtcValue* self) {
  Py_hash_t h = (Py_hash_t)(((uintptr_t)self->graph >> 4) * 1000003u ^ self->id);
  return h == -1 ? -2 : h;
}

static PyObject* value_richcompare(PyObject* a, PyObject* b, int op) {
  if (!PyObject_TypeCheck(b, &PtcValue_Type) || (op != Py_EQ && op != Py_NE))
    Py_RETURN_NOTIMPLEMENTED;
  PtcValue *x = (PtcValue*)a, *y = (PtcValue*)b;
  int eq = x->graph == y->graph && x->id == y->id;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyGetSetDef value_getset[] = {
    {"graph", (getter)value_get_graph, NULL, "the Graph", NULL},
    {"id", (getter)value_get_id, NULL, "graph-scoped value id", NULL},
    {"name", (getter)value_get_name, NULL, "value name", NULL},
    {"kind", (getter)value_get_kind, NULL, "'input', 'constant' or 'node'", NULL},
    {"dtype", (getter)value_get_dtype, NULL, "torch.dtype", NULL},
    {"shape", (getter)value_get_shape, NULL, "tuple of int | SymInt", NULL},
    {"strides", (getter)value_get_strides, NULL, "tuple of int | SymInt (elements)", NULL},
    {"ndim", (getter)value_get_ndim, NULL, "rank", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject PtcValue_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ptc._C.Value",
    .tp_basicsize = sizeof(PtcValue),
    .tp_dealloc = (destructor)value_dealloc,
    .tp_repr = (reprfunc)value_repr,
    .tp_hash = (hashfunc)value_hash,
    .tp_richcompare = value_richcompare,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A value of a Graph (input, constant or node output); an immutable handle.",
    .tp_getset = value_getset,
};

int ptcpy_symint_type_init(void);

int ptcpy_graph_types_init(PyObject* m) {
  if (PyType_Ready(&PtcGraph_Type) < 0 || PyType_Ready(&PtcValue_Type) < 0 ||
      ptcpy_symint_type_init() < 0)
    return -1;
  Py_INCREF(&PtcGraph_Type);
  Py_INCREF(&PtcValue_Type);
  Py_INCREF(&PtcSymInt_Type);
  if (PyModule_AddObject(m, "Graph", (PyObject*)&PtcGraph_Type) < 0 ||
      PyModule_AddObject(m, "Value", (PyObject*)&PtcValue_Type) < 0 ||
      PyModule_AddObject(m, "SymInt", (PyObject*)&PtcSymInt_Type) < 0)
    return -1;
  return 0;
}
