"""Staging: DCGM rollups per GPU per hour and minute and the day's field presence (daily
partitions), and Slurm job runs (monthly partitions)."""

import polars as pl
from dagster import AssetCheckSpec, AssetDep, AssetExecutionContext, MaterializeResult, MetadataValue, asset

from cardhours.schemas import QUARANTINE_SCHEMA, SAMPLE_VALUE_COLUMNS
from pipelines.assets.gate import GATE_DEP
from pipelines.checks.gx_adapter import run_suite_on_frame
from pipelines.checks.slurm_records import last_labelled_samples, unknown_states_check
from pipelines.checks.suites import node_gpu_capacity, staged_jobs_frame, staged_jobs_suite
from pipelines.partitions import daily_partitions, monthly_partitions, naive_window
from pipelines.resources import CardhoursResource
from transforms.stg_dcgm__field_presence import INSTANCE_KEY, presence_summary, stg_dcgm__field_presence
from transforms.stg_dcgm__gpu_hourly import stg_dcgm__gpu_hourly
from transforms.stg_dcgm__gpu_minutely import stg_dcgm__gpu_minutely_sql
from transforms.stg_slurm__jobs import stg_slurm__jobs
from warehouse import read_frame, replace_partition

HOURLY_KEY = ["staging", "stg_dcgm__gpu_hourly"]
MINUTELY_KEY = ["staging", "stg_dcgm__gpu_minutely"]
PRESENCE_KEY = ["staging", "stg_dcgm__field_presence"]
JOBS_KEY = ["staging", "stg_slurm__jobs"]
JOBS_CHECK = "gx_stg_slurm__jobs"
STATES_CHECK = "unknown_slurm_states"
SAMPLES_DEP = AssetDep(["raw", "dcgm_samples"])
PRESENCE_COLUMNS = ", ".join([*INSTANCE_KEY, *SAMPLE_VALUE_COLUMNS])


@asset(
    key=HOURLY_KEY,
    partitions_def=daily_partitions,
    group_name="staging",
    kinds={"duckdb", "polars"},
    deps=[SAMPLES_DEP],
    description="Per GPU or MIG instance, hpc_job and hour: sample counts and coverage, sums and maxima of each "
    "signal, energy.",
)
def stg_dcgm__gpu_hourly_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, _ = naive_window(context.partition_time_window)
    day = start.date()
    frames = []
    with cardhours.warehouse() as conn:
        for cluster in cardhours.config.clusters:
            samples = read_frame(
                conn, "SELECT * FROM raw.dcgm_samples WHERE cluster = ? AND day = ?", [cluster.name, day]
            )
            step = cluster.sample_step_seconds
            frames.append(stg_dcgm__gpu_hourly(samples.lazy(), step_seconds=step).collect())
        hourly = pl.concat(frames).with_columns(pl.lit(day).alias("day"))
        rows = replace_partition(conn, "staging.stg_dcgm__gpu_hourly", hourly, {"day": day})
    return MaterializeResult(metadata={"rows": rows, "day": str(day)})


@asset(
    key=MINUTELY_KEY,
    partitions_def=daily_partitions,
    group_name="staging",
    kinds={"duckdb"},
    deps=[SAMPLES_DEP],
    description="Per GPU or MIG instance, hpc_job, pod and minute: coverage, mean and max of each signal, best signal.",
)
def stg_dcgm__gpu_minutely_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, _ = naive_window(context.partition_time_window)
    day = start.date()
    frames = []
    with cardhours.warehouse() as conn:
        for cluster in cardhours.config.clusters:
            # SQL in DuckDB: the day's raw rows never leave the warehouse (docs/storage.md).
            text, params = stg_dcgm__gpu_minutely_sql(cluster.name, day, cluster.sample_step_seconds)
            frames.append(read_frame(conn, text, params))
        minutely = pl.concat(frames).with_columns(pl.lit(day).alias("day"))
        rows = replace_partition(conn, "staging.stg_dcgm__gpu_minutely", minutely, {"day": day})
    partial = minutely.filter(pl.col("coverage") < 1).height
    mean_coverage = minutely.get_column("coverage").mean()
    return MaterializeResult(
        metadata={
            "rows": rows,
            "day": str(day),
            "minutes_below_full_coverage": partial,
            "mean_coverage": float(mean_coverage) if mean_coverage is not None else None,
        }
    )


@asset(
    key=PRESENCE_KEY,
    partitions_def=daily_partitions,
    group_name="staging",
    kinds={"duckdb", "polars"},
    deps=[SAMPLES_DEP],
    description="Per GPU or MIG instance and DCGM field: samples present, non-zero, range, suspect flat zero.",
)
def stg_dcgm__field_presence_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, _ = naive_window(context.partition_time_window)
    day = start.date()
    frames = []
    with cardhours.warehouse() as conn:
        for cluster in cardhours.config.clusters:
            samples = read_frame(
                conn,
                f"SELECT {PRESENCE_COLUMNS} FROM raw.dcgm_samples WHERE cluster = ? AND day = ?",
                [cluster.name, day],
            )
            frames.append(stg_dcgm__field_presence(samples.lazy(), day))
        presence = pl.concat(frames)
        rows = replace_partition(conn, "staging.stg_dcgm__field_presence", presence, {"day": day})
    suspects = presence.filter(pl.col("suspect_flat_zero"))
    if suspects.height:
        named = suspects.select(pl.format("{}:{}:{}", "hostname", "gpu", "field")).to_series().head(10).to_list()
        context.log.warning(f"{suspects.height} fields flat at 0 all day while another signal moved: {named}")
    return MaterializeResult(
        metadata={
            "rows": rows,
            "day": str(day),
            "fields_by_cluster": MetadataValue.json(
                {frame.get_column("cluster")[0]: presence_summary(frame) for frame in frames if frame.height}
            ),
            "suspect_flat_zero": suspects.height,
        }
    )


@asset(
    key=JOBS_KEY,
    partitions_def=monthly_partitions,
    group_name="staging",
    kinds={"duckdb", "polars"},
    deps=[AssetDep(["raw", "slurm_sacct"]), GATE_DEP],
    check_specs=[
        AssetCheckSpec(JOBS_CHECK, asset=JOBS_KEY, blocking=True),
        AssetCheckSpec(
            STATES_CHECK,
            asset=JOBS_KEY,
            blocking=False,
            description="Job states sacct printed that cardhours does not know (staged as they are).",
        ),
    ],
    description="One row per Slurm job run overlapping the month (allocation rows; steps counted, never summed).",
)
def stg_slurm__jobs_asset(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    month = start.date()
    weights = dict(cardhours.config.rates.mig_profile_weights)
    capacity = node_gpu_capacity(cardhours.config.inventory_frame())
    with cardhours.warehouse() as conn:
        raw = read_frame(conn, "SELECT * FROM raw.slurm_sacct WHERE day >= ? AND day < ?", [start.date(), end.date()])
        jobs, rejects = stg_slurm__jobs(raw, start, end, mig_weights=weights, max_node_gpus=capacity)
        runaways = jobs.filter(pl.col("end_inferred_from").is_not_null())
        if runaways.height:  # bound each by its last labelled DCGM sample, then stage again
            samples = last_labelled_samples(conn, runaways, cardhours.config)
            jobs, rejects = stg_slurm__jobs(
                raw, start, end, mig_weights=weights, max_node_gpus=capacity, last_samples=samples
            )
        rows = replace_partition(
            conn, "staging.stg_slurm__jobs", jobs.with_columns(pl.lit(month).alias("month")), {"month": month}
        )
        rejects = rejects.with_columns(
            pl.lit("stg_slurm__jobs").alias("source"), pl.lit(month.isoformat()).alias("partition_key")
        )
        quarantined = replace_partition(
            conn,
            "raw.quarantine",
            rejects.select(list(QUARANTINE_SCHEMA)),
            {"source": "stg_slurm__jobs", "partition_key": month.isoformat()},
        )
    if quarantined:
        context.log.warning(f"{quarantined} sacct rows could not be parsed; see raw.quarantine")
    checked = staged_jobs_frame(jobs, capacity)
    check = run_suite_on_frame(staged_jobs_suite(), checked, JOBS_KEY, JOBS_CHECK)
    states = unknown_states_check(jobs, JOBS_KEY, STATES_CHECK)
    if not states.passed:
        context.log.warning(states.description)
    runaway_count = jobs.filter(pl.col("end_inferred_from").is_not_null()).height
    return MaterializeResult(
        metadata={"rows": rows, "quarantined_rows": quarantined, "runaway_runs": runaway_count, "month": str(month)},
        check_results=[check, states],
    )
