/* bench_interp.c — the representative call-heavy program of the instrumentation benchmark:
 * `bench_interp N` runs N rounds of the interpreter (bench_interp_lib.c) and prints
 * "nodes=<AST nodes> cpu_ns=<thread CPU time of the work> acc=<checksum>" (as bench_calls does:
 * CLOCK_THREAD_CPUTIME_ID counts the kernel's uprobe handling too). Built plain, with
 * -finstrument-functions (bench_interp_cyg) and with the interpreter in a shared library
 * (bench_interp_lib, whose calls go through the PLT). */
#include <stdlib.h>
#include <time.h>

#include "bench_interp.h"

static long cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    long nodes = 0;
    long t0 = cpu_ns();
    long acc = interp_run(rounds, &nodes);
    long t1 = cpu_ns();
    printf("nodes=%ld cpu_ns=%ld acc=%ld\n", nodes, t1 - t0, acc);
    return 0;
}
