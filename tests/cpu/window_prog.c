/* window_prog.c — spins for argv[1] seconds of wall time (default 1.2) on the main thread. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) double spin_until(double secs)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    volatile double x = 0;
    do {
        for (int i = 0; i < 10000; i++) x += i;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9 < secs);
    return x;
}

int main(int argc, char **argv)
{
    double s = argc > 1 ? atof(argv[1]) : 1.2;
    spin_until(s);
    printf("window done\n");
    return 0;
}
