/* dlreuse.c — a library closed and another loaded in its place (cpu.dlreuse): dlopen argv[1],
 * run its work function for argv[3] seconds of this thread's CPU time, dlclose it; dlopen argv[2]
 * and run its work function for argv[4] seconds, then dlclose it too unless argv[5] is "keep"
 * (libb then stays mapped to the end, where symbols are resolved). The two libraries are built from one source
 * (reuselib.c) with different function names, so the loader usually maps the second where the
 * first was. Prints each library's load bias and each phase's monotonic start/end and CPU time,
 * one line per phase: "phase NAME bias 0x... start NS end NS cpu NS", then "dlreuse done". */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef uint64_t (*work_fn)(uint64_t x, uint64_t n);
static volatile uint64_t g_sink;

static uint64_t ns(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int phase(const char *lib, const char *fn, double secs, int keep)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    work_fn f = h ? (work_fn)dlsym(h, fn) : NULL;
    struct link_map *lm = NULL;
    if (!f || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0) {
        fprintf(stderr, "dlopen/dlsym %s %s: %s\n", lib, fn, dlerror());
        return -1;
    }
    uint64_t cpu0 = ns(CLOCK_THREAD_CPUTIME_ID), t0 = ns(CLOCK_MONOTONIC);
    while (ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 < (uint64_t)(secs * 1e9)) g_sink += f(g_sink, 2000000);
    uint64_t t1 = ns(CLOCK_MONOTONIC), cpu1 = ns(CLOCK_THREAD_CPUTIME_ID);
    printf("phase %s bias 0x%llx start %llu end %llu cpu %llu\n", fn, (unsigned long long)lm->l_addr,
           (unsigned long long)t0, (unsigned long long)t1, (unsigned long long)(cpu1 - cpu0));
    return keep ? 0 : dlclose(h);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s LIBA LIBB SECONDS_A SECONDS_B [keep]\n", argv[0]);
        return 2;
    }
    int keep = argc > 5 && strcmp(argv[5], "keep") == 0;
    if (phase(argv[1], "liba_work", atof(argv[3]), 0) != 0 || phase(argv[2], "libb_work", atof(argv[4]), keep) != 0)
        return 2;
    printf("dlreuse done\n");
    return 0;
}
