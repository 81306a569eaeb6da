/* analyze.h — `omniprof analyze`: the execution graph of a recorded run, its critical path,
 * what-if re-evaluation and ranked findings (docs/analyze.md says the method and its limits).
 *
 * The graph (graph.c) is read from one or more databases (one process each, or a merged
 * multi-rank file) through the db reader, streaming, into flat arrays:
 *   - a LANE is a CPU thread or a GPU stream of one process;
 *   - a NODE is one piece of work on a lane: a leaf of the thread's nested regions (an API call,
 *     an MPI call, a wrapped call, the CPU work of a user range, or the CPU work between
 *     regions), a kernel, a copy or a memset. A thread's nodes tile its time without overlap;
 *   - each node has two EVENTS, its start (2i) and its end (2i+1); an EDGE says "event b cannot
 *     happen before event a + lag": program order on a lane, launch -> GPU operation, GPU
 *     operation -> the host wait that waited for it, send -> receive, every participant's
 *     arrival -> a collective's end, a thread's last work -> the join that waited for it,
 *     thread creation.
 * Evaluation (engine.c) gives every event the maximum over its incoming edges of
 * (source time + lag), in a topological order (Kahn), where a lag is a duration scaled by the
 * what-if factors: the recorded times come back exactly with no what-if, and a what-if moves
 * every later event through the edges (a faster straggler shortens everybody's wait).
 * The critical path is the chain of binding edges walked back from the last event.
 *
 * Memory: about 53 bytes per node (32 the node, 16 its two evaluated times, 4 its what-if
 * factor, 1 its cut flag; the edge index 4 per 16 nodes) and 16 per stored edge; names are
 * interned (strtab). Nothing here
 * writes to an input. Functions returning int give 0 or -1 with one line in err naming the
 * input; an_* objects have one owner and are not thread-safe. */
#ifndef OMNIPROF_ANALYZE_ANALYZE_H
#define OMNIPROF_ANALYZE_ANALYZE_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>

#include "common/strtab.h"
#include "common/u64map.h"

#define AN_SCHEMA_VERSION 1
#define AN_SCHEMA_MINOR 1 /* 1: breakdown.gpus (overlap percentages) */

/* What a node is. */
enum an_kind {
    AN_CPU,     /* CPU work outside any region (or a range's own CPU work: region >= 0) */
    AN_API,     /* a GPU runtime/driver API call (not a wait) */
    AN_LAUNCH,  /* an API call that launched GPU work */
    AN_GPUWAIT, /* a host wait on the GPU: synchronize calls, blocking copies */
    AN_MPI,     /* an MPI call that waits for nothing recorded */
    AN_MPIWAIT, /* an MPI call that completes a message or a collective */
    AN_WRAP,    /* a wrapped call (locks, ...) */
    AN_JOIN,    /* a thread join or barrier wait */
    AN_KERNEL,
    AN_COPY,
    AN_SET, /* memset */
    AN_KINDS
};
extern const char *const an_kind_name[AN_KINDS];

/* Edge types (what the path reports when it follows one). */
enum an_edge { AE_LANE, AE_SELF, AE_LAUNCH, AE_WAIT, AE_MSG, AE_COLL, AE_JOIN, AE_CREATE,
               AE_EVENT /* a stream's wait for an event: the event's work -> the next op, 0 */ };

#define AN_F_PAGEABLE 1u   /* a copy from or to pageable host memory */
#define AN_F_LANE_FIRST 2u /* the first node of its lane (no program-order edge into it) */
#define AN_F_ESLACK 4u     /* an end slack in an_graph.eslack (a collective's lateness) */
#define AN_F_WSLACK 8u     /* a wait whose start has a slack: in an_graph.wslack */
#define AN_F_AUXBIG 16u    /* aux does not fit 32 bits: its value is in an_graph.auxbig */
#define AN_F_EDGES 32u     /* stored edges lead into this node (an_edges_of) */
#define AN_LANES_MAX (1u << 20) /* lanes a graph can have (an_node.lane's bits) */

typedef struct an_node { /* 32 bytes: 13 M nodes (10 M events) take 415 MB */
    int64_t start, end; /* recorded, ns */
    uint32_t name;      /* strtab id */
    int32_t region;     /* the innermost user range (an_graph.ranges), -1 none */
    uint32_t lane : 20;
    uint32_t kind : 4;  /* an_kind */
    uint32_t wait : 1;  /* 1: the end waits on other events (edges into 2i+1 besides the start) */
    uint32_t flags : 7; /* AN_F_* */
    int32_t aux;        /* a wait: its intrinsic time (end - max(start, the latest recorded
                         * dependency)); otherwise its start's slack (recorded start - the latest
                         * recorded reason to start: GPU queueing the graph cannot explain, kept
                         * as a fixed delay). Beyond 32 bits (AN_F_AUXBIG) in an_graph.auxbig.
                         * Read them with an_intrinsic / an_slack. */
} an_node;

typedef struct an_edge_t { /* 16 bytes */
    uint32_t src, dst;      /* events */
    uint64_t type : 8;      /* an_edge */
    int64_t lag : 56;       /* recorded lag (only AE_LAUNCH/AE_CREATE/AE_MSG; others derive
                             * theirs) */
} an_edge_t;

/* A stretch of consecutive events evaluated in order (engine.c). */
typedef struct an_run {
    uint32_t first, n;
} an_run;

/* The binding edge of an event (an_graph.bind): an index into an_graph.edges, or one of: */
#define AN_BIND_NONE UINT32_MAX        /* no incoming edge: the recorded time */
#define AN_BIND_LANE (UINT32_MAX - 1u) /* program order: event v-1 (the lane's previous node) */
#define AN_BIND_SELF (UINT32_MAX - 2u) /* the node's own duration: event v-1 (its start) */

typedef struct an_lane {
    int gpu;           /* 0 thread, 1 stream */
    int64_t pid, tid;  /* thread: OS ids; stream: pid and the stream id */
    int64_t device;    /* stream: the agent index */
    int rank;          /* the process's MPI rank, -1 none */
    uint32_t process;  /* index of the process (input set) */
    uint32_t first, n; /* its nodes: node ids first .. first+n-1, in time order */
} an_lane;

typedef struct an_range { /* one instance of a user range / marker */
    int64_t start, end;
    uint32_t name, lane;
    int32_t parent;
    uint32_t first_node, last_node; /* the nodes it covers on its lane (n_nodes 0: none) */
    uint32_t n_nodes;
} an_range;

typedef struct an_sample { /* a CPU call-stack sample */
    int64_t t;
    uint32_t lane;
    uint32_t stack; /* an_graph.stacks index */
} an_sample;

typedef struct an_graph {
    op_strtab names;
    an_node *nodes;
    size_t n_nodes, cap_nodes;
    an_edge_t *edges; /* the cross-lane edges, sorted by destination after the load; program
                       * order and durations are implicit (engine.c) */
    size_t n_edges, cap_edges;
    an_lane *lanes;
    size_t n_lanes, cap_lanes;
    an_range *ranges;
    size_t n_ranges, cap_ranges;
    an_sample *samples; /* sorted by (lane, t) */
    size_t n_samples, cap_samples;
    uint32_t *stack_frames; /* per stack: count, then name ids innermost first */
    size_t n_stack_frames, cap_stack_frames;
    uint32_t *stacks; /* offsets into stack_frames */
    size_t n_stacks, cap_stacks;
    size_t n_processes;
    int64_t t_begin, t_end; /* the run's recorded extent */
    uint64_t n_events_read; /* rows read */
    uint64_t dropped_edges; /* edges left out (cycles from skewed clocks) */
    uint64_t untimed_ops;   /* GPU operations left out: no timestamps (start 0, end < start) */
    /* the stored incoming edges of the nodes of block b (nodes 16b .. 16b+15) begin at
     * edges[eblock[b]]; a node's own are found from there (an_edges_of) */
    uint32_t *eblock;
    an_run *runs; /* a topological order (Kahn; a cycle's events by time, one per run) */
    size_t n_runs, cap_runs;
    /* rare per-node values, by node id: the end slack of a collective participant (its
     * recorded lateness beyond the group's fastest leaver: a rank waiting for a CPU, kept as a
     * fixed delay) and the start slack of a wait node */
    op_u64map eslack, wslack;
    op_u64map auxbig; /* node -> aux, where it does not fit the node's 32 bits (AN_F_AUXBIG) */
    /* evaluation scratch */
    int64_t *t; /* event times of the last evaluation */
    float *factor;  /* per node duration factor of the evaluation */
    uint8_t *cut;   /* per node, NULL none: 1 = evaluate without its waits (what-if: the wait
                     * is gone, the call costs its own time only) */
} an_graph;

/* Reads the inputs (each one database; a merged file gives one process per set). */
int an_graph_load(const char *const *paths, size_t n, an_graph **out, char *err, size_t errlen);
void an_graph_free(an_graph *g);

/* ---- what-if ------------------------------------------------------------------------------ */
enum an_target { AT_KERNEL, AT_COPY, AT_API, AT_MPI, AT_RANGE, AT_FUNCTION, AT_RANK, AT_TARGETS };
extern const char *const an_target_name[AT_TARGETS];

typedef struct an_whatif {
    int target;
    char *pattern; /* the regex text (AT_RANK: the rank number) */
    regex_t re;
    double factor; /* >= 0 */
    char *text;    /* the spec as given */
} an_whatif;

/* Parses "TARGET:REGEX=FACTOR" (kernel, copy, api, mpi, range, function, rank). 0 or -1 (err
 * names the spec and the valid targets). */
int an_whatif_parse(const char *spec, an_whatif *w, char *err, size_t errlen);
void an_whatif_free(an_whatif *w);

/* Per-node factors from what-ifs (1 everywhere when n == 0) into g->factor. */
void an_factors(an_graph *g, const an_whatif *w, size_t n);
/* Evaluates event times with g->factor (engine.c). Returns the run's end. */
int64_t an_evaluate(an_graph *g);
/* A floor for an evaluation's time: one pass writing every event's recorded time into g->t
 * (the graph must be evaluated again before its times are read). */
void an_sweep(an_graph *g);
/* The edge that binds event v in the last evaluation (the latest arrival, recomputed from the
 * evaluated times: nothing per event is stored): AN_BIND_*; an_bind_edge gives it as an edge,
 * a stored one or the implicit one written into tmp, NULL for AN_BIND_NONE. */
uint32_t an_bind(const an_graph *g, uint32_t v);
const an_edge_t *an_bind_edge(const an_graph *g, uint32_t v, uint32_t bind, an_edge_t *tmp);
/* The type (an_edge) of the edge that binds event v in the last evaluation, -1 none. */
int an_bind_type(const an_graph *g, uint32_t v);
/* A node's aux (an_node.aux, wherever it is kept); an_set_aux sets it: 0, or -1 (out of
 * memory). */
static inline int64_t an_aux(const an_graph *g, uint32_t node)
{
    const an_node *n = &g->nodes[node];
    uint64_t v = 0;
    if (!(n->flags & AN_F_AUXBIG)) return n->aux;
    op_u64map_get(&g->auxbig, node, &v);
    return (int64_t)v;
}
int an_set_aux(an_graph *g, uint32_t node, int64_t v);
/* A node's intrinsic time (a wait: what it took after the last thing it waited for; other
 * work: its duration) and its start's slack. */
static inline int64_t an_intrinsic(const an_graph *g, uint32_t node)
{
    const an_node *n = &g->nodes[node];
    return n->wait ? an_aux(g, node) : n->end - n->start;
}
#define AN_EBLOCK_SHIFT 4
/* Node i's stored incoming edges: edges[*k0 .. *k1) (its start's first). */
static inline void an_edges_of(const an_graph *g, uint32_t i, uint32_t *k0, uint32_t *k1)
{
    uint32_t k = 0, e = 0;
    if (g->nodes[i].flags & AN_F_EDGES) { /* its first edge lies in its block's, from there */
        k = g->eblock[i >> AN_EBLOCK_SHIFT];
        while (g->edges[k].dst / 2 < i) k++;
        for (e = k; e < g->n_edges && g->edges[e].dst / 2 == i; e++) {
        }
    }
    *k0 = k;
    *k1 = e;
}
int64_t an_slack(const an_graph *g, uint32_t node);
int64_t an_eslack(const an_graph *g, uint32_t node);
/* The edges of the graph, the implicit ones counted. */
size_t an_edge_count(const an_graph *g);

/* ---- critical path -------------------------------------------------------------------------- */
typedef struct an_seg { /* one piece of the path */
    int64_t t0, t1;     /* evaluated times */
    uint32_t node;
    uint8_t edge; /* the edge type followed (AE_SELF: the node's own duration) */
} an_seg;
typedef struct an_path {
    an_seg *segs; /* in time order */
    size_t n, cap;
    int64_t t0, t1;
} an_path;
/* Walks back from event `from` (UINT32_MAX: the last event) while times are >= stop. */
int an_critical_path(an_graph *g, uint32_t from, int64_t stop, an_path *p);
void an_path_free(an_path *p);

/* A path's time by (kind, name): the caller's aggregation of segments. */
typedef struct an_item {
    int kind; /* an_kind, or -1 for idle/latency */
    uint32_t name;
    int64_t ns;
    uint32_t rank_mask; /* for the console: ranks where it sits */
} an_item;

/* ---- the analysis as a whole (analysis.c) -----------------------------------------------------
 */
typedef struct an_options {
    const char *iteration; /* a range name that delimits iterations, NULL none */
    int64_t win0, win1;    /* a window (evaluated on recorded times), win1 == 0: none */
    an_whatif *whatifs;
    size_t n_whatifs;
    int top; /* rows per table on the console */
} an_options;

typedef struct an_finding {
    char rule[32];
    char title[160];
    char evidence[512];
    char advice[200];
    char whatif[200];
    double gain_pct; /* predicted gain, % of wall time */
    int64_t gain_ns;
} an_finding;

typedef struct an_iter {
    int64_t start, end;   /* recorded */
    int64_t pstart, pend; /* predicted */
} an_iter;

typedef struct an_report {
    int64_t wall, predicted;
    an_item *path_items; /* by node (kind, name), largest first */
    size_t n_path_items;
    an_item *path_funcs; /* the path's CPU work by sampled leaf function */
    size_t n_path_funcs;
    an_path path;
    an_iter *iters;
    size_t n_iters;
    an_finding *findings;
    size_t n_findings;
    an_finding *minor; /* below the threshold: not worth fixing */
    size_t n_minor;
    an_finding *hot; /* hot spots on / off the path: 2x faster */
    size_t n_hot;
} an_report;

/* qsort of n elements; nothing to do (and no call with a NULL array) below two */
static inline void an_qsort(void *base, size_t n, size_t size,
                            int (*cmp)(const void *, const void *))
{
    if (n > 1) qsort(base, n, size, cmp);
}

#define AN_FINDING_MIN_PCT 5.0
/* sync_in_loop: at least this many synchronize calls that waited for the GPU */
#define AN_SYNC_LOOP_MIN 10
/* wake edges (graph.c): a launching worker thread's gap between calls this long is a wait */
#define AN_WAKE_GAP_NS 100000
/* An operation that starts within this of the end of the work it waited for (its stream's
 * previous operation, or an event's work on another stream) waited for that work, not for its
 * launch: the GPU takes a few microseconds to start it (on the H200 1.0 µs across streams,
 * 1.0-2.7 µs between a stream's queued kernels; until 2026-11-29 graph.c gave the latter 1 µs,
 * and every queued kernel's launch latency held its recorded start) */
#define AN_EVENT_SLACK_NS 20000
/* pageable_copy: a pageable copy's time at pinned bandwidth, as a share of its recorded time
 * (measured on the H200 host, PCIe: 64 MiB host-to-device 8.5 ms pageable, 2.1 ms pinned) */
#define AN_PINNED_FACTOR 0.25f

int an_analyze(an_graph *g, const an_options *o, an_report *r, char *err, size_t errlen);
void an_report_free(an_report *r);

/* Output (render.c): the console text (the first screen says what to fix) and the JSON. */
void an_print_console(FILE *out, const an_graph *g, const an_options *o, const an_report *r);
void an_print_json(FILE *out, const an_graph *g, const an_options *o, const an_report *r,
                   const char *const *inputs, size_t n_inputs);

/* ---- overlap (overlap.c) ------------------------------------------------------------------- */
typedef struct an_gpu_overlap { /* one GPU of one process; recorded times, unions of streams */
    uint32_t process, streams;
    int64_t pid, device;
    int rank;
    int64_t compute_ns;      /* kernels other than nccl* */
    int64_t comm_ns;         /* nccl* kernels (communication) */
    int64_t copy_ns;         /* copies and memsets */
    int64_t busy_ns;         /* any of them */
    int64_t comm_overlap_ns; /* communication while computation runs */
    int64_t copy_overlap_ns; /* copies while a kernel (either kind) runs */
} an_gpu_overlap;
/* Per GPU and process, in lane order. 0, or -1 (out of memory). */
int an_overlap(const an_graph *g, an_gpu_overlap **out, size_t *n);
/* 100 x part / whole; -1 when whole is 0 (nothing to overlap). */
double an_overlap_pct(int64_t part, int64_t whole);

/* Human-readable name of a node ("kernel gemm", "MPI_Allreduce") into buf. */
const char *an_node_label(const an_graph *g, uint32_t node, char *buf, size_t len);

#endif /* OMNIPROF_ANALYZE_ANALYZE_H */
