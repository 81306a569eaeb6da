/* config.c — counter configs: the requested counters resolved once (derived metrics expanded
 * into the base counters they need, constants captured, passes planned by the provider), their
 * handles and references, and the evaluation of every requested counter from one dispatch's
 * base values.
 *
 * Invariants:
 *  (1) a config is immutable once its handle is returned; services hold a reference
 *      (op_counter_config_acquire) so destroying the handle never frees a config in use;
 *  (2) every name a config evaluates was resolved when it was created: evaluation never
 *      touches the registry (no lock on the per-dispatch path but the config's own);
 *  (3) a derived metric's value only depends on the base values of one dispatch and the
 *      constants captured at creation (agent properties, or the XML's chip values offline). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"
#include "sdk/counters/counters_internal.h"

#define MAX_CONFIGS 4096

static pthread_mutex_t g_cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static op_counter_config *g_cfgs[MAX_CONFIGS];
static size_t g_n_cfgs;

typedef struct builder {
    const char *chip;
    const omniprof_agent_v0_t *agent;
    const op_counters_provider *p;
    const char **base;
    size_t n_base, cap_base;
    op_cfg_item *aux;
    size_t n_aux, cap_aux;
    char *err;
    size_t errlen;
    omniprof_status_t st;
} builder;

static int add_base(builder *b, const char *name)
{
    for (size_t i = 0; i < b->n_base; i++)
        if (!strcmp(b->base[i], name))
            return (int)i;
    if (b->n_base == b->cap_base) {
        size_t nc = b->cap_base ? b->cap_base * 2 : 16;
        const char **n = op_realloc(b->base, nc * sizeof *n);
        if (!n)
            return -1;
        b->base = n;
        b->cap_base = nc;
    }
    b->base[b->n_base] = op_counters_intern(name);
    return (int)b->n_base++;
}

static op_cfg_item *find_aux(builder *b, const char *name)
{
    for (size_t i = 0; i < b->n_aux; i++)
        if (!strcmp(b->aux[i].name, name))
            return &b->aux[i];
    return NULL;
}

static op_cfg_item *add_aux(builder *b)
{
    if (b->n_aux == b->cap_aux) {
        size_t nc = b->cap_aux ? b->cap_aux * 2 : 16;
        op_cfg_item *n = op_realloc(b->aux, nc * sizeof *n);
        if (!n)
            return NULL;
        b->aux = n;
        b->cap_aux = nc;
    }
    op_cfg_item *it = &b->aux[b->n_aux++];
    memset(it, 0, sizeof *it);
    return it;
}

/* Constant value for the config's chip: agent property, else the XML chip value. Lock held. */
static int constant_value(builder *b, const char *name, double *v)
{
    if (b->agent && op_metrics_agent_constant(name, b->agent, v) == 0)
        return 0;
    const op_metric_def *cd = op_metrics_find_exact(b->chip, name);
    if (cd && cd->is_constant && cd->has_value) {
        *v = cd->value;
        return 0;
    }
    return -1;
}

/* Resolve one name (lock held). what: who refers to it, for messages. Returns 0/-1. */
static int resolve(builder *b, const char *name, const op_metric_def *from, int column, int depth)
{
    if (depth > 32) {
        snprintf(b->err, b->errlen, "'%s': derived metrics nest more than 32 levels", name);
        b->st = OMNIPROF_STATUS_ERROR_PARSE;
        return -1;
    }
    if (find_aux(b, name))
        return 0;
    op_metric_def *d = op_counters_find_locked(b->chip, name);
    if (!d) {
        char msg[768];
        op_counters_unknown_message(b->chip, name, msg, sizeof msg);
        if (from) {
            char caret_msg[1024];
            op_expr_error e = {.column = column};
            snprintf(e.message, sizeof e.message, "%.*s", (int)sizeof e.message - 1, msg);
            char what[256];
            snprintf(what, sizeof what, "metric '%s' (%s)", from->name, from->source);
            op_expr_format_error(what, from->expression, &e, caret_msg, sizeof caret_msg);
            snprintf(b->err, b->errlen, "%s", caret_msg);
        } else {
            snprintf(b->err, b->errlen, "%s", msg);
        }
        b->st = OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND;
        return -1;
    }
    if (d->is_constant) {
        double v;
        if (constant_value(b, name, &v)) {
            snprintf(b->err, b->errlen,
                     "constant '%s' has no value for %s here (no GPU agent, and metrics.xml gives none for this chip)",
                     name, b->chip);
            b->st = OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
            return -1;
        }
        op_cfg_item *it = add_aux(b);
        if (!it)
            goto oom;
        it->name = op_counters_intern(name);
        it->kind = 2;
        it->value = v;
        it->counter_id = d->id;
        return 0;
    }
    if (d->is_derived) {
        for (size_t i = 0; i < op_expr_num_names(d->expr); i++)
            if (resolve(b, op_expr_name(d->expr, i), d, op_expr_name_column(d->expr, i), depth + 1))
                return -1;
        op_cfg_item *it = add_aux(b);
        if (!it)
            goto oom;
        it->name = op_counters_intern(name);
        it->kind = 1;
        it->counter_id = d->id;
        op_expr_error e;
        it->expr = op_expr_parse(d->expression, &e);
        if (!it->expr)
            goto oom;
        return 0;
    }
    {
        int bi = add_base(b, name);
        if (bi < 0)
            goto oom;
        op_cfg_item *it = add_aux(b);
        if (!it)
            goto oom;
        it->name = b->base[bi];
        it->kind = 0;
        it->base_index = bi;
        it->counter_id = d->id;
        return 0;
    }
oom:
    snprintf(b->err, b->errlen, "out of memory");
    b->st = OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    return -1;
}

static void config_free(op_counter_config *c)
{
    if (!c)
        return;
    const op_counters_provider *p = op_counters_provider_get();
    if (c->plan.vendor && p && p->free_plan_cache)
        p->free_plan_cache(c->plan.vendor);
    for (size_t i = 0; i < c->n_aux; i++)
        op_expr_free(c->aux[i].expr);
    op_free(c->aux);
    op_free(c->items);
    op_free((void *)c->plan.base_names);
    op_free(c);
}

omniprof_status_t op_counter_config_create(const char *chip, const omniprof_agent_v0_t *agent,
                                           const omniprof_counter_id_t *ids, size_t n,
                                           omniprof_counter_config_id_t *out, char *err, size_t errlen)
{
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!ids || n == 0 || !out) {
        snprintf(err, errlen, "no counters given");
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    }
    const op_counters_provider *p = op_counters_provider_get();
    if (!p) {
        snprintf(err, errlen, "no hardware-counter backend in this build (needs the CUDA backend with CUPTI)");
        return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    }
    if (!chip || !*chip) {
        snprintf(err, errlen, "no chip: no GPU found and none named");
        return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    }
    builder b = {.chip = chip, .agent = agent, .p = p, .err = err, .errlen = errlen, .st = OMNIPROF_STATUS_SUCCESS};
    op_counter_config *c = op_calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    snprintf(c->chip, sizeof c->chip, "%s", chip);
    if (agent)
        c->agent = agent->id;
    c->items = op_calloc(n, sizeof *c->items);
    if (!c->items) {
        config_free(c);
        snprintf(err, errlen, "out of memory");
        return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    c->n_items = n;
    op_metrics_lock();
    op_metrics_ensure_loaded();
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const op_metric_def *d = op_metrics_get(ids[i].handle);
        if (!d) {
            snprintf(err, errlen, "counter id %llu is unknown or stale", (unsigned long long)ids[i].handle);
            b.st = OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND;
            rc = -1;
            break;
        }
        if (!d->is_derived && !d->is_constant && *d->chip && strcmp(d->chip, chip)) {
            snprintf(err, errlen, "counter '%s' belongs to %s, not %s", d->name, d->chip, chip);
            b.st = OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT;
            rc = -1;
            break;
        }
        char name[512];
        snprintf(name, sizeof name, "%s", d->name);
        rc = resolve(&b, name, NULL, 0, 0);
        if (rc == 0) {
            op_cfg_item *a = find_aux(&b, name);
            c->items[i] = *a;
            c->items[i].expr = NULL; /* evaluated through aux (the owner of the parsed copy) */
        }
    }
    op_metrics_unlock();
    /* the provider's duration metric rides along (kernel replay zeroes kernel timestamps, F7) */
    int dur = -1;
    if (rc == 0 && p->duration_metric) {
        dur = add_base(&b, p->duration_metric);
        if (dur < 0) {
            snprintf(err, errlen, "out of memory");
            b.st = OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
            rc = -1;
        }
    }
    size_t passes = 0;
    if (rc == 0 && b.n_base > 0) {
        if (!p->plan_passes || p->plan_passes(chip, b.base, b.n_base, &passes, err, errlen) != 0) {
            if (!err[0])
                snprintf(err, errlen, "the backend cannot plan passes for %s", chip);
            b.st = OMNIPROF_STATUS_ERROR_EXCEEDS_HW_LIMIT;
            rc = -1;
        }
    }
    c->plan.chip = op_counters_intern(chip);
    c->plan.base_names = b.base;
    c->plan.num_base = b.n_base;
    c->plan.num_passes = passes;
    c->plan.duration_index = dur;
    c->aux = b.aux;
    c->n_aux = b.n_aux;
    if (rc != 0) {
        config_free(c);
        return b.st != OMNIPROF_STATUS_SUCCESS ? b.st : OMNIPROF_STATUS_ERROR;
    }
    pthread_mutex_lock(&g_cfg_lock);
    if (g_n_cfgs >= MAX_CONFIGS) {
        pthread_mutex_unlock(&g_cfg_lock);
        config_free(c);
        snprintf(err, errlen, "more than %d counter configs", MAX_CONFIGS);
        return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    c->handle = g_n_cfgs + 1;
    c->refs = 1;
    g_cfgs[g_n_cfgs++] = c;
    pthread_mutex_unlock(&g_cfg_lock);
    out->handle = c->handle;
    return OMNIPROF_STATUS_SUCCESS;
}

op_counter_config *op_counter_config_acquire(omniprof_counter_config_id_t id)
{
    op_counter_config *c = NULL;
    pthread_mutex_lock(&g_cfg_lock);
    if (id.handle >= 1 && id.handle <= g_n_cfgs && g_cfgs[id.handle - 1] && !g_cfgs[id.handle - 1]->destroyed) {
        c = g_cfgs[id.handle - 1];
        c->refs++;
    }
    pthread_mutex_unlock(&g_cfg_lock);
    return c;
}

void op_counter_config_release(op_counter_config *c)
{
    if (!c)
        return;
    int free_it = 0;
    pthread_mutex_lock(&g_cfg_lock);
    if (--c->refs == 0) {
        g_cfgs[c->handle - 1] = NULL;
        free_it = 1;
    }
    pthread_mutex_unlock(&g_cfg_lock);
    if (free_it)
        config_free(c);
}

OMNIPROF_API omniprof_status_t omniprof_create_counter_config_for_chip(const char *chip,
                                                                       const omniprof_counter_id_t *counters,
                                                                       size_t num_counters,
                                                                       omniprof_counter_config_id_t *config)
{
    char err[1024];
    omniprof_status_t st = op_counter_config_create(op_counters_resolve_chip(chip), NULL, counters, num_counters, config, err,
                                                    sizeof err);
    op_counters_set_last_error(st == OMNIPROF_STATUS_SUCCESS ? "" : err);
    if (st != OMNIPROF_STATUS_SUCCESS)
        op_info("counters: %s", err);
    return st;
}

OMNIPROF_API omniprof_status_t omniprof_create_counter_config(omniprof_agent_id_t agent,
                                                              const omniprof_counter_id_t *counters,
                                                              size_t num_counters,
                                                              omniprof_counter_config_id_t *config)
{
    if (!counters || !num_counters || !config)
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    omniprof_agent_v0_t a;
    if (op_counters_lookup_agent(agent, &a) || a.type != OMNIPROF_AGENT_TYPE_GPU)
        return OMNIPROF_STATUS_ERROR_AGENT_NOT_FOUND;
    char err[1024];
    const op_counters_provider *p = op_counters_provider_get();
    const char *chip = (p && p->chip_of_device) ? p->chip_of_device(a.type_index) : NULL;
    if (!chip)
        chip = a.model_name;
    omniprof_status_t st = op_counter_config_create(chip, &a, counters, num_counters, config, err, sizeof err);
    op_counters_set_last_error(st == OMNIPROF_STATUS_SUCCESS ? "" : err);
    if (st != OMNIPROF_STATUS_SUCCESS)
        op_info("counters: %s", err);
    return st;
}

OMNIPROF_API omniprof_status_t omniprof_query_counter_config_passes(omniprof_counter_config_id_t config,
                                                                    size_t *num_passes, size_t *num_base_counters)
{
    op_counter_config *c = op_counter_config_acquire(config);
    if (!c)
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (num_passes)
        *num_passes = c->plan.num_passes;
    if (num_base_counters)
        *num_base_counters = c->plan.num_base;
    op_counter_config_release(c);
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_destroy_counter_config(omniprof_counter_config_id_t config)
{
    op_counter_config *c = NULL;
    pthread_mutex_lock(&g_cfg_lock);
    if (config.handle >= 1 && config.handle <= g_n_cfgs && g_cfgs[config.handle - 1] &&
        !g_cfgs[config.handle - 1]->destroyed) {
        c = g_cfgs[config.handle - 1];
        c->destroyed = 1;
    }
    pthread_mutex_unlock(&g_cfg_lock);
    if (c)
        op_counter_config_release(c); /* the handle's reference */
    return OMNIPROF_STATUS_SUCCESS;
}

/* ---- evaluation ------------------------------------------------------------------------ */

typedef struct eval_ctx {
    const op_counter_config *c;
    const double *base;
    double *memo;   /* per aux item */
    char *done;     /* 0 not yet, 1 in progress, 2 done */
    int failed;
} eval_ctx;

static int eval_aux(eval_ctx *x, size_t i);

static int eval_lookup(const char *name, const double **values, size_t *n, void *data)
{
    eval_ctx *x = data;
    for (size_t i = 0; i < x->c->n_aux; i++)
        if (!strcmp(x->c->aux[i].name, name)) {
            if (eval_aux(x, i))
                return -1;
            *values = &x->memo[i];
            *n = 1;
            return 0;
        }
    return -1;
}

static int eval_aux(eval_ctx *x, size_t i)
{
    if (x->done[i] == 2)
        return 0;
    if (x->done[i] == 1)
        return -1; /* cycle (excluded at load; defensive) */
    const op_cfg_item *it = &x->c->aux[i];
    x->done[i] = 1;
    int rc = 0;
    switch (it->kind) {
    case 0: x->memo[i] = x->base[it->base_index]; break;
    case 2: x->memo[i] = it->value; break;
    default: {
        op_expr_error e;
        rc = op_expr_eval_scalar(it->expr, eval_lookup, x, &x->memo[i], &e);
        break;
    }
    }
    x->done[i] = rc == 0 ? 2 : 0;
    return rc;
}

int op_counter_config_evaluate(const op_counter_config *c, const double *base_values, double *out)
{
    double memo_small[64];
    char done_small[64];
    double *memo = c->n_aux <= 64 ? memo_small : op_calloc(c->n_aux, sizeof *memo);
    char *done = c->n_aux <= 64 ? done_small : op_calloc(c->n_aux, 1);
    if (!memo || !done) {
        if (memo != memo_small)
            op_free(memo);
        if (done != done_small)
            op_free(done);
        return -1;
    }
    memset(done, 0, c->n_aux);
    eval_ctx x = {c, base_values, memo, done, 0};
    int rc = 0;
    for (size_t k = 0; k < c->n_items; k++) {
        const op_cfg_item *it = &c->items[k];
        double v = 0;
        for (size_t i = 0; i < c->n_aux; i++)
            if (c->aux[i].name == it->name || !strcmp(c->aux[i].name, it->name)) {
                if (eval_aux(&x, i) == 0)
                    v = memo[i];
                else
                    rc = -1;
                break;
            }
        out[k] = v;
    }
    if (memo != memo_small)
        op_free(memo);
    if (done != done_small)
        op_free(done);
    return rc;
}
