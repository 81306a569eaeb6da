/* cmd_diff.c — `omniprof diff BASE.db NEW.db`: what got slower or faster between two profiles,
 * with a noise estimate per item (op_output_diff in libomniprof-output, src/output/diff.c;
 * docs/diff.md). Options are rows of diff_options (common/cli_opt.h's parser, as every command).
 * Exit status: 0, 1 failure, 2 bad input, 3 a significant regression above --fail-above. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/cli_opt.h"
#include "common/term.h"
#include "output/diff.h"
#include "output/output.h"

enum { D_ITERATION, D_FAIL_ABOVE, D_MIN_CHANGE, D_ALPHA, D_TOP, D_JSON, D_OUTPUT, D_HELP };

static const op_cli_option diff_options[] = {
    {D_ITERATION, "iteration", 0, OP_CLI_VALUE, "NAME", NULL, NULL,
     "the NVTX/user range that delimits one iteration (e.g. step): its instances are compared "
     "as the item `iteration NAME`",
     -1, 0, 0},
    {D_FAIL_ABOVE, "fail-above", 0, OP_CLI_VALUE, "PCT", NULL, NULL,
     "exit with status 3 when an item is significantly slower by more than PCT % (for CI)", -1, 0,
     0},
    {D_MIN_CHANGE, "min-change", 0, OP_CLI_VALUE, "PCT", NULL, NULL,
     "smallest change, in %, that can be significant (default 5)", -1, 0, 0},
    {D_ALPHA, "alpha", 0, OP_CLI_VALUE, "P", NULL, NULL,
     "false-alarm rate over all items of one diff, 0 < P < 1 (default 0.01)", -1, 0, 0},
    {D_TOP, "top", 0, OP_CLI_VALUE, "N", NULL, NULL,
     "rows of the console table (default 20; 0: every item)", -1, 0, 0},
    {D_JSON, "json", 0, OP_CLI_FLAG, NULL, NULL, NULL,
     "write the JSON document (schema omniprof.diff, version 1) instead of the table", -1, 0, 0},
    {D_OUTPUT, "output", 'o', OP_CLI_VALUE, "FILE", NULL, NULL,
     "write to FILE instead of stdout; never an input, never an existing file", -1, 0, 0},
    {D_HELP, "help", 'h', OP_CLI_FLAG, NULL, NULL, NULL, "this text", -1, 0, 0},
};

static const op_cli_table diff_tables[] = {
    {diff_options, (int)(sizeof diff_options / sizeof diff_options[0]), NULL, 0}};

const op_cli_command diff_command = {
    "diff",
    "compare two profiles: what got slower or faster, beyond the noise",
    "omniprof diff BASE.db NEW.db [--iteration NAME] [--fail-above PCT] [--json] [-o FILE]",
    "Compares two databases (omniprof run, merge, rocprofv3) item by item: kernels, copies, API "
    "calls, user/NVTX ranges, MPI calls, CPU functions (self samples) and, with --iteration, "
    "iterations. For each item: the change of its time per instance, the noise of that change "
    "(99 % interval from the per-instance spread; Poisson for sample counts), a p-value "
    "(Mann-Whitney U on the per-instance durations) and whether the change is significant: p "
    "below alpha divided by the number of items, at least --min-change, and larger than the "
    "noise. Significant changes come first, by time delta weighted by the change (docs/diff.md). "
    "Neither input is modified.",
    "The exit status: 0 ok, 1 failure, 2 bad input, 3 a significant regression larger than "
    "--fail-above.",
    diff_tables,
    1,
    OP_CLI_PROGRAM, /* stops at BASE; op_cmd_diff goes on after each database */
    NULL,
};

static int fail(int code, const char *fmt, const char *arg)
{
    fprintf(stderr, "%somniprof diff:%s ", op_term_sgr(stderr, OP_TERM_RED),
            op_term_sgr(stderr, OP_TERM_RESET));
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return code;
}

typedef struct diff_args {
    op_diff_options o;
    double fail_above;
    int has_fail_above, json, help;
    long top;
    const char *output;
} diff_args;

static int parse_num(const char *v, double lo, double hi, double *out)
{
    char *end;
    double d = strtod(v, &end);
    if (!*v || *end || !(d >= lo && d <= hi)) return -1;
    *out = d;
    return 0;
}

static int on_option(void *ctx, const op_cli_option *opt, const char *v, int nth,
                     const char *spelled)
{
    diff_args *d = ctx;
    double x;
    (void)nth;
    (void)spelled;
    switch (opt->id) {
    case D_ITERATION:
        d->o.iteration = v;
        break;
    case D_FAIL_ABOVE:
        if (parse_num(v, 0, 1e9, &x))
            return fail(-2, "--fail-above '%s': give a percentage >= 0 (e.g. 10)", v);
        d->fail_above = x;
        d->has_fail_above = 1;
        break;
    case D_MIN_CHANGE:
        if (parse_num(v, 0, 1e9, &x))
            return fail(-2, "--min-change '%s': give a percentage >= 0 (e.g. 5)", v);
        d->o.min_change_pct = x;
        break;
    case D_ALPHA:
        if (parse_num(v, 1e-300, 0.999999, &x) || x <= 0)
            return fail(-2, "--alpha '%s': give a probability between 0 and 1 (e.g. 0.01)", v);
        d->o.alpha = x;
        break;
    case D_TOP:
        if (parse_num(v, 0, 1e9, &x) || x != (double)(long)x)
            return fail(-2, "--top '%s': give a whole number >= 0", v);
        d->top = (long)x;
        break;
    case D_JSON:
        d->json = 1;
        break;
    case D_OUTPUT:
        if (!*v) return fail(-2, "%s", "-o needs a file name");
        d->output = v;
        break;
    case D_HELP:
        d->help = 1;
        break;
    }
    return 0;
}

int op_cmd_diff(int argc, char **argv)
{
    diff_args d = {.o = {.size = sizeof d.o, .min_change_pct = 5.0, .alpha = 0.01}, .top = 20};
    char perr[1024];
    /* Options may come before, between and after the two databases: parse up to a word that
     * is not an option, take it, parse on from it (it stands where the command's name was). */
    const char *pos[3];
    int n_pos = 0, ac = argc, rc = 0;
    char **av = argv;
    for (;;) {
        int rest = ac;
        rc = op_cli_parse(&diff_command, ac, av, on_option, &d, &rest, perr, sizeof perr);
        if (rc == -1) return fail(2, "%s (see omniprof diff --help)", perr);
        if (rc) return 2;
        if (rest >= ac) break;
        if (n_pos < 3) pos[n_pos] = av[rest];
        n_pos++;
        av += rest;
        ac -= rest;
    }
    if (d.help) {
        op_cli_print_help(stdout, &diff_command);
        return 0;
    }
    if (n_pos != 2) {
        char m[64];
        snprintf(m, sizeof m, "%d", n_pos);
        return fail(
            2, "needs exactly two databases, BASE and NEW; %s given (see omniprof diff --help)", m);
    }
    d.o.base = pos[0];
    d.o.new_ = pos[1];
    FILE *f = stdout;
    if (d.output) {
        if (!strcmp(d.output, d.o.base) || !strcmp(d.output, d.o.new_))
            return fail(2, "-o %s is an input: give another file", d.output);
        f = fopen(d.output, "wx");
        if (!f)
            return fail(2,
                        "-o %s: exists or cannot be created (an existing file is never replaced)",
                        d.output);
    }
    char err[1024] = "";
    op_diff_result *r = NULL;
    int st = op_output_diff(&d.o, &r, err, sizeof err);
    if (st) {
        if (f != stdout) {
            fclose(f);
            remove(d.output);
        }
        return fail(st == OP_OUT_EINPUT ? 2 : 1, "%s", err[0] ? err : "failed");
    }
    if (d.json)
        op_diff_print_json(f, &d.o, r);
    else
        op_diff_print_text(f, &d.o, r, (size_t)d.top);
    rc = 0;
    if (f != stdout && fclose(f)) rc = fail(1, "%s: write failed", d.output);
    if (d.has_fail_above) {
        for (size_t i = 0; i < r->n_items; i++) {
            const op_diff_item *it = &r->items[i];
            if (it->status != OP_DIFF_SLOWER || it->change_pct <= d.fail_above) continue;
            char m[1200];
            snprintf(m, sizeof m,
                     "regression: %s %s is %.1f %% slower (+-%.1f %%), above --fail-above %g",
                     op_diff_kind_name[it->kind], it->name, it->change_pct, it->noise_pct,
                     d.fail_above);
            fail(3, "%s", m);
            rc = 3;
            break;
        }
    }
    op_diff_result_free(r);
    return rc;
}
