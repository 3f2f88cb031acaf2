-- 0019: the day's DCGM minute rows summed per GPU (or MIG instance), label and hour in fixed
-- point (units of 1e-12, DECIMAL(38,0)), from which the month's attribution takes the hours
-- that go whole to one place. Columns mirror the SCHEMA of
-- transforms/staging/stg_dcgm__gpu_hour_sums.py; `day` is the partition column. Stored in the
-- lake like the other day-partitioned tables (this table becomes a view over its files).
CREATE TABLE staging.stg_dcgm__gpu_hour_sums (
    cluster               VARCHAR NOT NULL,
    hostname              VARCHAR,
    gpu                   SMALLINT,
    gpu_i_id              SMALLINT,
    gpu_i_profile         VARCHAR,
    hpc_job               VARCHAR,
    pod                   VARCHAR,
    namespace             VARCHAR,
    hour                  TIMESTAMP,
    step_seconds          DOUBLE,
    zero_threshold        DOUBLE,
    mig_weights           VARCHAR,
    minute_rows           BIGINT,
    first_minute          TIMESTAMP,
    last_minute           TIMESTAMP,
    fb_used_mib_max       DOUBLE,
    samples_e12           DECIMAL(38,0),
    gpu_util_sum_e12      DECIMAL(38,0),
    gpu_util_n_e12        DECIMAL(38,0),
    gr_engine_active_sum_e12 DECIMAL(38,0),
    gr_engine_active_n_e12 DECIMAL(38,0),
    sm_active_sum_e12     DECIMAL(38,0),
    sm_active_n_e12       DECIMAL(38,0),
    tensor_active_sum_e12 DECIMAL(38,0),
    tensor_active_n_e12   DECIMAL(38,0),
    best_sum_e12          DECIMAL(38,0),
    best_n_e12            DECIMAL(38,0),
    zero_samples_e12      DECIMAL(38,0),
    fb_used_mib_sum_e12   DECIMAL(38,0),
    fb_used_mib_n_e12     DECIMAL(38,0),
    energy_j_e12          DECIMAL(38,0),
    day                   DATE NOT NULL
);
