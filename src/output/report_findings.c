/* report_findings.c — the report's findings section and its critical path (report.h): the
 * analysis of `omniprof analyze` (src/analyze) over the report's inputs, as two parts of the
 * page's data (docs/report.md, docs/analyze.md):
 *   "findings":      {"wall_ns", "items": [{rule, title, gain_pct, evidence, advice}],
 *                     "not_worth_fixing": [...], "hot_spots": [...],
 *                     "gpu_overlap": [{pid, rank, device, compute_ns, communication_ns,
 *                     comm_overlap_pct, copy_ns, copy_overlap_pct}] (per GPU and process;
 *                     a percentage is null where there is nothing to overlap)},
 *                    or {"error": text}
 *   "critical_path": {"t0", "segments": [[start, end, label], ...]}: the path's pieces in ns
 *                    from the page's t0 (the timeline's origin), adjacent pieces of one label
 *                    merged, at most RP_PATH_SEGMENTS (shorter pieces fold into their
 *                    neighbours), for the timeline to draw.
 * The analysis never fails the report: a failure leaves its message in "findings". */
#include <stdio.h>
#include <string.h>

#include "analyze/analyze.h"
#include "common/alloc.h"
#include "db/reader.h"
#include "output/report.h"

#define RP_PATH_SEGMENTS 5000

static void findings_list(op_buf *b, const char *key, const an_finding *f, size_t n)
{
    op_buf_printf(b, ",\"%s\":[", key);
    for (size_t i = 0; i < n && i < 50; i++) {
        op_buf_puts(b, i ? ",{\"rule\":" : "{\"rule\":");
        rp_json_str(b, f[i].rule, strlen(f[i].rule));
        op_buf_puts(b, ",\"title\":");
        rp_json_str(b, f[i].title, strlen(f[i].title));
        op_buf_puts(b, ",\"gain_pct\":");
        rp_json_num(b, f[i].gain_pct);
        op_buf_puts(b, ",\"evidence\":");
        rp_json_str(b, f[i].evidence, strlen(f[i].evidence));
        op_buf_puts(b, ",\"advice\":");
        rp_json_str(b, f[i].advice, strlen(f[i].advice));
        op_buf_putc(b, '}');
    }
    op_buf_putc(b, ']');
}

static void pct_or_null(op_buf *b, int64_t part, int64_t whole)
{
    double p = an_overlap_pct(part, whole);
    if (p < 0)
        op_buf_puts(b, "null");
    else
        rp_json_num(b, p);
}

/* Per GPU and process: communication beside computation, copies beside kernels (overlap.c). */
static void overlap_list(op_buf *b, const an_graph *g)
{
    an_gpu_overlap *ov = NULL;
    size_t n = 0;
    if (an_overlap(g, &ov, &n) != 0) n = 0;
    op_buf_puts(b, ",\"gpu_overlap\":[");
    for (size_t i = 0; i < n && i < 1000; i++) {
        const an_gpu_overlap *o = &ov[i];
        op_buf_printf(b,
                      "%s{\"pid\":%lld,\"rank\":%d,\"device\":%lld,\"compute_ns\":%lld,"
                      "\"communication_ns\":%lld,\"copy_ns\":%lld,\"comm_overlap_pct\":",
                      i ? "," : "", (long long)o->pid, o->rank, (long long)o->device,
                      (long long)o->compute_ns, (long long)o->comm_ns, (long long)o->copy_ns);
        pct_or_null(b, o->comm_overlap_ns, o->comm_ns);
        op_buf_puts(b, ",\"copy_overlap_pct\":");
        pct_or_null(b, o->copy_overlap_ns, o->copy_ns);
        op_buf_putc(b, '}');
    }
    op_buf_putc(b, ']');
    op_free(ov);
}

/* The report stays within its memory bounds (report.h): the graph holds every event, so beyond
 * RP_ANALYZE_MAX_EVENTS the section says to run `omniprof analyze` instead. */
#define RP_ANALYZE_MAX_EVENTS 2000000

static int64_t count_events(rp_report *r)
{
    int64_t n = 0;
    for (size_t i = 0; i < r->n_inputs; i++) {
        op_src *src = NULL;
        char err[256];
        if (op_src_open(r->inputs[i], &src, err, sizeof err) != OP_RD_OK) continue;
        for (size_t k = 0; k < src->n_sets; k++) {
            n += op_rd_count(src, &src->sets[k], EV_REGION, NULL);
            n += op_rd_count(src, &src->sets[k], EV_KERNEL, NULL);
            n += op_rd_count(src, &src->sets[k], EV_COPY, NULL);
        }
        op_src_close(src);
    }
    return n;
}

void rp_findings(rp_report *r)
{
    char err[512] = "";
    int64_t n_events = count_events(r);
    if (n_events > RP_ANALYZE_MAX_EVENTS) {
        snprintf(err, sizeof err,
                 "%lld events: more than the report analyzes (%d); run omniprof analyze -i ...",
                 (long long)n_events, RP_ANALYZE_MAX_EVENTS);
        op_buf_puts(&r->findings, "{\"error\":");
        rp_json_str(&r->findings, err, strlen(err));
        op_buf_putc(&r->findings, '}');
        return;
    }
    an_graph *g = NULL;
    an_report a;
    memset(&a, 0, sizeof a);
    an_options o;
    memset(&o, 0, sizeof o);
    if (an_graph_load(r->inputs, r->n_inputs, &g, err, sizeof err) != 0 ||
        an_analyze(g, &o, &a, err, sizeof err) != 0) {
        op_buf_puts(&r->findings, "{\"error\":");
        rp_json_str(&r->findings, err, strlen(err));
        op_buf_putc(&r->findings, '}');
        an_report_free(&a);
        an_graph_free(g);
        return;
    }
    op_buf_printf(&r->findings, "{\"wall_ns\":%lld", (long long)a.wall);
    findings_list(&r->findings, "items", a.findings, a.n_findings);
    findings_list(&r->findings, "not_worth_fixing", a.minor, a.n_minor);
    findings_list(&r->findings, "hot_spots", a.hot, a.n_hot);
    overlap_list(&r->findings, g);
    op_buf_putc(&r->findings, '}');

    op_buf *b = &r->critical_path;
    op_buf_printf(b, "{\"t0\":%lld,\"segments\":[", (long long)r->t0);
    int64_t span = a.path.t1 - a.path.t0, min_len = span / RP_PATH_SEGMENTS;
    size_t shown = 0;
    char label[300], cur[300] = "";
    int64_t s0 = 0, s1 = 0;
    for (size_t i = 0; i <= a.path.n; i++) {
        if (i < a.path.n) {
            const an_seg *s = &a.path.segs[i];
            if (s->edge == AE_LAUNCH)
                snprintf(label, sizeof label, "launch latency");
            else if (s->edge == 255)
                snprintf(label, sizeof label, "GPU queueing");
            else
                an_node_label(g, s->node, label, sizeof label);
            if (cur[0] && (!strcmp(label, cur) || s->t1 - s->t0 < min_len) && s->t0 <= s1) {
                s1 = s->t1;
                continue;
            }
        }
        if (cur[0]) {
            op_buf_printf(b, "%s[%lld,%lld,", shown ? "," : "", (long long)(s0 - r->t0),
                          (long long)(s1 - r->t0));
            rp_json_str(b, cur, strlen(cur));
            op_buf_putc(b, ']');
            shown++;
        }
        if (i < a.path.n) {
            snprintf(cur, sizeof cur, "%s", label);
            s0 = a.path.segs[i].t0;
            s1 = a.path.segs[i].t1;
        }
    }
    op_buf_puts(b, "]}");
    an_report_free(&a);
    an_graph_free(g);
}
