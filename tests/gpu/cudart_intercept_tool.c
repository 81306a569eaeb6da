/* cudart_intercept_tool.c — a tool library for the CUDA runtime and NVTX intercept tables: it
 * registers for both, wraps cudaMalloc, cudaMemcpy, cudaLaunchKernel, nvtxRangePushA and
 * nvtxRangePop with counters that chain to the previous entries, and at exit writes one line to
 * $OMNIPROF_RTI_OUTPUT:
 *   tables=<runtime seen>,<nvtx seen> cudaMalloc=N cudaMemcpy=N cudaLaunchKernel=N
 *   nvtxRangePushA=N nvtxRangePop=N
 * Run with LD_PRELOAD=libomniprof-cudart-intercept.so:<this library> (cudart_intercept.sh). */
#define NVTX_NO_IMPL
#include <stdio.h>
#include <stdlib.h>

#include "omniprof/omniprof.h"
#include "omniprof/cuda_runtime_table.h"
#include "omniprof/nvtx_table.h"

static omniprof_cuda_runtime_table_t g_rt_prev;
static omniprof_nvtx_table_t g_nvtx_prev;
static int g_rt_seen, g_nvtx_seen;
static unsigned long g_malloc, g_memcpy, g_launch, g_push, g_pop;

#define COUNT(c) __atomic_add_fetch(&(c), 1, __ATOMIC_RELAXED)

static cudaError_t my_malloc(void **p, size_t n)
{
    COUNT(g_malloc);
    return g_rt_prev.cudaMalloc(p, n);
}
static cudaError_t my_memcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k)
{
    COUNT(g_memcpy);
    return g_rt_prev.cudaMemcpy(d, s, n, k);
}
static cudaError_t my_launch(const void *f, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t st)
{
    COUNT(g_launch);
    return g_rt_prev.cudaLaunchKernel(f, g, b, a, sm, st);
}
static int my_push(const char *m)
{
    COUNT(g_push);
    return g_nvtx_prev.nvtxRangePushA(m);
}
static int my_pop(void)
{
    COUNT(g_pop);
    return g_nvtx_prev.nvtxRangePop();
}

static void on_table(omniprof_intercept_table_t type, uint64_t ver, uint64_t inst, void **tables,
                     uint64_t n, void *data)
{
    (void)inst, (void)data;
    if (n < 1 || !tables[0]) return;
    if (type == OMNIPROF_INTERCEPT_TABLE_CUDA_RUNTIME &&
        ver == OMNIPROF_CUDA_RUNTIME_TABLE_VERSION) {
        omniprof_cuda_runtime_table_t *t = tables[0];
        if (t->size < sizeof *t) return;
        g_rt_prev = *t;
        t->cudaMalloc = my_malloc;
        t->cudaMemcpy = my_memcpy;
        t->cudaLaunchKernel = my_launch;
        g_rt_seen = 1;
    } else if (type == OMNIPROF_INTERCEPT_TABLE_NVTX && ver == OMNIPROF_NVTX_TABLE_VERSION) {
        omniprof_nvtx_table_t *t = tables[0];
        if (t->size < sizeof *t) return;
        g_nvtx_prev = *t;
        t->nvtxRangePushA = my_push;
        t->nvtxRangePop = my_pop;
        g_nvtx_seen = 1;
    }
}

static void report(void)
{
    const char *path = getenv("OMNIPROF_RTI_OUTPUT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f) return;
    fprintf(f,
            "tables=%d,%d cudaMalloc=%lu cudaMemcpy=%lu cudaLaunchKernel=%lu nvtxRangePushA=%lu "
            "nvtxRangePop=%lu\n",
            g_rt_seen, g_nvtx_seen, g_malloc, g_memcpy, g_launch, g_push, g_pop);
    fclose(f);
}

static int tool_init(omniprof_client_finalize_t fini, void *data)
{
    (void)fini, (void)data;
    return 0;
}
static void tool_fini(void *data)
{
    (void)data;
    report();
}

static omniprof_tool_configure_result_t g_result = {sizeof(omniprof_tool_configure_result_t),
                                                    tool_init, tool_fini, NULL};

__attribute__((visibility("default"))) omniprof_tool_configure_result_t *
omniprof_configure(uint32_t version, const char *runtime_version, uint32_t priority,
                   omniprof_client_id_t *id)
{
    (void)version, (void)runtime_version, (void)priority;
    if (id) id->name = "cudart-intercept-test-tool";
    omniprof_status_t st = omniprof_at_intercept_table_registration(
        on_table, OMNIPROF_INTERCEPT_TABLE_CUDA_RUNTIME | OMNIPROF_INTERCEPT_TABLE_NVTX, NULL);
    if (st != OMNIPROF_STATUS_SUCCESS)
        fprintf(stderr, "cudart_intercept_tool: registration: %s\n",
                omniprof_get_status_string(st));
    return &g_result;
}
