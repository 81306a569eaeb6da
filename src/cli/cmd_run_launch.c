/* cmd_run_launch.c — running the program when the launcher stays (post-run work, several
 * --pmc groups): fork+exec, signals, the wait.
 *
 * Invariants:
 *  (1) The program's exit status is the launcher's: its code, or 128+N when signal N ended it.
 *  (2) SIGINT, SIGTERM, SIGQUIT and SIGHUP sent to the launcher by another process (kill, a
 *      batch system) are forwarded to the program; a terminal's ^C (si_code SI_KERNEL) already
 *      reached the whole foreground process group and is not sent twice. The launcher itself
 *      keeps waiting, then converts what the program wrote.
 *  (3) The program never outlives the launcher: it gets SIGTERM when the launcher dies
 *      (PR_SET_PDEATHSIG, set in the child between fork and exec and kept by exec; a launcher
 *      that died before the child set it is caught by comparing getppid() afterwards). SIGTERM
 *      rather than SIGKILL so that the tool in the program flushes what it recorded.
 *  (4) The forwarding handlers exist only while the program runs: afterwards a ^C stops
 *      omniprof's own post-processing as usual. Signals are blocked across fork so that no
 *      signal is lost between the fork and the handlers' installation. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cmd_run.h"

static volatile sig_atomic_t g_child_pid;

/* Async-signal-safe: kill(2) only. */
static void forward_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    pid_t child = (pid_t)g_child_pid;
    if (child > 0 && (!info || info->si_code != SI_KERNEL)) kill(child, sig);
}

static int status_of(int wstatus)
{
    if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
    return 1;
}

int run_child(const char *prog_path, char **argv)
{
    static const int fwd[4] = {SIGINT, SIGTERM, SIGQUIT, SIGHUP};
    struct sigaction sa, saved[4];
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigset_t block, old;
    sigemptyset(&block);
    for (int k = 0; k < 4; k++) sigaddset(&block, fwd[k]);
    sigprocmask(SIG_BLOCK, &block, &old);
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "omniprof run: fork failed: %s\n", strerror(errno));
        sigprocmask(SIG_SETMASK, &old, NULL);
        return -1;
    }
    if (child == 0) {
        /* (3): die with the launcher; if it is already gone, act as if the signal came. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) raise(SIGTERM);
        sigprocmask(SIG_SETMASK, &old, NULL);
        execv(prog_path, argv);
        fprintf(stderr, "omniprof run: cannot run '%s': %s\n", prog_path, strerror(errno));
        _exit(127);
    }
    g_child_pid = child;
    for (int k = 0; k < 4; k++) sigaction(fwd[k], &sa, &saved[k]);
    sigprocmask(SIG_SETMASK, &old, NULL);
    int wstatus = 0;
    while (waitpid(child, &wstatus, 0) < 0) {
        if (errno != EINTR) {
            wstatus = 1 << 8;
            break;
        }
    }
    g_child_pid = 0;
    for (int k = 0; k < 4; k++) sigaction(fwd[k], &saved[k], NULL);
    return status_of(wstatus);
}
