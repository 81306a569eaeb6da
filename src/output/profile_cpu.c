/* profile_cpu.c — flat and call-tree CPU profiles from the samples in rocpd databases, as text
 * or JSON (design and formats: profile_cpu.h; the aggregation is profile_cpu_build.c). */
#include "output/profile_cpu.h"
#include "output/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Comparators take the profile as qsort_r's context (GNU): no shared state, so profiles may be
 * written from several threads at once (output.h: functions share no state). */
static int cmp_flat(const void *a, const void *b, void *ctx)
{
    const cp_profile *g_sort_profile = ctx;
    const cp_flat *x = a, *y = b;
    if (x->self != y->self) return x->self < y->self ? 1 : -1;
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    return strcmp(CP_STR(g_sort_profile, x->name), CP_STR(g_sort_profile, y->name));
}

static int cmp_child(const void *a, const void *b, void *ctx)
{
    const cp_profile *g_sort_profile = ctx;
    const cp_node *x = &g_sort_profile->nodes[*(const uint32_t *)a], *y = &g_sort_profile->nodes[*(const uint32_t *)b];
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    return strcmp(CP_STR(g_sort_profile, x->name), CP_STR(g_sort_profile, y->name));
}

/* Children of `id` sorted by total desc; caller frees. */
uint32_t *cp_sorted_children(cp_profile *p, uint32_t id, size_t *n)
{
    size_t k = 0;
    for (uint32_t c = p->nodes[id].first_child; c != UINT32_MAX; c = p->nodes[c].next_sibling) k++;
    *n = k;
    if (!k) return NULL;
    uint32_t *arr = malloc(k * sizeof *arr);
    if (!arr) {
        *n = 0;
        return NULL;
    }
    k = 0;
    for (uint32_t c = p->nodes[id].first_child; c != UINT32_MAX; c = p->nodes[c].next_sibling) arr[k++] = c;
    qsort_r(arr, k, sizeof *arr, cmp_child, p);
    return arr;
}

static void text_tree(FILE *f, cp_profile *p, uint32_t id, int depth, double min_pct)
{
    size_t n;
    uint32_t *kids = cp_sorted_children(p, id, &n);
    for (size_t i = 0; i < n; i++) {
        const cp_node *c = &p->nodes[kids[i]];
        double tp = p->total ? 100.0 * (double)c->total / (double)p->total : 0;
        if (tp < min_pct) continue;
        double sp = p->total ? 100.0 * (double)c->self / (double)p->total : 0;
        op_buf name = {0};
        fprintf(f, "%8llu %6.2f%% %8llu %6.2f%%  %*s%s\n", (unsigned long long)c->total, tp,
                (unsigned long long)c->self, sp, depth * 2, "", op_term_text(&name, CP_STR(p, c->name)));
        op_buf_free(&name);
        if (depth < 200) text_tree(f, p, kids[i], depth + 1, min_pct);
    }
    free(kids);
}

static void json_tree(FILE *f, cp_profile *p, uint32_t id, int depth)
{
    const cp_node *c = &p->nodes[id];
    fprintf(f, "{\"name\": ");
    op_json_fputs(f, id == 0 ? "[root]" : CP_STR(p, c->name));
    fprintf(f, ", \"self\": %llu, \"total\": %llu", (unsigned long long)(id == 0 ? 0 : c->self),
            (unsigned long long)(id == 0 ? p->total : c->total));
    size_t n;
    uint32_t *kids = cp_sorted_children(p, id, &n);
    if (n && depth < 1000) {
        fprintf(f, ", \"children\": [");
        for (size_t i = 0; i < n; i++) {
            if (i) fputs(", ", f);
            json_tree(f, p, kids[i], depth + 1);
        }
        fputc(']', f);
    }
    free(kids);
    fputc('}', f);
}

OMNIPROF_API int op_cpu_profile_write(const char *const *inputs, size_t n_inputs, FILE *out,
                                      const op_cpu_profile_options *opts, char *err, size_t errlen)
{
    return cp_profile_write_window(inputs, n_inputs, out, opts, NULL, err, errlen);
}

int cp_profile_write_window(const char *const *inputs, size_t n_inputs, FILE *out, const op_cpu_profile_options *opts,
                            const int64_t *window, char *err, size_t errlen)
{
    return cp_profile_write_set(inputs, n_inputs, NULL, out, opts, window, err, errlen);
}

int cp_profile_write_set(const char *const *inputs, size_t n_inputs, const char *only_sfx, FILE *out,
                         const op_cpu_profile_options *opts, const int64_t *window, char *err, size_t errlen)
{
    op_cpu_profile_options o = {sizeof o, OP_CPU_PROFILE_TEXT, 1, 1, 30, 0.5, 0};
    if (opts) {
        size_t sz = opts->size < sizeof o ? opts->size : sizeof o;
        memcpy(&o, opts, sz);
        o.size = sizeof o;
    }
    if (!o.max_rows) o.max_rows = 30;
    if (o.min_percent <= 0) o.min_percent = 0.5;
    if (!out || (!inputs && n_inputs)) {
        if (err && errlen) snprintf(err, errlen, "op_cpu_profile_write: NULL output or inputs");
        return 2;
    }
    cp_profile p;
    int rc = cp_profile_build_set(&p, inputs, n_inputs, only_sfx, o.clock, window, err, errlen);
    if (rc) {
        cp_profile_free(&p);
        return rc;
    }
    qsort_r(p.flat, p.n_flat, sizeof *p.flat, cmp_flat, &p);
    double tot = p.total ? (double)p.total : 1.0;
    if (o.format == OP_CPU_PROFILE_JSON) {
        fprintf(out, "{\"total_samples\": %llu, \"dropped_samples\": %llu", (unsigned long long)p.total,
                (unsigned long long)p.lost);
        if (o.flat) {
            fprintf(out, ", \"flat\": [");
            for (size_t i = 0; i < p.n_flat; i++) {
                const cp_flat *f = &p.flat[i];
                fprintf(out, "%s{\"function\": ", i ? ", " : "");
                op_json_fputs(out, CP_STR(&p, f->name));
                fprintf(out, ", \"location\": ");
                if (f->best_loc != UINT32_MAX) op_json_fputs(out, CP_STR(&p, f->best_loc));
                else fputs("null", out);
                fprintf(out, ", \"module\": ");
                if (f->module != UINT32_MAX) op_json_fputs(out, CP_STR(&p, f->module));
                else fputs("null", out);
                fprintf(out, ", \"self\": %llu, \"self_pct\": %.4f, \"total\": %llu, \"total_pct\": %.4f}",
                        (unsigned long long)f->self, 100.0 * (double)f->self / tot, (unsigned long long)f->total,
                        100.0 * (double)f->total / tot);
            }
            fputc(']', out);
        }
        if (o.tree) {
            fprintf(out, ", \"tree\": ");
            json_tree(out, &p, 0, 0);
        }
        fprintf(out, "}\n");
    } else {
        if (o.flat) {
            fprintf(out, "CPU flat profile: %llu samples", (unsigned long long)p.total);
            if (p.lost) /* sampler.c invariant (5): the ring drops stretches of time, never by place */
                fprintf(out, " (%llu more dropped in the run: a thread's sample ring was full; what was dropped "
                        "does not depend on where the program was)", (unsigned long long)p.lost);
            fputc('\n', out);
            fprintf(out, "%8s %7s %8s %7s  %-40s %-32s %s\n", "SELF", "SELF%", "TOTAL", "TOTAL%", "FUNCTION", "LOCATION",
                    "MODULE");
            for (size_t i = 0; i < p.n_flat && i < o.max_rows; i++) {
                const cp_flat *f = &p.flat[i];
                if (!f->self && i >= 10) break;
                const char *loc = f->best_loc != UINT32_MAX ? CP_STR(&p, f->best_loc) : "-";
                const char *mod = f->module != UINT32_MAX ? CP_STR(&p, f->module) : "-";
                op_buf t[3] = {{0}, {0}, {0}}; /* names as a terminal may show them (internal.h) */
                fprintf(out, "%8llu %6.2f%% %8llu %6.2f%%  %-40s %-32s %s\n", (unsigned long long)f->self,
                        100.0 * (double)f->self / tot, (unsigned long long)f->total, 100.0 * (double)f->total / tot,
                        op_term_text(&t[0], CP_STR(&p, f->name)), op_term_text(&t[1], loc), op_term_text(&t[2], mod));
                for (int k = 0; k < 3; k++) op_buf_free(&t[k]);
            }
        }
        if (o.tree) {
            fprintf(out, "%sCPU call tree: %llu samples (nodes below %.2f%% left out)\n", o.flat ? "\n" : "",
                    (unsigned long long)p.total, o.min_percent);
            fprintf(out, "%8s %7s %8s %7s  %s\n", "TOTAL", "TOTAL%", "SELF", "SELF%", "FUNCTION");
            text_tree(out, &p, 0, 0, o.min_percent);
        }
    }
    rc = ferror(out) ? 1 : 0;
    if (rc && err && errlen) snprintf(err, errlen, "writing the CPU profile failed: %s", strerror(errno));
    cp_profile_free(&p);
    return rc;
}
