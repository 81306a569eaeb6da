/* sdk_internal.h — what the files of the SDK core (src/sdk/) share with each other; not API.
 *
 * Lock order (a lock on the left is never taken while holding one on its right):
 *   g_sdk_lock (registration.c)  >  op_cbthread.lock  >  buffer switch spinlock  >  intern lock
 *   correlation stripe locks are leaves (nothing is taken while holding one).
 * No lock is ever taken in a signal handler; the buffer switch lock is only *tried* there. */
#ifndef OMNIPROF_SDK_INTERNAL_H
#define OMNIPROF_SDK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "omniprof/omniprof.h"
#include "omniprof/user.h"
#include "sdk/backend.h"

#define OP_SDK_MAX_BUFFERS 64
#define OP_SDK_MAX_CB_THREADS 16
#define OP_SDK_MAX_CLIENTS 16
#define OP_SDK_MAX_BACKENDS 16
#define OP_SDK_CORR_STACK 64
#define OP_SDK_TLS_INIT __attribute__((tls_model("initial-exec")))

/* Registration states (registration.c). */
enum {
    OP_STATE_NONE = 0,     /* nothing ran yet */
    OP_STATE_INITIALIZING, /* configure/initialize of the tools running; configuration open */
    OP_STATE_LOCKED,       /* initialized; configuration locked */
    OP_STATE_FINALIZING,
    OP_STATE_FINALIZED,
};

/* ---------------------------------------------------------------- registration.c */
int op_sdk_state(void);
/* Lazily initialize (first use). Safe from any thread; never waits for another thread. */
void op_sdk_ensure_init(void);
/* ERROR_CONFIGURATION_LOCKED / ERROR_FINALIZED / SUCCESS: may the caller still configure? */
omniprof_status_t op_sdk_config_open(void);
void op_sdk_lock(void);
void op_sdk_unlock(void);
uint64_t op_sdk_random_offset(uint64_t salt); /* in [256, 65535] */
int op_sdk_current_client(void);                 /* client whose configure/initialize runs, -1 */

/* ---------------------------------------------------------------- per-thread state (thread.c) */
typedef struct op_lane {
    /* the thread's current chunk of one buffer (buffer.c): owned by this thread alone until the
     * consumer closes its sub-buffer */
    uint64_t seq;              /* incarnation (sequence number) of the chunk's sub-buffer; ~0 none */
    _Atomic uint64_t *ctl;     /* the sub-buffer's control word: seq<<1 while open */
    _Atomic uint64_t *used_at; /* the chunk descriptor's word: span<<32 | complete records */
    char *base;                /* first byte of the chunk */
    uint64_t word;             /* what *used_at holds (span<<32 | records) */
    uint32_t used;             /* payload bytes written from the front of the chunk */
    uint32_t end;              /* index entries occupy [end, span * chunk bytes): free space ends here */
    uint32_t seal_at;          /* seal the sub-buffer once the chunk holds this many bytes; 0 never */
    uint32_t pad[3];           /* 64 bytes: the lane of a buffer index is a shift away (emit's shortcut) */
} op_lane;
_Static_assert(sizeof(op_lane) == 64, "op_lane is 64 bytes");

typedef struct op_ext_stack {
    uint32_t depth, cap;
    omniprof_user_data_t *v;
} op_ext_stack;

typedef struct op_range_entry {
    uint64_t start;
    uint64_t corr;
    char *message;
} op_range_entry;

typedef struct op_tls {
    uint64_t tid;
    uint32_t key_set; /* the pthread key that releases this state at thread exit is set */
    /* odd while the thread is inside op_buffer_emplace (a signal handler that interrupts it
     * there drops its record); a slot of thread.c's epoch registry, which buffer.c's consumer
     * scans for its grace period */
    _Atomic uint64_t *epoch;
    uint32_t in_callback;  /* > 0 while a buffer callback runs on this thread */
    uint32_t internal;     /* an SDK/backend thread */
    int32_t cb_thread;     /* index of the callback thread this is, -1 */
    uint32_t pool_slot;    /* slot in the static pool + 1, 0 when heap-allocated */
    uint32_t corr_depth;
    uint64_t corr_stack[OP_SDK_CORR_STACK];
    op_lane lanes[OP_SDK_MAX_BUFFERS];
    op_ext_stack *ext[OP_SDK_MAX_CONTEXTS]; /* external correlation stacks, lazily allocated */
    uint32_t range_depth, range_cap;
    op_range_entry *ranges;
} op_tls;

/* The calling thread's state, created on first use. NULL when none can be had (signal handler
 * with the static pool exhausted, or a thread past its TLS destructor). */
extern __thread op_tls *op_tls_cur __attribute__((visibility("hidden"))) OP_SDK_TLS_INIT; /* thread.c */
op_tls *op_tls_get_slow(void);
static inline op_tls *op_tls_get(void)
{
    op_tls *t = op_tls_cur;
    if (__builtin_expect(t != NULL && t->key_set, 1)) return t;
    return op_tls_get_slow();
}
op_tls *op_tls_get_signal(void); /* never allocates from the heap */
op_tls *op_tls_peek(void);       /* NULL if not created yet */
uint64_t op_tid(void);
void op_tls_at_fork_child(void);
/* Calls fn on the epoch word of every thread that has (or had) SDK state, for buffer.c's grace
 * period. The words live in memory that is never freed; a word of a thread that exited is even. */
void op_epoch_for_each(void (*fn)(_Atomic uint64_t *epoch, void *arg), void *arg);
bool op_is_main_thread(void);

/* ---------------------------------------------------------------- buffer.c */
typedef struct op_buffer op_buffer;
op_buffer *op_buffer_lookup(omniprof_buffer_id_t id); /* NULL if stale */
op_buffer *op_buffer_at(uint32_t index);
uint32_t op_buffer_count(void);
uint32_t op_buffer_index(const op_buffer *b);
void op_buffer_count_lost(op_buffer *b, uint64_t n); /* records lost before emit (op_sdk_report_lost) */
int op_buffer_thread(const op_buffer *b);
void op_buffer_set_thread(op_buffer *b, int thread_index);
omniprof_context_id_t op_buffer_context(const op_buffer *b);
/* Copy one record. patch_off != 0: write patch_val at that payload offset in the copy.
 * from_signal: never wait, never allocate. Returns 1 when stored, 0 when dropped. */
int op_buffer_emplace(op_buffer *b, uint32_t category, uint32_t kind, const void *payload, size_t size,
                      size_t patch_off, uint64_t patch_val, bool from_signal);
/* The same for the calling thread's state `t` (op_tls_get, or op_tls_get_signal when from_signal). */
int op_buffer_emplace_tls(op_buffer *b, op_tls *t, uint32_t category, uint32_t kind, const void *payload,
                          size_t size, size_t patch_off, uint64_t patch_val, bool from_signal);
/* The same for tracing.c's emit when one buffer alone (its index) wants the record: patch value
 * 0, not from a signal handler, a payload of 16-256 bytes, t = op_tls_get()'s state (buffer.c). */
int op_buffer_emplace_fast(uint32_t index, op_tls *t, uint32_t category, uint32_t kind, const void *payload,
                           size_t size, size_t patch_off);
/* Deliver the sub-buffers of b that were sealed when the call began (callback thread).
 * Returns records delivered. */
uint64_t op_buffer_deliver_ready(op_buffer *b);
/* Flush with a deadline (absolute ns, 0 = none) and a patience for a consumer that makes no
 * progress (ns, 0 = unbounded). */
omniprof_status_t op_buffer_flush_internal(op_buffer *b, uint64_t deadline_ns, uint64_t stall_ns);
void op_buffer_at_fork_child(void);
void op_buffer_finalize_all(uint64_t deadline_ns);

/* ---------------------------------------------------------------- internal_threading.c */
int op_cbthread_default(void);        /* index of the default callback thread (created lazily) */
bool op_cbthread_valid(int index);
void op_cbthread_wake(int index, bool from_signal);
void op_cbthread_stop_all(void);       /* ask every callback thread to exit; never joins */
void op_cbthread_at_fork_child(void);
void op_internal_thread_notify(omniprof_runtime_library_t lib, int post);

/* ---------------------------------------------------------------- agent.c */
/* Copy of the agent with this handle (the list omniprof_query_available_agents reports; built
 * on first use, so load a backend whose GPUs should be in it first). 0, or -1 if unknown. */
int op_sdk_agent_lookup(omniprof_agent_id_t id, omniprof_agent_v0_t *out);

/* ---------------------------------------------------------------- context.c */
typedef struct op_service_filter {
    uint32_t nbits; /* 0: every operation */
    uint64_t *bits;
} op_service_filter;

typedef struct op_context op_context;
op_context *op_context_lookup(omniprof_context_id_t id);
int op_context_index(omniprof_context_id_t id); /* -1 if stale */
/* The head of every configure call: is configuration still open (op_sdk_config_open), and the
 * context's index into *ci unless NULL (ERROR_CONTEXT_NOT_FOUND if stale). */
omniprof_status_t op_sdk_config_context(omniprof_context_id_t context, int *ci);
/* A sampling service (PC, PM, SASS): the buffer tracing service of `kind` plus one configuration
 * per process, the first context's (a context asking for another gets ERROR_CONTEXT_CONFLICT and
 * nothing changes). same() and keep() run under the services' lock (context.c, never held across
 * another lock): same() compares want with the configuration kept, keep() stores want once. */
typedef struct op_sdk_sampling_service {
    omniprof_buffer_tracing_kind_t kind;
    int (*same)(const void *want);
    void (*keep)(const void *want);
    int on; /* under the lock */
} op_sdk_sampling_service;
/* The tail of the service's configure call, after its arguments were checked: the conflict
 * check, the buffer tracing service of svc->kind into buffer, the configuration kept. */
omniprof_status_t op_sdk_sampling_claim(op_sdk_sampling_service *svc, const void *want,
                                        omniprof_context_id_t context, omniprof_buffer_id_t buffer);
/* The service's configuration (size bytes at config) copied to out (unless NULL) when it is on;
 * returns whether it is on. */
int op_sdk_sampling_get(const op_sdk_sampling_service *svc, const void *config, void *out, size_t size);
omniprof_context_id_t op_context_id_at(int index);
uint64_t op_context_active_mask(void);
void op_context_stop_all(void);
void op_context_deactivate_client(int client);
extern _Atomic uint64_t g_op_buffer_kind_mask[OMNIPROF_BUFFER_TRACING_LAST];
extern _Atomic uint64_t g_op_callback_kind_mask[OMNIPROF_CALLBACK_TRACING_LAST];
extern _Atomic uint64_t g_op_active_mask;
extern _Atomic int g_op_paused;
extern _Atomic int g_op_ext_used; /* correlation.c: some thread pushed an external correlation id */
/* The emit path's shortcut (context.c): g_op_solo[kind][ci] is context ci's buffer for the kind
 * when its service has no operation filter, else NULL; written once, before the context's bit in
 * the kind's mask is set (release), never changed. tracing.c's route of a kind is built from it. */
extern op_buffer *g_op_solo[OMNIPROF_BUFFER_TRACING_LAST][OP_SDK_MAX_CONTEXTS];
/* Call after every change of what op_sdk_emit routes a record on (tracing.c): a kind mask, the
 * active mask, the paused flag, g_op_ext_used. Each kind's route is rebuilt at its next record. */
void op_route_changed(void);
/* Buffer and callback target of (context index, kind), after checking the operation filter. */
op_buffer *op_context_buffer_for(int ci, uint32_t kind, int32_t operation);
bool op_context_callback_for(int ci, uint32_t kind, int32_t operation, omniprof_callback_tracing_cb_t *cb,
                             void **data);
bool op_filter_has(const op_service_filter *f, int32_t op);

/* ---------------------------------------------------------------- tracing.c */
const char *op_core_operation_name(uint32_t buffer_kind, int32_t op);
/* What the core itself serves (marker kinds, retirement, the user API table). */
const op_backend_manifest *op_core_manifest(void);
bool op_core_serves(uint32_t buffer_kind);

/* ---------------------------------------------------------------- backend_manifest.c */
int op_manifest_read(const char *path, op_backend_manifest *out); /* 0, or -1: none valid */
bool op_manifest_serves(const op_backend_manifest *m, uint32_t category, uint32_t kind);
/* The path of the nth (from 0) backend library whose manifest lists (category, kind), or
 * provides table_bit when it is non-zero (*m set); NULL when no more beside the SDK do (several
 * device backends serve the GPU activity kinds). Scans once. */
const char *op_manifest_find(uint32_t category, uint32_t kind, uint32_t table_bit, int nth,
                             const op_backend_manifest **m);

/* ---------------------------------------------------------------- correlation.c */
bool op_ext_top(int ci, omniprof_user_data_t *out); /* the calling thread's top for context ci */
void op_correlation_at_fork_child(void);
void op_correlation_retire_all(void);
void op_correlation_prefork(void);
void op_correlation_postfork(void);

/* ---------------------------------------------------------------- backend.c */
const op_backend *op_backend_for_buffer_kind(uint32_t kind); /* registered, serving it */
/* The nth (from 0) registered backend serving buffer kind `kind` (the GPU activity kinds may
 * have several: ask each in turn), NULL past the last. */
const op_backend *op_backend_for_buffer_kind_nth(uint32_t kind, int nth);
const op_backend *op_backend_for_table(uint32_t table_bit);  /* registered, providing it */
void op_backend_load_for_kind(uint32_t buffer_kind);         /* load what serves it, once */
void op_backend_load_for_table(uint32_t table_bit);
void op_backends_start(void);
void op_backends_context_change(void);
void op_backends_flush(void);
void op_backends_finalize(void);
void op_backends_at_fork_child(void);
void op_agents_at_fork_child(void); /* agent.c */
uint32_t op_backend_count(void);
const op_backend *op_backend_at(uint32_t i);
void op_intern_prefork(void);
void op_intern_postfork(void);

/* ---------------------------------------------------------------- intercept_table.c / marker.c */
void op_marker_fill_table(omniprof_user_api_table_t *t);
bool op_intercept_any_requested(void);

#endif /* OMNIPROF_SDK_INTERNAL_H */
