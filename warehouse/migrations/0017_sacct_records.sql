-- sacct lines repaired while reading: a JobName holding '|' rebuilt from both ends, bytes
-- that were not UTF-8 replaced. read_note says what was done; raw_line keeps the original
-- bytes (only for lines that were not UTF-8) as evidence.
ALTER TABLE raw.slurm_sacct ADD COLUMN read_note VARCHAR;
ALTER TABLE raw.slurm_sacct ADD COLUMN raw_line BLOB;

-- A runaway job (terminal state, End Unknown) is billed to an inferred end; this says which
-- bound it was (time_limit, last_sample, month_end). Null for every other run.
ALTER TABLE staging.stg_slurm__jobs ADD COLUMN end_inferred_from VARCHAR;
