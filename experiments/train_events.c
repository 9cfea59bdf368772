/* train_events.c: the events of a run (docs/training.md, "Runs"), one row
 * each in the table below.  A row names its key and gives a hook for each
 * point of the run it acts at (train.h: setup, resume, begin, mode, end);
 * the loop in train.c calls every row's hook at that point and knows no
 * event by name.  A new event is a row, not an `if` in the loop. */
#include "experiments/train.h"

#include <math.h>

typedef struct event {
  const char *key;              /* the config key that asks for it */
  void (*setup)(xp_run *r, const xp_config *c);
  void (*resume)(xp_run *r, const xp_config *c, long start, int same);
  void (*begin)(xp_run *r, const xp_config *c, long step);
  int (*mode)(xp_run *r, const xp_config *c, xp_step *st);
  void (*end)(xp_run *r, const xp_config *c, const xp_step *st);
} event;

/* ---- range shift: the same function, other tensor ranges ------------------ */

static void shift_ranges(xp_run *r, const xp_config *c, long step) {
  r->model.ops->range_shift(&r->model, &r->opt, c->range_shift);
  if (c->progress)
    fprintf(stderr, "step %ld: range_shift %d: norms x 2^%d, the weights after them x 2^%d\n", step, c->range_shift,
            c->range_shift, -c->range_shift);
}

/* the calibration stress test: only into another precision, so a run
 * restarted from its own (already shifted) checkpoint is not shifted twice */
static void range_shift_resume(xp_run *r, const xp_config *c, long start, int same) {
  if (c->range_shift && c->range_shift_step < 0 && !same) shift_ranges(r, c, start);
}

/* a scheduled shift; a resume past it finds it in the checkpoint's weights */
static void range_shift_begin(xp_run *r, const xp_config *c, long step) {
  if (c->range_shift && c->range_shift_step == step) shift_ranges(r, c, step);
}

/* ---- data switch: the tokens renamed from a step on ----------------------- */

/* The batches are renamed by xp_data_batch (a function of the step); the
 * divergence rule starts again at the switch. */
static void data_switch_setup(xp_run *r, const xp_config *c) { xp_detector_data_switch(&r->det, c->data_switch); }

/* ---- check and fallback ----------------------------------------------------- */

/* In a fallback the step runs in bf16.  Otherwise every check_every steps
 * the step's forward runs in bf16 and in the run's precision from the same
 * state; a disagreement beyond check_tol starts a fallback of
 * fallback_steps steps, this one included. */
static int fallback_mode(xp_run *r, const xp_config *c, xp_step *st) {
  if (r->fallback_left > 0) {
    st->mode = XP_MODE_HIGH;
    return 0;
  }
  if (!c->check_every || st->s % c->check_every) return 0;
  double hi, lo;
  r->ctx.mode = XP_MODE_HIGH;
  if (xp_model_forward(&r->model, &r->ctx, &r->bb.b, &hi)) return -1;
  r->ctx.mode = XP_MODE_NORMAL;
  if (xp_model_forward(&r->model, &r->ctx, &r->bb.b, &lo)) return -1;
  r->res->checks++;
  if (!(fabs(lo - hi) <= c->check_tol * fabs(hi))) {
    r->res->fallbacks++;
    r->fallback_left = c->fallback_steps;
    st->mode = XP_MODE_HIGH;
    if (c->progress == 2 || (c->progress && !r->tty))
      fprintf(stderr, "step %ld: check failed (loss %.5g vs bf16 %.5g): bf16 for %ld steps\n", st->s, lo, hi,
              c->fallback_steps);
  }
  return 0;
}

static void fallback_end(xp_run *r, const xp_config *c, const xp_step *st) {
  (void)c;
  if (st->mode == XP_MODE_HIGH && r->fallback_left > 0) r->fallback_left--;
}

/* ---- the table -------------------------------------------------------------- */

static const event events[] = {
  {.key = "range_shift", .resume = range_shift_resume, .begin = range_shift_begin},
  /* the schedule itself restarts the cosine (xp_lr_at): no hook */
  {.key = "lr_restart"},
  {.key = "data_switch", .setup = data_switch_setup},
  {.key = "check_every", .mode = fallback_mode, .end = fallback_end},
};
#define NEVENTS (int)(sizeof events / sizeof events[0])

void xp_events_setup(xp_run *r, const xp_config *c) {
  for (int i = 0; i < NEVENTS; i++)
    if (events[i].setup) events[i].setup(r, c);
}

void xp_events_resume(xp_run *r, const xp_config *c, long start, int same) {
  for (int i = 0; i < NEVENTS; i++)
    if (events[i].resume) events[i].resume(r, c, start, same);
}

void xp_events_begin(xp_run *r, const xp_config *c, long step) {
  for (int i = 0; i < NEVENTS; i++)
    if (events[i].begin) events[i].begin(r, c, step);
}

int xp_events_mode(xp_run *r, const xp_config *c, xp_step *st) {
  for (int i = 0; i < NEVENTS; i++)
    if (events[i].mode && events[i].mode(r, c, st)) return -1;
  return 0;
}

void xp_events_end(xp_run *r, const xp_config *c, const xp_step *st) {
  for (int i = 0; i < NEVENTS; i++)
    if (events[i].end) events[i].end(r, c, st);
}
