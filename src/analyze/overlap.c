/* overlap.c — per GPU and process (rank): how much of the communication time runs beside
 * computation and how much of the copy time beside kernels (analyze.h, an_overlap; the
 * comm/comp overlap of Holistic Trace Analysis, docs/analyze.md "Breakdown").
 *
 * A GPU's work is the union of its streams' operations: computation = kernels not named
 * nccl* (communication kernels are ncclDevKernel_*, ncclKernel_*), communication = the nccl*
 * kernels, copies = copies and memsets. One sweep over the streams' operations in time order
 * (each stream's are sorted already; a k-way merge, nothing is copied) measures the length of
 * each union and of the intersections communication & computation and copies & any kernel.
 * Recorded times. */
#include <string.h>

#include "analyze/analyze.h"
#include "common/alloc.h"

enum { OV_COMP, OV_COMM, OV_COPY, OV_NONE };

static int is_comm_name(const char *s)
{
    return s && strncmp(s, "nccl", 4) == 0;
}

/* Sweeps the lanes lanes[0..m) (one GPU of one process) into o. */
static int sweep(const an_graph *g, const uint32_t *lanes, size_t m, const uint8_t *cls,
                 an_gpu_overlap *o)
{
    uint32_t *idx = op_malloc((m + 1) * sizeof *idx);
    uint8_t *in = op_calloc(m + 1, 1);
    if (!idx || !in) {
        op_free(idx);
        op_free(in);
        return -1;
    }
    for (size_t j = 0; j < m; j++) idx[j] = g->lanes[lanes[j]].first;
    int cnt[3] = {0, 0, 0};
    int64_t prev = INT64_MIN;
    for (;;) {
        size_t best = SIZE_MAX;
        int64_t bt = INT64_MAX;
        for (size_t j = 0; j < m; j++) {
            const an_lane *L = &g->lanes[lanes[j]];
            if (idx[j] >= L->first + L->n) continue;
            const an_node *n = &g->nodes[idx[j]];
            int64_t b = in[j] ? n->end : n->start;
            if (b < bt) bt = b, best = j;
        }
        if (best == SIZE_MAX) break;
        if (prev != INT64_MIN && bt > prev) {
            int64_t dt = bt - prev;
            int a = cnt[OV_COMP] > 0, c = cnt[OV_COMM] > 0, y = cnt[OV_COPY] > 0;
            if (a) o->compute_ns += dt;
            if (c) o->comm_ns += dt;
            if (y) o->copy_ns += dt;
            if (c && a) o->comm_overlap_ns += dt;
            if (y && (a || c)) o->copy_overlap_ns += dt;
            if (a || c || y) o->busy_ns += dt;
        }
        if (bt > prev) prev = bt;
        int k = cls[idx[best]];
        if (in[best]) {
            if (k != OV_NONE) cnt[k]--;
            in[best] = 0;
            idx[best]++;
        } else {
            if (k != OV_NONE) cnt[k]++;
            in[best] = 1;
        }
    }
    op_free(idx);
    op_free(in);
    return 0;
}

int an_overlap(const an_graph *g, an_gpu_overlap **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    size_t n_names = op_strtab_count(&g->names);
    uint8_t *name_comm = op_calloc(n_names + 1, 1); /* 0 unknown, 1 no, 2 yes */
    uint8_t *cls = NULL;
    uint32_t *lanes = op_malloc((g->n_lanes + 1) * sizeof *lanes);
    uint8_t *done = op_calloc(g->n_lanes + 1, 1);
    an_gpu_overlap *rows = NULL;
    size_t n = 0, cap = 0;
    if (!name_comm || !lanes || !done) goto oom;
    /* the class of each GPU node (CPU nodes are never swept) */
    cls = op_malloc(g->n_nodes + 1);
    if (!cls) goto oom;
    for (size_t l = 0; l < g->n_lanes; l++) {
        const an_lane *L = &g->lanes[l];
        if (!L->gpu) continue;
        for (uint32_t i = L->first; i < L->first + L->n; i++) {
            const an_node *nd = &g->nodes[i];
            if (nd->kind == AN_KERNEL) {
                uint8_t *c = &name_comm[nd->name];
                if (!*c) *c = is_comm_name(op_strtab_str(&g->names, nd->name)) ? 2 : 1;
                cls[i] = *c == 2 ? OV_COMM : OV_COMP;
            } else
                cls[i] = (nd->kind == AN_COPY || nd->kind == AN_SET) ? OV_COPY : OV_NONE;
        }
    }
    for (size_t l = 0; l < g->n_lanes; l++) {
        const an_lane *L = &g->lanes[l];
        if (!L->gpu || done[l] || !L->n) continue;
        size_t m = 0;
        for (size_t k = l; k < g->n_lanes; k++) {
            const an_lane *K = &g->lanes[k];
            if (K->gpu && !done[k] && K->n && K->process == L->process && K->device == L->device)
                lanes[m++] = (uint32_t)k, done[k] = 1;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            an_gpu_overlap *p = op_realloc(rows, nc * sizeof *p);
            if (!p) goto oom;
            rows = p;
            cap = nc;
        }
        an_gpu_overlap *o = &rows[n++];
        memset(o, 0, sizeof *o);
        o->process = L->process;
        o->pid = L->pid;
        o->rank = L->rank;
        o->device = L->device;
        o->streams = (uint32_t)m;
        if (sweep(g, lanes, m, cls, o) != 0) goto oom;
    }
    op_free(name_comm);
    op_free(cls);
    op_free(lanes);
    op_free(done);
    *out = rows;
    *n_out = n;
    return 0;
oom:
    op_free(name_comm);
    op_free(cls);
    op_free(lanes);
    op_free(done);
    op_free(rows);
    return -1;
}

double an_overlap_pct(int64_t part, int64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : -1.0;
}
