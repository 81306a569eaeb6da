/* ins_audit.c — libomniprof-audit.so, the LD_AUDIT library of the audit method: calls through
 * the PLT into shared libraries, seen by the dynamic loader (rtld-audit(7)), without uprobes.
 *
 * glibc loads an audit library into its own link-map namespace, before the program, with its
 * own copy of libc. It calls:
 *   la_objopen     for every object of the program: we ask for LA_FLG_BINDFROM (its calls
 *                  through the PLT) and LA_FLG_BINDTO (calls into it) on the program and every
 *                  library but the loader, the vDSO and omniprof's own, and remember the
 *                  instrumentation backend's link_map (which library functions are recorded
 *                  is the backend's choice: OMNIPROF_INSTRUMENT_MODULES and the regexes);
 *   la_symbind64   once per PLT symbol bound: a symbol whose function is not instrumented (or
 *                  may not be: setjmp, vfork, ...) gets LA_SYMB_NOPLTENTER|NOPLTEXIT and is
 *                  then called directly, at no further cost;
 *   la_x86_64_gnu_pltenter / la_x86_64_gnu_pltexit (la_aarch64_gnu_* on aarch64)
 *                  around each call of the others: the entry and the return go to the backend
 *                  through its bridge (ins_audit_bridge.h), found with dlsym on the backend's
 *                  link_map once the backend is loaded (a dlopen handle is a link_map).
 * Before the bridge exists (start-up, or a process whose tool is off) calls go through
 * untouched. pltenter sets a frame size of 256 bytes for traced calls so that la_pltexit is
 * called: the loader copies that many bytes of stack arguments for the callee, which covers
 * 32 stack-passed words (a function taking more on the stack is not supported by this method;
 * docs/instrument.md, "Limits"). */
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backend/instrument/ins_audit_bridge.h"

#define FRAME_BYTES 256

static struct link_map *_Atomic g_backend_map;
static const op_ins_audit_bridge *_Atomic g_bridge;
static _Atomic int g_bridge_failed;
static int g_n_objects;

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

LA_EXPORT unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
    (void)cookie;
    bool is_main = g_n_objects++ == 0 && lmid == LM_ID_BASE;
    const char *name = map->l_name ? map->l_name : "";
    const char *b = base_name(name);
    if (!strncmp(b, "libomniprof-backend-instrument", 30)) g_backend_map = map;
    if (is_main) return LA_FLG_BINDFROM | LA_FLG_BINDTO;
    if (!*name || !strncmp(b, "linux-vdso", 10) || !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld.so", 5) ||
        !strncmp(b, "libomniprof", 11))
        return 0;
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
    (void)ndx, (void)refcook, (void)defcook;
    if (unsafe(symname)) {
        *flags |= LA_SYMB_NOPLTENTER | LA_SYMB_NOPLTEXIT;
    } else {
        const op_ins_audit_bridge *b = bridge();
        if (b && b->active() && b->resolve(sym->st_value) == OP_INS_AUDIT_NO_FUNC)
            *flags |= LA_SYMB_NOPLTENTER | LA_SYMB_NOPLTEXIT;
    }
    return sym->st_value;
}

static long enter(const Elf64_Sym *sym)
{
    const op_ins_audit_bridge *b = bridge();
    if (!b || !b->active()) return -1;
    uint32_t id = b->resolve(sym->st_value);
    if (id == OP_INS_AUDIT_NO_FUNC) return -1;
    b->enter(id);
    return FRAME_BYTES;
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
    (void)ndx, (void)refcook, (void)defcook, (void)regs, (void)flags, (void)symname;
    *framesizep = enter(sym);
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
