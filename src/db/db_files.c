/* db_files.c — how the writer's database files come to be and stay the profiler's own
 * (docs/reliability.md).
 *
 * A database appears whole (op_db_files_publish): its first image (schema and identity rows,
 * built in memory by the writer) is written to an unnamed file (O_TMPFILE) in the database's
 * directory and then linked under its name, which fails if the name exists (nothing is ever
 * replaced). A reader never sees a file without tables; a process killed at any moment leaves
 * no database or a valid one. Where the file system has no O_TMPFILE (or /proc is missing), a
 * hidden temporary name in the same directory is linked instead and then removed (a kill in
 * that window leaves the hidden file; docs/reliability.md).
 *
 * The files SQLite then opens are the profiler's fds: a thin layer over the system calls of
 * SQLite's unix VFS (sqlite3_vfs.xSetSystemCall), installed once before the writer opens its
 * first database.
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
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/fd_guard.h"
#include "common/log.h"
#include "db/db_files.h"

static __thread int t_scope;

/* libomniprof-preload.so's fsync/fdatasync follow relocated numbers on such a thread (SQLite
 * syncs through its own numbers directly, outside the system-call table): op_fd_sync_scope. */
void op_db_files_scope(int delta)
{
    t_scope += delta;
    op_fd_sync_scope(delta);
}

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
static _Atomic uint64_t g_replaced; /* fds found replaced so far (op_db_files_replaced) */

uint64_t op_db_files_replaced(void) { return atomic_load(&g_replaced); }
void op_db_files_note_replaced(void) { atomic_fetch_add(&g_replaced, 1); }

static int write_fd(int fd)
{
    if (!op_fd_is_ours(fd) && op_fd_resolve(fd) == fd) return fd;
    if (op_fd_verify(fd) != 0) {
        op_db_files_note_replaced();
        static int told; /* a plain int: the __atomic builtins (clang refuses them on _Atomic) */
        if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
            op_error("a database file descriptor (%d) was closed or replaced behind omniprof's back; "
                     "nothing more is written through it (the database keeps what was committed)", fd);
        errno = EBADF;
        return -1;
    }
    return op_fd_resolve(fd);
}

/* The fds f_open adopted (database, WAL, shared memory, journal), for op_db_files_check. */
#define OP_DB_FILES_MAX 32
static _Atomic int g_open_fds[OP_DB_FILES_MAX]; /* fd + 1; 0 = free */

static void remember_fd(int fd, bool on)
{
    for (int i = 0; i < OP_DB_FILES_MAX; i++) {
        int want = on ? 0 : fd + 1;
        if (atomic_compare_exchange_strong(&g_open_fds[i], &want, on ? fd + 1 : 0)) return;
    }
}

int op_db_files_check(void)
{
    int rc = 0;
    for (int i = 0; i < OP_DB_FILES_MAX; i++) {
        int v = atomic_load(&g_open_fds[i]);
        if (v && op_fd_verify(v - 1) != 0) {
            /* forgotten once found: the writer that held it is off for good (W5), a new
             * writer's files are checked on their own */
            atomic_compare_exchange_strong(&g_open_fds[i], &v, 0);
            rc = -1;
        }
    }
    if (rc) op_db_files_note_replaced();
    return rc;
}

static int f_open(const char *path, int flags, int mode)
{
    int fd = g_orig.open(path, flags, mode);
    if (fd < 0 || t_scope <= 0) return fd;
    fd = op_fd_adopt_path(fd, path, OP_FD_IDENTITY);
    if (fd >= 0) remember_fd(fd, true);
    return fd;
}

static int f_close(int fd)
{
    remember_fd(fd, false);
    if (op_fd_is_ours(fd) || op_fd_resolve(fd) != fd) return op_fd_close(fd);
    return g_orig.close(fd);
}

/* Reads, locks and maps check the fd as writes do: a read() would move the offset of a file the
 * program put on the number, a lock would lock it. Each call is one I/O of the profiler's
 * (fd_guard.h, op_fd_io_begin): a dup2 of the program's onto the number waits for it. */
#define OP_GUARDED_CALL(T, FD, CALL)                                                           \
    do {                                                                                       \
        op_fd_io_begin(true);                                                                  \
        int gfd_ = write_fd(FD);                                                               \
        T r_ = gfd_ < 0 ? (T)-1 : (CALL);                                                      \
        int e_ = errno;                                                                        \
        op_fd_io_end();                                                                        \
        errno = e_;                                                                            \
        return r_;                                                                             \
    } while (0)

static ssize_t f_read(int fd, void *buf, size_t n) { OP_GUARDED_CALL(ssize_t, fd, g_orig.read(gfd_, buf, n)); }
static ssize_t f_pread64(int fd, void *buf, size_t n, off_t off)
{
    OP_GUARDED_CALL(ssize_t, fd, g_orig.pread64(gfd_, buf, n, off));
}
static int f_fstat(int fd, struct stat *st) { OP_GUARDED_CALL(int, fd, g_orig.fstat(gfd_, st)); }
static int f_fchmod(int fd, mode_t m) { OP_GUARDED_CALL(int, fd, g_orig.fchmod(gfd_, m)); }
static int f_fchown(int fd, uid_t u, gid_t g) { OP_GUARDED_CALL(int, fd, g_orig.fchown(gfd_, u, g)); }
static ssize_t f_write(int fd, const void *buf, size_t n) { OP_GUARDED_CALL(ssize_t, fd, g_orig.write(gfd_, buf, n)); }
static ssize_t f_pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    OP_GUARDED_CALL(ssize_t, fd, g_orig.pwrite64(gfd_, buf, n, off));
}
static int f_ftruncate(int fd, off_t len) { OP_GUARDED_CALL(int, fd, g_orig.ftruncate(gfd_, len)); }

/* SQLite calls fcntl with one int or pointer argument (locks, F_GETFL, F_SETFD, ...). */
static int f_fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    OP_GUARDED_CALL(int, fd, g_orig.fcntl(gfd_, cmd, arg));
}

static void *f_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (fd < 0) return g_orig.mmap(addr, len, prot, flags, fd, off);
    op_fd_io_begin(true);
    int mfd = write_fd(fd);
    void *r = mfd < 0 ? MAP_FAILED : g_orig.mmap(addr, len, prot, flags, mfd, off);
    int e = errno;
    op_fd_io_end();
    errno = e;
    return r;
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

/* ------------------------------------------------------------------------------------------ */
/* A database appears whole.                                                                  */

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The directory part of `path` ("." when none). */
static void dir_of(const char *path, char *out, size_t cap)
{
    snprintf(out, cap, "%s", path);
    char *slash = strrchr(out, '/');
    if (slash == out) slash[1] = 0;
    else if (slash) *slash = 0;
    else snprintf(out, cap, ".");
}

/* Unnamed file, written, linked under `path`. 0, an errno value, or -1 when the file system
 * cannot do it (no O_TMPFILE, no /proc): the caller falls back to a named temporary file. */
static int publish_unnamed(const char *dir, const char *path, const unsigned char *img, size_t size)
{
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL ? -1 : errno;
    fd = op_fd_adopt(fd, 0); /* protected from the program's closes while it is written */
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0 || st.st_size != 0) {
        if (fd >= 0) op_fd_close(fd);
        return EBADF;
    }
    int e = write_all(fd, img, size);
    if (e == 0) {
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) != 0) {
            int le = errno;
            e = le == ENOENT && access(proc, F_OK) != 0 ? -1 : le; /* no /proc: the named way */
        }
    }
    op_fd_close(fd);
    return e;
}

/* A hidden temporary name beside `path`, written, linked under `path`, removed. */
static int publish_named(const char *dir, const char *path, const unsigned char *img, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char tmp[4200];
    int n = snprintf(tmp, sizeof tmp, "%s/.%s.omniprof-XXXXXX", dir, base);
    if (n < 0 || (size_t)n >= sizeof tmp) return ENAMETOOLONG;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) return errno;
    fd = op_fd_adopt_path(fd, tmp, 0);
    int e = fd < 0 ? EBADF : write_all(fd, img, size);
    if (fd >= 0) op_fd_close(fd);
    if (e == 0 && link(tmp, path) != 0) e = errno;
    unlink(tmp);
    return e;
}

int op_db_files_publish(const char *path, const void *img, size_t size, char *err, size_t errlen)
{
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    int e = publish_unnamed(dir, path, img, size);
    if (e == -1) e = publish_named(dir, path, img, size);
    if (e == EEXIST)
        seterr(err, errlen, "database '%s' already exists: refusing to overwrite it (choose another output name)", path);
    else if (e)
        seterr(err, errlen, "cannot create database '%s': %s%s", path, strerror(e),
               e == ENOENT ? " (the directory does not exist)" : "");
    return e;
}
