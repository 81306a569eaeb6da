/* graph_tabs.c — the lookup tables graph.c builds with: correlation id -> launching node
 * (corr_tab, searched from a hint) and database id -> value (idmap). Shared through
 * graph_internal.h. */
#include <string.h>

#include "analyze/graph_internal.h"
#include "common/alloc.h"
#include "common/u64map.h"

int an_gb_ct_put(corr_tab *t, int64_t corr, uint64_t node1)
{
    GROW(t->e, t->n, t->cap);
    t->e[t->n++] = (cnode){corr, (uint32_t)node1};
    return 0;
oom:
    return -1;
}

int an_gb_cmp_cnode(const void *a, const void *b)
{
    const cnode *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

/* corr's launching node, searched from *hint (the previous answer) outwards: a stream's
 * operations come in time order and their correlation ids mostly grow with it, so the answer is
 * a few entries away and the search stays in cached memory (a binary search from the whole
 * table's middle cost a cache miss per level: at 10 M events about a tenth of the load). */
int an_gb_ct_get(const corr_tab *t, int64_t corr, size_t *hint, uint64_t *node1)
{
    /* the first entry past corr (its predecessor is corr's last) lies in [lo, hi] */
    size_t n = t->n, h = *hint <= t->n ? *hint : t->n, lo, hi, step = 1;
    if (h > 0 && t->e[h - 1].corr > corr) { /* behind the hint: gallop back */
        hi = h - 1;
        while (hi >= step && t->e[hi - step].corr > corr) {
            hi -= step;
            step *= 2;
        }
        lo = hi >= step ? hi - step + 1 : 0;
    } else { /* at or past the hint: gallop on */
        lo = h;
        while (lo + step <= n && t->e[lo + step - 1].corr <= corr) {
            lo += step;
            step *= 2;
        }
        hi = lo + step <= n ? lo + step - 1 : n;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->e[mid].corr <= corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    *hint = lo;
    if (!lo || t->e[lo - 1].corr != corr) return 0;
    *node1 = t->e[lo - 1].node;
    return 1;
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
