/* bench_db_gpu.c — sustained ingest of GPU-like records through the real database writer (issue
 * 12), beside bare SQLite inserting the same rows, in one run on one machine.
 *
 * The records imitate a launch-bound PyTorch training step as the CUDA backend delivers it: per
 * kernel launch a CUDA_RUNTIME_API record (cudaLaunchKernel) and the KERNEL_DISPATCH record with
 * the same correlation id, on one of 48 kernels with PyTorch-like names (mangled and demangled,
 * some demangled names longer than 256 bytes); every 16th launch a cudaMemcpyAsync with its
 * MEMORY_COPY record; between launches runtime calls without GPU work (cudaStreamIsCapturing,
 * cudaEventRecord, ...); a second thread (autograd's) making a quarter of the launches. Records
 * come in buffers of 256 of one kind family, as the SDK's buffers deliver them.
 *
 * Runs, interleaved ROUNDS times (so a burst of load from the other users of the machine hits
 * both sides alike):
 *   bare    a prepared-statement loop (one-row statements: k_floor[0]) writing exactly the
 *           writer's rows for those records into the same schema (op_db_schema_create), same
 *           pragmas, same rows per transaction:
 *           rocpd_event + rocpd_region per API call, rocpd_event + rocpd_kernel_dispatch per
 *           kernel, rocpd_event + rocpd_memory_copy per copy, the same extdata texts;
 *   writer  op_db_writer_append (buffers of 256) -> spool -> ingest thread -> SQLite, timed from
 *           the first append to op_db_writer_flush returning (the producer keeps at most 64 MB of
 *           backlog, as LOSSLESS buffers would); then op_db_writer_close is timed on its own;
 *   floor   the same rows through multi-row INSERTs of 128 rows in faster SQLite configurations,
 *           timed to the close (k_floor: page size, journal, synchronous, exclusive locking, with
 *           or without the event rows); by default the fastest on the same rows (no journal,
 *           synchronous=OFF: not crash-safe) and the fastest at all (also without the event
 *           rows); BENCH_DB_GPU_FLOOR=all runs every configuration, =none none. Printed beside
 *           the writer with a TARGET line: whether 1 M records/s is within SQLite's reach here.
 *           Two-connection floors (issue 12): the rocpd_event rows written by a second thread
 *           through a second connection into a side database (a file beside the database,
 *           or SQLite's memdb), moved into the database at the end by `INSERT INTO rocpd_event
 *           SELECT * FROM side.rocpd_event` (SQLite's transfer: records copied without decoding),
 *           or by a `WHERE id > 0` copy (no transfer: what moving chunks during the run takes);
 *           every row written into two memdb databases by two threads and all moved at the end
 *           (the move alone: metric db_gpu_floor_move_ceiling); the checkpoints run by a second
 *           connection in a second thread, or only at the close.
 * Prints `metric=<name> value=<number> unit=<unit>` lines: records/s and rows/s of both, their
 * ratio, the ingest thread's own rate (records per second of its busy time), the database's
 * bytes per record and per row after close, and the close time.
 * Sizes: BENCH_DB_GPU_RECORDS (default 2,000,000 per round), BENCH_DB_GPU_ROUNDS (5; the writer/bare
 * ratio printed is the median of the rounds' ratios, with their min and max).
 * BENCH_DB_GPU_ONLY=writer|bare|floor runs one side (for profilers). Files go to BENCH_DB_DIR (default
 * a fresh directory under /tmp), removed at the end. */
#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_db_sql.h"
#include "common/clock.h"
#include "db/db.h"
#include "omniprof/agent.h"
#include "omniprof/gpu.h"
#include "omniprof/tracing.h"

#define BUF 256        /* records per delivered buffer */
#define NKERNELS 48
#define MAIN_TID 41230 /* OS thread ids of the Python thread and autograd's */
#define AUTOGRAD_TID 41263
#define GPU_AGENT 0x100
#define CPU_AGENT 0x1
#define STREAM 0x55d1c0a0ull
#define UUID "0195b6a1-2c3d-7e4f-8a9b-0123456789ab"
#define SFX "_0195b6a1_2c3d_7e4f_8a9b_0123456789ab"

static const char *g_dir;

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 10) : dflt;
}

static void die(const char *what, sqlite3 *db)
{
    fprintf(stderr, "bench_db_gpu: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
    exit(1);
}

/* ------------------------------------------------------------------------------------------ */
/* The workload                                                                               */

/* CUDA runtime operations of the workload (the tool names them through the SDK; here the
 * writer's operation_name callback does). */
enum { OP_LAUNCH = 1, OP_MEMCPY_ASYNC, OP_IS_CAPTURING, OP_EVENT_RECORD, OP_GET_LAST_ERROR, OP_STREAM_SYNC, OP__N };
static const char *const k_ops[OP__N] = {NULL, "cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamIsCapturing",
                                         "cudaEventRecord", "cudaGetLastError", "cudaStreamSynchronize"};

static char g_mangled[NKERNELS][512], g_demangled[NKERNELS][1024];

static void make_kernel_names(void)
{
    static const char *const functors[] = {"CUDAFunctor_add<float>", "MulFunctor<float>", "FillFunctor<float>",
                                           "AbsFunctor<float>", "sqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}",
                                           "GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda(float)#1}",
                                           "DivFunctor<float>", "lerp_kernel_scalar_weight(at::TensorIteratorBase&, c10::Scalar const&)::{lambda(float, float)#1}"};
    for (int k = 0; k < NKERNELS; k++) {
        const char *f = functors[k % 8];
        switch (k / 8) {
        case 0: /* elementwise with a lambda: long (> 256 bytes) demangled names */
            snprintf(g_demangled[k], sizeof g_demangled[k],
                     "void at::native::elementwise_kernel<128, %d, at::native::gpu_kernel_impl_nocast<at::native::%s >"
                     "(at::TensorIteratorBase&, at::native::%s const&)::{lambda(int)#1}>(int, at::native::"
                     "gpu_kernel_impl_nocast<at::native::%s >(at::TensorIteratorBase&, at::native::%s const&)::"
                     "{lambda(int)#1})", 2 + k % 3, f, f, f, f);
            snprintf(g_mangled[k], sizeof g_mangled[k],
                     "_ZN2at6native18elementwise_kernelILi128ELi%dEZNS0_22gpu_kernel_impl_nocastINS0_%zu%.40sEEEvRNS_18"
                     "TensorIteratorBaseERKT_EUliE_EEviT1_", 2 + k % 3, strlen(f), f);
            break;
        case 1:
            snprintf(g_demangled[k], sizeof g_demangled[k],
                     "void at::native::vectorized_elementwise_kernel<4, at::native::%s, std::array<char*, %d> >(int, "
                     "at::native::%s, std::array<char*, %d>)", f, 2 + k % 2, f, 2 + k % 2);
            snprintf(g_mangled[k], sizeof g_mangled[k],
                     "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_%zu%.40sESt5arrayIPcLm%dEEEEviT0_T1_", strlen(f),
                     f, 2 + k % 2);
            break;
        case 2:
            snprintf(g_demangled[k], sizeof g_demangled[k], "ampere_sgemm_%dx%d_%s", 32 << (k % 4), 64 << (k / 4 % 2),
                     k % 2 ? "tn" : "nn");
            snprintf(g_mangled[k], sizeof g_mangled[k], "%.*s", (int)sizeof g_mangled[k] - 1, g_demangled[k]);
            break;
        case 3:
            snprintf(g_demangled[k], sizeof g_demangled[k],
                     "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<"
                     "float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::"
                     "{lambda(float, float)#%d}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::"
                     "func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)"
                     "::{lambda(float, float)#%d}>, unsigned int, float, 4>)", k, k);
            snprintf(g_mangled[k], sizeof g_mangled[k],
                     "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11sum_functorIfff"
                     "EclERNS_14TensorIteratorEEUlffE%d_EEjfLi4EEEEEvT1_", k);
            break;
        case 4:
            snprintf(g_demangled[k], sizeof g_demangled[k],
                     "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_%dx%d_16x5_tn_align4>(cutlass_80_tensorop_"
                     "s1688gemm_%dx%d_16x5_tn_align4::Params)", 64 << (k % 4), 128 >> (k / 4 % 2), 64 << (k % 4), 128 >> (k / 4 % 2));
            snprintf(g_mangled[k], sizeof g_mangled[k],
                     "_ZN7cutlass7Kernel2I50cutlass_80_tensorop_s1688gemm_%dx%d_16x5_tn_align4EEvNT_6ParamsE", 64 << (k % 4),
                     128 >> (k / 4 % 2));
            break;
        default:
            snprintf(g_demangled[k], sizeof g_demangled[k],
                     "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)"
                     "::TensorListMetadata<%d>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, %d, "
                     "(at::native::ADAM_MODE)1, false>, float*, double, float*>(at::native::(anonymous namespace)::"
                     "TensorListMetadata<%d>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, %d, "
                     "(at::native::ADAM_MODE)1, false>, float*, double, float*)", 1 + k % 8, 4 + k % 2, 1 + k % 8, 4 + k % 2);
            snprintf(g_mangled[k], sizeof g_mangled[k],
                     "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadataILi%dEEENS1_20Fused"
                     "AdamMathFunctorIfLi%dELNS0_9ADAM_MODEE1ELb0EEEJPfdS7_EEEvT_T0_DpT1_%d", 4 + k % 2, 4 + k % 2, k);
            break;
        }
    }
}

/* The generator: a deterministic sequence of (API, GPU) record pairs. Records are produced in
 * buffers, as the SDK delivers them: API buffers and GPU-activity buffers alternate. */
typedef struct gen {
    uint64_t corr, dispatch, t, n;
    omniprof_buffer_tracing_api_record_t api[BUF];
    omniprof_buffer_tracing_kernel_dispatch_record_t kd[BUF];
    omniprof_buffer_tracing_memory_copy_record_t mc[BUF];
    omniprof_record_header_t api_h[BUF], gpu_h[BUF];
    const omniprof_record_header_t *api_p[BUF], *gpu_p[BUF];
    size_t n_api, n_gpu;
} gen;

/* One step of the program: fills g->api/g->kd/g->mc for up to BUF API records; returns the
 * number of records made (API + GPU). */
static size_t gen_fill(gen *g)
{
    g->n_api = g->n_gpu = 0;
    while (g->n_api < BUF && g->n_gpu < BUF) {
        uint64_t c = ++g->corr;
        uint64_t i = c;
        int tid = (i % 4 == 3) ? AUTOGRAD_TID : MAIN_TID;
        int op;
        if (i % 3 == 2) op = (int)(OP_IS_CAPTURING + (i / 3) % 3); /* a call without GPU work */
        else if (i % 48 == 0) op = OP_MEMCPY_ASYNC;
        else op = OP_LAUNCH;
        omniprof_buffer_tracing_api_record_t *a = &g->api[g->n_api];
        memset(a, 0, sizeof *a);
        a->size = sizeof *a;
        a->kind = OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API;
        a->operation = op;
        a->correlation_id.internal = c;
        a->thread_id = (uint64_t)tid;
        g->t += 1500 + (i % 7) * 130;
        a->start_timestamp = g->t;
        a->end_timestamp = g->t + 2100 + (i % 5) * 40;
        g->api_h[g->n_api] = (omniprof_record_header_t){.category = OMNIPROF_RECORD_CATEGORY_TRACING, .kind = a->kind, .payload = a};
        g->n_api++;
        if (op == OP_LAUNCH) {
            omniprof_buffer_tracing_kernel_dispatch_record_t *k = &g->kd[g->n_gpu];
            int kid = (int)((i * 7) % NKERNELS);
            memset(k, 0, sizeof *k);
            k->size = sizeof *k;
            k->kind = OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH;
            k->operation = OMNIPROF_KERNEL_DISPATCH_COMPLETE;
            k->correlation_id.internal = c;
            k->thread_id = (uint64_t)tid;
            k->start_timestamp = a->end_timestamp + 5000;
            k->end_timestamp = k->start_timestamp + 3000 + (uint64_t)kid * 211;
            k->agent_id.handle = GPU_AGENT;
            k->device_id = 0;
            k->context_id = 1;
            k->stream_id.handle = STREAM;
            k->kernel_id = (uint64_t)kid + 1;
            k->dispatch_id = ++g->dispatch;
            k->kernel_name = g_mangled[kid];
            k->kernel_name_demangled = g_demangled[kid];
            k->grid_size = (omniprof_dim3_t){(uint32_t)(1 + kid * 37), 1, 1};
            k->block_size = (omniprof_dim3_t){kid % 3 ? 128u : 256u, 1, 1};
            k->static_shared_memory = kid % 5 ? 0 : 4096;
            k->registers_per_thread = 32 + (uint32_t)(kid % 4) * 8;
            g->gpu_h[g->n_gpu] = (omniprof_record_header_t){.category = OMNIPROF_RECORD_CATEGORY_TRACING, .kind = k->kind, .payload = k};
            g->n_gpu++;
        } else if (op == OP_MEMCPY_ASYNC) {
            omniprof_buffer_tracing_memory_copy_record_t *m = &g->mc[g->n_gpu];
            memset(m, 0, sizeof *m);
            m->size = sizeof *m;
            m->kind = OMNIPROF_BUFFER_TRACING_MEMORY_COPY;
            int h2d = (i / 48) % 2;
            m->operation = h2d ? OMNIPROF_MEMORY_COPY_HOST_TO_DEVICE : OMNIPROF_MEMORY_COPY_DEVICE_TO_DEVICE;
            m->correlation_id.internal = c;
            m->thread_id = (uint64_t)tid;
            m->start_timestamp = a->end_timestamp + 4000;
            m->end_timestamp = m->start_timestamp + 9000;
            m->src_agent_id.handle = h2d ? CPU_AGENT : GPU_AGENT;
            m->dst_agent_id.handle = GPU_AGENT;
            m->bytes = 4096u << (i % 8);
            m->src_memory_kind = h2d ? OMNIPROF_MEMORY_KIND_PINNED : OMNIPROF_MEMORY_KIND_DEVICE;
            m->dst_memory_kind = OMNIPROF_MEMORY_KIND_DEVICE;
            m->stream_id.handle = STREAM;
            m->is_async = 1;
            g->gpu_h[g->n_gpu] = (omniprof_record_header_t){.category = OMNIPROF_RECORD_CATEGORY_TRACING, .kind = m->kind, .payload = m};
            g->n_gpu++;
        }
    }
    for (size_t k = 0; k < g->n_api; k++) g->api_p[k] = &g->api_h[k];
    for (size_t k = 0; k < g->n_gpu; k++) g->gpu_p[k] = &g->gpu_h[k];
    return g->n_api + g->n_gpu;
}

/* ------------------------------------------------------------------------------------------ */
/* Bare SQLite: the writer's rows, written directly (the writer's schema, names and symbols)    */

typedef struct bare {
    sqlite3 *db;
    int64_t op_name[OP__N], kname[NKERNELS], copy_name[2], cat_rt, cat_kd, cat_mc;
} bare;

static sqlite3_stmt *prep(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) die(sql, db);
    return s;
}

static int64_t bare_string(bare *b, const char *s)
{
    sqlite3_stmt *st = prep(b->db, "INSERT INTO rocpd_string" SFX " (string) VALUES (?)");
    sqlite3_bind_text(st, 1, s, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) die("string", b->db);
    sqlite3_finalize(st);
    return sqlite3_last_insert_rowid(b->db);
}

/* The schema, the identity rows, the names and the kernel symbols (one transaction). */
static void bare_setup(bare *b)
{
    char err[256];
    if (op_db_schema_create(b->db, UUID, err, sizeof err) != 0) die(err, NULL);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO rocpd_info_node" SFX " (id, hash, machine_id) VALUES (1, 1, 'm');"
             "INSERT INTO rocpd_info_process" SFX " (id, nid, pid) VALUES (%d, 1, %d);"
             "INSERT INTO rocpd_info_thread" SFX " (id, nid, pid, tid) VALUES (%d, 1, %d, %d), (%d, 1, %d, %d);"
             "INSERT INTO rocpd_info_agent" SFX " (nid, pid, type) VALUES (1, %d, 'CPU'), (1, %d, 'GPU');"
             "INSERT INTO rocpd_info_stream" SFX " (nid, pid, name, extdata) VALUES (1, %d, 'stream 1', '{}');"
             "INSERT INTO rocpd_info_queue" SFX " (nid, pid, name, extdata) VALUES (1, %d, 'stream 1', "
             "'{\"context_id\":1}');",
             getpid(), getpid(), MAIN_TID, getpid(), MAIN_TID, AUTOGRAD_TID, getpid(), AUTOGRAD_TID, getpid(), getpid(),
             getpid(), getpid());
    if (sqlite3_exec(b->db, sql, 0, 0, 0) != SQLITE_OK) die("setup", b->db);
    sqlite3_exec(b->db, "BEGIN", 0, 0, 0);
    b->cat_rt = bare_string(b, "CUDA_RUNTIME_API");
    b->cat_kd = bare_string(b, "KERNEL_DISPATCH");
    b->cat_mc = bare_string(b, "MEMORY_COPY");
    for (int k = 1; k < OP__N; k++) b->op_name[k] = bare_string(b, k_ops[k]);
    b->copy_name[0] = bare_string(b, "MEMORY_COPY_DEVICE_TO_DEVICE");
    b->copy_name[1] = bare_string(b, "MEMORY_COPY_HOST_TO_DEVICE");
    for (int k = 0; k < NKERNELS; k++) {
        b->kname[k] = bare_string(b, g_demangled[k]);
        sqlite3_stmt *st = prep(b->db, "INSERT INTO rocpd_info_kernel_symbol" SFX " (id, nid, pid, kernel_name, "
                                       "display_name, kernel_object, group_segment_size, private_segment_size, "
                                       "arch_vgpr_count, sgpr_count, accum_vgpr_count, extdata) VALUES "
                                       "(?,1,?,?,?,?,0,0,32,0,0,'{}')");
        sqlite3_bind_int64(st, 1, k + 1);
        sqlite3_bind_int64(st, 2, getpid());
        sqlite3_bind_text(st, 3, g_mangled[k], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, g_demangled[k], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, k + 1);
        if (sqlite3_step(st) != SQLITE_DONE) die("ksym", b->db);
        sqlite3_finalize(st);
    }
    sqlite3_exec(b->db, "COMMIT", 0, 0, 0);
}

static uint64_t file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

typedef struct result {
    double secs, busy_secs, close_secs, side_secs, move_secs, move_commit_secs; /* side, move: split floors */
    uint64_t records, rows, bytes, wal_bytes, ckpt_runs; /* the last two: ckpt floors */
} result;

/* ------------------------------------------------------------------------------------------ */
/* The bare loops: the same rows in several SQLite configurations, the floor among them       */

/* A configuration of the bare loops. Rows go through INSERTs of `rows` rows (128: the writer's
 * batching; 1: one-row statements); ids of event rows are bound explicitly. */
typedef struct floor_cfg {
    const char *name;
    int rows, page_size;
    const char *journal, *sync;
    int exclusive, events, crash_safe; /* events 0: no rocpd_event rows (event_id NULL) */
    /* split: the rocpd_event rows go through a second connection, in a second thread, into a side
     * file (same schema) next to the database, moved into it at the end by one
     * `INSERT INTO rocpd_event SELECT * FROM side.rocpd_event` (SQLite's transfer optimization:
     * records copied without decoding). split_journal/split_sync: the side file's pragmas. */
    int split;
    const char *split_journal, *split_sync;
    /* ckpt: 0 SQLite's auto-checkpoint (1,000 pages, in the committing thread); 1 none in the
     * writing connection: a second thread with its own connection checkpoints (PASSIVE) whenever
     * the WAL holds 1,000 pages; 2 none until the close */
    int ckpt;
} floor_cfg;

static const floor_cfg k_floor[] = {
    {"1row_wal_normal_8k", 1, 8192, "WAL", "NORMAL", 0, 1, 1, 0, NULL, NULL, 0}, /* `bare`: one-row statements */
    {"128row_wal_normal_8k", 128, 8192, "WAL", "NORMAL", 0, 1, 1, 0, NULL, NULL, 0}, /* the writer's pragmas */
    {"128row_wal_normal_8k_exclusive", 128, 8192, "WAL", "NORMAL", 1, 1, 1, 0, NULL, NULL, 0},
    {"128row_wal_normal_32k", 128, 32768, "WAL", "NORMAL", 0, 1, 1, 0, NULL, NULL, 0},
    {"128row_wal_off_8k", 128, 8192, "WAL", "OFF", 0, 1, 1, 0, NULL, NULL, 0}, /* survives kills, not a power loss */
    {"128row_nojournal_off_64k", 128, 65536, "OFF", "OFF", 1, 1, 0, 0, NULL, NULL, 0},
    {"128row_nojournal_off_64k_no_events", 128, 65536, "OFF", "OFF", 1, 0, 0, 0, NULL, NULL, 0},
    {"128row_wal_normal_8k_no_events", 128, 8192, "WAL", "NORMAL", 0, 0, 1, 0, NULL, NULL, 0},
    /* the checkpoints by a second connection in a second thread; none until the close */
    {"128row_wal_normal_8k_ckpt_thread", 128, 8192, "WAL", "NORMAL", 0, 1, 1, 0, NULL, NULL, 1},
    {"128row_wal_normal_8k_ckpt_at_close", 128, 8192, "WAL", "NORMAL", 0, 1, 1, 0, NULL, NULL, 2},
    /* two connections, two files, two threads; the event rows moved at the end (issue 12) */
    {"128row_wal_normal_8k_2conn_side_off", 128, 8192, "WAL", "NORMAL", 0, 1, 1, 1, "OFF", "OFF", 0},
    {"128row_wal_normal_8k_2conn_side_wal", 128, 8192, "WAL", "NORMAL", 0, 1, 1, 1, "WAL", "NORMAL", 0},
    /* the side database in memory (SQLite's memdb VFS, shared by name between the connections) */
    {"128row_wal_normal_8k_2conn_side_mem", 128, 8192, "WAL", "NORMAL", 0, 1, 1, 2, "OFF", "OFF", 0},
    /* the same, moved by `... SELECT <columns> ... WHERE id > 0` (what moving chunks during the
     * run takes): SQLite's transfer optimization does not apply, rows are decoded and encoded */
    {"128row_wal_normal_8k_2conn_side_mem_where", 128, 8192, "WAL", "NORMAL", 0, 1, 1, 4, "OFF", "OFF", 0},
    /* every row into two in-memory databases (two threads), all moved into the file (WAL, NORMAL,
     * 8 KiB) at the end: the move alone bounds any design that moves rows into the file */
    {"128row_mem_2conn_move_all_to_wal_normal_8k", 128, 8192, "OFF", "OFF", 0, 1, 1, 3, "OFF", "OFF", 0},
};
#define NFLOOR (sizeof k_floor / sizeof k_floor[0])
/* Run by default (BENCH_DB_GPU_FLOOR=all runs every one, a comma-separated list the ones it
 * names): the crash-safe 128-row loop, the fastest found on the same rows, the fastest at all
 * (without the event rows), the two-connection floor and the move-everything ceiling
 * (docs/perf/db.md, issue 12). */
static const char k_floor_default[] = "128row_wal_normal_8k,128row_nojournal_off_64k,128row_nojournal_off_64k_no_events,"
                                      "128row_wal_normal_8k_2conn_side_mem,128row_mem_2conn_move_all_to_wal_normal_8k";

#define FQ_MAX 128
#define FQ_NULL INT64_MIN
typedef struct fq { /* queued rows of one table */
    sqlite3_stmt *multi, *one;
    int ncols, text_col, n; /* text_col: the one text parameter (0-based), -1 none */
    int64_t v[FQ_MAX * 20];
    const char *text[FQ_MAX];
    int text_len[FQ_MAX];
    char arena[FQ_MAX][160];
} fq;

typedef struct floor_db {
    sqlite3 *db;
    const floor_cfg *c;
    fq ev, rg, kd, mc;
    int64_t next_event;
    int events_elsewhere; /* split, main side: event ids counted, the rows written by the side thread */
    bare b; /* the names' ids */
} floor_db;

static sqlite3_stmt *prep_rows(sqlite3 *db, const char *head, const char *tuple, int n)
{
    char *sql = bench_rows_sql(head, tuple, n);
    if (!sql) die("out of memory", NULL);
    sqlite3_stmt *s = prep(db, sql);
    free(sql);
    return s;
}

static void fq_init(fq *q, sqlite3 *db, const char *head, const char *tuple, int rows, int text_col)
{
    q->ncols = 0;
    for (const char *p = tuple; *p; p++) q->ncols += *p == '?';
    q->text_col = text_col;
    q->n = 0;
    q->multi = prep_rows(db, head, tuple, rows);
    q->one = prep_rows(db, head, tuple, 1);
}

static void fq_write(floor_db *f, fq *q)
{
    if (!q->n) return;
    int rows = q->n == f->c->rows ? q->n : 1;
    for (int r0 = 0; r0 < q->n; r0 += rows) {
        sqlite3_stmt *s = rows > 1 ? q->multi : q->one;
        for (int r = 0; r < rows; r++)
            for (int k = 0; k < q->ncols; k++) {
                int p = r * q->ncols + k + 1;
                int64_t v = q->v[(r0 + r) * q->ncols + k];
                if (k == q->text_col) sqlite3_bind_text(s, p, q->text[r0 + r], q->text_len[r0 + r], SQLITE_STATIC);
                else if (v == FQ_NULL) sqlite3_bind_null(s, p);
                else sqlite3_bind_int64(s, p, v);
            }
        if (sqlite3_step(s) != SQLITE_DONE) die("floor step", f->db);
        sqlite3_reset(s);
    }
    q->n = 0;
}

/* Room for one row of q (its int64 cells); the text (if the table has one) is set by the caller. */
static int64_t *fq_row(floor_db *f, fq *q)
{
    if (q->n == f->c->rows) fq_write(f, q);
    return &q->v[q->n++ * q->ncols];
}

static int64_t floor_event(floor_db *f, int64_t cat, uint64_t corr)
{
    if (!f->c->events) return FQ_NULL;
    if (f->events_elsewhere) return ++f->next_event;
    int64_t *v = fq_row(f, &f->ev);
    v[0] = ++f->next_event, v[1] = cat, v[2] = (int64_t)corr;
    return f->next_event;
}

static void floor_open(floor_db *f, const floor_cfg *c, const char *path)
{
    memset(f, 0, sizeof *f);
    f->c = c;
    if (sqlite3_open_v2(path, &f->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                        NULL) != SQLITE_OK)
        die("open", f->db);
    char sql[1024];
    snprintf(sql, sizeof sql, "%sPRAGMA page_size=%d; PRAGMA journal_mode=%s; PRAGMA synchronous=%s; "
             "PRAGMA cache_size=-8192; PRAGMA temp_store=MEMORY;", c->exclusive ? "PRAGMA locking_mode=EXCLUSIVE; " : "",
             c->page_size, c->journal, c->sync);
    sqlite3_exec(f->db, sql, 0, 0, 0);
    f->b.db = f->db;
    bare_setup(&f->b);
    fq_init(&f->ev, f->db, "INSERT INTO rocpd_event" SFX " (id, category_id, stack_id, parent_stack_id, correlation_id) VALUES ",
            "(?,?,?,NULL,0)", c->rows, -1);
    snprintf(sql, sizeof sql, "INSERT INTO rocpd_region" SFX " (nid, pid, tid, start, \"end\", name_id, event_id) VALUES ");
    char tuple[256];
    snprintf(tuple, sizeof tuple, "(1,%d,?,?,?,?,?)", getpid());
    fq_init(&f->rg, f->db, sql, tuple, c->rows, -1);
    fq_init(&f->kd, f->db,
            "INSERT INTO rocpd_kernel_dispatch" SFX " (nid, pid, tid, agent_id, kernel_id, dispatch_id, stream_id, "
            "start, \"end\", private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, "
            "workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, region_name_id, event_id, extdata, queue_id) VALUES ",
            (snprintf(tuple, sizeof tuple, "(1,%d,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", getpid()), tuple), c->rows, 17);
    fq_init(&f->mc, f->db,
            "INSERT INTO rocpd_memory_copy" SFX " (nid, pid, tid, start, \"end\", name_id, dst_agent_id, src_agent_id, "
            "size, stream_id, event_id, extdata, queue_id) VALUES ",
            (snprintf(tuple, sizeof tuple, "(1,%d,?,?,?,?,?,?,?,?,?,?,?)", getpid()), tuple), c->rows, 9);
}

/* The rows of bare_records, queued. */
static void floor_records(floor_db *f, const gen *g)
{
    for (size_t i = 0; i < g->n_api; i++) {
        const omniprof_buffer_tracing_api_record_t *a = &g->api[i];
        int64_t ev = floor_event(f, f->b.cat_rt, a->correlation_id.internal);
        int64_t *v = fq_row(f, &f->rg);
        v[0] = (int64_t)a->thread_id, v[1] = (int64_t)a->start_timestamp, v[2] = (int64_t)a->end_timestamp;
        v[3] = f->b.op_name[a->operation], v[4] = ev;
    }
    for (size_t i = 0; i < g->n_gpu; i++) {
        if (g->gpu_h[i].kind == OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH) {
            const omniprof_buffer_tracing_kernel_dispatch_record_t *k = &g->kd[i];
            int64_t ev = floor_event(f, f->b.cat_kd, k->correlation_id.internal);
            int slot = f->kd.n == f->c->rows ? 0 : f->kd.n;
            int64_t *v = fq_row(f, &f->kd);
            int64_t cells[19] = {(int64_t)k->thread_id, 2, (int64_t)k->kernel_id, (int64_t)k->dispatch_id, 1,
                                 (int64_t)k->start_timestamp, (int64_t)k->end_timestamp, k->local_memory_per_thread,
                                 (int64_t)k->static_shared_memory + k->dynamic_shared_memory, k->block_size.x,
                                 k->block_size.y, k->block_size.z, (int64_t)k->grid_size.x * k->block_size.x,
                                 (int64_t)k->grid_size.y * k->block_size.y, (int64_t)k->grid_size.z * k->block_size.z,
                                 f->b.kname[k->kernel_id - 1], ev, 0, 1};
            memcpy(v, cells, sizeof cells);
            /* the context is the queue's (the writer names it on a row only where it differs) */
            f->kd.text_len[slot] = snprintf(f->kd.arena[slot], sizeof f->kd.arena[slot], "{}");
            f->kd.text[slot] = f->kd.arena[slot];
        } else {
            const omniprof_buffer_tracing_memory_copy_record_t *m = &g->mc[i];
            int64_t ev = floor_event(f, f->b.cat_mc, m->correlation_id.internal);
            int h2d = m->operation == OMNIPROF_MEMORY_COPY_HOST_TO_DEVICE;
            int slot = f->mc.n == f->c->rows ? 0 : f->mc.n;
            int64_t *v = fq_row(f, &f->mc);
            int64_t cells[11] = {(int64_t)m->thread_id, (int64_t)m->start_timestamp, (int64_t)m->end_timestamp,
                                 f->b.copy_name[h2d], 2, h2d ? 1 : 2, (int64_t)m->bytes, 1, ev, 0, 1};
            memcpy(v, cells, sizeof cells);
            f->mc.text_len[slot] = snprintf(f->mc.arena[slot], sizeof f->mc.arena[slot],
                                            "{\"src_memory_kind\":\"%s\",\"dst_memory_kind\":\"DEVICE\",\"is_async\":1,"
                                            "\"device_id\":0}", h2d ? "PINNED" : "DEVICE");
            f->mc.text[slot] = f->mc.arena[slot];
        }
    }
}

/* The split configurations' second thread: the event rows of the same records (its own copy of
 * the deterministic generator gives the same ids in the same order) into the side file, in
 * 128-row statements, committed every 200,000 rows. */
typedef struct side_job {
    const floor_cfg *c;
    const bare *names; /* the main database's category ids */
    uint64_t n;
    char path[1100];
    double secs;
    sqlite3 *db; /* left open: a memdb database lives while a connection has it */
} side_job;

static void *side_main(void *arg)
{
    side_job *j = arg;
    uint64_t t0 = op_now_ns();
    gen *g = calloc(1, sizeof *g);
    floor_db *f = calloc(1, sizeof *f);
    if (!g || !f) die("out of memory", NULL);
    f->c = j->c;
    f->b = *j->names;
    if (sqlite3_open_v2(j->path, &f->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                        NULL) != SQLITE_OK)
        die("open side", f->db);
    char sql[512], err[256];
    snprintf(sql, sizeof sql, "PRAGMA page_size=%d; PRAGMA journal_mode=%s; PRAGMA synchronous=%s; "
             "PRAGMA cache_size=-8192; PRAGMA temp_store=MEMORY;", j->c->page_size, j->c->split_journal, j->c->split_sync);
    sqlite3_exec(f->db, sql, 0, 0, 0);
    if (op_db_schema_create(f->db, UUID, err, sizeof err) != 0) die(err, NULL); /* the same table definitions */
    fq_init(&f->ev, f->db, "INSERT INTO rocpd_event" SFX " (id, category_id, stack_id, parent_stack_id, correlation_id) VALUES ",
            "(?,?,?,NULL,0)", j->c->rows, -1);
    uint64_t done = 0, rows_txn = 0;
    sqlite3_exec(f->db, "BEGIN", 0, 0, 0);
    while (done < j->n) {
        size_t m = gen_fill(g);
        for (size_t i = 0; i < g->n_api; i++) floor_event(f, f->b.cat_rt, g->api[i].correlation_id.internal);
        for (size_t i = 0; i < g->n_gpu; i++)
            floor_event(f, g->gpu_h[i].kind == OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH ? f->b.cat_kd : f->b.cat_mc,
                        g->gpu_h[i].kind == OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH ? g->kd[i].correlation_id.internal
                                                                                    : g->mc[i].correlation_id.internal);
        done += m;
        if ((rows_txn += m) >= 200000) {
            fq_write(f, &f->ev);
            sqlite3_exec(f->db, "COMMIT; BEGIN", 0, 0, 0);
            rows_txn = 0;
        }
    }
    fq_write(f, &f->ev);
    sqlite3_exec(f->db, "COMMIT", 0, 0, 0);
    sqlite3_finalize(f->ev.multi);
    sqlite3_finalize(f->ev.one);
    j->db = f->db;
    free(g);
    free(f);
    j->secs = (double)(op_now_ns() - t0) / 1e9;
    return NULL;
}

/* Split configurations, at the end: the side file's event rows into the database (one
 * transaction), then the side file removed. Returns the seconds it took. */
#define EVENT_COLS "id, category_id, stack_id, parent_stack_id, correlation_id, call_stack, line_info, extdata"
static double split_move(floor_db *f, const char *side_path, sqlite3 *side_db, int where, double *commit_secs)
{
    uint64_t t0 = op_now_ns();
    char sql[2000];
    if (where)
        snprintf(sql, sizeof sql, "ATTACH '%s' AS side; BEGIN; INSERT INTO main.rocpd_event" SFX " (" EVENT_COLS
                 ") SELECT " EVENT_COLS " FROM side.rocpd_event" SFX " WHERE id > 0;", side_path);
    else
        snprintf(sql, sizeof sql, "ATTACH '%s' AS side; BEGIN; INSERT INTO main.rocpd_event" SFX
                 " SELECT * FROM side.rocpd_event" SFX ";", side_path);
    char *msg = NULL;
    if (sqlite3_exec(f->db, sql, 0, 0, &msg) != SQLITE_OK) die(msg ? msg : "move", f->db);
    uint64_t t1 = op_now_ns();
    if (sqlite3_exec(f->db, "COMMIT; DETACH side;", 0, 0, &msg) != SQLITE_OK) die(msg ? msg : "move", f->db);
    *commit_secs = (double)(op_now_ns() - t1) / 1e9;
    sqlite3_close(side_db);
    char p[1200];
    unlink(side_path);
    snprintf(p, sizeof p, "%s-wal", side_path), unlink(p);
    snprintf(p, sizeof p, "%s-shm", side_path), unlink(p);
    return (double)(op_now_ns() - t0) / 1e9;
}

/* split 3, at the end: the database file made (the writer's pragmas, the same schema), every
 * table of the data side and the event side's rows moved into it in one transaction. Returns the
 * seconds it took (file closed, checkpoint included). */
static double move_all(sqlite3 *data, const char *data_path, sqlite3 *side_db, const char *side_path, const char *path,
                       double *commit_secs)
{
    uint64_t t0 = op_now_ns();
    sqlite3 *db;
    char err[256], sql[2400];
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                        NULL) != SQLITE_OK)
        die("open", db);
    sqlite3_exec(db, "PRAGMA page_size=8192; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                 "PRAGMA cache_size=-8192;", 0, 0, 0);
    if (op_db_schema_create(db, UUID, err, sizeof err) != 0) die(err, NULL);
    snprintf(sql, sizeof sql, "ATTACH '%s' AS data; ATTACH '%s' AS side; BEGIN;", data_path, side_path);
    if (sqlite3_exec(db, sql, 0, 0, 0) != SQLITE_OK) die("attach", db);
    sqlite3_stmt *t;
    if (sqlite3_prepare_v2(data, "SELECT name FROM sqlite_schema WHERE type='table' AND name NOT LIKE 'sqlite_%'", -1,
                           &t, NULL) != SQLITE_OK)
        die("tables", data);
    while (sqlite3_step(t) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(t, 0);
        /* a WHERE would stop the transfer: only tables the schema left empty, moved whole */
        sqlite3_stmt *e;
        snprintf(sql, sizeof sql, "SELECT 1 FROM main.\"%s\" LIMIT 1", name);
        if (sqlite3_prepare_v2(db, sql, -1, &e, NULL) != SQLITE_OK) die(sql, db);
        int has = sqlite3_step(e) == SQLITE_ROW;
        sqlite3_finalize(e);
        if (has) continue;
        snprintf(sql, sizeof sql, "INSERT INTO main.\"%s\" SELECT * FROM data.\"%s\"", name, name);
        if (sqlite3_exec(db, sql, 0, 0, NULL) != SQLITE_OK) {
            /* a table with a UNIQUE index is transferred only when empty, and SQLite's fallback
             * for "SELECT *" then counts the generated column: name the stored columns */
            char cols[1400] = "";
            size_t at = 0;
            snprintf(sql, sizeof sql, "SELECT name FROM pragma_table_xinfo('%s') WHERE hidden = 0", name);
            if (sqlite3_prepare_v2(data, sql, -1, &e, NULL) != SQLITE_OK) die(sql, data);
            while (sqlite3_step(e) == SQLITE_ROW && at < sizeof cols - 80)
                at += (size_t)snprintf(cols + at, sizeof cols - at, "%s\"%s\"", at ? "," : "", sqlite3_column_text(e, 0));
            sqlite3_finalize(e);
            char *ins = sqlite3_mprintf("INSERT INTO main.\"%w\" (%s) SELECT %s FROM data.\"%w\"", name, cols, cols, name);
            char *msg = NULL;
            if (!ins || sqlite3_exec(db, ins, 0, 0, &msg) != SQLITE_OK) die(msg ? msg : "INSERT ... SELECT", db);
            sqlite3_free(ins);
        }
    }
    sqlite3_finalize(t);
    char *msg = NULL;
    if (sqlite3_exec(db, "INSERT INTO main.rocpd_event" SFX " SELECT * FROM side.rocpd_event" SFX, 0, 0, &msg) != SQLITE_OK)
        die(msg ? msg : "move events", db);
    uint64_t t1 = op_now_ns();
    if (sqlite3_exec(db, "COMMIT; DETACH data; DETACH side;", 0, 0, &msg) != SQLITE_OK) die(msg ? msg : "commit", db);
    sqlite3_close(side_db);
    sqlite3_close(data);
    sqlite3_close(db);
    *commit_secs = (double)(op_now_ns() - t1) / 1e9;
    return (double)(op_now_ns() - t0) / 1e9;
}

/* ckpt 1: the checkpointing thread. The writing connection's WAL hook publishes the WAL's
 * frames; this thread's own connection checkpoints (PASSIVE: never waits for the writer) when
 * 1,000 frames or more wait. */
typedef struct ckpt_job {
    const char *path;
    _Atomic int stop;
    _Atomic int frames; /* in the WAL after the writer's last commit */
    int runs;
    uint64_t wal_peak;
} ckpt_job;

static int ckpt_hook(void *arg, sqlite3 *db, const char *schema, int pages)
{
    (void)db, (void)schema;
    atomic_store(&((ckpt_job *)arg)->frames, pages);
    return SQLITE_OK;
}

static void *ckpt_main(void *arg)
{
    ckpt_job *j = arg;
    sqlite3 *db;
    if (sqlite3_open_v2(j->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) die("open", db);
    sqlite3_exec(db, "PRAGMA wal_autocheckpoint=0;", 0, 0, 0);
    int done = 0; /* frames already checkpointed */
    while (!atomic_load(&j->stop)) {
        int frames = atomic_load(&j->frames);
        if (frames < done) done = 0; /* the writer restarted the WAL */
        if (frames - done < 1000) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            continue;
        }
        int log = 0, ck = 0;
        sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &ck);
        j->runs++;
        done = ck > 0 ? ck : frames;
    }
    sqlite3_close(db);
    return NULL;
}

static result run_floor(const floor_cfg *c, uint64_t n, const char *path)
{
    static gen g;
    memset(&g, 0, sizeof g);
    static floor_db f;
    char data_path[1100];
    snprintf(data_path, sizeof data_path, "file:/omniprof-bench-data-%d?vfs=memdb", (int)getpid());
    floor_open(&f, c, c->split == 3 ? data_path : path);
    result r = {0};
    uint64_t t0 = op_now_ns(), rows_txn = 0;
    static side_job side;
    pthread_t side_thread;
    if (c->split) {
        f.events_elsewhere = 1;
        side = (side_job){.c = c, .names = &f.b, .n = n};
        if (c->split >= 2) snprintf(side.path, sizeof side.path, "file:/omniprof-bench-side-%d?vfs=memdb", (int)getpid());
        else snprintf(side.path, sizeof side.path, "%s.side", path);
        if (pthread_create(&side_thread, NULL, side_main, &side) != 0) die("pthread_create", NULL);
    }
    static ckpt_job ck;
    pthread_t ckpt_thread;
    if (c->ckpt) sqlite3_exec(f.db, "PRAGMA wal_autocheckpoint=0;", 0, 0, 0);
    if (c->ckpt == 1) {
        ck = (ckpt_job){.path = path};
        sqlite3_wal_hook(f.db, ckpt_hook, &ck);
        if (pthread_create(&ckpt_thread, NULL, ckpt_main, &ck) != 0) die("pthread_create", NULL);
    }
    sqlite3_exec(f.db, "BEGIN", 0, 0, 0);
    while (r.records < n) {
        size_t m = gen_fill(&g);
        floor_records(&f, &g);
        r.records += m;
        rows_txn += 2 * m;
        if (rows_txn >= 200000) {
            fq *all[] = {&f.ev, &f.rg, &f.kd, &f.mc};
            for (int i = 0; i < 4; i++) fq_write(&f, all[i]);
            sqlite3_exec(f.db, "COMMIT", 0, 0, 0);
            sqlite3_exec(f.db, "BEGIN", 0, 0, 0);
            rows_txn = 0;
        }
    }
    fq *all[] = {&f.ev, &f.rg, &f.kd, &f.mc};
    for (int i = 0; i < 4; i++) fq_write(&f, all[i]);
    sqlite3_exec(f.db, "COMMIT", 0, 0, 0);
    for (int i = 0; i < 4; i++) {
        sqlite3_finalize(all[i]->multi);
        sqlite3_finalize(all[i]->one);
    }
    if (c->split) {
        r.busy_secs = (double)(op_now_ns() - t0) / 1e9; /* the main thread's rows alone */
        pthread_join(side_thread, NULL);
        r.side_secs = side.secs;
        if (c->split == 3) r.move_secs = move_all(f.db, data_path, side.db, side.path, path, &r.move_commit_secs);
        else r.move_secs = split_move(&f, side.path, side.db, c->split == 4, &r.move_commit_secs);
    }
    if (c->ckpt) {
        char wal[1200];
        snprintf(wal, sizeof wal, "%s-wal", path);
        r.wal_bytes = file_bytes(wal);
        r.busy_secs = (double)(op_now_ns() - t0) / 1e9; /* the rows, without the final checkpoint */
    }
    if (c->ckpt == 1) {
        atomic_store(&ck.stop, 1);
        pthread_join(ckpt_thread, NULL);
        r.ckpt_runs = ck.runs;
    }
    if (c->split != 3) sqlite3_close(f.db); /* to the close, checkpoint included, as the writer is timed */
    r.secs = (double)(op_now_ns() - t0) / 1e9;
    if (!c->split && !c->ckpt) r.busy_secs = r.secs;
    r.rows = (c->events ? 2 : 1) * r.records;
    r.bytes = file_bytes(path);
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* The writer                                                                                  */

static const char *op_name(uint32_t kind, int32_t op, void *user)
{
    (void)user;
    return kind == OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API && op > 0 && op < OP__N ? k_ops[op] : NULL;
}

static void add_agents(op_db_writer *w)
{
    omniprof_agent_v0_t cpu = {.size = sizeof cpu, .id = {CPU_AGENT}, .type = OMNIPROF_AGENT_TYPE_CPU,
                               .name = "AMD EPYC", .vendor_name = "AuthenticAMD", .product_name = "AMD EPYC",
                               .model_name = "AMD EPYC", .cu_count = 2};
    omniprof_agent_v0_t gpu = {.size = sizeof gpu, .id = {GPU_AGENT}, .type = OMNIPROF_AGENT_TYPE_GPU,
                               .logical_index = 1, .name = "NVIDIA H100 80GB HBM3", .vendor_name = "NVIDIA",
                               .product_name = "NVIDIA H100 80GB HBM3", .model_name = "GH100",
                               .uuid = "GPU-5e1c2a44-1b7e-3c9a-8f0d-7a6b5c4d3e2f", .pci_bus_id = "0000:19:00.0",
                               .compute_capability_major = 9, .cu_count = 132};
    if (op_db_writer_add_agent(w, &cpu) != 0 || op_db_writer_add_agent(w, &gpu) != 0) die("add agent", NULL);
}

static result run_writer(uint64_t n, const char *path)
{
    static gen g;
    memset(&g, 0, sizeof g);
    char err[512];
    op_db_process_info info = {.size = sizeof info, .pid = getpid(), .ppid = getppid(), .command = "bench_db_gpu",
                               .rank = -1, .world_size = -1, .uuid = UUID};
    OMNIPROF_OPTS(op_db_writer_options, opts, .spool_dir = g_dir, .operation_name = op_name);
    op_db_writer *w = op_db_writer_open(path, &info, &opts, err, sizeof err);
    if (!w) die(err, NULL);
    add_agents(w);
    result r = {0};
    uint64_t t0 = op_now_ns();
    while (r.records < n) {
        size_t m = gen_fill(&g);
        op_db_writer_stats st = {.size = sizeof st};
        op_db_writer_get_stats(w, &st);
        while (st.spool_bytes > (64u << 20)) { /* LOSSLESS buffers: the producer waits */
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            op_db_writer_get_stats(w, &st);
        }
        if (op_db_writer_append(w, g.api_p, g.n_api) != (int)g.n_api ||
            op_db_writer_append(w, g.gpu_p, g.n_gpu) != (int)g.n_gpu)
            die("append dropped records", NULL);
        r.records += m;
    }
    if (op_db_writer_flush(w, 600000) != 0) die("flush", NULL);
    r.secs = (double)(op_now_ns() - t0) / 1e9;
    op_db_writer_stats st = {.size = sizeof st};
    op_db_writer_get_stats(w, &st);
    r.busy_secs = (double)st.ingest_busy_ns / 1e9;
    r.rows = st.rows_written;
    uint64_t c0 = op_now_ns();
    if (op_db_writer_close(w) != 0) die("close", NULL);
    r.close_secs = (double)(op_now_ns() - c0) / 1e9;
    r.bytes = file_bytes(path);
    return r;
}

static void add(result *sum, result r)
{
    sum->secs += r.secs;
    sum->busy_secs += r.busy_secs;
    sum->close_secs += r.close_secs;
    sum->side_secs += r.side_secs;
    sum->move_secs += r.move_secs;
    sum->move_commit_secs += r.move_commit_secs;
    sum->wal_bytes += r.wal_bytes;
    sum->ckpt_runs += r.ckpt_runs;
    sum->records += r.records;
    sum->rows += r.rows;
    sum->bytes += r.bytes;
}

/* Whether `name` is one of the comma-separated names of list. */
static int name_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n])) return 1;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    char dir[512];
    const char *d = getenv("BENCH_DB_DIR");
    snprintf(dir, sizeof dir, "%s/omniprof-bench-dbgpu-XXXXXX", d && *d ? d : "/tmp");
    if (!mkdtemp(dir)) die("mkdtemp", NULL);
    g_dir = dir;
    uint64_t n = env_u64("BENCH_DB_GPU_RECORDS", 2000000);
    int rounds = (int)env_u64("BENCH_DB_GPU_ROUNDS", 5);
    const char *only = getenv("BENCH_DB_GPU_ONLY");
    int do_bare = !only || !strcmp(only, "bare"), do_writer = !only || !strcmp(only, "writer");
    /* BENCH_DB_GPU_FLOOR: all (every floor configuration), none, or (default) the floor only */
    const char *fl = getenv("BENCH_DB_GPU_FLOOR");
    const char *floor_names = fl && strchr(fl, '_') ? fl : NULL; /* or a comma-separated list of names */
    int floor_all = fl && !strcmp(fl, "all"), do_floor = (!only || !strcmp(only, "floor")) && !(fl && !strcmp(fl, "none"));
    make_kernel_names();
    result sb = {0}, sw = {0}, sf[NFLOOR];
    memset(sf, 0, sizeof sf);
    double ratios[64];
    int nratios = 0;
    if (rounds > 64) rounds = 64;
    if (rounds < 1) rounds = 1;
    for (int r = 0; r < rounds; r++) {
        char path[1024];
        result b = {0}, w = {0};
        if (do_bare) {
            snprintf(path, sizeof path, "%s/bare_%d.db", dir, r);
            b = run_floor(&k_floor[0], n, path); /* one-row statements */
            add(&sb, b);
            unlink(path);
        }
        if (do_writer) {
            snprintf(path, sizeof path, "%s/writer_%d.db", dir, r);
            w = run_writer(n, path);
            add(&sw, w);
            unlink(path);
        }
        for (size_t c = 1; do_floor && c < NFLOOR; c++) { /* 0 is `bare` */
            if (!floor_all && !name_listed(floor_names ? floor_names : k_floor_default, k_floor[c].name)) continue;
            snprintf(path, sizeof path, "%s/floor_%zu_%d.db", dir, c, r);
            result f = run_floor(&k_floor[c], n, path);
            add(&sf[c], f);
            unlink(path);
            fprintf(stderr, "round %d: floor %s %.0f records/s", r, k_floor[c].name, (double)f.records / f.secs);
            if (k_floor[c].split)
                fprintf(stderr, " (main thread's rows %.3f s, side thread %.3f s, move %.3f s (its commit %.3f s) of %.3f s)",
                        f.busy_secs, f.side_secs, f.move_secs, f.move_commit_secs, f.secs);
            if (k_floor[c].ckpt)
                fprintf(stderr, " (rows %.3f s, WAL at the end %.1f MiB, %llu background checkpoints, close %.3f s)",
                        f.busy_secs, (double)f.wal_bytes / 1048576.0, (unsigned long long)f.ckpt_runs, f.secs - f.busy_secs);
            fputc('\n', stderr);
        }
        if (do_bare && do_writer) {
            ratios[nratios++] = ((double)w.records / w.secs) / ((double)b.records / b.secs);
        }
        fprintf(stderr, "round %d: bare %.0f records/s, writer %.0f records/s (busy %.0f), close %.3f s\n", r,
                b.secs > 0 ? (double)b.records / b.secs : 0, w.secs > 0 ? (double)w.records / w.secs : 0,
                w.busy_secs > 0 ? (double)w.records / w.busy_secs : 0, w.close_secs);
    }
    if (do_bare) {
        printf("metric=db_gpu_bare_records value=%.0f unit=records/s\n", (double)sb.records / sb.secs);
        printf("metric=db_gpu_bare_rows value=%.0f unit=rows/s\n", (double)sb.rows / sb.secs);
        printf("metric=db_gpu_bare_bytes_per_record value=%.1f unit=bytes\n", (double)sb.bytes / (double)sb.records);
    }
    if (do_writer) {
        printf("metric=db_gpu_writer_records value=%.0f unit=records/s\n", (double)sw.records / sw.secs);
        printf("metric=db_gpu_writer_rows value=%.0f unit=rows/s\n", (double)sw.rows / sw.secs);
        printf("metric=db_gpu_writer_records_per_busy_second value=%.0f unit=records/s\n",
               (double)sw.records / sw.busy_secs);
        printf("metric=db_gpu_writer_bytes_per_record value=%.1f unit=bytes\n", (double)sw.bytes / (double)sw.records);
        printf("metric=db_gpu_writer_bytes_per_row value=%.1f unit=bytes\n", (double)sw.bytes / (double)sw.rows);
        printf("metric=db_gpu_writer_close value=%.3f unit=s\n", sw.close_secs / rounds);
    }
    /* the floor: the fastest configuration writing the same rows; and the fastest at all */
    int best = -1, best_any = -1;
    for (size_t c = 0; c < NFLOOR; c++) {
        if (!sf[c].records) continue;
        double rate = (double)sf[c].records / sf[c].secs;
        printf("metric=db_gpu_floor_%s value=%.0f unit=records/s bytes_per_record=%.1f%s%s\n", k_floor[c].name, rate,
               (double)sf[c].bytes / (double)sf[c].records, k_floor[c].crash_safe ? "" : " (not crash-safe)",
               k_floor[c].events ? "" : " (no event rows)");
        if (k_floor[c].split)
            printf("metric=db_gpu_floor_%s_move value=%.3f unit=s share=%.3f side_thread=%.3f main_rows=%.3f "
                   "move_commit=%.3f (per round: the final move into the file, its share of the time to close, the "
                   "side thread's rows, the main thread's rows, the move's commit)\n", k_floor[c].name,
                   sf[c].move_secs / rounds, sf[c].move_secs / sf[c].secs, sf[c].side_secs / rounds,
                   sf[c].busy_secs / rounds, sf[c].move_commit_secs / rounds);
        if (k_floor[c].split == 3) /* the move alone: what bounds any design that moves rows into the file */
            printf("metric=db_gpu_floor_move_ceiling value=%.0f unit=records/s (every row of the records moved by "
                   "SQLite's transfer into the file, commit and close included)\n", (double)sf[c].records / sf[c].move_secs);
        if (k_floor[c].ckpt)
            printf("metric=db_gpu_floor_%s_rows value=%.3f unit=s wal_mib=%.1f checkpoints=%llu (per round: the rows "
                   "without the close, the WAL before the close, the background checkpoints)\n", k_floor[c].name,
                   sf[c].busy_secs / rounds, (double)sf[c].wal_bytes / rounds / 1048576.0,
                   (unsigned long long)sf[c].ckpt_runs);
        if (k_floor[c].events && (best < 0 || rate > (double)sf[best].records / sf[best].secs)) best = (int)c;
        if (best_any < 0 || rate > (double)sf[best_any].records / sf[best_any].secs) best_any = (int)c;
    }
    double wr = do_writer ? (double)sw.records / sw.secs : 0;
    if (best >= 0) {
        double fr = (double)sf[best].records / sf[best].secs;
        printf("metric=db_gpu_floor value=%.0f unit=records/s config=%s (fastest bare SQLite configuration measured on "
               "the writer's rows, timed to its close)\n", fr, k_floor[best].name);
        if (do_writer) printf("metric=db_gpu_writer_vs_floor value=%.3f unit=ratio\n", wr / fr);
    }
    if (best_any >= 0 && best_any != best)
        printf("metric=db_gpu_floor_fewer_rows value=%.0f unit=records/s config=%s\n",
               (double)sf[best_any].records / sf[best_any].secs, k_floor[best_any].name);
    if (do_writer && best >= 0)
        printf("TARGET %s: ingest %.2f M records/s (>= 1 M/s); same run, same records: floor %.2f M records/s (bare "
               "SQLite, %s)%s%.2f%s%s%s\n", wr >= 1e6 ? "MET" : "MISSED", wr / 1e6,
               (double)sf[best].records / sf[best].secs / 1e6, k_floor[best].name,
               best_any != best ? ", without the event rows " : "",
               best_any != best ? (double)sf[best_any].records / sf[best_any].secs / 1e6 : 0.0,
               best_any != best ? " M/s (" : "", best_any != best ? k_floor[best_any].name : "", best_any != best ? ")" : "");
    if (nratios) { /* per round: median and spread */
        qsort(ratios, (size_t)nratios, sizeof ratios[0], cmp_double);
        double med = nratios % 2 ? ratios[nratios / 2] : (ratios[nratios / 2 - 1] + ratios[nratios / 2]) / 2;
        printf("metric=db_gpu_writer_vs_bare value=%.3f unit=ratio\n", med);
        printf("metric=db_gpu_writer_vs_bare_rounds_min value=%.3f unit=ratio\n", ratios[0]);
        printf("metric=db_gpu_writer_vs_bare_rounds_max value=%.3f unit=ratio\n", ratios[nratios - 1]);
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return 0;
}
