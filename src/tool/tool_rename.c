/* tool_rename.c — `omniprof run --kernel-rename` (rocprofv3's): each kernel dispatch is named by
 * the user-API or NVTX range (push/pop) open on the thread that launched it.
 *
 * How: the tool takes the MARKER_API callbacks of its context; a range push pushes an external
 * correlation id on the thread's stack (omniprof_push_external_correlation_id) and the pop pops
 * it, so every record made on the thread inside the range — the launch, and the GPU activity
 * the SDK ties to it at launch — carries that id. The id is the range's name's number in a
 * table of names kept here; the database writer asks op_tool_rename_name(id) at ingest and
 * shows the dispatch under that name (its kernel symbol keeps the kernel's own name).
 *
 * Invariants: (1) names are never freed or moved (the writer thread reads them without a
 * lock); (2) at most RENAME_MAX_NAMES distinct names: beyond, a push pushes 0 (no rename),
 * so memory is bounded whatever the program does; (3) ids are 1-based, 0 means none. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "omniprof/omniprof.h"
#include "tool/tool.h"

#define RENAME_MAX_NAMES 65536
#define RENAME_BUCKETS 4096

typedef struct name_entry {
    char *name;
    uint64_t id;
    struct name_entry *next;
} name_entry;

static name_entry *g_buckets[RENAME_BUCKETS];
static const char *_Atomic g_names[RENAME_MAX_NAMES + 1]; /* id -> name; [0] unused */
static uint64_t g_n_names;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static omniprof_context_id_t g_ctx;

static uint64_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The id of `name`, added when new; 0 when the table is full (invariant 2). */
static uint64_t name_id(const char *name)
{
    uint64_t b = hash_text(name) % RENAME_BUCKETS, id = 0;
    pthread_mutex_lock(&g_lock);
    for (name_entry *e = g_buckets[b]; e; e = e->next) {
        if (!strcmp(e->name, name)) {
            id = e->id;
            break;
        }
    }
    if (!id && g_n_names < RENAME_MAX_NAMES) {
        name_entry *e = malloc(sizeof(*e));
        char *copy = strdup(name);
        if (e && copy) {
            e->name = copy;
            e->id = id = ++g_n_names;
            e->next = g_buckets[b];
            g_buckets[b] = e;
            atomic_store_explicit(&g_names[id], copy, memory_order_release);
        } else {
            free(e);
            free(copy);
        }
    }
    pthread_mutex_unlock(&g_lock);
    return id;
}

const char *op_tool_rename_name(uint64_t id)
{
    return id && id <= RENAME_MAX_NAMES ? atomic_load_explicit(&g_names[id], memory_order_acquire) : NULL;
}

static void on_marker(omniprof_callback_tracing_record_t rec, omniprof_user_data_t *user_data, void *arg)
{
    (void)user_data;
    (void)arg;
    const omniprof_buffer_tracing_marker_record_t *m = rec.payload;
    if (rec.operation == OMNIPROF_MARKER_OP_RANGE_PUSH && rec.phase == OMNIPROF_CALLBACK_PHASE_ENTER) {
        omniprof_user_data_t v = {.value = m ? name_id(m->message) : 0};
        omniprof_push_external_correlation_id(g_ctx, rec.thread_id, v);
    } else if (rec.operation == OMNIPROF_MARKER_OP_RANGE_POP && rec.phase == OMNIPROF_CALLBACK_PHASE_EXIT) {
        omniprof_pop_external_correlation_id(g_ctx, rec.thread_id, NULL);
    }
}

int op_tool_rename_setup(omniprof_context_id_t ctx)
{
    g_ctx = ctx;
    static const omniprof_tracing_operation_t ops[] = {OMNIPROF_MARKER_OP_RANGE_PUSH, OMNIPROF_MARKER_OP_RANGE_POP};
    omniprof_status_t st =
        omniprof_configure_callback_tracing_service(ctx, OMNIPROF_CALLBACK_TRACING_MARKER_API, ops, 2, on_marker, NULL);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        op_warn("--kernel-rename: cannot follow the marker ranges (%s); kernels keep their names",
                omniprof_get_status_string(st));
        return -1;
    }
    return 0;
}
