/* counters.c — the counters info API (find, describe, iterate counters and chips, load and
 * create definitions), suggestions for unknown names, the per-thread last error, and finding
 * the hardware-counter provider. Counter configs and their evaluation are in config.c.
 *
 * Invariant: the info API reads the definitions registry under op_metrics_lock and calls the
 * caller back without it (a callback may call the API again). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"
#include "sdk/backend.h"
#include "sdk/counters/counters_internal.h"

/* SDK functions used when the core is linked into libomniprof-sdk.so; weak so that the unit
 * tests can link the core alone. */
const char *op_sdk_intern(const char *s) __attribute__((weak));
int op_sdk_agent_lookup(omniprof_agent_id_t id, omniprof_agent_v0_t *out) __attribute__((weak));

/* ---- last error (per thread) ----------------------------------------------------------- */

static __thread char tl_last_error[1536];

void op_counters_set_last_error(const char *msg)
{
    snprintf(tl_last_error, sizeof tl_last_error, "%s", msg ? msg : "");
}

OMNIPROF_API const char *omniprof_get_counter_error_string(void) { return tl_last_error; }

/* ---- provider ------------------------------------------------------------------------------ */

static _Atomic(const op_counters_provider *) g_provider;
static pthread_once_t g_provider_once = PTHREAD_ONCE_INIT;

void op_sdk_counters_register_provider(const op_counters_provider *provider)
{
    atomic_store(&g_provider, provider);
}

/* The provider lives in the backend whose manifest says it produces counter records
 * (src/sdk/backend.h); loading it registers the provider. */
static void load_provider(void)
{
    if (atomic_load(&g_provider))
        return;
    if (!op_sdk_load_backend_for_counters(OMNIPROF_COUNTER_RECORD_VALUE))
        op_info("counters: no hardware-counter provider (no backend beside the SDK produces counter records)");
}

const op_counters_provider *op_counters_provider_get(void)
{
    const op_counters_provider *p = atomic_load(&g_provider);
    if (p)
        return p;
    pthread_once(&g_provider_once, load_provider);
    return atomic_load(&g_provider);
}

/* ---- interning ------------------------------------------------------------------------- */

static pthread_mutex_t g_intern_lock = PTHREAD_MUTEX_INITIALIZER;
static char **g_interned;
static size_t g_n_interned, g_cap_interned;

const char *op_counters_intern(const char *s)
{
    if (!s)
        return NULL;
    if (op_sdk_intern)
        return op_sdk_intern(s);
    pthread_mutex_lock(&g_intern_lock);
    const char *r = NULL;
    for (size_t i = 0; i < g_n_interned && !r; i++)
        if (!strcmp(g_interned[i], s))
            r = g_interned[i];
    if (!r) {
        if (g_n_interned == g_cap_interned) {
            size_t nc = g_cap_interned ? g_cap_interned * 2 : 64;
            char **n = op_realloc(g_interned, nc * sizeof *n);
            if (n) {
                g_interned = n;
                g_cap_interned = nc;
            }
        }
        char *c = g_n_interned < g_cap_interned ? op_strdup(s) : NULL;
        if (c)
            g_interned[g_n_interned++] = c;
        r = c ? c : "<out of memory>";
    }
    pthread_mutex_unlock(&g_intern_lock);
    return r;
}

/* ---- chips ----------------------------------------------------------------------------- */

const char *op_counters_resolve_chip(const char *chip)
{
    if (chip && *chip)
        return chip;
    const op_counters_provider *p = op_counters_provider_get();
    return (p && p->default_chip) ? p->default_chip() : NULL;
}

typedef struct chip_search {
    const char *want;
    int found;
} chip_search;

static int chip_cb(const char *chip, void *data)
{
    chip_search *s = data;
    if (!strcmp(chip, s->want)) {
        s->found = 1;
        return 1;
    }
    return 0;
}

/* 1 if the provider knows the chip, 0 if not, -1 when there is no provider. */
static int chip_known(const char *chip)
{
    const op_counters_provider *p = op_counters_provider_get();
    if (!p || !p->iterate_chips)
        return -1;
    chip_search s = {chip, 0};
    p->iterate_chips(chip_cb, &s);
    return s.found;
}

/* ---- suggestions ----------------------------------------------------------------------- */

#define MAX_SUGGEST 5

typedef struct suggest_ctx {
    const char *name;
    const char *ubase;   /* user's text before the first '.' */
    const char *usuffix; /* from the first '.', or "" */
    const char *chip;
    size_t limit;
    size_t n;
    const char *best[MAX_SUGGEST];
    size_t dist[MAX_SUGGEST];
    /* closest catalog base names to ubase */
    size_t nb;
    char base[MAX_SUGGEST][160];
    uint32_t base_type[MAX_SUGGEST];
    size_t base_dist[MAX_SUGGEST];
} suggest_ctx;

static void suggest_add(suggest_ctx *s, const char *cand, size_t d)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->best[i], cand))
            return;
    size_t pos = s->n;
    while (pos > 0 && s->dist[pos - 1] > d)
        pos--;
    if (pos >= MAX_SUGGEST)
        return;
    size_t last = s->n < MAX_SUGGEST ? s->n : MAX_SUGGEST - 1;
    for (size_t i = last; i > pos; i--) {
        s->best[i] = s->best[i - 1];
        s->dist[i] = s->dist[i - 1];
    }
    s->best[pos] = op_counters_intern(cand);
    s->dist[pos] = d;
    if (s->n < MAX_SUGGEST)
        s->n++;
}

static int suggest_base_cb(const op_counter_base_info *info, void *data)
{
    suggest_ctx *s = data;
    size_t d = op_metrics_edit_distance(s->ubase, info->name, s->limit);
    if (d > s->limit)
        return 0;
    size_t pos = s->nb;
    while (pos > 0 && s->base_dist[pos - 1] > d)
        pos--;
    if (pos >= MAX_SUGGEST)
        return 0;
    size_t last = s->nb < MAX_SUGGEST ? s->nb : MAX_SUGGEST - 1;
    for (size_t i = last; i > pos; i--) {
        memcpy(s->base[i], s->base[i - 1], sizeof s->base[i]);
        s->base_dist[i] = s->base_dist[i - 1];
        s->base_type[i] = s->base_type[i - 1];
    }
    snprintf(s->base[pos], sizeof s->base[pos], "%s", info->name);
    s->base_dist[pos] = d;
    s->base_type[pos] = info->type;
    if (s->nb < MAX_SUGGEST)
        s->nb++;
    return 0;
}

typedef struct suffix_ctx {
    suggest_ctx *s;
    const char *base;
    size_t base_dist;
} suffix_ctx;

static int suggest_suffix_cb(const char *suffix, void *data)
{
    suffix_ctx *x = data;
    size_t d = op_metrics_edit_distance(x->s->usuffix, suffix, 64);
    char cand[320];
    snprintf(cand, sizeof cand, "%s%s", x->base, suffix);
    suggest_add(x->s, cand, x->base_dist + d);
    return 0;
}

static size_t suggest_locked(const char *chip, const char *name, const char **out, size_t max)
{
    suggest_ctx s;
    memset(&s, 0, sizeof s);
    char ubase[160];
    snprintf(ubase, sizeof ubase, "%s", name);
    char *dot = strchr(ubase, '.');
    const char *suffix = "";
    if (dot) {
        suffix = name + (dot - ubase);
        *dot = '\0';
    }
    s.name = name;
    s.ubase = ubase;
    s.usuffix = suffix;
    s.chip = chip;
    size_t len = strlen(name);
    s.limit = len / 3 > 3 ? len / 3 : 3;
    /* definitions: derived metrics, constants, XML base counters of the chip */
    for (uint64_t id = 1; id <= op_metrics_count(); id++) {
        const op_metric_def *d = op_metrics_get(id);
        if (!d || (*d->chip && (!chip || strcmp(d->chip, chip))))
            continue;
        size_t dist = op_metrics_edit_distance(name, d->name, s.limit);
        if (dist <= s.limit)
            suggest_add(&s, d->name, dist);
    }
    /* the vendor catalog: closest base names, completed with the closest valid suffixes */
    const op_counters_provider *p = op_counters_provider_get();
    if (p && chip && p->iterate_base) {
        p->iterate_base(chip, suggest_base_cb, &s);
        for (size_t i = 0; i < s.nb; i++) {
            if (s.base_type[i] == OMNIPROF_COUNTER_TYPE_COUNTER || s.base_type[i] == OMNIPROF_COUNTER_TYPE_RATIO ||
                s.base_type[i] == OMNIPROF_COUNTER_TYPE_THROUGHPUT) {
                suffix_ctx x = {&s, s.base[i], s.base_dist[i]};
                if (p->iterate_submetrics)
                    p->iterate_submetrics(chip, s.base[i], s.base_type[i], suggest_suffix_cb, &x);
            }
        }
    }
    size_t n = s.n < max ? s.n : max;
    for (size_t i = 0; i < n; i++)
        out[i] = s.best[i];
    return n;
}

OMNIPROF_API omniprof_status_t omniprof_suggest_counters(const char *chip, const char *name, const char **out,
                                                         size_t max, size_t *count)
{
    if (!name || !count || (!out && max))
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    chip = op_counters_resolve_chip(chip);
    op_metrics_lock();
    op_metrics_ensure_loaded();
    *count = suggest_locked(chip, name, out, max);
    op_metrics_unlock();
    return OMNIPROF_STATUS_SUCCESS;
}

/* "unknown counter 'X' for GH100; closest: a, b, c" */
void op_counters_unknown_message(const char *chip, const char *name, char *err, size_t errlen)
{
    const char *best[MAX_SUGGEST];
    size_t n = suggest_locked(chip, name, best, MAX_SUGGEST);
    size_t k = (size_t)snprintf(err, errlen, "unknown counter or metric '%s'%s%s", name, chip ? " for " : "",
                                chip ? chip : "");
    for (size_t i = 0; i < n && k < errlen; i++)
        k += (size_t)snprintf(err + k, errlen - k, "%s%s", i ? ", " : "; closest: ", best[i]);
    if (n == 0 && k < errlen)
        snprintf(err + k, errlen - k, "; `omniprof avail --counters%s%s` lists them", chip ? " --chip " : "",
                 chip ? chip : "");
}

/* ---- find ------------------------------------------------------------------------------ */

/* Lock held. Resolves through definitions, then the vendor catalog. */
op_metric_def *op_counters_find_locked(const char *chip, const char *name)
{
    op_metric_def *d = op_metrics_find(chip, name);
    if (d)
        return d;
    const op_counters_provider *p = op_counters_provider_get();
    if (!p || !chip || !p->describe)
        return NULL;
    op_counter_base_info info;
    memset(&info, 0, sizeof info);
    if (p->describe(chip, name, &info) != 0)
        return NULL;
    return op_metrics_add_vendor(chip, name, info.description, info.block, info.unit, info.type);
}

omniprof_status_t op_counters_find(const char *chip, const char *name, omniprof_counter_id_t *id, char *err,
                                   size_t errlen)
{
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!name || !id) {
        snprintf(err, errlen, "no counter name");
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    }
    const char *rchip = op_counters_resolve_chip(chip);
    op_metrics_lock();
    op_metrics_ensure_loaded();
    op_metric_def *d = op_counters_find_locked(rchip, name);
    omniprof_status_t st = OMNIPROF_STATUS_SUCCESS;
    if (d) {
        id->handle = d->id;
    } else if (rchip && chip_known(rchip) == 0) {
        snprintf(err, errlen, "unknown chip '%s' (omniprof avail --counters --list-chips names the known ones)", rchip);
        st = OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT;
    } else if (!rchip && !op_counters_provider_get()) {
        snprintf(err, errlen, "'%s': no hardware-counter backend in this build", name);
        st = OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    } else if (!rchip) {
        snprintf(err, errlen, "'%s' is not a derived metric or constant, and no GPU chip is known yet to look it up "
                 "in (no launch seen): name a chip, e.g. \"GH100\"", name);
        st = OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    } else {
        op_counters_unknown_message(rchip, name, err, errlen);
        st = OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND;
    }
    op_metrics_unlock();
    return st;
}

OMNIPROF_API omniprof_status_t omniprof_find_counter(const char *chip, const char *name, omniprof_counter_id_t *id)
{
    char err[1024];
    omniprof_status_t st = op_counters_find(chip, name, id, err, sizeof err);
    op_counters_set_last_error(st == OMNIPROF_STATUS_SUCCESS ? "" : err);
    return st;
}

/* ---- info ------------------------------------------------------------------------------ */

static void fill_info(omniprof_counter_info_v0_t *info, const op_metric_def *d)
{
    info->id.handle = d->id;
    info->name = d->name;
    info->description = d->description;
    info->chip = d->chip;
    info->expression = d->expression;
    info->block = d->block;
    info->unit = d->unit;
    info->type = d->type;
    info->is_derived = (uint8_t)d->is_derived;
    info->is_constant = (uint8_t)d->is_constant;
    info->reserved = 0;
}

OMNIPROF_API omniprof_status_t omniprof_query_counter_info(omniprof_counter_id_t counter_id,
                                                           omniprof_counter_info_version_t version, void *info)
{
    if (!info)
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (version != OMNIPROF_COUNTER_INFO_VERSION_0)
        return OMNIPROF_STATUS_ERROR_INCOMPATIBLE_ABI;
    omniprof_counter_info_v0_t *out = info;
    uint64_t size = out->size;
    if (size < 16)
        return OMNIPROF_STATUS_ERROR_INCOMPATIBLE_ABI;
    op_metrics_lock();
    op_metrics_ensure_loaded();
    const op_metric_def *d = op_metrics_get(counter_id.handle);
    if (!d) {
        op_metrics_unlock();
        return OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND;
    }
    omniprof_counter_info_v0_t full;
    memset(&full, 0, sizeof full);
    fill_info(&full, d);
    op_metrics_unlock();
    full.size = size < sizeof full ? size : sizeof full;
    memcpy(out, &full, (size_t)full.size);
    return OMNIPROF_STATUS_SUCCESS;
}

typedef struct iter_ctx {
    omniprof_counter_iterate_cb_t cb;
    void *data;
    omniprof_status_t stop;
} iter_ctx;

static int iter_base_cb(const op_counter_base_info *b, void *data)
{
    iter_ctx *x = data;
    omniprof_counter_info_v0_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    info.id.handle = 0; /* a base name: collectable only with a rollup suffix */
    info.name = b->name;
    info.description = b->description ? b->description : "";
    info.chip = "";
    info.expression = "";
    info.block = b->block ? b->block : "";
    info.unit = b->unit ? b->unit : "";
    info.type = b->type;
    omniprof_status_t st = x->cb(&info, x->data);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        x->stop = st;
        return 1;
    }
    return 0;
}

/* Are all inputs of derived metric d available on chip (recursively)? Lock held. */
static int derived_available(const char *chip, const op_metric_def *d, int depth)
{
    if (depth > 32)
        return 0;
    for (size_t i = 0; i < op_expr_num_names(d->expr); i++) {
        const op_metric_def *c = op_counters_find_locked(chip, op_expr_name(d->expr, i));
        if (!c)
            return 0;
        if (c->is_derived && !derived_available(chip, c, depth + 1))
            return 0;
    }
    return 1;
}

OMNIPROF_API omniprof_status_t omniprof_iterate_chip_counters(const char *chip, uint32_t flags,
                                                              omniprof_counter_iterate_cb_t cb, void *data)
{
    if (!cb)
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (flags == 0)
        flags = OMNIPROF_COUNTER_ITERATE_BASE | OMNIPROF_COUNTER_ITERATE_DERIVED | OMNIPROF_COUNTER_ITERATE_CONSTANT;
    const char *rchip = op_counters_resolve_chip(chip);
    const op_counters_provider *p = op_counters_provider_get();
    if (!rchip)
        return p ? OMNIPROF_STATUS_ERROR_NOT_AVAILABLE : OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    int known = chip_known(rchip);
    if (known == 0)
        return OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT;
    iter_ctx x = {cb, data, OMNIPROF_STATUS_SUCCESS};
    if ((flags & OMNIPROF_COUNTER_ITERATE_BASE) && p && p->iterate_base) {
        if (p->iterate_base(rchip, iter_base_cb, &x) < 0)
            return OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT;
        if (x.stop != OMNIPROF_STATUS_SUCCESS)
            return OMNIPROF_STATUS_SUCCESS;
    }
    /* Definitions: copy what to report under the lock, call back without it. */
    op_metrics_lock();
    op_metrics_ensure_loaded();
    size_t n = op_metrics_count();
    uint64_t *ids = op_malloc((n ? n : 1) * sizeof *ids);
    size_t k = 0;
    for (uint64_t id = 1; ids && id <= n; id++) {
        const op_metric_def *d = op_metrics_get(id);
        if (!d)
            continue;
        int want = 0;
        if (d->is_derived)
            want = (flags & OMNIPROF_COUNTER_ITERATE_DERIVED) && derived_available(rchip, d, 0);
        else if (d->is_constant) /* a chip's own value hides the global (valueless) entry */
            want = (flags & OMNIPROF_COUNTER_ITERATE_CONSTANT) &&
                   (*d->chip ? !strcmp(d->chip, rchip) : !op_metrics_find_exact(rchip, d->name));
        else if (d->origin == OP_METRIC_ORIGIN_XML)
            want = (flags & OMNIPROF_COUNTER_ITERATE_XML_BASE) && !strcmp(d->chip, rchip);
        if (want)
            ids[k++] = id;
    }
    op_metrics_unlock();
    if (!ids)
        return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    for (size_t i = 0; i < k; i++) {
        omniprof_counter_info_v0_t info;
        memset(&info, 0, sizeof info);
        info.size = sizeof info;
        if (omniprof_query_counter_info((omniprof_counter_id_t){ids[i]}, OMNIPROF_COUNTER_INFO_VERSION_0, &info))
            continue;
        if (cb(&info, data) != OMNIPROF_STATUS_SUCCESS)
            break;
    }
    op_free(ids);
    return OMNIPROF_STATUS_SUCCESS;
}

int op_counters_lookup_agent(omniprof_agent_id_t id, omniprof_agent_v0_t *out)
{
    if (!op_sdk_agent_lookup)
        return -1;
    /* GPU agents come from loaded backends only: loading the provider loads the CUDA backend */
    op_counters_provider_get();
    return op_sdk_agent_lookup(id, out);
}

OMNIPROF_API omniprof_status_t omniprof_iterate_agent_supported_counters(omniprof_agent_id_t agent,
                                                                         omniprof_counter_iterate_cb_t cb,
                                                                         void *data)
{
    omniprof_agent_v0_t a;
    if (op_counters_lookup_agent(agent, &a) || a.type != OMNIPROF_AGENT_TYPE_GPU || !a.model_name)
        return OMNIPROF_STATUS_ERROR_AGENT_NOT_FOUND;
    const op_counters_provider *p = op_counters_provider_get();
    const char *chip = (p && p->chip_of_device) ? p->chip_of_device(a.type_index) : NULL;
    return omniprof_iterate_chip_counters(chip ? chip : a.model_name, 0, cb, data);
}

typedef struct chips_ctx {
    omniprof_status_t (*cb)(const char *, void *);
    void *data;
} chips_ctx;

static int chips_cb(const char *chip, void *data)
{
    chips_ctx *c = data;
    return c->cb(chip, c->data) != OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_iterate_chips(omniprof_status_t (*cb)(const char *chip, void *data), void *data)
{
    if (!cb)
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    const op_counters_provider *p = op_counters_provider_get();
    if (!p || !p->iterate_chips)
        return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    chips_ctx c = {cb, data};
    p->iterate_chips(chips_cb, &c);
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_load_counter_definition(const char *xml, size_t size, uint32_t flags,
                                                                char *errbuf, size_t errlen)
{
    if (!xml || size == 0)
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (!errbuf)
        errlen = 0;
    char local[1024];
    op_metrics_lock();
    op_metrics_ensure_loaded();
    int rc = op_metrics_load_xml(xml, size, "<omniprof_load_counter_definition>",
                                 (flags & OMNIPROF_COUNTER_FLAG_APPEND_DEFINITION) != 0, local, sizeof local);
    op_metrics_unlock();
    op_counters_set_last_error(rc ? local : "");
    if (rc && errbuf && errlen)
        snprintf(errbuf, errlen, "%s", local);
    return rc ? OMNIPROF_STATUS_ERROR_PARSE : OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_create_counter(const char *name, const char *expression,
                                                       const char *description, omniprof_counter_id_t *id,
                                                       char *errbuf, size_t errlen)
{
    if (!name || !*name || !expression || !id)
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    char local[1024];
    op_metrics_lock();
    op_metrics_ensure_loaded();
    op_metric_def *d = op_metrics_define(name, expression, description, local, sizeof local);
    if (d)
        id->handle = d->id;
    op_metrics_unlock();
    op_counters_set_last_error(d ? "" : local);
    if (!d && errbuf && errlen)
        snprintf(errbuf, errlen, "%s", local);
    return d ? OMNIPROF_STATUS_SUCCESS : OMNIPROF_STATUS_ERROR_PARSE;
}
