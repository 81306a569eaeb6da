/* test_symbols_index.c — the symbol indexes of the CPU backend (src/backend/cpu/symbols_index.c)
 * give exactly what libdw's per-address search gives (dwfl_module_addrinfo + dwarf_getscopes):
 * every frame (function, mangled name, file, line, inline depth, module, offset) of thousands
 * of addresses of this executable (its own code, with three levels of inlined calls, and the
 * backend's symbols.c compiled in), of libdw, of libc and, when installed, of clang's libLLVM
 * (mostly hidden functions that no symbol covers: libdwfl's label rules), symbolized once
 * through the index and once without it. Where an address is inside two or more levels of inlined calls, libdw's
 * dwarf_getscopes gives only the innermost level (its scopes continue with the abstract
 * origin's, whose subprogram ends the chain) and the physical frame's line is then the
 * innermost call site: there the innermost frame must agree and the index gives every level.
 * Also: an address inside the nested inlines resolves to the three inlined
 * frames under the physical one, and the index is faster (printed, not asserted). */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "common/clock.h"

#include "../common/check.h" /* CHECK, g_failures */

/* Three levels of inlined calls inside one physical function. */
static volatile double g_sink;
static inline __attribute__((always_inline)) double level3(double x) { return x * 1.0001 + g_sink; } /* L3 */
static inline __attribute__((always_inline)) double level2(double x) { return level3(x) * 0.5 + 1.0; }
static inline __attribute__((always_inline)) double level1(double x) { return level2(x) - level3(x * 2); }
__attribute__((noinline)) double nested_outer(long n)
{
    double s = 0;
    for (long i = 0; i < n; i++) s += level1((double)i);
    return s;
}

typedef struct frames {
    char text[4096];
    size_t len;
    int n, max_depth;
} frames;

static int collect(const omniprof_symbol_info_t *info, void *data)
{
    frames *f = data;
    int k = snprintf(f->text + f->len, sizeof f->text - f->len, "%u|%s|%s|%s|%u|%s|%llx;", info->inline_depth,
                     info->function ? info->function : "-", info->function_mangled ? info->function_mangled : "-",
                     info->file ? info->file : "-", info->line, info->module ? info->module : "-",
                     (unsigned long long)info->module_offset);
    if (k > 0 && f->len + (size_t)k < sizeof f->text) f->len += (size_t)k;
    f->n++;
    if ((int)info->inline_depth > f->max_depth) f->max_depth = (int)info->inline_depth;
    return 0;
}

#define MAXADDR 40000
static uint64_t g_addr[MAXADDR];
static int g_naddr;

typedef struct range_pick {
    const char *want; /* substring of the module's path; "" = the executable */
    uint64_t stride;
    int cap;
} range_pick;

static int pick_addresses(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const range_pick *p = data;
    int exe = !info->dlpi_name[0];
    if ((p->want[0] == 0) != exe || (!exe && !strstr(info->dlpi_name, p->want))) return 0;
    int got = 0;
    for (int i = 0; i < info->dlpi_phnum && got < p->cap; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        for (uint64_t a = info->dlpi_addr + ph->p_vaddr; a < info->dlpi_addr + ph->p_vaddr + ph->p_memsz && got < p->cap &&
                                                          g_naddr < MAXADDR;
             a += p->stride, got++)
            g_addr[g_naddr++] = a;
    }
    return 1;
}

/* The last frame of a "frame;frame;" text without its depth: the innermost one. */
static const char *innermost(const char *text)
{
    size_t n = strlen(text);
    const char *p = text + (n ? n - 1 : 0);
    while (p > text && p[-1] != ';') p--;
    const char *bar = strchr(p, '|');
    return bar ? bar : p;
}

static double symbolize_all(int use_index, char **out)
{
    op_cpu_symbols_use_index(use_index);
    uint64_t t0 = op_now_ns();
    for (int i = 0; i < g_naddr; i++) {
        frames f = {.len = 0};
        op_cpu_symbolize(g_addr[i], collect, &f);
        out[i] = strdup(f.text);
    }
    return (double)(op_now_ns() - t0) / 1e9;
}

int main(void)
{
    g_sink = (double)nested_outer(1000);
    /* a large library with only .dynsym, when installed (clang's libLLVM): most of its code is in
     * hidden functions, which no symbol covers (libdwfl's label rules, the slow path before) */
    const char *big = dlopen("libLLVM-15.so.1", RTLD_NOW | RTLD_LOCAL) ? "libLLVM-15"
                      : dlopen("libLLVM-14.so.1", RTLD_NOW | RTLD_LOCAL) ? "libLLVM-14" : NULL;
    range_pick picks[] = {{"", 3, 30000}, {"libdw", 4099, 3000}, {"libc.so", 2053, 3000}, {big ? big : "", 99991, 400}};
    if (!big) printf("no libLLVM: its part is left out\n");
    for (size_t i = 0; i < sizeof picks / sizeof picks[0] - (big ? 0 : 1); i++) {
        int before = g_naddr;
        dl_iterate_phdr(pick_addresses, &picks[i]);
        printf("%s: %d addresses\n", picks[i].want[0] ? picks[i].want : "executable", g_naddr - before);
        CHECK(g_naddr > before, "addresses of %s", picks[i].want);
    }
    char **ref = calloc((size_t)g_naddr, sizeof *ref), **idx = calloc((size_t)g_naddr, sizeof *idx);
    /* the index first: it must not depend on libdw's caches warmed by the reference pass */
    double t_idx = symbolize_all(1, idx), t_ref = symbolize_all(0, ref);
    int differ = 0, named = 0, deeper = 0;
    for (int i = 0; i < g_naddr; i++) {
        if (strstr(idx[i], "|-|-|") == NULL) named++;
        if (strstr(idx[i], ";2|") && strcmp(innermost(ref[i]), innermost(idx[i])) == 0 && strstr(ref[i], ";1|") &&
            !strstr(ref[i], ";2|")) {
            deeper++; /* libdw's scopes stop at the first inlined level: the innermost frame must agree */
            continue;
        }
        if (strcmp(ref[i], idx[i]) != 0) {
            if (differ++ < 10) printf("differs at 0x%llx:\n  libdw: %s\n  index: %s\n", (unsigned long long)g_addr[i], ref[i], idx[i]);
        }
    }
    printf("%d addresses, %d named, %d with 2+ inlined levels, %d differ; libdw %.3f s, index %.3f s (%.1fx)\n", g_naddr, named, deeper, differ, t_ref, t_idx,
           t_idx > 0 ? t_ref / t_idx : 0);
    CHECK(differ == 0, "%d of %d addresses symbolized differently", differ, g_naddr);
    CHECK(deeper > 0, "addresses inside nested inlines were found");
    CHECK(named > g_naddr / 2, "most addresses have a function (%d of %d)", named, g_naddr);

    /* an address of nested_outer inside level3: three inlined frames under the physical one */
    int deepest = 0;
    op_cpu_symbols_use_index(1);
    for (uint64_t a = (uint64_t)(uintptr_t)nested_outer; a < (uint64_t)(uintptr_t)nested_outer + 256; a++) {
        frames f = {.len = 0};
        op_cpu_symbolize(a, collect, &f);
        if (!strstr(f.text, "nested_outer")) break;
        if (f.max_depth > deepest) deepest = f.max_depth;
        if (f.max_depth == 3) {
            CHECK(strstr(f.text, "1|level1|") && strstr(f.text, "2|level2|") && strstr(f.text, "3|level3|"),
                  "inline chain level1 > level2 > level3: %s", f.text);
            break;
        }
    }
    CHECK(deepest == 3, "an address of nested_outer is 3 inlined calls deep (deepest seen %d)", deepest);
    for (int i = 0; i < g_naddr; i++) {
        free(ref[i]);
        free(idx[i]);
    }
    free(ref);
    free(idx);
    printf(g_failures ? "FAILED\n" : "OK\n");
    return g_failures ? 1 : 0;
}
