-- summary_views.sql — rocpd's summary views: top_kernels, busy, top. Durations in these three
-- views are in microseconds (ns / 1000.0), as upstream.

CREATE VIEW IF NOT EXISTS "top_kernels" AS
SELECT
    K.name,
    COUNT(K.kernel_id) AS total_calls,
    SUM(K.end - K.start) / 1000.0 AS total_duration,
    (SUM(K.end - K.start) / COUNT(K.kernel_id)) / 1000.0 AS average,
    SUM(K.end - K.start) * 100.0 / (SELECT SUM(A.end - A.start) FROM "kernels" A) AS percentage
FROM "kernels" K
GROUP BY K.name
ORDER BY total_duration DESC;

-- Per agent: time the agent was busy with kernels and copies (copies count for their
-- destination agent), over the wall time spanned by all kernels and copies.
CREATE VIEW IF NOT EXISTS "busy" AS
SELECT
    B.agent_id, AG.type, B.GpuTime, W.WallTime,
    B.GpuTime * 1.0 / W.WallTime AS Busy
FROM (
        SELECT agent_id, guid, SUM("end" - "start") AS GpuTime
        FROM (
            SELECT agent_id, guid, "end", "start" FROM "rocpd_kernel_dispatch"
            UNION ALL
            SELECT dst_agent_id AS agent_id, guid, "end", "start" FROM "rocpd_memory_copy"
        )
        GROUP BY agent_id, guid
    ) B
    CROSS JOIN (
        SELECT MAX("end") - MIN("start") AS WallTime
        FROM (
            SELECT "end", "start" FROM "rocpd_kernel_dispatch"
            UNION ALL
            SELECT "end", "start" FROM "rocpd_memory_copy"
        )
    ) W
    INNER JOIN "rocpd_info_agent" AG ON AG.id = B.agent_id AND AG.guid = B.guid;

CREATE VIEW IF NOT EXISTS "top" AS
SELECT
    name,
    COUNT(*) AS total_calls,
    SUM(duration) / 1000.0 AS total_duration,
    (SUM(duration) / COUNT(*)) / 1000.0 AS average,
    SUM(duration) * 100.0 / total_time AS percentage
FROM (
        SELECT K.name, K.duration FROM "kernels" K
        UNION ALL
        SELECT MC.name, MC.duration FROM "memory_copies" MC
        UNION ALL
        SELECT R.name, R.duration FROM "regions" R
    ) operations
    CROSS JOIN (
        SELECT SUM("end" - "start") AS total_time
        FROM (
            SELECT "end", "start" FROM "kernels"
            UNION ALL
            SELECT "end", "start" FROM "memory_copies"
            UNION ALL
            SELECT "end", "start" FROM "regions"
        )
    ) TOTAL
GROUP BY name
ORDER BY total_duration DESC;
