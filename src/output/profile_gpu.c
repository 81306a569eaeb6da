/* profile_gpu.c — the summary's sections on what was sampled or counted inside GPU kernels and
 * memory (op_gpu_summary_section, called by stats.c after the timing tables):
 *   OMNIPROF PC SAMPLING: TOP STALL REASONS   per kernel (most samples first, 20 kernels): its
 *                                             samples and its three most frequent stall reasons
 *   OMNIPROF PC SAMPLING: HOTTEST SOURCE LINES the 20 source lines with the most samples, with
 *                                             their share of their kernel's samples
 *   OMNIPROF SASS METRICS: SOURCE LINES       the 20 lines with the most executed instructions:
 *                                             instructions, warp- and thread-level executions,
 *                                             threads per executed instruction
 *   OMNIPROF UNIFIED MEMORY                   per operation: events, bytes, time
 *   OMNIPROF PM SAMPLING                      per (device, metric): samples, min, mean, max
 * A section is printed only when the inputs hold its rows. console/md: text tables; json: one
 * more list element {"summary": "OMNIPROF GPU SAMPLING", "pc_stalls": [...], "pc_lines": [...],
 * "sass_lines": [...], "unified_memory": [...], "pm_sampling": [...]}; csv: left out.
 *
 * The rows are aggregated per set by the reader (reader_gpu.c) and merged here by their names
 * (kernel, reason, file, line; metric and device): memory is one entry per distinct name. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "output/profile_gpu.h"
#include "output/sink.h"

#define GPU_TOP 20

typedef struct gpu_row {
    char *a, *b, *c;
    int64_t line;
    double v[4];
} gpu_row;

typedef struct gpu_table {
    gpu_row *rows;
    size_t n, cap;
    op_u64map index; /* hash of the key -> index + 1 (chained by probing on collision) */
    int which;
} gpu_table;

static uint64_t key_hash(const op_rd_gpu_row *r) {
    uint64_t h = op_hash_bytes_seeded(r->a, strlen(r->a), 0x9e3779b97f4a7c15ull);
    h = op_hash_bytes_seeded(r->b, strlen(r->b), h);
    h = op_hash_bytes_seeded(r->c, strlen(r->c), h);
    return op_hash64x3(h, (uint64_t)r->line, 3);
}

static int same_key(const gpu_row *g, const op_rd_gpu_row *r) {
    return g->line == r->line && !strcmp(g->a, r->a) && !strcmp(g->b, r->b) && !strcmp(g->c, r->c);
}

/* Merge one set's row: sums, except PM (v1 min, v2 mean weighted by v0 samples, v3 max). */
static int add_row(const op_rd_gpu_row *r, void *arg) {
    gpu_table *t = arg;
    uint64_t v;
    for (uint64_t probe = key_hash(r);; probe = op_hash64x3(probe, 5, 5)) {
        if (!op_u64map_get(&t->index, probe, &v)) break;
        gpu_row *g = &t->rows[v - 1];
        if (!same_key(g, r)) continue;
        if (t->which == OP_RD_GPU_PM) {
            double n = g->v[0] + r->v[0];
            g->v[2] = n > 0 ? (g->v[2] * g->v[0] + r->v[2] * r->v[0]) / n : 0;
            g->v[1] = fmin(g->v[1], r->v[1]);
            g->v[3] = fmax(g->v[3], r->v[3]);
            g->v[0] = n;
        } else {
            for (int i = 0; i < 4; i++) g->v[i] += r->v[i];
        }
        return 0;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        gpu_row *n = realloc(t->rows, cap * sizeof *n);
        if (!n) return -1;
        t->rows = n, t->cap = cap;
    }
    gpu_row *g = &t->rows[t->n];
    g->a = strdup(r->a), g->b = strdup(r->b), g->c = strdup(r->c);
    if (!g->a || !g->b || !g->c) {
        free(g->a), free(g->b), free(g->c);
        return -1;
    }
    g->line = r->line;
    memcpy(g->v, r->v, sizeof g->v);
    t->n++;
    for (uint64_t probe = key_hash(r);; probe = op_hash64x3(probe, 5, 5))
        if (!op_u64map_get(&t->index, probe, NULL)) return op_u64map_put(&t->index, probe, t->n) ? -1 : 0;
}

static void table_free(gpu_table *t) {
    for (size_t i = 0; i < t->n; i++) free(t->rows[i].a), free(t->rows[i].b), free(t->rows[i].c);
    free(t->rows);
    op_u64map_free(&t->index);
    memset(t, 0, sizeof *t);
}

enum { Q_STALLS, Q_LINES, Q_SASS, Q_UM, Q_PM, Q_COUNT };
static const int k_which[Q_COUNT] = {OP_RD_GPU_PC_STALLS, OP_RD_GPU_PC_LINES, OP_RD_GPU_SASS_LINES,
                                     OP_RD_GPU_UNIFIED_MEMORY, OP_RD_GPU_PM};

/* Every question over every set of every input. */
static int collect(const char *const *inputs, size_t n_inputs, const op_win *w, gpu_table *t, char *err, size_t errlen) {
    for (int q = 0; q < Q_COUNT; q++) t[q].which = k_which[q];
    for (size_t i = 0; i < n_inputs; i++) {
        op_src *s = NULL;
        int rc = op_src_open(inputs[i], &s, err, errlen);
        if (rc) return rc;
        for (size_t k = 0; k < s->n_sets && !rc; k++)
            for (int q = 0; q < Q_COUNT && !rc; q++)
                rc = op_rd_gpu_rows(s, &s->sets[k], k_which[q], w, add_row, &t[q], err, errlen);
        op_src_close(s);
        if (rc) return rc;
    }
    return 0;
}

/* Sort by v[col] descending, ties by name and line. */
static int cmp_desc(const void *x, const void *y, void *ctx) {
    const gpu_row *a = x, *b = y;
    int col = *(const int *)ctx;
    if (a->v[col] != b->v[col]) return a->v[col] < b->v[col] ? 1 : -1;
    int c = strcmp(a->a, b->a);
    return c ? c : (a->line > b->line) - (a->line < b->line);
}
static void sort_by(gpu_table *t, int col) {
    if (t->n > 1) qsort_r(t->rows, t->n, sizeof *t->rows, cmp_desc, &col);
}

/* "smsp__pcsamp_warps_issue_stalled_long_scoreboard" -> "long_scoreboard" (display only). */
static const char *short_reason(const char *s) {
    static const char *const prefixes[] = {"smsp__pcsamp_warps_issue_stalled_", "smsp__pcsamp_"};
    for (size_t i = 0; i < 2; i++) {
        size_t n = strlen(prefixes[i]);
        if (!strncmp(s, prefixes[i], n) && s[n]) return s + n;
    }
    return s;
}

static void cell(op_buf *b, const char *s) { op_buf_term_str(b, (const unsigned char *)s, strlen(s), "|"); }
static void jstr(op_buf *b, const char *s) {
    op_buf_putc(b, '"');
    op_buf_json_str(b, (const unsigned char *)s, strlen(s));
    op_buf_putc(b, '"');
}
static const char *num(char *buf, double v) { return op_fmt_double(buf, 40, v); }

/* Total samples per kernel (from the stall rows), for shares. */
static double kernel_total(const gpu_table *stalls, const char *kernel) {
    double s = 0;
    for (size_t i = 0; i < stalls->n; i++)
        if (!strcmp(stalls->rows[i].a, kernel)) s += stalls->rows[i].v[0];
    return s;
}

/* Kernels by their samples (most first), each with its top reasons (st sorted by samples). */
typedef struct kernel_total_t {
    const char *kernel;
    double samples;
} kernel_total_t;
static int cmp_kernels(const void *x, const void *y) {
    const kernel_total_t *a = x, *b = y;
    if (a->samples != b->samples) return a->samples < b->samples ? 1 : -1;
    return strcmp(a->kernel, b->kernel);
}

static void write_stalls(op_buf *b, const gpu_table *st, int json) {
    char d[3][40];
    kernel_total_t *k = calloc(st->n + 1, sizeof *k);
    if (!k) return;
    size_t nk = 0;
    for (size_t i = 0; i < st->n; i++) {
        size_t j = 0;
        while (j < nk && strcmp(k[j].kernel, st->rows[i].a)) j++;
        if (j == nk) k[nk++].kernel = st->rows[i].a;
        k[j].samples += st->rows[i].v[0];
    }
    qsort(k, nk, sizeof *k, cmp_kernels);
    if (!json)
        op_buf_puts(b, "| KERNEL | SAMPLES | TOP STALL REASONS (share of the kernel's samples) |\n|:-----|------:|:-----|\n");
    for (size_t i = 0; i < nk && i < GPU_TOP; i++) {
        double tot = k[i].samples;
        if (json) {
            op_buf_printf(b, "%s{\"kernel\":", i ? "," : "");
            jstr(b, k[i].kernel);
            op_buf_printf(b, ",\"samples\":%s,\"reasons\":[", num(d[0], tot));
        } else {
            op_buf_puts(b, "| ");
            cell(b, k[i].kernel);
            op_buf_printf(b, " | %s | ", num(d[0], tot));
        }
        int nr = 0;
        for (size_t j = 0; j < st->n && nr < 3; j++) {
            if (strcmp(st->rows[j].a, k[i].kernel)) continue;
            double pct = tot > 0 ? 100.0 * st->rows[j].v[0] / tot : 0;
            if (json) {
                op_buf_printf(b, "%s{\"reason\":", nr ? "," : "");
                jstr(b, st->rows[j].b);
                op_buf_printf(b, ",\"samples\":%s,\"percent\":%s}", num(d[1], st->rows[j].v[0]), num(d[2], pct));
            } else {
                op_buf_puts(b, nr ? "; " : "");
                cell(b, short_reason(st->rows[j].b));
                op_buf_printf(b, " %.1f %%", pct);
            }
            nr++;
        }
        op_buf_puts(b, json ? "]}" : " |\n");
    }
    free(k);
}

static void write_lines(op_buf *b, const gpu_table *lines, const gpu_table *stalls, int json) {
    char d[2][40];
    if (!json) op_buf_puts(b, "| SOURCE LINE | KERNEL | SAMPLES | PERCENT OF KERNEL |\n|:-----|:-----|------:|------:|\n");
    for (size_t i = 0; i < lines->n && i < GPU_TOP; i++) {
        const gpu_row *r = &lines->rows[i];
        double tot = kernel_total(stalls, r->a);
        double pct = tot > 0 ? 100.0 * r->v[0] / tot : 0;
        if (json) {
            op_buf_printf(b, "%s{\"file\":", i ? "," : "");
            jstr(b, r->c);
            op_buf_printf(b, ",\"line\":%lld,\"kernel\":", (long long)r->line);
            jstr(b, r->a);
            op_buf_printf(b, ",\"samples\":%s,\"percent\":%s}", num(d[0], r->v[0]), num(d[1], pct));
        } else {
            op_buf_puts(b, "| ");
            cell(b, r->c);
            op_buf_printf(b, ":%lld | ", (long long)r->line);
            cell(b, r->a);
            op_buf_printf(b, " | %s | %.2f |\n", num(d[0], r->v[0]), pct);
        }
    }
}

static void write_sass(op_buf *b, const gpu_table *t, int json) {
    char d[4][40];
    if (!json)
        op_buf_puts(b, "| SOURCE LINE | KERNEL | SASS INSTRUCTIONS | INST EXECUTED | THREAD INST EXECUTED | THREADS PER INST |\n"
                       "|:-----|:-----|------:|------:|------:|------:|\n");
    for (size_t i = 0; i < t->n && i < GPU_TOP; i++) {
        const gpu_row *r = &t->rows[i];
        double per = r->v[0] > 0 ? r->v[1] / r->v[0] : 0;
        if (json) {
            op_buf_printf(b, "%s{\"file\":", i ? "," : "");
            jstr(b, r->c);
            op_buf_printf(b, ",\"line\":%lld,\"kernel\":", (long long)r->line);
            jstr(b, r->a);
            op_buf_printf(b, ",\"instructions\":%s,\"inst_executed\":%s,\"thread_inst_executed\":%s,\"threads_per_inst\":%s}",
                          num(d[0], r->v[2]), num(d[1], r->v[0]), num(d[2], r->v[1]), num(d[3], per));
        } else {
            op_buf_puts(b, "| ");
            cell(b, r->c[0] ? r->c : "?");
            op_buf_printf(b, ":%lld | ", (long long)r->line);
            cell(b, r->a);
            op_buf_printf(b, " | %s | %s | %s | %.2f |\n", num(d[0], r->v[2]), num(d[1], r->v[0]), num(d[2], r->v[1]), per);
        }
    }
}

static void write_um(op_buf *b, const gpu_table *t, int json) {
    char d[3][40];
    if (!json) op_buf_puts(b, "| OPERATION | EVENTS | BYTES | DURATION (nsec) |\n|:-----|------:|------:|------:|\n");
    for (size_t i = 0; i < t->n; i++) {
        const gpu_row *r = &t->rows[i];
        if (json) {
            op_buf_printf(b, "%s{\"operation\":", i ? "," : "");
            jstr(b, r->a);
            op_buf_printf(b, ",\"events\":%s,\"bytes\":%s,\"duration\":%s}", num(d[0], r->v[0]), num(d[1], r->v[1]),
                          num(d[2], r->v[2]));
        } else {
            op_buf_puts(b, "| ");
            cell(b, r->a);
            op_buf_printf(b, " | %s | %s | %s |\n", num(d[0], r->v[0]), num(d[1], r->v[1]), num(d[2], r->v[2]));
        }
    }
}

static void write_pm(op_buf *b, const gpu_table *t, int json) {
    char d[4][40];
    if (!json) op_buf_puts(b, "| DEVICE | METRIC | UNITS | SAMPLES | MIN | MEAN | MAX |\n|-----:|:-----|:-----|------:|------:|------:|------:|\n");
    for (size_t i = 0; i < t->n; i++) {
        const gpu_row *r = &t->rows[i];
        if (json) {
            op_buf_printf(b, "%s{\"device\":%lld,\"metric\":", i ? "," : "", (long long)r->line);
            jstr(b, r->a);
            op_buf_puts(b, ",\"units\":");
            jstr(b, r->b);
            op_buf_printf(b, ",\"samples\":%s,\"min\":%s,\"mean\":%s,\"max\":%s}", num(d[0], r->v[0]), num(d[1], r->v[1]),
                          num(d[2], r->v[2]), num(d[3], r->v[3]));
        } else {
            op_buf_printf(b, "| %lld | ", (long long)r->line);
            cell(b, r->a);
            op_buf_puts(b, " | ");
            cell(b, r->b);
            op_buf_printf(b, " | %s | %.6g | %.6g | %.6g |\n", num(d[0], r->v[0]), r->v[1], r->v[2], r->v[3]);
        }
    }
}

static int cmp_pm(const void *x, const void *y) {
    const gpu_row *a = x, *b = y;
    if (a->line != b->line) return a->line < b->line ? -1 : 1;
    return strcmp(a->a, b->a);
}

int op_gpu_summary_section(const char *const *inputs, size_t n_inputs, const op_win *w, int format, FILE *out,
                           int *first_json, int *printed, char *err, size_t errlen) {
    if (format == OP_OUT_SUMMARY_CSV) return OP_OUT_OK;
    gpu_table t[Q_COUNT];
    memset(t, 0, sizeof t);
    int rc = collect(inputs, n_inputs, w, t, err, errlen);
    size_t any = 0;
    for (int q = 0; q < Q_COUNT; q++) any += t[q].n;
    if (!rc && any) {
        sort_by(&t[Q_STALLS], 0);
        sort_by(&t[Q_LINES], 0);
        sort_by(&t[Q_SASS], 0);
        sort_by(&t[Q_UM], 1);
        if (t[Q_PM].n > 1) qsort(t[Q_PM].rows, t[Q_PM].n, sizeof(gpu_row), cmp_pm);
        int json = format == OP_OUT_SUMMARY_JSON, md = format == OP_OUT_SUMMARY_MD;
        op_buf b = {0};
        static const char *const titles[Q_COUNT] = {
            "OMNIPROF PC SAMPLING: TOP STALL REASONS", "OMNIPROF PC SAMPLING: HOTTEST SOURCE LINES",
            "OMNIPROF SASS METRICS: SOURCE LINES", "OMNIPROF UNIFIED MEMORY", "OMNIPROF PM SAMPLING"};
        static const char *const keys[Q_COUNT] = {"pc_stalls", "pc_lines", "sass_lines", "unified_memory", "pm_sampling"};
        if (json) op_buf_printf(&b, "%s{\"summary\":\"OMNIPROF GPU SAMPLING\"", *first_json ? "" : ",\n");
        for (int q = 0; q < Q_COUNT; q++) {
            if (!t[q].n) continue;
            if (json) op_buf_printf(&b, ",\"%s\":[", keys[q]);
            else op_buf_printf(&b, "\n%s%s:\n\n", md ? "### " : "", titles[q]);
            switch (q) {
            case Q_STALLS: write_stalls(&b, &t[Q_STALLS], json); break;
            case Q_LINES: write_lines(&b, &t[Q_LINES], &t[Q_STALLS], json); break;
            case Q_SASS: write_sass(&b, &t[Q_SASS], json); break;
            case Q_UM: write_um(&b, &t[Q_UM], json); break;
            default: write_pm(&b, &t[Q_PM], json); break;
            }
            if (json) op_buf_putc(&b, ']');
        }
        if (json) op_buf_putc(&b, '}');
        *first_json = 0;
        *printed = 1;
        if (op_buf_write(&b, out)) rc = OP_OUT_EFAIL;
        op_buf_free(&b);
    }
    for (int q = 0; q < Q_COUNT; q++) table_free(&t[q]);
    return rc;
}
