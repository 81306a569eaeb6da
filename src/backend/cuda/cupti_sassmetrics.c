/* cupti_sassmetrics.c — SASS metrics on CUDA (include/omniprof/sass_metrics.h) through CUPTI's
 * SASS Metrics API: CUPTI patches the kernels' machine code with counters, so every SASS
 * instruction's executions (warp level: smsp__sass_inst_executed) and thread executions
 * (smsp__sass_thread_inst_executed) are counted exactly. At the end they become SASS_METRIC
 * records — one per (kernel, instruction, metric), for the kernels whose name matches the
 * configured regular expression — with the source line and SASS text (cuda_cubins.c).
 *
 * Life cycle, per CUDA context (under g_lock):
 *   CONTEXT_CREATED (before any launch on it): once per process cuptiProfilerInitialize and, per
 *       device, the metric ids (cuptiSassMetricsGetProperties) and cuptiSassMetricsSetConfig; then
 *       cuptiSassMetricsEnable(lazy patching: each kernel is patched at its first launch). Not in
 *       a launch callback: CUPTI 13.0 counts nothing for the kernel whose launch callback enabled
 *       collection (records come, every value 0: seen on an H100). A context created before
 *       omniprof started is enabled at its first launch's API exit after a synchronization
 *       (patching takes effect only when no work is in flight); that launch is not counted.
 *   CONTEXT_DESTROY_STARTING / exit (contexts synchronized by the caller): the values are read
 *       once (cuptiSassMetricsGetDataProperties, cuptiSassMetricsFlushData), summed per
 *       (cubin, function, PC, metric) over the instances, filtered by kernel name, emitted.
 * The data is read only then: reading while the program still launches kernels has been seen
 * to wedge CUPTI's launch path (a public CUPTI client's notes), and the cubins are still loaded.
 * Cost: every kernel of the context is patched (CUPTI patches per context, not per kernel):
 * patched kernels run several times slower; the regex selects what is reported.
 * Diagnostics (issue 16 item 3: counts read back as 0 on an H100): at info level the metric ids,
 * the first raw records of a flush and how many instance values matched a configured id are
 * logged. OMNIPROF_SASS_METRICS_LAZY_PATCHING=0 patches every loaded function at enable instead
 * of each at its first launch (a diagnostic switch; default 1).
 * Kernel records beside SASS metrics: with CONCURRENT_KERNEL activity on, CUPTI 13.0 patches the
 * kernels but every value reads 0 (enabled before cuptiSassMetricsEnable) or refuses the kind
 * (CUPTI_ERROR_NOT_COMPATIBLE, enabled after); the serialized KERNEL kind counts right (both seen
 * on an H100, tests/gpu/sass_probe.cu). So while SASS metrics are on, kernel records come from
 * the KERNEL kind (cupti_activity.c): kernels run one at a time, as patched kernels' times are
 * not the program's anyway.
 * Fail soft: a CUPTI call that fails logs one line naming it; SASS metrics stay off for the
 * process and the program runs on. With PC sampling configured SASS metrics stay off (CUPTI's
 * profiler initialization blocks the PC Sampling API). */
#include <dlfcn.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cupti_counters.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/u64map.h"

#define SM_MAX_CTX 16
#define SM_MAX_DEV 16

typedef struct sm_ctx {
    CUcontext ctx;
    uint32_t device;
    int enabled, flushed;
} sm_ctx;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_on, g_failed, g_profiler_init;
static regex_t g_re;
static int g_have_re;
static op_sdk_sass_metrics_config g_cfg;
static uint64_t g_ids[OMNIPROF_SASS_METRICS_MAX_METRICS]; /* CUPTI metric ids, in g_cfg order */
static int g_dev_configured[SM_MAX_DEV];
static sm_ctx g_ctx[SM_MAX_CTX];
static int g_nctx;
static CUcontext g_last_ctx; /* the context enable_locked saw last (atomic) */
static uint64_t g_records, g_instructions;

static int fail(const char *what, CUptiResult r)
{
    char why[384];
    op_cupti_counters_status(r, why, sizeof why);
    if (!g_failed) op_warn("cuda: SASS metrics off: %s failed: %s", what, why);
    g_failed = 1;
    return -1;
}

int op_cuda_sass_on(void)
{
    return g_on && !g_failed;
}

int op_cuda_sass_start(void)
{
    if (!op_sdk_sass_metrics_get_config(&g_cfg) || !op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_SASS_METRIC))
        return 0;
    op_sdk_pc_sampling_config pcs;
    if (op_sdk_pc_sampling_get_config(&pcs)) {
        op_warn("cuda: SASS metrics off: PC sampling is configured too, and CUPTI cannot run both in one process");
        return 0;
    }
    if (g_cfg.kernel_filter && *g_cfg.kernel_filter) {
        if (regcomp(&g_re, g_cfg.kernel_filter, REG_EXTENDED | REG_NOSUB) != 0) {
            op_warn("cuda: SASS metrics off: the kernel filter '%s' is not a valid regular expression",
                    g_cfg.kernel_filter);
            return 0;
        }
        g_have_re = 1;
    }
    g_on = 1;
    return 1;
}

/* The context synchronized by our own driver call (not traced: t_own_calls). */
static void sync_context(void)
{
    typedef CUresult (*sync_t)(void);
    static sync_t sync;
    if (!sync) {
        void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (h) sync = (sync_t)dlsym(h, "cuCtxSynchronize");
    }
    if (sync) {
        op_cuda_own_calls(1);
        sync();
        op_cuda_own_calls(0);
    }
}

static int configure_device_locked(uint32_t dev)
{
    if (dev < SM_MAX_DEV && g_dev_configured[dev]) return 0;
    if (!g_profiler_init) {
        CUpti_Profiler_Initialize_Params pi = {.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
        CUptiResult r = cuptiProfilerInitialize(&pi);
        if (r != CUPTI_SUCCESS) return fail("cuptiProfilerInitialize", r);
        g_profiler_init = 1;
    }
    CUpti_Device_GetChipName_Params cn = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cn.deviceIndex = dev;
    CUptiResult r = cuptiDeviceGetChipName(&cn);
    if (r != CUPTI_SUCCESS) return fail("cuptiDeviceGetChipName", r);
    CUpti_SassMetrics_Config cfg[OMNIPROF_SASS_METRICS_MAX_METRICS];
    memset(cfg, 0, sizeof cfg);
    for (size_t i = 0; i < g_cfg.n_metrics; i++) {
        CUpti_SassMetrics_GetProperties_Params gp = {.structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
        gp.pChipName = cn.pChipName;
        gp.pMetricName = g_cfg.metrics[i];
        if ((r = cuptiSassMetricsGetProperties(&gp)) != CUPTI_SUCCESS) {
            char what[300];
            snprintf(what, sizeof what, "cuptiSassMetricsGetProperties(%s on %s)", g_cfg.metrics[i], cn.pChipName);
            return fail(what, r);
        }
        g_ids[i] = gp.metric.metricId;
        op_info("cuda: SASS metrics: %s has id %llu on %s", g_cfg.metrics[i], (unsigned long long)gp.metric.metricId,
                cn.pChipName);
        cfg[i].metricId = gp.metric.metricId;
        cfg[i].outputGranularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
    }
    CUpti_SassMetricsSetConfig_Params sc = {.structSize = CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
    sc.numOfMetricConfig = g_cfg.n_metrics;
    sc.pConfigs = cfg;
    sc.deviceIndex = dev;
    r = cuptiSassMetricsSetConfig(&sc);
    if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_INVALID_OPERATION) return fail("cuptiSassMetricsSetConfig", r);
    if (dev < SM_MAX_DEV) g_dev_configured[dev] = 1;
    op_info("cuda: SASS metrics configured on device %u (%s): %zu metric%s, kernels matching '%s'", dev, cn.pChipName,
            g_cfg.n_metrics, g_cfg.n_metrics == 1 ? "" : "s", g_have_re ? g_cfg.kernel_filter : "");
    return 0;
}

static sm_ctx *ctx_of(CUcontext ctx)
{
    for (int i = 0; i < g_nctx; i++)
        if (g_ctx[i].ctx == ctx) return &g_ctx[i];
    return NULL;
}

/* OMNIPROF_SASS_METRICS_LAZY_PATCHING: 1 (default) patches each function at its first launch,
 * 0 every function loaded at enable; another value is named in a warning and the default kept. */
static int lazy_patching(void)
{
    const char *e = getenv("OMNIPROF_SASS_METRICS_LAZY_PATCHING");
    if (!e || !*e || !strcmp(e, "1")) return 1;
    if (!strcmp(e, "0")) return 0;
    op_warn("cuda: OMNIPROF_SASS_METRICS_LAZY_PATCHING='%s' is not 0 or 1; lazy patching (1) is used", e);
    return 1;
}

/* OMNIPROF_SASS_METRICS_ENABLE_AT (diagnostic): where collection starts on a context. */
enum { AT_CONTEXT, AT_LAUNCH_EXIT, AT_LAUNCH_ENTER };
static int enable_at(void)
{
    static int at = -1;
    if (at >= 0) return at;
    const char *e = getenv("OMNIPROF_SASS_METRICS_ENABLE_AT");
    at = AT_CONTEXT;
    if (e && !strcmp(e, "launch-exit")) at = AT_LAUNCH_EXIT;
    else if (e && !strcmp(e, "launch")) at = AT_LAUNCH_ENTER;
    else if (e && *e && strcmp(e, "context"))
        op_warn("cuda: OMNIPROF_SASS_METRICS_ENABLE_AT='%s' is not context, launch-exit or launch; context is used", e);
    return at;
}

/* Collection turned on for a context not seen before (under g_lock). sync: work may be in flight
 * (patching takes effect only when none is). */
static void enable_locked(CUcontext ctx, int sync, const char *where)
{
    if (ctx_of(ctx) || g_nctx >= SM_MAX_CTX || g_failed) return;
    __atomic_store_n(&g_last_ctx, ctx, __ATOMIC_RELEASE); /* launches of a known context skip the lock */
    sm_ctx *c = &g_ctx[g_nctx++];
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    cuptiGetDeviceId(ctx, &c->device);
    if (configure_device_locked(c->device) != 0) return;
    if (sync) sync_context();
    CUpti_SassMetricsEnable_Params ep = {.structSize = CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
    ep.ctx = ctx;
    ep.enableLazyPatching = (uint8_t)lazy_patching();
    CUptiResult r = cuptiSassMetricsEnable(&ep);
    if (r != CUPTI_SUCCESS) {
        fail("cuptiSassMetricsEnable", r);
        return;
    }
    c->enabled = 1;
    op_info("cuda: SASS metrics on (context %p, device %u, %s patching, at %s)", (void *)ctx, c->device,
            ep.enableLazyPatching ? "lazy" : "eager", where);
}

/* At a kernel launch's API ENTER (enter=1) or EXIT (0), not nested in another launch call.
 * CUPTI 13.0 counts nothing when collection is enabled inside the launch callback of the kernel
 * it would count (a public CUPTI client's notes; seen on an H100: records, all values 0), so a
 * context is normally enabled at its creation, before any launch; a context created before
 * omniprof started is enabled at its first launch's exit (that launch is not counted). */
void op_cuda_sass_launch(CUcontext ctx, int enter)
{
    if (!g_on || g_failed || !ctx) return;
    int at = enable_at();
    if (enter != (at == AT_LAUNCH_ENTER) || __atomic_load_n(&g_last_ctx, __ATOMIC_ACQUIRE) == ctx) return;
    pthread_mutex_lock(&g_lock);
    enable_locked(ctx, 1, enter ? "a launch's entry" : "a launch's exit");
    pthread_mutex_unlock(&g_lock);
}

/* ------------------------------------------------------------------------------------------ */
/* Reading the values.                                                                         */

typedef struct sm_sum {
    uint32_t crc, fidx, pc;
    const char *function; /* CUPTI's, valid during the flush */
    uint64_t value[OMNIPROF_SASS_METRICS_MAX_METRICS];
} sm_sum;

static int metric_index(uint64_t id)
{
    for (size_t i = 0; i < g_cfg.n_metrics; i++)
        if (g_ids[i] == id) return (int)i;
    return -1;
}

static int wanted(const char *mangled, const char *demangled)
{
    if (!g_have_re) return 1;
    return regexec(&g_re, demangled && *demangled ? demangled : mangled, 0, NULL, 0) == 0 ||
           regexec(&g_re, mangled, 0, NULL, 0) == 0;
}

static void emit_sums(sm_ctx *c, const sm_sum *s, size_t n)
{
    omniprof_sass_metric_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_SASS_METRIC;
    r.timestamp = op_now_ns();
    r.agent_id = op_cuda_agent_of_device(c->device);
    r.device_index = c->device;
    for (size_t i = 0; i < n; i++) {
        op_cuda_kernel_names(s[i].function ? s[i].function : "<unknown>", &r.kernel_name, &r.kernel_name_demangled,
                             &r.kernel_id);
        if (!wanted(r.kernel_name, r.kernel_name_demangled)) continue;
        r.code_object_id = s[i].crc;
        r.pc_offset = s[i].pc;
        op_cuda_code_at(s[i].crc, s[i].fidx, s[i].function, s[i].pc, &r.source_file, &r.source_line, &r.instruction);
        g_instructions++;
        for (size_t m = 0; m < g_cfg.n_metrics; m++) {
            r.metric_name = g_cfg.metrics[m];
            r.value = s[i].value[m];
            g_records++;
            op_sdk_emit(r.kind, 0, &r, NULL);
        }
    }
}

/* Info-level account of one flush: the first raw records and how the instance values matched the
 * configured metric ids (one GPU run tells whether values or ids are what is wrong). */
static void log_flush(const CUpti_SassMetrics_Data *d, size_t n, size_t inst)
{
    size_t matched = 0, unmatched = 0, nonzero = 0;
    uint64_t sum[OMNIPROF_SASS_METRICS_MAX_METRICS] = {0}, other_id = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < inst; k++) {
            const CUpti_SassMetrics_InstanceValue *v = &d[i].pInstanceValues[k];
            int m = metric_index(v->metricId);
            nonzero += v->value != 0;
            if (m >= 0) matched++, sum[m] += v->value;
            else unmatched++, other_id = v->metricId;
        }
    op_info("cuda: SASS metrics: flush of %zu records x %zu instances (record %zu bytes, value %zu bytes): %zu values "
            "of configured ids, %zu of other ids (last %llu), %zu non-zero", n, inst, sizeof *d,
            sizeof(CUpti_SassMetrics_InstanceValue), matched, unmatched, (unsigned long long)other_id, nonzero);
    for (size_t m = 0; m < g_cfg.n_metrics; m++)
        op_info("cuda: SASS metrics: %s (id %llu): sum %llu", g_cfg.metrics[m], (unsigned long long)g_ids[m],
                (unsigned long long)sum[m]);
    for (size_t i = 0; i < n && i < 6; i++)
        for (size_t k = 0; k < inst && k < 2; k++)
            op_info("cuda: SASS metrics: record %zu: crc %u function %u '%s' pc 0x%x instance %zu: id %llu value %llu", i,
                    d[i].cubinCrc, d[i].functionIndex, d[i].functionName ? d[i].functionName : "", d[i].pcOffset, k,
                    (unsigned long long)d[i].pInstanceValues[k].metricId,
                    (unsigned long long)d[i].pInstanceValues[k].value);
}

/* Sum the records of one flush per (cubin, function, PC) over instances and emit them. */
static void aggregate(sm_ctx *c, const CUpti_SassMetrics_Data *d, size_t n, size_t inst)
{
    if (op_log_would_write(OP_LOG_INFO)) log_flush(d, n, inst);
    sm_sum *s = op_calloc(n ? n : 1, sizeof *s);
    op_u64map index = {0};
    size_t ns = 0;
    if (!s) return;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = op_hash64x3(d[i].cubinCrc, d[i].functionIndex, d[i].pcOffset), v;
        sm_sum *e;
        if (op_u64map_get(&index, key, &v)) {
            e = &s[v - 1];
        } else {
            e = &s[ns++];
            e->crc = d[i].cubinCrc, e->fidx = d[i].functionIndex, e->pc = d[i].pcOffset, e->function = d[i].functionName;
            op_u64map_put(&index, key, ns);
        }
        for (size_t k = 0; k < inst; k++) {
            int m = metric_index(d[i].pInstanceValues[k].metricId);
            if (m >= 0) e->value[m] += d[i].pInstanceValues[k].value;
        }
    }
    emit_sums(c, s, ns);
    op_u64map_free(&index);
    op_free(s);
}

static void flush_locked(sm_ctx *c)
{
    if (!c->enabled || c->flushed || g_failed) return;
    c->flushed = 1;
    CUpti_SassMetricsGetDataProperties_Params dp = {.structSize = CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
    dp.ctx = c->ctx;
    CUptiResult r = cuptiSassMetricsGetDataProperties(&dp);
    if (r != CUPTI_SUCCESS) {
        fail("cuptiSassMetricsGetDataProperties", r);
        return;
    }
    size_t n = dp.numOfPatchedInstructionRecords, inst = dp.numOfInstances;
    op_info("cuda: SASS metrics: context %p: %zu patched-instruction records, %zu instances each", (void *)c->ctx, n, inst);
    if (!n || !inst) return;
    CUpti_SassMetrics_Data *d = op_calloc(n, sizeof *d);
    CUpti_SassMetrics_InstanceValue *v = op_calloc(n * inst, sizeof *v);
    if (!d || !v) {
        op_warn("cuda: SASS metrics: no memory for %zu records; values lost", n);
    } else {
        for (size_t i = 0; i < n; i++) {
            d[i].structSize = sizeof d[i];
            d[i].pInstanceValues = &v[i * inst];
        }
        CUpti_SassMetricsFlushData_Params fp = {.structSize = CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
        fp.ctx = c->ctx;
        fp.numOfPatchedInstructionRecords = n;
        fp.numOfInstances = inst;
        fp.pMetricsData = d;
        if ((r = cuptiSassMetricsFlushData(&fp)) == CUPTI_SUCCESS) aggregate(c, d, n, inst);
        else fail("cuptiSassMetricsFlushData", r);
    }
    op_free(d);
    op_free(v);
}

void op_cuda_sass_on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
    if (!g_on || !rd || !rd->context || g_failed) return;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED && enable_at() == AT_CONTEXT) {
        pthread_mutex_lock(&g_lock);
        enable_locked(rd->context, 0, "its creation");
        pthread_mutex_unlock(&g_lock);
        return;
    }
    if (cbid != CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) return;
    pthread_mutex_lock(&g_lock);
    sm_ctx *c = ctx_of(rd->context);
    if (c) flush_locked(c);
    pthread_mutex_unlock(&g_lock);
}

/* At exit (contexts synchronized by the caller) and at finalization: every context read. */
void op_cuda_sass_finish(void)
{
    if (!g_on) return;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_nctx; i++) flush_locked(&g_ctx[i]);
    if (g_records)
        op_info("cuda: SASS metrics: %llu records of %llu instructions", (unsigned long long)g_records,
                (unsigned long long)g_instructions);
    g_on = 0;
    pthread_mutex_unlock(&g_lock);
}
