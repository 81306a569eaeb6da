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

-- MPI calls (omniprof_comm rows of api 'MPI', docs/multinode.md) with the OS thread and the
-- correlation ids of their events (a request completion's parent_stack_id is the wait or test).
CREATE VIEW IF NOT EXISTS "mpi_calls" AS
SELECT
    C.id, C.guid, C.pid, T.tid, C.rank, C.name, C.class, C.phase, C.start, C."end", C."end" - C.start AS duration,
    C.comm, C.comm_rank, C.comm_size, C.dest, C.source, C.root, C.send_tag, C.recv_tag, C.count, C.datatype,
    C.reduce_op, C.bytes_sent, C.bytes_received, C.new_comm, C.request, C.sequence, C.return_value, C.event_id,
    E.stack_id, E.parent_stack_id
FROM "omniprof_comm" C
    LEFT JOIN "rocpd_info_thread" T ON T.id = C.tid AND T.guid = C.guid
    LEFT JOIN "rocpd_event" E ON E.id = C.event_id AND E.guid = C.guid
WHERE C.api = 'MPI';

-- Point-to-point messages, once the senders' and receivers' rows are together (a merged database,
-- or databases attached and unioned): by MPI's non-overtaking rule the k-th message rank A sent to
-- rank B on communicator C with tag T is the one B's k-th receive for it (in posting order)
-- matched. Receives: MPI_Recv and MPI_Sendrecv(_replace) calls (the status named the sender) and
-- completed nonblocking receives. In a merged database the times are on rank 0's clock
-- (docs/multinode.md, "Clocks"); unioned rank databases keep each process's own.
CREATE VIEW IF NOT EXISTS "mpi_messages" AS
WITH
    S AS (SELECT id, guid, rank, dest, comm, send_tag AS tag, bytes_sent AS bytes, start, "end", event_id,
                 row_number() OVER (PARTITION BY rank, dest, comm, send_tag ORDER BY sequence) AS k
            FROM "omniprof_comm"
           WHERE api = 'MPI' AND phase = 'call' AND class IN ('send', 'sendrecv') AND dest >= 0),
    R AS (SELECT id, guid, rank, source, comm, recv_tag AS tag, bytes_received AS bytes, start, "end", event_id,
                 row_number() OVER (PARTITION BY rank, source, comm, recv_tag ORDER BY sequence) AS k
            FROM "omniprof_comm"
           WHERE api = 'MPI' AND source >= 0
             AND ((phase = 'call' AND name IN ('MPI_Recv', 'MPI_Sendrecv', 'MPI_Sendrecv_replace')) OR phase = 'complete'))
SELECT
    S.rank AS src_rank, R.rank AS dst_rank, S.comm, S.tag, S.bytes AS bytes_sent, R.bytes AS bytes_received,
    S.start AS send_start, S."end" AS send_end, R."end" AS recv_end,
    S.id AS send_id, S.guid AS send_guid, S.event_id AS send_event_id,
    R.id AS recv_id, R.guid AS recv_guid, R.event_id AS recv_event_id
FROM S JOIN R ON R.rank = S.dest AND R.source = S.rank AND R.comm = S.comm AND R.tag = S.tag AND R.k = S.k;

-- NCCL calls (api 'NCCL') and the GPU kernels each launched: the kernels whose launching CUDA
-- call ran inside the NCCL call on its thread (grouped operations launch in ncclGroupEnd). Needs
-- the kernel and CUDA API traces (--nccl-trace turns them on).
CREATE VIEW IF NOT EXISTS "nccl_calls" AS
SELECT
    C.id, C.guid, C.pid, T.tid, C.rank, C.name, C.class, C.start, C."end", C."end" - C.start AS duration,
    C.comm, C.comm_rank, C.comm_size, C.root, C.dest, C.source, C.count, C.datatype, C.reduce_op,
    C.bytes_sent, C.bytes_received, C.stream, C.device, C.return_value, C.event_id
FROM "omniprof_comm" C
    LEFT JOIN "rocpd_info_thread" T ON T.id = C.tid AND T.guid = C.guid
WHERE C.api = 'NCCL';

CREATE VIEW IF NOT EXISTS "nccl_kernels" AS
SELECT
    C.id AS call_id, C.guid, C.pid, C.name AS call, C.comm, C.comm_rank, C.device,
    K.id AS kernel_id, RS.string AS kernel, K.start, K."end", K."end" - K.start AS duration, K.stream_id,
    LE.stack_id AS launch_stack_id
FROM "omniprof_comm" C
    JOIN "rocpd_region" L ON L.guid = C.guid AND L.tid = C.tid AND L.start >= C.start AND L.start <= C."end"
    JOIN "rocpd_event" LE ON LE.id = L.event_id AND LE.guid = L.guid
    JOIN "rocpd_kernel_dispatch" K ON K.guid = LE.guid AND K.event_id IN
        (SELECT KE.id FROM "rocpd_event" KE WHERE KE.guid = LE.guid AND KE.stack_id = LE.stack_id)
    LEFT JOIN "rocpd_string" RS ON RS.id = K.region_name_id AND RS.guid = K.guid
WHERE C.api = 'NCCL' AND C.phase = 'call';

-- GPU PM samples (PM sampling, docs/cuda.md): one row per (device, metric, sample window).
CREATE VIEW IF NOT EXISTS "pm_samples" AS
SELECT
    M.id, M.guid, M.nid, M.pid, M.device_index,
    json_extract(TR.extdata, '$.metric') AS metric, M.units,
    M.timestamp AS start, M.timestamp + json_extract(TR.extdata, '$.interval_ns') AS "end",
    M.value, M.track_id
FROM "omniprof_metrics" M
    INNER JOIN "rocpd_track" TR ON TR.id = M.track_id AND TR.guid = M.guid
WHERE json_extract(TR.extdata, '$.source') = 'pm_sampling';

-- SASS metrics with their names (omniprof_sass_metric).
CREATE VIEW IF NOT EXISTS "sass_metrics" AS
SELECT
    S.id, S.guid, S.nid, P.pid, S.agent_id, S.timestamp, S.kernel_id,
    (SELECT string FROM "rocpd_string" RS WHERE RS.id = S.kernel_name_id AND RS.guid = S.guid) AS kernel,
    S.code_object_id, S.pc_offset,
    (SELECT string FROM "rocpd_string" RS WHERE RS.id = S.instruction_id AND RS.guid = S.guid) AS instruction,
    (SELECT string FROM "rocpd_string" RS WHERE RS.id = S.file_id AND RS.guid = S.guid) AS file,
    S.line,
    (SELECT string FROM "rocpd_string" RS WHERE RS.id = S.metric_id AND RS.guid = S.guid) AS metric,
    S.value
FROM "omniprof_sass_metric" S
    LEFT JOIN "rocpd_info_process" P ON P.id = S.pid AND P.guid = S.guid;

-- Per SASS instruction: executed instructions (warp level) and thread instructions.
CREATE VIEW IF NOT EXISTS "sass_instructions" AS
SELECT
    kernel, code_object_id, pc_offset, instruction, file, line,
    SUM(CASE WHEN metric = 'smsp__sass_inst_executed' THEN value ELSE 0 END) AS inst_executed,
    SUM(CASE WHEN metric = 'smsp__sass_thread_inst_executed' THEN value ELSE 0 END) AS thread_inst_executed
FROM "sass_metrics"
GROUP BY guid, kernel, code_object_id, pc_offset;

-- Per source line (lines known only for code built with -lineinfo).
CREATE VIEW IF NOT EXISTS "sass_lines" AS
SELECT
    kernel, file, line, COUNT(*) AS instructions,
    SUM(inst_executed) AS inst_executed, SUM(thread_inst_executed) AS thread_inst_executed
FROM "sass_instructions"
WHERE line > 0
GROUP BY kernel, file, line;

-- Unified memory events with OS pid and agent indexes (omniprof_unified_memory).
CREATE VIEW IF NOT EXISTS "memory_unified" AS
SELECT
    U.id, U.guid, U.nid, P.pid, U.operation, U.start, U."end", (U."end" - U.start) AS duration,
    U.src_agent_id, SA.type AS src_agent_type, COALESCE(SA.logical_index, SA.absolute_index) AS src_agent_index,
    U.dst_agent_id, DA.type AS dst_agent_type, COALESCE(DA.logical_index, DA.absolute_index) AS dst_agent_index,
    U.address, U.bytes, U.value, U.cause
FROM "omniprof_unified_memory" U
    LEFT JOIN "rocpd_info_process" P ON P.id = U.pid AND P.guid = U.guid
    LEFT JOIN "rocpd_info_agent" SA ON SA.id = U.src_agent_id AND SA.guid = U.guid
    LEFT JOIN "rocpd_info_agent" DA ON DA.id = U.dst_agent_id AND DA.guid = U.guid;

-- Page migrations of unified memory: direction, bytes, addresses.
CREATE VIEW IF NOT EXISTS "memory_migrations" AS
SELECT * FROM "memory_unified" WHERE operation LIKE 'MIGRATE_%';

-- Page faults of unified memory (CPU and GPU) and what the driver did against thrashing.
CREATE VIEW IF NOT EXISTS "memory_page_faults" AS
SELECT * FROM "memory_unified" WHERE operation IN ('CPU_PAGE_FAULT', 'GPU_PAGE_FAULT');
CREATE VIEW IF NOT EXISTS "memory_thrashing" AS
SELECT * FROM "memory_unified" WHERE operation IN ('THRASHING', 'THROTTLING', 'REMOTE_MAP');
