/* fd_guard.c — client side of the profiler's fd registry (fd_guard.h): each call goes to
 * libomniprof-preload.so's registry when that library is loaded, through the one table it
 * exports (omniprof_preload_fd_api, looked up when this library loads), else does what can be
 * done locally (move above the floor, close). */
#include "common/fd_guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/preload.h"

/* The registry's table, or NULL in a process without libomniprof-preload.so. Looked up by the
 * first call that may not run in a signal handler (adopt, close, capture: every fd of ours was
 * adopted before a handler can use it), or by this library's constructor, whichever comes
 * first: a library's code can run before its own constructors (another library's constructor
 * starting the SDK, which starts a backend), so the constructor alone is too late. */
static const op_preload_fd_api *_Atomic g_api;
static _Atomic int g_bound;

/* In the global scope (LD_PRELOAD), or a library that `omniprof attach` loaded into a local
 * scope of its own: found by its soname there, never loaded here. Not async-signal-safe. */
static const op_preload_fd_api *api_bind(void)
{
    if (atomic_load_explicit(&g_bound, memory_order_acquire)) return atomic_load_explicit(&g_api, memory_order_relaxed);
    typedef const op_preload_fd_api *(*api_fn)(void);
    api_fn f = (api_fn)dlsym(RTLD_DEFAULT, "omniprof_preload_fd_api");
    if (!f) {
        void *h = dlopen("libomniprof-preload.so", RTLD_LAZY | RTLD_NOLOAD);
        if (h) f = (api_fn)dlsym(h, "omniprof_preload_fd_api");
    }
    const op_preload_fd_api *a = f ? f() : NULL;
    if (a && a->size < sizeof *a) a = NULL;
    atomic_store_explicit(&g_api, a, memory_order_relaxed);
    atomic_store_explicit(&g_bound, 1, memory_order_release);
    return a;
}

__attribute__((constructor(101))) static void fd_guard_bind(void) { api_bind(); }

/* For the calls a signal handler may make: what is bound (nothing of ours exists before). */
static inline const op_preload_fd_api *api(void) { return atomic_load_explicit(&g_api, memory_order_acquire); }

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
    const op_preload_fd_api *a = api_bind();
    if (a) return a->adopt(fd, flags);
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
    const op_preload_fd_api *a = api_bind();
    if (a) return a->close(fd);
    return (int)syscall(SYS_close, fd);
}

bool op_fd_is_ours(int fd) { return api() ? api()->is_ours(fd) != 0 : false; }

int op_fd_resolve(int fd) { return api() ? api()->resolve(fd) : fd; }

int op_fd_verify(int fd) { return api() ? api()->verify(fd) : 0; }

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
    const op_preload_fd_api *a = api_bind(); /* bound long before any handler logs */
    return a ? a->log_fd_checked() : STDERR_FILENO;
}

void op_fd_capture_begin(void)
{
    const op_preload_fd_api *a = api_bind();
    if (a) a->capture(1);
}

void op_fd_sync_scope(int delta)
{
    const op_preload_fd_api *a = api();
    if (a) a->sync_scope(delta);
}

int op_fd_capture_end(int *fds, int cap)
{
    const op_preload_fd_api *a = api_bind();
    if (!a) return 0;
    a->capture(0);
    int tmp[1];
    return a->captured(fds ? fds : tmp, fds ? cap : 0);
}

int op_fd_io_begin(bool may_wait)
{
    return api() ? api()->io_begin(may_wait) : 0;
}

void op_fd_io_end(void)
{
    if (api()) api()->io_end();
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
