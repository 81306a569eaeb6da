/* ingest_pc.c — record -> rows for what samples or counts inside GPU kernels and memory:
 *   PC_SAMPLE       one omniprof_pc_sample row per record (include/omniprof/pc_sampling.h)
 *   PM_SAMPLE       one omniprof_metric value on the counter track of (device, metric), named
 *                   "gpu<N>.<metric>", extdata {"source":"pm_sampling","metric",...}
 *   SASS_METRIC     one omniprof_sass_metric row per record (include/omniprof/sass_metrics.h)
 *   UNIFIED_MEMORY  one omniprof_unified_memory row per record (include/omniprof/gpu.h)
 * Names are interned in rocpd_string (a kernel by the name it is shown by, as in
 * rocpd_kernel_dispatch). Each function is named in include/omniprof/kinds.def and returns 0,
 * or -1 when the writer turned off. */
#include <stdio.h>
#include <string.h>

#include "db/writer_internal.h"

static void bind_string(op_db_writer *w, sqlite3_stmt *s, int i, const char *text)
{
    op_db_bind_id_or_null(s, i, text && *text ? op_db_intern(w, text) : 0);
}

/* The code site a GPU sample names, bound to the seven columns from col on: kernel id, the
 * kernel's display name, code object, PC offset, instruction, source file, line. */
static void bind_code_site(op_db_writer *w, sqlite3_stmt *s, int col, uint64_t kernel_id, const char *display,
                           uint64_t code_object_id, uint64_t pc_offset, const char *instruction,
                           const char *source_file, uint32_t line)
{
    sqlite3_bind_int64(s, col, (int64_t)kernel_id);
    bind_string(w, s, col + 1, display);
    sqlite3_bind_int64(s, col + 2, (int64_t)code_object_id);
    sqlite3_bind_int64(s, col + 3, (int64_t)pc_offset);
    bind_string(w, s, col + 4, instruction);
    bind_string(w, s, col + 5, source_file);
    sqlite3_bind_int64(s, col + 6, line);
}

/* The code site of a PC sample or a SASS metric record (both spell these fields alike). */
#define BIND_CODE_SITE(w, s, col, r)                                                                           \
    bind_code_site((w), (s), (col), (r)->kernel_id,                                                            \
                   op_db_kernel_display_name((w), op_db_str((w), &(r)->kernel_name),                           \
                                             op_db_str((w), &(r)->kernel_name_demangled)),                     \
                   (r)->code_object_id, (r)->pc_offset, op_db_str((w), &(r)->instruction),                     \
                   op_db_str((w), &(r)->source_file), (r)->source_line)

int op_db_ingest_pc_sample(op_db_writer *w, const omniprof_pc_sample_record_t *r, uint64_t psize)
{
    (void)psize;
    sqlite3_stmt *s = w->st[ST_OP_PC_SAMPLE];
    op_db_bind_id_or_null(s, 1, op_db_agent_row(w, r->agent_id.handle));
    sqlite3_bind_int64(s, 2, (int64_t)r->timestamp);
    sqlite3_bind_int64(s, 3, r->operation);
    sqlite3_bind_int64(s, 4, (int64_t)r->correlation_id.internal);
    sqlite3_bind_int64(s, 5, (int64_t)r->dispatch_id);
    BIND_CODE_SITE(w, s, 6, r);
    bind_string(w, s, 13, op_db_str(w, &r->stall_reason));
    sqlite3_bind_int64(s, 14, r->samples);
    sqlite3_bind_int64(s, 15, r->pc_samples);
    return op_db_step(w, ST_OP_PC_SAMPLE, "inserting a PC sample");
}

/* The unit a PM metric's value is in, from its name (NVPW naming: <unit>__<counter>.<rollup>). */
static const char *pm_units(const char *metric)
{
    if (strstr(metric, ".pct") || strstr(metric, "pct_of_peak")) return "%";
    if (strstr(metric, ".per_second")) return "1/s";
    if (strstr(metric, "bytes")) return "bytes";
    if (strstr(metric, "time_duration")) return "ns";
    if (strstr(metric, "cycles")) return "cycles";
    return "count";
}

int op_db_ingest_pm_sample(op_db_writer *w, const omniprof_pm_sample_record_t *r, uint64_t psize)
{
    (void)psize;
    const char *metric = op_db_str(w, &r->metric_name);
    if (!metric || !*metric) metric = "unnamed";
    char name[600];
    snprintf(name, sizeof name, "gpu%u.%s", r->device_index, metric);
    int64_t name_id = op_db_intern(w, name);
    if (name_id < 0) return -1;
    /* the top bit keeps PM tracks apart from process-sampler tracks of the same name */
    uint64_t key = (((uint64_t)name_id << 20) ^ r->device_index) | (1ull << 63);
    int64_t track;
    if (!op_db_map_get(&w->metric_tracks, key, &track)) {
        size_t at = (size_t)snprintf(w->scratch, w->scratch_len, "{\"units\":\"%s\",\"device_index\":%u,"
                                     "\"source\":\"pm_sampling\",\"interval_ns\":%llu,\"agent_id\":%lld,\"metric\":\"",
                                     pm_units(metric), r->device_index, (unsigned long long)r->interval,
                                     (long long)op_db_agent_row(w, r->agent_id.handle));
        at = op_db_json_escape(w, at, metric, strlen(metric));
        at += (size_t)snprintf(w->scratch + at, w->scratch_len - at, "\"}");
        if ((track = op_db_metric_track(w, name_id, key, w->scratch, at)) < 0) return -1;
    }
    return op_db_insert_metric_value(w, track, r->start_timestamp, r->value, "inserting a PM sample");
}

int op_db_ingest_sass_metric(op_db_writer *w, const omniprof_sass_metric_record_t *r, uint64_t psize)
{
    (void)psize;
    sqlite3_stmt *s = w->st[ST_OP_SASS_METRIC];
    op_db_bind_id_or_null(s, 1, op_db_agent_row(w, r->agent_id.handle));
    sqlite3_bind_int64(s, 2, (int64_t)r->timestamp);
    BIND_CODE_SITE(w, s, 3, r);
    bind_string(w, s, 10, op_db_str(w, &r->metric_name));
    sqlite3_bind_int64(s, 11, (int64_t)r->value);
    return op_db_step(w, ST_OP_SASS_METRIC, "inserting a SASS metric");
}

static const char *const k_um_ops[OMNIPROF_UNIFIED_MEMORY_LAST] = {
    "UNKNOWN", "MIGRATE_HOST_TO_DEVICE", "MIGRATE_DEVICE_TO_HOST", "MIGRATE_DEVICE_TO_DEVICE",
    "CPU_PAGE_FAULT", "GPU_PAGE_FAULT", "THRASHING", "THROTTLING", "REMOTE_MAP"};
static const char *const k_um_causes[OMNIPROF_UNIFIED_MEMORY_CAUSE_LAST] = {
    NULL, "USER", "COHERENCE", "PREFETCH", "EVICTION", "ACCESS_COUNTERS", "THRASHING", "POLICY",
    "OUT_OF_MEMORY", "READ", "WRITE", "ATOMIC", "PREFETCH_ACCESS"};

int op_db_ingest_unified_memory(op_db_writer *w, const omniprof_buffer_tracing_unified_memory_record_t *r,
                                uint64_t psize)
{
    (void)psize;
    int op = r->operation > 0 && r->operation < OMNIPROF_UNIFIED_MEMORY_LAST ? r->operation : 0;
    const char *cause = r->cause < OMNIPROF_UNIFIED_MEMORY_CAUSE_LAST ? k_um_causes[r->cause] : NULL;
    /* handle 0 is the host: the process's CPU agent, as for copies */
    int64_t src = r->src_agent_id.handle ? op_db_agent_row(w, r->src_agent_id.handle) : w->cpu_agent_row;
    int64_t dst = r->dst_agent_id.handle ? op_db_agent_row(w, r->dst_agent_id.handle) : w->cpu_agent_row;
    if (op == OMNIPROF_UNIFIED_MEMORY_GPU_PAGE_FAULT || op == OMNIPROF_UNIFIED_MEMORY_CPU_PAGE_FAULT ||
        op == OMNIPROF_UNIFIED_MEMORY_THRASHING || op == OMNIPROF_UNIFIED_MEMORY_THROTTLING)
        dst = 0; /* no destination */
    sqlite3_stmt *s = w->st[ST_OP_UNIFIED_MEMORY];
    sqlite3_bind_text(s, 1, k_um_ops[op], -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)r->start_timestamp);
    sqlite3_bind_int64(s, 3, (int64_t)(r->end_timestamp >= r->start_timestamp ? r->end_timestamp : r->start_timestamp));
    op_db_bind_id_or_null(s, 4, src);
    op_db_bind_id_or_null(s, 5, dst);
    sqlite3_bind_int64(s, 6, (int64_t)r->address);
    sqlite3_bind_int64(s, 7, (int64_t)r->bytes);
    sqlite3_bind_int64(s, 8, (int64_t)r->value);
    if (cause) sqlite3_bind_text(s, 9, cause, -1, SQLITE_STATIC);
    else sqlite3_bind_null(s, 9);
    return op_db_step(w, ST_OP_UNIFIED_MEMORY, "inserting a unified memory event");
}
