/* mpi_comm.c — communicators, datatypes, reduction ops and outstanding requests, as the records
 * name them.
 *
 * Communicator ids. A record names its communicator by an id that every member computes alike,
 * so that records of different processes can be matched after a merge: MPI_COMM_WORLD is 1,
 * MPI_COMM_SELF 2; any other communicator hashes the world ranks of its members, in order,
 * together with how it was made: a communicator made through one of our wrappers carries
 * (parent id, how many communicators this process had made from the parent before) — MPI
 * requires the members of a parent to create communicators from it in the same order, so every
 * member computes the same pair; one we did not see being made (a library's PMPI call) hashes
 * its members alone. Ranks are translated to world ranks once per communicator (its group
 * against the world's group; the remote group of an inter-communicator) and kept until
 * MPI_Comm_free. Handles are reused by MPI after a free, so a freed handle's entry goes.
 *
 * Requests. A nonblocking call's request handle maps to what its completion must report (the
 * posting order and communicator of a receive); a wait or test that completes it takes it out.
 * The table grows (open addressing, backward-shift deletion) and is bounded: past
 * OP_MPI_MAX_REQUESTS outstanding requests new ones are not remembered (their completions are
 * not reported; one warning).
 *
 * Everything here is behind one mutex: MPI calls of several threads (MPI_THREAD_MULTIPLE) are
 * serialized only for the few instructions of a lookup. */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/mpi/mpi_internal.h"
#include "common/log.h"
#include "common/once.h"
#include "common/u64map.h"
#include "omniprof/comm.h"
#include "sdk/backend.h"

#define OP_MPI_MAX_REQUESTS (1u << 22)
#define WORLD_ID OMNIPROF_COMM_ID_WORLD
#define SELF_ID OMNIPROF_COMM_ID_SELF

typedef struct comm_entry {
    op_mpi_handle handle;
    uint64_t id;
    int rank, size;
    int n_world;           /* entries of world[] (the remote group of an inter-communicator) */
    int *world;            /* rank -> world rank; NULL for MPI_COMM_WORLD */
    uint64_t children;     /* communicators made from it through our wrappers */
} comm_entry;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static comm_entry **g_comms;
static size_t g_n_comms, g_cap_comms;
static int g_world_rank = -1, g_world_size = 0;

typedef int (*comm_int_fn)(void *, int *);
typedef int (*comm_group_fn)(void *, void **);
typedef int (*group_size_fn)(void *, int *);
typedef int (*group_free_fn)(void **);
typedef int (*translate_fn)(void *, int, const int *, void *, int *);

#define PMPI_OF(var, type, name) \
    static type var;             \
    if (!var) var = (type)op_mpi_pmpi(name)

static void world_init_locked(void)
{
    if (g_world_size > 0) return;
    PMPI_OF(comm_rank, comm_int_fn, "MPI_Comm_rank");
    PMPI_OF(comm_size, comm_int_fn, "MPI_Comm_size");
    int r = -1, n = 0;
    if (comm_rank && comm_size && comm_rank((void *)g_op_mpi_abi.comm_world, &r) == 0 &&
        comm_size((void *)g_op_mpi_abi.comm_world, &n) == 0 && n > 0) {
        g_world_rank = r;
        g_world_size = n;
    }
}

int op_mpi_world_rank_self(void)
{
    pthread_mutex_lock(&g_mu);
    world_init_locked();
    int r = g_world_rank;
    pthread_mutex_unlock(&g_mu);
    return r;
}

int op_mpi_world_size(void)
{
    pthread_mutex_lock(&g_mu);
    world_init_locked();
    int n = g_world_size;
    pthread_mutex_unlock(&g_mu);
    return n;
}

/* Group `g` as world ranks (malloc'd, *n entries). */
static int *translate_group(void *g, int *n)
{
    PMPI_OF(comm_group, comm_group_fn, "MPI_Comm_group");
    PMPI_OF(group_size, group_size_fn, "MPI_Group_size");
    PMPI_OF(group_free, group_free_fn, "MPI_Group_free");
    PMPI_OF(translate, translate_fn, "MPI_Group_translate_ranks");
    *n = 0;
    void *wg = NULL;
    int size = 0;
    if (!comm_group || !group_size || !group_free || !translate || group_size(g, &size) != 0 || size <= 0 ||
        comm_group((void *)g_op_mpi_abi.comm_world, &wg) != 0)
        return NULL;
    int *in = malloc(sizeof(int) * (size_t)size), *out = malloc(sizeof(int) * (size_t)size);
    if (in && out) {
        for (int i = 0; i < size; i++) in[i] = i;
        if (translate(g, size, in, wg, out) == 0) *n = size;
    }
    group_free(&wg);
    free(in);
    if (*n == 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* A new entry for `comm` (lock held). tag: (parent id, child number) or 0. */
static comm_entry *make_entry_locked(op_mpi_handle comm, uint64_t parent, uint64_t child)
{
    comm_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->handle = comm;
    PMPI_OF(comm_rank, comm_int_fn, "MPI_Comm_rank");
    PMPI_OF(comm_size, comm_int_fn, "MPI_Comm_size");
    PMPI_OF(test_inter, comm_int_fn, "MPI_Comm_test_inter");
    PMPI_OF(comm_group, comm_group_fn, "MPI_Comm_group");
    PMPI_OF(remote_group, comm_group_fn, "MPI_Comm_remote_group");
    PMPI_OF(group_free, group_free_fn, "MPI_Group_free");
    e->rank = -1;
    if (comm_rank) comm_rank((void *)comm, &e->rank);
    if (comm_size) comm_size((void *)comm, &e->size);
    if (comm == g_op_mpi_abi.comm_world) {
        e->id = WORLD_ID;
    } else {
        int inter = 0;
        if (test_inter) test_inter((void *)comm, &inter);
        void *g = NULL;
        comm_group_fn get = inter && remote_group ? remote_group : comm_group;
        if (get && get((void *)comm, &g) == 0) {
            e->world = translate_group(g, &e->n_world);
            if (group_free) group_free(&g);
        }
        uint64_t h = op_hash64x3(parent, child, (uint64_t)e->n_world);
        if (e->world) h = op_hash_bytes_seeded(e->world, sizeof(int) * (size_t)e->n_world, h);
        e->id = comm == g_op_mpi_abi.comm_self ? SELF_ID : op_comm_id(h);
    }
    if (g_n_comms == g_cap_comms) {
        size_t cap = g_cap_comms ? 2 * g_cap_comms : 16;
        comm_entry **v = realloc(g_comms, cap * sizeof *v);
        if (!v) {
            free(e->world);
            free(e);
            return NULL;
        }
        g_comms = v;
        g_cap_comms = cap;
    }
    g_comms[g_n_comms++] = e;
    return e;
}

static comm_entry *find_locked(op_mpi_handle comm)
{
    for (size_t i = 0; i < g_n_comms; i++)
        if (g_comms[i]->handle == comm) return g_comms[i];
    return NULL;
}

static comm_entry *entry_locked(op_mpi_handle comm)
{
    comm_entry *e = find_locked(comm);
    return e ? e : make_entry_locked(comm, 0, 0);
}

op_mpi_comm op_mpi_comm_info(op_mpi_handle comm)
{
    op_mpi_comm c = {0, -1, 0};
    if (!comm || comm == g_op_mpi_abi.comm_null) return c;
    pthread_mutex_lock(&g_mu);
    world_init_locked();
    comm_entry *e = entry_locked(comm);
    if (e) c = (op_mpi_comm){e->id, e->rank, e->size};
    pthread_mutex_unlock(&g_mu);
    return c;
}

int32_t op_mpi_world_rank(op_mpi_handle comm, int r)
{
    const op_mpi_abi *a = &g_op_mpi_abi;
    if (r == a->any_source) return OMNIPROF_COMM_RANK_ANY;
    if (r == a->proc_null) return OMNIPROF_COMM_RANK_PROC_NULL;
    if (r == a->root) return OMNIPROF_COMM_RANK_ROOT;
    if (r < 0) return OMNIPROF_COMM_RANK_NONE;
    if (comm == a->comm_world) return r;
    pthread_mutex_lock(&g_mu);
    comm_entry *e = entry_locked(comm);
    int32_t w = OMNIPROF_COMM_RANK_NONE;
    if (e && e->world && r < e->n_world) w = e->world[r];
    else if (e && comm == a->comm_self && r == 0) w = g_world_rank;
    pthread_mutex_unlock(&g_mu);
    return w;
}

uint64_t op_mpi_comm_created(op_mpi_handle parent, op_mpi_handle newcomm)
{
    if (!newcomm || newcomm == g_op_mpi_abi.comm_null) return 0;
    pthread_mutex_lock(&g_mu);
    world_init_locked();
    comm_entry *p = entry_locked(parent);
    uint64_t pid = p ? p->id : 0, child = p ? ++p->children : 0;
    comm_entry *old = find_locked(newcomm); /* a stale entry of a freed handle we missed */
    if (old) old->handle = 0;
    comm_entry *e = make_entry_locked(newcomm, pid, child);
    uint64_t id = e ? e->id : 0;
    pthread_mutex_unlock(&g_mu);
    return id;
}

void op_mpi_comm_freed(op_mpi_handle comm)
{
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_n_comms; i++)
        if (g_comms[i]->handle == comm && comm != g_op_mpi_abi.comm_world && comm != g_op_mpi_abi.comm_self) {
            free(g_comms[i]->world);
            free(g_comms[i]);
            g_comms[i] = g_comms[--g_n_comms];
            break;
        }
    pthread_mutex_unlock(&g_mu);
}

void op_mpi_win_created(op_mpi_handle comm, op_mpi_handle win)
{
    pthread_mutex_lock(&g_mu);
    world_init_locked();
    comm_entry *c = entry_locked(comm), *old = find_locked(win);
    if (old) old->handle = 0;
    comm_entry *e = c ? calloc(1, sizeof *e) : NULL;
    if (e) {
        *e = *c;
        e->handle = win;
        e->world = NULL;
        if (c->world && (e->world = malloc(sizeof(int) * (size_t)c->n_world)))
            memcpy(e->world, c->world, sizeof(int) * (size_t)c->n_world);
        else e->n_world = 0;
        if (g_n_comms == g_cap_comms) {
            size_t cap = g_cap_comms ? 2 * g_cap_comms : 16;
            comm_entry **v = realloc(g_comms, cap * sizeof *v);
            if (v) g_comms = v, g_cap_comms = cap;
        }
        if (g_n_comms < g_cap_comms) g_comms[g_n_comms++] = e;
        else free(e->world), free(e);
    }
    pthread_mutex_unlock(&g_mu);
}

bool op_mpi_win_info(op_mpi_handle win, op_mpi_comm *out)
{
    pthread_mutex_lock(&g_mu);
    comm_entry *e = win ? find_locked(win) : NULL;
    if (e) *out = (op_mpi_comm){e->id, e->rank, e->size};
    pthread_mutex_unlock(&g_mu);
    return e != NULL;
}

int32_t op_mpi_win_world_rank(op_mpi_handle win, int r)
{
    if (r == INT_MIN) return OMNIPROF_COMM_RANK_NONE;
    if (r == g_op_mpi_abi.proc_null) return OMNIPROF_COMM_RANK_PROC_NULL;
    if (r < 0) return OMNIPROF_COMM_RANK_NONE;
    pthread_mutex_lock(&g_mu);
    comm_entry *e = win ? find_locked(win) : NULL;
    int32_t w = OMNIPROF_COMM_RANK_NONE;
    if (e && e->id == WORLD_ID) w = r;
    else if (e && e->world && r < e->n_world) w = e->world[r];
    pthread_mutex_unlock(&g_mu);
    return w;
}

/* ---- datatypes and ops ------------------------------------------------------------------------ */

#define TYPE_CACHE 256
static struct {
    op_mpi_handle handle;
    const char *name;
} g_types[TYPE_CACHE];

const char *op_mpi_type(op_mpi_handle type, int *size)
{
    typedef int (*type_size_fn)(void *, int *);
    typedef int (*type_name_fn)(void *, char *, int *);
    PMPI_OF(type_size, type_size_fn, "MPI_Type_size");
    PMPI_OF(type_name, type_name_fn, "MPI_Type_get_name");
    *size = 0;
    if (type_size && type_size((void *)type, size) != 0) *size = 0;
    size_t slot = (size_t)(op_hash64(type) % TYPE_CACHE);
    pthread_mutex_lock(&g_mu);
    const char *name = g_types[slot].handle == type ? g_types[slot].name : NULL;
    pthread_mutex_unlock(&g_mu);
    if (name) return name;
    char buf[256] = "";
    int len = 0;
    if (type_name && type_name((void *)type, buf, &len) == 0 && len > 0 && len < (int)sizeof buf) {
        buf[len] = '\0';
        name = op_sdk_intern(buf);
        pthread_mutex_lock(&g_mu); /* only named (predefined) types are cached */
        g_types[slot].handle = type;
        g_types[slot].name = name;
        pthread_mutex_unlock(&g_mu);
        return name;
    }
    return "derived";
}

const char *op_mpi_op_name(op_mpi_handle op)
{
    for (int i = 0; i < 14; i++)
        if (g_op_mpi_abi.ops[i] && g_op_mpi_abi.ops[i] == op) return op_mpi_op_names[i];
    return "user-defined";
}

/* ---- requests --------------------------------------------------------------------------------- */

typedef struct req_slot {
    op_mpi_handle handle; /* 0: empty */
    op_mpi_request r;
} req_slot;

static req_slot *g_reqs;
static size_t g_req_cap, g_req_n;
static uint64_t g_req_next;

static size_t req_home(op_mpi_handle h) { return (size_t)(op_hash64(h) & (g_req_cap - 1)); }

static bool req_grow_locked(void)
{
    size_t cap = g_req_cap ? 2 * g_req_cap : 1024;
    if (cap > 2 * OP_MPI_MAX_REQUESTS) return false;
    req_slot *v = calloc(cap, sizeof *v), *old = g_reqs;
    if (!v) return false;
    size_t old_cap = g_req_cap;
    g_reqs = v;
    g_req_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].handle) {
            size_t j = req_home(old[i].handle);
            while (g_reqs[j].handle) j = (j + 1) & (cap - 1);
            g_reqs[j] = old[i];
        }
    free(old);
    return true;
}

uint64_t op_mpi_request_add(op_mpi_handle handle, const op_mpi_request *r)
{
    if (!handle || handle == g_op_mpi_abi.request_null) return 0;
    uint64_t id = 0;
    pthread_mutex_lock(&g_mu);
    if ((g_req_n + 1) * 2 > g_req_cap && !req_grow_locked()) {
        pthread_mutex_unlock(&g_mu);
        if (op_once("mpi: too many requests")) op_warn("mpi: more than %u outstanding requests; completions of newer ones are not reported", OP_MPI_MAX_REQUESTS);
        return 0;
    }
    size_t j = req_home(handle);
    while (g_reqs[j].handle && g_reqs[j].handle != handle) j = (j + 1) & (g_req_cap - 1);
    if (!g_reqs[j].handle) g_req_n++;
    g_reqs[j].handle = handle;
    g_reqs[j].r = *r;
    g_reqs[j].r.id = id = ++g_req_next;
    pthread_mutex_unlock(&g_mu);
    return id;
}

bool op_mpi_request_take(op_mpi_handle handle, op_mpi_request *out)
{
    if (!handle || handle == g_op_mpi_abi.request_null) return false;
    bool found = false;
    pthread_mutex_lock(&g_mu);
    if (g_req_cap) {
        size_t j = req_home(handle);
        while (g_reqs[j].handle && g_reqs[j].handle != handle) j = (j + 1) & (g_req_cap - 1);
        if (g_reqs[j].handle == handle) {
            found = true;
            *out = g_reqs[j].r;
            /* backward-shift deletion keeps every probe chain unbroken */
            size_t hole = j, k = j;
            for (;;) {
                k = (k + 1) & (g_req_cap - 1);
                if (!g_reqs[k].handle) break;
                size_t home = req_home(g_reqs[k].handle);
                bool movable = hole <= k ? (home <= hole || home > k) : (home <= hole && home > k);
                if (movable) {
                    g_reqs[hole] = g_reqs[k];
                    hole = k;
                }
            }
            g_reqs[hole].handle = 0;
            g_req_n--;
        }
    }
    pthread_mutex_unlock(&g_mu);
    return found;
}

void op_mpi_comm_at_fork_child(void)
{
    pthread_mutex_init(&g_mu, NULL); /* a forked child does not use its parent's MPI */
}
