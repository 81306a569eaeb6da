/* omniprof/counters.h — hardware counters, derived metrics, counter configs and the two
 * counting services (per dispatch, per device).
 *
 * Vocabulary (ROCprofiler-SDK's, docs/counters.md):
 *  - a *base counter* is what the hardware backend measures. On NVIDIA it is an NVPW metric
 *    name with its rollup, e.g. "dram__bytes_read.sum", "sm__cycles_elapsed.max",
 *    "sm__throughput.avg.pct_of_peak_sustained_elapsed"; it belongs to a chip ("GH100").
 *  - a *derived metric* is defined in metrics.xml (or at run time) by an expression over base
 *    counters, other derived metrics, numbers and device constants; it is global (valid on
 *    every chip that has its inputs).
 *  - a *constant* is a device property usable in expressions (SM_COUNT, SM_CLOCK_HZ, ...).
 *  - a *counter config* is a set of counters prepared for one agent (or chip), with the number
 *    of replay passes it needs.
 *
 * Records (category OMNIPROF_RECORD_CATEGORY_COUNTERS) delivered by the buffered dispatch
 * counting service, for each counted kernel dispatch, in this order:
 *    one OMNIPROF_COUNTER_RECORD_DISPATCH_HEADER (omniprof_counter_dispatch_header_record_t),
 *    then header.num_values OMNIPROF_COUNTER_RECORD_VALUE (omniprof_counter_value_record_t),
 *    one per requested counter and instance (derived metrics included, already evaluated),
 *    in the order the counters were given to omniprof_create_counter_config.
 * Both records carry the launching API call's correlation id at offset 16 — the same
 * correlation_id.internal as the kernel's OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH record — and
 * the dispatch id, which links the values to their header. The device counting service
 * delivers VALUE records only (dispatch_id 0). */
#ifndef OMNIPROF_COUNTERS_H
#define OMNIPROF_COUNTERS_H

#include "omniprof/fwd.h"
#include "omniprof/agent.h"

OMNIPROF_EXTERN_C_BEGIN

/* ------------------------------------------------------------------------------------------ */
/* Records                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* Declared in omniprof/kinds.def: DISPATCH_HEADER (precedes the values of one dispatch), VALUE. */
typedef enum omniprof_counter_record_kind_t {
    OMNIPROF_COUNTER_RECORD_NONE = 0,
#define OMNIPROF_COUNTER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    OMNIPROF_COUNTER_RECORD_##NAME = VALUE,
#include "omniprof/kinds.def"
    OMNIPROF_COUNTER_RECORD_LAST
} omniprof_counter_record_kind_t;

/* `operation` of counter records. */
typedef enum omniprof_counter_record_operation_t {
    OMNIPROF_COUNTER_OPERATION_NONE = 0,
    OMNIPROF_COUNTER_OPERATION_DISPATCH, /* dispatch counting service */
    OMNIPROF_COUNTER_OPERATION_DEVICE,   /* device counting service (a sample) */
    OMNIPROF_COUNTER_OPERATION_LAST
} omniprof_counter_record_operation_t;

/* One counted kernel dispatch. 136 bytes on LP64.
 * start/end: CLOCK_MONOTONIC ns. Under kernel replay the GPU timestamps of the kernel are not
 * available (the vendor zeroes them), so start is the host time of the launch call and end is
 * start + the measured GPU duration (gpu__time_duration.sum, always collected) — see
 * docs/counters.md. num_passes: replay passes the dispatch took. */
typedef struct omniprof_counter_dispatch_header_record_t {
    uint64_t size;                                  /* sizeof this struct */
    uint32_t kind;                                  /* OMNIPROF_COUNTER_RECORD_DISPATCH_HEADER */
    int32_t operation;                              /* OMNIPROF_COUNTER_OPERATION_DISPATCH */
    omniprof_async_correlation_id_t correlation_id; /* offset 16: the launching API call's ids */
    omniprof_dispatch_id_t dispatch_id;             /* the kernel dispatch record's when the backend
                                                       knows it at launch, else the service's own
                                                       number (bit 62 set); never 0 */
    omniprof_kernel_id_t kernel_id;                 /* same as the kernel dispatch record's (0 if unknown) */
    omniprof_agent_id_t agent_id;
    omniprof_thread_id_t thread_id;                 /* launching thread */
    const char *kernel_name;                        /* interned, valid for the process */
    omniprof_dim3_t grid_size;                      /* blocks per grid */
    omniprof_dim3_t block_size;                     /* threads per block */
    omniprof_timestamp_t start_timestamp;
    omniprof_timestamp_t end_timestamp;
    omniprof_counter_config_id_t config_id;         /* the config that was counted */
    uint32_t num_values;                            /* VALUE records that follow */
    uint32_t num_passes;                            /* replay passes used */
    omniprof_user_data_t user_data;                 /* what the dispatch callback set */
} omniprof_counter_dispatch_header_record_t;

/* One value of one counter for one dispatch (or one device sample). 80 bytes on LP64. */
typedef struct omniprof_counter_value_record_t {
    uint64_t size;                                  /* sizeof this struct */
    uint32_t kind;                                  /* OMNIPROF_COUNTER_RECORD_VALUE */
    int32_t operation;                              /* omniprof_counter_record_operation_t */
    omniprof_async_correlation_id_t correlation_id; /* offset 16: same as the header's (0 for device samples) */
    omniprof_dispatch_id_t dispatch_id;             /* same as the header's (0 for device samples) */
    omniprof_counter_id_t counter_id;               /* omniprof_query_counter_info(counter_id) */
    const char *counter_name;                       /* interned, valid for the process */
    double value;                                   /* evaluated value (derived metrics too) */
    uint64_t instance;                              /* instance index (0 when the counter is a scalar) */
    omniprof_agent_id_t agent_id;
} omniprof_counter_value_record_t;

/* ------------------------------------------------------------------------------------------ */
/* Counter information                                                                         */
/* ------------------------------------------------------------------------------------------ */

typedef enum omniprof_counter_type_t {
    OMNIPROF_COUNTER_TYPE_NONE = 0,
    OMNIPROF_COUNTER_TYPE_COUNTER,    /* a hardware counter with a rollup (.sum .avg .min .max ...) */
    OMNIPROF_COUNTER_TYPE_RATIO,      /* a vendor-defined ratio (.ratio, .pct, ...) */
    OMNIPROF_COUNTER_TYPE_THROUGHPUT, /* a vendor-defined throughput (% of peak) */
    OMNIPROF_COUNTER_TYPE_DERIVED,    /* an expression over other counters (metrics.xml) */
    OMNIPROF_COUNTER_TYPE_CONSTANT,   /* a device property usable in expressions */
    OMNIPROF_COUNTER_TYPE_LAST
} omniprof_counter_type_t;

typedef enum omniprof_counter_info_version_t {
    OMNIPROF_COUNTER_INFO_VERSION_NONE = 0,
    OMNIPROF_COUNTER_INFO_VERSION_0, /* omniprof_counter_info_v0_t */
    OMNIPROF_COUNTER_INFO_VERSION_LAST
} omniprof_counter_info_version_t;

/* Strings are owned by the SDK and valid until omniprof_load_counter_definition replaces the
 * definition they came from (never, for built-in ones). */
typedef struct omniprof_counter_info_v0_t {
    uint64_t size;            /* sizeof(omniprof_counter_info_v0_t) */
    omniprof_counter_id_t id;
    const char *name;         /* "dram__bytes_read.sum", "DRAM_READ_BW" */
    const char *description;  /* "" when none */
    const char *chip;         /* base counters and chip constants: "GH100"; derived: "" */
    const char *expression;   /* derived: the expression; otherwise "" */
    const char *block;        /* hardware unit ("dram", "sm", "smsp") or "" */
    const char *unit;         /* "bytes", "cycles", "nsecond", "%" or "" */
    uint32_t type;            /* omniprof_counter_type_t */
    uint8_t is_derived;
    uint8_t is_constant;
    uint16_t reserved;
} omniprof_counter_info_v0_t;

/**
 * @brief **omniprof_query_counter_info** fills `info` for a counter id.
 * @param version: OMNIPROF_COUNTER_INFO_VERSION_0. @param info: an omniprof_counter_info_v0_t
 * whose `size` the caller set (a smaller size gets a prefix of the fields).
 * @return SUCCESS; ERROR_COUNTER_NOT_FOUND (stale or unknown id); ERROR_INVALID_ARGUMENT (NULL);
 * ERROR_INCOMPATIBLE_ABI (unknown version, size < 16). Thread-safe.
 */
OMNIPROF_API omniprof_status_t omniprof_query_counter_info(omniprof_counter_id_t counter_id,
                                                           omniprof_counter_info_version_t version, void *info);

/**
 * @brief **omniprof_find_counter** resolves a name (base counter of `chip`, derived metric or
 * constant) to its id.
 * @param chip: "GH100", ... or NULL for the chip of the first GPU a launch was seen on; with no
 * such chip, derived metrics and constants still resolve, base counters give ERROR_NOT_AVAILABLE.
 * @return SUCCESS; ERROR_COUNTER_NOT_FOUND (then omniprof_suggest_counters gives the closest
 * names); ERROR_METRIC_NOT_VALID_FOR_AGENT (the chip is unknown to the backend);
 * ERROR_NOT_AVAILABLE (no hardware-counter backend in this build); ERROR_INVALID_ARGUMENT.
 */
OMNIPROF_API omniprof_status_t omniprof_find_counter(const char *chip, const char *name, omniprof_counter_id_t *id);

/**
 * @brief **omniprof_get_counter_error_string** gives the detailed message of the last failed
 * counters call on the calling thread: the unknown name with its closest matches, the
 * expression with a caret under the bad column, the pass count a mode cannot take. "" when the
 * last call succeeded. Never NULL; valid until the thread's next counters call.
 */
OMNIPROF_API const char *omniprof_get_counter_error_string(void);

/**
 * @brief **omniprof_suggest_counters** writes the closest known names to `name` (edit
 * distance), best first, into `out` (max entries; the strings are SDK-owned) and their number
 * into *count. @return SUCCESS; ERROR_INVALID_ARGUMENT.
 */
OMNIPROF_API omniprof_status_t omniprof_suggest_counters(const char *chip, const char *name, const char **out,
                                                         size_t max, size_t *count);

typedef omniprof_status_t (*omniprof_counter_iterate_cb_t)(const omniprof_counter_info_v0_t *info, void *data);

/**
 * @brief **omniprof_iterate_chip_counters** calls `cb` for every counter usable on `chip`:
 * the backend's base counters (offline, no GPU needed on NVIDIA), then the derived metrics
 * whose inputs exist there, then the constants. Stops early when cb returns non-SUCCESS.
 * @param chip: "GH100" or NULL for the first GPU's chip.
 * @param flags: OR of omniprof_counter_iterate_flag_t (0: everything).
 * @return SUCCESS; ERROR_METRIC_NOT_VALID_FOR_AGENT (unknown chip); ERROR_NOT_AVAILABLE.
 */
typedef enum omniprof_counter_iterate_flag_t {
    OMNIPROF_COUNTER_ITERATE_ALL = 0,
    OMNIPROF_COUNTER_ITERATE_BASE = (1 << 0),     /* base counters (vendor catalog) */
    OMNIPROF_COUNTER_ITERATE_DERIVED = (1 << 1),  /* derived metrics */
    OMNIPROF_COUNTER_ITERATE_CONSTANT = (1 << 2), /* constants */
    OMNIPROF_COUNTER_ITERATE_XML_BASE = (1 << 3), /* only the base counters listed in metrics.xml */
} omniprof_counter_iterate_flag_t;

OMNIPROF_API omniprof_status_t omniprof_iterate_chip_counters(const char *chip, uint32_t flags,
                                                              omniprof_counter_iterate_cb_t cb, void *data);

/**
 * @brief **omniprof_iterate_agent_supported_counters** is omniprof_iterate_chip_counters for
 * the chip of an agent. @return as above, or ERROR_AGENT_NOT_FOUND.
 */
OMNIPROF_API omniprof_status_t omniprof_iterate_agent_supported_counters(omniprof_agent_id_t agent,
                                                                         omniprof_counter_iterate_cb_t cb,
                                                                         void *data);

/** @brief **omniprof_iterate_chips** calls cb with each chip name the backend knows (offline). */
OMNIPROF_API omniprof_status_t omniprof_iterate_chips(omniprof_status_t (*cb)(const char *chip, void *data),
                                                      void *data);

typedef enum omniprof_counter_flag_t {
    OMNIPROF_COUNTER_FLAG_NONE = 0,
    OMNIPROF_COUNTER_FLAG_APPEND_DEFINITION = (1 << 0), /* add to / override the loaded definitions */
} omniprof_counter_flag_t;

/**
 * @brief **omniprof_load_counter_definition** loads metrics XML (the layout of
 * share/omniprof/metrics.xml) from memory. With APPEND_DEFINITION, its metrics are added to the
 * loaded ones and a metric of the same name replaces the old one; without it, it replaces the
 * definitions (the built-in file is then not used).
 * @param errbuf: optional, receives a message naming the file position and the problem
 * (an expression error shows the expression and a caret under the column).
 * @return SUCCESS; ERROR_PARSE (bad XML, bad expression, reference cycle); ERROR_INVALID_ARGUMENT.
 */
OMNIPROF_API omniprof_status_t omniprof_load_counter_definition(const char *xml, size_t size, uint32_t flags,
                                                                char *errbuf, size_t errlen);

/**
 * @brief **omniprof_create_counter** defines a derived metric at run time.
 * @param expression: in the language of docs/counters.md. @param description: may be NULL.
 * @return SUCCESS; ERROR_PARSE (errbuf says where); ERROR_INVALID_ARGUMENT.
 */
OMNIPROF_API omniprof_status_t omniprof_create_counter(const char *name, const char *expression,
                                                       const char *description, omniprof_counter_id_t *id,
                                                       char *errbuf, size_t errlen);

/* ------------------------------------------------------------------------------------------ */
/* Counter configs                                                                             */
/* ------------------------------------------------------------------------------------------ */

/**
 * @brief **omniprof_create_counter_config** prepares a set of counters for an agent: derived
 * metrics are expanded into the base counters they need (plus gpu__time_duration.sum on
 * NVIDIA), and the backend plans the passes.
 * @param agent: a GPU agent; handle 0 with `chip` set in omniprof_create_counter_config_for_chip.
 * @param existing: a config to extend (its handle stays valid) or handle 0 for a new one.
 * @return SUCCESS; ERROR_COUNTER_NOT_FOUND; ERROR_AGENT_NOT_FOUND; ERROR_NOT_AVAILABLE (no
 * backend); ERROR_EXCEEDS_HW_LIMIT (more passes than OMNIPROF_PMC_MAX_PASSES allows);
 * ERROR_OUT_OF_RESOURCES; ERROR_INVALID_ARGUMENT.
 */
OMNIPROF_API omniprof_status_t omniprof_create_counter_config(omniprof_agent_id_t agent,
                                                              const omniprof_counter_id_t *counters,
                                                              size_t num_counters,
                                                              omniprof_counter_config_id_t *config);

/** @brief **omniprof_create_counter_config_for_chip**: the same, offline, for a chip name. */
OMNIPROF_API omniprof_status_t omniprof_create_counter_config_for_chip(const char *chip,
                                                                       const omniprof_counter_id_t *counters,
                                                                       size_t num_counters,
                                                                       omniprof_counter_config_id_t *config);

/**
 * @brief **omniprof_query_counter_config_passes** gives the replay passes a config needs and
 * the base counters it collects. @return SUCCESS; ERROR_INVALID_ARGUMENT (stale config).
 */
OMNIPROF_API omniprof_status_t omniprof_query_counter_config_passes(omniprof_counter_config_id_t config,
                                                                    size_t *num_passes, size_t *num_base_counters);

/** @brief **omniprof_destroy_counter_config** frees a config; handle 0 and stale ones are
 * ignored (SUCCESS). A config in use by a service stays alive until that service stops. */
OMNIPROF_API omniprof_status_t omniprof_destroy_counter_config(omniprof_counter_config_id_t config);

/* ------------------------------------------------------------------------------------------ */
/* Dispatch counting service                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* What the dispatch callback sees of a kernel about to be launched. */
typedef struct omniprof_dispatch_counting_service_data_t {
    uint64_t size;
    omniprof_async_correlation_id_t correlation_id;
    omniprof_dispatch_id_t dispatch_id;
    omniprof_kernel_id_t kernel_id;
    omniprof_agent_id_t agent_id;
    const char *kernel_name;
    omniprof_dim3_t grid_size;
    omniprof_dim3_t block_size;
    const char *chip;          /* chip of the launching device ("GH100"): pick a config made for it */
} omniprof_dispatch_counting_service_data_t;

/* Called on the launching thread before the launch. Set *config to count this dispatch
 * (handle 0: do not count it); *user_data is copied into the header record. */
typedef void (*omniprof_dispatch_counting_service_cb_t)(const omniprof_dispatch_counting_service_data_t *dispatch,
                                                        omniprof_counter_config_id_t *config,
                                                        omniprof_user_data_t *user_data, void *data);

/* Callback mode: the values of one dispatch, right after it completed. */
typedef void (*omniprof_dispatch_counting_record_cb_t)(const omniprof_counter_dispatch_header_record_t *header,
                                                       const omniprof_counter_value_record_t *values,
                                                       size_t num_values, void *data);

/**
 * @brief **omniprof_configure_buffer_dispatch_counting_service** counts the dispatches the
 * callback selects and writes a DISPATCH_HEADER record and VALUE records into `buffer`.
 * Only one active context counts dispatches: when several are active, the first created wins
 * and the conflict (CONTEXT_CONFLICT) is logged once. The hardware-counter backend is started
 * here (its launch hook must precede the first launch); if it cannot start, it says why once and
 * the service stays idle (the call still succeeds).
 * @return SUCCESS; ERROR_CONTEXT_NOT_FOUND; ERROR_BUFFER_NOT_FOUND (or a buffer of another
 * context: ERROR_INVALID_ARGUMENT); ERROR_SERVICE_ALREADY_CONFIGURED; ERROR_CONTEXT_CONFLICT (the
 * context counts devices); ERROR_CONFIGURATION_LOCKED; ERROR_INVALID_ARGUMENT.
 */
OMNIPROF_API omniprof_status_t omniprof_configure_buffer_dispatch_counting_service(
    omniprof_context_id_t context, omniprof_buffer_id_t buffer, omniprof_dispatch_counting_service_cb_t callback,
    void *data);

/** @brief **omniprof_configure_callback_dispatch_counting_service**: values are handed to
 * record_callback instead of a buffer. Statuses as above. */
OMNIPROF_API omniprof_status_t omniprof_configure_callback_dispatch_counting_service(
    omniprof_context_id_t context, omniprof_dispatch_counting_service_cb_t callback, void *callback_data,
    omniprof_dispatch_counting_record_cb_t record_callback, void *record_callback_data);

/* ------------------------------------------------------------------------------------------ */
/* Device counting service (standalone model: start, read any number of times, stop)          */
/* ------------------------------------------------------------------------------------------ */

/* Called when the context starts: choose the config for `agent` with set_config(config, data_ctx). */
typedef omniprof_status_t (*omniprof_device_counting_agent_cb_t)(omniprof_context_id_t context,
                                                                 omniprof_agent_id_t agent,
                                                                 omniprof_status_t (*set_config)(
                                                                     omniprof_context_id_t context,
                                                                     omniprof_counter_config_id_t config),
                                                                 void *data);

/**
 * @brief **omniprof_configure_device_counting_service** counts `agent` over time windows:
 * counting starts when the context starts, omniprof_sample_device_counting_service reads the
 * values accumulated since the previous read (or the start), and it stops with the context.
 * @param buffer: where samples go as VALUE records (OMNIPROF_BUFFER_NONE: only the caller's
 * array of omniprof_sample_device_counting_service). Only single-pass configs are allowed
 * (ERROR_EXCEEDS_HW_LIMIT otherwise): a window cannot be replayed.
 * @return SUCCESS; ERROR_CONTEXT_NOT_FOUND; ERROR_AGENT_NOT_FOUND; ERROR_CONTEXT_CONFLICT
 * (the context also counts dispatches); ERROR_SERVICE_ALREADY_CONFIGURED; ERROR_INVALID_ARGUMENT.
 */
OMNIPROF_API omniprof_status_t omniprof_configure_device_counting_service(omniprof_context_id_t context,
                                                                          omniprof_buffer_id_t buffer,
                                                                          omniprof_agent_id_t agent,
                                                                          omniprof_device_counting_agent_cb_t cb,
                                                                          void *data);

typedef enum omniprof_counter_sample_flag_t {
    OMNIPROF_COUNTER_SAMPLE_FLAG_NONE = 0,
    OMNIPROF_COUNTER_SAMPLE_FLAG_ASYNC = (1 << 0), /* do not wait: values go to the buffer only */
} omniprof_counter_sample_flag_t;

/**
 * @brief **omniprof_sample_device_counting_service** reads the counters of the window that
 * ends now and starts the next one.
 * @param out_records: caller array of *count entries (may be NULL with ASYNC); on return
 * *count holds the number written (or needed, with ERROR_OUT_OF_RESOURCES).
 * @return SUCCESS; ERROR_CONTEXT_NOT_FOUND; ERROR_CONTEXT_NOT_STARTED; ERROR_PERMISSION_DENIED
 * (profiling restricted to admin users: NVreg_RestrictProfilingToAdminUsers);
 * ERROR_BACKEND_BUSY (another profiler holds the counters); ERROR_NOT_AVAILABLE.
 */
OMNIPROF_API omniprof_status_t omniprof_sample_device_counting_service(omniprof_context_id_t context,
                                                                       omniprof_user_data_t user_data,
                                                                       uint32_t flags,
                                                                       omniprof_counter_value_record_t *out_records,
                                                                       size_t *count);

/* ------------------------------------------------------------------------------------------ */
/* omniprof's own tool                                                                         */
/* ------------------------------------------------------------------------------------------ */

/**
 * @brief **omniprof_configure_pmc_from_settings** is what omniprof's tool calls when
 * OMNIPROF_PMC is set: it configures the buffered dispatch counting service on (context,
 * buffer) for the counters of OMNIPROF_PMC, counting the dispatches that pass
 * OMNIPROF_KERNEL_INCLUDE_REGEX / OMNIPROF_KERNEL_EXCLUDE_REGEX / OMNIPROF_KERNEL_ITERATION_RANGE
 * (and at most OMNIPROF_PMC_MAX_DISPATCHES), in OMNIPROF_PMC_REPLAY_MODE. When the GPU's chip
 * is known already, the set is checked now (unknown names with their closest matches, pass
 * count against the mode); otherwise at the first dispatch, where a failure turns counting off
 * with one message and the program runs on.
 * @param errbuf: optional, receives the reason of a failure.
 * @return SUCCESS; ERROR_INVALID_ARGUMENT (OMNIPROF_PMC empty); ERROR_PARSE (bad regex or
 * iteration range); ERROR_COUNTER_NOT_FOUND (set not collectable); the statuses of
 * omniprof_configure_buffer_dispatch_counting_service.
 */
OMNIPROF_API omniprof_status_t omniprof_configure_pmc_from_settings(omniprof_context_id_t context,
                                                                    omniprof_buffer_id_t buffer, char *errbuf,
                                                                    size_t errlen);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_COUNTERS_H */
