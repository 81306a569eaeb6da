/* perf_event_names.h — the perf_event names a CPU sample's counters may be given by
 * (OMNIPROF_SAMPLING_PERF_EVENTS, `omniprof run --perf-events`), as perf(1) spells them:
 *   - a named event of the CPU catalog (src/backend/cpu/cpu_catalog.h: task-clock, page-faults,
 *     cycles, instructions, cache-misses, ...) or one of perf's aliases of them (cpu-cycles,
 *     branch-instructions, faults, cs, migrations);
 *   - a generic cache event <cache>-<op>s or <cache>-<op>-misses, cache one of L1-dcache,
 *     L1-icache, LLC, dTLB, iTLB, branch, node and op one of load, store, prefetch
 *     (PERF_TYPE_HW_CACHE), e.g. L1-dcache-load-misses, LLC-loads;
 *   - a raw PMU event r<hex> (PERF_TYPE_RAW, config = the hex number), e.g. r00c0.
 * Shared by the settings check (settings.c: a bad name stops `omniprof run` with the valid forms)
 * and the CPU backend (perf_events.c: what it opens). Pure functions, no state. */
#ifndef OMNIPROF_COMMON_PERF_EVENT_NAMES_H
#define OMNIPROF_COMMON_PERF_EVENT_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define OP_PERF_EVENTS_MAX 8 /* OMNIPROF_CPU_SAMPLE_MAX_EVENTS */

/* The forms accepted, in words, for error messages. */
#define OP_PERF_EVENT_FORMS                                                                        \
    "a named event (see `omniprof avail --cpu-events`: task-clock, page-faults, "                  \
    "context-switches, "                                                                           \
    "cycles, instructions, cache-misses, ...), a cache event <L1-dcache|L1-icache|LLC|dTLB|iTLB|"  \
    "branch|node>-<loads|load-misses|stores|store-misses|prefetches|prefetch-misses>, or a raw "   \
    "event r<hex> (e.g. r00c0)"

/* Parse the n bytes of name. 0 with *type and *config (perf_event_attr's) filled, or -1 with err
 * naming the event and the valid forms. */
int op_perf_event_parse(const char *name, size_t n, uint32_t *type, uint64_t *config, char *err,
                        size_t errlen);

/* Check a comma/space-separated list: every name parses and there are at most
 * OP_PERF_EVENTS_MAX. 0, or -1 with err (which names the setting as `what`). */
int op_perf_event_list_check(const char *what, const char *list, char *err, size_t errlen);

#endif /* OMNIPROF_COMMON_PERF_EVENT_NAMES_H */
