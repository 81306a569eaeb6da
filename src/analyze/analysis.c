/* analysis.c — one analysis of a loaded graph (analyze.h): the critical path and its shares,
 * iterations, the user's what-if, the findings and the hot spots.
 *
 * Every finding is a rule that names a problem and a change that would remove it; the change
 * is evaluated by the engine like a user's what-if, and the finding's rank is its predicted
 * gain of wall time. Thresholds (docs/analyze.md, "Rules"): a finding below AN_FINDING_MIN_PCT
 * (5 %) is listed as not worth fixing, never as a problem. Rules that see nothing to change
 * give nothing: a clean program has no finding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "common/alloc.h"
#include "common/u64map.h"

#define K_FUNCTION AN_KINDS      /* path items: a CPU function from samples */
#define K_LATENCY (AN_KINDS + 1) /* launch latency, thread start, GPU queueing */

static int is_host_work(int kind)
{
    return kind == AN_CPU || kind == AN_API || kind == AN_LAUNCH || kind == AN_WRAP ||
           kind == AN_MPI;
}

/* Evaluates the graph with the current factors (and cut); the gain against `base`. */
static int64_t eval_gain(an_graph *g, int64_t base_end)
{
    int64_t e = an_evaluate(g);
    return base_end - e;
}

static void reset(an_graph *g)
{
    for (size_t i = 0; i < g->n_nodes; i++) g->factor[i] = 1.0f;
    if (g->cut) memset(g->cut, 0, g->n_nodes);
}

static an_finding *add_finding(an_finding **arr, size_t *n)
{
    an_finding *p = op_realloc(*arr, (*n + 1) * sizeof *p);
    if (!p) return NULL;
    *arr = p;
    memset(&p[*n], 0, sizeof p[*n]);
    return &p[(*n)++];
}

static int file_finding(an_report *r, const an_finding *f)
{
    an_finding *d = f->gain_pct >= AN_FINDING_MIN_PCT ? add_finding(&r->findings, &r->n_findings)
                                                      : add_finding(&r->minor, &r->n_minor);
    if (!d) return -1;
    *d = *f;
    return 0;
}

static double pct(int64_t gain, int64_t wall)
{
    return wall > 0 ? 100.0 * (double)gain / (double)wall : 0;
}

/* A finding of the what-if now set on g (its factors): the gain it predicts against the recorded
 * end `base`, in ns and in percent of the run's wall time; the rule fills in the rest. */
static an_finding predicted_finding(an_graph *g, const an_report *r, int64_t base)
{
    an_finding fd;
    memset(&fd, 0, sizeof fd);
    fd.gain_ns = eval_gain(g, base);
    fd.gain_pct = pct(fd.gain_ns, r->wall);
    return fd;
}

static const char *nm(const an_graph *g, uint32_t id)
{
    return op_strtab_str(&g->names, id);
}

/* ---- imbalance: ranks (collectives) and threads (joins, barriers) ---------------------------- */
static int rule_rank_imbalance(an_graph *g, an_report *r, int64_t base)
{
    int max_rank = -1;
    int has_coll = 0;
    for (size_t l = 0; l < g->n_lanes; l++)
        if (g->lanes[l].rank > max_rank) max_rank = g->lanes[l].rank;
    for (size_t i = 0; i < g->n_nodes && !has_coll; i++) has_coll = g->nodes[i].kind == AN_MPIWAIT;
    if (max_rank < 1 || !has_coll || max_rank > 1 << 20) return 0;
    double *busy = op_calloc((size_t)max_rank + 1, sizeof *busy);
    double *waitt = op_calloc((size_t)max_rank + 1, sizeof *waitt);
    /* per rank, the span from the end of MPI_Init (or the start) to the start of its last
     * collective: the work there is what the others wait for (start-up before, teardown after
     * are the rank's own) */
    int64_t *lo = op_malloc(((size_t)max_rank + 1) * sizeof *lo);
    int64_t *hi = op_malloc(((size_t)max_rank + 1) * sizeof *hi);
    if (!busy || !waitt || !lo || !hi) goto oom;
    for (int k = 0; k <= max_rank; k++) lo[k] = INT64_MIN, hi[k] = INT64_MAX;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const an_node *n = &g->nodes[i];
        const an_lane *L = &g->lanes[n->lane];
        if (L->gpu || L->rank < 0) continue;
        if (n->kind == AN_MPI && strstr(nm(g, n->name), "MPI_Init") && n->end > lo[L->rank])
            lo[L->rank] = n->end;
        if (n->kind == AN_MPIWAIT && n->wait && (hi[L->rank] == INT64_MAX || n->start > hi[L->rank]))
            hi[L->rank] = n->start;
    }
#define IN_SPAN(L, n) ((n)->start >= lo[(L)->rank] && (n)->end <= hi[(L)->rank])
    for (size_t i = 0; i < g->n_nodes; i++) {
        const an_node *n = &g->nodes[i];
        const an_lane *L = &g->lanes[n->lane];
        if (L->gpu || L->rank < 0 || !IN_SPAN(L, n)) continue;
        if (is_host_work(n->kind))
            busy[L->rank] += (double)(n->end - n->start);
        else if (n->kind == AN_MPIWAIT)
            waitt[L->rank] += (double)(n->end - n->start);
    }
    int slow = 0;
    double sum = 0;
    for (int k = 0; k <= max_rank; k++) {
        sum += busy[k];
        if (busy[k] > busy[slow]) slow = k;
    }
    double mean_others = (sum - busy[slow]) / max_rank;
    if (busy[slow] > 0 && busy[slow] > mean_others * 1.02) {
        double f = mean_others / busy[slow];
        reset(g);
        for (size_t i = 0; i < g->n_nodes; i++) {
            const an_lane *L = &g->lanes[g->nodes[i].lane];
            if (!L->gpu && L->rank == slow && is_host_work(g->nodes[i].kind) &&
                IN_SPAN(L, &g->nodes[i]))
                g->factor[i] = (float)f;
        }
        an_finding fd = predicted_finding(g, r, base);
        double wo = 0;
        for (int k = 0; k <= max_rank; k++)
            if (k != slow) wo += waitt[k];
        snprintf(fd.rule, sizeof fd.rule, "rank_straggler");
        snprintf(fd.title, sizeof fd.title,
                 "rank %d is a straggler: the other ranks wait for it in collectives", slow);
        snprintf(fd.evidence, sizeof fd.evidence,
                 "rank %d works %.3f s, the other %d ranks %.3f s on average (%.2fx); they wait "
                 "%.3f s in "
                 "total in MPI calls, rank %d %.3f s",
                 slow, busy[slow] / 1e9, max_rank, mean_others / 1e9,
                 busy[slow] / (mean_others > 0 ? mean_others : 1), wo / 1e9, slow,
                 waitt[slow] / 1e9);
        snprintf(fd.advice, sizeof fd.advice,
                 "balance the work across ranks: give rank %d less (or the others more)", slow);
        snprintf(fd.whatif, sizeof fd.whatif,
                 "rank %d's work between its first and last collective x %.3f", slow, f);
        if (file_finding(r, &fd) != 0) goto oom;
    }
    op_free(busy);
    op_free(waitt);
    op_free(lo);
    op_free(hi);
    return 0;
oom:
    op_free(busy);
    op_free(waitt);
    op_free(lo);
    op_free(hi);
    return -1;
#undef IN_SPAN
}

/* NCCL collectives across ranks (no MPI collectives): the ranks meet in the k-th NCCL kernel
 * of each name (graph.c). Per rank, between its first and last NCCL kernel, its GPU work
 * (kernels other than NCCL's, copies, memsets) and its host work; the kind whose slowest rank
 * exceeds the others' mean by more (and by more than 2 %) is the straggler's: that rank's work
 * of that kind brought down to the others' mean. */
static int is_nccl_kernel_name(const char *s)
{
    return s && (!strncmp(s, "ncclDevKernel_", 14) || !strncmp(s, "ncclKernel_", 11));
}

static int rule_nccl_straggler(an_graph *g, an_report *r, int64_t base)
{
    int max_rank = -1;
    for (size_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].kind == AN_MPIWAIT) return 0; /* MPI ranks: rule_rank_imbalance */
    for (size_t l = 0; l < g->n_lanes; l++)
        if (g->lanes[l].rank > max_rank) max_rank = g->lanes[l].rank;
    if (max_rank < 1 || max_rank > 1 << 20) return 0;
    size_t nr = (size_t)max_rank + 1;
    int64_t *lo = op_malloc(nr * sizeof *lo), *hi = op_malloc(nr * sizeof *hi);
    double *busy = op_calloc(2 * nr, sizeof *busy); /* [0, nr): GPU work, [nr, 2 nr): host */
    uint32_t *ncoll = op_calloc(nr, sizeof *ncoll);
    if (!lo || !hi || !busy || !ncoll) goto oom;
    for (size_t k = 0; k < nr; k++) lo[k] = INT64_MAX, hi[k] = INT64_MIN;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const an_node *n = &g->nodes[i];
        const an_lane *L = &g->lanes[n->lane];
        if (!L->gpu || L->rank < 0 || n->kind != AN_KERNEL || !is_nccl_kernel_name(nm(g, n->name)))
            continue;
        if (n->start < lo[L->rank]) lo[L->rank] = n->start;
        if (n->start > hi[L->rank]) hi[L->rank] = n->start;
        ncoll[L->rank]++;
    }
    for (size_t k = 0; k < nr; k++)
        if (ncoll[k] < 2) goto done; /* every rank in two collectives at least */
#define IN_SPAN(L, n) ((n)->start >= lo[(L)->rank] && (n)->end <= hi[(L)->rank])
    for (size_t i = 0; i < g->n_nodes; i++) {
        const an_node *n = &g->nodes[i];
        const an_lane *L = &g->lanes[n->lane];
        if (L->rank < 0 || !IN_SPAN(L, n)) continue;
        if (L->gpu && (n->kind == AN_COPY || n->kind == AN_SET ||
                       (n->kind == AN_KERNEL && !is_nccl_kernel_name(nm(g, n->name)))))
            busy[L->rank] += (double)(n->end - n->start);
        else if (!L->gpu && is_host_work(n->kind))
            busy[nr + (size_t)L->rank] += (double)(n->end - n->start);
    }
    int best_c = -1, slow = 0;
    double best_x = 0, mean_slow = 0;
    for (int c = 0; c < 2; c++) {
        const double *b = busy + (size_t)c * nr;
        int s = 0;
        double sum = 0;
        for (size_t k = 0; k < nr; k++) {
            sum += b[k];
            if (b[k] > b[s]) s = (int)k;
        }
        double mean = (sum - b[s]) / (double)max_rank, x = b[s] - mean;
        if (b[s] > 0 && b[s] > mean * 1.02 && x > best_x)
            best_x = x, best_c = c, slow = s, mean_slow = mean;
    }
    if (best_c >= 0) {
        const double *b = busy + (size_t)best_c * nr;
        double f = mean_slow / b[slow];
        reset(g);
        for (size_t i = 0; i < g->n_nodes; i++) {
            const an_node *n = &g->nodes[i];
            const an_lane *L = &g->lanes[n->lane];
            if (L->rank != slow || !IN_SPAN(L, n)) continue;
            int mine = best_c == 0 ? L->gpu && (n->kind == AN_COPY || n->kind == AN_SET ||
                                                (n->kind == AN_KERNEL &&
                                                 !is_nccl_kernel_name(nm(g, n->name))))
                                   : !L->gpu && is_host_work(n->kind);
            if (mine) g->factor[i] = (float)f;
        }
        const char *what = best_c == 0 ? "GPU" : "host";
        an_finding fd = predicted_finding(g, r, base);
        snprintf(fd.rule, sizeof fd.rule, "rank_straggler");
        snprintf(fd.title, sizeof fd.title,
                 "rank %d is a straggler: the other ranks wait for it in NCCL collectives", slow);
        snprintf(fd.evidence, sizeof fd.evidence,
                 "rank %d's %s work between its first and last NCCL collective %.3f ms, the other "
                 "%d ranks %.3f ms on average (%.2fx)",
                 slow, what, b[slow] / 1e6, max_rank, mean_slow / 1e6,
                 b[slow] / (mean_slow > 0 ? mean_slow : 1));
        snprintf(fd.advice, sizeof fd.advice,
                 "balance the work across ranks: give rank %d less (or the others more)", slow);
        snprintf(fd.whatif, sizeof fd.whatif,
                 "rank %d's %s work between its first and last NCCL collective x %.3f", slow, what,
                 f);
        if (file_finding(r, &fd) != 0) goto oom;
    }
#undef IN_SPAN
done:
    op_free(lo);
    op_free(hi);
    op_free(busy);
    op_free(ncoll);
    return 0;
oom:
    op_free(lo);
    op_free(hi);
    op_free(busy);
    op_free(ncoll);
    return -1;
}

static int cmp_u32_by_start_g(const void *a, const void *b, const an_graph *g)
{
    const an_lane *x = &g->lanes[*(const uint32_t *)a], *y = &g->lanes[*(const uint32_t *)b];
    int64_t sx = g->nodes[x->first].start, sy = g->nodes[y->first].start;
    return (sx > sy) - (sx < sy);
}
static const an_graph *g_cmp;
static int cmp_lane_start(const void *a, const void *b)
{
    return cmp_u32_by_start_g(a, b, g_cmp);
}

static int rule_thread_imbalance(an_graph *g, an_report *r, int64_t base)
{
    /* worker threads of processes that join or meet at barriers; cohorts: threads whose
     * lifetimes overlap; in each, the threads above the cohort's mean brought down to it */
    int any = 0;
    for (size_t i = 0; i < g->n_nodes && !any; i++)
        any = g->nodes[i].kind == AN_JOIN && g->nodes[i].wait;
    if (!any) return 0;
    uint32_t *lanes = op_malloc((g->n_lanes + 1) * sizeof *lanes);
    double *busy = op_calloc(g->n_lanes + 1, sizeof *busy);
    if (!lanes || !busy) goto oom;
    reset(g);
    int changed = 0;
    double worst = 0, worst_mean = 0;
    uint32_t worst_lane = 0;
    size_t worst_n = 0;
    for (size_t p = 0; p < g->n_processes; p++) {
        size_t n = 0;
        for (size_t l = 0; l < g->n_lanes; l++) {
            const an_lane *L = &g->lanes[l];
            if (L->gpu || L->process != p || !L->n) continue;
            int barrier = 0;
            for (uint32_t i = L->first; i < L->first + L->n; i++) {
                const an_node *nd = &g->nodes[i];
                if (is_host_work(nd->kind)) busy[l] += (double)(nd->end - nd->start);
                if (nd->kind == AN_JOIN && strstr(nm(g, nd->name), "barrier")) barrier = 1;
            }
            /* workers: non-main threads, and a main thread that meets them at barriers */
            if (L->pid != L->tid || barrier) lanes[n++] = (uint32_t)l;
        }
        g_cmp = g;
        an_qsort(lanes, n, sizeof *lanes, cmp_lane_start);
        for (size_t c = 0; c < n;) {
            size_t e = c + 1;
            int64_t cend = g->nodes[g->lanes[lanes[c]].first + g->lanes[lanes[c]].n - 1].end;
            while (e < n && g->nodes[g->lanes[lanes[e]].first].start < cend) {
                int64_t le = g->nodes[g->lanes[lanes[e]].first + g->lanes[lanes[e]].n - 1].end;
                if (le > cend) cend = le;
                e++;
            }
            if (e - c >= 2) {
                double sum = 0;
                for (size_t k = c; k < e; k++) sum += busy[lanes[k]];
                double mean = sum / (double)(e - c);
                for (size_t k = c; k < e; k++) {
                    double b = busy[lanes[k]];
                    if (b > mean * 1.02 && b > 0) {
                        const an_lane *L = &g->lanes[lanes[k]];
                        for (uint32_t i = L->first; i < L->first + L->n; i++)
                            if (is_host_work(g->nodes[i].kind)) g->factor[i] = (float)(mean / b);
                        changed = 1;
                        if (b / mean > worst)
                            worst = b / mean, worst_mean = mean, worst_lane = lanes[k],
                            worst_n = e - c;
                    }
                }
            }
            c = e;
        }
    }
    if (changed) {
        an_finding fd = predicted_finding(g, r, base);
        const an_lane *W = &g->lanes[worst_lane];
        snprintf(fd.rule, sizeof fd.rule, "thread_imbalance");
        snprintf(fd.title, sizeof fd.title,
                 "unequal threads: the others wait at a join or barrier for the slowest");
        snprintf(fd.evidence, sizeof fd.evidence,
                 "thread %lld (process %lld) works %.3f s where the %zu threads that run with it "
                 "work %.3f s on "
                 "average (%.2fx)",
                 (long long)W->tid, (long long)W->pid, busy[worst_lane] / 1e9, worst_n,
                 worst_mean / 1e9, worst);
        snprintf(fd.advice, sizeof fd.advice,
                 "split the work evenly between threads (or hand it out dynamically)");
        snprintf(fd.whatif, sizeof fd.whatif,
                 "each thread above its group's mean brought down to it");
        if (file_finding(r, &fd) != 0) goto oom;
    }
    op_free(lanes);
    op_free(busy);
    return 0;
oom:
    op_free(lanes);
    op_free(busy);
    return -1;
}

/* ---- GPU rules ------------------------------------------------------------------------------ */
static int rule_waits(an_graph *g, an_report *r, int64_t base, int copies)
{
    size_t cnt = 0;
    int64_t tot = 0;
    uint32_t name = 0;
    reset(g);
    for (size_t i = 0; i < g->n_nodes; i++) {
        const an_node *n = &g->nodes[i];
        if (n->kind != AN_GPUWAIT || !n->wait) continue;
        const char *s = nm(g, n->name);
        int is_copy = strstr(s, "Memcpy") || strstr(s, "Memset") || strstr(s, "memcpy");
        if (is_copy != copies) continue;
        g->cut[i] = 1;
        if (!copies) g->factor[i] = 0.0f; /* the synchronize call itself is gone */
        cnt++;
        tot += n->end - n->start;
        name = n->name;
    }
    /* a synchronize "in a loop": repeated; one or two (setup, the end) are what a program needs */
    if (!cnt || (!copies && cnt < AN_SYNC_LOOP_MIN)) return 0;
    an_finding fd = predicted_finding(g, r, base);
    if (copies) {
        snprintf(fd.rule, sizeof fd.rule, "sync_copy");
        snprintf(fd.title, sizeof fd.title, "synchronous copies/memsets block the host");
        snprintf(fd.evidence, sizeof fd.evidence,
                 "%zu calls (e.g. %s) block the host %.3f s in total", cnt, nm(g, name),
                 (double)tot / 1e9);
        snprintf(fd.advice, sizeof fd.advice,
                 "use cudaMemcpyAsync/cudaMemsetAsync on a stream (pinned host memory) and "
                 "synchronize once");
    } else {
        snprintf(fd.rule, sizeof fd.rule, "sync_in_loop");
        snprintf(fd.title, sizeof fd.title,
                 "synchronize calls stall the host until the GPU drains");
        snprintf(fd.evidence, sizeof fd.evidence,
                 "%zu synchronize calls (e.g. %s) wait %.3f s in total", cnt, nm(g, name),
                 (double)tot / 1e9);
        snprintf(
            fd.advice, sizeof fd.advice,
            "synchronize once per iteration or less (events, stream order) so the CPU runs ahead");
    }
    snprintf(fd.whatif, sizeof fd.whatif,
             copies ? "the host no longer waits in these calls"
                    : "these synchronize calls removed (the host waits once, at the end)");
    return file_finding(r, &fd);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int rule_launch_bound(an_graph *g, an_report *r, int64_t base)
{
    /* GPU time the streams spend idle between operations because the host launched late */
    size_t n_k = 0;
    int64_t idle_host = 0;
    for (size_t l = 0; l < g->n_lanes; l++) {
        const an_lane *L = &g->lanes[l];
        if (!L->gpu) continue;
        for (uint32_t i = L->first + 1; i < L->first + L->n; i++) {
            uint32_t v = 2 * i;
            n_k++;
            if (an_bind_type(g, v) == AE_LAUNCH) {
                int64_t gap = g->nodes[i].start - g->nodes[i - 1].end;
                if (gap > 0) idle_host += gap;
            }
        }
    }
    if (n_k < 2 || idle_host <= 0) return 0;
    int64_t *durs = op_malloc(n_k * sizeof *durs);
    if (!durs) return -1;
    size_t m = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        if (g->lanes[g->nodes[i].lane].gpu && m < n_k)
            durs[m++] = g->nodes[i].end - g->nodes[i].start;
    an_qsort(durs, m, sizeof *durs, cmp_i64);
    int64_t median = m ? durs[m / 2] : 0;
    op_free(durs);
    /* the change: the launching threads' CPU work between GPU calls twice as fast */
    reset(g);
    uint8_t *launches = op_calloc(g->n_lanes + 1, 1);
    if (!launches) return -1;
    for (size_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].kind == AN_LAUNCH) launches[g->nodes[i].lane] = 1;
    for (size_t i = 0; i < g->n_nodes; i++)
        if (launches[g->nodes[i].lane] && g->nodes[i].kind == AN_CPU) g->factor[i] = 0.5f;
    op_free(launches);
    an_finding fd = predicted_finding(g, r, base);
    snprintf(fd.rule, sizeof fd.rule, median < 20000 ? "launch_bound" : "gpu_idle_host");
    snprintf(fd.title, sizeof fd.title,
             median < 20000
                 ? "launch-bound: many short kernels, the GPU waits for the CPU to launch them"
                 : "the GPU idles waiting for the host to launch work");
    snprintf(fd.evidence, sizeof fd.evidence,
             "%zu GPU operations, median %.1f us; the GPU is idle %.3f s between operations "
             "waiting for launches",
             n_k, (double)median / 1e3, (double)idle_host / 1e9);
    snprintf(fd.advice, sizeof fd.advice,
             median < 20000 ? "fuse small kernels or capture them in a CUDA graph; move CPU work "
                              "off the launch thread"
                            : "move CPU work off the launching thread or overlap it with GPU work");
    snprintf(fd.whatif, sizeof fd.whatif,
             "the launching threads' CPU work between GPU calls 2x faster");
    return file_finding(r, &fd);
}

static int rule_pageable(an_graph *g, an_report *r, int64_t base)
{
    /* the change: pinned host memory: the copy at pinned bandwidth (AN_PINNED_FACTOR of its
     * pageable time) and the call that issued it no longer blocks the host for its length */
    reset(g);
    size_t cnt = 0;
    int64_t tot = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const an_node *n = &g->nodes[i];
        if (!(n->flags & AN_F_PAGEABLE)) continue;
        cnt++;
        tot += n->end - n->start;
        g->factor[i] = AN_PINNED_FACTOR;
        uint32_t v = 2 * (uint32_t)i;
        uint32_t k0, k1;
        an_edges_of(g, (uint32_t)i, &k0, &k1);
        for (uint32_t k = k0; k < k1; k++) {
            const an_edge_t *e = &g->edges[k];
            if (e->dst != v || e->type != AE_LAUNCH) continue;
            uint32_t call = e->src / 2;
            g->factor[call] = 0.1f;
            if (g->nodes[call].wait) g->cut[call] = 1;
        }
    }
    if (!cnt) return 0;
    an_finding fd = predicted_finding(g, r, base);
    snprintf(fd.rule, sizeof fd.rule, "pageable_copy");
    snprintf(fd.title, sizeof fd.title,
             "copies from or to pageable host memory (slow, and they block the host)");
    snprintf(fd.evidence, sizeof fd.evidence,
             "%zu copies of pageable memory take %.3f s on the GPU", cnt, (double)tot / 1e9);
    snprintf(fd.advice, sizeof fd.advice,
             "allocate the host buffers pinned (cudaMallocHost / cudaHostRegister)");
    snprintf(fd.whatif, sizeof fd.whatif,
             "pinned memory: copies %.0fx faster, the calls return at once",
             1.0 / AN_PINNED_FACTOR);
    return file_finding(r, &fd);
}

static int rule_streams(an_graph *g, an_report *r, int64_t base)
{
    /* a process with work on several streams that never runs two at once: what holds them
     * apart is the host's waits between launches; the change removes those waits */
    for (size_t p = 0; p < g->n_processes; p++) {
        size_t n_streams = 0;
        int64_t busy = 0, lo = INT64_MAX, hi = INT64_MIN;
        for (size_t l = 0; l < g->n_lanes; l++) {
            const an_lane *L = &g->lanes[l];
            if (!L->gpu || L->process != p || !L->n) continue;
            n_streams++;
            for (uint32_t i = L->first; i < L->first + L->n; i++) {
                busy += g->nodes[i].end - g->nodes[i].start;
                if (g->nodes[i].start < lo) lo = g->nodes[i].start;
                if (g->nodes[i].end > hi) hi = g->nodes[i].end;
            }
        }
        if (n_streams < 2) continue;
        /* union of busy time by a sweep over the nodes in start order per lane: approximate by
         * the sum when nothing overlaps; overlapping work makes the sum exceed the union */
        int64_t overlap = 0;
        for (size_t l = 0; l < g->n_lanes; l++) {
            const an_lane *L = &g->lanes[l];
            if (!L->gpu || L->process != p) continue;
            for (size_t m = l + 1; m < g->n_lanes; m++) {
                const an_lane *M = &g->lanes[m];
                if (!M->gpu || M->process != p) continue;
                uint32_t i = L->first, j = M->first;
                while (i < L->first + L->n && j < M->first + M->n) {
                    const an_node *a = &g->nodes[i], *b = &g->nodes[j];
                    int64_t s = a->start > b->start ? a->start : b->start;
                    int64_t e = a->end < b->end ? a->end : b->end;
                    if (e > s) overlap += e - s;
                    if (a->end < b->end)
                        i++;
                    else
                        j++;
                }
            }
        }
        if (busy <= 0 || overlap * 20 > busy) continue; /* they overlap (5 % or more) */
        reset(g);
        size_t cnt = 0;
        for (size_t i = 0; i < g->n_nodes; i++)
            if (g->nodes[i].kind == AN_GPUWAIT && g->nodes[i].wait &&
                g->lanes[g->nodes[i].lane].process == p) {
                g->cut[i] = 1;
                cnt++;
            }
        if (!cnt) continue;
        an_finding fd = predicted_finding(g, r, base);
        snprintf(fd.rule, sizeof fd.rule, "streams_serialized");
        snprintf(fd.title, sizeof fd.title, "%zu streams never overlap: host waits keep them apart",
                 n_streams);
        snprintf(fd.evidence, sizeof fd.evidence,
                 "process %zu: %.3f s of GPU work on %zu streams overlaps %.3f s; %zu host waits "
                 "in between",
                 p, (double)busy / 1e9, n_streams, (double)overlap / 1e9, cnt);
        snprintf(fd.advice, sizeof fd.advice,
                 "launch the independent work on both streams before waiting "
                 "(cudaEventRecord/StreamWaitEvent)");
        snprintf(fd.whatif, sizeof fd.whatif,
                 "the host waits between the streams' launches removed");
        if (file_finding(r, &fd) != 0) return -1;
    }
    return 0;
}

static int rule_comm(an_graph *g, an_report *r, int64_t base)
{
    reset(g);
    int64_t tot = 0;
    size_t cnt = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].kind == AN_MPIWAIT) {
            g->factor[i] = 0.0f;
            tot += an_intrinsic(g, (uint32_t)i);
            cnt++;
        }
    if (!cnt) return 0;
    an_finding fd = predicted_finding(g, r, base);
    snprintf(fd.rule, sizeof fd.rule, "comm_not_overlapped");
    snprintf(fd.title, sizeof fd.title, "communication is not overlapped with computation");
    snprintf(fd.evidence, sizeof fd.evidence,
             "%zu MPI calls spend %.3f s transferring after their partners arrived", cnt,
             (double)tot / 1e9);
    snprintf(fd.advice, sizeof fd.advice,
             "use non-blocking calls (MPI_Isend/Irecv, MPI_Iallreduce) and compute "
             "while the messages move");
    snprintf(fd.whatif, sizeof fd.whatif, "the transfers overlap completely");
    return file_finding(r, &fd);
}

/* ---- critical path shares ---------------------------------------------------------------------
 */
typedef struct agg {
    op_u64map idx;
    an_item *items;
    size_t n, cap;
} agg;

static int agg_add(agg *a, int kind, uint32_t name, int64_t ns, int rank)
{
    uint64_t key = ((uint64_t)(uint32_t)(kind + 1) << 32) | name, v = 0;
    if (!op_u64map_get(&a->idx, key, &v)) {
        if (a->n == a->cap) {
            size_t nc = a->cap ? a->cap * 2 : 64;
            an_item *p = op_realloc(a->items, nc * sizeof *p);
            if (!p) return -1;
            a->items = p;
            a->cap = nc;
        }
        a->items[a->n] = (an_item){kind, name, 0, 0};
        v = a->n++;
        if (op_u64map_put(&a->idx, key, v) != 0) return -1;
    }
    a->items[v].ns += ns;
    if (rank >= 0 && rank < 32) a->items[v].rank_mask |= 1u << rank;
    return 0;
}

static int cmp_item(const void *a, const void *b)
{
    const an_item *x = a, *y = b;
    return (x->ns < y->ns) - (x->ns > y->ns);
}

/* funcs 0: the path's time by node (kind, name); 1: its CPU work by the leaf function of the
 * call-stack samples taken inside each piece (pieces without samples are left out). */
static int path_items(an_graph *g, const an_path *p, an_item **out, size_t *n_out, int funcs)
{
    agg a;
    memset(&a, 0, sizeof a);
    uint32_t lat = 0, queue = 0, tstart = 0, cpuwait = 0;
    op_strtab_intern(&g->names, "[launch latency]", 16, &lat);
    op_strtab_intern(&g->names, "[GPU queueing]", 14, &queue);
    op_strtab_intern(&g->names, "[thread start]", 14, &tstart);
    op_strtab_intern(&g->names, "[late: waiting for a CPU]", 25, &cpuwait);
    for (size_t i = 0; i < p->n; i++) {
        const an_seg *s = &p->segs[i];
        const an_node *n = &g->nodes[s->node];
        const an_lane *L = &g->lanes[n->lane];
        int64_t ns = s->t1 - s->t0;
        int rc = 0;
        if (funcs && (s->edge != AE_SELF || n->kind != AN_CPU || !g->n_samples)) continue;
        if (!funcs && s->edge == AE_SELF && n->kind == AN_CPU)
            rc = agg_add(&a, n->kind, n->name, ns, L->rank);
        else if (s->edge == AE_LAUNCH)
            rc = agg_add(&a, K_LATENCY, lat, ns, L->rank);
        else if (s->edge == AE_CREATE)
            rc = agg_add(&a, K_LATENCY, tstart, ns, L->rank);
        else if (s->edge == 255)
            rc = agg_add(&a, K_LATENCY, L->gpu ? queue : cpuwait, ns, L->rank);
        else if (n->kind == AN_CPU && g->n_samples) {
            /* CPU work: split by the leaf functions of the node's samples */
            size_t lo = 0, hi = g->n_samples;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const an_sample *sm = &g->samples[mid];
                if (sm->lane < n->lane || (sm->lane == n->lane && sm->t < n->start))
                    lo = mid + 1;
                else
                    hi = mid;
            }
            size_t tot = 0;
            for (size_t k = lo;
                 k < g->n_samples && g->samples[k].lane == n->lane && g->samples[k].t <= n->end;
                 k++)
                tot++;
            if (!tot)
                continue;
            else {
                int64_t given = 0;
                size_t seen = 0;
                for (size_t k = lo; k < lo + tot && !rc; k++) {
                    const uint32_t *fr = &g->stack_frames[g->stacks[g->samples[k].stack]];
                    seen++;
                    int64_t share = ns * (int64_t)seen / (int64_t)tot - given;
                    given += share;
                    rc = agg_add(&a, K_FUNCTION, fr[0] ? fr[1] : n->name, share, L->rank);
                }
            }
        } else
            rc = agg_add(&a, n->kind, n->name, ns, L->rank);
        if (rc) {
            op_free(a.items);
            op_u64map_free(&a.idx);
            return -1;
        }
    }
    op_u64map_free(&a.idx);
    an_qsort(a.items, a.n, sizeof *a.items, cmp_item);
    *out = a.items;
    *n_out = a.n;
    return 0;
}

/* Hot spots: the path's largest items (and the largest work off it), each evaluated 2x faster. */
static int hot_spots(an_graph *g, an_report *r, int64_t base)
{
    agg tot;
    memset(&tot, 0, sizeof tot);
    for (size_t i = 0; i < g->n_nodes; i++) {
        const an_node *n = &g->nodes[i];
        if (n->kind == AN_CPU && n->region < 0) continue; /* unnamed CPU work */
        if (n->wait) continue;
        if (agg_add(&tot, n->kind, n->name, n->end - n->start, -1) != 0) goto oom;
    }
    an_qsort(tot.items, tot.n, sizeof *tot.items, cmp_item);
    size_t shown = 0;
    for (size_t k = 0; k < tot.n && shown < 8; k++) {
        const an_item *it = &tot.items[k];
        if (it->ns * 50 < r->wall) break; /* under 2 % of the run */
        reset(g);
        for (size_t i = 0; i < g->n_nodes; i++)
            if (g->nodes[i].kind == it->kind && g->nodes[i].name == it->name && !g->nodes[i].wait)
                g->factor[i] = 0.5f;
        an_finding fd = predicted_finding(g, r, base);
        int64_t on_path = 0;
        for (size_t j = 0; j < r->path.n; j++) {
            const an_seg *sg = &r->path.segs[j];
            const an_node *pn = &g->nodes[sg->node];
            if (sg->edge == AE_SELF && pn->kind == it->kind && pn->name == it->name)
                on_path += sg->t1 - sg->t0;
        }
        snprintf(fd.rule, sizeof fd.rule,
                 fd.gain_pct >= AN_FINDING_MIN_PCT ? "hot_spot" : "off_path");
        snprintf(fd.title, sizeof fd.title, "%s %.100s", an_kind_name[it->kind], nm(g, it->name));
        snprintf(fd.evidence, sizeof fd.evidence,
                 "%.3f s in total, %.3f s (%.1f %%) of it on the critical path",
                 (double)it->ns / 1e9, (double)on_path / 1e9, pct(on_path, r->wall));
        snprintf(fd.advice, sizeof fd.advice,
                 fd.gain_pct >= AN_FINDING_MIN_PCT ? "worth optimizing: it is on the critical path"
                                                   : "not worth optimizing: other work hides it");
        snprintf(fd.whatif, sizeof fd.whatif, "2x faster");
        an_finding *d = add_finding(&r->hot, &r->n_hot);
        if (!d) goto oom;
        *d = fd;
        shown++;
    }
    op_free(tot.items);
    op_u64map_free(&tot.idx);
    return 0;
oom:
    op_free(tot.items);
    op_u64map_free(&tot.idx);
    return -1;
}

static int cmp_finding(const void *a, const void *b)
{
    const an_finding *x = a, *y = b;
    return (x->gain_ns < y->gain_ns) - (x->gain_ns > y->gain_ns);
}

int an_analyze(an_graph *g, const an_options *o, an_report *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (!g->n_nodes) {
        snprintf(err, errlen,
                 "no activity to analyze (no API calls, ranges, MPI calls or GPU work recorded)");
        return -1;
    }
    if (!g->cut) g->cut = op_calloc(g->n_nodes + 1, 1);
    if (!g->cut) goto oom;
    reset(g);
    int64_t base = an_evaluate(g);
    r->wall = base - g->t_begin;
    /* the path: whole run or window */
    uint32_t from = UINT32_MAX;
    int64_t stop = INT64_MIN;
    if (o->win1 > 0) {
        int64_t w1 = g->t_begin + o->win1, best = INT64_MIN;
        for (size_t v = 1; v < 2 * g->n_nodes; v += 2)
            if (g->t[v] <= w1 && g->t[v] > best) best = g->t[v], from = (uint32_t)v;
        stop = g->t_begin + o->win0;
        if (from == UINT32_MAX) {
            snprintf(err, errlen, "the window holds no activity");
            return -1;
        }
    }
    if (an_critical_path(g, from, stop, &r->path) != 0) goto oom;
    if (path_items(g, &r->path, &r->path_items, &r->n_path_items, 0) != 0) goto oom;
    if (path_items(g, &r->path, &r->path_funcs, &r->n_path_funcs, 1) != 0) goto oom;
    /* iterations */
    uint32_t it_name = 0;
    if (o->iteration && op_strtab_find(&g->names, o->iteration, strlen(o->iteration), &it_name)) {
        uint32_t lane = UINT32_MAX;
        for (size_t k = 0; k < g->n_ranges; k++)
            if (g->ranges[k].name == it_name && g->ranges[k].n_nodes) {
                if (lane == UINT32_MAX) lane = g->ranges[k].lane;
                if (g->ranges[k].lane != lane) continue;
                an_iter *p = op_realloc(r->iters, (r->n_iters + 1) * sizeof *p);
                if (!p) goto oom;
                r->iters = p;
                p[r->n_iters++] = (an_iter){g->ranges[k].start, g->ranges[k].end, 0, 0};
            }
    }
    /* the user's what-if */
    an_factors(g, o->whatifs, o->n_whatifs);
    r->predicted = an_evaluate(g) - g->t_begin;
    {
        size_t j = 0;
        for (size_t k = 0; k < g->n_ranges && j < r->n_iters; k++)
            if (g->ranges[k].name == it_name && g->ranges[k].n_nodes &&
                g->ranges[k].start == r->iters[j].start) {
                r->iters[j].pstart = g->t[2 * g->ranges[k].first_node];
                r->iters[j].pend = g->t[2 * g->ranges[k].last_node + 1];
                j++;
            }
    }
    /* findings (each evaluates its own change) */
    reset(g);
    an_evaluate(g); /* binding edges of the recording, for the rules that read them */
    if (rule_launch_bound(g, r, base) != 0) goto oom;
    if (rule_rank_imbalance(g, r, base) != 0) goto oom;
    if (rule_nccl_straggler(g, r, base) != 0) goto oom;
    if (rule_thread_imbalance(g, r, base) != 0) goto oom;
    if (rule_waits(g, r, base, 0) != 0) goto oom;
    if (rule_waits(g, r, base, 1) != 0) goto oom;
    if (rule_comm(g, r, base) != 0) goto oom;
    if (rule_pageable(g, r, base) != 0) goto oom;
    if (rule_streams(g, r, base) != 0) goto oom;
    if (hot_spots(g, r, base) != 0) goto oom;
    an_qsort(r->findings, r->n_findings, sizeof *r->findings, cmp_finding);
    an_qsort(r->minor, r->n_minor, sizeof *r->minor, cmp_finding);
    an_qsort(r->hot, r->n_hot, sizeof *r->hot, cmp_finding);
    /* leave the graph evaluated as recorded (the path's times) */
    reset(g);
    an_evaluate(g);
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

void an_report_free(an_report *r)
{
    an_path_free(&r->path);
    op_free(r->path_items);
    op_free(r->path_funcs);
    op_free(r->iters);
    op_free(r->findings);
    op_free(r->minor);
    op_free(r->hot);
    memset(r, 0, sizeof *r);
}
