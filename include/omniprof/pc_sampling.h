/* omniprof/pc_sampling.h — PC sampling: where the GPU's warps are and why they stall.
 *
 * The analog of ROCprofiler-SDK's PC sampling service (rocprofiler_query_pc_sampling_agent_
 * configurations, rocprofiler_configure_pc_sampling_service). On NVIDIA GPUs it is CUPTI's PC
 * Sampling API: the hardware samples one warp per SM every 2^N cycles and records its program
 * counter and its state (a stall reason, or "selected" when it issued). Samples are aggregated
 * per (kernel, PC offset, stall reason) between reads and delivered as PC_SAMPLE records through
 * the context's buffer, like every other buffer kind.
 *
 * Methods:
 *   OMNIPROF_PC_SAMPLING_METHOD_KERNEL_SERIALIZED  kernels are serialized while sampled; every
 *       record names the dispatch it came from (correlation id of the launching call, dispatch id)
 *   OMNIPROF_PC_SAMPLING_METHOD_CONTINUOUS          kernels run concurrently; records name the
 *       kernel (function) only
 * Unit: cycles; the interval is rounded down to a power of two (CUPTI: 2^5 .. 2^31 cycles).
 *
 * One configuration per process: CUPTI samples per CUDA context with one setting, so the first
 * context that configures the service decides the method and interval; another context asking
 * for different values gets ERROR_CONTEXT_CONFLICT. */
#ifndef OMNIPROF_PC_SAMPLING_H
#define OMNIPROF_PC_SAMPLING_H

#include "omniprof/fwd.h"
#include "omniprof/agent.h"

OMNIPROF_EXTERN_C_BEGIN

typedef enum omniprof_pc_sampling_method_t {
    OMNIPROF_PC_SAMPLING_METHOD_NONE = 0,
    OMNIPROF_PC_SAMPLING_METHOD_KERNEL_SERIALIZED, /* per dispatch; kernels serialized */
    OMNIPROF_PC_SAMPLING_METHOD_CONTINUOUS,        /* per kernel; kernels concurrent */
    OMNIPROF_PC_SAMPLING_METHOD_LAST
} omniprof_pc_sampling_method_t;

typedef enum omniprof_pc_sampling_unit_t {
    OMNIPROF_PC_SAMPLING_UNIT_NONE = 0,
    OMNIPROF_PC_SAMPLING_UNIT_CYCLES, /* GPU cycles between samples (per SM) */
    OMNIPROF_PC_SAMPLING_UNIT_LAST
} omniprof_pc_sampling_unit_t;

/* One configuration an agent supports. */
typedef struct omniprof_pc_sampling_configuration_t {
    uint64_t size; /* sizeof this struct */
    omniprof_pc_sampling_method_t method;
    omniprof_pc_sampling_unit_t unit;
    uint64_t min_interval;     /* smallest interval (32 cycles on CUPTI) */
    uint64_t max_interval;     /* largest interval (2^31 cycles) */
    uint64_t default_interval; /* what 0 selects */
    uint32_t num_stall_reasons; /* stall reasons the agent reports (0 when known only at run time) */
    uint32_t flags;             /* OMNIPROF_PC_SAMPLING_CONFIG_* */
} omniprof_pc_sampling_configuration_t;

#define OMNIPROF_PC_SAMPLING_CONFIG_INTERVAL_POW2 1u /* intervals are rounded down to 2^N */

typedef omniprof_status_t (*omniprof_pc_sampling_configuration_cb_t)(
    const omniprof_pc_sampling_configuration_t *configs, size_t num_configs, void *user_data);

/**
 * @brief **omniprof_query_pc_sampling_agent_configurations** calls `cb` once with the
 * configurations `agent` supports (none for a CPU agent).
 * @return SUCCESS; ERROR_AGENT_NOT_FOUND; ERROR_NOT_AVAILABLE (no PC sampling on this agent or
 *         no backend: the reason is in omniprof's log).
 */
OMNIPROF_API omniprof_status_t omniprof_query_pc_sampling_agent_configurations(
    omniprof_agent_id_t agent, omniprof_pc_sampling_configuration_cb_t cb, void *user_data);

/**
 * @brief **omniprof_configure_pc_sampling_service** samples the kernels of GPU `agent` (handle 0:
 * every GPU) while `context` is active, with `method` every `interval` units (0: the default),
 * into `buffer` as OMNIPROF_BUFFER_TRACING_PC_SAMPLE records. Call during configuration.
 * @return SUCCESS; ERROR_CONTEXT_NOT_FOUND; ERROR_BUFFER_NOT_FOUND; ERROR_INVALID_ARGUMENT
 *         (method/unit out of range, interval outside [min, max]); ERROR_CONTEXT_CONFLICT
 *         (another context configured other values); ERROR_CONFIGURATION_LOCKED;
 *         ERROR_SERVICE_ALREADY_CONFIGURED.
 */
OMNIPROF_API omniprof_status_t omniprof_configure_pc_sampling_service(omniprof_context_id_t context,
                                                                      omniprof_agent_id_t agent,
                                                                      omniprof_pc_sampling_method_t method,
                                                                      omniprof_pc_sampling_unit_t unit,
                                                                      uint64_t interval, omniprof_buffer_id_t buffer,
                                                                      uint32_t flags);

/* OMNIPROF_BUFFER_TRACING_PC_SAMPLE: the samples of one (kernel, PC, stall reason) taken since
 * the previous read. `operation` is the method (omniprof_pc_sampling_method_t). */
typedef struct omniprof_pc_sample_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation;
    omniprof_async_correlation_id_t correlation_id; /* of the dispatch's launching call (serialized); 0 */
    omniprof_timestamp_t timestamp;                 /* when the samples were read */
    omniprof_agent_id_t agent_id;
    omniprof_dispatch_id_t dispatch_id; /* the KERNEL_DISPATCH record's dispatch_id (serialized); 0 */
    omniprof_kernel_id_t kernel_id;     /* as in KERNEL_DISPATCH and KERNEL_SYMBOL records */
    const char *kernel_name;            /* mangled */
    const char *kernel_name_demangled;
    const char *stall_reason;           /* e.g. "smsp__pcsamp_warps_issue_stalled_long_scoreboard" */
    const char *instruction;            /* SASS text, "" when no disassembler was found */
    const char *source_file;            /* "" without line information (compile with -lineinfo) */
    uint64_t code_object_id;            /* the cubin's CRC (CUPTI's id of the module image) */
    uint64_t pc_offset;                 /* bytes from the start of the function */
    uint32_t source_line;               /* 0 when unknown */
    uint32_t samples;                   /* samples of this PC with this stall reason */
    uint32_t pc_samples;                /* samples of this PC, all reasons */
    uint32_t reserved;
} omniprof_pc_sample_record_t;

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_PC_SAMPLING_H */
