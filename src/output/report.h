/* report.h — internals of `omniprof report` (op_output_report, output.h) and of the flame graph
 * SVG (`omniprof convert -f svg`), shared by report*.c and convert.c.
 *
 * The report is built in passes over the inputs (each input open one at a time), each adding
 * one part of the page's data to an rp_report, then written as one HTML file: the template
 * src/output/report/report.html with the page's style, script and the data (JSON) in its
 * slots. The page's data layout is documented in docs/report.md ("The data in the page").
 *
 * Bounds (what keeps the page small whatever the number of events, output.h invariant (1)):
 * RP_MAX_TABLE_ROWS names per summary table, RP_MAX_LANES timeline lanes of at most
 * RP_MAX_BINS bins (RP_BIN_BUDGET bins in all), RP_SPAN_BUDGET named spans in all,
 * RP_EVENT_BUDGET events at event level (report_timeline.c),
 * RP_MAX_FLAME_NODES flame-graph frames (the smallest are left out, counted), RP_MAX_FLAT flat
 * profile rows, RP_MAX_SERIES metric series of RP_SERIES_POINTS points. */
#ifndef OMNIPROF_OUTPUT_REPORT_H
#define OMNIPROF_OUTPUT_REPORT_H

#include "common/strtab.h"
#include "output/internal.h"
#include "output/profile_cpu.h"

#define RP_MAX_TABLE_ROWS 1000
#define RP_MAX_LANES 400
#define RP_MAX_BINS 4096
#define RP_MIN_BINS 256
#define RP_BIN_BUDGET (1u << 20)
#define RP_SPAN_BUDGET 100000
#define RP_EVENT_BUDGET 2000000
#define RP_MAX_FLAME_NODES 50000
#define RP_MAX_FLAT 1000
#define RP_MAX_SERIES 64
#define RP_SERIES_POINTS 200
#define RP_RANK_TOP 40

/* A JSON string (quoted) with '<' written as \u003c, so that no name can end the page's
 * <script> element, and each byte that is not part of valid UTF-8 as the text \xNN (a page's
 * strings cannot hold the lone surrogates \udcNN of op_buf_json_str: Chromium's DOM dump
 * aborts on them); otherwise as op_buf_json_str writes them. */
void rp_json_str(op_buf *b, const char *s, size_t n);
/* A JSON number: the shortest text that reads back as v; non-finite values as 0. */
void rp_json_num(op_buf *b, double v);

/* The data of the page, section by section (each a JSON value written by its pass). */
typedef struct rp_report {
    const char *const *inputs;
    size_t n_inputs;
    const op_clock_plan *clocks;  /* the inputs' clock plan (clocks.c, built by op_out_inputs_begin) */
    size_t input;                 /* the input rp_each_set is in (for rp_set_clock) */
    int64_t t0, t1;               /* the extent of every input's events (ns), on the reference clock */
    int64_t threads;              /* threads of every process */
    char command[256];            /* the first process's command (the page's title) */
    size_t n_procs;               /* processes in input/set order (the page's process index) */
    op_u64map proc_index;         /* (set ordinal << 40 | process row) -> process index + 1 */
    size_t *set_first_proc;       /* set ordinal -> its first process index (SIZE_MAX: none) */
    size_t n_sets;
    op_buf overview, tables, ranks, timeline, flame, flat, causal, counters, perfetto;
    op_buf findings, critical_path; /* report_findings.c */
    op_buf flame_split;           /* the flame graph under a frame per process and thread */
    op_buf cpu_counters;          /* the samples' perf_event counters per function (or empty) */
    op_buf flame_counters;        /* {counter: flame graph weighted by it} (or empty) */
    op_buf events;                /* the timeline's event columns: elements after the script */
    op_progress progress;         /* one stage per pass and input */
} rp_report;

/* The process index of (set ordinal, process row); the set's first process when unknown. */
size_t rp_proc_of(const rp_report *r, size_t set_ordinal, int64_t process_row);

/* Times on one clock: the map of the set rp_each_set is in (NULL: its times stay), and of one of
 * its processes — the clock plan that merge and convert apply (clocks.c), so that the report of
 * unmerged ranks of several hosts (or clocks) spans the run as their merge does. Every time the
 * page shows goes through op_rd_clock_apply with one of these. */
const op_rd_clock_map *rp_set_clock(const rp_report *r, const op_src *src, const op_src_set *set);
const op_rd_clock_map *rp_proc_clock(const rp_report *r, const op_src *src, const op_src_set *set,
                                     int64_t process_row);

/* The passes (report.c drives them in this order; each returns an OP_OUT_* status). */
int rp_overview(rp_report *r, char *err, size_t errlen);   /* report.c: overview, counters */
int rp_tables(rp_report *r, char *err, size_t errlen);     /* report_tables.c: tables, ranks */
int rp_timeline(rp_report *r, char *err, size_t errlen);   /* report_timeline.c */
void rp_findings(rp_report *r);                            /* report_findings.c: never fails */
int rp_cpu_profile(rp_report *r, char *err, size_t errlen); /* report_flame.c: flame, flat */

/* Calls fn for each table set of each input in order, with its ordinal over all inputs. */
int rp_each_set(rp_report *r, const char *what,
                int (*fn)(rp_report *r, op_src *src, op_src_set *set, size_t ordinal, void *arg, char *err,
                          size_t errlen),
                void *arg, char *err, size_t errlen);

/* ---- flame graphs (report_flame.c) ------------------------------------------------------------ */
/* The frames of a CPU profile kept for drawing: depth-first from the root, children by samples
 * (largest first); a frame is kept when its samples reach `min_total` (so at most `max_nodes`
 * are kept: the threshold is raised until they fit). */
typedef struct rp_flame {
    uint32_t *order;   /* cp_profile node ids in depth-first order (order[0] = the root) */
    uint32_t *parent;  /* index in order of each kept frame's parent (parent[0] = 0) */
    size_t n;
    uint64_t pruned;   /* frames left out */
    int depth;         /* the deepest kept frame's depth (root 0) */
} rp_flame;
int rp_flame_select(cp_profile *p, size_t max_nodes, rp_flame *f);
void rp_flame_free(rp_flame *f);
/* convert -f svg: the flame graph of the samples inside window (NULL: all) into out. */
int op_flame_svg_write_window(const char *const *inputs, size_t n_inputs, FILE *out, const int64_t *window, char *err,
                              size_t errlen);
/* The same weighted by a counter of the samples (profile_cpu.h: cp_profile_build_weighted;
 * NULL: samples), for `omniprof convert -f svg --weight EVENT`. */
int op_flame_svg_write_weighted(const char *const *inputs, size_t n_inputs, FILE *out,
                                const int64_t *window, const char *weight, char *err,
                                size_t errlen);

#endif /* OMNIPROF_OUTPUT_REPORT_H */
