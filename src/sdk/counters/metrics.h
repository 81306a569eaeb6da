/* metrics.h — the registry of counter definitions: metrics XML (built-in, extra, runtime),
 * constants, and the vendor metrics resolved on demand. Not API.
 *
 * Every definition gets a counter id (index + 1) that never changes meaning: a definition
 * replaced by a later file keeps its id; a definition removed by a non-appending load makes
 * its id stale (omniprof_query_counter_info returns COUNTER_NOT_FOUND).
 *
 * Locking: one mutex (op_metrics_lock) guards the registry; the lookups below require it held
 * (asserted in debug builds). Definitions are never freed while the process runs, so a pointer
 * obtained under the lock may be read after unlocking as long as no load replaces it. */
#ifndef OMNIPROF_SDK_COUNTERS_METRICS_H
#define OMNIPROF_SDK_COUNTERS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "sdk/counters/expr.h"
#include "omniprof/counters.h"

typedef enum op_metric_origin {
    OP_METRIC_ORIGIN_XML,     /* a metrics XML file */
    OP_METRIC_ORIGIN_RUNTIME, /* omniprof_create_counter */
    OP_METRIC_ORIGIN_VENDOR,  /* resolved through the provider's catalog */
    OP_METRIC_ORIGIN_BUILTIN, /* the constants omniprof knows */
} op_metric_origin;

typedef struct op_metric_def {
    uint64_t id;
    char *name;
    char *description;
    char *chip;        /* "" = global */
    char *expression;  /* derived only, else "" */
    char *block;
    char *unit;
    uint32_t type;     /* omniprof_counter_type_t */
    int is_derived;
    int is_constant;
    int has_value;     /* constant with a value (chip block of the XML) */
    double value;
    op_expr *expr;     /* derived only */
    int origin;        /* op_metric_origin */
    int removed;
    char source[160];  /* "metrics.xml:42" for messages */
} op_metric_def;

void op_metrics_lock(void);
void op_metrics_unlock(void);

/* Loads the built-in definitions (OMNIPROF_METRICS_PATH or share/omniprof/metrics.xml beside
 * the library) and OMNIPROF_EXTRA_METRICS, once. Errors are logged; returns 0 or -1. Lock held. */
int op_metrics_ensure_loaded(void);
/* Forget everything (tests). Lock held. */
void op_metrics_reset(void);
/* Load XML from memory. source: name used in messages. append: add/override (else replace
 * XML definitions). Returns 0, or -1 with a message in err. Lock held. */
int op_metrics_load_xml(const char *xml, size_t size, const char *source, int append, char *err, size_t errlen);
/* Load a file (path); same return. Lock held. */
int op_metrics_load_file(const char *path, int append, char *err, size_t errlen);

/* Add or replace a derived metric (runtime). Returns the def or NULL with err. Lock held. */
op_metric_def *op_metrics_define(const char *name, const char *expression, const char *description, char *err,
                                 size_t errlen);
/* Lookups (lock held). find: derived and global constants first, then chip constants and
 * chip base counters from XML; no vendor lookup. */
op_metric_def *op_metrics_find(const char *chip, const char *name);
op_metric_def *op_metrics_get(uint64_t id);
/* Exactly (chip, name): chip "" for global definitions. */
op_metric_def *op_metrics_find_exact(const char *chip, const char *name);
/* Add a vendor base metric for chip (idempotent). */
op_metric_def *op_metrics_add_vendor(const char *chip, const char *name, const char *description, const char *block,
                                     const char *unit, uint32_t type);
size_t op_metrics_count(void); /* ids are 1..count */

/* Value of a built-in constant from an agent (SM_COUNT, ...): 0 and *out, or -1. */
int op_metrics_agent_constant(const char *name, const omniprof_agent_v0_t *agent, double *out);
/* Names of built-in constants (NULL-terminated), with descriptions. */
extern const char *const op_metrics_constant_names[];
extern const char *const op_metrics_constant_descriptions[];

/* Edit distance (Levenshtein, bounded by `limit`: returns limit+1 when above). */
size_t op_metrics_edit_distance(const char *a, const char *b, size_t limit);

#endif /* OMNIPROF_SDK_COUNTERS_METRICS_H */
