/* test_profile_causal.c — causal.profile: the computation of the causal profile and of the Coz
 * profile, on experiments whose answer is worked out by hand. CAUSAL_EXPERIMENT and
 * CAUSAL_PROGRESS records go through the real database writer into a real database; the
 * output library reads them back (src/db/reader_causal.c, src/output/profile_causal.c).
 *
 * Line A, throughput point "it" (periods: duration / visits):
 *   0 %:  10 visits in 100 ms, 12 in 120 ms  -> 220 ms / 22 = 10 ms       (the baseline)
 *   50 %: 15 in 100 ms, 16 in 100 ms         -> 200 / 31 = 6.4516 ms      -> +35.484 %
 *         single experiments: 6.667 ms -> +33.333 %, 6.25 ms -> +37.5 %   -> spread 2.9463 %
 *   100 %: 20 in 100 ms                      -> 5 ms                      -> +50 %
 *   slope = (0.5 * 0.35484 + 1 * 0.5) / (0.25 + 1) = 0.54194
 * Line A, latency point "lat": 0 %: 10 arrivals, difference 2 in 100 ms -> 2 / (10 / 100 ms) =
 *   20 ms; 100 %: 20 arrivals, difference 2 -> 10 ms -> +50 % (shorter latency shown positive).
 * Line B, point "it": 0 % and 50 %: 10 visits in 100 ms each -> +0 %, slope 0.
 *
 * One source, two programs: built with CAUSAL_MAKE_DB it writes the database (it links the
 * static writer); without, it runs that program first (argv[1]) and reads through
 * libomniprof-output alone — one copy of the common code per process. */
#include <math.h>
#include <sys/stat.h>

#include "../db/db_test.h"
#include "omniprof/causal.h"
#include "output/profile_causal.h"

#ifdef CAUSAL_MAKE_DB
static uint64_t g_index;

static void experiment(op_db_writer *w, const char *line, uint32_t speedup, uint64_t duration_ms,
                       const char *point, uint64_t delta, int latency, int64_t difference)
{
    omniprof_causal_experiment_record_t e;
    memset(&e, 0, sizeof e);
    e.size = sizeof e;
    e.kind = OMNIPROF_BUFFER_TRACING_CAUSAL_EXPERIMENT;
    e.operation = OMNIPROF_CAUSAL_EXPERIMENT_LINE;
    e.index = g_index;
    e.start_timestamp = 1000000000ull * (g_index + 1);
    e.end_timestamp = e.start_timestamp + duration_ms * 1000000ull + 7; /* 7 ns of delay */
    e.delay_ns = 7;
    e.duration_ns = duration_ms * 1000000ull;
    e.selected_samples = 3;
    e.sample_period_ns = 1000000;
    e.speedup_percent = speedup;
    e.selected = line;
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_CAUSAL_EXPERIMENT, &e) == 1);
    omniprof_causal_progress_record_t p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.kind = OMNIPROF_BUFFER_TRACING_CAUSAL_PROGRESS;
    p.operation = latency ? OMNIPROF_CAUSAL_PROGRESS_LATENCY : OMNIPROF_CAUSAL_PROGRESS_THROUGHPUT;
    p.experiment_index = g_index;
    p.timestamp = e.end_timestamp;
    p.name = point;
    p.delta = delta;
    if (latency) {
        p.arrivals = delta;
        p.departures = delta;
        p.difference = difference;
    }
    CHECK(append1(w, OMNIPROF_BUFFER_TRACING_CAUSAL_PROGRESS, &p) == 1);
    g_index++;
}
#endif

#ifndef CAUSAL_MAKE_DB
/* The number after `"key": ` that follows `anchor` in `text` (NAN when absent). */
static double json_number_after(const char *text, const char *anchor, const char *key)
{
    const char *a = anchor ? strstr(text, anchor) : text;
    if (!a) return NAN;
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(a, k);
    return p ? strtod(p + strlen(k), NULL) : NAN;
}

static int count_lines(const char *path, const char *prefix)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, prefix, strlen(prefix)) == 0) n++;
    fclose(f);
    return n;
}
#endif

#ifdef CAUSAL_MAKE_DB
int main(int argc, char **argv)
{
    char err[1024] = "";
    if (argc < 2) return 2;
    op_db_process_info info = test_process_info();
    OMNIPROF_OPTS(op_db_writer_options, opts, .flush_interval_ms = 20);
    op_db_writer *w = op_db_writer_open(argv[1], &info, &opts, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return CHECK_DONE();
    experiment(w, "/src/a.c:10", 0, 100, "it", 10, 0, 0);
    experiment(w, "/src/a.c:10", 0, 120, "it", 12, 0, 0);
    experiment(w, "/src/a.c:10", 50, 100, "it", 15, 0, 0);
    experiment(w, "/src/a.c:10", 50, 100, "it", 16, 0, 0);
    experiment(w, "/src/a.c:10", 100, 100, "it", 20, 0, 0);
    experiment(w, "/src/a.c:10", 0, 100, "lat", 10, 1, 2);
    experiment(w, "/src/a.c:10", 100, 100, "lat", 20, 1, 2);
    experiment(w, "/src/b.c:20", 0, 100, "it", 10, 0, 0);
    experiment(w, "/src/b.c:20", 50, 100, "it", 10, 0, 0);
    CHECK(op_db_writer_close(w) == 0);
    return CHECK_DONE();
}
#else
int main(int argc, char **argv)
{
    char dir[512], path[600], coz[600], err[1024] = "", cmd[1400];
    if (argc < 2) return 2;
    test_tmpdir(dir, sizeof dir, "causal");
    snprintf(path, sizeof path, "%s/c_results.db", dir);
    snprintf(coz, sizeof coz, "%s/profile.coz", dir);
    snprintf(cmd, sizeof cmd, "'%s' '%s'", argv[1], path);
    CHECK(system(cmd) == 0);
    const char *in[1] = {path};
    CHECK(op_causal_has_experiments(in, 1) == 1);

    /* the ranking, as JSON */
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    op_causal_summary_options o = {.size = sizeof o, .json = 1};
    CHECK(op_causal_summary_write(in, 1, mem, &o, err, sizeof err) == 0);
    fclose(mem);
    CHECK(json_number_after(buf, NULL, "experiments") == 9);
    const char *first = strstr(buf, "\"line\": ");
    CHECK(first && strncmp(first, "\"line\": \"/src/a.c:10\"", 21) == 0); /* rank 1 */
    const char *a_it = "\"line\": \"/src/a.c:10\", \"progress_point\": \"it\"";
    CHECK_NEAR(json_number_after(buf, a_it, "slope"), 0.541935, 1e-4);
    CHECK_NEAR(json_number_after(buf, a_it, "max_speedup"), 0.5, 1e-4);
    CHECK_NEAR(json_number_after(buf, a_it, "experiments"), 5, 1e-4);
    const char *a50 = strstr(buf, a_it) ? strstr(strstr(buf, a_it), "\"line_speedup\": 0.50") : NULL;
    CHECK(a50 != NULL);
    if (a50) {
        CHECK_NEAR(json_number_after(a50, NULL, "program_speedup"), (10.0 - 200.0 / 31.0) / 10.0, 1e-4);
        CHECK_NEAR(json_number_after(a50, NULL, "spread"), 0.0294628, 1e-4);
        CHECK_NEAR(json_number_after(a50, NULL, "experiments"), 2, 1e-4);
        CHECK_NEAR(json_number_after(a50, NULL, "visits"), 31, 1e-4);
    }
    const char *a_lat = "\"line\": \"/src/a.c:10\", \"progress_point\": \"lat\", \"type\": \"latency\"";
    CHECK(strstr(buf, a_lat) != NULL);
    CHECK_NEAR(json_number_after(buf, a_lat, "max_speedup"), 0.5, 1e-4);
    const char *b_it = "\"line\": \"/src/b.c:20\", \"progress_point\": \"it\"";
    CHECK_NEAR(json_number_after(buf, b_it, "slope"), 0.0, 1e-4);
    if (g_failures) fprintf(stderr, "%s\n", buf);
    free(buf);

    /* the ranking, as text: the same order */
    buf = NULL;
    mem = open_memstream(&buf, &len);
    CHECK(op_causal_summary_write(in, 1, mem, NULL, err, sizeof err) == 0);
    fclose(mem);
    CHECK(strstr(buf, "9 experiments") != NULL);
    CHECK(strstr(buf, "/src/a.c:10") && strstr(buf, "/src/b.c:20") && strstr(buf, "/src/a.c:10") < strstr(buf, "/src/b.c:20"));
    CHECK(strstr(buf, "+35.5%") != NULL && strstr(buf, "2.9%") != NULL);
    free(buf);

    /* the Coz profile: appended, never truncated */
    uint64_t n = 0;
    CHECK(op_causal_coz_append(in, 1, coz, &n, err, sizeof err) == 0);
    CHECK_EQ_INT(n, 9);
    CHECK_EQ_INT(count_lines(coz, "experiment\t"), 9);
    CHECK_EQ_INT(count_lines(coz, "throughput-point\tname=it\tdelta="), 7);
    CHECK_EQ_INT(count_lines(coz, "latency-point\tname=lat\tarrivals=10\tdepartures=10\tdifference=2"), 1);
    CHECK_EQ_INT(count_lines(coz, "experiment\tselected=/src/a.c:10\tspeedup=0.50\tduration=100000000\tselected-samples=3"), 2);
    CHECK_EQ_INT(count_lines(coz, "startup\ttime="), 1);
    CHECK_EQ_INT(count_lines(coz, "runtime\ttime="), 1);
    CHECK(op_causal_coz_append(in, 1, coz, &n, err, sizeof err) == 0);
    CHECK_EQ_INT(count_lines(coz, "experiment\t"), 18);

    /* bad input: a directory is not a profile; a missing database is named */
    CHECK(op_causal_coz_append(in, 1, dir, &n, err, sizeof err) != 0);
    CHECK(strstr(err, dir) != NULL);
    char missing[700];
    snprintf(missing, sizeof missing, "%s/none.db", dir);
    const char *bad[1] = {missing};
    err[0] = '\0';
    CHECK(op_causal_summary_write(bad, 1, stdout, NULL, err, sizeof err) != 0);
    CHECK(strstr(err, "none.db") != NULL);
    CHECK(op_causal_has_experiments(bad, 1) == 0);

    test_rmtree(dir);
    return CHECK_DONE();
}
#endif
