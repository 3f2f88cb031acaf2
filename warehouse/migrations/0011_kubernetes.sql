-- 0011_kubernetes: GPU pods from kube-state-metrics (issue 7). Columns mirror
-- cardhours/sources/kube/landing.py (RAW_KUBE_SERIES_SCHEMA, RAW_KUBE_QUEUE_SCHEMA) and the
-- SCHEMA of transforms/stg_kube__pods.py and transforms/stg_kube__jobs.py, plus the
-- monthly partition column. Types as in 0001/0002.

-- One row per kube-state-metrics / Volcano series and day: first/last sample, count,
-- first/last/min/max value, last non-zero sample (docs/kubernetes.md). Partition: (cluster, day).
CREATE TABLE raw.kube_series (
    cluster          VARCHAR NOT NULL,
    day              DATE NOT NULL,
    metric           VARCHAR,
    namespace        VARCHAR,
    pod              VARCHAR,
    uid              VARCHAR,
    labels           VARCHAR,
    first_ts         TIMESTAMP,
    last_ts          TIMESTAMP,
    n_samples        BIGINT,
    first_value      DOUBLE,
    last_value       DOUBLE,
    min_value        DOUBLE,
    max_value        DOUBLE,
    last_nonzero_ts  TIMESTAMP
);

-- Every sample of the Kueue ClusterQueue series. Partition: (cluster, day).
CREATE TABLE raw.kube_queue_samples (
    cluster  VARCHAR NOT NULL,
    day      DATE NOT NULL,
    metric   VARCHAR,
    queue    VARCHAR,
    labels   VARCHAR,
    ts       TIMESTAMP,
    value    DOUBLE
);

-- One row per GPU pod overlapping the month. Partition: month.
CREATE TABLE staging.stg_kube__pods (
    cluster            VARCHAR NOT NULL,
    namespace          VARCHAR,
    pod                VARCHAR,
    pod_uid            VARCHAR,
    node               VARCHAR,
    owner_kind         VARCHAR,
    owner_name         VARCHAR,
    deployment_name    VARCHAR,
    priority_class     VARCHAR,
    queue_name         VARCHAR,
    department         VARCHAR,
    department_source  VARCHAR,
    phase              VARCHAR,
    created_time       TIMESTAMP,
    scheduled_time     TIMESTAMP,
    start_time         TIMESTAMP,
    end_time           TIMESTAMP,
    end_source         VARCHAR,
    end_error_seconds  BIGINT,
    is_open            BOOLEAN,
    gpus               DOUBLE,
    gpu_slots          INTEGER,
    gpu_type           VARCHAR,
    is_mig             BOOLEAN,
    mig_profile        VARCHAR,
    queue_seconds      DOUBLE,
    gpu_seconds        DOUBLE,
    month              DATE NOT NULL
);

-- One row per Kubernetes job (bare pod, replica pod, or owner of several pods). Partition: month.
CREATE TABLE staging.stg_kube__jobs (
    cluster              VARCHAR NOT NULL,
    scheduler            VARCHAR,
    job_id               VARCHAR,
    job_id_raw           VARCHAR,
    job_name             VARCHAR,
    user_name            VARCHAR,
    account              VARCHAR,
    partition_name       VARCHAR,
    qos                  VARCHAR,
    state                VARCHAR,
    submit_time          TIMESTAMP,
    eligible_time        TIMESTAMP,
    start_time           TIMESTAMP,
    end_time             TIMESTAMP,
    is_open              BOOLEAN,
    gpus                 DOUBLE,
    gpu_slots            INTEGER,
    gpu_type             VARCHAR,
    is_mig               BOOLEAN,
    n_nodes              INTEGER,
    hosts                VARCHAR[],
    namespace            VARCHAR,
    owner_kind           VARCHAR,
    owner_name           VARCHAR,
    deployment_name      VARCHAR,
    department           VARCHAR,
    department_source    VARCHAR,
    department_conflict  BOOLEAN,
    queue_name           VARCHAR,
    queue_seconds        DOUBLE,
    gpu_seconds          DOUBLE,
    end_error_seconds    BIGINT,
    n_pods               INTEGER,
    month                DATE NOT NULL
);
