/* registry.c - the op registry: joins the family tables (one place per fact)
 * and answers lookups by name. */
#include "op.h"

#include <string.h>

typedef struct family {
  const op_def* ops;
  const size_t* count;
} family;

static const family families[] = {
    {ptc_ops_elementwise, &ptc_ops_elementwise_count},
    {ptc_ops_reduce, &ptc_ops_reduce_count},
    {ptc_ops_nn, &ptc_ops_nn_count},
    {ptc_ops_shape, &ptc_ops_shape_count},
};
#define N_FAMILIES (sizeof families / sizeof families[0])

size_t op_registry_count(void) {
  size_t n = 0;
  for (size_t f = 0; f < N_FAMILIES; f++) n += *families[f].count;
  return n;
}

const op_def* op_registry_at(size_t i) {
  for (size_t f = 0; f < N_FAMILIES; f++) {
    if (i < *families[f].count) return &families[f].ops[i];
    i -= *families[f].count;
  }
  return NULL;
}

const op_def* op_find(const char* name) {
  if (!name) return NULL;
  for (size_t f = 0; f < N_FAMILIES; f++)
    for (size_t i = 0; i < *families[f].count; i++)
      if (strcmp(families[f].ops[i].name, name) == 0) return &families[f].ops[i];
  return NULL;
}

size_t ptc_op_count(void) { return op_registry_count(); }

const char* ptc_op_name(size_t i) {
  const op_def* d = op_registry_at(i);
  return d ? d->name : NULL;
}
