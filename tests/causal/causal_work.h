/* causal_work.h — the CPU work of the causal test programs: spin(n) burns about n units of
 * CPU time on the caller's line, so that a whole loop sits on one source line (the line a
 * causal profiler selects is the line of the call's own loop, see each program). */
#ifndef OMNIPROF_TESTS_CAUSAL_WORK_H
#define OMNIPROF_TESTS_CAUSAL_WORK_H

#include <stdint.h>
#include <stdlib.h>

/* One unit of work: a dependent multiply-add the compiler cannot remove. Used on one line:
 *     for (long i = 0; i < n; i++) CAUSAL_STEP(x);                                         */
#define CAUSAL_STEP(x) do { __asm__ volatile("" : "+r"(x)); (x) = (x) * 6364136223846793005ull + 1442695040888963407ull; } while (0)

/* Units per millisecond of CPU on this machine, from the environment (the tests measure it
 * once), or a default that is about right for a 2–3 GHz core. */
static inline long causal_units_per_ms(void)
{
    const char *s = getenv("CAUSAL_UNITS_PER_MS");
    long v = s ? atol(s) : 0;
    return v > 0 ? v : 400000;
}

#endif
