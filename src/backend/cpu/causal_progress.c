/* causal_progress.c — progress points: the counters causal experiments measure.
 *
 * Three ways in, one registry:
 *   - Coz's header (coz.h, Debian coz-profiler): COZ_PROGRESS, COZ_PROGRESS_NAMED(n),
 *     COZ_BEGIN(n)/COZ_END(n) look up `_coz_get_counter(type, name)` with
 *     dlsym(RTLD_DEFAULT) once per call site and then increment the returned
 *     {size_t count; size_t backoff;} themselves with an atomic add. This library is
 *     LD_PRELOADed, so its `_coz_get_counter` is the one they find: programs written for Coz
 *     run unchanged. Outside causal mode it returns NULL, which the call site caches: the
 *     macros then cost one load and a branch, as without any profiler.
 *   - The user API (omniprof_progress, omniprof_progress_begin/end) reaches us through the
 *     SDK's progress hook (op_sdk_set_progress_hook), which the SDK calls from its
 *     implementation of those calls.
 *   - Ranges (omniprof_range_push/start, NVTX pushes and starts): with
 *     OMNIPROF_CAUSAL_RANGE_PROGRESS, each range start counts one visit of a throughput point
 *     named after the range (the rate of starts equals the rate of ends over an experiment).
 *
 * A point is a name and a type (throughput, or latency = a begin and an end counter, Coz's
 * latency point). At most OP_CAUSAL_MAX_POINTS exist (one warning when more are asked for).
 * Registration takes g_lock; counting is a relaxed atomic add on the point's counter, found
 * through a lock-free cache keyed by the caller's name pointer (names are usually literals).
 * Entries are written once and never move (invariant): the experiment thread reads them
 * without the lock up to the published count. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/causal.h"
#include "common/log.h"
#include "common/settings.h"
#include "omniprof/defines.h"
#include "sdk/backend.h"

/* Coz's ABI (coz.h): the counter a call site increments. */
typedef struct coz_counter_t {
    size_t count;
    size_t backoff;
} coz_counter_t;

enum { COZ_THROUGHPUT = 1, COZ_BEGIN = 2, COZ_END = 3, OP_RANGE_START = 4 };

typedef struct point {
    char name[160];
    bool latency;
    coz_counter_t begin; /* throughput: the visits */
    coz_counter_t end;   /* latency only */
} point;

static point g_points[OP_CAUSAL_MAX_POINTS];
static _Atomic uint32_t g_n_points;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_state; /* 0 unknown, 1 on, 2 off */
static bool g_ranges;

#define CACHE_SLOTS 1024
typedef struct cache_entry {
    _Atomic int state; /* 0 free, 1 being written, 2 ready */
    const char *key;
    int type;
    coz_counter_t *counter;
} cache_entry;
static cache_entry g_cache[CACHE_SLOTS];

static bool enabled(void)
{
    int s = atomic_load_explicit(&g_state, memory_order_acquire);
    if (s == 0) { /* before start(): causal runs have OMNIPROF_CAUSAL set from the beginning */
        s = op_setting_bool(OP_SET_CAUSAL) ? 1 : 2;
        g_ranges = op_setting_bool(OP_SET_CAUSAL_RANGE_PROGRESS);
        atomic_store_explicit(&g_state, s, memory_order_release);
    }
    return s == 1;
}

/* The point (name, latency), created if new; NULL when the registry is full. */
static point *point_get(const char *name, bool latency)
{
    uint32_t n = atomic_load_explicit(&g_n_points, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        if (g_points[i].latency == latency && strncmp(g_points[i].name, name, sizeof g_points[i].name - 1) == 0)
            return &g_points[i];
    pthread_mutex_lock(&g_lock);
    point *p = NULL;
    n = atomic_load_explicit(&g_n_points, memory_order_relaxed);
    for (uint32_t i = 0; i < n && !p; i++)
        if (g_points[i].latency == latency && strncmp(g_points[i].name, name, sizeof g_points[i].name - 1) == 0)
            p = &g_points[i];
    if (!p && n < OP_CAUSAL_MAX_POINTS) {
        p = &g_points[n];
        snprintf(p->name, sizeof p->name, "%s", name);
        p->latency = latency;
        atomic_store_explicit(&g_n_points, n + 1, memory_order_release);
    } else if (!p) {
        static int warned;
        if (!warned++)
            op_warn("causal: more than %d progress points; '%s' and later ones are not counted", OP_CAUSAL_MAX_POINTS,
                    name);
    }
    pthread_mutex_unlock(&g_lock);
    return p;
}

static coz_counter_t *counter_for(int type, const char *name)
{
    if (!name) return NULL;
    point *p = point_get(name, type == COZ_BEGIN || type == COZ_END);
    if (!p) return NULL;
    return type == COZ_END ? &p->end : &p->begin;
}

/* Cached by the caller's pointer: a literal name costs a hash and a compare. */
static coz_counter_t *counter_cached(int type, const char *name)
{
    uintptr_t h = ((uintptr_t)name >> 3) * 0x9e3779b97f4a7c15ull + (uintptr_t)type;
    for (int probe = 0; probe < 8; probe++) {
        cache_entry *e = &g_cache[(h + (uintptr_t)probe) % CACHE_SLOTS];
        int s = atomic_load_explicit(&e->state, memory_order_acquire);
        if (s == 2 && e->key == name && e->type == type) return e->counter;
        if (s == 0) {
            coz_counter_t *c = counter_for(type, name);
            int zero = 0;
            if (c && atomic_compare_exchange_strong(&e->state, &zero, 1)) {
                e->key = name;
                e->type = type;
                e->counter = c;
                atomic_store_explicit(&e->state, 2, memory_order_release);
            }
            return c;
        }
    }
    return counter_for(type, name);
}

/* Coz's runtime entry point (coz.h): found by dlsym(RTLD_DEFAULT, "_coz_get_counter"). */
OMNIPROF_API coz_counter_t *_coz_get_counter(int type, const char *name)
{
    if (!enabled() || (type != COZ_THROUGHPUT && type != COZ_BEGIN && type != COZ_END)) return NULL;
    return counter_for(type, name);
}

/* The SDK's progress hook: omniprof_progress*, range starts (user API and NVTX). */
static void progress_hook(int type, const char *name)
{
    if (type == OP_RANGE_START) {
        if (!g_ranges || !name || !*name) return;
        type = COZ_THROUGHPUT;
    }
    coz_counter_t *c = counter_cached(type, name);
    if (c) __atomic_add_fetch(&c->count, 1, __ATOMIC_RELAXED);
}

void op_causal_progress_enable(bool ranges)
{
    g_ranges = ranges;
    atomic_store_explicit(&g_state, 1, memory_order_release);
    op_sdk_set_progress_hook(progress_hook);
}

uint32_t op_causal_progress_snapshot(op_causal_point_snapshot *out, uint32_t max)
{
    uint32_t n = atomic_load_explicit(&g_n_points, memory_order_acquire);
    if (n > max) n = max;
    for (uint32_t i = 0; i < n; i++) {
        out[i].name = g_points[i].name;
        out[i].latency = g_points[i].latency;
        out[i].count = __atomic_load_n(&g_points[i].begin.count, __ATOMIC_RELAXED);
        out[i].ends = __atomic_load_n(&g_points[i].end.count, __ATOMIC_RELAXED);
    }
    return n;
}

bool op_causal_progress_seen(void)
{
    uint32_t n = atomic_load_explicit(&g_n_points, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        if (__atomic_load_n(&g_points[i].begin.count, __ATOMIC_RELAXED)) return true;
    return false;
}

void op_causal_progress_end_to_end(void)
{
    coz_counter_t *c = counter_for(COZ_THROUGHPUT, "end-to-end");
    if (c) __atomic_add_fetch(&c->count, 1, __ATOMIC_RELAXED);
}
