/* cli_lib.c — library lookup, the SDK's counters API, and counter pass planning shared by the
 * omniprof binary's commands (cli_lib.h). */
#include "cli/cli_lib.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/path_template.h"
#include "common/settings.h"

int cli_lib_dir(char *out, size_t outlen)
{
    out[0] = '\0';
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) return -1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return -1;
    *slash = '\0';
    /* The build tree and `make install` put the libraries in ../lib; Debian's GNUInstallDirs
     * may choose lib64 or the multiarch directory for some prefixes. */
    static const char *const rel[] = {"../lib", "../lib64", "../lib/x86_64-linux-gnu", "../lib/aarch64-linux-gnu"};
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        char tmp[PATH_MAX + 64], probe[PATH_MAX + 96];
        snprintf(tmp, sizeof(tmp), "%s/%s", exe, rel[i]);
        snprintf(probe, sizeof(probe), "%s/libomniprof-tool.so", tmp);
        if (i > 0 && access(probe, R_OK) != 0) continue;
        char *r = realpath(tmp, NULL);
        if (!r) continue;
        snprintf(out, outlen, "%s", r);
        free(r);
        if (access(probe, R_OK) == 0) return 0;
        /* keep ../lib as the answer unless another directory holds the tool */
    }
    return out[0] ? 0 : -1;
}

/* ---- private temporary files -------------------------------------------------------------- */

static unsigned long pid_namespace(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long)st.st_ino : 0;
}

/* Removes the folder `name` (in dfd, not followed if a link) with its entries (not subfolders). */
static void remove_flat_dir(int dfd, const char *name)
{
    int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = sub >= 0 ? fdopendir(sub) : NULL;
    if (!d) {
        if (sub >= 0) close(sub);
        return;
    }
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(sub, e->d_name, 0);
    closedir(d);
    unlinkat(dfd, name, AT_REMOVEDIR);
}

void cli_tmp_remove_dir(const char *dir) { remove_flat_dir(AT_FDCWD, dir); }

/* Removes `name` (in dfd) when it is a leftover of a command of this user and pid namespace
 * whose process is gone. */
static void sweep_one(int dfd, const char *name, unsigned long ns)
{
    char kind[16];
    unsigned long their_ns = 0;
    int pid = 0, used = 0;
    if (sscanf(name, "omniprof-%15[a-z]-%lu-%d-%n", kind, &their_ns, &pid, &used) != 3 || !used ||
        strlen(name + used) != 6 || their_ns != ns || pid <= 0 || pid == getpid())
        return;
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != geteuid()) return;
    if (kill(pid, 0) == 0 || errno != ESRCH) return; /* alive, or not ours to judge */
    if (S_ISREG(st.st_mode)) {
        unlinkat(dfd, name, 0);
        return;
    }
    if (S_ISDIR(st.st_mode)) remove_flat_dir(dfd, name);
}

int cli_tmp_create(const char *kind, bool dir, char *out, size_t outlen)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    unsigned long ns = pid_namespace();
    DIR *d = ns ? opendir(tmp) : NULL; /* without /proc, no leftover can be told from a live one */
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, "omniprof-", 9)) sweep_one(dirfd(d), e->d_name, ns);
    if (d) closedir(d);
    if ((size_t)snprintf(out, outlen, "%s/omniprof-%s-%lu-%d-XXXXXX", tmp, kind, ns, (int)getpid()) >= outlen) {
        snprintf(out, outlen, "%s", tmp);
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = -1;
    if (dir ? mkdtemp(out) == NULL : (fd = mkstemp(out)) < 0) {
        int e = errno;
        snprintf(out, outlen, "%s", tmp);
        errno = e;
        return -1;
    }
    if (fd >= 0) close(fd);
    return 0;
}

int cli_lib_file(const char *name, char *out, size_t n)
{
    char dir[PATH_MAX];
    if (cli_lib_dir(dir, sizeof dir) != 0) return -1;
    if ((size_t)snprintf(out, n, "%.*s/%s", (int)(n / 2), dir, name) >= n) return -1;
    return access(out, R_OK) == 0 ? 0 : -1;
}

int cli_check_output_dir(const char *dir, bool create, char *err, size_t errlen)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        snprintf(err, errlen, "directory name too long: '%.200s'", dir);
        return -1;
    }
    /* Walk down from the root: a component that is not a directory ends the check; the first
     * missing one ends the walk (or is created, with its descendants). */
    size_t deepest = path[0] == '/' ? 1 : 0; /* length of the deepest existing directory ("/" or ".") */
    for (char *p = path + 1; path[0] && path[1]; p++) {
        if (*p != '/' && *p != '\0') continue;
        char saved = *p;
        *p = '\0';
        struct stat st;
        if (stat(path, &st) == 0) {
            if (!S_ISDIR(st.st_mode)) {
                snprintf(err, errlen, "'%s' is not a directory (it is %s)", path,
                         S_ISREG(st.st_mode) ? "a file" : "another kind of file");
                return -1;
            }
            deepest = strlen(path);
        } else if (errno == ENOENT && create) {
            if (op_path_mkdirs(dir, err, errlen) != 0) return -1;
            deepest = strlen(dir);
            *p = saved;
            break;
        } else if (errno != ENOENT) {
            snprintf(err, errlen, "cannot use '%s': %s", path, strerror(errno));
            return -1;
        } else {
            *p = saved;
            break;
        }
        *p = saved;
        if (saved == '\0') break;
    }
    char probe[PATH_MAX + 32];
    char where[PATH_MAX];
    if (deepest) snprintf(where, sizeof where, "%.*s", (int)deepest, dir);
    else snprintf(where, sizeof where, ".");
    snprintf(probe, sizeof probe, "%s/.omniprof-probe-XXXXXX", strcmp(where, "/") ? where : "");
    int fd = mkstemp(probe);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create files in '%s': %s", where, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    return 0;
}

void *cli_dlopen(const char *soname, int flags, char *err, size_t errlen)
{
    char dir[PATH_MAX], path[PATH_MAX + 128];
    void *h = NULL;
    if (cli_lib_dir(dir, sizeof(dir)) == 0) {
        snprintf(path, sizeof(path), "%s/%s", dir, soname);
        if (access(path, R_OK) == 0) h = dlopen(path, flags);
    }
    if (!h) h = dlopen(soname, flags);
    if (!h && err) snprintf(err, errlen, "cannot load %s (%s)", soname, dlerror());
    return h;
}

const cli_counters_api *cli_counters(char *err, size_t errlen)
{
    static cli_counters_api api;
    static int state; /* 0 not tried, 1 loaded, -1 failed */
    static char why[512];
    if (state == 0) {
        state = -1;
        void *h = cli_dlopen("libomniprof-sdk.so", RTLD_NOW | RTLD_GLOBAL, why, sizeof(why));
        if (h) {
            *(void **)&api.find = dlsym(h, "omniprof_find_counter");
            *(void **)&api.suggest = dlsym(h, "omniprof_suggest_counters");
            *(void **)&api.iterate = dlsym(h, "omniprof_iterate_chip_counters");
            *(void **)&api.chips = dlsym(h, "omniprof_iterate_chips");
            *(void **)&api.info = dlsym(h, "omniprof_query_counter_info");
            *(void **)&api.config = dlsym(h, "omniprof_create_counter_config_for_chip");
            *(void **)&api.passes = dlsym(h, "omniprof_query_counter_config_passes");
            *(void **)&api.destroy = dlsym(h, "omniprof_destroy_counter_config");
            *(void **)&api.load_definition = dlsym(h, "omniprof_load_counter_definition");
            *(void **)&api.status_string = dlsym(h, "omniprof_get_status_string");
            *(void **)&api.last_error = dlsym(h, "omniprof_get_counter_error_string");
            *(void **)&api.pm_check = dlsym(h, "omniprof_check_pm_sampling_metrics");
            *(void **)&api.pm_iterate = dlsym(h, "omniprof_iterate_pm_sampling_metrics");
            if (api.find && api.suggest && api.iterate && api.chips && api.info && api.config && api.passes &&
                api.destroy && api.load_definition)
                state = 1;
            else
                snprintf(why, sizeof(why), "libomniprof-sdk.so was built without the counters API");
        }
    }
    if (state < 0 && err) snprintf(err, errlen, "%s", why);
    return state > 0 ? &api : NULL;
}

typedef struct chip_find {
    const char *want;
    bool found;
} chip_find;

static omniprof_status_t chip_cb(const char *chip, void *data)
{
    chip_find *c = data;
    if (!strcmp(c->want, chip)) c->found = true;
    return OMNIPROF_STATUS_SUCCESS;
}

bool cli_chip_known(const cli_counters_api *api, const char *chip)
{
    chip_find c = {chip, false};
    return api->chips(chip_cb, &c) == OMNIPROF_STATUS_SUCCESS && c.found;
}

static const char *status_text(const cli_counters_api *a, omniprof_status_t st)
{
    return a->status_string ? a->status_string(st) : "error";
}

int cli_load_extra_metrics(const cli_counters_api *api, const char *files, char *msg, size_t msglen)
{
    static char loaded[4096];
    char *list = strdup(files ? files : ""), *save = NULL;
    int rc = 0;
    for (char *f = list ? strtok_r(list, ":", &save) : NULL; f && rc == 0; f = strtok_r(NULL, ":", &save)) {
        char key[PATH_MAX + 2];
        snprintf(key, sizeof(key), ":%s:", f);
        if (strstr(loaded, key)) continue;
        FILE *fp = fopen(f, "rb");
        char *xml = NULL;
        size_t len = 0;
        if (fp) {
            fseek(fp, 0, SEEK_END);
            long sz = ftell(fp);
            rewind(fp);
            if (sz > 0 && sz < (64L << 20) && (xml = malloc((size_t)sz + 1))) len = fread(xml, 1, (size_t)sz, fp);
            fclose(fp);
        }
        char err[1024] = "";
        omniprof_status_t st = xml && len ? api->load_definition(xml, len, OMNIPROF_COUNTER_FLAG_APPEND_DEFINITION, err,
                                                                 sizeof(err))
                                          : OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
        free(xml);
        if (st != OMNIPROF_STATUS_SUCCESS) {
            snprintf(msg, msglen, "--extra-metrics %s: %s", f,
                     !fp ? "cannot be read" : err[0] ? err : status_text(api, st));
            rc = -1;
        } else if (strlen(loaded) + strlen(key) < sizeof(loaded)) {
            strcat(loaded, key);
        }
    }
    free(list);
    return rc;
}

/* Append "unknown counter or metric 'X' for CHIP; closest: a, b" to the plan's message. */
static void add_unknown(const cli_counters_api *api, cli_pmc_plan *out, const char *name)
{
    const char *best[5];
    size_t n = 0;
    api->suggest(out->chip, name, best, 5, &n);
    size_t used = strlen(out->message);
    used += (size_t)snprintf(out->message + used, sizeof(out->message) - used, "%sunknown counter or metric '%s' for %s",
                             used ? "\n" : "", name, out->chip);
    for (size_t i = 0; i < n && used < sizeof(out->message); i++)
        used += (size_t)snprintf(out->message + used, sizeof(out->message) - used, "%s%s", i ? ", " : "; closest: ",
                                 best[i]);
}

cli_pmc_status cli_pmc_plan_set(const char *const *names, size_t n, const char *chip, const char *replay_mode,
                                const char *extra_metrics, cli_pmc_plan *out)
{
    memset(out, 0, sizeof(*out));
    out->n_counters = n;
    snprintf(out->chip, sizeof(out->chip), "%s", chip ? chip : "GH100");
    out->chip_assumed = chip == NULL;
    const cli_counters_api *api = cli_counters(out->message, sizeof(out->message));
    if (!api) return out->status = CLI_PMC_UNAVAILABLE;
    if (!cli_chip_known(api, out->chip)) {
        chip_find none = {"", false};
        if (api->chips(chip_cb, &none) != OMNIPROF_STATUS_SUCCESS) {
            snprintf(out->message, sizeof(out->message),
                     "no hardware-counter backend (the CUDA backend with CUPTI is needed)");
            return out->status = CLI_PMC_UNAVAILABLE;
        }
        snprintf(out->message, sizeof(out->message),
                 "unknown chip '%s' (omniprof avail --counters --list-chips names the valid ones)", out->chip);
        return out->status = CLI_PMC_BAD;
    }
    if (extra_metrics && *extra_metrics && cli_load_extra_metrics(api, extra_metrics, out->message, sizeof(out->message)))
        return out->status = CLI_PMC_BAD;
    if (n == 0 || n > 256) {
        snprintf(out->message, sizeof(out->message), n ? "more than 256 counters in one set" : "no counter names");
        return out->status = CLI_PMC_BAD;
    }
    omniprof_counter_id_t ids[256];
    for (size_t i = 0; i < n; i++) {
        omniprof_status_t st = api->find(out->chip, names[i], &ids[i]);
        if (st == OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND) {
            add_unknown(api, out, names[i]);
            out->status = CLI_PMC_BAD;
        } else if (st != OMNIPROF_STATUS_SUCCESS) {
            size_t used = strlen(out->message);
            snprintf(out->message + used, sizeof(out->message) - used, "%s'%s': %s", used ? "\n" : "", names[i],
                     status_text(api, st));
            out->status = CLI_PMC_BAD;
        }
    }
    if (out->status != CLI_PMC_OK) return out->status;
    omniprof_counter_config_id_t cfg = {0};
    omniprof_status_t st = api->config(out->chip, ids, n, &cfg);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        const char *why = api->last_error ? api->last_error() : "";
        snprintf(out->message, sizeof(out->message), "the set cannot be planned on %s: %s", out->chip,
                 why && *why ? why : status_text(api, st));
        return out->status = st == OMNIPROF_STATUS_ERROR_EXCEEDS_HW_LIMIT ? CLI_PMC_NOT_COLLECTABLE : CLI_PMC_BAD;
    }
    api->passes(cfg, &out->passes, &out->n_base);
    api->destroy(cfg);
    unsigned long max_passes = (unsigned long)op_setting_uint(OP_SET_PMC_MAX_PASSES);
    if (out->passes > 1 && replay_mode && !strcmp(replay_mode, "none")) {
        snprintf(out->message, sizeof(out->message),
                 "not collectable with replay mode 'none' (one pass): use kernel replay (the default: each counted "
                 "dispatch is replayed %zu times) or split the set into groups, one program run each "
                 "(--pmc A B --pmc C D)",
                 out->passes);
        return out->status = CLI_PMC_NOT_COLLECTABLE;
    }
    if (max_passes && out->passes > max_passes) {
        snprintf(out->message, sizeof(out->message),
                 "not collectable: more than OMNIPROF_PMC_MAX_PASSES=%lu passes; split the set into groups "
                 "(--pmc A B --pmc C D)",
                 max_passes);
        return out->status = CLI_PMC_NOT_COLLECTABLE;
    }
    return out->status = CLI_PMC_OK;
}

cli_pmc_status cli_pm_check(const char *const *names, size_t n, const char *chip, cli_pmc_plan *out)
{
    memset(out, 0, sizeof(*out));
    out->n_counters = n;
    snprintf(out->chip, sizeof(out->chip), "%s", chip ? chip : "GH100");
    out->chip_assumed = chip == NULL;
    const cli_counters_api *api = cli_counters(out->message, sizeof(out->message));
    if (!api) return out->status = CLI_PMC_UNAVAILABLE;
    if (!api->pm_check) {
        snprintf(out->message, sizeof(out->message), "libomniprof-sdk.so has no PM sampling");
        return out->status = CLI_PMC_UNAVAILABLE;
    }
    omniprof_status_t st = api->pm_check(out->chip, names, n, &out->passes, out->message, sizeof(out->message));
    switch (st) {
    case OMNIPROF_STATUS_SUCCESS: return out->status = CLI_PMC_OK;
    case OMNIPROF_STATUS_ERROR_NOT_AVAILABLE: return out->status = CLI_PMC_UNAVAILABLE;
    case OMNIPROF_STATUS_ERROR_EXCEEDS_HW_LIMIT: return out->status = CLI_PMC_NOT_COLLECTABLE;
    default:
        if (!out->message[0]) snprintf(out->message, sizeof(out->message), "%s", status_text(api, st));
        return out->status = CLI_PMC_BAD;
    }
}
