"""Raw sacct rows parsed column by column (times, ids, states, counts, GPUs), each parse error
kept as a reason on its row; rows with a reason become quarantine rows."""

from __future__ import annotations

from collections.abc import Mapping

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

TIME_COLUMNS = ("submit_time", "eligible_time", "start_time", "end_time")


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


def quarantine_rows(indexed: pl.DataFrame, parsed: pl.DataFrame) -> pl.DataFrame:
    """The raw rows (``_row``-indexed) whose parse failed, as quarantine rows."""
    reasons = parsed.filter(pl.col("_reason") != "").select("_row", "_reason")
    rows = indexed.join(reasons, on="_row", maintain_order="left")
    return rows.select(
        pl.col("cluster"),
        source=pl.lit("sacct"),
        partition_key=pl.col("day").cast(pl.String),
        location=pl.format("{}:{}", pl.col("source"), pl.col("line_no")),
        reason=pl.col("_reason"),
        payload=pl.struct(pl.exclude("_row", "_reason", "raw_line"), raw_base64=pl.col("raw_line").bin.encode("base64"))
        .struct.json_encode(),
        n_rows=pl.lit(1, pl.Int64),
    ).cast(QUARANTINE_SCHEMA)


def parse_rows(raw: pl.DataFrame, mig_weights: Mapping[str, float] | None) -> pl.DataFrame:
    """Every field parsed, plus ``_reason`` (the row's parse errors, '' when none)."""
    parsed = _with_parsed_times(raw)
    parsed = _with_parsed_ids(parsed)
    parsed = _with_parsed_counts(parsed)
    parsed = _with_parsed_gpus(parsed, mig_weights)
    return _with_reason(parsed)
