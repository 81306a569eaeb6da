/* fd_interpose.c — the program's close, closefrom, close_range, fclose, dup2 and dup3, so that
 * the profiler's fds (fd_registry.c) survive a program that closes or replaces every fd it did
 * not open, while the program sees what it would have seen without the profiler:
 *
 *   close(ours)                 -1, EBADF (the number was not open without the profiler)
 *   closefrom(n), close_range(a, b, 0 or UNSHARE)
 *                               every fd of the range is closed except the profiler's (the
 *                               range is cut around them; registrations wait meanwhile)
 *   close_range(.., CLOEXEC)    passed through: it only marks fds close-on-exec, as ours are
 *   fclose(stream on ours)      the stream is freed without closing the fd; EOF, EBADF (as
 *                               fclose of a stream whose fd was closed)
 *   dup2/dup3(old, ours)        succeeds as onto a free number: the profiler's file first moves
 *                               to another number (op_preload_fd_relocate), then libc's call runs
 *   dup2/dup3(ours, new)        -1, EBADF (ours was not open without the profiler)
 *   pipe/pipe2                  libc's call; on a thread inside a capture scope (op_fd_capture_
 *                               begin/end of fd_guard.h) both ends are then adopted as the
 *                               profiler's, and the numbers returned are the adopted ones.
 *                               That is how a library the profiler loads keeps a pipe of its own
 *                               out of the program's numbers: libunwind opens the pipe it
 *                               checks memory through when it first initialises, and keeps the
 *                               numbers in a static array (issue 31 item 1).
 * Every other call goes to libc unchanged; the calls' own errors (EINVAL, EBADF of a bad
 * number) come from libc, in libc's order of checks. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fd_guard.h"
#include "preload/preload_internal.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

typedef int (*close_fn)(int);
typedef int (*fclose_fn)(FILE *);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);
typedef int (*pipe2_fn)(int[2], int);

/* The capture scope: per thread (initial-exec TLS: no allocation on first use). */
static __thread int t_capture __attribute__((tls_model("initial-exec")));
#define OP_CAPTURE_MAX 8
static int g_captured[OP_CAPTURE_MAX];
static _Atomic int g_n_captured;

void omniprof_preload_fd_capture(int on) { t_capture = on; }

/* How many fds were captured so far; the first `cap` of them (in order of capture) to out. */
int omniprof_preload_fd_captured(int *out, int cap)
{
    int n = atomic_load_explicit(&g_n_captured, memory_order_acquire);
    for (int i = 0; i < n && i < cap; i++) out[i] = g_captured[i];
    return n;
}

static int capture_pipe(int fds[2])
{
    for (int i = 0; i < 2; i++) {
        int nfd = omniprof_preload_fd_adopt(fds[i], OP_FD_IDENTITY);
        if (nfd < 0) { /* cannot happen short of EMFILE: give the library no pipe rather than one of the program's numbers */
            int e = errno;
            if (i == 1) omniprof_preload_fd_close(fds[0]);
            errno = e;
            return -1;
        }
        fds[i] = nfd;
        int k = atomic_load_explicit(&g_n_captured, memory_order_relaxed);
        if (k < OP_CAPTURE_MAX) {
            g_captured[k] = nfd;
            atomic_store_explicit(&g_n_captured, k + 1, memory_order_release);
        }
    }
    return 0;
}

/* fsync and fdatasync: SQLite calls them on its own numbers directly (not through its VFS's
 * system-call table, where db_files.c follows relocations). On a thread that runs only the
 * profiler's SQLite (omniprof_preload_fd_sync_scope), a number that moved (the program dup2()ed
 * onto it) is followed to where the profiler's file went; a number that is no longer the
 * profiler's fails with EBADF rather than syncing the program's file. */
typedef int (*sync_fn)(int);
static __thread int t_sync_scope __attribute__((tls_model("initial-exec")));

void omniprof_preload_fd_sync_scope(int delta) { t_sync_scope += delta; }

static int profiler_sync(int fd, sync_fn real)
{
    omniprof_preload_fd_io_begin(1);
    int ufd = fd;
    if (omniprof_preload_fd_resolve(fd) != fd || op_preload_fd_bit(fd))
        ufd = omniprof_preload_fd_verify(fd) == 0 ? omniprof_preload_fd_resolve(fd) : -1;
    int rc = ufd < 0 ? (errno = EBADF, -1) : real(ufd);
    int e = errno;
    omniprof_preload_fd_io_end();
    errno = e;
    return rc;
}

OMNIPROF_API int fsync(int fd)
{
    sync_fn real = OP_REAL(sync_fn, fsync);
    if (!real) return (int)syscall(SYS_fsync, fd);
    return t_sync_scope > 0 ? profiler_sync(fd, real) : real(fd);
}

OMNIPROF_API int fdatasync(int fd)
{
    sync_fn real = OP_REAL(sync_fn, fdatasync);
    if (!real) return (int)syscall(SYS_fdatasync, fd);
    return t_sync_scope > 0 ? profiler_sync(fd, real) : real(fd);
}

OMNIPROF_API int pipe2(int fds[2], int flags)
{
    pipe2_fn real = OP_REAL(pipe2_fn, pipe2);
    int rc = real ? real(fds, flags) : (int)syscall(SYS_pipe2, fds, flags);
    if (rc == 0 && t_capture) rc = capture_pipe(fds);
    return rc;
}

OMNIPROF_API int pipe(int fds[2])
{
    int rc = (int)syscall(SYS_pipe2, fds, 0);
    if (rc == 0 && t_capture) rc = capture_pipe(fds);
    return rc;
}

OMNIPROF_API int close(int fd)
{
    if (op_preload_fd_bit(fd)) {
        errno = EBADF;
        return -1;
    }
    close_fn real = OP_REAL(close_fn, close);
    return real ? real(fd) : (int)syscall(SYS_close, fd);
}

OMNIPROF_API int fclose(FILE *stream)
{
    fclose_fn real = OP_REAL(fclose_fn, fclose);
    if (!real) {
        errno = ENOSYS;
        return EOF;
    }
    if (stream && op_preload_fd_bit(stream->_fileno)) {
        /* glibc skips the close of a stream whose fd is -1 and still frees it (what is
         * buffered is lost, as a write to a closed fd would lose it). */
        stream->_fileno = -1;
        real(stream);
        errno = EBADF;
        return EOF;
    }
    return real(stream);
}

/* close_range(2) without libc (glibc < 2.34 has no wrapper); falls back to close() calls up to
 * the fd limit where the kernel lacks it. */
static int sys_close_range(unsigned first, unsigned last, unsigned flags)
{
    long rc = syscall(SYS_close_range, first, last, flags);
    if (rc == 0 || errno != ENOSYS || (flags & ~CLOSE_RANGE_UNSHARE)) return rc == 0 ? 0 : -1;
    struct rlimit rl;
    unsigned max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1u << 20) ? (unsigned)rl.rlim_cur : 1u << 20;
    for (unsigned fd = first; fd <= last && fd < max; fd++) syscall(SYS_close, fd);
    return 0;
}

/* Close [first, last] except the profiler's fds. Returns 0 or -1 (errno). */
static int close_except_ours(unsigned first, unsigned last, unsigned flags)
{
    int ours[256], rc = 0, calls = 0;
    unsigned cur = first;
    op_preload_fd_lock();
    for (;;) {
        int n = op_preload_fd_list_locked(cur, last, ours, 256);
        for (int i = 0; i < n && rc == 0; i++) {
            if ((unsigned)ours[i] > cur) {
                rc = sys_close_range(cur, (unsigned)ours[i] - 1, flags);
                calls++;
            }
            cur = (unsigned)ours[i] + 1;
        }
        if (rc != 0 || n < 256 || cur == 0) break;
    }
    if (rc == 0 && cur != 0 && cur <= last) {
        rc = sys_close_range(cur, last, flags);
        calls++;
    }
    if (rc == 0 && calls == 0 && (flags & CLOSE_RANGE_UNSHARE)) rc = (int)syscall(SYS_unshare, 0x400 /* CLONE_FILES */);
    int e = errno;
    op_preload_fd_unlock();
    errno = e;
    return rc;
}

OMNIPROF_API int close_range(unsigned first, unsigned last, int flags)
{
    if (first > last || (flags & ~(int)(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC)) || (flags & CLOSE_RANGE_CLOEXEC))
        return (int)syscall(SYS_close_range, first, last, (unsigned)flags); /* libc's answer */
    return close_except_ours(first, last, (unsigned)flags);
}

OMNIPROF_API void closefrom(int lowfd)
{
    close_except_ours(lowfd < 0 ? 0u : (unsigned)lowfd, ~0u, 0);
}

/* The part dup2 and dup3 share: 1 when the call must fail with EBADF, -1 when the profiler's
 * file could not move away (errno set), 0 to go on with libc's call. */
static int before_dup(int oldfd, int newfd, bool *relocating)
{
    *relocating = false;
    if (op_preload_fd_bit(oldfd)) {
        errno = EBADF;
        return 1;
    }
    if (newfd == oldfd || !op_preload_fd_bit(newfd)) return 0;
    if (fcntl(oldfd, F_GETFD) < 0) return 1; /* libc would fail on oldfd first: EBADF */
    /* no I/O of the profiler's between the move and libc's call (fd_registry.c, invariant 5) */
    op_preload_fd_relocate_begin();
    *relocating = true;
    if (op_preload_fd_relocate(newfd) == 0) return 0;
    op_preload_fd_relocate_end();
    *relocating = false;
    return -1;
}

OMNIPROF_API int dup2(int oldfd, int newfd)
{
    dup2_fn real = OP_REAL(dup2_fn, dup2);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    bool relocating;
    int b = before_dup(oldfd, newfd, &relocating);
    if (b) {
        if (b == 1) errno = EBADF;
        return -1;
    }
    int rc = real(oldfd, newfd);
    if (relocating) {
        int e = errno;
        op_preload_fd_relocate_end();
        errno = e;
    }
    return rc;
}

OMNIPROF_API int dup3(int oldfd, int newfd, int flags)
{
    dup3_fn real = OP_REAL(dup3_fn, dup3);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if ((flags & ~O_CLOEXEC) || oldfd == newfd) return real(oldfd, newfd, flags); /* EINVAL */
    bool relocating;
    int b = before_dup(oldfd, newfd, &relocating);
    if (b) {
        if (b == 1) errno = EBADF;
        return -1;
    }
    int rc = real(oldfd, newfd, flags);
    if (relocating) {
        int e = errno;
        op_preload_fd_relocate_end();
        errno = e;
    }
    return rc;
}
