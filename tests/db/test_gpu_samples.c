/* test_gpu_samples.c — db.gpu_samples: PC samples, SASS metrics and PM samples written by the
 * real writer come back through the views (pc_samples, sass_metrics, pm_samples) with every
 * column of their code site, and through the reader's GPU sampling aggregates
 * (op_rd_gpu_rows: PC stalls and PC lines per kernel). */
#include "db/reader.h"
#include "omniprof/pc_sampling.h"
#include "omniprof/pm_sampling.h"
#include "omniprof/sass_metrics.h"
#include "db_test.h"

typedef struct rows {
    int n;
    char text[4][160];
    double v0[4];
} rows;

static int keep_row(const op_rd_gpu_row *r, void *arg)
{
    rows *s = arg;
    if (s->n < 4) {
        snprintf(s->text[s->n], sizeof s->text[0], "%s|%s|%s|%lld", r->a, r->b, r->c, (long long)r->line);
        s->v0[s->n] = r->v[0];
    }
    s->n++;
    return 0;
}

int main(void)
{
    char dir[512], path[600], err[512];
    test_tmpdir(dir, sizeof dir, "gpusamples");
    snprintf(path, sizeof path, "%s/g.db", dir);
    op_db_process_info info = test_process_info();
    op_db_writer *w = op_db_writer_open(path, &info, NULL, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return CHECK_DONE();
    omniprof_pc_sample_record_t pc = {.size = sizeof pc, .kind = OMNIPROF_BUFFER_TRACING_PC_SAMPLE,
                                      .timestamp = 5000, .dispatch_id = 3, .kernel_id = 9,
                                      .kernel_name = "_Z4axpyPf", .kernel_name_demangled = "axpy(float*)",
                                      .stall_reason = "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
                                      .instruction = "LDG.E R2, [R2]", .source_file = "axpy.cu",
                                      .code_object_id = 77, .pc_offset = 0x90, .source_line = 12,
                                      .samples = 40, .pc_samples = 50};
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_SAMPLING, pc.kind, &pc) == 1);
    pc.stall_reason = "smsp__pcsamp_warps_issue_stalled_selected";
    pc.samples = 10;
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_SAMPLING, pc.kind, &pc) == 1);
    omniprof_sass_metric_record_t sm = {.size = sizeof sm, .kind = OMNIPROF_BUFFER_TRACING_SASS_METRIC,
                                        .timestamp = 6000, .kernel_id = 9, .kernel_name = "_Z4axpyPf",
                                        .kernel_name_demangled = "axpy(float*)",
                                        .metric_name = "smsp__sass_inst_executed", .instruction = "FFMA R1, R2, R3",
                                        .source_file = "axpy.cu", .code_object_id = 77, .pc_offset = 0xa0,
                                        .value = 1234, .source_line = 13};
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_SAMPLING, sm.kind, &sm) == 1);
    omniprof_pm_sample_record_t pm = {.size = sizeof pm, .kind = OMNIPROF_BUFFER_TRACING_PM_SAMPLE,
                                      .start_timestamp = 7000, .end_timestamp = 7100,
                                      .metric_name = "dram__bytes_read.sum", .value = 4096.0, .interval = 100};
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_SAMPLING, pm.kind, &pm) == 1);
    CHECK(op_db_writer_close(w) == 0);

    sqlite3 *r = test_open_ro(path);
    CHECK_EQ_STR(q_text(r, "SELECT kernel || '|' || code_object_id || '|' || pc_offset || '|' || instruction || '|' || "
                           "file || '|' || line || '|' || samples || '|' || pc_samples || '|' || dispatch_id "
                           "FROM pc_samples ORDER BY samples DESC LIMIT 1"),
                 "axpy(float*)|77|144|LDG.E R2, [R2]|axpy.cu|12|40|50|3");
    CHECK_EQ_STR(q_text(r, "SELECT kernel || '|' || kernel_id || '|' || code_object_id || '|' || pc_offset || '|' || "
                           "instruction || '|' || file || '|' || line || '|' || metric || '|' || value FROM sass_metrics"),
                 "axpy(float*)|9|77|160|FFMA R1, R2, R3|axpy.cu|13|smsp__sass_inst_executed|1234");
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM pm_samples WHERE value = 4096.0 AND start = 7000 AND metric = 'dram__bytes_read.sum'"), 1);
    sqlite3_close(r);

    op_src *src = NULL;
    CHECK(op_src_open(path, &src, err, sizeof err) == OP_RD_OK);
    if (src) {
        rows st = {0}, ln = {0};
        CHECK(op_rd_gpu_rows(src, &src->sets[0], OP_RD_GPU_PC_STALLS, NULL, keep_row, &st, err, sizeof err) == 0);
        CHECK_EQ_INT(st.n, 2);
        int hi = st.v0[0] < st.v0[1];
        CHECK_EQ_STR(st.text[hi], "axpy(float*)|smsp__pcsamp_warps_issue_stalled_long_scoreboard||0");
        CHECK(st.v0[hi] == 40.0);
        CHECK(op_rd_gpu_rows(src, &src->sets[0], OP_RD_GPU_PC_LINES, NULL, keep_row, &ln, err, sizeof err) == 0);
        CHECK_EQ_INT(ln.n, 1);
        CHECK_EQ_STR(ln.text[0], "axpy(float*)||axpy.cu|12");
        CHECK(ln.v0[0] == 50.0);
        op_src_close(src);
    }
    test_rmtree(dir);
    return CHECK_DONE();
}
