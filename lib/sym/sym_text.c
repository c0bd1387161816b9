/* sym_text.c - text form of expressions: sym_format / sym_format_sb (printing
 * that parses back to the same hash-consed pointer), guard text, and
 * sym_parse (recursive descent with Python precedence: unary minus binds
 * tighter than * // %, which bind tighter than + -; depth-limited; errors name
 * the byte position). */
#include "sym_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- output ------------------------------------------------------------------------- */

typedef struct writer {
  ptc_strbuf* sb; /* append here, or else into buf/cap */
  char* buf;
  size_t cap;
  size_t len; /* total length produced */
} writer;

static void w_putn(writer* w, const char* s, size_t n) {
  if (w->sb) {
    ptc_sb_appendn(w->sb, s, n);
  } else if (w->buf && w->cap > 0 && w->len < w->cap - 1) {
    size_t room = w->cap - 1 - w->len;
    memcpy(w->buf + w->len, s, n < room ? n : room);
  }
  w->len += n;
}

static void w_puts(writer* w, const char* s) { w_putn(w, s, strlen(s)); }

static void w_int(writer* w, int64_t v) {
  char tmp[32];
  int n = snprintf(tmp, sizeof tmp, "%" PRId64, v);
  if (n > 0) w_putn(w, tmp, (size_t)n);
}

/* Contexts: what the printed text must parse as. */
enum {
  CTX_ANY = 0,  /* a full expression (top level, call argument, inside parens) */
  CTX_TERM = 1, /* an operand of * // % on the left: a sum needs parentheses */
  CTX_ATOM = 2  /* a right operand of * // %: only atoms / parenthesised forms */
};

static void fmt(const sym_env* env, writer* w, const sym_expr* e, int ctx);

static void fmt_product(const sym_env* env, writer* w, const sym_expr* const* f, uint32_t nf,
                        int64_t coef) {
  bool has_add = false;
  for (uint32_t i = 0; i < nf; i++) has_add |= f[i]->kind == SYM_ADD;
  if (coef == -1) {
    w_puts(w, "-");
  } else if (coef != 1) {
    w_int(w, coef);
    w_puts(w, "*");
  }
  /* A coefficient applied to a single sum would be distributed by the
   * parser, so the product of the factors is grouped first. */
  bool group = has_add && coef != 1;
  if (group) w_puts(w, "(");
  for (uint32_t i = 0; i < nf; i++) {
    if (i) w_puts(w, "*");
    fmt(env, w, f[i], CTX_ATOM);
  }
  if (group) w_puts(w, ")");
}

static void fmt_args(const sym_env* env, writer* w, const char* name, const sym_expr* e) {
  w_puts(w, name);
  w_puts(w, "(");
  for (uint32_t i = 0; i < e->n; i++) {
    if (i) w_puts(w, ", ");
    fmt(env, w, e->args[i], CTX_ANY);
  }
  w_puts(w, ")");
}

static void fmt(const sym_env* env, writer* w, const sym_expr* e, int ctx) {
  switch ((sym_kind)e->kind) {
    case SYM_CONST:
      if (ctx == CTX_ATOM && e->value < 0) {
        w_puts(w, "(");
        w_int(w, e->value);
        w_puts(w, ")");
      } else {
        w_int(w, e->value);
      }
      return;
    case SYM_VAR:
      if (env && e->value >= 0 && (uint64_t)e->value < env->nvars) {
        w_puts(w, env->vars[e->value].name);
      } else {
        w_puts(w, "?");
        w_int(w, e->value);
      }
      return;
    case SYM_ADD: {
      if (ctx != CTX_ANY) w_puts(w, "(");
      for (uint32_t i = 0; i < e->n; i++) {
        const sym_expr* t = e->args[i];
        int64_t c = sym_coef(t);
        if (i == 0) {
          fmt(env, w, t, CTX_TERM);
        } else if (c < 0 && c != INT64_MIN) {
          w_puts(w, " - ");
          if (t->kind == SYM_CONST) {
            w_int(w, -c);
          } else {
            const sym_expr* tmp;
            const sym_expr* const* f;
            uint32_t nf = sym_factors(t, &f, &tmp);
            fmt_product(env, w, f, nf, -c);
          }
        } else {
          w_puts(w, " + ");
          fmt(env, w, t, CTX_TERM);
        }
      }
      if (ctx != CTX_ANY) w_puts(w, ")");
      return;
    }
    case SYM_MUL: {
      if (ctx == CTX_ATOM) w_puts(w, "(");
      const sym_expr* tmp;
      const sym_expr* const* f;
      uint32_t nf = sym_factors(e, &f, &tmp);
      fmt_product(env, w, f, nf, sym_coef(e));
      if (ctx == CTX_ATOM) w_puts(w, ")");
      return;
    }
    case SYM_FLOORDIV:
    case SYM_MOD:
      w_puts(w, "(");
      fmt(env, w, e->args[0], CTX_TERM);
      w_puts(w, e->kind == SYM_FLOORDIV ? "//" : " % ");
      fmt(env, w, e->args[1], CTX_ATOM);
      w_puts(w, ")");
      return;
    case SYM_MODIDX:
      fmt_args(env, w, "modidx", e);
      return;
    case SYM_CEILDIV:
      fmt_args(env, w, "ceildiv", e);
      return;
    case SYM_MIN:
      fmt_args(env, w, "min", e);
      return;
    case SYM_MAX:
      fmt_args(env, w, "max", e);
      return;
    default:
      w_puts(w, "?");
      return;
  }
}

static size_t finish(writer* w) {
  if (w->buf && w->cap > 0) w->buf[w->len < w->cap ? w->len : w->cap - 1] = '\0';
  return w->len;
}

size_t sym_format(const sym_env* env, const sym_expr* e, char* buf, size_t cap) {
  writer w = {NULL, buf, cap, 0};
  if (e) fmt(env, &w, e, CTX_ANY);
  return finish(&w);
}

void sym_format_sb(const sym_env* env, const sym_expr* e, ptc_strbuf* sb) {
  if (!sb) return;
  writer w = {sb, NULL, 0, 0};
  if (e) fmt(env, &w, e, CTX_ANY);
  else ptc_sb_append(sb, "");
}

const char* sym_rel_str(sym_rel rel) {
  switch (rel) {
    case SYM_EQ: return "==";
    case SYM_NE: return "!=";
    case SYM_LT: return "<";
    case SYM_LE: return "<=";
    case SYM_GT: return ">";
    case SYM_GE: return ">=";
  }
  return "?";
}

static void fmt_rel(const sym_env* env, writer* w, sym_rel rel, const sym_expr* a, const sym_expr* b) {
  fmt(env, w, a, CTX_ANY);
  w_puts(w, " ");
  w_puts(w, sym_rel_str(rel));
  w_puts(w, " ");
  fmt(env, w, b, CTX_ANY);
}

void sym_format_rel_sb(const sym_env* env, sym_rel rel, const sym_expr* a, const sym_expr* b,
                       ptc_strbuf* sb) {
  writer w = {sb, NULL, 0, 0};
  fmt_rel(env, &w, rel, a, b);
}

size_t sym_guard_format(const sym_env* env, size_t i, char* buf, size_t cap) {
  writer w = {NULL, buf, cap, 0};
  if (env && i < env->nguards) fmt_rel(env, &w, env->guards[i].rel, env->guards[i].lhs, env->guards[i].rhs);
  return finish(&w);
}

/* ---- parser ------------------------------------------------------------------------- */

#define SYM_PARSE_MAX_DEPTH 200

typedef struct parser {
  sym_env* env;
  const char* s;
  size_t len, pos;
  int depth;
  ptc_status err;
} parser;

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_ident(char c) { return is_ident_start(c) || is_digit(c); }

static void skip_ws(parser* p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

static int peek(parser* p) {
  skip_ws(p);
  return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static const sym_expr* fail_at(parser* p, size_t pos, const char* what) {
  if (!p->err) p->err = PTC_ERR(INVALID_ARGUMENT, "sym_parse: %s at position %zu", what, pos);
  return NULL;
}

static const sym_expr* fail_unexpected(parser* p) {
  if (p->err) return NULL;
  if (p->pos >= p->len) return fail_at(p, p->pos, "unexpected end of input");
  unsigned char c = (unsigned char)p->s[p->pos];
  char what[48];
  if (c >= 0x20 && c < 0x7f) snprintf(what, sizeof what, "unexpected character '%c'", c);
  else snprintf(what, sizeof what, "unexpected byte 0x%02x", c);
  return fail_at(p, p->pos, what);
}

/* A builder returned NULL: division by constant zero, a constant that does
 * not fit in int64, or out of memory. */
static const sym_expr* fail_build(parser* p, size_t pos, const sym_expr* divisor, const sym_expr* mod) {
  int64_t v;
  if ((divisor && sym_is_const(divisor, &v) && v == 0) || (mod && sym_is_const(mod, &v) && v == 0))
    return fail_at(p, pos, "division by zero");
  if (p->env->overflow) {
    p->env->overflow = false;
    return fail_at(p, pos, "integer overflow");
  }
  if (!p->err) p->err = ptc_status_oom();
  return NULL;
}

static const sym_expr* parse_expr(parser* p);

static const sym_expr* parse_int(parser* p, bool negative) {
  size_t start = p->pos;
  uint64_t v = 0, limit = negative ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
  while (p->pos < p->len && is_digit(p->s[p->pos])) {
    unsigned d = (unsigned)(p->s[p->pos] - '0');
    if (v > (limit - d) / 10) return fail_at(p, start, "integer literal out of range");
    v = v * 10 + d;
    p->pos++;
  }
  if (p->pos < p->len && is_ident(p->s[p->pos])) return fail_unexpected(p);
  int64_t x = negative ? (v == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)v) : (int64_t)v;
  const sym_expr* e = sym_const(p->env, x);
  return e ? e : fail_build(p, start, NULL, NULL);
}

static bool name_is(const parser* p, size_t start, size_t n, const char* name) {
  return strlen(name) == n && memcmp(p->s + start, name, n) == 0;
}

static const sym_expr* parse_call(parser* p, size_t start, size_t n) {
  int kind;
  if (name_is(p, start, n, "min")) kind = SYM_MIN;
  else if (name_is(p, start, n, "max")) kind = SYM_MAX;
  else if (name_is(p, start, n, "ceildiv")) kind = SYM_CEILDIV;
  else if (name_is(p, start, n, "modidx")) kind = SYM_MODIDX;
  else {
    char what[128];
    snprintf(what, sizeof what, "unknown function '%.*s'", (int)(n > 64 ? 64 : n), p->s + start);
    return fail_at(p, start, what);
  }
  p->pos++; /* '(' */
  const sym_expr* args[3] = {NULL, NULL, NULL};
  const sym_expr* acc = NULL;
  size_t count = 0;
  for (;;) {
    peek(p);
    size_t apos = p->pos;
    const sym_expr* a = parse_expr(p);
    if (!a) return NULL;
    if (kind == SYM_MIN || kind == SYM_MAX) {
      if (!acc) {
        acc = a;
      } else {
        acc = kind == SYM_MIN ? sym_min(p->env, acc, a) : sym_max(p->env, acc, a);
        if (!acc) return fail_build(p, apos, NULL, NULL);
      }
    } else if (count < 3) {
      args[count] = a;
    }
    count++;
    int c = peek(p);
    if (c == ',') {
      p->pos++;
      continue;
    }
    if (c == ')') {
      p->pos++;
      break;
    }
    return fail_unexpected(p);
  }
  if (kind == SYM_MIN || kind == SYM_MAX) return acc;
  size_t want = kind == SYM_CEILDIV ? 2 : 3;
  if (count != want) {
    char what[96];
    snprintf(what, sizeof what, "%s expects %zu arguments, got %zu",
             kind == SYM_CEILDIV ? "ceildiv" : "modidx", want, count);
    return fail_at(p, start, what);
  }
  const sym_expr* r = kind == SYM_CEILDIV ? sym_ceildiv(p->env, args[0], args[1])
                                          : sym_modidx(p->env, args[0], args[1], args[2]);
  return r ? r : fail_build(p, start, args[1], kind == SYM_MODIDX ? args[2] : NULL);
}

static const sym_expr* parse_primary(parser* p) {
  int c = peek(p);
  if (c < 0) return fail_unexpected(p);
  if (is_digit((char)c)) return parse_int(p, false);
  if (c == '(') {
    size_t open = p->pos++;
    const sym_expr* e = parse_expr(p);
    if (!e) return NULL;
    if (peek(p) != ')') {
      if (p->pos >= p->len) return fail_at(p, open, "unclosed '('");
      return fail_unexpected(p);
    }
    p->pos++;
    return e;
  }
  if (is_ident_start((char)c)) {
    size_t start = p->pos;
    while (p->pos < p->len && is_ident(p->s[p->pos])) p->pos++;
    size_t n = p->pos - start;
    if (peek(p) == '(') return parse_call(p, start, n);
    for (size_t i = 0; i < p->env->nvars; i++)
      if (name_is(p, start, n, p->env->vars[i].name)) return p->env->vars[i].expr;
    char what[128];
    snprintf(what, sizeof what, "unknown symbol '%.*s'", (int)(n > 64 ? 64 : n), p->s + start);
    return fail_at(p, start, what);
  }
  return fail_unexpected(p);
}

static bool enter(parser* p) {
  if (++p->depth > SYM_PARSE_MAX_DEPTH) {
    fail_at(p, p->pos, "expression nested too deeply");
    return false;
  }
  return true;
}

static const sym_expr* parse_unary(parser* p) {
  if (peek(p) != '-') return parse_primary(p);
  size_t start = p->pos++;
  if (peek(p) >= 0 && is_digit(p->s[p->pos])) return parse_int(p, true);
  if (!enter(p)) return NULL;
  const sym_expr* e = parse_unary(p);
  p->depth--;
  if (!e) return NULL;
  const sym_expr* r = sym_neg(p->env, e);
  return r ? r : fail_build(p, start, NULL, NULL);
}

static const sym_expr* parse_term(parser* p) {
  const sym_expr* a = parse_unary(p);
  while (a) {
    int c = peek(p);
    size_t at = p->pos;
    int op;
    if (c == '*') {
      op = '*';
      p->pos++;
    } else if (c == '%') {
      op = '%';
      p->pos++;
    } else if (c == '/' && p->pos + 1 < p->len && p->s[p->pos + 1] == '/') {
      op = '/';
      p->pos += 2;
    } else {
      break;
    }
    const sym_expr* b = parse_unary(p);
    if (!b) return NULL;
    const sym_expr* r = op == '*' ? sym_mul(p->env, a, b)
                        : op == '/' ? sym_floordiv(p->env, a, b)
                                    : sym_mod(p->env, a, b);
    a = r ? r : fail_build(p, at, op == '*' ? NULL : b, NULL);
  }
  return a;
}

static const sym_expr* parse_expr(parser* p) {
  if (!enter(p)) return NULL;
  const sym_expr* a = parse_term(p);
  while (a) {
    int c = peek(p);
    if (c != '+' && c != '-') break;
    size_t at = p->pos++;
    const sym_expr* b = parse_term(p);
    if (!b) return NULL;
    const sym_expr* r = c == '+' ? sym_add(p->env, a, b) : sym_sub(p->env, a, b);
    a = r ? r : fail_build(p, at, NULL, NULL);
  }
  p->depth--;
  return a;
}

ptc_status sym_parse(sym_env* env, const char* text, size_t len, const sym_expr** out) {
  if (!env || !out || (!text && len)) return PTC_ERR(INVALID_ARGUMENT, "sym_parse: NULL argument");
  parser p = {env, text ? text : "", len, 0, 0, NULL};
  env->overflow = false;
  const sym_expr* e = parse_expr(&p);
  if (e && peek(&p) >= 0) e = fail_unexpected(&p);
  if (!e) return p.err ? p.err : ptc_status_oom();
  *out = e;
  return PTC_OK;
}
