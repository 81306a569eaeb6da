/* inputs.c — the one check of the inputs of convert, merge, summary and query
 * (op_out_inputs_begin, internal.h): databases open as rocpd databases or are refused naming
 * the reason; an input holding no rocpd tables is skipped with one warning (what a process
 * stopped before its schema was written leaves, e.g. one MPI rank killed at start, must not
 * block the others); a process found in two inputs is refused. `--strict` (cli.c) refuses the
 * empty inputs too, before this runs. */
#include <stdlib.h>
#include <string.h>

#include "output/internal.h"

/* Guids already seen (merge and query refuse one process given twice: its (id, guid) pairs
 * would pair with each other's rows in the views). */
typedef struct op_guid_set {
    op_u64map hashes;     /* hash of guid -> index + 1 into names */
    char **names;         /* "guid\0path" */
    size_t n;
} op_guid_set;

/* Returns 0 when new (and records it), 1 when seen (err says where). Empty guids are never
 * equal. */
static int guid_seen(op_guid_set *g, const char *guid, const char *path, char *err, size_t errlen) {
    if (!guid || !*guid) return 0;
    uint64_t h = op_hash_bytes(guid, strlen(guid));
    uint64_t v;
    if (op_u64map_get(&g->hashes, h, &v) && !strcmp(g->names[v - 1], guid)) {
        const char *other = g->names[v - 1] + strlen(guid) + 1;
        op_seterr(err, errlen, "%s: process %s is also in %s: the same database given twice?", path,
                  guid, other);
        return 1;
    }
    char **n = realloc(g->names, (g->n + 1) * sizeof(char *));
    if (!n) return 0;
    g->names = n;
    size_t lg = strlen(guid), lp = strlen(path);
    char *e = malloc(lg + lp + 2);
    if (!e) return 0;
    memcpy(e, guid, lg + 1);
    memcpy(e + lg + 1, path, lp + 1);
    g->names[g->n++] = e;
    op_u64map_put(&g->hashes, h, g->n);
    return 0;
}

static void guid_seen_free(op_guid_set *g) {
    for (size_t i = 0; i < g->n; i++) free(g->names[i]);
    free(g->names);
    op_u64map_free(&g->hashes);
    memset(g, 0, sizeof(*g));
}

int op_out_inputs_begin(op_out_inputs *in, const char *const *inputs, size_t n, char *err, size_t errlen) {
    memset(in, 0, sizeof *in);
    if (!inputs || n == 0) {
        op_seterr(err, errlen, "no input database given (-i DB...)");
        return OP_OUT_EINPUT;
    }
    if (!(in->v = calloc(n, sizeof *in->v))) return OP_OUT_EFAIL;
    op_guid_set seen = {0};
    const char **skipped = calloc(n, sizeof *skipped);
    size_t n_skipped = 0;
    char why[1024] = ""; /* the first skipped input's reason */
    int rc = skipped ? 0 : OP_OUT_EFAIL;
    for (size_t i = 0; i < n && !rc; i++) {
        if (op_out_ids_add(&in->ids, inputs[i])) rc = OP_OUT_EFAIL;
        for (size_t j = 0; !rc && in->ids.n && j + 1 < in->ids.n; j++) {
            const op_out_id *a = &in->ids.v[j], *b = &in->ids.v[in->ids.n - 1];
            if (b->path == inputs[i] && a->dev == b->dev && a->ino == b->ino) {
                op_seterr(err, errlen, "%s: the same database as %s, given twice (every row would count twice)",
                          inputs[i], a->path);
                rc = OP_OUT_EINPUT;
            }
        }
        op_src *s;
        if (rc || (rc = op_src_open(inputs[i], &s, err, errlen)) != 0) {
            if (rc == OP_OUT_EINPUT && op_src_lacks_tables(inputs[i])) {
                if (!n_skipped) snprintf(why, sizeof why, "%s", err ? err : "");
                skipped[n_skipped++] = inputs[i];
                rc = 0;
            }
            continue;
        }
        for (size_t k = 0; k < s->n_sets && !rc; k++) {
            size_t before = in->clocks.n;
            if (op_clock_plan_add(&in->clocks, in->n, k, s, &s->sets[k], err, errlen)) rc = OP_OUT_EINPUT;
            /* a merged input holds many processes in one set: each one's guid counts */
            for (size_t p = before; !rc && p < in->clocks.n; p++)
                if (guid_seen(&seen, op_clock_plan_guid(&in->clocks, p), inputs[i], err, errlen)) rc = OP_OUT_EINPUT;
            if (!rc && before == in->clocks.n && guid_seen(&seen, s->sets[k].guid, inputs[i], err, errlen))
                rc = OP_OUT_EINPUT;
        }
        op_src_close(s);
        in->v[in->n++] = inputs[i];
    }
    guid_seen_free(&seen);
    if (!rc) op_clock_plan_finish(&in->clocks);
    if (!rc && in->n == 0) { /* nothing left: the first one's own error */
        if (why[0]) op_seterr(err, errlen, "%s", why);
        else op_seterr(err, errlen, "%s: holds no rocpd tables", inputs[0]);
        rc = OP_OUT_EINPUT;
    }
    for (size_t i = 0; !rc && i < n_skipped; i++)
        fprintf(stderr, "omniprof: warning: %s holds no rocpd tables (a process stopped before its database was "
                        "written?); skipped (--strict refuses it)\n", skipped[i]);
    free(skipped);
    return rc;
}

void op_out_inputs_end(op_out_inputs *in) {
    free(in->v);
    op_clock_plan_free(&in->clocks);
    op_out_ids_free(&in->ids);
    memset(in, 0, sizeof *in);
}

int op_out_each_set(const char *const *inputs, size_t n,
                    int (*fn)(op_src *src, op_src_set *set, size_t input, void *arg, char *err, size_t errlen),
                    void *arg, char *err, size_t errlen) {
    for (size_t i = 0; i < n; i++) {
        op_src *src;
        int rc = op_src_open(inputs[i], &src, err, errlen);
        for (size_t k = 0; !rc && k < src->n_sets; k++) rc = fn(src, &src->sets[k], i, arg, err, errlen);
        op_src_close(src);
        if (rc) return rc;
    }
    return 0;
}
