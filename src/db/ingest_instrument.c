/* ingest_instrument.c — FUNCTION_CALL records (include/omniprof/instrument.h) into rows: one
 * rocpd_region per instrumented call, named after the function; its rocpd_event's extdata
 * holds what the region row cannot: {"exclusive_ns", "depth", "address", "unfinished"?,
 * "module"} (docs/database.md, "Instrumented functions"). */
#include <stdio.h>
#include <string.h>

#include "db/writer_internal.h"

int op_db_ingest_function_call(op_db_writer *w, const omniprof_function_call_record_t *r, uint64_t psize)
{
    (void)psize;
    const char *fname = op_db_str(w, &r->function), *module = op_db_str(w, &r->module);
    int64_t thread = op_db_thread_row(w, r->thread_id);
    int64_t name = op_db_intern(w, fname && *fname ? fname : "<unknown>");
    if (thread < 0 || name < 0) return -1;
    size_t at = (size_t)snprintf(w->scratch, w->scratch_len,
                                 "{\"exclusive_ns\":%llu,\"depth\":%u,\"address\":\"0x%llx\",%s\"module\":\"",
                                 (unsigned long long)r->exclusive_ns, r->depth, (unsigned long long)r->address,
                                 (r->flags & OMNIPROF_FUNCTION_CALL_FLAG_UNFINISHED) ? "\"unfinished\":1," : "");
    at = op_db_json_escape(w, at, module ? module : "", module ? strlen(module) : 0);
    at += (size_t)snprintf(w->scratch + at, w->scratch_len - at, "\"}");
    int64_t ev = op_db_insert_event(w, r->kind, 0, 0, 0, w->scratch, at);
    if (ev < 0) return -1;
    /* a region needs start < end: a call shorter than the clock's step keeps 1 ns */
    uint64_t end = r->end_timestamp > r->start_timestamp ? r->end_timestamp : r->start_timestamp + 1;
    return op_db_insert_region_or_sample(w, r->kind, thread, r->start_timestamp, end, name, ev);
}
