/* internal.h — shared internals of libomniprof-output: the input layer (source.c), text and
 * protobuf helpers (util.c), statistics (stats.c) and the per-format writers.
 *
 * The input model: an input FILE holds one or more table SETS. A set is the rocpd tables of one
 * profiled process, all named <base><suffix> where <suffix> is "_<uuid>" (omniprof and
 * rocprofv3) — a merged file holds many sets. Sets are found by the rocpd_metadata<suffix>
 * tables; every query of this library names the suffixed tables directly, so the input's own
 * views (untrusted SQL) are never executed by conversions. */
#ifndef OMNIPROF_OUTPUT_INTERNAL_H
#define OMNIPROF_OUTPUT_INTERNAL_H

#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/escape.h"
#include "common/u64map.h"
#include "output/output.h"

/* ---- errors ---------------------------------------------------------------------------- */
void op_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- growable byte buffer -------------------------------------------------------------- */
typedef struct op_buf {
    unsigned char *p;
    size_t len, cap;
    int oom;
} op_buf;
void op_buf_reserve(op_buf *b, size_t extra);
void op_buf_put(op_buf *b, const void *data, size_t n);
void op_buf_putc(op_buf *b, int c);
void op_buf_puts(op_buf *b, const char *s);
void op_buf_printf(op_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void op_buf_free(op_buf *b);
/* JSON string body (no quotes): escapes ", \, control bytes; invalid UTF-8 bytes as \uDCxx. */
void op_buf_json_str(op_buf *b, const unsigned char *s, size_t n);
/* CSV field: quoted when it contains , " CR LF or leading/trailing space; " doubled. */
void op_buf_csv_str(op_buf *b, const unsigned char *s, size_t n, int always_quote);
int op_buf_write(op_buf *b, FILE *f); /* writes and empties; 0 ok, -1 on I/O error */

/* ---- protobuf wire writer (util.c) ----------------------------------------------------- */
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
 * (minimal varint, body moved back; see util.c). pb_begin returns the offset to pass to pb_end;
 * nested messages must end innermost first. */
size_t pb_begin(op_buf *b, uint32_t field);
/* A protobuf `string`: valid UTF-8 is written as is; otherwise each invalid byte becomes the
 * four characters \xNN (protobuf strings must be UTF-8; invariant (3) of output.h). */
void pb_text(op_buf *b, uint32_t field, const unsigned char *s, size_t n);
void pb_end(op_buf *b, size_t off);

/* ---- the input layer (source.c) --------------------------------------------------------- */
enum op_src_table {
    T_METADATA, T_STRING, T_NODE, T_PROCESS, T_THREAD, T_AGENT, T_QUEUE, T_STREAM, T_PMC,
    T_CODE_OBJECT, T_KSYM, T_TRACK, T_EVENT, T_ARG, T_PMC_EVENT, T_REGION, T_SAMPLE, T_KERNEL,
    T_COPY, T_ALLOC, T_OP_STACK, T_OP_CPU_SAMPLE, T_OP_SYMBOL, T_OP_METRIC, T_OP_THREAD,
    T_OP_RUN_COST, T_OP_DROPS, T_OP_BACKPRESSURE, T_COUNT
};
extern const char *const op_src_table_base[T_COUNT];

typedef struct op_src_set {
    char suffix[96];      /* "_0190..." (validated: [A-Za-z0-9_]) */
    char guid[96];        /* from rocpd_metadata guid/uuid, may be "" */
    uint64_t have;        /* bit i: table i exists */
    char name[T_COUNT][200]; /* quoted "base<suffix>" */
} op_src_set;

typedef struct op_src {
    sqlite3 *db;
    char *path;
    size_t n_sets;
    op_src_set *sets;
} op_src;

#define SRC_HAS(set, t) (((set)->have >> (t)) & 1u)

/* Opens one input read-only and defensively, and finds its table sets.
 * Returns 0, OP_OUT_EINPUT (not a db / truncated / corrupt / no rocpd tables) or OP_OUT_EFAIL. */
int op_src_open(const char *path, op_src **out, char *err, size_t errlen);
void op_src_close(op_src *s);
/* The read-only URI of an input (file:PATH?mode=ro[&immutable=1]; source.c says when). */
char *op_src_uri(const char *path);
/* Opens a connection with the untrusted-input settings (used by query.c too). */
int op_src_open_db(const char *path, sqlite3 **out, char *err, size_t errlen);
/* sqlite3_prepare_v2 with an error message naming the input. */
sqlite3_stmt *op_src_prepare(op_src *s, const char *sql, char *err, size_t errlen);
/* Message for an SQLite failure while reading: says "corrupt"/"truncated"/"not a database". */
void op_src_failed(op_src *s, int rc, char *err, size_t errlen);

/* A resolved window: keep events per the rule of op_out_window. active==0: keep all. */
typedef struct op_win {
    int active;
    int64_t t0, t1;
    int inclusive;
} op_win;
/* Resolves w over all inputs (opens each in turn). */
int op_win_resolve(const op_out_window *w, const char *const *inputs, size_t n, op_win *out,
                   char *err, size_t errlen);
/* SQL predicate text ("" when inactive) over columns s and e, e.g. "AND (R.start>=...)".
 * Written into buf (>= 200 bytes). */
void op_win_sql(const op_win *w, const char *s, const char *e, char *buf, size_t n);

/* Guids already seen (merge and query refuse one process given twice: its (id, guid) pairs
 * would pair with each other's rows in the views). */
typedef struct op_guid_set {
    op_u64map hashes;     /* hash of guid -> index + 1 into names */
    char **names;         /* "guid\0path" */
    size_t n;
} op_guid_set;
/* Returns 0 when new (and records it), 1 when seen (err says where). Empty guids are never equal. */
int guid_seen(op_guid_set *g, const char *guid, const char *path, char *err, size_t errlen);
void guid_seen_free(op_guid_set *g);
/* merge.c: every input opens as a rocpd database and no process appears in two of them. */
int op_out_inputs_distinct(const char *const *inputs, size_t n_inputs, char *err, size_t errlen);

/* ---- statistics (stats.c) --------------------------------------------------------------- */
typedef struct op_stats op_stats;
op_stats *op_stats_new(void);
void op_stats_free(op_stats *st);
/* Accumulates every domain of every set of every input (group key optional: by process). */
int op_stats_collect(op_stats *st, const char *const *inputs, size_t n, const op_win *w,
                     int by_process, char *err, size_t errlen);

/* ---- progress --------------------------------------------------------------------------- */
typedef struct op_progress {
    int on;
    uint64_t total, done, next;
    const char *what;
} op_progress;
void op_progress_init(op_progress *p, int enabled, const char *what, uint64_t total);
void op_progress_tick(op_progress *p, uint64_t n);
void op_progress_done(op_progress *p);

/* Shortest decimal text that reads back as v (buf >= 32 bytes); returns buf. */
const char *op_fmt_double(char *buf, size_t n, double v);

/* Create a directory and its parents; 0 or -1. */
int op_mkdirs(const char *path);
/* Builds <dir>/<name>_<file> into a malloc'ed string. */
char *op_out_path(const char *dir, const char *name, const char *file);

#endif /* OMNIPROF_OUTPUT_INTERNAL_H */
