/* test_metrics.c — counter definitions (src/sdk/counters/metrics.c): the installed
 * share/omniprof/metrics.xml, OMNIPROF_METRICS_PATH and OMNIPROF_EXTRA_METRICS, appending and
 * replacing definitions (ids stay stable), and each load error with its position: XML that is
 * not well-formed, a wrong root, entries without a name, a global metric without expr, a bad
 * expression (caret under the column), reference cycles, a bad constant value. A failed load
 * changes nothing. Usage: test_metrics SHARE_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/settings.h"
#include "sdk/counters/metrics.h"

static int load(const char *xml, int append, char *err)
{
    return op_metrics_load_xml(xml, strlen(xml), "t.xml", append, err, 1024);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_metrics SHARE_DIR\n");
        return 2;
    }
    char err[1024];
    /* extra file through OMNIPROF_EXTRA_METRICS, built-in through OMNIPROF_METRICS_PATH (a dir) */
    char extra[] = "/tmp/omniprof-extra-XXXXXX";
    int fd = mkstemp(extra);
    const char *extra_xml = "<omniprof-metrics><global>"
                            "<metric name=\"MY_BW\" expr=\"DRAM_BYTES / gpu__time_duration.sum\" descr=\"mine\"/>"
                            "<metric name=\"DRAM_GBPS\" expr=\"1 + 1\" descr=\"overridden\"/>"
                            "</global></omniprof-metrics>";
    CHECK(write(fd, extra_xml, strlen(extra_xml)) == (ssize_t)strlen(extra_xml));
    close(fd);
    setenv("OMNIPROF_METRICS_PATH", argv[1], 1);
    setenv("OMNIPROF_EXTRA_METRICS", extra, 1);
    op_settings_reset();

    op_metrics_lock();
    CHECK_EQ_INT(op_metrics_ensure_loaded(), 0);
    size_t count = op_metrics_count();
    CHECK(count > 800); /* 30 chips x ~30 base metrics + derived + constants */
    op_metric_def *d = op_metrics_find("GH100", "dram__bytes_read.sum");
    CHECK(d && !d->is_derived && !strcmp(d->chip, "GH100") && !strcmp(d->block, "dram") && !strcmp(d->unit, "byte"));
    CHECK(d && d->type == OMNIPROF_COUNTER_TYPE_COUNTER);
    d = op_metrics_find("GH100", "sm__throughput.avg.pct_of_peak_sustained_elapsed");
    CHECK(d && d->type == OMNIPROF_COUNTER_TYPE_THROUGHPUT);
    CHECK(op_metrics_find("NOCHIP", "dram__bytes_read.sum") == NULL);
    d = op_metrics_find("GH100", "DRAM_BYTES");
    CHECK(d && d->is_derived && !strcmp(d->expression, "DRAM_READ_BYTES + DRAM_WRITE_BYTES") && !*d->chip);
    CHECK(d && op_expr_num_names(d->expr) == 2);
    d = op_metrics_find(NULL, "MY_BW");
    CHECK(d && !strcmp(d->description, "mine"));
    d = op_metrics_find(NULL, "DRAM_GBPS");
    CHECK(d && !strcmp(d->expression, "1 + 1") && !strcmp(d->description, "overridden"));
    CHECK_STR_CONTAINS(d ? d->source : "", extra);
    /* constants: built-in (global, no value) and the GH100 block's offline values */
    d = op_metrics_find_exact("", "SM_COUNT");
    CHECK(d && d->is_constant && !d->has_value && d->origin == OP_METRIC_ORIGIN_BUILTIN);
    d = op_metrics_find_exact("GH100", "SM_COUNT");
    CHECK(d && d->is_constant && d->has_value && d->value == 132);
    d = op_metrics_find_exact("AD102", "WARP_SIZE");
    CHECK(d && d->has_value && d->value == 32);
    omniprof_agent_v0_t agent = {.cu_count = 114, .core_clock_khz = 1755000, .memory_bus_width_bits = 5120};
    double v = 0;
    CHECK(op_metrics_agent_constant("SM_COUNT", &agent, &v) == 0 && v == 114);
    CHECK(op_metrics_agent_constant("SM_CLOCK_HZ", &agent, &v) == 0 && v == 1755000000.0);
    CHECK(op_metrics_agent_constant("NOPE", &agent, &v) == -1);

    /* append: a replaced definition keeps its id */
    d = op_metrics_find(NULL, "MY_BW");
    uint64_t id = d ? d->id : 0;
    CHECK_EQ_INT(load("<omniprof-metrics><global><metric name=\"MY_BW\" expr=\"2*3\"/></global></omniprof-metrics>", 1,
                      err),
                 0);
    d = op_metrics_get(id);
    CHECK(d && !strcmp(d->name, "MY_BW") && !strcmp(d->expression, "2*3"));
    CHECK_EQ_INT(op_metrics_count(), count);
    /* <chip name=...> form and a new chip */
    CHECK_EQ_INT(load("<metrics><chip name=\"ZZ100\"><metric name=\"x__y.sum\" type=\"ratio\"/>"
                      "<constant name=\"SM_COUNT\" value=\"7\"/></chip></metrics>",
                      1, err),
                 0);
    d = op_metrics_find("ZZ100", "x__y.sum");
    CHECK(d && d->type == OMNIPROF_COUNTER_TYPE_RATIO);
    CHECK(op_metrics_find_exact("ZZ100", "SM_COUNT") && op_metrics_find_exact("ZZ100", "SM_COUNT")->value == 7);

    /* errors, each with its position; the registry is unchanged afterwards */
    size_t before = op_metrics_count();
    CHECK_EQ_INT(load("<omniprof-metrics><global>\n<metric name=\"A\" expr=\"1\">\n</global>", 1, err), -1);
    CHECK_STR_CONTAINS(err, "t.xml:3:");
    CHECK_STR_CONTAINS(err, "not well-formed XML");
    CHECK_EQ_INT(load("<counters/>", 1, err), -1);
    CHECK_STR_CONTAINS(err, "root element must be <omniprof-metrics> (found <counters>)");
    CHECK_EQ_INT(load("<metrics><global>\n<metric expr=\"1\"/></global></metrics>", 1, err), -1);
    CHECK_STR_CONTAINS(err, "t.xml:2: <metric> without a name attribute");
    CHECK_EQ_INT(load("<metrics><global><metric name=\"B\"/></global></metrics>", 1, err), -1);
    CHECK_STR_CONTAINS(err, "metric 'B' in <global> needs an expr attribute");
    CHECK_EQ_INT(load("<metrics>\n<global>\n<metric name=\"C\" expr=\"dram__bytes_read.sum * (2 +\"/></global></metrics>",
                      1, err),
                 -1);
    CHECK_STR_CONTAINS(err, "t.xml:3: metric 'C': bad expression: expression ends where a number, name or '(' was "
                            "expected at column 28");
    CHECK_STR_CONTAINS(err, "\n    dram__bytes_read.sum * (2 +\n                               ^");
    CHECK_EQ_INT(load("<metrics><global><metric name=\"P\" expr=\"Q + 1\"/><metric name=\"Q\" expr=\"R * 2\"/>"
                      "<metric name=\"R\" expr=\"P\"/></global></metrics>",
                      1, err),
                 -1);
    CHECK_STR_CONTAINS(err, "cycle: P -> Q -> R -> P");
    CHECK_EQ_INT(load("<metrics><global><metric name=\"S\" expr=\"S + 1\"/></global></metrics>", 1, err), -1);
    CHECK_STR_CONTAINS(err, "'S' (t.xml:1) refers to itself");
    /* a cycle through an already loaded metric */
    CHECK_EQ_INT(load("<metrics><global><metric name=\"DRAM_READ_BYTES\" expr=\"DRAM_BYTES\"/></global></metrics>", 1,
                      err),
                 -1);
    CHECK_STR_CONTAINS(err, "DRAM_READ_BYTES -> DRAM_BYTES -> DRAM_READ_BYTES");
    CHECK_EQ_INT(load("<metrics><GH100><constant name=\"SM_COUNT\" value=\"lots\"/></GH100></metrics>", 1, err), -1);
    CHECK_STR_CONTAINS(err, "value 'lots' is not a number");
    CHECK_EQ_INT(load("<metrics><global><counter name=\"X\"/></global></metrics>", 1, err), -1);
    CHECK_STR_CONTAINS(err, "unexpected <counter> in <global> (valid: <metric>, <constant>)");
    CHECK_EQ_INT(load("<metrics><chip><metric name=\"X\"/></chip></metrics>", 1, err), -1);
    CHECK_STR_CONTAINS(err, "<chip> without a name attribute");
    CHECK_EQ_INT(op_metrics_load_file("/nonexistent/metrics.xml", 1, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "/nonexistent/metrics.xml: cannot open metrics file");
    CHECK_EQ_INT(op_metrics_count(), before);
    d = op_metrics_find(NULL, "DRAM_READ_BYTES");
    CHECK(d && !strcmp(d->expression, "dram__bytes_read.sum")); /* unchanged */

    /* runtime definitions */
    d = op_metrics_define("RT", "MY_BW * 2", "runtime", err, sizeof err);
    CHECK(d && d->origin == OP_METRIC_ORIGIN_RUNTIME && d->is_derived);
    CHECK(op_metrics_define("RT2", "1 +", NULL, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "metric 'RT2': bad expression");
    CHECK(op_metrics_define("RT3", "RT3", NULL, err, sizeof err) == NULL);
    CHECK_STR_CONTAINS(err, "refers to itself");

    /* replace (not append): XML definitions go, their ids become stale; built-ins stay */
    d = op_metrics_find("GH100", "dram__bytes_read.sum");
    uint64_t old = d ? d->id : 0;
    CHECK_EQ_INT(load("<metrics><global><metric name=\"ONLY\" expr=\"1\"/></global></metrics>", 0, err), 0);
    CHECK(op_metrics_get(old) == NULL);
    CHECK(op_metrics_find("GH100", "dram__bytes_read.sum") == NULL);
    CHECK(op_metrics_find(NULL, "ONLY") != NULL);
    CHECK(op_metrics_find(NULL, "SM_COUNT") != NULL);
    CHECK(op_metrics_find(NULL, "RT") != NULL); /* runtime definitions are not XML */
    /* reloading the same name revives its id */
    CHECK_EQ_INT(load("<metrics><GH100><metric name=\"dram__bytes_read.sum\"/></GH100></metrics>", 1, err), 0);
    d = op_metrics_find("GH100", "dram__bytes_read.sum");
    CHECK(d && d->id == old);

    /* edit distance */
    CHECK_EQ_INT(op_metrics_edit_distance("kitten", "sitting", 10), 3);
    CHECK_EQ_INT(op_metrics_edit_distance("dram__bytes_read.sum", "dram__bytes_read.sum", 3), 0);
    CHECK_EQ_INT(op_metrics_edit_distance("dram__bytes_red.sum", "dram__bytes_read.sum", 3), 1);
    CHECK_EQ_INT(op_metrics_edit_distance("abc", "xyzxyz", 2), 3); /* above the limit: limit + 1 */
    CHECK_EQ_INT(op_metrics_edit_distance("", "abc", 5), 3);
    op_metrics_reset();
    op_metrics_unlock();
    unlink(extra);
    return CHECK_DONE();
}
