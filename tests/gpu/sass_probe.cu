// sass_probe.cu — CUPTI SASS metrics without omniprof: which step makes counts read 0 (issue 16).
// Usage: sass_probe MODE, MODE one of
//   plain     enable on the current context after cudaFree(0), launch, sync, flush (NVIDIA's order)
//   created   enable in a CONTEXT_CREATED resource callback (a subscriber), flush in main after sync
//   activity  as created, with CONCURRENT_KERNEL activity records on
//   destroy   as created, flush in the CONTEXT_DESTROY_STARTING callback (cudaDeviceReset)
//   eager     as plain, enableLazyPatching 0
//   serial    as created, with (serializing) KERNEL activity records on
//   late      as created, CONCURRENT_KERNEL activity enabled after cuptiSassMetricsEnable
//   runtime   as created, with RUNTIME (API) activity records on, no kernel records
//   memcpy    as created, with MEMCPY activity records on
//   serialcopy as created, with KERNEL and MEMCPY activity records on
// Prints "PROBE MODE records=N instances=K sum=S" (S = summed smsp__sass_inst_executed).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CU(x) do { CUptiResult r_ = (x); if (r_ != CUPTI_SUCCESS) { const char *s_; cuptiGetResultString(r_, &s_); \
    fprintf(stderr, "%s: %s\n", #x, s_); } } while (0)

__global__ void k_count(float *out, int trips) {
    float acc = threadIdx.x;
#pragma unroll 1
    for (int i = 0; i < trips; i++) acc = fmaf(acc, 1.00001f, 0.5f);
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

static const char *g_mode;
static uint64_t g_id;
static int g_lazy = 1;

static void configure(void) {
    CUpti_Profiler_Initialize_Params pi = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CU(cuptiProfilerInitialize(&pi));
    CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cn.deviceIndex = 0;
    CU(cuptiDeviceGetChipName(&cn));
    CUpti_SassMetrics_GetProperties_Params gp = {CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
    gp.pChipName = cn.pChipName;
    gp.pMetricName = "smsp__sass_inst_executed";
    CU(cuptiSassMetricsGetProperties(&gp));
    g_id = gp.metric.metricId;
    CUpti_SassMetrics_Config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.metricId = g_id;
    cfg.outputGranularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
    CUpti_SassMetricsSetConfig_Params sc = {CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
    sc.numOfMetricConfig = 1;
    sc.pConfigs = &cfg;
    sc.deviceIndex = 0;
    CU(cuptiSassMetricsSetConfig(&sc));
}

static void enable(CUcontext ctx) {
    CUpti_SassMetricsEnable_Params ep = {CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
    ep.ctx = ctx;
    ep.enableLazyPatching = (uint8_t)g_lazy;
    CU(cuptiSassMetricsEnable(&ep));
}

static void flush(CUcontext ctx) {
    CUpti_SassMetricsGetDataProperties_Params dp = {CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
    dp.ctx = ctx;
    CU(cuptiSassMetricsGetDataProperties(&dp));
    size_t n = dp.numOfPatchedInstructionRecords, k = dp.numOfInstances;
    unsigned long long sum = 0;
    if (n && k) {
        CUpti_SassMetrics_Data *d = (CUpti_SassMetrics_Data *)calloc(n, sizeof *d);
        CUpti_SassMetrics_InstanceValue *v = (CUpti_SassMetrics_InstanceValue *)calloc(n * k, sizeof *v);
        for (size_t i = 0; i < n; i++) d[i].structSize = sizeof d[i], d[i].pInstanceValues = &v[i * k];
        CUpti_SassMetricsFlushData_Params fp = {CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
        fp.ctx = ctx;
        fp.numOfPatchedInstructionRecords = n;
        fp.numOfInstances = k;
        fp.pMetricsData = d;
        CU(cuptiSassMetricsFlushData(&fp));
        for (size_t i = 0; i < n * k; i++) sum += v[i].value;
    }
    printf("PROBE %s records=%zu instances=%zu sum=%llu (expect 9 loop instructions x 3168000 + more)\n", g_mode, n, k, sum);
    fflush(stdout);
}

static void CUPTIAPI on_cb(void *u, CUpti_CallbackDomain dom, CUpti_CallbackId id, const void *data) {
    (void)u;
    if (dom != CUPTI_CB_DOMAIN_RESOURCE) return;
    const CUpti_ResourceData *rd = (const CUpti_ResourceData *)data;
    if (id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        configure();
        enable(rd->context);
        if (!strcmp(g_mode, "late")) CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    } else if (id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && !strcmp(g_mode, "destroy")) {
        flush(rd->context);
    }
}

static void CUPTIAPI buf_req(uint8_t **b, size_t *sz, size_t *max) {
    *sz = 1 << 20;
    *b = (uint8_t *)aligned_alloc(8, *sz);
    *max = 0;
}
static void CUPTIAPI buf_done(CUcontext c, uint32_t s, uint8_t *b, size_t sz, size_t valid) {
    (void)c, (void)s, (void)sz, (void)valid;
    free(b);
}

int main(int argc, char **argv) {
    g_mode = argc > 1 ? argv[1] : "plain";
    int sub = strcmp(g_mode, "plain") && strcmp(g_mode, "eager");
    if (!strcmp(g_mode, "eager")) g_lazy = 0;
    CUpti_SubscriberHandle h;
    if (sub) {
        CU(cuptiSubscribe(&h, on_cb, NULL));
        CU(cuptiEnableDomain(1, h, CUPTI_CB_DOMAIN_RESOURCE));
        CU(cuptiActivityRegisterCallbacks(buf_req, buf_done));
        if (!strcmp(g_mode, "activity")) CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        if (!strcmp(g_mode, "serial") || !strcmp(g_mode, "serialcopy")) CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL));
        if (!strcmp(g_mode, "runtime")) CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
        if (!strcmp(g_mode, "memcpy") || !strcmp(g_mode, "serialcopy")) CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
    }
    float *o;
    cudaFree(0);
    CUcontext ctx;
    cuCtxGetCurrent(&ctx);
    if (!sub) {
        configure();
        enable(ctx);
    }
    cudaMalloc(&o, 132 * 256 * 4);
    for (int r = 0; r < 3; r++) k_count<<<132, 256>>>(o, 1000);
    cudaDeviceSynchronize();
    if (strcmp(g_mode, "destroy")) flush(ctx);
    else cudaDeviceReset();
    if (sub) cuptiActivityFlushAll(1);
    return 0;
}
