/* cpu_record_writer.h — the CPU tests' record sink (cpu_test_tool.c, a tool over the real
 * SDK): write CPU-backend records as text
 * lines to $OMNIPROF_CPUTEST_OUT, then, at the end, symbolize every distinct frame address.
 *
 * Lines (fields separated by one space; names last so they may contain spaces):
 *   S <tid> <internal> <timestamp_ns> <op> <peak_rss> <nevents> <e0..> <nframes> <f0> <f1> ...
 *   T <op> <tid> <parent> <internal> <sequent> <name>
 *   P <op> <timestamp_ns> <value> <device> <metric>
 *   W <op> <start_ns> <end_ns> <tid> <return>
 *   A <address> <inline_depth> <line> <module_offset> <function>\t<file>\t<module>
 *   E <key> <value>            (end-of-run facts: drops, ...)
 */
#ifndef OMNIPROF_TESTS_CPU_RECORD_WRITER_H
#define OMNIPROF_TESTS_CPU_RECORD_WRITER_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "omniprof/cpu.h"
#include "omniprof/symbols.h"
#include "omniprof/tracing.h"

typedef struct rw_state {
    pthread_mutex_t lock;
    FILE *out;
    uint64_t *addrs;
    size_t n_addrs, cap_addrs;
} rw_state;

static rw_state g_rw = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL, 0, 0};

static void rw_open(void)
{
    if (g_rw.out) return;
    const char *tmpl = getenv("OMNIPROF_CPUTEST_OUT");
    if (!tmpl || !*tmpl) tmpl = "/dev/null";
    char path[4096];
    const char *pp = strstr(tmpl, "%p");
    if (pp) /* one file per process: %p is the pid */
        snprintf(path, sizeof path, "%.*s%d%s", (int)(pp - tmpl), tmpl, (int)getpid(), pp + 2);
    else
        snprintf(path, sizeof path, "%s", tmpl);
    g_rw.out = fopen(path, "w");
    if (g_rw.out) setvbuf(g_rw.out, NULL, _IOFBF, 1 << 16);
}

/* open addressing set of frame addresses */
/* fork child: forget the parent's file (its buffered bytes belong to the parent) and set */
static void rw_at_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_rw.lock = fresh;
    g_rw.out = NULL;
    g_rw.addrs = NULL;
    g_rw.n_addrs = g_rw.cap_addrs = 0;
}

static void rw_add_addr(uint64_t a)
{
    if (g_rw.n_addrs * 2 >= g_rw.cap_addrs) {
        size_t nc = g_rw.cap_addrs ? g_rw.cap_addrs * 2 : 4096;
        uint64_t *na = calloc(nc, sizeof *na);
        if (!na) return;
        for (size_t i = 0; i < g_rw.cap_addrs; i++) {
            uint64_t v = g_rw.addrs[i];
            if (!v) continue;
            size_t h = (size_t)(v * 0x9E3779B97F4A7C15ull) & (nc - 1);
            while (na[h]) h = (h + 1) & (nc - 1);
            na[h] = v;
        }
        free(g_rw.addrs);
        g_rw.addrs = na;
        g_rw.cap_addrs = nc;
    }
    size_t h = (size_t)(a * 0x9E3779B97F4A7C15ull) & (g_rw.cap_addrs - 1);
    while (g_rw.addrs[h]) {
        if (g_rw.addrs[h] == a) return;
        h = (h + 1) & (g_rw.cap_addrs - 1);
    }
    g_rw.addrs[h] = a;
    g_rw.n_addrs++;
}

static void rw_record(uint32_t kind, const void *payload)
{
    pthread_mutex_lock(&g_rw.lock);
    rw_open();
    FILE *f = g_rw.out;
    if (!f) {
        pthread_mutex_unlock(&g_rw.lock);
        return;
    }
    if (kind == OMNIPROF_BUFFER_TRACING_CPU_SAMPLE) {
        const omniprof_cpu_sample_record_t *r = payload;
        fprintf(f, "S %llu %llu %llu %d %llu %u", (unsigned long long)r->thread_id,
                (unsigned long long)r->thread_internal_value, (unsigned long long)r->timestamp, r->operation,
                (unsigned long long)r->peak_rss_bytes, r->num_events);
        for (uint32_t i = 0; i < r->num_events && i < OMNIPROF_CPU_SAMPLE_MAX_EVENTS; i++)
            fprintf(f, " %llu", (unsigned long long)r->event_values[i]);
        fprintf(f, " %u", r->num_frames);
        for (uint32_t i = 0; i < r->num_frames; i++) {
            fprintf(f, " %llx", (unsigned long long)r->frames[i]);
            rw_add_addr(r->frames[i]);
        }
        fputc('\n', f);
    } else if (kind == OMNIPROF_BUFFER_TRACING_THREAD) {
        const omniprof_thread_record_t *r = payload;
        fprintf(f, "T %d %llu %llu %llu %llu %s\n", r->operation, (unsigned long long)r->thread_id,
                (unsigned long long)r->parent_thread_id, (unsigned long long)r->internal_value,
                (unsigned long long)r->sequent_value, r->name);
    } else if (kind == OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE) {
        const omniprof_process_sample_record_t *r = payload;
        fprintf(f, "P %d %llu %.17g %u %s\n", r->operation, (unsigned long long)r->timestamp, r->value,
                r->device_index, r->metric_name);
    } else if (kind == OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER) {
        const omniprof_buffer_tracing_api_record_t *r = payload;
        fprintf(f, "W %d %llu %llu %llu %d\n", r->operation, (unsigned long long)r->start_timestamp,
                (unsigned long long)r->end_timestamp, (unsigned long long)r->thread_id, r->return_value);
    } else if (kind == OMNIPROF_BUFFER_TRACING_REGION_PROFILE) {
        const omniprof_region_profile_record_t *r = payload;
        fprintf(f, "R %llu %llu %llu %d %llu %.17g %.17g %.17g %.17g %.17g %s %s\t%s\n",
                (unsigned long long)r->thread_index, (unsigned long long)r->node_id, (unsigned long long)r->parent_id,
                r->depth, (unsigned long long)r->count, r->sum, r->sum_squares, r->min, r->max, r->self, r->component,
                r->units, r->label);
    }
    pthread_mutex_unlock(&g_rw.lock);
}

static int rw_symbol_cb(const omniprof_symbol_info_t *info, void *data)
{
    FILE *f = data;
    fprintf(f, "A %llx %u %u %llx %s\t%s\t%s\n", (unsigned long long)info->address, info->inline_depth, info->line,
            (unsigned long long)info->module_offset, info->function ? info->function : "?",
            info->file ? info->file : "?", info->module ? info->module : "?");
    return 0;
}

typedef omniprof_status_t (*rw_symbolize_fn)(uint64_t, omniprof_symbol_cb_t, void *);

static void rw_finish(rw_symbolize_fn symbolize)
{
    pthread_mutex_lock(&g_rw.lock);
    rw_open();
    if (g_rw.out) {
        for (size_t i = 0; i < g_rw.cap_addrs && symbolize; i++)
            if (g_rw.addrs[i]) symbolize(g_rw.addrs[i], rw_symbol_cb, g_rw.out);
        fprintf(g_rw.out, "E end 1\n");
        fclose(g_rw.out);
        g_rw.out = NULL;
    }
    pthread_mutex_unlock(&g_rw.lock);
}

#endif /* OMNIPROF_TESTS_CPU_RECORD_WRITER_H */
