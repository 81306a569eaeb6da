/* ingest.c — one spool record -> its kind's ingest function, generated from the kind lists
 * (include/omniprof/kinds.def for the SDK's kinds, ingest_kinds.def for the writer's own), and
 * the row helpers the ingest functions share (events, regions and instants).
 *
 * Before an ingest function runs, the dispatch checks the payload against its kind's row: a
 * FIXED payload shorter than its struct (an older producer) is copied into an aligned,
 * zero-padded local struct, so every field read is in bounds; a HEAD or ARGS payload shorter
 * than its struct is refused (counted as unhandled, like a kind no row declares). String
 * fields keep the spool offsets writer_append.c wrote; op_db_str resolves them against the
 * record being ingested, whichever copy the ingest function reads. */
#include <stdio.h>
#include <string.h>

#include "common/kinds.h"
#include "db/writer_internal.h"

/* Every FIXED payload struct, for the zero-extended copy of a short record. */
typedef union fixed_payload {
#define OP_DB_FIXED_MEMBER(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    OP_KIND_IF_FIXED(LAYOUT, PAYLOAD m_##INGEST##_##VALUE;)
#define OMNIPROF_BUFFER_KIND OP_DB_FIXED_MEMBER
#define OMNIPROF_COUNTER_KIND OP_DB_FIXED_MEMBER
#include "omniprof/kinds.def"
#define OP_DB_INTERNAL_KIND OP_DB_FIXED_MEMBER
#include "db/ingest_kinds.def"
    uint64_t align;
} fixed_payload;

/* The rows of the internal kinds, shaped like kinds.def's. */
static const op_kind_info k_internal[] = {
#define OP_DB_INTERNAL_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    [VALUE] = {#NAME, TABLE, (uint32_t)sizeof(PAYLOAD), OP_KIND_LAYOUT_##LAYOUT, CORRELATION},
#include "db/ingest_kinds.def"
};

const op_kind_info *op_db_kind_info(uint32_t category, uint32_t kind)
{
    if (category != OP_DB_CAT_INTERNAL) return op_kind_info_get(category, kind);
    return kind < NELEM(k_internal) && k_internal[kind].name ? &k_internal[kind] : NULL;
}

size_t op_db_string_fields(uint32_t category, uint32_t kind, uint64_t psize, uint32_t *out)
{
    if (category != OP_DB_CAT_INTERNAL) return op_kind_string_fields(category, kind, psize, out);
    size_t n = 0;
    switch (kind) {
#define OP_DB_INTERNAL_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    OP_KIND_STRINGS_CASE(VALUE, PAYLOAD, STRINGS)
#define OMNIPROF_KIND_STRING(M) OP_KIND_ADD_STRING(M)
#include "db/ingest_kinds.def"
    default: break;
    }
    return n;
}

const char *op_db_str(const op_db_writer *w, const char *const *field)
{
    uint64_t off = (uint64_t)(uintptr_t)*field;
    if (off == 0 || off >= w->rec_span) return NULL;
    const char *s = (const char *)w->rec_base + off;
    return memchr(s, 0, w->rec_span - off) ? s : NULL; /* NUL-terminated within the record */
}

/* The kind's ingest function. p is the payload, or its zero-extended copy. */
static int dispatch(op_db_writer *w, uint32_t category, uint32_t kind, const void *p, uint64_t psize)
{
#define OP_DB_DISPATCH_CASE(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    case VALUE: return op_db_ingest_##INGEST(w, (const PAYLOAD *)p, psize);
    switch (category) {
    case OMNIPROF_RECORD_CATEGORY_TRACING:
    case OMNIPROF_RECORD_CATEGORY_SAMPLING:
        switch (kind) {
#define OMNIPROF_BUFFER_KIND OP_DB_DISPATCH_CASE
#include "omniprof/kinds.def"
        default: break;
        }
        break;
    case OMNIPROF_RECORD_CATEGORY_COUNTERS:
        switch (kind) {
#define OMNIPROF_COUNTER_KIND OP_DB_DISPATCH_CASE
#include "omniprof/kinds.def"
        default: break;
        }
        break;
    case OP_DB_CAT_INTERNAL:
        switch (kind) {
#define OP_DB_INTERNAL_KIND OP_DB_DISPATCH_CASE
#include "db/ingest_kinds.def"
        default: break;
        }
        break;
    default: break;
    }
#undef OP_DB_DISPATCH_CASE
    atomic_fetch_add_explicit(&w->n_unhandled, 1, memory_order_relaxed);
    return 0;
}

int op_db_ingest_record(op_db_writer *w, const op_db_rec *rec)
{
    const void *p = rec + 1;
    uint64_t psize = *(const uint64_t *)p;
    const op_kind_info *info = op_db_kind_info(rec->category, rec->kind);
    fixed_payload local;
    if (info && psize < info->payload_size) {
        if (info->layout != OP_KIND_LAYOUT_FIXED || info->payload_size > sizeof local) info = NULL;
        else {
            memset(&local, 0, sizeof local);
            memcpy(&local, p, psize);
            p = &local;
        }
    }
    if (!info) {
        atomic_fetch_add_explicit(&w->n_unhandled, 1, memory_order_relaxed);
        return 0;
    }
    w->rec_base = (const uint8_t *)(rec + 1);
    w->rec_span = rec->len - sizeof *rec;
    return dispatch(w, rec->category, rec->kind, p, psize);
}

/* ------------------------------------------------------------------------------------------ */
/* Rows every kind uses                                                                        */

int64_t op_db_insert_event(op_db_writer *w, uint32_t kind, uint64_t stack_id, uint64_t parent, uint64_t corr,
                            const char *extdata, size_t extlen)
{
    int64_t id;
    op_db_cell *c = op_db_row(w, Q_EVENT, &id);
    if (!c) return -1;
    op_db_set_int(&c[0], w->cat_id[kind < OMNIPROF_BUFFER_TRACING_LAST ? kind : 0]);
    if (stack_id) op_db_set_int(&c[1], (int64_t)stack_id); else op_db_set_null(&c[1]);
    if (parent) op_db_set_int(&c[2], (int64_t)parent); else op_db_set_null(&c[2]);
    op_db_set_int(&c[3], (int64_t)corr);
    if (extdata) op_db_set_text(w, Q_EVENT, &c[4], extdata, (int)extlen, OP_DB_TEXT_CLEAN); /* JSON the writer built */
    else op_db_set_text(w, Q_EVENT, &c[4], "{}", 2, OP_DB_TEXT_STABLE | OP_DB_TEXT_CLEAN);
    return id;
}

int op_db_insert_region_or_sample(op_db_writer *w, uint32_t kind, int64_t thread, uint64_t start, uint64_t end,
                                   int64_t name_id, int64_t event_id)
{
    if (start != end) {
        op_db_cell *c = op_db_row(w, Q_REGION, NULL);
        if (!c) return -1;
        op_db_set_int(&c[0], thread);
        op_db_set_int(&c[1], (int64_t)start);
        op_db_set_int(&c[2], (int64_t)end);
        op_db_set_int(&c[3], name_id);
        op_db_set_int(&c[4], event_id);
        return 0;
    }
    int marker = kind == OMNIPROF_BUFFER_TRACING_MARKER_API || kind == OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API;
    int64_t track = op_db_instant_track(w, thread, kind, marker ? 0 : name_id);
    if (track < 0) return -1;
    return op_db_insert_sample(w, track, start, event_id) < 0 ? -1 : 0;
}

int64_t op_db_insert_sample(op_db_writer *w, int64_t track, uint64_t timestamp, int64_t event_id)
{
    int64_t id;
    op_db_cell *c = op_db_row(w, Q_SAMPLE, &id);
    if (!c) return -1;
    op_db_set_int(&c[0], track);
    op_db_set_int(&c[1], (int64_t)timestamp);
    op_db_set_int(&c[2], event_id);
    return id;
}
