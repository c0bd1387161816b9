/* py_compiled.c - the CompiledFunction type: a callable over torch tensors
 * that caches Executables built by a Python `build` callback. The cache is
 * checked in C: per input dtype, device, rank, requires_grad and stride
 * class, then ptc_executable_infer_outputs (static sizes and shape guards).
 * On a miss it recompiles, making dims dynamic automatically when only sizes
 * changed (or as asked by dynamic=True / mark_dynamic), up to max_recompiles
 * recompiles; past that, and when autograd needs gradients, it runs the
 * eager `fallback` with a one-time warning. strict=True (from_fx, the
 * torch.compile backend) recompiles for size/stride changes only: another
 * dtype/device/rank/requires_grad raises libptc's error from checking the
 * inputs against the newest executable.
 *
 * Thread-safety: calls may come from several threads; the GIL is released
 * while an executable runs or compiles, so an entry's Executable is kept
 * alive by a reference during its run, and the entry list is only touched
 * with the GIL held. */
#include "ptcpy.h"

#include <string.h>

enum { STRIDE_CONTIG = 0, STRIDE_EXACT = 1, STRIDE_ANY = 2 };

/* What an entry requires of one input. */
typedef struct in_key {
  uint32_t dl_dtype; /* ptc_dl_dtype packed (code | bits << 8 | lanes << 16) */
  int32_t dev_type, dev_id;
  int32_t ndim;
  int32_t requires_grad;
  int32_t stride_class;
  int64_t sizes[PTC_MAX_RANK];   /* sizes of the example inputs */
  int64_t strides[PTC_MAX_RANK]; /* STRIDE_EXACT: the strides */
} in_key;

typedef struct entry {
  PtcExec* exe;
  size_t n_in;
  in_key* keys;
} entry;

typedef struct PtcCompiled {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* build;
  PyObject* fallback; /* NULL when none */
  PyObject* name;     /* str */
  PyObject* backend;  /* str */
  PyObject* mode;     /* str or NULL */
  PyObject* debug_dir;
  PyObject* mm_prec;   /* str or NULL: matmul_precision */
  PyObject* conv_prec; /* str or NULL: conv_precision */
  int dynamic; /* -1 None (automatic), 0 False, 1 True */
  int strict;  /* recompile for size/stride changes only; other misses raise */
  long max_recompiles;
  entry* entries; /* oldest first; looked up newest first */
  size_t n_entries, cap_entries;
  long num_compiles;
  PyObject* reasons; /* list[str] */
  PyObject* dyn;     /* set of (input, dim) */
  int warned_cap, warned_grad;
  int32_t device_type;
} PtcCompiled;

static PyTypeObject PtcCompiled_Type;

static uint32_t pack_dtype(ptc_dl_dtype d) {
  return (uint32_t)d.code | ((uint32_t)d.bits << 8) | ((uint32_t)d.lanes << 16);
}

static void entry_clear(entry* e) {
  Py_CLEAR(e->exe);
  PyMem_Free(e->keys);
  e->keys = NULL;
}

static void clear_entries(PtcCompiled* self) {
  for (size_t i = 0; i < self->n_entries; i++) entry_clear(&self->entries[i]);
  self->n_entries = 0;
}

/* Output descriptors (with shape buffers) for ptc_executable_infer_outputs. */
typedef struct out_buf {
  ptc_tensor* desc;
  int64_t* shapes;
  size_t cap;
  ptc_tensor small_desc[PTCPY_SMALL];
  int64_t small_shapes[PTCPY_SMALL * PTC_MAX_RANK];
} out_buf;

static void out_buf_init(out_buf* b) {
  b->desc = b->small_desc;
  b->shapes = b->small_shapes;
  b->cap = PTCPY_SMALL;
  for (size_t i = 0; i < b->cap; i++) b->desc[i].shape = &b->shapes[i * PTC_MAX_RANK];
}

static void out_buf_free(out_buf* b) {
  if (b->desc != b->small_desc) PyMem_Free(b->desc);
  if (b->shapes != b->small_shapes) PyMem_Free(b->shapes);
}

/* Room for n outputs; 0, or -1 with MemoryError. */
static int out_buf_reserve(out_buf* b, size_t n) {
  if (n <= b->cap) return 0;
  ptc_tensor* d = PyMem_Calloc(n, sizeof *d);
  int64_t* sh = PyMem_Calloc(n * PTC_MAX_RANK, sizeof *sh);
  if (!d || !sh) {
    PyMem_Free(d);
    PyMem_Free(sh);
    PyErr_NoMemory();
    return -1;
  }
  out_buf_free(b);
  b->desc = d;
  b->shapes = sh;
  b->cap = n;
  for (size_t i = 0; i < n; i++) d[i].shape = &sh[i * PTC_MAX_RANK];
  return 0;
}

/* ---- cache lookup -------------------------------------------------------------------- */

/* Whether input `t` (requires_grad `rg`) matches `k` apart from sizes. */
static int key_matches(const in_key* k, const ptc_tensor* t, int rg) {
  if (k->dl_dtype != pack_dtype(t->dtype) || k->ndim != t->ndim || k->requires_grad != rg ||
      k->dev_type != t->device.device_type || k->dev_id != t->device.device_id)
    return 0;
  if (k->stride_class == STRIDE_CONTIG) return ptcpy_is_contiguous(t);
  if (k->stride_class == STRIDE_EXACT) {
    for (int32_t d = 0; d < t->ndim; d++) {
      int64_t s = t->strides ? t->strides[d] : 0;
      if (!t->strides) { /* contiguous: compute */
        s = 1;
        for (int32_t j = d + 1; j < t->ndim; j++) s *= t->shape[j];
      }
      if (s != k->strides[d]) return 0;
    }
  }
  return 1;
}

static int entry_matches(const entry* e, const ptcpy_in* ins, size_t n) {
  if (e->n_in != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (!key_matches(&e->keys[i], &ins[i].t, ins[i].requires_grad)) return 0;
  return 1;
}

/* ---- slow path helpers ------------------------------------------------------------------ */

static PyObject* as_tuple(PyObject* r) {
  if (!r || PyTuple_Check(r)) return r;
  PyObject* t = PyList_Check(r) ? PyList_AsTuple(r) : PyTuple_Pack(1, r);
  Py_DECREF(r);
  return t;
}

/* Runs the eager fallback, warning once (`*warned`) with `why`. */
static PyObject* run_fallback(PtcCompiled* self, PyObject* const* args, size_t nargs,
                              int* warned, PyObject* why) {
  if (!self->fallback) {
    ptcpy_raise_code("UNIMPLEMENTED", "ptc: cannot run '%U' compiled and it has no fallback: %U",
                     self->name, why);
    return NULL;
  }
  if (!*warned) {
    *warned = 1;
    if (PyErr_WarnFormat(PyExc_UserWarning, 1, "ptc: running '%U' eagerly (fallback): %U",
                         self->name, why) < 0)
      return NULL;
  }
  return as_tuple(PyObject_Vectorcall(self->fallback, args, nargs, NULL));
}

static const char* dtype_text(uint32_t packed) {
  ptc_dl_dtype d = {(uint8_t)(packed & 0xff), (uint8_t)((packed >> 8) & 0xff),
                    (uint16_t)(packed >> 16)};
  const char* s = ptc_dtype_name(ptc_dtype_from_dl(d));
  return s ? s : "?";
}

/* Why `e` does not take the inputs, as far as keys go; NULL when they match
 * apart from sizes (then the caller asks libptc). New reference or NULL (no
 * exception) for "matches". */
static PyObject* key_difference(const entry* e, const ptcpy_in* ins, size_t n) {
  if (e->n_in != n)
    return PyUnicode_FromFormat("number of inputs changed from %zu to %zu", e->n_in, n);
  for (size_t i = 0; i < n; i++) {
    const in_key* k = &e->keys[i];
    const ptc_tensor* t = &ins[i].t;
    if (k->dl_dtype != pack_dtype(t->dtype))
      return PyUnicode_FromFormat("input %zu: dtype changed from %s to %s", i,
                                  dtype_text(k->dl_dtype), dtype_text(pack_dtype(t->dtype)));
    if (k->dev_type != t->device.device_type || k->dev_id != t->device.device_id)
      return PyUnicode_FromFormat("input %zu: device changed", i);
    if (k->ndim != t->ndim)
      return PyUnicode_FromFormat("input %zu: rank changed from %d to %d", i, (int)k->ndim,
                                  (int)t->ndim);
    if (k->requires_grad != ins[i].requires_grad)
      return PyUnicode_FromFormat("input %zu: requires_grad changed to %s", i,
                                  ins[i].requires_grad ? "True" : "False");
  }
  return NULL;
}

static int stride_ok(const entry* e, const ptcpy_in* ins, size_t n, size_t* bad) {
  for (size_t i = 0; i < n; i++)
    if (!key_matches(&e->keys[i], &ins[i].t, ins[i].requires_grad)) {
      *bad = i;
      return 0;
    }
  return 1;
}

/* Adds (i, d) pairs of tensor attribute `attr` (a set/list of dims) to `dyn`. */
static int add_marked(PyObject* dyn, PyObject* tensor, PyObject* attr, size_t i, int32_t ndim) {
  PyObject* marks = PyObject_GetAttr(tensor, attr);
  if (!marks) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
    PyErr_Clear();
    return 0;
  }
  PyObject* it = PyObject_GetIter(marks);
  Py_DECREF(marks);
  if (!it) {
    PyErr_Clear(); /* not iterable: ignore */
    return 0;
  }
  PyObject* item;
  int rc = 0;
  while (rc == 0 && (item = PyIter_Next(it))) {
    long d = PyLong_AsLong(item);
    Py_DECREF(item);
    if (d == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      continue;
    }
    if (d < 0) d += ndim;
    if (d < 0 || d >= ndim) continue;
    PyObject* pair = Py_BuildValue("(nl)", (Py_ssize_t)i, d);
    rc = pair ? PySet_Add(dyn, pair) : -1;
    Py_XDECREF(pair);
  }
  Py_DECREF(it);
  return rc == 0 && PyErr_Occurred() ? -1 : rc;
}

/* Whether (i, d) is in set `s`. */
static int in_set(PyObject* s, size_t i, int32_t d) {
  PyObject* pair = Py_BuildValue("(ni)", (Py_ssize_t)i, (int)d);
  if (!pair) return -1;
  int r = PySet_Contains(s, pair);
  Py_DECREF(pair);
  return r;
}

/* ---- compiling a new entry ---------------------------------------------------------------- */

/* Builds, compiles and appends an entry for `ins` with dims `want` (set of
 * (i, d) of size >= 2) dynamic. Returns the new entry's index or -1. */
static Py_ssize_t add_entry(PtcCompiled* self, PyObject* const* args, const ptcpy_in* ins,
                            size_t n, PyObject* want) {
  PyObject* examples = PyList_New((Py_ssize_t)n);
  if (!examples) return -1;
  for (size_t i = 0; i < n; i++) {
    Py_INCREF(args[i]);
    PyList_SET_ITEM(examples, (Py_ssize_t)i, args[i]);
  }
  PyObject* fz = PyFrozenSet_New(want);
  PyObject* g = fz ? PyObject_CallFunctionObjArgs(self->build, examples, fz, NULL) : NULL;
  Py_DECREF(examples);
  Py_XDECREF(fz);
  if (!g) return -1;
  Py_ssize_t idx = -1;
  ptc_dynamic_dim* extra = NULL;
  in_key* keys = NULL;
  PyObject* exe = NULL;
  if (!PyObject_TypeCheck(g, &PtcGraph_Type)) {
    PyErr_Format(PyExc_TypeError, "ptc: build for '%U' returned %.100s, expected a ptc Graph",
                 self->name, Py_TYPE(g)->tp_name);
    goto done;
  }
  PtcGraph* graph = (PtcGraph*)g;
  /* Wanted dims the graph kept static are made dynamic by ptc_compile. */
  size_t n_extra = 0;
  extra = PyMem_Calloc((size_t)PySet_GET_SIZE(want) + 1, sizeof *extra);
  keys = PyMem_Calloc(n + 1, sizeof *keys);
  if (!extra || !keys) {
    PyErr_NoMemory();
    goto done;
  }
  size_t n_graph_in = ptc_graph_num_inputs(graph->g);
  for (size_t i = 0; i < n && i < n_graph_in; i++) {
    ptc_value_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ptc_status s = ptc_graph_value_info(graph->g, ptc_graph_input(graph->g, i), &info);
    if (s) {
      ptcpy_raise(s);
      goto done;
    }
    for (int32_t d = 0; d < ins[i].t.ndim && d < (int32_t)info.rank; d++) {
      int r = in_set(want, i, d);
      if (r < 0) goto done;
      if (r && info.shape[d].sym == 0) {
        extra[n_extra].input = (uint32_t)i;
        extra[n_extra].dim = (uint32_t)d;
        n_extra++;
      }
    }
  }
  const char* backend = PyUnicode_AsUTF8(self->backend);
  const char* mode = self->mode ? PyUnicode_AsUTF8(self->mode) : NULL;
  const char* debug_dir = self->debug_dir ? PyUnicode_AsUTF8(self->debug_dir) : NULL;
  const char* mm_prec = self->mm_prec ? PyUnicode_AsUTF8(self->mm_prec) : NULL;
  const char* conv_prec = self->conv_prec ? PyUnicode_AsUTF8(self->conv_prec) : NULL;
  exe = ptcpy_compile(graph, backend, mode, extra, n_extra, debug_dir, 0, mm_prec, conv_prec);
  if (!exe && n_extra && PyErr_ExceptionMatches(ptcpy_Error)) {
    /* the graph bakes a wanted size: keep those dims static */
    PyErr_Clear();
    n_extra = 0;
    exe = ptcpy_compile(graph, backend, mode, NULL, 0, debug_dir, 0, mm_prec, conv_prec);
  }
  if (!exe) goto done;
  /* Keys: inputs with a dynamic dim accept any strides (declared
   * contiguous, libptc copies others in). */
  for (size_t i = 0; i < n; i++) {
    const ptc_tensor* t = &ins[i].t;
    in_key* k = &keys[i];
    k->dl_dtype = pack_dtype(t->dtype);
    k->dev_type = t->device.device_type;
    k->dev_id = t->device.device_id;
    k->ndim = t->ndim;
    k->requires_grad = ins[i].requires_grad;
    int dynamic = 0;
    ptc_value_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (i < n_graph_in) {
      ptc_status s = ptc_graph_value_info(graph->g, ptc_graph_input(graph->g, i), &info);
      ptc_status_destroy(s);
      if (s) info.rank = 0;
    }
    for (int32_t d = 0; d < t->ndim; d++) {
      k->sizes[d] = t->shape[d];
      k->strides[d] = t->strides ? t->strides[d] : 0;
      if (d < (int32_t)info.rank && info.shape[d].sym != 0) dynamic = 1;
    }
    for (size_t j = 0; j < n_extra; j++) dynamic |= extra[j].input == i;
    k->stride_class = dynamic ? STRIDE_ANY : ptcpy_is_contiguous(t) ? STRIDE_CONTIG : STRIDE_EXACT;
    if (k->stride_class == STRIDE_EXACT && !t->strides) k->stride_class = STRIDE_CONTIG;
  }
  if (self->n_entries == self->cap_entries) {
    size_t cap = self->cap_entries ? 2 * self->cap_entries : 4;
    entry* grown = PyMem_Realloc(self->entries, cap * sizeof *grown);
    if (!grown) {
      PyErr_NoMemory();
      goto done;
    }
    self->entries = grown;
    self->cap_entries = cap;
  }
  entry* e = &self->entries[self->n_entries];
  e->exe = (PtcExec*)exe;
  e->n_in = n;
  e->keys = keys;
  exe = NULL;
  keys = NULL;
  idx = (Py_ssize_t)self->n_entries++;
  self->num_compiles++;
done:
  Py_XDECREF(exe);
  PyMem_Free(keys);
  PyMem_Free(extra);
  Py_DECREF(g);
  return idx;
}

/* Runs entry executable `ex` (kept alive across the GIL release). */
static PyObject* run_entry(PtcExec* ex, const ptcpy_in* ins, const ptc_tensor* tin, size_t n,
                           out_buf* ob, int* accepted) {
  *accepted = 0;
  if (out_buf_reserve(ob, ex->n_out) < 0) return NULL;
  ptc_tensor* desc = ob->desc;
  ptc_status s = ptc_executable_infer_outputs(ex->exe, tin, n, desc, ex->n_out);
  if (s) {
    ptc_status_destroy(s);
    return NULL;
  }
  *accepted = 1;
  Py_INCREF(ex);
  PyObject* r = ptcpy_exec_finish(ex, ins, n, desc, 1, 0);
  Py_DECREF(ex);
  return r;
}

/* The miss path: decide dynamic dims and the reason, then compile and run,
 * or fall back. */
static PyObject* miss(PtcCompiled* self, PyObject* const* args, const ptcpy_in* ins,
                      const ptc_tensor* tin, size_t n, out_buf* ob) {
  PyObject* reason = NULL;
  PyObject* want = NULL;
  PyObject* res = NULL;
  /* The newest entry that differs from the inputs only in sizes/strides. */
  const entry* near = NULL;
  for (size_t k = self->n_entries; k-- > 0 && !near;) {
    PyObject* diff = key_difference(&self->entries[k], ins, n);
    if (!diff && PyErr_Occurred()) return NULL;
    if (!diff) near = &self->entries[k];
    if (k == self->n_entries - 1) reason = diff; /* newest entry's reason */
    else Py_XDECREF(diff);
  }
  if (self->strict && self->n_entries && !near) {
    /* strict: a dtype/device/rank/requires_grad change is the caller's
     * error; libptc's own message when the newest executable rejects it. */
    const entry* last = &self->entries[self->n_entries - 1];
    if (last->n_in == n) {
      if (out_buf_reserve(ob, last->exe->n_out) < 0) {
        Py_XDECREF(reason);
        return NULL;
      }
      ptc_status s = ptc_executable_infer_outputs(last->exe->exe, tin, n, ob->desc,
                                                  last->exe->n_out);
      if (s) {
        Py_XDECREF(reason);
        return ptcpy_raise(s);
      }
    }
    ptcpy_raise_code("INVALID_ARGUMENT", "ptc: '%U': %U (strict: only sizes and strides may "
                     "change between calls)", self->name, reason);
    Py_XDECREF(reason);
    return NULL;
  }
  if (near) {
    Py_CLEAR(reason);
    size_t bad;
    if (!stride_ok(near, ins, n, &bad)) {
      reason = PyUnicode_FromFormat("input %zu: strides changed", bad);
    } else {
      if (out_buf_reserve(ob, near->exe->n_out) < 0) return NULL;
      ptc_status s =
          ptc_executable_infer_outputs(near->exe->exe, tin, n, ob->desc, near->exe->n_out);
      reason = PyUnicode_FromString(s ? ptc_status_message(s) : "guard failed");
      ptc_status_destroy(s);
    }
    if (!reason) return NULL;
  }
  if (self->n_entries && !reason && !(reason = PyUnicode_FromString("no entry matched")))
    return NULL;
  /* Recompile cap. */
  if (self->n_entries && self->num_compiles - 1 >= self->max_recompiles) {
    PyObject* why = PyUnicode_FromFormat(
        "hit the recompile limit (max_recompiles=%ld); last reason: %U", self->max_recompiles,
        reason);
    if (why) res = run_fallback(self, args, n, &self->warned_cap, why);
    Py_XDECREF(why);
    Py_DECREF(reason);
    return res;
  }
  /* Dims to make dynamic. */
  PyObject* newly = PyList_New(0);
  if (!newly) goto done;
  if (near && self->dynamic != 0) { /* automatic dynamic */
    for (size_t i = 0; i < n; i++)
      for (int32_t d = 0; d < ins[i].t.ndim; d++)
        if (near->keys[i].sizes[d] != ins[i].t.shape[d]) {
          PyObject* pair = Py_BuildValue("(ni)", (Py_ssize_t)i, (int)d);
          int had = pair ? PySet_Contains(self->dyn, pair) : -1;
          int rc = had < 0 ? -1 : had ? 0 : PySet_Add(self->dyn, pair);
          if (rc == 0 && !had) rc = PyList_Append(newly, pair);
          Py_XDECREF(pair);
          if (rc < 0) goto done;
        }
  }
  for (size_t i = 0; i < n; i++) {
    if (self->dynamic == 1)
      for (int32_t d = 0; d < ins[i].t.ndim; d++) {
        PyObject* pair = Py_BuildValue("(ni)", (Py_ssize_t)i, (int)d);
        int rc = pair ? PySet_Add(self->dyn, pair) : -1;
        Py_XDECREF(pair);
        if (rc < 0) goto done;
      }
    if (add_marked(self->dyn, args[i], ptcpy_s_ptc_dyn, i, ins[i].t.ndim) < 0 ||
        add_marked(self->dyn, args[i], ptcpy_s_dynamo_dyn, i, ins[i].t.ndim) < 0)
      goto done;
  }
  want = PySet_New(NULL);
  if (!want) goto done;
  for (size_t i = 0; i < n; i++)
    for (int32_t d = 0; d < ins[i].t.ndim; d++) {
      if (ins[i].t.shape[d] < 2) continue; /* sizes 0 and 1 stay static */
      PyObject* pair = Py_BuildValue("(ni)", (Py_ssize_t)i, (int)d);
      int r = pair ? PySet_Contains(self->dyn, pair) : -1;
      if (r > 0) r = PySet_Add(want, pair);
      Py_XDECREF(pair);
      if (r < 0) goto done;
    }
  if (reason) {
    PyObject* full = PyList_GET_SIZE(newly)
                         ? PyUnicode_FromFormat("%U (now dynamic: %R)", reason, newly)
                         : (Py_INCREF(reason), reason);
    if (!full || PyList_Append(self->reasons, full) < 0) {
      Py_XDECREF(full);
      goto done;
    }
    Py_DECREF(full);
  }
  Py_ssize_t idx = add_entry(self, args, ins, n, want);
  if (idx < 0) goto done;
  PtcExec* ex = self->entries[idx].exe;
  int accepted = 0;
  res = run_entry(ex, ins, tin, n, ob, &accepted);
  if (!accepted && !PyErr_Occurred()) { /* the new executable rejects its own inputs */
    ptc_status s = ptc_executable_infer_outputs(ex->exe, tin, n, ob->desc, ex->n_out);
    if (s) ptcpy_raise(s);
    else PyErr_Format(PyExc_RuntimeError, "ptc: '%U': new executable rejected its inputs",
                      self->name);
  }
done:
  Py_XDECREF(newly);
  Py_XDECREF(want);
  Py_XDECREF(reason);
  return res;
}

/* ---- __call__ --------------------------------------------------------------------------- */

static PyObject* compiled_call(PyObject* callable, PyObject* const* args, size_t nargsf,
                               PyObject* kwnames) {
  PtcCompiled* self = (PtcCompiled*)callable;
  size_t n = (size_t)PyVectorcall_NARGS(nargsf);
  if (kwnames && PyTuple_GET_SIZE(kwnames)) {
    PyErr_Format(PyExc_TypeError, "ptc: '%U' takes tensors as positional arguments only",
                 self->name);
    return NULL;
  }
  if (ptcpy_torch_load() < 0) return NULL;
  ptcpy_in small_in[PTCPY_SMALL];
  ptc_tensor small_t[PTCPY_SMALL];
  out_buf ob;
  out_buf_init(&ob);
  ptcpy_in* ins = n <= PTCPY_SMALL ? small_in : PyMem_Calloc(n, sizeof *ins);
  ptc_tensor* tin = n <= PTCPY_SMALL ? small_t : PyMem_Calloc(n, sizeof *tin);
  PyObject* res = NULL;
  size_t imported = 0;
  if (!ins || !tin) {
    PyErr_NoMemory();
    goto done;
  }
  const char* backend = PyUnicode_AsUTF8(self->backend);
  for (; imported < n; imported++)
    if (ptcpy_in_import(args[imported], imported, "input", self->device_type, backend,
                        &ins[imported]) < 0)
      goto done;
  int any_rg = 0;
  for (size_t i = 0; i < n; i++) {
    tin[i] = ins[i].t;
    any_rg |= ins[i].requires_grad;
  }
  if (any_rg) {
    PyObject* en = PyObject_CallNoArgs(ptcpy_torch.is_grad_enabled);
    if (!en) goto done;
    int grad = en == Py_True;
    Py_DECREF(en);
    if (grad) {
      PyObject* why = PyUnicode_FromString(
          "an input requires grad and grad mode is on (ptc computes no gradients)");
      if (why) res = run_fallback(self, args, n, &self->warned_grad, why);
      Py_XDECREF(why);
      goto done;
    }
  }
  for (size_t k = self->n_entries; k-- > 0;) {
    if (k >= self->n_entries) continue; /* reset() by another thread */
    entry* e = &self->entries[k];
    if (!entry_matches(e, ins, n)) continue;
    int accepted = 0;
    res = run_entry(e->exe, ins, tin, n, &ob, &accepted);
    if (accepted || PyErr_Occurred()) goto done;
  }
  res = miss(self, args, ins, tin, n, &ob);
done:
  ptcpy_in_release(ins, imported);
  if (ins && ins != small_in) PyMem_Free(ins);
  if (tin && tin != small_t) PyMem_Free(tin);
  out_buf_free(&ob);
  return res;
}

/* ---- type ----------------------------------------------------------------------------- */

static PyObject* compiled_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static char* kw[] = {"build",    "backend",  "mode",           "debug_dir", "dynamic",
                       "max_recompiles", "fallback", "name", "strict", "matmul_precision",
                       "conv_precision", NULL};
  PyObject *build, *backend = NULL, *mode = Py_None, *debug_dir = Py_None, *dynamic = Py_None,
                   *fallback = Py_None, *name = NULL, *mm_prec = Py_None, *conv_prec = Py_None;
  long max_recompiles = 8;
  int strict = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOOOlOOpOO:CompiledFunction", kw,
                                   &build, &backend, &mode, &debug_dir, &dynamic,
                                   &max_recompiles, &fallback, &name, &strict, &mm_prec,
                                   &conv_prec))
    return NULL;
  if (!PyCallable_Check(build))
    return PyErr_Format(PyExc_TypeError, "CompiledFunction: build must be callable");
  if (fallback != Py_None && !PyCallable_Check(fallback))
    return PyErr_Format(PyExc_TypeError, "CompiledFunction: fallback must be callable or None");
  const char* tmp;
  if ((backend && backend != Py_None && !PyUnicode_Check(backend)) ||
      ptcpy_opt_str(mode, "CompiledFunction: mode", &tmp) < 0 ||
      ptcpy_opt_str(debug_dir, "CompiledFunction: debug_dir", &tmp) < 0 ||
      ptcpy_opt_str(mm_prec, "CompiledFunction: matmul_precision", &tmp) < 0 ||
      ptcpy_opt_str(conv_prec, "CompiledFunction: conv_precision", &tmp) < 0 ||
      (name && name != Py_None && !PyUnicode_Check(name))) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_TypeError, "CompiledFunction: backend and name must be str");
    return NULL;
  }
  if (dynamic != Py_None && !PyBool_Check(dynamic))
    return PyErr_Format(PyExc_TypeError, "CompiledFunction: dynamic must be True, False or None");
  if (max_recompiles < 0)
    return PyErr_Format(PyExc_ValueError, "CompiledFunction: max_recompiles must be >= 0");
  PtcCompiled* self = (PtcCompiled*)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->vectorcall = compiled_call;
  Py_INCREF(build);
  self->build = build;
  if (fallback != Py_None) {
    Py_INCREF(fallback);
    self->fallback = fallback;
  }
  self->name = name && name != Py_None ? (Py_INCREF(name), name) : PyUnicode_FromString("fn");
  self->backend = backend && backend != Py_None ? (Py_INCREF(backend), backend)
                                                : PyUnicode_FromString("cpu");
  if (mode != Py_None) {
    Py_INCREF(mode);
    self->mode = mode;
  }
  if (debug_dir != Py_None) {
    Py_INCREF(debug_dir);
    self->debug_dir = debug_dir;
  }
  if (mm_prec != Py_None) self->mm_prec = (Py_INCREF(mm_prec), mm_prec);
  if (conv_prec != Py_None) self->conv_prec = (Py_INCREF(conv_prec), conv_prec);
  self->dynamic = dynamic == Py_None ? -1 : dynamic == Py_True;
  self->max_recompiles = max_recompiles;
  self->strict = strict;
  self->reasons = PyList_New(0);
  self->dyn = PySet_New(NULL);
  if (!self->name || !self->backend || !self->reasons || !self->dyn) {
    Py_DECREF(self);
    return NULL;
  }
  self->device_type = ptcpy_backend_device(PyUnicode_AsUTF8(self->backend));
  return (PyObject*)self;
}

static int compiled_traverse(PtcCompiled* self, visitproc visit, void* arg) {
  Py_VISIT(self->build);
  Py_VISIT(self->fallback);
  Py_VISIT(self->reasons);
  Py_VISIT(self->dyn);
  return 0;
}

static int compiled_clear(PtcCompiled* self) {
  Py_CLEAR(self->build);
  Py_CLEAR(self->fallback);
  Py_CLEAR(self->reasons);
  Py_CLEAR(self->dyn);
  return 0;
}

static void compiled_dealloc(PtcCompiled* self) {
  PyObject_GC_UnTrack(self);
  compiled_clear(self);
  clear_entries(self);
  PyMem_Free(self->entries);
  Py_CLEAR(self->name);
  Py_CLEAR(self->backend);
  Py_CLEAR(self->mode);
  Py_CLEAR(self->debug_dir);
  Py_CLEAR(self->mm_prec);
  Py_CLEAR(self->conv_prec);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* compiled_reset(PtcCompiled* self, PyObject* unused) {
  clear_entries(self);
  self->num_compiles = 0;
  self->warned_cap = self->warned_grad = 0;
  if (self->reasons && PyList_SetSlice(self->reasons, 0, PyList_GET_SIZE(self->reasons), NULL) < 0)
    return NULL;
  if (self->dyn && PySet_Clear(self->dyn) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* compiled_repr(PtcCompiled* self) {
  return PyUnicode_FromFormat("CompiledFunction(%R, backend=%R, entries=%zu, compiles=%ld)",
                              self->name, self->backend, self->n_entries, self->num_compiles);
}

static PyObject* get_num_compiles(PtcCompiled* self, void* c) {
  return PyLong_FromLong(self->num_compiles);
}
static PyObject* get_num_entries(PtcCompiled* self, void* c) {
  return PyLong_FromSize_t(self->n_entries);
}
static PyObject* get_reasons(PtcCompiled* self, void* c) {
  return self->reasons ? PyList_GetSlice(self->reasons, 0, PyList_GET_SIZE(self->reasons))
                       : PyList_New(0);
}
static PyObject* get_dynamic_dims(PtcCompiled* self, void* c) { return PyFrozenSet_New(self->dyn); }
static PyObject* get_executables(PtcCompiled* self, void* c) {
  PyObject* list = PyList_New((Py_ssize_t)self->n_entries);
  for (size_t i = 0; list && i < self->n_entries; i++) {
    Py_INCREF(self->entries[i].exe);
    PyList_SET_ITEM(list, (Py_ssize_t)i, (PyObject*)self->entries[i].exe);
  }
  return list;
}
static PyObject* get_name(PtcCompiled* self, void* c) {
  Py_INCREF(self->name);
  return self->name;
}
static PyObject* get_backend(PtcCompiled* self, void* c) {
  Py_INCREF(self->backend);
  return self->backend;
}
static PyObject* get_max_recompiles(PtcCompiled* self, void* c) {
  return PyLong_FromLong(self->max_recompiles);
}

static PyMethodDef compiled_methods[] = {
    {"reset", (PyCFunction)compiled_reset, METH_NOARGS,
     "reset(): drops every cached executable, reason, dynamic dim and warning state."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef compiled_getset[] = {
    {"num_compiles", (getter)get_num_compiles, NULL, "compiles so far (first + recompiles)", NULL},
    {"num_entries", (getter)get_num_entries, NULL, "cached executables", NULL},
    {"recompile_reasons", (getter)get_reasons, NULL, "list[str], one per recompile", NULL},
    {"dynamic_dims", (getter)get_dynamic_dims, NULL, "frozenset of (input, dim) made dynamic",
     NULL},
    {"executables", (getter)get_executables, NULL, "list[Executable] in compile order", NULL},
    {"name", (getter)get_name, NULL, "function name used in warnings", NULL},
    {"backend", (getter)get_backend, NULL, "backend name", NULL},
    {"max_recompiles", (getter)get_max_recompiles, NULL, "recompile cap", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject PtcCompiled_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ptc._C.CompiledFunction",
    .tp_basicsize = sizeof(PtcCompiled),
    .tp_dealloc = (destructor)compiled_dealloc,
    .tp_vectorcall_offset = offsetof(PtcCompiled, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)compiled_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc =
        "CompiledFunction(build, *, backend='cpu', mode=None, debug_dir=None, dynamic=None,\n"
        "                 max_recompiles=8, fallback=None, name='fn', strict=False,\n"
        "                 matmul_precision=None, conv_precision=None)\n"
        "Callable over tensors caching executables made from build(example_inputs,\n"
        "dynamic_dims) -> Graph; guards checked in C; automatic dynamic; eager fallback.\n"
        "strict=True: only size/stride changes recompile; other changes raise Error.",
    .tp_traverse = (traverseproc)compiled_traverse,
    .tp_clear = (inquiry)compiled_clear,
    .tp_methods = compiled_methods,
    .tp_getset = compiled_getset,
    .tp_new = compiled_new,
};

int ptcpy_compiled_type_init(PyObject* m) {
  if (PyType_Ready(&PtcCompiled_Type) < 0) return -1;
  Py_INCREF(&PtcCompiled_Type);
  return PyModule_AddObject(m, "CompiledFunction", (PyObject*)&PtcCompiled_Type);
}
