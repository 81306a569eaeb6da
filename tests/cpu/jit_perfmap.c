/* jit_perfmap.c — a program with JIT-compiled code that names it in /tmp/perf-PID.map, as
 * CPython's perf trampolines, Node and Java agents do (cpu_check.py's `perf_map` mode).
 *
 * It maps an executable page, copies a small hand-assembled loop there (no relocations:
 * `dec rdi; jnz`, then `ret`), writes "START SIZE jit_spin_loop" to /tmp/perf-PID.map, and
 * runs that loop and a compiled loop (native_spin) in turns for SECONDS of CPU (about 85 % /
 * 15 %). Prints the CPU each got. The map file stays: the profiler reads it when the program
 * ends (symbols are resolved then); the test removes it.
 * usage: jit_perfmap SECONDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void native_spin(uint64_t n)
{
    for (volatile uint64_t i = 0; i < n; i++) {
    }
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    /* loop: dec rdi (48 ff cf); jnz loop (75 fb); ret (c3) */
    static const uint8_t code[] = {0x48, 0xff, 0xcf, 0x75, 0xfb, 0xc3};
    uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return 2;
    memset(page, 0xcc, 4096);
    memcpy(page + 64, code, sizeof code);
    if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0) return 2;
    void (*jit)(uint64_t) = (void (*)(uint64_t))(void *)(page + 64);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return 2;
    fprintf(f, "%lx %zx jit_spin_loop\n", (unsigned long)(uintptr_t)(page + 64), sizeof code);
    fclose(f);
    uint64_t jit_ns = 0, native_ns = 0, end = cpu_ns() + (uint64_t)(seconds * 1e9);
    while (cpu_ns() < end) {
        uint64_t t0 = cpu_ns();
        jit(7000000);
        uint64_t t1 = cpu_ns();
        native_spin(1000000);
        uint64_t t2 = cpu_ns();
        jit_ns += t1 - t0;
        native_ns += t2 - t1;
    }
    printf("jit_perfmap done jit_ns=%llu native_ns=%llu map=%s\n", (unsigned long long)jit_ns,
           (unsigned long long)native_ns, path);
    return 0;
}
