/* jit_perfmap.c — a program with JIT-compiled code that names it in /tmp/perf-PID.map, as
 * CPython's perf trampolines, Node and Java agents do (cpu_check.py's `perf_map` mode).
 *
 * It maps an executable page, copies a small hand-assembled loop there (no relocations:
 * `dec rdi; jnz`, then `ret`), writes "START SIZE jit_spin_loop" to /tmp/perf-PID.map, and
 * runs that loop and a compiled loop (native_spin) in turns for SECONDS of CPU (about 85 % /
 * 15 %). Prints its pid first ("jit_perfmap start pid=PID"), then the CPU each got. The map
 * file stays: the profiler reads it when the program ends (symbols are resolved then); the test
 * removes it (the pid names it, even when the program did not get to its last line).
 *
 * With `jitdump DIR` it names its code in DIR/jit-PID.dump instead, as CPython 3.13's -X
 * perf_jit, Node's --perf-prof and Java agents do (perf's jitdump format: a header, then
 * JIT_CODE_LOAD and JIT_CODE_MOVE records), and maps that file into its memory as they do so
 * that a profiler finds it: jit_spin_loop loaded where it runs, and jit_moved_loop loaded at
 * one place and then moved (a JIT_CODE_MOVE record) to where it runs. The three loops take
 * turns (about 55 / 30 / 15 %); the file stays, the test removes its folder.
 * usage: jit_perfmap SECONDS [jitdump DIR] */
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

static void put(FILE *f, const void *p, size_t n) { fwrite(p, 1, n, f); }

static void put32(FILE *f, uint32_t v) { put(f, &v, sizeof v); }

static void put64(FILE *f, uint64_t v) { put(f, &v, sizeof v); }

/* jitdump's record prefix (id, total size, timestamp) and the pid, tid and vma of a load or move */
static void record(FILE *f, uint32_t id, uint32_t size)
{
    put32(f, id), put32(f, size), put64(f, cpu_ns());
    put32(f, (uint32_t)getpid()), put32(f, (uint32_t)getpid());
}

static void load(FILE *f, const char *name, const uint8_t *at, const uint8_t *code, size_t n, uint64_t index)
{
    record(f, 0, (uint32_t)(16 + 40 + strlen(name) + 1 + n));
    put64(f, (uint64_t)(uintptr_t)at), put64(f, (uint64_t)(uintptr_t)at), put64(f, n), put64(f, index);
    put(f, name, strlen(name) + 1), put(f, code, n);
}

static int jitdump(const char *dir, uint8_t *page, const uint8_t *code, size_t n, char *path, size_t cap)
{
    snprintf(path, cap, "%s/jit-%d.dump", dir, (int)getpid());
    FILE *f = fopen(path, "w+b");
    if (!f) return -1;
    put32(f, 0x4A695444u), put32(f, 1), put32(f, 40), put32(f, 62 /* EM_X86_64 */), put32(f, 0);
    put32(f, (uint32_t)getpid()), put64(f, cpu_ns()), put64(f, 0);
    load(f, "jit_spin_loop", page + 64, code, n, 1);
    load(f, "jit_moved_loop", page + 1024, code, n, 2);
    record(f, 1, 16 + 48); /* JIT_CODE_MOVE: index 2 from page+1024 to page+2048 */
    put64(f, (uint64_t)(uintptr_t)(page + 1024)), put64(f, (uint64_t)(uintptr_t)(page + 1024));
    put64(f, (uint64_t)(uintptr_t)(page + 2048)), put64(f, n), put64(f, 2);
    fflush(f);
    /* as a JIT does: the file mapped executable, so that a profiler sees it among the mappings */
    void *m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0);
    return m == MAP_FAILED ? -1 : 0; /* the FILE and the mapping stay open to the end */
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    const char *dumpdir = argc > 3 && strcmp(argv[2], "jitdump") == 0 ? argv[3] : NULL;
    printf("jit_perfmap start pid=%d\n", (int)getpid());
    fflush(stdout);
    /* loop: dec rdi (48 ff cf); jnz loop (75 fb); ret (c3) */
    static const uint8_t code[] = {0x48, 0xff, 0xcf, 0x75, 0xfb, 0xc3};
    uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return 2;
    memset(page, 0xcc, 4096);
    memcpy(page + 64, code, sizeof code);
    memcpy(page + 2048, code, sizeof code); /* where jit_moved_loop was moved to */
    if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0) return 2;
    void (*jit)(uint64_t) = (void (*)(uint64_t))(void *)(page + 64);
    void (*moved)(uint64_t) = (void (*)(uint64_t))(void *)(page + 2048);
    char path[4096];
    if (dumpdir) {
        if (jitdump(dumpdir, page, code, sizeof code, path, sizeof path) != 0) return 2;
    } else {
        snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
        FILE *f = fopen(path, "w");
        if (!f) return 2;
        fprintf(f, "%lx %zx jit_spin_loop\n", (unsigned long)(uintptr_t)(page + 64), sizeof code);
        fclose(f);
    }
    uint64_t jit_ns = 0, moved_ns = 0, native_ns = 0, end = cpu_ns() + (uint64_t)(seconds * 1e9);
    while (cpu_ns() < end) {
        uint64_t t0 = cpu_ns();
        jit(dumpdir ? 4500000 : 7000000);
        uint64_t t1 = cpu_ns();
        if (dumpdir) moved(2500000);
        uint64_t t2 = cpu_ns();
        native_spin(1000000);
        uint64_t t3 = cpu_ns();
        jit_ns += t1 - t0;
        moved_ns += t2 - t1;
        native_ns += t3 - t2;
    }
    if (dumpdir)
        printf("jit_perfmap done jit_ns=%llu moved_ns=%llu native_ns=%llu dump=%s\n", (unsigned long long)jit_ns,
               (unsigned long long)moved_ns, (unsigned long long)native_ns, path);
    else
        printf("jit_perfmap done jit_ns=%llu native_ns=%llu map=%s\n", (unsigned long long)jit_ns,
               (unsigned long long)native_ns, path);
    return 0;
}
