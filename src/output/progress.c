/* progress.c — the progress line of libomniprof-output's long operations (internal.h
 * "progress").
 *
 * One line on stderr, rewritten in place at most every 100 ms, only when stderr is a terminal;
 * colours per common/term.h. A stage names a step without a count (report passes, summary
 * inputs); ticks count events or inputs. The closing line stays when anything was shown. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/term.h"
#include "output/internal.h"

static int64_t progress_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void op_progress_init(op_progress *p, int enabled, const char *what, uint64_t total) {
    memset(p, 0, sizeof(*p));
    p->on = enabled && isatty(2);
    p->what = what;
    p->total = total;
    p->t0 = progress_now();
}

static void progress_line(op_progress *p, int64_t now) {
    const char *c = op_term_sgr(stderr, OP_TERM_CYAN), *b = op_term_sgr(stderr, OP_TERM_BOLD),
               *r = op_term_sgr(stderr, OP_TERM_RESET), *d = op_term_sgr(stderr, OP_TERM_DIM);
    fprintf(stderr, "\r\033[Komniprof: %s%s%s", c, p->what, r);
    if (p->stage[0]) fprintf(stderr, " %s", p->stage);
    if (p->total)
        fprintf(stderr, " %s%llu/%llu%s (%.0f%%)", b, (unsigned long long)p->done,
                (unsigned long long)p->total, r,
                100.0 * (double)p->done / (double)p->total);
    else if (p->done)
        fprintf(stderr, " %s%llu%s", b, (unsigned long long)p->done, r);
    fprintf(stderr, " %s%.1f s%s", d, (double)(now - p->t0) / 1e9, r);
    fflush(stderr);
    p->last = now;
    p->shown = 1;
}

void op_progress_tick(op_progress *p, uint64_t n) {
    p->done += n;
    if (!p->on) return;
    int64_t now = progress_now();
    if (now - p->last >= 100000000) progress_line(p, now);
}

void op_progress_stage(op_progress *p, const char *fmt, ...) {
    if (!p->on) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->stage, sizeof p->stage, fmt, ap);
    va_end(ap);
    progress_line(p, progress_now());
}

void op_progress_clear(op_progress *p) {
    if (!p->on || !p->shown) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->shown = 0;
}

void op_progress_done(op_progress *p) {
    if (!p->on || !p->shown) return;
    int64_t now = progress_now();
    fprintf(stderr, "\r\033[Komniprof: %s%s%s ", op_term_sgr(stderr, OP_TERM_CYAN), p->what,
            op_term_sgr(stderr, OP_TERM_RESET));
    if (p->done) fprintf(stderr, "%llu ", (unsigned long long)p->done);
    fprintf(stderr, "%sdone%s in %.1f s\n", op_term_sgr(stderr, OP_TERM_GREEN),
            op_term_sgr(stderr, OP_TERM_RESET),
            (double)(now - p->t0) / 1e9);
    p->shown = 0;
}
