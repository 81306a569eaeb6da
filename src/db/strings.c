/* strings.c — the database writer's strings and shared rows (ingest thread only): interning
 * into rocpd_string through a direct-mapped cache, operation and kind names, kernel display
 * names, the rows and caches that many kinds share (threads, streams, agents, instant tracks,
 * stack nodes). The caches of rows are common/u64map.h maps; escaping is common/escape.h's. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/kinds.h"
#include "common/op_names.h"
#include "common/text.h"
#include "db/writer_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Names                                                                                       */

/* The category name of a buffer kind: the tool's (the SDK's names), else kinds.def's. */
const char *op_db_kind_name(const op_db_writer *w, uint32_t kind)
{
    const char *n = w->opts.kind_name ? w->opts.kind_name(kind, w->opts.user) : NULL;
    if (n) return n;
    if (kind == OMNIPROF_BUFFER_TRACING_NONE) return "NONE";
    n = op_buffer_kind_name(kind);
    return n ? n : "UNKNOWN";
}

const char *op_db_mem_kind_name(uint32_t k) { return op_memory_kind_name(k); }

/* ------------------------------------------------------------------------------------------ */
/* Interning and shared rows                                                                   */

void op_db_bind_text(sqlite3_stmt *st, int i, const char *s, int n, sqlite3_destructor_type d)
{
    if (!s) {
        sqlite3_bind_null(st, i);
        return;
    }
    size_t len = n < 0 ? strlen(s) : (size_t)n;
    if (op_text_is_clean(s, len)) {
        sqlite3_bind_text(st, i, s, (int)len, d);
        return;
    }
    char *t = op_malloc(OP_TEXT_ESCAPED_MAX(len) + 1);
    if (!t) { /* out of memory: the text is lost, never stored invalid */
        sqlite3_bind_text(st, i, "", 0, SQLITE_STATIC);
        return;
    }
    sqlite3_bind_text(st, i, t, (int)op_text_escape(t, s, len), op_free);
}

size_t op_db_json_text(char *dst, size_t at, size_t cap, const char *s, size_t n)
{
    if (at + 8 >= cap) return at;
    if (op_text_is_clean(s, n)) return at + op_json_escape(dst + at, cap - 8 - at, s, n, NULL);
    char *t = op_malloc(OP_TEXT_ESCAPED_MAX(n) + 1);
    if (!t) return at;
    at += op_json_escape(dst + at, cap - 8 - at, t, op_text_escape(t, s, n), NULL);
    op_free(t);
    return at;
}

/* The rocpd_string id of s[0..n): cache, then database, then insert. -1 on failure. The cache
 * holds the bytes as given; the table their text (op_db_bind_text). */
int64_t op_db_intern_n(op_db_writer *w, const char *s, size_t n)
{
    uint64_t h = op_hash_bytes(s, n);
    strcache_entry *e = &w->strcache[h & (OP_DB_STRCACHE - 1)];
    if (e->hash == h && e->len == n && e->id > 0 && (n == 0 || (e->text && memcmp(e->text, s, n) == 0)))
        return e->id;
    int64_t id = -1;
    sqlite3_stmt *sel = w->st[ST_STRING_SEL];
    op_db_bind_text(sel, 1, s, (int)n, SQLITE_STATIC);
    int rc = sqlite3_step(sel);
    if (rc == SQLITE_ROW) id = sqlite3_column_int64(sel, 0);
    sqlite3_reset(sel);
    sqlite3_clear_bindings(sel);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        op_db_writer_fail(w, "looking up a string", rc);
        return -1;
    }
    if (id < 0) {
        op_db_bind_text(w->st[ST_STRING], 1, s, (int)n, SQLITE_STATIC);
        if (op_db_step(w, ST_STRING, "inserting a string") != 0) return -1;
        id = op_db_last_id(w);
    }
    if (n <= OP_DB_STRCACHE_MAXLEN) {
        char *copy = n ? op_malloc(n) : NULL;
        if (n == 0 || copy) {
            op_free(e->text);
            if (copy) memcpy(copy, s, n);
            e->text = copy;
            e->hash = h;
            e->len = (uint32_t)n;
            e->id = id;
        }
    }
    return id;
}

int64_t op_db_intern(op_db_writer *w, const char *s)
{
    return op_db_intern_n(w, s ? s : "", s ? strnlen(s, OP_DB_MAX_STRING) : 0);
}

int64_t op_db_remember(op_db_writer *w, op_u64map *m, uint64_t key, int64_t id, const char *what)
{
    if (op_db_map_put(m, key, id) == 0) return id;
    char msg[96];
    snprintf(msg, sizeof msg, "caching %s (out of memory)", what);
    op_db_writer_fail(w, msg, SQLITE_NOMEM);
    return -1;
}

/* The string id of an operation's name (cached per (kind, operation)). */
int64_t op_db_op_name_id(op_db_writer *w, uint32_t kind, int32_t op)
{
    uint64_t key = ((uint64_t)kind << 32) | (uint32_t)op;
    int64_t id;
    if (op_db_map_get(&w->opnames, key, &id)) return id;
    const char *n = w->opts.operation_name ? w->opts.operation_name(kind, op, w->opts.user) : NULL;
    char buf[96];
    if (!n) {
        n = op_fixed_operation_name(kind, op); /* the names the SDK and the backends give (common/op_names.c) */
        if (!n) {
            snprintf(buf, sizeof buf, "%s_%d", op_db_kind_name(w, kind), (int)op);
            n = buf;
        }
    }
    id = op_db_intern(w, n);
    if (id > 0 && op_db_remember(w, &w->opnames, key, id, "an operation name") < 0) return -1;
    return id;
}

/* rocpd_info_thread row of an OS thread, created at first sight (W2). Its id is the OS tid, as in
 * rocprofv3's databases (AMD's views join threads without the guid, so ids must not collide
 * across the processes of a merged database). tid 0 — GPU work whose launching thread is unknown
 * (CUPTI reported no launching call) — gets one row per process: id OP_DB_NO_THREAD_ID + pid,
 * tid 0, named "(unknown launching thread)", so that every GPU row has a thread (AMD's views
 * join it INNER) and no real thread is blamed for it. */
int64_t op_db_thread_row(op_db_writer *w, uint64_t tid)
{
    int64_t id;
    if (op_db_map_get(&w->threads, tid, &id)) return id;
    id = tid ? (int64_t)tid : OP_DB_NO_THREAD_ID + w->pid;
    sqlite3_stmt *s = w->st[ST_THREAD];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int64(s, 2, w->ppid);
    sqlite3_bind_int64(s, 3, (int64_t)tid);
    if (tid) sqlite3_bind_null(s, 4); else sqlite3_bind_text(s, 4, "(unknown launching thread)", -1, SQLITE_STATIC);
    if (op_db_step(w, ST_THREAD, "inserting a thread") != 0) return -1;
    return op_db_remember(w, &w->threads, tid, id, "a thread");
}

int64_t op_db_stream_row(op_db_writer *w, uint64_t handle)
{
    int64_t id;
    if (op_db_map_get(&w->streams, handle, &id)) return id;
    char name[48];
    snprintf(name, sizeof name, "stream %llu", (unsigned long long)handle);
    sqlite3_stmt *s = w->st[ST_STREAM];
    sqlite3_bind_text(s, 1, name, -1, SQLITE_TRANSIENT);
    snprintf(name, sizeof name, "{\"handle\":%llu}", (unsigned long long)handle);
    sqlite3_bind_text(s, 2, name, -1, SQLITE_TRANSIENT);
    if (op_db_step(w, ST_STREAM, "inserting a stream") != 0) return -1;
    return op_db_remember(w, &w->streams, handle, op_db_last_id(w), "a stream");
}

int64_t op_db_queue_row(op_db_writer *w, uint64_t stream_handle, int64_t stream_row, int64_t agent_row)
{
    /* work with no device of its own (a host-to-host copy) joins its stream's device queue */
    if (!agent_row) op_db_map_get(&w->stream_agents, stream_handle, &agent_row);
    uint64_t key = op_hash64(stream_handle) + (uint64_t)agent_row * 0x9e3779b97f4a7c15ull;
    int64_t id;
    if (op_db_map_get(&w->queues, key, &id)) return id;
    if (agent_row && op_db_map_put(&w->stream_agents, stream_handle, agent_row) != 0) {
        op_db_writer_fail(w, "keeping a stream's agent", SQLITE_NOMEM);
        return -1;
    }
    char name[48];
    if (stream_handle == OP_DB_UNKNOWN_STREAM)
        snprintf(name, sizeof name, "(unknown stream)");
    else
        snprintf(name, sizeof name, "stream %llu", (unsigned long long)stream_handle);
    sqlite3_stmt *s = w->st[ST_QUEUE];
    sqlite3_bind_text(s, 1, name, -1, SQLITE_TRANSIENT);
    char ext[128]; /* not w->scratch: callers hold a record's extdata there */
    int n = snprintf(ext, sizeof ext, "{\"stream_id\":%lld,\"agent_id\":%lld", (long long)stream_row, (long long)agent_row);
    if (stream_handle != OP_DB_UNKNOWN_STREAM)
        n += snprintf(ext + n, sizeof ext - (size_t)n, ",\"handle\":%llu", (unsigned long long)stream_handle);
    ext[n++] = '}';
    sqlite3_bind_text(s, 2, ext, n, SQLITE_TRANSIENT);
    if (op_db_step(w, ST_QUEUE, "inserting a queue") != 0) return -1;
    return op_db_remember(w, &w->queues, key, op_db_last_id(w), "a queue");
}

/* Agent row id, or 0 (bound as NULL) when the agent was never added. */
int64_t op_db_agent_row(op_db_writer *w, uint64_t handle)
{
    int64_t id;
    return op_db_map_get(&w->agents, handle, &id) ? id : 0;
}

void op_db_bind_id_or_null(sqlite3_stmt *s, int i, int64_t id)
{
    if (id > 0)
        sqlite3_bind_int64(s, i, id);
    else
        sqlite3_bind_null(s, i);
}

/* Track for instants of (thread row, kind, name): named by name_id, or by the kind's category
 * name when name_id is 0. A zero-length API call lands on a track named by its function, so the
 * samples view (whose name is the track's) keeps the function's name. */
int64_t op_db_instant_track(op_db_writer *w, int64_t thread, uint32_t kind, int64_t name_id)
{
    uint64_t key = op_hash64(((uint64_t)thread << 8) | (kind & 0xff)) + (uint64_t)name_id * 0x9e3779b97f4a7c15ull;
    int64_t id;
    if (op_db_map_get(&w->tracks, key, &id)) return id;
    if (!name_id) name_id = w->cat_id[kind < OMNIPROF_BUFFER_TRACING_LAST ? kind : 0];
    sqlite3_stmt *s = w->st[ST_TRACK];
    sqlite3_bind_int64(s, 1, thread);
    sqlite3_bind_int64(s, 2, name_id);
    sqlite3_bind_text(s, 3, "{}", 2, SQLITE_STATIC);
    if (op_db_step(w, ST_TRACK, "inserting a track") != 0) return -1;
    return op_db_remember(w, &w->tracks, key, op_db_last_id(w), "a track");
}

int64_t op_db_stack_node(op_db_writer *w, int64_t parent, uint64_t address, int depth)
{
    uint64_t h = op_hash64((uint64_t)parent * 0x9e3779b97f4a7c15ull ^ address);
    stack_entry *e = &w->stackcache[h & (OP_DB_STACKCACHE - 1)];
    if (e->id > 0 && e->parent == parent && e->address == address) return e->id;
    int64_t id = -1;
    sqlite3_stmt *sel = w->st[ST_STACK_SEL];
    sqlite3_bind_int64(sel, 1, parent);
    sqlite3_bind_int64(sel, 2, (int64_t)address);
    int rc = sqlite3_step(sel);
    if (rc == SQLITE_ROW) id = sqlite3_column_int64(sel, 0);
    sqlite3_reset(sel);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        op_db_writer_fail(w, "looking up a stack node", rc);
        return -1;
    }
    if (id < 0) {
        sqlite3_stmt *s = w->st[ST_OP_STACK];
        sqlite3_bind_int64(s, 1, parent);
        sqlite3_bind_int64(s, 2, (int64_t)address);
        sqlite3_bind_int(s, 3, depth);
        if (op_db_step(w, ST_OP_STACK, "inserting a stack node") != 0) return -1;
        id = op_db_last_id(w);
    }
    e->parent = parent;
    e->address = address;
    e->id = id;
    return id;
}



/* ------------------------------------------------------------------------------------------ */
/* Kernel names (--mangled-kernels, --truncate-kernels)                                        */

/* "void ns::foo<int>(float*, int)" -> "ns::foo" into out[cap]: the return type and qualifiers
 * before the name, template arguments and the parameter list are dropped. The whole name when
 * nothing is left. */
static const char *truncate_kernel_name(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    int depth = 0;
    for (size_t i = 0; s[i] && o + 1 < cap; i++) {
        char c = s[i];
        if (c == '<') depth++;
        else if (c == '>' && depth > 0) depth--;
        else if (depth == 0 && c == '(') break;
        else if (depth == 0) {
            if (c == ' ') o = 0;
            else out[o++] = c;
        }
    }
    out[o] = '\0';
    return o ? out : s;
}

const char *op_db_kernel_display_name(op_db_writer *w, const char *mangled, const char *demangled)
{
    const char *base = !w->opts.kernel_names_mangled && demangled && *demangled ? demangled : mangled;
    if (!base) base = demangled ? demangled : "";
    return w->opts.truncate_kernel_names ? truncate_kernel_name(base, w->kname, OP_DB_MAX_STRING) : base;
}
