-- 0020: intermediate.int_gpu_inventory_observed: the GPUs and MIG instances the DCGM hourly
-- rollup reported, per cluster, host, GPU (or MIG instance) and hour of the month. Capacity
-- takes each card's observed layout where it differs from the config's inventory.
-- Columns: transforms/intermediate/int_gpu_inventory_observed.py SCHEMA + month; docs/marts.md.

CREATE TABLE intermediate.int_gpu_inventory_observed (
    cluster        VARCHAR NOT NULL,
    hostname       VARCHAR,
    gpu            SMALLINT,
    uuid           VARCHAR,
    model_name     VARCHAR,
    gpu_i_id       SMALLINT,
    gpu_i_profile  VARCHAR,
    hour           TIMESTAMP,
    n_samples      BIGINT,
    month          DATE NOT NULL
);
