/* cli.c — `omniprof convert|merge|summary|query`: argument parsing and help, shared by the
 * omniprof binary (src/cli/cmd_*.c) and `python3 -m omniprof` (through ctypes), so both give
 * the same results and exit codes: 0 ok, 1 failure, 2 bad input or usage.
 *
 * Options that take lists (-i, -f) consume every following argument up to the next one that
 * starts with '-' (rocprofv3/rocpd style: `-i a.db b.db -f pftrace csv`); they may also be
 * repeated. `--opt=value` works for every option with a value. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/internal.h"

typedef struct cli_args {
    const char **inputs;
    size_t n_inputs, cap_inputs;
    const char *formats[8];
    size_t n_formats;
    const char *dir, *name, *out, *sql, *units, *cpu_profile;
    op_out_window win;
    int by_rank, domain_summary, stats, help, progress;
} cli_args;

static const char *const HELP_CONVERT =
    "usage: omniprof convert -i DB... -f FORMAT... [-d DIR] [-o NAME] [window options] [--stats]\n"
    "\n"
    "Converts rocpd databases (omniprof run, rocprofv3, omniprof merge) by streaming.\n"
    "  -i, --input DB...            input databases (any number)\n"
    "  -f, --output-format F...     pftrace, json, csv, folded (several allowed); folded:\n"
    "                               NAME_folded.txt, CPU call stacks for flamegraph.pl/speedscope\n"
    "  -d, --output-directory DIR   output directory (default: .)\n"
    "  -o, --output-file NAME       file name prefix (default: out): DIR/NAME_results.pftrace, ...\n"
    "      --stats                  also write NAME_<domain>_stats.csv and NAME_domain_stats.csv\n"
    "  window (every conversion):\n"
    "      --start T | N%           keep events from T ns (or N% of the trace extent)\n"
    "      --end T | N%             ... up to T ns (or N%)\n"
    "      --start-marker NAME      window starts at the first region/mark named NAME\n"
    "      --end-marker NAME        window ends at the end of the first such marker after the start\n"
    "      --inclusive [BOOL]       keep events with either endpoint inside (default: wholly inside)\n"
    "      --no-progress            no progress line on stderr (shown only on a terminal anyway)\n"
    "exit status: 0 ok, 1 failure, 2 bad input\n";

static const char *const HELP_MERGE =
    "usage: omniprof merge -i DB... -o MERGED.db\n"
    "\n"
    "Writes one rocpd database holding every row of every input (hundreds are fine; memory is\n"
    "bounded). Each process keeps its own uuid-suffixed tables, guid and pid; the plain views\n"
    "(rocpd_region, regions, kernels, top, ...) span all of them. Refuses to overwrite any file.\n"
    "  -i, --input DB...     input databases\n"
    "  -o, --output FILE     the merged database (must not exist)\n"
    "exit status: 0 ok, 1 failure, 2 bad input\n";

static const char *const HELP_SUMMARY =
    "usage: omniprof summary -i DB... [--format console|csv|json|md] [--summary-by-rank]\n"
    "                        [--domain-summary] [-u sec|msec|usec|nsec] [-o FILE] [window options]\n"
    "                        [--cpu-profile flat|tree|both|none]\n"
    "\n"
    "Per-domain tables: NAME, DOMAIN, CALLS, DURATION, AVERAGE, PERCENT (INC), MIN, MAX, STDDEV,\n"
    "sorted by total duration (rocprofv3 / rocpd summary semantics; sample standard deviation).\n"
    "  -i, --input DB...        input databases\n"
    "  -f, --format F           console (default), csv, json, md\n"
    "      --summary-by-rank    one set of tables per process (MPI rank when known, else pid)\n"
    "  -D, --domain-summary     add a table with one row per domain\n"
    "  -u, --units U            sec, msec, usec, nsec (default nsec)\n"
    "  -o, --output FILE        write to FILE (default: stdout)\n"
    "      --cpu-profile P      CPU sampling profiles after the tables when the inputs hold\n"
    "                           samples: flat, tree, both (default) or none (not in csv)\n"
    "  window options as for convert (--start, --end, --start-marker, --end-marker, --inclusive)\n"
    "exit status: 0 ok, 1 failure, 2 bad input\n";

static const char *const HELP_QUERY =
    "usage: omniprof query -i DB... --sql \"SELECT ...\" [--format console|csv|json|md] [-o FILE]\n"
    "\n"
    "Runs read-only SQL over the union of the inputs' views (rocpd_* tables as views, regions,\n"
    "samples, kernels, memory_copies, memory_allocations, pmc_events, counters_collection,\n"
    "top_kernels, top, busy, omniprof_cpu_samples, omniprof_metrics, ...). Statements that write\n"
    "are refused.\n"
    "  -i, --input DB...        input databases (any number)\n"
    "  -q, --sql, --query SQL   the statements\n"
    "  -f, --format F           console (default), csv, json, md\n"
    "  -o, --output FILE        write to FILE (default: stdout)\n"
    "exit status: 0 ok, 1 failure, 2 bad input\n";

static int parse_time(const char *opt, const char *v, double *out, int *pct) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || errno) goto bad;
    *pct = 0;
    if (*end == '%') {
        *pct = 1;
        end++;
    }
    if (*end) goto bad;
    *out = d;
    return 0;
bad:
    fprintf(stderr, "omniprof: %s '%s': expected nanoseconds (e.g. 1500000) or a percentage (e.g. 25%%)\n", opt, v);
    return -1;
}

static int parse_bool(const char *v) {
    if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on")) return 1;
    if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off")) return 0;
    return -1;
}

static int add_input(cli_args *a, const char *v) {
    if (a->n_inputs == a->cap_inputs) {
        size_t cap = a->cap_inputs ? a->cap_inputs * 2 : 16;
        const char **n = realloc(a->inputs, cap * sizeof(char *));
        if (!n) return -1;
        a->inputs = n;
        a->cap_inputs = cap;
    }
    a->inputs[a->n_inputs++] = v;
    return 0;
}

/* Returns 0, or 2 on a usage error (message printed). */
static int parse(const char *cmd, int argc, char **argv, cli_args *a) {
    memset(a, 0, sizeof(*a));
    a->win.size = sizeof(a->win);
    a->progress = 1;
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        char *eq = NULL;
        char key[64];
        if (arg[0] == '-' && arg[1] == '-' && (eq = strchr(arg, '='))) {
            snprintf(key, sizeof key, "%.*s", (int)(eq - arg), arg);
            eq++;
        } else
            snprintf(key, sizeof key, "%s", arg);
#define IS(s) (!strcmp(key, s))
#define VALUE()                                                                                          \
    (eq ? eq : (i + 1 < argc ? argv[++i] : (fprintf(stderr, "omniprof %s: %s needs a value\n", cmd, key), (char *)NULL)))
        if (IS("-h") || IS("--help")) {
            a->help = 1;
        } else if (IS("-i") || IS("--input")) {
            if (eq) {
                if (add_input(a, eq)) return 1;
            } else {
                int got = 0;
                while (i + 1 < argc && argv[i + 1][0] != '-') {
                    if (add_input(a, argv[++i])) return 1;
                    got++;
                }
                if (!got) {
                    fprintf(stderr, "omniprof %s: %s needs at least one database\n", cmd, key);
                    return 2;
                }
            }
        } else if ((IS("-f") || IS("--output-format") || IS("--format")) ) {
            if (eq) a->formats[a->n_formats++ % 8] = eq;
            else {
                int got = 0;
                while (i + 1 < argc && argv[i + 1][0] != '-' && a->n_formats < 8) {
                    a->formats[a->n_formats++] = argv[++i];
                    got++;
                }
                if (!got) {
                    fprintf(stderr, "omniprof %s: %s needs a format\n", cmd, key);
                    return 2;
                }
            }
        } else if (IS("-d") || IS("--output-directory")) {
            if (!(a->dir = VALUE())) return 2;
        } else if (IS("-o") || IS("--output-file") || IS("--output")) {
            const char *v = VALUE();
            if (!v) return 2;
            if (!strcmp(cmd, "convert")) a->name = v;
            else a->out = v;
        } else if (IS("-q") || IS("--sql") || IS("--query")) {
            if (!(a->sql = VALUE())) return 2;
        } else if (IS("-u") || IS("--units") || IS("--summary-units")) {
            if (!(a->units = VALUE())) return 2;
        } else if (IS("--start") || IS("--end")) {
            const char *v = VALUE();
            if (!v) return 2;
            if (IS("--start")) {
                if (parse_time(key, v, &a->win.start, &a->win.start_pct)) return 2;
                a->win.has_start = 1;
            } else {
                if (parse_time(key, v, &a->win.end, &a->win.end_pct)) return 2;
                a->win.has_end = 1;
            }
        } else if (IS("--start-marker")) {
            if (!(a->win.start_marker = VALUE())) return 2;
        } else if (IS("--end-marker")) {
            if (!(a->win.end_marker = VALUE())) return 2;
        } else if (IS("--inclusive")) {
            int v = 1;
            const char *t = eq ? eq : (i + 1 < argc && parse_bool(argv[i + 1]) >= 0 ? argv[++i] : NULL);
            if (t && (v = parse_bool(t)) < 0) {
                fprintf(stderr, "omniprof %s: --inclusive '%s': expected true or false\n", cmd, t);
                return 2;
            }
            a->win.inclusive = v;
        } else if (IS("--summary-by-rank")) {
            a->by_rank = 1;
        } else if (IS("-D") || IS("--domain-summary")) {
            a->domain_summary = 1;
        } else if (IS("--cpu-profile") && !strcmp(cmd, "summary")) {
            if (!(a->cpu_profile = VALUE())) return 2;
        } else if (IS("--stats")) {
            a->stats = 1;
        } else if (IS("--no-progress")) {
            a->progress = 0;
        } else {
            fprintf(stderr, "omniprof %s: unknown option '%s' (see omniprof %s --help)\n", cmd, arg, cmd);
            return 2;
        }
#undef IS
#undef VALUE
    }
    return 0;
}

static int report(const char *cmd, int rc, const char *err) {
    if (rc) fprintf(stderr, "omniprof %s: %s\n", cmd, err[0] ? err : "failed");
    return rc == OP_OUT_EINPUT ? 2 : rc ? 1 : 0;
}

static int pick_format(const char *cmd, const cli_args *a, int *fmt) {
    *fmt = OP_OUT_SUMMARY_CONSOLE;
    if (a->n_formats == 0) return 0;
    if ((*fmt = op_output_parse_table_format(a->formats[0])) >= 0) return 0;
    fprintf(stderr, "omniprof %s: --format '%s': expected console, csv, json or md\n", cmd, a->formats[0]);
    return -1;
}

static FILE *open_out(const char *cmd, const char *path) {
    if (!path || !strcmp(path, "-")) return stdout;
    FILE *f = fopen(path, "wb");
    if (!f) fprintf(stderr, "omniprof %s: %s: cannot create: %s\n", cmd, path, strerror(errno));
    return f;
}

OMNIPROF_API int op_output_cli(int argc, char **argv) {
    if (argc < 1 || !argv || !argv[0]) return 2;
    const char *cmd = argv[0];
    const char *help = !strcmp(cmd, "convert") ? HELP_CONVERT
                       : !strcmp(cmd, "merge") ? HELP_MERGE
                       : !strcmp(cmd, "summary") ? HELP_SUMMARY
                       : !strcmp(cmd, "query") ? HELP_QUERY : NULL;
    if (!help) {
        fprintf(stderr, "omniprof: unknown command '%s': expected convert, merge, summary or query\n", cmd);
        return 2;
    }
    cli_args a;
    int prc = parse(cmd, argc, argv, &a);
    if (prc) {
        free(a.inputs);
        return prc;
    }
    if (a.help) {
        fputs(help, stdout);
        free(a.inputs);
        return 0;
    }
    char err[1024] = "";
    int rc = 0;
    if (a.n_inputs == 0) {
        fprintf(stderr, "omniprof %s: no input database given (-i DB...)\n%s", cmd, help);
        free(a.inputs);
        return 2;
    }
    if (!strcmp(cmd, "convert")) {
        unsigned f = a.stats ? OP_OUT_FMT_STATS : 0;
        for (size_t i = 0; i < a.n_formats; i++) {
            if (op_output_parse_formats(a.formats[i], OP_OUT_FMT_CONVERT, &f, err, sizeof err)) {
                fprintf(stderr, "omniprof convert: -f: %s\n", err);
                free(a.inputs);
                return 2;
            }
        }
        if (!f) {
            fprintf(stderr, "omniprof convert: no output format (-f pftrace|json|csv|folded)\n");
            free(a.inputs);
            return 2;
        }
        op_out_options o = {.size = sizeof o, .inputs = a.inputs, .n_inputs = a.n_inputs, .formats = f,
                            .out_dir = a.dir, .out_name = a.name, .window = a.win, .progress = a.progress};
        rc = op_output_convert(&o, err, sizeof err);
    } else if (!strcmp(cmd, "merge")) {
        if (!a.out) {
            fprintf(stderr, "omniprof merge: no output (-o MERGED.db)\n");
            free(a.inputs);
            return 2;
        }
        rc = op_output_merge(a.inputs, a.n_inputs, a.out, a.progress, err, sizeof err);
    } else if (!strcmp(cmd, "summary")) {
        op_out_summary_options so = {.size = sizeof so, .by_rank = a.by_rank, .domain_summary = a.domain_summary,
                                     .window = a.win};
        int fmt;
        if (pick_format(cmd, &a, &fmt)) {
            free(a.inputs);
            return 2;
        }
        so.format = fmt;
        if (a.cpu_profile) {
            const char *v = a.cpu_profile;
            if (!strcmp(v, "flat")) so.cpu_profile = OP_OUT_CPU_PROFILE_FLAT;
            else if (!strcmp(v, "tree")) so.cpu_profile = OP_OUT_CPU_PROFILE_TREE;
            else if (!strcmp(v, "both")) so.cpu_profile = OP_OUT_CPU_PROFILE_BOTH;
            else if (!strcmp(v, "none")) so.cpu_profile = OP_OUT_CPU_PROFILE_NONE;
            else {
                fprintf(stderr, "omniprof summary: --cpu-profile '%s': expected flat, tree, both or none\n", v);
                free(a.inputs);
                return 2;
            }
        }
        if (a.units) {
            int u = op_output_parse_units(a.units);
            if (u < 0) {
                fprintf(stderr, "omniprof summary: --units '%s': expected sec, msec, usec or nsec\n", a.units);
                free(a.inputs);
                return 2;
            }
            so.units = (op_out_units)u;
        }
        FILE *out = open_out(cmd, a.out);
        if (!out) {
            free(a.inputs);
            return 1;
        }
        rc = op_output_summary(a.inputs, a.n_inputs, &so, out, err, sizeof err);
        if (out != stdout && fclose(out) && !rc) rc = OP_OUT_EFAIL;
    } else {
        int fmt;
        if (pick_format(cmd, &a, &fmt)) {
            free(a.inputs);
            return 2;
        }
        if (!a.sql) {
            fprintf(stderr, "omniprof query: no SQL given (--sql \"SELECT ...\")\n");
            free(a.inputs);
            return 2;
        }
        FILE *out = open_out(cmd, a.out);
        if (!out) {
            free(a.inputs);
            return 1;
        }
        rc = op_output_query(a.inputs, a.n_inputs, a.sql, fmt, out, err, sizeof err);
        if (out != stdout && fclose(out) && !rc) rc = OP_OUT_EFAIL;
    }
    free(a.inputs);
    fflush(stdout);
    return report(cmd, rc, err);
}
