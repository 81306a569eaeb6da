-- marker_views.sql — markers (NVTX and omniprof's user API) by the text they carry: ranges from
-- rocpd_region, marks from rocpd_sample, both of events whose category names a marker kind; the
-- text is the event's extdata "message" (ingest_host.c). Same view names and columns as the
-- marker views of rocpd, so that tools written for them (time windows by marker name, marker
-- summaries) read omniprof databases. Plain names only, (id, guid) joins; durations in ns.

CREATE VIEW IF NOT EXISTS "range_markers" AS
SELECT
    E.id, E.guid, C.string AS category,
    json_extract(E.extdata, '$.message') AS name,
    R.start, R.end, (R.end - R.start) AS duration,
    E.stack_id, E.parent_stack_id, E.correlation_id, E.call_stack, E.line_info,
    P.pid, T.tid, R.nid,
    O.string AS operation
FROM "rocpd_region" R
    INNER JOIN "rocpd_event" E ON E.id = R.event_id AND E.guid = R.guid
    INNER JOIN "rocpd_string" C ON C.id = E.category_id AND C.guid = E.guid
    INNER JOIN "rocpd_string" O ON O.id = R.name_id AND O.guid = R.guid
    LEFT JOIN "rocpd_info_process" P ON P.id = R.pid AND P.guid = R.guid
    LEFT JOIN "rocpd_info_thread" T ON T.id = R.tid AND T.guid = R.guid
WHERE C.string LIKE '%MARKER%' AND json_valid(E.extdata);

CREATE VIEW IF NOT EXISTS "single_markers" AS
SELECT
    E.id, E.guid, C.string AS category,
    json_extract(E.extdata, '$.message') AS name,
    S.timestamp,
    E.stack_id, E.parent_stack_id, E.correlation_id, E.call_stack, E.line_info,
    P.pid, T.tid, TR.nid
FROM "rocpd_sample" S
    INNER JOIN "rocpd_event" E ON E.id = S.event_id AND E.guid = S.guid
    INNER JOIN "rocpd_string" C ON C.id = E.category_id AND C.guid = E.guid
    INNER JOIN "rocpd_track" TR ON TR.id = S.track_id AND TR.guid = S.guid
    LEFT JOIN "rocpd_info_process" P ON P.id = TR.pid AND P.guid = TR.guid
    LEFT JOIN "rocpd_info_thread" T ON T.id = TR.tid AND T.guid = TR.guid
WHERE C.string LIKE '%MARKER%';

-- Ranges and marks together; a mark is a range of length 0 whose operation is 'roctxMarkA', the
-- name rocpd gives marks.
CREATE VIEW IF NOT EXISTS "markers" AS
SELECT * FROM "range_markers"
UNION ALL
SELECT
    id, guid, category, name, timestamp AS start, timestamp AS "end", 0 AS duration,
    stack_id, parent_stack_id, correlation_id, call_stack, line_info, pid, tid, nid,
    'roctxMarkA' AS operation
FROM "single_markers";

-- Per marker text: calls, total / average / min / max duration and the population standard
-- deviation; PERCENT (INC) is the share of the total over all texts.
CREATE VIEW IF NOT EXISTS "range_marker_summary" AS
WITH per_name AS (
    SELECT name, COUNT(*) AS calls, SUM(duration) AS total, AVG(duration) AS mean,
           MIN(duration) AS lo, MAX(duration) AS hi,
           AVG(duration * duration) AS mean_sq
    FROM "range_markers" WHERE name IS NOT NULL GROUP BY name
)
SELECT
    name, calls,
    total AS "DURATION (nsec)", mean AS "AVERAGE (nsec)",
    total * 100.0 / (SELECT SUM(total) FROM per_name) AS "PERCENT (INC)",
    lo AS "MIN (nsec)", hi AS "MAX (nsec)",
    sqrt(max(mean_sq - mean * mean, 0)) AS "STD_DEV"
FROM per_name;

CREATE VIEW IF NOT EXISTS "single_marker_summary" AS
SELECT name, COUNT(*) AS calls FROM "single_markers" GROUP BY name;

-- Ranges and marks (duration 0) per text; SQR is the sum of squared durations, VARIANCE the
-- population variance.
CREATE VIEW IF NOT EXISTS "marker_summary" AS
WITH all_markers AS (
    SELECT name, duration FROM "range_markers"
    UNION ALL
    SELECT name, 0 FROM "single_markers"
), per_name AS (
    SELECT name, COUNT(*) AS calls, SUM(duration) AS total, AVG(duration) AS mean,
           MIN(duration) AS lo, MAX(duration) AS hi,
           CAST(SUM(duration * duration) AS REAL) AS sq, AVG(duration * duration) AS mean_sq
    FROM all_markers WHERE name IS NOT NULL GROUP BY name
)
SELECT
    name, calls,
    total AS "DURATION (nsec)", sq AS "SQR (nsec)", mean AS "AVERAGE (nsec)",
    total * 100.0 / NULLIF((SELECT SUM(total) FROM per_name), 0) AS "PERCENT (INC)",
    lo AS "MIN (nsec)", hi AS "MAX (nsec)",
    max(mean_sq - mean * mean, 0) AS "VARIANCE",
    sqrt(max(mean_sq - mean * mean, 0)) AS "STD_DEV"
FROM per_name;
