/* tool_kinds.c — part of libomniprof-tool.so (tool.h): which record kinds the tool collects and
 * into which buffer. The enable loop walks kinds.def's switch rows; a row whose switch the
 * settings turn on gets its buffer (created on first use, LOSSLESS, with its own callback
 * thread) and is configured as buffer tracing, or by its service's set-up (OMNIPROF_KIND_SETUP:
 * PC sampling, PM sampling, SASS metrics, --pmc dispatch counting). Run once, from tool_init,
 * before the context starts; the state it keeps (the context and the buffer array, owned by
 * tool.c) is read-only afterwards. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/kinds.h"
#include "common/log.h"
#include "common/settings.h"
#include "omniprof/counters.h"
#include "omniprof/omniprof.h"
#include "tool/tool.h"

/* The context and buffers of op_tool_enable_kinds' caller, and its delivery callback. */
static struct {
    omniprof_context_id_t ctx;
    tool_buffer *buf;
    omniprof_buffer_tracing_cb_t on_buffer;
} g;

static omniprof_status_t make_buffer(int which)
{
    tool_buffer *b = &g.buf[which];
    if (b->used) return OMNIPROF_STATUS_SUCCESS;
    b->name = op_kind_buffer_name(which);
    uint64_t size = op_setting_uint(OP_SET_BUFFER_SIZE);
    uint64_t wm = op_setting_uint(OP_SET_BUFFER_WATERMARK);
    if (size < 4096) size = 4096;
    if (wm > size) wm = size - size / 8;
    omniprof_status_t st = omniprof_create_buffer(g.ctx, size, wm, OMNIPROF_BUFFER_POLICY_LOSSLESS,
                                                  g.on_buffer, b, &b->id);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        op_error("cannot create the %s buffer: %s", b->name, omniprof_get_status_string(st));
        return st;
    }
    omniprof_callback_thread_t th;
    if (omniprof_create_callback_thread(&th) == OMNIPROF_STATUS_SUCCESS)
        omniprof_assign_callback_thread(b->id, th);
    b->used = true;
    return st;
}

/* Configure one kind into one buffer. A kind whose backend is absent (no CUDA) is silent. */
static int trace_kind(int buffer, omniprof_buffer_tracing_kind_t kind)
{
    omniprof_status_t st =
        omniprof_configure_buffer_tracing_service(g.ctx, kind, NULL, 0, g.buf[buffer].id);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        const char *kname = op_tool_db_kind_name(kind, NULL);
        op_info("tracing %s is not available: %s", kname ? kname : "?",
                omniprof_get_status_string(st));
        return -1;
    }
    return 0;
}

/* OMNIPROF_KIND_SETUP(runtime_api) and (driver_api): the whole CUDA runtime or driver API
 * (OMNIPROF_CUDA_RUNTIME_API_TRACE, ..._DRIVER_API_TRACE), or only the calls
 * OMNIPROF_CUDA_RUNTIME_API_CALLS / ..._DRIVER_API_CALLS name, by name or by group: "launches"
 * (every call with "Launch" in its name but the host-function ones), "copies" ("Memcpy" or
 * "Memset"), "syncs" ("Synchronize", "WaitEvent"). A name the API does not have is said once
 * and left out; none left: the kind stays off. */
typedef struct {
    op_setting_id list;
    const char *name; /* NULL: collect the listed calls into ops; else: is this a call's name? */
    int found;
    int32_t ops[1024];
    size_t n;
} api_calls;

/* The groups a list may name: a call belongs when its name holds one of `has` and not `but`. */
static const struct {
    const char *group, *has[2], *but;
} k_api_groups[] = {
    {"launches", {"Launch", NULL}, "LaunchHostFunc"},
    {"copies", {"Memcpy", "Memset"}, NULL},
    {"syncs", {"Synchronize", "WaitEvent"}, NULL},
};

static int api_group(const char *word)
{
    for (size_t g = 0; g < sizeof k_api_groups / sizeof k_api_groups[0]; g++)
        if (strcasecmp(word, k_api_groups[g].group) == 0) return 1;
    return 0;
}

static int api_call_in_group(const char *name, op_setting_id list)
{
    for (size_t g = 0; g < sizeof k_api_groups / sizeof k_api_groups[0]; g++) {
        if (!op_setting_list_has(list, k_api_groups[g].group) ||
            (k_api_groups[g].but && strstr(name, k_api_groups[g].but)))
            continue;
        for (size_t h = 0; h < 2; h++)
            if (k_api_groups[g].has[h] && strstr(name, k_api_groups[g].has[h])) return 1;
    }
    return 0;
}

static int pick_api_call(omniprof_buffer_tracing_kind_t kind, omniprof_tracing_operation_t op, void *data)
{
    api_calls *d = data;
    const char *name = NULL;
    if (omniprof_query_buffer_tracing_kind_operation_name(kind, op, &name, NULL) != OMNIPROF_STATUS_SUCCESS || !name)
        return 0;
    if (d->name) { /* found: stop */
        if (strcasecmp(name, d->name) == 0) d->found = 1;
        return d->found;
    }
    if ((op_setting_list_has(d->list, name) || api_call_in_group(name, d->list)) && d->n < sizeof d->ops / sizeof d->ops[0])
        d->ops[d->n++] = op;
    return 0;
}

static int setup_api_calls(int buffer, omniprof_buffer_tracing_kind_t kind, op_setting_id whole, op_setting_id list,
                           const char *api, const char *example)
{
    if (op_setting_bool(whole)) return trace_kind(buffer, kind);
    static api_calls d;
    memset(&d, 0, sizeof d);
    d.list = list;
    omniprof_status_t st = omniprof_iterate_buffer_tracing_kind_operations(kind, pick_api_call, &d);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        op_info("tracing CUDA %s API calls is not available: %s", api, omniprof_get_status_string(st));
        return -1;
    }
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", op_setting_str(list));
    for (char *save = NULL, *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        api_calls one = {.list = list, .name = t};
        if (!api_group(t) && (omniprof_iterate_buffer_tracing_kind_operations(kind, pick_api_call, &one), !one.found))
            op_warn("%s: '%s' is not a CUDA %s API call (valid: the function's name as CUPTI spells it, without "
                    "a _v2 suffix, e.g. %s; or the groups 'launches', 'copies', 'syncs')",
                    op_setting_get_info(list)->env_name, t, api, example);
    }
    if (!d.n) return -1;
    st = omniprof_configure_buffer_tracing_service(g.ctx, kind, d.ops, d.n, g.buf[buffer].id);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        op_info("tracing CUDA %s API calls is not available: %s", api, omniprof_get_status_string(st));
        return -1;
    }
    return 0;
}

static int setup_runtime_api(int buffer)
{
    return setup_api_calls(buffer, OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, OP_SET_CUDA_RUNTIME_API_TRACE,
                           OP_SET_CUDA_RUNTIME_API_CALLS, "runtime", "cudaLaunchKernel, cudaMemcpyAsync");
}

static int setup_driver_api(int buffer)
{
    return setup_api_calls(buffer, OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API, OP_SET_CUDA_DRIVER_API_TRACE,
                           OP_SET_CUDA_DRIVER_API_CALLS, "driver", "cuLaunchKernel, cuMemcpyHtoD");
}

/* OMNIPROF_KIND_SETUP(pc_sampling): PC sampling on every GPU (OMNIPROF_PC_SAMPLING*). */
static int setup_pc_sampling(int buffer)
{
    const char *m = op_setting_str(OP_SET_PC_SAMPLING_METHOD);
    omniprof_pc_sampling_method_t method = m && !strcmp(m, "continuous")
                                               ? OMNIPROF_PC_SAMPLING_METHOD_CONTINUOUS
                                               : OMNIPROF_PC_SAMPLING_METHOD_KERNEL_SERIALIZED;
    omniprof_status_t st = omniprof_configure_pc_sampling_service(
        g.ctx, (omniprof_agent_id_t){0}, method, OMNIPROF_PC_SAMPLING_UNIT_CYCLES,
        op_setting_uint(OP_SET_PC_SAMPLING_INTERVAL), g.buf[buffer].id, 0);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        op_warn("PC sampling is not available: %s", omniprof_get_status_string(st));
        return -1;
    }
    return 0;
}

/* OMNIPROF_KIND_SETUP(pm_sampling): OMNIPROF_PM_SAMPLING's metrics every
 * OMNIPROF_PM_SAMPLING_INTERVAL µs on every GPU. */
static int setup_pm_sampling(int buffer)
{
    char copy[4096];
    const char *names[OMNIPROF_PM_SAMPLING_MAX_METRICS];
    size_t n = 0;
    snprintf(copy, sizeof copy, "%s", op_setting_str(OP_SET_PM_SAMPLING));
    for (char *save = NULL, *t = strtok_r(copy, " ,", &save);
         t && n < OMNIPROF_PM_SAMPLING_MAX_METRICS; t = strtok_r(NULL, " ,", &save))
        names[n++] = t;
    omniprof_status_t st = omniprof_configure_pm_sampling_service(
        g.ctx, (omniprof_agent_id_t){0}, names, n,
        op_setting_uint(OP_SET_PM_SAMPLING_INTERVAL) * 1000ull, g.buf[buffer].id, 0);
    if (st == OMNIPROF_STATUS_SUCCESS) return 0;
    op_warn("PM sampling is not available: %s", omniprof_get_status_string(st));
    return -1;
}

/* OMNIPROF_KIND_SETUP(sass_metrics): SASS metrics of the kernels matching OMNIPROF_SASS_METRICS. */
static int setup_sass_metrics(int buffer)
{
    omniprof_status_t st = omniprof_configure_sass_metrics_service(
        g.ctx, (omniprof_agent_id_t){0}, op_setting_str(OP_SET_SASS_METRICS), NULL, 0,
        g.buf[buffer].id, 0);
    if (st == OMNIPROF_STATUS_SUCCESS) return 0;
    op_warn("SASS metrics are not available: %s", omniprof_get_status_string(st));
    return -1;
}

/* Hardware counters (--pmc): the SDK's counters service reads OMNIPROF_PMC and the dispatch  */
/* filters (kernel regexes, iteration range, replay mode, pass and dispatch limits) itself.    */

/* OMNIPROF_KIND_SETUP(pmc) (both counter kinds): dispatch counting into the GPU buffer, set up
 * once. Returns 0 when counting is on. */
static int setup_pmc(int buffer)
{
    static int done, rc;
    if (done++) return rc;
    char err[512] = "";
    omniprof_status_t st =
        omniprof_configure_pmc_from_settings(g.ctx, g.buf[buffer].id, err, sizeof(err));
    if (st != OMNIPROF_STATUS_SUCCESS) {
        op_error("--pmc: counter collection is off: %s",
                 err[0] ? err : omniprof_get_status_string(st));
        return rc = -1;
    }
    return rc = 0;
}

/* The set-up of (category, kind) when its row names one (OMNIPROF_KIND_SETUP(NAME) ->
 * setup_NAME, generated from kinds.def: a row naming a handler that does not exist does not
 * compile); NULL: the kind is configured as buffer tracing. */
typedef int (*kind_setup_fn)(int buffer);
static kind_setup_fn kind_setup(uint32_t category, uint32_t kind)
{
#define OMNIPROF_KIND_SETUP(NAME) return setup_##NAME;
    if (category == OMNIPROF_RECORD_CATEGORY_TRACING) {
        switch (kind) {
#define OMNIPROF_BUFFER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE,    \
                             BUFFER, SWITCH)                                                       \
    case VALUE: {                                                                                  \
        SWITCH                                                                                     \
    } break;
#include "omniprof/kinds.def"
        default: break;
        }
        return NULL;
    }
#define OMNIPROF_KIND_SETUP(NAME) return setup_##NAME;
    switch (kind) {
#define OMNIPROF_COUNTER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE,   \
                              BUFFER, SWITCH)                                                      \
    case VALUE: {                                                                                  \
        SWITCH                                                                                     \
    } break;
#include "omniprof/kinds.def"
    default: break;
    }
    return NULL;
}

/* The enable loop (tool.h). */
int op_tool_enable_kinds(omniprof_context_id_t ctx, tool_buffer *buf,
                         omniprof_buffer_tracing_cb_t on_buffer)
{
    g.ctx = ctx;
    g.buf = buf;
    g.on_buffer = on_buffer;
    int kinds = 0;
    size_t n;
    const op_kind_switch *rows = op_kind_switches(&n);
    for (size_t i = 0; i < n; i++) {
        const op_kind_switch *r = &rows[i];
        if (r->buffer == OP_KIND_BUFFER_NONE || !op_kind_switch_on(r)) continue;
        if (make_buffer(r->buffer) != OMNIPROF_STATUS_SUCCESS) continue;
        kind_setup_fn setup = kind_setup(r->category, r->kind);
        int rc = -1;
        if (setup)
            rc = setup(r->buffer);
        else if (r->category == OMNIPROF_RECORD_CATEGORY_TRACING)
            rc = trace_kind(r->buffer, r->kind);
        if (rc == 0) kinds++;
    }
    return kinds;
}
