"""Column contracts shared by sources, simulator, transforms and warehouse (see docs/design.md)."""

from __future__ import annotations

import polars as pl

from contracts.signals import SIGNAL_NAMES

SAMPLE_LABEL_SCHEMA: dict[str, pl.DataType] = {
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "uuid": pl.String(),
    "model_name": pl.String(),
    "pci_bus_id": pl.String(),
    "device": pl.String(),
    "gpu_i_id": pl.Int16(),
    "gpu_i_profile": pl.String(),
    "hpc_job": pl.String(),
}

# Labels added by migration 0004 (so they follow the value columns in the table).
SAMPLE_WORKLOAD_LABEL_SCHEMA: dict[str, pl.DataType] = {
    # Kubernetes workload labels (pod/namespace/container, or exported_* / pod_name / pod_namespace).
    "pod": pl.String(),
    "namespace": pl.String(),
    "container": pl.String(),
    # Every other label of the series as a JSON object with sorted keys ("{}" when none):
    # kept, not dropped (instance, job, the exporter's driver version, site relabels...).
    "extra_labels": pl.String(),
}

# Every label column of a sample row, as the sources' label normalization fills them.
SERIES_LABEL_SCHEMA: dict[str, pl.DataType] = {**SAMPLE_LABEL_SCHEMA, **SAMPLE_WORKLOAD_LABEL_SCHEMA}
LABEL_COLUMNS: list[str] = list(SERIES_LABEL_SCHEMA)

# One Float64 column per signal (contracts.signals), in its order and unit.
SAMPLE_VALUE_COLUMNS: list[str] = list(SIGNAL_NAMES)

RAW_SAMPLE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "day": pl.Date(),
    "ts": pl.Datetime("us"),
    **SAMPLE_LABEL_SCHEMA,
    **{name: pl.Float64() for name in SAMPLE_VALUE_COLUMNS},
    **SAMPLE_WORKLOAD_LABEL_SCHEMA,
}

# The fixed sacct --format list, in order, and the raw column each lands in.
SACCT_FIELDS: dict[str, str] = {
    "JobID": "job_id",
    "JobIDRaw": "job_id_raw",
    "JobName": "job_name",
    "User": "user_name",
    "Account": "account",
    "Partition": "partition_name",
    "QOS": "qos",
    "State": "state",
    "ExitCode": "exit_code",
    "Submit": "submit_time",
    "Eligible": "eligible_time",
    "Start": "start_time",
    "End": "end_time",
    "ElapsedRaw": "elapsed_raw",
    "Timelimit": "timelimit",
    "NNodes": "n_nodes",
    "NodeList": "node_list",
    "AllocTRES": "alloc_tres",
    "ReqTRES": "req_tres",
    "Cluster": "slurm_cluster",
}

SACCT_FORMAT = ",".join(SACCT_FIELDS)

RAW_SACCT_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "day": pl.Date(),
    "source": pl.String(),
    "line_no": pl.Int64(),
    **{column: pl.String() for column in SACCT_FIELDS.values()},
    "read_note": pl.String(),  # how the line was repaired while reading (null: read as it was)
    "raw_line": pl.Binary(),  # the line's bytes, kept only when they were not UTF-8
}

QUARANTINE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "source": pl.String(),
    "partition_key": pl.String(),
    "location": pl.String(),
    "reason": pl.String(),
    "payload": pl.String(),
    "n_rows": pl.Int64(),  # input rows (samples, lines) this quarantine entry stands for
}


def empty_frame(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """An empty frame with exactly this schema."""
    return pl.DataFrame(schema=schema)
