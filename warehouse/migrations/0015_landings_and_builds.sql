-- 0015: what landed and what was built, so a close can tell a complete, freshly built month
-- from one with missing or failed days or stale marts (docs/chargeback.md, "Closed months").
--
-- meta.landings: one row per cluster x UTC day x source (dcgm, sacct, kube), the latest
-- landing of that day. Written by the daily ingest assets (pipelines/assets/ingest.py,
-- kube.py) in the transaction of the partition write; status 'ok' (landed and within the
-- day's checks), 'rejected' (landed, but a blocking check of the day failed) or 'failed'
-- (nothing landed: the read or the write failed; `detail` says why). `rows`: rows written;
-- `quarantined` / `screened`: values (dcgm), lines (sacct) or series (kube) quarantined /
-- looked at, for the month's quarantine share.
-- meta.monthly_builds: the latest monthly build of each month. The monthly job's first step
-- writes status 'started' with the newest landing it builds on (`landed_through`); the
-- chargeback export, its last chargeback step, sets 'finished'. `accepted_gaps`: the reason
-- given to build over failed or missing days (null: every day had landed).
CREATE SCHEMA meta;

CREATE TABLE meta.landings (
    cluster     VARCHAR NOT NULL,
    day         DATE NOT NULL,
    source      VARCHAR NOT NULL,
    landed_at   TIMESTAMP,
    rows        BIGINT,
    quarantined BIGINT,
    screened    BIGINT,
    status      VARCHAR NOT NULL,
    detail      VARCHAR,
    PRIMARY KEY (cluster, day, source)
);

CREATE TABLE meta.monthly_builds (
    month          DATE PRIMARY KEY,
    started_at     TIMESTAMP,
    landed_through TIMESTAMP,
    finished_at    TIMESTAMP,
    status         VARCHAR NOT NULL,
    accepted_gaps  VARCHAR
);

-- Warehouses from before this migration: every raw partition already written counts as a
-- landing (time and counts unknown), every month with a chargeback reconciliation as a
-- finished build; the close's recompute still checks those marts against fct_job_usage.
INSERT INTO meta.landings (cluster, day, source, landed_at, rows, status, detail)
SELECT
    url_decode(split_part(split_part(partition_key, '/', 1), '=', 2)),
    CAST(split_part(split_part(partition_key, '/', 2), '=', 2) AS DATE),
    CASE table_name WHEN 'raw.dcgm_samples' THEN 'dcgm' WHEN 'raw.slurm_sacct' THEN 'sacct' ELSE 'kube' END,
    NULL,
    rows,
    'ok',
    'landed before landings were recorded (taken from main.partition_writes)'
FROM main.partition_writes
WHERE table_name IN ('raw.dcgm_samples', 'raw.slurm_sacct', 'raw.kube_series')
  AND partition_key LIKE 'cluster=%/day=%';

INSERT INTO meta.monthly_builds (month, status)
SELECT DISTINCT CAST(split_part(partition_key, '=', 2) AS DATE), 'finished'
FROM main.partition_writes
WHERE table_name = 'marts.mart_chargeback_reconciliation' AND partition_key LIKE 'month=%';
