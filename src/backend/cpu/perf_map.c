/* perf_map.c — names of JIT-compiled code from /tmp/perf-PID.map and jitdump files, as perf
 * reads them.
 *
 * A JIT (CPython 3.12's perf trampolines with -X perf or PYTHONPERFSUPPORT=1, Node's
 * --perf-basic-prof, a Java agent) writes one line per piece of code it made:
 *     START SIZE NAME          (START and SIZE in hex, with or without 0x; NAME to the line end)
 * Others (CPython 3.13's -X perf_jit, Node's --perf-prof, Java agents) write a jitdump file,
 * jit-PID.dump, a binary log of code loads and moves that the JIT maps into its own memory so
 * that a profiler finds it (docs/cpu.md, "JIT code"): it is found among this process's mappings,
 * else as /tmp/jit-PID.dump or ./jit-PID.dump; its JIT_CODE_LOAD records name code, its
 * JIT_CODE_MOVE records move it; other records and a record cut short (the JIT still writing)
 * end nothing but themselves, or the read.
 * Such code lies in anonymous memory, outside every module, so libdw finds no symbol for it;
 * symbols.c asks here for an address no module covers. Each file is read when first needed and
 * again when its size or modification time changed (a JIT appends while it runs); entries are
 * kept sorted by start, and of two entries with the same start the later one wins (code
 * replaced at the same place). Lookup: the perf map's entry, else the jitdump's: the last entry
 * starting at or below the address, if the address lies inside it. Called under symbols.c's
 * lock (g_sym_lock), so no lock here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "common/alloc.h"
#include "common/clock.h"

typedef struct perf_map_entry {
    uint64_t start, size, line, index; /* index: a jitdump's code_index (moves name it) */
    char *name;
} perf_map_entry;

typedef struct jit_source {
    perf_map_entry *ent;
    size_t n, cap;
    off_t size;
    struct timespec mtime;
    char path[4096];
} jit_source;

static jit_source g_map = {.size = -1}, g_dump = {.size = -1};
static pid_t g_pid;
static uint64_t g_dump_search_ns; /* when the jitdump was last looked for (not found) */

static int by_start(const void *a, const void *b)
{
    const perf_map_entry *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static void clear(jit_source *s)
{
    for (size_t i = 0; i < s->n; i++)
        op_free(s->ent[i].name);
    op_free(s->ent);
    s->ent = NULL;
    s->n = s->cap = 0;
}

/* The entry is added with its own copy of `name` (`len` bytes); 0 when memory ran out. */
static int add(jit_source *s, uint64_t start, uint64_t size, uint64_t index, const char *name, size_t len)
{
    if (s->n == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 256;
        perf_map_entry *grown = op_realloc(s->ent, ncap * sizeof *s->ent);
        if (!grown)
            return 0;
        s->ent = grown, s->cap = ncap;
    }
    char *copy = op_strndup(name, len);
    if (!copy)
        return 0;
    s->ent[s->n] = (perf_map_entry){start, size, s->n, index, copy};
    s->n++;
    return 1;
}

/* 1 when the file at s->path changed since it was read (or was never read); 0 unchanged; -1
 * gone (the entries are dropped). */
static int changed(jit_source *s)
{
    struct stat st;
    if (!s->path[0] || stat(s->path, &st) != 0) {
        clear(s);
        s->size = -1;
        return -1;
    }
    if (st.st_size == s->size && st.st_mtim.tv_sec == s->mtime.tv_sec && st.st_mtim.tv_nsec == s->mtime.tv_nsec)
        return 0;
    s->size = st.st_size;
    s->mtime = st.st_mtim;
    return 1;
}

/* The file opened for a new read, its old entries dropped; NULL when it did not change (or
 * cannot be opened: the entries stay). */
static FILE *reopen(jit_source *s, const char *mode)
{
    if (changed(s) != 1)
        return NULL;
    FILE *f = fopen(s->path, mode);
    if (f)
        clear(s);
    return f;
}

static void load_map(void)
{
    FILE *f = reopen(&g_map, "re");
    if (!f)
        return;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *end;
        uint64_t start = strtoull(line, &end, 16), size;
        if (end == line || (*end != ' ' && *end != '\t'))
            continue;
        char *p = end;
        size = strtoull(p, &end, 16);
        if (end == p || (*end != ' ' && *end != '\t') || !size)
            continue;
        while (*end == ' ' || *end == '\t')
            end++;
        size_t len = strcspn(end, "\r\n");
        if (len && !add(&g_map, start, size, 0, end, len))
            break;
    }
    fclose(f);
    if (g_map.n > 1)
        qsort(g_map.ent, g_map.n, sizeof *g_map.ent, by_start);
}

/* ---- jitdump ---------------------------------------------------------------------------------- */

#define JITDUMP_MAGIC 0x4A695444u /* "JiTD", in the writer's byte order (ours: a JIT of this process) */
enum { JIT_CODE_LOAD = 0, JIT_CODE_MOVE = 1 };

typedef struct {
    uint32_t magic, version, total_size, elf_mach, pad1, pid;
    uint64_t timestamp, flags;
} jitdump_header;

typedef struct {
    uint32_t id, total_size;
    uint64_t timestamp;
} jitdump_record;

typedef struct { /* after the record's prefix: JIT_CODE_LOAD, then the name and the code */
    uint32_t pid, tid;
    uint64_t vma, code_addr, code_size, code_index;
} jitdump_load;

typedef struct { /* JIT_CODE_MOVE */
    uint32_t pid, tid;
    uint64_t vma, old_code_addr, new_code_addr, code_size, code_index;
} jitdump_move;

/* g_dump.path: this process's jit-PID.dump, as mapped by its JIT, else at the usual places; ""
 * none. Looked for again at most once a second while none is found. */
static void find_dump(pid_t pid)
{
    if (g_dump.path[0] && access(g_dump.path, R_OK) == 0)
        return;
    uint64_t now = op_now_ns();
    if (g_dump_search_ns && now - g_dump_search_ns < 1000000000u)
        return;
    g_dump_search_ns = now;
    g_dump.path[0] = '\0';
    char base[32], line[4096 + 128];
    snprintf(base, sizeof base, "/jit-%d.dump", (int)pid);
    FILE *f = fopen("/proc/self/maps", "re");
    while (f && fgets(line, sizeof line, f)) {
        char *path = strchr(line, '/');
        if (!path)
            continue;
        path[strcspn(path, "\n")] = '\0';
        size_t n = strlen(path), b = strlen(base);
        if (n > b && strcmp(path + n - b, base) == 0 && n < sizeof g_dump.path) {
            memcpy(g_dump.path, path, n + 1);
            break;
        }
    }
    if (f)
        fclose(f);
    if (!g_dump.path[0]) {
        char cand[2][48];
        snprintf(cand[0], sizeof cand[0], "/tmp%s", base);
        snprintf(cand[1], sizeof cand[1], "%s", base + 1);
        for (int i = 0; i < 2 && !g_dump.path[0]; i++)
            if (access(cand[i], R_OK) == 0)
                snprintf(g_dump.path, sizeof g_dump.path, "%s", cand[i]);
    }
}

/* code_index -> the entry of its latest load or move (moves keep the name): open addressing,
 * slots hold entry number + 1, 0 empty; a power of two at least twice the entries. */
static size_t *g_slots, g_nslots;

static size_t *slot_of(uint64_t index)
{
    size_t i = (size_t)(index * 0x9E3779B97F4A7C15ull) & (g_nslots - 1);
    while (g_slots[i] && g_dump.ent[g_slots[i] - 1].index != index)
        i = (i + 1) & (g_nslots - 1);
    return &g_slots[i];
}

/* Notes entry `e` of g_dump as the latest of its code_index; 0 when memory ran out. */
static int note_index(size_t e)
{
    if (2 * (e + 1) > g_nslots) {
        size_t n = g_nslots ? g_nslots * 2 : 1024;
        size_t *grown = op_calloc(n, sizeof *grown);
        if (!grown)
            return 0;
        op_free(g_slots);
        g_slots = grown, g_nslots = n;
        for (size_t i = 0; i < e; i++) /* later entries of an index overwrite earlier ones */
            *slot_of(g_dump.ent[i].index) = i + 1;
    }
    *slot_of(g_dump.ent[e].index) = e + 1;
    return 1;
}

static const char *name_of_index(uint64_t index)
{
    size_t *slot = g_nslots ? slot_of(index) : NULL;
    return slot && *slot ? g_dump.ent[*slot - 1].name : NULL;
}

static void load_dump(pid_t pid)
{
    find_dump(pid);
    FILE *f = reopen(&g_dump, "rbe");
    if (!f)
        return;
    if (g_nslots)
        memset(g_slots, 0, g_nslots * sizeof *g_slots);
    jitdump_header h;
    if (fread(&h, sizeof h, 1, f) != 1 || h.magic != JITDUMP_MAGIC || h.total_size < sizeof h ||
        fseeko(f, (off_t)h.total_size, SEEK_SET) != 0) {
        fclose(f);
        return;
    }
    char name[4096];
    jitdump_record r;
    while (fread(&r, sizeof r, 1, f) == 1 && r.total_size >= sizeof r) {
        off_t next = ftello(f) + (off_t)(r.total_size - sizeof r);
        if (r.id == JIT_CODE_LOAD && r.total_size >= sizeof r + sizeof(jitdump_load)) {
            jitdump_load l;
            if (fread(&l, sizeof l, 1, f) != 1)
                break;
            size_t room = r.total_size - sizeof r - sizeof l, len = 0;
            if (room > sizeof name)
                room = sizeof name;
            if (fread(name, 1, room, f) != room)
                break; /* cut short: the JIT is writing it */
            while (len < room && name[len])
                len++;
            if (len == room || !l.code_size) /* no end to the name in the record */
                goto next;
            if (!add(&g_dump, l.code_addr, l.code_size, l.code_index, name, len) || !note_index(g_dump.n - 1))
                break;
        } else if (r.id == JIT_CODE_MOVE && r.total_size >= sizeof r + sizeof(jitdump_move)) {
            jitdump_move m;
            if (fread(&m, sizeof m, 1, f) != 1)
                break;
            const char *was = name_of_index(m.code_index);
            if (was && m.code_size) {
                snprintf(name, sizeof name, "%s", was); /* add() may move the entries */
                if (!add(&g_dump, m.new_code_addr, m.code_size, m.code_index, name, strlen(name)) ||
                    !note_index(g_dump.n - 1))
                    break;
            }
        }
    next:
        if (fseeko(f, next, SEEK_SET) != 0)
            break;
    }
    fclose(f);
    if (g_dump.n > 1)
        qsort(g_dump.ent, g_dump.n, sizeof *g_dump.ent, by_start);
}

/* ---- lookup ----------------------------------------------------------------------------------- */

static const perf_map_entry *find(const jit_source *s, uint64_t addr)
{
    size_t lo = 0, hi = s->n; /* the last entry with start <= addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ent[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo || addr - s->ent[lo - 1].start >= s->ent[lo - 1].size)
        return NULL;
    return &s->ent[lo - 1];
}

const char *op_cpu_perf_map_lookup(uint64_t addr, uint64_t *start, const char **path)
{
    pid_t pid = getpid();
    if (pid != g_pid) { /* a forked child has files of its own */
        clear(&g_map), clear(&g_dump);
        g_map.size = g_dump.size = -1;
        g_dump.path[0] = '\0';
        g_dump_search_ns = 0;
        g_pid = pid;
        snprintf(g_map.path, sizeof g_map.path, "/tmp/perf-%d.map", (int)pid);
    }
    load_map();
    const jit_source *s = &g_map;
    const perf_map_entry *e = find(s, addr);
    if (!e) {
        load_dump(pid);
        s = &g_dump;
        e = find(s, addr);
    }
    if (!e)
        return NULL;
    *start = e->start;
    *path = s->path;
    return e->name;
}
