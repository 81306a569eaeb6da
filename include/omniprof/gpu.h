/* omniprof/gpu.h — vendor-neutral GPU activity records: kernel dispatches, copies, sets,
 * allocations, synchronizations, code objects and kernel symbols.
 *
 * Timestamps are CLOCK_MONOTONIC ns (the backend maps device time onto the host clock).
 * String pointers (kernel names) point at SDK-interned storage valid for the process. */
#ifndef OMNIPROF_GPU_H
#define OMNIPROF_GPU_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

typedef enum omniprof_kernel_dispatch_operation_t {
    OMNIPROF_KERNEL_DISPATCH_NONE = 0,
    OMNIPROF_KERNEL_DISPATCH_COMPLETE, /* buffer records: a finished kernel */
    OMNIPROF_KERNEL_DISPATCH_ENQUEUE,  /* callback records: at launch */
    OMNIPROF_KERNEL_DISPATCH_LAST
} omniprof_kernel_dispatch_operation_t;

typedef struct omniprof_buffer_tracing_kernel_dispatch_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation;
    omniprof_async_correlation_id_t correlation_id; /* of the launching API call */
    omniprof_thread_id_t thread_id;                 /* launching thread */
    omniprof_timestamp_t start_timestamp;
    omniprof_timestamp_t end_timestamp;
    omniprof_agent_id_t agent_id;
    uint32_t device_id;  /* vendor device ordinal */
    uint32_t context_id; /* vendor context id */
    omniprof_stream_id_t stream_id;
    omniprof_kernel_id_t kernel_id;   /* matches a KERNEL_SYMBOL record */
    omniprof_dispatch_id_t dispatch_id;
    const char *kernel_name;          /* mangled */
    const char *kernel_name_demangled;
    omniprof_dim3_t grid_size;        /* blocks per grid */
    omniprof_dim3_t block_size;       /* threads per block */
    uint32_t static_shared_memory;    /* bytes per block */
    uint32_t dynamic_shared_memory;   /* bytes per block */
    uint32_t registers_per_thread;
    uint32_t local_memory_per_thread; /* bytes */
    uint64_t graph_id;                /* 0 unless launched from a graph */
    uint64_t graph_node_id;
    uint32_t cluster_size_x, cluster_size_y, cluster_size_z;
    uint32_t reserved;
} omniprof_buffer_tracing_kernel_dispatch_record_t;

typedef enum omniprof_memory_copy_operation_t {
    OMNIPROF_MEMORY_COPY_NONE = 0,
    OMNIPROF_MEMORY_COPY_HOST_TO_HOST,
    OMNIPROF_MEMORY_COPY_HOST_TO_DEVICE,
    OMNIPROF_MEMORY_COPY_DEVICE_TO_HOST,
    OMNIPROF_MEMORY_COPY_DEVICE_TO_DEVICE,
    OMNIPROF_MEMORY_COPY_PEER_TO_PEER,
    OMNIPROF_MEMORY_COPY_LAST
} omniprof_memory_copy_operation_t;

typedef enum omniprof_memory_kind_t {
    OMNIPROF_MEMORY_KIND_UNKNOWN = 0,
    OMNIPROF_MEMORY_KIND_PAGEABLE,
    OMNIPROF_MEMORY_KIND_PINNED,
    OMNIPROF_MEMORY_KIND_DEVICE,
    OMNIPROF_MEMORY_KIND_ARRAY,
    OMNIPROF_MEMORY_KIND_MANAGED,
    OMNIPROF_MEMORY_KIND_DEVICE_STATIC,
    OMNIPROF_MEMORY_KIND_MANAGED_STATIC,
    OMNIPROF_MEMORY_KIND_LAST
} omniprof_memory_kind_t;

typedef struct omniprof_buffer_tracing_memory_copy_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation; /* omniprof_memory_copy_operation_t */
    omniprof_async_correlation_id_t correlation_id;
    omniprof_thread_id_t thread_id;
    omniprof_timestamp_t start_timestamp;
    omniprof_timestamp_t end_timestamp;
    omniprof_agent_id_t src_agent_id;
    omniprof_agent_id_t dst_agent_id;
    uint64_t bytes;
    uint32_t src_memory_kind; /* omniprof_memory_kind_t */
    uint32_t dst_memory_kind;
    omniprof_stream_id_t stream_id;
    uint32_t is_async;
    uint32_t device_id;
    uint64_t graph_id;
    uint64_t graph_node_id;
} omniprof_buffer_tracing_memory_copy_record_t;

typedef struct omniprof_buffer_tracing_memory_set_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation; /* 1 */
    omniprof_async_correlation_id_t correlation_id;
    omniprof_thread_id_t thread_id;
    omniprof_timestamp_t start_timestamp;
    omniprof_timestamp_t end_timestamp;
    omniprof_agent_id_t agent_id;
    uint64_t bytes;
    uint32_t value;
    uint32_t memory_kind;
    omniprof_stream_id_t stream_id;
    uint32_t is_async;
    uint32_t device_id;
} omniprof_buffer_tracing_memory_set_record_t;

typedef enum omniprof_memory_allocation_operation_t {
    OMNIPROF_MEMORY_ALLOCATION_NONE = 0,
    OMNIPROF_MEMORY_ALLOCATION_ALLOCATE,
    OMNIPROF_MEMORY_ALLOCATION_FREE,
    OMNIPROF_MEMORY_ALLOCATION_VMEM_ALLOCATE,
    OMNIPROF_MEMORY_ALLOCATION_VMEM_FREE,
    OMNIPROF_MEMORY_ALLOCATION_LAST
} omniprof_memory_allocation_operation_t;

typedef struct omniprof_buffer_tracing_memory_allocation_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation; /* omniprof_memory_allocation_operation_t */
    omniprof_correlation_id_t correlation_id;
    omniprof_thread_id_t thread_id;
    omniprof_timestamp_t start_timestamp;
    omniprof_timestamp_t end_timestamp;
    omniprof_agent_id_t agent_id;
    uint64_t address;
    uint64_t allocation_size;
    uint32_t memory_kind; /* omniprof_memory_kind_t */
    uint32_t device_id;
    omniprof_stream_id_t stream_id;
} omniprof_buffer_tracing_memory_allocation_record_t;

typedef enum omniprof_synchronization_operation_t {
    OMNIPROF_SYNCHRONIZATION_NONE = 0,
    OMNIPROF_SYNCHRONIZATION_EVENT,
    OMNIPROF_SYNCHRONIZATION_STREAM_WAIT_EVENT,
    OMNIPROF_SYNCHRONIZATION_STREAM,
    OMNIPROF_SYNCHRONIZATION_CONTEXT,
    OMNIPROF_SYNCHRONIZATION_DEVICE,
    OMNIPROF_SYNCHRONIZATION_LAST
} omniprof_synchronization_operation_t;

typedef struct omniprof_buffer_tracing_synchronization_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation;
    omniprof_async_correlation_id_t correlation_id;
    omniprof_thread_id_t thread_id;
    omniprof_timestamp_t start_timestamp;
    omniprof_timestamp_t end_timestamp;
    omniprof_agent_id_t agent_id;
    omniprof_stream_id_t stream_id;
    uint64_t event_id;
    uint32_t device_id;
    uint32_t context_id;
    uint64_t event_sync_id; /* event waits: the CUDA_EVENT record (sync_id) waited for; 0 none */
} omniprof_buffer_tracing_synchronization_record_t;

/* CUDA_EVENT: an event recorded on a stream (cudaEventRecord): which stream, after which of its
 * work (the recording call's correlation id: the work launched before it on the stream), so
 * that an event synchronize or a stream's wait for the event (SYNCHRONIZATION records with the
 * same event_sync_id) can be tied to that point (CUPTI's CUDA_EVENT activity). */
typedef enum omniprof_cuda_event_operation_t {
    OMNIPROF_CUDA_EVENT_NONE = 0,
    OMNIPROF_CUDA_EVENT_RECORD,
    OMNIPROF_CUDA_EVENT_LAST
} omniprof_cuda_event_operation_t;

typedef struct omniprof_buffer_tracing_cuda_event_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation;         /* omniprof_cuda_event_operation_t */
    omniprof_async_correlation_id_t correlation_id; /* offset 16: the recording call's ids */
    omniprof_thread_id_t thread_id;
    omniprof_timestamp_t device_timestamp; /* when the GPU reached it; 0 not collected */
    omniprof_stream_id_t stream_id;        /* the stream it was recorded on */
    uint64_t event_id;                     /* the CUDA event (reused by later records) */
    uint64_t sync_id;                      /* this record, as synchronization records name it */
    uint32_t device_id;
    uint32_t context_id;
} omniprof_buffer_tracing_cuda_event_record_t;

typedef enum omniprof_code_object_operation_t {
    OMNIPROF_CODE_OBJECT_NONE = 0,
    OMNIPROF_CODE_OBJECT_LOAD,
    OMNIPROF_CODE_OBJECT_UNLOAD,
    OMNIPROF_CODE_OBJECT_LAST
} omniprof_code_object_operation_t;

typedef struct omniprof_buffer_tracing_code_object_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation;
    omniprof_timestamp_t timestamp;
    uint64_t code_object_id; /* vendor module id */
    omniprof_agent_id_t agent_id;
    const char *uri;         /* interned; "memory://..." for in-memory images */
    uint64_t load_base;
    uint64_t load_size;
} omniprof_buffer_tracing_code_object_record_t;

typedef struct omniprof_buffer_tracing_kernel_symbol_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation; /* OMNIPROF_CODE_OBJECT_LOAD */
    omniprof_kernel_id_t kernel_id;
    uint64_t code_object_id;
    const char *kernel_name;           /* mangled, interned */
    const char *kernel_name_demangled; /* interned */
    uint32_t static_shared_memory;
    uint32_t registers_per_thread;
    uint32_t local_memory_per_thread;
    uint32_t reserved;
} omniprof_buffer_tracing_kernel_symbol_record_t;

/* UNIFIED_MEMORY: an event of managed (unified) memory — a migration of pages between host and
 * device or between devices, a page fault on the CPU or the GPU, or what the driver does
 * against thrashing (AMD: the KFD page-migration and page-fault kinds). Agents: handle 0 is the
 * host (the process's CPU agent in the database). */
typedef enum omniprof_unified_memory_operation_t {
    OMNIPROF_UNIFIED_MEMORY_NONE = 0,
    OMNIPROF_UNIFIED_MEMORY_MIGRATE_HOST_TO_DEVICE,   /* bytes moved to dst (a GPU) */
    OMNIPROF_UNIFIED_MEMORY_MIGRATE_DEVICE_TO_HOST,   /* bytes moved from src (a GPU) */
    OMNIPROF_UNIFIED_MEMORY_MIGRATE_DEVICE_TO_DEVICE, /* bytes moved between GPUs */
    OMNIPROF_UNIFIED_MEMORY_CPU_PAGE_FAULT,           /* value: the faulting instruction's address */
    OMNIPROF_UNIFIED_MEMORY_GPU_PAGE_FAULT,           /* value: fault groups of the page; src: the GPU */
    OMNIPROF_UNIFIED_MEMORY_THRASHING,                /* bytes of the region processors fight over */
    OMNIPROF_UNIFIED_MEMORY_THROTTLING,               /* the driver held off a processor's faults */
    OMNIPROF_UNIFIED_MEMORY_REMOTE_MAP,               /* bytes mapped remotely instead of migrated */
    OMNIPROF_UNIFIED_MEMORY_LAST
} omniprof_unified_memory_operation_t;

/* Why a migration or remote mapping happened, or what access faulted (`cause`). */
typedef enum omniprof_unified_memory_cause_t {
    OMNIPROF_UNIFIED_MEMORY_CAUSE_UNKNOWN = 0,
    OMNIPROF_UNIFIED_MEMORY_CAUSE_USER,            /* migration asked for (cudaMemPrefetchAsync) */
    OMNIPROF_UNIFIED_MEMORY_CAUSE_COHERENCE,       /* migration on a fault */
    OMNIPROF_UNIFIED_MEMORY_CAUSE_PREFETCH,        /* the driver's speculative prefetch */
    OMNIPROF_UNIFIED_MEMORY_CAUSE_EVICTION,        /* evicted to make room on the GPU */
    OMNIPROF_UNIFIED_MEMORY_CAUSE_ACCESS_COUNTERS, /* access-counter driven */
    OMNIPROF_UNIFIED_MEMORY_CAUSE_THRASHING,       /* remote map against thrashing */
    OMNIPROF_UNIFIED_MEMORY_CAUSE_POLICY,          /* remote map by hint or heuristic */
    OMNIPROF_UNIFIED_MEMORY_CAUSE_OUT_OF_MEMORY,   /* remote map: no memory to migrate into */
    OMNIPROF_UNIFIED_MEMORY_CAUSE_READ,            /* faults: the access */
    OMNIPROF_UNIFIED_MEMORY_CAUSE_WRITE,
    OMNIPROF_UNIFIED_MEMORY_CAUSE_ATOMIC,
    OMNIPROF_UNIFIED_MEMORY_CAUSE_PREFETCH_ACCESS,
    OMNIPROF_UNIFIED_MEMORY_CAUSE_LAST
} omniprof_unified_memory_cause_t;

typedef struct omniprof_buffer_tracing_unified_memory_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation; /* omniprof_unified_memory_operation_t */
    omniprof_timestamp_t start_timestamp;
    omniprof_timestamp_t end_timestamp;     /* == start for instants (CPU faults, thrashing, remote maps) */
    omniprof_agent_id_t src_agent_id;       /* migrations: where the pages were; faults: who faulted */
    omniprof_agent_id_t dst_agent_id;       /* migrations, remote maps: where they went */
    uint64_t address;                       /* virtual address of the (first) page */
    uint64_t bytes;                         /* migrations, thrashing, remote maps; else 0 */
    uint64_t value;                         /* GPU faults: fault groups; CPU faults: faulting PC; else 0 */
    uint32_t cause;                         /* omniprof_unified_memory_cause_t */
    uint32_t src_device;                    /* vendor ordinals; UINT32_MAX: the host */
    uint32_t dst_device;
    uint32_t reserved;
} omniprof_buffer_tracing_unified_memory_record_t;

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_GPU_H */
