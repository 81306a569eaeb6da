/* omniprof/tracing.h — tracing services (buffered and callback), kind and operation names,
 * argument iteration, and the record payloads common to every API kind.
 *
 * Operations: every kind has operations numbered from 1 (0 is "none"); for the CUDA API kinds
 * they are CUPTI's callback ids, for the marker kind omniprof_marker_operation_t. */
#ifndef OMNIPROF_TRACING_H
#define OMNIPROF_TRACING_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

/* ------------------------------------------------------------------------------------------ */
/* Argument values of API records (CUDA launches, copies, allocations; wrapped functions).     */

typedef enum omniprof_arg_type_t {
    OMNIPROF_ARG_TYPE_NONE = 0,
    OMNIPROF_ARG_TYPE_INT,     /* value.i64 */
    OMNIPROF_ARG_TYPE_UINT,    /* value.u64 */
    OMNIPROF_ARG_TYPE_DOUBLE,  /* value.f64 */
    OMNIPROF_ARG_TYPE_POINTER, /* value.u64 holds the address; never dereferenced */
    OMNIPROF_ARG_TYPE_STRING,  /* value.str: static or SDK-interned, valid for the process */
    OMNIPROF_ARG_TYPE_LAST
} omniprof_arg_type_t;

typedef struct omniprof_arg_t {
    const char *name; /* static string, e.g. "gridDimX" */
    uint32_t type;    /* omniprof_arg_type_t */
    uint32_t reserved;
    union {
        int64_t i64;
        uint64_t u64;
        double f64;
        const char *str;
    } value;
} omniprof_arg_t;

/* Return 0 to continue, non-zero to stop. value_str is the value printed as text. */
typedef int (*omniprof_arg_iterate_cb_t)(uint32_t kind, omniprof_tracing_operation_t operation,
                                         uint32_t arg_index, const omniprof_arg_t *arg,
                                         const char *value_str, void *data);

/* ------------------------------------------------------------------------------------------ */
/* Buffer record payloads common to API kinds.                                                 */

/* CUDA_RUNTIME_API, CUDA_DRIVER_API, FUNCTION_WRAPPER. `num_args` arguments follow inline. */
typedef struct omniprof_buffer_tracing_api_record_t {
    uint64_t size;
    uint32_t kind; /* omniprof_buffer_tracing_kind_t */
    omniprof_tracing_operation_t operation;
    omniprof_correlation_id_t correlation_id;
    omniprof_timestamp_t start_timestamp;
    omniprof_timestamp_t end_timestamp;
    omniprof_thread_id_t thread_id;
    uint32_t num_args;
    int32_t return_value; /* CUresult / cudaError_t / errno-style, 0 if none */
    omniprof_arg_t args[];
} omniprof_buffer_tracing_api_record_t;

typedef enum omniprof_marker_operation_t {
    OMNIPROF_MARKER_OP_NONE = 0,
    OMNIPROF_MARKER_OP_MARK,           /* instant */
    OMNIPROF_MARKER_OP_RANGE_PUSH,     /* thread range begin */
    OMNIPROF_MARKER_OP_RANGE_POP,      /* thread range end */
    OMNIPROF_MARKER_OP_RANGE_START,    /* process range begin (returns an id) */
    OMNIPROF_MARKER_OP_RANGE_STOP,     /* process range end */
    OMNIPROF_MARKER_OP_PAUSE,          /* profiler pause */
    OMNIPROF_MARKER_OP_RESUME,         /* profiler resume */
    OMNIPROF_MARKER_OP_NAME_THREAD,    /* name the OS thread */
    OMNIPROF_MARKER_OP_PROGRESS,       /* throughput progress point */
    OMNIPROF_MARKER_OP_PROGRESS_BEGIN, /* latency progress point begin */
    OMNIPROF_MARKER_OP_PROGRESS_END,   /* latency progress point end */
    OMNIPROF_MARKER_OP_NAME_CATEGORY,  /* NVTX category / domain naming */
    OMNIPROF_MARKER_OP_LAST
} omniprof_marker_operation_t;

/* MARKER_RANGE_API operations: one record per completed range or mark. */
typedef enum omniprof_marker_range_operation_t {
    OMNIPROF_MARKER_RANGE_OP_NONE = 0,
    OMNIPROF_MARKER_RANGE_OP_THREAD_RANGE,  /* push .. pop on one thread */
    OMNIPROF_MARKER_RANGE_OP_PROCESS_RANGE, /* start .. stop, possibly across threads */
    OMNIPROF_MARKER_RANGE_OP_MARK,          /* a mark, start == end */
    OMNIPROF_MARKER_RANGE_OP_LAST
} omniprof_marker_range_operation_t;

typedef enum omniprof_marker_source_t {
    OMNIPROF_MARKER_SOURCE_USER_API = 0, /* libomniprof-user */
    OMNIPROF_MARKER_SOURCE_NVTX = 1,     /* NVTX through the CUDA backend */
    OMNIPROF_MARKER_SOURCE_LAST
} omniprof_marker_source_t;

#define OMNIPROF_MARKER_MESSAGE_MAX 4096 /* longer messages are truncated (and marked "...") */

/* MARKER_API (one per call) and MARKER_RANGE_API (one per range). message is inline,
 * NUL-terminated, message_length bytes without the NUL; size covers it. */
typedef struct omniprof_buffer_tracing_marker_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation;
    omniprof_correlation_id_t correlation_id;
    omniprof_timestamp_t start_timestamp; /* per-call records: start == end for instant calls */
    omniprof_timestamp_t end_timestamp;
    omniprof_thread_id_t thread_id;       /* for process ranges: the thread that started it */
    omniprof_thread_id_t end_thread_id;   /* thread that ended the range (== thread_id mostly) */
    uint64_t range_id;                    /* start/stop id; 0 for push/pop */
    int32_t nesting_level;                /* push/pop: level of the range, 0 = outermost (what
                                           * omniprof_range_push returned); -1 n/a */
    uint32_t source;                      /* omniprof_marker_source_t */
    uint64_t domain_id;                   /* NVTX domain handle, 0 for the default domain */
    uint32_t message_length;
    uint32_t reserved;
    char message[];
} omniprof_buffer_tracing_marker_record_t;

/* CORRELATION_ID_RETIREMENT: the internal id will appear in no further record. */
typedef struct omniprof_buffer_tracing_correlation_id_retirement_record_t {
    uint64_t size;
    uint32_t kind;
    uint32_t reserved;
    omniprof_timestamp_t timestamp;
    uint64_t internal_correlation_id;
} omniprof_buffer_tracing_correlation_id_retirement_record_t;

/* ------------------------------------------------------------------------------------------ */
/* Callback tracing.                                                                           */

typedef struct omniprof_callback_tracing_record_t {
    omniprof_context_id_t context_id;
    omniprof_thread_id_t thread_id;
    omniprof_correlation_id_t correlation_id;
    uint32_t kind; /* omniprof_callback_tracing_kind_t */
    omniprof_tracing_operation_t operation;
    omniprof_callback_phase_t phase;
    void *payload; /* kind-specific; see omniprof_callback_tracing_api_data_t */
} omniprof_callback_tracing_record_t;

/* payload of the API kinds: args point at the call's own arguments (a vendor params struct for
 * CUDA: see cuda.h), retval at its return value (valid in EXIT). */
typedef struct omniprof_callback_tracing_api_data_t {
    uint64_t size;
    const char *function_name;
    const void *args;    /* vendor arguments struct, e.g. cuLaunchKernel_params */
    const void *retval;  /* NULL in ENTER */
    const char *symbol_name; /* kernel name for launches, else NULL */
    uint32_t num_args;   /* decoded arguments below (launch, copy, alloc calls) */
    uint32_t reserved;
    const omniprof_arg_t *decoded_args;
} omniprof_callback_tracing_api_data_t;

/* user_data is the same storage in ENTER and EXIT of one call for one context. */
typedef void (*omniprof_callback_tracing_cb_t)(omniprof_callback_tracing_record_t record,
                                               omniprof_user_data_t *user_data, void *callback_data);

/**
 * @brief **omniprof_configure_callback_tracing_service** calls `callback` at ENTER and EXIT of
 * every operation of `kind` (or the `operations` listed) while `context` is active.
 * @param operations: NULL (and operations_count 0) for all.
 * @return SUCCESS; ERROR_CONTEXT_NOT_FOUND; ERROR_KIND_NOT_FOUND; ERROR_OPERATION_NOT_FOUND;
 * ERROR_INVALID_ARGUMENT (NULL callback); ERROR_SERVICE_ALREADY_CONFIGURED (same context and
 * kind twice); ERROR_CONFIGURATION_LOCKED.
 */
OMNIPROF_API omniprof_status_t omniprof_configure_callback_tracing_service(
    omniprof_context_id_t context, omniprof_callback_tracing_kind_t kind,
    const omniprof_tracing_operation_t *operations, size_t operations_count,
    omniprof_callback_tracing_cb_t callback, void *callback_args);

/**
 * @brief **omniprof_configure_buffer_tracing_service** sends records of `kind` (or of the
 * `operations` listed) to `buffer` while `context` is active.
 * @return SUCCESS; ERROR_CONTEXT_NOT_FOUND; ERROR_BUFFER_NOT_FOUND; ERROR_KIND_NOT_FOUND;
 * ERROR_OPERATION_NOT_FOUND; ERROR_SERVICE_ALREADY_CONFIGURED; ERROR_CONFIGURATION_LOCKED.
 */
OMNIPROF_API omniprof_status_t omniprof_configure_buffer_tracing_service(
    omniprof_context_id_t context, omniprof_buffer_tracing_kind_t kind,
    const omniprof_tracing_operation_t *operations, size_t operations_count, omniprof_buffer_id_t buffer);

/* ------------------------------------------------------------------------------------------ */
/* Names and iteration. Names are static strings, valid for the process. Operation names of a */
/* backend that is not built (no CUDA toolkit) give ERROR_NOT_AVAILABLE.                       */

OMNIPROF_API omniprof_status_t omniprof_query_buffer_tracing_kind_name(omniprof_buffer_tracing_kind_t kind,
                                                                       const char **name, uint64_t *name_len);
OMNIPROF_API omniprof_status_t omniprof_query_buffer_tracing_kind_operation_name(
    omniprof_buffer_tracing_kind_t kind, omniprof_tracing_operation_t operation, const char **name,
    uint64_t *name_len);
OMNIPROF_API omniprof_status_t omniprof_query_callback_tracing_kind_name(omniprof_callback_tracing_kind_t kind,
                                                                         const char **name, uint64_t *name_len);
OMNIPROF_API omniprof_status_t omniprof_query_callback_tracing_kind_operation_name(
    omniprof_callback_tracing_kind_t kind, omniprof_tracing_operation_t operation, const char **name,
    uint64_t *name_len);

/* Return 0 to continue, non-zero to stop. */
typedef int (*omniprof_buffer_tracing_kind_cb_t)(omniprof_buffer_tracing_kind_t kind, void *data);
typedef int (*omniprof_buffer_tracing_kind_operation_cb_t)(omniprof_buffer_tracing_kind_t kind,
                                                           omniprof_tracing_operation_t operation, void *data);
typedef int (*omniprof_callback_tracing_kind_cb_t)(omniprof_callback_tracing_kind_t kind, void *data);
typedef int (*omniprof_callback_tracing_kind_operation_cb_t)(omniprof_callback_tracing_kind_t kind,
                                                             omniprof_tracing_operation_t operation, void *data);

OMNIPROF_API omniprof_status_t omniprof_iterate_buffer_tracing_kinds(omniprof_buffer_tracing_kind_cb_t callback,
                                                                     void *data);
OMNIPROF_API omniprof_status_t omniprof_iterate_buffer_tracing_kind_operations(
    omniprof_buffer_tracing_kind_t kind, omniprof_buffer_tracing_kind_operation_cb_t callback, void *data);
OMNIPROF_API omniprof_status_t omniprof_iterate_callback_tracing_kinds(omniprof_callback_tracing_kind_cb_t callback,
                                                                       void *data);
OMNIPROF_API omniprof_status_t omniprof_iterate_callback_tracing_kind_operations(
    omniprof_callback_tracing_kind_t kind, omniprof_callback_tracing_kind_operation_cb_t callback, void *data);

/**
 * @brief **omniprof_iterate_buffer_tracing_record_args** calls `callback` for each argument a
 * record carries (API records' inline args; the fields of GPU activity records: grid, block,
 * bytes, ...). @return SUCCESS; ERROR_INVALID_ARGUMENT (NULL); ERROR_KIND_NOT_FOUND.
 */
OMNIPROF_API omniprof_status_t omniprof_iterate_buffer_tracing_record_args(const omniprof_record_header_t *header,
                                                                           omniprof_arg_iterate_cb_t callback,
                                                                           void *data);

/** @brief **omniprof_iterate_callback_tracing_record_args**: the decoded arguments of a callback record. */
OMNIPROF_API omniprof_status_t omniprof_iterate_callback_tracing_record_args(
    const omniprof_callback_tracing_record_t *record, omniprof_arg_iterate_cb_t callback, void *data);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_TRACING_H */
