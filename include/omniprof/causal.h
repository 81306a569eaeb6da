/* omniprof/causal.h — causal-profiling records: one per experiment, one per progress point of
 * each experiment.
 *
 * Produced by the CPU backend's causal engine (src/backend/cpu/causal*.c, docs/causal.md)
 * when a context configures OMNIPROF_BUFFER_TRACING_CAUSAL_EXPERIMENT. An experiment
 * "virtually" speeds up one selected source line (or function) by `speedup_percent` for a
 * while and measures how fast the program's progress points advance meanwhile; the records
 * carry exactly what Coz writes to its profile (experiment, throughput-point, latency-point),
 * so a profile in Coz's format is derived from them (`omniprof causal` does). */
#ifndef OMNIPROF_CAUSAL_H
#define OMNIPROF_CAUSAL_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

/* CAUSAL_EXPERIMENT operations: how the selection was made. */
typedef enum omniprof_causal_experiment_operation_t {
    OMNIPROF_CAUSAL_EXPERIMENT_NONE = 0,
    OMNIPROF_CAUSAL_EXPERIMENT_LINE,       /* one source line (file:line) */
    OMNIPROF_CAUSAL_EXPERIMENT_FUNCTION,   /* one function's whole address range */
    OMNIPROF_CAUSAL_EXPERIMENT_END_TO_END, /* one experiment for the whole run (line or function) */
    OMNIPROF_CAUSAL_EXPERIMENT_LAST
} omniprof_causal_experiment_operation_t;

/* CAUSAL_EXPERIMENT: one finished experiment of this process. */
typedef struct omniprof_causal_experiment_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation; /* omniprof_causal_experiment_operation_t */
    uint64_t index;                 /* experiment number in this process, from 0 */
    omniprof_timestamp_t start_timestamp;
    omniprof_timestamp_t end_timestamp;
    uint64_t duration_ns;           /* end - start - delay_ns: the run time in the virtual world */
    uint64_t delay_ns;              /* delay inserted (global delay counter) during the experiment */
    uint64_t selected_samples;      /* samples that hit the selection during the experiment */
    uint64_t sample_period_ns;      /* CPU time between two samples of one thread */
    uint32_t speedup_percent;       /* 0..100: each hit of the selection delays the others by this % of a period */
    uint32_t reserved;
    const char *selected;           /* "file:line" (line mode) or the function name: interned */
} omniprof_causal_experiment_record_t;

/* CAUSAL_PROGRESS operations: the kind of progress point. */
typedef enum omniprof_causal_progress_operation_t {
    OMNIPROF_CAUSAL_PROGRESS_NONE = 0,
    OMNIPROF_CAUSAL_PROGRESS_THROUGHPUT, /* a count of visits (COZ_PROGRESS, omniprof_progress, ranges) */
    OMNIPROF_CAUSAL_PROGRESS_LATENCY,    /* begin/end pairs (COZ_BEGIN/COZ_END, omniprof_progress_begin/end) */
    OMNIPROF_CAUSAL_PROGRESS_LAST
} omniprof_causal_progress_operation_t;

/* CAUSAL_PROGRESS: what one progress point did during one experiment (emitted right after it). */
typedef struct omniprof_causal_progress_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation; /* omniprof_causal_progress_operation_t */
    uint64_t experiment_index;      /* the experiment's index */
    omniprof_timestamp_t timestamp; /* end of the experiment */
    uint64_t delta;                 /* throughput: visits during the experiment; latency: = arrivals */
    uint64_t arrivals;              /* latency: begins during the experiment */
    uint64_t departures;            /* latency: ends during the experiment */
    int64_t difference;             /* latency: begins - ends since the start of the run, at the end */
    const char *name;               /* the point's name ("file:line" for COZ_PROGRESS): interned */
} omniprof_causal_progress_record_t;

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_CAUSAL_H */
