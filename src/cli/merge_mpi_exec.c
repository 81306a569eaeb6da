/* merge_mpi_exec.c — `omniprof merge --mpi` (docs/multinode.md): the tree merge under the job
 * launcher runs in omniprof-merge-mpi (src/output/mpi/merge_mpi.c), the one program that links
 * MPI, built beside this binary only where MPI is found; this binary links no MPI and replaces
 * itself by that program (same process, same environment: the launcher's variables reach
 * MPI_Init). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/merge_mpi_exec.h"

int op_merge_wants_mpi(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--mpi")) return 1;
    return 0;
}

int op_merge_mpi_exec(int argc, char **argv) {
    char self[PATH_MAX], helper[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "omniprof merge: --mpi: cannot find this program's folder (/proc/self/exe)\n");
        return 1;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(helper, sizeof helper, "%s/omniprof-merge-mpi", slash ? self : ".");
    if (access(helper, X_OK) != 0) {
        fprintf(stderr, "omniprof merge: --mpi needs %s, which is built only where an MPI C library is found "
                        "(install libopenmpi-dev and rebuild); without --mpi, omniprof merge merges in one process\n",
                helper);
        return 2;
    }
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args) {
        fprintf(stderr, "omniprof merge: out of memory\n");
        return 1;
    }
    int k = 0;
    args[k++] = helper;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--mpi") != 0) args[k++] = argv[i];
    execv(helper, args);
    perror("omniprof merge: --mpi: cannot start omniprof-merge-mpi");
    free(args);
    return 1;
}
