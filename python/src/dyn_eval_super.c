/* dyn_eval_super.c - super() in the symbolic evaluator: `super()` (the
 * zero-argument form, through the method's __class__ cell and first
 * argument), `super(cls, self)`, and 3.12's LOAD_SUPER_ATTR. The result is a
 * tracker that only attribute reads go through (ev_super_attr): a plain
 * function found after `cls` in type(self).__mro__ becomes a method bound to
 * the self tracker (inlined when called); any other use breaks the graph. */
#include "dyn_eval_priv.h"

#include <string.h>

#if PTC_DYN_SUPPORTED

int ev_is_super(dyn_evtx* E, DynVar* v) {
  if (!E->supers || v->kind != DV_OBJECT) return 0;
  PyObject* key = PyLong_FromVoidPtr(v);
  int r = key ? PyDict_Contains(E->supers, key) : -1;
  Py_XDECREF(key);
  if (r < 0) PyErr_Clear();
  return r > 0;
}

int ev_make_super(dyn_evtx* E, DynVar* fn, DynVar* cls, DynVar* self, DynVar** out) {
  if (fn->kind != DV_CONST || fn->value != (PyObject*)&PySuper_Type) {
    dyn_break(&E->tx, "super attribute through a replaced `super`");
    return S_BREAK;
  }
  if (cls->kind != DV_CONST || !cls->value || !PyType_Check(cls->value) ||
      !(self->kind == DV_MODULE || self->kind == DV_OBJECT) || !self->value ||
      (self->kind == DV_OBJECT && self->extra) ||
      !PyObject_TypeCheck(self->value, (PyTypeObject*)cls->value)) {
    dyn_break(&E->tx, "super() of a %s", dyn_var_kind_name(self));
    return S_BREAK;
  }
  if (!E->supers && !(E->supers = PyDict_New())) return S_ERR;
  PyObject* why = PyUnicode_FromString("a super() object (only attribute reads are traced)");
  DynVar* v = why ? dyn_var_new(DV_OBJECT, NULL, NULL, why, NULL) : NULL;
  Py_XDECREF(why);
  if (!v) return S_ERR;
  v->created = 1;
  PyObject* key = PyLong_FromVoidPtr(v);
  PyObject* pair = key ? PyTuple_Pack(2, cls->value, (PyObject*)self) : NULL;
  int rc = pair ? PyDict_SetItem(E->supers, key, pair) : -1;
  Py_XDECREF(key);
  Py_XDECREF(pair);
  if (rc < 0) {
    Py_DECREF(v);
    return S_ERR;
  }
  *out = v;
  return S_OK;
}

int ev_super_noargs(dyn_evtx* E, dyn_eframe* f, DynVar** out) {
  PyCodeObject* co = f->code;
  if (co->co_argcount < 1 || f->n_locals < 1) {
    dyn_break(&E->tx, "super() without arguments outside a method");
    return S_BREAK;
  }
  int ci = -1;
  for (int i = 0; i < f->n_locals; i++) {
    PyObject* n = PyTuple_GET_ITEM(co->co_localsplusnames, i);
    if (PyUnicode_CompareWithASCIIString(n, "__class__") == 0) ci = i;
  }
  DynVar* cell = ci >= 0 ? f->locals[ci] : NULL;
  DynVar* self = f->locals[0];
  if (!cell || cell->kind != DV_CELL || !self) {
    dyn_break(&E->tx, "super() without its __class__ cell or first argument");
    return S_BREAK;
  }
  if (self->kind == DV_CELL) { /* the first argument is itself a cell variable */
    int st = ev_cell_contents(E, self, &self);
    if (st != S_OK) return st;
  }
  DynVar* cls = NULL;
  int st = ev_cell_contents(E, cell, &cls);
  if (st != S_OK) return st;
  DynVar* sup = dyn_var_const((PyObject*)&PySuper_Type);
  if (!sup) return S_ERR;
  st = ev_make_super(E, sup, cls, self, out);
  Py_DECREF(sup);
  return st;
}

int ev_super_attr(dyn_evtx* E, DynVar* sup, PyObject* name, DynVar** out) {
  PyObject* key = PyLong_FromVoidPtr(sup);
  PyObject* pair = key ? PyDict_GetItemWithError(E->supers, key) : NULL;
  Py_XDECREF(key);
  if (!pair) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "unknown super tracker");
    return S_ERR;
  }
  PyObject* cls = PyTuple_GET_ITEM(pair, 0);
  DynVar* self = (DynVar*)PyTuple_GET_ITEM(pair, 1);
  PyObject* mro = Py_TYPE(self->value)->tp_mro;
  Py_ssize_t n = mro && PyTuple_Check(mro) ? PyTuple_GET_SIZE(mro) : 0;
  Py_ssize_t i = 0;
  while (i < n && PyTuple_GET_ITEM(mro, i) != cls) i++;
  PyObject* owner = NULL;
  PyObject* attr = NULL;
  for (i++; i < n && !attr; i++) {
    PyObject* d = ((PyTypeObject*)PyTuple_GET_ITEM(mro, i))->tp_dict;
    attr = d ? PyDict_GetItemWithError(d, name) : NULL;
    if (!attr && PyErr_Occurred()) return S_ERR;
    if (attr) owner = PyTuple_GET_ITEM(mro, i);
  }
  if (!attr || !PyFunction_Check(attr)) {
    dyn_break(&E->tx, "super().%s is %s", PyUnicode_AsUTF8(name),
              attr ? Py_TYPE(attr)->tp_name : "not found");
    return S_BREAK;
  }
  /* the function, guarded by identity as the owner class's attribute */
  DynSource* base = dyn_source_const(owner);
  DynSource* src = base ? dyn_source_attr(base, name) : NULL;
  Py_XDECREF(base);
  DynVar* fv = src ? dyn_wrap(&E->tx, attr, src) : NULL;
  Py_XDECREF(src);
  if (!fv) return S_ERR;
  /* a library function (torch's) is a DV_CONST: dyn_call maps it or breaks */
  *out = dyn_var_new(DV_METHOD, (PyObject*)fv, NULL, (PyObject*)self, NULL);
  Py_DECREF(fv);
  return *out ? S_OK : S_ERR;
}

#endif /* PTC_DYN_SUPPORTED */
