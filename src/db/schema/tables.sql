-- tables.sql — the physical tables of one omniprof database: rocpd schema version 3 plus the
-- omniprof_* tables for what rocpd has no table for (docs/database.md).
--
-- Template: {{uuid}} is replaced by the table suffix ("_" + the run's UUIDv7 with '-' -> '_'),
-- {{guid}} by the run's UUID text. Every table is named <base>{{uuid}}; rocpd_views.sql gives the
-- plain names. Every row carries guid so that rows of many processes can be told apart after
-- the databases are attached together (joins in the views use (id, guid) pairs).
--
-- Differences from upstream rocpd, all invisible to SQL that reads the plain-named views:
--   * ids are INTEGER PRIMARY KEY without AUTOINCREMENT (rows are never deleted, so ids still
--     only grow; this saves a sqlite_sequence update per insert);
--   * extdata / environment / call_stack / line_info hold JSON text (SQLite 3.40 has no JSONB);
--   * foreign keys are declared but the writer does not turn enforcement on (speed); the
--     writer keeps them by construction (docs/database.md, invariant 5).
--   * guid is a VIRTUAL generated column (the run's UUID, one per table set): every row reads
--     it, no row stores it (36 bytes per row saved; SELECT * and joins see it as before,
--     PRAGMA table_info lists it only in table_xinfo, an INSERT may not name it).
--
-- This file is the one list of the tables. The build reads it (src/db/gen_tables.py) and
-- generates from it the table enum of the reader (T_<NAME>: rocpd_info_X and rocpd_X give T_X,
-- omniprof_X gives T_OP_X), the list of tables (op_db_schema_table_names), the plain-named views
-- (rocpd_views.sql), the counts the schema test checks and the columns a merge must treat
-- specially. Those columns are marked by an annotation at the end of their line (or on a
-- comment line right below it):
--   -- @time                a CLOCK_MONOTONIC time of the row's process: a clock-aligned merge
--                           moves it onto the reference clock. A column named start, end,
--                           timestamp, init or fini must carry it (the build stops otherwise).
--   -- @ref TABLE           a row id of TABLE that no REFERENCES clause declares (declared
--                           foreign keys are read from the schema): a merge shifts it with
--                           TABLE's ids (0 stays "none").
--   -- @json-ref KEY=TABLE  the JSON text holds a row id of TABLE at $.KEY (several words allowed).
-- A table is declared as: CREATE TABLE IF NOT EXISTS "<base>{{uuid}}" ( on one line, one column
-- per line, and ");" alone at the start of the closing line.

CREATE TABLE IF NOT EXISTS "rocpd_metadata{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "tag" TEXT NOT NULL,
    "value" TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS "rocpd_string{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "string" TEXT NOT NULL UNIQUE ON CONFLICT ABORT
);

CREATE TABLE IF NOT EXISTS "rocpd_info_node{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "hash" BIGINT NOT NULL UNIQUE,
    "machine_id" TEXT NOT NULL UNIQUE,
    "system_name" TEXT,
    "hostname" TEXT,
    "release" TEXT,
    "version" TEXT,
    "hardware_name" TEXT,
    "domain_name" TEXT
);

CREATE TABLE IF NOT EXISTS "rocpd_info_process{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "ppid" INTEGER,
    "pid" INTEGER NOT NULL,
    "init" BIGINT, -- @time
    "fini" BIGINT, -- @time
    "start" BIGINT, -- @time
    "end" BIGINT, -- @time
    "command" TEXT,
    "environment" JSONB DEFAULT '{}' NOT NULL,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS "rocpd_info_thread{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY, -- @given
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "ppid" INTEGER,
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "tid" INTEGER NOT NULL,
    "name" TEXT,
    "start" BIGINT, -- @time
        -- @unset
    "end" BIGINT, -- @time
        -- @unset
    "extdata" JSONB DEFAULT '{}' NOT NULL -- @unset
);

CREATE TABLE IF NOT EXISTS "rocpd_info_agent{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "type" TEXT CHECK ("type" IN ('CPU', 'GPU')),
    "absolute_index" INTEGER,
    "logical_index" INTEGER,
    "type_index" INTEGER,
    "uuid" INTEGER, -- @unset
    "name" TEXT,
    "model_name" TEXT,
    "vendor_name" TEXT,
    "product_name" TEXT,
    "user_name" TEXT, -- @unset
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS "rocpd_info_queue{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "name" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL -- @json-ref stream_id=rocpd_info_stream
    -- @json-ref agent_id=rocpd_info_agent
);

CREATE TABLE IF NOT EXISTS "rocpd_info_stream{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "name" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS "rocpd_info_pmc{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "agent_id" INTEGER REFERENCES "rocpd_info_agent{{uuid}}" ("id"),
    "target_arch" TEXT CHECK ("target_arch" IN ('CPU', 'GPU')), -- @const 'GPU'
    "event_code" INT,
    "instance_id" INTEGER, -- @const 0
    "name" TEXT NOT NULL,
    "symbol" TEXT NOT NULL,
    "description" TEXT, -- @const ''
    "long_description" TEXT DEFAULT '', -- @const ''
    "component" TEXT, -- @const ''
    "units" TEXT DEFAULT '', -- @const ''
    "value_type" TEXT CHECK ("value_type" IN ('ABS', 'ACCUM', 'RELATIVE')), -- @const 'ABS'
    "block" TEXT, -- @const ''
    "expression" TEXT, -- @const ''
    "is_constant" INTEGER, -- @unset
    "is_derived" INTEGER, -- @unset
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS "rocpd_info_code_object{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "agent_id" INTEGER REFERENCES "rocpd_info_agent{{uuid}}" ("id"),
    "uri" TEXT,
    "load_base" BIGINT,
    "load_size" BIGINT,
    "load_delta" BIGINT, -- @const 0
    "storage_type" TEXT CHECK ("storage_type" IN ('FILE', 'MEMORY')),
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

-- code_object_id is NULL for a kernel seen only through its dispatches (no KERNEL_SYMBOL record).
CREATE TABLE IF NOT EXISTS "rocpd_info_kernel_symbol{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "code_object_id" INTEGER REFERENCES "rocpd_info_code_object{{uuid}}" ("id"),
    "kernel_name" TEXT,
    "display_name" TEXT,
    "kernel_object" INTEGER,
    "kernarg_segment_size" INTEGER, -- @unset
    "kernarg_segment_alignment" INTEGER, -- @unset
    "group_segment_size" INTEGER,
    "private_segment_size" INTEGER,
    "sgpr_count" INTEGER, -- @const 0
    "arch_vgpr_count" INTEGER,
    "accum_vgpr_count" INTEGER, -- @const 0
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

-- A series of samples: per (thread, category) for instants, per metric for omniprof_metric.
CREATE TABLE IF NOT EXISTS "rocpd_track{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "tid" INTEGER REFERENCES "rocpd_info_thread{{uuid}}" ("id"),
    "name_id" INTEGER REFERENCES "rocpd_string{{uuid}}" ("id"),
    "extdata" JSONB DEFAULT '{}' NOT NULL -- @json-ref agent_id=rocpd_info_agent
);

CREATE TABLE IF NOT EXISTS "rocpd_event{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "category_id" INTEGER REFERENCES "rocpd_string{{uuid}}" ("id"),
    "stack_id" INTEGER,
    "parent_stack_id" INTEGER,
    "correlation_id" INTEGER,
    "call_stack" JSONB DEFAULT '{}' NOT NULL, -- @unset
    "line_info" JSONB DEFAULT '{}' NOT NULL, -- @unset
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS "rocpd_arg{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "event_id" INTEGER NOT NULL REFERENCES "rocpd_event{{uuid}}" ("id"),
    "position" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "value" TEXT,
    "extdata" JSONB DEFAULT '{}' NOT NULL -- @json-ref stream_id=rocpd_info_stream
        -- @unset
);

CREATE TABLE IF NOT EXISTS "rocpd_pmc_event{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "event_id" INTEGER REFERENCES "rocpd_event{{uuid}}" ("id"),
    "pmc_id" INTEGER NOT NULL REFERENCES "rocpd_info_pmc{{uuid}}" ("id"),
    "value" REAL DEFAULT 0.0,
    "extdata" JSONB DEFAULT '{}'
);

-- A CPU interval on one thread: API calls, marker ranges, synchronizations, wrapped functions.
CREATE TABLE IF NOT EXISTS "rocpd_region{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "tid" INTEGER NOT NULL REFERENCES "rocpd_info_thread{{uuid}}" ("id"),
    "start" BIGINT NOT NULL, -- @time
    "end" BIGINT NOT NULL, -- @time
    "name_id" INTEGER NOT NULL REFERENCES "rocpd_string{{uuid}}" ("id"),
    "event_id" INTEGER REFERENCES "rocpd_event{{uuid}}" ("id"),
    "extdata" JSONB DEFAULT '{}' NOT NULL -- @unset
);

-- An instant on a track: marks, zero-length API calls, CPU call-stack samples.
CREATE TABLE IF NOT EXISTS "rocpd_sample{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "track_id" INTEGER NOT NULL REFERENCES "rocpd_track{{uuid}}" ("id"),
    "timestamp" BIGINT NOT NULL, -- @time
    "event_id" INTEGER REFERENCES "rocpd_event{{uuid}}" ("id"),
    "extdata" JSONB DEFAULT '{}' NOT NULL -- @unset
);

-- grid_size_* are work-items (blocks x threads per block), as in rocpd; workgroup_size_* are
-- threads per block. group_segment_size = static + dynamic shared memory per block;
-- private_segment_size = local memory per thread.
CREATE TABLE IF NOT EXISTS "rocpd_kernel_dispatch{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "tid" INTEGER REFERENCES "rocpd_info_thread{{uuid}}" ("id"),
    "agent_id" INTEGER REFERENCES "rocpd_info_agent{{uuid}}" ("id"),
    "kernel_id" INTEGER NOT NULL REFERENCES "rocpd_info_kernel_symbol{{uuid}}" ("id"),
    "dispatch_id" INTEGER NOT NULL,
    "queue_id" INTEGER REFERENCES "rocpd_info_queue{{uuid}}" ("id"),
    "stream_id" INTEGER REFERENCES "rocpd_info_stream{{uuid}}" ("id"),
    "start" BIGINT NOT NULL, -- @time
    "end" BIGINT NOT NULL, -- @time
    "private_segment_size" INTEGER,
    "group_segment_size" INTEGER,
    "workgroup_size_x" INTEGER NOT NULL,
    "workgroup_size_y" INTEGER NOT NULL,
    "workgroup_size_z" INTEGER NOT NULL,
    "grid_size_x" INTEGER NOT NULL,
    "grid_size_y" INTEGER NOT NULL,
    "grid_size_z" INTEGER NOT NULL,
    "region_name_id" INTEGER REFERENCES "rocpd_string{{uuid}}" ("id"),
    "event_id" INTEGER REFERENCES "rocpd_event{{uuid}}" ("id"),
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

-- Copies, and memsets (name 'MEMORY_SET', src_agent_id NULL; docs/database.md).
CREATE TABLE IF NOT EXISTS "rocpd_memory_copy{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "tid" INTEGER REFERENCES "rocpd_info_thread{{uuid}}" ("id"),
    "start" BIGINT NOT NULL, -- @time
    "end" BIGINT NOT NULL, -- @time
    "name_id" INTEGER NOT NULL REFERENCES "rocpd_string{{uuid}}" ("id"),
    "dst_agent_id" INTEGER REFERENCES "rocpd_info_agent{{uuid}}" ("id"),
    "dst_address" INTEGER, -- @unset
    "src_agent_id" INTEGER REFERENCES "rocpd_info_agent{{uuid}}" ("id"),
    "src_address" INTEGER, -- @unset
    "size" INTEGER NOT NULL,
    "queue_id" INTEGER REFERENCES "rocpd_info_queue{{uuid}}" ("id"),
    "stream_id" INTEGER REFERENCES "rocpd_info_stream{{uuid}}" ("id"),
    "region_name_id" INTEGER REFERENCES "rocpd_string{{uuid}}" ("id"), -- @unset
    "event_id" INTEGER REFERENCES "rocpd_event{{uuid}}" ("id"),
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

CREATE TABLE IF NOT EXISTS "rocpd_memory_allocate{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "tid" INTEGER REFERENCES "rocpd_info_thread{{uuid}}" ("id"),
    "agent_id" INTEGER REFERENCES "rocpd_info_agent{{uuid}}" ("id"),
    "type" TEXT CHECK ("type" IN ('ALLOC', 'FREE', 'REALLOC', 'RECLAIM')),
    "level" TEXT CHECK ("level" IN ('REAL', 'VIRTUAL', 'SCRATCH')),
    "start" BIGINT NOT NULL, -- @time
    "end" BIGINT NOT NULL, -- @time
    "address" INTEGER,
    "size" INTEGER NOT NULL,
    "queue_id" INTEGER REFERENCES "rocpd_info_queue{{uuid}}" ("id"),
    "stream_id" INTEGER REFERENCES "rocpd_info_stream{{uuid}}" ("id"),
    "event_id" INTEGER REFERENCES "rocpd_event{{uuid}}" ("id"),
    "extdata" JSONB DEFAULT '{}' NOT NULL
);

-- ------------------------------------------------------------------------------------------
-- omniprof tables: what rocpd has no table for.

-- Call stacks as a prefix tree of raw return addresses: a stack is the id of its innermost
-- node; parent_id walks outwards (0 at the outermost frame). depth 0 is the outermost frame.
-- Addresses are stored as SQLite integers (two's complement of the uint64).
CREATE TABLE IF NOT EXISTS "omniprof_stack{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "parent_id" INTEGER NOT NULL, -- @ref omniprof_stack
    "address" INTEGER NOT NULL,
    "depth" INTEGER NOT NULL,
    UNIQUE ("parent_id", "address")
);

-- One row per CPU call-stack sample; sample_id is its rocpd_sample row (on the thread's
-- "CPU_SAMPLE" track), stack_id its innermost omniprof_stack node (0: no frames).
CREATE TABLE IF NOT EXISTS "omniprof_cpu_sample{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "tid" INTEGER NOT NULL REFERENCES "rocpd_info_thread{{uuid}}" ("id"),
    "timestamp" BIGINT NOT NULL, -- @time
    "clock" TEXT CHECK ("clock" IN ('CPUTIME', 'REALTIME', 'OTHER')),
    "stack_id" INTEGER NOT NULL, -- @ref omniprof_stack
    "sample_id" INTEGER REFERENCES "rocpd_sample{{uuid}}" ("id"),
    "num_frames" INTEGER NOT NULL,
    "thread_internal_value" INTEGER,
    "peak_rss_bytes" INTEGER,
    "event_values" JSONB DEFAULT '[]' NOT NULL
);

-- The perf_event counters of the CPU samples (CPU_SAMPLE_EVENT records, include/omniprof/cpu.h;
-- docs/cpu.md "Counters"): one row per counter of the process's sampler. event_index i names
-- element i of omniprof_cpu_sample.event_values (cumulative for the sample's thread since its
-- sampler started; a thread whose counter group opened only a prefix of the list has fewer
-- values). type and config are perf_event_attr's (0 hardware, 1 software, 3 cache, 4 raw).
CREATE TABLE IF NOT EXISTS "omniprof_cpu_sample_event{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "event_index" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "type" INTEGER NOT NULL,
    "config" INTEGER NOT NULL
);

-- GPU PC samples (PC_SAMPLE records, include/omniprof/pc_sampling.h): samples of one
-- (kernel, PC offset, stall reason) taken between two reads. Names are rocpd_string ids;
-- stack_id = the internal correlation id of the dispatch's launching call (serialized method).
CREATE TABLE IF NOT EXISTS "omniprof_pc_sample{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "agent_id" INTEGER REFERENCES "rocpd_info_agent{{uuid}}" ("id"),
    "timestamp" BIGINT NOT NULL, -- @time
    "method" INTEGER NOT NULL,
    "stack_id" INTEGER,
    "dispatch_id" INTEGER,
    "kernel_id" INTEGER,
    "kernel_name_id" INTEGER REFERENCES "rocpd_string{{uuid}}" ("id"),
    "code_object_id" INTEGER,
    "pc_offset" INTEGER NOT NULL,
    "instruction_id" INTEGER REFERENCES "rocpd_string{{uuid}}" ("id"),
    "file_id" INTEGER REFERENCES "rocpd_string{{uuid}}" ("id"),
    "line" INTEGER,
    "stall_reason_id" INTEGER REFERENCES "rocpd_string{{uuid}}" ("id"),
    "samples" INTEGER NOT NULL,
    "pc_samples" INTEGER NOT NULL
);

-- SASS metrics (SASS_METRIC records, include/omniprof/sass_metrics.h): one metric of one SASS
-- instruction of one kernel, summed over its launches and the GPU's SMs. Names are rocpd_string
-- ids; code_object_id the cubin CRC; pc_offset bytes from the function's start.
CREATE TABLE IF NOT EXISTS "omniprof_sass_metric{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "agent_id" INTEGER REFERENCES "rocpd_info_agent{{uuid}}" ("id"),
    "timestamp" BIGINT NOT NULL, -- @time
    "kernel_id" INTEGER,
    "kernel_name_id" INTEGER REFERENCES "rocpd_string{{uuid}}" ("id"),
    "code_object_id" INTEGER,
    "pc_offset" INTEGER NOT NULL,
    "instruction_id" INTEGER REFERENCES "rocpd_string{{uuid}}" ("id"),
    "file_id" INTEGER REFERENCES "rocpd_string{{uuid}}" ("id"),
    "line" INTEGER,
    "metric_id" INTEGER REFERENCES "rocpd_string{{uuid}}" ("id"),
    "value" INTEGER NOT NULL
);

-- Unified (managed) memory events (UNIFIED_MEMORY records, include/omniprof/gpu.h): page
-- migrations, CPU and GPU page faults, thrashing, throttling, remote maps. operation is the
-- event's name (MIGRATE_HOST_TO_DEVICE, ..., docs/database.md); the host side of a migration is
-- the process's CPU agent; bytes 0 where it does not apply; value: GPU faults their fault
-- groups, CPU faults the faulting instruction's address.
CREATE TABLE IF NOT EXISTS "omniprof_unified_memory{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "operation" TEXT NOT NULL,
    "start" BIGINT NOT NULL, -- @time
    "end" BIGINT NOT NULL, -- @time
    "src_agent_id" INTEGER REFERENCES "rocpd_info_agent{{uuid}}" ("id"),
    "dst_agent_id" INTEGER REFERENCES "rocpd_info_agent{{uuid}}" ("id"),
    "address" INTEGER,
    "bytes" INTEGER NOT NULL,
    "value" INTEGER NOT NULL,
    "cause" TEXT
);

-- CUDA events recorded on a stream (CUDA_EVENT records, include/omniprof/gpu.h): the stream and
-- the recording call (event_id: its rocpd_event row, whose correlation_id is the call's), so
-- that what an event synchronize or a stream's wait for the event waited for is known: the
-- stream's work launched before the recording call. cuda_event is CUDA's event id (reused when
-- an event is recorded again); sync_id names this recording, as the SYNCHRONIZATION records of
-- the waits do (their event row's extdata, "sync_id"). device_timestamp: when the GPU passed
-- it, NULL when not collected.
CREATE TABLE IF NOT EXISTS "omniprof_cuda_event{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "nid" INTEGER NOT NULL REFERENCES "rocpd_info_node{{uuid}}" ("id"),
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "tid" INTEGER REFERENCES "rocpd_info_thread{{uuid}}" ("id"),
    "stream_id" INTEGER REFERENCES "rocpd_info_stream{{uuid}}" ("id"),
    "event_id" INTEGER REFERENCES "rocpd_event{{uuid}}" ("id"),
    "cuda_event" INTEGER NOT NULL,
    "sync_id" INTEGER NOT NULL,
    "device_timestamp" BIGINT -- @time
);

-- Symbols of the addresses in omniprof_stack, filled at the end of the run: one row per
-- (address, inline_depth); inline_depth 0 is the physical frame, 1.. its inlined callees.
CREATE TABLE IF NOT EXISTS "omniprof_symbol{{uuid}}" (
    -- @on-conflict IGNORE
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "address" INTEGER NOT NULL,
    "inline_depth" INTEGER NOT NULL,
    "function" TEXT,
    "function_mangled" TEXT,
    "file" TEXT,
    "line" INTEGER,
    "module" TEXT,
    "module_offset" INTEGER,
    UNIQUE ("address", "inline_depth")
);

-- Process / system metric values on counter tracks (rocpd_track.name_id = metric name;
-- track extdata {"units":..., "device_index":..., "source":"process_sample"}); GPU PM samples
-- too (source "pm_sampling", timestamp = the start of the sample window, extdata also
-- "metric" and "interval_ns").
CREATE TABLE IF NOT EXISTS "omniprof_metric{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "track_id" INTEGER NOT NULL REFERENCES "rocpd_track{{uuid}}" ("id"),
    "timestamp" BIGINT NOT NULL, -- @time
    "value" REAL NOT NULL
);

-- Thread identity beyond rocpd_info_thread: creation order and sequent value.
CREATE TABLE IF NOT EXISTS "omniprof_thread{{uuid}}" (
    -- @on-conflict REPLACE
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "thread_id" INTEGER NOT NULL UNIQUE REFERENCES "rocpd_info_thread{{uuid}}" ("id"),
    "tid" INTEGER NOT NULL,
    "parent_tid" INTEGER,
    "internal_value" INTEGER,
    "sequent_value" INTEGER,
    "is_profiler_thread" INTEGER NOT NULL DEFAULT 0
);

-- What the run cost: the tool's own time, spool and ingest figures (name, value, units).
CREATE TABLE IF NOT EXISTS "omniprof_run_cost{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "name" TEXT NOT NULL,
    "value" REAL NOT NULL,
    "units" TEXT NOT NULL DEFAULT '',
    "extdata" JSONB DEFAULT '{}' NOT NULL -- @unset
);

-- Records lost, per buffer and cause ("buffer_full", "record_too_big", "writer_failed", ...).
CREATE TABLE IF NOT EXISTS "omniprof_drops{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "buffer" TEXT NOT NULL,
    "cause" TEXT NOT NULL,
    "count" INTEGER NOT NULL
);

-- The region profile (REGION_PROFILE records, docs/cpu.md "Components"): per thread, per node of
-- its region call tree (node_id, parent_id: 0 = the thread's root) and per measurement component,
-- the statistics of the region's values; `omniprof convert -f wall_clock` prints them.
CREATE TABLE IF NOT EXISTS "omniprof_region_profile{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "tid" INTEGER NOT NULL REFERENCES "rocpd_info_thread{{uuid}}" ("id"),
    "thread_index" INTEGER NOT NULL,
    "node_id" INTEGER NOT NULL,
    "parent_id" INTEGER NOT NULL,
    "depth" INTEGER NOT NULL,
    "label" TEXT NOT NULL,
    "component" TEXT NOT NULL,
    "units" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "sum" REAL NOT NULL,
    "sum_squares" REAL NOT NULL,
    "min" REAL NOT NULL,
    "max" REAL NOT NULL,
    "self" REAL NOT NULL
);

-- LOSSLESS buffers: how often and how long the program's threads waited for space.
CREATE TABLE IF NOT EXISTS "omniprof_backpressure{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "buffer" TEXT NOT NULL,
    "waits" INTEGER NOT NULL,
    "wait_ns" INTEGER NOT NULL
);

-- Causal profiling (docs/causal.md): one row per virtual-speedup experiment of the process.
-- experiment: its index in the process (from 0); mode: line, function or end_to_end;
-- selected: "file:line" or the function; speedup: the line speedup, 0..1; duration: ns of the
-- experiment minus the delay inserted during it (Coz's duration); delay: that delay, ns;
-- selected_samples: samples that hit the selection; sample_period: ns of CPU time per sample.
CREATE TABLE IF NOT EXISTS "omniprof_causal_experiment{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "experiment" INTEGER NOT NULL,
    "mode" TEXT NOT NULL,
    "selected" TEXT NOT NULL,
    "speedup" REAL NOT NULL,
    "start" INTEGER NOT NULL, -- @time
    "end" INTEGER NOT NULL, -- @time
    "duration" INTEGER NOT NULL,
    "delay" INTEGER NOT NULL,
    "selected_samples" INTEGER NOT NULL,
    "sample_period" INTEGER NOT NULL
);

-- What each progress point did during each experiment (experiment = omniprof_causal_experiment
-- .experiment of the same pid). type: throughput (delta = visits) or latency (arrivals and
-- departures during the experiment, difference = begins - ends since the start, at its end).
CREATE TABLE IF NOT EXISTS "omniprof_causal_progress{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "experiment" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "delta" INTEGER NOT NULL,
    "arrivals" INTEGER NOT NULL,
    "departures" INTEGER NOT NULL,
    "difference" INTEGER NOT NULL
);

-- Communication calls (MPI_API and NCCL_API records, include/omniprof/comm.h; docs/multinode.md):
-- one row per traced call (phase 'call'; its rocpd_region is the event's) and per request
-- completed inside a wait or test (phase 'complete': no region; `start` = `end` = that call's
-- end; a receive's row has what arrived, a send's its dest and send_tag, its bytes being the
-- posting call's). Ranks (rank, dest, source, root) are world ranks; comm is a communicator id
-- shared by all its members. `sequence` orders a process's point-to-point calls: the k-th send
-- from A to B on (comm, tag) is received by the k-th receive B posted for it (view mpi_messages).
CREATE TABLE IF NOT EXISTS "omniprof_comm{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "tid" INTEGER REFERENCES "rocpd_info_thread{{uuid}}" ("id"),
    "event_id" INTEGER REFERENCES "rocpd_event{{uuid}}" ("id"),
    "api" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "class" TEXT NOT NULL,
    "phase" TEXT NOT NULL,
    "start" INTEGER NOT NULL, -- @time
    "end" INTEGER NOT NULL, -- @time
    "rank" INTEGER,
    "comm" INTEGER,
    "comm_rank" INTEGER,
    "comm_size" INTEGER,
    "dest" INTEGER,
    "source" INTEGER,
    "root" INTEGER,
    "send_tag" INTEGER,
    "recv_tag" INTEGER,
    "count" INTEGER,
    "datatype" TEXT,
    "reduce_op" TEXT,
    "bytes_sent" INTEGER NOT NULL,
    "bytes_received" INTEGER NOT NULL,
    "new_comm" INTEGER,
    "request" INTEGER,
    "sequence" INTEGER,
    "stream" INTEGER,
    "device" INTEGER,
    "return_value" INTEGER
);

-- Clock estimates (CLOCK_SYNC records): this process's CLOCK_MONOTONIC against the reference
-- rank's, measured over MPI round trips at init and at finalize. At local time local_timestamp
-- the reference clock read local_timestamp - offset (+/- error). `applied` = 1 once a merge has
-- moved this process's times onto the reference clock (readers then apply nothing).
CREATE TABLE IF NOT EXISTS "omniprof_clock{{uuid}}" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "guid" TEXT NOT NULL GENERATED ALWAYS AS ('{{guid}}') VIRTUAL,
    "pid" INTEGER NOT NULL REFERENCES "rocpd_info_process{{uuid}}" ("id"),
    "phase" TEXT NOT NULL,
    "rank" INTEGER NOT NULL,
    "reference_rank" INTEGER NOT NULL,
    "local_timestamp" INTEGER NOT NULL,
    "offset" INTEGER NOT NULL,
    "error" INTEGER NOT NULL,
    "round_trip" INTEGER NOT NULL,
    "round_trips" INTEGER NOT NULL,
    "applied" INTEGER NOT NULL DEFAULT 0 -- @unset
);
