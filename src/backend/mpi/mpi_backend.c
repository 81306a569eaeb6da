/* mpi_backend.c — the MPI backend's registration with the SDK and its life cycle
 * (libomniprof-backend-mpi.so; docs/multinode.md).
 *
 * The library is LD_PRELOADed by the launcher with --mpi-trace or --nccl-trace, and whenever the
 * CPU backend is (so that MPI_Init names the rank and MPI_Finalize flushes for CPU-only runs,
 * and the causal profiler sees the MPI waits): it alone defines the MPI_* and nccl* functions
 * omniprof interposes (one owner per symbol). It serves MPI_API, NCCL_API and CLOCK_SYNC:
 *
 *   constructor ──▶ registered ──start()──▶ tracing ──finalize()──▶ stopped
 *                      │                       (MPI_API: every wrapper records; CLOCK_SYNC: the
 *                      │                        clocks are measured at init and finalize)
 *                      └── no kind of ours configured: start() never runs and every wrapper is
 *                          the library's call through a cached pointer and one test
 *
 * start() refuses (one line, nothing traced) when the backend was loaded but not preloaded: its
 * MPI_Send would not be the one the program calls. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/mpi/mpi_internal.h"
#include "common/log.h"
#include "common/path_template.h"
#include "omniprof/comm.h"
#include "omniprof/cpu.h"
#include "sdk/backend.h"

_Atomic int g_op_mpi_on, g_op_nccl_on, g_op_mpi_clock_on;
bool g_op_mpi_interposed;

OMNIPROF_API int MPI_Send(const void *, int, void *, int, int, void *);
OMNIPROF_API int ncclAllReduce(const void *, void *, size_t, int, int, void *, void *);

static const char *const k_mpi_names[OMNIPROF_MPI_LAST] = {
#define NAME(E, N, C) [OMNIPROF_MPI_##E] = N,
    OMNIPROF_MPI_OPERATIONS(NAME)
#undef NAME
};
static const char *const k_nccl_names[OMNIPROF_NCCL_LAST] = {
#define NAME(E, N, C) [OMNIPROF_NCCL_##E] = N,
    OMNIPROF_NCCL_OPERATIONS(NAME)
#undef NAME
};
static const char *const k_clock_names[OMNIPROF_CLOCK_SYNC_LAST] = {[OMNIPROF_CLOCK_SYNC_INIT] = "init",
                                                                    [OMNIPROF_CLOCK_SYNC_FINALIZE] = "finalize"};

static const char *mpi_operation_name(uint32_t kind, int32_t op)
{
    switch (kind) {
    case OMNIPROF_BUFFER_TRACING_MPI_API: return op > 0 && op < OMNIPROF_MPI_LAST ? k_mpi_names[op] : NULL;
    case OMNIPROF_BUFFER_TRACING_NCCL_API: return op > 0 && op < OMNIPROF_NCCL_LAST ? k_nccl_names[op] : NULL;
    case OMNIPROF_BUFFER_TRACING_CLOCK_SYNC: return op > 0 && op < OMNIPROF_CLOCK_SYNC_LAST ? k_clock_names[op] : NULL;
    default: return NULL;
    }
}

static int mpi_iterate_operations(uint32_t kind, int (*cb)(int32_t, void *), void *data)
{
    int32_t last = kind == OMNIPROF_BUFFER_TRACING_MPI_API    ? OMNIPROF_MPI_LAST
                   : kind == OMNIPROF_BUFFER_TRACING_NCCL_API ? OMNIPROF_NCCL_LAST
                   : kind == OMNIPROF_BUFFER_TRACING_CLOCK_SYNC ? OMNIPROF_CLOCK_SYNC_LAST
                                                                : -1;
    if (last < 0) return -1;
    for (int32_t op = 1; op < last; op++)
        if (cb(op, data)) break;
    return 0;
}

static omniprof_status_t mpi_start(void)
{
    bool mpi = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_MPI_API) != 0;
    bool nccl = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_NCCL_API) != 0;
    bool clock = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_CLOCK_SYNC) != 0;
    g_op_mpi_interposed = dlsym(RTLD_DEFAULT, "MPI_Send") == (void *)MPI_Send;
    bool nccl_interposed = dlsym(RTLD_DEFAULT, "ncclAllReduce") == (void *)ncclAllReduce;
    if ((mpi || clock) && !g_op_mpi_interposed) {
        op_warn("mpi: libomniprof-backend-mpi.so was loaded but not preloaded, so the program's MPI calls do not reach "
                "it; run the program under `omniprof run --mpi-trace`");
        mpi = clock = false;
    }
    if (nccl && !nccl_interposed) {
        op_warn("mpi: libomniprof-backend-mpi.so was loaded but not preloaded, so the program's NCCL calls do not "
                "reach it; run the program under `omniprof run --nccl-trace`");
        nccl = false;
    }
    if (!mpi && !nccl && !clock) return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    atomic_store(&g_op_mpi_on, mpi);
    atomic_store(&g_op_nccl_on, nccl);
    atomic_store(&g_op_mpi_clock_on, clock);
    return OMNIPROF_STATUS_SUCCESS;
}

static void mpi_finalize(void)
{
    atomic_store(&g_op_mpi_on, 0);
    atomic_store(&g_op_nccl_on, 0);
}

static void mpi_at_fork_child(void) { op_mpi_comm_at_fork_child(); }

OP_BACKEND_MANIFEST(g_mpi_manifest) = {
    .magic = OP_BACKEND_MANIFEST_MAGIC,
    .size = sizeof(op_backend_manifest),
    .name = "mpi",
    .buffer_kinds = {OMNIPROF_BUFFER_TRACING_MPI_API, OMNIPROF_BUFFER_TRACING_NCCL_API,
                     OMNIPROF_BUFFER_TRACING_CLOCK_SYNC},
};

static const op_backend g_backend = {
    .size = sizeof(op_backend),
    .name = "mpi",
    .manifest = &g_mpi_manifest,
    .start = mpi_start,
    .finalize = mpi_finalize,
    .at_fork_child = mpi_at_fork_child,
    .operation_name = mpi_operation_name,
    .iterate_operations = mpi_iterate_operations,
};

__attribute__((constructor)) static void mpi_backend_ctor(void) { op_sdk_register_backend(&g_backend); }

/* ---- for CPU-only runs ------------------------------------------------------------------------ */

void op_mpi_emit_wrapper(int32_t op, uint64_t start, uint64_t end, int rc, int rank, int size)
{
    int32_t wop = op == OMNIPROF_MPI_INIT          ? OMNIPROF_FUNCTION_WRAPPER_MPI_INIT
                  : op == OMNIPROF_MPI_INIT_THREAD ? OMNIPROF_FUNCTION_WRAPPER_MPI_INIT_THREAD
                                                   : OMNIPROF_FUNCTION_WRAPPER_MPI_FINALIZE;
    if (!op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER, wop)) return;
    struct {
        omniprof_buffer_tracing_api_record_t rec;
        omniprof_arg_t args[2];
    } r;
    memset(&r, 0, sizeof r);
    uint32_t n = op == OMNIPROF_MPI_FINALIZE ? 0 : 2;
    r.rec.size = sizeof r.rec + n * sizeof(omniprof_arg_t);
    r.rec.kind = OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER;
    r.rec.operation = wop;
    r.rec.start_timestamp = start;
    r.rec.end_timestamp = end;
    r.rec.thread_id = (omniprof_thread_id_t)gettid();
    r.rec.num_args = n;
    r.rec.return_value = rc;
    r.args[0] = (omniprof_arg_t){.name = "rank", .type = OMNIPROF_ARG_TYPE_INT, .value.i64 = rank};
    r.args[1] = (omniprof_arg_t){.name = "size", .type = OMNIPROF_ARG_TYPE_INT, .value.i64 = size};
    op_sdk_correlation_begin(&r.rec.correlation_id);
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER, wop, &r.rec, NULL);
    op_sdk_correlation_end(&r.rec.correlation_id);
}

void op_mpi_export_rank(int rank, int size)
{
    char buf[32];
    if (rank >= 0) {
        snprintf(buf, sizeof buf, "%d", rank);
        setenv("OMNIPROF_MPI_RANK", buf, 1);
    }
    if (size > 0) {
        snprintf(buf, sizeof buf, "%d", size);
        setenv("OMNIPROF_MPI_SIZE", buf, 1);
    }
    long local = op_path_local_rank();
    if (local >= 0) {
        snprintf(buf, sizeof buf, "%ld", local);
        setenv("OMNIPROF_MPI_LOCAL_RANK", buf, 1);
    }
}
