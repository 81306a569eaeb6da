/* starve.c — a sampled thread whose sample ring overflows because its unwinder is starved
 * (cpu.starved_ring): a worker pinned to one CPU runs deep_a (a 12 KiB stack frame: every stack
 * copy of it is large) and shallow_b (a small frame) in turns, 70 % / 30 % of its CPU time as it
 * measures itself, while the profiler's allocator threads (named omniprof.cpu.al*) are put on
 * the same CPU under SCHED_IDLE, as on a machine busy with other work: the allocator unwinds a
 * few samples a second, the ring stays full, and most samples are dropped. Before the end the
 * allocators get their policy and CPUs back. argv[1] = seconds of the worker's CPU time (default
 * 4). Prints "split deep_a NS shallow_b NS", "starved N allocator(s)", "starve done". */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define UNIT 100000L

static uint64_t cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

__attribute__((noinline)) static double spin(long n)
{
    volatile double x = 0;
    for (long i = 0; i < n; i++) x += (double)i * 0.5 + 1.0;
    return x;
}

__attribute__((noinline)) double deep_a(long units)
{
    volatile char big[12288]; /* a deep stack here: large stack copies */
    for (size_t i = 0; i < sizeof big; i += 512) big[i] = (char)i;
    volatile double x = 0;
    for (long i = 0; i < units * UNIT; i++) x += (double)i * 0.5 + 1.0;
    return x + big[512];
}

__attribute__((noinline)) double shallow_b(long units)
{
    volatile double x = 0;
    for (long i = 0; i < units * UNIT; i++) x += (double)i * 0.5 + 1.0;
    return x;
}

static pid_t g_alloc[64];
static int g_n_alloc;
static cpu_set_t g_alloc_cpus[64];

/* The profiler's allocator threads onto `cpu` under SCHED_IDLE (back when restore). */
static void starve_allocators(int cpu, int restore)
{
    if (!restore) {
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        while (d && (e = readdir(d)) && g_n_alloc < 64) {
            char path[300], comm[64] = "";
            snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
            FILE *f = fopen(path, "r");
            if (!f) continue;
            if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
            fclose(f);
            if (strncmp(comm, "omniprof.cpu.al", 15) == 0) g_alloc[g_n_alloc++] = (pid_t)atoi(e->d_name);
        }
        if (d) closedir(d);
    }
    for (int i = 0; i < g_n_alloc; i++) {
        struct sched_param sp = {0};
        if (!restore) {
            sched_getaffinity(g_alloc[i], sizeof g_alloc_cpus[i], &g_alloc_cpus[i]);
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            sched_setaffinity(g_alloc[i], sizeof one, &one);
            sched_setscheduler(g_alloc[i], SCHED_IDLE, &sp);
        } else {
            sched_setscheduler(g_alloc[i], SCHED_OTHER, &sp);
            sched_setaffinity(g_alloc[i], sizeof g_alloc_cpus[i], &g_alloc_cpus[i]);
        }
    }
}

static double g_secs = 4.0;
static uint64_t g_ns_a, g_ns_b;
static volatile double g_sink;

static void *worker(void *arg)
{
    (void)arg;
    cpu_set_t mine;
    sched_getaffinity(0, sizeof mine, &mine);
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &mine)) cpu++;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof one, &one);
    starve_allocators(cpu, 0);
    uint64_t start = cpu_ns();
    while (cpu_ns() - start < (uint64_t)(g_secs * 1e9)) {
        uint64_t t0 = cpu_ns();
        g_sink += deep_a(7);
        uint64_t t1 = cpu_ns();
        g_sink += shallow_b(3);
        uint64_t t2 = cpu_ns();
        g_ns_a += t1 - t0;
        g_ns_b += t2 - t1;
    }
    starve_allocators(cpu, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) g_secs = atof(argv[1]);
    g_sink += spin(1000);
    pthread_t th;
    if (pthread_create(&th, NULL, worker, NULL) != 0) return 2;
    pthread_join(th, NULL);
    printf("split deep_a %llu shallow_b %llu\n", (unsigned long long)g_ns_a, (unsigned long long)g_ns_b);
    printf("starved %d allocator(s)\n", g_n_alloc);
    printf("starve done\n");
    return 0;
}
