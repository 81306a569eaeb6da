/* profile_causal.h — causal profiles from rocpd databases (owned by the causal module, built
 * into libomniprof-output.so): the ranking `omniprof summary` and `omniprof causal` print, and
 * the profile in Coz's own text format (`profile.coz`, which Coz's viewer plots).
 *
 * Input: databases whose table sets hold omniprof_causal_experiment / omniprof_causal_progress
 * rows (docs/database.md, "Causal profiling"). The computation is Coz's (viewer/ts/profile.ts):
 * experiments are grouped by (selected line, progress point, line speedup), summing each
 * group's visits (delta) and durations; a throughput point's period is duration / delta, a
 * latency point's latency is difference / (arrivals / duration) (Little's law); the program
 * speedup of a group is (baseline - value) / baseline, the baseline being the 0 % group. A group
 * counts when its point was visited at least 5 times. Lines are ranked by the slope of the
 * least-squares line through the origin of program speedup against line speedup.
 *
 * Memory: one entry per experiment and point (a run makes about two experiments a second) and
 * per distinct line; never one per event of the trace.
 *
 * Functions return 0 (OP_OUT_OK), 1 (OP_OUT_EFAIL) or 2 (OP_OUT_EINPUT), with one line in err. */
#ifndef OMNIPROF_OUTPUT_PROFILE_CAUSAL_H
#define OMNIPROF_OUTPUT_PROFILE_CAUSAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <omniprof/defines.h>

OMNIPROF_EXTERN_C_BEGIN

/** @brief **op_causal_has_experiments** tells whether any input holds causal experiments (1/0). */
OMNIPROF_API int op_causal_has_experiments(const char *const *inputs, size_t n_inputs);

typedef struct op_causal_summary_options {
    size_t size;      /* sizeof(op_causal_summary_options) */
    int json;         /* 1: one JSON object instead of text */
    size_t max_lines; /* ranked lines shown (0 = 20) */
    int min_points;   /* a line is ranked when it has at least this many speedups measured besides 0 % (0 = 1) */
} op_causal_summary_options;
#define op_causal_summary_options__last_field min_points

/**
 * @brief **op_causal_summary_write** writes the causal profile of the inputs: per (line,
 * progress point) the slope, the largest program speedup, and each measured line speedup with
 * its program speedup, the number of experiments behind it and their spread (standard
 * deviation of the single experiments' program speedups). Text: a ranking table, each line
 * followed by its points; JSON: {"experiments": N, "lines": [{"line", "progress_point", "type",
 * "slope", "max_speedup", "experiments", "points": [{"line_speedup", "program_speedup",
 * "spread", "experiments", "visits"}...]}...]}. With no experiment it says why (no progress
 * point visited, or no databases from `omniprof causal`).
 * @param opts: NULL for the defaults (text, 20 lines).
 */
OMNIPROF_API int op_causal_summary_write(const char *const *inputs, size_t n_inputs, FILE *out,
                                         const op_causal_summary_options *opts, char *err, size_t errlen);

/* For op_output_summary (stats.c): the "OMNIPROF CAUSAL PROFILE" section in the summary's
 * format (OP_OUT_SUMMARY_*: console and md text; json one more list element {"summary":
 * "OMNIPROF CAUSAL PROFILE", "causal_profile": {...}}; csv: left out) when the inputs hold
 * experiments; *printed set to 1 when something was written. Not exported. */
int op_causal_summary_section(const char *const *inputs, size_t n_inputs, int format, FILE *out, int *first_json,
                              int *printed, char *err, size_t errlen);

/**
 * @brief **op_causal_coz_append** appends the experiments of the inputs to the Coz profile
 * `path` (created when missing, never truncated: runs accumulate, as Coz's do), in Coz's
 * legacy text format: per process `startup`, per experiment an `experiment` line (selected,
 * speedup 0..1, duration ns, selected-samples) followed by its `throughput-point` and
 * `latency-point` lines, then `runtime`. Each process's block is written with one write(2) on
 * an O_APPEND descriptor, so concurrent writers do not interleave lines.
 * @param experiments: out, may be NULL: the number of experiments appended.
 */
OMNIPROF_API int op_causal_coz_append(const char *const *inputs, size_t n_inputs, const char *path,
                                      uint64_t *experiments, char *err, size_t errlen);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_OUTPUT_PROFILE_CAUSAL_H */
