/* window.c — time windows: op_out_window (output.h: absolute ns, percentages of the trace's
 * extent, marker names) resolved into an op_win over all inputs, which the database reader turns
 * into a predicate on every event query. The extent and the markers come from the reader
 * (op_rd_extent, op_rd_marker); the rules live here. */
#include <stdint.h>
#include <string.h>

#include "output/internal.h"

int op_win_resolve(const op_out_window *w, const char *const *inputs, size_t n, op_win *out,
                   char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    out->t0 = INT64_MIN;
    out->t1 = INT64_MAX;
    if (!w || (!w->has_start && !w->has_end && !w->start_marker && !w->end_marker)) return 0;
    out->active = 1;
    out->inclusive = w->inclusive;
    int need_extent = (w->has_start && w->start_pct) || (w->has_end && w->end_pct);
    int64_t lo = INT64_MAX, hi = INT64_MIN, m0 = INT64_MAX, m1 = INT64_MAX;
    if (w->has_start && w->start_pct && (w->start < 0 || w->start > 100)) {
        op_seterr(err, errlen, "--start %g%%: a percentage must be within 0..100", w->start);
        return OP_OUT_EINPUT;
    }
    if (w->has_end && w->end_pct && (w->end < 0 || w->end > 100)) {
        op_seterr(err, errlen, "--end %g%%: a percentage must be within 0..100", w->end);
        return OP_OUT_EINPUT;
    }
    for (size_t i = 0; i < n; i++) {
        op_src *s;
        int rc = op_src_open(inputs[i], &s, err, errlen);
        if (rc) return rc;
        for (size_t k = 0; k < s->n_sets && !rc; k++) {
            if (need_extent) rc = op_rd_extent(s, &s->sets[k], &lo, &hi, err, errlen);
            if (!rc && w->start_marker)
                rc = op_rd_marker(s, &s->sets[k], w->start_marker, 0, INT64_MIN, &m0, err, errlen);
        }
        op_src_close(s);
        if (rc) return rc;
    }
    if (w->start_marker) {
        if (m0 == INT64_MAX) {
            op_seterr(err, errlen, "--start-marker '%s': no region or mark of that name in the inputs",
                      w->start_marker);
            return OP_OUT_EINPUT;
        }
        out->t0 = m0;
    }
    if (w->end_marker) { /* the end of the first such marker that ends after the start */
        for (size_t i = 0; i < n; i++) {
            op_src *s;
            int rc = op_src_open(inputs[i], &s, err, errlen);
            if (rc) return rc;
            for (size_t k = 0; k < s->n_sets && !rc; k++)
                rc = op_rd_marker(s, &s->sets[k], w->end_marker, 1, out->t0, &m1, err, errlen);
            op_src_close(s);
            if (rc) return rc;
        }
        if (m1 == INT64_MAX) {
            op_seterr(err, errlen, "--end-marker '%s': no region or mark of that name in the inputs",
                      w->end_marker);
            return OP_OUT_EINPUT;
        }
        out->t1 = m1;
    }
    if (need_extent && lo > hi) lo = hi = 0;
    if (w->has_start)
        out->t0 = w->start_pct ? lo + (int64_t)((double)(hi - lo) * w->start / 100.0) : (int64_t)w->start;
    if (w->has_end)
        out->t1 = w->end_pct ? lo + (int64_t)((double)(hi - lo) * w->end / 100.0 + 0.5) : (int64_t)w->end;
    if (out->t1 < out->t0) {
        op_seterr(err, errlen, "empty time window: end %lld is before start %lld",
                  (long long)out->t1, (long long)out->t0);
        return OP_OUT_EINPUT;
    }
    return 0;
}
