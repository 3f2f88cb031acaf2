-- 0025: Kubernetes nodes' advertised GPUs in the observed inventory. raw.kube_node_runs: the
-- kube-state-metrics node series of a day as runs of equal values (sources/kube/node_runs.py
-- RAW_KUBE_NODE_RUNS_SCHEMA); staging.stg_kube__node_capacity: per node, hour and MIG profile
-- the count the node advertised (transforms/staging/stg_kube__node_capacity.py SCHEMA). Both
-- are day-partitioned lake tables (`day`). intermediate.int_gpu_inventory_observed gains
-- `source`: who observed the row (`dcgm`, or `kube`: a node's counts placed on cards); the
-- rows built before were all DCGM's. Docs: docs/kubernetes.md, docs/marts.md.

CREATE TABLE raw.kube_node_runs (
    cluster    VARCHAR NOT NULL,
    day        DATE NOT NULL,
    metric     VARCHAR,
    node       VARCHAR,
    labels     VARCHAR,
    value      DOUBLE,
    first_ts   TIMESTAMP,
    last_ts    TIMESTAMP,
    n_samples  BIGINT
);

CREATE TABLE staging.stg_kube__node_capacity (
    cluster        VARCHAR NOT NULL,
    hostname       VARCHAR,
    hour           TIMESTAMP,
    gpu_i_profile  VARCHAR,
    n_advertised   INTEGER,
    day            DATE NOT NULL
);

ALTER TABLE intermediate.int_gpu_inventory_observed ADD COLUMN source VARCHAR DEFAULT 'dcgm';
