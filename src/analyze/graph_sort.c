/* graph_sort.c — part of omniprof analyze (docs/analyze.md, "Evaluation"): the builder's
 * regions and GPU operations put in lane-then-time order before graph.c turns them into nodes.
 * Both come in commit order, nearly sorted per lane, so a counting sort by lane and an
 * insertion sort per lane (qsort past a budget of moves) finish them in about linear time. */
#include <stdint.h>
#include <string.h>

#include "analyze/graph_internal.h"
#include "common/alloc.h"

static const reg *g_sort_regs;
static int cmp_reg(const void *a, const void *b)
{
    const reg *x = &g_sort_regs[*(const uint32_t *)a], *y = &g_sort_regs[*(const uint32_t *)b];
    if (x->lane != y->lane) return x->lane < y->lane ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end > y->end ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* The regions' (ops 0) or operations' (ops 1) lanes counted: *lo the lowest lane, *nl how
 * many lanes from it; at[l] the first index of lane lo + l in lane order, at[nl] the count.
 * NULL: out of memory. */
static size_t *lane_starts(const builder *b, int ops, uint32_t *lo_out, size_t *nl_out)
{
    size_t n = ops ? b->n_ops : b->n_regs;
#define LANE(i) (ops ? b->ops[i].lane : b->regs[i].lane)
    uint32_t lo = UINT32_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t l = LANE(i);
        if (l < lo) lo = l;
        if (l > hi) hi = l;
    }
    size_t nl = (size_t)(hi - lo) + 1;
    size_t *at = op_calloc(nl + 1, sizeof *at);
    if (!at) return NULL;
    for (size_t i = 0; i < n; i++) at[LANE(i) - lo + 1]++;
#undef LANE
    for (size_t l = 1; l <= nl; l++) at[l] += at[l - 1];
    *lo_out = lo;
    *nl_out = nl;
    return at;
}

/* The regions in cmp_reg's order, into idx (tmp: scratch of as many entries). Rows come in
 * commit order — a thread's regions by their end, a region after those it encloses — so after
 * a counting sort by lane (stable) each lane is nearly in order: an insertion sort finishes it
 * in about linear time; past a budget of moves (long regions enclosing many) the lane is sorted
 * by qsort instead. Any correct sort gives the same order (cmp_reg is total). */
int an_gb_sort_regs(builder *b, uint32_t *idx, uint32_t *tmp)
{
    g_sort_regs = b->regs;
    const reg *R = b->regs;
    size_t n = b->n_regs, nl;
    if (!n) return 0;
    uint32_t lo;
    size_t *at = lane_starts(b, 0, &lo, &nl);
    if (!at) return -1;
    for (size_t i = 0; i < n; i++) tmp[at[R[i].lane - lo]++] = (uint32_t)i;
    memcpy(idx, tmp, n * sizeof *idx);
    size_t first = 0;
    for (size_t l = 0; l < nl; l++) { /* at[l] is now lane l's end */
        size_t m = at[l] - first;
        uint32_t *a = idx + first;
        size_t budget = 16 * m + 4096, moves = 0;
        for (size_t i = 1; i < m; i++) {
            uint32_t x = a[i];
            size_t j = i;
            while (j > 0 && cmp_reg(&x, &a[j - 1]) < 0) {
                a[j] = a[j - 1];
                j--;
                if (++moves > budget) break;
            }
            a[j] = x;
            if (moves > budget) {
                an_qsort(a, m, sizeof *a, cmp_reg);
                break;
            }
        }
        first = at[l];
    }
    op_free(at);
    return 0;
}

static int cmp_op(const void *a, const void *b)
{
    const gop *x = a, *y = b;
    if (x->lane != y->lane) return x->lane < y->lane ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* The operations of this set in cmp_op's order, in place: grouped by lane (a counting sort
 * through a 4-byte index, the operations moved along its cycles), then each lane by time: rows
 * come in commit order, nearly in time order per stream, so an insertion sort finishes a lane in
 * about linear time; past a budget of moves the lane is sorted by qsort. Stable, like glibc's
 * qsort (a merge sort) was on the whole array: the same order. 0 or -1 (out of memory). */
int an_gb_sort_ops(builder *b)
{
    gop *O = b->ops;
    size_t n = b->n_ops, nl;
    if (n < 2) return 0;
    uint32_t lo;
    size_t *at = lane_starts(b, 1, &lo, &nl);
    uint32_t *pos = op_malloc(n * sizeof *pos);
    if (!at || !pos) {
        op_free(at);
        op_free(pos);
        return -1;
    }
    for (size_t i = 0; i < n; i++) pos[i] = (uint32_t)at[O[i].lane - lo]++;
    op_free(at);
    for (size_t i = 0; i < n; i++)
        while (pos[i] != i) {
            uint32_t to = pos[i];
            gop t = O[to];
            O[to] = O[i];
            O[i] = t;
            pos[i] = pos[to];
            pos[to] = to;
        }
    op_free(pos);
    for (size_t first = 0; first < n;) {
        size_t last = first;
        while (last < n && O[last].lane == O[first].lane) last++;
        size_t m = last - first, budget = 16 * m + 4096, moves = 0;
        gop *a = O + first;
        for (size_t i = 1; i < m && moves <= budget; i++) {
            gop x = a[i];
            size_t j = i;
            while (j > 0 && cmp_op(&x, &a[j - 1]) < 0) {
                a[j] = a[j - 1];
                j--;
                moves++;
            }
            a[j] = x;
        }
        if (moves > budget) an_qsort(a, m, sizeof *a, cmp_op);
        first = last;
    }
    return 0;
}
