/* pftrace.c — the Perfetto sink: a `perfetto.protos.Trace` file of TrackEvent packets.
 *
 * Layout of the file: a sequence of `Trace.packet` fields (key, length, TracePacket). Every
 * field is named, never numbered: PF_UINT(b, TrackEvent, type, ...) and its kin below take the
 * number from the header generated from Perfetto's own schema.
 * A conversion may run in several parts at once (convert.c: each part writes some event kinds
 * into a file of its own; the files concatenate). Each table set (one profiled process) is one
 * packet sequence per part (trusted_packet_sequence_id = seq_base of the part + 1 + set index
 * over all inputs). On each sequence:
 *   1. a first packet with sequence_flags = SEQ_INCREMENTAL_STATE_CLEARED, first_packet_on_sequence,
 *      trace_packet_defaults (timestamps are CLOCK_MONOTONIC) and the interned debug-annotation
 *      names;
 *   2. in the part that describes (threads_desc): TrackDescriptors of the process (pid, name =
 *      command) — exactly one per process in the trace — and of each thread (pid, tid, name);
 *      the trace's first packet is a ClockSnapshot (MONOTONIC, REALTIME and BOOTTIME, Perfetto's
 *      own trace clock, as the first process recorded them), so the trace lines up with other
 *      Perfetto traces of the machine; in every part, when first
 *      used, one descriptor per GPU stream ("GPU <agent> Stream <id>", child of the process) and
 *      per counter (memory allocated per agent, hardware counter per agent, process/system
 *      metric) — a CounterDescriptor track;
 *   3. events, sequence_flags = SEQ_NEEDS_INCREMENTAL_STATE: slices as a SLICE_BEGIN/SLICE_END
 *      pair with absolute timestamps (the trace processor sorts), instants, counter values.
 *      Names are interned (InternedData.event_names, in the packet that first uses them):
 *      iid = 4 * string id (+1 for kernel symbols), so no table of names is kept, only the set
 *      of iids already emitted on this sequence.
 * CPU call-stack samples (rocpd_sample rows that an omniprof_cpu_sample row points at) are
 * instants on their thread's track named by the innermost function, with a debug annotation
 * `stack` holding the frames innermost first, one per line. Both are interned per distinct
 * stack: event name iid = 4 * stack id + 2, debug_annotation_string_values iid = stack id + 1
 * (stack id 0, an empty stack, is named "[no stack]").
 * GPU PC samples: per (agent, stall reason) a counter track "GPU N PC samples: <reason>" whose
 * value at each read of the samples is the number taken since the previous read (rows of one
 * read are summed; a reason absent from a read goes back to 0). Unified-memory events: slices
 * (migrations, GPU faults, throttling) and instants (CPU faults, thrashing, remote maps) on a
 * track "GPU N Unified memory" per GPU, with bytes, address, cause and value annotations.
 * Flows: the reader marks (OP_RD_FLOWS) the API call region that starts a flow and the kernel or
 * copy that ends it, only where both are in the output; the region carries flow_ids = H(set,
 * correlation id), the GPU record terminating_flow_ids with the same id: every start has its end,
 * whichever parts wrote them.
 * MPI messages (reader_mpi.c): the send call's region carries flow_ids = the message's id, the
 * receive call's region (or the wait or test that completed a nonblocking receive) its
 * terminating_flow_ids: a flow from the sender's thread track to the receiver's once both ranks
 * are in the inputs (a merged file or several rank databases); a message whose other end is not
 * in the output leaves one unpaired id, which Perfetto draws nothing for.
 * Track uuids are H(set, kind, row id), set = 1 + set index over all inputs, the same in every
 * part: unique across sets and inputs (invariant (2)), equal for one track in all parts.
 * Strings are written as bytes (invariant (3)): Perfetto's proto2 `string` fields are not
 * checked for UTF-8 by the decoder. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/sink.h"
/* after sink.h: uses the PB_ENC_* of output/internal.h */
#include "output/pftrace_fields.h"

/* Field F of message M of Perfetto's schema, by name: its number comes from pftrace_fields.h,
 * generated at build time from third_party/perfetto/perfetto_trace.proto (gen_proto_fields.py),
 * and the array size below is negative — a compile error — unless the writer call encodes the
 * field the way the schema declares it (PB_ENC_*, internal.h). Enum values are PF_<Enum>_<VALUE>
 * from the same header. No field number is written by hand in this file. */
#define PF_FIELD(M, F, ENC) \
    ((uint32_t)(PF_##M##_##F + 0 * sizeof(char[(int)PF_##M##_##F##_ENC == (int)(ENC) ? 1 : -1])))
#define PF_UINT(b, M, F, v) pb_uint(b, PF_FIELD(M, F, PB_ENC_VARINT), v)
#define PF_INT(b, M, F, v) pb_int(b, PF_FIELD(M, F, PB_ENC_VARINT), v)
#define PF_FIXED64(b, M, F, v) pb_fixed64(b, PF_FIELD(M, F, PB_ENC_I64), v)
#define PF_DOUBLE(b, M, F, v) pb_double(b, PF_FIELD(M, F, PB_ENC_I64), v)
#define PF_TEXT(b, M, F, s, n) pb_text(b, PF_FIELD(M, F, PB_ENC_LEN), s, n)
#define PF_STR(b, M, F, s) pb_str(b, PF_FIELD(M, F, PB_ENC_LEN), s)
#define PF_BEGIN(b, M, F) pb_begin(b, PF_FIELD(M, F, PB_ENC_MSG))
/* the key (field << 3 | wire type) of an embedded message field */
#define PF_MSG_KEY(M, F) ((uint64_t)PF_FIELD(M, F, PB_ENC_MSG) << 3 | (PB_ENC_MSG & 7))

/* debug annotation name iids */
enum { DA_CORR = 1, DA_GRID, DA_BLOCK, DA_BYTES, DA_DISPATCH, DA_STREAM, DA_AGENT, DA_KIND, DA_SIZE, DA_ADDRESS,
       DA_STACK, DA_CAUSE, DA_VALUE, DA_COUNT };
static const char *const da_names[DA_COUNT] = {"", "corr_id", "grid", "block", "bytes", "dispatch_id",
                                               "stream", "agent", "type", "size", "address", "stack",
                                               "cause", "value"};

/* A PC-sampling counter track: samples of one (agent, stall reason) in the read being summed. */
typedef struct pf_pc_track {
    uint64_t uuid;
    uint64_t pending, last;
} pf_pc_track;

typedef struct pf_sink {
    op_sink base;
    FILE *f;
    char *path;
    op_buf out;  /* file bytes pending */
    op_buf pkt;  /* the packet being built */
    op_buf tmp;  /* nested scratch */
    op_pidmap pids;
    /* per set */
    op_src *src;
    op_src_set *set;
    op_rd_lookup *lk;   /* names, kernel names, agent indexes, stacks of the set */
    uint32_t seq;
    op_u64map names;    /* iid -> 1 (emitted) */
    op_u64map tracks;   /* uuid -> 1 (descriptor emitted) */
    op_u64map procs;    /* process row -> unique pid */
    op_u64map alloc_total; /* agent -> bytes (as uint64) */
    op_u64map agents;      /* agent row -> logical index */
    op_u64map stacks;      /* CPU stack id -> 1 (leaf name and stack text interned) */
    op_buf stk;                    /* scratch: the stack text */
    op_u64map pc_index;    /* (agent, stall reason) -> index + 1 into pc */
    pf_pc_track *pc;
    size_t n_pc, cap_pc;
    int64_t pc_ts;         /* the read being summed */
    int64_t first_pid;
    uint32_t seq_base;  /* sequence ids are seq_base + 1 + set index */
    uint32_t setno;     /* 1 + set index: names tracks and flows, the same in every part */
    int threads_desc;   /* 1: this part writes the process and thread descriptors and the clock snapshot */
    int clock_done;     /* the ClockSnapshot was written */
} pf_sink;

static int pf_flush(pf_sink *p, int force) {
    if (p->out.len >= (1u << 20) || (force && p->out.len)) {
        if (op_buf_write(&p->out, p->f) != 0) return -1;
    }
    return 0;
}

/* Appends the packet built in p->pkt as Trace.packet. */
static int pf_emit(pf_sink *p) {
    if (p->pkt.oom) return -1;
    pb_varint(&p->out, PF_MSG_KEY(Trace, packet));
    pb_varint(&p->out, p->pkt.len);
    op_buf_put(&p->out, p->pkt.p, p->pkt.len);
    p->pkt.len = 0;
    if (p->out.oom) return -1;
    return pf_flush(p, 0);
}

static void pf_packet_start(pf_sink *p, int64_t ts, int needs_state) {
    p->pkt.len = 0;
    if (ts >= 0) PF_UINT(&p->pkt, TracePacket, timestamp, (uint64_t)ts);
    PF_UINT(&p->pkt, TracePacket, trusted_packet_sequence_id, p->seq);
    if (needs_state)
        PF_UINT(&p->pkt, TracePacket, sequence_flags,
                PF_TracePacket_SequenceFlags_SEQ_NEEDS_INCREMENTAL_STATE);
}

/* Track uuids: (seq << 32 | kind << 28 | row) while that is exact — short varints, since
 * every event packet carries one — else a 64-bit hash of the three. */
static uint64_t track_id(uint32_t seq, unsigned kind, uint64_t row) {
    if (row < (1u << 28) && seq < (1u << 30)) return ((uint64_t)seq << 32) | ((uint64_t)kind << 28) | row;
    return op_hash64x3(seq, kind, row) | (1ull << 63);
}
static uint64_t proc_uuid(pf_sink *p, int64_t row) { return track_id(p->setno, 1, (uint64_t)row); }
static uint64_t thread_uuid(pf_sink *p, int64_t row) { return track_id(p->setno, 2, (uint64_t)row); }
static uint64_t flow_id(pf_sink *p, int64_t corr) { return op_hash64x3(p->setno, 9, (uint64_t)corr); }

static int64_t unique_pid(pf_sink *p, int64_t process_row, int64_t os_pid) {
    uint64_t v;
    if (op_u64map_get(&p->procs, (uint64_t)process_row, &v)) return (int64_t)v;
    int64_t u = op_pidmap_assign(&p->pids, os_pid);
    op_u64map_put(&p->procs, (uint64_t)process_row, (uint64_t)u);
    return u;
}

static int first_process_cb(const op_thread_info *ti, void *arg) {
    *(int64_t *)arg = ti->process_row;
    return 1;
}

/* The trace's ClockSnapshot: its first packet. The monotonic clock of the records against the
 * wall clock and boot time recorded for the first process; Perfetto converts every timestamp
 * through it (BOOTTIME is its trace clock). Without recorded offsets (a database of another
 * writer) MONOTONIC alone, made the trace clock. */
static int emit_clock_snapshot(pf_sink *p) {
    p->clock_done = 1;
    int64_t row = -1, t0 = INT64_MAX, t1 = INT64_MIN; /* op_rd_extent widens them */
    char e[8];
    op_rd_threads(p->src, p->set, first_process_cb, &row, e, sizeof e);
    op_process_info pi;
    memset(&pi, 0, sizeof pi);
    if (row >= 0) op_rd_process(p->src, p->set, row, &pi);
    if (op_rd_extent(p->src, p->set, &t0, &t1, e, sizeof e) != 0 || t0 == INT64_MAX) t0 = 0;
    pf_packet_start(p, -1, 0);
    size_t cs = PF_BEGIN(&p->pkt, TracePacket, clock_snapshot);
    static const int builtin[3] = {PF_BuiltinClock_BUILTIN_CLOCK_MONOTONIC,
                                   PF_BuiltinClock_BUILTIN_CLOCK_REALTIME,
                                   PF_BuiltinClock_BUILTIN_CLOCK_BOOTTIME};
    int64_t at[3] = {t0, t0 + pi.realtime_offset_ns, t0 + pi.boottime_offset_ns};
    int have[3] = {1, pi.has_realtime, pi.has_realtime && pi.has_boottime};
    for (int i = 0; i < 3; i++) {
        if (!have[i]) continue;
        size_t c = PF_BEGIN(&p->pkt, ClockSnapshot, clocks);
        PF_UINT(&p->pkt, ClockSnapshot_Clock, clock_id, (uint64_t)builtin[i]);
        PF_UINT(&p->pkt, ClockSnapshot_Clock, timestamp, (uint64_t)at[i]);
        pb_end(&p->pkt, c);
    }
    if (!have[2])
        PF_UINT(&p->pkt, ClockSnapshot, primary_trace_clock,
                PF_BuiltinClock_BUILTIN_CLOCK_MONOTONIC);
    pb_end(&p->pkt, cs);
    return pf_emit(p);
}

static int emit_process(pf_sink *p, int64_t process_row, int64_t os_pid, const unsigned char *command,
                        const unsigned char *host) {
    uint64_t uuid = proc_uuid(p, process_row);
    if (!p->threads_desc || op_u64map_get(&p->tracks, uuid, NULL)) return 0;
    op_u64map_put(&p->tracks, uuid, 1);
    int64_t pid = unique_pid(p, process_row, os_pid);
    pf_packet_start(p, -1, 0);
    size_t td = PF_BEGIN(&p->pkt, TracePacket, track_descriptor);
    PF_UINT(&p->pkt, TrackDescriptor, uuid, uuid);
    size_t pd = PF_BEGIN(&p->pkt, TrackDescriptor, process);
    PF_INT(&p->pkt, ProcessDescriptor, pid, pid);
    op_buf name = {0};
    if (command && *command) op_buf_puts(&name, (const char *)command);
    else op_buf_printf(&name, "process %lld", (long long)os_pid);
    if (host && *host) op_buf_printf(&name, " [%s]", (const char *)host);
    if (p->set->guid[0]) op_buf_printf(&name, " {%s}", p->set->guid);
    PF_TEXT(&p->pkt, ProcessDescriptor, process_name, name.p, name.len);
    op_buf_free(&name);
    pb_end(&p->pkt, pd);
    pb_end(&p->pkt, td);
    return pf_emit(p);
}

static int emit_thread_cb(const op_thread_info *ti, void *arg) {
    pf_sink *p = arg;
    if (emit_process(p, ti->process_row, ti->pid, ti->command, ti->hostname)) return 1;
    uint64_t uuid = thread_uuid(p, ti->thread_row);
    if (!p->threads_desc || op_u64map_get(&p->tracks, uuid, NULL)) return 0;
    op_u64map_put(&p->tracks, uuid, 1);
    pf_packet_start(p, -1, 0);
    size_t td = PF_BEGIN(&p->pkt, TracePacket, track_descriptor);
    PF_UINT(&p->pkt, TrackDescriptor, uuid, uuid);
    PF_UINT(&p->pkt, TrackDescriptor, parent_uuid, proc_uuid(p, ti->process_row));
    size_t th = PF_BEGIN(&p->pkt, TrackDescriptor, thread);
    PF_INT(&p->pkt, ThreadDescriptor, pid, unique_pid(p, ti->process_row, ti->pid));
    PF_INT(&p->pkt, ThreadDescriptor, tid, ti->tid);
    if (ti->thread_name && *ti->thread_name)
        PF_TEXT(&p->pkt, ThreadDescriptor, thread_name, ti->thread_name,
                strlen((const char *)ti->thread_name));
    pb_end(&p->pkt, th);
    pb_end(&p->pkt, td);
    return pf_emit(p) ? 1 : 0;
}

/* A plain named track (GPU stream, counter) under the process; counter != 0 makes it a counter track. */
static int ensure_track(pf_sink *p, uint64_t uuid, int64_t process_row, int counter, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int ensure_track(pf_sink *p, uint64_t uuid, int64_t process_row, int counter, const char *fmt, ...) {
    if (op_u64map_get(&p->tracks, uuid, NULL)) return 0;
    op_u64map_put(&p->tracks, uuid, 1);
    if (emit_process(p, process_row, process_row, NULL, NULL)) return -1; /* once, in the describing part */
    char name[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    pf_packet_start(p, -1, 0);
    size_t td = PF_BEGIN(&p->pkt, TracePacket, track_descriptor);
    PF_UINT(&p->pkt, TrackDescriptor, uuid, uuid);
    PF_UINT(&p->pkt, TrackDescriptor, parent_uuid, proc_uuid(p, process_row));
    PF_TEXT(&p->pkt, TrackDescriptor, name, (const unsigned char *)name, strlen(name));
    if (counter) {
        size_t c = PF_BEGIN(&p->pkt, TrackDescriptor, counter);
        pb_end(&p->pkt, c);
    }
    pb_end(&p->pkt, td);
    return pf_emit(p);
}

static int pf_begin_set(op_sink *k, op_src *src, op_src_set *set, uint32_t set_index, char *err, size_t errlen) {
    pf_sink *p = (pf_sink *)k;
    p->set = set;
    p->src = src;
    p->setno = set_index + 1;
    p->seq = p->seq_base + p->setno;
    if (!(p->lk = op_rd_lookup_new(src, set))) {
        op_seterr(err, errlen, "out of memory");
        return OP_OUT_EFAIL;
    }
    if (p->threads_desc && !p->clock_done && emit_clock_snapshot(p)) goto io;
    /* first packet: clear incremental state, intern the annotation names */
    pf_packet_start(p, -1, 0);
    PF_UINT(&p->pkt, TracePacket, sequence_flags,
            PF_TracePacket_SequenceFlags_SEQ_INCREMENTAL_STATE_CLEARED);
    PF_UINT(&p->pkt, TracePacket, first_packet_on_sequence, 1);
    /* timestamps are CLOCK_MONOTONIC */
    size_t dflt = PF_BEGIN(&p->pkt, TracePacket, trace_packet_defaults);
    PF_UINT(&p->pkt, TracePacketDefaults, timestamp_clock_id,
            PF_BuiltinClock_BUILTIN_CLOCK_MONOTONIC);
    pb_end(&p->pkt, dflt);
    size_t id = PF_BEGIN(&p->pkt, TracePacket, interned_data);
    for (int i = 1; i < DA_COUNT; i++) {
        size_t n = PF_BEGIN(&p->pkt, InternedData, debug_annotation_names);
        PF_UINT(&p->pkt, DebugAnnotationName, iid, (uint64_t)i);
        PF_STR(&p->pkt, DebugAnnotationName, name, da_names[i]);
        pb_end(&p->pkt, n);
    }
    pb_end(&p->pkt, id);
    if (pf_emit(p)) goto io;
    if (p->threads_desc && op_rd_threads(src, set, emit_thread_cb, p, err, errlen)) return OP_OUT_EINPUT;
    if (p->pkt.oom || p->out.oom) goto io;
    return 0;
io:
    op_seterr(err, errlen, "%s: write failed: %s", p->path, strerror(errno));
    return OP_OUT_EFAIL;
}

/* Interns (iid -> text) into the packet being built when the iid is new on this sequence. The
 * lookup has its own statements, so the event's row stays valid. */
static void intern_name(pf_sink *p, uint64_t iid, int is_kernel, int64_t id) {
    if (op_u64map_get(&p->names, iid, NULL)) return;
    op_u64map_put(&p->names, iid, 1);
    int len = 0;
    const unsigned char *s = is_kernel ? op_rd_lookup_kernel(p->lk, id, &len) : op_rd_lookup_string(p->lk, id, &len);
    size_t idd = PF_BEGIN(&p->pkt, TracePacket, interned_data);
    size_t en = PF_BEGIN(&p->pkt, InternedData, event_names);
    PF_UINT(&p->pkt, EventName, iid, iid);
    PF_TEXT(&p->pkt, EventName, name, s, (size_t)len);
    pb_end(&p->pkt, en);
    pb_end(&p->pkt, idd);
}

/* Interns the leaf function name (event name iid 4*stack+2) and the stack text
 * (debug_annotation_string_values iid = stack+1) of CPU stack `stack` (op_stack_describe)
 * into the packet being built, once per sequence. */
static void intern_stack(pf_sink *p, int64_t stack) {
    if (op_u64map_get(&p->stacks, (uint64_t)stack, NULL)) return;
    op_u64map_put(&p->stacks, (uint64_t)stack, 1);
    char leaf[4200];
    op_rd_lookup_stack(p->lk, stack, &p->stk, leaf, sizeof leaf);
    size_t idd = PF_BEGIN(&p->pkt, TracePacket, interned_data);
    size_t en = PF_BEGIN(&p->pkt, InternedData, event_names);
    PF_UINT(&p->pkt, EventName, iid, (uint64_t)stack * 4 + 2);
    PF_TEXT(&p->pkt, EventName, name, (const unsigned char *)leaf, strlen(leaf));
    pb_end(&p->pkt, en);
    size_t ds = PF_BEGIN(&p->pkt, InternedData, debug_annotation_string_values);
    PF_UINT(&p->pkt, InternedString, iid, (uint64_t)stack + 1);
    PF_TEXT(&p->pkt, InternedString, str,
            (const unsigned char *)(p->stk.p ? (const char *)p->stk.p : ""), p->stk.len);
    pb_end(&p->pkt, ds);
    pb_end(&p->pkt, idd);
}

static void da_int(op_buf *b, int name_iid, int64_t v) {
    size_t d = PF_BEGIN(b, TrackEvent, debug_annotations);
    PF_UINT(b, DebugAnnotation, name_iid, (uint64_t)name_iid);
    PF_INT(b, DebugAnnotation, int_value, v);
    pb_end(b, d);
}

static void da_str(op_buf *b, int name_iid, const char *s) {
    size_t d = PF_BEGIN(b, TrackEvent, debug_annotations);
    PF_UINT(b, DebugAnnotation, name_iid, (uint64_t)name_iid);
    PF_STR(b, DebugAnnotation, string_value, s);
    pb_end(b, d);
}

/* "(x,y,z)" without printf (this runs once per kernel). */
static char *fmt_i64(char *o, int64_t v) {
    char d[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
    if (v < 0) *o++ = '-';
    do d[n++] = (char)('0' + u % 10); while ((u /= 10));
    while (n) *o++ = d[--n];
    return o;
}
static void fmt3(char *o, const int64_t v[3]) {
    *o++ = '(';
    o = fmt_i64(o, v[0]);
    *o++ = ',';
    o = fmt_i64(o, v[1]);
    *o++ = ',';
    o = fmt_i64(o, v[2]);
    *o++ = ')';
    *o = 0;
}

/* SLICE_BEGIN at start + SLICE_END at end on track. */
static int slice(pf_sink *p, const op_ev *ev, uint64_t track, uint64_t iid, int is_kernel, int64_t name_src_id,
                 uint64_t flow, int terminating) {
    pf_packet_start(p, ev->start, 1);
    intern_name(p, iid, is_kernel, name_src_id);
    size_t te = PF_BEGIN(&p->pkt, TracePacket, track_event);
    PF_UINT(&p->pkt, TrackEvent, type, PF_TrackEvent_Type_TYPE_SLICE_BEGIN);
    PF_UINT(&p->pkt, TrackEvent, track_uuid, track);
    PF_UINT(&p->pkt, TrackEvent, name_iid, iid);
    if (flow && terminating) PF_FIXED64(&p->pkt, TrackEvent, terminating_flow_ids, flow);
    else if (flow) PF_FIXED64(&p->pkt, TrackEvent, flow_ids, flow);
    int out;
    uint64_t msg;
    const unsigned char *q = ev->mpi_flows, *qe = q ? q + ev->mpi_flows_len : NULL;
    /* MPI messages: from the send to the receive (or the wait that completed it) */
    while ((q = op_rd_mpi_flow_next(q, qe, &out, &msg))) {
        if (out) PF_FIXED64(&p->pkt, TrackEvent, flow_ids, msg);
        else PF_FIXED64(&p->pkt, TrackEvent, terminating_flow_ids, msg);
    }
    if (ev->corr) da_int(&p->pkt, DA_CORR, ev->corr);
    char tmp[96];
    switch (ev->kind) {
    case EV_KERNEL:
        fmt3(tmp, ev->grid);
        da_str(&p->pkt, DA_GRID, tmp);
        fmt3(tmp, ev->block);
        da_str(&p->pkt, DA_BLOCK, tmp);
        da_int(&p->pkt, DA_DISPATCH, ev->dispatch_id);
        break;
    case EV_COPY:
        da_int(&p->pkt, DA_BYTES, ev->size);
        break;
    default:
        break;
    }
    pb_end(&p->pkt, te);
    if (pf_emit(p)) return -1;
    pf_packet_start(p, ev->end, 1);
    te = PF_BEGIN(&p->pkt, TracePacket, track_event);
    PF_UINT(&p->pkt, TrackEvent, type, PF_TrackEvent_Type_TYPE_SLICE_END);
    PF_UINT(&p->pkt, TrackEvent, track_uuid, track);
    pb_end(&p->pkt, te);
    return pf_emit(p);
}

static int counter(pf_sink *p, int64_t ts, uint64_t track, double value) {
    pf_packet_start(p, ts, 1);
    size_t te = PF_BEGIN(&p->pkt, TracePacket, track_event);
    PF_UINT(&p->pkt, TrackEvent, type, PF_TrackEvent_Type_TYPE_COUNTER);
    PF_UINT(&p->pkt, TrackEvent, track_uuid, track);
    PF_DOUBLE(&p->pkt, TrackEvent, double_counter_value, value);
    pb_end(&p->pkt, te);
    return pf_emit(p);
}

static uint64_t thread_track(pf_sink *p, const op_ev *ev) {
    uint64_t uuid = thread_uuid(p, ev->thread_row);
    if (!op_u64map_get(&p->tracks, uuid, NULL)) {
        op_thread_info ti = {.thread_row = ev->thread_row, .process_row = ev->process_row, .pid = ev->pid, .tid = ev->tid};
        emit_thread_cb(&ti, p);
    }
    return uuid;
}

/* Agent row id -> logical index (the reader leaves it to us in non-text mode). */
static int64_t agent_index(pf_sink *p, int64_t agent_id) {
    uint64_t v;
    if (agent_id < 0) return -1;
    if (op_u64map_get(&p->agents, (uint64_t)agent_id, &v)) return (int64_t)v;
    int64_t idx = op_rd_lookup_agent_index(p->lk, agent_id);
    op_u64map_put(&p->agents, (uint64_t)agent_id, (uint64_t)idx);
    return idx;
}

static uint64_t stream_track(pf_sink *p, const op_ev *ev) {
    uint64_t uuid = track_id(p->setno, 3, ((uint64_t)(ev->agent_id & 0xFFF) << 16) ^ (uint64_t)ev->stream_id);
    if (!op_u64map_get(&p->tracks, uuid, NULL))
        ensure_track(p, uuid, ev->process_row, 0, "GPU %lld Stream %lld", (long long)agent_index(p, ev->agent_id),
                     (long long)ev->stream_id);
    return uuid;
}

/* The PC-sampling tracks' values of the read at p->pc_ts, where they changed. */
static int pc_flush(pf_sink *p) {
    for (size_t i = 0; i < p->n_pc; i++) {
        pf_pc_track *t = &p->pc[i];
        if (t->pending != t->last && counter(p, p->pc_ts, t->uuid, (double)t->pending)) return -1;
        t->last = t->pending;
        t->pending = 0;
    }
    return 0;
}

/* "smsp__pcsamp_warps_issue_stalled_long_scoreboard" -> "long_scoreboard" */
static void short_reason(const op_ev *ev, char *out, size_t n) {
    const char *s = ev->category ? (const char *)ev->category : "unknown";
    size_t len = ev->category ? (size_t)ev->category_len : 7;
    static const char *const prefixes[] = {"smsp__pcsamp_warps_issue_stalled_", "smsp__pcsamp_"};
    for (size_t i = 0; i < 2; i++) {
        size_t pl = strlen(prefixes[i]);
        if (len > pl && !memcmp(s, prefixes[i], pl)) {
            s += pl, len -= pl;
            break;
        }
    }
    snprintf(out, n, "%.*s", (int)(len < 200 ? len : 200), s);
}

static int pc_event(pf_sink *p, const op_ev *ev) {
    if (p->n_pc && ev->start != p->pc_ts && pc_flush(p)) return -1;
    p->pc_ts = ev->start;
    uint64_t key = op_hash64x3((uint64_t)ev->agent_id, (uint64_t)ev->category_id, 11), v;
    if (!op_u64map_get(&p->pc_index, key, &v)) {
        if (p->n_pc == p->cap_pc) {
            size_t cap = p->cap_pc ? p->cap_pc * 2 : 64;
            pf_pc_track *n = realloc(p->pc, cap * sizeof *n);
            if (!n) return -1;
            p->pc = n, p->cap_pc = cap;
        }
        char reason[256];
        short_reason(ev, reason, sizeof reason);
        pf_pc_track *t = &p->pc[p->n_pc];
        t->uuid = track_id(p->setno, 7, key & 0xFFFFFFF);
        t->pending = t->last = 0;
        if (ensure_track(p, t->uuid, ev->process_row, 1, "GPU %lld PC samples: %s", (long long)agent_index(p, ev->agent_id),
                         reason))
            return -1;
        v = ++p->n_pc;
        op_u64map_put(&p->pc_index, key, v);
    }
    p->pc[v - 1].pending += (uint64_t)(ev->count > 0 ? ev->count : 0);
    return 0;
}

static int um_event(pf_sink *p, const op_ev *ev) {
    uint64_t track = track_id(p->setno, 8, (uint64_t)ev->agent_id & 0xFFFFFFF);
    if (ensure_track(p, track, ev->process_row, 0, "GPU %lld Unified memory", (long long)agent_index(p, ev->agent_id)))
        return -1;
    int is_slice = ev->end > ev->start;
    pf_packet_start(p, ev->start, 1);
    size_t te = PF_BEGIN(&p->pkt, TracePacket, track_event);
    PF_UINT(&p->pkt, TrackEvent, type,
            is_slice ? PF_TrackEvent_Type_TYPE_SLICE_BEGIN : PF_TrackEvent_Type_TYPE_INSTANT);
    PF_UINT(&p->pkt, TrackEvent, track_uuid, track);
    const unsigned char *um_name = ev->name ? ev->name : (const unsigned char *)"UNIFIED_MEMORY";
    PF_TEXT(&p->pkt, TrackEvent, name, um_name, ev->name ? (size_t)ev->name_len : 14);
    if (ev->size) da_int(&p->pkt, DA_BYTES, ev->size);
    da_int(&p->pkt, DA_ADDRESS, ev->address);
    if (ev->count) da_int(&p->pkt, DA_VALUE, ev->count);
    if (ev->category && ev->category_len) {
        char cause[64];
        snprintf(cause, sizeof cause, "%.*s", ev->category_len < 60 ? ev->category_len : 60, (const char *)ev->category);
        da_str(&p->pkt, DA_CAUSE, cause);
    }
    pb_end(&p->pkt, te);
    if (pf_emit(p)) return -1;
    if (!is_slice) return 0;
    pf_packet_start(p, ev->end, 1);
    te = PF_BEGIN(&p->pkt, TracePacket, track_event);
    PF_UINT(&p->pkt, TrackEvent, type, PF_TrackEvent_Type_TYPE_SLICE_END);
    PF_UINT(&p->pkt, TrackEvent, track_uuid, track);
    pb_end(&p->pkt, te);
    return pf_emit(p);
}

static int pf_event(op_sink *k, const op_ev *ev, char *err, size_t errlen) {
    pf_sink *p = (pf_sink *)k;
    int rc = 0;
    switch (ev->kind) {
    case EV_REGION: {
        uint64_t flow = ev->flow ? flow_id(p, ev->corr) : 0;
        rc = slice(p, ev, thread_track(p, ev), (uint64_t)ev->name_id * 4, 0, ev->name_id, flow, 0);
        break;
    }
    case EV_SAMPLE: {
        uint64_t track = thread_track(p, ev);
        pf_packet_start(p, ev->start, 1);
        int cpu = ev->cpu_sample && ev->cpu_stack >= 0;
        if (cpu) intern_stack(p, ev->cpu_stack);
        size_t te = PF_BEGIN(&p->pkt, TracePacket, track_event);
        PF_UINT(&p->pkt, TrackEvent, type, PF_TrackEvent_Type_TYPE_INSTANT);
        PF_UINT(&p->pkt, TrackEvent, track_uuid, track);
        if (cpu) {
            /* named by the leaf function */
            PF_UINT(&p->pkt, TrackEvent, name_iid, (uint64_t)ev->cpu_stack * 4 + 2);
            size_t d = PF_BEGIN(&p->pkt, TrackEvent, debug_annotations);
            PF_UINT(&p->pkt, DebugAnnotation, name_iid, DA_STACK);
            PF_UINT(&p->pkt, DebugAnnotation, string_value_iid, (uint64_t)ev->cpu_stack + 1);
            pb_end(&p->pkt, d);
        } else {
            PF_TEXT(&p->pkt, TrackEvent, name, ev->name ? ev->name : (const unsigned char *)"",
                    (size_t)ev->name_len);
        }
        if (ev->corr) da_int(&p->pkt, DA_CORR, ev->corr);
        pb_end(&p->pkt, te);
        rc = pf_emit(p);
        break;
    }
    case EV_KERNEL:
        rc = slice(p, ev, stream_track(p, ev), (uint64_t)ev->kernel_id * 4 + 1, 1, ev->kernel_id,
                   ev->flow ? flow_id(p, ev->corr) : 0, 1);
        break;
    case EV_COPY:
        rc = slice(p, ev, stream_track(p, ev), (uint64_t)ev->name_id * 4, 0, ev->name_id,
                   ev->flow ? flow_id(p, ev->corr) : 0, 1);
        break;
    case EV_ALLOC: {
        uint64_t uuid = track_id(p->setno, 4, (uint64_t)ev->agent_id & 0xFFFFFFF);
        if (ensure_track(p, uuid, ev->process_row, 1, "Memory allocated (agent %lld) [bytes]",
                         (long long)agent_index(p, ev->agent_id)))
            return -1;
        uint64_t tot = 0;
        op_u64map_get(&p->alloc_total, (uint64_t)ev->agent_id, &tot);
        int64_t t = (int64_t)tot;
        if (ev->alloc_type && (!strcmp(ev->alloc_type, "FREE") || !strcmp(ev->alloc_type, "RECLAIM"))) t -= ev->size;
        else t += ev->size;
        if (t < 0) t = 0;
        op_u64map_put(&p->alloc_total, (uint64_t)ev->agent_id, (uint64_t)t);
        rc = counter(p, ev->start, uuid, (double)t);
        break;
    }
    case EV_PMC: {
        uint64_t uuid = track_id(p->setno, 5, ((uint64_t)(ev->agent_id & 0xFFF) << 16) ^ (uint64_t)ev->name_id);
        if (ensure_track(p, uuid, ev->process_row, 1, "Agent %lld PMC %.400s", (long long)agent_index(p, ev->agent_id),
                         ev->name ? (const char *)ev->name : "?"))
            return -1;
        rc = counter(p, ev->start, uuid, ev->value);
        break;
    }
    case EV_METRIC: {
        uint64_t uuid = track_id(p->setno, 6, (uint64_t)ev->name_id);
        if (ensure_track(p, uuid, ev->process_row, 1, "%.500s", ev->name ? (const char *)ev->name : "metric")) return -1;
        rc = counter(p, ev->start, uuid, ev->value);
        break;
    }
    case EV_PC:
        rc = pc_event(p, ev);
        break;
    case EV_UM:
        rc = um_event(p, ev);
        break;
    default:
        break;
    }
    if (rc) {
        op_seterr(err, errlen, "%s: write failed: %s", p->path, p->pkt.oom || p->out.oom ? "out of memory" : strerror(errno));
        return OP_OUT_EFAIL;
    }
    return 0;
}

static int pf_end_set(op_sink *k, char *err, size_t errlen) {
    pf_sink *p = (pf_sink *)k;
    int rc = 0;
    if (p->n_pc && pc_flush(p)) {
        op_seterr(err, errlen, "%s: write failed: %s", p->path, p->pkt.oom || p->out.oom ? "out of memory" : strerror(errno));
        rc = OP_OUT_EFAIL;
    }
    p->n_pc = 0;
    op_u64map_free(&p->pc_index);
    op_rd_lookup_free(p->lk);
    p->lk = NULL;
    op_u64map_free(&p->stacks);
    op_u64map_free(&p->names);
    op_u64map_free(&p->tracks);
    op_u64map_free(&p->procs);
    op_u64map_free(&p->alloc_total);
    op_u64map_free(&p->agents);
    return rc;
}

static int pf_finish(op_sink *k, int ok, char *err, size_t errlen) {
    pf_sink *p = (pf_sink *)k;
    pf_end_set(k, err, errlen);
    int rc = 0;
    if (ok && (pf_flush(p, 1) != 0 || fflush(p->f) != 0 || ferror(p->f))) {
        op_seterr(err, errlen, "%s: write failed: %s", p->path, p->out.oom ? "out of memory" : strerror(errno));
        rc = OP_OUT_EFAIL;
    }
    op_buf_free(&p->out);
    op_buf_free(&p->pkt);
    op_buf_free(&p->tmp);
    op_buf_free(&p->stk);
    free(p->pc);
    op_u64map_free(&p->pids.used);
    free(p->path);
    free(p);
    return rc;
}

op_sink *op_sink_pftrace(FILE *f, const char *path, uint32_t seq_base, int threads_desc) {
    pf_sink *p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->f = f;
    p->seq_base = seq_base;
    p->threads_desc = threads_desc;
    if (!(p->path = strdup(path))) {
        free(p);
        return NULL;
    }
    p->base.name = "pftrace";
    p->base.text = (1 << EV_SAMPLE) | (1 << EV_PMC) | (1 << EV_METRIC) | (1 << EV_PC);
    p->base.flows = (1 << EV_REGION) | (1 << EV_KERNEL) | (1 << EV_COPY);
    p->base.begin_set = pf_begin_set;
    p->base.event = pf_event;
    p->base.end_set = pf_end_set;
    p->base.finish = pf_finish;
    return &p->base;
}
