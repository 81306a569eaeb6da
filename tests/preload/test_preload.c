/* test_preload.c — libomniprof-preload.so (src/preload/): the fd registry and the interposers,
 * with real fds, real threads, real fork. The test links the library, so that its close,
 * closefrom, close_range, fclose, dup2, dup3, fork, _exit and sigaction come before libc's for
 * this program (what LD_PRELOAD does for a profiled one).
 *
 * usage: test_preload [fds|hooks|threads]   (no argument: all) */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fd_guard.h"
#include "preload/preload.h"

#include "../common/check.h" /* CHECK, g_failures */

static bool is_open(int fd) { return fcntl(fd, F_GETFD) >= 0; }

static ino_t ino_of(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

static int tmpfile_fd(void)
{
    char path[] = "/tmp/omniprof-preload-test-XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    return fd;
}

static void test_fds(void)
{
    CHECK(omniprof_preload_active(), "the test's close() is the preload library's");
    int floor = op_fd_floor();
    CHECK(floor >= 3, "floor %d", floor);

    /* Adoption: above the floor, never 0-2, even when fd 0 is free and an open lands there. */
    int saved0 = fcntl(0, F_DUPFD_CLOEXEC, 10);
    close(0);
    int low = open("/dev/null", O_RDONLY);
    CHECK(low == 0, "open got fd %d with 0 free", low);
    int ours = op_fd_adopt(low, OP_FD_IDENTITY);
    CHECK(ours >= floor, "adopted fd %d, floor %d", ours, floor);
    CHECK(!is_open(0), "the original number is closed");
    CHECK(op_fd_is_ours(ours), "registered");
    if (saved0 >= 0) {
        dup2(saved0, 0);
        close(saved0);
    }
    CHECK(fcntl(ours, F_GETFD) == FD_CLOEXEC, "close-on-exec");

    /* close(ours): EBADF, still open. */
    errno = 0;
    CHECK(close(ours) == -1 && errno == EBADF, "close(ours) = EBADF");
    CHECK(is_open(ours), "still open after the program's close");

    /* closefrom / close_range: the program's fds go, ours stay. */
    int mine1 = open("/dev/null", O_RDONLY), mine2 = open("/dev/null", O_RDONLY);
    int file = op_fd_adopt(tmpfile_fd(), OP_FD_IDENTITY);
    closefrom(3);
    CHECK(!is_open(mine1) && !is_open(mine2), "closefrom closed the program's fds");
    CHECK(is_open(ours) && is_open(file), "closefrom kept the profiler's");
    mine1 = open("/dev/null", O_RDONLY);
    CHECK(close_range(3, ~0U, 0) == 0, "close_range = 0");
    CHECK(!is_open(mine1) && is_open(ours) && is_open(file), "close_range kept only the profiler's");
    mine1 = open("/dev/null", O_RDONLY);
    CHECK(close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0 && is_open(mine1), "close_range CLOEXEC closes nothing");
    errno = 0;
    CHECK(close_range(5, 4, 0) == -1 && errno == EINVAL, "close_range(5, 4) = EINVAL as libc's");

    /* dup2 onto ours: succeeds, the number becomes the program's, ours moved. */
    ino_t our_ino = ino_of(file);
    int prog = tmpfile_fd();
    ino_t prog_ino = ino_of(prog);
    CHECK(dup2(prog, file) == file, "dup2 onto ours returns the number");
    CHECK(ino_of(file) == prog_ino, "the number is the program's file now");
    int moved = op_fd_resolve(file);
    CHECK(moved != file && ino_of(moved) == our_ino, "ours moved to %d and is our file", moved);
    CHECK(op_fd_verify(file) == 0, "the moved fd verifies");
    CHECK(write(moved, "ours", 4) == 4, "write through the moved fd");
    CHECK(lseek(prog, 0, SEEK_END) == 0, "nothing landed in the program's file");
    errno = 0;
    CHECK(dup3(prog, moved, O_CLOEXEC) == moved && op_fd_resolve(file) != moved, "dup3 onto the moved fd moves it again");
    CHECK(ino_of(op_fd_resolve(file)) == our_ino, "still our file after two moves");
    close(prog);

    /* dup2 from ours: EBADF (ours was not open without the profiler). */
    errno = 0;
    CHECK(dup2(ours, 50) == -1 && errno == EBADF, "dup2(ours, x) = EBADF");

    /* fclose of a stream on ours: EOF, EBADF, fd kept. */
    FILE *f = fdopen(ours, "r");
    CHECK(f != NULL, "fdopen");
    if (f) {
        errno = 0;
        CHECK(fclose(f) == EOF && errno == EBADF, "fclose(stream on ours) = EOF, EBADF");
        CHECK(is_open(ours), "fclose kept the fd");
    }

    /* A replacement behind the interposers (a raw system call) is seen by op_fd_verify. */
    int victim = op_fd_adopt(tmpfile_fd(), OP_FD_IDENTITY);
    int other = tmpfile_fd();
    CHECK(syscall(SYS_dup2, other, victim) == victim, "raw dup2");
    errno = 0;
    CHECK(op_fd_verify(victim) == -1 && errno == ESTALE, "the replaced fd does not verify");
    close(other);

    /* op_fd_close releases. */
    CHECK(op_fd_close(ours) == 0 && !is_open(ours) && !op_fd_is_ours(ours), "op_fd_close");
    int last = op_fd_resolve(file);
    CHECK(op_fd_close(file) == 0 && !is_open(last), "op_fd_close of a moved fd closes where it moved");
    CHECK(is_open(file) && is_open(moved), "the numbers the program dup2()ed onto stay the program's");
    close(file);
    close(moved);
    op_fd_close(victim);
}

/* ---------------------------------------------------------------------------------------------- */

static int g_pipe[2];
static _Atomic int g_prepared, g_parent, g_child_seen;

static void h_prepare(op_preload_fork_state *st) { st->t0 = 42, atomic_fetch_add(&g_prepared, 1); }
static void h_parent(op_preload_fork_state *st, pid_t pid) { atomic_fetch_add(&g_parent, st->t0 == 42 && pid > 0); }
static void h_child(op_preload_fork_state *st) { atomic_store(&g_child_seen, st->t0 == 42); }
static void h_end(op_preload_end how, int status)
{
    char c = how == OP_PRELOAD_END__EXIT ? (char)('0' + status) : 'x';
    ssize_t w = write(g_pipe[1], &c, 1);
    (void)w;
}

static struct sigaction g_app_usr1;
static bool h_sigaction(int sig, const struct sigaction *act, struct sigaction *old, int *rc)
{
    if (sig != SIGUSR1) return false;
    if (old) *old = g_app_usr1;
    if (act) g_app_usr1 = *act;
    *rc = 0;
    return true;
}

static void on_usr1(int sig) { (void)sig; }

static const op_preload_hooks g_hooks = {
    .size = sizeof(op_preload_hooks),
    .name = "test",
    .order = 5,
    .fork_prepare = h_prepare,
    .fork_parent = h_parent,
    .fork_child = h_child,
    .process_end = h_end,
    .sigaction = h_sigaction,
};

static void test_hooks(void)
{
    CHECK(pipe(g_pipe) == 0, "pipe");
    CHECK(omniprof_preload_register(&g_hooks) == 0, "register");
    pid_t p = fork();
    if (p == 0) _exit(atomic_load(&g_child_seen) ? 7 : 1); /* the hook writes '7' into the pipe */
    int st = 0;
    waitpid(p, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7, "child: fork_child ran with its state, _exit(7) kept its status");
    char c = 0;
    CHECK(read(g_pipe[0], &c, 1) == 1 && c == '7', "process_end(_EXIT, 7) ran in the child (%c)", c);
    CHECK(atomic_load(&g_prepared) == 1 && atomic_load(&g_parent) == 1, "prepare and parent hooks");

    /* signal() reaches the owner's hook: it answers with the previous action. */
    sighandler_t prev = signal(SIGUSR1, on_usr1);
    CHECK(prev == SIG_DFL, "first signal(SIGUSR1) returns SIG_DFL");
    CHECK(g_app_usr1.sa_handler == on_usr1 && (g_app_usr1.sa_flags & SA_RESTART), "the owner got the handler");
    prev = signal(SIGUSR1, SIG_IGN);
    CHECK(prev == on_usr1, "second signal() returns the first handler");
    struct sigaction real;
    omniprof_preload_real_sigaction(SIGUSR1, NULL, &real);
    CHECK(real.sa_handler == SIG_DFL, "the kernel's action was left alone");
    /* A signal nobody owns goes to libc. */
    CHECK(signal(SIGUSR2, SIG_IGN) == SIG_DFL && signal(SIGUSR2, SIG_DFL) == SIG_IGN, "SIGUSR2 through libc");
}

/* ---------------------------------------------------------------------------------------------- */
/* Threads: the profiler adopts and closes fds while the program closes everything, again and   */
/* again; a profiler fd is never closed by the program's calls (TSan label: threading).          */

static _Atomic int g_stop;
static _Atomic int g_lost;

static void *profiler_thread(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop)) {
        /* the window between open and adoption is the program's to close (then adopt fails) */
        int fd = op_fd_adopt(open("/dev/null", O_RDONLY | O_CLOEXEC), 0);
        if (fd < 0) continue;
        for (int i = 0; i < 50; i++)
            if (!is_open(fd)) {
                if (atomic_fetch_add(&g_lost, 1) == 0) fprintf(stderr, "lost fd %d (floor %d)\n", fd, op_fd_floor());
                break;
            }
        op_fd_close(fd);
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, profiler_thread, NULL);
    for (int round = 0; round < 2000; round++) {
        if (round % 2) closefrom(3);
        else close_range(3, ~0U, 0);
        for (int fd = 3; fd < 64; fd++) close(fd);
    }
    atomic_store(&g_stop, 1);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    CHECK(atomic_load(&g_lost) == 0, "%d times a profiler fd was found closed", atomic_load(&g_lost));
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only || strcmp(only, "fds") == 0) test_fds();
    if (!only || strcmp(only, "hooks") == 0) test_hooks();
    if (!only || strcmp(only, "threads") == 0) test_threads();
    if (g_failures) {
        fprintf(stderr, "%d check(s) failed\n", g_failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
