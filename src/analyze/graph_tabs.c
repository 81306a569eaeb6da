/* graph_tabs.c — the lookup tables graph.c builds with: correlation id -> launching node
 * (corr_tab, searched from a hint) and database id -> value (idmap). Shared through
 * graph_internal.h. */
#include <string.h>

#include "analyze/graph_internal.h"
#include "common/alloc.h"
#include "common/u64map.h"

int an_gb_ct_put(corr_tab *t, const an_graph *g, int64_t corr, uint64_t node1)
{
    const an_node *n = &g->nodes[node1 - 1];
    int64_t d = n->end - n->start;
    GROW(t->e, t->n, t->cap);
    t->e[t->n++] = (cnode){corr, n->start, (uint32_t)node1,
                           (d < CT_DUR_BIG ? (uint32_t)d : CT_DUR_BIG) | (n->wait ? CT_WAIT : 0)};
    return 0;
oom:
    return -1;
}

static int cmp_cnode(const void *a, const void *b)
{
    const cnode *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

void an_gb_ct_seal(corr_tab *t)
{
    /* runs of non-decreasing ids (the nodes grow along the table: each run is in (corr, node)
     * order, the order a sort gives) */
    size_t r = 0;
    t->run[0] = 0;
    for (size_t i = 1; i < t->n && r < CT_RUNS_MAX; i++)
        if (t->e[i].corr < t->e[i - 1].corr) t->run[++r] = i;
    if (r >= CT_RUNS_MAX) { /* many: one sorted run */
        an_qsort(t->e, t->n, sizeof *t->e, cmp_cnode);
        r = 0;
    }
    t->n_runs = t->n ? r + 1 : 0;
    t->run[t->n_runs] = t->n;
    memset(t->hint, 0, sizeof t->hint);
    for (size_t k = 0; k < t->n_runs; k++) t->hint[k] = t->run[k];
}

/* In the run e[0 .. n) (sorted by id), the index past the last entry with id <= corr, searched
 * from *hint (the previous answer) outwards: a stream's operations come in time order and their
 * ids mostly grow with it, so the answer is a few entries away and the search stays in cached
 * memory (a binary search from the middle cost a cache miss per level). */
static size_t ct_upper(const cnode *e, size_t n, int64_t corr, size_t h)
{
    size_t lo, hi, step = 1;
    if (h > n) h = n;
    if (h > 0 && e[h - 1].corr > corr) { /* behind the hint: gallop back */
        hi = h - 1;
        while (hi >= step && e[hi - step].corr > corr) {
            hi -= step;
            step *= 2;
        }
        lo = hi >= step ? hi - step + 1 : 0;
    } else { /* at or past the hint: gallop on */
        lo = h;
        while (lo + step <= n && e[lo + step - 1].corr <= corr) {
            lo += step;
            step *= 2;
        }
        hi = lo + step <= n ? lo + step - 1 : n;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e[mid].corr <= corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const cnode *an_gb_ct_get(corr_tab *t, int64_t corr)
{
    const cnode *best = NULL;
    for (size_t r = 0; r < t->n_runs; r++) {
        const cnode *e = t->e + t->run[r];
        size_t n = t->run[r + 1] - t->run[r];
        size_t at = ct_upper(e, n, corr, t->hint[r] - t->run[r]);
        t->hint[r] = t->run[r] + at;
        if (at && e[at - 1].corr == corr && (!best || e[at - 1].node > best->node))
            best = &e[at - 1];
    }
    return best;
}

/* The rows of a set are read with ids only (no text join per row): a name is read from the
 * database the first time its id is seen in the set and interned; ids map to interned names
 * through a dense array (ids below IDS_DENSE; a hash map above: a damaged or foreign input). */

int an_gb_ids_get(const idmap *m, int64_t id, uint32_t *v)
{
    uint64_t x = 0;
    if (id >= 0 && (uint64_t)id < m->cap) {
        if (!m->a[id]) return 0;
        *v = m->a[id] - 1;
        return 1;
    }
    if (id >= 0 && id < IDS_DENSE) return 0;
    if (!op_u64map_get(&m->big, (uint64_t)id, &x)) return 0;
    *v = (uint32_t)x;
    return 1;
}

int an_gb_ids_put(idmap *m, int64_t id, uint32_t v)
{
    if (id < 0 || id >= IDS_DENSE) return op_u64map_put(&m->big, (uint64_t)id, v);
    if ((uint64_t)id >= m->cap) {
        size_t nc = m->cap ? m->cap : 256;
        while (nc <= (uint64_t)id) nc *= 2;
        uint32_t *p = op_realloc(m->a, nc * sizeof *p);
        if (!p) return -1;
        memset(p + m->cap, 0, (nc - m->cap) * sizeof *p);
        m->a = p;
        m->cap = nc;
    }
    m->a[id] = v + 1;
    return 0;
}

void an_gb_ids_free(idmap *m)
{
    op_free(m->a);
    op_u64map_free(&m->big);
    memset(m, 0, sizeof *m);
}
