/* ins_audit.c — libomniprof-audit.so, the LD_AUDIT library of the audit method: calls through
 * the PLT into shared libraries, seen by the dynamic loader (rtld-audit(7)), without uprobes.
 *
 * glibc loads an audit library into its own link-map namespace, before the program, with its
 * own copy of libc. It calls:
 *   la_objopen     for every object of the program: we ask for LA_FLG_BINDFROM (its calls
 *                  through the PLT) and LA_FLG_BINDTO (calls into it) on the program and every
 *                  library but the loader, the vDSO and omniprof's own; a library that only
 *                  omniprof's libraries need (libsqlite3...) gets LA_FLG_BINDTO alone (the
 *                  profiler's own calls are never audited); we remember the
 *                  instrumentation backend's link_map (which library functions are recorded
 *                  is the backend's choice: OMNIPROF_INSTRUMENT_MODULES and the regexes);
 *   la_symbind64   once per PLT symbol bound: a symbol whose function is not instrumented (or
 *                  may not be: setjmp, vfork, ...) gets LA_SYMB_NOPLTENTER|NOPLTEXIT and is
 *                  bound directly (below);
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
 * is known not to be recorded — not instrumented, unsafe, or throttled — we write its address
 * into the calling object's GOT slot ourselves, as the loader's lazy fixup does without
 * auditors; its later calls from that object go straight to the function. The slot is the
 * object's only JUMP_SLOT relocation of that name (two of one name — symbol versions — are
 * left alone); nothing is written in an object bound at load time (DT_BIND_NOW, DF_BIND_NOW,
 * DF_1_NOW, LD_BIND_NOW: its GOT may be read-only, and the loader bound it already) or when
 * LD_BIND_NOT asks the loader not to update GOTs. A symbol first called before collection
 * starts is left on the trampoline until its first call while collecting. */
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/instrument/ins_audit_bridge.h"

#define FRAME_BYTES 256

static struct link_map *_Atomic g_backend_map;
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
    bool patchable;
} plt_obj;

#define MAX_OBJS 4096
static plt_obj g_objs[MAX_OBJS];
static int g_n_objs;
static bool g_bind_not;

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

static void read_plt(struct link_map *map, uintptr_t *cookie)
{
#ifdef JUMP_SLOT
    if (g_n_objs >= MAX_OBJS || !map->l_ld) return;
    plt_obj *o = &g_objs[g_n_objs];
    memset(o, 0, sizeof *o);
    bool now = g_bind_not, rela = false;
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
    o->patchable = !now && rela && o->jmprel && o->n_rel && o->symtab && o->strtab;
    g_n_objs++;
    *cookie = (uintptr_t)o;
#else
    (void)map, (void)cookie;
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

/* Write `value` into the GOT slot through which the object of `refcook` calls `name`. */
static void bind_direct(const uintptr_t *refcook, const char *name, uintptr_t value)
{
#ifdef JUMP_SLOT
    const plt_obj *o = (const plt_obj *)*refcook;
    if (o < g_objs || o >= g_objs + MAX_OBJS || !o->patchable || !name || !value) return;
    ElfW(Addr) *slot = NULL;
    for (size_t i = 0; i < o->n_rel; i++) {
        const ElfW(Rela) *r = &o->jmprel[i];
        if (ELF64_R_TYPE(r->r_info) != JUMP_SLOT || strcmp(o->strtab + o->symtab[ELF64_R_SYM(r->r_info)].st_name, name))
            continue;
        if (slot) return; /* two relocations of one name (symbol versions): leave both to the loader */
        slot = (ElfW(Addr) *)(o->base + r->r_offset);
    }
    if (slot) __atomic_store_n(slot, (ElfW(Addr))value, __ATOMIC_RELAXED);
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
    if (!strncmp(b, "libomniprof-backend-instrument", 30)) g_backend_map = map;
    if (is_main) {
        note_needed(map, &g_prog_needed);
        read_plt(map, cookie);
        return LA_FLG_BINDFROM | LA_FLG_BINDTO;
    }
    if (!strncmp(b, "libomniprof", 11)) {
        note_needed(map, &g_prof_needed);
        return 0;
    }
    if (!*name || !strncmp(b, "linux-vdso", 10) || !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld.so", 5))
        return 0;
    if (in_names(&g_prof_needed, b) && !in_names(&g_prog_needed, b)) {
        /* a library only the profiler needs (libsqlite3 for the database writer...): the
         * program's calls into it are still seen, its own calls are not audited (through
         * glibc's profiling trampoline they cost ~20 us per recorded call in the writer) */
        note_needed(map, &g_prof_needed);
        return LA_FLG_BINDTO;
    }
    note_needed(map, &g_prog_needed);
    read_plt(map, cookie);
    return LA_FLG_BINDTO | LA_FLG_BINDFROM;
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
    bool direct = unsafe(symname);
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
