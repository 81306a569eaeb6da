/* wall_clock.c — the region profile as rocprof-sys prints it: <dir>/<name>_wall_clock.txt (one
 * table row per thread, region node and component, labels `|NN>>> ` + indentation) and
 * <dir>/<name>_wall_clock.json, derived from the databases' omniprof_region_profile rows
 * (REGION_PROFILE records of the CPU backend; db/reader.h op_rd_region_profile) by
 * `omniprof convert -f wall_clock` (issue 10 item 7: the backend writes nothing beside the
 * database, and two processes never share one file: each input's rows carry its pid). The
 * files follow the output rules of outfile.c (never an input, never an existing file: "-N").
 *
 * Memory: the rows of one table set at a time (one per region node and component: bounded by
 * the program's distinct regions, not by the length of the run). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/escape.h"
#include "common/u64map.h"
#include "db/reader.h"
#include "output/internal.h"

typedef struct wc_row {
    op_rd_region_row r; /* strings point into `text` */
    char *text;
} wc_row;

typedef struct wc_set {
    wc_row *rows;
    size_t n, cap;
    int failed;
    op_u64map first_row; /* node id -> index of its first row (parents' labels) */
} wc_set;

static int keep_row(const op_rd_region_row *r, void *arg)
{
    wc_set *s = arg;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        wc_row *t = realloc(s->rows, cap * sizeof *t);
        if (!t) return s->failed = 1;
        s->rows = t;
        s->cap = cap;
    }
    const char *l = r->label ? r->label : "", *c = r->component ? r->component : "", *u = r->units ? r->units : "";
    size_t ll = strlen(l) + 1, cl = strlen(c) + 1, ul = strlen(u) + 1;
    char *text = malloc(ll + cl + ul);
    if (!text) return s->failed = 1;
    memcpy(text, l, ll);
    memcpy(text + ll, c, cl);
    memcpy(text + ll + cl, u, ul);
    uint64_t seen;
    if (!op_u64map_get(&s->first_row, (uint64_t)r->node_id, &seen) && op_u64map_put(&s->first_row, (uint64_t)r->node_id, s->n))
        return s->failed = 1;
    wc_row *w = &s->rows[s->n++];
    w->r = *r;
    w->text = text;
    w->r.label = text;
    w->r.component = text + ll;
    w->r.units = text + ll + cl;
    return 0;
}

static void set_free(wc_set *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->rows[i].text);
    free(s->rows);
    op_u64map_free(&s->first_row);
    memset(s, 0, sizeof *s);
}

static double mean_of(const op_rd_region_row *r) { return r->count ? r->sum / (double)r->count : 0; }
static double stddev_of(const op_rd_region_row *r)
{
    double m = mean_of(r), var = r->count ? r->sum_squares / (double)r->count - m * m : 0;
    return var > 0 ? sqrt(var) : 0;
}

/* The label of the parent node (same thread), NULL at the root. */
static const char *parent_label(const wc_set *s, const op_rd_region_row *r)
{
    uint64_t at;
    if (!r->parent_id || !op_u64map_get(&s->first_row, (uint64_t)r->parent_id, &at) || at >= s->n) return NULL;
    return s->rows[at].r.label;
}

/* Component names in first-seen order (at most 16). */
static size_t components(const wc_set *s, const char **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        size_t k = 0;
        while (k < n && strcmp(out[k], s->rows[i].r.component) != 0) k++;
        if (k == n && n < cap) out[n++] = s->rows[i].r.component;
    }
    return n;
}

static void write_text(FILE *f, const wc_set *s, int64_t pid)
{
    const char *comp[16];
    size_t nc = components(s, comp, 16);
    for (size_t c = 0; c < nc; c++)
        for (size_t i = 0; i < s->n; i++) {
            const op_rd_region_row *r = &s->rows[i].r;
            if (strcmp(r->component, comp[c]) != 0) continue;
            char label[192];
            snprintf(label, sizeof label, "|%02lld>>> %*s%s", (long long)r->thread_index, r->depth * 2, "", r->label);
            double pct_self = r->sum > 0 ? 100.0 * r->self / r->sum : 0;
            fprintf(f, "| %-48s | %8llu | %5d | %-16s | %-5s | %14.0f | %14.1f | %14.0f | %14.0f | %14.1f | %7.1f | %14.0f |",
                    label, (unsigned long long)r->count, r->depth, r->component, r->units, r->sum, mean_of(r), r->min,
                    r->max, stddev_of(r), pct_self, r->self);
            fprintf(f, pid >= 0 ? " %lld\n" : "\n", (long long)pid);
        }
}

/* One JSON node per region node: its components side by side. */
static void write_json_nodes(FILE *f, const wc_set *s, int64_t pid, int *first)
{
    for (size_t i = 0; i < s->n; i++) {
        const op_rd_region_row *r = &s->rows[i].r;
        if (i && s->rows[i - 1].r.node_id == r->node_id) continue; /* the node's first component opens it */
        fprintf(f, "%s\n    {\"pid\": %lld, \"thread\": %lld, \"tid\": %lld, \"depth\": %d, \"label\": ", *first ? "" : ",",
                (long long)pid, (long long)r->thread_index, (long long)r->tid, r->depth);
        op_json_fputs(f, r->label);
        fprintf(f, ", \"parent\": ");
        op_json_fputs(f, parent_label(s, r));
        fprintf(f, ", \"components\": {");
        for (size_t j = i; j < s->n && s->rows[j].r.node_id == r->node_id; j++) {
            const op_rd_region_row *c = &s->rows[j].r;
            fprintf(f, "%s", j > i ? ", " : "");
            op_json_fputs(f, c->component);
            fprintf(f, ": {\"units\": ");
            op_json_fputs(f, c->units);
            fprintf(f,
                    ", \"count\": %llu, \"sum\": %.17g, \"mean\": %.17g, \"min\": %.17g, \"max\": %.17g, "
                    "\"stddev\": %.17g, \"self\": %.17g}",
                    (unsigned long long)c->count, c->sum, mean_of(c), c->min, c->max, stddev_of(c), c->self);
        }
        fprintf(f, "}}");
        *first = 0;
    }
}

int op_output_wall_clock(const char *const *inputs, size_t n_inputs, const char *dir, const char *name, char *err,
                         size_t errlen)
{
    op_out_inputs in;
    int rc = op_out_inputs_begin(&in, inputs, n_inputs, err, errlen);
    if (!rc) rc = op_out_wall_clock(&in, dir, name, err, errlen);
    op_out_inputs_end(&in);
    return rc;
}

/* Every table set of every input into the two files; the JSON's closing lists the components. */
static int write_all_sets(const op_out_inputs *in, FILE *txt, FILE *js, char *err, size_t errlen)
{
    int rc = OP_OUT_OK, first = 1;
    const char *comp_all[16];
    size_t n_comp_all = 0;
    int64_t first_pid = -1;
    for (size_t i = 0; i < in->n && rc == OP_OUT_OK; i++) {
        op_src *src = NULL;
        rc = op_src_open(in->v[i], &src, err, errlen);
        for (size_t k = 0; rc == OP_OUT_OK && k < src->n_sets; k++) {
            wc_set s = {0};
            rc = op_rd_region_profile(src, &src->sets[k], keep_row, &s, err, errlen);
            if (rc == OP_OUT_OK && s.failed) rc = OP_OUT_EFAIL;
            int64_t pid = -1, rank = -1;
            op_rd_cpu_process(src, &src->sets[k], &pid, &rank);
            if (rc == OP_OUT_OK && s.n) {
                if (first_pid < 0) first_pid = pid;
                write_text(txt, &s, pid);
                write_json_nodes(js, &s, pid, &first);
                const char *comp[16];
                size_t nc = components(&s, comp, 16);
                for (size_t c = 0; c < nc && n_comp_all < 16; c++) { /* names live in the rows: copy */
                    size_t j = 0;
                    while (j < n_comp_all && strcmp(comp_all[j], comp[c]) != 0) j++;
                    if (j == n_comp_all) comp_all[n_comp_all++] = strdup(comp[c]);
                }
            }
            set_free(&s);
        }
        if (src) op_src_close(src);
    }
    fprintf(js, "\n  ], \"pid\": %lld, \"components\": [", (long long)first_pid);
    for (size_t c = 0; c < n_comp_all; c++) {
        fprintf(js, "%s", c ? ", " : "");
        op_json_fputs(js, comp_all[c] ? comp_all[c] : "");
        free((char *)comp_all[c]);
    }
    fprintf(js, "]}}\n");
    return rc;
}

int op_out_wall_clock(const op_out_inputs *in, const char *dir, const char *name, char *err, size_t errlen)
{
    dir = dir && *dir ? dir : ".";
    name = name ? name : "out";
    if (op_mkdirs(dir) != 0) {
        op_seterr(err, errlen, "%s: cannot create the output directory", dir);
        return OP_OUT_EFAIL;
    }
    op_outfile txt, js;
    int rc = op_outfile_open_derived(&txt, dir, name, "wall_clock.txt", &in->ids, err, errlen);
    if (rc) return rc;
    rc = op_outfile_open_derived(&js, dir, name, "wall_clock.json", &in->ids, err, errlen);
    if (rc) {
        op_outfile_close(&txt, 0, NULL, 0);
        return rc;
    }
    fprintf(txt.f, "# omniprof region profile (per thread call tree; values per component; self = minus children)\n");
    fprintf(txt.f, "| %-48s | %8s | %5s | %-16s | %-5s | %14s | %14s | %14s | %14s | %14s | %7s | %14s | PID\n", "LABEL",
            "COUNT", "DEPTH", "METRIC", "UNITS", "SUM", "MEAN", "MIN", "MAX", "STDDEV", "% SELF", "SELF");
    fprintf(js.f, "{\"omniprof_region_profile\": {\"nodes\": [");
    rc = write_all_sets(in, txt.f, js.f, err, errlen);
    int c1 = op_outfile_close(&txt, rc == 0, err, errlen);
    int c2 = op_outfile_close(&js, rc == 0, err, errlen);
    return rc ? rc : c1 ? c1 : c2;
}
