/* main.c — the `omniprof` binary: dispatches `omniprof <command> ...` to the command's entry
 * point (commands.h). A command whose module is not built has a NULL (weak) entry and is
 * reported as such.
 *
 * Exit codes (every command): 0 success; 1 omniprof itself failed (I/O, a missing library);
 * 2 bad usage or input (unknown option, bad value: nothing was run); `run` and `sample` return
 * the program's own status (128+N when signal N ended it). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "omniprof/defines.h"

typedef struct command {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} command;

static void usage(FILE *out, const command *cmds, int n)
{
    fprintf(out,
            "usage: omniprof <command> [options]\n"
            "       omniprof --help | --version\n\n"
            "commands:\n");
    for (int i = 0; i < n; i++)
        fprintf(out, "  %-10s %s%s\n", cmds[i].name, cmds[i].summary, cmds[i].fn ? "" : " (not built)");
    fprintf(out,
            "\n`omniprof <command> --help` describes a command.\n"
            "Exit status: 0 ok; 1 omniprof failed; 2 bad usage or input (nothing was run);\n"
            "run/sample: the program's status (128+N if signal N ended it).\n");
}

int main(int argc, char **argv)
{
    const command cmds[] = {
        {"run", op_cmd_run, "run a program under the tracer (rocprofv3 options); writes <name>_results.db"},
        {"sample", op_cmd_sample, "run a program with call-stack sampling (= run --sample)"},
        {"avail", op_cmd_avail, "list settings, counters, components"},
        {"convert", op_cmd_convert, "convert databases to pftrace, json or csv"},
        {"merge", op_cmd_merge, "merge databases into one"},
        {"summary", op_cmd_summary, "print summary tables of databases"},
        {"query", op_cmd_query, "run read-only SQL over databases"},
        {"report", op_cmd_report, "write one HTML page: tables, timeline, flame graph, causal profile"},
        {"causal", op_cmd_causal, "causal profiling: virtual speedups of lines, appended to profile.coz"},
        {"attach", op_cmd_attach, "profile a running process (and its children) for a while, leave it running"},
        {"instrument", op_cmd_instrument, "record function calls of a program (uprobes, LD_AUDIT, -finstrument-functions)"},
    };
    const int n = (int)(sizeof(cmds) / sizeof(cmds[0]));
    if (argc < 2) {
        usage(stderr, cmds, n);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout, cmds, n);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "version") == 0) {
        printf("omniprof %s\n", OMNIPROF_VERSION_STRING);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (strcmp(cmd, cmds[i].name) != 0) continue;
        if (!cmds[i].fn) {
            fprintf(stderr, "omniprof %s: not built\n", cmd);
            return 1;
        }
        return cmds[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "omniprof: unknown command '%s'; valid commands:", cmd);
    for (int i = 0; i < n; i++) fprintf(stderr, " %s", cmds[i].name);
    fprintf(stderr, " (see `omniprof --help`)\n");
    return 2;
}
