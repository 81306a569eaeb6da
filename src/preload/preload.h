/* preload.h — libomniprof-preload.so, the one place where omniprof interposes libc (docs/architecture.md
 * "Layers": preload), and the interface its clients (the tool, the CPU backend) use.
 *
 * One owner per symbol: this library alone exports
 *     pthread_create                          (thread_interpose: process_interpose.c)
 *     fork, exit, _exit, _Exit, quick_exit (through at_quick_exit), daemon   (process_interpose.c)
 *     execve, execv, execvp, execvpe, execl, execlp, execle
 *     dlclose                                 (process_interpose.c)
 *     signal, sigaction                       (signal_interpose.c)
 *     close, closefrom, close_range, fclose, dup2, dup3, pipe, pipe2, fsync, fdatasync
 *                                             (fd_interpose.c)
 *     pthread_mutex_unlock, pthread_rwlock_unlock, pthread_cond_*, sem_wait/timedwait/post,
 *     sleep, usleep, nanosleep, clock_nanosleep, read, recv*, accept*, write, send*, poll,
 *     ppoll, select, pselect, epoll_wait/pwait, __libc_start_main (sync_interpose.c)
 * (MPI_* belong to the MPI backend, src/backend/mpi/, which calls the wait hooks below.)
 * Each interposer keeps the program's view exact (same return value and errno as the libc
 * call would give without the profiler) and does no profiling work itself: it calls the hooks
 * its clients registered, which forward into the SDK, the tool and the backends. The fd
 * registry (fd_registry.c, reached through src/common/fd_guard.h) is kept here too, so that
 * every omniprof library sees one set of profiler fds.
 *
 * The launcher preloads this library first among omniprof's (before the tool, the SDK and the
 * backends); the tool and the CPU backend also link it, so that it is loaded (without its
 * interposers taking effect) when one of them is preloaded alone. */
#ifndef OMNIPROF_PRELOAD_PRELOAD_H
#define OMNIPROF_PRELOAD_PRELOAD_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "omniprof/defines.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*op_pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* How the process ends (op_preload_hooks.process_end). */
typedef enum op_preload_end {
    OP_PRELOAD_END_EXIT = 1,  /* exit(): atexit handlers (and the SDK's finalization) run after */
    OP_PRELOAD_END__EXIT = 2, /* _exit()/_Exit(): no atexit handler runs; after every hook the
                                 preload library calls omniprof_finalize() itself */
} op_preload_end;

/* Per-client scratch space for one fork() call (on the forking thread's stack). */
typedef struct op_preload_fork_state {
    uint64_t t0;
    sigset_t mask;
    int masked;
} op_preload_fork_state;

/* A client's hooks; any may be NULL. Clients are called in `order` (lower first: backends
 * before the tool, so that a backend drains what it holds before the tool closes the
 * database); fork_child in the same order, fork_parent in reverse. */
typedef struct op_preload_hooks {
    uint64_t size; /* sizeof(op_preload_hooks) */
    const char *name;
    int order;
    /* pthread_create: the first client that sets it owns thread creation (wraps the start
     * routine); `caller` is the return address of the program's call. */
    int (*pthread_create)(op_pthread_create_fn real, pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg, const void *caller);
    void (*fork_prepare)(op_preload_fork_state *st);
    void (*fork_parent)(op_preload_fork_state *st, pid_t child);
    void (*fork_child)(op_preload_fork_state *st);
    /* The process ends through exit/_exit/_Exit (not from a vfork child, not nested). */
    void (*process_end)(op_preload_end how, int status);
    /* exec is about to replace the process image (not from a vfork child). */
    void (*before_exec)(void);
    /* The program's sigaction(sig, act, old) (signal() arrives here too). Return true when this
     * client owns `sig` and answered the call itself (*rc = its result, errno set on -1);
     * false to let the next client, then libc, answer. */
    bool (*sigaction)(int sig, const struct sigaction *act, struct sigaction *old, int *rc);
    /* ---- appended: waits and wake-ups (sync_interpose.c), for the causal profiler's delay
     * accounting (docs/causal.md). wait_begin/wait_end bracket a call that may wait for another
     * thread; wait_end's `woken`: 1 another thread ended the wait, 0 it ended by itself (a
     * timeout, a timed sleep), -1 a read-like call on `fd` returned (the client decides from
     * the fd's type). wake comes before a call that may wake another thread. */
    void (*wait_begin)(void);
    void (*wait_end)(int woken, int fd);
    void (*wake)(void);
    /* main returned with `status`, before exit's atexit handlers run. main is wrapped (through
     * __libc_start_main) only when a client registered before main sets this hook. */
    void (*main_end)(int status);
    /* ---- appended (issue 31): exec returned (it failed) after before_exec; the process goes
     * on in this image. */
    void (*exec_failed)(void);
    /* ---- appended: dlclose(handle) of the program, before and after libc's (which may unmap
     * the library and its dependencies, or only drop a reference). `rc` is libc's result. The
     * CPU backend notes which modules went, and when, so that samples taken in them are named
     * after the module of their time, not the one mapped at that address at the end. */
    void (*dlclose_before)(void *handle);
    void (*dlclose_after)(void *handle, int rc);
    /* ---- appended (issue 32): calls a client may record. call_begin(op, &t0) before
     * libomniprof-sync.so's lock, barrier and join interposers call libc (op: an
     * OMNIPROF_FUNCTION_WRAPPER_* operation, named in common/op_names.c): true when this client
     * records it (it sets *t0),
     * and then call_end(op, t0, rc) follows libc's call. The first client that answers true
     * records it. */
    bool (*call_begin)(int op, uint64_t *t0);
    void (*call_end)(int op, uint64_t t0, int rc);
    /* the program armed a profiling timer of its own: setitimer(ITIMER_PROF or ITIMER_VIRTUAL),
     * `what` names it */
    void (*self_profiling)(const char *what);
    /* the program's pthread_setname_np(th, name) returned 0 */
    void (*thread_named)(pthread_t th, const char *name);
    /* ---- appended (issue 35): pthread_join(th) returned `rc`; for a client that has it, this
     * replaces wait_end(1, -1) of the join (the causal profiler credits the joiner from the
     * joined thread's own delay count, not the global one: docs/causal.md) */
    void (*joined)(pthread_t th, int rc);
} op_preload_hooks;

/* Does client `c` (registered with an older, smaller struct perhaps) have hook `field`? */
#define OP_PRELOAD_HAS(c, field) \
    ((c)->size >= offsetof(op_preload_hooks, field) + sizeof((c)->field) && (c)->field)

/**
 * @brief **omniprof_preload_register** adds a client's hooks (the struct must live as long as
 * the process). At most 8 clients. Thread-safe; usually called from a constructor or the
 * tool's initialization. @return 0, or -1 (errno ENOSPC: too many clients, EINVAL).
 */
OMNIPROF_API int omniprof_preload_register(const op_preload_hooks *hooks);

/** @brief **omniprof_preload_real_sigaction**: libc's sigaction, for the profiler's own handlers
 * (never goes through the clients' hooks). */
OMNIPROF_API int omniprof_preload_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* omniprof attach: send the profiler's log lines to the file `path` (appended) instead of the
 * program's stderr; NULL closes the log descriptor (lines are dropped). */
OMNIPROF_API void omniprof_preload_log_reopen(const char *path);
/* omniprof attach, in a forked child not attached to: every descriptor of the profiler closes. */
OMNIPROF_API void omniprof_preload_fd_close_all(void);

/** @brief The clients' wait hooks (op_preload_hooks.wait_begin/wait_end/wake) for blocking calls
 * that another library interposes (the MPI backend's MPI waits). No-ops, one test each, unless
 * some client has wait hooks (causal profiling); omniprof_preload_waits_hooked says whether. */
OMNIPROF_API bool omniprof_preload_waits_hooked(void);
OMNIPROF_API void omniprof_preload_wait_begin(void);
OMNIPROF_API void omniprof_preload_wait_end(int woken, int fd);
OMNIPROF_API void omniprof_preload_wake(void);
/** @brief The end of pthread_join(th): the clients' joined hook, or wait_end(1, -1) where a
 * client has none. */
OMNIPROF_API void omniprof_preload_join_end(pthread_t th, int rc);

/** @brief The clients' call hooks (op_preload_hooks.call_begin/call_end) for the calls that
 * libomniprof-sync.so interposes: call_begin returns a token (0: nobody records the call) that
 * call_end takes back. errno is kept. */
OMNIPROF_API int omniprof_preload_call_begin(int op, uint64_t *t0);
OMNIPROF_API void omniprof_preload_call_end(int token, int op, uint64_t t0, int rc);

/** @brief Whether some client wants main's end (op_preload_hooks.main_end), and the call that
 * tells them (libomniprof-sync.so wraps main through __libc_start_main when one does). */
OMNIPROF_API bool omniprof_preload_main_end_hooked(void);
OMNIPROF_API void omniprof_preload_main_end(int status);

/** @brief The fd registry's calls (src/preload/fd_registry.c, fd_interpose.c), for their client
 * (src/common/fd_guard.c, in every omniprof library): one table, found by name once when the
 * client's library loads, whose `size` says which members it has (members are only appended).
 * The client does without it (fds moved above the floor, nothing protecting them) in a process
 * where this library is not loaded: the command-line tools. */
typedef struct op_preload_fd_api {
    uint64_t size; /* sizeof(op_preload_fd_api) of the library that made it */
    int (*adopt)(int fd, unsigned flags);
    int (*close)(int fd);
    int (*is_ours)(int fd);
    int (*resolve)(int fd);
    int (*verify)(int fd);
    int (*log_fd_checked)(void);
    int (*io_begin)(int may_wait);
    void (*io_end)(void);
    void (*capture)(int on);
    int (*captured)(int *out, int cap);
    void (*sync_scope)(int delta);
} op_preload_fd_api;

OMNIPROF_API const op_preload_fd_api *omniprof_preload_fd_api(void);

/** @brief **omniprof_preload_active**: true when this library's interposers are the ones the
 * program calls (it was preloaded), false when it was only loaded as a dependency. */
OMNIPROF_API bool omniprof_preload_active(void);

#ifdef __cplusplus
}
#endif

#endif /* OMNIPROF_PRELOAD_PRELOAD_H */
