/* dyn_bytecode.c - bytecode decoder and assembler of the capture (issue 6)
 * for CPython 3.11 and 3.12: co_code (de-specialised) -> dyn_insn array
 * (EXTENDED_ARG folded, inline CACHE entries skipped, jump targets as
 * instruction indexes, exception table and line numbers per instruction),
 * and dyn_asm -> code object (EXTENDED_ARG sized until jumps settle, zeroed
 * caches, jump direction chosen per version, exception table, a "no column"
 * line table, co_stacksize by flow analysis). The per-opcode tables (names,
 * inline cache counts, specialised -> base opcode) are read once from the
 * running interpreter's `opcode`/`dis` modules, so they always match it.
 *
 * FOR_ITER on 3.12: its decoded target is the END_FOR instruction the
 * compiler places after the loop body (as `dis` shows it). When the
 * iterator is exhausted the interpreter pops the iterator and continues
 * AFTER that END_FOR; seen from the target, the flow analysis models it as
 * "jump to END_FOR with the iterator and a value on the stack" (END_FOR
 * pops both), which gives the same depth. The assembler encodes the jump to
 * the END_FOR instruction, so a FOR_ITER target must be an END_FOR. */
#include "dyn.h"

#include <opcode.h>
#include <string.h>

#if PTC_DYN_SUPPORTED

/* ---------------------------------------------------------------------
 * Opcode tables (filled once from the `opcode` and `dis` modules)
 * --------------------------------------------------------------------- */
static int g_tables_ready;
static unsigned char g_caches[256];
static unsigned char g_deopt[256];
static PyObject* g_names[256]; /* str, strong */

/* Index of `name` in the list `opname` (or -1). */
static int opcode_of_name(PyObject* opname_list, PyObject* name) {
  Py_ssize_t n = PyList_Check(opname_list) ? PyList_GET_SIZE(opname_list) : 0;
  for (Py_ssize_t i = 0; i < n && i < 256; i++) {
    int eq = PyObject_RichCompareBool(PyList_GET_ITEM(opname_list, i), name, Py_EQ);
    if (eq < 0) return -2;
    if (eq) return (int)i;
  }
  return -1;
}

/* Fills g_deopt from dis._specializations {base: [specialised names]}. */
static int tables_fill_deopt(PyObject* dis, PyObject* all_opname) {
  for (int i = 0; i < 256; i++) g_deopt[i] = (unsigned char)i;
  PyObject* spec = PyObject_GetAttrString(dis, "_specializations");
  if (!spec) {
    PyErr_Clear();
    PyObject* opmod = PyImport_ImportModule("opcode");
    spec = opmod ? PyObject_GetAttrString(opmod, "_specializations") : NULL;
    Py_XDECREF(opmod);
    if (!spec) {
      PyErr_Clear();
      return 0; /* co_code is de-specialised anyway */
    }
  }
  PyObject *base, *family;
  Py_ssize_t pos = 0;
  int rc = 0;
  while (rc == 0 && PyDict_Check(spec) && PyDict_Next(spec, &pos, &base, &family)) {
    int b = opcode_of_name(all_opname, base);
    if (b == -2) rc = -1;
    if (b < 0 || !PyList_Check(family)) continue;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(family); k++) {
      int s = opcode_of_name(all_opname, PyList_GET_ITEM(family, k));
      if (s == -2) { rc = -1; break; }
      if (s >= 0) g_deopt[s] = (unsigned char)b;
    }
  }
  Py_DECREF(spec);
  return rc;
}

static int tables_init(void) {
  if (g_tables_ready) return 0;
  PyObject* opmod = PyImport_ImportModule("opcode");
  PyObject* dis = opmod ? PyImport_ImportModule("dis") : NULL;
  if (!dis) {
    Py_XDECREF(opmod);
    return -1;
  }
  int rc = -1;
  PyObject* caches = PyObject_GetAttrString(opmod, "_inline_cache_entries");
  PyObject* names = caches ? PyObject_GetAttrString(dis, "_all_opname") : NULL;
  if (caches && !names) {
    PyErr_Clear();
    names = PyObject_GetAttrString(opmod, "opname");
  }
  if (names && PyList_Check(names) && PyList_GET_SIZE(names) >= 256 &&
      (PyList_Check(caches) || PyDict_Check(caches))) {
    rc = 0;
    for (int i = 0; i < 256 && rc == 0; i++) {
      long c = 0;
      if (PyList_Check(caches)) { /* 3.11/3.12: a list indexed by opcode */
        if (i < PyList_GET_SIZE(caches)) c = PyLong_AsLong(PyList_GET_ITEM(caches, i));
      } else { /* a dict {name: count} */
        PyObject* v = PyDict_GetItemWithError(caches, PyList_GET_ITEM(names, i));
        if (v) c = PyLong_AsLong(v);
        else if (PyErr_Occurred()) c = -1;
      }
      if (c < 0 || c > 255) rc = -1;
      else g_caches[i] = (unsigned char)c;
      Py_XSETREF(g_names[i], Py_NewRef(PyList_GET_ITEM(names, i)));
    }
    if (rc == 0) rc = tables_fill_deopt(dis, names);
    /* a specialised form has the cache layout of its base */
    for (int i = 0; i < 256 && rc == 0; i++) g_caches[i] = g_caches[g_deopt[i]];
  } else if (!PyErr_Occurred()) {
    PyErr_SetString(PyExc_RuntimeError, "ptc capture: unexpected opcode tables in this Python");
  }
  if (rc != 0 && !PyErr_Occurred())
    PyErr_SetString(PyExc_RuntimeError, "ptc capture: cannot read the opcode tables");
  Py_XDECREF(caches);
  Py_XDECREF(names);
  Py_DECREF(dis);
  Py_DECREF(opmod);
  if (rc == 0) g_tables_ready = 1;
  return rc;
}

const char* dyn_opname(int opcode) {
  if (opcode < 0 || opcode > 255) return "<invalid opcode>";
  if (!g_tables_ready && tables_init() < 0) PyErr_Clear();
  if (!g_names[opcode]) return "<unknown opcode>";
  const char* s = PyUnicode_AsUTF8(g_names[opcode]);
  if (!s) {
    PyErr_Clear();
    return "<unknown opcode>";
  }
  return s;
}

int dyn_cache_entries(int opcode) {
  if (opcode < 0 || opcode > 255) return 0;
  if (!g_tables_ready && tables_init() < 0) PyErr_Clear();
  return g_caches[opcode];
}

int dyn_stack_effect(int opcode, int arg, int jump) {
  return PyCompile_OpcodeStackEffectWithJump(opcode, opcode >= HAVE_ARGUMENT ? arg : 0, jump);
}

/* ---------------------------------------------------------------------
 * Jump classification per version
 * --------------------------------------------------------------------- */
enum { JK_NONE = 0, JK_FORWARD = 1, JK_BACKWARD = 2 };

/* Direction of a relative jump opcode's argument (JK_*). */
static int jump_kind(int op) {
  switch (op) {
    case JUMP_FORWARD:
    case FOR_ITER:
    case SEND:
#if PY_VERSION_HEX >= 0x030C0000
    case POP_JUMP_IF_FALSE:
    case POP_JUMP_IF_TRUE:
    case POP_JUMP_IF_NONE:
    case POP_JUMP_IF_NOT_NONE:
#else
    case POP_JUMP_FORWARD_IF_FALSE:
    case POP_JUMP_FORWARD_IF_TRUE:
    case POP_JUMP_FORWARD_IF_NONE:
    case POP_JUMP_FORWARD_IF_NOT_NONE:
    case JUMP_IF_FALSE_OR_POP:
    case JUMP_IF_TRUE_OR_POP:
#endif
      return JK_FORWARD;
    case JUMP_BACKWARD:
    case JUMP_BACKWARD_NO_INTERRUPT:
#if PY_VERSION_HEX < 0x030C0000
    case POP_JUMP_BACKWARD_IF_FALSE:
    case POP_JUMP_BACKWARD_IF_TRUE:
    case POP_JUMP_BACKWARD_IF_NONE:
    case POP_JUMP_BACKWARD_IF_NOT_NONE:
#endif
      return JK_BACKWARD;
    default:
      return JK_NONE;
  }
}

/* The opcode to encode a jump from instruction i to target t with (the
 * direction variant on 3.11; JUMP_FORWARD/JUMP_BACKWARD on both), or -1
 * when this jump cannot go that way. */
static int jump_opcode_for(int op, int forward) {
  if (forward) {
    switch (op) {
      case JUMP_BACKWARD:
      case JUMP_BACKWARD_NO_INTERRUPT:
        return JUMP_FORWARD;
#if PY_VERSION_HEX < 0x030C0000
      case POP_JUMP_BACKWARD_IF_FALSE: return POP_JUMP_FORWARD_IF_FALSE;
      case POP_JUMP_BACKWARD_IF_TRUE: return POP_JUMP_FORWARD_IF_TRUE;
      case POP_JUMP_BACKWARD_IF_NONE: return POP_JUMP_FORWARD_IF_NONE;
      case POP_JUMP_BACKWARD_IF_NOT_NONE: return POP_JUMP_FORWARD_IF_NOT_NONE;
#endif
      default:
        return jump_kind(op) == JK_FORWARD ? op : -1;
    }
  }
  switch (op) {
    case JUMP_FORWARD: return JUMP_BACKWARD;
#if PY_VERSION_HEX < 0x030C0000
    case POP_JUMP_FORWARD_IF_FALSE: return POP_JUMP_BACKWARD_IF_FALSE;
    case POP_JUMP_FORWARD_IF_TRUE: return POP_JUMP_BACKWARD_IF_TRUE;
    case POP_JUMP_FORWARD_IF_NONE: return POP_JUMP_BACKWARD_IF_NONE;
    case POP_JUMP_FORWARD_IF_NOT_NONE: return POP_JUMP_BACKWARD_IF_NOT_NONE;
#endif
    default:
      return jump_kind(op) == JK_BACKWARD ? op : -1;
  }
}

/* (dyn.h) No fall-through after this opcode. */
int dyn_opcode_is_terminal(int op) {
  switch (op) {
    case RETURN_VALUE:
#if PY_VERSION_HEX >= 0x030C0000
    case RETURN_CONST:
    case INTERPRETER_EXIT:
#endif
    case RAISE_VARARGS:
    case RERAISE:
    case JUMP_FORWARD:
    case JUMP_BACKWARD:
    case JUMP_BACKWARD_NO_INTERRUPT:
      return 1;
    default:
      return 0;
  }
}

/* ---------------------------------------------------------------------
 * Decoding
 * --------------------------------------------------------------------- */
/* argval of an instruction: borrowed constant / name / local name. */
static PyObject* insn_argval(PyCodeObject* co, int op, int arg) {
  PyObject* consts = co->co_consts;
  PyObject* names = co->co_names;
  PyObject* locals = co->co_localsplusnames;
  int idx = -1;
  PyObject* tup = NULL;
  switch (op) {
    case LOAD_CONST:
    case KW_NAMES:
#if PY_VERSION_HEX >= 0x030C0000
    case RETURN_CONST:
#endif
      tup = consts, idx = arg;
      break;
    case LOAD_GLOBAL:
#if PY_VERSION_HEX >= 0x030C0000
    case LOAD_ATTR:
#endif
      tup = names, idx = arg >> 1;
      break;
#if PY_VERSION_HEX >= 0x030C0000
    case LOAD_SUPER_ATTR:
      tup = names, idx = arg >> 2;
      break;
    case LOAD_FROM_DICT_OR_GLOBALS:
#else
    case LOAD_ATTR:
    case LOAD_METHOD:
#endif
    case STORE_ATTR:
    case DELETE_ATTR:
    case STORE_GLOBAL:
    case DELETE_GLOBAL:
    case STORE_NAME:
    case DELETE_NAME:
    case LOAD_NAME:
    case IMPORT_NAME:
    case IMPORT_FROM:
      tup = names, idx = arg;
      break;
    case LOAD_FAST:
    case STORE_FAST:
    case DELETE_FAST:
#if PY_VERSION_HEX >= 0x030C0000
    case LOAD_FAST_CHECK:
    case LOAD_FAST_AND_CLEAR:
    case LOAD_FROM_DICT_OR_DEREF:
#else
    case LOAD_CLASSDEREF:
#endif
    case LOAD_DEREF:
    case STORE_DEREF:
    case DELETE_DEREF:
    case LOAD_CLOSURE:
    case MAKE_CELL:
      tup = locals, idx = arg;
      break;
    default:
      return NULL;
  }
  if (!tup || !PyTuple_Check(tup) || idx < 0 || idx >= PyTuple_GET_SIZE(tup)) return NULL;
  return PyTuple_GET_ITEM(tup, idx);
}

/* First pass: instructions with opcode/arg/offset; *starts = unit of the
 * first EXTENDED_ARG prefix of each. */
static int decode_units(const unsigned char* b, int n_units, dyn_code* out, int** starts) {
  out->insns = PyMem_Calloc((size_t)n_units + 1, sizeof(dyn_insn));
  *starts = PyMem_Calloc((size_t)n_units + 1, sizeof(int));
  out->index_of_offset = PyMem_Malloc(((size_t)n_units + 1) * sizeof(int));
  if (!out->insns || !*starts || !out->index_of_offset) {
    PyErr_NoMemory();
    return -1;
  }
  for (int u = 0; u <= n_units; u++) out->index_of_offset[u] = -1;
  out->n_units = n_units;
  int n = 0, ext = 0, start = 0, have_prefix = 0;
  for (int u = 0; u < n_units;) {
    int op = g_deopt[b[2 * u]], a = b[2 * u + 1];
    if (!have_prefix) start = u;
    if (op == EXTENDED_ARG) {
      ext = (ext | a) << 8;
      have_prefix = 1;
      u++;
      continue;
    }
    dyn_insn* in = &out->insns[n];
    in->opcode = op;
    in->arg = ext | a;
    in->offset = u;
    in->target = -1;
    in->line = -1;
    in->exc_handler = -1;
    (*starts)[n] = start;
    for (int k = start; k <= u; k++) out->index_of_offset[k] = n;
    n++;
    ext = 0;
    have_prefix = 0;
    u += 1 + g_caches[op];
  }
  out->n = n;
  return 0;
}

/* Jump targets as instruction indexes. */
static int decode_jumps(dyn_code* c) {
  for (int i = 0; i < c->n; i++) {
    dyn_insn* in = &c->insns[i];
    int k = jump_kind(in->opcode);
    if (k == JK_NONE) continue;
    int next = in->offset + 1 + g_caches[in->opcode];
    int t = k == JK_FORWARD ? next + in->arg : next - in->arg;
    if (t < 0 || t >= c->n_units || c->index_of_offset[t] < 0) {
      PyErr_Format(PyExc_ValueError, "ptc capture: jump at offset %d to an invalid offset %d",
                   in->offset, t);
      return -1;
    }
    in->target = c->index_of_offset[t];
  }
  return 0;
}

/* Reads one exception-table varint (6-bit groups, most significant first). */
static int read_exc_varint(const unsigned char* p, Py_ssize_t n, Py_ssize_t* pos, int* out) {
  if (*pos >= n) return -1;
  unsigned b = p[(*pos)++];
  long v = b & 63;
  while (b & 64) {
    if (*pos >= n || v > (1L << 24)) return -1;
    b = p[(*pos)++];
    v = (v << 6) | (b & 63);
  }
  *out = (int)v;
  return 0;
}

static int decode_exceptions(dyn_code* c) {
  PyObject* t = c->code->co_exceptiontable;
  if (!t || !PyBytes_Check(t)) return 0;
  const unsigned char* p = (const unsigned char*)PyBytes_AS_STRING(t);
  Py_ssize_t n = PyBytes_GET_SIZE(t), pos = 0;
  while (pos < n) {
    int start, len, target, dl;
    if (read_exc_varint(p, n, &pos, &start) || read_exc_varint(p, n, &pos, &len) ||
        read_exc_varint(p, n, &pos, &target) || read_exc_varint(p, n, &pos, &dl) ||
        target >= c->n_units || c->index_of_offset[target] < 0) {
      PyErr_SetString(PyExc_ValueError, "ptc capture: malformed exception table");
      return -1;
    }
    for (int i = 0; i < c->n; i++) {
      dyn_insn* in = &c->insns[i];
      if (in->offset < start || in->offset >= start + len) continue;
      in->exc_handler = c->index_of_offset[target];
      in->exc_depth = dl >> 1;
      in->exc_lasti = dl & 1;
    }
  }
  return 0;
}

/* Lines from co_lines(): (start byte, end byte, line or None) ranges. */
static int decode_lines(dyn_code* c) {
  PyObject* it = PyObject_CallMethod((PyObject*)c->code, "co_lines", NULL);
  PyObject* iter = it ? PyObject_GetIter(it) : NULL;
  Py_XDECREF(it);
  if (!iter) return -1;
  PyObject* item;
  int i = 0;
  while ((item = PyIter_Next(iter))) {
    long s = -1, e = -1, line = -1;
    if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 3) {
      s = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
      e = PyLong_AsLong(PyTuple_GET_ITEM(item, 1));
      PyObject* l = PyTuple_GET_ITEM(item, 2);
      if (l != Py_None) line = PyLong_AsLong(l);
    }
    Py_DECREF(item);
    if (PyErr_Occurred()) break;
    while (i < c->n && 2L * c->insns[i].offset < s) i++;
    for (int k = i; k < c->n && 2L * c->insns[k].offset < e; k++) c->insns[k].line = (int)line;
  }
  Py_DECREF(iter);
  return PyErr_Occurred() ? -1 : 0;
}

int dyn_code_decode(PyCodeObject* code, dyn_code* out) {
  memset(out, 0, sizeof *out);
  if (tables_init() < 0) return -1;
  PyObject* bytes = PyCode_GetCode(code);
  if (!bytes) return -1;
  out->code = (PyCodeObject*)Py_NewRef(code);
  int* starts = NULL;
  int n_units = (int)(PyBytes_GET_SIZE(bytes) / 2);
  int rc = decode_units((const unsigned char*)PyBytes_AS_STRING(bytes), n_units, out, &starts);
  Py_DECREF(bytes);
  PyMem_Free(starts);
  if (rc == 0) rc = decode_jumps(out);
  if (rc == 0) rc = decode_exceptions(out);
  if (rc == 0) rc = decode_lines(out);
  for (int i = 0; rc == 0 && i < out->n; i++)
    out->insns[i].argval = insn_argval(code, out->insns[i].opcode, out->insns[i].arg);
  if (rc != 0) dyn_code_free(out);
  return rc;
}

void dyn_code_free(dyn_code* c) {
  if (!c) return;
  Py_CLEAR(c->code);
  PyMem_Free(c->insns);
  PyMem_Free(c->index_of_offset);
  c->insns = NULL;
  c->index_of_offset = NULL;
  c->n = c->n_units = 0;
}

/* ---------------------------------------------------------------------
 * Assembler
 * --------------------------------------------------------------------- */
int dyn_asm_emit(dyn_asm* a, int opcode, int arg, int target, int line) {
  if (a->n == a->cap) {
    int cap = a->cap ? 2 * a->cap : 64;
    dyn_insn* p = PyMem_Realloc(a->insns, (size_t)cap * sizeof(dyn_insn));
    if (!p) {
      PyErr_NoMemory();
      return -1;
    }
    a->insns = p;
    a->cap = cap;
  }
  dyn_insn* in = &a->insns[a->n];
  memset(in, 0, sizeof *in);
  in->opcode = opcode;
  in->arg = arg;
  in->offset = -1;
  in->target = target;
  in->line = line;
  in->exc_handler = -1;
  return a->n++;
}

void dyn_asm_free(dyn_asm* a) {
  if (!a) return;
  PyMem_Free(a->insns);
  a->insns = NULL;
  a->n = a->cap = 0;
}

/* Working layout of an assembly: per instruction final opcode, number of
 * EXTENDED_ARG prefixes, start unit and encoded argument. */
typedef struct asm_layout {
  int n;
  int* op;
  int* ext;
  int* start;
  int* arg;
  int total; /* code units */
} asm_layout;

static void layout_free(asm_layout* L) {
  PyMem_Free(L->op);
  PyMem_Free(L->ext);
  PyMem_Free(L->start);
  PyMem_Free(L->arg);
}

static int ext_needed(int arg) {
  unsigned u = (unsigned)arg;
  return u > 0xFFFFFFu ? 3 : u > 0xFFFFu ? 2 : u > 0xFFu ? 1 : 0;
}

static int insn_units(const asm_layout* L, int i) {
  return L->ext[i] + 1 + g_caches[L->op[i]];
}

/* Opcodes and arguments; jump arguments iterated until the EXTENDED_ARG
 * sizes settle (sizes only grow, so it terminates). */
static int layout_compute(const dyn_asm* a, asm_layout* L) {
  int n = a->n;
  L->n = n;
  L->op = PyMem_Calloc((size_t)n + 1, sizeof(int));
  L->ext = PyMem_Calloc((size_t)n + 1, sizeof(int));
  L->start = PyMem_Calloc((size_t)n + 1, sizeof(int));
  L->arg = PyMem_Calloc((size_t)n + 1, sizeof(int));
  if (!L->op || !L->ext || !L->start || !L->arg) {
    PyErr_NoMemory();
    return -1;
  }
  for (int i = 0; i < n; i++) {
    const dyn_insn* in = &a->insns[i];
    if (in->opcode < 0 || in->opcode > 255 || in->opcode == EXTENDED_ARG || in->arg < 0) {
      PyErr_Format(PyExc_ValueError, "ptc capture: bad instruction %d (opcode %d, arg %d)", i,
                   in->opcode, in->arg);
      return -1;
    }
    L->op[i] = in->opcode;
    L->arg[i] = in->arg;
    if (jump_kind(in->opcode) != JK_NONE) {
      if (in->target < 0 || in->target >= n) {
        PyErr_Format(PyExc_ValueError, "ptc capture: jump %d without a valid target", i);
        return -1;
      }
      int op = jump_opcode_for(in->opcode, in->target > i);
      if (op < 0) {
        PyErr_Format(PyExc_ValueError, "ptc capture: %s at %d cannot jump %s", dyn_opname(in->opcode),
                     i, in->target > i ? "forward" : "backward");
        return -1;
      }
      L->op[i] = op;
    }
    L->ext[i] = ext_needed(L->arg[i]);
  }
  for (int changed = 1; changed;) {
    changed = 0;
    int u = 0;
    for (int i = 0; i < n; i++) {
      L->start[i] = u;
      u += insn_units(L, i);
    }
    L->start[n] = L->total = u;
    for (int i = 0; i < n; i++) {
      int t = a->insns[i].target;
      if (jump_kind(L->op[i]) == JK_NONE) continue;
      int next = L->start[i] + L->ext[i] + 1 + g_caches[L->op[i]];
      L->arg[i] = t > i ? L->start[t] - next : next - L->start[t];
      if (ext_needed(L->arg[i]) > L->ext[i]) {
        L->ext[i] = ext_needed(L->arg[i]);
        changed = 1;
      }
    }
  }
  return 0;
}

static PyObject* emit_code_bytes(const asm_layout* L) {
  PyObject* b = PyBytes_FromStringAndSize(NULL, 2 * (Py_ssize_t)L->total);
  if (!b) return NULL;
  unsigned char* p = (unsigned char*)PyBytes_AS_STRING(b);
  memset(p, 0, 2 * (size_t)L->total);
  for (int i = 0; i < L->n; i++) {
    unsigned char* q = p + 2 * L->start[i];
    unsigned arg = (unsigned)L->arg[i];
    for (int k = L->ext[i]; k >= 1; k--) {
      *q++ = EXTENDED_ARG;
      *q++ = (unsigned char)((arg >> (8 * k)) & 0xFF);
    }
    *q++ = (unsigned char)L->op[i];
    *q++ = (unsigned char)(arg & 0xFF);
    /* caches stay zero (CACHE, 0) */
  }
  return b;
}

/* Growable byte buffer. */
typedef struct bbuf {
  unsigned char* p;
  Py_ssize_t n, cap;
} bbuf;

static int bbuf_put(bbuf* b, unsigned v) {
  if (b->n == b->cap) {
    Py_ssize_t cap = b->cap ? 2 * b->cap : 64;
    unsigned char* q = PyMem_Realloc(b->p, (size_t)cap);
    if (!q) {
      PyErr_NoMemory();
      return -1;
    }
    b->p = q;
    b->cap = cap;
  }
  b->p[b->n++] = (unsigned char)v;
  return 0;
}

static PyObject* bbuf_finish(bbuf* b) {
  PyObject* r = PyBytes_FromStringAndSize((const char*)b->p, b->n);
  PyMem_Free(b->p);
  b->p = NULL;
  return r;
}

/* Exception-table varint: 6-bit groups, most significant first, 0x40 =
 * more follow; `first` (0x80) marks an entry's first byte. */
static int put_exc_varint(bbuf* b, unsigned v, unsigned first) {
  int shift = 0;
  while ((v >> (shift + 6)) != 0) shift += 6;
  for (; shift >= 0; shift -= 6) {
    unsigned byte = (v >> shift) & 63;
    if (shift) byte |= 64;
    if (bbuf_put(b, byte | first) < 0) return -1;
    first = 0;
  }
  return 0;
}

static PyObject* emit_exception_table(const dyn_asm* a, const asm_layout* L) {
  bbuf b = {0};
  for (int i = 0; i < a->n;) {
    const dyn_insn* in = &a->insns[i];
    if (in->exc_handler < 0) {
      i++;
      continue;
    }
    if (in->exc_handler >= a->n) {
      PyMem_Free(b.p);
      PyErr_Format(PyExc_ValueError, "ptc capture: bad exception handler at %d", i);
      return NULL;
    }
    int j = i + 1;
    while (j < a->n && a->insns[j].exc_handler == in->exc_handler &&
           a->insns[j].exc_depth == in->exc_depth && a->insns[j].exc_lasti == in->exc_lasti)
      j++;
    unsigned start = (unsigned)L->start[i], end = (unsigned)L->start[j];
    unsigned dl = ((unsigned)in->exc_depth << 1) | (in->exc_lasti ? 1u : 0u);
    if (put_exc_varint(&b, start, 128) < 0 || put_exc_varint(&b, end - start, 0) < 0 ||
        put_exc_varint(&b, (unsigned)L->start[in->exc_handler], 0) < 0 ||
        put_exc_varint(&b, dl, 0) < 0) {
      PyMem_Free(b.p);
      return NULL;
    }
    i = j;
  }
  return bbuf_finish(&b);
}

/* Location-table signed varint: zigzag-like sign bit, 6-bit groups,
 * least significant first, 0x40 = more follow. */
static int put_loc_svarint(bbuf* b, int v) {
  unsigned u = v < 0 ? (((unsigned)(-(long)v)) << 1) | 1u : ((unsigned)v) << 1;
  while (u >= 64) {
    if (bbuf_put(b, 64 | (u & 63)) < 0) return -1;
    u >>= 6;
  }
  return bbuf_put(b, u);
}

/* Line table: runs of one line split in entries of <= 8 units, the "no
 * column" form (code 13, line delta) or "no location" (code 15). */
static PyObject* emit_line_table(const dyn_asm* a, const asm_layout* L, int firstlineno) {
  bbuf b = {0};
  int prev = firstlineno;
  for (int i = 0; i < a->n;) {
    int line = a->insns[i].line < 0 ? -1 : a->insns[i].line;
    int j = i + 1;
    while (j < a->n && (a->insns[j].line < 0 ? -1 : a->insns[j].line) == line) j++;
    for (int units = L->start[j] - L->start[i]; units > 0;) {
      int len = units > 8 ? 8 : units;
      units -= len;
      int rc;
      if (line < 0) {
        rc = bbuf_put(&b, 0x80u | (15u << 3) | (unsigned)(len - 1));
      } else {
        rc = bbuf_put(&b, 0x80u | (13u << 3) | (unsigned)(len - 1));
        if (rc == 0) rc = put_loc_svarint(&b, line - prev);
        prev = line;
      }
      if (rc < 0) {
        PyMem_Free(b.p);
        return NULL;
      }
    }
    i = j;
  }
  return bbuf_finish(&b);
}

/* Stack effect used by the flow analysis: the compiler's, except for
 * RETURN_GENERATOR (the value sent on the first resumption is pushed: the
 * POP_TOP that follows pops it). */
static int flow_effect(int op, int arg, int jump) {
  if (op == RETURN_GENERATOR) return 1;
  return dyn_stack_effect(op, arg, jump);
}

static int flow_push(int* depth, int* work, int* nw, int t, int d, int n) {
  if (t < 0 || t >= n || d < 0) {
    PyErr_Format(PyExc_ValueError, "ptc capture: stack underflow or bad flow at instruction %d", t);
    return -1;
  }
  if (depth[t] >= 0) {
    if (depth[t] != d) {
      PyErr_Format(PyExc_ValueError,
                   "ptc capture: inconsistent stack depth at instruction %d (%d vs %d)", t,
                   depth[t], d);
      return -1;
    }
    return 0;
  }
  depth[t] = d;
  work[(*nw)++] = t;
  return 0;
}

/* Maximum stack depth over every path from instruction 0 and every
 * exception handler reached; -1 on an inconsistency. */
static int flow_stacksize(const dyn_asm* a) {
  int n = a->n, maxd = 0, nw = 0, rc = 0;
  if (n == 0) return 0;
  int* depth = PyMem_Malloc((size_t)n * sizeof(int));
  int* work = PyMem_Malloc((size_t)n * sizeof(int));
  if (!depth || !work) {
    PyMem_Free(depth);
    PyMem_Free(work);
    PyErr_NoMemory();
    return -1;
  }
  for (int i = 0; i < n; i++) depth[i] = -1;
  rc = flow_push(depth, work, &nw, 0, 0, n);
  while (rc == 0 && nw > 0) {
    int i = work[--nw];
    const dyn_insn* in = &a->insns[i];
    int d = depth[i];
    if (d > maxd) maxd = d;
    if (in->exc_handler >= 0)
      rc = flow_push(depth, work, &nw, in->exc_handler, in->exc_depth + 1 + (in->exc_lasti ? 1 : 0), n);
    int e0 = flow_effect(in->opcode, in->arg, 0);
    int e1 = flow_effect(in->opcode, in->arg, 1);
    if (e0 == PY_INVALID_STACK_EFFECT || e1 == PY_INVALID_STACK_EFFECT) {
      PyErr_Clear();
      PyErr_Format(PyExc_ValueError, "ptc capture: no stack effect for %s", dyn_opname(in->opcode));
      rc = -1;
      break;
    }
    if (d + e0 > maxd) maxd = d + e0;
    if (d + e1 > maxd) maxd = d + e1;
    if (rc == 0 && jump_kind(in->opcode) != JK_NONE)
      rc = flow_push(depth, work, &nw, in->target, d + e1, n);
    if (rc == 0 && !dyn_opcode_is_terminal(in->opcode) && i + 1 < n)
      rc = flow_push(depth, work, &nw, i + 1, d + e0, n);
  }
  PyMem_Free(depth);
  PyMem_Free(work);
  return rc == 0 ? maxd : -1;
}

/* Sets kwargs[key] = value (stolen); -1 when value is NULL. */
static int kw_set(PyObject* kw, const char* key, PyObject* value) {
  if (!value) return -1;
  int rc = PyDict_SetItemString(kw, key, value);
  Py_DECREF(value);
  return rc;
}

/* The common builder: dyn_asm_build with explicit posonly/kwonly counts;
 * the stack size is at least `min_stack`. */
static PyObject* asm_build_full(dyn_asm* a, PyCodeObject* like, PyObject* name, PyObject* qualname,
                                PyObject* consts, PyObject* names, PyObject* varnames,
                                PyObject* cellvars, PyObject* freevars, int argcount,
                                int posonly, int kwonly, int flags, int min_stack) {
  if (tables_init() < 0) return NULL;
  int stacksize = flow_stacksize(a);
  if (stacksize < 0) return NULL;
  if (stacksize < min_stack) stacksize = min_stack;
  asm_layout L = {0};
  PyObject* kw = NULL;
  PyObject* result = NULL;
  if (layout_compute(a, &L) < 0) goto done;
  kw = PyDict_New();
  if (!kw) goto done;
  if (kw_set(kw, "co_code", emit_code_bytes(&L)) < 0 ||
      kw_set(kw, "co_exceptiontable", emit_exception_table(a, &L)) < 0 ||
      kw_set(kw, "co_linetable", emit_line_table(a, &L, like->co_firstlineno)) < 0 ||
      kw_set(kw, "co_stacksize", PyLong_FromLong(stacksize)) < 0 ||
      kw_set(kw, "co_argcount", PyLong_FromLong(argcount)) < 0 ||
      kw_set(kw, "co_posonlyargcount", PyLong_FromLong(posonly)) < 0 ||
      kw_set(kw, "co_kwonlyargcount", PyLong_FromLong(kwonly)) < 0 ||
      kw_set(kw, "co_flags", PyLong_FromLong(flags)) < 0 ||
      kw_set(kw, "co_nlocals", PyLong_FromSsize_t(PyTuple_Size(varnames))) < 0 ||
      kw_set(kw, "co_consts", Py_NewRef(consts)) < 0 ||
      kw_set(kw, "co_names", Py_NewRef(names)) < 0 ||
      kw_set(kw, "co_varnames", Py_NewRef(varnames)) < 0 ||
      kw_set(kw, "co_cellvars", Py_NewRef(cellvars)) < 0 ||
      kw_set(kw, "co_freevars", Py_NewRef(freevars)) < 0 ||
      kw_set(kw, "co_name", Py_NewRef(name)) < 0 ||
      kw_set(kw, "co_qualname", Py_NewRef(qualname)) < 0)
    goto done;
  PyObject* replace = PyObject_GetAttrString((PyObject*)like, "replace");
  if (!replace) goto done;
  PyObject* empty = PyTuple_New(0);
  if (empty) result = PyObject_Call(replace, empty, kw);
  Py_XDECREF(empty);
  Py_DECREF(replace);
done:
  Py_XDECREF(kw);
  layout_free(&L);
  return result;
}

PyObject* dyn_asm_build(dyn_asm* a, PyCodeObject* like, PyObject* name, PyObject* consts,
                        PyObject* names, PyObject* varnames, PyObject* cellvars,
                        PyObject* freevars, int argcount, int flags) {
  if (!name || !consts || !names || !varnames || !cellvars || !freevars) {
    PyErr_SetString(PyExc_ValueError, "ptc capture: dyn_asm_build needs every tuple");
    return NULL;
  }
  /* code made from `like` (a copy of it, or of a part) never needs less
   * stack than it: a safety margin against an analysis slip */
  return asm_build_full(a, like, name, name, consts, names, varnames, cellvars, freevars, argcount,
                        0, 0, flags, like->co_stacksize);
}

/* ---------------------------------------------------------------------
 * Test entry points
 * --------------------------------------------------------------------- */
PyObject* dyn_py_decode(PyObject* self, PyObject* code) {
  (void)self;
  if (!PyCode_Check(code)) {
    PyErr_SetString(PyExc_TypeError, "_dyn_decode expects a code object");
    return NULL;
  }
  dyn_code c;
  if (dyn_code_decode((PyCodeObject*)code, &c) < 0) return NULL;
  PyObject* list = PyList_New(c.n);
  for (int i = 0; list && i < c.n; i++) {
    dyn_insn* in = &c.insns[i];
    PyObject* t = Py_BuildValue("(siiiiiii)", dyn_opname(in->opcode), in->arg, in->offset,
                                in->target, in->line, in->exc_handler, in->exc_depth,
                                in->exc_lasti);
    if (!t) Py_CLEAR(list);
    else PyList_SET_ITEM(list, i, t);
  }
  dyn_code_free(&c);
  return list;
}

PyObject* dyn_py_roundtrip(PyObject* self, PyObject* code) {
  (void)self;
  if (!PyCode_Check(code)) {
    PyErr_SetString(PyExc_TypeError, "_dyn_roundtrip expects a code object");
    return NULL;
  }
  PyCodeObject* co = (PyCodeObject*)code;
  dyn_code c;
  if (dyn_code_decode(co, &c) < 0) return NULL;
  dyn_asm a = {0};
  PyObject* res = NULL;
  for (int i = 0; i < c.n; i++) {
    const dyn_insn* in = &c.insns[i];
    int k = dyn_asm_emit(&a, in->opcode, in->arg, in->target, in->line);
    if (k < 0) goto done;
    a.insns[k].exc_handler = in->exc_handler;
    a.insns[k].exc_depth = in->exc_depth;
    a.insns[k].exc_lasti = in->exc_lasti;
  }
  PyObject* varnames = PyObject_GetAttrString(code, "co_varnames");
  PyObject* cellvars = PyObject_GetAttrString(code, "co_cellvars");
  PyObject* freevars = PyObject_GetAttrString(code, "co_freevars");
  if (varnames && cellvars && freevars)
    res = asm_build_full(&a, co, co->co_name, co->co_qualname, co->co_consts, co->co_names,
                         varnames, cellvars, freevars, co->co_argcount, co->co_posonlyargcount,
                         co->co_kwonlyargcount, co->co_flags, 0 /* tests check the analysis */);
  Py_XDECREF(varnames);
  Py_XDECREF(cellvars);
  Py_XDECREF(freevars);
done:
  dyn_asm_free(&a);
  dyn_code_free(&c);
  return res;
}

#else /* !PTC_DYN_SUPPORTED: the module builds, the capture refuses */

int dyn_code_decode(PyCodeObject* code, dyn_code* out) {
  (void)code;
  memset(out, 0, sizeof *out);
  PyErr_SetString(PyExc_RuntimeError, "ptc capture supports Python 3.11 and 3.12 only");
  return -1;
}
void dyn_code_free(dyn_code* c) { (void)c; }
const char* dyn_opname(int opcode) { (void)opcode; return "<unsupported Python>"; }
int dyn_cache_entries(int opcode) { (void)opcode; return 0; }
int dyn_stack_effect(int opcode, int arg, int jump) {
  return PyCompile_OpcodeStackEffectWithJump(opcode, arg, jump);
}
int dyn_asm_emit(dyn_asm* a, int opcode, int arg, int target, int line) {
  (void)a, (void)opcode, (void)arg, (void)target, (void)line;
  PyErr_SetString(PyExc_RuntimeError, "ptc capture supports Python 3.11 and 3.12 only");
  return -1;
}
void dyn_asm_free(dyn_asm* a) { (void)a; }
PyObject* dyn_asm_build(dyn_asm* a, PyCodeObject* like, PyObject* name, PyObject* consts,
                        PyObject* names, PyObject* varnames, PyObject* cellvars,
                        PyObject* freevars, int argcount, int flags) {
  (void)a, (void)like, (void)name, (void)consts, (void)names, (void)varnames, (void)cellvars;
  (void)freevars, (void)argcount, (void)flags;
  PyErr_SetString(PyExc_RuntimeError, "ptc capture supports Python 3.11 and 3.12 only");
  return NULL;
}
PyObject* dyn_py_decode(PyObject* self, PyObject* code) {
  (void)self, (void)code;
  PyErr_SetString(PyExc_RuntimeError, "ptc capture supports Python 3.11 and 3.12 only");
  return NULL;
}
PyObject* dyn_py_roundtrip(PyObject* self, PyObject* code) {
  return dyn_py_decode(self, code);
}

#endif
