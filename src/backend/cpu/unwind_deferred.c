/* unwind_deferred.c — unwinding a sample after the fact, outside the signal handler (the way
 * perf's dwarf mode does): the handler (sampler.c) copies the interrupted registers and the
 * top of the stack into the thread's ring; the allocator thread that drains the ring walks
 * that copy here with libunwind's generic (remote) API.
 *
 * This file is compiled WITHOUT UNW_LOCAL_ONLY (sampler.c uses the local unwinder): its unw_*
 * are libunwind-x86_64's _Ux86_64_* symbols, which live in libunwind-x86_64.so (Debian's
 * libunwind-dev; linked by this backend's CMakeLists.txt).
 *
 * The address space (one per op_cpu_unwinder; sampler.c gives each allocator its own and uses
 * it under the allocator's lock, so libunwind's UNW_CACHE_GLOBAL cache of that space is only
 * ever used by one thread at a time) has these accessors:
 *   access_reg   the saved general registers (the whole gregs of the handler's ucontext);
 *   access_mem   a word of the stack copy when the address lies in it; a word of live memory
 *                only inside a readable PT_LOAD segment of a loaded module (the table below:
 *                code, .eh_frame, .eh_frame_hdr); an error for anything else, so a corrupt
 *                stack or a frame above the copied bytes ends the walk instead of faulting;
 *   find_proc_info  the module whose loaded range holds the ip, then its PT_GNU_EH_FRAME
 *                binary-search table through libunwind's exported dwarf_search_unwind_table,
 *                described as a UNW_INFO_FORMAT_REMOTE_TABLE (what libunwind-ptrace's
 *                _UPT_find_proc_info builds from a remote ELF image);
 *   put_unwind_info  nothing: for table-based info libunwind's parser frees what
 *                dwarf_search_unwind_table allocated itself (its own pool), and it calls this
 *                accessor only for dynamic (JIT-registered) info, which this space never
 *                reports (get_dyn_info_list_addr says "no info").
 *
 * The module table is built with dl_iterate_phdr (never in a handler) and rebuilt when the
 * loader's list of modules changed (a signature of the list: the loader's dlpi_adds/dlpi_subs
 * counters and each module's address and program headers), checked before every walk and
 * again when an ip belongs to no module; the cache of unwind recipes is flushed with it (a
 * module unloaded and another loaded at its address must not reuse its recipes).
 *
 * A walk runs inside a dl_iterate_phdr callback, that is with the loader's list lock held:
 * glibc unmaps a closed module and unlinks it from the list under that lock (dl-close.c), so no
 * module of the list can be unmapped while the walk reads its segments, and the signature read
 * under the same lock tells whether the table still matches the list. Before, a program that
 * dlcloses libraries while it is sampled (Open MPI's components in MPI_Init and MPI_Finalize)
 * could have a module unmapped under a walk: a segmentation fault of the program (mpi.cpu, and
 * cpu.dlclose with a program that loads, runs and closes a library in a loop, 1 run in 2).
 * The lock (recursive) is the one C++ exception unwinding and libunwind's own lookups take;
 * inside it the walk allocates only from libunwind's pools, and a table rebuild from malloc, as
 * build_cb did before.
 *
 * Frames come out as op_cpu_unwind's do (sampler.c): frame 0 the interrupted pc exactly, the
 * callers as return address - 1 (except after a signal frame), at most max of them.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ucontext.h>
#include <time.h>

#include <libunwind.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/unwind_walk.h"
#include "common/alloc.h"
#include "common/u64map.h"

/* libunwind exports it (libunwind-x86_64.so) without declaring it in its public headers */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
                                              unw_proc_info_t *pi, int need_unwind_info, void *arg);

typedef struct op_unw_seg { /* a readable loaded segment */
    uint64_t lo, hi;
} op_unw_seg;

typedef struct op_unw_mod {
    uint64_t lo, hi;        /* union of the module's PT_LOAD segments (libunwind's start/end ip) */
    uint64_t hdr;           /* address of .eh_frame_hdr, 0 if none usable */
    uint64_t table;         /* address of its binary-search table */
    uint64_t fde_count;
} op_unw_mod;

struct op_cpu_unwinder {
    unw_addr_space_t as;
    op_unw_mod *mods;       /* sorted by lo */
    size_t n_mods, cap_mods;
    op_unw_seg *segs;       /* sorted by lo */
    size_t n_segs, cap_segs;
    uint64_t sig;           /* the loader's list when the table was built (list_sig) */
    bool built;
    size_t last_seg;        /* the segment of the last live read (most reads hit .eh_frame) */
};

typedef struct walk_ctx {
    op_cpu_unwinder *u;
    const op_cpu_stack_copy *copy;
    const uint8_t *stack;
    bool truncated;         /* a read above the copied bytes, still inside the thread's stack */
} walk_ctx;

#define OP_UNW_CACHE_FRAMES 8192

static _Atomic uint64_t g_walks, g_walk_ns, g_truncated;

/* ---------------------------------------------------------------------------------------- */
/* Module table.                                                                            */

/* The loader's list in one word: its counters (from the first module) and every module's load
 * address and program headers, so that a list changed while the counters lag still differs. */
static int sig_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    uint64_t *sig = data;
    if (*sig == 0 && size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *sig = op_hash64x3(1, info->dlpi_adds, info->dlpi_subs);
    *sig = op_hash64x3(*sig, info->dlpi_addr, (uint64_t)(uintptr_t)info->dlpi_phdr ^ (uint64_t)info->dlpi_phnum << 48);
    return 0;
}

static uint64_t list_sig(void)
{
    uint64_t sig = 0;
    dl_iterate_phdr(sig_cb, &sig);
    return sig;
}

/* Decode one .eh_frame_hdr pointer of the encodings linkers emit (absolute, pc- or
 * data-relative, 4 or 8 bytes); -1 for anything else. */
static int hdr_read(const uint8_t **p, uint8_t enc, uint64_t hdr, uint64_t *out)
{
    if (enc == 0xff) return -1; /* DW_EH_PE_omit */
    uint64_t base = 0, pos = (uint64_t)(uintptr_t)*p;
    switch (enc & 0x70) {
    case 0x00: base = 0; break;         /* absptr */
    case 0x10: base = pos; break;       /* pcrel */
    case 0x30: base = hdr; break;       /* datarel */
    default: return -1;
    }
    switch (enc & 0x0f) {
    case 0x03: { uint32_t v; memcpy(&v, *p, 4); *p += 4; *out = base + v; return 0; }          /* udata4 */
    case 0x0b: { int32_t v; memcpy(&v, *p, 4); *p += 4; *out = base + (uint64_t)(int64_t)v; return 0; } /* sdata4 */
    case 0x00: case 0x04: case 0x0c: { uint64_t v; memcpy(&v, *p, 8); *p += 8; *out = base + v; return 0; }
    default: return -1;
    }
}

static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need) nc *= 2;
    void *p = op_realloc(*arr, nc * elem);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

static int build_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    op_cpu_unwinder *u = data;
    op_unw_mod m = {UINT64_MAX, 0, 0, 0, 0};
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD) {
            if (lo < m.lo) m.lo = lo;
            if (hi > m.hi) m.hi = hi;
            if ((ph->p_flags & PF_R) && ph->p_memsz && grow((void **)&u->segs, &u->cap_segs, u->n_segs + 1, sizeof *u->segs))
                u->segs[u->n_segs++] = (op_unw_seg){lo, hi}; /* .bss too: mapped zero pages */
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            m.hdr = lo;
        }
    }
    if (m.lo >= m.hi) return 0;
    if (m.hdr) { /* version 1; eh_frame_ptr, fde_count, then the (datarel, sdata4) table */
        const uint8_t *h = (const uint8_t *)(uintptr_t)m.hdr, *p = h + 4;
        uint64_t eh_frame = 0, count = 0;
        if (h[0] != 1 || hdr_read(&p, h[1], m.hdr, &eh_frame) < 0 || hdr_read(&p, h[2], m.hdr, &count) < 0 ||
            h[3] != 0x3b /* DW_EH_PE_datarel | DW_EH_PE_sdata4 */) {
            m.hdr = 0;
        } else {
            m.table = (uint64_t)(uintptr_t)p;
            m.fde_count = count;
        }
    }
    if (grow((void **)&u->mods, &u->cap_mods, u->n_mods + 1, sizeof *u->mods)) u->mods[u->n_mods++] = m;
    return 0;
}

static int cmp_mod(const void *a, const void *b)
{
    const op_unw_mod *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cmp_seg(const void *a, const void *b)
{
    const op_unw_seg *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Rebuild the table if the loader's list changed (or it was never built). True if rebuilt. */
static bool table_refresh(op_cpu_unwinder *u)
{
    uint64_t sig = list_sig();
    if (u->built && sig == u->sig) return false;
    u->n_mods = u->n_segs = 0;
    dl_iterate_phdr(build_cb, u);
    qsort(u->mods, u->n_mods, sizeof *u->mods, cmp_mod);
    qsort(u->segs, u->n_segs, sizeof *u->segs, cmp_seg);
    u->sig = sig;
    u->built = true;
    unw_flush_cache(u->as, 0, 0);
    return true;
}

static const op_unw_mod *mod_find(const op_cpu_unwinder *u, uint64_t ip)
{
    size_t lo = 0, hi = u->n_mods;
    while (lo < hi) { /* first module with lo > ip */
        size_t mid = (lo + hi) / 2;
        if (u->mods[mid].lo <= ip) lo = mid + 1;
        else hi = mid;
    }
    return lo && ip < u->mods[lo - 1].hi ? &u->mods[lo - 1] : NULL;
}

static bool seg_holds(op_cpu_unwinder *u, uint64_t addr, uint64_t len)
{
    /* "len <= hi - addr", not "addr + len <= hi": a garbage address near 2^64 must not wrap */
    if (u->last_seg < u->n_segs && addr >= u->segs[u->last_seg].lo && addr < u->segs[u->last_seg].hi &&
        len <= u->segs[u->last_seg].hi - addr)
        return true;
    size_t lo = 0, hi = u->n_segs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (u->segs[mid].lo <= addr) lo = mid + 1;
        else hi = mid;
    }
    /* segments may overlap at page granularity: look back a few */
    for (size_t i = lo; i > 0 && lo - i < 4; i--)
        if (addr >= u->segs[i - 1].lo && addr < u->segs[i - 1].hi && len <= u->segs[i - 1].hi - addr) {
            u->last_seg = i - 1;
            return true;
        }
    return false;
}

/* ---------------------------------------------------------------------------------------- */
/* Accessors.                                                                               */

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need, void *arg)
{
    walk_ctx *w = arg;
    const op_unw_mod *m = mod_find(w->u, ip);
    if (!m && table_refresh(w->u)) m = mod_find(w->u, ip);
    if (!m || !m->hdr) return -UNW_ENOINFO;
    unw_dyn_info_t di;
    memset(&di, 0, sizeof di);
    di.start_ip = m->lo;
    di.end_ip = m->hi;
    di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
    di.u.rti.segbase = m->hdr;
    di.u.rti.table_data = m->table;
    di.u.rti.table_len = m->fde_count * 8 / sizeof(unw_word_t); /* two int32 per entry, in words */
    return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need, arg);
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
    (void)as, (void)pi, (void)arg; /* see the file's notes */
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
    (void)as, (void)addr, (void)arg;
    return -UNW_ENOINFO;
}

/* A word of a loaded module. Under ASan uninstrumented: a module's writable segment holds
 * poisoned redzones around globals, which a walk over a bad stack may name. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OP_UNW_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(OP_UNW_ASAN)
__attribute__((no_sanitize_address))
#endif
static unw_word_t live_word(uint64_t addr)
{
    /* byte by byte: libunwind asks for words at any address (UBSan: a misaligned load), and a
     * memcpy would go through ASan's interceptor */
    const volatile unsigned char *p = (const volatile unsigned char *)(uintptr_t)addr;
    unw_word_t v = 0;
    for (size_t i = 0; i < sizeof v; i++) v |= (unw_word_t)p[i] << (8 * i);
    return v;
}

static int acc_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
    (void)as;
    walk_ctx *w = arg;
    if (write) return -UNW_EINVAL;
    const op_cpu_stack_copy *c = w->copy;
    if (addr >= c->sp && addr - c->sp <= c->len && c->len - (addr - c->sp) >= sizeof *val) {
        memcpy(val, w->stack + (addr - c->sp), sizeof *val);
        return 0;
    }
    if (seg_holds(w->u, addr, sizeof *val)) {
        *val = live_word(addr);
        return 0;
    }
    if (addr >= c->sp && addr < c->stack_hi) w->truncated = true;
    return -UNW_EINVAL;
}

static int acc_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
    (void)as;
    static const int8_t map[UNW_X86_64_RIP + 1] = {
        [UNW_X86_64_RAX] = REG_RAX, [UNW_X86_64_RDX] = REG_RDX, [UNW_X86_64_RCX] = REG_RCX,
        [UNW_X86_64_RBX] = REG_RBX, [UNW_X86_64_RSI] = REG_RSI, [UNW_X86_64_RDI] = REG_RDI,
        [UNW_X86_64_RBP] = REG_RBP, [UNW_X86_64_RSP] = REG_RSP, [UNW_X86_64_R8] = REG_R8,
        [UNW_X86_64_R9] = REG_R9,   [UNW_X86_64_R10] = REG_R10, [UNW_X86_64_R11] = REG_R11,
        [UNW_X86_64_R12] = REG_R12, [UNW_X86_64_R13] = REG_R13, [UNW_X86_64_R14] = REG_R14,
        [UNW_X86_64_R15] = REG_R15, [UNW_X86_64_RIP] = REG_RIP};
    walk_ctx *w = arg;
    if (write || reg < 0 || reg > UNW_X86_64_RIP) return -UNW_EBADREG;
    *val = w->copy->gregs[map[reg]];
    return 0;
}

static int acc_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
    (void)as, (void)reg, (void)val, (void)write, (void)arg;
    return -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
    (void)as, (void)c, (void)arg;
    return -UNW_EINVAL;
}

static int acc_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len, unw_word_t *off, void *arg)
{
    (void)as, (void)addr, (void)buf, (void)len, (void)off, (void)arg;
    return -UNW_ENOINFO;
}

/* ---------------------------------------------------------------------------------------- */
/* API (cpu_internal.h).                                                                    */

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

op_cpu_unwinder *op_cpu_unwinder_create(void)
{
    static unw_accessors_t acc = {
        .find_proc_info = acc_find_proc_info,
        .put_unwind_info = acc_put_unwind_info,
        .get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
        .access_mem = acc_mem,
        .access_reg = acc_reg,
        .access_fpreg = acc_fpreg,
        .resume = acc_resume,
        .get_proc_name = acc_proc_name,
    };
    op_cpu_unwinder *u = op_calloc(1, sizeof *u);
    if (!u) return NULL;
    u->as = unw_create_addr_space(&acc, 0);
    if (!u->as) {
        op_free(u);
        return NULL;
    }
    /* libunwind's cache of unwind recipes: per thread (the global one takes a lock that masks
     * every signal, two system calls per frame); each draining thread has its own, sized from
     * the space's: 8,192 frames (~2 MB) instead of the default 128, too few for the return
     * addresses of a large program. Entries describe this process's code, valid for any of
     * its address spaces; a table rebuild (dlopen/dlclose) flushes them. */
    unw_set_caching_policy(u->as, UNW_CACHE_PER_THREAD);
    unw_set_cache_size(u->as, OP_UNW_CACHE_FRAMES, 0);
    return u;
}

/* libunwind-x86_64 initialises itself (and opens its memory-check pipe) in the first call that
 * needs it (unw_set_caching_policy, unw_init_remote): done once here, inside the caller's fd
 * capture scope (sampler.c). */
void op_cpu_unwind_deferred_init(void)
{
    unw_accessors_t acc;
    memset(&acc, 0, sizeof acc);
    unw_addr_space_t as = unw_create_addr_space(&acc, 0);
    if (!as) return;
    unw_set_caching_policy(as, UNW_CACHE_NONE);
    unw_destroy_addr_space(as);
}

typedef struct locked_walk {
    walk_ctx w;
    uint64_t *frames;
    uint32_t max, n;
} locked_walk;

/* dl_iterate_phdr's callback, for its first module: the whole walk, with the loader's list lock
 * held (the file's notes). */
static int walk_locked(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info, (void)size;
    locked_walk *lw = data;
    table_refresh(lw->w.u);
    unw_cursor_t cursor;
    if (unw_init_remote(&cursor, lw->w.u->as, &lw->w) == 0) lw->n = op_cpu_walk_cursor(&cursor, lw->frames, lw->max);
    return 1;
}

uint32_t op_cpu_unwind_copy(op_cpu_unwinder *u, const op_cpu_stack_copy *copy, const uint8_t *stack,
                            uint64_t *frames, uint32_t max)
{
    uint64_t t0 = thread_cpu_ns(); /* CPU, not wall: the allocator may wait for a core */
    locked_walk lw = {{u, copy, stack, false}, frames, max, 0};
    dl_iterate_phdr(walk_locked, &lw);
    uint32_t n = lw.n;
    if (n == 0 && copy->gregs[REG_RIP]) frames[n++] = copy->gregs[REG_RIP];
    atomic_fetch_add_explicit(&g_walks, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_walk_ns, thread_cpu_ns() - t0, memory_order_relaxed);
    if (lw.w.truncated) atomic_fetch_add_explicit(&g_truncated, 1, memory_order_relaxed);
    return n;
}

void op_cpu_unwind_deferred_stats(uint64_t *walks, uint64_t *ns, uint64_t *truncated)
{
    *walks = atomic_load(&g_walks);
    *ns = atomic_load(&g_walk_ns);
    *truncated = atomic_load(&g_truncated);
}
