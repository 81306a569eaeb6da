/* stub_sdk.c — a stand-in for the op_sdk_* side of src/sdk/backend.h, used by the CPU tests
 * only while the tree has no omniprof-sdk target (a partial checkout): it lets the CPU backend
 * run LD_PRELOADed on its own. Every kind in $OMNIPROF_CPUTEST_KINDS (default: all four CPU
 * kinds) counts as configured and enabled; op_sdk_emit writes records as text
 * (cpu_record_writer.h); at exit the backend is finalized and every frame address is
 * symbolized through the backend's symbolize. Not part of any product library. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_record_writer.h"
#include "sdk/backend.h"

#define STUB_API __attribute__((visibility("default")))

static const op_backend *g_backend;
static _Atomic int g_finalizing;
static _Atomic uint64_t g_corr = 1;

static int kind_on(uint32_t kind)
{
    const char *k = getenv("OMNIPROF_CPUTEST_KINDS");
    if (!k || !*k) k = "sample,process,wrapper,thread";
    switch (kind) {
    case OMNIPROF_BUFFER_TRACING_CPU_SAMPLE: return strstr(k, "sample") != NULL;
    case OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE: return strstr(k, "process") != NULL;
    case OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER: return strstr(k, "wrapper") != NULL;
    case OMNIPROF_BUFFER_TRACING_THREAD: return strstr(k, "thread") != NULL;
    default: return 0;
    }
}

static pid_t g_final_pid;
static void stub_exit(void)
{
    if (g_final_pid == getpid()) return;
    g_final_pid = getpid();
    atomic_store(&g_finalizing, 1);
    if (g_backend && g_backend->flush) g_backend->flush();
    if (g_backend && g_backend->finalize) g_backend->finalize();
    rw_finish(g_backend ? g_backend->symbolize : NULL);
}

STUB_API omniprof_status_t omniprof_finalize(void)
{
    stub_exit();
    return OMNIPROF_STATUS_SUCCESS;
}

STUB_API omniprof_status_t op_sdk_register_backend(const op_backend *backend)
{
    g_backend = backend;
    atexit(stub_exit);
    pthread_atfork(NULL, NULL, rw_at_fork_child);
    if (backend->start) backend->start();
    if (backend->flush) backend->flush(); /* announce threads */
    return OMNIPROF_STATUS_SUCCESS;
}

STUB_API int op_sdk_buffer_enabled(uint32_t kind, int32_t op)
{
    (void)op;
    return kind_on(kind);
}
STUB_API int op_sdk_callback_enabled(uint32_t kind, int32_t op)
{
    (void)kind;
    (void)op;
    return 0;
}
STUB_API int op_sdk_kind_configured(uint32_t kind) { return kind_on(kind); }

STUB_API void op_sdk_emit(uint32_t kind, int32_t op, const void *payload, const op_sdk_external *ext)
{
    (void)op;
    (void)ext;
    rw_record(kind, payload);
}
STUB_API void op_sdk_emit_from_signal(uint32_t kind, int32_t op, const void *payload)
{
    (void)kind;
    (void)op;
    (void)payload;
}
STUB_API void op_sdk_correlation_begin(omniprof_correlation_id_t *corr)
{
    memset(corr, 0, sizeof *corr);
    corr->internal = atomic_fetch_add(&g_corr, 1);
}
STUB_API void op_sdk_correlation_end(const omniprof_correlation_id_t *corr) { (void)corr; }

STUB_API const char *op_sdk_intern(const char *s) { return s ? strdup(s) : NULL; }

STUB_API int op_sdk_create_thread(pthread_t *thread, void *(*fn)(void *), void *arg, omniprof_runtime_library_t lib,
                                  const char *name)
{
    (void)lib;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(thread, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        pthread_setname_np(*thread, name ? name : "omniprof");
        pthread_detach(*thread);
    }
    return rc;
}
STUB_API int op_sdk_thread_is_internal(void) { return 0; }
STUB_API int op_sdk_is_finalizing(void) { return atomic_load(&g_finalizing); }
