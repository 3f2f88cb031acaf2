-- 0031: Slurm node records in the observed inventory. raw.slurm_node_snapshots: the
-- `scontrol show node --oneliner` records read when a day landed, or a saved output
-- (contracts/slurm_nodes.py SLURM_NODE_SCHEMA); staging.stg_slurm__node_capacity: per node,
-- hour and MIG profile the count of the snapshot in effect (the columns of
-- staging.stg_kube__node_capacity). Both are day-partitioned lake tables (`day`).
-- intermediate.int_gpu_inventory_observed rows placed from them have `source` = 'slurm'.
-- Docs: docs/slurm.md "Node records", docs/marts.md.

CREATE TABLE raw.slurm_node_snapshots (
    cluster      VARCHAR NOT NULL,
    hostname     VARCHAR,
    gpu_type     VARCHAR,
    mig_profile  VARCHAR,
    gpus         INTEGER,
    state        VARCHAR,
    reason       VARCHAR,
    read_at      TIMESTAMP,
    source       VARCHAR,
    line_no      BIGINT,
    day          DATE NOT NULL
);

CREATE TABLE staging.stg_slurm__node_capacity (
    cluster        VARCHAR NOT NULL,
    hostname       VARCHAR,
    hour           TIMESTAMP,
    gpu_i_profile  VARCHAR,
    n_advertised   INTEGER,
    day            DATE NOT NULL
);
