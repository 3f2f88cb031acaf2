-- sacct lines repaired while reading: a JobName holding '|' rebuilt from both ends, bytes
-- that were not UTF-8 replaced. read_note says what was done; raw_line keeps the original
-- bytes (only for lines that were not UTF-8) as evidence.
ALTER TABLE raw.slurm_sacct ADD COLUMN read_note VARCHAR;
ALTER TABLE raw.slurm_sacct ADD COLUMN raw_line BLOB;
