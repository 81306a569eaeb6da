/* cpu_catalog.h — the CPU backend's catalog as plain data: its measurement components and the
 * perf_event counters a sample can carry. Shared by the backend (components.c,
 * perf_events.c) and `omniprof avail --components/--cpu-events` (src/cli/cmd_avail_cpu.c),
 * which must not load the backend itself (it interposes pthread_create, fork, ...). Data
 * only: no code, no state. Append entries only; components.c keeps the same order. */
#ifndef OMNIPROF_BACKEND_CPU_CATALOG_H
#define OMNIPROF_BACKEND_CPU_CATALOG_H

#include <linux/perf_event.h>
#include <stdint.h>

typedef struct op_cpu_catalog_component {
    const char *name;
    const char *units;
    const char *description;
} op_cpu_catalog_component;

static const op_cpu_catalog_component op_cpu_catalog_components[] = {
    {"wall_clock", "ns", "wall-clock time (CLOCK_MONOTONIC)"},
    {"thread_cpu_clock", "ns", "CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID)"},
    {"peak_rss", "bytes", "peak resident set size of the process (getrusage), value at region end"},
    {"page_faults", "count", "minor + major page faults of the thread (getrusage RUSAGE_THREAD)"},
    {"context_switches", "count", "voluntary + involuntary context switches of the thread"},
    {"perf", "count", "first perf_event counter of OMNIPROF_SAMPLING_PERF_EVENTS, for the thread"},
};
#define OP_CPU_CATALOG_N_COMPONENTS (sizeof op_cpu_catalog_components / sizeof op_cpu_catalog_components[0])

typedef struct op_cpu_catalog_event {
    const char *name;
    const char *description;
    uint32_t type;
    uint64_t config;
} op_cpu_catalog_event;

static const op_cpu_catalog_event op_cpu_catalog_events[] = {
    {"task-clock", "thread CPU time (ns)", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"cpu-clock", "CPU clock (ns)", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"context-switches", "context switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", "migrations to another CPU", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"page-faults", "page faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"minor-faults", "minor page faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", "major page faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"cycles", "CPU cycles (PMU)", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", "retired instructions (PMU)", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", "cache references (PMU)", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", "cache misses (PMU)", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branches", "branch instructions (PMU)", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", "mispredicted branches (PMU)", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
};
#define OP_CPU_CATALOG_N_EVENTS (sizeof op_cpu_catalog_events / sizeof op_cpu_catalog_events[0])

#endif /* OMNIPROF_BACKEND_CPU_CATALOG_H */
