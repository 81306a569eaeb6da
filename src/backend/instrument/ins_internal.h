/* ins_internal.h — shared state of the instrumentation backend (libomniprof-backend-instrument.so).
 *
 * The pieces: ins_backend.c (registration, settings, life cycle), ins_calls.c (the table of
 * instrumented functions, per-thread shadow stacks, FUNCTION_CALL records, throttling),
 * ins_uprobe.c (uprobes through perf_event_open and the reader thread), ins_compiler.c (the
 * -finstrument-functions hooks of libomniprof-user.so), ins_audit_bridge.c (what the LD_AUDIT
 * library calls into), ins_functions.c (ELF: which functions exist and which are selected). */
#ifndef OMNIPROF_INS_INTERNAL_H
#define OMNIPROF_INS_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "elf/ins_functions.h"
#include "omniprof/instrument.h"

#define OP_INS_MAX_DEPTH 512 /* instrumented frames kept per thread; deeper calls are counted, not recorded */

/* One instrumented function (ids are indexes into the table, never reused). */
typedef struct op_ins_func {
    const char *name;   /* interned */
    const char *module; /* interned */
    uint64_t address;   /* entry address in this process */
    bool forced;        /* named by an include regex: never throttled */
    int method;         /* omniprof_function_call_operation_t */
    _Atomic int disabled;       /* throttled: entries are ignored from now on */
    _Atomic uint64_t calls;     /* finished calls */
    _Atomic uint64_t total_ns;  /* their inclusive time */
    int probe_index;            /* uprobe: index of its perf events; -1 otherwise */
} op_ins_func;

typedef struct op_ins_frame {
    uint32_t func;
    uint32_t reserved;
    uint64_t start;
    uint64_t child_ns;
} op_ins_frame;

/* A thread's instrumented calls in progress (innermost last). */
typedef struct op_ins_stack {
    uint64_t tid;
    uint32_t depth;
    uint32_t overflow; /* entries beyond OP_INS_MAX_DEPTH not recorded */
    op_ins_frame frames[OP_INS_MAX_DEPTH];
} op_ins_stack;

typedef struct op_ins_config {
    int method;                /* OMNIPROF_FUNCTION_CALL_* asked for; NONE = auto */
    char include[1024], exclude[1024], modules[1024];
    uint64_t min_insns;
    uint64_t max_functions;
    uint64_t throttle_calls;   /* 0: no throttling */
    uint64_t throttle_ns;      /* mean inclusive time per call below which a function is throttled */
    bool attach;               /* loaded into a running process (omniprof attach) */
} op_ins_config;

extern op_ins_config g_op_ins_cfg;
extern _Atomic int g_op_ins_active; /* a context traces FUNCTION_CALL */
extern op_ins_filter g_op_ins_filter;

/* ins_calls.c */
int op_ins_func_add(const char *name, const char *module, uint64_t address, bool forced, int method);
op_ins_func *op_ins_func_get(uint32_t id);
uint32_t op_ins_func_count(void);
void op_ins_stack_enter(op_ins_stack *s, uint32_t func, uint64_t ts);
void op_ins_stack_exit(op_ins_stack *s, uint32_t func, uint64_t ts);
/* Has this stack a call of `func` open? */
bool op_ins_stack_holds(const op_ins_stack *s, uint32_t func);
/* Emit the frames still open (UNFINISHED, ending at `ts`) and empty the stack. */
void op_ins_stack_close(op_ins_stack *s, uint64_t ts);
/* The calling thread's stack (allocated on first use; NULL when out of memory or the thread
 * is one of the profiler's own). */
op_ins_stack *op_ins_thread_stack(void);
/* Close every in-thread stack still registered (at stop), and free them at finalize. */
void op_ins_stacks_close_all(uint64_t ts);
uint64_t op_ins_dropped_depth(void);

/* ins_resolve.c: address -> function id, decided once per address (in-thread methods) */
#define OP_INS_NO_FUNC 0xffffffffu
int op_ins_resolve_init(void);
uint32_t op_ins_resolve(uintptr_t addr, int method);
uint64_t op_ins_resolve_cache_full(void);

/* ins_uprobe.c */
int op_ins_uprobe_available(char *why, size_t len);
int op_ins_uprobe_start(void);
void op_ins_uprobe_flush(void);
void op_ins_uprobe_stop(void);
void op_ins_uprobe_disable_func(op_ins_func *f);
void op_ins_uprobe_at_fork_child(void);

/* ins_compiler.c */
int op_ins_compiler_start(void);
void op_ins_compiler_stop(void);

/* ins_audit_bridge.c */
int op_ins_audit_start(void);
void op_ins_audit_stop(void);

/* ins_backend.c: modules of the process and the functions selected in them */
typedef void (*op_ins_module_cb)(const char *path, uint64_t load_bias, bool is_main, void *data);
void op_ins_foreach_module(op_ins_module_cb cb, void *data);

#endif /* OMNIPROF_INS_INTERNAL_H */
