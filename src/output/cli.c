/* cli.c — `omniprof convert|merge|summary|query`: argument parsing and help, shared by the
 * omniprof binary (src/cli/cmd_*.c) and `python3 -m omniprof` and the Python functions (through
 * ctypes), so both give the same results, messages and exit codes: 0 ok, 1 failure, 2 bad input
 * or usage. Every message is one line "omniprof CMD: ..." on stderr; op_output_cli_err also
 * hands the first one to its caller (the Python package raises it as omniprof.Error).
 *
 * Options that take lists (-i, -f) consume every following argument up to the next one that
 * starts with '-' (rocprofv3/rocpd style: `-i a.db b.db -f pftrace csv`); they may also be
 * repeated. `--opt=value` works for every option with a value.
 *
 * While a command runs, SIGINT/SIGTERM/SIGHUP remove its temporary files (outfile.c). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/number.h"
#include "common/term.h"
#include "output/internal.h"

typedef struct cli_args {
    const char **inputs;
    size_t n_inputs, cap_inputs;
    const char *formats[8];
    size_t n_formats;
    const char *dir, *name, *out, *sql, *units, *cpu_profile;
    op_out_window win;
    int by_rank, domain_summary, stats, help, progress, strict, agent_index;
} cli_args;

/* One command being run: its name and where its first message is kept. */
typedef struct cli_ctx {
    const char *cmd;
    char *err;
    size_t errlen;
    int said;
} cli_ctx;

/* Prints "omniprof CMD: MESSAGE" and keeps the first message for op_output_cli_err. */
static void cli_msg(cli_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cli_msg(cli_ctx *c, const char *fmt, ...) {
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    const char *red = op_term_sgr(stderr, OP_TERM_RED), *reset = op_term_sgr(stderr, OP_TERM_RESET);
    fprintf(stderr, "%somniprof%s%s:%s %s\n", red, c->cmd[0] ? " " : "", c->cmd, reset, line);
    if (!c->said && c->err && c->errlen) snprintf(c->err, c->errlen, "%s", line);
    c->said = 1;
}

static const char *const HELP_CONVERT =
    "usage: omniprof convert -i DB... -f FORMAT... [-d DIR] [-o NAME] [window options] [--stats]\n"
    "\n"
    "Converts rocpd databases (omniprof run, rocprofv3, omniprof merge) by streaming.\n"
    "  -i, --input DB...            input databases (any number)\n"
    "  -f, --output-format F...     pftrace, json, csv, folded, wall_clock, otf2, svg (several\n"
    "                               allowed); folded: NAME_folded.txt, CPU call stacks for\n"
    "                               flamegraph.pl/speedscope; wall_clock: NAME_wall_clock.txt/.json,\n"
    "                               the region profile; otf2: NAME_results.otf2, an OTF2 archive;\n"
    "                               svg: NAME_flamegraph.svg, the CPU samples as a flame graph\n"
    "  -d, --output-directory DIR   output directory (default: .)\n"
    "  -o, --output-file NAME       file name prefix (default: out): DIR/NAME_results.pftrace, ...\n"
    "      --stats                  also write NAME_<domain>_stats.csv and NAME_domain_stats.csv\n"
    "  -A, --agent-index MODE       CSV \"Agent N\": relative (default), absolute (node id), type-relative\n"
    "  window (every conversion):\n"
    "      --start T | N%           keep events from T ns (or N% of the trace extent)\n"
    "      --end T | N%             ... up to T ns (or N%)\n"
    "      --start-marker NAME      window starts at the first region/mark named NAME\n"
    "      --end-marker NAME        window ends at the end of the first such marker after the start\n"
    "      --inclusive [BOOL]       keep events with either endpoint inside (default: wholly inside)\n"
    "      --no-progress            no progress line on stderr (shown only on a terminal anyway)\n"
    "      --strict                 refuse an input that holds no rocpd tables (default: skip it\n"
    "                               with a warning)\n"
    "  -h, --help                   this text\n"
    "outputs never replace an input or an existing file: an existing NAME_<file> makes the output\n"
    "NAME-1_<file> (then -2, ...); each file appears only once it is whole.\n"
    "exit status: 0 ok, 1 failure, 2 bad input\n";

static const char *const HELP_MERGE =
    "usage: omniprof merge -i DB... -o MERGED.db\n"
    "\n"
    "Writes one rocpd database holding every row of every input (hundreds are fine; memory is\n"
    "bounded). One table set for all processes: each row keeps its process's guid and pid (ids are\n"
    "renumbered to stay unique); the views (rocpd_region, regions, kernels, top, ...) span them all,\n"
    "and convert/summary read each process as before. Refuses to overwrite any file.\n"
    "  -i, --input DB...     input databases\n"
    "  -o, --output FILE     the merged database (must not exist)\n"
    "      --strict          refuse an input that holds no rocpd tables (default: skip it)\n"
    "      --no-progress     no progress line on stderr (shown only on a terminal anyway)\n"
    "      --mpi             under the job launcher (mpirun -np K omniprof merge --mpi -o OUT DB...):\n"
    "                        the ranks merge shares of the inputs, then up a tree (`omniprof merge\n"
    "                        --mpi -h`; needs omniprof-merge-mpi, built where MPI is found)\n"
    "  -h, --help            this text\n"
    "exit status: 0 ok, 1 failure, 2 bad input\n";

static const char *const HELP_SUMMARY =
    "usage: omniprof summary -i DB... [--format console|csv|json|md] [--summary-by-rank]\n"
    "                        [--domain-summary] [-u sec|msec|usec|nsec] [-o FILE] [window options]\n"
    "                        [--cpu-profile flat|tree|both|none]\n"
    "\n"
    "Per-domain tables: NAME, DOMAIN, CALLS, DURATION, AVERAGE, PERCENT (INC), MIN, MAX, STDDEV,\n"
    "sorted by total duration (rocprofv3 / rocpd summary semantics; sample standard deviation).\n"
    "With two or more ranks in the inputs, cross-rank tables follow: per name, the min/mean/max\n"
    "over ranks of the per-rank totals and call counts and the slowest rank (docs/multinode.md).\n"
    "  -i, --input DB...        input databases\n"
    "  -f, --format F           console (default), csv, json, md\n"
    "      --summary-by-rank    one set of tables per process (MPI rank when known, else pid)\n"
    "  -D, --domain-summary     add a table with one row per domain\n"
    "  -u, --units U            sec, msec, usec, nsec (default nsec); also --summary-units\n"
    "  -o, --output FILE        write to FILE (default: stdout); FILE must not be an input, an\n"
    "                           existing FILE is kept and the summary goes to FILE-1 (then -2, ...)\n"
    "      --strict             refuse an input that holds no rocpd tables (default: skip it)\n"
    "      --cpu-profile P      CPU sampling profiles after the tables when the inputs hold\n"
    "                           samples: flat, tree, both (default) or none (not in csv)\n"
    "      --no-progress        no progress line on stderr (shown only on a terminal anyway)\n"
    "  -h, --help               this text\n"
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
    "  -o, --output FILE        write to FILE (default: stdout); FILE must not be an input, an\n"
    "                           existing FILE is kept and the result goes to FILE-1 (then -2, ...)\n"
    "      --strict             refuse an input that holds no rocpd tables (default: skip it)\n"
    "  -h, --help               this text\n"
    "exit status: 0 ok, 1 failure, 2 bad input\n";

/* --start/--end: nanoseconds on the databases' clock (that fit a 64-bit time) or a percentage
 * of the trace's extent ("25%", checked against 0..100 in window.c). Numbers are common/number.c's:
 * no NaN, infinity or overflow. */
#define TIME_NS_RANGE "[-9.2e18,9.2e18]"
static int parse_time(cli_ctx *c, const char *opt, const char *v, double *out, int *pct) {
    size_t n = strlen(v);
    char num[64];
    *pct = n > 0 && v[n - 1] == '%';
    if (n - (size_t)*pct >= sizeof num) goto bad;
    memcpy(num, v, n - (size_t)*pct);
    num[n - (size_t)*pct] = '\0';
    if (op_num_parse_checked(num, OP_NUM_TYPE_DOUBLE, *pct ? "" : TIME_NS_RANGE, out, NULL, NULL, NULL, 0) != OP_NUM_OK)
        goto bad;
    return 0;
bad:
    cli_msg(c, "%s '%s': expected nanoseconds in " TIME_NS_RANGE " (e.g. 1500000) or a percentage (e.g. 25%%)", opt, v);
    return -1;
}

static int parse_bool(const char *v) {
    if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on")) return 1;
    if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off")) return 0;
    return -1;
}

static int add_input(cli_args *a, const char *v) {
    if (op_grow(&a->inputs, &a->cap_inputs, a->n_inputs + 1, sizeof *a->inputs)) return -1;
    a->inputs[a->n_inputs++] = v;
    return 0;
}

/* -i/-f: `eq` (from --opt=v) or every following argument up to the next option. */
static int parse_list(cli_ctx *c, cli_args *a, int argc, char **argv, int *i, const char *key, const char *eq) {
    int inputs = !strcmp(key, "-i") || !strcmp(key, "--input");
    int got = 0;
    while (eq || (*i + 1 < argc && argv[*i + 1][0] != '-')) {
        const char *v = eq ? eq : argv[++*i];
        if (inputs) {
            if (add_input(a, v)) return 1;
        } else if (a->n_formats < 8) {
            a->formats[a->n_formats++] = v;
        }
        got++;
        if (eq) break;
    }
    if (!got) {
        cli_msg(c, "%s needs %s", key, inputs ? "at least one database" : "a format");
        return 2;
    }
    return 0;
}

/* Options with one value other than lists: 0, 2 (usage error, said) or -1 (not one of them). */
static int parse_value(cli_ctx *c, cli_args *a, const char *key, const char *v) {
#define IS(s) (!strcmp(key, s))
    if (IS("-d") || IS("--output-directory")) a->dir = v;
    else if (IS("-o") || IS("--output-file") || IS("--output")) *(!strcmp(c->cmd, "convert") ? &a->name : &a->out) = v;
    else if (IS("-q") || IS("--sql") || IS("--query")) a->sql = v;
    else if (IS("-u") || IS("--units") || IS("--summary-units")) a->units = v;
    else if (IS("--start-marker")) a->win.start_marker = v;
    else if (IS("--end-marker")) a->win.end_marker = v;
    else if (IS("--cpu-profile")) a->cpu_profile = v;
    else if (IS("--start")) {
        if (parse_time(c, key, v, &a->win.start, &a->win.start_pct)) return 2;
        a->win.has_start = 1;
    } else if (IS("--end")) {
        if (parse_time(c, key, v, &a->win.end, &a->win.end_pct)) return 2;
        a->win.has_end = 1;
    } else
        return -1;
#undef IS
    return 0;
}

static int takes_value(const char *cmd, const char *key) {
    static const char *const keys[] = {"-d", "--output-directory", "-o", "--output-file", "--output", "-q", "--sql",
                                       "--query", "-u", "--units", "--summary-units", "--start", "--end",
                                       "--start-marker", "--end-marker", "--cpu-profile", NULL};
    for (int i = 0; keys[i]; i++)
        if (!strcmp(key, keys[i])) return strcmp(key, "--cpu-profile") != 0 || !strcmp(cmd, "summary");
    return 0;
}

/* The options of each command (its --help lists exactly these): an option of another command is
 * refused as unknown rather than ignored. */
static int option_of(const char *cmd, const char *key) {
    static const char *const common[] = {"-h", "--help", "-i", "--input", "--strict", NULL};
    static const char *const window[] = {"--start", "--end", "--start-marker", "--end-marker", "--inclusive", NULL};
    static const char *const convert[] = {"-f", "--output-format", "-d", "--output-directory", "-o", "--output-file",
                                          "--stats", "-A", "--agent-index", "--no-progress", NULL};
    static const char *const merge[] = {"-o", "--output", "--no-progress", NULL};
    static const char *const summary[] = {"-f", "--format", "--summary-by-rank", "-D", "--domain-summary", "-u",
                                          "--units", "--summary-units", "-o", "--output", "--cpu-profile",
                                          "--no-progress", NULL};
    static const char *const query[] = {"-q", "--sql", "--query", "-f", "--format", "-o", "--output", NULL};
    const char *const *lists[3] = {common, NULL, NULL};
    if (!strcmp(cmd, "convert")) lists[1] = convert, lists[2] = window;
    else if (!strcmp(cmd, "merge")) lists[1] = merge;
    else if (!strcmp(cmd, "summary")) lists[1] = summary, lists[2] = window;
    else if (!strcmp(cmd, "query")) lists[1] = query;
    for (int l = 0; l < 3; l++)
        for (int k = 0; lists[l] && lists[l][k]; k++)
            if (!strcmp(key, lists[l][k])) return 1;
    return 0;
}

/* Returns 0, 1 (out of memory) or 2 on a usage error (message said). */
static int parse(cli_ctx *c, int argc, char **argv, cli_args *a) {
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
        int rc = 0;
        if (!option_of(c->cmd, key)) {
            cli_msg(c, "unknown option '%s' (see omniprof %s --help)", arg, c->cmd);
            rc = 2;
        } else if (IS("-h") || IS("--help")) {
            a->help = 1;
        } else if (IS("-i") || IS("--input") || IS("-f") || IS("--output-format") || IS("--format")) {
            rc = parse_list(c, a, argc, argv, &i, key, eq);
        } else if (takes_value(c->cmd, key)) {
            const char *v = eq ? eq : i + 1 < argc ? argv[++i] : NULL;
            if (!v) cli_msg(c, "%s needs a value", key);
            rc = v ? parse_value(c, a, key, v) : 2;
        } else if (IS("--inclusive")) {
            int v = 1;
            const char *t = eq ? eq : (i + 1 < argc && parse_bool(argv[i + 1]) >= 0 ? argv[++i] : NULL);
            if (t && (v = parse_bool(t)) < 0) {
                cli_msg(c, "--inclusive '%s': expected true or false", t);
                rc = 2;
            }
            a->win.inclusive = v;
        } else if ((IS("-A") || IS("--agent-index")) && !strcmp(c->cmd, "convert")) {
            const char *v = eq ? eq : i + 1 < argc ? argv[++i] : NULL;
            if (!v || (a->agent_index = op_output_parse_agent_index(v)) < 0) {
                cli_msg(c, "--agent-index '%s': expected absolute, relative or type-relative", v ? v : "");
                rc = 2;
            }
        } else if (IS("--summary-by-rank")) {
            a->by_rank = 1;
        } else if (IS("-D") || IS("--domain-summary")) {
            a->domain_summary = 1;
        } else if (IS("--stats")) {
            a->stats = 1;
        } else if (IS("--no-progress")) {
            a->progress = 0;
        } else if (IS("--strict")) {
            a->strict = 1;
        } else {
            cli_msg(c, "unknown option '%s' (see omniprof %s --help)", arg, c->cmd);
            rc = 2;
        }
#undef IS
        if (rc) return rc;
    }
    return 0;
}

/* --strict: an input that holds no rocpd tables is refused (the commands skip it otherwise). */
static int check_strict(cli_ctx *c, const cli_args *a) {
    for (size_t i = 0; a->strict && i < a->n_inputs; i++)
        if (op_src_lacks_tables(a->inputs[i])) {
            cli_msg(c, "%s holds no rocpd tables (a process stopped before its database was written?); refused "
                       "(--strict)", a->inputs[i]);
            return 2;
        }
    return 0;
}

static int run_convert(cli_ctx *c, const cli_args *a, char *err, size_t errlen) {
    unsigned f = a->stats ? OP_OUT_FMT_STATS : 0;
    for (size_t i = 0; i < a->n_formats; i++) {
        if (op_output_parse_formats(a->formats[i], OP_OUT_FMT_CONVERT, &f, err, errlen)) {
            cli_msg(c, "-f: %s", err);
            return 2;
        }
    }
    if (!f) {
        cli_msg(c, "no output format (-f pftrace|json|csv|folded|otf2|svg)");
        return 2;
    }
    op_out_options o = {.size = sizeof o, .inputs = a->inputs, .n_inputs = a->n_inputs, .formats = f,
                        .out_dir = a->dir, .out_name = a->name, .window = a->win, .progress = a->progress,
                        .agent_index = a->agent_index};
    return -op_output_convert(&o, err, errlen); /* negative: a library status, said by the caller */
}

static int table_format(cli_ctx *c, const cli_args *a, int *fmt) {
    *fmt = OP_OUT_SUMMARY_CONSOLE;
    if (a->n_formats == 0) return 0;
    if ((*fmt = op_output_parse_table_format(a->formats[0])) >= 0) return 0;
    cli_msg(c, "--format '%s': expected console, csv, json or md", a->formats[0]);
    return 2;
}

static int run_summary(cli_ctx *c, const cli_args *a, char *err, size_t errlen) {
    op_out_summary_options so = {.size = sizeof so, .by_rank = a->by_rank, .domain_summary = a->domain_summary,
                                 .window = a->win, .progress = a->progress};
    int fmt;
    if (table_format(c, a, &fmt)) return 2;
    so.format = fmt;
    if (a->cpu_profile) {
        static const char *const names[] = {"flat", "tree", "both", "none"};
        static const int values[] = {OP_OUT_CPU_PROFILE_FLAT, OP_OUT_CPU_PROFILE_TREE, OP_OUT_CPU_PROFILE_BOTH,
                                     OP_OUT_CPU_PROFILE_NONE};
        int k = 0;
        while (k < 4 && strcmp(a->cpu_profile, names[k])) k++;
        if (k == 4) {
            cli_msg(c, "--cpu-profile '%s': expected flat, tree, both or none", a->cpu_profile);
            return 2;
        }
        so.cpu_profile = values[k];
    }
    if (a->units) {
        int u = op_output_parse_units(a->units);
        if (u < 0) {
            cli_msg(c, "--units '%s': expected sec, msec, usec or nsec", a->units);
            return 2;
        }
        so.units = (op_out_units)u;
    }
    return -op_output_summary_path(a->inputs, a->n_inputs, &so, a->out, err, errlen);
}

static int run_query(cli_ctx *c, const cli_args *a, char *err, size_t errlen) {
    int fmt;
    if (table_format(c, a, &fmt)) return 2;
    if (!a->sql) {
        cli_msg(c, "no SQL given (--sql \"SELECT ...\")");
        return 2;
    }
    return -op_output_query_path(a->inputs, a->n_inputs, a->sql, fmt, a->out, err, errlen);
}

/* The command: 0, 2 (usage error, said) or a negative library status (err says why). */
static int run_command(cli_ctx *c, const cli_args *a, char *err, size_t errlen) {
    int rc = check_strict(c, a);
    if (rc) return rc;
    if (!strcmp(c->cmd, "convert")) return run_convert(c, a, err, errlen);
    if (!strcmp(c->cmd, "summary")) return run_summary(c, a, err, errlen);
    if (!strcmp(c->cmd, "query")) return run_query(c, a, err, errlen);
    if (!a->out) {
        cli_msg(c, "no output (-o MERGED.db)");
        return 2;
    }
    return -op_output_merge(a->inputs, a->n_inputs, a->out, a->progress, err, errlen);
}

OMNIPROF_API int op_output_cli_err(int argc, char **argv, char *msg, size_t msglen) {
    if (msg && msglen) msg[0] = 0;
    if (argc < 1 || !argv || !argv[0]) return 2;
    cli_ctx c = {.cmd = argv[0], .err = msg, .errlen = msglen};
    const char *help = !strcmp(c.cmd, "convert") ? HELP_CONVERT
                       : !strcmp(c.cmd, "merge") ? HELP_MERGE
                       : !strcmp(c.cmd, "summary") ? HELP_SUMMARY
                       : !strcmp(c.cmd, "query") ? HELP_QUERY : NULL;
    if (!help) {
        c.cmd = "";
        cli_msg(&c, "unknown command '%s': expected convert, merge, summary or query", argv[0]);
        return 2;
    }
    cli_args a;
    int rc = parse(&c, argc, argv, &a);
    if (!rc && a.help) {
        fputs(help, stdout);
    } else if (!rc && a.n_inputs == 0) {
        cli_msg(&c, "no input database given (-i DB...)");
        fputs(help, stderr);
        rc = 2;
    } else if (!rc) {
        char err[1024] = "";
        op_out_signals_install();
        rc = run_command(&c, &a, err, sizeof err);
        op_out_signals_restore();
        if (rc < 0) { /* a library status */
            cli_msg(&c, "%s", err[0] ? err : "failed");
            rc = -rc == OP_OUT_EINPUT ? 2 : 1;
        }
    }
    free(a.inputs);
    fflush(stdout);
    return rc;
}

OMNIPROF_API int op_output_cli(int argc, char **argv) { return op_output_cli_err(argc, argv, NULL, 0); }
