/* fd_guard.h — the profiler's own file descriptors (docs/reliability.md).
 *
 * Every fd the profiler keeps open (database, WAL and shared-memory files, spool, eventfds,
 * spill files, perf counters) is *adopted* right after it is opened: moved to the lowest free
 * number at or above a high floor with F_DUPFD_CLOEXEC (never 0-2, out of the numbers a program
 * reuses) and registered with libomniprof-preload.so, whose close/closefrom/close_range/fclose/
 * dup2/dup3 interposers then keep the program from closing or replacing it while showing the
 * program what it would have seen without the profiler (src/preload/fd_interpose.c).
 *
 * Where an fd could still have been replaced behind the interposers (a raw close_range system
 * call, a static program), code that writes through it calls op_fd_verify first: the fd must
 * still be the file (device, inode) it was when adopted.
 *
 * These functions reach the registry of libomniprof-preload.so through the table it exports
 * (omniprof_preload_fd_api, looked up once when the calling library loads), so every omniprof
 * library can use them whether or not the preload library is loaded; without it an fd is still
 * moved above the floor, but nothing protects it and op_fd_verify accepts it.
 * All of them are async-signal-safe except op_fd_adopt and op_fd_close. */
#ifndef OMNIPROF_COMMON_FD_GUARD_H
#define OMNIPROF_COMMON_FD_GUARD_H

#include <stdbool.h>
#include <sys/types.h>

/* op_fd_adopt flags */
#define OP_FD_IDENTITY 1u /* remember (st_dev, st_ino) so that op_fd_verify can check it */

/* The lowest number the profiler's fds take: 3/4 of the soft RLIMIT_NOFILE at start, at most
 * 4096, at least 3. */
int op_fd_floor(void);

/* Move `fd` above the floor (closing the original number) and register it. Returns the fd to
 * use from now on, or -1 with errno set (fd is then closed). An fd that cannot move above the
 * floor (rlimit reached) is kept where it is if it is >= 3, else moved to the lowest free
 * number >= 3. */
int op_fd_adopt(int fd, unsigned flags);

/* op_fd_adopt for an fd just opened from `path`, which must still be that file once adopted:
 * a program that closes every fd could have closed it between the open and the adoption, and
 * another open (of the profiler's) could have taken the number meanwhile. Returns the fd, or
 * -1 (errno EBADF; the fd is closed) when it is not the file at `path`. */
int op_fd_adopt_path(int fd, const char *path, unsigned flags);

/* A temporary file in `dir` that never outlives the process and has no name a kill could leave
 * behind (O_TMPFILE; where the file system has none, a hidden name removed at once), opened
 * read-write and adopted with `flags`. -1 with errno set. */
int op_fd_tmpfile(const char *dir, unsigned flags);

/* Unregister and close one of the profiler's fds (after a dup2 relocation, the fd it moved
 * to). Returns close's result. */
int op_fd_close(int fd);

/* True when `fd` is registered as the profiler's. */
bool op_fd_is_ours(int fd);

/* The number to use now for an adopted fd: itself, or where it moved when the program
 * dup2()ed onto it. */
int op_fd_resolve(int fd);

/* 0 when the (resolved) fd is still the file it was when adopted with OP_FD_IDENTITY (or has
 * no identity recorded); -1 with errno = ESTALE when it was closed or replaced. */
int op_fd_verify(int fd);

/* The number to read, write or poll through for one of the profiler's fds: op_fd_resolve(fd)
 * when op_fd_verify(fd) accepts it, else -1 with errno = ESTALE (poll ignores a negative fd, a
 * read or write on it fails with EBADF): never a file the program put on that number. */
int op_fd_usable(int fd);

/* Bracket every system call the profiler makes through one of its numbers, from the
 * resolution of the number (op_fd_resolve, op_fd_usable) to the call's return: a dup2 of the
 * program's onto that number then waits instead of slipping in between. op_fd_io_begin(true)
 * waits out a relocation under way and returns 0; op_fd_io_begin(false) (signal handlers)
 * returns -1 instead, and the caller skips its call and op_fd_io_end. Async-signal-safe. */
int op_fd_io_begin(bool may_wait);
void op_fd_io_end(void);

/* One write (or read) through one of the profiler's fds, inside op_fd_io_begin/end and only
 * while op_fd_usable accepts the fd: -1 with errno ESTALE when it is no longer the profiler's,
 * EAGAIN when a relocation is under way and may_wait is false. Async-signal-safe. */
ssize_t op_fd_write_checked(int fd, const void *buf, size_t n, bool may_wait);
ssize_t op_fd_read_checked(int fd, void *buf, size_t n, bool may_wait);

/* The capture scope, for a library that opens fds of its own inside a call of the profiler's
 * and keeps their numbers where the profiler cannot renumber them (libunwind's memory-check
 * pipe): between op_fd_capture_begin() and op_fd_capture_end() on the calling thread, every
 * pipe()/pipe2() the process makes on that thread is adopted (with OP_FD_IDENTITY) before the
 * caller sees its numbers. op_fd_capture_end returns how many fds were captured in all scopes
 * so far and copies up to `cap` of them to `fds` (NULL: none). Without the preload library
 * nothing is captured (0). Not async-signal-safe. */
void op_fd_capture_begin(void);
int op_fd_capture_end(int *fds, int cap);

/* SQLite's fsync/fdatasync on this thread follow relocated numbers while delta > 0 (db_files.c). */
void op_fd_sync_scope(int delta);

/* The fd omniprof's log lines go to: a private copy of stderr taken when the preload library
 * started (-1: stderr was closed then, lines are dropped), or 2 without the preload library.
 * A copy the program closed or replaced behind the interposers is never written: the line goes
 * to fd 2 while that is still the same file as stderr was at start, else it is dropped. */
int op_fd_log(void);

#endif /* OMNIPROF_COMMON_FD_GUARD_H */
