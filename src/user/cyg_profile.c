/* cyg_profile.c — the -finstrument-functions hooks of libomniprof-user.so.
 *
 * A program compiled with -finstrument-functions calls __cyg_profile_func_enter(fn, site) at
 * the start of every function and __cyg_profile_func_exit(fn, site) before it returns; linking
 * it with -lomniprof-user provides both. Without a profiler they load one pointer, find it NULL
 * and return: the program runs unchanged. omniprof's instrumentation backend installs its
 * handlers with omniprof_user_set_function_hooks when `omniprof instrument` (or `attach`) runs
 * the program, and removes them (NULL) when collection stops.
 *
 * The hooks themselves are never instrumented (no_instrument_function), and this library is
 * not compiled with -finstrument-functions. The handler pointers are read with relaxed atomic
 * loads: a thread may run the old handler once after a change, which the backend tolerates
 * (its handlers stay loaded for the life of the process). docs/instrument.md gives the flags. */
#include <stddef.h>
#include <stdint.h>

#include "omniprof/defines.h"

typedef void (*op_user_hook_fn)(void *fn, void *call_site);

static op_user_hook_fn g_enter, g_exit;

OMNIPROF_API __attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *call_site)
{
    op_user_hook_fn h = __atomic_load_n(&g_enter, __ATOMIC_RELAXED);
    if (h) h(fn, call_site);
}

OMNIPROF_API __attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *call_site)
{
    op_user_hook_fn h = __atomic_load_n(&g_exit, __ATOMIC_RELAXED);
    if (h) h(fn, call_site);
}

/* For the profiler, not for applications: install (or, with NULLs, remove) the handlers.
 * `version` is 1. Returns 0, or -1 for an unknown version. */
OMNIPROF_API int omniprof_user_set_function_hooks(uint64_t version, op_user_hook_fn enter, op_user_hook_fn exit)
{
    if (version != 1) return -1;
    /* exit first when installing, enter first when removing: an exit without its entry is
     * ignored by the backend, an entry without its exit would stay open */
    if (enter) {
        __atomic_store_n(&g_exit, exit, __ATOMIC_RELEASE);
        __atomic_store_n(&g_enter, enter, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&g_enter, enter, __ATOMIC_RELEASE);
        __atomic_store_n(&g_exit, exit, __ATOMIC_RELEASE);
    }
    return 0;
}
