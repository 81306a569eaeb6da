/* cmd_attach.c — `omniprof attach -p PID [--duration S] [options]`: profile a process that is
 * already running, then leave it running (docs/instrument.md, "Attach").
 *
 *   1. Write the attach's settings (OMNIPROF_*) into a private directory with a copy of
 *      libomniprof-attach.so per process, and listen on a UNIX socket there.
 *   2. Make the process load that copy (attach_inject.c: ptrace, then a dlopen run by one of its
 *      threads, which returns to what it was doing); the loader brings in the tool, which
 *      connects back and says "ready" (tool_attach.c).
 *   3. With --attach-children (default), do the same for every descendant process, now and
 *      as they appear while attached (one database per process).
 *   4. After --duration seconds, on Ctrl-C/SIGTERM, or when every process has ended, send "stop":
 *      each tool delivers what it holds, closes its database and answers with its path. If
 *      omniprof itself is killed, each tool sees its socket close and stops the same way.
 * Options: -p/--pid PID (required), --duration S (default: until Ctrl-C), --attach-children /
 * --no-attach-children, -d/--output-directory DIR (default: the current directory), -o/
 * --output-file NAME, --sample [cputime|realtime], --sampling-freq HZ, --marker-trace,
 * --kernel-trace, --memory-copy-trace, --runtime-trace, --log-level L, and the instrumentation
 * options of `omniprof instrument` (-i, -e, -m, --min-instructions, --throttle, --method
 * uprobe|compiler) with --instrument to turn instrumentation on.
 * Exit status: 0 when the process was attached and its database written; 1 when attaching
 * failed (ptrace not permitted: the message says why); 2 for bad usage. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/attach_inject.h"
#include "cli/cli_lib.h"
#include "cli/commands.h"
#include "common/settings.h"

#define EXIT_USAGE 2
#define MAX_PROCS 256

typedef struct proc {
    pid_t pid;
    int fd;          /* control connection, -1 before "ready" */
    bool injected, ready, stopped, failed;
    char db[PATH_MAX];
} proc;

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig, g_stop = 1; }

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: omniprof attach -p PID [--duration S] [--no-attach-children] [-d DIR] [-o NAME]\n"
            "                       [--sample [cputime|realtime]] [--sampling-freq HZ] [--marker-trace]\n"
            "                       [--kernel-trace] [--memory-copy-trace] [--runtime-trace]\n"
            "                       [--instrument [-i REGEX] [-e REGEX] [-m REGEX] [--min-instructions N]]\n"
            "Loads the profiler into running process PID (and, by default, its child processes), collects\n"
            "for S seconds or until Ctrl-C, writes one database per process and leaves them running.\n"
            "  -p, --pid PID                the process to attach to\n"
            "      --duration S             collect for S seconds (default: until Ctrl-C)\n"
            "      --attach-children, --no-attach-children   also attach to its child processes (default on)\n"
            "  -d, --output-directory DIR   where the databases go\n"
            "  -o, --output-file NAME       database name template (placeholders as for omniprof run)\n"
            "      --sample [cputime|realtime], --sampling-freq HZ   call-stack sampling\n"
            "      --marker-trace, --kernel-trace, --memory-copy-trace, --runtime-trace   tracing, as omniprof run\n"
            "      --instrument             record function calls; -i, --include REGEX and -e, --exclude REGEX\n"
            "                               pick the functions, -m, --modules REGEX the modules,\n"
            "                               --min-instructions N, --throttle T, --method uprobe|compiler as for\n"
            "                               omniprof instrument\n"
            "      --log-level LEVEL        the profiler's log level in the process\n"
            "  -h, --help                   this text\n");
}

/* ---------------------------------------------------------------------------------------- */
/* Settings.                                                                                */

typedef struct setting_list {
    char items[64][1200];
    int n;
} setting_list;

static int put(setting_list *s, const char *name, const char *value, const char *option)
{
    int id = op_setting_find(name);
    char err[512];
    if (id >= 0 && op_setting_validate((op_setting_id)id, value, err, sizeof err) != 0) {
        fprintf(stderr, "omniprof attach: %s: %s\n", option, err);
        return -1;
    }
    if (s->n < 64) snprintf(s->items[s->n++], sizeof s->items[0], "OMNIPROF_%s=%s", name, value);
    return 0;
}

static bool is_value(const char *a) { return a && a[0] != '-'; }

/* ---------------------------------------------------------------------------------------- */
/* Processes.                                                                               */

/* Children of `pid` (every thread's /proc/PID/task/TID/children), appended to out. */
static int children_of(pid_t pid, pid_t *out, int n, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d)) && n < max;) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char cp[400];
        snprintf(cp, sizeof cp, "/proc/%d/task/%.255s/children", (int)pid, e->d_name);
        FILE *f = fopen(cp, "re");
        int c;
        while (f && n < max && fscanf(f, "%d", &c) == 1) out[n++] = (pid_t)c;
        if (f) fclose(f);
    }
    if (d) closedir(d);
    return n;
}

/* Descendants of `root` not in `have` yet (breadth first through the children lists). */
static int new_descendants(pid_t root, const proc *have, int n_have, pid_t *out, int max)
{
    pid_t all[1024];
    int n_all = children_of(root, all, 0, 1024), n = 0;
    for (int i = 0; i < n_all; i++) n_all = children_of(all[i], all, n_all, 1024);
    for (int i = 0; i < n_all && n < max; i++) {
        bool known = false;
        for (int k = 0; k < n_have && !known; k++) known = have[k].pid == all[i];
        if (!known) out[n++] = all[i];
    }
    return n;
}

static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0) return -1;
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    if (out < 0) {
        close(in);
        return -1;
    }
    char buf[65536];
    ssize_t r;
    int rc = 0;
    while ((r = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)r) != r) rc = -1;
    close(in);
    if (close(out) != 0) rc = -1;
    return r < 0 ? -1 : rc;
}

typedef struct attach_ctx {
    char dir[PATH_MAX];
    char loader[PATH_MAX];
    proc procs[MAX_PROCS];
    int n;
} attach_ctx;

static int inject_one(attach_ctx *a, pid_t pid, bool quiet_fail)
{
    if (a->n >= MAX_PROCS) return -1;
    proc *p = &a->procs[a->n++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->fd = -1;
    char copy[PATH_MAX + 64];
    snprintf(copy, sizeof copy, "%s/libomniprof-attach-%d.so", a->dir, (int)pid);
    unlink(copy); /* a re-attach within one run gets a new file, i.e. a new load */
    if (copy_file(a->loader, copy) != 0) {
        fprintf(stderr, "omniprof attach: cannot copy %s to %s: %s\n", a->loader, copy, strerror(errno));
        p->failed = true;
        return -1;
    }
    struct stat st;
    char procdir[64];
    snprintf(procdir, sizeof procdir, "/proc/%d", (int)pid);
    if (stat(procdir, &st) == 0 && st.st_uid != geteuid()) { /* root attaching to a user's process */
        if (chown(copy, st.st_uid, st.st_gid) != 0) { /* readable anyway (0755) */
        }
    }
    char err[1024];
    op_inject_status s = op_attach_inject(pid, copy, err, sizeof err);
    if (s != OP_INJECT_OK) {
        if (!quiet_fail || s == OP_INJECT_NOT_PERMITTED)
            fprintf(stderr, "omniprof attach: cannot attach to process %d: %s\n", (int)pid, err);
        p->failed = true;
        return s == OP_INJECT_NOT_PERMITTED ? -2 : -1;
    }
    p->injected = true;
    return 0;
}

/* Accept connections and read their lines. Returns when `deadline` passes or `until` holds. */
static void pump(attach_ctx *a, int lfd, uint64_t deadline, bool (*until)(attach_ctx *))
{
    while (!until(a) && now_ms() < deadline) {
        struct pollfd pfd[MAX_PROCS + 1];
        int map[MAX_PROCS + 1], n = 0;
        pfd[n] = (struct pollfd){.fd = lfd, .events = POLLIN};
        map[n++] = -1;
        for (int i = 0; i < a->n; i++)
            if (a->procs[i].fd >= 0) {
                pfd[n] = (struct pollfd){.fd = a->procs[i].fd, .events = POLLIN};
                map[n++] = i;
            }
        uint64_t left = deadline - now_ms();
        if (poll(pfd, (nfds_t)n, left > 100 ? 100 : (int)left) <= 0) {
            if (g_stop && until != NULL) return;
            continue;
        }
        if (pfd[0].revents & POLLIN) {
            int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            char line[PATH_MAX + 64];
            ssize_t r = c >= 0 ? read(c, line, sizeof line - 1) : -1;
            int pid = 0;
            if (r > 0) {
                line[r] = '\0';
                if (sscanf(line, "ready %d", &pid) == 1 || sscanf(line, "off %d", &pid) == 1) {
                    for (int i = 0; i < a->n; i++)
                        if (a->procs[i].pid == pid) {
                            if (!strncmp(line, "ready", 5)) {
                                a->procs[i].fd = c, a->procs[i].ready = true, c = -1;
                                fprintf(stderr, "omniprof attach: collecting in process %d\n", pid);
                            } else {
                                a->procs[i].failed = true;
                                fprintf(stderr, "omniprof attach: process %d: %s", pid, strchr(line + 4, ' ') + 1);
                            }
                        }
                }
            }
            if (c >= 0) close(c);
        }
        for (int k = 1; k < n; k++) {
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            proc *p = &a->procs[map[k]];
            char line[PATH_MAX + 64];
            ssize_t r = read(p->fd, line, sizeof line - 1);
            if (r > 0) {
                line[r] = '\0';
                int pid;
                char db[PATH_MAX] = "";
                if (sscanf(line, "stopped %d %4095[^\n]", &pid, db) >= 1) snprintf(p->db, sizeof p->db, "%s", db);
            }
            close(p->fd); /* "stopped", or the process ended */
            p->fd = -1;
            p->stopped = true;
        }
    }
}

static bool all_answered(attach_ctx *a)
{
    for (int i = 0; i < a->n; i++)
        if (a->procs[i].injected && !a->procs[i].ready && !a->procs[i].failed && !a->procs[i].stopped) return false;
    return true;
}

static bool all_stopped(attach_ctx *a)
{
    for (int i = 0; i < a->n; i++)
        if (a->procs[i].fd >= 0) return false;
    return true;
}

static bool stop_requested(attach_ctx *a) { return g_stop || all_stopped(a); }

/* `name` in omniprof's library directory (cli_lib.c: the one lookup). */
static int lib_dir_file(const char *name, char *out, size_t n)
{
    char dir[PATH_MAX];
    if (cli_lib_dir(dir, sizeof dir) != 0) return -1;
    if ((size_t)snprintf(out, n, "%.*s/%s", (int)(n / 2), dir, name) >= n) return -1;
    return access(out, F_OK) == 0 ? 0 : -1;
}

static void cleanup_dir(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char p[PATH_MAX + 256];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

int op_cmd_attach(int argc, char **argv)
{
    pid_t pid = 0;
    double duration = -1;
    bool children = true, instrument = false, any = false;
    char out_dir[PATH_MAX] = "", ins_method[32] = "uprobe";
    setting_list S;
    memset(&S, 0, sizeof S);
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDS(opt)                                                               \
    if (!v) {                                                                    \
        fprintf(stderr, "omniprof attach: %s needs a value\n", opt);             \
        return EXIT_USAGE;                                                       \
    }                                                                            \
    i++;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--pid")) {
            NEEDS(a);
            char *end;
            long p = strtol(v, &end, 10);
            if (*end || p <= 0) {
                fprintf(stderr, "omniprof attach: -p '%s' is not a process id\n", v);
                return EXIT_USAGE;
            }
            pid = (pid_t)p;
        } else if (!strcmp(a, "--duration")) {
            NEEDS(a);
            char *end;
            duration = strtod(v, &end);
            if (*end || duration <= 0) {
                fprintf(stderr, "omniprof attach: --duration '%s' is not a positive number of seconds\n", v);
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "--attach-children")) children = true;
        else if (!strcmp(a, "--no-attach-children")) children = false;
        else if (!strcmp(a, "-d") || !strcmp(a, "--output-directory")) {
            NEEDS(a);
            snprintf(out_dir, sizeof out_dir, "%s", v);
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output-file")) {
            NEEDS(a);
            bad |= put(&S, "OUTPUT_FILE", v, a);
        } else if (!strcmp(a, "--sample")) {
            const char *w = is_value(v) && (!strcmp(v, "cputime") || !strcmp(v, "realtime") || strchr(v, ',')) ? argv[++i] : "cputime";
            bad |= put(&S, "SAMPLE", w, a), any = true;
        } else if (!strcmp(a, "--sampling-freq")) {
            NEEDS(a);
            bad |= put(&S, "SAMPLING_FREQ", v, a);
        } else if (!strcmp(a, "--marker-trace")) bad |= put(&S, "MARKER_TRACE", "true", a), any = true;
        else if (!strcmp(a, "--kernel-trace")) bad |= put(&S, "KERNEL_TRACE", "true", a), any = true;
        else if (!strcmp(a, "--memory-copy-trace")) bad |= put(&S, "MEMORY_COPY_TRACE", "true", a), any = true;
        else if (!strcmp(a, "--runtime-trace")) {
            bad |= put(&S, "KERNEL_TRACE", "true", a) | put(&S, "MEMORY_COPY_TRACE", "true", a) |
                   put(&S, "MARKER_TRACE", "true", a) | put(&S, "CUDA_RUNTIME_API_TRACE", "true", a);
            any = true;
        } else if (!strcmp(a, "--log-level")) {
            NEEDS(a);
            bad |= put(&S, "LOG_LEVEL", v, a);
        } else if (!strcmp(a, "--instrument")) instrument = any = true;
        else if (!strcmp(a, "-i") || !strcmp(a, "--include")) {
            NEEDS(a);
            bad |= put(&S, "INSTRUMENT_INCLUDE", v, a), instrument = any = true;
        } else if (!strcmp(a, "-e") || !strcmp(a, "--exclude")) {
            NEEDS(a);
            bad |= put(&S, "INSTRUMENT_EXCLUDE", v, a);
        } else if (!strcmp(a, "-m") || !strcmp(a, "--modules")) {
            NEEDS(a);
            bad |= put(&S, "INSTRUMENT_MODULES", v, a);
        } else if (!strcmp(a, "--min-instructions")) {
            NEEDS(a);
            bad |= put(&S, "INSTRUMENT_MIN_INSTRUCTIONS", v, a);
        } else if (!strcmp(a, "--throttle")) {
            NEEDS(a);
            bad |= put(&S, "INSTRUMENT_THROTTLE", v, a);
        } else if (!strcmp(a, "--method")) {
            NEEDS(a);
            if (strcmp(v, "uprobe") && strcmp(v, "compiler")) {
                fprintf(stderr, "omniprof attach: --method '%s' is not valid; expected uprobe or compiler "
                                "(LD_AUDIT needs the process started with it)\n", v);
                return EXIT_USAGE;
            }
            snprintf(ins_method, sizeof ins_method, "%s", v);
        } else {
            fprintf(stderr, "omniprof attach: unknown option '%s' (see omniprof attach --help)\n", a);
            return EXIT_USAGE;
        }
#undef NEEDS
    }
    if (bad) return EXIT_USAGE;
    if (!pid) {
        fprintf(stderr, "omniprof attach: give the process with -p PID\n");
        return EXIT_USAGE;
    }
    if (!any) {
        fprintf(stderr, "omniprof attach: nothing to collect: give --sample, --marker-trace, --kernel-trace, "
                        "--runtime-trace or --instrument\n");
        return EXIT_USAGE;
    }
    if (kill(pid, 0) != 0 && errno == ESRCH) {
        fprintf(stderr, "omniprof attach: no process %d\n", (int)pid);
        return EXIT_USAGE;
    }
    if (instrument) put(&S, "INSTRUMENT", ins_method, "--instrument");
    char abs_out[PATH_MAX];
    if (!*out_dir && !getcwd(out_dir, sizeof out_dir)) snprintf(out_dir, sizeof out_dir, ".");
    mkdir(out_dir, 0755);
    if (!realpath(out_dir, abs_out)) {
        fprintf(stderr, "omniprof attach: output directory '%s': %s\n", out_dir, strerror(errno));
        return EXIT_USAGE;
    }
    put(&S, "OUTPUT_PATH", abs_out, "-d");
    put(&S, "ATTACH_MODE", "true", "attach");

    attach_ctx *A = calloc(1, sizeof *A);
    char tool[PATH_MAX];
    if (!A || lib_dir_file("libomniprof-attach.so", A->loader, sizeof A->loader) != 0 ||
        lib_dir_file("libomniprof-tool.so", tool, sizeof tool) != 0) {
        fprintf(stderr, "omniprof attach: libomniprof-attach.so or libomniprof-tool.so not found beside omniprof's libraries\n");
        free(A);
        return 1;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(A->dir, sizeof A->dir, "%s/omniprof-attach-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(A->dir)) {
        fprintf(stderr, "omniprof attach: cannot create a directory in %s: %s\n", tmp && *tmp ? tmp : "/tmp", strerror(errno));
        free(A);
        return 1;
    }
    chmod(A->dir, 0755);
    char cfg[PATH_MAX + 16], ctl[PATH_MAX + 16];
    snprintf(cfg, sizeof cfg, "%s/config", A->dir);
    snprintf(ctl, sizeof ctl, "%s/ctl", A->dir);
    FILE *f = fopen(cfg, "we");
    int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(ctl) >= sizeof sa.sun_path) {
        fprintf(stderr, "omniprof attach: the socket path %s is too long; set TMPDIR to a shorter directory\n", ctl);
        if (f) fclose(f);
        cleanup_dir(A->dir);
        free(A);
        return 1;
    }
    memcpy(sa.sun_path, ctl, strlen(ctl) + 1);
    if (!f || lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 64) != 0) {
        fprintf(stderr, "omniprof attach: cannot set up %s: %s\n", A->dir, strerror(errno));
        if (f) fclose(f);
        cleanup_dir(A->dir);
        free(A);
        return 1;
    }
    chmod(ctl, 0777); /* the process may run as another user than omniprof */
    for (int i = 0; i < S.n; i++) fprintf(f, "%s\n", S.items[i]);
    fprintf(f, "OMNIPROF_ATTACH_TOOL=%s\nOMNIPROF_ATTACH_CONTROL=%s\n", tool, ctl);
    fclose(f);
    chmod(cfg, 0644);

    struct sigaction sa_sig = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa_sig, NULL);
    sigaction(SIGTERM, &sa_sig, NULL);
    sigaction(SIGHUP, &sa_sig, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = inject_one(A, pid, false);
    if (rc == 0) {
        pump(A, lfd, now_ms() + 15000, all_answered);
        if (!A->procs[0].ready) {
            if (!A->procs[0].failed)
                fprintf(stderr, "omniprof attach: process %d did not load the profiler within 15 s (its thread may be "
                                "blocked; it will load it when it resumes, and stop at once since omniprof is gone)\n",
                        (int)pid);
            rc = -1;
        }
    }
    if (rc == 0) {
        uint64_t end = duration > 0 ? now_ms() + (uint64_t)(duration * 1000) : UINT64_MAX;
        while (!g_stop && now_ms() < end && !all_stopped(A)) {
            if (children) {
                pid_t kids[64];
                int nk = new_descendants(pid, A->procs, A->n, kids, 64);
                for (int k = 0; k < nk; k++) inject_one(A, kids[k], true);
            }
            uint64_t slice = now_ms() + 200;
            pump(A, lfd, slice < end ? slice : end, stop_requested);
        }
        /* stop everyone and collect the database paths */
        for (int i = 0; i < A->n; i++)
            if (A->procs[i].fd >= 0 && write(A->procs[i].fd, "stop\n", 5) != 5) {
            }
        g_stop = 0;
        pump(A, lfd, now_ms() + 60000, all_stopped);
        for (int i = 0; i < A->n; i++) {
            const proc *p = &A->procs[i];
            if (!p->ready) continue;
            if (p->db[0]) printf("omniprof attach: process %d: %s\n", (int)p->pid, p->db);
            else fprintf(stderr, "omniprof attach: process %d ended while attached (its database was closed at its exit)\n", (int)p->pid);
        }
    }
    close(lfd);
    for (int i = 0; i < A->n; i++)
        if (A->procs[i].fd >= 0) close(A->procs[i].fd);
    cleanup_dir(A->dir);
    free(A);
    return rc == 0 ? 0 : 1;
}
