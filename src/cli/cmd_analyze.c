/* cmd_analyze.c — `omniprof analyze -i DB...`: loads the execution graph (src/analyze), runs
 * the analysis and prints it on the console or as JSON. Inputs are opened read-only by the
 * reader; an output file never replaces an existing file. Exit status: 0, 1 failure, 2 bad
 * input or usage. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "cli/cmd_analyze.h"
#include "common/term.h"

typedef struct analyze_args {
    const char **inputs;
    size_t n;
    an_whatif *whatifs;
    size_t n_whatifs;
    an_options o;
    int json, help, timing;
    const char *output;
} analyze_args;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_s(void) /* this process's CPU time (a loaded machine's wall time waits) */
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int fail(int rc, const char *msg)
{
    fprintf(stderr, "%somniprof analyze:%s %s\n", op_term_sgr(stderr, OP_TERM_RED),
            op_term_sgr(stderr, OP_TERM_RESET), msg);
    return rc;
}

static int on_option(void *ctx, const op_cli_option *opt, const char *v, int nth,
                     const char *spelled)
{
    analyze_args *a = ctx;
    char err[512];
    (void)nth;
    switch (opt->id) {
    case A_INPUT: a->inputs[a->n++] = v; break;
    case A_WHATIF:
        if (an_whatif_parse(v, &a->whatifs[a->n_whatifs], err, sizeof err) != 0)
            return fail(2, err);
        a->n_whatifs++;
        break;
    case A_ITERATION:
        if (!*v) return fail(2, "--iteration needs a range name (e.g. step)");
        a->o.iteration = v;
        break;
    case A_WINDOW: {
        char *e1 = NULL, *e2 = NULL;
        double s = strtod(v, &e1);
        double t = (e1 && *e1 == ':') ? strtod(e1 + 1, &e2) : -1;
        if (!e1 || *e1 != ':' || !e2 || *e2 || !(s >= 0) || !(t > s)) {
            snprintf(err, sizeof err,
                     "%s '%s': expected START:END in seconds from the run's start, START < END "
                     "(e.g. 1.5:3)",
                     spelled, v);
            return fail(2, err);
        }
        a->o.win0 = (int64_t)(s * 1e9);
        a->o.win1 = (int64_t)(t * 1e9);
        break;
    }
    case A_FORMAT: a->json = !strcmp(v, "json"); break;
    case A_JSON: a->json = 1; break;
    case A_OUTPUT:
        if (!*v) return fail(2, "-o needs a file name");
        a->output = v;
        break;
    case A_TOP: {
        char *e = NULL;
        long t = strtol(v, &e, 10);
        if (!*v || *e || t < 1 || t > 100000) {
            snprintf(err, sizeof err, "%s '%s': expected a number of rows from 1 to 100000",
                     spelled, v);
            return fail(2, err);
        }
        a->o.top = (int)t;
        break;
    }
    case A_TIMING: a->timing = 1; break;
    case A_HELP: a->help = 1; break;
    }
    return 0;
}

int op_cmd_analyze(int argc, char **argv)
{
    analyze_args a;
    memset(&a, 0, sizeof a);
    a.inputs = calloc((size_t)argc + 1, sizeof *a.inputs);
    a.whatifs = calloc((size_t)argc + 1, sizeof *a.whatifs);
    if (!a.inputs || !a.whatifs) {
        free(a.inputs);
        free(a.whatifs);
        return 1;
    }
    char err[1024];
    int rest = argc,
        rc = op_cli_parse(&analyze_command, argc, argv, on_option, &a, &rest, err, sizeof err);
    if (rc == -1) rc = fail(2, err);
    an_graph *g = NULL;
    an_report r;
    memset(&r, 0, sizeof r);
    FILE *out = stdout;
    if (!rc && a.help) {
        op_cli_print_help(stdout, &analyze_command);
        goto done;
    }
    if (!rc && !a.n)
        rc = fail(2, "no input database given (-i DB...; see omniprof analyze --help)");
    for (size_t i = 0; !rc && a.output && i < a.n; i++)
        if (!strcmp(a.inputs[i], a.output))
            rc = fail(2, "-o names an input: inputs are never written");
    if (rc) goto done;
    double t_start = now_s();
    if (an_graph_load(a.inputs, a.n, &g, err, sizeof err) != 0) {
        rc = fail(2, err);
        goto done;
    }
    a.o.whatifs = a.whatifs;
    a.o.n_whatifs = a.n_whatifs;
    double t_loaded = now_s();
    if (an_analyze(g, &a.o, &r, err, sizeof err) != 0) {
        rc = fail(1, err);
        goto done;
    }
    if (a.timing) {
        /* one further what-if on the loaded graph (factors and evaluation), and its floor:
         * one pass that writes every event's recorded time (what any evaluation must touch) */
        double t_analyzed = now_s(), c_analyzed = cpu_s();
        an_factors(g, a.o.whatifs, a.o.n_whatifs);
        an_evaluate(g);
        double t_eval = now_s(), c_eval = cpu_s();
        an_sweep(g);
        double t_sweep = now_s(), c_sweep = cpu_s();
        fprintf(stderr,
                "omniprof analyze: timing load=%.3f s analyze=%.3f s whatif=%.3f s "
                "whatif_cpu=%.3f s sweep=%.3f s sweep_cpu=%.3f s nodes=%zu edges=%zu\n",
                t_loaded - t_start, t_analyzed - t_loaded, t_eval - t_analyzed,
                c_eval - c_analyzed, t_sweep - t_eval, c_sweep - c_eval, g->n_nodes,
                an_edge_count(g));
        an_factors(g, NULL, 0);
        an_evaluate(g);
    }
    if (a.output) {
        int fd = open(a.output, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
            snprintf(err, sizeof err, "%s: %s%s", a.output, strerror(errno),
                     errno == EEXIST
                         ? " (an existing file is never replaced: remove it or pick another name)"
                         : "");
            rc = fail(2, err);
            goto done;
        }
        out = fdopen(fd, "w");
        if (!out) {
            close(fd);
            rc = fail(1, "out of memory");
            goto done;
        }
    }
    if (a.o.iteration && !r.n_iters)
        fprintf(stderr, "omniprof analyze: no range named '%s' in the inputs: no iterations\n",
                a.o.iteration);
    if (a.json)
        an_print_json(out, g, &a.o, &r, a.inputs, a.n);
    else
        an_print_console(out, g, &a.o, &r);
    if (out != stdout && fclose(out) != 0) rc = fail(1, "writing the output failed");
done:
    an_report_free(&r);
    an_graph_free(g);
    for (size_t i = 0; i < a.n_whatifs; i++) an_whatif_free(&a.whatifs[i]);
    free(a.whatifs);
    free(a.inputs);
    return rc;
}
