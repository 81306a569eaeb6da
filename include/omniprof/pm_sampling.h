/* omniprof/pm_sampling.h — PM sampling: device-wide performance counters read at a fixed time
 * interval, independent of kernel boundaries (what AMD calls the streaming performance monitor,
 * SPM). On NVIDIA GPUs it is CUPTI's PM Sampling API: the hardware writes one sample of every
 * configured metric per interval into a device buffer; the backend decodes it periodically and
 * delivers one OMNIPROF_BUFFER_TRACING_PM_SAMPLE record per (sample window, metric).
 *
 * Metrics are CUPTI/NVPW metric names with their rollup (`dram__bytes_read.sum`,
 * `sm__cycles_active.avg`, `gr__cycles_active.avg`, `dram__throughput.avg.pct_of_peak_sustained_elapsed`).
 * A set is collected in ONE pass (PM sampling has no replay): omniprof_check_pm_sampling_metrics
 * says before a run whether a set fits, offline, from the chip name alone.
 *
 * One configuration per process: the first context that configures the service decides the
 * metrics and the interval; another context asking for other values gets
 * ERROR_CONTEXT_CONFLICT. */
#ifndef OMNIPROF_PM_SAMPLING_H
#define OMNIPROF_PM_SAMPLING_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

#define OMNIPROF_PM_SAMPLING_MAX_METRICS 64
#define OMNIPROF_PM_SAMPLING_MIN_INTERVAL_NS 1000ull        /* 1 µs */
#define OMNIPROF_PM_SAMPLING_MAX_INTERVAL_NS 1000000000ull  /* 1 s */

/**
 * @brief **omniprof_configure_pm_sampling_service** samples `metrics` on GPU `agent` (handle 0:
 * every GPU) every `interval_ns` nanoseconds while the process runs, into `buffer` as
 * OMNIPROF_BUFFER_TRACING_PM_SAMPLE records. Sampling starts when the program creates its
 * first CUDA context on a device. Call during configuration; the names are copied.
 * @return SUCCESS; ERROR_CONTEXT_NOT_FOUND; ERROR_BUFFER_NOT_FOUND; ERROR_INVALID_ARGUMENT (no
 *         metric, more than OMNIPROF_PM_SAMPLING_MAX_METRICS, an empty name, interval outside
 *         [MIN, MAX]); ERROR_CONTEXT_CONFLICT; ERROR_CONFIGURATION_LOCKED;
 *         ERROR_SERVICE_ALREADY_CONFIGURED. Metric names are checked by the backend when it
 *         starts (a bad set logs one line and PM sampling stays off); check them before with
 *         omniprof_check_pm_sampling_metrics.
 */
OMNIPROF_API omniprof_status_t omniprof_configure_pm_sampling_service(omniprof_context_id_t context,
                                                                      omniprof_agent_id_t agent,
                                                                      const char *const *metrics, size_t num_metrics,
                                                                      uint64_t interval_ns, omniprof_buffer_id_t buffer,
                                                                      uint32_t flags);

/* One metric PM sampling can collect on a chip (a base name: add a rollup such as ".sum",
 * ".avg", ".max" or ".avg.pct_of_peak_sustained_elapsed" to collect it). */
typedef struct omniprof_pm_sampling_metric_t {
    uint64_t size;           /* sizeof this struct */
    const char *name;        /* base name, e.g. "dram__bytes_read" */
    const char *description; /* may be "" */
    const char *unit;        /* dimension unit, may be "" */
    uint32_t type;           /* omniprof_counter_type_t (counters.h): COUNTER, RATIO, THROUGHPUT */
    uint32_t reserved;
} omniprof_pm_sampling_metric_t;

/* Return non-zero to stop. */
typedef int (*omniprof_pm_sampling_metric_cb_t)(const omniprof_pm_sampling_metric_t *metric, void *user_data);

/**
 * @brief **omniprof_iterate_pm_sampling_metrics** calls `cb` for each base metric PM sampling
 * supports on `chip` ("GH100", "AD102", ...). Offline: needs no GPU (CUPTI's Profiler Host API).
 * @return SUCCESS; ERROR_INVALID_ARGUMENT (chip or cb NULL); ERROR_METRIC_NOT_VALID_FOR_AGENT
 *         (CUPTI does not know the chip); ERROR_NOT_AVAILABLE (no backend that can sample).
 */
OMNIPROF_API omniprof_status_t omniprof_iterate_pm_sampling_metrics(const char *chip,
                                                                    omniprof_pm_sampling_metric_cb_t cb,
                                                                    void *user_data);

/**
 * @brief **omniprof_check_pm_sampling_metrics** checks offline that `metrics` can be PM-sampled
 * together on `chip`: every name is a collectable metric, and the set needs one pass.
 * *passes (may be NULL) receives the passes the set needs (0 when a name is unknown);
 * `message` (may be NULL) one line saying what is wrong (the unknown names; "N passes").
 * @return SUCCESS (one pass); ERROR_COUNTER_NOT_FOUND (a name is unknown on this chip);
 *         ERROR_EXCEEDS_HW_LIMIT (more than one pass); ERROR_METRIC_NOT_VALID_FOR_AGENT (unknown
 *         chip); ERROR_INVALID_ARGUMENT; ERROR_NOT_AVAILABLE (no backend that can sample).
 */
OMNIPROF_API omniprof_status_t omniprof_check_pm_sampling_metrics(const char *chip, const char *const *metrics,
                                                                  size_t num_metrics, size_t *passes, char *message,
                                                                  size_t message_size);

/* OMNIPROF_BUFFER_TRACING_PM_SAMPLE: the value of one metric over one sample window of one
 * device. Windows of a device follow each other without gaps (end of one = start of the next,
 * up to the hardware's clock). `operation` is 0. */
typedef struct omniprof_pm_sample_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation;
    omniprof_timestamp_t start_timestamp; /* the window, on omniprof's clock */
    omniprof_timestamp_t end_timestamp;
    omniprof_agent_id_t agent_id;
    const char *metric_name;              /* as configured, e.g. "dram__bytes_read.sum" */
    double value;                         /* the metric over the window (bytes, cycles, %, ...) */
    uint64_t interval;                    /* the configured interval, ns */
    uint32_t device_index;                /* vendor device ordinal */
    uint32_t reserved;
} omniprof_pm_sample_record_t;

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_PM_SAMPLING_H */
