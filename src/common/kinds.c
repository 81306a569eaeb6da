/* kinds.c — the kind tables generated from include/omniprof/kinds.def (see kinds.h): names,
 * payload sizes, layouts, correlation, string members, callback -> buffer kinds and the
 * intercept table names. Every table is static const data; lookups are array reads. */
#include "common/kinds.h"

#include <string.h>

#include "common/settings.h"

/* Rows must be appended in increasing VALUE with no gap: the enums of fwd.h and counters.h
 * rely on it for their *_LAST (checked here at compile time). */
enum {
#define OMNIPROF_BUFFER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) OP_KIND_ROW_B_##NAME,
#include "omniprof/kinds.def"
    OP_KIND_ROWS_BUFFER
};
enum {
#define OMNIPROF_COUNTER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) OP_KIND_ROW_C_##NAME,
#include "omniprof/kinds.def"
    OP_KIND_ROWS_COUNTER
};
enum {
#define OMNIPROF_CALLBACK_KIND(VALUE, NAME, BUFFER_KIND, PAYLOAD) OP_KIND_ROW_K_##NAME,
#include "omniprof/kinds.def"
    OP_KIND_ROWS_CALLBACK
};
#define OMNIPROF_BUFFER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    _Static_assert(VALUE == OP_KIND_ROW_B_##NAME + 1, "kinds.def: buffer kind " #NAME " out of order");
#define OMNIPROF_COUNTER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    _Static_assert(VALUE == OP_KIND_ROW_C_##NAME + 1, "kinds.def: counter kind " #NAME " out of order");
#define OMNIPROF_CALLBACK_KIND(VALUE, NAME, BUFFER_KIND, PAYLOAD) \
    _Static_assert(VALUE == OP_KIND_ROW_K_##NAME + 1, "kinds.def: callback kind " #NAME " out of order");
#include "omniprof/kinds.def"
_Static_assert(OP_KIND_ROWS_BUFFER + 1 == OMNIPROF_BUFFER_TRACING_LAST, "kinds.def: buffer kinds");
_Static_assert(OP_KIND_ROWS_COUNTER + 1 == OMNIPROF_COUNTER_RECORD_LAST, "kinds.def: counter kinds");
_Static_assert(OP_KIND_ROWS_CALLBACK + 1 == OMNIPROF_CALLBACK_TRACING_LAST, "kinds.def: callback kinds");

#define OP_KIND_INFO_ROW(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
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
#define OMNIPROF_BUFFER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    OP_KIND_STRINGS_CASE(VALUE, PAYLOAD, STRINGS)
#define OMNIPROF_KIND_STRING(M) OP_KIND_ADD_STRING(M)
#include "omniprof/kinds.def"
        default: break;
        }
    } else if (category == OMNIPROF_RECORD_CATEGORY_COUNTERS) {
        switch (kind) {
#define OMNIPROF_COUNTER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
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

/* ---- switches -------------------------------------------------------------------------------- */

/* Every buffer and counter kind in kinds.def order (buffer kinds first), its SWITCH spread over
 * three passes over the rows: the OMNIPROF_KIND_ON settings, the OMNIPROF_KIND_IF settings (each
 * list ended by -1) and, with the row, the OMNIPROF_KIND_SETUP name ("" none). A SETTING that
 * names no setting of settings.def does not compile (OP_SET_<SETTING>), nor a row with more
 * settings than OP_KIND_MAX_SWITCH_SETTINGS. */
enum {
#define OMNIPROF_BUFFER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    OP_SWITCH_B_##NAME,
#define OMNIPROF_COUNTER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    OP_SWITCH_C_##NAME,
#include "omniprof/kinds.def"
    OP_SWITCH_ROWS
};

#define OP_SWITCH_LIST_ROW(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    [OP_SWITCH_B_##NAME] = {SWITCH - 1},
#define OP_SWITCH_LIST_ROW_C(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    [OP_SWITCH_C_##NAME] = {SWITCH - 1},

static const int k_switch_on[OP_SWITCH_ROWS][OP_KIND_MAX_SWITCH_SETTINGS + 1] = {
#define OMNIPROF_KIND_ON(SETTING) OP_SET_##SETTING,
#define OMNIPROF_BUFFER_KIND OP_SWITCH_LIST_ROW
#define OMNIPROF_COUNTER_KIND OP_SWITCH_LIST_ROW_C
#include "omniprof/kinds.def"
};

static const int k_switch_also[OP_SWITCH_ROWS][OP_KIND_MAX_SWITCH_SETTINGS + 1] = {
#define OMNIPROF_KIND_IF(SETTING) OP_SET_##SETTING,
#define OMNIPROF_BUFFER_KIND OP_SWITCH_LIST_ROW
#define OMNIPROF_COUNTER_KIND OP_SWITCH_LIST_ROW_C
#include "omniprof/kinds.def"
};

static const op_kind_switch k_switches[OP_SWITCH_ROWS] = {
#define OMNIPROF_KIND_SETUP(NAME) #NAME
#define OMNIPROF_BUFFER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    [OP_SWITCH_B_##NAME] = {OMNIPROF_RECORD_CATEGORY_TRACING, VALUE, #NAME, OP_KIND_BUFFER_##BUFFER, "" SWITCH "", \
                            k_switch_on[OP_SWITCH_B_##NAME], k_switch_also[OP_SWITCH_B_##NAME]},
#define OMNIPROF_COUNTER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    [OP_SWITCH_C_##NAME] = {OMNIPROF_RECORD_CATEGORY_COUNTERS, VALUE, #NAME, OP_KIND_BUFFER_##BUFFER, "" SWITCH "", \
                            k_switch_on[OP_SWITCH_C_##NAME], k_switch_also[OP_SWITCH_C_##NAME]},
#include "omniprof/kinds.def"
};

const op_kind_switch *op_kind_switches(size_t *n)
{
    if (n) *n = OP_SWITCH_ROWS;
    return k_switches;
}

bool op_kind_setting_on(int id)
{
    if (id < 0 || id >= OP_SET__COUNT) return false;
    const op_setting_info *info = op_setting_get_info((op_setting_id)id);
    if (info->type == OP_SETTING_TYPE_BOOL) return op_setting_bool((op_setting_id)id);
    const char *v = op_setting_str((op_setting_id)id);
    return v && *v;
}

bool op_kind_switch_on(const op_kind_switch *s)
{
    bool on = false;
    for (size_t j = 0; s->on[j] >= 0 && !on; j++) on = op_kind_setting_on(s->on[j]);
    for (size_t j = 0; s->also[j] >= 0 && on; j++) on = op_kind_setting_on(s->also[j]);
    return on;
}

size_t op_setting_kinds(int id, const char **out, size_t max)
{
    size_t n_rows, n = 0;
    const op_kind_switch *rows = op_kind_switches(&n_rows);
    for (size_t i = 0; i < n_rows; i++) {
        bool named = false;
        for (size_t j = 0; rows[i].on[j] >= 0; j++) named |= rows[i].on[j] == id;
        if (!named) continue;
        if (n < max) out[n] = rows[i].name;
        n++;
    }
    return n;
}

const char *op_kind_buffer_name(int buffer)
{
    static const char *const names[OP_KIND_BUFFER__COUNT] = {
        [OP_KIND_BUFFER_MARKER] = "marker", [OP_KIND_BUFFER_API] = "api", [OP_KIND_BUFFER_GPU] = "gpu",
        [OP_KIND_BUFFER_CPU] = "cpu"};
    return buffer > 0 && buffer < OP_KIND_BUFFER__COUNT ? names[buffer] : NULL;
}
