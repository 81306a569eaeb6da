/* process_interpose.c — libomniprof-preload.so's clients and its process-level interposers:
 * pthread_create, fork, exit, _exit, _Exit, quick_exit, daemon, the exec family and dlclose.
 *
 *   pthread_create   the first client with a pthread_create hook (the CPU backend: thread
 *                    identity and sampling) makes the call; without one, libc's.
 *   pthread_setname_np  libc's, then (when it returned 0) clients' thread_named.
 *   fork             clients' fork_prepare, libc's fork, then fork_child in the child (after the
 *                    fork handlers of pthread_atfork, which the SDK and the tool use) or
 *                    fork_parent in the parent; errno is the fork's.
 *   exit             clients' process_end(EXIT), then libc's exit (atexit handlers, the SDK's
 *                    finalization among them, still run).
 *   _exit, _Exit     clients' process_end(_EXIT), then omniprof_finalize() (the SDK, found at
 *                    load time), then libc's: a process that leaves without atexit handlers
 *                    keeps its records as one that exits. Skipped in a vfork child (it shares
 *                    the parent's memory: finalizing there would close the parent's database)
 *                    and when the call nests in finalization.
 *   quick_exit       an at_quick_exit handler registered at load time runs last, after the
 *                    program's: process_end(_EXIT) and the SDK's finalization, as for _exit
 *                    (libc's quick_exit leaves through its internal _exit).
 *   daemon           reimplemented over the interposed fork and _exit (libc's uses internal
 *                    ones), so that the parent's database is closed as at any _exit.
 *   exec*            clients' before_exec (the tool closes its database whole, checkpointed,
 *                    without its WAL; the new image is traced by its own copy), then libc's;
 *                    if libc's returns (the exec failed), clients' exec_failed (the tool goes
 *                    on in a new database). The execl forms gather their arguments and call
 *                    execve/execvpe, as glibc's own do internally, where no interposer would
 *                    see them.
 *   dlclose          clients' dlclose_before, libc's dlclose, then clients' dlclose_after with
 *                    its result (errno and dlerror's message are libc's: the hooks run before
 *                    and after, never between the call and its return).
 * Invariant: an interposer returns exactly what libc returned, with libc's errno. */
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "omniprof/fwd.h"
#include "preload/preload_internal.h"

extern char **environ;

const op_preload_hooks *_Atomic g_op_preload_clients[OP_PRELOAD_MAX_CLIENTS];
_Atomic int g_op_preload_n_clients;
_Atomic pid_t g_op_preload_pid;

static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_ending; /* a process_end is running: a nested exit goes straight to libc */
typedef omniprof_status_t (*finalize_fn)(void);
static finalize_fn g_sdk_finalize;

/* ------------------------------------------------------------------------------------------ */
/* Clients and real functions.                                                                */

OMNIPROF_API int omniprof_preload_register(const op_preload_hooks *hooks)
{
    if (!hooks || hooks->size < sizeof(uint64_t) * 2) {
        errno = EINVAL;
        return -1;
    }
    pthread_mutex_lock(&g_reg_lock);
    int n = atomic_load(&g_op_preload_n_clients);
    if (n >= OP_PRELOAD_MAX_CLIENTS) {
        pthread_mutex_unlock(&g_reg_lock);
        errno = ENOSPC;
        return -1;
    }
    /* Insert sorted by order: readers may see the list while it shifts, so the new last slot
     * is filled first and the count published last. */
    const op_preload_hooks *tmp[OP_PRELOAD_MAX_CLIENTS];
    int k = 0;
    bool placed = false;
    for (int i = 0; i < n; i++) {
        const op_preload_hooks *c = atomic_load(&g_op_preload_clients[i]);
        if (!placed && hooks->order < c->order) {
            tmp[k++] = hooks;
            placed = true;
        }
        tmp[k++] = c;
    }
    if (!placed) tmp[k++] = hooks;
    for (int i = 0; i < k; i++) atomic_store_explicit(&g_op_preload_clients[i], tmp[i], memory_order_release);
    atomic_store_explicit(&g_op_preload_n_clients, k, memory_order_release);
    pthread_mutex_unlock(&g_reg_lock);
    return 0;
}

OMNIPROF_API bool omniprof_preload_active(void)
{
    /* The program's `close` is ours when this library comes before libc in the lookup order. */
    void *fn = dlsym(RTLD_DEFAULT, "close");
    void *mine = (void *)&close;
    return fn == mine;
}

static bool in_vfork_child(void) { return getpid() != atomic_load(&g_op_preload_pid); }

/* ------------------------------------------------------------------------------------------ */
/* pthread_create                                                                              */

OMNIPROF_API int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    op_pthread_create_fn real = OP_REAL(op_pthread_create_fn, pthread_create);
    if (!real) return EAGAIN;
    const void *caller = __builtin_return_address(0);
    FOR_CLIENTS(c)
    {
        if (c->pthread_create) return c->pthread_create(real, th, attr, fn, arg, caller);
    }
    return real(th, attr, fn, arg);
}

typedef int (*setname_fn)(pthread_t, const char *);

OMNIPROF_API int pthread_setname_np(pthread_t th, const char *name)
{
    setname_fn real = OP_REAL(setname_fn, pthread_setname_np);
    if (!real) return ENOSYS;
    int rc = real(th, name);
    if (rc == 0) {
        int saved = errno;
        FOR_CLIENTS(c) if (OP_PRELOAD_HAS(c, thread_named)) c->thread_named(th, name);
        errno = saved;
    }
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* fork                                                                                        */

typedef pid_t (*fork_fn)(void);

static void at_fork_child(void)
{
    atomic_store(&g_op_preload_pid, getpid());
    atomic_store(&g_ending, 0);
    op_preload_fd_at_fork_child();
}

OMNIPROF_API pid_t fork(void)
{
    fork_fn real = OP_REAL(fork_fn, fork);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    op_preload_fork_state st[OP_PRELOAD_MAX_CLIENTS];
    const op_preload_hooks *cl[OP_PRELOAD_MAX_CLIENTS];
    int n = 0;
    FOR_CLIENTS(c)
    {
        cl[n] = c;
        memset(&st[n], 0, sizeof st[n]);
        if (c->fork_prepare) c->fork_prepare(&st[n]);
        n++;
    }
    pid_t pid = real();
    int saved = errno;
    if (pid == 0) {
        for (int i = 0; i < n; i++)
            if (cl[i]->fork_child) cl[i]->fork_child(&st[i]);
    } else {
        for (int i = n - 1; i >= 0; i--)
            if (cl[i]->fork_parent) cl[i]->fork_parent(&st[i], pid);
    }
    errno = saved;
    return pid;
}

/* ------------------------------------------------------------------------------------------ */
/* exit, _exit, _Exit                                                                          */

typedef void (*exit_fn)(int);

/* The clients' process_end hooks; for _exit/_Exit also the SDK's finalization. */
static void process_end(op_preload_end how, int status)
{
    if (in_vfork_child() || atomic_exchange(&g_ending, 1)) return;
    int saved = errno;
    FOR_CLIENTS(c)
    {
        if (c->process_end) c->process_end(how, status);
    }
    if (how == OP_PRELOAD_END_EXIT) {
        /* atexit handlers run next; one that calls _exit still gets the finalization */
        atomic_store(&g_ending, 0);
    } else {
        finalize_fn fin = g_sdk_finalize ? g_sdk_finalize : (finalize_fn)dlsym(RTLD_DEFAULT, "omniprof_finalize");
        if (fin) fin();
    }
    errno = saved;
}

OMNIPROF_API void exit(int status)
{
    exit_fn real = OP_REAL(exit_fn, exit);
    process_end(OP_PRELOAD_END_EXIT, status);
    if (real) real(status);
    abort();
}

OMNIPROF_API void _exit(int status)
{
    exit_fn real = OP_REAL(exit_fn, _exit);
    process_end(OP_PRELOAD_END__EXIT, status);
    if (real) real(status);
    abort();
}

OMNIPROF_API void _Exit(int status)
{
    exit_fn real = OP_REAL(exit_fn, _Exit);
    process_end(OP_PRELOAD_END__EXIT, status);
    if (real) real(status);
    abort();
}

/* ------------------------------------------------------------------------------------------ */
/* exec                                                                                        */

static void before_exec(void)
{
    if (in_vfork_child()) return;
    int saved = errno;
    FOR_CLIENTS(c)
    {
        if (c->before_exec) c->before_exec();
    }
    errno = saved;
}

static void exec_failed(void)
{
    if (in_vfork_child()) return;
    int saved = errno;
    FOR_CLIENTS(c)
    {
        if (OP_PRELOAD_HAS(c, exec_failed)) c->exec_failed();
    }
    errno = saved;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);

OMNIPROF_API int execve(const char *path, char *const argv[], char *const envp[])
{
    execve_fn real = OP_REAL(execve_fn, execve);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    before_exec();
    int rc = real(path, argv, envp);
    exec_failed();
    return rc;
}

OMNIPROF_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
    execve_fn real = OP_REAL(execve_fn, execvpe);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    before_exec();
    int rc = real(file, argv, envp);
    exec_failed();
    return rc;
}

OMNIPROF_API int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

OMNIPROF_API int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

/* The execl forms: arguments gathered on the stack (at most 4096). */
#define GATHER_ARGS(FIRST, ARGV, ENVP_OUT)                                \
    va_list ap;                                                            \
    int n_ = 1; /* glibc declares the first argument nonnull */             \
    va_start(ap, FIRST);                                                   \
    while (va_arg(ap, char *) != NULL && n_ < 4096) n_++;                  \
    va_end(ap);                                                            \
    char **ARGV = alloca(((size_t)n_ + 1) * sizeof(char *));               \
    ARGV[0] = (char *)(FIRST);                                             \
    va_start(ap, FIRST);                                                   \
    for (int i_ = 1; i_ <= n_; i_++) ARGV[i_] = va_arg(ap, char *);        \
    ARGV[n_] = NULL;                                                       \
    ENVP_OUT;                                                              \
    va_end(ap)

OMNIPROF_API int execl(const char *path, const char *arg, ...)
{
    GATHER_ARGS(arg, argv, (void)0);
    return execve(path, argv, environ);
}

OMNIPROF_API int execlp(const char *file, const char *arg, ...)
{
    GATHER_ARGS(arg, argv, (void)0);
    return execvpe(file, argv, environ);
}

OMNIPROF_API int execle(const char *path, const char *arg, ...)
{
    char *const *envp;
    GATHER_ARGS(arg, argv, envp = va_arg(ap, char *const *));
    return execve(path, argv, envp);
}

/* ------------------------------------------------------------------------------------------ */
/* quick_exit, daemon                                                                          */

/* quick_exit() runs the at_quick_exit handlers, then leaves through libc's own _exit, which no
 * interposer sees. This handler, registered first (from the constructor), runs last: after the
 * program's handlers, it ends the process as _exit would (the clients' hooks, then the SDK's
 * finalization). */
static void at_quick_exit_handler(void) { process_end(OP_PRELOAD_END__EXIT, 0); }

/* glibc's daemon() forks and leaves the parent through its internal fork and _exit, which no
 * interposer sees: the parent's records were lost. The same steps through the interposers: fork
 * (the clients' fork hooks run), the parent _exit(0)s (its database is closed), the child
 * starts a session, goes to "/" unless nochdir, and puts /dev/null on 0-2 unless noclose
 * (failing with ENODEV when /dev/null is not the character device it should be), as libc
 * documents daemon(3). */
OMNIPROF_API int daemon(int nochdir, int noclose)
{
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid > 0) _exit(0);
    if (setsid() < 0) return -1;
    if (!nochdir && chdir("/") != 0) { /* as libc: the result is ignored */
    }
    if (!noclose) {
        int fd = open("/dev/null", O_RDWR);
        if (fd < 0) return -1;
        struct stat st;
        if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode)) {
            close(fd);
            errno = ENODEV;
            return -1;
        }
        dup2(fd, STDIN_FILENO);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        if (fd > 2) close(fd);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */

__attribute__((constructor(101))) static void preload_ctor(void)
{
    at_quick_exit(at_quick_exit_handler);
    atomic_store(&g_op_preload_pid, getpid());
    pthread_atfork(NULL, NULL, at_fork_child);
    g_sdk_finalize = (finalize_fn)dlsym(RTLD_DEFAULT, "omniprof_finalize");
    op_preload_fd_init();
}

/* ------------------------------------------------------------------------------------------ */
/* dlclose                                                                                     */

typedef int (*dlclose_fn)(void *);

OMNIPROF_API int dlclose(void *handle)
{
    dlclose_fn real = OP_REAL(dlclose_fn, dlclose);
    if (!real) return -1;
    FOR_CLIENTS(c)
    {
        if (OP_PRELOAD_HAS(c, dlclose_before)) c->dlclose_before(handle);
    }
    int rc = real(handle);
    int saved = errno;
    FOR_CLIENTS(c)
    {
        if (OP_PRELOAD_HAS(c, dlclose_after)) c->dlclose_after(handle, rc);
    }
    errno = saved;
    return rc;
}
