/* dyn_codegen.c - bytecode of graph breaks (issue 6): the transformed
 * function f(state) that restores the stack and live locals, runs the
 * unsupported instruction group plainly and calls the resume function of
 * each way out; and the resume functions `__resume_at_<byte offset>` (a
 * prologue restoring the stack from their arguments, then a jump into a
 * copy of the whole original code), cached per (code, resume point, NULL
 * layout of the stack, live locals) so their own cache entries persist.
 *
 * Stack items are tracked symbolically through the group (which input item
 * each output item is, or a new value, or the NULL of the calling
 * convention, or "maybe NULL" after a method lookup) so the NULLs are
 * restored with PUSH_NULL and never travel through Python values. Items
 * below the lowest position the group touches are not pushed at all in f:
 * they go straight from `state` to the resume call.
 *
 * A group inside a try/with block ("covered" by the exception table) keeps
 * its exception entries: f then also holds a plain copy of the whole
 * original code whose handlers the group's entries point at, and restores
 * the whole stack (the handlers unwind to depths below the group). An
 * exception raised by the group is handled exactly as in the original and
 * the function finishes as plain Python in f; the normal exits still call
 * the resume functions (which carry the same handlers for the rest of the
 * block). Refused: generators/coroutines, cell variables (locals captured
 * by inner functions), free variables without the closure, groups with an
 * inner jump, a "maybe NULL" left on the stack. */
#include "dyn.h"

#include <opcode.h>
#include <stdio.h>
#include <string.h>

#if PTC_DYN_SUPPORTED

#define PY312 (PY_VERSION_HEX >= 0x030C0000)

/* symbolic stack items: >= 0 an input stack position, else: */
enum { SI_NEW = -1, SI_NULL = -2, SI_MAYBE_NULL = -3 };

#define MAX_STACK 4096

static PyObject* g_resume_cache; /* (code, index, nulls bytes, live tuple) -> code */

/* ---------------------------------------------------------------------
 * Instruction classification
 * --------------------------------------------------------------------- */
static int is_local_op(int op) {
  switch (op) {
    case LOAD_FAST:
    case STORE_FAST:
    case DELETE_FAST:
#if PY312
    case LOAD_FAST_CHECK:
    case LOAD_FAST_AND_CLEAR:
#endif
      return 1;
    default:
      return 0;
  }
}

/* Opcodes whose argument indexes a cell/free slot of localsplus. */
static int is_deref_op(int op) {
  switch (op) {
    case LOAD_DEREF:
    case STORE_DEREF:
    case DELETE_DEREF:
    case LOAD_CLOSURE:
    case MAKE_CELL:
#if PY312
    case LOAD_FROM_DICT_OR_DEREF:
#else
    case LOAD_CLASSDEREF:
#endif
      return 1;
    default:
      return 0;
  }
}

/* Number of plain locals (varnames) and free variables of `co`. */
static int n_varnames(PyCodeObject* co) { return co->co_nlocals; }
static int n_freevars(PyCodeObject* co) { return co->co_nfreevars; }

/* Items popped by `op` for the generic rule (pushed = popped + the
 * compiler's stack effect); -1 when unknown (the group is refused). */
static int generic_pops(int op, int arg) {
  switch (op) {
    case NOP:
    case RESUME:
    case LOAD_CONST:
    case LOAD_FAST:
    case LOAD_NAME:
    case LOAD_DEREF:
    case LOAD_CLOSURE:
    case LOAD_ASSERTION_ERROR:
    case LOAD_BUILD_CLASS:
    case DELETE_FAST:
    case DELETE_GLOBAL:
    case DELETE_NAME:
    case JUMP_FORWARD:
    case JUMP_BACKWARD:
    case JUMP_BACKWARD_NO_INTERRUPT:
    case SETUP_ANNOTATIONS:
#if PY312
    case LOAD_FAST_CHECK:
    case RETURN_CONST:
#endif
      return 0;
    case POP_TOP:
    case UNARY_NEGATIVE:
    case UNARY_NOT:
    case UNARY_INVERT:
#if !PY312
    case UNARY_POSITIVE:
    case LOAD_ATTR:
    case PRINT_EXPR:
    case LIST_TO_TUPLE:
#else
    case CALL_INTRINSIC_1:
#endif
    case GET_ITER:
    case GET_LEN:
    case DELETE_ATTR:
    case STORE_FAST:
    case STORE_GLOBAL:
    case STORE_NAME:
    case UNPACK_SEQUENCE:
    case UNPACK_EX:
    case RETURN_VALUE:
    case IMPORT_FROM:
    case BEFORE_WITH:
    case LIST_APPEND:
    case SET_ADD:
    case LIST_EXTEND:
    case SET_UPDATE:
    case DICT_UPDATE:
    case DICT_MERGE:
    case GET_YIELD_FROM_ITER:
      return 1;
    case BINARY_OP:
    case BINARY_SUBSCR:
    case COMPARE_OP:
    case IS_OP:
    case CONTAINS_OP:
    case DELETE_SUBSCR:
    case STORE_ATTR:
    case IMPORT_NAME:
    case MAP_ADD:
#if PY312
    case END_FOR:
    case CALL_INTRINSIC_2:
#endif
      return 2;
    case STORE_SUBSCR:
#if PY312
    case BINARY_SLICE:
#endif
      return 3;
#if PY312
    case STORE_SLICE:
      return 4;
#endif
    case BUILD_TUPLE:
    case BUILD_LIST:
    case BUILD_SET:
    case BUILD_STRING:
    case BUILD_SLICE:
    case RAISE_VARARGS:
      return arg;
    case BUILD_MAP:
      return 2 * arg;
    case BUILD_CONST_KEY_MAP:
      return arg + 1;
    case FORMAT_VALUE:
      return 1 + ((arg & 4) ? 1 : 0);
    case MAKE_FUNCTION:
      return 1 + ((arg & 1) != 0) + ((arg & 2) != 0) + ((arg & 4) != 0) + ((arg & 8) != 0);
    default:
      return -1;
  }
}

/* A method lookup that pushes (method, self) or (NULL, attribute) at run
 * time: 3.11 LOAD_METHOD, 3.12 LOAD_ATTR / LOAD_SUPER_ATTR with the method
 * bit. Ending a group, it is emitted as the plain attribute load followed by
 * PUSH_NULL; SWAP 2 (NULL, bound attribute), which calls the same way. */
static int is_method_load(const dyn_insn* in) {
#if PY312
  return (in->opcode == LOAD_ATTR || in->opcode == LOAD_SUPER_ATTR) && (in->arg & 1);
#else
  return in->opcode == LOAD_METHOD;
#endif
}

/* Items a method lookup pops (the owner; 3.12 LOAD_SUPER_ATTR: super,
 * class, self). */
static int method_load_pops(const dyn_insn* in) {
#if PY312
  if (in->opcode == LOAD_SUPER_ATTR) return 3;
#endif
  (void)in;
  return 1;
}

/* ---------------------------------------------------------------------
 * Symbolic stack through the group
 * --------------------------------------------------------------------- */
typedef struct symstack {
  int item[MAX_STACK];
  int n;
  int low; /* lowest position read or written */
} symstack;

static int sym_pop(symstack* s, int k) {
  if (k < 0 || k > s->n) return -1;
  s->n -= k;
  if (s->n < s->low) s->low = s->n;
  return 0;
}

static int sym_push(symstack* s, int v) {
  if (s->n >= MAX_STACK) return -1;
  s->item[s->n++] = v;
  return 0;
}

static int sym_touch(symstack* s, int pos) {
  if (pos < 0) return -1;
  if (pos < s->low) s->low = pos;
  return 0;
}

/* Applies one instruction (`jump`: the jump is taken) with the physical
 * semantics of the interpreter. -1: cannot be analysed. */
static int sym_apply(symstack* s, const dyn_insn* in, int jump) {
  int op = in->opcode, arg = in->arg;
  switch (op) {
    case KW_NAMES:
#if !PY312
    case PRECALL:
#endif
      return 0;
    case PUSH_NULL:
      return sym_push(s, SI_NULL);
    case LOAD_GLOBAL:
      if ((arg & 1) && sym_push(s, SI_NULL) < 0) return -1;
      return sym_push(s, SI_NEW);
#if !PY312
    case LOAD_METHOD:
      if (sym_pop(s, 1) < 0 || sym_push(s, SI_MAYBE_NULL) < 0) return -1;
      return sym_push(s, SI_NEW);
#else
    case LOAD_ATTR:
    case LOAD_SUPER_ATTR:
      if (sym_pop(s, op == LOAD_ATTR ? 1 : 3) < 0) return -1;
      if ((arg & 1) && sym_push(s, SI_MAYBE_NULL) < 0) return -1;
      return sym_push(s, SI_NEW);
    case LOAD_FAST_AND_CLEAR:
      return sym_push(s, SI_MAYBE_NULL);
#endif
    case CALL:
      if (sym_pop(s, arg + 2) < 0) return -1;
      return sym_push(s, SI_NEW);
    case CALL_FUNCTION_EX:
      if (sym_pop(s, 3 + (arg & 1)) < 0) return -1;
      return sym_push(s, SI_NEW);
    case COPY:
      if (arg < 1 || arg > s->n || sym_touch(s, s->n - arg) < 0) return -1;
      return sym_push(s, s->item[s->n - arg]);
    case SWAP: {
      if (arg < 1 || arg > s->n || sym_touch(s, s->n - arg) < 0) return -1;
      int t = s->item[s->n - 1];
      s->item[s->n - 1] = s->item[s->n - arg];
      s->item[s->n - arg] = t;
      return 0;
    }
    case FOR_ITER:
      if (jump) return sym_pop(s, 1); /* exhausted: the iterator is popped */
      return sym_touch(s, s->n - 1) < 0 ? -1 : sym_push(s, SI_NEW);
#if !PY312
    case JUMP_IF_FALSE_OR_POP:
    case JUMP_IF_TRUE_OR_POP:
      if (jump) return sym_touch(s, s->n - 1);
      return sym_pop(s, 1);
    case POP_JUMP_FORWARD_IF_FALSE:
    case POP_JUMP_FORWARD_IF_TRUE:
    case POP_JUMP_FORWARD_IF_NONE:
    case POP_JUMP_FORWARD_IF_NOT_NONE:
    case POP_JUMP_BACKWARD_IF_FALSE:
    case POP_JUMP_BACKWARD_IF_TRUE:
    case POP_JUMP_BACKWARD_IF_NONE:
    case POP_JUMP_BACKWARD_IF_NOT_NONE:
#else
    case POP_JUMP_IF_FALSE:
    case POP_JUMP_IF_TRUE:
    case POP_JUMP_IF_NONE:
    case POP_JUMP_IF_NOT_NONE:
#endif
      return sym_pop(s, 1);
    default:
      break;
  }
  int pops = generic_pops(op, arg);
  if (pops < 0) return -1;
  int eff = dyn_stack_effect(op, arg, jump);
  if (eff == PY_INVALID_STACK_EFFECT || pops + eff < 0) return -1;
  /* in-place container updates read the item `arg` below */
  if ((op == LIST_APPEND || op == SET_ADD || op == LIST_EXTEND || op == SET_UPDATE ||
       op == DICT_UPDATE || op == DICT_MERGE || op == MAP_ADD) &&
      sym_touch(s, s->n - pops - arg) < 0)
    return -1;
  if (sym_pop(s, pops) < 0) return -1;
  for (int k = 0; k < pops + eff; k++)
    if (sym_push(s, SI_NEW) < 0) return -1;
  return 0;
}

/* ---------------------------------------------------------------------
 * Helpers for building code
 * --------------------------------------------------------------------- */
typedef struct cgbuf {
  dyn_asm a;
  PyObject* consts; /* list: original consts, then ours */
  Py_ssize_t n_orig_consts;
  int line;
} cgbuf;

static int emit(cgbuf* b, int op, int arg) { return dyn_asm_emit(&b->a, op, arg, -1, b->line); }

/* Index of an added constant (ints are looked up among the added ones by
 * identity of value and type, others appended). */
static int add_const(cgbuf* b, PyObject* v) {
  Py_ssize_t n = PyList_GET_SIZE(b->consts);
  for (Py_ssize_t i = b->n_orig_consts; i < n; i++) {
    PyObject* c = PyList_GET_ITEM(b->consts, i);
    if (c == v) return (int)i;
    if (PyLong_CheckExact(c) && PyLong_CheckExact(v)) {
      int eq = PyObject_RichCompareBool(c, v, Py_EQ);
      if (eq < 0) return -1;
      if (eq) return (int)i;
    }
  }
  if (PyList_Append(b->consts, v) < 0) return -1;
  return (int)n;
}

static int add_int_const(cgbuf* b, long v) {
  PyObject* o = PyLong_FromLong(v);
  if (!o) return -1;
  int k = add_const(b, o);
  Py_DECREF(o);
  return k;
}

/* Emits state[k] onto the stack (LOAD_FAST 0; LOAD_CONST k; BINARY_SUBSCR). */
static int emit_state_item(cgbuf* b, int k) {
  int c = add_int_const(b, k);
  if (c < 0 || emit(b, LOAD_FAST, 0) < 0 || emit(b, LOAD_CONST, c) < 0 ||
      emit(b, BINARY_SUBSCR, 0) < 0)
    return -1;
  return 0;
}

/* Emits the call sequence of `nargs` arguments already pushed above
 * [NULL, callable]. */
static int emit_call(cgbuf* b, int nargs) {
#if !PY312
  if (emit(b, PRECALL, nargs) < 0) return -1;
#endif
  return emit(b, CALL, nargs);
}

/* A local read that is always checked for being bound. */
static int checked_load(void) {
#if PY312
  return LOAD_FAST_CHECK;
#else
  return LOAD_FAST;
#endif
}

/* ---------------------------------------------------------------------
 * Resume functions
 * --------------------------------------------------------------------- */
/* A resume point: where to continue in the original code and what is on
 * the stack (nulls[p] != 0: NULL) and in the locals. */
typedef struct resume_pt {
  int index;        /* instruction index in the original code */
  int n_stack;
  const char* nulls;
  const int* live;  /* original local indexes */
  int n_live;
} resume_pt;

static PyObject* resume_key(const dyn_code* dc, const resume_pt* r) {
  PyObject* nulls = PyBytes_FromStringAndSize(r->nulls, r->n_stack);
  PyObject* live = PyTuple_New(r->n_live);
  PyObject* key = NULL;
  for (int i = 0; live && i < r->n_live; i++) {
    PyObject* v = PyLong_FromLong(r->live[i]);
    if (!v) Py_CLEAR(live);
    else PyTuple_SET_ITEM(live, i, v);
  }
  if (nulls && live) key = Py_BuildValue("(OiOO)", (PyObject*)dc->code, r->index, nulls, live);
  Py_XDECREF(nulls);
  Py_XDECREF(live);
  return key;
}

/* varnames of a resume function and the map original local -> new index. */
static PyObject* resume_varnames(const dyn_code* dc, const resume_pt* r, int* map, int* n_args) {
  PyObject* orig = dc->code->co_localsplusnames;
  int nl = n_varnames(dc->code), k = 0;
  PyObject* names = PyList_New(0);
  if (!names) return NULL;
  for (int p = 0; p < r->n_stack; p++) {
    if (r->nulls[p]) continue;
    PyObject* s = PyUnicode_FromFormat("__stack%d", p);
    if (!s || PyList_Append(names, s) < 0) {
      Py_XDECREF(s);
      Py_DECREF(names);
      return NULL;
    }
    Py_DECREF(s);
    k++;
  }
  for (int i = 0; i < nl; i++) map[i] = -1;
  for (int j = 0; j < r->n_live; j++) {
    map[r->live[j]] = k++;
    if (PyList_Append(names, PyTuple_GET_ITEM(orig, r->live[j])) < 0) goto fail;
  }
  *n_args = k;
  for (int i = 0; i < nl; i++) {
    if (map[i] >= 0) continue;
    map[i] = k++;
    if (PyList_Append(names, PyTuple_GET_ITEM(orig, i)) < 0) goto fail;
  }
  PyObject* t = PyList_AsTuple(names);
  Py_DECREF(names);
  return t;
fail:
  Py_DECREF(names);
  return NULL;
}

/* Copies every original instruction after `shift` prologue ones, locals
 * remapped through `map`, free-variable slots moved by `deref_shift`,
 * reads of locals checked. */
static int copy_body(dyn_asm* a, const dyn_code* dc, int shift, const int* map, int deref_shift) {
  for (int i = 0; i < dc->n; i++) {
    const dyn_insn* in = &dc->insns[i];
    int op = in->opcode, arg = in->arg;
    if (is_local_op(op)) {
      arg = map[arg];
      if (op == LOAD_FAST) op = checked_load();
    } else if (is_deref_op(op)) {
      arg += deref_shift;
    }
    int k = dyn_asm_emit(a, op, arg, in->target >= 0 ? in->target + shift : -1, in->line);
    if (k < 0) return -1;
    a->insns[k].exc_handler = in->exc_handler >= 0 ? in->exc_handler + shift : -1;
    a->insns[k].exc_depth = in->exc_depth;
    a->insns[k].exc_lasti = in->exc_lasti;
  }
  return 0;
}

/* Builds the code object of a resume function. */
static PyObject* resume_build(const dyn_code* dc, const resume_pt* r) {
  PyCodeObject* co = dc->code;
  int nl = n_varnames(co), n_args = 0, nfree = n_freevars(co);
  int* map = PyMem_Malloc(((size_t)nl + 1) * sizeof(int));
  if (!map) return PyErr_NoMemory();
  PyObject* varnames = resume_varnames(dc, r, map, &n_args);
  PyObject *name = NULL, *empty = PyTuple_New(0), *res = NULL;
  PyObject* freevars = PyObject_GetAttrString((PyObject*)co, "co_freevars");
  cgbuf b = {{0}, NULL, 0, dc->insns[r->index].line};
  if (!varnames || !empty || !freevars) goto done;
  name = PyUnicode_FromFormat("__resume_at_%d", 2 * dc->insns[r->index].offset);
  if (!name) goto done;
  if (nfree > 0 && emit(&b, COPY_FREE_VARS, nfree) < 0) goto done;
  if (emit(&b, RESUME, 0) < 0) goto done;
  for (int p = 0, k = 0; p < r->n_stack; p++) {
    if (r->nulls[p] ? emit(&b, PUSH_NULL, 0) < 0 : emit(&b, LOAD_FAST, k++) < 0) goto done;
  }
  int jump = emit(&b, JUMP_FORWARD, 0);
  if (jump < 0) goto done;
  int shift = b.a.n;
  b.a.insns[jump].target = r->index + shift;
  int deref_shift = (int)PyTuple_GET_SIZE(varnames) - nl;
  if (copy_body(&b.a, dc, shift, map, deref_shift) < 0) goto done;
  int flags = co->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS);
  res = dyn_asm_build(&b.a, co, name, co->co_consts, co->co_names, varnames, empty, freevars,
                      n_args, flags);
done:
  dyn_asm_free(&b.a);
  PyMem_Free(map);
  Py_XDECREF(freevars);
  Py_XDECREF(varnames);
  Py_XDECREF(name);
  Py_XDECREF(empty);
  return res;
}

/* The (cached) resume function of `r`: new reference. */
static PyObject* resume_function(const dyn_code* dc, const resume_pt* r, PyObject* globals,
                                 PyObject* closure) {
  if (!g_resume_cache && !(g_resume_cache = PyDict_New())) return NULL;
  PyObject* key = resume_key(dc, r);
  if (!key) return NULL;
  PyObject* code = PyDict_GetItemWithError(g_resume_cache, key);
  if (code) {
    Py_INCREF(code);
  } else if (!PyErr_Occurred()) {
    code = resume_build(dc, r);
    if (code && PyDict_SetItem(g_resume_cache, key, code) < 0) Py_CLEAR(code);
  }
  Py_DECREF(key);
  if (!code) return NULL;
  PyObject* fn = PyFunction_New(code, globals);
  Py_DECREF(code);
  if (fn && closure && PyFunction_SetClosure(fn, closure) < 0) Py_CLEAR(fn);
  return fn;
}

/* ---------------------------------------------------------------------
 * The transformed function
 * --------------------------------------------------------------------- */
typedef struct break_ctx {
  const dyn_code* dc;
  int index, end_index, n_stack;
  const char* in_nulls;  /* n_stack */
  const int* live_in;
  int n_live_in;
  int* live_out;         /* locals bound after the group (original indexes) */
  int n_live_out;
  int n_tmp;             /* temporaries used (after __ptc_state + originals) */
  int nl;                /* original plain locals (varnames) */
  int nfree;             /* original free variables */
  PyObject* globals;
  PyObject* closure;     /* tuple of cells or NULL */
  int covered;           /* the group is inside a try/with block (see emit_transformed) */
  const char** why;
} break_ctx;

/* Checks the group and the code; 1 = expressible, 0 = refused (*why). */
static int break_check(break_ctx* c) {
  const dyn_code* dc = c->dc;
  PyCodeObject* co = dc->code;
  if (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)) {
    *c->why = "graph break in a generator or coroutine";
    return 0;
  }
  if (co->co_ncellvars > 0) {
    *c->why = "graph break in a function with cell variables (locals captured by a closure)";
    return 0;
  }
  if (co->co_nfreevars > 0 &&
      (!c->closure || !PyTuple_Check(c->closure) || PyTuple_GET_SIZE(c->closure) != co->co_nfreevars)) {
    *c->why = "graph break in a function with free variables (no closure given)";
    return 0;
  }
  for (int i = c->index; i <= c->end_index; i++) {
    const dyn_insn* in = &dc->insns[i];
    if (in->exc_handler >= 0) c->covered = 1;
    if (i < c->end_index && (in->target >= 0 || dyn_opcode_is_terminal(in->opcode))) {
      *c->why = "graph break group with an inner jump";
      return 0;
    }
#if !PY312
    if (in->opcode == SEND)
#else
    if (in->opcode == SEND || in->opcode == END_SEND)
#endif
    {
      *c->why = "graph break at a yield";
      return 0;
    }
  }
  return 1;
}

/* Locals bound after the group: live_in, plus stores, minus deletions. */
static int compute_live_out(break_ctx* c) {
  char* bound = PyMem_Calloc((size_t)c->nl + 1, 1);
  c->live_out = PyMem_Malloc(((size_t)c->nl + 1) * sizeof(int));
  if (!bound || !c->live_out) {
    PyMem_Free(bound);
    PyErr_NoMemory();
    return -1;
  }
  for (int j = 0; j < c->n_live_in; j++)
    if (c->live_in[j] < c->nl) bound[c->live_in[j]] = 1;
  for (int i = c->index; i <= c->end_index; i++) {
    const dyn_insn* in = &c->dc->insns[i];
    if (in->opcode == STORE_FAST) bound[in->arg] = 1;
#if PY312
    if (in->opcode == LOAD_FAST_AND_CLEAR) bound[in->arg] = 0;
#endif
    if (in->opcode == DELETE_FAST) bound[in->arg] = 0;
  }
  c->n_live_out = 0;
  for (int j = 0; j < c->n_live_in; j++)
    if (c->live_in[j] < c->nl && bound[c->live_in[j]] == 1) {
      c->live_out[c->n_live_out++] = c->live_in[j];
      bound[c->live_in[j]] = 2;
    }
  for (int l = 0; l < c->nl; l++)
    if (bound[l] == 1) c->live_out[c->n_live_out++] = l;
  PyMem_Free(bound);
  return 0;
}

/* One way out: stack `s` (relative to the input) continuing at original
 * instruction `resume_index`. Emits the stores, the resume call and the
 * return. 1 done, 0 refused (*why), -1 error. */
static int emit_exit(break_ctx* c, cgbuf* b, const symstack* s, int resume_index) {
  if (resume_index < 0 || resume_index >= c->dc->n) {
    *c->why = "graph break group without a resume point";
    return 0;
  }
  char nulls[MAX_STACK];
  int n_out = s->n;
  for (int p = 0; p < n_out; p++) {
    int v = p < s->low ? p : s->item[p];
    if (v == SI_MAYBE_NULL) {
      *c->why = "graph break leaves a method lookup (maybe NULL) on the stack";
      return 0;
    }
    nulls[p] = (char)(v == SI_NULL || (v >= 0 && c->in_nulls[v]));
  }
  resume_pt r = {resume_index, n_out, nulls, c->live_out, c->n_live_out};
  PyObject* fn = resume_function(c->dc, &r, c->globals, c->nfree ? c->closure : NULL);
  if (!fn) return -1;
  int fc = add_const(b, fn);
  Py_DECREF(fn);
  if (fc < 0) return -1;
  int tmp0 = 1 + c->nl;
  if (n_out - s->low > c->n_tmp) {
    PyErr_SetString(PyExc_SystemError, "dyn_codegen: temporaries miscounted");
    return -1;
  }
  for (int p = n_out - 1; p >= s->low; p--)
    if (emit(b, STORE_FAST, tmp0 + p - s->low) < 0) return -1;
  if (emit(b, PUSH_NULL, 0) < 0 || emit(b, LOAD_CONST, fc) < 0) return -1;
  int nargs = 0;
  for (int p = 0; p < n_out; p++) {
    if (nulls[p]) continue;
    int rc = p < s->low ? emit_state_item(b, p) : emit(b, LOAD_FAST, tmp0 + p - s->low);
    if (rc < 0) return -1;
    nargs++;
  }
  for (int j = 0; j < c->n_live_out; j++) {
    if (emit(b, checked_load(), c->live_out[j] + 1) < 0) return -1;
    nargs++;
  }
  if (emit_call(b, nargs) < 0 || emit(b, RETURN_VALUE, 0) < 0) return -1;
  return 1;
}

/* Prologue: live locals from state, then the touched stack items. */
static int emit_prologue(break_ctx* c, cgbuf* b, int low) {
  if (c->nfree > 0 && emit(b, COPY_FREE_VARS, c->nfree) < 0) return -1;
  if (emit(b, RESUME, 0) < 0) return -1;
  for (int j = 0; j < c->n_live_in; j++) {
    if (c->live_in[j] >= c->nl) continue; /* a free variable: from the closure */
    if (emit_state_item(b, c->n_stack + j) < 0 || emit(b, STORE_FAST, c->live_in[j] + 1) < 0)
      return -1;
  }
  for (int p = low; p < c->n_stack; p++) {
    int rc = c->in_nulls[p] ? emit(b, PUSH_NULL, 0) : emit_state_item(b, p);
    if (rc < 0) return -1;
  }
  return 0;
}

/* Simulates the group: *fall = state after the last instruction not
 * jumping, *jmp = after it jumping (when it is a jump). 1 ok, 0 refused. */
static int simulate(break_ctx* c, symstack* fall, symstack* jmp) {
  fall->n = c->n_stack;
  fall->low = c->n_stack;
  for (int p = 0; p < c->n_stack; p++) fall->item[p] = p;
  int expected = c->n_stack;
  for (int i = c->index; i <= c->end_index; i++) {
    const dyn_insn* in = &c->dc->insns[i];
    if (i == c->end_index && in->target >= 0) {
      *jmp = *fall;
      if (sym_apply(jmp, in, 1) < 0) goto refuse;
    }
    if (i == c->end_index && is_method_load(in)) {
      /* emitted as (NULL, bound attribute): see is_method_load */
      if (sym_pop(fall, method_load_pops(in)) < 0 || sym_push(fall, SI_NULL) < 0 ||
          sym_push(fall, SI_NEW) < 0)
        goto refuse;
    } else if (sym_apply(fall, in, 0) < 0) {
      goto refuse;
    }
    expected += dyn_stack_effect(in->opcode, in->arg, 0);
  }
  if (expected != fall->n) goto refuse;
  if (jmp->n >= 0) {
    if (jmp->low < fall->low) fall->low = jmp->low;
    jmp->low = fall->low;
  }
  return 1;
refuse:
  *c->why = "graph break group with instructions the codegen cannot analyse";
  return 0;
}

/* Where the jump of the last instruction continues in the original code. */
static int jump_resume_index(break_ctx* c) {
  const dyn_insn* last = &c->dc->insns[c->end_index];
#if PY312
  if (last->opcode == FOR_ITER) {
    if (c->dc->insns[last->target].opcode != END_FOR) return -1;
    return last->target + 1; /* the interpreter continues past END_FOR */
  }
#endif
  return last->target;
}

/* Copies the group (locals shifted by one, reads checked); returns the
 * asm index of the last instruction, -1 on error. */
/* Emits one instruction of the group carrying the exception-table entry of
 * original instruction `src` (handler still an ORIGINAL index, rebased by
 * emit_transformed once the copy of the original code is placed). */
static int emit_from(break_ctx* c, cgbuf* b, int op, int arg, const dyn_insn* src) {
  int k = dyn_asm_emit(&b->a, op, arg, -1, src->line);
  if (k >= 0 && c->covered) {
    b->a.insns[k].exc_handler = src->exc_handler;
    b->a.insns[k].exc_depth = src->exc_depth;
    b->a.insns[k].exc_lasti = src->exc_lasti;
  }
  return k;
}

static int emit_group(break_ctx* c, cgbuf* b) {
  int k = -1;
  /* a call group that starts after its KW_NAMES: the keyword names are
   * interpreter state set by KW_NAMES (no stack effect), so repeat it */
  const dyn_insn* prev = c->index > 0 ? &c->dc->insns[c->index - 1] : NULL;
  if (prev && prev->opcode == KW_NAMES && emit_from(c, b, KW_NAMES, prev->arg, prev) < 0)
    return -1;
  for (int i = c->index; i <= c->end_index; i++) {
    const dyn_insn* in = &c->dc->insns[i];
    int op = in->opcode, arg = in->arg;
    if (is_local_op(op)) {
      arg += 1;
      if (op == LOAD_FAST) op = checked_load();
    } else if (is_deref_op(op)) {
      arg += 1 + c->n_tmp; /* free slots follow __ptc_state, the locals, the temporaries */
    }
    int method = i == c->end_index && is_method_load(in);
    if (method) {
#if PY312
      arg &= ~1;
#else
      op = LOAD_ATTR;
#endif
    }
    k = emit_from(c, b, op, arg, in);
    if (k < 0) return -1;
    if (method && (emit_from(c, b, PUSH_NULL, 0, in) < 0 || emit_from(c, b, SWAP, 2, in) < 0))
      return -1;
  }
  return k;
}

/* Covered groups: appends a plain copy of the whole original code (locals
 * shifted past __ptc_state, free slots past the temporaries) and points
 * the group's exception entries [g0, g1] at the handlers in that copy. */
static int emit_handler_copy(break_ctx* c, cgbuf* b, int g0, int g1) {
  int base = b->a.n;
  int* map = PyMem_Malloc(((size_t)c->nl + 1) * sizeof(int));
  if (!map) {
    PyErr_NoMemory();
    return -1;
  }
  for (int i = 0; i < c->nl; i++) map[i] = i + 1;
  int rc = copy_body(&b->a, c->dc, base, map, 1 + c->n_tmp);
  PyMem_Free(map);
  for (int k = g0; rc == 0 && k <= g1; k++)
    if (b->a.insns[k].exc_handler >= 0) b->a.insns[k].exc_handler += base;
  return rc;
}

static PyObject* build_varnames(break_ctx* c) {
  PyObject* orig = c->dc->code->co_localsplusnames;
  PyObject* t = PyTuple_New(1 + c->nl + c->n_tmp);
  if (!t) return NULL;
  PyObject* s = PyUnicode_FromString("__ptc_state");
  if (!s) goto fail;
  PyTuple_SET_ITEM(t, 0, s);
  for (int i = 0; i < c->nl; i++) PyTuple_SET_ITEM(t, 1 + i, Py_NewRef(PyTuple_GET_ITEM(orig, i)));
  for (int k = 0; k < c->n_tmp; k++) {
    PyObject* v = PyUnicode_FromFormat("__ptc_tmp%d", k);
    if (!v) goto fail;
    PyTuple_SET_ITEM(t, 1 + c->nl + k, v);
  }
  return t;
fail:
  Py_DECREF(t);
  return NULL;
}

/* Emits the whole transformed code into b; 1 ok, 0 refused, -1 error. */
static int emit_transformed(break_ctx* c, cgbuf* b) {
  symstack* fall = PyMem_Malloc(sizeof(symstack));
  symstack* jmp = PyMem_Malloc(sizeof(symstack));
  int rc = -1;
  if (!fall || !jmp) {
    PyErr_NoMemory();
    goto done;
  }
  memset(fall, 0, sizeof *fall);
  memset(jmp, 0, sizeof *jmp);
  jmp->n = -1;
  rc = simulate(c, fall, jmp);
  if (rc <= 0) goto done;
  if (c->covered) { /* the handlers need the whole stack below them */
    fall->low = 0;
    jmp->low = 0;
  }
  c->n_tmp = fall->n - fall->low;
  if (jmp->n >= 0 && jmp->n - jmp->low > c->n_tmp) c->n_tmp = jmp->n - jmp->low;
  if (c->n_tmp < 0) c->n_tmp = 0;
  const dyn_insn* last = &c->dc->insns[c->end_index];
  rc = -1;
  if (emit_prologue(c, b, fall->low) < 0) goto done;
  int g0 = b->a.n;
  int j = emit_group(c, b);
  if (j < 0) goto done;
  int g1 = b->a.n - 1;
  rc = 1;
  if (!dyn_opcode_is_terminal(last->opcode)) rc = emit_exit(c, b, fall, c->end_index + 1);
  if (rc == 1 && last->target >= 0) {
#if PY312
    if (last->opcode == FOR_ITER && emit(b, END_FOR, 0) < 0) { rc = -1; goto done; }
#endif
    b->a.insns[j].target = b->a.n - (PY312 && last->opcode == FOR_ITER ? 1 : 0);
    rc = emit_exit(c, b, jmp, jump_resume_index(c));
  }
  if (rc == 1 && c->covered && emit_handler_copy(c, b, g0, g1) < 0) rc = -1;
done:
  PyMem_Free(fall);
  PyMem_Free(jmp);
  return rc;
}

PyObject* dyn_codegen_break_closure(const dyn_code* code, int index, int end_index, int n_stack,
                                    const char* stack_null, const int* live_locals, int n_live,
                                    PyObject* globals, PyObject* closure, const char** why) {
  static const char* unused_why;
  if (!why) why = &unused_why;
  *why = NULL;
  if (!code || index < 0 || end_index < index || end_index >= code->n || n_stack < 0 ||
      n_stack >= MAX_STACK / 2 || n_live < 0 || !globals || !PyDict_Check(globals)) {
    PyErr_SetString(PyExc_ValueError, "dyn_codegen_break: bad arguments");
    return NULL;
  }
  int nlp = (int)PyTuple_GET_SIZE(code->code->co_localsplusnames);
  for (int j = 0; j < n_live; j++)
    if (live_locals[j] < 0 || live_locals[j] >= nlp) {
      PyErr_SetString(PyExc_ValueError, "dyn_codegen_break: bad live local index");
      return NULL;
    }
  char* nulls = PyMem_Calloc((size_t)n_stack + 1, 1);
  if (!nulls) return PyErr_NoMemory();
  for (int p = 0; stack_null && p < n_stack; p++) nulls[p] = stack_null[p] ? 1 : 0;
  break_ctx c = {code, index, end_index, n_stack, nulls, live_locals, n_live, NULL, 0, 0,
                 n_varnames(code->code), n_freevars(code->code), globals,
                 closure == Py_None ? NULL : closure, 0, why};
  PyCodeObject* co = code->code;
  cgbuf b = {{0}, PySequence_List(co->co_consts), PyTuple_GET_SIZE(co->co_consts),
             code->insns[index].line};
  PyObject *res = NULL, *varnames = NULL, *consts = NULL, *freevars = NULL;
  PyObject* empty = PyTuple_New(0);
  if (!b.consts || !empty) goto done;
  int ok = break_check(&c);
  if (ok == 1) ok = compute_live_out(&c) < 0 ? -1 : 1;
  if (ok == 1) ok = emit_transformed(&c, &b);
  if (ok <= 0) goto done;
  varnames = build_varnames(&c);
  consts = varnames ? PyList_AsTuple(b.consts) : NULL;
  freevars = consts ? PyObject_GetAttrString((PyObject*)co, "co_freevars") : NULL;
  if (!freevars) goto done;
  int flags = co->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS);
  PyObject* newcode = dyn_asm_build(&b.a, co, co->co_name, consts, co->co_names, varnames, empty,
                                    freevars, 1, flags);
  if (newcode) {
    res = PyFunction_New(newcode, globals);
    Py_DECREF(newcode);
    if (res && c.nfree > 0 && PyFunction_SetClosure(res, c.closure) < 0) Py_CLEAR(res);
  }
done:
  Py_XDECREF(freevars);
  dyn_asm_free(&b.a);
  Py_XDECREF(b.consts);
  Py_XDECREF(varnames);
  Py_XDECREF(consts);
  Py_XDECREF(empty);
  PyMem_Free(c.live_out);
  PyMem_Free(nulls);
  return res;
}

PyObject* dyn_codegen_break_ex(const dyn_code* code, int index, int end_index, int n_stack,
                               const char* stack_null, const int* live_locals, int n_live,
                               PyObject* globals, const char** why) {
  return dyn_codegen_break_closure(code, index, end_index, n_stack, stack_null, live_locals,
                                   n_live, globals, NULL, why);
}

PyObject* dyn_codegen_break(const dyn_code* code, int index, int end_index, int n_stack,
                            const int* live_locals, int n_live, PyObject* globals,
                            const char** why) {
  return dyn_codegen_break_ex(code, index, end_index, n_stack, NULL, live_locals, n_live, globals,
                              why);
}

/* ---------------------------------------------------------------------
 * Test entry point
 * --------------------------------------------------------------------- */
PyObject* dyn_py_test_break(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *code, *live, *nulls, *globals, *closure = Py_None;
  int index, end_index, n_stack;
  if (!PyArg_ParseTuple(args, "O!iiiO!OO!|O", &PyCode_Type, &code, &index, &end_index, &n_stack,
                        &PyTuple_Type, &live, &nulls, &PyDict_Type, &globals, &closure))
    return NULL;
  int n_live = (int)PyTuple_GET_SIZE(live);
  if (n_stack < 0 || n_stack >= MAX_STACK / 2 ||
      (nulls != Py_None && (!PyTuple_Check(nulls) || PyTuple_GET_SIZE(nulls) != n_stack)))
    return PyErr_Format(PyExc_ValueError, "_dyn_test_break: stack_null must be None or a tuple of n_stack");
  int* lv = PyMem_Malloc(((size_t)n_live + 1) * sizeof(int));
  char* nl = PyMem_Calloc((size_t)n_stack + 1, 1);
  PyObject* res = NULL;
  dyn_code dc;
  memset(&dc, 0, sizeof dc);
  if (!lv || !nl) {
    PyErr_NoMemory();
    goto done;
  }
  for (int j = 0; j < n_live; j++) {
    lv[j] = (int)PyLong_AsLong(PyTuple_GET_ITEM(live, j));
    if (PyErr_Occurred()) goto done;
  }
  for (int p = 0; nulls != Py_None && p < n_stack; p++) {
    int t = PyObject_IsTrue(PyTuple_GET_ITEM(nulls, p));
    if (t < 0) goto done;
    nl[p] = (char)t;
  }
  if (dyn_code_decode((PyCodeObject*)code, &dc) < 0) goto done;
  const char* why = NULL;
  res = dyn_codegen_break_closure(&dc, index, end_index, n_stack, nl, lv, n_live, globals,
                                  closure, &why);
  if (!res && !PyErr_Occurred()) res = PyUnicode_FromString(why ? why : "refused");
done:
  dyn_code_free(&dc);
  PyMem_Free(lv);
  PyMem_Free(nl);
  return res;
}

#else /* !PTC_DYN_SUPPORTED */

PyObject* dyn_codegen_break_closure(const dyn_code* code, int index, int end_index, int n_stack,
                                    const char* stack_null, const int* live_locals, int n_live,
                                    PyObject* globals, PyObject* closure, const char** why) {
  (void)closure;
  return dyn_codegen_break_ex(code, index, end_index, n_stack, stack_null, live_locals, n_live,
                              globals, why);
}
PyObject* dyn_codegen_break_ex(const dyn_code* code, int index, int end_index, int n_stack,
                               const char* stack_null, const int* live_locals, int n_live,
                               PyObject* globals, const char** why) {
  (void)code, (void)index, (void)end_index, (void)n_stack, (void)stack_null, (void)live_locals;
  (void)n_live, (void)globals;
  if (why) *why = "ptc capture supports Python 3.11 and 3.12 only";
  return NULL;
}
PyObject* dyn_codegen_break(const dyn_code* code, int index, int end_index, int n_stack,
                            const int* live_locals, int n_live, PyObject* globals,
                            const char** why) {
  return dyn_codegen_break_ex(code, index, end_index, n_stack, NULL, live_locals, n_live, globals,
                              why);
}
PyObject* dyn_py_test_break(PyObject* self, PyObject* args) {
  (void)self, (void)args;
  PyErr_SetString(PyExc_RuntimeError, "ptc capture supports Python 3.11 and 3.12 only");
  return NULL;
}

#endif

int dyn_codegen_is_transformed(PyCodeObject* code) {
#if PTC_DYN_SUPPORTED
  if (!code || code->co_argcount != 1 || !code->co_localsplusnames ||
      PyTuple_GET_SIZE(code->co_localsplusnames) < 1)
    return 0;
  PyObject* first = PyTuple_GET_ITEM(code->co_localsplusnames, 0);
  return PyUnicode_Check(first) && PyUnicode_CompareWithASCIIString(first, "__ptc_state") == 0;
#else
  (void)code;
  return 0;
#endif
}
