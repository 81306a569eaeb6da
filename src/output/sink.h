/* sink.h — the interface between the conversion driver (convert.c) and one output format
 * (pftrace.c, json.c, csv.c). The driver walks inputs → sets → event kinds → rows and calls the
 * sink; a sink keeps only per-set dictionaries (seen names, tracks), never events. */
#ifndef OMNIPROF_OUTPUT_SINK_H
#define OMNIPROF_OUTPUT_SINK_H

#include "output/internal.h"

typedef struct op_sink op_sink;
struct op_sink {
    const char *name;
    int text; /* the sink wants names joined in (reader text mode) for these kinds (bit per kind) */
    int flows; /* ... and op_ev.flow (OP_RD_FLOWS) for these kinds */
    /* Called once per set before its events (src stays open until end_set). */
    int (*begin_set)(op_sink *k, op_src *src, op_src_set *set, uint32_t set_index, char *err, size_t errlen);
    int (*event)(op_sink *k, const op_ev *ev, char *err, size_t errlen);
    int (*end_set)(op_sink *k, char *err, size_t errlen);
    /* Writes what is pending (ok) and frees the sink (called once, even after an error: ok = 0).
     * A sink given a FILE flushes it but leaves closing it to its owner (convert.c). */
    int (*finish)(op_sink *k, int ok, char *err, size_t errlen);
};

/* Constructors; `path` names the file in messages. NULL when out of memory. */
/* A Perfetto writer into f: sequence ids start at seq_base + 1; threads_desc 1 writes the
 * process and thread descriptors, 0 none (the part that has them does: files of parts
 * concatenate, and every part names tracks and flows by the same functions of the set). */
op_sink *op_sink_pftrace(FILE *f, const char *path, uint32_t seq_base, int threads_desc);
op_sink *op_sink_json(FILE *f, const char *path);
/* CSV files <dir>/<name>_<file>, each opened when its first row comes (outfile.c rules; ids:
 * the inputs, which no output may be). */
/* agent_index: OP_OUT_AGENT_* (how "Agent N" is numbered). */
op_sink *op_sink_csv(const char *dir, const char *name, const op_out_ids *ids, int agent_index);

/* Makes process ids unique across sets: the OS pid unless another set already used it, then
 * pid + 1000000 * k (documented in docs/output.md). */
typedef struct op_pidmap {
    op_u64map used; /* pid -> times used */
} op_pidmap;
int64_t op_pidmap_assign(op_pidmap *m, int64_t pid);

/* File domain of a region category, e.g. "CUDA_RUNTIME_API" -> "cuda_runtime_api",
 * "MARKER_CORE_API" -> "marker_api", "HIP_RUNTIME_API_EXT" -> "hip_api". Into buf. */
void op_domain_file(const char *category, char *buf, size_t n);
int op_category_is_marker(const unsigned char *category, int len);

#endif /* OMNIPROF_OUTPUT_SINK_H */
