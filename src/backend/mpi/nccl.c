/* nccl.c — NCCL collectives and point-to-point operations as NCCL_API records, by interposing
 * NCCL's entry points (docs/multinode.md, "NCCL").
 *
 * Why interposition and not NCCL's profiler plugin: the plugin interface changes with NCCL
 * releases (v1..v5 of ncclProfiler_t so far), while the entry points below have been stable since
 * NCCL 2.7, and the preloaded backend is already in the process for MPI. A program calls NCCL
 * through the dynamic linker (PyTorch's libtorch_cuda.so and every NCCL program link
 * libnccl.so.2), and the preloaded definition is found first; ours finds NCCL's own one with
 * dlsym(RTLD_NEXT), else in the loaded libnccl.so.2 itself (a library loaded with RTLD_LOCAL
 * under a Python extension is not in the global scope that RTLD_NEXT searches). A program that
 * links NCCL statically is not traced (no NCCL_API record; docs say how to see it).
 *
 * What a record holds: the communicator (an id every member computes alike: a hash of the
 * ncclUniqueId it was made from, or of its parent's id, the split's number and color), the
 * caller's rank in it and its size, the CUDA device and stream, count, datatype and reduction,
 * root or peer (communicator ranks: NCCL has no world), and bytes as for MPI (mpi_coll.c). The
 * call returns once the operation is enqueued; the GPU kernels NCCL launches for it are CUDA
 * launches made inside the call (or inside ncclGroupEnd for grouped operations) on the same
 * thread: with the kernel and CUDA API traces they are found by the view nccl_kernels. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/mpi/mpi_internal.h"
#include "common/clock.h"
#include "common/u64map.h"
#include "omniprof/comm.h"
#include "sdk/backend.h"

typedef int nccl_result;
typedef void *nccl_comm; /* ncclComm_t */
typedef void *cuda_stream;
typedef struct nccl_unique_id {
    char internal[128];
} nccl_unique_id;

/* ncclDataType_t and ncclRedOp_t values (nccl.h) */
static const struct {
    const char *name;
    int size;
} k_types[] = {{"ncclInt8", 1},    {"ncclUint8", 1},   {"ncclInt32", 4},    {"ncclUint32", 4},
               {"ncclInt64", 8},   {"ncclUint64", 8},  {"ncclFloat16", 2},  {"ncclFloat32", 4},
               {"ncclFloat64", 8}, {"ncclBfloat16", 2}, {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1}};
static const char *const k_ops[] = {"ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"};

/* ---- the library's functions ------------------------------------------------------------------ */

static void *g_lib; /* the loaded libnccl, when RTLD_NEXT cannot see it */

static int find_nccl(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const char *name = info->dlpi_name;
    if (name && strstr(name, "libnccl") && !strstr(name, "omniprof")) {
        *(void **)arg = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
        if (*(void **)arg) return 1;
    }
    return 0;
}

static void *nccl_sym(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (f) return f;
    if (!g_lib) g_lib = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
    if (!g_lib) g_lib = dlopen("libnccl.so", RTLD_LAZY | RTLD_NOLOAD);
    if (!g_lib) dl_iterate_phdr(find_nccl, &g_lib);
    return g_lib ? dlsym(g_lib, name) : NULL;
}

#define REAL(name, type)                         \
    static __typeof__(type) real_;                        \
    if (!real_) real_ = (type)nccl_sym(#name);   \
    if (!real_) return 2 /* ncclSystemError: no NCCL in the process */

/* ---- communicators ---------------------------------------------------------------------------- */

typedef struct nccl_comm_info {
    uint64_t id;
    int rank, size, device;
    uint64_t children;
} nccl_comm_info;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static op_u64map g_comms; /* comm pointer -> index + 1 into g_info */
static nccl_comm_info *g_info;
static size_t g_n_info, g_cap_info;

static nccl_comm_info query(nccl_comm comm)
{
    typedef nccl_result (*int_fn)(nccl_comm, int *);
    static int_fn count, rank, device;
    if (!count) count = (int_fn)nccl_sym("ncclCommCount");
    if (!rank) rank = (int_fn)nccl_sym("ncclCommUserRank");
    if (!device) device = (int_fn)nccl_sym("ncclCommCuDevice");
    nccl_comm_info ci = {0, -1, 0, -1, 0};
    if (count) count(comm, &ci.size);
    if (rank) rank(comm, &ci.rank);
    if (device) device(comm, &ci.device);
    return ci;
}

static void remember(nccl_comm comm, uint64_t id)
{
    nccl_comm_info ci = query(comm);
    ci.id = id;
    pthread_mutex_lock(&g_mu);
    uint64_t at;
    if (op_u64map_get(&g_comms, (uint64_t)(uintptr_t)comm, &at)) {
        g_info[at - 1] = ci;
    } else {
        if (g_n_info == g_cap_info) {
            size_t cap = g_cap_info ? 2 * g_cap_info : 16;
            nccl_comm_info *v = realloc(g_info, cap * sizeof *v);
            if (v) g_info = v, g_cap_info = cap;
        }
        if (g_n_info < g_cap_info && op_u64map_put(&g_comms, (uint64_t)(uintptr_t)comm, g_n_info + 1) == 0)
            g_info[g_n_info++] = ci;
    }
    pthread_mutex_unlock(&g_mu);
}

static nccl_comm_info info_of(nccl_comm comm)
{
    uint64_t at;
    pthread_mutex_lock(&g_mu);
    bool known = op_u64map_get(&g_comms, (uint64_t)(uintptr_t)comm, &at);
    nccl_comm_info ci = known ? g_info[at - 1] : (nccl_comm_info){0, -1, 0, -1, 0};
    pthread_mutex_unlock(&g_mu);
    if (!known) {
        remember(comm, 0); /* made by a call we do not wrap: no shared id */
        ci = query(comm);
    }
    return ci;
}

/* A split's id: (parent id, the parent's split number, color), which every member agrees on. */
static uint64_t split_id(nccl_comm parent, int color)
{
    uint64_t at, id = 0;
    pthread_mutex_lock(&g_mu);
    if (op_u64map_get(&g_comms, (uint64_t)(uintptr_t)parent, &at))
        id = op_hash64x3(g_info[at - 1].id, ++g_info[at - 1].children, (uint64_t)(uint32_t)color);
    pthread_mutex_unlock(&g_mu);
    return op_comm_id(id);
}

static uint64_t unique_id_hash(const nccl_unique_id *u) { return op_comm_id(op_hash_bytes(u->internal, sizeof u->internal)); }

/* ---- records ---------------------------------------------------------------------------------- */

static bool tracing(int32_t op)
{
    return atomic_load_explicit(&g_op_nccl_on, memory_order_relaxed) && op_comm_depth == 0 &&
           op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_NCCL_API, op);
}

static void begin(omniprof_comm_record_t *r, int32_t op, nccl_comm comm, cuda_stream stream)
{
    op_comm_depth++;
    op_comm_record_init(r, OMNIPROF_BUFFER_TRACING_NCCL_API, op);
    if (comm) {
        nccl_comm_info ci = info_of(comm);
        r->comm = ci.id;
        r->comm_rank = ci.rank;
        r->comm_size = ci.size;
        r->device = ci.device;
    }
    r->stream = (uint64_t)(uintptr_t)stream;
    op_sdk_correlation_begin(&r->correlation_id);
    r->start_timestamp = op_now_ns();
}

static nccl_result end(omniprof_comm_record_t *r, nccl_result rc)
{
    r->end_timestamp = op_now_ns();
    r->return_value = rc;
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_NCCL_API, r->operation, r, NULL);
    op_sdk_correlation_end(&r->correlation_id);
    op_comm_depth--;
    return rc;
}

static uint64_t set_type(omniprof_comm_record_t *r, int type, size_t count)
{
    r->count = (int64_t)count;
    if (type < 0 || type >= (int)(sizeof k_types / sizeof k_types[0])) {
        r->datatype = "ncclUnknownType";
        return 0;
    }
    r->datatype = k_types[type].name;
    return (uint64_t)count * (uint64_t)k_types[type].size;
}

static void set_op(omniprof_comm_record_t *r, int op)
{
    r->reduce_op = op >= 0 && op < 5 ? k_ops[op] : "ncclUserOp";
}

/* ---- collectives ------------------------------------------------------------------------------ */

typedef nccl_result (*allreduce_fn)(const void *, void *, size_t, int, int, nccl_comm, cuda_stream);
OMNIPROF_API nccl_result ncclAllReduce(const void *s, void *r, size_t count, int type, int op, nccl_comm comm,
                                       cuda_stream stream)
{
    REAL(ncclAllReduce, allreduce_fn);
    if (!tracing(OMNIPROF_NCCL_ALL_REDUCE)) return real_(s, r, count, type, op, comm, stream);
    omniprof_comm_record_t rec;
    begin(&rec, OMNIPROF_NCCL_ALL_REDUCE, comm, stream);
    rec.bytes_sent = rec.bytes_received = set_type(&rec, type, count);
    set_op(&rec, op);
    return end(&rec, real_(s, r, count, type, op, comm, stream));
}

typedef nccl_result (*broadcast_fn)(const void *, void *, size_t, int, int, nccl_comm, cuda_stream);
OMNIPROF_API nccl_result ncclBroadcast(const void *s, void *r, size_t count, int type, int root, nccl_comm comm,
                                       cuda_stream stream)
{
    REAL(ncclBroadcast, broadcast_fn);
    if (!tracing(OMNIPROF_NCCL_BROADCAST)) return real_(s, r, count, type, root, comm, stream);
    omniprof_comm_record_t rec;
    begin(&rec, OMNIPROF_NCCL_BROADCAST, comm, stream);
    uint64_t b = set_type(&rec, type, count);
    rec.root = root;
    if (rec.comm_rank == root) rec.bytes_sent = b;
    else rec.bytes_received = b;
    return end(&rec, real_(s, r, count, type, root, comm, stream));
}

typedef nccl_result (*bcast_fn)(void *, size_t, int, int, nccl_comm, cuda_stream);
OMNIPROF_API nccl_result ncclBcast(void *buf, size_t count, int type, int root, nccl_comm comm, cuda_stream stream)
{
    REAL(ncclBcast, bcast_fn);
    if (!tracing(OMNIPROF_NCCL_BCAST)) return real_(buf, count, type, root, comm, stream);
    omniprof_comm_record_t rec;
    begin(&rec, OMNIPROF_NCCL_BCAST, comm, stream);
    uint64_t b = set_type(&rec, type, count);
    rec.root = root;
    if (rec.comm_rank == root) rec.bytes_sent = b;
    else rec.bytes_received = b;
    return end(&rec, real_(buf, count, type, root, comm, stream));
}

typedef nccl_result (*reduce_fn)(const void *, void *, size_t, int, int, int, nccl_comm, cuda_stream);
OMNIPROF_API nccl_result ncclReduce(const void *s, void *r, size_t count, int type, int op, int root, nccl_comm comm,
                                    cuda_stream stream)
{
    REAL(ncclReduce, reduce_fn);
    if (!tracing(OMNIPROF_NCCL_REDUCE)) return real_(s, r, count, type, op, root, comm, stream);
    omniprof_comm_record_t rec;
    begin(&rec, OMNIPROF_NCCL_REDUCE, comm, stream);
    rec.bytes_sent = set_type(&rec, type, count);
    if (rec.comm_rank == root) rec.bytes_received = rec.bytes_sent;
    rec.root = root;
    set_op(&rec, op);
    return end(&rec, real_(s, r, count, type, op, root, comm, stream));
}

typedef nccl_result (*allgather_fn)(const void *, void *, size_t, int, nccl_comm, cuda_stream);
OMNIPROF_API nccl_result ncclAllGather(const void *s, void *r, size_t count, int type, nccl_comm comm,
                                       cuda_stream stream)
{
    REAL(ncclAllGather, allgather_fn);
    if (!tracing(OMNIPROF_NCCL_ALL_GATHER)) return real_(s, r, count, type, comm, stream);
    omniprof_comm_record_t rec;
    begin(&rec, OMNIPROF_NCCL_ALL_GATHER, comm, stream);
    rec.bytes_sent = set_type(&rec, type, count);
    rec.bytes_received = rec.bytes_sent * (uint64_t)(rec.comm_size > 0 ? rec.comm_size : 1);
    return end(&rec, real_(s, r, count, type, comm, stream));
}

typedef nccl_result (*reduce_scatter_fn)(const void *, void *, size_t, int, int, nccl_comm, cuda_stream);
OMNIPROF_API nccl_result ncclReduceScatter(const void *s, void *r, size_t count, int type, int op, nccl_comm comm,
                                           cuda_stream stream)
{
    REAL(ncclReduceScatter, reduce_scatter_fn);
    if (!tracing(OMNIPROF_NCCL_REDUCE_SCATTER)) return real_(s, r, count, type, op, comm, stream);
    omniprof_comm_record_t rec;
    begin(&rec, OMNIPROF_NCCL_REDUCE_SCATTER, comm, stream);
    rec.bytes_received = set_type(&rec, type, count);
    rec.bytes_sent = rec.bytes_received * (uint64_t)(rec.comm_size > 0 ? rec.comm_size : 1);
    set_op(&rec, op);
    return end(&rec, real_(s, r, count, type, op, comm, stream));
}

typedef nccl_result (*p2p_fn)(const void *, size_t, int, int, nccl_comm, cuda_stream);
/* ncclSend and ncclRecv: the peer is the destination or the source. */
static nccl_result p2p(p2p_fn real, int op, const void *buf, size_t count, int type, int peer, nccl_comm comm,
                       cuda_stream stream)
{
    if (!tracing(op)) return real(buf, count, type, peer, comm, stream);
    omniprof_comm_record_t rec;
    begin(&rec, op, comm, stream);
    uint64_t b = set_type(&rec, type, count);
    if (op == OMNIPROF_NCCL_SEND) rec.bytes_sent = b, rec.dest = peer, rec.send_tag = 0;
    else rec.bytes_received = b, rec.source = peer, rec.recv_tag = 0;
    rec.sequence = op_mpi_next_sequence();
    return end(&rec, real(buf, count, type, peer, comm, stream));
}

OMNIPROF_API nccl_result ncclSend(const void *buf, size_t count, int type, int peer, nccl_comm comm, cuda_stream stream)
{
    REAL(ncclSend, p2p_fn);
    return p2p(real_, OMNIPROF_NCCL_SEND, buf, count, type, peer, comm, stream);
}

OMNIPROF_API nccl_result ncclRecv(void *buf, size_t count, int type, int peer, nccl_comm comm, cuda_stream stream)
{
    REAL(ncclRecv, p2p_fn);
    return p2p(real_, OMNIPROF_NCCL_RECV, buf, count, type, peer, comm, stream);
}

#define GROUP(NAME, E)                                                  \
    OMNIPROF_API nccl_result NAME(void)                                 \
    {                                                                   \
        REAL(NAME, nccl_result(*)(void));                               \
        if (!tracing(OMNIPROF_NCCL_##E)) return real_();                \
        omniprof_comm_record_t rec;                                     \
        begin(&rec, OMNIPROF_NCCL_##E, NULL, NULL);                     \
        return end(&rec, real_());                                      \
    }
GROUP(ncclGroupStart, GROUP_START)
GROUP(ncclGroupEnd, GROUP_END)

/* ---- communicators ---------------------------------------------------------------------------- */

typedef nccl_result (*init_rank_fn)(nccl_comm *, int, nccl_unique_id, int);
OMNIPROF_API nccl_result ncclCommInitRank(nccl_comm *comm, int nranks, nccl_unique_id id, int rank)
{
    REAL(ncclCommInitRank, init_rank_fn);
    bool traced = tracing(OMNIPROF_NCCL_COMM_INIT_RANK);
    omniprof_comm_record_t rec;
    if (traced) begin(&rec, OMNIPROF_NCCL_COMM_INIT_RANK, NULL, NULL);
    nccl_result rc = real_(comm, nranks, id, rank);
    if (rc == 0 && comm && atomic_load(&g_op_nccl_on)) remember(*comm, unique_id_hash(&id));
    if (!traced) return rc;
    rec.new_comm = unique_id_hash(&id);
    rec.comm_rank = rank, rec.comm_size = nranks;
    return end(&rec, rc);
}

typedef nccl_result (*init_config_fn)(nccl_comm *, int, nccl_unique_id, int, void *);
OMNIPROF_API nccl_result ncclCommInitRankConfig(nccl_comm *comm, int nranks, nccl_unique_id id, int rank, void *config)
{
    REAL(ncclCommInitRankConfig, init_config_fn);
    bool traced = tracing(OMNIPROF_NCCL_COMM_INIT_RANK_CONFIG);
    omniprof_comm_record_t rec;
    if (traced) begin(&rec, OMNIPROF_NCCL_COMM_INIT_RANK_CONFIG, NULL, NULL);
    nccl_result rc = real_(comm, nranks, id, rank, config);
    /* a nonblocking communicator returns ncclInProgress (7) and is usable later: it is named now */
    if ((rc == 0 || rc == 7) && comm && atomic_load(&g_op_nccl_on)) remember(*comm, unique_id_hash(&id));
    if (!traced) return rc;
    rec.new_comm = unique_id_hash(&id);
    rec.comm_rank = rank, rec.comm_size = nranks;
    return end(&rec, rc);
}

typedef nccl_result (*init_scalable_fn)(nccl_comm *, int, int, int, nccl_unique_id *, void *);
OMNIPROF_API nccl_result ncclCommInitRankScalable(nccl_comm *comm, int nranks, int rank, int n_ids, nccl_unique_id *ids,
                                                  void *config)
{
    REAL(ncclCommInitRankScalable, init_scalable_fn);
    bool traced = tracing(OMNIPROF_NCCL_COMM_INIT_RANK_SCALABLE);
    omniprof_comm_record_t rec;
    if (traced) begin(&rec, OMNIPROF_NCCL_COMM_INIT_RANK_SCALABLE, NULL, NULL);
    nccl_result rc = real_(comm, nranks, rank, n_ids, ids, config);
    uint64_t id = n_ids > 0 && ids ? unique_id_hash(&ids[0]) : 0;
    if ((rc == 0 || rc == 7) && comm && atomic_load(&g_op_nccl_on)) remember(*comm, id);
    if (!traced) return rc;
    rec.new_comm = id;
    rec.comm_rank = rank, rec.comm_size = nranks;
    return end(&rec, rc);
}

typedef nccl_result (*init_all_fn)(nccl_comm *, int, const int *);
OMNIPROF_API nccl_result ncclCommInitAll(nccl_comm *comms, int ndev, const int *devlist)
{
    REAL(ncclCommInitAll, init_all_fn);
    bool traced = tracing(OMNIPROF_NCCL_COMM_INIT_ALL);
    omniprof_comm_record_t rec;
    if (traced) begin(&rec, OMNIPROF_NCCL_COMM_INIT_ALL, NULL, NULL);
    nccl_result rc = real_(comms, ndev, devlist);
    static _Atomic uint64_t cliques;
    uint64_t id = op_comm_id(op_hash64x3((uint64_t)getpid(), atomic_fetch_add(&cliques, 1) + 1, 0x6e63636c));
    for (int i = 0; rc == 0 && comms && i < ndev && atomic_load(&g_op_nccl_on); i++) remember(comms[i], id);
    if (!traced) return rc;
    rec.new_comm = id;
    rec.comm_size = ndev;
    return end(&rec, rc);
}

typedef nccl_result (*split_fn)(nccl_comm, int, int, nccl_comm *, void *);
OMNIPROF_API nccl_result ncclCommSplit(nccl_comm comm, int color, int key, nccl_comm *newcomm, void *config)
{
    REAL(ncclCommSplit, split_fn);
    bool traced = tracing(OMNIPROF_NCCL_COMM_SPLIT);
    omniprof_comm_record_t rec;
    if (traced) begin(&rec, OMNIPROF_NCCL_COMM_SPLIT, comm, NULL);
    nccl_result rc = real_(comm, color, key, newcomm, config);
    uint64_t id = 0;
    if ((rc == 0 || rc == 7) && newcomm && *newcomm && atomic_load(&g_op_nccl_on)) {
        id = split_id(comm, color);
        remember(*newcomm, id);
    }
    if (!traced) return rc;
    rec.new_comm = id;
    return end(&rec, rc);
}

#define COMM_END(NAME, E)                                                        \
    OMNIPROF_API nccl_result NAME(nccl_comm comm)                                \
    {                                                                            \
        REAL(NAME, nccl_result(*)(nccl_comm));                                   \
        if (!tracing(OMNIPROF_NCCL_##E)) return real_(comm);                     \
        omniprof_comm_record_t rec;                                              \
        begin(&rec, OMNIPROF_NCCL_##E, comm, NULL);                              \
        return end(&rec, real_(comm));                                           \
    }
COMM_END(ncclCommFinalize, COMM_FINALIZE)
COMM_END(ncclCommDestroy, COMM_DESTROY)
COMM_END(ncclCommAbort, COMM_ABORT)
