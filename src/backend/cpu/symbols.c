/* symbols.c — code address → function, source file and line, inlined frames and module, with
 * elfutils libdw; serves omniprof_query_address_symbols through op_backend.symbolize.
 *
 * One Dwfl session describes this process's mappings (dwfl_linux_proc_report on our own
 * pid): the executable (PIE or not) and every shared library, each with its load bias, so
 * addresses from samples resolve as they are. A miss (an address in a library loaded since the
 * last report) refreshes the report once. Debug information is looked up on this machine (the
 * ELF's own sections, then build-id and .gnu_debuglink under /usr/lib/debug: debuginfo.c; never
 * debuginfod).
 *
 * Frames of one address are given outermost first (cf. symbols.h): the physical function
 * (inline_depth 0, its name from the ELF symbol table, its line the call site of the first
 * inlined callee), then each inlined subroutine (DW_TAG_inlined_subroutine from
 * dwarf_getscopes), the innermost one carrying the address's own line. Without DWARF the one
 * frame has the symbol name and no file/line; without a symbol, function is NULL.
 *
 * Lookups go through symbols_index.c (each module's symbol table and each CU's code scopes
 * read once, then binary searches; OMNIPROF_SYMBOL_INDEX=false turns it off) and fall back to
 * libdwfl's own per-address search (dwfl_module_addrinfo, dwarf_getscopes) where the index
 * cannot decide alone.
 *
 * Frames of modules that a dlclose took away (modules.c): an address whose module is no longer
 * the one mapped there (its identity in the frame's top bits, or the first module of a place
 * that another took since) is resolved in that module's own file at its load bias, in a Dwfl
 * session of its own (one per module identity, kept until the end); info.address stays the frame
 * as recorded, module_offset is the offset in that file.
 *
 * Libdw is not thread-safe for one Dwfl: every query holds g_sym_lock (lowest in the lock
 * order of cpu_internal.h). Never called from a signal handler. */
#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/symbols_index.h"
#include "common/log.h"
#include "common/settings.h"

static pthread_mutex_t g_sym_lock = PTHREAD_MUTEX_INITIALIZER;
static Dwfl *g_dwfl;
static pid_t g_dwfl_pid;
static int g_use_index = -1; /* OMNIPROF_SYMBOL_INDEX, read at the first query (-1: not yet) */

static char *g_debuginfo_path;
static const Dwfl_Callbacks g_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = op_cpu_find_debuginfo,
    .section_address = NULL,
    .debuginfo_path = &g_debuginfo_path,
};

/* Sessions of modules that are gone (modules.c), one per (file, bias). */
static const Dwfl_Callbacks g_file_callbacks = {
    .find_elf = NULL,
    .find_debuginfo = op_cpu_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_debuginfo_path,
};
typedef struct gone_session {
    char *path;
    uint64_t bias;
    Dwfl *dwfl;
    Dwfl_Module *mod; /* NULL: the file cannot be read */
} gone_session;
static gone_session *g_gone;
static size_t g_n_gone, g_cap_gone;

/* The module of file `path` loaded at `bias`, in its own session. Under g_sym_lock. */
static Dwfl_Module *gone_module(const char *path, uint64_t bias)
{
    for (size_t i = 0; i < g_n_gone; i++)
        if (g_gone[i].bias == bias && strcmp(g_gone[i].path, path) == 0) return g_gone[i].mod;
    if (g_n_gone == g_cap_gone) {
        size_t nc = g_cap_gone ? g_cap_gone * 2 : 8;
        gone_session *g = realloc(g_gone, nc * sizeof *g);
        if (!g) return NULL;
        g_gone = g;
        g_cap_gone = nc;
    }
    gone_session *e = &g_gone[g_n_gone];
    memset(e, 0, sizeof *e);
    e->path = strdup(path);
    e->bias = bias;
    e->dwfl = e->path ? dwfl_begin(&g_file_callbacks) : NULL;
    if (e->dwfl) {
        dwfl_report_begin(e->dwfl);
        e->mod = dwfl_report_elf(e->dwfl, path, path, -1, (GElf_Addr)bias, false);
        dwfl_report_end(e->dwfl, NULL, NULL);
        if (!e->mod) op_info("cpu: symbols of '%s', closed during the run, cannot be read (%s)", path, dwfl_errmsg(-1));
    }
    g_n_gone++;
    return e->mod;
}

static bool report(void)
{
    if (!g_dwfl) {
        g_dwfl = dwfl_begin(&g_callbacks);
        if (!g_dwfl) {
            op_warn("cpu: libdw cannot start (%s); no symbols", dwfl_errmsg(-1));
            return false;
        }
    }
    op_cpu_symidx_clear(1); /* modules may go or move */
    dwfl_report_begin(g_dwfl);
    int rc = dwfl_linux_proc_report(g_dwfl, getpid());
    dwfl_report_end(g_dwfl, NULL, NULL);
    g_dwfl_pid = getpid();
    if (rc != 0) {
        op_warn("cpu: cannot read this process's mappings for symbols (%s)", rc > 0 ? "read error" : dwfl_errmsg(-1));
        return false;
    }
    return true;
}

void op_cpu_symbols_reset(void)
{
    /* fork child: the parent's session belongs to its pid; start a new one lazily */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_sym_lock = fresh;
    g_dwfl = NULL; /* the parent's memory is left alone */
    g_gone = NULL;
    g_n_gone = g_cap_gone = 0;
    op_cpu_symidx_clear(0);
    g_dwfl_pid = 0;
}

/* omniprof attach's detach: the symbol sessions end (libdw closes the ELF and debug files it
 * holds open); the next query starts a new one. */
void op_cpu_symbols_close(void)
{
    pthread_mutex_lock(&g_sym_lock);
    op_cpu_symidx_clear(1); /* its entries point into the session's data */
    if (g_dwfl) dwfl_end(g_dwfl);
    g_dwfl = NULL;
    g_dwfl_pid = 0;
    for (size_t i = 0; i < g_n_gone; i++) {
        if (g_gone[i].dwfl) dwfl_end(g_gone[i].dwfl);
        free(g_gone[i].path);
    }
    free(g_gone);
    g_gone = NULL;
    g_n_gone = g_cap_gone = 0;
    pthread_mutex_unlock(&g_sym_lock);
}

void op_cpu_symbols_use_index(int on)
{
    pthread_mutex_lock(&g_sym_lock);
    g_use_index = on;
    pthread_mutex_unlock(&g_sym_lock);
}

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

char *op_cpu_demangle(const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z') return NULL;
    static demangle_fn fn;
    static int looked;
    if (!looked) {
        looked = 1;
        fn = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    }
    if (!fn) return NULL;
    int status = 0;
    char *out = fn(name, NULL, NULL, &status);
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}

static const char *call_file(Dwarf_Die *cu, Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    Dwarf_Word idx;
    if (!dwarf_attr(die, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &idx) != 0) return NULL;
    Dwarf_Files *files;
    size_t n;
    if (dwarf_getsrcfiles(cu, &files, &n) != 0 || idx >= n) return NULL;
    return dwarf_filesrc(files, idx, NULL, NULL);
}

static uint32_t call_line(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    Dwarf_Word v;
    if (!dwarf_attr(die, DW_AT_call_line, &attr) || dwarf_formudata(&attr, &v) != 0) return 0;
    return (uint32_t)v;
}

#define OP_CPU_MAX_INLINE 32

/* libdw's own search (the reference the index follows, and its fallback): the scopes of pc from
 * the CU's root, innermost first; the inlined subroutines up to the first subprogram. */
static int scopes_of(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **scopes, Dwarf_Die **chain, Dwarf_Die **subprogram)
{
    int nscopes = dwarf_getscopes(cu, pc, scopes), nchain = 0;
    for (int i = 0; i < nscopes; i++) {
        int tag = dwarf_tag(&(*scopes)[i]);
        if (tag == DW_TAG_inlined_subroutine && nchain < OP_CPU_MAX_INLINE) chain[nchain++] = &(*scopes)[i];
        else if (tag == DW_TAG_subprogram) {
            *subprogram = &(*scopes)[i];
            break;
        }
    }
    return nchain;
}

omniprof_status_t op_cpu_symbolize(uint64_t frame, omniprof_symbol_cb_t cb, void *data)
{
    if (!cb) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (op_cpu_py_is_frame(frame)) return op_cpu_py_symbolize(frame, cb, data); /* python_frames.c */
    omniprof_symbol_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    info.address = frame;
    uint64_t address = frame;
    char gone_path[512];
    uint64_t gone_bias = 0;
    bool gone = op_cpu_modules_resolve(frame, &address, gone_path, sizeof gone_path, &gone_bias);
    pthread_mutex_lock(&g_sym_lock);
    if (g_use_index < 0) g_use_index = op_setting_bool(OP_SET_SYMBOL_INDEX);
    /* JIT code a perf map names (perf_map.c), first: an anonymous page next to a library can sit
     * inside the range libdw gives that library (its .bss side), and was named as libc's */
    if (!gone) {
        uint64_t start = 0;
        const char *path = NULL;
        const char *jit = op_cpu_perf_map_lookup(address, &start, &path);
        if (jit) {
            info.function = jit;
            info.function_mangled = jit;
            info.module = path;
            info.module_offset = address - start;
            cb(&info, data);
            pthread_mutex_unlock(&g_sym_lock);
            return OMNIPROF_STATUS_SUCCESS;
        }
    }
    Dwfl_Module *mod = NULL;
    if (gone) {
        mod = gone_module(gone_path, gone_bias);
    } else {
        if ((!g_dwfl || g_dwfl_pid != getpid()) && !report()) {
            pthread_mutex_unlock(&g_sym_lock);
            cb(&info, data);
            return OMNIPROF_STATUS_ERROR;
        }
        mod = dwfl_addrmodule(g_dwfl, (Dwarf_Addr)address);
        if (!mod && report()) mod = dwfl_addrmodule(g_dwfl, (Dwarf_Addr)address);
    }
    if (!mod) { /* outside every module and every perf map entry */
        pthread_mutex_unlock(&g_sym_lock);
        cb(&info, data);
        return OMNIPROF_STATUS_ERROR;
    }
    const char *mainfile = NULL;
    const char *modname = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &mainfile, NULL);
    info.module = mainfile ? mainfile : modname;
    Dwarf_Addr elf_bias = 0;
    dwfl_module_getelf(mod, &elf_bias);
    info.module_offset = address - elf_bias;

    const char *symname = NULL;
    if (!g_use_index || !op_cpu_symidx_name(mod, (Dwarf_Addr)address, &symname)) {
        GElf_Off sym_off = 0;
        GElf_Sym sym;
        symname = dwfl_module_addrinfo(mod, (GElf_Addr)address, &sym_off, &sym, NULL, NULL, NULL);
    }

    /* the address's own line */
    const char *line_file = NULL;
    int line_no = 0;
    Dwfl_Line *line = dwfl_module_getsrc(mod, (Dwarf_Addr)address);
    if (line) line_file = dwfl_lineinfo(line, NULL, &line_no, NULL, NULL, NULL);

    /* inline chain, innermost first */
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, (Dwarf_Addr)address, &bias);
    Dwarf_Die *scopes = NULL;
    Dwarf_Die *chain[OP_CPU_MAX_INLINE]; /* inlined subroutines, innermost first */
    Dwarf_Die *subprogram = NULL;
    int nchain = cu && g_use_index
                     ? op_cpu_symidx_scopes(mod, cu, (Dwarf_Addr)address - bias, chain, OP_CPU_MAX_INLINE, &subprogram)
                     : -1;
    if (nchain < 0) nchain = cu ? scopes_of(cu, (Dwarf_Addr)address - bias, &scopes, chain, &subprogram) : 0;

    /* physical frame; "name@@VERSION" of versioned symbols loses its version */
    char unversioned[512];
    if (symname && strchr(symname, '@')) {
        size_t k = (size_t)(strchr(symname, '@') - symname);
        if (k >= sizeof unversioned) k = sizeof unversioned - 1;
        memcpy(unversioned, symname, k);
        unversioned[k] = 0;
        symname = unversioned;
    }
    const char *fname = symname;
    if (!fname && subprogram) fname = dwarf_diename(subprogram);
    char *dem = op_cpu_demangle(fname);
    info.function = dem ? dem : fname;
    info.function_mangled = fname;
    info.inline_depth = 0;
    if (nchain > 0) { /* its line is the call site of the outermost inlined callee */
        info.file = call_file(cu, chain[nchain - 1]);
        info.line = call_line(chain[nchain - 1]);
    } else {
        info.file = line_file;
        info.line = line_no > 0 ? (uint32_t)line_no : 0;
    }
    int stop = cb(&info, data);
    free(dem);
    for (int k = nchain - 1; k >= 0 && !stop; k--) {
        const char *iname = dwarf_diename(chain[k]);
        char *idem = op_cpu_demangle(iname);
        info.function = idem ? idem : iname;
        info.function_mangled = iname;
        info.inline_depth = (uint32_t)(nchain - k);
        if (k > 0) {
            info.file = call_file(cu, chain[k - 1]);
            info.line = call_line(chain[k - 1]);
        } else {
            info.file = line_file;
            info.line = line_no > 0 ? (uint32_t)line_no : 0;
        }
        stop = cb(&info, data);
        free(idem);
    }
    free(scopes);
    pthread_mutex_unlock(&g_sym_lock);
    return OMNIPROF_STATUS_SUCCESS;
}
