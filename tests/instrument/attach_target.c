/* attach_target.c — a running program for the `omniprof attach` tests: N threads (main
 * included) spin on the CPU for S seconds, optionally K child processes do the same; it prints
 * "pid P" at start and "done" at the end and exits with status 7 (children with 0).
 *
 *   attach_target SECONDS THREADS [CHILDREN] [undumpable|sleeper]
 * `undumpable` sets PR_SET_DUMPABLE 0 (what setuid programs get), which refuses ptrace from
 * the same user without CAP_SYS_PTRACE. `sleeper`: every thread sleeps 50 ms between bursts of
 * about a microsecond (a launch-synchronize-sleep loop), so it is almost always in nanosleep; it prints
 * how many sleeps ended early with EINTR ("eintr N"). `forker`: on SIGUSR1 the main thread
 * forks a child that spins for SECONDS more and exits 0 (it prints "child PID"; the parent
 * waits for it and counts it as a child).
 * SIGUSR2 ends the spinning early, in every thread and every child (they inherit the handler):
 * the tests send it to the process group once their checks are done, so that SECONDS is only an
 * upper bound and a test does not wait for it (same output, same exit status). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static volatile double g_sink;
static double g_secs;
static int g_sleeper;
static atomic_int g_eintr; /* sleeps cut short: the attach must not cause any */
static volatile sig_atomic_t g_fork_request;
static int g_forked;
static pthread_t g_main;

static volatile sig_atomic_t g_stop; /* SIGUSR2: stop spinning now */

static void on_usr1(int sig) { (void)sig, g_fork_request = 1; }
static void on_usr2(int sig) { (void)sig, g_stop = 1; }

/* forker: the main thread forks a child on request (outside the signal handler) */
static void fork_if_asked(void)
{
    if (!g_fork_request || !pthread_equal(pthread_self(), g_main)) return;
    g_fork_request = 0;
    pid_t c = fork();
    if (c == 0) {
        double t0 = now(), x = 0;
        while (now() - t0 < g_secs && !g_stop)
            for (int i = 0; i < 10000; i++) x += i * 0.5;
        g_sink = x;
        _exit(0);
    }
    if (c > 0) {
        g_forked++;
        printf("child %d\n", (int)c);
        fflush(stdout);
    }
}

__attribute__((noinline)) static double spin(double secs)
{
    double t0 = now(), x = 0;
    while (now() - t0 < secs && !g_stop) {
        for (int i = 0; i < (g_sleeper ? 200 : 10000); i++) x += i * 0.5;
        fork_if_asked();
        /* a sleep cut short by the test's SIGUSR2 is not the attach's doing */
        if (g_sleeper && usleep(50000) != 0 && errno == EINTR && !g_stop)
            atomic_fetch_add(&g_eintr, 1);
    }
    return x;
}

static void *worker(void *arg)
{
    (void)arg;
    g_sink = spin(g_secs);
    return NULL;
}

int main(int argc, char **argv)
{
    g_secs = argc > 1 ? atof(argv[1]) : 5;
    int n = argc > 2 ? atoi(argv[2]) : 4, kids = argc > 3 ? atoi(argv[3]) : 0;
    if (argc > 4 && !strcmp(argv[4], "undumpable")) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    g_sleeper = argc > 4 && !strcmp(argv[4], "sleeper");
    g_main = pthread_self();
    struct sigaction sa = {.sa_handler = on_usr2};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    if (argc > 4 && !strcmp(argv[4], "forker")) signal(SIGUSR1, on_usr1);
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    for (int k = 0; k < kids; k++)
        if (fork() == 0) {
            g_sink = spin(g_secs);
            _exit(0);
        }
    pthread_t t[64];
    for (int i = 0; i < n - 1 && i < 64; i++) pthread_create(&t[i], NULL, worker, NULL);
    g_sink = spin(g_secs);
    for (int i = 0; i < n - 1 && i < 64; i++) pthread_join(t[i], NULL);
    int bad = 0;
    kids += g_forked;
    for (int k = 0; k < kids; k++) {
        int st = 0;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
    }
    if (g_sleeper) printf("eintr %d\n", atomic_load(&g_eintr));
    printf("done %d threads %d children %d bad\n", n, kids, bad);
    return 7;
}
