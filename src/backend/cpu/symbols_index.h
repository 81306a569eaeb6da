/* symbols_index.h — per-module lookup indexes for symbols.c (symbols_index.c): an ELF symbol
 * table sorted by address, and per compilation unit the subprogram / inlined-subroutine DIEs
 * with their address ranges, each built once, so that one address costs two binary searches
 * instead of libdwfl's scan of the whole symbol table and dwarf_getscopes' walk of the CU.
 * Every function runs under symbols.c's g_sym_lock. */
#ifndef OMNIPROF_BACKEND_CPU_SYMBOLS_INDEX_H
#define OMNIPROF_BACKEND_CPU_SYMBOLS_INDEX_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

/* Name of the ELF symbol libdwfl's dwfl_module_addrinfo would give for the (biased) address:
 * 1 with *name set (NULL when the module has no symbol there), 0 when the index cannot decide
 * alone (overlapping symbols of different extents, no symbol table): the caller then asks
 * libdwfl. */
int op_cpu_symidx_name(Dwfl_Module *mod, Dwarf_Addr address, const char **name);

/* The inlined subroutines containing pc (the CU's own address space: the address minus the
 * module's DWARF bias) into chain[], innermost first (at most max), and the subprogram that
 * contains them into *subprogram (NULL when none). Returns the chain's length, or -1 when the
 * CU could not be indexed (the caller then uses dwarf_getscopes). The DIEs stay valid until
 * op_cpu_symidx_clear. */
int op_cpu_symidx_scopes(Dwfl_Module *mod, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **chain, int max,
                         Dwarf_Die **subprogram);

/* Drops every index (the Dwfl session's modules were re-reported or the session is gone);
 * release = 0 forgets them without freeing (a fork child: the parent's memory is left alone). */
void op_cpu_symidx_clear(int release);

#endif /* OMNIPROF_BACKEND_CPU_SYMBOLS_INDEX_H */
