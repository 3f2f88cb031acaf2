"""Intermediate: DCGM minutes attributed to Slurm job runs, computed once per month.

``intermediate.int_gpu_minutes_attributed`` is read by ``marts.fct_job_usage`` and
``marts.fct_gpu_hourly`` (and by other readers: columns are the transform's SCHEMA + month,
docs/marts.md). The rows are computed in DuckDB (``transforms/int_gpu_minutes_attributed.py``)
and fetched as Arrow straight into ``replace_partition`` (idempotent, one transaction,
bookkept); the minute rows never leave DuckDB.
"""

from datetime import timedelta

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    asset,
)

from pipelines.assets.gate import GATE_DEP
from pipelines.partitions import monthly_partitions, naive_window
from pipelines.resources import CardhoursResource
from transforms.int_gpu_minutes_attributed import ORDER, SCHEMA, int_gpu_minutes_attributed_sql
from warehouse import replace_partition

ATTRIBUTED_KEY = ["intermediate", "int_gpu_minutes_attributed"]
ATTRIBUTED_TABLE = "intermediate.int_gpu_minutes_attributed"
CHUNK_DAYS = 1
SAMPLES_CONSERVED = "samples_conserved"
SAMPLE_DEPS = [
    AssetDep(["staging", "stg_slurm__jobs"]),
    AssetDep(["staging", "stg_kube__pods"]),
    AssetDep(["staging", "stg_dcgm__gpu_minutely"]),
    GATE_DEP,
]
MINUTE_SAMPLES_SQL = """
SELECT coalesce(sum(n_samples), 0) FROM staging.stg_dcgm__gpu_minutely
WHERE cluster = ? AND day >= ? AND day < ? AND minute >= ? AND minute < ?
"""
# The month's rows of one cluster as the transform emits them (ORDER), for the marts.
READ_SQL = (
    f"SELECT * EXCLUDE (month) FROM {ATTRIBUTED_TABLE} WHERE month = ? AND cluster = ? "
    f"ORDER BY {', '.join(f'{column} NULLS FIRST' for column in ORDER)}"
)


def read_attributed(conn, month, cluster: str) -> pl.DataFrame:
    """One cluster's stored rows of ``month`` (a date), in SCHEMA and the transform's order."""
    return conn.sql(READ_SQL, params=[month, cluster]).pl().cast(SCHEMA)


def attribution_queries(cardhours: CardhoursResource, cluster, start, end, join: str = "hour_bucket") -> list:
    """(SQL, params) per ``CHUNK_DAYS`` window of [start, end) for one cluster.

    Every output row is one GPU-hour's, and a window's runs are clipped to it, so the rows of
    the windows together are the rows of the whole period. A window needs a fraction of the
    memory: the month of 1,000 GPUs at 15 s (60 M minute rows) in one query peaked at 11.1 GB,
    in day windows at 3.1 GB (docs/marts.md "Speed")."""
    inventory = cardhours.config.inventory_frame().filter(pl.col("cluster") == cluster.name)
    hosts = inventory.group_by("hostname").agg(pl.col("gpu_fraction").sum()).sort("hostname")
    profiles = inventory.get_column("gpu_i_profile").drop_nulls().unique().sort().to_list()
    rates = cardhours.config.rates
    mig_weights = {profile: rates.mig_weight(profile) for profile in [*profiles, *rates.mig_profile_weights]}
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
                join,
                mig_weights,
            )
        )
        low = high
    return queries


def attributed_arrow(conn, cardhours: CardhoursResource, cluster, start, end) -> pa.Table:
    """One cluster's attributed rows of [start, end), computed by DuckDB window by window, as Arrow."""
    tables = [
        conn.sql(text, params=params).to_arrow_table()
        for text, params in attribution_queries(cardhours, cluster, start, end)
    ]
    return pa.concat_tables(tables)


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


@asset(
    key=ATTRIBUTED_KEY,
    partitions_def=monthly_partitions,
    group_name="intermediate",
    kinds={"duckdb"},
    deps=SAMPLE_DEPS,
    check_specs=[AssetCheckSpec(SAMPLES_CONSERVED, asset=ATTRIBUTED_KEY, blocking=True)],
    description="DCGM minutes tied to job runs and pods (hpc_job label, pod label, host-exclusive, host-shared), "
    "per GPU, hour, "
    "run and method; the input of fct_job_usage and fct_gpu_hourly.",
)
def int_gpu_minutes_attributed_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    month = start.date()
    tables, samples = [], {}
    with cardhours.warehouse() as conn:
        for cluster in cardhours.config.clusters:
            table = attributed_arrow(conn, cardhours, cluster, start, end)
            want = conn.execute(MINUTE_SAMPLES_SQL, [cluster.name, start.date(), end.date(), start, end]).fetchone()[0]
            kept = (pc.sum(table["samples"]).as_py() or 0.0) + (pc.sum(table["split_off_samples"]).as_py() or 0.0)
            samples[cluster.name] = (float(kept), int(want))
            tables.append(table)
        stored = pa.concat_tables(tables) if tables else pl.DataFrame(schema=SCHEMA).to_arrow()
        stored = stored.append_column("month", pa.array([month] * stored.num_rows, pa.date32()))
        rows = replace_partition(conn, ATTRIBUTED_TABLE, stored, {"month": month})
        methods = conn.execute(
            f"SELECT attribution_method, sum(samples) FROM {ATTRIBUTED_TABLE} WHERE month = ? GROUP BY ALL ORDER BY 1",
            [month],
        ).fetchall()
    return MaterializeResult(
        metadata={
            "rows": rows,
            "month": str(month),
            "samples_by_method": MetadataValue.json({str(k): float(v) for k, v in methods}),
        },
        check_results=[samples_conserved_check(samples)],
    )
