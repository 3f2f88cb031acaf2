-- 0008: intermediate.int_gpu_minutes_attributed (issue 4): DCGM minute rollups tied to Slurm
-- job runs, per cluster x GPU (or MIG instance) x hour x run x attribution method, computed
-- once per month and read by marts.fct_job_usage and marts.fct_gpu_hourly (and by reviews).
-- Columns: transforms/int_gpu_minutes_attributed.py SCHEMA + month; docs/marts.md.
-- Partition: month. (0001 creates the schema; IF NOT EXISTS keeps this file self-contained.)

CREATE SCHEMA IF NOT EXISTS intermediate;

CREATE TABLE intermediate.int_gpu_minutes_attributed (
    cluster                VARCHAR NOT NULL,
    hostname               VARCHAR,
    gpu                    SMALLINT,
    gpu_i_id               SMALLINT,
    gpu_i_profile          VARCHAR,
    hour                   TIMESTAMP,
    job_id_raw             VARCHAR,
    start_time             TIMESTAMP,
    attribution_method     VARCHAR NOT NULL,
    samples                DOUBLE,
    gpu_util_sum           DOUBLE,
    gpu_util_n             DOUBLE,
    gr_engine_active_sum   DOUBLE,
    gr_engine_active_n     DOUBLE,
    sm_active_sum          DOUBLE,
    sm_active_n            DOUBLE,
    tensor_active_sum      DOUBLE,
    tensor_active_n        DOUBLE,
    best_sum               DOUBLE,
    best_n                 DOUBLE,
    zero_samples           DOUBLE,
    fb_used_mib_max        DOUBLE,
    fb_used_mib_sum        DOUBLE,
    fb_used_mib_n          DOUBLE,
    energy_j               DOUBLE,
    month                  DATE NOT NULL
);
