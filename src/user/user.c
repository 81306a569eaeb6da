/* user.c — libomniprof-user.so: the user API (include/omniprof/user.h) as a dispatch table.
 *
 * The table starts out holding no-ops. The first call of any entry (pthread_once; a load and
 * a compare afterwards) looks up `omniprof_set_api_table` with dlsym(RTLD_DEFAULT). If the
 * SDK is in the process it receives the table (name "user", OMNIPROF_INTERCEPT_TABLE_USER_API),
 * fills the entries with its own implementations, and lets tools registered for the table
 * wrap them. Without the SDK every call stays a cheap no-op and the program runs unchanged;
 * the no-ops still keep the per-thread push/pop depth, so omniprof_range_push/pop return the
 * same values with and without the profiler. This library never links the SDK.
 *
 * Entries are read with acquire loads because a tool that registers late may rewrite them
 * while other threads call through the table. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "omniprof/user.h"

typedef int (*set_api_table_fn)(const char *, uint64_t, uint64_t, void **, uint64_t);

static __thread int t_depth __attribute__((tls_model("initial-exec")));

static void noop_mark(const char *message) { (void)message; }
static int noop_range_push(const char *message)
{
    if (!message) return -1;
    return t_depth++;
}
static int noop_range_pop(void) { return t_depth > 0 ? --t_depth : -1; }
static omniprof_range_id_t noop_range_start(const char *message)
{
    (void)message;
    return 0;
}
static void noop_range_stop(omniprof_range_id_t id) { (void)id; }
static void noop_void(void) {}
static void noop_name(const char *name) { (void)name; }

static omniprof_user_api_table_t g_table = {
    .size = sizeof(omniprof_user_api_table_t),
    .mark = noop_mark,
    .range_push = noop_range_push,
    .range_pop = noop_range_pop,
    .range_start = noop_range_start,
    .range_stop = noop_range_stop,
    .pause = noop_void,
    .resume = noop_void,
    .name_thread = noop_name,
    .progress = noop_name,
    .progress_begin = noop_name,
    .progress_end = noop_name,
};
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void hand_over(void)
{
    set_api_table_fn set = (set_api_table_fn)dlsym(RTLD_DEFAULT, "omniprof_set_api_table");
    if (!set) return;
    void *tables[1] = {&g_table};
    set("user", OMNIPROF_VERSION_NUMBER, 0, tables, 1);
}

#define ENTRY(field) (pthread_once(&g_once, hand_over), __atomic_load_n(&g_table.field, __ATOMIC_ACQUIRE))

OMNIPROF_API void omniprof_mark(const char *message) { ENTRY(mark)(message); }
OMNIPROF_API int omniprof_range_push(const char *message) { return ENTRY(range_push)(message); }
OMNIPROF_API int omniprof_range_pop(void) { return ENTRY(range_pop)(); }
OMNIPROF_API omniprof_range_id_t omniprof_range_start(const char *message) { return ENTRY(range_start)(message); }
OMNIPROF_API void omniprof_range_stop(omniprof_range_id_t id) { ENTRY(range_stop)(id); }
OMNIPROF_API void omniprof_pause(void) { ENTRY(pause)(); }
OMNIPROF_API void omniprof_resume(void) { ENTRY(resume)(); }
OMNIPROF_API void omniprof_name_thread(const char *name) { ENTRY(name_thread)(name); }
OMNIPROF_API void omniprof_progress(const char *name) { ENTRY(progress)(name); }
OMNIPROF_API void omniprof_progress_begin(const char *name) { ENTRY(progress_begin)(name); }
OMNIPROF_API void omniprof_progress_end(const char *name) { ENTRY(progress_end)(name); }
