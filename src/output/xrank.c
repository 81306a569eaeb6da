/* xrank.c — the cross-rank tables of `omniprof summary` (docs/multinode.md): for every domain
 * (regions per category — MPI_API among them —, kernels, copies, allocations) and name, the
 * per-rank totals and call counts of the statistics collected by process (stats.c), reduced over
 * the ranks: the minimum, mean and maximum of the per-rank totals and counts, how many ranks
 * called it, the imbalance (max / mean) and the slowest rank (the largest total; the lower rank
 * on a tie).
 *
 * Which processes count as ranks: every process group of the statistics — one per profiled
 * process of the inputs, whether they come as several rank databases or one merged file. The
 * tables are written when at least two of them carry a rank (an MPI rank or a launcher's); a
 * process without one (a helper the launcher started) still counts, named by its pid. A rank
 * that never called a name counts as 0 in its min and mean.
 *
 * Memory: one entry per distinct (domain, name), whatever the number of ranks (each process
 * group's row of a name is seen once and folded into running min/max/sums). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/strtab.h"
#include "output/xrank.h"

typedef struct xr_entry {
    uint32_t domain, name; /* ids in names */
    uint32_t ranks;        /* groups that have the name */
    double total, sumsq;   /* sums over ranks of the per-rank totals (and of their squares) */
    uint64_t calls, calls_min, calls_max;
    double min, max;       /* over the ranks that have it */
    int64_t slowest_order; /* the slowest group's order (its rank, or 1e12 + pid) */
    uint32_t slowest;      /* ... its label (id in names) */
} xr_entry;

typedef struct xr_ctx {
    op_strtab names;
    op_u64map index;  /* domain << 32 | name -> entry + 1 */
    xr_entry *e;
    size_t n, cap;
    op_u64map groups; /* group key -> 1 */
    size_t n_groups, n_ranked;
} xr_ctx;

#define RANKLESS 1000000000000LL /* stats.c orders a process without a rank at 1e12 + pid */

static int collect(const op_stats_view *v, void *arg) {
    xr_ctx *c = arg;
    uint64_t x;
    if (!op_u64map_get(&c->groups, v->group, &x)) {
        if (op_u64map_put(&c->groups, v->group, 1)) return OP_OUT_EFAIL;
        c->n_groups++;
        if (v->group_order < RANKLESS) c->n_ranked++;
    }
    uint32_t d, nm, label;
    if (op_strtab_intern(&c->names, v->domain, strlen(v->domain), &d) ||
        op_strtab_intern(&c->names, (const char *)v->name, v->name_len, &nm) ||
        op_strtab_intern(&c->names, v->group_label, strlen(v->group_label), &label))
        return OP_OUT_EFAIL;
    uint64_t key = (uint64_t)d << 32 | nm;
    xr_entry *e;
    if (op_u64map_get(&c->index, key, &x)) {
        e = &c->e[x - 1];
    } else {
        if (op_grow(&c->e, &c->cap, c->n + 1, sizeof *c->e) || op_u64map_put(&c->index, key, c->n + 1))
            return OP_OUT_EFAIL;
        e = &c->e[c->n++];
        *e = (xr_entry){.domain = d, .name = nm, .calls_min = v->calls, .min = v->total, .max = -1};
    }
    e->ranks++;
    e->total += v->total;
    e->sumsq += v->total * v->total;
    e->calls += v->calls;
    if (v->calls < e->calls_min) e->calls_min = v->calls;
    if (v->calls > e->calls_max) e->calls_max = v->calls;
    if (v->total < e->min) e->min = v->total;
    if (v->total > e->max || (v->total == e->max && v->group_order < e->slowest_order)) {
        e->max = v->total;
        e->slowest_order = v->group_order;
        e->slowest = label;
    }
    return 0;
}

/* Domains by name, then the largest maximum first, then names. */
static int by_domain_max(const void *a, const void *b, void *arg) {
    const xr_ctx *c = arg;
    const xr_entry *x = &c->e[*(const size_t *)a], *y = &c->e[*(const size_t *)b];
    if (x->domain != y->domain) {
        int r = strcmp(op_strtab_str(&c->names, x->domain), op_strtab_str(&c->names, y->domain));
        if (r) return r;
    }
    if (x->max != y->max) return x->max > y->max ? -1 : 1;
    return strcmp(op_strtab_str(&c->names, x->name), op_strtab_str(&c->names, y->name));
}

/* One row's reductions over all n ranks (absent ranks count as 0). */
typedef struct xr_line {
    double mean, min, max, sd, imbalance, calls_mean;
    uint64_t calls_min, calls_max;
    const char *slowest;
    int64_t slowest_rank; /* -1: a process without a rank */
    int64_t slowest_pid;
} xr_line;

static void reduce(const xr_ctx *c, const xr_entry *e, xr_line *l) {
    double n = (double)c->n_groups;
    int all = e->ranks >= c->n_groups;
    l->mean = e->total / n;
    l->min = all ? e->min : 0;
    l->max = e->max;
    double var = n > 1 ? (e->sumsq - n * l->mean * l->mean) / (n - 1) : 0;
    l->sd = var > 0 ? sqrt(var) : 0;
    l->imbalance = l->mean > 0 ? l->max / l->mean : 0;
    l->calls_mean = (double)e->calls / n;
    l->calls_min = all ? e->calls_min : 0;
    l->calls_max = e->calls_max;
    l->slowest = op_strtab_str(&c->names, e->slowest);
    l->slowest_rank = e->slowest_order < RANKLESS ? e->slowest_order : -1;
    l->slowest_pid = e->slowest_order < RANKLESS ? -1 : e->slowest_order - RANKLESS;
}

/* "3", or "pid 1234" for a process without a rank. */
static void rank_text(char *buf, size_t n, const xr_line *l) {
    if (l->slowest_rank >= 0) snprintf(buf, n, "%lld", (long long)l->slowest_rank);
    else snprintf(buf, n, "pid %lld", (long long)l->slowest_pid);
}

static void write_header(op_buf *b, const char *title, int format, const char *un) {
    if (format == OP_OUT_SUMMARY_CONSOLE || format == OP_OUT_SUMMARY_MD) {
        op_buf_printf(b, "\n%s", format == OP_OUT_SUMMARY_MD ? "### " : "");
        op_buf_term_str(b, (const unsigned char *)title, strlen(title), NULL);
        op_buf_puts(b, ":\n\n");
        op_buf_printf(b, "| NAME | DOMAIN | RANKS | CALLS MIN | CALLS MEAN | CALLS MAX | MIN (%s) | MEAN (%s) | "
                         "MAX (%s) | STDDEV (%s) | MAX/MEAN | SLOWEST RANK |\n", un, un, un, un);
        op_buf_puts(b, "|:-----|:-------|------:|------:|------:|------:|------:|------:|------:|------:|------:|------:|\n");
    } else if (format == OP_OUT_SUMMARY_JSON) {
        op_buf_puts(b, "\"");
        op_buf_json_str(b, (const unsigned char *)title, strlen(title));
        op_buf_printf(b, "\",\"units\":\"%s\",\"rows\":[", un);
    }
}

static void write_line(op_buf *b, const xr_ctx *c, const xr_entry *e, const xr_line *l, int format, op_out_units u,
                       const char *title, int first) {
    const char *dom = op_strtab_str(&c->names, e->domain);
    const unsigned char *nm = (const unsigned char *)op_strtab_str(&c->names, e->name);
    size_t nl = op_strtab_len(&c->names, e->name);
    double div = op_out_unit_div(u);
    char t[7][64], rk[48];
    rank_text(rk, sizeof rk, l);
    if (format == OP_OUT_SUMMARY_CONSOLE || format == OP_OUT_SUMMARY_MD) {
        op_out_fmt_num(t[0], 64, l->min / div, u);
        snprintf(t[1], 64, "%.6g", l->mean / div);
        op_out_fmt_num(t[2], 64, l->max / div, u);
        snprintf(t[3], 64, "%.6g", l->sd / div);
        op_buf_puts(b, "| ");
        op_out_md_cell(b, nm, nl);
        op_buf_printf(b, " | %s | %u | %llu | %.6g | %llu | %s | %s | %s | %s | %.3f | %s |\n", dom, e->ranks,
                      (unsigned long long)l->calls_min, l->calls_mean, (unsigned long long)l->calls_max, t[0], t[1],
                      t[2], t[3], l->imbalance, rk);
    } else if (format == OP_OUT_SUMMARY_CSV) {
        /* the summary's columns (Calls, Duration: sums over ranks; Average: the mean per rank;
         * Min, Max, StdDev: over the ranks' totals), then the cross-rank columns */
        op_buf_csv_str(b, (const unsigned char *)title, strlen(title), 1);
        op_buf_putc(b, ',');
        op_buf_csv_str(b, nm, nl, 1);
        op_buf_printf(b, ",\"%s\",%llu,%s,%s,,%s,%s,%s,%u,%llu,%s,%llu,%s,\"%s\"\n", dom, (unsigned long long)e->calls,
                      op_fmt_double(t[0], 64, e->total / div), op_fmt_double(t[1], 64, l->mean / div),
                      op_fmt_double(t[2], 64, l->min / div), op_fmt_double(t[3], 64, l->max / div),
                      op_fmt_double(t[4], 64, l->sd / div), e->ranks, (unsigned long long)l->calls_min,
                      op_fmt_double(t[5], 64, l->calls_mean), (unsigned long long)l->calls_max,
                      op_fmt_double(t[6], 64, l->imbalance), rk);
    } else {
        op_buf_printf(b, "%s{\"name\":\"", first ? "" : ",");
        op_buf_json_str(b, nm, nl);
        op_buf_printf(b, "\",\"domain\":\"%s\",\"ranks\":%u,\"calls\":%llu,\"calls_min\":%llu,\"calls_mean\":%s,"
                         "\"calls_max\":%llu,\"duration\":%s,\"min\":%s,\"mean\":%s,\"max\":%s,\"stddev\":%s,"
                         "\"imbalance\":%s,\"slowest_rank\":",
                      dom, e->ranks, (unsigned long long)e->calls, (unsigned long long)l->calls_min,
                      op_fmt_double(t[5], 64, l->calls_mean), (unsigned long long)l->calls_max,
                      op_fmt_double(t[0], 64, e->total / div), op_fmt_double(t[1], 64, l->min / div),
                      op_fmt_double(t[2], 64, l->mean / div), op_fmt_double(t[3], 64, l->max / div),
                      op_fmt_double(t[4], 64, l->sd / div), op_fmt_double(t[6], 64, l->imbalance));
        if (l->slowest_rank >= 0) op_buf_printf(b, "%lld", (long long)l->slowest_rank);
        else op_buf_puts(b, "null");
        op_buf_puts(b, ",\"slowest\":\"");
        op_buf_json_str(b, (const unsigned char *)l->slowest, strlen(l->slowest));
        op_buf_puts(b, "\"}");
    }
}

static void xr_free(xr_ctx *c) {
    op_strtab_free(&c->names);
    op_u64map_free(&c->index);
    op_u64map_free(&c->groups);
    free(c->e);
}

typedef struct xr_count {
    op_u64map seen;
    size_t ranked;
} xr_count;

static int count_ranked(const op_stats_view *v, void *arg) {
    xr_count *c = arg;
    uint64_t x;
    if (v->group_order >= RANKLESS || op_u64map_get(&c->seen, v->group, &x)) return 0;
    c->ranked++;
    return op_u64map_put(&c->seen, v->group, 1) ? OP_OUT_EFAIL : 0;
}

int op_xrank_applies(const op_stats *st) {
    xr_count c = {0};
    int rc = op_stats_each(st, count_ranked, &c);
    op_u64map_free(&c.seen);
    return !rc && c.ranked >= 2;
}

int op_xrank_write(const op_stats *st, int format, op_out_units units, FILE *out, int *first_json) {
    xr_ctx c = {0};
    int rc = op_stats_each(st, collect, &c) ? OP_OUT_EFAIL : 0;
    size_t *ix = rc ? NULL : malloc((c.n + 1) * sizeof *ix);
    if (!rc && !ix) rc = OP_OUT_EFAIL;
    if (rc || c.n_ranked < 2) {
        free(ix);
        xr_free(&c);
        return rc;
    }
    for (size_t i = 0; i < c.n; i++) ix[i] = i;
    qsort_r(ix, c.n, sizeof *ix, by_domain_max, &c);
    const char *un = op_out_unit_name(units);
    op_buf b = {0};
    for (size_t k = 0; k < c.n && !rc;) {
        uint32_t d = c.e[ix[k]].domain;
        char title[300];
        snprintf(title, sizeof title, "OMNIPROF CROSS-RANK %s SUMMARY — %zu RANKS", op_strtab_str(&c.names, d),
                 c.n_groups);
        if (format == OP_OUT_SUMMARY_JSON) {
            op_buf_printf(&b, "%s{\"summary\":", *first_json ? "" : ",\n");
            *first_json = 0;
        }
        write_header(&b, title, format, un);
        for (int first = 1; k < c.n && c.e[ix[k]].domain == d; k++, first = 0) {
            xr_line l;
            reduce(&c, &c.e[ix[k]], &l);
            write_line(&b, &c, &c.e[ix[k]], &l, format, units, title, first);
        }
        if (format == OP_OUT_SUMMARY_JSON) op_buf_printf(&b, "],\"ranks\":%zu}", c.n_groups);
        if (b.len > (1u << 16) && op_buf_write(&b, out)) rc = OP_OUT_EFAIL;
    }
    if (!rc && op_buf_write(&b, out)) rc = OP_OUT_EFAIL;
    op_buf_free(&b);
    free(ix);
    xr_free(&c);
    return rc;
}
