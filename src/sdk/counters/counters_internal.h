/* counters_internal.h — what the files of the counters core share: the provider handle, counter
 * configs and their evaluation. Not API.
 *
 *   expr.c      expression language (parser, evaluator)
 *   metrics.c   definitions registry, metrics XML
 *   counters.c  provider loading, info API, suggestions, last error
 *   config.c    counter configs (resolution, pass planning, references) and their evaluation
 *   service.c   dispatch and device counting services (uses the SDK's contexts and buffers)
 *   iteration_range.c  --kernel-iteration-range parsing
 *
 * Lock order: op_metrics_lock > g_cfg_lock (config.c) > the service lock (service.c). */
#ifndef OMNIPROF_SDK_COUNTERS_INTERNAL_H
#define OMNIPROF_SDK_COUNTERS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "sdk/counters/expr.h"
#include "sdk/counters/metrics.h"
#include "sdk/counters/provider.h"

/* The registered provider, loading the backend whose manifest produces counter records on
 * first need (src/sdk/backend.h); NULL if none. */
const op_counters_provider *op_counters_provider_get(void);

/* One requested counter of a config. */
typedef struct op_cfg_item {
    uint64_t counter_id;
    const char *name;   /* interned */
    int kind;           /* 0 base, 1 derived, 2 constant */
    int base_index;     /* kind 0: index into plan.base_names */
    op_expr *expr;      /* kind 1: the config's own copy */
    double value;       /* kind 2 */
} op_cfg_item;

typedef struct op_counter_config {
    uint64_t handle;
    int refs;                  /* 1 for the handle + 1 per service using it */
    int destroyed;
    char chip[32];
    omniprof_agent_id_t agent;
    size_t n_items;            /* requested counters, in request order */
    op_cfg_item *items;
    size_t n_aux;              /* derived metrics and constants needed by the requested ones */
    op_cfg_item *aux;
    op_counters_plan plan;
} op_counter_config;

/* Take / drop a reference to a config by handle (NULL if stale). */
op_counter_config *op_counter_config_acquire(omniprof_counter_config_id_t id);
void op_counter_config_release(op_counter_config *c);

/* Evaluate every requested counter from the plan's base values. out: n_items doubles. */
int op_counter_config_evaluate(const op_counter_config *c, const double *base_values, double *out);

/* Create a config for chip with agent properties (NULL offline). Returns status; on
 * COUNTER_NOT_FOUND / PARSE / EXCEEDS_HW_LIMIT, err explains (names, suggestions, passes). */
omniprof_status_t op_counter_config_create(const char *chip, const omniprof_agent_v0_t *agent,
                                           const omniprof_counter_id_t *ids, size_t n,
                                           omniprof_counter_config_id_t *out, char *err, size_t errlen);

/* Resolve a name to an id for chip, with an error naming the closest matches. */
omniprof_status_t op_counters_find(const char *chip, const char *name, omniprof_counter_id_t *id, char *err,
                                   size_t errlen);

/* Properties of an agent, after loading the provider (whose backend adds the GPUs). 0 or -1. */
int op_counters_lookup_agent(omniprof_agent_id_t id, omniprof_agent_v0_t *out);

/* --kernel-iteration-range (iteration_range.c): 1-based launch numbers of each kernel name. */
typedef struct op_counters_range {
    uint64_t lo, hi;
} op_counters_range;
/* "[1, [3-5]]" or "1,3-5" (brackets, commas and spaces are separators). 0, or -1 with a message
 * naming the text, the column and the valid forms. */
int op_counters_parse_iteration_range(const char *text, op_counters_range *out, size_t max, size_t *n, char *err,
                                      size_t errlen);
/* 1 if `iteration` is in one of the ranges, or if there are none. */
int op_counters_range_contains(const op_counters_range *r, size_t n, uint64_t iteration);

/* Shared by counters.c and config.c. The chip to use: chip, else the provider's default (NULL
 * if none). */
const char *op_counters_resolve_chip(const char *chip);
/* A name's definition for chip: the registry, then the provider's catalog (registered on first
 * sight). op_metrics_lock held. NULL if unknown. */
op_metric_def *op_counters_find_locked(const char *chip, const char *name);
/* "unknown counter or metric 'X' for GH100; closest: a, b, c" into err. op_metrics_lock held. */
void op_counters_unknown_message(const char *chip, const char *name, char *err, size_t errlen);
/* What omniprof_get_counter_error_string returns on this thread ("" after a success). */
void op_counters_set_last_error(const char *msg);

/* Intern a string for the process (op_sdk_intern when the SDK is there). */
const char *op_counters_intern(const char *s);

#endif /* OMNIPROF_SDK_COUNTERS_INTERNAL_H */
