/* omniprof/fwd.h — status codes, handles, enums and the record header shared by the whole API.
 *
 * ABI rules (docs/sdk.md, "ABI"): enums only grow at their end, before *_LAST (record kinds,
 * callback kinds and intercept tables are rows of omniprof/kinds.def: a new one is a row
 * appended with the next value); every payload struct begins with `uint64_t size` (sizeof the
 * struct the producer was built with, plus any inline variable-length tail); fields are only
 * appended. Handles are 64-bit ids wrapped in
 * structs so that a stale or foreign id is detected (`*_NOT_FOUND`), never dereferenced. */
#ifndef OMNIPROF_FWD_H
#define OMNIPROF_FWD_H

#include <stddef.h>
#include <stdint.h>

#include "omniprof/defines.h"

OMNIPROF_EXTERN_C_BEGIN

/* Status of every call. 0 is success; omniprof_get_status_string() names each one. */
typedef enum omniprof_status_t {
    OMNIPROF_STATUS_SUCCESS = 0,
    OMNIPROF_STATUS_ERROR,                        /* generic failure */
    OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND,      /* stale or unknown context id */
    OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND,       /* stale or unknown buffer id */
    OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND,         /* unknown tracing kind */
    OMNIPROF_STATUS_ERROR_OPERATION_NOT_FOUND,    /* unknown operation of a known kind */
    OMNIPROF_STATUS_ERROR_THREAD_NOT_FOUND,       /* unknown callback thread id */
    OMNIPROF_STATUS_ERROR_AGENT_NOT_FOUND,        /* unknown agent id */
    OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND,      /* unknown counter or metric */
    OMNIPROF_STATUS_ERROR_CONTEXT_ERROR,          /* a context could not be started */
    OMNIPROF_STATUS_ERROR_CONTEXT_INVALID,        /* context configuration is inconsistent */
    OMNIPROF_STATUS_ERROR_CONTEXT_NOT_STARTED,    /* operation needs a started context */
    OMNIPROF_STATUS_ERROR_CONTEXT_CONFLICT,       /* another active context holds the service */
    OMNIPROF_STATUS_ERROR_BUFFER_BUSY,            /* buffer is being flushed / callback running */
    OMNIPROF_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED, /* one configuration per (context, kind) */
    OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED,   /* configuration closed after initialize */
    OMNIPROF_STATUS_ERROR_NOT_IMPLEMENTED,        /* not available in this build */
    OMNIPROF_STATUS_ERROR_INCOMPATIBLE_ABI,       /* struct size or version not understood */
    OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT,       /* NULL, zero size, out of range */
    OMNIPROF_STATUS_ERROR_FINALIZED,              /* the SDK has finalized */
    OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES,       /* memory, threads or descriptors exhausted */
    OMNIPROF_STATUS_ERROR_NOT_AVAILABLE,          /* backend or device absent (no GPU, no driver) */
    OMNIPROF_STATUS_ERROR_PERMISSION_DENIED,      /* the OS or driver refused */
    OMNIPROF_STATUS_ERROR_BACKEND_BUSY,           /* another profiler holds the vendor facility */
    OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT, /* metric unknown on that chip */
    OMNIPROF_STATUS_ERROR_EXCEEDS_HW_LIMIT,       /* counter set needs more passes than allowed */
    OMNIPROF_STATUS_ERROR_PARSE,                  /* bad expression, XML or option text */
    OMNIPROF_STATUS_ERROR_IO,                     /* file or database I/O failed */
    OMNIPROF_STATUS_LAST
} omniprof_status_t;

typedef uint64_t omniprof_timestamp_t;  /* CLOCK_MONOTONIC nanoseconds */
typedef uint64_t omniprof_thread_id_t;  /* OS thread id (gettid) */
typedef int32_t omniprof_tracing_operation_t;
typedef uint64_t omniprof_kernel_id_t;
typedef uint64_t omniprof_dispatch_id_t;

typedef struct omniprof_context_id_t { uint64_t handle; } omniprof_context_id_t;
typedef struct omniprof_buffer_id_t { uint64_t handle; } omniprof_buffer_id_t;
typedef struct omniprof_callback_thread_t { uint64_t handle; } omniprof_callback_thread_t;
typedef struct omniprof_agent_id_t { uint64_t handle; } omniprof_agent_id_t;
typedef struct omniprof_stream_id_t { uint64_t handle; } omniprof_stream_id_t;
typedef struct omniprof_counter_id_t { uint64_t handle; } omniprof_counter_id_t;
typedef struct omniprof_counter_config_id_t { uint64_t handle; } omniprof_counter_config_id_t;

/* A context id with handle 0 is never valid. */
#define OMNIPROF_CONTEXT_NONE ((omniprof_context_id_t){0})
#define OMNIPROF_BUFFER_NONE ((omniprof_buffer_id_t){0})

typedef union omniprof_user_data_t {
    uint64_t value;
    void *ptr;
} omniprof_user_data_t;

/* internal: SDK-wide monotonically increasing id of one API call (never 0);
 * external: the value on top of the thread's external-correlation stack (0 if none);
 * ancestor: internal id of the enclosing traced call on the same thread (0 at top level). */
typedef struct omniprof_correlation_id_t {
    uint64_t internal;
    omniprof_user_data_t external;
    uint64_t ancestor;
} omniprof_correlation_id_t;

/* For asynchronous activity (kernels, copies): the launching call's ids. */
typedef struct omniprof_async_correlation_id_t {
    uint64_t internal;
    omniprof_user_data_t external;
} omniprof_async_correlation_id_t;

typedef enum omniprof_buffer_policy_t {
    OMNIPROF_BUFFER_POLICY_NONE = 0,
    OMNIPROF_BUFFER_POLICY_DISCARD,  /* a full buffer drops the record and counts it */
    OMNIPROF_BUFFER_POLICY_LOSSLESS, /* a full buffer makes the producer wait for space */
    OMNIPROF_BUFFER_POLICY_LAST
} omniprof_buffer_policy_t;

typedef enum omniprof_callback_phase_t {
    OMNIPROF_CALLBACK_PHASE_NONE = 0,
    OMNIPROF_CALLBACK_PHASE_ENTER,
    OMNIPROF_CALLBACK_PHASE_EXIT,
    OMNIPROF_CALLBACK_PHASE_LAST
} omniprof_callback_phase_t;
#define OMNIPROF_CALLBACK_PHASE_LOAD OMNIPROF_CALLBACK_PHASE_ENTER
#define OMNIPROF_CALLBACK_PHASE_UNLOAD OMNIPROF_CALLBACK_PHASE_EXIT

/* Record categories (the low half of a record header's hash). */
typedef enum omniprof_record_category_t {
    OMNIPROF_RECORD_CATEGORY_NONE = 0,
    OMNIPROF_RECORD_CATEGORY_TRACING,   /* kind is an omniprof_buffer_tracing_kind_t */
    OMNIPROF_RECORD_CATEGORY_COUNTERS,  /* kind is an omniprof_counter_record_kind_t */
    OMNIPROF_RECORD_CATEGORY_SAMPLING,  /* reserved (GPU PC sampling); CPU samples are TRACING/CPU_SAMPLE */
    OMNIPROF_RECORD_CATEGORY_LAST
} omniprof_record_category_t;

/* Buffer tracing kinds: each names the API or activity it comes from. Declared in
 * omniprof/kinds.def (one row per kind: value, name, payload struct, ...). */
typedef enum omniprof_buffer_tracing_kind_t {
    OMNIPROF_BUFFER_TRACING_NONE = 0,
#define OMNIPROF_BUFFER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    OMNIPROF_BUFFER_TRACING_##NAME = VALUE,
#include "omniprof/kinds.def"
    OMNIPROF_BUFFER_TRACING_LAST
} omniprof_buffer_tracing_kind_t;

/* Callback tracing kinds (synchronous, ENTER/EXIT on the calling thread); omniprof/kinds.def. */
typedef enum omniprof_callback_tracing_kind_t {
    OMNIPROF_CALLBACK_TRACING_NONE = 0,
#define OMNIPROF_CALLBACK_KIND(VALUE, NAME, BUFFER_KIND, PAYLOAD) OMNIPROF_CALLBACK_TRACING_##NAME = VALUE,
#include "omniprof/kinds.def"
    OMNIPROF_CALLBACK_TRACING_LAST
} omniprof_callback_tracing_kind_t;

/* The header the buffer callback receives for each record.
 * hash == category | ((uint64_t)kind << 32). payload points into the buffer and is valid only
 * during the callback. */
typedef struct omniprof_record_header_t {
    union {
        struct {
            uint32_t category;
            uint32_t kind;
        };
        uint64_t hash;
    };
    void *payload;
} omniprof_record_header_t;

static inline uint64_t omniprof_record_header_compute_hash(uint32_t category, uint32_t kind)
{
    return (uint64_t)category | ((uint64_t)kind << 32);
}

/* Intercept tables the SDK can hand to a tool (bitmask); omniprof/kinds.def. */
typedef enum omniprof_intercept_table_t {
    OMNIPROF_INTERCEPT_TABLE_NONE = 0,
#define OMNIPROF_INTERCEPT_TABLE(BIT, NAME, TABLE_NAME) OMNIPROF_INTERCEPT_TABLE_##NAME = (1 << (BIT)),
#include "omniprof/kinds.def"
#define OMNIPROF_INTERCEPT_TABLE(BIT, NAME, TABLE_NAME) +1
    OMNIPROF_INTERCEPT_TABLE_LAST = (1 << (0
#include "omniprof/kinds.def"
                                          ))
} omniprof_intercept_table_t;

/* Libraries that may create internal threads (bitmask). */
typedef enum omniprof_runtime_library_t {
    OMNIPROF_LIBRARY_NONE = 0,
    OMNIPROF_LIBRARY = (1 << 0),        /* the SDK itself (callback threads, writers) */
    OMNIPROF_LIBRARY_CUDA = (1 << 1),   /* CUDA/CUPTI threads created for profiling */
    OMNIPROF_LIBRARY_LAST = (1 << 2)
} omniprof_runtime_library_t;

typedef enum omniprof_agent_type_t {
    OMNIPROF_AGENT_TYPE_NONE = 0,
    OMNIPROF_AGENT_TYPE_CPU,
    OMNIPROF_AGENT_TYPE_GPU,
    OMNIPROF_AGENT_TYPE_LAST
} omniprof_agent_type_t;

typedef struct omniprof_dim3_t {
    uint32_t x, y, z;
} omniprof_dim3_t;

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_FWD_H */
