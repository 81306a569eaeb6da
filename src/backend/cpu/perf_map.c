/* perf_map.c — names of JIT-compiled code from /tmp/perf-PID.map, as perf reads them.
 *
 * A JIT (CPython 3.12's perf trampolines with -X perf or PYTHONPERFSUPPORT=1, Node's
 * --perf-basic-prof, a Java agent) writes one line per piece of code it made:
 *     START SIZE NAME          (START and SIZE in hex, with or without 0x; NAME to the line end)
 * Such code lies in anonymous memory, outside every module, so libdw finds no symbol for it;
 * symbols.c asks here for an address no module covers. The file is read when first needed and
 * again when its size or modification time changed (a JIT appends while it runs); entries are
 * kept sorted by start, and of two entries with the same start the later line wins (code
 * replaced at the same place). Lookup: the last entry starting at or below the address, if
 * the address lies inside it. Called under symbols.c's lock (g_sym_lock), so no lock here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "common/alloc.h"

typedef struct perf_map_entry {
    uint64_t start, size, line;
    char *name;
} perf_map_entry;

static perf_map_entry *g_ent;
static size_t g_n;
static pid_t g_pid;
static off_t g_size = -1;
static struct timespec g_mtime;
static char g_path[64];

static int by_start(const void *a, const void *b)
{
    const perf_map_entry *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static void clear(void)
{
    for (size_t i = 0; i < g_n; i++)
        op_free(g_ent[i].name);
    op_free(g_ent);
    g_ent = NULL;
    g_n = 0;
}

static void load(void)
{
    struct stat st;
    pid_t pid = getpid();
    if (pid != g_pid) { /* a forked child has a map of its own */
        clear();
        g_pid = pid;
        g_size = -1;
        snprintf(g_path, sizeof g_path, "/tmp/perf-%d.map", (int)pid);
    }
    if (stat(g_path, &st) != 0) {
        clear();
        g_size = -1;
        return;
    }
    if (st.st_size == g_size && st.st_mtim.tv_sec == g_mtime.tv_sec &&
        st.st_mtim.tv_nsec == g_mtime.tv_nsec)
        return;
    FILE *f = fopen(g_path, "re");
    if (!f)
        return;
    clear();
    size_t cap = 0;
    char line[4096];
    uint64_t no = 0;
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
        if (!len)
            continue;
        if (g_n == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            perf_map_entry *grown = op_realloc(g_ent, ncap * sizeof *g_ent);
            if (!grown)
                break;
            g_ent = grown, cap = ncap;
        }
        char *name = op_strndup(end, len);
        if (!name)
            break;
        g_ent[g_n++] = (perf_map_entry){start, size, no++, name};
    }
    fclose(f);
    qsort(g_ent, g_n, sizeof *g_ent, by_start);
    g_size = st.st_size;
    g_mtime = st.st_mtim;
}

const char *op_cpu_perf_map_lookup(uint64_t addr, uint64_t *start, const char **path)
{
    load();
    size_t lo = 0, hi = g_n; /* the last entry with start <= addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g_ent[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return NULL;
    const perf_map_entry *e = &g_ent[lo - 1];
    if (addr - e->start >= e->size)
        return NULL;
    *start = e->start;
    *path = g_path;
    return e->name;
}
