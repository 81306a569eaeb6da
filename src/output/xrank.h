/* xrank.h — the cross-rank tables of `omniprof summary` (xrank.c): per domain and name, the
 * min/mean/max over ranks of the per-rank totals and call counts, and the slowest rank. */
#ifndef OMNIPROF_OUTPUT_XRANK_H
#define OMNIPROF_OUTPUT_XRANK_H

#include "output/internal.h"

/* 1 when the statistics (collected by process) hold at least two processes with a rank: the
 * summary then writes the cross-rank tables (and its CSV the cross-rank columns). */
int op_xrank_applies(const op_stats *st);

/* The CSV columns the cross-rank rows add after the summary's (the summary's other rows leave
 * them empty). */
#define OP_XRANK_CSV_COLUMNS "\"Ranks\",\"Calls Min\",\"Calls Mean\",\"Calls Max\",\"Max/Mean\",\"Slowest Rank\""
#define OP_XRANK_CSV_EMPTY ",,,,,,"

/* Writes one table per domain (console/md: text tables; csv: rows in the summary's CSV; json:
 * one list element per domain, *first_json as stats.c uses it) when op_xrank_applies(st);
 * nothing otherwise. Returns 0 or OP_OUT_EFAIL. */
int op_xrank_write(const op_stats *st, int format, op_out_units units, FILE *out, int *first_json);

#endif /* OMNIPROF_OUTPUT_XRANK_H */
