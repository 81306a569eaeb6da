/* report_flame.c — flame graphs from the CPU call-stack samples (report.h): the report's flame
 * graph and flat profile (rp_cpu_profile), and the standalone SVG of `omniprof convert -f svg`
 * (op_flame_svg_write_window). Both draw the aggregated call tree of
 * profile_cpu_build.c (memory: the tree, never the samples), keeping the frames with the most
 * samples (rp_flame_select) so that the drawing stays small however deep and wide the tree. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/report.h"

/* ---- choosing the frames ------------------------------------------------------------------- */

typedef struct select_ctx {
    cp_profile *p;
    rp_flame *f;
    uint64_t min_total;
    size_t max_nodes;
    int oom;
} select_ctx;

static void select_walk(select_ctx *c, uint32_t id, uint32_t parent_at, int depth)
{
    rp_flame *f = c->f;
    size_t at = f->n++;
    f->order[at] = id;
    f->parent[at] = parent_at;
    if (depth > f->depth) f->depth = depth;
    size_t n;
    uint32_t *kids = cp_sorted_children(c->p, id, &n);
    if (n && !kids) c->oom = 1;
    for (size_t i = 0; i < n; i++) {
        const cp_node *k = &c->p->nodes[kids[i]];
        if (k->total < c->min_total || f->n >= c->max_nodes || depth >= 4096) continue;
        select_walk(c, kids[i], (uint32_t)at, depth + 1);
    }
    free(kids);
}

static int cmp_u64_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

int rp_flame_select(cp_profile *p, size_t max_nodes, rp_flame *f)
{
    memset(f, 0, sizeof *f);
    if (!p->n_nodes) return 0;
    size_t cap = p->n_nodes < max_nodes ? p->n_nodes : max_nodes;
    f->order = malloc(cap * sizeof *f->order);
    f->parent = malloc(cap * sizeof *f->parent);
    if (!f->order || !f->parent) return -1;
    uint64_t min_total = 1;
    if (p->n_nodes > max_nodes) { /* the max_nodes-th largest total: a parent's total >= its children's */
        uint64_t *t = malloc(p->n_nodes * sizeof *t);
        if (!t) return -1;
        for (size_t i = 0; i < p->n_nodes; i++) t[i] = p->nodes[i].total;
        qsort(t, p->n_nodes, sizeof *t, cmp_u64_desc);
        min_total = t[max_nodes - 1] > 1 ? t[max_nodes - 1] : 1;
        free(t);
    }
    select_ctx c = {p, f, min_total, cap, 0};
    select_walk(&c, 0, 0, 0);
    f->pruned = p->n_nodes - f->n; /* a frame left out takes its callees with it */
    return c.oom ? -1 : 0;
}

void rp_flame_free(rp_flame *f)
{
    free(f->order);
    free(f->parent);
    memset(f, 0, sizeof *f);
}

/* ---- the report's flame graph and flat profile --------------------------------------------- */

static uint64_t node_total(const cp_profile *p, uint32_t id) { return id == 0 ? p->total : p->nodes[id].total; }

/* flame: {"total", "pruned", "names": [...], "nodes": [name, parent, self, total, ...]} */
static int write_flame(cp_profile *p, op_buf *b)
{
    rp_flame f;
    op_u64map used = {0}; /* profile name id -> page name index + 1 */
    int rc = rp_flame_select(p, RP_MAX_FLAME_NODES, &f);
    uint32_t *page_name = rc ? NULL : malloc((f.n + 1) * sizeof *page_name);
    if (!page_name) rc = -1;
    op_buf_printf(b, "{\"total\":%llu,\"pruned\":%llu,\"names\":[", (unsigned long long)p->total,
                  (unsigned long long)f.pruned);
    uint32_t n_names = 0;
    for (size_t i = 0; !rc && i < f.n; i++) {
        uint32_t nm = p->nodes[f.order[i]].name;
        uint64_t v;
        if (!op_u64map_get(&used, nm, &v)) {
            const char *s = f.order[i] == 0 ? "all" : CP_STR(p, nm);
            if (n_names) op_buf_putc(b, ',');
            rp_json_str(b, s, strlen(s));
            v = ++n_names;
            if (f.order[i] != 0 && op_u64map_put(&used, nm, v)) rc = -1;
        }
        page_name[i] = (uint32_t)(v - 1);
    }
    op_buf_puts(b, "],\"nodes\":[");
    for (size_t i = 0; !rc && i < f.n; i++) {
        const cp_node *nd = &p->nodes[f.order[i]];
        op_buf_printf(b, "%s%u,%u,%llu,%llu", i ? "," : "", page_name[i], f.parent[i],
                      (unsigned long long)(f.order[i] == 0 ? 0 : nd->self),
                      (unsigned long long)node_total(p, f.order[i]));
    }
    op_buf_puts(b, "]}");
    free(page_name);
    op_u64map_free(&used);
    rp_flame_free(&f);
    return rc;
}

static int by_self(const void *a, const void *b, void *ctx)
{
    const cp_flat *f = ctx;
    const cp_flat *x = &f[*(const size_t *)a], *y = &f[*(const size_t *)b];
    if (x->self != y->self) return x->self < y->self ? 1 : -1;
    return x->total < y->total ? 1 : x->total > y->total ? -1 : 0;
}

/* flat: [[function, self, total, location, module]...] by self samples. */
static int write_flat(cp_profile *p, op_buf *b)
{
    size_t *ix = malloc((p->n_flat + 1) * sizeof *ix);
    if (!ix) return -1;
    for (size_t i = 0; i < p->n_flat; i++) ix[i] = i;
    qsort_r(ix, p->n_flat, sizeof *ix, by_self, p->flat);
    op_buf_putc(b, '[');
    for (size_t i = 0; i < p->n_flat && i < RP_MAX_FLAT; i++) {
        const cp_flat *e = &p->flat[ix[i]];
        const char *loc = e->best_loc != UINT32_MAX ? CP_STR(p, e->best_loc) : "";
        const char *mod = e->module != UINT32_MAX ? CP_STR(p, e->module) : "";
        op_buf_puts(b, i ? ",[" : "[");
        rp_json_str(b, CP_STR(p, e->name), strlen(CP_STR(p, e->name)));
        op_buf_printf(b, ",%llu,%llu,", (unsigned long long)e->self, (unsigned long long)e->total);
        rp_json_str(b, loc, strlen(loc));
        op_buf_putc(b, ',');
        rp_json_str(b, mod, strlen(mod));
        op_buf_putc(b, ']');
    }
    op_buf_putc(b, ']');
    free(ix);
    return 0;
}

int rp_cpu_profile(rp_report *r, char *err, size_t errlen)
{
    if (!op_cpu_profile_has_samples(r->inputs, r->n_inputs)) return 0;
    op_progress_stage(&r->progress, "CPU profile");
    cp_profile p;
    int rc = cp_profile_build(&p, r->inputs, r->n_inputs, 0, err, errlen);
    if (!rc && (write_flame(&p, &r->flame) || write_flat(&p, &r->flat) || r->flame.oom || r->flat.oom)) {
        op_seterr(err, errlen, "out of memory");
        rc = OP_OUT_EFAIL;
    }
    cp_profile_free(&p);
    /* the same samples under a frame per process and per thread: the page's flame graph of one
     * rank or one thread is the subtree of its frame */
    if (!rc) rc = cp_profile_build_split(&p, r->inputs, r->n_inputs, err, errlen);
    if (!rc && (write_flame(&p, &r->flame_split) || r->flame_split.oom)) {
        op_seterr(err, errlen, "out of memory");
        rc = OP_OUT_EFAIL;
    }
    cp_profile_free(&p);
    /* the samples' perf_event counters: a table per function and a flame graph weighted by each
     * (profile_cpu_counters.c); nothing when the samples carry none */
    int counters = 0;
    if (!rc)
        rc = cp_counters_buf(r->inputs, r->n_inputs, NULL, &r->cpu_counters, 1, 0, NULL, &counters,
                             err, errlen);
    char names[8][64];
    int n =
        !rc && counters ? cp_counter_names(r->inputs, r->n_inputs, NULL, names, 8, err, errlen) : 0;
    if (n < 0) rc = -n;
    for (int e = 0; !rc && e < n; e++) {
        op_buf_puts(&r->flame_counters, e ? ",\n" : "{");
        rp_json_str(&r->flame_counters, names[e], strlen(names[e]));
        op_buf_putc(&r->flame_counters, ':');
        rc = cp_profile_build_weighted(&p, r->inputs, r->n_inputs, NULL, names[e], 0, NULL, err,
                                       errlen);
        if (!rc && (write_flame(&p, &r->flame_counters) || r->flame_counters.oom)) {
            op_seterr(err, errlen, "out of memory");
            rc = OP_OUT_EFAIL;
        }
        cp_profile_free(&p);
    }
    if (n > 0) op_buf_putc(&r->flame_counters, '}');
    return rc;
}

/* ---- the standalone SVG -------------------------------------------------------------------- */

/* The SVG's script (report/flamegraph.js, embedded at build time like the report's page). */
extern const char op_flame_svg_js[];

#define SVG_W 1200
#define SVG_PAD 10
#define SVG_FRAME 16
#define SVG_TOP 44

/* XML text: valid UTF-8 kept, markup characters as entities, control bytes as spaces, bytes
 * that are not UTF-8 as "\xNN". */
static void xml_text(op_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned char ch = u[i];
        size_t l = ch < 0x80 ? 1 : op_utf8_seq_len(u + i, n - i);
        if (l == 0) {
            op_buf_printf(b, "\\x%02x", ch);
            i++;
            continue;
        }
        if (l > 1) op_buf_put(b, u + i, l);
        else if (ch == '&') op_buf_puts(b, "&amp;");
        else if (ch == '<') op_buf_puts(b, "&lt;");
        else if (ch == '>') op_buf_puts(b, "&gt;");
        else if (ch == '"') op_buf_puts(b, "&quot;");
        else if (ch < 0x20 || ch == 0x7f) op_buf_putc(b, ' ');
        else op_buf_putc(b, ch);
        i += l;
    }
}

/* A warm colour from the name (the same name, the same colour). */
static void frame_color(const char *name, int *rgb)
{
    uint64_t h = op_hash_bytes(name, strlen(name));
    rgb[0] = 205 + (int)(h % 50);
    rgb[1] = 80 + (int)((h >> 8) % 150);
    rgb[2] = 30 + (int)((h >> 16) % 50);
}

static void svg_frames(cp_profile *p, const rp_flame *f, op_buf *b, int height, const char *unit)
{
    double *x = calloc(f->n + 1, sizeof *x), *next = calloc(f->n + 1, sizeof *next);
    int *depth = calloc(f->n + 1, sizeof *depth);
    if (!x || !next || !depth) {
        b->oom = 1;
        goto out;
    }
    double scale = (double)(SVG_W - 2 * SVG_PAD) / (double)(p->total ? p->total : 1);
    for (size_t i = 0; i < f->n; i++) {
        uint32_t id = f->order[i];
        uint64_t total = node_total(p, id);
        if (i) { /* children follow each other left to right inside their parent */
            size_t pa = f->parent[i];
            depth[i] = depth[pa] + 1;
            x[i] = x[pa] + next[pa];
            next[pa] += (double)total * scale;
        }
        double w = (double)total * scale;
        if (w < 0.1) continue;
        const char *name = id == 0 ? "all" : CP_STR(p, p->nodes[id].name);
        double y = height - SVG_PAD - (depth[i] + 1) * SVG_FRAME;
        int rgb[3];
        frame_color(name, rgb);
        if (id == 0) rgb[0] = 200, rgb[1] = 200, rgb[2] = 210;
        op_buf_printf(b, "<g class=\"f\" data-x=\"%.2f\" data-w=\"%.2f\" data-d=\"%d\"><title>", x[i], w, depth[i]);
        xml_text(b, name, strlen(name));
        op_buf_printf(
            b,
            " (%llu %s, %.2f%%)</title><rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%d\" "
            "fill=\"rgb(%d,%d,%d)\" rx=\"2\"/>",
            (unsigned long long)total, unit,
            p->total ? 100.0 * (double)total / (double)p->total : 0.0, SVG_PAD + x[i], y,
            w > 0.5 ? w - 0.5 : w, SVG_FRAME - 1, rgb[0], rgb[1], rgb[2]);
        size_t fit = w > 12 ? (size_t)((w - 6) / 7) : 0, len = strlen(name);
        if (fit >= 3) {
            op_buf_printf(b, "<text x=\"%.1f\" y=\"%.0f\">", SVG_PAD + x[i] + 3, y + SVG_FRAME - 4);
            if (len <= fit) xml_text(b, name, len);
            else {
                size_t k = fit - 2; /* cut on a character boundary */
                while (k > 0 && ((unsigned char)name[k] & 0xC0) == 0x80) k--;
                xml_text(b, name, k);
                op_buf_puts(b, "..");
            }
            op_buf_puts(b, "</text>");
        }
        op_buf_puts(b, "</g>\n");
    }
out:
    free(x);
    free(next);
    free(depth);
}

int op_flame_svg_write_window(const char *const *inputs, size_t n_inputs, FILE *out, const int64_t *window, char *err,
                              size_t errlen)
{
    return op_flame_svg_write_weighted(inputs, n_inputs, out, window, NULL, err, errlen);
}

int op_flame_svg_write_weighted(const char *const *inputs, size_t n_inputs, FILE *out,
                                const int64_t *window, const char *weight, char *err, size_t errlen)
{
    cp_profile p;
    int rc = cp_profile_build_weighted(&p, inputs, n_inputs, NULL, weight, 0, window, err, errlen);
    const char *unit = weight ? weight : "samples";
    rp_flame f;
    memset(&f, 0, sizeof f);
    if (!rc && rp_flame_select(&p, 20000, &f)) rc = OP_OUT_EFAIL;
    op_buf b = {0};
    if (!rc) {
        int height = SVG_TOP + (f.depth + 1) * SVG_FRAME + 2 * SVG_PAD;
        op_buf_printf(
            &b,
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"Verdana, DejaVu Sans, sans-serif\" "
            "font-size=\"12\">\n"
            "<!-- omniprof flame graph: one frame per function on a call path, width = CPU "
            "samples; "
            "callers below callees. Hover a frame for its name and samples; in a browser, click a "
            "frame "
            "to zoom into it, Search (or Ctrl-F) to highlight a regular expression, Reset Zoom. "
            "-->\n"
            "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f8\"/>\n"
            "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">Flame "
            "graph%s%s</text>\n",
            SVG_W, height, SVG_W, height, SVG_W, height, SVG_W / 2, weight ? " weighted by " : "",
            weight ? weight : "");
        if (p.total)
            op_buf_printf(&b, "<text x=\"%d\" y=\"%d\" fill=\"#555\">%llu %s%s</text>\n", SVG_PAD,
                          SVG_TOP - 8, (unsigned long long)p.total, unit,
                          f.pruned ? " (the smallest frames are left out)" : "");
        else
            op_buf_printf(&b, "<text x=\"%d\" y=\"%d\" fill=\"#555\">no CPU call-stack samples in the inputs "
                              "(omniprof run --sample)</text>\n", SVG_PAD, SVG_TOP - 8);
        if (p.total) {
            op_buf_printf(&b, "<text id=\"reset\" x=\"%d\" y=\"24\" fill=\"#555\" style=\"cursor:pointer\" "
                              "visibility=\"hidden\">Reset Zoom</text>\n"
                              "<text id=\"search\" x=\"%d\" y=\"24\" text-anchor=\"end\" fill=\"#555\" "
                              "style=\"cursor:pointer\">Search</text>\n"
                              "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#555\"> </text>\n"
                              "<text id=\"details\" x=\"%d\" y=\"%d\" fill=\"#555\"> </text>\n",
                          SVG_PAD, SVG_W - SVG_PAD, SVG_W - SVG_PAD, SVG_TOP - 8, SVG_W / 3, SVG_TOP - 8);
            svg_frames(&p, &f, &b, height, unit);
            op_buf_printf(&b, "<script type=\"text/ecmascript\"><![CDATA[\nvar FLAME_W = %d, FLAME_PAD = %d;\n%s]]></script>\n",
                          SVG_W, SVG_PAD, op_flame_svg_js);
        }
        op_buf_puts(&b, "</svg>\n");
        if (op_buf_write(&b, out) || ferror(out)) {
            op_seterr(err, errlen, "writing the flame graph failed: %s", strerror(errno));
            rc = OP_OUT_EFAIL;
        }
    }
    op_buf_free(&b);
    rp_flame_free(&f);
    cp_profile_free(&p);
    return rc;
}
