/* kinds.c — the kind tables generated from include/omniprof/kinds.def (see kinds.h): names,
 * payload sizes, layouts, correlation, string members, callback -> buffer kinds and the
 * intercept table names. Every table is static const data; lookups are array reads. */
#include "common/kinds.h"

#include <string.h>

/* Rows must be appended in increasing VALUE with no gap: the enums of fwd.h and counters.h
 * rely on it for their *_LAST (checked here at compile time). */
enum {
#define OMNIPROF_BUFFER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE) OP_KIND_ROW_B_##NAME,
#include "omniprof/kinds.def"
    OP_KIND_ROWS_BUFFER
};
enum {
#define OMNIPROF_COUNTER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE) OP_KIND_ROW_C_##NAME,
#include "omniprof/kinds.def"
    OP_KIND_ROWS_COUNTER
};
enum {
#define OMNIPROF_CALLBACK_KIND(VALUE, NAME, BUFFER_KIND, PAYLOAD) OP_KIND_ROW_K_##NAME,
#include "omniprof/kinds.def"
    OP_KIND_ROWS_CALLBACK
};
#define OMNIPROF_BUFFER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE) \
    _Static_assert(VALUE == OP_KIND_ROW_B_##NAME + 1, "kinds.def: buffer kind " #NAME " out of order");
#define OMNIPROF_COUNTER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE) \
    _Static_assert(VALUE == OP_KIND_ROW_C_##NAME + 1, "kinds.def: counter kind " #NAME " out of order");
#define OMNIPROF_CALLBACK_KIND(VALUE, NAME, BUFFER_KIND, PAYLOAD) \
    _Static_assert(VALUE == OP_KIND_ROW_K_##NAME + 1, "kinds.def: callback kind " #NAME " out of order");
#include "omniprof/kinds.def"
_Static_assert(OP_KIND_ROWS_BUFFER + 1 == OMNIPROF_BUFFER_TRACING_LAST, "kinds.def: buffer kinds");
_Static_assert(OP_KIND_ROWS_COUNTER + 1 == OMNIPROF_COUNTER_RECORD_LAST, "kinds.def: counter kinds");
_Static_assert(OP_KIND_ROWS_CALLBACK + 1 == OMNIPROF_CALLBACK_TRACING_LAST, "kinds.def: callback kinds");

#define OP_KIND_INFO_ROW(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE) \
    [VALUE] = {#NAME, TABLE, (uint32_t)sizeof(PAYLOAD), OP_KIND_LAYOUT_##LAYOUT, CORRELATION},

static const op_kind_info k_buffer[OMNIPROF_BUFFER_TRACING_LAST] = {
#define OMNIPROF_BUFFER_KIND OP_KIND_INFO_ROW
#include "omniprof/kinds.def"
};

static const op_kind_info k_counter[OMNIPROF_COUNTER_RECORD_LAST] = {
#define OMNIPROF_COUNTER_KIND OP_KIND_INFO_ROW
#include "omniprof/kinds.def"
};

static const char *const k_callback_names[OMNIPROF_CALLBACK_TRACING_LAST] = {
#define OMNIPROF_CALLBACK_KIND(VALUE, NAME, BUFFER_KIND, PAYLOAD) [VALUE] = #NAME,
#include "omniprof/kinds.def"
};

static const uint32_t k_callback_to_buffer[OMNIPROF_CALLBACK_TRACING_LAST] = {
#define OMNIPROF_CALLBACK_KIND(VALUE, NAME, BUFFER_KIND, PAYLOAD) [VALUE] = OMNIPROF_BUFFER_TRACING_##BUFFER_KIND,
#include "omniprof/kinds.def"
};

static const uint8_t k_callback_payload[OMNIPROF_CALLBACK_TRACING_LAST] = {
#define OMNIPROF_CALLBACK_KIND(VALUE, NAME, BUFFER_KIND, PAYLOAD) [VALUE] = OP_CALLBACK_PAYLOAD_##PAYLOAD,
#include "omniprof/kinds.def"
};

typedef struct intercept_row {
    uint32_t bit;
    const char *name, *registration_name;
} intercept_row;

static const intercept_row k_tables[] = {
#define OMNIPROF_INTERCEPT_TABLE(BIT, NAME, TABLE_NAME) {OMNIPROF_INTERCEPT_TABLE_##NAME, #NAME, TABLE_NAME},
#include "omniprof/kinds.def"
};

const op_kind_info *op_kind_info_get(uint32_t category, uint32_t kind)
{
    const op_kind_info *k = NULL;
    if ((category == OMNIPROF_RECORD_CATEGORY_TRACING || category == OMNIPROF_RECORD_CATEGORY_SAMPLING) &&
        kind < OMNIPROF_BUFFER_TRACING_LAST)
        k = &k_buffer[kind];
    else if (category == OMNIPROF_RECORD_CATEGORY_COUNTERS && kind < OMNIPROF_COUNTER_RECORD_LAST)
        k = &k_counter[kind];
    return k && k->name ? k : NULL;
}

const char *op_buffer_kind_name(uint32_t kind)
{
    return kind < OMNIPROF_BUFFER_TRACING_LAST ? k_buffer[kind].name : NULL;
}

const char *op_callback_kind_name(uint32_t kind)
{
    return kind < OMNIPROF_CALLBACK_TRACING_LAST ? k_callback_names[kind] : NULL;
}

bool op_kind_has_correlation(uint32_t category, uint32_t kind)
{
    const op_kind_info *k = op_kind_info_get(category, kind);
    return k && k->correlation;
}

uint32_t op_callback_kind_to_buffer_kind(uint32_t callback_kind)
{
    return callback_kind < OMNIPROF_CALLBACK_TRACING_LAST ? k_callback_to_buffer[callback_kind]
                                                          : OMNIPROF_BUFFER_TRACING_NONE;
}

int op_callback_kind_payload(uint32_t callback_kind)
{
    return callback_kind < OMNIPROF_CALLBACK_TRACING_LAST ? k_callback_payload[callback_kind] : OP_CALLBACK_PAYLOAD_NONE;
}

size_t op_kind_string_fields(uint32_t category, uint32_t kind, uint64_t psize, uint32_t *out)
{
    size_t n = 0;
    if (category == OMNIPROF_RECORD_CATEGORY_TRACING || category == OMNIPROF_RECORD_CATEGORY_SAMPLING) {
        switch (kind) {
#define OMNIPROF_BUFFER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE) \
    OP_KIND_STRINGS_CASE(VALUE, PAYLOAD, STRINGS)
#define OMNIPROF_KIND_STRING(M) OP_KIND_ADD_STRING(M)
#include "omniprof/kinds.def"
        default: break;
        }
    } else if (category == OMNIPROF_RECORD_CATEGORY_COUNTERS) {
        switch (kind) {
#define OMNIPROF_COUNTER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE) \
    OP_KIND_STRINGS_CASE(VALUE, PAYLOAD, STRINGS)
#define OMNIPROF_KIND_STRING(M) OP_KIND_ADD_STRING(M)
#include "omniprof/kinds.def"
        default: break;
        }
    }
    return n;
}

const char *op_intercept_table_name(uint32_t table_bit)
{
    for (size_t i = 0; i < sizeof k_tables / sizeof k_tables[0]; i++)
        if (k_tables[i].bit == table_bit) return k_tables[i].name;
    return NULL;
}

const char *op_intercept_table_registration_name(uint32_t table_bit)
{
    for (size_t i = 0; i < sizeof k_tables / sizeof k_tables[0]; i++)
        if (k_tables[i].bit == table_bit) return k_tables[i].registration_name;
    return NULL;
}

uint32_t op_intercept_table_from_registration_name(const char *name)
{
    for (size_t i = 0; name && i < sizeof k_tables / sizeof k_tables[0]; i++)
        if (strcmp(k_tables[i].registration_name, name) == 0) return k_tables[i].bit;
    return OMNIPROF_INTERCEPT_TABLE_NONE;
}
