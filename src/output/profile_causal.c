/* profile_causal.c — causal profiles (profile_causal.h): rows of the causal tables → groups by
 * (selected line, progress point, speedup) → curves, slopes and a ranking; and the Coz-format
 * profile written from the same rows.
 *
 * One row is one (experiment, progress point) pair, in experiment order within each table set
 * (an experiment without any point gives one row with no point). Aggregation keeps, per
 * series (line, point, point type), one entry per experiment: its speedup and what the point
 * did (visits, duration; for latency points arrivals, departures, difference), so that each
 * speedup's spread over single experiments can be reported beside the pooled value. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/strtab.h"
#include "output/internal.h"
#include "output/profile_causal.h"

#define MIN_VISITS 5 /* a group counts when its point was visited this often (Coz's filter) */

typedef op_rd_causal_row causal_row;

/* Every set of every input, in order; a callback per set start (may be NULL) and per row. */
typedef struct row_walk {
    int (*set_begin)(op_src *s, op_src_set *set, void *arg);
    int (*set_end)(op_src *s, op_src_set *set, void *arg);
    int (*row)(const causal_row *r, void *arg);
    void *arg;
} row_walk;

static int walk_inputs(const char *const *inputs, size_t n, const row_walk *w, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        op_src *s = NULL;
        int rc = op_src_open(inputs[i], &s, err, errlen);
        if (rc != OP_OUT_OK) return rc;
        for (size_t k = 0; k < s->n_sets && rc == OP_OUT_OK; k++) {
            if (w->set_begin && w->set_begin(s, &s->sets[k], w->arg) != 0) rc = OP_OUT_EFAIL;
            if (rc == OP_OUT_OK) rc = op_rd_causal(s, &s->sets[k], w->row, w->arg, err, errlen);
            if (rc == OP_OUT_OK && w->set_end && w->set_end(s, &s->sets[k], w->arg) != 0) rc = OP_OUT_EFAIL;
        }
        op_src_close(s);
        if (rc != OP_OUT_OK) return rc;
    }
    return OP_OUT_OK;
}

static int count_row(const causal_row *r, void *arg)
{
    (void)r;
    *(uint64_t *)arg += 1;
    return 1; /* one is enough */
}

OMNIPROF_API int op_causal_has_experiments(const char *const *inputs, size_t n_inputs)
{
    uint64_t n = 0;
    char err[256];
    row_walk w = {NULL, NULL, count_row, &n};
    for (size_t i = 0; i < n_inputs && !n; i++) walk_inputs(&inputs[i], 1, &w, err, sizeof err);
    return n > 0;
}

/* ---- aggregation -------------------------------------------------------------------------- */

typedef struct exp_point {
    uint8_t pct;                        /* line speedup in percent */
    int64_t visits, departures, duration;
    double difference;
} exp_point;

typedef struct series {
    uint32_t line, point;               /* ids in the profile's string table */
    int latency;
    exp_point *e;
    size_t n, cap;
} series;

typedef struct profile {
    op_strtab names;
    op_u64map index;                    /* (line id << 32 | point id) * 2 + latency -> series + 1 */
    series *s;
    size_t n, cap;
    uint64_t experiments, last_exp;
    int64_t last_process;
    int have_last;
    uint64_t no_point_experiments;
    int oom;
} profile;

static series *series_get(profile *p, const char *line, const char *point, int latency)
{
    uint32_t lid, pid;
    if (op_strtab_intern(&p->names, line, strlen(line), &lid) != 0 ||
        op_strtab_intern(&p->names, point, strlen(point), &pid) != 0)
        return NULL;
    uint64_t key = (((uint64_t)lid << 32) | pid) * 2 + (uint64_t)(latency != 0);
    uint64_t v;
    if (op_u64map_get(&p->index, key, &v)) return &p->s[v - 1];
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 32;
        series *ns = realloc(p->s, nc * sizeof *ns);
        if (!ns) return NULL;
        p->s = ns;
        p->cap = nc;
    }
    if (op_u64map_put(&p->index, key, p->n + 1) != 0) return NULL;
    series *s = &p->s[p->n++];
    memset(s, 0, sizeof *s);
    s->line = lid;
    s->point = pid;
    s->latency = latency;
    return s;
}

static int add_row(const causal_row *r, void *arg)
{
    profile *p = arg;
    if (!p->have_last || r->experiment != p->last_exp || r->process != p->last_process) {
        p->experiments++;
        p->last_exp = r->experiment;
        p->last_process = r->process;
        p->have_last = 1;
        if (!r->point) p->no_point_experiments++;
    }
    if (!r->point || r->duration <= 0) return 0;
    series *s = series_get(p, r->selected, r->point, r->latency);
    if (!s) {
        p->oom = 1;
        return -1;
    }
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        exp_point *ne = realloc(s->e, nc * sizeof *ne);
        if (!ne) {
            p->oom = 1;
            return -1;
        }
        s->e = ne;
        s->cap = nc;
    }
    double pct = r->speedup * 100.0;
    s->e[s->n++] = (exp_point){(uint8_t)(pct < 0 ? 0 : pct > 100 ? 100 : lround(pct)),
                               r->latency ? r->arrivals : r->delta, r->departures, r->duration,
                               (double)r->difference};
    return 0;
}

static void profile_free(profile *p)
{
    for (size_t i = 0; i < p->n; i++) free(p->s[i].e);
    free(p->s);
    op_u64map_free(&p->index);
    op_strtab_free(&p->names);
    memset(p, 0, sizeof *p);
}

/* One speedup of one series: pooled like Coz's viewer. */
typedef struct group {
    int pct;
    int64_t visits, departures, duration;
    double difference; /* duration-weighted mean (latency) */
    uint32_t experiments;
    double value;      /* period (throughput) or latency; NAN when not measurable */
    double program;    /* program speedup vs the 0 % group */
    double spread;     /* standard deviation of single experiments' program speedups */
} group;

static double value_of(int latency, int64_t visits, int64_t duration, double difference)
{
    if (visits < MIN_VISITS || duration <= 0) return NAN;
    if (!latency) return (double)duration / (double)visits;
    double rate = (double)visits / (double)duration;
    return difference / rate;
}

/* Groups of series s, sorted by speedup; returns how many (<= 101). */
static int groups_of(const series *s, group *g)
{
    group all[101];
    memset(all, 0, sizeof all);
    for (size_t i = 0; i < s->n; i++) {
        const exp_point *e = &s->e[i];
        group *x = &all[e->pct];
        if (x->duration + e->duration > 0)
            x->difference = (x->difference * (double)x->duration + e->difference * (double)e->duration) /
                            (double)(x->duration + e->duration);
        x->visits += e->visits;
        x->departures += e->departures;
        x->duration += e->duration;
        x->experiments++;
    }
    double base = value_of(s->latency, all[0].visits, all[0].duration, all[0].difference);
    int n = 0;
    for (int pct = 0; pct <= 100; pct++) {
        group *x = &all[pct];
        if (!x->experiments) continue;
        x->pct = pct;
        x->value = value_of(s->latency, x->visits, x->duration, x->difference);
        x->program = isnan(base) || isnan(x->value) || base <= 0 ? NAN : (base - x->value) / base;
        double sum = 0, sum2 = 0;
        uint32_t k = 0;
        for (size_t i = 0; i < s->n && !isnan(base) && base > 0; i++) {
            const exp_point *e = &s->e[i];
            if (e->pct != pct || e->visits <= 0) continue;
            double v = s->latency ? e->difference / ((double)e->visits / (double)e->duration)
                                  : (double)e->duration / (double)e->visits;
            double y = (base - v) / base;
            sum += y;
            sum2 += y * y;
            k++;
        }
        x->spread = k > 1 ? sqrt(fmax(0.0, (sum2 - sum * sum / k) / (k - 1))) : 0.0;
        g[n++] = *x;
    }
    return n;
}

typedef struct ranked {
    size_t series;
    double slope, max_speedup;
    int points;
    uint32_t experiments;
} ranked;

static int cmp_ranked(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->slope != y->slope) return x->slope < y->slope ? 1 : -1;
    return x->max_speedup < y->max_speedup ? 1 : x->max_speedup > y->max_speedup ? -1 : 0;
}

/* Slope through the origin of the measured groups (line speedup > 0). */
static ranked rank_series(const profile *p, size_t i, group *g, int *ng)
{
    ranked r = {i, 0, 0, 0, 0};
    *ng = groups_of(&p->s[i], g);
    double sxy = 0, sxx = 0;
    r.max_speedup = -INFINITY;
    for (int k = 0; k < *ng; k++) {
        r.experiments += g[k].experiments;
        if (isnan(g[k].program) || g[k].pct == 0) continue;
        double x = g[k].pct / 100.0;
        sxy += x * g[k].program;
        sxx += x * x;
        if (g[k].program > r.max_speedup) r.max_speedup = g[k].program;
        r.points++;
    }
    r.slope = sxx > 0 ? sxy / sxx : 0;
    if (!r.points) r.max_speedup = 0;
    return r;
}

/* ---- writers ------------------------------------------------------------------------------ */

static void text_empty(FILE *out, const profile *p)
{
    if (p->experiments == 0)
        fprintf(out, "no causal experiment in these databases (write them with `omniprof causal -- PROGRAM`)\n");
    else
        fprintf(out,
                "%llu experiments, none with a progress point visited %d times: add COZ_PROGRESS or omniprof_progress() "
                "where the program completes work (or use end-to-end mode, omniprof causal -e), and run longer\n",
                (unsigned long long)p->experiments, MIN_VISITS);
}

static void write_text(FILE *out, const profile *p, ranked *rk, size_t nr, size_t max_lines)
{
    fprintf(out, "%llu experiments; lines ranked by the slope of program speedup against line speedup\n\n",
            (unsigned long long)p->experiments);
    fprintf(out, "%4s %7s %9s %6s  %-20s %s\n", "RANK", "SLOPE", "MAX", "EXPTS", "PROGRESS POINT", "LINE");
    group g[101];
    for (size_t i = 0; i < nr && i < max_lines; i++) {
        const series *s = &p->s[rk[i].series];
        char point[200];
        op_buf t[2] = {{0}, {0}}; /* names as a terminal may show them (internal.h) */
        snprintf(point, sizeof point, "%s%s", op_term_text(&t[0], op_strtab_str(&p->names, s->point)),
                 s->latency ? " (latency)" : "");
        fprintf(out, "%4zu %7.3f %+8.1f%% %6u  %-20s %s\n", i + 1, rk[i].slope, 100.0 * rk[i].max_speedup,
                rk[i].experiments, point, op_term_text(&t[1], op_strtab_str(&p->names, s->line)));
        op_buf_free(&t[0]);
        op_buf_free(&t[1]);
        int ng = groups_of(s, g);
        fprintf(out, "%18s %12s %8s %6s %8s\n", "line speedup", "program", "spread", "expts", "visits");
        for (int k = 0; k < ng; k++) {
            char prog[32] = "-", spread[32] = "-";
            if (!isnan(g[k].program)) snprintf(prog, sizeof prog, "%+.1f%%", 100.0 * g[k].program);
            if (!isnan(g[k].program) && g[k].experiments > 1) snprintf(spread, sizeof spread, "%.1f%%", 100.0 * g[k].spread);
            fprintf(out, "%17d%% %12s %8s %6u %8lld\n", g[k].pct, prog, spread, g[k].experiments, (long long)g[k].visits);
        }
        fputc('\n', out);
    }
    if (nr > max_lines) fprintf(out, "(%zu more lines)\n", nr - max_lines);
}

static void json_number(FILE *out, double v)
{
    char buf[40];
    if (isnan(v) || isinf(v)) fputs("null", out);
    else fputs(op_fmt_double(buf, sizeof buf, v), out);
}

static void write_json(FILE *out, const profile *p, ranked *rk, size_t nr, size_t max_lines)
{
    fprintf(out, "{\"experiments\": %llu, \"lines\": [", (unsigned long long)p->experiments);
    group g[101];
    for (size_t i = 0; i < nr && i < max_lines; i++) {
        const series *s = &p->s[rk[i].series];
        fprintf(out, "%s\n  {\"line\": ", i ? "," : "");
        op_json_fputs(out, op_strtab_str(&p->names, s->line));
        fputs(", \"progress_point\": ", out);
        op_json_fputs(out, op_strtab_str(&p->names, s->point));
        fprintf(out, ", \"type\": \"%s\", \"slope\": ", s->latency ? "latency" : "throughput");
        json_number(out, rk[i].slope);
        fputs(", \"max_speedup\": ", out);
        json_number(out, rk[i].max_speedup);
        fprintf(out, ", \"experiments\": %u, \"points\": [", rk[i].experiments);
        int ng = groups_of(s, g);
        for (int k = 0; k < ng; k++) {
            fprintf(out, "%s{\"line_speedup\": %.2f, \"program_speedup\": ", k ? ", " : "", g[k].pct / 100.0);
            json_number(out, g[k].program);
            fputs(", \"spread\": ", out);
            json_number(out, isnan(g[k].program) || g[k].experiments < 2 ? NAN : g[k].spread);
            fprintf(out, ", \"experiments\": %u, \"visits\": %lld}", g[k].experiments, (long long)g[k].visits);
        }
        fputs("]}", out);
    }
    fputs("\n]}\n", out);
}

OMNIPROF_API int op_causal_summary_write(const char *const *inputs, size_t n_inputs, FILE *out,
                                         const op_causal_summary_options *opts, char *err, size_t errlen)
{
    op_causal_summary_options dflt = {.size = sizeof dflt};
    if (!opts) opts = &dflt;
    size_t max_lines = opts->max_lines ? opts->max_lines : 20;
    int min_points = opts->min_points > 0 ? opts->min_points : 1;
    profile p;
    memset(&p, 0, sizeof p);
    row_walk w = {NULL, NULL, add_row, &p};
    int rc = walk_inputs(inputs, n_inputs, &w, err, errlen);
    if (rc == OP_OUT_OK && p.oom) {
        op_seterr(err, errlen, "out of memory while reading the causal experiments");
        rc = OP_OUT_EFAIL;
    }
    if (rc != OP_OUT_OK) {
        profile_free(&p);
        return rc;
    }
    ranked *rk = calloc(p.n ? p.n : 1, sizeof *rk);
    size_t nr = 0;
    group g[101];
    for (size_t i = 0; rk && i < p.n; i++) {
        int ng;
        ranked r = rank_series(&p, i, g, &ng);
        if (r.points >= min_points) rk[nr++] = r;
    }
    if (rk) qsort(rk, nr, sizeof *rk, cmp_ranked);
    if (opts->json) {
        write_json(out, &p, rk, nr, max_lines);
    } else if (nr == 0) {
        text_empty(out, &p);
    } else {
        write_text(out, &p, rk, nr, max_lines);
    }
    free(rk);
    profile_free(&p);
    if (ferror(out)) {
        op_seterr(err, errlen, "writing the causal profile failed");
        return OP_OUT_EFAIL;
    }
    return OP_OUT_OK;
}

int op_causal_summary_section(const char *const *inputs, size_t n_inputs, int format, FILE *out, int *first_json,
                              int *printed, char *err, size_t errlen)
{
    if (format == OP_OUT_SUMMARY_CSV || !op_causal_has_experiments(inputs, n_inputs)) return OP_OUT_OK;
    op_causal_summary_options o = {.size = sizeof o, .json = format == OP_OUT_SUMMARY_JSON};
    if (o.json) {
        fprintf(out, "%s{\"summary\":\"OMNIPROF CAUSAL PROFILE\",\"causal_profile\":", *first_json ? "" : ",\n");
        *first_json = 0;
    } else {
        fprintf(out, "\n%sOMNIPROF CAUSAL PROFILE:\n\n%s", format == OP_OUT_SUMMARY_MD ? "### " : "",
                format == OP_OUT_SUMMARY_MD ? "```\n" : "");
    }
    int rc = op_causal_summary_write(inputs, n_inputs, out, &o, err, errlen);
    if (o.json) fputs("}", out);
    else if (format == OP_OUT_SUMMARY_MD) fputs("```\n", out);
    *printed = 1;
    return rc;
}

/* ---- the Coz profile ---------------------------------------------------------------------- */

typedef struct coz_writer {
    op_buf b;
    int fd;
    uint64_t experiments, last_exp;
    int64_t last_process, first_start, last_end;
    int have_last;
    int failed;
} coz_writer;

/* Coz's legacy lines are tab-separated key=value pairs: a tab or newline in a name would
 * split it, so those become spaces. */
static void coz_name(op_buf *b, const char *s)
{
    for (; *s; s++) op_buf_putc(b, *s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s);
}

static int coz_flush(coz_writer *w)
{
    const unsigned char *p = w->b.p;
    size_t left = w->b.len;
    while (left) {
        ssize_t n = write(w->fd, p, left); /* O_APPEND: one block lands whole */
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            w->failed = 1;
            break;
        }
        p += n;
        left -= (size_t)n;
    }
    w->b.len = 0;
    return w->failed ? -1 : 0;
}

static int coz_set_begin(op_src *s, op_src_set *set, void *arg)
{
    (void)s;
    (void)set;
    coz_writer *w = arg;
    w->have_last = 0;
    w->first_start = w->last_end = 0;
    return 0;
}

static int coz_row(const causal_row *r, void *arg)
{
    coz_writer *w = arg;
    if (!w->have_last || r->experiment != w->last_exp || r->process != w->last_process) {
        if (!w->first_start) {
            w->first_start = r->start;
            op_buf_printf(&w->b, "startup\ttime=%lld\n", (long long)r->start);
        }
        w->last_end = r->end;
        op_buf_puts(&w->b, "experiment\tselected=");
        coz_name(&w->b, r->selected);
        op_buf_printf(&w->b, "\tspeedup=%.2f\tduration=%lld\tselected-samples=%lld\n", r->speedup,
                      (long long)r->duration, (long long)r->selected_samples);
        w->experiments++;
        w->last_exp = r->experiment;
        w->last_process = r->process;
        w->have_last = 1;
    }
    if (r->point && r->latency) {
        op_buf_puts(&w->b, "latency-point\tname=");
        coz_name(&w->b, r->point);
        op_buf_printf(&w->b, "\tarrivals=%lld\tdepartures=%lld\tdifference=%lld\n", (long long)r->arrivals,
                      (long long)r->departures, (long long)r->difference);
    } else if (r->point) {
        op_buf_puts(&w->b, "throughput-point\tname=");
        coz_name(&w->b, r->point);
        op_buf_printf(&w->b, "\tdelta=%lld\n", (long long)r->delta);
    }
    return w->b.oom ? -1 : 0;
}

static int coz_set_end(op_src *s, op_src_set *set, void *arg)
{
    (void)s;
    (void)set;
    coz_writer *w = arg;
    if (w->first_start) op_buf_printf(&w->b, "runtime\ttime=%lld\n", (long long)(w->last_end - w->first_start));
    if (w->b.oom) return -1;
    return w->b.len ? coz_flush(w) : 0;
}

OMNIPROF_API int op_causal_coz_append(const char *const *inputs, size_t n_inputs, const char *path,
                                      uint64_t *experiments, char *err, size_t errlen)
{
    if (experiments) *experiments = 0;
    if (!path || !*path) {
        op_seterr(err, errlen, "no profile path given");
        return OP_OUT_EINPUT;
    }
    coz_writer w;
    memset(&w, 0, sizeof w);
    w.fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (w.fd < 0) {
        op_seterr(err, errlen, "cannot open %s for appending: %s", path, strerror(errno));
        return OP_OUT_EFAIL;
    }
    row_walk rw = {coz_set_begin, coz_set_end, coz_row, &w};
    int rc = walk_inputs(inputs, n_inputs, &rw, err, errlen);
    if (rc == OP_OUT_OK && (w.failed || w.b.oom)) {
        op_seterr(err, errlen, "writing %s failed: %s", path, w.b.oom ? "out of memory" : strerror(errno));
        rc = OP_OUT_EFAIL;
    }
    if (close(w.fd) != 0 && rc == OP_OUT_OK) {
        op_seterr(err, errlen, "closing %s failed: %s", path, strerror(errno));
        rc = OP_OUT_EFAIL;
    }
    op_buf_free(&w.b);
    if (experiments) *experiments = w.experiments;
    return rc;
}
