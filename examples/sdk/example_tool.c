/* example_tool.c — a complete omniprof tool, the one docs/sdk.md walks through.
 *
 * Build:  cc -shared -fPIC example_tool.c -o libexample-tool.so $(pkg-config --cflags --libs omniprof)
 * Use:    LD_PRELOAD=./libexample-tool.so ./my-program        (report in example-tool.txt)
 *
 * It registers (omniprof_configure), creates one context and one buffer, subscribes to the
 * user-API marker kinds and to correlation-id retirement, counts every record by kind and
 * operation, prints each completed range, and writes a summary when the SDK finalizes. It
 * uses only the installed headers <omniprof/...>. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <omniprof/omniprof.h>

static omniprof_context_id_t g_ctx;
static omniprof_buffer_id_t g_buf;
static FILE *g_out;
static uint64_t g_count[OMNIPROF_BUFFER_TRACING_LAST][16];
static uint64_t g_drops;

/* Runs on the buffer's callback thread, never twice at once for one buffer. Payloads are
 * valid only during the call: copy what you keep. */
static void on_records(omniprof_context_id_t ctx, omniprof_buffer_id_t buf, omniprof_record_header_t **headers,
                       size_t n, void *data, uint64_t drop_count)
{
    (void)ctx;
    (void)buf;
    (void)data;
    g_drops = drop_count;
    for (size_t i = 0; i < n; i++) {
        omniprof_record_header_t *h = headers[i];
        if (h->category != OMNIPROF_RECORD_CATEGORY_TRACING || h->kind >= OMNIPROF_BUFFER_TRACING_LAST) continue;
        if (h->kind == OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT) {
            g_count[h->kind][0]++;
            continue;
        }
        const omniprof_buffer_tracing_marker_record_t *m = h->payload;
        if (m->operation > 0 && m->operation < 16) g_count[h->kind][m->operation]++;
        if (h->kind == OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API && m->operation != OMNIPROF_MARKER_RANGE_OP_MARK)
            fprintf(g_out, "range \"%s\" level %d thread %" PRIu64 " took %" PRIu64 " ns\n", m->message,
                    m->nesting_level, m->thread_id, m->end_timestamp - m->start_timestamp);
    }
}

static int tool_initialize(omniprof_client_finalize_t finalize, void *tool_data)
{
    (void)finalize;
    (void)tool_data;
    const char *path = getenv("EXAMPLE_TOOL_OUTPUT");
    g_out = fopen(path && *path ? path : "example-tool.txt", "w");
    if (!g_out) return -1; /* non-zero: the SDK deactivates this tool */
    if (omniprof_create_context(&g_ctx) != OMNIPROF_STATUS_SUCCESS) return -1;
    omniprof_status_t st = omniprof_create_buffer(g_ctx, 256 * 1024, 192 * 1024, OMNIPROF_BUFFER_POLICY_LOSSLESS,
                                                  on_records, NULL, &g_buf);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        fprintf(stderr, "example-tool: %s\n", omniprof_get_status_string(st));
        return -1;
    }
    omniprof_buffer_tracing_kind_t kinds[] = {OMNIPROF_BUFFER_TRACING_MARKER_API,
                                              OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API,
                                              OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        st = omniprof_configure_buffer_tracing_service(g_ctx, kinds[i], NULL, 0, g_buf);
        if (st != OMNIPROF_STATUS_SUCCESS) fprintf(stderr, "example-tool: %s\n", omniprof_get_status_string(st));
    }
    return omniprof_start_context(g_ctx) == OMNIPROF_STATUS_SUCCESS ? 0 : -1;
}

/* Called at exit after every buffer was delivered. */
static void tool_finalize(void *tool_data)
{
    (void)tool_data;
    omniprof_flush_buffer(g_buf);
    uint64_t per_kind[OMNIPROF_BUFFER_TRACING_LAST] = {0};
    for (int k = 0; k < OMNIPROF_BUFFER_TRACING_LAST; k++) {
        for (int op = 0; op < 16; op++) {
            per_kind[k] += g_count[k][op];
            if (!g_count[k][op] || op == 0) continue;
            const char *name = "?";
            omniprof_query_buffer_tracing_kind_operation_name((omniprof_buffer_tracing_kind_t)k, op, &name, NULL);
            fprintf(g_out, "op %s %" PRIu64 "\n", name, g_count[k][op]);
        }
    }
    for (int k = 1; k < OMNIPROF_BUFFER_TRACING_LAST; k++) {
        if (!per_kind[k]) continue;
        const char *name = "?";
        omniprof_query_buffer_tracing_kind_name((omniprof_buffer_tracing_kind_t)k, &name, NULL);
        fprintf(g_out, "kind %s %" PRIu64 "\n", name, per_kind[k]);
    }
    fprintf(g_out, "drops %" PRIu64 "\n", g_drops);
    fclose(g_out);
}

/* The SDK finds this symbol in every loaded object (and in OMNIPROF_TOOL_LIBRARIES). */
OMNIPROF_API omniprof_tool_configure_result_t *omniprof_configure(uint32_t version, const char *runtime_version,
                                                                  uint32_t priority, omniprof_client_id_t *client_id)
{
    (void)runtime_version;
    (void)priority;
    if (version / 10000 != OMNIPROF_VERSION_MAJOR) return NULL; /* decline an incompatible SDK */
    client_id->name = "example-tool";
    static omniprof_tool_configure_result_t result = {sizeof(result), tool_initialize, tool_finalize, NULL};
    return &result;
}
