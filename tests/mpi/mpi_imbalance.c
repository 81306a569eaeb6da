/* mpi_imbalance.c — an MPI program whose ranks do unequal work, for tests/mpi/xrank_check.py
 * (cross-rank summaries, docs/multinode.md). ITERS times: each rank spins in the range
 * "compute" (omniprof user API) for BASE_MS, world rank SLOW (2) for SLOW_MS; then a ring
 * exchange (Isend right / Irecv left, tag 1, Waitall: rank SLOW + 1 waits there for its message),
 * MPI_Allreduce (where the ranks before SLOW wait for it) and MPI_Barrier. Change
 * xrank_check.py with these numbers. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

#include "omniprof/user.h"

#define ITERS 3
#define BASE_MS 20
#define SLOW_MS 200
#define SLOW 2

static void spin_ms(long ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ms * 1000000L);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int left = (rank + n - 1) % n, right = (rank + 1) % n;
    double x = rank, sum = 0;
    int out[64] = {0}, in[64];
    for (int it = 0; it < ITERS; it++) {
        omniprof_range_push("compute");
        spin_ms(rank == SLOW ? SLOW_MS : BASE_MS);
        omniprof_range_pop();
        MPI_Request rq[2];
        MPI_Irecv(in, 64, MPI_INT, left, 1, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(out, 64, MPI_INT, right, 1, MPI_COMM_WORLD, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    printf("rank %d of %d: %g\n", rank, n, sum);
    MPI_Finalize();
    return 0;
}
