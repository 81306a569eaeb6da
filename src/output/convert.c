/* convert.c — the conversion driver: op_output_open / write / close and op_output_convert
 * (which also writes the folded CPU stacks of OP_OUT_FMT_FOLDED through folded.c and the flame
 * graph SVG of OP_OUT_FMT_SVG through report_flame.c).
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
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/settings.h"
#include "output/profile_cpu.h"
#include "output/report.h"
#include "output/sink.h"

struct op_out_stream {
    op_sink *sink;
    op_outfile of;  /* pftrace and json: the file (a Perfetto part writes into its caller's) */
    op_out_ids ids; /* identities of the inputs: no output may be one of them */
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
    uint64_t untimed; /* GPU operations CUPTI gave no start (0): left out of the timelines */
    int done, failed;
    op_progress prog;
    const op_clock_plan *clocks; /* the inputs' clock plan (clocks.c): times onto one clock */
    op_clock_plan own_clocks;    /* the plan, when the stream outlives the checked inputs */
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

static void free_stream(op_out_stream *s) {
    op_clock_plan_free(&s->own_clocks);
    for (size_t i = 0; i < s->n_inputs; i++) free(s->inputs[i]);
    free(s->inputs);
    op_out_ids_free(&s->ids);
    free(s);
}

/* What a stream reads: the inputs already checked (op_out_inputs_begin) and the window
 * resolved over them. */
typedef struct stream_in {
    const op_out_inputs *in;
    const op_win *win;
} stream_in;

/* Copies the checked inputs and their identities into the stream. */
static int keep_inputs(op_out_stream *s, const op_out_inputs *in) {
    if (!(s->inputs = calloc(in->n, sizeof(char *)))) return -1;
    for (size_t i = 0; i < in->n; i++)
        if (!(s->inputs[s->n_inputs++] = strdup(in->v[i]))) return -1;
    for (size_t i = 0; i < in->ids.n; i++)
        if (op_out_ids_add(&s->ids, in->ids.v[i].path)) return -1;
    s->clocks = &in->clocks;
    return 0;
}

/* The sink of one format; part_f != NULL: a Perfetto part written into part_f (see
 * op_sink_pftrace). */
static int make_sink(op_out_stream *s, unsigned f, const char *dir, const char *name, int agent_index, FILE *part_f,
                     const char *part_path, uint32_t seq_base, int threads_desc, char *err, size_t errlen) {
    if (part_f) {
        s->sink = op_sink_pftrace(part_f, part_path, seq_base, threads_desc);
    } else if (f == OP_OUT_FMT_CSV) {
        s->sink = op_sink_csv(dir, name, &s->ids, agent_index);
    } else {
        int rc = op_outfile_open_derived(&s->of, dir, name, f == OP_OUT_FMT_PFTRACE ? "results.pftrace" : "results.json",
                                         &s->ids, err, errlen);
        if (rc) return rc;
        s->sink = f == OP_OUT_FMT_PFTRACE ? op_sink_pftrace(s->of.f, s->of.final, seq_base, threads_desc)
                                          : op_sink_json(s->of.f, s->of.final);
    }
    if (!s->sink) {
        op_seterr(err, errlen, "out of memory");
        op_outfile_close(&s->of, 0, NULL, 0);
        return OP_OUT_EFAIL;
    }
    return 0;
}

/* The rows a stream of `kinds` will read from the inputs, within the window: the progress line's
 * total (counted only when the line is shown; a count is one pass over each table's index). */
static uint64_t count_rows(const stream_in *si, unsigned kinds) {
    uint64_t total = 0;
    char e[256];
    for (size_t i = 0; i < si->in->n; i++) {
        op_src *src = NULL;
        if (op_src_open(si->in->v[i], &src, e, sizeof e)) continue;
        for (size_t k = 0; k < src->n_sets; k++)
            for (int kind = 0; kind < EV_KINDS; kind++) {
                if (!((kinds >> kind) & 1)) continue;
                int64_t n = op_rd_count(src, &src->sets[k], kind, si->win);
                if (n > 0) total += (uint64_t)n;
            }
        op_src_close(src);
    }
    return total;
}

/* Opens a stream over inputs that `si` says are checked. */
static op_out_stream *open_stream(const op_out_options *opts, unsigned kinds, const stream_in *si, FILE *part_f,
                                  const char *part_path, uint32_t seq_base, int threads_desc, int *status, char *err,
                                  size_t errlen) {
    unsigned f = opts->formats & (OP_OUT_FMT_PFTRACE | OP_OUT_FMT_JSON | OP_OUT_FMT_CSV);
    if (f == 0 || (f & (f - 1))) {
        *status = OP_OUT_EINPUT;
        op_seterr(err, errlen, "op_output_open takes exactly one of pftrace, json, csv");
        return NULL;
    }
    op_out_stream *s = calloc(1, sizeof(*s));
    *status = OP_OUT_EFAIL;
    if (!s) return NULL;
    s->kinds = kinds;
    s->win = *si->win;
    const char *dir = opts->out_dir && *opts->out_dir ? opts->out_dir : ".";
    const char *name = opts->out_name ? opts->out_name : "out";
    if (keep_inputs(s, si->in)) {
        op_seterr(err, errlen, "out of memory");
        free_stream(s);
        return NULL;
    }
    if (op_mkdirs(dir) != 0) {
        op_seterr(err, errlen, "%s: cannot create the output directory: %s", dir, strerror(errno));
        free_stream(s);
        return NULL;
    }
    int agents = opts->size >= offsetof(op_out_options, agent_index) + sizeof(int) ? opts->agent_index : 0;
    if ((*status = make_sink(s, f, dir, name, agents, part_f, part_path, seq_base, threads_desc, err, errlen)) != 0) {
        free_stream(s);
        return NULL;
    }
    op_progress_init(&s->prog, opts->progress, s->sink->name, 0);
    if (s->prog.on) s->prog.total = count_rows(si, kinds);
    return s;
}

/* The window of the options resolved over the checked inputs. */
static int resolve_window(const op_out_options *opts, const op_out_inputs *in, op_win *w, char *err, size_t errlen) {
    const op_out_window *ow =
        opts->size >= offsetof(op_out_options, window) + sizeof(op_out_window) ? &opts->window : NULL;
    return op_win_resolve(ow, in->v, in->n, w, err, errlen);
}

op_out_stream *op_output_open(const op_out_options *opts, int *status, char *err, size_t errlen) {
    int dummy;
    if (!status) status = &dummy;
    *status = OP_OUT_EINPUT;
    if (!opts) {
        op_seterr(err, errlen, "no options");
        return NULL;
    }
    /* Every input is checked first: a bad one is reported before any file is written. */
    op_out_inputs in;
    op_win w;
    op_out_stream *s = NULL;
    if ((*status = op_out_inputs_begin(&in, opts->inputs, opts->n_inputs, err, errlen)) == 0 &&
        (*status = resolve_window(opts, &in, &w, err, errlen)) == 0) {
        stream_in si = {&in, &w};
        s = open_stream(opts, (1u << EV_KINDS) - 1, &si, NULL, NULL, 0, 1, status, err, errlen);
        if (s) { /* the stream outlives `in`: it takes the clock plan */
            s->own_clocks = in.clocks;
            memset(&in.clocks, 0, sizeof in.clocks);
            s->clocks = &s->own_clocks;
        }
    }
    op_out_inputs_end(&in);
    return s;
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
            int flags = (((s->sink->text >> s->kind) & 1) ? OP_RD_TEXT : 0) | (((s->sink->flows >> s->kind) & 1) ? OP_RD_FLOWS : 0);
            int rc = op_rd_open(&s->rd, s->src, set, s->kind, &s->win, flags, err, errlen);
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
            /* a kernel or copy without a start time (CUPTI gave 0; a few in a PyTorch warm-up)
             * has no place on a timeline: counted and said at the end, not drawn at time 0.
             * The CSV tables keep every row as recorded. */
            if ((ev.kind == EV_KERNEL || ev.kind == EV_COPY) && ev.start <= 0 &&
                strcmp(s->sink->name, "csv") != 0) {
                s->untimed++;
                continue;
            }
            if (s->clocks && s->clocks->any) { /* every process's times on the reference clock */
                const op_rd_clock_map *m = op_clock_plan_lookup(s->clocks, s->i_input, s->i_set, ev.process_row);
                if (m) ev.start = op_rd_clock_apply(m, ev.start), ev.end = op_rd_clock_apply(m, ev.end);
            }
            int rc = s->sink->event(s->sink, &ev, err, errlen);
            if (rc) {
                s->failed = 1;
                return -rc;
            }
            s->events++;
            if ((++n & 4095) == 0) {
                op_progress_tick(&s->prog, 4096);
                if (op_out_interrupted()) {
                    op_seterr(err, errlen, "interrupted");
                    s->failed = 1;
                    return -OP_OUT_EFAIL;
                }
            }
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

/* Finishes the sink (its pending bytes written); the stream's file stays open. */
static int finish_sink(op_out_stream *s, char *err, size_t errlen) {
    char e2[8];
    if (s->src) close_input(s, e2, sizeof e2);
    if (s->untimed)
        fprintf(stderr,
                "omniprof: %s: %llu GPU operation(s) without timestamps (CUPTI gave start 0) "
                "left out of the timeline\n",
                s->sink->name, (unsigned long long)s->untimed);
    int rc = s->sink->finish(s->sink, s->done && !s->failed, err, errlen);
    s->sink = NULL;
    s->prog.done = s->events;
    if (s->done) op_progress_done(&s->prog);
    return rc;
}

/* Closes the stream's file, published under its name when keep, and frees the stream. */
static int close_stream(op_out_stream *s, int keep, char *err, size_t errlen) {
    int rc = op_outfile_close(&s->of, keep && s->done && !s->failed, keep ? err : NULL, errlen);
    free_stream(s);
    return keep ? rc : 0;
}

int op_output_close(op_out_stream *s, char *err, size_t errlen) {
    if (!s) return 0;
    int rc = finish_sink(s, err, errlen);
    int crc = close_stream(s, rc == 0, err, errlen);
    return rc ? rc : crc;
}

/* ---- Perfetto in several threads ----------------------------------------------------------
 * A Perfetto trace is a concatenation of packets, and packets of different sequences are
 * independent; so the event kinds are dealt out to OMNIPROF_OUTPUT_THREADS parts in groups (at
 * most one part per group, k_part_groups: the biggest first, round robin; kernels and copies
 * share one group because they share the GPU stream tracks, whose descriptor one part writes).
 * Each part has
 * its own SQLite connection, its own sequences (ids offset by part << 20) and its own file;
 * part 0 writes into the output and describes the processes and threads, the others' files are
 * appended to it at the end (copy_file_range: no copy through user space). Track uuids and flow
 * ids are the same functions of (set, row) in every part, so flows join API calls to kernels
 * across parts and every track has one descriptor. OMNIPROF_OUTPUT_THREADS=1 is one thread. */

#define PART_GROUPS 6
static const unsigned k_part_groups[PART_GROUPS] = {1u << EV_REGION, (1u << EV_KERNEL) | (1u << EV_COPY),
                                                    1u << EV_SAMPLE, 1u << EV_ALLOC, 1u << EV_PMC,
                                                    (1u << EV_METRIC) | (1u << EV_PC) | (1u << EV_UM)};

static unsigned conversion_parts(void) {
    unsigned n = (unsigned)op_setting_uint(OP_SET_OUTPUT_THREADS);
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) return 1;
    return n < 1 ? 1 : n > PART_GROUPS ? PART_GROUPS : n;
}

typedef struct part_job {
    op_out_stream *s;
    op_outfile file;
    int rc, opened;
    char err[512];
    uint64_t events;
} part_job;

static void *part_main(void *arg) {
    part_job *j = arg;
    int r = op_output_write(j->s, 0, j->err, sizeof j->err);
    j->events = op_output_events(j->s);
    int rc = op_output_close(j->s, r < 0 ? NULL : j->err, sizeof j->err);
    j->s = NULL;
    j->rc = r < 0 ? -r : rc;
    return NULL;
}

static int append_file(const char *dst, const char *src) {
    int in = open(src, O_RDONLY | O_CLOEXEC), out = open(dst, O_WRONLY | O_CLOEXEC);
    int rc = (in < 0 || out < 0) ? -1 : 0;
    struct stat st;
    if (!rc && fstat(in, &st) != 0) rc = -1;
    off_t left = rc ? 0 : st.st_size;
    off_t at = rc ? 0 : lseek(out, 0, SEEK_END); /* not O_APPEND: copy_file_range refuses it */
    if (at < 0) rc = -1;
    while (!rc && left > 0) {
        ssize_t n = copy_file_range(in, NULL, out, &at, (size_t)left, 0);
        if (n <= 0) { /* fall back to read/write */
            char buf[1 << 16];
            ssize_t r = read(in, buf, sizeof buf);
            if (r <= 0 || pwrite(out, buf, (size_t)r, at) != r) rc = -1;
            else left -= r, at += r;
            continue;
        }
        left -= n;
    }
    if (in >= 0) close(in);
    if (out >= 0 && close(out) != 0) rc = -1;
    return rc;
}

/* Opens part k (k >= 1) of a conversion whose part 0 is `a`: its file beside a's output. */
static int open_part(part_job *j, unsigned k, unsigned kinds, const op_out_options *o, const stream_in *si,
                     op_out_stream *a, char *err, size_t errlen) {
    size_t pl = strlen(a->of.final) + 24;
    char *part_name = malloc(pl);
    if (!part_name) return OP_OUT_EFAIL;
    snprintf(part_name, pl, "%s.part%u", a->of.final, k);
    int rc = op_outfile_open(&j->file, part_name, strlen(part_name), &a->ids, err, errlen);
    free(part_name);
    if (rc) return rc;
    j->opened = 1;
    op_out_options ob = *o;
    ob.progress = 0; /* one progress line: part 0's */
    j->s = open_stream(&ob, kinds, si, j->file.f, a->of.final, k << 20, 0, &rc, err, errlen);
    return j->s ? 0 : rc;
}

/* The Perfetto trace in several threads (head comment of this section). */
static int convert_pftrace_parallel(const op_out_options *o, const stream_in *si, unsigned parts, char *err,
                                    size_t errlen) {
    unsigned kinds[PART_GROUPS] = {0};
    for (unsigned i = 0; i < PART_GROUPS; i++) kinds[i % parts] |= k_part_groups[i];
    int status;
    op_out_stream *a = open_stream(o, kinds[0], si, NULL, NULL, 0, 1, &status, err, errlen);
    if (!a) return status;
    part_job jobs[PART_GROUPS];
    pthread_t th[PART_GROUPS];
    int threaded[PART_GROUPS] = {0};
    memset(jobs, 0, sizeof jobs);
    int rc = 0;
    for (unsigned k = 1; k < parts && !rc; k++) rc = open_part(&jobs[k], k, kinds[k], o, si, a, err, errlen);
    for (unsigned k = 1; k < parts && !rc; k++) {
        threaded[k] = pthread_create(&th[k], NULL, part_main, &jobs[k]) == 0;
        if (!threaded[k]) part_main(&jobs[k]);
    }
    uint64_t events = 0;
    if (!rc) {
        int r = op_output_write(a, 0, err, errlen);
        events = op_output_events(a);
        rc = finish_sink(a, r < 0 ? NULL : err, errlen);
        if (r < 0) rc = -r;
    }
    for (unsigned k = 1; k < parts; k++) {
        if (threaded[k]) pthread_join(th[k], NULL);
        if (jobs[k].s) op_output_close(jobs[k].s, NULL, 0); /* opened, never run */
        if (!rc && jobs[k].rc) {
            rc = jobs[k].rc;
            op_seterr(err, errlen, "%s", jobs[k].err);
        }
        if (!rc && jobs[k].opened && (fflush(jobs[k].file.f) != 0 || fflush(a->of.f) != 0 ||
                                      append_file(a->of.tmp, jobs[k].file.tmp) != 0)) {
            op_seterr(err, errlen, "%s: write failed: %s", a->of.final, strerror(errno));
            rc = OP_OUT_EFAIL;
        }
        if (jobs[k].opened) op_outfile_close(&jobs[k].file, 0, NULL, 0);
        events += jobs[k].events;
    }
    if (rc && a->sink) finish_sink(a, NULL, 0);
    int crc = close_stream(a, rc == 0, err, errlen);
    if (op_setting_bool(OP_SET_OUTPUT_TIMING))
        fprintf(stderr, "omniprof: pftrace: %llu events in %u parts\n", (unsigned long long)events, parts);
    return rc ? rc : crc;
}

/* <dir>/<name>_<file> from the CPU call stacks of the samples inside the window: folded.txt
 * (profile_cpu.h) or flamegraph.svg (report_flame.c); inputs without CPU samples give an empty
 * file (folded) or a page saying so (svg). */
static int convert_stacks(const op_out_options *opts, const stream_in *si, const char *file,
                          int (*write)(const char *const *, size_t, FILE *, const int64_t *,
                                       const char *, char *, size_t),
                          char *err, size_t errlen)
{
    const char *weight =
        opts->size >= offsetof(op_out_options, weight) + sizeof opts->weight ? opts->weight : NULL;
    const char *dir = opts->out_dir && *opts->out_dir ? opts->out_dir : ".";
    if (op_mkdirs(dir) != 0) {
        op_seterr(err, errlen, "%s: cannot create the output directory: %s", dir, strerror(errno));
        return OP_OUT_EFAIL;
    }
    op_outfile of;
    int rc = op_outfile_open_derived(&of, dir, opts->out_name ? opts->out_name : "out", file, &si->in->ids, err,
                                     errlen);
    if (rc) return rc;
    int64_t win[2] = {si->win->t0, si->win->t1};
    rc = write(si->in->v, si->in->n, of.f, si->win->active ? win : NULL, weight, err, errlen);
    int crc = op_outfile_close(&of, rc == 0, err, errlen);
    return rc ? rc : crc;
}

/* Every format of opts over the checked inputs. */
static int convert_checked(const op_out_options *opts, const stream_in *si, char *err, size_t errlen) {
    static const unsigned fmts[] = {OP_OUT_FMT_PFTRACE, OP_OUT_FMT_JSON, OP_OUT_FMT_CSV};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        if (!(opts->formats & fmts[i])) continue;
        op_out_options o = *opts;
        o.formats = fmts[i];
        int rc;
        unsigned parts = fmts[i] == OP_OUT_FMT_PFTRACE ? conversion_parts() : 1;
        if (parts > 1) {
            rc = convert_pftrace_parallel(&o, si, parts, err, errlen);
        } else {
            op_out_stream *s = open_stream(&o, (1u << EV_KINDS) - 1, si, NULL, NULL, 0, 1, &rc, err, errlen);
            if (!s) return rc;
            int r = op_output_write(s, 0, err, errlen);
            rc = op_output_close(s, r < 0 ? NULL : err, errlen);
            if (r < 0) rc = -r;
        }
        if (rc) return rc;
    }
    if (opts->formats & OP_OUT_FMT_FOLDED) {
        int rc = convert_stacks(opts, si, "folded.txt", cp_folded_write_weighted, err, errlen);
        if (rc) return rc;
    }
    if (opts->formats & OP_OUT_FMT_SVG) {
        int rc =
            convert_stacks(opts, si, "flamegraph.svg", op_flame_svg_write_weighted, err, errlen);
        if (rc) return rc;
    }
    if (opts->formats & OP_OUT_FMT_OTF2) {
        int rc = op_out_otf2(si->in, si->win, opts->out_dir, opts->out_name ? opts->out_name : "out", err, errlen);
        if (rc) return rc;
    }
    if (opts->formats & OP_OUT_FMT_WALL_CLOCK) {
        int rc = op_out_wall_clock(si->in, opts->out_dir, opts->out_name ? opts->out_name : "out", err, errlen);
        if (rc) return rc;
    }
    if (opts->formats & OP_OUT_FMT_STATS)
        return op_out_stats_csv(si->in, si->win, opts->out_dir, opts->out_name ? opts->out_name : "out", err, errlen);
    return 0;
}

int op_output_convert(const op_out_options *opts, char *err, size_t errlen) {
    if (!opts) {
        op_seterr(err, errlen, "no options");
        return OP_OUT_EINPUT;
    }
    if (!(opts->formats & OP_OUT_FMT_CONVERT)) {
        op_seterr(err, errlen, "no output format: expected pftrace, json, csv, folded, wall_clock, otf2, svg (or stats)");
        return OP_OUT_EINPUT;
    }
    op_out_inputs in;
    op_win w;
    int rc = op_out_inputs_begin(&in, opts->inputs, opts->n_inputs, err, errlen);
    if (!rc) rc = resolve_window(opts, &in, &w, err, errlen);
    if (!rc) {
        stream_in si = {&in, &w};
        rc = convert_checked(opts, &si, err, errlen);
    }
    op_out_inputs_end(&in);
    return rc;
}
