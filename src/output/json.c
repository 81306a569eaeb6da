/* json.c — the Chrome trace-event JSON sink (<name>_results.json), for tools that read only
 * that format (chrome://tracing, Perfetto's legacy importer, speedscope).
 *
 * Shape: {"displayTimeUnit":"ns","otherData":{...},"traceEvents":[ ... ]}. Events:
 *   regions   ph "X" on (pid, tid), cat = category, args {corr_id}
 *   samples   ph "i" (s "t") on (pid, tid); a CPU call-stack sample is named by its innermost
 *             function, args {corr_id, stack} (frames innermost first, one per line; each
 *             distinct stack described once per set and kept: the stack dictionary)
 *   kernels   ph "X" on (pid, GPU stream pseudo-thread), args {grid, block, dispatch_id, corr_id}
 *   copies    ph "X" on the stream pseudo-thread, args {bytes, corr_id}
 *   allocs    ph "C" counter "Memory allocated (agent N)"
 *   pmc       ph "C" counter "Agent N PMC <name>"; metrics ph "C" under their name
 *   flows     ph "s" at the API call, ph "f" (bp "e") at the kernel/copy; id "<seq>:<corr>"
 *   messages  MPI point-to-point messages (keys: reader_mpi.c, op_ev.mpi_flows): ph "s" at the
 *             send call's start, ph "f" (bp "e") just inside the end of the receive (or of its
 *             wait or test);
 *             name "MPI message", cat "mpi", id "mpi:<key>". A pair is written once both ends
 *             have been read (any set, any input): an end waits for the other in op_rd_msg_pairs
 *             (a temporary database: bounded memory); an end whose other end never comes
 *             writes nothing.
 *   metadata  ph "M" process_name / thread_name
 * ts/dur are microseconds with 3 decimals (exact ns). A GPU stream's pseudo-tid is
 * 0x40000000 + (agent << 16) + stream. pids are unique across sets (sink.h, op_pidmap). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "output/sink.h"

typedef struct js_sink {
    op_sink base;
    FILE *f;
    char *path;
    op_buf out;
    int first;
    op_pidmap pids;
    op_src_set *set;
    op_rd_lookup *lk;      /* names of the set's stacks */
    uint32_t seq;
    op_u64map procs;       /* process row -> unique pid */
    op_u64map meta;        /* emitted thread/stream metadata */
    op_u64map cats;
    op_u64map alloc_total;
    /* CPU stacks of the set: stack id -> index into stack_txt ("leaf\0text\0") */
    op_u64map stack_ix;
    char **stack_txt;
    size_t n_stack, cap_stack;
    op_buf stk;
    op_rd_msg_pairs *msg; /* MPI message ends waiting for their other end, across sets */
} js_sink;

/* The leaf name and stack text of CPU stack `stack` (NULL when out of memory). */
static const char *js_stack(js_sink *j, int64_t stack) {
    uint64_t ix;
    if (op_u64map_get(&j->stack_ix, (uint64_t)stack, &ix)) return j->stack_txt[ix];
    char leaf[4200];
    op_rd_lookup_stack(j->lk, stack, &j->stk, leaf, sizeof leaf);
    if (j->stk.oom) return NULL;
    if (op_grow(&j->stack_txt, &j->cap_stack, j->n_stack + 1, sizeof *j->stack_txt)) return NULL;
    size_t ll = strlen(leaf);
    char *e = malloc(ll + 1 + j->stk.len + 1);
    if (!e) return NULL;
    memcpy(e, leaf, ll + 1);
    if (j->stk.len) memcpy(e + ll + 1, j->stk.p, j->stk.len);
    e[ll + 1 + j->stk.len] = 0;
    op_u64map_put(&j->stack_ix, (uint64_t)stack, j->n_stack);
    j->stack_txt[j->n_stack++] = e;
    return e;
}

static void js_sep(js_sink *j) {
    if (!j->first) op_buf_puts(&j->out, ",\n");
    j->first = 0;
}

static void js_ts(op_buf *b, const char *key, int64_t ns) {
    int neg = ns < 0;
    uint64_t a = neg ? (uint64_t)(-(ns + 1)) + 1 : (uint64_t)ns;
    op_buf_printf(b, ",\"%s\":%s%llu.%03llu", key, neg ? "-" : "", (unsigned long long)(a / 1000),
                  (unsigned long long)(a % 1000));
}

static void js_str(op_buf *b, const unsigned char *s, int n) {
    op_buf_putc(b, '"');
    if (s) op_buf_json_str(b, s, (size_t)n);
    op_buf_putc(b, '"');
}

static int js_flush(js_sink *j) {
    if (j->out.len >= (1u << 20)) return op_buf_write(&j->out, j->f);
    return j->out.oom ? -1 : 0;
}

static int64_t js_pid_named(js_sink *j, int64_t process_row, int64_t os_pid, const unsigned char *command,
                            const unsigned char *host);
static int64_t js_pid(js_sink *j, int64_t process_row, int64_t os_pid) {
    return js_pid_named(j, process_row, os_pid, NULL, NULL);
}

static int64_t js_pid_named(js_sink *j, int64_t process_row, int64_t os_pid, const unsigned char *command,
                            const unsigned char *host) {
    uint64_t v;
    if (op_u64map_get(&j->procs, (uint64_t)process_row, &v)) return (int64_t)v;
    int64_t u = op_pidmap_assign(&j->pids, os_pid);
    op_u64map_put(&j->procs, (uint64_t)process_row, (uint64_t)u);
    js_sep(j);
    op_buf_printf(&j->out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,\"tid\":0,\"args\":{\"name\":\"",
                  (long long)u);
    if (command && *command) op_buf_json_str(&j->out, command, strlen((const char *)command));
    else op_buf_printf(&j->out, "process %lld", (long long)os_pid);
    if (host && *host) {
        op_buf_puts(&j->out, " [");
        op_buf_json_str(&j->out, host, strlen((const char *)host));
        op_buf_putc(&j->out, ']');
    }
    if (j->set->guid[0]) op_buf_printf(&j->out, " {%s}", j->set->guid);
    op_buf_puts(&j->out, "\"}}");
    return u;
}

static int js_thread_cb(const op_thread_info *ti, void *arg) {
    js_sink *j = arg;
    int64_t pid = js_pid_named(j, ti->process_row, ti->pid, ti->command, ti->hostname);
    if (op_u64map_get(&j->meta, op_hash64x3(1, (uint64_t)ti->thread_row, 0), NULL)) return 0;
    op_u64map_put(&j->meta, op_hash64x3(1, (uint64_t)ti->thread_row, 0), 1);
    js_sep(j);
    op_buf_printf(&j->out, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%lld,\"args\":{\"name\":",
                  (long long)pid, (long long)ti->tid);
    if (ti->thread_name && *ti->thread_name) js_str(&j->out, ti->thread_name, (int)strlen((const char *)ti->thread_name));
    else op_buf_printf(&j->out, "\"thread %lld\"", (long long)ti->tid);
    op_buf_puts(&j->out, "}}");
    return js_flush(j) ? 1 : 0;
}

static int js_begin_set(op_sink *k, op_src *src, op_src_set *set, uint32_t set_index, char *err, size_t errlen) {
    js_sink *j = (js_sink *)k;
    j->set = set;
    j->seq = set_index + 1;
    if (!(j->lk = op_rd_lookup_new(src, set))) {
        op_seterr(err, errlen, "out of memory");
        return OP_OUT_EFAIL;
    }
    if (op_rd_threads(src, set, js_thread_cb, j, err, errlen)) return OP_OUT_EINPUT;
    return 0;
}

static int64_t stream_tid(const op_ev *ev) {
    return 0x40000000LL + ((ev->agent_index & 0x3FFF) << 16) + (ev->stream_id & 0xFFFF);
}

static void js_common(js_sink *j, const op_ev *ev, const char *ph, int64_t pid, int64_t tid) {
    js_sep(j);
    op_buf_printf(&j->out, "{\"ph\":\"%s\",\"pid\":%lld,\"tid\":%lld", ph, (long long)pid, (long long)tid);
    js_ts(&j->out, "ts", ev->start);
}

static void js_flow(js_sink *j, const op_ev *ev, int64_t pid, int64_t tid, int end) {
    js_sep(j);
    op_buf_printf(&j->out, "{\"ph\":\"%s\",\"name\":\"corr\",\"cat\":\"flow\",\"id\":\"%u:%lld\",\"pid\":%lld,\"tid\":%lld%s",
                  end ? "f" : "s", j->seq, (long long)ev->corr, (long long)pid, (long long)tid, end ? ",\"bp\":\"e\"" : "");
    js_ts(&j->out, "ts", ev->start);
    op_buf_putc(&j->out, '}');
}

static void js_msg_flow(js_sink *j, uint64_t key, int64_t pid, int64_t tid, int64_t ts, int end) {
    js_sep(j);
    op_buf_printf(&j->out,
                  "{\"ph\":\"%s\",\"name\":\"MPI message\",\"cat\":\"mpi\",\"id\":\"mpi:%016llx\",\"pid\":%lld,"
                  "\"tid\":%lld%s",
                  end ? "f" : "s", (unsigned long long)key, (long long)pid, (long long)tid, end ? ",\"bp\":\"e\"" : "");
    js_ts(&j->out, "ts", ts);
    op_buf_putc(&j->out, '}');
}

/* The MPI messages that region ev sends or receives: each end waits in j->msg (reader_mpi.c)
 * until its other end comes; then both are written. 0, or -1 (err filled). */
static int js_messages(js_sink *j, const op_ev *ev, int64_t pid, char *err, size_t errlen) {
    int out;
    uint64_t key;
    const unsigned char *q = ev->mpi_flows, *qe = q ? q + ev->mpi_flows_len : NULL;
    while ((q = op_rd_mpi_flow_next(q, qe, &out, &key))) {
        if (!j->msg && !(j->msg = op_rd_msg_pairs_new(err, errlen))) return -1;
        /* the send end at the call's start, the receive end just inside its call's end (the
         * message has arrived when the receive, wait or test returns): arrows run forward */
        op_rd_msg_end me = {pid, ev->tid, out || ev->end <= ev->start ? ev->start : ev->end - 1}, o;
        int rc = op_rd_msg_pairs_add(j->msg, key, out, &me, &o, err, errlen);
        if (rc < 0) return -1;
        if (!rc) continue;
        const op_rd_msg_end *s = out ? &me : &o, *f = out ? &o : &me;
        js_msg_flow(j, key, s->pid, s->tid, s->ts, 0);
        js_msg_flow(j, key, f->pid, f->tid, f->ts, 1);
    }
    return 0;
}

static int js_event(op_sink *k, const op_ev *ev, char *err, size_t errlen) {
    js_sink *j = (js_sink *)k;
    int64_t pid = js_pid(j, ev->process_row, ev->pid);
    op_buf *b = &j->out;
    switch (ev->kind) {
    case EV_REGION:
    case EV_SAMPLE: {
        js_common(j, ev, ev->kind == EV_REGION ? "X" : "i", pid, ev->tid);
        if (ev->kind == EV_REGION) js_ts(b, "dur", ev->end - ev->start);
        else op_buf_puts(b, ",\"s\":\"t\"");
        const char *stk = ev->kind == EV_SAMPLE && ev->cpu_sample ? js_stack(j, ev->cpu_stack) : NULL;
        op_buf_puts(b, ",\"name\":");
        if (stk) js_str(b, (const unsigned char *)stk, (int)strlen(stk));
        else js_str(b, ev->name, ev->name_len);
        op_buf_puts(b, ",\"cat\":");
        js_str(b, ev->category, ev->category_len);
        op_buf_printf(b, ",\"args\":{\"corr_id\":%lld", (long long)ev->corr);
        if (stk) {
            const char *text = stk + strlen(stk) + 1;
            op_buf_puts(b, ",\"stack\":");
            js_str(b, (const unsigned char *)text, (int)strlen(text));
        }
        op_buf_puts(b, "}}");
        if (ev->kind == EV_REGION && ev->flow) js_flow(j, ev, pid, ev->tid, 0);
        if (ev->kind == EV_REGION && ev->mpi_flows && js_messages(j, ev, pid, err, errlen)) return OP_OUT_EFAIL;
        break;
    }
    case EV_KERNEL:
    case EV_COPY: {
        int64_t tid = stream_tid(ev);
        uint64_t mk = op_hash64x3(2, (uint64_t)tid, 0);
        if (!op_u64map_get(&j->meta, mk, NULL)) {
            op_u64map_put(&j->meta, mk, 1);
            js_sep(j);
            op_buf_printf(b, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%lld,\"args\":{\"name\":\"GPU %lld Stream %lld\"}}",
                          (long long)pid, (long long)tid, (long long)ev->agent_index, (long long)ev->stream_id);
        }
        js_common(j, ev, "X", pid, tid);
        js_ts(b, "dur", ev->end - ev->start);
        op_buf_puts(b, ",\"name\":");
        js_str(b, ev->name, ev->name_len);
        if (ev->kind == EV_KERNEL)
            op_buf_printf(b, ",\"cat\":\"KERNEL_DISPATCH\",\"args\":{\"grid\":[%lld,%lld,%lld],\"block\":[%lld,%lld,%lld],"
                             "\"dispatch_id\":%lld,\"corr_id\":%lld}}",
                          (long long)ev->grid[0], (long long)ev->grid[1], (long long)ev->grid[2], (long long)ev->block[0],
                          (long long)ev->block[1], (long long)ev->block[2], (long long)ev->dispatch_id, (long long)ev->corr);
        else
            op_buf_printf(b, ",\"cat\":\"MEMORY_COPY\",\"args\":{\"bytes\":%lld,\"corr_id\":%lld}}", (long long)ev->size,
                          (long long)ev->corr);
        if (ev->flow) js_flow(j, ev, pid, tid, 1);
        break;
    }
    case EV_ALLOC: {
        uint64_t tot = 0;
        op_u64map_get(&j->alloc_total, (uint64_t)ev->agent_id, &tot);
        int64_t t = (int64_t)tot;
        if (ev->alloc_type && (!strcmp(ev->alloc_type, "FREE") || !strcmp(ev->alloc_type, "RECLAIM"))) t -= ev->size;
        else t += ev->size;
        if (t < 0) t = 0;
        op_u64map_put(&j->alloc_total, (uint64_t)ev->agent_id, (uint64_t)t);
        js_common(j, ev, "C", pid, 0);
        op_buf_printf(b, ",\"name\":\"Memory allocated (agent %lld)\",\"args\":{\"bytes\":%lld}}", (long long)ev->agent_index,
                      (long long)t);
        break;
    }
    case EV_PMC:
    case EV_METRIC: {
        js_common(j, ev, "C", pid, 0);
        op_buf_puts(b, ",\"name\":\"");
        if (ev->kind == EV_PMC) op_buf_printf(b, "Agent %lld PMC ", (long long)ev->agent_index);
        if (ev->name) op_buf_json_str(b, ev->name, (size_t)ev->name_len);
        char d[40];
        op_buf_printf(b, "\",\"args\":{\"value\":%s}}", isfinite(ev->value) ? op_fmt_double(d, sizeof d, ev->value) : "null");
        break;
    }
    default:
        break;
    }
    if (js_flush(j)) {
        op_seterr(err, errlen, "%s: write failed: %s", j->path, j->out.oom ? "out of memory" : strerror(errno));
        return OP_OUT_EFAIL;
    }
    return 0;
}

static int js_end_set(op_sink *k, char *err, size_t errlen) {
    js_sink *j = (js_sink *)k;
    (void)err;
    (void)errlen;
    op_u64map_free(&j->procs);
    op_u64map_free(&j->meta);
    op_u64map_free(&j->cats);
    op_u64map_free(&j->alloc_total);
    op_rd_lookup_free(j->lk);
    j->lk = NULL;
    for (size_t i = 0; i < j->n_stack; i++) free(j->stack_txt[i]);
    free(j->stack_txt);
    j->stack_txt = NULL;
    j->n_stack = j->cap_stack = 0;
    op_u64map_free(&j->stack_ix);
    return 0;
}

static int js_finish(op_sink *k, int ok, char *err, size_t errlen) {
    js_sink *j = (js_sink *)k;
    js_end_set(k, err, errlen);
    int rc = 0;
    op_buf_puts(&j->out, "\n]}\n");
    if (ok && (op_buf_write(&j->out, j->f) != 0 || fflush(j->f) != 0 || ferror(j->f))) {
        op_seterr(err, errlen, "%s: write failed: %s", j->path, j->out.oom ? "out of memory" : strerror(errno));
        rc = OP_OUT_EFAIL;
    }
    op_buf_free(&j->out);
    op_buf_free(&j->stk);
    op_u64map_free(&j->pids.used);
    op_rd_msg_pairs_free(j->msg);
    free(j->path);
    free(j);
    return rc;
}

op_sink *op_sink_json(FILE *f, const char *path) {
    js_sink *j = calloc(1, sizeof(*j));
    if (!j) return NULL;
    j->f = f;
    if (!(j->path = strdup(path))) {
        free(j);
        return NULL;
    }
    j->first = 1;
    op_buf_puts(&j->out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"omniprof\"},\"traceEvents\":[\n");
    j->base.name = "json";
    j->base.text = (1 << EV_KINDS) - 1;
    j->base.flows = (1 << EV_REGION) | (1 << EV_KERNEL) | (1 << EV_COPY);
    j->base.begin_set = js_begin_set;
    j->base.event = js_event;
    j->base.end_set = js_end_set;
    j->base.finish = js_finish;
    return &j->base;
}
