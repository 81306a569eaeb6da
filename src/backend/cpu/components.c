/* components.c — measurement components (rocprof-sys/timemory's component model, in C) and
 * the per-region call-tree profile written at the end of the run.
 *
 * A component is a struct of function pointers over one measurement:
 *   record()  the current reading (cumulative counters, clocks, or a level such as peak RSS);
 *   start()   remember the reading at region entry;       (record is used by both)
 *   stop()    the region's value: reading - start, or the level at stop for `is_level` ones;
 *   sample()  the instantaneous reading bundled with a sample.
 * Built in: wall_clock (ns, CLOCK_MONOTONIC), thread_cpu_clock (ns, CLOCK_THREAD_CPUTIME_ID),
 * peak_rss (bytes, getrusage RUSAGE_SELF, a level), page_faults and context_switches (counts,
 * getrusage RUSAGE_THREAD), and `perf` (the thread's first perf_event counter of
 * OMNIPROF_SAMPLING_PERF_EVENTS). OMNIPROF_COMPONENTS picks the bundle; `omniprof avail
 * --components` lists them (cmd_avail_cpu.c).
 *
 * Regions. Each user-API range (omniprof_range_push/pop of libomniprof-user, interposed here:
 * the real functions are called and their values returned) and each wrapped call (the lock,
 * barrier and join wrappers of wrappers.c) is a node of its thread's call tree, keyed by
 * (parent, name). Per node and component: count, sum, min, max, sum of squares (for mean and
 * stddev) and self (value minus its children's values). Trees are per thread (no lock on the
 * hot path); a thread's tree joins the global list when the thread ends, and at the final flush
 * every node becomes REGION_PROFILE records (one per component) in the run's database, from
 * which `omniprof convert -f wall_clock` writes wall_clock.txt and .json (labels prefixed
 * `|NN>>> ` with the thread's creation index, like rocprof-sys's wall_clock.txt).
 * Memory: one node per distinct (thread, path); depth is capped at 64 (deeper pushes are
 * counted in the depth-64 node's parent-less overflow and not profiled). */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu_catalog.h"
#include "backend/cpu/cpu_internal.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"
#include "sdk/backend.h"

/* ---- components ------------------------------------------------------------------------- */

typedef struct op_cpu_component {
    const char *name;
    const char *units;
    const char *description;
    bool is_level;
    uint64_t (*record)(void);
    void (*start)(const struct op_cpu_component *c, uint64_t *state);
    uint64_t (*stop)(const struct op_cpu_component *c, const uint64_t *state);
    uint64_t (*sample)(const struct op_cpu_component *c);
} op_cpu_component;

static uint64_t rec_wall(void) { return op_now_ns(); }
static uint64_t rec_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t rec_peak(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss * 1024u : 0;
}
static uint64_t rec_faults(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? (uint64_t)(ru.ru_minflt + ru.ru_majflt) : 0;
}
static uint64_t rec_ctxsw(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? (uint64_t)(ru.ru_nvcsw + ru.ru_nivcsw) : 0;
}
static uint64_t rec_perf(void)
{
    op_cpu_thread *t = op_cpu_tls_thread;
    uint64_t v[OMNIPROF_CPU_SAMPLE_MAX_EVENTS];
    if (!t || t->perf_fd < 0 || op_cpu_perf_read(t->perf_fd, t->perf_n, v) == 0) return 0;
    return v[0];
}

static void generic_start(const op_cpu_component *c, uint64_t *state) { *state = c->record(); }
static uint64_t generic_stop(const op_cpu_component *c, const uint64_t *state)
{
    uint64_t now = c->record();
    if (c->is_level) return now;
    return now >= *state ? now - *state : 0;
}
static uint64_t generic_sample(const op_cpu_component *c) { return c->record(); }

#define COMP(n, u, d, lvl, r) {n, u, d, lvl, r, generic_start, generic_stop, generic_sample}
static const op_cpu_component g_components[] = {
    COMP("wall_clock", "ns", "wall-clock time (CLOCK_MONOTONIC)", false, rec_wall),
    COMP("thread_cpu_clock", "ns", "CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID)", false, rec_cpu),
    COMP("peak_rss", "bytes", "peak resident set size of the process (getrusage), value at region end", true, rec_peak),
    COMP("page_faults", "count", "minor + major page faults of the thread (getrusage RUSAGE_THREAD)", false, rec_faults),
    COMP("context_switches", "count", "voluntary + involuntary context switches of the thread", false, rec_ctxsw),
    COMP("perf", "count", "first perf_event counter of OMNIPROF_SAMPLING_PERF_EVENTS, for the thread", false, rec_perf),
};
#define N_COMP ((int)(sizeof g_components / sizeof g_components[0]))
_Static_assert(sizeof g_components / sizeof g_components[0] == OP_CPU_CATALOG_N_COMPONENTS,
               "components.c and cpu_catalog.h list the same components");

/* Exposed to cmd_avail_cpu.c through these accessors. */
int op_cpu_component_count(void) { return N_COMP; }
const char *op_cpu_component_name(int i) { return i >= 0 && i < N_COMP ? g_components[i].name : NULL; }
const char *op_cpu_component_units(int i) { return i >= 0 && i < N_COMP ? g_components[i].units : NULL; }
const char *op_cpu_component_description(int i) { return i >= 0 && i < N_COMP ? g_components[i].description : NULL; }

static int g_active[N_COMP > 0 ? 6 : 1];
static int g_n_active;

void op_cpu_components_setup(void)
{
    g_n_active = 0;
    for (int i = 0; i < N_COMP; i++)
        if (op_setting_list_has(OP_SET_COMPONENTS, g_components[i].name)) g_active[g_n_active++] = i;
}

/* ---- region trees ------------------------------------------------------------------------- */

#define MAX_DEPTH 64

typedef struct stat_acc {
    uint64_t count;
    double sum, sqr, min, max, self;
} stat_acc;

typedef struct region_node {
    const char *name; /* op_strdup'd */
    struct region_node *parent, *child, *sibling;
    int depth;
    stat_acc stats[6];
} region_node;

typedef struct frame {
    region_node *node;
    uint64_t start[6];
    double child_value[6];
} frame;

typedef struct op_cpu_region_stack {
    struct op_cpu_region_stack *next_done; /* finished trees, under g_done_lock */
    uint64_t thread_index;
    pid_t tid;
    region_node root;
    int depth;
    int overflow;
    frame frames[MAX_DEPTH];
} op_cpu_region_stack;

static pthread_mutex_t g_done_lock = PTHREAD_MUTEX_INITIALIZER;
static op_cpu_region_stack *g_done;

static op_cpu_region_stack *my_stack(void)
{
    op_cpu_thread *t = op_cpu_tls_thread;
    if (!t) return NULL;
    if (!t->regions) {
        t->regions = op_calloc(1, sizeof *t->regions);
        if (t->regions) {
            t->regions->thread_index = t->sequent_value;
            t->regions->tid = t->tid;
        }
    }
    return t->regions;
}

void op_cpu_region_push(const char *name)
{
    if (!g_n_active || !atomic_load(&g_op_cpu_started) || atomic_load(&g_op_cpu_stopping)) return;
    op_cpu_region_stack *s = my_stack();
    if (!s) return;
    if (s->depth >= MAX_DEPTH) {
        s->overflow++;
        return;
    }
    region_node *parent = s->depth ? s->frames[s->depth - 1].node : &s->root;
    region_node *n = parent->child;
    const char *key = name ? name : "(null)";
    while (n && strcmp(n->name, key) != 0) n = n->sibling;
    if (!n) {
        n = op_calloc(1, sizeof *n);
        if (!n) return;
        n->name = op_strdup(key);
        n->parent = parent;
        n->depth = s->depth;
        n->sibling = parent->child;
        parent->child = n;
        for (int i = 0; i < 6; i++) n->stats[i].min = INFINITY;
    }
    frame *f = &s->frames[s->depth++];
    f->node = n;
    for (int i = 0; i < g_n_active; i++) {
        const op_cpu_component *c = &g_components[g_active[i]];
        c->start(c, &f->start[i]);
        f->child_value[i] = 0;
    }
}

void op_cpu_region_pop(void)
{
    op_cpu_thread *t = op_cpu_tls_thread;
    if (!t || !t->regions) return;
    op_cpu_region_stack *s = t->regions;
    if (s->overflow) {
        s->overflow--;
        return;
    }
    if (!s->depth) return;
    frame *f = &s->frames[--s->depth];
    for (int i = 0; i < g_n_active; i++) {
        const op_cpu_component *c = &g_components[g_active[i]];
        double v = (double)c->stop(c, &f->start[i]);
        stat_acc *a = &f->node->stats[i];
        a->count++;
        a->sum += v;
        a->sqr += v * v;
        if (v < a->min) a->min = v;
        if (v > a->max) a->max = v;
        a->self += c->is_level ? v : (v > f->child_value[i] ? v - f->child_value[i] : 0);
        if (s->depth) s->frames[s->depth - 1].child_value[i] += v;
    }
}

void op_cpu_region_thread_exit(op_cpu_thread *t)
{
    op_cpu_region_stack *s = t->regions;
    if (!s) return;
    t->regions = NULL;
    if (!s->root.child) {
        op_free(s);
        return;
    }
    pthread_mutex_lock(&g_done_lock);
    s->next_done = g_done;
    g_done = s;
    pthread_mutex_unlock(&g_done_lock);
}

/* ---- user-API ranges: interpose libomniprof-user's push/pop --------------------------- */

OMNIPROF_API int omniprof_range_push(const char *message)
{
    typedef int (*fn_t)(const char *);
    static fn_t real;
    static int looked;
    if (!looked) {
        real = (fn_t)dlsym(RTLD_NEXT, "omniprof_range_push");
        looked = 1;
    }
    int rc = real ? real(message) : -1;
    if (message && op_cpu_tls_guard == 0) {
        op_cpu_tls_guard++;
        op_cpu_region_push(message);
        op_cpu_tls_guard--;
    }
    return rc;
}

OMNIPROF_API int omniprof_range_pop(void)
{
    typedef int (*fn_t)(void);
    static fn_t real;
    static int looked;
    if (!looked) {
        real = (fn_t)dlsym(RTLD_NEXT, "omniprof_range_pop");
        looked = 1;
    }
    if (op_cpu_tls_guard == 0) {
        op_cpu_tls_guard++;
        op_cpu_region_pop();
        op_cpu_tls_guard--;
    }
    return real ? real() : -1;
}

/* ---- output ------------------------------------------------------------------------------- */

static void collect_live(op_cpu_thread *t, void *data)
{
    (void)data;
    op_cpu_region_stack *s = t->regions;
    if (!s || !s->root.child) return;
    /* still running (main thread at exit): write what was closed; the thread keeps its tree */
    pthread_mutex_lock(&g_done_lock);
    s->next_done = g_done;
    g_done = s;
    pthread_mutex_unlock(&g_done_lock);
    t->regions = NULL;
}

/* One REGION_PROFILE record per (node, active component), depth first, parents before
 * children; node ids count up from 1 in the process. */
static void emit_nodes(const region_node *n, const op_cpu_region_stack *s, uint64_t parent_id, uint64_t *next_id)
{
    for (const region_node *c = n->child; c; c = c->sibling) {
        uint64_t id = (*next_id)++;
        for (int i = 0; i < g_n_active; i++) {
            const op_cpu_component *comp = &g_components[g_active[i]];
            const stat_acc *a = &c->stats[i];
            omniprof_region_profile_record_t r;
            OP_SDK_RECORD_INIT(r, OMNIPROF_BUFFER_TRACING_REGION_PROFILE, OMNIPROF_REGION_PROFILE_NODE);
            r.thread_id = (omniprof_thread_id_t)s->tid;
            r.thread_index = s->thread_index;
            r.node_id = id;
            r.parent_id = parent_id;
            r.depth = c->depth;
            r.label = c->name;
            r.component = comp->name;
            r.units = comp->units;
            r.count = a->count;
            r.sum = a->sum;
            r.sum_squares = a->sqr;
            r.min = a->count ? a->min : 0;
            r.max = a->max;
            r.self = a->self;
            op_sdk_emit(OMNIPROF_BUFFER_TRACING_REGION_PROFILE, OMNIPROF_REGION_PROFILE_NODE, &r, NULL);
        }
        emit_nodes(c, s, id, next_id);
    }
}

/* The region profile becomes records in the run's database (issue 10 item 7): the backend
 * writes no file; `omniprof convert -f wall_clock` writes wall_clock.txt/.json from them.
 * Called once, from the final flush (while the buffers still deliver to the tool). */
void op_cpu_components_emit_profile(void)
{
    if (!g_n_active || !op_setting_bool(OP_SET_REGION_PROFILE) ||
        !op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_REGION_PROFILE, OMNIPROF_REGION_PROFILE_NODE))
        return;
    op_cpu_threads_foreach(collect_live, NULL);
    pthread_mutex_lock(&g_done_lock);
    op_cpu_region_stack *list = g_done;
    g_done = NULL;
    pthread_mutex_unlock(&g_done_lock);
    uint64_t next_id = 1;
    for (op_cpu_region_stack *s = list; s; s = s->next_done) emit_nodes(&s->root, s, 0, &next_id);
}
