/* omniprof/comm.h — communication records: MPI calls (MPI_API), NCCL calls (NCCL_API) and the
 * clock estimates of a multi-process run (CLOCK_SYNC).
 *
 * Produced by the MPI backend (src/backend/mpi/: MPI through the profiling interface, NCCL by
 * interposing its entry points; docs/multinode.md). Ranks in these records are world ranks
 * (MPI_COMM_WORLD; for NCCL the communicator's own ranks), so that the records of every process
 * of a job name the same peer the same way. A communicator id is the same number on every
 * member of the communicator (computed from its members and the call that made it), so that the
 * k-th message from rank A to rank B on communicator C with tag T can be matched with the k-th
 * receive of it on B (MPI's non-overtaking rule) once the processes' databases are merged. */
#ifndef OMNIPROF_COMM_H
#define OMNIPROF_COMM_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

/* Classes of calls (summaries group by them; docs/multinode.md). */
typedef enum omniprof_comm_class_t {
    OMNIPROF_COMM_CLASS_NONE = 0,
    OMNIPROF_COMM_CLASS_SETUP,      /* init, finalize */
    OMNIPROF_COMM_CLASS_SEND,       /* point-to-point send (blocking or not) */
    OMNIPROF_COMM_CLASS_RECV,       /* point-to-point receive, probe */
    OMNIPROF_COMM_CLASS_SENDRECV,   /* both in one call */
    OMNIPROF_COMM_CLASS_COLLECTIVE, /* barrier, broadcast, reductions, gathers ... */
    OMNIPROF_COMM_CLASS_WAIT,       /* waits and tests of requests */
    OMNIPROF_COMM_CLASS_RMA,        /* one-sided: windows, put/get, synchronization */
    OMNIPROF_COMM_CLASS_COMM,       /* communicator creation and release */
    OMNIPROF_COMM_CLASS_GROUP,      /* NCCL group start/end */
    OMNIPROF_COMM_CLASS_LAST
} omniprof_comm_class_t;

/* MPI_API operations: OMNIPROF_MPI_OPERATIONS(X) expands X(ENUM, "MPI_Name", CLASS) once per
 * traced function, in enum order (values only grow at the end). */
#define OMNIPROF_MPI_OPERATIONS(X)                          \
    X(INIT, "MPI_Init", SETUP)                              \
    X(INIT_THREAD, "MPI_Init_thread", SETUP)                \
    X(FINALIZE, "MPI_Finalize", SETUP)                      \
    X(SEND, "MPI_Send", SEND)                               \
    X(SSEND, "MPI_Ssend", SEND)                             \
    X(BSEND, "MPI_Bsend", SEND)                             \
    X(RSEND, "MPI_Rsend", SEND)                             \
    X(ISEND, "MPI_Isend", SEND)                             \
    X(ISSEND, "MPI_Issend", SEND)                           \
    X(IBSEND, "MPI_Ibsend", SEND)                           \
    X(IRSEND, "MPI_Irsend", SEND)                           \
    X(RECV, "MPI_Recv", RECV)                               \
    X(IRECV, "MPI_Irecv", RECV)                             \
    X(SENDRECV, "MPI_Sendrecv", SENDRECV)                   \
    X(SENDRECV_REPLACE, "MPI_Sendrecv_replace", SENDRECV)   \
    X(PROBE, "MPI_Probe", RECV)                             \
    X(IPROBE, "MPI_Iprobe", RECV)                           \
    X(WAIT, "MPI_Wait", WAIT)                               \
    X(WAITALL, "MPI_Waitall", WAIT)                         \
    X(WAITANY, "MPI_Waitany", WAIT)                         \
    X(WAITSOME, "MPI_Waitsome", WAIT)                       \
    X(TEST, "MPI_Test", WAIT)                               \
    X(TESTALL, "MPI_Testall", WAIT)                         \
    X(TESTANY, "MPI_Testany", WAIT)                         \
    X(TESTSOME, "MPI_Testsome", WAIT)                       \
    X(BARRIER, "MPI_Barrier", COLLECTIVE)                   \
    X(BCAST, "MPI_Bcast", COLLECTIVE)                       \
    X(REDUCE, "MPI_Reduce", COLLECTIVE)                     \
    X(ALLREDUCE, "MPI_Allreduce", COLLECTIVE)               \
    X(GATHER, "MPI_Gather", COLLECTIVE)                     \
    X(GATHERV, "MPI_Gatherv", COLLECTIVE)                   \
    X(SCATTER, "MPI_Scatter", COLLECTIVE)                   \
    X(SCATTERV, "MPI_Scatterv", COLLECTIVE)                 \
    X(ALLGATHER, "MPI_Allgather", COLLECTIVE)               \
    X(ALLGATHERV, "MPI_Allgatherv", COLLECTIVE)             \
    X(ALLTOALL, "MPI_Alltoall", COLLECTIVE)                 \
    X(ALLTOALLV, "MPI_Alltoallv", COLLECTIVE)               \
    X(REDUCE_SCATTER, "MPI_Reduce_scatter", COLLECTIVE)     \
    X(REDUCE_SCATTER_BLOCK, "MPI_Reduce_scatter_block", COLLECTIVE) \
    X(SCAN, "MPI_Scan", COLLECTIVE)                         \
    X(EXSCAN, "MPI_Exscan", COLLECTIVE)                     \
    X(IBARRIER, "MPI_Ibarrier", COLLECTIVE)                 \
    X(IBCAST, "MPI_Ibcast", COLLECTIVE)                     \
    X(IREDUCE, "MPI_Ireduce", COLLECTIVE)                   \
    X(IALLREDUCE, "MPI_Iallreduce", COLLECTIVE)             \
    X(IALLGATHER, "MPI_Iallgather", COLLECTIVE)             \
    X(IALLTOALL, "MPI_Ialltoall", COLLECTIVE)               \
    X(WIN_CREATE, "MPI_Win_create", RMA)                    \
    X(WIN_ALLOCATE, "MPI_Win_allocate", RMA)                \
    X(WIN_FREE, "MPI_Win_free", RMA)                        \
    X(PUT, "MPI_Put", RMA)                                  \
    X(GET, "MPI_Get", RMA)                                  \
    X(ACCUMULATE, "MPI_Accumulate", RMA)                    \
    X(GET_ACCUMULATE, "MPI_Get_accumulate", RMA)            \
    X(FETCH_AND_OP, "MPI_Fetch_and_op", RMA)                \
    X(COMPARE_AND_SWAP, "MPI_Compare_and_swap", RMA)        \
    X(WIN_FENCE, "MPI_Win_fence", RMA)                      \
    X(WIN_LOCK, "MPI_Win_lock", RMA)                        \
    X(WIN_UNLOCK, "MPI_Win_unlock", RMA)                    \
    X(WIN_LOCK_ALL, "MPI_Win_lock_all", RMA)                \
    X(WIN_UNLOCK_ALL, "MPI_Win_unlock_all", RMA)            \
    X(WIN_FLUSH, "MPI_Win_flush", RMA)                      \
    X(WIN_POST, "MPI_Win_post", RMA)                        \
    X(WIN_START, "MPI_Win_start", RMA)                      \
    X(WIN_COMPLETE, "MPI_Win_complete", RMA)                \
    X(WIN_WAIT, "MPI_Win_wait", RMA)                        \
    X(COMM_DUP, "MPI_Comm_dup", COMM)                       \
    X(COMM_SPLIT, "MPI_Comm_split", COMM)                   \
    X(COMM_SPLIT_TYPE, "MPI_Comm_split_type", COMM)         \
    X(COMM_CREATE, "MPI_Comm_create", COMM)                 \
    X(CART_CREATE, "MPI_Cart_create", COMM)                 \
    X(COMM_FREE, "MPI_Comm_free", COMM)

typedef enum omniprof_mpi_operation_t {
    OMNIPROF_MPI_NONE = 0,
#define OMNIPROF_MPI_ENUM_(E, NAME, CLASS) OMNIPROF_MPI_##E,
    OMNIPROF_MPI_OPERATIONS(OMNIPROF_MPI_ENUM_)
#undef OMNIPROF_MPI_ENUM_
    OMNIPROF_MPI_LAST
} omniprof_mpi_operation_t;

/* NCCL_API operations, as OMNIPROF_MPI_OPERATIONS. */
#define OMNIPROF_NCCL_OPERATIONS(X)                     \
    X(ALL_REDUCE, "ncclAllReduce", COLLECTIVE)          \
    X(BROADCAST, "ncclBroadcast", COLLECTIVE)           \
    X(BCAST, "ncclBcast", COLLECTIVE)                   \
    X(REDUCE, "ncclReduce", COLLECTIVE)                 \
    X(ALL_GATHER, "ncclAllGather", COLLECTIVE)          \
    X(REDUCE_SCATTER, "ncclReduceScatter", COLLECTIVE)  \
    X(SEND, "ncclSend", SEND)                           \
    X(RECV, "ncclRecv", RECV)                           \
    X(GROUP_START, "ncclGroupStart", GROUP)             \
    X(GROUP_END, "ncclGroupEnd", GROUP)                 \
    X(COMM_INIT_RANK, "ncclCommInitRank", COMM)         \
    X(COMM_INIT_RANK_CONFIG, "ncclCommInitRankConfig", COMM) \
    X(COMM_INIT_ALL, "ncclCommInitAll", COMM)           \
    X(COMM_INIT_RANK_SCALABLE, "ncclCommInitRankScalable", COMM) \
    X(COMM_SPLIT, "ncclCommSplit", COMM)                \
    X(COMM_FINALIZE, "ncclCommFinalize", COMM)          \
    X(COMM_DESTROY, "ncclCommDestroy", COMM)            \
    X(COMM_ABORT, "ncclCommAbort", COMM)

typedef enum omniprof_nccl_operation_t {
    OMNIPROF_NCCL_NONE = 0,
#define OMNIPROF_NCCL_ENUM_(E, NAME, CLASS) OMNIPROF_NCCL_##E,
    OMNIPROF_NCCL_OPERATIONS(OMNIPROF_NCCL_ENUM_)
#undef OMNIPROF_NCCL_ENUM_
    OMNIPROF_NCCL_LAST
} omniprof_nccl_operation_t;

/* omniprof_comm_record_t.phase */
typedef enum omniprof_comm_phase_t {
    OMNIPROF_COMM_PHASE_CALL = 0,     /* the call itself, start..end */
    OMNIPROF_COMM_PHASE_COMPLETE = 1, /* a request completed inside a wait or test (start =
                                         end = that call's end); `operation` is the call that
                                         posted it (MPI_Irecv, MPI_Isend), `sequence` its posting
                                         order, `request` its id; a receive: `source`/`recv_tag`/
                                         `bytes_received` what arrived; a send: `dest` and
                                         `send_tag` (its bytes are the posting call's); its
                                         ancestor correlation id is the wait or test */
    OMNIPROF_COMM_PHASE_LAST
} omniprof_comm_phase_t;

/* Special ranks in dest/source/root. */
#define OMNIPROF_COMM_RANK_NONE (-1)       /* the call has no such peer */
#define OMNIPROF_COMM_RANK_ANY (-2)        /* MPI_ANY_SOURCE (before completion) */
#define OMNIPROF_COMM_RANK_PROC_NULL (-3)  /* MPI_PROC_NULL */
#define OMNIPROF_COMM_RANK_ROOT (-4)       /* MPI_ROOT (inter-communicator root) */
#define OMNIPROF_COMM_TAG_NONE (-2147483647 - 1)
/* Communicator ids of the two predefined communicators (others hash their members) */
#define OMNIPROF_COMM_ID_WORLD 1 /* MPI_COMM_WORLD: its ranks are the world ranks */
#define OMNIPROF_COMM_ID_SELF 2  /* MPI_COMM_SELF */

/* MPI_API, NCCL_API: one call (or one request completion). */
typedef struct omniprof_comm_record_t {
    uint64_t size;
    uint32_t kind;                          /* MPI_API or NCCL_API */
    omniprof_tracing_operation_t operation; /* omniprof_mpi_operation_t / omniprof_nccl_operation_t */
    omniprof_correlation_id_t correlation_id;
    omniprof_timestamp_t start_timestamp;
    omniprof_timestamp_t end_timestamp;
    omniprof_thread_id_t thread_id;
    int32_t return_value;    /* the call's return code (MPI_SUCCESS / ncclSuccess = 0) */
    uint32_t phase;          /* omniprof_comm_phase_t */
    int32_t world_rank;      /* the caller's world rank (-1 unknown) */
    int32_t comm_rank;       /* the caller's rank in `comm` (-1 unknown) */
    int32_t comm_size;       /* members of `comm` (0 unknown) */
    int32_t dest;            /* world rank a message goes to, or OMNIPROF_COMM_RANK_* */
    int32_t source;          /* world rank a message comes from, or OMNIPROF_COMM_RANK_* */
    int32_t root;            /* world rank of a collective's root, or OMNIPROF_COMM_RANK_* */
    int32_t send_tag;        /* OMNIPROF_COMM_TAG_NONE when the call sends nothing */
    int32_t recv_tag;        /* as received after completion; MPI_ANY_TAG (-1) before */
    int64_t count;           /* elements of `datatype` in the (first) buffer */
    uint64_t bytes_sent;     /* docs/multinode.md, "Bytes", says what each collective counts */
    uint64_t bytes_received;
    uint64_t comm;           /* communicator id, the same on every member (0 none) */
    uint64_t new_comm;       /* communicator creation: the new one's id (0 none) */
    uint64_t request;        /* nonblocking calls and completions: the request's id (0 none) */
    uint64_t sequence;       /* point-to-point calls: their order in the process (from 1) */
    uint64_t stream;         /* NCCL: the CUDA stream the operation was enqueued on */
    int32_t device;          /* NCCL: the CUDA device, -1 none */
    int32_t reserved;
    const char *datatype;    /* "MPI_DOUBLE", "ncclFloat32", "derived", NULL when none */
    const char *reduce_op;   /* "MPI_SUM", "ncclSum", NULL when none */
} omniprof_comm_record_t;

/* CLOCK_SYNC operations */
typedef enum omniprof_clock_sync_operation_t {
    OMNIPROF_CLOCK_SYNC_NONE = 0,
    OMNIPROF_CLOCK_SYNC_INIT,     /* measured at MPI_Init */
    OMNIPROF_CLOCK_SYNC_FINALIZE, /* measured at MPI_Finalize */
    OMNIPROF_CLOCK_SYNC_LAST
} omniprof_clock_sync_operation_t;

/* CLOCK_SYNC: this process's CLOCK_MONOTONIC against the reference process's (world rank 0),
 * from round trips over MPI: at local time `local_timestamp` the reference clock read
 * local_timestamp - offset_ns, within +/- error_ns. Two estimates (init, finalize) give the
 * drift; merge, convert and summary map this process's times onto the reference clock. */
typedef struct omniprof_clock_sync_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation; /* omniprof_clock_sync_operation_t */
    omniprof_timestamp_t local_timestamp;
    int64_t offset_ns;       /* local clock - reference clock */
    uint64_t error_ns;       /* half the best round trip */
    uint64_t round_trip_ns;  /* the best round trip */
    int32_t rank;            /* this process's world rank */
    int32_t reference_rank;  /* the rank whose clock is the reference (0) */
    uint32_t round_trips;    /* exchanges the estimate was chosen from */
    uint32_t reserved;
} omniprof_clock_sync_record_t;

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_COMM_H */
