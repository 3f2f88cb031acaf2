-- 0032: staging.stg_dcgm__gpu_xid: GPUs whose last XID error (DCGM_FI_DEV_XID_ERRORS) is a
-- critical one (contracts/xid.py), as downtime intervals clipped to the day. Columns:
-- contracts/capacity_states.py DOWNTIME_INTERVAL; `day` is the partition column (a lake table).
-- Docs: docs/marts.md.

CREATE TABLE staging.stg_dcgm__gpu_xid (
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
