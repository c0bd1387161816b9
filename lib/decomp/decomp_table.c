/* decomp_table.c - the decomposition table: op name -> function that emits
 * the op's replacement from primitive ops (one row per op; the functions
 * live in the family files decomp_<family>.c). */
#include "decomp.h"
#include "decomp_internal.h"

#include <string.h>

static const decomp_entry table[] = {
    {"softmax", decomp_softmax},
    {"log_softmax", decomp_log_softmax},
    {"logsumexp", decomp_logsumexp},
    {"mean", decomp_mean},
    {"var", decomp_var},
    {"std", decomp_std},
    {"var_mean", decomp_var_mean},
    {"layer_norm", decomp_layer_norm},
    {"rms_norm", decomp_rms_norm},
    {"group_norm", decomp_group_norm},
    {"batch_norm", decomp_batch_norm},
    {"gelu", decomp_gelu},
    {"silu", decomp_silu},
    {"clamp", decomp_clamp},
    {"masked_fill", decomp_masked_fill},
    {"dropout", decomp_dropout},
    {"scaled_dot_product_attention", decomp_sdpa},
    {"addmm", decomp_addmm},
    {"baddbmm", decomp_baddbmm},
    {"flatten", decomp_flatten},
    {"unflatten", decomp_unflatten},
};

#define TABLE_LEN (sizeof table / sizeof table[0])

decomp_fn decomp_find(const char* op) {
  for (size_t i = 0; op && i < TABLE_LEN; i++)
    if (strcmp(table[i].op, op) == 0) return table[i].fn;
  return NULL;
}

bool decomp_has(const char* op) { return decomp_find(op) != NULL; }
size_t decomp_count(void) { return TABLE_LEN; }
const char* decomp_op_at(size_t i) { return i < TABLE_LEN ? table[i].op : NULL; }
