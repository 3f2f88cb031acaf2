-- 0027: staging.stg_dcgm__gpu_dropout: GPUs whose DCGM series stopped while their host's other
-- GPUs reported, as downtime intervals clipped to the day. Columns:
-- contracts/capacity_states.py DOWNTIME_INTERVAL; `day` is the partition column (a lake table).
-- Docs: docs/marts.md.

CREATE TABLE staging.stg_dcgm__gpu_dropout (
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
