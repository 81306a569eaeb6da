/* commands.h — the omniprof binary's subcommands. main.c dispatches on argv[1]; each command
 * lives in its own file (cmd_<name>.c) and returns the process exit status (see exit codes in
 * main.c's usage text: 0 ok, 1 runtime failure, 2 bad usage/input; `run` returns the
 * program's status). Declared weak so the binary links while a command's module is absent:
 * main reports "omniprof <cmd>: not built" for a NULL entry. */
#ifndef OMNIPROF_CLI_COMMANDS_H
#define OMNIPROF_CLI_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/cli_opt.h"

#define OP_CLI_WEAK __attribute__((weak))

/* Each command's option tables and texts (common/cli_opt.h): --help, `omniprof help CMD`, the
 * man pages and the completion scripts are generated from them. Weak like the entry points;
 * convert, merge, summary and query live in libomniprof-output (op_output_cli_command). */
extern const op_cli_command run_command OP_CLI_WEAK;        /* cmd_run_options.c */
extern const op_cli_command sample_command OP_CLI_WEAK;     /* cmd_run_options.c */
extern const op_cli_command avail_command OP_CLI_WEAK;      /* cmd_avail.c */
extern const op_cli_command report_command OP_CLI_WEAK;     /* cmd_report.c */
extern const op_cli_command causal_command OP_CLI_WEAK;     /* cmd_causal.c */
extern const op_cli_command attach_command OP_CLI_WEAK;     /* cmd_attach_options.c */
extern const op_cli_command instrument_command OP_CLI_WEAK; /* cmd_instrument.c */
extern const op_cli_command analyze_command OP_CLI_WEAK;    /* cmd_analyze_options.c */
extern const op_cli_command diff_command OP_CLI_WEAK;       /* cmd_diff.c */

int op_cmd_run(int argc, char **argv) OP_CLI_WEAK;     /* cmd_run.c     (tool/launcher) */
int op_cmd_sample(int argc, char **argv) OP_CLI_WEAK;  /* cmd_run.c: `run --sample` shorthand */
int op_cmd_avail(int argc, char **argv) OP_CLI_WEAK;   /* cmd_avail.c */
int op_cmd_convert(int argc, char **argv) OP_CLI_WEAK; /* cmd_convert.c (output) */
int op_cmd_merge(int argc, char **argv) OP_CLI_WEAK;   /* cmd_merge.c   (output) */
int op_cmd_summary(int argc, char **argv) OP_CLI_WEAK; /* cmd_summary.c (output) */
int op_cmd_query(int argc, char **argv) OP_CLI_WEAK;   /* cmd_query.c   (output) */
int op_cmd_report(int argc, char **argv) OP_CLI_WEAK;  /* cmd_report.c  (output: op_output_report) */
int op_cmd_causal(int argc, char **argv) OP_CLI_WEAK;  /* cmd_causal.c  (causal profiling runs) */
int op_cmd_instrument(int argc, char **argv) OP_CLI_WEAK; /* cmd_instrument.c (instrument) */
int op_cmd_attach(int argc, char **argv) OP_CLI_WEAK;     /* cmd_attach.c, attach_inject.c */
int op_cmd_analyze(int argc, char **argv) OP_CLI_WEAK;    /* cmd_analyze.c (src/analyze) */
int op_cmd_diff(int argc, char **argv) OP_CLI_WEAK;       /* cmd_diff.c (output/diff.c) */

/* `omniprof avail`'s options, parsed once (cmd_avail.c) for every section. */
typedef struct avail_args {
    bool settings, json, help;
    bool counters, list_chips, base, derived, constants; /* --counters and its filters */
    bool pmc_check, pm_metrics, pm_check, pc_sampling, components, cpu_events;
    const char *chip, *grep, *replay_mode, *extra_metrics; /* NULL: not given */
    const char **pmc_names, **pm_names;                    /* --pmc-check, --pm-check words */
    size_t n_pmc_names, n_pm_names;
} avail_args;

/* `omniprof avail` sections (weak where another module may leave them out: NULL when not
 * built). Each prints its section to stdout and returns an exit status. */
int op_avail_counters(const avail_args *a) OP_CLI_WEAK;   /* --counters, --pmc-check (counters) */
int op_avail_components(const avail_args *a) OP_CLI_WEAK; /* --components, --cpu-events (cpu) */
int op_avail_gpu(
    const avail_args *a); /* --pm-metrics, --pm-check, --pc-sampling (cmd_avail_gpu.c) */

#endif /* OMNIPROF_CLI_COMMANDS_H */
