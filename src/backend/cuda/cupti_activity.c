/* cupti_activity.c — CUPTI activity records (kernels, copies, sets, allocations,
 * synchronizations, functions and, in activity mode, runtime/driver API calls) turned into
 * omniprof records, each GPU record with the ids of the API call that launched it (through the
 * correlation map, cupti_corr.c).
 *
 * Buffers. CUPTI asks for host buffers (request callback) and hands them back full (complete
 * callback, on a CUPTI worker thread or inside cuptiActivityFlushAll on the caller's thread).
 * Buffers are OMNIPROF_CUDA_BUFFER_SIZE bytes; at most OMNIPROF_CUDA_MAX_BUFFERS exist at once
 * (bounded memory): past that the request is declined, CUPTI drops records and counts them,
 * and we report the count (once per completed buffer with drops). Up to 4 returned buffers are
 * kept for reuse.
 *
 * Activity mode (op_cuda_activity_mode, the default; cupti_subscriber.c decides at start).
 * CUPTI writes an API activity record {cbid, start, end, threadId, correlationId, returnValue}
 * for each traced call and for each call of a class whose GPU records are collected, so the
 * launch path runs no code of ours. Delivery gives each API record an internal correlation id
 * and inserts it into the map; GPU records look it up. API records and GPU records come in
 * different buffers, in either order: a GPU record whose call is not in the map yet waits in a
 * pending list (copied, at most OP_CUDA_PENDING_MAX; past that the oldest go out without
 * their launching call, counted) and is retried after each buffer that brought API records;
 * a forced flush emits what still waits, unresolved. API records carry no decoded arguments in
 * this mode (OMNIPROF_CUDA_API_ARGS=true selects callback mode, which decodes them).
 * Invariants: (A1) a GPU record is emitted after the API record of its call whenever both are
 * delivered before the next forced flush; (A2) every pending record is emitted exactly once. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/number.h"
#include "backend/cuda/cuda_internal.h"
#include "common/affinity.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"

uint8_t op_cuda_activity_classes;
int op_cuda_activity_mode;
/* activity mode: GPU records wait for their API record (0: lite, CUDA_KERNEL_CORRELATION=false) */
static int g_join = 1;
/* The last OFF_SPANS spans of time collection was off, [start, end) (end 0: still off). A launch
 * API record of a call made in one has no kernel record to wait for (the GPU kinds were off), so
 * it does not enter the correlation map; once collection has been off at all, the launch entries
 * go through the map's ring (bounded), since a call at a switch or a kernel still running at a
 * pause may get no kernel record either. Written under the subscriber's start lock, read by the
 * delivery thread. */
#define OFF_SPANS 8
static uint64_t g_off_span[OFF_SPANS][2];
static uint32_t g_off_spans; /* spans begun so far */
int op_cuda_own_timestamps = 1;

static int in_off_span(uint64_t t)
{
    uint32_t n = __atomic_load_n(&g_off_spans, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n && i < OFF_SPANS; i++) {
        uint64_t *span = g_off_span[(n - 1 - i) % OFF_SPANS];
        uint64_t a = __atomic_load_n(&span[0], __ATOMIC_ACQUIRE), b = __atomic_load_n(&span[1], __ATOMIC_ACQUIRE);
        if (t >= a && (b == 0 || t < b)) return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers.                                                                                    */

static size_t g_buf_size;
static uint32_t g_buf_max;
static uint32_t g_buf_live; /* under g_buf_lock */
#define FREE_BUFS 8
static void *g_free_bufs[FREE_BUFS];
static int g_n_free;
static pthread_mutex_t g_buf_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_dropped_total;
static int g_decline_warned;

/* Buffers are handed to CUPTI zeroed (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER): new ones
 * from calloc, reused ones cleared whole on the delivery thread, so that CUPTI does not clear
 * 8 MiB on the application's thread when it asks for a buffer. */
static void CUPTIAPI buf_request(uint8_t **buf, size_t *size, size_t *max_records)
{
    void *b = NULL;
    pthread_mutex_lock(&g_buf_lock);
    if (g_n_free > 0) {
        b = g_free_bufs[--g_n_free];
    } else if (g_buf_live < g_buf_max) {
        b = calloc(1, g_buf_size); /* 16-byte aligned: CUPTI needs 8 */
        if (b) g_buf_live++;
    }
    int warn = !b && !g_decline_warned;
    if (warn) g_decline_warned = 1;
    pthread_mutex_unlock(&g_buf_lock);
    if (warn) {
        char each[OP_FMT_BYTES_LEN];
        op_warn("cuda: all %u activity buffers (%s each) are in use; CUPTI drops records "
                "until one is returned (raise OMNIPROF_CUDA_MAX_BUFFERS or lower OMNIPROF_CUDA_FLUSH_INTERVAL_MS)",
                g_buf_max, op_fmt_bytes(each, sizeof each, g_buf_size));
    }
    *buf = b;
    *size = b ? g_buf_size : 0;
    *max_records = 0;
}

static void buf_release(uint8_t *b)
{
    memset(b, 0, g_buf_size);
    pthread_mutex_lock(&g_buf_lock);
    if (g_n_free < FREE_BUFS) {
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
        op_cuda_corr_lookup(k->correlationId, &li, &rel, NULL);
        if (rel) op_sdk_correlation_release(rel);
        return;
    }
    omniprof_buffer_tracing_kernel_dispatch_record_t r;
    memset(&r, 0, sizeof r);
    op_cuda_launch_info li;
    uint64_t rel;
    uint8_t cls;
    int found = op_cuda_corr_lookup(k->correlationId, &li, &rel, &cls);
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
    int found = op_cuda_corr_lookup(corr_id, &li, &rel, NULL);
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
    int found = op_cuda_corr_lookup(m->correlationId, &li, &rel, NULL);
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
    int found = op_cuda_corr_lookup(m->correlationId, &li, &rel, NULL);
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
    int found = op_cuda_corr_lookup(s->correlationId, &li, &rel, NULL);
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
    if (s->cudaEventSyncId != CUPTI_SYNCHRONIZATION_INVALID_VALUE)
        r.event_sync_id = s->cudaEventSyncId;
    op_sdk_emit(r.kind, r.operation, &r, found ? &li.ext : &k_no_ext);
    if (rel) op_sdk_correlation_release(rel);
}

/* An event recorded on a stream (cudaEventRecord): the stream and the recording call, which
 * tie an event synchronize or a stream's wait for the event to the work before it. */
static void on_cuda_event(const CUpti_ActivityCudaEvent2 *e)
{
    op_cuda_launch_info li;
    uint64_t rel;
    int found = op_cuda_corr_lookup(e->correlationId, &li, &rel, NULL);
    omniprof_buffer_tracing_cuda_event_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_CUDA_EVENT;
    r.operation = OMNIPROF_CUDA_EVENT_RECORD;
    r.correlation_id.internal = li.internal;
    r.thread_id = li.tid;
    r.device_timestamp = e->deviceTimestamp;
    r.stream_id.handle = e->streamId;
    r.event_id = e->eventId;
    r.sync_id = e->cudaEventSyncId;
    r.device_id = e->deviceId;
    r.context_id = e->contextId;
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

/* Activity mode: one CUpti_ActivityAPI record → an API record (when its kind is traced) and,
 * for calls whose GPU records are collected, a map entry those records find. */
static int on_api(const CUpti_ActivityAPI *a)
{
    const int runtime = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
    const CUpti_CallbackDomain dom = runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    const uint32_t bkind = runtime ? OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API : OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API;
    const op_cuda_cbinfo *ci = op_cuda_cbinfo_get(dom, a->cbid);
    uint8_t cls = ci->cls & op_cuda_activity_classes;
    int emit = op_sdk_buffer_enabled(bkind, (int32_t)a->cbid);
    op_cuda_launch_info li;
    uint64_t release = 0;
    omniprof_correlation_id_t corr = {0, {0}, 0};
    int began = 0, inserted = 0;
    if (op_cuda_corr_api_pending(a->correlationId, a->returnValue != 0, &li, &release)) {
        corr.internal = li.internal; /* captured at launch (external ids, counters hook) */
    } else {
        const int windows = __atomic_load_n(&g_off_spans, __ATOMIC_ACQUIRE) != 0;
        int keep = cls && a->returnValue == 0;
        if (keep && windows && a->start && op_cuda_own_timestamps && in_off_span(a->start)) keep = 0;
        if (!emit && !keep) return 0;
        memset(&li, 0, sizeof li);
        op_sdk_correlation_begin(&corr);
        began = 1;
        li.internal = corr.internal;
        li.tid = a->threadId;
        if (keep) {
            /* A driver launch may be nested in a runtime launch whose id its kernel carries:
             * such entries leave through the ring (invariant 2 of cupti_corr.c). */
            op_cuda_corr_insert(a->correlationId, cls, &li, runtime && !windows ? 0 : OP_CUDA_CORR_RING);
            inserted = 1;
        }
    }
    if (emit) {
        omniprof_buffer_tracing_api_record_t r;
        memset(&r, 0, sizeof r);
        r.size = sizeof r;
        r.kind = bkind;
        r.operation = (int32_t)a->cbid;
        r.correlation_id = corr;
        r.correlation_id.ancestor = 0; /* not known from activity records */
        r.start_timestamp = a->start;
        r.end_timestamp = a->end;
        r.thread_id = a->threadId;
        r.return_value = (int32_t)a->returnValue;
        op_sdk_emit(bkind, r.operation, &r, li.ext.count ? &li.ext : &k_no_ext);
    }
    if (began) op_sdk_correlation_end(&corr);
    if (release) op_sdk_correlation_release(release);
    return inserted;
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
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
        return ((const CUpti_ActivityCudaEvent2 *)rec)->correlationId;
    default: return 0;
    }
}

static size_t record_size(const CUpti_Activity *rec)
{
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: return sizeof(CUpti_ActivityCudaEvent2);
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
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
        on_cuda_event((const CUpti_ActivityCudaEvent2 *)rec);
        break;
    case CUPTI_ACTIVITY_KIND_FUNCTION: on_function((const CUpti_ActivityFunction *)rec); break;
    case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER: op_cuda_um_record((const CUpti_ActivityUnifiedMemoryCounter3 *)rec); break;
    default: break;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Pending GPU records (activity mode): their API record has not been delivered yet.           */

#define OP_CUDA_PENDING_MAX (1u << 16)

static pthread_mutex_t g_pend_lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_Activity **g_pend;
static uint32_t g_pend_n, g_pend_cap;
static uint64_t g_pend_overflow, g_unresolved;

/* Emit a pending record (and free it) if its call is known now or `always` (then without its
 * launching call, counted). Returns 1 when emitted. */
static int emit_pending(CUpti_Activity *rec, int always)
{
    op_cuda_corr_result r;
    op_cuda_corr_resolve(&(uint32_t){record_correlation(rec)}, 1, &r);
    if (!r.found && !always) return 0;
    if (!r.found) __atomic_add_fetch(&g_unresolved, 1, __ATOMIC_RELAXED);
    op_cuda_corr_set_current(&r);
    handle_record(rec);
    op_cuda_corr_set_current(NULL);
    if (r.ready && r.release) op_sdk_correlation_release(r.release);
    free(rec);
    return 1;
}

/* Emit records without their launching call (oldest first; a last lookup first). */
static void emit_unresolved(CUpti_Activity **recs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) emit_pending(recs[i], 1);
}

/* Add a copied record to the pending list (the list owns it from here). */
static void pend_copy(CUpti_Activity *c)
{
    CUpti_Activity *out[256];
    uint32_t nout = 0;
    int added = 0;
    pthread_mutex_lock(&g_pend_lock);
    if (g_pend_n == g_pend_cap && g_pend_cap < OP_CUDA_PENDING_MAX) {
        uint32_t ncap = g_pend_cap ? g_pend_cap * 2 : 1024;
        CUpti_Activity **n = realloc(g_pend, ncap * sizeof *n);
        if (n) g_pend = n, g_pend_cap = ncap;
    }
    if (g_pend_n && g_pend_n == g_pend_cap) { /* full: the oldest go out now, unresolved */
        nout = g_pend_n < 256 ? g_pend_n : 256;
        memcpy(out, g_pend, nout * sizeof *out);
        memmove(g_pend, g_pend + nout, (g_pend_n - nout) * sizeof *g_pend);
        g_pend_n -= nout;
        g_pend_overflow += nout;
    }
    if (g_pend_n < g_pend_cap) {
        g_pend[g_pend_n++] = c;
        added = 1;
    }
    pthread_mutex_unlock(&g_pend_lock);
    emit_unresolved(out, nout);
    if (!added) emit_unresolved(&c, 1);
}

static void pend(const CUpti_Activity *rec)
{
    size_t sz = record_size(rec);
    CUpti_Activity *c = sz ? malloc(sz) : NULL;
    if (!c) {
        handle_record(rec);
        return;
    }
    memcpy(c, rec, sz);
    pend_copy(c);
}

/* Retry the pending records; with `all`, emit those still unresolved too. */
static void retry_pending(int all)
{
    pthread_mutex_lock(&g_pend_lock);
    CUpti_Activity **list = g_pend;
    uint32_t n = g_pend_n;
    g_pend = NULL, g_pend_n = 0, g_pend_cap = 0;
    pthread_mutex_unlock(&g_pend_lock);
    if (!n) {
        free(list);
        return;
    }
    uint32_t keep = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!emit_pending(list[i], all)) list[keep++] = list[i];
    for (uint32_t i = 0; i < keep; i++) pend_copy(list[i]);
    free(list);
}

#define RECORD_BATCH 256

/* Deliver n records of one buffer, in order; their launching calls looked up under one lock.
 * Returns 1 if API records added map entries (pending records may resolve now). */
static int deliver_batch(CUpti_Activity **batch, int n)
{
    uint32_t ids[RECORD_BATCH] = {0};
    op_cuda_corr_result res[RECORD_BATCH];
    int api_inserted = 0;
    if (n <= 0 || n > RECORD_BATCH) return 0;
    for (int i = 0; i < n; i++) ids[i] = record_correlation(batch[i]);
    op_cuda_corr_resolve(ids, n, res);
    for (int i = 0; i < n; i++) {
        CUpti_ActivityKind k = batch[i]->kind;
        if (k == CUPTI_ACTIVITY_KIND_RUNTIME || k == CUPTI_ACTIVITY_KIND_DRIVER) {
            api_inserted |= on_api((const CUpti_ActivityAPI *)batch[i]);
            continue;
        }
        if (op_cuda_activity_mode && g_join && ids[i] && !res[i].found) {
            pend(batch[i]); /* its API record is still to come */
            continue;
        }
        op_cuda_corr_set_current(&res[i]);
        handle_record(batch[i]);
        if (res[i].ready && res[i].release) op_sdk_correlation_release(res[i].release); /* not consumed */
    }
    op_cuda_corr_set_current(NULL);
    return api_inserted;
}

static void CUPTIAPI buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    (void)size;
    if (!buf) return;
    static __thread int pinned; /* CUPTI's thread runs our record processing: OMNIPROF_WORKER_CPUS */
    if (!pinned) {
        pinned = 1;
        op_worker_pin_self();
    }
    CUpti_Activity *rec = NULL;
    CUpti_Activity *batch[RECORD_BATCH];
    int more = valid > 0, api_inserted = 0;
    while (more) {
        int n = 0;
        while (n < RECORD_BATCH && (more = cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS))
            batch[n++] = rec;
        api_inserted |= deliver_batch(batch, n);
    }
    if (api_inserted) retry_pending(0);
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

/* The kinds enabled at start, turned off and on again by op_cuda_activity_collect (the API
 * kinds are not in the list: op_cuda_activity_enable_api's arguments are kept instead; unified
 * memory, enabled at the first context by cupti_unified_memory.c, is not turned off). */
static CUpti_ActivityKind g_on_kinds[16];
static int g_n_on_kinds;

static int enable_kind(CUpti_ActivityKind k, const char *what)
{
    CUptiResult r = cuptiActivityEnable(k);
    if (r != CUPTI_SUCCESS) {
        const char *s = "?";
        cuptiGetResultString(r, &s);
        op_warn("cuda: cannot collect %s activity (cuptiActivityEnable: %s)", what, s);
        return -1;
    }
    /* FUNCTION (kernel symbols, once per module load) stays on: a module loaded while collection
     * is off still gets its symbols */
    if (k != CUPTI_ACTIVITY_KIND_RUNTIME && k != CUPTI_ACTIVITY_KIND_DRIVER && k != CUPTI_ACTIVITY_KIND_FUNCTION &&
        g_n_on_kinds < (int)(sizeof g_on_kinds / sizeof g_on_kinds[0]))
        g_on_kinds[g_n_on_kinds++] = k;
    return 0;
}

int op_cuda_activity_start(int api_traced)
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
    int want_event = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_CUDA_EVENT);
    int want_sym = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL);
    int want_um = op_cuda_um_wanted(); /* enabled at the first context (cupti_unified_memory.c) */
    if (!(want_kernel | want_copy | want_set | want_alloc | want_sync | want_event | want_sym |
          want_um) &&
        !(op_cuda_activity_mode && api_traced))
        return 0;

    op_cuda_corr_init();
    /* CUPTI's thread ids are pthread_self() values unless told otherwise; ours are gettid(). */
    cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    uint64_t dev_buf = op_setting_uint(OP_SET_CUDA_DEVICE_BUFFER_SIZE);
    if (dev_buf) {
        size_t v = (size_t)dev_buf, vs = sizeof v;
        cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &vs, &v);
    }
    uint8_t zeroed = 1;
    size_t zs = sizeof zeroed;
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zs, &zeroed);
    CUptiResult r = cuptiActivityRegisterCallbacks(buf_request, buf_complete);
    if (r != CUPTI_SUCCESS) {
        const char *s = "?";
        cuptiGetResultString(r, &s);
        op_warn("cuda: GPU activity off: cuptiActivityRegisterCallbacks failed: %s", s);
        return -1;
    }
    uint8_t cls = 0;
    /* SASS metrics read 0 beside CONCURRENT_KERNEL (cupti_sassmetrics.c): the serialized kind then */
    CUpti_ActivityKind kernel_kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    if (want_kernel && op_cuda_sass_on()) {
        kernel_kind = CUPTI_ACTIVITY_KIND_KERNEL;
        op_info("cuda: kernel records from CUPTI's serialized KERNEL kind while SASS metrics are on (CUPTI counts "
                "nothing beside CONCURRENT_KERNEL): kernels run one at a time");
    }
    if (want_kernel && enable_kind(kernel_kind, "kernel") == 0) cls |= OP_CUDA_CLS_LAUNCH | OP_CUDA_CLS_GRAPH;
    if (want_copy && enable_kind(CUPTI_ACTIVITY_KIND_MEMCPY, "memory copy") == 0) {
        if (op_setting_bool(OP_SET_CUDA_PEER_COPIES)) enable_kind(CUPTI_ACTIVITY_KIND_MEMCPY2, "peer-to-peer copy");
        cls |= OP_CUDA_CLS_MEMCPY | OP_CUDA_CLS_GRAPH;
    }
    if (want_set && enable_kind(CUPTI_ACTIVITY_KIND_MEMSET, "memory set") == 0) cls |= OP_CUDA_CLS_MEMSET | OP_CUDA_CLS_GRAPH;
    if (want_alloc && enable_kind(CUPTI_ACTIVITY_KIND_MEMORY2, "memory allocation") == 0) cls |= OP_CUDA_CLS_ALLOC;
    if (want_sync && enable_kind(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization") == 0) cls |= OP_CUDA_CLS_SYNC;
    /* one record per cudaEventRecord (host-side cost of the call's record only: the GPU's time of
     * the event, cuptiActivityEnableCudaEventDeviceTimestamps, is not asked for) */
    if (want_event && enable_kind(CUPTI_ACTIVITY_KIND_CUDA_EVENT, "CUDA event") == 0)
        cls |= OP_CUDA_CLS_SYNC;
    if (want_sym) enable_kind(CUPTI_ACTIVITY_KIND_FUNCTION, "function");
    op_cuda_activity_classes = cls;

    if (g_flush_interval_ms > 0) {
        pthread_t t;
        if (op_sdk_create_thread(&t, flush_thread, NULL, OMNIPROF_LIBRARY_CUDA, "omniprof-cuflush") != 0) /* detached */
            op_warn("cuda: periodic flush thread not started; GPU records arrive when CUPTI buffers fill and at exit");
    }
    return 0;
}

/* OMNIPROF_CUDA_API_EXCLUDE: calls of a traced domain CUPTI does not record (its names). */
static void exclude_apis(CUpti_CallbackDomain dom, uint32_t n)
{
    const char *list = op_setting_str(OP_SET_CUDA_API_EXCLUDE);
    if (!list || !*list) return;
    for (uint32_t id = 1; id < n; id++) {
        const char *name = op_cuda_cbinfo_get(dom, id)->name;
        size_t len = name ? strlen(name) : 0;
        for (const char *p = list; len && (p = strstr(p, name)) != NULL; p += len)
            if ((p == list || p[-1] == ',' || p[-1] == ' ') && (p[len] == '\0' || p[len] == ',' || p[len] == ' ')) {
                if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) cuptiActivityEnableRuntimeApi(id, 0);
                else cuptiActivityEnableDriverApi(id, 0);
                break;
            }
    }
}

/* The calls of a kind configured for some of its operations, by callback id (set at start). */
static uint8_t g_named_rt[CUPTI_RUNTIME_TRACE_CBID_SIZE], g_named_drv[CUPTI_DRIVER_TRACE_CBID_SIZE];

/* Fine-grained API activity: the whole domain when traced, else the calls of classes `cls`
 * (cuptiActivityEnableRuntimeApi/DriverApi without the kind enables just those ids). on: 2 at
 * start, 1 again later, 0 turns the same off. */
static void enable_api_kind(CUpti_ActivityKind kind, int full, uint8_t cls, uint32_t n, int driver_launches, int on)
{
    const int runtime = kind == CUPTI_ACTIVITY_KIND_RUNTIME;
    CUpti_CallbackDomain dom = runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    if (full) {
        if (!on) cuptiActivityDisable(kind);
        else if (on == 2) enable_kind(kind, runtime ? "CUDA runtime API" : "CUDA driver API");
        else cuptiActivityEnable(kind); /* again: a failure was said at start */
        if (on) exclude_apis(dom, n);
        return;
    }
    if (!runtime && !driver_launches) cls &= (uint8_t)~(OP_CUDA_CLS_LAUNCH | OP_CUDA_CLS_GRAPH);
    /* and the calls a context traces by name (a filtered kind: --torch's driver launch calls),
     * noted at start for op_cuda_activity_api_recorded */
    uint8_t *named = runtime ? g_named_rt : g_named_drv;
    if (on == 2) {
        const uint32_t bkind = runtime ? OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API : OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API;
        const int any = op_sdk_kind_configured(bkind);
        for (uint32_t id = 1; any && id < n; id++) named[id] = (uint8_t)op_sdk_kind_op_configured(bkind, (int32_t)id);
    }
    for (uint32_t id = 1; id < n; id++)
        if ((op_cuda_cbinfo_get(dom, id)->cls & cls) || named[id]) {
            if (runtime) cuptiActivityEnableRuntimeApi(id, (uint8_t)on);
            else cuptiActivityEnableDriverApi(id, (uint8_t)on);
        }
}

static int g_api_rt_full, g_api_drv_full, g_api_drv_launches, g_api_set;
static uint8_t g_api_cls;

void op_cuda_activity_enable_api(int rt_full, int drv_full, uint8_t cls)
{
    int drv_launches = op_setting_bool(OP_SET_CUDA_DRIVER_LAUNCHES);
    if (!op_setting_bool(OP_SET_CUDA_KERNEL_CORRELATION)) {
        /* lite: GPU records without their launching calls, unless an API kind is traced anyway */
        if (!rt_full) cls = 0;
        if (!drv_full) drv_launches = 0;
        g_join = rt_full || drv_full;
    } else {
        g_join = 1;
    }
    /* A CUPTI that joins a running process (omniprof attach) records no call of a per-call enable
     * (cuptiActivityEnableRuntimeApi after CUDA initialized; measured on the H100): the launch
     * calls' records then come from the whole runtime kind, less the excluded calls. */
    if (g_join && !rt_full && cls && op_setting_bool(OP_SET_ATTACH_MODE)) {
        rt_full = 1;
        op_info("cuda: attached to a running process: launch records from CUPTI's whole runtime API kind");
    }
    g_api_rt_full = rt_full, g_api_drv_full = drv_full, g_api_drv_launches = drv_launches;
    g_api_cls = cls, g_api_set = 1;
    enable_api_kind(CUPTI_ACTIVITY_KIND_RUNTIME, rt_full, cls, CUPTI_RUNTIME_TRACE_CBID_SIZE, 1, 2);
    enable_api_kind(CUPTI_ACTIVITY_KIND_DRIVER, drv_full, cls, CUPTI_DRIVER_TRACE_CBID_SIZE, drv_launches, 2);
}

/* The whole API kinds go off and on with collection. Per-call enables stay on: once turned off,
 * CUPTI does not take them again after CUDA initialized (measured on the H100: enabled before
 * CUDA's initialization, turned off and on later, they record; turned off before it and on
 * later, nothing), so while collection is off the launch calls' API records still come (and are
 * dropped: on_api). */
static void collect_api(int on)
{
    if (!g_api_set) return;
    if (g_api_rt_full) enable_api_kind(CUPTI_ACTIVITY_KIND_RUNTIME, 1, g_api_cls, CUPTI_RUNTIME_TRACE_CBID_SIZE, 1, on);
    if (g_api_drv_full) enable_api_kind(CUPTI_ACTIVITY_KIND_DRIVER, 1, g_api_cls, CUPTI_DRIVER_TRACE_CBID_SIZE, 1, on);
}

/* On: the API records first, then the GPU kinds; off: the other way round. So a launch at the
 * switch gets its API record whenever its GPU record is written. */
void op_cuda_activity_collect(int on)
{
    if (on) {
        collect_api(1);
        /* the span ends once API records come again and before the GPU kinds do: a call made
         * after the end has its API record, one made before it no kernel record */
        uint32_t n = g_off_spans;
        if (n) __atomic_store_n(&g_off_span[(n - 1) % OFF_SPANS][1], op_now_ns(), __ATOMIC_RELEASE);
    }
    for (int i = 0; i < g_n_on_kinds; i++) {
        if (on) cuptiActivityEnable(g_on_kinds[i]);
        else cuptiActivityDisable(g_on_kinds[i]);
    }
    if (!on) {
        uint32_t n = g_off_spans;
        __atomic_store_n(&g_off_span[n % OFF_SPANS][1], 0, __ATOMIC_RELEASE);
        __atomic_store_n(&g_off_span[n % OFF_SPANS][0], op_now_ns(), __ATOMIC_RELEASE);
        __atomic_store_n(&g_off_spans, n + 1, __ATOMIC_RELEASE);
        collect_api(0);
    }
}

int op_cuda_activity_api_recorded(CUpti_CallbackDomain dom, CUpti_CallbackId cbid)
{
    uint8_t cls = op_cuda_cbinfo_get(dom, cbid)->cls & op_cuda_activity_classes;
    if (!g_join) return 0;
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) return g_api_rt_full || cls || (cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE && g_named_rt[cbid]);
    if (cbid < CUPTI_DRIVER_TRACE_CBID_SIZE && g_named_drv[cbid]) return 1;
    if (!g_api_drv_launches) cls &= (uint8_t)~(OP_CUDA_CLS_LAUNCH | OP_CUDA_CLS_GRAPH);
    return g_api_drv_full || cls;
}

void op_cuda_activity_flush(int forced)
{
    if (!op_cuda_corr_active() && !op_cuda_activity_classes) return;
    cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    if (forced) retry_pending(1); /* every API record delivered: what still waits has none */
}

void op_cuda_activity_finalize(void)
{
    g_flush_stop = 1;
    retry_pending(1);
    op_cuda_corr_finalize();
    if (g_pend_overflow || g_unresolved)
        op_warn("cuda: %llu GPU records without their launching call (%llu waited past the pending limit)",
                (unsigned long long)g_unresolved, (unsigned long long)g_pend_overflow);
}
