/* convert.c — the conversion driver: op_output_open / write / close and op_output_convert
 * (which also writes the folded CPU stacks of OP_OUT_FMT_FOLDED through folded.c).
 *
 * State machine of a stream (one sink):
 *
 *     OPEN ──▶ [input i opened] ──▶ [set k: begin_set] ──▶ [kind e: reader open] ──▶ rows ...
 *                    ▲                      ▲                        │ reader done
 *                    │                      └──── next kind / next set (end_set) ◀──┘
 *                    └──── next input (the previous one is closed first) ◀── last set
 *     ... after the last input: DONE (finish called by op_output_close).
 *
 * Invariant (1) of output.h holds because exactly one input is open at a time, one statement
 * is stepped at a time, and a sink keeps only dictionaries. op_output_write() returns after
 * max_events rows so that a caller (the Python package, a progress bar) can interleave. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/settings.h"
#include "output/profile_cpu.h"
#include "output/sink.h"

struct op_out_stream {
    op_sink *sink;
    char **inputs;
    size_t n_inputs;
    op_win win;
    size_t i_input;
    op_src *src;
    size_t i_set;
    int in_set;
    int kind;
    op_rd rd;
    int rd_open;
    uint32_t set_counter;
    unsigned kinds; /* bit per EV_* kind to convert */
    uint64_t events;
    int done, failed;
    op_progress prog;
};

/* ---- helpers shared by the sinks ----------------------------------------------------------- */

int64_t op_pidmap_assign(op_pidmap *m, int64_t pid) {
    uint64_t n = 0;
    op_u64map_get(&m->used, (uint64_t)pid + 1, &n);
    op_u64map_put(&m->used, (uint64_t)pid + 1, n + 1);
    return n ? pid + 1000000 * (int64_t)n : pid;
}

int op_category_is_marker(const unsigned char *s, int len) {
    if (!s) return 0;
    for (int i = 0; i + 6 <= len; i++)
        if (!strncasecmp((const char *)s + i, "MARKER", 6) || !strncasecmp((const char *)s + i, "NVTX", 4)) return 1;
    return 0;
}

void op_domain_file(const char *category, char *buf, size_t n) {
    char low[200];
    size_t j = 0;
    for (const char *p = category; *p && j + 1 < sizeof low; p++) {
        char ch = *p;
        if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
        else if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))) ch = '_';
        low[j++] = ch;
    }
    low[j] = 0;
    if (j > 4 && !strcmp(low + j - 4, "_ext")) low[j - 4] = 0;
    if (op_category_is_marker((const unsigned char *)category, (int)strlen(category)))
        snprintf(buf, n, "marker_api");
    else if (!strncmp(low, "hip_", 4))
        snprintf(buf, n, "hip_api");
    else if (!strncmp(low, "hsa_", 4))
        snprintf(buf, n, "hsa_api");
    else
        snprintf(buf, n, "%s", low);
}

/* ---- stream ---------------------------------------------------------------------------------- */

static void free_inputs(op_out_stream *s) {
    for (size_t i = 0; i < s->n_inputs; i++) free(s->inputs[i]);
    free(s->inputs);
}

/* Opens a stream. pf_path != NULL: a Perfetto part (see op_sink_pftrace_part); win != NULL:
 * an already resolved window (the inputs were validated by the caller). */
static op_out_stream *open_stream(const op_out_options *opts, unsigned kinds, const char *pf_path, uint32_t seq_base,
                                  int threads_desc, const op_win *win, int *status, char *err, size_t errlen) {
    int dummy;
    if (!status) status = &dummy;
    *status = OP_OUT_EINPUT;
    if (!opts || !opts->inputs || opts->n_inputs == 0) {
        op_seterr(err, errlen, "no input database given (-i DB...)");
        return NULL;
    }
    unsigned f = opts->formats & (OP_OUT_FMT_PFTRACE | OP_OUT_FMT_JSON | OP_OUT_FMT_CSV);
    if (f == 0 || (f & (f - 1))) {
        op_seterr(err, errlen, "op_output_open takes exactly one of pftrace, json, csv");
        return NULL;
    }
    op_out_stream *s = calloc(1, sizeof(*s));
    if (!s) {
        *status = OP_OUT_EFAIL;
        return NULL;
    }
    s->kinds = kinds;
    if (win) {
        s->win = *win;
    } else {
        /* Validate every input first: a bad one is reported before any file is written. */
        for (size_t i = 0; i < opts->n_inputs; i++) {
            op_src *src;
            int rc = op_src_open(opts->inputs[i], &src, err, errlen);
            if (rc) {
                *status = rc;
                free(s);
                return NULL;
            }
            op_src_close(src);
        }
        int rc = op_win_resolve(opts->size >= offsetof(op_out_options, window) + sizeof(op_out_window) ? &opts->window : NULL,
                                opts->inputs, opts->n_inputs, &s->win, err, errlen);
        if (rc) {
            *status = rc;
            free(s);
            return NULL;
        }
    }
    s->inputs = calloc(opts->n_inputs, sizeof(char *));
    s->n_inputs = opts->n_inputs;
    for (size_t i = 0; s->inputs && i < opts->n_inputs; i++) s->inputs[i] = strdup(opts->inputs[i]);
    const char *dir = opts->out_dir && *opts->out_dir ? opts->out_dir : ".";
    const char *name = opts->out_name ? opts->out_name : "out";
    if (op_mkdirs(dir) != 0) {
        op_seterr(err, errlen, "%s: cannot create the output directory", dir);
        *status = OP_OUT_EFAIL;
        free_inputs(s);
        free(s);
        return NULL;
    }
    if (pf_path) s->sink = op_sink_pftrace_part(pf_path, seq_base, threads_desc, err, errlen);
    else if (f == OP_OUT_FMT_PFTRACE) s->sink = op_sink_pftrace(dir, name, err, errlen);
    else if (f == OP_OUT_FMT_JSON) s->sink = op_sink_json(dir, name, err, errlen);
    else s->sink = op_sink_csv(dir, name, err, errlen);
    if (!s->sink) {
        *status = OP_OUT_EFAIL;
        free_inputs(s);
        free(s);
        return NULL;
    }
    op_progress_init(&s->prog, opts->progress, s->sink->name, 0);
    *status = OP_OUT_OK;
    return s;
}

op_out_stream *op_output_open(const op_out_options *opts, int *status, char *err, size_t errlen) {
    return open_stream(opts, (1u << EV_KINDS) - 1, NULL, 0, 1, NULL, status, err, errlen);
}

static void close_input(op_out_stream *s, char *err, size_t errlen) {
    if (s->rd_open) op_rd_close(&s->rd);
    s->rd_open = 0;
    if (s->in_set) s->sink->end_set(s->sink, err, errlen);
    s->in_set = 0;
    op_src_close(s->src);
    s->src = NULL;
}

int op_output_write(op_out_stream *s, uint64_t max_events, char *err, size_t errlen) {
    if (!s) return -OP_OUT_EINPUT;
    if (s->failed) return -OP_OUT_EFAIL;
    uint64_t n = 0;
    while (!s->done) {
        if (!s->src) {
            if (s->i_input == s->n_inputs) {
                s->done = 1;
                break;
            }
            int rc = op_src_open(s->inputs[s->i_input], &s->src, err, errlen);
            if (rc) {
                s->failed = 1;
                return -rc;
            }
            s->i_set = 0;
            s->in_set = 0;
        }
        if (s->i_set == s->src->n_sets) {
            close_input(s, err, errlen);
            s->i_input++;
            continue;
        }
        op_src_set *set = &s->src->sets[s->i_set];
        if (!s->in_set) {
            int rc = s->sink->begin_set(s->sink, s->src, set, s->set_counter++, err, errlen);
            if (rc) {
                s->failed = 1;
                return -rc;
            }
            s->in_set = 1;
            s->kind = 0;
        }
        if (!s->rd_open) {
            while (s->kind < EV_KINDS && !((s->kinds >> s->kind) & 1)) s->kind++;
            if (s->kind == EV_KINDS) {
                s->sink->end_set(s->sink, err, errlen);
                s->in_set = 0;
                s->i_set++;
                continue;
            }
            int rc = op_rd_open(&s->rd, s->src, set, s->kind, &s->win, (s->sink->text >> s->kind) & 1, err, errlen);
            if (rc < 0) {
                s->failed = 1;
                return rc;
            }
            if (rc == 1) {
                s->kind++;
                continue;
            }
            s->rd_open = 1;
        }
        op_ev ev;
        int r;
        while ((r = op_rd_next(&s->rd, &ev, err, errlen)) == 1) {
            int rc = s->sink->event(s->sink, &ev, err, errlen);
            if (rc) {
                s->failed = 1;
                return -rc;
            }
            s->events++;
            if ((++n & 4095) == 0) op_progress_tick(&s->prog, 4096);
            if (max_events && n >= max_events) return 1;
        }
        if (r < 0) {
            s->failed = 1;
            return r;
        }
        op_rd_close(&s->rd);
        s->rd_open = 0;
        if (op_setting_bool(OP_SET_OUTPUT_TIMING)) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            fprintf(stderr, "omniprof: %s kind %s done at %.3f s, %llu events\n", s->sink->name, op_ev_kind_name[s->kind],
                    (double)ts.tv_sec + ts.tv_nsec * 1e-9, (unsigned long long)s->events);
        }
        s->kind++;
    }
    return 0;
}

uint64_t op_output_events(const op_out_stream *s) { return s ? s->events : 0; }

int op_output_close(op_out_stream *s, char *err, size_t errlen) {
    if (!s) return 0;
    char e2[8];
    if (s->src) close_input(s, e2, sizeof e2);
    int rc = s->sink->finish(s->sink, s->done && !s->failed, err, errlen);
    s->prog.done = s->events;
    if (s->done) op_progress_done(&s->prog);
    free_inputs(s);
    free(s);
    return rc;
}

/* ---- Perfetto in two threads ----------------------------------------------------------------
 * A Perfetto trace is a concatenation of packets, and packets of different sequences are
 * independent; so host events (regions, samples: thread A) and device/counter events (kernels,
 * copies, allocations, counters, metrics: thread B, sequence ids offset by 2^20) are written by
 * two threads with their own SQLite connections into two files, and B's file is appended to
 * A's at the end (copy_file_range: no copy through user space). Track uuids and flow ids are
 * the same functions of (process, row) in both, so flows still join API calls to kernels.
 * OMNIPROF_OUTPUT_THREADS=1 (settings.def) turns this off. */

static int parallel_ok(void) {
    if (op_setting_uint(OP_SET_OUTPUT_THREADS) == 1) return 0;
    return sysconf(_SC_NPROCESSORS_ONLN) > 1;
}

typedef struct part_job {
    op_out_stream *s;
    int rc;
    char err[512];
    uint64_t events;
} part_job;

static void *part_main(void *arg) {
    part_job *j = arg;
    int r = op_output_write(j->s, 0, j->err, sizeof j->err);
    j->events = op_output_events(j->s);
    int rc = op_output_close(j->s, r < 0 ? NULL : j->err, sizeof j->err);
    j->rc = r < 0 ? -r : rc;
    return NULL;
}

static int append_file(const char *dst, const char *src) {
    int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_APPEND);
    int rc = (in < 0 || out < 0) ? -1 : 0;
    struct stat st;
    if (!rc && fstat(in, &st) != 0) rc = -1;
    off_t left = rc ? 0 : st.st_size;
    while (!rc && left > 0) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
        if (n <= 0) { /* fall back to read/write */
            char buf[1 << 16];
            ssize_t r = read(in, buf, sizeof buf);
            if (r <= 0 || write(out, buf, (size_t)r) != r) rc = -1;
            else left -= r;
            continue;
        }
        left -= n;
    }
    if (in >= 0) close(in);
    if (out >= 0 && close(out) != 0) rc = -1;
    return rc;
}

static int convert_pftrace_parallel(const op_out_options *o, char *err, size_t errlen) {
    int status;
    /* validate and resolve the window once */
    for (size_t i = 0; i < o->n_inputs; i++) {
        op_src *src;
        int rc = op_src_open(o->inputs[i], &src, err, errlen);
        if (rc) return rc;
        op_src_close(src);
    }
    op_win win;
    int rc = op_win_resolve(&o->window, o->inputs, o->n_inputs, &win, err, errlen);
    if (rc) return rc;
    const char *dir = o->out_dir && *o->out_dir ? o->out_dir : ".";
    if (op_mkdirs(dir) != 0) {
        op_seterr(err, errlen, "%s: cannot create the output directory", dir);
        return OP_OUT_EFAIL;
    }
    char *path = op_out_path(dir, o->out_name ? o->out_name : "out", "results.pftrace");
    char *part = path ? malloc(strlen(path) + 32) : NULL;
    if (!part) {
        free(path);
        return OP_OUT_EFAIL;
    }
    sprintf(part, "%s.part%ld", path, (long)getpid());
    unsigned host = (1u << EV_REGION) | (1u << EV_SAMPLE);
    unsigned dev = ((1u << EV_KINDS) - 1) & ~host;
    op_out_stream *a = open_stream(o, host, path, 0, 1, &win, &status, err, errlen);
    if (!a) {
        free(path);
        free(part);
        return status;
    }
    part_job jb = {0};
    op_out_options ob = *o;
    ob.progress = 0; /* one progress line: thread A's */
    jb.s = open_stream(&ob, dev, part, 1u << 20, 0, &win, &status, err, errlen);
    if (!jb.s) {
        op_output_close(a, NULL, 0);
        free(path);
        free(part);
        return status;
    }
    pthread_t th;
    int threaded = pthread_create(&th, NULL, part_main, &jb) == 0;
    if (!threaded) part_main(&jb);
    int r = op_output_write(a, 0, err, errlen);
    uint64_t events = op_output_events(a);
    rc = op_output_close(a, r < 0 ? NULL : err, errlen);
    if (r < 0) rc = -r;
    if (threaded) pthread_join(th, NULL);
    if (!rc && jb.rc) {
        rc = jb.rc;
        op_seterr(err, errlen, "%s", jb.err);
    }
    if (!rc && append_file(path, part) != 0) {
        op_seterr(err, errlen, "%s: write failed: %s", path, strerror(errno));
        rc = OP_OUT_EFAIL;
    }
    unlink(part);
    if (op_setting_bool(OP_SET_OUTPUT_TIMING))
        fprintf(stderr, "omniprof: pftrace: %llu host + %llu device events\n", (unsigned long long)events,
                (unsigned long long)jb.events);
    free(path);
    free(part);
    return rc;
}

/* <dir>/<name>_folded.txt: folded CPU call stacks of the samples inside the window
 * (profile_cpu.h). Inputs are validated like the other formats'; inputs without CPU samples
 * give an empty file. */
static int convert_folded(const op_out_options *opts, char *err, size_t errlen) {
    if (!opts->inputs || opts->n_inputs == 0) {
        op_seterr(err, errlen, "no input database given (-i DB...)");
        return OP_OUT_EINPUT;
    }
    for (size_t i = 0; i < opts->n_inputs; i++) {
        op_src *src;
        int rc = op_src_open(opts->inputs[i], &src, err, errlen);
        if (rc) return rc;
        op_src_close(src);
    }
    op_win w;
    int rc = op_win_resolve(opts->size >= offsetof(op_out_options, window) + sizeof(op_out_window) ? &opts->window : NULL,
                            opts->inputs, opts->n_inputs, &w, err, errlen);
    if (rc) return rc;
    const char *dir = opts->out_dir && *opts->out_dir ? opts->out_dir : ".";
    const char *name = opts->out_name ? opts->out_name : "out";
    if (op_mkdirs(dir) != 0) {
        op_seterr(err, errlen, "%s: cannot create the output directory", dir);
        return OP_OUT_EFAIL;
    }
    size_t n = strlen(dir) + strlen(name) + 32;
    char *path = malloc(n);
    if (!path) return OP_OUT_EFAIL;
    snprintf(path, n, "%s/%s_folded.txt", dir, name);
    int64_t win[2] = {w.t0, w.t1};
    rc = cp_folded_write_file_window(opts->inputs, opts->n_inputs, path, w.active ? win : NULL, err, errlen);
    free(path);
    return rc;
}

int op_output_convert(const op_out_options *opts, char *err, size_t errlen) {
    if (!opts) {
        op_seterr(err, errlen, "no options");
        return OP_OUT_EINPUT;
    }
    static const unsigned fmts[] = {OP_OUT_FMT_PFTRACE, OP_OUT_FMT_JSON, OP_OUT_FMT_CSV};
    if (!(opts->formats & (OP_OUT_FMT_PFTRACE | OP_OUT_FMT_JSON | OP_OUT_FMT_CSV | OP_OUT_FMT_STATS | OP_OUT_FMT_FOLDED))) {
        op_seterr(err, errlen, "no output format: expected pftrace, json, csv, folded (or stats)");
        return OP_OUT_EINPUT;
    }
    int vrc = op_out_inputs_distinct(opts->inputs, opts->n_inputs, err, errlen);
    if (vrc) return vrc;
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        if (!(opts->formats & fmts[i])) continue;
        op_out_options o = *opts;
        o.formats = fmts[i];
        if (fmts[i] == OP_OUT_FMT_PFTRACE && parallel_ok()) {
            int rc = convert_pftrace_parallel(&o, err, errlen);
            if (rc) return rc;
            continue;
        }
        int status;
        op_out_stream *s = op_output_open(&o, &status, err, errlen);
        if (!s) return status;
        int r = op_output_write(s, 0, err, errlen);
        int rc = op_output_close(s, r < 0 ? NULL : err, errlen);
        if (r < 0) return -r;
        if (rc) return rc;
    }
    if (opts->formats & OP_OUT_FMT_FOLDED) {
        int rc = convert_folded(opts, err, errlen);
        if (rc) return rc;
    }
    if (opts->formats & OP_OUT_FMT_STATS)
        return op_output_stats_csv(opts->inputs, opts->n_inputs, opts->out_dir, opts->out_name ? opts->out_name : "out",
                                   &opts->window, err, errlen);
    return 0;
}
