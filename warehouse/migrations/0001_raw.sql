-- 0001_raw: the schemas, the raw landing tables and the partition bookkeeping.
-- Column names and types follow cardhours/schemas.py (RAW_SAMPLE_SCHEMA,
-- RAW_SACCT_SCHEMA, QUARANTINE_SCHEMA): String -> VARCHAR, Int16 -> SMALLINT,
-- Int64 -> BIGINT, Date -> DATE, Datetime("us") -> TIMESTAMP (naive UTC), Float64 -> DOUBLE.
-- Applied migrations are immutable: change the schema in a new NNNN_name.sql file.

CREATE SCHEMA raw;
CREATE SCHEMA staging;
CREATE SCHEMA intermediate;
CREATE SCHEMA marts;

-- One row per GPU-or-MIG-instance x hpc_job x sample time. No primary key: it is the
-- big table; replace_partition keeps a (cluster, day) partition exact instead.
CREATE TABLE raw.dcgm_samples (
    cluster          VARCHAR NOT NULL,
    day              DATE NOT NULL,
    ts               TIMESTAMP,
    hostname         VARCHAR,
    gpu              SMALLINT,
    uuid             VARCHAR,
    model_name       VARCHAR,
    pci_bus_id       VARCHAR,
    device           VARCHAR,
    gpu_i_id         SMALLINT,
    gpu_i_profile    VARCHAR,
    hpc_job          VARCHAR,
    gpu_util         DOUBLE,
    gr_engine_active DOUBLE,
    sm_active        DOUBLE,
    sm_occupancy     DOUBLE,
    tensor_active    DOUBLE,
    dram_active      DOUBLE,
    fb_used_mib      DOUBLE,
    fb_free_mib      DOUBLE,
    power_w          DOUBLE,
    energy_mj        DOUBLE
);

-- One row per sacct --parsable2 line; every sacct field kept as text.
CREATE TABLE raw.slurm_sacct (
    cluster        VARCHAR NOT NULL,
    day            DATE NOT NULL,
    source         VARCHAR,
    line_no        BIGINT,
    job_id         VARCHAR,
    job_id_raw     VARCHAR,
    job_name       VARCHAR,
    user_name      VARCHAR,
    account        VARCHAR,
    partition_name VARCHAR,
    qos            VARCHAR,
    state          VARCHAR,
    exit_code      VARCHAR,
    submit_time    VARCHAR,
    eligible_time  VARCHAR,
    start_time     VARCHAR,
    end_time       VARCHAR,
    elapsed_raw    VARCHAR,
    timelimit      VARCHAR,
    n_nodes        VARCHAR,
    node_list      VARCHAR,
    alloc_tres     VARCHAR,
    req_tres       VARCHAR,
    slurm_cluster  VARCHAR
);

-- Input rows that could not be parsed. Deliberately no wall-clock column: a rerun of
-- the same partition must produce identical rows.
CREATE TABLE raw.quarantine (
    cluster       VARCHAR NOT NULL,
    source        VARCHAR NOT NULL,
    partition_key VARCHAR NOT NULL,
    location      VARCHAR,
    reason        VARCHAR,
    payload       VARCHAR
);

-- The last write of each partition (see warehouse.partitions). Row count only, no
-- timestamps, so that reruns leave the database identical.
CREATE TABLE main.partition_writes (
    table_name    VARCHAR NOT NULL,
    partition_key VARCHAR NOT NULL,
    rows          BIGINT NOT NULL,
    PRIMARY KEY (table_name, partition_key)
);
