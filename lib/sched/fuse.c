/* fuse.c - the greedy fusion loop: each round collects candidate pairs of
 * groups that touch a common buffer (each node paired with the next `window`
 * nodes touching that buffer, as in Inductor), keeps the legal
 * ones, sorts them by score and fuses greedily (re-checking legality before
 * each fusion); rounds repeat until one makes no progress. Every decision
 * goes to the plan's log. */
#include <stdlib.h>

#include "sched_internal.h"

/* ---- a set of uint64 keys (open addressing) --------------------------------- */
typedef struct keyset {
  uint64_t* keys; /* 0 = empty; stored as key + 1 */
  size_t n, cap;
} keyset;

static uint64_t key_hash(uint64_t k) { return ptc_hash_mix(k, 0x9e3779b97f4a7c15ull); }

static bool keyset_grow(keyset* s) {
  size_t nc = s->cap ? s->cap * 2 : 64;
  uint64_t* nk = calloc(nc, sizeof *nk);
  if (!nk) return false;
  for (size_t i = 0; i < s->cap; i++) {
    if (!s->keys[i]) continue;
    size_t h = key_hash(s->keys[i] - 1) & (nc - 1);
    while (nk[h]) h = (h + 1) & (nc - 1);
    nk[h] = s->keys[i];
  }
  free(s->keys);
  s->keys = nk;
  s->cap = nc;
  return true;
}

/* Returns 1 if inserted, 0 if present, -1 on OOM. */
static int keyset_add(keyset* s, uint64_t k) {
  if ((s->n + 1) * 2 > s->cap && !keyset_grow(s)) return -1;
  size_t h = key_hash(k) & (s->cap - 1);
  while (s->keys[h]) {
    if (s->keys[h] == k + 1) return 0;
    h = (h + 1) & (s->cap - 1);
  }
  s->keys[h] = k + 1;
  s->n++;
  return 1;
}

static bool keyset_has(const keyset* s, uint64_t k) {
  if (!s->cap) return false;
  size_t h = key_hash(k) & (s->cap - 1);
  while (s->keys[h]) {
    if (s->keys[h] == k + 1) return true;
    h = (h + 1) & (s->cap - 1);
  }
  return false;
}

static void keyset_free(keyset* s) {
  free(s->keys);
  *s = (keyset){0};
}

/* ---- candidates ---------------------------------------------------------------- */
typedef struct cand {
  uint32_t a_node, b_node; /* a member of each group (groups may be merged later) */
  uint32_t a_first, b_first;
  sscore score;
} cand;

typedef struct round_state {
  keyset seen;    /* pairs considered this round */
  keyset refused; /* pairs refused for a reason that cannot change (all rounds) */
  cand* cands;
  size_t n, cap;
} round_state;

static uint64_t pair_key(const sched_ctx* c, uint32_t a, uint32_t b) {
  return ((uint64_t)c->groups[a].stamp << 32) | c->groups[b].stamp;
}

static void log_pair(sched_ctx* c, const char* verb, uint32_t a, uint32_t b, bool labels) {
  ptc_sb_printf(c->log, "%s k%u", verb, a);
  if (labels) {
    ptc_sb_append(c->log, " (");
    sched_group_label(c, &c->groups[a], c->log);
    ptc_sb_append(c->log, ")");
  }
  ptc_sb_printf(c->log, " + k%u", b);
  if (labels) {
    ptc_sb_append(c->log, " (");
    sched_group_label(c, &c->groups[b], c->log);
    ptc_sb_append(c->log, ")");
  }
}

/* Evaluates a pair (a.first < b.first); logs refusals. Returns the verdict. */
static sverdict evaluate(sched_ctx* c, round_state* r, uint32_t a, uint32_t b, sshape* s,
                         sscore* score) {
  ptc_strbuf why;
  ptc_sb_init(&why);
  sverdict v = sched_can_fuse(c, a, b, s, score, &why);
  if (why.oom) c->oom = true;
  if (v != SV_OK && !c->oom) {
    log_pair(c, "refuse", a, b, false);
    ptc_sb_printf(c->log, ": %s\n", why.data ? why.data : "");
    if (v == SV_REFUSE && keyset_add(&r->refused, pair_key(c, a, b)) < 0) c->oom = true;
  }
  ptc_sb_free(&why);
  return v;
}

static bool push_cand(round_state* r, const cand* x) {
  if (r->n == r->cap) {
    size_t nc = r->cap ? r->cap * 2 : 64;
    cand* nn = realloc(r->cands, nc * sizeof *nn);
    if (!nn) return false;
    r->cands = nn;
    r->cap = nc;
  }
  r->cands[r->n++] = *x;
  return true;
}

/* Considers the pair of groups holding nodes u and v. */
static void consider(sched_ctx* c, round_state* r, uint32_t u, uint32_t v) {
  uint32_t a = c->grp_of[u], b = c->grp_of[v];
  if (a == b) return;
  if (c->groups[a].first > c->groups[b].first) {
    uint32_t t = a;
    a = b;
    b = t;
  }
  uint64_t key = pair_key(c, a, b);
  int added = keyset_add(&r->seen, key);
  if (added < 0) c->oom = true;
  if (added <= 0 || keyset_has(&r->refused, key)) return;
  sshape s;
  cand x = {a, b, c->groups[a].first, c->groups[b].first, {0, 0, 0}};
  if (evaluate(c, r, a, b, &s, &x.score) == SV_OK && !push_cand(r, &x)) c->oom = true;
}

/* Node k of the list of nodes touching buffer b: its writer first (if
 * any), then its readers in program order. */
static uint32_t touching(const sched_ctx* c, size_t b, uint32_t k) {
  int32_t w = c->writer[b];
  if (w >= 0) {
    if (k == 0) return (uint32_t)w;
    k--;
  }
  return c->rd_node[c->rd_start[b] + k];
}

/* Candidate pairs (as in Inductor): for every buffer, each node touching it
 * paired with the next `window` nodes touching it. */
static void collect(sched_ctx* c, round_state* r) {
  for (size_t b = 0; b < c->n_bufs && !c->oom; b++) {
    uint32_t n = c->rd_start[b + 1] - c->rd_start[b] + (c->writer[b] >= 0);
    for (uint32_t i = 0; i < n && !c->oom; i++) {
      uint32_t u = touching(c, b, i);
      for (uint32_t j = i + 1; j < n && j - i <= c->opt.window && !c->oom; j++) {
        uint32_t v = touching(c, b, j);
        if (u != v) consider(c, r, u, v);
      }
    }
  }
}

static int cmp_cand(const void* x, const void* y) {
  const cand* a = x;
  const cand* b = y;
  if (a->score.kind != b->score.kind) return a->score.kind > b->score.kind ? -1 : 1;
  if (a->score.bytes != b->score.bytes) return a->score.bytes > b->score.bytes ? -1 : 1;
  if (a->score.neg_dist != b->score.neg_dist) return a->score.neg_dist > b->score.neg_dist ? -1 : 1;
  if (a->a_first != b->a_first) return a->a_first < b->a_first ? -1 : 1;
  return a->b_first < b->b_first ? -1 : (a->b_first > b->b_first);
}

/* Fuses the sorted candidates greedily; returns the number of fusions. */
static ptc_status apply(sched_ctx* c, round_state* r, sched_plan* s, uint32_t* fused) {
  *fused = 0;
  keyset tried = {0}; /* pairs re-checked here (a pair may recur after merges) */
  for (size_t i = 0; i < r->n && !c->oom; i++) {
    uint32_t a = c->grp_of[r->cands[i].a_node], b = c->grp_of[r->cands[i].b_node];
    if (a == b) continue;
    if (c->groups[a].first > c->groups[b].first) {
      uint32_t t = a;
      a = b;
      b = t;
    }
    uint64_t key = pair_key(c, a, b);
    int added = keyset_add(&tried, key);
    if (added < 0) c->oom = true;
    if (added <= 0 || keyset_has(&r->refused, key)) continue;
    sshape sh;
    sscore sc;
    if (evaluate(c, r, a, b, &sh, &sc) != SV_OK) continue;
    log_pair(c, "fuse", a, b, true);
    ptc_sb_printf(c->log, ": %s, score (%d, %lld, %lld)\n",
                  sc.kind == 2 ? "vertical" : "horizontal", sc.kind, (long long)sc.bytes,
                  (long long)sc.neg_dist);
    ptc_status st = sched_group_merge(c, a, b, &sh);
    if (st) {
      keyset_free(&tried);
      return st;
    }
    s->n_fusions++;
    (*fused)++;
  }
  keyset_free(&tried);
  return c->oom ? ptc_status_oom() : NULL;
}

ptc_status sched_fuse(sched_ctx* c, sched_plan* s) {
  round_state r = {0};
  ptc_status st = NULL;
  for (uint32_t round = 1; round <= c->opt.max_rounds && !st; round++) {
    ptc_sb_printf(c->log, "round %u:\n", round);
    keyset_free(&r.seen);
    r.n = 0;
    collect(c, &r);
    if (c->oom) {
      st = ptc_status_oom();
      break;
    }
    if (r.n) qsort(r.cands, r.n, sizeof *r.cands, cmp_cand);
    uint32_t fused = 0;
    st = apply(c, &r, s, &fused);
    if (!fused) break;
  }
  keyset_free(&r.seen);
  keyset_free(&r.refused);
  free(r.cands);
  return st;
}
