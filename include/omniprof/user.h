/* omniprof/user.h — the user API: markers, ranges, pause/resume, thread names, progress points.
 *
 * Link with -lomniprof-user. Every call goes through a dispatch table that holds no-ops until
 * the omniprof SDK is loaded in the process (for example under `omniprof run`); a program
 * linked with it runs unchanged without the profiler. All calls are thread-safe and cheap
 * when no profiler is present. Strings are copied; the caller keeps ownership. */
#ifndef OMNIPROF_USER_H
#define OMNIPROF_USER_H

#include <stdint.h>

#include "omniprof/defines.h"

OMNIPROF_EXTERN_C_BEGIN

typedef uint64_t omniprof_range_id_t;

/** @brief **omniprof_mark** records an instant event named `message`. */
OMNIPROF_API void omniprof_mark(const char *message);

/**
 * @brief **omniprof_range_push** opens a nested range on the calling thread.
 * @return the nesting level of the new range (0 for the outermost), or -1 on bad input.
 */
OMNIPROF_API int omniprof_range_push(const char *message);

/**
 * @brief **omniprof_range_pop** closes the innermost range of the calling thread.
 * @return the nesting level of the closed range, or -1 if the thread had none open.
 */
OMNIPROF_API int omniprof_range_pop(void);

/**
 * @brief **omniprof_range_start** opens a process-wide range that any thread may stop.
 * @return its id (never 0 when the profiler is present; 0 without a profiler).
 */
OMNIPROF_API omniprof_range_id_t omniprof_range_start(const char *message);

/** @brief **omniprof_range_stop** closes the range `id` returned by omniprof_range_start. */
OMNIPROF_API void omniprof_range_stop(omniprof_range_id_t id);

/** @brief **omniprof_pause** stops collection process-wide (all contexts of the tool). */
OMNIPROF_API void omniprof_pause(void);

/** @brief **omniprof_resume** restarts collection after omniprof_pause. */
OMNIPROF_API void omniprof_resume(void);

/** @brief **omniprof_name_thread** names the calling thread in profiles. */
OMNIPROF_API void omniprof_name_thread(const char *name);

/** @brief **omniprof_progress** counts one unit of work done (a throughput progress point). */
OMNIPROF_API void omniprof_progress(const char *name);

/** @brief **omniprof_progress_begin/end** bracket one transaction (a latency progress point). */
OMNIPROF_API void omniprof_progress_begin(const char *name);
OMNIPROF_API void omniprof_progress_end(const char *name);

/* The dispatch table a tool receives for OMNIPROF_INTERCEPT_TABLE_USER_API. Fields are only
 * appended. A wrapper installed in it must call the previous entry. */
typedef struct omniprof_user_api_table_t {
    uint64_t size; /* sizeof(omniprof_user_api_table_t) of the user library */
    void (*mark)(const char *message);
    int (*range_push)(const char *message);
    int (*range_pop)(void);
    omniprof_range_id_t (*range_start)(const char *message);
    void (*range_stop)(omniprof_range_id_t id);
    void (*pause)(void);
    void (*resume)(void);
    void (*name_thread)(const char *name);
    void (*progress)(const char *name);
    void (*progress_begin)(const char *name);
    void (*progress_end)(const char *name);
} omniprof_user_api_table_t;

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_USER_H */
