/* py_exec.c - _C.compile and the Executable type: compiling a Graph with the
 * GIL released, running with torch tensors lent through DLPack (outputs
 * allocated by torch from ptc_executable_infer_outputs, or given by the
 * caller), accepts/check, and the compile report. Executables are immutable
 * and may be run from several threads at once (the GIL is released while
 * libptc runs). */
#include "ptcpy.h"

#include <string.h>

/* ---- compile ---------------------------------------------------------------------- */

PyObject* ptcpy_compile(PtcGraph* g, const char* backend, const char* mode,
                        const ptc_dynamic_dim* dyn, size_t n_dyn, const char* debug_dir,
                        int disable_fusion, const char* mm_prec, const char* conv_prec) {
  if (g->busy) {
    PyErr_SetString(PyExc_RuntimeError, "ptc Graph is already being compiled in another thread");
    return NULL;
  }
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = backend;
  o.mode = mode;
  o.debug_dir = debug_dir;
  o.dynamic_dims = dyn;
  o.n_dynamic_dims = n_dyn;
  o.disable_fusion = disable_fusion ? 1u : 0u;
  o.matmul_precision = mm_prec;
  o.conv_precision = conv_prec;
  ptc_executable* exe = NULL;
  ptc_status s;
  g->busy++;
  Py_BEGIN_ALLOW_THREADS
  s = ptc_compile(ptcpy_ctx, g->g, &o, &exe);
  Py_END_ALLOW_THREADS
  g->busy--;
  if (s) return ptcpy_raise(s);
  PtcExec* ex = PyObject_New(PtcExec, &PtcExec_Type);
  if (!ex) {
    ptc_executable_release(exe);
    return NULL;
  }
  ex->exe = exe;
  Py_INCREF(g->keep);
  ex->keep = g->keep;
  snprintf(ex->backend, sizeof ex->backend, "%s", backend ? backend : "ref");
  ex->device_type = ptcpy_backend_device(ex->backend);
  ex->n_in = ptc_executable_num_inputs(exe);
  ex->n_out = ptc_executable_num_outputs(exe);
  return (PyObject*)ex;
}

PyObject* ptcpy_compile_fn(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                           PyObject* kwnames) {
  static const char* const names[] = {"graph",     "backend",   "mode",
                                      "dynamic_dims", "debug_dir", "disable_fusion",
                                      "matmul_precision", "conv_precision"};
  PyObject* a[8];
  if (ptcpy_parse_args("compile", args, nargs, kwnames, names, 8, 1, a) < 0) return NULL;
  if (!PyObject_TypeCheck(a[0], &PtcGraph_Type))
    return PyErr_Format(PyExc_TypeError, "compile: graph must be a ptc Graph, not %.100s",
                        Py_TYPE(a[0])->tp_name);
  const char *backend = "cpu", *mode, *debug_dir, *mm_prec, *conv_prec;
  if (a[1] && ptcpy_opt_str(a[1], "compile: backend", &backend) < 0) return NULL;
  if (!backend) backend = "cpu";
  if (ptcpy_opt_str(a[2], "compile: mode", &mode) < 0 ||
      ptcpy_opt_str(a[4], "compile: debug_dir", &debug_dir) < 0 ||
      ptcpy_opt_str(a[6], "compile: matmul_precision", &mm_prec) < 0 ||
      ptcpy_opt_str(a[7], "compile: conv_precision", &conv_prec) < 0)
    return NULL;
  int disable = a[5] ? PyObject_IsTrue(a[5]) : 0;
  if (disable < 0) return NULL;
  ptc_dynamic_dim* dyn = NULL;
  Py_ssize_t n_dyn = 0;
  if (a[3] && a[3] != Py_None) {
    PyObject* seq = PySequence_Fast(a[3], "compile: dynamic_dims must be a sequence of (input, dim)");
    if (!seq) return NULL;
    n_dyn = PySequence_Fast_GET_SIZE(seq);
    dyn = PyMem_Calloc((size_t)n_dyn + 1, sizeof *dyn);
    int bad = dyn == NULL;
    if (bad) PyErr_NoMemory();
    for (Py_ssize_t i = 0; !bad && i < n_dyn; i++) {
      unsigned int in, dim;
      PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
      bad = !PyTuple_Check(item) || !PyArg_ParseTuple(item, "II", &in, &dim);
      if (bad && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "compile: dynamic_dims entries are (input, dim) tuples");
      if (!bad) {
        dyn[i].input = in;
        dyn[i].dim = dim;
      }
    }
    Py_DECREF(seq);
    if (bad) {
      PyMem_Free(dyn);
      return NULL;
    }
  }
  PyObject* r = ptcpy_compile((PtcGraph*)a[0], backend, mode, dyn, (size_t)n_dyn, debug_dir,
                              disable, mm_prec, conv_prec);
  PyMem_Free(dyn);
  return r;
}

/* ---- running ------------------------------------------------------------------------- */

int ptcpy_exec_import(PtcExec* ex, PyObject* seq, const char* role, ptcpy_in* ins) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < n; i++)
    if (ptcpy_in_import(PySequence_Fast_GET_ITEM(seq, i), (size_t)i, role, ex->device_type,
                        ex->backend, &ins[i]) < 0) {
      ptcpy_in_release(ins, (size_t)i);
      return -1;
    }
  return 0;
}

/* A cuda executable runs on torch's current stream of the device of its
 * first cuda tensor (device 0 when it has none), with deferred kernel-error
 * checks (an out-of-range index is reported by the executable's next call,
 * as PyTorch reports device-side asserts asynchronously; the call does not
 * wait for the GPU). 0, or -1 with an exception set. */
static int run_stream(const PtcExec* ex, const ptc_tensor* in, size_t n_in, const ptc_tensor* out,
                      size_t n_out, ptc_run_options* ro) {
  if (ex->device_type != PTC_DEVICE_CUDA) return 0;
  ro->deferred_errors = 1;
  int32_t dev = 0;
  for (size_t i = 0; i < n_in + n_out; i++) {
    const ptc_tensor* t = i < n_in ? &in[i] : &out[i - n_in];
    if (t->device.device_type == PTC_DEVICE_CUDA) {
      dev = t->device.device_id;
      break;
    }
  }
  return ptcpy_cuda_stream(dev, &ro->stream);
}

PyObject* ptcpy_exec_finish(PtcExec* ex, const ptcpy_in* ins, size_t n_in, ptc_tensor* outs,
                            int as_tuple, uint64_t seed) {
  size_t n_out = ex->n_out;
  PyObject* res = as_tuple ? PyTuple_New((Py_ssize_t)n_out) : PyList_New((Py_ssize_t)n_out);
  if (!res) return NULL;
  for (size_t i = 0; i < n_out; i++) {
    PyObject* t = ptcpy_alloc_output(&outs[i], &outs[i]);
    if (!t) {
      Py_DECREF(res);
      return NULL;
    }
    if (as_tuple) PyTuple_SET_ITEM(res, (Py_ssize_t)i, t);
    else PyList_SET_ITEM(res, (Py_ssize_t)i, t);
  }
  ptc_tensor small[PTCPY_SMALL];
  ptc_tensor* tin = n_in <= PTCPY_SMALL ? small : PyMem_Calloc(n_in, sizeof *tin);
  if (!tin) {
    Py_DECREF(res);
    return PyErr_NoMemory();
  }
  for (size_t i = 0; i < n_in; i++) tin[i] = ins[i].t;
  ptc_run_options ro;
  ptc_run_options_init(&ro);
  ro.seed = seed;
  if (run_stream(ex, tin, n_in, outs, n_out, &ro) < 0) {
    if (tin != small) PyMem_Free(tin);
    Py_DECREF(res);
    return NULL;
  }
  ptc_status s;
  Py_BEGIN_ALLOW_THREADS
  s = ptc_executable_run(ex->exe, tin, n_in, outs, n_out, &ro);
  Py_END_ALLOW_THREADS
  if (tin != small) PyMem_Free(tin);
  if (s) {
    Py_DECREF(res);
    return ptcpy_raise(s);
  }
  return res;
}

/* Scratch space of one call: lent inputs/outputs and output shape buffers. */
typedef struct call_buf {
  ptcpy_in small_in[PTCPY_SMALL], small_out[PTCPY_SMALL];
  ptc_tensor small_desc[PTCPY_SMALL];
  int64_t small_shapes[PTCPY_SMALL * PTC_MAX_RANK];
  ptcpy_in *ins, *outs;
  ptc_tensor* desc;
  int64_t* shapes;
} call_buf;

static int call_buf_init(call_buf* b, size_t n_in, size_t n_out) {
  b->ins = n_in <= PTCPY_SMALL ? b->small_in : PyMem_Calloc(n_in, sizeof *b->ins);
  b->outs = n_out <= PTCPY_SMALL ? b->small_out : PyMem_Calloc(n_out, sizeof *b->outs);
  b->desc = n_out <= PTCPY_SMALL ? b->small_desc : PyMem_Calloc(n_out, sizeof *b->desc);
  b->shapes = n_out <= PTCPY_SMALL ? b->small_shapes
                                   : PyMem_Calloc(n_out * PTC_MAX_RANK, sizeof *b->shapes);
  if (!b->ins || !b->outs || !b->desc || !b->shapes) {
    PyErr_NoMemory();
    return -1;
  }
  for (size_t i = 0; i < n_out; i++) {
    memset(&b->desc[i], 0, sizeof b->desc[i]);
    b->desc[i].shape = &b->shapes[i * PTC_MAX_RANK];
  }
  return 0;
}

static void call_buf_free(call_buf* b) {
  if (b->ins && b->ins != b->small_in) PyMem_Free(b->ins);
  if (b->outs && b->outs != b->small_out) PyMem_Free(b->outs);
  if (b->desc && b->desc != b->small_desc) PyMem_Free(b->desc);
  if (b->shapes && b->shapes != b->small_shapes) PyMem_Free(b->shapes);
}

/* Imports `inputs` and runs ptc_executable_infer_outputs; mode 0 = run,
 * 1 = accepts (returns Py_True/Py_False), 2 = check (None or raise). */
static PyObject* exec_call(PtcExec* self, PyObject* inputs, PyObject* outputs, uint64_t seed,
                           int mode) {
  if (ptcpy_torch_load() < 0) return NULL;
  if (ptcpy_is_tensor(inputs) || (outputs && ptcpy_is_tensor(outputs))) {
    PyErr_SetString(PyExc_TypeError,
                    "inputs/outputs must be sequences of tensors (a list), not a tensor");
    return NULL;
  }
  PyObject* seq = PySequence_Fast(inputs, "inputs must be a sequence of torch.Tensor");
  if (!seq) return NULL;
  PyObject* oseq = NULL;
  if (outputs && outputs != Py_None) {
    oseq = PySequence_Fast(outputs, "outputs must be a sequence of torch.Tensor");
    if (!oseq) {
      Py_DECREF(seq);
      return NULL;
    }
  }
  size_t n_in = (size_t)PySequence_Fast_GET_SIZE(seq);
  size_t n_out = oseq ? (size_t)PySequence_Fast_GET_SIZE(oseq) : self->n_out;
  call_buf b; /* only the pointers need a start value (call_buf_free) */
  b.ins = b.outs = NULL;
  b.desc = NULL;
  b.shapes = NULL;
  PyObject* res = NULL;
  if (call_buf_init(&b, n_in, n_out) < 0) goto done;
  if (ptcpy_exec_import(self, seq, "input", b.ins) < 0) {
    if (mode == 1 && PyErr_ExceptionMatches(ptcpy_Error)) {
      PyErr_Clear();
      res = Py_False;
      Py_INCREF(res);
    }
    goto done;
  }
  if (oseq) {
    if (ptcpy_exec_import(self, oseq, "output", b.outs) == 0) {
      ptc_tensor* tin = PyMem_Calloc(n_in + n_out + 1, sizeof *tin);
      if (!tin) {
        PyErr_NoMemory();
      } else {
        for (size_t i = 0; i < n_in; i++) tin[i] = b.ins[i].t;
        for (size_t i = 0; i < n_out; i++) tin[n_in + i] = b.outs[i].t;
        ptc_run_options ro;
        ptc_run_options_init(&ro);
        ro.seed = seed;
        ptc_status s = NULL;
        int bad = run_stream(self, tin, n_in, tin + n_in, n_out, &ro) < 0;
        if (!bad) {
          Py_BEGIN_ALLOW_THREADS
          s = ptc_executable_run(self->exe, tin, n_in, tin + n_in, n_out, &ro);
          Py_END_ALLOW_THREADS
        }
        PyMem_Free(tin);
        if (bad) {
        } else if (s) {
          ptcpy_raise(s);
        } else {
          res = PySequence_List(oseq);
        }
      }
      ptcpy_in_release(b.outs, n_out);
    }
    ptcpy_in_release(b.ins, n_in);
    goto done;
  }
  ptc_tensor small[PTCPY_SMALL];
  ptc_tensor* tin = n_in <= PTCPY_SMALL ? small : PyMem_Calloc(n_in + 1, sizeof *tin);
  if (!tin) {
    PyErr_NoMemory();
  } else {
    for (size_t i = 0; i < n_in; i++) tin[i] = b.ins[i].t;
    ptc_status s = ptc_executable_infer_outputs(self->exe, tin, n_in, b.desc, n_out);
    if (tin != small) PyMem_Free(tin);
    if (mode == 1) {
      res = s ? Py_False : Py_True;
      Py_INCREF(res);
      ptc_status_destroy(s);
    } else if (s) {
      ptcpy_raise(s);
    } else if (mode == 2) {
      res = Py_None;
      Py_INCREF(res);
    } else {
      res = ptcpy_exec_finish(self, b.ins, n_in, b.desc, 0, seed);
    }
  }
  ptcpy_in_release(b.ins, n_in);
done:
  call_buf_free(&b);
  Py_XDECREF(oseq);
  Py_DECREF(seq);
  return res;
}

static PyObject* exec_run(PtcExec* self, PyObject* const* args, Py_ssize_t nargs,
                          PyObject* kwnames) {
  static const char* const names[] = {"inputs", "outputs", "seed"};
  PyObject* a[3];
  if (ptcpy_parse_args("run", args, nargs, kwnames, names, 3, 1, a) < 0) return NULL;
  unsigned long long seed = 0;
  if (a[2]) {
    seed = PyLong_AsUnsignedLongLong(a[2]);
    if (seed == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
  }
  return exec_call(self, a[0], a[1], seed, 0);
}

static PyObject* exec_accepts(PtcExec* self, PyObject* inputs) {
  return exec_call(self, inputs, NULL, 0, 1);
}

static PyObject* exec_check(PtcExec* self, PyObject* inputs) {
  return exec_call(self, inputs, NULL, 0, 2);
}

static ptc_status exec_fmt(const void* e, char* buf, size_t cap, size_t* needed) {
  return ptc_executable_format((const ptc_executable*)e, buf, cap, needed);
}

static PyObject* exec_format(PtcExec* self, PyObject* unused) {
  return ptcpy_text_of(exec_fmt, self->exe);
}

static void exec_dealloc(PtcExec* self) {
  ptc_executable_release(self->exe);
  Py_XDECREF(self->keep);
  PyObject_Free(self);
}

static PyObject* exec_repr(PtcExec* self) {
  return PyUnicode_FromFormat("Executable(backend='%s', inputs=%zu, outputs=%zu, kernels=%zu)",
                              self->backend, self->n_in, self->n_out,
                              ptc_executable_num_kernels(self->exe));
}

static PyObject* exec_get_num_kernels(PtcExec* self, void* c) {
  return PyLong_FromSize_t(ptc_executable_num_kernels(self->exe));
}
static PyObject* exec_get_num_inputs(PtcExec* self, void* c) { return PyLong_FromSize_t(self->n_in); }
static PyObject* exec_get_num_outputs(PtcExec* self, void* c) {
  return PyLong_FromSize_t(self->n_out);
}
static PyObject* exec_get_backend(PtcExec* self, void* c) {
  return PyUnicode_FromString(self->backend);
}

static PyMethodDef exec_methods[] = {
    {"run", (PyCFunction)(void (*)(void))exec_run, METH_FASTCALL | METH_KEYWORDS,
     "run(inputs, outputs=None, seed=0) -> list[Tensor]. Tensors cross through DLPack\n"
     "(no copies); without outputs they are allocated with torch.empty and returned."},
    {"accepts", (PyCFunction)exec_accepts, METH_O,
     "accepts(inputs) -> bool: whether a run with these inputs passes the checks/guards."},
    {"check", (PyCFunction)exec_check, METH_O,
     "check(inputs) -> None: raises the Error a run with these inputs would raise."},
    {"format", (PyCFunction)exec_format, METH_NOARGS,
     "format() -> str: the compile report (kernels, fused nodes, sources)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef exec_getset[] = {
    {"num_kernels", (getter)exec_get_num_kernels, NULL, "kernels + extern calls", NULL},
    {"num_inputs", (getter)exec_get_num_inputs, NULL, "number of inputs", NULL},
    {"num_outputs", (getter)exec_get_num_outputs, NULL, "number of outputs", NULL},
    {"backend", (getter)exec_get_backend, NULL, "backend name", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject PtcExec_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ptc._C.Executable",
    .tp_basicsize = sizeof(PtcExec),
    .tp_dealloc = (destructor)exec_dealloc,
    .tp_repr = (reprfunc)exec_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled Graph (made by compile()); immutable, runnable from many threads.",
    .tp_methods = exec_methods,
    .tp_getset = exec_getset,
};

int ptcpy_exec_type_init(PyObject* m) {
  if (PyType_Ready(&PtcExec_Type) < 0) return -1;
  Py_INCREF(&PtcExec_Type);
  return PyModule_AddObject(m, "Executable", (PyObject*)&PtcExec_Type);
}
