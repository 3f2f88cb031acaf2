-- 0012: Kubernetes pods in the attribution and the marts (issue 7, part 2). DCGM minutes labelled with a pod
-- are tied to the pod's job (methods pod_label / pod_shared); on a time-sliced or MPS-shared
-- GPU (several pods' rows in one GPU-minute) the minute's samples are split between the pods
-- and the part split off each pod's own rows is kept in split_off_samples, so that
-- samples + split_off_samples = the minute rows' samples (docs/marts.md).
-- Columns: transforms/int_gpu_minutes_attributed.py SCHEMA + month, in that order, so the
-- table is rebuilt (rows stored before this migration split nothing: 0).

CREATE TABLE intermediate.int_gpu_minutes_attributed_0012 (
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
    split_off_samples      DOUBLE,
    month                  DATE NOT NULL
);

INSERT INTO intermediate.int_gpu_minutes_attributed_0012
SELECT * EXCLUDE (month), 0.0 AS split_off_samples, month FROM intermediate.int_gpu_minutes_attributed;

DROP TABLE intermediate.int_gpu_minutes_attributed;

ALTER TABLE intermediate.int_gpu_minutes_attributed_0012 RENAME TO int_gpu_minutes_attributed;

-- Kubernetes inference Deployments per month: transforms/mart_deployment_monthly.py SCHEMA
-- (month is part of it). Partition: month.
CREATE TABLE marts.mart_deployment_monthly (
    cluster             VARCHAR NOT NULL,
    month               DATE NOT NULL,
    namespace           VARCHAR,
    deployment_name     VARCHAR,
    department          VARCHAR,
    division            VARCHAR,
    gpu_model           VARCHAR,
    replica_pods        BIGINT,
    replica_hours       DOUBLE,
    mean_replicas       DOUBLE,
    peak_replicas       BIGINT,
    gpu_hours           DOUBLE,
    measured_gpu_hours  DOUBLE,
    active_gpu_hours    DOUBLE,
    idle_gpu_hours      DOUBLE,
    utilization         DOUBLE,
    energy_kwh          DOUBLE
);
