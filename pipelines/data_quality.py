"""A month's data quality as people read it: quarantined input by cluster, source and reason code,
the runs billed to an inferred end (runaway jobs), the coverage gaps (days a source answered with
nothing: warehouse/books/landings.py), and the cards DCGM reported otherwise than the config's
inventory declares. Used by the review and the CLI summary."""

from __future__ import annotations

from datetime import date

import duckdb
import polars as pl

from config import Config
from pipelines.checks.quarantine import WORST_VALUE_SUFFIX
from transforms.helpers.slurm_policy import reason_code
from transforms.intermediate.int_gpu_inventory_observed import difference_advice, inventory_differences
from transforms.intermediate.inventory_models import model_differences
from transforms.marts.fct_chargeback_focus import month_bounds
from warehouse import read_frame
from warehouse.books.inventory import differing_rows, model_hours_read
from warehouse.books.landings import coverage_gaps
from warehouse.landings import month_landings

SACCT_SOURCES = ("sacct", "stg_slurm__jobs")
QUARANTINE_SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "source": pl.String(),
    "reason": pl.String(),
    "rows": pl.Int64(),
    "example": pl.String(),
}
_QUARANTINE_SQL = """
SELECT cluster, source, location, reason, coalesce(n_rows, 1) AS n_rows FROM raw.quarantine
WHERE partition_key >= ? AND partition_key < ? ORDER BY cluster, source, location
"""
_RUNAWAY_SQL = """
SELECT cluster, job_id, user_name, account, state, start_time, timelimit_seconds, end_time, end_inferred_from, gpus
FROM staging.stg_slurm__jobs WHERE month = ? AND end_inferred_from IS NOT NULL ORDER BY cluster, start_time, job_id
"""


def _next_month(month: date) -> date:
    return date(month.year + (month.month == 12), month.month % 12 + 1, 1)


def quarantine_summary(conn: duckdb.DuckDBPyConnection, month: date) -> pl.DataFrame:
    """Per cluster, source and reason (a policy code for sacct rows): rows quarantined in the
    month's partitions and one example (``location: reason``)."""
    rows = read_frame(conn, _QUARANTINE_SQL, [month.isoformat(), _next_month(month).isoformat()])
    if rows.is_empty():
        return pl.DataFrame(schema=QUARANTINE_SUMMARY_SCHEMA)
    code = pl.col("reason").map_elements(reason_code, return_dtype=pl.String)
    generic = pl.col("reason").fill_null("no reason").str.replace(WORST_VALUE_SUFFIX, "")
    keyed = rows.with_columns(
        _key=pl.when(pl.col("source").is_in(SACCT_SOURCES)).then(code).otherwise(generic),
        _example=pl.format("{}: {}", "location", "reason"),
    )
    summary = keyed.group_by("cluster", "source", "_key", maintain_order=True).agg(
        pl.col("n_rows").sum().alias("rows"), pl.col("_example").first().alias("example")
    )
    return (
        summary.rename({"_key": "reason"})
        .sort("cluster", "source", "rows", descending=[False, False, True])
        .select(list(QUARANTINE_SUMMARY_SCHEMA))
        .cast(QUARANTINE_SUMMARY_SCHEMA)
    )


def runaway_runs(conn: duckdb.DuckDBPyConnection, month: date) -> pl.DataFrame:
    """Staged runs of the month whose unknown End was inferred, with the evidence."""
    return read_frame(conn, _RUNAWAY_SQL, [month])


def inventory_mismatches(conn: duckdb.DuckDBPyConnection, config: Config, month: date) -> pl.DataFrame:
    """Per card whose observed layout or DCGM model differed from the config's in the month: what,
    declared, observed, the hours affected and ``advice`` (what to change in the config)."""
    start, end = month_bounds(month)
    declared = config.inventory_frame()
    layouts = inventory_differences(declared, differing_rows(conn, config, start, end))
    differences = pl.concat([layouts, model_differences(declared, model_hours_read(conn, start, end))])
    advice = [difference_advice(row) for row in differences.iter_rows(named=True)]
    return differences.with_columns(pl.Series("advice", advice, dtype=pl.String))


def month_coverage_gaps(conn: duckdb.DuckDBPyConnection, month: date) -> pl.DataFrame:
    """The month's coverage gaps, as runs of days per cluster, source and cause (``GAP_SCHEMA``)."""
    return coverage_gaps(month_landings(conn, month, _next_month(month)))
