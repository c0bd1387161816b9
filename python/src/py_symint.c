/* py_symint.c - the SymInt type: a symbolic size of one Graph. Arithmetic
 * with ints or SymInts goes through ptc_graph_sym_op (results fold to ints
 * when static); comparisons, bool() and int()/index() decide through
 * ptc_graph_sym_decide, recording shape guards as Dynamo does. */
#include "ptcpy.h"

static void symint_dealloc(PtcSymInt* self) {
  Py_XDECREF(self->graph);
  PyObject_Free(self);
}

static PyObject* symint_str(PtcSymInt* self) {
  char small[256];
  size_t n = ptc_graph_sym_format(self->graph->g, self->id, small, sizeof small);
  if (n < sizeof small) return PyUnicode_FromString(small);
  char* big = PyMem_Malloc(n + 1);
  if (!big) return PyErr_NoMemory();
  ptc_graph_sym_format(self->graph->g, self->id, big, n + 1);
  PyObject* r = PyUnicode_FromString(big);
  PyMem_Free(big);
  return r;
}

static PyObject* symint_repr(PtcSymInt* self) {
  PyObject* s = symint_str(self);
  if (!s) return NULL;
  PyObject* r = PyUnicode_FromFormat("SymInt(%U, hint=%lld)", s, (long long)self->hint);
  Py_DECREF(s);
  return r;
}

/* The graph of a binary operation, or NULL when an operand is not int-like. */
static PtcGraph* operands_graph(PyObject* a, PyObject* b) {
  int sa = PyObject_TypeCheck(a, &PtcSymInt_Type), sb = PyObject_TypeCheck(b, &PtcSymInt_Type);
  if ((!sa && (!PyLong_Check(a) || PyBool_Check(a))) ||
      (!sb && (!PyLong_Check(b) || PyBool_Check(b))))
    return NULL;
  return sa ? ((PtcSymInt*)a)->graph : ((PtcSymInt*)b)->graph;
}

static PyObject* binop(PyObject* a, PyObject* b, int op) {
  PtcGraph* g = operands_graph(a, b);
  if (!g) Py_RETURN_NOTIMPLEMENTED;
  return ptcpy_graph_sym(g, op, a, b);
}

static PyObject* sym_add(PyObject* a, PyObject* b) { return binop(a, b, PTC_SYM_ADD); }
static PyObject* sym_sub(PyObject* a, PyObject* b) { return binop(a, b, PTC_SYM_SUB); }
static PyObject* sym_mul(PyObject* a, PyObject* b) { return binop(a, b, PTC_SYM_MUL); }
static PyObject* sym_floordiv(PyObject* a, PyObject* b) { return binop(a, b, PTC_SYM_FLOORDIV); }
static PyObject* sym_mod(PyObject* a, PyObject* b) { return binop(a, b, PTC_SYM_MOD); }

static PyObject* sym_neg(PyObject* a) {
  PyObject* zero = PyLong_FromLong(0);
  if (!zero) return NULL;
  PyObject* r = ptcpy_graph_sym(((PtcSymInt*)a)->graph, PTC_SYM_SUB, zero, a);
  Py_DECREF(zero);
  return r;
}

/* int(s) / index(s): the hint, guarded by "s == hint" (specialises). */
static PyObject* sym_index(PyObject* a) {
  PtcSymInt* s = (PtcSymInt*)a;
  PyObject* hint = PyLong_FromLongLong(s->hint);
  if (!hint) return NULL;
  int r = ptcpy_graph_decide(s->graph, PTC_SYM_EQ, a, hint);
  if (r < 0) Py_CLEAR(hint);
  return hint;
}

static int sym_bool(PyObject* a) {
  PyObject* zero = PyLong_FromLong(0);
  if (!zero) return -1;
  int r = ptcpy_graph_decide(((PtcSymInt*)a)->graph, PTC_SYM_NE, a, zero);
  Py_DECREF(zero);
  return r;
}

static PyObject* sym_richcompare(PyObject* a, PyObject* b, int op) {
  PtcGraph* g = operands_graph(a, b);
  if (!g) Py_RETURN_NOTIMPLEMENTED;
  int rel = op == Py_EQ   ? PTC_SYM_EQ
            : op == Py_NE ? PTC_SYM_NE
            : op == Py_LT ? PTC_SYM_LT
            : op == Py_LE ? PTC_SYM_LE
            : op == Py_GT ? PTC_SYM_GT
                          : PTC_SYM_GE;
  int r = ptcpy_graph_decide(g, rel, a, b);
  return r < 0 ? NULL : PyBool_FromLong(r);
}

static Py_hash_t sym_hash(PtcSymInt* self) {
  Py_hash_t h = (Py_hash_t)(((uintptr_t)self->graph >> 4) * 1000003u ^ (self->id * 7919u));
  return h == -1 ? -2 : h;
}

static PyObject* sym_get_graph(PtcSymInt* self, void* c) {
  Py_INCREF(self->graph);
  return (PyObject*)self->graph;
}
static PyObject* sym_get_hint(PtcSymInt* self, void* c) { return PyLong_FromLongLong(self->hint); }
static PyObject* sym_get_id(PtcSymInt* self, void* c) { return PyLong_FromUnsignedLong(self->id); }

static PyGetSetDef sym_getset[] = {
    {"graph", (getter)sym_get_graph, NULL, "the Graph owning this size", NULL},
    {"hint", (getter)sym_get_hint, NULL, "value at the example sizes (-1 if none)", NULL},
    {"id", (getter)sym_get_id, NULL, "graph-scoped symbolic expression id", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyNumberMethods sym_number = {
    .nb_add = sym_add,
    .nb_subtract = sym_sub,
    .nb_multiply = sym_mul,
    .nb_floor_divide = sym_floordiv,
    .nb_remainder = sym_mod,
    .nb_negative = sym_neg,
    .nb_bool = sym_bool,
    .nb_int = sym_index,
    .nb_index = sym_index,
};

PyTypeObject PtcSymInt_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ptc._C.SymInt",
    .tp_basicsize = sizeof(PtcSymInt),
    .tp_dealloc = (destructor)symint_dealloc,
    .tp_repr = (reprfunc)symint_repr,
    .tp_str = (reprfunc)symint_str,
    .tp_hash = (hashfunc)sym_hash,
    .tp_richcompare = sym_richcompare,
    .tp_as_number = &sym_number,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A symbolic size of one Graph (arithmetic builds expressions; comparisons,\n"
              "bool() and int() decide from the hints and record guards).",
    .tp_getset = sym_getset,
};

int ptcpy_symint_type_init(void) { return PyType_Ready(&PtcSymInt_Type); }
