/* dyn_eval_call.c - calls and the conversion driver of the symbolic
 * evaluator (see dyn_eval.c): CALL / CALL_FUNCTION_EX, inlining of user
 * Python functions (argument binding like CPython: positionals, keywords,
 * defaults, varargs and varkeywords, closures; depth cap), the per-frame
 * interpreter loop, graph-break emission at the remembered root
 * instruction group, and dyn_convert_frame (restarts, fullgraph errors,
 * skip decisions, the graphs_log info of each conversion). */
#include "dyn_eval_priv.h"
#include "opcode.h"

#include <string.h>

#if PTC_DYN_SUPPORTED

enum {
  MAX_INLINE_DEPTH = 12,   /* nested inlined calls */
  MAX_STEPS = 300000,      /* instructions interpreted per trace (unrolled loops) */
  MAX_RESTARTS = 6,        /* traces per conversion */
};

/* ---------------------------------------------------------------- code cache */

static const dyn_code* get_code(dyn_evtx* E, PyCodeObject* code) {
  for (int i = 0; i < E->n_codes; i++)
    if (E->codes[i]->code == code) return &E->codes[i]->dc;
  if (E->n_codes == E->cap_codes) {
    int cap = E->cap_codes ? 2 * E->cap_codes : 8;
    dyn_code_slot** nc = PyMem_Realloc(E->codes, (size_t)cap * sizeof *nc);
    if (!nc) {
      PyErr_NoMemory();
      return NULL;
    }
    E->codes = nc;
    E->cap_codes = cap;
  }
  dyn_code_slot* s = PyMem_Calloc(1, sizeof *s);
  if (!s) {
    PyErr_NoMemory();
    return NULL;
  }
  if (dyn_code_decode(code, &s->dc) < 0) {
    PyMem_Free(s);
    return NULL;
  }
  s->code = code;
  E->codes[E->n_codes++] = s;
  return &s->dc;
}

/* ---------------------------------------------------------------- frames */

static dyn_eframe* frame_new(dyn_eframe* parent, const dyn_code* dc, PyObject* globals,
                             PyObject* builtins) {
  dyn_eframe* f = PyMem_Calloc(1, sizeof *f);
  if (!f) {
    PyErr_NoMemory();
    return NULL;
  }
  f->parent = parent;
  f->dc = dc;
  f->code = dc->code;
  f->globals = globals;
  f->builtins = builtins;
  f->n_locals = f->code->co_nlocalsplus;
  f->cap = f->code->co_stacksize + 8;
  f->locals = PyMem_Calloc((size_t)f->n_locals + 1, sizeof(DynVar*));
  f->stack = PyMem_Calloc((size_t)f->cap, sizeof(DynVar*));
  if (!f->locals || !f->stack) {
    PyMem_Free(f->locals);
    PyMem_Free(f->stack);
    PyMem_Free(f);
    PyErr_NoMemory();
    return NULL;
  }
  return f;
}

static void frame_free(dyn_eframe* f) {
  if (!f) return;
  for (int i = 0; i < f->n_locals; i++) Py_XDECREF(f->locals[i]);
  for (int i = 0; i < f->sp; i++) Py_XDECREF(f->stack[i]);
  Py_XDECREF(f->closure);
  Py_XDECREF(f->retval);
  Py_XDECREF(f->gen_items);
  PyMem_Free(f->locals);
  PyMem_Free(f->stack);
  PyMem_Free(f);
}

/* ---------------------------------------------------------------- the loop */

/* Instruction group a root break at CALL index i covers: KW_NAMES (and
 * PRECALL on 3.11) before it. */
static int call_group_start(const dyn_code* dc, int i) {
  int s = i;
#ifdef PRECALL
  if (s > 0 && dc->insns[s - 1].opcode == PRECALL) s--;
#endif
  if (s > 0 && dc->insns[s - 1].opcode == KW_NAMES) s--;
  return s;
}

/* Whether root instructions [start, end] lie inside a loop (a backward jump
 * at or after them goes to or before start). */
static int in_loop(const dyn_code* dc, int start, int end) {
  (void)end;
  for (int j = start; j < dc->n; j++) {
    int t = dc->insns[j].target;
    if (t >= 0 && t <= start && j >= start && dc->insns[j].opcode != FOR_ITER) return 1;
  }
  return 0;
}

static int emit_break(dyn_evtx* E, dyn_eframe* f);

static int run_frame(dyn_evtx* E, dyn_eframe* f) {
  for (;;) {
    if (f->ip < 0 || f->ip >= f->dc->n) {
      PyErr_SetString(PyExc_SystemError, "dyn_eval: ran off the end of the code");
      return S_ERR;
    }
    E->cur = f;
    if (++E->steps > MAX_STEPS) {
      dyn_break(&E->tx, "trace too long (more than %d instructions)", MAX_STEPS);
      return S_BREAK;
    }
    const dyn_insn* in = &f->dc->insns[f->ip];
    if (f->is_root) {
      if (f->ip == E->break_start) return emit_break(E, f);
      E->cur_start = E->cur_end = f->ip;
      if (in->opcode == CALL) E->cur_start = call_group_start(f->dc, f->ip);
    }
    int next = f->ip + 1;
    int st = ev_step(E, f, in, &next);
    E->cur = f;
    if (st == S_BREAK && E->tx.brk.active && !E->tx.brk.filename) {
      /* the innermost frame sees the break first */
      E->tx.brk.filename = Py_NewRef(f->code->co_filename);
      E->tx.brk.line = in->line;
    }
    if (st != S_OK) return st;
    f->ip = next;
  }
}

/* ---------------------------------------------------------------- binding */

static DynSource* attr_src(DynSource* base, const char* name) {
  PyObject* n = PyUnicode_FromString(name);
  DynSource* s = n ? dyn_source_attr(base, n) : NULL;
  Py_XDECREF(n);
  return s;
}

/* Source of a real function's attribute `name` item `key`:
 * fn.__defaults__[i], fn.__kwdefaults__[k], fn.__closure__[i]. */
static DynSource* fn_part_src(DynVar* fnv, PyObject* holder, const char* name, PyObject* key) {
  DynSource* base = fnv->source ? attr_src(fnv->source, name) : dyn_source_const(holder);
  if (!base) return NULL;
  DynSource* s = dyn_source_item(base, key);
  Py_DECREF(base);
  return s;
}

/* What an inlined call needs from its function tracker. All borrowed. */
typedef struct fn_parts {
  PyCodeObject* code;
  PyObject* globals;
  PyObject* real_defaults;   /* tuple or NULL (real function) */
  PyObject* real_kwdefaults; /* dict or NULL (real function) */
  DynVar* defaults;          /* DV_TUPLE or NULL (made in the trace) */
  DynVar* kwdefaults;        /* DV_DICT or NULL (made in the trace) */
} fn_parts;

static int fn_get_parts(dyn_evtx* E, DynVar* fnv, fn_parts* p) {
  memset(p, 0, sizeof *p);
  if (fnv->value && PyFunction_Check(fnv->value)) {
    PyObject* fn = fnv->value;
    p->code = (PyCodeObject*)PyFunction_GET_CODE(fn);
    p->globals = PyFunction_GET_GLOBALS(fn);
    p->real_defaults = PyFunction_GET_DEFAULTS(fn);
    p->real_kwdefaults = PyFunction_GET_KW_DEFAULTS(fn);
    return S_OK;
  }
  PyObject* x = fnv->extra;
  if (!fnv->value && x && PyTuple_Check(x) && PyTuple_GET_SIZE(x) == 5 &&
      PyCode_Check(PyTuple_GET_ITEM(x, 0)) && PyDict_Check(PyTuple_GET_ITEM(x, 1))) {
    p->code = (PyCodeObject*)PyTuple_GET_ITEM(x, 0);
    p->globals = PyTuple_GET_ITEM(x, 1);
    PyObject* d = PyTuple_GET_ITEM(x, 2);
    PyObject* k = PyTuple_GET_ITEM(x, 3);
    if (d != Py_None) {
      if (!PyObject_TypeCheck(d, &DynVar_Type) || ((DynVar*)d)->kind != DV_TUPLE) {
        dyn_break(&E->tx, "function defaults are not a tuple");
        return S_BREAK;
      }
      p->defaults = (DynVar*)d;
    }
    if (k != Py_None) {
      if (!PyObject_TypeCheck(k, &DynVar_Type) || ((DynVar*)k)->kind != DV_DICT) {
        dyn_break(&E->tx, "function keyword defaults are not a dict");
        return S_BREAK;
      }
      p->kwdefaults = (DynVar*)k;
    }
    return S_OK;
  }
  dyn_break(&E->tx, "call of an unknown function object");
  return S_BREAK;
}

/* Default of positional parameter i (of nd defaults, index j). New ref. */
static DynVar* default_at(dyn_evtx* E, DynVar* fnv, fn_parts* p, Py_ssize_t j) {
  if (p->defaults) {
    PyObject* it = PyList_GET_ITEM(p->defaults->items, j);
    Py_INCREF(it);
    return (DynVar*)it;
  }
  PyObject* key = PyLong_FromSsize_t(j);
  DynSource* s = key ? fn_part_src(fnv, p->real_defaults, "__defaults__", key) : NULL;
  Py_XDECREF(key);
  DynVar* v = s ? dyn_wrap(&E->tx, PyTuple_GET_ITEM(p->real_defaults, j), s) : NULL;
  Py_XDECREF(s);
  return v;
}

static Py_ssize_t n_defaults(fn_parts* p) {
  if (p->defaults) return p->defaults->items ? PyList_GET_SIZE(p->defaults->items) : 0;
  return p->real_defaults && PyTuple_Check(p->real_defaults) ? PyTuple_GET_SIZE(p->real_defaults)
                                                              : 0;
}

/* keyword-only default for `name`: new ref, or NULL (none; no exception). */
static DynVar* kwdefault_of(dyn_evtx* E, DynVar* fnv, fn_parts* p, PyObject* name) {
  if (p->kwdefaults) {
    PyObject* it = p->kwdefaults->items ? PyDict_GetItemWithError(p->kwdefaults->items, name)
                                        : NULL;
    Py_XINCREF(it);
    return (DynVar*)it;
  }
  if (!p->real_kwdefaults || !PyDict_Check(p->real_kwdefaults)) return NULL;
  PyObject* real = PyDict_GetItemWithError(p->real_kwdefaults, name);
  if (!real) return NULL;
  DynSource* s = fn_part_src(fnv, p->real_kwdefaults, "__kwdefaults__", name);
  DynVar* v = s ? dyn_wrap(&E->tx, real, s) : NULL;
  Py_XDECREF(s);
  return v;
}

/* Binds args (list) / kwargs (dict name -> var) into f->locals like CPython.
 * Anything Python would reject is a break (Python then raises for real). */
static int bind_args(dyn_evtx* E, DynVar* fnv, fn_parts* p, dyn_eframe* f, PyObject* args,
                     PyObject* kwargs) {
  PyCodeObject* co = p->code;
  int argc = co->co_argcount, posonly = co->co_posonlyargcount, kwonly = co->co_kwonlyargcount;
  int has_var = (co->co_flags & CO_VARARGS) != 0, has_kw = (co->co_flags & CO_VARKEYWORDS) != 0;
  PyObject* names = co->co_localsplusnames;
  Py_ssize_t na = args ? PyList_GET_SIZE(args) : 0;
  for (Py_ssize_t i = 0; i < na && i < argc; i++) {
    PyObject* v = PyList_GET_ITEM(args, i);
    Py_INCREF(v);
    f->locals[i] = (DynVar*)v;
  }
  if (na > argc && !has_var) {
    dyn_break(&E->tx, "too many positional arguments");
    return S_BREAK;
  }
  PyObject* kwdict = has_kw ? PyDict_New() : NULL;
  if (has_kw && !kwdict) return S_ERR;
  int st = S_OK;
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (st == S_OK && PyDict_Next(kwargs, &pos, &k, &v)) {
      int slot = -1;
      for (int j = posonly; j < argc + kwonly; j++) {
        int eq = PyUnicode_Compare(PyTuple_GET_ITEM(names, j), k);
        if (eq == 0) {
          slot = j;
          break;
        }
      }
      if (PyErr_Occurred()) st = S_ERR;
      else if (slot >= 0) {
        if (f->locals[slot]) {
          dyn_break(&E->tx, "multiple values for argument '%s'", PyUnicode_AsUTF8(k));
          st = S_BREAK;
        } else {
          Py_INCREF(v);
          f->locals[slot] = (DynVar*)v;
        }
      } else if (kwdict) {
        if (PyDict_SetItem(kwdict, k, v) < 0) st = S_ERR;
      } else {
        dyn_break(&E->tx, "unexpected keyword argument '%s'", PyUnicode_AsUTF8(k));
        st = S_BREAK;
      }
    }
  }
  /* defaults */
  Py_ssize_t nd = n_defaults(p);
  for (int i = 0; st == S_OK && i < argc; i++) {
    if (f->locals[i]) continue;
    Py_ssize_t j = i - (argc - nd);
    if (j < 0) {
      dyn_break(&E->tx, "missing argument '%s'", PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i)));
      st = S_BREAK;
      break;
    }
    f->locals[i] = default_at(E, fnv, p, j);
    if (!f->locals[i]) st = S_ERR;
  }
  for (int i = argc; st == S_OK && i < argc + kwonly; i++) {
    if (f->locals[i]) continue;
    f->locals[i] = kwdefault_of(E, fnv, p, PyTuple_GET_ITEM(names, i));
    if (!f->locals[i]) {
      if (PyErr_Occurred()) {
        st = S_ERR;
      } else {
        dyn_break(&E->tx, "missing keyword-only argument '%s'",
                  PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i)));
        st = S_BREAK;
      }
    }
  }
  int slot = argc + kwonly;
  if (st == S_OK && has_var) {
    PyObject* rest = PyList_GetSlice(args, argc, na > argc ? na : argc);
    DynVar* t = rest ? dyn_var_seq(DV_TUPLE, rest) : NULL;
    Py_XDECREF(rest);
    if (!t) st = S_ERR;
    else f->locals[slot++] = t;
  }
  if (st == S_OK && has_kw) {
    DynVar* d = dyn_var_new(DV_DICT, NULL, kwdict, NULL, NULL);
    if (!d) st = S_ERR;
    else {
      d->created = 1;
      f->locals[slot++] = d;
    }
  }
  Py_XDECREF(kwdict);
  return st;
}

/* The DV_CELL trackers of a function's closure (a new tuple) or NULL. */
static PyObject* fn_closure(dyn_evtx* E, DynVar* fnv, int* st) {
  *st = S_OK;
  if (!fnv->value) {
    PyObject* c = PyTuple_GET_ITEM(fnv->extra, 4);
    if (c == Py_None) return NULL;
    Py_INCREF(c);
    return c;
  }
  PyObject* cl = PyFunction_GET_CLOSURE(fnv->value);
  if (!cl || !PyTuple_Check(cl)) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(cl);
  PyObject* out = PyTuple_New(n);
  if (!out) {
    *st = S_ERR;
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* cell = PyTuple_GET_ITEM(cl, i);
    PyObject* key = PyLong_FromSsize_t(i);
    DynSource* cs = key ? fn_part_src(fnv, cl, "__closure__", key) : NULL;
    Py_XDECREF(key);
    DynSource* contents = cs ? attr_src(cs, "cell_contents") : NULL;
    Py_XDECREF(cs);
    DynVar* c = contents ? ev_real_cell(E, cell, contents, -1) : NULL;
    Py_XDECREF(contents);
    if (!c) {
      Py_DECREF(out);
      *st = S_ERR;
      return NULL;
    }
    PyTuple_SET_ITEM(out, i, (PyObject*)c);
  }
  return out;
}

static int inline_call(dyn_evtx* E, dyn_eframe* parent, DynVar* fnv, PyObject* args,
                       PyObject* kwargs, DynVar** out) {
  if (E->tx.depth >= MAX_INLINE_DEPTH) {
    dyn_break(&E->tx, "inlining deeper than %d calls", MAX_INLINE_DEPTH);
    return S_BREAK;
  }
  fn_parts p;
  int st = fn_get_parts(E, fnv, &p);
  if (st != S_OK) return st;
  int genexpr = 0;
  if (p.code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)) {
    const char* nm = PyUnicode_AsUTF8(p.code->co_name);
    genexpr = nm && !strcmp(nm, "<genexpr>") && (p.code->co_flags & CO_GENERATOR);
    if (!genexpr) {
      PyErr_Clear();
      dyn_break(&E->tx, "call of generator/coroutine function %s", nm ? nm : "?");
      return S_BREAK;
    }
  }
  const dyn_code* dc = get_code(E, p.code);
  if (!dc) {
    PyErr_Clear();
    dyn_break(&E->tx, "cannot decode the code of %s", PyUnicode_AsUTF8(p.code->co_name));
    return S_BREAK;
  }
  PyObject* builtins = E->tx.view->builtins;
  dyn_eframe* f = frame_new(parent, dc, p.globals, builtins);
  if (!f) return S_ERR;
  f->closure = fn_closure(E, fnv, &st);
  if (st == S_OK) st = bind_args(E, fnv, &p, f, args, kwargs);
  Py_ssize_t n_effects = PyList_GET_SIZE(E->tx.side_effects);
  if (st == S_OK && genexpr && !(f->gen_items = PyList_New(0))) st = S_ERR;
  if (st == S_OK) {
    E->tx.depth++;
    E->tx.n_inlined++;
    st = run_frame(E, f);
    E->tx.depth--;
    E->cur = parent;
    if (st == S_RET && genexpr) {
      /* A generator expression runs to its end at once: its values become
       * an iterator. Sound only when producing them has no side effect the
       * consumer could observe in between (extra values a short-circuiting
       * consumer never asks for are pure graph ops / constants). */
      if (PyList_GET_SIZE(E->tx.side_effects) != n_effects) {
        dyn_break(&E->tx, "generator expression with side effects");
        st = S_BREAK;
      } else {
        *out = dyn_var_new(DV_ITER, NULL, f->gen_items, NULL, NULL);
        if (*out) (*out)->created = 1;
        st = *out ? S_OK : S_ERR;
      }
    } else if (st == S_RET) {
      *out = f->retval;
      f->retval = NULL;
      st = S_OK;
    } else if (st == S_OK || st == S_DONE) {
      PyErr_SetString(PyExc_SystemError, "dyn_eval: inlined frame ended without RETURN");
      st = S_ERR;
    }
  }
  frame_free(f);
  return st;
}

/* ---------------------------------------------------------------- calls */

static int split_kwargs(DynVar* const* args, Py_ssize_t nargs, PyObject* kwnames,
                        PyObject** pos, PyObject** kw) {
  Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  Py_ssize_t np = nargs - nk;
  *pos = PyList_New(np < 0 ? 0 : np);
  *kw = PyDict_New();
  if (!*pos || !*kw || np < 0) {
    Py_CLEAR(*pos);
    Py_CLEAR(*kw);
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "bad keyword call");
    return -1;
  }
  for (Py_ssize_t i = 0; i < np; i++) {
    Py_INCREF(args[i]);
    PyList_SET_ITEM(*pos, i, (PyObject*)args[i]);
  }
  for (Py_ssize_t i = 0; i < nk; i++)
    if (PyDict_SetItem(*kw, PyTuple_GET_ITEM(kwnames, i), (PyObject*)args[np + i]) < 0) {
      Py_CLEAR(*pos);
      Py_CLEAR(*kw);
      return -1;
    }
  return 0;
}

int ev_call(dyn_evtx* E, dyn_eframe* f, DynVar* fn, DynVar* const* args, Py_ssize_t nargs,
            PyObject* kwnames, DynVar** out) {
  *out = NULL;
  if (fn->kind == DV_GRAD_CTX && fn->extra) return ev_with_exit(E, fn, out);
  DynVar* target = NULL;
  PyObject *pos = NULL, *kw = NULL;
  int st;
  if (fn->kind == DV_FUNCTION) {
    target = fn;
    Py_INCREF(target);
    if (split_kwargs(args, nargs, kwnames, &pos, &kw) < 0) return S_ERR;
  } else if (fn->kind == DV_METHOD && fn->value && PyObject_TypeCheck(fn->value, &DynVar_Type) &&
             ((DynVar*)fn->value)->kind == DV_FUNCTION && fn->extra &&
             PyObject_TypeCheck(fn->extra, &DynVar_Type)) {
    target = (DynVar*)fn->value;
    Py_INCREF(target);
    if (split_kwargs(args, nargs, kwnames, &pos, &kw) < 0 ||
        PyList_Insert(pos, 0, fn->extra) < 0) {
      Py_DECREF(target);
      Py_XDECREF(pos);
      Py_XDECREF(kw);
      return S_ERR;
    }
  } else if (fn->kind == DV_CONST && fn->value == (PyObject*)&PySuper_Type && !kwnames &&
             (nargs == 0 || nargs == 2)) {
    return nargs == 0 ? ev_super_noargs(E, f, out) : ev_make_super(E, fn, args[0], args[1], out);
  } else {
    /* dyn_call counts positionals only; keyword values follow them */
    Py_ssize_t npos = nargs - (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    int rc = dyn_call(&E->tx, fn, args, npos, kwnames, &target, &pos, &kw);
    if (rc == DYN_CALL_OK) {
      *out = target;
      return S_OK;
    }
    if (rc == DYN_CALL_BREAK) return S_BREAK;
    if (rc != DYN_CALL_INLINE) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "dyn_call failed");
      return S_ERR;
    }
    if (!target || target->kind != DV_FUNCTION) {
      Py_XDECREF(target);
      Py_XDECREF(pos);
      Py_XDECREF(kw);
      dyn_break(&E->tx, "call to inline is not a function");
      return S_BREAK;
    }
  }
  st = inline_call(E, f, target, pos, kw, out);
  Py_DECREF(target);
  Py_XDECREF(pos);
  Py_XDECREF(kw);
  return st;
}

int ev_op_call(dyn_evtx* E, dyn_eframe* f, int argc) {
  PyObject* kwnames = f->kwnames;
  f->kwnames = NULL;
  if (f->sp < argc + 2) {
    PyErr_SetString(PyExc_SystemError, "dyn_eval: CALL stack underflow");
    return S_ERR;
  }
  int base = f->sp - argc - 2;
  DynVar* a = f->stack[base];
  DynVar *fn, *const *args;
  Py_ssize_t n;
  if (a->kind == DV_NULL) {
    fn = f->stack[base + 1];
    args = &f->stack[base + 2];
    n = argc;
  } else {
    fn = a;
    args = &f->stack[base + 1];
    n = argc + 1;
  }
  DynVar* out = NULL;
  int st = ev_call(E, f, fn, args, n, kwnames, &out);
  if (st != S_OK) return st;
  while (f->sp > base) Py_DECREF(f->stack[--f->sp]);
  return ev_push(f, out) < 0 ? S_ERR : S_OK;
}

/* CALL_FUNCTION_EX: [NULL, fn, args tuple, kwargs dict?] */
int ev_op_call_ex(dyn_evtx* E, dyn_eframe* f, int flags) {
  int has_kw = flags & 1;
  if (f->sp < 3 + has_kw) {
    PyErr_SetString(PyExc_SystemError, "dyn_eval: CALL_FUNCTION_EX stack underflow");
    return S_ERR;
  }
  DynVar* kwv = has_kw ? f->stack[f->sp - 1] : NULL;
  DynVar* av = f->stack[f->sp - 1 - has_kw];
  DynVar* fn = f->stack[f->sp - 2 - has_kw];
  DynVar* below = f->stack[f->sp - 3 - has_kw];
  if (below->kind != DV_NULL) {
    dyn_break(&E->tx, "CALL_FUNCTION_EX without NULL");
    return S_BREAK;
  }
  PyObject* items = NULL;
  if ((av->kind == DV_TUPLE || av->kind == DV_LIST) && av->items) {
    items = PyList_GetSlice(av->items, 0, PyList_GET_SIZE(av->items));
  } else {
    dyn_break(&E->tx, "call with *args from a %s", dyn_var_kind_name(av));
    return S_BREAK;
  }
  if (!items) return S_ERR;
  PyObject* kwnames = NULL;
  if (kwv) {
    if (kwv->kind != DV_DICT || !kwv->items) {
      Py_DECREF(items);
      dyn_break(&E->tx, "call with **kwargs from a %s", dyn_var_kind_name(kwv));
      return S_BREAK;
    }
    PyObject* keys = PyList_New(0);
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (keys && PyDict_Next(kwv->items, &pos, &k, &v)) {
      if (!PyUnicode_Check(k)) {
        Py_DECREF(keys);
        Py_DECREF(items);
        dyn_break(&E->tx, "keywords must be strings");
        return S_BREAK;
      }
      if (PyList_Append(keys, k) < 0 || PyList_Append(items, v) < 0) Py_CLEAR(keys);
    }
    kwnames = keys ? PyList_AsTuple(keys) : NULL;
    Py_XDECREF(keys);
    if (!kwnames) {
      Py_DECREF(items);
      return S_ERR;
    }
  }
  DynVar* out = NULL;
  int st = ev_call(E, f, fn, (DynVar* const*)&PyList_GET_ITEM(items, 0), PyList_GET_SIZE(items),
                   kwnames, &out);
  Py_DECREF(items);
  Py_XDECREF(kwnames);
  if (st != S_OK) return st;
  int n = 3 + has_kw;
  for (int i = 0; i < n; i++) Py_DECREF(f->stack[--f->sp]);
  return ev_push(f, out) < 0 ? S_ERR : S_OK;
}

/* ---------------------------------------------------------------- return / break */

static long og_n_ops(dyn_evtx* E) {
  PyObject* n = PyObject_GetAttrString(E->tx.og, "n_ops");
  long r = n ? PyLong_AsLong(n) : -1;
  Py_XDECREF(n);
  if (r < 0) PyErr_Clear();
  return r;
}

int ev_return(dyn_evtx* E, dyn_eframe* f, DynVar* v) {
  if (!f->is_root) {
    Py_XSETREF(f->retval, v);
    return S_RET;
  }
  long n = og_n_ops(E);
  if (n == 0) {
    Py_DECREF(v);
    E->skip_why = "no tensor operations";
    E->no_ops_skip = 1;
    return S_DONE;
  }
  dyn_entry* e = dyn_output_return(&E->tx, v);
  Py_DECREF(v);
  if (e) {
    E->entry = e;
    return S_DONE;
  }
  if (PyErr_Occurred()) return S_ERR;
  if (!E->tx.brk.active) dyn_break(&E->tx, "the return value cannot be rebuilt");
  return S_BREAK;
}

static int emit_break(dyn_evtx* E, dyn_eframe* f) {
  if (in_loop(f->dc, E->break_start, E->break_end)) {
    snprintf(E->why_buf, sizeof E->why_buf, "graph break inside a loop: %.500s", E->first_reason);
    E->skip_why = E->why_buf;
    return S_DONE;
  }
  dyn_entry* e = dyn_output_break(&E->tx, f->dc, E->break_start, E->break_end, f->stack, f->sp,
                                  f->locals, f->n_locals);
  if (e) {
    E->entry = e;
    return S_DONE;
  }
  if (PyErr_Occurred()) return S_ERR;
  snprintf(E->why_buf, sizeof E->why_buf, "%.300s; cannot resume after it: %.300s", E->first_reason,
           E->tx.brk.active ? E->tx.brk.reason : "unknown");
  E->skip_why = E->why_buf;
  return S_DONE;
}

/* ---------------------------------------------------------------- one trace */

static PyObject* og_class(void) {
  static PyObject* cls = NULL;
  if (cls) return cls;
  PyObject* m = PyImport_ImportModule("ptc._dyn_graph");
  if (!m) return NULL;
  cls = PyObject_GetAttrString(m, "OutputGraph");
  Py_DECREF(m);
  return cls;
}

static dyn_evtx* evtx_new(const dyn_frame_view* v, PyObject* config, PyObject* dynamic) {
  dyn_evtx* E = PyMem_Calloc(1, sizeof *E);
  if (!E) {
    PyErr_NoMemory();
    return NULL;
  }
  E->break_start = E->break_end = -1;
  dyn_tx* tx = &E->tx;
  tx->view = v;
  tx->config = config;
  tx->dynamic = dynamic;
  Py_XINCREF(dynamic);
  tx->brk.line = -1;
  PyObject* cls = og_class();
  PyObject* kw = cls ? PyDict_New() : NULL;
  if (kw) {
    PyObject* b = PyObject_GetAttrString(config, "backend");
    PyObject* m = b ? PyObject_GetAttrString(config, "mode") : NULL;
    if (!b || !m || PyDict_SetItemString(kw, "backend", b) < 0 ||
        PyDict_SetItemString(kw, "mode", m) < 0)
      Py_CLEAR(kw);
    Py_XDECREF(b);
    Py_XDECREF(m);
  }
  PyObject* noargs = kw ? PyTuple_New(0) : NULL;
  tx->og = noargs ? PyObject_Call(cls, noargs, kw) : NULL;
  Py_XDECREF(noargs);
  Py_XDECREF(kw);
  tx->guards = tx->og ? dyn_guards_new() : NULL;
  tx->side_effects = PyList_New(0);
  tx->wrapped = PyDict_New();
  tx->inputs = PyList_New(0);
  E->cells = PyDict_New();
  E->globals_w = PyDict_New();
  E->null_var = (PyObject*)dyn_var_new(DV_NULL, NULL, NULL, NULL, NULL);
  if (!tx->og || !tx->guards || !tx->side_effects || !tx->wrapped || !tx->inputs || !E->cells ||
      !E->globals_w || !E->null_var)
    return E; /* caller checks PyErr_Occurred */
  return E;
}

static void evtx_free(dyn_evtx* E) {
  if (!E) return;
  dyn_tx* tx = &E->tx;
  Py_XDECREF(tx->og);
  Py_XDECREF((PyObject*)tx->guards);
  Py_XDECREF(tx->side_effects);
  Py_XDECREF(tx->wrapped);
  Py_XDECREF(tx->inputs);
  Py_XDECREF(tx->dynamic);
  Py_XDECREF(tx->brk.filename);
  Py_XDECREF(E->cells);
  Py_XDECREF(E->globals_w);
  Py_XDECREF(E->null_var);
  Py_XDECREF(E->supers);
  for (int i = 0; i < E->n_codes; i++) {
    dyn_code_free(&E->codes[i]->dc);
    PyMem_Free(E->codes[i]);
  }
  PyMem_Free(E->codes);
  if (E->entry) dyn_entry_free(E->entry);
  PyMem_Free(E);
}

/* Grad mode at entry: a guard, and the trace's initial mode. */
static int grad_mode_guard(dyn_evtx* E) {
  PyObject* torch = PyImport_ImportModule("torch");
  PyObject* r = torch ? PyObject_CallMethod(torch, "is_grad_enabled", NULL) : NULL;
  Py_XDECREF(torch);
  if (!r) return -1;
  int on = PyObject_IsTrue(r);
  Py_DECREF(r);
  if (on < 0) return -1;
  E->tx.grad_enabled = on;
  DynSource* s = dyn_source_grad_mode();
  int rc = s ? dyn_guards_add(E->tx.guards, DG_TRUTH, s, NULL, on) : -1;
  Py_XDECREF(s);
  return rc;
}

static int trace(dyn_evtx* E) {
  const dyn_frame_view* v = E->tx.view;
  if (grad_mode_guard(E) < 0 || dyn_var_global_guards(&E->tx) < 0) return S_ERR;
  const dyn_code* dc = get_code(E, v->code);
  if (!dc) return S_ERR;
  dyn_eframe* f = frame_new(NULL, dc, v->globals, v->builtins);
  if (!f) return S_ERR;
  f->is_root = 1;
  E->root = f;
  E->cur = f;
  int st = S_OK;
  PyObject* names = v->code->co_localsplusnames;
  for (Py_ssize_t i = 0; st == S_OK && i < v->n_args && i < f->n_locals; i++) {
    if (!v->locals[i]) continue;
    DynSource* s = dyn_source_local(i, PyTuple_GET_ITEM(names, i));
    f->locals[i] = s ? dyn_wrap(&E->tx, (PyObject*)v->locals[i], s) : NULL;
    Py_XDECREF(s);
    if (!f->locals[i]) st = S_ERR;
  }
  if (st == S_OK && v->closure && PyTuple_Check(v->closure)) {
    Py_ssize_t n = PyTuple_GET_SIZE(v->closure);
    f->closure = PyTuple_New(n);
    for (Py_ssize_t i = 0; f->closure && i < n; i++) {
      DynSource* s = dyn_source_closure(i);
      DynVar* c = s ? ev_real_cell(E, PyTuple_GET_ITEM(v->closure, i), s, i) : NULL;
      Py_XDECREF(s);
      if (!c) {
        Py_CLEAR(f->closure);
        break;
      }
      PyTuple_SET_ITEM(f->closure, i, (PyObject*)c);
    }
    if (!f->closure) st = S_ERR;
  }
  if (st == S_OK) st = run_frame(E, f);
  E->cur = NULL;
  E->root = NULL;
  frame_free(f);
  return st;
}

/* ---------------------------------------------------------------- conversion */

PyObject* dyn_unsupported_error(void) {
  static PyObject* cls = NULL;
  if (!cls)
    cls = PyErr_NewExceptionWithDoc(
        "ptc.dynamo.Unsupported",
        "A graph break under ptc.compile(..., fullgraph=True): the message names the "
        "unsupported construct and where it is (file:line).",
        PyExc_RuntimeError, NULL);
  return cls;
}

static void set_str(PyObject* d, const char* k, const char* s) {
  PyObject* v = s ? PyUnicode_FromString(s) : Py_NewRef(Py_None);
  if (v && PyDict_SetItemString(d, k, v) == 0) {
    Py_DECREF(v);
    return;
  }
  Py_XDECREF(v);
  PyErr_Clear();
}

static void set_int(PyObject* d, const char* k, long n) {
  PyObject* v = PyLong_FromLong(n);
  if (!v || PyDict_SetItemString(d, k, v) < 0) PyErr_Clear();
  Py_XDECREF(v);
}

/* The info dict of a conversion, added to config.graphs_log (and merged
 * into the entry's info). */
static void log_conversion(dyn_evtx* E, PyObject* config, const char* reason, const char* loc,
                           const char* skip) {
  PyObject* info = E->entry && E->entry->info && PyDict_Check(E->entry->info)
                       ? Py_NewRef(E->entry->info) : PyDict_New();
  if (!info) {
    PyErr_Clear();
    return;
  }
  PyCodeObject* co = E->tx.view->code;
  if (!PyDict_GetItemString(info, "graph")) set_str(info, "graph", NULL);
  PyObject* q = PyObject_GetAttrString((PyObject*)co, "co_qualname");
  if (!q) {
    PyErr_Clear();
    q = Py_NewRef(co->co_name);
  }
  if (PyDict_SetItemString(info, "name", q) < 0) PyErr_Clear();
  Py_DECREF(q);
  if (PyDict_SetItemString(info, "filename", co->co_filename) < 0) PyErr_Clear();
  set_int(info, "firstlineno", co->co_firstlineno);
  if (!PyDict_GetItemString(info, "ops")) set_int(info, "ops", E->tx.og ? og_n_ops(E) : 0);
  set_str(info, "break_reason", reason && reason[0] ? reason : NULL);
  set_str(info, "break_loc", loc && loc[0] ? loc : NULL);
  set_str(info, "skip", skip);
  set_int(info, "inlined", E->tx.n_inlined);
  if (!PyDict_GetItemString(info, "guards") && E->tx.guards) {
    PyObject* g = dyn_guards_describe(E->tx.guards);
    if (!g || PyDict_SetItemString(info, "guards", g) < 0) PyErr_Clear();
    Py_XDECREF(g);
  }
  if (!PyDict_GetItemString(info, "kind")) set_str(info, "kind", skip ? "skip" : "return");
  PyObject* log = PyObject_GetAttrString(config, "graphs_log");
  if (log && PyList_Check(log)) {
    if (PyList_Append(log, info) < 0) PyErr_Clear();
  } else {
    PyErr_Clear();
  }
  Py_XDECREF(log);
  Py_DECREF(info);
}

static int config_flag(PyObject* config, const char* name) {
  PyObject* v = PyObject_GetAttrString(config, name);
  int r = v ? PyObject_IsTrue(v) : 0;
  Py_XDECREF(v);
  if (r < 0 || PyErr_Occurred()) {
    PyErr_Clear();
    r = 0;
  }
  return r;
}

static char g_why[700];

dyn_entry* dyn_convert_frame(const dyn_frame_view* v, PyObject* config, PyObject* dynamic,
                             int* skip, const char** why) {
  *skip = 0;
  *why = NULL;
  int fullgraph = config_flag(config, "fullgraph");
  int break_start = -1, break_end = -1;
  char reason[600] = "", loc[400] = "";
  for (int attempt = 0; attempt < MAX_RESTARTS; attempt++) {
    dyn_evtx* E = evtx_new(v, config, dynamic);
    if (!E || PyErr_Occurred()) {
      evtx_free(E);
      return NULL;
    }
    E->break_start = break_start;
    E->break_end = break_end;
    snprintf(E->first_reason, sizeof E->first_reason, "%s%s%s", reason, loc[0] ? " at " : "",
             loc);
    int st = trace(E);
    if (st == S_DONE) {
      dyn_entry* e = E->entry;
      E->entry = NULL;
      if (!e) {
        if (fullgraph && !E->no_ops_skip) {
          PyObject* cls = dyn_unsupported_error();
          if (cls) PyErr_Format(cls, "%s", E->skip_why ? E->skip_why : "frame not captured");
          evtx_free(E);
          return NULL;
        }
        snprintf(g_why, sizeof g_why, "%s", E->skip_why ? E->skip_why : "not captured");
        *skip = 1;
        *why = g_why;
        log_conversion(E, config, reason, loc, g_why);
        evtx_free(E);
        return NULL;
      }
      E->entry = e; /* for the log */
      log_conversion(E, config, reason, loc, NULL);
      E->entry = NULL;
      evtx_free(E);
      return e;
    }
    if (st == S_ERR || !E->tx.brk.active) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "dyn_eval: trace failed");
      evtx_free(E);
      return NULL;
    }
    /* a graph break: remember where (root group) and restart */
    snprintf(reason, sizeof reason, "%s", E->tx.brk.reason);
    loc[0] = 0;
    if (E->tx.brk.filename && PyUnicode_Check(E->tx.brk.filename))
      snprintf(loc, sizeof loc, "%s:%d", PyUnicode_AsUTF8(E->tx.brk.filename), E->tx.brk.line);
    if (fullgraph) {
      PyObject* cls = dyn_unsupported_error();
      if (cls) PyErr_Format(cls, "graph break: %s at %s", reason, loc[0] ? loc : "?");
      evtx_free(E);
      return NULL;
    }
    int same = E->cur_start == break_start;
    break_start = E->cur_start;
    break_end = E->cur_end;
    evtx_free(E);
    if (same) break; /* broke before reaching the remembered point again */
  }
  snprintf(g_why, sizeof g_why, "graph break could not be placed: %s", reason);
  *skip = 1;
  *why = g_why;
  return NULL;
}

#else /* !PTC_DYN_SUPPORTED */

PyObject* dyn_unsupported_error(void) {
  PyErr_SetString(PyExc_RuntimeError, "ptc capture supports Python 3.11 and 3.12 only");
  return NULL;
}

dyn_entry* dyn_convert_frame(const dyn_frame_view* v, PyObject* config, PyObject* dynamic,
                             int* skip, const char** why) {
  (void)v, (void)config, (void)dynamic;
  *skip = 1;
  *why = "unsupported Python version";
  return NULL;
}

#endif
