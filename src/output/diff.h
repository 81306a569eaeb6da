/* diff.h — `omniprof diff BASE.db NEW.db`: what got slower or faster between two profiles, with a
 * noise estimate per item (docs/diff.md says the method). An item is one (kind, name) summed over
 * every process, thread and stream of an input: a kernel, a copy, an API call, a marker/user
 * range, an MPI call, a CPU function (self samples) or an iteration (every instance of the range
 * named by the `iteration` option). Inputs are read through the db reader, read-only. */
#ifndef OMNIPROF_OUTPUT_DIFF_H
#define OMNIPROF_OUTPUT_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <omniprof/defines.h>

/* Kinds of items, in the order the console names them (op_diff_kind_name). */
enum {
    OP_DIFF_KERNEL,
    OP_DIFF_COPY,
    OP_DIFF_API,
    OP_DIFF_RANGE,
    OP_DIFF_MPI,
    OP_DIFF_FUNCTION,
    OP_DIFF_ITERATION,
    OP_DIFF_KINDS
};
OMNIPROF_API extern const char *const op_diff_kind_name[OP_DIFF_KINDS];

/* Status of an item. */
enum { OP_DIFF_SAME, OP_DIFF_SLOWER, OP_DIFF_FASTER, OP_DIFF_ADDED, OP_DIFF_REMOVED };
OMNIPROF_API extern const char *const op_diff_status_name[5];

typedef struct op_diff_side {
    uint64_t count;  /* instances (functions: samples) */
    double total_ns; /* summed duration (functions: samples x the sampling period) */
    double mean_ns, median_ns, sd_ns; /* per instance (functions: 0) */
} op_diff_side;

typedef struct op_diff_item {
    int kind;
    char *name;
    op_diff_side base, new_;
    double delta_ns;   /* new total - base total */
    double change_pct; /* per-instance change: mean (functions: samples) new vs base, in % */
    double noise_pct;  /* half-width of the 99 % interval of change_pct */
    double p;          /* two-sided p of "no change": the larger of Mann-Whitney U and Welch's t
                        * over batch means (diff.c); functions: Poisson */
    int significant;   /* p below the corrected alpha, |change| >= min change and > noise */
    int status;        /* OP_DIFF_* status */
} op_diff_item;

typedef struct op_diff_options {
    size_t size; /* sizeof(op_diff_options) */
    const char *base, *new_;
    const char *iteration; /* range name that delimits iterations, NULL: none */
    double min_change_pct; /* smallest change reported as significant (default 5) */
    double alpha;          /* family-wise false-positive rate (default 0.01, Bonferroni) */
} op_diff_options;

typedef struct op_diff_result {
    op_diff_item *items; /* ranked (diff.c): significant first */
    size_t n_items;
    size_t n_tests; /* items tested (both sides present): the Bonferroni divisor */
    size_t n_significant, n_regressions;
    double base_period_ns, new_period_ns; /* CPU sampling period (0: no samples) */
    int64_t base_span_ns, new_span_ns;    /* first start to last end of each input */
    uint64_t iterations[2];               /* instances of the iteration range per input */
} op_diff_result;

/* Reads both inputs and compares them. 0, OP_OUT_EINPUT (a bad input or option: err names it)
 * or OP_OUT_EFAIL. */
OMNIPROF_API int op_output_diff(const op_diff_options *o, op_diff_result **out, char *err,
                                size_t errlen);
OMNIPROF_API void op_diff_result_free(op_diff_result *r);
/* The console table (at most `top` rows; 0: all) and the JSON document (schema in docs/diff.md). */
OMNIPROF_API void op_diff_print_text(FILE *f, const op_diff_options *o, const op_diff_result *r,
                                     size_t top);
OMNIPROF_API void op_diff_print_json(FILE *f, const op_diff_options *o, const op_diff_result *r);

#endif /* OMNIPROF_OUTPUT_DIFF_H */
