/* output.h — libomniprof-output: streaming post-processing of rocpd databases.
 *
 * Everything here reads databases in the rocpd schema (version 3): the ones `omniprof run`
 * writes, the ones AMD's rocprofv3 writes, and merged ones (several uuid-suffixed table sets in
 * one file). Inputs are untrusted: they are opened read-only (`file:PATH?mode=ro`), with
 * SQLITE_DBCONFIG_DEFENSIVE on and `trusted_schema` off; a file that is not a database, is
 * truncated or corrupt, or lacks the rocpd tables is reported by name with the reason.
 *
 * Invariants:
 *  (1) Bounded memory: no function here holds a trace in memory. Rows are read with SQLite
 *      statements and written as they come; inputs are opened one at a time for conversion,
 *      statistics and merge. Memory grows only with the number of distinct names, threads,
 *      streams and counters (the "dictionary" of a trace), never with the number of events;
 *      the one exception is capped: the report's event-level timeline keeps at most
 *      RP_EVENT_BUDGET events (report.h, report_timeline.c), whatever the input's size.
 *  (2) Every process stays distinguishable: each uuid-suffixed table set (one per profiled
 *      process) becomes its own Perfetto sequence / JSON pid; merges keep every guid and pid.
 *  (3) Names are bytes: quotes, 10 KB names and non-UTF-8 bytes are written intact — raw in
 *      Perfetto and CSV (CSV quotes per RFC 4180), as \uDCxx escapes (Python's
 *      "surrogateescape") in JSON.
 *  (4) Nothing the user had is lost: an output that is an input (same inode) is refused naming
 *      both; an existing file is kept and the output takes the -N suffix (NAME-1_results.json,
 *      report-1.txt; merge refuses an existing database); every file is written under a
 *      temporary name and appears only whole (outfile.c).
 *  (5) One input check for every command (inputs.c): an input given twice, or a process in two
 *      inputs, is refused; an input holding no rocpd tables is skipped with one warning (the
 *      CLI's --strict refuses it).
 *
 * Error reporting: every function returns 0 on success, OP_OUT_EINPUT (2) when an input or an
 * argument is bad, OP_OUT_EFAIL (1) when processing failed; `err` (may be NULL) receives one
 * line naming the input and the reason. Exit codes of the CLI commands are these numbers.
 *
 * Thread safety: functions share no state; different handles may be used from different
 * threads, one handle from one thread at a time. */
#ifndef OMNIPROF_OUTPUT_H
#define OMNIPROF_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <omniprof/defines.h>

OMNIPROF_EXTERN_C_BEGIN

#define OP_OUT_OK 0
#define OP_OUT_EFAIL 1
#define OP_OUT_EINPUT 2

/* Output formats of op_output_convert (a bit set). */
#define OP_OUT_FMT_PFTRACE 0x1u
#define OP_OUT_FMT_JSON 0x2u
#define OP_OUT_FMT_CSV 0x4u
#define OP_OUT_FMT_STATS 0x8u /* the *_stats.csv files and domain_stats.csv */
#define OP_OUT_FMT_FOLDED 0x10u /* <name>_folded.txt: folded CPU call stacks (profile_cpu.h) */
#define OP_OUT_FMT_ROCPD 0x20u  /* the rocpd database itself (what `omniprof run` writes); converters ignore it */
#define OP_OUT_FMT_WALL_CLOCK 0x40u /* <name>_wall_clock.txt/.json: the region profile (wall_clock.c) */
#define OP_OUT_FMT_OTF2 0x80u /* <name>_results.otf2 + .def + folder: the OTF2 archive (otf2.c) */
#define OP_OUT_FMT_SVG 0x100u /* <name>_flamegraph.svg: the CPU samples as a flame graph (report_flame.c) */
#define OP_OUT_FMT_CONVERT \
    (OP_OUT_FMT_PFTRACE | OP_OUT_FMT_JSON | OP_OUT_FMT_CSV | OP_OUT_FMT_STATS | OP_OUT_FMT_FOLDED | OP_OUT_FMT_WALL_CLOCK | \
     OP_OUT_FMT_OTF2 | OP_OUT_FMT_SVG)
#define OP_OUT_FMT_RUN \
    (OP_OUT_FMT_ROCPD | OP_OUT_FMT_PFTRACE | OP_OUT_FMT_JSON | OP_OUT_FMT_CSV | OP_OUT_FMT_FOLDED | OP_OUT_FMT_WALL_CLOCK | \
     OP_OUT_FMT_OTF2)

/**
 * @brief **op_output_parse_formats()** — the one parser of output format names, used by
 * `omniprof convert -f` and `omniprof run -f`: names rocpd, pftrace, json, csv, folded, stats, wall_clock, otf2,
 * separated by spaces or commas (case-sensitive, as rocprofv3's). Each name must be in
 * `allowed` (OP_OUT_FMT_* bits: OP_OUT_FMT_CONVERT, OP_OUT_FMT_RUN, ...).
 * @param text the list (one argument, or several joined with spaces)
 * @param allowed the names this command accepts
 * @param formats receives the OP_OUT_FMT_* bits, OR-ed into what it holds
 * @return 0, or OP_OUT_EINPUT with err naming the bad name and the valid ones (an empty list is
 *         an error too).
 */
OMNIPROF_API int op_output_parse_formats(const char *text, unsigned allowed, unsigned *formats, char *err,
                                         size_t errlen);

/* Units of summary durations. */
typedef enum op_out_units {
    OP_OUT_NSEC = 0,
    OP_OUT_USEC = 1,
    OP_OUT_MSEC = 2,
    OP_OUT_SEC = 3,
} op_out_units;

/* A time window. Unset fields leave that side open. start/end are absolute ns (the
 * database's clock) unless *_pct is set, in which case they are percentages (0..100) of the
 * trace's extent [first event start, last event end] over all inputs. A marker name sets that
 * side to the start (start_marker) or end (end_marker) of the first region or sample of that
 * name. Exclusive (default): an event is kept when it lies wholly inside [start, end];
 * inclusive: when either endpoint lies inside (the rocpd rule). */
typedef struct op_out_window {
    size_t size;
    int has_start, has_end;
    double start, end;
    int start_pct, end_pct;
    const char *start_marker, *end_marker;
    int inclusive;
} op_out_window;

/* Which CPU sampling profiles op_output_summary appends (op_out_summary_options.cpu_profile). */
#define OP_OUT_CPU_PROFILE_AUTO 0 /* flat and call tree, when the inputs hold CPU samples */
#define OP_OUT_CPU_PROFILE_FLAT 1
#define OP_OUT_CPU_PROFILE_TREE 2
#define OP_OUT_CPU_PROFILE_BOTH 3
#define OP_OUT_CPU_PROFILE_NONE 4

/* Options of one conversion. */
typedef struct op_out_options {
    size_t size;                /* sizeof(op_out_options) */
    const char *const *inputs;  /* database paths */
    size_t n_inputs;
    unsigned formats;           /* OP_OUT_FMT_* */
    const char *out_dir;        /* default "." ; created if missing */
    const char *out_name;       /* file prefix; default "out": files are <dir>/<name>_<file> */
    op_out_window window;
    int progress;               /* 1: progress on stderr (only when stderr is a terminal) */
    /* How CSV rows name agents ("Agent N", rocprofv3's -A): OP_OUT_AGENT_RELATIVE (the logical
     * index, default), _ABSOLUTE (the node id), _TYPE_RELATIVE (the index among agents of the
     * same type). Read only when size covers it. */
    int agent_index;
    /* folded and svg: weigh each sample by the increase of this perf_event counter of the
     * samples (omniprof_cpu_sample_event's name; docs/cpu.md "Counters") instead of 1; NULL:
     * samples. Read only when size covers it. */
    const char *weight;
} op_out_options;
#define OP_OUT_AGENT_RELATIVE 0
#define OP_OUT_AGENT_ABSOLUTE 1
#define OP_OUT_AGENT_TYPE_RELATIVE 2
/* "absolute" | "relative" | "type-relative" → OP_OUT_AGENT_*, or -1. */
OMNIPROF_API int op_output_parse_agent_index(const char *text);

/**
 * @brief **op_output_convert()** converts the inputs into every requested format.
 * Files: <dir>/<name>_results.pftrace, <name>_results.json, rocprofv3's CSV files
 * (<name>_kernel_trace.csv, ...), and with OP_OUT_FMT_STATS <name>_<domain>_stats.csv.
 * @return 0, OP_OUT_EINPUT (bad input/window), OP_OUT_EFAIL (write or read failure).
 */
OMNIPROF_API int op_output_convert(const op_out_options *opts, char *err, size_t errlen);

/* Streaming handle: open, write chunks, close. One format per handle. */
typedef struct op_out_stream op_out_stream;

/**
 * @brief **op_output_open()** prepares a conversion of opts->inputs into one format
 * (exactly one OP_OUT_FMT_* bit in opts->formats). Inputs are validated here.
 * @return a handle, or NULL with err filled (and *status set to OP_OUT_EINPUT/EFAIL when
 *         status is not NULL).
 */
OMNIPROF_API op_out_stream *op_output_open(const op_out_options *opts, int *status, char *err,
                                           size_t errlen);
/**
 * @brief **op_output_write()** converts up to max_events more events (0 = all that remain).
 * @return 1 when more remain, 0 when done, or -OP_OUT_EFAIL/-OP_OUT_EINPUT on error.
 */
OMNIPROF_API int op_output_write(op_out_stream *s, uint64_t max_events, char *err, size_t errlen);
/** @brief Events written so far by the handle. */
OMNIPROF_API uint64_t op_output_events(const op_out_stream *s);
/** @brief **op_output_close()** finishes the files and frees the handle (NULL is fine).
 *  @return 0 or OP_OUT_EFAIL when finishing a file failed. */
OMNIPROF_API int op_output_close(op_out_stream *s, char *err, size_t errlen);

/**
 * @brief **op_output_wall_clock()** writes <dir>/<name>_wall_clock.txt and .json: the region
 * profile (omniprof_region_profile rows of every input) as rocprof-sys's wall_clock files, one
 * row per thread, region node and component, each with its process's pid.
 * @return 0, OP_OUT_EINPUT (a bad input, named in err) or OP_OUT_EFAIL.
 */
OMNIPROF_API int op_output_wall_clock(const char *const *inputs, size_t n_inputs, const char *dir, const char *name,
                                      char *err, size_t errlen);

/**
 * @brief **op_output_stats_csv()** writes <dir>/<name>_<domain>_stats.csv for every domain
 * found in the inputs, and <dir>/<name>_domain_stats.csv.
 */
OMNIPROF_API int op_output_stats_csv(const char *const *inputs, size_t n_inputs,
                                     const char *out_dir, const char *out_name,
                                     const op_out_window *window, char *err, size_t errlen);

/* Summary formats. */
#define OP_OUT_SUMMARY_CONSOLE 0
#define OP_OUT_SUMMARY_CSV 1
#define OP_OUT_SUMMARY_JSON 2
#define OP_OUT_SUMMARY_MD 3

typedef struct op_out_summary_options {
    size_t size;
    int format;         /* OP_OUT_SUMMARY_* */
    op_out_units units; /* durations in the tables */
    int by_rank;        /* one set of tables per process (rank when known, else pid) */
    int domain_summary; /* add the per-domain table */
    op_out_window window;
    int cpu_profile;    /* OP_OUT_CPU_PROFILE_*: profiles of the CPU samples after the tables
                         * (read only when size covers it; 0 = AUTO) */
    /* rocprofv3's --summary-groups: after the tables of a process group, one table per regex
     * (POSIX extended) over the rows of every domain whose name matches it, percentages of that
     * table's total (read only when size covers them; NULL/0 = none). */
    const char *const *domain_groups;
    size_t n_domain_groups;
    int progress; /* 1: a progress line on stderr while the inputs are read (only on a terminal; read
                   * only when size covers it) */
} op_out_summary_options;

/**
 * @brief **op_output_summary()** writes rocprofv3-style summary tables (per domain: NAME,
 * DOMAIN, CALLS, DURATION, AVERAGE, PERCENT (INC), MIN, MAX, STDDEV, sorted by total
 * duration) to `out`. opts may be NULL (console, nsec). When the inputs hold CPU call-stack
 * samples, the flat and call-tree profiles (profile_cpu.h) follow the tables (opts->cpu_profile
 * chooses; console/md: text, json: one more list element {"summary": "OMNIPROF CPU PROFILE",
 * "cpu_profile": {...}}; csv: left out). The profiles count the samples inside the window.
 */
OMNIPROF_API int op_output_summary(const char *const *inputs, size_t n_inputs,
                                   const op_out_summary_options *opts, FILE *out, char *err,
                                   size_t errlen);
/** @brief Same as op_output_summary, into a file (path "-" or NULL: stdout). */
OMNIPROF_API int op_output_summary_path(const char *const *inputs, size_t n_inputs,
                                        const op_out_summary_options *opts, const char *path,
                                        char *err, size_t errlen);

/**
 * @brief **op_output_merge()** writes one rocpd database holding every row of every input:
 * each input table set is copied under its own uuid suffix (so every guid, pid and id is
 * kept) and the plain-named views span all of them. Refuses to overwrite an existing file
 * (OP_OUT_EINPUT); memory is bounded whatever the number of inputs.
 */
OMNIPROF_API int op_output_merge(const char *const *inputs, size_t n_inputs,
                                 const char *out_path, int progress, char *err, size_t errlen);

/* Options of op_output_report. */
typedef struct op_out_report_options {
    size_t size;               /* sizeof(op_out_report_options) */
    const char *const *inputs; /* database paths */
    size_t n_inputs;
    const char *output;        /* the HTML file (NULL: "report.html"); never an input, an existing
                                * file is kept and the report takes the -N suffix (report-1.html) */
    const char *title;         /* the page's title (NULL: "omniprof report — <command>") */
    int progress;              /* 1: progress on stderr (only when stderr is a terminal) */
    int strict;                /* 1: refuse an input that holds no rocpd tables (else: skipped) */
} op_out_report_options;
#define op_out_report_options__last_field strict

/**
 * @brief **op_output_report()** writes one self-contained HTML page (inline script and style,
 * no network, works from file://) summarizing the inputs: overview, the largest kernels, API
 * calls, regions, MPI calls and counters, a timeline per process/thread/stream, the CPU
 * profile as a flame graph and flat profile, causal profiles and per-rank imbalance
 * (docs/report.md). The page holds aggregates, never one entry per event: its size is bounded
 * whatever the number of events.
 * @param written receives the path the report was written to (may be NULL)
 * @return 0, OP_OUT_EINPUT (bad input), OP_OUT_EFAIL (read or write failure), err filled.
 */
OMNIPROF_API int op_output_report(const op_out_report_options *opts, char *written, size_t written_len, char *err,
                                  size_t errlen);

/* Query output formats. */
#define OP_OUT_QUERY_CONSOLE 0
#define OP_OUT_QUERY_CSV 1
#define OP_OUT_QUERY_JSON 2
#define OP_OUT_QUERY_MD 3

/**
 * @brief **op_output_query()** runs read-only SQL over the union of the inputs' views and
 * writes the rows to `out`. A statement that would write is refused (OP_OUT_EINPUT).
 */
OMNIPROF_API int op_output_query(const char *const *inputs, size_t n_inputs, const char *sql,
                                 int format, FILE *out, char *err, size_t errlen);
/** @brief Same as op_output_query, into the file `path` ("-" or NULL: stdout), written as every
 *  output is (never over an input: refused; an existing file: the -N suffix). */
OMNIPROF_API int op_output_query_path(const char *const *inputs, size_t n_inputs, const char *sql, int format,
                                      const char *path, char *err, size_t errlen);

/**
 * @brief **op_output_cli()** — the `omniprof convert|merge|summary|query` commands, shared by
 * the omniprof binary and `python3 -m omniprof`. argv[0] is the command name.
 * @return the exit status (0, 1, 2).
 */
OMNIPROF_API int op_output_cli(int argc, char **argv);
/** @brief **op_output_cli_err()** is op_output_cli that copies its first message (without the
 *  "omniprof CMD: " prefix) into msg ("" when none) instead of printing it (later ones are
 *  printed): the Python package raises it, or prints it for `python3 -m omniprof`. */
OMNIPROF_API int op_output_cli_err(int argc, char **argv, char *msg, size_t msglen);
/** @brief **op_output_cli_command()** — the option table and texts of `convert`, `merge`,
 *  `summary` or `query` (common/cli_opt.h), from which the omniprof binary prints their man
 *  pages and completion; NULL for another name. */
struct op_cli_command;
OMNIPROF_API const struct op_cli_command *op_output_cli_command(const char *name);
/** @brief **op_output_cli_command_at()** — the i-th of those commands (0, 1, ...), NULL past the
 *  last: the one list `python3 -m omniprof`'s usage and the "unknown command" message read. */
OMNIPROF_API const struct op_cli_command *op_output_cli_command_at(size_t i);

/**
 * @brief **op_output_union_sql()** — the union of many databases, for another connection: the
 * SQL script (ATTACH statements, then CREATE TEMP VIEW statements) that builds on a connection
 * opened on ":memory:" with URI filenames enabled exactly the union `omniprof query` runs on
 * (plain rocpd views and data/summary/omniprof views spanning every input). The Python
 * package's connect() runs it. Inputs are checked as query checks them (each a rocpd database,
 * no process in two inputs). More than 9 inputs are first merged into a temporary database
 * whose path is returned in *tmp_path (remove it once the connection is closed); else
 * *tmp_path is NULL.
 * @return the script (free it with op_output_free), or NULL with err filled and *status set.
 */
OMNIPROF_API char *op_output_union_sql(const char *const *inputs, size_t n_inputs, char **tmp_path, int *status,
                                       char *err, size_t errlen);
/**
 * @brief **op_output_remove_temps_on_signals()** — on (1): SIGINT, SIGTERM and SIGHUP remove the
 * temporary files of the outputs being written (every output is written under a temporary name
 * and renamed when whole), then take their previous course; an operation whose process goes on
 * (a handler of the caller's) stops with "interrupted". off (0): the previous handlers are
 * back. The CLI commands turn it on for their duration; the launcher turns it on for its
 * post-run conversions. Not thread-safe (call it from the main thread).
 */
OMNIPROF_API void op_output_remove_temps_on_signals(int on);
/** @brief Frees memory returned by this library (NULL is fine). */
OMNIPROF_API void op_output_free(void *p);

/** @brief **op_output_views_sql()**: the text of the rocpd data, summary and omniprof views
 * (`CREATE VIEW IF NOT EXISTS ...;`), for re-creating them as TEMP views over unions of
 * attached databases (the Python package's connect() does). Static storage, never NULL. */
OMNIPROF_API const char *op_output_views_sql(void);

/** @brief Parses "sec|msec|usec|nsec" (also s, ms, us, ns); returns -1 when unknown. */
OMNIPROF_API int op_output_parse_units(const char *text);
/** @brief Parses a table format of summary and query: "console|csv|json|md" ->
 *  OP_OUT_SUMMARY_* (== OP_OUT_QUERY_*); returns -1 when unknown. */
OMNIPROF_API int op_output_parse_table_format(const char *text);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_OUTPUT_H */
