/* py_tensor.c - torch <-> libptc tensor exchange: the lazily imported torch
 * objects, dtype conversions, lending torch tensors to libptc through DLPack
 * capsules (no copies; the capsule keeps the memory alive during a run) and
 * allocating outputs with torch.empty.
 *
 * Inputs cross as the DLTensor of a "dltensor" capsule made by torch's C
 * exporter (torch.utils.dlpack.to_dlpack, the function behind
 * Tensor.__dlpack__), copied into a ptc_tensor (the same layout). The capsule
 * is never renamed: dropping it runs torch's destructor, which frees the
 * descriptor. Torch versions that cannot export bool (1.13) lend a bool
 * tensor as its zero-copy uint8 view with the dtype set back to bool on the
 * ptc side. */
#include "ptcpy.h"

#include <string.h>

ptcpy_torch_cache ptcpy_torch;
PyObject *ptcpy_s_dlpack, *ptcpy_s_data_ptr, *ptcpy_s_detach, *ptcpy_s_view,
    *ptcpy_s_contiguous, *ptcpy_s_device, *ptcpy_s_dtype, *ptcpy_s_requires_grad, *ptcpy_s_type,
    *ptcpy_s_ptc_dyn, *ptcpy_s_dynamo_dyn, *ptcpy_s_is_cpu, *ptcpy_s_is_cuda;
static PyObject* to_dlpack; /* torch.utils.dlpack.to_dlpack or NULL (use __dlpack__) */

int ptcpy_tensor_init(void) {
  struct {
    PyObject** slot;
    const char* text;
  } names[] = {{&ptcpy_s_dlpack, "__dlpack__"},
               {&ptcpy_s_data_ptr, "data_ptr"},
               {&ptcpy_s_detach, "detach"},
               {&ptcpy_s_view, "view"},
               {&ptcpy_s_contiguous, "contiguous"},
               {&ptcpy_s_device, "device"},
               {&ptcpy_s_dtype, "dtype"},
               {&ptcpy_s_requires_grad, "requires_grad"},
               {&ptcpy_s_type, "type"},
               {&ptcpy_s_ptc_dyn, "_ptc_dynamic_dims"},
               {&ptcpy_s_dynamo_dyn, "_dynamo_dynamic_indices"},
               {&ptcpy_s_is_cpu, "is_cpu"},
               {&ptcpy_s_is_cuda, "is_cuda"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!*names[i].slot && !(*names[i].slot = PyUnicode_InternFromString(names[i].text)))
      return -1;
  return 0;
}

/* torch names of the ptc dtypes, in ptc_dtype order. */
static const char* const torch_dtype_names[PTC_DTYPE_COUNT] = {
    "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"};

int ptcpy_torch_load(void) {
  if (ptcpy_torch.torch) return 0;
  ptcpy_torch_cache c;
  memset(&c, 0, sizeof c);
  c.torch = PyImport_ImportModule("torch");
  if (!c.torch) return -1;
  c.tensor_type = PyObject_GetAttrString(c.torch, "Tensor");
  c.dtype_type = c.tensor_type ? PyObject_GetAttrString(c.torch, "dtype") : NULL;
  c.empty = c.dtype_type ? PyObject_GetAttrString(c.torch, "empty") : NULL;
  c.is_grad_enabled = c.empty ? PyObject_GetAttrString(c.torch, "is_grad_enabled") : NULL;
  int ok = c.is_grad_enabled != NULL;
  for (int i = 0; ok && i < PTC_DTYPE_COUNT; i++)
    ok = (c.dtypes[i] = PyObject_GetAttrString(c.torch, torch_dtype_names[i])) != NULL;
  if (ok) ok = (c.kw_dtype = Py_BuildValue("(s)", "dtype")) != NULL;
  if (ok) ok = (c.kw_dtype_device = Py_BuildValue("(ss)", "dtype", "device")) != NULL;
  if (!ok) {
    Py_XDECREF(c.torch);
    Py_XDECREF(c.tensor_type);
    Py_XDECREF(c.dtype_type);
    Py_XDECREF(c.empty);
    Py_XDECREF(c.is_grad_enabled);
    for (int i = 0; i < PTC_DTYPE_COUNT; i++) Py_XDECREF(c.dtypes[i]);
    Py_XDECREF(c.kw_dtype);
    Py_XDECREF(c.kw_dtype_device);
    return -1;
  }
  /* The C exporter behind Tensor.__dlpack__ (skips a Python frame). */
  PyObject* mod = PyImport_ImportModule("torch.utils.dlpack");
  PyObject* fn = mod ? PyObject_GetAttrString(mod, "to_dlpack") : NULL;
  Py_XDECREF(mod);
  if (fn && PyCFunction_Check(fn)) {
    to_dlpack = fn;
  } else {
    Py_XDECREF(fn);
    to_dlpack = NULL;
  }
  PyErr_Clear();
  /* Does this torch export bool through DLPack (torch >= 2)? */
  c.bool_dlpack = 0;
  PyObject* shape = Py_BuildValue("(i)", 1);
  if (shape) {
    PyObject* args[2] = {shape, c.dtypes[PTC_BOOL]};
    PyObject* t = PyObject_Vectorcall(c.empty, args, 1, c.kw_dtype);
    if (t) {
      PyObject* cap = PyObject_CallMethodNoArgs(t, ptcpy_s_dlpack);
      c.bool_dlpack = cap != NULL;
      Py_XDECREF(cap);
      Py_DECREF(t);
    }
    Py_DECREF(shape);
  }
  PyErr_Clear();
  ptcpy_torch = c;
  return 0;
}

int ptcpy_is_tensor(PyObject* o) {
  return Py_TYPE(o) == (PyTypeObject*)ptcpy_torch.tensor_type ||
         PyObject_TypeCheck(o, (PyTypeObject*)ptcpy_torch.tensor_type);
}

int32_t ptcpy_dtype_from_obj(PyObject* o) {
  if (PyUnicode_Check(o)) {
    const char* s = PyUnicode_AsUTF8(o);
    if (!s) return -1;
    int32_t d = ptc_dtype_from_name(s);
    if (d < 0)
      PyErr_Format(PyExc_ValueError,
                   "unknown dtype name '%s' (ptc dtypes: f16 bf16 f32 f64 i8 i16 i32 i64 u8 bool)",
                   s);
    return d;
  }
  if (strcmp(Py_TYPE(o)->tp_name, "torch.dtype") == 0) {
    if (ptcpy_torch_load() < 0) return -1;
    for (int32_t i = 0; i < PTC_DTYPE_COUNT; i++)
      if (o == ptcpy_torch.dtypes[i]) return i;
    PyErr_Format(PyExc_ValueError,
                 "%R has no ptc dtype (supported: float16 bfloat16 float32 float64 int8 int16 "
                 "int32 int64 uint8 bool)",
                 o);
    return -1;
  }
  PyErr_Format(PyExc_TypeError, "dtype must be a torch.dtype or a dtype name, not %.100s",
               Py_TYPE(o)->tp_name);
  return -1;
}

PyObject* ptcpy_dtype_to_torch(int32_t dtype) {
  if (ptcpy_torch_load() < 0) return NULL;
  if (dtype < 0 || dtype >= PTC_DTYPE_COUNT) {
    PyErr_Format(PyExc_ValueError, "invalid ptc dtype %d", (int)dtype);
    return NULL;
  }
  return ptcpy_torch.dtypes[dtype];
}

int ptcpy_cuda_stream(int32_t device_id, void** out) {
  /* torch._C._cuda_getCurrentRawStream(index) -> int (no Stream object is
   * made); torch.cuda.current_stream(index).cuda_stream where it is absent */
  static PyObject* raw_fn;
  static int looked_up;
  *out = NULL;
  if (!looked_up) {
    looked_up = 1;
    PyObject* C = PyObject_GetAttrString(ptcpy_torch.torch, "_C");
    raw_fn = C ? PyObject_GetAttrString(C, "_cuda_getCurrentRawStream") : NULL;
    Py_XDECREF(C);
    if (!raw_fn) PyErr_Clear();
  }
  PyObject* dev = PyLong_FromLong((long)device_id);
  if (!dev) return -1;
  PyObject* r = NULL;
  if (raw_fn) {
    r = PyObject_CallOneArg(raw_fn, dev);
  } else {
    PyObject* cuda = PyImport_ImportModule("torch.cuda");
    PyObject* st = cuda ? PyObject_CallMethod(cuda, "current_stream", "O", dev) : NULL;
    r = st ? PyObject_GetAttrString(st, "cuda_stream") : NULL;
    Py_XDECREF(st);
    Py_XDECREF(cuda);
  }
  Py_DECREF(dev);
  if (!r) return -1;
  void* p = PyLong_AsVoidPtr(r);
  Py_DECREF(r);
  if (!p && PyErr_Occurred()) return -1;
  *out = p;
  return 0;
}

int32_t ptcpy_backend_device(const char* backend) {
  return backend && strncmp(backend, "cuda", 4) == 0 ? PTC_DEVICE_CUDA : PTC_DEVICE_CPU;
}

static const char* device_type_name(int32_t t) {
  return t == PTC_DEVICE_CPU ? "cpu" : t == PTC_DEVICE_CUDA ? "cuda" : "another device";
}

#define EM_DASH "\xe2\x80\x94" /* UTF-8, passed through %s */

/* _C.Error UNIMPLEMENTED for a tensor on a device the backend does not serve. */
static int device_error(PyObject* obj, size_t index, const char* role, int32_t device_type,
                        const char* backend) {
  PyObject* dev = PyObject_GetAttr(obj, ptcpy_s_device);
  PyObject* s = dev ? PyObject_Str(dev) : NULL;
  Py_XDECREF(dev);
  if (!s) return -1;
  if (!backend)
    ptcpy_raise_code("UNIMPLEMENTED", "%s: tensor on %U %s graph constants must be cpu tensors", role,
                     s, EM_DASH);
  else
    ptcpy_raise_code("UNIMPLEMENTED", "%s %zu: tensor on %U %s ptc backend '%s' runs on %s tensors", role,
                     index, s, EM_DASH, backend, device_type_name(device_type));
  Py_DECREF(s);
  return -1;
}

/* The DLPack capsule of `obj`, NULL with an exception set. */
static PyObject* export_capsule(PyObject* obj) {
  if (to_dlpack) return PyObject_Vectorcall(to_dlpack, &obj, 1, NULL);
  return PyObject_VectorcallMethod(ptcpy_s_dlpack, &obj, 1, NULL);
}

/* Clears the current exception and returns its str() (new reference), or
 * NULL with an exception set. */
static PyObject* take_error_text(void) {
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* exc = PyErr_GetRaisedException();
  PyObject* msg = exc ? PyObject_Str(exc) : NULL;
  Py_XDECREF(exc);
#else
  PyObject *etype, *evalue, *etb;
  PyErr_Fetch(&etype, &evalue, &etb);
  PyErr_NormalizeException(&etype, &evalue, &etb);
  PyObject* msg = evalue ? PyObject_Str(evalue) : NULL;
  Py_XDECREF(etype);
  Py_XDECREF(evalue);
  Py_XDECREF(etb);
#endif
  if (!msg && !PyErr_Occurred()) msg = PyUnicode_FromString("unknown error");
  return msg;
}

/* Whether tensor `obj` is on device type `want` (Tensor.is_cpu / is_cuda).
 * Checked before exporting: torch's exporter leaks its descriptor (and a
 * reference to the tensor) when it throws for an unsupported device or
 * dtype, so nothing known to fail is handed to it. */
static int on_device(PyObject* obj, int32_t want, int* result) {
  PyObject* flag = PyObject_GetAttr(obj, want == PTC_DEVICE_CUDA ? ptcpy_s_is_cuda : ptcpy_s_is_cpu);
  if (!flag) return -1;
  *result = flag == Py_True;
  Py_DECREF(flag);
  return 0;
}

int ptcpy_in_import(PyObject* obj, size_t index, const char* role, int32_t device_type,
                    const char* backend, ptcpy_in* out) {
  out->capsule = NULL;
  out->requires_grad = 0;
  if (!ptcpy_is_tensor(obj)) {
    PyErr_Format(PyExc_TypeError, "%s %zu: expected a torch.Tensor, got %.100s", role, index,
                 Py_TYPE(obj)->tp_name);
    return -1;
  }
  PyObject* rg = PyObject_GetAttr(obj, ptcpy_s_requires_grad);
  if (!rg) return -1;
  out->requires_grad = rg == Py_True;
  Py_DECREF(rg);
  int same = 0;
  if (on_device(obj, device_type, &same) < 0) return -1;
  if (!same) return device_error(obj, index, role, device_type, backend);
  int32_t override = -1;
  PyObject* view = NULL; /* what is exported when not `obj` itself */
  if (!ptcpy_torch.bool_dlpack) {
    PyObject* dt = PyObject_GetAttr(obj, ptcpy_s_dtype);
    if (!dt) return -1;
    if (dt == ptcpy_torch.dtypes[PTC_BOOL]) { /* zero-copy uint8 view, bool on the ptc side */
      PyObject* args[2] = {obj, ptcpy_torch.dtypes[PTC_U8]};
      view = PyObject_VectorcallMethod(ptcpy_s_view, args, 2, NULL);
      override = PTC_BOOL;
    }
    Py_DECREF(dt);
    if (override >= 0 && !view) return -1;
  }
  if (!to_dlpack && out->requires_grad) { /* Tensor.__dlpack__ refuses tensors needing grad */
    PyObject* src = view ? view : obj;
    PyObject* det = PyObject_CallMethodNoArgs(src, ptcpy_s_detach);
    Py_XDECREF(view);
    if (!det) return -1;
    view = det;
  }
  PyObject* cap = export_capsule(view ? view : obj);
  if (!cap && out->requires_grad && PyErr_ExceptionMatches(PyExc_RuntimeError)) {
    /* an exporter that refuses tensors needing grad: lend a detached view */
    PyErr_Clear();
    PyObject* det = PyObject_CallMethodNoArgs(view ? view : obj, ptcpy_s_detach);
    cap = det ? export_capsule(det) : NULL;
    Py_XDECREF(det);
  }
  Py_XDECREF(view);
  if (!cap) {
    PyObject* msg = take_error_text();
    if (!msg) return -1;
    ptcpy_raise_code("INVALID_ARGUMENT", "%s %zu: cannot lend this tensor through DLPack: %U",
                     role, index, msg);
    Py_DECREF(msg);
    return -1;
  }
  const ptc_tensor* dl = PyCapsule_GetPointer(cap, "dltensor");
  if (!dl) {
    Py_DECREF(cap);
    return -1;
  }
  out->t = *dl;
  out->capsule = cap;
  if (override >= 0) out->t.dtype = ptc_dtype_to_dl(override);
  if (out->t.device.device_type != device_type) {
    ptcpy_in_release(out, 1);
    return device_error(obj, index, role, device_type, backend);
  }
  return 0;
}

void ptcpy_in_release(ptcpy_in* in, size_t n) {
  for (size_t i = 0; i < n; i++) Py_CLEAR(in[i].capsule);
}

int ptcpy_is_contiguous(const ptc_tensor* t) {
  if (!t->strides) return 1;
  int64_t expect = 1;
  for (int32_t d = t->ndim - 1; d >= 0; d--) {
    if (t->shape[d] == 0) return 1;
    if (t->shape[d] != 1 && t->strides[d] != expect) return 0;
    expect *= t->shape[d];
  }
  return 1;
}

PyObject* ptcpy_alloc_output(const ptc_tensor* desc, ptc_tensor* t) {
  int32_t dt = ptc_dtype_from_dl(desc->dtype);
  if (dt < 0 || ptcpy_torch_load() < 0) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "ptc: output of unknown dtype");
    return NULL;
  }
  PyObject* shape = PyTuple_New(desc->ndim);
  if (!shape) return NULL;
  for (int32_t d = 0; d < desc->ndim; d++) {
    PyObject* v = PyLong_FromLongLong(desc->shape[d]);
    if (!v) {
      Py_DECREF(shape);
      return NULL;
    }
    PyTuple_SET_ITEM(shape, d, v);
  }
  PyObject* out;
  if (desc->device.device_type == PTC_DEVICE_CUDA) { /* torch.empty(..., device="cuda:N") */
    PyObject* dev = PyUnicode_FromFormat("cuda:%d", (int)desc->device.device_id);
    PyObject* args[3] = {shape, ptcpy_torch.dtypes[dt], dev};
    out = dev ? PyObject_Vectorcall(ptcpy_torch.empty, args, 1, ptcpy_torch.kw_dtype_device)
              : NULL;
    Py_XDECREF(dev);
  } else {
    PyObject* args[2] = {shape, ptcpy_torch.dtypes[dt]};
    out = PyObject_Vectorcall(ptcpy_torch.empty, args, 1, ptcpy_torch.kw_dtype);
  }
  Py_DECREF(shape);
  if (!out) return NULL;
  PyObject* ptr = PyObject_CallMethodNoArgs(out, ptcpy_s_data_ptr);
  if (!ptr) {
    Py_DECREF(out);
    return NULL;
  }
  *t = *desc;
  t->data = PyLong_AsVoidPtr(ptr);
  Py_DECREF(ptr);
  t->strides = NULL;
  t->byte_offset = 0;
  if (t->device.device_type != PTC_DEVICE_CUDA) {
    t->device.device_type = PTC_DEVICE_CPU;
    t->device.device_id = 0;
  }
  return out;
}

PyObject* ptcpy_describe(PyObject* self, PyObject* obj) {
  if (ptcpy_torch_load() < 0) return NULL;
  ptcpy_in in;
  if (ptcpy_in_import(obj, 0, "tensor", PTC_DEVICE_CPU, "cpu", &in) < 0) return NULL;
  PyObject* shape = PyTuple_New(in.t.ndim);
  PyObject* strides = in.t.strides ? PyTuple_New(in.t.ndim) : (Py_INCREF(Py_None), Py_None);
  for (int32_t d = 0; shape && strides && d < in.t.ndim; d++) {
    PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(in.t.shape[d]));
    if (in.t.strides) PyTuple_SET_ITEM(strides, d, PyLong_FromLongLong(in.t.strides[d]));
  }
  const char* dt = ptc_dtype_name(ptc_dtype_from_dl(in.t.dtype));
  PyObject* r = shape && strides && !PyErr_Occurred()
                    ? Py_BuildValue("{s:K,s:K,s:O,s:O,s:s,s:i,s:O}", "data",
                                    (unsigned long long)(uintptr_t)in.t.data, "byte_offset",
                                    (unsigned long long)in.t.byte_offset, "shape", shape,
                                    "strides", strides, "dtype", dt ? dt : "?", "device_type",
                                    (int)in.t.device.device_type, "requires_grad",
                                    in.requires_grad ? Py_True : Py_False)
                    : NULL;
  Py_XDECREF(shape);
  Py_XDECREF(strides);
  ptcpy_in_release(&in, 1);
  return r;
}
