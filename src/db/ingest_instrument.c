/* ingest_instrument.c — FUNCTION_CALL records (include/omniprof/instrument.h) into rows: one
 * rocpd_region per instrumented call, named after the function; its rocpd_event's extdata
 * holds what the region row cannot: {"exclusive_ns", "depth", "address", "unfinished"?,
 * "module"} (docs/database.md, "Instrumented functions").
 *
 * One record per instrumented call, so this is the writer's hottest path under `omniprof
 * instrument` (issue 35 item 5): the extdata text is put together by hand (the printf family
 * was about 6 % of the writer's CPU) and the module's escaped JSON text is kept from the
 * previous record of the same module (per ingest thread: a writer owns its thread). */
#include <stdio.h>
#include <string.h>

#include "db/writer_internal.h"

static size_t put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return n;
}

static size_t put_dec(char *p, uint64_t v)
{
    char t[20];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) p[i] = t[n - 1 - i];
    return n;
}

static size_t put_hex(char *p, uint64_t v)
{
    char t[16];
    size_t n = 0;
    do {
        t[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    for (size_t i = 0; i < n; i++) p[i] = t[n - 1 - i];
    return n;
}

/* The last module seen by this ingest thread and its escaped text, when both fit. */
#define MODULE_CACHE 1024
static __thread char t_module[MODULE_CACHE], t_module_json[MODULE_CACHE];
static __thread size_t t_module_len = (size_t)-1, t_module_json_len;

int op_db_ingest_function_call(op_db_writer *w, const omniprof_function_call_record_t *r, uint64_t psize)
{
    (void)psize;
    const char *fname = op_db_str(w, &r->function), *module = op_db_str(w, &r->module);
    int64_t thread = op_db_thread_row(w, r->thread_id);
    int64_t name = op_db_intern(w, fname && *fname ? fname : "<unknown>");
    if (thread < 0 || name < 0) return -1;
    char *p = w->scratch; /* scratch_len >= OP_DB_MAX_STRING * 6 + 512: the fixed part fits */
    size_t at = put(p, "{\"exclusive_ns\":", 16);
    at += put_dec(p + at, r->exclusive_ns);
    at += put(p + at, ",\"depth\":", 9);
    at += put_dec(p + at, r->depth);
    at += put(p + at, ",\"address\":\"0x", 14);
    at += put_hex(p + at, r->address);
    at += put(p + at, "\",", 2);
    if (r->flags & OMNIPROF_FUNCTION_CALL_FLAG_UNFINISHED)
        at += put(p + at, "\"unfinished\":1,", 15);
    at += put(p + at, "\"module\":\"", 10);
    size_t mlen = module ? strlen(module) : 0;
    if (mlen == t_module_len && !memcmp(module, t_module, mlen)) {
        at += put(p + at, t_module_json, t_module_json_len);
    } else {
        size_t from = at;
        at = op_db_json_escape(w, at, module ? module : "", mlen);
        t_module_len = (size_t)-1;
        if (mlen < MODULE_CACHE && at - from < MODULE_CACHE) {
            memcpy(t_module, module ? module : "", mlen);
            memcpy(t_module_json, p + from, at - from);
            t_module_json_len = at - from;
            t_module_len = mlen;
        }
    }
    at += put(p + at, "\"}", 2);
    int64_t ev = op_db_insert_event(w, r->kind, 0, 0, 0, w->scratch, at);
    if (ev < 0) return -1;
    /* a region needs start < end: a call shorter than the clock's step keeps 1 ns */
    uint64_t end = r->end_timestamp > r->start_timestamp ? r->end_timestamp : r->start_timestamp + 1;
    return op_db_insert_region_or_sample(w, r->kind, thread, r->start_timestamp, end, name, ev);
}
