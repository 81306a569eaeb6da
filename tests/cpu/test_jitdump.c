/* test_jitdump.c — perf_map.c's jitdump reading on files cut short or damaged (cpu.jitdump_files,
 * under the sanitizers too): this process writes its own /tmp/jit-PID.dump in turn as a JIT
 * would (loads, a move), then cut in the middle of a record, with a wrong magic, with a record
 * whose size is too small or runs past the end, and with a name that has no end; each time the
 * lookups name what the file's whole records name and nothing else. The real programs (a JIT of
 * the test's own, CPython 3.13's -X perf_jit) are cpu_check.py's `jitdump` mode. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"

static int g_fail;
static char g_path[64];

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            g_fail = 1;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

typedef struct {
    unsigned char b[8192];
    size_t n;
} buf;

static void put(buf *o, const void *p, size_t n)
{
    memcpy(o->b + o->n, p, n);
    o->n += n;
}
static void p32(buf *o, uint32_t v) { put(o, &v, 4); }
static void p64(buf *o, uint64_t v) { put(o, &v, 8); }

static void header(buf *o, uint32_t magic)
{
    p32(o, magic), p32(o, 1), p32(o, 40), p32(o, 62), p32(o, 0), p32(o, (uint32_t)getpid()), p64(o, 0), p64(o, 0);
}

static void load(buf *o, uint64_t addr, uint64_t size, uint64_t index, const char *name)
{
    p32(o, 0), p32(o, (uint32_t)(16 + 40 + strlen(name) + 1 + 4)), p64(o, 0);
    p32(o, 1), p32(o, 1), p64(o, addr), p64(o, addr), p64(o, size), p64(o, index);
    put(o, name, strlen(name) + 1);
    p32(o, 0xc3c3c3c3u); /* the code */
}

static void move(buf *o, uint64_t from, uint64_t to, uint64_t size, uint64_t index)
{
    p32(o, 1), p32(o, 16 + 48), p64(o, 0);
    p32(o, 1), p32(o, 1), p64(o, from), p64(o, from), p64(o, to), p64(o, size), p64(o, index);
}

/* The file holds the first n bytes of o; its modification time moves on (a reread). */
static void write_file(const buf *o, size_t n)
{
    FILE *f = fopen(g_path, "wb");
    if (!f || fwrite(o->b, 1, n, f) != n) {
        fprintf(stderr, "cannot write %s\n", g_path);
        exit(1);
    }
    fclose(f);
    static time_t t = 1000000;
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    t += 10;
    utimensat(AT_FDCWD, g_path, ts, 0);
}

static const char *name_at(uint64_t addr)
{
    uint64_t start = 0;
    const char *path = NULL;
    const char *n = op_cpu_perf_map_lookup(addr, &start, &path);
    if (n) CHECK(path && strcmp(path, g_path) == 0, "module %s, want %s", path ? path : "-", g_path);
    return n;
}

static void expect(uint64_t addr, const char *want, const char *what)
{
    const char *got = name_at(addr);
    CHECK(want ? got && strcmp(got, want) == 0 : got == NULL, "%s: 0x%llx named %s, want %s", what,
          (unsigned long long)addr, got ? got : "nothing", want ? want : "nothing");
}

int main(void)
{
    snprintf(g_path, sizeof g_path, "/tmp/jit-%d.dump", (int)getpid());
    buf o = {.n = 0};
    header(&o, 0x4A695444u);
    load(&o, 0x10000, 0x100, 1, "jit_a");
    load(&o, 0x20000, 0x80, 2, "jit_b");
    move(&o, 0x20000, 0x30000, 0x80, 2);
    size_t whole = o.n;
    write_file(&o, whole);
    expect(0x10000, "jit_a", "whole file");
    expect(0x100ff, "jit_a", "whole file, last byte");
    expect(0x10100, NULL, "whole file, past the code");
    expect(0x30040, "jit_b", "whole file, moved code");
    expect(0x20010, "jit_b", "whole file, code before its move");

    /* the JIT still writing: cut in the move record, then inside jit_b's name */
    write_file(&o, whole - 20);
    expect(0x10010, "jit_a", "cut in the move");
    expect(0x30040, NULL, "cut in the move: not moved");
    write_file(&o, 40 + 16 + 40 + 6 + 4 + 16 + 40 + 3);
    expect(0x10010, "jit_a", "cut in a name");
    expect(0x20010, NULL, "cut in a name: no jit_b");

    /* a record that grows the file afterwards (the JIT appends): reread */
    load(&o, 0x40000, 0x10, 3, "jit_c");
    write_file(&o, o.n);
    expect(0x40008, "jit_c", "appended load");

    /* another byte order or no jitdump at all: nothing */
    buf bad = {.n = 0};
    header(&bad, 0x4454694Au);
    load(&bad, 0x10000, 0x100, 1, "jit_a");
    write_file(&bad, bad.n);
    expect(0x10010, NULL, "wrong magic");

    /* a record whose size is below its own prefix, then one that runs past the end */
    buf small = {.n = 0};
    header(&small, 0x4A695444u);
    load(&small, 0x10000, 0x100, 1, "jit_a");
    p32(&small, 0), p32(&small, 8), p64(&small, 0);
    load(&small, 0x50000, 0x100, 4, "jit_d");
    write_file(&small, small.n);
    expect(0x10010, "jit_a", "tiny record: before it");
    expect(0x50010, NULL, "tiny record: after it");
    buf past = {.n = 0};
    header(&past, 0x4A695444u);
    load(&past, 0x10000, 0x100, 1, "jit_a");
    p32(&past, 0), p32(&past, 1u << 30), p64(&past, 0);
    write_file(&past, past.n);
    expect(0x10010, "jit_a", "record past the end: before it");

    /* a name without its end inside the record: that load is left out, the next is read */
    buf noend = {.n = 0};
    header(&noend, 0x4A695444u);
    p32(&noend, 0), p32(&noend, 16 + 40 + 4), p64(&noend, 0);
    p32(&noend, 1), p32(&noend, 1), p64(&noend, 0x60000), p64(&noend, 0x60000), p64(&noend, 0x10), p64(&noend, 5);
    put(&noend, "abcd", 4);
    load(&noend, 0x70000, 0x10, 6, "jit_e");
    write_file(&noend, noend.n);
    expect(0x60008, NULL, "name without an end");
    expect(0x70008, "jit_e", "the load after it");

    /* a move of an index never loaded: nothing */
    buf orphan = {.n = 0};
    header(&orphan, 0x4A695444u);
    move(&orphan, 0x80000, 0x90000, 0x10, 9);
    write_file(&orphan, orphan.n);
    expect(0x90008, NULL, "move of an unknown index");

    unlink(g_path);
    expect(0x10010, NULL, "file removed");
    if (!g_fail) printf("PASS cpu.jitdump_files\n");
    return g_fail;
}
