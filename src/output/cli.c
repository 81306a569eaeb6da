/* cli.c — `omniprof convert|merge|summary|query`: argument parsing and help, shared by the
 * omniprof binary (src/cli/cmd_*.c) and `python3 -m omniprof` and the Python functions (through
 * ctypes), so both give the same results, messages and exit codes: 0 ok, 1 failure, 2 bad input
 * or usage. Every message is one line "omniprof CMD: ..." on stderr, except that
 * op_output_cli_err hands the first one to its caller instead of printing it (the Python package
 * raises it as omniprof.Error, once).
 *
 * The options of each command are rows of the tables below, read by omniprof's one parser
 * (common/cli_opt.h), which also prints --help; the omniprof binary generates the man pages
 * and completion scripts from the same rows (op_output_cli_command). Options that take lists
 * (-i, -f) consume every following argument up to the next one that starts with '-'
 * (rocprofv3/rocpd style: `-i a.db b.db -f pftrace csv`); they may also be repeated.
 * `--opt=value` works for every option with a value.
 *
 * While a command runs, SIGINT/SIGTERM/SIGHUP remove its temporary files (outfile.c). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cli_opt.h"
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
    const char *weight;
} cli_args;

/* One command being run: its name and where its first message is kept. */
typedef struct cli_ctx {
    const char *cmd;
    char *err;
    size_t errlen;
    int said;
} cli_ctx;

/* Prints "omniprof CMD: MESSAGE"; the first message of op_output_cli_err is handed to its caller
 * instead of printed (the Python package raises it once, as omniprof.Error, or prints it). */
static void cli_msg(cli_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cli_msg(cli_ctx *c, const char *fmt, ...) {
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!c->said && c->err && c->errlen) {
        snprintf(c->err, c->errlen, "%s", line);
        c->said = 1;
        return;
    }
    const char *red = op_term_sgr(stderr, OP_TERM_RED), *reset = op_term_sgr(stderr, OP_TERM_RESET);
    fprintf(stderr, "%somniprof%s%s:%s %s\n", red, c->cmd[0] ? " " : "", c->cmd, reset, line);
    c->said = 1;
}

/* ---- the option tables (common/cli_opt.h): parsing, --help, man pages, completion ---- */

enum {
    X_INPUT,
    X_STRICT,
    X_HELP,
    X_START,
    X_END,
    X_START_MARKER,
    X_END_MARKER,
    X_INCLUSIVE,
    X_OUTPUT_FORMAT,
    X_OUTPUT_DIRECTORY,
    X_OUTPUT_FILE,
    X_STATS,
    X_AGENT_INDEX,
    X_NO_PROGRESS,
    X_OUTPUT,
    X_MPI,
    X_FORMAT,
    X_BY_RANK,
    X_DOMAIN_SUMMARY,
    X_UNITS,
    X_SUMMARY_UNITS,
    X_CPU_PROFILE,
    X_SQL,
    X_QUERY,
    X_FAN_IN,
    X_TIMES,
    X_WEIGHT,
};

#define ROW(ID, LONG, SHORT, KIND, META, VALUES, HELP)                                             \
    { ID, LONG, SHORT, KIND, META, VALUES, NULL, HELP, -1, 0, 0 }
#define INPUT_ROW                                                                                  \
    ROW(X_INPUT, "input", 'i', OP_CLI_LIST, "DB...", NULL, "input databases (any number)")
#define STRICT_ROW                                                                                 \
    ROW(X_STRICT, "strict", 0, OP_CLI_FLAG, NULL, NULL,                                            \
        "refuse an input that holds no rocpd tables (default: skip it with a warning)")
#define PROGRESS_ROW                                                                               \
    ROW(X_NO_PROGRESS, "no-progress", 0, OP_CLI_FLAG, NULL, NULL,                                  \
        "no progress line on stderr (shown only on a terminal anyway)")
#define HELP_ROW ROW(X_HELP, "help", 'h', OP_CLI_FLAG, NULL, NULL, "this text")
#define TABLE_FORMAT_ROW                                                                           \
    ROW(X_FORMAT, "format", 'f', OP_CLI_ENUM, NULL, "console|csv|json|md",                         \
        "how the tables are written (default console)")
#define OUTPUT_ROW(WHAT)                                                                           \
    ROW(X_OUTPUT, "output", 'o', OP_CLI_VALUE, "FILE", NULL,                                       \
        "write to FILE (default: stdout); FILE must not be an input, an existing FILE is kept "    \
        "and the " WHAT " goes to FILE-1 (then -2, ...)")

/* The window of events convert and summary keep (window.c). */
static const op_cli_option window_rows[] = {
    {X_START, "start", 0, OP_CLI_VALUE, "T|N%", NULL, "Window (every conversion)",
     "keep events from T ns (or N% of the trace extent)", -1, 0, 0},
    ROW(X_END, "end", 0, OP_CLI_VALUE, "T|N%", NULL, "... up to T ns (or N%)"),
    ROW(X_START_MARKER, "start-marker", 0, OP_CLI_VALUE, "NAME", NULL,
        "the window starts at the first region or mark named NAME"),
    ROW(X_END_MARKER, "end-marker", 0, OP_CLI_VALUE, "NAME", NULL,
        "the window ends at the end of the first such marker after the start"),
    ROW(X_INCLUSIVE, "inclusive", 0, OP_CLI_BOOL, NULL, NULL,
        "keep events with either endpoint inside (default: wholly inside)"),
};

static const op_cli_option convert_rows[] = {
    INPUT_ROW,
    ROW(X_OUTPUT_FORMAT, "output-format", 'f', OP_CLI_LIST, "FORMAT...",
        "pftrace|json|csv|folded|wall_clock|otf2|svg",
        "pftrace, json, csv, folded, wall_clock, otf2, svg (several allowed); folded: "
        "NAME_folded.txt, CPU call stacks for flamegraph.pl/speedscope; wall_clock: "
        "NAME_wall_clock.txt/.json, the region profile; otf2: NAME_results.otf2, an OTF2 archive; "
        "svg: NAME_flamegraph.svg, the CPU samples as a flame graph"),
    ROW(X_OUTPUT_DIRECTORY, "output-directory", 'd', OP_CLI_VALUE, "DIR", NULL,
        "output directory (default: .)"),
    ROW(X_OUTPUT_FILE, "output-file", 'o', OP_CLI_VALUE, "NAME", NULL,
        "file name prefix (default: out): DIR/NAME_results.pftrace, ..."),
    ROW(X_STATS, "stats", 0, OP_CLI_FLAG, NULL, NULL,
        "also write NAME_<domain>_stats.csv and NAME_domain_stats.csv"),
    ROW(X_AGENT_INDEX, "agent-index", 'A', OP_CLI_ENUM, "MODE", "absolute|relative|type-relative",
        "CSV \"Agent N\": relative (default), absolute (node id), type-relative"),
    ROW(X_WEIGHT, "weight", 0, OP_CLI_VALUE, "EVENT", NULL,
        "folded and svg: weigh each CPU sample by a perf_event counter it carries (omniprof run "
        "--perf-events: page-faults, cycles, ...) instead of 1"),
    PROGRESS_ROW,
    STRICT_ROW,
    HELP_ROW,
};

static const op_cli_option merge_rows[] = {
    INPUT_ROW,
    ROW(X_OUTPUT, "output", 'o', OP_CLI_VALUE, "FILE", NULL,
        "the merged database (must not exist)"),
    STRICT_ROW,
    PROGRESS_ROW,
    ROW(X_MPI, "mpi", 0, OP_CLI_FLAG, NULL, NULL,
        "under the job launcher (mpirun -np K omniprof merge --mpi -o OUT DB...): the ranks merge "
        "shares of the inputs, then up a tree (`omniprof merge --mpi -h`; needs "
        "omniprof-merge-mpi, built where MPI is found)"),
    ROW(X_FAN_IN, "fan-in", 0, OP_CLI_VALUE, "N", NULL,
        "with --mpi: inputs per merge step of the tree, 2..1024 (default 8)"),
    ROW(X_TIMES, "times", 0, OP_CLI_FLAG, NULL, NULL, "with --mpi: print the time of each step"),
    HELP_ROW,
};

static const op_cli_option summary_rows[] = {
    INPUT_ROW,
    TABLE_FORMAT_ROW,
    ROW(X_BY_RANK, "summary-by-rank", 0, OP_CLI_FLAG, NULL, NULL,
        "one set of tables per process (MPI rank when known, else pid)"),
    ROW(X_DOMAIN_SUMMARY, "domain-summary", 'D', OP_CLI_FLAG, NULL, NULL,
        "add a table with one row per domain"),
    ROW(X_UNITS, "units", 'u', OP_CLI_ENUM, NULL, "sec|msec|usec|nsec",
        "time unit of the tables (default nsec)"),
    ROW(X_SUMMARY_UNITS, "summary-units", 0, OP_CLI_ENUM, NULL, "sec|msec|usec|nsec",
        "the same as --units"),
    OUTPUT_ROW("summary"),
    STRICT_ROW,
    ROW(X_CPU_PROFILE, "cpu-profile", 0, OP_CLI_ENUM, NULL, "flat|tree|both|none",
        "CPU sampling profiles after the tables when the inputs hold samples: flat, tree, both "
        "(default) or none (not in csv)"),
    PROGRESS_ROW,
    HELP_ROW,
};

static const op_cli_option query_rows[] = {
    INPUT_ROW,
    ROW(X_SQL, "sql", 'q', OP_CLI_VALUE, "SQL", NULL, "the statements"),
    ROW(X_QUERY, "query", 0, OP_CLI_VALUE, "SQL", NULL, "the same as --sql"),
    TABLE_FORMAT_ROW,
    OUTPUT_ROW("result"),
    STRICT_ROW,
    HELP_ROW,
};

#define N_ROWS(a) (int)(sizeof(a) / sizeof((a)[0]))
static const op_cli_table convert_tables[] = {{convert_rows, N_ROWS(convert_rows), NULL, 0},
                                              {window_rows, N_ROWS(window_rows), NULL, 0}};
static const op_cli_table merge_tables[] = {{merge_rows, N_ROWS(merge_rows), NULL, 0}};
static const op_cli_table summary_tables[] = {{summary_rows, N_ROWS(summary_rows), NULL, 0},
                                              {window_rows, N_ROWS(window_rows), NULL, 0}};
static const op_cli_table query_tables[] = {{query_rows, N_ROWS(query_rows), NULL, 0}};

#define EXIT_NOTE "Exit status: 0 ok, 1 failure, 2 bad input."

static const op_cli_command g_commands[] = {
    {"convert", "convert databases to pftrace, json, csv, folded stacks, OTF2 or SVG",
     "omniprof convert -i DB... -f FORMAT... [-d DIR] [-o NAME] [window options] [--stats]",
     "Converts rocpd databases (omniprof run, rocprofv3, omniprof merge) by streaming.",
     "Outputs never replace an input or an existing file: an existing NAME_<file> makes the output "
     "NAME-1_<file> (then -2, ...); each file appears only once it is whole.\n"
     "\n" EXIT_NOTE,
     convert_tables, 2, 0, NULL},
    {"merge", "merge databases into one",
     "omniprof merge -i DB... -o MERGED.db\n"
     "mpirun -np K omniprof merge --mpi -o MERGED.db [-i] DB... [--fan-in F] [--times]",
     "Writes one rocpd database holding every row of every input (hundreds are fine; memory is "
     "bounded). One table set for all processes: each row keeps its process's guid and pid (ids "
     "are renumbered to stay unique); the views (rocpd_region, regions, kernels, top, ...) span "
     "them all, and convert/summary read each process as before. Refuses to overwrite any file.",
     "With --mpi, under the job launcher, the merge is spread over the K ranks: each rank merges "
     "its share of the inputs (given with -i or as plain arguments), the partial databases are "
     "merged up a tree of fan-in F (default 8), and rank 0 writes MERGED.db. Partials go to "
     "MERGED.db.mpi-parts-PID beside the output: every rank must see that folder (a shared file "
     "system). The exit status is the same on every rank.\n"
     "\n" EXIT_NOTE,
     merge_tables, 1, 0, NULL},
    {"summary", "print summary tables of databases",
     "omniprof summary -i DB... [--format console|csv|json|md] [--summary-by-rank]\n"
     "                 [--domain-summary] [-u sec|msec|usec|nsec] [-o FILE] [window options]\n"
     "                 [--cpu-profile flat|tree|both|none]",
     "Per-domain tables: NAME, DOMAIN, CALLS, DURATION, AVERAGE, PERCENT (INC), MIN, MAX, STDDEV, "
     "sorted by total duration (rocprofv3 / rocpd summary semantics; sample standard deviation). "
     "With two or more ranks in the inputs, cross-rank tables follow: per name, the min/mean/max "
     "over ranks of the per-rank totals and call counts and the slowest rank (docs/multinode.md).",
     EXIT_NOTE, summary_tables, 2, 0, NULL},
    {"query", "run read-only SQL over databases",
     "omniprof query -i DB... --sql \"SELECT ...\" [--format console|csv|json|md] [-o FILE]",
     "Runs read-only SQL over the union of the inputs' views (rocpd_* tables as views, regions, "
     "samples, kernels, memory_copies, memory_allocations, pmc_events, counters_collection, "
     "top_kernels, top, busy, omniprof_cpu_samples, omniprof_metrics, ...). Statements that write "
     "are refused.",
     EXIT_NOTE, query_tables, 1, 0, NULL},
};

OMNIPROF_API const struct op_cli_command *op_output_cli_command(const char *name) {
    for (size_t i = 0; name && i < sizeof g_commands / sizeof g_commands[0]; i++)
        if (!strcmp(name, g_commands[i].name)) return &g_commands[i];
    return NULL;
}

OMNIPROF_API const struct op_cli_command *op_output_cli_command_at(size_t i) {
    return i < sizeof g_commands / sizeof g_commands[0] ? &g_commands[i] : NULL;
}

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

static int add_input(cli_args *a, const char *v) {
    if (op_grow(&a->inputs, &a->cap_inputs, a->n_inputs + 1, sizeof *a->inputs)) return -1;
    a->inputs[a->n_inputs++] = v;
    return 0;
}

/* The parser's callback: one value of one option into cli_args. 0, 1 (out of memory) or 2
 * (usage error, said). */
typedef struct parse_ctx {
    cli_ctx *c;
    cli_args *a;
} parse_ctx;

static int on_option(void *ctx, const op_cli_option *o, const char *v, int nth,
                     const char *spelled) {
    cli_ctx *c = ((parse_ctx *)ctx)->c;
    cli_args *a = ((parse_ctx *)ctx)->a;
    (void)nth;
    switch (o->id) {
    case X_INPUT: return add_input(a, v) ? 1 : 0;
    case X_OUTPUT_FORMAT:
    case X_FORMAT:
        if (a->n_formats < 8) a->formats[a->n_formats++] = v;
        break;
    case X_HELP: a->help = 1; break;
    case X_STRICT: a->strict = 1; break;
    case X_NO_PROGRESS: a->progress = 0; break;
    case X_OUTPUT_DIRECTORY: a->dir = v; break;
    case X_OUTPUT_FILE: a->name = v; break;
    case X_OUTPUT: a->out = v; break;
    case X_SQL:
    case X_QUERY: a->sql = v; break;
    case X_UNITS:
    case X_SUMMARY_UNITS: a->units = v; break;
    case X_START_MARKER: a->win.start_marker = v; break;
    case X_END_MARKER: a->win.end_marker = v; break;
    case X_CPU_PROFILE: a->cpu_profile = v; break;
    case X_START:
        if (parse_time(c, spelled, v, &a->win.start, &a->win.start_pct)) return 2;
        a->win.has_start = 1;
        break;
    case X_END:
        if (parse_time(c, spelled, v, &a->win.end, &a->win.end_pct)) return 2;
        a->win.has_end = 1;
        break;
    case X_INCLUSIVE: a->win.inclusive = !strcmp(v, "true"); break;
    case X_AGENT_INDEX: a->agent_index = op_output_parse_agent_index(v); break;
    case X_WEIGHT: a->weight = v; break;
    case X_BY_RANK: a->by_rank = 1; break;
    case X_DOMAIN_SUMMARY: a->domain_summary = 1; break;
    case X_STATS: a->stats = 1; break;
    case X_MPI: break; /* cmd_merge.c hands --mpi to omniprof-merge-mpi before this parse */
    case X_FAN_IN:
    case X_TIMES:
        cli_msg(c, "%s is an option of the tree merge: give --mpi too", spelled);
        return 2;
    }
    return 0;
}

/* Returns 0, 1 (out of memory) or 2 on a usage error (message said). */
static int parse(cli_ctx *c, const op_cli_command *cmd, int argc, char **argv, cli_args *a) {
    memset(a, 0, sizeof(*a));
    a->win.size = sizeof(a->win);
    a->progress = 1;
    parse_ctx pc = {c, a};
    char err[1024];
    int rest = argc;
    int rc = op_cli_parse(cmd, argc, argv, on_option, &pc, &rest, err, sizeof err);
    if (rc == -1) {
        cli_msg(c, "%s", err);
        return 2;
    }
    return rc;
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
    if (a->weight && !(f & (OP_OUT_FMT_FOLDED | OP_OUT_FMT_SVG))) {
        cli_msg(c, "--weight %s weighs the CPU samples of -f folded or -f svg; give one of them",
                a->weight);
        return 2;
    }
    op_out_options o = {.size = sizeof o,
                        .inputs = a->inputs,
                        .n_inputs = a->n_inputs,
                        .formats = f,
                        .out_dir = a->dir,
                        .out_name = a->name,
                        .window = a->win,
                        .progress = a->progress,
                        .agent_index = a->agent_index,
                        .weight = a->weight};
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
    const op_cli_command *cmd = op_output_cli_command(c.cmd);
    if (!cmd) {
        c.cmd = "";
        char names[128] = "";
        size_t n = 0;
        for (size_t i = 0; op_output_cli_command_at(i) && n < sizeof names; i++)
            n += (size_t)snprintf(names + n, sizeof names - n, "%s%s",
                                  !i ? "" : op_output_cli_command_at(i + 1) ? ", " : " or ",
                                  g_commands[i].name);
        cli_msg(&c, "unknown command '%s': expected %s", argv[0], names);
        return 2;
    }
    cli_args a;
    int rc = parse(&c, cmd, argc, argv, &a);
    if (!rc && a.help) {
        op_cli_print_help(stdout, cmd);
    } else if (!rc && a.n_inputs == 0) {
        cli_msg(&c, "no input database given (-i DB...)");
        op_cli_print_help(stderr, cmd);
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
