/* cmd_merge.c — `omniprof merge`: a thin entry point over op_output_cli() in libomniprof-output
 * (src/output/cli.c), which the Python package (`python3 -m omniprof merge`) calls too, so both
 * parse the same options and give the same results and exit codes. argv[0] is "merge". */
#include "cli/commands.h"
#include "cli/merge_mpi_exec.h"
#include "output/output.h"

int op_cmd_merge(int argc, char **argv) {
    char name[] = "merge";
    if (argc < 1) {
        char *args[] = {name, 0};
        return op_output_cli(1, args);
    }
    argv[0] = name;
    if (op_merge_wants_mpi(argc, argv)) return op_merge_mpi_exec(argc, argv); /* the tree merge under mpirun */
    return op_output_cli(argc, argv);
}
