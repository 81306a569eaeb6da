/* cmd_analyze_options.c — the option table of `omniprof analyze` (common/cli_opt.h): parsing,
 * --help, the man page and the completions come from these rows. The command: cmd_analyze.c. */
#include "cli/cmd_analyze.h"

static const op_cli_option analyze_options[] = {
    {A_INPUT, "input", 'i', OP_CLI_LIST, "DB...", NULL, NULL,
     "input databases: one per process, or a merged multi-rank one (omniprof merge); never "
     "modified",
     -1, 0, 0},
    {A_WHATIF, "what-if", 'w', OP_CLI_VALUE, "TARGET:REGEX=FACTOR", NULL, NULL,
     "scale the matching work by FACTOR (0 removes it, 0.5 halves it) and predict the run: "
     "targets kernel, copy, api, mpi, range, function, rank; may repeat "
     "(e.g. 'kernel:gemm.*=0.5' 'range:data_load=0' 'function:decode=0.7')",
     -1, 0, 0},
    {A_ITERATION, "iteration", 0, OP_CLI_VALUE, "RANGE", NULL, NULL,
     "a user/NVTX range name that delimits iterations (e.g. step): per-iteration times, measured "
     "and predicted",
     -1, 0, 0},
    {A_WINDOW, "window", 0, OP_CLI_VALUE, "START:END", NULL, NULL,
     "the critical path of this window only: seconds from the run's start (e.g. 1.5:3)", -1, 0, 0},
    {A_FORMAT, "format", 'f', OP_CLI_ENUM, NULL, "console|json", NULL,
     "console (default): what to fix first, then the details; json: the documented schema "
     "(docs/analyze.md)",
     -1, 0, 0},
    {A_JSON, "json", 0, OP_CLI_FLAG, NULL, NULL, NULL, "the same as --format json", -1, 0, 0},
    {A_OUTPUT, "output", 'o', OP_CLI_VALUE, "FILE", NULL, NULL,
     "write there instead of stdout; an existing FILE is never replaced (refused)", -1, 0, 0},
    {A_TOP, "top", 0, OP_CLI_VALUE, "N", NULL, NULL, "rows per console table (default 10)", -1, 0,
     0},
    {A_TIMING, "timing", 0, OP_CLI_FLAG, NULL, NULL, NULL,
     "print on stderr the seconds spent loading the graph, analyzing, and one further what-if "
     "evaluation of the loaded graph (wall and CPU), beside a floor: one pass writing every "
     "event's time (the benchmark reads them)",
     -1, 0, 0},
    {A_HELP, "help", 'h', OP_CLI_FLAG, NULL, NULL, NULL, "this text", -1, 0, 0},
};

static const op_cli_table analyze_tables[] = {
    {analyze_options, (int)(sizeof analyze_options / sizeof analyze_options[0]), NULL, 0}};

const op_cli_command analyze_command = {
    "analyze",
    "what made the run slow: critical path, what-if predictions, ranked findings",
    "omniprof analyze -i DB... [--what-if TARGET:REGEX=FACTOR]... [--iteration RANGE]\n"
    "[--window START:END] [--format console|json] [-o FILE] [--top N]",
    "Builds the execution graph of the run from the databases (CPU threads, GPU streams, launches, "
    "host waits, thread joins and barriers, MPI messages and collectives across ranks), finds its "
    "critical path, and ranks findings by the wall time the what-if engine predicts fixing each "
    "would save. --what-if rescales matching work and predicts the run time, overall and per "
    "iteration, across ranks (a faster straggler shortens every rank's wait).\n\n"
    "The first screen says what to fix; findings under 5 % predicted gain are listed as not worth "
    "fixing. docs/analyze.md gives the method, the rules and their thresholds, the JSON schema and "
    "what the graph cannot see.",
    "The exit status: 0 ok, 1 failure, 2 bad input or usage.",
    analyze_tables,
    1,
    0,
    NULL,
};
