/* profile_cpu_build.c — the aggregation engine of the CPU profiles (profile_cpu.h), shared by
 * profile_cpu.c (flat and call-tree profiles) and folded.c (folded stacks).
 *
 * For each table set with CPU samples, with rows from the database reader (src/db/reader.h):
 *   1. the set's stack nodes (id -> parent, address) go into a hash map;
 *   2. its symbols (ordered by address and inline depth) become, per address, the list of frame
 *      names outermost first and the innermost frame's file:line;
 *   3. the reader counts samples per stack; each stack is walked leaf -> root, expanded into
 *      names root -> leaf, and added to one call tree (node = (parent, name), total += count on
 *      the path, self += count at the leaf) and to the flat table (total once per distinct name
 *      on the path, self for the leaf name, and the leaf's location counted per (function,
 *      location)).
 * Weighted by a counter (cp_profile_build_weighted), step 3 sums per stack each sample's
 * increase of that perf_event counter (op_rd_stack_weights) instead of counting samples.
 * Names are interned (one copy per distinct text), so nodes compare by id. Memory is the set's
 * stack and symbol dictionary plus the tree, never the samples. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/internal.h"
#include "output/profile_cpu.h"
#include "db/reader_report.h"

/* The id of name s, interned once per distinct text (0, the root's name, when out of memory). */
static uint32_t intern(cp_profile *p, const char *s)
{
    uint32_t id;
    return op_strtab_intern(&p->names, s, strlen(s), &id) == 0 ? id : 0;
}

static uint32_t tree_child(cp_profile *p, uint32_t parent, uint32_t name)
{
    uint64_t key = ((uint64_t)parent << 32) | name, idx;
    if (op_u64map_get(&p->child_index, key, &idx)) return (uint32_t)idx;
    if (op_grow(&p->nodes, &p->cap_nodes, p->n_nodes + 1, sizeof *p->nodes)) return UINT32_MAX;
    uint32_t id = (uint32_t)p->n_nodes++;
    cp_node *n = &p->nodes[id];
    memset(n, 0, sizeof *n);
    n->name = name;
    n->parent = parent;
    n->first_child = UINT32_MAX;
    n->next_sibling = p->nodes[parent].first_child;
    p->nodes[parent].first_child = id;
    op_u64map_put(&p->child_index, key, id);
    return id;
}

static cp_flat *flat_entry(cp_profile *p, uint32_t name)
{
    uint64_t idx;
    if (op_u64map_get(&p->flat_index, name, &idx)) return &p->flat[idx];
    if (op_grow(&p->flat, &p->cap_flat, p->n_flat + 1, sizeof *p->flat)) return NULL;
    cp_flat *f = &p->flat[p->n_flat];
    memset(f, 0, sizeof *f);
    f->name = name;
    f->best_loc = UINT32_MAX;
    f->module = UINT32_MAX;
    op_u64map_put(&p->flat_index, name, p->n_flat);
    p->n_flat++;
    return f;
}

/* ---- reading one table set -------------------------------------------------------------- */

typedef struct addr_frames {
    uint32_t n;
    uint32_t names[8];  /* outermost first */
    uint32_t loc;       /* innermost file:line, or UINT32_MAX */
    uint32_t module;    /* module basename, or UINT32_MAX */
} addr_frames;

/* What one set's stacks and symbols become while its samples are added. */
typedef struct set_dict {
    cp_profile *p;
    op_u64map stack;    /* node id -> index into parent/address */
    uint64_t *parent, *address;
    size_t n_nodes, cap_nodes;
    op_u64map addr_idx; /* address -> index into frames */
    addr_frames *frames;
    size_t n_frames, cap_frames;
    int oom;
    uint32_t prefix[2]; /* cp_profile_build_split: the process and thread frames above a stack */
    int n_prefix;
} set_dict;

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int node_cb(int64_t id, int64_t parent, uint64_t address, void *arg)
{
    set_dict *d = arg;
    size_t cap = d->cap_nodes;
    if (op_grow(&d->parent, &cap, d->n_nodes + 1, sizeof *d->parent) ||
        op_grow(&d->address, &d->cap_nodes, d->n_nodes + 1, sizeof *d->address))
        return d->oom = 1;
    d->parent[d->n_nodes] = (uint64_t)parent;
    d->address[d->n_nodes] = address;
    if (op_u64map_put(&d->stack, (uint64_t)id, d->n_nodes)) return d->oom = 1;
    d->n_nodes++;
    return 0;
}

/* The frames of an address, made on its first symbol row. */
static addr_frames *frames_of(set_dict *d, uint64_t addr)
{
    uint64_t idx;
    if (op_u64map_get(&d->addr_idx, addr, &idx)) return &d->frames[idx];
    if (op_grow(&d->frames, &d->cap_frames, d->n_frames + 1, sizeof *d->frames)) return NULL;
    idx = d->n_frames;
    if (op_u64map_put(&d->addr_idx, addr, idx)) return NULL;
    d->n_frames++;
    addr_frames *a = &d->frames[idx];
    memset(a, 0, sizeof *a);
    a->loc = UINT32_MAX;
    a->module = UINT32_MAX;
    return a;
}

static int symbol_cb(const op_rd_symbol *sy, void *arg)
{
    set_dict *d = arg;
    addr_frames *a = frames_of(d, sy->address);
    if (!a) return d->oom = 1;
    const char *fn = sy->function, *mod = sy->module;
    char buf[4200];
    if (!fn || !*fn) {
        if (mod && *mod)
            snprintf(buf, sizeof buf, "%s+0x%llx", base_name(mod), (unsigned long long)sy->module_offset);
        else
            snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)sy->address);
    } else if (sy->inline_depth > 0) {
        snprintf(buf, sizeof buf, "%s [inlined]", fn);
    } else {
        snprintf(buf, sizeof buf, "%s", fn);
    }
    if (a->n < 8) a->names[a->n++] = intern(d->p, buf);
    if (sy->file && *sy->file && sy->line > 0) {
        snprintf(buf, sizeof buf, "%s:%d", sy->file, sy->line);
        a->loc = intern(d->p, buf);
    } else {
        a->loc = UINT32_MAX;
    }
    if (mod && *mod) a->module = intern(d->p, base_name(mod));
    return 0;
}

/* The names of stack `node` root -> leaf into path[] (with each frame's module in mods[]);
 * returns their count (>= 1: an empty stack is "[no stack]"). */
static size_t expand_stack(set_dict *d, uint64_t node, uint32_t *path, uint32_t *mods, size_t cap,
                           uint32_t *leaf_loc, uint32_t *leaf_mod)
{
    uint64_t addrs[512], idx;
    size_t na = 0, np = 0;
    while (node && na < 512 && op_u64map_get(&d->stack, node, &idx)) { /* leaf -> root */
        addrs[na++] = d->address[idx];
        node = d->parent[idx];
    }
    *leaf_loc = *leaf_mod = UINT32_MAX;
    for (size_t i = na; i-- > 0;) { /* root -> leaf */
        uint64_t fi;
        if (op_u64map_get(&d->addr_idx, addrs[i], &fi) && d->frames[fi].n) {
            const addr_frames *a = &d->frames[fi];
            for (uint32_t k = 0; k < a->n && np < cap; k++) {
                mods[np] = a->module;
                path[np++] = a->names[k];
            }
            if (i == 0) {
                *leaf_loc = a->loc;
                *leaf_mod = a->module;
            }
        } else if (np < cap) {
            char buf[32];
            snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)addrs[i]);
            mods[np] = UINT32_MAX;
            path[np++] = intern(d->p, buf);
        }
    }
    if (!np) {
        mods[np] = UINT32_MAX;
        path[np++] = intern(d->p, "[no stack]");
    }
    return np;
}

/* Adds `count` samples of the path to the flat table. */
static void add_flat(cp_profile *p, const uint32_t *path, const uint32_t *mods, size_t np, uint32_t leaf_loc,
                     uint32_t leaf_mod, uint64_t count)
{
    for (size_t i = 0; i < np; i++) { /* total: once per distinct name on the path */
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) seen = path[j] == path[i];
        if (seen) continue;
        cp_flat *f = flat_entry(p, path[i]);
        if (f) {
            f->total += count;
            if (f->module == UINT32_MAX) f->module = mods[i];
        }
    }
    cp_flat *lf = flat_entry(p, path[np - 1]);
    if (!lf) return;
    lf->self += count;
    if (leaf_mod != UINT32_MAX) lf->module = leaf_mod;
    if (leaf_loc == UINT32_MAX) return;
    uint64_t key = ((uint64_t)path[np - 1] << 32) | leaf_loc, c = 0;
    op_u64map_get(&p->loc_counts, key, &c);
    c += count;
    op_u64map_put(&p->loc_counts, key, c);
    if (lf->best_loc == UINT32_MAX || c > lf->best_loc_count) {
        lf->best_loc = leaf_loc;
        lf->best_loc_count = c;
    }
}

static int count_cb(int64_t stack, uint64_t count, void *arg)
{
    set_dict *d = arg;
    cp_profile *p = d->p;
    uint32_t path[1100], mods[1100], leaf_loc, leaf_mod;
    size_t np = expand_stack(d, (uint64_t)stack, path, mods, 1100, &leaf_loc, &leaf_mod);
    p->total += count;
    uint32_t cur = 0;
    for (int i = 0; i < d->n_prefix; i++) {
        cur = tree_child(p, cur, d->prefix[i]);
        if (cur == UINT32_MAX) return d->oom = 1;
        p->nodes[cur].total += count;
    }
    for (size_t i = 0; i < np; i++) {
        cur = tree_child(p, cur, path[i]);
        if (cur == UINT32_MAX) return d->oom = 1;
        p->nodes[cur].total += count;
    }
    p->nodes[cur].self += count;
    add_flat(p, path, mods, np, leaf_loc, leaf_mod, count);
    return 0;
}

static int lost_cb(const op_rd_loss_row *r, void *arg)
{
    if (r->cause && strcmp(r->cause, "lost_at_source") == 0 && r->count > 0) *(uint64_t *)arg += (uint64_t)r->count;
    return 0;
}

/* Adds the samples of one set (clock and window as in cp_profile_build_set), each weighing 1,
 * or, with event >= 0, the increase of that counter since its thread's previous sample. */
static int add_set(cp_profile *p, op_src *src, op_src_set *set, int clock, const int64_t *window,
                   int event, char *err, size_t errlen)
{
    set_dict d = {.p = p};
    int rc = op_rd_stack_nodes(src, set, node_cb, &d, err, errlen);
    if (!rc && !d.oom) rc = op_rd_symbols(src, set, symbol_cb, &d, err, errlen);
    if (!rc && !d.oom && event >= 0)
        rc = op_rd_stack_weights(src, set, event, clock, window, count_cb, &d, err, errlen);
    else if (!rc && !d.oom)
        rc = op_rd_stack_counts(src, set, clock, window, count_cb, &d, err, errlen);
    if (!rc && !d.oom) rc = op_rd_report_losses(src, set, lost_cb, &p->lost, err, errlen);
    if (d.oom) {
        op_seterr(err, errlen, "%s: out of memory while building the CPU profile", src->path);
        rc = OP_OUT_EFAIL;
    }
    op_u64map_free(&d.stack);
    op_u64map_free(&d.addr_idx);
    free(d.parent);
    free(d.address);
    free(d.frames);
    return rc;
}

/* ---- per process and thread (cp_profile_build_split) --------------------------------------- */

typedef struct split_ctx {
    set_dict *d;
    op_src *src;
    op_src_set *set;
    op_u64map thread;  /* thread row -> (process frame << 32 | thread frame) + 1 */
} split_ctx;

static int split_thread(const op_thread_info *t, void *arg)
{
    split_ctx *c = arg;
    cp_profile *p = c->d->p;
    op_process_info pi;
    char proc[300], thr[300];
    op_rd_process(c->src, c->set, t->process_row, &pi);
    if (pi.rank >= 0) snprintf(proc, sizeof proc, "rank %lld · pid %lld", (long long)pi.rank, (long long)pi.os_pid);
    else snprintf(proc, sizeof proc, "pid %lld", (long long)pi.os_pid);
    const char *name = t->thread_name ? (const char *)t->thread_name : "";
    snprintf(thr, sizeof thr, "tid %lld%s%s", (long long)t->tid, name[0] ? " · " : "", name);
    uint64_t v = ((uint64_t)intern(p, proc) << 32 | intern(p, thr)) + 1;
    return op_u64map_put(&c->thread, (uint64_t)t->thread_row, v) ? -1 : 0;
}

static int split_count(int64_t thread, int64_t stack, uint64_t count, void *arg)
{
    split_ctx *c = arg;
    uint64_t v;
    if (op_u64map_get(&c->thread, (uint64_t)thread, &v)) {
        v--;
        c->d->prefix[0] = (uint32_t)(v >> 32);
        c->d->prefix[1] = (uint32_t)v;
        c->d->n_prefix = 2;
    } else {
        c->d->n_prefix = 0;
    }
    return count_cb(stack, count, c->d);
}

/* Adds the samples of one set under a frame per process and one per thread. */
static int add_set_split(cp_profile *p, op_src *src, op_src_set *set, char *err, size_t errlen)
{
    set_dict d = {.p = p};
    split_ctx c = {&d, src, set, {0}};
    int rc = op_rd_stack_nodes(src, set, node_cb, &d, err, errlen);
    if (!rc && !d.oom) rc = op_rd_symbols(src, set, symbol_cb, &d, err, errlen);
    if (!rc && !d.oom && op_rd_threads(src, set, split_thread, &c, err, errlen)) d.oom = 1;
    if (!rc && !d.oom) rc = op_rd_report_stack_counts_by_thread(src, set, split_count, &c, err, errlen);
    if (d.oom) {
        op_seterr(err, errlen, "%s: out of memory while building the CPU profile", src->path);
        rc = OP_OUT_EFAIL;
    }
    op_u64map_free(&c.thread);
    op_u64map_free(&d.stack);
    op_u64map_free(&d.addr_idx);
    free(d.parent);
    free(d.address);
    free(d.frames);
    return rc;
}

/* ---- building ------------------------------------------------------------------------------ */

typedef struct build_arg {
    cp_profile *p;
    const char *only_sfx;
    int clock;
    const int64_t *window;
    const char *weight; /* a counter's name, or NULL: samples */
    int weighted_sets;  /* sets whose samples carry it */
    char carried[300];  /* the counters the sets carry, for the message when none has weight */
} build_arg;

typedef struct find_event {
    const char *name;
    int index;
    char *carried;
} find_event;

static int find_event_cb(int index, const char *name, uint32_t type, uint64_t config, void *arg)
{
    find_event *f = arg;
    (void)type, (void)config;
    if (!name) return 0;
    if (strcmp(name, f->name) == 0 && f->index < 0) f->index = index;
    size_t l = strlen(f->carried), n = strlen(name);
    /* listed already? */
    for (const char *at = f->carried; (at = strstr(at, name)) != NULL; at += n)
        if ((at == f->carried || at[-1] == ' ') && (at[n] == ',' || at[n] == 0)) return 0;
    if (l + n + 3 < 300) snprintf(f->carried + l, 300 - l, "%s%s", l ? ", " : "", name);
    return 0;
}

static int build_set(op_src *src, op_src_set *set, size_t input, void *arg, char *err, size_t errlen)
{
    build_arg *a = arg;
    (void)input;
    if (!SRC_HAS(set, T_OP_CPU_SAMPLE) || (a->only_sfx && strcmp(a->only_sfx, set->suffix) != 0)) return 0;
    if (a->clock < 0) return add_set_split(a->p, src, set, err, errlen);
    int event = -1;
    if (a->weight) {
        find_event f = {a->weight, -1, a->carried};
        int rc = op_rd_sample_events(src, set, find_event_cb, &f, err, errlen);
        if (rc) return rc;
        if (f.index < 0) return 0; /* this process's samples do not carry it */
        event = f.index;
        a->weighted_sets++;
    }
    return add_set(a->p, src, set, a->clock, a->window, event, err, errlen);
}

int cp_profile_build_weighted(cp_profile *p, const char *const *inputs, size_t n_inputs,
                              const char *only_sfx, const char *weight, int clock,
                              const int64_t *window, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    intern(p, "[root]");
    p->cap_nodes = 1024;
    p->nodes = calloc(p->cap_nodes, sizeof *p->nodes);
    if (!p->nodes) return OP_OUT_EFAIL;
    p->nodes[0].name = 0;
    p->nodes[0].first_child = UINT32_MAX;
    p->nodes[0].next_sibling = UINT32_MAX;
    p->n_nodes = 1;
    build_arg a = {p, only_sfx, clock, window, weight, 0, ""};
    int rc = op_out_each_set(inputs, n_inputs, build_set, &a, err, errlen);
    if (!rc && weight && !a.weighted_sets) {
        op_seterr(err, errlen,
                  "no CPU samples of the inputs carry the counter '%s' (%s%s); record it with "
                  "`omniprof run --perf-events %s`",
                  weight, a.carried[0] ? "they carry: " : "they carry none", a.carried, weight);
        rc = OP_OUT_EINPUT;
    }
    return rc;
}

int cp_profile_build(cp_profile *p, const char *const *inputs, size_t n_inputs, int clock, char *err, size_t errlen)
{
    return cp_profile_build_window(p, inputs, n_inputs, clock, NULL, err, errlen);
}

int cp_profile_build_window(cp_profile *p, const char *const *inputs, size_t n_inputs, int clock,
                            const int64_t *window, char *err, size_t errlen)
{
    return cp_profile_build_set(p, inputs, n_inputs, NULL, clock, window, err, errlen);
}

int cp_profile_build_set(cp_profile *p, const char *const *inputs, size_t n_inputs, const char *only_sfx, int clock,
                         const int64_t *window, char *err, size_t errlen)
{
    return cp_profile_build_weighted(p, inputs, n_inputs, only_sfx, NULL, clock, window, err,
                                     errlen);
}

int cp_profile_build_split(cp_profile *p, const char *const *inputs, size_t n_inputs, char *err, size_t errlen)
{
    return cp_profile_build_set(p, inputs, n_inputs, NULL, -1, NULL, err, errlen);
}

void cp_profile_free(cp_profile *p)
{
    op_strtab_free(&p->names);
    free(p->nodes);
    free(p->flat);
    op_u64map_free(&p->child_index);
    op_u64map_free(&p->flat_index);
    op_u64map_free(&p->loc_counts);
    memset(p, 0, sizeof *p);
}

/* ---- which sets hold samples ------------------------------------------------------------- */

OMNIPROF_API int op_cpu_profile_has_samples(const char *const *inputs, size_t n_inputs)
{
    for (size_t i = 0; i < n_inputs; i++) {
        op_src *src;
        char err[8];
        if (op_src_open(inputs[i], &src, err, sizeof err)) continue;
        int found = 0;
        for (size_t k = 0; k < src->n_sets && !found; k++) found = op_rd_has_cpu_samples(src, &src->sets[k]);
        op_src_close(src);
        if (found) return 1;
    }
    return 0;
}

typedef struct label_arg {
    int (*cb)(size_t input, const char *sfx, const char *label, void *arg);
    void *arg;
} label_arg;

/* A set with samples, labelled "RANK r (pid p)" when its process recorded an MPI rank, else
 * "PROCESS p". */
static int label_set(op_src *src, op_src_set *set, size_t input, void *arg, char *err, size_t errlen)
{
    label_arg *a = arg;
    (void)err, (void)errlen;
    if (!op_rd_has_cpu_samples(src, set)) return 0;
    int64_t pid, rank;
    char label[300];
    op_rd_cpu_process(src, set, &pid, &rank);
    if (rank >= 0) snprintf(label, sizeof label, "RANK %lld (pid %lld)", (long long)rank, (long long)pid);
    else snprintf(label, sizeof label, "PROCESS %lld", (long long)pid);
    return a->cb(input, set->suffix, label, a->arg);
}

int cp_for_each_sample_set(const char *const *inputs, size_t n_inputs,
                           int (*cb)(size_t input, const char *sfx, const char *label, void *arg), void *arg,
                           char *err, size_t errlen)
{
    label_arg a = {cb, arg};
    return op_out_each_set(inputs, n_inputs, label_set, &a, err, errlen);
}
