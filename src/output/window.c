/* window.c — time windows: op_out_window (output.h: absolute ns, percentages of the trace's
 * extent, marker names) resolved into an op_win over all inputs, which the database reader turns
 * into a predicate on every event query. The extent and the markers come from the reader
 * (op_rd_extent, op_rd_marker); the rules live here. */
#include <stdint.h>
#include <string.h>

#include "output/internal.h"

/* What one pass over the sets looks for. */
typedef struct win_scan {
    const op_out_window *w;
    int need_extent, end_pass;
    int64_t lo, hi, m0, m1, after;
} win_scan;

static int scan_set(op_src *s, op_src_set *set, size_t input, void *arg, char *err, size_t errlen) {
    win_scan *ws = arg;
    (void)input;
    if (ws->end_pass) return op_rd_marker(s, set, ws->w->end_marker, 1, ws->after, &ws->m1, err, errlen);
    int rc = ws->need_extent ? op_rd_extent(s, set, &ws->lo, &ws->hi, err, errlen) : 0;
    if (!rc && ws->w->start_marker) rc = op_rd_marker(s, set, ws->w->start_marker, 0, INT64_MIN, &ws->m0, err, errlen);
    return rc;
}

/* A time in ns as int64, saturated (the CLI refuses NaN and values beyond +-9.2e18). */
static int64_t ns_clamp(double t) {
    if (!(t > -9.2e18)) return -9200000000000000000LL;
    if (t > 9.2e18) return 9200000000000000000LL;
    return (int64_t)t;
}

int op_win_resolve(const op_out_window *w, const char *const *inputs, size_t n, op_win *out,
                   char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    out->t0 = INT64_MIN;
    out->t1 = INT64_MAX;
    if (!w || (!w->has_start && !w->has_end && !w->start_marker && !w->end_marker)) return 0;
    out->active = 1;
    out->inclusive = w->inclusive;
    win_scan ws = {.w = w, .need_extent = (w->has_start && w->start_pct) || (w->has_end && w->end_pct),
                   .lo = INT64_MAX, .hi = INT64_MIN, .m0 = INT64_MAX, .m1 = INT64_MAX};
    if (w->has_start && w->start_pct && (w->start < 0 || w->start > 100)) {
        op_seterr(err, errlen, "--start %g%%: a percentage must be within 0..100", w->start);
        return OP_OUT_EINPUT;
    }
    if (w->has_end && w->end_pct && (w->end < 0 || w->end > 100)) {
        op_seterr(err, errlen, "--end %g%%: a percentage must be within 0..100", w->end);
        return OP_OUT_EINPUT;
    }
    int rc = op_out_each_set(inputs, n, scan_set, &ws, err, errlen);
    if (rc) return rc;
    if (w->start_marker) {
        if (ws.m0 == INT64_MAX) {
            op_seterr(err, errlen, "--start-marker '%s': no region or mark of that name in the inputs",
                      w->start_marker);
            return OP_OUT_EINPUT;
        }
        out->t0 = ws.m0;
    }
    if (w->end_marker) { /* the end of the first such marker that ends after the start */
        ws.end_pass = 1;
        ws.after = out->t0;
        if ((rc = op_out_each_set(inputs, n, scan_set, &ws, err, errlen)) != 0) return rc;
        if (ws.m1 == INT64_MAX) {
            op_seterr(err, errlen, "--end-marker '%s': no region or mark of that name in the inputs",
                      w->end_marker);
            return OP_OUT_EINPUT;
        }
        out->t1 = ws.m1;
    }
    int64_t lo = ws.lo, hi = ws.hi;
    int need_extent = ws.need_extent;
    if (need_extent && lo > hi) lo = hi = 0;
    /* In doubles, then clamped: the extent of a hostile database may span all of int64. */
    double span = (double)hi - (double)lo;
    if (w->has_start) out->t0 = ns_clamp(w->start_pct ? (double)lo + span * w->start / 100.0 : w->start);
    if (w->has_end) out->t1 = ns_clamp(w->end_pct ? (double)lo + span * w->end / 100.0 + 0.5 : w->end);
    if (out->t1 < out->t0) {
        op_seterr(err, errlen, "empty time window: end %lld is before start %lld",
                  (long long)out->t1, (long long)out->t0);
        return OP_OUT_EINPUT;
    }
    return 0;
}
