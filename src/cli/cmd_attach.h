/* cmd_attach.h — `omniprof attach`'s parts, one file per job:
 *
 *   cmd_attach_options.c  the command line: attach's own options, the instrumentation options
 *                         of `omniprof instrument` (cmd_instrument.h), and every option of
 *                         `omniprof run` that applies to a running process, through run's
 *                         table and settings (cmd_run.h); the others refused by name
 *   cmd_attach.c          op_cmd_attach: the control directory and socket, the injection into
 *                         each process (attach_inject.c), the attach loop, the report */
#ifndef OMNIPROF_CLI_CMD_ATTACH_H
#define OMNIPROF_CLI_CMD_ATTACH_H

#include <stdbool.h>
#include <sys/types.h>

#include "cli/cmd_run.h"

typedef struct attach_opts {
    pid_t pid;        /* -p */
    double duration;  /* --duration seconds; <= 0: until Ctrl-C or every process ended */
    bool children;    /* --attach-children (default) */
    bool post;        /* work after the attach: --stats, --summary, a non-rocpd -f */
    run_opts ro;      /* run's options as given */
    run_plan plan;    /* what they decided (post-run work) */
    env_list env;     /* the OMNIPROF_* settings the processes get ("NAME=VALUE") */
} attach_opts;

/* Parse and check the command line into `ao`. Returns -1 to attach, else an exit status
 * (0 after --help/--version/--output-config, 2 after a printed usage error). */
int attach_read_options(int argc, char **argv, attach_opts *ao);
void attach_free_options(attach_opts *ao);

#endif /* OMNIPROF_CLI_CMD_ATTACH_H */
