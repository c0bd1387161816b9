/* dtype.c - dtype names, sizes, categories and ATen type promotion. */
#include "core.h"

#include <string.h>

static const struct {
  const char* name;
  size_t size;
  int category; /* 0 bool, 1 int, 2 float */
  bool is_signed;
} dtypes[PTC_DTYPE_COUNT] = {
    [PTC_F32] = {"f32", 4, 2, true},  [PTC_F64] = {"f64", 8, 2, true},
    [PTC_F16] = {"f16", 2, 2, true},  [PTC_BF16] = {"bf16", 2, 2, true},
    [PTC_I8] = {"i8", 1, 1, true},    [PTC_I16] = {"i16", 2, 1, true},
    [PTC_I32] = {"i32", 4, 1, true},  [PTC_I64] = {"i64", 8, 1, true},
    [PTC_U8] = {"u8", 1, 1, false},   [PTC_BOOL] = {"bool", 1, 0, false},
};

static const struct {
  const char* alias;
  int32_t dtype;
} aliases[] = {
    {"float32", PTC_F32}, {"float", PTC_F32},     {"float64", PTC_F64}, {"double", PTC_F64},
    {"float16", PTC_F16}, {"half", PTC_F16},      {"bfloat16", PTC_BF16}, {"int8", PTC_I8},
    {"int16", PTC_I16},   {"short", PTC_I16},     {"int32", PTC_I32},   {"int", PTC_I32},
    {"int64", PTC_I64},   {"long", PTC_I64},      {"uint8", PTC_U8},    {"bool", PTC_BOOL},
};

bool ptc_dtype_valid(int32_t dt) { return dt >= 0 && dt < PTC_DTYPE_COUNT; }

const char* ptc_dtype_name(int32_t dt) { return ptc_dtype_valid(dt) ? dtypes[dt].name : NULL; }

size_t ptc_dtype_size(int32_t dt) { return ptc_dtype_valid(dt) ? dtypes[dt].size : 0; }

int32_t ptc_dtype_from_name(const char* name) {
  if (!name) return -1;
  if (strncmp(name, "torch.", 6) == 0) name += 6;
  for (int32_t i = 0; i < PTC_DTYPE_COUNT; i++)
    if (strcmp(name, dtypes[i].name) == 0) return i;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(name, aliases[i].alias) == 0) return aliases[i].dtype;
  return -1;
}

bool ptc_dtype_is_float(int32_t dt) { return ptc_dtype_valid(dt) && dtypes[dt].category == 2; }
bool ptc_dtype_is_int(int32_t dt) { return ptc_dtype_valid(dt) && dtypes[dt].category == 1; }
bool ptc_dtype_is_signed(int32_t dt) { return ptc_dtype_valid(dt) && dtypes[dt].is_signed; }
int ptc_dtype_category(int32_t dt) { return ptc_dtype_valid(dt) ? dtypes[dt].category : -1; }

int32_t ptc_promote_types(int32_t a, int32_t b) {
  if (a == b) return a;
  int ca = ptc_dtype_category(a), cb = ptc_dtype_category(b);
  if (ca != cb) {
    /* the higher category wins as is (ATen: int + float -> the float dtype) */
    return ca > cb ? a : b;
  }
  if (ca == 2) {
    if ((a == PTC_F16 && b == PTC_BF16) || (a == PTC_BF16 && b == PTC_F16)) return PTC_F32;
    size_t sa = dtypes[a].size, sb = dtypes[b].size;
    return sa >= sb ? a : b;
  }
  /* integers */
  bool ua = a == PTC_U8, ub = b == PTC_U8;
  if (ua || ub) {
    int32_t other = ua ? b : a;
    if (other == PTC_I8) return PTC_I16;
    return other; /* u8 with a wider signed int -> that int */
  }
  return dtypes[a].size >= dtypes[b].size ? a : b;
}
