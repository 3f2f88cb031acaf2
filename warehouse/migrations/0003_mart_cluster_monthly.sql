-- marts.mart_cluster_monthly: the review's headline numbers, one row per cluster and month
-- (columns: transforms/mart_cluster_monthly.py SCHEMA; documented in docs/marts.md).
CREATE TABLE marts.mart_cluster_monthly (
    cluster VARCHAR NOT NULL,
    month DATE NOT NULL,
    capacity_gpus DOUBLE,
    capacity_gpu_hours DOUBLE,
    allocated_gpu_hours DOUBLE,
    active_gpu_hours DOUBLE,
    idle_gpu_hours DOUBLE,
    infra_idle_gpu_hours DOUBLE,
    zero_util_gpu_hours DOUBLE,
    allocation_ratio DOUBLE,
    utilization DOUBLE,
    job_count BIGINT,
    jobs_without_samples BIGINT,
    sample_coverage DOUBLE,
    queue_seconds_p50 DOUBLE,
    queue_seconds_p95 DOUBLE,
    energy_kwh DOUBLE
);
