/* ins_compiler.c — FUNCTION_CALL records from the hooks a compiler inserts with
 * -finstrument-functions.
 *
 * The program is built with -finstrument-functions and linked with -lomniprof-user: every
 * function calls __cyg_profile_func_enter(fn, call_site) on entry and
 * __cyg_profile_func_exit(fn, call_site) before returning. libomniprof-user.so defines both;
 * they cost a load and a test until a profiler hands them its handlers through
 * omniprof_user_set_function_hooks (src/user/cyg_profile.c). Here are those handlers.
 *
 * Each address is decided once (ins_resolve.c). A function that is not recorded — left out by
 * the filter, or throttled — is written into libomniprof-user's skip table, after which its
 * hooks return inside libomniprof-user (one load and one compare) without calling here. A
 * throttled function is skipped only once the calling thread has no call of it open (its
 * exits must still reach the shadow stack). t_in_hook keeps the handlers from recording the
 * profiler's own calls. */
#include <dlfcn.h>
#include <pthread.h>

#include "backend/instrument/ins_internal.h"
#include "common/clock.h"
#include "common/log.h"

typedef void (*hook_fn)(void *fn, void *site);
typedef int (*set_hooks_fn)(uint64_t version, hook_fn enter, hook_fn exit);
typedef uintptr_t *(*skip_table_fn)(unsigned *bits);

static set_hooks_fn g_set_hooks;
static uintptr_t *g_skip; /* libomniprof-user's skip table, or NULL (an older library) */
static unsigned g_skip_bits;

static __thread int t_in_hook;

static void skip(void *fn)
{
    if (!g_skip) return;
    uintptr_t a = (uintptr_t)fn;
    __atomic_store_n(&g_skip[(a * 0x9E3779B97F4A7C15ull) >> (64 - g_skip_bits)], a, __ATOMIC_RELAXED);
}

static void on_enter(void *fn, void *site)
{
    (void)site;
    if (!atomic_load_explicit(&g_op_ins_active, memory_order_relaxed) || t_in_hook) return;
    t_in_hook = 1;
    uint32_t id = op_ins_resolve((uintptr_t)fn, OMNIPROF_FUNCTION_CALL_COMPILER);
    op_ins_func *f = id != OP_INS_NO_FUNC ? op_ins_func_get(id) : NULL;
    if (!f) {
        skip(fn);
    } else {
        op_ins_stack *s = op_ins_thread_stack();
        if (!atomic_load_explicit(&f->disabled, memory_order_relaxed)) {
            if (s) op_ins_stack_enter(s, id, op_now_ns());
        } else if (!s || !op_ins_stack_holds(s, id)) {
            skip(fn);
        }
    }
    t_in_hook = 0;
}

static void on_exit_hook(void *fn, void *site)
{
    (void)site;
    if (!atomic_load_explicit(&g_op_ins_active, memory_order_relaxed) || t_in_hook) return;
    t_in_hook = 1;
    uint64_t now = op_now_ns();
    uint32_t id = op_ins_resolve((uintptr_t)fn, OMNIPROF_FUNCTION_CALL_COMPILER);
    if (id != OP_INS_NO_FUNC) {
        op_ins_stack *s = op_ins_thread_stack();
        if (s) op_ins_stack_exit(s, id, now);
    }
    t_in_hook = 0;
}

int op_ins_compiler_start(void)
{
    g_set_hooks = (set_hooks_fn)dlsym(RTLD_DEFAULT, "omniprof_user_set_function_hooks");
    if (!g_set_hooks) {
        op_info("instrument: the program does not use libomniprof-user.so: no -finstrument-functions hooks to serve");
        return 0;
    }
    if (op_ins_resolve_init() != 0) return -1;
    skip_table_fn table = (skip_table_fn)dlsym(RTLD_DEFAULT, "omniprof_user_function_skip_table");
    g_skip = table ? table(&g_skip_bits) : NULL;
    if (!g_skip || g_skip_bits == 0 || g_skip_bits > 24) g_skip = NULL;
    if (g_set_hooks(1, on_enter, on_exit_hook) != 0) {
        op_warn("instrument: libomniprof-user.so refused the function hooks");
        return -1;
    }
    op_info("instrument: serving the -finstrument-functions hooks%s",
            g_skip ? "" : " (an older libomniprof-user.so without a skip table: functions left out still call in)");
    return 0;
}

void op_ins_compiler_stop(void)
{
    if (g_set_hooks) g_set_hooks(1, NULL, NULL);
    if (op_ins_resolve_cache_full())
        op_warn("instrument: %llu calls of functions beyond the address cache were not traced",
                (unsigned long long)op_ins_resolve_cache_full());
}
