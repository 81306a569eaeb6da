/* engine.c — evaluation of the execution graph (analyze.h): event times as the longest path
 * through the edges, with every duration scaled by its node's what-if factor, and the critical
 * path as the chain of binding edges.
 *
 * The lag of an edge into event v:
 *   AE_SELF  (start -> end of node n)  n's duration x factor; for a wait, its intrinsic time
 *            (what it took after the last thing it waited for) x factor;
 *   AE_WAIT, AE_JOIN, AE_MSG, AE_COLL  (a dependency -> a wait's end)  the wait's intrinsic
 *            time x factor: the wait ends that long after the later of its own start and its
 *            dependencies;
 *   AE_LANE  0: program order (nodes tile a thread; a stream runs one operation at a time);
 *   AE_LAUNCH  the recorded launch latency; AE_CREATE  the recorded offset into the creating
 *            node, scaled with it.
 * A start event also adds its node's slack (GPU queueing the graph does not explain). With all
 * factors 1 the evaluation gives back the recorded times (invariant E1; tested), so a what-if's
 * effect is the difference of two evaluations of one model. Events without incoming edges
 * (a process's first work) keep their recorded times.
 *
 * Layout for scale (docs/analyze.md, "Scale"): the program-order edges (AE_LANE, the end of
 * node i-1 -> the start of node i on one lane) and the duration edges (AE_SELF) are implicit:
 * the predecessor of event v on its lane is always v-1. Only the other edges are stored, sorted
 * by destination (g->eblock indexes them per 16 nodes, an_edges_of). The topological order is
 * stored as runs of consecutive events (g->runs: first event, count): Kahn's algorithm follows
 * a lane as long as its next event has no unresolved cross-lane edge, so a run is a stretch of
 * one lane and the evaluation walks memory in order (an event without stored edges takes a
 * short path). The binding edge of an event is one of the stored edges' index, AN_BIND_LANE or
 * AN_BIND_SELF, or AN_BIND_NONE. */
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "common/alloc.h"

static int64_t rec_time(const an_graph *g, uint32_t ev)
{
    const an_node *n = &g->nodes[ev / 2];
    return (ev & 1) ? n->end : n->start;
}

static inline int64_t self_lag(const an_graph *g, uint32_t node, double f)
{
    return (int64_t)((double)an_intrinsic(g, node) * f);
}

int an_set_aux(an_graph *g, uint32_t node, int64_t v)
{
    an_node *n = &g->nodes[node];
    if (v >= INT32_MIN && v <= INT32_MAX) {
        n->flags &= ~AN_F_AUXBIG;
        n->aux = (int32_t)v;
        return 0;
    }
    if (op_u64map_put(&g->auxbig, node, (uint64_t)v) != 0) return -1;
    n->flags |= AN_F_AUXBIG;
    n->aux = 0;
    return 0;
}

int64_t an_slack(const an_graph *g, uint32_t node)
{
    const an_node *n = &g->nodes[node];
    uint64_t v = 0;
    if (!n->wait) return an_aux(g, node);
    if ((n->flags & AN_F_WSLACK) && op_u64map_get(&g->wslack, node, &v)) return (int64_t)v;
    return 0;
}

int64_t an_eslack(const an_graph *g, uint32_t node)
{
    uint64_t v = 0;
    if ((g->nodes[node].flags & AN_F_ESLACK) && op_u64map_get(&g->eslack, node, &v))
        return (int64_t)v;
    return 0;
}

static inline int64_t edge_lag(const an_graph *g, const an_edge_t *e, const float *factor)
{
    double f = factor ? factor[e->dst / 2] : 1.0;
    switch (e->type) {
    case AE_SELF:
    case AE_WAIT:
    case AE_JOIN:
    case AE_MSG:
    case AE_COLL: return self_lag(g, e->dst / 2, f);
    case AE_CREATE: return (int64_t)((double)e->lag * (factor ? factor[e->src / 2] : 1.0));
    case AE_LAUNCH: return e->lag;
    default: return 0;
    }
}

const an_edge_t *an_bind_edge(const an_graph *g, uint32_t v, uint32_t bind, an_edge_t *tmp)
{
    if (bind == AN_BIND_NONE) return NULL;
    if (bind == AN_BIND_LANE || bind == AN_BIND_SELF) {
        tmp->src = v - 1;
        tmp->dst = v;
        tmp->type = bind == AN_BIND_LANE ? AE_LANE : AE_SELF;
        tmp->lag = 0;
        return tmp;
    }
    return &g->edges[bind];
}

/* The latest arrival at event v over its incoming edges: times of the sources from tv (NULL:
 * the recorded times), lags with `factor` (NULL: 1), waits' edges left out where cut says so.
 * The edges are tried in the order they were added (the stored edges read with a set, then
 * program order or duration, then messages and collectives), the first strictly latest binds.
 * INT64_MIN when v has no incoming edge. */
static inline int64_t arrive(const an_graph *g, uint32_t v, const int64_t *tv, const float *factor,
                             const uint8_t *cut, uint32_t *be)
{
    uint32_t i = v / 2;
    const an_node *n = &g->nodes[i];
    int64_t best = INT64_MIN;
    uint32_t b = AN_BIND_NONE;
    int cutv = cut && cut[i];
    uint32_t k0, k1;
    an_edges_of(g, i, &k0, &k1);
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t k = k0; k < k1; k++) {
            const an_edge_t *e = &g->edges[k];
            if (e->dst != v) continue;
            int late = e->type == AE_MSG || e->type == AE_COLL;
            if (late != pass) continue;
            if (cutv && e->type >= AE_WAIT && e->type <= AE_JOIN) continue;
            int64_t ts = tv ? tv[e->src] : rec_time(g, e->src);
            int64_t t = ts + edge_lag(g, e, factor);
            if (t > best) best = t, b = k;
        }
        if (pass == 0) {
            if (v & 1) { /* duration */
                int64_t ts = tv ? tv[v - 1] : n->start;
                int64_t t = ts + self_lag(g, i, factor ? factor[i] : 1.0);
                if (t > best) best = t, b = AN_BIND_SELF;
            } else if (!(n->flags & AN_F_LANE_FIRST)) { /* program order */
                int64_t ts = tv ? tv[v - 1] : g->nodes[i - 1].end;
                if (ts > best) best = ts, b = AN_BIND_LANE;
            }
        }
    }
    if (be) *be = b;
    return best;
}

uint32_t an_bind(const an_graph *g, uint32_t v)
{
    uint32_t be = AN_BIND_NONE;
    arrive(g, v, g->t, g->factor, g->cut, &be);
    return be;
}

int an_bind_type(const an_graph *g, uint32_t v)
{
    uint32_t be = an_bind(g, v);
    if (be == AN_BIND_NONE) return -1;
    if (be == AN_BIND_LANE) return AE_LANE;
    if (be == AN_BIND_SELF) return AE_SELF;
    return (int)g->edges[be].type;
}

size_t an_edge_count(const an_graph *g)
{
    size_t n = g->n_edges + g->n_nodes; /* the durations */
    for (size_t i = 0; i < g->n_nodes; i++)
        if (!(g->nodes[i].flags & AN_F_LANE_FIRST)) n++;
    return n;
}

static const an_graph *g_sort;
static int cmp_ev_time(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int64_t tx = rec_time(g_sort, x), ty = rec_time(g_sort, y);
    if (tx != ty) return tx < ty ? -1 : 1;
    return (x > y) - (x < y);
}

static int push_run(an_graph *g, uint32_t first, uint32_t n)
{
    if (g->n_runs == g->cap_runs) {
        size_t nc = g->cap_runs ? g->cap_runs * 2 : 1024;
        an_run *p = op_realloc(g->runs, nc * sizeof *p);
        if (!p) return -1;
        g->runs = p;
        g->cap_runs = nc;
    }
    g->runs[g->n_runs++] = (an_run){first, n};
    return 0;
}

/* The topological order (Kahn, as runs) and each start event's slack. 0 or -1 (out of
 * memory). The stored edges are sorted by destination and g->eblock is built before; g->t
 * (2 x n_nodes + 1 int64) and g->factor (n_nodes + 2 floats) are not in use yet and hold the
 * in-degrees and the out-edge index meanwhile (no extra per-event memory at the peak). */
int an_prepare(an_graph *g);
int an_prepare(an_graph *g)
{
    size_t n_ev = 2 * g->n_nodes;
    uint32_t *indeg = (uint32_t *)(void *)g->t;         /* n_ev entries */
    uint32_t *out_first = (uint32_t *)(void *)g->factor; /* per source node, n_nodes + 1 */
    uint32_t *out_edges = op_malloc((g->n_edges + 1) * sizeof *out_edges);
    uint32_t *ready = op_malloc((g->n_edges + g->n_lanes + 1) * sizeof *ready);
    size_t n_ready = 0, done = 0;
    g->n_runs = 0;
    if (!out_edges || !ready) goto oom;
    memset(indeg, 0, n_ev * sizeof *indeg);
    memset(out_first, 0, (g->n_nodes + 1) * sizeof *out_first);
    for (size_t e = 0; e < g->n_edges; e++) {
        indeg[g->edges[e].dst]++;
        out_first[g->edges[e].src / 2 + 1]++;
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        indeg[2 * i + 1]++; /* duration */
        if (!(g->nodes[i].flags & AN_F_LANE_FIRST)) indeg[2 * i]++;
    }
    for (size_t i = 1; i < g->n_nodes; i++) out_first[i] += out_first[i - 1];
    /* out_first[i] is the start of node i's block (shifted by one, below): fill by cursor, which
     * leaves each cursor at its block's end, the next block's start */
    for (size_t i = g->n_nodes; i > 0; i--) out_first[i] = out_first[i - 1];
    out_first[0] = 0;
    for (size_t e = 0; e < g->n_edges; e++)
        out_edges[out_first[g->edges[e].src / 2 + 1]++] = (uint32_t)e;
    /* now out_first[i + 1] is the end of node i's block, out_first[i] its start */
    for (size_t i = 0; i < g->n_nodes; i++)
        if (!indeg[2 * i]) ready[n_ready++] = 2 * (uint32_t)i;
    while (n_ready) {
        uint32_t v = ready[--n_ready], first = v, cnt = 0;
        for (;;) {
            cnt++;
            uint32_t i = v / 2;
            /* the next event on the lane, v+1 (the end of node i, or the next node's start),
             * follows v by an implicit edge unless it starts a lane */
            int chained = v + 1 < n_ev && (!(v & 1) || !(g->nodes[i + 1].flags & AN_F_LANE_FIRST));
            for (uint32_t k = out_first[i]; k < out_first[i + 1]; k++) {
                const an_edge_t *e = &g->edges[out_edges[k]];
                if (e->src != v) continue;
                if (--indeg[e->dst] == 0) ready[n_ready++] = e->dst;
            }
            if (!chained || --indeg[v + 1] != 0) break;
            v++;
        }
        if (push_run(g, first, cnt) != 0) goto oom;
        done += cnt;
    }
    g->dropped_edges = 0;
    if (done < n_ev) { /* a cycle (clocks of two hosts disagree): the rest by recorded time */
        size_t n_left = 0;
        uint32_t *left = op_malloc((n_ev - done) * sizeof *left);
        if (!left) goto oom;
        for (size_t v = 0; v < n_ev; v++)
            if (indeg[v]) left[n_left++] = (uint32_t)v;
        g_sort = g;
        an_qsort(left, n_left, sizeof *left, cmp_ev_time);
        for (size_t k = 0; k < n_left; k++)
            if (push_run(g, left[k], 1) != 0) {
                op_free(left);
                goto oom;
            }
        op_free(left);
        g->dropped_edges = n_left;
    }
    op_free(out_edges);
    op_free(ready);
    /* slack of start events, from the recorded times: in the node (a wait keeps its intrinsic
     * time there: its slack, rare, goes to the side table) */
    for (size_t i = 0; i < g->n_nodes; i++) {
        int64_t best = arrive(g, 2 * (uint32_t)i, NULL, NULL, NULL, NULL);
        an_node *n = &g->nodes[i];
        int64_t sl = best == INT64_MIN ? 0 : n->start > best ? n->start - best : 0;
        if (!n->wait) {
            if (an_set_aux(g, (uint32_t)i, sl) != 0) return -1;
        } else if (sl) {
            if (op_u64map_put(&g->wslack, i, (uint64_t)sl) != 0) return -1;
            n->flags |= AN_F_WSLACK;
        }
    }
    return 0;
oom:
    op_free(out_edges);
    op_free(ready);
    return -1;
}

int64_t an_evaluate(an_graph *g)
{
    size_t n_ev = 2 * g->n_nodes;
    if (g->dropped_edges) /* events of a cycle read their sources' recorded times */
        for (size_t v = 0; v < n_ev; v++) g->t[v] = rec_time(g, (uint32_t)v);
    int64_t end = INT64_MIN;
    for (size_t r = 0; r < g->n_runs; r++) {
        uint32_t v = g->runs[r].first, v1 = v + g->runs[r].n;
        for (; v < v1; v++) {
            const an_node *n = &g->nodes[v / 2];
            int64_t t;
            if (!(n->flags & AN_F_EDGES)) { /* most events: only the implicit edge (arrive's) */
                if (v & 1)
                    t = g->t[v - 1] + self_lag(g, v / 2, g->factor[v / 2]) +
                        ((n->flags & AN_F_ESLACK) ? an_eslack(g, v / 2) : 0);
                else if (n->flags & AN_F_LANE_FIRST)
                    t = n->start;
                else
                    t = g->t[v - 1] + (n->wait ? an_slack(g, v / 2) : an_aux(g, v / 2));
                g->t[v] = t;
                if (t > end) end = t;
                continue;
            }
            uint32_t be;
            int64_t best = arrive(g, v, g->t, g->factor, g->cut, &be);
            if (be == AN_BIND_NONE)
                t = (v & 1) ? n->end : n->start;
            else if (v & 1)
                t = best + ((n->flags & AN_F_ESLACK) ? an_eslack(g, v / 2) : 0);
            else
                t = best + (n->wait ? an_slack(g, v / 2) : an_aux(g, v / 2));
            g->t[v] = t;
            if (t > end) end = t;
        }
    }
    return n_ev ? end : 0;
}

void an_sweep(an_graph *g)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        g->t[2 * i] = g->nodes[i].start;
        g->t[2 * i + 1] = g->nodes[i].end;
    }
}

static int push_seg(an_path *p, int64_t t0, int64_t t1, uint32_t node, int edge)
{
    if (t1 <= t0) return 0;
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 256;
        an_seg *s = op_realloc(p->segs, nc * sizeof *s);
        if (!s) return -1;
        p->segs = s;
        p->cap = nc;
    }
    p->segs[p->n++] = (an_seg){t0, t1, node, (uint8_t)edge};
    return 0;
}

int an_critical_path(an_graph *g, uint32_t from, int64_t stop, an_path *p)
{
    memset(p, 0, sizeof *p);
    size_t n_ev = 2 * g->n_nodes;
    if (!n_ev) return 0;
    if (from == UINT32_MAX) {
        int64_t best = INT64_MIN;
        for (size_t v = 1; v < n_ev; v += 2)
            if (g->t[v] > best) best = g->t[v], from = (uint32_t)v;
    }
    uint32_t v = from;
    p->t1 = g->t[v];
    p->t0 = p->t1;
    for (size_t guard = 0; guard < n_ev + 1; guard++) {
        if (g->t[v] <= stop) break;
        an_edge_t tmp;
        const an_edge_t *e = an_bind_edge(g, v, an_bind(g, v), &tmp);
        if (!e) break;
        int64_t ts = g->t[e->src];
        int64_t lag = edge_lag(g, e, g->factor);
        int64_t t_arrive = ts + lag; /* without slack */
        if (t_arrive > g->t[v]) t_arrive = g->t[v];
        int64_t lo = ts < stop ? stop : ts;
        /* slack (unexplained queueing) sits between arrival and the event */
        if (push_seg(p, t_arrive < lo ? lo : t_arrive, g->t[v], v / 2, 255) != 0) return -1;
        int edge = e->type;
        uint32_t owner = (edge == AE_LAUNCH || edge == AE_CREATE) ? e->dst / 2 : v / 2;
        if (edge != AE_LANE && push_seg(p, lo, t_arrive < lo ? lo : t_arrive, owner, edge) != 0)
            return -1;
        p->t0 = lo;
        v = e->src;
    }
    /* reverse into time order */
    for (size_t i = 0; i < p->n / 2; i++) {
        an_seg s = p->segs[i];
        p->segs[i] = p->segs[p->n - 1 - i];
        p->segs[p->n - 1 - i] = s;
    }
    return 0;
}

void an_path_free(an_path *p)
{
    op_free(p->segs);
    memset(p, 0, sizeof *p);
}
