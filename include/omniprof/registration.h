/* omniprof/registration.h — how a tool finds the SDK and the SDK finds its tools.
 *
 * At its first use (a user-API call, a backend starting, or the SDK's constructor when
 * OMNIPROF_INIT_AT_LOAD is unset or 1) the SDK collects every `omniprof_configure` it can find:
 * the one visible through RTLD_DEFAULT and the link map (the application and every loaded
 * library, including LD_PRELOADed tools), the one in each library named in
 * OMNIPROF_TOOL_LIBRARIES (':'-separated; dlopened), and each function handed to
 * omniprof_force_configure. Each is called once, in that order, and returns its
 * {initialize, finalize} pair; then every initialize runs, creating contexts, buffers and
 * services. When the last initialize returns, configuration is locked: calls that configure
 * return OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED.
 *
 * At exit (atexit, or omniprof_finalize) the SDK asks backends to flush, retires live
 * correlation ids, stops every context, flushes every buffer and delivers what it holds, then
 * calls each finalize in reverse order (so a tool has seen every record when its finalize
 * runs; omniprof_flush_buffer still works there). It never joins a thread that can be blocked:
 * a callback thread that does not answer within OMNIPROF_FINALIZE_TIMEOUT_MS is abandoned. */
#ifndef OMNIPROF_REGISTRATION_H
#define OMNIPROF_REGISTRATION_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

typedef struct omniprof_client_id_t {
    uint64_t size;    /* sizeof(omniprof_client_id_t) */
    const char *name; /* the tool may set it in omniprof_configure; copied by the SDK */
    uint32_t handle;  /* index of this client, from 0 */
} omniprof_client_id_t;

/* finalize_func lets a tool ask for its own finalization early (it is idempotent). */
typedef void (*omniprof_client_finalize_t)(omniprof_client_id_t id);

typedef int (*omniprof_tool_initialize_t)(omniprof_client_finalize_t finalize_func, void *tool_data);
typedef void (*omniprof_tool_finalize_t)(void *tool_data);

typedef struct omniprof_tool_configure_result_t {
    uint64_t size;                        /* sizeof(omniprof_tool_configure_result_t) */
    omniprof_tool_initialize_t initialize; /* may be NULL; a non-zero return deactivates the tool */
    omniprof_tool_finalize_t finalize;     /* may be NULL */
    void *tool_data;
} omniprof_tool_configure_result_t;

/**
 * @brief **omniprof_configure** is the function a tool defines (with default visibility) to be
 * found by the SDK. It is not defined by the SDK.
 * @param version: OMNIPROF_VERSION_NUMBER of the SDK.
 * @param runtime_version: the version string of the SDK.
 * @param priority: 0 for the first tool found, 1 for the next, ...
 * @param client_id: the tool may set client_id->name.
 * @return a pointer to a result that stays valid until finalize, or NULL to decline.
 */
typedef omniprof_tool_configure_result_t *(*omniprof_configure_func_t)(uint32_t version,
                                                                        const char *runtime_version,
                                                                        uint32_t priority,
                                                                        omniprof_client_id_t *client_id);

/* Declared with default visibility so that a tool defining it exports it even when built with
 * -fvisibility=hidden. */
OMNIPROF_API omniprof_tool_configure_result_t *omniprof_configure(uint32_t version, const char *runtime_version,
                                                     uint32_t priority, omniprof_client_id_t *client_id);

/**
 * @brief **omniprof_force_configure** registers a configure function directly, for tools that
 * cannot export omniprof_configure (static tools, tests). It initializes the SDK if it was not.
 * @return SUCCESS; ERROR_INVALID_ARGUMENT if fn is NULL; ERROR_CONFIGURATION_LOCKED once the
 * SDK has initialized (the function is not called); ERROR_FINALIZED after finalization.
 */
OMNIPROF_API omniprof_status_t omniprof_force_configure(omniprof_configure_func_t fn);

/** @brief **omniprof_is_initialized**: *status = 1 when initialization completed, 0 otherwise. */
OMNIPROF_API omniprof_status_t omniprof_is_initialized(int *status);

/** @brief **omniprof_is_finalized**: *status = 1 finalized, -1 finalizing, 0 not. */
OMNIPROF_API omniprof_status_t omniprof_is_finalized(int *status);

/**
 * @brief **omniprof_initialize** runs registration now if it has not run (normally it runs
 * lazily). Idempotent. @return SUCCESS, or ERROR_FINALIZED.
 */
OMNIPROF_API omniprof_status_t omniprof_initialize(void);

/**
 * @brief **omniprof_finalize** finalizes now, as at exit: stop contexts, call tools' finalize,
 * flush and deliver every buffer. Idempotent; a second call returns SUCCESS and does nothing.
 * Must not be called from a buffer callback (returns ERROR_BUFFER_BUSY).
 */
OMNIPROF_API omniprof_status_t omniprof_finalize(void);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_REGISTRATION_H */
