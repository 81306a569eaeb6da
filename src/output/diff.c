/* diff.c — `omniprof diff BASE NEW`: per item (kernel, copy, API call, range, MPI call, CPU
 * function, iteration) the change of time between two databases, and whether the change stands
 * out of the run-to-run noise. docs/diff.md is the user's description; the method in short:
 *
 *   timed items   every instance's duration is kept (a uniform reservoir of at most RES_CAP
 *                 per item and input; counts and sums stay exact). The per-instance change is
 *                 the change of the mean; its noise is the 99 % interval of that change from
 *                 the larger of two standard errors: the instances' (Welch) and that of 10-20
 *                 batch means of neighbouring instances (a run's load drifts: neighbours are
 *                 not independent, and the instances' error alone was 1.2-2.6 times too
 *                 small on a loaded machine), with Student's t; "no change" needs both the
 *                 Mann-Whitney U test on the two samples of durations (normal approximation,
 *                 tie correction), which a few preempted instances on a loaded machine do not
 *                 sway the way they sway a mean, and Welch's t over that error.
 *   functions     self samples (the leaf frame of each CPU call-stack sample): counts are
 *                 Poisson. Both inputs are taken to be sampled alike (clock and frequency), so
 *                 the change is that of the counts and "no change" is a z test of the two
 *                 counts (under CPU-time sampling a count does not depend on the load). The
 *                 time shown is count x the input's period (its sampled wall time over its
 *                 samples, per thread).
 *   significant   p below alpha / (items tested) (Bonferroni: with a hundred items and alpha
 *                 0.01, one false alarm in a hundred diffs of identical runs), and the change at
 *                 least min_change_pct, and larger than its noise. An item seen in one input
 *                 only is "added" or "removed", never significant.
 *
 * Ranking: significant items first, by |time delta| x |change %| (an item that changed itself
 * comes before the range that encloses it, whose delta is the same but diluted by work that did
 * not change), then the others by |time delta|.
 *
 * Memory: per item two reservoirs of doubles (RES_CAP each): bounded by the number of distinct
 * names, not by the number of events. */
#include "output/diff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/escape.h"
#include "common/strtab.h"
#include "common/u64map.h"
#include "db/reader.h"
#include "output/output.h"
#include "output/sink.h"

#define RES_CAP 20000
#define BM_MAX 20 /* batch means: 10 to 20 batches of equal size per item and input */
#define MIN_INSTANCES 3 /* fewer instances on a side: no test (p = 1) */
#define MIN_SAMPLES 10  /* fewer samples on both sides together: no test */
#define Z99 2.5758293035489

const char *const op_diff_kind_name[OP_DIFF_KINDS] = {"kernel", "copy",     "api",      "range",
                                                      "mpi",    "function", "iteration"};
const char *const op_diff_status_name[5] = {"same", "slower", "faster", "added", "removed"};

/* One item's instances in one input. */
typedef struct acc {
    uint64_t n;
    double sum, sumsq;
    double *res; /* reservoir: min(n, RES_CAP) durations */
    size_t n_res;
    /* batch means, in row (time) order: full batches of bsize instances, the one filling */
    double batch[BM_MAX];
    uint32_t n_batch;
    uint64_t bsize, in_cur;
    double cur;
} acc;

typedef struct thread_span {
    int64_t first, last;
    uint64_t n;
} thread_span;

typedef struct side {
    acc *acc; /* by item id */
    size_t cap;
    int64_t t0, t1;    /* span */
    op_u64map threads; /* tid -> index into spans */
    thread_span *spans;
    size_t n_spans, cap_spans;
    uint64_t rng;
} side;

typedef struct diff_ctx {
    op_strtab keys; /* kind byte + name -> item id */
    side s[2];
    const char *iteration;
    size_t iter_len;
} diff_ctx;

static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static int item_id(diff_ctx *c, int kind, const unsigned char *name, int len, uint32_t *id)
{
    char key[1024];
    if (len < 0) len = 0;
    if ((size_t)len > sizeof key - 2) len = (int)sizeof key - 2;
    key[0] = (char)('a' + kind);
    if (len) memcpy(key + 1, name, (size_t)len);
    if (op_strtab_intern(&c->keys, key, (size_t)len + 1, id)) return -1;
    for (int k = 0; k < 2; k++) {
        side *s = &c->s[k];
        if (*id < s->cap) continue;
        size_t nc = s->cap ? s->cap * 2 : 64;
        while (nc <= *id)
            nc *= 2;
        acc *a = realloc(s->acc, nc * sizeof *a);
        if (!a) return -1;
        memset(a + s->cap, 0, (nc - s->cap) * sizeof *a);
        s->acc = a;
        s->cap = nc;
    }
    return 0;
}

static int add_value(side *s, uint32_t id, double v)
{
    acc *a = &s->acc[id];
    a->n++;
    a->sum += v;
    a->sumsq += v * v;
    if (!a->bsize) a->bsize = 1;
    a->cur += v;
    if (++a->in_cur == a->bsize) {
        a->batch[a->n_batch++] = a->cur / (double)a->bsize;
        a->cur = 0;
        a->in_cur = 0;
        if (a->n_batch == BM_MAX) { /* pairs merge: half as many batches, twice as long */
            for (uint32_t i = 0; i < BM_MAX / 2; i++)
                a->batch[i] = (a->batch[2 * i] + a->batch[2 * i + 1]) / 2.0;
            a->n_batch = BM_MAX / 2;
            a->bsize *= 2;
        }
    }
    if (v < 0) return 0;
    if (a->n_res < RES_CAP) {
        if (!a->res) {
            a->res = malloc(RES_CAP * sizeof *a->res);
            if (!a->res) return -1;
        }
        a->res[a->n_res++] = v;
    } else {
        uint64_t j = rng_next(&s->rng) % a->n;
        if (j < RES_CAP) a->res[j] = v;
    }
    return 0;
}

static int add_sample_thread(side *s, int64_t tid, int64_t ts)
{
    uint64_t ix;
    if (!op_u64map_get(&s->threads, (uint64_t)tid, &ix)) {
        if (s->n_spans == s->cap_spans) {
            size_t nc = s->cap_spans ? s->cap_spans * 2 : 16;
            thread_span *p = realloc(s->spans, nc * sizeof *p);
            if (!p) return -1;
            s->spans = p;
            s->cap_spans = nc;
        }
        ix = s->n_spans++;
        s->spans[ix] = (thread_span){ts, ts, 0};
        if (op_u64map_put(&s->threads, (uint64_t)tid, ix)) return -1;
    }
    thread_span *t = &s->spans[ix];
    if (ts < t->first) t->first = ts;
    if (ts > t->last) t->last = ts;
    t->n++;
    return 0;
}

static int region_kind(const diff_ctx *c, const op_ev *ev)
{
    const char *cat = (const char *)ev->category;
    int clen = ev->category_len;
    if (cat && op_category_is_marker(ev->category, clen)) {
        if (c->iteration && ev->name && (size_t)ev->name_len == c->iter_len &&
            !memcmp(ev->name, c->iteration, c->iter_len))
            return OP_DIFF_ITERATION;
        return OP_DIFF_RANGE;
    }
    if (cat && clen >= 3 && !strncmp(cat, "MPI", 3)) return OP_DIFF_MPI;
    return OP_DIFF_API;
}

/* Reads every set of one input into side k. */
static int read_input(diff_ctx *c, int k, const char *path, char *err, size_t errlen)
{
    side *s = &c->s[k];
    s->t0 = INT64_MAX;
    s->t1 = INT64_MIN;
    s->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(k + 1);
    op_src *src = NULL;
    int st = op_src_open(path, &src, err, errlen);
    if (st) return st;
    static const int kinds[] = {EV_REGION, EV_KERNEL, EV_COPY, EV_SAMPLE};
    op_u64map stack_item = {0}; /* stack id + 1 -> item id + 1, per set */
    op_buf stk = {0};
    int rc = 0;
    for (size_t i = 0; i < src->n_sets && !rc; i++) {
        op_src_set *set = &src->sets[i];
        op_rd_lookup *lk = op_rd_lookup_new(src, set);
        if (!lk) {
            rc = OP_OUT_EFAIL;
            snprintf(err, errlen, "%s: out of memory", path);
            break;
        }
        op_u64map_free(&stack_item);
        for (size_t q = 0; q < sizeof kinds / sizeof kinds[0] && !rc; q++) {
            op_rd rd;
            int o = op_rd_open(&rd, src, set, kinds[q], NULL, OP_RD_TEXT, err, errlen);
            if (o < 0) {
                rc = -o;
                break;
            }
            op_ev ev;
            int r;
            while ((r = op_rd_next(&rd, &ev, err, errlen)) == 1) {
                uint32_t id;
                if (ev.kind == EV_SAMPLE) {
                    if (!ev.cpu_sample) continue;
                    uint64_t v;
                    if (!op_u64map_get(&stack_item, (uint64_t)ev.cpu_stack + 1, &v)) {
                        char leaf[512];
                        op_rd_lookup_stack(lk, ev.cpu_stack, &stk, leaf, sizeof leaf);
                        if (item_id(c, OP_DIFF_FUNCTION, (const unsigned char *)leaf,
                                    (int)strlen(leaf), &id) ||
                            op_u64map_put(&stack_item, (uint64_t)ev.cpu_stack + 1,
                                          (uint64_t)id + 1)) {
                            r = -OP_OUT_EFAIL;
                            break;
                        }
                        v = (uint64_t)id + 1;
                    }
                    id = (uint32_t)(v - 1);
                    s->acc[id].n++;
                    if (add_sample_thread(s, ev.tid ? ev.tid : ev.thread_row, ev.start)) {
                        r = -OP_OUT_EFAIL;
                        break;
                    }
                    continue;
                }
                int kind = ev.kind == EV_KERNEL ? OP_DIFF_KERNEL
                           : ev.kind == EV_COPY ? OP_DIFF_COPY
                                                : region_kind(c, &ev);
                if (item_id(c, kind, ev.name, ev.name_len, &id) ||
                    add_value(s, id, (double)(ev.end - ev.start))) {
                    r = -OP_OUT_EFAIL;
                    break;
                }
                if (ev.start < s->t0) s->t0 = ev.start;
                if (ev.end > s->t1) s->t1 = ev.end;
            }
            op_rd_close(&rd);
            if (r == -OP_OUT_EFAIL) {
                snprintf(err, errlen, "%s: out of memory", path);
                rc = OP_OUT_EFAIL;
            } else if (r < 0) {
                rc = -r;
            }
        }
        op_rd_lookup_free(lk);
    }
    op_u64map_free(&stack_item);
    op_buf_free(&stk);
    op_src_close(src);
    return rc;
}

static double period_of(const side *s)
{
    double span = 0, n = 0;
    for (size_t i = 0; i < s->n_spans; i++) {
        if (s->spans[i].n < 2) continue;
        span += (double)(s->spans[i].last - s->spans[i].first);
        n += (double)(s->spans[i].n - 1);
    }
    return n > 0 ? span / n : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct tagged {
    double v;
    int from_b;
} tagged;

static int cmp_tagged(const void *a, const void *b)
{
    double x = ((const tagged *)a)->v, y = ((const tagged *)b)->v;
    return (x > y) - (x < y);
}

/* Two-sided p-value of the Mann-Whitney U test (normal approximation, tie correction). -1 when
 * out of memory. */
static double mann_whitney(const double *a, size_t na, const double *b, size_t nb)
{
    size_t n = na + nb;
    tagged *t = malloc(n * sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < na; i++)
        t[i] = (tagged){a[i], 0};
    for (size_t i = 0; i < nb; i++)
        t[na + i] = (tagged){b[i], 1};
    qsort(t, n, sizeof *t, cmp_tagged);
    double ra = 0, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && t[j].v == t[i].v)
            j++;
        double rank = ((double)i + 1 + (double)j) / 2.0; /* ranks i+1 .. j */
        double tn = (double)(j - i);
        ties += tn * tn * tn - tn;
        for (size_t m = i; m < j; m++)
            if (!t[m].from_b) ra += rank;
        i = j;
    }
    free(t);
    double n1 = (double)na, n2 = (double)nb, N = (double)n;
    double u = ra - n1 * (n1 + 1) / 2.0;
    double mu = n1 * n2 / 2.0;
    double var = n1 * n2 / 12.0 * ((N + 1) - ties / (N * (N - 1)));
    if (var <= 0) return 1.0;
    double d = fabs(u - mu) - 0.5;
    if (d < 0) d = 0;
    return erfc(d / sqrt(var) / sqrt(2.0));
}

/* The regularized incomplete beta function I_x(a, b) (continued fraction, modified Lentz). */
static double betacf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    if (fabs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= 300; m++) {
        double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1.0 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        h *= d * c;
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 + aa * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1.0 + aa / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < 1e-12) break;
    }
    return h;
}

static double ibeta(double a, double b, double x)
{
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    double bt = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log(1.0 - x));
    if (x < (a + 1.0) / (a + b + 2.0)) return bt * betacf(a, b, x) / a;
    return 1.0 - bt * betacf(b, a, 1.0 - x) / b;
}

/* Two-sided p-value of Student's t with df degrees of freedom. */
static double t_p(double t, double df)
{
    if (!isfinite(t)) return 0;
    return ibeta(df / 2.0, 0.5, df / (df + t * t));
}

/* The t with two-sided p-value 0.01 (the 99 % interval's half-width in standard errors). */
static double t99(double df)
{
    double lo = 0, hi = 1000;
    for (int i = 0; i < 80; i++) {
        double mid = (lo + hi) / 2;
        if (t_p(mid, df) > 0.01)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/* The mean and variance of an input's batch means; 0 when there are fewer than two batches. */
static int batch_stats(const acc *a, double *var, double *n)
{
    if (a->n_batch < 2) return 0;
    double m = 0, v = 0;
    for (uint32_t i = 0; i < a->n_batch; i++)
        m += a->batch[i];
    m /= a->n_batch;
    for (uint32_t i = 0; i < a->n_batch; i++)
        v += (a->batch[i] - m) * (a->batch[i] - m);
    *var = v / (a->n_batch - 1);
    *n = a->n_batch;
    return 1;
}

static void fill_side(op_diff_side *o, acc *a, int kind, double period)
{
    o->count = a->n;
    if (kind == OP_DIFF_FUNCTION) {
        o->total_ns = (double)a->n * period;
        return;
    }
    o->total_ns = a->sum;
    if (!a->n) return;
    o->mean_ns = a->sum / (double)a->n;
    double var = a->n > 1 ? (a->sumsq - a->sum * o->mean_ns) / (double)(a->n - 1) : 0;
    o->sd_ns = var > 0 ? sqrt(var) : 0;
    if (a->n_res) {
        qsort(a->res, a->n_res, sizeof *a->res, cmp_double);
        size_t m = a->n_res / 2;
        o->median_ns = a->n_res % 2 ? a->res[m] : (a->res[m - 1] + a->res[m]) / 2.0;
    }
}

static int cmp_items(const void *pa, const void *pb)
{
    const op_diff_item *a = pa, *b = pb;
    if (a->significant != b->significant) return b->significant - a->significant;
    double x = fabs(a->delta_ns), y = fabs(b->delta_ns);
    if (a->significant) { /* the delta weighted by the change itself (docs/diff.md, "Ranking") */
        x *= fmin(fabs(a->change_pct), 100.0);
        y *= fmin(fabs(b->change_pct), 100.0);
    }
    if (x != y) return (y > x) - (y < x);
    if (a->kind != b->kind) return a->kind - b->kind;
    return strcmp(a->name, b->name);
}

static void free_ctx(diff_ctx *c)
{
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < c->s[k].cap; i++)
            free(c->s[k].acc[i].res);
        free(c->s[k].acc);
        free(c->s[k].spans);
        op_u64map_free(&c->s[k].threads);
    }
    op_strtab_free(&c->keys);
}

int op_output_diff(const op_diff_options *o, op_diff_result **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!o || o->size < sizeof *o || !o->base || !o->new_) {
        snprintf(err, errlen, "diff needs two databases: BASE and NEW");
        return OP_OUT_EINPUT;
    }
    const char *paths[2] = {o->base, o->new_};
    struct stat sb[2];
    for (int k = 0; k < 2; k++) {
        if (stat(paths[k], &sb[k])) {
            snprintf(err, errlen, "%s: %s (the %s database)", paths[k], strerror(errno),
                     k ? "NEW" : "BASE");
            return OP_OUT_EINPUT;
        }
        if (!S_ISREG(sb[k].st_mode)) {
            snprintf(err, errlen, "%s: not a regular file (the %s database)", paths[k],
                     k ? "NEW" : "BASE");
            return OP_OUT_EINPUT;
        }
    }
    if (sb[0].st_dev == sb[1].st_dev && sb[0].st_ino == sb[1].st_ino) {
        snprintf(err, errlen,
                 "BASE and NEW are the same file (%s, %s): give two different databases", paths[0],
                 paths[1]);
        return OP_OUT_EINPUT;
    }
    if (o->iteration && !*o->iteration) {
        snprintf(err, errlen, "--iteration needs the name of a range");
        return OP_OUT_EINPUT;
    }
    double min_change = o->min_change_pct >= 0 ? o->min_change_pct : 5.0;
    double alpha = o->alpha > 0 && o->alpha < 1 ? o->alpha : 0.01;

    diff_ctx c = {0};
    c.iteration = o->iteration;
    c.iter_len = o->iteration ? strlen(o->iteration) : 0;
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++)
        rc = read_input(&c, k, paths[k], err, errlen);
    op_diff_result *r = rc ? NULL : calloc(1, sizeof *r);
    size_t n = op_strtab_count(&c.keys);
    if (!rc && (!r || (n && !(r->items = calloc(n, sizeof *r->items))))) {
        snprintf(err, errlen, "out of memory");
        rc = OP_OUT_EFAIL;
    }
    if (rc) {
        free(r);
        free_ctx(&c);
        return rc;
    }
    r->base_period_ns = period_of(&c.s[0]);
    r->new_period_ns = period_of(&c.s[1]);
    for (int k = 0; k < 2; k++) {
        int64_t span = c.s[k].t1 > c.s[k].t0 ? c.s[k].t1 - c.s[k].t0 : 0;
        if (k)
            r->new_span_ns = span;
        else
            r->base_span_ns = span;
    }
    /* First pass: sides, deltas, p-values; count the tests. */
    for (uint32_t id = 0; id < n; id++) {
        const char *key = op_strtab_str(&c.keys, id);
        op_diff_item *it = &r->items[r->n_items++];
        it->kind = key[0] - 'a';
        it->name = strdup(key + 1);
        if (!it->name) {
            snprintf(err, errlen, "out of memory");
            op_diff_result_free(r);
            free_ctx(&c);
            return OP_OUT_EFAIL;
        }
        acc *a = &c.s[0].acc[id], *b = &c.s[1].acc[id];
        fill_side(&it->base, a, it->kind, r->base_period_ns);
        fill_side(&it->new_, b, it->kind, r->new_period_ns);
        if (it->kind == OP_DIFF_ITERATION) {
            r->iterations[0] += a->n;
            r->iterations[1] += b->n;
        }
        it->delta_ns = it->new_.total_ns - it->base.total_ns;
        it->p = 1.0;
        if (!a->n || !b->n) {
            it->status = a->n ? OP_DIFF_REMOVED : OP_DIFF_ADDED;
            continue;
        }
        if (it->kind == OP_DIFF_FUNCTION) {
            if (a->n + b->n < MIN_SAMPLES) continue;
            double x1 = (double)a->n, x2 = (double)b->n, sd = sqrt(x1 + x2);
            it->change_pct = (x2 - x1) / x1 * 100.0;
            it->noise_pct = Z99 * sd / x1 * 100.0;
            it->p = erfc(fabs(x2 - x1) / sd / sqrt(2.0));
        } else {
            if (a->n < MIN_INSTANCES || b->n < MIN_INSTANCES || it->base.mean_ns <= 0) continue;
            double dm = it->new_.mean_ns - it->base.mean_ns;
            it->change_pct = dm / it->base.mean_ns * 100.0;
            double se = sqrt(it->base.sd_ns * it->base.sd_ns / (double)a->n +
                             it->new_.sd_ns * it->new_.sd_ns / (double)b->n);
            double q = Z99, pt = 1.0, va, vb, na, nb;
            if (batch_stats(a, &va, &na) && batch_stats(b, &vb, &nb)) {
                /* instances are not independent: a run's load drifts, so neighbours share it.
                 * The standard error of a mean from its batch means (Welch's t over the
                 * batches) holds that; the larger of the two errors is the noise */
                double ea = va / na, eb = vb / nb, sb = sqrt(ea + eb);
                double df = ea + eb > 0 ? (ea + eb) * (ea + eb) /
                                              (ea * ea / (na - 1) + eb * eb / (nb - 1))
                                        : na + nb - 2;
                if (sb > se) se = sb;
                q = t99(df);
                pt = se > 0 ? t_p(fabs(dm) / se, df) : (dm != 0 ? 0 : 1);
            }
            it->noise_pct = q * se / it->base.mean_ns * 100.0;
            double p = mann_whitney(a->res, a->n_res, b->res, b->n_res);
            if (p < 0) {
                snprintf(err, errlen, "out of memory");
                op_diff_result_free(r);
                free_ctx(&c);
                return OP_OUT_EFAIL;
            }
            it->p = p > pt ? p : pt; /* both tests must say "changed" */
        }
        r->n_tests++;
    }
    double cut = r->n_tests ? alpha / (double)r->n_tests : alpha;
    for (size_t i = 0; i < r->n_items; i++) {
        op_diff_item *it = &r->items[i];
        if (it->status == OP_DIFF_ADDED || it->status == OP_DIFF_REMOVED) continue;
        double ch = fabs(it->change_pct);
        it->significant = it->p < cut && ch >= min_change && ch > it->noise_pct;
        it->status = !it->significant     ? OP_DIFF_SAME
                     : it->change_pct > 0 ? OP_DIFF_SLOWER
                                          : OP_DIFF_FASTER;
        if (it->significant) r->n_significant++;
        if (it->status == OP_DIFF_SLOWER) r->n_regressions++;
    }
    qsort(r->items, r->n_items, sizeof *r->items, cmp_items);
    free_ctx(&c);
    *out = r;
    return 0;
}

void op_diff_result_free(op_diff_result *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_items; i++)
        free(r->items[i].name);
    free(r->items);
    free(r);
}

/* ---- rendering --------------------------------------------------------------------------- */

static void fmt_ns(char *buf, size_t n, double ns, int sign)
{
    double a = fabs(ns);
    const char *s = sign ? (ns < 0 ? "-" : "+") : (ns < 0 ? "-" : "");
    if (a >= 1e9)
        snprintf(buf, n, "%s%.3g s", s, a / 1e9);
    else if (a >= 1e6)
        snprintf(buf, n, "%s%.3g ms", s, a / 1e6);
    else if (a >= 1e3)
        snprintf(buf, n, "%s%.3g us", s, a / 1e3);
    else
        snprintf(buf, n, "%s%.0f ns", s, a);
}

void op_diff_print_text(FILE *f, const op_diff_options *o, const op_diff_result *r, size_t top)
{
    char a[32], b[32];
    fmt_ns(a, sizeof a, (double)r->base_span_ns, 0);
    fmt_ns(b, sizeof b, (double)r->new_span_ns, 0);
    fprintf(f, "omniprof diff: BASE %s (%s) -> NEW %s (%s)\n", o->base, a, o->new_, b);
    size_t slower = r->n_regressions, faster = r->n_significant - r->n_regressions;
    fprintf(f,
            "%zu significant change%s (%zu slower, %zu faster) of %zu items tested "
            "(alpha %g, min change %g %%)\n",
            r->n_significant, r->n_significant == 1 ? "" : "s", slower, faster, r->n_tests,
            o->alpha > 0 && o->alpha < 1 ? o->alpha : 0.01,
            o->min_change_pct >= 0 ? o->min_change_pct : 5.0);
    if (o->iteration)
        fprintf(f, "iterations (range '%s'): %llu in BASE, %llu in NEW\n", o->iteration,
                (unsigned long long)r->iterations[0], (unsigned long long)r->iterations[1]);
    fprintf(f, "\n  %-9s %-9s %-10s %-10s %-10s %-13s %-9s %s\n", "change", "noise", "delta",
            "base", "new", "count", "kind", "name");
    size_t shown = 0;
    int sep = 0;
    for (size_t i = 0; i < r->n_items && (!top || shown < top); i++) {
        const op_diff_item *it = &r->items[i];
        if (!it->significant && !sep) {
            fprintf(f, "  -- %s --\n",
                    r->n_significant ? "not significant" : "no significant change");
            sep = 1;
        }
        char ch[24], nz[24], d[32], mb[32], mn[32], cnt[40];
        if (it->status == OP_DIFF_ADDED || it->status == OP_DIFF_REMOVED) {
            snprintf(ch, sizeof ch, "%s", op_diff_status_name[it->status]);
            snprintf(nz, sizeof nz, "-");
        } else if (it->p >= 1.0 && it->change_pct == 0 && it->noise_pct == 0) {
            snprintf(ch, sizeof ch, "untested");
            snprintf(nz, sizeof nz, "-");
        } else {
            snprintf(ch, sizeof ch, "%+.1f %%", it->change_pct);
            snprintf(nz, sizeof nz, "+-%.1f %%", it->noise_pct);
        }
        fmt_ns(d, sizeof d, it->delta_ns, 1);
        if (it->kind == OP_DIFF_FUNCTION) {
            fmt_ns(mb, sizeof mb, it->base.total_ns, 0);
            fmt_ns(mn, sizeof mn, it->new_.total_ns, 0);
        } else {
            fmt_ns(mb, sizeof mb, it->base.mean_ns, 0);
            fmt_ns(mn, sizeof mn, it->new_.mean_ns, 0);
        }
        snprintf(cnt, sizeof cnt, "%llu/%llu", (unsigned long long)it->base.count,
                 (unsigned long long)it->new_.count);
        fprintf(f, "%c %-9s %-9s %-10s %-10s %-10s %-13s %-9s %s\n", it->significant ? '*' : ' ',
                ch, nz, d, mb, mn, cnt, op_diff_kind_name[it->kind], it->name);
        shown++;
    }
    if (shown < r->n_items)
        fprintf(f, "  ... %zu more (--top 0 shows all, --json gives every item)\n",
                r->n_items - shown);
    fprintf(f, "\nbase/new: mean per instance (functions: sampled self time); count: instances "
               "(functions: samples); * significant\n");
}

static void json_num(FILE *f, double v)
{
    if (!isfinite(v))
        fputs("null", f);
    else if (v == floor(v) && fabs(v) < 9e15)
        fprintf(f, "%.0f", v);
    else
        fprintf(f, "%.6g", v);
}

static void json_side(FILE *f, const op_diff_side *s)
{
    fprintf(f, "{\"count\":%llu,\"total_ns\":", (unsigned long long)s->count);
    json_num(f, s->total_ns);
    fputs(",\"mean_ns\":", f);
    json_num(f, s->mean_ns);
    fputs(",\"median_ns\":", f);
    json_num(f, s->median_ns);
    fputs(",\"stddev_ns\":", f);
    json_num(f, s->sd_ns);
    fputc('}', f);
}

void op_diff_print_json(FILE *f, const op_diff_options *o, const op_diff_result *r)
{
    fputs("{\"schema\":\"omniprof.diff\",\"version\":1,\"base\":", f);
    op_json_fputs(f, o->base);
    fputs(",\"new\":", f);
    op_json_fputs(f, o->new_);
    fputs(",\"options\":{\"iteration\":", f);
    if (o->iteration)
        op_json_fputs(f, o->iteration);
    else
        fputs("null", f);
    fputs(",\"min_change_pct\":", f);
    json_num(f, o->min_change_pct >= 0 ? o->min_change_pct : 5.0);
    fputs(",\"alpha\":", f);
    json_num(f, o->alpha > 0 && o->alpha < 1 ? o->alpha : 0.01);
    fprintf(f, "},\"tests\":%zu,\"significant\":%zu,\"regressions\":%zu,", r->n_tests,
            r->n_significant, r->n_regressions);
    fprintf(f, "\"span_ns\":{\"base\":%lld,\"new\":%lld},", (long long)r->base_span_ns,
            (long long)r->new_span_ns);
    fputs("\"sample_period_ns\":{\"base\":", f);
    json_num(f, r->base_period_ns);
    fputs(",\"new\":", f);
    json_num(f, r->new_period_ns);
    fprintf(f, "},\"iterations\":{\"base\":%llu,\"new\":%llu},\"items\":[",
            (unsigned long long)r->iterations[0], (unsigned long long)r->iterations[1]);
    for (size_t i = 0; i < r->n_items; i++) {
        const op_diff_item *it = &r->items[i];
        fprintf(f, "%s\n{\"kind\":\"%s\",\"name\":", i ? "," : "", op_diff_kind_name[it->kind]);
        op_json_fputs(f, it->name);
        fprintf(f,
                ",\"status\":\"%s\",\"significant\":%s,\"base\":", op_diff_status_name[it->status],
                it->significant ? "true" : "false");
        json_side(f, &it->base);
        fputs(",\"new\":", f);
        json_side(f, &it->new_);
        fputs(",\"delta_ns\":", f);
        json_num(f, it->delta_ns);
        fputs(",\"change_pct\":", f);
        json_num(f, it->change_pct);
        fputs(",\"noise_pct\":", f);
        json_num(f, it->noise_pct);
        fputs(",\"p_value\":", f);
        json_num(f, it->p);
        fprintf(f, ",\"test\":\"%s\"}", it->kind == OP_DIFF_FUNCTION ? "poisson" : "mann-whitney");
    }
    fputs("\n]}\n", f);
}
