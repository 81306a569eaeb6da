/* tool.h — internal interface between the parts of libomniprof-tool.so: the SDK client
 * (tool.c), which kinds go into which buffer (tool_kinds.c), the signal handling
 * (tool_signals.c) and kernel renaming (tool_rename.c). Nothing here is exported. */
#ifndef OMNIPROF_TOOL_TOOL_H
#define OMNIPROF_TOOL_TOOL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Flush everything collected so far into the database, from a normal thread (never from a
 * signal handler). `final`: the process is about to die — stop collecting and close the
 * database (WAL checkpointed) instead of only committing. Bounded by timeout_ms. */
void op_tool_flush_now(bool final, uint64_t timeout_ms);

/* True once the tool has a working configuration (database open or to be opened). */
bool op_tool_active(void);

/* omniprof attach (tool_attach.c): op_tool_detach stops collecting and closes the database
 * (its path in db, "" if none was opened), the process goes on; op_tool_reattach restarts
 * collection into a new database. 0, or -1 when the tool is not active. */
int op_tool_detach(uint64_t timeout_ms, char *db, size_t n);
int op_tool_reattach(void);
/* tool_attach.c: in a forked child of an attached process (called by tool.c's fork handler):
 * the parent's control connection is closed there; the child waits, collecting nothing, until
 * the launcher attaches to it (--attach-children) or forever (the tool stays inert). */
bool op_tool_attach_after_fork_child(void);

/* Start a detached tool thread with every signal blocked and a 256 KiB stack. Returns 0 or
 * pthread_create's error. */
int op_tool_start_thread(void *(*fn)(void *), void *arg);

/* Signals (tool_signals.c). op_tool_signals_install starts the flush helper thread and puts the
 * tool's handler first for SIGINT, SIGTERM, SIGQUIT, SIGABRT (and SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL while the program has no handler of its own for them). Idempotent. */
void op_tool_signals_install(void);
/* In a forked child: the helper thread does not exist there; start a new one (none when parked). */
void op_tool_signals_after_fork_child(bool helper);
/* omniprof attach: a detach ends the helper thread (park), a re-attach starts one (unpark). */
void op_tool_signals_park(void);
void op_tool_signals_unpark(void);
/* The program's sigaction(sig, act, oldact), offered by libomniprof-preload.so: true when the
 * tool owns `sig` and answered (*rc = 0 or -1 with errno), false to pass the call on. */
bool op_tool_sigaction_hook(int sig, const struct sigaction *act, struct sigaction *oldact, int *rc);

/* The tool's buffers (tool.c): one per value of kinds.def's BUFFER column (op_kind_buffer;
 * NONE unused), created on first use by tool_kinds.c. */
#include <stdatomic.h>
#include "common/kinds.h"
#include "omniprof/buffer.h"
enum { TB_GPU = OP_KIND_BUFFER_GPU, TB__COUNT = OP_KIND_BUFFER__COUNT };

typedef struct tool_buffer {
    const char *name;
    omniprof_buffer_id_t id;
    bool used;
    _Atomic uint64_t records;   /* handed to the writer */
    _Atomic uint64_t callbacks; /* deliveries */
    _Atomic uint64_t cb_ns;     /* time inside our callback */
    _Atomic uint64_t drops;     /* the SDK's cumulative drop count */
} tool_buffer;

/* tool_kinds.c, the enable loop: every kinds.def row whose switch the settings turn on, into
 * its buffer of buf[TB__COUNT] (created in `ctx`, delivering to on_buffer) — configured as
 * buffer tracing, or by its service's set-up (PC/PM sampling, SASS metrics, --pmc). Returns
 * how many kinds are on. Called once, from tool_init. */
int op_tool_enable_kinds(omniprof_context_id_t ctx, tool_buffer *buf,
                         omniprof_buffer_tracing_cb_t on_buffer);

/* --kernel-rename (tool_rename.c): follow the marker ranges of `ctx` (external correlation ids
 * name the ranges); the writer names a dispatch op_tool_rename_name(its external id). */
#include "omniprof/fwd.h"
int op_tool_rename_setup(omniprof_context_id_t ctx);
const char *op_tool_rename_name(uint64_t id);

#include "omniprof/symbols.h"
/* tool_db.c: the writer's name, symbol and rename callbacks (their `user` is unused), and one
 * line with a database's path appended to the run manifest (OMNIPROF_RUN_MANIFEST), if any. */
const char *op_tool_db_kind_name(uint32_t kind, void *user);
const char *op_tool_db_operation_name(uint32_t kind, int32_t op, void *user);
omniprof_status_t op_tool_db_symbolize(uint64_t address, omniprof_symbol_cb_t cb, void *cb_data, void *user);
const char *op_tool_db_kernel_rename(uint64_t external, void *user);
void op_tool_manifest_append(const char *path);

#endif /* OMNIPROF_TOOL_TOOL_H */
