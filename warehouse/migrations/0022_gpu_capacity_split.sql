-- 0022: marts.fct_gpu_capacity_split: each GPU-hour of marts.fct_gpu_hourly split into the
-- capacity states of contracts/capacity_states.py (one `<state>_seconds` column per state, in
-- STATES order). Columns: transforms/marts/fct_gpu_capacity_split.py SCHEMA + month; docs/marts.md.
CREATE TABLE marts.fct_gpu_capacity_split (
    cluster               VARCHAR NOT NULL,
    hostname              VARCHAR,
    gpu                   SMALLINT,
    gpu_i_id              SMALLINT,
    gpu_i_profile         VARCHAR,
    gpu_model             VARCHAR,
    hour                  TIMESTAMP,
    capacity_seconds      DOUBLE,
    allocated_seconds     DOUBLE,
    down_seconds          DOUBLE,
    planned_down_seconds  DOUBLE,
    reserved_seconds      DOUBLE,
    idle_seconds          DOUBLE,
    month                 DATE NOT NULL
);
