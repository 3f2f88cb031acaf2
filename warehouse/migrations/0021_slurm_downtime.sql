-- 0021: staging.stg_slurm__downtime: Slurm node events and reservations of the day as downtime
-- intervals, clipped to the day. Columns: contracts/capacity_states.py DOWNTIME_INTERVAL; `day`
-- is the partition column. Stored in the lake (this table becomes a view over its files).
CREATE TABLE staging.stg_slurm__downtime (
    cluster      VARCHAR NOT NULL,
    hostname     VARCHAR,
    gpu          SMALLINT,
    state        VARCHAR,
    start_ts     TIMESTAMP,
    end_ts       TIMESTAMP,
    reason       VARCHAR,
    reported_by  VARCHAR,
    source       VARCHAR,
    day          DATE NOT NULL
);
