/* cmd_causal.c — `omniprof causal [options] -- PROGRAM [ARGS...]`: causal profiling runs.
 *
 * Runs the program RUNS times, one after another (run_child of the launcher: fork + exec,
 * SIGINT/SIGTERM/SIGQUIT/SIGHUP forwarded, the program dies with the runner), under the preload library, the tool, the SDK and the CPU backend with
 * OMNIPROF_CAUSAL=true and the causal settings the options give (settings.def, "causal";
 * docs/causal.md). Each process
 * writes its experiments into its own database (the usual <dir>/<host>/<pid>_results.db);
 * after each run the runner appends that run's experiments to one profile in Coz's format
 * (profile.coz by default, never truncated: runs and invocations accumulate, as Coz's do), and
 * at the end prints the causal profile of this invocation's databases (lines ranked by slope).
 *
 * The program's own output and exit status are untouched: it inherits stdin/stdout/stderr;
 * the runner writes only to stderr, after each run; the exit status is the program's (128+N
 * when signal N ended it), and a failing run stops the sequence. Bad options, values,
 * regular expressions or a missing program: one message naming them, exit 2, nothing run. */
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_lib.h"
#include "cli/cmd_run.h"
#include "cli/commands.h"
#include "common/cli_opt.h"
#include "common/settings.h"
#ifdef OMNIPROF_HAVE_OUTPUT
#include "output/profile_causal.h"
#endif

#define EXIT_USAGE 2
#define MAX_ENV 64

typedef struct causal_opts {
    long runs;
    const char *output;   /* the Coz profile */
    const char *dir;      /* databases */
    bool quiet;
    bool gpu;
    char *env[MAX_ENV];   /* "OMNIPROF_X=value", malloc'd */
    int n_env;
    char **program;
} causal_opts;

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("omniprof causal: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
}

/* The setting `id` = value after validation through the settings registry. */
static int set_env(causal_opts *o, int id, const char *value, const char *option)
{
    const char *name = op_setting_get_info((op_setting_id)id)->env_name;
    char err[512];
    if (op_setting_validate((op_setting_id)id, value, err, sizeof err) != 0) {
        usage_error("%s: %s", option, err);
        return -1;
    }
    for (int i = 0; i < o->n_env; i++) { /* a later value of the same option wins */
        size_t nl = strlen(name);
        if (!strncmp(o->env[i], name, nl) && o->env[i][nl] == '=') {
            free(o->env[i]);
            o->env[i] = o->env[--o->n_env];
            break;
        }
    }
    if (o->n_env == MAX_ENV) return -1;
    size_t len = strlen(name) + strlen(value) + 2;
    char *kv = malloc(len);
    if (!kv) return -1;
    snprintf(kv, len, "%s=%s", name, value);
    o->env[o->n_env++] = kv;
    return 0;
}

/* Repeatable regex options are joined with ';' (the scope list separator). */
static int add_regex(char **list, const char *re, const char *option)
{
    regex_t r;
    int rc = regcomp(&r, re, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char msg[256];
        regerror(rc, &r, msg, sizeof msg);
        usage_error("%s '%s' is not a valid POSIX extended regular expression: %s", option, re, msg);
        return -1;
    }
    regfree(&r);
    if (strpbrk(re, ";\t\n")) {
        usage_error("%s '%s': a scope pattern may not contain ';', tabs or newlines (they separate patterns)", option, re);
        return -1;
    }
    size_t old = *list ? strlen(*list) : 0;
    char *n = realloc(*list, old + strlen(re) + 2);
    if (!n) return -1;
    if (old) n[old++] = ';';
    strcpy(n + old, re);
    *list = n;
    return 0;
}

static int check_speedups(const char *text)
{
    int n = 0;
    for (const char *p = text; *p;) {
        while (*p == ',' || *p == ' ') p++;
        if (!*p) break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 100 || (*end && *end != ',' && *end != ' ')) {
            usage_error("--speedups '%s' is not valid; expected percentages 0..100 separated by commas, e.g. '0,0,25,50'",
                        text);
            return -1;
        }
        n++;
        p = end;
    }
    if (!n) {
        usage_error("--speedups '%s' lists no speedup", text);
        return -1;
    }
    return 0;
}

enum {
    C_RUNS,
    C_SPEEDUPS,
    C_MODE,
    C_END_TO_END,
    C_FIXED_LINE,
    C_BINARY_SCOPE,
    C_BINARY_EXCLUDE,
    C_SOURCE_SCOPE,
    C_SOURCE_EXCLUDE,
    C_FUNCTION_SCOPE,
    C_FUNCTION_EXCLUDE,
    C_OUTPUT,
    C_OUTPUT_DIRECTORY,
    C_GPU,
    C_EXPERIMENT_MS,
    C_SAMPLE_PERIOD_US,
    C_DELAY,
    C_DURATION,
    C_SEED,
    C_BACKEND,
    C_NO_RANGE_PROGRESS,
    C_QUIET,
    C_HELP
};

/* SETTING: the OMNIPROF_CAUSAL_* setting the option sets through the registry (-1: handled
 * below); scopes are joined with ';' into theirs. */
#define ROW(ID, LONG, SHORT, KIND, META, VALUES, SETTING, HELP)                                    \
    {                                                                                              \
        ID, LONG, SHORT, KIND, META, VALUES, NULL, HELP, SETTING, 0, 0                             \
    }
static const op_cli_option causal_options[] = {
    ROW(C_RUNS, "runs", 'n', OP_CLI_VALUE, "N", NULL, -1, "run the program N times (default 1)"),
    ROW(C_SPEEDUPS, "speedups", 's', OP_CLI_VALUE, "LIST", NULL, OP_SET_CAUSAL_SPEEDUPS,
        "line speedups to draw from, percent: '0,0,25,50,75,100' (default: 0..100 in steps of 5, a "
        "quarter of the draws at 0)"),
    ROW(C_MODE, "mode", 'm', OP_CLI_VALUE, "line|function", "line|function", OP_SET_CAUSAL_MODE,
        "what an experiment speeds up (default line: needs -g)"),
    ROW(C_END_TO_END, "end-to-end", 'e', OP_CLI_FLAG, NULL, NULL, OP_SET_CAUSAL_END_TO_END,
        "one experiment per run, measured by the run's duration"),
    ROW(C_FIXED_LINE, "fixed-line", 'l', OP_CLI_VALUE, "SPEC", NULL, OP_SET_CAUSAL_FIXED_LINE,
        "always select FILE:LINE (a path suffix) or, in function mode, a function"),
    ROW(C_BINARY_SCOPE, "binary-scope", 'b', OP_CLI_VALUE, "RE", NULL, OP_SET_CAUSAL_BINARY_SCOPE,
        "binaries whose code may be selected (repeatable; default %MAIN%)"),
    ROW(C_BINARY_EXCLUDE, "binary-exclude", 'B', OP_CLI_VALUE, "RE", NULL,
        OP_SET_CAUSAL_BINARY_EXCLUDE, "binaries never selected (repeatable)"),
    ROW(C_SOURCE_SCOPE, "source-scope", 'S', OP_CLI_VALUE, "RE", NULL, OP_SET_CAUSAL_SOURCE_SCOPE,
        "source files or FILE:LINE that may be selected (repeatable; default all)"),
    ROW(C_SOURCE_EXCLUDE, "source-exclude", 0, OP_CLI_VALUE, "RE", NULL,
        OP_SET_CAUSAL_SOURCE_EXCLUDE, "source files or FILE:LINE never selected (repeatable)"),
    ROW(C_FUNCTION_SCOPE, "function-scope", 'F', OP_CLI_VALUE, "RE", NULL,
        OP_SET_CAUSAL_FUNCTION_SCOPE, "functions that may be selected (repeatable; default all)"),
    ROW(C_FUNCTION_EXCLUDE, "function-exclude", 0, OP_CLI_VALUE, "RE", NULL,
        OP_SET_CAUSAL_FUNCTION_EXCLUDE, "functions never selected (repeatable)"),
    ROW(C_OUTPUT, "output", 'o', OP_CLI_VALUE, "FILE", NULL, -1,
        "the Coz profile experiments are appended to (default ./profile.coz)"),
    ROW(C_OUTPUT_DIRECTORY, "output-directory", 'd', OP_CLI_VALUE, "DIR", NULL, -1,
        "where the databases go (default: the current directory)"),
    ROW(C_GPU, "gpu", 'g', OP_CLI_FLAG, NULL, NULL, -1,
        "also trace GPU kernels and NVTX ranges (range starts become progress points)"),
    ROW(C_EXPERIMENT_MS, "experiment-ms", 0, OP_CLI_VALUE, "N", NULL, OP_SET_CAUSAL_EXPERIMENT_MS,
        "shortest experiment, ms (default 500)"),
    ROW(C_SAMPLE_PERIOD_US, "sample-period-us", 0, OP_CLI_VALUE, "N", NULL,
        OP_SET_CAUSAL_SAMPLE_PERIOD_US, "thread CPU time per causal sample, us (default 1000)"),
    ROW(C_DELAY, "delay", 0, OP_CLI_VALUE, "S", NULL, OP_SET_CAUSAL_DELAY,
        "the experiments start S seconds after the start (default: at once)"),
    ROW(C_DURATION, "duration", 0, OP_CLI_VALUE, "S", NULL, OP_SET_CAUSAL_DURATION,
        "experiments for S seconds after the delay (default: all the run)"),
    ROW(C_SEED, "seed", 0, OP_CLI_VALUE, "N", NULL, OP_SET_CAUSAL_SEED,
        "seed of the draws (default: from the clock)"),
    ROW(C_BACKEND, "backend", 0, OP_CLI_VALUE, "auto|perf|timer", "auto|perf|timer",
        OP_SET_CAUSAL_BACKEND, "the sampler (default auto: perf task-clock, else CPU-time timers)"),
    ROW(C_NO_RANGE_PROGRESS, "no-range-progress", 0, OP_CLI_FLAG, NULL, NULL,
        OP_SET_CAUSAL_RANGE_PROGRESS, "range starts are not progress points"),
    ROW(C_QUIET, "quiet", 'q', OP_CLI_FLAG, NULL, NULL, -1,
        "do not print the causal profile at the end"),
    ROW(C_HELP, "help", 'h', OP_CLI_FLAG, NULL, NULL, -1, "this text"),
};
#undef ROW

static const op_cli_table causal_tables[] = {
    {causal_options, (int)(sizeof causal_options / sizeof causal_options[0]), NULL, 0}};

const op_cli_command causal_command = {
    "causal",
    "causal profiling: virtual speedups of lines, appended to profile.coz",
    "omniprof causal [options] -- PROGRAM [ARGS...]",
    "Causal profiling (Coz's virtual speedups): each experiment makes one line (or function) of "
    "the program virtually faster by pausing the other threads, and measures how fast the "
    "program's progress points advance. Progress points: COZ_PROGRESS / COZ_PROGRESS_NAMED / "
    "COZ_BEGIN+COZ_END (coz.h, the program runs unchanged), omniprof_progress*() of the user API, "
    "user-API and NVTX range starts, or --end-to-end. Experiments go to each process's database "
    "and are appended to a Coz profile.",
    "Scopes are POSIX extended regular expressions; several are given by repeating the option. "
    "Read the result with `omniprof summary -i DB...` or in Coz's viewer (load "
    "profile.coz).\n\nExit status: the program's (128+N if signal N ended it); 2 for bad options "
    "(nothing run).",
    causal_tables,
    1,
    OP_CLI_PROGRAM,
    NULL,
};

typedef struct causal_parse {
    causal_opts *o;
    char *scope[6]; /* binary in/out, source in/out, function in/out */
    bool help;
} causal_parse;

static int on_option(void *ctx, const op_cli_option *opt, const char *v, int nth,
                     const char *spelled)
{
    causal_parse *p = ctx;
    causal_opts *o = p->o;
    (void)nth, (void)spelled;
    char option[80];
    snprintf(option, sizeof option, "--%s", opt->long_name);
    switch (opt->id) {
    case C_RUNS: {
        char *end;
        long n = strtol(v, &end, 10);
        if (!*v || *end || n < 1 || n > 100000) {
            usage_error("--runs '%s' is not valid; expected a number of runs from 1 to 100000", v);
            return 1;
        }
        o->runs = n;
        return 0;
    }
    case C_SPEEDUPS: return check_speedups(v) || set_env(o, opt->setting, v, option) ? 1 : 0;
    case C_MODE:
        return set_env(o, opt->setting, strcmp(v, "func") == 0 ? "function" : v, option) ? 1 : 0;
    case C_END_TO_END: return set_env(o, opt->setting, "true", option) ? 1 : 0;
    case C_NO_RANGE_PROGRESS: return set_env(o, opt->setting, "false", option) ? 1 : 0;
    case C_BINARY_SCOPE:
    case C_BINARY_EXCLUDE:
    case C_SOURCE_SCOPE:
    case C_SOURCE_EXCLUDE:
    case C_FUNCTION_SCOPE:
    case C_FUNCTION_EXCLUDE:
        return add_regex(&p->scope[opt->id - C_BINARY_SCOPE], v, option) ? 1 : 0;
    case C_OUTPUT: o->output = v; return 0;
    case C_OUTPUT_DIRECTORY: o->dir = v; return 0;
    case C_GPU: o->gpu = true; return 0;
    case C_QUIET: o->quiet = true; return 0;
    case C_HELP: p->help = true; return 0;
    default: return set_env(o, opt->setting, v, option) ? 1 : 0; /* the rows with a setting */
    }
}

/* 0 to run, 1 after --help, -1 after a usage error (printed). */
static int parse(causal_opts *o, int argc, char **argv)
{
    causal_parse p;
    memset(&p, 0, sizeof p);
    p.o = o;
    char err[1024];
    int rest = argc;
    int rc = op_cli_parse(&causal_command, argc, argv, on_option, &p, &rest, err, sizeof err);
    if (rc == -1) usage_error("%s", err);
    for (int i = 0; i < 6 && !rc; i++) {
        const op_cli_option *row = &causal_options[C_BINARY_SCOPE + i];
        if (p.scope[i]) rc = set_env(o, row->setting, p.scope[i], "scope");
    }
    for (int i = 0; i < 6; i++) free(p.scope[i]);
    if (rc) return -1;
    if (p.help) {
        op_cli_print_help(stdout, &causal_command);
        return 1;
    }
    if (rest >= argc) {
        usage_error("no program to run; usage: omniprof causal [options] -- PROGRAM [ARGS...]");
        return -1;
    }
    o->program = &argv[rest];
    return 0;
}

/* ---- running ---------------------------------------------------------------------------- */

/* The databases the run's processes wrote (one path per line of the manifest). */
static int read_manifest(const char *path, char ***dbs, int *n, int *cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[PATH_MAX + 2];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0]) continue;
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 16;
            char **t = realloc(*dbs, (size_t)*cap * sizeof **dbs);
            if (!t) break;
            *dbs = t;
        }
        (*dbs)[(*n)++] = strdup(line);
    }
    fclose(f);
    return 0;
}

static int setup_environment(causal_opts *o, char *manifest, size_t manifest_len)
{
    char libdir[PATH_MAX];
    if (cli_lib_dir(libdir, sizeof libdir) != 0) {
        fputs("omniprof causal: cannot find omniprof's libraries (../lib beside the binary)\n", stderr);
        return 1;
    }
    char lp[5 * PATH_MAX + 200]; /* the libc interposers first, as `omniprof run` orders them */
    snprintf(lp, sizeof lp, /* and the waits that causal profiling alone needs, right after them */
             "%s/libomniprof-preload.so:%s/libomniprof-sync.so:%s/libomniprof-tool.so:%s/libomniprof-sdk.so:"
             "%s/libomniprof-backend-cpu.so",
             libdir, libdir, libdir, libdir, libdir);
    char probe[PATH_MAX + 40];
    for (const char *const *need = (const char *const[]){"libomniprof-backend-cpu.so", "libomniprof-sync.so", NULL};
         *need; need++) {
        snprintf(probe, sizeof probe, "%s/%s", libdir, *need);
        if (access(probe, R_OK) != 0) {
            usage_error("causal profiling needs %s, which is not built (%s is missing)", *need, probe);
            return EXIT_USAGE;
        }
    }
    snprintf(probe, sizeof probe, "%s/libomniprof-backend-mpi.so", libdir); /* owns the MPI waits */
    if (access(probe, R_OK) == 0 && strlen(lp) + strlen(probe) + 2 < sizeof lp) {
        strcat(lp, ":");
        strcat(lp, probe);
    }
    const char *old = getenv("LD_PRELOAD");
    if (old && *old && strlen(lp) + strlen(old) + 2 < sizeof lp) {
        strcat(lp, ":");
        strcat(lp, old);
    }
    setenv("LD_PRELOAD", lp, 1);
    for (int i = 0; i < o->n_env; i++) putenv(o->env[i]); /* the strings stay ours until exit */
    setenv("OMNIPROF_CAUSAL", "true", 1);
    if (o->gpu) {
        setenv("OMNIPROF_KERNEL_TRACE", "true", 1);
        setenv("OMNIPROF_MARKER_TRACE", "true", 1);
    }
    char cwd[PATH_MAX];
    if (!o->dir && !getcwd(cwd, sizeof cwd)) return 1;
    char dir[2 * PATH_MAX + 2];
    if (o->dir && o->dir[0] != '/' && getcwd(cwd, sizeof cwd)) snprintf(dir, sizeof dir, "%s/%s", cwd, o->dir);
    else snprintf(dir, sizeof dir, "%s", o->dir ? o->dir : cwd);
    setenv("OMNIPROF_OUTPUT_PATH", dir, 1);
    if (cli_tmp_create("causal", false, manifest, manifest_len) != 0) {
        fprintf(stderr, "omniprof causal: cannot create a run manifest in %s: %s\n", manifest, strerror(errno));
        manifest[0] = '\0';
        return 1;
    }
    setenv("OMNIPROF_RUN_MANIFEST", manifest, 1);
    return 0;
}

/* Is the existing file at `path` a Coz profile (ours or Coz's own), which runs append to? Its
 * first line is one of the profile's records ("startup\ttime=...", "experiment\t...") and it
 * holds text. An empty file is one (nothing to lose). 1 yes, 0 no, -1 unreadable (errno). */
static int is_coz_profile(const char *path)
{
    static const char *const records[] = {"startup\t", "experiment\t", "throughput-point\t", "latency-point\t",
                                          "runtime\t", "samples\t", "shutdown\t"};
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char head[4096];
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    if (n == 0) return 1;
    if (memchr(head, '\0', n)) return 0; /* a database, a binary: not text */
    head[n] = '\0';
    for (size_t k = 0; k < sizeof records / sizeof records[0]; k++)
        if (!strncmp(head, records[k], strlen(records[k]))) return 1;
    return 0;
}

/* `dir` made absolute (from the current directory) into out. */
static void absolute(const char *dir, char *out, size_t n)
{
    char cwd[PATH_MAX];
    if (dir[0] != '/' && getcwd(cwd, sizeof cwd)) snprintf(out, n, "%s/%s", cwd, dir);
    else snprintf(out, n, "%s", dir);
}

/* Before any run: the profile (-o) is a new file in a directory that accepts one, or an
 * existing Coz profile we may append to — never another file (a database, a binary, a text
 * of the user's), which appending would damage; the databases' directory (-d) exists or can be
 * created and accepts files. The same directory check as run's (cli_check_output_dir).
 * Returns 0, or -1 (printed). */
static int check_outputs(const causal_opts *o)
{
    char err[1024], path[2 * PATH_MAX + 2];
    struct stat st;
    if (stat(o->output, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            usage_error("--output '%s' is not a regular file; give the path of a Coz profile to create or append to",
                        o->output);
            return -1;
        }
        int coz = is_coz_profile(o->output);
        if (coz <= 0 || access(o->output, W_OK) != 0) {
            usage_error("--output '%s' %s; runs append only to a Coz profile (profile.coz): give a new file name",
                        o->output, coz < 0 || coz > 0 ? "cannot be written" : "exists and is not a Coz profile");
            return -1;
        }
    } else {
        absolute(o->output, path, sizeof path);
        char *slash = strrchr(path, '/');
        if (slash == path) slash[1] = '\0';
        else *slash = '\0';
        if (cli_check_output_dir(path, true, err, sizeof err) != 0) {
            usage_error("--output '%s': %s; give a writable directory for the profile", o->output, err);
            return -1;
        }
    }
    absolute(o->dir ? o->dir : ".", path, sizeof path);
    if (cli_check_output_dir(path, true, err, sizeof err) != 0) {
        usage_error("--output-directory '%s': %s; give a writable directory that exists or can be created",
                    o->dir ? o->dir : ".", err);
        return -1;
    }
    return 0;
}

static int causal_main(causal_opts *o, int argc, char **argv)
{
    int prc = parse(o, argc, argv);
    if (prc != 0) return prc > 0 ? 0 : EXIT_USAGE;
    if (!o->output) o->output = "profile.coz";
    if (check_outputs(o) != 0) return EXIT_USAGE;
    char prog_path[PATH_MAX];
    if (run_resolve_program(o->program[0], prog_path, sizeof prog_path) != 0) {
        usage_error("cannot run '%s': %s", o->program[0],
                    strchr(o->program[0], '/') ? "no such executable file" : "not found in PATH");
        return EXIT_USAGE;
    }
    char manifest[PATH_MAX];
    int rc = setup_environment(o, manifest, sizeof manifest);
    if (rc != 0) return rc;
    char **dbs = NULL;
    int ndb = 0, cap = 0, status = 0;
    uint64_t total = 0;
    for (long run = 0; run < o->runs; run++) {
        truncate(manifest, 0);
        int start_db = ndb;
        status = run_child(prog_path, o->program); /* signals forwarded, dies with the runner */
        if (status < 0) {
            status = 1;
            break;
        }
        read_manifest(manifest, &dbs, &ndb, &cap);
#ifdef OMNIPROF_HAVE_OUTPUT
        uint64_t n = 0;
        char err[1024] = "";
        if (ndb > start_db &&
            op_causal_coz_append((const char *const *)&dbs[start_db], (size_t)(ndb - start_db), o->output, &n, err,
                                 sizeof err) != 0)
            fprintf(stderr, "omniprof causal: %s\n", err);
        total += n;
        fprintf(stderr, "omniprof causal: run %ld of %ld: %llu experiments appended to %s\n", run + 1, o->runs,
                (unsigned long long)n, o->output);
        if (n == 0 && ndb > start_db && status == 0)
            fprintf(stderr, "omniprof causal: no experiment ran: no progress point was visited, or no sample "
                            "landed in the code that may be selected (a line shorter than the sampling period "
                            "is rarely sampled: use --mode function, or a shorter --sample-period-us; the "
                            "program's messages above say which)\n");
#endif
        if (ndb == start_db) fprintf(stderr, "omniprof causal: run %ld wrote no database\n", run + 1);
        if (status != 0) {
            fprintf(stderr, "omniprof causal: the program exited with status %d; no more runs\n", status);
            break;
        }
    }
    unlink(manifest);
#ifdef OMNIPROF_HAVE_OUTPUT
    if (!o->quiet && ndb > 0) {
        char err[1024] = "";
        fprintf(stderr, "\nOMNIPROF CAUSAL PROFILE (%llu experiments, %s):\n\n", (unsigned long long)total, o->output);
        if (op_causal_summary_write((const char *const *)dbs, (size_t)ndb, stderr, NULL, err, sizeof err) != 0)
            fprintf(stderr, "omniprof causal: %s\n", err);
    }
#endif
    for (int i = 0; i < ndb; i++) free(dbs[i]);
    free(dbs);
    return status;
}

int op_cmd_causal(int argc, char **argv)
{
    causal_opts o;
    memset(&o, 0, sizeof o);
    o.runs = 1;
    int rc = causal_main(&o, argc, argv);
    for (int i = 0; i < o.n_env; i++) free(o.env[i]);
    return rc;
}
