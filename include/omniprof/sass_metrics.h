/* omniprof/sass_metrics.h — SASS metrics: exact per-instruction counts of selected kernels
 * (how many times each SASS instruction was executed by a warp, and by how many threads),
 * mapped to source lines. On NVIDIA GPUs it is CUPTI's SASS Metrics API, which patches the
 * kernels' machine code with counters: exact, but a kernel runs several times slower while
 * patched. Collected values are read once, at the end of the run (or when a CUDA context is
 * destroyed), and delivered as OMNIPROF_BUFFER_TRACING_SASS_METRIC records: one per
 * (kernel, instruction, metric).
 *
 * One configuration per process (the first context's); another context asking for other
 * values gets ERROR_CONTEXT_CONFLICT. SASS metrics and PC sampling exclude each other (CUPTI
 * cannot run both in one process): configuring both leaves SASS metrics off, with one line. */
#ifndef OMNIPROF_SASS_METRICS_H
#define OMNIPROF_SASS_METRICS_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

#define OMNIPROF_SASS_METRICS_MAX_METRICS 16
/* The metrics collected when none are named. */
#define OMNIPROF_SASS_METRIC_INST_EXECUTED "smsp__sass_inst_executed"               /* warp-level executions */
#define OMNIPROF_SASS_METRIC_THREAD_INST_EXECUTED "smsp__sass_thread_inst_executed" /* thread-level executions */

/**
 * @brief **omniprof_configure_sass_metrics_service** counts `metrics` (NULL/0: the two above)
 * per SASS instruction of the kernels whose name (demangled, else mangled) matches the POSIX
 * extended regular expression `kernel_filter` (NULL or "": every kernel) on GPU `agent`
 * (handle 0: every GPU), into `buffer`. Call during configuration; strings are copied.
 * @return SUCCESS; ERROR_CONTEXT_NOT_FOUND; ERROR_BUFFER_NOT_FOUND; ERROR_PARSE (the regular
 *         expression does not compile); ERROR_INVALID_ARGUMENT (more than
 *         OMNIPROF_SASS_METRICS_MAX_METRICS, an empty name); ERROR_CONTEXT_CONFLICT;
 *         ERROR_CONFIGURATION_LOCKED; ERROR_SERVICE_ALREADY_CONFIGURED.
 */
OMNIPROF_API omniprof_status_t omniprof_configure_sass_metrics_service(omniprof_context_id_t context,
                                                                       omniprof_agent_id_t agent,
                                                                       const char *kernel_filter,
                                                                       const char *const *metrics, size_t num_metrics,
                                                                       omniprof_buffer_id_t buffer, uint32_t flags);

/* OMNIPROF_BUFFER_TRACING_SASS_METRIC: one metric of one SASS instruction of one kernel, summed
 * over every launch of the kernel while collection ran and over the GPU's SMs. `operation` is 0. */
typedef struct omniprof_sass_metric_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation;
    omniprof_timestamp_t timestamp;     /* when the values were read */
    omniprof_agent_id_t agent_id;
    omniprof_kernel_id_t kernel_id;     /* as in KERNEL_DISPATCH and KERNEL_SYMBOL records */
    const char *kernel_name;            /* mangled */
    const char *kernel_name_demangled;
    const char *metric_name;            /* e.g. "smsp__sass_inst_executed" */
    const char *instruction;            /* SASS text, "" when no disassembler was found */
    const char *source_file;            /* "" without line information (compile with -lineinfo) */
    uint64_t code_object_id;            /* the cubin's CRC */
    uint64_t pc_offset;                 /* bytes from the start of the function */
    uint64_t value;
    uint32_t source_line;               /* 0 when unknown */
    uint32_t device_index;              /* vendor device ordinal */
} omniprof_sass_metric_record_t;

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_SASS_METRICS_H */
