/* json_attr.c - typed attribute <-> JSON codec (see json_attr.h). */
#include "json_attr.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool json_number(const cJSON* v, double* out) {
  if (cJSON_IsNumber(v)) {
    *out = v->valuedouble;
    return true;
  }
  if (cJSON_IsString(v)) {
    if (strcmp(v->valuestring, "nan") == 0) *out = NAN;
    else if (strcmp(v->valuestring, "inf") == 0) *out = INFINITY;
    else if (strcmp(v->valuestring, "-inf") == 0) *out = -INFINITY;
    else return false;
    return true;
  }
  return false;
}

/* Integers beyond 2^53 travel as decimal strings (doubles would round). */
#define EXACT_LIMIT 9007199254740992.0

static bool json_int(const cJSON* v, int64_t* out) {
  if (cJSON_IsString(v)) {
    char* end = NULL;
    errno = 0;
    long long x = strtoll(v->valuestring, &end, 10);
    if (errno || end == v->valuestring || *end) return false;
    *out = x;
    return true;
  }
  if (!cJSON_IsNumber(v)) return false;
  double d = v->valuedouble;
  if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || d != floor(d)) return false;
  *out = (int64_t)d;
  return true;
}

/* Parses an expression string: a constant goes to *c (and *out = 0),
 * anything symbolic gets a public id in *out. */
static ptc_status parse_sym(ptc_graph* g, const char* name, const char* text, ptc_sym* out,
                            int64_t* c) {
  const sym_expr* e = NULL;
  ptc_status s = sym_parse(g->env, text, strlen(text), &e);
  if (s) return ptc_status_prefix(s, "attribute '%s'", name);
  bool oom = false;
  *out = 0;
  if (sym_is_const(e, c)) return PTC_OK;
  *out = graph_sym_id(g, e, &oom);
  return oom ? ptc_status_oom() : PTC_OK;
}

ptc_status json_attr_parse(ptc_graph* g, const cJSON* item, ptc_arena* scratch,
                           ptc_attr* out) {
  const char* name = item->string;
  if (!name) return PTC_ERR(INVALID_ARGUMENT, "attribute without a name");
  if (!cJSON_IsObject(item) || !item->child || item->child->next)
    return PTC_ERR(INVALID_ARGUMENT,
                   "attribute '%s': expected an object with one typed field, e.g. {\"int\": 1}",
                   name);
  const cJSON* v = item->child;
  const char* type = v->string;
  ptc_attr a;
  memset(&a, 0, sizeof a);
  a.name = name;
  if (strcmp(type, "int") == 0) {
    a.type = PTC_ATTR_INT;
    if (!json_int(v, &a.i))
      return PTC_ERR(INVALID_ARGUMENT, "attribute '%s': \"int\" needs an integer", name);
  } else if (strcmp(type, "float") == 0) {
    a.type = PTC_ATTR_FLOAT;
    if (!json_number(v, &a.f))
      return PTC_ERR(INVALID_ARGUMENT, "attribute '%s': \"float\" needs a number", name);
  } else if (strcmp(type, "bool") == 0) {
    a.type = PTC_ATTR_BOOL;
    if (!cJSON_IsBool(v))
      return PTC_ERR(INVALID_ARGUMENT, "attribute '%s': \"bool\" needs true or false", name);
    a.i = cJSON_IsTrue(v);
  } else if (strcmp(type, "string") == 0) {
    a.type = PTC_ATTR_STRING;
    if (!cJSON_IsString(v))
      return PTC_ERR(INVALID_ARGUMENT, "attribute '%s': \"string\" needs a string", name);
    a.s = v->valuestring;
  } else if (strcmp(type, "dtype") == 0) {
    a.type = PTC_ATTR_DTYPE;
    a.i = cJSON_IsString(v) ? ptc_dtype_from_name(v->valuestring) : -1;
    if (a.i < 0) return PTC_ERR(INVALID_ARGUMENT, "attribute '%s': unknown dtype", name);
  } else if (strcmp(type, "sym") == 0) {
    a.type = PTC_ATTR_SYM;
    if (!cJSON_IsString(v))
      return PTC_ERR(INVALID_ARGUMENT, "attribute '%s': \"sym\" needs an expression string",
                     name);
    PTC_TRY(parse_sym(g, name, v->valuestring, &a.sym, &a.i));
    if (!a.sym) a.type = PTC_ATTR_INT; /* a constant expression is a plain int */
  } else if (strcmp(type, "ints") == 0 || strcmp(type, "floats") == 0) {
    bool ints = type[0] == 'i';
    if (!cJSON_IsArray(v))
      return PTC_ERR(INVALID_ARGUMENT, "attribute '%s': \"%s\" needs an array", name, type);
    size_t n = (size_t)cJSON_GetArraySize(v);
    a.type = ints ? PTC_ATTR_INTS : PTC_ATTR_FLOATS;
    a.count = n;
    int64_t* iv = ints ? ptc_arena_alloc(scratch, (n + 1) * sizeof *iv) : NULL;
    ptc_sym* sv = ints ? ptc_arena_alloc(scratch, (n + 1) * sizeof *sv) : NULL;
    double* fv = ints ? NULL : ptc_arena_alloc(scratch, (n + 1) * sizeof *fv);
    if ((ints && (!iv || !sv)) || (!ints && !fv)) return ptc_status_oom();
    size_t k = 0;
    bool any_sym = false;
    for (const cJSON* e = v->child; e; e = e->next, k++) {
      if (ints && cJSON_IsString(e)) {
        PTC_TRY(parse_sym(g, name, e->valuestring, &sv[k], &iv[k]));
        any_sym |= sv[k] != 0;
      } else if (ints ? !json_int(e, &iv[k]) : !json_number(e, &fv[k])) {
        return PTC_ERR(INVALID_ARGUMENT, "attribute '%s': element %zu is not %s", name, k,
                       ints ? "an integer or expression string" : "a number");
      }
    }
    a.ints = iv;
    a.syms = any_sym ? sv : NULL;
    a.floats = fv;
  } else {
    return PTC_ERR(INVALID_ARGUMENT,
                   "attribute '%s': unknown type \"%s\" (int, float, bool, ints, floats, "
                   "string, dtype, sym)",
                   name, type);
  }
  *out = a;
  return PTC_OK;
}

static cJSON* num_json(double d) {
  if (isnan(d)) return cJSON_CreateString("nan");
  if (isinf(d)) return cJSON_CreateString(d > 0 ? "inf" : "-inf");
  return cJSON_CreateNumber(d);
}

static cJSON* int_json(int64_t c) {
  if ((double)c > EXACT_LIMIT || (double)c < -EXACT_LIMIT) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)c);
    return cJSON_CreateString(buf);
  }
  return cJSON_CreateNumber((double)c);
}

static cJSON* expr_json(const ptc_graph* g, const sym_expr* e) {
  int64_t c;
  if (sym_is_const(e, &c)) return int_json(c);
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  sym_format_sb(g->env, e, &sb);
  cJSON* r = sb.oom ? NULL : cJSON_CreateString(sb.data ? sb.data : "");
  ptc_sb_free(&sb);
  return r;
}

bool json_attr_emit(const ptc_graph* g, const gattr* a, cJSON* obj) {
  cJSON* wrap = cJSON_CreateObject();
  if (!wrap) return false;
  cJSON* v = NULL;
  const char* key = "int";
  switch (a->type) {
    case PTC_ATTR_INT: v = int_json(a->i); break;
    case PTC_ATTR_FLOAT: key = "float"; v = num_json(a->f); break;
    case PTC_ATTR_BOOL: key = "bool"; v = cJSON_CreateBool(a->i != 0); break;
    case PTC_ATTR_STRING: key = "string"; v = cJSON_CreateString(a->s); break;
    case PTC_ATTR_DTYPE: key = "dtype"; v = cJSON_CreateString(ptc_dtype_name((int32_t)a->i)); break;
    case PTC_ATTR_SYM: key = "sym"; v = expr_json(g, a->sym); break;
    case PTC_ATTR_INTS:
    case PTC_ATTR_FLOATS:
      key = a->type == PTC_ATTR_INTS ? "ints" : "floats";
      v = cJSON_CreateArray();
      for (size_t i = 0; v && i < a->count; i++) {
        cJSON* e = a->type == PTC_ATTR_INTS ? expr_json(g, a->exprs[i]) : num_json(a->floats[i]);
        if (!e || !cJSON_AddItemToArray(v, e)) {
          cJSON_Delete(e);
          cJSON_Delete(v);
          v = NULL;
        }
      }
      break;
    default: break;
  }
  if (!v || !cJSON_AddItemToObject(wrap, key, v) || !cJSON_AddItemToObject(obj, a->name, wrap)) {
    if (v && !cJSON_GetObjectItemCaseSensitive(wrap, key)) cJSON_Delete(v);
    cJSON_Delete(wrap);
    return false;
  }
  return true;
}
