/* fib.c — the instrumentation tests' program: a recursive fib(N) (fib(20) makes 21,891 calls)
 * a function that only exists inlined (for `--list`'s "inlined" reason) and a straight-line one
 * of more than 64 instructions (no loop, no call: "too short" by default). Built three ways
 * (tests/instrument/CMakeLists.txt): plain (uprobes), with -finstrument-functions linked to
 * libomniprof-user (compiler hooks), and with fib in a shared library (LD_AUDIT). */
#include <stdio.h>
#include <stdlib.h>

#ifdef FIB_IN_LIBRARY
long fib(int n);
#else
__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
#endif

static inline int twice(int x) { return 2 * x; }

#define MIX(v) v = (v ^ (v >> 7)) * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L;
__attribute__((noinline)) long scramble(long v)
{
    MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v)
    MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v) MIX(v)
    return v;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20;
    printf("fib(%d) = %ld\n", n, fib(n));
    printf("twice(%d) = %d\n", n, twice(n));
    printf("scramble(%d) = %ld\n", n, scramble(n));
    return 3; /* a status of its own, that instrumentation must keep */
}
