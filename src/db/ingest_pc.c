/* ingest_pc.c — record -> rows for GPU PC samples (PC_SAMPLE, include/omniprof/pc_sampling.h):
 * one omniprof_pc_sample row per record, names interned in rocpd_string (the kernel by the
 * name it is shown by, as in rocpd_kernel_dispatch). Named in include/omniprof/kinds.def;
 * returns 0, or -1 when the writer turned off. */
#include "db/writer_internal.h"

static void bind_string(op_db_writer *w, sqlite3_stmt *s, int i, const char *text)
{
    op_db_bind_id_or_null(s, i, text && *text ? op_db_intern(w, text) : 0);
}

int op_db_ingest_pc_sample(op_db_writer *w, const omniprof_pc_sample_record_t *r, uint64_t psize)
{
    (void)psize;
    const char *mangled = op_db_str(w, &r->kernel_name);
    const char *display = op_db_kernel_display_name(w, mangled, op_db_str(w, &r->kernel_name_demangled));
    int64_t agent = op_db_agent_row(w, r->agent_id.handle);
    sqlite3_stmt *s = w->st[ST_PC_SAMPLE];
    op_db_bind_id_or_null(s, 1, agent);
    sqlite3_bind_int64(s, 2, (int64_t)r->timestamp);
    sqlite3_bind_int64(s, 3, r->operation);
    sqlite3_bind_int64(s, 4, (int64_t)r->correlation_id.internal);
    sqlite3_bind_int64(s, 5, (int64_t)r->dispatch_id);
    sqlite3_bind_int64(s, 6, (int64_t)r->kernel_id);
    bind_string(w, s, 7, display);
    sqlite3_bind_int64(s, 8, (int64_t)r->code_object_id);
    sqlite3_bind_int64(s, 9, (int64_t)r->pc_offset);
    bind_string(w, s, 10, op_db_str(w, &r->instruction));
    bind_string(w, s, 11, op_db_str(w, &r->source_file));
    sqlite3_bind_int64(s, 12, r->source_line);
    bind_string(w, s, 13, op_db_str(w, &r->stall_reason));
    sqlite3_bind_int64(s, 14, r->samples);
    sqlite3_bind_int64(s, 15, r->pc_samples);
    return op_db_step(w, ST_PC_SAMPLE, "inserting a PC sample");
}
