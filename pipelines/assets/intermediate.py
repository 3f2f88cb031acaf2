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
# A window's memory grows with its GPU-days (about 80 MB per 1,000 GPU-days on the bench month)
# and each query costs ~60 ms to plan: a window holds this many GPU-days, at least one day.
GPU_DAYS_PER_WINDOW = 10_000
SAMPLES_CONSERVED = "samples_conserved"
READ_ORDER = ", ".join(f"{column} NULLS FIRST" for column in ORDER)
METHODS_SQL = f"SELECT attribution_method, sum(samples) FROM {ATTRIBUTED_TABLE} WHERE month = ? GROUP BY ALL ORDER BY 1"


def read_attributed(store: Store, month, cluster: str) -> pl.DataFrame:
    """One cluster's stored rows of ``month`` (a date), in SCHEMA and the transform's order."""
    where = {"month": month, "cluster": cluster}
    return store.read(INT_GPU_MINUTES_ATTRIBUTED, where, columns="* EXCLUDE (month)", order_by=READ_ORDER).cast(SCHEMA)


def window_days(gpus: float) -> int:
    """Days per attribution window for a cluster of ``gpus`` GPUs (``GPU_DAYS_PER_WINDOW``)."""
    return max(1, int(GPU_DAYS_PER_WINDOW // max(gpus, 1.0)))


def windows(start, end, days: int, summed) -> list[tuple]:
    """[start, end) cut into windows of at most ``days`` days, each either all with stored hour
    sums or all without (``summed(day)``, asked once per day), as (low, high, sums_stored)."""
    cuts = [start]
    while cuts[-1] < end:
        cuts.append(min(cuts[-1] + timedelta(days=1), end))
    stored = [summed(low.date()) for low in cuts[:-1]]
    out: list[tuple] = []
    first = 0
    for i in range(1, len(cuts)):
        if i == len(cuts) - 1 or i - first == days or stored[i] != stored[first]:
            out.append((cuts[first], cuts[i], stored[first]))
            first = i
    return out


def attribution_queries(cardhours: CardhoursResource, cluster, start, end, summed=None, whole_hours=True) -> list:
    """(SQL, params) per window of [start, end) for one cluster (``window_days``).

    Every output row is one GPU-hour's, and a window's runs are clipped to it, so the rows of
    the windows together are the rows of the whole period. A window bounds the memory: the
    month of 1,000 GPUs at 15 s in one query peaked at 3.4 GB, in windows of 10 days at 1.2 GB
    (docs/marts.md "Speed"). ``summed(day)``: whether the day's hour sums are stored and current
    (default: they are); ``whole_hours``: as the SQL takes it."""
    inventory = cardhours.config.inventory_frame().filter(pl.col("cluster") == cluster.name)
    hosts = inventory.group_by("hostname").agg(pl.col("gpu_fraction").sum()).sort("hostname")
    mig_weights = cardhours.config.mig_weights(cluster.name)
    days = window_days(float(hosts.get_column("gpu_fraction").sum() or 0.0))
    return [
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
            sums_stored=stored,
            whole_hours=whole_hours,
        )
        for low, high, stored in windows(start, end, days, summed or (lambda day: True))
    ]


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
