/* cupti_pcsampling.c — PC sampling on CUDA (include/omniprof/pc_sampling.h) through CUPTI's
 * PC Sampling API: per CUDA context, the hardware samples warps every 2^N cycles; CUPTI parses
 * the samples into per-PC records with stall-reason counts, which become PC_SAMPLE records
 * (one per PC and stall reason with samples), with the kernel, the source line (CUPTI's
 * SASS-to-source correlation, needs -lineinfo) and the SASS text (nvdisasm, when installed), both
 * through cuda_cubins.c.
 *
 * Life cycle (all under g_lock; CUPTI's PC sampling calls are made from one thread at a time):
 *   CONTEXT_CREATED        enable PC sampling on the context, read its stall-reason names,
 *                          configure method, interval and buffers
 *   launch ENTER           (serialized) remember CUPTI correlation id -> our internal id
 *   launch EXIT            read what CUPTI has (cuptiPCSamplingGetData) and emit it
 *   MODULE_UNLOAD_STARTING read everything first (CUPTI requires it; cuda_cubins.c forgets the
 *                          cubin after this handler)
 *   CONTEXT_DESTROY / exit synchronize, read everything, disable (the last data lands in the
 *                          configured buffer, emitted too)
 * Invariants: (1) a context is enabled at most once and disabled at most once; (2) a PC record
 * is emitted once: the scratch buffer is reset before every read; (3) the samples of a module
 * are read before it unloads (cuda_cubins.c uses its cubin only while it is loaded).
 * Cost: kernel-serialized sampling serializes kernels; continuous sampling does not. A failing
 * CUPTI call logs one line and turns PC sampling off for the process (the program runs on). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_pcsampling.h>

#include "backend/cuda/cuda_internal.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"

#define PCS_MAX_CTX 16
#define PCS_NUM_PCS 4096        /* PCs per read */
#define PCS_CORR_RING 8192      /* recent launches: CUPTI correlation id -> internal id */
#define PCS_MAX_REASONS 64

typedef struct pcs_ctx {
    CUcontext ctx;
    uint32_t device;
    int disabled;
    size_t nreasons;
    uint32_t reason_index[PCS_MAX_REASONS];
    const char *reason_name[PCS_MAX_REASONS]; /* interned, by position */
    CUpti_PCSamplingData cfg_buf;             /* CUPTI's own buffer (data left at disable) */
    CUpti_PCSamplingData read_buf;            /* what cuptiPCSamplingGetData fills */
} pcs_ctx;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_on, g_failed;
static omniprof_pc_sampling_method_t g_method;
static uint64_t g_interval;
static pcs_ctx g_ctx[PCS_MAX_CTX];
static int g_nctx;
static struct { uint32_t key; uint64_t internal; } g_corr[PCS_CORR_RING];
static uint64_t g_records, g_samples, g_dropped;

int op_cuda_pcs_enabled(void) { return g_on && !g_failed; }

static int check(CUptiResult r, const char *what)
{
    if (r == CUPTI_SUCCESS) return 0;
    const char *s = "?";
    cuptiGetResultString(r, &s);
    if (!g_failed) op_warn("cuda: PC sampling off: %s failed: %s", what, s);
    g_failed = 1;
    return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers.                                                                                    */

static int alloc_data(CUpti_PCSamplingData *d, size_t nreasons)
{
    memset(d, 0, sizeof *d);
    d->size = sizeof *d;
    d->collectNumPcs = PCS_NUM_PCS;
    d->pPcData = op_calloc(PCS_NUM_PCS, sizeof *d->pPcData);
    if (!d->pPcData) return -1;
    for (size_t i = 0; i < PCS_NUM_PCS; i++) {
        d->pPcData[i].size = sizeof d->pPcData[i];
        d->pPcData[i].stallReason = op_calloc(nreasons ? nreasons : 1, sizeof(CUpti_PCSamplingStallReason));
        if (!d->pPcData[i].stallReason) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Records.                                                                                    */

static uint64_t internal_of(uint32_t cupti_corr)
{
    if (!cupti_corr) return 0;
    uint32_t i = cupti_corr & (PCS_CORR_RING - 1);
    return g_corr[i].key == cupti_corr ? g_corr[i].internal : 0;
}

static void emit_pc(pcs_ctx *c, const CUpti_PCSamplingPCData *pc, uint64_t now)
{
    omniprof_pc_sample_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_PC_SAMPLE;
    r.operation = (int32_t)g_method;
    r.timestamp = now;
    r.agent_id = op_cuda_agent_of_device(c->device);
    uint64_t internal = g_method == OMNIPROF_PC_SAMPLING_METHOD_KERNEL_SERIALIZED ? internal_of(pc->correlationId) : 0;
    r.correlation_id.internal = internal;
    r.dispatch_id = internal;
    op_cuda_kernel_names(pc->functionName ? pc->functionName : "<unknown>", &r.kernel_name, &r.kernel_name_demangled,
                         &r.kernel_id);
    r.code_object_id = pc->cubinCrc;
    r.pc_offset = pc->pcOffset;
    op_cuda_code_at(pc->cubinCrc, pc->functionIndex, pc->functionName, pc->pcOffset, &r.source_file, &r.source_line,
                    &r.instruction);
    uint64_t total = 0;
    for (size_t j = 0; j < pc->stallReasonCount; j++) total += pc->stallReason[j].samples;
    r.pc_samples = (uint32_t)total;
    for (size_t j = 0; j < pc->stallReasonCount; j++) {
        const CUpti_PCSamplingStallReason *s = &pc->stallReason[j];
        if (!s->samples) continue;
        r.stall_reason = "<unknown stall reason>";
        for (size_t k = 0; k < c->nreasons; k++)
            if (c->reason_index[k] == s->pcSamplingStallReasonIndex) r.stall_reason = c->reason_name[k];
        r.samples = s->samples;
        g_samples += s->samples;
        g_records++;
        op_sdk_emit(r.kind, r.operation, &r, NULL);
    }
}

static void emit_data(pcs_ctx *c, CUpti_PCSamplingData *d)
{
    uint64_t now = op_now_ns();
    for (size_t i = 0; i < d->totalNumPcs && i < d->collectNumPcs; i++) emit_pc(c, &d->pPcData[i], now);
    g_dropped += d->droppedSamples;
}

static void reset(CUpti_PCSamplingData *d)
{
    d->totalNumPcs = 0;
    d->remainingNumPcs = 0;
    d->totalSamples = 0;
    d->droppedSamples = 0;
}

/* Read everything CUPTI holds for context c. Caller holds g_lock. */
static void drain_locked(pcs_ctx *c)
{
    if (c->disabled || g_failed) return;
    for (int round = 0; round < 1024; round++) {
        reset(&c->read_buf);
        CUpti_PCSamplingGetDataParams p;
        memset(&p, 0, sizeof p);
        p.size = CUpti_PCSamplingGetDataParamsSize;
        p.ctx = c->ctx;
        p.pcSamplingData = &c->read_buf;
        CUptiResult r = cuptiPCSamplingGetData(&p);
        if (r == CUPTI_ERROR_OUT_OF_MEMORY) {
            op_warn("cuda: PC sampling hardware buffer full; samples were lost (raise the interval)");
        } else if (check(r, "cuptiPCSamplingGetData") != 0) {
            return;
        }
        emit_data(c, &c->read_buf);
        if (c->read_buf.remainingNumPcs == 0) return;
    }
}

static pcs_ctx *ctx_of(CUcontext ctx)
{
    for (int i = 0; i < g_nctx; i++)
        if (g_ctx[i].ctx == ctx) return &g_ctx[i];
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Contexts.                                                                                   */

static int read_reasons(pcs_ctx *c)
{
    size_t n = 0;
    CUpti_PCSamplingGetNumStallReasonsParams np;
    memset(&np, 0, sizeof np);
    np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
    np.ctx = c->ctx;
    np.numStallReasons = &n;
    if (check(cuptiPCSamplingGetNumStallReasons(&np), "cuptiPCSamplingGetNumStallReasons") != 0) return -1;
    if (n > PCS_MAX_REASONS) n = PCS_MAX_REASONS;
    char *names[PCS_MAX_REASONS];
    for (size_t i = 0; i < n; i++) names[i] = op_calloc(1, CUPTI_STALL_REASON_STRING_SIZE);
    CUpti_PCSamplingGetStallReasonsParams sp;
    memset(&sp, 0, sizeof sp);
    sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
    sp.ctx = c->ctx;
    sp.numStallReasons = n;
    sp.stallReasonIndex = c->reason_index;
    sp.stallReasons = names;
    int rc = check(cuptiPCSamplingGetStallReasons(&sp), "cuptiPCSamplingGetStallReasons");
    for (size_t i = 0; i < n; i++) {
        c->reason_name[i] = op_sdk_intern(names[i] ? names[i] : "?");
        op_free(names[i]);
    }
    c->nreasons = n;
    return rc;
}

static void configure_locked(CUcontext ctx)
{
    if (g_failed || ctx_of(ctx) || g_nctx >= PCS_MAX_CTX) return;
    pcs_ctx *c = &g_ctx[g_nctx];
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    cuptiGetDeviceId(ctx, &c->device);
    CUpti_PCSamplingEnableParams ep;
    memset(&ep, 0, sizeof ep);
    ep.size = CUpti_PCSamplingEnableParamsSize;
    ep.ctx = ctx;
    if (check(cuptiPCSamplingEnable(&ep), "cuptiPCSamplingEnable") != 0) return;
    g_nctx++;
    if (read_reasons(c) != 0 || alloc_data(&c->cfg_buf, c->nreasons) != 0 ||
        alloc_data(&c->read_buf, c->nreasons) != 0) {
        g_failed = 1;
        return;
    }
    CUpti_PCSamplingConfigurationInfo a[8];
    memset(a, 0, sizeof a);
    int n = 0;
    a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
    a[n].attributeData.stallReasonData.stallReasonCount = c->nreasons;
    a[n++].attributeData.stallReasonData.pStallReasonIndex = c->reason_index;
    a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    a[n++].attributeData.collectionModeData.collectionMode = g_method == OMNIPROF_PC_SAMPLING_METHOD_CONTINUOUS
                                                                  ? CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS
                                                                  : CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
    a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE;
    a[n++].attributeData.scratchBufferSizeData.scratchBufferSize = 4u << 20;
    a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE;
    a[n++].attributeData.hardwareBufferSizeData.hardwareBufferSize = 256u << 20;
    a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
    a[n++].attributeData.outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    a[n++].attributeData.samplingDataBufferData.samplingDataBuffer = &c->cfg_buf;
    if (g_interval) {
        uint32_t e = 5;
        while (e < 31 && (2ull << e) <= g_interval) e++;
        a[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
        a[n++].attributeData.samplingPeriodData.samplingPeriod = e;
    }
    CUpti_PCSamplingConfigurationInfoParams cp;
    memset(&cp, 0, sizeof cp);
    cp.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    cp.ctx = ctx;
    cp.numAttributes = (size_t)n;
    cp.pPCSamplingConfigurationInfo = a;
    if (check(cuptiPCSamplingSetConfigurationAttribute(&cp), "cuptiPCSamplingSetConfigurationAttribute") != 0) return;
    char iv[48];
    if (g_interval) snprintf(iv, sizeof iv, "%llu cycles", 1ull << a[n - 1].attributeData.samplingPeriodData.samplingPeriod);
    else snprintf(iv, sizeof iv, "CUPTI's default");
    op_info("cuda: PC sampling on (context %p, device %u, %s, interval %s, %zu stall reasons)", (void *)ctx, c->device,
            g_method == OMNIPROF_PC_SAMPLING_METHOD_CONTINUOUS ? "continuous" : "kernel-serialized", iv, c->nreasons);
}

static void disable_locked(pcs_ctx *c)
{
    if (c->disabled) return;
    drain_locked(c);
    if (!g_failed) {
        reset(&c->cfg_buf);
        CUpti_PCSamplingDisableParams dp;
        memset(&dp, 0, sizeof dp);
        dp.size = CUpti_PCSamplingDisableParamsSize;
        dp.ctx = c->ctx;
        if (cuptiPCSamplingDisable(&dp) == CUPTI_SUCCESS) emit_data(c, &c->cfg_buf); /* what was left */
    }
    c->disabled = 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Called by the subscriber.                                                                   */

int op_cuda_pcs_start(void)
{
    op_sdk_pc_sampling_config cfg;
    if (!op_sdk_pc_sampling_get_config(&cfg) || !op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_PC_SAMPLE)) return 0;
    g_method = cfg.method;
    g_interval = cfg.interval;
    g_on = 1;
    return 1;
}

void op_cuda_pcs_on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
    if (!g_on || !rd) return;
    pthread_mutex_lock(&g_lock);
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        configure_locked(rd->context);
    } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
        pcs_ctx *c = ctx_of(rd->context);
        if (c) disable_locked(c);
    } else if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) {
        pcs_ctx *c = ctx_of(rd->context);
        if (c) drain_locked(c); /* invariant (3) */
    }
    pthread_mutex_unlock(&g_lock);
}

void op_cuda_pcs_launch(int phase, uint32_t cupti_corr, uint64_t internal, CUcontext ctx)
{
    if (!g_on || g_failed) return;
    if (phase == OP_CUDA_LAUNCH_ENTER) {
        uint32_t i = cupti_corr & (PCS_CORR_RING - 1);
        pthread_mutex_lock(&g_lock);
        g_corr[i].key = cupti_corr;
        g_corr[i].internal = internal;
        pthread_mutex_unlock(&g_lock);
        return;
    }
    /* serialized: each kernel's samples right after it; continuous: at most every 20 ms */
    static uint64_t last;
    uint64_t now = g_method == OMNIPROF_PC_SAMPLING_METHOD_CONTINUOUS ? op_now_ns() : 0;
    if (now && now - __atomic_load_n(&last, __ATOMIC_RELAXED) < 20000000ull) return;
    pthread_mutex_lock(&g_lock);
    if (now) last = now;
    pcs_ctx *c = ctx_of(ctx);
    if (c) drain_locked(c);
    pthread_mutex_unlock(&g_lock);
}

/* At exit (contexts synchronized by the caller) and at finalization: everything, then off. */
void op_cuda_pcs_finish(void)
{
    if (!g_on) return;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_nctx; i++) disable_locked(&g_ctx[i]);
    if (g_records) {
        op_info("cuda: PC sampling: %llu records, %llu samples, %llu dropped by the hardware",
                (unsigned long long)g_records, (unsigned long long)g_samples, (unsigned long long)g_dropped);
    }
    g_on = 0;
    pthread_mutex_unlock(&g_lock);
}

/* ------------------------------------------------------------------------------------------ */
/* The SDK's query (omniprof_query_pc_sampling_agent_configurations).                          */

static size_t pcs_query(omniprof_agent_id_t agent, omniprof_pc_sampling_configuration_t *out, size_t max)
{
    (void)agent;
    static const omniprof_pc_sampling_method_t methods[] = {OMNIPROF_PC_SAMPLING_METHOD_KERNEL_SERIALIZED,
                                                            OMNIPROF_PC_SAMPLING_METHOD_CONTINUOUS};
    size_t n = 0;
    for (size_t i = 0; i < 2 && n < max; i++, n++) {
        memset(&out[n], 0, sizeof out[n]);
        out[n].size = sizeof out[n];
        out[n].method = methods[i];
        out[n].unit = OMNIPROF_PC_SAMPLING_UNIT_CYCLES;
        out[n].min_interval = 1ull << 5;
        out[n].max_interval = 1ull << 31;
        out[n].default_interval = 0; /* CUPTI picks one from the SM count */
        out[n].flags = OMNIPROF_PC_SAMPLING_CONFIG_INTERVAL_POW2;
    }
    return n;
}

static const op_pc_sampling_provider g_provider = {sizeof(op_pc_sampling_provider), pcs_query};

__attribute__((constructor)) static void pcs_register(void) { op_sdk_pc_sampling_register_provider(&g_provider); }
