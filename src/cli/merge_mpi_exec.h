/* merge_mpi_exec.h — `omniprof merge --mpi` (merge_mpi_exec.c). */
#ifndef OMNIPROF_CLI_MERGE_MPI_EXEC_H
#define OMNIPROF_CLI_MERGE_MPI_EXEC_H

/* 1 when the merge arguments (argv[0] "merge") ask for --mpi. */
int op_merge_wants_mpi(int argc, char **argv);
/* Replaces the process by omniprof-merge-mpi (beside this binary) with the arguments less
 * --mpi; returns an exit status only when it cannot (the message printed). */
int op_merge_mpi_exec(int argc, char **argv);

#endif /* OMNIPROF_CLI_MERGE_MPI_EXEC_H */
