/* mpi_other.c — MPI_Init/Init_thread/Finalize, one-sided communication and communicator
 * creation, as the MPI backend interposes them.
 *
 * Init: after the library's init, the rank and size are known: they are exported
 * (OMNIPROF_MPI_RANK/SIZE/LOCAL_RANK, for %rank% in names chosen later), the clocks are measured
 * against rank 0 (mpi_clock.c) and the call is recorded — as MPI_API with --mpi-trace, else as a
 * FUNCTION_WRAPPER record when the CPU backend's wrapper records are on (what the CPU backend
 * did before this backend owned the symbols). Finalize: the clocks are measured again (the
 * drift), every backend pushes what it holds into the SDK (the MPI runtime may end the process
 * abruptly after it), then the library's finalize.
 *
 * One-sided: a window remembers its communicator's members when it is made (the communicator
 * may be freed before the window), so the target of a put or get is named by its world rank.
 * Communicators made through these wrappers get their shared id here (mpi_comm.c), whether or
 * not the call is traced, so that every member counts the same creations. */
#include <limits.h>
#include <stdlib.h>

#include "backend/mpi/mpi_internal.h"
#include "common/clock.h"
#include "omniprof/comm.h"
#include "sdk/backend.h"

typedef void *H;
typedef intptr_t aint; /* MPI_Aint */
#define NO_TARGET INT_MIN

#define REAL(name, type)                          \
    static __typeof__(type) real_;                         \
    if (!real_) real_ = (type)op_mpi_pmpi(#name); \
    if (!real_) return 1

/* ---- init and finalize ------------------------------------------------------------------------ */

static void after_init(int32_t op, uint64_t t0, int rc)
{
    uint64_t t1 = op_now_ns();
    if (rc != 0 || !op_mpi_abi_ready()) return;
    int rank = op_mpi_world_rank_self(), size = op_mpi_world_size();
    op_mpi_export_rank(rank, size);
    if (op_mpi_tracing(op)) {
        op_mpi_call c;
        op_mpi_begin(&c, op, g_op_mpi_abi.comm_world);
        c.rec.start_timestamp = t0;
        c.rec.end_timestamp = t1;
        op_mpi_end(&c, rc);
    } else {
        op_mpi_emit_wrapper(op, t0, t1, rc, rank, size);
    }
    op_mpi_clock_sync(OMNIPROF_CLOCK_SYNC_INIT);
}

OMNIPROF_API int MPI_Init(int *argc, char ***argv)
{
    REAL(MPI_Init, int (*)(int *, char ***));
    uint64_t t0 = op_now_ns();
    int rc = real_(argc, argv);
    after_init(OMNIPROF_MPI_INIT, t0, rc);
    return rc;
}

OMNIPROF_API int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    REAL(MPI_Init_thread, int (*)(int *, char ***, int, int *));
    uint64_t t0 = op_now_ns();
    int rc = real_(argc, argv, required, provided);
    after_init(OMNIPROF_MPI_INIT_THREAD, t0, rc);
    return rc;
}

OMNIPROF_API int MPI_Finalize(void)
{
    REAL(MPI_Finalize, int (*)(void));
    bool ready = op_mpi_abi_ready();
    if (ready) op_mpi_clock_sync(OMNIPROF_CLOCK_SYNC_FINALIZE);
    op_sdk_flush_backends(); /* push this rank's data into the SDK before the MPI runtime winds down */
    bool traced = ready && op_mpi_tracing(OMNIPROF_MPI_FINALIZE);
    op_mpi_call c;
    if (traced) op_mpi_begin(&c, OMNIPROF_MPI_FINALIZE, 0);
    uint64_t t0 = op_now_ns();
    int rc = real_();
    if (traced) op_mpi_end(&c, rc);
    else op_mpi_emit_wrapper(OMNIPROF_MPI_FINALIZE, t0, op_now_ns(), rc, -1, -1);
    return rc;
}

/* ---- one-sided -------------------------------------------------------------------------------- */

/* The end of MPI_Win_create/allocate: the window's members are known; the call is recorded. */
static int win_made(op_mpi_call *c, bool traced, int rc, H comm, H *win, aint size)
{
    if (rc == 0 && win && atomic_load(&g_op_mpi_on)) op_mpi_win_created(op_mpi_h(comm), op_mpi_handle_at(win, 0));
    if (traced) {
        c->rec.count = size;
        op_mpi_end(c, rc);
    }
    return rc;
}

typedef int (*win_create_fn)(void *, aint, int, H, H, H *);
OMNIPROF_API int MPI_Win_create(void *base, aint size, int disp_unit, H info, H comm, H *win)
{
    REAL(MPI_Win_create, win_create_fn);
    bool traced = op_mpi_tracing(OMNIPROF_MPI_WIN_CREATE);
    op_mpi_call c;
    if (traced) op_mpi_begin(&c, OMNIPROF_MPI_WIN_CREATE, op_mpi_h(comm));
    int rc = real_(base, size, disp_unit, info, comm, win);
    return win_made(&c, traced, rc, comm, win, size);
}

typedef int (*win_allocate_fn)(aint, int, H, H, void *, H *);
OMNIPROF_API int MPI_Win_allocate(aint size, int disp_unit, H info, H comm, void *baseptr, H *win)
{
    REAL(MPI_Win_allocate, win_allocate_fn);
    bool traced = op_mpi_tracing(OMNIPROF_MPI_WIN_ALLOCATE);
    op_mpi_call c;
    if (traced) op_mpi_begin(&c, OMNIPROF_MPI_WIN_ALLOCATE, op_mpi_h(comm));
    int rc = real_(size, disp_unit, info, comm, baseptr, win);
    return win_made(&c, traced, rc, comm, win, size);
}

/* MPI_Win_free and MPI_Comm_free: the handle's members are forgotten; the call is recorded. */
static int free_handle(int (*real)(H *), H *handle, int32_t op, bool win)
{
    op_mpi_handle h = handle ? op_mpi_handle_at(handle, 0) : 0;
    bool traced = op_mpi_tracing(op);
    op_mpi_call c;
    if (traced && win) op_mpi_begin_win(&c, op, h);
    else if (traced) op_mpi_begin(&c, op, h);
    int rc = real(handle);
    if (rc == 0) op_mpi_comm_freed(h);
    if (traced) op_mpi_end(&c, rc);
    return rc;
}

OMNIPROF_API int MPI_Win_free(H *win)
{
    REAL(MPI_Win_free, int (*)(H *));
    return free_handle(real_, win, OMNIPROF_MPI_WIN_FREE, true);
}

/* A put, get or accumulate: target as a world rank, origin buffer's type and bytes. */
static void rma_fields(op_mpi_call *c, op_mpi_handle win, int target, H otype, int ocount, bool put)
{
    int32_t w = op_mpi_win_world_rank(win, target);
    uint64_t b = op_mpi_set_type(c, otype, ocount);
    if (put) {
        c->rec.dest = w;
        c->rec.bytes_sent = b;
    } else {
        c->rec.source = w;
        c->rec.bytes_received = b;
    }
}

typedef int (*put_fn)(const void *, int, H, int, aint, int, H, H);
typedef int (*get_fn)(void *, int, H, int, aint, int, H, H);
/* MPI_Put and MPI_Get (real is the library's one or the other, called through put_fn). */
static int put_get(put_fn real, int32_t op, const void *origin, int ocount, H otype, int target, aint tdisp, int tcount,
                   H ttype, H win)
{
    if (!op_mpi_tracing(op)) return real(origin, ocount, otype, target, tdisp, tcount, ttype, win);
    op_mpi_call c;
    op_mpi_begin_win(&c, op, op_mpi_h(win));
    rma_fields(&c, op_mpi_h(win), target, otype, ocount, op == OMNIPROF_MPI_PUT);
    int rc = real(origin, ocount, otype, target, tdisp, tcount, ttype, win);
    op_mpi_end(&c, rc);
    return rc;
}

OMNIPROF_API int MPI_Put(const void *origin, int ocount, H otype, int target, aint tdisp, int tcount, H ttype, H win)
{
    REAL(MPI_Put, put_fn);
    return put_get(real_, OMNIPROF_MPI_PUT, origin, ocount, otype, target, tdisp, tcount, ttype, win);
}

OMNIPROF_API int MPI_Get(void *origin, int ocount, H otype, int target, aint tdisp, int tcount, H ttype, H win)
{
    REAL(MPI_Get, get_fn);
    return put_get((put_fn)real_, OMNIPROF_MPI_GET, origin, ocount, otype, target, tdisp, tcount, ttype, win);
}

typedef int (*acc_fn)(const void *, int, H, int, aint, int, H, H, H);
OMNIPROF_API int MPI_Accumulate(const void *origin, int ocount, H otype, int target, aint tdisp, int tcount, H ttype,
                                H op, H win)
{
    REAL(MPI_Accumulate, acc_fn);
    if (!op_mpi_tracing(OMNIPROF_MPI_ACCUMULATE))
        return real_(origin, ocount, otype, target, tdisp, tcount, ttype, op, win);
    op_mpi_call c;
    op_mpi_begin_win(&c, OMNIPROF_MPI_ACCUMULATE, op_mpi_h(win));
    rma_fields(&c, op_mpi_h(win), target, otype, ocount, true);
    c.rec.reduce_op = op_mpi_op_name(op_mpi_h(op));
    int rc = real_(origin, ocount, otype, target, tdisp, tcount, ttype, op, win);
    op_mpi_end(&c, rc);
    return rc;
}

typedef int (*get_acc_fn)(const void *, int, H, void *, int, H, int, aint, int, H, H, H);
OMNIPROF_API int MPI_Get_accumulate(const void *origin, int ocount, H otype, void *result, int rcount, H rtype,
                                    int target, aint tdisp, int tcount, H ttype, H op, H win)
{
    REAL(MPI_Get_accumulate, get_acc_fn);
    if (!op_mpi_tracing(OMNIPROF_MPI_GET_ACCUMULATE))
        return real_(origin, ocount, otype, result, rcount, rtype, target, tdisp, tcount, ttype, op, win);
    op_mpi_call c;
    op_mpi_begin_win(&c, OMNIPROF_MPI_GET_ACCUMULATE, op_mpi_h(win));
    rma_fields(&c, op_mpi_h(win), target, otype, ocount, true);
    c.rec.source = c.rec.dest;
    int size = 0;
    op_mpi_type(op_mpi_h(rtype), &size);
    c.rec.bytes_received = rcount > 0 && size > 0 ? (uint64_t)rcount * (uint64_t)size : 0;
    c.rec.reduce_op = op_mpi_op_name(op_mpi_h(op));
    int rc = real_(origin, ocount, otype, result, rcount, rtype, target, tdisp, tcount, ttype, op, win);
    op_mpi_end(&c, rc);
    return rc;
}

typedef int (*fetch_op_fn)(const void *, void *, H, int, aint, H, H);
OMNIPROF_API int MPI_Fetch_and_op(const void *origin, void *result, H type, int target, aint tdisp, H op, H win)
{
    REAL(MPI_Fetch_and_op, fetch_op_fn);
    if (!op_mpi_tracing(OMNIPROF_MPI_FETCH_AND_OP)) return real_(origin, result, type, target, tdisp, op, win);
    op_mpi_call c;
    op_mpi_begin_win(&c, OMNIPROF_MPI_FETCH_AND_OP, op_mpi_h(win));
    rma_fields(&c, op_mpi_h(win), target, type, 1, true);
    c.rec.source = c.rec.dest;
    c.rec.bytes_received = c.rec.bytes_sent;
    c.rec.reduce_op = op_mpi_op_name(op_mpi_h(op));
    int rc = real_(origin, result, type, target, tdisp, op, win);
    op_mpi_end(&c, rc);
    return rc;
}

typedef int (*cas_fn)(const void *, const void *, void *, H, int, aint, H);
OMNIPROF_API int MPI_Compare_and_swap(const void *origin, const void *compare, void *result, H type, int target,
                                      aint tdisp, H win)
{
    REAL(MPI_Compare_and_swap, cas_fn);
    if (!op_mpi_tracing(OMNIPROF_MPI_COMPARE_AND_SWAP)) return real_(origin, compare, result, type, target, tdisp, win);
    op_mpi_call c;
    op_mpi_begin_win(&c, OMNIPROF_MPI_COMPARE_AND_SWAP, op_mpi_h(win));
    rma_fields(&c, op_mpi_h(win), target, type, 1, true);
    c.rec.source = c.rec.dest;
    c.rec.bytes_received = c.rec.bytes_sent;
    int rc = real_(origin, compare, result, type, target, tdisp, win);
    op_mpi_end(&c, rc);
    return rc;
}

/* Synchronization on a window: E, the window argument, an optional target rank. */
#define WIN_SYNC(NAME, E, PARAMS, ARGS, TARGET)                                 \
    OMNIPROF_API int NAME PARAMS                                                \
    {                                                                           \
        REAL(NAME, int(*) PARAMS);                                              \
        if (!op_mpi_tracing(OMNIPROF_MPI_##E)) return real_ ARGS;               \
        op_mpi_call c;                                                          \
        op_mpi_begin_win(&c, OMNIPROF_MPI_##E, op_mpi_h(win));                  \
        c.rec.dest = op_mpi_win_world_rank(op_mpi_h(win), TARGET);              \
        int rc = real_ ARGS;                                                    \
        op_mpi_end(&c, rc);                                                     \
        return rc;                                                              \
    }
WIN_SYNC(MPI_Win_fence, WIN_FENCE, (int assert_, H win), (assert_, win), NO_TARGET)
WIN_SYNC(MPI_Win_lock, WIN_LOCK, (int type, int rank, int assert_, H win), (type, rank, assert_, win), rank)
WIN_SYNC(MPI_Win_unlock, WIN_UNLOCK, (int rank, H win), (rank, win), rank)
WIN_SYNC(MPI_Win_lock_all, WIN_LOCK_ALL, (int assert_, H win), (assert_, win), NO_TARGET)
WIN_SYNC(MPI_Win_unlock_all, WIN_UNLOCK_ALL, (H win), (win), NO_TARGET)
WIN_SYNC(MPI_Win_flush, WIN_FLUSH, (int rank, H win), (rank, win), rank)
WIN_SYNC(MPI_Win_post, WIN_POST, (H group, int assert_, H win), (group, assert_, win), -1)
WIN_SYNC(MPI_Win_start, WIN_START, (H group, int assert_, H win), (group, assert_, win), -1)
WIN_SYNC(MPI_Win_complete, WIN_COMPLETE, (H win), (win), NO_TARGET)
WIN_SYNC(MPI_Win_wait, WIN_WAIT, (H win), (win), NO_TARGET)

/* ---- communicators ---------------------------------------------------------------------------- */

/* A call that made *newcomm from `comm`: its shared id, and its record when traced. */
static int comm_made(op_mpi_call *c, bool traced, H comm, H *newcomm, int rc)
{
    if (rc == 0 && newcomm && atomic_load(&g_op_mpi_on)) {
        uint64_t id = op_mpi_comm_created(op_mpi_h(comm), op_mpi_handle_at(newcomm, 0));
        if (traced) c->rec.new_comm = id;
    }
    if (traced) op_mpi_end(c, rc);
    return rc;
}

#define COMM_MAKER(NAME, E, PARAMS, ARGS)                                     \
    OMNIPROF_API int NAME PARAMS                                              \
    {                                                                         \
        REAL(NAME, int(*) PARAMS);                                            \
        bool traced = op_mpi_tracing(OMNIPROF_MPI_##E);                       \
        op_mpi_call c;                                                        \
        if (traced) op_mpi_begin(&c, OMNIPROF_MPI_##E, op_mpi_h(comm));       \
        return comm_made(&c, traced, comm, newcomm, real_ ARGS);              \
    }
COMM_MAKER(MPI_Comm_dup, COMM_DUP, (H comm, H *newcomm), (comm, newcomm))
COMM_MAKER(MPI_Comm_split, COMM_SPLIT, (H comm, int color, int key, H *newcomm), (comm, color, key, newcomm))
COMM_MAKER(MPI_Comm_split_type, COMM_SPLIT_TYPE, (H comm, int type, int key, H info, H *newcomm),
           (comm, type, key, info, newcomm))
COMM_MAKER(MPI_Comm_create, COMM_CREATE, (H comm, H group, H *newcomm), (comm, group, newcomm))
COMM_MAKER(MPI_Cart_create, CART_CREATE, (H comm, int ndims, const int *dims, const int *periods, int reorder,
                                          H *newcomm),
           (comm, ndims, dims, periods, reorder, newcomm))

OMNIPROF_API int MPI_Comm_free(H *comm)
{
    REAL(MPI_Comm_free, int (*)(H *));
    return free_handle(real_, comm, OMNIPROF_MPI_COMM_FREE, false);
}
