/* symbols_index.c — lookup indexes behind symbols.c (declarations and contract in
 * symbols_index.h). Why: at the end of a `--sample` run every distinct stack address is
 * symbolized; libdwfl's dwfl_module_addrinfo scans the module's whole symbol table for each
 * address and dwarf_getscopes walks the compilation unit's DIE tree from its root, so the close
 * cost grew as addresses × (symbols + DIEs): tens of seconds for a program of a few thousand
 * functions. Here each module's symbol table and each CU's code scopes are read once, sorted,
 * and every address is then two binary searches.
 *
 * Symbols: every symbol libdwfl would consider (named, defined, not SECTION/FILE/TLS), sorted by
 * address, with the running maximum of their end addresses (a backward scan stops as soon as
 * nothing earlier can reach the address). The choice follows libdwfl's: a sized symbol that
 * contains the address, non-local bindings before local ones, then GLOBAL over WEAK over LOCAL,
 * then the first in table order (aliases); without one, the nearest size-less label in the
 * address's own section that no sized symbol below the address passes, else nothing (libdwfl's
 * rules again). Symbols of different extents overlapping the address are left to libdwfl
 * (return 0).
 *
 * Scopes: per CU, the DW_TAG_subprogram and DW_TAG_inlined_subroutine DIEs that have code, each
 * with its parent among them, and one entry per address range, sorted by start (then longest
 * first). The innermost scope of pc is the containing range with the greatest start (ranges of
 * one function nest); the scan back stops at a top-level subprogram that ends before pc. The
 * chain is then the parents up to the subprogram.
 *
 * Memory: proportional to the symbols and code DIEs of the modules that were asked about; freed
 * by op_cpu_symidx_clear at a new report of the process's modules; a fork child forgets it
 * unfreed, as it does the parent's Dwfl session (another thread may have been inside it). */
#include <dwarf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/symbols_index.h"
#include "common/buf.h"
#include "common/u64map.h"

typedef struct sym_ent {
    GElf_Addr lo;
    GElf_Xword size;
    const char *name;
    uint32_t ndx;  /* table order (libdwfl keeps the first of equals) */
    uint32_t shndx; /* its section (SHN_ABS etc. for special ones) */
    uint8_t bind;
} sym_ent;

typedef struct sec_ent {
    GElf_Addr lo, hi; /* biased addresses */
    uint32_t ndx;
} sec_ent;

typedef struct scope_die {
    Dwarf_Die die;
    int parent; /* index of the enclosing recorded DIE, -1 at the CU's level */
    int tag;
} scope_die;

typedef struct scope_rng {
    Dwarf_Addr lo, hi;
    int die;
} scope_rng;

typedef struct cu_index {
    scope_die *dies;
    size_t ndies, capdies;
    scope_rng *rngs;
    size_t nrngs, caprngs;
    int ok;
} cu_index;

typedef struct mod_index {
    int sym_state;      /* 0 not read yet, 1 read, -1 no table (libdwfl decides) */
    sym_ent *syms;
    GElf_Addr *cover;   /* cover[i] = max end address of syms[0..i] */
    size_t nsyms;
    sec_ent *secs;      /* the module's allocated sections, for labels (libdwfl's same_section) */
    size_t nsecs;
    op_u64map cus;      /* CU DIE offset -> 1 + index in cu[] */
    cu_index **cu;
    size_t ncu, capcu;
} mod_index;

static op_u64map g_mods; /* Dwfl_Module* -> mod_index* */

static mod_index *module(Dwfl_Module *mod)
{
    uint64_t v;
    if (op_u64map_get(&g_mods, (uint64_t)(uintptr_t)mod, &v)) return (mod_index *)(uintptr_t)v;
    mod_index *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    if (op_u64map_put(&g_mods, (uint64_t)(uintptr_t)mod, (uint64_t)(uintptr_t)m) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

/* ------------------------------------------------------------------------------------------ */
/* Symbols                                                                                     */

/* Order of the choice among symbols that contain an address: non-local first, then GLOBAL >
 * WEAK > LOCAL > others, then earlier in the table. */
static int bind_rank(int bind)
{
    return bind == STB_GLOBAL ? 3 : bind == STB_WEAK ? 2 : bind == STB_LOCAL ? 1 : 0;
}

static int sym_rank_better(const sym_ent *a, const sym_ent *b)
{
    int ga = a->bind != STB_LOCAL, gb = b->bind != STB_LOCAL;
    if (ga != gb) return ga > gb;
    if (bind_rank(a->bind) != bind_rank(b->bind)) return bind_rank(a->bind) > bind_rank(b->bind);
    return a->ndx < b->ndx;
}

static int sym_cmp(const void *pa, const void *pb)
{
    const sym_ent *a = pa, *b = pb;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    return a->ndx < b->ndx ? -1 : a->ndx > b->ndx;
}

static int read_symbols(Dwfl_Module *mod, mod_index *m)
{
    int n = dwfl_module_getsymtab(mod);
    if (n <= 1) return -1;
    size_t cap = 0;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr value;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, NULL, NULL);
        int type = GELF_ST_TYPE(sym.st_info);
        if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || type == STT_SECTION || type == STT_FILE ||
            type == STT_TLS)
            continue;
        if (op_grow(&m->syms, &cap, m->nsyms + 1, sizeof *m->syms) != 0) return -1;
        m->syms[m->nsyms++] = (sym_ent){value, sym.st_size, name, (uint32_t)i, shndx, (uint8_t)GELF_ST_BIND(sym.st_info)};
    }
    if (!m->nsyms) return -1;
    qsort(m->syms, m->nsyms, sizeof *m->syms, sym_cmp);
    GElf_Addr bias = 0;
    Elf *elf = dwfl_module_getelf(mod, &bias);
    size_t capsec = 0;
    for (Elf_Scn *scn = elf ? elf_nextscn(elf, NULL) : NULL; scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || !sh.sh_size) continue;
        if (op_grow(&m->secs, &capsec, m->nsecs + 1, sizeof *m->secs) != 0) return -1;
        m->secs[m->nsecs++] = (sec_ent){sh.sh_addr + bias, sh.sh_addr + bias + sh.sh_size, (uint32_t)elf_ndxscn(scn)};
    }
    m->cover = malloc(m->nsyms * sizeof *m->cover);
    if (!m->cover) return -1;
    GElf_Addr end = 0;
    for (size_t i = 0; i < m->nsyms; i++) {
        GElf_Addr e = m->syms[i].lo + m->syms[i].size;
        if (e > end) end = e;
        m->cover[i] = end;
    }
    return 1;
}

/* No sized symbol contains the address (code of a hidden or static function in a library with
 * only .dynsym, a PLT stub, an assembly label): libdwfl then takes the nearest size-less symbol
 * at or below it in the address's section (an absolute one only at the address itself; higher
 * binding, then table order, on a tie), and only when no symbol of those
 * at or below the address ends above that label (min_label); else nothing. syms[0..lo) are the
 * symbols at or below the address. (One case is not libdwfl's: a non-local label exactly at the
 * address beside a local sized symbol containing it; libdwfl then names the label.) */
static const sym_ent *sizeless_label(const mod_index *m, size_t lo, Dwarf_Addr address)
{
    /* only labels at the nearest address can qualify: a sized symbol there ends above any lower one */
    GElf_Addr top = m->syms[lo - 1].lo;
    const sym_ent *label = NULL;
    uint32_t sec = SHN_UNDEF; /* the address's section */
    for (size_t k = 0; k < m->nsecs; k++)
        if (address >= m->secs[k].lo && address < m->secs[k].hi) sec = m->secs[k].ndx;
    for (size_t i = lo; i-- > 0 && m->syms[i].lo == top;) {
        const sym_ent *e = &m->syms[i];
        int same = e->shndx >= SHN_LORESERVE ? e->lo == address : e->shndx == sec && sec != SHN_UNDEF;
        if (e->size == 0 && same && (!label || sym_rank_better(e, label))) label = e;
    }
    return label && label->lo >= m->cover[lo - 1] ? label : NULL;
}

int op_cpu_symidx_name(Dwfl_Module *mod, Dwarf_Addr address, const char **name)
{
    mod_index *m = module(mod);
    if (!m) return 0;
    if (!m->sym_state) m->sym_state = read_symbols(mod, m);
    if (m->sym_state < 0) return 0;
    size_t lo = 0, hi = m->nsyms; /* lo = number of symbols starting at or below address */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->syms[mid].lo <= address) lo = mid + 1;
        else hi = mid;
    }
    const sym_ent *best = NULL;
    for (size_t i = lo; i-- > 0 && m->cover[i] > address;) {
        const sym_ent *e = &m->syms[i];
        if (e->size == 0 || address - e->lo >= e->size) continue;
        if (best && (e->lo != best->lo || e->size != best->size)) return 0; /* nested extents */
        if (!best || sym_rank_better(e, best)) best = e;
    }
    if (!best && lo > 0) best = sizeless_label(m, lo, address);
    *name = best ? best->name : NULL;
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Code scopes of a compilation unit                                                           */

static int add_scope(cu_index *c, Dwarf_Die *die, int parent, int tag)
{
    ptrdiff_t off = 0;
    Dwarf_Addr base, s, e;
    int me = -1;
    while ((off = dwarf_ranges(die, off, &base, &s, &e)) > 0) {
        if (e <= s) continue;
        if (me < 0) {
            if (op_grow(&c->dies, &c->capdies, c->ndies + 1, sizeof *c->dies) != 0) return -2;
            me = (int)c->ndies;
            c->dies[c->ndies++] = (scope_die){*die, parent, tag};
        }
        if (op_grow(&c->rngs, &c->caprngs, c->nrngs + 1, sizeof *c->rngs) != 0) return -2;
        c->rngs[c->nrngs++] = (scope_rng){s, e, me};
    }
    return me;
}

/* Records the code scopes below `parent_die` (depth-first); -1 when out of memory. */
static int walk(cu_index *c, Dwarf_Die *parent_die, int parent, int depth)
{
    Dwarf_Die child;
    if (depth > 256 || dwarf_child(parent_die, &child) != 0) return 0;
    do {
        int tag = dwarf_tag(&child);
        int me = parent;
        if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
            int r = add_scope(c, &child, parent, tag);
            if (r == -2) return -1;
            if (r >= 0) me = r;
        }
        switch (tag) { /* nothing with code below these */
        case DW_TAG_formal_parameter: case DW_TAG_variable: case DW_TAG_member: case DW_TAG_enumeration_type:
        case DW_TAG_array_type: case DW_TAG_subroutine_type: case DW_TAG_template_type_parameter:
        case DW_TAG_template_value_parameter: case DW_TAG_call_site: case DW_TAG_GNU_call_site:
            continue;
        default:
            break;
        }
        if (dwarf_haschildren(&child) > 0 && walk(c, &child, me, depth + 1) != 0) return -1;
    } while (dwarf_siblingof(&child, &child) == 0);
    return 0;
}

static int rng_cmp(const void *pa, const void *pb)
{
    const scope_rng *a = pa, *b = pb;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    if (a->hi != b->hi) return a->hi > b->hi ? -1 : 1; /* the enclosing range first */
    return a->die < b->die ? -1 : a->die > b->die;
}

static cu_index *cu_of(mod_index *m, Dwarf_Die *cu)
{
    uint64_t key = dwarf_dieoffset(cu), v;
    if (op_u64map_get(&m->cus, key, &v)) return m->cu[v - 1];
    cu_index *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (op_grow(&m->cu, &m->capcu, m->ncu + 1, sizeof *m->cu) != 0 ||
        op_u64map_put(&m->cus, key, m->ncu + 1) != 0) {
        free(c);
        return NULL;
    }
    m->cu[m->ncu++] = c;
    c->ok = walk(c, cu, -1, 0) == 0;
    if (c->ok) qsort(c->rngs, c->nrngs, sizeof *c->rngs, rng_cmp);
    return c;
}

int op_cpu_symidx_scopes(Dwfl_Module *mod, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **chain, int max,
                         Dwarf_Die **subprogram)
{
    *subprogram = NULL;
    mod_index *m = module(mod);
    cu_index *c = m ? cu_of(m, cu) : NULL;
    if (!c || !c->ok) return -1;
    size_t lo = 0, hi = c->nrngs; /* lo = ranges starting at or below pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->rngs[mid].lo <= pc) lo = mid + 1;
        else hi = mid;
    }
    int inner = -1;
    for (size_t i = lo; i-- > 0;) {
        const scope_rng *r = &c->rngs[i];
        if (pc < r->hi) {
            inner = r->die;
            break;
        }
        const scope_die *d = &c->dies[r->die];
        if (d->tag == DW_TAG_subprogram && d->parent < 0) break; /* earlier ranges: earlier functions */
    }
    int n = 0;
    for (int d = inner; d >= 0; d = c->dies[d].parent) {
        if (c->dies[d].tag == DW_TAG_subprogram) {
            *subprogram = &c->dies[d].die;
            break;
        }
        if (n < max) chain[n++] = &c->dies[d].die;
    }
    return n;
}

/* ------------------------------------------------------------------------------------------ */

static int free_module(uint64_t key, uint64_t val, void *arg)
{
    (void)key;
    (void)arg;
    mod_index *m = (mod_index *)(uintptr_t)val;
    for (size_t i = 0; i < m->ncu; i++) {
        free(m->cu[i]->dies);
        free(m->cu[i]->rngs);
        free(m->cu[i]);
    }
    free(m->cu);
    op_u64map_free(&m->cus);
    free(m->syms);
    free(m->cover);
    free(m->secs);
    free(m);
    return 0;
}

void op_cpu_symidx_clear(int release)
{
    if (release) {
        op_u64map_each(&g_mods, free_module, NULL);
        op_u64map_free(&g_mods);
    }
    memset(&g_mods, 0, sizeof g_mods);
}
