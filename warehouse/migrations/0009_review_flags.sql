-- 0009 (issue 5): the monthly review's flags and per-user table.
-- marts.fct_job_flags: one row per flagged job run and reason (transforms/fct_job_flags.py SCHEMA).
-- marts.mart_user_monthly: per cluster x user x department (transforms/mart_user_monthly.py SCHEMA).
-- Partition: month (the first day). Documented in docs/marts.md.

CREATE TABLE marts.fct_job_flags (
    cluster             VARCHAR NOT NULL,
    job_id              VARCHAR,
    job_id_raw          VARCHAR NOT NULL,
    start_time          TIMESTAMP,
    user_name           VARCHAR,
    account             VARCHAR,
    department          VARCHAR,
    division            VARCHAR,
    partition_name      VARCHAR,
    job_name            VARCHAR,
    gpus                DOUBLE,
    gpu_model           VARCHAR,
    gpu_hours           DOUBLE,
    utilization         DOUBLE,
    utilization_signal  VARCHAR,
    reason              VARCHAR NOT NULL,
    severity            VARCHAR NOT NULL,
    detail              VARCHAR,
    recommendation      VARCHAR,
    wasted_gpu_hours    DOUBLE,
    idle_gpu_hours      DOUBLE,
    idle_cost           DOUBLE,
    currency            VARCHAR,
    month               DATE NOT NULL
);

CREATE TABLE marts.mart_user_monthly (
    cluster                      VARCHAR NOT NULL,
    user_name                    VARCHAR,
    department                   VARCHAR,
    division                     VARCHAR,
    job_count                    BIGINT,
    gpu_hours                    DOUBLE,
    active_gpu_hours             DOUBLE,
    idle_gpu_hours               DOUBLE,
    zero_util_gpu_hours          DOUBLE,
    utilization                  DOUBLE,
    idle_cost                    DOUBLE,
    currency                     VARCHAR,
    flagged_job_count            BIGINT,
    wasted_gpu_hours             DOUBLE,
    is_zero_util_over_threshold  BOOLEAN,
    is_low_efficiency            BOOLEAN,
    month                        DATE NOT NULL
);
