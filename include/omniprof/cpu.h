/* omniprof/cpu.h — CPU-side records: call-stack samples, process samples, threads.
 *
 * Produced by the CPU backend (src/backend/cpu/). Stacks are code addresses, innermost first:
 * the interrupted instruction, then for each caller its return address minus one (so that the
 * address lies inside the call instruction and resolves to the calling line); symbolization
 * happens at the end of the run (see docs/cpu.md, "Symbols"). A frame where a library closed
 * during the run (dlclose) had been, in a later module than the first one there, carries that
 * module's identity in bits 48-63; omniprof_query_address_symbols resolves such frames as they
 * are (mask with (1 << 48) - 1 for the plain address). */
#ifndef OMNIPROF_CPU_H
#define OMNIPROF_CPU_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

#define OMNIPROF_CPU_SAMPLE_MAX_FRAMES 128
#define OMNIPROF_CPU_SAMPLE_MAX_EVENTS 8

typedef enum omniprof_cpu_sample_operation_t {
    OMNIPROF_CPU_SAMPLE_NONE = 0,
    OMNIPROF_CPU_SAMPLE_CPUTIME,  /* from the thread CPU-time timer */
    OMNIPROF_CPU_SAMPLE_REALTIME, /* from the wall-clock timer */
    OMNIPROF_CPU_SAMPLE_LAST
} omniprof_cpu_sample_operation_t;

/* CPU_SAMPLE. `num_frames` addresses follow inline in frames[]. */
typedef struct omniprof_cpu_sample_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation; /* omniprof_cpu_sample_operation_t */
    omniprof_timestamp_t timestamp;
    omniprof_thread_id_t thread_id;
    uint64_t thread_internal_value;  /* creation order of the thread, main = 0 */
    uint64_t peak_rss_bytes;         /* of the process, at the sample */
    uint32_t num_events;             /* perf_event counter values, order of the sampler's event list */
    uint32_t num_frames;
    uint64_t event_values[OMNIPROF_CPU_SAMPLE_MAX_EVENTS];
    uint64_t frames[];
} omniprof_cpu_sample_record_t;

typedef enum omniprof_process_sample_operation_t {
    OMNIPROF_PROCESS_SAMPLE_NONE = 0,
    OMNIPROF_PROCESS_SAMPLE_PROCESS, /* one record per interval with the process metrics */
    OMNIPROF_PROCESS_SAMPLE_CPU_FREQ,
    OMNIPROF_PROCESS_SAMPLE_GPU,     /* NVML metrics of one GPU */
    OMNIPROF_PROCESS_SAMPLE_LAST
} omniprof_process_sample_operation_t;

/* PROCESS_SAMPLE: a named metric value at a time (one record per metric and time). */
typedef struct omniprof_process_sample_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation;
    omniprof_timestamp_t timestamp;
    const char *metric_name; /* static or interned: "rss_bytes", "cpu_freq_mhz.3", "gpu0.power_w" */
    const char *units;       /* "bytes", "MHz", "%", "W", "C", "ns", "count" */
    double value;
    uint32_t device_index;   /* core for CPU frequency, GPU index for GPU metrics, else 0 */
    uint32_t reserved;
} omniprof_process_sample_record_t;

typedef enum omniprof_thread_operation_t {
    OMNIPROF_THREAD_NONE = 0,
    OMNIPROF_THREAD_CREATE, /* record emitted by the new thread when it starts */
    OMNIPROF_THREAD_EXIT,
    OMNIPROF_THREAD_NAME,
    OMNIPROF_THREAD_LAST
} omniprof_thread_operation_t;

typedef struct omniprof_thread_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation;
    omniprof_timestamp_t timestamp;
    omniprof_thread_id_t thread_id;
    omniprof_thread_id_t parent_thread_id;
    uint64_t internal_value; /* creation order */
    uint64_t sequent_value;  /* internal_value, or offset by OMNIPROF_SEQUENT_PROFILER_OFFSET for profiler threads */
    char name[64];
} omniprof_thread_record_t;

#define OMNIPROF_SEQUENT_PROFILER_OFFSET 1000000ULL

/* ---- appended by the CPU backend (docs/cpu.md) ---------------------------------------- */

/* FUNCTION_WRAPPER operations (omniprof_buffer_tracing_api_record_t, kind FUNCTION_WRAPPER):
 * one record per wrapped call, start/end timestamps around the real function. */
typedef enum omniprof_function_wrapper_operation_t {
    OMNIPROF_FUNCTION_WRAPPER_NONE = 0,
    OMNIPROF_FUNCTION_WRAPPER_PTHREAD_CREATE,
    OMNIPROF_FUNCTION_WRAPPER_PTHREAD_JOIN,
    OMNIPROF_FUNCTION_WRAPPER_FORK,
    OMNIPROF_FUNCTION_WRAPPER_EXIT,
    OMNIPROF_FUNCTION_WRAPPER__EXIT,
    OMNIPROF_FUNCTION_WRAPPER_ABORT,
    OMNIPROF_FUNCTION_WRAPPER_MPI_INIT,
    OMNIPROF_FUNCTION_WRAPPER_MPI_INIT_THREAD,
    OMNIPROF_FUNCTION_WRAPPER_MPI_FINALIZE,
    OMNIPROF_FUNCTION_WRAPPER_PTHREAD_MUTEX_LOCK,
    OMNIPROF_FUNCTION_WRAPPER_PTHREAD_MUTEX_TRYLOCK,
    OMNIPROF_FUNCTION_WRAPPER_PTHREAD_RWLOCK_RDLOCK,
    OMNIPROF_FUNCTION_WRAPPER_PTHREAD_RWLOCK_WRLOCK,
    OMNIPROF_FUNCTION_WRAPPER_PTHREAD_BARRIER_WAIT,
    OMNIPROF_FUNCTION_WRAPPER_LAST
} omniprof_function_wrapper_operation_t;

/* REGION_PROFILE (docs/cpu.md "Components"): the statistics of one node of a thread's region
 * call tree for one measurement component, emitted by the CPU backend once, when the run ends
 * (the SDK's final flush). A node is a region (user-API range, wrapped call) under its parent
 * path on one thread; node ids are unique in the process, parent_id 0 is the thread's root. */
typedef enum omniprof_region_profile_operation_t {
    OMNIPROF_REGION_PROFILE_NONE = 0,
    OMNIPROF_REGION_PROFILE_NODE,
    OMNIPROF_REGION_PROFILE_LAST
} omniprof_region_profile_operation_t;

typedef struct omniprof_region_profile_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation; /* OMNIPROF_REGION_PROFILE_NODE */
    omniprof_thread_id_t thread_id;
    uint64_t thread_index; /* the thread's sequent value (rocprof-sys's |NN>>> prefix) */
    uint64_t node_id;
    uint64_t parent_id;
    int32_t depth;         /* 0 for a top-level region */
    uint32_t reserved;
    const char *label;     /* the region's name */
    const char *component; /* "wall_clock", "thread_cpu_clock", ... (OMNIPROF_COMPONENTS) */
    const char *units;     /* "ns", "bytes", "count" */
    uint64_t count;        /* times the region was closed */
    double sum, sum_squares, min, max;
    double self;           /* sum minus the children's values (the level itself for levels) */
} omniprof_region_profile_record_t;

/* Event names of omniprof_cpu_sample_record_t.event_values, in the sampler's order, are
 * listed by `omniprof avail --cpu-events` and given by OMNIPROF_SAMPLING_PERF_EVENTS; an event
 * the kernel refused is left out of the list (and of the values). The list the sampler uses is
 * announced by CPU_SAMPLE_EVENT records, one per event. */

/* CPU_SAMPLE_EVENT: one perf_event counter of the process's CPU samples (docs/cpu.md
 * "Counters"): event_values[index] of every CPU_SAMPLE record of this process is its count,
 * cumulative for the sampled thread since its sampler started. Emitted once per process (at
 * the backend's first flush, again in a fork child). type and config are perf_event_attr's
 * (PERF_TYPE_HARDWARE 0, SOFTWARE 1, HW_CACHE 3, RAW 4); name is as the user gave it. */
typedef enum omniprof_cpu_sample_event_operation_t {
    OMNIPROF_CPU_SAMPLE_EVENT_NONE = 0,
    OMNIPROF_CPU_SAMPLE_EVENT_COUNTER, /* a counter the samples carry */
    OMNIPROF_CPU_SAMPLE_EVENT_LAST
} omniprof_cpu_sample_event_operation_t;

typedef struct omniprof_cpu_sample_event_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation; /* OMNIPROF_CPU_SAMPLE_EVENT_COUNTER */
    uint32_t index;                         /* into omniprof_cpu_sample_record_t.event_values */
    uint32_t type;                          /* perf_event_attr.type */
    uint64_t config;                        /* perf_event_attr.config */
    const char *name;                       /* "cycles", "page-faults", "r00c0", ... */
} omniprof_cpu_sample_event_record_t;

/* ---- The CPU backend's catalog ----------------------------------------------------------------
 * Exported by libomniprof-backend-cpu.so itself (not the SDK): a client that wants the lists
 * without sampling anything (`omniprof avail --cpu-events --components`) dlopens the backend
 * with RTLD_LOCAL and calls these. Each probes nothing but what it says. */

/* One perf_event counter a CPU sample can carry (OMNIPROF_SAMPLING_PERF_EVENTS). */
typedef struct omniprof_cpu_event_info_t {
    uint64_t size;           /* sizeof(omniprof_cpu_event_info_t) */
    const char *name;        /* "task-clock", "cycles", ... */
    const char *description;
    int is_hardware;         /* needs a PMU */
    int available;           /* perf_event_open accepted it on the calling thread just now */
    const char *reason;      /* when not available: why, in words ("" otherwise) */
} omniprof_cpu_event_info_t;

/* One measurement component of the region profile (OMNIPROF_COMPONENTS). */
typedef struct omniprof_cpu_component_info_t {
    uint64_t size; /* sizeof(omniprof_cpu_component_info_t) */
    const char *name;
    const char *units;
    const char *description;
} omniprof_cpu_component_info_t;

/* cb is called once per item, in catalog order; a non-zero return stops the iteration. */
typedef int (*omniprof_cpu_event_cb_t)(const omniprof_cpu_event_info_t *info, void *data);
typedef int (*omniprof_cpu_component_cb_t)(const omniprof_cpu_component_info_t *info, void *data);
OMNIPROF_API omniprof_status_t omniprof_cpu_iterate_events(omniprof_cpu_event_cb_t cb, void *data);
OMNIPROF_API omniprof_status_t omniprof_cpu_iterate_components(omniprof_cpu_component_cb_t cb, void *data);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_CPU_H */
