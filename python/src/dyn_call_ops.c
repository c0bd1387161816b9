/* dyn_call_ops.c - operators on trackers for the bytecode capture (issue 6):
 * dyn_binop / dyn_unop (tensors through the OutputGraph, sizes through
 * og.sym_binop, sequences, constants computed for real), dyn_compare
 * (identity, membership, sizes through og.sym_compare, sequences), dyn_truth,
 * dyn_iter, dyn_contains, dyn_subscr and dyn_store_subscr. Whatever is not
 * reproduced exactly breaks the graph. */
#include "dyn_call_int.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * Binary / unary operators
 * ------------------------------------------------------------------------- */
static PyObject* const_binop(int op, PyObject* a, PyObject* b) {
  switch (op % 13) {
    case 0: return PyNumber_Add(a, b);
    case 1: return PyNumber_And(a, b);
    case 2: return PyNumber_FloorDivide(a, b);
    case 3: return PyNumber_Lshift(a, b);
    case 4: return PyNumber_MatrixMultiply(a, b);
    case 5: return PyNumber_Multiply(a, b);
    case 6: return PyNumber_Remainder(a, b);
    case 7: return PyNumber_Or(a, b);
    case 8: return PyNumber_Power(a, b, Py_None);
    case 9: return PyNumber_Rshift(a, b);
    case 10: return PyNumber_Subtract(a, b);
    case 11: return PyNumber_TrueDivide(a, b);
    default: return PyNumber_Xor(a, b);
  }
}

static int is_seq(DynVar* v) {
  return v->kind == DV_TUPLE || v->kind == DV_LIST ||
         (v->kind == DV_CONST && PyTuple_Check(v->value));
}
static int seq_is_list(DynVar* v) { return v->kind == DV_LIST; }

static int is_size(DynVar* v) {
  return (v->kind == DV_TUPLE && v->extra == dcc.torch_size) ||
         (v->kind == DV_CONST && (PyObject*)Py_TYPE(v->value) == dcc.torch_size);
}

static int seq_binop(dyn_tx* tx, int op, DynVar* a, DynVar* b, DynVar** out) {
  int base = op % 13, inplace = op >= 13;
  if (base == 0 && is_seq(a)) {
    if (inplace && a->kind == DV_LIST) { /* list += iterable: extend in place */
      PyObject* items;
      int rc = dc_check_watch(tx, a);
      if (rc != DYN_CALL_OK) return rc;
      rc = dc_items(tx, b, &items);
      if (rc != DYN_CALL_OK) return rc;
      rc = PyList_SetSlice(a->items, PyList_GET_SIZE(a->items), PyList_GET_SIZE(a->items), items);
      Py_DECREF(items);
      if (rc < 0 || dc_mark_mutated(tx, a) < 0) return DYN_CALL_ERROR;
      Py_INCREF(a);
      *out = a;
      return DYN_CALL_OK;
    }
    if (!is_seq(b) || seq_is_list(a) != seq_is_list(b))
      return dc_break(tx, "%s + %s", dyn_var_kind_name(a), dyn_var_kind_name(b));
    PyObject *ia, *ib;
    int rc = dc_items(tx, a, &ia);
    if (rc != DYN_CALL_OK) return rc;
    rc = dc_items(tx, b, &ib);
    if (rc != DYN_CALL_OK) {
      Py_DECREF(ia);
      return rc;
    }
    rc = PyList_SetSlice(ia, PyList_GET_SIZE(ia), PyList_GET_SIZE(ia), ib);
    Py_DECREF(ib);
    if (rc == 0) *out = dc_seq(seq_is_list(a) ? DV_LIST : DV_TUPLE, ia);
    Py_DECREF(ia);
    if (!*out) return DYN_CALL_ERROR;
    if (is_size(a)) { /* torch.Size + tuple is a torch.Size */
      Py_INCREF(dcc.torch_size);
      (*out)->extra = dcc.torch_size;
    }
    return DYN_CALL_OK;
  }
  if (base == 5 && (is_seq(a) || is_seq(b))) {
    DynVar* s = is_seq(a) ? a : b;
    DynVar* k = is_seq(a) ? b : a;
    if (!dc_is_int_const(k)) return dc_break(tx, "sequence * %s", dyn_var_kind_name(k));
    long times = PyLong_AsLong(k->value);
    if (times < 0) times = 0;
    PyObject* items;
    int rc = dc_items(tx, s, &items);
    if (rc != DYN_CALL_OK) return rc;
    if (PyList_GET_SIZE(items) * times > DC_MAX_UNROLL) {
      Py_DECREF(items);
      return dc_break(tx, "sequence repetition too long");
    }
    PyObject* r = PySequence_Repeat(items, times);
    Py_DECREF(items);
    if (!r) return DYN_CALL_ERROR;
    if (inplace && s == a && a->kind == DV_LIST) {
      if (dc_check_watch(tx, a) != DYN_CALL_OK) {
        Py_DECREF(r);
        return DYN_CALL_BREAK;
      }
      int e = PyList_SetSlice(a->items, 0, PyList_GET_SIZE(a->items), r);
      Py_DECREF(r);
      if (e < 0 || dc_mark_mutated(tx, a) < 0) return DYN_CALL_ERROR;
      Py_INCREF(a);
      *out = a;
      return DYN_CALL_OK;
    }
    *out = dc_seq(seq_is_list(s) ? DV_LIST : DV_TUPLE, r);
    Py_DECREF(r);
    if (*out && is_size(s)) {
      Py_INCREF(dcc.torch_size);
      (*out)->extra = dcc.torch_size;
    }
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  return -2;
}

int dc_const_result(dyn_tx* tx, PyObject* r, const char* what, DynVar** out) {
  if (!r) return dc_break_exc(tx, what);
  if (PyList_CheckExact(r)) { /* a fresh list of constants (str.split...) */
    Py_ssize_t n = PyList_GET_SIZE(r);
    PyObject* l = PyList_New(n);
    for (Py_ssize_t i = 0; l && i < n; i++) {
      PyObject* x = PyList_GET_ITEM(r, i);
      DynVar* c = dc_safe_const(x) ? dyn_var_const(x) : NULL;
      if (!c) {
        Py_DECREF(l);
        l = NULL;
        if (!PyErr_Occurred()) {
          Py_DECREF(r);
          return dc_break(tx, "%s gave a list of non-constants", what);
        }
        break;
      }
      PyList_SET_ITEM(l, i, (PyObject*)c);
    }
    Py_DECREF(r);
    if (!l) return DYN_CALL_ERROR;
    *out = dc_seq(DV_LIST, l);
    Py_DECREF(l);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  if (!dc_safe_const(r)) {
    Py_DECREF(r);
    return dc_break(tx, "%s gave a non-constant result", what);
  }
  *out = dyn_var_const(r);
  Py_DECREF(r);
  return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
}

static int both_consts(dyn_tx* tx, DynVar* a, DynVar* b, PyObject** ca, PyObject** cb) {
  int rc = dc_const_of(tx, a, ca);
  if (rc != DYN_CALL_OK) return rc;
  rc = dc_const_of(tx, b, cb);
  if (rc != DYN_CALL_OK) Py_CLEAR(*ca);
  return rc;
}

int dyn_binop(dyn_tx* tx, int op, DynVar* a, DynVar* b, DynVar** out) {
  *out = NULL;
  if (dc_init() < 0) return DYN_CALL_ERROR;
  if (op < 0 || op >= 26) return dc_break(tx, "binary operator %d", op);
  int base = op % 13;
  if (dc_is_view(a) || dc_is_view(b)) return dc_break(tx, "operator on a dict view");
  char what[64];
  snprintf(what, sizeof what, "operator %s%s", dc_bin_syms[base], op >= 13 ? "=" : "");
  if (a->kind == DV_TENSOR || b->kind == DV_TENSOR) {
    PyObject* f = PyObject_GetAttrString(dcc.operator_mod, op >= 13 ? dc_ibin_names[base] : dc_bin_names[base]);
    if (!f) return DYN_CALL_ERROR;
    DynVar* args[2] = {a, b};
    int rc = dc_og_call_checked(tx, "call_function", f, args, 2, NULL, what, out);
    Py_DECREF(f);
    return rc;
  }
  if (a->kind == DV_SYMINT || b->kind == DV_SYMINT) {
    DynVar* o = a->kind == DV_SYMINT ? b : a;
    int sym_ok = (o->kind == DV_SYMINT || dc_is_int_const(o)) &&
                 (base == 0 || base == 10 || base == 5 || base == 2 || base == 6 || base == 8);
    if (sym_ok) {
      PyObject* r = PyObject_CallMethod(tx->og, "sym_binop", "sOO", dc_bin_syms[base], a->value, b->value);
      if (!r) return dc_break_exc(tx, what);
      int rc = dc_from_py(tx, r, out);
      Py_DECREF(r);
      return rc;
    }
    /* fall through: specialised to ints (guards recorded) */
  }
  int rc = seq_binop(tx, op, a, b, out);
  if (rc != -2) return rc;
  PyObject *ca, *cb;
  rc = both_consts(tx, a, b, &ca, &cb);
  if (rc != DYN_CALL_OK) return rc;
  if (base == 8 && PyLong_Check(cb) && PyLong_Check(ca) && PyLong_AsLong(cb) > 4096) {
    Py_DECREF(ca);
    Py_DECREF(cb);
    return dc_break(tx, "huge integer power");
  }
  PyObject* r = const_binop(op, ca, cb);
  Py_DECREF(ca);
  Py_DECREF(cb);
  return dc_const_result(tx, r, what, out);
}

int dyn_unop(dyn_tx* tx, int op, DynVar* a, DynVar** out) {
  *out = NULL;
  if (dc_init() < 0) return DYN_CALL_ERROR;
  if (op == DYN_OP_NOT) {
    int t = 0;
    int rc = dyn_truth(tx, a, &t);
    if (rc != DYN_CALL_OK) return rc;
    *out = dyn_var_const(t ? Py_False : Py_True);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  const char* nm = op == DYN_OP_NEG ? "neg" : op == DYN_OP_POS ? "pos" : op == DYN_OP_INVERT ? "invert" : NULL;
  if (!nm) return dc_break(tx, "unary operator %d", op);
  char what[48];
  snprintf(what, sizeof what, "operator.%s", nm);
  if (a->kind == DV_TENSOR) {
    PyObject* f = PyObject_GetAttrString(dcc.operator_mod, nm);
    if (!f) return DYN_CALL_ERROR;
    int rc = dc_og_call_checked(tx, "call_function", f, &a, 1, NULL, what, out);
    Py_DECREF(f);
    return rc;
  }
  if (a->kind == DV_SYMINT && op != DYN_OP_INVERT) {
    if (op == DYN_OP_POS) {
      Py_INCREF(a);
      *out = a;
      return DYN_CALL_OK;
    }
    PyObject* zero = PyLong_FromLong(0);
    PyObject* r = zero ? PyObject_CallMethod(tx->og, "sym_binop", "sOO", "-", zero, a->value) : NULL;
    Py_XDECREF(zero);
    if (!r) return dc_break_exc(tx, what);
    int rc = dc_from_py(tx, r, out);
    Py_DECREF(r);
    return rc;
  }
  PyObject* c;
  int rc = dc_const_of(tx, a, &c);
  if (rc != DYN_CALL_OK) return rc;
  PyObject* r = op == DYN_OP_NEG ? PyNumber_Negative(c) : op == DYN_OP_POS ? PyNumber_Positive(c) : PyNumber_Invert(c);
  Py_DECREF(c);
  return dc_const_result(tx, r, what, out);
}

/* ---------------------------------------------------------------------------
 * Comparisons, identity, membership
 * ------------------------------------------------------------------------- */
int dc_bool_out(int b, DynVar** out) {
  *out = dyn_var_const(b ? Py_True : Py_False);
  return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
}

/* 1/0 for `a is b`, or BREAK (as -DYN_CALL_BREAK... returned through rc) */
static int identity(dyn_tx* tx, DynVar* a, DynVar* b, int* res) {
  if (a == b) {
    *res = 1;
    return DYN_CALL_OK;
  }
  int ida = a->kind == DV_CONST || a->kind == DV_MODULE || a->kind == DV_OBJECT ||
            (a->kind == DV_FUNCTION && a->value);
  int idb = b->kind == DV_CONST || b->kind == DV_MODULE || b->kind == DV_OBJECT ||
            (b->kind == DV_FUNCTION && b->value);
  if (ida && idb) {
    *res = a->value == b->value;
    return DYN_CALL_OK;
  }
  if (a->kind == DV_TENSOR && b->kind == DV_TENSOR) {
    if (a->source && b->source && a->value != b->value) { /* distinct inputs */
      *res = 0;
      return DYN_CALL_OK;
    }
    return dc_break(tx, "identity test between two tensors");
  }
  /* a tracker that is not a const (a tensor, a container, a symint...)
   * is never None/True/False/an int constant object used by identity,
   * except a SymInt vs an int (int objects have no reliable identity). */
  DynVar* c = ida ? a : idb ? b : NULL;
  DynVar* o = ida ? b : a;
  if (c && c->kind == DV_CONST && o->kind != DV_SYMINT &&
      (c->value == Py_None || PyBool_Check(c->value) || c->value == Py_Ellipsis ||
       o->kind == DV_TENSOR || o->kind == DV_LIST || o->kind == DV_DICT || o->kind == DV_TUPLE ||
       o->kind == DV_SET || o->kind == DV_ITER || o->kind == DV_SLICE)) {
    if (o->kind == DV_TUPLE && PyTuple_Check(c->value))
      return dc_break(tx, "identity test between tuples");
    *res = 0;
    return DYN_CALL_OK;
  }
  if ((a->created && b->kind != DV_CONST) || (b->created && a->kind != DV_CONST)) {
    *res = 0; /* an object made in the trace is only itself */
    return DYN_CALL_OK;
  }
  if (a->source && b->source && a->kind == b->kind && a->kind != DV_SYMINT &&
      a->kind != DV_CONST) {
    *res = 0; /* one tracker per real object */
    return DYN_CALL_OK;
  }
  return dc_break(tx, "identity test between a %s and a %s", dyn_var_kind_name(a), dyn_var_kind_name(b));
}

static int seq_equal(dyn_tx* tx, DynVar* a, DynVar* b, int* res) {
  PyObject *ia, *ib;
  int rc = dc_items(tx, a, &ia);
  if (rc != DYN_CALL_OK) return rc;
  rc = dc_items(tx, b, &ib);
  if (rc != DYN_CALL_OK) {
    Py_DECREF(ia);
    return rc;
  }
  *res = PyList_GET_SIZE(ia) == PyList_GET_SIZE(ib);
  for (Py_ssize_t i = 0; *res && i < PyList_GET_SIZE(ia); i++) {
    DynVar* e;
    rc = dyn_compare(tx, Py_EQ, (DynVar*)PyList_GET_ITEM(ia, i), (DynVar*)PyList_GET_ITEM(ib, i), &e);
    if (rc != DYN_CALL_OK) break;
    int t = 0;
    rc = dyn_truth(tx, e, &t);
    Py_DECREF(e);
    if (rc != DYN_CALL_OK) break;
    *res = t;
  }
  Py_DECREF(ia);
  Py_DECREF(ib);
  return rc;
}

static int is_num_or_sym(DynVar* v) {
  return v->kind == DV_SYMINT || dc_is_int_const(v);
}

int dyn_compare(dyn_tx* tx, int op, DynVar* a, DynVar* b, DynVar** out) {
  *out = NULL;
  if (dc_init() < 0) return DYN_CALL_ERROR;
  if (op == DYN_OP_IS || op == DYN_OP_IS_NOT) {
    int r = 0;
    int rc = identity(tx, a, b, &r);
    if (rc != DYN_CALL_OK) return rc;
    return dc_bool_out(op == DYN_OP_IS ? r : !r, out);
  }
  if (op == DYN_OP_IN || op == DYN_OP_NOT_IN) {
    int r = 0;
    int rc = dyn_contains(tx, b, a, &r);
    if (rc != DYN_CALL_OK) return rc;
    return dc_bool_out(op == DYN_OP_IN ? r : !r, out);
  }
  if (op < Py_LT || op > Py_GE) return dc_break(tx, "comparison %d", op);
  if (dc_is_view(a) || dc_is_view(b)) return dc_break(tx, "comparison with a dict view");
  char what[48];
  snprintf(what, sizeof what, "operator %s", dc_cmp_syms[op]);
  if (a->kind == DV_TENSOR || b->kind == DV_TENSOR) {
    PyObject* f = PyObject_GetAttrString(dcc.operator_mod, dc_cmp_names[op]);
    if (!f) return DYN_CALL_ERROR;
    DynVar* args[2] = {a, b};
    int rc = dc_og_call(tx, "call_function", f, args, 2, NULL, what, out);
    Py_DECREF(f);
    return rc;
  }
  if ((a->kind == DV_SYMINT || b->kind == DV_SYMINT) && is_num_or_sym(a) && is_num_or_sym(b)) {
    PyObject* r = PyObject_CallMethod(tx->og, "sym_compare", "sOO", dc_cmp_syms[op], a->value, b->value);
    if (!r) return dc_break_exc(tx, what);
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (t < 0) return DYN_CALL_ERROR;
    return dc_bool_out(t, out);
  }
  if ((op == Py_EQ || op == Py_NE) && (is_seq(a) || is_seq(b)) &&
      (a->kind != DV_CONST || b->kind != DV_CONST)) {
    if (!is_seq(a) || !is_seq(b) || seq_is_list(a) != seq_is_list(b)) {
      /* a list never equals a tuple; a sequence never equals a scalar */
      if ((is_seq(a) && is_seq(b)) || a->kind == DV_CONST || b->kind == DV_CONST)
        return dc_bool_out(op == Py_NE, out);
      return dc_break(tx, "comparison of a %s with a %s", dyn_var_kind_name(a), dyn_var_kind_name(b));
    }
    int r = 0;
    int rc = seq_equal(tx, a, b, &r);
    if (rc != DYN_CALL_OK) return rc;
    return dc_bool_out(op == Py_EQ ? r : !r, out);
  }
  if ((op == Py_EQ || op == Py_NE) && (a->kind == DV_CONST) != (b->kind == DV_CONST)) {
    DynVar* c = a->kind == DV_CONST ? a : b;
    DynVar* o = a->kind == DV_CONST ? b : a;
    if (c->value == Py_None && (o->kind == DV_LIST || o->kind == DV_DICT || o->kind == DV_TUPLE ||
                                o->kind == DV_SET || o->kind == DV_FUNCTION || o->kind == DV_SLICE))
      return dc_bool_out(op == Py_NE, out);
  }
  if ((op == Py_EQ || op == Py_NE) && a->kind == DV_MODULE && b->kind == DV_MODULE)
    return dc_bool_out((a->value == b->value) == (op == Py_EQ), out);
  PyObject *ca, *cb;
  int rc = both_consts(tx, a, b, &ca, &cb);
  if (rc != DYN_CALL_OK) return rc;
  PyObject* r = PyObject_RichCompare(ca, cb, op);
  Py_DECREF(ca);
  Py_DECREF(cb);
  return dc_const_result(tx, r, what, out);
}

int dyn_contains(dyn_tx* tx, DynVar* container, DynVar* item, int* out) {
  *out = 0;
  if (dc_init() < 0) return DYN_CALL_ERROR;
  DynVar* c = container;
  if (c->kind == DV_DICT) {
    PyObject* k;
    int rc = dc_const_of(tx, item, &k);
    if (rc != DYN_CALL_OK) return rc;
    int r = PyDict_Contains(c->items, k);
    Py_DECREF(k);
    if (r < 0) return dc_break_exc(tx, "in (dict)");
    *out = r;
    return DYN_CALL_OK;
  }
  if (c->kind == DV_TENSOR) return dc_break(tx, "`in` on a tensor");
  if (c->kind == DV_CONST && !PyTuple_Check(c->value)) {
    PyObject* k;
    int rc = dc_const_of(tx, item, &k);
    if (rc != DYN_CALL_OK) return rc;
    if (!dc_safe_const(c->value)) {
      Py_DECREF(k);
      return dc_break(tx, "`in` on a %s", Py_TYPE(c->value)->tp_name);
    }
    int r = PySequence_Contains(c->value, k);
    Py_DECREF(k);
    if (r < 0) return dc_break_exc(tx, "in");
    *out = r;
    return DYN_CALL_OK;
  }
  if (c->kind == DV_MODULE && PyObject_IsInstance(c->value, dcc.module_dict) == 1) {
    PyObject *ch, *keys;
    int rc = dc_module_children(tx, c, &ch, &keys);
    if (rc != DYN_CALL_OK) return rc;
    Py_DECREF(ch);
    PyObject* k;
    rc = dc_const_of(tx, item, &k);
    if (rc == DYN_CALL_OK) {
      *out = PySequence_Contains(keys, k) == 1;
      Py_DECREF(k);
    }
    Py_DECREF(keys);
    return rc;
  }
  if (c->kind == DV_ITER && c->extra == NULL) return dc_break(tx, "`in` on an iterator");
  PyObject* items;
  int rc;
  if (c->kind == DV_ITER) { /* a dict view: do not consume */
    items = PyList_GetSlice(c->items, c->index, PyList_GET_SIZE(c->items));
    rc = items ? DYN_CALL_OK : DYN_CALL_ERROR;
  } else {
    rc = dc_items(tx, c, &items);
  }
  if (rc != DYN_CALL_OK) return rc;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
    DynVar* e = (DynVar*)PyList_GET_ITEM(items, i);
    if (e == item) {
      *out = 1;
      break;
    }
    if (e->kind == DV_TENSOR || item->kind == DV_TENSOR) {
      rc = dc_break(tx, "`in` comparing tensors");
      break;
    }
    DynVar* eq;
    rc = dyn_compare(tx, Py_EQ, e, item, &eq);
    if (rc != DYN_CALL_OK) break;
    int t = 0;
    rc = dyn_truth(tx, eq, &t);
    Py_DECREF(eq);
    if (rc != DYN_CALL_OK) break;
    if (t) {
      *out = 1;
      break;
    }
  }
  Py_DECREF(items);
  return rc;
}

/* ---------------------------------------------------------------------------
 * Truth, iteration
 * ------------------------------------------------------------------------- */
static int type_has_len_or_bool(PyTypeObject* t) {
  return (t->tp_as_number && t->tp_as_number->nb_bool) ||
         (t->tp_as_mapping && t->tp_as_mapping->mp_length) ||
         (t->tp_as_sequence && t->tp_as_sequence->sq_length);
}

int dyn_truth(dyn_tx* tx, DynVar* v, int* out) {
  *out = 1;
  if (dc_init() < 0) return DYN_CALL_ERROR;
  switch (v->kind) {
    case DV_CONST: {
      PyObject* c = v->value;
      if (!dc_safe_const(c) && !PyType_Check(c) && !PyModule_Check(c) && !PyCallable_Check(c))
        return dc_break(tx, "truth value of a %s", Py_TYPE(c)->tp_name);
      int t = PyObject_IsTrue(c);
      if (t < 0) return dc_break_exc(tx, "bool()");
      *out = t;
      return DYN_CALL_OK;
    }
    case DV_TENSOR:
      return dc_break(tx, "data-dependent branch: truth value of a tensor");
    case DV_SYMINT: {
      PyObject* zero = PyLong_FromLong(0);
      PyObject* r = zero ? PyObject_CallMethod(tx->og, "sym_compare", "sOO", "!=", v->value, zero) : NULL;
      Py_XDECREF(zero);
      if (!r) return dc_break_exc(tx, "bool() of a dynamic size");
      *out = PyObject_IsTrue(r);
      Py_DECREF(r);
      return *out < 0 ? DYN_CALL_ERROR : DYN_CALL_OK;
    }
    case DV_TUPLE:
    case DV_LIST:
    case DV_SET:
      *out = PyList_GET_SIZE(v->items) > 0;
      return DYN_CALL_OK;
    case DV_NAMEDTUPLE: {
      PyTypeObject* t = (PyTypeObject*)v->value;
      if (t->tp_as_number && t->tp_as_number->nb_bool)
        return dc_break(tx, "truth value of a %s", t->tp_name);
      *out = PyList_GET_SIZE(v->items) > 0;
      return DYN_CALL_OK;
    }
    case DV_DICT:
      *out = PyDict_Size(v->items) > 0;
      return DYN_CALL_OK;
    case DV_RANGE:
      *out = PyObject_IsTrue(v->value);
      return *out < 0 ? DYN_CALL_ERROR : DYN_CALL_OK;
    case DV_FUNCTION:
    case DV_METHOD:
    case DV_SLICE:
    case DV_GRAD_CTX:
      *out = 1;
      return DYN_CALL_OK;
    case DV_MODULE: {
      PyTypeObject* t = Py_TYPE(v->value);
      if (PyObject_IsInstance(v->value, dcc.module_list) == 1 ||
          PyObject_IsInstance(v->value, dcc.sequential) == 1 ||
          PyObject_IsInstance(v->value, dcc.module_dict) == 1) {
        PyObject *ch, *keys;
        int rc = dc_module_children(tx, v, &ch, &keys);
        if (rc != DYN_CALL_OK) return rc;
        *out = PyList_GET_SIZE(ch) > 0;
        Py_DECREF(ch);
        Py_XDECREF(keys);
        return DYN_CALL_OK;
      }
      if (type_has_len_or_bool(t)) return dc_break(tx, "truth value of a %s", t->tp_name);
      *out = 1;
      return DYN_CALL_OK;
    }
    case DV_OBJECT: {
      if (!v->value) return dc_break(tx, "truth value of an unsupported value");
      PyTypeObject* t = Py_TYPE(v->value);
      if (!type_has_len_or_bool(t)) {
        *out = 1;
        return DYN_CALL_OK;
      }
      /* a dict/list subclass (OrderedDict...) without Python __bool__/__len__:
       * its length, guarded by a truth guard re-read on every call */
      Py_ssize_t len;
      int r = dc_base_len(v, &len);
      if (r < 0) return DYN_CALL_ERROR;
      if (!r) return dc_break(tx, "truth value of a %s (user __bool__/__len__)", t->tp_name);
      DynSource* s = dc_source_of(v);
      if (!s) return DYN_CALL_ERROR;
      r = dyn_guards_add(tx->guards, DG_TRUTH, s, NULL, len > 0);
      Py_DECREF(s);
      if (r < 0) return DYN_CALL_ERROR;
      *out = len > 0;
      return DYN_CALL_OK;
    }
    default:
      return dc_break(tx, "truth value of a %s", dyn_var_kind_name(v));
  }
}

int dyn_iter(dyn_tx* tx, DynVar* v, DynVar** out) {
  *out = NULL;
  if (dc_init() < 0) return DYN_CALL_ERROR;
  if (v->kind == DV_ITER && !(v->extra && PyUnicode_Check(v->extra))) {
    Py_INCREF(v);
    *out = v;
    return DYN_CALL_OK;
  }
  PyObject* items;
  if (v->kind == DV_ITER) { /* a dict view: a fresh iterator each time */
    items = PyList_GetSlice(v->items, v->index, PyList_GET_SIZE(v->items));
    if (!items) return DYN_CALL_ERROR;
  } else if (v->kind == DV_LIST) { /* shares the list's items: mutations are seen */
    items = v->items;
    Py_INCREF(items);
  } else {
    int rc = dc_items(tx, v, &items);
    if (rc != DYN_CALL_OK) return rc;
  }
  *out = dyn_var_new(DV_ITER, NULL, items, NULL, NULL);
  Py_DECREF(items);
  if (!*out) return DYN_CALL_ERROR;
  (*out)->index = 0;
  (*out)->created = 1;
  if (v->kind == DV_DICT && dc_watch(tx, v, *out) < 0) {
    Py_CLEAR(*out);
    return DYN_CALL_ERROR;
  }
  return DYN_CALL_OK;
}

/* ---------------------------------------------------------------------------
 * Subscripts
 * ------------------------------------------------------------------------- */
static int norm_index(dyn_tx* tx, DynVar* key, Py_ssize_t n, Py_ssize_t* idx) {
  PyObject* k;
  int rc = dc_as_int(tx, key, &k);
  if (rc != DYN_CALL_OK) return rc;
  Py_ssize_t i = PyLong_AsSsize_t(k);
  Py_DECREF(k);
  if (i == -1 && PyErr_Occurred()) return dc_break_exc(tx, "index");
  if (i < 0) i += n;
  if (i < 0 || i >= n) return dc_break(tx, "index out of range (IndexError in Python)");
  *idx = i;
  return DYN_CALL_OK;
}

static int slice_of(dyn_tx* tx, DynVar* key, PyObject** out) {
  PyObject* p[3] = {NULL, NULL, NULL};
  int rc = DYN_CALL_OK;
  for (int i = 0; i < 3 && rc == DYN_CALL_OK; i++) {
    DynVar* x = (DynVar*)PyList_GET_ITEM(key->items, i);
    if (x->kind == DV_CONST && x->value == Py_None) {
      Py_INCREF(Py_None);
      p[i] = Py_None;
    } else {
      rc = dc_as_int(tx, x, &p[i]);
    }
  }
  if (rc == DYN_CALL_OK) {
    *out = PySlice_New(p[0], p[1], p[2]);
    if (!*out) rc = DYN_CALL_ERROR;
  }
  for (int i = 0; i < 3; i++) Py_XDECREF(p[i]);
  return rc;
}

static int seq_subscr(dyn_tx* tx, DynVar* obj, DynVar* key, DynVar** out) {
  Py_ssize_t n = PyList_GET_SIZE(obj->items);
  if (key->kind == DV_SLICE) {
    PyObject* sl;
    int rc = slice_of(tx, key, &sl);
    if (rc != DYN_CALL_OK) return rc;
    PyObject* r = PyObject_GetItem(obj->items, sl);
    Py_DECREF(sl);
    if (!r) return dc_break_exc(tx, "slice");
    *out = dc_seq(obj->kind == DV_LIST ? DV_LIST : DV_TUPLE, r);
    Py_DECREF(r);
    if (*out && obj->kind == DV_TUPLE && obj->extra == dcc.torch_size) {
      Py_INCREF(dcc.torch_size);
      (*out)->extra = dcc.torch_size;
    }
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  if (key->kind == DV_CONST && key->value != Py_None && !PyLong_Check(key->value))
    return dc_break(tx, "%s index of type %s", dyn_var_kind_name(obj), Py_TYPE(key->value)->tp_name);
  Py_ssize_t i;
  int rc = norm_index(tx, key, n, &i);
  if (rc != DYN_CALL_OK) return rc;
  *out = (DynVar*)PyList_GET_ITEM(obj->items, i);
  Py_INCREF(*out);
  return DYN_CALL_OK;
}

int dyn_subscr(dyn_tx* tx, DynVar* obj, DynVar* key, DynVar** out) {
  *out = NULL;
  if (dc_init() < 0) return DYN_CALL_ERROR;
  if (dc_is_view(obj)) return dc_break(tx, "subscript of a dict view (TypeError in Python)");
  switch (obj->kind) {
    case DV_TENSOR: {
      PyObject* f = PyObject_GetAttrString(dcc.operator_mod, "getitem");
      if (!f) return DYN_CALL_ERROR;
      DynVar* args[2] = {obj, key};
      int rc = dc_og_call(tx, "call_function", f, args, 2, NULL, "tensor[...]", out);
      Py_DECREF(f);
      return rc;
    }
    case DV_TUPLE:
    case DV_LIST:
    case DV_NAMEDTUPLE:
      return seq_subscr(tx, obj, key, out);
    case DV_DICT: {
      PyObject* k;
      int rc = dc_const_of(tx, key, &k);
      if (rc != DYN_CALL_OK) return rc;
      PyObject* v = PyDict_GetItemWithError(obj->items, k);
      Py_DECREF(k);
      if (!v) {
        if (PyErr_Occurred()) return dc_break_exc(tx, "dict[...]");
        return dc_break(tx, "dict key not found (KeyError in Python)");
      }
      Py_INCREF(v);
      *out = (DynVar*)v;
      return DYN_CALL_OK;
    }
    case DV_CONST:
    case DV_RANGE: {
      if (obj->kind == DV_CONST && !dc_safe_const(obj->value))
        return dc_break(tx, "subscript of a %s", Py_TYPE(obj->value)->tp_name);
      PyObject* k;
      int rc;
      if (key->kind == DV_SLICE) rc = slice_of(tx, key, &k);
      else rc = dc_const_of(tx, key, &k);
      if (rc != DYN_CALL_OK) return rc;
      PyObject* r = PyObject_GetItem(obj->value, k);
      Py_DECREF(k);
      if (!r) return dc_break_exc(tx, "subscript");
      if (PyRange_Check(r)) {
        *out = dyn_var_new(DV_RANGE, r, NULL, NULL, NULL);
        Py_DECREF(r);
        return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
      }
      return dc_const_result(tx, r, "subscript", out);
    }
    case DV_MODULE: {
      PyTypeObject* t = Py_TYPE(obj->value);
      PyObject* gi = PyObject_GetAttrString((PyObject*)t, "__getitem__");
      if (!gi) {
        PyErr_Clear();
        return dc_break(tx, "subscript of a %s", t->tp_name);
      }
      PyObject* ml = PyObject_GetAttrString(dcc.module_list, "__getitem__");
      PyObject* sq = PyObject_GetAttrString(dcc.sequential, "__getitem__");
      PyObject* md = PyObject_GetAttrString(dcc.module_dict, "__getitem__");
      int known = gi == ml || gi == sq || gi == md;
      int is_dict = gi == md;
      Py_DECREF(gi);
      Py_XDECREF(ml);
      Py_XDECREF(sq);
      Py_XDECREF(md);
      if (!known) return dc_break(tx, "subscript of a %s (custom __getitem__)", t->tp_name);
      PyObject *ch, *keys;
      int rc = dc_module_children(tx, obj, &ch, &keys);
      if (rc != DYN_CALL_OK) return rc;
      if (is_dict) {
        PyObject* k = NULL;
        rc = dc_const_of(tx, key, &k);
        Py_ssize_t pos = -1;
        if (rc == DYN_CALL_OK) {
          for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys); i++)
            if (PyObject_RichCompareBool(PyList_GET_ITEM(keys, i), k, Py_EQ) == 1) pos = i;
          if (pos < 0) rc = dc_break(tx, "ModuleDict key not found");
        }
        Py_XDECREF(k);
        if (rc == DYN_CALL_OK) {
          *out = (DynVar*)PyList_GET_ITEM(ch, pos);
          Py_INCREF(*out);
        }
      } else if (key->kind == DV_SLICE) {
        rc = dc_break(tx, "slicing a %s", t->tp_name);
      } else {
        Py_ssize_t i;
        rc = norm_index(tx, key, PyList_GET_SIZE(ch), &i);
        if (rc == DYN_CALL_OK) {
          *out = (DynVar*)PyList_GET_ITEM(ch, i);
          Py_INCREF(*out);
        }
      }
      Py_DECREF(ch);
      Py_XDECREF(keys);
      return rc;
    }
    default:
      return dc_break(tx, "subscript of a %s", dyn_var_kind_name(obj));
  }
}

int dyn_store_subscr(dyn_tx* tx, DynVar* obj, DynVar* key, DynVar* value) {
  if (dc_init() < 0) return DYN_CALL_ERROR;
  if (obj->kind == DV_TENSOR) {
    int rc = dc_check_inplace(tx, obj, "tensor[...] = value");
    if (rc != DYN_CALL_OK) return rc;
    PyObject* f = PyObject_GetAttrString(dcc.operator_mod, "setitem");
    if (!f) return DYN_CALL_ERROR;
    DynVar* args[3] = {obj, key, value};
    DynVar* r = NULL;
    rc = dc_og_call(tx, "call_function", f, args, 3, NULL, "tensor[...] = value", &r);
    Py_DECREF(f);
    Py_XDECREF(r);
    return rc;
  }
  if (obj->kind == DV_LIST || obj->kind == DV_DICT) {
    int rc = dc_check_watch(tx, obj);
    if (rc != DYN_CALL_OK) return rc;
  }
  if (obj->kind == DV_LIST) {
    if (key->kind == DV_SLICE) return dc_break(tx, "slice assignment to a list");
    Py_ssize_t i;
    int rc = norm_index(tx, key, PyList_GET_SIZE(obj->items), &i);
    if (rc != DYN_CALL_OK) return rc;
    Py_INCREF(value);
    PyList_SetItem(obj->items, i, (PyObject*)value);
    return dc_mark_mutated(tx, obj) < 0 ? DYN_CALL_ERROR : DYN_CALL_OK;
  }
  if (obj->kind == DV_DICT) {
    PyObject* k;
    int rc = dc_const_of(tx, key, &k);
    if (rc != DYN_CALL_OK) return rc;
    int e = PyDict_SetItem(obj->items, k, (PyObject*)value);
    Py_DECREF(k);
    if (e < 0) return dc_break_exc(tx, "dict[...] = value");
    return dc_mark_mutated(tx, obj) < 0 || dc_dict_changed(obj) < 0 ? DYN_CALL_ERROR : DYN_CALL_OK;
  }
  return dc_break(tx, "item assignment on a %s", dyn_var_kind_name(obj));
}

