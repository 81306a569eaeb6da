/* mpi_calls.c — an MPI program with a known set of calls for tests/mpi/mpi_check.py (4 ranks,
 * a ring: left = rank - 1, right = rank + 1). Every step's counts, bytes, peers and tags are
 * restated in mpi_check.py's expected() — change both together.
 *
 *   1  Send 1000 doubles right (tag 7), Recv them from the left (even ranks send first)
 *   2  Irecv 256 ints from MPI_ANY_SOURCE (tag 11), Isend 256 ints right, Waitall
 *   3  Sendrecv 10 ints right / from the left (tag 3)
 *   4  Bcast 100 ints from world rank 1; Allreduce 64 doubles; Reduce 32 floats to rank 2;
 *      Gather 4 ints to rank 0; Allgather 2 ints; Alltoall 3 ints; Barrier
 *   5  Comm_split by rank % 2; Allreduce 5 ints on it; sub-rank 0 sends 6 doubles to sub-rank 1
 *      (tag 5); Comm_free
 *   6  Win_create (16 ints), fence, Put 4 ints right, fence, Get 2 ints from the left, fence, Win_free
 *   7  rank 0 sends 7 chars to rank 3 (tag 99); rank 3 Probes (any source, tag 99), then Recvs
 *   8  Irecv 3 ints from the left (tag 21), Isend 3 ints right, Test until the receive is done,
 *      Wait for the send
 *   9  Iallreduce 3 ints (a nonblocking collective), Wait for it
 * With an argument "spin", rank 0 also spins ~100 ms before step 4 (the others wait in Bcast). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int left = (rank + n - 1) % n, right = (rank + 1) % n;
    static double d[1000], d2[1000];
    static int a[256], b[256];

    /* 1 */
    if (rank % 2 == 0) {
        MPI_Send(d, 1000, MPI_DOUBLE, right, 7, MPI_COMM_WORLD);
        MPI_Recv(d2, 1000, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(d2, 1000, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(d, 1000, MPI_DOUBLE, right, 7, MPI_COMM_WORLD);
    }
    /* 2 */
    MPI_Request req[2];
    MPI_Irecv(b, 256, MPI_INT, MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(a, 256, MPI_INT, right, 11, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    /* 3 */
    MPI_Sendrecv(a, 10, MPI_INT, right, 3, b, 10, MPI_INT, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* 4 */
    if (argc > 1 && strcmp(argv[1], "spin") == 0 && rank == 0) {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do clock_gettime(CLOCK_MONOTONIC, &t);
        while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 100000000L);
    }
    MPI_Bcast(a, 100, MPI_INT, 1, MPI_COMM_WORLD);
    MPI_Allreduce(d, d2, 64, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    float f[32], g[32];
    memset(f, 0, sizeof f);
    MPI_Reduce(f, g, 32, MPI_FLOAT, MPI_MAX, 2, MPI_COMM_WORLD);
    MPI_Gather(a, 4, MPI_INT, b, 4, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allgather(a, 2, MPI_INT, b, 2, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoall(a, 3, MPI_INT, b, 3, MPI_INT, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    /* 5 */
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &sub);
    int sr;
    MPI_Comm_rank(sub, &sr);
    MPI_Allreduce(a, b, 5, MPI_INT, MPI_SUM, sub);
    if (sr == 0) MPI_Send(d, 6, MPI_DOUBLE, 1, 5, sub);
    else if (sr == 1) MPI_Recv(d2, 6, MPI_DOUBLE, 0, 5, sub, MPI_STATUS_IGNORE);
    MPI_Comm_free(&sub);
    /* 6 */
    int win_buf[16] = {0}, put[4] = {1, 2, 3, 4}, got[2];
    MPI_Win win;
    MPI_Win_create(win_buf, sizeof win_buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    MPI_Put(put, 4, MPI_INT, right, 0, 4, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Get(got, 2, MPI_INT, left, 0, 2, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    /* 7 */
    char msg[7] = "hello!";
    if (rank == 0) MPI_Send(msg, 7, MPI_CHAR, 3, 99, MPI_COMM_WORLD);
    if (rank == 3) {
        MPI_Status st;
        MPI_Probe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &st); /* not ANY_TAG: step 8 may be ahead */
        MPI_Recv(msg, 7, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    /* 8 */
    int x[3] = {rank, rank, rank}, y[3];
    MPI_Request rr, rs;
    MPI_Irecv(y, 3, MPI_INT, left, 21, MPI_COMM_WORLD, &rr);
    MPI_Isend(x, 3, MPI_INT, right, 21, MPI_COMM_WORLD, &rs);
    int done = 0;
    while (!done) MPI_Test(&rr, &done, MPI_STATUS_IGNORE);
    MPI_Wait(&rs, MPI_STATUS_IGNORE);
    /* 9 */
    int xs[3] = {rank, 1, 2}, ys[3];
    MPI_Request rc;
    MPI_Iallreduce(xs, ys, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rc);
    MPI_Wait(&rc, MPI_STATUS_IGNORE);
    printf("rank %d of %d: %d %d\n", rank, n, y[0], got[0]);
    MPI_Finalize();
    return 0;
}
