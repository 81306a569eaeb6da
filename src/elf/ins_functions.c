/* ins_functions.c — the functions of an ELF module and the reasons some are not instrumented
 * (ins_functions.h).
 *
 * Where the names come from:
 *  - functions: STT_FUNC and STT_GNU_IFUNC symbols of .symtab and .dynsym that are defined
 *    (st_shndx != SHN_UNDEF) at a non-zero address; the same (name, address) from both tables
 *    counts once; several names at one address are one function (the first name, preferring a
 *    global one, is instrumented and the others are ALIAS);
 *  - code without a symbol: the .eh_frame_hdr search table lists the start of every function
 *    that has unwind information; a start that no symbol covers is listed as NO_SYMBOL (a
 *    stripped local function: a uprobe could be placed, but the region would have no name);
 *  - inlined functions: DWARF subprograms with DW_AT_inline that have no symbol of their name
 *    (every copy was inlined into callers: there is no entry to probe);
 *  - PLT imports: the JUMP_SLOT relocations of .rela.plt, i.e. what the audit interface can see.
 *
 * Instruction counts come from capstone when the build has it (exact, x86-64 and aarch64);
 * otherwise a function's size in bytes divided by 4, said so in `--list`. Capstone also tells
 * which functions are straight-line: no call, no system call, no branch backwards (a loop),
 * out of the function (a tail call) or through a register, no repeated string instruction.
 * Every call of such a function runs each of its instructions at most once: it lasts about as
 * many cycles as it has instructions (tens of nanoseconds for a few hundred), far below 20
 * times what the cheapest method costs per call (docs/PERFORMANCE.md), so the defaults leave
 * it out (STRAIGHT; -i or --min-instructions 0 takes it). The file offset of an
 * entry (what the uprobe PMU wants) is found through the PT_LOAD segment that holds it. */
#include "elf/ins_functions.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef OMNIPROF_HAVE_CAPSTONE
#include <capstone/capstone.h>
#endif

#include "common/alloc.h"
#include "common/number.h"

static const char *const g_reasons[OP_INS__COUNT] = {
    [OP_INS_OK] = "instrumented",
    [OP_INS_TOO_SMALL] = "too small (fewer instructions than --min-instructions)",
    [OP_INS_STRAIGHT] = "too short (straight-line: no loop, no call; each call runs at most its instructions once)",
    [OP_INS_EXCLUDED] = "excluded by regex (-e)",
    [OP_INS_NOT_INCLUDED] = "not matched by the include regex (-i)",
    [OP_INS_MODULE] = "excluded module",
    [OP_INS_NO_SYMBOL] = "no symbol (code with unwind info but no name)",
    [OP_INS_INLINED] = "inlined (no out-of-line copy to probe)",
    [OP_INS_ALIAS] = "alias of another name at the same address",
    [OP_INS_UNSAFE] = "unsafe to instrument (start-up code, setjmp/longjmp, vfork, ...)",
    [OP_INS_NOT_PLT] = "not called through the PLT of a selected module (LD_AUDIT sees only those)",
    [OP_INS_LIMIT] = "over the function limit (OMNIPROF_INSTRUMENT_MAX_FUNCTIONS)",
};

const char *op_ins_status_reason(op_ins_status s)
{
    return (unsigned)s < OP_INS__COUNT && g_reasons[s] ? g_reasons[s] : "unknown";
}

int op_ins_throttle_parse(const char *text, uint64_t *calls, uint64_t *ns, char *why, size_t whylen)
{
    *calls = *ns = 0;
    if (!text || !strcmp(text, "auto")) return 1;
    if (!strcmp(text, "off") || !strcmp(text, "0")) return 0;
    const char *colon = strchr(text, ':');
    char first[32];
    size_t n = colon ? (size_t)(colon - text) : 0;
    int rc = OP_NUM_SYNTAX;
    if (colon && n < sizeof first && strspn(text, "0123456789") == n && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
        memcpy(first, text, n);
        first[n] = '\0';
        rc = op_num_u64(first, calls);
        if (rc == OP_NUM_OK) rc = op_num_u64(colon + 1, ns);
    }
    if (rc != OP_NUM_OK) {
        snprintf(why, whylen, "expected auto, off or CALLS:NS with CALLS and NS non-negative integers (e.g. 1000:20000)%s",
                 text[0] == '-' || (colon && colon[1] == '-') ? "; they cannot be negative" : "");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Filter and module selection.                                                             */

static int compile(regex_t *re, bool *has, const char *text, const char *what, char *err, size_t errlen)
{
    *has = false;
    if (!text || !*text) return 0;
    int rc = regcomp(re, text, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char msg[256];
        regerror(rc, re, msg, sizeof msg);
        snprintf(err, errlen, "%s regex '%s' is not a valid POSIX extended regular expression: %s", what, text, msg);
        return -1;
    }
    *has = true;
    return 0;
}

int op_ins_filter_init(op_ins_filter *f, const char *include, const char *exclude, const char *modules,
                       uint64_t min_insns, op_ins_method method, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    f->min_insns = min_insns;
    f->method = method;
    if (compile(&f->include, &f->has_include, include, "include (-i)", err, errlen) != 0 ||
        compile(&f->exclude, &f->has_exclude, exclude, "exclude (-e)", err, errlen) != 0 ||
        compile(&f->modules, &f->has_modules, modules, "module (-m)", err, errlen) != 0) {
        op_ins_filter_fini(f);
        return -1;
    }
    return 0;
}

void op_ins_filter_fini(op_ins_filter *f)
{
    if (f->has_include) regfree(&f->include);
    if (f->has_exclude) regfree(&f->exclude);
    if (f->has_modules) regfree(&f->modules);
    f->has_include = f->has_exclude = f->has_modules = false;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

bool op_ins_module_selected(const op_ins_filter *f, const char *path, bool is_main, const char **reason)
{
    const char *b = base_name(path);
    const char *why = NULL;
    if (!*path || !strncmp(b, "linux-vdso", 10) || !strncmp(b, "linux-gate", 10)) why = "the kernel's vDSO";
    else if (!strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-musl", 7) || !strncmp(b, "ld.so", 5))
        why = "the dynamic loader (always excluded)";
    else if (!strncmp(b, "libomniprof", 11)) why = "omniprof's own library (always excluded)";
    else if (!is_main && f->has_modules && regexec(&f->modules, path, 0, NULL, 0) != 0)
        why = "a shared library not matched by -m REGEX";
    else if (!is_main && !f->has_modules && f->method != OP_INS_METHOD_AUDIT)
        why = "a shared library (select libraries with -m REGEX)";
    if (reason) *reason = why;
    return why == NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Reading the ELF file.                                                                    */

typedef struct seg {
    uint64_t vaddr, offset, filesz;
    bool exec;
} seg;

typedef struct reader {
    Elf *elf;
    seg segs[32];
    int n_segs;
    int machine;
} reader;

static bool vaddr_to_offset(const reader *r, uint64_t vaddr, uint64_t *off, bool *exec)
{
    for (int i = 0; i < r->n_segs; i++)
        if (vaddr >= r->segs[i].vaddr && vaddr < r->segs[i].vaddr + r->segs[i].filesz) {
            *off = vaddr - r->segs[i].vaddr + r->segs[i].offset;
            if (exec) *exec = r->segs[i].exec;
            return true;
        }
    return false;
}

static op_ins_fn *add_fn(op_ins_module *m)
{
    if (m->n_fns == m->cap_fns) {
        size_t cap = m->cap_fns ? m->cap_fns * 2 : 256;
        op_ins_fn *p = op_realloc(m->fns, cap * sizeof *p);
        if (!p) return NULL;
        m->fns = p;
        m->cap_fns = cap;
    }
    op_ins_fn *fn = &m->fns[m->n_fns++];
    memset(fn, 0, sizeof *fn);
    return fn;
}

static void read_symbols(reader *r, op_ins_module *m, Elf_Scn *scn, GElf_Shdr *sh, bool dynamic)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    if (!data || !sh->sh_entsize) return;
    size_t n = sh->sh_size / sh->sh_entsize;
    for (size_t i = 0; i < n; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(data, (int)i, &sym)) continue;
        int type = GELF_ST_TYPE(sym.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
        const char *name = elf_strptr(r->elf, sh->sh_link, sym.st_name);
        if (!name || !*name) continue;
        uint64_t off;
        bool exec = false;
        if (!vaddr_to_offset(r, sym.st_value, &off, &exec) || !exec) continue;
        /* versioned duplicates in .dynsym (memcpy@GLIBC_2.2.5 and memcpy@@GLIBC_2.14) share
         * the name; the same (name, address) from both tables counts once */
        bool dup = false;
        for (size_t k = 0; k < m->n_fns && !dup; k++)
            if (m->fns[k].vaddr == sym.st_value && !strcmp(m->fns[k].name, name)) {
                dup = true;
                if (dynamic) m->fns[k].exported = true;
            }
        if (dup) continue;
        op_ins_fn *fn = add_fn(m);
        if (!fn) return;
        fn->name = op_strdup(name);
        fn->vaddr = sym.st_value;
        fn->file_offset = off;
        fn->size = sym.st_size;
        fn->exported = dynamic;
        /* keep the binding in `forced` for now: global names win the alias choice below */
        fn->forced = GELF_ST_BIND(sym.st_info) != STB_LOCAL;
    }
}

static void read_imports(reader *r, op_ins_module *m, Elf_Scn *scn, GElf_Shdr *sh)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    Elf_Scn *dynsym = elf_getscn(r->elf, sh->sh_link);
    GElf_Shdr dsh;
    if (!data || !dynsym || !gelf_getshdr(dynsym, &dsh) || !sh->sh_entsize) return;
    Elf_Data *ddata = elf_getdata(dynsym, NULL);
    if (!ddata) return;
    size_t n = sh->sh_size / sh->sh_entsize;
    m->imports = op_calloc(n ? n : 1, sizeof(char *));
    if (!m->imports) return;
    for (size_t i = 0; i < n; i++) {
        GElf_Rela rela;
        if (!gelf_getrela(data, (int)i, &rela)) continue;
        size_t type = GELF_R_TYPE(rela.r_info), si = GELF_R_SYM(rela.r_info);
        if (!((r->machine == EM_X86_64 && type == R_X86_64_JUMP_SLOT) ||
              (r->machine == EM_AARCH64 && type == R_AARCH64_JUMP_SLOT)) || si == 0)
            continue;
        GElf_Sym sym;
        if (!gelf_getsym(ddata, (int)si, &sym)) continue;
        const char *name = elf_strptr(r->elf, dsh.sh_link, sym.st_name);
        if (name && *name) m->imports[m->n_imports++] = op_strdup(name);
    }
}

/* .eh_frame_hdr: version 1, eh_frame_ptr_enc, fde_count_enc, table_enc, then the encoded
 * eh_frame pointer and count, then (initial_location, fde_address) pairs. Only the encoding
 * every x86-64/aarch64 toolchain emits for the table is read: DW_EH_PE_datarel|sdata4 (0x3b),
 * pointer and count udata4/sdata4 (pcrel allowed for the pointer). The FDE's pc_range is
 * read as the sdata4 after its pc_begin (GCC and LLVM emit pcrel|sdata4 pointers). */
static void read_fde_starts(reader *r, op_ins_module *m, Elf_Scn *hdr_scn, GElf_Shdr *hsh, Elf_Scn *eh_scn,
                            GElf_Shdr *esh)
{
    Elf_Data *hd = elf_getdata(hdr_scn, NULL), *ed = eh_scn ? elf_getdata(eh_scn, NULL) : NULL;
    if (!hd || !ed || hd->d_size < 12) return;
    const uint8_t *p = hd->d_buf;
    if (p[0] != 1 || (p[1] & 0x0f) != 0x0b || (p[2] & 0x0f) != 0x03 || p[3] != 0x3b) return;
    int32_t count;
    memcpy(&count, p + 8, 4);
    if (count <= 0 || 12 + (size_t)count * 8 > hd->d_size) return;
    size_t n_syms = m->n_fns;
    for (int32_t i = 0; i < count; i++) {
        int32_t loc_rel, fde_rel;
        memcpy(&loc_rel, p + 12 + (size_t)i * 8, 4);
        memcpy(&fde_rel, p + 16 + (size_t)i * 8, 4);
        uint64_t start = hsh->sh_addr + (int64_t)loc_rel, fde = hsh->sh_addr + (int64_t)fde_rel;
        uint64_t range = 0;
        if (fde >= esh->sh_addr && fde + 16 <= esh->sh_addr + ed->d_size) {
            int32_t rng;
            memcpy(&rng, (const uint8_t *)ed->d_buf + (fde - esh->sh_addr) + 12, 4);
            range = rng > 0 ? (uint64_t)rng : 0;
        }
        bool covered = false;
        for (size_t k = 0; k < n_syms && !covered; k++)
            covered = start >= m->fns[k].vaddr && start < m->fns[k].vaddr + (m->fns[k].size ? m->fns[k].size : 1);
        if (covered) continue;
        uint64_t off;
        bool exec = false;
        if (!vaddr_to_offset(r, start, &off, &exec) || !exec) continue;
        op_ins_fn *fn = add_fn(m);
        if (!fn) return;
        char name[48];
        snprintf(name, sizeof name, "<no symbol>@0x%llx", (unsigned long long)start);
        fn->name = op_strdup(name);
        fn->vaddr = start;
        fn->file_offset = off;
        fn->size = range;
        fn->status = OP_INS_NO_SYMBOL;
    }
}

/* Subprograms that exist only as inlined copies: DW_AT_inline set, no symbol of that name. */
static void walk_inlined(Dwarf_Die *die, op_ins_module *m, size_t n_syms, int depth)
{
    Dwarf_Die child;
    if (depth > 6 || dwarf_child(die, &child) != 0) return;
    do {
        int tag = dwarf_tag(&child);
        if (tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type) {
            walk_inlined(&child, m, n_syms, depth + 1);
            continue;
        }
        if (tag != DW_TAG_subprogram || !dwarf_hasattr(&child, DW_AT_inline)) continue;
        Dwarf_Attribute a;
        Dwarf_Word inl = 0;
        if (!dwarf_attr(&child, DW_AT_inline, &a) || dwarf_formudata(&a, &inl) != 0) continue;
        if (inl != DW_INL_inlined && inl != DW_INL_declared_inlined) continue;
        const char *name = dwarf_diename(&child);
        if (dwarf_hasattr(&child, DW_AT_linkage_name) && dwarf_attr(&child, DW_AT_linkage_name, &a))
            name = dwarf_formstring(&a);
        if (!name) continue;
        bool known = false;
        for (size_t k = 0; k < m->n_fns && !known; k++) known = !strcmp(m->fns[k].name, name);
        if (known) continue;
        op_ins_fn *fn = add_fn(m);
        if (!fn) return;
        fn->name = op_strdup(name);
        fn->status = OP_INS_INLINED;
    } while (dwarf_siblingof(&child, &child) == 0);
    (void)n_syms;
}

static void read_inlined(int fd, op_ins_module *m)
{
    Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
    if (!dw) return;
    size_t n_syms = m->n_fns;
    Dwarf_Off off = 0, next;
    size_t hsize;
    int cus = 0;
    while (cus++ < 4096 && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu;
        if (dwarf_offdie(dw, off + hsize, &cu)) walk_inlined(&cu, m, n_syms, 0);
        off = next;
    }
    dwarf_end(dw);
}

#ifdef OMNIPROF_HAVE_CAPSTONE
/* The target of a direct branch (the last immediate operand), or 0 for an indirect one. */
static uint64_t branch_target(const cs_insn *insn, bool arm64)
{
    uint64_t t = 0;
    if (arm64) {
        for (int k = 0; k < insn->detail->arm64.op_count; k++)
            if (insn->detail->arm64.operands[k].type == ARM64_OP_IMM) t = (uint64_t)insn->detail->arm64.operands[k].imm;
    } else if (insn->detail->x86.op_count == 1 && insn->detail->x86.operands[0].type == X86_OP_IMM) {
        t = (uint64_t)insn->detail->x86.operands[0].imm;
    }
    return t;
}

/* Does this instruction keep a call of [lo, hi) from being straight-line: a call, a system
 * call, a branch backwards inside the function (a loop), out of it (a tail call) or to an
 * address not known before run time (a jump table, a tail call through a pointer), an x86
 * string instruction with a repeat prefix? */
static bool breaks_straight_line(csh cs, const cs_insn *insn, bool arm64, uint64_t lo, uint64_t hi)
{
    if (cs_insn_group(cs, insn, CS_GRP_CALL) || cs_insn_group(cs, insn, CS_GRP_INT)) return true;
    if (arm64 && (insn->id == ARM64_INS_BL || insn->id == ARM64_INS_BLR || insn->id == ARM64_INS_SVC)) return true;
    if (!arm64 && insn->detail->x86.prefix[0] && insn->detail->x86.prefix[0] != X86_PREFIX_LOCK &&
        !strncmp(insn->mnemonic, "rep", 3) && !strstr(insn->mnemonic, "ret"))
        return true;
    if (!cs_insn_group(cs, insn, CS_GRP_JUMP)) return false;
    uint64_t t = branch_target(insn, arm64);
    return t <= insn->address || t >= hi || t < lo;
}
#endif

static void count_instructions(reader *r, op_ins_module *m)
{
#ifdef OMNIPROF_HAVE_CAPSTONE
    csh cs;
    bool arm64 = r->machine == EM_AARCH64;
    if (cs_open(arm64 ? CS_ARCH_ARM64 : CS_ARCH_X86, arm64 ? CS_MODE_ARM : CS_MODE_64, &cs) == CS_ERR_OK) {
        cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
        cs_insn *insn = cs_malloc(cs);
        size_t fsize = 0;
        const char *file = elf_rawfile(r->elf, &fsize);
        for (size_t i = 0; insn && file && i < m->n_fns; i++) {
            op_ins_fn *fn = &m->fns[i];
            if (fn->status == OP_INS_INLINED || fn->file_offset + fn->size > fsize) continue;
            const uint8_t *code = (const uint8_t *)file + fn->file_offset;
            size_t left = fn->size;
            uint64_t addr = fn->vaddr;
            uint32_t n = 0;
            bool straight = fn->size > 0;
            while (left && cs_disasm_iter(cs, &code, &left, &addr, insn)) {
                n++;
                if (straight && breaks_straight_line(cs, insn, arm64, fn->vaddr, fn->vaddr + fn->size)) straight = false;
            }
            fn->insns = n;
            fn->straight = straight && left == 0; /* every byte decoded */
        }
        if (insn) cs_free(insn, 1);
        cs_close(&cs);
        m->exact_insns = true;
        return;
    }
#endif
    for (size_t i = 0; i < m->n_fns; i++) m->fns[i].insns = (uint32_t)(m->fns[i].size / 4);
    m->exact_insns = false;
    (void)r;
}

static int cmp_vaddr(const void *a, const void *b)
{
    const op_ins_fn *x = a, *y = b;
    if (x->vaddr != y->vaddr) return x->vaddr < y->vaddr ? -1 : 1;
    if (x->forced != y->forced) return x->forced ? -1 : 1; /* global names first */
    return strcmp(x->name, y->name);
}

int op_ins_module_read(const char *path, bool is_main, op_ins_module *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open '%s': %m", path);
        return -1;
    }
    reader r = {0};
    r.elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    if (!r.elf || elf_kind(r.elf) != ELF_K_ELF || !gelf_getehdr(r.elf, &eh)) {
        snprintf(err, errlen, "'%s' is not an ELF file", path);
        if (r.elf) elf_end(r.elf);
        close(fd);
        return -1;
    }
    r.machine = eh.e_machine;
    size_t nph = 0;
    elf_getphdrnum(r.elf, &nph);
    for (size_t i = 0; i < nph && r.n_segs < 32; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(r.elf, (int)i, &ph) || ph.p_type != PT_LOAD) continue;
        r.segs[r.n_segs++] = (seg){ph.p_vaddr, ph.p_offset, ph.p_filesz, (ph.p_flags & PF_X) != 0};
    }
    m->path = op_strdup(path);
    m->is_main = is_main;
    size_t shstrndx = 0;
    elf_getshdrstrndx(r.elf, &shstrndx);
    Elf_Scn *symtab = NULL, *dynsym = NULL, *relaplt = NULL, *ehhdr = NULL, *ehframe = NULL;
    GElf_Shdr s_symtab = {0}, s_dynsym = {0}, s_relaplt = {0}, s_ehhdr = {0}, s_ehframe = {0};
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(r.elf, scn));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        const char *name = elf_strptr(r.elf, shstrndx, sh.sh_name);
        if (sh.sh_type == SHT_SYMTAB) symtab = scn, s_symtab = sh;
        else if (sh.sh_type == SHT_DYNSYM) dynsym = scn, s_dynsym = sh;
        else if (name && !strcmp(name, ".rela.plt")) relaplt = scn, s_relaplt = sh;
        else if (name && !strcmp(name, ".eh_frame_hdr")) ehhdr = scn, s_ehhdr = sh;
        else if (name && !strcmp(name, ".eh_frame")) ehframe = scn, s_ehframe = sh;
    }
    m->has_symtab = symtab != NULL;
    if (symtab) read_symbols(&r, m, symtab, &s_symtab, false);
    if (dynsym) read_symbols(&r, m, dynsym, &s_dynsym, true);
    if (relaplt) read_imports(&r, m, relaplt, &s_relaplt);
    if (m->n_fns) qsort(m->fns, m->n_fns, sizeof *m->fns, cmp_vaddr);
    if (ehhdr) read_fde_starts(&r, m, ehhdr, &s_ehhdr, ehframe, &s_ehframe);
    read_inlined(fd, m);
    count_instructions(&r, m);
    /* aliases: the first name at an address (global first) is the function */
    for (size_t i = 1; i < m->n_fns; i++)
        if (m->fns[i].status == OP_INS_OK && m->fns[i].vaddr && m->fns[i].vaddr == m->fns[i - 1].vaddr) {
            size_t k = i - 1;
            while (k > 0 && m->fns[k].status == OP_INS_ALIAS) k--;
            m->fns[i].status = OP_INS_ALIAS;
            m->fns[i].alias_of = m->fns[k].name;
        }
    for (size_t i = 0; i < m->n_fns; i++) m->fns[i].forced = false;
    qsort(m->fns, m->n_fns, sizeof *m->fns, cmp_vaddr);
    /* the aliases' alias_of pointers point at names, not slots: still valid after sorting */
    elf_end(r.elf);
    close(fd);
    return 0;
}

/* Names whose entry or return must not be intercepted: start-up and tear-down glue, functions
 * that return twice or never (their return probe would see a different stack), and the
 * compiler hooks themselves. */
static bool is_unsafe(const char *name)
{
    static const char *const exact[] = {
        "_start", "_init", "_fini", "__libc_start_main", "__libc_csu_init", "__libc_csu_fini",
        "_dl_relocate_static_pie", "deregister_tm_clones", "register_tm_clones", "__do_global_dtors_aux",
        "frame_dummy", "vfork", "__vfork", "clone", "__clone", "clone3", "setjmp", "_setjmp", "__setjmp",
        "sigsetjmp", "__sigsetjmp", "longjmp", "_longjmp", "siglongjmp", "__longjmp_chk", "getcontext",
        "setcontext", "swapcontext", "makecontext", "__cyg_profile_func_enter", "__cyg_profile_func_exit",
        "__stack_chk_fail", "_dl_runtime_resolve", "_dl_runtime_profile",
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strcmp(name, exact[i])) return true;
    return false;
}

size_t op_ins_module_select(op_ins_module *m, const op_ins_filter *f, char *const *imports, size_t n_imports)
{
    const char *why = NULL;
    m->status = op_ins_module_selected(f, m->path, m->is_main, &why) ? OP_INS_OK : OP_INS_MODULE;
    m->module_reason = why;
    size_t ok = 0;
    for (size_t i = 0; i < m->n_fns; i++) {
        op_ins_fn *fn = &m->fns[i];
        if (fn->status == OP_INS_NO_SYMBOL || fn->status == OP_INS_INLINED || fn->status == OP_INS_ALIAS) continue;
        /* the names of one function: it and its aliases (the same address), any of which the
         * user may name (-i '^printf$' where libc's first name at that address is _IO_printf) */
        size_t lo = i, hi = i + 1;
        while (lo > 0 && m->fns[lo - 1].vaddr == fn->vaddr && fn->vaddr) lo--;
        while (hi < m->n_fns && m->fns[hi].vaddr == fn->vaddr && fn->vaddr) hi++;
        bool inc = f->has_include && regexec(&f->include, fn->name, 0, NULL, 0) == 0;
        for (size_t k = lo; f->has_include && !inc && k < hi; k++) {
            if (k == i || m->fns[k].status != OP_INS_ALIAS || regexec(&f->include, m->fns[k].name, 0, NULL, 0) != 0)
                continue;
            /* record it under the name asked for: the alias becomes the function's name */
            char *asked = m->fns[k].name;
            m->fns[k].name = fn->name;
            fn->name = asked;
            for (size_t a = lo; a < hi; a++)
                if (m->fns[a].status == OP_INS_ALIAS) m->fns[a].alias_of = fn->name;
            inc = true;
        }
        bool exc = f->has_exclude && regexec(&f->exclude, fn->name, 0, NULL, 0) == 0;
        for (size_t k = lo; f->has_exclude && !exc && k < hi; k++)
            exc = k != i && m->fns[k].status == OP_INS_ALIAS && regexec(&f->exclude, m->fns[k].name, 0, NULL, 0) == 0;
        bool unsafe = false; /* start-up glue, setjmp... under any of its names */
        for (size_t k = lo; k < hi && !unsafe; k++) unsafe = (k == i || m->fns[k].status == OP_INS_ALIAS) && is_unsafe(m->fns[k].name);
        fn->forced = inc;
        fn->imported = false;
        if (m->status != OP_INS_OK) fn->status = OP_INS_MODULE;
        else if (unsafe) fn->status = OP_INS_UNSAFE;
        else if (exc) fn->status = OP_INS_EXCLUDED;
        else if (f->has_include && !inc) fn->status = OP_INS_NOT_INCLUDED;
        else if (!inc && fn->insns < f->min_insns) fn->status = OP_INS_TOO_SMALL;
        else if (!inc && f->min_insns && fn->straight) fn->status = OP_INS_STRAIGHT;
        else fn->status = OP_INS_OK;
        if (fn->status == OP_INS_OK && f->method == OP_INS_METHOD_AUDIT && imports) {
            bool seen = false;
            for (size_t k = 0; k < n_imports && !seen && fn->exported; k++) seen = !strcmp(imports[k], fn->name);
            fn->imported = seen;
            if (!seen) fn->status = OP_INS_NOT_PLT;
        }
        if (fn->status == OP_INS_OK) ok++;
    }
    return ok;
}

void op_ins_module_free(op_ins_module *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->n_fns; i++) op_free(m->fns[i].name);
    for (size_t i = 0; i < m->n_imports; i++) op_free(m->imports[i]);
    op_free(m->imports);
    op_free(m->fns);
    op_free(m->path);
    memset(m, 0, sizeof *m);
}

const op_ins_fn *op_ins_module_find(const op_ins_module *m, uint64_t vaddr)
{
    size_t lo = 0, hi = m->n_fns;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->fns[mid].vaddr < vaddr) lo = mid + 1;
        else hi = mid;
    }
    /* the first entry at vaddr; prefer the non-alias one */
    for (size_t i = lo; i < m->n_fns && m->fns[i].vaddr == vaddr; i++)
        if (m->fns[i].status != OP_INS_ALIAS) return &m->fns[i];
    return lo < m->n_fns && m->fns[lo].vaddr == vaddr ? &m->fns[lo] : NULL;
}
