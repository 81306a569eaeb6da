/* ins_resolve.c — from a function address seen at run time to an instrumented function id
 * (or "not instrumented"), for the in-thread methods (compiler hooks, audit).
 *
 * The first sighting of an address decides about it once: its module (the object that holds
 * the address, dl_iterate_phdr), its name and size (the module's ELF symbols, read once per
 * module) and the filter (ins_functions.c: regexes, minimum instructions). The decision is
 * cached in an open-addressing table keyed by address (lock-free lookups; a miss decides under
 * a mutex and publishes the decision before the key), so a filtered-out function costs one
 * lookup per call. A full table (64 probes) leaves new addresses untraced, counted. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/instrument/ins_internal.h"
#include "common/alloc.h"
#include "common/log.h"

#define CACHE_BITS 16
#define CACHE_SIZE (1u << CACHE_BITS)

typedef struct cache_slot {
    _Atomic uintptr_t key;     /* function address; 0 = empty */
    _Atomic uint32_t decision; /* function id, or OP_INS_NO_FUNC; written before key is published */
} cache_slot;

static cache_slot *g_cache;
static _Atomic uint64_t g_cache_full;
static pthread_mutex_t g_decide_lock = PTHREAD_MUTEX_INITIALIZER;

/* Modules read so far (under g_decide_lock). */
typedef struct mod_entry {
    op_ins_module m;
    uint64_t bias;
    bool ok;
    struct mod_entry *next;
} mod_entry;
static mod_entry *g_mods;

typedef struct find_ctx {
    uintptr_t addr;
    char path[4096];
    uint64_t bias;
    bool is_main, found;
    int index;
} find_ctx;

static int find_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    find_ctx *fc = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (fc->addr >= lo && fc->addr < lo + ph->p_memsz) {
            fc->found = true;
            fc->bias = info->dlpi_addr;
            fc->is_main = fc->index == 0;
            if (fc->is_main || !info->dlpi_name || !*info->dlpi_name) {
                ssize_t n = readlink("/proc/self/exe", fc->path, sizeof fc->path - 1);
                fc->path[n > 0 ? n : 0] = '\0';
            } else {
                snprintf(fc->path, sizeof fc->path, "%s", info->dlpi_name);
            }
            return 1;
        }
    }
    fc->index++;
    return 0;
}

static uint32_t decide(uintptr_t addr, int method)
{
    find_ctx fc = {.addr = addr};
    dl_iterate_phdr(find_cb, &fc);
    if (!fc.found) return OP_INS_NO_FUNC;
    mod_entry *me = g_mods;
    while (me && (me->bias != fc.bias || strcmp(me->m.path ? me->m.path : "", fc.path))) me = me->next;
    if (!me) {
        me = op_calloc(1, sizeof *me);
        if (!me) return OP_INS_NO_FUNC;
        me->bias = fc.bias;
        char err[512];
        if (fc.path[0] != '/') { /* the vDSO (linux-vdso.so.1): no file, no function to record */
            me->m.path = op_strdup(fc.path);
        } else if (op_ins_module_read(fc.path, fc.is_main, &me->m, err, sizeof err) == 0) {
            op_ins_module_select(&me->m, &g_op_ins_filter, NULL, 0);
            me->ok = true;
        } else {
            op_warn("instrument: %s", err);
            me->m.path = op_strdup(fc.path);
        }
        me->next = g_mods;
        g_mods = me;
    }
    if (!me->ok || me->m.status != OP_INS_OK) return OP_INS_NO_FUNC;
    const op_ins_fn *fn = op_ins_module_find(&me->m, (uint64_t)(addr - fc.bias));
    if (!fn || fn->status != OP_INS_OK) return OP_INS_NO_FUNC;
    int id = op_ins_func_add(fn->name, me->m.path, addr, fn->forced, method);
    return id < 0 ? OP_INS_NO_FUNC : (uint32_t)id;
}

uint32_t op_ins_resolve(uintptr_t addr, int method)
{
    if (!g_cache) return OP_INS_NO_FUNC;
    uint32_t i = (uint32_t)((addr * 0x9E3779B97F4A7C15ull) >> (64 - CACHE_BITS));
    for (uint32_t probes = 0; probes < 64; probes++, i = (i + 1) & (CACHE_SIZE - 1)) {
        uintptr_t k = atomic_load_explicit(&g_cache[i].key, memory_order_acquire);
        if (k == addr) return atomic_load_explicit(&g_cache[i].decision, memory_order_relaxed);
        if (k != 0) continue;
        /* miss: decide under the lock (another thread may have inserted it meanwhile) */
        pthread_mutex_lock(&g_decide_lock);
        for (uint32_t j = (uint32_t)((addr * 0x9E3779B97F4A7C15ull) >> (64 - CACHE_BITS)), p = 0; p < 64;
             p++, j = (j + 1) & (CACHE_SIZE - 1)) {
            uintptr_t kk = atomic_load_explicit(&g_cache[j].key, memory_order_acquire);
            if (kk == addr) {
                pthread_mutex_unlock(&g_decide_lock);
                return atomic_load_explicit(&g_cache[j].decision, memory_order_relaxed);
            }
            if (kk != 0) continue;
            uint32_t d = g_cache ? decide(addr, method) : OP_INS_NO_FUNC;
            atomic_store_explicit(&g_cache[j].decision, d, memory_order_relaxed);
            atomic_store_explicit(&g_cache[j].key, addr, memory_order_release);
            pthread_mutex_unlock(&g_decide_lock);
            return d;
        }
        pthread_mutex_unlock(&g_decide_lock);
        break;
    }
    atomic_fetch_add_explicit(&g_cache_full, 1, memory_order_relaxed);
    return OP_INS_NO_FUNC;
}


int op_ins_resolve_init(void)
{
    pthread_mutex_lock(&g_decide_lock);
    if (!g_cache) g_cache = op_calloc(CACHE_SIZE, sizeof *g_cache);
    pthread_mutex_unlock(&g_decide_lock);
    return g_cache ? 0 : -1;
}

uint64_t op_ins_resolve_cache_full(void) { return atomic_load(&g_cache_full); }
