/* fd_guard.c — client side of the profiler's fd registry (fd_guard.h): each call goes to
 * libomniprof-preload.so when it is loaded (weak references, bound when this library is
 * loaded), else does what can be done locally (move above the floor, close). */
#include "common/fd_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Exported by libomniprof-preload.so (src/preload/fd_registry.c). */
extern int omniprof_preload_fd_adopt(int fd, unsigned flags) __attribute__((weak));
extern int omniprof_preload_fd_close(int fd) __attribute__((weak));
extern int omniprof_preload_fd_is_ours(int fd) __attribute__((weak));
extern int omniprof_preload_fd_resolve(int fd) __attribute__((weak));
extern int omniprof_preload_fd_verify(int fd) __attribute__((weak));
extern int omniprof_preload_log_fd_checked(void) __attribute__((weak));
extern int omniprof_preload_fd_io_begin(int may_wait) __attribute__((weak));
extern void omniprof_preload_fd_io_end(void) __attribute__((weak));
extern void omniprof_preload_fd_capture(int on) __attribute__((weak));
extern int omniprof_preload_fd_captured(int *out, int cap) __attribute__((weak));

int op_fd_floor(void)
{
    static _Atomic int floor_cache;
    int f = atomic_load_explicit(&floor_cache, memory_order_relaxed);
    if (f) return f;
    struct rlimit rl;
    long lim = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) lim = (long)rl.rlim_cur;
    else if (getrlimit(RLIMIT_NOFILE, &rl) == 0) lim = 1L << 20;
    long v = lim / 4 * 3;
    if (v > 4096) v = 4096;
    if (v < 3) v = 3;
    atomic_store_explicit(&floor_cache, (int)v, memory_order_relaxed);
    return (int)v;
}

int op_fd_adopt(int fd, unsigned flags)
{
    if (omniprof_preload_fd_adopt) return omniprof_preload_fd_adopt(fd, flags);
    if (fd < 0) {
        errno = EBADF;
        return -1;
    }
    int nfd = fcntl(fd, F_DUPFD_CLOEXEC, op_fd_floor());
    if (nfd < 0 && fd < 3 && errno != EBADF) nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (nfd < 0) {
        if (errno == EBADF) return -1; /* closed under us before it was ours */
        if (fd < 3) {
            int e = errno;
            syscall(SYS_close, fd);
            errno = e;
            return -1;
        }
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
    }
    syscall(SYS_close, fd);
    return nfd;
}

int op_fd_adopt_path(int fd, const char *path, unsigned flags)
{
    int nfd = op_fd_adopt(fd, flags);
    if (nfd < 0) return -1;
    struct stat a, b;
    if (fstat(nfd, &a) != 0 || stat(path, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
        op_fd_close(nfd);
        errno = EBADF;
        return -1;
    }
    return nfd;
}

int op_fd_tmpfile(const char *dir, unsigned flags)
{
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) {
        fd = op_fd_adopt(fd, flags);
        struct stat st; /* still the unnamed file just made (not a number the program reused) */
        if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0 || st.st_size != 0)) {
            op_fd_close(fd);
            errno = EBADF;
            return -1;
        }
        return fd;
    }
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return -1;
    char path[4200];
    int n = snprintf(path, sizeof path, "%s/.omniprof-tmp-XXXXXX", dir && *dir ? dir : ".");
    if (n < 0 || (size_t)n >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) return -1;
    fd = op_fd_adopt_path(fd, path, flags);
    int e = errno;
    unlink(path);
    errno = e;
    return fd;
}

int op_fd_close(int fd)
{
    if (omniprof_preload_fd_close) return omniprof_preload_fd_close(fd);
    return (int)syscall(SYS_close, fd);
}

bool op_fd_is_ours(int fd) { return omniprof_preload_fd_is_ours ? omniprof_preload_fd_is_ours(fd) != 0 : false; }

int op_fd_resolve(int fd) { return omniprof_preload_fd_resolve ? omniprof_preload_fd_resolve(fd) : fd; }

int op_fd_verify(int fd) { return omniprof_preload_fd_verify ? omniprof_preload_fd_verify(fd) : 0; }

int op_fd_usable(int fd)
{
    if (fd < 0) return -1;
    if (op_fd_verify(fd) != 0) {
        errno = ESTALE;
        return -1;
    }
    return op_fd_resolve(fd);
}

/* The log fd is adopted with its identity: a line is dropped rather than written into a file
 * the program put on that number behind the interposers. */
int op_fd_log(void)
{
    if (!omniprof_preload_log_fd_checked) return STDERR_FILENO;
    return omniprof_preload_log_fd_checked();
}

void op_fd_capture_begin(void)
{
    if (omniprof_preload_fd_capture) omniprof_preload_fd_capture(1);
}

int op_fd_capture_end(int *fds, int cap)
{
    if (!omniprof_preload_fd_capture) return 0;
    omniprof_preload_fd_capture(0);
    int tmp[1];
    return omniprof_preload_fd_captured(fds ? fds : tmp, fds ? cap : 0);
}

int op_fd_io_begin(bool may_wait)
{
    return omniprof_preload_fd_io_begin ? omniprof_preload_fd_io_begin(may_wait) : 0;
}

void op_fd_io_end(void)
{
    if (omniprof_preload_fd_io_end) omniprof_preload_fd_io_end();
}

/* One read or write through a checked fd (op_fd_write_checked, op_fd_read_checked). */
static ssize_t checked_io(int fd, void *buf, size_t n, bool may_wait, bool writing)
{
    if (op_fd_io_begin(may_wait) != 0) {
        errno = EAGAIN;
        return -1;
    }
    int ufd = op_fd_usable(fd);
    ssize_t r = ufd < 0 ? -1 : writing ? write(ufd, buf, n) : read(ufd, buf, n);
    int e = errno;
    op_fd_io_end();
    errno = e;
    return r;
}

ssize_t op_fd_write_checked(int fd, const void *buf, size_t n, bool may_wait)
{
    return checked_io(fd, (void *)buf, n, may_wait, true);
}

ssize_t op_fd_read_checked(int fd, void *buf, size_t n, bool may_wait) { return checked_io(fd, buf, n, may_wait, false); }
