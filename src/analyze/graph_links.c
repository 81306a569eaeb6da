/* graph_links.c — the edges of the execution graph (analyze.h) that join lanes and sets, after
 * graph.c has read them into nodes: wake edges of blocked worker threads, the stream a stream
 * synchronize waited for, NCCL kernels as collectives, and finish(): messages, collectives,
 * intrinsic times of waits and the edges' order. docs/analyze.md, "The execution graph". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/graph_internal.h"

int an_prepare(an_graph *g); /* engine.c */

static int cmp_sample(const void *a, const void *b)
{
    const an_sample *x = a, *y = b;
    if (x->lane != y->lane) return x->lane < y->lane ? -1 : 1;
    return (x->t > y->t) - (x->t < y->t);
}

static int cmp_msg(const void *a, const void *b)
{
    const msgend *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return (int)y->out - (int)x->out; /* the send first */
}

static int cmp_coll(const void *a, const void *b)
{
    const coll *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

/* Wake edges: a non-main thread that launches GPU work (PyTorch's autograd thread, a worker
 * fed by the main thread) and sits between its recorded calls for AN_WAKE_GAP_NS or more, with
 * no CPU sample in between, was blocked: woken by what the graph cannot see (a condition
 * variable, a queue). Its gap ends when the main thread reaches the recorded point, as a
 * thread's start does (AE_CREATE: the offset into the main thread's node, scaled with it), so
 * that the main thread made faster brings the worker's work forward. Lanes with samples are
 * left alone (a gap there may be CPU work the samples would show). */
int an_gb_wake_edges(builder *b, size_t lane_first, size_t sample_first)
{
    an_graph *g = b->g;
    uint32_t main_lane = UINT32_MAX;
    for (size_t l = lane_first; l < g->n_lanes; l++)
        if (!g->lanes[l].gpu && g->lanes[l].process == b->process &&
            g->lanes[l].pid == g->lanes[l].tid && g->lanes[l].n)
            main_lane = (uint32_t)l;
    if (main_lane == UINT32_MAX) return 0;
    const an_lane *M = &g->lanes[main_lane];
    uint32_t name_cpu = an_gb_intern(g, (const unsigned char *)"[cpu]", 5);
    uint32_t name_idle = an_gb_intern(g, (const unsigned char *)"[blocked]", 9);
    uint8_t *sampled = op_calloc(g->n_lanes - lane_first + 1, 1); /* this set's lanes */
    if (!sampled) return -1;
    for (size_t k = sample_first; k < g->n_samples; k++)
        if (g->samples[k].lane >= lane_first) sampled[g->samples[k].lane - lane_first] = 1;
    for (size_t l = lane_first; l < g->n_lanes; l++) {
        an_lane *L = &g->lanes[l];
        if (L->gpu || L->process != b->process || l == main_lane || L->n < 2 ||
            sampled[l - lane_first])
            continue;
        int launches = 0;
        for (uint32_t i = L->first; i < L->first + L->n && !launches; i++)
            launches = g->nodes[i].kind == AN_LAUNCH;
        if (!launches) continue;
        for (uint32_t i = L->first + 1; i < L->first + L->n; i++) {
            an_node *n = &g->nodes[i];
            if (n->kind != AN_CPU || n->region >= 0 || n->name != name_cpu ||
                n->end - n->start < AN_WAKE_GAP_NS)
                continue;
            uint32_t lo = M->first, hi = M->first + M->n;
            while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (g->nodes[mid].start <= n->end)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == M->first) continue;
            uint32_t at = lo - 1;
            n->name = name_idle;
            if (an_gb_add_edge(g, 2 * at, 2 * i + 1, AE_CREATE, n->end - g->nodes[at].start) != 0) {
                op_free(sampled);
                return -1;
            }
        }
    }
    op_free(sampled);
    return 0;
}

int an_gb_on_stream_sync(int64_t thread_row, int64_t start, int64_t end, int64_t stream,
                          void *arg)
{
    builder *b = arg;
    uint64_t v = 0;
    if (stream <= 0 || !op_u64map_get(&b->lane_of, (uint64_t)thread_row, &v)) return 0;
    GROW(b->syncs, b->n_syncs, b->cap_syncs);
    b->syncs[b->n_syncs++] = (ssync){start, end, stream, (uint32_t)(v - 1), UINT32_MAX, 0};
    return 0;
oom:
    return -1;
}

int an_gb_cmp_ssync(const void *a, const void *b)
{
    const ssync *x = a, *y = b;
    if (x->lane != y->lane) return x->lane < y->lane ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

/* The synchronization record of a wait node (a stream synchronize naming its stream, an event
 * synchronize whose recording is known): the first record on its lane inside it; NULL when
 * none says (the wait is then taken as device-wide). */
const ssync *an_gb_wait_record(const builder *b, const an_node *wn)
{
    size_t lo = 0, hi = b->n_syncs;
    while (lo < hi) { /* the first record of the lane starting at or after the wait's start */
        size_t mid = lo + (hi - lo) / 2;
        const ssync *m = &b->syncs[mid];
        if (m->lane < wn->lane || (m->lane == wn->lane && m->start < wn->start))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < b->n_syncs && b->syncs[lo].lane == wn->lane && b->syncs[lo].start <= wn->end &&
        b->syncs[lo].end <= wn->end)
        return &b->syncs[lo];
    return NULL;
}

int an_gb_on_event_sync(const op_rd_event_sync *s, void *arg)
{
    builder *b = arg;
    uint64_t v = 0;
    if (!op_u64map_get(&b->lane_of, (uint64_t)s->thread_row, &v)) return 0;
    GROW(b->esyncs, b->n_esyncs, b->cap_esyncs);
    b->esyncs[b->n_esyncs++] =
        (esync){s->start, s->end, s->stream_row, s->cuda_event, s->sync_id, (uint32_t)(v - 1),
                (uint8_t)s->wait};
    return 0;
oom:
    return -1;
}

int an_gb_on_cuda_event(int64_t corr, int64_t stream, int64_t cuda_event, int64_t sync_id,
                        void *arg)
{
    builder *b = arg;
    if (stream <= 0) return 0;
    GROW(b->cevs, b->n_cevs, b->cap_cevs);
    b->cevs[b->n_cevs++] = (cevent){corr, stream, cuda_event, sync_id, INT64_MIN};
    return 0;
oom:
    return -1;
}

static int cmp_cev_sync(const void *a, const void *b)
{
    const cevent *x = a, *y = b;
    return (x->sync_id > y->sync_id) - (x->sync_id < y->sync_id);
}

static int cmp_cev_event(const void *a, const void *b)
{
    const cevent *x = a, *y = b;
    if (x->cuda_event != y->cuda_event) return x->cuda_event < y->cuda_event ? -1 : 1;
    return (x->t > y->t) - (x->t < y->t);
}

/* The recording an event wait waited for: the one its record names (sync_id; `by_sync`, the
 * recordings sorted by it), else the latest recording of its CUDA event whose call began
 * before the wait did (`by_event`, sorted by event and time). NULL: unknown. */
static const cevent *recording_of(const cevent *by_sync, const cevent *by_event, size_t n,
                                  const esync *w)
{
    size_t lo = 0, hi = n;
    if (w->sync_id) {
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (by_sync[mid].sync_id < w->sync_id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < n && by_sync[lo].sync_id == w->sync_id)
            return by_sync[lo].t == INT64_MIN ? NULL : &by_sync[lo];
        return NULL;
    }
    while (lo < hi) { /* the first of a later event, or of this event after the wait began */
        size_t mid = lo + (hi - lo) / 2;
        const cevent *c = &by_event[mid];
        if (c->cuda_event < w->cuda_event || (c->cuda_event == w->cuda_event && c->t <= w->start))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) return NULL;
    const cevent *c = &by_event[lo - 1];
    return c->cuda_event == w->cuda_event && c->t != INT64_MIN ? c : NULL;
}

/* The GPU lane of this set's process that holds stream row `stream`; UINT32_MAX none. */
static uint32_t stream_lane_of(const builder *b, size_t lane_first, int64_t stream)
{
    const an_graph *g = b->g;
    for (size_t l = lane_first; l < g->n_lanes; l++)
        if (g->lanes[l].gpu && g->lanes[l].process == b->process && g->lanes[l].tid == stream &&
            g->lanes[l].n)
            return (uint32_t)l;
    return UINT32_MAX;
}

/* The first node of lane L whose launch call began at or after t (launch order is stream
 * order); L->first + L->n when none. */
static uint32_t first_launched_from(const builder *b, const an_lane *L, int64_t t)
{
    uint32_t lo = L->first, hi = L->first + L->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->launch_t[mid - b->gpu_first] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Event waits, once the GPU nodes exist: an event synchronize waits for the work its event's
 * stream had before the event (its last node launched before the recording call), not for the
 * whole device: a record for the waits' loop (an_gb_wait_record). A stream's wait for an
 * event (cudaStreamWaitEvent) makes the waiting stream's next operation (the first launched
 * after the call) start after that work ends (AE_EVENT). Recordings not found leave the
 * device-wide reading (synchronize) or no edge (stream wait). */
int an_gb_event_links(builder *b, size_t lane_first)
{
    an_graph *g = b->g;
    size_t added = 0;
    cevent *by_event = op_malloc((b->n_cevs + 1) * sizeof *by_event);
    if (!by_event) return -1;
    if (b->n_cevs) memcpy(by_event, b->cevs, b->n_cevs * sizeof *by_event);
    an_qsort(by_event, b->n_cevs, sizeof *by_event, cmp_cev_event);
    an_qsort(b->cevs, b->n_cevs, sizeof *b->cevs, cmp_cev_sync);
    for (size_t i = 0; i < b->n_esyncs; i++) {
        const esync *w = &b->esyncs[i];
        const cevent *c = recording_of(b->cevs, by_event, b->n_cevs, w);
        if (!c) continue;
        uint32_t sl = stream_lane_of(b, lane_first, c->stream);
        uint32_t point = UINT32_MAX;
        if (sl != UINT32_MAX) {
            uint32_t k = first_launched_from(b, &g->lanes[sl], c->t);
            if (k > g->lanes[sl].first) point = k - 1;
        }
        if (w->wait == 1) {
            GROW(b->syncs, b->n_syncs, b->cap_syncs);
            b->syncs[b->n_syncs++] = (ssync){w->start, w->end, 0, w->lane, point, 1};
            added++;
            continue;
        }
        uint32_t wl = stream_lane_of(b, lane_first, w->stream);
        if (point == UINT32_MAX || wl == UINT32_MAX || wl == sl) continue;
        uint32_t next = first_launched_from(b, &g->lanes[wl], w->start);
        if (next >= g->lanes[wl].first + g->lanes[wl].n) continue;
        /* recorded times that contradict the edge (the waiting work began before the event's
         * work ended) leave it out */
        if (g->nodes[point].end > g->nodes[next].start) continue;
        /* the operation waited for the event, not for its launch: the launch edge keeps at
         * most the call's length as its latency (as for a busy stream, graph.c) */
        uint32_t le = b->launch_e[next - b->gpu_first];
        if (le < g->n_edges && g->edges[le].dst == 2 * next && g->edges[le].type == AE_LAUNCH &&
            g->nodes[point].end >= g->nodes[next].start - AN_EVENT_SLACK_NS) {
            const an_node *ln = &g->nodes[g->edges[le].src / 2];
            if (g->edges[le].lag > ln->end - ln->start) g->edges[le].lag = ln->end - ln->start;
        }
        if (an_gb_add_edge(g, 2 * point + 1, 2 * next, AE_EVENT, 0) != 0) goto oom;
    }
    op_free(by_event);
    if (added) an_qsort(b->syncs, b->n_syncs, sizeof *b->syncs, an_gb_cmp_ssync);
    return 0;
oom:
    op_free(by_event);
    return -1;
}

/* What a name is to NCCL, cached per name id (b->nccl: 0 not looked at yet, else 1 | these
 * bits): 2 an NCCL collective's kernel (ncclDevKernel_*, ncclKernel_*), 4 an NCCL API call
 * (nccl + an upper-case letter: ncclAllReduce, ncclCommDestroy...; NCCL names its NVTX
 * ranges so). */
static int nccl_class(builder *b, uint32_t name)
{
    if (name >= b->n_nccl) {
        size_t n = op_strtab_count(&b->g->names) + 64;
        uint8_t *p = op_realloc(b->nccl, n);
        if (!p) return 0;
        memset(p + b->n_nccl, 0, n - b->n_nccl);
        b->nccl = p;
        b->n_nccl = n;
    }
    if (!b->nccl[name]) {
        const char *s = op_strtab_str(&b->g->names, name);
        b->nccl[name] = 1;
        if (s && (!strncmp(s, "ncclDevKernel_", 14) || !strncmp(s, "ncclKernel_", 11)))
            b->nccl[name] |= 2;
        else if (s && !strncmp(s, "nccl", 4) && s[4] >= 'A' && s[4] <= 'Z')
            b->nccl[name] |= 4;
    }
    return b->nccl[name];
}

int an_gb_is_nccl_kernel(builder *b, uint32_t name)
{
    return (nccl_class(b, name) & 2) != 0;
}

/* NCCL's NVTX ranges (recorded as markers) are its API calls, not the application's CPU work:
 * they wait (ncclCommDestroy for NCCL's proxy thread, the first collective for the
 * communicator's set-up); as API nodes no rule scales them as CPU work (docs/analyze.md). */
int an_gb_is_nccl_call(builder *b, uint32_t name)
{
    return (nccl_class(b, name) & 4) != 0;
}

static int cmp_ghost(const void *a, const void *b)
{
    const ghost *x = a, *y = b;
    if (x->lane != y->lane) return x->lane < y->lane ? -1 : 1;
    if (x->name != y->name) return x->name < y->name ? -1 : 1;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

/* The ghosts of (lane, name) launched before corr: the first index at or after that point. */
static size_t ghost_at(const ghost *gh, size_t n, uint32_t lane, uint32_t name, int64_t corr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const ghost *m = &gh[mid];
        if (m->lane < lane || (m->lane == lane && (m->name < name ||
                                                   (m->name == name && m->corr < corr))))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* NCCL kernels CUPTI gave no times (seen on the H200: a whole step's kernels now and then) are
 * not nodes, but they were collectives: each of this set's NCCL kernels (numbered from
 * coll_first in stream order) moves up by the untimed ones of its stream and name launched
 * before it (correlation ids are launch order, which is stream order), so that the k-th
 * collective of one rank still meets the k-th of the others. */
int an_gb_ghost_shift(builder *b, size_t coll_first)
{
    const an_graph *g = b->g;
    for (size_t i = 0; i < b->n_ghosts; i++) {
        uint64_t v = 0;
        b->ghosts[i].lane = op_u64map_get(&b->stream_of, b->ghosts[i].stream, &v)
                                ? (uint32_t)(v - 1)
                                : UINT32_MAX;
    }
    an_qsort(b->ghosts, b->n_ghosts, sizeof *b->ghosts, cmp_ghost);
    for (size_t c = coll_first; c < b->n_colls; c++) {
        coll *cl = &b->colls[c];
        if ((uint32_t)cl->key != AN_NCCL_KEY || cl->corr <= 0) continue;
        uint32_t lane = g->nodes[cl->node].lane, name = (uint32_t)(cl->key >> 32);
        size_t before = ghost_at(b->ghosts, b->n_ghosts, lane, name, cl->corr) -
                        ghost_at(b->ghosts, b->n_ghosts, lane, name, INT64_MIN);
        cl->k += (uint32_t)before;
    }
    return 0;
}

/* Cross-set edges (messages, collectives), intrinsic times of waits, the CSR of in-edges. */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The m edges of e by destination event, stable. 0 or -1 (out of memory). */
static int sort_block(an_edge_t *e, size_t m)
{
    uint64_t *key = op_malloc(m * sizeof *key);
    an_edge_t *copy = op_malloc(m * sizeof *copy);
    if (!key || !copy) {
        op_free(key);
        op_free(copy);
        return -1;
    }
    for (size_t k = 0; k < m; k++) key[k] = (uint64_t)e[k].dst << 32 | k;
    qsort(key, m, sizeof *key, cmp_u64);
    memcpy(copy, e, m * sizeof *e);
    for (size_t k = 0; k < m; k++) e[k] = copy[key[k] & 0xffffffffu];
    op_free(key);
    op_free(copy);
    return 0;
}

int an_gb_finish(builder *b, char *err, size_t errlen)
{
    an_graph *g = b->g;
    /* lane order and durations are implicit (engine.c): the first node of a lane is marked */
    for (size_t l = 0; l < g->n_lanes; l++)
        if (g->lanes[l].n) g->nodes[g->lanes[l].first].flags |= AN_F_LANE_FIRST;
    /* messages: the receive's end after the send's start */
    an_qsort(b->msgs, b->n_msgs, sizeof *b->msgs, cmp_msg);
    for (size_t m = 0; m < b->n_msgs;) {
        size_t e = m;
        while (e < b->n_msgs && b->msgs[e].id == b->msgs[m].id) e++;
        uint32_t send = UINT32_MAX;
        for (size_t k = m; k < e; k++)
            if ((b->msgs[k].out & 1) && b->msgs[k].node != UINT32_MAX) send = b->msgs[k].node;
        for (size_t k = m; k < e && send != UINT32_MAX; k++)
            if (!(b->msgs[k].out & 1) && b->msgs[k].node != UINT32_MAX && b->msgs[k].node != send &&
                g->nodes[b->msgs[k].node].lane != g->nodes[send].lane &&
                g->nodes[send].start <= g->nodes[b->msgs[k].node].end)
                if (an_gb_add_edge(g, 2 * send, 2 * b->msgs[k].node + 1, AE_MSG, 0) != 0) goto oom;
        m = e;
    }
    /* collectives: (key, k) groups; every participant's start gates every participant's end */
    for (size_t c = 0; c < b->n_colls; c++) b->colls[c].k &= 0x7fffffffu;
    an_qsort(b->colls, b->n_colls, sizeof *b->colls, cmp_coll);
    for (size_t c = 0; c < b->n_colls;) {
        size_t e = c;
        while (e < b->n_colls && b->colls[e].key == b->colls[c].key &&
               b->colls[e].k == b->colls[c].k)
            e++;
        if (e - c > 1 && e - c <= 4096) {
            /* a star through the latest arrival keeps the edges linear: the participant that
             * arrived last gates the others; each gates the last one too (its own end) */
            size_t last = c;
            for (size_t k = c; k < e; k++)
                if (g->nodes[b->colls[k].node].start > g->nodes[b->colls[last].node].start)
                    last = k;
            for (size_t k = c; k < e; k++)
                for (size_t j = c; j < e; j++)
                    if (j != k && (k == last || j == last || e - c <= 64))
                        if (an_gb_add_edge(g, 2 * b->colls[j].node, 2 * b->colls[k].node + 1, AE_COLL,
                                     0) != 0)
                            goto oom;
        }
        c = e;
    }
    /* the stored edges sorted by destination (stable: an event's edges keep the order they
     * were added in, which decides ties), indexed per node */
    size_t n_ev = 2 * g->n_nodes;
    size_t n_blocks = (g->n_nodes >> AN_EBLOCK_SHIFT) + 2;
    g->eblock = op_malloc(n_blocks * sizeof *g->eblock);
    if (!g->eblock) goto oom;
    {
        /* counting sort by block of 16 nodes through an index (4 bytes an edge, not a second
         * copy of the edges), then the edges permuted in place along the index's cycles */
        uint32_t *pos = op_malloc((g->n_edges + 1) * sizeof *pos);
        uint32_t *cnt = g->eblock; /* per block while counting */
        if (!pos) goto oom;
        memset(cnt, 0, n_blocks * sizeof *cnt);
        for (size_t e = 0; e < g->n_edges; e++) {
            uint32_t nd = g->edges[e].dst / 2;
            cnt[(nd >> AN_EBLOCK_SHIFT) + 1]++;
            g->nodes[nd].flags |= AN_F_EDGES;
        }
        for (size_t k = 1; k < n_blocks; k++) cnt[k] += cnt[k - 1];
        /* each edge's slot: its block's, in the order added (the blocks are sorted below) */
        for (size_t e = 0; e < g->n_edges; e++)
            pos[e] = cnt[(g->edges[e].dst / 2) >> AN_EBLOCK_SHIFT]++;
        /* cnt[b] is now block b's end, the next one's start: shift back */
        for (size_t k = n_blocks - 1; k > 0; k--) cnt[k] = cnt[k - 1];
        cnt[0] = 0;
        for (size_t e = 0; e < g->n_edges; e++) { /* the edges to their block's slots */
            while (pos[e] != e) {
                uint32_t to = pos[e];
                an_edge_t tmp = g->edges[to];
                g->edges[to] = g->edges[e];
                g->edges[e] = tmp;
                pos[e] = pos[to];
                pos[to] = to;
            }
        }
        op_free(pos);
        /* each block's edges by destination event (a node's start's first), stable: insertion
         * sort (a block holds few: 16 nodes at 0.3 stored edges each; mostly in order), a sort
         * of (event, position) keys for a large block (a collective's star) */
        for (size_t bl = 0; bl + 1 < n_blocks; bl++) {
            size_t lo = g->eblock[bl], hi = g->eblock[bl + 1];
            if (hi - lo > 64) {
                if (sort_block(g->edges + lo, hi - lo) != 0) goto oom;
                continue;
            }
            for (size_t k = lo + 1; k < hi; k++) {
                an_edge_t x = g->edges[k];
                size_t j = k;
                while (j > lo && g->edges[j - 1].dst > x.dst) {
                    g->edges[j] = g->edges[j - 1];
                    j--;
                }
                g->edges[j] = x;
            }
        }
        g->eblock[n_blocks - 1] = (uint32_t)g->n_edges;
    }
    g->t = op_malloc((n_ev + 1) * sizeof *g->t);
    g->factor = op_malloc((g->n_nodes + 2) * sizeof *g->factor);
    if (!g->t || !g->factor) goto oom;
    /* intrinsic times of waits: end - max(start, the latest recorded dependency) */
    for (size_t i = 0; i < g->n_nodes; i++) {
        an_node *n = &g->nodes[i];
        int64_t dep = n->start;
        uint32_t ev = 2 * (uint32_t)i + 1;
        int has_dep = 0;
        uint32_t k0, k1;
        an_edges_of(g, (uint32_t)i, &k0, &k1);
        for (uint32_t k = k0; k < k1; k++) {
            const an_edge_t *e = &g->edges[k];
            if (e->dst != ev) continue;
            const an_node *s = &g->nodes[e->src / 2];
            int64_t ts = (e->src & 1) ? s->end : s->start;
            if (e->type == AE_CREATE) ts += e->lag; /* a point inside the source node */
            has_dep = 1;
            if (ts > dep) dep = ts;
        }
        n->wait = (uint8_t)(has_dep ? 1 : 0);
        /* slack: an_prepare */
        if (an_set_aux(g, (uint32_t)i, has_dep ? n->end - (dep < n->end ? dep : n->end) : 0) != 0)
            goto oom;
    }
    /* a collective's own cost is what its fastest leaver took after the last arrival; what a
     * participant took beyond that (descheduled, waiting for a CPU) is its lateness, kept apart
     * so that a what-if of the communication does not scale it (E1 holds: the sum is the same) */
    for (size_t c = 0; c < b->n_colls;) {
        size_t e = c;
        int64_t m = INT64_MAX;
        while (e < b->n_colls && b->colls[e].key == b->colls[c].key &&
               b->colls[e].k == b->colls[c].k) {
            int64_t in = an_intrinsic(g, b->colls[e].node);
            if (in < m) m = in;
            e++;
        }
        for (size_t k = c; e - c > 1 && k < e; k++) {
            an_node *n = &g->nodes[b->colls[k].node];
            if (!n->wait) continue;
            int64_t aux = an_aux(g, b->colls[k].node);
            if (aux != m) {
                if (op_u64map_put(&g->eslack, b->colls[k].node, (uint64_t)(aux - m)) != 0)
                    goto oom;
                n->flags |= AN_F_ESLACK;
            }
            if (an_set_aux(g, b->colls[k].node, m) != 0) goto oom;
        }
        c = e;
    }
    g->t_begin = INT64_MAX;
    g->t_end = INT64_MIN;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].start < g->t_begin) g->t_begin = g->nodes[i].start;
        if (g->nodes[i].end > g->t_end) g->t_end = g->nodes[i].end;
    }
    if (!g->n_nodes) g->t_begin = g->t_end = 0;
    an_qsort(g->samples, g->n_samples, sizeof *g->samples, cmp_sample);
    if (an_prepare(g) != 0) goto oom;
    for (size_t i = 0; i < g->n_nodes; i++) g->factor[i] = 1.0f;
    return 0;
oom:
    snprintf(err, errlen, "out of memory (%zu nodes)", g->n_nodes);
    return -1;
}
