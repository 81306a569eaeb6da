/* perf_event_names.c — perf(1)'s event names to perf_event_attr type and config (see the
 * header for the forms). The named events are the CPU catalog's (one list: cpu_catalog.h);
 * this file adds perf's aliases, the generic cache events and raw events. */
#include "common/perf_event_names.h"

#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>

#include "backend/cpu/cpu_catalog.h"

static const struct {
    const char *alias, *name;
} k_aliases[] = {
    {"cpu-cycles", "cycles"},   {"branch-instructions", "branches"}, {"faults", "page-faults"},
    {"cs", "context-switches"}, {"migrations", "cpu-migrations"},
};

static const char *const k_caches[] = {
    [PERF_COUNT_HW_CACHE_L1D] = "L1-dcache", [PERF_COUNT_HW_CACHE_L1I] = "L1-icache",
    [PERF_COUNT_HW_CACHE_LL] = "LLC",        [PERF_COUNT_HW_CACHE_DTLB] = "dTLB",
    [PERF_COUNT_HW_CACHE_ITLB] = "iTLB",     [PERF_COUNT_HW_CACHE_BPU] = "branch",
    [PERF_COUNT_HW_CACHE_NODE] = "node",
};
static const char *const k_ops[] = {
    [PERF_COUNT_HW_CACHE_OP_READ] = "load",
    [PERF_COUNT_HW_CACHE_OP_WRITE] = "store",
    [PERF_COUNT_HW_CACHE_OP_PREFETCH] = "prefetch",
};

static int named(const char *name, size_t n, uint32_t *type, uint64_t *config)
{
    for (size_t k = 0; k < sizeof k_aliases / sizeof k_aliases[0]; k++)
        if (strlen(k_aliases[k].alias) == n && strncmp(k_aliases[k].alias, name, n) == 0) {
            name = k_aliases[k].name;
            n = strlen(name);
        }
    for (size_t i = 0; i < OP_CPU_CATALOG_N_EVENTS; i++)
        if (strlen(op_cpu_catalog_events[i].name) == n &&
            strncmp(op_cpu_catalog_events[i].name, name, n) == 0) {
            *type = op_cpu_catalog_events[i].type;
            *config = op_cpu_catalog_events[i].config;
            return 0;
        }
    return -1;
}

/* <cache>-<op>s (accesses) or <cache>-<op>-misses */
static int cache(const char *name, size_t n, uint32_t *type, uint64_t *config)
{
    for (size_t c = 0; c < sizeof k_caches / sizeof k_caches[0]; c++) {
        size_t cl = strlen(k_caches[c]);
        if (n <= cl + 1 || strncmp(name, k_caches[c], cl) != 0 || name[cl] != '-') continue;
        const char *rest = name + cl + 1;
        size_t rn = n - cl - 1;
        for (size_t o = 0; o < sizeof k_ops / sizeof k_ops[0]; o++) {
            size_t ol = strlen(k_ops[o]);
            if (rn <= ol || strncmp(rest, k_ops[o], ol) != 0) continue;
            const char *tail = rest + ol;
            size_t tn = rn - ol;
            /* perf spells the accesses of prefetch "prefetches", of load "loads" */
            uint64_t result;
            if (o == PERF_COUNT_HW_CACHE_OP_PREFETCH ? tn == 2 && strncmp(tail, "es", 2) == 0
                                                     : tn == 1 && tail[0] == 's')
                result = PERF_COUNT_HW_CACHE_RESULT_ACCESS;
            else if (tn == 7 && strncmp(tail, "-misses", 7) == 0)
                result = PERF_COUNT_HW_CACHE_RESULT_MISS;
            else
                continue;
            *type = PERF_TYPE_HW_CACHE;
            *config = (uint64_t)c | ((uint64_t)o << 8) | (result << 16);
            return 0;
        }
    }
    return -1;
}

/* r<hex>: 1 to 16 hex digits */
static int raw(const char *name, size_t n, uint32_t *type, uint64_t *config)
{
    if (n < 2 || n > 17 || name[0] != 'r') return -1;
    uint64_t v = 0;
    for (size_t i = 1; i < n; i++) {
        char ch = name[i];
        int d = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : -1;
        if (d < 0) return -1;
        v = v << 4 | (uint64_t)d;
    }
    *type = PERF_TYPE_RAW;
    *config = v;
    return 0;
}

int op_perf_event_parse(const char *name, size_t n, uint32_t *type, uint64_t *config, char *err,
                        size_t errlen)
{
    if (named(name, n, type, config) == 0 || cache(name, n, type, config) == 0 ||
        raw(name, n, type, config) == 0)
        return 0;
    if (err)
        snprintf(err, errlen, "unknown perf event '%.*s'; valid: %s", (int)n, name,
                 OP_PERF_EVENT_FORMS);
    return -1;
}

int op_perf_event_list_check(const char *what, const char *list, char *err, size_t errlen)
{
    const char *p = list ? list : "";
    int count = 0;
    while (*p) {
        p += strspn(p, " ,\t");
        size_t n = strcspn(p, " ,\t");
        if (n == 0) break;
        uint32_t type;
        uint64_t config;
        char why[600];
        if (op_perf_event_parse(p, n, &type, &config, why, sizeof why) != 0) {
            if (err) snprintf(err, errlen, "%s='%s': %s", what, list, why);
            return -1;
        }
        if (++count > OP_PERF_EVENTS_MAX) {
            if (err)
                snprintf(err, errlen, "%s='%s': at most %d events per sample", what, list,
                         OP_PERF_EVENTS_MAX);
            return -1;
        }
        p += n;
    }
    return 0;
}
