/* waits.c: how idle OpenMP threads wait.  libgomp's default spins about
 * 300,000 times at every barrier before it sleeps; with another job on one of
 * the cores, the spinning thread holds the core that the thread it waits for
 * needs, and a training step of many short parallel regions crawls (issue 34:
 * 82 -> 130-150 ms/step on nanoGPT's CPU config, 100x on tiny runs).  libgomp
 * reads its wait policy once, when it is loaded, so the commands that run
 * OpenMP (train, study, gemm) start themselves again with a short spin
 * (GOMP_SPINCOUNT=EXMY_SPINCOUNT) when the user has set neither
 * OMP_WAIT_POLICY nor GOMP_SPINCOUNT.  Results never depend on it. */
#include "cli/cli.h"

#include <stdlib.h>
#include <unistd.h>

/* spins before a thread sleeps: a few microseconds (docs/training.md, "Busy machines") */
#define EXMY_SPINCOUNT "100"

void cli_bounded_waits(char **argv) {
#ifdef _OPENMP
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return; /* the user's choice */
  if (setenv("GOMP_SPINCOUNT", EXMY_SPINCOUNT, 1)) return;
  execv("/proc/self/exe", argv); /* returns only on failure: run on, with libgomp's default */
  unsetenv("GOMP_SPINCOUNT");
#else
  (void)argv;
#endif
}
