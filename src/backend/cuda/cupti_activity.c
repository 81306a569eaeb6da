/* cupti_activity.c — CUPTI activity records (kernels, copies, sets, allocations,
 * synchronizations, functions) turned into omniprof GPU records, and the correlation map that
 * gives each of them the ids of the API call that launched it.
 *
 * Buffers. CUPTI asks for host buffers (request callback) and hands them back full (complete
 * callback, on a CUPTI worker thread or inside cuptiActivityFlushAll on the caller's thread).
 * Buffers are OMNIPROF_CUDA_BUFFER_SIZE bytes; at most OMNIPROF_CUDA_MAX_BUFFERS exist at once
 * (bounded memory): past that the request is declined, CUPTI drops records and counts them,
 * and we report the count (once per completed buffer with drops). Up to 4 returned buffers are
 * kept for reuse.
 *
 * Correlation map. CUPTI gives every async record the 32-bit correlation id of the API call
 * that produced it. At the call's ENTER the subscriber inserts {our internal id, launching
 * thread, the thread's external correlation value} under that id and retains the internal id;
 * the record's delivery looks it up and releases. Invariants:
 *  (1) An entry of a plain kernel launch (class LAUNCH) is removed by its one kernel record.
 *  (2) Entries of every other class also go into a FIFO ring of OP_CUDA_RING entries; when the
 *      ring wraps, the oldest is removed if still present. Graph launches (many records share
 *      one id) are removed only that way, or at finalize; copies/sets/allocs/syncs are removed
 *      by their first record or by the ring (some calls produce no record: cudaFree(NULL),
 *      a failed call, a sync record CUPTI 13.0 skips).
 *  (3) Every insert is matched by exactly one op_sdk_correlation_release (removal by record,
 *      by the ring, by a failed call, or at finalize) so that retirement records come out.
 *  (4) The table never exceeds OP_CUDA_MAP_MAX entries; past that, inserts are refused and
 *      counted, and those records carry internal id 0.
 *  (5) Correlation id 0 (records without a launching call: module static memory, ...) never
 *      matches: 0 also marks an empty slot.
 * Delivery resolves the records of a buffer in batches of RECORD_BATCH under one lock
 * acquisition, then emits them outside the lock, so that launching threads, which insert under
 * the same lock, rarely find it taken during a flush.
 * All map state is under the map spin lock, which is never held across an op_sdk_* call. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cuda/cuda_internal.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"

uint8_t op_cuda_activity_classes;

/* ------------------------------------------------------------------------------------------ */
/* Correlation map (open addressing, linear probing, backward-shift deletion).                 */

#define OP_CUDA_MAP_MIN (1u << 14)
#define OP_CUDA_MAP_MAX (1u << 21) /* slots; 32 B each: 64 MiB worst case */
#define OP_CUDA_RING (1u << 16)

typedef struct corr_entry {
    uint32_t key; /* CUPTI correlation id, 0 = empty */
    uint8_t cls;
    uint8_t has_ext;
    uint16_t ext_ctx;
    uint64_t internal;
    uint64_t tid;
    uint64_t ext_value;
} corr_entry;

/* A spin lock: sections are a few dozen instructions, taken by launching threads and by the
 * CUPTI delivery thread at the same time during flushes; a sleeping mutex made launches pay
 * futex calls under that contention. */
static pthread_spinlock_t g_map_lock_s;
__attribute__((constructor)) static void map_lock_init(void) { pthread_spin_init(&g_map_lock_s, PTHREAD_PROCESS_PRIVATE); }
#define MAP_LOCK() pthread_spin_lock(&g_map_lock_s)
#define MAP_UNLOCK() pthread_spin_unlock(&g_map_lock_s)
static corr_entry *g_map;
static uint32_t g_map_cap, g_map_count;
static uint32_t *g_ring;
static uint32_t g_ring_pos;
static uint64_t g_map_refused;

static inline uint32_t slot_of(uint32_t key, uint32_t cap) { return (key * 2654435761u) & (cap - 1); }

static corr_entry *map_find(uint32_t key)
{
    /* key 0 marks an empty slot: records without a launching call (module static memory, ...)
     * carry correlation id 0 and must find nothing */
    if (!g_map || key == 0) return NULL;
    for (uint32_t i = slot_of(key, g_map_cap);; i = (i + 1) & (g_map_cap - 1)) {
        if (g_map[i].key == key) return &g_map[i];
        if (g_map[i].key == 0) return NULL;
    }
}

static void map_remove_at(corr_entry *e)
{
    uint32_t i = (uint32_t)(e - g_map), mask = g_map_cap - 1;
    g_map[i].key = 0;
    g_map_count--;
    for (uint32_t j = (i + 1) & mask; g_map[j].key; j = (j + 1) & mask) {
        uint32_t home = slot_of(g_map[j].key, g_map_cap);
        /* move j back to i if its home is not in (i, j] (cyclically) */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            g_map[i] = g_map[j];
            g_map[j].key = 0;
            i = j;
        }
    }
}

static int map_grow(void)
{
    uint32_t ncap = g_map_cap ? g_map_cap * 2 : OP_CUDA_MAP_MIN;
    if (ncap > OP_CUDA_MAP_MAX) return -1;
    corr_entry *n = op_calloc(ncap, sizeof *n);
    if (!n) return -1;
    for (uint32_t i = 0; i < g_map_cap; i++)
        if (g_map[i].key) {
            uint32_t j = slot_of(g_map[i].key, ncap);
            while (n[j].key) j = (j + 1) & (ncap - 1);
            n[j] = g_map[i];
        }
    op_free(g_map);
    g_map = n;
    g_map_cap = ncap;
    return 0;
}

void op_cuda_corr_insert(uint32_t cupti_id, uint8_t cls, const op_cuda_launch_info *info)
{
    if (!cupti_id) return;
    uint64_t evicted = 0, refused = 0;
    op_sdk_correlation_retain(info->internal);
    MAP_LOCK();
    if ((g_map_count + 1) * 2 > g_map_cap && map_grow() != 0 && g_map_count + 1 >= g_map_cap) {
        g_map_refused++;
        refused = info->internal;
    } else {
        corr_entry *e = map_find(cupti_id);
        if (!e) {
            uint32_t i = slot_of(cupti_id, g_map_cap);
            while (g_map[i].key) i = (i + 1) & (g_map_cap - 1);
            e = &g_map[i];
            g_map_count++;
        } else {
            evicted = e->internal; /* id reuse after wrap-around: the old entry is stale */
        }
        e->key = cupti_id;
        e->cls = cls;
        e->internal = info->internal;
        e->tid = info->tid;
        e->has_ext = info->ext.count > 0;
        e->ext_ctx = (uint16_t)(info->ext.count ? info->ext.context_index[0] : 0);
        e->ext_value = info->ext.count ? info->ext.value[0].value : 0;
        if (!(cls & OP_CUDA_CLS_LAUNCH) && g_ring) {
            uint32_t old = g_ring[g_ring_pos];
            g_ring[g_ring_pos] = cupti_id;
            g_ring_pos = (g_ring_pos + 1) & (OP_CUDA_RING - 1);
            corr_entry *o = old && old != cupti_id ? map_find(old) : NULL;
            if (o && !evicted) {
                evicted = o->internal;
                map_remove_at(o);
            }
        }
    }
    MAP_UNLOCK();
    if (evicted) op_sdk_correlation_release(evicted);
    if (refused) op_sdk_correlation_release(refused);
}

void op_cuda_corr_forget(uint32_t cupti_id)
{
    uint64_t rel = 0;
    MAP_LOCK();
    corr_entry *e = map_find(cupti_id);
    if (e) {
        rel = e->internal;
        map_remove_at(e);
    }
    MAP_UNLOCK();
    if (rel) op_sdk_correlation_release(rel);
}

/* A looked-up record: buf_complete resolves records in batches under one lock acquisition (so
 * that launching threads rarely find the lock taken), then the handlers consume the results in
 * order (t_batch_cur). */
typedef struct corr_result {
    uint32_t id;
    uint8_t cls, found, ready;
    op_cuda_launch_info li;
    uint64_t release;
} corr_result;

static __thread corr_result *t_batch_cur;

/* Caller holds the map lock. */
static void corr_lookup_locked(uint32_t cupti_id, corr_result *r)
{
    memset(r, 0, sizeof *r);
    r->id = cupti_id;
    r->ready = 1;
    corr_entry *e = map_find(cupti_id);
    if (!e) return;
    r->found = 1;
    r->li.internal = e->internal;
    r->li.tid = e->tid;
    r->cls = e->cls;
    if (e->has_ext) {
        r->li.ext.count = 1;
        r->li.ext.context_index[0] = e->ext_ctx;
        r->li.ext.value[0].value = e->ext_value;
    }
    if (!(e->cls & OP_CUDA_CLS_GRAPH)) {
        r->release = e->internal;
        map_remove_at(e);
    }
}

/* Look up a record's launching call. Returns 1 if found; *release is the id to release after
 * the record was emitted (0 when the entry stays, i.e. graph launches). */
static int corr_lookup_cls(uint32_t cupti_id, op_cuda_launch_info *out, uint64_t *release, uint8_t *cls)
{
    corr_result local, *r = t_batch_cur;
    if (!r || !r->ready || r->id != cupti_id) {
        r = &local;
        MAP_LOCK();
        corr_lookup_locked(cupti_id, r);
        MAP_UNLOCK();
    }
    r->ready = 0; /* consumed */
    *out = r->li;
    *release = r->release;
    *cls = r->cls;
    return r->found;
}

static int corr_lookup(uint32_t cupti_id, op_cuda_launch_info *out, uint64_t *release)
{
    uint8_t cls;
    return corr_lookup_cls(cupti_id, out, release, &cls);
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers.                                                                                    */

static size_t g_buf_size;
static uint32_t g_buf_max;
static uint32_t g_buf_live; /* under g_buf_lock */
static void *g_free_bufs[4];
static int g_n_free;
static pthread_mutex_t g_buf_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_dropped_total;
static int g_decline_warned;

static void CUPTIAPI buf_request(uint8_t **buf, size_t *size, size_t *max_records)
{
    void *b = NULL;
    pthread_mutex_lock(&g_buf_lock);
    if (g_n_free > 0) {
        b = g_free_bufs[--g_n_free];
    } else if (g_buf_live < g_buf_max) {
        b = aligned_alloc(8, g_buf_size);
        if (b) g_buf_live++;
    }
    int warn = !b && !g_decline_warned;
    if (warn) g_decline_warned = 1;
    pthread_mutex_unlock(&g_buf_lock);
    if (warn)
        op_warn("cuda: all %u activity buffers (%zu bytes each) are in use; CUPTI drops records until one is "
                "returned (raise OMNIPROF_CUDA_MAX_BUFFERS or lower OMNIPROF_CUDA_FLUSH_INTERVAL_MS)",
                g_buf_max, g_buf_size);
    *buf = b;
    *size = b ? g_buf_size : 0;
    *max_records = 0;
}

static void buf_release(uint8_t *b)
{
    pthread_mutex_lock(&g_buf_lock);
    if (g_n_free < 4) {
        g_free_bufs[g_n_free++] = b;
        b = NULL;
    } else {
        g_buf_live--;
    }
    pthread_mutex_unlock(&g_buf_lock);
    free(b);
}

/* ------------------------------------------------------------------------------------------ */
/* Records.                                                                                    */

static uint64_t g_dispatch_seq;

static uint32_t copy_op(uint8_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return OMNIPROF_MEMORY_COPY_HOST_TO_DEVICE;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return OMNIPROF_MEMORY_COPY_DEVICE_TO_HOST;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return OMNIPROF_MEMORY_COPY_DEVICE_TO_DEVICE;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return OMNIPROF_MEMORY_COPY_HOST_TO_HOST;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return OMNIPROF_MEMORY_COPY_PEER_TO_PEER;
    default: return OMNIPROF_MEMORY_COPY_NONE;
    }
}

static uint32_t mem_kind(uint32_t k) { return k < OMNIPROF_MEMORY_KIND_LAST ? k : OMNIPROF_MEMORY_KIND_UNKNOWN; }

static const op_sdk_external k_no_ext = {0, {0}, {{0}}};

static void on_kernel(const CUpti_ActivityKernel10 *k)
{
    if (!op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, OMNIPROF_KERNEL_DISPATCH_COMPLETE)) {
        op_cuda_launch_info li;
        uint64_t rel;
        corr_lookup(k->correlationId, &li, &rel);
        if (rel) op_sdk_correlation_release(rel);
        return;
    }
    omniprof_buffer_tracing_kernel_dispatch_record_t r;
    memset(&r, 0, sizeof r);
    op_cuda_launch_info li;
    uint64_t rel;
    uint8_t cls;
    int found = corr_lookup_cls(k->correlationId, &li, &rel, &cls);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH;
    r.operation = OMNIPROF_KERNEL_DISPATCH_COMPLETE;
    r.correlation_id.internal = li.internal;
    r.thread_id = li.tid;
    r.start_timestamp = k->start;
    r.end_timestamp = k->end;
    r.agent_id = op_cuda_agent_of_device(k->deviceId);
    r.device_id = k->deviceId;
    r.context_id = k->contextId;
    r.stream_id.handle = k->streamId;
    op_cuda_kernel_names(k->name, &r.kernel_name, &r.kernel_name_demangled, &r.kernel_id);
    /* A plain launch's dispatch id is its launching call's internal correlation id, known at
     * launch (op_cuda_launch_dispatch_id: the counters collector joins on it); kernels of graph
     * launches, or without a launching call, get a sequence number with the top bit set. */
    r.dispatch_id = (found && (cls & OP_CUDA_CLS_LAUNCH))
                        ? li.internal
                        : (__atomic_add_fetch(&g_dispatch_seq, 1, __ATOMIC_RELAXED) | (1ull << 63));
    r.grid_size = (omniprof_dim3_t){(uint32_t)k->gridX, (uint32_t)k->gridY, (uint32_t)k->gridZ};
    r.block_size = (omniprof_dim3_t){(uint32_t)k->blockX, (uint32_t)k->blockY, (uint32_t)k->blockZ};
    r.static_shared_memory = (uint32_t)k->staticSharedMemory;
    r.dynamic_shared_memory = (uint32_t)k->dynamicSharedMemory;
    r.registers_per_thread = k->registersPerThread;
    r.local_memory_per_thread = k->localMemoryPerThread;
    r.graph_id = k->graphId;
    r.graph_node_id = k->graphNodeId;
    r.cluster_size_x = k->clusterX, r.cluster_size_y = k->clusterY, r.cluster_size_z = k->clusterZ;
    op_sdk_emit(r.kind, r.operation, &r, found ? &li.ext : &k_no_ext);
    if (rel) op_sdk_correlation_release(rel);
}

static void emit_copy(uint32_t corr_id, uint8_t copy_kind, uint8_t src, uint8_t dst, uint64_t bytes, uint64_t start,
                      uint64_t end, uint32_t device, uint32_t src_dev, uint32_t dst_dev, uint32_t stream,
                      uint32_t is_async, uint64_t graph_id, uint64_t graph_node)
{
    op_cuda_launch_info li;
    uint64_t rel;
    int found = corr_lookup(corr_id, &li, &rel);
    omniprof_buffer_tracing_memory_copy_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_MEMORY_COPY;
    r.operation = (int32_t)copy_op(copy_kind);
    r.correlation_id.internal = li.internal;
    r.thread_id = li.tid;
    r.start_timestamp = start;
    r.end_timestamp = end;
    uint32_t op = (uint32_t)r.operation;
    omniprof_agent_id_t none = {0};
    r.src_agent_id = (op == OMNIPROF_MEMORY_COPY_HOST_TO_DEVICE || op == OMNIPROF_MEMORY_COPY_HOST_TO_HOST)
                         ? none
                         : op_cuda_agent_of_device(src_dev);
    r.dst_agent_id = (op == OMNIPROF_MEMORY_COPY_DEVICE_TO_HOST || op == OMNIPROF_MEMORY_COPY_HOST_TO_HOST)
                         ? none
                         : op_cuda_agent_of_device(dst_dev);
    r.bytes = bytes;
    r.src_memory_kind = mem_kind(src);
    r.dst_memory_kind = mem_kind(dst);
    r.stream_id.handle = stream;
    r.is_async = is_async;
    r.device_id = device;
    r.graph_id = graph_id;
    r.graph_node_id = graph_node;
    op_sdk_emit(r.kind, r.operation, &r, found ? &li.ext : &k_no_ext);
    if (rel) op_sdk_correlation_release(rel);
}

static void on_memset(const CUpti_ActivityMemset4 *m)
{
    op_cuda_launch_info li;
    uint64_t rel;
    int found = corr_lookup(m->correlationId, &li, &rel);
    omniprof_buffer_tracing_memory_set_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_MEMORY_SET;
    r.operation = 1;
    r.correlation_id.internal = li.internal;
    r.thread_id = li.tid;
    r.start_timestamp = m->start;
    r.end_timestamp = m->end;
    r.agent_id = op_cuda_agent_of_device(m->deviceId);
    r.bytes = m->bytes;
    r.value = m->value;
    r.memory_kind = mem_kind(m->memoryKind);
    r.stream_id.handle = m->streamId;
    r.is_async = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? 1u : 0u;
    r.device_id = m->deviceId;
    op_sdk_emit(r.kind, r.operation, &r, found ? &li.ext : &k_no_ext);
    if (rel) op_sdk_correlation_release(rel);
}

static void on_memory(const CUpti_ActivityMemory4 *m)
{
    op_cuda_launch_info li;
    uint64_t rel;
    int found = corr_lookup(m->correlationId, &li, &rel);
    omniprof_buffer_tracing_memory_allocation_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION;
    r.operation = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
                      ? OMNIPROF_MEMORY_ALLOCATION_FREE
                      : OMNIPROF_MEMORY_ALLOCATION_ALLOCATE;
    /* CUPTI gives the operation's own timestamp only; the record is an instant. */
    r.correlation_id.internal = li.internal;
    r.thread_id = li.tid;
    r.start_timestamp = m->timestamp;
    r.end_timestamp = m->timestamp;
    r.agent_id = op_cuda_agent_of_device(m->deviceId);
    r.address = m->address;
    r.allocation_size = m->bytes;
    r.memory_kind = mem_kind(m->memoryKind);
    r.device_id = m->deviceId;
    r.stream_id.handle = m->streamId;
    op_sdk_emit(r.kind, r.operation, &r, found ? &li.ext : &k_no_ext);
    if (rel) op_sdk_correlation_release(rel);
}

static void on_sync(const CUpti_ActivitySynchronization2 *s)
{
    op_cuda_launch_info li;
    uint64_t rel;
    int found = corr_lookup(s->correlationId, &li, &rel);
    omniprof_buffer_tracing_synchronization_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_SYNCHRONIZATION;
    switch (s->type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: r.operation = OMNIPROF_SYNCHRONIZATION_EVENT; break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
        r.operation = OMNIPROF_SYNCHRONIZATION_STREAM_WAIT_EVENT;
        break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: r.operation = OMNIPROF_SYNCHRONIZATION_STREAM; break;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: r.operation = OMNIPROF_SYNCHRONIZATION_CONTEXT; break;
    default: r.operation = OMNIPROF_SYNCHRONIZATION_DEVICE; break;
    }
    r.correlation_id.internal = li.internal;
    r.thread_id = li.tid;
    r.start_timestamp = s->start;
    r.end_timestamp = s->end;
    r.stream_id.handle = s->streamId;
    r.event_id = s->cudaEventId;
    r.context_id = s->contextId;
    op_sdk_emit(r.kind, r.operation, &r, found ? &li.ext : &k_no_ext);
    if (rel) op_sdk_correlation_release(rel);
}

static void on_function(const CUpti_ActivityFunction *f)
{
    omniprof_buffer_tracing_kernel_symbol_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL;
    r.operation = OMNIPROF_CODE_OBJECT_LOAD;
    op_cuda_kernel_names(f->name, &r.kernel_name, &r.kernel_name_demangled, &r.kernel_id);
    r.code_object_id = f->moduleId;
    op_sdk_emit(r.kind, r.operation, &r, &k_no_ext);
}

static uint32_t record_correlation(const CUpti_Activity *rec)
{
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: return ((const CUpti_ActivityKernel10 *)rec)->correlationId;
    case CUPTI_ACTIVITY_KIND_MEMCPY: return ((const CUpti_ActivityMemcpy6 *)rec)->correlationId;
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return ((const CUpti_ActivityMemcpyPtoP4 *)rec)->correlationId;
    case CUPTI_ACTIVITY_KIND_MEMSET: return ((const CUpti_ActivityMemset4 *)rec)->correlationId;
    case CUPTI_ACTIVITY_KIND_MEMORY2: return ((const CUpti_ActivityMemory4 *)rec)->correlationId;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return ((const CUpti_ActivitySynchronization2 *)rec)->correlationId;
    default: return 0;
    }
}

static void handle_record(const CUpti_Activity *rec)
{
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: on_kernel((const CUpti_ActivityKernel10 *)rec); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
        emit_copy(m->correlationId, m->copyKind, m->srcKind, m->dstKind, m->bytes, m->start, m->end, m->deviceId,
                  m->deviceId, m->deviceId, m->streamId, (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1u : 0u,
                  m->graphId, m->graphNodeId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)rec;
        emit_copy(m->correlationId, m->copyKind, m->srcKind, m->dstKind, m->bytes, m->start, m->end, m->deviceId,
                  m->srcDeviceId, m->dstDeviceId, m->streamId, (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1u : 0u,
                  m->graphId, m->graphNodeId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: on_memset((const CUpti_ActivityMemset4 *)rec); break;
    case CUPTI_ACTIVITY_KIND_MEMORY2: on_memory((const CUpti_ActivityMemory4 *)rec); break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: on_sync((const CUpti_ActivitySynchronization2 *)rec); break;
    case CUPTI_ACTIVITY_KIND_FUNCTION: on_function((const CUpti_ActivityFunction *)rec); break;
    default: break;
    }
}

#define RECORD_BATCH 256

static void CUPTIAPI buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    (void)size;
    if (!buf) return;
    CUpti_Activity *rec = NULL;
    CUpti_Activity *batch[RECORD_BATCH];
    corr_result res[RECORD_BATCH];
    int more = valid > 0;
    while (more) {
        /* up to RECORD_BATCH records, their launching calls looked up under one lock */
        int n = 0;
        while (n < RECORD_BATCH && (more = cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS))
            batch[n++] = rec;
        MAP_LOCK();
        for (int i = 0; i < n; i++) corr_lookup_locked(record_correlation(batch[i]), &res[i]);
        MAP_UNLOCK();
        for (int i = 0; i < n; i++) {
            t_batch_cur = &res[i];
            handle_record(batch[i]);
            if (res[i].ready && res[i].release) op_sdk_correlation_release(res[i].release); /* not consumed */
        }
        t_batch_cur = NULL;
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
        uint64_t total = __atomic_add_fetch(&g_dropped_total, dropped, __ATOMIC_RELAXED);
        op_warn("cuda: CUPTI dropped %zu activity records (%llu in total)", dropped, (unsigned long long)total);
    }
    buf_release(buf);
}

/* ------------------------------------------------------------------------------------------ */
/* Start, flush, finalize.                                                                     */

static volatile int g_flush_stop;
static uint64_t g_flush_interval_ms;

static void *flush_thread(void *arg)
{
    (void)arg;
    while (!g_flush_stop && !op_sdk_is_finalizing()) {
        struct timespec ts = {(time_t)(g_flush_interval_ms / 1000), (long)(g_flush_interval_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
        if (g_flush_stop || op_sdk_is_finalizing() || op_cuda_off) break;
        cuptiActivityFlushAll(0);
    }
    return NULL;
}

static int enable_kind(CUpti_ActivityKind k, const char *what)
{
    CUptiResult r = cuptiActivityEnable(k);
    if (r != CUPTI_SUCCESS) {
        const char *s = "?";
        cuptiGetResultString(r, &s);
        op_warn("cuda: cannot collect %s activity (cuptiActivityEnable: %s)", what, s);
        return -1;
    }
    return 0;
}

int op_cuda_activity_start(void)
{
    g_buf_size = (size_t)op_setting_uint(OP_SET_CUDA_BUFFER_SIZE);
    if (g_buf_size < (64u << 10)) g_buf_size = 64u << 10;
    g_buf_size = (g_buf_size + 7) & ~(size_t)7;
    g_buf_max = (uint32_t)op_setting_uint(OP_SET_CUDA_MAX_BUFFERS);
    if (g_buf_max < 2) g_buf_max = 2;
    g_flush_interval_ms = op_setting_uint(OP_SET_CUDA_FLUSH_INTERVAL_MS);

    int want_kernel = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH);
    int want_copy = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_MEMORY_COPY);
    int want_set = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_MEMORY_SET);
    int want_alloc = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION);
    int want_sync = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_SYNCHRONIZATION);
    int want_sym = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL);
    if (!(want_kernel | want_copy | want_set | want_alloc | want_sync | want_sym)) return 0;

    g_ring = op_calloc(OP_CUDA_RING, sizeof *g_ring);
    MAP_LOCK();
    if (!g_map) map_grow();
    MAP_UNLOCK();

    uint64_t dev_buf = op_setting_uint(OP_SET_CUDA_DEVICE_BUFFER_SIZE);
    if (dev_buf) {
        size_t v = (size_t)dev_buf, vs = sizeof v;
        cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &vs, &v);
    }
    CUptiResult r = cuptiActivityRegisterCallbacks(buf_request, buf_complete);
    if (r != CUPTI_SUCCESS) {
        const char *s = "?";
        cuptiGetResultString(r, &s);
        op_warn("cuda: GPU activity off: cuptiActivityRegisterCallbacks failed: %s", s);
        return -1;
    }
    uint8_t cls = 0;
    if (want_kernel && enable_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel") == 0)
        cls |= OP_CUDA_CLS_LAUNCH | OP_CUDA_CLS_GRAPH;
    if (want_copy && enable_kind(CUPTI_ACTIVITY_KIND_MEMCPY, "memory copy") == 0) {
        enable_kind(CUPTI_ACTIVITY_KIND_MEMCPY2, "peer-to-peer copy");
        cls |= OP_CUDA_CLS_MEMCPY | OP_CUDA_CLS_GRAPH;
    }
    if (want_set && enable_kind(CUPTI_ACTIVITY_KIND_MEMSET, "memory set") == 0) cls |= OP_CUDA_CLS_MEMSET | OP_CUDA_CLS_GRAPH;
    if (want_alloc && enable_kind(CUPTI_ACTIVITY_KIND_MEMORY2, "memory allocation") == 0) cls |= OP_CUDA_CLS_ALLOC;
    if (want_sync && enable_kind(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization") == 0) cls |= OP_CUDA_CLS_SYNC;
    if (want_sym) enable_kind(CUPTI_ACTIVITY_KIND_FUNCTION, "function");
    op_cuda_activity_classes = cls;

    if (g_flush_interval_ms > 0) {
        pthread_t t;
        if (op_sdk_create_thread(&t, flush_thread, NULL, OMNIPROF_LIBRARY_CUDA, "omniprof-cuflush") != 0) /* detached */
            op_warn("cuda: periodic flush thread not started; GPU records arrive when CUPTI buffers fill and at exit");
    }
    return 0;
}

void op_cuda_activity_flush(int forced)
{
    if (!g_map && !op_cuda_activity_classes) return;
    cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
}

void op_cuda_activity_finalize(void)
{
    g_flush_stop = 1;
    /* Release what is left (graph launches, calls whose records never came). */
    uint64_t *ids = NULL;
    uint32_t n = 0;
    MAP_LOCK();
    if (g_map && g_map_count) ids = op_malloc((size_t)g_map_count * sizeof *ids);
    for (uint32_t i = 0; ids && i < g_map_cap; i++)
        if (g_map[i].key) {
            ids[n++] = g_map[i].internal;
            g_map[i].key = 0;
        }
    if (ids) g_map_count = 0;
    MAP_UNLOCK();
    for (uint32_t i = 0; i < n; i++) op_sdk_correlation_release(ids[i]);
    op_free(ids);
    if (g_map_refused) op_warn("cuda: %llu launches were not correlated (correlation map full)", (unsigned long long)g_map_refused);
}
