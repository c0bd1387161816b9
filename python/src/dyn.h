/* dyn.h - internal header of ptc's bytecode capture ("Dynamo in C", issue 6):
 * the shared types of the PEP 523 frame hook, the bytecode decoder/assembler,
 * the symbolic evaluator, its variable trackers, guards, sources and the
 * runner that executes a cache entry. Python 3.11 and 3.12 only (module.c
 * refuses others). Every function is called with the GIL held.
 *
 * Pipeline (one frame):
 *   dyn_hook.c     frame hook: cache lookup in the code's extra slot, guard
 *                  check, run the entry; on a miss call dyn_convert_frame.
 *   dyn_eval.c     dyn_convert_frame: decode the code (dyn_bytecode.c), run
 *                  the symbolic evaluator over DynVars; tensor ops go to the
 *                  OutputGraph (python/ptc/_dyn_graph.py, the adapter to the
 *                  issue-4 mapping table and from_fx); calls to builtins,
 *                  methods, modules go through dyn_call.c.
 *   dyn_output.c   at RETURN or at a graph break: graph outputs, side-effect
 *                  plan, reconstruction plan -> a Runner (dyn_runner.c) and,
 *                  for a break, transformed bytecode + resume function
 *                  (dyn_codegen.c).
 *   dyn_guard.c    sources (where a value lives in the frame) and guard sets
 *                  (checked by the hook before running an entry).
 *
 * Ownership: DynVar, DynSource, DynGuardSet, DynRunner are PyObjects
 * (reference counted); "borrowed"/"new reference" as in the CPython API.
 * Error convention: functions returning int give 0 on success and -1 with a
 * Python exception set; functions returning PyObject* give NULL with an
 * exception set. A graph break is NOT a Python exception: see DynBreak. */
#ifndef PTC_DYN_H
#define PTC_DYN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030D0000
#define PTC_DYN_SUPPORTED 0 /* the module still builds; ptc.compile refuses */
#else
#define PTC_DYN_SUPPORTED 1
#endif

/* ======================================================================
 * Frame view (dyn_hook.c fills it from a _PyInterpreterFrame at entry)
 * ====================================================================== */
/** What the hook knows about a frame at its entry, before its first
 * instruction: arguments are in locals[0..n_args), every other local is
 * NULL (MAKE_CELL / COPY_FREE_VARS have not run yet). All borrowed. */
typedef struct dyn_frame_view {
  PyCodeObject* code;
  PyObject* func;        /* the function object (may be NULL for exec'd code) */
  PyObject* globals;     /* dict */
  PyObject* builtins;    /* dict */
  PyObject* const* locals; /* fast locals ("localsplus"), code->co_nlocalsplus slots */
  Py_ssize_t n_locals;   /* co_nlocalsplus */
  Py_ssize_t n_args;     /* argcount + kwonly + (varargs) + (varkw): slots holding arguments */
  PyObject* closure;     /* func.__closure__ (tuple of cells) or NULL */
} dyn_frame_view;

/* ======================================================================
 * Bytecode (dyn_bytecode.c) - decode and assemble for 3.11 and 3.12
 * ====================================================================== */
/** One decoded instruction. Offsets are in code units (2 bytes), of the
 * instruction itself (not of its EXTENDED_ARG prefix). Inline CACHE entries
 * and EXTENDED_ARG are not separate instructions. */
typedef struct dyn_insn {
  int opcode;      /* base opcode (specialised/adaptive forms de-specialised) */
  int arg;         /* full argument (EXTENDED_ARG folded in) */
  int offset;      /* code-unit offset in the original code; -1 for new ones */
  int target;      /* jump target as an INDEX into the instruction array, -1 if none */
  int line;        /* source line, -1 if none */
  int exc_handler; /* index of the exception-table handler covering it, -1 if none */
  int exc_depth;   /* stack depth of that handler entry */
  int exc_lasti;   /* its lasti flag */
  PyObject* argval; /* borrowed: resolved constant or name (LOAD_CONST, LOAD_ATTR, LOAD_GLOBAL...), else NULL */
} dyn_insn;

typedef struct dyn_code {
  PyCodeObject* code; /* strong */
  dyn_insn* insns;
  int n;
  int* index_of_offset; /* code-unit offset -> instruction index (or -1), size n_units */
  int n_units;
} dyn_code;

/** Decodes `code` (uses co_code_adaptive de-specialised through
 * _PyOpcode_Deopt, or co_code). Returns 0 / -1. Free with dyn_code_free. */
int dyn_code_decode(PyCodeObject* code, dyn_code* out);
void dyn_code_free(dyn_code* c);
/** Name of an opcode ("LOAD_FAST") for messages. */
const char* dyn_opname(int opcode);
/** Number of inline CACHE entries after an opcode in this Python. */
int dyn_cache_entries(int opcode);
/** Whether execution never falls through to the next instruction after
 * `opcode` (returns, raises, unconditional jumps). */
int dyn_opcode_is_terminal(int opcode);
/** Net stack effect of (opcode, arg), jump taken or not (jump: 1 = taken). */
int dyn_stack_effect(int opcode, int arg, int jump);

/** An instruction list under construction (for transformed code and resume
 * functions). `target` of jumps is an index into `insns`. */
typedef struct dyn_asm {
  dyn_insn* insns;
  int n, cap;
} dyn_asm;
int dyn_asm_emit(dyn_asm* a, int opcode, int arg, int target, int line); /* returns index or -1 */
void dyn_asm_free(dyn_asm* a);
/** Assembles `a` into a new code object based on `like` (names, filename,
 * qualname, firstlineno): co_code with EXTENDED_ARG and zeroed caches,
 * jumps resolved, exception table from the insns' exc_* fields, line table
 * from their lines, co_stacksize computed (at least like's). consts/names/varnames/cellvars/
 * freevars given as tuples; argcount positional-only-free arguments.
 * Returns a new code object or NULL. */
PyObject* dyn_asm_build(dyn_asm* a, PyCodeObject* like, PyObject* name, PyObject* consts,
                        PyObject* names, PyObject* varnames, PyObject* cellvars,
                        PyObject* freevars, int argcount, int flags);

/* ======================================================================
 * Sources (dyn_guard.c) - where a value lives, relative to the frame
 * ====================================================================== */
enum dyn_source_kind {
  DS_LOCAL,   /* view->locals[index] (an argument at frame entry) */
  DS_GLOBAL,  /* view->globals[name] (falls back to builtins when absent) */
  DS_CLOSURE, /* view->closure[index].cell_contents */
  DS_ATTR,    /* getattr(base, name) */
  DS_ITEM,    /* base[key] (key: a constant: int, str, ...) */
  DS_CONST,   /* a fixed object held by the source (key) */
  DS_GRAD_MODE, /* torch.is_grad_enabled() */
  DS_TYPE,    /* type(base) */
  DS_DEFAULT_DTYPE, /* torch.get_default_dtype() */
};
typedef struct DynSource {
  PyObject_HEAD
  int kind;
  Py_ssize_t index;        /* DS_LOCAL / DS_CLOSURE */
  PyObject* key;           /* name (str) for GLOBAL/ATTR, key for ITEM, object for CONST */
  struct DynSource* base;  /* ATTR / ITEM / TYPE */
  PyObject* local_name;    /* DS_LOCAL: the variable's name (for messages) */
} DynSource;
extern PyTypeObject DynSource_Type;
/** New sources (new references; base/key are referenced, not stolen). */
DynSource* dyn_source_local(Py_ssize_t index, PyObject* name);
DynSource* dyn_source_global(PyObject* name);
DynSource* dyn_source_closure(Py_ssize_t index);
DynSource* dyn_source_attr(DynSource* base, PyObject* name);
DynSource* dyn_source_item(DynSource* base, PyObject* key);
DynSource* dyn_source_const(PyObject* obj);
DynSource* dyn_source_grad_mode(void);
/** torch.get_default_dtype() (DS_DEFAULT_DTYPE). */
DynSource* dyn_source_default_dtype(void);
/** type(base) (DS_TYPE). */
DynSource* dyn_source_type(DynSource* base);
/** Evaluates a source against a frame: new reference, or NULL with the
 * exception getattr/getitem raised (KeyError/AttributeError...). */
PyObject* dyn_source_eval(DynSource* s, const dyn_frame_view* v);
/** "L['x'].weight", "G['torch']", "L['xs'][0]" (new str). */
PyObject* dyn_source_repr(DynSource* s);
/** Structural equality (same path). */
int dyn_source_equal(DynSource* a, DynSource* b);

/* ======================================================================
 * Guards (dyn_guard.c)
 * ====================================================================== */
enum dyn_guard_kind {
  DG_TYPE,       /* type(x) is expected (a type) */
  DG_ID,         /* x is expected (identity; holds a strong ref) */
  DG_EQ,         /* type(x) is type(expected) and x == expected (constants) */
  DG_LEN,        /* type(x) is expected_type and len(x) == n */
  DG_DICT_KEYS,  /* type(x) is dict-like and tuple(x.keys()) == expected (tuple) */
  DG_TENSOR,     /* a tensor: exact type, dtype, device, requires_grad, ndim, sizes
                    (static dims equal; dynamic dims >= 2), strides of static dims */
  DG_TRUTH,      /* bool(x) == n (e.g. module.training, grad mode) */
  DG_NOT_HASATTR,/* not hasattr(base, name): an attribute read that failed */
  DG_SHAPE,      /* expected(*tensors) is True: symbolic shape guards over the
                    graph's input tensors (a callable from _dyn_graph) */
};
typedef struct dyn_guard {
  int kind;
  DynSource* src;     /* strong */
  PyObject* expected; /* strong, may be NULL */
  Py_ssize_t n;       /* LEN / TRUTH */
  /* DG_TENSOR */
  int ndim;
  int64_t* sizes;     /* ndim entries; -1 = dynamic dim (>= 2) */
  int64_t* strides;   /* ndim entries; INT64_MIN = not checked */
  int requires_grad;
  PyObject* dtype;    /* torch.dtype (strong) */
  PyObject* device;   /* torch.device (strong) */
  /* DG_SHAPE: the tensor sources passed to `expected`, in order */
  PyObject* tensor_sources; /* tuple of DynSource */
  /* DG_TENSOR, filled by dyn_guards_add_tensor */
  PyObject* tensor_type; /* the exact tensor type (strong) */
  int contiguous;     /* had dynamic dims and was contiguous: checked for contiguity
                         (strides then INT64_MIN) since such inputs compile as contiguous */
  int fast;           /* bit 1: metadata read through torch's descriptors directly;
                         bit 2: a cpu tensor (device checked through is_cpu) */
} dyn_guard;

/** An ordered, de-duplicated set of guards (a PyObject so entries own it). */
typedef struct DynGuardSet {
  PyObject_HEAD
  dyn_guard* g;
  Py_ssize_t n, cap;
} DynGuardSet;
extern PyTypeObject DynGuardSet_Type;
DynGuardSet* dyn_guards_new(void);
/** Adds a guard unless an identical one (kind + source) exists. For
 * DG_TENSOR use dyn_guards_add_tensor. 0 / -1. */
int dyn_guards_add(DynGuardSet* gs, int kind, DynSource* src, PyObject* expected, Py_ssize_t n);
/* Per kind: TYPE/LEN expected = the type; ID/EQ expected = the object;
 * DICT_KEYS expected = tuple of keys; TRUTH n = 0/1; NOT_HASATTR: src = an
 * ATTR source (base, name) and expected NULL, or src = the base and expected
 * = the name (str); SHAPE: src NULL, expected = (callable, tuple of
 * DynSource) - or use dyn_guards_add_shape. */
/** Symbolic shape guard: fn(*tensors at tensor_sources) must be truthy.
 * De-duplicated by fn identity. 0 / -1. */
int dyn_guards_add_shape(DynGuardSet* gs, PyObject* fn, PyObject* tensor_sources);
/** Tensor guard from the live tensor `t`; `dynamic_dims` (may be NULL):
 * a set of dim indexes whose size is not checked beyond >= 2. */
int dyn_guards_add_tensor(DynGuardSet* gs, DynSource* src, PyObject* t, PyObject* dynamic_dims);
/** 1 when every guard holds for frame `v`, 0 when one fails (no exception
 * left set; *failed = index of the failing guard when non-NULL), -1 on an
 * unexpected error. Errors inside a source evaluation count as a failure. */
int dyn_guards_check(DynGuardSet* gs, const dyn_frame_view* v, Py_ssize_t* failed);
/** One line per guard ("TENSOR L['x'] f32 cpu [4, 8] ..."), new list of str. */
PyObject* dyn_guards_describe(DynGuardSet* gs);

/* ======================================================================
 * Variable trackers (dyn_var.c)
 * ====================================================================== */
enum dyn_var_kind {
  DV_CONST,     /* value: an immutable Python value or a known object used by
                   identity: None/bool/int/float/complex/str/bytes/Ellipsis,
                   code objects, torch.dtype/device, builtin functions, Python
                   functions called through the mapping table, Python modules,
                   classes, NotImplemented */
  DV_TENSOR,    /* value: a _dyn_graph.Proxy (fx node + ptc Value) */
  DV_SYMINT,    /* value: a _dyn_graph.SymProxy (a dynamic size) */
  DV_TUPLE,     /* items: list of DynVar */
  DV_LIST,      /* items: list of DynVar */
  DV_DICT,      /* items: dict {constant key -> DynVar} (insertion order kept) */
  DV_SET,       /* items: list of DynVar (constant elements) */
  DV_SLICE,     /* items: [start, stop, step] DynVars */
  DV_RANGE,     /* value: a range object (constant) */
  DV_NAMEDTUPLE,/* items: list; value: the namedtuple class */
  DV_FUNCTION,  /* a user Python function to inline: value = the function object
                   when it exists for real; for MAKE_FUNCTION made during the trace,
                   value = NULL and extra = (code, globals, defaults DynVar|None,
                   kwdefaults DynVar|None, closure tuple of DV_CELL|None) */
  DV_METHOD,    /* bound method: extra = self DynVar, value = the function (DynVar) */
  DV_MODULE,    /* value: an nn.Module instance; items: attribute writes made
                   during the trace {name -> DynVar} */
  DV_OBJECT,    /* value: a user object (instance); items: attribute writes.
                   extra = a str: a value the trace cannot use (tensor subclass,
                   tensor ptc refuses...): any use must break with that reason */
  DV_CELL,      /* items: [contents DynVar] or [] when empty; a cell that exists
                   for real: value = the cell, extra = the DynSource of its
                   contents, items = NULL until first read, index = its root
                   closure index (or -1); created = 1 for cells of the trace */
  DV_ITER,      /* items: list of DynVar remaining; index: position */
  DV_NULL,      /* the NULL pushed by PUSH_NULL / LOAD_GLOBAL|LOAD_ATTR (3.12) */
  DV_GRAD_CTX,  /* torch.no_grad() / enable_grad() / set_grad_enabled(b): n = mode */
  DV_OBJ_NEW,   /* an object created during the trace (value: the real object,
                   created by calling its class with constant args is NOT done:
                   dataclass/namedtuple instances are DV_NAMEDTUPLE/DV_OBJECT with
                   created = 1) */
};
typedef struct DynVar {
  PyObject_HEAD
  int kind;
  PyObject* value;   /* see kinds; strong or NULL */
  PyObject* items;   /* see kinds; strong or NULL */
  PyObject* extra;   /* see kinds; strong or NULL */
  DynSource* source; /* where the real value lives (inputs), NULL for values made in the trace */
  Py_ssize_t index;  /* DV_ITER position; DV_GRAD_CTX mode */
  int created;       /* made during the trace (a container/object that must be built for real) */
  int mutated;       /* a pre-existing container/object changed during the trace */
} DynVar;
extern PyTypeObject DynVar_Type;
/** Constructors (new references; arguments are referenced, not stolen). */
DynVar* dyn_var_new(int kind, PyObject* value, PyObject* items, PyObject* extra,
                    DynSource* source);
DynVar* dyn_var_const(PyObject* value);
DynVar* dyn_var_seq(int kind, PyObject* list_of_vars); /* TUPLE/LIST/SET, created = 1 */
/** The constant Python value of a var when it is fully constant (CONST, RANGE,
 * tuples/lists/dicts/slices of constants: rebuilt), else NULL WITHOUT an
 * exception. New reference. */
PyObject* dyn_var_as_const(DynVar* v);
/** "tensor", "int", "list", ... for messages (static string). */
const char* dyn_var_kind_name(DynVar* v);

/* ======================================================================
 * The trace (dyn_eval.c) - one conversion attempt of one frame
 * ====================================================================== */
/** Why a trace stops short: an unsupported construct. Filled by whoever
 * meets it (dyn_break_set), consumed by the evaluator. */
typedef struct DynBreak {
  int active;
  char reason[512];   /* "call to builtins.print", "data-dependent branch on a tensor" */
  PyObject* filename; /* strong, where (the innermost user frame) */
  int line;
} DynBreak;

typedef struct dyn_tx dyn_tx;
typedef struct dyn_eframe dyn_eframe;

/** Result of dyn_call: the call produced a var, needs inlining of a Python
 * function (the evaluator does it), or is unsupported (a graph break). */
enum dyn_call_result { DYN_CALL_OK = 0, DYN_CALL_INLINE = 1, DYN_CALL_BREAK = 2, DYN_CALL_ERROR = -1 };

/** Shared state of one trace; dyn_eval.c owns it. The fields here are what
 * other files may use. */
struct dyn_tx {
  const dyn_frame_view* view; /* the root frame */
  PyObject* og;               /* the _dyn_graph.OutputGraph (strong) */
  DynGuardSet* guards;        /* (strong) */
  PyObject* side_effects;     /* list of effect tuples, see dyn_output.c (strong) */
  PyObject* wrapped;          /* dict id(real object) -> DynVar: one tracker per real object */
  DynBreak brk;
  int fullgraph;
  int grad_enabled;           /* current grad mode during the trace */
  int depth;                  /* inlining depth */
  PyObject* dynamic;          /* dict source repr -> set of dynamic dims for tensor inputs */
  PyObject* inputs;           /* list of DynSource: the graph inputs in og.add_input order
                                 (dyn_wrap appends; dyn_output.c uses it as the runner's inputs) */
  PyObject* config;           /* the capture config (borrowed from dyn_convert_frame) */
  /* statistics for explain */
  int n_inlined;
};

/** Marks the trace as broken with a formatted reason (printf style);
 * returns DYN_CALL_BREAK so callers can `return dyn_break(tx, ...)`. */
int dyn_break(dyn_tx* tx, const char* fmt, ...);

/** Wraps a real Python value found at `src` into a tracker, installing the
 * guards its use needs (tensor -> graph input + DG_TENSOR; int/float/bool/str/
 * None -> DG_EQ; tuple/list -> DG_LEN + items; dict -> DG_DICT_KEYS + values;
 * nn.Module -> DG_ID + DG_TRUTH(training); function/module/class/builtin ->
 * DG_ID; other objects -> DG_TYPE). The same real object yields the same
 * DynVar (tx->wrapped). New reference, NULL on error; an unsupported value
 * (e.g. a tensor subclass) returns a DV_OBJECT that breaks when used. */
DynVar* dyn_wrap(dyn_tx* tx, PyObject* value, DynSource* src);

/* ======================================================================
 * Calls (dyn_call.c) - everything that is not bytecode control flow
 * ====================================================================== */
/** Calls `fn` with positional `args[0..nargs)` and keyword args `kwnames`
 * (tuple of str or NULL) whose values follow the positionals in `args`.
 * Returns DYN_CALL_OK with *out (new ref), DYN_CALL_INLINE with *out = the
 * DV_FUNCTION to inline and *inline_args = new list of positional DynVars
 * (self first for methods) and *inline_kwargs = new dict {name: DynVar}
 * (the evaluator binds and runs it), DYN_CALL_BREAK (dyn_break was called:
 * tx->brk says why), or DYN_CALL_ERROR (Python exception: a bug). */
int dyn_call(dyn_tx* tx, DynVar* fn, DynVar* const* args, Py_ssize_t nargs, PyObject* kwnames,
             DynVar** out, PyObject** inline_args, PyObject** inline_kwargs);
/** getattr(obj, name) on a tracker (tensor attributes, module
 * submodules/parameters, object attributes, methods -> DV_METHOD, ...). */
int dyn_getattr(dyn_tx* tx, DynVar* obj, PyObject* name, DynVar** out);
/** obj.name = value (a side effect on pre-existing objects). */
int dyn_setattr(dyn_tx* tx, DynVar* obj, PyObject* name, DynVar* value);
/** Binary/unary/compare ops: `op` is a BINARY_OP arg (NB_ADD...), or
 * DYN_OP_* below for the others. */
int dyn_binop(dyn_tx* tx, int op, DynVar* a, DynVar* b, DynVar** out);
int dyn_unop(dyn_tx* tx, int op, DynVar* a, DynVar** out);
int dyn_compare(dyn_tx* tx, int op /* Py_LT... */, DynVar* a, DynVar* b, DynVar** out);
int dyn_subscr(dyn_tx* tx, DynVar* obj, DynVar* key, DynVar** out);
int dyn_store_subscr(dyn_tx* tx, DynVar* obj, DynVar* key, DynVar* value);
/** bool(v) when it is known at trace time (constants, containers, specialised
 * sizes with a guard): 0/1 in *out; DYN_CALL_BREAK for a tensor's truth
 * value (data-dependent). */
int dyn_truth(dyn_tx* tx, DynVar* v, int* out);
/** iter(v) -> DV_ITER over a known sequence (list/tuple/range/dict keys/
 * ModuleList/Sequential/enumerate/zip results), else break. */
int dyn_iter(dyn_tx* tx, DynVar* v, DynVar** out);
/** contains / is / is not. */
int dyn_contains(dyn_tx* tx, DynVar* container, DynVar* item, int* out);

enum { DYN_OP_NOT = 100, DYN_OP_NEG, DYN_OP_POS, DYN_OP_INVERT };
/* dyn_compare also accepts these (optional for the evaluator: IS_OP /
 * CONTAINS_OP may use them; dyn_contains is the same as DYN_OP_IN). */
enum { DYN_OP_IS = 110, DYN_OP_IS_NOT, DYN_OP_IN, DYN_OP_NOT_IN };

/* Side effects (tx->side_effects, a list of tuples appended in program
 * order; dyn_output.c replays them after the graph, taking FINAL values from
 * the trackers at output time):
 *   ("setattr", obj_var, name, value_var)  setattr(real obj, name, value)
 *       (obj_var: DV_OBJECT/DV_MODULE with a source; one tuple per write)
 *   ("delattr", obj_var, name)             delattr(real obj, name)
 *   ("list_replace", list_var)             real_list[:] = final items of list_var
 *       (appended once, when a pre-existing list is first mutated; list_var->mutated = 1)
 *   ("dict_replace", dict_var)             real dict cleared and refilled from the
 *       final items (same rule)
 *   ("global", globals_dict, name, value_var)  globals_dict[name] = value (STORE_GLOBAL)
 *   ("cell", cell_var)                     cell contents = final contents of the DV_CELL
 * In-place tensor ops need no effect: the OutputGraph records them in the
 * graph (the Proxy of the tensor is updated in place and stays the same
 * object, so every tracker of that tensor sees the new value).
 *
 * Conventions of dyn_call.c (read by dyn_eval.c / dyn_output.c):
 * - DV_GRAD_CTX: index = the grad mode the with-block sets (0/1), for
 *   torch.no_grad() / enable_grad(). torch.set_grad_enabled(b) changes the
 *   mode already when called (eager semantics): dyn_call only accepts it
 *   when b is the current mode (a no-op), else it breaks.
 * - DV_TUPLE with extra = torch.Size (the class): a tensor shape with
 *   symbolic dims (rebuild as torch.Size(items)). Fully static shapes are
 *   DV_CONST torch.Size values.
 * - DV_ITER: items = list of DynVar, index = next position. An iterator
 *   over a DV_LIST shares the list's items object (list mutations during
 *   the loop are seen, as in Python); enumerate/zip/reversed/iter(dict)
 *   snapshot their container and break if it is mutated while they run.
 * - Dict views (d.keys()/values()/items()): DV_TUPLE with extra = the str
 *   "dict_keys"/"dict_values"/"dict_items", kept equal to the dict (the
 *   DV_DICT's extra lists its views); iteration, len(), `in`, unpacking
 *   work; other ops break; the output must refuse to rebuild one.
 * - Methods: dyn_getattr returns DV_METHOD {value = the function var,
 *   extra = self}: for tensors and builtin containers the function var is a
 *   DV_CONST of the unbound descriptor (torch.Tensor.add, list.append), so
 *   `dyn_call(DV_METHOD, args)` and `dyn_call(function var, [self, args...])`
 *   are equivalent.
 * - dyn_getattr may return DYN_CALL_INLINE for a property: *out is then a
 *   DV_METHOD (the getter bound to the object) that the evaluator must call
 *   with no arguments (dyn_call gives DYN_CALL_INLINE); its result is the
 *   attribute's value. */

/* ======================================================================
 * Output (dyn_output.c) and runner (dyn_runner.c)
 * ====================================================================== */
/** A compiled cache entry's executor: given the frame, fetches the graph's
 * input tensors through their sources, calls the compiled graph, replays the
 * side effects in order and rebuilds the values the bytecode needs (the
 * return value for a full graph; a tuple of stack items + live locals at a
 * graph break). */
typedef struct DynRunner {
  PyObject_HEAD
  PyObject* compiled;     /* callable(*tensors) -> tuple of outputs */
  PyObject* inputs;       /* tuple of DynSource: graph inputs in order */
  PyObject* effects;      /* tuple of effect plans (dyn_output.c) */
  PyObject* result_plan;  /* plan of the value(s) to return */
  int n_outputs;
  int n_memo;             /* objects built once per run (created lists/dicts...) */
} DynRunner;
extern PyTypeObject DynRunner_Type;
/** Runs the runner for frame `v`: new reference (the result) or NULL. */
PyObject* dyn_runner_run(DynRunner* r, const dyn_frame_view* v);
/** New runner (references taken, not stolen); `compiled` may be Py_None
 * (no graph to run). NULL on error. */
DynRunner* dyn_runner_new(PyObject* compiled, PyObject* inputs, PyObject* effects,
                          PyObject* result_plan, int n_outputs, int n_memo);
/** Plans (dyn_output.c builds, dyn_runner.c runs): tuples whose first item
 * is one of these tags (a small int).
 *   (DP_CONST, obj)  (DP_OUT, k: graph output)  (DP_INPUT, i: graph input)
 *   (DP_SRC, DynSource)  (DP_TUPLE, (plans))  (DP_LIST, (plans), memo)
 *   (DP_DICT, (keys), (plans), memo)  (DP_SET, (plans), memo)
 *   (DP_CALL, callable, (plans)[, memo]): callable(*items) (namedtuples,
 *       torch.Size; views of tensors replayed on their real base)
 *   (DP_SLICE, start, stop, step)  (DP_MEMO, slot): built earlier this run
 *   (DP_METHOD, func plan, self plan)  (DP_ITER, (plans)): iter(items)
 *   (DP_CELL, index): the frame's closure cell `index` (the cell itself)
 * Effects: (DE_SETATTR, obj, name, value), (DE_DELATTR, obj, name),
 * (DE_LIST, list, (items)), (DE_DICT, dict, (keys), (values)),
 * (DE_GLOBAL, globals dict or None = the frame's, name, value), (DE_CELL, cell plan, value or NULL
 * = empty): all operands are plans, every operand of every effect is
 * evaluated before the first effect is applied (values as read by the trace). */
enum dyn_plan_tag {
  DP_CONST = 0, DP_OUT, DP_INPUT, DP_SRC, DP_TUPLE, DP_LIST, DP_DICT, DP_SET, DP_CALL,
  DP_SLICE, DP_MEMO, DP_METHOD, DP_ITER, DP_CELL,
  DE_SETATTR = 32, DE_DELATTR, DE_LIST, DE_DICT, DE_GLOBAL, DE_CELL,
};

/* Side effects: tx->side_effects holds the string-tagged tuples described
 * with dyn_call.c's conventions above ("setattr", "delattr", "list_replace",
 * "dict_replace", "global", "cell"); dyn_output.c turns them into the
 * runner's effect plans. Effects whose target was created during the trace
 * are skipped (the object is built from its final state). */

/* ======================================================================
 * Cache entries (dyn_hook.c) and conversion (dyn_eval.c)
 * ====================================================================== */
/** One compiled version of a code object (allocated with PyMem_Calloc by
 * dyn_output.c; dyn_entry_free releases the references and PyMem_Free's it). */
typedef struct dyn_entry {
  struct dyn_entry* next;
  DynGuardSet* guards;  /* strong */
  DynRunner* runner;    /* strong */
  PyObject* code;       /* transformed code (strong) or NULL for a full graph
                           (the runner's result IS the frame's return value) */
  PyObject* fn;         /* function of `code` for a graph break (strong) or NULL */
  PyObject* info;       /* dict for explain: graph code, break reason, op count (strong) */
  int64_t hits;
  /* set by the hook (dyn_hook.c) after the conversion: the compile options
   * are part of the cache key (an entry runs only for a config with an
   * equal config.cache_key: backend, mode, dynamic, fullgraph) */
  PyObject* config;     /* the config it was made for (strong; the fast identity check) */
  PyObject* config_key; /* that config's cache_key (strong, may be NULL) */
} dyn_entry;

/** Converts a frame (cache miss): traces it and returns a new entry
 * (caller owns it), or NULL with *skip = 1 when the frame should run as
 * plain Python (nothing to capture, unsupported construct at the start,
 * generator, ...; *why says why, static or tx-held string) - no exception
 * in that case; NULL with *skip = 0 and an exception on an internal error
 * (the hook then runs the frame plainly and warns once). */
dyn_entry* dyn_convert_frame(const dyn_frame_view* v, PyObject* config, PyObject* dynamic,
                             int* skip, const char** why);
/* `config`: the thread's capture config (attributes backend, mode, dynamic,
 * fullgraph, cache_size_limit, graphs_log). `dynamic`: dict {source repr
 * (str, as dyn_source_repr) -> frozenset of dims} of tensor dims to trace as
 * dynamic (automatic dynamic, computed by the hook from the sizes that made
 * earlier entries' guards fail), or NULL. With config.dynamic True every dim
 * >= 2 is dynamic; with False none. */
void dyn_entry_free(dyn_entry* e);
/** The exception class raised for a graph break under fullgraph=True
 * (ptc.dynamo.Unsupported, a RuntimeError subclass; borrowed, created on
 * first use, NULL + exception on failure). dyn_convert_frame returns NULL
 * with *skip = 0 and this exception set: the hook must let it propagate to
 * the caller (not run the frame plainly). dyn_module.c may export it. */
PyObject* dyn_unsupported_error(void);

/* ======================================================================
 * Glue between the files (declared here, owned as noted)
 * ====================================================================== */
/* dyn_output.c: builds an entry at the end of a trace. */
/** Full-graph entry: the root frame returns `retval`. New entry or NULL
 * (exception) / NULL with tx->brk.active (the return value cannot be rebuilt:
 * the caller restarts with a break at the RETURN). */
dyn_entry* dyn_output_return(dyn_tx* tx, DynVar* retval);
/** Graph-break entry at root instructions [index, end_index] of `code`
 * (the unsupported instruction group, e.g. KW_NAMES+PRECALL+CALL on 3.11):
 * stack[0..n_stack) and locals[0..n_locals) (NULL = unbound) are the state
 * before instruction `index`. The entry's runner returns (stack items...,
 * live locals...) and its transformed code restores them, runs the group
 * plainly and calls the resume function(s). NULL + exception, or NULL with
 * tx->brk.active when this break cannot be expressed (then the frame runs
 * plainly). */
dyn_entry* dyn_output_break(dyn_tx* tx, const dyn_code* code, int index, int end_index,
                            DynVar* const* stack, int n_stack, DynVar* const* locals,
                            int n_locals);

/* dyn_codegen.c: bytecode of graph breaks. */
/** Transformed function for a break in `code` at [index, end_index]:
 * f(state) where state = (stack items (n_stack)..., values of the locals
 * live_locals[0..n_live) (local indexes)...): restores the stack and those
 * locals, runs the instructions [index, end_index] of the original code
 * plainly, then returns resume(stack after the group..., live locals...)
 * for each way out of the group (fall-through and jump target).
 * `globals` become the function's globals. New function object or NULL
 * (exception), or NULL without exception when the group cannot be
 * expressed (generator, cell variables, free variables without a closure
 * (use dyn_codegen_break_closure)...; *why set). Groups inside try/with
 * blocks are supported (their handlers stay in effect). */
PyObject* dyn_codegen_break(const dyn_code* code, int index, int end_index, int n_stack,
                            const int* live_locals, int n_live, PyObject* globals,
                            const char** why);
/** dyn_codegen_break for a stack holding NULLs (the NULL of the calling
 * convention: DV_NULL items, e.g. below a callable at a CALL break):
 * stack_null[i] != 0 marks stack item i as NULL; its slot in `state` is
 * ignored (the runner puts None there). stack_null == NULL: no NULLs
 * (= dyn_codegen_break). State layout otherwise identical. */
PyObject* dyn_codegen_break_ex(const dyn_code* code, int index, int end_index, int n_stack,
                               const char* stack_null, const int* live_locals, int n_live,
                               PyObject* globals, const char** why);
/** dyn_codegen_break_ex for code with free variables (a nested function
 * reading its enclosing scope): `closure` is the function's __closure__
 * (tuple of cells, borrowed; NULL or None when the code has none); the
 * transformed and resume functions share these cells. Live local indexes of
 * free-variable slots are accepted and ignored (their state slot too).
 * Without a closure, code with free variables is refused. */
PyObject* dyn_codegen_break_closure(const dyn_code* code, int index, int end_index, int n_stack,
                                    const char* stack_null, const int* live_locals, int n_live,
                                    PyObject* globals, PyObject* closure, const char** why);

/** 1 when `code` is the code of a transformed function made by
 * dyn_codegen_break[_ex] (first local "__ptc_state"), else 0. The hook must
 * run such frames plainly (never convert them): tracing f(state) would break
 * at the same group again and generate transformed code of transformed code
 * without end. Resume functions (__resume_at_*) ARE captured. */
int dyn_codegen_is_transformed(PyCodeObject* code);

/* dyn_hook.c: for the evaluator/calls. */
/** 1 when frames of `code` are never captured by the hook's filename rules
 * (the standard library, torch, numpy, ptc itself - e.g. ptc.disable's and
 * ptc.compile's wrappers) or the code is marked skip, 0 otherwise, -1 on
 * error. The evaluator should not inline calls to such functions (break, or
 * call them for real where that is known to be safe). */
int dyn_code_skipped(PyCodeObject* code);

/* dyn_hook.c / dyn_module.c: module registration. */
/** Adds the capture's types and functions to module `m` (_C.dyn_*). 0 / -1. */
int ptcpy_dyn_init(PyObject* m);

/* dyn_bytecode.c: test entry points registered by ptcpy_dyn_init. */
/** _C._dyn_decode(code) -> list of (opname, arg, offset, target index, line,
 * exc_handler index, exc_depth, exc_lasti) (offsets in code units). */
PyObject* dyn_py_decode(PyObject* self, PyObject* code);
/** _C._dyn_roundtrip(code) -> a new code object assembled from the decoded
 * instructions (must behave like the original). */
PyObject* dyn_py_roundtrip(PyObject* self, PyObject* code);
/* dyn_codegen.c: test entry point (register as _C._dyn_test_break, METH_VARARGS):
 * _dyn_test_break(code, index, end_index, n_stack, live_locals (tuple of
 * local indexes), stack_null (tuple of 0/1 or None), globals[, closure]) ->
 * the transformed function f(state), or a str (the refusal reason). */
PyObject* dyn_py_test_break(PyObject* self, PyObject* args);

#endif /* PTC_DYN_H */
