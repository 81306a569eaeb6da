/* outfile.c — how every file of libomniprof-output is written (docs/reliability.md: an output never
 * replaces an input or an existing file), and the temporary files that a signal removes.
 *
 * Rules, in the order op_outfile_open applies them to the output path P:
 *   1. P is an input (same device and inode, through links and symlinks too): refused, naming
 *      both (OP_OUT_EINPUT); nothing is written.
 *   2. P exists and is not a regular file (a terminal, /dev/null, a pipe): written in place.
 *   3. P exists: the output goes to the first free P-1, P-2, ... — the -N suffix scheme of the
 *      databases (<name>-N_results.db): "-N" follows the name prefix of a derived file
 *      (out-1_results.json), else comes before the extension (report-1.txt); one line on
 *      stderr says where it went.
 *   4. The bytes go to a temporary file beside the final one (".<base>.tmp-<pid>-<n>", created
 *      exclusively), which op_outfile_close links to its final name only once it is whole
 *      (link, not rename: it never replaces a file that appeared meanwhile — then the next -N
 *      is taken) and removes. A failed or interrupted output leaves no file.
 *
 * Temporary files are registered; op_out_signals_install() makes SIGINT, SIGTERM and SIGHUP
 * remove every registered file (unlink is async-signal-safe), set op_out_interrupted(), and
 * then go on to the previous disposition (the process dies, or Python's handler runs and the
 * operation in progress stops at its next check with "interrupted"). The registry is a fixed
 * array of atomic pointers: a handler never sees a half-written entry, and a retired path is
 * freed only while no handler is installed. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/internal.h"

/* ---- the registry of temporary files --------------------------------------------------------- */

#define TMP_SLOTS 256
static _Atomic(char *) g_tmp[TMP_SLOTS];
static atomic_int g_interrupted;
static atomic_int g_installed;
static char **g_retired; /* paths unregistered while a handler was installed (freed at restore) */
static size_t g_n_retired;
static const int g_signals[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction g_old[3];

int op_out_tmp_register(const char *path) {
    char *p = strdup(path);
    if (!p) return -1;
    for (int i = 0; i < TMP_SLOTS; i++) {
        char *expected = NULL;
        if (atomic_compare_exchange_strong(&g_tmp[i], &expected, p)) return 0;
    }
    free(p); /* full: the file is still removed by the normal paths, not on a signal */
    return -1;
}

void op_out_tmp_unregister(const char *path) {
    for (int i = 0; i < TMP_SLOTS; i++) {
        char *p = atomic_load(&g_tmp[i]);
        if (!p || strcmp(p, path) != 0) continue;
        char *expected = p;
        if (!atomic_compare_exchange_strong(&g_tmp[i], &expected, NULL)) continue;
        if (!atomic_load(&g_installed)) {
            free(p);
        } else { /* a handler may be reading it: keep it until the handlers are gone */
            char **r = realloc(g_retired, (g_n_retired + 1) * sizeof *r);
            if (r) {
                g_retired = r;
                g_retired[g_n_retired++] = p;
            }
        }
        return;
    }
}

int op_out_interrupted(void) { return atomic_load(&g_interrupted); }

/* Removes p and the journal files SQLite may keep beside it for a moment (a temporary database
 * is written with a rollback journal: defensive mode keeps journal_mode=OFF from taking effect).
 * Async-signal-safe: a stack buffer, strlen/memcpy, unlink. */
static void remove_with_journals(const char *p) {
    static const char *const ext[] = {"-journal", "-wal", "-shm"};
    char buf[4200];
    size_t n = strlen(p);
    unlink(p);
    if (n + 10 > sizeof buf) return;
    memcpy(buf, p, n);
    for (int i = 0; i < 3; i++) {
        memcpy(buf + n, ext[i], strlen(ext[i]) + 1);
        unlink(buf);
    }
}

static void on_signal(int sig) {
    int saved = errno;
    for (int i = 0; i < TMP_SLOTS; i++) {
        char *p = atomic_load(&g_tmp[i]);
        if (p) remove_with_journals(p);
    }
    atomic_store(&g_interrupted, 1);
    for (int i = 0; i < 3; i++)
        if (g_signals[i] == sig) sigaction(sig, &g_old[i], NULL);
    raise(sig); /* delivered when this handler returns: the previous disposition decides */
    errno = saved;
}

void op_out_signals_install(void) {
    if (atomic_exchange(&g_installed, 1)) return;
    atomic_store(&g_interrupted, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) {
        sigaction(g_signals[i], NULL, &g_old[i]);
        if (g_old[i].sa_handler != SIG_IGN) sigaction(g_signals[i], &sa, NULL); /* an ignored signal stays ignored */
    }
}

void op_out_signals_restore(void) {
    if (!atomic_load(&g_installed)) return;
    for (int i = 0; i < 3; i++) {
        struct sigaction cur;
        /* a handler that already ran restored its own signal */
        if (sigaction(g_signals[i], NULL, &cur) == 0 && cur.sa_handler == on_signal) sigaction(g_signals[i], &g_old[i], NULL);
    }
    atomic_store(&g_installed, 0);
    for (size_t i = 0; i < g_n_retired; i++) free(g_retired[i]);
    free(g_retired);
    g_retired = NULL;
    g_n_retired = 0;
}

OMNIPROF_API void op_output_remove_temps_on_signals(int on) {
    if (on) op_out_signals_install();
    else op_out_signals_restore();
}

/* ---- identities of the inputs ----------------------------------------------------------------- */

int op_out_ids_add(op_out_ids *ids, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    op_out_id *v = realloc(ids->v, (ids->n + 1) * sizeof *v);
    if (!v) return -1;
    ids->v = v;
    v[ids->n].dev = st.st_dev;
    v[ids->n].ino = st.st_ino;
    v[ids->n].path = path;
    ids->n++;
    return 0;
}

void op_out_ids_free(op_out_ids *ids) {
    free(ids->v);
    memset(ids, 0, sizeof *ids);
}

/* The input that `st` is, or NULL. */
static const char *input_at(const op_out_ids *ids, const struct stat *st) {
    for (size_t i = 0; ids && i < ids->n; i++)
        if (ids->v[i].dev == st->st_dev && ids->v[i].ino == st->st_ino) return ids->v[i].path;
    return NULL;
}

/* ---- output files ------------------------------------------------------------------------------ */

/* path with "-k" inserted at `at` (k == 0: path itself); malloc'ed. */
static char *numbered(const char *path, size_t at, unsigned k) {
    op_buf b = {0};
    op_buf_put(&b, path, at);
    if (k) op_buf_printf(&b, "-%u", k);
    op_buf_puts(&b, path + at);
    return op_buf_take(&b);
}

char *op_out_tmp_new(const char *dir, const char *prefix, const char *suffix) {
    static atomic_uint counter;
    for (int tries = 0; tries < 1000; tries++) {
        op_buf b = {0};
        op_buf_printf(&b, "%s%s%s%ld-%u%s", dir, dir[0] && dir[strlen(dir) - 1] != '/' ? "/" : "", prefix,
                      (long)getpid(), atomic_fetch_add(&counter, 1), suffix);
        char *tmp = op_buf_take(&b);
        if (!tmp) return NULL;
        op_out_tmp_register(tmp); /* before it exists: a signal never leaves it behind */
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            close(fd);
            return tmp;
        }
        int e = errno;
        op_out_tmp_unregister(tmp);
        free(tmp);
        if ((errno = e) != EEXIST) return NULL;
    }
    errno = EEXIST;
    return NULL;
}

/* A new temporary file beside `final`: <dir>/.<base>.tmp-<pid>-<n>. */
static char *make_temp(const char *final) {
    const char *slash = strrchr(final, '/');
    op_buf d = {0}, p = {0};
    op_buf_put(&d, final, slash ? (size_t)(slash - final + 1) : 0);
    op_buf_printf(&p, ".%s.tmp-", slash ? slash + 1 : final);
    char *dir = op_buf_take(&d), *prefix = op_buf_take(&p);
    char *tmp = dir && prefix ? op_out_tmp_new(dir, prefix, "") : NULL;
    free(dir);
    free(prefix);
    return tmp;
}

int op_outfile_open(op_outfile *o, const char *path, size_t number_at, const op_out_ids *ids, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->number_at = number_at;
    struct stat st;
    unsigned k = 0;
    for (;; k++) {
        char *cand = numbered(path, number_at, k);
        if (!cand) break;
        if (stat(cand, &st) != 0) { /* free: the name to take */
            o->final = cand;
            break;
        }
        const char *in = input_at(ids, &st);
        if (in) {
            op_seterr(err, errlen, "%s: is the input %s; refusing to write over an input (choose another output)", cand,
                      in);
            free(cand);
            return OP_OUT_EINPUT;
        }
        if (!S_ISREG(st.st_mode) && k == 0) { /* a device or a pipe: written in place */
            o->final = cand;
            o->in_place = 1;
            break;
        }
        free(cand);
        if (k == 100000) {
            op_seterr(err, errlen, "%s: exists, and so do %s-1 ... -%u", path, path, k);
            return OP_OUT_EINPUT;
        }
    }
    if (!o->final) {
        op_seterr(err, errlen, "%s: out of memory", path);
        return OP_OUT_EFAIL;
    }
    if (!(o->path = strdup(path))) {
        op_outfile_close(o, 0, NULL, 0);
        return OP_OUT_EFAIL;
    }
    if (k) fprintf(stderr, "omniprof: %s exists; writing %s\n", path, o->final);
    if (o->in_place) {
        o->f = fopen(o->final, "wb");
    } else if ((o->tmp = make_temp(o->final))) {
        o->f = fopen(o->tmp, "wb");
    }
    if (!o->f) {
        op_seterr(err, errlen, "%s: cannot create: %s", o->final, strerror(errno));
        op_outfile_close(o, 0, NULL, 0);
        return OP_OUT_EFAIL;
    }
    return 0;
}

int op_outfile_open_derived(op_outfile *o, const char *dir, const char *name, const char *file, const op_out_ids *ids,
                            char *err, size_t errlen) {
    char *path = op_out_path(dir, name, file);
    if (!path) {
        op_seterr(err, errlen, "out of memory");
        return OP_OUT_EFAIL;
    }
    size_t at = strlen(path) - strlen(file) - (name && *name ? 1 : 0); /* after <name>, before "_<file>" */
    if (!(name && *name)) {
        const char *dot = strrchr(file, '.');
        if (dot && dot != file) at += (size_t)(dot - file);
    }
    int rc = op_outfile_open(o, path, at, ids, err, errlen);
    free(path);
    return rc;
}

int op_outfile_open_path(op_outfile *o, const char *path, const op_out_ids *ids, char *err, size_t errlen) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t at = dot && dot != base ? (size_t)(dot - path) : strlen(path);
    return op_outfile_open(o, path, at, ids, err, errlen);
}

/* Links the finished temporary file to o->final, taking the next -N when a file took that name
 * meanwhile. */
static int publish(op_outfile *o, char *err, size_t errlen) {
    for (unsigned k = 1; link(o->tmp, o->final) != 0; k++) {
        if (errno != EEXIST || k > 100000) {
            op_seterr(err, errlen, "%s: cannot create: %s", o->final, strerror(errno));
            return OP_OUT_EFAIL;
        }
        char *next = NULL;
        struct stat st;
        for (; k <= 100000; k++) {
            free(next);
            if (!(next = numbered(o->path, o->number_at, k))) return OP_OUT_EFAIL;
            if (stat(next, &st) != 0) break;
        }
        fprintf(stderr, "omniprof: %s appeared meanwhile; writing %s\n", o->final, next);
        free(o->final);
        o->final = next;
    }
    return 0;
}

int op_outfile_close(op_outfile *o, int keep, char *err, size_t errlen) {
    return op_outfile_close_named(o, keep, NULL, 0, err, errlen);
}

int op_outfile_close_named(op_outfile *o, int keep, char *final, size_t final_len, char *err, size_t errlen) {
    int rc = 0;
    if (o->f && fclose(o->f) != 0 && keep) {
        op_seterr(err, errlen, "%s: write failed: %s", o->final, strerror(errno));
        rc = OP_OUT_EFAIL;
    }
    o->f = NULL;
    if (keep && !rc && o->tmp && op_out_interrupted()) {
        op_seterr(err, errlen, "%s: interrupted", o->final);
        rc = OP_OUT_EFAIL;
    }
    if (keep && !rc && o->tmp) rc = publish(o, err, errlen);
    if (keep && !rc && final && final_len && o->final) snprintf(final, final_len, "%s", o->final);
    if (o->tmp) {
        unlink(o->tmp);
        op_out_tmp_unregister(o->tmp);
    }
    free(o->tmp);
    free(o->final);
    free(o->path);
    memset(o, 0, sizeof *o);
    return rc;
}

/* ---- directories and derived names ---------------------------------------------------------- */

int op_mkdirs(const char *path) {
    if (!path || !*path) return 0;
    char *p = strdup(path);
    if (!p) return -1;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = (mkdir(p, 0777) != 0 && errno != EEXIST) ? -1 : 0;
    free(p);
    return rc;
}

char *op_out_path(const char *dir, const char *name, const char *file) {
    op_buf b = {0};
    op_buf_puts(&b, dir && *dir ? dir : ".");
    op_buf_putc(&b, '/');
    if (name && *name) {
        op_buf_puts(&b, name);
        op_buf_putc(&b, '_');
    }
    op_buf_puts(&b, file);
    op_buf_putc(&b, 0);
    if (b.oom) {
        op_buf_free(&b);
        return NULL;
    }
    return (char *)b.p;
}
