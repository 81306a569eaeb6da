/* internal.h — shared internals of libomniprof-output: text fields (text_fields.c), the protobuf
 * writer (protobuf.c), time windows (window.c), statistics (stats.c), progress lines
 * (progress.c), output files (outfile.c) and the per-format writers. Inputs are read only
 * through the database reader (src/db/reader.h: table sets, event rows, lookups); no SQL here. */
#ifndef OMNIPROF_OUTPUT_INTERNAL_H
#define OMNIPROF_OUTPUT_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/buf.h"
#include "common/escape.h"
#include "common/u64map.h"
#include "db/reader.h"
#include "output/output.h"

/* ---- text fields over op_buf (common/buf.h; text_fields.c) ------------------------------ */
/* JSON string body (no quotes): escapes ", \, control bytes; invalid UTF-8 bytes as \uDCxx. */
void op_buf_json_str(op_buf *b, const unsigned char *s, size_t n);
/* CSV field (RFC 4180): quoted when always_quote or when it holds , " CR or LF; " doubled. */
void op_buf_csv_str(op_buf *b, const unsigned char *s, size_t n, int always_quote);
/* A name as a console or Markdown table shows it, so that no name can act on the terminal
 * (set its title, clear the screen, move the cursor) or break the table: newline, CR and tab
 * become a space; every other control character — C0 bytes, DEL, the C1 controls U+0080..U+009F
 * — and each byte that is not part of valid UTF-8 becomes the text \xHH of its byte(s); each
 * byte of `special` (NULL: none; Markdown passes "|") gets a backslash before it. */
void op_buf_term_str(op_buf *b, const unsigned char *s, size_t n, const char *special);
/* The same for a C string, into `scratch` (emptied first); returns its NUL-terminated text, ""
 * for NULL or when memory ran out. */
const char *op_term_text(op_buf *scratch, const char *s);
/* Shortest decimal text that reads back as v (buf >= 32 bytes); returns buf. */
const char *op_fmt_double(char *buf, size_t n, double v);

/* ---- protobuf wire writer (protobuf.c) ------------------------------------------------- */
/* How a field is encoded: the wire type in bits 0-2, bit 3 for a zigzag varint (sint32/64),
 * bit 4 for an embedded message. The header generated from a schema (gen_proto_fields.py) gives
 * each field's encoding as one of these, so that a writer can check at compile time that it
 * writes a field the way the schema declares it. */
enum pb_encoding {
    PB_ENC_VARINT = 0, /* int32, int64, uint32, uint64, bool, enum */
    PB_ENC_I64 = 1,    /* fixed64, sfixed64, double */
    PB_ENC_LEN = 2,    /* string, bytes, packed repeated scalars */
    PB_ENC_I32 = 5,    /* fixed32, sfixed32, float */
    PB_ENC_ZIGZAG = 8, /* sint32, sint64 (varint of the zigzag value) */
    PB_ENC_MSG = 18,   /* embedded message (pb_begin .. pb_end) */
};
void pb_varint_slow(op_buf *b, uint64_t v);
/* Varints are most of a trace's bytes: the one-byte case is inline. */
static inline void pb_varint(op_buf *b, uint64_t v) {
    if (v < 0x80 && b->len < b->cap) {
        b->p[b->len++] = (unsigned char)v;
        return;
    }
    pb_varint_slow(b, v);
}
static inline void pb_uint(op_buf *b, uint32_t field, uint64_t v) {
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, v);
}
void pb_int(op_buf *b, uint32_t field, int64_t v);
void pb_fixed64(op_buf *b, uint32_t field, uint64_t v);
void pb_double(op_buf *b, uint32_t field, double v);
void pb_bytes(op_buf *b, uint32_t field, const void *data, size_t n);
void pb_str(op_buf *b, uint32_t field, const char *s);
/* Nested message: pb_begin writes the tag and reserves 4 length bytes; pb_end writes the length
 * (minimal varint, body moved back; see protobuf.c). pb_begin returns the offset to pass to pb_end;
 * nested messages must end innermost first. */
size_t pb_begin(op_buf *b, uint32_t field);
/* A protobuf `string`: valid UTF-8 is written as is; otherwise each invalid byte becomes the
 * four characters \xNN (protobuf strings must be UTF-8; invariant (3) of output.h). */
void pb_text(op_buf *b, uint32_t field, const unsigned char *s, size_t n);
void pb_end(op_buf *b, size_t off);

/* ---- time windows (window.c) ------------------------------------------------------------ */
/* Resolves w over all inputs (opens each in turn). */
int op_win_resolve(const op_out_window *w, const char *const *inputs, size_t n, op_win *out,
                   char *err, size_t errlen);

/* ---- statistics (stats.c) --------------------------------------------------------------- */
typedef struct op_stats op_stats;
op_stats *op_stats_new(void);
void op_stats_free(op_stats *st);
/* Accumulates every domain of every set of every input (group key optional: by process). */
int op_stats_collect(op_stats *st, const char *const *inputs, size_t n, const op_win *w,
                     int by_process, char *err, size_t errlen);
/* Progress: a stage per input of op_stats_collect (p NULL: none). */
typedef struct op_progress op_progress;
void op_stats_progress(op_stats *st, op_progress *p);
/* One collected row: its group (0 without by_process; else the process group, labelled "RANK r
 * (pid p, host)" or "PROCESS p (host)", ordered by rank then pid), domain and name. */
typedef struct op_stats_view {
    uint64_t group;
    const char *group_label;
    int64_t group_order;
    const char *domain;
    const unsigned char *name;
    size_t name_len;
    uint64_t calls;
    double total, sumsq;
    int64_t min, max;
} op_stats_view;
/* Calls fn for every collected row (in no particular order); stops at a non-zero return. */
int op_stats_each(const op_stats *st, int (*fn)(const op_stats_view *, void *), void *arg);
/* Sample standard deviation (n - 1) from a count, a sum and a sum of squares; 0 for one call. */
double op_stats_stddev(uint64_t calls, double total, double sumsq);
/* The statistics of st summed over its process groups (one group, 0); NULL when out of memory. */
op_stats *op_stats_fold(const op_stats *st);
/* Summary table cells (stats.c): unit names and divisors, durations (integers in ns), markdown
 * cells ('|' escaped, newlines as spaces). */
const char *op_out_unit_name(op_out_units u);
double op_out_unit_div(op_out_units u);
void op_out_fmt_num(char *buf, size_t n, double v, op_out_units u);
void op_out_md_cell(op_buf *b, const unsigned char *s, size_t n);

/* ---- progress (progress.c) -------------------------------------------------------------- */
/* One line on stderr rewritten in place (at most every 100 ms; only when stderr is a terminal;
 * colours per common/term.h): "omniprof: WHAT [STAGE] DONE/TOTAL (PCT) ELAPSED". */
typedef struct op_progress {
    int on, shown;
    uint64_t total, done;
    const char *what;
    int64_t t0, last;   /* CLOCK_MONOTONIC ns: start, last line */
    char stage[160];
} op_progress;
void op_progress_init(op_progress *p, int enabled, const char *what, uint64_t total);
void op_progress_tick(op_progress *p, uint64_t n);
/* Names the step in progress (a step without a count) and shows the line now. */
void op_progress_stage(op_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Leaves "omniprof: WHAT [N] done in T s" when a line was shown. */
void op_progress_done(op_progress *p);
/* Erases the line (before writing to the terminal the line is on). */
void op_progress_clear(op_progress *p);


/* ---- output files (outfile.c: the rules, in its head comment) -------------------------------- */
typedef struct op_out_id {
    dev_t dev;
    ino_t ino;
    const char *path;
} op_out_id;
/* The identities (device, inode) of the inputs of one command: no output may be one of them. */
typedef struct op_out_ids {
    op_out_id *v;
    size_t n;
} op_out_ids;
int op_out_ids_add(op_out_ids *ids, const char *path); /* 0; -1 out of memory (a missing path is skipped) */
void op_out_ids_free(op_out_ids *ids);

typedef struct op_outfile {
    FILE *f;          /* write here */
    char *final;      /* where the file appears (P or P-N) */
    char *tmp;        /* the file being written (NULL when written in place) */
    char *path;       /* P, the name asked for */
    size_t number_at; /* where "-N" goes into P */
    int in_place;
} op_outfile;
/* Opens output `path` per the rules of outfile.c ("-N" inserted at number_at). 0, or
 * OP_OUT_EINPUT (it is an input) / OP_OUT_EFAIL, err filled. */
int op_outfile_open(op_outfile *o, const char *path, size_t number_at, const op_out_ids *ids, char *err,
                    size_t errlen);
/* <dir>/<name>_<file> ("-N" after <name>; without a name, before <file>'s extension). */
int op_outfile_open_derived(op_outfile *o, const char *dir, const char *name, const char *file, const op_out_ids *ids,
                            char *err, size_t errlen);
/* A path the user named (-o FILE): "-N" before the extension of its base name. */
int op_outfile_open_path(op_outfile *o, const char *path, const op_out_ids *ids, char *err, size_t errlen);
/* Closes the file; keep: publish it under its final name (0, or OP_OUT_EFAIL), else remove it.
 * The struct is cleared; closing a cleared one does nothing. */
int op_outfile_close(op_outfile *o, int keep, char *err, size_t errlen);
/* The same, copying the path the file appeared under into final[0..final_len) when kept. */
int op_outfile_close_named(op_outfile *o, int keep, char *final, size_t final_len, char *err, size_t errlen);

/* Temporary files removed by SIGINT/SIGTERM/SIGHUP while op_out_signals_install() is in force. */
int op_out_tmp_register(const char *path);
/* A new empty file <dir>/<prefix><pid>-<n><suffix> (dir "" : the current one), created
 * exclusively and registered; malloc'ed path, or NULL with errno set. */
char *op_out_tmp_new(const char *dir, const char *prefix, const char *suffix);
void op_out_tmp_unregister(const char *path);
void op_out_signals_install(void);
void op_out_signals_restore(void);
/* 1 once such a signal arrived (operations stop at their next check with "interrupted"). */
int op_out_interrupted(void);

/* ---- clocks (clocks.c) ------------------------------------------------------------------------ */
/* How each process's times map onto the reference clock (clocks.c says which clock and how). */
typedef struct op_clock_plan {
    struct clock_proc *v;
    size_t n, cap;
    op_u64map index; /* (input, set, process row) -> index + 1 */
    int any;         /* some process has a map that moves its times */
} op_clock_plan;
/* Adds the processes of set `set_index` of input `input` (their clock rows). */
int op_clock_plan_add(op_clock_plan *p, size_t input, size_t set_index, op_src *src, op_src_set *set, char *err,
                      size_t errlen);
/* Chooses the reference and computes every map (after the last add). */
void op_clock_plan_finish(op_clock_plan *p);
/* The map of one process (NULL: its times stay). */
const op_rd_clock_map *op_clock_plan_lookup(const op_clock_plan *p, size_t input, size_t set, int64_t process_row);
/* The map of a set of one process (NULL: none, or a set of many processes). */
const op_rd_clock_map *op_clock_plan_set_map(const op_clock_plan *p, size_t input, size_t set);
/* The guid of the i-th process added. */
const char *op_clock_plan_guid(const op_clock_plan *p, size_t i);
void op_clock_plan_free(op_clock_plan *p);

/* ---- the inputs of a command (inputs.c) -------------------------------------------------------- */
typedef struct op_out_inputs {
    const char **v;   /* the inputs kept */
    size_t n;
    op_out_ids ids;   /* identities of every input given, kept or skipped */
    op_clock_plan clocks; /* of the inputs kept, by their index in v */
} op_out_inputs;
/* The one check of the inputs of convert, merge, summary and query: each must open as a rocpd
 * database, except that one holding no rocpd tables (empty: a process stopped before its
 * schema was written) is skipped with one warning naming it; no process (guid) may be in two
 * inputs (the same database given twice would count every row twice). The clock plan of the
 * inputs is built on the way (clocks.c). 0, or OP_OUT_EINPUT /
 * OP_OUT_EFAIL with err naming the input. Free with op_out_inputs_end in every case. */
int op_out_inputs_begin(op_out_inputs *in, const char *const *inputs, size_t n, char *err, size_t errlen);
void op_out_inputs_end(op_out_inputs *in);
/* Opens each input in turn (one open at a time) and calls fn for each of its table sets, in input
 * then set order; stops at the first non-zero status, which it returns. */
int op_out_each_set(const char *const *inputs, size_t n,
                    int (*fn)(op_src *src, op_src_set *set, size_t input, void *arg, char *err, size_t errlen),
                    void *arg, char *err, size_t errlen);

/* The *_stats.csv files of checked inputs (op_output_stats_csv after its checks). */
int op_out_stats_csv(const op_out_inputs *in, const op_win *w, const char *out_dir, const char *out_name, char *err,
                     size_t errlen);

/* The wall_clock files of checked inputs (op_output_wall_clock after its checks). */
int op_out_wall_clock(const op_out_inputs *in, const char *out_dir, const char *out_name, char *err, size_t errlen);
/* <out_dir>/<out_name>_results.otf2 (+ .def and the folder of location files): the OTF2 archive
 * of the inputs within the window (otf2.c); OP_OUT_EINPUT when the build has no libotf2. */
int op_out_otf2(const op_out_inputs *in, const op_win *w, const char *out_dir, const char *out_name, char *err,
                size_t errlen);

/* Create a directory and its parents; 0 or -1 (outfile.c). */
int op_mkdirs(const char *path);
/* Builds <dir>/<name>_<file> into a malloc'ed string. */
char *op_out_path(const char *dir, const char *name, const char *file);

#endif /* OMNIPROF_OUTPUT_INTERNAL_H */
