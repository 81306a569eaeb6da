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
#include <getopt.h>
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

static void print_help(FILE *out)
{
    fputs("usage: omniprof causal [options] -- PROGRAM [ARGS...]\n"
          "\n"
          "Causal profiling (Coz's virtual speedups): each experiment makes one line (or function) of the\n"
          "program virtually faster by pausing the other threads, and measures how fast the program's progress\n"
          "points advance. Progress points: COZ_PROGRESS / COZ_PROGRESS_NAMED / COZ_BEGIN+COZ_END (coz.h, the\n"
          "program runs unchanged), omniprof_progress*() of the user API, user-API and NVTX range starts, or\n"
          "--end-to-end. Experiments go to each process's database and are appended to a Coz profile.\n"
          "\n"
          "  -n, --runs N              run the program N times (default 1)\n"
          "  -s, --speedups LIST       line speedups to draw from, percent: '0,0,25,50,75,100'\n"
          "                            (default: 0..100 in steps of 5, a quarter of the draws at 0)\n"
          "  -m, --mode line|function  what an experiment speeds up (default line: needs -g)\n"
          "  -e, --end-to-end          one experiment per run, measured by the run's duration\n"
          "  -l, --fixed-line SPEC     always select FILE:LINE (a path suffix) or, in function mode, a function\n"
          "  -b, --binary-scope RE     binaries whose code may be selected (repeatable; default %MAIN%)\n"
          "  -B, --binary-exclude RE   binaries never selected (repeatable)\n"
          "  -S, --source-scope RE     source files or FILE:LINE that may be selected (repeatable; default all)\n"
          "      --source-exclude RE   (repeatable)\n"
          "  -F, --function-scope RE   functions that may be selected (repeatable; default all)\n"
          "      --function-exclude RE (repeatable)\n"
          "  -o, --output FILE         the Coz profile experiments are appended to (default ./profile.coz)\n"
          "  -d, --output-directory DIR  where the databases go (default: the current directory)\n"
          "  -g, --gpu                 also trace GPU kernels and NVTX ranges (range starts become progress points)\n"
          "      --experiment-ms N     shortest experiment, ms (default 500)\n"
          "      --sample-period-us N  thread CPU time per causal sample, us (default 1000)\n"
          "      --delay S, --duration S  window of the experiments, seconds after start (default: all the run)\n"
          "      --seed N              seed of the draws (default: from the clock)\n"
          "      --backend auto|perf|timer  the sampler (default auto: perf task-clock, else CPU-time timers)\n"
          "      --no-range-progress   range starts are not progress points\n"
          "  -q, --quiet               do not print the causal profile at the end\n"
          "  -h, --help\n"
          "\n"
          "Scopes are POSIX extended regular expressions; several are given by repeating the option.\n"
          "Read the result with `omniprof summary -i DB...` or in Coz's viewer (load profile.coz).\n"
          "Exit status: the program's (128+N if signal N ended it); 2 for bad options (nothing run).\n",
          out);
}

/* OMNIPROF_<bare>=value after validation through the settings registry. */
static int set_env(causal_opts *o, const char *bare, const char *value, const char *option)
{
    char name[128];
    snprintf(name, sizeof name, "OMNIPROF_%s", bare);
    int id = op_setting_find(name);
    char err[512];
    if (id < 0) {
        usage_error("internal: no setting %s", name);
        return -1;
    }
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

enum { O_SOURCE_EXCLUDE = 1000, O_FUNCTION_EXCLUDE, O_EXPERIMENT_MS, O_PERIOD, O_DELAY, O_DURATION, O_SEED, O_BACKEND,
       O_NO_RANGES };

static int parse(causal_opts *o, int argc, char **argv)
{
    static const struct option longs[] = {
        {"runs", required_argument, 0, 'n'},          {"speedups", required_argument, 0, 's'},
        {"mode", required_argument, 0, 'm'},          {"end-to-end", no_argument, 0, 'e'},
        {"fixed-line", required_argument, 0, 'l'},    {"binary-scope", required_argument, 0, 'b'},
        {"binary-exclude", required_argument, 0, 'B'}, {"source-scope", required_argument, 0, 'S'},
        {"source-exclude", required_argument, 0, O_SOURCE_EXCLUDE},
        {"function-scope", required_argument, 0, 'F'},
        {"function-exclude", required_argument, 0, O_FUNCTION_EXCLUDE},
        {"output", required_argument, 0, 'o'},        {"output-directory", required_argument, 0, 'd'},
        {"gpu", no_argument, 0, 'g'},                 {"experiment-ms", required_argument, 0, O_EXPERIMENT_MS},
        {"sample-period-us", required_argument, 0, O_PERIOD}, {"delay", required_argument, 0, O_DELAY},
        {"duration", required_argument, 0, O_DURATION}, {"seed", required_argument, 0, O_SEED},
        {"backend", required_argument, 0, O_BACKEND}, {"no-range-progress", no_argument, 0, O_NO_RANGES},
        {"quiet", no_argument, 0, 'q'},               {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    char *scope[6] = {0}; /* binary in/out, source in/out, function in/out */
    static const char *const scope_setting[6] = {"CAUSAL_BINARY_SCOPE", "CAUSAL_BINARY_EXCLUDE", "CAUSAL_SOURCE_SCOPE",
                                                 "CAUSAL_SOURCE_EXCLUDE", "CAUSAL_FUNCTION_SCOPE",
                                                 "CAUSAL_FUNCTION_EXCLUDE"};
    int bad = 0, c;
    optind = 1;
    opterr = 0;
    while (!bad && (c = getopt_long(argc, argv, "+:n:s:m:el:b:B:S:F:o:d:gqh", longs, NULL)) != -1) {
        const char *v = optarg;
        switch (c) {
        case 'n': {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 100000) {
                usage_error("--runs '%s' is not valid; expected a number of runs from 1 to 100000", v);
                bad = 1;
            }
            o->runs = n;
            break;
        }
        case 's': bad = check_speedups(v) || set_env(o, "CAUSAL_SPEEDUPS", v, "--speedups"); break;
        case 'm': bad = set_env(o, "CAUSAL_MODE", strcmp(v, "func") == 0 ? "function" : v, "--mode"); break;
        case 'e': bad = set_env(o, "CAUSAL_END_TO_END", "true", "--end-to-end"); break;
        case 'l': bad = set_env(o, "CAUSAL_FIXED_LINE", v, "--fixed-line"); break;
        case 'b': bad = add_regex(&scope[0], v, "--binary-scope"); break;
        case 'B': bad = add_regex(&scope[1], v, "--binary-exclude"); break;
        case 'S': bad = add_regex(&scope[2], v, "--source-scope"); break;
        case O_SOURCE_EXCLUDE: bad = add_regex(&scope[3], v, "--source-exclude"); break;
        case 'F': bad = add_regex(&scope[4], v, "--function-scope"); break;
        case O_FUNCTION_EXCLUDE: bad = add_regex(&scope[5], v, "--function-exclude"); break;
        case 'o': o->output = v; break;
        case 'd': o->dir = v; break;
        case 'g': o->gpu = true; break;
        case O_EXPERIMENT_MS: bad = set_env(o, "CAUSAL_EXPERIMENT_MS", v, "--experiment-ms"); break;
        case O_PERIOD: bad = set_env(o, "CAUSAL_SAMPLE_PERIOD_US", v, "--sample-period-us"); break;
        case O_DELAY: bad = set_env(o, "CAUSAL_DELAY", v, "--delay"); break;
        case O_DURATION: bad = set_env(o, "CAUSAL_DURATION", v, "--duration"); break;
        case O_SEED: bad = set_env(o, "CAUSAL_SEED", v, "--seed"); break;
        case O_BACKEND: bad = set_env(o, "CAUSAL_BACKEND", v, "--backend"); break;
        case O_NO_RANGES: bad = set_env(o, "CAUSAL_RANGE_PROGRESS", "false", "--no-range-progress"); break;
        case 'q': o->quiet = true; break;
        case 'h': print_help(stdout); return 1;
        case ':': usage_error("%s needs a value (see `omniprof causal --help`)", argv[optind - 1]); bad = 1; break;
        default: usage_error("unknown option '%s' (see `omniprof causal --help`)", argv[optind - 1]); bad = 1; break;
        }
    }
    for (int i = 0; i < 6 && !bad; i++)
        if (scope[i]) bad = set_env(o, scope_setting[i], scope[i], "scope");
    for (int i = 0; i < 6; i++) free(scope[i]);
    if (bad) return -1;
    if (optind < argc && strcmp(argv[optind], "--") == 0) optind++;
    if (optind >= argc) {
        usage_error("no program to run; usage: omniprof causal [options] -- PROGRAM [ARGS...]");
        return -1;
    }
    o->program = &argv[optind];
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
    const char *tmp = getenv("TMPDIR");
    snprintf(manifest, manifest_len, "%s/omniprof-causal-%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    int fd = mkstemp(manifest);
    if (fd < 0) {
        fprintf(stderr, "omniprof causal: cannot create a run manifest in %s: %s\n", tmp && *tmp ? tmp : "/tmp",
                strerror(errno));
        return 1;
    }
    close(fd);
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
