/* otf2.c — the OTF2 writer (`-f otf2`, rocprofv3's otf2 format) through libotf2: an archive
 * <dir>/<name>_results.otf2 (the anchor file), <name>_results.def (global definitions) and the
 * folder <name>_results/ of per-location event and definition files.
 *
 * Definitions: a system-tree node per host under one root; a location group per process (one
 * per table set); locations — a CPU thread per thread with regions, an accelerator stream per
 * (queue, stream) of kernels and copies (a queue is one CUDA stream on one device), a metric
 * location per agent for its hardware counters and one for its allocated memory, and one per
 * process for its process/system metrics; a region per distinct (paradigm, role, name): API
 * calls (CUDA paradigm for CUDA categories, MPI for MPI, USER otherwise), marker ranges (USER,
 * CODE), kernels (CUDA, FUNCTION), copies and memsets (CUDA, DATA_TRANSFER); a metric (a
 * member and a class of one) per counter or metric name. Events: Enter/Leave per region and GPU
 * operation, Metric per counter value, metric value and allocation (the running total of the
 * agent's allocations minus frees). Instants (marks, zero-length calls, CPU samples) are not
 * written (rocprofv3's OTF2 leaves out roctxMarkA too).
 *
 * OTF2 needs each location's events in time order and its regions properly nested: the reader
 * gives them sorted (OP_RD_SORTED) and one location is written at a time (memory: one event
 * writer's chunk, and the definitions, which grow only with distinct names, threads and
 * streams); kernels and copies of a stream come from two sorted readers merged here; a region
 * that overlaps the one enclosing it without ending inside it is cut at the enclosing one's end
 * (counted, and said on stderr). Timestamps are CLOCK_MONOTONIC ns (timer resolution 1e9).
 *
 * The archive is written under a temporary name in the output folder and its three entries are
 * renamed to their final names — the anchor file last — only once it is whole; names already
 * taken get -1, -2, ... as every output does (outfile.c). Without libotf2 at build time the
 * format is refused with one line saying so. MPI communication (message and collective events)
 * is otf2_mpi.c's; otf2_internal.h is what the two share. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strtab.h"
#include "common/u64map.h"
#include "omniprof/comm.h"
#include "output/sink.h"

#ifndef OMNIPROF_HAVE_OTF2

int op_out_otf2(const op_out_inputs *in, const op_win *w, const char *dir, const char *name, char *err, size_t errlen) {
    (void)in, (void)w, (void)dir, (void)name;
    op_seterr(err, errlen, "OTF2 output is not in this build: libotf2 was not found when omniprof was built "
                           "(install libotf2-trace-dev, then rebuild)");
    return OP_OUT_EINPUT;
}

#else

#include "output/otf2_internal.h"

int ot_grow(void **v, size_t *cap, size_t item) {
    size_t n = *cap ? *cap * 2 : 64;
    void *p = realloc(*v, n * item);
    if (!p) return -1;
    *v = p;
    *cap = n;
    return 0;
}

static uint32_t ot_string(ot_writer *w, const void *s, size_t n) {
    uint32_t id = 0;
    if (op_strtab_intern(&w->strings, s ? s : "", s ? n : 0, &id) != 0) w->failed = 1;
    return id;
}

uint32_t ot_cstring(ot_writer *w, const char *s) { return ot_string(w, s, strlen(s)); }

static uint32_t ot_region_ref(ot_writer *w, const unsigned char *name, size_t n, uint8_t paradigm, uint8_t role) {
    char key[4200];
    int k = snprintf(key, sizeof key, "%u %u %.*s", paradigm, role, (int)(n > 4096 ? 4096 : n), name ? (const char *)name : "");
    uint32_t id = 0;
    size_t before = op_strtab_count(&w->rkeys);
    if (op_strtab_intern(&w->rkeys, key, (size_t)k, &id) != 0) {
        w->failed = 1;
        return 0;
    }
    if (op_strtab_count(&w->rkeys) > before) {
        ot_region r = {ot_string(w, name, n), paradigm, role};
        if (OT_PUSH(w->regions, r)) w->failed = 1;
    }
    return id;
}

static uint32_t ot_metric_ref(ot_writer *w, const unsigned char *name, size_t n, const char *unit) {
    uint32_t id = 0;
    size_t before = op_strtab_count(&w->mkeys);
    if (op_strtab_intern(&w->mkeys, name ? (const char *)name : "", name ? n : 0, &id) != 0) {
        w->failed = 1;
        return 0;
    }
    if (op_strtab_count(&w->mkeys) > before) {
        ot_metric m = {ot_string(w, name, n), ot_cstring(w, unit)};
        if (OT_PUSH(w->metrics, m)) w->failed = 1;
    }
    return id;
}

/* ---- one location at a time ------------------------------------------------------------------ */


static void ot_leave_to(ot_writer *w, int depth) {
    while (w->depth > depth) {
        w->depth--;
        if (w->mpi) ot_mpi_leave(w, w->depth);
        if (OTF2_EvtWriter_Leave(w->ew, NULL, (OTF2_TimeStamp)w->end[w->depth], w->reg[w->depth]) != OTF2_SUCCESS)
            w->failed = 1;
    }
}

void ot_location_end(ot_writer *w) {
    if (!w->ew) return;
    ot_leave_to(w, 0);
    uint64_t n = 0;
    OTF2_EvtWriter_GetNumberOfEvents(w->ew, &n);
    w->locations.v[w->loc].events = n;
    if (OTF2_Archive_CloseEvtWriter(w->ar, w->ew) != OTF2_SUCCESS) w->failed = 1;
    w->ew = NULL;
    OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(w->ar, w->loc); /* an empty local definition file */
    if (!dw || OTF2_Archive_CloseDefWriter(w->ar, dw) != OTF2_SUCCESS) w->failed = 1;
}

void ot_location_begin(ot_writer *w, uint32_t name, uint8_t type, uint64_t group) {
    ot_location_end(w);
    ot_location l = {name, type, group, 0};
    if (OT_PUSH(w->locations, l)) {
        w->failed = 1;
        return;
    }
    w->loc = w->locations.n - 1;
    w->ew = OTF2_Archive_GetEvtWriter(w->ar, w->loc);
    if (!w->ew) w->failed = 1;
}

/* An interval [start, end] on the current location: Leave what ended before it, then Enter
 * (cut at the enclosing interval's end when it would outlast it). */
static int ot_interval(ot_writer *w, int64_t start, int64_t end, uint32_t region)
{
    if (!w->ew) return -1;
    while (w->depth && w->end[w->depth - 1] <= start) ot_leave_to(w, w->depth - 1);
    if (end < start) end = start;
    if (w->depth && end > w->end[w->depth - 1]) {
        end = w->end[w->depth - 1];
        w->cut++;
    }
    if (w->depth == OT_MAX_DEPTH) {
        w->cut++;
        return -1;
    }
    if (OTF2_EvtWriter_Enter(w->ew, NULL, (OTF2_TimeStamp)start, region) != OTF2_SUCCESS) w->failed = 1;
    w->end[w->depth] = end;
    w->pend[w->depth] = -1;
    w->pstack[w->depth] = 0;
    w->reg[w->depth++] = region;
    return w->depth - 1;
}

static void ot_value(ot_writer *w, int64_t t, uint32_t metric, double v) {
    if (!w->ew) return;
    OTF2_Type type = OTF2_TYPE_DOUBLE;
    OTF2_MetricValue mv;
    mv.floating_point = v;
    if (OTF2_EvtWriter_Metric(w->ew, NULL, (OTF2_TimeStamp)t, metric, 1, &type, &mv) != OTF2_SUCCESS) w->failed = 1;
}

/* ---- one table set (one process) --------------------------------------------------------------- */

typedef struct ot_set {
    ot_writer *w;
    op_src *src;
    op_src_set *set;
    const op_win *win;
    uint64_t group;
    op_u64map thread_names; /* thread row -> string ref of "<name> <tid>" */
    char *err;
    size_t errlen;
} ot_set;

static int thread_name_cb(const op_thread_info *ti, void *arg) {
    ot_set *s = arg;
    char name[300];
    if (ti->thread_name && *ti->thread_name)
        snprintf(name, sizeof name, "%.200s (%lld)", (const char *)ti->thread_name, (long long)ti->tid);
    else
        snprintf(name, sizeof name, "Thread %lld", (long long)ti->tid);
    op_u64map_put(&s->thread_names, (uint64_t)ti->thread_row, ot_cstring(s->w, name));
    return 0;
}

static int first_process_cb(const op_thread_info *ti, void *arg) {
    *(int64_t *)arg = ti->process_row;
    return 1;
}

/* The process's location group under its host's node. */
static void ot_group_of_set(ot_set *s) {
    ot_writer *w = s->w;
    int64_t row = -1;
    char e[8];
    op_rd_threads(s->src, s->set, first_process_cb, &row, e, sizeof e);
    op_process_info pi;
    memset(&pi, 0, sizeof pi);
    if (row >= 0) op_rd_process(s->src, s->set, row, &pi);
    const char *host = pi.host[0] ? pi.host : "localhost";
    uint32_t hid = 0;
    size_t before = op_strtab_count(&w->hosts);
    if (op_strtab_intern(&w->hosts, host, strlen(host), &hid) != 0) w->failed = 1;
    if (op_strtab_count(&w->hosts) > before) ot_cstring(w, host); /* its name string exists before the defs */
    char name[200];
    if (pi.rank >= 0) snprintf(name, sizeof name, "Process %lld (rank %lld)", (long long)pi.os_pid, (long long)pi.rank);
    else snprintf(name, sizeof name, "Process %lld", (long long)pi.os_pid);
    ot_group g = {ot_cstring(w, name), (uint64_t)hid + 1};
    if (OT_PUSH(w->groups, g)) w->failed = 1;
    s->group = w->groups.n - 1;
}

/* The paradigm and role of a region of category `cat`. */
static void region_kind(const unsigned char *cat, int len, uint8_t *paradigm, uint8_t *role) {
    *paradigm = OTF2_PARADIGM_USER;
    *role = OTF2_REGION_ROLE_FUNCTION;
    if (op_category_is_marker(cat, len)) {
        *role = OTF2_REGION_ROLE_CODE;
        return;
    }
    char c[64];
    snprintf(c, sizeof c, "%.*s", len < 63 ? len : 63, cat ? (const char *)cat : "");
    if (!strncmp(c, "CUDA", 4) || !strcmp(c, "SYNCHRONIZATION")) *paradigm = OTF2_PARADIGM_CUDA;
    else if (!strncmp(c, "HIP", 3)) *paradigm = OTF2_PARADIGM_HIP;
    else if (!strncmp(c, "MPI", 3) || !strncmp(c, "RCCL", 4) || !strncmp(c, "NCCL", 4)) *paradigm = OTF2_PARADIGM_MPI;
    else if (!strncmp(c, "OPENCL", 6)) *paradigm = OTF2_PARADIGM_OPENCL;
    if (!strcmp(c, "SYNCHRONIZATION")) *role = OTF2_REGION_ROLE_TASK_WAIT;
}

static int rd_open(ot_set *s, op_rd *rd, int kind, int flags) {
    int rc = op_rd_open(rd, s->src, s->set, kind, s->win, flags | OP_RD_SORTED, s->err, s->errlen);
    return rc < 0 ? rc : 0;
}

/* Regions: one CPU-thread location per thread. */
static int ot_regions(ot_set *s) {
    ot_writer *w = s->w;
    op_rd rd;
    int rc = rd_open(s, &rd, EV_REGION, OP_RD_TEXT);
    if (rc) return rc;
    op_ev ev;
    int64_t thread = -1;
    uint64_t n = 0;
    while ((rc = op_rd_next(&rd, &ev, s->err, s->errlen)) == 1 && !w->failed) {
        if (ev.thread_row != thread || !w->ew) {
            uint64_t name = 0;
            if (!op_u64map_get(&s->thread_names, (uint64_t)ev.thread_row, &name)) {
                char t[64];
                snprintf(t, sizeof t, "Thread %lld", (long long)(ev.tid ? ev.tid : ev.thread_row));
                name = ot_cstring(w, t);
            }
            ot_location_begin(w, (uint32_t)name, OTF2_LOCATION_TYPE_CPU_THREAD, s->group);
            thread = ev.thread_row;
        }
        uint8_t paradigm, role;
        region_kind(ev.category, ev.category_len, &paradigm, &role);
        int d = ot_interval(w, ev.start, ev.end,
                            ot_region_ref(w, ev.name, (size_t)ev.name_len, paradigm, role));
        if (d >= 0 && w->mpi->calls.n) ot_mpi_enter(w, d, ev.corr, ev.start);
        if ((++n & 65535) == 0 && op_out_interrupted()) break;
    }
    op_rd_close(&rd);
    ot_location_end(w);
    return rc < 0 ? rc : 0;
}

/* Kernels and copies: one accelerator-stream location per (queue, stream), the two sorted
 * readers merged by (queue, stream, start). */
static int gpu_before(const op_ev *a, const op_ev *b) {
    if (a->queue_id != b->queue_id) return a->queue_id < b->queue_id;
    if (a->stream_id != b->stream_id) return a->stream_id < b->stream_id;
    return a->start <= b->start;
}

static int ot_gpu(ot_set *s) {
    ot_writer *w = s->w;
    op_rd rk, rc_;
    op_ev ek, ec;
    int rc = rd_open(s, &rk, EV_KERNEL, OP_RD_TEXT);
    if (rc) return rc;
    if ((rc = rd_open(s, &rc_, EV_COPY, OP_RD_TEXT))) {
        op_rd_close(&rk);
        return rc;
    }
    int hk = op_rd_next(&rk, &ek, s->err, s->errlen), hc = op_rd_next(&rc_, &ec, s->err, s->errlen);
    int have = 0;
    int64_t queue = 0, stream = 0;
    uint64_t n = 0;
    while (hk == 1 || hc == 1) {
        if (w->failed || ((++n & 65535) == 0 && op_out_interrupted())) break;
        int kernel = hk == 1 && (hc != 1 || gpu_before(&ek, &ec));
        const op_ev *ev = kernel ? &ek : &ec;
        if (!have || ev->queue_id != queue || ev->stream_id != stream) {
            char name[96];
            snprintf(name, sizeof name, "GPU %lld Stream %lld", (long long)ev->agent_index, (long long)ev->stream_id);
            ot_location_begin(w, ot_cstring(w, name), OTF2_LOCATION_TYPE_ACCELERATOR_STREAM, s->group);
            have = 1, queue = ev->queue_id, stream = ev->stream_id;
        }
        uint32_t region = ot_region_ref(w, ev->name, (size_t)ev->name_len, OTF2_PARADIGM_CUDA,
                                        kernel ? OTF2_REGION_ROLE_FUNCTION : OTF2_REGION_ROLE_DATA_TRANSFER);
        ot_interval(w, ev->start, ev->end, region);
        if (kernel) hk = op_rd_next(&rk, &ek, s->err, s->errlen);
        else hc = op_rd_next(&rc_, &ec, s->err, s->errlen);
    }
    op_rd_close(&rk);
    op_rd_close(&rc_);
    ot_location_end(w);
    return hk < 0 ? hk : hc < 0 ? hc : 0;
}

/* Values of one kind: a metric location per agent (counters, allocations) or per process
 * (metrics); `what` names the location after the agent. */
static int ot_values(ot_set *s, int kind, const char *what) {
    ot_writer *w = s->w;
    op_rd rd;
    int rc = rd_open(s, &rd, kind, kind == EV_ALLOC ? 0 : OP_RD_TEXT);
    if (rc) return rc;
    op_ev ev;
    int have = 0;
    int64_t agent = 0;
    double total = 0;
    uint32_t alloc_metric = 0;
    uint64_t n = 0;
    while ((rc = op_rd_next(&rd, &ev, s->err, s->errlen)) == 1 && !w->failed) {
        if (kind != EV_METRIC && (!have || ev.agent_id != agent)) {
            char name[96];
            snprintf(name, sizeof name, "GPU %lld %s", (long long)ev.agent_index, what);
            ot_location_begin(w, ot_cstring(w, name), OTF2_LOCATION_TYPE_METRIC, s->group);
            have = 1, agent = ev.agent_id, total = 0;
        } else if (!have) {
            ot_location_begin(w, ot_cstring(w, what), OTF2_LOCATION_TYPE_METRIC, s->group);
            have = 1;
        }
        if (kind == EV_ALLOC) {
            int freed = ev.alloc_type && (!strcmp(ev.alloc_type, "FREE") || !strcmp(ev.alloc_type, "RECLAIM"));
            total += freed ? -(double)ev.size : (double)ev.size;
            if (total < 0) total = 0;
            if (!alloc_metric) alloc_metric = ot_metric_ref(w, (const unsigned char *)"Memory allocated", 16, "bytes") + 1;
            ot_value(w, ev.start, alloc_metric - 1, total);
        } else {
            ot_value(w, ev.start, ot_metric_ref(w, ev.name, (size_t)ev.name_len, ""), ev.value);
        }
        if ((++n & 65535) == 0 && op_out_interrupted()) break;
    }
    op_rd_close(&rd);
    ot_location_end(w);
    return rc < 0 ? rc : 0;
}

static int ot_write_set(ot_writer *w, op_src *src, op_src_set *set, const op_win *win, char *err, size_t errlen) {
    ot_set s = {w, src, set, win, 0, {0}, err, errlen};
    ot_group_of_set(&s);
    int rc = op_rd_threads(src, set, thread_name_cb, &s, err, errlen);
    if (!rc) rc = ot_mpi_load(w, src, set, err, errlen);
    if (!rc) rc = ot_regions(&s);
    w->mpi->calls.n = 0; /* the GPU locations that follow have no MPI call */
    if (!rc) rc = ot_gpu(&s);
    if (!rc) rc = ot_values(&s, EV_PMC, "Counters");
    if (!rc) rc = ot_values(&s, EV_ALLOC, "Memory");
    if (!rc) rc = ot_values(&s, EV_METRIC, "Process metrics");
    op_u64map_free(&s.thread_names);
    return rc < 0 ? -rc : rc;
}

/* ---- the archive ---------------------------------------------------------------------------- */

static OTF2_FlushType pre_flush(void *user, OTF2_FileType type, OTF2_LocationRef loc, void *caller, bool final) {
    (void)user, (void)type, (void)loc, (void)caller, (void)final;
    return OTF2_FLUSH;
}
static OTF2_TimeStamp post_flush(void *user, OTF2_FileType type, OTF2_LocationRef loc) {
    (void)type, (void)loc;
    return (OTF2_TimeStamp)((ot_writer *)user)->t0;
}

static int ot_write_defs(ot_writer *w) {
    OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(w->ar);
    if (!g) return -1;
    int bad = 0;
#define OK(call) bad |= (call) != OTF2_SUCCESS
    uint32_t root = ot_cstring(w, "omniprof"), machine = ot_cstring(w, "machine"), node = ot_cstring(w, "node");
    uint32_t none = ot_cstring(w, "");
    uint64_t length = w->t1 > w->t0 ? w->t1 - w->t0 + 1 : 1;
    OK(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000ull, w->t0, length, OTF2_UNDEFINED_TIMESTAMP));
    for (size_t i = 0; i < op_strtab_count(&w->strings); i++)
        OK(OTF2_GlobalDefWriter_WriteString(g, (OTF2_StringRef)i, op_strtab_str(&w->strings, (uint32_t)i)));
    OK(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, root, machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE));
    for (size_t i = 0; i < op_strtab_count(&w->hosts); i++) {
        uint32_t name = 0;
        const char *h = op_strtab_str(&w->hosts, (uint32_t)i);
        op_strtab_find(&w->strings, h, strlen(h), &name);
        OK(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, (OTF2_SystemTreeNodeRef)(i + 1), name, node, 0));
    }
    for (size_t i = 0; i < w->groups.n; i++)
        OK(OTF2_GlobalDefWriter_WriteLocationGroup(g, (OTF2_LocationGroupRef)i, w->groups.v[i].name,
                                                   OTF2_LOCATION_GROUP_TYPE_PROCESS, w->groups.v[i].node,
                                                   OTF2_UNDEFINED_LOCATION_GROUP));
    for (size_t i = 0; i < w->locations.n; i++)
        OK(OTF2_GlobalDefWriter_WriteLocation(g, (OTF2_LocationRef)i, w->locations.v[i].name, w->locations.v[i].type,
                                              w->locations.v[i].events, w->locations.v[i].group));
    bad |= ot_mpi_defs(w, g) != 0;
    for (size_t i = 0; i < w->regions.n; i++)
        OK(OTF2_GlobalDefWriter_WriteRegion(g, (OTF2_RegionRef)i, w->regions.v[i].name, w->regions.v[i].name, none,
                                            w->regions.v[i].role, w->regions.v[i].paradigm, OTF2_REGION_FLAG_NONE,
                                            none, 0, 0));
    for (size_t i = 0; i < w->metrics.n; i++) {
        OTF2_MetricMemberRef m = (OTF2_MetricMemberRef)i;
        OK(OTF2_GlobalDefWriter_WriteMetricMember(g, m, w->metrics.v[i].name, none, OTF2_METRIC_TYPE_OTHER,
                                                  OTF2_METRIC_ABSOLUTE_POINT, OTF2_TYPE_DOUBLE, OTF2_BASE_DECIMAL, 0,
                                                  w->metrics.v[i].unit));
        OK(OTF2_GlobalDefWriter_WriteMetricClass(g, (OTF2_MetricRef)i, 1, &m, OTF2_METRIC_ASYNCHRONOUS,
                                                 OTF2_RECORDER_KIND_ABSTRACT));
    }
#undef OK
    return bad ? -1 : 0;
}

/* The first free "<name>[-N]_results" in dir: none of its .otf2, .def and folder exists. */
static int final_base(const char *dir, const char *name, char *out, size_t n) {
    for (int k = 0; k < 10000; k++) {
        char base[600], p[1400];
        if (k) snprintf(base, sizeof base, "%s-%d_results", name, k);
        else snprintf(base, sizeof base, "%s_results", name);
        int taken = 0;
        static const char *const ext[] = {".otf2", ".def", ""};
        for (int i = 0; i < 3; i++) {
            struct stat st;
            snprintf(p, sizeof p, "%s/%s%s", dir, base, ext[i]);
            taken |= lstat(p, &st) == 0;
        }
        if (!taken) {
            snprintf(out, n, "%s", base);
            if (k) fprintf(stderr, "omniprof: %s/%s_results.otf2 exists; writing %s/%s.otf2\n", dir, name, dir, base);
            return 0;
        }
    }
    return -1;
}

/* Moves the archive <dir>/<tmp>.{otf2,def,/} to <dir>/<base>..., the anchor last. */
static int publish(const char *dir, const char *tmp, const char *base) {
    static const char *const ext[] = {"", ".def", ".otf2"};
    for (int i = 0; i < 3; i++) {
        char from[1400], to[1400];
        snprintf(from, sizeof from, "%s/%s%s", dir, tmp, ext[i]);
        snprintf(to, sizeof to, "%s/%s%s", dir, base, ext[i]);
        struct stat st;
        if (lstat(to, &st) == 0 || rename(from, to) != 0) return -1;
    }
    return 0;
}

/* Removes a failed archive: the files of its folder (one level: OTF2's location files), the
 * folder, and its two files. */
static void remove_archive(const char *dir, const char *tmp) {
    char p[1400];
    snprintf(p, sizeof p, "%s/%s", dir, tmp);
    DIR *d = opendir(p);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char q[1700];
            snprintf(q, sizeof q, "%s/%s", p, e->d_name);
            unlink(q);
        }
        closedir(d);
    }
    rmdir(p);
    snprintf(p, sizeof p, "%s/%s.def", dir, tmp);
    unlink(p);
    snprintf(p, sizeof p, "%s/%s.otf2", dir, tmp);
    unlink(p);
}


int op_out_otf2(const op_out_inputs *in, const op_win *win, const char *dir, const char *name, char *err, size_t errlen) {
    dir = dir && *dir ? dir : ".";
    name = name && *name ? name : "out";
    if (op_mkdirs(dir) != 0) {
        op_seterr(err, errlen, "%s: cannot create the output directory: %s", dir, strerror(errno));
        return OP_OUT_EFAIL;
    }
    ot_writer w;
    memset(&w, 0, sizeof w);
    w.t0 = UINT64_MAX;
    /* the extent of every input, for the clock properties */
    for (size_t i = 0; i < in->n; i++) {
        op_src *src;
        if (op_src_open(in->v[i], &src, err, errlen)) return OP_OUT_EINPUT;
        for (size_t k = 0; k < src->n_sets; k++) {
            int64_t lo = INT64_MAX, hi = INT64_MIN;
            if (op_rd_extent(src, &src->sets[k], &lo, &hi, err, errlen) == 0 && lo <= hi) {
                if ((uint64_t)lo < w.t0) w.t0 = (uint64_t)lo;
                if ((uint64_t)hi > w.t1) w.t1 = (uint64_t)hi;
            }
        }
        op_src_close(src);
    }
    if (w.t0 == UINT64_MAX) w.t0 = 0;
    ot_mpi mpi;
    memset(&mpi, 0, sizeof mpi);
    w.mpi = &mpi;
    int src_rc = ot_mpi_scan(&w, in, err, errlen);
    if (src_rc) {
        ot_mpi_free(&mpi);
        return src_rc;
    }
    char tmp[200], base[700];
    snprintf(tmp, sizeof tmp, ".%s_results.tmp-%d", name, (int)getpid());
    w.ar = OTF2_Archive_Open(dir, tmp, OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024, OTF2_SUBSTRATE_POSIX,
                             OTF2_COMPRESSION_NONE);
    if (!w.ar) {
        ot_mpi_free(&mpi);
        op_seterr(err, errlen, "%s/%s.otf2: cannot create the OTF2 archive", dir, tmp);
        return OP_OUT_EFAIL;
    }
    OTF2_FlushCallbacks flush = {pre_flush, post_flush};
    OTF2_Archive_SetFlushCallbacks(w.ar, &flush, &w);
    OTF2_Archive_SetSerialCollectiveCallbacks(w.ar);
    OTF2_Archive_SetCreator(w.ar, "omniprof " OMNIPROF_VERSION_STRING);
    OTF2_Archive_SetDescription(w.ar, "omniprof trace (rocpd databases converted to OTF2)");
    int rc = OTF2_Archive_OpenEvtFiles(w.ar) == OTF2_SUCCESS && OTF2_Archive_OpenDefFiles(w.ar) == OTF2_SUCCESS ? 0 : OP_OUT_EFAIL;
    if (rc) op_seterr(err, errlen, "%s/%s: cannot open the OTF2 event files", dir, tmp);
    for (size_t i = 0; i < in->n && !rc; i++) {
        op_src *src;
        if ((rc = op_src_open(in->v[i], &src, err, errlen)) != 0) break;
        for (size_t k = 0; k < src->n_sets && !rc; k++) rc = ot_write_set(&w, src, &src->sets[k], win, err, errlen);
        op_src_close(src);
        if (!rc && op_out_interrupted()) {
            op_seterr(err, errlen, "interrupted");
            rc = OP_OUT_EFAIL;
        }
    }
    if (!rc) ot_mpi_finish(&w);
    if (!rc && w.failed) {
        op_seterr(err, errlen, "%s/%s: writing the OTF2 archive failed (%s)", dir, tmp, strerror(errno ? errno : EIO));
        rc = OP_OUT_EFAIL;
    }
    if (OTF2_Archive_CloseEvtFiles(w.ar) != OTF2_SUCCESS && !rc) rc = OP_OUT_EFAIL;
    if (!rc && ot_write_defs(&w) != 0) {
        op_seterr(err, errlen, "%s/%s: writing the OTF2 definitions failed", dir, tmp);
        rc = OP_OUT_EFAIL;
    }
    if (OTF2_Archive_CloseDefFiles(w.ar) != OTF2_SUCCESS && !rc) rc = OP_OUT_EFAIL;
    if (OTF2_Archive_Close(w.ar) != OTF2_SUCCESS && !rc) {
        op_seterr(err, errlen, "%s/%s: closing the OTF2 archive failed", dir, tmp);
        rc = OP_OUT_EFAIL;
    }
    if (!rc && (final_base(dir, name, base, sizeof base) != 0 || publish(dir, tmp, base) != 0)) {
        op_seterr(err, errlen, "%s/%s_results.otf2: cannot move the archive into place: %s", dir, name, strerror(errno));
        rc = OP_OUT_EFAIL;
    }
    if (rc) remove_archive(dir, tmp);
    if (!rc && mpi.fallback)
        fprintf(stderr,
                "omniprof: otf2: %llu MPI messages and roots on communicators the inputs do not "
                "show whole: messages written on MPI_COMM_WORLD with world ranks, roots undefined\n",
                (unsigned long long)mpi.fallback);
    ot_mpi_free(&mpi);
    if (!rc && w.cut)
        fprintf(stderr, "omniprof: otf2: %llu regions overlapped their enclosing region and were cut at its end\n",
                (unsigned long long)w.cut);
    op_strtab_free(&w.strings);
    op_strtab_free(&w.rkeys);
    op_strtab_free(&w.mkeys);
    op_strtab_free(&w.hosts);
    free(w.regions.v);
    free(w.locations.v);
    free(w.groups.v);
    free(w.metrics.v);
    return rc;
}

#endif /* OMNIPROF_HAVE_OTF2 */
