/* mpi_internal.h — what the files of the MPI backend share (libomniprof-backend-mpi.so,
 * docs/multinode.md):
 *
 *   mpi_backend.c   registration, settings, start, operation names, the FUNCTION_WRAPPER records
 *                   of MPI_Init/Finalize for CPU-only runs
 *   mpi_abi.c       which MPI the process runs (Open MPI or the MPICH family: handles, constants,
 *                   status layout), the PMPI entry points
 *   mpi_comm.c      communicators (ids shared by their members, ranks -> world ranks), datatype
 *                   and reduction names, outstanding requests
 *   mpi_record.c    one traced call: begin, fill, end (the record), request completions
 *   mpi_p2p.c       point-to-point calls, waits and tests
 *   mpi_coll.c      collectives
 *   mpi_other.c     init/finalize, one-sided, communicator creation
 *   mpi_clock.c     clock offsets against rank 0 at init and finalize (CLOCK_SYNC)
 *   nccl.c          NCCL collectives and point-to-point, by interposition (NCCL_API)
 *
 * The backend does not link MPI: every MPI function it needs is found with dlsym at first use
 * (PMPI_<name>, else the next definition of MPI_<name>), and handles travel as integers, which
 * works for both ABIs (pointers in Open MPI, ints in MPICH: an int argument arrives in a 64-bit
 * register whose upper half the callee must ignore, so op_mpi_h() masks it before we compare). */
#ifndef OMNIPROF_BACKEND_MPI_INTERNAL_H
#define OMNIPROF_BACKEND_MPI_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "omniprof/omniprof.h"

typedef uintptr_t op_mpi_handle; /* any MPI handle, normalized by op_mpi_h */

/* ---- mpi_abi.c ------------------------------------------------------------------------------ */
enum { OP_MPI_UNKNOWN = 0, OP_MPI_OPENMPI, OP_MPI_MPICH };

typedef struct op_mpi_abi {
    int family;
    size_t handle_size;            /* sizeof(MPI_Comm) etc.: 8 (Open MPI) or 4 (MPICH) */
    size_t status_size;            /* sizeof(MPI_Status) */
    size_t status_source, status_tag; /* offsets of MPI_SOURCE and MPI_TAG */
    op_mpi_handle comm_world, comm_self, comm_null, request_null, byte, win_null;
    int any_source, proc_null, root, any_tag, undefined;
    uintptr_t in_place, status_ignore; /* MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE as addresses */
    op_mpi_handle ops[16];         /* predefined reduction ops, names in op_mpi_op_names */
} op_mpi_abi;

extern op_mpi_abi g_op_mpi_abi;
extern const char *const op_mpi_op_names[16];

/* Fills g_op_mpi_abi once the MPI library is in the process (first call). false: unknown MPI. */
bool op_mpi_abi_ready(void);
static inline op_mpi_handle op_mpi_h(const void *handle)
{
    uintptr_t v = (uintptr_t)handle;
    return g_op_mpi_abi.handle_size == 4 ? (v & 0xffffffffu) : v;
}
/* Element i of an array of handles (MPI_Request[], MPI_Comm *out). */
op_mpi_handle op_mpi_handle_at(const void *array, size_t i);
/* The library's function `name` ("MPI_Send"): PMPI_Send, else the next MPI_Send after ours. */
void *op_mpi_pmpi(const char *name);
/* Fields of an MPI_Status. */
int op_mpi_status_source(const void *status);
int op_mpi_status_tag(const void *status);
/* Bytes a completed receive brought (PMPI_Get_count with MPI_BYTE; 0 when unknown). */
uint64_t op_mpi_status_bytes(const void *status);
/* A status the caller did not want (MPI_STATUS_IGNORE) is replaced by one of ours. */
static inline bool op_mpi_status_ignored(const void *status)
{
    return (uintptr_t)status == g_op_mpi_abi.status_ignore;
}
#define OP_MPI_STATUS_BYTES 64 /* larger than any MPI_Status */

/* A hash as a communicator id: positive as an SQLite integer, and never 1 or 2 (MPI_COMM_WORLD,
 * MPI_COMM_SELF). */
static inline uint64_t op_comm_id(uint64_t hash) { return (hash & ((1ull << 62) - 1)) | (1ull << 62); }

/* ---- mpi_comm.c ----------------------------------------------------------------------------- */
typedef struct op_mpi_comm {
    uint64_t id;     /* shared by all members */
    int rank, size;  /* the caller's rank, members (the local group of an inter-communicator) */
} op_mpi_comm;

/* What `comm` is (found or computed: its group translated to world ranks). */
op_mpi_comm op_mpi_comm_info(op_mpi_handle comm);
/* Rank `r` of `comm` (its remote group for an inter-communicator) as a world rank, or an
 * OMNIPROF_COMM_RANK_* value for MPI_ANY_SOURCE / MPI_PROC_NULL / MPI_ROOT / out of range. */
int32_t op_mpi_world_rank(op_mpi_handle comm, int r);
/* A communicator made by a call of ours on `parent`: give it its id (from the parent's id and its
 * creation count, which every member of the parent agrees on, and its members). */
uint64_t op_mpi_comm_created(op_mpi_handle parent, op_mpi_handle newcomm);
void op_mpi_comm_freed(op_mpi_handle comm); /* a communicator or a window */
/* A window made on `comm`: it keeps the communicator's id and members (the communicator may be
 * freed first). Lookups of a window never ask MPI about it. */
void op_mpi_win_created(op_mpi_handle comm, op_mpi_handle win);
bool op_mpi_win_info(op_mpi_handle win, op_mpi_comm *out);
int32_t op_mpi_win_world_rank(op_mpi_handle win, int r); /* INT_MIN: no target */
/* Interned name of a datatype ("MPI_DOUBLE", "derived"), its size in bytes. */
const char *op_mpi_type(op_mpi_handle type, int *size);
const char *op_mpi_op_name(op_mpi_handle op);
int op_mpi_world_rank_self(void); /* -1 before MPI_Init */
int op_mpi_world_size(void);

/* Outstanding requests: what a later wait or test needs to report a completed receive. */
typedef struct op_mpi_request {
    uint64_t id;         /* our id (from 1) */
    uint64_t sequence;   /* posting order (point-to-point) */
    int32_t operation;   /* the call that made it */
    bool recv;           /* a receive (else a send); both completions are reported */
    op_mpi_handle comm;
    uint64_t comm_id;
    int32_t comm_rank, comm_size;
    int32_t tag;
    int32_t dest; /* a send: the world rank it goes to */
    const char *datatype;
    int64_t count;
} op_mpi_request;
/* Remembers request `handle` (returns its id, 0 when the table is full). */
uint64_t op_mpi_request_add(op_mpi_handle handle, const op_mpi_request *r);
/* Takes request `handle` out of the table (true and *out when it was there). */
bool op_mpi_request_take(op_mpi_handle handle, op_mpi_request *out);
void op_mpi_comm_at_fork_child(void);

/* ---- mpi_record.c --------------------------------------------------------------------------- */
typedef struct op_mpi_call {
    omniprof_comm_record_t rec;
    bool traced;
    op_mpi_handle comm;
} op_mpi_call;

extern __thread int op_comm_depth; /* traced MPI or NCCL calls open on this thread */
/* A record of `kind` (MPI_API, NCCL_API), `op`: no peer, no tag, this thread, this rank. */
void op_comm_record_init(omniprof_comm_record_t *r, uint32_t kind, int32_t op);
/* Is `op` traced now (MPI_API configured and enabled, not nested in another traced call)? */
bool op_mpi_tracing(int32_t op);
/* Opens a traced call on `comm` (0: none): correlation id, start time, communicator fields. */
void op_mpi_begin(op_mpi_call *c, int32_t op, op_mpi_handle comm);
/* The same for a one-sided call on window `win`. */
void op_mpi_begin_win(op_mpi_call *c, int32_t op, op_mpi_handle win);
/* Ends it: end time, return value, the record. */
void op_mpi_end(op_mpi_call *c, int rc);
/* Buffer of `count` elements of `type`: datatype name, count, bytes. */
uint64_t op_mpi_set_type(op_mpi_call *c, const void *type, int64_t count);
uint64_t op_mpi_next_sequence(void);
/* After a wait or test `c`: request `handle` completed with `status` (may be ignored). */
void op_mpi_completed(op_mpi_call *c, op_mpi_handle handle, const void *status);
/* A nonblocking call `c` made request *req (the handle it wrote): remember it. */
void op_mpi_posted(op_mpi_call *c, const void *req, bool recv, int32_t tag);

/* Causal profiling: the preload library's wait hooks around calls that may block. */
bool op_mpi_waits_hooked(void);
void op_mpi_wait_begin(void);
void op_mpi_wait_end(void);
void op_mpi_wake(void);

/* ---- mpi_backend.c -------------------------------------------------------------------------- */
extern _Atomic int g_op_mpi_on;   /* MPI_API configured and the backend started */
extern _Atomic int g_op_nccl_on;  /* NCCL_API configured and the backend started */
extern _Atomic int g_op_mpi_clock_on; /* CLOCK_SYNC configured */
extern bool g_op_mpi_interposed;  /* our MPI_* are the ones the program calls */
/* MPI_Init/Init_thread/Finalize as FUNCTION_WRAPPER records (CPU runs without --mpi-trace). */
void op_mpi_emit_wrapper(int32_t op, uint64_t start, uint64_t end, int rc, int rank, int size);
/* Exports OMNIPROF_MPI_RANK/SIZE/LOCAL_RANK for the output-name placeholders. */
void op_mpi_export_rank(int rank, int size);

/* ---- mpi_clock.c ---------------------------------------------------------------------------- */
/* Measures and emits this process's clock offset against world rank 0 (collective over
 * MPI_COMM_WORLD, on a private duplicate of it). */
void op_mpi_clock_sync(int operation);

#endif /* OMNIPROF_BACKEND_MPI_INTERNAL_H */
