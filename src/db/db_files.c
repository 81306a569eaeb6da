/* db_files.c — the files SQLite opens for the writer are the profiler's own (DESIGN.md rule 5,
 * docs/reliability.md): a thin layer over the system calls of SQLite's unix VFS
 * (sqlite3_vfs.xSetSystemCall), installed once before the writer opens its first database.
 *
 *   open     in a thread that runs the writer's SQLite (op_db_files_scope > 0): the new fd is
 *            adopted (common/fd_guard.h: moved above the floor, registered with the preload
 *            library, identity recorded); elsewhere (the program's own SQLite, if it shares the
 *            library) unchanged
 *   close    a registered fd is released through op_fd_close (the preload library's close()
 *            refuses the program's closes of it); any other fd unchanged
 *   write, pwrite64, ftruncate, fallocate-like writes
 *            on a registered fd: the fd is resolved (it may have moved when the program
 *            dup2()ed onto it) and its identity checked first; a replaced fd fails with EBADF,
 *            so that SQLite reports an I/O error and the writer turns itself off (writer.c W5)
 *            instead of writing a page into the program's file
 *   read, pread64, fstat, fcntl, fchmod, fchown, mmap
 *            on a registered fd: resolved
 * Every other fd takes exactly the original path, so a program that uses the same libsqlite3
 * sees no difference. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/fd_guard.h"
#include "common/log.h"
#include "db/db_files.h"

static __thread int t_scope;

void op_db_files_scope(int delta) { t_scope += delta; }

typedef int (*open_fn)(const char *, int, int);
typedef int (*close_fn)(int);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef int (*fstat_fn)(int, struct stat *);
typedef int (*ftruncate_fn)(int, off_t);
typedef int (*fcntl_fn)(int, int, ...);
typedef int (*fchmod_fn)(int, mode_t);
typedef int (*fchown_fn)(int, uid_t, gid_t);
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);

static struct {
    open_fn open;
    close_fn close;
    read_fn read;
    pread_fn pread64;
    write_fn write;
    pwrite_fn pwrite64;
    fstat_fn fstat;
    ftruncate_fn ftruncate;
    fcntl_fn fcntl;
    fchmod_fn fchmod;
    fchown_fn fchown;
    mmap_fn mmap;
} g_orig;

/* The fd to use for a write through `fd`, or -1 (errno EBADF) when it is ours and replaced. */
static int write_fd(int fd)
{
    if (!op_fd_is_ours(fd) && op_fd_resolve(fd) == fd) return fd;
    if (op_fd_verify(fd) != 0) {
        static _Atomic int told;
        if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
            op_error("a database file descriptor (%d) was closed or replaced behind omniprof's back; "
                     "nothing more is written through it (the database keeps what was committed)", fd);
        errno = EBADF;
        return -1;
    }
    return op_fd_resolve(fd);
}

static int f_open(const char *path, int flags, int mode)
{
    int fd = g_orig.open(path, flags, mode);
    if (fd < 0 || t_scope <= 0) return fd;
    return op_fd_adopt_path(fd, path, OP_FD_IDENTITY);
}

static int f_close(int fd)
{
    if (op_fd_is_ours(fd) || op_fd_resolve(fd) != fd) return op_fd_close(fd);
    return g_orig.close(fd);
}

static ssize_t f_read(int fd, void *buf, size_t n) { return g_orig.read(op_fd_resolve(fd), buf, n); }
static ssize_t f_pread64(int fd, void *buf, size_t n, off_t off) { return g_orig.pread64(op_fd_resolve(fd), buf, n, off); }
static int f_fstat(int fd, struct stat *st) { return g_orig.fstat(op_fd_resolve(fd), st); }
static int f_fchmod(int fd, mode_t m) { return g_orig.fchmod(op_fd_resolve(fd), m); }
static int f_fchown(int fd, uid_t u, gid_t g) { return g_orig.fchown(op_fd_resolve(fd), u, g); }

static ssize_t f_write(int fd, const void *buf, size_t n)
{
    int wfd = write_fd(fd);
    return wfd < 0 ? -1 : g_orig.write(wfd, buf, n);
}

static ssize_t f_pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    int wfd = write_fd(fd);
    return wfd < 0 ? -1 : g_orig.pwrite64(wfd, buf, n, off);
}

static int f_ftruncate(int fd, off_t len)
{
    int wfd = write_fd(fd);
    return wfd < 0 ? -1 : g_orig.ftruncate(wfd, len);
}

/* SQLite calls fcntl with one int or pointer argument (locks, F_GETFL, F_SETFD, ...). */
static int f_fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return g_orig.fcntl(op_fd_resolve(fd), cmd, arg);
}

static void *f_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return g_orig.mmap(addr, len, prot, flags, fd >= 0 ? op_fd_resolve(fd) : fd, off);
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void install(void)
{
    if (sqlite3_initialize() != SQLITE_OK) return;
    sqlite3_vfs *vfs = sqlite3_vfs_find("unix");
    if (!vfs || vfs->iVersion < 3 || !vfs->xGetSystemCall || !vfs->xSetSystemCall) {
        op_warn("SQLite's unix VFS has no system-call table; the database files are not guarded against a program "
                "that closes every fd");
        return;
    }
    struct {
        const char *name;
        void **orig;
        sqlite3_syscall_ptr mine;
    } calls[] = {
        {"open", (void **)&g_orig.open, (sqlite3_syscall_ptr)f_open},
        {"close", (void **)&g_orig.close, (sqlite3_syscall_ptr)f_close},
        {"read", (void **)&g_orig.read, (sqlite3_syscall_ptr)f_read},
        {"pread64", (void **)&g_orig.pread64, (sqlite3_syscall_ptr)f_pread64},
        {"write", (void **)&g_orig.write, (sqlite3_syscall_ptr)f_write},
        {"pwrite64", (void **)&g_orig.pwrite64, (sqlite3_syscall_ptr)f_pwrite64},
        {"fstat", (void **)&g_orig.fstat, (sqlite3_syscall_ptr)f_fstat},
        {"ftruncate", (void **)&g_orig.ftruncate, (sqlite3_syscall_ptr)f_ftruncate},
        {"fcntl", (void **)&g_orig.fcntl, (sqlite3_syscall_ptr)f_fcntl},
        {"fchmod", (void **)&g_orig.fchmod, (sqlite3_syscall_ptr)f_fchmod},
        {"fchown", (void **)&g_orig.fchown, (sqlite3_syscall_ptr)f_fchown},
        {"mmap", (void **)&g_orig.mmap, (sqlite3_syscall_ptr)f_mmap},
    };
    /* All originals first: an override is installed only when every one is known. */
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        *calls[i].orig = (void *)vfs->xGetSystemCall(vfs, calls[i].name);
        if (!*calls[i].orig) {
            op_warn("SQLite's unix VFS has no '%s' system call; the database files are not guarded against a "
                    "program that closes every fd", calls[i].name);
            return;
        }
    }
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) vfs->xSetSystemCall(vfs, calls[i].name, calls[i].mine);
}

void op_db_files_install(void) { pthread_once(&g_once, install); }
