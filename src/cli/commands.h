/* commands.h — the omniprof binary's subcommands. main.c dispatches on argv[1]; each command
 * lives in its own file (cmd_<name>.c) and returns the process exit status (see exit codes in
 * main.c's usage text: 0 ok, 1 runtime failure, 2 bad usage/input; `run` returns the
 * program's status). Declared weak so the binary links while a command's module is absent:
 * main reports "omniprof <cmd>: not built" for a NULL entry. */
#ifndef OMNIPROF_CLI_COMMANDS_H
#define OMNIPROF_CLI_COMMANDS_H

#define OP_CLI_WEAK __attribute__((weak))

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

/* `omniprof avail` sections contributed by other modules (weak; NULL when not built).
 * Each prints its section to stdout and returns an exit status. */
int op_avail_counters(int argc, char **argv) OP_CLI_WEAK;   /* --counters, --pmc-check (counters) */
int op_avail_components(int argc, char **argv) OP_CLI_WEAK; /* --components, --cpu-events (cpu) */
int op_avail_gpu(int argc, char **argv); /* --pm-metrics, --pm-check, --pc-sampling (cmd_avail_gpu.c) */

#endif /* OMNIPROF_CLI_COMMANDS_H */
