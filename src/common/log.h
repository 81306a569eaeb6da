/* log.h — omniprof's one logging path: level-filtered, "omniprof: " prefixed, safe in signal
 * handlers.
 *
 * Messages are formatted into a fixed stack buffer and written with a write(2) loop to stderr
 * (or handed to the callback set with op_log_set_callback); errno is preserved. op_log() uses
 * vsnprintf, which glibc implements without malloc or locks for the integer and string
 * conversions we use (%d %u %ld %lu %llu %zu %x %s %p %c); no floating-point conversions in
 * handlers. The level comes from OMNIPROF_LOG_LEVEL (fatal|error|warning|info|trace; default
 * warning), read once. */
#ifndef OMNIPROF_COMMON_LOG_H
#define OMNIPROF_COMMON_LOG_H

#include <stdarg.h>

typedef enum op_log_level {
    OP_LOG_FATAL = 0,
    OP_LOG_ERROR = 1,
    OP_LOG_WARNING = 2,
    OP_LOG_INFO = 3,
    OP_LOG_TRACE = 4,
} op_log_level;

typedef void (*op_log_callback)(op_log_level level, const char *line, void *data);

/* Current level (messages above it are not printed). Async-signal-safe after first call. */
op_log_level op_log_get_level(void);
void op_log_set_level(op_log_level level);
/* Parses "fatal|error|warning|info|trace" (case-insensitive); returns -1 when unknown. */
int op_log_parse_level(const char *text);
/* NULL restores stderr. */
void op_log_set_callback(op_log_callback cb, void *data);

/* Would a message at `level` be written now (level enabled, and a callback or a log fd to write
 * to)? Before libomniprof-preload.so has its copy of stderr, nothing is written. */
int op_log_would_write(op_log_level level);

void op_log(op_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void op_logv(op_log_level level, const char *fmt, va_list ap);

#define op_error(...) op_log(OP_LOG_ERROR, __VA_ARGS__)
#define op_warn(...) op_log(OP_LOG_WARNING, __VA_ARGS__)
#define op_info(...) op_log(OP_LOG_INFO, __VA_ARGS__)
#define op_trace(...) op_log(OP_LOG_TRACE, __VA_ARGS__)

/* Write a constant string (no formatting) — the one to use in signal handlers. */
void op_log_raw(const char *msg);

/* ALWAYS/NEVER (SQLite): assert in debug builds, a plain test in release builds. */
#ifdef OMNIPROF_DEBUG
#include <assert.h>
#define OP_ALWAYS(X) ((X) ? 1 : (assert(0), 0))
#define OP_NEVER(X) ((X) ? (assert(0), 1) : 0)
#else
#define OP_ALWAYS(X) (X)
#define OP_NEVER(X) (X)
#endif

#endif /* OMNIPROF_COMMON_LOG_H */
