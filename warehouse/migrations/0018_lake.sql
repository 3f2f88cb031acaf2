-- 0018: the day-partitioned tables move to the lake (Parquet files, warehouse/lake.py,
-- docs/storage.md). raw.quarantine keeps its name for readers but becomes a view over the
-- lake (the daily sources' rejects, one file per source, cluster and day) and over
-- raw.quarantine_monthly (the rejects of the monthly staging steps, written by the monthly
-- job into this file). The tables created by earlier migrations stay the column types of the
-- lake files; cardhours exports their rows to the lake and replaces them by views when it
-- first opens the warehouse with a lake (warehouse/lake_upgrade.py).
CREATE TABLE raw.quarantine_monthly (
    cluster       VARCHAR NOT NULL,
    source        VARCHAR NOT NULL,
    partition_key VARCHAR NOT NULL,
    location      VARCHAR,
    reason        VARCHAR,
    payload       VARCHAR,
    n_rows        BIGINT
);

INSERT INTO raw.quarantine_monthly
SELECT cluster, source, partition_key, location, reason, payload, n_rows
FROM raw.quarantine WHERE source NOT IN ('dcgm', 'sacct', 'kube');

DELETE FROM raw.quarantine WHERE source NOT IN ('dcgm', 'sacct', 'kube');

UPDATE main.partition_writes SET table_name = 'raw.quarantine_monthly'
WHERE table_name = 'raw.quarantine' AND partition_key NOT LIKE 'cluster=%';
