/* test_convert.c — the streaming C API of libomniprof-output (src/output/convert.c): a conversion
 * written chunk by chunk (op_output_open / op_output_write(max_events) / op_output_close) gives
 * the same bytes as op_output_convert, for every format; the event count and the statuses of
 * bad arguments are the documented ones.
 *
 * usage: test_output_convert GEN_DB_BINARY */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/output.h"

#include "../common/check.h" /* CHECK, g_failures */

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)len + 1);
    *n = fread(p, 1, (size_t)len, f);
    fclose(f);
    return p;
}

static int same_file(const char *a, const char *b) {
    size_t na, nb;
    char *pa = slurp(a, &na), *pb = slurp(b, &nb);
    int same = pa && pb && na == nb && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s GEN_DB_BINARY\n", argv[0]);
        return 2;
    }
    char dir[] = "/tmp/omniprof-test-stream-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char cmd[1024], db[512];
    snprintf(db, sizeof db, "%s/s.db", dir);
    snprintf(cmd, sizeof cmd, "%s %s --events 5000 --weird > %s/counts.txt", argv[1], db, dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "generator failed (its files kept in %s)\n", dir);
        return 1;
    }
    setenv("OMNIPROF_OUTPUT_THREADS", "1", 1); /* one-shot Perfetto in one stream, comparable */
    const char *inputs[] = {db};
    char err[512];
    static const unsigned fmts[] = {OP_OUT_FMT_PFTRACE, OP_OUT_FMT_JSON, OP_OUT_FMT_CSV};
    static const char *const files[] = {"results.pftrace", "results.json", "kernel_trace.csv"};
    for (int i = 0; i < 3; i++) {
        op_out_options o = {.size = sizeof o, .inputs = inputs, .n_inputs = 1, .formats = fmts[i], .out_dir = dir,
                            .out_name = "one"};
        CHECK(op_output_convert(&o, err, sizeof err) == 0, "convert: %s", err);
        o.out_name = "chunk";
        int status = -1;
        op_out_stream *s = op_output_open(&o, &status, err, sizeof err);
        CHECK(s && status == 0, "open: %s", err);
        int r, chunks = 0;
        while ((r = op_output_write(s, 997, err, sizeof err)) == 1) chunks++;
        CHECK(r == 0, "write: %s", err);
        CHECK(chunks > 3, "several chunks (%d)", chunks);
        uint64_t events = op_output_events(s);
        CHECK(events > 4000, "events written: %llu", (unsigned long long)events);
        CHECK(op_output_write(s, 10, err, sizeof err) == 0, "write after the end returns 0");
        CHECK(op_output_close(s, err, sizeof err) == 0, "close: %s", err);
        char a[600], b[600];
        snprintf(a, sizeof a, "%s/one_%s", dir, files[i]);
        snprintf(b, sizeof b, "%s/chunk_%s", dir, files[i]);
        CHECK(same_file(a, b), "chunked %s equals the one-shot conversion", files[i]);
    }
    /* documented statuses */
    op_out_options bad = {.size = sizeof bad, .inputs = inputs, .n_inputs = 1, .formats = OP_OUT_FMT_JSON | OP_OUT_FMT_CSV};
    int status = 0;
    CHECK(op_output_open(&bad, &status, err, sizeof err) == NULL && status == OP_OUT_EINPUT, "two formats refused");
    const char *missing[] = {"/nonexistent/x.db"};
    bad.inputs = missing;
    bad.formats = OP_OUT_FMT_CSV;
    CHECK(op_output_open(&bad, &status, err, sizeof err) == NULL && status == OP_OUT_EINPUT && strstr(err, "cannot open"),
          "missing input: %s", err);
    CHECK(op_output_open(NULL, &status, err, sizeof err) == NULL && status == OP_OUT_EINPUT, "NULL options");
    CHECK(op_output_close(NULL, err, sizeof err) == 0, "close(NULL)");
    CHECK(op_output_write(NULL, 1, err, sizeof err) == -OP_OUT_EINPUT, "write(NULL)");
    CHECK(op_output_parse_units("usec") == OP_OUT_USEC && op_output_parse_units("hours") == -1, "units");
    /* the one parser of format names (convert -f, run -f) */
    unsigned fm = 0;
    CHECK(op_output_parse_formats("pftrace,csv folded", OP_OUT_FMT_CONVERT, &fm, err, sizeof err) == 0 &&
              fm == (OP_OUT_FMT_PFTRACE | OP_OUT_FMT_CSV | OP_OUT_FMT_FOLDED), "formats: %s", err);
    fm = 0;
    CHECK(op_output_parse_formats("rocpd json", OP_OUT_FMT_RUN, &fm, err, sizeof err) == 0 &&
              fm == (OP_OUT_FMT_ROCPD | OP_OUT_FMT_JSON), "run formats: %s", err);
    CHECK(op_output_parse_formats("rocpd", OP_OUT_FMT_CONVERT, &fm, err, sizeof err) == OP_OUT_EINPUT &&
              strstr(err, "'rocpd'") && strstr(err, "pftrace, json, csv, folded, stats, wall_clock, otf2 or svg"), "rocpd refused by convert: %s", err);
    CHECK(op_output_parse_formats("json,pftrce", OP_OUT_FMT_RUN, &fm, err, sizeof err) == OP_OUT_EINPUT &&
              strstr(err, "'pftrce'") && strstr(err, "rocpd, pftrace, json, csv, folded, wall_clock or otf2"), "typo named: %s", err);
    CHECK(op_output_parse_formats(" , ", OP_OUT_FMT_RUN, &fm, err, sizeof err) == OP_OUT_EINPUT, "empty list");
    CHECK(op_output_parse_table_format("md") == OP_OUT_SUMMARY_MD && op_output_parse_table_format("xml") == -1,
          "table formats");
    /* summary into a FILE* and the stats files */
    FILE *f = tmpfile();
    op_out_summary_options so = {.size = sizeof so, .units = OP_OUT_MSEC, .domain_summary = 1};
    CHECK(op_output_summary(inputs, 1, &so, f, err, sizeof err) == 0, "summary: %s", err);
    CHECK(ftell(f) > 100, "summary written");
    fclose(f);
    CHECK(op_output_stats_csv(inputs, 1, dir, "st", NULL, err, sizeof err) == 0, "stats: %s", err);
    snprintf(cmd, sizeof cmd, "%s/st_kernel_stats.csv", dir);
    CHECK(access(cmd, R_OK) == 0, "kernel_stats.csv written");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
    if (g_failures) return 1;
    printf("ok: output.stream\n");
    return 0;
}
