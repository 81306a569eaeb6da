-- omniprof_views.sql — views over the omniprof_* tables, in the spirit of data_views.sql
-- (plain names only; (id, guid) joins; re-creatable as TEMPORARY views over many databases).

-- CPU call-stack samples with OS pid/tid and thread name.
CREATE VIEW IF NOT EXISTS "omniprof_cpu_samples" AS
SELECT
    CS.id, CS.guid, CS.nid, P.pid, T.tid, T.name AS thread_name,
    CS.timestamp, CS.clock, CS.stack_id, CS.num_frames,
    CS.thread_internal_value, CS.peak_rss_bytes, CS.event_values, CS.sample_id
FROM "omniprof_cpu_sample" CS
    INNER JOIN "rocpd_info_process" P ON P.id = CS.pid AND P.guid = CS.guid
    INNER JOIN "rocpd_info_thread" T ON T.id = CS.tid AND T.guid = CS.guid;

-- Every frame of every stack: stack_id is the innermost node, level 0 the innermost frame,
-- depth 0 the outermost. Symbol columns are NULL until the end of the run (and for inlined
-- callees, see omniprof_symbol). Filter by stack_id; the walk follows parent_id.
CREATE VIEW IF NOT EXISTS "omniprof_stack_frames" AS
WITH RECURSIVE walk(guid, stack_id, node_id, level) AS (
    SELECT guid, id, id, 0 FROM "omniprof_stack"
    UNION ALL
    SELECT W.guid, W.stack_id, S.parent_id, W.level + 1
    FROM walk W INNER JOIN "omniprof_stack" S ON S.id = W.node_id AND S.guid = W.guid
    WHERE S.parent_id != 0
)
SELECT
    W.guid, W.stack_id, W.level, S.depth, S.address,
    Y.function, Y.file, Y.line, Y.module, Y.module_offset
FROM walk W
    INNER JOIN "omniprof_stack" S ON S.id = W.node_id AND S.guid = W.guid
    LEFT JOIN "omniprof_symbol" Y ON Y.address = S.address AND Y.guid = S.guid AND Y.inline_depth = 0;

-- Process / system metrics as (name, units, timestamp, value).
CREATE VIEW IF NOT EXISTS "omniprof_metrics" AS
SELECT
    M.id, M.guid, TR.nid, P.pid,
    (SELECT string FROM "rocpd_string" RS WHERE RS.id = TR.name_id AND RS.guid = TR.guid) AS name,
    json_extract(TR.extdata, '$.units') AS units,
    json_extract(TR.extdata, '$.device_index') AS device_index,
    M.track_id, M.timestamp, M.value
FROM "omniprof_metric" M
    INNER JOIN "rocpd_track" TR ON TR.id = M.track_id AND TR.guid = M.guid
    LEFT JOIN "rocpd_info_process" P ON P.id = TR.pid AND P.guid = TR.guid;

-- Threads with omniprof's identity columns.
CREATE VIEW IF NOT EXISTS "omniprof_threads" AS
SELECT
    T.id, T.guid, T.nid, P.pid, T.tid, T.name, T.start, T.end,
    OT.parent_tid, OT.internal_value, OT.sequent_value,
    COALESCE(OT.is_profiler_thread, 0) AS is_profiler_thread
FROM "rocpd_info_thread" T
    INNER JOIN "rocpd_info_process" P ON P.id = T.pid AND P.guid = T.guid
    LEFT JOIN "omniprof_thread" OT ON OT.thread_id = T.id AND OT.guid = T.guid;

-- Memory sets, which live in rocpd_memory_copy under the name 'MEMORY_SET'.
CREATE VIEW IF NOT EXISTS "omniprof_memory_sets" AS
SELECT
    M.id, M.guid, M.nid, M.pid, M.tid, M.start, M.end, M.duration, M.size,
    M.dst_device AS device, M.dst_agent_abs_index AS agent_abs_index,
    M.stream_id, M.stream_name, M.stack_id, M.corr_id
FROM "memory_copies" M
WHERE M.name = 'MEMORY_SET';

-- GPU PC samples with their names (omniprof_pc_sample).
CREATE VIEW IF NOT EXISTS "pc_samples" AS
SELECT
    S.id, S.guid, S.nid, P.pid, S.agent_id, S.timestamp, S.method, S.stack_id, S.dispatch_id, S.kernel_id,
    (SELECT string FROM "rocpd_string" RS WHERE RS.id = S.kernel_name_id AND RS.guid = S.guid) AS kernel,
    S.code_object_id, S.pc_offset,
    (SELECT string FROM "rocpd_string" RS WHERE RS.id = S.instruction_id AND RS.guid = S.guid) AS instruction,
    (SELECT string FROM "rocpd_string" RS WHERE RS.id = S.file_id AND RS.guid = S.guid) AS file,
    S.line,
    (SELECT string FROM "rocpd_string" RS WHERE RS.id = S.stall_reason_id AND RS.guid = S.guid) AS stall_reason,
    S.samples, S.pc_samples
FROM "omniprof_pc_sample" S
    LEFT JOIN "rocpd_info_process" P ON P.id = S.pid AND P.guid = S.guid;

-- Stall reasons per kernel: samples and share of the kernel's samples.
CREATE VIEW IF NOT EXISTS "pc_sampling_stalls" AS
SELECT
    kernel, stall_reason, SUM(samples) AS samples,
    100.0 * SUM(samples) / (SELECT SUM(samples) FROM "pc_samples" A WHERE A.kernel IS S.kernel) AS percent
FROM "pc_samples" S
GROUP BY kernel, stall_reason;

-- Source lines by samples (lines known only for code built with -lineinfo).
CREATE VIEW IF NOT EXISTS "pc_sampling_lines" AS
SELECT
    kernel, file, line, SUM(samples) AS samples,
    100.0 * SUM(samples) / (SELECT SUM(samples) FROM "pc_samples" A WHERE A.kernel IS S.kernel) AS percent
FROM "pc_samples" S
WHERE line > 0
GROUP BY kernel, file, line;
