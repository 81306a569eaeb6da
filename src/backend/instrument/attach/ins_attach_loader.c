/* ins_attach_loader.c — libomniprof-attach.so, what `omniprof attach` makes a running process
 * dlopen (src/cli/attach_inject.c): it brings in the tool with the attach's settings.
 *
 * The launcher copies this library into a private directory per attach, beside a file
 * `config` (NAME=VALUE lines: the OMNIPROF_* settings of the attach, OMNIPROF_ATTACH_TOOL = the
 * tool library, OMNIPROF_ATTACH_CONTROL = the launcher's control socket). A fresh copy is a
 * new file, so every attach loads and runs this constructor again (a second dlopen of the same
 * file would only return the first handle). The constructor, on the thread the launcher
 * borrowed:
 *   1. reads `config` from its own directory (dladdr);
 *   2. publishes the settings where the tool reads them — the environment — by building a new
 *      environ array (the old entries plus the settings) and swapping the `environ` pointer in
 *      one store: a concurrent getenv sees the old or the new array, both valid (the old one is
 *      never freed); the program's own environment is put back once the tool has read it,
 *      unless the program changed its environment meanwhile;
 *   3. loads libomniprof-tool.so (RTLD_NOW|RTLD_GLOBAL; the SDK initializes it from its
 *      constructor) the first time, and calls its omniprof_tool_attach(control) entry point
 *      (which connects to the launcher and starts collecting; on a re-attach it reopens a
 *      database and restarts collection).
 * A failure is told to the launcher over its control socket ("off <pid> <reason>", which it
 * prints) and the process goes on: nothing is ever written into the program's streams. */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

typedef int (*attach_fn)(const char *control);

static char g_control[PATH_MAX]; /* the launcher's socket, once read from `config` */

static void fail(const char *what, const char *detail)
{
    if (!g_control[0]) return; /* no launcher to tell: silent (never the program's stderr) */
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(g_control) >= sizeof sa.sun_path) return;
    memcpy(sa.sun_path, g_control, strlen(g_control) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        char msg[1200];
        int n = snprintf(msg, sizeof msg, "off %d %s%s%.900s\n", (int)getpid(), what, detail ? ": " : "",
                         detail ? detail : "");
        if (n > 0 && write(fd, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) < 0) {
        }
    }
    close(fd);
}

__attribute__((constructor)) static void omniprof_attach_loader(void)
{
    Dl_info info;
    if (!dladdr((void *)&omniprof_attach_loader, &info) || !info.dli_fname) return fail("cannot find myself", NULL);
    char dir[PATH_MAX], cfg[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s", info.dli_fname);
    snprintf(cfg, sizeof cfg, "%s/config", dirname(dir));
    FILE *f = fopen(cfg, "re");
    if (!f) return fail("cannot read the configuration", cfg);
    char *vars[256];
    int nv = 0;
    char tool[PATH_MAX] = "", control[PATH_MAX] = "", line[4096];
    while (nv < 256 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "OMNIPROF_ATTACH_TOOL=", 21)) snprintf(tool, sizeof tool, "%s", line + 21);
        else if (!strncmp(line, "OMNIPROF_ATTACH_CONTROL=", 24)) snprintf(control, sizeof control, "%s", line + 24);
        else if (strchr(line, '=')) vars[nv++] = strdup(line); /* process lifetime */
    }
    fclose(f);
    snprintf(g_control, sizeof g_control, "%s", control);
    /* step 2: the new environment: ours first, then the program's entries we do not set */
    char **old = environ;
    int no = 0;
    while (old && old[no]) no++;
    char **env = calloc((size_t)(no + nv + 1), sizeof *env); /* never freed: getenv may hold it */
    if (!env) return fail("out of memory", NULL);
    int ne = 0;
    for (int i = 0; i < nv; i++) env[ne++] = vars[i];
    for (int i = 0; i < no; i++) {
        size_t k = strcspn(old[i], "=");
        bool mine = false;
        for (int j = 0; j < nv && !mine; j++) mine = !strncmp(vars[j], old[i], k) && vars[j][k] == '=';
        if (!mine) env[ne++] = old[i];
    }
    __atomic_store_n(&environ, env, __ATOMIC_RELEASE);
    attach_fn attach = (attach_fn)dlsym(RTLD_DEFAULT, "omniprof_tool_attach");
    if (!attach) {
        void *h = dlopen(tool, RTLD_NOW | RTLD_GLOBAL);
        if (!h) fail("cannot load the tool", dlerror());
        else attach = (attach_fn)dlsym(h, "omniprof_tool_attach");
    }
    if (attach) {
        attach(control); /* a failure was told to the launcher by the tool ("off ...") */
    } else if (tool[0]) {
        fail("the tool has no omniprof_tool_attach", tool);
    }
    /* the program's environment back, unless it changed it meanwhile */
    char **expected = env;
    __atomic_compare_exchange_n(&environ, &expected, old, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
