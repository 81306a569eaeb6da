/* graph.c — builds the execution graph of analyze.h from databases, through the db reader.
 *
 * Per input set (one process): its threads, regions (API calls, markers, MPI calls, wrapped
 * calls), CPU call-stack samples, kernels and copies are read once, in rowid order, into
 * compact arrays; then, per thread, the regions are sorted by (start, end descending) and
 * flattened into leaf nodes that tile the thread's time (a wait — a synchronize call, an MPI
 * call that completes a message or a collective, a join — is one node: what runs inside it is
 * the runtime's business). GPU operations are sorted per stream. After every set is read the
 * cross-lane edges are added:
 *   launch -> operation   the API call with the operation's correlation id (lag: the recorded
 *                         launch latency, capped by the call's length when the stream was busy);
 *   GPU -> host wait      a synchronize waits for the last operation, per stream of its process,
 *                         launched before the wait began (device-wide: cudaDeviceSynchronize,
 *                         blocking copies, and event waits, whose event's stream is not
 *                         recorded); a stream synchronize whose SYNCHRONIZATION_STREAM record
 *                         names its stream, for that stream's only; a blocking copy call for
 *                         its copy;
 *   send -> receive       MPI messages paired by the reader's message keys (the receive or wait
 *                         that completes the message ends after the send began);
 *   collectives           the k-th call of one MPI collective name on each rank of the run are
 *                         one collective: each ends after every participant arrived; likewise
 *                         the k-th NCCL kernel (ncclDevKernel_*, ncclKernel_*) of one name on
 *                         each rank's stream;
 *   barriers              the k-th pthread_barrier_wait of each thread of a process, likewise;
 *   join                  a pthread_join waits for the thread of its process whose last work
 *                         ended last before the join returned (not yet joined);
 *   creation              a thread's first node starts after the creating (main) thread reached
 *                         the recorded point.
 * The edges between lanes and sets are wired in graph_links.c (graph_internal.h is what the two
 * share). Assumptions and what this cannot see: docs/analyze.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/graph_internal.h"
#include "common/alloc.h"
#include "common/u64map.h"
#include "db/reader.h"

const char *const an_kind_name[AN_KINDS] = {"cpu",    "api",      "launch", "gpu_wait",
                                            "mpi",    "mpi_wait", "wrap",   "join",
                                            "kernel", "copy",     "memset"};


int an_gb_add_edge(an_graph *g, uint32_t src, uint32_t dst, int type, int64_t lag)
{
    GROW(g->edges, g->n_edges, g->cap_edges);
    g->edges[g->n_edges++] = (an_edge_t){src, dst, (uint64_t)type, lag};
    return 0;
oom:
    return -1;
}

uint32_t an_gb_intern(an_graph *g, const unsigned char *s, int n)
{
    uint32_t id = 0;
    if (!s) s = (const unsigned char *)"", n = 0;
    if (op_strtab_intern(&g->names, (const char *)s, (size_t)n, &id) != 0) return 0;
    return id;
}

static int cat_of(const unsigned char *c, int n)
{
    if (!c) return RC_OTHER;
#define IS(s) (n == (int)sizeof(s) - 1 && memcmp(c, s, sizeof(s) - 1) == 0)
    if (IS("CUDA_RUNTIME_API") || IS("CUDA_DRIVER_API") || IS("OPENCL_API")) return RC_API;
    if (IS("MARKER_API") || IS("MARKER_RANGE_API")) return RC_MARKER;
    if (IS("MPI_API")) return RC_MPI;
    if (IS("NCCL_API")) return RC_NCCL;
    if (IS("FUNCTION_WRAPPER") || IS("FUNCTION_CALL")) return RC_WRAP;
    if (IS("SYNCHRONIZATION")) return RC_SYNC;
#undef IS
    if (n >= 6 && memcmp(c, "MARKER", 6) == 0) return RC_MARKER;
    return RC_OTHER;
}

static int has(const char *s, const char *sub)
{
    return strstr(s, sub) != NULL;
}

/* The node kind of a region by its category and name. */
static int kind_of(const an_graph *g, const reg *r, int *wait)
{
    const char *nm = op_strtab_str(&g->names, r->name);
    *wait = 0;
    switch (r->cat) {
    case RC_SYNC: /* a stream's wait for an event is the GPU's: the call does not block */
        if (has(nm, "STREAM_WAIT_EVENT")) return AN_API;
        *wait = 1;
        return AN_GPUWAIT;
    case RC_API:
        if (has(nm, "Synchronize")) {
            *wait = 1;
            return AN_GPUWAIT;
        }
        if (has(nm, "Launch") || has(nm, "launch")) return AN_LAUNCH;
        if ((has(nm, "Memcpy") || has(nm, "Memset") || has(nm, "MemcpyDtoH") ||
             has(nm, "MemcpyHtoD")) &&
            !has(nm, "Async")) {
            *wait = 1;
            return AN_GPUWAIT;
        }
        if (has(nm, "Async")) return AN_LAUNCH;
        return AN_API;
    case RC_MPI:
        if (r->msg_n) {
            *wait = 1;
            return AN_MPIWAIT;
        }
        if (has(nm, "reduce") || has(nm, "Reduce") || has(nm, "Barrier") || has(nm, "Bcast") ||
            has(nm, "gather") || has(nm, "Gather") || has(nm, "scatter") || has(nm, "Scatter") ||
            has(nm, "Alltoall") || has(nm, "Finalize")) {
            *wait = 1;
            return AN_MPIWAIT;
        }
        return AN_MPI;
    case RC_NCCL: return AN_API;
    case RC_WRAP:
        if (has(nm, "pthread_join") || has(nm, "pthread_barrier_wait")) {
            *wait = 1;
            return AN_JOIN;
        }
        return AN_WRAP;
    case RC_MARKER: return AN_CPU;
    default: return AN_API;
    }
}

static int on_thread(const op_thread_info *t, void *arg)
{
    builder *b = arg;
    an_graph *g = b->g;
    if (g->n_lanes >= AN_LANES_MAX) {
        b->too_many_lanes = 1;
        return -1;
    }
    GROW(g->lanes, g->n_lanes, g->cap_lanes);
    an_lane *l = &g->lanes[g->n_lanes];
    memset(l, 0, sizeof *l);
    l->pid = t->pid;
    l->tid = t->tid;
    l->rank = (int)b->rank;
    l->process = b->process;
    if (op_u64map_put(&b->lane_of, (uint64_t)t->thread_row, g->n_lanes + 1) != 0) goto oom;
    g->n_lanes++;
    return 0;
oom:
    return -1;
}

static uint32_t thread_lane(builder *b, const op_ev *ev)
{
    uint64_t v = 0;
    if (op_u64map_get(&b->lane_of, (uint64_t)ev->thread_row, &v)) return (uint32_t)(v - 1);
    an_graph *g = b->g;
    op_thread_info t = {
        ev->thread_row, ev->process_row, ev->pid ? ev->pid : b->pid, ev->tid, NULL, NULL, NULL};
    if (on_thread(&t, b) != 0) return UINT32_MAX;
    return (uint32_t)(g->n_lanes - 1);
}

static uint32_t stream_lane(builder *b, const op_ev *ev)
{
    uint64_t key = ((uint64_t)(ev->agent_index + 1) << 40) ^ ((uint64_t)ev->queue_id << 20) ^
                   (uint64_t)ev->stream_id;
    uint64_t v = 0;
    if (op_u64map_get(&b->stream_of, key, &v)) return (uint32_t)(v - 1);
    an_graph *g = b->g;
    if (g->n_lanes >= AN_LANES_MAX) {
        b->too_many_lanes = 1;
        return UINT32_MAX;
    }
    GROW(g->lanes, g->n_lanes, g->cap_lanes);
    an_lane *l = &g->lanes[g->n_lanes];
    memset(l, 0, sizeof *l);
    l->gpu = 1;
    l->pid = b->pid;
    l->tid = ev->stream_id;
    l->device = ev->agent_index;
    l->rank = (int)b->rank;
    l->process = b->process;
    if (op_u64map_put(&b->stream_of, key, g->n_lanes + 1) != 0) goto oom;
    g->n_lanes++;
    return (uint32_t)(g->n_lanes - 1);
oom:
    return UINT32_MAX;
}

/* The first node in [lo, hi) (one lane's, by start) whose start is after t, searched from h
 * outwards (galloping): the same answer as a binary search over [lo, hi). */
static uint32_t upper_start(const an_graph *g, uint32_t lo, uint32_t hi, int64_t t, uint32_t h)
{
    uint32_t step = 1;
    if (h < lo || h > hi) h = lo;
    if (h > lo && g->nodes[h - 1].start > t) { /* behind the hint: gallop back */
        uint32_t b = h - 1; /* start(b) > t */
        while (b - lo >= step && g->nodes[b - step].start > t) {
            b -= step;
            step *= 2;
        }
        hi = b;
        lo = b - lo >= step ? b - step + 1 : lo;
    } else { /* start(h - 1) <= t: gallop on */
        uint32_t a = h;
        while (hi - a >= step && g->nodes[a + step - 1].start <= t) {
            a += step;
            step *= 2;
        }
        lo = a;
        if (hi - a >= step) hi = a + step - 1;
    }
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->nodes[mid].start <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int add_node(an_graph *g, int64_t s, int64_t e, uint32_t lane, uint32_t name, int kind,
                    int wait, int32_t range)
{
    GROW(g->nodes, g->n_nodes, g->cap_nodes);
    an_node *n = &g->nodes[g->n_nodes++];
    memset(n, 0, sizeof *n);
    n->start = s;
    n->end = e < s ? s : e;
    n->lane = lane;
    n->name = name;
    n->kind = (uint8_t)kind;
    n->wait = (uint8_t)wait;
    n->region = range;
    return 0;
oom:
    return -1;
}

/* The open region at stack depth sp (1-based) closes: when it is the outermost region of its
 * user range, the range's node span ends at the last node emitted. */
static void close_region(an_graph *g, const int32_t *stack_range, size_t sp)
{
    int32_t rg = stack_range[sp - 1];
    if (rg >= 0 && (sp < 2 || stack_range[sp - 2] != rg)) {
        an_range *R = &g->ranges[rg];
        R->n_nodes = g->n_nodes > R->first_node ? (uint32_t)(g->n_nodes - R->first_node) : 0;
        R->last_node = R->n_nodes ? (uint32_t)g->n_nodes - 1 : R->first_node;
    }
}

/* Flattens the regions of one set into nodes, lane by lane; GPU operations likewise. Sets
 * per-set maps: corr -> launch node, and records the waits to wire afterwards. */
typedef struct pending { /* a node whose dependencies are resolved after the set */
    uint32_t node;
    int64_t corr;
} pending;

static int flatten(builder *b, corr_tab *corr_node, pending **waits, size_t *n_waits,
                   size_t *cap_waits)
{
    an_graph *g = b->g;
    uint32_t *idx = op_malloc((b->n_regs + 1) * sizeof *idx);
    /* the open regions: as deep as the nesting (grown as needed); the sort's scratch goes
     * before the nodes grow */
    size_t cap_stack = 64;
    uint32_t *stack = op_malloc((b->n_regs + 1) * sizeof *stack);
    int32_t *stack_range = op_malloc(cap_stack * sizeof *stack_range);
    if (!idx || !stack || !stack_range) goto oom;
    if (an_gb_sort_regs(b, idx, stack) != 0) goto oom;
    op_free(stack);
    stack = op_malloc(cap_stack * sizeof *stack);
    if (!stack) goto oom;
    uint32_t name_cpu = an_gb_intern(g, (const unsigned char *)"[cpu]", 5);
    size_t i = 0;
    while (i < b->n_regs) {
        uint32_t lane = b->regs[idx[i]].lane;
        an_lane *L = &g->lanes[lane];
        L->first = (uint32_t)g->n_nodes;
        int is_main = L->pid == L->tid;
        int64_t cursor =
            is_main && b->p_begin < b->regs[idx[i]].start ? b->p_begin : b->regs[idx[i]].start;
        size_t sp = 0;
        /* emits [cursor, t) as the work of the innermost open region (or plain CPU) */
#define EMIT_TO(tt)                                                                                \
    do {                                                                                           \
        int64_t t_ = (tt);                                                                         \
        if (t_ > cursor) {                                                                         \
            int32_t rg_ = sp ? stack_range[sp - 1] : -1;                                           \
            const reg *top_ = sp ? &b->regs[stack[sp - 1]] : NULL;                                 \
            int w_ = 0, k_ = AN_CPU;                                                               \
            uint32_t nm_ = name_cpu;                                                               \
            if (top_ && top_->cat != RC_MARKER) {                                                  \
                k_ = kind_of(g, top_, &w_);                                                        \
                nm_ = top_->name;                                                                  \
            } else if (top_)                                                                       \
                nm_ = top_->name;                                                                  \
            if (add_node(g, cursor, t_, lane, nm_, k_, 0, rg_) != 0) goto oom;                     \
            if (top_ && top_->cat != RC_MARKER && top_->corr)                                      \
                if (an_gb_ct_put(corr_node, g, top_->corr, g->n_nodes) != 0) goto oom;           \
            cursor = t_;                                                                           \
        }                                                                                          \
    } while (0)
        for (; i < b->n_regs && b->regs[idx[i]].lane == lane; i++) {
            reg *r = &b->regs[idx[i]];
            while (sp && b->regs[stack[sp - 1]].end <= r->start) {
                EMIT_TO(b->regs[stack[sp - 1]].end);
                close_region(g, stack_range, sp--);
            }
            if (r->start < cursor) r->start = cursor; /* overlaps a closed sibling: clamp */
            if (sp && r->end > b->regs[stack[sp - 1]].end) r->end = b->regs[stack[sp - 1]].end;
            if (r->end < r->start) r->end = r->start;
            int wait = 0, kind = AN_CPU;
            if (r->cat != RC_MARKER) kind = kind_of(g, r, &wait);
            EMIT_TO(r->start);
            if (wait) { /* one node; what runs inside belongs to it */
                if (add_node(g, r->start, r->end, lane, r->name, kind, 1,
                             sp ? stack_range[sp - 1] : -1) != 0)
                    goto oom;
                uint32_t nid = (uint32_t)g->n_nodes - 1;
                if (r->corr && an_gb_ct_put(corr_node, g, r->corr, nid + 1) != 0) goto oom;
                for (uint32_t m = 0; m < r->msg_n; m++) b->msgs[r->msg_first + m].node = nid;
                if (kind == AN_GPUWAIT ||
                    (kind == AN_JOIN && has(op_strtab_str(&g->names, r->name), "join"))) {
                    GROW(*waits, *n_waits, *cap_waits);
                    (*waits)[(*n_waits)++] = (pending){nid, r->corr};
                } else if ((kind == AN_MPIWAIT && !r->msg_n) || kind == AN_JOIN) {
                    GROW(b->colls, b->n_colls, b->cap_colls);
                    uint64_t key = kind == AN_JOIN ? ((uint64_t)r->name << 32) ^
                                                         ((uint64_t)b->process << 8) ^ 0xb
                                                   : (uint64_t)r->name << 32;
                    b->colls[b->n_colls++] = (coll){key, 0, nid, 0};
                }
                cursor = r->end;
                /* skip everything nested inside */
                while (i + 1 < b->n_regs && b->regs[idx[i + 1]].lane == lane &&
                       b->regs[idx[i + 1]].start < r->end)
                    i++;
                continue;
            }
            int32_t rg = sp ? stack_range[sp - 1] : -1;
            if (r->cat == RC_MARKER) {
                GROW(g->ranges, g->n_ranges, g->cap_ranges);
                an_range *R = &g->ranges[g->n_ranges];
                *R = (an_range){
                    r->start, r->end, r->name, lane, rg, (uint32_t)g->n_nodes, (uint32_t)g->n_nodes,
                    0};
                rg = (int32_t)g->n_ranges++;
            }
            if (r->cat != RC_MARKER && r->corr && r->end == r->start) {
                /* a zero-length call still launches: give it a node */
                if (add_node(g, r->start, r->end, lane, r->name, kind, 0, rg) != 0) goto oom;
                if (an_gb_ct_put(corr_node, g, r->corr, g->n_nodes) != 0) goto oom;
                continue;
            }
            if (sp == cap_stack) {
                uint32_t *ns = op_realloc(stack, 2 * cap_stack * sizeof *ns);
                if (!ns) goto oom;
                stack = ns;
                int32_t *nr = op_realloc(stack_range, 2 * cap_stack * sizeof *nr);
                if (!nr) goto oom;
                stack_range = nr;
                cap_stack *= 2;
            }
            stack[sp] = idx[i];
            stack_range[sp] = rg;
            sp++;
        }
        while (sp) {
            EMIT_TO(b->regs[stack[sp - 1]].end);
            close_region(g, stack_range, sp--);
        }
#undef EMIT_TO
        L->n = (uint32_t)(g->n_nodes - L->first);
    }
    op_free(idx);
    op_free(stack);
    op_free(stack_range);
    return 0;
oom:
    op_free(idx);
    op_free(stack);
    op_free(stack_range);
    return -1;
}

/* The stack of `stack_id`: its frames as name ids, cached per set. */
static uint32_t stack_index(builder *b, op_rd_lookup *lk, op_u64map *stack_map, int64_t stack_id)
{
    an_graph *g = b->g;
    uint64_t v = 0;
    if (op_u64map_get(stack_map, (uint64_t)stack_id, &v)) return (uint32_t)v;
    op_buf text = {0};
    char leaf[512];
    op_rd_lookup_stack(lk, stack_id, &text, leaf, sizeof leaf);
    GROW(g->stacks, g->n_stacks, g->cap_stacks);
    g->stacks[g->n_stacks] = (uint32_t)g->n_stack_frames;
    GROW(g->stack_frames, g->n_stack_frames, g->cap_stack_frames);
    size_t at_count = g->n_stack_frames++;
    uint32_t cnt = 0;
    const char *p = text.p ? (const char *)text.p : "";
    const char *end = p + text.len;
    while (p < end && cnt < 128) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *inl = n > 10 ? strstr(p, " [inlined]") : NULL;
        if (inl && inl < p + n) n = (size_t)(inl - p);
        GROW(g->stack_frames, g->n_stack_frames, g->cap_stack_frames);
        g->stack_frames[g->n_stack_frames++] = an_gb_intern(g, (const unsigned char *)p, (int)n);
        cnt++;
        p = nl ? nl + 1 : end;
    }
    g->stack_frames[at_count] = cnt;
    op_buf_free(&text);
    if (op_u64map_put(stack_map, (uint64_t)stack_id, g->n_stacks) != 0) return 0;
    return (uint32_t)g->n_stacks++;
oom:
    op_buf_free(&text);
    return 0;
}






typedef struct names { /* per set: what the rows' ids name */
    op_rd_lookup *lk;
    idmap str;   /* string id -> interned name */
    idmap ksym;  /* kernel symbol id -> interned name */
    idmap cat;   /* category string id -> RC_* */
    int64_t agent_id, agent_index; /* the last agent looked up */
} names;

/* The interned name of string `id` (ksym: of kernel symbol `id`); UINT32_MAX out of memory. */
static uint32_t name_of(an_graph *g, names *nm, int ksym, int64_t id)
{
    uint32_t v = 0;
    idmap *m = ksym ? &nm->ksym : &nm->str;
    if (an_gb_ids_get(m, id, &v)) return v;
    int len = 0;
    const unsigned char *s =
        ksym ? op_rd_lookup_kernel(nm->lk, id, &len) : op_rd_lookup_string(nm->lk, id, &len);
    uint32_t in = 0;
    if (op_strtab_intern(&g->names, (const char *)s, (size_t)len, &in) != 0) return UINT32_MAX;
    return an_gb_ids_put(m, id, in) != 0 ? UINT32_MAX : in;
}

static int cat_of(const unsigned char *c, int n);

/* RC_* of category string `id`; -1 out of memory. */
static int cat_by_id(names *nm, int64_t id)
{
    uint32_t v = 0;
    if (an_gb_ids_get(&nm->cat, id, &v)) return (int)v;
    int len = 0;
    const unsigned char *s = id ? op_rd_lookup_string(nm->lk, id, &len) : NULL;
    int c = cat_of(len ? s : NULL, len);
    return an_gb_ids_put(&nm->cat, id, (uint32_t)c) != 0 ? -1 : c;
}

static int64_t agent_index_of(names *nm, int64_t agent_id)
{
    if (agent_id != nm->agent_id) {
        nm->agent_id = agent_id;
        nm->agent_index = agent_id < 0 ? agent_id : op_rd_lookup_agent_index(nm->lk, agent_id);
    }
    return nm->agent_index;
}

static int on_pageable(int64_t corr, int pageable, int is_async, void *arg)
{
    (void)is_async;
    return pageable && op_u64map_put(arg, (uint64_t)corr, 1) != 0 ? -1 : 0;
}

static int read_set(builder *b, op_src *src, op_src_set *set, char *err, size_t errlen)
{
    an_graph *g = b->g;
    corr_tab corr_node = {0}; /* corr -> node + 1 (the launching call) */
    op_u64map stack_map = {0};
    op_u64map pageable = {0}; /* corr of pageable copies */
    pending *waits = NULL;
    size_t n_waits = 0, cap_waits = 0;
    op_rd_lookup *lk = NULL;
    names nm = {0};
    op_rd rd;
    op_ev ev;
    int rc;
    b->n_regs = b->n_ops = b->n_ghosts = 0;
    nm.agent_id = INT64_MIN;
    lk = nm.lk = op_rd_lookup_new(src, set);
    if (!lk) goto oom;
    /* this set's lanes, message ends and collectives are the tails of the arrays from here */
    size_t lane_first = g->n_lanes, msg_first = b->n_msgs, coll_first = b->n_colls;
    size_t sample_first = g->n_samples;
    op_u64map_free(&b->lane_of);
    op_u64map_free(&b->stream_of);
    op_rd_cpu_process(src, set, &b->pid, &b->rank);
    if (op_rd_threads(src, set, on_thread, b, err, errlen) != 0) goto fail;
    b->p_begin = INT64_MAX;
    /* regions */
    /* the message keys (OP_RD_MPI) only where MPI calls were recorded: they cost a join */
    rc = op_rd_open(&rd, src, set, EV_REGION, NULL, op_rd_has_mpi(src, set) ? OP_RD_MPI : 0, err,
                    errlen);
    if (rc < 0) goto fail;
    while ((rc = op_rd_next(&rd, &ev, err, errlen)) == 1) {
        g->n_events_read++;
        uint32_t lane = thread_lane(b, &ev);
        if (lane == UINT32_MAX) goto oom_rd;
        GROW(b->regs, b->n_regs, b->cap_regs);
        reg *r = &b->regs[b->n_regs++];
        r->start = ev.start;
        r->end = ev.end < ev.start ? ev.start : ev.end;
        r->corr = ev.corr;
        r->name = name_of(g, &nm, 0, ev.name_id);
        r->lane = lane;
        int cat = cat_by_id(&nm, ev.category_id);
        if (r->name == UINT32_MAX || cat < 0) goto oom_rd;
        if (cat == RC_MARKER && an_gb_is_nccl_call(b, r->name)) cat = RC_NCCL; /* its NVTX */
        r->cat = (uint8_t)cat;
        r->msg_first = (uint32_t)b->n_msgs;
        r->msg_n = 0;
        if (ev.start < b->p_begin) b->p_begin = ev.start;
        if (ev.mpi_flows) {
            const unsigned char *p = ev.mpi_flows, *e = p + ev.mpi_flows_len;
            int out;
            uint64_t id;
            while ((p = op_rd_mpi_flow_next(p, e, &out, &id)) != NULL) {
                if (out) continue; /* sends gate nothing here: their receive's end is what waits */
                GROW(b->msgs, b->n_msgs, b->cap_msgs);
                b->msgs[b->n_msgs++] = (msgend){id, UINT32_MAX, 0};
                r->msg_n++;
            }
            /* the sends, recorded after: a message's send is the region whose flow says out */
            p = ev.mpi_flows;
            while ((p = op_rd_mpi_flow_next(p, e, &out, &id)) != NULL) {
                if (!out) continue;
                GROW(b->msgs, b->n_msgs, b->cap_msgs);
                b->msgs[b->n_msgs++] = (msgend){id, (uint32_t)(b->n_regs - 1), 2};
            }
        }
    }
    op_rd_close(&rd);
    if (rc < 0) goto fail;
    /* GPU operations */
    for (int k = 0; k < 2; k++) {
        rc = op_rd_open(&rd, src, set, k ? EV_COPY : EV_KERNEL, NULL, 0, err, errlen);
        if (rc < 0) goto fail;
        while ((rc = op_rd_next(&rd, &ev, err, errlen)) == 1) {
            g->n_events_read++;
            if (ev.start <= 0 || ev.end < ev.start) { /* CUPTI gave it no times: unplaceable */
                g->untimed_ops++;
                /* an NCCL kernel still takes its place in its stream's collectives */
                uint32_t gn = k || !ev.corr ? UINT32_MAX : name_of(g, &nm, 1, ev.name_id);
                if (gn != UINT32_MAX && an_gb_is_nccl_kernel(b, gn)) {
                    GROW(b->ghosts, b->n_ghosts, b->cap_ghosts);
                    b->ghosts[b->n_ghosts++] =
                        (ghost){((uint64_t)(agent_index_of(&nm, ev.agent_id) + 1) << 40) ^
                                    ((uint64_t)ev.queue_id << 20) ^ (uint64_t)ev.stream_id,
                                ev.corr, gn, UINT32_MAX};
                }
                continue;
            }
            ev.agent_index = agent_index_of(&nm, ev.agent_id);
            uint32_t lane = stream_lane(b, &ev);
            if (lane == UINT32_MAX) goto oom_rd;
            /* a kernel: its dispatch's own name (a renamed dispatch), else its symbol's */
            uint32_t name = UINT32_MAX;
            if (!k && ev.region_name_id) {
                name = name_of(g, &nm, 0, ev.region_name_id);
                if (name != UINT32_MAX && !*op_strtab_str(&g->names, name)) name = UINT32_MAX - 1;
            }
            if (name >= UINT32_MAX - 1) name = name_of(g, &nm, !k, ev.name_id);
            if (name == UINT32_MAX) goto oom_rd;
            GROW(b->ops, b->n_ops, b->cap_ops);
            gop *o = &b->ops[b->n_ops++];
            o->start = ev.start;
            o->end = ev.end < ev.start ? ev.start : ev.end;
            o->corr = ev.corr;
            o->name = name;
            o->lane = lane;
            o->kind = k ? (strstr(op_strtab_str(&g->names, name), "SET") ? AN_SET : AN_COPY)
                        : AN_KERNEL;
            if (ev.start < b->p_begin) b->p_begin = ev.start;
        }
        op_rd_close(&rd);
        if (rc < 0) goto fail;
    }
    /* the stream each stream synchronize waited for */
    b->n_syncs = 0;
    if (op_rd_stream_syncs(src, set, an_gb_on_stream_sync, b, err, errlen) != OP_RD_OK) goto fail;
    /* event synchronizes, streams' waits for events, and the events' recordings */
    b->n_esyncs = b->n_cevs = 0;
    if (op_rd_event_syncs(src, set, an_gb_on_event_sync, b, err, errlen) != OP_RD_OK) goto fail;
    if (b->n_esyncs &&
        op_rd_cuda_events(src, set, an_gb_on_cuda_event, b, err, errlen) != OP_RD_OK)
        goto fail;
    an_qsort(b->syncs, b->n_syncs, sizeof *b->syncs, an_gb_cmp_ssync);
    /* copies from or to pageable memory */
    if (op_rd_copy_memory_kinds(src, set, on_pageable, &pageable, err, errlen) != OP_RD_OK)
        goto fail;
    /* CPU call-stack samples */
    rc = op_rd_open(&rd, src, set, EV_SAMPLE, NULL, 0, err, errlen);
    if (rc < 0) goto fail;
    while ((rc = op_rd_next(&rd, &ev, err, errlen)) == 1) {
        if (!ev.cpu_sample) continue;
        g->n_events_read++;
        uint32_t lane = thread_lane(b, &ev);
        if (lane == UINT32_MAX) goto oom_rd;
        GROW(g->samples, g->n_samples, g->cap_samples);
        g->samples[g->n_samples++] =
            (an_sample){ev.start, lane, stack_index(b, lk, &stack_map, ev.cpu_stack)};
    }
    op_rd_close(&rd);
    if (rc < 0) goto fail;
    if (b->p_begin == INT64_MAX) goto done; /* an empty set */

    /* threads -> nodes */
    size_t set_first_node = g->n_nodes;
    if (flatten(b, &corr_node, &waits, &n_waits, &cap_waits) != 0) goto oom;
    an_gb_ct_seal(&corr_node);
    /* the regions' message ends now name nodes; drop the ends of regions not made nodes. The
     * regions are not needed after: their buffer goes before the streams' nodes grow */
    for (size_t m = msg_first; m < b->n_msgs; m++)
        if (b->msgs[m].out == 2) { /* a send: its node is the node covering the region's start */
            const reg *r = &b->regs[b->msgs[m].node];
            an_lane *L = &g->lanes[r->lane];
            uint32_t lo = L->first, hi = L->first + L->n;
            while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (g->nodes[mid].start <= r->start)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            b->msgs[m].node = lo > L->first ? lo - 1 : UINT32_MAX;
            b->msgs[m].out = 1;
        }
    for (size_t m = msg_first; m < b->n_msgs; m++)
        if (b->msgs[m].out == 0 && b->msgs[m].node >= g->n_nodes) b->msgs[m].node = UINT32_MAX;
    op_free(b->regs);
    b->regs = NULL;
    b->cap_regs = 0;
    /* streams -> nodes */
    if (an_gb_sort_ops(b) != 0) goto oom;
    b->gpu_first = (uint32_t)g->n_nodes;
    if (b->n_esyncs) { /* launch times, for the event waits (an_gb_event_links) */
        op_free(b->launch_t);
        op_free(b->launch_e);
        b->launch_t = op_malloc((b->n_ops + 1) * sizeof *b->launch_t);
        b->launch_e = op_malloc((b->n_ops + 1) * sizeof *b->launch_e);
        if (!b->launch_t || !b->launch_e) goto oom;
    }
    for (size_t i = 0; i < b->n_ops;) {
        uint32_t lane = b->ops[i].lane;
        g->lanes[lane].first = (uint32_t)g->n_nodes;
        for (; i < b->n_ops && b->ops[i].lane == lane; i++) {
            gop *o = &b->ops[i];
            if (add_node(g, o->start, o->end, lane, o->name, o->kind, 0, -1) != 0) goto oom;
            if (o->kind == AN_KERNEL && an_gb_is_nccl_kernel(b, o->name)) {
                /* an NCCL collective's kernel: the k-th of its name on each rank's stream are
                 * one collective (matched like MPI collectives; the ranks leave together) */
                GROW(b->colls, b->n_colls, b->cap_colls);
                b->colls[b->n_colls++] = (coll){((uint64_t)o->name << 32) ^ AN_NCCL_KEY, 0,
                                                (uint32_t)g->n_nodes - 1, o->corr};
            }
            /* the launching call, from its entry (the node lies on another lane) */
            const cnode *lc = o->corr ? an_gb_ct_get(&corr_node, o->corr) : NULL;
            uint64_t v = lc ? lc->node : 0;
            uint32_t nid = (uint32_t)g->n_nodes - 1;
            if (b->n_esyncs) {
                b->launch_t[nid - b->gpu_first] = v ? lc->start : o->start;
                b->launch_e[nid - b->gpu_first] = (uint32_t)g->n_edges; /* its launch edge, if */
            }
            if (o->kind == AN_COPY && o->corr && op_u64map_get(&pageable, (uint64_t)o->corr, NULL))
                g->nodes[nid].flags |= AN_F_PAGEABLE;
            if (v) {
                int64_t lag = o->start - lc->start, dur = an_gb_ct_dur(g, lc);
                /* stream busy: the operation waited for its stream, not for the launch (the
                 * H200 starts a queued kernel 1.0-2.7 us after the one before ends) */
                if (nid > g->lanes[lane].first &&
                    g->nodes[nid - 1].end >= o->start - AN_EVENT_SLACK_NS && lag > dur)
                    lag = dur;
                if (lag < 0) lag = 0;
                if (!(lc->dur_wait & CT_WAIT)) {
                    if (an_gb_add_edge(g, 2 * (uint32_t)(v - 1), 2 * nid, AE_LAUNCH, lag) != 0) goto oom;
                } else { /* a blocking copy: the call launched it and waits for it */
                    if (an_gb_add_edge(g, 2 * (uint32_t)(v - 1), 2 * nid, AE_LAUNCH, lag) != 0) goto oom;
                    if (an_gb_add_edge(g, 2 * nid + 1, 2 * (uint32_t)(v - 1) + 1, AE_WAIT, 0) != 0)
                        goto oom;
                }
            }
        }
        g->lanes[lane].n = (uint32_t)(g->n_nodes - g->lanes[lane].first);
    }
    if (b->n_esyncs) { /* the recording calls' times, then the event waits */
        for (size_t i = 0; i < b->n_cevs; i++) {
            const cnode *c = b->cevs[i].corr ? an_gb_ct_get(&corr_node, b->cevs[i].corr) : NULL;
            if (c) b->cevs[i].t = c->start;
        }
        if (an_gb_event_links(b, lane_first) != 0) goto oom;
    }
    /* host waits on the GPU: per stream of the process, the last operation launched before;
     * a stream synchronize whose record names its stream: that stream only; an event
     * synchronize whose recording is known: the event's work only */
    /* per stream, the last answer: a thread's waits come in time order, so the next answer is
     * a few operations on (a search from there, not from the middle: a cache miss per level) */
    uint32_t *hint = op_malloc((g->n_lanes - lane_first + 1) * sizeof *hint);
    if (!hint) goto oom;
    for (size_t l = lane_first; l < g->n_lanes; l++) hint[l - lane_first] = g->lanes[l].first;
    for (size_t w = 0; w < n_waits; w++) {
        an_node *wn = &g->nodes[waits[w].node];
        if (wn->kind == AN_JOIN) continue;
        const ssync *sy = b->n_syncs ? an_gb_wait_record(b, wn) : NULL;
        if (sy && sy->event) {
            if (sy->point != UINT32_MAX && g->nodes[sy->point].end <= wn->end + 1000 &&
                an_gb_add_edge(g, 2 * sy->point + 1, 2 * waits[w].node + 1, AE_WAIT, 0) != 0) {
                op_free(hint);
                goto oom;
            }
            continue;
        }
        int64_t only = sy ? sy->stream : 0;
        for (size_t l = lane_first; l < g->n_lanes; l++) {
            an_lane *L = &g->lanes[l];
            if (!L->gpu || L->process != b->process || !L->n) continue;
            if (only && L->tid != only) continue;
            /* the last op whose start is before the wait's end, and which was launched before
             * the wait began (its start is then what the stream reached) */
            uint32_t lo = upper_start(g, L->first, L->first + L->n, wn->end,
                                      hint[l - lane_first]); /* first op with start > wait end */
            hint[l - lane_first] = lo;
            if (lo == L->first) continue;
            uint32_t last = lo - 1;
            if (g->nodes[last].end > wn->end + 1000)
                continue; /* still running after: not waited for */
            if (an_gb_add_edge(g, 2 * last + 1, 2 * waits[w].node + 1, AE_WAIT, 0) != 0) {
                op_free(hint);
                goto oom;
            }
        }
    }
    op_free(hint);
    /* joins: the thread whose last work ended last before the join returned */
    {
        size_t nl = 0;
        uint32_t *cand = op_calloc(g->n_lanes + 1, sizeof *cand);
        uint8_t *used = op_calloc(g->n_lanes + 1, 1);
        if (!cand || !used) {
            op_free(cand);
            op_free(used);
            goto oom;
        }
        for (size_t l = lane_first; l < g->n_lanes; l++)
            if (!g->lanes[l].gpu && g->lanes[l].process == b->process && g->lanes[l].n &&
                g->lanes[l].pid != g->lanes[l].tid)
                cand[nl++] = (uint32_t)l;
        for (size_t w = 0; w < n_waits; w++) {
            an_node *wn = &g->nodes[waits[w].node];
            if (wn->kind != AN_JOIN) continue;
            int64_t best_t = INT64_MIN;
            size_t best = SIZE_MAX;
            for (size_t c = 0; c < nl; c++) {
                an_lane *L = &g->lanes[cand[c]];
                if (used[c] || cand[c] == wn->lane) continue;
                int64_t le = g->nodes[L->first + L->n - 1].end;
                if (le <= wn->end + 1000 && le > best_t) best_t = le, best = c;
            }
            if (best == SIZE_MAX) continue;
            used[best] = 1;
            an_lane *L = &g->lanes[cand[best]];
            if (an_gb_add_edge(g, 2 * (L->first + L->n - 1) + 1, 2 * waits[w].node + 1, AE_JOIN, 0) !=
                0) {
                op_free(cand);
                op_free(used);
                goto oom;
            }
        }
        op_free(cand);
        op_free(used);
    }
    /* thread creation: a non-main thread's first node after the main thread's point */
    {
        uint32_t main_lane = UINT32_MAX;
        for (size_t l = lane_first; l < g->n_lanes; l++)
            if (!g->lanes[l].gpu && g->lanes[l].process == b->process &&
                g->lanes[l].pid == g->lanes[l].tid && g->lanes[l].n)
                main_lane = (uint32_t)l;
        if (main_lane != UINT32_MAX) {
            an_lane *M = &g->lanes[main_lane];
            for (size_t l = lane_first; l < g->n_lanes; l++) {
                an_lane *L = &g->lanes[l];
                if (L->gpu || L->process != b->process || l == main_lane || !L->n) continue;
                int64_t t0 = g->nodes[L->first].start;
                uint32_t lo = upper_start(g, M->first, M->first + M->n, t0, M->first);
                if (lo == M->first) continue;
                uint32_t at = lo - 1;
                int64_t lag = t0 - g->nodes[at].start;
                if (an_gb_add_edge(g, 2 * at, 2 * L->first, AE_CREATE, lag) != 0) goto oom;
            }
        }
    }
    if (an_gb_wake_edges(b, lane_first, sample_first) != 0) goto oom;
    (void)set_first_node;
    /* collectives on this lane: number each (key) occurrence per lane */
    {
        op_u64map seen = {0};
        /* this set's are the ones not numbered yet, in node order (time order per lane) */
        for (size_t c = coll_first; c < b->n_colls; c++) {
            coll *cl = &b->colls[c];
            if (cl->k & 0x80000000u) continue; /* numbered already (an earlier set) */
            uint64_t key = cl->key ^ ((uint64_t)g->nodes[cl->node].lane * 0x9e3779b97f4a7c15ull);
            uint64_t v = 0;
            op_u64map_get(&seen, key, &v);
            cl->k = 0x80000000u | (uint32_t)v;
            if (op_u64map_put(&seen, key, v + 1) != 0) {
                op_u64map_free(&seen);
                goto oom;
            }
        }
        op_u64map_free(&seen);
    }
    if (b->n_ghosts && an_gb_ghost_shift(b, coll_first) != 0) goto oom;
    for (size_t m = msg_first; m < b->n_msgs; m++) b->msgs[m].out |= 4; /* this set is done */
done:
    op_rd_lookup_free(lk);
    an_gb_ids_free(&nm.str);
    an_gb_ids_free(&nm.ksym);
    an_gb_ids_free(&nm.cat);
    op_free(corr_node.e);
    op_u64map_free(&stack_map);
    op_u64map_free(&pageable);
    op_free(waits);
    return 0;
oom_rd:
    op_rd_close(&rd);
oom:
    snprintf(err, errlen, "%s: out of memory", src->path);
fail:
    if (b->too_many_lanes)
        snprintf(err, errlen,
                 "%s: more than %u threads and GPU streams in the inputs: not supported",
                 src->path, AN_LANES_MAX);
    op_rd_lookup_free(lk);
    an_gb_ids_free(&nm.str);
    an_gb_ids_free(&nm.ksym);
    an_gb_ids_free(&nm.cat);
    op_free(corr_node.e);
    op_u64map_free(&stack_map);
    op_u64map_free(&pageable);
    op_free(waits);
    return -1;
}


int an_graph_load(const char *const *paths, size_t n, an_graph **out, char *err, size_t errlen)
{
    *out = NULL;
    an_graph *g = op_calloc(1, sizeof *g);
    builder b;
    memset(&b, 0, sizeof b);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    b.g = g;
    for (size_t i = 0; i < n; i++) {
        op_src *src = NULL;
        if (op_src_open(paths[i], &src, err, errlen) != OP_RD_OK) goto fail;
        for (size_t s = 0; s < src->n_sets; s++) {
            b.process = (uint32_t)g->n_processes++;
            if (read_set(&b, src, &src->sets[s], err, errlen) != 0) {
                op_src_close(src);
                goto fail;
            }
        }
        op_src_close(src);
    }
    /* the read buffers go before the index is built: they are the peak's other half */
    op_free(b.regs);
    op_free(b.ops);
    op_free(b.syncs);
    op_free(b.cevs);
    op_free(b.esyncs);
    op_free(b.launch_t);
    op_free(b.launch_e);
    b.regs = NULL;
    b.ops = NULL;
    b.syncs = NULL;
    b.cevs = NULL;
    b.esyncs = NULL;
    b.launch_t = NULL;
    b.launch_e = NULL;
    if (an_gb_finish(&b, err, errlen) != 0) goto fail;
    op_free(b.msgs);
    op_free(b.colls);
    op_free(b.ghosts);
    op_free(b.nccl);
    op_u64map_free(&b.lane_of);
    op_u64map_free(&b.stream_of);
    *out = g;
    return 0;
fail:
    op_free(b.regs);
    op_free(b.ops);
    op_free(b.syncs);
    op_free(b.cevs);
    op_free(b.esyncs);
    op_free(b.launch_t);
    op_free(b.launch_e);
    op_free(b.nccl);
    op_free(b.msgs);
    op_free(b.colls);
    op_free(b.ghosts);
    op_u64map_free(&b.lane_of);
    op_u64map_free(&b.stream_of);
    an_graph_free(g);
    return -1;
}

void an_graph_free(an_graph *g)
{
    if (!g) return;
    op_strtab_free(&g->names);
    op_free(g->nodes);
    op_free(g->edges);
    op_free(g->lanes);
    op_free(g->ranges);
    op_free(g->samples);
    op_free(g->stack_frames);
    op_free(g->stacks);
    op_free(g->eblock);
    op_free(g->runs);
    op_free(g->t);
    op_u64map_free(&g->eslack);
    op_u64map_free(&g->wslack);
    op_u64map_free(&g->auxbig);
    op_free(g->factor);
    op_free(g->cut);
    op_free(g);
}
