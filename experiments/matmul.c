/* matmul.c: the GEMM context of a run and the one place that runs the GEMMs
 * (xp_matmul): quantize each operand with its tensor kind's format,
 * rounding and recipe, then exmy_gemm with the role's accumulation model.
 * Per-layer state: the recipes (delayed scaling's amax histories) and the
 * FP8 statistics of the last collected step.  The precisions themselves
 * (presets, keys, overrides) are parsed in precision.c. */
#include "experiments/precision.h"
#include "emulate/recipe_traits.h"
#include "emulate/round_core.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A tensor kind's last quantized operand, for the next GEMM of the step that
 * reads the same floats (see reuse_role). */
typedef struct qcache {
  exmy_qtensor q;               /* owned while valid */
  const float *src;             /* the floats it was made from (rows x cols) */
  size_t rows, cols;
  long step;
  int valid;
} qcache;

struct xp_layer_state {
  qcache qc[XP_NKIND];          /* per tensor kind: the step's quantized operand */
  exmy_recipe rec[XP_NKIND];    /* the recipe of each tensor kind ... */
  exmy_recipe_state st_rec[XP_NKIND]; /* ... and what it remembers across steps */
  int have_rec[XP_NKIND];
  /* statistics of the operands (A, B) of each role, from the last collected step */
  exmy_qstats st[XP_NROLE][2];
  float st_scale[XP_NROLE][2];
  int have_st[XP_NROLE][2];
};

/* ---- the context ---------------------------------------------------------- */

int xp_ctx_init(xp_ctx *ctx, const xp_config *cfg, const struct xp_model *m, char *err, size_t errlen) {
  memset(ctx, 0, sizeof *ctx);
  ctx->cfg = cfg;
  ctx->nlin = m->nlin;
  ctx->lin_name = m->lin_name;
  xp_prec_preset(&ctx->bf16, "bf16", NULL, 0);
  xp_prec_preset(&ctx->fp32, "fp32", NULL, 0);
  exmy_format_parse("f32", &ctx->f32, NULL, 0);
  ctx->lin_prec = calloc(m->nlin ? m->nlin : 1, sizeof *ctx->lin_prec);
  ctx->ls = calloc(m->nlin ? m->nlin : 1, sizeof *ctx->ls);
  if (!ctx->lin_prec || !ctx->ls) {
    xp_ctx_free(ctx);
    return xp_errf(err, errlen, "out of memory");
  }
  if (xp_prec_check_overrides(cfg, m->nlin, m->lin_name, err, errlen)) {
    xp_ctx_free(ctx);
    return -1;
  }
  for (int i = 0; i < m->nlin; i++) {
    const xp_prec *p = xp_prec_of_layer(cfg, i, m->nlin, m->lin_name);
    ctx->lin_prec[i] = p;
    for (int t = 0; t < XP_NKIND; t++) {
      char e[EXMY_ERRLEN];
      if (exmy_recipe_parse(p->t[t].recipe, &ctx->ls[i].rec[t], e, sizeof e) ||
          exmy_recipe_state_new(&ctx->ls[i].rec[t], &ctx->ls[i].st_rec[t], e, sizeof e)) {
        xp_ctx_free(ctx);
        return xp_errf(err, errlen, "layer %s: %s", m->lin_name[i], e);
      }
      ctx->ls[i].have_rec[t] = 1;
    }
  }
  return 0;
}

void xp_ctx_free(xp_ctx *ctx) {
  if (ctx->ls)
    for (int i = 0; i < ctx->nlin; i++)
      for (int t = 0; t < XP_NKIND; t++) {
        if (ctx->ls[i].have_rec[t]) exmy_recipe_state_free(&ctx->ls[i].st_rec[t]);
        if (ctx->ls[i].qc[t].valid) exmy_qtensor_free(&ctx->ls[i].qc[t].q);
      }
  free(ctx->ls);
  free(ctx->lin_prec);
  exmy_gemm_ws_free(&ctx->ws);
  for (int i = 0; i < ctx->nwsx; i++) exmy_gemm_ws_free(&ctx->wsx[i]);
  free(ctx->wsx);
  ctx->wsx = NULL;
  ctx->nwsx = 0;
  free(ctx->batch);
  ctx->batch = NULL;
  ctx->batch_cap = 0;
  ctx->ls = NULL;
  ctx->lin_prec = NULL;
}

static const xp_prec *prec_of(const xp_ctx *ctx, int lin) {
  switch (ctx->mode) {
  case XP_MODE_FP32: return &ctx->fp32;
  case XP_MODE_HIGH: case XP_MODE_CALIBRATE: return &ctx->bf16;
  default: return lin >= 0 ? ctx->lin_prec[lin] : &ctx->cfg->attn;
  }
}

/* ---- xp_matmul ------------------------------------------------------------- */

/* A stochastic-rounding stream id from a key: one step of the library's
 * SplitMix64 from the key as state. */
static uint64_t mix64(uint64_t z) { return exmy__splitmix64(&z); }

static void set_err(xp_ctx *ctx, const char *where, const char *e) {
#pragma omp critical(xp_err)
  if (!ctx->failed) {
    ctx->failed = 1;
    snprintf(ctx->err, sizeof ctx->err, "%.60s: %.190s", where, e);
  }
}

/* out (cols x rows) = in (rows x cols)^T */
static void transpose(const float *in, size_t rows, size_t cols, float *out) {
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < cols; j++) out[j * rows + i] = in[i * cols + j];
}

typedef struct operand {
  exmy_qtensor q;
  int quantized;                /* q owns memory (else a view) */
  int cached;                   /* q is a layer cache's (quantized, not owned) */
  int trans;                    /* the GEMM's trans flag for q */
  const float *src;             /* the floats q was made from, in q's layout */
  float *scratch;               /* transposed copy */
} operand;

/* Quantize one operand.  which: 0 = A (op m x k), 1 = B (op k x n).  Stored
 * rows x cols = (trans ? k x m : m x k) for A, (trans ? n x k : k x n) for B.
 * Grouped recipes (blocks, rows, MX) need the reduction dimension along the
 * rows of storage: A as m x k and B as n x k (the TN layout of cuBLASLt). */
static int make_operand(xp_ctx *ctx, const xp_tprec *t, const exmy_recipe *recipe, exmy_recipe_state *state,
                        int lin, int sub, xp_role role, int which, const float *x, int trans, size_t outer, size_t k,
                        operand *op) {
  memset(op, 0, sizeof *op);
  size_t rows, cols;
  if (which == 0) rows = trans ? k : outer, cols = trans ? outer : k;
  else rows = trans ? outer : k, cols = trans ? k : outer;
  op->trans = trans;
  op->src = x;
  if (t->is_f32) {
    exmy_qtensor_view(&t->fmt, x, rows, cols, NULL, &op->q);
    return 0;
  }
  exmy_recipe local;
  exmy_recipe_state local_st;
  const exmy_recipe *rec = recipe;
  char e[EXMY_ERRLEN];
  if (!rec) { /* attention or the high-precision modes: a fresh recipe per call (no delayed state) */
    if (exmy_recipe_parse(t->recipe, &local, e, sizeof e) || exmy_recipe_state_new(&local, &local_st, e, sizeof e))
      return set_err(ctx, "recipe", e), -1;
    rec = &local;
    state = &local_st;
  }
  const int canon_trans = which == 0 ? 0 : 1;
  if ((rec->block_rows || rec->block_cols) && trans != canon_trans) {
    op->scratch = malloc(rows * cols * sizeof(float) + 1);
    if (!op->scratch) {
      if (rec == &local) exmy_recipe_state_free(&local_st);
      return set_err(ctx, "GEMM", "out of memory"), -1;
    }
    transpose(x, rows, cols, op->scratch);
    size_t tmp = rows;
    rows = cols;
    cols = tmp;
    op->src = op->scratch;
    op->trans = canon_trans;
  }
  exmy_rounding rnd = t->rnd;
  rnd.seed = ctx->cfg->seed;
  rnd.stream = mix64((uint64_t)ctx->step) ^ mix64(((uint64_t)(lin + 1) << 40) ^ ((uint64_t)sub << 8) ^
                                                  (uint64_t)(role * 2 + which));
  int rc = exmy_recipe_quantize(rec, &t->fmt, &rnd, op->src, rows, cols, state, &op->q, NULL, e, sizeof e);
  if (rec == &local) exmy_recipe_state_free(&local_st);
  if (rc) return set_err(ctx, "quantize", e), -1;
  op->quantized = 1;
  return 0;
}

static void free_operand(operand *op) {
  if (op->quantized) exmy_qtensor_free(&op->q);
  free(op->scratch);
}

static void dump_operand(xp_ctx *ctx, int lin, xp_role role, int which, const operand *op) {
  char dir[XP_PATH + 16], path[XP_PATH + 128], e[EXMY_ERRLEN];
  snprintf(dir, sizeof dir, "%s/dump", ctx->cfg->out_dir[0] ? ctx->cfg->out_dir : ".");
  mkdir(dir, 0777);
  const char *base = ctx->lin_name[lin];
  exmy_array a = {0};
  a.ndim = 2;
  a.shape[0] = op->q.rows;
  a.shape[1] = op->q.cols;
  a.count = op->q.rows * op->q.cols;
  a.dtype = EXMY_DTYPE_F32;
  a.data = (void *)op->src;
  snprintf(path, sizeof path, "%s/step%ld.%s.%s.%c.npy", dir, ctx->step, base, xp_role_names[role], "AB"[which]);
  if (exmy_npy_write(path, &a, e, sizeof e)) set_err(ctx, "dump", e);
  if (op->quantized || op->cached) {
    const int bytes = exmy_code_bytes(&op->q.fmt);
    a.dtype = bytes == 1 ? EXMY_DTYPE_U8 : bytes == 2 ? EXMY_DTYPE_U16 : EXMY_DTYPE_U32;
    a.data = op->q.codes;
    snprintf(path, sizeof path, "%s/step%ld.%s.%s.%c.codes.npy", dir, ctx->step, base, xp_role_names[role],
             "AB"[which]);
    if (exmy_npy_write(path, &a, e, sizeof e)) set_err(ctx, "dump", e);
  }
}

static int dump_wanted(const xp_ctx *ctx, int lin) {
  char list[256], *save = NULL;
  snprintf(list, sizeof list, "%s", ctx->cfg->dump_layers);
  for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save))
    if (xp_layer_matches(s, lin, ctx->nlin, ctx->lin_name)) return 1;
  return 0;
}

static void nan_fill(float *d, size_t n) {
  for (size_t i = 0; i < n; i++) d[i] = NAN;
}

int xp_fail(xp_ctx *ctx, const char *msg) {
  if (!ctx->failed) snprintf(ctx->err, sizeof ctx->err, "%s", msg);
  ctx->failed = 1;
  return -1;
}

/* A linear layer's GEMMs read each tensor twice in a step: x in fprop and
 * wgrad, W in fprop and dgrad, dy in dgrad and wgrad, in the same stored
 * layout.  When the cast does not depend on the call (no stochastic
 * rounding: its stream is keyed by the role) and the recipe is per tensor
 * and takes the layout as stored (none, current, delayed: a second amax of
 * the same tensor leaves delayed's history as it is), the second GEMM
 * reuses the first one's codes and scale: the same bits, one cast fewer.
 * Rows: role; columns: operand A, B.  1: may reuse the step's cached
 * operand of its kind (read after the GEMM that cached it, with the buffer
 * unchanged in between); 0: quantize and cache (fprop quantizes afresh, so a
 * later forward of the same step, an evaluation, replaces what it cached). */
static const int reuse_role[XP_NROLE][2] = {
  [XP_FPROP] = {0, 0}, [XP_DGRAD] = {0, 1}, [XP_WGRAD] = {1, 1}};

static int cacheable(const xp_tprec *t, const exmy_recipe *r) {
  return !t->is_f32 && t->rnd.mode != EXMY_SR && !r->block_rows && !r->block_cols &&
         exmy__recipe_traits_of(r->kind)->cacheable;
}

/* make_operand through the layer's cache of kind `kind` (normal mode). */
static int make_operand_cached(xp_ctx *ctx, xp_layer_state *ls, xp_tkind kind, const xp_tprec *t, int lin,
                               int sub, xp_role role, int which, const float *x, int trans, size_t outer, size_t k,
                               operand *op) {
  if (ctx->no_reuse || !cacheable(t, &ls->rec[kind]))
    return make_operand(ctx, t, &ls->rec[kind], &ls->st_rec[kind], lin, sub, role, which, x, trans, outer, k, op);
  size_t rows, cols;
  if (which == 0) rows = trans ? k : outer, cols = trans ? outer : k;
  else rows = trans ? outer : k, cols = trans ? k : outer;
  qcache *c = &ls->qc[kind];
  if (reuse_role[role][which] && c->valid && c->src == x && c->rows == rows && c->cols == cols &&
      c->step == ctx->step) {
    memset(op, 0, sizeof *op);
    op->q = c->q;
    op->cached = 1;
    op->trans = trans;
    op->src = x;
    return 0;
  }
  if (make_operand(ctx, t, &ls->rec[kind], &ls->st_rec[kind], lin, sub, role, which, x, trans, outer, k, op)) return -1;
  if (c->valid) exmy_qtensor_free(&c->q);
  *c = (qcache){.q = op->q, .src = x, .rows = rows, .cols = cols, .step = ctx->step, .valid = 1};
  op->quantized = 0; /* the cache owns it now */
  op->cached = 1;
  return 0;
}

/* One GEMM of xp_matmul on its way: the operands, then the arguments. */
/* One GEMM's arguments: the two quantized operands, fp32 D, the role's accumulation, THREADS. */
static void args_fill(exmy_gemm_args *ga, const operand *A, const operand *B, const exmy_format *d_fmt,
                      const exmy_accum *accum, int threads) {
  exmy_gemm_args_init(ga);
  ga->trans_a = A->trans;
  ga->trans_b = B->trans;
  ga->a = &A->q;
  ga->b = &B->q;
  ga->d_fmt = d_fmt;
  ga->accum = accum;
  ga->threads = threads;
}

typedef struct mm_call {
  operand A, B;
  exmy_gemm_args ga;
  int ready;                    /* the operands are made: run, then finish */
} mm_call;

/* The operands of g with its layer's precision (cached, quantized or
 * views) and the GEMM's arguments; on failure g->d is NaN and c->ready 0. */
static void mm_prepare(xp_ctx *ctx, const xp_gemm_desc *g, mm_call *c) {
  const int lin = g->lin, sub = g->sub;
  const xp_role role = g->role;
  const xp_tkind ka = g->a.kind, kb = g->b.kind;
  const float *a = g->a.p, *b = g->b.p;
  const size_t m = g->m, n = g->n, k = g->k;
  float *d = g->d;
  c->ready = 0;
  if (ctx->failed) {
    nan_fill(d, m * n);
    return;
  }
  const xp_prec *p = prec_of(ctx, lin);
  xp_layer_state *ls = lin >= 0 ? &ctx->ls[lin] : NULL;
  if (ctx->mode == XP_MODE_CALIBRATE && ls) { /* TE's calibration: record amaxes, compute high */
    const xp_prec *lp = ctx->lin_prec[lin];
    exmy_recipe_calibrate(&ls->rec[ka], &lp->t[ka].fmt, a, m * k, &ls->st_rec[ka]);
    exmy_recipe_calibrate(&ls->rec[kb], &lp->t[kb].fmt, b, k * n, &ls->st_rec[kb]);
  }
  const int normal = ctx->mode == XP_MODE_NORMAL;
  const int own = normal && ls; /* the layer's recipes and their state, else a fresh one per call */
  operand *A = &c->A, *B = &c->B;
  if (own ? make_operand_cached(ctx, ls, ka, &p->t[ka], lin, sub, role, 0, a, g->a.trans, m, k, A)
          : make_operand(ctx, &p->t[ka], NULL, NULL, lin, sub, role, 0, a, g->a.trans, m, k, A)) {
    nan_fill(d, m * n);
    return;
  }
  if (own ? make_operand_cached(ctx, ls, kb, &p->t[kb], lin, sub, role, 1, b, g->b.trans, n, k, B)
          : make_operand(ctx, &p->t[kb], NULL, NULL, lin, sub, role, 1, b, g->b.trans, n, k, B)) {
    free_operand(A);
    nan_fill(d, m * n);
    return;
  }
  exmy_gemm_args *ga = &c->ga;
  args_fill(ga, A, B, &ctx->f32, &p->accum[role], lin < 0 ? 1 : ctx->cfg->threads);
  c->ready = 1;
}

/* The statistics and dumps of a run GEMM, and its operands freed. */
static void mm_finish(xp_ctx *ctx, const xp_gemm_desc *g, mm_call *c) {
  if (!c->ready) return;
  const int lin = g->lin;
  const xp_role role = g->role;
  xp_layer_state *ls = lin >= 0 ? &ctx->ls[lin] : NULL;
  const operand *A = &c->A, *B = &c->B;
  if (ls && ctx->mode == XP_MODE_NORMAL && ctx->collect_stats) {
    const operand *ops[2] = {A, B};
    for (int w = 0; w < 2; w++) {
      if (!ops[w]->quantized && !ops[w]->cached) { ls->have_st[role][w] = 0; continue; }
      char se[EXMY_ERRLEN];
      if (exmy_qtensor_stats(&ops[w]->q, ops[w]->src, &ls->st[role][w], se, sizeof se)) {
        set_err(ctx, "statistics", se);
        ls->have_st[role][w] = 0;
        continue;
      }
      ls->st_scale[role][w] = ops[w]->q.scale[0];
      ls->have_st[role][w] = 1;
    }
  }
  if (ls && ctx->dump && dump_wanted(ctx, lin)) {
    dump_operand(ctx, lin, role, 0, A);
    dump_operand(ctx, lin, role, 1, B);
  }
  free_operand(&c->A);
  free_operand(&c->B);
  c->ready = 0;
}

/* The GEMM of a prepared call on one thread's share: ga as prepared, with
 * threads and the workspace given; an error sets ctx's and NaN-fills d. */
static void mm_run_args(xp_ctx *ctx, const xp_gemm_desc *g, exmy_gemm_args *ga, exmy_gemm_ws *ws, float *d,
                        size_t rows) {
  char e[EXMY_ERRLEN];
  if (ws ? exmy_gemm_ws_run(ga, ws, d, NULL, NULL, e, sizeof e) : exmy_gemm(ga, d, NULL, NULL, e, sizeof e)) {
    set_err(ctx, g->lin >= 0 ? ctx->lin_name[g->lin] : "attention", e);
    nan_fill(d, rows * g->n);
  }
}

/* The team a linear layer's GEMMs would use (cfg threads, else OpenMP's). */
static int team_size(const xp_ctx *ctx) {
  return ctx->cfg->threads > 0 ? ctx->cfg->threads : omp_get_max_threads();
}

/* Workspace i of the team's (0: the context's own), grown on demand; NULL
 * when out of memory (the caller then uses exmy_gemm). */
static exmy_gemm_ws *team_ws(xp_ctx *ctx, int i) {
  if (i == 0) return &ctx->ws;
  if (i > ctx->nwsx) return NULL;
  return &ctx->wsx[i - 1];
}

static int team_ws_ensure(xp_ctx *ctx, int nt) {
  if (nt - 1 <= ctx->nwsx) return 0;
  exmy_gemm_ws *w = realloc(ctx->wsx, (size_t)(nt - 1) * sizeof *w);
  if (!w) return -1;
  for (int i = ctx->nwsx; i < nt - 1; i++) exmy_gemm_ws_init(&w[i]);
  ctx->wsx = w;
  ctx->nwsx = nt - 1;
  return 0;
}

/* Can the GEMM be cut into bands of D's rows, one per thread, each an
 * exmy_gemm of its own with the same bits?  Every element of D depends only
 * on its row of op(A), its column of op(B) and the model, unless a
 * stochastic rounding's counter (i n + j) sees the row index: so A stored
 * m x k with one scale group down the rows (a per-tensor scale, or a view),
 * and no stochastic rounding in the accumulation or D's cast. */
static int row_bands_ok(const exmy_gemm_args *ga) {
  const exmy_qtensor *A = ga->a;
  if (ga->trans_a || A->srows != 1 || A->scale_codes) return 0;
  if (ga->d_rnd.mode == EXMY_SR) return 0;
  if (ga->accum->kind == EXMY_ACCUM_FORMAT && ga->accum->acc_rnd.mode == EXMY_SR) return 0;
  return 1;
}

/* Rows per band below which a band is not worth a thread */
#define XP_BAND_MIN 32

/* The linear layers' GEMMs with a team of nt threads, called from one
 * thread: one parallel region, each thread an exmy_gemm on one thread
 * (its own workspace).  calls[0..ncalls): with one call, its rows cut into
 * nt bands (row_bands_ok); with two (a layer's dgrad and wgrad, nt = 2),
 * a call per thread.  Returns 0, or -1 when it cannot (the caller runs
 * the calls one by one, each on the whole team). */
static int mm_run_team(xp_ctx *ctx, const xp_gemm_desc *const *gs, mm_call *const *calls, int ncalls, int nt) {
  if (nt < 2 || omp_in_parallel() || team_ws_ensure(ctx, nt)) return -1;
  if (ncalls == 2 && nt != 2) return -1;
  if (ncalls == 1 && (!row_bands_ok(&calls[0]->ga) || gs[0]->m < (size_t)nt * XP_BAND_MIN)) return -1;
#pragma omp parallel num_threads(nt)
  {
    const int id = omp_get_thread_num(), team = omp_get_num_threads();
    exmy_gemm_ws *ws = team_ws(ctx, id);
    if (ncalls == 2) { /* a call per thread (both on one when the runtime gave one: OMP_DYNAMIC) */
      for (int i = id; i < 2; i += team) {
        exmy_gemm_args ga = calls[i]->ga;
        ga.threads = 1;
        mm_run_args(ctx, gs[i], &ga, ws, gs[i]->d, gs[i]->m);
      }
    } else {
      const xp_gemm_desc *g = gs[0];
      const size_t m = g->m, q = m / (size_t)team, r = m % (size_t)team;
      const size_t r0 = (size_t)id * q + ((size_t)id < r ? (size_t)id : r), rows = q + ((size_t)id < r);
      exmy_gemm_args ga = calls[0]->ga;
      exmy_qtensor band = *ga.a; /* rows [r0, r0 + rows) of A: the same scale */
      band.codes = (char *)band.codes + r0 * band.cols * (size_t)exmy_code_bytes(&band.fmt);
      band.rows = rows;
      ga.a = &band;
      ga.threads = 1;
      if (rows) mm_run_args(ctx, g, &ga, ws, g->d + r0 * g->n, rows);
    }
  }
  return 0;
}

void xp_matmul(xp_ctx *ctx, const xp_gemm_desc *g) {
  mm_call c;
  mm_prepare(ctx, g, &c);
  if (!c.ready) return;
  const xp_gemm_desc *gs[1] = {g};
  mm_call *cs[1] = {&c};
  /* the linear layers (called from one thread) reuse the context's buffers;
   * attention's products run in parallel over heads, each on its own */
  if (g->lin < 0 || omp_in_parallel()) mm_run_args(ctx, g, &c.ga, NULL, g->d, g->m);
  else if (mm_run_team(ctx, gs, cs, 1, team_size(ctx))) mm_run_args(ctx, g, &c.ga, &ctx->ws, g->d, g->m);
  mm_finish(ctx, g, &c);
}

void xp_matmul_pair(xp_ctx *ctx, const xp_gemm_desc *g0, const xp_gemm_desc *g1) {
  /* a tensor kind read from two different buffers: g1's operand could
   * replace the layer's cached one g0 holds, so one after the other */
  const xp_operand *o0[2] = {&g0->a, &g0->b}, *o1[2] = {&g1->a, &g1->b};
  int clash = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) clash |= o0[i]->kind == o1[j]->kind && o0[i]->p != o1[j]->p;
  if (clash || g0->lin < 0 || g1->lin < 0 || omp_in_parallel() || team_size(ctx) != 2) {
    xp_matmul(ctx, g0);
    xp_matmul(ctx, g1);
    return;
  }
  mm_call c0, c1;
  mm_prepare(ctx, g0, &c0);
  mm_prepare(ctx, g1, &c1);
  const xp_gemm_desc *gs[2] = {g0, g1};
  mm_call *cs[2] = {&c0, &c1};
  if (!c0.ready || !c1.ready || mm_run_team(ctx, gs, cs, 2, 2)) {
    if (c0.ready) mm_run_args(ctx, g0, &c0.ga, &ctx->ws, g0->d, g0->m);
    if (c1.ready) mm_run_args(ctx, g1, &c1.ga, &ctx->ws, g1->d, g1->m);
  }
  mm_finish(ctx, g0, &c0);
  mm_finish(ctx, g1, &c1);
}

/* The arrays of a batch of count problems: operands (A, B per problem),
 * GEMM arguments and outputs, in one block kept by the context. */
typedef struct batch_arrays {
  operand *ops;
  exmy_gemm_args *args;
  void **d;
} batch_arrays;

static int batch_get(xp_ctx *ctx, size_t count, batch_arrays *ba) {
  const size_t per = 2 * sizeof(operand) + sizeof(exmy_gemm_args) + sizeof(void *);
  if (ctx->batch_cap < count) {
    void *p = malloc(count * per);
    if (!p) return -1;
    free(ctx->batch);
    ctx->batch = p;
    ctx->batch_cap = count;
  }
  char *base = ctx->batch;
  ba->ops = (operand *)base;
  ba->args = (exmy_gemm_args *)(base + 2 * count * sizeof(operand));
  ba->d = (void **)(base + 2 * count * sizeof(operand) + count * sizeof(exmy_gemm_args));
  return 0;
}

void xp_matmul_batch(xp_ctx *ctx, const xp_gemm_desc *g, size_t count, size_t stride_a, size_t stride_b,
                     size_t stride_d) {
  if (g->lin >= 0) { /* layer state (recipes, statistics, dumps) is per call: one at a time */
    for (size_t i = 0; i < count; i++) {
      xp_gemm_desc gi = *g;
      gi.sub = g->sub + (int)i;
      gi.a.p = g->a.p + i * stride_a;
      gi.b.p = g->b.p + i * stride_b;
      gi.d = g->d + i * stride_d;
      xp_matmul(ctx, &gi);
    }
    return;
  }
  const size_t m = g->m, n = g->n, k = g->k;
  batch_arrays ba;
  if (!ctx->failed && batch_get(ctx, count, &ba)) set_err(ctx, "attention", "out of memory");
  if (ctx->failed) {
    for (size_t i = 0; i < count; i++) nan_fill(g->d + i * stride_d, m * n);
    return;
  }
  const xp_prec *p = prec_of(ctx, g->lin);
  int bad = 0;
  long nb = (long)count;
  /* operands: a view of the floats, or quantized with the problem's own SR stream
   * (in parallel only then: views cost less than waking the team) */
  const int views = p->t[g->a.kind].is_f32 && p->t[g->b.kind].is_f32;
#pragma omp parallel for schedule(static) if (count > 1 && !views) reduction(| : bad)
  for (long i = 0; i < nb; i++) {
    operand *A = &ba.ops[2 * i], *B = A + 1;
    const int sub = g->sub + (int)i;
    ba.d[i] = g->d + (size_t)i * stride_d;
    memset(B, 0, sizeof *B);
    if (make_operand(ctx, &p->t[g->a.kind], NULL, NULL, g->lin, sub, g->role, 0, g->a.p + (size_t)i * stride_a,
                     g->a.trans, m, k, A) ||
        make_operand(ctx, &p->t[g->b.kind], NULL, NULL, g->lin, sub, g->role, 1, g->b.p + (size_t)i * stride_b,
                     g->b.trans, n, k, B)) {
      bad = 1;
      continue;
    }
    args_fill(&ba.args[i], A, B, &ctx->f32, &p->accum[g->role], ctx->cfg->threads); /* the batch's thread count */
  }
  char e[EXMY_ERRLEN];
  if (!bad && exmy_gemm_batch(ba.args, count, ba.d, NULL, NULL, e, sizeof e))
    set_err(ctx, "attention", e), bad = 1;
  if (bad)
    for (size_t i = 0; i < count; i++) nan_fill(g->d + i * stride_d, m * n);
  for (size_t i = 0; i < 2 * count; i++) free_operand(&ba.ops[i]);
}

/* ---- the step's end and the statistics ---------------------------------- */

void xp_ctx_step_end(xp_ctx *ctx) {
  if (ctx->mode != XP_MODE_NORMAL && ctx->mode != XP_MODE_CALIBRATE) return; /* nothing recorded */
  for (int i = 0; i < ctx->nlin; i++)
    for (int t = 0; t < XP_NKIND; t++) exmy_recipe_step(&ctx->ls[i].rec[t], &ctx->ls[i].st_rec[t]);
}

static const xp_tkind role_kinds[XP_NROLE][2] = {
  {XP_INPUT, XP_WEIGHT}, {XP_GRAD, XP_WEIGHT}, {XP_GRAD, XP_INPUT}};

void xp_ctx_stats_header(FILE *csv) {
  fprintf(csv, "step,layer,gemm,tensor,format,recipe,underflow_pct,overflow_pct,mse,cosine,snr_db,amax,scale,"
               "scale_ratio\n");
}

void xp_ctx_stats_write(xp_ctx *ctx, long step, FILE *csv, FILE *jsonl) {
  for (int i = 0; i < ctx->nlin; i++)
    for (int r = 0; r < XP_NROLE; r++)
      for (int w = 0; w < 2; w++) {
        if (!ctx->ls[i].have_st[r][w]) continue;
        const exmy_qstats *s = &ctx->ls[i].st[r][w];
        const xp_tprec *t = &ctx->lin_prec[i]->t[role_kinds[r][w]];
        const double v[8] = {100 * s->underflow_frac, 100 * s->overflow_frac, s->mse, s->cosine, s->snr_db,
                             s->amax, ctx->ls[i].st_scale[r][w], s->scale_ratio};
        if (csv) {
          /* recipes may hold commas (delayed:len=16,margin=1): quoted, as CSV wants */
          fprintf(csv, "%ld,%s,%s,%s,%s,\"%s\"", step, ctx->lin_name[i], xp_role_names[r],
                  xp_tkind_names[role_kinds[r][w]], t->fmt.name, t->recipe);
          for (int j = 0; j < 8; j++) fprintf(csv, ",%.9g", v[j]);
          fputc('\n', csv);
        }
        if (jsonl) {
          static const char *keys[8] = {"underflow_pct", "overflow_pct", "mse", "cosine", "snr_db",
                                        "amax", "scale", "scale_ratio"};
          fprintf(jsonl, "{\"step\":%ld,\"layer\":\"%s\",\"gemm\":\"%s\",\"tensor\":\"%s\",\"format\":\"%s\","
                         "\"recipe\":\"%s\"", step, ctx->lin_name[i], xp_role_names[r],
                  xp_tkind_names[role_kinds[r][w]], t->fmt.name, t->recipe);
          for (int j = 0; j < 8; j++) {
            if (isfinite(v[j])) fprintf(jsonl, ",\"%s\":%.9g", keys[j], v[j]);
            else fprintf(jsonl, ",\"%s\":null", keys[j]);
          }
          fputs("}\n", jsonl);
        }
        ctx->ls[i].have_st[r][w] = 0;
      }
}

/* Delayed-scaling state for checkpoints: each layer's recipes in order. */
int xp_ctx_recipes(xp_ctx *ctx, int lin, const exmy_recipe **rec, exmy_recipe_state **state) {
  if (lin < 0 || lin >= ctx->nlin) return 0;
  for (int t = 0; t < XP_NKIND; t++) {
    rec[t] = &ctx->ls[lin].rec[t];
    state[t] = &ctx->ls[lin].st_rec[t];
  }
  return XP_NKIND;
}
