/* study_mpi.c: `mpirun -n N exmy study FILE` (built with ./configure --with-mpi).
 * Rank 0 serves a dynamic queue of run indices (a phase's runs only once
 * every earlier phase's are done) and then writes the report from the runs'
 * result files; ranks 1..N-1 each ask for a run, train it, ask for the next.
 * Every run is a pure function of its config and writes the same files
 * whichever rank trains it, so the results equal one process's. */
#include "cli/cli.h"
#include "experiments/study.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_ASK = 11, TAG_RUN = 12 };

/* Rank 0: answer every worker until each has been told "no more" (-1). */
static int serve(void *ctx, int nrun, const int *phase) {
  (void)ctx;
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int *order = malloc((size_t)(nrun + 1) * sizeof *order), *parked = malloc((size_t)size * sizeof *parked);
  if (!order || !parked) MPI_Abort(MPI_COMM_WORLD, 1);
  int n = 0, maxph = 0;
  for (int i = 0; i < nrun; i++)
    if (phase[i] > maxph) maxph = phase[i];
  for (int p = 0; p <= maxph; p++) /* stable by phase */
    for (int i = 0; i < nrun; i++)
      if (phase[i] == p) order[n++] = i;
  int next = 0, running = 0, npark = 0, active = size - 1;
  while (active > 0) {
    int done;
    MPI_Status stt;
    MPI_Recv(&done, 1, MPI_INT, MPI_ANY_SOURCE, TAG_ASK, MPI_COMM_WORLD, &stt);
    if (done >= 0) running--;
    parked[npark++] = stt.MPI_SOURCE;
    /* hand out what may start: the next run when its phase's predecessors are done */
    while (npark > 0) {
      int give;
      if (next >= n) give = -1;
      else if (next > 0 && phase[order[next]] != phase[order[next - 1]] && running > 0) break; /* phase barrier */
      else give = order[next++];
      const int w = parked[--npark];
      MPI_Send(&give, 1, MPI_INT, w, TAG_RUN, MPI_COMM_WORLD);
      if (give >= 0) running++;
      else active--;
    }
  }
  free(order);
  free(parked);
  return 0;
}

static int next(void *ctx, int done) {
  (void)ctx;
  int give;
  MPI_Send(&done, 1, MPI_INT, 0, TAG_ASK, MPI_COMM_WORLD);
  MPI_Recv(&give, 1, MPI_INT, 0, TAG_RUN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return give;
}

/* Under mpirun with more than one rank: MPI on, the queue set, 1; else 0. */
int study_mpi_begin(study_opts *so) {
  const char *ws = getenv("OMPI_COMM_WORLD_SIZE");
  if (!ws) ws = getenv("PMI_SIZE");
  if (!ws || atoi(ws) < 2) return 0;
  MPI_Init(NULL, NULL);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  static study_queue q = {serve, next, NULL}; /* the functions only: no state */
  so->queue = &q;
  so->queue_role = rank == 0 ? STUDY_QUEUE_SERVER : STUDY_QUEUE_WORKER;
  so->threads = 1;
  return 1;
}

void study_mpi_end(void) {
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
}
