/* ins_audit.c — libomniprof-audit.so, the LD_AUDIT library of the audit method: calls through
 * the PLT into shared libraries, seen by the dynamic loader (rtld-audit(7)), without uprobes.
 *
 * glibc loads an audit library into its own link-map namespace, before the program, with its
 * own copy of libc. It calls:
 *   la_objopen     for every object of the program: we ask for LA_FLG_BINDFROM (its calls
 *                  through the PLT) and LA_FLG_BINDTO (calls into it) on the program and every
 *                  library but the vDSO; the loader gets LA_FLG_BINDTO alone (calls of
 *                  __tls_get_addr...). omniprof's own libraries and the libraries only they
 *                  need (libsqlite3 for the database writer...) are "own" objects; we
 *                  remember the instrumentation backend's link_map (which library functions
 *                  are recorded is the backend's choice: OMNIPROF_INSTRUMENT_MODULES and the
 *                  regexes);
 *   la_activity    LA_ACT_CONSISTENT: the backend's link_map, once loaded with its
 *                  dependencies, may be searched with dlsym;
 *   la_symbind64   once per PLT symbol bound: a call from an own object, and a symbol whose
 *                  function is not instrumented (or may not be: setjmp, vfork, ...), gets
 *                  LA_SYMB_NOPLTENTER|NOPLTEXIT and is bound directly (below): the profiler's
 *                  own calls are never audited, nor left on the loader's trampoline;
 *   la_x86_64_gnu_pltenter / la_x86_64_gnu_pltexit (la_aarch64_gnu_* on aarch64)
 *                  around each call of the others: the entry and the return go to the backend
 *                  through its bridge (ins_audit_bridge.h), found with dlsym on the backend's
 *                  link_map once the backend is loaded (a dlopen handle is a link_map).
 * Before the bridge exists (start-up, or a process whose tool is off) calls go through
 * untouched. pltenter sets a frame size of 256 bytes for traced calls so that la_pltexit is
 * called: the loader copies that many bytes of stack arguments for the callee, which covers
 * 32 stack-passed words (a function taking more on the stack is not supported by this method;
 * docs/instrument.md, "Limits").
 *
 * Direct binding. With an auditor that has la_pltenter, glibc (2.36 measured) sends every PLT
 * call of every audited object through its profiling trampoline (_dl_runtime_profile: all
 * registers saved, _dl_profile_fixup, pltenter skipped by the flags) and never writes the
 * final address into the caller's GOT: ~35 ns on every call of every library function, traced
 * or not (the bench's mix ran 2.3x slower with no function instrumented). So once a symbol
 * is known not to be recorded — not instrumented, unsafe, throttled, or called by an own
 * object — we write its address into the calling object's GOT slot ourselves, as the loader's
 * lazy fixup does without auditors; its later calls from that object go straight to the
 * function. The slot is the object's only JUMP_SLOT relocation of that name (two of one name
 * — symbol versions — are left alone). While it profiles, glibc binds lazily even the objects
 * linked with -z now (DT_BIND_NOW, DF_BIND_NOW, DF_1_NOW: it ignores them when an auditor has
 * la_pltenter), and their GOT lies in the RELRO segment, read-only once relocated: such a
 * slot is written between two mprotect calls (its page made writable, then read-only again;
 * an own object's RELRO stays writable after its first binding), under a lock taken with
 * every signal blocked; the segment is read from the object's program
 * headers (an object whose ELF header is not at its load address, a non-PIE program, is left
 * alone when it is linked -z now). Before this, libsqlite3 (-z now on Debian and Ubuntu; it
 * calls itself through its PLT) kept every call of the database writer on the trampoline:
 * a quarter of the writer's CPU. Nothing is written when LD_BIND_NOW binds every object at
 * load time or LD_BIND_NOT asks the loader not to update GOTs. A symbol first called before
 * collection starts is left on the trampoline until its first call while collecting (own
 * objects' symbols are bound at their first call, whenever it is). */
#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/instrument/ins_audit_bridge.h"

#define FRAME_BYTES 256

/* The backend's link_map once its dlopen has loaded it and its dependencies (la_activity,
 * LA_ACT_CONSISTENT): a dlsym on a map whose search list is not set up yet crashes in the
 * loader (seen: python3, whose first call of malloc through the PLT came meanwhile). */
static struct link_map *_Atomic g_backend_map;
static struct link_map *_Atomic g_backend_opened;
static const op_ins_audit_bridge *_Atomic g_bridge;
static _Atomic int g_bridge_failed;
static int g_n_objects;

/* An audited object's PLT relocations, for direct binding; its address is the object's cookie. */
typedef struct plt_obj {
    uintptr_t base;
    const ElfW(Rela) *jmprel;
    size_t n_rel;
    const ElfW(Sym) *symtab;
    const char *strtab;
    uintptr_t relro_lo, relro_hi; /* the pages made read-only after relocation, if any */
    bool patchable;
    bool own; /* omniprof's library, or one only they need: its calls are never audited */
    _Atomic bool relro_open; /* own object: its RELRO pages made writable for good */
} plt_obj;

#define MAX_OBJS 4096
static plt_obj g_objs[MAX_OBJS];
static int g_n_objs;
static bool g_bind_not;
static atomic_flag g_patch_lock = ATOMIC_FLAG_INIT;

#if defined(__x86_64__)
#define JUMP_SLOT R_X86_64_JUMP_SLOT
#elif defined(__aarch64__)
#define JUMP_SLOT R_AARCH64_JUMP_SLOT
#endif

#define LA_EXPORT __attribute__((visibility("default")))

LA_EXPORT unsigned int la_version(unsigned int version)
{
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* glibc rebases the dynamic section's pointers in place on x86-64 and aarch64; an unrebased
 * one (below the load address) is rebased here. */
static uintptr_t dyn_ptr(const struct link_map *map, ElfW(Addr) p)
{
    return p < map->l_addr ? map->l_addr + p : p;
}

/* The RELRO pages of the object loaded at `map` (as glibc's _dl_protect_relro rounds them),
 * from its program headers; false when they cannot be read (no ELF header at the load
 * address: a non-PIE program). */
static bool read_relro(const struct link_map *map, plt_obj *o)
{
    if (!map->l_addr) return false;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)map->l_addr;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_phentsize != sizeof(ElfW(Phdr))) return false;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(map->l_addr + eh->e_phoff);
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_GNU_RELRO) {
            o->relro_lo = (map->l_addr + ph[i].p_vaddr) & ~(page - 1);
            o->relro_hi = (map->l_addr + ph[i].p_vaddr + ph[i].p_memsz) & ~(page - 1);
        }
    return true;
}

static void read_plt(struct link_map *map, uintptr_t *cookie, bool own)
{
#ifdef JUMP_SLOT
    if (g_n_objs >= MAX_OBJS || !map->l_ld) return;
    plt_obj *o = &g_objs[g_n_objs];
    memset(o, 0, sizeof *o);
    bool now = false, rela = false;
    for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_JMPREL: o->jmprel = (const ElfW(Rela) *)dyn_ptr(map, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: o->n_rel = d->d_un.d_val / sizeof(ElfW(Rela)); break;
        case DT_PLTREL: rela = d->d_un.d_val == DT_RELA; break;
        case DT_SYMTAB: o->symtab = (const ElfW(Sym) *)dyn_ptr(map, d->d_un.d_ptr); break;
        case DT_STRTAB: o->strtab = (const char *)dyn_ptr(map, d->d_un.d_ptr); break;
        case DT_BIND_NOW: now = true; break;
        case DT_FLAGS: now |= (d->d_un.d_val & DF_BIND_NOW) != 0; break;
        case DT_FLAGS_1: now |= (d->d_un.d_val & DF_1_NOW) != 0; break;
        default: break;
        }
    }
    o->base = map->l_addr;
    o->own = own;
    bool relro_known = read_relro(map, o);
    o->patchable = !g_bind_not && (relro_known || !now) && rela && o->jmprel && o->n_rel &&
                   o->symtab && o->strtab;
    g_n_objs++;
    *cookie = (uintptr_t)o;
#else
    (void)map, (void)cookie, (void)own;
#endif
}

/* DT_NEEDED names of the objects opened so far, split by who needs them: the program and the
 * libraries it uses, or only omniprof's own libraries (the loader opens objects breadth first,
 * so a library's needers are opened before it). The names point into the objects' string
 * tables, which stay mapped. */
typedef struct name_set {
    const char *names[1024];
    int n;
} name_set;
static name_set g_prog_needed, g_prof_needed;

static bool in_names(const name_set *set, const char *base)
{
    for (int i = 0; i < set->n; i++)
        if (!strcmp(base_name(set->names[i]), base)) return true;
    return false;
}

static void note_needed(const struct link_map *map, name_set *set)
{
    if (!map->l_ld) return;
    const char *strtab = NULL;
    for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_STRTAB) strtab = (const char *)dyn_ptr(map, d->d_un.d_ptr);
    for (const ElfW(Dyn) *d = map->l_ld; strtab && d->d_tag != DT_NULL && set->n < 1024; d++)
        if (d->d_tag == DT_NEEDED) set->names[set->n++] = strtab + d->d_un.d_val;
}

/* The object of a cookie, or NULL (an object without PLT data: its cookie is its link_map). */
static plt_obj *obj_of(const uintptr_t *cookie)
{
    plt_obj *o = (plt_obj *)*cookie;
    return o >= g_objs && o < g_objs + MAX_OBJS ? o : NULL;
}

/* A slot in the RELRO segment: its page is made writable for the store, then read-only
 * again, under a lock that a signal handler on this thread cannot find taken (every signal
 * is blocked while it is held). An own object's RELRO pages are made writable once and stay
 * so (it binds hundreds of symbols: two mprotect calls, and their TLB shootdowns, each would
 * cost the process's start ~20 ms on a 2-core VM). */
static void store_relro(plt_obj *o, ElfW(Addr) *slot, ElfW(Addr) value)
{
    if (o->own && atomic_load_explicit(&o->relro_open, memory_order_acquire)) {
        __atomic_store_n(slot, value, __ATOMIC_RELAXED);
        return;
    }
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    void *at = (void *)((uintptr_t)slot & ~(page - 1));
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (atomic_flag_test_and_set_explicit(&g_patch_lock, memory_order_acquire)) sched_yield();
    if (o->own) {
        if (atomic_load_explicit(&o->relro_open, memory_order_relaxed) ||
            mprotect((void *)o->relro_lo, o->relro_hi - o->relro_lo, PROT_READ | PROT_WRITE) == 0) {
            atomic_store_explicit(&o->relro_open, true, memory_order_release);
            __atomic_store_n(slot, value, __ATOMIC_RELAXED);
        }
    } else if (mprotect(at, page, PROT_READ | PROT_WRITE) == 0) {
        __atomic_store_n(slot, value, __ATOMIC_RELAXED);
        mprotect(at, page, PROT_READ);
    }
    atomic_flag_clear_explicit(&g_patch_lock, memory_order_release);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Write `value` into the GOT slot through which the object of `refcook` calls `name`. */
static void bind_direct(const uintptr_t *refcook, const char *name, uintptr_t value)
{
#ifdef JUMP_SLOT
    plt_obj *o = obj_of(refcook);
    if (!o || !o->patchable || !name || !value) return;
    ElfW(Addr) *slot = NULL;
    for (size_t i = 0; i < o->n_rel; i++) {
        const ElfW(Rela) *r = &o->jmprel[i];
        if (ELF64_R_TYPE(r->r_info) != JUMP_SLOT || strcmp(o->strtab + o->symtab[ELF64_R_SYM(r->r_info)].st_name, name))
            continue;
        if (slot) return; /* two relocations of one name (symbol versions): leave both to the loader */
        slot = (ElfW(Addr) *)(o->base + r->r_offset);
    }
    if (!slot || *slot == (ElfW(Addr))value) return;
    if ((uintptr_t)slot >= o->relro_lo && (uintptr_t)slot < o->relro_hi)
        store_relro(o, slot, (ElfW(Addr))value);
    else
        __atomic_store_n(slot, (ElfW(Addr))value, __ATOMIC_RELAXED);
#else
    (void)refcook, (void)name, (void)value;
#endif
}

LA_EXPORT unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
    if (g_n_objects == 0) {
        const char *bn = getenv("LD_BIND_NOW"), *bt = getenv("LD_BIND_NOT");
        g_bind_not = (bn && *bn) || (bt && *bt);
    }
    bool is_main = g_n_objects++ == 0 && lmid == LM_ID_BASE;
    const char *name = map->l_name ? map->l_name : "";
    const char *b = base_name(name);
    if (!strncmp(b, "libomniprof-backend-instrument", 30)) g_backend_opened = map;
    if (is_main) {
        note_needed(map, &g_prog_needed);
        read_plt(map, cookie, false);
        return LA_FLG_BINDFROM | LA_FLG_BINDTO;
    }
    /* The loader: calls into it (__tls_get_addr, from omniprof's libraries too) reach
     * la_symbind and are bound directly; its own calls never go through a PLT. */
    if (!strncmp(b, "ld-linux", 8) || !strncmp(b, "ld.so", 5)) return LA_FLG_BINDTO;
    if (!*name || !strncmp(b, "linux-vdso", 10)) return 0;
    /* Own objects: omniprof's libraries, and a library only they need (libsqlite3 for the
     * database writer...). The program's calls into them are seen (la_symbind binds them
     * directly: they are never instrumented); their calls are bound directly at the first
     * (la_symbind64). Without LA_FLG_BINDFROM they would not reach la_symbind and glibc would
     * keep every one of them on its profiling trampoline. */
    bool own = !strncmp(b, "libomniprof", 11) ||
               (in_names(&g_prof_needed, b) && !in_names(&g_prog_needed, b));
    note_needed(map, own ? &g_prof_needed : &g_prog_needed);
    read_plt(map, cookie, own);
    return LA_FLG_BINDTO | LA_FLG_BINDFROM;
}

LA_EXPORT void la_activity(uintptr_t *cookie, unsigned int flag)
{
    (void)cookie;
    if (flag == LA_ACT_CONSISTENT && g_backend_opened && !g_backend_map)
        g_backend_map = g_backend_opened;
}

/* The bridge is looked up once the backend's link_map exists, and used once it says it is
 * ready (relocated and started: ins_audit_bridge.h). */
static const op_ins_audit_bridge *bridge(void)
{
    const op_ins_audit_bridge *b = g_bridge;
    if (!b) {
        struct link_map *map = g_backend_map;
        if (!map || g_bridge_failed) return NULL;
        b = (const op_ins_audit_bridge *)dlsym(map, OP_INS_AUDIT_BRIDGE_SYMBOL);
        if (!b) {
            g_bridge_failed = 1;
            return NULL;
        }
        g_bridge = b;
    }
    if (!__atomic_load_n(&b->ready, __ATOMIC_ACQUIRE) || b->size < sizeof(op_ins_audit_bridge)) return NULL;
    return b;
}

static bool unsafe(const char *name)
{
    static const char *const names[] = {"setjmp", "_setjmp", "__sigsetjmp", "sigsetjmp", "longjmp", "_longjmp",
                                        "siglongjmp", "__longjmp_chk", "vfork", "__vfork", "getcontext",
                                        "setcontext", "swapcontext", "makecontext", "__libc_start_main", "clone",
                                        "__cxa_throw", "_Unwind_RaiseException", "_Unwind_Resume", "pthread_exit",
                                        "exit", "_exit", "_Exit", "abort", "__stack_chk_fail", "__cxa_rethrow"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i])) return true;
    return false;
}

LA_EXPORT uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook, uintptr_t *defcook, unsigned int *flags,
                       const char *symname)
{
    (void)ndx, (void)defcook;
    /* A dlsym (glibc reports those too, when either side has a bind flag): no PLT slot is
     * being bound, and the address found (RTLD_NEXT's, say) need not be what the caller's
     * PLT slot of that name resolves to: nothing is written. This also answers bridge()'s own
     * dlsym of the bridge at once (it recursed until the stack overflowed). */
    if (*flags & LA_SYMB_DLSYM) return sym->st_value;
    const plt_obj *from = obj_of(refcook);
    bool direct = (from && from->own) || unsafe(symname);
    if (!direct) {
        const op_ins_audit_bridge *b = bridge();
        direct = b && b->active() && b->direct(sym->st_value);
    }
    if (direct) {
        *flags |= LA_SYMB_NOPLTENTER | LA_SYMB_NOPLTEXIT;
        bind_direct(refcook, symname, sym->st_value);
    }
    return sym->st_value;
}

/* The frame size for la_pltenter: FRAME_BYTES for a call recorded, -1 (no la_pltexit) for
 * one that is not; a symbol that is not recorded while collecting is bound directly. */
static long enter(const Elf64_Sym *sym, const uintptr_t *refcook, const char *symname)
{
    const op_ins_audit_bridge *b = bridge();
    if (!b || !b->active()) return -1;
    uint32_t id = b->resolve(sym->st_value);
    if (id != OP_INS_AUDIT_NO_FUNC && b->recorded(id)) {
        b->enter(id);
        return FRAME_BYTES;
    }
    if (b->direct(sym->st_value)) bind_direct(refcook, symname, sym->st_value);
    return -1;
}

static void leave(const Elf64_Sym *sym)
{
    const op_ins_audit_bridge *b = bridge();
    if (!b) return;
    uint32_t id = b->resolve(sym->st_value);
    if (id != OP_INS_AUDIT_NO_FUNC) b->exit(id);
}

/* The loader calls la_<arch>_gnu_pltenter/pltexit with its architecture's register types. */
#if defined(__x86_64__)
#define PLT_ENTER la_x86_64_gnu_pltenter
#define PLT_EXIT la_x86_64_gnu_pltexit
typedef La_x86_64_regs plt_regs;
typedef La_x86_64_retval plt_retval;
#elif defined(__aarch64__)
#define PLT_ENTER la_aarch64_gnu_pltenter
#define PLT_EXIT la_aarch64_gnu_pltexit
typedef La_aarch64_regs plt_regs;
typedef La_aarch64_retval plt_retval;
#endif

#ifdef PLT_ENTER
LA_EXPORT Elf64_Addr PLT_ENTER(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook, uintptr_t *defcook,
                               plt_regs *regs, unsigned int *flags, const char *symname, long *framesizep)
{
    (void)ndx, (void)defcook, (void)regs, (void)flags;
    *framesizep = enter(sym, refcook, symname);
    return sym->st_value;
}

LA_EXPORT unsigned int PLT_EXIT(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook, uintptr_t *defcook,
                                const plt_regs *inregs, plt_retval *outregs, const char *symname)
{
    (void)ndx, (void)refcook, (void)defcook, (void)inregs, (void)outregs, (void)symname;
    leave(sym);
    return 0;
}
#endif
