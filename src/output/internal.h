/* internal.h — shared internals of libomniprof-output: text and protobuf helpers (util.c), time
 * windows (window.c), statistics (stats.c) and the per-format writers. Inputs are read only
 * through the database reader (src/db/reader.h: table sets, event rows, lookups); no SQL here. */
#ifndef OMNIPROF_OUTPUT_INTERNAL_H
#define OMNIPROF_OUTPUT_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/buf.h"
#include "common/escape.h"
#include "common/u64map.h"
#include "db/reader.h"
#include "output/output.h"

/* ---- text encoders over op_buf (common/buf.h) ------------------------------------------ */
/* JSON string body (no quotes): escapes ", \, control bytes; invalid UTF-8 bytes as \uDCxx. */
void op_buf_json_str(op_buf *b, const unsigned char *s, size_t n);
/* CSV field (RFC 4180): quoted when always_quote or when it holds , " CR or LF; " doubled. */
void op_buf_csv_str(op_buf *b, const unsigned char *s, size_t n, int always_quote);

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

/* ---- time windows (window.c) ------------------------------------------------------------ */
/* Resolves w over all inputs (opens each in turn). */
int op_win_resolve(const op_out_window *w, const char *const *inputs, size_t n, op_win *out,
                   char *err, size_t errlen);
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
