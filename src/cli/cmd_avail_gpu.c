/* cmd_avail_gpu.c — `omniprof avail` for the GPU samplers (docs/cuda.md):
 *   --pm-metrics [--chip CHIP] [--grep TEXT]   the metrics PM sampling can collect on a chip
 *                                              (base names; add a rollup: .sum .avg .max ...),
 *                                              offline (CUPTI's Profiler Host API, no GPU needed)
 *   --pm-check METRIC... [--chip CHIP]         whether a set can be PM-sampled (known names, one
 *                                              pass), offline; what `omniprof run --pm-sampling`
 *                                              checks before the program starts
 *   --pc-sampling                              the PC sampling configurations (method, unit,
 *                                              interval range) of each GPU agent; needs the GPU
 * The binary does not link the SDK: cli_lib.c loads it. Exit status: 0 ok; 1 the SDK or a
 * backend that can sample is missing (or no GPU for --pc-sampling); 2 bad input (unknown chip or
 * metric); 3 the set needs more than one pass. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_lib.h"
#include "cli/commands.h"
#include "omniprof/omniprof.h"

static const char *type_name(uint32_t t)
{
    return t == OMNIPROF_COUNTER_TYPE_COUNTER ? "counter" : t == OMNIPROF_COUNTER_TYPE_RATIO ? "ratio"
                                                        : t == OMNIPROF_COUNTER_TYPE_THROUGHPUT ? "throughput" : "?";
}

typedef struct pm_list {
    const char *grep;
    size_t n;
} pm_list;

static int pm_one(const omniprof_pm_sampling_metric_t *m, void *data)
{
    pm_list *l = data;
    if (l->grep && !strstr(m->name, l->grep) && !strstr(m->description, l->grep)) return 0;
    printf("%-56s %-10s %-12s %s\n", m->name, type_name(m->type), m->unit, m->description);
    l->n++;
    return 0;
}

static int list_pm(const char *chip, const char *grep)
{
    char err[512] = "";
    const cli_counters_api *api = cli_counters(err, sizeof err);
    if (!api || !api->pm_iterate) {
        fprintf(stderr, "omniprof avail --pm-metrics: not available: %s\n", err[0] ? err : "the SDK has no PM sampling");
        return 1;
    }
    printf("%-56s %-10s %-12s %s\n", "METRIC (base name; add .sum/.avg/.min/.max...)", "TYPE", "UNIT", "DESCRIPTION");
    pm_list l = {grep, 0};
    omniprof_status_t st = api->pm_iterate(chip, pm_one, &l);
    if (st == OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT) {
        fprintf(stderr, "omniprof avail --pm-metrics: CUPTI does not know the chip '%s' (`omniprof avail --counters "
                        "--list-chips` names the valid ones)\n", chip);
        return 2;
    }
    if (st != OMNIPROF_STATUS_SUCCESS) {
        fprintf(stderr, "omniprof avail --pm-metrics: %s\n",
                api->status_string ? api->status_string(st) : "no backend that can PM-sample");
        return 1;
    }
    fprintf(stderr, "%zu PM-sampling metric%s on %s%s\n", l.n, l.n == 1 ? "" : "s", chip, grep ? " matching" : "");
    return 0;
}

static int check_pm(const char *const *names, size_t n, const char *chip)
{
    cli_pmc_plan p;
    cli_pmc_status st = cli_pm_check(names, n, chip, &p);
    if (st == CLI_PMC_OK) {
        printf("%s: %zu metric%s in %zu pass: can be PM-sampled\n", p.chip, n, n == 1 ? "" : "s", p.passes);
        return 0;
    }
    fprintf(stderr, "omniprof avail --pm-check: %s\n", p.message);
    return st == CLI_PMC_UNAVAILABLE ? 1 : st == CLI_PMC_NOT_COLLECTABLE ? 3 : 2;
}

/* ---- PC sampling configurations of the GPU agents (the SDK's query, through dlsym) ---------- */

typedef struct pcs_api {
    omniprof_status_t (*agents)(omniprof_agent_version_t, omniprof_query_available_agents_cb_t, size_t, void *);
    omniprof_status_t (*configs)(omniprof_agent_id_t, omniprof_pc_sampling_configuration_cb_t, void *);
    const char *(*status_string)(omniprof_status_t);
    size_t gpus;
} pcs_api;

static omniprof_status_t print_configs(const omniprof_pc_sampling_configuration_t *c, size_t n, void *data)
{
    (void)data;
    for (size_t i = 0; i < n; i++)
        printf("  %-18s unit %-7s interval %llu..%llu%s, default %s%s\n",
               c[i].method == OMNIPROF_PC_SAMPLING_METHOD_KERNEL_SERIALIZED ? "kernel-serialized" : "continuous",
               c[i].unit == OMNIPROF_PC_SAMPLING_UNIT_CYCLES ? "cycles" : "?", (unsigned long long)c[i].min_interval,
               (unsigned long long)c[i].max_interval,
               (c[i].flags & OMNIPROF_PC_SAMPLING_CONFIG_INTERVAL_POW2) ? " (rounded down to a power of two)" : "",
               c[i].default_interval ? "" : "the vendor's",
               c[i].num_stall_reasons ? "" : "; stall reasons known when sampling starts");
    return OMNIPROF_STATUS_SUCCESS;
}

static omniprof_status_t each_agent(omniprof_agent_version_t v, const void **agents, size_t n, void *data)
{
    (void)v;
    pcs_api *a = data;
    for (size_t i = 0; i < n; i++) {
        const omniprof_agent_v0_t *ag = agents[i];
        if (ag->type != OMNIPROF_AGENT_TYPE_GPU) continue;
        a->gpus++;
        printf("GPU agent %u: %s (compute capability %u.%u)\n", ag->type_index, ag->name ? ag->name : "?",
               ag->compute_capability_major, ag->compute_capability_minor);
        omniprof_status_t st = a->configs(ag->id, print_configs, NULL);
        if (st != OMNIPROF_STATUS_SUCCESS)
            printf("  no PC sampling: %s\n", a->status_string ? a->status_string(st) : "not available");
    }
    return OMNIPROF_STATUS_SUCCESS;
}

static int list_pc_sampling(void)
{
    char err[512] = "";
    void *h = cli_dlopen("libomniprof-sdk.so", RTLD_NOW | RTLD_GLOBAL, err, sizeof err);
    pcs_api a = {0};
    if (h) {
        *(void **)&a.agents = dlsym(h, "omniprof_query_available_agents");
        *(void **)&a.configs = dlsym(h, "omniprof_query_pc_sampling_agent_configurations");
        *(void **)&a.status_string = dlsym(h, "omniprof_get_status_string");
    }
    if (!a.agents || !a.configs) {
        fprintf(stderr, "omniprof avail --pc-sampling: not available: %s\n", err[0] ? err : "the SDK has no PC sampling");
        return 1;
    }
    a.agents(OMNIPROF_AGENT_INFO_VERSION_0, each_agent, sizeof(omniprof_agent_v0_t), &a);
    if (!a.gpus) {
        fprintf(stderr, "omniprof avail --pc-sampling: no GPU agent on this machine (configurations are queried from "
                        "the devices); CUDA GPUs of compute capability 7.0 and later sample with the kernel-serialized "
                        "and continuous methods, in cycles\n");
        return 1;
    }
    return 0;
}

int op_avail_gpu(const avail_args *a)
{
    const char *chip = a->chip, *grep = a->grep;
    int mode = a->pm_metrics ? 1 : a->pm_check ? 2 : 3; /* 1 metrics, 2 check, 3 pc sampling */
    const char **names = a->pm_names;
    size_t n = a->n_pm_names;
    int rc;
    if (mode == 1) {
        rc = list_pm(chip ? chip : "GH100", grep);
    } else if (mode == 2) {
        if (!n) {
            fprintf(stderr, "omniprof avail --pm-check: give the metrics, e.g. --pm-check dram__bytes_read.sum "
                            "sm__cycles_active.avg\n");
            rc = 2;
        } else {
            rc = check_pm(names, n, chip);
        }
    } else {
        rc = list_pc_sampling();
    }
    return rc;
}
