/* cupti_floor.c — bare CUPTI configurations as a CUDA injection library
 * (CUDA_INJECTION64_PATH=.../libomniprof-cupti-floor.so), so that the PyTorch comparison
 * (tests/gpu/torch_compare.py) measures what CUPTI itself costs on the same loop, beside
 * omniprof's modes that ask CUPTI for the same records. No callback, no processing: records are
 * counted and the buffers freed. OMNIPROF_CUPTI_FLOOR selects:
 *   kernel   CONCURRENT_KERNEL + MEMCPY + MEMSET activity (what any kernel trace pays)
 *   launch   kernel + API activity of the runtime and driver launch calls (= omniprof --kernel-trace)
 *   runtime  launch + every runtime API call but cudaGetDevice, + MEMORY2 (= omniprof --runtime-trace
 *            without NVTX, with omniprof's default OMNIPROF_CUDA_API_EXCLUDE)
 * At exit it prints "cupti_floor: MODE kernels=N api=N other=N dropped=N" on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

static long g_kernels, g_api, g_other;
static size_t g_dropped;
static const char *g_mode = "kernel";

static void CUPTIAPI req(uint8_t **buf, size_t *size, size_t *max)
{
    *size = 8u << 20;
    *buf = aligned_alloc(8, *size);
    *max = 0;
}

static void CUPTIAPI done(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    (void)size;
    CUpti_Activity *r = NULL;
    while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) g_kernels++;
        else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME || r->kind == CUPTI_ACTIVITY_KIND_DRIVER) g_api++;
        else g_other++;
    }
    size_t d = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &d) == CUPTI_SUCCESS) g_dropped += d;
    free(buf);
}

static void at_exit(void)
{
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    fprintf(stderr, "cupti_floor: %s kernels=%ld api=%ld other=%ld dropped=%zu\n", g_mode, g_kernels, g_api, g_other,
            g_dropped);
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
    static int done_once;
    if (done_once++) return 1;
    const char *m = getenv("OMNIPROF_CUPTI_FLOOR");
    if (m && *m) g_mode = m;
    int launch = !strcmp(g_mode, "launch") || !strcmp(g_mode, "runtime");
    cuptiActivityRegisterCallbacks(req, done);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
    if (!strcmp(g_mode, "runtime")) {
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
        cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 0);
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2);
    } else if (launch) {
        static const CUpti_CallbackId rt[] = {
            CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,         CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
            CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,     CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
            CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,      CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
            CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,         CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000};
        for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) cuptiActivityEnableRuntimeApi(rt[i], 1);
    }
    if (launch) {
        static const CUpti_CallbackId drv[] = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                               CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                                               CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};
        for (size_t i = 0; i < sizeof drv / sizeof drv[0]; i++) cuptiActivityEnableDriverApi(drv[i], 1);
    }
    atexit(at_exit);
    return 1;
}
