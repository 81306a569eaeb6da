// counters_device.cu — the device counting service on a GPU (tests/gpu/counters.sh,
// counters.device): a tool in the program configures omniprof_configure_device_counting_service
// for the first GPU with dram__bytes_read.sum and DRAM_BYTES; the first sample opens the window,
// two saxpy over N floats run, the second sample must read 2 x 2*N*4 bytes (2%), and a third
// sample over an idle window must read under 1% of that. Prints one line; exit 0 on success.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#include "omniprof/counters.h"
#include "omniprof/omniprof.h"

__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

static omniprof_context_id_t g_ctx;
static omniprof_agent_id_t g_gpu;
static const char *g_chip;
static omniprof_status_t g_cfg_st = OMNIPROF_STATUS_ERROR;

static omniprof_status_t agents_cb(omniprof_agent_version_t v, const void **agents, size_t n, void *)
{
    for (size_t i = 0; i < n && v == OMNIPROF_AGENT_INFO_VERSION_0; i++) {
        const omniprof_agent_v0_t *a = (const omniprof_agent_v0_t *)agents[i];
        if (a->type == OMNIPROF_AGENT_TYPE_GPU && !g_gpu.handle) {
            g_gpu = a->id;
            g_chip = a->model_name;
        }
    }
    return OMNIPROF_STATUS_SUCCESS;
}

static omniprof_status_t choose(omniprof_context_id_t ctx, omniprof_agent_id_t agent,
                                omniprof_status_t (*set_config)(omniprof_context_id_t, omniprof_counter_config_id_t),
                                void *)
{
    const char *names[2] = {"dram__bytes_read.sum", "DRAM_BYTES"};
    omniprof_counter_id_t ids[2];
    for (int i = 0; i < 2; i++)
        if (omniprof_find_counter(g_chip, names[i], &ids[i]) != OMNIPROF_STATUS_SUCCESS) {
            fprintf(stderr, "find: %s\n", omniprof_get_counter_error_string());
            return OMNIPROF_STATUS_ERROR;
        }
    omniprof_counter_config_id_t cfg;
    g_cfg_st = omniprof_create_counter_config(agent, ids, 2, &cfg);
    if (g_cfg_st != OMNIPROF_STATUS_SUCCESS) {
        fprintf(stderr, "config: %s\n", omniprof_get_counter_error_string());
        return g_cfg_st;
    }
    return set_config(ctx, cfg);
}

static omniprof_status_t chip_cb(const char *, void *) { return OMNIPROF_STATUS_ERROR; }

static int tool_init(omniprof_client_finalize_t, void *)
{
    omniprof_create_context(&g_ctx);
    /* The SDK lists the GPU agents of loaded backends only; nothing here configures a GPU
     * tracing kind, so load the counter provider (and with it the CUDA backend) first. */
    omniprof_iterate_chips(chip_cb, NULL);
    omniprof_query_available_agents(OMNIPROF_AGENT_INFO_VERSION_0, agents_cb, sizeof(omniprof_agent_v0_t), NULL);
    if (!g_gpu.handle) {
        fprintf(stderr, "no GPU agent\n");
        return 1;
    }
    omniprof_status_t st = omniprof_configure_device_counting_service(g_ctx, OMNIPROF_BUFFER_NONE, g_gpu, choose, NULL);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        fprintf(stderr, "configure: %s\n", omniprof_get_status_string(st));
        return 1;
    }
    return 0;
}

static omniprof_tool_configure_result_t g_res = {sizeof(omniprof_tool_configure_result_t), tool_init, NULL, NULL};
static omniprof_tool_configure_result_t *configure(uint32_t, const char *, uint32_t, omniprof_client_id_t *id)
{
    id->name = "counters-device-test";
    return &g_res;
}

static double sample(const char *what, double *derived)
{
    omniprof_counter_value_record_t recs[4];
    size_t n = 4;
    omniprof_user_data_t ud = {0};
    omniprof_status_t st = omniprof_sample_device_counting_service(g_ctx, ud, 0, recs, &n);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        printf("BAD: sample %s: %s (%s)\n", what, omniprof_get_status_string(st), omniprof_get_counter_error_string());
        exit(1);
    }
    double v = -1;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(recs[i].counter_name, "dram__bytes_read.sum")) v = recs[i].value;
        if (!strcmp(recs[i].counter_name, "DRAM_BYTES") && derived) *derived = recs[i].value;
    }
    return n ? v : -2;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : (1 << 24);
    omniprof_force_configure(configure);
    omniprof_initialize();
    if (omniprof_start_context(g_ctx) != OMNIPROF_STATUS_SUCCESS) {
        printf("BAD: context did not start (tool init failed)\n");
        return 1;
    }
    float *x, *y;
    cudaMalloc(&x, (size_t)n * 4);
    cudaMalloc(&y, (size_t)n * 4);
    cudaMemset(x, 0, (size_t)n * 4);
    cudaMemset(y, 0, (size_t)n * 4);
    /* Evict x and y from L2 before the window (as ncu's cache control does): lines of y left in
     * L2 by the memset would be read from L2, not DRAM, and the window would read less than
     * 2 x 2*N*4 bytes. Writing a buffer larger than L2 replaces them; its dirty lines cost DRAM
     * writes, not reads. */
    int dev = 0, l2 = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
    size_t scrub_bytes = (size_t)(l2 > 0 ? l2 : (64 << 20)) * 4;
    void *scrub = NULL;
    if (cudaMalloc(&scrub, scrub_bytes) == cudaSuccess) cudaMemset(scrub, 1, scrub_bytes);
    cudaDeviceSynchronize();
    double first = sample("open", NULL); /* opens the window: no values yet */
    for (int r = 0; r < 2; r++) saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
    cudaDeviceSynchronize();
    double derived = -1;
    double busy = sample("busy", &derived);
    double idle = sample("idle", NULL);
    double want = 2.0 * 2 * n * 4;
    bool ok = busy > 0.98 * want && busy < 1.02 * want && idle >= 0 && idle < 0.01 * want && derived >= busy;
    printf("%s: chip %s; first sample %s; window with 2 saxpy: dram__bytes_read.sum %.6g (expected %.6g), "
           "DRAM_BYTES %.6g; idle window %.6g\n",
           ok ? "OK" : "BAD", g_chip ? g_chip : "?", first == -2 ? "opened the window" : "returned values", busy, want,
           derived, idle);
    omniprof_stop_context(g_ctx);
    if (scrub) cudaFree(scrub);
    return ok ? 0 : 1;
}
