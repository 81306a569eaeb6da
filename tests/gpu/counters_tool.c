/* counters_tool.c — a minimal third-party tool for the counters GPU tests: LD_PRELOADed into
 * a CUDA program, it counts every kernel dispatch with the counters of $COUNTERS_TOOL_METRICS
 * (space separated) through the public API (omniprof_find_counter, omniprof_create_counter_config,
 * omniprof_configure_buffer_dispatch_counting_service) and writes one CSV row per value to
 * $COUNTERS_TOOL_OUTPUT: corr,dispatch,kernel,passes,start,end,counter,value. The config is
 * made for the chip of the first launch, on the launching thread (as omniprof's tool does). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omniprof/counters.h"
#include "omniprof/omniprof.h"

static omniprof_context_id_t g_ctx;
static omniprof_buffer_id_t g_buf;
static FILE *g_out;
static char *g_names[64];
static int g_n;
static omniprof_counter_config_id_t g_cfg;
static int g_cfg_failed;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static omniprof_counter_dispatch_header_record_t g_hdr;
static unsigned long g_headers, g_values;

static void on_records(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n,
                       void *d, uint64_t drops)
{
    (void)c, (void)b, (void)d;
    if (drops)
        fprintf(stderr, "counters_tool: %llu records dropped\n", (unsigned long long)drops);
    for (size_t i = 0; i < n; i++) {
        if (h[i]->category != OMNIPROF_RECORD_CATEGORY_COUNTERS)
            continue;
        if (h[i]->kind == OMNIPROF_COUNTER_RECORD_DISPATCH_HEADER) {
            g_hdr = *(const omniprof_counter_dispatch_header_record_t *)h[i]->payload;
            g_headers++;
        } else if (h[i]->kind == OMNIPROF_COUNTER_RECORD_VALUE) {
            const omniprof_counter_value_record_t *v = h[i]->payload;
            g_values++;
            if (v->correlation_id.internal != g_hdr.correlation_id.internal)
                fprintf(stderr, "counters_tool: value of corr %llu after header of corr %llu\n",
                        (unsigned long long)v->correlation_id.internal, (unsigned long long)g_hdr.correlation_id.internal);
            fprintf(g_out, "%llu,%llu,%s,%u,%llu,%llu,%s,%.17g\n", (unsigned long long)v->correlation_id.internal,
                    (unsigned long long)v->dispatch_id, g_hdr.kernel_name ? g_hdr.kernel_name : "?", g_hdr.num_passes,
                    (unsigned long long)g_hdr.start_timestamp, (unsigned long long)g_hdr.end_timestamp, v->counter_name,
                    v->value);
        }
    }
    fflush(g_out);
}

static void select_cb(const omniprof_dispatch_counting_service_data_t *d, omniprof_counter_config_id_t *cfg,
                      omniprof_user_data_t *ud, void *data)
{
    (void)ud, (void)data;
    pthread_mutex_lock(&g_lock);
    if (!g_cfg.handle && !g_cfg_failed) {
        omniprof_counter_id_t ids[64];
        g_cfg_failed = 1;
        int ok = 1;
        for (int i = 0; i < g_n && ok; i++)
            if (omniprof_find_counter(d->chip, g_names[i], &ids[i]) != OMNIPROF_STATUS_SUCCESS) {
                fprintf(stderr, "counters_tool: %s\n", omniprof_get_counter_error_string());
                ok = 0;
            }
        if (ok && omniprof_create_counter_config(d->agent_id, ids, (size_t)g_n, &g_cfg) != OMNIPROF_STATUS_SUCCESS)
            fprintf(stderr, "counters_tool: config: %s\n", omniprof_get_counter_error_string());
        else if (ok) {
            size_t passes = 0, nbase = 0;
            omniprof_query_counter_config_passes(g_cfg, &passes, &nbase);
            fprintf(stderr, "counters_tool: chip %s, %d counters, %zu base metrics, %zu passes\n", d->chip, g_n, nbase, passes);
            g_cfg_failed = 0;
        }
    }
    *cfg = g_cfg;
    pthread_mutex_unlock(&g_lock);
}

static int tool_init(omniprof_client_finalize_t fini, void *data)
{
    (void)fini, (void)data;
    const char *m = getenv("COUNTERS_TOOL_METRICS"), *o = getenv("COUNTERS_TOOL_OUTPUT");
    if (!m || !o)
        return 1;
    g_out = fopen(o, "w");
    if (!g_out)
        return 1;
    char *copy = strdup(m), *save = NULL;
    for (char *t = strtok_r(copy, " ,", &save); t && g_n < 64; t = strtok_r(NULL, " ,", &save))
        g_names[g_n++] = strdup(t);
    omniprof_status_t st;
    if ((st = omniprof_create_context(&g_ctx)) ||
        (st = omniprof_create_buffer(g_ctx, 8 << 20, 1 << 20, OMNIPROF_BUFFER_POLICY_LOSSLESS, on_records, NULL, &g_buf)) ||
        (st = omniprof_configure_buffer_dispatch_counting_service(g_ctx, g_buf, select_cb, NULL)) ||
        (st = omniprof_start_context(g_ctx))) {
        fprintf(stderr, "counters_tool: setup failed: %s\n", omniprof_get_status_string(st));
        return 1;
    }
    return 0;
}

static void tool_fini(void *data)
{
    (void)data;
    omniprof_flush_buffer(g_buf);
    fprintf(stderr, "counters_tool: %lu dispatch headers, %lu values\n", g_headers, g_values);
    if (g_out)
        fclose(g_out);
    g_out = NULL;
}

static omniprof_tool_configure_result_t g_res = {sizeof(omniprof_tool_configure_result_t), tool_init, tool_fini, NULL};

OMNIPROF_API omniprof_tool_configure_result_t *omniprof_configure(uint32_t version, const char *rv, uint32_t prio,
                                                                  omniprof_client_id_t *id)
{
    (void)version, (void)rv, (void)prio;
    id->name = "counters-gpu-test";
    return &g_res;
}
