"""Raw sacct rows parsed column by column (times, ids, states, counts, GPUs), each parse error
kept as a reason on its row; rows with a reason become quarantine rows."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from contracts.schemas import QUARANTINE_SCHEMA
from transforms.helpers.slurm_parse import (
    GPU_ALLOC_DTYPE,
    SLURM_TIME_FORMAT,
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
from transforms.helpers.slurm_policy import MAX_NODE_COUNT, RAN_STATES, reason, reason_code

TIME_COLUMNS = ("submit_time", "eligible_time", "start_time", "end_time")
GPU_CAPACITY_SLACK = 1e-9  # MIG fractions summed in floating point


def _with_parsed_times(raw: pl.DataFrame) -> pl.DataFrame:
    errors = [slurm_time_error(c).alias(f"_{c}_error") for c in TIME_COLUMNS]
    keep = pl.col("start_time").alias("_start_text")
    return raw.with_columns(*errors, keep).with_columns(slurm_time(c).alias(c) for c in TIME_COLUMNS)


def _with_parsed_ids(frame: pl.DataFrame) -> pl.DataFrame:
    parts = job_id_parts("job_id")
    bad = pl.col("job_id").is_null() | parts.struct.field("base").is_null()
    return frame.with_columns(
        _job_id_error=pl.when(bad).then(pl.format("job_id: cannot parse '{}'", pl.col("job_id"))),
        _is_step=parts.struct.field("step").is_not_null(),
        _parent_raw=parent_job_id_raw("job_id_raw"),
        array_job_id=pl.when(parts.struct.field("array_task").is_not_null()).then(parts.struct.field("base")),
        array_task_id=parts.struct.field("array_task"),
        het_job_id=pl.when(parts.struct.field("het_offset").is_not_null()).then(parts.struct.field("base")),
        het_offset=parts.struct.field("het_offset").cast(pl.Int32),
        state_detail=state_detail("state"),
        state=state_name("state"),
    )


def _with_parsed_counts(frame: pl.DataFrame) -> pl.DataFrame:
    text = pl.col("n_nodes").str.strip_chars()
    digits = text.str.contains(r"^\d+$")
    n_nodes = text.cast(pl.Int64, strict=False)
    absurd = digits & (text.str.len_chars() > 9) | (n_nodes > MAX_NODE_COUNT)
    bad = text.is_not_null() & (text != "") & ~digits
    frame = frame.with_columns(
        _n_nodes_error=pl.when(bad)
        .then(pl.format("n_nodes: cannot parse '{}'", pl.col("n_nodes")))
        .when(absurd)
        .then(pl.format("n_nodes: {}", pl.lit(reason("ABSURD_COUNT", "")) + pl.col("n_nodes") + " nodes")),
        n_nodes=pl.when(absurd).then(None).otherwise(n_nodes).cast(pl.Int32),
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


def _with_record_errors(frame: pl.DataFrame, max_node_gpus: pl.DataFrame | None) -> pl.DataFrame:
    """``_record_error``: a parsed record that cannot be true (slurm_policy has the rules)."""
    start, end = pl.col("start_time"), pl.col("end_time")
    ran = pl.col("state").is_in(RAN_STATES) | (pl.col("elapsed_raw").str.strip_chars().cast(pl.Int64, strict=False) > 0)
    parsed_start = pl.col("_start_time_error").is_null()
    if max_node_gpus is None:
        frame = frame.with_columns(_capacity=pl.lit(None, pl.Float64))
    else:
        capacity = max_node_gpus.select("cluster", pl.col("max_node_gpus").cast(pl.Float64).alias("_node_gpus"))
        frame = frame.join(capacity, on="cluster", how="left", maintain_order="left")
        frame = frame.with_columns(_capacity=pl.col("n_nodes") * pl.col("_node_gpus")).drop("_node_gpus")
    over = (pl.col("n_nodes") > 0) & (pl.col("gpus") > pl.col("_capacity") + GPU_CAPACITY_SLACK)
    error = (
        pl.when(start.is_null() & parsed_start & ran)
        .then(
            pl.format(
                "{}state {}, ElapsedRaw {}, but no Start ('{}')",
                pl.lit(reason("START_MISSING", "")),
                "state",
                "elapsed_raw",
                "_start_text",
            )
        )
        .when(end < start)
        .then(
            pl.format(
                "{}End {} is before Start {}",
                pl.lit(reason("END_BEFORE_START", "")),
                end.dt.strftime(SLURM_TIME_FORMAT),
                start.dt.strftime(SLURM_TIME_FORMAT),
            )
        )
        .when(over)
        .then(
            pl.format(
                "{}{} GPUs on {} node(s) of at most {} GPUs each",
                pl.lit(reason("GPUS_OVER_NODES", "")),
                "gpus",
                "n_nodes",
                pl.col("_capacity") / pl.col("n_nodes"),
            )
        )
    )
    return frame.with_columns(_record_error=error).drop("_capacity")


ERROR_COLUMNS = (
    *(f"_{c}_error" for c in TIME_COLUMNS),
    "_job_id_error",
    "_n_nodes_error",
    "timelimit_seconds_error",
    "hosts_error",
    "_gpu_error",
    "_record_error",
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
        payload=pl.struct(
            pl.exclude("_row", "_reason", "raw_line", "_start_text"), raw_base64=pl.col("raw_line").bin.encode("base64")
        ).struct.json_encode(),
        n_rows=pl.lit(1, pl.Int64),
    ).cast(QUARANTINE_SCHEMA)


def parse_rows(
    raw: pl.DataFrame, mig_weights: Mapping[str, float] | None, max_node_gpus: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Every field parsed, plus ``_reason`` (the row's parse errors and impossible values, '' when none).

    ``max_node_gpus`` (cluster, max_node_gpus) bounds the GPUs a row may hold per node; without
    it that check is skipped."""
    parsed = _with_parsed_times(raw)
    parsed = _with_parsed_ids(parsed)
    parsed = _with_parsed_counts(parsed)
    parsed = _with_parsed_gpus(parsed, mig_weights)
    parsed = _with_record_errors(parsed, max_node_gpus)
    return _with_reason(parsed)


def row_rejects(
    raw: pl.DataFrame, mig_weights: Mapping[str, float] | None, max_node_gpus: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The raw rows staging will quarantine, as quarantine rows (for a day's quality share)."""
    indexed = raw.with_row_index("_row")
    return quarantine_rows(indexed, parse_rows(indexed, mig_weights, max_node_gpus))


def rejects_by_code(rejects: pl.DataFrame) -> tuple[dict[str, int], dict[str, str]]:
    """Quarantine rows counted by policy code, and one example (``location: reason``) per code."""
    counts: dict[str, int] = {}
    examples: dict[str, str] = {}
    for location, text in rejects.select("location", "reason").iter_rows():
        code = reason_code(text)
        counts[code] = counts.get(code, 0) + 1
        examples.setdefault(code, f"{location}: {text}")
    return counts, examples
