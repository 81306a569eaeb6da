/* compat_db.c — writes a database through omniprof's real writer (op_db_writer_*: spool, ingest,
 * schema) with every GPU and host record kind a CUDA run produces, including the shapes that
 * made AMD's rocpd views drop rows: GPU work whose launching thread is unknown (thread_id 0),
 * copies whose host side has no agent (handle 0), memsets, allocations with and without a
 * stream, a dispatch known only from its counters (no stream), zero-length API calls, marks,
 * CPU samples, and names that are not valid UTF-8.
 *
 * usage: compat_db OUT.db [--iterations N] [--pid P]
 * Prints one line of JSON with the counts the tests expect (see tests/compat/test_compat.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"
#include "omniprof/counters.h"
#include "omniprof/cpu.h"
#include "omniprof/gpu.h"
#include "omniprof/tracing.h"

enum { CPU_AGENT = 1, GPU0 = 2, GPU1 = 3 };
static op_db_writer *g_w;
static long g_appended;

static void put(uint32_t category, uint32_t kind, const void *payload)
{
    if (op_db_writer_append_one(g_w, category, kind, payload) != 1) {
        fprintf(stderr, "compat_db: record of kind %u refused: %s\n", kind, op_db_writer_error(g_w));
        exit(1);
    }
    g_appended++;
}
#define TRACE(kind, p) put(OMNIPROF_RECORD_CATEGORY_TRACING, kind, p)

static const char *op_names(uint32_t kind, int32_t op, void *user)
{
    (void)user;
    if (kind == OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API) {
        static const char *const names[] = {"cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync", "cudaMalloc",
                                            "cudaGetLastError"};
        return op >= 0 && op < 5 ? names[op] : NULL;
    }
    return NULL;
}

static void api(uint64_t corr, uint64_t tid, int32_t op, uint64_t start, uint64_t end)
{
    omniprof_buffer_tracing_api_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API;
    r.operation = op;
    r.correlation_id.internal = corr;
    r.start_timestamp = start;
    r.end_timestamp = end;
    r.thread_id = tid;
    TRACE(r.kind, &r);
}

static void marker(uint32_t kind, uint64_t tid, uint64_t start, uint64_t end, const char *msg)
{
    size_t n = strlen(msg);
    omniprof_buffer_tracing_marker_record_t *m = calloc(1, sizeof *m + n + 1);
    m->size = sizeof *m + n + 1;
    m->kind = kind;
    m->operation = 1;
    m->start_timestamp = start;
    m->end_timestamp = end;
    m->thread_id = m->end_thread_id = tid;
    m->message_length = (uint32_t)n;
    memcpy(m->message, msg, n + 1);
    TRACE(kind, m);
    free(m);
}

static void agent(uint64_t id, uint32_t type, uint32_t type_index, const char *name)
{
    omniprof_agent_v0_t a = {.size = sizeof a, .id = {id}, .type = type, .logical_index = (uint32_t)id - 1,
                             .type_index = type_index, .name = name, .vendor_name = type == OMNIPROF_AGENT_TYPE_GPU ? "NVIDIA" : "GenuineIntel",
                             .product_name = name, .model_name = type == OMNIPROF_AGENT_TYPE_GPU ? "GH100" : "x86_64",
                             .cu_count = type == OMNIPROF_AGENT_TYPE_GPU ? 132 : 8, .simd_per_cu = 4,
                             .compute_capability_major = 9, .warp_size = 32, .memory_bytes = 80ull << 30,
                             .max_threads_per_block = 1024, .max_shared_memory_per_block = 49152};
    if (type == OMNIPROF_AGENT_TYPE_GPU) {
        snprintf(a.uuid, sizeof a.uuid, "GPU-0000000%u-aaaa-bbbb-cccc-dddddddddddd", type_index);
        snprintf(a.pci_bus_id, sizeof a.pci_bus_id, "0000:1%u:00.0", type_index);
    }
    if (op_db_writer_add_agent(g_w, &a) != 0) exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT.db [--iterations N] [--pid P]\n", argv[0]);
        return 2;
    }
    long iters = 64, pid = getpid();
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--iterations")) iters = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--pid")) pid = atol(argv[i + 1]);
    }
    op_db_process_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    info.pid = pid;
    info.ppid = 1;
    info.init_ns = 1000;
    info.start_ns = 1000;
    info.hostname = "compat-host";
    info.command = "./compat_app";
    info.rank = -1;
    info.world_size = -1;
    op_db_writer_options opts;
    memset(&opts, 0, sizeof opts);
    opts.size = sizeof opts;
    opts.operation_name = op_names;
    char err[512];
    g_w = op_db_writer_open(argv[1], &info, &opts, err, sizeof err);
    if (!g_w) {
        fprintf(stderr, "compat_db: %s\n", err);
        return 1;
    }
    agent(CPU_AGENT, OMNIPROF_AGENT_TYPE_CPU, 0, "Compat CPU");
    agent(GPU0, OMNIPROF_AGENT_TYPE_GPU, 0, "NVIDIA H100 80GB HBM3");
    agent(GPU1, OMNIPROF_AGENT_TYPE_GPU, 1, "NVIDIA H100 80GB HBM3");

    /* a code object and the kernel symbols */
    omniprof_buffer_tracing_code_object_record_t co = {.size = sizeof co, .kind = OMNIPROF_BUFFER_TRACING_CODE_OBJECT,
                                                       .operation = OMNIPROF_CODE_OBJECT_LOAD, .timestamp = 1100,
                                                       .code_object_id = 9, .agent_id = {GPU0},
                                                       .uri = "memory://1#offset=0x1000&size=4096", .load_base = 0x1000,
                                                       .load_size = 4096};
    TRACE(co.kind, &co);
    static const char *const mangled[] = {"_Z4axpyPf", "_Z6reduceILi256EEvPf", "_Z4fill\xff\xfePc"};
    static const char *const demangled[] = {"axpy(float*)", "void reduce<256>(float*)", "fill\xff\xfe(char*)"};
    for (int k = 0; k < 3; k++) {
        omniprof_buffer_tracing_kernel_symbol_record_t ks = {
            .size = sizeof ks, .kind = OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL, .operation = OMNIPROF_CODE_OBJECT_LOAD,
            .kernel_id = (uint64_t)k + 1, .code_object_id = 9, .kernel_name = mangled[k],
            .kernel_name_demangled = demangled[k], .static_shared_memory = 256u * (unsigned)k,
            .registers_per_thread = 32u + 8u * (unsigned)k, .local_memory_per_thread = 16};
        TRACE(ks.kind, &ks);
    }

    const uint64_t tids[2] = {(uint64_t)pid, (uint64_t)pid + 1};
    long n_kernels = 0, n_copies = 0, n_memsets = 0, n_allocs = 0, n_no_thread = 0, n_regions = 0, n_instants = 0;
    long n_marks = 0, n_ranges = 0;
    uint64_t t = 10000, corr = 0;
    for (long it = 0; it < iters; it++) {
        uint64_t tid = tids[it % 2];
        uint64_t gpu = (it % 4 == 3) ? GPU1 : GPU0;
        uint64_t stream = gpu == GPU1 ? 40 : 7 + (uint64_t)(it % 3); /* 3 streams on GPU0, 1 on GPU1 */
        uint64_t launcher = (it % 10 == 9) ? 0 : tid;                /* every 10th: no launching thread */
        if (!launcher) n_no_thread++;
        ++corr;
        api(corr, tid, 0, t, t + 400);
        n_regions++;
        omniprof_buffer_tracing_kernel_dispatch_record_t kd;
        memset(&kd, 0, sizeof kd);
        kd.size = sizeof kd;
        kd.kind = OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH;
        kd.operation = OMNIPROF_KERNEL_DISPATCH_COMPLETE;
        kd.correlation_id.internal = launcher ? corr : 0;
        kd.thread_id = launcher;
        kd.start_timestamp = t + 1000;
        kd.end_timestamp = t + 1000 + 500 + (uint64_t)(it % 7) * 100;
        kd.agent_id.handle = gpu;
        kd.device_id = (uint32_t)gpu - GPU0;
        kd.stream_id.handle = stream;
        kd.kernel_id = (uint64_t)(it % 3) + 1;
        kd.dispatch_id = corr;
        kd.kernel_name = mangled[it % 3];
        kd.kernel_name_demangled = demangled[it % 3];
        kd.grid_size = (omniprof_dim3_t){64, 1, 1};
        kd.block_size = (omniprof_dim3_t){256, 1, 1};
        kd.static_shared_memory = 256u * (unsigned)(it % 3);
        kd.registers_per_thread = 32u + 8u * (unsigned)(it % 3);
        TRACE(kd.kind, &kd);
        n_kernels++;
        if (it % 4 == 1) { /* a copy: H2D, D2H, D2D, H2H in turn; the host side has no agent */
            static const int32_t ops[] = {OMNIPROF_MEMORY_COPY_HOST_TO_DEVICE, OMNIPROF_MEMORY_COPY_DEVICE_TO_HOST,
                                          OMNIPROF_MEMORY_COPY_DEVICE_TO_DEVICE, OMNIPROF_MEMORY_COPY_HOST_TO_HOST};
            int32_t op = ops[(it / 4) % 4];
            ++corr;
            api(corr, tid, 1, t + 450, t + 700);
            n_regions++;
            omniprof_buffer_tracing_memory_copy_record_t mc;
            memset(&mc, 0, sizeof mc);
            mc.size = sizeof mc;
            mc.kind = OMNIPROF_BUFFER_TRACING_MEMORY_COPY;
            mc.operation = op;
            mc.correlation_id.internal = corr;
            mc.thread_id = launcher;
            mc.start_timestamp = t + 2000;
            mc.end_timestamp = t + 2600;
            mc.src_agent_id.handle = (op == OMNIPROF_MEMORY_COPY_HOST_TO_DEVICE || op == OMNIPROF_MEMORY_COPY_HOST_TO_HOST) ? 0 : gpu;
            mc.dst_agent_id.handle = (op == OMNIPROF_MEMORY_COPY_DEVICE_TO_HOST || op == OMNIPROF_MEMORY_COPY_HOST_TO_HOST) ? 0 : gpu;
            mc.bytes = 4096;
            mc.stream_id.handle = stream;
            TRACE(mc.kind, &mc);
            n_copies++;
        }
        if (it % 8 == 2) { /* a memset */
            ++corr;
            api(corr, tid, 2, t + 450, t + 650);
            n_regions++;
            omniprof_buffer_tracing_memory_set_record_t ms;
            memset(&ms, 0, sizeof ms);
            ms.size = sizeof ms;
            ms.kind = OMNIPROF_BUFFER_TRACING_MEMORY_SET;
            ms.operation = 1;
            ms.correlation_id.internal = corr;
            ms.thread_id = launcher;
            ms.start_timestamp = t + 2700;
            ms.end_timestamp = t + 2900;
            ms.agent_id.handle = gpu;
            ms.bytes = 1 << 20;
            ms.stream_id.handle = stream;
            TRACE(ms.kind, &ms);
            n_memsets++;
        }
        if (it % 8 == 5) { /* an allocation: every other one on a stream, every third without a thread */
            ++corr;
            api(corr, tid, 3, t + 450, t + 800);
            n_regions++;
            omniprof_buffer_tracing_memory_allocation_record_t ma;
            memset(&ma, 0, sizeof ma);
            ma.size = sizeof ma;
            ma.kind = OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION;
            ma.operation = (it / 8) % 2 ? OMNIPROF_MEMORY_ALLOCATION_FREE : OMNIPROF_MEMORY_ALLOCATION_ALLOCATE;
            ma.correlation_id.internal = corr;
            ma.thread_id = (it / 8) % 3 == 2 ? 0 : tid;
            if (!ma.thread_id) n_no_thread++;
            ma.start_timestamp = ma.end_timestamp = t + 600;
            ma.agent_id.handle = gpu;
            ma.address = 0x7f0000000000ull + (uint64_t)it * 4096;
            ma.allocation_size = 1 << 20;
            ma.stream_id.handle = (it / 8) % 2 ? stream : 0;
            TRACE(ma.kind, &ma);
            n_allocs++;
        }
        if (it % 5 == 0) { /* a zero-length call: an instant named by its function */
            api(++corr, tid, 4, t + 900, t + 900);
            n_instants++;
        }
        if (it % 16 == 0) { /* a range around 16 iterations' worth of time, and a mark */
            marker(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, tid, t, t + 3000, it % 32 ? "phase one" : "phase \xe9t\xe9");
            marker(OMNIPROF_BUFFER_TRACING_MARKER_API, tid, t + 50, t + 50, "checkpoint");
            n_ranges++;
            n_marks++;
        }
        t += 3500;
    }
    /* a dispatch known only from its counters (kernel replay): no stream in the header */
    omniprof_counter_dispatch_header_record_t ch;
    memset(&ch, 0, sizeof ch);
    ch.size = sizeof ch;
    ch.kind = OMNIPROF_COUNTER_RECORD_DISPATCH_HEADER;
    ch.operation = OMNIPROF_COUNTER_OPERATION_DISPATCH;
    ch.correlation_id.internal = ++corr;
    ch.dispatch_id = (1ull << 62) | 1;
    ch.kernel_id = 1;
    ch.agent_id.handle = GPU0;
    ch.thread_id = tids[0];
    ch.kernel_name = "axpy(float*)";
    ch.grid_size = (omniprof_dim3_t){64, 1, 1};
    ch.block_size = (omniprof_dim3_t){256, 1, 1};
    ch.start_timestamp = t;
    ch.end_timestamp = t + 700;
    ch.num_values = 2;
    ch.num_passes = 1;
    put(OMNIPROF_RECORD_CATEGORY_COUNTERS, ch.kind, &ch);
    for (int c = 0; c < 2; c++) {
        omniprof_counter_value_record_t cv;
        memset(&cv, 0, sizeof cv);
        cv.size = sizeof cv;
        cv.kind = OMNIPROF_COUNTER_RECORD_VALUE;
        cv.operation = OMNIPROF_COUNTER_OPERATION_DISPATCH;
        cv.correlation_id.internal = corr;
        cv.dispatch_id = ch.dispatch_id;
        cv.counter_id.handle = (uint64_t)c + 1;
        cv.counter_name = c ? "sm__cycles_elapsed.max" : "dram__bytes_read.sum";
        cv.value = 1000.0 * (c + 1);
        cv.agent_id.handle = GPU0;
        put(OMNIPROF_RECORD_CATEGORY_COUNTERS, cv.kind, &cv);
    }
    n_kernels++;
    /* CPU call-stack samples */
    for (int s = 0; s < 8; s++) {
        size_t sz = sizeof(omniprof_cpu_sample_record_t) + 3 * sizeof(uint64_t);
        omniprof_cpu_sample_record_t *cs = calloc(1, sz);
        cs->size = sz;
        cs->kind = OMNIPROF_BUFFER_TRACING_CPU_SAMPLE;
        cs->operation = OMNIPROF_CPU_SAMPLE_REALTIME;
        cs->timestamp = 10000 + (uint64_t)s * 5000;
        cs->thread_id = tids[s % 2];
        cs->num_frames = 3;
        cs->frames[0] = 0x401000 + (uint64_t)s % 2;
        cs->frames[1] = 0x402000;
        cs->frames[2] = 0x403000;
        TRACE(cs->kind, cs);
        free(cs);
    }
    if (op_db_writer_close(g_w) != 0) {
        fprintf(stderr, "compat_db: close failed\n");
        return 1;
    }
    printf("{\"kernels\":%ld,\"copies\":%ld,\"memsets\":%ld,\"allocations\":%ld,\"no_thread\":%ld,\"regions\":%ld,"
           "\"api_instants\":%ld,\"marks\":%ld,\"ranges\":%ld,\"cpu_samples\":8,\"pid\":%ld,\"records\":%ld}\n",
           n_kernels, n_copies, n_memsets, n_allocs, n_no_thread, n_regions + n_ranges, n_instants, n_marks, n_ranges,
           pid, g_appended);
    return 0;
}
