/* provider.h — the interface between the vendor-neutral counters core (src/sdk/counters/, in
 * libomniprof-sdk.so) and a hardware-counter provider (src/backend/cuda/cupti_counters*.c, in
 * libomniprof-backend-cuda.so). Not API.
 *
 * The provider registers itself from its library constructor with
 * op_sdk_counters_register_provider(). When the core needs a provider and none registered, it
 * loads the backend whose manifest lists counter record kinds (op_sdk_load_backend_for_counters,
 * src/sdk/backend.h) — loading registers it.
 *
 * Offline part (no GPU, no driver: CUPTI's Profiler Host API, docs/cuda.md): chips, the
 * catalog of base metrics, descriptions, pass planning.
 * Runtime part: dispatch counting. The provider calls op_sdk_counters_dispatch_select() at each
 * kernel launch (on the launching thread, before the launch) and, once the values of a selected
 * dispatch are known, op_sdk_counters_dispatch_complete() with the base values in the order of
 * the plan's names. Device counting: start/read/stop over one GPU.
 *
 * Invariants:
 *  (1) every function is thread-safe; none is called from a signal handler;
 *  (2) strings the provider returns stay valid for the process (interned or static);
 *  (3) a plan (op_counters_plan) is immutable after creation and refcounted by the core; the
 *      provider may hang its own cache (config image) on plan->vendor, freed through
 *      provider->free_plan_cache. */
#ifndef OMNIPROF_SDK_COUNTERS_PROVIDER_H
#define OMNIPROF_SDK_COUNTERS_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include "omniprof/counters.h"

#define OP_SDK_COUNTERS_EXPORT __attribute__((visibility("default")))

/* What the provider knows of one base metric. */
typedef struct op_counter_base_info {
    const char *name;        /* full metric name, e.g. "dram__bytes_read.sum" (or a base name when iterating) */
    const char *description;
    const char *block;       /* hardware unit */
    const char *unit;        /* dimension unit */
    uint32_t type;           /* omniprof_counter_type_t: COUNTER, RATIO or THROUGHPUT */
} op_counter_base_info;

/* A resolved counter set for one chip: the base metric names to collect (derived inputs
 * expanded, the provider's always-collected metrics added) and the passes they need. */
typedef struct op_counters_plan {
    const char *chip;
    size_t num_base;
    const char **base_names;  /* interned */
    size_t num_passes;
    int duration_index;       /* index of the GPU-duration metric in base_names, -1 if none */
    void *vendor;             /* provider cache (config image), built lazily */
} op_counters_plan;

/* One kernel launch as the provider sees it. */
typedef struct op_counters_launch {
    omniprof_async_correlation_id_t correlation_id;
    omniprof_dispatch_id_t dispatch_id;
    omniprof_kernel_id_t kernel_id;
    omniprof_agent_id_t agent_id;
    omniprof_thread_id_t thread_id;
    const char *kernel_name;   /* interned */
    const char *chip;          /* chip of the launching device ("GH100") */
    omniprof_dim3_t grid_size;
    omniprof_dim3_t block_size;
    uint32_t device;           /* vendor device ordinal */
    omniprof_timestamp_t launch_timestamp;
} op_counters_launch;

typedef struct op_counters_provider {
    uint64_t size;
    const char *name; /* "cupti" */
    /* offline */
    int (*iterate_chips)(int (*cb)(const char *chip, void *data), void *data);
    /* Base metrics of `chip` (base names without rollup, with their types). Returns -1 if the
     * chip is unknown. cb returning non-zero stops. */
    int (*iterate_base)(const char *chip, int (*cb)(const op_counter_base_info *info, void *data), void *data);
    /* Sub-metric suffixes (".sum", ".avg.pct_of_peak_sustained_elapsed") valid for a base name. */
    int (*iterate_submetrics)(const char *chip, const char *base, uint32_t type,
                              int (*cb)(const char *suffix, void *data), void *data);
    /* Is `name` a collectable metric of `chip`? 0 and *info filled, or -1. */
    int (*describe)(const char *chip, const char *name, op_counter_base_info *info);
    /* Passes needed to collect names[0..n) on chip. 0, or -1 with a message in err. */
    int (*plan_passes)(const char *chip, const char *const *names, size_t n, size_t *passes, char *err,
                       size_t errlen);
    /* Metric the provider always adds to a dispatch plan (GPU duration), or NULL. */
    const char *duration_metric;
    /* Chip of the first GPU when one is present, else NULL (may initialize the driver). */
    const char *(*default_chip)(void);
    /* Runtime: begin / end dispatch counting (installs the launch hook). */
    omniprof_status_t (*dispatch_start)(void);
    void (*dispatch_stop)(void);
    /* Push pending values (decode) now; bounded. */
    void (*flush)(void);
    void (*free_plan_cache)(void *vendor);
    /* Device counting (single pass): session over device `device`. */
    omniprof_status_t (*device_start)(uint32_t device, const op_counters_plan *plan, void **session);
    omniprof_status_t (*device_read)(void *session, double *values /* plan->num_base */);
    void (*device_stop)(void *session);
    /* The chip CUPTI reports for a device ordinal, once known (a launch was seen on it); NULL
     * otherwise. Preferred over the agent's model_name, which is derived from the compute
     * capability ("AD10x" where CUPTI says "AD102"). */
    const char *(*chip_of_device)(uint32_t device);
} op_counters_provider;

/* Registers the provider (the last registration wins). Exported from libomniprof-sdk.so. */
OP_SDK_COUNTERS_EXPORT void op_sdk_counters_register_provider(const op_counters_provider *provider);

/* Called by the provider at each kernel launch. Returns NULL when the launch is not counted;
 * otherwise the plan to collect (valid until op_sdk_counters_dispatch_complete/_cancel) and a
 * token for the completion. */
OP_SDK_COUNTERS_EXPORT const op_counters_plan *op_sdk_counters_dispatch_select(const op_counters_launch *launch,
                                                                               void **token);
/* Values of the selected dispatch: base_values[i] belongs to plan->base_names[i];
 * num_passes: passes used. Emits the records. Consumes the token. */
OP_SDK_COUNTERS_EXPORT void op_sdk_counters_dispatch_complete(void *token, const double *base_values,
                                                              size_t num_passes);
/* The launch failed or counting failed: drop the token (reason logged by the provider). */
OP_SDK_COUNTERS_EXPORT void op_sdk_counters_dispatch_cancel(void *token);
/* True when a dispatch counting service is active (cheap; call at every launch). */
OP_SDK_COUNTERS_EXPORT int op_sdk_counters_dispatch_active(void);

#endif /* OMNIPROF_SDK_COUNTERS_PROVIDER_H */
