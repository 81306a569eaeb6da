/* writer_append.c — the producer side of the database writer: SDK records (and the writer's
 * own entries: agents, run cost, drops, back-pressure) -> the spool. One spool reservation per
 * call, a memcpy per record, and the strings its `const char *` fields point at copied beside
 * it (layout: writer_internal.h), so the ingest thread never reads the producer's memory.
 * Never waits on SQLite; takes only the spool lock (W4). Any number of threads at once. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/fd_guard.h"
#include "db/writer_internal.h"

/* Lists the `const char *` fields of a record: their offsets in the payload. Returns count.
 * The kind's STRINGS (kinds.def), then for an ARGS kind each argument's name and string value
 * (the first OP_DB_MAX_ARG_STRINGS arguments). */
static size_t rec_string_fields(uint32_t category, uint32_t kind, const void *payload, uint64_t psize,
                                uint32_t *offs)
{
    const op_kind_info *info = op_db_kind_info(category, kind);
    if (!info) return 0;
    size_t n = op_db_string_fields(category, kind, psize, offs);
    if (info->layout != OP_KIND_LAYOUT_ARGS || psize < info->payload_size) return n;
    const omniprof_buffer_tracing_api_record_t *r = payload;
    uint64_t max_args = (psize - sizeof *r) / sizeof(omniprof_arg_t);
    uint32_t na = r->num_args < max_args ? r->num_args : (uint32_t)max_args;
    if (na > OP_DB_MAX_ARG_STRINGS) na = OP_DB_MAX_ARG_STRINGS;
    for (uint32_t i = 0; i < na; i++) {
        size_t base = sizeof *r + i * sizeof(omniprof_arg_t);
        offs[n++] = (uint32_t)(base + offsetof(omniprof_arg_t, name));
        if (r->args[i].type == OMNIPROF_ARG_TYPE_STRING) offs[n++] = (uint32_t)(base + offsetof(omniprof_arg_t, value));
    }
    return n;
}

static inline uint64_t align8(uint64_t x) { return (x + 7) & ~(uint64_t)7; }

/* Bytes the record takes in the spool, or 0 when it is malformed. */
static uint64_t rec_spool_size(uint32_t category, uint32_t kind, const void *payload)
{
    if (!payload) return 0;
    uint64_t psize = *(const uint64_t *)payload;
    if (psize < 16 || psize > OP_DB_MAX_PAYLOAD) return 0;
    uint32_t offs[OP_DB_MAX_STRFIELDS];
    size_t nf = rec_string_fields(category, kind, payload, psize, offs);
    uint64_t total = sizeof(op_db_rec) + align8(psize);
    for (size_t i = 0; i < nf; i++) {
        const char *s = *(const char *const *)((const char *)payload + offs[i]);
        if (s) total += strnlen(s, OP_DB_MAX_STRING - 1) + 1;
    }
    return align8(total);
}

static void rec_spool_write(uint8_t *dst, uint64_t size, uint32_t category, uint32_t kind, const void *payload)
{
    uint64_t psize = *(const uint64_t *)payload;
    op_db_rec *rec = (op_db_rec *)dst;
    rec->len = (uint32_t)size;
    rec->category = category;
    rec->kind = kind;
    rec->reserved = 0;
    uint8_t *p = dst + sizeof *rec;
    memcpy(p, payload, psize);
    uint32_t offs[OP_DB_MAX_STRFIELDS];
    size_t nf = rec_string_fields(category, kind, payload, psize, offs);
    uint64_t at = align8(psize);
    for (size_t i = 0; i < nf; i++) {
        const char *s = *(const char *const *)((const char *)payload + offs[i]);
        uint64_t off = 0;
        if (s) {
            size_t n = strnlen(s, OP_DB_MAX_STRING - 1);
            memcpy(p + at, s, n);
            p[at + n] = 0;
            off = at;
            at += n + 1;
        }
        memcpy(p + offs[i], &off, sizeof off);
    }
    /* ARGS kinds: pointers of the arguments beyond those copied are cleared. */
    const op_kind_info *info = op_db_kind_info(category, kind);
    if (info && info->layout == OP_KIND_LAYOUT_ARGS && psize >= info->payload_size) {
        omniprof_buffer_tracing_api_record_t *r = (omniprof_buffer_tracing_api_record_t *)p;
        uint64_t max_args = (psize - sizeof *r) / sizeof(omniprof_arg_t);
        uint32_t na = r->num_args < max_args ? r->num_args : (uint32_t)max_args;
        for (uint32_t i = OP_DB_MAX_ARG_STRINGS; i < na; i++) {
            r->args[i].name = NULL;
            if (r->args[i].type == OMNIPROF_ARG_TYPE_STRING) r->args[i].value.str = NULL;
        }
    }
    if (at < size - sizeof *rec) memset(p + at, 0, size - sizeof *rec - at);
}

void op_db_wake_ingest(op_db_writer *w)
{
    uint64_t one = 1;
    ssize_t r = op_fd_write_checked(w->efd, &one, sizeof one, true);
    (void)r;
}

/* Core of append: items given as parallel (category, kind, payload). */
#define APPEND_GROUP 256
typedef struct append_item {
    uint32_t category, kind;
    const void *payload;
} append_item;

static int append_items(op_db_writer *w, const append_item *items, size_t n)
{
    if (op_db_failed(w) || atomic_load_explicit(&w->stop, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&w->n_dropped, n, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->n_drop_off, n, memory_order_relaxed);
        return 0;
    }
    uint32_t sizes[APPEND_GROUP];
    const append_item *valid[APPEND_GROUP];
    size_t accepted = 0, i = 0;
    int woke = 0;
    while (i < n) {
        size_t m = 0;
        while (i < n && m < APPEND_GROUP) {
            uint64_t sz = rec_spool_size(items[i].category, items[i].kind, items[i].payload);
            if (sz == 0 || sz > op_spool_max_record(w->spool)) {
                atomic_fetch_add_explicit(&w->n_dropped, 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&w->n_drop_invalid, 1, memory_order_relaxed);
            } else {
                sizes[m] = (uint32_t)sz;
                valid[m++] = &items[i];
            }
            i++;
        }
        size_t done = 0;
        while (done < m) {
            size_t fit;
            uint64_t bytes;
            uint64_t before = op_spool_total_bytes(w->spool);
            uint8_t *batch = op_spool_reserve(w->spool, sizes + done, m - done, &fit, &bytes);
            if (!batch) {
                size_t lost = m - done;
                atomic_fetch_add_explicit(&w->n_dropped, lost, memory_order_relaxed);
                atomic_fetch_add_explicit(&w->n_drop_full, lost, memory_order_relaxed);
                done = m;
                break;
            }
            /* A reservation that started a new chunk means one was sealed: wake the ingest. */
            if (!woke && (before / w->opts.spool_chunk_bytes) != ((before + bytes) / w->opts.spool_chunk_bytes)) woke = 1;
            uint8_t *p = batch + OP_SPOOL_BATCH_HEADER;
            for (size_t k = 0; k < fit; k++) {
                const append_item *it = valid[done + k];
                rec_spool_write(p, sizes[done + k], it->category, it->kind, it->payload);
                p += sizes[done + k];
            }
            op_spool_commit(w->spool, batch, (uint32_t)fit, bytes);
            done += fit;
            accepted += fit;
        }
    }
    atomic_fetch_add_explicit(&w->n_appended, accepted, memory_order_relaxed);
    if (woke) op_db_wake_ingest(w);
    return (int)accepted;
}

int op_db_writer_append(op_db_writer *w, const omniprof_record_header_t *const *headers, size_t n)
{
    if (!w || (!headers && n)) return -EINVAL;
    append_item items[APPEND_GROUP];
    size_t total = 0;
    for (size_t i = 0; i < n; i += APPEND_GROUP) {
        size_t m = n - i < APPEND_GROUP ? n - i : APPEND_GROUP;
        for (size_t k = 0; k < m; k++) {
            const omniprof_record_header_t *h = headers[i + k];
            items[k].category = h ? h->category : 0;
            items[k].kind = h ? h->kind : 0;
            items[k].payload = h ? h->payload : NULL;
        }
        total += (size_t)append_items(w, items, m);
    }
    return (int)total;
}

int op_db_writer_append_one(op_db_writer *w, uint32_t category, uint32_t kind, const void *payload)
{
    if (!w || !payload) return -EINVAL;
    append_item it = {category, kind, payload};
    return append_items(w, &it, 1);
}

static int append_internal(op_db_writer *w, uint32_t kind, const void *payload)
{
    if (!w || !payload) return -EINVAL;
    if (op_db_failed(w)) return -ESHUTDOWN;
    append_item it = {OP_DB_CAT_INTERNAL, kind, payload};
    if (append_items(w, &it, 1) == 1) return 0;
    return op_db_failed(w) || atomic_load(&w->stop) ? -ESHUTDOWN : -ENOSPC;
}

int op_db_writer_add_agent(op_db_writer *w, const omniprof_agent_v0_t *agent)
{
    if (!agent || agent->size < offsetof(omniprof_agent_v0_t, uuid)) return -EINVAL;
    return append_internal(w, OP_DB_INT_AGENT, agent);
}

int op_db_writer_add_run_cost(op_db_writer *w, const char *name, double value, const char *units)
{
    if (!name) return -EINVAL;
    op_db_int_run_cost r = {sizeof r, value, name, units ? units : ""};
    return append_internal(w, OP_DB_INT_RUN_COST, &r);
}

int op_db_writer_add_drops(op_db_writer *w, const char *buffer, const char *cause, uint64_t count)
{
    if (!buffer || !cause) return -EINVAL;
    op_db_int_drops r = {sizeof r, count, buffer, cause};
    return append_internal(w, OP_DB_INT_DROPS, &r);
}

int op_db_writer_add_backpressure(op_db_writer *w, const char *buffer, uint64_t waits, uint64_t wait_ns)
{
    if (!buffer) return -EINVAL;
    op_db_int_backpressure r = {sizeof r, waits, wait_ns, buffer};
    return append_internal(w, OP_DB_INT_BACKPRESSURE, &r);
}
