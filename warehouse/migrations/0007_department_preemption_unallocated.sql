-- marts.mart_department_monthly: longest queue time, preempted runs and their GPU-hours, and
-- the per-cluster unallocated-capacity row (department '(unallocated)', is_unallocated true).
-- Columns: transforms/mart_department_monthly.py SCHEMA; documented in docs/marts.md.
ALTER TABLE marts.mart_department_monthly ADD COLUMN queue_seconds_max DOUBLE;
ALTER TABLE marts.mart_department_monthly ADD COLUMN preempted_job_count BIGINT;
ALTER TABLE marts.mart_department_monthly ADD COLUMN preempted_gpu_hours DOUBLE;
ALTER TABLE marts.mart_department_monthly ADD COLUMN is_unallocated BOOLEAN;
