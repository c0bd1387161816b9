/* dyn_eval_priv.h - private state of one trace shared by dyn_eval*.c and
 * dyn_var.c (the symbolic evaluator and its variable builder). Not part of
 * the dyn.h contract: other files only see the embedded dyn_tx. */
#ifndef PTC_DYN_EVAL_PRIV_H
#define PTC_DYN_EVAL_PRIV_H

#include "dyn.h"

/** Status of an evaluator step (handlers return these). */
enum { S_ERR = -1, S_OK = 0, S_BREAK = 2, S_RET = 3, S_DONE = 4 };

/** One symbolic frame (the root frame or an inlined call). */
struct dyn_eframe {
  struct dyn_eframe* parent;
  PyCodeObject* code;     /* borrowed (held by dc) */
  const dyn_code* dc;     /* decoded instructions (owned by the trace's code cache) */
  PyObject* globals;      /* borrowed (held by the function / the frame) */
  PyObject* builtins;     /* borrowed */
  PyObject* closure;      /* tuple of DV_CELL trackers for COPY_FREE_VARS (strong) or NULL */
  int is_root;
  DynVar** locals;        /* co_nlocalsplus slots, strong or NULL (unbound) */
  int n_locals;
  DynVar** stack;         /* strong */
  int sp, cap;
  PyObject* kwnames;      /* pending KW_NAMES tuple (borrowed from co_consts) */
  int ip;                 /* instruction being executed */
  DynVar* retval;         /* set by RETURN in an inlined frame (strong) */
  PyObject* gen_items;    /* generator expression run eagerly: the values it
                             yielded (list of DynVar, strong), else NULL */
};

/** A decoded code object cached for the trace (inlined functions). */
typedef struct dyn_code_slot {
  PyCodeObject* code; /* strong (also held by dc.code) */
  dyn_code dc;
} dyn_code_slot;

/** One trace. `tx` must stay the first member: dyn_tx* <-> dyn_evtx*. */
typedef struct dyn_evtx {
  dyn_tx tx;
  dyn_eframe* cur;         /* innermost symbolic frame (for break locations) */
  dyn_eframe* root;
  int break_start;         /* root instruction group where this trace must emit the
                              remembered break (-1: none) */
  int break_end;
  int cur_start, cur_end;  /* root instruction group being executed */
  long steps;              /* instructions interpreted (all frames) */
  PyObject* cells;         /* dict id(real cell) -> DV_CELL tracker */
  PyObject* globals_w;     /* dict (id(globals), name) -> DynVar written by STORE_GLOBAL */
  PyObject* null_var;      /* the DV_NULL tracker */
  PyObject* supers;        /* dict id(super tracker) -> (class, self tracker) */
  dyn_code_slot** codes;   /* each slot allocated separately (frames point into them) */
  int n_codes, cap_codes;
  /* outcome of the trace */
  dyn_entry* entry;        /* produced entry (owned until handed out) */
  const char* skip_why;    /* set when the frame should run plainly */
  char why_buf[640];
  char first_reason[640];  /* the break being emitted, with its location */
  int no_ops_skip;         /* skip because nothing was captured */
} dyn_evtx;

static inline dyn_evtx* dyn_ev(dyn_tx* tx) { return (dyn_evtx*)tx; }

/** True (1) when `value` is a torch tensor type object we trace (exact
 * torch.Tensor or torch.nn.Parameter); 0 otherwise; -1 on error. */
int dyn_var_is_plain_tensor(PyObject* value);
/** Guards on global state every trace depends on (torch's default dtype). */
int dyn_var_global_guards(dyn_tx* tx);
/** Cached torch objects (borrowed; NULL + exception when torch fails to import). */
PyObject* dyn_var_torch_attr(const char* dotted);

/* dyn_eval.c */
int ev_push(dyn_eframe* f, DynVar* v); /* steals v; -1 on overflow / NULL v */
DynVar* ev_pop(dyn_eframe* f);         /* new reference */
DynVar* ev_const(PyObject* c);
DynVar* ev_real_cell(dyn_evtx* E, PyObject* cell, DynSource* contents, Py_ssize_t index);
int ev_with_exit(dyn_evtx* E, DynVar* ex, DynVar** out);
/** One instruction; *next preset to ip + 1. Returns S_*. */
int ev_step(dyn_evtx* E, dyn_eframe* f, const dyn_insn* in, int* next);

int ev_cell_contents(dyn_evtx* E, DynVar* c, DynVar** out); /* *out borrowed */

/* dyn_eval_super.c: super() (zero-argument in a traced method, two-argument,
 * 3.12's LOAD_SUPER_ATTR): a tracker only attribute reads go through. */
/** super(cls, self) from trackers `fn` (must be the builtin super), cls, self. */
int ev_make_super(dyn_evtx* E, DynVar* fn, DynVar* cls, DynVar* self, DynVar** out);
/** Zero-argument super() in frame f (its __class__ cell and first argument). */
int ev_super_noargs(dyn_evtx* E, dyn_eframe* f, DynVar** out);
int ev_is_super(dyn_evtx* E, DynVar* v);
/** getattr(super tracker, name): a plain function found after cls in
 * type(self).__mro__ becomes a method bound to self; anything else breaks. */
int ev_super_attr(dyn_evtx* E, DynVar* sup, PyObject* name, DynVar** out);

/* dyn_eval_call.c */
int ev_op_call(dyn_evtx* E, dyn_eframe* f, int argc);
int ev_op_call_ex(dyn_evtx* E, dyn_eframe* f, int flags);
/** Calls fn(args[0..nargs): ALL values, the kwnames' ones last) in frame f: inlines user
 * functions, else dyn_call. *out new reference on S_OK. */
int ev_call(dyn_evtx* E, dyn_eframe* f, DynVar* fn, DynVar* const* args, Py_ssize_t nargs,
            PyObject* kwnames, DynVar** out);
/** RETURN_VALUE of frame f with value v (stolen). */
int ev_return(dyn_evtx* E, dyn_eframe* f, DynVar* v);

#endif /* PTC_DYN_EVAL_PRIV_H */
