/* ingest_host.c — record -> rows for the host-side kinds (ingest thread): API calls and wrapped
 * functions (rocpd_region + rocpd_arg), markers (one region or instant per range or mark), CPU
 * samples (rocpd_sample + omniprof_cpu_sample over omniprof_stack nodes), process samples
 * (omniprof_metric on a metric track), thread records (rocpd_info_thread, omniprof_thread),
 * and the writer's internal kinds: agents, run cost, drops, back-pressure. Each function is
 * named in include/omniprof/kinds.def or ingest_kinds.def and returns 0, or -1 when the writer
 * turned off. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "db/writer_internal.h"

int op_db_ingest_api(op_db_writer *w, const omniprof_buffer_tracing_api_record_t *r, uint64_t psize)
{
    int64_t thread = op_db_thread_row(w, r->thread_id);
    int64_t name = op_db_op_name_id(w, r->kind, r->operation);
    if (thread < 0 || name < 0) return -1;
    int64_t ev = op_db_insert_event(w, r->kind, r->correlation_id.internal, r->correlation_id.ancestor,
                              r->correlation_id.external.value, NULL, 0);
    if (ev < 0) return -1;
    if (op_db_insert_region_or_sample(w, r->kind, thread, r->start_timestamp, r->end_timestamp, name, ev) != 0) return -1;
    uint64_t max_args = psize > sizeof *r ? (psize - sizeof *r) / sizeof(omniprof_arg_t) : 0;
    uint32_t nargs = r->num_args < max_args ? r->num_args : (uint32_t)max_args;
    for (uint32_t i = 0; i < nargs; i++) {
        const omniprof_arg_t *a = &r->args[i];
        const char *aname = op_db_str(w, &a->name);
        const char *type;
        char val[40];
        const char *v = val;
        switch (a->type) {
        case OMNIPROF_ARG_TYPE_INT: type = "int64_t"; snprintf(val, sizeof val, "%lld", (long long)a->value.i64); break;
        case OMNIPROF_ARG_TYPE_UINT: type = "uint64_t"; snprintf(val, sizeof val, "%llu", (unsigned long long)a->value.u64); break;
        case OMNIPROF_ARG_TYPE_DOUBLE: type = "double"; snprintf(val, sizeof val, "%.17g", a->value.f64); break;
        case OMNIPROF_ARG_TYPE_POINTER: type = "void*"; snprintf(val, sizeof val, "0x%llx", (unsigned long long)a->value.u64); break;
        case OMNIPROF_ARG_TYPE_STRING: type = "const char*"; v = op_db_str(w, &a->value.str); break;
        default: type = "unknown"; v = NULL; break;
        }
        op_db_cell *c = op_db_row(w, Q_ARG, NULL);
        if (!c) return -1;
        op_db_set_int(&c[0], ev);
        op_db_set_int(&c[1], (int64_t)i);
        op_db_set_text(w, Q_ARG, &c[2], type, -1, OP_DB_TEXT_STABLE | OP_DB_TEXT_CLEAN);
        op_db_set_text(w, Q_ARG, &c[3], aname ? aname : "", -1, OP_DB_TEXT_STABLE);
        op_db_set_text(w, Q_ARG, &c[4], v, -1, v == val ? OP_DB_TEXT_CLEAN : OP_DB_TEXT_STABLE);
    }
    return 0;
}

int op_db_ingest_marker(op_db_writer *w, const omniprof_buffer_tracing_marker_record_t *r, uint64_t psize)
{
    uint64_t avail = psize > sizeof *r ? psize - sizeof *r : 0;
    size_t mlen = r->message_length < avail ? r->message_length : (size_t)avail;
    mlen = strnlen(r->message, mlen);
    int64_t thread = op_db_thread_row(w, r->thread_id);
    int64_t name = mlen ? op_db_intern_n(w, r->message, mlen) : op_db_op_name_id(w, r->kind, r->operation);
    if (thread < 0 || name < 0) return -1;
    size_t at = 0;
    memcpy(w->scratch, "{\"message\":\"", 12);
    at = op_db_json_escape(w, 12, r->message, mlen);
    at += (size_t)snprintf(w->scratch + at, w->scratch_len - at, "\"}");
    int64_t ev = op_db_insert_event(w, r->kind, r->correlation_id.internal, r->correlation_id.ancestor,
                              r->correlation_id.external.value, w->scratch, at);
    if (ev < 0) return -1;
    return op_db_insert_region_or_sample(w, r->kind, thread, r->start_timestamp, r->end_timestamp, name, ev);
}

int op_db_ingest_cpu_sample(op_db_writer *w, const omniprof_cpu_sample_record_t *r, uint64_t psize)
{
    uint64_t max_frames = psize > sizeof *r ? (psize - sizeof *r) / sizeof(uint64_t) : 0;
    uint32_t nf = r->num_frames < max_frames ? r->num_frames : (uint32_t)max_frames;
    if (nf > OMNIPROF_CPU_SAMPLE_MAX_FRAMES) nf = OMNIPROF_CPU_SAMPLE_MAX_FRAMES;
    int64_t thread = op_db_thread_row(w, r->thread_id);
    if (thread < 0) return -1;
    int64_t node = 0;
    for (uint32_t i = 0; i < nf; i++) { /* outermost frame (last) first: the tree's root side */
        node = op_db_stack_node(w, node, r->frames[nf - 1 - i], (int)i);
        if (node < 0) return -1;
    }
    int64_t track = op_db_instant_track(w, thread, r->kind, 0);
    if (track < 0) return -1;
    int64_t ev = op_db_insert_event(w, r->kind, 0, 0, 0, NULL, 0);
    if (ev < 0) return -1;
    int64_t sample = op_db_insert_sample(w, track, r->timestamp, ev);
    if (sample < 0) return -1;
    uint32_t ne = r->num_events < OMNIPROF_CPU_SAMPLE_MAX_EVENTS ? r->num_events : OMNIPROF_CPU_SAMPLE_MAX_EVENTS;
    size_t at = 0;
    w->scratch[at++] = '[';
    for (uint32_t i = 0; i < ne; i++)
        at += (size_t)snprintf(w->scratch + at, w->scratch_len - at, "%s%llu", i ? "," : "",
                               (unsigned long long)r->event_values[i]);
    w->scratch[at++] = ']';
    op_db_cell *c = op_db_row(w, Q_CPU_SAMPLE, NULL);
    if (!c) return -1;
    op_db_set_int(&c[0], thread);
    op_db_set_int(&c[1], (int64_t)r->timestamp);
    op_db_set_text(w, Q_CPU_SAMPLE, &c[2], r->operation == OMNIPROF_CPU_SAMPLE_CPUTIME ? "CPUTIME"
                   : r->operation == OMNIPROF_CPU_SAMPLE_REALTIME ? "REALTIME" : "OTHER", -1,
                   OP_DB_TEXT_STABLE | OP_DB_TEXT_CLEAN);
    op_db_set_int(&c[3], node);
    op_db_set_int(&c[4], sample);
    op_db_set_int(&c[5], (int64_t)nf);
    op_db_set_int(&c[6], (int64_t)r->thread_internal_value);
    op_db_set_int(&c[7], (int64_t)r->peak_rss_bytes);
    op_db_set_text(w, Q_CPU_SAMPLE, &c[8], w->scratch, (int)at, OP_DB_TEXT_CLEAN);
    return 0;
}

int64_t op_db_metric_track(op_db_writer *w, int64_t name_id, uint64_t key, const char *ext, size_t extlen)
{
    int64_t track;
    if (op_db_map_get(&w->metric_tracks, key, &track)) return track;
    sqlite3_stmt *s = w->st[ST_TRACK];
    sqlite3_bind_null(s, 1);
    sqlite3_bind_int64(s, 2, name_id);
    sqlite3_bind_text(s, 3, ext, (int)extlen, SQLITE_STATIC);
    if (op_db_step(w, ST_TRACK, "inserting a metric track") != 0) return -1;
    track = op_db_last_id(w);
    if (op_db_remember(w, &w->metric_tracks, key, track, "a metric track") < 0) return -1;
    return track;
}

int op_db_insert_metric_value(op_db_writer *w, int64_t track, uint64_t timestamp, double value, const char *what)
{
    sqlite3_stmt *s = w->st[ST_OP_METRIC];
    sqlite3_bind_int64(s, 1, track);
    sqlite3_bind_int64(s, 2, (int64_t)timestamp);
    sqlite3_bind_double(s, 3, value);
    return op_db_step(w, ST_OP_METRIC, what);
}

int op_db_ingest_process_sample(op_db_writer *w, const omniprof_process_sample_record_t *r, uint64_t psize)
{
    (void)psize;
    const char *metric = op_db_str(w, &r->metric_name);
    const char *units = op_db_str(w, &r->units);
    int64_t name = metric ? op_db_intern(w, metric) : op_db_intern_n(w, "unnamed", 7);
    if (name < 0) return -1;
    uint64_t key = ((uint64_t)name << 20) ^ r->device_index;
    int64_t track;
    if (!op_db_map_get(&w->metric_tracks, key, &track)) {
        size_t at = (size_t)snprintf(w->scratch, w->scratch_len, "{\"units\":\"");
        at = op_db_json_escape(w, at, units ? units : "", units ? strlen(units) : 0);
        at += (size_t)snprintf(w->scratch + at, w->scratch_len - at,
                               "\",\"device_index\":%u,\"source\":\"process_sample\",\"operation\":%d}", r->device_index,
                               (int)r->operation);
        if ((track = op_db_metric_track(w, name, key, w->scratch, at)) < 0) return -1;
    }
    return op_db_insert_metric_value(w, track, r->timestamp, r->value, "inserting a metric value");
}

int op_db_ingest_thread(op_db_writer *w, const omniprof_thread_record_t *r, uint64_t psize)
{
    (void)psize;
    int64_t thread = op_db_thread_row(w, r->thread_id);
    if (thread < 0) return -1;
    size_t nlen = strnlen(r->name, sizeof r->name);
    if (r->operation == OMNIPROF_THREAD_CREATE) {
        sqlite3_stmt *s = w->st[ST_THREAD_START];
        sqlite3_bind_int64(s, 1, (int64_t)r->timestamp);
        sqlite3_bind_int64(s, 2, thread);
        if (op_db_step(w, ST_THREAD_START, "updating a thread") != 0) return -1;
        s = w->st[ST_OP_THREAD];
        sqlite3_bind_int64(s, 1, thread);
        sqlite3_bind_int64(s, 2, (int64_t)r->thread_id);
        sqlite3_bind_int64(s, 3, (int64_t)r->parent_thread_id);
        sqlite3_bind_int64(s, 4, (int64_t)r->internal_value);
        sqlite3_bind_int64(s, 5, (int64_t)r->sequent_value);
        sqlite3_bind_int(s, 6, r->sequent_value >= OMNIPROF_SEQUENT_PROFILER_OFFSET);
        if (op_db_step(w, ST_OP_THREAD, "inserting thread identity") != 0) return -1;
    } else if (r->operation == OMNIPROF_THREAD_EXIT) {
        sqlite3_stmt *s = w->st[ST_THREAD_END];
        sqlite3_bind_int64(s, 1, (int64_t)r->timestamp);
        sqlite3_bind_int64(s, 2, thread);
        if (op_db_step(w, ST_THREAD_END, "updating a thread") != 0) return -1;
    }
    if (nlen && (r->operation == OMNIPROF_THREAD_NAME || r->operation == OMNIPROF_THREAD_CREATE)) {
        sqlite3_stmt *s = w->st[ST_THREAD_NAME];
        op_db_bind_text(s, 1, r->name, (int)nlen, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, thread);
        if (op_db_step(w, ST_THREAD_NAME, "naming a thread") != 0) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The writer's internal kinds (ingest_kinds.def)                                              */

int op_db_insert_run_cost(op_db_writer *w, const char *name, double value, const char *units)
{
    sqlite3_stmt *s = w->st[ST_OP_RUN_COST];
    sqlite3_bind_text(s, 1, name ? name : "", -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 2, value);
    sqlite3_bind_text(s, 3, units ? units : "", -1, SQLITE_STATIC);
    return op_db_step(w, ST_OP_RUN_COST, "inserting a run-cost row");
}

int op_db_insert_drops(op_db_writer *w, const char *buffer, const char *cause, uint64_t count)
{
    sqlite3_stmt *s = w->st[ST_OP_DROPS];
    sqlite3_bind_text(s, 1, buffer ? buffer : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, cause ? cause : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (int64_t)count);
    return op_db_step(w, ST_OP_DROPS, "inserting a drops row");
}

/* The later fields of an agent record exist when its size covers them. */
#define AGENT_HAS(a, psize, field) ((psize) >= offsetof(omniprof_agent_v0_t, field) + sizeof((a)->field))

/* An agent's extdata: every key AMD's agent loader reads (the fields of rocprofiler_agent_v0_t
 * and gpu_index, in its order — its reader stops at the first missing one), with the CUDA
 * meaning where there is one and 0 (empty lists) where there is none (docs/database.md lists
 * which), then omniprof's own keys. Into w->scratch; the length. */
static size_t agent_extdata(op_db_writer *w, const omniprof_agent_v0_t *a, uint64_t psize, const char *name,
                            const char *vendor, const char *product, const char *model)
{
    int gpu = a->type == OMNIPROF_AGENT_TYPE_GPU;
    uint32_t tpc = AGENT_HAS(a, psize, max_threads_per_cu) ? a->max_threads_per_cu : 0;
    uint32_t copy_engines = AGENT_HAS(a, psize, async_engine_count) ? a->async_engine_count : 0;
    uint32_t block[3] = {0, 0, 0}, grid[3] = {0, 0, 0};
    if (AGENT_HAS(a, psize, max_grid_dim))
        for (int i = 0; i < 3; i++) block[i] = a->max_block_dim[i], grid[i] = a->max_grid_dim[i];
    unsigned dom = 0, bus = 0, dev = 0, fn = 0;
    char bus_id[sizeof a->pci_bus_id + 1], uuid[sizeof a->uuid + 1];
    memcpy(bus_id, a->pci_bus_id, sizeof a->pci_bus_id);
    bus_id[sizeof a->pci_bus_id] = 0;
    memcpy(uuid, a->uuid, sizeof a->uuid);
    uuid[sizeof a->uuid] = 0;
    if (sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) dom = bus = dev = fn = 0;
    uint64_t waves_cu = gpu && a->warp_size ? tpc / a->warp_size : 0;
    uint64_t grid_max = (uint64_t)grid[0] * a->max_threads_per_block;
    char *o = w->scratch;
    size_t cap = w->scratch_len, at = 0;
#define PUT(...) (at += (size_t)snprintf(o + at, at < cap ? cap - at : 0, __VA_ARGS__))
    PUT("{\"size\":%zu,\"id\":{\"handle\":%llu},\"type\":%d,\"cpu_cores_count\":%u,\"simd_count\":%llu,"
        "\"mem_banks_count\":0,\"caches_count\":0,\"io_links_count\":0,\"cpu_core_id_base\":0,\"simd_id_base\":0,"
        "\"max_waves_per_simd\":%llu,\"lds_size_in_kb\":%u,\"gds_size_in_kb\":0,\"num_gws\":0,"
        "\"wave_front_size\":%u,\"num_xcc\":%d,\"cu_count\":%u,\"array_count\":0,\"num_shader_banks\":0,"
        "\"simd_arrays_per_engine\":0,\"cu_per_simd_array\":0,\"simd_per_cu\":%u,\"max_slots_scratch_cu\":0,",
        sizeof *a, (unsigned long long)a->id.handle, gpu ? 2 : 1, gpu ? 0 : a->cu_count,
        gpu ? (unsigned long long)a->cu_count * a->simd_per_cu : 0ull,
        gpu && a->simd_per_cu ? (unsigned long long)(waves_cu / a->simd_per_cu) : 0ull,
        gpu ? a->max_shared_memory_per_block / 1024 : 0, gpu ? a->warp_size : 0, gpu ? 1 : 0, a->cu_count,
        gpu ? a->simd_per_cu : 0);
    PUT("\"gfx_target_version\":%u,\"vendor_id\":%u,\"device_id\":0,\"location_id\":%u,\"domain\":%u,"
        "\"drm_render_minor\":0,\"num_sdma_engines\":%u,\"num_sdma_xgmi_engines\":0,\"num_sdma_queues_per_engine\":0,"
        "\"num_cp_queues\":0,\"max_engine_clk_ccompute\":%llu,\"max_engine_clk_fcompute\":%llu,"
        "\"sdma_fw_version\":{\"uCodeSDMA\":0,\"uCodeRes\":0},"
        "\"fw_version\":{\"uCode\":0,\"Major\":0,\"Minor\":0,\"Stepping\":0},\"capability\":{",
        gpu ? a->compute_capability_major * 10000 + a->compute_capability_minor * 100 : 0, gpu ? 0x10deu : 0u,
        (bus << 8) | (dev << 3) | fn, dom, copy_engines, gpu ? 0ull : (unsigned long long)a->core_clock_khz / 1000,
        gpu ? (unsigned long long)a->core_clock_khz / 1000 : 0ull);
    static const char *const caps[] = {"HotPluggable", "HSAMMUPresent", "SharedWithGraphics", "QueueSizePowerOfTwo",
                                       "QueueSize32bit", "QueueIdleEvent", "VALimit", "WatchPointsSupported",
                                       "WatchPointsTotalBits", "DoorbellType", "AQLQueueDoubleMap",
                                       "DebugTrapSupported", "WaveLaunchTrapOverrideSupported",
                                       "WaveLaunchModeSupported", "PreciseMemoryOperationsSupported",
                                       "DEPRECATED_SRAM_EDCSupport", "Mem_EDCSupport", "RASEventNotify", "ASICRevision",
                                       "SRAM_EDCSupport", "SVMAPISupported", "CoherentHostAccess",
                                       "DebugSupportedFirmware"};
    for (size_t i = 0; i < NELEM(caps); i++) PUT("%s\"%s\":0", i ? "," : "", caps[i]);
    PUT("},\"cu_per_engine\":0,\"max_waves_per_cu\":%llu,\"family_id\":0,\"workgroup_max_size\":%u,"
        "\"grid_max_size\":%llu,\"local_mem_size\":%llu,\"hive_id\":0,\"gpu_id\":0,"
        "\"workgroup_max_dim\":{\"x\":%u,\"y\":%u,\"z\":%u},\"grid_max_dim\":{\"x\":%u,\"y\":%u,\"z\":%u},\"name\":\"",
        (unsigned long long)waves_cu, gpu ? a->max_threads_per_block : 0,
        (unsigned long long)(grid_max > UINT32_MAX ? UINT32_MAX : grid_max), gpu ? (unsigned long long)a->memory_bytes : 0ull,
        block[0], block[1], block[2], grid[0], grid[1], grid[2]);
    const char *names[4] = {name, vendor, product, model};
    static const char *const keys[4] = {"name", "vendor_name", "product_name", "model_name"};
    for (int i = 0; i < 4; i++) {
        if (i) PUT("\",\"%s\":\"", keys[i]);
        if (at < cap) at = op_db_json_text(o, at, cap, names[i] ? names[i] : "", names[i] ? strlen(names[i]) : 0);
    }
    PUT("\",\"node_id\":%llu,\"logical_node_id\":%u,\"logical_node_type_id\":%u,\"mem_banks\":[],\"caches\":[],"
        "\"io_links\":[],\"gpu_index\":%lld,\"uuid\":\"",
        (unsigned long long)a->id.handle, a->logical_index, a->type_index, gpu ? (long long)a->type_index : -1ll);
    if (at < cap) at = op_db_json_text(o, at, cap, uuid, strlen(uuid));
    PUT("\",\"pci_bus_id\":\"");
    if (at < cap) at = op_db_json_text(o, at, cap, bus_id, strlen(bus_id));
    PUT("\",\"numa_node\":%u,\"compute_capability\":\"%u.%u\",\"memory_bytes\":%llu,\"core_clock_khz\":%llu,"
        "\"memory_clock_khz\":%llu,\"memory_bus_width_bits\":%u,\"l2_cache_bytes\":%u,\"max_threads_per_block\":%u,"
        "\"warp_size\":%u,\"max_shared_memory_per_block\":%u,\"max_threads_per_cu\":%u,\"max_shared_memory_per_cu\":%u}",
        a->node_id, a->compute_capability_major, a->compute_capability_minor, (unsigned long long)a->memory_bytes,
        (unsigned long long)a->core_clock_khz, (unsigned long long)a->memory_clock_khz, a->memory_bus_width_bits,
        a->l2_cache_bytes, a->max_threads_per_block, a->warp_size, a->max_shared_memory_per_block, tpc,
        AGENT_HAS(a, psize, max_shared_memory_per_cu) ? a->max_shared_memory_per_cu : 0);
#undef PUT
    return at < cap ? at : cap - 1;
}

int op_db_ingest_agent(op_db_writer *w, const omniprof_agent_v0_t *a, uint64_t psize)
{
    const char *name = op_db_str(w, &a->name), *vendor = op_db_str(w, &a->vendor_name);
    const char *product = op_db_str(w, &a->product_name), *model = op_db_str(w, &a->model_name);
    int64_t id;
    if (op_db_map_get(&w->agents, a->id.handle, &id)) return 0;
    sqlite3_stmt *s = w->st[ST_AGENT];
    sqlite3_bind_text(s, 1, a->type == OMNIPROF_AGENT_TYPE_GPU ? "GPU" : "CPU", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)a->id.handle);
    sqlite3_bind_int64(s, 3, a->logical_index);
    sqlite3_bind_int64(s, 4, a->type_index);
    op_db_bind_text(s, 5, name ? name : "", -1, SQLITE_STATIC);
    op_db_bind_text(s, 6, model ? model : "", -1, SQLITE_STATIC);
    op_db_bind_text(s, 7, vendor ? vendor : "", -1, SQLITE_STATIC);
    op_db_bind_text(s, 8, product ? product : "", -1, SQLITE_STATIC);
    size_t n = agent_extdata(w, a, psize, name, vendor, product, model);
    sqlite3_bind_text(s, 9, w->scratch, (int)n, SQLITE_STATIC);
    if (op_db_step(w, ST_AGENT, "inserting an agent") != 0) return -1;
    if (op_db_remember(w, &w->agents, a->id.handle, op_db_last_id(w), "an agent") < 0) return -1;
    if (a->type != OMNIPROF_AGENT_TYPE_GPU && !w->cpu_agent_row) w->cpu_agent_row = op_db_last_id(w);
    return 0;
}

int op_db_ingest_run_cost(op_db_writer *w, const op_db_int_run_cost *r, uint64_t psize)
{
    (void)psize;
    return op_db_insert_run_cost(w, op_db_str(w, &r->name), r->value, op_db_str(w, &r->units));
}

int op_db_ingest_drops(op_db_writer *w, const op_db_int_drops *r, uint64_t psize)
{
    (void)psize;
    return op_db_insert_drops(w, op_db_str(w, &r->buffer), op_db_str(w, &r->cause), r->count);
}

int op_db_ingest_backpressure(op_db_writer *w, const op_db_int_backpressure *r, uint64_t psize)
{
    (void)psize;
    const char *buffer = op_db_str(w, &r->buffer);
    sqlite3_stmt *s = w->st[ST_OP_BACKPRESSURE];
    sqlite3_bind_text(s, 1, buffer ? buffer : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)r->waits);
    sqlite3_bind_int64(s, 3, (int64_t)r->wait_ns);
    return op_db_step(w, ST_OP_BACKPRESSURE, "inserting a back-pressure row");
}

/* REGION_PROFILE: one omniprof_region_profile row per (node, component). */
int op_db_ingest_region_profile(op_db_writer *w, const omniprof_region_profile_record_t *r, uint64_t psize)
{
    (void)psize;
    int64_t thread = op_db_thread_row(w, r->thread_id);
    if (thread < 0) return -1;
    const char *label = op_db_str(w, &r->label), *component = op_db_str(w, &r->component);
    const char *units = op_db_str(w, &r->units);
    sqlite3_stmt *s = w->st[ST_OP_REGION_PROFILE];
    sqlite3_bind_int64(s, 1, thread);
    sqlite3_bind_int64(s, 2, (int64_t)r->thread_index);
    sqlite3_bind_int64(s, 3, (int64_t)r->node_id);
    sqlite3_bind_int64(s, 4, (int64_t)r->parent_id);
    sqlite3_bind_int64(s, 5, r->depth);
    sqlite3_bind_text(s, 6, label ? label : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 7, component ? component : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 8, units ? units : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 9, (int64_t)r->count);
    sqlite3_bind_double(s, 10, r->sum);
    sqlite3_bind_double(s, 11, r->sum_squares);
    sqlite3_bind_double(s, 12, r->min);
    sqlite3_bind_double(s, 13, r->max);
    sqlite3_bind_double(s, 14, r->self);
    return op_db_step(w, ST_OP_REGION_PROFILE, "inserting a region-profile row");
}

/* CPU_SAMPLE_EVENT: the name of event_values[index] of this process's CPU samples. */
int op_db_ingest_cpu_sample_event(op_db_writer *w, const omniprof_cpu_sample_event_record_t *r,
                                  uint64_t psize)
{
    (void)psize;
    const char *name = op_db_str(w, &r->name);
    sqlite3_stmt *s = w->st[ST_OP_CPU_SAMPLE_EVENT];
    sqlite3_bind_int64(s, 1, (int64_t)r->index);
    sqlite3_bind_text(s, 2, name && *name ? name : "?", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (int64_t)r->type);
    sqlite3_bind_int64(s, 4, (int64_t)r->config);
    return op_db_step(w, ST_OP_CPU_SAMPLE_EVENT, "inserting a CPU sample counter's name");
}
