-- 0004: Kubernetes workload labels and the remaining labels on raw samples; a row count on
-- quarantine entries (one entry may stand for a group of rejected samples).
ALTER TABLE raw.dcgm_samples ADD COLUMN pod VARCHAR;
ALTER TABLE raw.dcgm_samples ADD COLUMN namespace VARCHAR;
ALTER TABLE raw.dcgm_samples ADD COLUMN container VARCHAR;
ALTER TABLE raw.dcgm_samples ADD COLUMN extra_labels VARCHAR;
ALTER TABLE raw.quarantine ADD COLUMN n_rows BIGINT;
