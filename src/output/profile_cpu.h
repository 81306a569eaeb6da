/* profile_cpu.h — CPU sampling profiles from rocpd databases (owned by the CPU module, built
 * into libomniprof-output.so): a flat profile and a call-tree profile (self and inclusive
 * samples and %, as text or JSON) for `omniprof summary`, and folded stacks for `omniprof
 * convert -f folded` (flamegraph.pl, speedscope).
 *
 * Input: any number of databases, each holding one or more uuid-suffixed table sets (merged
 * databases have several); a set contributes when it has omniprof_cpu_sample<uuid> rows.
 * Stacks come from omniprof_stack (deduplicated nodes: id, parent_id, address, depth) and
 * names from omniprof_symbol (address, inline_depth 0 = physical frame, 1.. inlined callees,
 * outermost first). An address without a symbol row shows as `module+0xOFF` when the module
 * is known, else `0xADDR`. Inlined callees are frames of their own (`name [inlined]`).
 *
 * Memory: samples are counted per stack by SQLite (GROUP BY stack_id); in memory are only the
 * stack nodes, the symbol names and the aggregated call tree — the trace's dictionary, never
 * one entry per sample (output.h invariant (1)).
 *
 * All functions return 0 (OP_OUT_OK), 1 (OP_OUT_EFAIL: read/write failure) or 2
 * (OP_OUT_EINPUT: bad input, e.g. not a database); `err` receives one line naming the input. */
#ifndef OMNIPROF_OUTPUT_PROFILE_CPU_H
#define OMNIPROF_OUTPUT_PROFILE_CPU_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <omniprof/defines.h>

OMNIPROF_EXTERN_C_BEGIN

typedef enum op_cpu_profile_format {
    OP_CPU_PROFILE_TEXT = 0,
    OP_CPU_PROFILE_JSON = 1,
} op_cpu_profile_format;

typedef struct op_cpu_profile_options {
    size_t size;          /* sizeof(op_cpu_profile_options) */
    int format;           /* op_cpu_profile_format */
    int flat;             /* 1: write the flat profile */
    int tree;             /* 1: write the call-tree profile */
    size_t max_rows;      /* flat profile rows (0 = 30) */
    double min_percent;   /* call-tree nodes below this inclusive % are left out (text only; 0 = 0.5) */
    int clock;            /* 0 all samples, 1 CPU-time samples only, 2 real-time samples only */
} op_cpu_profile_options;
#define op_cpu_profile_options__last_field clock

/**
 * @brief **op_cpu_profile_has_samples** tells whether any input holds CPU samples.
 * @return 1 yes, 0 no (also for unreadable inputs: the caller's own open reports those).
 */
OMNIPROF_API int op_cpu_profile_has_samples(const char *const *inputs, size_t n_inputs);

/**
 * @brief **op_cpu_profile_write** writes the flat and/or call-tree profile of every CPU sample
 * of the inputs to `out`. Text: a table `SELF  SELF%  TOTAL  TOTAL%  FUNCTION  LOCATION  MODULE` sorted
 * by self samples (LOCATION = file:line of the function's most-sampled line, MODULE its module),
 * then the tree, indented, children sorted by inclusive samples. JSON: one object
 * {"total_samples", "flat": [{"function","location","module","self","self_pct","total",
 * "total_pct"}...], "tree": {"name","self","total","children":[...]}}.
 * @param opts: NULL for defaults (text, flat and tree).
 */
OMNIPROF_API int op_cpu_profile_write(const char *const *inputs, size_t n_inputs, FILE *out,
                                      const op_cpu_profile_options *opts, char *err, size_t errlen);

/**
 * @brief **op_cpu_folded_write** writes folded stacks: one line per distinct call path,
 * `outermost;...;innermost COUNT`, the count being the samples whose stack ends there (the
 * format of flamegraph.pl's stackcollapse output, read by speedscope too). Function names have
 * ';' replaced by ':' and newlines by spaces. Lines are sorted by path.
 */
OMNIPROF_API int op_cpu_folded_write(const char *const *inputs, size_t n_inputs, FILE *out, char *err,
                                     size_t errlen);

/**
 * @brief **op_cpu_folded_write_file** is op_cpu_folded_write into the file `path`, written as
 * every output is (output.h: never over an input or an existing file; an existing `path` gets
 * the -N suffix).
 */
OMNIPROF_API int op_cpu_folded_write_file(const char *const *inputs, size_t n_inputs, const char *path,
                                          char *err, size_t errlen);


/* ---- internal: the aggregation engine shared by profile_cpu.c and folded.c (hidden) ------ */
#include <stdbool.h>

#include "common/strtab.h"
#include "common/u64map.h"

typedef struct cp_node {
    uint32_t name;                       /* interned string id */
    uint32_t parent, first_child, next_sibling;
    uint64_t self, total;
} cp_node;

typedef struct cp_flat {
    uint32_t name, best_loc, module;     /* UINT32_MAX: none */
    uint64_t self, total, best_loc_count;
} cp_flat;

typedef struct cp_profile {
    op_strtab names;                     /* interned names; id 0 is "[root]" (also: out of memory) */
    op_u64map child_index, flat_index, loc_counts;
    cp_node *nodes;                      /* nodes[0] is the root */
    size_t n_nodes, cap_nodes;
    cp_flat *flat;
    size_t n_flat, cap_flat;
    uint64_t total;                      /* samples */
    uint64_t lost;                       /* samples the sampler dropped (omniprof_drops lost_at_source; whole run) */
} cp_profile;

/* Build the tree and flat table of every CPU sample of the inputs (clock: 0 all, 1 CPU-time,
 * 2 real-time). Returns 0, 1 (read failure) or 2 (bad input), err filled. Free with
 * cp_profile_free in every case. */
int cp_profile_build(cp_profile *p, const char *const *inputs, size_t n_inputs, int clock, char *err,
                     size_t errlen);
/* The same, counting only samples with window[0] <= timestamp <= window[1] (window NULL: all). */
int cp_profile_build_window(cp_profile *p, const char *const *inputs, size_t n_inputs, int clock,
                            const int64_t *window, char *err, size_t errlen);
/* op_cpu_profile_write over the samples with window[0] <= timestamp <= window[1] (window
 * NULL: all); for op_output_summary's time windows. */
int cp_profile_write_window(const char *const *inputs, size_t n_inputs, FILE *out, const op_cpu_profile_options *opts,
                            const int64_t *window, char *err, size_t errlen);
/* The same, restricted to the table set with uuid suffix only_sfx (NULL: every set); for
 * `summary --summary-by-rank`. */
int cp_profile_build_set(cp_profile *p, const char *const *inputs, size_t n_inputs, const char *only_sfx, int clock,
                         const int64_t *window, char *err, size_t errlen);
int cp_profile_write_set(const char *const *inputs, size_t n_inputs, const char *only_sfx, FILE *out,
                         const op_cpu_profile_options *opts, const int64_t *window, char *err, size_t errlen);
/* Every CPU sample as cp_profile_build, each stack under two frames: its process ("rank R ·
 * pid P" or "pid P") and its thread ("tid T · name"), for the report's flame graph per rank and
 * per thread (clock -1 in cp_profile_build_set means this). */
int cp_profile_build_split(cp_profile *p, const char *const *inputs, size_t n_inputs, char *err, size_t errlen);
/* Calls cb for each table set holding CPU samples, in input then set order, with the input's
 * index, the set's suffix and a label ("RANK r (pid p)" or "PROCESS p"); stops at a non-zero
 * return, which it returns (2 when an input cannot be opened). */
int cp_for_each_sample_set(const char *const *inputs, size_t n_inputs,
                           int (*cb)(size_t input, const char *sfx, const char *label, void *arg), void *arg,
                           char *err, size_t errlen);
/* op_cpu_folded_write over the samples inside window (NULL: all); for op_output_convert. */
int cp_folded_write_window(const char *const *inputs, size_t n_inputs, FILE *out, const int64_t *window, char *err,
                           size_t errlen);
/* cp_profile_build_set weighted: with weight (a counter's name, omniprof_cpu_sample_event) each
 * sample counts the increase of that counter on its thread since the thread's previous sample,
 * so self/total are counter counts (p->total their sum); sets whose samples do not carry it add
 * nothing, and when no set does: OP_OUT_EINPUT naming the counters they carry. */
int cp_profile_build_weighted(cp_profile *p, const char *const *inputs, size_t n_inputs,
                              const char *only_sfx, const char *weight, int clock,
                              const int64_t *window, char *err, size_t errlen);
/* cp_folded_write_window with each line's count the counter weight's (NULL: samples). */
int cp_folded_write_weighted(const char *const *inputs, size_t n_inputs, FILE *out,
                             const int64_t *window, const char *weight, char *err, size_t errlen);

/* The counters of the CPU samples per function (profile_cpu_counters.c; `omniprof summary`,
 * the report): for each counter the samples carry (distinct names in input order), its self
 * and total count per function, and the ratios derived from pairs of them: IPC =
 * instructions/cycles, cache-miss % = cache-misses/cache-references, branch-miss % =
 * branch-misses/branches (of self counts). Text: one table, functions by the first counter's
 * self count; JSON: {"events":[{"name","type","config","total"}],"ratios":[names],
 * "functions":[{"function","module","self":[..],"total":[..],"ratios":[..|null]}]}.
 * Appends to b (max_rows 0: 30 text, 100 JSON); nothing, and *written 0, when no sample
 * carries a counter. only_sfx and window as in cp_profile_build_set. */
struct op_buf;
int cp_counters_buf(const char *const *inputs, size_t n_inputs, const char *only_sfx,
                    struct op_buf *b, int json, size_t max_rows, const int64_t *window,
                    int *written, char *err, size_t errlen);
/* The counter names the samples of the inputs carry (distinct, input order): how many (<= max). */
int cp_counter_names(const char *const *inputs, size_t n_inputs, const char *only_sfx,
                     char names[][64], int max, char *err, size_t errlen);
void cp_profile_free(cp_profile *p);
/* The text of interned name `id`. */
#define CP_STR(p, id) ((p)->names.text[id])
/* Children of node `id`, sorted by total samples (descending) then name; malloc'd (free it). */
uint32_t *cp_sorted_children(cp_profile *p, uint32_t id, size_t *n);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_OUTPUT_PROFILE_CPU_H */
