-- Kueue ClusterQueues and Volcano queues per month: transforms/mart_kube_queue_monthly.py
-- SCHEMA (docs/marts.md "marts.mart_kube_queue_monthly"). Partition: month.
CREATE TABLE marts.mart_kube_queue_monthly (
    cluster                          VARCHAR NOT NULL,
    month                            DATE NOT NULL,
    queue                            VARCHAR,
    queue_kind                       VARCHAR,
    admitted_workloads               BIGINT,
    admission_wait_mean_seconds      DOUBLE,
    admission_wait_p50_seconds       DOUBLE,
    admission_wait_p95_seconds       DOUBLE,
    pending_workloads_mean           DOUBLE,
    pending_workloads_max            DOUBLE,
    gpu_nominal_quota                DOUBLE,
    gpu_usage_mean                   DOUBLE,
    gpu_usage_peak                   DOUBLE,
    usage_share_mean                 DOUBLE,
    usage_share_peak                 DOUBLE,
    borrowed_gpu_hours               DOUBLE,
    scheduled_jobs                   BIGINT,
    scheduling_duration_mean_seconds DOUBLE,
    scheduling_duration_max_seconds  DOUBLE
);
