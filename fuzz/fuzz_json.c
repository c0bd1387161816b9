/* fuzz_json.c - libFuzzer harness for the graph JSON loader: feeds arbitrary
 * bytes to ptc_graph_from_json with small limits; every accepted graph is
 * saved, reloaded and saved again, and the two texts must be identical
 * (a mismatch or an unexpected failure traps so the fuzzer reports it). */
#include <ptc/ptc.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static ptc_context* fuzz_ctx(void) {
  static ptc_context* ctx;
  if (!ctx && ptc_context_create(NULL, &ctx)) ctx = NULL;
  return ctx;
}

static ptc_graph* load(const char* text, size_t len) {
  ptc_json_load_options lo;
  ptc_json_load_options_init(&lo);
  lo.base_dir = "/nonexistent-ptc-fuzz-dir"; /* never read real side files */
  lo.max_bytes = 1 << 20;
  lo.max_nodes = 256;
  lo.max_depth = 16;
  lo.max_tensor_bytes = 1 << 16;
  ptc_graph* g = NULL;
  ptc_status s = ptc_graph_from_json(fuzz_ctx(), text, len, &lo, &g);
  if (s) {
    if (!ptc_status_message(s)[0]) __builtin_trap(); /* every error has a message */
    ptc_status_destroy(s);
    return NULL;
  }
  return g;
}

static char* save(const ptc_graph* g) {
  char* text = NULL;
  ptc_status s = ptc_graph_to_json(g, NULL, &text);
  if (s) {
    /* only allocation failure may stop a valid graph from saving */
    if (ptc_status_code(s) != PTC_CODE_RESOURCE_EXHAUSTED) __builtin_trap();
    ptc_status_destroy(s);
    return NULL;
  }
  return text;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!fuzz_ctx()) return 0;
  ptc_graph* g = load((const char*)data, size);
  if (!g) return 0;
  char* t1 = save(g);
  ptc_graph_destroy(g);
  if (!t1) return 0;
  ptc_graph* g2 = load(t1, strlen(t1));
  if (!g2) __builtin_trap(); /* a saved graph must load again */
  char* t2 = save(g2);
  ptc_graph_destroy(g2);
  if (t2 && strcmp(t1, t2) != 0) __builtin_trap(); /* save -> load -> save is stable */
  ptc_free(t1);
  ptc_free(t2);
  return 0;
}
