/* bench_buffer.c — throughput and accounting of SDK buffers (issue 2's performance targets).
 *
 * Prints `metric=<name> value=<n> unit=<u>` lines:
 *   emplace_ns_1thread        ns per 64-byte record through op_sdk_emit on one thread (<= 15)
 *   rate_ratio_2threads       records/s with 2 producers / records/s with 1 (>= 1.7)
 *   emplace_floor_ns          the floor measured in the same run: one uncontended atomic add
 *                             and a 64-byte copy per record (what any shared buffer costs)
 *   emplace_vs_floor          emplace_ns_1thread / emplace_floor_ns (<= 3)
 *   floor_rate_ratio_2threads the floor's loop on two threads at once (a ring and a counter each)
 *                             over one thread's: what this host gives two loops, the ceiling
 *                             of rate_ratio_2threads
 *   emplace_cpu_ns_1thread, emplace_floor_cpu_ns   the same two on the thread's CPU clock (less
 *                             sensitive to a loaded machine: preemption does not count)
 *   membarrier_private_expedited  1 when the kernel offers it (buffer.c's grace period); 0: the
 *                             producers run a fence per record instead (slower)
 *   deliver_cpu_ns_per_record_1thread, _2threads   the callback thread's CPU time per record
 *                             delivered in the same timed runs (delivery: grace period, building
 *                             the header array, wakes; the bench's callback only counts)
 *   deliver_read_cpu_ns_per_record, emplace_ns_1thread_reading_cb   one more 1-thread run whose
 *                             callback reads every record (checks its kind, size and sequence):
 *                             the consumer's cost when the callback touches the bodies, as a
 *                             tool's does
 * an INFO line per 2-thread repetition (its aggregate ns, producer waits, the CPUs the producers
 * and the callback thread ran on, and whether the producers shared a core as hyperthreads),
 * and four lines to read, one figure each (MET/MISSED where there is a target):
 *   MISSED sdk.emplace_ns_1thread: ..., FLOOR sdk.emplace_floor_ns: ...,
 *   MET sdk.emplace_vs_floor: ..., MET sdk.rate_ratio_2threads: ...
 *   lossless_8p_delivered / _produced / _dropped   8 producers, slow callback (equal, 0)
 *   discard_8p_delivered_plus_dropped / _produced  (equal)
 *   rss_after_1M_kb, rss_after_10M_kb             RSS does not grow with the record count
 * The producers emit through the real emit path (context mask, operation filter, external
 * correlation lookup, lane reservation, copy); the callback thread delivers concurrently.
 * BENCH_CPUS=a,b pins the first producer (and the one-thread floor) to CPU a, the second to b.
 * BENCH_SCALE=<n> divides the record counts (for quick runs); BENCH_BUFFER_BYTES sets the size
 * of the buffer used for the emplace/scaling/memory metrics (default 1 MiB, watermark half). */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "omniprof/omniprof.h"
#include "sdk/backend.h"

enum { B_FAST, B_LOSSLESS, B_DISCARD, B_N };
static omniprof_context_id_t g_ctx[B_N];
static omniprof_buffer_id_t g_buf[B_N];
static _Atomic uint64_t g_delivered[B_N];
static _Atomic int g_slow[B_N];
static _Atomic int g_read[B_N];         /* the callback reads and checks every record */
static _Atomic uint64_t g_seq_sum[B_N]; /* sum of the records' seq fields seen by a reading callback */
static _Atomic uint64_t g_bad[B_N];     /* records whose header or payload was wrong */
static _Atomic int g_cb_clock_set;
static clockid_t g_cb_clock; /* the callback thread's CPU clock (all buffers share the default thread) */
static _Atomic int g_cb_cpu = -1; /* the CPU of the callback thread's last callback */

typedef struct rec64 {
    uint64_t size;
    uint32_t kind;
    int32_t op;
    uint64_t c0, c1, seq, a, b, c;
} rec64;

static void cb(omniprof_context_id_t ctx, omniprof_buffer_id_t buf, omniprof_record_header_t **h, size_t n, void *data,
               uint64_t drops)
{
    (void)ctx;
    (void)buf;
    (void)h;
    (void)drops;
    int i = (int)(intptr_t)data;
    if (!atomic_load_explicit(&g_cb_clock_set, memory_order_acquire) &&
        pthread_getcpuclockid(pthread_self(), &g_cb_clock) == 0)
        atomic_store_explicit(&g_cb_clock_set, 1, memory_order_release);
    if (atomic_load_explicit(&g_read[i], memory_order_relaxed)) {
        uint64_t sum = 0, bad = 0;
        for (size_t k = 0; k < n; k++) {
            const rec64 *r = h[k]->payload;
            bad += h[k]->kind != OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API || r->size != sizeof *r ||
                   r->kind != OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API;
            sum += r->seq;
        }
        atomic_fetch_add(&g_seq_sum[i], sum);
        if (bad) atomic_fetch_add(&g_bad[i], bad);
    }
    atomic_fetch_add(&g_delivered[i], n);
    atomic_store_explicit(&g_cb_cpu, sched_getcpu(), memory_order_relaxed);
    if (atomic_load(&g_slow[i])) usleep(200);
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f;
    (void)d;
    size_t size[B_N] = {1u << 20, 256u << 10, 256u << 10};
    if (getenv("BENCH_BUFFER_BYTES")) size[B_FAST] = strtoull(getenv("BENCH_BUFFER_BYTES"), NULL, 10);
    static const omniprof_buffer_policy_t pol[B_N] = {OMNIPROF_BUFFER_POLICY_LOSSLESS, OMNIPROF_BUFFER_POLICY_LOSSLESS,
                                                      OMNIPROF_BUFFER_POLICY_DISCARD};
    for (int i = 0; i < B_N; i++) {
        if (omniprof_create_context(&g_ctx[i]) || omniprof_create_buffer(g_ctx[i], size[i], size[i] / 2, pol[i], cb,
                                                                         (void *)(intptr_t)i, &g_buf[i]) ||
            omniprof_configure_buffer_tracing_service(g_ctx[i], OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0,
                                                      g_buf[i]))
            return 1;
    }
    return 0;
}

omniprof_tool_configure_result_t *omniprof_configure(uint32_t v, const char *rv, uint32_t p, omniprof_client_id_t *id)
{
    (void)v;
    (void)rv;
    (void)p;
    static omniprof_tool_configure_result_t r = {sizeof r, init, NULL, NULL};
    id->name = "bench_buffer";
    return &r;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static _Atomic int g_go;
/* BENCH_CPUS=a,b: the first producer (and the one-thread floor) runs on CPU a, the second on b,
 * for every one- and two-thread run, so the floor's two-thread rate and emplace's are read on
 * one pair of CPUs (a VM's CPUs may share a core of the host unseen). */
static int g_pin[2] = {-1, -1};
static void pin_self(int cpu)
{
    if (cpu < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

typedef struct job {
    int pin;  /* the CPU to run on, -1: any */
    uint64_t n;
    double cpu_s; /* the producer's own CPU time */
    int cpu;      /* the CPU it ended on */
} job;

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of the callback thread so far (0 before its first callback) */
static double cb_cpu_s(void)
{
    struct timespec ts;
    if (!atomic_load_explicit(&g_cb_clock_set, memory_order_acquire) || clock_gettime(g_cb_clock, &ts)) return 0;
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *producer(void *arg)
{
    job *j = arg;
    pin_self(j->pin);
    rec64 r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API;
    r.op = OMNIPROF_MARKER_RANGE_OP_MARK;
    while (!atomic_load(&g_go)) {
    }
    double c0 = thread_cpu_s();
    for (uint64_t i = 0; i < j->n; i++) {
        r.seq = i;
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_MARK, &r, NULL);
    }
    j->cpu_s = thread_cpu_s() - c0;
    j->cpu = sched_getcpu();
    return NULL;
}

/* The floor: per record one uncontended atomic add (the reservation) and a 64-byte copy into a
 * 1 MiB ring (the record), nothing else. On two threads at once (run_floor2), each thread has its
 * own ring and its own counter (nothing shared), so their rate over one thread's is what this
 * host gives two such loops at once (its turbo, memory and neighbours): the ceiling of
 * rate_ratio_2threads. */
typedef struct floor_lane {
    _Alignas(64) _Atomic uint64_t pos;
    unsigned char ring[1u << 20];
} floor_lane;
static _Alignas(64) floor_lane g_floor_lanes[2];
static uint64_t g_jobs_floor_n; /* records per thread of run_floor2 (set before its threads start) */

static void floor_loop(floor_lane *fl, uint64_t n)
{
    rec64 r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    for (uint64_t i = 0; i < n; i++) {
        r.seq = i;
        uint64_t off = atomic_fetch_add_explicit(&fl->pos, sizeof r, memory_order_relaxed) & (sizeof fl->ring - 1);
        memcpy(fl->ring + off, &r, sizeof r);
        __asm__ volatile("" ::: "memory");
    }
}

static double run_floor(uint64_t n, double *cpu)
{
    cpu_set_t was;
    int pinned = g_pin[0] >= 0 && pthread_getaffinity_np(pthread_self(), sizeof was, &was) == 0;
    if (pinned) pin_self(g_pin[0]);
    double t0 = now_s(), c0 = thread_cpu_s();
    floor_loop(&g_floor_lanes[0], n);
    *cpu = thread_cpu_s() - c0;
    double t = now_s() - t0;
    if (pinned) pthread_setaffinity_np(pthread_self(), sizeof was, &was);
    return t;
}



static void *floor_producer(void *arg)
{
    floor_lane *fl = arg;
    pin_self(g_pin[fl - g_floor_lanes]);
    while (!atomic_load(&g_go)) {
    }
    floor_loop(fl, g_jobs_floor_n);
    return NULL;
}

/* Wall time of two floor loops of n records each, run at once. */
static double run_floor2(uint64_t n)
{
    pthread_t t[2];
    atomic_store(&g_go, 0);
    g_jobs_floor_n = n;
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, floor_producer, &g_floor_lanes[i]);
    double t0 = now_s();
    atomic_store(&g_go, 1);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return now_s() - t0;
}

static job g_jobs[16]; /* the producers of the last run_threads */

static double run_threads(int nthreads, uint64_t per_thread, double *cpu)
{
    pthread_t t[16];
    atomic_store(&g_go, 0);
    for (int i = 0; i < nthreads; i++) {
        g_jobs[i] = (job){i < 2 ? g_pin[i] : -1, per_thread, 0, -1};
        pthread_create(&t[i], NULL, producer, &g_jobs[i]);
    }
    double t0 = now_s();
    atomic_store(&g_go, 1);
    for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
    if (cpu) *cpu = g_jobs[0].cpu_s; /* one producer: its own */
    return now_s() - t0;
}

/* 1 when CPUs a and b are hyperthreads of one core (sysfs thread_siblings_list of a names b),
 * 0 when not, -1 when unknown. */
static int smt_siblings(int a, int b)
{
    if (a < 0 || b < 0) return -1;
    char path[96], list[256];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", a);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char *ok = fgets(list, sizeof list, f);
    fclose(f);
    if (!ok) return -1;
    for (char *p = list; *p;) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p) break;
        if (*end == '-') hi = strtol(end + 1, &end, 10);
        if (b >= lo && b <= hi) return 1;
        p = *end == ',' ? end + 1 : end;
        if (*p == '\n') break;
    }
    return 0;
}

static uint64_t producer_waits(void)
{
    omniprof_buffer_stats_t st;
    memset(&st, 0, sizeof st);
    return omniprof_buffer_get_stats(g_buf[B_FAST], &st) == OMNIPROF_STATUS_SUCCESS ? st.producer_waits : 0;
}

/* One timed run on the emplace buffer, between two flushes (outside the timing): its wall time,
 * *deliver_ns = the callback thread's CPU time per record delivered meanwhile, and the producer
 * waits added to *waits. */
static double timed_run(int nthreads, uint64_t per_thread, double *cpu, double *deliver_ns, uint64_t *waits)
{
    omniprof_flush_buffer(g_buf[B_FAST]);
    uint64_t w0 = producer_waits(), d0 = atomic_load(&g_delivered[B_FAST]);
    double c0 = cb_cpu_s();
    double t = run_threads(nthreads, per_thread, cpu);
    omniprof_flush_buffer(g_buf[B_FAST]);
    *waits += producer_waits() - w0;
    uint64_t nd = atomic_load(&g_delivered[B_FAST]) - d0;
    *deliver_ns = nd ? (cb_cpu_s() - c0) * 1e9 / (double)nd : 0;
    return t;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(void)
{
    omniprof_initialize();
    uint64_t scale = getenv("BENCH_SCALE") ? strtoull(getenv("BENCH_SCALE"), NULL, 10) : 1;
    if (!scale) scale = 1;
    const char *cpus = getenv("BENCH_CPUS");
    if (cpus && *cpus && sscanf(cpus, "%d,%d", &g_pin[0], &g_pin[1]) != 2) {
        fprintf(stderr, "bench_sdk_buffer: BENCH_CPUS='%s': expected two CPU numbers, as in BENCH_CPUS=2,3\n", cpus);
        return 2;
    }
    uint64_t n = 10000000 / scale;

    omniprof_start_context(g_ctx[B_FAST]);
    run_threads(1, n / 10, NULL); /* warm up: pages, lanes */
    double best1 = 1e9, best2 = 1e9, bestf = 1e9, bestf2 = 1e9, cpu1 = 1e9, cpuf = 1e9, dl1 = 1e9, dl2 = 1e9, c, d;
    /* producer waits (LOSSLESS: both sub-buffers full, the consumer behind) in the timed runs: a
     * run with waits measures the callback thread's delivery rate, not the producers' */
    uint64_t waits1 = 0, waits2 = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t1 = timed_run(1, n, &c, &d, &waits1);
        if (t1 < best1) best1 = t1;
        if (c < cpu1) cpu1 = c;
        if (d < dl1) dl1 = d;
        double tf = run_floor(n, &c);
        if (tf < bestf) bestf = tf;
        if (c < cpuf) cpuf = c;
        double tf2 = run_floor2(n);
        if (tf2 < bestf2) bestf2 = tf2;
        uint64_t w2 = waits2;
        double t2 = timed_run(2, n, NULL, &d, &waits2);
        if (t2 < best2) best2 = t2;
        if (d < dl2) dl2 = d;
        /* where the two producers ran: two hyperthreads of one core do not scale like two cores */
        printf("INFO sdk.2threads rep %d: %.2f ns per record aggregate, %llu producer waits, producers ended on "
               "CPUs %d and %d (hyperthreads of one core: %s), the callback thread on CPU %d\n",
               rep + 1, t2 * 1e9 / (double)(2 * n), (unsigned long long)(waits2 - w2), g_jobs[0].cpu, g_jobs[1].cpu,
               (const char *[]){"unknown", "no", "yes"}[smt_siblings(g_jobs[0].cpu, g_jobs[1].cpu) + 1],
               atomic_load(&g_cb_cpu));
    }
    /* one more 1-thread run whose callback reads every record: what delivery costs when the
     * callback touches the bodies (a tool's does), and the content check */
    uint64_t waitsr = 0, d_before = atomic_load(&g_delivered[B_FAST]);
    atomic_store(&g_read[B_FAST], 1);
    double dlr, tr = timed_run(1, n, NULL, &dlr, &waitsr);
    atomic_store(&g_read[B_FAST], 0);
    uint64_t nread = atomic_load(&g_delivered[B_FAST]) - d_before;
    int content_ok = nread == n && atomic_load(&g_seq_sum[B_FAST]) == n * (n - 1) / 2 && !atomic_load(&g_bad[B_FAST]);
    double ns1 = best1 * 1e9 / (double)n, nsf = bestf * 1e9 / (double)n, ratio2 = (2.0 * n / best2) / (n / best1);
    printf("metric=emplace_ns_1thread value=%.2f unit=ns\n", ns1);
    printf("metric=emplace_ns_2threads_aggregate value=%.2f unit=ns\n", best2 * 1e9 / (double)(2 * n));
    printf("metric=rate_ratio_2threads value=%.2f unit=x\n", ratio2);
    printf("metric=producer_waits_1thread value=%llu unit=count\n", (unsigned long long)waits1);
    printf("metric=producer_waits_2threads value=%llu unit=count\n", (unsigned long long)waits2);
    double floor_ratio2 = (2.0 * n / bestf2) / (n / bestf);
    printf("metric=emplace_floor_ns value=%.2f unit=ns\n", nsf);
    printf("metric=floor_rate_ratio_2threads value=%.2f unit=x\n", floor_ratio2);
    printf("metric=emplace_vs_floor value=%.2f unit=x\n", best1 / bestf);
    /* the buffers' grace period uses membarrier; without it producers fence on every record */
    long mb = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    printf("metric=membarrier_private_expedited value=%d unit=bool\n",
           mb > 0 && (mb & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ? 1 : 0);
    printf("metric=deliver_cpu_ns_per_record_1thread value=%.2f unit=ns\n", dl1);
    printf("metric=deliver_cpu_ns_per_record_2threads value=%.2f unit=ns\n", dl2);
    printf("metric=emplace_ns_1thread_reading_cb value=%.2f unit=ns\n", tr * 1e9 / (double)n);
    printf("metric=deliver_read_cpu_ns_per_record value=%.2f unit=ns\n", dlr);
    printf("metric=reading_cb_content_ok value=%d unit=bool\n", content_ok);
    printf("metric=emplace_cpu_ns_1thread value=%.2f unit=ns\n", cpu1 * 1e9 / (double)n);
    printf("metric=emplace_floor_cpu_ns value=%.2f unit=ns\n", cpuf * 1e9 / (double)n);
    printf("%s sdk.emplace_ns_1thread: %.2f ns per 64-byte record through op_sdk_emit, 1 thread (target <= 15 ns)\n",
           ns1 <= 15.0 ? "MET" : "MISSED", ns1);
    printf("FLOOR sdk.emplace_floor_ns: %.2f ns (one uncontended atomic add + a 64-byte copy, same run)\n", nsf);
    printf("%s sdk.emplace_vs_floor: %.2fx the floor (target <= 3x; on the thread's CPU clock %.2f / %.2f ns = %.2fx)\n",
           best1 / bestf <= 3.0 ? "MET" : "MISSED", best1 / bestf, cpu1 * 1e9 / (double)n, cpuf * 1e9 / (double)n,
           cpu1 / cpuf);
    printf("%s sdk.rate_ratio_2threads: %.2fx the records/s of 1 thread with 2 producer threads (target >= 1.7x; "
           "the floor's own on this host, same run: %.2fx)\n",
           ratio2 >= 1.7 ? "MET" : "MISSED", ratio2, floor_ratio2);
    omniprof_flush_buffer(g_buf[B_FAST]);

    /* memory: RSS after 1M and after 10M more records */
    uint64_t m = 1000000 / scale;
    run_threads(1, m, NULL);
    omniprof_flush_buffer(g_buf[B_FAST]);
    long r1 = rss_kb();
    run_threads(1, 10 * m, NULL);
    omniprof_flush_buffer(g_buf[B_FAST]);
    long r10 = rss_kb();
    printf("metric=rss_after_1M_kb value=%ld unit=KiB\n", r1);
    printf("metric=rss_after_10M_kb value=%ld unit=KiB\n", r10);
    omniprof_stop_context(g_ctx[B_FAST]);

    /* LOSSLESS, 8 producers, slow callback */
    uint64_t per = 200000 / scale;
    omniprof_buffer_stats_t st = {.size = sizeof st};
    atomic_store(&g_slow[B_LOSSLESS], 1);
    omniprof_start_context(g_ctx[B_LOSSLESS]);
    double tl = run_threads(8, per, NULL);
    omniprof_stop_context(g_ctx[B_LOSSLESS]);
    omniprof_flush_buffer(g_buf[B_LOSSLESS]);
    omniprof_buffer_get_stats(g_buf[B_LOSSLESS], &st);
    printf("metric=lossless_8p_produced value=%llu unit=records\n", (unsigned long long)(8 * per));
    printf("metric=lossless_8p_delivered value=%llu unit=records\n", (unsigned long long)atomic_load(&g_delivered[B_LOSSLESS]));
    printf("metric=lossless_8p_dropped value=%llu unit=records\n", (unsigned long long)st.records_dropped);
    printf("metric=lossless_8p_producer_waits value=%llu unit=count\n", (unsigned long long)st.producer_waits);
    printf("metric=lossless_8p_seconds value=%.3f unit=s\n", tl);

    /* DISCARD, 8 producers, slow callback */
    atomic_store(&g_slow[B_DISCARD], 1);
    omniprof_start_context(g_ctx[B_DISCARD]);
    run_threads(8, per, NULL);
    omniprof_stop_context(g_ctx[B_DISCARD]);
    omniprof_flush_buffer(g_buf[B_DISCARD]);
    omniprof_buffer_get_stats(g_buf[B_DISCARD], &st);
    printf("metric=discard_8p_produced value=%llu unit=records\n", (unsigned long long)(8 * per));
    printf("metric=discard_8p_delivered value=%llu unit=records\n", (unsigned long long)atomic_load(&g_delivered[B_DISCARD]));
    printf("metric=discard_8p_dropped value=%llu unit=records\n", (unsigned long long)st.records_dropped);
    printf("metric=discard_8p_delivered_plus_dropped value=%llu unit=records\n",
           (unsigned long long)(atomic_load(&g_delivered[B_DISCARD]) + st.records_dropped));
    int ok = atomic_load(&g_delivered[B_LOSSLESS]) == 8 * per &&
             atomic_load(&g_delivered[B_DISCARD]) + st.records_dropped == 8 * per;
    return ok && content_ok ? 0 : 1;
}
