/* cmd_report.c — `omniprof report -i DB... -o report.html`: one self-contained HTML page over
 * any number of databases (op_output_report in libomniprof-output, docs/report.md). Options
 * follow convert's conventions: -i takes every following argument up to the next option, and
 * --opt=value works for every option with a value. Exit status: 0, 1 failure, 2 bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "common/term.h"
#include "output/output.h"

static const char *const HELP_REPORT =
    "usage: omniprof report -i DB... [-o FILE.html] [--title TEXT] [--no-progress] [--strict]\n"
    "\n"
    "Writes one HTML page (script and style inline, no network: open it from disk in any browser)\n"
    "that summarizes the databases (omniprof run, merge, causal, rocprofv3):\n"
    "  overview     command, processes and ranks, hosts, agents, duration, what profiling cost,\n"
    "               records dropped\n"
    "  tables       kernels, API calls, regions, MPI calls, memory operations and counters:\n"
    "               sortable, filterable, with bars\n"
    "  timeline     activity per process, thread and stream; zoom and pan\n"
    "  CPU profile  flame graph (click to zoom, search) beside the flat profile\n"
    "  causal       program speedup against line speedup, when the inputs hold experiments\n"
    "  ranks        time per process and the most imbalanced names, with several processes\n"
    "  Perfetto     how to open every event in the Perfetto UI\n"
    "The page holds aggregates, not events: its size stays bounded (a 10 M-event database gives a\n"
    "page of a few MB).\n"
    "  -i, --input DB...     input databases (any number)\n"
    "  -o, --output FILE     the page (default: report.html); never an input; an existing FILE is\n"
    "                        kept and the page goes to FILE-1.html (then -2, ...)\n"
    "      --title TEXT      the page's title (default: omniprof report — <command>)\n"
    "      --no-progress     no progress line on stderr (shown only on a terminal anyway)\n"
    "      --strict          refuse an input that holds no rocpd tables (default: skip it with a\n"
    "                        warning)\n"
    "  -h, --help            this text\n"
    "See also: omniprof convert -f svg (a flame graph as one SVG file), -f pftrace (Perfetto).\n"
    "exit status: 0 ok, 1 failure, 2 bad input\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "%somniprof report:%s ", op_term_sgr(stderr, OP_TERM_RED), op_term_sgr(stderr, OP_TERM_RESET));
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see omniprof report --help)\n");
    return 2;
}

/* The value of option argv[*i] ("--opt=value" or the next argument), NULL when missing. */
static const char *value_of(int argc, char **argv, int *i)
{
    const char *eq = strchr(argv[*i], '=');
    if (argv[*i][1] == '-' && eq) return eq + 1;
    return *i + 1 < argc ? argv[++*i] : NULL;
}

static int is_opt(const char *arg, const char *s)
{
    size_t n = strlen(s);
    return !strncmp(arg, s, n) && (arg[n] == 0 || (arg[n] == '=' && s[1] == '-'));
}

int op_cmd_report(int argc, char **argv)
{
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    if (!inputs) return 1;
    size_t n = 0;
    op_out_report_options o = {.size = sizeof o, .progress = 1};
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(HELP_REPORT, stdout);
            free(inputs);
            return 0;
        } else if (is_opt(a, "-i") || is_opt(a, "--input")) {
            const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
            size_t before = n;
            if (eq) inputs[n++] = eq + 1;
            else
                while (i + 1 < argc && argv[i + 1][0] != '-') inputs[n++] = argv[++i];
            if (n == before) rc = usage_error("%s needs at least one database", a);
        } else if (is_opt(a, "-o") || is_opt(a, "--output")) {
            if (!(o.output = value_of(argc, argv, &i)) || !o.output[0]) rc = usage_error("%s needs a file name", a);
        } else if (is_opt(a, "--title")) {
            if (!(o.title = value_of(argc, argv, &i))) rc = usage_error("%s needs a text", a);
        } else if (!strcmp(a, "--no-progress")) {
            o.progress = 0;
        } else if (!strcmp(a, "--strict")) {
            o.strict = 1;
        } else {
            rc = usage_error("unknown option '%s'", a);
        }
    }
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
            double mb = stat(written, &sb) == 0 ? (double)sb.st_size / (1024.0 * 1024.0) : 0;
            printf("omniprof report: wrote %s%s%s (%.1f MiB): open it in a browser\n", op_term_sgr(stdout, OP_TERM_GREEN),
                   written, op_term_sgr(stdout, OP_TERM_RESET), mb);
        }
    }
    free(inputs);
    return rc;
}
