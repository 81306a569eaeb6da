/* backend.h — the interface between the SDK core and its backends (cuda, cpu, later amd).
 *
 * A backend is a shared library, libomniprof-backend-<name>.so, beside libomniprof-sdk.so. It
 * links against the SDK and calls the op_sdk_* functions below (exported from the SDK under the
 * private version node OMNIPROF_PRIVATE; not API, no stability promise). Its constructor calls
 * op_sdk_register_backend().
 *
 * What a backend serves (buffer kinds, hence their callback kinds; counter record kinds;
 * intercept tables) is declared once, in its manifest (op_backend_manifest, below): plain data
 * in the ELF section ".omniprof_backend" of the library, which its descriptor also points at.
 * The SDK core names no backend: when a context configures a kind that no registered backend
 * serves, it reads the manifests of the libomniprof-backend-*.so files in its own directory
 * straight from the files (backend_manifest.c, without loading them, so a vendor library such
 * as CUPTI is never loaded into a process that does not use it) and dlopens the one that
 * serves the kind. A backend already loaded (LD_PRELOAD, e.g. the CPU backend, which interposes
 * pthread_create/fork/exit and must therefore be preloaded) registers from its constructor.
 *
 * Record conventions every backend keeps (the SDK relies on them):
 *  (1) a payload starts with {uint64_t size; uint32_t kind; int32_t operation;} and `size`
 *      covers the whole record, inline tail included;
 *  (2) a record of a kind that carries a correlation id (CORRELATION in kinds.def) has it at
 *      offset 16, so its `external` member is at offset 24 (op_sdk_emit patches it per context);
 *  (3) strings in records are static or interned with op_sdk_intern (never freed).
 *
 * Threading: every op_sdk_* call is thread-safe. op_sdk_buffer_enabled/op_sdk_callback_enabled
 * are lock-free reads (call them on every event). op_sdk_emit never blocks unless a target
 * buffer is LOSSLESS and full. None of them may be called from a signal handler except
 * op_sdk_emit_from_signal (which drops instead of waiting and never allocates). */
#ifndef OMNIPROF_SDK_BACKEND_H
#define OMNIPROF_SDK_BACKEND_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "omniprof/omniprof.h"

#define OP_SDK_MAX_CONTEXTS 64 /* contexts a process may create */

/* A fixed-size record zeroed with its header set (convention (1)): size, kind, operation. */
#define OP_SDK_RECORD_INIT(rec, KIND, OP)   \
    do {                                    \
        memset(&(rec), 0, sizeof(rec));     \
        (rec).size = sizeof(rec);           \
        (rec).kind = (KIND);                \
        (rec).operation = (OP);             \
    } while (0)

/* The op_sdk_* functions are exported from libomniprof-sdk.so (version node OMNIPROF_PRIVATE,
 * see src/sdk/omniprof-sdk.map) although the SDK is built with -fvisibility=hidden. */
#pragma GCC visibility push(default)

/* A backend's manifest: what it serves, readable from the library file without loading it.
 * Plain data (no pointers, no relocations). Define it with OP_BACKEND_MANIFEST:
 *
 *     OP_BACKEND_MANIFEST(g_manifest) = {
 *         .magic = OP_BACKEND_MANIFEST_MAGIC, .size = sizeof(op_backend_manifest), .name = "cuda",
 *         .buffer_kinds = {OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, ...},
 *         .intercept_tables = OMNIPROF_INTERCEPT_TABLE_CUDA_DRIVER,
 *     };
 *
 * and point op_backend.manifest at it. The library must be named libomniprof-backend-<name>.so. */
#define OP_BACKEND_MANIFEST_MAGIC "omniprof-bknd-1"
#define OP_BACKEND_MANIFEST_SECTION ".omniprof_backend"
#define OP_BACKEND_MAX_KINDS 64
/* query_agents: the driver is not initialized yet; ask again later. */
#define OP_AGENTS_LATER ((size_t)-1)

typedef struct op_backend_manifest {
    char magic[16];            /* OP_BACKEND_MANIFEST_MAGIC */
    uint32_t size;             /* sizeof(op_backend_manifest) */
    uint32_t intercept_tables; /* omniprof_intercept_table_t bits it provides */
    char name[32];             /* "cuda": the library is libomniprof-backend-<name>.so */
    /* buffer tracing kinds it serves (and so their callback kinds), 0 ends the list */
    uint16_t buffer_kinds[OP_BACKEND_MAX_KINDS];
    /* counter record kinds it produces (it is a hardware-counter provider), 0 ends the list */
    uint16_t counter_kinds[8];
} op_backend_manifest;
#define OP_BACKEND_MANIFEST(var) \
    __attribute__((used, section(OP_BACKEND_MANIFEST_SECTION), aligned(8))) static const op_backend_manifest var

typedef struct op_backend {
    uint64_t size;     /* sizeof(op_backend) */
    const char *name;  /* manifest->name */
    /* Called once, after configuration is locked, if some context configured a kind this
     * backend serves (or asked for one of its intercept tables). A non-SUCCESS return is
     * logged once by the SDK ("<name> backend off: <reason>") and the backend is not called
     * again. NULL: nothing to start. */
    omniprof_status_t (*start)(void);
    /* A context started or stopped: enable/disable vendor sources. May be NULL. */
    void (*on_context_change)(void);
    /* Push pending vendor data into SDK buffers now (cuptiActivityFlushAll). Called before
     * the SDK flushes buffers at finalization, by omniprof_flush_buffer, and periodically.
     * Must be bounded in time. May be NULL. */
    void (*flush)(void);
    /* At finalization, after the last flush. Must not block unboundedly. May be NULL. */
    void (*finalize)(void);
    /* In a forked child, before the SDK restarts its threads. May be NULL. */
    void (*at_fork_child)(void);
    /* Operation names of kinds this backend owns: return NULL if unknown. */
    const char *(*operation_name)(uint32_t buffer_kind, int32_t operation);
    /* Iterate the valid operations of a kind (stop when cb returns non-zero). Returns -1 if
     * the backend does not own the kind. */
    int (*iterate_operations)(uint32_t buffer_kind, int (*cb)(int32_t operation, void *data), void *data);
    /* Arguments of records of its kinds; NULL means the SDK's generic iteration (inline args of
     * api records only). */
    omniprof_status_t (*iterate_record_args)(const omniprof_record_header_t *header,
                                             omniprof_arg_iterate_cb_t cb, void *data);
    /* Fill up to `max` agents (GPU only for device backends) and return how many exist.
     * Fields id/logical_index are assigned by the SDK. With may_init 0 the backend must not
     * initialize its device driver (CUDA: cuInit, which a program that forks before its first
     * CUDA call must not have in the parent): where the program has not initialized it yet, it
     * returns OP_AGENTS_LATER and is asked again at later queries (agent.c). May be NULL. */
    size_t (*query_agents)(omniprof_agent_v0_t *out, size_t max, int may_init);
    /* Serves omniprof_query_address_symbols (the CPU backend). May be NULL. */
    omniprof_status_t (*symbolize)(uint64_t address, omniprof_symbol_cb_t cb, void *data);
    /* What it serves (required). */
    const op_backend_manifest *manifest;
} op_backend;

/* The name of the backend that serves a buffer kind (registered, or found in a manifest beside
 * the SDK; nothing is loaded), or NULL when the core serves it (markers, retirement) or no
 * backend of this installation does. Callback kinds: through op_sdk_callback_kind_to_buffer_kind. */
const char *op_sdk_backend_for_kind(uint32_t buffer_kind);
uint32_t op_sdk_callback_kind_to_buffer_kind(uint32_t callback_kind);

/* Loads (once) the backend that produces counter records of `kind` (a hardware-counter
 * provider), found by its manifest. Returns 1 when such a backend is registered after the
 * call, else 0. */
int op_sdk_load_backend_for_counters(uint32_t counter_kind);

/* Every started backend pushes what it holds into the SDK buffers now (its flush hook): for a
 * backend that sees the process about to end abruptly (MPI_Finalize). */
void op_sdk_flush_backends(void);

/* Registers a backend (its constructor calls this). The descriptor and its manifest must stay
 * valid for the process. Returns SUCCESS; ERROR_INVALID_ARGUMENT for a duplicate name, a
 * missing manifest or one whose magic, size or name does not match the descriptor. */
omniprof_status_t op_sdk_register_backend(const op_backend *backend);

/* True when some active context traces (kind, operation) in buffer / callback mode. */
int op_sdk_buffer_enabled(uint32_t buffer_kind, int32_t operation);
int op_sdk_callback_enabled(uint32_t callback_kind, int32_t operation);
/* True when any context (active or not) configured the kind at all. */
int op_sdk_kind_configured(uint32_t buffer_kind);
/* True when any context configured the kind for `operation`; operation < 0: for every
 * operation (no filter). A backend whose source can record single operations (CUPTI's
 * per-call API records) turns on only the filtered ones when no context wants them all. */
int op_sdk_kind_op_configured(uint32_t buffer_kind, int32_t operation);
/* True when some active context traces the kind (any operation), paused or not: with
 * op_sdk_is_paused, what a backend asks in on_context_change to turn its source on or off. */
int op_sdk_kind_active(uint32_t buffer_kind);
int op_sdk_callback_kind_active(uint32_t callback_kind);
/* omniprof_pause()/omniprof_resume() for a backend that sees the program ask for it (the CUDA
 * backend: cudaProfilerStop/Start under --selected-regions). A pause flushes the backends and then
 * calls every backend's on_context_change; a resume calls on_context_change. */
void op_sdk_set_paused(int paused);
/* True while collection is paused (omniprof_pause). A backend whose source is costly to stop and
 * start again (probes) may keep it in place while paused and let the SDK drop the records. */
int op_sdk_is_paused(void);
/* True when any context configured callback tracing of `callback_kind`. */
int op_sdk_callback_kind_configured(uint32_t callback_kind);

/* Up to 4 contexts' external correlation values, captured at launch for async records. */
typedef struct op_sdk_external {
    uint32_t count;
    uint32_t context_index[4];
    omniprof_user_data_t value[4];
} op_sdk_external;

/* Fill `out` with the calling thread's top external id of each context that has one. */
void op_sdk_external_capture(op_sdk_external *out);
/* True once some tool pushed an external correlation id (backends are told through
 * on_context_change when that first happens). */
int op_sdk_external_in_use(void);

/* Copy `payload` (payload->size bytes) into the buffer of every active context that traces
 * (kind, operation) in buffer mode, with correlation_id.external set per context: from `ext`
 * when given (async activity), else from the calling thread's stacks. Category TRACING unless
 * op_sdk_emit_category is used. */
void op_sdk_emit(uint32_t kind, int32_t operation, const void *payload, const op_sdk_external *ext);
void op_sdk_emit_category(uint32_t category, uint32_t kind, int32_t operation, const void *payload,
                          const op_sdk_external *ext);
/* From a signal handler: never waits, never allocates; a full buffer counts a drop. */
void op_sdk_emit_from_signal(uint32_t kind, int32_t operation, const void *payload);
/* n records of kind/operation were lost before they could be emitted (a backend's own buffer
 * was full): counted in every buffer that would have received them, for the tool's drop rows
 * (omniprof_buffer_stats_t.records_lost_at_source). Not from a signal handler. */
void op_sdk_report_lost(uint32_t kind, int32_t operation, uint64_t n);

/* A marker record (MARKER_API or MARKER_RANGE_API) filled for a backend's or the user API's
 * markers (marker.c): header, span, source, and msg (NULL: "") inline, cut to cap - 1 bytes that
 * end in "..." when longer; r must have room for cap bytes after it. Correlation id and domain
 * are the caller's to set. */
typedef struct op_sdk_marker_span {
    uint64_t start, end;
    omniprof_thread_id_t tid, end_tid;
    uint64_t range_id;
    int32_t nesting; /* -1: n/a */
} op_sdk_marker_span;
void op_sdk_marker_record_fill(omniprof_buffer_tracing_marker_record_t *r, uint32_t kind, int32_t op,
                               const op_sdk_marker_span *span, uint32_t source, const char *msg, size_t cap);

/* Correlation ids of one traced call on the calling thread. begin: new internal id (never 0),
 * ancestor = the enclosing traced call on this thread, external = 0 (patched per context at
 * emit). end: pops the thread's stack and drops the call's own reference. */
void op_sdk_correlation_begin(omniprof_correlation_id_t *corr);
void op_sdk_correlation_end(const omniprof_correlation_id_t *corr);
/* Async activity that will carry `internal` takes a reference at launch and releases it when
 * its record was emitted; at zero a CORRELATION_ID_RETIREMENT record goes to contexts tracing
 * that kind. */
void op_sdk_correlation_retain(uint64_t internal);
void op_sdk_correlation_release(uint64_t internal);

/* Callback tracing. `state` is caller storage that lives from enter to exit of one call. */
typedef struct op_sdk_callback_state {
    uint32_t count;
    uint32_t context_index[8];
    omniprof_user_data_t user_data[8];
} op_sdk_callback_state;

void op_sdk_callback_enter(uint32_t callback_kind, int32_t operation, const omniprof_correlation_id_t *corr,
                           void *payload, op_sdk_callback_state *state);
void op_sdk_callback_exit(uint32_t callback_kind, int32_t operation, const omniprof_correlation_id_t *corr,
                          void *payload, op_sdk_callback_state *state);
/* One-phase callbacks (CODE_OBJECT load/unload, KERNEL_DISPATCH enqueue): phase as given. */
void op_sdk_callback_notify(uint32_t callback_kind, int32_t operation, omniprof_callback_phase_t phase,
                            const omniprof_correlation_id_t *corr, void *payload);

/* Process-lifetime string interning (kernel names, URIs). Thread-safe; never returns NULL for
 * a non-NULL input (falls back to "<out of memory>"). */
const char *op_sdk_intern(const char *s);

/* Threads the SDK or a backend creates: detached (never join them), all signals blocked,
 * tools told through omniprof_at_internal_thread_create, marked internal
 * (op_sdk_thread_is_internal). */
int op_sdk_create_thread(pthread_t *thread, void *(*fn)(void *), void *arg, omniprof_runtime_library_t lib,
                         const char *name);
int op_sdk_thread_is_internal(void);
/* omniprof attach's detach (the tool): the SDK's callback threads end, bounded; the next wake
 * starts them again. */
void op_sdk_park_threads(void);

/* Intercept tables a backend provides: did any tool ask for `type`? Then hand the tables over
 * with omniprof_set_api_table (public). */
int op_sdk_intercept_requested(omniprof_intercept_table_t type);

/* PC sampling (include/omniprof/pc_sampling.h). The backend that can sample registers a
 * provider from its constructor; the SDK asks it for an agent's configurations. The backend
 * reads the configuration the tools chose when it starts. */
typedef struct op_pc_sampling_provider {
    uint64_t size; /* sizeof(op_pc_sampling_provider) */
    /* Fill up to `max` configurations of GPU `agent`; returns how many it supports. */
    size_t (*query)(omniprof_agent_id_t agent, omniprof_pc_sampling_configuration_t *out, size_t max);
} op_pc_sampling_provider;
void op_sdk_pc_sampling_register_provider(const op_pc_sampling_provider *provider);

typedef struct op_sdk_pc_sampling_config {
    omniprof_pc_sampling_method_t method;
    omniprof_pc_sampling_unit_t unit;
    uint64_t interval; /* 0: the vendor's default */
    omniprof_agent_id_t agent; /* handle 0: every GPU */
} op_sdk_pc_sampling_config;
/* 1 and *out filled when some context configured the PC sampling service, else 0. */
int op_sdk_pc_sampling_get_config(op_sdk_pc_sampling_config *out);

/* PM sampling (include/omniprof/pm_sampling.h). The backend that can sample registers a
 * provider from its constructor for the offline questions (a chip's metrics, a set's passes);
 * it reads the configuration the tools chose when it starts. */
typedef struct op_pm_sampling_provider {
    uint64_t size; /* sizeof(op_pm_sampling_provider) */
    /* Base metrics of `chip`; -1 when the chip is unknown. cb non-zero stops. */
    int (*iterate)(const char *chip, omniprof_pm_sampling_metric_cb_t cb, void *data);
    /* Passes of names[0..n) on chip: 0 and *passes; -1 unknown chip; -2 unknown names (listed in
     * bad, space-separated); -3 another failure (msg says which). */
    int (*check)(const char *chip, const char *const *names, size_t n, size_t *passes, char *bad, size_t badlen,
                 char *msg, size_t msglen);
} op_pm_sampling_provider;
void op_sdk_pm_sampling_register_provider(const op_pm_sampling_provider *provider);

typedef struct op_sdk_pm_sampling_config {
    const char *const *metrics; /* interned, valid for the process */
    size_t n_metrics;
    uint64_t interval_ns;
    omniprof_agent_id_t agent; /* handle 0: every GPU */
} op_sdk_pm_sampling_config;
/* 1 and *out filled when some context configured the PM sampling service, else 0. */
int op_sdk_pm_sampling_get_config(op_sdk_pm_sampling_config *out);

/* SASS metrics (include/omniprof/sass_metrics.h): the configuration the tools chose. */
typedef struct op_sdk_sass_metrics_config {
    const char *kernel_filter;  /* interned POSIX ERE, "" for every kernel */
    const char *const *metrics; /* interned; the two default metrics when none were named */
    size_t n_metrics;
    omniprof_agent_id_t agent;
} op_sdk_sass_metrics_config;
int op_sdk_sass_metrics_get_config(op_sdk_sass_metrics_config *out);

/* Is the SDK finalizing or finalized? Backends stop producing then. */
int op_sdk_is_finalizing(void);

/* Progress points (causal profiling, docs/causal.md). The SDK calls the hook a backend set
 * (NULL: none) from omniprof_progress (type 1), omniprof_progress_begin (2), _end (3) and at
 * every range start of the user API (4); a backend that sees NVTX range starts calls
 * op_sdk_progress(4, message) itself. The hook is called on the program's thread and must be
 * cheap; it is never called from a signal handler. */
typedef void (*op_sdk_progress_fn)(int type, const char *name);
void op_sdk_set_progress_hook(op_sdk_progress_fn fn);
void op_sdk_progress(int type, const char *name);

#pragma GCC visibility pop

#endif /* OMNIPROF_SDK_BACKEND_H */
