/* profile_cpu_counters.c — the perf_event counters of the CPU samples per function (profile_cpu.h:
 * cp_counters_buf, cp_counter_names; `omniprof summary`, the report's counters table).
 *
 * Each sample carries its thread's cumulative counts (omniprof_cpu_sample.event_values, named by
 * omniprof_cpu_sample_event); a sample stands for the interval since its thread's previous
 * sample, so it weighs each counter's increase over that interval (op_rd_stack_weights) — the
 * attribution perf's sampling makes too, exact in sum, statistical per function. One weighted
 * profile is built per counter (profile_cpu_build.c) and the functions of all are joined by
 * name. Ratios are of self counts: IPC = instructions / cycles, cache-miss % = cache-misses /
 * cache-references, branch-miss % = branch-misses / branches; a ratio whose two counters are
 * not both recorded is left out, one whose denominator is 0 for a function is null ("-"). */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "db/reader.h"
#include "output/internal.h"
#include "output/profile_cpu.h"
#include "output/report.h"

#define CC_MAX 8

static const struct {
    const char *name, *num, *den;
    double scale;
} k_ratios[] = {
    {"IPC", "instructions", "cycles", 1.0},
    {"cache-miss %", "cache-misses", "cache-references", 100.0},
    {"branch-miss %", "branch-misses", "branches", 100.0},
};
#define N_RATIOS (sizeof k_ratios / sizeof k_ratios[0])

typedef struct cc_row {
    uint32_t name, module; /* in cc.names; module UINT32_MAX: none */
    uint64_t self[CC_MAX], total[CC_MAX];
} cc_row;

typedef struct cc {
    char events[CC_MAX][64];
    int n_events;
    uint64_t sum[CC_MAX];
    int ratio_num[N_RATIOS], ratio_den[N_RATIOS]; /* event indexes, -1: not recorded */
    op_strtab names;
    op_u64map index; /* name id -> row + 1 */
    cc_row *rows;
    size_t n_rows, cap_rows;
} cc;

typedef struct names_arg {
    char (*names)[64];
    int n, max;
} names_arg;

static int name_cb(int index, const char *name, uint32_t type, uint64_t config, void *arg)
{
    names_arg *a = arg;
    (void)index, (void)type, (void)config;
    if (!name) return 0;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->names[i], name) == 0) return 0;
    if (a->n < a->max) snprintf(a->names[a->n++], 64, "%s", name);
    return 0;
}

typedef struct set_names {
    names_arg *a;
    const char *only_sfx;
} set_names;

static int names_set(op_src *src, op_src_set *set, size_t input, void *arg, char *err,
                     size_t errlen)
{
    set_names *s = arg;
    (void)input;
    if (s->only_sfx && strcmp(s->only_sfx, set->suffix) != 0) return 0;
    return op_rd_sample_events(src, set, name_cb, s->a, err, errlen);
}

int cp_counter_names(const char *const *inputs, size_t n_inputs, const char *only_sfx,
                     char names[][64], int max, char *err, size_t errlen)
{
    names_arg a = {names, 0, max};
    set_names s = {&a, only_sfx};
    int rc = op_out_each_set(inputs, n_inputs, names_set, &s, err, errlen);
    return rc ? -rc : a.n;
}

static cc_row *row_of(cc *c, const char *name)
{
    uint32_t id;
    uint64_t ix;
    if (op_strtab_intern(&c->names, name, strlen(name), &id) != 0) return NULL;
    if (op_u64map_get(&c->index, id, &ix)) return &c->rows[ix - 1];
    if (op_grow(&c->rows, &c->cap_rows, c->n_rows + 1, sizeof *c->rows)) return NULL;
    cc_row *r = &c->rows[c->n_rows++];
    memset(r, 0, sizeof *r);
    r->name = id;
    r->module = UINT32_MAX;
    if (op_u64map_put(&c->index, id, c->n_rows)) return NULL;
    return r;
}

static void cc_free(cc *c)
{
    op_strtab_free(&c->names);
    op_u64map_free(&c->index);
    free(c->rows);
}

/* Builds c: one weighted profile per counter, joined by function name. 0, or an OP_OUT_* status. */
static int cc_build(cc *c, const char *const *inputs, size_t n_inputs, const char *only_sfx,
                    const int64_t *window, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    int n = cp_counter_names(inputs, n_inputs, only_sfx, c->events, CC_MAX, err, errlen);
    if (n < 0) return -n;
    c->n_events = n;
    for (int e = 0; e < n; e++) {
        cp_profile p;
        int rc = cp_profile_build_weighted(&p, inputs, n_inputs, only_sfx, c->events[e], 0, window,
                                           err, errlen);
        for (size_t i = 0; !rc && i < p.n_flat; i++) {
            const cp_flat *f = &p.flat[i];
            cc_row *r = row_of(c, CP_STR(&p, f->name));
            if (!r) {
                rc = OP_OUT_EFAIL;
                break;
            }
            r->self[e] += f->self;
            r->total[e] += f->total;
            if (r->module == UINT32_MAX && f->module != UINT32_MAX) {
                const char *m = CP_STR(&p, f->module);
                uint32_t mid;
                if (op_strtab_intern(&c->names, m, strlen(m), &mid) == 0) r->module = mid;
            }
        }
        if (!rc) c->sum[e] = p.total;
        cp_profile_free(&p);
        if (rc) return rc;
    }
    for (size_t k = 0; k < N_RATIOS; k++) {
        c->ratio_num[k] = c->ratio_den[k] = -1;
        for (int e = 0; e < n; e++) {
            if (strcmp(c->events[e], k_ratios[k].num) == 0) c->ratio_num[k] = e;
            if (strcmp(c->events[e], k_ratios[k].den) == 0) c->ratio_den[k] = e;
        }
    }
    return 0;
}

static int by_first(const void *a, const void *b)
{
    const cc_row *x = a, *y = b;
    if (x->self[0] != y->self[0]) return x->self[0] < y->self[0] ? 1 : -1;
    if (x->total[0] != y->total[0]) return x->total[0] < y->total[0] ? 1 : -1;
    return 0;
}

static bool has_ratio(const cc *c, size_t k)
{
    return c->ratio_num[k] >= 0 && c->ratio_den[k] >= 0;
}

/* The ratio k of a row (self counts); false when its denominator is 0. */
static bool ratio(const cc *c, const cc_row *r, size_t k, double *v)
{
    uint64_t den = r->self[c->ratio_den[k]];
    if (!den) return false;
    *v = k_ratios[k].scale * (double)r->self[c->ratio_num[k]] / (double)den;
    return true;
}

static void write_json(const cc *c, op_buf *b, size_t max_rows)
{
    op_buf_puts(b, "{\"events\":[");
    for (int e = 0; e < c->n_events; e++) {
        op_buf_puts(b, e ? ",{\"name\":" : "{\"name\":");
        rp_json_str(b, c->events[e], strlen(c->events[e]));
        op_buf_printf(b, ",\"total\":%llu}", (unsigned long long)c->sum[e]);
    }
    op_buf_puts(b, "],\"ratios\":[");
    int first = 1;
    for (size_t k = 0; k < N_RATIOS; k++)
        if (has_ratio(c, k)) {
            op_buf_puts(b, first ? "" : ",");
            rp_json_str(b, k_ratios[k].name, strlen(k_ratios[k].name));
            first = 0;
        }
    op_buf_puts(b, "],\"functions\":[");
    for (size_t i = 0; i < c->n_rows && i < max_rows; i++) {
        const cc_row *r = &c->rows[i];
        op_buf_puts(b, i ? ",{\"function\":" : "{\"function\":");
        const char *nm = c->names.text[r->name];
        rp_json_str(b, nm, strlen(nm));
        op_buf_puts(b, ",\"module\":");
        const char *mod = r->module != UINT32_MAX ? c->names.text[r->module] : "";
        rp_json_str(b, mod, strlen(mod));
        op_buf_puts(b, ",\"self\":[");
        for (int e = 0; e < c->n_events; e++)
            op_buf_printf(b, "%s%llu", e ? "," : "", (unsigned long long)r->self[e]);
        op_buf_puts(b, "],\"total\":[");
        for (int e = 0; e < c->n_events; e++)
            op_buf_printf(b, "%s%llu", e ? "," : "", (unsigned long long)r->total[e]);
        op_buf_puts(b, "],\"ratios\":[");
        first = 1;
        for (size_t k = 0; k < N_RATIOS; k++) {
            if (!has_ratio(c, k)) continue;
            double v;
            char d[40];
            op_buf_printf(b, "%s%s", first ? "" : ",",
                          ratio(c, r, k, &v) ? op_fmt_double(d, sizeof d, v) : "null");
            first = 0;
        }
        op_buf_puts(b, "]}");
    }
    op_buf_puts(b, "]}");
}

static void write_text(const cc *c, op_buf *b, size_t max_rows)
{
    op_buf_puts(b, "Counts of the perf_event counters per function (self: samples in the function, "
                   "total: in it "
                   "or its callees;\neach sample weighs its thread's increase since the previous "
                   "sample). Totals:");
    for (int e = 0; e < c->n_events; e++)
        op_buf_printf(b, "%s %s %llu", e ? "," : "", c->events[e], (unsigned long long)c->sum[e]);
    op_buf_puts(b, "\n");
    for (size_t k = 0; k < N_RATIOS; k++)
        if (has_ratio(c, k)) {
            uint64_t den = c->sum[c->ratio_den[k]];
            double v = den ? k_ratios[k].scale * (double)c->sum[c->ratio_num[k]] / (double)den : 0;
            op_buf_printf(b, "%s (%s / %s): %.3f over the whole run\n", k_ratios[k].name,
                          k_ratios[k].num, k_ratios[k].den, v);
        }
    op_buf_puts(b, "\n");
    int w[CC_MAX];
    for (int e = 0; e < c->n_events; e++) {
        w[e] = (int)strlen(c->events[e]) + 6;
        if (w[e] < 14) w[e] = 14;
        char h[80];
        snprintf(h, sizeof h, "SELF %s", c->events[e]);
        op_buf_printf(b, "%*s  ", w[e], h);
        snprintf(h, sizeof h, "TOTAL %s", c->events[e]);
        op_buf_printf(b, "%*s  ", w[e], h);
    }
    for (size_t k = 0; k < N_RATIOS; k++)
        if (has_ratio(c, k)) op_buf_printf(b, "%13s  ", k_ratios[k].name);
    op_buf_puts(b, "FUNCTION\n");
    for (size_t i = 0; i < c->n_rows && i < max_rows; i++) {
        const cc_row *r = &c->rows[i];
        for (int e = 0; e < c->n_events; e++)
            op_buf_printf(b, "%*llu  %*llu  ", w[e], (unsigned long long)r->self[e], w[e],
                          (unsigned long long)r->total[e]);
        for (size_t k = 0; k < N_RATIOS; k++) {
            double v;
            if (!has_ratio(c, k)) continue;
            if (ratio(c, r, k, &v))
                op_buf_printf(b, "%13.3f  ", v);
            else
                op_buf_printf(b, "%13s  ", "-");
        }
        op_buf_printf(b, "%s\n", c->names.text[r->name]);
    }
    if (c->n_rows > max_rows)
        op_buf_printf(b, "(%zu more functions; omniprof query for all)\n", c->n_rows - max_rows);
}

static int cc_run(const char *const *inputs, size_t n_inputs, const char *only_sfx, op_buf *b,
                  int json, size_t max_rows, const int64_t *window, int *written, char *err,
                  size_t errlen)
{
    *written = 0;
    cc c;
    int rc = cc_build(&c, inputs, n_inputs, only_sfx, window, err, errlen);
    if (!rc && c.n_events) {
        qsort(c.rows, c.n_rows, sizeof *c.rows, by_first);
        if (json)
            write_json(&c, b, max_rows ? max_rows : 100);
        else
            write_text(&c, b, max_rows ? max_rows : 30);
        *written = 1;
        if (b->oom) rc = OP_OUT_EFAIL;
    }
    cc_free(&c);
    return rc;
}

int cp_counters_buf(const char *const *inputs, size_t n_inputs, const char *only_sfx,
                    struct op_buf *b, int json, size_t max_rows, const int64_t *window,
                    int *written, char *err, size_t errlen)
{
    return cc_run(inputs, n_inputs, only_sfx, b, json, max_rows, window, written, err, errlen);
}
