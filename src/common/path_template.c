/* path_template.c — output-path placeholder expansion (see path_template.h for the keys).
 *
 * One pass scans the template left to right and copies it to the output, replacing each
 * placeholder by its value. A pass that substituted an environment variable may have brought
 * in new placeholders, so passes repeat until one substitutes no environment variable (a fixed
 * point) or OP_PATH_MAX_PASSES is reached. Every write into `out` is bounds-checked; nothing is
 * allocated. */
#include "common/path_template.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/number.h"

#define KEY_LIST                                                                                  \
    "%hostname% %pid% %ppid% %pgid% %psid% %rank% %local_rank% %size% %job% %nid% %cwd% %argv% " \
    "%argt% %args% %arg<N>% %tag% %launch_date% %launch_time% %env{VAR}% $ENV{VAR} %q{VAR}% (short: %h %p %j %r " \
    "%s), %% for a literal '%'"

/* Rank, local rank and size from the job launcher's variables, first match wins
 * (docs/multinode.md, "Ranks"). OMNIPROF_MPI_* are the MPI backend's (the rank MPI_Comm_rank
 * gave after MPI_Init, exported for %rank% in names chosen later). torchrun's RANK/LOCAL_RANK/
 * WORLD_SIZE come first when TORCHELASTIC_RUN_ID says torchrun started the process (under srun
 * its workers also inherit SLURM_PROCID and PMI_RANK, which number the nodes); otherwise the MPI
 * launchers' (Open MPI, MPICH/Hydra and Cray PALS through PMI and their own names, MVAPICH,
 * PMIx), then Slurm's (SLURM_PROCID is also set, to the batch step's 0, for every process that
 * mpirun starts inside an allocation, so it must not win over the MPI launcher's), then a bare
 * RANK/LOCAL_RANK (torch.distributed without torchrun). */
typedef struct id_source {
    const char *rank, *local_rank, *size;
} id_source;

static const id_source g_omniprof = {"OMNIPROF_MPI_RANK", "OMNIPROF_MPI_LOCAL_RANK", "OMNIPROF_MPI_SIZE"};
static const id_source g_torchrun = {"RANK", "LOCAL_RANK", "WORLD_SIZE"};
static const id_source g_id_sources[] = {
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
    {"PMIX_RANK", "PMIX_LOCAL_RANK", "PMIX_SIZE"},
    {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_SIZE"},
    {"PALS_RANKID", "PALS_LOCAL_RANKID", "PALS_SIZE"},
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
    {"MPI_RANK", "MPI_LOCALRANKID", "MPI_SIZE"},
    {"RANK", "LOCAL_RANK", "WORLD_SIZE"},
};

static long env_num(const char *name)
{
    const char *v = name ? getenv(name) : NULL;
    if (!v || !*v) return -1;
    char *end;
    long n = strtol(v, &end, 10);
    return *end == '\0' && n >= 0 ? n : -1;
}

/* The launcher that set a rank: its variables. NULL when none did. */
static const id_source *id_launcher(void)
{
    if (env_num(g_omniprof.rank) >= 0) return &g_omniprof;
    const char *torchrun = getenv("TORCHELASTIC_RUN_ID");
    if (torchrun && *torchrun && env_num(g_torchrun.rank) >= 0) return &g_torchrun;
    for (size_t i = 0; i < sizeof g_id_sources / sizeof g_id_sources[0]; i++)
        if (env_num(g_id_sources[i].rank) >= 0) return &g_id_sources[i];
    return NULL;
}

long op_path_mpi_rank(void)
{
    const id_source *s = id_launcher();
    return s ? env_num(s->rank) : -1;
}

long op_path_mpi_size(void)
{
    const id_source *s = id_launcher();
    long n = s ? env_num(s->size) : -1;
    return n > 0 ? n : -1;
}

/* The launcher's own local rank, else the first other launcher variable that has one (srun
 * with PMI sets PMI_RANK but numbers the node's tasks in SLURM_LOCALID). */
long op_path_local_rank(void)
{
    const id_source *s = id_launcher();
    long n = s ? env_num(s->local_rank) : -1;
    for (size_t i = 0; s && n < 0 && i < sizeof g_id_sources / sizeof g_id_sources[0]; i++)
        n = env_num(g_id_sources[i].local_rank);
    return n;
}

const char *op_path_rank_source(void)
{
    const id_source *s = id_launcher();
    return s ? s->rank : NULL;
}

void op_path_context_init_self(op_path_context *ctx)
{
    ctx->pid = getpid();
    ctx->ppid = getppid();
    ctx->pgid = getpgrp();
    ctx->psid = getsid(0);
    if (gethostname(ctx->hostname_buf, sizeof(ctx->hostname_buf)) != 0) strcpy(ctx->hostname_buf, "localhost");
    ctx->hostname_buf[sizeof(ctx->hostname_buf) - 1] = '\0';
    ctx->hostname = ctx->hostname_buf;
    if (!getcwd(ctx->cwd_buf, sizeof(ctx->cwd_buf))) strcpy(ctx->cwd_buf, ".");
    ctx->cwd = ctx->cwd_buf;
    const char *lt = getenv("OMNIPROF_LAUNCH_TIME");
    int64_t t = 0;
    ctx->launch_time = (lt && op_num_i64(lt, &t) == OP_NUM_OK && t > 0) ? (time_t)t : time(NULL);
}

/* The output being built: `len` bytes used of `cap`. */
typedef struct sink {
    char *buf;
    size_t cap, len;
    int overflow;
} sink;

static void put(sink *s, const char *p, size_t n)
{
    if (s->len + n + 1 > s->cap) {
        s->overflow = 1;
        return;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = '\0';
}

static void put_str(sink *s, const char *p) { put(s, p, strlen(p)); }

static void put_long(sink *s, long v)
{
    char tmp[32];
    snprintf(tmp, sizeof(tmp), "%ld", v);
    put_str(s, tmp);
}

/* A command-line value: '/' and whitespace become '_'; leading '_' are dropped. */
static void put_sanitized(sink *s, const char *p, int *leading)
{
    for (; *p; p++) {
        char c = *p;
        if (c == '/' || isspace((unsigned char)c)) c = '_';
        if (c == '_' && *leading) continue;
        *leading = 0;
        put(s, &c, 1);
    }
}

static const char *base_name(const char *p)
{
    const char *slash = strrchr(p, '/');
    return slash ? slash + 1 : p;
}

/* %argv% (first=0, base=0), %argt% (first=0, base=1), %args% (first=1). */
static void put_args(sink *s, const op_path_context *ctx, int first, int base)
{
    int leading = 1;
    for (int i = first; ctx->argv && i < ctx->argc && ctx->argv[i]; i++) {
        if (i > first) put_sanitized(s, "_", &leading);
        put_sanitized(s, (i == 0 && base) ? base_name(ctx->argv[0]) : ctx->argv[i], &leading);
    }
}

static int is_ident(const char *p, size_t n)
{
    if (n == 0 || n > 64 || !isalpha((unsigned char)p[0])) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)p[i]) && p[i] != '_') return 0;
    return 1;
}

static void put_time(sink *s, time_t t, const char *fmt)
{
    struct tm tm;
    char tmp[64];
    localtime_r(&t, &tm);
    size_t n = strftime(tmp, sizeof(tmp), fmt, &tm);
    put(s, tmp, n);
}

/* Expand the key named by [k, k+n). Returns 1 if known, 0 if not, -1 for %arg<N>% past the
 * command line (strict_args). */
static int expand_key(sink *s, const char *k, size_t n, const op_path_context *ctx)
{
#define IS(name) (n == sizeof(name) - 1 && memcmp(k, name, n) == 0)
    if (IS("hostname") || IS("h")) {
        int leading = 0;
        put_sanitized(s, ctx->hostname ? ctx->hostname : "localhost", &leading);
    } else if (IS("pid") || IS("p")) {
        put_long(s, (long)ctx->pid);
    } else if (IS("ppid")) {
        put_long(s, (long)ctx->ppid);
    } else if (IS("pgid")) {
        put_long(s, (long)ctx->pgid);
    } else if (IS("psid")) {
        put_long(s, (long)ctx->psid);
    } else if (IS("rank") || IS("r")) {
        long r = op_path_mpi_rank();
        put_long(s, r < 0 ? 0 : r);
    } else if (IS("local_rank")) {
        long r = op_path_local_rank();
        put_long(s, r < 0 ? 0 : r);
    } else if (IS("size") || IS("s")) {
        long z = op_path_mpi_size();
        put_long(s, z < 0 ? 1 : z);
    } else if (IS("nid")) {
        long r = op_path_mpi_rank();
        put_long(s, r < 0 ? (long)ctx->pid : r);
    } else if (IS("job") || IS("j")) {
        const char *j = getenv("SLURM_JOB_ID");
        int leading = 0;
        put_sanitized(s, (j && *j) ? j : "0", &leading);
    } else if (IS("cwd")) {
        put_str(s, ctx->cwd ? ctx->cwd : ".");
    } else if (IS("argv")) {
        put_args(s, ctx, 0, 0);
    } else if (IS("argt")) {
        put_args(s, ctx, 0, 1);
    } else if (IS("args")) {
        put_args(s, ctx, 1, 0);
    } else if (IS("tag")) {
        int leading = 1;
        put_sanitized(s, (ctx->argv && ctx->argc > 0 && ctx->argv[0]) ? base_name(ctx->argv[0]) : "", &leading);
    } else if (IS("launch_date")) {
        put_time(s, ctx->launch_time, "%F");
    } else if (IS("launch_time")) {
        put_time(s, ctx->launch_time, "%F_%H.%M");
    } else if (n > 3 && memcmp(k, "arg", 3) == 0 && strspn(k + 3, "0123456789") == n - 3) {
        /* The index as a number that cannot wrap: %arg2147483648% is past any argv (empty). */
        char digits[24];
        uint64_t i = UINT64_MAX;
        if (n - 3 < sizeof(digits)) {
            memcpy(digits, k + 3, n - 3);
            digits[n - 3] = '\0';
            if (op_num_u64(digits, &i) != OP_NUM_OK) i = UINT64_MAX;
        }
        int leading = 1;
        if (ctx->argv && ctx->argc > 0 && i < (uint64_t)ctx->argc && ctx->argv[i]) put_sanitized(s, ctx->argv[i], &leading);
        else if (ctx->strict_args) return -1; /* past the command line: the caller says so */
    } else {
        return 0;
    }
    return 1;
#undef IS
}

/* "arg" then a signed number ("arg-1", "arg+2"): meant as %arg<N>%, but N has a sign. */
static int is_signed_arg(const char *p, size_t n)
{
    if (n < 5 || memcmp(p, "arg", 3) != 0 || (p[3] != '-' && p[3] != '+')) return 0;
    for (size_t i = 4; i < n; i++)
        if (!isdigit((unsigned char)p[i])) return 0;
    return 1;
}

/* The valid N of %arg<N>% for messages: "from 0 (the program) to 2 (its last argument)". */
static void args_range(const op_path_context *ctx, char *out, size_t n)
{
    int argc = ctx->argv ? ctx->argc : 0;
    if (argc <= 0) snprintf(out, n, "from 0 (the program's command line is not known here)");
    else if (argc == 1) snprintf(out, n, "0 only (the program; it has no arguments)");
    else snprintf(out, n, "from 0 (the program) to %d (its last argument)", argc - 1);
}

/* One pass. Returns 0 and sets *env_used, or -1 with err. */
static int expand_pass(const char *t, const op_path_context *ctx, sink *s, int *env_used, char *err, size_t errlen)
{
    *env_used = 0;
    while (*t) {
        /* %env{VAR}%, %q{VAR}%, $ENV{VAR} */
        const char *var = NULL;
        size_t skip_close = 0;
        if (strncmp(t, "%env{", 5) == 0) var = t + 5, skip_close = 2;
        else if (strncmp(t, "%q{", 3) == 0) var = t + 3, skip_close = 2;
        else if (strncmp(t, "$ENV{", 5) == 0 || strncmp(t, "$env{", 5) == 0) var = t + 5, skip_close = 1;
        if (var) {
            const char *close = strchr(var, '}');
            if (!close || (skip_close == 2 && close[1] != '%')) {
                if (err)
                    snprintf(err, errlen, "unclosed environment placeholder in '%.*s': write %%env{NAME}%%",
                             (int)strnlen(t, 200), t);
                return -1;
            }
            char name[256];
            size_t n = (size_t)(close - var);
            if (n == 0 || n >= sizeof(name)) {
                if (err) snprintf(err, errlen, "bad environment variable name in '%.*s'", (int)strnlen(t, 200), t);
                return -1;
            }
            memcpy(name, var, n);
            name[n] = '\0';
            const char *v = getenv(name);
            if (v) put_str(s, v);
            *env_used = 1;
            t = close + skip_close;
            continue;
        }
        if (*t != '%') {
            put(s, t, 1);
            t++;
            continue;
        }
        if (t[1] == '%') { /* %% */
            put(s, "%", 1);
            t += 2;
            continue;
        }
        /* %key% */
        const char *close = strchr(t + 1, '%');
        if (close && is_signed_arg(t + 1, (size_t)(close - t - 1))) { /* %arg-1%: no such key */
            if (err) {
                char valid[96];
                args_range(ctx, valid, sizeof valid);
                snprintf(err, errlen, "'%.*s' is not a valid placeholder: %%arg<N>%% takes N %s", (int)(close - t + 1), t,
                         valid);
            }
            return -1;
        }
        if (close && is_ident(t + 1, (size_t)(close - t - 1))) {
            int known = expand_key(s, t + 1, (size_t)(close - t - 1), ctx);
            if (known < 0) {
                if (err) {
                    char valid[96];
                    args_range(ctx, valid, sizeof valid);
                    snprintf(err, errlen, "placeholder '%.*s' is past the program's command line: %%arg<N>%% takes N %s",
                             (int)(close - t + 1), t, valid);
                }
                return -1;
            }
            if (!known) {
                if (err)
                    snprintf(err, errlen, "unknown placeholder '%.*s'; valid: %s", (int)(close - t + 1), t, KEY_LIST);
                return -1;
            }
            t = close + 1;
            continue;
        }
        /* short forms %h %p %j %r %s, not followed by a letter or digit */
        if (t[1] && strchr("hpjrs", t[1]) && !isalnum((unsigned char)t[2])) {
            expand_key(s, t + 1, 1, ctx);
            t += 2;
            continue;
        }
        put(s, t, 1); /* a lone '%' */
        t++;
    }
    return 0;
}

int op_path_expand(const char *tmpl, const op_path_context *ctx, char *out, size_t outlen, char *err, size_t errlen)
{
    if (!tmpl || !ctx || !out || outlen == 0) {
        if (err) snprintf(err, errlen, "invalid argument");
        return -1;
    }
    char a[4096], b[4096];
    const char *in = tmpl;
    for (int pass = 0; pass < OP_PATH_MAX_PASSES; pass++) {
        char *dst = (pass % 2 == 0) ? a : b;
        sink s = {dst, sizeof(a), 0, 0};
        dst[0] = '\0';
        int env_used = 0;
        if (expand_pass(in, ctx, &s, &env_used, err, errlen) != 0) return -1;
        if (s.overflow) {
            if (err) snprintf(err, errlen, "expanded path of '%.200s' is longer than %zu bytes", tmpl, sizeof(a) - 1);
            return -1;
        }
        in = dst;
        if (!env_used || strcmp(dst, pass == 0 ? tmpl : (pass % 2 == 0 ? b : a)) == 0) break;
    }
    size_t n = strlen(in);
    if (n + 1 > outlen) {
        if (err) snprintf(err, errlen, "expanded path of '%.200s' is longer than %zu bytes", tmpl, outlen - 1);
        return -1;
    }
    memcpy(out, in, n + 1);
    return 0;
}

bool op_path_has_process_keys(const char *t)
{
    static const char *const keys[] = {"%pid%", "%ppid%", "%pgid%", "%psid%", "%nid%", NULL};
    for (int i = 0; keys[i]; i++)
        if (strstr(t, keys[i])) return true;
    for (const char *p = strchr(t, '%'); p; p = strchr(p + 1, '%'))
        if (p[1] == 'p' && !isalnum((unsigned char)p[2])) return true;
    return false;
}

int op_path_mkdirs(const char *dir, char *err, size_t errlen)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0) return 0;
    if (n >= sizeof(path)) {
        errno = ENAMETOOLONG;
        if (err) snprintf(err, errlen, "directory name too long: '%.200s'", dir);
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(path, 0777) != 0 && errno != EEXIST) {
                int e = errno;
                if (err) snprintf(err, errlen, "cannot create directory '%s': %s", path, strerror(e));
                errno = e;
                return -1;
            }
            struct stat st;
            if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
                int e = errno ? errno : ENOTDIR;
                if (stat(path, &st) == 0) e = ENOTDIR;
                if (err) snprintf(err, errlen, "'%s' is not a directory", path);
                errno = e;
                return -1;
            }
            *p = saved;
            if (saved == '\0') break;
        }
    }
    return 0;
}
