/* cputime_exact.c — CPU test program for CPU-time sampling (cpu.cputime_exact): phase_a runs for
 * 3 ms of the thread's CPU time, then phase_b for 1 ms, `cycles` times (argv[1], default 300:
 * 1.2 s of CPU), and it prints the CPU it measured in each, so a test can compare the samples'
 * count with the frequency asked and their shares with the measured split.
 * argv[2] = "block": first, with every signal blocked, spin for 300 ms of CPU and print how many
 * signals were queued for this user meanwhile (SigQ of /proc/self/status): a CPU-time sampler
 * must not queue a signal per period while the thread blocks them (the count is the user's: the
 * difference over the spin is printed). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* spin until `ns` of this thread's CPU time passed; returns the CPU it took */
#define SPIN(ns)                                                     \
    long long start = cpu_ns(), now = start;                         \
    volatile double x = 0;                                           \
    while ((now = cpu_ns()) - start < (ns))                          \
        for (int i = 0; i < 200; i++) x += (double)i * 0.5;          \
    return now - start

__attribute__((noinline)) long long phase_a(void) { SPIN(3000000LL); }
__attribute__((noinline)) long long phase_b(void) { SPIN(1000000LL); }
__attribute__((noinline)) long long blocked(void) { SPIN(300000000LL); }

static long queued_signals(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long n = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "SigQ:", 5)) n = atol(line + 5);
    if (f) fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    long cycles = argc > 1 ? atol(argv[1]) : 300;
    if (argc > 2 && !strcmp(argv[2], "block")) {
        sigset_t all, old;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, &old);
        long before = queued_signals();
        blocked();
        long q = queued_signals();
        sigprocmask(SIG_SETMASK, &old, NULL);
        printf("blocked queued=%ld\n", q - before);
    }
    long long a = 0, b = 0;
    for (long c = 0; c < cycles; c++) {
        a += phase_a();
        b += phase_b();
    }
    printf("cputime_exact done cpu_ms=%.1f phase_a=%.2f phase_b=%.2f\n", (a + b) / 1e6, 100.0 * a / (a + b),
           100.0 * b / (a + b));
    return 0;
}
