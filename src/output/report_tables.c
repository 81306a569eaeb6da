/* report_tables.c — the report's summary tables and per-rank imbalance (report.h): the
 * statistics of every domain (stats.c collects them by process in one pass per table), summed
 * over processes by (domain, name) for the tables, and kept per process for the imbalance.
 *
 * Memory: one entry per distinct (domain, name) plus, for the imbalance, a processes x domains
 * matrix and RP_RANK_TOP rows of one value per process — the trace's dictionary, never its
 * events. */
#include <stdlib.h>
#include <string.h>

#include "db/reader_report.h"
#include "output/report.h"

typedef struct tb_entry {
    uint32_t domain, name; /* ids in names */
    int slot;              /* the domain's index in tb_ctx.domains */
    uint64_t calls;
    double total, sumsq;
    int64_t min, max;
} tb_entry;

typedef struct tb_group {
    uint64_t key;
    int64_t order;
    char *label;
} tb_group;

typedef struct tb_ctx {
    op_strtab names;     /* domains and names */
    op_u64map index;     /* domain << 32 | name -> entry + 1 */
    tb_entry *e;
    size_t n, cap;
    tb_group *g;
    size_t n_groups, cap_groups;
    op_u64map group_index; /* group key -> group + 1 */
    uint32_t *domains;     /* distinct domain ids, in first-seen order */
    size_t n_domains, cap_domains;
    /* second walk: the imbalance */
    double *busy;          /* [group][domain] */
    size_t *top;           /* entries of the imbalance table */
    size_t n_top;
    double *per_group;     /* [top][group] */
    /* bytes per name: copies and memsets (kind 0), MPI calls (kind 1) */
    op_strtab bytes_names[2];
    double *bytes[2];
    size_t cap_bytes[2];
} tb_ctx;

static int on_bytes(int kind, const char *name, double bytes, void *arg)
{
    tb_ctx *c = arg;
    uint32_t id;
    if (kind < 0 || kind > 1) return 0;
    if (op_strtab_intern(&c->bytes_names[kind], name, strlen(name), &id)) return OP_OUT_EFAIL;
    size_t n = op_strtab_count(&c->bytes_names[kind]), old = c->cap_bytes[kind];
    if (op_grow(&c->bytes[kind], &c->cap_bytes[kind], n, sizeof(double))) return OP_OUT_EFAIL;
    if (c->cap_bytes[kind] > old) memset(c->bytes[kind] + old, 0, (c->cap_bytes[kind] - old) * sizeof(double));
    c->bytes[kind][id] += bytes;
    return 0;
}

static int bytes_set(rp_report *r, op_src *src, op_src_set *set, size_t ordinal, void *arg, char *err, size_t errlen)
{
    (void)r;
    (void)ordinal;
    return op_rd_report_bytes(src, set, on_bytes, arg, err, errlen);
}

/* The bytes of a row of domain d (-1: the domain moves no bytes). */
static double row_bytes(const tb_ctx *c, const char *domain, const char *name, size_t len)
{
    int kind = !strncmp(domain, "MEMORY_COPY", 11) || !strncmp(domain, "MEMORY_SET", 10) ? 0
               : !strncmp(domain, "MPI", 3)                                                ? 1
                                                                                            : -1;
    uint32_t id;
    if (kind < 0 || !op_strtab_count(&c->bytes_names[kind])) return -1;
    return op_strtab_find(&c->bytes_names[kind], name, len, &id) ? c->bytes[kind][id] : 0;
}

static int group_of(tb_ctx *c, const op_stats_view *v, size_t *gi)
{
    uint64_t x;
    if (op_u64map_get(&c->group_index, v->group, &x)) {
        *gi = x - 1;
        return 0;
    }
    if (op_grow(&c->g, &c->cap_groups, c->n_groups + 1, sizeof *c->g)) return -1;
    tb_group *g = &c->g[c->n_groups];
    g->key = v->group;
    g->order = v->group_order;
    if (!(g->label = strdup(v->group_label)) || op_u64map_put(&c->group_index, v->group, c->n_groups + 1)) return -1;
    *gi = c->n_groups++;
    return 0;
}

static int domain_slot(const tb_ctx *c, uint32_t d)
{
    for (size_t i = 0; i < c->n_domains; i++)
        if (c->domains[i] == d) return (int)i;
    return -1;
}

/* First walk: entries, groups, domains. */
static int collect(const op_stats_view *v, void *arg)
{
    tb_ctx *c = arg;
    uint32_t d, nm;
    size_t gi;
    if (op_strtab_intern(&c->names, v->domain, strlen(v->domain), &d) ||
        op_strtab_intern(&c->names, (const char *)v->name, v->name_len, &nm) || group_of(c, v, &gi))
        return OP_OUT_EFAIL;
    if (domain_slot(c, d) < 0) {
        if (op_grow(&c->domains, &c->cap_domains, c->n_domains + 1, sizeof *c->domains)) return OP_OUT_EFAIL;
        c->domains[c->n_domains++] = d;
    }
    uint64_t key = (uint64_t)d << 32 | nm, x;
    tb_entry *e;
    if (op_u64map_get(&c->index, key, &x)) {
        e = &c->e[x - 1];
    } else {
        if (op_grow(&c->e, &c->cap, c->n + 1, sizeof *c->e) || op_u64map_put(&c->index, key, c->n + 1))
            return OP_OUT_EFAIL;
        e = &c->e[c->n++];
        *e = (tb_entry){.domain = d, .name = nm, .slot = domain_slot(c, d), .min = v->min, .max = v->max};
    }
    e->calls += v->calls;
    e->total += v->total;
    e->sumsq += v->sumsq;
    if (v->min < e->min) e->min = v->min;
    if (v->max > e->max) e->max = v->max;
    return 0;
}

/* Second walk: per group, the time of each domain and of each name of the imbalance table. */
static int per_group(const op_stats_view *v, void *arg)
{
    tb_ctx *c = arg;
    uint32_t d, nm;
    uint64_t gx, ex;
    if (!op_strtab_find(&c->names, v->domain, strlen(v->domain), &d) ||
        !op_strtab_find(&c->names, (const char *)v->name, v->name_len, &nm) ||
        !op_u64map_get(&c->group_index, v->group, &gx))
        return 0;
    size_t gi = gx - 1;
    if (!op_u64map_get(&c->index, (uint64_t)d << 32 | nm, &ex)) return 0;
    c->busy[gi * c->n_domains + (size_t)c->e[ex - 1].slot] += v->total;
    for (size_t t = 0; t < c->n_top; t++)
        if (c->top[t] == ex - 1) c->per_group[t * c->n_groups + gi] += v->total;
    return 0;
}

static int by_total(const void *a, const void *b, void *ctx)
{
    const tb_entry *e = ctx;
    double x = e[*(const size_t *)a].total, y = e[*(const size_t *)b].total;
    return x < y ? 1 : x > y ? -1 : 0;
}

static int by_order(const void *a, const void *b, void *ctx)
{
    const tb_group *g = ctx;
    const tb_group *x = &g[*(const size_t *)a], *y = &g[*(const size_t *)b];
    if (x->order != y->order) return x->order < y->order ? -1 : 1;
    return strcmp(x->label, y->label);
}

#define NAME(c, id) op_strtab_str(&(c)->names, id), op_strtab_len(&(c)->names, id)

/* tables: [{"domain", "calls", "total", "rows_total", "rows": [[name, calls, total, min, max,
 * stddev, bytes]...]}...], domains by total time, rows by total (the largest RP_MAX_TABLE_ROWS);
 * bytes only in the rows of copies, memsets and MPI calls. */
static void write_tables(tb_ctx *c, const size_t *ix, op_buf *b)
{
    double *dtot = calloc(c->n_domains + 1, sizeof *dtot);
    uint64_t *dcalls = calloc(c->n_domains + 1, sizeof *dcalls);
    size_t *dorder = calloc(c->n_domains + 1, sizeof *dorder), *dnames = calloc(c->n_domains + 1, sizeof *dnames);
    if (!dtot || !dcalls || !dorder || !dnames) {
        b->oom = 1;
        goto out;
    }
    for (size_t i = 0; i < c->n; i++) {
        int s = c->e[i].slot;
        dtot[s] += c->e[i].total;
        dcalls[s] += c->e[i].calls;
        dnames[s]++;
    }
    for (size_t i = 0; i < c->n_domains; i++) dorder[i] = i;
    for (size_t i = 1; i < c->n_domains; i++) /* domains by total: few, insertion sort */
        for (size_t j = i; j > 0 && dtot[dorder[j]] > dtot[dorder[j - 1]]; j--) {
            size_t t = dorder[j];
            dorder[j] = dorder[j - 1];
            dorder[j - 1] = t;
        }
    op_buf_putc(b, '[');
    for (size_t k = 0; k < c->n_domains; k++) {
        size_t s = dorder[k], rows = 0;
        op_buf_puts(b, k ? ",\n{\"domain\":" : "{\"domain\":");
        rp_json_str(b, NAME(c, c->domains[s]));
        op_buf_printf(b, ",\"calls\":%llu,\"total\":", (unsigned long long)dcalls[s]);
        rp_json_num(b, dtot[s]);
        op_buf_printf(b, ",\"rows_total\":%zu,\"rows\":[", dnames[s]);
        for (size_t i = 0; i < c->n && rows < RP_MAX_TABLE_ROWS; i++) {
            const tb_entry *e = &c->e[ix[i]];
            if (e->slot != (int)s) continue;
            op_buf_puts(b, rows++ ? ",[" : "[");
            rp_json_str(b, NAME(c, e->name));
            op_buf_printf(b, ",%llu,", (unsigned long long)e->calls);
            rp_json_num(b, e->total);
            op_buf_printf(b, ",%lld,%lld,", (long long)e->min, (long long)e->max);
            rp_json_num(b, op_stats_stddev(e->calls, e->total, e->sumsq));
            double by = row_bytes(c, op_strtab_str(&c->names, c->domains[s]), NAME(c, e->name));
            if (by >= 0) {
                op_buf_putc(b, ',');
                rp_json_num(b, by);
            }
            op_buf_putc(b, ']');
        }
        op_buf_puts(b, "]}");
    }
    op_buf_putc(b, ']');
out:
    free(dtot);
    free(dcalls);
    free(dorder);
    free(dnames);
}

/* ranks: {"labels", "domains", "busy": [[ns per domain]...], "top": [{"domain", "name",
 * "per_rank": [...]}...]}, processes in rank (then pid) order; null with fewer than two. */
static int write_ranks(tb_ctx *c, const size_t *ix, const op_stats *st, op_buf *b)
{
    if (c->n_groups < 2) {
        op_buf_puts(b, "null");
        return 0;
    }
    c->n_top = c->n < RP_RANK_TOP ? c->n : RP_RANK_TOP;
    c->busy = calloc(c->n_groups * c->n_domains + 1, sizeof *c->busy);
    c->top = malloc((c->n_top + 1) * sizeof *c->top);
    c->per_group = calloc(c->n_top * c->n_groups + 1, sizeof *c->per_group);
    size_t *go = malloc(c->n_groups * sizeof *go);
    if (!c->busy || !c->top || !c->per_group || !go) {
        free(go);
        return OP_OUT_EFAIL;
    }
    memcpy(c->top, ix, c->n_top * sizeof *c->top);
    op_stats_each(st, per_group, c);
    for (size_t g = 0; g < c->n_groups; g++) go[g] = g;
    qsort_r(go, c->n_groups, sizeof *go, by_order, c->g);
    op_buf_puts(b, "{\"labels\":[");
    for (size_t g = 0; g < c->n_groups; g++) {
        if (g) op_buf_putc(b, ',');
        rp_json_str(b, c->g[go[g]].label, strlen(c->g[go[g]].label));
    }
    op_buf_puts(b, "],\"domains\":[");
    for (size_t d = 0; d < c->n_domains; d++) {
        if (d) op_buf_putc(b, ',');
        rp_json_str(b, NAME(c, c->domains[d]));
    }
    op_buf_puts(b, "],\"busy\":[");
    for (size_t g = 0; g < c->n_groups; g++) {
        op_buf_puts(b, g ? ",[" : "[");
        for (size_t d = 0; d < c->n_domains; d++) {
            if (d) op_buf_putc(b, ',');
            rp_json_num(b, c->busy[go[g] * c->n_domains + d]);
        }
        op_buf_putc(b, ']');
    }
    op_buf_puts(b, "],\"top\":[");
    for (size_t t = 0; t < c->n_top; t++) {
        const tb_entry *e = &c->e[c->top[t]];
        op_buf_puts(b, t ? ",{\"domain\":" : "{\"domain\":");
        rp_json_str(b, NAME(c, e->domain));
        op_buf_puts(b, ",\"name\":");
        rp_json_str(b, NAME(c, e->name));
        op_buf_puts(b, ",\"per_rank\":[");
        for (size_t g = 0; g < c->n_groups; g++) {
            if (g) op_buf_putc(b, ',');
            rp_json_num(b, c->per_group[t * c->n_groups + go[g]]);
        }
        op_buf_puts(b, "]}");
    }
    op_buf_puts(b, "]}");
    free(go);
    return 0;
}

int rp_tables(rp_report *r, char *err, size_t errlen)
{
    op_stats *st = op_stats_new();
    if (!st) return OP_OUT_EFAIL;
    op_win w = {0};
    op_stats_progress(st, &r->progress);
    int rc = op_stats_collect(st, r->inputs, r->n_inputs, &w, 1, err, errlen);
    tb_ctx c;
    memset(&c, 0, sizeof c);
    if (!rc) rc = op_stats_each(st, collect, &c);
    if (!rc) rc = rp_each_set(r, "bytes", bytes_set, &c, err, errlen);
    size_t *ix = rc ? NULL : malloc((c.n + 1) * sizeof *ix);
    if (!rc && !ix) rc = OP_OUT_EFAIL;
    if (!rc) {
        for (size_t i = 0; i < c.n; i++) ix[i] = i;
        qsort_r(ix, c.n, sizeof *ix, by_total, c.e);
        write_tables(&c, ix, &r->tables);
        rc = write_ranks(&c, ix, st, &r->ranks);
        if (r->tables.oom || r->ranks.oom) rc = OP_OUT_EFAIL;
    }
    free(ix);
    for (size_t g = 0; g < c.n_groups; g++) free(c.g[g].label);
    free(c.g);
    free(c.e);
    free(c.domains);
    free(c.busy);
    free(c.top);
    free(c.per_group);
    op_u64map_free(&c.index);
    op_u64map_free(&c.group_index);
    op_strtab_free(&c.names);
    for (int k = 0; k < 2; k++) {
        op_strtab_free(&c.bytes_names[k]);
        free(c.bytes[k]);
    }
    op_stats_free(st);
    return rc;
}
