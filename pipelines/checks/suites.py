"""Expectation suites for the raw tables, built in code (no GX project directory).

Column-map expectations skip nulls, so a nullable metric (`gpu_util`, `power_w`, `energy_mj` on
MIG rows, or a field a site does not export) is range-checked only where it is present; the
key columns get an explicit not-null expectation. Every expectation uses `mostly=1.0`: one bad
row fails the suite.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import great_expectations as gx
import great_expectations.expectations as gxe
import polars as pl

from contracts.schemas import RAW_SACCT_SCHEMA, RAW_SAMPLE_SCHEMA
from transforms.helpers.dcgm_sentinels import BOUNDS, value_limits
from transforms.helpers.slurm_rows import GPU_CAPACITY_SLACK

SAMPLE_KEY_COLUMNS: tuple[str, ...] = ("cluster", "day", "ts", "hostname", "gpu", "uuid")
SACCT_KEY_COLUMNS: tuple[str, ...] = (
    "job_id",
    "job_id_raw",
    "state",
    "submit_time",
    "cluster",
    "day",
    "line_no",
)
# 123 | 123_7 | 123_[1-9%2] (pending array, with throttle) | 123+0 (het job) | any of those
# followed by a step: .batch .extern .0
SLURM_JOB_ID_REGEX = r"^\d+(?:[_+][\d\[\]\-,%]+)?(?:\.[A-Za-z0-9_]+)?$"


def between(
    column: str,
    min_value: float | None = None,
    max_value: float | None = None,
    *,
    strict_max: bool = False,
) -> gxe.ExpectColumnValuesToBeBetween:
    """Every non-null value of `column` within [min_value, max_value] (either bound optional)."""
    return gxe.ExpectColumnValuesToBeBetween(
        column=column,
        min_value=min_value,
        max_value=max_value,
        strict_max=strict_max,
        mostly=1.0,
    )


def suite_from_schema(
    name: str,
    schema: Mapping[str, pl.DataType],
    *,
    non_null: Iterable[str] = (),
    extra: Iterable[gxe.Expectation] = (),
) -> gx.ExpectationSuite:
    """A suite: columns exactly `schema`'s names in order, `non_null` columns free of nulls, plus `extra`.

    Types are not checked here: the warehouse DDL and the polars schemas on ingest own them, and
    GX type names differ between the pandas and SQL backends.
    """
    columns = list(schema)
    required = list(non_null)
    unknown = [column for column in required if column not in schema]
    if unknown:
        raise ValueError(f"non_null columns {unknown} are not in the schema of {name!r}")
    expectations: list[gxe.Expectation] = [gxe.ExpectTableColumnsToMatchOrderedList(column_list=columns)]
    expectations += [gxe.ExpectColumnValuesToNotBeNull(column=column, mostly=1.0) for column in required]
    for expectation in extra:
        column = getattr(expectation, "column", None)
        if column is not None and column not in schema:
            raise ValueError(f"{type(expectation).__name__} names column {column!r}, not in {name!r}")
        expectations.append(expectation)
    suite = gx.ExpectationSuite(name=name, expectations=expectations)
    # ExpectationSuite logs and drops an expectation it cannot process; never lose one silently.
    if len(suite.expectations) != len(expectations):
        raise ValueError(f"suite {name!r} dropped expectations while being built")
    return suite


def raw_dcgm_samples_suite() -> gx.ExpectationSuite:
    """`raw.dcgm_samples`: RAW_SAMPLE_SCHEMA columns, non-null keys, physical value ranges."""
    # The same bounds screening applies (transforms.helpers.dcgm_sentinels), so a value that passed
    # screening can never fail this blocking check.
    ranges = [between(column, *value_limits(column)) for column in BOUNDS]
    return suite_from_schema("raw.dcgm_samples", RAW_SAMPLE_SCHEMA, non_null=SAMPLE_KEY_COLUMNS, extra=ranges)


def raw_slurm_sacct_suite() -> gx.ExpectationSuite:
    """`raw.slurm_sacct`: RAW_SACCT_SCHEMA columns, non-null keys, Slurm-shaped job ids."""
    job_id = gxe.ExpectColumnValuesToMatchRegex(column="job_id", regex=SLURM_JOB_ID_REGEX, mostly=1.0)
    return suite_from_schema("raw.slurm_sacct", RAW_SACCT_SCHEMA, non_null=SACCT_KEY_COLUMNS, extra=[job_id])


STAGED_RUN_KEY: tuple[str, ...] = ("cluster", "job_id_raw", "submit_time", "start_time")
# The columns of stg_slurm__jobs the suite reads, plus ``gpu_capacity`` (see staged_jobs_frame).
STAGED_JOBS_CHECK_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "job_id_raw": pl.String(),
    "submit_time": pl.Datetime("us"),
    "start_time": pl.Datetime("us"),
    "end_time": pl.Datetime("us"),
    "state": pl.String(),
    "gpus": pl.Float64(),
    "n_nodes": pl.Int32(),
    "gpu_capacity": pl.Float64(),
}


def node_gpu_capacity(inventory: pl.DataFrame) -> pl.DataFrame:
    """Per cluster: ``max_node_gpus``, the most GPUs (MIG instances as fractions) one node has."""
    per_node = inventory.group_by("cluster", "hostname").agg(pl.col("gpu_fraction").sum().alias("gpus"))
    return per_node.group_by("cluster").agg(pl.col("gpus").max().alias("max_node_gpus"))


def staged_jobs_frame(jobs: pl.DataFrame, max_node_gpus: pl.DataFrame) -> pl.DataFrame:
    """What staged_jobs_suite validates: the checked columns of ``jobs`` and ``gpu_capacity`` =
    n_nodes x the cluster's max_node_gpus (null when either is unknown: not checked)."""
    capacity = pl.col("n_nodes") * pl.col("max_node_gpus") + GPU_CAPACITY_SLACK
    return (
        jobs.join(max_node_gpus.select("cluster", "max_node_gpus"), on="cluster", how="left")
        .with_columns(capacity.alias("gpu_capacity"))
        .select(list(STAGED_JOBS_CHECK_SCHEMA))
        .cast(STAGED_JOBS_CHECK_SCHEMA)
    )


def staged_jobs_suite() -> gx.ExpectationSuite:
    """``staging.stg_slurm__jobs`` (as staged_jobs_frame): one row per run key, start <= end where
    both are known, GPUs within the nodes' capacity. Staging quarantines rows that break the last
    two (transforms.helpers.slurm_policy), so these guard the transform itself; unknown states are staged
    with a warning (see unknown_states_check), not checked here."""
    extra = [
        gxe.ExpectCompoundColumnsToBeUnique(column_list=list(STAGED_RUN_KEY), ignore_row_if="never", mostly=1.0),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="end_time", column_B="start_time", or_equal=True, ignore_row_if="either_value_is_missing"
        ),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="gpu_capacity", column_B="gpus", or_equal=True, ignore_row_if="either_value_is_missing"
        ),
    ]
    return suite_from_schema(
        "staging.stg_slurm__jobs",
        STAGED_JOBS_CHECK_SCHEMA,
        non_null=("cluster", "job_id_raw", "state", "gpus"),
        extra=extra,
    )
