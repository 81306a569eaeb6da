/* victim.c — the program the tool tests run under `omniprof run --marker-trace`. It makes a
 * known number of user-API marks and ranges, then meets the event the test is about.
 *
 * usage: tool_victim MODE [N]
 *   normal      N marks "m", N push/pop ranges "r", exit 0
 *   abort       N marks, then abort()
 *   segv        N marks, then raise(SIGSEGV)
 *   segv_fault  N marks, then a real invalid write (SIGSEGV from the hardware)
 *   wait_term   N marks, print "ready", then wait (the test sends SIGTERM)
 *   wait_pid    N marks, print "pid <its pid>", then wait (the test kills the launcher)
 *   selected    N marks "before", omniprof_resume(), N marks "inside" and N ranges "r",
 *               omniprof_pause(), N marks "after"
 *   handler     install SIGTERM and SIGINT handlers, N marks, print "ready", wait until both
 *               arrived (each prints "handled <sig>"), N more marks, exit 0
 *   exit_thread N marks, then a second thread calls exit(3) while main sleeps
 *   fork        N marks "parent", fork; child: N marks "child", exit 0; parent: waits,
 *               N more marks "parent", exit with the child's status + 0
 *   forkexec    N marks "parent", fork; child: exec this program in mode normal with N;
 *               parent waits, exits 0
 *   vforkexec   as forkexec, with vfork() and execv()
 *   slow        N marks, one every 10 ms (a reader queries meanwhile)
 *   slow_print  as slow, printing the number of marks made after every 10th
 *   steps       3 steps of N marks; after each of the first two it prints "step K" and waits
 *               for a line on stdin (the test looks at the database meanwhile)
 *   threads     N marks on each of 4 threads
 *   exit7       N marks, exit 7 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <omniprof/user.h>

static int n = 10;
static volatile sig_atomic_t g_term, g_int;

static void marks(const char *name, int count)
{
    for (int i = 0; i < count; i++) omniprof_mark(name);
}

static void ranges(const char *name, int count)
{
    for (int i = 0; i < count; i++) {
        omniprof_range_push(name);
        omniprof_range_pop();
    }
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void on_term(int sig)
{
    const char *m = sig == SIGTERM ? "handled 15\n" : "handled 2\n";
    ssize_t w = write(1, m, strlen(m));
    (void)w;
    if (sig == SIGTERM) g_term = 1;
    else g_int = 1;
}

static void *exit_thread(void *arg)
{
    (void)arg;
    sleep_ms(50);
    exit(3);
}

static void *mark_thread(void *arg)
{
    (void)arg;
    marks("t", n);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODE [N]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    if (argc > 2) n = atoi(argv[2]);
    setvbuf(stdout, NULL, _IONBF, 0);
    if (strcmp(mode, "normal") == 0) {
        marks("m", n);
        ranges("r", n);
        printf("normal done\n");
        return 0;
    }
    if (strcmp(mode, "exit7") == 0) {
        marks("m", n);
        exit(7);
    }
    if (strcmp(mode, "abort") == 0) {
        marks("m", n);
        abort();
    }
    if (strcmp(mode, "segv") == 0) {
        marks("m", n);
        raise(SIGSEGV);
        return 0;
    }
    if (strcmp(mode, "segv_fault") == 0) {
        marks("m", n);
        volatile int *p = (volatile int *)(uintptr_t)strtoul(argc > 3 ? argv[3] : "8", NULL, 0);
        *p = 1;
        return 0;
    }
    if (strcmp(mode, "selected") == 0) { /* marks around a resume/pause pair */
        marks("before", n);
        omniprof_resume();
        marks("inside", n);
        ranges("r", n);
        omniprof_pause();
        marks("after", n);
        printf("selected done\n");
        return 0;
    }
    if (strcmp(mode, "wait_pid") == 0) { /* like wait_term, and says who it is */
        marks("m", n);
        printf("pid %d\n", (int)getpid());
        for (int i = 0; i < 3000; i++) sleep_ms(10);
        return 0;
    }
    if (strcmp(mode, "wait_term") == 0) {
        marks("m", n);
        printf("ready\n");
        for (int i = 0; i < 3000; i++) sleep_ms(10);
        return 0;
    }
    if (strcmp(mode, "handler") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_term;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        signal(SIGINT, on_term);
        /* reading the action back gives the program's own handler */
        struct sigaction back;
        sigaction(SIGTERM, NULL, &back);
        if (back.sa_handler != on_term) printf("sigaction readback differs\n");
        marks("m", n);
        printf("ready\n");
        for (int i = 0; i < 3000 && !(g_term && g_int); i++) sleep_ms(10);
        marks("m", n);
        printf("exiting\n");
        return 0;
    }
    if (strcmp(mode, "exit_thread") == 0) {
        marks("m", n);
        pthread_t t;
        pthread_create(&t, NULL, exit_thread, NULL);
        for (;;) sleep_ms(1000);
    }
    if (strcmp(mode, "threads") == 0) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, mark_thread, NULL);
        for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
        return 0;
    }
    if (strcmp(mode, "fork") == 0 || strcmp(mode, "forkexec") == 0) {
        marks("parent", n);
        pid_t pid = fork();
        if (pid == 0) {
            if (strcmp(mode, "forkexec") == 0) {
                char num[16];
                snprintf(num, sizeof(num), "%d", n);
                execl("/proc/self/exe", argv[0], "normal", num, (char *)NULL);
                _exit(127);
            }
            marks("child", n);
            exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        marks("parent", n);
        printf("child pid %d status %d\n", (int)pid, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    if (strcmp(mode, "vforkexec") == 0) {
        marks("parent", n);
        char num[16];
        snprintf(num, sizeof(num), "%d", n);
        char *args[] = {argv[0], "normal", num, NULL};
        pid_t pid = vfork();
        if (pid == 0) {
            execv("/proc/self/exe", args);
            _exit(127);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        marks("parent", n);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    if (strcmp(mode, "slow_print") == 0) {
        for (int i = 1; i <= n; i++) {
            omniprof_mark("m");
            if (i % 10 == 0) printf("%d\n", i);
            sleep_ms(10);
        }
        return 0;
    }
    if (strcmp(mode, "steps") == 0) {
        char line[64];
        for (int step = 1; step <= 3; step++) {
            marks("m", n);
            if (step == 3) break;
            printf("step %d\n", step);
            fflush(stdout);
            if (!fgets(line, sizeof line, stdin)) return 4;
        }
        return 0;
    }
    if (strcmp(mode, "slow") == 0) {
        for (int i = 0; i < n; i++) {
            omniprof_mark("m");
            sleep_ms(10);
        }
        return 0;
    }
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
