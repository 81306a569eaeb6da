/* cmd_run.c — `omniprof run [options] -- program [args]`: the tracer launcher (rocprofv3's
 * options and behavior, ref/rocprofiler-sdk.md §5), and `omniprof sample` (= run --sample --summary).
 *
 * What it does, in order:
 *  1. Parse the command line into `run_opts` (one slot per option of g_options), then merge
 *     the options of `-i FILE.json`; a value given both ways differently is an error.
 *  2. Check every value (the settings registry validates each OMNIPROF_* value; regexes are
 *     compiled; output templates are expanded; the output directory's process-independent part
 *     is created and a file is written in it; the program is found on PATH; the libraries to
 *     preload exist). Any failure prints one message naming the input and what would be valid,
 *     and returns 2: the program is not run with a broken configuration.
 *  3. Build the environment: OMNIPROF_* for the tool, LD_PRELOAD = --preload libraries, then
 *     libomniprof-tool.so and libomniprof-sdk.so (and the CPU backend when a CPU feature is
 *     asked for), found in ../lib beside this binary, then the LD_PRELOAD already set.
 *  4. Without post-run work, exec the program: its exit status is then the program's own.
 *     With post-run work (--stats, --summary, a non-rocpd format), fork+exec it, forward
 *     SIGINT/SIGTERM/SIGQUIT/SIGHUP sent to the launcher by another process (a terminal's ^C
 *     already reaches the whole process group), wait, convert the databases listed in the
 *     run manifest (OMNIPROF_RUN_MANIFEST: each traced process appends the path of the
 *     database it wrote), and return the program's status (128+N if signal N ended it).
 * docs/run.md describes the options and this choice for users. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/path_template.h"
#include "common/settings.h"
#include "omniprof/defines.h"

#ifdef OMNIPROF_HAVE_OUTPUT
#include "output/output.h"
#endif

extern char **environ;

#define EXIT_USAGE 2

/* ------------------------------------------------------------------------------------------ */
/* The options.                                                                                */

typedef enum opt_kind {
    K_BOOL,   /* --x, --x=true|false */
    K_VALUE,  /* --x V, --x=V, -c V, -cV */
    K_MULTI,  /* --x V1 V2 ... (until the next token starting with '-'); may repeat */
    K_OPTVAL, /* --x [V]: V consumed only if it is one of the option's optional words */
} opt_kind;

enum {
    O_KERNEL_TRACE,
    O_MEMORY_COPY_TRACE,
    O_MEMORY_SET_TRACE,
    O_MEMORY_ALLOCATION_TRACE,
    O_MARKER_TRACE,
    O_CUDA_RUNTIME_TRACE,
    O_CUDA_DRIVER_TRACE,
    O_SYNC_TRACE,
    O_RUNTIME_TRACE,
    O_SYS_TRACE,
    O_PMC,
    O_EXTRA_METRICS,
    O_KERNEL_ITERATION_RANGE,
    O_SAMPLE,
    O_SAMPLING_FREQ,
    O_PROCESS_SAMPLING,
    O_OUTPUT_DIRECTORY,
    O_OUTPUT_FILE,
    O_OUTPUT_FORMAT,
    O_STATS,
    O_SUMMARY,
    O_SUMMARY_OUTPUT_FILE,
    O_SUMMARY_UNITS,
    O_KERNEL_INCLUDE_REGEX,
    O_KERNEL_EXCLUDE_REGEX,
    O_COLLECTION_PERIOD,
    O_COLLECTION_PERIOD_UNIT,
    O_FLUSH_INTERVAL,
    O_MANGLED_KERNELS,
    O_TRUNCATE_KERNELS,
    O_PRELOAD,
    O_LOG_LEVEL,
    O_DISABLE_SIGNAL_HANDLERS,
    O_ECHO,
    O_INPUT,
    O_HELP,
    O__COUNT
};

typedef struct run_option {
    int id;
    const char *long_name;
    char short_name;
    opt_kind kind;
    const char *metavar;
    const char *optional_words; /* K_OPTVAL: '|'-separated words it may take; "#" = a number */
    const char *group;          /* help section, printed when it changes */
    const char *help;
} run_option;

static const run_option g_options[] = {
    {O_KERNEL_TRACE, "kernel-trace", 0, K_BOOL, NULL, NULL, "Tracing", "GPU kernel dispatches"},
    {O_MEMORY_COPY_TRACE, "memory-copy-trace", 0, K_BOOL, NULL, NULL, NULL, "GPU memory copies"},
    {O_MEMORY_SET_TRACE, "memory-set-trace", 0, K_BOOL, NULL, NULL, NULL, "GPU memory sets (memset)"},
    {O_MEMORY_ALLOCATION_TRACE, "memory-allocation-trace", 0, K_BOOL, NULL, NULL, NULL,
     "GPU memory allocations and frees"},
    {O_MARKER_TRACE, "marker-trace", 0, K_BOOL, NULL, NULL, NULL, "user-API (omniprof_range_push...) and NVTX markers"},
    {O_CUDA_RUNTIME_TRACE, "cuda-runtime-trace", 0, K_BOOL, NULL, NULL, NULL, "CUDA runtime API calls"},
    {O_CUDA_DRIVER_TRACE, "cuda-driver-trace", 0, K_BOOL, NULL, NULL, NULL, "CUDA driver API calls"},
    {O_SYNC_TRACE, "sync-trace", 0, K_BOOL, NULL, NULL, NULL, "GPU synchronization waits (stream, event, device)"},
    {O_RUNTIME_TRACE, "runtime-trace", 'r', K_BOOL, NULL, NULL, NULL,
     "= --cuda-runtime-trace --kernel-trace --memory-copy-trace --memory-set-trace "
     "--memory-allocation-trace --marker-trace"},
    {O_SYS_TRACE, "sys-trace", 's', K_BOOL, NULL, NULL, NULL, "= --runtime-trace --cuda-driver-trace --sync-trace"},
    {O_PMC, "pmc", 0, K_MULTI, "COUNTER...", NULL, "Counters and CPU sampling",
     "hardware counters per kernel dispatch (`omniprof avail --counters`); repeat --pmc to run the "
     "program once per group"},
    {O_EXTRA_METRICS, "extra-metrics", 0, K_VALUE, "FILE.xml", NULL, NULL,
     "add or override metric definitions (':'-separated files)"},
    {O_KERNEL_ITERATION_RANGE, "kernel-iteration-range", 0, K_VALUE, "RANGE", NULL, NULL,
     "which launches of each kernel are counted, 1-based: '[1, [3-5]]' or '1,3-5'"},
    {O_SAMPLE, "sample", 0, K_OPTVAL, "[cputime|realtime]", "cputime|realtime", NULL,
     "call-stack sampling on the thread CPU-time (default) or wall clock"},
    {O_SAMPLING_FREQ, "sampling-freq", 0, K_VALUE, "HZ", NULL, NULL, "samples per second per thread (default 300)"},
    {O_PROCESS_SAMPLING, "process-sampling", 0, K_OPTVAL, "[INTERVAL_SEC]", "#", NULL,
     "sample process metrics (RSS, CPU time, faults, frequencies) every INTERVAL_SEC (default 0.1)"},
    {O_OUTPUT_DIRECTORY, "output-directory", 'd', K_VALUE, "DIR", NULL, "Output",
     "output directory (default: the current directory); placeholders allowed"},
    {O_OUTPUT_FILE, "output-file", 'o', K_VALUE, "NAME", NULL, NULL,
     "file name prefix (default %hostname%/%pid%); the database is DIR/NAME_results.db"},
    {O_OUTPUT_FORMAT, "output-format", 'f', K_MULTI, "FORMAT...", NULL, NULL,
     "rocpd (default), pftrace, json, csv, folded; several allowed; non-rocpd formats are converted after the run"},
    {O_STATS, "stats", 0, K_BOOL, NULL, NULL, NULL, "after the run, write DIR/NAME_<domain>_stats.csv"},
    {O_SUMMARY, "summary", 'S', K_BOOL, NULL, NULL, NULL, "after the run, print summary tables"},
    {O_SUMMARY_OUTPUT_FILE, "summary-output-file", 0, K_VALUE, "FILE", NULL, NULL,
     "where the summary goes: stdout, stderr (default) or a file"},
    {O_SUMMARY_UNITS, "summary-units", 'u', K_VALUE, "UNIT", NULL, NULL, "sec, msec, usec or nsec (default)"},
    {O_KERNEL_INCLUDE_REGEX, "kernel-include-regex", 0, K_VALUE, "REGEX", NULL, "Filtering and control",
     "count only kernels whose name matches (POSIX extended regex; counters)"},
    {O_KERNEL_EXCLUDE_REGEX, "kernel-exclude-regex", 0, K_VALUE, "REGEX", NULL, NULL,
     "do not count kernels whose name matches"},
    {O_COLLECTION_PERIOD, "collection-period", 'P', K_MULTI, "DELAY:DURATION:REPEAT...", NULL, NULL,
     "collect only in these windows (REPEAT 0 = forever)"},
    {O_COLLECTION_PERIOD_UNIT, "collection-period-unit", 0, K_VALUE, "UNIT", NULL, NULL,
     "unit of --collection-period: hour, min, sec (default), msec, usec, nsec"},
    {O_FLUSH_INTERVAL, "flush-interval", 0, K_VALUE, "MSEC", NULL, NULL,
     "flush buffers and database every MSEC milliseconds (default 1000; 0 = only at exit)"},
    {O_MANGLED_KERNELS, "mangled-kernels", 'M', K_BOOL, NULL, NULL, NULL, "keep kernel names mangled"},
    {O_TRUNCATE_KERNELS, "truncate-kernels", 'T', K_BOOL, NULL, NULL, NULL,
     "truncate kernel names to the function name (no arguments, templates)"},
    {O_PRELOAD, "preload", 0, K_MULTI, "LIB...", NULL, "Advanced", "libraries to put into LD_PRELOAD before omniprof's"},
    {O_LOG_LEVEL, "log-level", 0, K_VALUE, "LEVEL", NULL, NULL, "fatal, error, warning (default), info, trace"},
    {O_DISABLE_SIGNAL_HANDLERS, "disable-signal-handlers", 0, K_BOOL, NULL, NULL, NULL,
     "do not flush on SIGINT/SIGTERM/SIGQUIT/SIGABRT"},
    {O_ECHO, "echo", 0, K_BOOL, NULL, NULL, NULL, "print the environment and command to stderr, then run"},
    {O_INPUT, "input", 'i', K_VALUE, "FILE.json", NULL, NULL,
     "read options from a JSON object (keys: long option names, '-' or '_')"},
    {O_HELP, "help", 'h', K_BOOL, NULL, NULL, NULL, "show this help"},
};

#define N_OPTIONS ((int)(sizeof(g_options) / sizeof(g_options[0])))

typedef struct run_opts {
    char *value[O__COUNT]; /* normalized text: "true"/"false" for booleans; multi: space-joined */
    bool set[O__COUNT];
    char **program; /* argv of the program (points into the command line) */
    int program_argc;
} run_opts;

static const run_option *find_long(const char *name, size_t n)
{
    for (int i = 0; i < N_OPTIONS; i++)
        if (strlen(g_options[i].long_name) == n && strncmp(g_options[i].long_name, name, n) == 0) return &g_options[i];
    return NULL;
}

static const run_option *find_short(char c)
{
    for (int i = 0; i < N_OPTIONS && c; i++)
        if (g_options[i].short_name == c) return &g_options[i];
    return NULL;
}

static const run_option *option_by_id(int id)
{
    for (int i = 0; i < N_OPTIONS; i++)
        if (g_options[i].id == id) return &g_options[i];
    return NULL;
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("omniprof run: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
}

/* Does `word` appear in the '|'-separated list? "#" in the list accepts any number. */
static bool word_in(const char *list, const char *word)
{
    if (!list || !word) return false;
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, "|");
        if (len == 1 && *p == '#') {
            char *end;
            errno = 0;
            double d = strtod(word, &end);
            (void)d;
            if (*word && *end == '\0' && errno == 0) return true;
        } else if (len == n && strncmp(p, word, n) == 0) {
            return true;
        }
        p += len;
        if (*p == '|') p++;
    }
    return false;
}

static char *xstrdup(const char *s)
{
    char *p = strdup(s ? s : "");
    if (!p) {
        fputs("omniprof run: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

static void append_word(char **dst, const char *word)
{
    if (!*dst || !**dst) {
        free(*dst);
        *dst = xstrdup(word);
        return;
    }
    size_t a = strlen(*dst), b = strlen(word);
    char *p = realloc(*dst, a + b + 2);
    if (!p) {
        fputs("omniprof run: out of memory\n", stderr);
        exit(1);
    }
    p[a] = ' ';
    memcpy(p + a + 1, word, b + 1);
    *dst = p;
}

/* Store one value of option `o` given on the command line. Returns 0 or -1 (message printed). */
static int store(run_opts *ro, const run_option *o, const char *value, const char *spelled)
{
    if (o->kind == K_BOOL) {
        bool b = true;
        if (value && op_parse_bool(value, &b) != 0) {
            usage_error("%s='%s' is not valid; expected true or false", spelled, value);
            return -1;
        }
        free(ro->value[o->id]);
        ro->value[o->id] = xstrdup(b ? "true" : "false");
    } else if (o->kind == K_MULTI) {
        append_word(&ro->value[o->id], value);
    } else {
        free(ro->value[o->id]);
        ro->value[o->id] = xstrdup(value ? value : "");
    }
    ro->set[o->id] = true;
    return 0;
}

/* Parse argv (argv[0] is "run"). Returns 0, or -1 after printing an error. */
static int parse_command_line(run_opts *ro, int argc, char **argv)
{
    int i = 1;
    while (i < argc) {
        char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0') break; /* the program */
        const run_option *o;
        const char *inline_value = NULL;
        char spelled[128];
        if (a[1] == '-') {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t n = eq ? (size_t)(eq - name) : strlen(name);
            o = find_long(name, n);
            snprintf(spelled, sizeof(spelled), "--%.*s", (int)n, name);
            if (!o) {
                usage_error("unknown option '%s'; see `omniprof run --help` for the valid options", spelled);
                return -1;
            }
            if (eq) inline_value = eq + 1;
        } else {
            o = find_short(a[1]);
            snprintf(spelled, sizeof(spelled), "-%c", a[1]);
            if (!o) {
                usage_error("unknown option '%s'; see `omniprof run --help` for the valid options", a);
                return -1;
            }
            if (a[2] == '=') inline_value = a + 3;
            else if (a[2]) {
                if (o->kind == K_BOOL) {
                    usage_error("option '%s' takes no value (in '%s')", spelled, a);
                    return -1;
                }
                inline_value = a + 2;
            }
        }
        i++;
        switch (o->kind) {
        case K_BOOL:
            if (store(ro, o, inline_value, spelled) != 0) return -1;
            break;
        case K_VALUE:
            if (!inline_value) {
                if (i >= argc || strcmp(argv[i], "--") == 0) {
                    usage_error("option '%s' needs a value: %s", spelled, o->metavar);
                    return -1;
                }
                inline_value = argv[i++];
            }
            if (store(ro, o, inline_value, spelled) != 0) return -1;
            break;
        case K_MULTI: {
            int n = 0;
            /* A repeated --pmc starts a new group: the program runs once per group. */
            if (o->id == O_PMC && ro->set[O_PMC]) store(ro, o, ";", spelled);
            if (inline_value) {
                store(ro, o, inline_value, spelled);
                n++;
            }
            while (i < argc && argv[i][0] != '-') {
                store(ro, o, argv[i++], spelled);
                n++;
            }
            if (n == 0) {
                usage_error("option '%s' needs at least one value: %s", spelled, o->metavar);
                return -1;
            }
            break;
        }
        case K_OPTVAL:
            if (!inline_value && i < argc && word_in(o->optional_words, argv[i])) inline_value = argv[i++];
            if (inline_value && !word_in(o->optional_words, inline_value)) {
                usage_error("%s='%s' is not valid; expected %s", spelled, inline_value, o->metavar);
                return -1;
            }
            free(ro->value[o->id]);
            ro->value[o->id] = xstrdup(inline_value ? inline_value : "");
            ro->set[o->id] = true;
            break;
        }
    }
    ro->program = argv + i;
    ro->program_argc = argc - i;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* -i FILE.json: a small JSON reader (objects, arrays, strings, numbers, true/false/null).     */

typedef struct jreader {
    const char *p, *start;
    const char *file;
    char err[256];
} jreader;

static void jskip(jreader *j)
{
    while (*j->p && isspace((unsigned char)*j->p)) j->p++;
}

static int jfail(jreader *j, const char *what)
{
    if (!j->err[0])
        snprintf(j->err, sizeof(j->err), "%s: %s at byte %ld", j->file, what, (long)(j->p - j->start));
    return -1;
}

/* Parses a JSON string at j->p into a malloc'd UTF-8 string. */
static int jstring(jreader *j, char **out)
{
    if (*j->p != '"') return jfail(j, "expected a string");
    j->p++;
    size_t cap = 64, len = 0;
    char *s = malloc(cap);
    if (!s) return jfail(j, "out of memory");
    while (*j->p && *j->p != '"') {
        char c = *j->p++;
        if (c == '\\') {
            char e = *j->p++;
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case '"': case '\\': case '/': c = e; break;
            case 'u': {
                unsigned v = 0;
                for (int k = 0; k < 4; k++) {
                    char h = *j->p++;
                    v <<= 4;
                    if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
                    else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
                    else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
                    else { free(s); return jfail(j, "bad \\u escape"); }
                }
                char u[4];
                int un = 0;
                if (v < 0x80) u[un++] = (char)v;
                else if (v < 0x800) { u[un++] = (char)(0xC0 | (v >> 6)); u[un++] = (char)(0x80 | (v & 0x3F)); }
                else { u[un++] = (char)(0xE0 | (v >> 12)); u[un++] = (char)(0x80 | ((v >> 6) & 0x3F)); u[un++] = (char)(0x80 | (v & 0x3F)); }
                for (int k = 0; k < un; k++) {
                    if (len + 2 > cap) { cap *= 2; char *t = realloc(s, cap); if (!t) { free(s); return jfail(j, "out of memory"); } s = t; }
                    s[len++] = u[k];
                }
                continue;
            }
            default: free(s); return jfail(j, "bad escape in string");
            }
        }
        if (len + 2 > cap) {
            cap *= 2;
            char *t = realloc(s, cap);
            if (!t) { free(s); return jfail(j, "out of memory"); }
            s = t;
        }
        s[len++] = c;
    }
    if (*j->p != '"') { free(s); return jfail(j, "unterminated string"); }
    j->p++;
    s[len] = '\0';
    *out = s;
    return 0;
}

/* A scalar as text: strings as they are, numbers as written, true/false. Arrays: words joined
 * by spaces (nested arrays are an error). NULL value → *out = NULL. */
static int jvalue_text(jreader *j, char **out, bool *is_bool)
{
    jskip(j);
    *out = NULL;
    *is_bool = false;
    if (*j->p == '"') return jstring(j, out);
    if (strncmp(j->p, "true", 4) == 0) { j->p += 4; *out = xstrdup("true"); *is_bool = true; return 0; }
    if (strncmp(j->p, "false", 5) == 0) { j->p += 5; *out = xstrdup("false"); *is_bool = true; return 0; }
    if (strncmp(j->p, "null", 4) == 0) { j->p += 4; return 0; }
    if (*j->p == '-' || isdigit((unsigned char)*j->p)) {
        const char *s = j->p;
        while (*j->p && strchr("+-.eE0123456789", *j->p)) j->p++;
        *out = strndup(s, (size_t)(j->p - s));
        return *out ? 0 : jfail(j, "out of memory");
    }
    if (*j->p == '[') {
        j->p++;
        char *acc = NULL;
        jskip(j);
        if (*j->p == ']') { j->p++; *out = xstrdup(""); return 0; }
        for (;;) {
            char *item;
            bool b;
            jskip(j);
            if (*j->p == '[' || *j->p == '{') { free(acc); return jfail(j, "nested arrays/objects are not options"); }
            if (jvalue_text(j, &item, &b) != 0) { free(acc); return -1; }
            if (item) append_word(&acc, item);
            free(item);
            jskip(j);
            if (*j->p == ',') { j->p++; continue; }
            if (*j->p == ']') { j->p++; break; }
            free(acc);
            return jfail(j, "expected ',' or ']'");
        }
        *out = acc ? acc : xstrdup("");
        return 0;
    }
    return jfail(j, "expected a value");
}

/* Are two option texts the same value? Booleans compare by meaning, lists word by word. */
static bool same_value(const run_option *o, const char *a, const char *b)
{
    if (o->kind == K_BOOL) {
        bool x, y;
        return op_parse_bool(a, &x) == 0 && op_parse_bool(b, &y) == 0 && x == y;
    }
    return strcmp(a, b) == 0;
}

/* Merge the options of the JSON object at j->p (one job). */
static int json_merge_object(jreader *j, run_opts *ro)
{
    jskip(j);
    if (*j->p != '{') return jfail(j, "expected an object");
    j->p++;
    jskip(j);
    if (*j->p == '}') { j->p++; return 0; }
    for (;;) {
        char *key;
        jskip(j);
        if (jstring(j, &key) != 0) return -1;
        jskip(j);
        if (*j->p != ':') { free(key); return jfail(j, "expected ':'"); }
        j->p++;
        jskip(j);
        if (strcmp(key, "jobs") == 0) {
            /* rocprofv3's {"jobs": [ {...} ]}: one job is supported. */
            if (*j->p != '[') { free(key); return jfail(j, "\"jobs\" must be an array of objects"); }
            j->p++;
            jskip(j);
            int njobs = 0;
            while (*j->p != ']') {
                if (++njobs > 1) { free(key); return jfail(j, "more than one job in \"jobs\" (only one is supported)"); }
                if (json_merge_object(j, ro) != 0) { free(key); return -1; }
                jskip(j);
                if (*j->p == ',') { j->p++; jskip(j); }
                else if (*j->p != ']') { free(key); return jfail(j, "expected ',' or ']'"); }
            }
            j->p++;
            free(key);
        } else {
            char name[128];
            snprintf(name, sizeof(name), "%s", key);
            for (char *c = name; *c; c++)
                if (*c == '_') *c = '-';
            const run_option *o = find_long(name, strlen(name));
            if (!o || o->id == O_INPUT || o->id == O_HELP) {
                snprintf(j->err, sizeof(j->err),
                         "%s: unknown option \"%s\"; keys are the long option names of `omniprof run --help` "
                         "(e.g. \"kernel_trace\", \"output_directory\")",
                         j->file, key);
                free(key);
                return -1;
            }
            char *text;
            bool is_bool;
            if (jvalue_text(j, &text, &is_bool) != 0) { free(key); return -1; }
            free(key);
            if (!text) continue; /* null: not set */
            if (o->kind == K_BOOL) {
                bool b;
                if (op_parse_bool(text, &b) != 0) {
                    snprintf(j->err, sizeof(j->err), "%s: \"%s\" must be true or false, not '%s'", j->file,
                             o->long_name, text);
                    free(text);
                    return -1;
                }
                free(text);
                text = xstrdup(b ? "true" : "false");
            }
            if (ro->set[o->id]) {
                if (!same_value(o, ro->value[o->id], text)) {
                    snprintf(j->err, sizeof(j->err),
                             "--%s is '%s' on the command line but '%s' in %s; give it in one place only",
                             o->long_name, ro->value[o->id], text, j->file);
                    free(text);
                    return -1;
                }
                free(text);
            } else {
                ro->value[o->id] = text;
                ro->set[o->id] = true;
            }
        }
        jskip(j);
        if (*j->p == ',') { j->p++; continue; }
        if (*j->p == '}') { j->p++; return 0; }
        return jfail(j, "expected ',' or '}'");
    }
}

static int load_json_input(run_opts *ro, const char *file)
{
    FILE *f = fopen(file, "r");
    if (!f) {
        usage_error("-i %s: cannot open: %s", file, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) break;
        if (len + 1 >= cap) {
            if (cap > (64u << 20)) break;
            cap *= 2;
            char *t = realloc(buf, cap);
            if (!t) { free(buf); buf = NULL; break; }
            buf = t;
        }
    }
    fclose(f);
    if (!buf) {
        usage_error("-i %s: out of memory", file);
        return -1;
    }
    buf[len] = '\0';
    jreader j = {buf, buf, file, {0}};
    int rc = json_merge_object(&j, ro);
    if (rc == 0) {
        jskip(&j);
        if (*j.p) rc = jfail(&j, "text after the JSON object");
    }
    if (rc != 0) usage_error("-i %s", j.err);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Building the environment.                                                                   */

typedef struct env_list {
    char **items; /* "NAME=VALUE", malloc'd */
    int n, cap;
} env_list;

static void env_add(env_list *e, const char *name, const char *value)
{
    size_t nl = strlen(name);
    for (int i = 0; i < e->n; i++) {
        if (strncmp(e->items[i], name, nl) == 0 && e->items[i][nl] == '=') {
            free(e->items[i]);
            e->items[i] = NULL;
            for (int k = i; k + 1 < e->n; k++) e->items[k] = e->items[k + 1];
            e->n--;
            break;
        }
    }
    if (e->n + 1 >= e->cap) {
        e->cap = e->cap ? e->cap * 2 : 64;
        e->items = realloc(e->items, (size_t)e->cap * sizeof(char *));
        if (!e->items) {
            fputs("omniprof run: out of memory\n", stderr);
            exit(1);
        }
    }
    size_t len = nl + strlen(value) + 2;
    char *s = malloc(len);
    if (!s) exit(1);
    snprintf(s, len, "%s=%s", name, value);
    e->items[e->n++] = s;
}

/* Set OMNIPROF_<id> after validating it through the registry. Returns 0 or -1 (printed). */
static int set_setting(env_list *e, const char *bare, const char *value, const char *from_option)
{
    char name[128];
    snprintf(name, sizeof(name), "OMNIPROF_%s", bare);
    int id = op_setting_find(name);
    if (id >= 0) {
        char err[512];
        if (op_setting_validate((op_setting_id)id, value, err, sizeof(err)) != 0) {
            if (from_option) usage_error("%s: %s", from_option, err);
            else usage_error("%s", err);
            return -1;
        }
    }
    env_add(e, name, value);
    return 0;
}

static bool opt_true(const run_opts *ro, int id)
{
    bool b = false;
    return ro->set[id] && ro->value[id] && op_parse_bool(ro->value[id], &b) == 0 && b;
}

/* Directory of this binary's libraries: <dir of /proc/self/exe>/../lib. */
static int lib_dir(char *out, size_t outlen)
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
        if (i == 0) continue; /* keep ../lib as the answer unless another holds the tool */
    }
    return out[0] ? 0 : -1;
}

static bool file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Find `prog` as execvp would. Returns 0 and the path, or -1. */
static int resolve_program(const char *prog, char *out, size_t outlen)
{
    if (strchr(prog, '/')) {
        if (access(prog, X_OK) != 0 || !file_exists(prog)) return -1;
        snprintf(out, outlen, "%s", prog);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, ":");
        char cand[PATH_MAX];
        snprintf(cand, sizeof(cand), "%.*s/%s", (int)(len ? len : 1), len ? p : ".", prog);
        if (access(cand, X_OK) == 0 && file_exists(cand)) {
            snprintf(out, outlen, "%s", cand);
            return 0;
        }
        p += len;
        if (*p == ':') p++;
    }
    return -1;
}

/* "D:D:R D:D:R" in `unit` → "d:d:r;d:d:r" in ns. Returns 0 or -1 (printed). */
static int convert_periods(const char *text, const char *unit, char *out, size_t outlen)
{
    static const struct { const char *name; double ns; } units[] = {
        {"hour", 3600e9}, {"min", 60e9}, {"sec", 1e9}, {"msec", 1e6}, {"usec", 1e3}, {"nsec", 1}};
    double scale = 0;
    for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
        if (strcmp(unit, units[k].name) == 0) scale = units[k].ns;
    if (scale == 0) {
        usage_error("--collection-period-unit='%s' is not valid; expected hour, min, sec, msec, usec or nsec", unit);
        return -1;
    }
    out[0] = '\0';
    size_t used = 0;
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == ';' || *p == ',') p++;
        if (!*p) break;
        size_t len = strcspn(p, " ;,");
        char item[128];
        snprintf(item, sizeof(item), "%.*s", (int)(len < 127 ? len : 127), p);
        double d[3];
        char *s = item, *end;
        int k;
        for (k = 0; k < 3; k++) {
            errno = 0;
            d[k] = strtod(s, &end);
            if (end == s || errno || d[k] < 0) break;
            if (k < 2) {
                if (*end != ':') break;
                s = end + 1;
            } else if (*end != '\0') {
                break;
            }
        }
        if (k < 3 || d[2] != (double)(uint64_t)d[2]) {
            usage_error("--collection-period '%s' is not valid; expected DELAY:DURATION:REPEAT with non-negative "
                        "numbers and an integer REPEAT (0 = forever), e.g. 1:2:0",
                        item);
            return -1;
        }
        if (d[1] <= 0) {
            usage_error("--collection-period '%s': DURATION must be greater than 0", item);
            return -1;
        }
        int w = snprintf(out + used, outlen - used, "%s%llu:%llu:%llu", used ? ";" : "",
                         (unsigned long long)(d[0] * scale), (unsigned long long)(d[1] * scale),
                         (unsigned long long)d[2]);
        if (w < 0 || (size_t)w >= outlen - used) {
            usage_error("--collection-period: too many periods");
            return -1;
        }
        used += (size_t)w;
        p += len;
    }
    if (used == 0) {
        usage_error("--collection-period needs DELAY:DURATION:REPEAT");
        return -1;
    }
    return 0;
}

/* The output directory: expand the template in this process, make it absolute, create its
 * process-independent leading part and check that a file can be created there. */
static int check_output(const char *dir_tmpl, const char *file_tmpl, const op_path_context *ctx, char *abs_tmpl,
                        size_t abs_len)
{
    char err[1024], expanded[4096];
    if (op_path_expand(dir_tmpl, ctx, expanded, sizeof(expanded), err, sizeof(err)) != 0) {
        usage_error("--output-directory '%s': %s", dir_tmpl, err);
        return -1;
    }
    if (op_path_expand(file_tmpl, ctx, expanded, sizeof(expanded), err, sizeof(err)) != 0) {
        usage_error("--output-file '%s': %s", file_tmpl, err);
        return -1;
    }
    if (!*file_tmpl || file_tmpl[strlen(file_tmpl) - 1] == '/') {
        usage_error("--output-file '%s' is not valid: it must name a file (e.g. %%hostname%%/%%pid%%)", file_tmpl);
        return -1;
    }
    op_path_expand(dir_tmpl, ctx, expanded, sizeof(expanded), err, sizeof(err));
    if (expanded[0] == '\0') {
        usage_error("--output-directory '%s' expands to an empty path", dir_tmpl);
        return -1;
    }
    if (expanded[0] != '/') snprintf(abs_tmpl, abs_len, "%s/%s", ctx->cwd, dir_tmpl);
    else snprintf(abs_tmpl, abs_len, "%s", dir_tmpl);

    /* The leading components without per-process keys. */
    char prefix_tmpl[8448];
    snprintf(prefix_tmpl, sizeof(prefix_tmpl), "%s", abs_tmpl);
    if (op_path_has_process_keys(prefix_tmpl)) {
        char *cut = prefix_tmpl;
        for (char *slash = strchr(prefix_tmpl + 1, '/');; slash = strchr(slash + 1, '/')) {
            char saved = slash ? *slash : '\0';
            if (slash) *slash = '\0';
            bool has = op_path_has_process_keys(prefix_tmpl);
            if (slash) *slash = saved;
            if (has) break;
            cut = slash ? slash : prefix_tmpl + strlen(prefix_tmpl);
            if (!slash) break;
        }
        *cut = '\0';
        if (!prefix_tmpl[0]) strcpy(prefix_tmpl, "/");
    }
    char dir[4096];
    if (op_path_expand(prefix_tmpl, ctx, dir, sizeof(dir), err, sizeof(err)) != 0) {
        usage_error("--output-directory '%s': %s", dir_tmpl, err);
        return -1;
    }
    if (op_path_mkdirs(dir, err, sizeof(err)) != 0) {
        usage_error("--output-directory '%s': %s; give a directory that exists or can be created", dir_tmpl, err);
        return -1;
    }
    char probe[4200];
    snprintf(probe, sizeof(probe), "%s/.omniprof-probe-XXXXXX", dir);
    int fd = mkstemp(probe);
    if (fd < 0) {
        usage_error("--output-directory '%s': cannot create files in '%s': %s; give a writable directory", dir_tmpl,
                    dir, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Running.                                                                                    */

static volatile sig_atomic_t g_child_pid;

/* Forward a signal sent to the launcher by another process (kill, a job scheduler). A
 * terminal's ^C (si_code SI_KERNEL) already went to the whole foreground process group. */
static void forward_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    pid_t child = (pid_t)g_child_pid;
    if (child > 0 && (!info || info->si_code != SI_KERNEL)) kill(child, sig);
}

static int status_of(int wstatus)
{
    if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
    return 1;
}

/* Post-run work over the databases in the manifest. */
static int post_run(const run_opts *ro, const char *manifest, bool stats, bool summary, const char *formats)
{
    (void)ro;
    FILE *f = fopen(manifest, "r");
    char **dbs = NULL;
    int ndb = 0, cap = 0;
    if (f) {
        char line[4096];
        while (fgets(line, sizeof(line), f)) {
            line[strcspn(line, "\n")] = '\0';
            if (!line[0]) continue;
            bool dup = false;
            for (int i = 0; i < ndb; i++)
                if (strcmp(dbs[i], line) == 0) dup = true;
            if (dup) continue;
            if (ndb == cap) {
                cap = cap ? cap * 2 : 16;
                char **t = realloc(dbs, (size_t)cap * sizeof(char *));
                if (!t) break;
                dbs = t;
            }
            dbs[ndb++] = xstrdup(line);
        }
        fclose(f);
    }
    int rc = 0;
    if (ndb == 0) {
        fprintf(stderr, "omniprof run: no database was written by the program; nothing to post-process\n");
        rc = 1;
    } else {
#ifdef OMNIPROF_HAVE_OUTPUT
        unsigned fmt = 0;
        for (const char *p = formats; *p;) {
            while (*p == ' ' || *p == ',') p++;
            size_t len = strcspn(p, " ,");
            if (len == 7 && strncmp(p, "pftrace", 7) == 0) fmt |= OP_OUT_FMT_PFTRACE;
            if (len == 4 && strncmp(p, "json", 4) == 0) fmt |= OP_OUT_FMT_JSON;
            if (len == 3 && strncmp(p, "csv", 3) == 0) fmt |= OP_OUT_FMT_CSV;
            if (len == 6 && strncmp(p, "folded", 6) == 0) fmt |= OP_OUT_FMT_FOLDED;
            p += len;
        }
        if (stats) fmt |= OP_OUT_FMT_STATS;
        char err[1024];
        /* Per database (one per process): <dir>/<name>_results.db → <dir>/<name>_<file>. */
        for (int i = 0; fmt && i < ndb; i++) {
            char dir[4096], name[4096];
            snprintf(dir, sizeof(dir), "%s", dbs[i]);
            char *slash = strrchr(dir, '/');
            const char *base = slash ? slash + 1 : dir;
            snprintf(name, sizeof(name), "%s", base);
            size_t nl = strlen(name);
            if (nl > 11 && strcmp(name + nl - 11, "_results.db") == 0) name[nl - 11] = '\0';
            if (slash) *slash = '\0';
            else strcpy(dir, ".");
            op_out_options oo;
            memset(&oo, 0, sizeof(oo));
            oo.size = sizeof(oo);
            const char *in[1] = {dbs[i]};
            oo.inputs = in;
            oo.n_inputs = 1;
            oo.formats = fmt;
            oo.out_dir = dir;
            oo.out_name = name;
            oo.window.size = sizeof(oo.window);
            oo.progress = 1;
            err[0] = '\0';
            int r = op_output_convert(&oo, err, sizeof(err));
            if (r != 0) {
                fprintf(stderr, "omniprof run: converting %s: %s\n", dbs[i], err[0] ? err : "failed");
                rc = 1;
            }
        }
        if (summary) {
            op_out_summary_options so;
            memset(&so, 0, sizeof(so));
            so.size = sizeof(so);
            so.format = OP_OUT_SUMMARY_CONSOLE;
            int u = op_output_parse_units(op_setting_str(OP_SET_SUMMARY_UNITS));
            so.units = u < 0 ? OP_OUT_NSEC : (op_out_units)u;
            so.domain_summary = 1;
            so.window.size = sizeof(so.window);
            const char *dest = op_setting_str(OP_SET_SUMMARY_OUTPUT_FILE);
            err[0] = '\0';
            int r;
            if (strcmp(dest, "stdout") == 0) r = op_output_summary((const char *const *)dbs, (size_t)ndb, &so, stdout, err, sizeof(err));
            else if (strcmp(dest, "stderr") == 0 || !*dest) r = op_output_summary((const char *const *)dbs, (size_t)ndb, &so, stderr, err, sizeof(err));
            else r = op_output_summary_path((const char *const *)dbs, (size_t)ndb, &so, dest, err, sizeof(err));
            if (r != 0) {
                fprintf(stderr, "omniprof run: summary: %s\n", err[0] ? err : "failed");
                rc = 1;
            }
            fflush(stdout);
        }
#else
        (void)stats;
        (void)summary;
        (void)formats;
        for (int i = 0; i < ndb; i++) fprintf(stderr, "omniprof run: database: %s\n", dbs[i]);
#endif
    }
    for (int i = 0; i < ndb; i++) free(dbs[i]);
    free(dbs);
    return rc;
}

/* fork+exec the program with signals forwarded; returns its status (128+N for signal N) or
 * -1 when it could not be started. The forwarding handlers are in place only while the program
 * runs: afterwards a ^C stops omniprof's own post-processing as usual. */
static int run_child(const char *prog_path, char **argv)
{
    struct sigaction sa, saved[4];
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    const int fwd[4] = {SIGINT, SIGTERM, SIGQUIT, SIGHUP};
    sigset_t block, old;
    sigemptyset(&block);
    for (int k = 0; k < 4; k++) sigaddset(&block, fwd[k]);
    sigprocmask(SIG_BLOCK, &block, &old);
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "omniprof run: fork failed: %s\n", strerror(errno));
        sigprocmask(SIG_SETMASK, &old, NULL);
        return -1;
    }
    if (child == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        execv(prog_path, argv);
        fprintf(stderr, "omniprof run: cannot run '%s': %s\n", prog_path, strerror(errno));
        _exit(127);
    }
    g_child_pid = child;
    for (int k = 0; k < 4; k++) sigaction(fwd[k], &sa, &saved[k]);
    sigprocmask(SIG_SETMASK, &old, NULL);
    int wstatus = 0;
    while (waitpid(child, &wstatus, 0) < 0) {
        if (errno != EINTR) {
            wstatus = 1 << 8;
            break;
        }
    }
    g_child_pid = 0;
    for (int k = 0; k < 4; k++) sigaction(fwd[k], &saved[k], NULL);
    return status_of(wstatus);
}

static void print_help(FILE *out)
{
    fprintf(out,
            "usage: omniprof run [options] -- program [args...]\n"
            "       omniprof sample [options] -- program [args...]   (= run --sample --summary)\n\n"
            "Runs the program with omniprof's tool preloaded; each process writes DIR/NAME_results.db\n"
            "(rocpd schema). Boolean options take --opt or --opt=true|false.\n");
    for (int i = 0; i < N_OPTIONS; i++) {
        const run_option *o = &g_options[i];
        if (o->group) fprintf(out, "\n%s:\n", o->group);
        char left[96];
        if (o->short_name)
            snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->long_name, o->metavar ? " " : "",
                     o->metavar ? o->metavar : "");
        else
            snprintf(left, sizeof(left), "    --%s%s%s", o->long_name, o->metavar ? " " : "",
                     o->metavar ? o->metavar : "");
        if (strlen(left) > 34) fprintf(out, "  %s\n  %-34s %s\n", left, "", o->help);
        else fprintf(out, "  %-34s %s\n", left, o->help);
    }
    fprintf(out,
            "\nPlaceholders in -d and -o: %%hostname%% %%pid%% %%ppid%% %%pgid%% %%psid%% %%rank%% %%size%% %%job%%\n"
            "  %%nid%% %%cwd%% %%argv%% %%argt%% %%args%% %%arg<N>%% %%tag%% %%launch_date%% %%launch_time%% "
            "%%env{VAR}%%\n"
            "  (rank/size from OMPI_COMM_WORLD_*, PMI_*, SLURM_PROCID/SLURM_NTASKS, MPI_RANK/MPI_SIZE, ...)\n"
            "\nExit status: the program's (128+N if signal N ended it); 2 for bad options (the program\n"
            "is not run); 1 if omniprof itself failed. Every OMNIPROF_* setting: `omniprof avail --settings`.\n");
}

/* The CPU features need the CPU backend preloaded (it interposes pthread_create, fork, exit). */
static bool wants_cpu(const run_opts *ro)
{
    return ro->set[O_SAMPLE] || opt_true(ro, O_PROCESS_SAMPLING) ||
           (ro->set[O_PROCESS_SAMPLING] && ro->value[O_PROCESS_SAMPLING] &&
            strcmp(ro->value[O_PROCESS_SAMPLING], "false") != 0);
}

/* What run_main allocated, freed by op_cmd_run on every return path (sanitizer builds check). */
static run_opts *g_cleanup_ro;
static env_list *g_cleanup_env;
static char *g_pmc_groups[64];

static int g_n_pmc_groups;

/* Before the run, say how many passes each --pmc group needs (offline pass planning of the
 * counters module, `omniprof avail --pmc-check`), on stderr: the program's stdout stays its own.
 * An unknown counter, or a set impossible in the chosen replay mode, stops the launch (exit 2)
 * unless --extra-metrics may define the names. Returns 0 to go on. */
static int check_pmc_groups(char **groups, int n, bool extra_metrics)
{
    if (!op_avail_counters) return 0; /* counters module not built: the tool reports it */
    int rc_all = 0;
    for (int i = 0; i < n; i++) {
        char *copy = xstrdup(groups[i]);
        char *argv[80];
        int argc = 0;
        argv[argc++] = "avail";
        argv[argc++] = "--pmc-check";
        for (char *save = NULL, *t = strtok_r(copy, " ,", &save); t && argc < 78; t = strtok_r(NULL, " ,", &save))
            argv[argc++] = t;
        argv[argc] = NULL;
        fflush(stdout);
        int saved = dup(STDOUT_FILENO);
        if (saved >= 0) dup2(STDERR_FILENO, STDOUT_FILENO);
        if (n > 1) fprintf(stderr, "omniprof run: --pmc group %d of %d: ", i + 1, n);
        int rc = op_avail_counters(argc, argv);
        fflush(stdout);
        if (saved >= 0) {
            dup2(saved, STDOUT_FILENO);
            close(saved);
        }
        free(copy);
        if (rc == 2 && extra_metrics) continue; /* names may come from --extra-metrics */
        if (rc != 0) {
            fprintf(stderr, "omniprof run: --pmc %s cannot be collected (see above); the program was not run\n",
                    groups[i]);
            rc_all = 2;
        }
    }
    return rc_all;
}


static void run_cleanup(void)
{
    if (g_cleanup_ro) {
        for (int i = 0; i < O__COUNT; i++) free(g_cleanup_ro->value[i]);
        g_cleanup_ro = NULL;
    }
    if (g_cleanup_env) {
        for (int i = 0; i < g_cleanup_env->n; i++) free(g_cleanup_env->items[i]);
        free(g_cleanup_env->items);
        g_cleanup_env = NULL;
    }
    for (int i = 0; i < g_n_pmc_groups; i++) free(g_pmc_groups[i]);
    g_n_pmc_groups = 0;
}

static int run_main(int argc, char **argv)
{
    run_opts ro;
    memset(&ro, 0, sizeof(ro));
    g_cleanup_ro = &ro;
    if (parse_command_line(&ro, argc, argv) != 0) return EXIT_USAGE;
    if (opt_true(&ro, O_HELP)) {
        print_help(stdout);
        return 0;
    }
    if (ro.set[O_INPUT] && load_json_input(&ro, ro.value[O_INPUT]) != 0) return EXIT_USAGE;
    if (ro.program_argc <= 0) {
        usage_error("no program to run; usage: omniprof run [options] -- program [args...]");
        return EXIT_USAGE;
    }

    env_list env = {0};
    g_cleanup_env = &env;
    int bad = 0;
#define SETB(NAME, COND) bad |= set_setting(&env, NAME, (COND) ? "true" : "false", NULL)

    /* Tracing. */
    bool runtime = opt_true(&ro, O_RUNTIME_TRACE) || opt_true(&ro, O_SYS_TRACE);
    bool sys = opt_true(&ro, O_SYS_TRACE);
    struct { int opt; const char *setting; bool implied; } tr[] = {
        {O_KERNEL_TRACE, "KERNEL_TRACE", runtime},
        {O_MEMORY_COPY_TRACE, "MEMORY_COPY_TRACE", runtime},
        {O_MEMORY_SET_TRACE, "MEMORY_SET_TRACE", runtime},
        {O_MEMORY_ALLOCATION_TRACE, "MEMORY_ALLOCATION_TRACE", runtime},
        {O_MARKER_TRACE, "MARKER_TRACE", runtime},
        {O_CUDA_RUNTIME_TRACE, "CUDA_RUNTIME_API_TRACE", runtime},
        {O_CUDA_DRIVER_TRACE, "CUDA_DRIVER_API_TRACE", sys},
        {O_SYNC_TRACE, "SYNC_TRACE", sys},
    };
    bool any_trace = false;
    for (size_t k = 0; k < sizeof(tr) / sizeof(tr[0]); k++) {
        bool on = tr[k].implied || opt_true(&ro, tr[k].opt);
        if (on) {
            SETB(tr[k].setting, true);
            any_trace = true;
        }
    }
    bool any_collect = any_trace;
    char **pmc_groups = g_pmc_groups;
    int n_pmc_groups = 0;
    if (ro.set[O_PMC]) {
        char *copy = xstrdup(ro.value[O_PMC]);
        for (char *save = NULL, *g = strtok_r(copy, ";", &save); g && n_pmc_groups < 64; g = strtok_r(NULL, ";", &save)) {
            while (*g == ' ') g++;
            size_t len = strlen(g);
            while (len && g[len - 1] == ' ') g[--len] = '\0';
            if (!len) continue;
            pmc_groups[n_pmc_groups++] = xstrdup(g);
            g_n_pmc_groups = n_pmc_groups;
            bad |= set_setting(&env, "PMC", g, "--pmc");
        }
        free(copy);
        if (n_pmc_groups > 0) env_add(&env, "OMNIPROF_PMC", pmc_groups[0]);
        any_collect = true;
    }
    if (ro.set[O_EXTRA_METRICS]) {
        char *copy = xstrdup(ro.value[O_EXTRA_METRICS]);
        for (char *save = NULL, *f = strtok_r(copy, ":", &save); f; f = strtok_r(NULL, ":", &save))
            if (!file_exists(f)) {
                usage_error("--extra-metrics '%s': no such file", f);
                bad = 1;
            }
        free(copy);
        bad |= set_setting(&env, "EXTRA_METRICS", ro.value[O_EXTRA_METRICS], "--extra-metrics");
    }
    if (ro.set[O_KERNEL_ITERATION_RANGE]) {
        const char *kr = ro.value[O_KERNEL_ITERATION_RANGE];
        if (!*kr || strspn(kr, "0123456789[]-, ") != strlen(kr)) {
            usage_error("--kernel-iteration-range '%s' is not valid; expected launches like '[1, [3-5]]' or '1,3-5'", kr);
            bad = 1;
        } else {
            bad |= set_setting(&env, "KERNEL_ITERATION_RANGE", kr, "--kernel-iteration-range");
        }
    }
    if (ro.set[O_SAMPLE]) {
        bad |= set_setting(&env, "SAMPLE", *ro.value[O_SAMPLE] ? ro.value[O_SAMPLE] : "cputime", "--sample");
        any_collect = true;
    }
    if (ro.set[O_SAMPLING_FREQ]) {
        double hz;
        if (op_parse_double(ro.value[O_SAMPLING_FREQ], &hz) != 0 || hz <= 0 || hz > 100000) {
            usage_error("--sampling-freq='%s' is not valid; expected a number of samples per second in (0, 100000]",
                        ro.value[O_SAMPLING_FREQ]);
            bad = 1;
        } else {
            bad |= set_setting(&env, "SAMPLING_FREQ", ro.value[O_SAMPLING_FREQ], "--sampling-freq");
        }
        if (!ro.set[O_SAMPLE]) {
            bad |= set_setting(&env, "SAMPLE", "cputime", "--sampling-freq");
            ro.set[O_SAMPLE] = true;
            ro.value[O_SAMPLE] = xstrdup("cputime");
            any_collect = true;
        }
    }
    if (ro.set[O_PROCESS_SAMPLING] && strcmp(ro.value[O_PROCESS_SAMPLING], "false") != 0) {
        SETB("PROCESS_SAMPLING", true);
        const char *iv = ro.value[O_PROCESS_SAMPLING];
        if (*iv && strcmp(iv, "true") != 0) {
            double ms;
            if (op_parse_double(iv, &ms) != 0 || ms <= 0) {
                usage_error("--process-sampling interval '%s' is not valid; expected seconds > 0, e.g. 0.05", iv);
                bad = 1;
            } else {
                bad |= set_setting(&env, "PROCESS_SAMPLING_INTERVAL", iv, "--process-sampling");
            }
        }
        any_collect = true;
    }

    /* Output. */
    op_path_context ctx;
    memset(&ctx, 0, sizeof(ctx));
    op_path_context_init_self(&ctx);
    ctx.argv = ro.program;
    ctx.argc = ro.program_argc;
    char launch[32];
    snprintf(launch, sizeof(launch), "%lld", (long long)ctx.launch_time);
    env_add(&env, "OMNIPROF_LAUNCH_TIME", launch);
    /* Default directory: where omniprof run was started (not each process's own cwd, which a
     * child may have changed), with any '%' in it escaped. */
    char cwd_tmpl[4096];
    {
        size_t o = 0;
        for (const char *c = ctx.cwd; *c && o + 3 < sizeof(cwd_tmpl); c++) {
            if (*c == '%') cwd_tmpl[o++] = '%';
            cwd_tmpl[o++] = *c;
        }
        cwd_tmpl[o] = '\0';
    }
    const char *dir_tmpl = ro.set[O_OUTPUT_DIRECTORY] ? ro.value[O_OUTPUT_DIRECTORY] : cwd_tmpl;
    const char *file_tmpl = ro.set[O_OUTPUT_FILE] ? ro.value[O_OUTPUT_FILE] : "%hostname%/%pid%";
    char abs_dir[8448];
    if (check_output(dir_tmpl, file_tmpl, &ctx, abs_dir, sizeof(abs_dir)) != 0) return EXIT_USAGE;
    bad |= set_setting(&env, "OUTPUT_PATH", abs_dir, "--output-directory");
    bad |= set_setting(&env, "OUTPUT_FILE", file_tmpl, "--output-file");

    const char *formats = ro.set[O_OUTPUT_FORMAT] ? ro.value[O_OUTPUT_FORMAT] : "rocpd";
    bad |= set_setting(&env, "OUTPUT_FORMAT", formats, "--output-format");
    bool non_rocpd = false;
    for (const char *p = formats; *p;) {
        while (*p == ' ' || *p == ',') p++;
        size_t len = strcspn(p, " ,");
        if (len && !(len == 5 && strncmp(p, "rocpd", 5) == 0)) non_rocpd = true;
        p += len;
    }
    bool stats = opt_true(&ro, O_STATS), summary = opt_true(&ro, O_SUMMARY);
    if (ro.set[O_STATS]) SETB("STATS", stats);
    if (ro.set[O_SUMMARY]) SETB("SUMMARY", summary);
    if (ro.set[O_SUMMARY_OUTPUT_FILE])
        bad |= set_setting(&env, "SUMMARY_OUTPUT_FILE", ro.value[O_SUMMARY_OUTPUT_FILE], "--summary-output-file");
    if (ro.set[O_SUMMARY_UNITS]) bad |= set_setting(&env, "SUMMARY_UNITS", ro.value[O_SUMMARY_UNITS], "--summary-units");
    if ((stats || summary) && !any_collect) {
        usage_error("--stats and --summary need something to collect: a tracing option (e.g. --runtime-trace, "
                    "--marker-trace), --pmc or --sample");
        return EXIT_USAGE;
    }

    /* Filtering and control. */
    int rx_ids[2] = {O_KERNEL_INCLUDE_REGEX, O_KERNEL_EXCLUDE_REGEX};
    const char *rx_settings[2] = {"KERNEL_INCLUDE_REGEX", "KERNEL_EXCLUDE_REGEX"};
    for (int k = 0; k < 2; k++) {
        if (!ro.set[rx_ids[k]]) continue;
        regex_t re;
        int rc = regcomp(&re, ro.value[rx_ids[k]], REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char msg[256];
            regerror(rc, &re, msg, sizeof(msg));
            usage_error("--%s '%s' is not a valid POSIX extended regular expression: %s",
                        option_by_id(rx_ids[k])->long_name, ro.value[rx_ids[k]], msg);
            bad = 1;
            continue;
        }
        regfree(&re);
        bad |= set_setting(&env, rx_settings[k], ro.value[rx_ids[k]], NULL);
    }
    if (ro.set[O_COLLECTION_PERIOD_UNIT] && !ro.set[O_COLLECTION_PERIOD]) {
        usage_error("--collection-period-unit needs --collection-period");
        bad = 1;
    }
    if (ro.set[O_COLLECTION_PERIOD]) {
        char ns[2048];
        const char *unit = ro.set[O_COLLECTION_PERIOD_UNIT] ? ro.value[O_COLLECTION_PERIOD_UNIT] : "sec";
        if (convert_periods(ro.value[O_COLLECTION_PERIOD], unit, ns, sizeof(ns)) != 0) bad = 1;
        else bad |= set_setting(&env, "COLLECTION_PERIOD", ns, "--collection-period");
    }
    if (ro.set[O_FLUSH_INTERVAL]) bad |= set_setting(&env, "FLUSH_INTERVAL", ro.value[O_FLUSH_INTERVAL], "--flush-interval");
    if (ro.set[O_MANGLED_KERNELS]) SETB("DEMANGLE_KERNELS", !opt_true(&ro, O_MANGLED_KERNELS));
    if (ro.set[O_TRUNCATE_KERNELS]) SETB("TRUNCATE_KERNELS", opt_true(&ro, O_TRUNCATE_KERNELS));
    if (ro.set[O_LOG_LEVEL]) bad |= set_setting(&env, "LOG_LEVEL", ro.value[O_LOG_LEVEL], "--log-level");
    if (ro.set[O_DISABLE_SIGNAL_HANDLERS]) SETB("SIGNAL_HANDLERS", !opt_true(&ro, O_DISABLE_SIGNAL_HANDLERS));
#undef SETB
    if (bad) return EXIT_USAGE;
    if (n_pmc_groups > 0 && check_pmc_groups(pmc_groups, n_pmc_groups, ro.set[O_EXTRA_METRICS]) != 0)
        return EXIT_USAGE;
    if (!any_collect) {
        usage_error("nothing to collect: give a tracing option (--kernel-trace, --marker-trace, --runtime-trace, "
                    "--sys-trace, ...), --pmc or --sample; see `omniprof run --help`");
        return EXIT_USAGE;
    }

    char prog_path[PATH_MAX];
    if (resolve_program(ro.program[0], prog_path, sizeof(prog_path)) != 0) {
        usage_error("cannot run '%s': %s", ro.program[0],
                    strchr(ro.program[0], '/') ? "no such executable file" : "not found in PATH");
        return EXIT_USAGE;
    }
    if (ro.set[O_PRELOAD]) {
        char *copy = xstrdup(ro.value[O_PRELOAD]);
        for (char *save = NULL, *w = strtok_r(copy, " :", &save); w; w = strtok_r(NULL, " :", &save)) {
            if (strchr(w, '/') && !file_exists(w)) {
                usage_error("--preload '%s': no such file", w);
                free(copy);
                return EXIT_USAGE;
            }
        }
        free(copy);
    }
#ifndef OMNIPROF_HAVE_OUTPUT
    if (non_rocpd) {
        usage_error("--output-format '%s': only rocpd is available; pftrace, json and csv need libomniprof-output, "
                    "which is not built",
                    formats);
        return EXIT_USAGE;
    }
    if (stats || summary)
        fprintf(stderr, "omniprof run: %s needs libomniprof-output, which is not built: skipped (the database is "
                        "still written)\n",
                stats && summary ? "--stats/--summary" : stats ? "--stats" : "--summary");
    bool post = false;
#else
    bool post = stats || summary || non_rocpd;
#endif
    if (n_pmc_groups > 1) post = true; /* one run per --pmc group: the launcher stays */

    /* Libraries. */
    char libdir[PATH_MAX];
    if (lib_dir(libdir, sizeof(libdir)) != 0) {
        fprintf(stderr, "omniprof run: cannot find omniprof's library directory (../lib beside the binary)\n");
        return 1;
    }
    char tool[PATH_MAX + 32], sdk[PATH_MAX + 32], cpu[PATH_MAX + 40], pre[PATH_MAX + 40];
    snprintf(pre, sizeof(pre), "%s/libomniprof-preload.so", libdir); /* the libc interposers: first */
    snprintf(tool, sizeof(tool), "%s/libomniprof-tool.so", libdir);
    snprintf(sdk, sizeof(sdk), "%s/libomniprof-sdk.so", libdir);
    snprintf(cpu, sizeof(cpu), "%s/libomniprof-backend-cpu.so", libdir);
    if (!file_exists(tool) || !file_exists(sdk)) {
        fprintf(stderr, "omniprof run: %s is not built (looked in %s); build the targets omniprof-tool and omniprof-sdk\n",
                file_exists(tool) ? "libomniprof-sdk.so" : "libomniprof-tool.so", libdir);
        return 1;
    }
    bool cpu_needed = wants_cpu(&ro);
    if (cpu_needed && !file_exists(cpu)) {
        usage_error("--sample/--process-sampling need the CPU backend, which is not built (%s is missing)", cpu);
        return EXIT_USAGE;
    }

    /* LD_PRELOAD: --preload libraries, the preload library, the tool, the SDK, the CPU backend,
     * what was there. */
    size_t lp_cap = 8192;
    char *lp = calloc(1, lp_cap);
    if (!lp) return 1;
#define LP_ADD(S)                                                                                     \
    do {                                                                                              \
        const char *s_ = (S);                                                                         \
        if (s_ && *s_ && strlen(lp) + strlen(s_) + 2 < lp_cap) {                                      \
            if (*lp) strcat(lp, ":");                                                                 \
            strcat(lp, s_);                                                                           \
        }                                                                                             \
    } while (0)
    if (ro.set[O_PRELOAD]) {
        char *copy = xstrdup(ro.value[O_PRELOAD]);
        for (char *save = NULL, *w = strtok_r(copy, " :", &save); w; w = strtok_r(NULL, " :", &save)) {
            if (strchr(w, '/') && !file_exists(w)) {
                usage_error("--preload '%s': no such file", w);
                free(copy);
                free(lp);
                return EXIT_USAGE;
            }
            LP_ADD(w);
        }
        free(copy);
    }
    if (file_exists(pre)) LP_ADD(pre);
    LP_ADD(tool);
    LP_ADD(sdk);
    if (cpu_needed) LP_ADD(cpu);
    const char *old_lp = getenv("LD_PRELOAD");
    if (old_lp && *old_lp) {
        char *copy = xstrdup(old_lp);
        for (char *save = NULL, *w = strtok_r(copy, " :", &save); w; w = strtok_r(NULL, " :", &save))
            if (strcmp(w, tool) != 0 && strcmp(w, sdk) != 0 && strcmp(w, cpu) != 0 && strcmp(w, pre) != 0) LP_ADD(w);
        free(copy);
    }
#undef LP_ADD
    env_add(&env, "LD_PRELOAD", lp);
    free(lp);


    char manifest[PATH_MAX] = "";
    if (post) {
        const char *tmp = getenv("TMPDIR");
        snprintf(manifest, sizeof(manifest), "%s/omniprof-run-%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", (int)getpid());
        int fd = mkstemp(manifest);
        if (fd < 0) {
            fprintf(stderr, "omniprof run: cannot create the run manifest in %s: %s\n", tmp && *tmp ? tmp : "/tmp",
                    strerror(errno));
            return 1;
        }
        close(fd);
        env_add(&env, "OMNIPROF_RUN_MANIFEST", manifest);
    }

    if (opt_true(&ro, O_ECHO)) {
        for (int k = 0; k < env.n; k++) fprintf(stderr, "export %s\n", env.items[k]);
        fputs("exec", stderr);
        for (int k = 0; k < ro.program_argc; k++) fprintf(stderr, " %s", ro.program[k]);
        fputs("\n", stderr);
        fflush(stderr);
    }

    for (int k = 0; k < env.n; k++) {
        char *eq = strchr(env.items[k], '=');
        *eq = '\0';
        setenv(env.items[k], eq + 1, 1);
        *eq = '=';
    }
    fflush(stdout);
    fflush(stderr);

    if (!post) {
        execv(prog_path, ro.program);
        fprintf(stderr, "omniprof run: cannot run '%s': %s\n", prog_path, strerror(errno));
        return 127;
    }

    /* fork+exec (once per --pmc group), forward signals, wait, post-process. */
    int status = 0;
    for (int pass = 0; pass < n_pmc_groups || (pass == 0 && n_pmc_groups == 0); pass++) {
        if (n_pmc_groups > 1) {
            setenv("OMNIPROF_PMC", pmc_groups[pass], 1);
            fprintf(stderr, "omniprof run: pass %d of %d: --pmc %s\n", pass + 1, n_pmc_groups, pmc_groups[pass]);
        }
        int st = run_child(prog_path, ro.program);
        if (st < 0) {
            unlink(manifest);
            return 1;
        }
        if (pass == 0 || status == 0) status = st; /* the first failing pass decides */
    }
    int prc = post_run(&ro, manifest, stats, summary, formats);
    unlink(manifest);
    if (prc != 0 && status == 0) fprintf(stderr, "omniprof run: post-processing failed (the databases are kept)\n");
    return status;
}

int op_cmd_run(int argc, char **argv)
{
    int rc = run_main(argc, argv);
    run_cleanup();
    return rc;
}

int op_cmd_sample(int argc, char **argv)
{
    /* `omniprof sample [opts] -- prog` = `omniprof run --sample --summary [opts] -- prog`: the
     * summary after the run holds the CPU flat and call-tree profiles (unless --summary=false). */
    bool has = false, has_summary = false;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strncmp(argv[i], "--sample", 8) == 0 && (argv[i][8] == '\0' || argv[i][8] == '=')) has = true;
        if (strncmp(argv[i], "--summary", 9) == 0 && (argv[i][9] == '\0' || argv[i][9] == '=')) has_summary = true;
        if (strcmp(argv[i], "-S") == 0) has_summary = true;
    }
    char **nargv = calloc((size_t)argc + 3, sizeof(char *));
    if (!nargv) return 1;
    int n = 0;
    nargv[n++] = (char *)"run";
    if (!has) nargv[n++] = (char *)"--sample";
#ifdef OMNIPROF_HAVE_OUTPUT
    if (!has_summary) nargv[n++] = (char *)"--summary";
#else
    (void)has_summary;
#endif
    for (int i = 1; i < argc; i++) nargv[n++] = argv[i];
    nargv[n] = NULL;
    int rc = run_main(n, nargv);
    run_cleanup();
    free(nargv);
    return rc;
}
