/* ptcpy.h - internal header of the ptc._C extension: the object layouts of
 * Graph / Value / SymInt / Executable / CompiledFunction, the cached torch
 * objects, error helpers and the DLPack tensor exchange shared by the C files
 * of python/src. Only libptc's public header is used. Every function here is
 * called with the GIL held unless its comment says otherwise. */
#ifndef PTCPY_H
#define PTCPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <ptc/ptc.h>

#include <stdint.h>

/* ---- module state (module.c) ---------------------------------------------- */
/** The process-wide context, created at import and never released. */
extern ptc_context* ptcpy_ctx;
/** _C.Error (a RuntimeError subclass). */
extern PyObject* ptcpy_Error;

/** Raises _C.Error from `s` (code, message, detail) and destroys `s`.
 * Always returns NULL. `s` must not be PTC_OK. */
PyObject* ptcpy_raise(ptc_status s);
/** Raises _C.Error with code name `code` ("UNIMPLEMENTED") and a formatted
 * message (PyUnicode_FromFormat syntax). Returns NULL. */
PyObject* ptcpy_raise_code(const char* code, const char* fmt, ...);

/* ---- torch (py_tensor.c) ---------------------------------------------------- */
/** Objects of torch cached at the first use (torch is imported lazily). */
typedef struct ptcpy_torch_cache {
  PyObject* torch;          /* the module */
  PyObject* tensor_type;    /* torch.Tensor */
  PyObject* dtype_type;     /* torch.dtype */
  PyObject* empty;          /* torch.empty */
  PyObject* is_grad_enabled;
  PyObject* dtypes[PTC_DTYPE_COUNT]; /* torch dtype of each ptc dtype */
  PyObject* kw_dtype;       /* ("dtype",) for vectorcall */
  PyObject* kw_dtype_device; /* ("dtype", "device") */
  int bool_dlpack;          /* torch exports bool tensors through DLPack */
  int cuda_is_hip;          /* torch.version.hip is set (is_cuda means a ROCm device) */
  int direct_import;        /* inputs read through the getters, not DLPack (torch 1.x) */
  PyObject* cuda_devices[8]; /* torch.device("cuda:N"), made on first use */
} ptcpy_torch_cache;
extern ptcpy_torch_cache ptcpy_torch;
/** Interned method/attribute names. */
extern PyObject *ptcpy_s_dlpack, *ptcpy_s_data_ptr, *ptcpy_s_detach, *ptcpy_s_view,
    *ptcpy_s_contiguous, *ptcpy_s_device, *ptcpy_s_dtype, *ptcpy_s_requires_grad,
    *ptcpy_s_type, *ptcpy_s_ptc_dyn, *ptcpy_s_dynamo_dyn, *ptcpy_s_is_cpu, *ptcpy_s_is_cuda;

/** Interns the names above. 0, or -1 with an exception set. */
int ptcpy_tensor_init(void);
/** Imports torch and fills ptcpy_torch once. 0 on success, -1 with an
 * exception set (ImportError when torch is missing). */
int ptcpy_torch_load(void);
/** torch's current CUDA stream of device `device_id` (a CUstream; NULL is
 * the legacy default stream) into *out, for ptc_run_options.stream: runs on
 * cuda tensors are ordered on the stream torch's own work goes to. 0, or -1
 * with an exception set. Needs torch loaded. */
int ptcpy_cuda_stream(int32_t device_id, void** out);
/** Whether `o` is a torch.Tensor (exact type fast path). Needs torch loaded. */
int ptcpy_is_tensor(PyObject* o);
/** ptc dtype of a torch.dtype or a dtype name ("f32", "float32"); -1 with
 * TypeError/ValueError set when neither. */
int32_t ptcpy_dtype_from_obj(PyObject* o);
/** torch.dtype object of a ptc dtype (borrowed), or NULL with an error. */
PyObject* ptcpy_dtype_to_torch(int32_t dtype);

/** One torch tensor lent to libptc: `t` describes it. Read straight from
 * the tensor (its shape/strides then live in `dims`, `keep` is the tensor)
 * or, for what that path does not take, through a DLPack capsule (shape/
 * strides point into it, `keep` is the capsule). `keep` keeps the memory
 * alive until ptcpy_in_release. A ptcpy_in must not be copied while its `t`
 * is in use (t.shape may point into it). */
typedef struct ptcpy_in {
  ptc_tensor t;
  PyObject* keep;    /* owned reference (tensor or capsule), NULL once released */
  int requires_grad; /* the tensor required grad (a detached view was lent) */
  int64_t dims[2 * PTC_MAX_RANK]; /* shape, then strides (direct path) */
} ptcpy_in;

/** Device type a backend runs on (PTC_DEVICE_CPU for "ref"/"cpu"). */
int32_t ptcpy_backend_device(const char* backend);
/** Lends tensor `obj` (argument `index`, "input"/"output" in messages) to
 * libptc without copying. Tensors that require grad are detached (and
 * `requires_grad` set), bool tensors cross as a uint8 view when this torch
 * cannot export bool. A tensor on a device other than `device_type` raises
 * _C.Error UNIMPLEMENTED naming `backend` (NULL: graph constants, `role` is then
 * the whole message prefix); a non-tensor raises TypeError.
 * Returns 0, or -1 with an exception set. */
int ptcpy_in_import(PyObject* obj, size_t index, const char* role, int32_t device_type,
                    const char* backend, ptcpy_in* out);
/** Drops what keeps each tensor lent (a capsule's destructor frees the
 * DLPack descriptor). */
void ptcpy_in_release(ptcpy_in* in, size_t n);
/** Whether `t` is contiguous (size-1 dims' strides ignored). */
int ptcpy_is_contiguous(const ptc_tensor* t);
/** Allocates a contiguous torch tensor of the shape/dtype in `desc` (as
 * filled by ptc_executable_infer_outputs) and points `*t` at its memory.
 * Returns the new tensor (owned) or NULL with an exception set. */
PyObject* ptcpy_alloc_output(const ptc_tensor* desc, ptc_tensor* t);

/** _C._describe(tensor) -> dict: the ptc_tensor a cpu tensor is lent as
 * (data address, byte_offset, shape, strides, dtype name, device type,
 * requires_grad); for tests of the zero-copy exchange. */
PyObject* ptcpy_describe(PyObject* self, PyObject* obj);

/* ---- Graph / Value / SymInt (py_graph.c) ------------------------------------ */
typedef struct PtcGraph {
  PyObject_HEAD
  ptc_graph* g;
  PyObject* keep; /* list of borrowed constant tensors (shared with executables) */
  int busy;       /* > 0 while a compile runs without the GIL */
} PtcGraph;

typedef struct PtcValue {
  PyObject_HEAD
  PtcGraph* graph;
  ptc_value id;
} PtcValue;

typedef struct PtcSymInt {
  PyObject_HEAD
  PtcGraph* graph;
  ptc_sym id;
  int64_t hint;
} PtcSymInt;

extern PyTypeObject PtcGraph_Type, PtcValue_Type, PtcSymInt_Type;
/** int for a static dim, else a new SymInt of `g`. New reference. */
PyObject* ptcpy_dim_to_py(PtcGraph* g, ptc_dim d);
/** Converts an int or a SymInt of graph `g` (NULL: any graph) to a dim.
 * 0, or -1 with TypeError/ValueError naming `what`. */
int ptcpy_dim_from_py(PtcGraph* g, PyObject* o, const char* what, ptc_dim* d);
int ptcpy_graph_types_init(PyObject* m);
/** `a op b` on sizes of `g` (PTC_SYM_ADD...): int or SymInt; NULL on error. */
PyObject* ptcpy_graph_sym(PtcGraph* g, int op, PyObject* a, PyObject* b);
/** `a rel b` (PTC_SYM_EQ...) decided with a guard when needed: 1/0, -1 on error. */
int ptcpy_graph_decide(PtcGraph* g, int rel, PyObject* a, PyObject* b);

/** Text of a two-call formatter (ptc_graph_format style) as a new str. */
PyObject* ptcpy_text_of(ptc_status (*fmt)(const void*, char*, size_t, size_t*), const void* obj);

/* ---- Executable (py_exec.c) ----------------------------------------------- */
typedef struct PtcExec {
  PyObject_HEAD
  ptc_executable* exe;
  PyObject* keep; /* the graph's list of borrowed constants */
  char backend[32];
  int32_t device_type;
  size_t n_in, n_out;
} PtcExec;
extern PyTypeObject PtcExec_Type;
/** Compiles graph `g` (GIL released during the compile). mm_prec /
 * conv_prec: ptc_compile_options matmul_precision / conv_precision (NULL =
 * "highest"). New Executable or NULL with an exception set. */
PyObject* ptcpy_compile(PtcGraph* g, const char* backend, const char* mode,
                        const ptc_dynamic_dim* dyn, size_t n_dyn, const char* debug_dir,
                        int disable_fusion, const char* mm_prec, const char* conv_prec);
/** Runs `ex` on lent inputs whose outputs were described by a successful
 * ptc_executable_infer_outputs into `outs` (shape buffers filled): allocates
 * torch outputs, runs with the GIL released and returns a tuple (as_tuple)
 * or list of the outputs. NULL with an exception set on error. */
PyObject* ptcpy_exec_finish(PtcExec* ex, const ptcpy_in* ins, size_t n_in, ptc_tensor* outs,
                            int as_tuple, uint64_t seed);
/** Lends the tensors of `seq` (a fast sequence of n) as inputs of `ex`
 * (role "input"/"output"). 0, or -1 with an exception set and nothing held. */
int ptcpy_exec_import(PtcExec* ex, PyObject* seq, const char* role, ptcpy_in* ins);
int ptcpy_exec_type_init(PyObject* m);
PyObject* ptcpy_compile_fn(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                           PyObject* kwnames);

/* ---- CompiledFunction (py_compiled.c) ---------------------------------------- */
int ptcpy_compiled_type_init(PyObject* m);

/* ---- argument parsing (module.c) ---------------------------------------------- */
/** Parses vectorcall arguments into `out` (n slots, NULL = not given) by
 * position then keyword name; `n_required` leading ones are mandatory.
 * Returns 0, or -1 with TypeError naming `fname`. */
int ptcpy_parse_args(const char* fname, PyObject* const* args, Py_ssize_t nargs,
                     PyObject* kwnames, const char* const* names, int n, int n_required,
                     PyObject** out);
/** UTF-8 of a str argument or NULL for None/absent; -1 with TypeError. */
int ptcpy_opt_str(PyObject* o, const char* what, const char** out);

/** Small stack buffers up to this many tensors, heap beyond. */
#define PTCPY_SMALL 8

#endif /* PTCPY_H */
