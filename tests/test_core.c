/* test_core.c - unit tests of the core layer: status objects, contexts with
 * allocator and log hooks, versions, dtypes and ATen type promotion, half and
 * bfloat16 conversions, base64, SHA-256, strings, arrays, arenas, hashing,
 * and the frozen layout of the public structs (ptc_tensor == DLTensor). */
#include "lib/core/core.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- harness: CHECK / CHECK_OK / CHECK_ERR from check.h, plus strings -------- */
#define CHECK_STR(a, b)                                                            \
  do {                                                                             \
    const char* ca_ = (a);                                                         \
    const char* cb_ = (b);                                                         \
    check_total++;                                                                 \
    if (!ca_ || !cb_ || strcmp(ca_, cb_) != 0) {                                   \
      check_failures++;                                                            \
      printf("FAIL %s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, \
             ca_ ? ca_ : "(null)", cb_ ? cb_ : "(null)");                          \
    }                                                                              \
  } while (0)

/* ---- frozen public layouts (compile-time) ----------------------------------- */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(offsetof(ptc_tensor, data) == 0, "DLTensor.data");
_Static_assert(offsetof(ptc_tensor, device) == 8, "DLTensor.device");
_Static_assert(offsetof(ptc_tensor, ndim) == 16, "DLTensor.ndim");
_Static_assert(offsetof(ptc_tensor, dtype) == 20, "DLTensor.dtype");
_Static_assert(offsetof(ptc_tensor, shape) == 24, "DLTensor.shape");
_Static_assert(offsetof(ptc_tensor, strides) == 32, "DLTensor.strides");
_Static_assert(offsetof(ptc_tensor, byte_offset) == 40, "DLTensor.byte_offset");
_Static_assert(sizeof(ptc_tensor) == 48, "sizeof DLTensor");
_Static_assert(sizeof(ptc_attr) == 72, "ptc_attr is frozen in PTC_1.0");
_Static_assert(offsetof(ptc_attr, f) == 24, "ptc_attr.f");
_Static_assert(offsetof(ptc_attr, s) == 64, "ptc_attr.s");
_Static_assert(sizeof(ptc_dim) == 16, "ptc_dim");
#endif
_Static_assert(sizeof(ptc_device) == 8, "DLDevice");
_Static_assert(offsetof(ptc_device, device_id) == 4, "DLDevice.device_id");
_Static_assert(sizeof(ptc_dl_dtype) == 4, "DLDataType");
_Static_assert(offsetof(ptc_dl_dtype, bits) == 1, "DLDataType.bits");
_Static_assert(offsetof(ptc_dl_dtype, lanes) == 2, "DLDataType.lanes");
_Static_assert(offsetof(ptc_context_options, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(ptc_compile_options, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(ptc_run_options, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(ptc_symbol_options, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(ptc_json_load_options, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(ptc_json_save_options, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(ptc_value_info, struct_size) == 0, "struct_size first");
_Static_assert(PTC_DTYPE_COUNT == 10, "op set v1 has 10 dtypes");

/* ---- status ------------------------------------------------------------------ */
static void test_status(void) {
  CHECK(ptc_status_code(NULL) == PTC_CODE_OK);
  CHECK_STR(ptc_status_message(NULL), "");
  CHECK(ptc_status_detail(NULL, NULL) == NULL);
  ptc_status_destroy(NULL);

  ptc_status s = ptc_status_new(PTC_CODE_INVALID_ARGUMENT, "bad %s %d", "thing", 42);
  CHECK(s != NULL);
  CHECK(ptc_status_code(s) == PTC_CODE_INVALID_ARGUMENT);
  CHECK_STR(ptc_status_message(s), "bad thing 42");
  CHECK(ptc_status_detail(s, "compiler_log") == NULL);
  CHECK(ptc_status_add_detail(s, "compiler_log", "line 1\nline 2") == s);
  CHECK(ptc_status_add_detail(s, "other", "x") == s);
  CHECK_STR(ptc_status_detail(s, "compiler_log"), "line 1\nline 2");
  CHECK_STR(ptc_status_detail(s, "other"), "x");
  CHECK_STR(ptc_status_detail(s, NULL), "line 1\nline 2");
  CHECK(ptc_status_detail(s, "missing") == NULL);
  s = ptc_status_prefix(s, "node %d", 7);
  CHECK_STR(ptc_status_message(s), "node 7: bad thing 42");
  CHECK(ptc_status_code(s) == PTC_CODE_INVALID_ARGUMENT);
  CHECK_STR(ptc_status_detail(s, "other"), "x");
  ptc_status_destroy(s);

  /* a status is never OK: code 0 becomes UNKNOWN */
  s = ptc_status_new(PTC_CODE_OK, "odd");
  CHECK(ptc_status_code(s) == PTC_CODE_UNKNOWN);
  ptc_status_destroy(s);
  CHECK(ptc_status_prefix(NULL, "x") == NULL);

  /* a long message is kept whole */
  char big[5000];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = 0;
  s = ptc_status_new(PTC_CODE_INTERNAL, "%s", big);
  CHECK(strlen(ptc_status_message(s)) == sizeof big - 1);
  ptc_status_destroy(s);

  /* the out-of-memory status is static: destroy, details and prefix are no-ops */
  ptc_status oom = ptc_status_oom();
  CHECK(oom != NULL);
  CHECK(oom == ptc_status_oom());
  CHECK(ptc_status_code(oom) == PTC_CODE_RESOURCE_EXHAUSTED);
  CHECK(strlen(ptc_status_message(oom)) > 0);
  CHECK(ptc_status_add_detail(oom, "k", "v") == oom);
  CHECK(ptc_status_detail(oom, "k") == NULL);
  CHECK(ptc_status_prefix(oom, "ctx") == oom);
  ptc_status_destroy(oom);
  ptc_status_destroy(oom);
  CHECK(ptc_status_code(ptc_status_oom()) == PTC_CODE_RESOURCE_EXHAUSTED);

  /* code names */
  CHECK_STR(ptc_code_name(PTC_CODE_OK), "OK");
  CHECK_STR(ptc_code_name(PTC_CODE_INVALID_ARGUMENT), "INVALID_ARGUMENT");
  CHECK_STR(ptc_code_name(PTC_CODE_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  CHECK_STR(ptc_code_name(PTC_CODE_UNAUTHENTICATED), "UNAUTHENTICATED");
  CHECK_STR(ptc_code_name(-1), "UNKNOWN_CODE");
  CHECK_STR(ptc_code_name(17), "UNKNOWN_CODE");
  for (int32_t a = 0; a <= 16; a++)
    for (int32_t b = a + 1; b <= 16; b++) CHECK(strcmp(ptc_code_name(a), ptc_code_name(b)) != 0);
}

/* ---- context: options, allocator and log hooks --------------------------------- */
typedef struct counting_alloc {
  int allocs, frees, mismatches;
  size_t live;
  int fail; /* nonzero: every alloc fails */
  void* ptrs[64];
  size_t sizes[64], aligns[64];
} counting_alloc;

static void* count_alloc(void* user, size_t size, size_t align) {
  counting_alloc* c = user;
  if (c->fail) return NULL;
  if (c->allocs >= 64) return NULL;
  size_t rounded = (size + align - 1) / align * align;
  void* p = aligned_alloc(align, rounded ? rounded : align);
  if (!p) return NULL;
  c->ptrs[c->allocs] = p;
  c->sizes[c->allocs] = size;
  c->aligns[c->allocs] = align;
  c->allocs++;
  c->live += size;
  return p;
}

static void count_free(void* user, void* p, size_t size, size_t align) {
  counting_alloc* c = user;
  int found = 0;
  for (int i = 0; i < c->allocs; i++)
    if (c->ptrs[i] == p) {
      found = 1;
      if (c->sizes[i] != size || c->aligns[i] != align) c->mismatches++;
      c->ptrs[i] = NULL;
    }
  if (!found) c->mismatches++;
  c->frees++;
  c->live -= size;
  free(p);
}

typedef struct log_capture {
  int calls;
  int32_t last_level;
  char last[2048];
} log_capture;

static void capture_log(void* user, int32_t level, const char* message) {
  log_capture* l = user;
  l->calls++;
  l->last_level = level;
  snprintf(l->last, sizeof l->last, "%s", message);
}

static void test_context_options(void) {
  ptc_context* ctx = NULL;
  CHECK_ERR(ptc_context_create(NULL, NULL), PTC_CODE_INVALID_ARGUMENT, "out");

  ptc_context_options o;
  ptc_context_options_init(NULL); /* no crash */
  ptc_context_options_init(&o);
  CHECK(o.struct_size == sizeof o);
  CHECK(o.allocator.alloc == NULL && o.allocator.free == NULL);
  CHECK(o.log_fn == NULL);
  CHECK(o.log_level == PTC_LOG_WARN);

  /* defaults */
  CHECK_OK(ptc_context_create(NULL, &ctx));
  CHECK(ctx != NULL);
  CHECK(ptc_context_retain(ctx) == ctx);
  ptc_context_release(ctx);
  ptc_context_release(ctx);
  CHECK(ptc_context_retain(NULL) == NULL);
  ptc_context_release(NULL);

  /* struct_size too small (an uninitialised or truncated struct) */
  ctx = NULL;
  o.struct_size = 4;
  CHECK_ERR(ptc_context_create(&o, &ctx), PTC_CODE_INVALID_ARGUMENT, "struct_size");
  o.struct_size = 0;
  CHECK_ERR(ptc_context_create(&o, &ctx), PTC_CODE_INVALID_ARGUMENT, "struct_size");
  CHECK(ctx == NULL); /* out-parameter untouched on error */

  /* alloc without free, free without alloc */
  counting_alloc ca;
  memset(&ca, 0, sizeof ca);
  ptc_context_options_init(&o);
  o.allocator.alloc = count_alloc;
  o.allocator.user = &ca;
  CHECK_ERR(ptc_context_create(&o, &ctx), PTC_CODE_INVALID_ARGUMENT, "alloc");
  o.allocator.alloc = NULL;
  o.allocator.free = count_free;
  CHECK_ERR(ptc_context_create(&o, &ctx), PTC_CODE_INVALID_ARGUMENT, "alloc");
  CHECK(ca.allocs == 0 && ca.frees == 0);

  /* bad log level */
  ptc_context_options_init(&o);
  o.log_level = 9;
  CHECK_ERR(ptc_context_create(&o, &ctx), PTC_CODE_INVALID_ARGUMENT, "log_level");
  o.log_level = -1;
  CHECK_ERR(ptc_context_create(&o, &ctx), PTC_CODE_INVALID_ARGUMENT, "log_level");
  CHECK(ctx == NULL);

  /* a struct from a newer header (bigger struct_size) is accepted */
  struct {
    ptc_context_options o;
    uint64_t future_fields[4];
  } newer;
  memset(&newer, 0, sizeof newer);
  ptc_context_options_init(&newer.o);
  newer.o.struct_size = sizeof newer;
  CHECK(ptc_context_create(&newer.o, &ctx) == PTC_OK);
  ptc_context_release(ctx);
  ctx = NULL;

  /* an allocator that always fails: RESOURCE_EXHAUSTED, not a crash */
  memset(&ca, 0, sizeof ca);
  ca.fail = 1;
  ptc_context_options_init(&o);
  o.allocator.alloc = count_alloc;
  o.allocator.free = count_free;
  o.allocator.user = &ca;
  CHECK_ERR(ptc_context_create(&o, &ctx), PTC_CODE_RESOURCE_EXHAUSTED, "");
  CHECK(ctx == NULL);
}

static void test_context_hooks(void) {
  counting_alloc ca;
  memset(&ca, 0, sizeof ca);
  log_capture lc;
  memset(&lc, 0, sizeof lc);
  ptc_context_options o;
  ptc_context_options_init(&o);
  o.allocator.alloc = count_alloc;
  o.allocator.free = count_free;
  o.allocator.user = &ca;
  o.log_fn = capture_log;
  o.log_user = &lc;
  ptc_context* ctx = NULL;
  CHECK(ptc_context_create(&o, &ctx) == PTC_OK);
  if (!ctx) return;
  CHECK(ca.allocs == 1); /* the context itself comes from the hook */

  /* allocation helpers go through the hook with the caller's size/alignment */
  void* p = ptc_alloc_ctx(ctx, 100, 64);
  CHECK(p != NULL && ((uintptr_t)p & 63) == 0);
  CHECK(ca.allocs == 2 && ca.live >= 100);
  unsigned char* z = ptc_calloc_ctx(ctx, 33);
  CHECK(z != NULL);
  if (z) {
    int all_zero = 1;
    for (int i = 0; i < 33; i++) all_zero &= z[i] == 0;
    CHECK(all_zero);
  }
  ptc_free_ctx(ctx, z, 33, 16);
  ptc_free_ctx(ctx, p, 100, 64);
  ptc_free_ctx(ctx, NULL, 0, 16); /* no-op */
  CHECK(ca.frees == 2);

  /* log hook: level filter (default WARN), formatting, no trailing newline */
  ptc_log(ctx, PTC_LOG_ERROR, "error %d", 1);
  CHECK(lc.calls == 1 && lc.last_level == PTC_LOG_ERROR);
  CHECK_STR(lc.last, "error 1");
  ptc_log(ctx, PTC_LOG_WARN, "warn %s", "x");
  CHECK(lc.calls == 2);
  CHECK_STR(lc.last, "warn x");
  ptc_log(ctx, PTC_LOG_INFO, "info");
  ptc_log(ctx, PTC_LOG_DEBUG, "debug");
  CHECK(lc.calls == 2);
  ptc_log(NULL, PTC_LOG_ERROR, "nobody listens"); /* no-op */
  CHECK(lc.calls == 2);
  char big[3000];
  memset(big, 'b', sizeof big - 1);
  big[sizeof big - 1] = 0;
  ptc_log(ctx, PTC_LOG_ERROR, "%s", big); /* long lines are truncated, not overflowed */
  CHECK(lc.calls == 3 && strlen(lc.last) > 0 && strlen(lc.last) < sizeof big);

  /* the context outlives its first owner while retained */
  CHECK(ptc_context_retain(ctx) == ctx);
  ptc_context_release(ctx);
  CHECK(ca.frees == 2);
  ptc_context_release(ctx);
  CHECK(ca.allocs == 3 && ca.frees == 3);
  CHECK(ca.live == 0);
  CHECK(ca.mismatches == 0);

  /* a chattier level delivers debug messages */
  memset(&lc, 0, sizeof lc);
  ptc_context_options_init(&o);
  o.log_fn = capture_log;
  o.log_user = &lc;
  o.log_level = PTC_LOG_DEBUG;
  ctx = NULL;
  CHECK(ptc_context_create(&o, &ctx) == PTC_OK);
  ptc_log(ctx, PTC_LOG_DEBUG, "dbg");
  CHECK(lc.calls == 1 && lc.last_level == PTC_LOG_DEBUG);
  ptc_context_release(ctx);
}

/* ---- versions ------------------------------------------------------------------ */
static void test_version(void) {
  CHECK(ptc_version_number() == PTC_VERSION_NUMBER);
  CHECK(PTC_VERSION_NUMBER ==
        PTC_VERSION_MAJOR * 10000 + PTC_VERSION_MINOR * 100 + PTC_VERSION_PATCH);
  CHECK_STR(ptc_version_string(), PTC_VERSION_STRING);
  char buf[32];
  snprintf(buf, sizeof buf, "%d.%d.%d", PTC_VERSION_MAJOR, PTC_VERSION_MINOR,
           PTC_VERSION_PATCH);
  CHECK_STR(buf, PTC_VERSION_STRING);
}

/* ---- dtypes and promotion ---------------------------------------------------------- */
static void test_dtypes(void) {
  static const struct {
    int32_t dt;
    const char* name;
    size_t size;
  } tab[] = {{PTC_F32, "f32", 4}, {PTC_F64, "f64", 8}, {PTC_F16, "f16", 2},
             {PTC_BF16, "bf16", 2}, {PTC_I8, "i8", 1}, {PTC_I16, "i16", 2},
             {PTC_I32, "i32", 4}, {PTC_I64, "i64", 8}, {PTC_U8, "u8", 1},
             {PTC_BOOL, "bool", 1}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
    CHECK_STR(ptc_dtype_name(tab[i].dt), tab[i].name);
    CHECK(ptc_dtype_size(tab[i].dt) == tab[i].size);
    CHECK(ptc_dtype_from_name(tab[i].name) == tab[i].dt);
    CHECK(ptc_dtype_valid(tab[i].dt));
  }
  CHECK(ptc_dtype_name(-1) == NULL && ptc_dtype_name(PTC_DTYPE_COUNT) == NULL);
  CHECK(ptc_dtype_size(-1) == 0 && ptc_dtype_size(PTC_DTYPE_COUNT) == 0);
  CHECK(!ptc_dtype_valid(PTC_DTYPE_COUNT) && !ptc_dtype_valid(-5));

  static const struct {
    const char* name;
    int32_t dt;
  } alias[] = {{"float32", PTC_F32},        {"torch.float32", PTC_F32}, {"float", PTC_F32},
               {"double", PTC_F64},         {"torch.float64", PTC_F64}, {"half", PTC_F16},
               {"float16", PTC_F16},        {"bfloat16", PTC_BF16},
               {"torch.bfloat16", PTC_BF16}, {"int8", PTC_I8},          {"short", PTC_I16},
               {"int", PTC_I32},            {"int32", PTC_I32},         {"long", PTC_I64},
               {"torch.int64", PTC_I64},    {"uint8", PTC_U8},          {"torch.uint8", PTC_U8},
               {"bool", PTC_BOOL},          {"torch.bool", PTC_BOOL},   {"torch.f32", PTC_F32}};
  for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
    CHECK(ptc_dtype_from_name(alias[i].name) == alias[i].dt);
  static const char* const bad[] = {"", "torch.", "f128", "Float32", "int128", "float32 ",
                                    "complex64", "torch.torch.float32"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(ptc_dtype_from_name(bad[i]) == -1);
  CHECK(ptc_dtype_from_name(NULL) == -1);

  /* categories */
  CHECK(ptc_dtype_is_float(PTC_BF16) && ptc_dtype_is_float(PTC_F64));
  CHECK(!ptc_dtype_is_float(PTC_I32) && !ptc_dtype_is_float(PTC_BOOL));
  CHECK(ptc_dtype_is_int(PTC_U8) && !ptc_dtype_is_int(PTC_BOOL) && !ptc_dtype_is_int(PTC_F16));
  CHECK(ptc_dtype_is_signed(PTC_I8) && !ptc_dtype_is_signed(PTC_U8));
  CHECK(ptc_dtype_category(PTC_BOOL) == 0 && ptc_dtype_category(PTC_I64) == 1 &&
        ptc_dtype_category(PTC_F16) == 2 && ptc_dtype_category(99) == -1);

  /* DLPack dtypes: code 0 int, 1 uint, 2 float, 4 bfloat, 6 bool */
  static const struct {
    int32_t dt;
    uint8_t code, bits;
  } dl[] = {{PTC_F32, 2, 32}, {PTC_F64, 2, 64}, {PTC_F16, 2, 16}, {PTC_BF16, 4, 16},
            {PTC_I8, 0, 8},   {PTC_I16, 0, 16}, {PTC_I32, 0, 32}, {PTC_I64, 0, 64},
            {PTC_U8, 1, 8},   {PTC_BOOL, 6, 8}};
  for (size_t i = 0; i < sizeof dl / sizeof dl[0]; i++) {
    ptc_dl_dtype d = ptc_dtype_to_dl(dl[i].dt);
    CHECK(d.code == dl[i].code && d.bits == dl[i].bits && d.lanes == 1);
    CHECK(ptc_dtype_from_dl(d) == dl[i].dt);
    d.lanes = 4;
    CHECK(ptc_dtype_from_dl(d) == -1);
  }
  ptc_dl_dtype inv = ptc_dtype_to_dl(PTC_DTYPE_COUNT);
  CHECK(inv.code == 0 && inv.bits == 0 && inv.lanes == 0);
  ptc_dl_dtype odd = {1, 32, 1}; /* uint32: not a ptc dtype */
  CHECK(ptc_dtype_from_dl(odd) == -1);
  ptc_dl_dtype cplx = {5, 64, 1};
  CHECK(ptc_dtype_from_dl(cplx) == -1);
}

/* torch.promote_types over (f32 f64 f16 bf16 i8 i16 i32 i64 u8 bool)^2, as
 * printed by PyTorch 1.13 (identical in 2.x for these dtypes). */
static const int32_t aten_promote[PTC_DTYPE_COUNT][PTC_DTYPE_COUNT] = {
    {PTC_F32, PTC_F64, PTC_F32, PTC_F32, PTC_F32, PTC_F32, PTC_F32, PTC_F32, PTC_F32, PTC_F32},
    {PTC_F64, PTC_F64, PTC_F64, PTC_F64, PTC_F64, PTC_F64, PTC_F64, PTC_F64, PTC_F64, PTC_F64},
    {PTC_F32, PTC_F64, PTC_F16, PTC_F32, PTC_F16, PTC_F16, PTC_F16, PTC_F16, PTC_F16, PTC_F16},
    {PTC_F32, PTC_F64, PTC_F32, PTC_BF16, PTC_BF16, PTC_BF16, PTC_BF16, PTC_BF16, PTC_BF16,
     PTC_BF16},
    {PTC_F32, PTC_F64, PTC_F16, PTC_BF16, PTC_I8, PTC_I16, PTC_I32, PTC_I64, PTC_I16, PTC_I8},
    {PTC_F32, PTC_F64, PTC_F16, PTC_BF16, PTC_I16, PTC_I16, PTC_I32, PTC_I64, PTC_I16, PTC_I16},
    {PTC_F32, PTC_F64, PTC_F16, PTC_BF16, PTC_I32, PTC_I32, PTC_I32, PTC_I64, PTC_I32, PTC_I32},
    {PTC_F32, PTC_F64, PTC_F16, PTC_BF16, PTC_I64, PTC_I64, PTC_I64, PTC_I64, PTC_I64, PTC_I64},
    {PTC_F32, PTC_F64, PTC_F16, PTC_BF16, PTC_I16, PTC_I16, PTC_I32, PTC_I64, PTC_U8, PTC_U8},
    {PTC_F32, PTC_F64, PTC_F16, PTC_BF16, PTC_I8, PTC_I16, PTC_I32, PTC_I64, PTC_U8, PTC_BOOL},
};

static void test_promotion(void) {
  for (int32_t a = 0; a < PTC_DTYPE_COUNT; a++)
    for (int32_t b = 0; b < PTC_DTYPE_COUNT; b++) {
      int32_t got = ptc_promote_types(a, b);
      check_total++;
      if (got != aten_promote[a][b]) {
        check_failures++;
        printf("FAIL promote_types(%s, %s) = %s, ATen says %s\n", ptc_dtype_name(a),
                ptc_dtype_name(b), ptc_dtype_name(got), ptc_dtype_name(aten_promote[a][b]));
      }
    }
  /* the classic surprises, spelled out */
  CHECK(ptc_promote_types(PTC_U8, PTC_I8) == PTC_I16);
  CHECK(ptc_promote_types(PTC_F16, PTC_BF16) == PTC_F32);
  CHECK(ptc_promote_types(PTC_I32, PTC_F16) == PTC_F16);
  CHECK(ptc_promote_types(PTC_BOOL, PTC_I8) == PTC_I8);
  CHECK(ptc_promote_types(PTC_I64, PTC_BF16) == PTC_BF16);
  CHECK(ptc_promote_types(PTC_BOOL, PTC_U8) == PTC_U8);
}

/* ---- half / bfloat16 --------------------------------------------------------------- */
static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static int f16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
static int bf16_is_nan(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0; }

/* Every 16-bit pattern survives the trip through f32 (NaNs stay NaN with
 * their sign). */
static void test_half_roundtrip(void) {
  int bad16 = 0, badbf = 0;
  for (uint32_t i = 0; i < 65536; i++) {
    uint16_t h = (uint16_t)i;
    float f = ptc_f16_to_f32(h);
    uint16_t back = ptc_f32_to_f16(f);
    if (f16_is_nan(h)) {
      if (!isnan(f) || !f16_is_nan(back) || (back & 0x8000) != (h & 0x8000)) bad16++;
    } else if (back != h) {
      bad16++;
    }
    float g = ptc_bf16_to_f32(h);
    uint16_t bback = ptc_f32_to_bf16(g);
    if (bf16_is_nan(h)) {
      if (!isnan(g) || !bf16_is_nan(bback) || (bback & 0x8000) != (h & 0x8000)) badbf++;
    } else if (bback != h) {
      badbf++;
    }
  }
  CHECK(bad16 == 0);
  CHECK(badbf == 0);
}

static void test_half_values(void) {
  /* exact values */
  CHECK(ptc_f32_to_f16(1.0f) == 0x3c00);
  CHECK(ptc_f32_to_f16(-2.0f) == 0xc000);
  CHECK(ptc_f32_to_f16(0.0f) == 0x0000);
  CHECK(ptc_f32_to_f16(-0.0f) == 0x8000);
  CHECK(ptc_f32_to_f16(65504.0f) == 0x7bff);
  CHECK(ptc_f16_to_f32(0x7bff) == 65504.0f);
  CHECK(ptc_f16_to_f32(0x3555) == 0.333251953125f);
  /* ties to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 */
  CHECK(ptc_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);
  CHECK(ptc_f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);
  CHECK(ptc_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);
  /* overflow: 65519 rounds down, 65520 (the tie) rounds to inf */
  CHECK(ptc_f32_to_f16(65519.0f) == 0x7bff);
  CHECK(ptc_f32_to_f16(65520.0f) == 0x7c00);
  CHECK(ptc_f32_to_f16(-1e10f) == 0xfc00);
  /* inf and nan */
  CHECK(ptc_f32_to_f16(INFINITY) == 0x7c00);
  CHECK(ptc_f32_to_f16(-INFINITY) == 0xfc00);
  CHECK(f16_is_nan(ptc_f32_to_f16(NAN)));
  CHECK(isinf(ptc_f16_to_f32(0x7c00)) && ptc_f16_to_f32(0xfc00) < 0);
  CHECK(isnan(ptc_f16_to_f32(0x7e00)));
  /* subnormals: 2^-24 is the smallest; 2^-25 ties to 0; 3*2^-25 ties to 2*2^-24 */
  CHECK(ptc_f16_to_f32(0x0001) == 0x1p-24f);
  CHECK(ptc_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
  CHECK(ptc_f16_to_f32(0x8001) == -0x1p-24f);
  CHECK(ptc_f32_to_f16(0x1p-24f) == 0x0001);
  CHECK(ptc_f32_to_f16(0x1p-25f) == 0x0000);
  CHECK(ptc_f32_to_f16(0x1p-25f + 0x1p-35f) == 0x0001);
  CHECK(ptc_f32_to_f16(3 * 0x1p-25f) == 0x0002);
  CHECK(ptc_f32_to_f16(-0x1p-24f) == 0x8001);
  CHECK(ptc_f32_to_f16(1e-10f) == 0x0000);
  CHECK(ptc_f32_to_f16(0x1p-14f) == 0x0400);            /* smallest normal */
  CHECK(ptc_f32_to_f16(0x1p-14f - 0x1p-26f) == 0x0400); /* rounds up into it */

  /* bfloat16 */
  CHECK(ptc_f32_to_bf16(1.0f) == 0x3f80);
  CHECK(ptc_bf16_to_f32(0x3f80) == 1.0f);
  CHECK(ptc_f32_to_bf16(-0.0f) == 0x8000);
  CHECK(ptc_f32_to_bf16(float_of(0x3f808000u)) == 0x3f80); /* tie -> even */
  CHECK(ptc_f32_to_bf16(float_of(0x3f818000u)) == 0x3f82); /* tie -> even */
  CHECK(ptc_f32_to_bf16(float_of(0x3f808001u)) == 0x3f81);
  CHECK(ptc_f32_to_bf16(INFINITY) == 0x7f80);
  CHECK(ptc_f32_to_bf16(-INFINITY) == 0xff80);
  CHECK(ptc_f32_to_bf16(float_of(0x7f7fffffu)) == 0x7f80); /* FLT_MAX rounds to inf */
  CHECK(bf16_is_nan(ptc_f32_to_bf16(NAN)));
  CHECK(bf16_is_nan(ptc_f32_to_bf16(float_of(0x7f800001u)))); /* low-bit nan stays nan */
  CHECK(bf16_is_nan(ptc_f32_to_bf16(float_of(0xff800001u))));
  CHECK(ptc_f32_to_bf16(float_of(0x00010000u)) == 0x0001); /* subnormal kept */
}

/* Property: the conversion picks the nearest representable value, ties to
 * the even pattern, for many pseudo-random floats across the whole range. */
static uint64_t lcg_state = 0x853c49e6748fea9bull;
static uint32_t lcg_next(void) {
  lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(lcg_state >> 32);
}

static int nearest_ok(double x, uint16_t h, float (*to_f32)(uint16_t), uint16_t max_finite) {
  uint16_t mag = h & 0x7fff;
  double v = to_f32(h);
  double err = fabs(x - v);
  if (mag > max_finite) return 0; /* only called for x within range */
  if (mag < max_finite) {
    double up = to_f32((uint16_t)(h + 1));
    if (fabs(x - up) < err) return 0;
    if (fabs(x - up) == err && (h & 1)) return 0;
  }
  if (mag > 0) {
    double down = to_f32((uint16_t)(h - 1));
    if (fabs(x - down) < err) return 0;
    if (fabs(x - down) == err && (h & 1)) return 0;
  }
  return 1;
}

static void test_half_nearest(void) {
  int bad16 = 0, badbf = 0;
  for (int i = 0; i < 200000; i++) {
    uint32_t u = lcg_next();
    float f = float_of(u);
    if (isnan(f) || isinf(f)) continue;
    /* f16: restrict to |f| <= 65504 by redrawing the exponent */
    float f16in = float_of((u & 0x807fffffu) | ((uint32_t)(90 + lcg_next() % 53) << 23));
    if (fabsf(f16in) <= 65504.0f &&
        !nearest_ok(f16in, ptc_f32_to_f16(f16in), ptc_f16_to_f32, 0x7bff))
      bad16++;
    if (fabsf(f) <= float_of(0x7f7f0000u) &&
        !nearest_ok(f, ptc_f32_to_bf16(f), ptc_bf16_to_f32, 0x7f7f))
      badbf++;
  }
  CHECK(bad16 == 0);
  CHECK(badbf == 0);
  (void)bits_of;
}

/* ---- base64 ------------------------------------------------------------------------- */
static void test_base64(void) {
  static const struct {
    const char* raw;
    const char* enc;
  } rfc[] = {{"", ""},         {"f", "Zg=="},       {"fo", "Zm8="},
             {"foo", "Zm9v"},  {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
             {"foobar", "Zm9vYmFy"}};
  for (size_t i = 0; i < sizeof rfc / sizeof rfc[0]; i++) {
    char* e = ptc_base64_encode(rfc[i].raw, strlen(rfc[i].raw));
    CHECK_STR(e, rfc[i].enc);
    free(e);
    void* d = NULL;
    size_t n = 99;
    CHECK(ptc_base64_decode(rfc[i].enc, strlen(rfc[i].enc), &d, &n));
    CHECK(n == strlen(rfc[i].raw) && (n == 0 || memcmp(d, rfc[i].raw, n) == 0));
    free(d);
  }
  /* round trip of every byte value at every length mod 3 */
  unsigned char buf[300];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 7 + 3);
  for (size_t len = 0; len <= sizeof buf; len += 1 + len / 16) {
    char* e = ptc_base64_encode(buf, len);
    CHECK(e != NULL);
    if (!e) continue;
    CHECK(strlen(e) == (len + 2) / 3 * 4);
    void* d = NULL;
    size_t n = 0;
    CHECK(ptc_base64_decode(e, strlen(e), &d, &n));
    CHECK(n == len && (len == 0 || memcmp(d, buf, len) == 0));
    free(d);
    free(e);
  }
  /* bad input: length, alphabet, padding in the wrong place */
  static const char* const bad[] = {"Zg=",  "Zg",   "Z",    "Zm9v!A==", "Zm 9v", "Z===",
                                    "====", "=Zg=", "Zg==Zg==", "Zm9vYmF=y", "Zm-v",
                                    "Zm9\x80"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    void* d = (void*)&d;
    size_t n = 1234;
    check_total++;
    if (ptc_base64_decode(bad[i], strlen(bad[i]), &d, &n)) {
      check_failures++;
      printf("FAIL base64 decode accepted bad input \"%s\"\n", bad[i]);
      free(d);
    } else if (n != 1234) {
      check_failures++;
      printf("FAIL base64 decode wrote out_len on failure for \"%s\"\n", bad[i]);
    }
  }
}

/* ---- sha256 ---------------------------------------------------------------------------- */
static void test_sha256(void) {
  char hex[65];
  ptc_sha256_hex("", 0, hex);
  CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  ptc_sha256_hex("abc", 3, hex);
  CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char* two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes */
  ptc_sha256_hex(two, strlen(two), hex);
  CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const char* four =
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmno"
      "pqrlmnopqrsmnopqrstnopqrstu"; /* 112 bytes */
  ptc_sha256_hex(four, strlen(four), hex);
  CHECK_STR(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  char* million = malloc(1000000);
  CHECK(million != NULL);
  if (million) {
    memset(million, 'a', 1000000);
    ptc_sha256_hex(million, 1000000, hex);
    CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(million);
  }
  /* lengths around the padding boundary agree with themselves and differ */
  unsigned char blk[130];
  memset(blk, 0x5a, sizeof blk);
  char prev[65] = "";
  for (size_t n = 50; n < 130; n++) {
    ptc_sha256_hex(blk, n, hex);
    CHECK(strlen(hex) == 64 && strcmp(hex, prev) != 0);
    memcpy(prev, hex, sizeof prev);
  }
}

/* ---- small containers, hashing, checked arithmetic --------------------------------- */
static void test_containers(void) {
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  ptc_sb_append(&sb, "abc");
  ptc_sb_printf(&sb, "-%d-%s", 12, "xy");
  ptc_sb_appendn(&sb, "0123456789", 4);
  CHECK_STR(sb.data, "abc-12-xy0123");
  CHECK(sb.len == 13 && !sb.oom);
  for (int i = 0; i < 1000; i++) ptc_sb_append(&sb, "z");
  CHECK(sb.len == 1013 && sb.data[1012] == 'z' && sb.data[1013] == 0);
  char* taken = ptc_sb_take(&sb);
  CHECK(taken != NULL && strlen(taken) == 1013);
  free(taken);
  ptc_sb_free(&sb);

  char small[4];
  CHECK(ptc_copy_out("hello", small, sizeof small) == 5);
  CHECK_STR(small, "hel");
  CHECK(ptc_copy_out("hello", NULL, 0) == 5);
  char exact[6];
  CHECK(ptc_copy_out("hello", exact, sizeof exact) == 5);
  CHECK_STR(exact, "hello");

  ptc_vec v;
  ptc_vec_init(&v, sizeof(int64_t));
  int ok = 1;
  for (int64_t i = 0; i < 1000; i++) ok &= ptc_vec_push(&v, &i) != NULL;
  CHECK(ok && v.len == 1000);
  int64_t sum = 0;
  for (size_t i = 0; i < v.len; i++) sum += PTC_VEC_AT(&v, int64_t, i);
  CHECK(sum == 999 * 1000 / 2);
  int64_t* zeroed = ptc_vec_push(&v, NULL);
  CHECK(zeroed != NULL && *zeroed == 0);
  CHECK(ptc_vec_reserve(&v, 5000) && v.cap >= 5000);
  ptc_vec_free(&v);

  ptc_arena a;
  ptc_arena_init(&a, 256);
  int aligned = 1;
  for (int i = 1; i < 200; i++) {
    unsigned char* p = ptc_arena_alloc(&a, (size_t)i);
    aligned &= p != NULL && ((uintptr_t)p & 15) == 0 && p[i - 1] == 0;
    if (p) memset(p, 0xff, (size_t)i);
  }
  CHECK(aligned);
  CHECK(ptc_arena_alloc(&a, 100000) != NULL); /* bigger than a block */
  CHECK_STR(ptc_arena_strdup(&a, "arena"), "arena");
  CHECK(ptc_arena_strdup(&a, NULL) == NULL);
  CHECK(ptc_arena_alloc(&a, SIZE_MAX - 3) == NULL); /* overflow is refused */
  ptc_arena_free(&a);
  ptc_arena_free(&a); /* idempotent */

  CHECK(ptc_hash_bytes("abc", 3, 0) == ptc_hash_bytes("abc", 3, 0));
  CHECK(ptc_hash_bytes("abc", 3, 0) != ptc_hash_bytes("abd", 3, 0));
  CHECK(ptc_hash_bytes("abc", 3, 0) != ptc_hash_bytes("abc", 3, 1));
  CHECK(ptc_hash_bytes("", 0, 0) != ptc_hash_bytes("\0", 1, 0));
  CHECK(ptc_hash_mix(1, 2) != ptc_hash_mix(2, 1));

  int64_t r = 0;
  CHECK(ptc_mul_ok(1 << 20, 1 << 20, &r) && r == (int64_t)1 << 40);
  CHECK(!ptc_mul_ok(INT64_MAX / 2 + 1, 2, &r));
  CHECK(!ptc_mul_ok(INT64_MIN, -1, &r));
  CHECK(ptc_add_ok(INT64_MAX - 1, 1, &r) && r == INT64_MAX);
  CHECK(!ptc_add_ok(INT64_MAX, 1, &r));
  CHECK(!ptc_add_ok(INT64_MIN, -1, &r));
}

int main(void) {
  test_status();
  test_context_options();
  test_context_hooks();
  test_version();
  test_dtypes();
  test_promotion();
  test_half_roundtrip();
  test_half_values();
  test_half_nearest();
  test_base64();
  test_sha256();
  test_containers();
  return check_summary("test_core");
}
