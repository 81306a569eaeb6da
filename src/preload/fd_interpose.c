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
 * Every other call goes to libc unchanged; the calls' own errors (EINVAL, EBADF of a bad
 * number) come from libc, in libc's order of checks. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

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
static int before_dup(int oldfd, int newfd)
{
    if (op_preload_fd_bit(oldfd)) {
        errno = EBADF;
        return 1;
    }
    if (newfd == oldfd || !op_preload_fd_bit(newfd)) return 0;
    if (fcntl(oldfd, F_GETFD) < 0) return 1; /* libc would fail on oldfd first: EBADF */
    return op_preload_fd_relocate(newfd) == 0 ? 0 : -1;
}

OMNIPROF_API int dup2(int oldfd, int newfd)
{
    int b = before_dup(oldfd, newfd);
    if (b) {
        if (b == 1) errno = EBADF;
        return -1;
    }
    dup2_fn real = OP_REAL(dup2_fn, dup2);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(oldfd, newfd);
}

OMNIPROF_API int dup3(int oldfd, int newfd, int flags)
{
    dup3_fn real = OP_REAL(dup3_fn, dup3);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if ((flags & ~O_CLOEXEC) || oldfd == newfd) return real(oldfd, newfd, flags); /* EINVAL */
    int b = before_dup(oldfd, newfd);
    if (b) {
        if (b == 1) errno = EBADF;
        return -1;
    }
    return real(oldfd, newfd, flags);
}
