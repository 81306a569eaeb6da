/* op_names.c — the fixed operation names (op_names.h). */
#include "common/op_names.h"

#include "omniprof/causal.h"
#include "omniprof/cpu.h"
#include "omniprof/fwd.h"
#include "omniprof/gpu.h"
#include "omniprof/tracing.h"

#define NELEM(a) ((int32_t)(sizeof(a) / sizeof((a)[0])))

static const char *const k_dispatch[OMNIPROF_KERNEL_DISPATCH_LAST] = {
    [OMNIPROF_KERNEL_DISPATCH_COMPLETE] = "KERNEL_DISPATCH_COMPLETE",
    [OMNIPROF_KERNEL_DISPATCH_ENQUEUE] = "KERNEL_DISPATCH_ENQUEUE",
};
static const char *const k_copy[OMNIPROF_MEMORY_COPY_LAST] = {
    [OMNIPROF_MEMORY_COPY_HOST_TO_HOST] = "MEMORY_COPY_HOST_TO_HOST",
    [OMNIPROF_MEMORY_COPY_HOST_TO_DEVICE] = "MEMORY_COPY_HOST_TO_DEVICE",
    [OMNIPROF_MEMORY_COPY_DEVICE_TO_HOST] = "MEMORY_COPY_DEVICE_TO_HOST",
    [OMNIPROF_MEMORY_COPY_DEVICE_TO_DEVICE] = "MEMORY_COPY_DEVICE_TO_DEVICE",
    [OMNIPROF_MEMORY_COPY_PEER_TO_PEER] = "MEMORY_COPY_PEER_TO_PEER",
};
static const char *const k_set[] = {NULL, "MEMORY_SET"}; /* one operation, 1 */
static const char *const k_alloc[OMNIPROF_MEMORY_ALLOCATION_LAST] = {
    [OMNIPROF_MEMORY_ALLOCATION_ALLOCATE] = "MEMORY_ALLOCATION_ALLOCATE",
    [OMNIPROF_MEMORY_ALLOCATION_FREE] = "MEMORY_ALLOCATION_FREE",
    [OMNIPROF_MEMORY_ALLOCATION_VMEM_ALLOCATE] = "MEMORY_ALLOCATION_VMEM_ALLOCATE",
    [OMNIPROF_MEMORY_ALLOCATION_VMEM_FREE] = "MEMORY_ALLOCATION_VMEM_FREE",
};
static const char *const k_sync[OMNIPROF_SYNCHRONIZATION_LAST] = {
    [OMNIPROF_SYNCHRONIZATION_EVENT] = "SYNCHRONIZATION_EVENT",
    [OMNIPROF_SYNCHRONIZATION_STREAM_WAIT_EVENT] = "SYNCHRONIZATION_STREAM_WAIT_EVENT",
    [OMNIPROF_SYNCHRONIZATION_STREAM] = "SYNCHRONIZATION_STREAM",
    [OMNIPROF_SYNCHRONIZATION_CONTEXT] = "SYNCHRONIZATION_CONTEXT",
    [OMNIPROF_SYNCHRONIZATION_DEVICE] = "SYNCHRONIZATION_DEVICE",
};
static const char *const k_code[OMNIPROF_CODE_OBJECT_LAST] = {
    [OMNIPROF_CODE_OBJECT_LOAD] = "CODE_OBJECT_LOAD",
    [OMNIPROF_CODE_OBJECT_UNLOAD] = "CODE_OBJECT_UNLOAD",
};
static const char *const k_symbol[] = {NULL, "KERNEL_SYMBOL_LOAD", "KERNEL_SYMBOL_UNLOAD"};
static const char *const k_marker[OMNIPROF_MARKER_OP_LAST] = {
    [OMNIPROF_MARKER_OP_MARK] = "omniprof_mark",
    [OMNIPROF_MARKER_OP_RANGE_PUSH] = "omniprof_range_push",
    [OMNIPROF_MARKER_OP_RANGE_POP] = "omniprof_range_pop",
    [OMNIPROF_MARKER_OP_RANGE_START] = "omniprof_range_start",
    [OMNIPROF_MARKER_OP_RANGE_STOP] = "omniprof_range_stop",
    [OMNIPROF_MARKER_OP_PAUSE] = "omniprof_pause",
    [OMNIPROF_MARKER_OP_RESUME] = "omniprof_resume",
    [OMNIPROF_MARKER_OP_NAME_THREAD] = "omniprof_name_thread",
    [OMNIPROF_MARKER_OP_PROGRESS] = "omniprof_progress",
    [OMNIPROF_MARKER_OP_PROGRESS_BEGIN] = "omniprof_progress_begin",
    [OMNIPROF_MARKER_OP_PROGRESS_END] = "omniprof_progress_end",
    [OMNIPROF_MARKER_OP_NAME_CATEGORY] = "name_category",
};
static const char *const k_marker_range[OMNIPROF_MARKER_RANGE_OP_LAST] = {
    [OMNIPROF_MARKER_RANGE_OP_THREAD_RANGE] = "thread_range",
    [OMNIPROF_MARKER_RANGE_OP_PROCESS_RANGE] = "process_range",
    [OMNIPROF_MARKER_RANGE_OP_MARK] = "mark",
};
static const char *const k_wrapper[OMNIPROF_FUNCTION_WRAPPER_LAST] = {
    [OMNIPROF_FUNCTION_WRAPPER_PTHREAD_CREATE] = "pthread_create",
    [OMNIPROF_FUNCTION_WRAPPER_PTHREAD_JOIN] = "pthread_join",
    [OMNIPROF_FUNCTION_WRAPPER_FORK] = "fork",
    [OMNIPROF_FUNCTION_WRAPPER_EXIT] = "exit",
    [OMNIPROF_FUNCTION_WRAPPER__EXIT] = "_exit",
    [OMNIPROF_FUNCTION_WRAPPER_ABORT] = "abort", /* reserved: abort is not wrapped */
    [OMNIPROF_FUNCTION_WRAPPER_MPI_INIT] = "MPI_Init",
    [OMNIPROF_FUNCTION_WRAPPER_MPI_INIT_THREAD] = "MPI_Init_thread",
    [OMNIPROF_FUNCTION_WRAPPER_MPI_FINALIZE] = "MPI_Finalize",
    [OMNIPROF_FUNCTION_WRAPPER_PTHREAD_MUTEX_LOCK] = "pthread_mutex_lock",
    [OMNIPROF_FUNCTION_WRAPPER_PTHREAD_MUTEX_TRYLOCK] = "pthread_mutex_trylock",
    [OMNIPROF_FUNCTION_WRAPPER_PTHREAD_RWLOCK_RDLOCK] = "pthread_rwlock_rdlock",
    [OMNIPROF_FUNCTION_WRAPPER_PTHREAD_RWLOCK_WRLOCK] = "pthread_rwlock_wrlock",
    [OMNIPROF_FUNCTION_WRAPPER_PTHREAD_BARRIER_WAIT] = "pthread_barrier_wait",
};
/* the CPU backend's kinds */
static const char *const k_cpu_sample_ops[OMNIPROF_CPU_SAMPLE_LAST] = {
    [OMNIPROF_CPU_SAMPLE_CPUTIME] = "cputime", [OMNIPROF_CPU_SAMPLE_REALTIME] = "realtime"};
static const char *const k_process_sample_ops[OMNIPROF_PROCESS_SAMPLE_LAST] = {
    [OMNIPROF_PROCESS_SAMPLE_PROCESS] = "process", [OMNIPROF_PROCESS_SAMPLE_CPU_FREQ] = "cpu_freq",
    [OMNIPROF_PROCESS_SAMPLE_GPU] = "gpu"};
static const char *const k_thread_ops[OMNIPROF_THREAD_LAST] = {
    [OMNIPROF_THREAD_CREATE] = "create", [OMNIPROF_THREAD_EXIT] = "exit", [OMNIPROF_THREAD_NAME] = "name"};
static const char *const k_experiment_ops[OMNIPROF_CAUSAL_EXPERIMENT_LAST] = {
    [OMNIPROF_CAUSAL_EXPERIMENT_LINE] = "line", [OMNIPROF_CAUSAL_EXPERIMENT_FUNCTION] = "function",
    [OMNIPROF_CAUSAL_EXPERIMENT_END_TO_END] = "end_to_end"};
static const char *const k_progress_ops[OMNIPROF_CAUSAL_PROGRESS_LAST] = {
    [OMNIPROF_CAUSAL_PROGRESS_THROUGHPUT] = "throughput", [OMNIPROF_CAUSAL_PROGRESS_LATENCY] = "latency"};
static const char *const k_region_ops[OMNIPROF_REGION_PROFILE_LAST] = {[OMNIPROF_REGION_PROFILE_NODE] = "node"};
static const char *const k_cuda_event_ops[OMNIPROF_CUDA_EVENT_LAST] = {
    [OMNIPROF_CUDA_EVENT_RECORD] = "CUDA_EVENT_RECORD",
};
static const char *const k_sample_event_ops[OMNIPROF_CPU_SAMPLE_EVENT_LAST] = {
    [OMNIPROF_CPU_SAMPLE_EVENT_COUNTER] = "counter"};

static const char *const k_mem_kinds[OMNIPROF_MEMORY_KIND_LAST] = {
    [OMNIPROF_MEMORY_KIND_UNKNOWN] = "UNKNOWN",
    [OMNIPROF_MEMORY_KIND_PAGEABLE] = "PAGEABLE",
    [OMNIPROF_MEMORY_KIND_PINNED] = "PINNED",
    [OMNIPROF_MEMORY_KIND_DEVICE] = "DEVICE",
    [OMNIPROF_MEMORY_KIND_ARRAY] = "ARRAY",
    [OMNIPROF_MEMORY_KIND_MANAGED] = "MANAGED",
    [OMNIPROF_MEMORY_KIND_DEVICE_STATIC] = "DEVICE_STATIC",
    [OMNIPROF_MEMORY_KIND_MANAGED_STATIC] = "MANAGED_STATIC",
};

const char *const *op_fixed_operation_names(uint32_t kind, int32_t *count)
{
#define TABLE(t) return (*count = NELEM(t), t)
    switch (kind) {
    case OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH: TABLE(k_dispatch);
    case OMNIPROF_BUFFER_TRACING_MEMORY_COPY: TABLE(k_copy);
    case OMNIPROF_BUFFER_TRACING_MEMORY_SET: TABLE(k_set);
    case OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION: TABLE(k_alloc);
    case OMNIPROF_BUFFER_TRACING_SYNCHRONIZATION: TABLE(k_sync);
    case OMNIPROF_BUFFER_TRACING_CODE_OBJECT: TABLE(k_code);
    case OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL: TABLE(k_symbol);
    case OMNIPROF_BUFFER_TRACING_MARKER_API: TABLE(k_marker);
    case OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API: TABLE(k_marker_range);
    case OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER: TABLE(k_wrapper);
    case OMNIPROF_BUFFER_TRACING_CPU_SAMPLE: TABLE(k_cpu_sample_ops);
    case OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE: TABLE(k_process_sample_ops);
    case OMNIPROF_BUFFER_TRACING_THREAD: TABLE(k_thread_ops);
    case OMNIPROF_BUFFER_TRACING_CAUSAL_EXPERIMENT: TABLE(k_experiment_ops);
    case OMNIPROF_BUFFER_TRACING_CAUSAL_PROGRESS: TABLE(k_progress_ops);
    case OMNIPROF_BUFFER_TRACING_REGION_PROFILE: TABLE(k_region_ops);
    case OMNIPROF_BUFFER_TRACING_CPU_SAMPLE_EVENT: TABLE(k_sample_event_ops);
    case OMNIPROF_BUFFER_TRACING_CUDA_EVENT: TABLE(k_cuda_event_ops);
    default: *count = 0; return NULL;
    }
#undef TABLE
}

const char *op_fixed_operation_name(uint32_t kind, int32_t op)
{
    int32_t n;
    const char *const *t = op_fixed_operation_names(kind, &n);
    return t && op > 0 && op < n ? t[op] : NULL;
}

const char *op_memory_kind_name(uint32_t k) { return k < (uint32_t)NELEM(k_mem_kinds) ? k_mem_kinds[k] : "UNKNOWN"; }
