/* stats.c — per-domain statistics: the *_stats.csv files and the summary tables.
 *
 * Semantics (rocprofv3 generateStats.cpp / rocpd summary): for each domain and name, CALLS,
 * total DURATION, AVERAGE, PERCENT of the domain's total, MIN, MAX and STDDEV (sample standard
 * deviation, n-1; 0 for one call). Domains: KERNEL_DISPATCH (kernel names), MEMORY_COPY
 * (direction names), MEMORY_SET, MEMORY_ALLOCATION (operation), and one per region category
 * normalised as the CSV file names are (CUDA_RUNTIME_API, CUDA_DRIVER_API, MARKER_API, ...).
 *
 * Computation: SQLite aggregates each set with GROUP BY over ids (one pass per table, constant
 * memory: only the groups are kept), then the groups of all sets are merged here by (process
 * group, domain, name text); sums of squares are kept in double so nothing overflows. Memory
 * is proportional to the number of distinct (domain, name) pairs.
 *
 * The summary ends with the CPU sampling profiles (flat and call tree, profile_cpu.c) when the
 * inputs hold CPU call-stack samples, then the GPU sampling sections (PC sampling, SASS metrics,
 * unified memory, PM sampling: profile_gpu.c) and the causal profile: text for console/md, one
 * more list element for json. */
#include <errno.h>
#include <regex.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/regex_bound.h"
#include "output/profile_causal.h"
#include "output/profile_cpu.h"
#include "output/profile_gpu.h"
#include "output/sink.h"
#include "output/xrank.h"

typedef struct st_row {
    uint64_t group;     /* 0, or a process group (by_process) */
    int64_t order;      /* the group's rank (or 1e12 + pid): groups print in this order */
    char *domain;
    unsigned char *name;
    size_t name_len;
    uint64_t calls;
    double total, sumsq;
    int64_t min, max;
} st_row;

typedef struct st_group {
    uint64_t key;
    int64_t order;
    char label[256];
} st_group;

struct op_stats {
    st_row *rows;
    size_t n, cap;
    op_u64map index; /* hash -> row index + 1 (chained by linear scan on collision) */
    st_group *groups;
    size_t n_groups;
    op_u64map group_index; /* group key -> index + 1 into groups */
    op_progress *progress; /* a stage per input when set (op_stats_progress) */
};

op_stats *op_stats_new(void) { return calloc(1, sizeof(op_stats)); }

void op_stats_progress(op_stats *st, op_progress *p) { st->progress = p; }

void op_stats_free(op_stats *st) {
    if (!st) return;
    for (size_t i = 0; i < st->n; i++) {
        free(st->rows[i].domain);
        free(st->rows[i].name);
    }
    free(st->rows);
    free(st->groups);
    op_u64map_free(&st->index);
    op_u64map_free(&st->group_index);
    free(st);
}

static int st_add(op_stats *st, uint64_t group, const char *domain, const unsigned char *name, size_t name_len,
                  uint64_t calls, double total, double sumsq, int64_t mn, int64_t mx) {
    uint64_t h = op_hash_bytes_seeded(name, name_len, op_hash_bytes_seeded(domain, strlen(domain), group));
    for (uint64_t probe = h;; probe = op_hash64x3(probe, 7, 7)) {
        uint64_t v;
        if (!op_u64map_get(&st->index, probe, &v)) {
            if (op_grow(&st->rows, &st->cap, st->n + 1, sizeof *st->rows)) return -1;
            st_row *r = &st->rows[st->n];
            memset(r, 0, sizeof(*r));
            r->group = group;
            r->domain = strdup(domain);
            r->name = malloc(name_len + 1);
            if (!r->domain || !r->name) return -1;
            memcpy(r->name, name, name_len);
            r->name[name_len] = 0;
            r->name_len = name_len;
            r->min = mn;
            r->max = mx;
            if (op_u64map_put(&st->index, probe, st->n + 1)) return -1;
            st->n++;
            v = st->n;
        }
        st_row *r = &st->rows[v - 1];
        if (r->group != group || strcmp(r->domain, domain) || r->name_len != name_len || memcmp(r->name, name, name_len))
            continue; /* hash collision: next probe */
        if (r->calls == 0 || mn < r->min) r->min = mn;
        if (r->calls == 0 || mx > r->max) r->max = mx;
        r->calls += calls;
        r->total += total;
        r->sumsq += sumsq;
        return 0;
    }
}

op_stats *op_stats_fold(const op_stats *st) {
    op_stats *f = op_stats_new();
    for (size_t i = 0; f && i < st->n; i++) {
        const st_row *r = &st->rows[i];
        if (st_add(f, 0, r->domain, r->name, r->name_len, r->calls, r->total, r->sumsq, r->min, r->max)) {
            op_stats_free(f);
            return NULL;
        }
    }
    return f;
}

static void upper_domain(const char *category, char *out, size_t n) {
    char f[200];
    op_domain_file(category, f, sizeof f);
    size_t i = 0;
    for (; f[i] && i + 1 < n; i++) out[i] = (char)(f[i] >= 'a' && f[i] <= 'z' ? f[i] - 'a' + 'A' : f[i]);
    out[i] = 0;
}

typedef struct collect_ctx {
    op_stats *st;
    op_src *src;
    op_src_set *set;
    int by_process;
} collect_ctx;

/* The group of process row `prow` of the set: its key, made on first sight with the label
 * "RANK r (pid p, host)" when the process recorded an MPI rank, else "PROCESS p (host)". */
static int group_of(collect_ctx *c, int64_t prow, uint64_t *key) {
    op_stats *st = c->st;
    *key = op_hash64x3(op_hash_bytes(c->set->guid, strlen(c->set->guid)), (uint64_t)prow, 3);
    uint64_t x;
    if (op_u64map_get(&st->group_index, *key, &x)) return 0;
    st_group *g = realloc(st->groups, (st->n_groups + 1) * sizeof(*g));
    if (!g || op_u64map_put(&st->group_index, *key, st->n_groups + 1)) {
        if (g) st->groups = g;
        return -1;
    }
    st->groups = g;
    st_group *ng = &g[st->n_groups++];
    ng->key = *key;
    op_process_info pi;
    op_rd_process(c->src, c->set, prow, &pi);
    const char *h = pi.host;
    if (pi.rank >= 0) {
        ng->order = pi.rank;
        snprintf(ng->label, sizeof ng->label, "RANK %lld (pid %lld%s%s)", (long long)pi.rank, (long long)pi.os_pid,
                 h[0] ? ", " : "", h);
    } else {
        ng->order = 1000000000000LL + pi.os_pid;
        snprintf(ng->label, sizeof ng->label, "PROCESS %lld%s%s%s", (long long)pi.os_pid, h[0] ? " (" : "", h,
                 h[0] ? ")" : "");
    }
    return 0;
}

static int collect_row(const op_rd_stat_row *r, void *arg) {
    collect_ctx *c = arg;
    uint64_t group = 0;
    if (c->by_process && group_of(c, r->group, &group)) return OP_OUT_EFAIL;
    char domain[200];
    switch (r->table) {
    case T_KERNEL_DISPATCH: snprintf(domain, sizeof domain, "KERNEL_DISPATCH"); break;
    case T_MEMORY_ALLOCATE: snprintf(domain, sizeof domain, "MEMORY_ALLOCATION"); break;
    case T_MEMORY_COPY:
        snprintf(domain, sizeof domain, "%s",
                 r->name && r->name_len == 10 && !memcmp(r->name, "MEMORY_SET", 10) ? "MEMORY_SET" : "MEMORY_COPY");
        break;
    default: upper_domain(r->category ? (const char *)r->category : "UNKNOWN_API", domain, sizeof domain); break;
    }
    if (st_add(c->st, group, domain, r->name ? r->name : (const unsigned char *)"", r->name ? r->name_len : 0, r->calls,
               r->total, r->sumsq, r->min, r->max))
        return OP_OUT_EFAIL;
    return 0;
}

typedef struct collect_arg {
    op_stats *st;
    const op_win *w;
    int by_process;
    size_t n_inputs;
} collect_arg;

static int collect_set(op_src *src, op_src_set *set, size_t input, void *arg, char *err, size_t errlen) {
    collect_arg *a = arg;
    collect_ctx c = {a->st, src, set, a->by_process};
    if (a->st->progress) op_progress_stage(a->st->progress, "statistics, input %zu/%zu", input + 1, a->n_inputs);
    int rc = op_rd_stats(src, set, a->w, a->by_process, collect_row, &c, err, errlen);
    if (rc == OP_OUT_EFAIL) op_seterr(err, errlen, "out of memory");
    return rc;
}

int op_stats_collect(op_stats *st, const char *const *inputs, size_t n, const op_win *w, int by_process, char *err,
                     size_t errlen) {
    collect_arg a = {st, w, by_process, n};
    return op_out_each_set(inputs, n, collect_set, &a, err, errlen);
}

/* The group of key (NULL: none, group 0). */
static const st_group *group_by_key(const op_stats *st, uint64_t key) {
    uint64_t x;
    return op_u64map_get(&st->group_index, key, &x) ? &st->groups[x - 1] : NULL;
}

/* ---- reporting -------------------------------------------------------------------------------- */

static int cmp_rows(const void *a, const void *b, void *ctx) {
    const op_stats *st = ctx;
    const st_row *x = &st->rows[*(const size_t *)a], *y = &st->rows[*(const size_t *)b];
    if (x->order != y->order) return x->order < y->order ? -1 : 1;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    int c = strcmp(x->domain, y->domain);
    if (c) return c;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return strcmp((const char *)x->name, (const char *)y->name);
}

static size_t *sorted_index(op_stats *st) {
    size_t *ix = malloc((st->n + 1) * sizeof(size_t));
    if (!ix) return NULL;
    for (size_t i = 0; i < st->n; i++) {
        ix[i] = i;
        const st_group *g = group_by_key(st, st->rows[i].group);
        st->rows[i].order = g ? g->order : 0;
    }
    qsort_r(ix, st->n, sizeof(size_t), cmp_rows, (void *)st);
    return ix;
}

double op_stats_stddev(uint64_t calls, double total, double sumsq) {
    if (calls < 2) return 0;
    double n = (double)calls, mean = total / n;
    double var = (sumsq - n * mean * mean) / (n - 1);
    return var > 0 ? sqrt(var) : 0;
}

static double stddev(const st_row *r) { return op_stats_stddev(r->calls, r->total, r->sumsq); }

int op_stats_each(const op_stats *st, int (*fn)(const op_stats_view *, void *), void *arg) {
    for (size_t i = 0; i < st->n; i++) {
        const st_row *r = &st->rows[i];
        op_stats_view v = {.group = r->group, .group_label = "", .group_order = 0, .domain = r->domain,
                           .name = r->name, .name_len = r->name_len, .calls = r->calls, .total = r->total,
                           .sumsq = r->sumsq, .min = r->min, .max = r->max};
        const st_group *g = group_by_key(st, r->group);
        if (g) {
            v.group_label = g->label;
            v.group_order = g->order;
        }
        int rc = fn(&v, arg);
        if (rc) return rc;
    }
    return 0;
}

static double domain_total(const op_stats *st, const st_row *r) {
    double t = 0;
    for (size_t i = 0; i < st->n; i++)
        if (st->rows[i].group == r->group && !strcmp(st->rows[i].domain, r->domain)) t += st->rows[i].total;
    return t;
}

int op_output_stats_csv(const char *const *inputs, size_t n_inputs, const char *out_dir, const char *out_name,
                        const op_out_window *window, char *err, size_t errlen) {
    op_out_inputs in;
    op_win w;
    int rc = op_out_inputs_begin(&in, inputs, n_inputs, err, errlen);
    if (!rc) rc = op_win_resolve(window, in.v, in.n, &w, err, errlen);
    if (!rc) rc = op_out_stats_csv(&in, &w, out_dir, out_name, err, errlen);
    op_out_inputs_end(&in);
    return rc;
}

int op_out_stats_csv(const op_out_inputs *in, const op_win *w, const char *out_dir, const char *out_name, char *err,
                     size_t errlen) {
    op_stats *st = op_stats_new();
    if (!st) return OP_OUT_EFAIL;
    int rc = op_stats_collect(st, in->v, in->n, w, 0, err, errlen);
    if (rc) {
        op_stats_free(st);
        return rc;
    }
    if (op_mkdirs(out_dir && *out_dir ? out_dir : ".") != 0) {
        op_seterr(err, errlen, "%s: cannot create the output directory", out_dir);
        op_stats_free(st);
        return OP_OUT_EFAIL;
    }
    size_t *ix = sorted_index(st);
    op_outfile of = {0};
    const char *cur = NULL;
    double dtot = 0;
    op_buf b = {0};
    /* domain totals for domain_stats.csv */
    typedef struct { const char *d; uint64_t calls; double total, sumsq; int64_t mn, mx; } dom_t;
    dom_t *doms = calloc(st->n + 1, sizeof(dom_t));
    size_t nd = 0;
    for (size_t k = 0; ix && doms && k < st->n && !rc; k++) {
        st_row *r = &st->rows[ix[k]];
        if (!cur || strcmp(cur, r->domain)) {
            if (of.f && op_buf_write(&b, of.f)) rc = OP_OUT_EFAIL;
            if (op_outfile_close(&of, !rc, err, errlen)) rc = OP_OUT_EFAIL;
            if (rc) break;
            cur = r->domain;
            dtot = domain_total(st, r);
            char fn[300], low[200];
            if (!strcmp(cur, "KERNEL_DISPATCH")) snprintf(low, sizeof low, "kernel");
            else {
                size_t i = 0;
                for (; cur[i] && i + 1 < sizeof low; i++) low[i] = (char)(cur[i] >= 'A' && cur[i] <= 'Z' ? cur[i] + 32 : cur[i]);
                low[i] = 0;
            }
            snprintf(fn, sizeof fn, "%s_stats.csv", low);
            if ((rc = op_outfile_open_derived(&of, out_dir, out_name, fn, &in->ids, err, errlen)) != 0) break;
            op_buf_puts(&b, "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\",\"MinNs\",\"MaxNs\",\"StdDev\"\n");
            doms[nd].d = cur;
            doms[nd].mn = r->min;
            doms[nd].mx = r->max;
            nd++;
        }
        dom_t *d = &doms[nd - 1];
        d->calls += r->calls;
        d->total += r->total;
        d->sumsq += r->sumsq;
        if (r->min < d->mn) d->mn = r->min;
        if (r->max > d->mx) d->mx = r->max;
        op_buf_csv_str(&b, r->name, r->name_len, 1);
        char d1[40], d2[40], d3[40];
        op_buf_printf(&b, ",%llu,%.0f,%s,%s,%lld,%lld,%s\n", (unsigned long long)r->calls, r->total,
                      op_fmt_double(d1, sizeof d1, r->total / (double)r->calls),
                      op_fmt_double(d2, sizeof d2, dtot > 0 ? 100.0 * r->total / dtot : 0.0), (long long)r->min,
                      (long long)r->max, op_fmt_double(d3, sizeof d3, stddev(r)));
        if (of.f && b.len > (1u << 16) && op_buf_write(&b, of.f)) rc = OP_OUT_EFAIL;
    }
    if (of.f && op_buf_write(&b, of.f)) rc = OP_OUT_EFAIL;
    if (op_outfile_close(&of, !rc, err, errlen)) rc = rc ? rc : OP_OUT_EFAIL;
    if (!rc) rc = op_outfile_open_derived(&of, out_dir, out_name, "domain_stats.csv", &in->ids, err, errlen);
    if (!rc) {
        FILE *df = of.f;
        double all = 0;
        for (size_t i = 0; i < nd; i++) all += doms[i].total;
        fputs("\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\",\"MinNs\",\"MaxNs\",\"StdDev\"\n", df);
        for (size_t i = 0; i < nd; i++) {
            st_row tmp = {.calls = doms[i].calls, .total = doms[i].total, .sumsq = doms[i].sumsq};
            char d1[40], d2[40], d3[40];
            fprintf(df, "\"%s\",%llu,%.0f,%s,%s,%lld,%lld,%s\n", doms[i].d, (unsigned long long)doms[i].calls,
                    doms[i].total, op_fmt_double(d1, sizeof d1, doms[i].total / (double)doms[i].calls),
                    op_fmt_double(d2, sizeof d2, all > 0 ? 100.0 * doms[i].total / all : 0.0), (long long)doms[i].mn,
                    (long long)doms[i].mx, op_fmt_double(d3, sizeof d3, stddev(&tmp)));
        }
        if (op_outfile_close(&of, 1, err, errlen)) rc = OP_OUT_EFAIL;
    }
    op_buf_free(&b);
    free(doms);
    free(ix);
    op_stats_free(st);
    return rc;
}

/* ---- summary ---------------------------------------------------------------------------------- */

const char *op_out_unit_name(op_out_units u) {
    static const char *const n[] = {"nsec", "usec", "msec", "sec"};
    return n[u >= 0 && u <= 3 ? u : 0];
}
double op_out_unit_div(op_out_units u) {
    static const double d[] = {1, 1e3, 1e6, 1e9};
    return d[u >= 0 && u <= 3 ? u : 0];
}

typedef struct sum_line {
    const unsigned char *name;
    size_t name_len;
    const char *domain;
    uint64_t calls;
    double total, avg, pct, min, max, sd;
} sum_line;

void op_out_md_cell(op_buf *b, const unsigned char *s, size_t n) {
    /* console and Markdown tables: '|' escaped, control characters shown as text (internal.h) */
    op_buf_term_str(b, s, n, "|");
}

void op_out_fmt_num(char *buf, size_t n, double v, op_out_units u) {
    if (u == OP_OUT_NSEC && v == floor(v) && fabs(v) < 9e15) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%.6g", v);
}

static int write_table(FILE *out, int format, op_out_units units, const char *title, const sum_line *ls, size_t nl,
                       int *first_json, int xcols) {
    op_buf b = {0};
    const char *un = op_out_unit_name(units);
    double div = op_out_unit_div(units);
    if (format == OP_OUT_SUMMARY_CONSOLE || format == OP_OUT_SUMMARY_MD) {
        op_buf_printf(&b, "\n%s", format == OP_OUT_SUMMARY_MD ? "### " : "");
        op_buf_term_str(&b, (const unsigned char *)title, strlen(title), NULL); /* host names in group labels */
        op_buf_puts(&b, ":\n\n");
        op_buf_printf(&b, "| NAME | DOMAIN | CALLS | DURATION (%s) | AVERAGE (%s) | PERCENT (INC) | MIN (%s) | MAX (%s) | STDDEV (%s) |\n",
                      un, un, un, un, un);
        op_buf_puts(&b, "|:-----|:-------|------:|------:|------:|------:|------:|------:|------:|\n");
        for (size_t i = 0; i < nl; i++) {
            const sum_line *l = &ls[i];
            char t[5][64];
            op_out_fmt_num(t[0], 64, l->total / div, units);
            snprintf(t[1], 64, "%.6g", l->avg / div);
            op_out_fmt_num(t[2], 64, l->min / div, units);
            op_out_fmt_num(t[3], 64, l->max / div, units);
            snprintf(t[4], 64, "%.6g", l->sd / div);
            op_buf_puts(&b, "| ");
            op_out_md_cell(&b, l->name, l->name_len);
            op_buf_printf(&b, " | %s | %llu | %s | %s | %.2f | %s | %s | %s |\n", l->domain, (unsigned long long)l->calls,
                          t[0], t[1], l->pct, t[2], t[3], t[4]);
        }
    } else if (format == OP_OUT_SUMMARY_CSV) {
        if (*first_json) /* one header for all tables */
            op_buf_printf(&b, "\"Summary\",\"Name\",\"Domain\",\"Calls\",\"Duration (%s)\",\"Average (%s)\",\"Percent (INC)\",\"Min (%s)\",\"Max (%s)\",\"StdDev (%s)\"%s%s\n",
                      un, un, un, un, un, xcols ? "," : "", xcols ? OP_XRANK_CSV_COLUMNS : "");
        *first_json = 0;
        for (size_t i = 0; i < nl; i++) {
            const sum_line *l = &ls[i];
            op_buf_csv_str(&b, (const unsigned char *)title, strlen(title), 1);
            op_buf_putc(&b, ',');
            op_buf_csv_str(&b, l->name, l->name_len, 1);
            char d[6][40];
            op_buf_printf(&b, ",\"%s\",%llu,%s,%s,%s,%s,%s,%s%s\n", l->domain, (unsigned long long)l->calls,
                          op_fmt_double(d[0], 40, l->total / div), op_fmt_double(d[1], 40, l->avg / div),
                          op_fmt_double(d[2], 40, l->pct), op_fmt_double(d[3], 40, l->min / div),
                          op_fmt_double(d[4], 40, l->max / div), op_fmt_double(d[5], 40, l->sd / div),
                          xcols ? OP_XRANK_CSV_EMPTY : "");
        }
    } else {
        op_buf_printf(&b, "%s{\"summary\":\"", *first_json ? "" : ",\n");
        *first_json = 0;
        op_buf_json_str(&b, (const unsigned char *)title, strlen(title));
        op_buf_printf(&b, "\",\"units\":\"%s\",\"rows\":[", un);
        for (size_t i = 0; i < nl; i++) {
            const sum_line *l = &ls[i];
            op_buf_printf(&b, "%s{\"name\":\"", i ? "," : "");
            op_buf_json_str(&b, l->name, l->name_len);
            char d[6][40];
            op_buf_printf(&b, "\",\"domain\":\"%s\",\"calls\":%llu,\"duration\":%s,\"average\":%s,\"percent\":%s,"
                              "\"min\":%s,\"max\":%s,\"stddev\":%s}",
                          l->domain, (unsigned long long)l->calls, op_fmt_double(d[0], 40, l->total / div),
                          op_fmt_double(d[1], 40, l->avg / div), op_fmt_double(d[2], 40, l->pct),
                          op_fmt_double(d[3], 40, l->min / div), op_fmt_double(d[4], 40, l->max / div),
                          op_fmt_double(d[5], 40, l->sd / div));
        }
        op_buf_puts(&b, "]}");
    }
    int rc = op_buf_write(&b, out);
    op_buf_free(&b);
    return rc;
}

/* The CPU sampling profiles after the summary tables (op_output_summary): which ones from
 * opts->cpu_profile (read only when opts->size covers it), text for console/md, one more list
 * element for json, nothing for csv; with by_rank one profile per process (table set). Sets
 * *printed when something was written. */
typedef struct prof_ctx {
    const char *const *inputs;
    size_t n_inputs;
    const op_out_summary_options *opts;
    op_cpu_profile_options po;
    const int64_t *window;
    FILE *out;
    int *first_json, *printed;
    char *err;
    size_t errlen;
} prof_ctx;

static int write_one_profile(size_t input, const char *sfx, const char *label, void *arg) {
    prof_ctx *c = arg;
    const char *const *in = sfx ? &c->inputs[input] : c->inputs;
    size_t n = sfx ? 1 : c->n_inputs;
    if (c->opts->format == OP_OUT_SUMMARY_JSON) {
        fprintf(c->out, "%s{\"summary\":\"OMNIPROF CPU PROFILE%s%s\",\"cpu_profile\":", *c->first_json ? "" : ",\n",
                label ? " — " : "", label ? label : "");
        *c->first_json = 0;
    } else {
        fprintf(c->out, "\n%sOMNIPROF CPU PROFILE%s%s:\n\n%s", c->opts->format == OP_OUT_SUMMARY_MD ? "### " : "",
                label ? " — " : "", label ? label : "", c->opts->format == OP_OUT_SUMMARY_MD ? "```\n" : "");
    }
    int rc = cp_profile_write_set(in, n, sfx, c->out, &c->po, c->window, c->err, c->errlen);
    if (rc) return rc;
    /* the samples' perf_event counters per function, when they carry any (profile_cpu_counters.c)
     */
    op_buf cb = {0};
    int counters = 0;
    bool json = c->opts->format == OP_OUT_SUMMARY_JSON, md = c->opts->format == OP_OUT_SUMMARY_MD;
    rc = cp_counters_buf(in, n, sfx, &cb, json, 0, c->window, &counters, c->err, c->errlen);
    if (md) fputs("```\n", c->out);
    if (!rc && counters) {
        if (json)
            fputs(",\"cpu_counters\":", c->out);
        else
            fprintf(c->out, "\n%sOMNIPROF CPU COUNTERS%s%s:\n\n%s", md ? "### " : "",
                    label ? " — " : "", label ? label : "", md ? "```\n" : "");
        if (op_buf_write(&cb, c->out)) rc = OP_OUT_EFAIL;
        if (md) fputs("```\n", c->out);
    }
    if (json) fputs("}", c->out);
    op_buf_free(&cb);
    if (rc) return rc;
    *c->printed = 1;
    return 0;
}

static int write_cpu_profile(const char *const *inputs, size_t n_inputs, const op_out_summary_options *opts,
                             const op_win *w, FILE *out, int *first_json, int *printed, char *err, size_t errlen) {
    int which = OP_OUT_CPU_PROFILE_AUTO;
    if (opts->size >= offsetof(op_out_summary_options, cpu_profile) + sizeof(opts->cpu_profile))
        which = opts->cpu_profile;
    if (which == OP_OUT_CPU_PROFILE_NONE || opts->format == OP_OUT_SUMMARY_CSV) return 0;
    if (!op_cpu_profile_has_samples(inputs, n_inputs)) return 0;
    int64_t win[2] = {w->t0, w->t1};
    prof_ctx c = {inputs, n_inputs, opts, {0}, w->active ? win : NULL, out, first_json, printed, err, errlen};
    c.po.size = sizeof c.po;
    c.po.format = opts->format == OP_OUT_SUMMARY_JSON ? OP_CPU_PROFILE_JSON : OP_CPU_PROFILE_TEXT;
    c.po.flat = which != OP_OUT_CPU_PROFILE_TREE;
    c.po.tree = which != OP_OUT_CPU_PROFILE_FLAT;
    if (opts->by_rank) return cp_for_each_sample_set(inputs, n_inputs, write_one_profile, &c, err, errlen);
    return write_one_profile(0, NULL, NULL, &c);
}

/* --summary-groups: for each regex, one table over the rows ix[k0..k1) (one process group)
 * whose domain matches, by total duration, percentages of the table's total. */
static int write_domain_groups(const op_stats *st, const size_t *ix, size_t k0, size_t k1, const regex_t *re,
                               const char *const *names, size_t n_re, const op_out_summary_options *opts,
                               const char *glabel, sum_line *ls, FILE *out, int *first_json, int xcols) {
    for (size_t g = 0; g < n_re; g++) {
        size_t nl = 0;
        double all = 0;
        for (size_t k = k0; k < k1; k++) {
            const st_row *r = &st->rows[ix[k]];
            if (regexec(&re[g], r->domain, 0, NULL, 0) != 0) continue;
            ls[nl++] = (sum_line){r->name, r->name_len, r->domain, r->calls, r->total, r->total / (double)r->calls, 0,
                                  (double)r->min, (double)r->max, stddev(r)};
            all += r->total;
        }
        for (size_t i = 0; i < nl; i++) ls[i].pct = all > 0 ? 100.0 * ls[i].total / all : 0;
        for (size_t i = 1; i < nl; i++) /* by total, largest first (insertion: tables are small) */
            for (size_t j = i; j > 0 && ls[j].total > ls[j - 1].total; j--) {
                sum_line t = ls[j];
                ls[j] = ls[j - 1];
                ls[j - 1] = t;
            }
        char title[600];
        snprintf(title, sizeof title, "OMNIPROF SUMMARY GROUP %s%s%s", names[g], glabel[0] ? " — " : "", glabel);
        if (write_table(out, opts->format, opts->units, title, ls, nl, first_json, xcols)) return OP_OUT_EFAIL;
    }
    return 0;
}

/* The regexes of opts->domain_groups, compiled (size-bounded); *n = how many. */
static int compile_domain_groups(const op_out_summary_options *opts, regex_t **re, size_t *n, char *err,
                                 size_t errlen) {
    *re = NULL;
    *n = 0;
    if (opts->size < offsetof(op_out_summary_options, n_domain_groups) + sizeof(opts->n_domain_groups) ||
        !opts->domain_groups || !opts->n_domain_groups)
        return 0;
    if (!(*re = calloc(opts->n_domain_groups, sizeof(regex_t)))) return OP_OUT_EFAIL;
    for (; *n < opts->n_domain_groups; (*n)++) {
        char why[256];
        if (op_regex_compile(&(*re)[*n], opts->domain_groups[*n], REG_NOSUB, why, sizeof why) != 0) {
            op_seterr(err, errlen, "summary group '%s': %s", opts->domain_groups[*n], why);
            return OP_OUT_EINPUT;
        }
    }
    return 0;
}

/* op_output_summary over checked inputs. */
static int summary_checked(const char *const *inputs, size_t n_inputs, const op_out_summary_options *opts, FILE *out,
                           char *err, size_t errlen) {
    op_out_summary_options dflt = {.size = sizeof dflt};
    if (!opts) opts = &dflt;
    op_win w;
    int rc = op_win_resolve(&opts->window, inputs, n_inputs, &w, err, errlen);
    if (rc) return rc;
    op_stats *st = op_stats_new();
    if (!st) return OP_OUT_EFAIL;
    op_progress prog;
    op_progress_init(&prog, opts->size >= offsetof(op_out_summary_options, progress) + sizeof(opts->progress) &&
                                opts->progress, "summary:", 0);
    op_stats_progress(st, &prog);
    /* by process always: the cross-rank tables (xrank.c) need the per-process rows; without
     * --summary-by-rank the tables show their sums over the processes */
    rc = op_stats_collect(st, inputs, n_inputs, &w, 1, err, errlen);
    op_progress_clear(&prog); /* the tables may go to the same terminal */
    op_stats *ranks = st;
    if (!rc && !opts->by_rank && !(st = op_stats_fold(ranks))) rc = OP_OUT_EFAIL;
    if (rc) {
        if (st != ranks) op_stats_free(ranks);
        op_stats_free(st);
        return rc;
    }
    int xr = op_xrank_applies(ranks);
    regex_t *re = NULL;
    size_t n_re = 0;
    rc = compile_domain_groups(opts, &re, &n_re, err, errlen);
    size_t *ix = sorted_index(st);
    sum_line *ls = calloc(st->n + 1, sizeof(sum_line));
    sum_line *dl = calloc(st->n + 1, sizeof(sum_line));
    st_row *dr = calloc(st->n + 1, sizeof(st_row));
    int first_json = 1;
    if (!ix || !ls || !dl || !dr) rc = OP_OUT_EFAIL;
    if (!rc && opts->format == OP_OUT_SUMMARY_JSON) fputs("[\n", out);
    size_t k = 0;
    while (!rc && k < st->n) {
        size_t k_group = k;
        uint64_t group = st->rows[ix[k]].group;
        const char *glabel = "";
        const st_group *gr = group_by_key(st, group);
        if (gr) glabel = gr->label;
        size_t nd = 0;
        while (!rc && k < st->n && st->rows[ix[k]].group == group) {
            const char *dom = st->rows[ix[k]].domain;
            double dtot = domain_total(st, &st->rows[ix[k]]);
            size_t nl = 0;
            st_row *d = &dr[nd];
            memset(d, 0, sizeof(*d));
            d->domain = (char *)dom;
            while (k < st->n && st->rows[ix[k]].group == group && !strcmp(st->rows[ix[k]].domain, dom)) {
                st_row *r = &st->rows[ix[k++]];
                ls[nl++] = (sum_line){r->name, r->name_len, r->domain, r->calls, r->total, r->total / (double)r->calls,
                                      dtot > 0 ? 100.0 * r->total / dtot : 0, (double)r->min, (double)r->max, stddev(r)};
                if (d->calls == 0 || r->min < d->min) d->min = r->min;
                if (d->calls == 0 || r->max > d->max) d->max = r->max;
                d->calls += r->calls;
                d->total += r->total;
                d->sumsq += r->sumsq;
            }
            nd++;
            char title[512];
            snprintf(title, sizeof title, "OMNIPROF %s SUMMARY%s%s", dom, glabel[0] ? " — " : "", glabel);
            if (write_table(out, opts->format, opts->units, title, ls, nl, &first_json, xr)) rc = OP_OUT_EFAIL;
        }
        if (!rc && opts->domain_summary) {
            double all = 0;
            for (size_t i = 0; i < nd; i++) all += dr[i].total;
            for (size_t i = 0; i < nd; i++)
                dl[i] = (sum_line){(const unsigned char *)dr[i].domain, strlen(dr[i].domain), dr[i].domain, dr[i].calls,
                                   dr[i].total, dr[i].total / (double)dr[i].calls, all > 0 ? 100.0 * dr[i].total / all : 0,
                                   (double)dr[i].min, (double)dr[i].max, stddev(&dr[i])};
            char title[512];
            snprintf(title, sizeof title, "OMNIPROF DOMAIN SUMMARY%s%s", glabel[0] ? " — " : "", glabel);
            if (write_table(out, opts->format, opts->units, title, dl, nd, &first_json, xr)) rc = OP_OUT_EFAIL;
        }
        if (!rc && n_re)
            rc = write_domain_groups(st, ix, k_group, k, re, opts->domain_groups, n_re, opts, glabel, ls, out,
                                     &first_json, xr);
    }
    if (!rc && xr) rc = op_xrank_write(ranks, opts->format, opts->units, out, &first_json);
    int profiled = 0;
    if (!rc) rc = write_cpu_profile(inputs, n_inputs, opts, &w, out, &first_json, &profiled, err, errlen);
    if (!rc) rc = op_gpu_summary_section(inputs, n_inputs, &w, opts->format, out, &first_json, &profiled, err, errlen);
    if (!rc) rc = op_causal_summary_section(inputs, n_inputs, opts->format, out, &first_json, &profiled, err, errlen);
    if (!rc && opts->format == OP_OUT_SUMMARY_JSON) fputs("\n]\n", out);
    if (!rc && st->n == 0 && !profiled && opts->format != OP_OUT_SUMMARY_JSON && opts->format != OP_OUT_SUMMARY_CSV)
        fputs("omniprof: no timed events, CPU samples or causal experiments in the inputs\n", out);
    if (!rc && fflush(out)) rc = OP_OUT_EFAIL;
    if (rc == OP_OUT_EFAIL && err && !err[0]) op_seterr(err, errlen, "writing the summary failed: %s", strerror(errno));
    free(ix);
    free(ls);
    free(dl);
    free(dr);
    for (size_t g = 0; g < n_re; g++) regfree(&re[g]);
    free(re);
    if (ranks != st) op_stats_free(ranks);
    op_stats_free(st);
    return rc;
}

int op_output_summary(const char *const *inputs, size_t n_inputs, const op_out_summary_options *opts, FILE *out,
                      char *err, size_t errlen) {
    op_out_inputs in;
    int rc = op_out_inputs_begin(&in, inputs, n_inputs, err, errlen);
    if (!rc) rc = summary_checked(in.v, in.n, opts, out, err, errlen);
    op_out_inputs_end(&in);
    return rc;
}

int op_output_summary_path(const char *const *inputs, size_t n_inputs, const op_out_summary_options *opts,
                           const char *path, char *err, size_t errlen) {
    if (!path || !strcmp(path, "-")) return op_output_summary(inputs, n_inputs, opts, stdout, err, errlen);
    if (!strcmp(path, "stderr")) return op_output_summary(inputs, n_inputs, opts, stderr, err, errlen);
    /* the inputs are checked before the output exists: a refused command writes nothing */
    op_out_inputs in;
    op_outfile of = {0};
    int rc = op_out_inputs_begin(&in, inputs, n_inputs, err, errlen);
    if (!rc) rc = op_outfile_open_path(&of, path, &in.ids, err, errlen);
    if (!rc) {
        if (err && errlen) err[0] = 0;
        rc = summary_checked(in.v, in.n, opts, of.f, err, errlen);
    }
    int crc = op_outfile_close(&of, rc == 0, err, errlen);
    op_out_inputs_end(&in);
    return rc ? rc : crc;
}
