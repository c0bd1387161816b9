/* dyn_call_obj.c - the object side of dyn_call.c (issue 6 bytecode capture):
 * methods of builtin containers and constants (list.append, dict.items,
 * str.join, ...), nn.Module trackers (mapped modules become call_module
 * graph ops, others inline type(m).forward; attributes: submodules,
 * parameters/buffers, plain attributes, module containers), and user objects
 * (attribute reads through sources, writes tracked as side effects).
 * Anything whose Python semantics are not reproduced exactly breaks. */
#include "dyn_call_int.h"

#include <structmember.h> /* PyMemberDef (3.11) */

#include <string.h>

/* 1 when type t uses object.__getattribute__ / object.__setattr__ (a
 * Python __getattr__ fallback is checked separately). */
int dc_uses_object_slot(PyTypeObject* t, const char* slot) {
  if (slot[2] == 'g' && t->tp_getattro == PyObject_GenericGetAttr) return 1;
  if (slot[2] == 's' && t->tp_setattro == PyObject_GenericSetAttr) return 1;
  PyObject* name = PyUnicode_InternFromString(slot);
  if (!name) {
    PyErr_Clear();
    return 0;
  }
  PyObject* mine = _PyType_Lookup(t, name);
  PyObject* base = _PyType_Lookup(&PyBaseObject_Type, name);
  Py_DECREF(name);
  return mine && mine == base;
}

/* The truth/length slots of t are each NULL or one of its C base b's own
 * (a Python subclass may get the base's C function in a slot the base left
 * empty, e.g. dict's len also as sq_length); a Python __bool__/__len__
 * puts a slot wrapper there instead. */
static int same_len_slots(PyTypeObject* t, PyTypeObject* b) {
#define DC_SLOT(tp, s, f) ((tp)->s ? (void*)(tp)->s->f : NULL)
  void* mine[3] = {DC_SLOT(t, tp_as_number, nb_bool), DC_SLOT(t, tp_as_mapping, mp_length),
                   DC_SLOT(t, tp_as_sequence, sq_length)};
  void* base[3] = {DC_SLOT(b, tp_as_number, nb_bool), DC_SLOT(b, tp_as_mapping, mp_length),
                   DC_SLOT(b, tp_as_sequence, sq_length)};
#undef DC_SLOT
  for (int i = 0; i < 3; i++) {
    int ok = mine[i] == NULL;
    for (int j = 0; j < 3 && !ok; j++) ok = base[j] && mine[i] == base[j];
    if (!ok) return 0;
  }
  return 1;
}

int dc_base_len(DynVar* v, Py_ssize_t* n) {
  *n = 0;
  if (v->kind != DV_OBJECT || !v->value || (v->extra && PyUnicode_Check(v->extra))) return 0;
  PyTypeObject* t = Py_TYPE(v->value);
  PyTypeObject* const bases[] = {&PyDict_Type, &PyList_Type, &PyTuple_Type, &PySet_Type,
                                 &PyFrozenSet_Type};
  PyTypeObject* b = NULL;
  for (size_t i = 0; i < sizeof bases / sizeof bases[0] && !b; i++)
    if (PyType_IsSubtype(t, bases[i])) b = bases[i];
  if (!b || !same_len_slots(t, b)) return 0;
  *n = PyObject_Length(v->value); /* the C base's slot: no Python code runs */
  return *n < 0 ? -1 : 1;
}

/* A value read through a custom getattr that may be used as a guarded
 * constant: safe constants, classes, Python modules, functions. */
static int real_attr_usable(PyObject* r) {
  return dc_safe_const(r) || PyType_Check(r) || PyModule_Check(r) || PyFunction_Check(r) ||
         PyCFunction_Check(r);
}

int dc_getattr_real(dyn_tx* tx, DynVar* obj, PyObject* name, DynVar** out, int* missing) {
  *out = NULL;
  *missing = 0;
  PyObject* o = obj->value;
  const char* tn = o ? Py_TYPE(o)->tp_name : "?";
  if (!o || (obj->extra && PyUnicode_Check(obj->extra)))
    return dc_break(tx, "attribute .%U of an unsupported value", name);
  /* writes made by the trace are not visible to the real getattr */
  if (obj->items && PyDict_Check(obj->items) && PyDict_GET_SIZE(obj->items))
    return dc_break(tx, "attribute .%U of a %s (custom getattr) after an attribute write", name, tn);
  PyObject* r = PyObject_GetAttr(o, name);
  if (!r) {
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
      PyErr_Clear();
      *missing = 1;
      return DYN_CALL_OK;
    }
    return dc_break_exc(tx, "custom getattr");
  }
  if (!real_attr_usable(r)) {
    int rc = dc_break(tx, "attribute .%U of a %s (custom getattr) is a %s", name, tn,
                      Py_TYPE(r)->tp_name);
    Py_DECREF(r);
    return rc;
  }
  int rc = dc_wrap_attr(tx, obj, o, name, r, out);
  Py_DECREF(r);
  return rc;
}

/* ---------------------------------------------------------------------------
 * Methods of builtin containers and constants
 * ------------------------------------------------------------------------- */
static int eq_index(dyn_tx* tx, PyObject* items, DynVar* x, Py_ssize_t* pos, Py_ssize_t* count) {
  *pos = -1;
  if (count) *count = 0;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
    DynVar* e = (DynVar*)PyList_GET_ITEM(items, i);
    int t = 0;
    if (e == x) {
      t = 1;
    } else {
      if (e->kind == DV_TENSOR || x->kind == DV_TENSOR) return dc_break(tx, "comparing tensors by ==");
      DynVar* c;
      int rc = dyn_compare(tx, Py_EQ, e, x, &c);
      if (rc != DYN_CALL_OK) return rc;
      rc = dyn_truth(tx, c, &t);
      Py_DECREF(c);
      if (rc != DYN_CALL_OK) return rc;
    }
    if (t) {
      if (*pos < 0) *pos = i;
      if (!count) return DYN_CALL_OK;
      (*count)++;
    }
  }
  return DYN_CALL_OK;
}

static int list_method(dyn_tx* tx, const char* m, DynVar* self, DynVar* const* a, Py_ssize_t n,
                       DynVar** out) {
  PyObject* L = self->items;
  Py_ssize_t len = PyList_GET_SIZE(L);
  int mut = 0, rc = DYN_CALL_OK;
  if (strcmp(m, "index") && strcmp(m, "count") && strcmp(m, "copy")) {
    rc = dc_check_watch(tx, self);
    if (rc != DYN_CALL_OK) return rc;
  }
  if (!strcmp(m, "append") && n == 1) {
    if (PyList_Append(L, (PyObject*)a[0]) < 0) return DYN_CALL_ERROR;
    mut = 1;
  } else if (!strcmp(m, "extend") && n == 1) {
    PyObject* items;
    rc = dc_items(tx, a[0], &items);
    if (rc != DYN_CALL_OK) return rc;
    int e = PyList_SetSlice(L, len, len, items);
    Py_DECREF(items);
    if (e < 0) return DYN_CALL_ERROR;
    mut = 1;
  } else if (!strcmp(m, "insert") && n == 2) {
    PyObject* i;
    rc = dc_as_int(tx, a[0], &i);
    if (rc != DYN_CALL_OK) return rc;
    Py_ssize_t idx = PyLong_AsSsize_t(i);
    Py_DECREF(i);
    if (PyList_Insert(L, idx, (PyObject*)a[1]) < 0) return DYN_CALL_ERROR;
    mut = 1;
  } else if (!strcmp(m, "pop") && n <= 1) {
    Py_ssize_t idx = len - 1;
    if (n == 1) {
      PyObject* i;
      rc = dc_as_int(tx, a[0], &i);
      if (rc != DYN_CALL_OK) return rc;
      idx = PyLong_AsSsize_t(i);
      Py_DECREF(i);
      if (idx < 0) idx += len;
    }
    if (idx < 0 || idx >= len) return dc_break(tx, "list.pop index out of range (IndexError)");
    *out = (DynVar*)PyList_GET_ITEM(L, idx);
    Py_INCREF(*out);
    if (PyList_SetSlice(L, idx, idx + 1, NULL) < 0) return DYN_CALL_ERROR;
    return dc_mark_mutated(tx, self) < 0 ? DYN_CALL_ERROR : DYN_CALL_OK;
  } else if ((!strcmp(m, "remove") || !strcmp(m, "index") || !strcmp(m, "count")) && n == 1) {
    Py_ssize_t pos, count;
    rc = eq_index(tx, L, a[0], &pos, !strcmp(m, "count") ? &count : NULL);
    if (rc != DYN_CALL_OK) return rc;
    if (!strcmp(m, "count")) {
      PyObject* c = PyLong_FromSsize_t(count);
      *out = c ? dyn_var_const(c) : NULL;
      Py_XDECREF(c);
      return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
    }
    if (pos < 0) return dc_break(tx, "list.%s: value not in list (ValueError)", m);
    if (!strcmp(m, "index")) {
      PyObject* c = PyLong_FromSsize_t(pos);
      *out = c ? dyn_var_const(c) : NULL;
      Py_XDECREF(c);
      return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
    }
    if (PyList_SetSlice(L, pos, pos + 1, NULL) < 0) return DYN_CALL_ERROR;
    mut = 1;
  } else if (!strcmp(m, "copy") && n == 0) {
    PyObject* c = PyList_GetSlice(L, 0, len);
    *out = c ? dc_seq(DV_LIST, c) : NULL;
    Py_XDECREF(c);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  } else if (!strcmp(m, "reverse") && n == 0) {
    if (PyList_Reverse(L) < 0) return DYN_CALL_ERROR;
    mut = 1;
  } else if (!strcmp(m, "clear") && n == 0) {
    if (PyList_SetSlice(L, 0, len, NULL) < 0) return DYN_CALL_ERROR;
    mut = 1;
  } else if (!strcmp(m, "sort") && n == 0) {
    DynVar* tv = dc_seq(DV_TUPLE, L);
    if (!tv) return DYN_CALL_ERROR;
    PyObject* c;
    rc = dc_const_of(tx, tv, &c);
    Py_DECREF(tv);
    if (rc != DYN_CALL_OK) return rc;
    PyObject* l = PySequence_List(c);
    Py_DECREF(c);
    if (!l || PyList_Sort(l) < 0) {
      Py_XDECREF(l);
      return dc_break_exc(tx, "list.sort()");
    }
    PyObject* cl = PyList_New(PyList_GET_SIZE(l));
    for (Py_ssize_t i = 0; cl && i < PyList_GET_SIZE(l); i++) {
      DynVar* cv = dyn_var_const(PyList_GET_ITEM(l, i));
      if (!cv) Py_CLEAR(cl);
      else PyList_SET_ITEM(cl, i, (PyObject*)cv);
    }
    Py_DECREF(l);
    if (!cl) return DYN_CALL_ERROR;
    int e = PyList_SetSlice(L, 0, len, cl);
    Py_DECREF(cl);
    if (e < 0) return DYN_CALL_ERROR;
    mut = 1;
  } else {
    return dc_break(tx, "list.%s() with these arguments", m);
  }
  if (mut && dc_mark_mutated(tx, self) < 0) return DYN_CALL_ERROR;
  return out_const(Py_None, out);
}

/* The items of a view (`which` = "dict_keys"/"dict_values"/"dict_items")
 * of dict tracker `d` (new list). */
static PyObject* view_items(DynVar* d, const char* which) {
  PyObject* l = PyList_New(0);
  Py_ssize_t pos = 0;
  PyObject *k, *v;
  while (l && PyDict_Next(d->items, &pos, &k, &v)) {
    DynVar* kv = dyn_var_const(k);
    DynVar* e = NULL;
    if (kv) {
      if (which[5] == 'k') {
        e = kv;
        Py_INCREF(e);
      } else if (which[5] == 'v') {
        e = (DynVar*)v;
        Py_INCREF(e);
      } else {
        e = tuple_of(kv, (DynVar*)v);
      }
    }
    Py_XDECREF(kv);
    if (!e || PyList_Append(l, (PyObject*)e) < 0) Py_CLEAR(l);
    Py_XDECREF(e);
  }
  return l;
}

/* d.keys()/values()/items(): a DV_TUPLE snapshot marked with the view's
 * name (extra, a str: the output refuses to rebuild it, ops other than
 * iteration/len/in break), registered in d->extra (a list of its views) so
 * that later mutations of d refresh it (views are live in Python). */
static int dict_view(dyn_tx* tx, DynVar* self, const char* which, DynVar** out) {
  (void)tx;
  PyObject* l = view_items(self, which);
  if (!l) return DYN_CALL_ERROR;
  *out = dc_seq(DV_TUPLE, l);
  Py_DECREF(l);
  if (!*out) return DYN_CALL_ERROR;
  (*out)->extra = PyUnicode_FromString(which);
  if (!(*out)->extra) {
    Py_CLEAR(*out);
    return DYN_CALL_ERROR;
  }
  if (!self->extra) {
    self->extra = PyList_New(0);
    if (!self->extra) return DYN_CALL_ERROR;
  }
  if (!PyList_Check(self->extra) || PyList_Append(self->extra, (PyObject*)*out) < 0) {
    Py_CLEAR(*out);
    return PyErr_Occurred() ? DYN_CALL_ERROR : dc_break(tx, "view of an unusual dict");
  }
  return DYN_CALL_OK;
}

int dc_dict_changed(DynVar* d) {
  if (!d->extra || !PyList_Check(d->extra)) return 0;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(d->extra); i++) {
    DynVar* v = (DynVar*)PyList_GET_ITEM(d->extra, i);
    PyObject* l = view_items(d, PyUnicode_AsUTF8(v->extra));
    if (!l) return -1;
    int r = PyList_SetSlice(v->items, 0, PyList_GET_SIZE(v->items), l);
    Py_DECREF(l);
    if (r < 0) return -1;
  }
  return 0;
}

static int dict_method(dyn_tx* tx, const char* m, DynVar* self, DynVar* const* a, Py_ssize_t n,
                       PyObject* kwargs, DynVar** out) {
  PyObject* D = self->items;
  if (!strcmp(m, "update") || !strcmp(m, "clear") || !strcmp(m, "pop") || !strcmp(m, "setdefault")) {
    int rc = dc_check_watch(tx, self);
    if (rc != DYN_CALL_OK) return rc;
  }
  if (!strcmp(m, "items") && n == 0) return dict_view(tx, self, "dict_items", out);
  if (!strcmp(m, "keys") && n == 0) return dict_view(tx, self, "dict_keys", out);
  if (!strcmp(m, "values") && n == 0) return dict_view(tx, self, "dict_values", out);
  if (!strcmp(m, "copy") && n == 0) {
    PyObject* c = PyDict_Copy(D);
    *out = c ? new_dict(c) : NULL;
    Py_XDECREF(c);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  if (!strcmp(m, "update") && n <= 1) {
    if (n == 1) {
      if (a[0]->kind != DV_DICT) return dc_break(tx, "dict.update from a %s", dyn_var_kind_name(a[0]));
      if (PyDict_Update(D, a[0]->items) < 0) return DYN_CALL_ERROR;
    }
    if (kwargs && PyDict_Update(D, kwargs) < 0) return DYN_CALL_ERROR;
    if (dc_mark_mutated(tx, self) < 0 || dc_dict_changed(self) < 0) return DYN_CALL_ERROR;
    return out_const(Py_None, out);
  }
  if (!strcmp(m, "clear") && n == 0) {
    PyDict_Clear(D);
    if (dc_mark_mutated(tx, self) < 0 || dc_dict_changed(self) < 0) return DYN_CALL_ERROR;
    return out_const(Py_None, out);
  }
  if ((!strcmp(m, "get") || !strcmp(m, "pop") || !strcmp(m, "setdefault") ||
       !strcmp(m, "__getitem__") || !strcmp(m, "__contains__")) &&
      n >= 1 && n <= 2) {
    PyObject* k;
    int rc = dc_const_of(tx, a[0], &k);
    if (rc != DYN_CALL_OK) return rc;
    PyObject* v = PyDict_GetItemWithError(D, k);
    if (!v && PyErr_Occurred()) {
      Py_DECREF(k);
      return dc_break_exc(tx, "dict key");
    }
    if (!strcmp(m, "__contains__")) {
      Py_DECREF(k);
      return out_bool(v != NULL, out);
    }
    rc = DYN_CALL_OK;
    if (v) {
      Py_INCREF(v);
      *out = (DynVar*)v;
      if (!strcmp(m, "pop")) {
        if (PyDict_DelItem(D, k) < 0 || dc_mark_mutated(tx, self) < 0 || dc_dict_changed(self) < 0)
          rc = DYN_CALL_ERROR;
      }
    } else if (n == 2) {
      Py_INCREF(a[1]);
      *out = a[1];
      if (!strcmp(m, "setdefault")) {
        if (PyDict_SetItem(D, k, (PyObject*)a[1]) < 0 || dc_mark_mutated(tx, self) < 0 ||
            dc_dict_changed(self) < 0)
          rc = DYN_CALL_ERROR;
      }
    } else if (!strcmp(m, "get")) {
      rc = out_const(Py_None, out);
    } else if (!strcmp(m, "setdefault")) {
      DynVar* none = dyn_var_const(Py_None);
      if (!none || PyDict_SetItem(D, k, (PyObject*)none) < 0 || dc_mark_mutated(tx, self) < 0 ||
          dc_dict_changed(self) < 0)
        rc = DYN_CALL_ERROR;
      *out = none;
    } else {
      rc = dc_break(tx, "dict.%s: key not found (KeyError)", m);
    }
    Py_DECREF(k);
    if (rc != DYN_CALL_OK) Py_CLEAR(*out);
    return rc;
  }
  return dc_break(tx, "dict.%s() with these arguments", m);
}

static int set_method(dyn_tx* tx, const char* m, DynVar* self, DynVar* const* a, Py_ssize_t n,
                      DynVar** out) {
  if (!strcmp(m, "add") && n == 1) {
    if (a[0]->kind != DV_CONST) return dc_break(tx, "set.add of a %s", dyn_var_kind_name(a[0]));
    Py_ssize_t pos;
    int rc = eq_index(tx, self->items, a[0], &pos, NULL);
    if (rc != DYN_CALL_OK) return rc;
    if (pos < 0) {
      if (self->source && !self->created) return dc_break(tx, "mutating a set that existed before");
      if (PyList_Append(self->items, (PyObject*)a[0]) < 0) return DYN_CALL_ERROR;
    }
    return out_const(Py_None, out);
  }
  return dc_break(tx, "set.%s()", m);
}

static int tuple_method(dyn_tx* tx, const char* m, DynVar* self, DynVar* const* a, Py_ssize_t n,
                        DynVar** out) {
  if ((!strcmp(m, "index") || !strcmp(m, "count")) && n == 1) {
    Py_ssize_t pos, count;
    int rc = eq_index(tx, self->items, a[0], &pos, !strcmp(m, "count") ? &count : NULL);
    if (rc != DYN_CALL_OK) return rc;
    if (!strcmp(m, "index") && pos < 0) return dc_break(tx, "tuple.index: not found (ValueError)");
    PyObject* c = PyLong_FromSsize_t(!strcmp(m, "count") ? count : pos);
    int r2 = c ? out_const(c, out) : DYN_CALL_ERROR;
    Py_XDECREF(c);
    return r2;
  }
  return dc_break(tx, "tuple.%s()", m);
}

static int is_immutable_builtin_type(PyObject* t) {
  return t == (PyObject*)&PyUnicode_Type || t == (PyObject*)&PyLong_Type ||
         t == (PyObject*)&PyFloat_Type || t == (PyObject*)&PyBytes_Type ||
         t == (PyObject*)&PyTuple_Type || t == (PyObject*)&PyComplex_Type ||
         t == (PyObject*)&PyBool_Type || t == (PyObject*)&PyFrozenSet_Type ||
         t == (PyObject*)&PyRange_Type || t == dcc.torch_size || t == dcc.torch_dtype ||
         t == dcc.torch_device;
}

int dc_call_descr(dyn_tx* tx, PyObject* fn, DynVar* const* a, Py_ssize_t n, PyObject* kwargs,
                  DynVar** out) {
  PyTypeObject* ft = Py_TYPE(fn);
  if (ft != &PyMethodDescr_Type && ft != &PyWrapperDescr_Type) return -2;
  PyObject* type = (PyObject*)PyDescr_TYPE(fn);
  PyObject* nameo = PyDescr_NAME(fn);
  const char* m = PyUnicode_AsUTF8(nameo);
  if (!m) return DYN_CALL_ERROR;
  if (n < 1) return dc_break(tx, "%s.%s() without self", ((PyTypeObject*)type)->tp_name, m);
  DynVar* self = a[0];
  int has_kw = kwargs && PyDict_Size(kwargs);
  if (type == (PyObject*)&PyList_Type && self->kind == DV_LIST && !has_kw)
    return list_method(tx, m, self, a + 1, n - 1, out);
  if (type == (PyObject*)&PyDict_Type && self->kind == DV_DICT)
    return dict_method(tx, m, self, a + 1, n - 1, kwargs, out);
  if (type == (PyObject*)&PySet_Type && self->kind == DV_SET && !has_kw)
    return set_method(tx, m, self, a + 1, n - 1, out);
  if (type == (PyObject*)&PyTuple_Type && !has_kw &&
      (self->kind == DV_TUPLE || self->kind == DV_NAMEDTUPLE))
    return tuple_method(tx, m, self, a + 1, n - 1, out);
  if (is_immutable_builtin_type(type) && self->kind == DV_CONST &&
      PyObject_TypeCheck(self->value, (PyTypeObject*)type)) {
    char what[96];
    snprintf(what, sizeof what, "%s.%s", ((PyTypeObject*)type)->tp_name, m);
    return dc_call_real_consts(tx, fn, a, n, kwargs, what, out);
  }
  if (is_immutable_builtin_type(type) && (self->kind == DV_TUPLE || self->kind == DV_SYMINT) &&
      !has_kw) {
    /* a tuple with symbolic items / a dynamic size: on their constant form
     * (sizes specialised, guards recorded) */
    PyObject* c;
    int rc = dc_const_of(tx, self, &c);
    if (rc != DYN_CALL_OK) return rc;
    DynVar* cv = dyn_var_const(c);
    Py_DECREF(c);
    if (!cv) return DYN_CALL_ERROR;
    DynVar** all = PyMem_Malloc(sizeof(DynVar*) * (size_t)n);
    if (!all) {
      Py_DECREF(cv);
      return DYN_CALL_ERROR;
    }
    all[0] = cv;
    for (Py_ssize_t i = 1; i < n; i++) all[i] = a[i];
    rc = dc_call_real_consts(tx, fn, all, n, NULL, m, out);
    PyMem_Free(all);
    Py_DECREF(cv);
    return rc;
  }
  return dc_break(tx, "method %s.%s on a %s", ((PyTypeObject*)type)->tp_name, m,
                  dyn_var_kind_name(self));
}

/* ---------------------------------------------------------------------------
 * Attributes of builtin values
 * ------------------------------------------------------------------------- */
static int method_of(PyObject* descr, DynVar* self, DynVar** out) {
  DynVar* fv = dyn_var_const(descr);
  if (!fv) return DYN_CALL_ERROR;
  *out = dyn_var_new(DV_METHOD, (PyObject*)fv, NULL, (PyObject*)self, NULL);
  Py_DECREF(fv);
  return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
}

static int is_method_descr(PyObject* d) {
  return Py_TYPE(d) == &PyMethodDescr_Type || Py_TYPE(d) == &PyWrapperDescr_Type;
}

int dc_class_func(dyn_tx* tx, DynVar* obj, PyObject* func, PyObject* name, DynVar** out) {
  DynSource* s = obj->source;
  DynSource* fs = NULL;
  if (s) {
    /* special methods are looked up on the type; others as Python does
     * (an instance attribute shadows the method): the guard is then
     * getattr(obj, name).__func__ is func, which also fails when the
     * instance attribute is not a bound method */
    const char* nm = PyUnicode_AsUTF8(name);
    int special = nm && nm[0] == '_' && nm[1] == '_';
    PyObject* fn = special ? NULL : PyUnicode_FromString("__func__");
    DynSource* ts = special ? dyn_source_type(s) : dyn_source_attr(s, name);
    if (ts) fs = special ? dyn_source_attr(ts, name) : (fn ? dyn_source_attr(ts, fn) : NULL);
    Py_XDECREF(ts);
    Py_XDECREF(fn);
    if (!fs) return DYN_CALL_ERROR;
    if (dyn_guards_add(tx->guards, DG_ID, fs, func, 0) < 0) {
      Py_DECREF(fs);
      return DYN_CALL_ERROR;
    }
  }
  *out = dyn_var_new(DV_FUNCTION, func, NULL, NULL, fs);
  Py_XDECREF(fs);
  return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
}

/* A class attribute found on `cls` (borrowed) for instance tracker `obj`. */
static int is_container_fn(PyObject* f) {
  PyObject* nameo = ((PyFunctionObject*)f)->func_name;
  PyObject* bases[3] = {dcc.module_list, dcc.sequential, dcc.module_dict};
  int hit = 0;
  for (int i = 0; i < 3 && !hit; i++) {
    PyObject* bf = PyObject_GetAttr(bases[i], nameo);
    if (!bf) PyErr_Clear();
    hit = bf == f;
    Py_XDECREF(bf);
  }
  return hit;
}

/* Identity guard on getattr(obj or type(obj), name)[.sub] (nothing when
 * obj has no source: it is then a fixed object). 0 / -1. */
static int guard_id_path(dyn_tx* tx, DynVar* obj, int on_type, PyObject* name, const char* sub,
                         PyObject* expected) {
  if (!obj->source) return 0;
  DynSource* base = on_type ? dyn_source_type(obj->source) : (Py_INCREF(obj->source), obj->source);
  DynSource* s1 = base ? dyn_source_attr(base, name) : NULL;
  Py_XDECREF(base);
  if (!s1) return -1;
  DynSource* s = s1;
  if (sub) {
    PyObject* sn = PyUnicode_FromString(sub);
    s = sn ? dyn_source_attr(s1, sn) : NULL;
    Py_XDECREF(sn);
    Py_DECREF(s1);
    if (!s) return -1;
  }
  int r = dyn_guards_add(tx->guards, DG_ID, s, expected, 0);
  Py_DECREF(s);
  return r;
}

static int bind_class_attr(dyn_tx* tx, DynVar* obj, PyObject* attr, PyObject* name, DynVar** out) {
  if (PyFunction_Check(attr) && obj->kind == DV_MODULE && is_container_fn(attr))
    return method_of(attr, obj, out); /* answered natively (dc_call_container_method) */
  if (PyFunction_Check(attr)) {
    DynVar* fv;
    int rc = dc_class_func(tx, obj, attr, name, &fv);
    if (rc != DYN_CALL_OK) return rc;
    *out = dyn_var_new(DV_METHOD, (PyObject*)fv, NULL, (PyObject*)obj, NULL);
    Py_DECREF(fv);
    return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
  }
  if (is_method_descr(attr)) return method_of(attr, obj, out);
  if (Py_TYPE(attr) == &PyStaticMethod_Type) {
    PyObject* f = PyObject_GetAttrString(attr, "__func__");
    if (!f) return DYN_CALL_ERROR;
    int rc;
    if (PyFunction_Check(f)) {
      *out = guard_id_path(tx, obj, 0, name, NULL, f) < 0 ? NULL
                                                         : dyn_var_new(DV_FUNCTION, f, NULL, NULL, NULL);
      rc = *out ? DYN_CALL_OK : DYN_CALL_ERROR;
    } else {
      rc = dc_break(tx, "static method .%U (not a Python function)", name);
    }
    Py_DECREF(f);
    return rc;
  }
  if (Py_TYPE(attr) == &PyClassMethod_Type) {
    PyObject* f = PyObject_GetAttrString(attr, "__func__");
    if (!f) return DYN_CALL_ERROR;
    int rc = DYN_CALL_OK;
    DynVar* fv = PyFunction_Check(f) && guard_id_path(tx, obj, 0, name, "__func__", f) == 0
                     ? dyn_var_new(DV_FUNCTION, f, NULL, NULL, NULL)
                     : NULL;
    Py_DECREF(f);
    if (!fv) return PyErr_Occurred() ? DYN_CALL_ERROR : dc_break(tx, "class method .%U", name);
    DynVar* cv = dyn_var_const((PyObject*)Py_TYPE(obj->value));
    *out = cv ? dyn_var_new(DV_METHOD, (PyObject*)fv, NULL, (PyObject*)cv, NULL) : NULL;
    Py_XDECREF(cv);
    Py_DECREF(fv);
    if (!*out) rc = DYN_CALL_ERROR;
    return rc;
  }
  if (PyObject_TypeCheck(attr, &PyProperty_Type)) {
    if (guard_id_path(tx, obj, 1, name, NULL, attr) < 0) return DYN_CALL_ERROR;
    PyObject* g = PyObject_GetAttrString(attr, "fget");
    if (!g) return DYN_CALL_ERROR;
    int rc;
    if (PyFunction_Check(g)) {
      DynVar* fv = dyn_var_new(DV_FUNCTION, g, NULL, NULL, NULL);
      *out = fv ? dyn_var_new(DV_METHOD, (PyObject*)fv, NULL, (PyObject*)obj, NULL) : NULL;
      Py_XDECREF(fv);
      rc = *out ? DYN_CALL_INLINE : DYN_CALL_ERROR;
    } else {
      rc = dc_break(tx, "property .%U without a Python getter", name);
    }
    Py_DECREF(g);
    return rc;
  }
  if (Py_TYPE(attr)->tp_descr_get)
    return dc_break(tx, "attribute .%U is a %s descriptor", name, Py_TYPE(attr)->tp_name);
  return -2; /* plain class attribute */
}

int dc_getattr_builtin(dyn_tx* tx, DynVar* obj, PyObject* name, DynVar** out) {
  const char* nm = PyUnicode_AsUTF8(name);
  if (!nm) return DYN_CALL_ERROR;
  if (dc_is_view(obj)) return dc_break(tx, "attribute .%s of a dict view", nm);
  PyObject* type = NULL;
  switch (obj->kind) {
    case DV_LIST: type = (PyObject*)&PyList_Type; break;
    case DV_DICT: type = (PyObject*)&PyDict_Type; break;
    case DV_SET: type = (PyObject*)&PySet_Type; break;
    case DV_TUPLE: type = obj->extra == dcc.torch_size ? dcc.torch_size : (PyObject*)&PyTuple_Type; break;
    case DV_SLICE: {
      int i = !strcmp(nm, "start") ? 0 : !strcmp(nm, "stop") ? 1 : !strcmp(nm, "step") ? 2 : -1;
      if (i < 0) return dc_break(tx, "slice attribute .%s", nm);
      *out = (DynVar*)PyList_GET_ITEM(obj->items, i);
      Py_INCREF(*out);
      return DYN_CALL_OK;
    }
    case DV_NAMEDTUPLE: {
      PyObject* fields = PyObject_GetAttrString(obj->value, "_fields");
      if (!fields) return dc_break_exc(tx, "namedtuple fields");
      Py_ssize_t pos = -1;
      if (PyTuple_Check(fields))
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields); i++)
          if (PyUnicode_Compare(PyTuple_GET_ITEM(fields, i), name) == 0) pos = i;
      Py_DECREF(fields);
      if (pos >= 0 && pos < PyList_GET_SIZE(obj->items)) {
        *out = (DynVar*)PyList_GET_ITEM(obj->items, pos);
        Py_INCREF(*out);
        return DYN_CALL_OK;
      }
      PyObject* attr = _PyType_Lookup((PyTypeObject*)obj->value, name);
      if (!attr) return dc_break(tx, "namedtuple has no attribute .%s", nm);
      if (PyFunction_Check(attr)) {
        DynVar* fv = dyn_var_new(DV_FUNCTION, attr, NULL, NULL, NULL);
        *out = fv ? dyn_var_new(DV_METHOD, (PyObject*)fv, NULL, (PyObject*)obj, NULL) : NULL;
        Py_XDECREF(fv);
        return *out ? DYN_CALL_OK : DYN_CALL_ERROR;
      }
      if (is_method_descr(attr)) return method_of(attr, obj, out);
      return dc_break(tx, "namedtuple attribute .%s", nm);
    }
    case DV_SYMINT:
      return dc_break(tx, "attribute .%s of a dynamic size", nm);
    case DV_FUNCTION:
      if (obj->value && (!strcmp(nm, "__name__") || !strcmp(nm, "__qualname__") ||
                         !strcmp(nm, "__module__") || !strcmp(nm, "__doc__"))) {
        PyObject* r = PyObject_GetAttr(obj->value, name);
        if (!r) return dc_break_exc(tx, "function attribute");
        int rc = out_const(r, out);
        Py_DECREF(r);
        return rc;
      }
      return dc_break(tx, "attribute .%s of a function", nm);
    case DV_RANGE:
    case DV_CONST: {
      PyObject* v = obj->value;
      if (obj->kind == DV_CONST && (PyModule_Check(v) || PyType_Check(v))) {
        if (PyType_Check(v) && Py_TYPE(v)->tp_getattro != PyType_Type.tp_getattro)
          return dc_break(tx, "attribute of a class whose metaclass customises attribute access");
        PyObject* r = PyObject_GetAttr(v, name);
        if (!r) return dc_break_exc(tx, "attribute");
        int rc;
        if (PyMethod_Check(r) && PyType_Check(PyMethod_GET_SELF(r)) && PyFunction_Check(PyMethod_GET_FUNCTION(r))) {
          /* a classmethod bound to the class */
          DynVar* fv = guard_id_path(tx, obj, 0, name, "__func__", PyMethod_GET_FUNCTION(r)) < 0
                           ? NULL
                           : dyn_var_new(DV_FUNCTION, PyMethod_GET_FUNCTION(r), NULL, NULL, NULL);
          *out = fv ? dyn_var_new(DV_METHOD, (PyObject*)fv, NULL, (PyObject*)obj, NULL) : NULL;
          Py_XDECREF(fv);
          rc = *out ? DYN_CALL_OK : DYN_CALL_ERROR;
        } else {
          rc = dc_wrap_attr(tx, obj, v, name, r, out);
        }
        Py_DECREF(r);
        return rc;
      }
      type = (PyObject*)Py_TYPE(v);
      if (!dc_safe_const(v)) return dc_break(tx, "attribute .%s of a %s", nm, Py_TYPE(v)->tp_name);
      break;
    }
    default:
      return dc_break(tx, "attribute .%s of a %s", nm, dyn_var_kind_name(obj));
  }
  PyObject* attr = _PyType_Lookup((PyTypeObject*)type, name);
  if (attr && is_method_descr(attr)) return method_of(attr, obj, out);
  if (obj->kind == DV_CONST || obj->kind == DV_RANGE) {
    PyObject* r = PyObject_GetAttr(obj->value, name);
    if (!r) return dc_break_exc(tx, "attribute");
    if (!dc_safe_const(r)) {
      Py_DECREF(r);
      return dc_break(tx, "attribute .%s gives a non-constant", nm);
    }
    int rc = out_const(r, out);
    Py_DECREF(r);
    return rc;
  }
  if (obj->kind == DV_TUPLE && dc_has_graph_value(obj) == 0) {
    PyObject* c = dyn_var_as_const(obj);
    if (c) {
      DynVar* cv = dyn_var_const(c);
      Py_DECREF(c);
      if (!cv) return DYN_CALL_ERROR;
      int rc = dc_getattr_builtin(tx, cv, name, out);
      Py_DECREF(cv);
      return rc;
    }
  }
  return dc_break(tx, "attribute .%s of a %s", nm, dyn_var_kind_name(obj));
}

/* ---------------------------------------------------------------------------
 * Sources and wrapping
 * ------------------------------------------------------------------------- */
int dc_wrap_attr(dyn_tx* tx, DynVar* base_var, PyObject* base_obj, PyObject* name,
                 PyObject* value, DynVar** out) {
  DynSource* s = dc_source_of(base_var);
  if (!s) {
    if (PyErr_Occurred()) return DYN_CALL_ERROR;
    s = dyn_source_const(base_obj);
    if (!s) return DYN_CALL_ERROR;
  }
  DynSource* a = dyn_source_attr(s, name);
  Py_DECREF(s);
  if (!a) return DYN_CALL_ERROR;
  *out = dyn_wrap(tx, value, a);
  Py_DECREF(a);
  if (!*out) return DYN_CALL_ERROR;
  if ((*out)->kind == DV_OBJECT && (*out)->extra && PyUnicode_Check((*out)->extra) &&
      (*out)->value && PyObject_IsInstance((*out)->value, dcc.tensor_type) == 1) {
    int rc = dc_break(tx, "attribute .%U: %U", name, (*out)->extra);
    Py_CLEAR(*out);
    return rc;
  }
  return DYN_CALL_OK;
}

/* ---------------------------------------------------------------------------
 * nn.Module and user objects
 * ------------------------------------------------------------------------- */
static PyObject* inst_dict(PyObject* o) {
  PyObject* d = PyObject_GenericGetDict(o, NULL);
  if (!d) PyErr_Clear();
  return d;
}

int dc_module_children(dyn_tx* tx, DynVar* m, PyObject** out, PyObject** keys) {
  *out = NULL;
  *keys = NULL;
  PyObject* v = m->value;
  if (m->kind != DV_MODULE ||
      !(PyObject_IsInstance(v, dcc.module_list) == 1 || PyObject_IsInstance(v, dcc.sequential) == 1 ||
        PyObject_IsInstance(v, dcc.module_dict) == 1))
    return dc_break(tx, "iterating/indexing a %s", m->kind == DV_MODULE ? Py_TYPE(v)->tp_name : dyn_var_kind_name(m));
  PyObject* d = inst_dict(v);
  PyObject* mods = d ? PyDict_GetItemString(d, "_modules") : NULL;
  if (!mods || !PyDict_Check(mods)) {
    Py_XDECREF(d);
    return dc_break(tx, "module container without _modules");
  }
  Py_INCREF(mods);
  Py_DECREF(d);
  PyObject* kl = PyDict_Keys(mods);
  PyObject* kt = kl ? PyList_AsTuple(kl) : NULL;
  int rc = kt ? DYN_CALL_OK : DYN_CALL_ERROR;
  if (rc == DYN_CALL_OK && m->source) {
    PyObject* mn = PyUnicode_FromString("_modules");
    DynSource* ms = mn ? dyn_source_attr(m->source, mn) : NULL;
    Py_XDECREF(mn);
    if (!ms || dyn_guards_add(tx->guards, DG_DICT_KEYS, ms, kt, 0) < 0) rc = DYN_CALL_ERROR;
    Py_XDECREF(ms);
  }
  PyObject* l = rc == DYN_CALL_OK ? PyList_New(0) : NULL;
  for (Py_ssize_t i = 0; l && rc == DYN_CALL_OK && i < PyList_GET_SIZE(kl); i++) {
    PyObject* k = PyList_GET_ITEM(kl, i);
    PyObject* sub = PyDict_GetItem(mods, k);
    DynVar* sv = NULL;
    if (!sub || sub == Py_None) {
      sv = dyn_var_const(Py_None);
      if (!sv) rc = DYN_CALL_ERROR;
    } else {
      rc = dc_wrap_attr(tx, m, v, k, sub, &sv);
    }
    if (rc == DYN_CALL_OK && PyList_Append(l, (PyObject*)sv) < 0) rc = DYN_CALL_ERROR;
    Py_XDECREF(sv);
  }
  Py_XDECREF(kt);
  Py_DECREF(mods);
  if (rc != DYN_CALL_OK || !l) {
    Py_XDECREF(l);
    Py_XDECREF(kl);
    return rc != DYN_CALL_OK ? rc : DYN_CALL_ERROR;
  }
  *out = l;
  *keys = kl;
  return DYN_CALL_OK;
}

static int guard_len0(dyn_tx* tx, DynSource* s, PyObject* attrname, PyObject* d) {
  PyObject* nm = PyUnicode_FromString(PyUnicode_AsUTF8(attrname));
  DynSource* hs = nm ? dyn_source_attr(s, nm) : NULL;
  Py_XDECREF(nm);
  int r = hs ? dyn_guards_add(tx->guards, DG_LEN, hs, (PyObject*)Py_TYPE(d), 0) : -1;
  Py_XDECREF(hs);
  return r;
}

/* forward hooks / pre-hooks (module or global) -> break; guards that they stay empty */
static int check_hooks(dyn_tx* tx, DynVar* m) {
  PyObject* d = inst_dict(m->value);
  if (!d) return dc_break(tx, "module without __dict__");
  const char* names[] = {"_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                         "_backward_pre_hooks", "_state_dict_hooks", NULL};
  int rc = DYN_CALL_OK;
  for (int i = 0; names[i] && rc == DYN_CALL_OK; i++) {
    if (i >= 4) break;
    PyObject* h = PyDict_GetItemString(d, names[i]);
    if (!h) continue;
    Py_ssize_t n = PyObject_Length(h);
    if (n < 0) {
      PyErr_Clear();
      rc = dc_break(tx, "module hooks %s unreadable", names[i]);
    } else if (n > 0) {
      rc = dc_break(tx, "module %s has %s registered", Py_TYPE(m->value)->tp_name, names[i]);
    } else if (m->source) {
      PyObject* an = PyUnicode_FromString(names[i]);
      if (!an || guard_len0(tx, m->source, an, h) < 0) rc = DYN_CALL_ERROR;
      Py_XDECREF(an);
    }
  }
  Py_DECREF(d);
  for (Py_ssize_t i = 0; rc == DYN_CALL_OK && i < PyTuple_GET_SIZE(dcc.global_hooks); i++) {
    PyObject* h = PyTuple_GET_ITEM(dcc.global_hooks, i);
    Py_ssize_t n = PyObject_Length(h);
    if (n < 0) {
      PyErr_Clear();
      continue;
    }
    if (n > 0) {
      rc = dc_break(tx, "global nn.Module hooks are registered");
    } else {
      DynSource* s = dyn_source_const(h);
      if (!s || dyn_guards_add(tx->guards, DG_LEN, s, (PyObject*)Py_TYPE(h), 0) < 0) rc = DYN_CALL_ERROR;
      Py_XDECREF(s);
    }
  }
  return rc;
}

/* identity guards on a mapped module's own parameters and buffers */
static int guard_params(dyn_tx* tx, DynVar* m) {
  if (!m->source) return DYN_CALL_OK;
  PyObject* d = inst_dict(m->value);
  if (!d) return DYN_CALL_OK;
  const char* names[] = {"_parameters", "_buffers"};
  int rc = DYN_CALL_OK;
  for (int i = 0; i < 2 && rc == DYN_CALL_OK; i++) {
    PyObject* p = PyDict_GetItemString(d, names[i]);
    if (!p || !PyDict_Check(p)) continue;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (rc == DYN_CALL_OK && PyDict_Next(p, &pos, &k, &v)) {
      DynSource* s = dyn_source_attr(m->source, k);
      if (!s || dyn_guards_add(tx->guards, v == Py_None ? DG_ID : DG_ID, s, v, 0) < 0) rc = DYN_CALL_ERROR;
      Py_XDECREF(s);
    }
  }
  Py_DECREF(d);
  return rc;
}

/* *out = fv (stolen) to inline with (self, args...) and kwargs: DYN_CALL_INLINE. */
static int inline_bound(DynVar* fv, DynVar* self, DynVar* const* args, Py_ssize_t n,
                        PyObject* kwargs, DynVar** out, PyObject** inline_args,
                        PyObject** inline_kwargs) {
  PyObject* l = PyList_New(n + 1);
  PyObject* k = l ? (kwargs ? PyDict_Copy(kwargs) : PyDict_New()) : NULL;
  if (!k) {
    Py_XDECREF(l);
    Py_DECREF(fv);
    return DYN_CALL_ERROR;
  }
  Py_INCREF(self);
  PyList_SET_ITEM(l, 0, (PyObject*)self);
  for (Py_ssize_t i = 0; i < n; i++) {
    Py_INCREF(args[i]);
    PyList_SET_ITEM(l, i + 1, (PyObject*)args[i]);
  }
  *out = fv;
  *inline_args = l;
  *inline_kwargs = k;
  return DYN_CALL_INLINE;
}

/* A Python __call__ override of a module class (e.g. a layer whose __call__
 * checks its arguments and returns super().__call__(...)): inlined, bound to
 * the module, with an identity guard on type(m).__call__. Library code
 * (torch, the filename rules of the hook) keeps breaking. */
static int inline_call_override(dyn_tx* tx, DynVar* m, PyObject* call, DynVar* const* args,
                                Py_ssize_t n, PyObject* kwargs, DynVar** out,
                                PyObject** inline_args, PyObject** inline_kwargs) {
  PyTypeObject* t = Py_TYPE(m->value);
  if (!call || !PyFunction_Check(call))
    return dc_break(tx, "module %s overrides __call__ (not a Python function)", t->tp_name);
  int skipped = dyn_code_skipped((PyCodeObject*)PyFunction_GET_CODE(call));
  if (skipped < 0) return DYN_CALL_ERROR;
  if (skipped) return dc_break(tx, "module %s overrides __call__ in library code", t->tp_name);
  PyObject* cname = PyUnicode_InternFromString("__call__");
  if (!cname) return DYN_CALL_ERROR;
  DynVar* fv;
  int rc = dc_class_func(tx, m, call, cname, &fv);
  Py_DECREF(cname);
  if (rc != DYN_CALL_OK) return rc;
  return inline_bound(fv, m, args, n, kwargs, out, inline_args, inline_kwargs);
}

static int call_module_impl(dyn_tx* tx, DynVar* m, DynVar* const* args, Py_ssize_t n,
                            PyObject* kwargs, DynVar** out, PyObject** inline_args,
                            PyObject** inline_kwargs, int base_call) {
  PyObject* mod = m->value;
  PyTypeObject* t = Py_TYPE(mod);
  if (!base_call) {
    PyObject* cname = PyUnicode_InternFromString("__call__");
    PyObject* call = cname ? _PyType_Lookup(t, cname) : NULL;
    Py_XDECREF(cname);
    if (call != dcc.module_call)
      return inline_call_override(tx, m, call, args, n, kwargs, out, inline_args, inline_kwargs);
  }
  PyObject* d = inst_dict(mod);
  int own_fwd = d && PyDict_GetItemString(d, "forward") != NULL;
  Py_XDECREF(d);
  if (own_fwd) return dc_break(tx, "module %s has an instance-level forward", t->tp_name);
  int rc = check_hooks(tx, m);
  if (rc != DYN_CALL_OK) return rc;
  PyObject* conv = PyObject_CallOneArg(dcc.lookup, (PyObject*)t);
  if (!conv) return dc_break_exc(tx, "module lookup");
  if (conv != Py_None) {
    PyObject* check = PyObject_GetAttrString(conv, "check_module");
    Py_DECREF(conv);
    if (!check) PyErr_Clear();
    if (check) {
      PyObject* why = PyObject_CallOneArg(check, mod);
      Py_DECREF(check);
      if (!why) return dc_break_exc(tx, t->tp_name);
      if (why != Py_None) {
        rc = dc_break(tx, "module %s: %S", t->tp_name, why);
        Py_DECREF(why);
        return rc;
      }
      Py_DECREF(why);
    }
    rc = guard_params(tx, m);
    if (rc != DYN_CALL_OK) return rc;
    char what[128];
    snprintf(what, sizeof what, "module %s", t->tp_name);
    return dc_og_call_checked(tx, "call_module", mod, args, n, kwargs, what, out);
  }
  Py_DECREF(conv);
  PyObject* fname = PyUnicode_InternFromString("forward");
  PyObject* fwd = fname ? _PyType_Lookup(t, fname) : NULL;
  if (!fwd || !PyFunction_Check(fwd)) {
    Py_XDECREF(fname);
    return dc_break(tx, "module %s: forward is not a Python function", t->tp_name);
  }
  DynVar* fv;
  rc = dc_class_func(tx, m, fwd, fname, &fv);
  Py_DECREF(fname);
  if (rc != DYN_CALL_OK) return rc;
  return inline_bound(fv, m, args, n, kwargs, out, inline_args, inline_kwargs);
}

int dc_call_module(dyn_tx* tx, DynVar* m, DynVar* const* args, Py_ssize_t n, PyObject* kwargs,
                   DynVar** out, PyObject** inline_args, PyObject** inline_kwargs) {
  return call_module_impl(tx, m, args, n, kwargs, out, inline_args, inline_kwargs, 0);
}

int dc_call_module_base(dyn_tx* tx, DynVar* m, DynVar* const* args, Py_ssize_t n,
                        PyObject* kwargs, DynVar** out, PyObject** inline_args,
                        PyObject** inline_kwargs) {
  return call_module_impl(tx, m, args, n, kwargs, out, inline_args, inline_kwargs, 1);
}

int dc_getattr_object(dyn_tx* tx, DynVar* obj, PyObject* name, DynVar** out) {
  const char* nm = PyUnicode_AsUTF8(name);
  if (!nm) return DYN_CALL_ERROR;
  if (obj->kind == DV_OBJECT && obj->extra && PyUnicode_Check(obj->extra))
    return dc_break(tx, "attribute .%s of an unsupported value (%U)", nm, obj->extra);
  if (obj->items && PyDict_Check(obj->items) && obj->value &&
      dc_uses_object_slot(Py_TYPE(obj->value), "__getattribute__")) {
    PyObject* w = PyDict_GetItem(obj->items, name);
    if (w) {
      Py_INCREF(w);
      *out = (DynVar*)w;
      return DYN_CALL_OK;
    }
  }
  PyObject* o = obj->value;
  PyTypeObject* t = Py_TYPE(o);
  if (!dc_uses_object_slot(t, "__getattribute__")) {
    int missing;
    int rc = dc_getattr_real(tx, obj, name, out, &missing);
    if (rc == DYN_CALL_OK && missing)
      rc = dc_break(tx, "%s has no attribute .%s (AttributeError in Python)", t->tp_name, nm);
    return rc;
  }
  if (!strcmp(nm, "__class__")) return out_const((PyObject*)t, out);
  if (!strcmp(nm, "__dict__")) return dc_break(tx, "reading __dict__ of a %s", t->tp_name);
  PyObject* attr = _PyType_Lookup(t, name);
  /* data descriptors of the class first */
  if (attr && Py_TYPE(attr)->tp_descr_set) {
    if (Py_TYPE(attr) == &PyMemberDescr_Type) { /* __slots__: read the value */
      PyObject* r = PyObject_GetAttr(o, name);
      if (!r) return dc_break_exc(tx, "slot attribute");
      int rc = dc_wrap_attr(tx, obj, o, name, r, out);
      Py_DECREF(r);
      return rc;
    }
    int rc = bind_class_attr(tx, obj, attr, name, out);
    if (rc != -2) return rc;
  }
  PyObject* d = inst_dict(o);
  PyObject* v = d ? PyDict_GetItem(d, name) : NULL;
  if (v) {
    Py_INCREF(v);
    Py_DECREF(d);
    int rc = dc_wrap_attr(tx, obj, o, name, v, out);
    Py_DECREF(v);
    return rc;
  }
  if (attr) {
    Py_XDECREF(d);
    int rc = bind_class_attr(tx, obj, attr, name, out);
    if (rc != -2) return rc;
    return dc_wrap_attr(tx, obj, o, name, attr, out); /* plain class attribute */
  }
  if (obj->kind == DV_MODULE && d) {
    const char* subs[] = {"_parameters", "_buffers", "_modules"};
    for (int i = 0; i < 3; i++) {
      PyObject* sd = PyDict_GetItemString(d, subs[i]);
      PyObject* x = sd && PyDict_Check(sd) ? PyDict_GetItem(sd, name) : NULL;
      if (!x) continue;
      Py_INCREF(x);
      Py_DECREF(d);
      int rc = x == Py_None ? out_const(Py_None, out) : dc_wrap_attr(tx, obj, o, name, x, out);
      Py_DECREF(x);
      return rc;
    }
  }
  Py_XDECREF(d);
  PyObject* ga = PyUnicode_InternFromString("__getattr__");
  PyObject* g = ga ? _PyType_Lookup(t, ga) : NULL;
  Py_XDECREF(ga);
  if (g && !(obj->kind == DV_MODULE && g == dcc.module_getattr)) {
    int missing;
    int rc = dc_getattr_real(tx, obj, name, out, &missing);
    if (rc == DYN_CALL_OK && missing)
      rc = dc_break(tx, "%s has no attribute .%s (AttributeError in Python)", t->tp_name, nm);
    return rc;
  }
  return dc_break(tx, "%s has no attribute .%s (AttributeError in Python)", t->tp_name, nm);
}

int dc_setattr_object(dyn_tx* tx, DynVar* obj, PyObject* name, DynVar* value) {
  const char* nm = PyUnicode_AsUTF8(name);
  if (!nm) return DYN_CALL_ERROR;
  PyObject* o = obj->value;
  PyTypeObject* t = Py_TYPE(o);
  if (!obj->source || !obj->items || !PyDict_Check(obj->items) ||
      (obj->extra && PyUnicode_Check(obj->extra)))
    return dc_break(tx, "setting .%s on an untracked %s", nm, t->tp_name);
  if (obj->kind == DV_OBJECT && !dc_uses_object_slot(t, "__setattr__"))
    return dc_break(tx, "setting .%s on a %s (custom __setattr__)", nm, t->tp_name);
  if (obj->kind == DV_MODULE) {
    PyObject* sa = PyUnicode_InternFromString("__setattr__");
    PyObject* s = sa ? _PyType_Lookup(t, sa) : NULL;
    Py_XDECREF(sa);
    if (s != dcc.module_setattr) return dc_break(tx, "setting .%s on a %s (custom __setattr__)", nm, t->tp_name);
    /* a Module value registers a submodule; a tensor made in the trace is
     * never a Parameter, so it is a plain attribute unless the name is a
     * parameter/buffer/submodule (checked below) */
    if (value->kind == DV_MODULE || (value->kind == DV_TENSOR && value->source))
      return dc_break(tx, "assigning a %s to module attribute .%s", dyn_var_kind_name(value), nm);
    PyObject* d = inst_dict(o);
    int special = 0;
    const char* subs[] = {"_parameters", "_buffers", "_modules"};
    for (int i = 0; d && i < 3; i++) {
      PyObject* sd = PyDict_GetItemString(d, subs[i]);
      if (sd && PyDict_Check(sd) && PyDict_Contains(sd, name) == 1) special = 1;
    }
    Py_XDECREF(d);
    if (special) return dc_break(tx, "assigning to parameter/buffer/submodule .%s", nm);
  }
  PyObject* attr = _PyType_Lookup(t, name);
  if (attr && Py_TYPE(attr)->tp_descr_set &&
      (Py_TYPE(attr) != &PyMemberDescr_Type ||
       (((PyMemberDescrObject*)attr)->d_member->flags & 1 /* READONLY */)))
    return dc_break(tx, "setting .%s through a %s descriptor", nm, Py_TYPE(attr)->tp_name);
  if (!strncmp(nm, "__", 2)) return dc_break(tx, "setting special attribute .%s", nm);
  if (PyDict_SetItem(obj->items, name, (PyObject*)value) < 0) return DYN_CALL_ERROR;
  obj->mutated = 1;
  PyObject* e = Py_BuildValue("(sOOO)", "setattr", (PyObject*)obj, name, (PyObject*)value);
  if (!e) return DYN_CALL_ERROR;
  int r = PyList_Append(tx->side_effects, e);
  Py_DECREF(e);
  return r < 0 ? DYN_CALL_ERROR : DYN_CALL_OK;
}

/* Calling a namedtuple class: a created DV_NAMEDTUPLE (fields bound from
 * positional args, keywords by field name, then _field_defaults). -2 when
 * `cls` is not a namedtuple class. */
int dc_call_namedtuple(dyn_tx* tx, PyObject* cls, DynVar* const* a, Py_ssize_t n, PyObject* kwargs,
                       DynVar** out) {
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &PyTuple_Type)) return -2;
  PyObject* fields = PyObject_GetAttrString(cls, "_fields");
  if (!fields) {
    PyErr_Clear();
    return -2;
  }
  PyObject* make = PyObject_GetAttrString(cls, "_make");
  if (!make || !PyTuple_Check(fields)) {
    PyErr_Clear();
    Py_XDECREF(make);
    Py_DECREF(fields);
    return -2;
  }
  Py_DECREF(make);
  PyObject* nname = PyUnicode_InternFromString("__new__");
  PyObject* nw = nname ? _PyType_Lookup((PyTypeObject*)cls, nname) : NULL;
  Py_XDECREF(nname);
  PyObject* ini = PyObject_GetAttrString(cls, "__init__");
  PyObject* tini = PyObject_GetAttrString((PyObject*)&PyTuple_Type, "__init__");
  PyObject* oini = PyObject_GetAttrString((PyObject*)&PyBaseObject_Type, "__init__");
  int plain_init = ini && (ini == tini || ini == oini);
  Py_XDECREF(ini);
  Py_XDECREF(tini);
  Py_XDECREF(oini);
  PyErr_Clear();
  /* the generated __new__ is a Python function named __new__ from collections */
  int gen_new = 0;
  PyObject* nwf = NULL;
  if (nw && Py_TYPE(nw) == &PyStaticMethod_Type) {
    nwf = PyObject_GetAttrString(nw, "__func__");
    nw = nwf;
  }
  if (nw && PyFunction_Check(nw)) {
    PyObject* mod = ((PyFunctionObject*)nw)->func_module;
    gen_new = mod && PyUnicode_Check(mod) &&
              strncmp(PyUnicode_AsUTF8(mod), "namedtuple_", 11) == 0;
  }
  Py_XDECREF(nwf);
  PyErr_Clear();
  if (!plain_init || !gen_new) {
    Py_DECREF(fields);
    return dc_break(tx, "creating a %s (custom __new__/__init__)", ((PyTypeObject*)cls)->tp_name);
  }
  Py_ssize_t nf = PyTuple_GET_SIZE(fields);
  if (n > nf) {
    Py_DECREF(fields);
    return dc_break(tx, "too many arguments for %s (TypeError)", ((PyTypeObject*)cls)->tp_name);
  }
  PyObject* defaults = PyObject_GetAttrString(cls, "_field_defaults");
  if (!defaults) PyErr_Clear();
  PyObject* items = PyList_New(nf);
  int rc = items ? DYN_CALL_OK : DYN_CALL_ERROR;
  Py_ssize_t used_kw = 0;
  for (Py_ssize_t i = 0; rc == DYN_CALL_OK && i < nf; i++) {
    PyObject* f = PyTuple_GET_ITEM(fields, i);
    DynVar* v = i < n ? a[i] : NULL;
    if (!v && kwargs) {
      v = (DynVar*)PyDict_GetItem(kwargs, f);
      if (v) used_kw++;
    }
    if (v) {
      Py_INCREF(v);
    } else {
      PyObject* dv = defaults && PyDict_Check(defaults) ? PyDict_GetItem(defaults, f) : NULL;
      if (!dv) {
        rc = dc_break(tx, "missing argument %U for %s (TypeError)", f, ((PyTypeObject*)cls)->tp_name);
        break;
      }
      if (!dc_safe_const(dv)) {
        rc = dc_break(tx, "non-constant default of namedtuple field %U", f);
        break;
      }
      v = dyn_var_const(dv);
      if (!v) {
        rc = DYN_CALL_ERROR;
        break;
      }
    }
    PyList_SET_ITEM(items, i, (PyObject*)v);
  }
  if (rc == DYN_CALL_OK && kwargs && used_kw != PyDict_Size(kwargs))
    rc = dc_break(tx, "unexpected keyword argument for %s (TypeError)", ((PyTypeObject*)cls)->tp_name);
  if (rc == DYN_CALL_OK) {
    *out = dyn_var_new(DV_NAMEDTUPLE, cls, items, NULL, NULL);
    if (*out) (*out)->created = 1;
    else rc = DYN_CALL_ERROR;
  }
  Py_XDECREF(items);
  Py_XDECREF(defaults);
  Py_DECREF(fields);
  return rc;
}

/* Methods of ModuleList / Sequential / ModuleDict called on a module
 * tracker: answered from its _modules (keys guarded) instead of inlining
 * torch's code (which iterates an OrderedDict). -2 when not one of them. */
int dc_call_container_method(dyn_tx* tx, PyObject* f, DynVar* const* a, Py_ssize_t n,
                             PyObject* kwargs, DynVar** out) {
  if (n < 1 || a[0]->kind != DV_MODULE || !PyFunction_Check(f) || nkw(kwargs)) return -2;
  PyObject* nameo = ((PyFunctionObject*)f)->func_name;
  const char* m = PyUnicode_AsUTF8(nameo);
  if (!m) return DYN_CALL_ERROR;
  PyObject* own = PyObject_GetAttr((PyObject*)Py_TYPE(a[0]->value), nameo);
  if (!own) {
    PyErr_Clear();
    return -2;
  }
  Py_DECREF(own);
  if (own != f) return -2;
  PyObject* bases[3] = {dcc.module_list, dcc.sequential, dcc.module_dict};
  int which = -1;
  for (int i = 0; i < 3; i++) {
    PyObject* bf = PyObject_GetAttr(bases[i], nameo);
    if (!bf) PyErr_Clear();
    if (bf == f) which = i;
    Py_XDECREF(bf);
  }
  if (which < 0) return -2;
  PyObject *ch, *keys;
  if (!strcmp(m, "__getitem__") && n == 2) return dyn_subscr(tx, a[0], a[1], out);
  int rc = dc_module_children(tx, a[0], &ch, &keys);
  if (rc != DYN_CALL_OK) return rc;
  if (!strcmp(m, "__len__") && n == 1) {
    rc = out_ssize(PyList_GET_SIZE(ch), out);
  } else if (!strcmp(m, "__iter__") && n == 1) {
    rc = dyn_iter(tx, a[0], out);
  } else if (which == 2 && n == 1 &&
             (!strcmp(m, "keys") || !strcmp(m, "values") || !strcmp(m, "items"))) {
    PyObject* l = PyList_New(0);
    for (Py_ssize_t i = 0; l && i < PyList_GET_SIZE(ch); i++) {
      DynVar* kv = dyn_var_const(PyList_GET_ITEM(keys, i));
      DynVar* e = NULL;
      if (kv) {
        if (m[0] == 'k') {
          e = kv;
          Py_INCREF(e);
        } else if (m[0] == 'v') {
          e = (DynVar*)PyList_GET_ITEM(ch, i);
          Py_INCREF(e);
        } else {
          e = tuple_of(kv, (DynVar*)PyList_GET_ITEM(ch, i));
        }
      }
      Py_XDECREF(kv);
      if (!e || PyList_Append(l, (PyObject*)e) < 0) Py_CLEAR(l);
      Py_XDECREF(e);
    }
    *out = l ? dc_seq(DV_TUPLE, l) : NULL;
    if (*out) (*out)->extra = PyUnicode_FromString(m[0] == 'k' ? "dict_keys" : m[0] == 'v' ? "dict_values" : "dict_items");
    rc = *out && (*out)->extra ? DYN_CALL_OK : DYN_CALL_ERROR;
    if (rc != DYN_CALL_OK) Py_CLEAR(*out);
    Py_XDECREF(l);
  } else if (which == 2 && n == 2 && !strcmp(m, "__contains__")) {
    int in = 0;
    rc = dyn_contains(tx, a[0], a[1], &in);
    if (rc == DYN_CALL_OK) rc = out_bool(in, out);
  } else {
    rc = dc_break(tx, "%s.%s() of a module container", Py_TYPE(a[0]->value)->tp_name, m);
  }
  Py_DECREF(ch);
  Py_XDECREF(keys);
  return rc;
}
