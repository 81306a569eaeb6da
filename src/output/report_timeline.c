/* report_timeline.c — the report's timeline (report.h): one lane per (process, thread, region
 * category), per (process, thread) of CPU samples and per (process, stream) of kernels and of
 * copies. Each lane keeps `bins` equal bins over the run's extent, holding the time its events
 * cover in each bin (an event spread over the bins it spans) or its sample count, and its
 * longest events in a min-heap of fixed size, named once the set's rows are read.
 *
 * Rows come from op_rd_report_spans (reader_report.c), one table of one set at a time, in row
 * order. Memory: lanes x bins floats and lanes x heap-size spans, both fixed up front from the
 * number of threads (report.h's budgets).
 *
 * Event level: each lane also keeps its events (start, duration, name, correlation id, bytes,
 * MPI message), RP_EVENT_BUDGET in all: past the budget the lanes with the most events give
 * theirs up (the page then draws those lanes from their bins and longest spans). The page gets
 * them sorted by start with their nesting depth, as columns of unsigned LEB128 varints in one
 * base64 string per lane (docs/report.md, "The data in the page"), and the MPI messages as
 * pairs of (lane, event) — the keys of reader_mpi.c, so that the unmerged databases of two
 * ranks pair their send and receive as a merged one does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "db/reader_report.h"
#include "output/report.h"

typedef struct tl_span {
    int64_t start, dur;
    int64_t name;      /* set-local name id until resolved, then the index in tl.names */
} tl_span;

/* One event kept for the page (start: ns from the run's t0). */
typedef struct tl_ev {
    int64_t start, dur, name, corr, bytes;
    uint32_t flow; /* MPI messages: its index in the lane before sorting + 1, 0: none */
} tl_ev;

/* An MPI message end: the key both ranks compute (reader_mpi.c), its lane and event (its index
 * in the lane: before sorting, then after). */
typedef struct tl_flow {
    uint64_t key;
    size_t lane;
    uint32_t ev;
    int out;
} tl_flow;

typedef struct tl_lane {
    size_t set, proc;
    int table;
    int64_t lane, group;
    int64_t agent;     /* kernels, copies: the agent row of the lane's first event */
    float *busy;       /* ns covered (or samples) per bin */
    double sum;        /* ns covered (or samples) in all */
    tl_span *heap;     /* the longest events: a min-heap on dur */
    size_t n_heap;
    char *label, *kind;
    tl_ev *ev;         /* every event, while the budget holds (no_ev: given up) */
    size_t n_ev, cap_ev;
    int no_ev, has_corr, has_bytes;
} tl_lane;

typedef struct tl_ctx {
    rp_report *r;
    int bins;
    size_t heap_cap;
    double bin_ns;
    tl_lane *lanes;
    size_t n_lanes, cap_lanes;
    op_u64map index;   /* hash(set, table, lane, group) -> lane + 1 (probing on collisions) */
    size_t last;       /* the previous row's lane + 1 (rows of one lane come in runs) */
    op_strtab names;
    size_t n_ev;       /* events kept in all lanes */
    tl_flow *flows;
    size_t n_flows, cap_flows;
    /* the set being read */
    size_t set;
    const op_rd_clock_map *clock; /* its times onto the reference clock (rp_set_clock) */
    int table;
    int oom;
} tl_ctx;

static uint64_t lane_hash(size_t set, int table, int64_t lane, int64_t group)
{
    return op_hash64x3(((uint64_t)set << 8) | (uint64_t)table, (uint64_t)lane, (uint64_t)group);
}

static int lane_is(const tl_lane *l, size_t set, int table, int64_t lane, int64_t group)
{
    return l->set == set && l->table == table && l->lane == lane && l->group == group;
}

static tl_lane *lane_get(tl_ctx *c, int64_t lane, int64_t group, int64_t agent)
{
    if (c->last && lane_is(&c->lanes[c->last - 1], c->set, c->table, lane, group)) return &c->lanes[c->last - 1];
    uint64_t h = lane_hash(c->set, c->table, lane, group), v;
    for (;; h = op_hash64x3(h, 1, 1)) {
        if (!op_u64map_get(&c->index, h, &v)) break;
        if (lane_is(&c->lanes[v - 1], c->set, c->table, lane, group)) {
            c->last = v;
            return &c->lanes[v - 1];
        }
    }
    if (op_grow(&c->lanes, &c->cap_lanes, c->n_lanes + 1, sizeof *c->lanes)) return NULL;
    tl_lane *l = &c->lanes[c->n_lanes];
    memset(l, 0, sizeof *l);
    l->set = c->set;
    l->table = c->table;
    l->lane = lane;
    l->group = group;
    l->agent = agent;
    l->busy = calloc((size_t)c->bins, sizeof *l->busy);
    l->heap = c->table == T_OP_CPU_SAMPLE ? NULL : malloc(c->heap_cap * sizeof *l->heap);
    if (!l->busy || (c->table != T_OP_CPU_SAMPLE && !l->heap) || op_u64map_put(&c->index, h, c->n_lanes + 1)) {
        free(l->busy);
        free(l->heap);
        return NULL;
    }
    c->last = ++c->n_lanes;
    return l;
}

/* Keeps the heap_cap longest events: a min-heap on duration. */
static void heap_offer(tl_lane *l, size_t cap, int64_t start, int64_t dur, int64_t name)
{
    tl_span s = {start, dur, name};
    size_t i;
    if (l->n_heap < cap) {
        i = l->n_heap++;
        while (i > 0 && l->heap[(i - 1) / 2].dur > dur) {
            l->heap[i] = l->heap[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        l->heap[i] = s;
        return;
    }
    if (dur <= l->heap[0].dur) return;
    i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= l->n_heap) break;
        if (k + 1 < l->n_heap && l->heap[k + 1].dur < l->heap[k].dur) k++;
        if (l->heap[k].dur >= dur) break;
        l->heap[i] = l->heap[k];
        i = k;
    }
    l->heap[i] = s;
}

/* Gives up the events of the lane that holds the most (it keeps its bins and longest spans). */
static void drop_largest(tl_ctx *c)
{
    tl_lane *big = NULL;
    for (size_t i = 0; i < c->n_lanes; i++)
        if (!c->lanes[i].no_ev && (!big || c->lanes[i].n_ev > big->n_ev)) big = &c->lanes[i];
    if (!big) return;
    c->n_ev -= big->n_ev;
    for (size_t i = 0; i < c->n_flows; i++)
        if (c->flows[i].lane == (size_t)(big - c->lanes)) c->flows[i].key = 0; /* that end is gone */
    free(big->ev);
    big->ev = NULL;
    big->n_ev = big->cap_ev = 0;
    big->no_ev = 1;
}

/* Keeps one event of lane l (0, or -1 out of memory). Collecting stops at 1.25 budgets: the
 * largest lane gives its events up, so that memory stays bounded whatever the input. */
static int keep_event(tl_ctx *c, tl_lane *l, const op_rd_span *s)
{
    if (l->no_ev) return 0;
    if (c->n_ev >= RP_EVENT_BUDGET + RP_EVENT_BUDGET / 4) {
        drop_largest(c);
        if (l->no_ev) return 0;
    }
    if (op_grow(&l->ev, &l->cap_ev, l->n_ev + 1, sizeof *l->ev)) return -1;
    tl_ev *e = &l->ev[l->n_ev];
    e->start = s->start - c->r->t0;
    e->dur = s->end > s->start ? s->end - s->start : 0;
    e->name = s->name;
    e->corr = s->corr;
    e->bytes = s->bytes;
    e->flow = 0;
    if (s->corr) l->has_corr = 1;
    if (s->bytes) l->has_bytes = 1;
    const unsigned char *p = s->mpi_flows, *end = p ? p + s->mpi_flows_len : NULL;
    int out;
    uint64_t key;
    /* every message of the call (a Waitall completes several receives) */
    while (p && (p = op_rd_mpi_flow_next(p, end, &out, &key)) != NULL) {
        if (op_grow(&c->flows, &c->cap_flows, c->n_flows + 1, sizeof *c->flows)) return -1;
        c->flows[c->n_flows++] = (tl_flow){key ? key : 1, (size_t)(l - c->lanes), (uint32_t)l->n_ev, out};
        e->flow = (uint32_t)l->n_ev + 1;
    }
    l->n_ev++;
    c->n_ev++;
    return 0;
}

static int on_span(const op_rd_span *raw, void *arg)
{
    tl_ctx *c = arg;
    /* a kernel or copy CUPTI gave no start (0) has no place on the timeline */
    if ((c->table == T_KERNEL_DISPATCH || c->table == T_MEMORY_COPY) && raw->start <= 0) return 0;
    op_rd_span moved = *raw;
    moved.start = op_rd_clock_apply(c->clock, raw->start);
    moved.end = op_rd_clock_apply(c->clock, raw->end);
    const op_rd_span *s = &moved;
    int gpu = c->table == T_KERNEL_DISPATCH || c->table == T_MEMORY_COPY; /* group: the category, or for GPU lanes the agent */
    tl_lane *l = lane_get(c, s->lane, gpu ? 0 : s->group, gpu ? s->group : 0);
    if (!l) {
        c->oom = 1;
        return OP_OUT_EFAIL;
    }
    if (keep_event(c, l, s)) {
        c->oom = 1;
        return OP_OUT_EFAIL;
    }
    double x0 = (double)(s->start - c->r->t0) / c->bin_ns;
    int i0 = (int)floor(x0);
    if (c->table == T_OP_CPU_SAMPLE) {
        if (i0 >= c->bins) i0 = c->bins - 1;
        if (i0 >= 0) l->busy[i0] += 1;
        l->sum += 1;
        return 0;
    }
    if (s->end <= s->start) return 0;
    double x1 = (double)(s->end - c->r->t0) / c->bin_ns;
    int i1 = (int)floor(x1);
    if (i0 < 0) {
        i0 = 0;
        x0 = 0;
    }
    if (i1 >= c->bins) {
        i1 = c->bins - 1;
        x1 = c->bins;
    }
    if (i0 == i1) {
        l->busy[i0] += (float)(s->end - s->start);
    } else if (i0 < i1) {
        l->busy[i0] += (float)((i0 + 1 - x0) * c->bin_ns);
        for (int i = i0 + 1; i < i1; i++) l->busy[i] += (float)c->bin_ns;
        l->busy[i1] += (float)((x1 - i1) * c->bin_ns);
    }
    l->sum += (double)(s->end - s->start);
    heap_offer(l, c->heap_cap, s->start - c->r->t0, s->end - s->start, s->name);
    return 0;
}

/* ---- labels and names of the set's lanes --------------------------------------------------- */

typedef struct thread_label {
    int64_t row, tid, process_row;
    char name[64];
} thread_label;

typedef struct threads_ctx {
    thread_label *v;
    size_t n, cap;
    op_u64map by_row; /* thread row -> index + 1 */
} threads_ctx;

static int on_thread(const op_thread_info *t, void *arg)
{
    threads_ctx *c = arg;
    if (op_grow(&c->v, &c->cap, c->n + 1, sizeof *c->v)) return -1;
    if (op_u64map_put(&c->by_row, (uint64_t)t->thread_row, c->n + 1)) return -1;
    thread_label *l = &c->v[c->n++];
    l->row = t->thread_row;
    l->tid = t->tid;
    l->process_row = t->process_row;
    snprintf(l->name, sizeof l->name, "%s", t->thread_name ? (const char *)t->thread_name : "");
    return 0;
}

static int intern(tl_ctx *c, const char *s, size_t n, int64_t *id)
{
    uint32_t v;
    if (op_strtab_intern(&c->names, s, n, &v)) return -1;
    *id = v;
    return 0;
}

/* A set-local name id of table t (kernels: a kernel symbol, or -1 - the string of a renamed
 * dispatch) as its index in c->names. */
static int resolve(tl_ctx *c, op_rd_lookup *lk, op_u64map *cache, int table, int64_t *name)
{
    int kernel = table == T_KERNEL_DISPATCH && *name >= 0;
    int64_t id = *name < 0 ? -1 - *name : *name;
    uint64_t key = ((uint64_t)kernel << 63) ^ (uint64_t)id, v;
    if (op_u64map_get(cache, key, &v)) {
        *name = (int64_t)v - 1;
        return 0;
    }
    int len;
    const unsigned char *t = kernel ? op_rd_lookup_kernel(lk, id, &len) : op_rd_lookup_string(lk, id, &len);
    if (intern(c, t ? (const char *)t : "", t ? (size_t)len : 0, name)) return -1;
    return op_u64map_put(cache, key, (uint64_t)*name + 1) ? -1 : 0;
}

/* Names the set's lanes and resolves their spans' and events' names. */
static int name_lanes(tl_ctx *c, op_src *src, op_src_set *set, size_t first)
{
    threads_ctx th = {0};
    char err[8];
    op_rd_threads(src, set, on_thread, &th, err, sizeof err);
    op_rd_lookup *lk = op_rd_lookup_new(src, set);
    if (!lk) {
        op_u64map_free(&th.by_row);
        free(th.v);
        return -1;
    }
    int rc = 0;
    op_u64map cache = {0}; /* the set's name ids -> index + 1 in c->names */
    for (size_t i = first; i < c->n_lanes && !rc; i++) {
        tl_lane *l = &c->lanes[i];
        char label[200], kind[200];
        int len;
        const unsigned char *t;
        l->proc = c->r->set_first_proc[c->set];
        if (l->table == T_REGION || l->table == T_OP_CPU_SAMPLE) {
            snprintf(label, sizeof label, "thread row %lld", (long long)l->lane);
            uint64_t k;
            if (op_u64map_get(&th.by_row, (uint64_t)l->lane, &k)) {
                const thread_label *tl = &th.v[k - 1];
                snprintf(label, sizeof label, "%s%stid %lld", tl->name, tl->name[0] ? " · " : "", (long long)tl->tid);
                l->proc = rp_proc_of(c->r, c->set, tl->process_row);
            }
            if (l->table == T_OP_CPU_SAMPLE) snprintf(kind, sizeof kind, "CPU samples");
            else if (l->group && (t = op_rd_lookup_string(lk, l->group, &len)) && len)
                snprintf(kind, sizeof kind, "%.*s", len, (const char *)t);
            else snprintf(kind, sizeof kind, "regions");
        } else {
            char stream[120] = "";
            if (l->lane >= 0) op_rd_report_stream_name(src, set, l->lane, stream, sizeof stream);
            int64_t agent = op_rd_lookup_agent_index(lk, l->agent);
            if (stream[0]) snprintf(label, sizeof label, "GPU %lld · %s", (long long)agent, stream);
            else if (l->lane >= 0) snprintf(label, sizeof label, "GPU %lld · stream %lld", (long long)agent, (long long)l->lane);
            else snprintf(label, sizeof label, "GPU %lld", (long long)agent);
            snprintf(kind, sizeof kind, "%s", l->table == T_KERNEL_DISPATCH ? "GPU kernels" : "GPU memory copies");
        }
        /* the label says what the lane is: a thread's region, API and sample lanes differ */
        char full[420];
        snprintf(full, sizeof full, "%s · %s", label,
                 l->table == T_KERNEL_DISPATCH ? "kernels" : l->table == T_MEMORY_COPY ? "copies" : kind);
        if (!(l->label = strdup(full)) || !(l->kind = strdup(kind))) rc = -1;
        for (size_t k = 0; k < l->n_heap && !rc; k++) {
            tl_span *s = &l->heap[k];
            rc = resolve(c, lk, &cache, l->table, &s->name);
        }
        if (l->table != T_OP_CPU_SAMPLE)
            for (size_t k = 0; k < l->n_ev && !rc; k++) rc = resolve(c, lk, &cache, l->table, &l->ev[k].name);
    }
    op_u64map_free(&cache);
    op_rd_lookup_free(lk);
    op_u64map_free(&th.by_row);
    free(th.v);
    return rc;
}

static int timeline_set(rp_report *r, op_src *src, op_src_set *set, size_t ordinal, void *arg, char *err,
                        size_t errlen)
{
    tl_ctx *c = arg;
    static const int tables[] = {T_REGION, T_OP_CPU_SAMPLE, T_KERNEL_DISPATCH, T_MEMORY_COPY};
    size_t first = c->n_lanes;
    c->set = ordinal;
    c->clock = rp_set_clock(r, src, set);
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        c->table = tables[i];
        c->last = 0;
        int rc = op_rd_report_spans(src, set, tables[i], on_span, c, err, errlen);
        if (rc) {
            if (c->oom) op_seterr(err, errlen, "out of memory");
            return rc;
        }
    }
    if (name_lanes(c, src, set, first)) {
        op_seterr(err, errlen, "out of memory");
        return OP_OUT_EFAIL;
    }
    return 0;
}

/* ---- output ------------------------------------------------------------------------------- */

/* How much of the run a lane shows: its busy share, or the share of bins with samples. */
static double lane_score(const tl_ctx *c, const tl_lane *l)
{
    if (l->table != T_OP_CPU_SAMPLE) return l->sum / (c->bin_ns * c->bins);
    int n = 0;
    for (int i = 0; i < c->bins; i++) n += l->busy[i] > 0;
    return (double)n / c->bins;
}

static int by_score(const void *a, const void *b, void *ctx)
{
    const tl_ctx *c = ctx;
    double x = lane_score(c, &c->lanes[*(const size_t *)a]), y = lane_score(c, &c->lanes[*(const size_t *)b]);
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Page order: by process, then region lanes, CPU samples, kernels, copies, each by lane id. */
static int by_place(const void *a, const void *b, void *ctx)
{
    const tl_ctx *c = ctx;
    const tl_lane *x = &c->lanes[*(const size_t *)a], *y = &c->lanes[*(const size_t *)b];
    static const int rank[T_COUNT] = {[T_REGION] = 0, [T_OP_CPU_SAMPLE] = 1, [T_KERNEL_DISPATCH] = 2, [T_MEMORY_COPY] = 3};
    if (x->proc != y->proc) return x->proc < y->proc ? -1 : 1;
    if (x->table != y->table) return rank[x->table] - rank[y->table];
    if (x->lane != y->lane) return x->lane < y->lane ? -1 : 1;
    return x->group < y->group ? -1 : x->group > y->group;
}

/* ---- events as base64 varint columns ---------------------------------------------------------- */

static int by_start(const void *a, const void *b)
{
    const tl_ev *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->dur > y->dur ? -1 : x->dur < y->dur; /* the enclosing one first */
}

static void put_varint(op_buf *b, uint64_t v)
{
    unsigned char t[10];
    int n = 0;
    do {
        t[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    op_buf_put(b, t, (size_t)n);
}

static void put_base64(op_buf *b, const unsigned char *p, size_t n)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    op_buf_reserve(b, (n + 2) / 3 * 4 + 1);
    if (b->oom) return;
    char *o = (char *)b->p + b->len;
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = A[v >> 18];
        *o++ = A[(v >> 12) & 63];
        *o++ = A[(v >> 6) & 63];
        *o++ = A[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        *o++ = A[v >> 18];
        *o++ = A[(v >> 12) & 63];
        *o++ = i + 1 < n ? A[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    b->len = (size_t)(o - (char *)b->p);
}

/* Sorts a lane's events by start (enclosing first) and points its flow ends at their new index. */
static int sort_events(tl_ctx *c, tl_lane *l)
{
    qsort(l->ev, l->n_ev, sizeof *l->ev, by_start);
    op_u64map moved = {0}; /* index before sorting -> after + 1 */
    int rc = 0;
    for (size_t k = 0; k < l->n_ev && !rc; k++)
        if (l->ev[k].flow) rc = op_u64map_put(&moved, l->ev[k].flow - 1, k + 1);
    uint64_t v;
    for (size_t i = 0; i < c->n_flows && !rc; i++)
        if (c->flows[i].key && c->flows[i].lane == (size_t)(l - c->lanes) && op_u64map_get(&moved, c->flows[i].ev, &v))
            c->flows[i].ev = (uint32_t)(v - 1);
    op_u64map_free(&moved);
    return rc;
}

/* The lane's events: "n", "cols" (one letter per column) and "ev" (base64 of the columns one
 * after the other, each n varints): s start - the previous start (the first: from t0), d
 * duration, n name index, h nesting depth (0 outermost), c correlation id as a zigzag delta from
 * the previous event's, b bytes. CPU-sample lanes have s only. */
static void write_events(const tl_lane *l, size_t page_index, op_buf *b, op_buf *ev, op_buf *tmp)
{
    if (l->no_ev || !l->n_ev) return;
    int sample = l->table == T_OP_CPU_SAMPLE;
    unsigned char *depth = sample ? NULL : malloc(l->n_ev);
    int64_t stack[256];
    int sp = 0, max_depth = 0;
    tmp->len = 0;
    int64_t prev = 0;
    for (size_t k = 0; k < l->n_ev; k++) {
        put_varint(tmp, (uint64_t)(l->ev[k].start - prev));
        prev = l->ev[k].start;
    }
    if (!sample) {
        for (size_t k = 0; k < l->n_ev; k++) put_varint(tmp, (uint64_t)l->ev[k].dur);
        for (size_t k = 0; k < l->n_ev; k++) put_varint(tmp, (uint64_t)l->ev[k].name);
        for (size_t k = 0; k < l->n_ev && depth; k++) { /* the events still open when this one starts */
            const tl_ev *e = &l->ev[k];
            while (sp > 0 && stack[sp - 1] <= e->start) sp--;
            depth[k] = (unsigned char)(sp < 255 ? sp : 255);
            if (sp > max_depth) max_depth = sp;
            if (sp < 256) stack[sp++] = e->start + e->dur;
        }
        if (max_depth && depth)
            for (size_t k = 0; k < l->n_ev; k++) put_varint(tmp, depth[k]);
        if (l->has_corr) {
            int64_t pc = 0;
            for (size_t k = 0; k < l->n_ev; k++) {
                int64_t d = l->ev[k].corr - pc;
                pc = l->ev[k].corr;
                put_varint(tmp, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
            }
        }
        if (l->has_bytes)
            for (size_t k = 0; k < l->n_ev; k++) put_varint(tmp, (uint64_t)(l->ev[k].bytes > 0 ? l->ev[k].bytes : 0));
    }
    free(depth);
    op_buf_printf(b, ",\"n\":%zu,\"cols\":\"s%s%s%s%s\",\"depth\":%d,\"ev\":\"omniprof-ev-%zu\"", l->n_ev,
                  sample ? "" : "dn", max_depth ? "h" : "", !sample && l->has_corr ? "c" : "",
                  !sample && l->has_bytes ? "b" : "", max_depth + 1, page_index);
    /* the columns in an element of their own after the page's script: the page draws (from the
     * bins) before the browser has parsed them */
    op_buf_printf(ev, "<script type=\"application/octet-stream\" id=\"omniprof-ev-%zu\">", page_index);
    put_base64(ev, tmp->p, tmp->len);
    op_buf_puts(ev, "</script>\n");
    if (tmp->oom) b->oom = 1;
}

static void write_lane(const tl_ctx *c, const tl_lane *l, size_t page_index, op_buf *b, op_buf *ev, op_buf *tmp)
{
    op_buf_printf(b, "{\"p\":%lld,\"label\":", l->proc == SIZE_MAX ? -1LL : (long long)l->proc);
    rp_json_str(b, l->label, strlen(l->label));
    op_buf_puts(b, ",\"kind\":");
    rp_json_str(b, l->kind, strlen(l->kind));
    op_buf_puts(b, ",\"busy\":[");
    for (int i = 0; i < c->bins; i++) {
        double v = l->busy[i];
        if (l->table != T_OP_CPU_SAMPLE) { /* per mille of the bin (nested ranges: capped at all of it) */
            v = 1000.0 * v / c->bin_ns;
            if (v > 1000) v = 1000;
        }
        op_buf_printf(b, i ? ",%.0f" : "%.0f", v);
    }
    op_buf_puts(b, "],\"spans\":[");
    for (size_t k = 0; k < l->n_heap; k++)
        op_buf_printf(b, "%s%lld,%lld,%lld", k ? "," : "", (long long)l->heap[k].start, (long long)l->heap[k].dur,
                      (long long)l->heap[k].name);
    op_buf_putc(b, ']');
    write_events(l, page_index, b, ev, tmp);
    op_buf_putc(b, '}');
}

static void write_timeline(tl_ctx *c, op_buf *b, op_buf *ev)
{
    size_t *ix = malloc((c->n_lanes + 1) * sizeof *ix);
    if (!ix) {
        b->oom = 1;
        return;
    }
    for (size_t i = 0; i < c->n_lanes; i++) ix[i] = i;
    size_t keep = c->n_lanes;
    if (keep > RP_MAX_LANES) { /* the lanes that show the most of the run */
        qsort_r(ix, c->n_lanes, sizeof *ix, by_score, c);
        keep = RP_MAX_LANES;
    }
    qsort_r(ix, keep, sizeof *ix, by_place, c);
    /* the event budget over the lanes shown: the largest give theirs up */
    for (size_t i = keep; i < c->n_lanes; i++) {
        tl_lane *l = &c->lanes[ix[i]];
        c->n_ev -= l->n_ev;
        l->n_ev = 0;
        l->no_ev = 1;
    }
    while (c->n_ev > RP_EVENT_BUDGET) drop_largest(c);
    size_t *page = malloc((c->n_lanes + 1) * sizeof *page); /* lane -> its index on the page */
    if (!page) {
        free(ix);
        b->oom = 1;
        return;
    }
    for (size_t i = 0; i < c->n_lanes; i++) page[i] = SIZE_MAX;
    for (size_t i = 0; i < keep; i++) {
        page[ix[i]] = i;
        if (sort_events(c, &c->lanes[ix[i]])) b->oom = 1;
    }
    op_buf_printf(b, "{\"t0\":%lld,\"t1\":%lld,\"bins\":%d,\"omitted\":%zu,\"names\":[", (long long)c->r->t0,
                  (long long)c->r->t1, c->bins, c->n_lanes - keep);
    for (size_t i = 0; i < op_strtab_count(&c->names); i++) {
        if (i) op_buf_putc(b, ',');
        rp_json_str(b, op_strtab_str(&c->names, (uint32_t)i), op_strtab_len(&c->names, (uint32_t)i));
    }
    op_buf_puts(b, "],\"lanes\":[");
    op_buf tmp = {0};
    for (size_t i = 0; i < keep; i++) {
        if (i) op_buf_puts(b, ",\n");
        write_lane(c, &c->lanes[ix[i]], i, b, ev, &tmp);
    }
    op_buf_free(&tmp);
    /* MPI messages: each send end paired with the receive end of the same key */
    op_buf_puts(b, "],\"flows\":[");
    op_u64map sends = {0};
    int n = 0;
    for (size_t i = 0; i < c->n_flows; i++) {
        const tl_flow *f = &c->flows[i];
        if (f->key && f->out && page[f->lane] != SIZE_MAX && !c->lanes[f->lane].no_ev)
            op_u64map_put(&sends, f->key, i + 1);
    }
    for (size_t i = 0; i < c->n_flows; i++) {
        const tl_flow *f = &c->flows[i];
        uint64_t v;
        if (!f->key || f->out || page[f->lane] == SIZE_MAX || c->lanes[f->lane].no_ev) continue;
        if (!op_u64map_get(&sends, f->key, &v)) continue;
        const tl_flow *o = &c->flows[v - 1];
        op_buf_printf(b, "%s%zu,%u,%zu,%u", n++ ? "," : "", page[o->lane], o->ev, page[f->lane], f->ev);
    }
    op_u64map_free(&sends);
    op_buf_printf(b, "],\"events\":%zu}", c->n_ev);
    free(page);
    free(ix);
}

int rp_timeline(rp_report *r, char *err, size_t errlen)
{
    tl_ctx c;
    memset(&c, 0, sizeof c);
    c.r = r;
    /* budgets from the lanes expected: two per thread (regions, samples) and some streams */
    size_t expect = (size_t)(r->threads > 0 ? r->threads : 1) * 2 + 8 * (r->n_procs + 1);
    size_t bins = RP_BIN_BUDGET / expect;
    c.bins = bins > RP_MAX_BINS ? RP_MAX_BINS : bins < RP_MIN_BINS ? RP_MIN_BINS : (int)bins;
    size_t heap = RP_SPAN_BUDGET / expect;
    c.heap_cap = heap > 2000 ? 2000 : heap < 16 ? 16 : heap;
    c.bin_ns = (double)(r->t1 > r->t0 ? r->t1 - r->t0 : 1) / c.bins;
    int rc = rp_each_set(r, "timeline", timeline_set, &c, err, errlen);
    if (!rc) {
        write_timeline(&c, &r->timeline, &r->events);
        if (r->timeline.oom || r->events.oom) rc = OP_OUT_EFAIL;
    }
    for (size_t i = 0; i < c.n_lanes; i++) {
        free(c.lanes[i].busy);
        free(c.lanes[i].heap);
        free(c.lanes[i].label);
        free(c.lanes[i].kind);
        free(c.lanes[i].ev);
    }
    free(c.flows);
    free(c.lanes);
    op_u64map_free(&c.index);
    op_strtab_free(&c.names);
    return rc;
}
