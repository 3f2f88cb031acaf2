"""staging.stg_slurm__jobs: one row per Slurm job run, from raw sacct rows.

Input: ``raw.slurm_sacct`` rows (RAW_SACCT_SCHEMA), possibly from several day partitions
(sacct reports a job on every day its run or pending time overlaps). Output: one row per
allocation run overlapping [window_start, window_end), plus runs not started (pending or
cancelled before start) that were submitted in it. Step rows (``.batch``, ``.extern``,
``.0``) are not allocations; their number is counted in ``n_steps``.

Dedup: rows with the same (cluster, job_id_raw, submit_time, start_time) are one run; the
row from the latest ``day`` wins (it has the newest state and end time). A not-started row
is dropped when a later day shows that run started. Requeued runs (``sacct -D``) share
job_id_raw but differ in start_time and stay distinct.

Rows that cannot be parsed are returned separately in QUARANTINE_SCHEMA, never dropped.
GPUs come from AllocTRES, or from ReqTRES while nothing is allocated (pending jobs).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import polars as pl

from cardhours.schemas import QUARANTINE_SCHEMA
from transforms.slurm_parse import (
    GPU_ALLOC_DTYPE,
    job_id_parts,
    map_distinct,
    parent_job_id_raw,
    parse_gpu_tres,
    parse_hosts,
    parse_timelimit,
    slurm_time,
    slurm_time_error,
    state_detail,
    state_name,
)

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "scheduler": pl.String(),
    "job_id": pl.String(),
    "job_id_raw": pl.String(),
    "array_job_id": pl.String(),
    "array_task_id": pl.String(),
    "het_job_id": pl.String(),
    "het_offset": pl.Int32(),
    "job_name": pl.String(),
    "user_name": pl.String(),
    "account": pl.String(),
    "partition_name": pl.String(),
    "qos": pl.String(),
    "state": pl.String(),
    "state_detail": pl.String(),
    "exit_code": pl.String(),
    "submit_time": pl.Datetime("us"),
    "eligible_time": pl.Datetime("us"),
    "start_time": pl.Datetime("us"),
    "end_time": pl.Datetime("us"),
    "is_open": pl.Boolean(),
    "gpus": pl.Float64(),
    "gpu_slots": pl.Int32(),
    "gpu_type": pl.String(),
    "is_mig": pl.Boolean(),
    "n_nodes": pl.Int32(),
    "hosts": pl.List(pl.String()),
    "timelimit_seconds": pl.Int64(),
    "n_steps": pl.Int32(),
}

TIME_COLUMNS = ("submit_time", "eligible_time", "start_time", "end_time")
RUN_KEY = ("cluster", "job_id_raw", "submit_time", "start_time")


def in_window(window_start: datetime, window_end: datetime) -> pl.Expr:
    """Runs overlapping [window_start, window_end), zero-length runs starting in it, and
    runs not started (null start_time) that were submitted in it."""
    start, end, submit = pl.col("start_time"), pl.col("end_time"), pl.col("submit_time")
    started = (
        start.is_not_null()
        & (start < window_end)
        & (end.is_null() | (end > window_start) | (start >= window_start))
    )
    waiting = start.is_null() & (submit >= window_start) & (submit < window_end)
    return started | waiting


def _with_parsed_times(raw: pl.DataFrame) -> pl.DataFrame:
    errors = [slurm_time_error(c).alias(f"_{c}_error") for c in TIME_COLUMNS]
    return raw.with_columns(*errors).with_columns(slurm_time(c).alias(c) for c in TIME_COLUMNS)


def _with_parsed_ids(frame: pl.DataFrame) -> pl.DataFrame:
    parts = job_id_parts("job_id")
    bad = pl.col("job_id").is_null() | parts.struct.field("base").is_null()
    return frame.with_columns(
        _job_id_error=pl.when(bad).then(pl.format("job_id: cannot parse '{}'", pl.col("job_id"))),
        _is_step=parts.struct.field("step").is_not_null(),
        _parent_raw=parent_job_id_raw("job_id_raw"),
        array_job_id=pl.when(parts.struct.field("array_task").is_not_null()).then(
            parts.struct.field("base")
        ),
        array_task_id=parts.struct.field("array_task"),
        het_job_id=pl.when(parts.struct.field("het_offset").is_not_null()).then(
            parts.struct.field("base")
        ),
        het_offset=parts.struct.field("het_offset").cast(pl.Int32),
        state_detail=state_detail("state"),
        state=state_name("state"),
    )


def _with_parsed_counts(frame: pl.DataFrame) -> pl.DataFrame:
    text = pl.col("n_nodes").str.strip_chars()
    n_nodes = text.cast(pl.Int32, strict=False)
    bad = text.is_not_null() & (text != "") & n_nodes.is_null()
    frame = frame.with_columns(
        _n_nodes_error=pl.when(bad).then(pl.format("n_nodes: cannot parse '{}'", pl.col("n_nodes"))),
        n_nodes=n_nodes,
    )
    frame = map_distinct(frame, "timelimit", parse_timelimit, pl.Int64(), "timelimit_seconds")
    return map_distinct(frame, "node_list", parse_hosts, pl.List(pl.String()), "hosts")


def _with_parsed_gpus(frame: pl.DataFrame, mig_weights: Mapping[str, float] | None) -> pl.DataFrame:
    """GPU columns from alloc_tres, or from req_tres where nothing is allocated yet."""

    def parse(tres: str | None) -> dict:
        return parse_gpu_tres(tres, mig_weights)._asdict()

    frame = map_distinct(frame, "alloc_tres", parse, GPU_ALLOC_DTYPE, "_alloc")
    frame = map_distinct(frame, "req_tres", parse, GPU_ALLOC_DTYPE, "_req")
    use_req = pl.col("alloc_tres").is_null() | (pl.col("alloc_tres").str.strip_chars() == "")
    gpu = pl.when(use_req).then(pl.col("_req")).otherwise(pl.col("_alloc"))
    return frame.with_columns(
        _gpu_error=pl.when(use_req).then(pl.col("_req_error")).otherwise(pl.col("_alloc_error")),
        gpus=gpu.struct.field("gpus"),
        gpu_slots=gpu.struct.field("gpu_slots"),
        gpu_type=gpu.struct.field("gpu_type"),
        is_mig=gpu.struct.field("is_mig"),
    )


ERROR_COLUMNS = (
    *(f"_{c}_error" for c in TIME_COLUMNS),
    "_job_id_error",
    "_n_nodes_error",
    "timelimit_seconds_error",
    "hosts_error",
    "_gpu_error",
)


def _with_reason(frame: pl.DataFrame) -> pl.DataFrame:
    """``_reason``: every parse error of the row joined with '; ' ('' when none)."""
    errors = [pl.col(c) for c in ERROR_COLUMNS]
    return frame.with_columns(_reason=pl.concat_str(errors, separator="; ", ignore_nulls=True))


def _rejects(indexed: pl.DataFrame, parsed: pl.DataFrame) -> pl.DataFrame:
    """The raw rows (``_row``-indexed) whose parse failed, as quarantine rows."""
    reasons = parsed.filter(pl.col("_reason") != "").select("_row", "_reason")
    rows = indexed.join(reasons, on="_row", maintain_order="left")
    return rows.select(
        pl.col("cluster"),
        source=pl.lit("sacct"),
        partition_key=pl.col("day").cast(pl.String),
        location=pl.format("{}:{}", pl.col("source"), pl.col("line_no")),
        reason=pl.col("_reason"),
        payload=pl.struct(pl.exclude("_row", "_reason")).struct.json_encode(),
        n_rows=pl.lit(1, pl.Int64),
    ).cast(QUARANTINE_SCHEMA)


def _latest_per_key(frame: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    return frame.sort("day", maintain_order=True).unique(subset=key, keep="last", maintain_order=True)


def _drop_superseded_pending(runs: pl.DataFrame) -> pl.DataFrame:
    """Drop not-started rows when a later day shows the same submission started."""
    key = ["cluster", "job_id_raw", "submit_time"]
    started = runs.filter(pl.col("start_time").is_not_null()).group_by(key).agg(
        _started_day=pl.col("day").max()
    )
    joined = runs.join(started, on=key, how="left", nulls_equal=True, maintain_order="left")
    keep = (
        pl.col("start_time").is_not_null()
        | pl.col("_started_day").is_null()
        | (pl.col("_started_day") <= pl.col("day"))
    )
    return joined.filter(keep).drop("_started_day")


def _with_step_counts(runs: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """``n_steps``: each step belongs to the latest run of its job started at or before it."""
    runs = runs.with_row_index("_run")
    started = runs.filter(pl.col("start_time").is_not_null()).select(
        "_run", "cluster", "job_id_raw", "start_time"
    )
    placed = (
        steps.filter(pl.col("start_time").is_not_null())
        .select("cluster", pl.col("_parent_raw").alias("job_id_raw"), "start_time")
        .sort("start_time")
        .join_asof(
            started.sort("start_time"), on="start_time", by=["cluster", "job_id_raw"], check_sortedness=False
        )
    )
    counts = placed.drop_nulls("_run").group_by("_run").agg(n_steps=pl.len().cast(pl.Int32))
    return (
        runs.join(counts, on="_run", how="left", maintain_order="left")
        .with_columns(pl.col("n_steps").fill_null(0))
        .drop("_run")
    )


def _parse(raw: pl.DataFrame, mig_weights: Mapping[str, float] | None) -> pl.DataFrame:
    parsed = _with_parsed_times(raw)
    parsed = _with_parsed_ids(parsed)
    parsed = _with_parsed_counts(parsed)
    parsed = _with_parsed_gpus(parsed, mig_weights)
    return _with_reason(parsed)


def stg_slurm__jobs(
    raw: pl.DataFrame,
    window_start: datetime,
    window_end: datetime,
    mig_weights: Mapping[str, float] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(jobs in SCHEMA, rejects in QUARANTINE_SCHEMA) from raw sacct rows.

    ``mig_weights`` maps a MIG gres type or profile ("3g.40gb") to its share of a GPU;
    profiles not in it count compute slices / 7.
    """
    indexed = raw.with_row_index("_row")
    parsed = _parse(indexed, mig_weights)
    rejects = _rejects(indexed, parsed)
    good = parsed.filter(pl.col("_reason") == "")
    steps = _latest_per_key(good.filter(pl.col("_is_step")), ["cluster", "job_id_raw", "start_time"])
    runs = _latest_per_key(good.filter(~pl.col("_is_step")), list(RUN_KEY))
    runs = _drop_superseded_pending(runs).filter(in_window(window_start, window_end))
    runs = _with_step_counts(runs, steps)
    jobs = runs.with_columns(
        scheduler=pl.lit("slurm"),
        is_open=pl.col("start_time").is_not_null() & pl.col("end_time").is_null(),
    )
    jobs = jobs.select(list(SCHEMA)).cast(SCHEMA)
    return jobs.sort(["cluster", "submit_time", "job_id_raw", "start_time"]), rejects
