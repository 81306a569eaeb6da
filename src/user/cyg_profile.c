/* cyg_profile.c — the -finstrument-functions hooks of libomniprof-user.so.
 *
 * A program compiled with -finstrument-functions calls __cyg_profile_func_enter(fn, site) at
 * the start of every function and __cyg_profile_func_exit(fn, site) before it returns; linking
 * it with -lomniprof-user provides both. Without a profiler they load one pointer, find it NULL
 * and return: the program runs unchanged. omniprof's instrumentation backend installs its
 * handlers with omniprof_user_set_function_hooks when `omniprof instrument` (or `attach`) runs
 * the program, and removes them (NULL) when collection stops.
 *
 * The skip table: most functions of such a program are not recorded (too small, not selected,
 * throttled). The backend writes each such function's address into a direct-mapped table
 * here (omniprof_user_function_skip_table; slot = a multiplicative hash of the address, one
 * address per slot, the last writer wins), and both hooks return after one load and one
 * compare when the slot holds `fn` — no call into the profiler, no lock, no atomic
 * read-modify-write. A function whose slot holds another address goes to the handler, which
 * decides again (from its own cache) and may take the slot.
 *
 * The hooks themselves are never instrumented (no_instrument_function), and this library is
 * not compiled with -finstrument-functions. The handler pointers and slots are read with
 * relaxed atomic loads: a thread may run the old handler once after a change, which the
 * backend tolerates (its handlers stay loaded for the life of the process). docs/instrument.md
 * gives the flags. */
#include <stddef.h>
#include <stdint.h>

#include "omniprof/defines.h"

typedef void (*op_user_hook_fn)(void *fn, void *call_site);

#define SKIP_BITS 13 /* 8,192 slots (64 KiB, untouched pages cost nothing without a profiler) */

static op_user_hook_fn g_enter, g_exit;
static uintptr_t g_skip[1u << SKIP_BITS];

static inline __attribute__((no_instrument_function, always_inline)) int skipped(void *fn)
{
    uintptr_t a = (uintptr_t)fn;
    return __atomic_load_n(&g_skip[(a * 0x9E3779B97F4A7C15ull) >> (64 - SKIP_BITS)], __ATOMIC_RELAXED) == a;
}

OMNIPROF_API __attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *call_site)
{
    op_user_hook_fn h = __atomic_load_n(&g_enter, __ATOMIC_RELAXED);
    if (h && !skipped(fn)) h(fn, call_site);
}

OMNIPROF_API __attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *call_site)
{
    op_user_hook_fn h = __atomic_load_n(&g_exit, __ATOMIC_RELAXED);
    if (h && !skipped(fn)) h(fn, call_site);
}

/* For the profiler, not for applications: install (or, with NULLs, remove) the handlers.
 * `version` is 1. Installing empties the skip table. Returns 0, or -1 for an unknown version. */
OMNIPROF_API int omniprof_user_set_function_hooks(uint64_t version, op_user_hook_fn enter, op_user_hook_fn exit)
{
    if (version != 1) return -1;
    /* exit first when installing, enter first when removing: an exit without its entry is
     * ignored by the backend, an entry without its exit would stay open */
    if (enter) {
        for (size_t i = 0; i < sizeof g_skip / sizeof g_skip[0]; i++) __atomic_store_n(&g_skip[i], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&g_exit, exit, __ATOMIC_RELEASE);
        __atomic_store_n(&g_enter, enter, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&g_enter, enter, __ATOMIC_RELEASE);
        __atomic_store_n(&g_exit, exit, __ATOMIC_RELEASE);
    }
    return 0;
}

/* For the profiler: the skip table (above) and its size in bits. The profiler stores a
 * function's address at slot (address * 0x9E3779B97F4A7C15) >> (64 - bits) with relaxed
 * atomic stores; both hooks then return at once for that function. */
OMNIPROF_API uintptr_t *omniprof_user_function_skip_table(unsigned *bits)
{
    if (bits) *bits = SKIP_BITS;
    return g_skip;
}
