/* profile_cpu.c — flat and call-tree CPU profiles from the samples in rocpd databases, and the
 * aggregation engine folded.c shares (design and formats: profile_cpu.h).
 *
 * Engine (cp_*): for each table set with CPU samples,
 *   1. the set's stack nodes (omniprof_stack: id -> parent, address) go into a hash map;
 *   2. its symbols (omniprof_symbol, ordered by address and inline depth) become, per
 *      address, the list of frame names outermost first and the innermost frame's file:line;
 *   3. SQLite counts samples per stack (GROUP BY stack_id); each stack is walked leaf -> root,
 *      expanded into names root -> leaf, and added to one call tree (node = (parent, name),
 *      total += count on the path, self += count at the leaf) and to the flat table
 *      (total once per distinct name on the path, self for the leaf name, and the leaf's
 *      location counted per (function, location)).
 * Names are interned (one copy per distinct text), so nodes compare by id. */
#include "output/profile_cpu.h"
#include "output/internal.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>


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
    if (p->n_nodes == p->cap_nodes) {
        size_t nc = p->cap_nodes ? p->cap_nodes * 2 : 1024;
        cp_node *nn = realloc(p->nodes, nc * sizeof *nn);
        if (!nn) return UINT32_MAX;
        p->nodes = nn;
        p->cap_nodes = nc;
    }
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
    if (p->n_flat == p->cap_flat) {
        size_t nc = p->cap_flat ? p->cap_flat * 2 : 256;
        cp_flat *nf = realloc(p->flat, nc * sizeof *nf);
        if (!nf) return NULL;
        p->flat = nf;
        p->cap_flat = nc;
    }
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

static int set_error(char *err, size_t errlen, const char *input, sqlite3 *db, const char *what)
{
    if (err && errlen) snprintf(err, errlen, "%s: %s: %s", input, what, db ? sqlite3_errmsg(db) : "cannot open");
    return 1;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int add_set(cp_profile *p, sqlite3 *db, const char *input, const char *sfx, int clock,
                   const int64_t *window, char *err, size_t errlen)
{
    char sql[512];
    sqlite3_stmt *st = NULL;
    op_u64map stack = {0};    /* node id -> index into sp/sa */
    uint64_t *sp = NULL, *sa = NULL;
    size_t ns = 0, cs = 0;
    op_u64map addr_idx = {0}; /* address -> index into af */
    addr_frames *af = NULL;
    size_t naf = 0, caf = 0;
    int rc = 0;

    snprintf(sql, sizeof sql, "SELECT id, parent_id, address FROM \"omniprof_stack%s\"", sfx);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = set_error(err, errlen, input, db, "reading omniprof_stack");
        goto out;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (ns == cs) {
            cs = cs ? cs * 2 : 4096;
            uint64_t *a = realloc(sp, cs * sizeof *a), *b = realloc(sa, cs * sizeof *b);
            if (a) sp = a;
            if (b) sa = b;
            if (!a || !b) {
                rc = 1;
                goto out;
            }
        }
        sp[ns] = (uint64_t)sqlite3_column_int64(st, 1);
        sa[ns] = (uint64_t)sqlite3_column_int64(st, 2);
        op_u64map_put(&stack, (uint64_t)sqlite3_column_int64(st, 0), ns);
        ns++;
    }
    sqlite3_finalize(st);
    st = NULL;

    snprintf(sql, sizeof sql,
             "SELECT address, inline_depth, function, file, line, module, module_offset FROM \"omniprof_symbol%s\" "
             "ORDER BY address, inline_depth",
             sfx);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = set_error(err, errlen, input, db, "reading omniprof_symbol");
        goto out;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        uint64_t addr = (uint64_t)sqlite3_column_int64(st, 0), idx;
        if (!op_u64map_get(&addr_idx, addr, &idx)) {
            if (naf == caf) {
                caf = caf ? caf * 2 : 1024;
                addr_frames *n = realloc(af, caf * sizeof *n);
                if (!n) {
                    rc = 1;
                    goto out;
                }
                af = n;
            }
            idx = naf++;
            memset(&af[idx], 0, sizeof af[idx]);
            af[idx].loc = UINT32_MAX;
            af[idx].module = UINT32_MAX;
            op_u64map_put(&addr_idx, addr, idx);
        }
        addr_frames *a = &af[idx];
        const char *fn = (const char *)sqlite3_column_text(st, 2);
        const char *file = (const char *)sqlite3_column_text(st, 3);
        int line = sqlite3_column_int(st, 4);
        const char *mod = (const char *)sqlite3_column_text(st, 5);
        char buf[4200];
        if (!fn || !*fn) {
            if (mod && *mod)
                snprintf(buf, sizeof buf, "%s+0x%llx", base_name(mod), (unsigned long long)sqlite3_column_int64(st, 6));
            else
                snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)addr);
        } else if (sqlite3_column_int(st, 1) > 0) {
            snprintf(buf, sizeof buf, "%s [inlined]", fn);
        } else {
            snprintf(buf, sizeof buf, "%s", fn);
        }
        if (a->n < 8) a->names[a->n++] = intern(p, buf);
        if (file && *file && line > 0) {
            snprintf(buf, sizeof buf, "%s:%d", file, line);
            a->loc = intern(p, buf);
        } else {
            a->loc = UINT32_MAX;
        }
        if (mod && *mod) a->module = intern(p, base_name(mod));
    }
    sqlite3_finalize(st);
    st = NULL;

    {
        char where[160] = "";
        size_t wl = 0;
        if (clock == 1) wl += (size_t)snprintf(where + wl, sizeof where - wl, " AND clock = 'CPUTIME'");
        else if (clock == 2) wl += (size_t)snprintf(where + wl, sizeof where - wl, " AND clock = 'REALTIME'");
        if (window)
            snprintf(where + wl, sizeof where - wl, " AND timestamp BETWEEN %lld AND %lld", (long long)window[0],
                     (long long)window[1]);
        snprintf(sql, sizeof sql, "SELECT stack_id, COUNT(*) FROM \"omniprof_cpu_sample%s\" WHERE 1%s GROUP BY stack_id",
                 sfx, where);
    }
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = set_error(err, errlen, input, db, "reading omniprof_cpu_sample");
        goto out;
    }
    uint32_t path[1100], mods[1100];
    uint64_t addrs[512];
    while (sqlite3_step(st) == SQLITE_ROW) {
        uint64_t node = (uint64_t)sqlite3_column_int64(st, 0);
        uint64_t count = (uint64_t)sqlite3_column_int64(st, 1);
        size_t na = 0;
        uint64_t idx;
        while (node && na < 512 && op_u64map_get(&stack, node, &idx)) { /* leaf -> root */
            addrs[na++] = sa[idx];
            node = sp[idx];
        }
        size_t np = 0;
        uint32_t leaf_loc = UINT32_MAX, leaf_mod = UINT32_MAX;
        for (size_t i = na; i-- > 0;) { /* root -> leaf */
            uint64_t fi;
            if (op_u64map_get(&addr_idx, addrs[i], &fi) && af[fi].n) {
                for (uint32_t k = 0; k < af[fi].n && np < 1100; k++) {
                    mods[np] = af[fi].module;
                    path[np++] = af[fi].names[k];
                }
                if (i == 0) {
                    leaf_loc = af[fi].loc;
                    leaf_mod = af[fi].module;
                }
            } else if (np < 1100) {
                char buf[32];
                snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)addrs[i]);
                mods[np] = UINT32_MAX;
                path[np++] = intern(p, buf);
            }
        }
        if (!np) {
            mods[np] = UINT32_MAX;
            path[np++] = intern(p, "[no stack]");
        }
        p->total += count;
        uint32_t cur = 0;
        for (size_t i = 0; i < np; i++) {
            cur = tree_child(p, cur, path[i]);
            if (cur == UINT32_MAX) {
                rc = 1;
                goto out;
            }
            p->nodes[cur].total += count;
        }
        p->nodes[cur].self += count;
        /* flat: total once per distinct name on the path */
        for (size_t i = 0; i < np; i++) {
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
        if (lf) {
            lf->self += count;
            if (leaf_mod != UINT32_MAX) lf->module = leaf_mod;
            if (leaf_loc != UINT32_MAX) {
                uint64_t key = ((uint64_t)path[np - 1] << 32) | leaf_loc, c = 0;
                op_u64map_get(&p->loc_counts, key, &c);
                c += count;
                op_u64map_put(&p->loc_counts, key, c);
                if (lf->best_loc == UINT32_MAX || c > lf->best_loc_count) {
                    lf->best_loc = leaf_loc;
                    lf->best_loc_count = c;
                }
            }
        }
    }
out:
    if (st) sqlite3_finalize(st);
    op_u64map_free(&stack);
    op_u64map_free(&addr_idx);
    free(sp);
    free(sa);
    free(af);
    return rc;
}

/* Table-set suffixes of one database that have CPU samples. */
static int for_each_set(sqlite3 *db, int (*fn)(const char *sfx, void *arg), void *arg)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'omniprof_cpu_sample%'",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (!name || strncmp(name, "omniprof_cpu_sample", 19) != 0) continue;
        rc = fn(name + 19, arg);
    }
    sqlite3_finalize(st);
    return rc;
}

/* Opens one input the way every other reader of libomniprof-output does (op_src_open_db:
 * read-only, defensive, untrusted schema, header checks, and immutable for a WAL database with
 * no -wal file, so that reading leaves no -wal/-shm files behind). */
static sqlite3 *open_ro(const char *path, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    if (op_src_open_db(path, &db, err, errlen) != OP_OUT_OK) return NULL;
    /* a non-database file fails here, with SQLite's reason */
    if (sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) != SQLITE_OK) {
        if (err && errlen) snprintf(err, errlen, "%s: not a readable database: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

typedef struct set_ctx {
    cp_profile *p;
    sqlite3 *db;
    const char *input;
    int clock;
    const int64_t *window;
    const char *only_sfx; /* NULL: every set */
    char *err;
    size_t errlen;
} set_ctx;

static int set_cb(const char *sfx, void *arg)
{
    set_ctx *c = arg;
    if (c->only_sfx && strcmp(c->only_sfx, sfx) != 0) return 0;
    return add_set(c->p, c->db, c->input, sfx, c->clock, c->window, c->err, c->errlen);
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
    memset(p, 0, sizeof *p);
    intern(p, "[root]");
    p->n_nodes = 0;
    p->cap_nodes = 1024;
    p->nodes = calloc(p->cap_nodes, sizeof *p->nodes);
    if (!p->nodes) return 1;
    p->nodes[0].name = 0;
    p->nodes[0].first_child = UINT32_MAX;
    p->nodes[0].next_sibling = UINT32_MAX;
    p->n_nodes = 1;
    for (size_t i = 0; i < n_inputs; i++) {
        sqlite3 *db = open_ro(inputs[i], err, errlen);
        if (!db) return 2;
        set_ctx c = {p, db, inputs[i], clock, window, only_sfx, err, errlen};
        int rc = for_each_set(db, set_cb, &c);
        sqlite3_close(db);
        if (rc != 0) return rc < 0 ? 2 : rc;
    }
    return 0;
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

/* ---- writers ------------------------------------------------------------------------------ */

static int has_cb(const char *sfx, void *arg)
{
    sqlite3 *db = arg;
    char sql[256];
    sqlite3_stmt *st;
    snprintf(sql, sizeof sql, "SELECT 1 FROM \"omniprof_cpu_sample%s\" LIMIT 1", sfx);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 0;
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

OMNIPROF_API int op_cpu_profile_has_samples(const char *const *inputs, size_t n_inputs)
{
    for (size_t i = 0; i < n_inputs; i++) {
        sqlite3 *db = open_ro(inputs[i], NULL, 0);
        if (!db) continue;
        int found = for_each_set(db, has_cb, db);
        sqlite3_close(db);
        if (found > 0) return 1;
    }
    return 0;
}

/* Comparators take the profile as qsort_r's context (GNU): no shared state, so profiles may be
 * written from several threads at once (output.h: functions share no state). */
static int cmp_flat(const void *a, const void *b, void *ctx)
{
    const cp_profile *g_sort_profile = ctx;
    const cp_flat *x = a, *y = b;
    if (x->self != y->self) return x->self < y->self ? 1 : -1;
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    return strcmp(CP_STR(g_sort_profile, x->name), CP_STR(g_sort_profile, y->name));
}

static int cmp_child(const void *a, const void *b, void *ctx)
{
    const cp_profile *g_sort_profile = ctx;
    const cp_node *x = &g_sort_profile->nodes[*(const uint32_t *)a], *y = &g_sort_profile->nodes[*(const uint32_t *)b];
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    return strcmp(CP_STR(g_sort_profile, x->name), CP_STR(g_sort_profile, y->name));
}

/* Children of `id` sorted by total desc; caller frees. */
uint32_t *cp_sorted_children(cp_profile *p, uint32_t id, size_t *n)
{
    size_t k = 0;
    for (uint32_t c = p->nodes[id].first_child; c != UINT32_MAX; c = p->nodes[c].next_sibling) k++;
    *n = k;
    if (!k) return NULL;
    uint32_t *arr = malloc(k * sizeof *arr);
    if (!arr) {
        *n = 0;
        return NULL;
    }
    k = 0;
    for (uint32_t c = p->nodes[id].first_child; c != UINT32_MAX; c = p->nodes[c].next_sibling) arr[k++] = c;
    qsort_r(arr, k, sizeof *arr, cmp_child, p);
    return arr;
}

static void text_tree(FILE *f, cp_profile *p, uint32_t id, int depth, double min_pct)
{
    size_t n;
    uint32_t *kids = cp_sorted_children(p, id, &n);
    for (size_t i = 0; i < n; i++) {
        const cp_node *c = &p->nodes[kids[i]];
        double tp = p->total ? 100.0 * (double)c->total / (double)p->total : 0;
        if (tp < min_pct) continue;
        double sp = p->total ? 100.0 * (double)c->self / (double)p->total : 0;
        fprintf(f, "%8llu %6.2f%% %8llu %6.2f%%  %*s%s\n", (unsigned long long)c->total, tp,
                (unsigned long long)c->self, sp, depth * 2, "", CP_STR(p, c->name));
        if (depth < 200) text_tree(f, p, kids[i], depth + 1, min_pct);
    }
    free(kids);
}

static void json_tree(FILE *f, cp_profile *p, uint32_t id, int depth)
{
    const cp_node *c = &p->nodes[id];
    fprintf(f, "{\"name\": ");
    op_json_fputs(f, id == 0 ? "[root]" : CP_STR(p, c->name));
    fprintf(f, ", \"self\": %llu, \"total\": %llu", (unsigned long long)(id == 0 ? 0 : c->self),
            (unsigned long long)(id == 0 ? p->total : c->total));
    size_t n;
    uint32_t *kids = cp_sorted_children(p, id, &n);
    if (n && depth < 1000) {
        fprintf(f, ", \"children\": [");
        for (size_t i = 0; i < n; i++) {
            if (i) fputs(", ", f);
            json_tree(f, p, kids[i], depth + 1);
        }
        fputc(']', f);
    }
    free(kids);
    fputc('}', f);
}

OMNIPROF_API int op_cpu_profile_write(const char *const *inputs, size_t n_inputs, FILE *out,
                                      const op_cpu_profile_options *opts, char *err, size_t errlen)
{
    return cp_profile_write_window(inputs, n_inputs, out, opts, NULL, err, errlen);
}

int cp_profile_write_window(const char *const *inputs, size_t n_inputs, FILE *out, const op_cpu_profile_options *opts,
                            const int64_t *window, char *err, size_t errlen)
{
    return cp_profile_write_set(inputs, n_inputs, NULL, out, opts, window, err, errlen);
}

/* Label of one table set: "RANK r (pid p)" when the process recorded an MPI rank, else
 * "PROCESS p" (the pid of its samples). */
static void set_label(sqlite3 *db, const char *sfx, char *label, size_t n)
{
    char sql[600];
    sqlite3_stmt *st = NULL;
    long long pid = -1, rank = -1;
    snprintf(sql, sizeof sql, "SELECT pid FROM \"omniprof_cpu_sample%s\" LIMIT 1", sfx);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        pid = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    snprintf(sql, sizeof sql,
             "SELECT pid, json_extract(CASE WHEN json_valid(extdata) THEN extdata END, '$.rank') FROM "
             "\"rocpd_info_process%s\" ORDER BY id LIMIT 1",
             sfx);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        pid = sqlite3_column_int64(st, 0);
        if (sqlite3_column_type(st, 1) != SQLITE_NULL) rank = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (rank >= 0) snprintf(label, n, "RANK %lld (pid %lld)", rank, pid);
    else snprintf(label, n, "PROCESS %lld", pid);
}

typedef struct label_ctx {
    sqlite3 *db;
    size_t input;
    int (*cb)(size_t input, const char *sfx, const char *label, void *arg);
    void *arg;
} label_ctx;

static int label_cb(const char *sfx, void *arg)
{
    label_ctx *c = arg;
    if (has_cb(sfx, c->db) <= 0) return 0;
    char label[300];
    set_label(c->db, sfx, label, sizeof label);
    return c->cb(c->input, sfx, label, c->arg);
}

int cp_for_each_sample_set(const char *const *inputs, size_t n_inputs,
                           int (*cb)(size_t input, const char *sfx, const char *label, void *arg), void *arg,
                           char *err, size_t errlen)
{
    for (size_t i = 0; i < n_inputs; i++) {
        sqlite3 *db = open_ro(inputs[i], err, errlen);
        if (!db) return 2;
        label_ctx c = {db, i, cb, arg};
        int rc = for_each_set(db, label_cb, &c);
        sqlite3_close(db);
        if (rc) return rc < 0 ? 2 : rc;
    }
    return 0;
}

int cp_profile_write_set(const char *const *inputs, size_t n_inputs, const char *only_sfx, FILE *out,
                         const op_cpu_profile_options *opts, const int64_t *window, char *err, size_t errlen)
{
    op_cpu_profile_options o = {sizeof o, OP_CPU_PROFILE_TEXT, 1, 1, 30, 0.5, 0};
    if (opts) {
        size_t sz = opts->size < sizeof o ? opts->size : sizeof o;
        memcpy(&o, opts, sz);
        o.size = sizeof o;
    }
    if (!o.max_rows) o.max_rows = 30;
    if (o.min_percent <= 0) o.min_percent = 0.5;
    if (!out || (!inputs && n_inputs)) {
        if (err && errlen) snprintf(err, errlen, "op_cpu_profile_write: NULL output or inputs");
        return 2;
    }
    cp_profile p;
    int rc = cp_profile_build_set(&p, inputs, n_inputs, only_sfx, o.clock, window, err, errlen);
    if (rc) {
        cp_profile_free(&p);
        return rc;
    }
    qsort_r(p.flat, p.n_flat, sizeof *p.flat, cmp_flat, &p);
    double tot = p.total ? (double)p.total : 1.0;
    if (o.format == OP_CPU_PROFILE_JSON) {
        fprintf(out, "{\"total_samples\": %llu", (unsigned long long)p.total);
        if (o.flat) {
            fprintf(out, ", \"flat\": [");
            for (size_t i = 0; i < p.n_flat; i++) {
                const cp_flat *f = &p.flat[i];
                fprintf(out, "%s{\"function\": ", i ? ", " : "");
                op_json_fputs(out, CP_STR(&p, f->name));
                fprintf(out, ", \"location\": ");
                if (f->best_loc != UINT32_MAX) op_json_fputs(out, CP_STR(&p, f->best_loc));
                else fputs("null", out);
                fprintf(out, ", \"module\": ");
                if (f->module != UINT32_MAX) op_json_fputs(out, CP_STR(&p, f->module));
                else fputs("null", out);
                fprintf(out, ", \"self\": %llu, \"self_pct\": %.4f, \"total\": %llu, \"total_pct\": %.4f}",
                        (unsigned long long)f->self, 100.0 * (double)f->self / tot, (unsigned long long)f->total,
                        100.0 * (double)f->total / tot);
            }
            fputc(']', out);
        }
        if (o.tree) {
            fprintf(out, ", \"tree\": ");
            json_tree(out, &p, 0, 0);
        }
        fprintf(out, "}\n");
    } else {
        if (o.flat) {
            fprintf(out, "CPU flat profile: %llu samples\n", (unsigned long long)p.total);
            fprintf(out, "%8s %7s %8s %7s  %-40s %-32s %s\n", "SELF", "SELF%", "TOTAL", "TOTAL%", "FUNCTION", "LOCATION",
                    "MODULE");
            for (size_t i = 0; i < p.n_flat && i < o.max_rows; i++) {
                const cp_flat *f = &p.flat[i];
                if (!f->self && i >= 10) break;
                const char *loc = f->best_loc != UINT32_MAX ? CP_STR(&p, f->best_loc) : "-";
                const char *mod = f->module != UINT32_MAX ? CP_STR(&p, f->module) : "-";
                fprintf(out, "%8llu %6.2f%% %8llu %6.2f%%  %-40s %-32s %s\n", (unsigned long long)f->self,
                        100.0 * (double)f->self / tot, (unsigned long long)f->total, 100.0 * (double)f->total / tot,
                        CP_STR(&p, f->name), loc, mod);
            }
        }
        if (o.tree) {
            fprintf(out, "%sCPU call tree: %llu samples (nodes below %.2f%% left out)\n", o.flat ? "\n" : "",
                    (unsigned long long)p.total, o.min_percent);
            fprintf(out, "%8s %7s %8s %7s  %s\n", "TOTAL", "TOTAL%", "SELF", "SELF%", "FUNCTION");
            text_tree(out, &p, 0, 0, o.min_percent);
        }
    }
    rc = ferror(out) ? 1 : 0;
    if (rc && err && errlen) snprintf(err, errlen, "writing the CPU profile failed: %s", strerror(errno));
    cp_profile_free(&p);
    return rc;
}
