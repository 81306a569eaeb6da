/* time_window.c — collection windows: OMNIPROF_TRACE_DELAY, OMNIPROF_TRACE_DURATION and
 * OMNIPROF_TRACE_PERIODS (rocprof-sys's constraint model).
 *
 * Schedule. A list of entries runs one after another. An entry is
 * `clock:delay:duration[:cycles]` (clock first, as omniprof documents it) or
 * `delay:duration[:cycles[:clock]]` (rocprof-sys's order); clock is realtime, monotonic or
 * cputime (the process's CPU time); cycles 0 repeats forever (default 1). One cycle is: wait
 * `delay` seconds on the clock, then collect for `duration` seconds (0 = open until the end).
 * OMNIPROF_TRACE_DELAY/DURATION, when set, form a first entry `monotonic:DELAY:DURATION:1`.
 * The first entry starts when the backend starts; each next entry starts when the previous
 * one ended (on the previous entry's clock; with a different clock, when the window thread
 * notices, within 2 ms).
 *
 * Publication. The window thread publishes the current or next window as {clock, from,
 * until} under a sequence counter (odd while writing). op_cpu_window_open(), called by the
 * signal handler, reads it without locks, reads that clock (clock_gettime is
 * async-signal-safe) and answers from <= now < until: the boundaries themselves are exact,
 * only the switch to a next entry of another clock lags by the thread's 2 ms tick. Reading a
 * torn or in-progress publication answers "closed" (a sample lost, never one outside). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "common/log.h"
#include "common/number.h"
#include "common/settings.h"
#include "sdk/backend.h"

#define OP_CPU_MAX_PERIODS 64

static op_cpu_period g_periods[OP_CPU_MAX_PERIODS];
static int g_n_periods;
static bool g_configured;

/* the published window */
static _Atomic uint32_t g_seq;
/* The window fields are atomics accessed sequentially consistently (plain C11 `_Atomic`
 * reads and writes): with every access of the seqlock SC, the reader needs no fence (which
 * ThreadSanitizer does not model) and stays lock-free, hence usable from the signal handler. */
static _Atomic clockid_t g_w_clock;
static _Atomic int64_t g_w_from, g_w_until; /* ns on g_w_clock; until = INT64_MAX when open-ended */
static _Atomic int g_w_state;               /* 1 window (maybe in the future), 2 schedule over: closed */

/* the controller's position */
static int g_entry;
static uint64_t g_cycle;
static int64_t g_base;

static int64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0) return 0;
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

bool op_cpu_window_configured(void) { return g_configured; }

bool op_cpu_window_open(void)
{
    if (!g_configured) return true;
    uint32_t s1 = atomic_load_explicit(&g_seq, memory_order_acquire);
    if (s1 & 1u) return false;
    clockid_t c = g_w_clock;
    int64_t from = g_w_from, until = g_w_until;
    int state = g_w_state;
    if (atomic_load(&g_seq) != s1) return false;
    if (state != 1) return false;
    int64_t now = clock_ns(c);
    return now >= from && now < until;
}

/* Delays and durations: at most a year, as OMNIPROF_TRACE_DELAY/DURATION (settings.def). */
#define PERIOD_SECONDS "[0,31536000]"

static bool parse_clock(const char *s, clockid_t *out)
{
    if (!strcasecmp(s, "realtime") || !strcasecmp(s, "CLOCK_REALTIME")) *out = CLOCK_REALTIME;
    else if (!strcasecmp(s, "monotonic") || !strcasecmp(s, "CLOCK_MONOTONIC")) *out = CLOCK_MONOTONIC;
    else if (!strcasecmp(s, "cputime") || !strcasecmp(s, "CLOCK_PROCESS_CPUTIME_ID")) *out = CLOCK_PROCESS_CPUTIME_ID;
    else return false;
    return true;
}

/* Seconds as TRACE_DELAY takes them (common/number.c: no NaN, infinity or overflow). */
static bool parse_num(const char *s, double *out)
{
    return op_num_parse_checked(s, OP_NUM_TYPE_DOUBLE, PERIOD_SECONDS, out, NULL, NULL, NULL, 0) == OP_NUM_OK;
}

int op_cpu_window_parse(const char *text, op_cpu_period *out, int max, char *err, size_t errlen)
{
    int n = 0;
    char buf[1024];
    if (!text) return 0;
    if (strlen(text) >= sizeof buf) {
        snprintf(err, errlen, "OMNIPROF_TRACE_PERIODS: text longer than %zu characters", sizeof buf - 1);
        return -1;
    }
    strcpy(buf, text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, " \t;", &save); tok; tok = strtok_r(NULL, " \t;", &save)) {
        char *f[5];
        int nf = 0;
        char *save2 = NULL;
        char entry[128];
        snprintf(entry, sizeof entry, "%s", tok);
        for (char *p = strtok_r(tok, ":", &save2); p && nf < 5; p = strtok_r(NULL, ":", &save2)) f[nf++] = p;
        op_cpu_period pr = {CLOCK_REALTIME, 0, 0, 1};
        int i0 = 0;
        bool ok = nf >= 2 && nf <= 4;
        if (ok && parse_clock(f[0], &pr.clock)) { /* clock:delay:duration[:cycles] */
            i0 = 1;
            ok = nf >= 3;
        }
        uint64_t cyc = 1;
        if (ok) ok = parse_num(f[i0], &pr.delay) && parse_num(f[i0 + 1], &pr.duration);
        if (ok && nf > i0 + 2) {
            if (op_num_parse_checked(f[i0 + 2], OP_NUM_TYPE_UINT, "", NULL, NULL, &cyc, NULL, 0) == OP_NUM_OK) {
                if (i0 == 0 && nf == 4) ok = parse_clock(f[3], &pr.clock);
            } else if (i0 == 0 && nf == 3) {
                ok = parse_clock(f[2], &pr.clock); /* delay:duration:clock */
            } else {
                ok = false;
            }
        }
        if (!ok) {
            snprintf(err, errlen,
                     "OMNIPROF_TRACE_PERIODS: bad entry '%s'; valid: 'clock:delay:duration[:cycles]' (clock "
                     "realtime|monotonic|cputime, seconds in " PERIOD_SECONDS ", cycles a whole number, 0 = "
                     "forever), e.g. 'realtime:10:1:5'",
                     entry);
            return -1;
        }
        pr.cycles = cyc;
        if (n == max) {
            snprintf(err, errlen, "OMNIPROF_TRACE_PERIODS: more than %d entries", max);
            return -1;
        }
        out[n++] = pr;
    }
    return n;
}

static void publish(clockid_t c, int64_t from, int64_t until, int state)
{
    atomic_fetch_add_explicit(&g_seq, 1, memory_order_acq_rel); /* odd: writing */
    g_w_clock = c;
    g_w_from = from;
    g_w_until = until;
    g_w_state = state;
    atomic_fetch_add_explicit(&g_seq, 1, memory_order_release);
}

static void publish_current(void)
{
    if (g_entry >= g_n_periods) {
        publish(CLOCK_MONOTONIC, 0, 0, 2);
        return;
    }
    const op_cpu_period *p = &g_periods[g_entry];
    int64_t cyc = (int64_t)((p->delay + p->duration) * 1e9);
    int64_t from = g_base + (int64_t)g_cycle * cyc + (int64_t)(p->delay * 1e9);
    int64_t until = p->duration > 0 ? from + (int64_t)(p->duration * 1e9) : INT64_MAX;
    publish(p->clock, from, until, 1);
}

void op_cpu_window_tick(void)
{
    for (int guard = 0; guard < 1000 && g_entry < g_n_periods; guard++) {
        const op_cpu_period *p = &g_periods[g_entry];
        if (p->duration <= 0) return; /* open until the end */
        int64_t now = clock_ns(p->clock);
        if (now < g_w_until) return;
        g_cycle++;
        if (p->cycles && g_cycle >= p->cycles) {
            int64_t end_on_old = g_w_until;
            clockid_t old = p->clock;
            g_entry++;
            g_cycle = 0;
            if (g_entry < g_n_periods)
                g_base = g_periods[g_entry].clock == old ? end_on_old : clock_ns(g_periods[g_entry].clock);
        }
        publish_current();
    }
}

static void *window_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_op_cpu_stopping) && g_entry < g_n_periods) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        op_cpu_window_tick();
    }
    return NULL;
}

int op_cpu_window_setup(void)
{
    g_n_periods = 0;
    double delay = op_setting_double(OP_SET_TRACE_DELAY);
    double duration = op_setting_double(OP_SET_TRACE_DURATION);
    if (delay > 0 || duration > 0) g_periods[g_n_periods++] = (op_cpu_period){CLOCK_MONOTONIC, delay, duration, 1};
    const char *text = op_setting_str(OP_SET_TRACE_PERIODS);
    if (text && *text) {
        char err[256];
        int n = op_cpu_window_parse(text, g_periods + g_n_periods, OP_CPU_MAX_PERIODS - g_n_periods, err, sizeof err);
        if (n < 0) {
            op_error("cpu: %s; time windows off", err);
            g_n_periods = 0;
            return -1;
        }
        g_n_periods += n;
    }
    if (!g_n_periods) return 0;
    g_entry = 0;
    g_cycle = 0;
    g_base = clock_ns(g_periods[0].clock);
    publish_current();
    g_configured = true;
    op_info("cpu: collection windows: %d entr%s, the first anchored at %lld ns of clock %d", g_n_periods,
            g_n_periods == 1 ? "y" : "ies", (long long)g_base, (int)g_periods[0].clock);
    pthread_t th;
    if (op_sdk_create_thread(&th, window_main, NULL, OMNIPROF_LIBRARY, "omniprof.window") != 0)
        op_warn("cpu: cannot start the time-window thread; only the first window applies");
    return 0;
}
