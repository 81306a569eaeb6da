/* cmd_instrument.h — the instrumentation options (-i/--include, -e/--exclude, -m/--modules,
 * --min-instructions, --max-functions, --throttle, --method, --list) that `omniprof instrument`
 * and `omniprof attach --instrument` share (cmd_instrument.c). */
#ifndef OMNIPROF_CLI_CMD_INSTRUMENT_H
#define OMNIPROF_CLI_CMD_INSTRUMENT_H

#include <stdbool.h>

typedef struct ins_opts {
    char include[2048], exclude[2048], modules[2048]; /* several -i/-e/-m are OR'd */
    const char *min_insns, *max_functions, *throttle, *method;
    bool list;
} ins_opts;

/* Read the instrumentation options of argv[1..] into `o`, every other word into fwd[*nf...]
 * (with its value, as given). Stops at "--". Returns the index of "--" (or argc), -1 after a
 * usage error printed as "omniprof <cmd>: ...", -2 after printing instrument's --help. */
int ins_parse_args(int argc, char **argv, ins_opts *o, char **fwd, int *nf, const char *cmd);

/* Check the values (numbers, --throttle, --method, the regexes). Returns 0 or -1 (printed as
 * "omniprof <cmd>: ..."). */
int ins_check_values(const ins_opts *o, const char *cmd);

#endif /* OMNIPROF_CLI_CMD_INSTRUMENT_H */
