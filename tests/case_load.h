/* case_load.h - shared loader of the PyTorch op cases in
 * tests/data/ops_<family>.json (written by tests/gen_cases.py): reads a case
 * file, builds a case's one-node graph through the public C API with its
 * input tensors and preallocated output tensors, and compares a result with
 * PyTorch's output within the case's tolerance. */
#ifndef PTC_TESTS_CASE_LOAD_H
#define PTC_TESTS_CASE_LOAD_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include <ptc/ptc.h>

/** One built case. Everything is owned by the case (case_free). */
typedef struct op_case {
  const char* name;        /* case name (points into the JSON) */
  const char* op;          /* op name */
  const char* check;       /* "values" (default), "shape" or "sorted_last" */
  double rtol, atol;       /* tolerance of the comparison with PyTorch */
  ptc_graph* graph;        /* inputs, the op's node, its outputs marked */
  ptc_tensor* inputs;      /* run inputs: the present inputs, in order */
  size_t n_inputs;
  ptc_tensor* outputs;     /* preallocated contiguous outputs of PyTorch's shapes */
  size_t n_outputs;
  const cJSON* expected;   /* PyTorch's outputs (the case's "outputs" array) */
  void* priv;              /* owned memory */
} op_case;

/** Parses a case file; prints "FAIL ..." and returns NULL when it cannot.
 * The caller frees the result with cJSON_Delete. */
cJSON* case_file_load(const char* path);
/** First case of a loaded file (iterate with ->next); NULL if none. */
const cJSON* case_first(const cJSON* root);
/** Name of case `c` ("?" when missing). */
const char* case_name(const cJSON* c);

/** Builds case `c` into *out in `ctx`. On error (the op's build error for
 * cases that expect one, a malformed case, RESOURCE_EXHAUSTED) *out is
 * freed already and the status is returned. */
ptc_status case_build(ptc_context* ctx, const cJSON* c, op_case* out);
/** Frees a built case (accepts a zeroed or already freed one). */
void case_free(op_case* c);

/** Compares result tensor `got` of output k with PyTorch's output (dtype,
 * shape, and values within rtol/atol per the check mode); prints the first
 * mismatch as "FAIL <case>: ...". */
bool case_compare(const op_case* c, size_t k, const ptc_tensor* got);

#endif /* PTC_TESTS_CASE_LOAD_H */
