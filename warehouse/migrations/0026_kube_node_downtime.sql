-- 0026: staging.stg_kube__node_downtime: Kubernetes nodes not Ready or cordoned, as downtime
-- intervals clipped to the day. Columns: contracts/capacity_states.py DOWNTIME_INTERVAL; `day`
-- is the partition column (a lake table). Docs: docs/kubernetes.md "Nodes", docs/marts.md.

CREATE TABLE staging.stg_kube__node_downtime (
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
