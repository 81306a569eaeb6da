/* ocl_queue.c — what the OpenCL backend remembers about the program's OpenCL objects: devices
 * (as omniprof agents, with their device-to-host clock offsets), command queues (with the
 * profiling flag the backend turned on behind the program's back), contexts' devices, kernel
 * names and mapped sizes; and the special entries that keep the program's view of a queue
 * unchanged (clCreateCommandQueue*, clGetCommandQueueInfo, clSetCommandQueueProperty,
 * clGetEventProfilingInfo) or keep the kernel names right (clCreateKernel, clReleaseKernel).
 *
 * Handle tables. Queues, kernels, contexts and mapped pointers live in open-addressing tables
 * keyed by the handle's address: readers (every enqueue) take no lock; writers hold g_lock,
 * fill a slot's data, then publish its key (release). A released handle's slot becomes a
 * tombstone that later inserts reuse. A full table leaves the handle untracked (its records
 * lose the detail it would give; one log line).
 *
 * Clock mapping (ocl_device_to_host). OpenCL profiling gives device timestamps; a command's
 * QUEUED stamp q is taken inside the enqueue call, so it was taken after the host time t0 read
 * just before the call: host - device >= t0 - q for every command (a lower bound on the true
 * offset o). Using offset = max(t0 - q of this command, the largest such bound of the last
 * second) gives, without drift between the clocks: start = START + offset >= t0 (a command
 * never starts before it was enqueued) and END + offset <= END + o (it never ends after it
 * really ended, hence before the program saw it complete). The one-second window lets the
 * offset follow slow drift. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend/opencl/ocl_internal.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/u64map.h"

#define MAX_DEVICES 64
#define QUEUE_SLOTS 1024
#define KERNEL_SLOTS 4096
#define CONTEXT_SLOTS 256
#define MAP_SLOTS 4096
#define KEY_EMPTY ((uintptr_t)0)
#define KEY_TOMB ((uintptr_t)1)

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------------------------------ */
/* Handle tables (lock-free lookup; inserts and removals under g_lock).                        */

typedef struct table {
    void *slots;
    size_t stride; /* each slot starts with its _Atomic uintptr_t key */
    uint32_t n;    /* power of two */
    const char *what;
    int full_logged;
} table;

static inline _Atomic uintptr_t *slot_key(const table *t, uint32_t i)
{
    return (_Atomic uintptr_t *)((char *)t->slots + (size_t)i * t->stride);
}

static uint32_t slot_hash(uintptr_t key, uint32_t n) { return (uint32_t)op_hash64((uint64_t)key) & (n - 1); }

/* The slot holding `key`, or NULL. Lock-free. */
static void *table_find(const table *t, const void *handle)
{
    uintptr_t key = (uintptr_t)handle;
    if (key <= KEY_TOMB) return NULL;
    for (uint32_t i = 0, j = slot_hash(key, t->n); i < t->n; i++, j = (j + 1) & (t->n - 1)) {
        uintptr_t k = atomic_load_explicit(slot_key(t, j), memory_order_acquire);
        if (k == key) return slot_key(t, j);
        if (k == KEY_EMPTY) return NULL;
    }
    return NULL;
}

/* Under g_lock: the slot for `handle` (its own if present, else a free one, key not yet
 * published), or NULL when the table is full. *fresh tells which. */
static void *table_claim(table *t, const void *handle, int *fresh)
{
    void *own = table_find(t, handle);
    *fresh = own == NULL;
    if (own) return own;
    uintptr_t key = (uintptr_t)handle;
    for (uint32_t i = 0, j = slot_hash(key, t->n); i < t->n; i++, j = (j + 1) & (t->n - 1)) {
        uintptr_t k = atomic_load_explicit(slot_key(t, j), memory_order_relaxed);
        if (k == KEY_EMPTY || k == KEY_TOMB) return slot_key(t, j);
    }
    if (!t->full_logged) {
        t->full_logged = 1;
        op_warn("opencl: more than %u live %s; the others are not tracked", t->n, t->what);
    }
    return NULL;
}

static void table_publish(void *slot, const void *handle)
{
    atomic_store_explicit((_Atomic uintptr_t *)slot, (uintptr_t)handle, memory_order_release);
}

static void table_remove(table *t, const void *handle)
{
    pthread_mutex_lock(&g_lock);
    void *s = table_find(t, handle);
    if (s) atomic_store_explicit((_Atomic uintptr_t *)s, KEY_TOMB, memory_order_release);
    pthread_mutex_unlock(&g_lock);
}

typedef struct queue_slot {
    _Atomic uintptr_t key;
    ocl_queue q;
} queue_slot;
typedef struct kernel_slot {
    _Atomic uintptr_t key;
    const char *name;
    uint64_t id;
} kernel_slot;
typedef struct context_slot {
    _Atomic uintptr_t key;
    ocl_device *dev;
} context_slot;
typedef struct map_slot {
    _Atomic uintptr_t key;
    uint64_t bytes;
} map_slot;

static queue_slot g_queue_slots[QUEUE_SLOTS];
static kernel_slot g_kernel_slots[KERNEL_SLOTS];
static context_slot g_context_slots[CONTEXT_SLOTS];
static map_slot g_map_slots[MAP_SLOTS];
static table g_queues = {g_queue_slots, sizeof(queue_slot), QUEUE_SLOTS, "command queues", 0};
static table g_kernels = {g_kernel_slots, sizeof(kernel_slot), KERNEL_SLOTS, "kernels", 0};
static table g_contexts = {g_context_slots, sizeof(context_slot), CONTEXT_SLOTS, "contexts", 0};
static table g_maps = {g_map_slots, sizeof(map_slot), MAP_SLOTS, "mapped regions", 0};
static _Atomic uint64_t g_next_queue_id = 1;

/* ------------------------------------------------------------------------------------------ */
/* Devices and agents.                                                                         */

static ocl_device g_devs[MAX_DEVICES];
static _Atomic uint32_t g_ndevs;
static int g_enumerated;

static char *device_string(cl_device_id d, cl_device_info what, char *buf, size_t n)
{
    buf[0] = '\0';
    if (ocl_next.clGetDeviceInfo(d, what, n, buf, NULL) != CL_SUCCESS) buf[0] = '\0';
    buf[n - 1] = '\0';
    return buf;
}

/* Under g_lock. */
static ocl_device *device_add_locked(cl_device_id id)
{
    uint32_t n = atomic_load(&g_ndevs);
    for (uint32_t i = 0; i < n; i++)
        if (g_devs[i].id == id) return &g_devs[i];
    if (n >= MAX_DEVICES) return NULL;
    char v[256];
    ocl_device *d = &g_devs[n];
    d->id = id;
    d->ordinal = n;
    d->version = op_sdk_intern(device_string(id, CL_DEVICE_VERSION, v, sizeof v));
    atomic_store_explicit(&g_ndevs, n + 1, memory_order_release);
    return d;
}

/* Every device of every platform, in the loader's order: the agents' order. */
static void enumerate_locked(void)
{
    if (g_enumerated || !atomic_load(&ocl_layer_ready) || !ocl_next.clGetPlatformIDs || !ocl_next.clGetDeviceIDs) return;
    g_enumerated = 1;
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (ocl_next.clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) return;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_device_id devs[MAX_DEVICES];
        cl_uint nd = 0;
        if (ocl_next.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devs, &nd) != CL_SUCCESS) continue;
        for (cl_uint i = 0; i < nd && i < MAX_DEVICES; i++) device_add_locked(devs[i]);
    }
}

ocl_device *ocl_device_get(cl_device_id id)
{
    if (!id) return NULL;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t n = atomic_load_explicit(&g_ndevs, memory_order_acquire);
        for (uint32_t i = 0; i < n; i++)
            if (g_devs[i].id == id) return &g_devs[i];
        if (pass) break;
        pthread_mutex_lock(&g_lock);
        enumerate_locked();
        pthread_mutex_unlock(&g_lock);
    }
    /* a sub-device: its parent's record (and agent) */
    cl_device_id parent = NULL;
    if (ocl_next.clGetDeviceInfo(id, CL_DEVICE_PARENT_DEVICE, sizeof parent, &parent, NULL) == CL_SUCCESS && parent &&
        parent != id) {
        uint32_t n = atomic_load_explicit(&g_ndevs, memory_order_acquire);
        for (uint32_t i = 0; i < n; i++)
            if (g_devs[i].id == parent) return &g_devs[i];
    }
    pthread_mutex_lock(&g_lock);
    ocl_device *d = device_add_locked(id);
    pthread_mutex_unlock(&g_lock);
    return d;
}

/* The SDK builds its agent list before the program may have called OpenCL: if the program
 * links libOpenCL, one call through it initializes the loader (which initializes this layer,
 * once it is in OPENCL_LAYERS: the tool may have loaded us without the launcher). */
static void init_loader_if_linked(void)
{
    if (atomic_load(&ocl_layer_ready)) return;
    ocl_join_loader_chain();
    void *h = dlopen("libOpenCL.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return;
    cl_int (*get)(cl_uint, cl_platform_id *, cl_uint *) =
        (cl_int(*)(cl_uint, cl_platform_id *, cl_uint *))dlsym(h, "clGetPlatformIDs");
    cl_uint n = 0;
    ocl_internal_calls++;
    if (get) get(0, NULL, &n);
    ocl_internal_calls--;
    dlclose(h);
}

static void uuid_text(cl_device_id id, int nvidia, char *out, size_t n)
{
    unsigned char b[CL_UUID_SIZE_KHR];
    if (ocl_next.clGetDeviceInfo(id, CL_DEVICE_UUID_KHR, sizeof b, b, NULL) != CL_SUCCESS) return;
    snprintf(out, n, "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", nvidia ? "GPU-" : "", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void fill_agent(const ocl_device *d, omniprof_agent_v0_t *a)
{
    char s[256];
    cl_uint u = 0;
    cl_ulong ul = 0;
    size_t sz = 0;
    memset(a, 0, sizeof *a);
    a->type_index = d->ordinal;
    a->name = op_sdk_intern(device_string(d->id, CL_DEVICE_NAME, s, sizeof s));
    a->product_name = a->name;
    a->vendor_name = op_sdk_intern(device_string(d->id, CL_DEVICE_VENDOR, s, sizeof s));
    a->model_name = d->version; /* "OpenCL 3.0 ...": also how ocl_device_agent finds it */
    uuid_text(d->id, strstr(a->vendor_name, "NVIDIA") != NULL, a->uuid, sizeof a->uuid);
    if (ocl_next.clGetDeviceInfo(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u, &u, NULL) == CL_SUCCESS) a->cu_count = u;
    if (ocl_next.clGetDeviceInfo(d->id, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof u, &u, NULL) == CL_SUCCESS)
        a->core_clock_khz = (uint64_t)u * 1000;
    if (ocl_next.clGetDeviceInfo(d->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS) a->memory_bytes = ul;
    if (ocl_next.clGetDeviceInfo(d->id, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS)
        a->l2_cache_bytes = (uint32_t)ul;
    if (ocl_next.clGetDeviceInfo(d->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS)
        a->max_shared_memory_per_block = (uint32_t)ul;
    if (ocl_next.clGetDeviceInfo(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof sz, &sz, NULL) == CL_SUCCESS)
        a->max_threads_per_block = (uint32_t)sz;
    a->simd_per_cu = 1;
}

size_t ocl_query_agents(omniprof_agent_v0_t *out, size_t max, int may_init)
{
    /* Before the program's first OpenCL call, asking the platforms would initialize its drivers
     * for the program (NVIDIA's initializes CUDA): a query that may not waits until the layer
     * sees the program's own calls. */
    if (!may_init && !atomic_load(&ocl_layer_ready)) return OP_AGENTS_LATER;
    init_loader_if_linked();
    if (!atomic_load(&ocl_layer_ready)) return 0;
    ocl_internal_calls++;
    pthread_mutex_lock(&g_lock);
    enumerate_locked();
    pthread_mutex_unlock(&g_lock);
    uint32_t n = atomic_load(&g_ndevs);
    for (uint32_t i = 0; i < n && i < max; i++) fill_agent(&g_devs[i], &out[i]);
    ocl_internal_calls--;
    return n;
}

static omniprof_status_t collect_agents(omniprof_agent_version_t version, const void **agents, size_t n, void *data)
{
    (void)data;
    if (version != OMNIPROF_AGENT_INFO_VERSION_0) return OMNIPROF_STATUS_SUCCESS;
    uint32_t nd = atomic_load(&g_ndevs);
    for (size_t i = 0; i < n; i++) {
        const omniprof_agent_v0_t *a = agents[i];
        if (a && a->type_index < nd && a->model_name == g_devs[a->type_index].version) g_devs[a->type_index].agent = a->id;
    }
    return OMNIPROF_STATUS_SUCCESS;
}

static pthread_once_t g_agents_once = PTHREAD_ONCE_INIT;
static void resolve_agents(void)
{
    omniprof_query_available_agents(OMNIPROF_AGENT_INFO_VERSION_0, collect_agents, sizeof(omniprof_agent_v0_t), NULL);
}

omniprof_agent_id_t ocl_device_agent(ocl_device *d)
{
    if (!d) return (omniprof_agent_id_t){0};
    pthread_once(&g_agents_once, resolve_agents);
    return d->agent;
}

#define OFFSET_WINDOW_NS 1000000000ull

uint64_t ocl_device_to_host(ocl_device *d, uint64_t enqueue_host_ns, uint64_t queued_dev, uint64_t dev_ns)
{
    uint64_t now = op_now_ns();
    int64_t best = 0;
    int have = 0;
    if (d) {
        uint64_t at = atomic_load_explicit(&d->offset_at, memory_order_acquire);
        if (at && now - at < OFFSET_WINDOW_NS) best = atomic_load_explicit(&d->offset_ns, memory_order_relaxed), have = 1;
    }
    if (queued_dev) {
        int64_t bound = (int64_t)enqueue_host_ns - (int64_t)queued_dev;
        if (!have || bound > best) {
            best = bound, have = 1;
            if (d) {
                atomic_store_explicit(&d->offset_ns, bound, memory_order_relaxed);
                atomic_store_explicit(&d->offset_at, now, memory_order_release);
            }
        }
    }
    if (!have) return enqueue_host_ns; /* no QUEUED stamp, no history: the enqueue time */
    return (uint64_t)((int64_t)dev_ns + best);
}

/* ------------------------------------------------------------------------------------------ */
/* Contexts, kernels, maps.                                                                    */

ocl_device *ocl_context_device(cl_context ctx)
{
    context_slot *s = table_find(&g_contexts, ctx);
    if (s) return s->dev;
    cl_device_id dev = NULL;
    if (!ctx || ocl_next.clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL) != CL_SUCCESS) {
        /* more than one device: the first */
        cl_device_id devs[MAX_DEVICES];
        if (!ctx || ocl_next.clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof devs, devs, NULL) != CL_SUCCESS) return NULL;
        dev = devs[0];
    }
    ocl_device *d = ocl_device_get(dev);
    pthread_mutex_lock(&g_lock);
    int fresh;
    s = table_claim(&g_contexts, ctx, &fresh);
    if (s) {
        s->dev = d;
        table_publish(s, ctx);
    }
    pthread_mutex_unlock(&g_lock);
    return d;
}

static uint64_t name_id(const char *s) { return op_hash_bytes(s, strlen(s)); }

void ocl_kernel_remember(cl_kernel k, const char *name)
{
    if (!k || !name) return;
    const char *iname = op_sdk_intern(name);
    pthread_mutex_lock(&g_lock);
    int fresh;
    kernel_slot *s = table_claim(&g_kernels, k, &fresh);
    if (s) {
        s->name = iname;
        s->id = name_id(iname);
        table_publish(s, k);
    }
    pthread_mutex_unlock(&g_lock);
}

void ocl_kernel_forget(cl_kernel k) { table_remove(&g_kernels, k); }

const char *ocl_kernel_name(cl_kernel k, uint64_t *kernel_id)
{
    kernel_slot *s = table_find(&g_kernels, k);
    if (s) {
        *kernel_id = s->id;
        return s->name;
    }
    char name[512];
    size_t n = 0;
    if (!k || ocl_next.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, &n) != CL_SUCCESS)
        snprintf(name, sizeof name, "<unknown kernel>");
    name[sizeof name - 1] = '\0';
    ocl_kernel_remember(k, name);
    s = table_find(&g_kernels, k);
    if (s) {
        *kernel_id = s->id;
        return s->name;
    }
    const char *iname = op_sdk_intern(name);
    *kernel_id = name_id(iname);
    return iname;
}

void ocl_map_remember(const void *ptr, uint64_t bytes)
{
    if (!ptr) return;
    pthread_mutex_lock(&g_lock);
    int fresh;
    map_slot *s = table_claim(&g_maps, ptr, &fresh);
    if (s) {
        s->bytes = bytes;
        table_publish(s, ptr);
    }
    pthread_mutex_unlock(&g_lock);
}

uint64_t ocl_map_forget(const void *ptr)
{
    map_slot *s = table_find(&g_maps, ptr);
    uint64_t bytes = s ? s->bytes : 0;
    if (s) table_remove(&g_maps, ptr);
    return bytes;
}

/* ------------------------------------------------------------------------------------------ */
/* Queues.                                                                                     */

ocl_queue *ocl_queue_get(cl_command_queue q)
{
    queue_slot *s = table_find(&g_queues, q);
    return s ? &s->q : NULL;
}

static int want_profiling(void)
{
    return atomic_load_explicit(&ocl_on, memory_order_relaxed) &&
           (atomic_load_explicit(&ocl_activity, memory_order_relaxed) & OCL_ACT_TIMED) && !ocl_internal_calls;
}

static void queue_add(cl_command_queue q, cl_device_id dev, cl_command_queue_properties app_props, int forced,
                      const cl_queue_properties *app_array)
{
    ocl_device *d = ocl_device_get(dev);
    pthread_mutex_lock(&g_lock);
    int fresh;
    queue_slot *s = table_claim(&g_queues, q, &fresh);
    if (s) {
        ocl_queue *e = &s->q;
        e->id = q;
        e->dev = d;
        e->queue_id = atomic_fetch_add(&g_next_queue_id, 1);
        e->app_props = app_props;
        e->forced = forced;
        e->n_app_array = 0;
        if (app_array) {
            uint32_t n = 0;
            while (n + 1 < 16 && app_array[n]) n += 2;
            if (!app_array[n]) { /* fits: keep it with its terminating 0 */
                memcpy(e->app_array, app_array, (n + 1) * sizeof *app_array);
                e->n_app_array = n + 1;
            }
        }
        table_publish(s, q);
    }
    pthread_mutex_unlock(&g_lock);
}

static int g_force_failed_logged;
static void force_failed(void)
{
    if (!g_force_failed_logged) {
        g_force_failed_logged = 1;
        op_warn("opencl: the driver refused profiling on a command queue; its commands are not timed");
    }
}

cl_command_queue ocl_impl_clCreateCommandQueue(ocl_frame *f, cl_context context, cl_device_id device,
                                               cl_command_queue_properties properties, cl_int *errcode_ret)
{
    (void)f;
    int force = want_profiling() && !(properties & CL_QUEUE_PROFILING_ENABLE);
    cl_command_queue q =
        ocl_next.clCreateCommandQueue(context, device, properties | (force ? CL_QUEUE_PROFILING_ENABLE : 0), errcode_ret);
    if (!q && force) {
        force_failed();
        force = 0;
        q = ocl_next.clCreateCommandQueue(context, device, properties, errcode_ret);
    }
    if (q) queue_add(q, device, properties, force, NULL);
    return q;
}

cl_command_queue ocl_impl_clCreateCommandQueueWithProperties(ocl_frame *f, cl_context context, cl_device_id device,
                                                             const cl_queue_properties *properties, cl_int *errcode_ret)
{
    (void)f;
    cl_command_queue_properties app = 0;
    uint32_t n = 0, at = UINT32_MAX;
    for (; properties && properties[n] && n < 62; n += 2)
        if (properties[n] == CL_QUEUE_PROPERTIES) app = (cl_command_queue_properties)properties[n + 1], at = n + 1;
    int force = want_profiling() && !(app & CL_QUEUE_PROFILING_ENABLE) && (!properties || !properties[n]);
    cl_queue_properties mine[64];
    const cl_queue_properties *use = properties;
    if (force) {
        if (n) memcpy(mine, properties, n * sizeof *mine);
        if (at != UINT32_MAX) {
            mine[at] |= CL_QUEUE_PROFILING_ENABLE;
        } else {
            mine[n++] = CL_QUEUE_PROPERTIES;
            mine[n++] = CL_QUEUE_PROFILING_ENABLE;
        }
        mine[n] = 0;
        use = mine;
    }
    cl_command_queue q = ocl_next.clCreateCommandQueueWithProperties(context, device, use, errcode_ret);
    if (!q && force) {
        force_failed();
        force = 0;
        q = ocl_next.clCreateCommandQueueWithProperties(context, device, properties, errcode_ret);
    }
    if (q) queue_add(q, device, app, force, properties);
    return q;
}

cl_int ocl_impl_clReleaseCommandQueue(ocl_frame *f, cl_command_queue command_queue)
{
    (void)f;
    cl_uint refs = 0;
    int last = ocl_queue_get(command_queue) &&
               ocl_next.clGetCommandQueueInfo(command_queue, CL_QUEUE_REFERENCE_COUNT, sizeof refs, &refs, NULL) ==
                   CL_SUCCESS &&
               refs == 1;
    cl_int r = ocl_next.clReleaseCommandQueue(command_queue);
    if (r == CL_SUCCESS && last) table_remove(&g_queues, command_queue);
    return r;
}

static cl_int put_info(const void *src, size_t n, size_t size, void *value, size_t *size_ret)
{
    if (value) {
        if (size < n) return CL_INVALID_VALUE;
        memcpy(value, src, n);
    }
    if (size_ret) *size_ret = n;
    return CL_SUCCESS;
}

/* Invariant (4): a queue the backend turned profiling on for reports what the program asked. */
cl_int ocl_impl_clGetCommandQueueInfo(ocl_frame *f, cl_command_queue command_queue, cl_command_queue_info param_name,
                                      size_t param_value_size, void *param_value, size_t *param_value_size_ret)
{
    (void)f;
    ocl_queue *q = ocl_queue_get(command_queue);
    if (q && q->forced && param_name == CL_QUEUE_PROPERTIES)
        return put_info(&q->app_props, sizeof q->app_props, param_value_size, param_value, param_value_size_ret);
    if (q && q->forced && param_name == CL_QUEUE_PROPERTIES_ARRAY) {
        size_t n = 0; /* a driver that does not know the query (before OpenCL 3.0) still refuses it */
        cl_int r = ocl_next.clGetCommandQueueInfo(command_queue, param_name, 0, NULL, &n);
        if (r != CL_SUCCESS) return r;
        return put_info(q->app_array, q->n_app_array * sizeof(cl_queue_properties), param_value_size, param_value,
                        param_value_size_ret);
    }
    return ocl_next.clGetCommandQueueInfo(command_queue, param_name, param_value_size, param_value, param_value_size_ret);
}

cl_int ocl_impl_clSetCommandQueueProperty(ocl_frame *f, cl_command_queue command_queue,
                                          cl_command_queue_properties properties, cl_bool enable,
                                          cl_command_queue_properties *old_properties)
{
    (void)f;
    ocl_queue *q = ocl_queue_get(command_queue);
    if (!q || !q->forced)
        return ocl_next.clSetCommandQueueProperty(command_queue, properties, enable, old_properties);
    /* profiling stays on underneath; the program's view changes as it asked */
    cl_command_queue_properties old = q->app_props, pass = properties & ~(cl_command_queue_properties)CL_QUEUE_PROFILING_ENABLE;
    cl_int r = pass ? ocl_next.clSetCommandQueueProperty(command_queue, pass, enable, NULL) : CL_SUCCESS;
    if (r != CL_SUCCESS) return r;
    q->app_props = enable ? (old | properties) : (old & ~properties);
    if (old_properties) *old_properties = old;
    return CL_SUCCESS;
}

/* Invariant (4): on a queue that did not ask for profiling, profiling stays unavailable. */
cl_int ocl_impl_clGetEventProfilingInfo(ocl_frame *f, cl_event event, cl_profiling_info param_name,
                                        size_t param_value_size, void *param_value, size_t *param_value_size_ret)
{
    (void)f;
    cl_command_queue cq = NULL;
    if (event && ocl_next.clGetEventInfo(event, CL_EVENT_COMMAND_QUEUE, sizeof cq, &cq, NULL) == CL_SUCCESS && cq) {
        ocl_queue *q = ocl_queue_get(cq);
        if (q && q->forced && !(q->app_props & CL_QUEUE_PROFILING_ENABLE)) return CL_PROFILING_INFO_NOT_AVAILABLE;
    }
    return ocl_next.clGetEventProfilingInfo(event, param_name, param_value_size, param_value, param_value_size_ret);
}

cl_kernel ocl_impl_clCreateKernel(ocl_frame *f, cl_program program, const char *kernel_name, cl_int *errcode_ret)
{
    (void)f;
    cl_kernel k = ocl_next.clCreateKernel(program, kernel_name, errcode_ret);
    if (k && atomic_load_explicit(&ocl_on, memory_order_relaxed)) ocl_kernel_remember(k, kernel_name);
    return k;
}

cl_int ocl_impl_clReleaseKernel(ocl_frame *f, cl_kernel kernel)
{
    (void)f;
    cl_uint refs = 0;
    int last = table_find(&g_kernels, kernel) &&
               ocl_next.clGetKernelInfo(kernel, CL_KERNEL_REFERENCE_COUNT, sizeof refs, &refs, NULL) == CL_SUCCESS &&
               refs == 1;
    cl_int r = ocl_next.clReleaseKernel(kernel);
    if (r == CL_SUCCESS && last) ocl_kernel_forget(kernel);
    return r;
}

void ocl_queues_at_fork_child(void)
{
    /* the parent's handles mean nothing here */
    memset(g_queue_slots, 0, sizeof g_queue_slots);
    memset(g_kernel_slots, 0, sizeof g_kernel_slots);
    memset(g_context_slots, 0, sizeof g_context_slots);
    memset(g_map_slots, 0, sizeof g_map_slots);
    pthread_mutex_init(&g_lock, NULL);
}
