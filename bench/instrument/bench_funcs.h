/* bench_funcs.h — the functions bench_calls.c calls (included into the program, or compiled
 * into libbench_calls_funcs.so for the LD_AUDIT method). Global and noinline: each call is a
 * real call (through the PLT when in the library). */
#ifndef BENCH_FUNCS_H
#define BENCH_FUNCS_H

#define BENCH_API __attribute__((noinline, visibility("default")))

BENCH_API long leaf(long x) { return x ^ (x >> 3); }

BENCH_API long tiny(long x) { return x * 3 + 1; }

/* ~150 instructions without a loop: a chain of mixes the compiler cannot fold */
#define MIX(v) v = (v ^ (v >> 7)) * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L;
BENCH_API long mid(long x)
{
    long v = x;
    MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v)
    MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v)
    MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v)
    return v;
}

BENCH_API long big(long x)
{
    long v = x;
    for (int i = 0; i < 20000; i++) MIX(v)
    return v;
}

#endif
