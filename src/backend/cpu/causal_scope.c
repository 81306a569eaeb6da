/* causal_scope.c — which code a causal experiment may select: the address ranges of every
 * in-scope source line (line mode) or function (function mode), and the lookup the causal
 * signal handler does on each sampled address.
 *
 * Built once, at start, with elfutils (the same Dwfl report of our own process that
 * symbols.c uses for samples): every loaded module whose path passes the binary scope
 * (%MAIN% = the program's code, by default the only one; omniprof's own libraries never)
 * contributes, in line mode, one range per row of its DWARF line tables ([address of the
 * row, address of the next row) of one sequence; rows of line 0 are the compiler's and are
 * skipped), in function mode one range per sized STT_FUNC symbol. A range whose "file:line"
 * fails the source scope, or whose function fails the function scope, is left out. Ranges of
 * one location are then given one id (a location is a "file:line" or a function name), sorted
 * by address, and adjacent ranges of one location merged.
 *
 * Invariants:
 *   (1) after op_causal_scope_build returns, g_ranges, g_names and the counts never change
 *       (g_n_ranges is published with a release store): the handler's lookup reads them
 *       without a lock (a binary search, async-signal-safe);
 *   (2) ranges are sorted by `lo` and disjoint (an overlapping range is dropped);
 *   (3) location names live for the process (the records point at them).
 *
 * %MAIN% is the main executable and, when that executable is an interpreter launcher, the
 * library its main hands over to. A launcher's own code is a thin shim: pyenv's python3.12 (CPython
 * built --enable-shared) defines only `main`, which calls Py_BytesMain in libpython3.12.so,
 * where the program's time goes; Debian's python3.11 links the same code in statically, so
 * without this rule the default scope would hold the interpreter in one build and nothing in
 * the other (no experiment could run). A launcher is recognised by an undefined symbol of the
 * executable naming one of launcher_entries; the library is the one that the dynamic linker
 * bound it to. Ordinary programs import none of them: their scope is unchanged.
 *
 * A binary in scope without line tables gets one warning naming it in line mode; an empty
 * scope is an error (the caller turns causal profiling off with that message). */
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/causal.h"
#include "backend/cpu/cpu_internal.h"
#include "common/alloc.h"
#include "common/log.h"
#include "common/strtab.h"

#define MAX_RANGES (8u << 20) /* ~200 MB of ranges: beyond, the scope is cut (logged) */

typedef struct scope_range {
    uint64_t lo, hi;
    int64_t key; /* while building: location key; afterwards the location id */
} scope_range;

static scope_range *g_ranges;
static _Atomic size_t g_n_ranges;
static char **g_names;
static _Atomic uint64_t *g_samples;
static uint32_t g_n_names;

/* ---- pattern lists ("re1;re2", %MAIN%) --------------------------------------------------- */

typedef struct patlist {
    regex_t re[32];
    uint32_t n;
    bool main; /* %MAIN% given */
} patlist;

static int patlist_compile(patlist *p, const char *text, const char *setting, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (!text) return 0;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ";\t\n", &save); tok; tok = strtok_r(NULL, ";\t\n", &save)) {
        while (*tok == ' ') tok++;
        if (!*tok) continue;
        if (strcmp(tok, "%MAIN%") == 0 || strcmp(tok, "MAIN") == 0) {
            p->main = true;
            continue;
        }
        if (p->n == sizeof p->re / sizeof p->re[0]) {
            snprintf(err, errlen, "%s: more than 32 patterns", setting);
            return -1;
        }
        int rc = regcomp(&p->re[p->n], tok, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char msg[256];
            regerror(rc, &p->re[p->n], msg, sizeof msg);
            snprintf(err, errlen, "%s: '%s' is not a POSIX extended regular expression (%s)", setting, tok, msg);
            return -1;
        }
        p->n++;
    }
    return 0;
}

static bool patlist_empty(const patlist *p) { return p->n == 0 && !p->main; }

static bool patlist_match(const patlist *p, const char *s, bool is_main)
{
    if (p->main && is_main) return true;
    for (uint32_t i = 0; i < p->n; i++)
        if (regexec(&p->re[i], s, 0, NULL, 0) == 0) return true;
    return false;
}

static void patlist_free(patlist *p)
{
    for (uint32_t i = 0; i < p->n; i++) regfree(&p->re[i]);
    p->n = 0;
}

/* ---- interpreter launchers (%MAIN%'s second member) ---------------------------------------- */

/* Entries whose import makes an executable a launcher: its main calls the entry, which runs
 * the whole program (docs/causal.md, "The default scope: interpreter launchers"). */
static const char *const launcher_entries[] = {
    "Py_BytesMain", /* CPython 3.8 and later (Programs/python.c) */
    "_Py_UnixMain", /* CPython 3.7 */
    "Py_Main",      /* CPython 2.x and 3.0-3.6 */
    "Tcl_MainEx",   /* tclsh 8.6 */
    "Tcl_Main",     /* tclsh 8.4-8.5 */
};

/* ---- building ---------------------------------------------------------------------------- */

typedef struct builder {
    const op_causal_scope_cfg *cfg;
    patlist bin_in, bin_out, src_in, src_out, fn_in, fn_out;
    char main_path[PATH_MAX];
    char launched[PATH_MAX]; /* the library a launcher's main hands over to, or "" */
    op_strtab files; /* line mode: file paths */
    op_strtab names; /* function names (function mode) */
    scope_range *raw;
    size_t n_raw, cap_raw;
    bool cut;
    uint32_t modules;
    uint32_t modules_without_lines;
} builder;

static bool add_range(builder *b, uint64_t lo, uint64_t hi, int64_t key)
{
    if (b->n_raw == b->cap_raw) {
        if (b->cap_raw >= MAX_RANGES) {
            b->cut = true;
            return false;
        }
        size_t nc = b->cap_raw ? b->cap_raw * 2 : 4096;
        scope_range *r = op_realloc(b->raw, nc * sizeof *r);
        if (!r) {
            b->cut = true;
            return false;
        }
        b->raw = r;
        b->cap_raw = nc;
    }
    b->raw[b->n_raw++] = (scope_range){lo, hi, key};
    return true;
}

static bool function_passes(builder *b, const char *name)
{
    if (!name) return patlist_empty(&b->fn_in);
    if (!patlist_empty(&b->fn_in) && !patlist_match(&b->fn_in, name, false)) return false;
    if (!patlist_empty(&b->fn_out) && patlist_match(&b->fn_out, name, false)) return false;
    return true;
}

static bool source_passes(builder *b, const char *file, int line)
{
    if (patlist_empty(&b->src_in) && patlist_empty(&b->src_out)) return true;
    char text[PATH_MAX + 16];
    snprintf(text, sizeof text, "%s:%d", file, line);
    if (!patlist_empty(&b->src_in) && !patlist_match(&b->src_in, text, false)) return false;
    if (!patlist_empty(&b->src_out) && patlist_match(&b->src_out, text, false)) return false;
    return true;
}

/* The demangled name of the function at `addr` of `mod` (static storage until next call). */
static const char *function_at(Dwfl_Module *mod, uint64_t addr, char *buf, size_t len)
{
    const char *name = dwfl_module_addrname(mod, (GElf_Addr)addr);
    if (!name) return NULL;
    char *dem = op_cpu_demangle(name);
    snprintf(buf, len, "%s", dem ? dem : name);
    free(dem);
    return buf;
}

static void add_lines(builder *b, Dwfl_Module *mod, const char *path)
{
    bool fn_filter = !patlist_empty(&b->fn_in) || !patlist_empty(&b->fn_out);
    Dwarf_Die *cu = NULL;
    Dwarf_Addr bias = 0;
    size_t rows = 0;
    while ((cu = dwfl_module_nextcu(mod, cu, &bias)) != NULL) {
        Dwarf_Lines *lines;
        size_t n;
        if (dwarf_getsrclines(cu, &lines, &n) != 0) continue;
        for (size_t i = 0; i + 1 < n; i++) {
            Dwarf_Line *l = dwarf_onesrcline(lines, i), *next = dwarf_onesrcline(lines, i + 1);
            bool end = false;
            Dwarf_Addr a = 0, z = 0;
            int lineno = 0;
            if (!l || !next || dwarf_lineendsequence(l, &end) != 0 || end) continue;
            if (dwarf_lineaddr(l, &a) != 0 || dwarf_lineaddr(next, &z) != 0 || z <= a) continue;
            if (dwarf_lineno(l, &lineno) != 0 || lineno <= 0) continue;
            const char *file = dwarf_linesrc(l, NULL, NULL);
            if (!file) continue;
            rows++;
            if (!source_passes(b, file, lineno)) continue;
            if (fn_filter) {
                char fbuf[1024];
                if (!function_passes(b, function_at(mod, a + bias, fbuf, sizeof fbuf))) continue;
            }
            uint32_t fid;
            if (op_strtab_intern(&b->files, file, strlen(file), &fid) != 0 ||
                !add_range(b, a + bias, z + bias, ((int64_t)fid << 24) | (int64_t)(lineno & 0xffffff)))
                return;
        }
    }
    if (rows == 0) {
        b->modules_without_lines++;
        op_warn("causal: %s has no line information (build it with -g); its code cannot be selected in line "
                "mode (use function mode: omniprof causal -m function)",
                path);
    }
}

static void add_functions(builder *b, Dwfl_Module *mod)
{
    bool src_filter = !patlist_empty(&b->src_in) || !patlist_empty(&b->src_out);
    int nsym = dwfl_module_getsymtab(mod);
    for (int i = 1; i < nsym; i++) {
        GElf_Sym sym;
        GElf_Addr addr = 0;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
        if (!name || !*name || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size == 0 || addr == 0) continue;
        if (name[0] == '_' && patlist_empty(&b->fn_in)) continue; /* runtime internals (_start, __libc_csu_init) */
        char *dem = op_cpu_demangle(name);
        const char *shown = dem ? dem : name;
        bool keep = function_passes(b, shown);
        if (keep && src_filter) {
            Dwfl_Line *line = dwfl_module_getsrc(mod, (Dwarf_Addr)addr);
            int lineno = 0;
            const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
            keep = file && source_passes(b, file, lineno);
        }
        uint32_t id = 0;
        int rc = keep ? op_strtab_intern(&b->names, shown, strlen(shown), &id) : 0;
        free(dem);
        if (keep && (rc != 0 || !add_range(b, addr, addr + sym.st_size, (int64_t)id))) return;
    }
}

static bool own_library(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "libomniprof", 11) == 0 || strstr(base, "vdso") != NULL || base[0] == '[';
}

/* dwfl_getmodules callback: on the main executable, find an undefined symbol naming a launcher
 * entry that resolves into another loaded object (its path into b->launched). */
static int launcher_cb(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                       void *arg)
{
    (void)userdata;
    (void)start;
    builder *b = arg;
    const char *mainfile = NULL;
    dwfl_module_getelf(mod, &(Dwarf_Addr){0});
    dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &mainfile, NULL);
    const char *path = mainfile ? mainfile : name;
    char real[PATH_MAX];
    if (!path || !realpath(path, real) || strcmp(real, b->main_path) != 0) return DWARF_CB_OK;
    int nsym = dwfl_module_getsymtab(mod);
    for (int i = 1; i < nsym; i++) {
        GElf_Sym sym;
        GElf_Addr addr = 0;
        const char *sname = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
        if (!sname || sym.st_shndx != SHN_UNDEF) continue;
        for (size_t e = 0; e < sizeof launcher_entries / sizeof launcher_entries[0]; e++) {
            if (strcmp(sname, launcher_entries[e]) != 0) continue;
            Dl_info di;
            void *fn = dlsym(RTLD_DEFAULT, sname);
            if (!fn || !dladdr(fn, &di) || !di.dli_fname || !realpath(di.dli_fname, b->launched) ||
                strcmp(b->launched, b->main_path) == 0) {
                b->launched[0] = '\0';
                continue;
            }
            op_info("causal: %s is an interpreter launcher (its main calls %s, defined in %s): "
                    "%%MAIN%% takes in that library",
                    b->main_path, sname, b->launched);
            return DWARF_CB_ABORT;
        }
    }
    return DWARF_CB_ABORT;
}

static int module_cb(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start, void *arg)
{
    (void)userdata;
    (void)start;
    builder *b = arg;
    Dwarf_Addr bias = 0;
    dwfl_module_getelf(mod, &bias);
    const char *mainfile = NULL;
    dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &mainfile, NULL);
    const char *path = mainfile ? mainfile : name;
    if (!path || own_library(path)) return DWARF_CB_OK;
    char real[PATH_MAX];
    bool is_main = realpath(path, real) && (strcmp(real, b->main_path) == 0 ||
                                            (b->launched[0] && strcmp(real, b->launched) == 0));
    if (!patlist_match(&b->bin_in, path, is_main)) return DWARF_CB_OK;
    if (patlist_match(&b->bin_out, path, is_main)) return DWARF_CB_OK;
    b->modules++;
    op_info("causal: code of %s is in scope", path);
    if (b->cfg->function_mode) add_functions(b, mod);
    else add_lines(b, mod, path);
    return b->cut ? DWARF_CB_ABORT : DWARF_CB_OK;
}

static int by_key(const void *x, const void *y)
{
    const scope_range *a = x, *b = y;
    return a->key < b->key ? -1 : a->key > b->key ? 1 : a->lo < b->lo ? -1 : a->lo > b->lo;
}

static int by_lo(const void *x, const void *y)
{
    const scope_range *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo ? 1 : a->hi < b->hi ? -1 : a->hi > b->hi;
}

/* Location ids and names (sorted by key: one id per distinct key), then the address order. */
static int finish(builder *b, char *err, size_t errlen)
{
    qsort(b->raw, b->n_raw, sizeof *b->raw, by_key);
    uint32_t n_locs = 0;
    for (size_t i = 0; i < b->n_raw; i++)
        if (i == 0 || b->raw[i].key != b->raw[i - 1].key) n_locs++;
    char **names = op_calloc(n_locs ? n_locs : 1, sizeof *names);
    _Atomic uint64_t *samples = op_calloc(n_locs ? n_locs : 1, sizeof *samples);
    if (!names || !samples) {
        op_free(names);
        op_free((void *)samples);
        snprintf(err, errlen, "out of memory for %u locations", n_locs);
        return -1;
    }
    int64_t id = -1, prev = -1;
    for (size_t i = 0; i < b->n_raw; i++) {
        int64_t key = b->raw[i].key;
        if (i == 0 || key != prev) {
            id++;
            char text[PATH_MAX + 16];
            if (b->cfg->function_mode) snprintf(text, sizeof text, "%s", op_strtab_str(&b->names, (uint32_t)key));
            else
                snprintf(text, sizeof text, "%s:%d", op_strtab_str(&b->files, (uint32_t)(key >> 24)), (int)(key & 0xffffff));
            names[id] = op_strdup(text);
            prev = key;
        }
        b->raw[i].key = id;
    }
    qsort(b->raw, b->n_raw, sizeof *b->raw, by_lo);
    size_t out = 0; /* merge adjacent ranges of one location; drop overlaps (invariant 2) */
    for (size_t i = 0; i < b->n_raw; i++) {
        scope_range r = b->raw[i];
        if (out > 0) {
            scope_range *last = &b->raw[out - 1];
            if (r.lo < last->hi) continue;
            if (r.lo == last->hi && r.key == last->key) {
                last->hi = r.hi;
                continue;
            }
        }
        b->raw[out++] = r;
    }
    g_ranges = b->raw;
    g_names = names;
    g_samples = samples;
    g_n_names = n_locs;
    b->raw = NULL;
    atomic_store_explicit(&g_n_ranges, out, memory_order_release); /* invariant 1 */
    return 0;
}

int op_causal_scope_build(const op_causal_scope_cfg *cfg, char *err, size_t errlen)
{
    builder b;
    memset(&b, 0, sizeof b);
    b.cfg = cfg;
    int rc = -1;
    if (patlist_compile(&b.bin_in, cfg->binary_scope, "OMNIPROF_CAUSAL_BINARY_SCOPE", err, errlen) ||
        patlist_compile(&b.bin_out, cfg->binary_exclude, "OMNIPROF_CAUSAL_BINARY_EXCLUDE", err, errlen) ||
        patlist_compile(&b.src_in, cfg->source_scope, "OMNIPROF_CAUSAL_SOURCE_SCOPE", err, errlen) ||
        patlist_compile(&b.src_out, cfg->source_exclude, "OMNIPROF_CAUSAL_SOURCE_EXCLUDE", err, errlen) ||
        patlist_compile(&b.fn_in, cfg->function_scope, "OMNIPROF_CAUSAL_FUNCTION_SCOPE", err, errlen) ||
        patlist_compile(&b.fn_out, cfg->function_exclude, "OMNIPROF_CAUSAL_FUNCTION_EXCLUDE", err, errlen))
        goto out;
    if (patlist_empty(&b.bin_in)) b.bin_in.main = true;
    if (!realpath("/proc/self/exe", b.main_path)) b.main_path[0] = '\0';
    static char *debuginfo_path;
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = op_cpu_find_debuginfo,
        .debuginfo_path = &debuginfo_path,
    };
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (!dwfl) {
        snprintf(err, errlen, "libdw cannot start (%s)", dwfl_errmsg(-1));
        goto out;
    }
    dwfl_report_begin(dwfl);
    int prc = dwfl_linux_proc_report(dwfl, getpid());
    dwfl_report_end(dwfl, NULL, NULL);
    if (prc != 0) {
        snprintf(err, errlen, "cannot read this process's mappings (%s)", prc > 0 ? "read error" : dwfl_errmsg(-1));
        dwfl_end(dwfl);
        goto out;
    }
    bool any_entry = false; /* no launcher entry resolves in ordinary programs: nothing to read */
    for (size_t e = 0; e < sizeof launcher_entries / sizeof launcher_entries[0] && !any_entry; e++)
        any_entry = dlsym(RTLD_DEFAULT, launcher_entries[e]) != NULL;
    if (any_entry && (b.bin_in.main || b.bin_out.main) && b.main_path[0])
        dwfl_getmodules(dwfl, launcher_cb, &b, 0);
    dwfl_getmodules(dwfl, module_cb, &b, 0);
    dwfl_end(dwfl);
    if (b.cut) op_warn("causal: the scope holds more than %u address ranges; the rest is left out (narrow it)", MAX_RANGES);
    if (b.n_raw == 0) {
        if (b.modules == 0)
            snprintf(err, errlen, "no loaded binary matches the binary scope '%s' (%%MAIN%% = %s)",
                     cfg->binary_scope ? cfg->binary_scope : "%MAIN%", b.main_path);
        else if (!cfg->function_mode && b.modules_without_lines == b.modules)
            snprintf(err, errlen, "no binary in scope has line information: build with -g, or use function mode");
        else
            snprintf(err, errlen, "no %s in scope passes the source and function scopes",
                     cfg->function_mode ? "function" : "source line");
        goto out;
    }
    rc = finish(&b, err, errlen);
    if (rc == 0)
        op_info("causal: %u %s in scope (%zu address ranges)", g_n_names, cfg->function_mode ? "functions" : "lines",
                atomic_load(&g_n_ranges));
out:
    patlist_free(&b.bin_in);
    patlist_free(&b.bin_out);
    patlist_free(&b.src_in);
    patlist_free(&b.src_out);
    patlist_free(&b.fn_in);
    patlist_free(&b.fn_out);
    op_strtab_free(&b.files);
    op_strtab_free(&b.names);
    op_free(b.raw);
    return rc;
}

int32_t op_causal_scope_lookup(uint64_t address)
{
    size_t n = atomic_load_explicit(&g_n_ranges, memory_order_acquire);
    size_t lo = 0, hi = n; /* first range with lo > address */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g_ranges[mid].lo <= address) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return -1;
    const scope_range *r = &g_ranges[lo - 1];
    return address < r->hi ? (int32_t)r->key : -1;
}

uint32_t op_causal_scope_count(void) { return atomic_load(&g_n_ranges) ? g_n_names : 0; }

const char *op_causal_scope_name(int32_t loc)
{
    return loc >= 0 && (uint32_t)loc < op_causal_scope_count() ? g_names[loc] : NULL;
}

void op_causal_scope_count_sample(int32_t loc, uint64_t weight)
{
    if (loc >= 0 && (uint32_t)loc < g_n_names) atomic_fetch_add_explicit(&g_samples[loc], weight, memory_order_relaxed);
}

uint64_t op_causal_scope_samples(int32_t loc)
{
    return loc >= 0 && (uint32_t)loc < op_causal_scope_count() ? atomic_load(&g_samples[loc]) : 0;
}

/* "file:line" whose file is the location's file or a '/'-bounded suffix of it; or a function
 * name, exactly. */
int32_t op_causal_scope_find(const char *spec)
{
    uint32_t n = op_causal_scope_count();
    size_t sl = strlen(spec);
    for (uint32_t i = 0; i < n; i++) {
        const char *name = g_names[i];
        size_t nl = strlen(name);
        if (nl < sl || strcmp(name + nl - sl, spec) != 0) continue;
        if (nl == sl || name[nl - sl - 1] == '/') return (int32_t)i;
    }
    return -1;
}
