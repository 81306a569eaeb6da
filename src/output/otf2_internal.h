/* otf2_internal.h — what otf2.c (the archive, definitions, regions and GPU work) and
 * otf2_mpi.c (MPI communication as OTF2 events) share. Only with libotf2. */
#ifndef OMNIPROF_OUTPUT_OTF2_INTERNAL_H
#define OMNIPROF_OUTPUT_OTF2_INTERNAL_H
#ifdef OMNIPROF_HAVE_OTF2

#include <otf2/otf2.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strtab.h"
#include "common/u64map.h"
#include "output/sink.h"

#define OT_MAX_RANKS (1 << 20) /* larger ranks or communicators in an input are ignored */
#define OT_MAX_DEPTH 1024 /* regions open at once on one location (deeper ones are cut) */

typedef struct ot_region { uint32_t name; uint8_t paradigm, role; } ot_region;
typedef struct ot_location { uint32_t name; uint8_t type; uint64_t group, events; } ot_location;
typedef struct ot_group { uint32_t name; uint64_t node; } ot_group;
typedef struct ot_metric { uint32_t name, unit; } ot_metric;

/* A growing array of T (its memory grows with distinct names, threads and streams only). */
#define OT_VEC(T) struct { T *v; size_t n, cap; }
#define OT_PUSH(vec, item)                                                                               \
    ((vec).n < (vec).cap || ot_grow((void **)&(vec).v, &(vec).cap, sizeof *(vec).v) == 0                  \
         ? ((vec).v[(vec).n++] = (item), 0)                                                              \
         : -1)

int ot_grow(void **v, size_t *cap, size_t item);

typedef struct ot_writer {
    OTF2_Archive *ar;
    op_strtab strings;  /* id = OTF2 string ref */
    op_strtab rkeys;    /* "<paradigm> <role> <name>" -> region ref */
    op_strtab mkeys;    /* counter/metric name -> metric ref */
    op_strtab hosts;    /* host name -> system tree node ref - 1 (0 is the root) */
    OT_VEC(ot_region) regions;
    OT_VEC(ot_location) locations;
    OT_VEC(ot_group) groups;
    OT_VEC(ot_metric) metrics;
    uint64_t t0, t1;
    /* the location being written */
    OTF2_EvtWriter *ew;
    uint64_t loc;
    int64_t end[OT_MAX_DEPTH];
    uint32_t reg[OT_MAX_DEPTH];
    int depth;
    uint64_t cut; /* regions cut at their enclosing region's end */
    int failed;
    /* MPI (ot_mpi_*): the open regions' calls, the communicators and the ranks' locations */
    int32_t pend[OT_MAX_DEPTH]; /* the MPI call of the region at each depth (-1 none) */
    int64_t pstack[OT_MAX_DEPTH];
    struct ot_mpi *mpi;
} ot_writer;

/* MPI communication (otf2_mpi.c) */
enum {
    OT_NONE,
    OT_SEND,
    OT_ISEND,
    OT_RECV,
    OT_IRECV,
    OT_SENDRECV,
    OT_COLL,
    OT_ICOLL,
    OT_DONE_SEND,
    OT_DONE_RECV,
    OT_DONE_COLL
};

typedef struct ot_call {
    int64_t comm, rank, dest, source, root, send_tag, recv_tag, bytes_sent, bytes_received, request;
    int64_t next; /* completions: the next one of the same wait or test (-1 none) */
    uint8_t what, coll;
} ot_call;

typedef struct ot_comm {
    int64_t id, size;
    int32_t *members; /* comm rank -> world rank (-1 unknown) */
    int whole;        /* every member is known */
    uint32_t name;
} ot_comm;

typedef struct ot_mpi {
    OT_VEC(ot_comm) comms;
    op_u64map comm_ix;  /* comm id -> index + 1 */
    op_u64map rank_in;  /* (comm index << 32 | world rank) -> comm rank, whole comms only */
    op_u64map rank_loc; /* world rank -> location ref + 1 */
    int64_t world_size;
    uint64_t fallback;
    uint32_t locations_name;
    /* the table set being written */
    OT_VEC(ot_call) calls;
    op_u64map by_stack;   /* stack id -> call index + 1 */
    op_u64map done_of;    /* wait's stack id -> its first completion's index + 1 */
    op_u64map done_tail;  /* ... and its last one's */
    op_u64map by_request; /* request id -> the nonblocking collective's index + 1 */
} ot_mpi;

int ot_mpi_scan(ot_writer *w, const op_out_inputs *in, char *err, size_t errlen);
int ot_mpi_load(ot_writer *w, op_src *src, op_src_set *set, char *err, size_t errlen);
void ot_mpi_enter(ot_writer *w, int depth, int64_t stack, int64_t t);
void ot_mpi_leave(ot_writer *w, int depth);
void ot_mpi_finish(ot_writer *w);
int ot_mpi_defs(ot_writer *w, OTF2_GlobalDefWriter *g);
void ot_mpi_free(struct ot_mpi *m);
uint32_t ot_cstring(ot_writer *w, const char *s);
void ot_location_end(ot_writer *w);
void ot_location_begin(ot_writer *w, uint32_t name, uint8_t type, uint64_t group);

#endif /* OMNIPROF_HAVE_OTF2 */
#endif /* OMNIPROF_OUTPUT_OTF2_INTERNAL_H */
