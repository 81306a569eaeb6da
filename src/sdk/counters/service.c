/* service.c — the dispatch counting and device counting services, and the settings-driven
 * setup omniprof's own tool uses (OMNIPROF_PMC & co.).
 *
 * Dispatch counting, one dispatch:
 *
 *   launching thread (provider's launch hook, ENTER)       provider (after the kernel ran)
 *   ─────────────────────────────────────────────────      ───────────────────────────────────
 *   op_sdk_counters_dispatch_select(launch) ──▶ token       op_sdk_counters_dispatch_complete(
 *     • first active context with the service                 token, base values, passes)
 *     • its dispatch callback picks a config (0: skip)         • evaluate derived metrics
 *     • config acquired (invariant (1) of config.c)          • DISPATCH_HEADER + VALUE records
 *   ◀── plan (base metric names) for the provider                into the buffer (or callback)
 *                                                              • config released
 *
 * Invariants:
 *  (1) a service slot is written only while the SDK configuration is open; afterwards it is
 *      read without a lock (published by g_dc_mask with release order);
 *  (2) at most one context counts dispatches at a time: the first active context (lowest
 *      index) that configured the service wins; others are reported once (CONTEXT_CONFLICT);
 *  (3) a token lives from select to complete/cancel on the provider's side; it owns one
 *      config reference;
 *  (4) nothing here blocks the launching thread except the buffer's LOSSLESS policy. */
#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/regex_bound.h"
#include "common/settings.h"
#include "sdk/counters/counters_internal.h"
#include "sdk/sdk_internal.h"

typedef struct dc_service {
    omniprof_buffer_id_t buffer;
    omniprof_dispatch_counting_service_cb_t cb;
    void *cb_data;
    omniprof_dispatch_counting_record_cb_t record_cb;
    void *record_data;
} dc_service;

static dc_service g_dc[OP_SDK_MAX_CONTEXTS];
static _Atomic uint64_t g_dc_mask; /* contexts (by index) with a dispatch counting service */
static _Atomic int g_provider_started;
static _Atomic int g_conflict_reported;

typedef struct dc_token {
    int ci;
    op_counter_config *cfg;
    omniprof_counter_dispatch_header_record_t header;
} dc_token;

int op_sdk_counters_dispatch_active(void)
{
    uint64_t m = atomic_load_explicit(&g_dc_mask, memory_order_acquire);
    return m && (m & op_context_active_mask()) != 0;
}

static omniprof_status_t start_provider(void)
{
    if (atomic_exchange(&g_provider_started, 1))
        return OMNIPROF_STATUS_SUCCESS;
    const op_counters_provider *p = op_counters_provider_get();
    if (!p || !p->dispatch_start) {
        op_warn("counters: no hardware-counter backend in this build; dispatch counting is off");
        return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    }
    return p->dispatch_start();
}

static int device_service_used(int ci);

static omniprof_status_t configure_dc(omniprof_context_id_t context, omniprof_buffer_id_t buffer,
                                      omniprof_dispatch_counting_service_cb_t cb, void *cb_data,
                                      omniprof_dispatch_counting_record_cb_t record_cb, void *record_data)
{
    if (!cb)
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    int ci;
    omniprof_status_t st = op_sdk_config_context(context, &ci);
    if (st != OMNIPROF_STATUS_SUCCESS)
        return st;
    if (!record_cb) {
        op_buffer *b = op_buffer_lookup(buffer);
        if (!b)
            return OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND;
        if (op_buffer_context(b).handle != context.handle)
            return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (device_service_used(ci))
        return OMNIPROF_STATUS_ERROR_CONTEXT_CONFLICT; /* dispatch and device counting: one per context */
    op_sdk_lock();
    if (atomic_load(&g_dc_mask) & (1ull << ci)) {
        op_sdk_unlock();
        return OMNIPROF_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED;
    }
    g_dc[ci] = (dc_service){buffer, cb, cb_data, record_cb, record_data};
    atomic_fetch_or_explicit(&g_dc_mask, 1ull << ci, memory_order_release);
    op_sdk_unlock();
    /* The launch hook must be in place before the application's first launch. */
    start_provider(); /* a failure was reported by the provider; the service stays configured, idle */
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_configure_buffer_dispatch_counting_service(
    omniprof_context_id_t context, omniprof_buffer_id_t buffer, omniprof_dispatch_counting_service_cb_t callback,
    void *data)
{
    return configure_dc(context, buffer, callback, data, NULL, NULL);
}

OMNIPROF_API omniprof_status_t omniprof_configure_callback_dispatch_counting_service(
    omniprof_context_id_t context, omniprof_dispatch_counting_service_cb_t callback, void *callback_data,
    omniprof_dispatch_counting_record_cb_t record_callback, void *record_callback_data)
{
    if (!record_callback)
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    return configure_dc(context, OMNIPROF_BUFFER_NONE, callback, callback_data, record_callback, record_callback_data);
}

const op_counters_plan *op_sdk_counters_dispatch_select(const op_counters_launch *launch, void **token)
{
    *token = NULL;
    uint64_t m = atomic_load_explicit(&g_dc_mask, memory_order_acquire) & op_context_active_mask();
    if (!m || !launch)
        return NULL;
    int ci = __builtin_ctzll(m);
    if ((m & ~(1ull << ci)) && !atomic_exchange(&g_conflict_reported, 1))
        op_warn("counters: several active contexts count dispatches; only the first one does (%s)",
                omniprof_get_status_string(OMNIPROF_STATUS_ERROR_CONTEXT_CONFLICT));
    const dc_service *s = &g_dc[ci];
    omniprof_async_correlation_id_t corr = launch->correlation_id;
    if (!corr.internal) {
        /* The provider's launch hook runs inside the traced launch call, right after the
         * backend opened its correlation id: the top of this thread's stack is that call's id,
         * the one the kernel's dispatch record carries. */
        op_tls *tls = op_tls_peek();
        if (tls && tls->corr_depth > 0 && tls->corr_depth <= OP_SDK_CORR_STACK)
            corr.internal = tls->corr_stack[tls->corr_depth - 1];
    }
    /* A provider that cannot know the backend's dispatch id at launch gives 0: number the
     * dispatch here, in a range of its own (bit 62) so it never equals a traced dispatch's id;
     * header and values share it, so a consumer can always join them (docs/counters.md). */
    static _Atomic uint64_t seq;
    omniprof_dispatch_id_t dispatch_id =
        launch->dispatch_id ? launch->dispatch_id : ((1ull << 62) | (atomic_fetch_add(&seq, 1) + 1));
    omniprof_dispatch_counting_service_data_t d;
    memset(&d, 0, sizeof d);
    d.size = sizeof d;
    d.correlation_id = corr;
    d.dispatch_id = dispatch_id;
    d.kernel_id = launch->kernel_id;
    d.agent_id = launch->agent_id;
    d.kernel_name = launch->kernel_name;
    d.grid_size = launch->grid_size;
    d.block_size = launch->block_size;
    d.chip = launch->chip;
    omniprof_counter_config_id_t cfg_id = {0};
    omniprof_user_data_t ud = {0};
    s->cb(&d, &cfg_id, &ud, s->cb_data);
    if (!cfg_id.handle)
        return NULL;
    op_counter_config *cfg = op_counter_config_acquire(cfg_id);
    if (!cfg)
        return NULL;
    if (launch->chip && strcmp(cfg->chip, launch->chip)) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            op_warn("counters: a config for %s was chosen for a kernel on %s; not counted", cfg->chip, launch->chip);
        op_counter_config_release(cfg);
        return NULL;
    }
    dc_token *t = op_calloc(1, sizeof *t);
    if (!t) {
        op_counter_config_release(cfg);
        return NULL;
    }
    t->ci = ci;
    t->cfg = cfg;
    omniprof_counter_dispatch_header_record_t *h = &t->header;
    h->size = sizeof *h;
    h->kind = OMNIPROF_COUNTER_RECORD_DISPATCH_HEADER;
    h->operation = OMNIPROF_COUNTER_OPERATION_DISPATCH;
    h->correlation_id = corr;
    /* the external id of our context, captured on the launching thread */
    op_sdk_external ext;
    memset(&ext, 0, sizeof ext);
    op_sdk_external_capture(&ext);
    for (uint32_t i = 0; i < ext.count && i < 4; i++)
        if ((int)ext.context_index[i] == ci)
            h->correlation_id.external = ext.value[i];
    h->dispatch_id = dispatch_id;
    h->kernel_id = launch->kernel_id;
    h->agent_id = launch->agent_id;
    h->thread_id = launch->thread_id;
    h->kernel_name = launch->kernel_name;
    h->grid_size = launch->grid_size;
    h->block_size = launch->block_size;
    h->start_timestamp = launch->launch_timestamp ? launch->launch_timestamp : op_now_ns();
    h->config_id = cfg_id;
    h->num_values = (uint32_t)cfg->n_items;
    h->user_data = ud;
    *token = t;
    return &cfg->plan;
}

void op_sdk_counters_dispatch_cancel(void *token)
{
    dc_token *t = token;
    if (!t)
        return;
    op_counter_config_release(t->cfg);
    op_free(t);
}

void op_sdk_counters_dispatch_complete(void *token, const double *base_values, size_t num_passes)
{
    dc_token *t = token;
    if (!t)
        return;
    const op_counter_config *c = t->cfg;
    double small[32];
    double *vals = c->n_items <= 32 ? small : op_calloc(c->n_items, sizeof *vals);
    omniprof_counter_value_record_t vsmall[32];
    omniprof_counter_value_record_t *recs = c->n_items <= 32 ? vsmall : op_calloc(c->n_items, sizeof *recs);
    if (!vals || !recs)
        goto out;
    if (op_counter_config_evaluate(c, base_values, vals) != 0) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            op_warn("counters: a derived metric could not be evaluated; it reads 0");
    }
    omniprof_counter_dispatch_header_record_t *h = &t->header;
    h->num_passes = (uint32_t)num_passes;
    double dur = c->plan.duration_index >= 0 ? base_values[c->plan.duration_index] : 0.0;
    h->end_timestamp = h->start_timestamp + (dur > 0 ? (uint64_t)dur : 0);
    for (size_t i = 0; i < c->n_items; i++) {
        omniprof_counter_value_record_t *r = &recs[i];
        memset(r, 0, sizeof *r);
        r->size = sizeof *r;
        r->kind = OMNIPROF_COUNTER_RECORD_VALUE;
        r->operation = OMNIPROF_COUNTER_OPERATION_DISPATCH;
        r->correlation_id = h->correlation_id;
        r->dispatch_id = h->dispatch_id;
        r->counter_id.handle = c->items[i].counter_id;
        r->counter_name = c->items[i].name;
        r->value = vals[i];
        r->instance = 0;
        r->agent_id = h->agent_id;
    }
    const dc_service *s = &g_dc[t->ci];
    if (s->record_cb) {
        s->record_cb(h, recs, c->n_items, s->record_data);
    } else {
        op_buffer *b = op_buffer_lookup(s->buffer);
        if (b) {
            op_buffer_emplace(b, OMNIPROF_RECORD_CATEGORY_COUNTERS, h->kind, h, sizeof *h, 0, 0, false);
            for (size_t i = 0; i < c->n_items; i++)
                op_buffer_emplace(b, OMNIPROF_RECORD_CATEGORY_COUNTERS, recs[i].kind, &recs[i], sizeof recs[i], 0,
                                  0, false);
        }
    }
out:
    if (vals && vals != small)
        op_free(vals);
    if (recs && recs != vsmall)
        op_free(recs);
    op_counter_config_release(t->cfg);
    op_free(t);
}

/* ---- device counting ------------------------------------------------------------------- */

typedef struct device_service {
    int used;
    omniprof_buffer_id_t buffer;
    omniprof_agent_id_t agent;
    omniprof_device_counting_agent_cb_t cb;
    void *data;
    op_counter_config *cfg;  /* set by set_config */
    void *session;           /* provider session, started on first sample */
    uint32_t device;
} device_service;

static device_service g_dev[OP_SDK_MAX_CONTEXTS];
static pthread_mutex_t g_dev_lock = PTHREAD_MUTEX_INITIALIZER;

static int device_service_used(int ci)
{
    pthread_mutex_lock(&g_dev_lock);
    int used = g_dev[ci].used;
    pthread_mutex_unlock(&g_dev_lock);
    return used;
}

OMNIPROF_API omniprof_status_t omniprof_configure_device_counting_service(omniprof_context_id_t context,
                                                                          omniprof_buffer_id_t buffer,
                                                                          omniprof_agent_id_t agent,
                                                                          omniprof_device_counting_agent_cb_t cb,
                                                                          void *data)
{
    if (!cb)
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    int ci;
    omniprof_status_t st = op_sdk_config_context(context, &ci);
    if (st != OMNIPROF_STATUS_SUCCESS)
        return st;
    if (buffer.handle && !op_buffer_lookup(buffer))
        return OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND;
    if (atomic_load(&g_dc_mask) & (1ull << ci))
        return OMNIPROF_STATUS_ERROR_CONTEXT_CONFLICT;
    omniprof_agent_v0_t a;
    if (op_counters_lookup_agent(agent, &a) || a.type != OMNIPROF_AGENT_TYPE_GPU)
        return OMNIPROF_STATUS_ERROR_AGENT_NOT_FOUND;
    pthread_mutex_lock(&g_dev_lock);
    if (g_dev[ci].used) {
        pthread_mutex_unlock(&g_dev_lock);
        return OMNIPROF_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED;
    }
    g_dev[ci] = (device_service){1, buffer, agent, cb, data, NULL, NULL, a.type_index};
    pthread_mutex_unlock(&g_dev_lock);
    return OMNIPROF_STATUS_SUCCESS;
}

static _Thread_local int tl_set_config_ci = -1;

static omniprof_status_t dev_set_config(omniprof_context_id_t context, omniprof_counter_config_id_t config)
{
    int ci = op_context_index(context);
    if (ci < 0 || ci != tl_set_config_ci)
        return OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND;
    op_counter_config *c = op_counter_config_acquire(config);
    if (!c)
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (c->plan.num_passes > 1) {
        op_warn("counters: device counting needs a single-pass set; this one needs %zu passes", c->plan.num_passes);
        op_counter_config_release(c);
        return OMNIPROF_STATUS_ERROR_EXCEEDS_HW_LIMIT;
    }
    if (g_dev[ci].cfg)
        op_counter_config_release(g_dev[ci].cfg);
    g_dev[ci].cfg = c;
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_sample_device_counting_service(omniprof_context_id_t context,
                                                                       omniprof_user_data_t user_data,
                                                                       uint32_t flags,
                                                                       omniprof_counter_value_record_t *out_records,
                                                                       size_t *count)
{
    (void)user_data;
    int ci = op_context_index(context);
    if (ci < 0)
        return OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND;
    if (!(op_context_active_mask() & (1ull << ci)))
        return OMNIPROF_STATUS_ERROR_CONTEXT_NOT_STARTED;
    if (!(flags & OMNIPROF_COUNTER_SAMPLE_FLAG_ASYNC) && (!count || (*count && !out_records)))
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    const op_counters_provider *p = op_counters_provider_get();
    if (!p || !p->device_start)
        return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    pthread_mutex_lock(&g_dev_lock);
    device_service *s = &g_dev[ci];
    omniprof_status_t st = OMNIPROF_STATUS_SUCCESS;
    if (!s->used) {
        st = OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND;
        goto out;
    }
    if (!s->session) {
        /* first sample: choose the config and open the first window (the SDK core has no
         * context-start hook for services; docs/counters.md "Device counting") */
        if (!s->cfg) {
            tl_set_config_ci = ci;
            s->cb(context, s->agent, dev_set_config, s->data);
            tl_set_config_ci = -1;
        }
        if (!s->cfg) {
            st = OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
            goto out;
        }
        st = p->device_start(s->device, &s->cfg->plan, &s->session);
        if (count && !(flags & OMNIPROF_COUNTER_SAMPLE_FLAG_ASYNC))
            *count = 0;
        goto out;
    }
    {
        const op_counter_config *c = s->cfg;
        double base[256], vals[256];
        if (c->plan.num_base > 256 || c->n_items > 256) {
            st = OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
            goto out;
        }
        st = p->device_read(s->session, base);
        if (st != OMNIPROF_STATUS_SUCCESS)
            goto out;
        op_counter_config_evaluate(c, base, vals);
        size_t cap = count ? *count : 0;
        op_buffer *b = s->buffer.handle ? op_buffer_lookup(s->buffer) : NULL;
        for (size_t i = 0; i < c->n_items; i++) {
            omniprof_counter_value_record_t r;
            OP_SDK_RECORD_INIT(r, OMNIPROF_COUNTER_RECORD_VALUE, OMNIPROF_COUNTER_OPERATION_DEVICE);
            r.counter_id.handle = c->items[i].counter_id;
            r.counter_name = c->items[i].name;
            r.value = vals[i];
            r.agent_id = s->agent;
            if (b)
                op_buffer_emplace(b, OMNIPROF_RECORD_CATEGORY_COUNTERS, r.kind, &r, sizeof r, 0, 0, false);
            if (out_records && i < cap && !(flags & OMNIPROF_COUNTER_SAMPLE_FLAG_ASYNC))
                out_records[i] = r;
        }
        if (count && !(flags & OMNIPROF_COUNTER_SAMPLE_FLAG_ASYNC)) {
            if (cap < c->n_items)
                st = OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
            *count = c->n_items;
        }
    }
out:
    pthread_mutex_unlock(&g_dev_lock);
    return st;
}

/* ---- omniprof's own tool: OMNIPROF_PMC --------------------------------------------------- */

typedef struct kernel_count {
    const char *name;
    uint64_t n;
} kernel_count;

typedef struct pmc_setup {
    char *names[128];
    size_t n_names;
    int have_include, have_exclude;
    regex_t include, exclude;
    op_counters_range ranges[64];
    size_t n_ranges;
    uint64_t max_dispatches;
    _Atomic uint64_t counted;
    pthread_mutex_t lock; /* kernel counts and per-chip configs */
    kernel_count *counts;
    size_t n_counts, cap_counts;
    struct {
        char chip[32];
        omniprof_counter_config_id_t cfg; /* handle 0: failed */
    } chips[8];
    size_t n_chips;
} pmc_setup;

static pmc_setup g_pmc;

/* Count this launch of `name`; returns the 1-based iteration. Lock held. */
static uint64_t kernel_iteration(pmc_setup *p, const char *name)
{
    for (size_t i = 0; i < p->n_counts; i++)
        if (p->counts[i].name == name || !strcmp(p->counts[i].name, name))
            return ++p->counts[i].n;
    if (p->n_counts == p->cap_counts) {
        size_t nc = p->cap_counts ? p->cap_counts * 2 : 64;
        kernel_count *k = op_realloc(p->counts, nc * sizeof *k);
        if (!k)
            return 1;
        p->counts = k;
        p->cap_counts = nc;
    }
    p->counts[p->n_counts++] = (kernel_count){op_counters_intern(name), 1};
    return 1;
}

/* The config for chip (created on first use; errors reported once). Lock held. */
static omniprof_counter_config_id_t pmc_config_for(pmc_setup *p, const char *chip, omniprof_agent_id_t agent)
{
    for (size_t i = 0; i < p->n_chips; i++)
        if (!strcmp(p->chips[i].chip, chip))
            return p->chips[i].cfg;
    omniprof_counter_config_id_t cfg = {0};
    if (p->n_chips >= 8)
        return cfg;
    char err[1536];
    omniprof_counter_id_t ids[128];
    omniprof_status_t st = OMNIPROF_STATUS_SUCCESS;
    for (size_t i = 0; i < p->n_names && st == OMNIPROF_STATUS_SUCCESS; i++)
        st = op_counters_find(chip, p->names[i], &ids[i], err, sizeof err);
    omniprof_agent_v0_t a, *ap = NULL;
    memset(&a, 0, sizeof a);
    if (agent.handle && op_counters_lookup_agent(agent, &a) == 0)
        ap = &a; /* device constants (SM_COUNT, clocks) from the real device */
    if (st == OMNIPROF_STATUS_SUCCESS) {
        st = op_counter_config_create(chip, ap, ids, p->n_names, &cfg, err, sizeof err);
    }
    if (st == OMNIPROF_STATUS_SUCCESS) {
        size_t passes = 0;
        omniprof_query_counter_config_passes(cfg, &passes, NULL);
        const char *mode = op_setting_str(OP_SET_PMC_REPLAY_MODE);
        uint64_t maxp = op_setting_uint(OP_SET_PMC_MAX_PASSES);
        if (passes > 1 && mode && !strcmp(mode, "none")) {
            op_error("counters: the set needs %zu passes on %s but OMNIPROF_PMC_REPLAY_MODE=none allows 1; "
                     "use kernel replay or split it into groups (--pmc A --pmc B); counters are off",
                     passes, chip);
            omniprof_destroy_counter_config(cfg);
            cfg.handle = 0;
        } else if (maxp && passes > maxp) {
            op_error("counters: the set needs %zu passes on %s, more than OMNIPROF_PMC_MAX_PASSES=%llu; "
                     "counters are off",
                     passes, chip, (unsigned long long)maxp);
            omniprof_destroy_counter_config(cfg);
            cfg.handle = 0;
        } else {
            op_info("counters: %zu counters on %s, %zu replay pass%s per dispatch", p->n_names, chip, passes,
                    passes == 1 ? "" : "es");
        }
    } else {
        op_error("counters: %s; counters are off (the program still runs)", err);
        cfg.handle = 0;
    }
    snprintf(p->chips[p->n_chips].chip, sizeof p->chips[p->n_chips].chip, "%s", chip);
    p->chips[p->n_chips].cfg = cfg;
    p->n_chips++;
    return cfg;
}

static void pmc_dispatch_cb(const omniprof_dispatch_counting_service_data_t *d, omniprof_counter_config_id_t *config,
                            omniprof_user_data_t *user_data, void *data)
{
    (void)user_data;
    pmc_setup *p = data;
    config->handle = 0;
    const char *name = d->kernel_name ? d->kernel_name : "";
    if (p->have_include && regexec(&p->include, name, 0, NULL, 0) != 0)
        return;
    if (p->have_exclude && regexec(&p->exclude, name, 0, NULL, 0) == 0)
        return;
    if (p->max_dispatches && atomic_load(&p->counted) >= p->max_dispatches)
        return;
    const char *chip = d->chip;
    if (!chip)
        return;
    pthread_mutex_lock(&p->lock);
    uint64_t it = kernel_iteration(p, name);
    int in = op_counters_range_contains(p->ranges, p->n_ranges, it);
    omniprof_counter_config_id_t cfg = in ? pmc_config_for(p, chip, d->agent_id) : (omniprof_counter_config_id_t){0};
    pthread_mutex_unlock(&p->lock);
    if (cfg.handle) {
        atomic_fetch_add(&p->counted, 1);
        *config = cfg;
    }
}

/* Splits OMNIPROF_PMC ("A B,C") into names. Returns how many. */
static size_t split_names(const char *text, char **out, size_t max)
{
    size_t n = 0;
    char *copy = op_strdup(text ? text : ""), *save = NULL;
    for (char *t = copy ? strtok_r(copy, " ,\t\n", &save) : NULL; t && n < max; t = strtok_r(NULL, " ,\t\n", &save))
        out[n++] = op_strdup(t);
    op_free(copy);
    return n;
}

OMNIPROF_API omniprof_status_t omniprof_configure_pmc_from_settings(omniprof_context_id_t context,
                                                                    omniprof_buffer_id_t buffer, char *errbuf,
                                                                    size_t errlen)
{
    char dummy[8];
    if (!errbuf) {
        errbuf = dummy;
        errlen = sizeof dummy;
    }
    errbuf[0] = '\0';
    pmc_setup *p = &g_pmc;
    const char *pmc = op_setting_str(OP_SET_PMC);
    if (!pmc || !*pmc) {
        snprintf(errbuf, errlen, "OMNIPROF_PMC is empty");
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (p->n_names) {
        snprintf(errbuf, errlen, "the PMC service is already configured");
        return OMNIPROF_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED;
    }
    pthread_mutex_init(&p->lock, NULL);
    p->n_names = split_names(pmc, p->names, 128);
    const char *inc = op_setting_str(OP_SET_KERNEL_INCLUDE_REGEX);
    const char *exc = op_setting_str(OP_SET_KERNEL_EXCLUDE_REGEX);
    if (inc && *inc) {
        char why[256];
        if (op_regex_compile(&p->include, inc, REG_NOSUB, why, sizeof why)) {
            snprintf(errbuf, errlen, "OMNIPROF_KERNEL_INCLUDE_REGEX='%s' is not a usable POSIX extended regex: %s", inc, why);
            return OMNIPROF_STATUS_ERROR_PARSE;
        }
        p->have_include = 1;
    }
    if (exc && *exc) {
        char why[256];
        if (op_regex_compile(&p->exclude, exc, REG_NOSUB, why, sizeof why)) {
            snprintf(errbuf, errlen, "OMNIPROF_KERNEL_EXCLUDE_REGEX='%s' is not a usable POSIX extended regex: %s", exc, why);
            return OMNIPROF_STATUS_ERROR_PARSE;
        }
        p->have_exclude = 1;
    }
    const char *rng = op_setting_str(OP_SET_KERNEL_ITERATION_RANGE);
    if (rng && *rng && op_counters_parse_iteration_range(rng, p->ranges, 64, &p->n_ranges, errbuf, errlen))
        return OMNIPROF_STATUS_ERROR_PARSE;
    p->max_dispatches = op_setting_uint(OP_SET_PMC_MAX_DISPATCHES);
    /* Validate the names now when a chip is known without a GPU context (the provider's default
     * chip); otherwise at the first dispatch. */
    const op_counters_provider *prov = op_counters_provider_get();
    const char *chip = prov && prov->default_chip ? prov->default_chip() : NULL;
    if (chip) {
        pthread_mutex_lock(&p->lock);
        omniprof_counter_config_id_t cfg = pmc_config_for(p, chip, (omniprof_agent_id_t){0});
        pthread_mutex_unlock(&p->lock);
        if (!cfg.handle) {
            snprintf(errbuf, errlen, "the counter set cannot be collected on %s (see the message above)", chip);
            return OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND;
        }
    }
    return omniprof_configure_buffer_dispatch_counting_service(context, buffer, pmc_dispatch_cb, p);
}
