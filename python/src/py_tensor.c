/* py_tensor.c - torch <-> libptc tensor exchange: the lazily imported torch
 * objects, dtype conversions, lending torch tensors to libptc through DLPack
 * capsules (no copies; the capsule keeps the memory alive during a run) and
 * allocating outputs with torch.empty.
 *
 * On torch 1.x, whose exporter is costly, inputs of the plain tensor types
 * (torch.Tensor, nn.Parameter and subclasses that override none of the
 * attributes read) are read straight through torch's own getters (dtype,
 * requires_grad, is_cpu/is_cuda, shape, stride(), data_ptr(),
 * get_device()) called as C functions, without a DLPack capsule. Everything
 * else (torch >= 2, other layouts, subclasses overriding them, ranks above
 * PTC_MAX_RANK, dtypes without a ptc dtype) crosses as the DLTensor of a
 * "dltensor" capsule made by torch's C exporter (torch.utils.dlpack.to_dlpack,
 * the function behind Tensor.__dlpack__), copied into a ptc_tensor (the same
 * layout), which also gives the error messages. The capsule is never renamed: dropping it runs
 * torch's destructor, which frees the descriptor. Torch versions that cannot
 * export bool (1.13) lend a bool tensor as its zero-copy uint8 view with the
 * dtype set back to bool on the ptc side. */
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
  /* The direct path is taken on torch 1.x, whose exporter makes an
   * as_strided view per tensor (about 3000 instructions); torch >= 2's
   * exporter costs less than reading shape and stride() through the getters
   * (0.25 vs 0.6 us per tensor on the H100 machine's host). */
  c.direct_import = 0;
  PyObject* version = PyObject_GetAttrString(c.torch, "__version__");
  const char* vs = version ? PyUnicode_AsUTF8(version) : NULL;
  if (vs && vs[0] >= '0' && vs[0] <= '1' && vs[1] == '.') c.direct_import = 1;
  Py_XDECREF(version);
  PyErr_Clear();
  /* ROCm builds report HIP devices through is_cuda: the direct path leaves
   * their tensors to the exporter (which names them ROCm). */
  c.cuda_is_hip = 0;
  PyObject* ver = PyObject_GetAttrString(c.torch, "version");
  PyObject* hip = ver ? PyObject_GetAttrString(ver, "hip") : NULL;
  c.cuda_is_hip = hip && hip != Py_None;
  Py_XDECREF(hip);
  Py_XDECREF(ver);
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

/* ---- direct metadata reads (no capsule) ----------------------------------------- */

/* The attributes the direct path reads: getset descriptors first, then
 * methods. */
enum { A_DTYPE, A_REQUIRES_GRAD, A_IS_CPU, A_IS_CUDA, A_SHAPE, A_N_GETSET,
       A_STRIDE = A_N_GETSET, A_DATA_PTR, A_GET_DEVICE, A_COUNT };
static const char* const attr_names[A_COUNT] = {"dtype", "requires_grad", "is_cpu", "is_cuda",
                                                "shape", "stride", "data_ptr", "get_device"};

/* torch.Tensor's descriptors of attr_names (strong references) and the
 * names (interned), resolved once. `ok` stays 0 when this torch's tensor
 * type does not look as expected: every tensor then goes through the
 * exporter. */
static struct {
  int tried, ok;
  PyObject* name[A_COUNT];
  PyObject* descr[A_COUNT];
} D;

static void direct_init(void) {
  D.tried = 1;
  PyTypeObject* tp = (PyTypeObject*)ptcpy_torch.tensor_type;
  PyObject* got[A_COUNT];
  for (int i = 0; i < A_COUNT; i++) {
    if (!D.name[i] && !(D.name[i] = PyUnicode_InternFromString(attr_names[i]))) {
      PyErr_Clear();
      return;
    }
    got[i] = _PyType_Lookup(tp, D.name[i]); /* borrowed, no exception */
    if (!got[i] || !Py_IS_TYPE(got[i], i < A_N_GETSET ? &PyGetSetDescr_Type : &PyMethodDescr_Type))
      return;
  }
  for (int i = 0; i < A_COUNT; i++) D.descr[i] = Py_NewRef(got[i]);
  D.ok = 1;
}

/* Whether tensors of type `tp` read every attribute through D's
 * descriptors (the type attribute cache makes these lookups cheap); a
 * subclass or a monkeypatch overriding one of them takes the exporter's
 * path. */
/* The last few types found direct, with their version tags: a type whose
 * tag is unchanged (CPython gives a type a new tag when it or a base class
 * is modified) needs no lookups (a model call lends ~150 tensors of two
 * types, Tensor and Parameter). Guarded by the GIL. */
#define DIRECT_SEEN 4
static struct {
  PyTypeObject* tp;
  unsigned int tag;
} direct_seen[DIRECT_SEEN];
static unsigned int direct_seen_next;

static int direct_type(PyTypeObject* tp) {
  if (!D.tried) direct_init();
  if (!D.ok) return 0;
  int tagged = PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG);
  for (int i = 0; tagged && i < DIRECT_SEEN; i++)
    if (direct_seen[i].tp == tp && direct_seen[i].tag == tp->tp_version_tag) return 1;
  for (int i = 0; i < A_COUNT; i++)
    if (_PyType_Lookup(tp, D.name[i]) != D.descr[i]) return 0;
  if (PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG)) { /* the lookups tagged it */
    unsigned int k = direct_seen_next++ % DIRECT_SEEN;
    direct_seen[k].tp = tp;
    direct_seen[k].tag = tp->tp_version_tag;
  }
  return 1;
}

static inline PyObject* get_attr(int a, PyObject* obj) {
  PyGetSetDef* gs = ((PyGetSetDescrObject*)D.descr[a])->d_getset;
  return gs->get(obj, gs->closure);
}

static inline PyObject* call_method(int a, PyObject* obj) {
  return PyObject_Vectorcall(D.descr[a], &obj, 1, NULL);
}

/* Reads a tuple of ints into out[0..n); 0, or -1 (clears any exception). */
static int read_ints(PyObject* tup, int64_t* out, Py_ssize_t n) {
  if (!tup || !PyTuple_Check(tup) || PyTuple_GET_SIZE(tup) != n) {
    PyErr_Clear();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(tup, i));
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return -1;
    }
    out[i] = v;
  }
  return 0;
}

/* The direct path: 1 when `obj` (a tensor) was lent without a capsule, 0
 * when the exporter's path must take it (nothing held, no exception), -1
 * with an exception set (a tensor on another device: the same error as the
 * exporter's path). */
static int import_direct(PyObject* obj, size_t index, const char* role, int32_t device_type,
                         const char* backend, ptcpy_in* out) {
  if (!ptcpy_torch.direct_import || !direct_type(Py_TYPE(obj))) return 0;
  if (device_type == PTC_DEVICE_CUDA && ptcpy_torch.cuda_is_hip) return 0;
  /* the device first, as on_device does (torch's exporter is not asked) */
  PyObject* flag = get_attr(device_type == PTC_DEVICE_CUDA ? A_IS_CUDA : A_IS_CPU, obj);
  if (!flag) {
    PyErr_Clear();
    return 0;
  }
  int same = flag == Py_True;
  Py_DECREF(flag);
  if (!same) return device_error(obj, index, role, device_type, backend);
  PyObject* dt = get_attr(A_DTYPE, obj);
  if (!dt) {
    PyErr_Clear();
    return 0;
  }
  int32_t dtype = -1;
  for (int32_t i = 0; i < PTC_DTYPE_COUNT; i++)
    if (dt == ptcpy_torch.dtypes[i]) dtype = i;
  Py_DECREF(dt);
  if (dtype < 0) return 0;
  PyObject* rg = get_attr(A_REQUIRES_GRAD, obj);
  if (!rg) {
    PyErr_Clear();
    return 0;
  }
  int requires_grad = rg == Py_True;
  Py_DECREF(rg);
  PyObject* shape = get_attr(A_SHAPE, obj);
  if (!shape) {
    PyErr_Clear();
    return 0;
  }
  Py_ssize_t ndim = PyTuple_Check(shape) ? PyTuple_GET_SIZE(shape) : -1;
  int bad = ndim < 0 || ndim > PTC_MAX_RANK || read_ints(shape, out->dims, ndim) < 0;
  Py_DECREF(shape);
  if (bad) return 0;
  PyObject* strides = call_method(A_STRIDE, obj); /* raises for sparse/mkldnn layouts */
  bad = read_ints(strides, out->dims + PTC_MAX_RANK, ndim) < 0;
  Py_XDECREF(strides);
  if (bad) return 0;
  int32_t dev_id = 0;
  if (device_type == PTC_DEVICE_CUDA) {
    PyObject* d = call_method(A_GET_DEVICE, obj);
    long v = d ? PyLong_AsLong(d) : -1;
    Py_XDECREF(d);
    if (v < 0) {
      PyErr_Clear();
      return 0;
    }
    dev_id = (int32_t)v;
  }
  PyObject* ptr = call_method(A_DATA_PTR, obj);
  void* data = ptr ? PyLong_AsVoidPtr(ptr) : NULL;
  Py_XDECREF(ptr);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  memset(&out->t, 0, sizeof out->t);
  out->t.data = data;
  out->t.device.device_type = device_type;
  out->t.device.device_id = dev_id;
  out->t.ndim = (int32_t)ndim;
  out->t.dtype = ptc_dtype_to_dl(dtype);
  out->t.shape = out->dims;
  out->t.strides = out->dims + PTC_MAX_RANK;
  out->t.byte_offset = 0;
  out->requires_grad = requires_grad;
  out->keep = Py_NewRef(obj);
  return 1;
}

int ptcpy_in_import(PyObject* obj, size_t index, const char* role, int32_t device_type,
                    const char* backend, ptcpy_in* out) {
  out->keep = NULL;
  out->requires_grad = 0;
  if (!ptcpy_is_tensor(obj)) {
    PyErr_Format(PyExc_TypeError, "%s %zu: expected a torch.Tensor, got %.100s", role, index,
                 Py_TYPE(obj)->tp_name);
    return -1;
  }
  int direct = import_direct(obj, index, role, device_type, backend, out);
  if (direct != 0) return direct > 0 ? 0 : -1;
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
  out->keep = cap;
  if (override >= 0) out->t.dtype = ptc_dtype_to_dl(override);
  if (out->t.device.device_type != device_type) {
    ptcpy_in_release(out, 1);
    return device_error(obj, index, role, device_type, backend);
  }
  return 0;
}

void ptcpy_in_release(ptcpy_in* in, size_t n) {
  for (size_t i = 0; i < n; i++) Py_CLEAR(in[i].keep);
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

/* torch.device("cuda", id) (new reference), made once per device for the
 * first 8 devices (torch parses no device string per call); NULL with an
 * exception set. */
static PyObject* cuda_device(int32_t id) {
  size_t n = sizeof ptcpy_torch.cuda_devices / sizeof ptcpy_torch.cuda_devices[0];
  if (id >= 0 && (size_t)id < n && ptcpy_torch.cuda_devices[id])
    return Py_NewRef(ptcpy_torch.cuda_devices[id]);
  PyObject* dev = PyObject_CallMethod(ptcpy_torch.torch, "device", "si", "cuda", (int)id);
  if (dev && id >= 0 && (size_t)id < n) ptcpy_torch.cuda_devices[id] = Py_NewRef(dev);
  return dev;
}

/* torch.empty(shape, dtype=<dt>[, device=cuda:N]) (new reference or NULL). */
static PyObject* empty(PyObject* shape, int32_t dt, const ptc_tensor* desc) {
  if (desc->device.device_type == PTC_DEVICE_CUDA) {
    PyObject* dev = cuda_device(desc->device.device_id);
    PyObject* args[3] = {shape, ptcpy_torch.dtypes[dt], dev};
    PyObject* out =
        dev ? PyObject_Vectorcall(ptcpy_torch.empty, args, 1, ptcpy_torch.kw_dtype_device) : NULL;
    Py_XDECREF(dev);
    return out;
  }
  PyObject* args[2] = {shape, ptcpy_torch.dtypes[dt]};
  return PyObject_Vectorcall(ptcpy_torch.empty, args, 1, ptcpy_torch.kw_dtype);
}

/* Output templates: per device (cpu, cuda:0..7) and dtype, a 0-element
 * plain tensor whose new_empty(shape) makes an output - the same tensor as
 * torch.empty(shape, dtype=, device=) (contiguous, uninitialised, no grad),
 * with one positional argument for torch to parse instead of two keywords
 * (about half the host time of torch.empty on a cuda device). */
#define N_TEMPLATE_DEVICES 9
static PyObject* templates[N_TEMPLATE_DEVICES][PTC_DTYPE_COUNT]; /* strong, made on first use */
static PyObject* s_new_empty;

/* The template for outputs of dtype `dt` on desc's device (borrowed), NULL
 * without an exception where none is kept (other devices, a torch that
 * makes another type), NULL with one on errors. */
static PyObject* template_of(int32_t dt, const ptc_tensor* desc) {
  int slot = desc->device.device_type == PTC_DEVICE_CUDA ? 1 + desc->device.device_id : 0;
  if (slot < 0 || slot >= N_TEMPLATE_DEVICES) return NULL;
  if (templates[slot][dt]) return templates[slot][dt];
  if (!s_new_empty && !(s_new_empty = PyUnicode_InternFromString("new_empty"))) return NULL;
  PyObject* zero = Py_BuildValue("(i)", 0);
  PyObject* t = zero ? empty(zero, dt, desc) : NULL;
  Py_XDECREF(zero);
  if (!t) return NULL;
  if (Py_TYPE(t) != (PyTypeObject*)ptcpy_torch.tensor_type) { /* e.g. a mode's fake tensor */
    Py_DECREF(t);
    return NULL;
  }
  templates[slot][dt] = t;
  return t;
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
  PyObject* tmpl = template_of(dt, desc);
  PyObject* out;
  if (tmpl) { /* template.new_empty(shape): dtype and device from the template */
    PyObject* args[2] = {tmpl, shape};
    out = PyObject_VectorcallMethod(s_new_empty, args, 2, NULL);
  } else if (PyErr_Occurred()) {
    out = NULL;
  } else {
    out = empty(shape, dt, desc);
  }
  Py_DECREF(shape);
  if (!out) return NULL;
  PyObject* ptr = D.ok && Py_TYPE(out) == (PyTypeObject*)ptcpy_torch.tensor_type
                      ? call_method(A_DATA_PTR, out)
                      : PyObject_CallMethodNoArgs(out, ptcpy_s_data_ptr);
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
