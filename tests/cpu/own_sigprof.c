/* own_sigprof.c — a program that profiles itself: a SIGPROF handler driven by
 * setitimer(ITIMER_PROF), plus its own POSIX timer on SIGRTMIN+4 (the signal omniprof's CPU-time
 * sampler uses by default) sent through timer_create and a sigqueue to itself. It prints a
 * deterministic line; the counts are only checked to be > 0. Exit 0 when both handlers ran. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_prof, g_rt;

static void on_prof(int s) { (void)s; g_prof++; }
static void on_rt(int s, siginfo_t *si, void *uc) { (void)s; (void)si; (void)uc; g_rt++; }

__attribute__((noinline)) double busy(long n)
{
    volatile double x = 0;
    for (long i = 0; i < n; i++) x += (double)i * 0.25;
    return x;
}

int main(void)
{
    signal(SIGPROF, on_prof);
    struct itimerval it = {{0, 5000}, {0, 5000}};
    setitimer(ITIMER_PROF, &it, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMIN + 4, &sa, NULL);
    timer_t tm;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGRTMIN + 4;
    timer_create(CLOCK_MONOTONIC, &sev, &tm);
    struct itimerspec its = {{0, 20000000}, {0, 20000000}};
    timer_settime(tm, 0, &its, NULL);
    busy(300000000L);
    union sigval v = {.sival_int = 7};
    sigqueue(getpid(), SIGRTMIN + 4, v);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    timer_delete(tm);
    printf("own profiling ok=%d\n", g_prof > 0 && g_rt > 0);
    return g_prof > 0 && g_rt > 0 ? 0 : 1;
}
