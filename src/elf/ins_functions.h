/* ins_functions.h — which functions of a module (executable or shared library) can be
 * instrumented, and which are excluded and why.
 *
 * src/elf (the static library omniprof-elf), below the backends: used by the instrumentation
 * backend in the profiled process (to place uprobes, to decide about a function the compiler
 * hooks or the audit interface report) and by the omniprof binary — `omniprof instrument
 * --list` (offline, without running the program) and `omniprof attach` (the symbols of a
 * running process's modules). It reads the ELF file only (libelf, libdw for inlined functions,
 * capstone for instruction counts when built with it) and knows nothing of the SDK. Not
 * thread-safe; a module object is owned by one caller. */
#ifndef OMNIPROF_ELF_INS_FUNCTIONS_H
#define OMNIPROF_ELF_INS_FUNCTIONS_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why a function is (not) instrumented. OK is the only "yes". */
typedef enum op_ins_status {
    OP_INS_OK = 0,
    OP_INS_TOO_SMALL,     /* fewer instructions than --min-instructions */
    OP_INS_STRAIGHT,      /* straight-line (no loop, no call): too short to time (ins_functions.c) */
    OP_INS_EXCLUDED,      /* matched an exclude regex (-e) */
    OP_INS_NOT_INCLUDED,  /* include regexes given (-i) and none matched */
    OP_INS_MODULE,        /* its module is excluded (not selected, the loader, libc, omniprof) */
    OP_INS_NO_SYMBOL,     /* code with unwind info (an FDE) but no symbol: no name to give it */
    OP_INS_INLINED,       /* only inlined copies exist (DWARF), no out-of-line code to probe */
    OP_INS_ALIAS,         /* another name for the same address (instrumented under the first) */
    OP_INS_UNSAFE,        /* would break the program or the profiler (setjmp, vfork, _start, ...) */
    OP_INS_NOT_PLT,       /* audit method: not reachable through the PLT of a selected caller */
    OP_INS_LIMIT,         /* beyond OMNIPROF_INSTRUMENT_MAX_FUNCTIONS */
    OP_INS__COUNT
} op_ins_status;

const char *op_ins_status_reason(op_ins_status s);

typedef struct op_ins_fn {
    char *name;
    uint64_t vaddr;       /* link-time address (st_value) */
    uint64_t file_offset; /* offset of the entry in the file (what a uprobe needs) */
    uint64_t size;        /* bytes (st_size, or the FDE's range) */
    uint32_t insns;       /* instructions in [vaddr, vaddr+size) */
    bool straight;        /* capstone: no loop, no call, no system call, no indirect branch */
    op_ins_status status;
    bool forced;          /* an include regex named it: no size limit, no throttling */
    bool exported;        /* in .dynsym (visible to the PLT) */
    bool imported;        /* audit: some selected caller calls it through its PLT */
    const char *alias_of; /* OP_INS_ALIAS: the name that is instrumented */
} op_ins_fn;

typedef enum op_ins_method {
    OP_INS_METHOD_UPROBE = 1,
    OP_INS_METHOD_AUDIT,
    OP_INS_METHOD_COMPILER,
} op_ins_method;

typedef struct op_ins_filter {
    regex_t include, exclude, modules; /* compiled when has_* */
    bool has_include, has_exclude, has_modules;
    uint64_t min_insns;
    op_ins_method method;
} op_ins_filter;

typedef struct op_ins_module {
    char *path;
    bool is_main;
    op_ins_status status;   /* OK, or MODULE with module_reason */
    const char *module_reason;
    bool has_symtab;        /* .symtab present (else only .dynsym names: stripped) */
    bool exact_insns;       /* instruction counts from a disassembler (else bytes / 4) */
    op_ins_fn *fns;
    size_t n_fns, cap_fns;
    char **imports;         /* names this module calls through its PLT (JUMP_SLOT relocations) */
    size_t n_imports;
} op_ins_module;

/* Compile the filter. Each regex may be NULL or "" (absent). Returns 0, or -1 with a message
 * naming the bad regex in err. */
int op_ins_filter_init(op_ins_filter *f, const char *include, const char *exclude, const char *modules,
                       uint64_t min_insns, op_ins_method method, char *err, size_t errlen);
void op_ins_filter_fini(op_ins_filter *f);

/* Is this module selected at all? The main program, and the libraries whose path matches the
 * module regex (without one: no library for uprobes, every library for the audit method, whose
 * reason to exist is calls into libraries); never the dynamic loader, the vDSO or omniprof's
 * own libraries. *reason is set when it is not. */
bool op_ins_module_selected(const op_ins_filter *f, const char *path, bool is_main, const char **reason);

/* Read the functions of the ELF file `path`. Returns 0, or -1 with a message in err (not an
 * ELF file, unreadable). On success the caller frees with op_ins_module_free. */
int op_ins_module_read(const char *path, bool is_main, op_ins_module *m, char *err, size_t errlen);

/* Give every function its status under the filter. `imports`: for the audit method offline
 * (`--list`), the union of the PLT imports of the caller modules, and a function no caller
 * imports is NOT_PLT; NULL at run time, where the audit interface reports only PLT calls.
 * Returns the number of functions with OP_INS_OK. */
size_t op_ins_module_select(op_ins_module *m, const op_ins_filter *f, char *const *imports, size_t n_imports);

void op_ins_module_free(op_ins_module *m);

/* The throttle ("--throttle", OMNIPROF_INSTRUMENT_THROTTLE), one parser for the command line
 * and the backend: "auto" returns 1 (the caller picks its own numbers); "off" (or "0") returns
 * 0 with *calls = 0; "CALLS:NS", two non-negative decimal integers, returns 0 with both set.
 * Anything else (a sign, a fraction, a third field) returns -1 with the reason in why. */
int op_ins_throttle_parse(const char *text, uint64_t *calls, uint64_t *ns, char *why, size_t whylen);

/* Binary search by link-time address over the module's functions (sorted by vaddr). */
const op_ins_fn *op_ins_module_find(const op_ins_module *m, uint64_t vaddr);

#endif /* OMNIPROF_ELF_INS_FUNCTIONS_H */
