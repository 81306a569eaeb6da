/* cuda_agents.c — the CUDA devices of the process as omniprof agents.
 *
 * Device properties come from the driver API, looked up with dlopen("libcuda.so.1") so that
 * the backend loads (and says "no driver" once) on machines without one. cuInit is called only
 * when a query may initialize the driver (omniprof_query_available_agents: a tool asked for
 * every agent, or counters need them at the start); a query that may not (the tool's database,
 * omniprof_query_ready_agents) finds the devices only once the program has initialized CUDA
 * itself, and says "later" before: NVIDIA's rule is that a child forked after the parent
 * initialized CUDA cannot use it, so a profiler that calls cuInit at its start breaks a program
 * that forks before its first CUDA call (the GPU test run.forkchild). The chip name ("GH100")
 * is derived from the compute capability, as CUPTI's profiler host API names chips.
 *
 * Agent ids are assigned by the SDK; records need them, so op_cuda_agent_of_device asks the
 * SDK (omniprof_query_ready_agents) and caches the ids of the GPU agents by ordinal, asking
 * again when a device is not in the cache: a record of a device exists only once the program
 * initialized CUDA, so the query finds it then. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "common/log.h"

typedef CUresult (*fn_init_t)(unsigned);
typedef CUresult (*fn_count_t)(int *);
typedef CUresult (*fn_get_t)(CUdevice *, int);
typedef CUresult (*fn_name_t)(char *, int, CUdevice);
typedef CUresult (*fn_uuid_t)(CUuuid *, CUdevice);
typedef CUresult (*fn_attr_t)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*fn_mem_t)(size_t *, CUdevice);

static const char *chip_name(int major, int minor)
{
    switch (major * 10 + minor) {
    case 70: return "GV100";
    case 72: return "GV11B";
    case 75: return "TU10x";
    case 80: return "GA100";
    case 86: return "GA10x";
    case 87: return "GA10B";
    case 89: return "AD10x";
    case 90: return "GH100";
    case 100: return "GB100";
    case 103: return "GB100";
    case 110: return "GB10B";
    case 120: return "GB20x";
    case 121: return "GB20x";
    default: return "unknown";
    }
}

static struct {
    fn_init_t init;
    fn_count_t count;
    fn_get_t get;
    fn_name_t name;
    fn_uuid_t uuid;
    fn_attr_t attr;
    fn_mem_t mem;
} g_drv;
static pthread_once_t g_drv_once = PTHREAD_ONCE_INIT;

static void drv_once(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    g_drv.init = (fn_init_t)dlsym(h, "cuInit");
    g_drv.count = (fn_count_t)dlsym(h, "cuDeviceGetCount");
    g_drv.get = (fn_get_t)dlsym(h, "cuDeviceGet");
    g_drv.name = (fn_name_t)dlsym(h, "cuDeviceGetName");
    g_drv.uuid = (fn_uuid_t)dlsym(h, "cuDeviceGetUuid_v2");
    if (!g_drv.uuid) g_drv.uuid = (fn_uuid_t)dlsym(h, "cuDeviceGetUuid");
    g_drv.attr = (fn_attr_t)dlsym(h, "cuDeviceGetAttribute");
    g_drv.mem = (fn_mem_t)dlsym(h, "cuDeviceTotalMem_v2");
}

size_t op_cuda_query_agents(omniprof_agent_v0_t *out, size_t max, int may_init)
{
    if (op_cuda_forked) return 0; /* a forked child is not traced on the GPU */
    pthread_once(&g_drv_once, drv_once);
    fn_get_t get = g_drv.get;
    fn_name_t name = g_drv.name;
    fn_uuid_t uuid = g_drv.uuid;
    fn_attr_t attr = g_drv.attr;
    fn_mem_t mem = g_drv.mem;
    int n = 0;
    if (!g_drv.init || !g_drv.count || !get || !attr) return 0;
    /* before cuInit every driver call says CUDA_ERROR_NOT_INITIALIZED: the program has not
     * initialized CUDA (yet), and this query may not do it for the program */
    CUresult r = g_drv.count(&n);
    if (r == CUDA_ERROR_NOT_INITIALIZED) {
        if (!may_init) return OP_AGENTS_LATER;
        if (g_drv.init(0) != CUDA_SUCCESS) return 0;
        r = g_drv.count(&n);
    }
    if (r != CUDA_SUCCESS || n <= 0) return 0;
    for (int i = 0; i < n && (size_t)i < max; i++) {
        omniprof_agent_v0_t *a = &out[i];
        CUdevice d;
        if (get(&d, i) != CUDA_SUCCESS) continue;
        memset(a, 0, sizeof *a);
        a->size = sizeof *a;
        a->type = OMNIPROF_AGENT_TYPE_GPU;
        a->type_index = (uint32_t)i;
        char buf[256] = "NVIDIA GPU";
        if (name) name(buf, sizeof buf, d);
        a->name = op_sdk_intern(buf);
        a->product_name = a->name;
        a->vendor_name = "NVIDIA";
        int v = 0;
#define ATTR(ID) (v = 0, attr(&v, ID, d), v)
        a->compute_capability_major = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        a->compute_capability_minor = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        a->model_name = chip_name((int)a->compute_capability_major, (int)a->compute_capability_minor);
        a->cu_count = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
        a->simd_per_cu = 4; /* SM sub-partitions (SMSPs) on Volta and later */
        a->core_clock_khz = (uint64_t)ATTR(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
        a->memory_clock_khz = (uint64_t)ATTR(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
        a->memory_bus_width_bits = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
        a->l2_cache_bytes = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
        a->max_threads_per_block = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
        a->warp_size = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
        a->max_shared_memory_per_block = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
        a->max_threads_per_cu = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
        a->max_shared_memory_per_cu = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
        a->async_engine_count = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
        a->max_block_dim[0] = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
        a->max_block_dim[1] = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
        a->max_block_dim[2] = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
        a->max_grid_dim[0] = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
        a->max_grid_dim[1] = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
        a->max_grid_dim[2] = (uint32_t)ATTR(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
        int dom = ATTR(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID), bus = ATTR(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
            dev = ATTR(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
#undef ATTR
        snprintf(a->pci_bus_id, sizeof a->pci_bus_id, "%04x:%02x:%02x.0", (unsigned)dom & 0xffffu,
                 (unsigned)bus & 0xffu, (unsigned)dev & 0xffu);
        size_t bytes = 0;
        if (mem && mem(&bytes, d) == CUDA_SUCCESS) a->memory_bytes = bytes;
        CUuuid u;
        if (uuid && uuid(&u, d) == CUDA_SUCCESS) {
            const unsigned char *b = (const unsigned char *)u.bytes;
            /* nvidia-smi's spelling: "GPU-" and the 36-character UUID */
            snprintf(a->uuid, sizeof a->uuid,
                     "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                     b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
        }
    }
    return (size_t)n;
}

#define MAX_DEV 64
static omniprof_agent_id_t g_ids[MAX_DEV];
static _Atomic uint32_t g_ids_n; /* ordinals below it are in g_ids */
static pthread_mutex_t g_ids_lock = PTHREAD_MUTEX_INITIALIZER;

static omniprof_status_t collect(omniprof_agent_version_t version, const void **agents, size_t n, void *data)
{
    (void)data;
    if (version != OMNIPROF_AGENT_INFO_VERSION_0) return OMNIPROF_STATUS_SUCCESS;
    uint32_t top = 0;
    for (size_t i = 0; i < n; i++) {
        const omniprof_agent_v0_t *a = agents[i];
        if (a && a->type == OMNIPROF_AGENT_TYPE_GPU && a->type_index < MAX_DEV) {
            g_ids[a->type_index] = a->id;
            if (a->type_index + 1 > top) top = a->type_index + 1;
        }
    }
    if (top > atomic_load_explicit(&g_ids_n, memory_order_relaxed))
        atomic_store_explicit(&g_ids_n, top, memory_order_release);
    return OMNIPROF_STATUS_SUCCESS;
}

void op_cuda_agents_at_fork_child(void)
{
    pthread_mutex_init(&g_ids_lock, NULL); /* another thread may have held it at the fork */
}

omniprof_agent_id_t op_cuda_agent_of_device(uint32_t device)
{
    if (device >= MAX_DEV) return (omniprof_agent_id_t){0};
    if (device < atomic_load_explicit(&g_ids_n, memory_order_acquire)) return g_ids[device];
    pthread_mutex_lock(&g_ids_lock);
    if (device >= atomic_load_explicit(&g_ids_n, memory_order_relaxed)) {
        omniprof_status_t st =
            omniprof_query_ready_agents(OMNIPROF_AGENT_INFO_VERSION_0, collect, sizeof(omniprof_agent_v0_t), NULL);
        if (st != OMNIPROF_STATUS_SUCCESS) op_info("cuda: agent ids unavailable (%s)", omniprof_get_status_string(st));
    }
    pthread_mutex_unlock(&g_ids_lock);
    return device < atomic_load_explicit(&g_ids_n, memory_order_acquire) ? g_ids[device] : (omniprof_agent_id_t){0};
}
