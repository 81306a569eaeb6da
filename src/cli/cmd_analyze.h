/* cmd_analyze.h — `omniprof analyze`'s option ids, shared by its table (cmd_analyze_options.c)
 * and the command (cmd_analyze.c). */
#ifndef OMNIPROF_CLI_CMD_ANALYZE_H
#define OMNIPROF_CLI_CMD_ANALYZE_H

#include "cli/commands.h"

enum {
    A_INPUT,
    A_WHATIF,
    A_ITERATION,
    A_WINDOW,
    A_FORMAT,
    A_JSON,
    A_OUTPUT,
    A_TOP,
    A_TIMING,
    A_HELP
};

#endif /* OMNIPROF_CLI_CMD_ANALYZE_H */
