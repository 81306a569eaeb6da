/* omniprof/symbols.h — turning code addresses of this process into function, file and line.
 *
 * Served by a backend that can read debug information (the CPU backend, with elfutils libdw).
 * Addresses are resolved against the process's current mappings, so call this while the
 * process is alive (tools do it once, at the end of the run, for each distinct address). */
#ifndef OMNIPROF_SYMBOLS_H
#define OMNIPROF_SYMBOLS_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

/* One frame of an address: the outermost function first, then each inlined callee
 * (inline_depth 0, 1, ...). Strings are valid only during the callback. */
typedef struct omniprof_symbol_info_t {
    uint64_t size;
    uint64_t address;
    const char *function;      /* demangled name, or NULL if unknown */
    const char *function_mangled;
    const char *file;          /* source file, or NULL */
    uint32_t line;             /* 0 if unknown */
    uint32_t inline_depth;     /* 0 for the physical frame */
    const char *module;        /* path of the ELF object (executable or shared library) */
    uint64_t module_offset;    /* address - load bias of module */
} omniprof_symbol_info_t;

typedef int (*omniprof_symbol_cb_t)(const omniprof_symbol_info_t *info, void *data);

/**
 * @brief **omniprof_query_address_symbols** calls `cb` once per frame of `address` (several
 * when functions were inlined).
 * @return SUCCESS; ERROR_INVALID_ARGUMENT (NULL cb); ERROR_NOT_AVAILABLE (no backend can
 * symbolize: the CPU backend is not loaded); ERROR_NOT_FOUND-style ERROR when the address is
 * in no mapping (cb is then called once with module NULL).
 */
OMNIPROF_API omniprof_status_t omniprof_query_address_symbols(uint64_t address, omniprof_symbol_cb_t cb,
                                                              void *data);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_SYMBOLS_H */
