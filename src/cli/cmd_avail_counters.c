/* cmd_avail_counters.c — `omniprof avail --counters` and `omniprof avail --pmc-check`: the
 * counters and derived metrics of a chip, and how many replay passes a set needs — offline,
 * without a GPU (CUPTI's Profiler Host API, docs/cuda.md).
 *
 * The omniprof binary does not link the SDK (it must start without it): cli_lib.c loads it and
 * plans counter sets (the same call `omniprof run --pmc` makes before the program starts).
 *
 * Usage (the options are rows of avail's table, cmd_avail.c, parsed once for every section):
 *   --counters [--chip CHIP] [--base | --derived | --constants] [--grep TEXT] [--extra-metrics
 * F.xml[:G.xml]]
 *   --pmc-check NAME... [--chip CHIP] [--replay-mode kernel|none] [--extra-metrics F.xml[:G.xml]]
 *   --counters --list-chips
 * Exit status: 0 ok; 1 the SDK or the counter backend is missing; 2 bad input (unknown chip,
 * unknown metric: the closest names are printed); 3 the set cannot be collected in the chosen
 * mode (needs more passes than allowed). The launcher prints the pass count before a run with
 * the --pmc-check path (docs/counters.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_lib.h"
#include "cli/commands.h"
#include "common/settings.h"
#include "omniprof/counters.h"

static const char *status_text(const cli_counters_api *a, omniprof_status_t st)
{
    return a->status_string ? a->status_string(st) : "error";
}

typedef struct chip_list {
    const char *want;
    int found;
    int print;
} chip_list;

static omniprof_status_t chip_cb(const char *chip, void *data)
{
    chip_list *c = data;
    if (c->print)
        printf("%s\n", chip);
    if (c->want && !strcmp(c->want, chip))
        c->found = 1;
    return OMNIPROF_STATUS_SUCCESS;
}

static const char *type_name(uint32_t t)
{
    switch (t) {
    case OMNIPROF_COUNTER_TYPE_COUNTER: return "counter";
    case OMNIPROF_COUNTER_TYPE_RATIO: return "ratio";
    case OMNIPROF_COUNTER_TYPE_THROUGHPUT: return "throughput";
    case OMNIPROF_COUNTER_TYPE_DERIVED: return "derived";
    case OMNIPROF_COUNTER_TYPE_CONSTANT: return "constant";
    default: return "?";
    }
}

typedef struct list_ctx {
    const char *grep;
    size_t n[OMNIPROF_COUNTER_TYPE_LAST];
} list_ctx;

static omniprof_status_t list_cb(const omniprof_counter_info_v0_t *i, void *data)
{
    list_ctx *x = data;
    if (x->grep && !strstr(i->name, x->grep) && !strstr(i->description, x->grep))
        return OMNIPROF_STATUS_SUCCESS;
    if (i->type < OMNIPROF_COUNTER_TYPE_LAST)
        x->n[i->type]++;
    if (i->is_derived) {
        printf("%-10s %-40s = %s", "derived", i->name, i->expression);
    } else if (i->is_constant) {
        printf("%-10s %-40s", "constant", i->name);
    } else {
        const char *hint = i->type == OMNIPROF_COUNTER_TYPE_COUNTER   ? " (.sum .avg .min .max[.per_second ...])"
                           : i->type == OMNIPROF_COUNTER_TYPE_RATIO   ? " (.ratio .pct .max_rate)"
                                                                      : " (.avg.pct_of_peak_sustained_elapsed ...)";
        printf("%-10s %s%s", type_name(i->type), i->name, hint);
    }
    if (*i->unit || *i->block)
        printf("  [%s%s%s]", i->block, *i->block && *i->unit ? ", " : "", i->unit);
    if (*i->description)
        printf("  %s", i->description);
    printf("\n");
    return OMNIPROF_STATUS_SUCCESS;
}

/* --pmc-check: plan the set (cli_lib.c) and say how many passes it needs. */
static int pmc_check(const char *const *names, size_t n, const char *chip, const char *mode, const char *extra)
{
    cli_pmc_plan plan;
    cli_pmc_status st = cli_pmc_plan_set(names, n, chip, mode, extra, &plan);
    if (st == CLI_PMC_UNAVAILABLE || st == CLI_PMC_BAD || (st == CLI_PMC_NOT_COLLECTABLE && plan.passes == 0)) {
        for (char *line = plan.message, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            fprintf(stderr, "omniprof avail: %.*s\n", (int)(nl ? nl - line : (long)strlen(line)), line);
        }
        return (int)st;
    }
    printf("%s: %zu counter%s (%zu base metric%s with gpu__time_duration.sum) need %zu pass%s%s\n", plan.chip,
           plan.n_counters, plan.n_counters == 1 ? "" : "s", plan.n_base, plan.n_base == 1 ? "" : "s", plan.passes,
           plan.passes == 1 ? "" : "es", plan.chip_assumed ? " (no --chip given: GH100 assumed)" : "");
    if (st == CLI_PMC_NOT_COLLECTABLE) {
        printf("%s\n", plan.message);
        return 3;
    }
    printf("kernel replay: each counted dispatch runs %zu time%s\n", plan.passes, plan.passes == 1 ? "" : "s");
    return 0;
}

int op_avail_counters(const avail_args *a)
{
    const char *chip = a->chip, *grep = a->grep, *extra = a->extra_metrics;
    const char *mode = a->replay_mode ? a->replay_mode : op_setting_str(OP_SET_PMC_REPLAY_MODE);
    int want_list = a->counters, want_check = a->pmc_check, want_chips = a->list_chips;
    uint32_t flags = (a->base ? OMNIPROF_COUNTER_ITERATE_BASE : 0) |
                     (a->derived ? OMNIPROF_COUNTER_ITERATE_DERIVED : 0) |
                     (a->constants ? OMNIPROF_COUNTER_ITERATE_CONSTANT : 0);
    const char *const *names = a->pmc_names;
    size_t n_names = a->n_pmc_names;
    int extra_given = extra != NULL;
    if (!want_list && !want_check && !want_chips)
        want_list = 1;
    if (extra_given && (!extra || !*extra)) {
        fprintf(stderr, "omniprof avail: --extra-metrics needs FILE.xml (':'-separated files of metric definitions)\n");
        return 2;
    }
    if (mode && *mode && strcmp(mode, "kernel") && strcmp(mode, "none")) {
        fprintf(stderr, "omniprof avail: replay mode '%s' is not valid (valid: kernel, none)\n", mode);
        return 2;
    }
    if (want_check) {
        if (n_names == 0) {
            fprintf(stderr, "omniprof avail: --pmc-check needs counter names\n");
            return 2;
        }
        return pmc_check(names, n_names, chip, mode, extra);
    }
    char err[512];
    const cli_counters_api *api = cli_counters(err, sizeof err);
    if (!api) {
        fprintf(stderr, "omniprof avail: %s\n", err);
        return 1;
    }
    chip_list cl = {chip, 0, want_chips};
    if (api->chips(chip_cb, &cl) != OMNIPROF_STATUS_SUCCESS) {
        fprintf(stderr, "omniprof avail: no hardware-counter backend (the CUDA backend with CUPTI is needed)\n");
        return 1;
    }
    if (want_chips)
        return 0;
    int assumed = 0;
    if (!chip) {
        chip = "GH100";
        assumed = 1;
    }
    if (!cli_chip_known(api, chip)) {
        fprintf(stderr, "omniprof avail: unknown chip '%s' (omniprof avail --counters --list-chips names the valid ones)\n", chip);
        return 2;
    }
    /* the listing includes the metrics of --extra-metrics files, as --pmc-check and run use them */
    if (extra && cli_load_extra_metrics(api, extra, err, sizeof err)) {
        fprintf(stderr, "omniprof avail: %s\n", err);
        return 2;
    }
    list_ctx x;
    memset(&x, 0, sizeof x);
    x.grep = grep;
    printf("Counters of %s%s (base metrics need a rollup suffix, e.g. dram__bytes_read.sum):\n", chip,
           assumed ? " (no --chip given: GH100 assumed)" : "");
    omniprof_status_t st = api->iterate(chip, flags, list_cb, &x);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        fprintf(stderr, "omniprof avail: %s\n", status_text(api, st));
        return st == OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT ? 2 : 1;
    }
    printf("%zu base (%zu counters, %zu ratios, %zu throughputs), %zu derived, %zu constants\n",
           x.n[OMNIPROF_COUNTER_TYPE_COUNTER] + x.n[OMNIPROF_COUNTER_TYPE_RATIO] + x.n[OMNIPROF_COUNTER_TYPE_THROUGHPUT],
           x.n[OMNIPROF_COUNTER_TYPE_COUNTER], x.n[OMNIPROF_COUNTER_TYPE_RATIO], x.n[OMNIPROF_COUNTER_TYPE_THROUGHPUT],
           x.n[OMNIPROF_COUNTER_TYPE_DERIVED], x.n[OMNIPROF_COUNTER_TYPE_CONSTANT]);
    return 0;
}
