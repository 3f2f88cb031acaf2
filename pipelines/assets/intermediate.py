"""Intermediate: DCGM minutes attributed to Slurm job runs, computed once per month.

``intermediate.int_gpu_minutes_attributed`` is read by ``marts.fct_job_usage`` and
``marts.fct_gpu_hourly`` (and by other readers: columns are the transform's SCHEMA + month,
docs/marts.md). The rows are computed in DuckDB (``transforms/intermediate/int_gpu_minutes_attributed.py``)
and fetched as Arrow straight into ``replace_partition`` (idempotent, one transaction,
bookkept); the minute rows never leave DuckDB.
"""

from datetime import timedelta

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from dagster import AssetCheckResult, MetadataValue

from pipelines.resources import CardhoursResource
from pipelines.step import Step
from pipelines.store import Store
from pipelines.table_asset import Check, table_asset
from pipelines.tables import (
    INT_GPU_MINUTES_ATTRIBUTED,
    MONTH_LANDED,
    STG_DCGM__GPU_HOUR_SUMS,
    STG_DCGM__GPU_MINUTELY,
    STG_KUBE__PODS,
    STG_SLURM__JOBS,
)
from transforms.intermediate.int_gpu_minutes_attributed import ORDER, SCHEMA, int_gpu_minutes_attributed_sql
from warehouse.lake import derived_current

ATTRIBUTED_TABLE = INT_GPU_MINUTES_ATTRIBUTED.name
CHUNK_DAYS = 1
SAMPLES_CONSERVED = "samples_conserved"
READ_ORDER = ", ".join(f"{column} NULLS FIRST" for column in ORDER)
METHODS_SQL = f"SELECT attribution_method, sum(samples) FROM {ATTRIBUTED_TABLE} WHERE month = ? GROUP BY ALL ORDER BY 1"


def read_attributed(store: Store, month, cluster: str) -> pl.DataFrame:
    """One cluster's stored rows of ``month`` (a date), in SCHEMA and the transform's order."""
    where = {"month": month, "cluster": cluster}
    return store.read(INT_GPU_MINUTES_ATTRIBUTED, where, columns="* EXCLUDE (month)", order_by=READ_ORDER).cast(SCHEMA)


def attribution_queries(cardhours: CardhoursResource, cluster, start, end, summed=None, whole_hours=True) -> list:
    """(SQL, params) per ``CHUNK_DAYS`` window of [start, end) for one cluster.

    Every output row is one GPU-hour's, and a window's runs are clipped to it, so the rows of
    the windows together are the rows of the whole period. A window needs a fraction of the
    memory: the month of 1,000 GPUs at 15 s (60 M minute rows) in one query peaked at 11.1 GB,
    in day windows at 3.1 GB (docs/marts.md "Speed"). ``summed(day)``: whether the day's hour
    sums are stored and current (default: they are); ``whole_hours``: as the SQL takes it."""
    inventory = cardhours.config.inventory_frame().filter(pl.col("cluster") == cluster.name)
    hosts = inventory.group_by("hostname").agg(pl.col("gpu_fraction").sum()).sort("hostname")
    mig_weights = cardhours.config.mig_weights(cluster.name)
    queries, low = [], start
    while low < end:
        high = min(low + timedelta(days=CHUNK_DAYS), end)
        queries.append(
            int_gpu_minutes_attributed_sql(
                cluster.name,
                start,
                low,
                high,
                cluster.sample_step_seconds,
                hosts.get_column("hostname").to_list(),
                hosts.get_column("gpu_fraction").to_list(),
                cardhours.config.flags.zero_util_threshold,
                mig_weights,
                sums_stored=summed is None or summed(low.date()),
                whole_hours=whole_hours,
            )
        )
        low = high
    return queries


def attributed_arrow(step: Step, cluster, start, end) -> pa.Table:
    """One cluster's attributed rows of [start, end), computed by DuckDB window by window, as Arrow.
    A day whose hour sums are missing or older than its minute rows is summed from them here."""
    lake = step.store.lake
    sums, minutes = STG_DCGM__GPU_HOUR_SUMS.lake_table, STG_DCGM__GPU_MINUTELY.lake_table
    missing: list[str] = []

    def summed(day) -> bool:
        current = derived_current(lake, sums, minutes, {"cluster": cluster.name, "day": day})
        if not current:
            missing.append(day.isoformat())
        return current

    queries = attribution_queries(step.cardhours, cluster, start, end, summed)
    if missing:
        step.log.info(
            f"{cluster.name}: {len(missing)} days without current hour sums ({', '.join(missing[:5])}"
            f"{', ...' if len(missing) > 5 else ''}): summed from their minute rows in this build; "
            "the daily job writes them when the day is ingested again"
        )
    return pa.concat_tables([step.arrow(text, params) for text, params in queries])


def samples_conserved_check(samples: dict[str, tuple[float, int]]) -> AssetCheckResult:
    """Per cluster: attributed ``samples`` (weights of a minute row sum to 1) plus the
    ``split_off_samples`` of time-sliced GPUs = the minute rows' samples."""
    off = {name: (got, want) for name, (got, want) in samples.items() if abs(got - want) > 1e-6 * max(want, 1)}
    return AssetCheckResult(
        check_name=SAMPLES_CONSERVED,
        passed=not off,
        metadata={
            "clusters": MetadataValue.json({k: {"attributed": g, "minute_rows": w} for k, (g, w) in samples.items()})
        },
        description="; ".join(f"{k}: {g:,.3f} attributed vs {w:,} in the minute rows" for k, (g, w) in off.items())
        or None,
    )


@table_asset(
    INT_GPU_MINUTES_ATTRIBUTED,
    reads=[STG_SLURM__JOBS, STG_KUBE__PODS, STG_DCGM__GPU_MINUTELY, STG_DCGM__GPU_HOUR_SUMS],
    after=[MONTH_LANDED],
    checks=[Check(SAMPLES_CONSERVED)],
    description="DCGM minutes tied to job runs and pods (hpc_job label, pod label, host-exclusive, host-shared), "
    "per GPU, hour, "
    "run and method; the input of fct_job_usage and fct_gpu_hourly.",
)
def int_gpu_minutes_attributed_asset(step: Step):
    tables, samples = [], {}
    for cluster in step.clusters:
        table = attributed_arrow(step, cluster, step.start, step.end)
        want = step.read(
            STG_DCGM__GPU_MINUTELY,
            cluster=cluster.name,
            columns="coalesce(sum(n_samples), 0)",
            where="minute >= ? AND minute < ?",
            params=[step.start, step.end],
        ).item()
        kept = (pc.sum(table["samples"]).as_py() or 0.0) + (pc.sum(table["split_off_samples"]).as_py() or 0.0)
        samples[cluster.name] = (float(kept), int(want))
        tables.append(table)
    rows = step.write(pa.concat_tables(tables) if tables else pl.DataFrame(schema=SCHEMA).to_arrow())
    methods = step.sql(METHODS_SQL, [step.month]).rows()
    return step.done(
        {"samples_by_method": MetadataValue.json({str(k): float(v) for k, v in methods})},
        [samples_conserved_check(samples)],
        rows=rows,
    )
