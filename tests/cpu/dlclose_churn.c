/* dlclose_churn.c — load a library (argv[1]), run 10 frames of it, close it, for argv[2] seconds
 * (argv[3]: iterations of its leaf loop per call): samples whose stacks are walked after the
 * library is gone, or while it goes (cpu.dlclose). Prints "churn done" and exits 0. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef uint64_t (*churn_fn)(uint64_t x, uint64_t n, int depth);
static volatile uint64_t g_sink;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBRARY [SECONDS] [ITERATIONS]\n", argv[0]);
        return 2;
    }
    double secs = argc > 2 ? atof(argv[2]) : 2.0;
    uint64_t n = argc > 3 ? strtoull(argv[3], NULL, 10) : 20000, cycles = 0;
    for (double t0 = now_s(); now_s() - t0 < secs; cycles++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        churn_fn f = h ? (churn_fn)dlsym(h, "churn_mid") : NULL;
        if (!f) {
            fprintf(stderr, "dlopen/dlsym %s: %s\n", argv[1], dlerror());
            return 2;
        }
        g_sink += f(cycles, n, 8);
        dlclose(h);
    }
    printf("churn done %s\n", cycles > 0 ? "ok" : "no cycle");
    return 0;
}
