/* log.c — formatting and writing of omniprof's log lines (see log.h for the safety rules). */
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/fd_guard.h"

static int g_level = -1; /* -1: not read yet; any thread may read it first (relaxed atomics: every
                           * racing reader computes the same value from the environment) */
static op_log_callback g_callback;
static void *g_callback_data;

int op_log_parse_level(const char *text)
{
    static const char *const names[] = {"fatal", "error", "warning", "info", "trace"};
    if (!text) return -1;
    for (int i = 0; i < 5; i++)
        if (strcasecmp(text, names[i]) == 0) return i;
    if (strcasecmp(text, "warn") == 0) return OP_LOG_WARNING;
    if (strcasecmp(text, "debug") == 0) return OP_LOG_TRACE;
    return -1;
}

op_log_level op_log_get_level(void)
{
    int level = __atomic_load_n(&g_level, __ATOMIC_RELAXED);
    if (level < 0) {
        level = op_log_parse_level(getenv("OMNIPROF_LOG_LEVEL"));
        if (level < 0) level = OP_LOG_WARNING;
        int unset = -1;
        if (!__atomic_compare_exchange_n(&g_level, &unset, level, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) level = unset;
    }
    return (op_log_level)level;
}

void op_log_set_level(op_log_level level) { __atomic_store_n(&g_level, (int)level, __ATOMIC_RELAXED); }

void op_log_set_callback(op_log_callback cb, void *data)
{
    g_callback_data = data;
    g_callback = cb;
}

/* Lines go to the profiler's own copy of stderr when libomniprof-preload.so is loaded (never to
 * whatever file the program put on fd 2 later, nor anywhere when stderr was closed at start). */
static void write_all(int fd, const char *buf, size_t len)
{
    bool guarded = fd == STDERR_FILENO;
    /* a line may come from a signal handler: never wait for a relocation, drop the line */
    if (guarded && op_fd_io_begin(false) != 0) return;
    if (fd == STDERR_FILENO) fd = op_fd_log();
    while (fd >= 0 && len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        buf += n;
        len -= (size_t)n;
    }
    if (guarded) op_fd_io_end();
}

int op_log_would_write(op_log_level level)
{
    return (int)level <= (int)op_log_get_level() && (g_callback || op_fd_log() >= 0);
}

void op_logv(op_log_level level, const char *fmt, va_list ap)
{
    if ((int)level > (int)op_log_get_level()) return;
    int saved_errno = errno;
    char line[1024];
    static const char prefix[] = "omniprof: ";
    memcpy(line, prefix, sizeof(prefix) - 1);
    /* Leave room for a '\n' and the NUL after the text. */
    size_t avail = sizeof(line) - (sizeof(prefix) - 1) - 1;
    int n = vsnprintf(line + sizeof(prefix) - 1, avail, fmt, ap);
    size_t text = n < 0 ? 0 : ((size_t)n >= avail ? avail - 1 : (size_t)n);
    size_t len = sizeof(prefix) - 1 + text;
    if (len == 0 || line[len - 1] != '\n') line[len++] = '\n';
    line[len] = '\0';
    op_log_callback cb = g_callback;
    if (cb)
        cb(level, line, g_callback_data);
    else
        write_all(STDERR_FILENO, line, len);
    errno = saved_errno;
}

void op_log(op_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    op_logv(level, fmt, ap);
    va_end(ap);
}

void op_log_raw(const char *msg)
{
    int saved_errno = errno;
    write_all(STDERR_FILENO, "omniprof: ", 10);
    write_all(STDERR_FILENO, msg, strlen(msg));
    errno = saved_errno;
}
