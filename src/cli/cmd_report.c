/* cmd_report.c — `omniprof report -i DB... -o report.html`: one self-contained HTML page over
 * any number of databases (op_output_report in libomniprof-output, docs/report.md). Options
 * are rows of report_options (common/cli_opt.h's parser, as every command): -i takes every
 * following argument up to the next option, and --opt=value works for every option with a value.
 * Exit status: 0, 1 failure, 2 bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/number.h"
#include "cli/commands.h"
#include "common/cli_opt.h"
#include "common/term.h"
#include "output/output.h"

enum { R_INPUT, R_OUTPUT, R_TITLE, R_NO_PROGRESS, R_STRICT, R_HELP };

static const op_cli_option report_options[] = {
    {R_INPUT, "input", 'i', OP_CLI_LIST, "DB...", NULL, NULL, "input databases (any number)", -1, 0,
     0},
    {R_OUTPUT, "output", 'o', OP_CLI_VALUE, "FILE", NULL, NULL,
     "the page (default: report.html); never an input; an existing FILE is kept and the page goes "
     "to FILE-1.html (then -2, ...)",
     -1, 0, 0},
    {R_TITLE, "title", 0, OP_CLI_VALUE, "TEXT", NULL, NULL,
     "the page's title (default: omniprof report — <command>)", -1, 0, 0},
    {R_NO_PROGRESS, "no-progress", 0, OP_CLI_FLAG, NULL, NULL, NULL,
     "no progress line on stderr (shown only on a terminal anyway)", -1, 0, 0},
    {R_STRICT, "strict", 0, OP_CLI_FLAG, NULL, NULL, NULL,
     "refuse an input that holds no rocpd tables (default: skip it with a warning)", -1, 0, 0},
    {R_HELP, "help", 'h', OP_CLI_FLAG, NULL, NULL, NULL, "this text", -1, 0, 0},
};

static const op_cli_table report_tables[] = {
    {report_options, (int)(sizeof report_options / sizeof report_options[0]), NULL, 0}};

const op_cli_command report_command = {
    "report",
    "write one HTML page: tables, timeline, flame graph, causal profile",
    "omniprof report -i DB... [-o FILE.html] [--title TEXT] [--no-progress] [--strict]",
    "Writes one HTML page (script and style inline, no network: open it from disk in any browser) "
    "that summarizes the databases (omniprof run, merge, causal, rocprofv3):\n"
    "  overview     command, processes and ranks, hosts, agents, duration, what profiling cost, "
    "records dropped\n"
    "  tables       kernels, API calls, regions, MPI calls, memory operations and counters: "
    "sortable, filterable, with bars\n"
    "  timeline     activity per process, thread and stream; zoom and pan\n"
    "  CPU profile  flame graph (click to zoom, search) beside the flat profile\n"
    "  causal       program speedup against line speedup, when the inputs hold experiments\n"
    "  ranks        time per process and the most imbalanced names, with several processes\n"
    "  Perfetto     how to open every event in the Perfetto UI\n"
    "The page holds aggregates, not events: its size stays bounded (a 10 M-event database gives a "
    "page of a few MB).",
    "See also: omniprof convert -f svg (a flame graph as one SVG file), -f pftrace (Perfetto).\n\n"
    "The exit status: 0 ok, 1 failure, 2 bad input.",
    report_tables,
    1,
    0,
    NULL,
};

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "%somniprof report:%s ", op_term_sgr(stderr, OP_TERM_RED), op_term_sgr(stderr, OP_TERM_RESET));
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see omniprof report --help)\n");
    return 2;
}

typedef struct report_args {
    const char **inputs;
    size_t n;
    op_out_report_options o;
    int help;
} report_args;

static int on_option(void *ctx, const op_cli_option *opt, const char *v, int nth,
                     const char *spelled)
{
    report_args *r = ctx;
    (void)nth;
    switch (opt->id) {
    case R_INPUT: r->inputs[r->n++] = v; break;
    case R_OUTPUT:
        if (!*v) return usage_error("%s needs a file name", spelled);
        r->o.output = v;
        break;
    case R_TITLE: r->o.title = v; break;
    case R_NO_PROGRESS: r->o.progress = 0; break;
    case R_STRICT: r->o.strict = 1; break;
    case R_HELP: r->help = 1; break;
    }
    return 0;
}

int op_cmd_report(int argc, char **argv)
{
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    if (!inputs) return 1;
    report_args r = {inputs, 0, {.size = sizeof r.o, .progress = 1}, 0};
    char perr[1024];
    int rest = argc;
    int rc = op_cli_parse(&report_command, argc, argv, on_option, &r, &rest, perr, sizeof perr);
    if (rc == -1) {
        fprintf(stderr, "%somniprof report:%s %s\n", op_term_sgr(stderr, OP_TERM_RED),
                op_term_sgr(stderr, OP_TERM_RESET), perr);
        rc = 2;
    }
    if (!rc && r.help) {
        op_cli_print_help(stdout, &report_command);
        free(inputs);
        return 0;
    }
    size_t n = r.n;
    op_out_report_options o = r.o;
    if (!rc && n == 0) rc = usage_error("%s", "no input database given (-i DB...)");
    if (!rc) {
        o.inputs = inputs;
        o.n_inputs = n;
        char err[1024] = "", written[4096] = "";
        op_output_remove_temps_on_signals(1);
        int st = op_output_report(&o, written, sizeof written, err, sizeof err);
        op_output_remove_temps_on_signals(0);
        if (st) {
            fprintf(stderr, "%somniprof report:%s %s\n", op_term_sgr(stderr, OP_TERM_RED),
                    op_term_sgr(stderr, OP_TERM_RESET), err[0] ? err : "failed");
            rc = st == OP_OUT_EINPUT ? 2 : 1;
        } else {
            struct stat sb;
            char size[OP_FMT_BYTES_LEN] = "?";
            if (stat(written, &sb) == 0) op_fmt_bytes(size, sizeof size, (uint64_t)sb.st_size);
            printf("omniprof report: wrote %s%s%s (%s): open it in a browser\n",
                   op_term_sgr(stdout, OP_TERM_GREEN), written, op_term_sgr(stdout, OP_TERM_RESET),
                   size);
        }
    }
    free(inputs);
    return rc;
}
