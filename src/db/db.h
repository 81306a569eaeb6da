/* db.h — omniprof's database module: the rocpd schema (version 3) and the background writer.
 *
 * This is the only module that knows SQL (docs/architecture.md, "Layers"). It is a static library
 * (`omniprof-db`, hidden visibility, PIC) linked into libomniprof-tool.so (the writer) and
 * libomniprof-output.so (the schema text, for views over many attached databases).
 *
 * Schema (src/db/schema/ (*.sql), embedded at build time; docs/database.md describes every table):
 *   tables.sql          rocpd tables `rocpd_<base>_<uuid>` + omniprof_* tables, each row with guid
 *   rocpd_views.sql     plain-named views `rocpd_<base>` over them
 *   data_views.sql      regions, region_args, samples, sample_regions, regions_and_samples,
 *                       kernels, memory_copies, memory_allocations, scratch_memory, pmc_info,
 *                       pmc_events, events_args, stream_args, counters_collection, processes,
 *                       threads, code_objects, kernel_symbols
 *   summary_views.sql   top_kernels, busy, top
 *   omniprof_views.sql  omniprof_cpu_samples, omniprof_stack_frames, omniprof_metrics,
 *                       omniprof_threads, omniprof_memory_sets
 * rocpd_metadata holds schema_version=3, uuid (the table suffix, leading '_' included, so that
 * `table_name.replace(uuid, "")` gives the base name, as rocpd's importer does) and guid.
 *
 * Writer: the tool appends SDK records (op_db_writer_append, a copy into an on-disk spool,
 * never waiting on SQLite); a background thread turns them into rows in batched transactions.
 * Crash-safety invariants are numbered at the top of writer.c and in docs/database.md; the
 * writer's files are listed in writer_internal.h. What each record kind becomes is the kind's
 * ingest function, named in include/omniprof/kinds.def.
 *
 * Errors: functions returning int give 0 or a negative errno-style code (-EINVAL bad argument,
 * -EEXIST file exists, -ENOMEM, -EIO SQLite/disk failure, -ETIMEDOUT, -ESHUTDOWN writer turned
 * off after an earlier failure); where an `err` buffer is taken it receives one line naming the
 * input and the cause (SQLite's text via sqlite3_errstr/sqlite3_errmsg). */
#ifndef OMNIPROF_DB_DB_H
#define OMNIPROF_DB_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "omniprof/agent.h"
#include "omniprof/fwd.h"
#include "omniprof/symbols.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OP_DB_SCHEMA_VERSION 3

/* ------------------------------------------------------------------------------------------ */
/* Schema                                                                                     */

/**
 * @brief **op_db_schema_create** creates every table (suffixed with `uuid`), the plain-named
 * views over them, the data, summary and omniprof views, and the rocpd_metadata rows
 * (schema_version=3, uuid=<suffix>, guid=<uuid>) in `db`, in one transaction.
 * @param uuid: the run's UUID as text, e.g. "0195b6a1-2c3d-7e4f-8a9b-0123456789ab" (36 chars of
 *   hex digits and '-'); the table suffix is "_" + uuid with '-' replaced by '_'. NULL: one is
 *   made with op_db_make_uuid().
 * @return 0; -EINVAL (NULL db, or uuid with characters other than hex digits and '-', or longer
 *   than 64); -EIO (SQLite failed: err says which statement and why). On failure nothing is
 *   left half-created (the transaction is rolled back).
 * Thread-safety: uses only `db`.
 */
int op_db_schema_create(sqlite3 *db, const char *uuid, char *err, size_t errlen);

/**
 * @brief **op_db_schema_create_merged** creates the one table set of a merged file (what
 * op_db_merge writes; docs/database.md "Merged files"): the same tables, views and metadata as
 * op_db_schema_create, except that guid is a stored column (each row keeps its process's guid)
 * and the tables have no UNIQUE constraints (they hold within one process only), plus the table
 * omniprof_merged<suffix>: one row per (process, table) with the id range of that process's rows.
 * @return as op_db_schema_create.
 */
int op_db_schema_create_merged(sqlite3 *db, const char *uuid, char *err, size_t errlen);

/**
 * @brief **op_db_schema_views_sql** returns the text of the data, summary and omniprof views
 * (`CREATE VIEW IF NOT EXISTS ...;` statements separated by ';'), which refer only to
 * plain names (rocpd_region, rocpd_string, ...). Static storage, never NULL.
 */
const char *op_db_schema_views_sql(void);

/**
 * @brief **op_db_schema_create_views** executes op_db_schema_views_sql() in `db`; with
 * `temporary` non-zero each view is created as `CREATE TEMP VIEW IF NOT EXISTS` (for views
 * over TEMP union views of many attached databases; rocpd's importer does the same).
 * @return 0; -EINVAL; -EIO with err naming the view.
 */
int op_db_schema_create_views(sqlite3 *db, int temporary, char *err, size_t errlen);

/** @brief **op_db_schema_table_names**: NULL-terminated list of the base names of every physical
 * table ("rocpd_metadata", "rocpd_string", ...), in tables.sql's order: generated from that
 * file (tables_gen.h). Static storage. */
const char *const *op_db_schema_table_names(void);

/** @brief **op_db_schema_tables_sql**: the tables template ({{uuid}}, {{guid}} unexpanded). */
const char *op_db_schema_tables_sql(void);

/**
 * @brief **op_db_make_uuid** writes a UUIDv7 (RFC 9562: 48-bit Unix ms time, version 7,
 * random bits from getrandom, falling back to time/pid mixing) as 36 chars + NUL into out.
 * @return 0; -EINVAL when outlen < 37.
 */
int op_db_make_uuid(char *out, size_t outlen);

/* ------------------------------------------------------------------------------------------ */
/* Writer                                                                                     */

typedef struct op_db_writer op_db_writer; /* opaque */

/* What the writer stores about its process (rocpd_info_node, rocpd_info_process). Strings are
 * copied during op_db_writer_open. Start with `size = sizeof(op_db_process_info)`; zero means
 * unknown for every field. */
typedef struct op_db_process_info {
    uint64_t size;
    int64_t pid;
    int64_t ppid;
    uint64_t init_ns;          /* CLOCK_MONOTONIC ns when the tool started in this process */
    uint64_t start_ns;         /* CLOCK_MONOTONIC ns when collection started (0: = init_ns) */
    int64_t realtime_offset_ns;/* CLOCK_REALTIME - CLOCK_MONOTONIC (op_realtime_offset_ns()) */
    const char *hostname;      /* NULL: uname's nodename */
    const char *machine_id;    /* NULL: /etc/machine-id, else the hostname */
    const char *command;       /* the command line, arguments separated by spaces */
    const char *const *environment; /* NULL-terminated "NAME=value" entries to store (a subset) */
    int32_t rank;              /* MPI/Slurm rank, -1 unknown */
    int32_t world_size;        /* -1 unknown */
    const char *uuid;          /* NULL: op_db_make_uuid() */
    const char *extdata_json;  /* NULL or a JSON object merged into rocpd_info_process.extdata */
} op_db_process_info;
#define op_db_process_info__last_field extdata_json

/* Names for kinds and operations; the tool wires these to omniprof_query_buffer_tracing_kind_name
 * and ..._kind_operation_name. Return NULL when unknown (the writer then uses its own kind
 * names and "<KIND>_<op>"). The strings must stay valid for the process. */
typedef const char *(*op_db_kind_name_fn)(uint32_t kind, void *user);
typedef const char *(*op_db_operation_name_fn)(uint32_t kind, int32_t operation, void *user);
/* Symbolizer for CPU stack addresses (omniprof_query_address_symbols has this shape); called
 * from the writer's thread during op_db_writer_close, once per distinct address. */
typedef omniprof_status_t (*op_db_symbolize_fn)(uint64_t address, omniprof_symbol_cb_t cb, void *cb_data,
                                                void *user);

typedef struct op_db_writer_options {
    uint64_t size;                 /* sizeof(op_db_writer_options) */
    const char *spool_dir;         /* NULL: OMNIPROF_TMPDIR, else the database's directory */
    uint64_t spool_chunk_bytes;    /* 0: OMNIPROF_DB_SPOOL_CHUNK_KB (default 1024 KiB) */
    uint32_t spool_mapped_chunks;  /* chunks kept in RAM (the spool's memory); 0: 16 */
    uint64_t spool_max_bytes;      /* 0: OMNIPROF_DB_SPOOL_MAX_MB; past it appends drop and count */
    uint64_t flush_interval_ms;    /* 0: OMNIPROF_DB_FLUSH_INTERVAL_MS (default 500) */
    uint32_t batch_rows;           /* rows per transaction at most; 0: 200000 */
    uint32_t cache_kib;            /* SQLite page cache; 0: 8192 KiB */
    uint64_t close_timeout_ms;     /* longest op_db_writer_close wait; 0: 30000 ms */
    op_db_kind_name_fn kind_name;
    op_db_operation_name_fn operation_name;
    op_db_symbolize_fn symbolize;  /* NULL: omniprof_symbol stays empty */
    void *user;                    /* passed to the three callbacks */
    /* How kernels are shown (the kernels view, kernel symbols' display_name): 0 the demangled
     * name (the mangled one when there is none), non-zero the mangled name (--mangled-kernels). */
    uint32_t kernel_names_mangled;
    uint32_t truncate_kernel_names; /* non-zero: the bare function name, no arguments or templates */
    /* --kernel-rename: the name a dispatch whose external correlation id is `external` is shown
     * by (its region; the kernel symbol keeps the kernel's name), or NULL to keep the kernel's.
     * Called on the writer's thread; the string must live as long as the writer. NULL: off. */
    const char *(*kernel_rename)(uint64_t external, void *user);
} op_db_writer_options;
#define op_db_writer_options__last_field kernel_rename

typedef struct op_db_writer_stats {
    uint64_t size;
    uint64_t records_appended;  /* records accepted by op_db_writer_append */
    uint64_t records_dropped;   /* refused: spool full, writer off, too big, bad record */
    uint64_t records_ingested;  /* turned into rows (or deliberately skipped) by the ingest thread */
    uint64_t records_unhandled; /* kinds the writer stores nothing for (counted, documented) */
    uint64_t rows_written;      /* rows inserted, all tables */
    uint64_t transactions;      /* COMMITs */
    uint64_t spool_bytes;       /* bytes appended and not yet ingested (ingest lag, in bytes) */
    uint64_t spool_bytes_total; /* bytes ever appended */
    uint64_t spool_file_bytes;  /* spool file size: its high-water mark (slots are reused, never shrunk) */
    uint64_t ingest_lag_ns;     /* age of the oldest appended-but-uncommitted byte, 0 if none */
    uint64_t ingest_busy_ns;    /* time the ingest thread spent working (the writer's own cost) */
    int failed;                 /* non-zero once the writer turned itself off */
    int reserved;
} op_db_writer_stats;

/**
 * @brief **op_db_writer_open** creates the database file `path` (refusing an existing one),
 * sets WAL journal mode, creates the schema, writes node and process rows, creates the spool
 * file (unlinked at once: it never outlives the process) and starts the ingest thread (all
 * signals blocked).
 * @param info: required (pid, command...). @param opts: NULL for defaults.
 * @return the writer, or NULL with errno set and a line in err: EEXIST (path exists: "refusing
 *   to overwrite"), ENOENT/EACCES (directory missing or not writable), EINVAL, ENOMEM, EIO.
 *   On failure no file is left behind.
 * Thread-safety: any thread; the parent directory must exist (the tool creates it).
 */
op_db_writer *op_db_writer_open(const char *path, const op_db_process_info *info,
                                const op_db_writer_options *opts, char *err, size_t errlen);

/**
 * @brief **op_db_writer_append** copies `n` records (SDK buffer-callback headers) into the
 * spool: one reservation per call, then a memcpy per record; strings the records point at
 * (kernel names, URIs, metric names, argument names and string values) are copied too.
 * Never waits on SQLite or disk I/O other than page faults on the mapped spool.
 * @return the number of records accepted (n unless the writer is off, the spool is at its
 *   bound, or a record is malformed: those are counted in records_dropped); -EINVAL for NULL.
 * Thread-safety: any number of threads at once.
 */
int op_db_writer_append(op_db_writer *w, const omniprof_record_header_t *const *headers, size_t n);

/** @brief **op_db_writer_append_one**: op_db_writer_append for one record given as (category,
 * kind, payload). @return 1 accepted, 0 dropped, -EINVAL. */
int op_db_writer_append_one(op_db_writer *w, uint32_t category, uint32_t kind, const void *payload);

/**
 * @brief **op_db_writer_add_agent** stores an agent (rocpd_info_agent); records that name the
 * agent's id are linked to this row. Call before the records that use it when possible (a
 * record naming an unknown agent gets agent_id NULL).
 * @return 0; -EINVAL; -ESHUTDOWN; -ENOSPC (spool full). Thread-safety: any thread.
 */
int op_db_writer_add_agent(op_db_writer *w, const omniprof_agent_v0_t *agent);

/** @brief **op_db_writer_add_run_cost**: a row of omniprof_run_cost (name, value, units),
 * e.g. ("tool_init_ns", 1.2e6, "ns"). @return 0; -EINVAL; -ESHUTDOWN; -ENOSPC. */
int op_db_writer_add_run_cost(op_db_writer *w, const char *name, double value, const char *units);

/** @brief **op_db_writer_add_drops**: a row of omniprof_drops: `count` records of `buffer`
 * lost for `cause`. @return as op_db_writer_add_run_cost. */
int op_db_writer_add_drops(op_db_writer *w, const char *buffer, const char *cause, uint64_t count);

/** @brief **op_db_writer_add_backpressure**: a row of omniprof_backpressure: LOSSLESS waits of
 * the program's threads on `buffer` (how many, total ns). @return as above. */
int op_db_writer_add_backpressure(op_db_writer *w, const char *buffer, uint64_t waits, uint64_t wait_ns);

/**
 * @brief **op_db_writer_flush** waits until everything appended before the call is committed
 * (visible to other connections), at most `timeout_ms`.
 * @return 0; -ETIMEDOUT; -ESHUTDOWN (writer off: what was committed before stays valid).
 * Thread-safety: any thread; not from a signal handler.
 */
int op_db_writer_flush(op_db_writer *w, uint64_t timeout_ms);

/**
 * @brief **op_db_writer_close** flushes everything, writes the process's fini/end time, the
 * writer's own run-cost rows (omniprof_run_cost: ingest time, rows, spool figures, drops),
 * symbolizes the stack addresses (opts->symbolize), checkpoints the WAL into the database
 * (so that the -wal file is gone), closes SQLite, joins the ingest thread and frees `w`.
 * Waits at most opts->close_timeout_ms; past it the ingest thread is abandoned (detached,
 * still finishing in the background) and -ETIMEDOUT is returned — everything committed so far
 * stays valid. Accepts NULL (returns 0).
 * @return 0; -ETIMEDOUT; -EIO (a failure earlier or during close; logged once).
 * Thread-safety: once, from one thread, after every append has returned.
 */
int op_db_writer_close(op_db_writer *w);

/**
 * @brief **op_db_writer_close_fast** is for signal and abort paths: asks the ingest thread to
 * commit what it has ingested, stop ingesting and close, and waits at most `timeout_ms`
 * (sleeping on an atomic; no locks, no malloc in the caller). Does not free `w` (the process
 * is ending). Idempotent. Safe in a signal handler provided the handler did not interrupt the
 * ingest thread itself (it never runs application code, and the tool's handlers run on
 * application threads). Appends after this call are dropped.
 * @return 0 when the ingest thread finished within timeout_ms; -ETIMEDOUT otherwise.
 */
int op_db_writer_close_fast(op_db_writer *w, uint64_t timeout_ms);

/**
 * @brief **op_db_writer_abandon_after_fork**: in a forked child, forget the parent's writer
 * without touching its database, thread or files (the child opens its own). Memory of `w` is
 * leaked on purpose: its locks may be held by threads that do not exist in the child.
 */
void op_db_writer_abandon_after_fork(op_db_writer *w);

/** @brief **op_db_writer_get_stats** fills `out` (set out->size first; a smaller size gets the
 * fields that fit). @return 0; -EINVAL. Thread-safety: any thread. */
int op_db_writer_get_stats(const op_db_writer *w, op_db_writer_stats *out);

/** @brief **op_db_writer_path**: the database path (valid until close). */
const char *op_db_writer_path(const op_db_writer *w);

/** @brief **op_db_writer_uuid**: the run's UUID text (valid until close). */
const char *op_db_writer_uuid(const op_db_writer *w);

/** @brief **op_db_writer_error**: the first error's text ("" if none; valid until close). */
const char *op_db_writer_error(const op_db_writer *w);

/** @brief **op_db_writer_files_lost**: true when the writer is off because one of its files
 * (database, WAL, shared memory, spool) was closed or replaced behind the fd interposers (a
 * raw close_range system call); nothing more was written through it. Thread-safe. */
bool op_db_writer_files_lost(const op_db_writer *w);

#ifdef __cplusplus
}
#endif

#endif /* OMNIPROF_DB_DB_H */
