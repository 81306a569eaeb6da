/* render.c — an analysis on the console and as JSON (schema "omniprof-analyze", version
 * AN_SCHEMA_VERSION; docs/analyze.md, "JSON"). The console's first lines say what to fix: the
 * findings ranked by predicted gain, then the what-if, then the critical path's shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "common/alloc.h"
#include "common/escape.h"

#define K_FUNCTION AN_KINDS
#define K_LATENCY (AN_KINDS + 1)

static void breakdown(FILE *out, const an_graph *g, int json);

static const char *kind_label(int k)
{
    if (k == K_FUNCTION) return "function";
    if (k == K_LATENCY) return "latency";
    if (k >= 0 && k < AN_KINDS) return an_kind_name[k];
    return "other";
}

const char *an_node_label(const an_graph *g, uint32_t node, char *buf, size_t len)
{
    const an_node *n = &g->nodes[node];
    snprintf(buf, len, "%s %s", an_kind_name[n->kind], op_strtab_str(&g->names, n->name));
    return buf;
}

static double pc(int64_t a, int64_t b)
{
    return b > 0 ? 100.0 * (double)a / (double)b : 0;
}

static void counts(const an_graph *g, size_t *threads, size_t *streams)
{
    *threads = *streams = 0;
    for (size_t l = 0; l < g->n_lanes; l++) {
        if (!g->lanes[l].n) continue;
        if (g->lanes[l].gpu)
            (*streams)++;
        else
            (*threads)++;
    }
}

static void print_findings(FILE *out, const an_finding *f, size_t n, size_t top)
{
    for (size_t i = 0; i < n && i < top; i++) {
        fprintf(out, "  %zu. [%5.1f %%] %s\n", i + 1, f[i].gain_pct, f[i].title);
        fprintf(out, "       evidence: %s\n", f[i].evidence);
        fprintf(out, "       advice:   %s\n", f[i].advice);
        fprintf(out, "       what-if:  %s -> %.3f s faster\n", f[i].whatif,
                (double)f[i].gain_ns / 1e9);
    }
}

void an_print_console(FILE *out, const an_graph *g, const an_options *o, const an_report *r)
{
    size_t th, st;
    counts(g, &th, &st);
    size_t top = o->top > 0 ? (size_t)o->top : 10;
    fprintf(out,
            "omniprof analyze: %zu process%s, %zu thread%s, %zu GPU stream%s; wall time %.3f s\n",
            g->n_processes, g->n_processes == 1 ? "" : "es", th, th == 1 ? "" : "s", st,
            st == 1 ? "" : "s", (double)r->wall / 1e9);
    fprintf(out, "\nWhat to fix (ranked by predicted gain of wall time):\n");
    if (!r->n_findings)
        fprintf(out, "  nothing: no problem found would gain %.0f %% or more\n",
                AN_FINDING_MIN_PCT);
    print_findings(out, r->findings, r->n_findings, top);
    if (o->n_whatifs) {
        fprintf(out, "\nWhat-if");
        for (size_t i = 0; i < o->n_whatifs; i++) fprintf(out, " %s", o->whatifs[i].text);
        fprintf(out, ":\n  predicted wall time %.3f s (recorded %.3f s): gain %.3f s = %.1f %%\n",
                (double)r->predicted / 1e9, (double)r->wall / 1e9,
                (double)(r->wall - r->predicted) / 1e9, pc(r->wall - r->predicted, r->wall));
    }
    int64_t path_ns = r->path.t1 - r->path.t0;
    fprintf(out, "\nCritical path (%.3f s%s): share of wall time\n", (double)path_ns / 1e9,
            o->win1 ? ", in the window" : "");
    for (size_t i = 0; i < r->n_path_items && i < top; i++) {
        const an_item *it = &r->path_items[i];
        fprintf(out, "  %5.1f %%  %9.3f s  %-9s %.70s\n", pc(it->ns, path_ns), (double)it->ns / 1e9,
                kind_label(it->kind), op_strtab_str(&g->names, it->name));
    }
    if (r->n_path_funcs) {
        fprintf(out, "\nCPU functions on the critical path (from call-stack samples):\n");
        for (size_t i = 0; i < r->n_path_funcs && i < top; i++)
            fprintf(out, "  %5.1f %%  %9.3f s  %.80s\n", pc(r->path_funcs[i].ns, path_ns),
                    (double)r->path_funcs[i].ns / 1e9,
                    op_strtab_str(&g->names, r->path_funcs[i].name));
    }
    if (r->n_iters) {
        int64_t sum = 0, psum = 0, mx = 0;
        for (size_t i = 0; i < r->n_iters; i++) {
            int64_t d = r->iters[i].end - r->iters[i].start;
            sum += d;
            psum += r->iters[i].pend - r->iters[i].pstart;
            if (d > mx) mx = d;
        }
        fprintf(out, "\nIterations ('%s'): %zu, mean %.3f ms, max %.3f ms", o->iteration,
                r->n_iters, (double)sum / (double)r->n_iters / 1e6, (double)mx / 1e6);
        if (o->n_whatifs)
            fprintf(out, "; what-if mean %.3f ms (%.1f %% faster)",
                    (double)psum / (double)r->n_iters / 1e6, pc(sum - psum, sum));
        fputc('\n', out);
    }
    if (r->n_hot) {
        fprintf(out, "\nHot spots (gain if 2x faster):\n");
        for (size_t i = 0; i < r->n_hot && i < top; i++)
            fprintf(out, "  [%5.1f %%] %-60.60s %s\n", r->hot[i].gain_pct, r->hot[i].title,
                    r->hot[i].evidence);
    }
    if (r->n_minor) {
        fprintf(out, "\nNot worth fixing (predicted gain under %.0f %%):\n", AN_FINDING_MIN_PCT);
        for (size_t i = 0; i < r->n_minor && i < top; i++)
            fprintf(out, "  [%5.1f %%] %s\n", r->minor[i].gain_pct, r->minor[i].title);
    }
    breakdown(out, g, 0);
    if (g->dropped_edges)
        fprintf(out, "\nnote: %llu events ordered by time (their clocks contradict the edges)\n",
                (unsigned long long)g->dropped_edges);
    if (g->untimed_ops)
        fprintf(out, "note: %llu GPU operations without timestamps (start 0) are left out\n",
                (unsigned long long)g->untimed_ops);
}

/* Per process: host compute (non-wait host work), MPI/communication, GPU waits and joins; per
 * stream: kernel, copy time, idle inside its busy span, overlap with the process's other streams
 * is not computed; kernel count and median duration. Recorded times. */
typedef struct an_brk {
    int64_t compute, comm, gpu_wait, sync;
} an_brk;

static int cmp_i64r(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void breakdown(FILE *out, const an_graph *g, int json)
{
    if (json)
        fputs(",\n  \"breakdown\": {\"processes\": [", out);
    else
        fputs("\nBreakdown per process (host) and per GPU stream:\n", out);
    for (size_t p = 0; p < g->n_processes; p++) {
        an_brk b = {0, 0, 0, 0};
        int64_t pid = -1;
        int rank = -1;
        for (size_t l = 0; l < g->n_lanes; l++) {
            const an_lane *L = &g->lanes[l];
            if (L->gpu || L->process != p) continue;
            pid = L->pid;
            rank = L->rank;
            for (uint32_t i = L->first; i < L->first + L->n; i++) {
                const an_node *n = &g->nodes[i];
                int64_t d = n->end - n->start;
                if (n->kind == AN_MPI || n->kind == AN_MPIWAIT)
                    b.comm += d;
                else if (n->kind == AN_GPUWAIT)
                    b.gpu_wait += d;
                else if (n->kind == AN_JOIN)
                    b.sync += d;
                else
                    b.compute += d;
            }
        }
        if (pid < 0) continue;
        if (json)
            fprintf(out,
                    "%s\n    {\"process\": %zu, \"pid\": %lld, \"rank\": %d, \"compute_ns\": %lld, "
                    "\"communication_ns\": %lld, \"gpu_wait_ns\": %lld, \"thread_wait_ns\": %lld}",
                    p ? "," : "", p, (long long)pid, rank, (long long)b.compute, (long long)b.comm,
                    (long long)b.gpu_wait, (long long)b.sync);
        else {
            char rk[32] = "";
            if (rank >= 0) snprintf(rk, sizeof rk, " rank %d", rank);
            fprintf(
                out,
                "  process %lld%s: compute %.3f s, communication %.3f s, GPU waits %.3f s, thread "
                "waits %.3f s (thread time)\n",
                (long long)pid, rk, (double)b.compute / 1e9, (double)b.comm / 1e9,
                (double)b.gpu_wait / 1e9, (double)b.sync / 1e9);
        }
    }
    if (json) fputs("],\n    \"streams\": [", out);
    int first = 1;
    for (size_t l = 0; l < g->n_lanes; l++) {
        const an_lane *L = &g->lanes[l];
        if (!L->gpu || !L->n) continue;
        int64_t k = 0, c = 0, nk = 0, lo = g->nodes[L->first].start,
                hi = g->nodes[L->first + L->n - 1].end;
        int64_t *d = malloc(L->n * sizeof *d);
        for (uint32_t i = L->first; i < L->first + L->n; i++) {
            const an_node *n = &g->nodes[i];
            if (n->kind == AN_KERNEL) {
                k += n->end - n->start;
                if (d) d[nk] = n->end - n->start;
                nk++;
            } else
                c += n->end - n->start;
            if (n->end > hi) hi = n->end;
        }
        int64_t med = 0;
        if (d && nk) {
            an_qsort(d, (size_t)nk, sizeof *d, cmp_i64r);
            med = d[nk / 2];
        }
        free(d);
        int64_t idle = hi - lo - k - c;
        if (idle < 0) idle = 0;
        if (json)
            fprintf(out,
                    "%s\n    {\"pid\": %lld, \"rank\": %d, \"device\": %lld, \"stream\": %lld, "
                    "\"kernel_ns\": %lld, "
                    "\"copy_ns\": %lld, \"idle_ns\": %lld, \"span_ns\": %lld, \"kernels\": %lld, "
                    "\"kernel_median_ns\": %lld}",
                    first ? "" : ",", (long long)L->pid, L->rank, (long long)L->device,
                    (long long)L->tid, (long long)k, (long long)c, (long long)idle,
                    (long long)(hi - lo), (long long)nk, (long long)med);
        else
            fprintf(out,
                    "  GPU %lld stream %lld (pid %lld): kernels %.3f s (%lld, median %.1f us), "
                    "copies %.3f s, "
                    "idle %.3f s of %.3f s\n",
                    (long long)L->device, (long long)L->tid, (long long)L->pid, (double)k / 1e9,
                    (long long)nk, (double)med / 1e3, (double)c / 1e9, (double)idle / 1e9,
                    (double)(hi - lo) / 1e9);
        first = 0;
    }
    if (json) fputs("],\n    \"gpus\": [", out);
    /* per GPU and process: communication beside computation, copies beside kernels */
    an_gpu_overlap *ov = NULL;
    size_t n_ov = 0;
    if (an_overlap(g, &ov, &n_ov) != 0) n_ov = 0;
    for (size_t i = 0; i < n_ov; i++) {
        const an_gpu_overlap *o = &ov[i];
        double pc_comm = an_overlap_pct(o->comm_overlap_ns, o->comm_ns);
        double pc_copy = an_overlap_pct(o->copy_overlap_ns, o->copy_ns);
        if (json) {
            fprintf(out,
                    "%s\n    {\"process\": %u, \"pid\": %lld, \"rank\": %d, \"device\": %lld, "
                    "\"streams\": %u, \"compute_ns\": %lld, \"communication_ns\": %lld, "
                    "\"copy_ns\": %lld, \"busy_ns\": %lld, \"comm_overlap_ns\": %lld, "
                    "\"copy_overlap_ns\": %lld, ",
                    i ? "," : "", o->process, (long long)o->pid, o->rank, (long long)o->device,
                    o->streams, (long long)o->compute_ns, (long long)o->comm_ns,
                    (long long)o->copy_ns, (long long)o->busy_ns, (long long)o->comm_overlap_ns,
                    (long long)o->copy_overlap_ns);
            if (pc_comm < 0)
                fputs("\"comm_overlap_pct\": null, ", out);
            else
                fprintf(out, "\"comm_overlap_pct\": %.3f, ", pc_comm);
            if (pc_copy < 0)
                fputs("\"copy_overlap_pct\": null}", out);
            else
                fprintf(out, "\"copy_overlap_pct\": %.3f}", pc_copy);
            continue;
        }
        char rk[32] = "", a[64] = "no communication kernels", b[64] = "no copies";
        if (o->rank >= 0) snprintf(rk, sizeof rk, " rank %d", o->rank);
        if (pc_comm >= 0)
            snprintf(a, sizeof a, "communication %.3f s, %.1f %% beside computation",
                     (double)o->comm_ns / 1e9, pc_comm);
        if (pc_copy >= 0)
            snprintf(b, sizeof b, "copies %.3f s, %.1f %% beside kernels",
                     (double)o->copy_ns / 1e9, pc_copy);
        fprintf(out, "  GPU %lld (pid %lld%s): compute %.3f s; %s; %s\n", (long long)o->device,
                (long long)o->pid, rk, (double)o->compute_ns / 1e9, a, b);
    }
    op_free(ov);
    if (json) fputs("]}", out);
}

static void json_findings(FILE *out, const char *key, const an_finding *f, size_t n)
{
    fprintf(out, ",\n  \"%s\": [", key);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%s\n    {\"rule\": ", i ? "," : "");
        op_json_fputs(out, f[i].rule);
        fputs(", \"title\": ", out);
        op_json_fputs(out, f[i].title);
        fprintf(out, ", \"gain_pct\": %.3f, \"gain_ns\": %lld, \"evidence\": ", f[i].gain_pct,
                (long long)f[i].gain_ns);
        op_json_fputs(out, f[i].evidence);
        fputs(", \"advice\": ", out);
        op_json_fputs(out, f[i].advice);
        fputs(", \"what_if\": ", out);
        op_json_fputs(out, f[i].whatif);
        fputc('}', out);
    }
    fputs(n ? "\n  ]" : "]", out);
}

void an_print_json(FILE *out, const an_graph *g, const an_options *o, const an_report *r,
                   const char *const *inputs, size_t n_inputs)
{
    size_t th, st;
    counts(g, &th, &st);
    fprintf(out,
            "{\n  \"schema\": \"omniprof-analyze\",\n  \"version\": %d,\n  \"minor\": %d,\n"
            "  \"inputs\": [",
            AN_SCHEMA_VERSION, AN_SCHEMA_MINOR);
    for (size_t i = 0; i < n_inputs; i++) {
        if (i) fputs(", ", out);
        op_json_fputs(out, inputs[i]);
    }
    fprintf(
        out,
        "],\n  \"run\": {\"start_ns\": %lld, \"end_ns\": %lld, \"wall_ns\": %lld, \"processes\": "
        "%zu, "
        "\"threads\": %zu, \"streams\": %zu, \"nodes\": %zu, \"edges\": %zu, \"rows_read\": %llu, "
        "\"gpu_ops_untimed\": %llu}",
        (long long)g->t_begin, (long long)(g->t_begin + r->wall), (long long)r->wall,
        g->n_processes, th, st, g->n_nodes, an_edge_count(g), (unsigned long long)g->n_events_read,
        (unsigned long long)g->untimed_ops);
    int64_t path_ns = r->path.t1 - r->path.t0;
    fprintf(out, ",\n  \"critical_path\": {\"start_ns\": %lld, \"end_ns\": %lld, \"items\": [",
            (long long)r->path.t0, (long long)r->path.t1);
    for (size_t i = 0; i < r->n_path_items; i++) {
        const an_item *it = &r->path_items[i];
        fprintf(out, "%s\n    {\"kind\": \"%s\", \"name\": ", i ? "," : "", kind_label(it->kind));
        op_json_fputs(out, op_strtab_str(&g->names, it->name));
        fprintf(out, ", \"ns\": %lld, \"share\": %.6f}", (long long)it->ns,
                path_ns > 0 ? (double)it->ns / (double)path_ns : 0);
    }
    fputs("],\n    \"functions\": [", out);
    for (size_t i = 0; i < r->n_path_funcs; i++) {
        fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
        op_json_fputs(out, op_strtab_str(&g->names, r->path_funcs[i].name));
        fprintf(out, ", \"ns\": %lld, \"share\": %.6f}", (long long)r->path_funcs[i].ns,
                path_ns > 0 ? (double)r->path_funcs[i].ns / (double)path_ns : 0);
    }
    fputs("],\n    \"segments\": [", out);
    /* merged runs of one node; at most 10,000 (the longest kept in order) */
    size_t shown = 0;
    for (size_t i = 0; i < r->path.n && shown < 10000; i++) {
        const an_seg *s = &r->path.segs[i];
        const an_node *n = &g->nodes[s->node];
        const an_lane *L = &g->lanes[n->lane];
        fprintf(out, "%s\n      [%lld, %lld, \"%s\", ", shown ? "," : "", (long long)s->t0,
                (long long)s->t1,
                s->edge == AE_LAUNCH ? "latency"
                : s->edge == 255     ? "queue"
                                     : an_kind_name[n->kind]);
        op_json_fputs(out, op_strtab_str(&g->names, n->name));
        fprintf(out, ", %lld, %lld, %d, %d]", (long long)L->pid, (long long)L->tid, L->gpu,
                L->rank);
        shown++;
    }
    fprintf(out, "%s],\n    \"segments_total\": %zu}", shown ? "\n    " : "", r->path.n);
    fputs(",\n  \"what_if\": {\"rules\": [", out);
    for (size_t i = 0; i < o->n_whatifs; i++) {
        if (i) fputs(", ", out);
        op_json_fputs(out, o->whatifs[i].text);
    }
    fprintf(out, "], \"predicted_wall_ns\": %lld, \"gain_ns\": %lld, \"gain_pct\": %.4f}",
            (long long)r->predicted, (long long)(r->wall - r->predicted),
            pc(r->wall - r->predicted, r->wall));
    fputs(",\n  \"iterations\": {\"range\": ", out);
    op_json_fputs(out, o->iteration ? o->iteration : "");
    fputs(", \"items\": [", out);
    for (size_t i = 0; i < r->n_iters; i++)
        fprintf(out,
                "%s\n    {\"index\": %zu, \"start_ns\": %lld, \"wall_ns\": %lld, \"predicted_ns\": "
                "%lld}",
                i ? "," : "", i, (long long)r->iters[i].start,
                (long long)(r->iters[i].end - r->iters[i].start),
                (long long)(r->iters[i].pend - r->iters[i].pstart));
    fputs(r->n_iters ? "\n  ]}" : "]}", out);
    json_findings(out, "findings", r->findings, r->n_findings);
    json_findings(out, "not_worth_fixing", r->minor, r->n_minor);
    json_findings(out, "hot_spots", r->hot, r->n_hot);
    breakdown(out, g, 1);
    fputs("\n}\n", out);
}
