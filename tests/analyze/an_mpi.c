/* an_mpi.c — an MPI program with one straggler rank for `omniprof analyze`
 * (tests/analyze/analyze_check.py, mpirun -np 4): ITERS times every rank works BASE_MS in the
 * range "compute", rank 2 works EXTRA_MS more in the range "extra"; then a ring exchange
 * (Irecv left, Isend right, Waitall) and an MPI_Allreduce, where the others wait for rank 2.
 * On paper an iteration lasts BASE_MS + EXTRA_MS: halving "extra" (the knob) shortens every
 * rank's iteration by EXTRA_MS / 2.
 * usage: an_mpi [ITERS [BASE_MS [EXTRA_MS]]] */
#include <mpi.h>
#include <stdio.h>

#include "an_work.h"
#include "omniprof/user.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = (int)an_arg(argc, argv, 1, 8);
    double base_ms = an_arg(argc, argv, 2, 20), extra_ms = an_arg(argc, argv, 3, 40);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int left = (rank + n - 1) % n, right = (rank + 1) % n;
    double x = rank, sum = 0;
    int out[64] = {0}, in[64];
    for (int it = 0; it < iters; it++) {
        omniprof_range_push("step");
        omniprof_range_push("compute");
        an_work_ms(base_ms);
        omniprof_range_pop();
        if (rank == 2) {
            omniprof_range_push("extra");
            an_work_ms(extra_ms);
            omniprof_range_pop();
        }
        MPI_Request rq[2];
        MPI_Irecv(in, 64, MPI_INT, left, 1, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(out, 64, MPI_INT, right, 1, MPI_COMM_WORLD, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        omniprof_range_pop();
    }
    printf("rank %d of %d: %g\n", rank, n, sum);
    MPI_Finalize();
    return 0;
}
