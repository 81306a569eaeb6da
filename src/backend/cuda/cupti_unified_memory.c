/* cupti_unified_memory.c — unified (managed) memory events on CUDA: CUPTI's unified-memory
 * counter activity (CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER, CUpti_ActivityUnifiedMemoryCounter3)
 * → UNIFIED_MEMORY records (include/omniprof/gpu.h): page migrations host→device, device→host
 * and device→device with their bytes, addresses and cause; CPU and GPU page faults; thrashing,
 * throttling and remote maps.
 *
 * CUPTI wants the counters configured after the driver is initialized and before the activity
 * kind is enabled: op_cuda_um_on_context() does both at the first context creation (the
 * subscriber's resource callback), once. The records come through the activity buffers of
 * cupti_activity.c (no correlation id: they are delivered as they come).
 * Fail soft: a configuration CUPTI refuses (a platform or device without unified-memory
 * profiling) logs one line and the kind stays off; the program runs on. */
#include <stdint.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "common/log.h"

static int g_wanted = -1;   /* the UNIFIED_MEMORY kind is configured (read once) */
static int g_done;          /* configuration tried (under the caller's serialization: resource callbacks) */

int op_cuda_um_wanted(void)
{
    if (g_wanted < 0) g_wanted = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_UNIFIED_MEMORY) ? 1 : 0;
    return g_wanted;
}

static CUptiResult configure(const CUpti_ActivityUnifiedMemoryCounterKind *kinds, uint32_t n)
{
    CUpti_ActivityUnifiedMemoryCounterConfig cfg[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_COUNT];
    memset(cfg, 0, sizeof cfg);
    for (uint32_t i = 0; i < n; i++) {
        cfg[i].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE; /* ignored since CUDA 7 */
        cfg[i].kind = kinds[i];
        cfg[i].deviceId = 0;
        cfg[i].enable = 1;
    }
    return cuptiActivityConfigureUnifiedMemoryCounter(cfg, n);
}

void op_cuda_um_on_context(void)
{
    if (!op_cuda_um_wanted() || __atomic_exchange_n(&g_done, 1, __ATOMIC_ACQ_REL)) return;
    static const CUpti_ActivityUnifiedMemoryCounterKind all[] = {
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD};
    const char *set = "migrations, page faults, thrashing, throttling, remote maps";
    CUptiResult r = configure(all, sizeof all / sizeof all[0]);
    if (r != CUPTI_SUCCESS) { /* some platforms support only the migrations and faults */
        const char *s = "?";
        cuptiGetResultString(r, &s);
        op_info("cuda: unified memory: the full counter set was refused (%s); trying migrations and faults only", s);
        set = "migrations and page faults";
        r = configure(all, 4);
    }
    if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
    if (r != CUPTI_SUCCESS) {
        const char *s = "?";
        cuptiGetResultString(r, &s);
        op_warn("cuda: unified memory tracing off: CUPTI refused its counters (%s, CUPTI error %d)", s, (int)r);
        return;
    }
    op_info("cuda: unified memory tracing on (%s)", set);
}

static omniprof_agent_id_t gpu(uint32_t device) { return op_cuda_agent_of_device(device); }

static uint32_t migration_cause(uint32_t flags)
{
    switch (flags) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER: return OMNIPROF_UNIFIED_MEMORY_CAUSE_USER;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE: return OMNIPROF_UNIFIED_MEMORY_CAUSE_COHERENCE;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH: return OMNIPROF_UNIFIED_MEMORY_CAUSE_PREFETCH;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION: return OMNIPROF_UNIFIED_MEMORY_CAUSE_EVICTION;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_ACCESS_COUNTERS: return OMNIPROF_UNIFIED_MEMORY_CAUSE_ACCESS_COUNTERS;
    default: return OMNIPROF_UNIFIED_MEMORY_CAUSE_UNKNOWN;
    }
}

static uint32_t access_cause(uint32_t flags)
{
    switch (flags) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ: return OMNIPROF_UNIFIED_MEMORY_CAUSE_READ;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE: return OMNIPROF_UNIFIED_MEMORY_CAUSE_WRITE;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_ATOMIC: return OMNIPROF_UNIFIED_MEMORY_CAUSE_ATOMIC;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_PREFETCH: return OMNIPROF_UNIFIED_MEMORY_CAUSE_PREFETCH_ACCESS;
    default: return OMNIPROF_UNIFIED_MEMORY_CAUSE_UNKNOWN;
    }
}

static uint32_t remote_map_cause(uint32_t flags)
{
    switch (flags) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_COHERENCE: return OMNIPROF_UNIFIED_MEMORY_CAUSE_COHERENCE;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_THRASHING: return OMNIPROF_UNIFIED_MEMORY_CAUSE_THRASHING;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_POLICY: return OMNIPROF_UNIFIED_MEMORY_CAUSE_POLICY;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_OUT_OF_MEMORY: return OMNIPROF_UNIFIED_MEMORY_CAUSE_OUT_OF_MEMORY;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_EVICTION: return OMNIPROF_UNIFIED_MEMORY_CAUSE_EVICTION;
    default: return OMNIPROF_UNIFIED_MEMORY_CAUSE_UNKNOWN;
    }
}

void op_cuda_um_record(const CUpti_ActivityUnifiedMemoryCounter3 *u)
{
    omniprof_buffer_tracing_unified_memory_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_UNIFIED_MEMORY;
    r.start_timestamp = u->start;
    r.end_timestamp = u->end > u->start ? u->end : u->start;
    r.address = u->address;
    r.src_device = r.dst_device = UINT32_MAX;
    switch (u->counterKind) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD:
        r.operation = OMNIPROF_UNIFIED_MEMORY_MIGRATE_HOST_TO_DEVICE;
        r.dst_device = u->dstId, r.dst_agent_id = gpu(u->dstId);
        r.bytes = u->value, r.cause = migration_cause(u->flags);
        break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
        r.operation = OMNIPROF_UNIFIED_MEMORY_MIGRATE_DEVICE_TO_HOST;
        r.src_device = u->srcId, r.src_agent_id = gpu(u->srcId);
        r.bytes = u->value, r.cause = migration_cause(u->flags);
        break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD:
        r.operation = OMNIPROF_UNIFIED_MEMORY_MIGRATE_DEVICE_TO_DEVICE;
        r.src_device = u->srcId, r.src_agent_id = gpu(u->srcId);
        r.dst_device = u->dstId, r.dst_agent_id = gpu(u->dstId);
        r.bytes = u->value, r.cause = migration_cause(u->flags);
        break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT:
        r.operation = OMNIPROF_UNIFIED_MEMORY_CPU_PAGE_FAULT;
        r.end_timestamp = r.start_timestamp; /* CUPTI: no end */
        r.value = u->value;                  /* the faulting instruction */
        break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT:
        r.operation = OMNIPROF_UNIFIED_MEMORY_GPU_PAGE_FAULT;
        r.src_device = u->srcId, r.src_agent_id = gpu(u->srcId);
        r.value = u->value, r.cause = access_cause(u->flags);
        break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING:
        r.operation = OMNIPROF_UNIFIED_MEMORY_THRASHING;
        r.end_timestamp = r.start_timestamp;
        r.bytes = u->value;
        r.value = u->processors[0]; /* the processors fighting over the region, as a bit mask */
        break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING:
        r.operation = OMNIPROF_UNIFIED_MEMORY_THROTTLING;
        r.src_device = u->srcId;
        if (!(u->flags & CUPTI_ACTIVITY_FLAG_THROTTLING_IN_CPU)) r.src_agent_id = gpu(u->srcId);
        break;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP:
        r.operation = OMNIPROF_UNIFIED_MEMORY_REMOTE_MAP;
        r.end_timestamp = r.start_timestamp;
        r.dst_device = u->dstId, r.dst_agent_id = gpu(u->dstId);
        r.bytes = u->value, r.cause = remote_map_cause(u->flags);
        break;
    default:
        return;
    }
    op_sdk_emit(r.kind, r.operation, &r, NULL);
}
