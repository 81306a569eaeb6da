/* mpi_ranks.c — MPI test program: init, spin a little in rank_work, finalize. */
#include <mpi.h>
#include <stdio.h>

__attribute__((noinline)) double rank_work(long n)
{
    volatile double x = 0;
    for (long i = 0; i < n; i++) x += (double)i * 0.5;
    return x;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank_work(30000000L);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d of %d\n", rank, size);
    MPI_Finalize();
    return 0;
}
