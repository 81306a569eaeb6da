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
 * (a process's first work) keep their recorded times. */
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "common/alloc.h"

static int64_t rec_time(const an_graph *g, uint32_t ev)
{
    const an_node *n = &g->nodes[ev / 2];
    return (ev & 1) ? n->end : n->start;
}

static int64_t edge_lag(const an_graph *g, const an_edge_t *e, const float *factor)
{
    const an_node *d = &g->nodes[e->dst / 2];
    double f = factor ? factor[e->dst / 2] : 1.0;
    switch (e->type) {
    case AE_SELF:
        if (d->wait) return (int64_t)((double)d->intrinsic * f);
        return (int64_t)((double)(d->end - d->start) * f);
    case AE_WAIT:
    case AE_JOIN:
    case AE_MSG:
    case AE_COLL: return (int64_t)((double)d->intrinsic * f);
    case AE_CREATE: return (int64_t)((double)e->lag * (factor ? factor[e->src / 2] : 1.0));
    case AE_LAUNCH: return e->lag;
    default: return 0;
    }
}

static const an_graph *g_sort;
static int cmp_ev_time(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int64_t tx = rec_time(g_sort, x), ty = rec_time(g_sort, y);
    if (tx != ty) return tx < ty ? -1 : 1;
    return (x > y) - (x < y);
}

/* The topological order (Kahn) and each start event's slack. 0 or -1 (out of memory). */
int an_prepare(an_graph *g);
int an_prepare(an_graph *g)
{
    size_t n_ev = 2 * g->n_nodes;
    uint32_t *indeg = op_calloc(n_ev + 1, sizeof *indeg);
    uint32_t *out_first = op_calloc(n_ev + 2, sizeof *out_first);
    uint32_t *out_edges = op_malloc((g->n_edges + 1) * sizeof *out_edges);
    g->order = op_malloc((n_ev + 1) * sizeof *g->order);
    if (!indeg || !out_first || !out_edges || !g->order) goto oom;
    for (size_t e = 0; e < g->n_edges; e++) {
        indeg[g->edges[e].dst]++;
        out_first[g->edges[e].src + 1]++;
    }
    for (size_t v = 0; v < n_ev; v++) out_first[v + 1] += out_first[v];
    {
        uint32_t *fill = op_malloc((n_ev + 1) * sizeof *fill);
        if (!fill) goto oom;
        memcpy(fill, out_first, (n_ev + 1) * sizeof *fill);
        for (size_t e = 0; e < g->n_edges; e++) out_edges[fill[g->edges[e].src]++] = (uint32_t)e;
        op_free(fill);
    }
    size_t head = 0, tail = 0;
    for (size_t v = 0; v < n_ev; v++)
        if (!indeg[v]) g->order[tail++] = (uint32_t)v;
    while (head < tail) {
        uint32_t v = g->order[head++];
        for (uint32_t k = out_first[v]; k < out_first[v + 1]; k++) {
            uint32_t d = g->edges[out_edges[k]].dst;
            if (--indeg[d] == 0) g->order[tail++] = d;
        }
    }
    if (tail < n_ev) { /* a cycle (clocks of two hosts disagree): the rest by recorded time */
        size_t first = tail;
        for (size_t v = 0; v < n_ev; v++)
            if (indeg[v]) g->order[tail++] = (uint32_t)v;
        g_sort = g;
        qsort(g->order + first, tail - first, sizeof *g->order, cmp_ev_time);
        g->dropped_edges = tail - first;
    }
    /* slack of start events, from the recorded times */
    for (size_t i = 0; i < g->n_nodes; i++) {
        uint32_t v = 2 * (uint32_t)i;
        if (g->in_first[v] == g->in_first[v + 1]) continue;
        int64_t best = INT64_MIN;
        for (uint32_t k = g->in_first[v]; k < g->in_first[v + 1]; k++) {
            const an_edge_t *e = &g->edges[g->in_edges[k]];
            int64_t t = rec_time(g, e->src) + edge_lag(g, e, NULL);
            if (t > best) best = t;
        }
        g->nodes[i].slack = g->nodes[i].start > best ? g->nodes[i].start - best : 0;
    }
    op_free(indeg);
    op_free(out_first);
    op_free(out_edges);
    return 0;
oom:
    op_free(indeg);
    op_free(out_first);
    op_free(out_edges);
    return -1;
}

int64_t an_evaluate(an_graph *g)
{
    size_t n_ev = 2 * g->n_nodes;
    for (size_t v = 0; v < n_ev; v++) {
        g->t[v] = rec_time(g, (uint32_t)v);
        g->bind[v] = UINT32_MAX;
    }
    int64_t end = INT64_MIN;
    for (size_t i = 0; i < n_ev; i++) {
        uint32_t v = g->order[i];
        uint32_t a = g->in_first[v], b = g->in_first[v + 1];
        if (a < b) {
            int64_t best = INT64_MIN;
            uint32_t be = UINT32_MAX;
            for (uint32_t k = a; k < b; k++) {
                const an_edge_t *e = &g->edges[g->in_edges[k]];
                if (g->cut && g->cut[v / 2] && e->type >= AE_WAIT && e->type <= AE_JOIN) continue;
                int64_t t = g->t[e->src] + edge_lag(g, e, g->factor);
                if (t > best) best = t, be = g->in_edges[k];
            }
            best += (v & 1) ? g->nodes[v / 2].eslack : g->nodes[v / 2].slack;
            g->t[v] = best;
            g->bind[v] = be;
        }
        if (g->t[v] > end) end = g->t[v];
    }
    return n_ev ? end : 0;
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
        uint32_t be = g->bind[v];
        if (be == UINT32_MAX) break;
        const an_edge_t *e = &g->edges[be];
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
