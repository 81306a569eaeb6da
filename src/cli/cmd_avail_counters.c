/* cmd_avail_counters.c — `omniprof avail --counters` and `omniprof avail --pmc-check`: the
 * counters and derived metrics of a chip, and how many replay passes a set needs — offline,
 * without a GPU (CUPTI's Profiler Host API, ref/cupti.md F3).
 *
 * The omniprof binary does not link the SDK (it must start without it); this file dlopens
 * libomniprof-sdk.so from ../lib beside the binary (else the loader's search path) and calls the
 * public counters API (include/omniprof/counters.h) through dlsym.
 *
 * Usage (argv as `omniprof avail` received it; unknown options are ignored so the avail
 * command can pass its whole argv):
 *   --counters [--chip CHIP] [--base | --derived | --constants] [--grep TEXT]
 *   --pmc-check NAME... [--chip CHIP] [--replay-mode kernel|none]
 *   --counters --list-chips
 * Exit status: 0 ok; 1 the SDK or the counter backend is missing; 2 bad input (unknown chip,
 * unknown metric: the closest names are printed); 3 the set cannot be collected in the chosen
 * mode (needs more passes than allowed). The launcher prints the pass count before a run with
 * the --pmc-check path (docs/counters.md). */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/settings.h"
#include "omniprof/counters.h"

typedef struct sdk_api {
    omniprof_status_t (*find)(const char *, const char *, omniprof_counter_id_t *);
    omniprof_status_t (*suggest)(const char *, const char *, const char **, size_t, size_t *);
    omniprof_status_t (*iterate)(const char *, uint32_t, omniprof_counter_iterate_cb_t, void *);
    omniprof_status_t (*chips)(omniprof_status_t (*)(const char *, void *), void *);
    omniprof_status_t (*info)(omniprof_counter_id_t, omniprof_counter_info_version_t, void *);
    omniprof_status_t (*config)(const char *, const omniprof_counter_id_t *, size_t, omniprof_counter_config_id_t *);
    omniprof_status_t (*passes)(omniprof_counter_config_id_t, size_t *, size_t *);
    omniprof_status_t (*destroy)(omniprof_counter_config_id_t);
    const char *(*status_string)(omniprof_status_t);
    const char *(*last_error)(void);
} sdk_api;

static int load_sdk(sdk_api *a)
{
    void *h = NULL;
    char path[PATH_MAX + 64];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *dir = dirname(exe);
        snprintf(path, sizeof path, "%s/../lib/libomniprof-sdk.so", dir);
        h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    }
    if (!h)
        h = dlopen("libomniprof-sdk.so", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "omniprof avail: cannot load libomniprof-sdk.so (%s)\n", dlerror());
        return -1;
    }
    *(void **)&a->find = dlsym(h, "omniprof_find_counter");
    *(void **)&a->suggest = dlsym(h, "omniprof_suggest_counters");
    *(void **)&a->iterate = dlsym(h, "omniprof_iterate_chip_counters");
    *(void **)&a->chips = dlsym(h, "omniprof_iterate_chips");
    *(void **)&a->info = dlsym(h, "omniprof_query_counter_info");
    *(void **)&a->config = dlsym(h, "omniprof_create_counter_config_for_chip");
    *(void **)&a->passes = dlsym(h, "omniprof_query_counter_config_passes");
    *(void **)&a->destroy = dlsym(h, "omniprof_destroy_counter_config");
    *(void **)&a->status_string = dlsym(h, "omniprof_get_status_string");
    *(void **)&a->last_error = dlsym(h, "omniprof_get_counter_error_string");
    if (!a->find || !a->suggest || !a->iterate || !a->chips || !a->info || !a->config || !a->passes ||
        !a->destroy) {
        fprintf(stderr, "omniprof avail: libomniprof-sdk.so was built without the counters API\n");
        return -1;
    }
    return 0;
}

static const char *status_text(const sdk_api *a, omniprof_status_t st)
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

static void print_unknown(const sdk_api *a, const char *chip, const char *name)
{
    const char *best[5];
    size_t n = 0;
    a->suggest(chip, name, best, 5, &n);
    fprintf(stderr, "omniprof avail: unknown counter or metric '%s' for %s", name, chip);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s%s", i ? ", " : "; closest: ", best[i]);
    fprintf(stderr, "\n");
}

int op_avail_counters(int argc, char **argv)
{
    const char *chip = NULL, *grep = NULL, *mode = op_setting_str(OP_SET_PMC_REPLAY_MODE);
    int want_list = 0, want_check = 0, want_chips = 0;
    uint32_t flags = 0;
    const char *names[256];
    size_t n_names = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--counters") || !strcmp(a, "--pmc") || !strcmp(a, "counters")) {
            want_list = 1;
        } else if (!strcmp(a, "--pmc-check") || !strcmp(a, "pmc-check")) {
            want_check = 1;
            while (i + 1 < argc && argv[i + 1][0] != '-' && n_names < 256)
                names[n_names++] = argv[++i];
        } else if (!strcmp(a, "--chip") && i + 1 < argc) {
            chip = argv[++i];
        } else if (!strncmp(a, "--chip=", 7)) {
            chip = a + 7;
        } else if (!strcmp(a, "--grep") && i + 1 < argc) {
            grep = argv[++i];
        } else if (!strcmp(a, "--replay-mode") && i + 1 < argc) {
            mode = argv[++i];
        } else if (!strcmp(a, "--base")) {
            flags |= OMNIPROF_COUNTER_ITERATE_BASE;
        } else if (!strcmp(a, "--derived")) {
            flags |= OMNIPROF_COUNTER_ITERATE_DERIVED;
        } else if (!strcmp(a, "--constants")) {
            flags |= OMNIPROF_COUNTER_ITERATE_CONSTANT;
        } else if (!strcmp(a, "--list-chips")) {
            want_chips = 1;
        }
    }
    if (!want_list && !want_check && !want_chips)
        want_list = 1;
    if (mode && *mode && strcmp(mode, "kernel") && strcmp(mode, "none")) {
        fprintf(stderr, "omniprof avail: replay mode '%s' is not valid (valid: kernel, none)\n", mode);
        return 2;
    }
    sdk_api api;
    memset(&api, 0, sizeof api);
    if (load_sdk(&api))
        return 1;
    chip_list cl = {chip, 0, want_chips};
    if (api.chips(chip_cb, &cl) != OMNIPROF_STATUS_SUCCESS) {
        fprintf(stderr, "omniprof avail: no hardware-counter backend (the CUDA backend with CUPTI is needed)\n");
        return 1;
    }
    if (want_chips)
        return 0;
    int assumed = 0;
    if (!chip) {
        chip = "GH100";
        assumed = 1;
        cl.want = chip;
        api.chips(chip_cb, &cl);
    }
    if (!cl.found) {
        fprintf(stderr, "omniprof avail: unknown chip '%s' (omniprof avail --counters --list-chips names the valid ones)\n", chip);
        return 2;
    }
    if (want_check) {
        if (n_names == 0) {
            fprintf(stderr, "omniprof avail: --pmc-check needs counter names\n");
            return 2;
        }
        omniprof_counter_id_t ids[256];
        int bad = 0;
        for (size_t i = 0; i < n_names; i++) {
            omniprof_status_t st = api.find(chip, names[i], &ids[i]);
            if (st == OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND) {
                print_unknown(&api, chip, names[i]);
                bad = 1;
            } else if (st != OMNIPROF_STATUS_SUCCESS) {
                fprintf(stderr, "omniprof avail: '%s': %s\n", names[i], status_text(&api, st));
                bad = 1;
            }
        }
        if (bad)
            return 2;
        omniprof_counter_config_id_t cfg = {0};
        omniprof_status_t st = api.config(chip, ids, n_names, &cfg);
        if (st != OMNIPROF_STATUS_SUCCESS) {
            const char *why = api.last_error ? api.last_error() : "";
            fprintf(stderr, "omniprof avail: the set cannot be planned on %s: %s\n", chip,
                    why && *why ? why : status_text(&api, st));
            return st == OMNIPROF_STATUS_ERROR_EXCEEDS_HW_LIMIT ? 3 : 2;
        }
        size_t passes = 0, nbase = 0;
        api.passes(cfg, &passes, &nbase);
        api.destroy(cfg);
        printf("%s: %zu counter%s (%zu base metric%s with gpu__time_duration.sum) need %zu pass%s%s\n", chip, n_names,
               n_names == 1 ? "" : "s", nbase, nbase == 1 ? "" : "s", passes, passes == 1 ? "" : "es",
               assumed ? " (no --chip given: GH100 assumed)" : "");
        unsigned long max_passes = (unsigned long)op_setting_uint(OP_SET_PMC_MAX_PASSES);
        if (passes > 1 && mode && !strcmp(mode, "none")) {
            printf("not collectable with replay mode 'none' (one pass): use kernel replay (the default: each counted "
                   "dispatch is replayed %zu times) or split the set into groups, one program run each "
                   "(--pmc A B --pmc C D)\n",
                   passes);
            return 3;
        }
        if (max_passes && passes > max_passes) {
            printf("not collectable: more than OMNIPROF_PMC_MAX_PASSES=%lu passes; split the set into groups "
                   "(--pmc A B --pmc C D)\n",
                   max_passes);
            return 3;
        }
        printf("kernel replay: each counted dispatch runs %zu time%s\n", passes, passes == 1 ? "" : "s");
        return 0;
    }
    list_ctx x;
    memset(&x, 0, sizeof x);
    x.grep = grep;
    printf("Counters of %s%s (base metrics need a rollup suffix, e.g. dram__bytes_read.sum):\n", chip,
           assumed ? " (no --chip given: GH100 assumed)" : "");
    omniprof_status_t st = api.iterate(chip, flags, list_cb, &x);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        fprintf(stderr, "omniprof avail: %s\n", status_text(&api, st));
        return st == OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT ? 2 : 1;
    }
    printf("%zu base (%zu counters, %zu ratios, %zu throughputs), %zu derived, %zu constants\n",
           x.n[OMNIPROF_COUNTER_TYPE_COUNTER] + x.n[OMNIPROF_COUNTER_TYPE_RATIO] + x.n[OMNIPROF_COUNTER_TYPE_THROUGHPUT],
           x.n[OMNIPROF_COUNTER_TYPE_COUNTER], x.n[OMNIPROF_COUNTER_TYPE_RATIO], x.n[OMNIPROF_COUNTER_TYPE_THROUGHPUT],
           x.n[OMNIPROF_COUNTER_TYPE_DERIVED], x.n[OMNIPROF_COUNTER_TYPE_CONSTANT]);
    return 0;
}
