/* dyn_hook.c - the PEP 523 frame hook of ptc.compile (CPython 3.11/3.12):
 * per-thread capture config, skip rules, the per-code cache in the code
 * object's extra slot (entries, skip flag, recompile count, automatic
 * dynamic memory), guard check and entry execution, conversion on a miss,
 * the recompile cap and the release of frames we ran ourselves (3.12).
 * The only file that sees CPython's internal frame layout. */
#include "dyn.h"

#if PTC_DYN_SUPPORTED
#define Py_BUILD_CORE 1
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
#endif

#include <string.h>

/* Symbols of files that may still be empty in a partial build: referenced
 * weakly so ptc._C imports either way; the hook runs frames plainly while
 * they are missing. */
#pragma weak dyn_convert_frame
#pragma weak dyn_runner_run
#pragma weak dyn_unsupported_error

/* ======================================================================
 * Per-thread config and global state
 * ====================================================================== */
static _Thread_local PyObject* tls_config; /* strong, NULL = capture off */
static _Thread_local int tls_busy;         /* >0 while inside the capture machinery */
static int n_threads_enabled;              /* threads with a config (GIL-protected) */

static struct {
  int64_t frames_seen, conversions, entries, graphs, breaks, cache_hits, recompiles, skipped,
      cap_hits, errors, fallbacks;
} stats;

/* Extra-slot state of one code object (freed with the code). Linked in a
 * global list so dyn_reset can drop every cache. */
typedef struct code_state {
  struct code_state *prev, *next;
  dyn_entry* entries;   /* most recent first */
  int checked;          /* filename rules evaluated */
  int skip;             /* run plainly forever (until reset) */
  int n_skips;          /* conversions that answered "skip" */
  int n_compiles;       /* entries made (recompile counter) */
  int warned;           /* one-time internal-error warning printed */
  int warned_cap;       /* one-time recompile-cap warning printed */
  PyObject* dynamic;    /* dict source repr -> frozenset of dims, or NULL */
} code_state;

static code_state* all_states; /* list head */
static Py_ssize_t extra_index = -1;
static PyObject* skip_prefixes; /* ((directory prefix ending in '/', skip 0/1/2), ...): 2 = torch._dynamo, capture off for the call */

/* (dyn.h) Releases one entry (not its successors). */
void dyn_entry_free(dyn_entry* e) {
  if (!e) return;
  Py_XDECREF((PyObject*)e->guards);
  Py_XDECREF((PyObject*)e->runner);
  Py_XDECREF(e->code);
  Py_XDECREF(e->fn);
  Py_XDECREF(e->info);
  Py_XDECREF(e->config);
  Py_XDECREF(e->config_key);
  PyMem_Free(e);
}

/* Frees a whole entry list. */
static void entries_free(dyn_entry* e) {
  while (e) {
    dyn_entry* next = e->next;
    dyn_entry_free(e);
    e = next;
  }
}

/* Drops a state's cache (entries, memories) but keeps it linked. */
static void state_clear(code_state* st) {
  dyn_entry* e = st->entries;
  st->entries = NULL;
  st->checked = st->skip = st->n_skips = st->n_compiles = st->warned = st->warned_cap = 0;
  Py_CLEAR(st->dynamic);
  entries_free(e);
}

#if PTC_DYN_SUPPORTED
/* The extra slot's free function: the code object dies. */
static void state_free(void* p) {
  code_state* st = p;
  if (!st) return;
  if (st->prev) st->prev->next = st->next;
  else if (all_states == st) all_states = st->next;
  if (st->next) st->next->prev = st->prev;
  state_clear(st);
  PyMem_Free(st);
}

#endif

/* The code's extra-slot pointer (3.11 / 3.12 spelling). 0 / -1. */
static int code_get_extra(PyObject* code, void** out) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyUnstable_Code_GetExtra(code, extra_index, out);
#else
  return _PyCode_GetExtra(code, extra_index, out);
#endif
}

#if PTC_DYN_SUPPORTED
/* Sets the code's extra-slot pointer. 0 / -1. */
static int code_set_extra(PyObject* code, void* p) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyUnstable_Code_SetExtra(code, extra_index, p);
#else
  return _PyCode_SetExtra(code, extra_index, p);
#endif
}

/* The state of `code`, created on first use; NULL + exception on failure. */
static code_state* code_state_of(PyCodeObject* code) {
  void* p = NULL;
  if (code_get_extra((PyObject*)code, &p) < 0) return NULL;
  if (p) return p;
  code_state* st = PyMem_Calloc(1, sizeof *st);
  if (!st) {
    PyErr_NoMemory();
    return NULL;
  }
  if (code_set_extra((PyObject*)code, st) < 0) {
    PyMem_Free(st);
    return NULL;
  }
  st->next = all_states;
  if (all_states) all_states->prev = st;
  all_states = st;
  return st;
}
#endif

/* ======================================================================
 * Skip rules
 * ====================================================================== */
/* The filename rules (computed once, at the first dyn_enable): frames of
 * the standard library (sysconfig's stdlib/platstdlib) and of torch's,
 * numpy's and ptc's packages are never captured; inside torch._dynamo
 * (torch.compile's wrappers) capture is off for the whole call (skip 2). */
static int skip_prefixes_init(void) {
  if (skip_prefixes) return 0;
  /* ((prefix, skip), ...) in order, first match wins: the library
   * packages (skipped), then package directories (site-packages,
   * dist-packages: captured, even when inside the stdlib tree as in
   * /usr/local/lib/python3.X/site-packages), then the standard library */
  const char* code =
      "def _f():\n"
      "    import os, site, sys, sysconfig\n"
      "    def norm(ds):\n"
      "        out = []\n"
      "        for d in ds:\n"
      "            for e in (d, os.path.realpath(d)):\n"
      "                e = e.rstrip('/') + '/'\n"
      "                if e != '/' and e not in out: out.append(e)\n"
      "        return out\n"
      "    libs, sites, off = [], [], []\n"
      "    for name in ('torch', 'ptc', 'numpy'):\n"
      "        f = getattr(sys.modules.get(name), '__file__', None)\n"
      "        if f: libs.append(os.path.dirname(f))\n"
      "        if f and name == 'torch': off.append(os.path.join(os.path.dirname(f), '_dynamo'))\n"
      "    p = sysconfig.get_paths()\n"
      "    sites += [p[k] for k in ('purelib', 'platlib') if p.get(k)]\n"
      "    try: sites += list(site.getsitepackages()) + [site.getusersitepackages()]\n"
      "    except Exception: pass\n"
      "    sites += [d for d in sys.path if d.rstrip('/').endswith(('site-packages', 'dist-packages'))]\n"
      "    std = [p[k] for k in ('stdlib', 'platstdlib') if p.get(k)]\n"
      "    return tuple([(d, 2) for d in norm(off)] + [(d, 1) for d in norm(libs)] + [(d, 0) for d in norm(sites)] +\n"
      "                 [(d, 1) for d in norm(std)])\n";
  PyObject* g = PyDict_New();
  PyObject* r = NULL;
  if (g && PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins()) == 0) {
    PyObject* x = PyRun_String(code, Py_file_input, g, g);
    Py_XDECREF(x);
    PyObject* f = x ? PyDict_GetItemString(g, "_f") : NULL;
    r = f ? PyObject_CallNoArgs(f) : NULL;
  }
  Py_XDECREF(g);
  if (!r) return -1;
  skip_prefixes = r;
  return 0;
}

/* Whether frames of `code` are never captured by filename. -1 on error. */
static int code_skipped_by_file(PyCodeObject* code) {
  if (skip_prefixes_init() < 0) return -1;
  PyObject* fn = code->co_filename;
  if (!PyUnicode_Check(fn)) return 1;
  Py_ssize_t len = PyUnicode_GET_LENGTH(fn);
  if (len == 0 || PyUnicode_READ_CHAR(fn, 0) == '<') {
    /* <frozen ...>, <string>: frozen stdlib modules are skipped, exec'd
     * user code (<string>, <stdin>) is captured */
    PyObject* frozen = PyUnicode_FromString("<frozen");
    if (!frozen) return -1;
    Py_ssize_t r = PyUnicode_Tailmatch(fn, frozen, 0, len, -1);
    Py_DECREF(frozen);
    return r < 0 ? -1 : r > 0;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(skip_prefixes); i++) {
    PyObject* pair = PyTuple_GET_ITEM(skip_prefixes, i);
    Py_ssize_t r = PyUnicode_Tailmatch(fn, PyTuple_GET_ITEM(pair, 0), 0, len, -1);
    if (r < 0) return -1;
    if (r) return (int)PyLong_AsLong(PyTuple_GET_ITEM(pair, 1));
  }
  return 0;
}

/* (dyn.h) Filename rules, through the code state when it has one. */
int dyn_code_skipped(PyCodeObject* code) {
  if (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) return 0;
  if (extra_index >= 0) {
    void* p = NULL;
    if (code_get_extra((PyObject*)code, &p) < 0) return -1;
    if (p && ((code_state*)p)->checked) return ((code_state*)p)->skip;
  }
  return code_skipped_by_file(code);
}

/* Test helper: _C._dyn_skipped(code) -> bool (filename rules only). */
PyObject* dyn_py_skipped(PyObject* self, PyObject* code) {
  (void)self;
  if (!PyCode_Check(code)) return PyErr_Format(PyExc_TypeError, "expected a code object");
  int r = code_skipped_by_file((PyCodeObject*)code);
  if (r < 0) return NULL;
  return PyBool_FromLong(r);
}

/* ======================================================================
 * Enabling
 * ====================================================================== */
#if PTC_DYN_SUPPORTED
static PyObject* hook(PyThreadState* ts, struct _PyInterpreterFrame* f, int throwflag);
#endif

/* Installs (on) or removes the frame hook for this interpreter. */
static void hook_install(int on) {
#if PTC_DYN_SUPPORTED
  PyInterpreterState* is = PyInterpreterState_Get();
  _PyInterpreterState_SetEvalFrameFunc(is, on ? hook : _PyEval_EvalFrameDefault);
#else
  (void)on;
#endif
}

/* _C.dyn_enable(config_or_None) -> previous config (or None). */
PyObject* dyn_py_enable(PyObject* self, PyObject* cfg) {
  (void)self;
#if !PTC_DYN_SUPPORTED
  (void)cfg;
  PyErr_SetString(PyExc_RuntimeError, "ptc.compile supports CPython 3.11 and 3.12 only");
  return NULL;
#else
  if (extra_index < 0) {
#if PY_VERSION_HEX >= 0x030C0000
    extra_index = PyUnstable_Eval_RequestCodeExtraIndex(state_free);
#else
    extra_index = _PyEval_RequestCodeExtraIndex(state_free);
#endif
    if (extra_index < 0) {
      PyErr_SetString(PyExc_RuntimeError, "ptc.compile: no code extra slot available");
      return NULL;
    }
  }
  if (skip_prefixes_init() < 0) return NULL;
  PyObject* new_cfg = cfg == Py_None ? NULL : cfg;
  PyObject* prev = tls_config;
  if (!prev && new_cfg && n_threads_enabled++ == 0) hook_install(1);
  if (prev && !new_cfg && --n_threads_enabled == 0) hook_install(0);
  tls_config = Py_XNewRef(new_cfg);
  return prev ? prev : Py_NewRef(Py_None); /* the thread's reference passes to the caller */
#endif
}

/* _C.dyn_run(config_or_None, fn, *args, **kwargs): fn(*args, **kwargs) with
 * `config` as the thread's capture config, the previous one restored after
 * (what ptc.compile's wrappers call: no Python-level try/finally). */
/* fn(*args, **kwargs) with `cfg` as the thread's config (restored after). */
static PyObject* run_with_config(PyObject* cfg, PyObject* fn, PyObject* const* args,
                                 size_t nargs, PyObject* kwnames) {
  PyObject* prev = dyn_py_enable(NULL, cfg);
  if (!prev) return NULL;
  PyObject* r = PyObject_Vectorcall(fn, args, nargs, kwnames);
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  PyObject* cur = dyn_py_enable(NULL, prev);
  Py_XDECREF(cur);
  Py_DECREF(prev);
  if (!cur) { /* cannot happen once enabling worked; keep fn's outcome */
    PyErr_Clear();
  }
  PyErr_Restore(t, v, tb);
  return r;
}

PyObject* dyn_py_run(PyObject* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
  (void)self;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs < 2) {
    PyErr_SetString(PyExc_TypeError, "dyn_run(config, fn, *args, **kwargs)");
    return NULL;
  }
  return run_with_config(args[0], args[1], args + 2, (size_t)(nargs - 2), kwnames);
}

/* ---- OptimizedModule calls (ptc/dynamo.py) ---- */

/* What torch.nn.Module.__call__ consults before it calls forward, resolved
 * once: ok = 0 (this torch looks different) sends every call the long way. */
static struct {
  int tried, ok;
  PyObject* module_type; /* torch.nn.Module */
  PyObject* call;        /* the original Module.__call__ (_wrapped_call_impl / _call_impl) */
  PyObject* call_impl;   /* Module._call_impl */
  PyObject* mod_globals; /* torch.nn.modules.module's globals (the global hook dicts) */
  PyObject* s_call, *s_call_impl, *s_forward, *s_config, *s_modules, *s_orig, *s_compiled;
  PyObject* s_hooks[4];  /* the per-module hook dicts */
  PyObject* s_global[4]; /* the global hook dicts */
} MC;

static void module_call_init(void) {
  MC.tried = 1;
  static const char* const hooks[4] = {"_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                                       "_backward_pre_hooks"};
  static const char* const globals[4] = {"_global_forward_hooks", "_global_forward_pre_hooks",
                                         "_global_backward_hooks", "_global_backward_pre_hooks"};
  PyObject** names[7] = {&MC.s_call, &MC.s_call_impl, &MC.s_forward, &MC.s_config,
                         &MC.s_modules, &MC.s_orig, &MC.s_compiled};
  static const char* const text[7] = {"__call__", "_call_impl", "forward", "_ptc_config",
                                      "_modules", "_orig_mod", "_compiled_call_impl"};
  for (int i = 0; i < 7; i++)
    if (!*names[i] && !(*names[i] = PyUnicode_InternFromString(text[i]))) goto fail;
  for (int i = 0; i < 4; i++) {
    if (!MC.s_hooks[i] && !(MC.s_hooks[i] = PyUnicode_InternFromString(hooks[i]))) goto fail;
    if (!MC.s_global[i] && !(MC.s_global[i] = PyUnicode_InternFromString(globals[i]))) goto fail;
  }
  PyObject* mm = PyImport_ImportModule("torch.nn.modules.module");
  PyObject* mt = mm ? PyObject_GetAttrString(mm, "Module") : NULL;
  PyObject* g = mm ? PyModule_GetDict(mm) : NULL; /* borrowed */
  if (!mt || !g || !PyType_Check(mt)) {
    Py_XDECREF(mt);
    Py_XDECREF(mm);
    goto fail;
  }
  PyObject* d = ((PyTypeObject*)mt)->tp_dict;
  PyObject* call = PyDict_GetItemString(d, "_wrapped_call_impl"); /* torch >= 2.2 */
  if (!call) call = PyDict_GetItemString(d, "_call_impl");
  PyObject* impl = PyDict_GetItemString(d, "_call_impl");
  if (!call || !impl) {
    Py_DECREF(mt);
    Py_DECREF(mm);
    goto fail;
  }
  MC.module_type = mt;
  MC.call = Py_NewRef(call);
  MC.call_impl = Py_NewRef(impl);
  MC.mod_globals = Py_NewRef(g);
  Py_DECREF(mm);
  MC.ok = 1;
  return;
fail:
  PyErr_Clear();
}

/* Whether dict `d` holds `name` as a non-empty dict (or anything else that
 * is not an empty dict or None): 1 yes, 0 no. */
static int holds_hooks(PyObject* d, PyObject* name) {
  PyObject* h = PyDict_GetItemWithError(d, name); /* borrowed */
  if (!h) {
    PyErr_Clear();
    return 0;
  }
  if (PyDict_Check(h)) return PyDict_GET_SIZE(h) != 0;
  return h != Py_None;
}

/* Whether calling module `m` (its instance dict `d`) runs exactly
 * m.forward(*args, **kwargs): torch's own Module.__call__ (`own_call`: the
 * type's __call__ is checked too), no _call_impl override, no module hooks,
 * no compiled call. */
static int plain_module(PyObject* m, PyObject* d, int own_call) {
  PyTypeObject* tp = Py_TYPE(m);
  if (own_call && _PyType_Lookup(tp, MC.s_call) != MC.call) return 0;
  if (_PyType_Lookup(tp, MC.s_call_impl) != MC.call_impl) return 0;
  for (int i = 0; i < 4; i++)
    if (holds_hooks(d, MC.s_hooks[i])) return 0;
  return !holds_hooks(d, MC.s_compiled);
}

/* Whether torch.nn.Module.__call__ would take its no-hook path right now:
 * not patched (torch.fx patches it while tracing), no global hooks. (Under
 * torch.jit.trace _call_impl would call _slow_forward, which only adds
 * tracer scope names around the same forward: not checked, as asking costs
 * a pybind11 call per run.) */
static int plain_module_call(void) {
  if (_PyType_Lookup((PyTypeObject*)MC.module_type, MC.s_call) != MC.call) return 0;
  for (int i = 0; i < 4; i++)
    if (holds_hooks(MC.mod_globals, MC.s_global[i])) return 0;
  return 1;
}

/* torch.nn.Module.__call__(outer, *args, **kwargs): hooks, then forward
 * (OptimizedModule.forward: dyn_run on the wrapped module). */
static PyObject* module_call_long(PyObject* outer, PyObject* const* args, size_t nargs,
                                  PyObject* kwnames) {
  PyObject* call = NULL;
  if (MC.ok) {
    call = PyObject_GetAttr(MC.module_type, MC.s_call);
  } else {
    PyObject* mm = PyImport_ImportModule("torch.nn");
    PyObject* mt = mm ? PyObject_GetAttrString(mm, "Module") : NULL;
    call = mt ? PyObject_GetAttrString(mt, "__call__") : NULL;
    Py_XDECREF(mt);
    Py_XDECREF(mm);
  }
  if (!call) return NULL;
  size_t n_all = nargs + (kwnames ? (size_t)PyTuple_GET_SIZE(kwnames) : 0);
  PyObject* small[16];
  PyObject** full = n_all + 1 <= 16 ? small : PyMem_Malloc((n_all + 1) * sizeof *full);
  PyObject* r = NULL;
  if (!full) {
    PyErr_NoMemory();
  } else {
    full[0] = outer;
    for (size_t i = 0; i < n_all; i++) full[i + 1] = args[i];
    r = PyObject_Vectorcall(call, full, nargs + 1, kwnames);
    if (full != small) PyMem_Free(full);
  }
  Py_DECREF(call);
  return r;
}

/* The frames of a library module's forward (nn.LayerNorm, nn.Sequential,
 * ...: torch's files) are never captured, so ptc.compile(nn.LayerNorm(n))
 * would run eagerly. Such a forward is called through
 * ptc.dynamo._module_call(m, *args, **kwargs) instead, a function whose
 * file rules capture it: its one call of `m` is then traced like a module
 * call in user code. Returns the trampoline (borrowed) when bound method
 * `fwd` is a function of a skipped library file, else NULL (an exception
 * only on errors). */
static PyObject* library_forward_call(PyObject* fwd) {
  static PyObject* tramp;
  if (!PyMethod_Check(fwd)) return NULL;
  PyObject* fn = PyMethod_GET_FUNCTION(fwd);
  if (!PyFunction_Check(fn)) return NULL;
  int skip = dyn_code_skipped((PyCodeObject*)PyFunction_GET_CODE(fn));
  if (skip < 0) return NULL;
  if (skip != 1) return NULL;
  if (!tramp) {
    PyObject* m = PyImport_ImportModule("ptc.dynamo");
    tramp = m ? PyObject_GetAttrString(m, "_module_call") : NULL;
    Py_XDECREF(m);
  }
  return tramp;
}

/* tramp(first, *args, **kwargs) under `cfg`. */
static PyObject* call_prepended(PyObject* cfg, PyObject* tramp, PyObject* first,
                                PyObject* const* args, size_t nargs, PyObject* kwnames) {
  size_t n_all = nargs + (kwnames ? (size_t)PyTuple_GET_SIZE(kwnames) : 0);
  PyObject* small[16];
  PyObject** full = n_all + 1 <= 16 ? small : PyMem_Malloc((n_all + 1) * sizeof *full);
  if (!full) return PyErr_NoMemory();
  full[0] = first;
  for (size_t i = 0; i < n_all; i++) full[i + 1] = args[i];
  PyObject* r = run_with_config(cfg, tramp, full, nargs + 1, kwnames);
  if (full != small) PyMem_Free(full);
  return r;
}

/* An OptimizedModule's call: `outer` the wrapper, args/kwnames its call's. */
static PyObject* run_module(PyObject* outer, PyObject* const* args, size_t nargs,
                            PyObject* kwnames) {
  if (!MC.tried) module_call_init();
  PyObject* r = NULL;
  PyObject* od = MC.ok ? PyObject_GenericGetDict(outer, NULL) : NULL;
  PyObject *inner = NULL, *cfg = NULL, *id = NULL;
  if (od) {
    PyObject* mods = PyDict_GetItemWithError(od, MC.s_modules);
    inner = mods && PyDict_Check(mods) ? PyDict_GetItemWithError(mods, MC.s_orig) : NULL;
    cfg = PyDict_GetItemWithError(od, MC.s_config);
    Py_XINCREF(inner);
    Py_XINCREF(cfg);
  }
  if (inner) id = PyObject_GenericGetDict(inner, NULL);
  PyErr_Clear();
  if (od && id && cfg && plain_module_call() && plain_module(outer, od, 0) &&
      plain_module(inner, id, 1)) {
    PyObject* fwd = PyObject_GetAttr(inner, MC.s_forward);
    PyObject* tramp = fwd ? library_forward_call(fwd) : NULL;
    if (tramp) { /* a torch module's own forward: through ptc.dynamo._module_call */
      r = call_prepended(cfg, tramp, inner, args, nargs, kwnames);
    } else if (fwd && !PyErr_Occurred()) {
      r = run_with_config(cfg, fwd, args, nargs, kwnames);
    }
    Py_XDECREF(fwd);
  } else {
    r = module_call_long(outer, args, nargs, kwnames);
  }
  Py_XDECREF(od);
  Py_XDECREF(id);
  Py_XDECREF(inner);
  Py_XDECREF(cfg);
  return r;
}

/* OptimizedModule.__call__ as a method descriptor (self: the module). */
static PyObject* module_call_method(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                    PyObject* kwnames) {
  return run_module(self, args, (size_t)nargs, kwnames);
}

static PyMethodDef module_call_def = {
    "__call__", (PyCFunction)(void (*)(void))module_call_method, METH_FASTCALL | METH_KEYWORDS,
    "Calls the wrapped module's forward under capture (see dyn_call_descriptor)."};

PyObject* dyn_py_call_descriptor(PyObject* self, PyObject* cls) {
  (void)self;
  if (!PyType_Check(cls)) {
    PyErr_SetString(PyExc_TypeError, "dyn_call_descriptor(cls): cls must be a class");
    return NULL;
  }
  return PyDescr_NewMethod((PyTypeObject*)cls, &module_call_def);
}

/* _C.dyn_reset(): drops every cache entry and skip mark. */
PyObject* dyn_py_reset(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  /* detach every list first: freeing entries may free code objects, whose
   * states unlink themselves from all_states */
  dyn_entry* dead = NULL;
  for (code_state* st = all_states; st; st = st->next) {
    dyn_entry* e = st->entries;
    st->entries = NULL;
    state_clear(st);
    while (e) {
      dyn_entry* next = e->next;
      e->next = dead;
      dead = e;
      e = next;
    }
  }
  entries_free(dead);
  memset(&stats, 0, sizeof stats);
  Py_RETURN_NONE;
}

/* _C.dyn_stats() -> dict of counters (see ptc.compile_stats). */
PyObject* dyn_py_stats(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  return Py_BuildValue(
      "{sLsLsLsLsLsLsLsLsLsLsLsi}", "frames_seen", (long long)stats.frames_seen,
      "frames_converted", (long long)stats.conversions, "entries", (long long)stats.entries,
      "graphs", (long long)stats.graphs, "breaks", (long long)stats.breaks, "cache_hits",
      (long long)stats.cache_hits, "recompiles", (long long)stats.recompiles, "skipped",
      (long long)stats.skipped, "cache_limit_hits", (long long)stats.cap_hits, "errors",
      (long long)stats.errors, "fallbacks", (long long)stats.fallbacks, "threads_enabled",
      n_threads_enabled);
}

/* _C.dyn_entries(code) -> list of info dicts of the code's cache entries
 * (most recent first): the entry's info plus hits, guards, is_break. */
PyObject* dyn_py_entries(PyObject* self, PyObject* code) {
  (void)self;
  if (!PyCode_Check(code)) return PyErr_Format(PyExc_TypeError, "dyn_entries: expected a code object");
  PyObject* out = PyList_New(0);
  if (!out || extra_index < 0) return out;
  void* p = NULL;
  if (code_get_extra(code, &p) < 0) {
    Py_DECREF(out);
    return NULL;
  }
  for (dyn_entry* e = p ? ((code_state*)p)->entries : NULL; e; e = e->next) {
    PyObject* d = e->info && PyDict_Check(e->info) ? PyDict_Copy(e->info) : PyDict_New();
    PyObject* g = d && e->guards ? dyn_guards_describe(e->guards) : PyList_New(0);
    PyObject* h = PyLong_FromLongLong(e->hits);
    int bad = !d || !g || !h || PyDict_SetItemString(d, "guards", g) < 0 ||
              PyDict_SetItemString(d, "hits", h) < 0 ||
              PyDict_SetItemString(d, "is_break", e->fn ? Py_True : Py_False) < 0 ||
              PyList_Append(out, d) < 0;
    Py_XDECREF(g);
    Py_XDECREF(h);
    Py_XDECREF(d);
    if (bad) {
      Py_DECREF(out);
      return NULL;
    }
  }
  return out;
}

#if PTC_DYN_SUPPORTED
/* ======================================================================
 * The hook
 * ====================================================================== */
static inline PyObject* frame_func(struct _PyInterpreterFrame* f) {
#if PY_VERSION_HEX >= 0x030C0000
  return f->f_funcobj;
#else
  return (PyObject*)f->f_func;
#endif
}

/* Fills the frame view of a frame at entry (borrowed pointers). */
static void view_fill(dyn_frame_view* v, struct _PyInterpreterFrame* f) {
  PyCodeObject* co = f->f_code;
  v->code = co;
  v->func = frame_func(f);
  v->globals = f->f_globals;
  v->builtins = f->f_builtins;
  v->locals = (PyObject* const*)f->localsplus;
  v->n_locals = co->co_nlocalsplus;
  v->n_args = co->co_argcount + co->co_kwonlyargcount + ((co->co_flags & CO_VARARGS) ? 1 : 0) +
              ((co->co_flags & CO_VARKEYWORDS) ? 1 : 0);
  v->closure = (v->func && PyFunction_Check(v->func)) ? PyFunction_GET_CLOSURE(v->func) : NULL;
}

/* 3.12: whether the frame is the first of its data-stack chunk (then we
 * cannot pop it ourselves: such frames run plainly). */
static int frame_poppable(PyThreadState* ts, struct _PyInterpreterFrame* f) {
#if PY_VERSION_HEX >= 0x030C0000
  return ts->datastack_chunk && (PyObject**)f != &ts->datastack_chunk->data[0];
#else
  (void)ts;
  (void)f;
  return 1;
#endif
}

/* Releases a frame we did not run through _PyEval_EvalFrameDefault. 3.11:
 * nothing (_PyEval_Vector clears and pops it after we return). 3.12: the
 * evaluator would have done it; clear the frame's references and pop it
 * from the thread's data stack (frame_poppable was checked before). */
static void frame_release(PyThreadState* ts, struct _PyInterpreterFrame* f) {
#if PY_VERSION_HEX >= 0x030C0000
  for (int i = 0; i < f->stacktop; i++) Py_XDECREF(f->localsplus[i]);
  f->stacktop = 0;
  Py_XDECREF(f->f_locals);
  f->f_locals = NULL;
  Py_XDECREF(f->f_funcobj);
  f->f_funcobj = NULL;
  Py_DECREF(f->f_code);
  ts->datastack_top = (PyObject**)f;
#else
  (void)ts;
  (void)f;
#endif
}

/* Runs the frame as plain Python (the default evaluator releases it). */
static PyObject* run_default(PyThreadState* ts, struct _PyInterpreterFrame* f, int throwflag) {
  return _PyEval_EvalFrameDefault(ts, f, throwflag);
}

/* Prints a one-time (per code) warning about an internal error of the
 * capture, with the pending exception, and clears it. */
static void warn_internal(code_state* st, PyCodeObject* code, const char* what) {
  stats.errors++;
  if (st && st->warned) {
    PyErr_Clear();
    return;
  }
  if (st) st->warned = 1;
  PyObject *t, *val, *tb;
  PyErr_Fetch(&t, &val, &tb);
  PyErr_NormalizeException(&t, &val, &tb);
  if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                       "ptc.compile: internal error %s %U (%U:%d), running it as plain Python: %R",
                       what, code->co_qualname, code->co_filename, code->co_firstlineno,
                       val ? val : Py_None) < 0)
    PyErr_Clear();
  Py_XDECREF(t);
  Py_XDECREF(val);
  Py_XDECREF(tb);
}

/* Reads an int attribute of the config (default on absence/error). */
static long config_int(PyObject* cfg, const char* name, long dflt) {
  PyObject* o = PyObject_GetAttrString(cfg, name);
  if (!o) {
    PyErr_Clear();
    return dflt;
  }
  long r = o == Py_None ? dflt : PyLong_AsLong(o);
  Py_DECREF(o);
  if (r == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return dflt;
  }
  return r;
}

/* Adds the dims of tensor guard `g` whose size differs from the live
 * tensor's to st->dynamic (automatic dynamic). 0 / -1. */
static int note_dynamic_dims(code_state* st, const dyn_guard* g, const dyn_frame_view* v) {
  PyObject* t = dyn_source_eval(g->src, v);
  if (!t) {
    PyErr_Clear();
    return 0;
  }
  PyObject* shape = NULL;
  PyObject* dims = NULL;
  int rc = -1;
  if ((PyObject*)Py_TYPE(t) != g->tensor_type) goto ok;
  shape = PyObject_GetAttrString(t, "shape");
  if (!shape || !PyTuple_Check(shape)) goto ok;
  if (PyTuple_GET_SIZE(shape) != g->ndim) goto ok;
  dims = PySet_New(NULL);
  if (!dims) goto done;
  for (int i = 0; i < g->ndim; i++) {
    long long s = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    if (s == -1 && PyErr_Occurred()) goto done;
    if (g->sizes[i] >= 0 && s != g->sizes[i]) {
      PyObject* k = PyLong_FromLong(i);
      if (!k || PySet_Add(dims, k) < 0) {
        Py_XDECREF(k);
        goto done;
      }
      Py_DECREF(k);
    }
  }
  if (PySet_GET_SIZE(dims) > 0) {
    if (!st->dynamic && !(st->dynamic = PyDict_New())) goto done;
    PyObject* key = dyn_source_repr(g->src);
    if (!key) goto done;
    PyObject* old = PyDict_GetItemWithError(st->dynamic, key);
    if (!old && PyErr_Occurred()) {
      Py_DECREF(key);
      goto done;
    }
    PyObject* it = old ? PyObject_GetIter(old) : NULL;
    PyObject* item;
    while (it && (item = PyIter_Next(it))) {
      int ar = PySet_Add(dims, item);
      Py_DECREF(item);
      if (ar < 0) break;
    }
    Py_XDECREF(it);
    if (PyErr_Occurred()) {
      Py_DECREF(key);
      goto done;
    }
    PyObject* fs = PyFrozenSet_New(dims);
    int r = fs ? PyDict_SetItem(st->dynamic, key, fs) : -1;
    Py_XDECREF(fs);
    Py_DECREF(key);
    if (r < 0) goto done;
  }
ok:
  PyErr_Clear();
  rc = 0;
done:
  Py_XDECREF(dims);
  Py_XDECREF(shape);
  Py_DECREF(t);
  return rc;
}

/* Automatic dynamic: compares every earlier entry's tensor guards with the
 * frame's tensors. Returns st->dynamic (borrowed, may be NULL); -1 via *err. */
static PyObject* compute_dynamic(code_state* st, const dyn_frame_view* v, int* err) {
  *err = 0;
  for (dyn_entry* e = st->entries; e; e = e->next)
    for (Py_ssize_t i = 0; e->guards && i < e->guards->n; i++) {
      const dyn_guard* g = &e->guards->g[i];
      if (g->kind == DG_TENSOR && note_dynamic_dims(st, g, v) < 0) {
        *err = 1;
        return NULL;
      }
    }
  return st->dynamic;
}

/* Runs entry `e` for the frame: the frame's return value (new ref), or NULL
 * with the user's exception. *fallback = 1 (and no exception) when the
 * runner failed before anything ran: the caller runs the frame plainly. */
static PyObject* entry_run(dyn_entry* e, const dyn_frame_view* v, int* fallback) {
  *fallback = 0;
  DynRunner* runner = (DynRunner*)Py_NewRef((PyObject*)e->runner);
  PyObject* fn = Py_XNewRef(e->fn);
  tls_busy++;
  PyObject* r = dyn_runner_run(runner, v);
  tls_busy--;
  Py_DECREF((PyObject*)runner);
  if (!r) {
    *fallback = 1;
    Py_XDECREF(fn);
    return NULL;
  }
  if (!fn) return r; /* full graph: the runner's result is the return value */
  PyObject* out = PyObject_CallOneArg(fn, r);
  Py_DECREF(r);
  Py_DECREF(fn);
  return out;
}

/* The config's cache_key (new reference, or NULL without exception when
 * it has none). */
static PyObject* config_key_of(PyObject* cfg) {
  PyObject* k = PyObject_GetAttrString(cfg, "cache_key");
  if (!k) PyErr_Clear();
  return k;
}

/* Whether entry `e` was made for config `cfg` (or one with an equal
 * cache_key); *key caches cfg's key between calls (new ref or NULL). */
static int entry_config_matches(dyn_entry* e, PyObject* cfg, PyObject** key, int* have_key) {
  if (e->config == cfg) return 1;
  if (!*have_key) {
    *key = config_key_of(cfg);
    *have_key = 1;
  }
  if (!*key || !e->config_key) return 0;
  int eq = PyObject_RichCompareBool(*key, e->config_key, Py_EQ);
  if (eq < 0) PyErr_Clear();
  return eq == 1;
}

/* Looks the frame up in the code's cache: entries made for this config (by
 * cache_key) whose guards hold. Returns the entry that matches (moved to the
 * front), NULL when none does. */
static dyn_entry* cache_lookup(code_state* st, const dyn_frame_view* v, PyObject* cfg) {
  dyn_entry *prev = NULL, *e = st->entries;
  PyObject* key = NULL;
  int have_key = 0;
  tls_busy++;
  for (; e; prev = e, e = e->next) {
    if (!entry_config_matches(e, cfg, &key, &have_key)) continue;
    Py_ssize_t failed = -1;
    int r = dyn_guards_check(e->guards, v, &failed);
    if (r < 0) PyErr_Clear();
    if (r == 1) break;
  }
  tls_busy--;
  Py_XDECREF(key);
  if (e && prev) {
    prev->next = e->next;
    e->next = st->entries;
    st->entries = e;
  }
  return e;
}

/* Whether the pending exception is the fullgraph break error (propagates). */
static int is_fullgraph_error(void) {
  if (!dyn_unsupported_error) return 0;
  PyObject* cls = dyn_unsupported_error();
  if (!cls) {
    PyErr_Clear();
    return 0;
  }
  return PyErr_ExceptionMatches(cls);
}

/* Whether a frame's builtins are a dict with the usual contents (code
 * generated by libraries with `__builtins__: {}`, like namedtuple's __new__,
 * has none: it is not captured). */
static int builtins_usual(PyObject* b) {
  if (!b || !PyDict_Check(b)) return 0;
  PyObject* imp = PyDict_GetItemString(b, "__import__");
  return imp != NULL;
}

/* Whether entry `e` was made for the same argument objects as frame `v`:
 * every identity guard (DG_ID) on an argument (a DS_LOCAL source: the
 * module instance `self` of a forward, or of its resume functions) expects
 * the object the frame has there. */
static int entry_same_objects(const dyn_entry* e, const dyn_frame_view* v) {
  if (!e->guards) return 1;
  for (Py_ssize_t i = 0; i < e->guards->n; i++) {
    const dyn_guard* g = &e->guards->g[i];
    if (g->kind == DG_ID && g->src && g->src->kind == DS_LOCAL && g->src->index >= 0 &&
        g->src->index < v->n_args && v->locals[g->src->index] != g->expected)
      return 0;
  }
  return 1;
}

/* Entries that count against the recompile cap for frame `v`: as in
 * TorchDynamo, entries specialised on other argument objects (one forward
 * code shared by the 12 layers of a BERT) do not count, those made for the
 * same objects do; *total gets every entry of the code. */
static long entries_for_cap(const code_state* st, const dyn_frame_view* v, long* total) {
  long n = 0;
  *total = 0;
  for (const dyn_entry* e = st->entries; e; e = e->next) {
    (*total)++;
    if (entry_same_objects(e, v)) n++;
  }
  return n;
}

/* Miss: converts the frame. Returns the new entry (added to the cache),
 * NULL to run plainly (no exception), or NULL with *propagate = 1 and the
 * fullgraph error set. */
static dyn_entry* convert(code_state* st, const dyn_frame_view* v, PyObject* cfg, int* propagate) {
  *propagate = 0;
  if (!dyn_convert_frame) return NULL;
  long limit = config_int(cfg, "cache_size_limit", 8), total = 0;
  long counted = entries_for_cap(st, v, &total);
  if (counted >= limit || total >= 8 * limit) {
    stats.cap_hits++;
    if (!st->warned_cap) {
      st->warned_cap = 1;
      if (PyErr_WarnFormat(PyExc_UserWarning, 1,
                           "ptc.compile: %U (%U:%d) hit the recompile limit "
                           "(cache_size_limit=%ld); it now runs as plain Python",
                           v->code->co_qualname, v->code->co_filename, v->code->co_firstlineno,
                           limit) < 0)
        PyErr_Clear();
    }
    return NULL;
  }
  if (!builtins_usual(v->builtins)) {
    st->skip = 1; /* library-generated code (e.g. namedtuple's __new__: no builtins) */
    stats.skipped++;
    return NULL;
  }
  int err = 0;
  PyObject* dynamic = st->entries ? compute_dynamic(st, v, &err) : st->dynamic;
  if (err) {
    warn_internal(st, v->code, "computing dynamic sizes of");
    return NULL;
  }
  Py_XINCREF(dynamic);
  int skip = 0;
  const char* why = NULL;
  stats.conversions++;
  tls_busy++;
  dyn_entry* e = dyn_convert_frame(v, cfg, dynamic, &skip, &why);
  tls_busy--;
  Py_XDECREF(dynamic);
  if (!e) {
    if (PyErr_Occurred()) {
      if (is_fullgraph_error()) {
        *propagate = 1;
        return NULL;
      }
      warn_internal(st, v->code, "converting");
      st->skip = 1;
    } else {
      stats.skipped++;
      /* a skip may depend on the inputs (e.g. no tensor this time): mark the
       * code only after two skips */
      if (++st->n_skips >= 2) st->skip = 1;
    }
    return NULL;
  }
  /* the new entry was made from this very frame: its guards must hold (if
   * not, it is a converter bug and the entry would never be used) */
  Py_ssize_t failed = -1;
  tls_busy++;
  int ok = e->guards ? dyn_guards_check(e->guards, v, &failed) : 0;
  tls_busy--;
  if (ok != 1) {
    PyObject* line = NULL;
    if (ok == 0 && e->guards) {
      PyObject* d = dyn_guards_describe(e->guards);
      line = d && failed >= 0 && failed < PyList_GET_SIZE(d) ? Py_NewRef(PyList_GET_ITEM(d, failed)) : NULL;
      Py_XDECREF(d);
    }
    PyErr_Clear();
    PyErr_Format(PyExc_RuntimeError, "the new cache entry's guards do not hold for its own frame (%S)",
                 line ? line : Py_None);
    Py_XDECREF(line);
    dyn_entry_free(e);
    warn_internal(st, v->code, "converting");
    st->skip = 1;
    return NULL;
  }
  e->config = Py_NewRef(cfg);
  e->config_key = config_key_of(cfg);
  if (st->entries) stats.recompiles++;
  stats.entries++;
  if (e->runner && e->runner->compiled && e->runner->compiled != Py_None) stats.graphs++;
  if (e->fn) stats.breaks++;
  st->n_compiles++;
  e->next = st->entries;
  st->entries = e;
  return e;
}

/* The PEP 523 frame evaluator: skip rules, cache lookup, conversion on a
 * miss, entry execution (see the brief in dyn.h's pipeline comment). */
static PyObject* hook(PyThreadState* ts, struct _PyInterpreterFrame* f, int throwflag) {
  PyObject* cfg = tls_config;
  if (!cfg || tls_busy || throwflag) return run_default(ts, f, throwflag);
  PyCodeObject* code = f->f_code;
  if ((code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) ||
      !(code->co_flags & CO_OPTIMIZED) || f->f_locals || f->frame_obj ||
      !frame_poppable(ts, f) || !dyn_convert_frame || !dyn_runner_run)
    return run_default(ts, f, throwflag);
  code_state* st = code_state_of(code);
  if (!st) {
    PyErr_Clear();
    return run_default(ts, f, throwflag);
  }
  if (!st->checked) {
    /* never captured: library files, and break-transformed functions f(state)
     * (tracing them would break at the same place again, without end) */
    int r = dyn_codegen_is_transformed(code) ? 1 : code_skipped_by_file(code);
    if (r < 0) {
      PyErr_Clear();
      r = 1;
    }
    st->checked = 1;
    st->skip = r;
  }
  if (st->skip == 2) {
    /* torch._dynamo (torch.compile's own wrappers): capture is off for the
     * whole call, so the frames torch.compile traces and its transformed
     * code are never captured a second time by ptc */
    PyObject* saved = tls_config;
    tls_config = NULL;
    PyObject* r = run_default(ts, f, throwflag);
    tls_config = saved;
    return r;
  }
  if (st->skip) return run_default(ts, f, throwflag);
  stats.frames_seen++;
  dyn_frame_view v;
  view_fill(&v, f);
  Py_INCREF(cfg); /* the entry may call dyn_enable */
  dyn_entry* e = cache_lookup(st, &v, cfg);
  if (e) stats.cache_hits++;
  else {
    int propagate = 0;
    e = convert(st, &v, cfg, &propagate);
    if (propagate) {
      Py_DECREF(cfg);
      frame_release(ts, f);
      return NULL;
    }
  }
  Py_DECREF(cfg);
  if (!e) return run_default(ts, f, throwflag);
  e->hits++;
  int fallback = 0;
  PyObject* r = entry_run(e, &v, &fallback);
  if (fallback) {
    stats.fallbacks++;
    warn_internal(st, code, "running the compiled entry of");
    st->skip = 1; /* plain Python from now on (until reset) */
    return run_default(ts, f, throwflag);
  }
  frame_release(ts, f);
  return r;
}
#endif /* PTC_DYN_SUPPORTED */

#ifdef PTC_DYN_HOOK_SELFTEST
/* Test-only converter (private builds with -DPTC_DYN_HOOK_SELFTEST, never
 * in the real build, where dyn_eval.c defines dyn_convert_frame): frames of
 * functions named selftest_* get a full-graph entry whose graph is
 * config._selftest(*tensor args) -> tuple (result = output 0), guarded by a
 * tensor guard per tensor argument (dims in `dynamic` dynamic); the
 * dynamic dict of each conversion is appended to config._selftest_log.
 * Functions named selftest_skip* answer skip, selftest_err* raise. */
dyn_entry* dyn_convert_frame(const dyn_frame_view* v, PyObject* config, PyObject* dynamic,
                             int* skip, const char** why) {
  *skip = 0;
  const char* name = PyUnicode_AsUTF8(v->code->co_name);
  if (!name) return NULL;
  if (strncmp(name, "selftest_", 9) != 0 || !strncmp(name, "selftest_skip", 13)) {
    *skip = 1;
    *why = "selftest: not a selftest_ function";
    return NULL;
  }
  if (!strncmp(name, "selftest_err", 12)) {
    PyErr_SetString(PyExc_ValueError, "selftest internal error");
    return NULL;
  }
  PyObject* log = PyObject_GetAttrString(config, "_selftest_log");
  if (!log) return NULL;
  int r = PyList_Append(log, dynamic ? dynamic : Py_None);
  Py_DECREF(log);
  if (r < 0) return NULL;
  DynGuardSet* gs = dyn_guards_new();
  PyObject* inputs = PyList_New(0);
  PyObject* compiled = PyObject_GetAttrString(config, "_selftest");
  dyn_entry* e = NULL;
  if (!gs || !inputs || !compiled) goto done;
  for (Py_ssize_t i = 0; i < v->n_args; i++) {
    PyObject* a = v->locals[i];
    PyObject* nm = PyTuple_GetItem(v->code->co_localsplusnames, i);
    if (!a || !nm) goto done;
    DynSource* s = dyn_source_local(i, nm);
    if (!s) goto done;
    PyObject* key = dyn_source_repr(s);
    PyObject* dims = key && dynamic ? PyDict_GetItemWithError(dynamic, key) : NULL;
    Py_XDECREF(key);
    int rc = PyErr_Occurred() ? -1 : 0;
    if (!rc && strcmp(Py_TYPE(a)->tp_name, "Tensor") == 0) {
      rc = dyn_guards_add_tensor(gs, s, a, dims);
      if (!rc) rc = PyList_Append(inputs, (PyObject*)s);
    } else if (!rc)
      rc = dyn_guards_add(gs, DG_EQ, s, a, 0);
    Py_DECREF(s);
    if (rc < 0) goto done;
  }
  PyObject* tin = PyList_AsTuple(inputs);
  PyObject* eff = PyTuple_New(0);
  PyObject* plan = Py_BuildValue("(ii)", DP_OUT, 0);
  DynRunner* runner = tin && eff && plan ? dyn_runner_new(compiled, tin, eff, plan, 1, 0) : NULL;
  Py_XDECREF(tin);
  Py_XDECREF(eff);
  Py_XDECREF(plan);
  if (!runner) goto done;
  e = PyMem_Calloc(1, sizeof *e);
  if (!e) {
    Py_DECREF((PyObject*)runner);
    PyErr_NoMemory();
    goto done;
  }
  e->guards = (DynGuardSet*)Py_NewRef((PyObject*)gs);
  e->runner = runner;
  e->info = Py_BuildValue("{ss}", "graph", "selftest");
done:
  Py_XDECREF((PyObject*)gs);
  Py_XDECREF(inputs);
  Py_XDECREF(compiled);
  return e;
}
#endif
