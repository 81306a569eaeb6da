/* ingest_causal.c — causal-profiling records → rows (docs/causal.md, docs/database.md):
 * CAUSAL_EXPERIMENT → omniprof_causal_experiment, CAUSAL_PROGRESS → omniprof_causal_progress.
 * Rows keep the producer's experiment index, so a progress row names its experiment by
 * (pid, experiment); the speedup is stored as Coz writes it, a fraction (0..1). */
#include "db/writer_internal.h"

static const char *experiment_mode(int32_t op)
{
    switch (op) {
    case OMNIPROF_CAUSAL_EXPERIMENT_FUNCTION: return "function";
    case OMNIPROF_CAUSAL_EXPERIMENT_END_TO_END: return "end_to_end";
    default: return "line";
    }
}

int op_db_ingest_causal_experiment(op_db_writer *w, const omniprof_causal_experiment_record_t *r, uint64_t psize)
{
    (void)psize;
    const char *selected = op_db_str(w, &r->selected);
    sqlite3_stmt *s = w->st[ST_OP_CAUSAL_EXPERIMENT];
    sqlite3_bind_int64(s, 1, (int64_t)r->index);
    sqlite3_bind_text(s, 2, experiment_mode(r->operation), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, selected ? selected : "", -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 4, (r->speedup_percent > 100 ? 100 : r->speedup_percent) / 100.0);
    sqlite3_bind_int64(s, 5, (int64_t)r->start_timestamp);
    sqlite3_bind_int64(s, 6, (int64_t)r->end_timestamp);
    sqlite3_bind_int64(s, 7, (int64_t)r->duration_ns);
    sqlite3_bind_int64(s, 8, (int64_t)r->delay_ns);
    sqlite3_bind_int64(s, 9, (int64_t)r->selected_samples);
    sqlite3_bind_int64(s, 10, (int64_t)r->sample_period_ns);
    return op_db_step(w, ST_OP_CAUSAL_EXPERIMENT, "inserting a causal experiment");
}

int op_db_ingest_causal_progress(op_db_writer *w, const omniprof_causal_progress_record_t *r, uint64_t psize)
{
    (void)psize;
    const char *name = op_db_str(w, &r->name);
    sqlite3_stmt *s = w->st[ST_OP_CAUSAL_PROGRESS];
    sqlite3_bind_int64(s, 1, (int64_t)r->experiment_index);
    sqlite3_bind_text(s, 2, name ? name : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, r->operation == OMNIPROF_CAUSAL_PROGRESS_LATENCY ? "latency" : "throughput", -1,
                      SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, (int64_t)r->delta);
    sqlite3_bind_int64(s, 5, (int64_t)r->arrivals);
    sqlite3_bind_int64(s, 6, (int64_t)r->departures);
    sqlite3_bind_int64(s, 7, r->difference);
    return op_db_step(w, ST_OP_CAUSAL_PROGRESS, "inserting a causal progress point");
}
