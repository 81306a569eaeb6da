/* unwind_walk.h — the frame loop shared by the handler's unwinder (sampler.c, libunwind's
 * local API: UNW_LOCAL_ONLY) and the allocator's (unwind_deferred.c, the remote API). Include
 * it after <libunwind.h>: unw_* name each file's own variant of libunwind. */
#ifndef OMNIPROF_BACKEND_CPU_UNWIND_WALK_H
#define OMNIPROF_BACKEND_CPU_UNWIND_WALK_H

#include <stdint.h>

/* Frames of an initialized cursor into frames[] (at most max), innermost first: frame 0 and
 * frames after a signal frame exactly, callers as return address - 1 (inside the call). */
static inline uint32_t op_cpu_walk_cursor(unw_cursor_t *cursor, uint64_t *frames, uint32_t max)
{
    uint32_t n = 0;
    do {
        unw_word_t ip = 0;
        if (unw_get_reg(cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
        frames[n] = (n == 0 || unw_is_signal_frame(cursor) > 0) ? (uint64_t)ip : (uint64_t)ip - 1;
        n++;
    } while (n < max && unw_step(cursor) > 0);
    return n;
}

#endif /* OMNIPROF_BACKEND_CPU_UNWIND_WALK_H */
