/* tool_attach.c — the tool's side of `omniprof attach`: omniprof_tool_attach, called by the
 * attach loader (src/backend/instrument/attach/ins_attach_loader.c) once the tool is in the
 * process.
 *
 * Protocol over the launcher's UNIX stream socket (one connection per process):
 *   tool → launcher   "ready <pid>\n"            collecting (or "off <pid> <reason>\n")
 *   launcher → tool   "stop\n"                   duration over, Ctrl-C, or --attach end
 *   tool → launcher   "stopped <pid> <db>\n"     database closed (whole); the socket closes
 * End of file from the launcher (it died, was killed) counts as "stop": collection never
 * outlives the launcher, and nothing waits on it (the thread is the tool's own, detached). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/settings.h"
#include "omniprof/defines.h"
#include "preload/preload.h"
#include "tool/tool.h"

static _Atomic int g_attached;  /* a control thread is running */
static int g_attaches;          /* completed calls (the first loads, later ones re-attach) */
static _Atomic int g_control_fd = -1; /* the control connection while attached */

static void say(int fd, const char *msg)
{
    size_t n = strlen(msg);
    while (n) {
        ssize_t w = write(fd, msg, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        msg += w;
        n -= (size_t)w;
    }
}

static void *control_thread(void *arg)
{
    int fd = (int)(intptr_t)arg;
    prctl(PR_SET_NAME, "omniprof-attach", 0, 0, 0); /* the CPU backend does not sample it */
    char buf[64];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0 || memchr(buf, '\n', (size_t)r)) break; /* "stop\n" or the launcher is gone */
    }
    char db[4096] = "", msg[4200];
    op_tool_detach(op_setting_uint(OP_SET_EXIT_FLUSH_TIMEOUT_MS), db, sizeof db);
    snprintf(msg, sizeof msg, "stopped %d %s\n", (int)getpid(), db);
    say(fd, msg);
    atomic_store(&g_control_fd, -1);
    close(fd);
    atomic_store(&g_attached, 0);
    return NULL;
}

OMNIPROF_API int omniprof_tool_attach(const char *control)
{
    if (!control || !*control) return -1;
    bool busy = atomic_exchange(&g_attached, 1) != 0; /* already attached */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", control);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        op_warn("attach: cannot reach the launcher at %s (%s)", control, strerror(errno));
        if (fd >= 0) close(fd);
        if (!busy) atomic_store(&g_attached, 0);
        return -1;
    }
    /* keep the descriptor out of the program's way (DESIGN rule 5) */
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 900);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    char msg[600];
    if (busy) {
        snprintf(msg, sizeof msg, "off %d another omniprof attach is collecting in this process\n", (int)getpid());
        say(fd, msg);
        close(fd);
        return -1;
    }
    int rc = 0;
    if (g_attaches++ > 0) rc = op_tool_reattach();
    if (!op_tool_active() || rc != 0) {
        snprintf(msg, sizeof msg, "off %d the tool is not collecting (its messages follow)\n", (int)getpid());
        say(fd, msg);
        close(fd);
        atomic_store(&g_attached, 0);
        return -1;
    }
    snprintf(msg, sizeof msg, "ready %d\n", (int)getpid());
    say(fd, msg);
    atomic_store(&g_control_fd, fd);
    if (op_tool_start_thread(control_thread, (void *)(intptr_t)fd) != 0) {
        char db[4096];
        op_tool_detach(1000, db, sizeof db);
        atomic_store(&g_control_fd, -1);
        close(fd);
        atomic_store(&g_attached, 0);
        return -1;
    }
    return 0;
}

/* A forked child of a process the tool was attached to (tool.c's fork handler): the control
 * thread is not here and the connection is the parent's: the child lets go of its copy, and
 * stays inert until the launcher attaches to it (--attach-children), or for good. */
bool op_tool_attach_after_fork_child(void)
{
    if (g_attaches == 0) return false; /* loaded by `omniprof run`, not by an attach */
    int fd = atomic_exchange(&g_control_fd, -1);
    if (fd >= 0) close(fd);
    omniprof_preload_log_reopen(NULL);
    atomic_store(&g_attached, 0);
    return true;
}
