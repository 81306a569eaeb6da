/* test_writer.c — db.writer: every record kind round-trips into rows with exact values;
 * strings are interned; flush makes rows visible to another connection while the writer runs;
 * agents, run cost, drops, back-pressure and the symbolizer hook land in their tables; an
 * existing file is never overwritten; close writes fini and checkpoints the WAL away. */
#include <errno.h>
#include <sys/stat.h>

#include "db_test.h"
#include "omniprof/counters.h"

static omniprof_status_t fake_symbolize(uint64_t address, omniprof_symbol_cb_t cb, void *cb_data, void *user)
{
    (*(int *)user)++;
    char fn[64];
    snprintf(fn, sizeof fn, "func_%llx", (unsigned long long)address);
    omniprof_symbol_info_t info = {sizeof info, address, fn, fn, "hot.c", (uint32_t)(address & 0xff), 0, "/bin/app", address - 0x400000};
    cb(&info, cb_data);
    if (address == 0x401000) { /* an inlined callee too */
        omniprof_symbol_info_t in = {sizeof in, address, "inlined_helper", NULL, "hot.h", 7, 1, "/bin/app", 0x1000};
        cb(&in, cb_data);
    }
    return OMNIPROF_STATUS_SUCCESS;
}

static const char *op_names(uint32_t kind, int32_t op, void *user)
{
    (void)user;
    if (kind == OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API && op == 7) return "cudaLaunchKernel";
    if (kind == OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API && op == 8) return "cudaMemcpy";
    return NULL;
}

int main(void)
{
    char dir[512], path[600], err[512];
    test_tmpdir(dir, sizeof dir, "writer");
    snprintf(path, sizeof path, "%s/p_results.db", dir);
    op_db_process_info info = test_process_info();
    info.uuid = "0195b6a1-2c3d-7e4f-8a9b-0123456789ab";
    int symbolized = 0;
    OMNIPROF_OPTS(op_db_writer_options, opts, .flush_interval_ms = 50, .operation_name = op_names,
                  .symbolize = fake_symbolize, .user = &symbolized);

    /* bad arguments */
    CHECK(op_db_writer_open(NULL, &info, &opts, err, sizeof err) == NULL && errno == EINVAL);
    CHECK(op_db_writer_open(path, NULL, &opts, err, sizeof err) == NULL && errno == EINVAL);

    op_db_writer *w = op_db_writer_open(path, &info, &opts, err, sizeof err);
    if (!w) fprintf(stderr, "open: %s\n", err);
    CHECK(w != NULL);
    if (!w) return CHECK_DONE();
    CHECK_EQ_STR(op_db_writer_uuid(w), "0195b6a1-2c3d-7e4f-8a9b-0123456789ab");

    /* refusing to overwrite (the live one, and any existing file) */
    CHECK(op_db_writer_open(path, &info, &opts, err, sizeof err) == NULL && errno == EEXIST);
    CHECK(strstr(err, "already exists: refusing to overwrite") != NULL);

    /* agents */
    omniprof_agent_v0_t cpu = {.size = sizeof cpu, .id = {11}, .type = OMNIPROF_AGENT_TYPE_CPU, .logical_index = 0,
                               .type_index = 0, .name = "Test CPU", .vendor_name = "GenuineIntel",
                               .product_name = "Xeon", .model_name = "Xeon 9"};
    omniprof_agent_v0_t gpu = {.size = sizeof gpu, .id = {22}, .type = OMNIPROF_AGENT_TYPE_GPU, .logical_index = 1,
                               .type_index = 0, .name = "NVIDIA H100", .vendor_name = "NVIDIA",
                               .product_name = "H100", .model_name = "GH100", .uuid = "GPU-1234",
                               .compute_capability_major = 9, .cu_count = 132};
    CHECK(op_db_writer_add_agent(w, &cpu) == 0);
    CHECK(op_db_writer_add_agent(w, &gpu) == 0);

    /* thread records */
    omniprof_thread_record_t th = {.size = sizeof th, .kind = OMNIPROF_BUFFER_TRACING_THREAD,
                                   .operation = OMNIPROF_THREAD_CREATE, .timestamp = 500, .thread_id = 101,
                                   .parent_thread_id = 100, .internal_value = 1, .sequent_value = 1};
    snprintf(th.name, sizeof th.name, "worker-1");
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_THREAD, &th) == 1);
    th.operation = OMNIPROF_THREAD_EXIT;
    th.timestamp = 9000;
    th.name[0] = 0;
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_THREAD, &th) == 1);

    /* API: a region with args, and an instant (start == end) -> sample */
    struct {
        omniprof_buffer_tracing_api_record_t r;
        omniprof_arg_t args[3];
    } api;
    memset(&api, 0, sizeof api);
    api.r = make_api(41, 101, 1000, 1500);
    api.r.size = sizeof api;
    api.r.correlation_id.external.value = 77;
    api.r.correlation_id.ancestor = 40;
    api.r.num_args = 3;
    api.args[0] = (omniprof_arg_t){.name = "gridDimX", .type = OMNIPROF_ARG_TYPE_UINT, .value.u64 = 128};
    api.args[1] = (omniprof_arg_t){.name = "stream", .type = OMNIPROF_ARG_TYPE_POINTER, .value.u64 = 0xabc};
    char dyn[32];
    snprintf(dyn, sizeof dyn, "dynamic-%d", 5);
    api.args[2] = (omniprof_arg_t){.name = "label", .type = OMNIPROF_ARG_TYPE_STRING, .value.str = dyn};
    omniprof_record_header_t h1 = {.category = OMNIPROF_RECORD_CATEGORY_TRACING,
                                   .kind = OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, .payload = &api};
    omniprof_buffer_tracing_api_record_t inst = make_api(42, 101, 1600, 1600);
    inst.operation = 8;
    omniprof_record_header_t h2 = {.category = OMNIPROF_RECORD_CATEGORY_TRACING,
                                   .kind = OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, .payload = &inst};
    const omniprof_record_header_t *hs[] = {&h1, &h2};
    CHECK(op_db_writer_append(w, hs, 2) == 2);
    strcpy(dyn, "CLOBBERED"); /* the writer copied it at append time */

    /* markers: a range (region) and a mark (sample) with a message needing JSON escapes */
    char mbuf[sizeof(omniprof_buffer_tracing_marker_record_t) + 64];
    omniprof_buffer_tracing_marker_record_t *m = (void *)mbuf;
    memset(mbuf, 0, sizeof mbuf);
    const char *msg = "phase \"A\"\n";
    m->kind = OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API;
    m->operation = OMNIPROF_MARKER_RANGE_OP_THREAD_RANGE;
    m->correlation_id.internal = 50;
    m->start_timestamp = 2000;
    m->end_timestamp = 3000;
    m->thread_id = 100;
    m->message_length = (uint32_t)strlen(msg);
    memcpy(m->message, msg, strlen(msg) + 1);
    m->size = sizeof *m + m->message_length + 1;
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, m) == 1);
    m->operation = OMNIPROF_MARKER_RANGE_OP_MARK;
    m->correlation_id.internal = 51;
    m->start_timestamp = m->end_timestamp = 3500;
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, m) == 1);

    /* kernel symbol, code object, dispatch x2 (same kernel: one symbol row) */
    omniprof_buffer_tracing_code_object_record_t co = {.size = sizeof co, .kind = OMNIPROF_BUFFER_TRACING_CODE_OBJECT,
                                                       .operation = OMNIPROF_CODE_OBJECT_LOAD, .timestamp = 900,
                                                       .code_object_id = 5, .agent_id = {22}, .uri = "file:///app#offset=0",
                                                       .load_base = 0x7000, .load_size = 0x100};
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_CODE_OBJECT, &co) == 1);
    omniprof_buffer_tracing_kernel_symbol_record_t ks = {.size = sizeof ks, .kind = OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL,
                                                         .operation = OMNIPROF_CODE_OBJECT_LOAD, .kernel_id = 3,
                                                         .code_object_id = 5, .kernel_name = "_Z4axpyPf",
                                                         .kernel_name_demangled = "axpy(float*)",
                                                         .static_shared_memory = 256, .registers_per_thread = 32,
                                                         .local_memory_per_thread = 16};
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL, &ks) == 1);
    omniprof_buffer_tracing_kernel_dispatch_record_t kd;
    memset(&kd, 0, sizeof kd);
    kd.size = sizeof kd;
    kd.kind = OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH;
    kd.operation = OMNIPROF_KERNEL_DISPATCH_COMPLETE;
    kd.correlation_id.internal = 41;
    kd.correlation_id.external.value = 77;
    kd.thread_id = 101;
    kd.start_timestamp = 1700;
    kd.end_timestamp = 2700;
    kd.agent_id.handle = 22;
    kd.stream_id.handle = 7;
    kd.kernel_id = 3;
    kd.dispatch_id = 1;
    kd.kernel_name = "_Z4axpyPf";
    kd.kernel_name_demangled = "axpy(float*)";
    kd.grid_size = (omniprof_dim3_t){4, 2, 1};
    kd.block_size = (omniprof_dim3_t){128, 1, 1};
    kd.static_shared_memory = 256;
    kd.dynamic_shared_memory = 1024;
    kd.local_memory_per_thread = 16;
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, &kd) == 1);
    kd.dispatch_id = 2;
    kd.start_timestamp = 2800;
    kd.end_timestamp = 3100;
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, &kd) == 1);
    /* a dispatch of a kernel without a symbol record: the symbol row is made from its names */
    kd.kernel_id = 9;
    kd.dispatch_id = 3;
    kd.kernel_name = "_Z5otherv";
    kd.kernel_name_demangled = NULL;
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, &kd) == 1);

    /* counters: dispatch 1 (traced above: values join its event), dispatch 50 (not traced: the
     * header makes its kernels row), and a device sample (dispatch 0) */
    omniprof_counter_dispatch_header_record_t ch;
    memset(&ch, 0, sizeof ch);
    ch.size = sizeof ch;
    ch.kind = OMNIPROF_COUNTER_RECORD_DISPATCH_HEADER;
    ch.operation = OMNIPROF_COUNTER_OPERATION_DISPATCH;
    ch.correlation_id.internal = 41;
    ch.dispatch_id = 1;
    ch.kernel_id = 3;
    ch.agent_id.handle = 22;
    ch.thread_id = 101;
    ch.kernel_name = "axpy(float*)";
    ch.num_values = 2;
    omniprof_counter_value_record_t cv;
    memset(&cv, 0, sizeof cv);
    cv.size = sizeof cv;
    cv.kind = OMNIPROF_COUNTER_RECORD_VALUE;
    cv.operation = OMNIPROF_COUNTER_OPERATION_DISPATCH;
    cv.correlation_id.internal = 41;
    cv.dispatch_id = 1;
    cv.counter_id.handle = 1001;
    cv.counter_name = "dram__bytes_read.sum";
    cv.value = 4096.0;
    cv.agent_id.handle = 22;
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_COUNTERS, ch.kind, &ch) == 1);
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_COUNTERS, cv.kind, &cv) == 1);
    cv.instance = 1;
    cv.value = 1024.0; /* a second instance: counters_collection sums them */
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_COUNTERS, cv.kind, &cv) == 1);
    ch.dispatch_id = 50;
    ch.correlation_id.internal = 60;
    ch.kernel_id = 12;
    ch.kernel_name = "scale(double*)";
    ch.grid_size = (omniprof_dim3_t){10, 1, 1};
    ch.block_size = (omniprof_dim3_t){64, 1, 1};
    ch.start_timestamp = 10000;
    ch.end_timestamp = 10250;
    ch.num_passes = 3;
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_COUNTERS, ch.kind, &ch) == 1);
    cv.dispatch_id = 50;
    cv.correlation_id.internal = 60;
    cv.instance = 0;
    cv.value = 77.5;
    cv.counter_id.handle = 1002;
    cv.counter_name = "sm__cycles_elapsed.max";
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_COUNTERS, cv.kind, &cv) == 1);
    cv.dispatch_id = 0;
    cv.correlation_id.internal = 0;
    cv.operation = OMNIPROF_COUNTER_OPERATION_DEVICE;
    cv.value = 5.0;
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_COUNTERS, cv.kind, &cv) == 1);

    /* copy, memset, allocations, synchronization */
    omniprof_buffer_tracing_memory_copy_record_t mc = {.size = sizeof mc, .kind = OMNIPROF_BUFFER_TRACING_MEMORY_COPY,
                                                       .operation = OMNIPROF_MEMORY_COPY_HOST_TO_DEVICE,
                                                       .correlation_id = {43, {0}}, .thread_id = 101,
                                                       .start_timestamp = 4000, .end_timestamp = 4400,
                                                       .src_agent_id = {11}, .dst_agent_id = {22}, .bytes = 4096,
                                                       .src_memory_kind = OMNIPROF_MEMORY_KIND_PINNED,
                                                       .dst_memory_kind = OMNIPROF_MEMORY_KIND_DEVICE,
                                                       .stream_id = {7}};
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_MEMORY_COPY, &mc) == 1);
    omniprof_buffer_tracing_memory_set_record_t ms = {.size = sizeof ms, .kind = OMNIPROF_BUFFER_TRACING_MEMORY_SET,
                                                      .operation = 1, .correlation_id = {44, {0}}, .thread_id = 101,
                                                      .start_timestamp = 4500, .end_timestamp = 4600,
                                                      .agent_id = {22}, .bytes = 512, .value = 0xff, .stream_id = {7}};
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_MEMORY_SET, &ms) == 1);
    omniprof_buffer_tracing_memory_allocation_record_t ma = {.size = sizeof ma, .kind = OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION,
                                                             .operation = OMNIPROF_MEMORY_ALLOCATION_ALLOCATE,
                                                             .correlation_id = {45, {0}, 0}, .thread_id = 101,
                                                             .start_timestamp = 4700, .end_timestamp = 4750,
                                                             .agent_id = {22}, .address = 0x7f0000, .allocation_size = 1 << 20};
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION, &ma) == 1);
    ma.operation = OMNIPROF_MEMORY_ALLOCATION_FREE;
    ma.start_timestamp = 8000;
    ma.end_timestamp = 8010;
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION, &ma) == 1);
    omniprof_buffer_tracing_synchronization_record_t sy = {.size = sizeof sy, .kind = OMNIPROF_BUFFER_TRACING_SYNCHRONIZATION,
                                                           .operation = OMNIPROF_SYNCHRONIZATION_STREAM,
                                                           .correlation_id = {46, {0}}, .thread_id = 101,
                                                           .start_timestamp = 5000, .end_timestamp = 5800,
                                                           .stream_id = {7}};
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_SYNCHRONIZATION, &sy) == 1);

    /* CPU samples: two stacks sharing a prefix (main -> work -> {hot, cold}) */
    struct {
        omniprof_cpu_sample_record_t r;
        uint64_t frames[3];
    } cs;
    memset(&cs, 0, sizeof cs);
    cs.r.size = sizeof cs;
    cs.r.kind = OMNIPROF_BUFFER_TRACING_CPU_SAMPLE;
    cs.r.operation = OMNIPROF_CPU_SAMPLE_CPUTIME;
    cs.r.timestamp = 6000;
    cs.r.thread_id = 101;
    cs.r.thread_internal_value = 1;
    cs.r.peak_rss_bytes = 1 << 24;
    cs.r.num_events = 2;
    cs.r.event_values[0] = 123;
    cs.r.event_values[1] = 4;
    cs.r.num_frames = 3;
    cs.frames[0] = 0x401000; /* innermost: hot */
    cs.frames[1] = 0x402000; /* work */
    cs.frames[2] = 0x403000; /* main */
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_SAMPLING, OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, &cs) == 1);
    cs.r.timestamp = 6100;
    cs.frames[0] = 0x404000; /* cold */
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_SAMPLING, OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, &cs) == 1);
    cs.r.timestamp = 6200;
    cs.frames[0] = 0x401000;
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_SAMPLING, OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, &cs) == 1);

    /* process samples */
    char metric[32];
    snprintf(metric, sizeof metric, "rss_bytes");
    omniprof_process_sample_record_t ps = {.size = sizeof ps, .kind = OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE,
                                           .operation = OMNIPROF_PROCESS_SAMPLE_PROCESS, .timestamp = 7000,
                                           .metric_name = metric, .units = "bytes", .value = 1048576.0};
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_SAMPLING, OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE, &ps) == 1);
    ps.timestamp = 7100;
    ps.value = 2097152.0;
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_SAMPLING, OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE, &ps) == 1);
    ps.metric_name = "cpu_freq_mhz.3";
    ps.units = "MHz";
    ps.device_index = 3;
    ps.value = 2400.5;
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_SAMPLING, OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE, &ps) == 1);

    /* malformed records are dropped and counted, never crash */
    uint64_t bad = 3; /* size smaller than any header */
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, &bad) == 0);
    CHECK(op_db_writer_append_one(w, 1, 1, NULL) == -EINVAL);

    CHECK(op_db_writer_add_run_cost(w, "tool_init_ns", 12345.0, "ns") == 0);
    CHECK(op_db_writer_add_drops(w, "buffer 1", "buffer_full", 17) == 0);
    CHECK(op_db_writer_add_backpressure(w, "buffer 2", 3, 4500) == 0);

    /* flush: everything visible to another connection while the writer runs */
    CHECK(op_db_writer_flush(w, 5000) == 0);
    sqlite3 *r = test_open_ro(path);
    CHECK(r != NULL);
    CHECK_EQ_STR(q_text(r, "SELECT value FROM rocpd_metadata WHERE tag='schema_version'"), "3");
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM regions WHERE name='cudaLaunchKernel' AND category='CUDA_RUNTIME_API' AND start=1000 AND end=1500 AND duration=500 AND stack_id=41 AND parent_stack_id=40 AND corr_id=77"), 1);
    CHECK_EQ_INT(q_i64(r, "SELECT tid FROM regions WHERE name='cudaLaunchKernel'"), 101);
    CHECK_EQ_INT(q_i64(r, "SELECT pid FROM regions WHERE name='cudaLaunchKernel'"), getpid());
    CHECK_EQ_STR(q_text(r, "SELECT group_concat(arg_name || '=' || arg_value || ':' || arg_type, ';') FROM (SELECT * FROM events_args WHERE stack_id=41 ORDER BY arg_position)"),
                 "gridDimX=128:uint64_t;stream=0xabc:void*;label=dynamic-5:const char*");
    /* a zero-length call keeps its function's name (its track is named by it) and its category */
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM samples WHERE name='cudaMemcpy' AND category='CUDA_RUNTIME_API' AND timestamp=1600 AND stack_id=42"), 1);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM regions WHERE category='MARKER_RANGE_API' AND name='phase \"A\"' || char(10) AND start=2000 AND end=3000 AND tid=100"), 1);
    CHECK_EQ_STR(q_text(r, "SELECT json_extract(extdata, '$.message') FROM samples WHERE category='MARKER_RANGE_API'"), "phase \"A\"\n");
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM region_args"), 3);
    /* regions: API, marker range, synchronization; samples: API instant, mark, 3 CPU samples */
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM regions_and_samples"), 8);
    /* kernels */
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM kernels"), 4);
    /* counters */
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM pmc_info"), 2);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM pmc_events"), 3); /* the device sample has no dispatch */
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_pmc_event"), 4);
    CHECK_EQ_STR(q_text(r, "SELECT name || '|' || counter_value || '|' || dispatch_id FROM pmc_events WHERE counter_name='dram__bytes_read.sum' AND json_extract((SELECT extdata FROM rocpd_pmc_event P WHERE P.id = pmc_events.id), '$.instance') IS NULL"),
                 "axpy(float*)|4096.0|1");
    CHECK_EQ_STR(q_text(r, "SELECT kernel_name || '|' || value || '|' || counter_name FROM counters_collection WHERE dispatch_id=1"),
                 "axpy(float*)|5120.0|dram__bytes_read.sum");
    CHECK_EQ_STR(q_text(r, "SELECT kernel_name || '|' || value || '|' || grid_size_x || '|' || workgroup_size_x || '|' || correlation_id FROM counters_collection WHERE dispatch_id=50"),
                 "scale(double*)|77.5|640|64|0");
    CHECK_EQ_STR(q_text(r, "SELECT name || '|' || duration || '|' || stack_id FROM kernels WHERE dispatch_id=50"), "scale(double*)|250|60");
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_pmc_event P JOIN rocpd_event E ON E.id = P.event_id JOIN rocpd_string S ON S.id = E.category_id WHERE S.string='COUNTER_DEVICE' AND P.value=5"), 1);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM kernels WHERE name='axpy(float*)' AND region='axpy(float*)' AND grid_x=512 AND grid_y=2 AND workgroup_x=128 AND lds_size=1280 AND scratch_size=16 AND static_lds_size=256 AND corr_id=77 AND stack_id=41 AND agent_type='GPU' AND agent_abs_index=22 AND stream='stream 7' AND tid=101"), 2);
    CHECK_EQ_INT(q_i64(r, "SELECT sum(duration) FROM kernels WHERE name='axpy(float*)'"), 1300);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM kernel_symbols"), 3); /* axpy, _Z5otherv, scale (from counters) */
    /* what the dispatch's extdata leaves out, a join gives: dynamic shared memory, registers, device,
     * context (its queue's) */
    CHECK_EQ_STR(q_text(r, "SELECT (K.group_segment_size - S.group_segment_size) || '|' || S.arch_vgpr_count || '|' || "
                           "A.type || '|' || K.extdata || '|' || json_extract(Q.extdata, '$.context_id') FROM "
                           "rocpd_kernel_dispatch K JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id JOIN "
                           "rocpd_info_agent A ON A.id = K.agent_id JOIN rocpd_info_queue Q ON Q.id = K.queue_id "
                           "WHERE K.dispatch_id = 1"),
                 "1024|32|GPU|{}|0");
    CHECK_EQ_INT(q_i64(r, "SELECT code_object_id FROM kernels WHERE dispatch_id=1"), q_i64(r, "SELECT id FROM code_objects"));
    CHECK_EQ_STR(q_text(r, "SELECT name FROM kernels WHERE dispatch_id=3"), "_Z5otherv");
    CHECK_EQ_STR(q_text(r, "SELECT uri || '|' || storage_type_str || '|' || load_base FROM code_objects"), "file:///app#offset=0|FILE|28672");
    CHECK_EQ_STR(q_text(r, "SELECT name || '|' || total_calls FROM top_kernels ORDER BY total_duration DESC LIMIT 1"), "axpy(float*)|2");
    /* copies and memsets */
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM memory_copies WHERE name='MEMORY_COPY_HOST_TO_DEVICE' AND size=4096 AND src_device='Test CPU' AND dst_device='NVIDIA H100' AND duration=400 AND corr_id=0 AND stack_id=43 AND stream_name='stream 7' AND tid=101"), 1);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM omniprof_memory_sets WHERE size=512 AND device='NVIDIA H100' AND duration=100"), 1);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM memory_allocations WHERE type='ALLOC' AND level='REAL' AND size=1048576 AND address=8323072 AND agent_name='NVIDIA H100'"), 1);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM memory_allocations WHERE type='FREE'"), 1);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM regions WHERE category='SYNCHRONIZATION' AND name='SYNCHRONIZATION_STREAM' AND duration=800"), 1);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM busy WHERE type='GPU'"), 1);
    CHECK(q_i64(r, "SELECT count(*) FROM top") >= 5);
    /* CPU samples and the stack tree: 4 nodes (main, work, hot, cold), 3 samples */
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM omniprof_stack"), 4);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM omniprof_cpu_samples WHERE tid=101 AND clock='CPUTIME' AND num_frames=3 AND peak_rss_bytes=16777216 AND event_values='[123,4]'"), 3);
    CHECK_EQ_INT(q_i64(r, "SELECT count(DISTINCT stack_id) FROM omniprof_cpu_sample"), 2);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM samples WHERE category='CPU_SAMPLE' AND tid=101"), 3);
    CHECK_EQ_STR(q_text(r, "SELECT group_concat(printf('%x', address), '<') FROM (SELECT F.address FROM omniprof_stack_frames F WHERE F.stack_id=(SELECT stack_id FROM omniprof_cpu_sample WHERE timestamp=6100) ORDER BY F.level)"),
                 "404000<402000<403000");
    /* metrics */
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM omniprof_metrics WHERE name='rss_bytes' AND units='bytes'"), 2);
    CHECK_EQ_INT(q_i64(r, "SELECT value FROM omniprof_metrics WHERE name='rss_bytes' AND timestamp=7100"), 2097152);
    CHECK_EQ_STR(q_text(r, "SELECT value || '|' || device_index || '|' || units FROM omniprof_metrics WHERE name='cpu_freq_mhz.3'"), "2400.5|3|MHz");
    /* threads */
    CHECK_EQ_STR(q_text(r, "SELECT name || '|' || start || '|' || end FROM threads WHERE tid=101"), "worker-1|500|9000");
    CHECK_EQ_STR(q_text(r, "SELECT internal_value || '|' || sequent_value || '|' || parent_tid || '|' || is_profiler_thread FROM omniprof_threads WHERE tid=101"), "1|1|100|0");
    /* process / node */
    CHECK_EQ_STR(q_text(r, "SELECT hostname || '|' || machine_id || '|' || command || '|' || init || '|' || start FROM processes"),
                 "testhost|machine-0123|./app --flag|1000|2000");
    CHECK_EQ_STR(q_text(r, "SELECT json_extract(environment, '$.WEIRD') FROM rocpd_info_process"), "a\"b\\c");
    CHECK_EQ_INT(q_i64(r, "SELECT json_extract(extdata, '$.rank') FROM rocpd_info_process"), 3);
    CHECK_EQ_INT(q_i64(r, "SELECT json_extract(extdata, '$.realtime_offset_ns') FROM rocpd_info_process"), 1700000000000000000ll);
    /* agents */
    CHECK_EQ_STR(q_text(r, "SELECT group_concat(type || ':' || name || ':' || vendor_name, ',') FROM (SELECT * FROM rocpd_info_agent ORDER BY id)"),
                 "CPU:Test CPU:GenuineIntel,GPU:NVIDIA H100:NVIDIA");
    CHECK_EQ_STR(q_text(r, "SELECT json_extract(extdata, '$.uuid') FROM rocpd_info_agent WHERE type='GPU'"), "GPU-1234");
    /* run cost / drops / back-pressure */
    CHECK_EQ_INT(q_i64(r, "SELECT value FROM omniprof_run_cost WHERE name='tool_init_ns'"), 12345);
    CHECK_EQ_INT(q_i64(r, "SELECT count FROM omniprof_drops WHERE buffer='buffer 1' AND cause='buffer_full'"), 17);
    CHECK_EQ_INT(q_i64(r, "SELECT wait_ns FROM omniprof_backpressure WHERE buffer='buffer 2' AND waits=3"), 4500);
    /* interning: each string once */
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_string WHERE string='axpy(float*)'"), 1);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_string WHERE string='cudaLaunchKernel'"), 1);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM (SELECT string FROM rocpd_string GROUP BY string HAVING count(*) > 1)"), 0);
    CHECK_EQ_INT(q_i64(r, "SELECT count(DISTINCT guid) FROM rocpd_region"), 1);

    op_db_writer_stats st = {.size = sizeof st};
    CHECK(op_db_writer_get_stats(w, &st) == 0);
    CHECK_EQ_INT(st.records_appended, 33);
    CHECK_EQ_INT(st.records_dropped, 1);
    CHECK(st.rows_written > 40);
    CHECK_EQ_INT(st.failed, 0);

    /* close: fini written, symbols filled, WAL checkpointed away */
    CHECK(op_db_writer_close(w) == 0);
    CHECK_EQ_INT(symbolized, 4);
    char wal[700];
    snprintf(wal, sizeof wal, "%s-wal", path);
    struct stat sb;
    CHECK(stat(wal, &sb) != 0 || sb.st_size == 0);
    CHECK(q_i64(r, "SELECT fini FROM processes") > 0);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM omniprof_symbol"), 5);
    CHECK_EQ_STR(q_text(r, "SELECT group_concat(coalesce(function, '?'), ' <- ') FROM (SELECT * FROM omniprof_stack_frames F WHERE F.stack_id=(SELECT stack_id FROM omniprof_cpu_sample WHERE timestamp=6000) ORDER BY level)"),
                 "func_401000 <- func_402000 <- func_403000");
    CHECK_EQ_STR(q_text(r, "SELECT function || ':' || line FROM omniprof_symbol WHERE address=4198400 AND inline_depth=1"), "inlined_helper:7");
    /* the folded-stacks query of docs/database.md §2 */
    CHECK_EQ_STR(q_text(r, "WITH RECURSIVE w(stack_id, node, frames) AS ("
                           " SELECT stack_id, stack_id, '' FROM (SELECT DISTINCT stack_id FROM omniprof_cpu_sample WHERE stack_id != 0)"
                           " UNION ALL SELECT w.stack_id, S.parent_id,"
                           " coalesce((SELECT function FROM omniprof_symbol Y WHERE Y.address = S.address AND Y.inline_depth = 0),"
                           " printf('0x%x', S.address)) || CASE w.frames WHEN '' THEN '' ELSE ';' || w.frames END"
                           " FROM w JOIN omniprof_stack S ON S.id = w.node WHERE w.node != 0)"
                           " SELECT group_concat(frames || ' ' || samples, '|') FROM (SELECT frames, (SELECT count(*) FROM omniprof_cpu_sample C"
                           " WHERE C.stack_id = w.stack_id) AS samples FROM w WHERE node = 0 ORDER BY frames)"),
                 "func_403000;func_402000;func_401000 2|func_403000;func_402000;func_404000 1");
    CHECK(q_i64(r, "SELECT value FROM omniprof_run_cost WHERE name='db_records_appended'") == 33);
    CHECK_EQ_STR(q_text(r, "PRAGMA integrity_check"), "ok");
    sqlite3_close(r);
    CHECK(op_db_writer_close(NULL) == 0);

    /* batched inserts (rows.c): 1000 API calls with an argument each (every 5th zero-length: a
     * sample) and 1000 kernel dispatches, appended 250 at a time, so that queues fill (32 rows),
     * are written in the middle of a batch and at its end; every row links to its own event. */
    snprintf(path, sizeof path, "%s/batched.db", dir);
    w = op_db_writer_open(path, &info, &opts, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return CHECK_DONE();
    CHECK(op_db_writer_add_agent(w, &gpu) == 0);
    enum { NB = 1000, CHUNK = 250 };
    static struct {
        omniprof_buffer_tracing_api_record_t a;
        omniprof_arg_t arg;
    } apis[NB];
    static omniprof_buffer_tracing_kernel_dispatch_record_t kds[NB];
    static omniprof_record_header_t bh[2 * NB];
    static const omniprof_record_header_t *bhp[2 * NB];
    for (uint64_t i = 0; i < NB; i++) {
        apis[i].a = make_api(1000 + i, 101 + i % 2, 100000 + i * 10, 100000 + i * 10 + (i % 5 ? 5 : 0));
        apis[i].a.size = sizeof apis[i];
        apis[i].a.num_args = 1;
        apis[i].arg = (omniprof_arg_t){.name = "i", .type = OMNIPROF_ARG_TYPE_INT, .value.i64 = (int64_t)i};
        kds[i] = kd;
        kds[i].correlation_id.internal = 1000 + i;
        kds[i].dispatch_id = 5000 + i;
        kds[i].start_timestamp = 200000 + i * 10;
        kds[i].end_timestamp = 200000 + i * 10 + 7;
        if (i == NB - 1) kds[i].context_id = 5; /* not its queue's context: named on its row */
        bh[2 * i] = (omniprof_record_header_t){.category = OMNIPROF_RECORD_CATEGORY_TRACING, .kind = apis[i].a.kind, .payload = &apis[i]};
        bh[2 * i + 1] = (omniprof_record_header_t){.category = OMNIPROF_RECORD_CATEGORY_TRACING, .kind = kds[i].kind, .payload = &kds[i]};
    }
    for (size_t i = 0; i < 2 * NB; i++) bhp[i] = &bh[i];
    for (size_t i = 0; i < 2 * NB; i += CHUNK) CHECK(op_db_writer_append(w, bhp + i, CHUNK) == CHUNK);
    CHECK(op_db_writer_close(w) == 0);
    r = test_open_ro(path);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_event"), 2 * NB);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid"
                          " WHERE R.start = 100000 + (E.stack_id - 1000) * 10"), NB - NB / 5);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_sample S JOIN rocpd_event E ON E.id = S.event_id"
                          " WHERE S.timestamp = 100000 + (E.stack_id - 1000) * 10"), NB / 5);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_arg A JOIN rocpd_event E ON E.id = A.event_id"
                          " WHERE A.value = CAST(E.stack_id - 1000 AS TEXT) AND A.type = 'int64_t' AND A.name = 'i'"), NB);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_kernel_dispatch K JOIN rocpd_event E ON E.id = K.event_id"
                          " WHERE K.dispatch_id = 5000 + E.stack_id - 1000 AND K.start = 200000 + (E.stack_id - 1000) * 10"), NB);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_kernel_dispatch K JOIN rocpd_info_queue Q ON Q.id = K.queue_id"
                          " WHERE K.extdata = '{}' AND json_extract(Q.extdata, '$.context_id') = 0"), NB - 1);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_kernel_dispatch WHERE extdata = '{\"context_id\":5}'"), 1);
    CHECK_EQ_STR(q_text(r, "SELECT DISTINCT guid FROM rocpd_kernel_dispatch"), "0195b6a1-2c3d-7e4f-8a9b-0123456789ab");
    sqlite3_close(r);

    /* an existing ordinary file is never overwritten */
    snprintf(path, sizeof path, "%s/existing.db", dir);
    FILE *f = fopen(path, "w");
    fputs("keep me", f);
    fclose(f);
    CHECK(op_db_writer_open(path, &info, NULL, err, sizeof err) == NULL && errno == EEXIST);
    f = fopen(path, "r");
    char buf[16] = "";
    CHECK(fgets(buf, sizeof buf, f) && strcmp(buf, "keep me") == 0);
    fclose(f);
    /* a missing directory is a clear error and leaves nothing */
    snprintf(path, sizeof path, "%s/no/such/dir/x.db", dir);
    CHECK(op_db_writer_open(path, &info, NULL, err, sizeof err) == NULL && errno == ENOENT);
    CHECK(strstr(err, "directory does not exist") != NULL);
    test_rmtree(dir);
    return CHECK_DONE();
}
