-- 0005: the minute rollup and the per-day field presence of DCGM samples (issue 3), and the
-- coverage of the hourly rollup. Columns mirror the SCHEMA constants of
-- transforms/stg_dcgm__gpu_minutely.py and transforms/stg_dcgm__field_presence.py; `day` is
-- the partition column the pipeline adds to the minute rollup.

-- Per GPU or MIG instance x hpc_job x pod x minute: sample count, coverage, means and maxima
-- (gpu_util as a 0-1 ratio), the best signal's mean, memory and power. Partition: day.
CREATE TABLE staging.stg_dcgm__gpu_minutely (
    cluster                VARCHAR NOT NULL,
    hostname               VARCHAR,
    gpu                    SMALLINT,
    uuid                   VARCHAR,
    gpu_i_id               SMALLINT,
    gpu_i_profile          VARCHAR,
    hpc_job                VARCHAR,
    pod                    VARCHAR,
    namespace              VARCHAR,
    minute                 TIMESTAMP,
    n_samples              BIGINT,
    expected_samples       BIGINT,
    coverage               DOUBLE,
    gpu_util_mean          DOUBLE,
    gpu_util_max           DOUBLE,
    gr_engine_active_mean  DOUBLE,
    gr_engine_active_max   DOUBLE,
    sm_active_mean         DOUBLE,
    sm_active_max          DOUBLE,
    sm_occupancy_mean      DOUBLE,
    sm_occupancy_max       DOUBLE,
    tensor_active_mean     DOUBLE,
    tensor_active_max      DOUBLE,
    dram_active_mean       DOUBLE,
    dram_active_max        DOUBLE,
    best_signal_mean       DOUBLE,
    fb_used_mib_mean       DOUBLE,
    fb_used_mib_max        DOUBLE,
    power_w_mean           DOUBLE,
    day                    DATE NOT NULL
);

-- Per GPU or MIG instance x day x DCGM field: non-null and non-zero sample counts, min, max
-- (raw units), and whether the field sat at exactly 0 all day while another activity field
-- moved (suspect_flat_zero). Partition: day.
CREATE TABLE staging.stg_dcgm__field_presence (
    cluster           VARCHAR NOT NULL,
    day               DATE NOT NULL,
    hostname          VARCHAR,
    gpu               SMALLINT,
    uuid              VARCHAR,
    gpu_i_id          SMALLINT,
    field             VARCHAR NOT NULL,
    n_samples         BIGINT,
    n_nonzero         BIGINT,
    min_value         DOUBLE,
    max_value         DOUBLE,
    suspect_flat_zero BOOLEAN
);

-- The hourly rollup gains `coverage` = n_samples / expected_samples, at most 1 (null when
-- nothing is expected). The table is rebuilt rather than ALTERed so that its columns keep
-- the order of transforms/stg_dcgm__gpu_hourly.py SCHEMA (plus `day`), and existing rows get
-- their coverage computed from the counts they already hold.
CREATE TABLE staging.stg_dcgm__gpu_hourly_0005 (
    cluster              VARCHAR NOT NULL,
    hostname             VARCHAR,
    gpu                  SMALLINT,
    uuid                 VARCHAR,
    model_name           VARCHAR,
    gpu_i_id             SMALLINT,
    gpu_i_profile        VARCHAR,
    hpc_job              VARCHAR,
    hour                 TIMESTAMP,
    n_samples            BIGINT,
    expected_samples     BIGINT,
    coverage             DOUBLE,
    first_ts             TIMESTAMP,
    last_ts              TIMESTAMP,
    gpu_util_sum         DOUBLE,
    gpu_util_n           BIGINT,
    gpu_util_max         DOUBLE,
    gr_engine_active_sum DOUBLE,
    gr_engine_active_n   BIGINT,
    gr_engine_active_max DOUBLE,
    sm_active_sum        DOUBLE,
    sm_active_n          BIGINT,
    sm_active_max        DOUBLE,
    sm_occupancy_sum     DOUBLE,
    sm_occupancy_n       BIGINT,
    sm_occupancy_max     DOUBLE,
    tensor_active_sum    DOUBLE,
    tensor_active_n      BIGINT,
    tensor_active_max    DOUBLE,
    dram_active_sum      DOUBLE,
    dram_active_n        BIGINT,
    dram_active_max      DOUBLE,
    fb_used_mib_max      DOUBLE,
    fb_used_mib_sum      DOUBLE,
    fb_used_mib_n        BIGINT,
    power_w_sum          DOUBLE,
    power_w_n            BIGINT,
    energy_delta_mj      DOUBLE,
    zero_samples         BIGINT,
    day                  DATE NOT NULL
);

INSERT INTO staging.stg_dcgm__gpu_hourly_0005
SELECT
    cluster,
    hostname,
    gpu,
    uuid,
    model_name,
    gpu_i_id,
    gpu_i_profile,
    hpc_job,
    hour,
    n_samples,
    expected_samples,
    CASE WHEN expected_samples > 0 THEN least(n_samples / expected_samples, 1.0) END,
    first_ts,
    last_ts,
    gpu_util_sum,
    gpu_util_n,
    gpu_util_max,
    gr_engine_active_sum,
    gr_engine_active_n,
    gr_engine_active_max,
    sm_active_sum,
    sm_active_n,
    sm_active_max,
    sm_occupancy_sum,
    sm_occupancy_n,
    sm_occupancy_max,
    tensor_active_sum,
    tensor_active_n,
    tensor_active_max,
    dram_active_sum,
    dram_active_n,
    dram_active_max,
    fb_used_mib_max,
    fb_used_mib_sum,
    fb_used_mib_n,
    power_w_sum,
    power_w_n,
    energy_delta_mj,
    zero_samples,
    day
FROM staging.stg_dcgm__gpu_hourly;

DROP TABLE staging.stg_dcgm__gpu_hourly;

ALTER TABLE staging.stg_dcgm__gpu_hourly_0005 RENAME TO stg_dcgm__gpu_hourly;
