/* cmd_instrument.h — the instrumentation options (-i/--include, -e/--exclude, -m/--modules,
 * --min-instructions, --max-functions, --throttle, --method, --list) that `omniprof instrument`
 * and `omniprof attach --instrument` share (cmd_instrument.c). */
#ifndef OMNIPROF_CLI_CMD_INSTRUMENT_H
#define OMNIPROF_CLI_CMD_INSTRUMENT_H

#include <stdbool.h>

#include "common/cli_opt.h"

typedef struct ins_opts {
    char include[2048], exclude[2048], modules[2048]; /* several -i/-e/-m are OR'd */
    const char *min_insns, *max_functions, *throttle, *method;
    bool list;
} ins_opts;

/* The instrumentation rows (common/cli_opt.h), shared by instrument's and attach's tables. */
#define INS_N_OPTIONS 8 /* checked against the definition's rows by the compiler */
extern const op_cli_option ins_options[INS_N_OPTIONS];
extern const int ins_n_options;
/* Is `row` one of ins_options? */
bool ins_is_option(const op_cli_option *row);
/* One value of an instrumentation row into `o`. */
void ins_store_option(ins_opts *o, const op_cli_option *row, const char *value);

/* Check the values (numbers, --throttle, --method, the regexes). Returns 0 or -1 (printed as
 * "omniprof <cmd>: ..."). */
int ins_check_values(const ins_opts *o, const char *cmd);

#endif /* OMNIPROF_CLI_CMD_INSTRUMENT_H */
