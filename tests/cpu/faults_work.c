/* faults_work.c — a program whose page faults all happen in one function (cpu.counters).
 *
 * usage: cputest_faults_work MB ROUNDS
 * Each round, touch_pages() maps MB MiB of fresh anonymous memory (huge pages off, so every 4 KiB
 * page faults once), writes one byte per page and unmaps it; then spin() computes for about as
 * long, touching no new memory. The page faults of the process are therefore those of
 * touch_pages() (MB * 256 * ROUNDS) plus start-up and exit. It prints its own count
 * (getrusage: minor + major faults) as `faults N` and `pages P`, the pages it touched. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t g_sink;

__attribute__((noinline)) static uint64_t touch_pages(size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
#ifdef MADV_NOHUGEPAGE
    madvise(p, bytes, MADV_NOHUGEPAGE);
#endif
    uint64_t n = 0;
    for (size_t off = 0; off < bytes; off += (size_t)page, n++) p[off] = (char)n;
    munmap(p, bytes);
    return n;
}

__attribute__((noinline)) static void spin(double seconds)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    uint64_t x = 88172645463325252ull;
    do {
        for (int i = 0; i < 100000; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec) < seconds);
    g_sink = x;
}

int main(int argc, char **argv)
{
    size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 64;
    int rounds = argc > 2 ? atoi(argv[2]) : 16;
    uint64_t pages = 0;
    for (int r = 0; r < rounds; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        pages += touch_pages(mb << 20);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        spin((double)(b.tv_sec - a.tv_sec) +
             1e-9 * (double)(b.tv_nsec - a.tv_nsec)); /* as long again */
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("pages %llu\nfaults %ld\n", (unsigned long long)pages, ru.ru_minflt + ru.ru_majflt);
    return 0;
}
