/* graph_internal.h — what graph.c (reading the sets into nodes) and graph_links.c (the edges
 * between lanes and sets, finish) share while a graph is built (analyze.h has the graph itself). */
#ifndef OMNIPROF_ANALYZE_GRAPH_INTERNAL_H
#define OMNIPROF_ANALYZE_GRAPH_INTERNAL_H

#include "analyze/analyze.h"
#include "common/alloc.h"
#include "common/u64map.h"
#include "db/reader.h"

#define GROW(arr, n, cap)                                                                          \
    do {                                                                                           \
        if ((n) == (cap)) {                                                                        \
            size_t nc_ = (cap) ? (cap)*2 : 1024;                                                   \
            void *p_ = op_realloc((arr), nc_ * sizeof *(arr));                                     \
            if (!p_) goto oom;                                                                     \
            (arr) = p_;                                                                            \
            (cap) = nc_;                                                                           \
        }                                                                                          \
    } while (0)

enum { RC_API, RC_MARKER, RC_MPI, RC_NCCL, RC_WRAP, RC_SYNC, RC_OTHER };

typedef struct reg { /* a region while a set is read: 40 bytes */
    int64_t start, end, corr;
    uint32_t name;
    uint32_t lane : 24; /* < AN_LANES_MAX */
    uint32_t cat : 8;
    uint32_t msg_first, msg_n; /* MPI message ends (msgs) */
} reg;

typedef struct gop { /* a GPU operation while a set is read: 32 bytes */
    int64_t start, end, corr;
    uint32_t name;
    uint32_t lane : 24; /* < AN_LANES_MAX */
    uint32_t kind : 8;
} gop;

typedef struct msgend {
    uint64_t id;
    uint32_t node; /* region index while reading, then node */
    uint8_t out;
} msgend;

typedef struct coll { /* an MPI collective call or a barrier wait: matched by (key, k) */
    uint64_t key;     /* name id (+ process for barriers; ^ AN_NCCL_KEY for NCCL kernels) */
    uint32_t k;       /* its occurrence on its lane */
    uint32_t node;
    int64_t corr;     /* an NCCL kernel's correlation id (its launch order), else 0 */
} coll;
#define AN_NCCL_KEY 0xcc1u /* the low bits of an NCCL kernel's collective key */

typedef struct ghost { /* an NCCL kernel CUPTI gave no times: it still takes its k (numbering) */
    uint64_t stream;   /* its stream's key (builder.stream_of) */
    int64_t corr;
    uint32_t name, lane; /* lane: resolved when the set's collectives are numbered */
} ghost;

typedef struct cnode { /* a correlation id and the call that launched it: 24 bytes */
    int64_t corr;
    int64_t start;     /* the node's recorded start */
    uint32_t node;     /* the node + 1 */
    uint32_t dur_wait; /* bit 31: the node waits; below: its duration, CT_DUR_BIG: longer */
} cnode;
#define CT_WAIT 0x80000000u
#define CT_DUR_BIG 0x7fffffffu

/* corr -> launching node, with what the GPU operations' launch edges need of the node (so that
 * the node, on another lane, a cache miss each in stream order, is not read): appended while the
 * threads are flattened, lane by lane in time order, so the table is a few runs of growing ids
 * (one per launching thread); searched run by run, or sorted whole where the runs are many.
 * Where one call gave several nodes the last (the highest node) holds. */
#define CT_RUNS_MAX 8
typedef struct corr_tab {
    cnode *e;
    size_t n, cap;
    size_t run[CT_RUNS_MAX + 1]; /* run r: e[run[r] .. run[r + 1]) */
    size_t n_runs;
    size_t hint[CT_RUNS_MAX];
} corr_tab;
int an_gb_ct_put(corr_tab *t, const an_graph *g, int64_t corr, uint64_t node1);
/* After the last put: finds the runs (sorts the table where they are more than CT_RUNS_MAX). */
void an_gb_ct_seal(corr_tab *t);
/* corr's launching node's entry (searched from the last answers: ids mostly grow from one
 * question to the next), NULL none */
const cnode *an_gb_ct_get(corr_tab *t, int64_t corr);
static inline int64_t an_gb_ct_dur(const an_graph *g, const cnode *c)
{
    uint32_t d = c->dur_wait & ~CT_WAIT;
    return d == CT_DUR_BIG ? g->nodes[c->node - 1].end - c->start : (int64_t)d;
}

/* database id -> value (graph_tabs.c) */
#define IDS_DENSE (1u << 22)
typedef struct idmap {
    uint32_t *a; /* id -> value + 1, 0 unknown */
    size_t cap;
    op_u64map big;
} idmap;
int an_gb_ids_get(const idmap *m, int64_t id, uint32_t *v);
int an_gb_ids_put(idmap *m, int64_t id, uint32_t v);
void an_gb_ids_free(idmap *m);


typedef struct ssync { /* a stream or event synchronize's record: what it waited for */
    int64_t start, end, stream; /* stream: the stream row (the lanes' tid); 0 an event's */
    uint32_t lane;
    uint32_t point; /* an event synchronize: the last GPU node before the event, UINT32_MAX none */
    uint8_t event;  /* 1: an event synchronize whose recording is known (point says what) */
} ssync;

typedef struct cevent { /* a recording of a CUDA event on a stream (omniprof_cuda_event) */
    int64_t corr, stream, cuda_event, sync_id;
    int64_t t; /* the recording call's start (after the threads are flattened); INT64_MIN none */
} cevent;

typedef struct esync { /* an event synchronize (wait 1) or a stream's wait for an event (2) */
    int64_t start, end, stream, cuda_event, sync_id;
    uint32_t lane;
    uint8_t wait;
} esync;

typedef struct builder {
    an_graph *g;
    uint8_t *nccl; /* per name id: 0 unknown, else 1 | 2 an NCCL kernel | 4 an NCCL call */
    size_t n_nccl;
    ssync *syncs; /* this set's, sorted by (lane, start) */
    size_t n_syncs, cap_syncs;
    cevent *cevs; /* this set's event recordings and event waits */
    size_t n_cevs, cap_cevs;
    esync *esyncs;
    size_t n_esyncs, cap_esyncs;
    int64_t *launch_t; /* per GPU node of this set (from gpu_first): its launch call's start */
    uint32_t *launch_e; /* and the index its launch edge has in g->edges, if it has one */
    uint32_t gpu_first;
    reg *regs;
    size_t n_regs, cap_regs;
    gop *ops;
    size_t n_ops, cap_ops;
    msgend *msgs;
    size_t n_msgs, cap_msgs;
    coll *colls;
    size_t n_colls, cap_colls;
    ghost *ghosts; /* this set's untimed NCCL kernels */
    size_t n_ghosts, cap_ghosts;
    op_u64map lane_of; /* (set, thread row) -> lane + 1 */
    op_u64map stream_of;
    uint32_t process;
    int64_t pid, rank;
    int64_t p_begin;
    int too_many_lanes; /* more than AN_LANES_MAX lanes: the error says so */
} builder;

int an_gb_add_edge(an_graph *g, uint32_t src, uint32_t dst, int type, int64_t lag);
uint32_t an_gb_intern(an_graph *g, const unsigned char *s, int n);

/* graph_links.c */
int an_gb_wake_edges(builder *b, size_t lane_first, size_t sample_first);
int an_gb_on_stream_sync(int64_t thread_row, int64_t start, int64_t end, int64_t stream,
                         void *arg);
int an_gb_cmp_ssync(const void *a, const void *b);
const ssync *an_gb_wait_record(const builder *b, const an_node *wn);
int an_gb_on_event_sync(const op_rd_event_sync *s, void *arg);
int an_gb_on_cuda_event(int64_t corr, int64_t stream, int64_t cuda_event, int64_t sync_id,
                        void *arg);
int an_gb_event_links(builder *b, size_t lane_first);
int an_gb_is_nccl_kernel(builder *b, uint32_t name);
int an_gb_is_nccl_call(builder *b, uint32_t name);
int an_gb_finish(builder *b, char *err, size_t errlen);
int an_gb_ghost_shift(builder *b, size_t coll_first);

/* graph_sort.c: the regions' order through idx (tmp: scratch of n_regs), and the operations
 * sorted in place; each by lane, then start (regions: the longer first). 0, or -1 (no memory). */
int an_gb_sort_regs(builder *b, uint32_t *idx, uint32_t *tmp);
int an_gb_sort_ops(builder *b);

#endif /* OMNIPROF_ANALYZE_GRAPH_INTERNAL_H */
