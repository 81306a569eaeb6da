/* kinds.h — what the SDK core and the database writer know about each record kind, generated
 * from the one list include/omniprof/kinds.def: names, payload sizes, layouts, which kinds
 * carry a correlation id, their string fields, the callback -> buffer kind mapping, the
 * intercept table names and the switches (which settings turn a kind on, into which buffer of
 * omniprof's tool). Not API.
 *
 * A kind is addressed by (category, kind): OMNIPROF_RECORD_CATEGORY_TRACING (and SAMPLING,
 * which shares the buffer kinds) or OMNIPROF_RECORD_CATEGORY_COUNTERS. The writer's internal
 * kinds (src/db/ingest_kinds.def) use the same row shape and OP_KIND_STRINGS_CASE below. */
#ifndef OMNIPROF_COMMON_KINDS_H
#define OMNIPROF_COMMON_KINDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "omniprof/omniprof.h"

typedef enum op_kind_layout {
    OP_KIND_LAYOUT_FIXED = 0, /* the payload struct alone; shorter payloads are zero-extended */
    OP_KIND_LAYOUT_HEAD,      /* the struct, then inline bytes; shorter payloads are refused */
    OP_KIND_LAYOUT_ARGS,      /* HEAD whose tail is num_args omniprof_arg_t (tracing.h) */
} op_kind_layout;

#define OP_KIND_MAX_STRINGS 8 /* `const char *` members of one payload struct, at most */

typedef struct op_kind_info {
    const char *name;      /* "KERNEL_DISPATCH" */
    const char *table;     /* where its rows land ("" none) */
    uint32_t payload_size; /* sizeof the payload struct (the head, for HEAD and ARGS) */
    uint8_t layout;        /* op_kind_layout */
    uint8_t correlation;   /* correlation id at payload offset 16 */
} op_kind_info;

/* The row of (category, kind), or NULL for a kind no row declares. */
const op_kind_info *op_kind_info_get(uint32_t category, uint32_t kind);

/* Name of a buffer tracing / callback tracing kind; NULL when not declared (0 included). */
const char *op_buffer_kind_name(uint32_t kind);
const char *op_callback_kind_name(uint32_t kind);

/* Does a record of (category, kind) carry a correlation id at offset 16? */
bool op_kind_has_correlation(uint32_t category, uint32_t kind);

/* The buffer kind a callback kind corresponds to; OMNIPROF_BUFFER_TRACING_NONE if none. */
uint32_t op_callback_kind_to_buffer_kind(uint32_t callback_kind);

/* What a callback record's payload is (the PAYLOAD column of OMNIPROF_CALLBACK_KIND). */
enum {
    OP_CALLBACK_PAYLOAD_NONE = 0, /* not a declared callback kind */
    OP_CALLBACK_PAYLOAD_API,      /* omniprof_callback_tracing_api_data_t */
    OP_CALLBACK_PAYLOAD_RECORD,   /* the buffer counterpart's payload struct */
};
int op_callback_kind_payload(uint32_t callback_kind);

/* Offsets of the `const char *` members of (category, kind) that lie within `psize` bytes, in
 * kinds.def order, into out[OP_KIND_MAX_STRINGS]. Returns how many. */
size_t op_kind_string_fields(uint32_t category, uint32_t kind, uint64_t psize, uint32_t *out);

/* Intercept tables: the enumerator's name ("CUDA_DRIVER") of one bit, and the bit of the name a
 * runtime gives omniprof_set_api_table ("cuda_driver"); NULL / OMNIPROF_INTERCEPT_TABLE_NONE. */
const char *op_intercept_table_name(uint32_t table_bit);
const char *op_intercept_table_registration_name(uint32_t table_bit);
uint32_t op_intercept_table_from_registration_name(const char *name);

/* ---- switches: which settings turn a kind on in omniprof's tool (kinds.def BUFFER, SWITCH) ---- */

/* The tool's buffers (kinds.def BUFFER column). */
typedef enum op_kind_buffer {
    OP_KIND_BUFFER_NONE = 0, /* no setting turns the kind on */
    OP_KIND_BUFFER_MARKER,
    OP_KIND_BUFFER_API,
    OP_KIND_BUFFER_GPU,
    OP_KIND_BUFFER_CPU,
    OP_KIND_BUFFER__COUNT
} op_kind_buffer;

#define OP_KIND_MAX_SWITCH_SETTINGS 4 /* OMNIPROF_KIND_ON (or _IF) settings of one row, at most */

/* The switch of one buffer or counter kind. Settings are op_setting_id values
 * (common/settings.h); each list ends at the first -1 (an empty `on`: no setting turns it on). */
typedef struct op_kind_switch {
    uint32_t category;  /* OMNIPROF_RECORD_CATEGORY_TRACING or _COUNTERS */
    uint32_t kind;
    const char *name;   /* "KERNEL_DISPATCH" */
    uint8_t buffer;     /* op_kind_buffer */
    const char *setup;  /* OMNIPROF_KIND_SETUP's NAME; "": configure buffer tracing of the kind */
    const int *on;      /* OMNIPROF_KIND_ON: any of them turns the kind on */
    const int *also;    /* OMNIPROF_KIND_IF: ... if all of these are on as well */
} op_kind_switch;

/* Every buffer kind, then every counter kind, in kinds.def order; *n their number. Static
 * storage. The tool's enable loop walks them (src/tool/tool.c). */
const op_kind_switch *op_kind_switches(size_t *n);

/* Is `s` on under the current settings (op_setting_*: a BOOL true, any other type not empty)? */
bool op_kind_switch_on(const op_kind_switch *s);

/* Is setting `id` on, in the sense of OMNIPROF_KIND_ON (a BOOL true, else a value not empty)? */
bool op_kind_setting_on(int id);

/* The names of the kinds setting `id` can turn on (it is among their OMNIPROF_KIND_ON), in
 * kinds.def order, into out[max]; returns how many there are (more than max: out is cut). What
 * a multi-kind flag expands to: KERNEL_TRACE gives KERNEL_DISPATCH, CODE_OBJECT, KERNEL_SYMBOL. */
size_t op_setting_kinds(int id, const char **out, size_t max);

/* "marker", "api", "gpu", "cpu"; NULL for NONE or out of range. */
const char *op_kind_buffer_name(int buffer);

/* Helpers for generating code from kinds.def rows. One case of a switch that lists the string
 * members of PAYLOAD: define OMNIPROF_KIND_STRING(M) as OP_KIND_ADD_STRING(M) before including
 * the list; `out`, `n` and `psize` must be in scope. */
#define OP_KIND_STRINGS_CASE(VALUE, PAYLOAD, STRINGS) \
    case VALUE: {                                     \
        typedef PAYLOAD op_kind_rec_t_ __attribute__((unused)); \
        STRINGS                                       \
        break;                                        \
    }
#define OP_KIND_ADD_STRING(M)                                                                 \
    do {                                                                                      \
        if (offsetof(op_kind_rec_t_, M) + sizeof(const char *) <= psize && n < OP_KIND_MAX_STRINGS) \
            out[n++] = (uint32_t)offsetof(op_kind_rec_t_, M);                                 \
    } while (0);

/* Expands X only for FIXED rows (e.g. to build a union of the fixed payload structs). */
#define OP_KIND_IF_FIXED(LAYOUT, X) OP_KIND_IF_FIXED_##LAYOUT(X)
#define OP_KIND_IF_FIXED_FIXED(X) X
#define OP_KIND_IF_FIXED_HEAD(X)
#define OP_KIND_IF_FIXED_ARGS(X)

#endif /* OMNIPROF_COMMON_KINDS_H */
