/* waits.c: how idle OpenMP threads wait.  libgomp's default spins about
 * 300,000 times at every barrier before it sleeps; with another job on one of
 * the cores, the spinning thread holds the core that the thread it waits for
 * needs, and a training step of many short parallel regions crawls (issue 34:
 * 82 -> 130-150 ms/step on nanoGPT's CPU config, 100x on tiny runs).  A
 * short spin (100) fixes that but costs a quiet machine about 30% of its
 * speed on the same config (threads asleep at every barrier), and a long one
 * (30,000) keeps the quiet speed but not the busy one.  So the choice is made
 * from what runs now: with fewer free cores than two (other runnable tasks,
 * /proc/loadavg's instantaneous count, against the cores this process may
 * use) the short spin, else the long one.  libgomp reads its wait policy once,
 * when it is loaded, so the commands that run OpenMP (train, study, gemm)
 * start themselves again with GOMP_SPINCOUNT set, unless the user has set
 * OMP_WAIT_POLICY or GOMP_SPINCOUNT.  Results never depend on it. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* spins before a thread sleeps (docs/training.md, "Busy machines") */
#define EXMY_SPIN_BUSY "100"
#define EXMY_SPIN_QUIET "30000"

/* 1 when fewer than two of this process's cores are free of other runnable
 * tasks now (0 when that cannot be read) */
static int cores_busy(void) {
  FILE *f = fopen("/proc/loadavg", "r");
  if (!f) return 0;
  double l1, l5, l15;
  int running = 0, total = 0;
  const int n = fscanf(f, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &running, &total);
  fclose(f);
  if (n != 5) return 0;
#ifdef _OPENMP
  const int cores = omp_get_num_procs(); /* the affinity mask's (taskset, a Slurm allocation) */
#else
  const int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
#endif
  return cores - (running - 1) < 2; /* running counts this process */
}

void cli_bounded_waits(char **argv) {
#ifdef _OPENMP
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return; /* the user's choice */
  if (setenv("GOMP_SPINCOUNT", cores_busy() ? EXMY_SPIN_BUSY : EXMY_SPIN_QUIET, 1)) return;
  execv("/proc/self/exe", argv); /* returns only on failure: run on, with libgomp's default */
  unsetenv("GOMP_SPINCOUNT");
#else
  (void)argv;
#endif
}
