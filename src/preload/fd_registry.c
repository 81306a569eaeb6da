/* fd_registry.c — which file descriptors are the profiler's (the registry behind
 * src/common/fd_guard.h and the fd interposers of fd_interpose.c).
 *
 * State:
 *   g_bits       one bit per fd number below OP_FD_MAX: set while the number is the profiler's.
 *                Read without a lock (close() of the program tests one bit), written under
 *                g_lock.
 *   g_ent[]      entries for fds adopted with OP_FD_IDENTITY and for relocated fds: the fd,
 *                its (dev, inode) at adoption, and `moved_to` when the program dup2()ed onto it
 *                and the profiler's file moved to another number. Published fd-last (release),
 *                read lock-free (acquire) by op_fd_resolve/op_fd_verify, which may run in signal
 *                handlers.
 *
 * Invariants:
 *  (1) A number whose bit is set is open and refers to the profiler's file; the program's calls
 *      never close or replace it (fd_interpose.c), only omniprof_preload_fd_close does.
 *  (2) An fd the profiler keeps is never 0-2: adoption moves it to >= floor (or >= 3).
 *  (3) After a relocation, the old number's entry stays (the holder still uses that number) and
 *      maps to the new one; a new adoption never takes a number that still has such an entry,
 *      so a holder's number never means two files to the profiler.
 *  (4) Writers of the registry hold g_lock; nothing under g_lock calls back into the program.
 *  (5) A relocation never happens between the moment the profiler resolves one of its numbers
 *      and the end of the system call it makes through it (else a dup2 of the program's could
 *      slip in between, and the profiler's write land in the program's file). The profiler's
 *      I/O is bracketed by omniprof_preload_fd_io_begin/end: a count of calls in flight,
 *      raised before g_relocating is read; a relocation raises g_relocating, then waits for
 *      the count to drain (bounded: a signal handler of the program's that relocates on a
 *      thread interrupted inside the profiler's I/O would otherwise wait for itself). Both
 *      sides use sequentially consistent atomics, so one of them always sees the other. I/O
 *      that finds a relocation under way waits for it, or (io_begin's `may_wait` false, in a
 *      signal handler) gives up its call. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/fd_guard.h"
#include "common/log.h"
#include "omniprof/defines.h"
#include "preload/preload_internal.h"

#define OP_FD_MAX 65536
#define OP_FD_ENTRIES 256

typedef struct fd_entry {
    _Atomic int fd; /* fd + 1; 0 = free slot */
    _Atomic int moved_to;
    int has_id;
    uint64_t dev, ino;
} fd_entry;

static _Atomic uint64_t g_bits[OP_FD_MAX / 64];
static fd_entry g_ent[OP_FD_ENTRIES];
static _Atomic int g_n_ent;      /* slots ever used (scan bound) */
static _Atomic int g_n_moves;    /* relocations so far (op_fd_resolve's fast path) */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_io_inflight;  /* invariant (5) */
static _Atomic int g_relocating;
static int g_log_fd = -1;

static int raw_close(int fd) { return (int)syscall(SYS_close, fd); }

bool op_preload_fd_bit(int fd)
{
    if (fd < 0 || fd >= OP_FD_MAX) return false;
    return (atomic_load_explicit(&g_bits[fd / 64], memory_order_acquire) >> (fd % 64)) & 1;
}

static void set_bit(int fd, bool on)
{
    if (fd < 0 || fd >= OP_FD_MAX) return;
    uint64_t m = 1ull << (fd % 64);
    if (on) atomic_fetch_or_explicit(&g_bits[fd / 64], m, memory_order_release);
    else atomic_fetch_and_explicit(&g_bits[fd / 64], ~m, memory_order_release);
}

static fd_entry *find_entry(int fd)
{
    int n = atomic_load_explicit(&g_n_ent, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(&g_ent[i].fd, memory_order_acquire) == fd + 1) return &g_ent[i];
    return NULL;
}

/* Under g_lock. */
static fd_entry *new_entry(void)
{
    int n = atomic_load(&g_n_ent);
    fd_entry *e = NULL;
    for (int i = 0; i < n && !e; i++)
        if (atomic_load(&g_ent[i].fd) == 0) e = &g_ent[i];
    if (!e && n < OP_FD_ENTRIES) {
        e = &g_ent[n];
        atomic_store_explicit(&g_n_ent, n + 1, memory_order_release);
    }
    if (!e) return NULL;
    atomic_store(&e->moved_to, -1);
    e->has_id = 0;
    e->dev = e->ino = 0;
    return e;
}

static void drop_entry(fd_entry *e)
{
    if (e) atomic_store_explicit(&e->fd, 0, memory_order_release);
}

/* Under g_lock: a number >= `min` for the file of `fd` that is neither registered nor the old
 * number of a relocated fd (invariant 3). */
static int dup_above(int fd, int min)
{
    int held[8], n_held = 0, nfd = -1;
    while (n_held < 8) {
        nfd = fcntl(fd, F_DUPFD_CLOEXEC, min);
        if (nfd < 0 || !find_entry(nfd)) break;
        held[n_held++] = nfd; /* kept open meanwhile, so that the next dup passes it */
        nfd = -1;
        errno = EMFILE;
    }
    int e = errno;
    for (int i = 0; i < n_held; i++) raw_close(held[i]);
    errno = e;
    return nfd;
}

int omniprof_preload_fd_adopt(int fd, unsigned flags)
{
    if (fd < 0) {
        errno = EBADF;
        return -1;
    }
    pthread_mutex_lock(&g_lock);
    int nfd = dup_above(fd, op_fd_floor());
    if (nfd < 0 && fd < 3 && errno != EBADF) nfd = dup_above(fd, 3);
    int e = errno;
    if (nfd >= 0) {
        raw_close(fd);
    } else if (e == EBADF) { /* closed under us before it was ours (the program's closefrom) */
        pthread_mutex_unlock(&g_lock);
        errno = EBADF;
        return -1;
    } else if (fd >= 3) {
        nfd = fd; /* no room above the floor: keep it where it is, protected all the same */
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    } else {
        raw_close(fd);
        pthread_mutex_unlock(&g_lock);
        errno = e;
        return -1;
    }
    if (nfd >= OP_FD_MAX) {
        static _Atomic int told;
        if (!atomic_exchange(&told, 1))
            op_warn("fd %d is beyond what the fd registry covers (%d); the program could close it", nfd, OP_FD_MAX);
    }
    set_bit(nfd, true);
    struct stat st;
    if ((flags & OP_FD_IDENTITY) && fstat(nfd, &st) == 0) {
        fd_entry *en = new_entry();
        if (en) {
            en->has_id = 1;
            en->dev = (uint64_t)st.st_dev;
            en->ino = (uint64_t)st.st_ino;
            atomic_store_explicit(&en->fd, nfd + 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&g_lock);
    return nfd;
}

int omniprof_preload_fd_resolve(int fd)
{
    if (atomic_load_explicit(&g_n_moves, memory_order_acquire) == 0) return fd;
    for (int hops = 0; hops < 8; hops++) {
        fd_entry *e = find_entry(fd);
        int to = e ? atomic_load_explicit(&e->moved_to, memory_order_acquire) : -1;
        if (to < 0) return fd;
        fd = to;
    }
    return fd;
}

int omniprof_preload_fd_close(int fd)
{
    pthread_mutex_lock(&g_lock);
    for (int hops = 0; hops < 8; hops++) { /* the old numbers' entries go with the file */
        fd_entry *e = find_entry(fd);
        int to = e ? atomic_load(&e->moved_to) : -1;
        if (to < 0) break;
        drop_entry(e);
        fd = to;
    }
    fd_entry *last = find_entry(fd);
    struct stat st;
    /* closed or replaced behind the interposers (a raw close_range): the number may be the
     * program's file now; forget it without closing it */
    bool replaced = last && last->has_id &&
                    (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != last->dev || (uint64_t)st.st_ino != last->ino);
    drop_entry(last);
    set_bit(fd, false);
    int rc = replaced ? 0 : raw_close(fd);
    int e = errno;
    pthread_mutex_unlock(&g_lock);
    errno = e;
    return rc;
}

int omniprof_preload_fd_is_ours(int fd) { return op_preload_fd_bit(fd); }

int omniprof_preload_fd_verify(int fd)
{
    int r = omniprof_preload_fd_resolve(fd);
    fd_entry *e = find_entry(r);
    struct stat st;
    if (!e || !e->has_id) {
        if (op_preload_fd_bit(r) || r == fd) return 0;
        errno = ESTALE;
        return -1;
    }
    uint64_t dev = e->dev, ino = e->ino;
    if (atomic_load_explicit(&e->fd, memory_order_acquire) != r + 1) return 0; /* released meanwhile */
    if (fstat(r, &st) != 0 || (uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino) {
        errno = ESTALE;
        return -1;
    }
    return 0;
}

/* Invariant (5), the I/O side. 0: go on (call io_end after the system call); -1: a relocation
 * is under way and may_wait is false: make no call (and no io_end). Async-signal-safe. */
int omniprof_preload_fd_io_begin(int may_wait)
{
    for (;;) {
        atomic_fetch_add(&g_io_inflight, 1);
        if (!atomic_load(&g_relocating)) return 0;
        atomic_fetch_sub(&g_io_inflight, 1);
        if (!may_wait) return -1;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

void omniprof_preload_fd_io_end(void) { atomic_fetch_sub(&g_io_inflight, 1); }

/* Invariant (5), the relocation side: raise the flag and wait (at most ~50 ms) for the
 * profiler's calls in flight; op_preload_fd_relocate_end lowers it once libc's dup2 is done. */
void op_preload_fd_relocate_begin(void)
{
    atomic_fetch_add(&g_relocating, 1);
    for (int i = 0; i < 5000 && atomic_load(&g_io_inflight) > 0; i++) {
        struct timespec ts = {0, 10000};
        nanosleep(&ts, NULL);
    }
}

void op_preload_fd_relocate_end(void) { atomic_fetch_sub(&g_relocating, 1); }

/* The program is about to make `fd` (one of ours) refer to another file (dup2/dup3 onto it):
 * move the profiler's file to a new number first, so that both keep what they expect. Returns
 * 0, or -1 (errno) when no number is free (the program's call then fails with that errno). */
int op_preload_fd_relocate(int fd)
{
    pthread_mutex_lock(&g_lock);
    if (!op_preload_fd_bit(fd)) {
        pthread_mutex_unlock(&g_lock);
        return 0;
    }
    int nfd = dup_above(fd, op_fd_floor());
    if (nfd < 0) nfd = dup_above(fd, 3);
    if (nfd < 0) {
        int e = errno;
        pthread_mutex_unlock(&g_lock);
        errno = e;
        return -1;
    }
    fd_entry *old = find_entry(fd);
    fd_entry *en = new_entry();
    if (!en && !old) { /* no room to remember the move: the profiler cannot follow it */
        raw_close(nfd);
        pthread_mutex_unlock(&g_lock);
        errno = EBUSY;
        return -1;
    }
    if (en) {
        en->has_id = old ? old->has_id : 0;
        en->dev = old ? old->dev : 0;
        en->ino = old ? old->ino : 0;
        atomic_store_explicit(&en->fd, nfd + 1, memory_order_release);
    }
    if (!old) {
        old = new_entry();
        if (old) atomic_store_explicit(&old->fd, fd + 1, memory_order_release);
    }
    if (old) atomic_store_explicit(&old->moved_to, nfd, memory_order_release);
    set_bit(nfd, true);
    set_bit(fd, false);
    atomic_fetch_add_explicit(&g_n_moves, 1, memory_order_release);
    pthread_mutex_unlock(&g_lock);
    return 0;
}

/* The registered numbers in [lo, hi], ascending, at most cap of them, under g_lock (closefrom
 * and close_range hold it across their system calls so that no registration slips between). */
int op_preload_fd_list_locked(unsigned lo, unsigned hi, int *out, int cap)
{
    int n = 0;
    if (hi >= OP_FD_MAX) hi = OP_FD_MAX - 1;
    for (unsigned w = lo / 64; w <= hi / 64 && n < cap; w++) {
        uint64_t bits = atomic_load(&g_bits[w]);
        while (bits && n < cap) {
            unsigned b = (unsigned)__builtin_ctzll(bits);
            bits &= bits - 1;
            unsigned fd = w * 64 + b;
            if (fd >= lo && fd <= hi) out[n++] = (int)fd;
        }
    }
    return n;
}

void op_preload_fd_lock(void) { pthread_mutex_lock(&g_lock); }
void op_preload_fd_unlock(void) { pthread_mutex_unlock(&g_lock); }

/* A forked child keeps the parent's fds (and their registrations); the lock may have been held
 * by a thread that does not exist in the child. */
void op_preload_fd_at_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_lock = fresh;
}

/* The log fd: a private copy of stderr as the process started (invariant 2 applies to it too).
 * Called once from the library's constructor. */
void op_preload_fd_init(void)
{
    const char *attach_log = getenv("OMNIPROF_ATTACH_LOG");
    if (attach_log && *attach_log) omniprof_preload_log_reopen(attach_log);
    else if (fcntl(STDERR_FILENO, F_GETFD) >= 0)
        g_log_fd = omniprof_preload_fd_adopt(fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3), OP_FD_IDENTITY);
}

/* A forked child of a process omniprof attach was collecting in, which nobody attached to
 * (yet): every descriptor the profiler registered is the parent's (its database, counters,
 * eventfds) and is closed here; the structures that name them are abandoned, as after any
 * fork, and a re-attach opens new ones. */
OMNIPROF_API void omniprof_preload_fd_close_all(void)
{
    int fds[256];
    for (;;) {
        pthread_mutex_lock(&g_lock);
        int n = op_preload_fd_list_locked(0, OP_FD_MAX - 1, fds, 256);
        pthread_mutex_unlock(&g_lock);
        if (n == 0) break;
        for (int i = 0; i < n; i++) omniprof_preload_fd_close(fds[i]);
    }
    g_log_fd = -1;
}

/* omniprof attach: the profiler's messages go to the launcher's file `path` (appended), never
 * into the program's stderr; NULL: no log descriptor at all (a detach, which leaves no
 * descriptor of ours open, and a forked child not attached to). */
OMNIPROF_API void omniprof_preload_log_reopen(const char *path)
{
    int old = g_log_fd;
    g_log_fd = -1;
    if (old >= 0) omniprof_preload_fd_close(old);
    if (!path || !*path) return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd >= 0) g_log_fd = omniprof_preload_fd_adopt(fd, OP_FD_IDENTITY);
}


/* The fd to write a log line through now: the private copy while it is still the profiler's;
 * once the program closed it behind the interposers, fd 2 if that is still the same file as
 * stderr was at start (so the line goes where it would have gone); else -1 (dropped). */
int omniprof_preload_log_fd_checked(void)
{
    if (g_log_fd < 0) return -1;
    if (omniprof_preload_fd_verify(g_log_fd) == 0) return omniprof_preload_fd_resolve(g_log_fd);
    fd_entry *e = find_entry(g_log_fd);
    struct stat st;
    if (e && e->has_id && fstat(STDERR_FILENO, &st) == 0 && (uint64_t)st.st_dev == e->dev &&
        (uint64_t)st.st_ino == e->ino)
        return STDERR_FILENO;
    return -1;
}

/* The registry's calls for their client (src/common/fd_guard.c): the one symbol it looks up. */
OMNIPROF_API const op_preload_fd_api *omniprof_preload_fd_api(void)
{
    static const op_preload_fd_api api = {
        .size = sizeof(op_preload_fd_api),
        .adopt = omniprof_preload_fd_adopt,
        .close = omniprof_preload_fd_close,
        .is_ours = omniprof_preload_fd_is_ours,
        .resolve = omniprof_preload_fd_resolve,
        .verify = omniprof_preload_fd_verify,
        .log_fd_checked = omniprof_preload_log_fd_checked,
        .io_begin = omniprof_preload_fd_io_begin,
        .io_end = omniprof_preload_fd_io_end,
        .capture = omniprof_preload_fd_capture,
        .captured = omniprof_preload_fd_captured,
        .sync_scope = omniprof_preload_fd_sync_scope,
    };
    return &api;
}
