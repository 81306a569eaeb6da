/* hostile.c — the program of the reliability tests (tests/reliability/test_reliability.py): it
 * does to its own process what daemons, servers and sloppy programs do, then reports what it
 * saw. The test runs it once without the profiler and once under `omniprof run`, and compares
 * its stdout, its exit status and every byte of the files it wrote: they must be equal.
 *
 * usage: reliability_hostile MODE DIR [N]
 * Every mode makes N push/pop ranges "before" (default 1000), does its thing, makes N ranges
 * "after" where the process goes on, and writes DIR/report.txt (what each call returned, with
 * errno names) and DIR/own-*.txt (its own files; their content is fixed, so a byte written by
 * anyone else shows). The report is also printed on stdout when stdout is open.
 *
 *   normal       ranges, exit 0
 *   close_loop   close() every fd from 3 to the soft RLIMIT_NOFILE; count successes
 *   close_all    the same from fd 0 (std streams included)
 *   closefrom    closefrom(3)
 *   close_range  close_range(3, ~0U, 0), then close_range(3, ~0U, CLOSE_RANGE_CLOEXEC)
 *   std_closed   (started with stdout and stderr closed) write(1) and write(2), then open a
 *                file and report the fd it got
 *   foreign_fds  every fd of /proc/self/fd that is not 0-2 and not its own (the profiler's):
 *                dup2/dup3 its own file onto it and write through it; then fdopen+fclose the
 *                foreign fds left (the report says only whether the calls behaved as on free
 *                numbers and closed fds; how many there were goes to DIR/foreign.txt)
 *   _exit        ranges, _exit(3)
 *   _Exit        ranges, _Exit(4)
 *   fork_exit    fork; the child makes N ranges "child" and _exit(0)s; the parent waits
 *   daemon       double fork; the middle process _exit()s at once; the grandchild setsid()s,
 *                writes its pid to DIR/daemon.pid (temporary name, then rename), makes N ranges
 *                "daemon", closes every fd, reopens 0-2 on /dev/null, writes its file, makes N
 *                ranges "daemon_after" and exits; the first process waits for the middle one
 *   exec         ranges, then exec itself in mode normal with N
 *   signal SIG   ranges, then raise(SIG) (default action)
 *   wait         ranges, print "ready", then pause() until a signal ends the process
 *   spin MS      make ranges for MS milliseconds (the SIGKILL test kills it meanwhile)
 *   fiber        (issue 31) write its input file, close every fd from 3, open the input (fd 3)
 *                and its output (fd 4), spin on a makecontext stack (a fiber: the sampler's
 *                unwinder meets a stack it does not know), then copy the input to the output
 *                and report what it read; run under `omniprof sample`
 *   raw_close_range  close_range(3, ~0U, 0) as a raw system call (behind any interposer), then
 *                fill every free fd number with dups of its own file, make N ranges "after",
 *                write one line through every dup, close them
 *   dup2_high LO HI  dup2 its own file onto every number in [LO, HI], write through each, make N
 *                ranges "after", close them
 *   exec_threads 4 threads make ranges "thread" until main has made its N "before", then main
 *                execs itself in mode normal (the threads still running)
 *   glibc_daemon daemon(1, 1) (glibc's: the parent leaves through libc's internal _exit); the
 *                child makes N ranges "daemon" and writes its pid file
 *   quick_exit   ranges, quick_exit(5) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <omniprof/user.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static const char *g_dir;
static char g_report[8192];
static size_t g_report_len;

static void ranges(const char *name, int count)
{
    for (int i = 0; i < count; i++) {
        omniprof_range_push(name);
        omniprof_range_pop();
    }
}

static void report(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g_report + g_report_len, sizeof g_report - g_report_len, fmt, ap);
    va_end(ap);
    if (n > 0) g_report_len += (size_t)n < sizeof g_report - g_report_len ? (size_t)n : 0;
}

static const char *errname(int e)
{
    switch (e) {
    case 0: return "0";
    case EBADF: return "EBADF";
    case EINVAL: return "EINVAL";
    case EBUSY: return "EBUSY";
    case EMFILE: return "EMFILE";
    default: return "other";
    }
}

static void path_in_dir(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", g_dir, name); }

/* Write the program's own file: 64 lines of fixed text; returns the fd it got (kept open). */
static int own_file(const char *name, int keep_open)
{
    char path[PATH_MAX];
    path_in_dir(path, sizeof path, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    for (int i = 0; i < 64; i++) {
        char line[80];
        int n = snprintf(line, sizeof line, "%s line %02d: the program's own bytes\n", name, i);
        if (write(fd, line, (size_t)n) != n) break;
    }
    if (!keep_open) {
        close(fd);
        return fd;
    }
    return fd;
}

/* The report goes to DIR/report.txt and, when fd 1 works, to stdout. */
static void finish(void)
{
    char path[PATH_MAX];
    path_in_dir(path, sizeof path, "report.txt");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, g_report, g_report_len);
        (void)w;
        close(fd);
    }
    ssize_t w = write(1, g_report, g_report_len);
    (void)w;
}

/* DIR/name with one line (printf-style): what differs between the runs with and without the
 * profiler (counts of fds, of ranges) goes there, never into the report. */
static void side_file(const char *name, const char *fmt, ...)
{
    char path[PATH_MAX];
    path_in_dir(path, sizeof path, name);
    FILE *f = fopen(path, "w");
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

static int max_fd(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1 << 20) return 1 << 16;
    return (int)rl.rlim_cur;
}

static void close_loop(int from)
{
    int ok = 0, ebadf = 0, other = 0;
    for (int fd = from; fd < max_fd(); fd++) {
        errno = 0;
        int rc = close(fd);
        if (rc == 0) ok++;
        else if (errno == EBADF) ebadf++;
        else other++;
    }
    /* fds 0-2 closed: nothing to print to; the counts go to the report file */
    report("close from %d: %d closed, %s, %d other\n", from, ok, ebadf > 0 ? "some EBADF" : "no EBADF", other);
}

static void own_files_after(void)
{
    int a = own_file("own-a.txt", 1);
    int b = own_file("own-b.txt", 1);
    report("own files got fds %d and %d\n", a, b);
}

static void do_std_closed(void)
{
    errno = 0;
    ssize_t w1 = write(1, "to stdout\n", 10);
    int e1 = errno;
    errno = 0;
    ssize_t w2 = write(2, "to stderr\n", 10);
    int e2 = errno;
    int fd = own_file("own-a.txt", 1);
    report("write(1) = %zd %s; write(2) = %zd %s; own file got fd %d\n", w1, errname(e1), w2, errname(e2), fd);
}

static int is_number(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

/* The fds of /proc/self/fd that are not 0-2 and not in `mine`. */
static int foreign_fds(int *out, int cap, const int *mine, int n_mine)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        if (!is_number(e->d_name)) continue;
        int fd = atoi(e->d_name), skip = fd <= 2 || fd == dirfd(d);
        for (int i = 0; i < n_mine; i++) skip |= fd == mine[i];
        if (!skip) out[n++] = fd;
    }
    closedir(d);
    return n;
}

/* Without the profiler there is no foreign fd; with it, dup2 onto one must work as onto a free
 * number, and fclose of a stream made on one must fail as on a closed fd. What differs between
 * the two runs (how many there were) goes to DIR/foreign.txt, not to the report. */
static void do_foreign_fds(void)
{
    int own = own_file("own-a.txt", 1);
    char path[PATH_MAX];
    path_in_dir(path, sizeof path, "own-dup.txt");
    int dupf = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    int mine[2] = {own, dupf}, foreign[256];
    int n = foreign_fds(foreign, 256, mine, 2);
    int dup_bad = 0, writes = 0;
    for (int i = 0; i < n; i++) {
        int rc = i % 2 ? dup3(dupf, foreign[i], O_CLOEXEC) : dup2(dupf, foreign[i]);
        if (rc != foreign[i] || write(foreign[i], "x\n", 2) != 2) dup_bad++;
        else writes++;
        close(foreign[i]);
    }
    ranges("after", 100);
    int n2 = foreign_fds(foreign, 256, mine, 2), fclose_bad = 0;
    for (int i = 0; i < n2 && i < 4; i++) {
        FILE *f = fdopen(foreign[i], "r");
        if (!f) continue;
        errno = 0;
        int rc = fclose(f);
        if (!(rc == EOF && errno == EBADF)) fclose_bad++;
    }
    report("dup2 onto foreign fds: %s; fclose on them: %s\n", dup_bad ? "failed" : "all worked",
           fclose_bad ? "closed them" : "EBADF");
    side_file("foreign.txt", "foreign %d writes %d then %d\n", n, writes, n2);
    close(own);
    close(dupf);
}

static void do_daemon(int n)
{
    pid_t p = fork();
    if (p < 0) exit(10);
    if (p > 0) {
        int st;
        waitpid(p, &st, 0); /* the middle child exits at once */
        report("daemon started\n");
        finish();
        exit(0);
    }
    setsid();
    pid_t q = fork();
    if (q < 0) _exit(11);
    if (q > 0) _exit(0);
    /* grandchild */
    char path[PATH_MAX];
    path_in_dir(path, sizeof path, "daemon.pid.tmp");
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
        char final_path[PATH_MAX];
        path_in_dir(final_path, sizeof final_path, "daemon.pid");
        rename(path, final_path);
    }
    ranges("daemon", n); /* the profiler is busy with its database when the fds go */
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
    for (int fd = 0; fd < max_fd(); fd++) close(fd);
    if (open("/dev/null", O_RDWR) == 0) { /* 0, 1, 2 as a daemon does */
        if (dup(0) != 1 || dup(0) != 2) _exit(12);
    }
    int fd = own_file("own-daemon.txt", 1);
    ranges("daemon_after", n);
    close(fd);
    exit(0);
}

/* A fiber that burns CPU for about `ms` milliseconds of its thread's CPU time (so that the
 * sampler fires while it runs), on a stack of its own. */
static ucontext_t g_main_ctx, g_fiber_ctx;
static volatile double g_sink;
static long g_fiber_ms;

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void fiber_body(void)
{
    double t0 = thread_cpu_ms(), x = 1.0;
    while (thread_cpu_ms() - t0 < (double)g_fiber_ms)
        for (int i = 0; i < 10000; i++) x = x * 1.0000001 + 1e-9;
    g_sink = x;
}

static void do_fiber(void)
{
    char in_path[PATH_MAX], out_path[PATH_MAX];
    path_in_dir(in_path, sizeof in_path, "own-in.txt");
    path_in_dir(out_path, sizeof out_path, "own-out.txt");
    int w = own_file("own-in.txt", 0);
    (void)w;
    close_loop(3);
    int in = open(in_path, O_RDONLY), out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    report("input fd %d, output fd %d\n", in, out);
    static char stack[256 * 1024];
    getcontext(&g_fiber_ctx);
    g_fiber_ctx.uc_stack.ss_sp = stack;
    g_fiber_ctx.uc_stack.ss_size = sizeof stack;
    g_fiber_ctx.uc_link = &g_main_ctx;
    g_fiber_ms = 800;
    makecontext(&g_fiber_ctx, fiber_body, 0);
    swapcontext(&g_main_ctx, &g_fiber_ctx);
    char buf[65536];
    ssize_t got = 0, r;
    while ((r = read(in, buf + got, sizeof buf - (size_t)got)) > 0) got += r;
    ssize_t put = write(out, buf, (size_t)got);
    report("read %zd bytes of input, wrote %zd\n", got, put);
    close(in);
    close(out);
}

static void do_raw_close_range(int n)
{
    errno = 0;
    long rc = syscall(SYS_close_range, 3u, ~0u, 0u);
    report("raw close_range = %ld %s\n", rc, errname(rc ? errno : 0));
    int own = own_file("own-a.txt", 1), dups = 0;
    static int fds[1 << 16];
    for (int fd; dups < (int)(sizeof fds / sizeof fds[0]) && (fd = dup(own)) >= 0;) fds[dups++] = fd;
    report("filled the fd table (%s)\n", dups > 0 ? "some dups" : "no dup");
    ranges("after", n);
    int bad = 0;
    for (int i = 0; i < dups; i++) {
        if (write(fds[i], "y\n", 2) != 2) bad++;
        close(fds[i]);
    }
    report("writes through the dups: %s\n", bad ? "failed" : "all worked");
    side_file("dups.txt", "dups %d\n", dups);
    close(own);
}

static void do_dup2_high(int lo, int hi, int n)
{
    int own = own_file("own-a.txt", 1), bad = 0;
    for (int fd = lo; fd <= hi; fd++)
        if (dup2(own, fd) != fd || write(fd, "z\n", 2) != 2) bad++;
    report("dup2 onto %d..%d: %s\n", lo, hi, bad ? "failed" : "all worked");
    ranges("after", n);
    for (int fd = lo; fd <= hi; fd++) close(fd);
    close(own);
}

static _Atomic long g_thread_ranges;

/* Makes ranges until the process execs; counts each one once it is closed. */
static void *range_thread(void *arg)
{
    (void)arg;
    for (;;) {
        ranges("thread", 1);
        g_thread_ranges++;
    }
    return NULL;
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODE DIR [N]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    g_dir = argv[2];
    int n = argc > 3 && strcmp(mode, "signal") != 0 && strcmp(mode, "spin") != 0 ? atoi(argv[3]) : 1000;
    if (strcmp(mode, "signal") == 0 || strcmp(mode, "spin") == 0) n = argc > 4 ? atoi(argv[4]) : 1000;
    if (strcmp(mode, "std_closed") == 0) {
        do_std_closed();
        ranges("before", n);
        finish();
        return 0;
    }
    ranges("before", n);
    if (strcmp(mode, "normal") == 0) {
        report("normal\n");
    } else if (strcmp(mode, "close_loop") == 0 || strcmp(mode, "close_all") == 0) {
        close_loop(strcmp(mode, "close_all") == 0 ? 0 : 3);
        own_files_after();
        ranges("after", n);
    } else if (strcmp(mode, "closefrom") == 0) {
        closefrom(3);
        report("closefrom(3) returned\n");
        own_files_after();
        ranges("after", n);
    } else if (strcmp(mode, "close_range") == 0) {
        errno = 0;
        int rc = close_range(3, ~0U, 0);
        report("close_range = %d %s\n", rc, errname(rc ? errno : 0));
        own_files_after();
        errno = 0;
        rc = close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
        report("close_range cloexec = %d %s\n", rc, errname(rc ? errno : 0));
        ranges("after", n);
    } else if (strcmp(mode, "foreign_fds") == 0) {
        do_foreign_fds();
    } else if (strcmp(mode, "_exit") == 0) {
        report("_exit\n");
        finish();
        _exit(3);
    } else if (strcmp(mode, "_Exit") == 0) {
        report("_Exit\n");
        finish();
        _Exit(4);
    } else if (strcmp(mode, "fork_exit") == 0) {
        pid_t p = fork();
        if (p == 0) {
            ranges("child", n);
            _exit(0);
        }
        int st = 0;
        waitpid(p, &st, 0);
        report("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    } else if (strcmp(mode, "daemon") == 0) {
        do_daemon(n);
    } else if (strcmp(mode, "exec") == 0) {
        char nbuf[32];
        snprintf(nbuf, sizeof nbuf, "%d", n);
        execl("/proc/self/exe", argv[0], "normal", g_dir, nbuf, (char *)NULL);
        report("exec failed\n");
    } else if (strcmp(mode, "signal") == 0) {
        int sig = argc > 3 ? atoi(argv[3]) : SIGHUP;
        report("raising %d\n", sig);
        finish();
        raise(sig);
        report("still alive\n");
    } else if (strcmp(mode, "wait") == 0) {
        report("ready\n");
        finish();
        for (;;) pause();
    } else if (strcmp(mode, "fiber") == 0) {
        do_fiber();
    } else if (strcmp(mode, "raw_close_range") == 0) {
        do_raw_close_range(n);
    } else if (strcmp(mode, "dup2_high") == 0) {
        do_dup2_high(argc > 4 ? atoi(argv[4]) : 4090, argc > 5 ? atoi(argv[5]) : 4120, n);
    } else if (strcmp(mode, "exec_threads") == 0) {
        /* "before" was made before the threads start; the threads run on into the exec */
        pthread_t t[4];
        for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, range_thread, NULL);
        ranges("main_threads", n);
        while (g_thread_ranges < 4L * n) sched_yield();
        /* every range counted here was closed before the exec: the first image's database
         * must hold at least this many "thread" ranges (DIR/threads.txt, not in the report) */
        long made = g_thread_ranges;
        side_file("threads.txt", "%ld\n", made);
        char nbuf[32];
        snprintf(nbuf, sizeof nbuf, "%d", n);
        execl("/proc/self/exe", argv[0], "normal", g_dir, nbuf, (char *)NULL);
        report("exec failed\n");
    } else if (strcmp(mode, "glibc_daemon") == 0) {
        report("daemon starting\n");
        finish();
        if (daemon(1, 1) != 0) return 13;
        char path[PATH_MAX], final_path[PATH_MAX];
        ranges("daemon", n);
        path_in_dir(path, sizeof path, "daemon.pid.tmp");
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
            path_in_dir(final_path, sizeof final_path, "daemon.pid");
            rename(path, final_path);
        }
        exit(0);
    } else if (strcmp(mode, "quick_exit") == 0) {
        report("quick_exit\n");
        finish();
        quick_exit(5);
    } else if (strcmp(mode, "spin") == 0) {
        long ms = argc > 3 ? atol(argv[3]) : 200, t0 = now_ms();
        while (now_ms() - t0 < ms) ranges("spin", 100);
        report("spun\n");
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    finish();
    return 0;
}
