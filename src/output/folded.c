/* folded.c — folded stacks (`omniprof convert -f folded`): one line per distinct call path
 * with the samples whose stack ends there, `outer;...;inner COUNT`, the format flamegraph.pl's
 * stackcollapse scripts produce and flamegraph.pl and speedscope read. Built from the same
 * aggregated call tree as the CPU profiles (profile_cpu.c), so memory is the tree, never the
 * samples. Paths are written depth-first with children in name order, which sorts them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/internal.h"
#include "output/profile_cpu.h"

static void put_name(FILE *f, const char *s)
{
    for (; *s; s++) fputc(*s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s, f);
}


typedef struct walk {
    cp_profile *p;
    FILE *out;
    uint32_t *path;
    size_t cap;
} walk;

static int cmp_by_name(const void *a, const void *b, void *ctx)
{
    const cp_profile *p = ctx; /* qsort_r's context: no shared state between threads */
    return strcmp(CP_STR(p, p->nodes[*(const uint32_t *)a].name), CP_STR(p, p->nodes[*(const uint32_t *)b].name));
}

static void fold(walk *w, uint32_t id, size_t depth)
{
    cp_profile *p = w->p;
    if (id != 0) {
        if (depth > w->cap) return; /* deeper than any real stack: cut (cannot happen for 128 frames x 8) */
        w->path[depth - 1] = id;
        if (p->nodes[id].self) {
            for (size_t i = 0; i < depth; i++) {
                if (i) fputc(';', w->out);
                put_name(w->out, CP_STR(p, p->nodes[w->path[i]].name));
            }
            fprintf(w->out, " %llu\n", (unsigned long long)p->nodes[id].self);
        }
    }
    size_t n;
    uint32_t *kids = cp_sorted_children(p, id, &n);
    if (n) qsort_r(kids, n, sizeof *kids, cmp_by_name, p);
    for (size_t i = 0; i < n; i++) fold(w, kids[i], depth + 1);
    free(kids);
}

int cp_folded_write_window(const char *const *inputs, size_t n_inputs, FILE *out, const int64_t *window, char *err,
                        size_t errlen)
{
    return cp_folded_write_weighted(inputs, n_inputs, out, window, NULL, err, errlen);
}

/* With weight, each line's count is that counter's count in the path (profile_cpu.h). */
int cp_folded_write_weighted(const char *const *inputs, size_t n_inputs, FILE *out,
                             const int64_t *window, const char *weight, char *err, size_t errlen)
{
    if (!out || (!inputs && n_inputs)) {
        if (err && errlen) snprintf(err, errlen, "op_cpu_folded_write: NULL output or inputs");
        return 2;
    }
    cp_profile p;
    int rc = cp_profile_build_weighted(&p, inputs, n_inputs, NULL, weight, 0, window, err, errlen);
    if (rc == 0) {
        walk w = {&p, out, NULL, 2048};
        w.path = malloc(w.cap * sizeof *w.path);
        if (!w.path) rc = 1;
        else fold(&w, 0, 0);
        free(w.path);
        if (ferror(out)) {
            rc = 1;
            if (err && errlen) snprintf(err, errlen, "writing folded stacks failed: %s", strerror(errno));
        }
    }
    cp_profile_free(&p);
    return rc;
}

OMNIPROF_API int op_cpu_folded_write(const char *const *inputs, size_t n_inputs, FILE *out, char *err,
                                     size_t errlen)
{
    return cp_folded_write_window(inputs, n_inputs, out, NULL, err, errlen);
}

OMNIPROF_API int op_cpu_folded_write_file(const char *const *inputs, size_t n_inputs, const char *path, char *err,
                                          size_t errlen)
{
    if (!path) {
        op_seterr(err, errlen, "op_cpu_folded_write_file: NULL path");
        return OP_OUT_EINPUT;
    }
    op_out_inputs in;
    op_outfile of = {0};
    int rc = op_out_inputs_begin(&in, inputs, n_inputs, err, errlen);
    if (!rc) rc = op_outfile_open_path(&of, path, &in.ids, err, errlen);
    if (!rc) rc = cp_folded_write_window(in.v, in.n, of.f, NULL, err, errlen);
    int crc = op_outfile_close(&of, rc == 0, err, errlen);
    op_out_inputs_end(&in);
    return rc ? rc : crc;
}
