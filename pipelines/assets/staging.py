"""Staging: hourly DCGM rollups per GPU (daily partitions) and Slurm job runs (monthly partitions)."""


import polars as pl
from dagster import AssetDep, AssetExecutionContext, MaterializeResult, asset

from cardhours.schemas import QUARANTINE_SCHEMA
from pipelines.partitions import daily_partitions, monthly_partitions, naive_window
from pipelines.resources import CardhoursResource
from transforms.stg_dcgm__gpu_hourly import stg_dcgm__gpu_hourly
from transforms.stg_slurm__jobs import stg_slurm__jobs
from warehouse import read_frame, replace_partition

HOURLY_KEY = ["staging", "stg_dcgm__gpu_hourly"]
JOBS_KEY = ["staging", "stg_slurm__jobs"]


@asset(
    key=HOURLY_KEY,
    partitions_def=daily_partitions,
    group_name="staging",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(["raw", "dcgm_samples"])],
    description="Per GPU or MIG instance, hpc_job and hour: sample counts, sums and maxima of each signal, energy.",
)
def stg_dcgm__gpu_hourly_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, _ = naive_window(context.partition_time_window)
    day = start.date()
    frames = []
    with cardhours.warehouse() as conn:
        for cluster in cardhours.config.clusters:
            samples = read_frame(conn, "SELECT * FROM raw.dcgm_samples WHERE cluster = ? AND day = ?", [cluster.name, day])
            step = cluster.sample_step_seconds
            frames.append(stg_dcgm__gpu_hourly(samples.lazy(), step_seconds=step).collect())
        hourly = pl.concat(frames).with_columns(pl.lit(day).alias("day"))
        rows = replace_partition(conn, "staging.stg_dcgm__gpu_hourly", hourly, {"day": day})
    return MaterializeResult(metadata={"rows": rows, "day": str(day)})


@asset(
    key=JOBS_KEY,
    partitions_def=monthly_partitions,
    group_name="staging",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(["raw", "slurm_sacct"])],
    description="One row per Slurm job run overlapping the month (allocation rows; steps counted, never summed).",
)
def stg_slurm__jobs_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    month = start.date()
    weights = dict(cardhours.config.rates.mig_profile_weights)
    with cardhours.warehouse() as conn:
        raw = read_frame(conn, "SELECT * FROM raw.slurm_sacct WHERE day >= ? AND day < ?", [start.date(), end.date()])
        jobs, rejects = stg_slurm__jobs(raw, window_start=start, window_end=end, mig_weights=weights)
        rows = replace_partition(conn, "staging.stg_slurm__jobs", jobs.with_columns(pl.lit(month).alias("month")), {"month": month})
        rejects = rejects.with_columns(pl.lit("stg_slurm__jobs").alias("source"), pl.lit(month.isoformat()).alias("partition_key"))
        quarantined = replace_partition(
            conn,
            "raw.quarantine",
            rejects.select(list(QUARANTINE_SCHEMA)),
            {"source": "stg_slurm__jobs", "partition_key": month.isoformat()},
        )
    if quarantined:
        context.log.warning(f"{quarantined} sacct rows could not be parsed; see raw.quarantine")
    return MaterializeResult(metadata={"rows": rows, "quarantined_rows": quarantined, "month": str(month)})
