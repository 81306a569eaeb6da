/* ingest_gpu.c — record -> rows for the GPU kinds (ingest thread): kernel dispatches
 * (rocpd_kernel_dispatch, with their kernel symbol), memory copies and sets
 * (rocpd_memory_copy), allocations (rocpd_memory_allocate), synchronization waits
 * (rocpd_region), code objects and kernel symbols, and counter records (a dispatch header
 * links or makes its dispatch; values go to rocpd_info_pmc / rocpd_pmc_event). Each function
 * is named in include/omniprof/kinds.def and returns 0, or -1 when the writer turned off. */
#include <stdio.h>
#include <string.h>

#include "db/writer_internal.h"

/* The rocpd_info_kernel_symbol row of a kernel, created at first sight (W2). display: the
 * name the kernel is shown by (op_db_kernel_display_name). */
static int64_t kernel_symbol_row(op_db_writer *w, uint64_t kernel_id, const char *mangled, const char *display,
                                 int64_t code_object, uint32_t shared, uint32_t local, uint32_t regs)
{
    int64_t id;
    if (op_db_map_get(&w->kernels, kernel_id, &id)) return id;
    sqlite3_stmt *s = w->st[ST_KERNEL_SYMBOL];
    op_db_bind_id_or_null(s, 1, code_object);
    op_db_bind_text(s, 2, mangled ? mangled : display, -1, SQLITE_STATIC);
    op_db_bind_text(s, 3, display, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, (int64_t)kernel_id);
    sqlite3_bind_int64(s, 5, shared);
    sqlite3_bind_int64(s, 6, local);
    sqlite3_bind_int64(s, 7, regs);
    char ext[160];
    int n = snprintf(ext, sizeof ext, "{\"kernel_id\":%llu}", (unsigned long long)kernel_id);
    sqlite3_bind_text(s, 8, ext, n, SQLITE_TRANSIENT);
    if (op_db_step(w, ST_KERNEL_SYMBOL, "inserting a kernel symbol") != 0) return -1;
    return op_db_remember(w, &w->kernels, kernel_id, op_db_last_id(w), "a kernel symbol");
}

/* A CUDA stream belongs to one context: the context of a queue's first kernel is written once
 * into the queue's extdata ("context_id"), and a kernel's row names its context only where it
 * differs from its queue's. 1: the row must name it, 0: the queue does, -1: the writer is off. */
static int queue_context(op_db_writer *w, int64_t queue, uint32_t ctx)
{
    int64_t have;
    if (op_db_map_get(&w->queue_ctx, (uint64_t)queue, &have)) return have != (int64_t)ctx + 1;
    sqlite3_stmt *s = w->st[ST_QUEUE_CTX];
    sqlite3_bind_int64(s, 1, ctx);
    sqlite3_bind_int64(s, 2, queue);
    if (op_db_step(w, ST_QUEUE_CTX, "recording a queue's context") != 0) return -1;
    return op_db_remember(w, &w->queue_ctx, (uint64_t)queue, (int64_t)ctx + 1, "a queue's context") < 0 ? -1 : 0;
}

/* A kernel_dispatch row's cells (the generated parameter numbers, tables_gen.h, less one). */
#define KD(COL) (P_KERNEL_DISPATCH_##COL - 1)
#define MC(COL) (P_MEMORY_COPY_##COL - 1)

/* A kernel row's work-group size, grid size in work-items (rocpd's grid is CUDA's grid times its
 * block), region name and event. */
static void set_launch(op_db_cell *c, omniprof_dim3_t block, omniprof_dim3_t grid, int64_t region, int64_t ev)
{
    op_db_set_int(&c[KD(WORKGROUP_SIZE_X)], block.x);
    op_db_set_int(&c[KD(WORKGROUP_SIZE_Y)], block.y);
    op_db_set_int(&c[KD(WORKGROUP_SIZE_Z)], block.z);
    op_db_set_int(&c[KD(GRID_SIZE_X)], (int64_t)grid.x * block.x);
    op_db_set_int(&c[KD(GRID_SIZE_Y)], (int64_t)grid.y * block.y);
    op_db_set_int(&c[KD(GRID_SIZE_Z)], (int64_t)grid.z * block.z);
    op_db_set_int(&c[KD(REGION_NAME_ID)], region);
    op_db_set_int(&c[KD(EVENT_ID)], ev);
}

/* An event of a counter category (not a tracing kind's): its id or -1. extdata NULL: '{}'. */
static int64_t counter_event(op_db_writer *w, int64_t category, const omniprof_async_correlation_id_t *corr, const char *ext,
                             int extlen)
{
    int64_t id;
    op_db_cell *c = op_db_row(w, Q_EVENT, &id);
    if (!c) return -1;
    op_db_set_int(&c[0], category);
    if (corr->internal) op_db_set_int(&c[1], (int64_t)corr->internal); else op_db_set_null(&c[1]);
    op_db_set_null(&c[2]);
    op_db_set_int(&c[3], (int64_t)corr->external.value);
    op_db_set_text(w, Q_EVENT, &c[4], ext ? ext : "{}", ext ? extlen : 2,
                   ext ? OP_DB_TEXT_CLEAN : OP_DB_TEXT_STABLE | OP_DB_TEXT_CLEAN);
    return id;
}

static dispatch_entry *dispatch_slot(op_db_writer *w, uint64_t dispatch_id)
{
    return &w->dispatchcache[op_hash64(dispatch_id) & (OP_DB_DISPATCHCACHE - 1)];
}

int op_db_ingest_kernel_dispatch(op_db_writer *w, const omniprof_buffer_tracing_kernel_dispatch_record_t *r, uint64_t psize)
{
    (void)psize;
    dispatch_entry *de = r->dispatch_id ? dispatch_slot(w, r->dispatch_id) : NULL;
    if (de && de->dispatch_id == r->dispatch_id && de->from_counters) return 0; /* row made from its counters */
    const char *mangled = op_db_str(w, &r->kernel_name);
    const char *demangled = op_db_str(w, &r->kernel_name_demangled);
    int64_t thread = op_db_thread_row(w, r->thread_id);
    int64_t stream = op_db_stream_row(w, r->stream_id.handle);
    const char *renamed = w->opts.kernel_rename && r->correlation_id.external.value
                              ? w->opts.kernel_rename(r->correlation_id.external.value, w->opts.user)
                              : NULL; /* --kernel-rename: the range around the launch */
    /* The kernel's name id, kept per kernel id (as its symbol row is): PyTorch's demangled names
     * run to hundreds of bytes, and interning one per dispatch (hashing it, and looking up those
     * the string cache does not keep) cost more than the dispatch's rows (issue 12: ingest). */
    int64_t ksym, region = -1;
    int known = r->kernel_id && op_db_map_get(&w->kernels, r->kernel_id, &ksym) &&
                (renamed || op_db_map_get(&w->kernel_names, r->kernel_id, &region));
    if (!known) {
        const char *display = op_db_kernel_display_name(w, mangled, demangled);
        ksym = kernel_symbol_row(w, r->kernel_id, mangled, display, 0, r->static_shared_memory,
                                 r->local_memory_per_thread, r->registers_per_thread);
        if (!renamed) region = op_db_intern(w, display);
        if (!renamed && r->kernel_id && region >= 0)
            region = op_db_remember(w, &w->kernel_names, r->kernel_id, region, "a kernel name");
    }
    if (renamed) region = op_db_intern(w, renamed);
    int64_t agent = op_db_agent_row(w, r->agent_id.handle);
    int64_t queue = stream < 0 ? -1 : op_db_queue_row(w, r->stream_id.handle, stream, agent);
    if (thread < 0 || queue < 0 || ksym < 0 || region < 0) return -1;
    int64_t ev = op_db_insert_event(w, r->kind, r->correlation_id.internal, 0, r->correlation_id.external.value, NULL, 0);
    if (ev < 0) return -1;
    op_db_cell *c = op_db_row(w, Q_KERNEL, NULL);
    if (!c) return -1;
    op_db_set_id(&c[KD(TID)], thread);
    op_db_set_id(&c[KD(AGENT_ID)], agent);
    op_db_set_int(&c[KD(KERNEL_ID)], ksym);
    op_db_set_int(&c[KD(DISPATCH_ID)], (int64_t)r->dispatch_id);
    op_db_set_int(&c[KD(STREAM_ID)], stream);
    op_db_set_int(&c[KD(START)], (int64_t)r->start_timestamp);
    op_db_set_int(&c[KD(END)], (int64_t)r->end_timestamp);
    op_db_set_int(&c[KD(PRIVATE_SEGMENT_SIZE)], r->local_memory_per_thread);
    op_db_set_int(&c[KD(GROUP_SEGMENT_SIZE)], (int64_t)r->static_shared_memory + r->dynamic_shared_memory);
    set_launch(c, r->block_size, r->grid_size, region, ev);
    /* Only what no join gives (issue 12: bytes per record): the device is the agent's, registers
     * per thread the kernel symbol's arch_vgpr_count, dynamic shared memory group_segment_size
     * minus the symbol's static group_segment_size, the context its queue's (queue_context). */
    int own_ctx = queue_context(w, queue, r->context_id);
    if (own_ctx < 0) return -1;
    int n = 1;
    w->scratch[0] = '{';
    if (own_ctx) n += snprintf(w->scratch + n, w->scratch_len - (size_t)n, "\"context_id\":%u", r->context_id);
    if (r->graph_id)
        n += snprintf(w->scratch + n, w->scratch_len - (size_t)n, "%s\"graph_id\":%llu,\"graph_node_id\":%llu",
                      own_ctx ? "," : "", (unsigned long long)r->graph_id, (unsigned long long)r->graph_node_id);
    w->scratch[n++] = '}';
    op_db_set_text(w, Q_KERNEL, &c[KD(EXTDATA)], w->scratch, n, OP_DB_TEXT_CLEAN);
    op_db_set_int(&c[KD(QUEUE_ID)], queue);
    if (de) *de = (dispatch_entry){r->dispatch_id, ev, 0};
    return 0;
}

/* COUNTERS / DISPATCH_HEADER: link to the traced dispatch's event when it was already stored,
 * else store the dispatch (kernels view) from the header, with its own event. */
int op_db_ingest_counter_dispatch_header(op_db_writer *w, const omniprof_counter_dispatch_header_record_t *r, uint64_t psize)
{
    (void)psize;
    dispatch_entry *de = dispatch_slot(w, r->dispatch_id);
    if (r->dispatch_id && de->dispatch_id == r->dispatch_id) return 0;
    const char *name = op_db_str(w, &r->kernel_name);
    int64_t thread = op_db_thread_row(w, r->thread_id);
    int64_t ksym = kernel_symbol_row(w, r->kernel_id, name, name ? name : "", 0, 0, 0, 0);
    int64_t region = op_db_intern(w, name ? name : "");
    int64_t agent = op_db_agent_row(w, r->agent_id.handle);
    int64_t queue = op_db_queue_row(w, OP_DB_UNKNOWN_STREAM, 0, agent); /* the header names no stream */
    if (!w->cat_counter_id) w->cat_counter_id = op_db_intern_n(w, "COUNTER_COLLECTION", 18);
    if (thread < 0 || ksym < 0 || region < 0 || queue < 0 || w->cat_counter_id < 0) return -1;
    int n = snprintf(w->scratch, w->scratch_len, "{\"source\":\"counter_collection\",\"num_passes\":%u,\"config_id\":%llu}",
                     r->num_passes, (unsigned long long)r->config_id.handle);
    int64_t ev = counter_event(w, w->cat_counter_id, &r->correlation_id, w->scratch, n);
    op_db_cell *c = ev < 0 ? NULL : op_db_row(w, Q_KERNEL, NULL);
    if (!c) return -1;
    op_db_set_id(&c[KD(TID)], thread);
    op_db_set_id(&c[KD(AGENT_ID)], agent);
    op_db_set_int(&c[KD(KERNEL_ID)], ksym);
    op_db_set_int(&c[KD(DISPATCH_ID)], (int64_t)r->dispatch_id);
    op_db_set_null(&c[KD(STREAM_ID)]);
    op_db_set_int(&c[KD(START)], (int64_t)r->start_timestamp);
    op_db_set_int(&c[KD(END)], (int64_t)r->end_timestamp);
    op_db_set_null(&c[KD(PRIVATE_SEGMENT_SIZE)]);
    op_db_set_null(&c[KD(GROUP_SEGMENT_SIZE)]);
    set_launch(c, r->block_size, r->grid_size, region, ev);
    op_db_set_text(w, Q_KERNEL, &c[KD(EXTDATA)], "{\"source\":\"counter_collection\"}", -1, OP_DB_TEXT_STABLE | OP_DB_TEXT_CLEAN);
    op_db_set_int(&c[KD(QUEUE_ID)], queue);
    if (r->dispatch_id) *de = (dispatch_entry){r->dispatch_id, ev, 1};
    return 0;
}

/* COUNTERS / VALUE: rocpd_info_pmc (once per counter id) + rocpd_pmc_event on the dispatch's
 * event (device samples, dispatch_id 0, get an event of their own). */
int op_db_ingest_counter_value(op_db_writer *w, const omniprof_counter_value_record_t *r, uint64_t psize)
{
    (void)psize;
    int64_t pmc;
    if (!op_db_map_get(&w->pmcs, r->counter_id.handle, &pmc)) {
        const char *name = op_db_str(w, &r->counter_name);
        sqlite3_stmt *s = w->st[ST_PMC];
        op_db_bind_id_or_null(s, 1, op_db_agent_row(w, r->agent_id.handle));
        sqlite3_bind_int64(s, 2, (int64_t)r->counter_id.handle);
        op_db_bind_text(s, 3, name ? name : "", -1, SQLITE_STATIC);
        op_db_bind_text(s, 4, name ? name : "", -1, SQLITE_STATIC);
        int n = snprintf(w->scratch, w->scratch_len, "{\"counter_id\":%llu}", (unsigned long long)r->counter_id.handle);
        sqlite3_bind_text(s, 5, w->scratch, n, SQLITE_STATIC);
        if (op_db_step(w, ST_PMC, "inserting a counter") != 0) return -1;
        pmc = op_db_last_id(w);
        if (op_db_remember(w, &w->pmcs, r->counter_id.handle, pmc, "a counter") < 0) return -1;
    }
    int64_t ev = 0;
    dispatch_entry *de = r->dispatch_id ? dispatch_slot(w, r->dispatch_id) : NULL;
    if (de && de->dispatch_id == r->dispatch_id) {
        ev = de->event_id;
    } else {
        int64_t *cat = r->dispatch_id ? &w->cat_counter_id : &w->cat_counter_device_id;
        if (!*cat) *cat = r->dispatch_id ? op_db_intern_n(w, "COUNTER_COLLECTION", 18) : op_db_intern_n(w, "COUNTER_DEVICE", 14);
        if (*cat < 0) return -1;
        ev = counter_event(w, *cat, &r->correlation_id, NULL, 0);
        if (ev < 0) return -1;
        if (de) *de = (dispatch_entry){r->dispatch_id, ev, 0};
    }
    sqlite3_stmt *s = w->st[ST_PMC_EVENT];
    sqlite3_bind_int64(s, 1, ev);
    sqlite3_bind_int64(s, 2, pmc);
    sqlite3_bind_double(s, 3, r->value);
    if (r->instance) {
        int n = snprintf(w->scratch, w->scratch_len, "{\"instance\":%llu}", (unsigned long long)r->instance);
        sqlite3_bind_text(s, 4, w->scratch, n, SQLITE_STATIC);
    } else {
        sqlite3_bind_text(s, 4, "{}", 2, SQLITE_STATIC);
    }
    return op_db_step(w, ST_PMC_EVENT, "inserting a counter value");
}

/* A copy (has_src) or a memset (!has_src) row. The host side of a copy (agent handle 0) is the
 * process's CPU agent; a memset's source is its device, as the fill runs there: AMD's views join
 * both agents INNER, so neither may be NULL. The queue is the stream's on the device doing the
 * work (the destination, or the source of a device-to-host copy). */
static int insert_copy(op_db_writer *w, uint32_t kind, int32_t op, const omniprof_async_correlation_id_t *corr,
                       uint64_t tid, uint64_t start, uint64_t end, uint64_t dst_agent, uint64_t src_agent, int has_src,
                       uint64_t bytes, uint64_t stream_handle, const char *ext, size_t extlen)
{
    int64_t thread = op_db_thread_row(w, tid);
    int64_t stream = op_db_stream_row(w, stream_handle);
    int64_t name = op_db_op_name_id(w, kind, op);
    int64_t dst = dst_agent ? op_db_agent_row(w, dst_agent) : has_src ? w->cpu_agent_row : 0;
    int64_t src = !has_src ? dst : src_agent ? op_db_agent_row(w, src_agent) : w->cpu_agent_row;
    int64_t device = dst_agent ? dst : src_agent ? src : 0; /* 0: host to host, the stream's device */
    int64_t queue = stream < 0 ? -1 : op_db_queue_row(w, stream_handle, stream, device);
    if (thread < 0 || queue < 0 || name < 0) return -1;
    int64_t ev = op_db_insert_event(w, kind, corr->internal, 0, corr->external.value, NULL, 0);
    if (ev < 0) return -1;
    op_db_cell *c = op_db_row(w, Q_COPY, NULL);
    if (!c) return -1;
    op_db_set_id(&c[MC(TID)], thread);
    op_db_set_int(&c[MC(START)], (int64_t)start);
    op_db_set_int(&c[MC(END)], (int64_t)end);
    op_db_set_int(&c[MC(NAME_ID)], name);
    op_db_set_id(&c[MC(DST_AGENT_ID)], dst);
    op_db_set_id(&c[MC(SRC_AGENT_ID)], src);
    op_db_set_int(&c[MC(SIZE)], (int64_t)bytes);
    op_db_set_int(&c[MC(STREAM_ID)], stream);
    op_db_set_int(&c[MC(EVENT_ID)], ev);
    op_db_set_text(w, Q_COPY, &c[MC(EXTDATA)], ext, (int)extlen, OP_DB_TEXT_CLEAN);
    op_db_set_int(&c[MC(QUEUE_ID)], queue);
    return 0;
}

int op_db_ingest_memory_copy(op_db_writer *w, const omniprof_buffer_tracing_memory_copy_record_t *r, uint64_t psize)
{
    (void)psize;
    int n = snprintf(w->scratch, w->scratch_len, "{\"src_memory_kind\":\"%s\",\"dst_memory_kind\":\"%s\",\"is_async\":%u,\"device_id\":%u}",
                     op_db_mem_kind_name(r->src_memory_kind), op_db_mem_kind_name(r->dst_memory_kind), r->is_async, r->device_id);
    return insert_copy(w, r->kind, r->operation, &r->correlation_id, r->thread_id, r->start_timestamp,
                       r->end_timestamp, r->dst_agent_id.handle, r->src_agent_id.handle, 1, r->bytes,
                       r->stream_id.handle, w->scratch, (size_t)n);
}

int op_db_ingest_memory_set(op_db_writer *w, const omniprof_buffer_tracing_memory_set_record_t *r, uint64_t psize)
{
    (void)psize;
    int n = snprintf(w->scratch, w->scratch_len, "{\"value\":%u,\"memory_kind\":\"%s\",\"is_async\":%u,\"device_id\":%u}",
                     r->value, op_db_mem_kind_name(r->memory_kind), r->is_async, r->device_id);
    return insert_copy(w, r->kind, r->operation, &r->correlation_id, r->thread_id, r->start_timestamp,
                       r->end_timestamp, r->agent_id.handle, 0, 0, r->bytes, r->stream_id.handle, w->scratch,
                       (size_t)n);
}

int op_db_ingest_memory_allocation(op_db_writer *w, const omniprof_buffer_tracing_memory_allocation_record_t *r, uint64_t psize)
{
    (void)psize;
    int64_t thread = op_db_thread_row(w, r->thread_id);
    int64_t stream = r->stream_id.handle ? op_db_stream_row(w, r->stream_id.handle) : 0;
    int64_t agent = op_db_agent_row(w, r->agent_id.handle);
    int64_t queue = stream > 0 ? op_db_queue_row(w, r->stream_id.handle, stream, agent) : 0;
    if (thread < 0 || stream < 0 || queue < 0) return -1;
    int64_t ev = op_db_insert_event(w, r->kind, r->correlation_id.internal, r->correlation_id.ancestor,
                              r->correlation_id.external.value, NULL, 0);
    if (ev < 0) return -1;
    const char *type = "ALLOC", *level = "REAL";
    switch (r->operation) {
    case OMNIPROF_MEMORY_ALLOCATION_FREE: type = "FREE"; break;
    case OMNIPROF_MEMORY_ALLOCATION_VMEM_ALLOCATE: level = "VIRTUAL"; break;
    case OMNIPROF_MEMORY_ALLOCATION_VMEM_FREE: type = "FREE"; level = "VIRTUAL"; break;
    default: break;
    }
    sqlite3_stmt *s = w->st[ST_MEMORY_ALLOCATE];
    op_db_bind_id_or_null(s, P_MEMORY_ALLOCATE_TID, thread);
    op_db_bind_id_or_null(s, P_MEMORY_ALLOCATE_AGENT_ID, agent);
    sqlite3_bind_text(s, P_MEMORY_ALLOCATE_TYPE, type, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, P_MEMORY_ALLOCATE_LEVEL, level, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, P_MEMORY_ALLOCATE_START, (int64_t)r->start_timestamp);
    sqlite3_bind_int64(s, P_MEMORY_ALLOCATE_END, (int64_t)r->end_timestamp);
    sqlite3_bind_int64(s, P_MEMORY_ALLOCATE_ADDRESS, (int64_t)r->address);
    sqlite3_bind_int64(s, P_MEMORY_ALLOCATE_SIZE, (int64_t)r->allocation_size);
    op_db_bind_id_or_null(s, P_MEMORY_ALLOCATE_STREAM_ID, stream);
    sqlite3_bind_int64(s, P_MEMORY_ALLOCATE_EVENT_ID, ev);
    int n = snprintf(w->scratch, w->scratch_len, "{\"memory_kind\":\"%s\",\"device_id\":%u}", op_db_mem_kind_name(r->memory_kind),
                     r->device_id);
    sqlite3_bind_text(s, P_MEMORY_ALLOCATE_EXTDATA, w->scratch, n, SQLITE_STATIC);
    op_db_bind_id_or_null(s, P_MEMORY_ALLOCATE_QUEUE_ID, queue);
    return op_db_step(w, ST_MEMORY_ALLOCATE, "inserting a memory allocation");
}

int op_db_ingest_synchronization(op_db_writer *w, const omniprof_buffer_tracing_synchronization_record_t *r, uint64_t psize)
{
    int64_t thread = op_db_thread_row(w, r->thread_id);
    int64_t name = op_db_op_name_id(w, r->kind, r->operation);
    if (thread < 0 || name < 0) return -1;
    (void)psize; /* FIXED: a shorter (older) record is read zero-extended, event_sync_id 0 */
    char sid[40] = ""; /* event waits: the recording they waited for (omniprof_cuda_event) */
    if (r->event_sync_id)
        snprintf(sid, sizeof sid, ",\"sync_id\":%llu", (unsigned long long)r->event_sync_id);
    int n = snprintf(w->scratch, w->scratch_len,
                     "{\"stream\":%llu,\"event\":%llu,\"device_id\":%u,\"context_id\":%u%s}",
                     (unsigned long long)r->stream_id.handle, (unsigned long long)r->event_id,
                     r->device_id, r->context_id, sid);
    int64_t ev = op_db_insert_event(w, r->kind, r->correlation_id.internal, 0, r->correlation_id.external.value, w->scratch,
                              (size_t)n);
    if (ev < 0) return -1;
    return op_db_insert_region_or_sample(w, r->kind, thread, r->start_timestamp, r->end_timestamp, name, ev);
}

/* A CUDA event recorded on a stream: one omniprof_cuda_event row, its recording call's ids in
 * an event row (the call's correlation id, as its API row has it). */
int op_db_ingest_cuda_event(op_db_writer *w, const omniprof_buffer_tracing_cuda_event_record_t *r,
                            uint64_t psize)
{
    (void)psize;
    int64_t thread = r->thread_id ? op_db_thread_row(w, r->thread_id) : 0;
    int64_t stream = op_db_stream_row(w, r->stream_id.handle);
    if (thread < 0 || stream < 0) return -1;
    int n = snprintf(w->scratch, w->scratch_len, "{\"device_id\":%u,\"context_id\":%u}",
                     r->device_id, r->context_id);
    int64_t ev = op_db_insert_event(w, r->kind, r->correlation_id.internal, 0,
                                    r->correlation_id.external.value, w->scratch, (size_t)n);
    if (ev < 0) return -1;
    sqlite3_stmt *s = w->st[ST_OP_CUDA_EVENT];
    op_db_bind_id_or_null(s, P_OP_CUDA_EVENT_TID, thread);
    op_db_bind_id_or_null(s, P_OP_CUDA_EVENT_STREAM_ID, stream);
    sqlite3_bind_int64(s, P_OP_CUDA_EVENT_EVENT_ID, ev);
    sqlite3_bind_int64(s, P_OP_CUDA_EVENT_CUDA_EVENT, (int64_t)r->event_id);
    sqlite3_bind_int64(s, P_OP_CUDA_EVENT_SYNC_ID, (int64_t)r->sync_id);
    if (r->device_timestamp)
        sqlite3_bind_int64(s, P_OP_CUDA_EVENT_DEVICE_TIMESTAMP, (int64_t)r->device_timestamp);
    else
        sqlite3_bind_null(s, P_OP_CUDA_EVENT_DEVICE_TIMESTAMP);
    return op_db_step(w, ST_OP_CUDA_EVENT, "inserting a CUDA event record");
}

int op_db_ingest_code_object(op_db_writer *w, const omniprof_buffer_tracing_code_object_record_t *r, uint64_t psize)
{
    (void)psize;
    if (r->operation != OMNIPROF_CODE_OBJECT_LOAD) return 0; /* unloads: nothing in rocpd for them */
    int64_t id;
    if (op_db_map_get(&w->code_objects, r->code_object_id, &id)) return 0;
    const char *uri = op_db_str(w, &r->uri);
    sqlite3_stmt *s = w->st[ST_CODE_OBJECT];
    op_db_bind_id_or_null(s, 1, op_db_agent_row(w, r->agent_id.handle));
    op_db_bind_text(s, 2, uri, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (int64_t)r->load_base);
    sqlite3_bind_int64(s, 4, (int64_t)r->load_size);
    sqlite3_bind_text(s, 5, uri && strncmp(uri, "memory://", 9) == 0 ? "MEMORY" : "FILE", -1, SQLITE_STATIC);
    int n = snprintf(w->scratch, w->scratch_len, "{\"code_object_id\":%llu,\"load_timestamp\":%llu}",
                     (unsigned long long)r->code_object_id, (unsigned long long)r->timestamp);
    sqlite3_bind_text(s, 6, w->scratch, n, SQLITE_STATIC);
    if (op_db_step(w, ST_CODE_OBJECT, "inserting a code object") != 0) return -1;
    if (op_db_remember(w, &w->code_objects, r->code_object_id, op_db_last_id(w), "a code object") < 0) return -1;
    return 0;
}

int op_db_ingest_kernel_symbol(op_db_writer *w, const omniprof_buffer_tracing_kernel_symbol_record_t *r, uint64_t psize)
{
    (void)psize;
    int64_t co = 0;
    op_db_map_get(&w->code_objects, r->code_object_id, &co);
    int64_t existing;
    if (op_db_map_get(&w->kernels, r->kernel_id, &existing)) {
        if (co <= 0) return 0;
        sqlite3_stmt *s = w->st[ST_KSYM_UPD]; /* seen first through a dispatch: attach its code object */
        sqlite3_bind_int64(s, 1, co);
        sqlite3_bind_int64(s, 2, existing);
        return op_db_step(w, ST_KSYM_UPD, "updating a kernel symbol");
    }
    const char *mangled = op_db_str(w, &r->kernel_name);
    const char *display = op_db_kernel_display_name(w, mangled, op_db_str(w, &r->kernel_name_demangled));
    return kernel_symbol_row(w, r->kernel_id, mangled, display, co, r->static_shared_memory,
                             r->local_memory_per_thread, r->registers_per_thread) < 0 ? -1 : 0;
}


int op_db_ingest_correlation_id_retirement(op_db_writer *w,
                                           const omniprof_buffer_tracing_correlation_id_retirement_record_t *r,
                                           uint64_t psize)
{
    (void)w, (void)r, (void)psize; /* nothing to store: ids are never reused within a database */
    return 0;
}
