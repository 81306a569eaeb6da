/* ins_compiler.c — FUNCTION_CALL records from the hooks a compiler inserts with
 * -finstrument-functions.
 *
 * The program is built with -finstrument-functions and linked with -lomniprof-user: every
 * function calls __cyg_profile_func_enter(fn, call_site) on entry and
 * __cyg_profile_func_exit(fn, call_site) before returning. libomniprof-user.so defines both;
 * they cost a load and a test until a profiler hands them its handlers through
 * omniprof_user_set_function_hooks (src/user/cyg_profile.c). Here are those handlers.
 * Each address is decided once (ins_resolve.c); a function left out costs one cache lookup
 * per call. t_in_hook keeps the handlers from recording the profiler's own calls. */
#include <dlfcn.h>
#include <pthread.h>

#include "backend/instrument/ins_internal.h"
#include "common/clock.h"
#include "common/log.h"

typedef void (*hook_fn)(void *fn, void *site);
typedef int (*set_hooks_fn)(uint64_t version, hook_fn enter, hook_fn exit);

static set_hooks_fn g_set_hooks;

static __thread int t_in_hook;

static void on_enter(void *fn, void *site)
{
    (void)site;
    if (!atomic_load_explicit(&g_op_ins_active, memory_order_relaxed) || t_in_hook) return;
    t_in_hook = 1;
    uint32_t id = op_ins_resolve((uintptr_t)fn, OMNIPROF_FUNCTION_CALL_COMPILER);
    if (id != OP_INS_NO_FUNC) {
        op_ins_func *f = op_ins_func_get(id);
        op_ins_stack *s = f && !atomic_load_explicit(&f->disabled, memory_order_relaxed) ? op_ins_thread_stack() : NULL;
        if (s) op_ins_stack_enter(s, id, op_now_ns());
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
    if (g_set_hooks(1, on_enter, on_exit_hook) != 0) {
        op_warn("instrument: libomniprof-user.so refused the function hooks");
        return -1;
    }
    op_info("instrument: serving the -finstrument-functions hooks");
    return 0;
}

void op_ins_compiler_stop(void)
{
    if (g_set_hooks) g_set_hooks(1, NULL, NULL);
    if (op_ins_resolve_cache_full())
        op_warn("instrument: %llu calls of functions beyond the address cache were not traced",
                (unsigned long long)op_ins_resolve_cache_full());
}
