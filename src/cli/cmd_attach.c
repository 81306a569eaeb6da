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
 * Options (cmd_attach_options.c): -p/--pid PID (required), --duration S (default: until
 * Ctrl-C), --attach-children / --no-attach-children, the instrumentation options of `omniprof
 * instrument` with --instrument, and every `omniprof run` option that applies to a running
 * process (run's table, values, checks and settings); --stats, --summary and non-rocpd formats
 * are done over the databases once every process has stopped (cmd_run_post.c).
 * Exit status: 0 when the process was attached and its database written; 1 when attaching
 * failed (ptrace not permitted: the message says why) or the work after it (--stats,
 * --summary, -f) failed (the databases are kept); 2 for bad usage. */
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
#include "cli/cmd_attach.h"
#include "cli/commands.h"
#include "common/settings.h"

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

/* The profiler's messages from the processes (OMNIPROF_ATTACH_LOG), on omniprof's stderr. */
static void print_log(const char *dir)
{
    char path[PATH_MAX + 16], line[4096];
    snprintf(path, sizeof path, "%s/log", dir);
    FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof line, f)) fprintf(stderr, "omniprof attach: from the process: %s", line);
    if (f) fclose(f);
}

/* ---------------------------------------------------------------------------------------- */
/* The attach.                                                                              */

/* The private directory: the loader library is found beside omniprof's, `config` holds the
 * settings for the processes, `ctl` is the listening socket. Returns 0 (socket in *lfd), or
 * 1 (printed). */
static int setup_control(attach_ctx *a, const attach_opts *ao, int *lfd)
{
    char tool[PATH_MAX];
    if (cli_lib_file("libomniprof-attach.so", a->loader, sizeof a->loader) != 0 ||
        cli_lib_file("libomniprof-tool.so", tool, sizeof tool) != 0) {
        fprintf(stderr, "omniprof attach: libomniprof-attach.so or libomniprof-tool.so not found beside omniprof's libraries\n");
        return 1;
    }
    if (cli_tmp_create("attach", true, a->dir, sizeof a->dir) != 0) {
        fprintf(stderr, "omniprof attach: cannot create a directory in %s: %s\n", a->dir, strerror(errno));
        a->dir[0] = '\0';
        return 1;
    }
    chmod(a->dir, 0755);
    char cfg[PATH_MAX + 16], ctl[PATH_MAX + 16];
    snprintf(cfg, sizeof cfg, "%s/config", a->dir);
    snprintf(ctl, sizeof ctl, "%s/ctl", a->dir);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(ctl) >= sizeof sa.sun_path) {
        fprintf(stderr, "omniprof attach: the socket path %s is too long; set TMPDIR to a shorter directory\n", ctl);
        return 1;
    }
    memcpy(sa.sun_path, ctl, strlen(ctl) + 1);
    FILE *f = fopen(cfg, "we");
    *lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (!f || *lfd < 0 || bind(*lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(*lfd, 64) != 0) {
        fprintf(stderr, "omniprof attach: cannot set up %s: %s\n", a->dir, strerror(errno));
        if (f) fclose(f);
        return 1;
    }
    chmod(ctl, 0777); /* the process may run as another user than omniprof */
    /* the profiler's messages in the processes: this file, never their stderr (printed here) */
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/log", a->dir);
    int lf = open(log, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (lf >= 0) {
        fchmod(lf, 0666);
        close(lf);
    }
    for (int i = 0; i < ao->env.n; i++) fprintf(f, "%s\n", ao->env.items[i]);
    fprintf(f, "OMNIPROF_ATTACH_TOOL=%s\nOMNIPROF_ATTACH_CONTROL=%s\nOMNIPROF_ATTACH_LOG=%s\n", tool, ctl, log);
    if (fclose(f) != 0) {
        fprintf(stderr, "omniprof attach: cannot write %s: %s\n", cfg, strerror(errno));
        return 1;
    }
    chmod(cfg, 0644);
    return 0;
}

/* Whether uid (with its groups from /proc/PID/status) may create files in directory `dir`. */
static bool dir_writable_by(pid_t pid, uid_t uid, const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) return false;
    if (uid == 0) return true;
    if (st.st_uid == uid) return (st.st_mode & 0300) == 0300;
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    bool in_group = false;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "Gid:", 4) && strncmp(line, "Groups:", 7)) continue;
        for (char *p = strchr(line, ':') + 1, *end; *p; p = end) {
            long g = strtol(p, &end, 10);
            if (end == p) break;
            if ((gid_t)g == st.st_gid) in_group = true;
        }
    }
    if (f) fclose(f);
    if (in_group) return (st.st_mode & 0030) == 0030;
    return (st.st_mode & 0003) == 0003;
}

/* Root (or a user with CAP_SYS_PTRACE) attaching to another user's process: the database is
 * written by the process, as its user, into the output directory. Check before attaching
 * that this user can create it there (the deepest directory of the path that exists now),
 * and say what to do. Returns 0, or -1 (printed). */
static int check_owner_can_write(const attach_opts *ao, pid_t pid)
{
    char procdir[64];
    struct stat pst;
    snprintf(procdir, sizeof procdir, "/proc/%d", (int)pid);
    if (stat(procdir, &pst) != 0 || pst.st_uid == geteuid()) return 0;
    char dir[PATH_MAX] = "";
    for (int i = 0; i < ao->env.n; i++)
        if (!strncmp(ao->env.items[i], "OMNIPROF_OUTPUT_PATH=", 21)) snprintf(dir, sizeof dir, "%s", ao->env.items[i] + 21);
    if (!dir[0] && !getcwd(dir, sizeof dir)) return 0;
    char *pct = strchr(dir, '%'); /* placeholders: the directories from there are made later */
    if (pct) *pct = '\0';
    struct stat st;
    while (dir[0] && stat(dir, &st) != 0) { /* the deepest one that exists */
        char *slash = strrchr(dir, '/');
        if (!slash) break;
        *(slash == dir ? slash + 1 : slash) = '\0';
    }
    if (!dir[0] || dir_writable_by(pid, pst.st_uid, dir)) return 0;
    fprintf(stderr,
            "omniprof attach: process %d runs as uid %d, which cannot create its database in %s (owner uid %d, "
            "mode %04o): the profiler writes it from inside the process, as that user. Give an output "
            "directory that user can write (-d DIR; e.g. one made with `install -d -o %d DIR`), or attach "
            "as that user\n",
            (int)pid, (int)pst.st_uid, dir, (int)st.st_uid, (unsigned)(st.st_mode & 07777), (int)pst.st_uid);
    return -1;
}

/* The first process: injected and answering within 15 s. Returns 0, or -1 (printed). */
static int attach_first(attach_ctx *a, int lfd, const attach_opts *ao, pid_t pid)
{
    if (check_owner_can_write(ao, pid) != 0) return -1;
    if (inject_one(a, pid, false) != 0) return -1;
    pump(a, lfd, now_ms() + 15000, all_answered);
    if (a->procs[0].ready) return 0;
    if (!a->procs[0].failed)
        fprintf(stderr, "omniprof attach: process %d did not load the profiler within 15 s (its thread may be "
                        "blocked; it will load it when it resumes, and stop at once since omniprof is gone)\n",
                (int)pid);
    return -1;
}

/* Collect until the duration is over, Ctrl-C/SIGTERM/SIGHUP, or every process ended; with
 * --attach-children, attach to the new descendants on the way. */
static void collect(attach_ctx *a, int lfd, const attach_opts *ao)
{
    uint64_t end = ao->duration > 0 ? now_ms() + (uint64_t)(ao->duration * 1000) : UINT64_MAX;
    while (!g_stop && now_ms() < end && !all_stopped(a)) {
        if (ao->children) {
            pid_t kids[64];
            int nk = new_descendants(ao->pid, a->procs, a->n, kids, 64);
            for (int k = 0; k < nk; k++) inject_one(a, kids[k], true);
        }
        uint64_t slice = now_ms() + 200;
        pump(a, lfd, slice < end ? slice : end, stop_requested);
    }
}

/* Send "stop" to every process, collect the database paths, print them. Returns how many
 * databases were named. */
static int stop_and_report(attach_ctx *a, int lfd)
{
    for (int i = 0; i < a->n; i++)
        if (a->procs[i].fd >= 0 && write(a->procs[i].fd, "stop\n", 5) != 5) {
        }
    g_stop = 0;
    pump(a, lfd, now_ms() + 60000, all_stopped);
    int n = 0;
    for (int i = 0; i < a->n; i++) {
        const proc *p = &a->procs[i];
        if (!p->ready) continue;
        if (p->db[0]) printf("omniprof attach: process %d: %s\n", (int)p->pid, p->db), n++;
        else fprintf(stderr, "omniprof attach: process %d ended while attached (its database was closed at its exit)\n", (int)p->pid);
    }
    fflush(stdout);
    return n;
}

/* --stats, --summary, -f over the databases (cmd_run_post.c reads them from a manifest, one
 * path a line, as the processes of `omniprof run` write it). Returns 0 or 1 (printed). */
static int post_process(const attach_ctx *a, const attach_opts *ao)
{
    char manifest[PATH_MAX + 16];
    snprintf(manifest, sizeof manifest, "%s/manifest", a->dir);
    FILE *f = fopen(manifest, "we");
    for (int i = 0; f && i < a->n; i++)
        if (a->procs[i].db[0]) fprintf(f, "%s\n", a->procs[i].db);
    if (!f || fclose(f) != 0 || run_post(manifest, &ao->plan) != 0) {
        fprintf(stderr, "omniprof attach: post-processing failed (the databases are kept)\n");
        return 1;
    }
    return 0;
}

/* Set up, attach, collect, stop, report. Returns the exit status. */
static int attach_run(const attach_opts *ao)
{
    attach_ctx *a = calloc(1, sizeof *a);
    if (!a) return 1;
    int lfd = -1, rc = setup_control(a, ao, &lfd);
    if (rc == 0) {
        struct sigaction sa_sig = {.sa_handler = on_signal};
        sigaction(SIGINT, &sa_sig, NULL);
        sigaction(SIGTERM, &sa_sig, NULL);
        sigaction(SIGHUP, &sa_sig, NULL);
        signal(SIGPIPE, SIG_IGN);
        rc = attach_first(a, lfd, ao, ao->pid) == 0 ? 0 : 1;
    }
    if (rc == 0) {
        collect(a, lfd, ao);
        if (stop_and_report(a, lfd) > 0 && ao->post) rc = post_process(a, ao);
    }
    if (lfd >= 0) close(lfd);
    for (int i = 0; i < a->n; i++)
        if (a->procs[i].fd >= 0) close(a->procs[i].fd);
    if (a->dir[0]) print_log(a->dir);
    if (a->dir[0]) cli_tmp_remove_dir(a->dir);
    free(a);
    return rc;
}

int op_cmd_attach(int argc, char **argv)
{
    attach_opts ao;
    int rc = attach_read_options(argc, argv, &ao);
    if (rc < 0) rc = attach_run(&ao);
    attach_free_options(&ao);
    return rc;
}
