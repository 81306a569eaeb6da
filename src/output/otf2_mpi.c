/* otf2_mpi.c — MPI communication in the OTF2 archive of otf2.c (otf2_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omniprof/comm.h"
#include "output/otf2_internal.h"

#ifdef OMNIPROF_HAVE_OTF2

/* ---- MPI communication ------------------------------------------------------------------------
 * The omniprof_comm rows (op_rd_mpi_ops) become OTF2's MPI events inside the Enter/Leave of the
 * call's region: after the Enter, MpiSend / MpiIsend (with its request) / MpiIrecvRequest /
 * MpiCollectiveBegin / NonBlockingCollectiveRequest; before the Leave, MpiRecv /
 * MpiCollectiveEnd, and the completions a wait or test made (its 'complete' rows): MpiIrecv,
 * MpiIsendComplete, NonBlockingCollectiveComplete. Peers and roots are ranks of the call's
 * communicator (the rows hold world ranks): a Comm definition per communicator id, its Group
 * (COMM_GROUP) listing the world ranks of its members in communicator-rank order, as every input
 * shows them, and one COMM_LOCATIONS group mapping each world rank to the location of its thread
 * that made MPI calls. A message on a communicator whose members the inputs do not all show (one
 * rank's database and a sub-communicator) is written on MPI_COMM_WORLD with world ranks (counted,
 * said on stderr). */


/* OTF2's collective operation of an MPI collective ("MPI_Allreduce", "MPI_Iallreduce"); -1 none. */
static int ot_coll_op(const char *name, int *nonblocking)
{
    static const struct {
        const char *n;
        int op;
    } ops[] = {
        {"BARRIER", OTF2_COLLECTIVE_OP_BARRIER},
        {"BCAST", OTF2_COLLECTIVE_OP_BCAST},
        {"GATHER", OTF2_COLLECTIVE_OP_GATHER},
        {"GATHERV", OTF2_COLLECTIVE_OP_GATHERV},
        {"SCATTER", OTF2_COLLECTIVE_OP_SCATTER},
        {"SCATTERV", OTF2_COLLECTIVE_OP_SCATTERV},
        {"ALLGATHER", OTF2_COLLECTIVE_OP_ALLGATHER},
        {"ALLGATHERV", OTF2_COLLECTIVE_OP_ALLGATHERV},
        {"ALLTOALL", OTF2_COLLECTIVE_OP_ALLTOALL},
        {"ALLTOALLV", OTF2_COLLECTIVE_OP_ALLTOALLV},
        {"ALLTOALLW", OTF2_COLLECTIVE_OP_ALLTOALLW},
        {"ALLREDUCE", OTF2_COLLECTIVE_OP_ALLREDUCE},
        {"REDUCE", OTF2_COLLECTIVE_OP_REDUCE},
        {"REDUCE_SCATTER", OTF2_COLLECTIVE_OP_REDUCE_SCATTER},
        {"SCAN", OTF2_COLLECTIVE_OP_SCAN},
        {"EXSCAN", OTF2_COLLECTIVE_OP_EXSCAN},
        {"REDUCE_SCATTER_BLOCK", OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK},
    };
    char up[64];
    if (strncmp(name, "MPI_", 4)) return -1;
    size_t n = 0;
    for (const char *p = name + 4; *p && n < sizeof up - 1; p++)
        up[n++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    up[n] = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *u = pass ? up + 1 : up;
        if (pass && up[0] != 'I') break;
        for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
            if (!strcmp(u, ops[i].n)) {
                *nonblocking = pass;
                return ops[i].op;
            }
    }
    return -1;
}

static int ot_comm_index(ot_writer *w, int64_t id, int64_t size)
{
    ot_mpi *m = w->mpi;
    uint64_t ix = 0;
    if (op_u64map_get(&m->comm_ix, (uint64_t)id, &ix)) return (int)ix - 1;
    ot_comm c = {id, size, calloc((size_t)size, sizeof(int32_t)), 0, 0};
    if (!c.members || OT_PUSH(m->comms, c) ||
        op_u64map_put(&m->comm_ix, (uint64_t)id, m->comms.n)) {
        free(c.members);
        w->failed = 1;
        return -1;
    }
    for (int64_t i = 0; i < size; i++) c.members[i] = -1;
    return (int)m->comms.n - 1;
}

/* Pass 1, every input: the communicators' members and the world's size. */
static int ot_scan_cb(const op_mpi_op *o, void *arg)
{
    ot_writer *w = arg;
    ot_mpi *m = w->mpi;
    if (o->rank >= OT_MAX_RANKS || o->comm_size > OT_MAX_RANKS) return 0; /* not a real run's */
    if (o->rank >= 0 && o->rank + 1 > m->world_size) m->world_size = o->rank + 1;
    if (o->comm == OMNIPROF_COMM_ID_WORLD && o->comm_size > m->world_size)
        m->world_size = o->comm_size;
    if (o->comm < 0 || o->comm_size <= 0 ||
        o->comm == OMNIPROF_COMM_ID_WORLD)
        return 0;
    int ix = ot_comm_index(w, o->comm, o->comm_size);
    if (ix < 0) return 1;
    ot_comm *c = &m->comms.v[ix];
    if (o->rank >= 0 && o->comm_rank >= 0 && o->comm_rank < c->size)
        c->members[o->comm_rank] = (int32_t)o->rank;
    return 0;
}

int ot_mpi_scan(ot_writer *w, const op_out_inputs *in, char *err, size_t errlen)
{
    for (size_t i = 0; i < in->n; i++) {
        op_src *src;
        if (op_src_open(in->v[i], &src, err, errlen)) return OP_OUT_EINPUT;
        int rc = 0;
        for (size_t k = 0; k < src->n_sets && !rc; k++)
            rc = op_rd_mpi_ops(src, &src->sets[k], ot_scan_cb, w, err, errlen);
        op_src_close(src);
        if (rc) return rc;
    }
    ot_mpi *m = w->mpi;
    if (!m->comms.n && !m->world_size) return 0;
    /* MPI_COMM_WORLD: the world ranks themselves */
    int ix = ot_comm_index(w, OMNIPROF_COMM_ID_WORLD, m->world_size > 0 ? m->world_size : 1);
    if (ix < 0) return OP_OUT_EFAIL;
    for (int64_t r = 0; r < m->comms.v[ix].size; r++) m->comms.v[ix].members[r] = (int32_t)r;
    for (size_t k = 0; k < m->comms.n; k++) {
        ot_comm *c = &m->comms.v[k];
        c->whole = 1;
        for (int64_t r = 0; r < c->size; r++) c->whole &= c->members[r] >= 0;
        for (int64_t r = 0; c->whole && r < c->size; r++)
            if (op_u64map_put(&m->rank_in, (uint64_t)k << 32 | (uint32_t)c->members[r],
                              (uint64_t)r))
                w->failed = 1;
    }
    return 0;
}

/* Pass 2, per table set: its calls by stack id, its completions by their wait's. */
static int ot_load_cb(const op_mpi_op *o, void *arg)
{
    ot_writer *w = arg;
    ot_mpi *m = w->mpi;
    ot_call c = {o->comm,
                 o->rank,
                 o->dest,
                 o->source,
                 o->root,
                 o->send_tag,
                 o->recv_tag,
                 o->bytes_sent,
                 o->bytes_received,
                 o->request,
                 -1,
                 OT_NONE,
                 0};
    int nb = 0, op = ot_coll_op(o->name, &nb);
    if (o->complete) {
        if (!o->parent) return 0;
        c.what = !strcmp(o->klass, "recv")   ? OT_DONE_RECV
                 : !strcmp(o->klass, "send") ? OT_DONE_SEND
                 : op >= 0                   ? OT_DONE_COLL
                                             : OT_NONE;
    } else if (!strcmp(o->klass, "send")) {
        c.what = !strncmp(o->name, "MPI_I", 5) ? OT_ISEND : OT_SEND;
    } else if (!strcmp(o->klass, "recv")) {
        c.what = !strcmp(o->name, "MPI_Recv")    ? OT_RECV
                 : !strcmp(o->name, "MPI_Irecv") ? OT_IRECV
                                                 : OT_NONE;
    } else if (!strcmp(o->klass, "sendrecv")) {
        c.what = OT_SENDRECV;
    } else if (!strcmp(o->klass, "collective") && op >= 0) {
        c.what = nb ? OT_ICOLL : OT_COLL;
        c.coll = (uint8_t)op;
    }
    if (c.what == OT_NONE || (!o->complete && !o->stack)) return 0;
    if (OT_PUSH(m->calls, c)) return w->failed = 1;
    uint64_t ix = m->calls.n, tail = 0;
    int bad = 0;
    if (!o->complete)
        bad = op_u64map_put(&m->by_stack, (uint64_t)o->stack, ix);
    else if (op_u64map_get(&m->done_tail, (uint64_t)o->parent, &tail)) /* in row order: append */
        m->calls.v[tail - 1].next = (int64_t)ix - 1,
                          bad = op_u64map_put(&m->done_tail, (uint64_t)o->parent, ix);
    else
        bad = op_u64map_put(&m->done_of, (uint64_t)o->parent, ix) |
              op_u64map_put(&m->done_tail, (uint64_t)o->parent, ix);
    if (c.what == OT_ICOLL && o->request)
        bad |= op_u64map_put(&m->by_request, (uint64_t)o->request, ix);
    if (bad) w->failed = 1;
    return 0;
}

int ot_mpi_load(ot_writer *w, op_src *src, op_src_set *set, char *err, size_t errlen)
{
    ot_mpi *m = w->mpi;
    m->calls.n = 0;
    op_u64map_free(&m->by_stack);
    op_u64map_free(&m->done_of);
    op_u64map_free(&m->done_tail);
    op_u64map_free(&m->by_request);
    return op_rd_mpi_ops(src, set, ot_load_cb, w, err, errlen);
}

/* The rank of world rank `world` in communicator `id` and the Comm it is written on: `id`'s own
 * when the inputs show all its members, else MPI_COMM_WORLD (counted). */
static uint32_t ot_peer(ot_writer *w, int64_t id, int64_t world, uint32_t *comm)
{
    ot_mpi *m = w->mpi;
    uint64_t ix = 0, r = 0;
    if (world < 0) {
        uint64_t wx = 0;
        *comm = op_u64map_get(&m->comm_ix, (uint64_t)id, &ix)             ? (uint32_t)ix - 1
                : op_u64map_get(&m->comm_ix, OMNIPROF_COMM_ID_WORLD, &wx) ? (uint32_t)wx - 1
                                                                          : 0;
        return OTF2_UNDEFINED_UINT32;
    }
    if (op_u64map_get(&m->comm_ix, (uint64_t)id, &ix) &&
        op_u64map_get(&m->rank_in, (ix - 1) << 32 | (uint32_t)world, &r)) {
        *comm = (uint32_t)ix - 1;
        return (uint32_t)r;
    }
    m->fallback++;
    op_u64map_get(&m->comm_ix, OMNIPROF_COMM_ID_WORLD, &ix);
    *comm = ix ? (uint32_t)ix - 1 : 0;
    return (uint32_t)world;
}

static uint32_t ot_tag(int64_t tag)
{
    return tag == INT64_MIN ? 0 : (uint32_t)tag;
}

#define OT_EV(call)                                                                                \
    do {                                                                                           \
        if ((call) != OTF2_SUCCESS) w->failed = 1;                                                 \
    } while (0)

/* After the Enter of a region at `depth` whose correlation id is `stack`. */
void ot_mpi_enter(ot_writer *w, int depth, int64_t stack, int64_t t)
{
    ot_mpi *m = w->mpi;
    w->pstack[depth] = stack;
    uint64_t ix = 0;
    if (!stack || !op_u64map_get(&m->by_stack, (uint64_t)stack, &ix)) return;
    const ot_call *c = &m->calls.v[ix - 1];
    w->pend[depth] = (int32_t)(ix - 1);
    if (c->rank >= 0 && !op_u64map_get(&m->rank_loc, (uint64_t)c->rank, &(uint64_t){0}))
        if (op_u64map_put(&m->rank_loc, (uint64_t)c->rank, w->loc + 1)) w->failed = 1;
    uint32_t comm = 0, peer;
    OTF2_TimeStamp ts = (OTF2_TimeStamp)t;
    switch (c->what) {
    case OT_SEND:
    case OT_SENDRECV:
        if (c->dest < 0) break;
        peer = ot_peer(w, c->comm, c->dest, &comm);
        OT_EV(OTF2_EvtWriter_MpiSend(w->ew, NULL, ts, peer, comm, ot_tag(c->send_tag),
                                     (uint64_t)c->bytes_sent));
        break;
    case OT_ISEND:
        peer = ot_peer(w, c->comm, c->dest, &comm);
        OT_EV(OTF2_EvtWriter_MpiIsend(w->ew, NULL, ts, peer, comm, ot_tag(c->send_tag),
                                      (uint64_t)c->bytes_sent, (uint64_t)c->request));
        break;
    case OT_IRECV:
        OT_EV(OTF2_EvtWriter_MpiIrecvRequest(w->ew, NULL, ts, (uint64_t)c->request));
        break;
    case OT_COLL: OT_EV(OTF2_EvtWriter_MpiCollectiveBegin(w->ew, NULL, ts)); break;
    case OT_ICOLL:
        OT_EV(OTF2_EvtWriter_NonBlockingCollectiveRequest(w->ew, NULL, ts, (uint64_t)c->request));
        break;
    default: break;
    }
}

/* A collective's end on its own communicator; a root the inputs cannot place in it (one rank's
 * database, a sub-communicator) is undefined (counted). */
static void ot_collective(ot_writer *w, OTF2_TimeStamp ts, const ot_call *c, int64_t request)
{
    ot_mpi *m = w->mpi;
    uint32_t comm = 0, root = OTF2_UNDEFINED_UINT32;
    uint64_t ix = 0, r = 0;
    if (op_u64map_get(&m->comm_ix, (uint64_t)c->comm, &ix)) {
        comm = (uint32_t)ix - 1;
        if (c->root >= 0 && op_u64map_get(&m->rank_in, (ix - 1) << 32 | (uint32_t)c->root, &r))
            root = (uint32_t)r;
        else if (c->root >= 0)
            m->fallback++;
    } else {
        root = ot_peer(w, c->comm, c->root, &comm);
    }
    if (request < 0)
        OT_EV(OTF2_EvtWriter_MpiCollectiveEnd(w->ew, NULL, ts, c->coll, comm, root,
                                              (uint64_t)c->bytes_sent,
                                              (uint64_t)c->bytes_received));
    else
        OT_EV(OTF2_EvtWriter_NonBlockingCollectiveComplete(
            w->ew, NULL, ts, c->coll, comm, root, (uint64_t)c->bytes_sent,
            (uint64_t)c->bytes_received, (uint64_t)request));
}

/* Before the Leave of the region at `depth`: its completions, then its call's end. */
void ot_mpi_leave(ot_writer *w, int depth)
{
    ot_mpi *m = w->mpi;
    OTF2_TimeStamp ts = (OTF2_TimeStamp)w->end[depth];
    uint64_t head = 0;
    if (w->pstack[depth] && op_u64map_get(&m->done_of, (uint64_t)w->pstack[depth], &head) && head) {
        for (int64_t i = (int64_t)head - 1; i >= 0; i = m->calls.v[i].next) {
            const ot_call *c = &m->calls.v[i];
            uint32_t comm = 0, peer;
            uint64_t px = 0;
            switch (c->what) {
            case OT_DONE_SEND:
                OT_EV(OTF2_EvtWriter_MpiIsendComplete(w->ew, NULL, ts, (uint64_t)c->request));
                break;
            case OT_DONE_RECV:
                peer = ot_peer(w, c->comm, c->source, &comm);
                OT_EV(OTF2_EvtWriter_MpiIrecv(w->ew, NULL, ts, peer, comm, ot_tag(c->recv_tag),
                                              (uint64_t)c->bytes_received, (uint64_t)c->request));
                break;
            case OT_DONE_COLL:
                if (op_u64map_get(&m->by_request, (uint64_t)c->request, &px))
                    ot_collective(w, ts, &m->calls.v[px - 1], c->request);
                break;
            default: break;
            }
        }
        op_u64map_put(&m->done_of, (uint64_t)w->pstack[depth], 0);
    }
    if (w->pend[depth] < 0) return;
    const ot_call *c = &m->calls.v[w->pend[depth]];
    w->pend[depth] = -1;
    uint32_t comm = 0, peer;
    switch (c->what) {
    case OT_RECV:
    case OT_SENDRECV:
        if (c->source < 0) break;
        peer = ot_peer(w, c->comm, c->source, &comm);
        OT_EV(OTF2_EvtWriter_MpiRecv(w->ew, NULL, ts, peer, comm, ot_tag(c->recv_tag),
                                     (uint64_t)c->bytes_received));
        break;
    case OT_COLL: ot_collective(w, ts, c, -1); break;
    default: break;
    }
}
#undef OT_EV

/* After every set: a location for each world rank no input holds (so that the COMM_LOCATIONS
 * group has one per rank), and the communicators' names. */
void ot_mpi_finish(ot_writer *w)
{
    ot_mpi *m = w->mpi;
    if (!m->comms.n) return;
    for (int64_t r = 0; r < m->world_size; r++) {
        uint64_t loc = 0;
        if (op_u64map_get(&m->rank_loc, (uint64_t)r, &loc)) continue;
        char name[96];
        snprintf(name, sizeof name, "Rank %lld (not in the inputs)", (long long)r);
        ot_group g = {ot_cstring(w, name), 0};
        if (OT_PUSH(w->groups, g)) w->failed = 1;
        ot_location_begin(w, g.name, OTF2_LOCATION_TYPE_CPU_THREAD, w->groups.n - 1);
        ot_location_end(w);
        if (op_u64map_put(&m->rank_loc, (uint64_t)r, w->loc + 1)) w->failed = 1;
    }
    m->locations_name = ot_cstring(w, "MPI ranks");
    for (size_t k = 0; k < m->comms.n; k++) {
        ot_comm *c = &m->comms.v[k];
        char name[128];
        if (c->id == OMNIPROF_COMM_ID_WORLD)
            snprintf(name, sizeof name, "MPI_COMM_WORLD");
        else if (c->id == OMNIPROF_COMM_ID_SELF)
            snprintf(name, sizeof name, "MPI_COMM_SELF");
        else
            snprintf(name, sizeof name, "Communicator %llx (%lld ranks%s)",
                     (unsigned long long)c->id, (long long)c->size,
                     c->whole ? "" : ", not all in the inputs");
        c->name = ot_cstring(w, name);
    }
}

/* The COMM_LOCATIONS group (ref 0), a COMM_GROUP (ref 1 + k) and a Comm (ref k) per communicator.
 */
int ot_mpi_defs(ot_writer *w, OTF2_GlobalDefWriter *g)
{
    ot_mpi *m = w->mpi;
    if (!m->comms.n) return 0;
    int bad = 0;
    size_t n = (size_t)(m->world_size > 0 ? m->world_size : 1);
    uint64_t *v = calloc(n, sizeof *v);
    if (!v) return -1;
    for (size_t r = 0; r < n; r++) {
        uint64_t loc = 0;
        op_u64map_get(&m->rank_loc, r, &loc);
        v[r] = loc ? loc - 1 : 0;
    }
    bad |= OTF2_GlobalDefWriter_WriteGroup(g, 0, m->locations_name, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                           OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                           (uint32_t)m->world_size, v) != OTF2_SUCCESS;
    free(v);
    for (size_t k = 0; k < m->comms.n && !bad; k++) {
        ot_comm *c = &m->comms.v[k];
        uint64_t *mv = calloc((size_t)c->size, sizeof *mv);
        if (!mv) return -1;
        uint32_t nm = 0;
        for (int64_t r = 0; r < c->size; r++)
            if (c->members[r] >= 0) mv[nm++] = (uint64_t)c->members[r];
        bad |= OTF2_GlobalDefWriter_WriteGroup(g, (OTF2_GroupRef)(1 + k), c->name,
                                               OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                               OTF2_GROUP_FLAG_NONE, nm, mv) != OTF2_SUCCESS;
        bad |= OTF2_GlobalDefWriter_WriteComm(g, (OTF2_CommRef)k, c->name, (OTF2_GroupRef)(1 + k),
                                              OTF2_UNDEFINED_COMM,
                                              OTF2_COMM_FLAG_NONE) != OTF2_SUCCESS;
        free(mv);
    }
    return bad ? -1 : 0;
}

void ot_mpi_free(struct ot_mpi *m)
{
    for (size_t k = 0; k < m->comms.n; k++) free(m->comms.v[k].members);
    free(m->comms.v);
    free(m->calls.v);
    op_u64map_free(&m->comm_ix);
    op_u64map_free(&m->rank_in);
    op_u64map_free(&m->rank_loc);
    op_u64map_free(&m->by_stack);
    op_u64map_free(&m->done_of);
    op_u64map_free(&m->done_tail);
    op_u64map_free(&m->by_request);
}

#endif /* OMNIPROF_HAVE_OTF2 */
