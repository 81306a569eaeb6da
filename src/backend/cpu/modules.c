/* modules.c — which module a sampled address was in at the sample's time, when libraries come
 * and go (dlclose), so that symbols name the module of the sample's time and not the one mapped
 * at that address when the run ends.
 *
 * Why: symbols are resolved once, at the end of the run (symbols.c), against the mappings of
 * that moment. A library closed during the run is gone by then, and another one loaded later
 * often takes its place: every sample of the first was named after a function of the second
 * (a program that runs liba, closes it and runs libb: all its samples in "libb"; Open MPI's
 * components: libbrotlidec, libssh2 and .debug frames that were never run).
 *
 * What is kept (under g_mod_lock):
 *   identities  a module as (path, load bias, [lo, hi) = the union of its PT_LOAD segments),
 *               numbered from 1; the same file loaded again at the same place is the same
 *               identity (same code, same symbols);
 *   retired     one entry per unload seen (identity, its range, unload time), in unload order;
 *               an unload of the identity that was the last one retired over that range only
 *               moves that entry's time (a program that loads and closes one library in a loop
 *               keeps one entry).
 * Unloads are seen through the dlclose interposer of libomniprof-preload.so: dlclose_before
 * takes a snapshot of the loaded modules, dlclose_after another; what is in the first and not
 * in the second retired at the time dlclose returned.
 *
 * Frames (op_cpu_modules_tag, called by the allocator before a sample leaves the backend).
 * Over an address range that no retired module covers, nothing changes (every program that
 * never closes a library: one relaxed load per sample). Otherwise the module of the sample's
 * time t is the first retired entry covering the address whose unload time is after t; if there
 * is none, the module loaded there now. The first module that ever covered the address keeps
 * the plain address; any later one gets its identity in bits 48-63 of the frame:
 *     frame = address | (identity << 48)       (user-space addresses are below 2^47)
 * op_cpu_modules_resolve reverses it for symbols.c: an address with an identity is resolved in
 * that identity's file at its load bias; a plain address that a retired module covered is
 * resolved in the first module that covered it; any other address in the live mappings.
 *
 * Locks: g_mod_lock is a leaf, below g_sym_lock; dl_iterate_phdr (the loader's lock) is never
 * called while g_mod_lock is held, so a program that calls dlclose with the loader's lock held
 * (from a library's destructor) cannot deadlock with an allocator that tags frames.
 * Memory: identities are bounded by the distinct (file, place) pairs the program closed or
 * replaced; retired entries by the alternations of different libraries at one place. */
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "common/alloc.h"
#include "common/clock.h"

#define OP_MOD_TAG_SHIFT 48
#define OP_MOD_ADDR_MASK ((UINT64_C(1) << OP_MOD_TAG_SHIFT) - 1)
#define OP_MOD_MAX_IDS 0x7fffu /* bit 63 marks a Python frame (python_frames.c) */

typedef struct mod_ident {
    char *path;
    uint64_t bias, lo, hi;
} mod_ident;

typedef struct mod_retired {
    uint32_t ident; /* index into g_idents */
    uint64_t lo, hi, unload_ns;
} mod_retired;

typedef struct mod_snap { /* one loaded module, as dl_iterate_phdr gives it */
    char path[512];
    uint64_t bias, lo, hi;
} mod_snap;

typedef struct mod_snapshot {
    mod_snap *v;
    size_t n, cap;
    unsigned long long subs;
} mod_snapshot;

static pthread_mutex_t g_mod_lock = PTHREAD_MUTEX_INITIALIZER;
static mod_ident *g_idents;
static size_t g_n_idents, g_cap_idents;
static mod_retired *g_retired;
static size_t g_n_retired, g_cap_retired;
static _Atomic size_t g_any_retired; /* g_n_retired, read without the lock on the fast path */
/* dlclose_before's snapshot, per thread; only the outermost dlclose of a thread compares (a
 * library's destructor may dlclose another: its unloads show in the outer comparison) */
static OP_CPU_TLS mod_snapshot *t_before;
static OP_CPU_TLS int t_depth;
static const char *g_exe_path = "/proc/self/exe";

static int snap_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    mod_snapshot *s = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) s->subs = info->dlpi_subs;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo) lo = a;
        if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    }
    if (hi <= lo) return 0;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        mod_snap *g = op_realloc(s->v, nc * sizeof *g);
        if (!g) return 1;
        s->v = g;
        s->cap = nc;
    }
    mod_snap *m = &s->v[s->n++];
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : g_exe_path;
    size_t len = strlen(name);
    if (len >= sizeof m->path) len = sizeof m->path - 1;
    memcpy(m->path, name, len);
    m->path[len] = 0;
    m->bias = info->dlpi_addr;
    m->lo = lo;
    m->hi = hi;
    return 0;
}

/* The loaded modules now (the loader's lock inside; never under g_mod_lock). */
static void snapshot(mod_snapshot *s)
{
    s->n = 0;
    s->subs = 0;
    dl_iterate_phdr(snap_cb, s);
}

static bool same_module(const mod_snap *m, uint64_t bias, uint64_t lo, uint64_t hi, const char *path)
{
    return m->bias == bias && m->lo == lo && m->hi == hi && strcmp(m->path, path) == 0;
}

/* The identity of a loaded module, made if new; UINT32_MAX when out of room. Under g_mod_lock. */
static uint32_t ident_of(const mod_snap *m)
{
    for (size_t i = 0; i < g_n_idents; i++) {
        const mod_ident *d = &g_idents[i];
        if (d->bias == m->bias && d->lo == m->lo && d->hi == m->hi && strcmp(d->path, m->path) == 0) return (uint32_t)i;
    }
    if (g_n_idents >= OP_MOD_MAX_IDS) return UINT32_MAX;
    if (g_n_idents == g_cap_idents) {
        size_t nc = g_cap_idents ? g_cap_idents * 2 : 16;
        mod_ident *g = op_realloc(g_idents, nc * sizeof *g);
        if (!g) return UINT32_MAX;
        g_idents = g;
        g_cap_idents = nc;
    }
    char *path = op_strdup(m->path);
    if (!path) return UINT32_MAX;
    g_idents[g_n_idents] = (mod_ident){path, m->bias, m->lo, m->hi};
    return (uint32_t)g_n_idents++;
}

/* Module m left at unload_ns. Under g_mod_lock. */
static void retire(const mod_snap *m, uint64_t unload_ns)
{
    uint32_t id = ident_of(m);
    if (id == UINT32_MAX) return;
    for (size_t i = g_n_retired; i-- > 0;) { /* the last module retired over this range */
        mod_retired *r = &g_retired[i];
        if (r->lo >= m->hi || m->lo >= r->hi) continue;
        if (r->ident == id) {
            r->unload_ns = unload_ns;
            return;
        }
        break;
    }
    if (g_n_retired == g_cap_retired) {
        size_t nc = g_cap_retired ? g_cap_retired * 2 : 16;
        mod_retired *g = op_realloc(g_retired, nc * sizeof *g);
        if (!g) return;
        g_retired = g;
        g_cap_retired = nc;
    }
    g_retired[g_n_retired++] = (mod_retired){id, m->lo, m->hi, unload_ns};
    atomic_store_explicit(&g_any_retired, g_n_retired, memory_order_release);
}

void op_cpu_modules_dlclose_before(void)
{
    if (t_depth++ > 0) return;
    t_before = op_calloc(1, sizeof *t_before);
    if (t_before) snapshot(t_before);
}

void op_cpu_modules_dlclose_after(void)
{
    if (t_depth > 0 && --t_depth > 0) return;
    mod_snapshot *before = t_before;
    t_before = NULL;
    if (!before) return;
    uint64_t now = op_now_ns(); /* after libc's dlclose: no sample of a module gone is later */
    mod_snapshot after = {0};
    snapshot(&after);
    if (after.subs != before->subs || after.n < before->n) { /* something was unloaded */
        pthread_mutex_lock(&g_mod_lock);
        for (size_t i = 0; i < before->n; i++) {
            const mod_snap *m = &before->v[i];
            bool kept = false;
            for (size_t k = 0; k < after.n && !kept; k++) kept = same_module(&after.v[k], m->bias, m->lo, m->hi, m->path);
            if (!kept) retire(m, now);
        }
        pthread_mutex_unlock(&g_mod_lock);
    }
    op_free(after.v);
    op_free(before->v);
    op_free(before);
}

bool op_cpu_modules_any_retired(void) { return atomic_load_explicit(&g_any_retired, memory_order_acquire) != 0; }

/* The module loaded at addr now, made an identity; UINT32_MAX if none. */
static uint32_t live_ident(uint64_t addr)
{
    mod_snapshot s = {0};
    snapshot(&s);
    uint32_t id = UINT32_MAX;
    pthread_mutex_lock(&g_mod_lock);
    for (size_t i = 0; i < s.n; i++)
        if (addr >= s.v[i].lo && addr < s.v[i].hi) {
            id = ident_of(&s.v[i]);
            break;
        }
    pthread_mutex_unlock(&g_mod_lock);
    op_free(s.v);
    return id;
}

void op_cpu_modules_tag(uint64_t *frames, uint32_t n, uint64_t ts)
{
    if (!op_cpu_modules_any_retired()) return;
    for (uint32_t f = 0; f < n; f++) {
        uint64_t addr = frames[f];
        if (addr >> OP_MOD_TAG_SHIFT) continue; /* not a user-space address, or tagged already */
        pthread_mutex_lock(&g_mod_lock);
        size_t first = SIZE_MAX, at = SIZE_MAX;
        for (size_t i = 0; i < g_n_retired; i++) {
            const mod_retired *r = &g_retired[i];
            if (addr < r->lo || addr >= r->hi) continue;
            if (first == SIZE_MAX) first = i;
            if (r->unload_ns > ts) {
                at = i;
                break;
            }
        }
        uint32_t id = UINT32_MAX;
        bool live = false;
        if (first != SIZE_MAX && at != first) {
            if (at != SIZE_MAX) id = g_retired[at].ident;
            else live = true; /* loaded there after every retired one: the module there now */
        }
        pthread_mutex_unlock(&g_mod_lock);
        if (live) id = live_ident(addr);
        if (id != UINT32_MAX) frames[f] = addr | ((uint64_t)(id + 1) << OP_MOD_TAG_SHIFT);
    }
}

bool op_cpu_modules_resolve(uint64_t frame, uint64_t *addr, char *path, size_t pathlen, uint64_t *bias)
{
    *addr = frame & OP_MOD_ADDR_MASK;
    uint64_t tag = frame >> OP_MOD_TAG_SHIFT;
    bool found = false;
    pthread_mutex_lock(&g_mod_lock);
    size_t id = SIZE_MAX;
    if (tag && tag <= g_n_idents) {
        id = (size_t)(tag - 1);
    } else if (!tag) {
        for (size_t i = 0; i < g_n_retired && id == SIZE_MAX; i++)
            if (*addr >= g_retired[i].lo && *addr < g_retired[i].hi) id = g_retired[i].ident;
    }
    if (id != SIZE_MAX) {
        snprintf(path, pathlen, "%s", g_idents[id].path);
        *bias = g_idents[id].bias;
        found = true;
    }
    pthread_mutex_unlock(&g_mod_lock);
    return found;
}

void op_cpu_modules_at_fork_child(void)
{
    /* another thread may have held a lock at the fork; the tables stay (the child has the same
     * mappings and the same history) */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_mod_lock = fresh;
}
