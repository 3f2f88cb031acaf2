"""Staging: DCGM rollups per GPU per hour and minute and the day's field presence (daily
partitions), and Slurm job runs (monthly partitions)."""

import polars as pl
from dagster import MetadataValue

from contracts.schemas import QUARANTINE_SCHEMA, SAMPLE_VALUE_COLUMNS
from pipelines.checks.gx_adapter import run_suite_on_frame
from pipelines.checks.slurm_records import last_labelled_samples, unknown_states_check
from pipelines.checks.suites import node_gpu_capacity, staged_jobs_frame, staged_jobs_suite
from pipelines.step import Step
from pipelines.table_asset import Built, Check, table_asset
from pipelines.tables import (
    MONTH_LANDED,
    RAW_DCGM_SAMPLES,
    RAW_QUARANTINE_MONTHLY,
    RAW_SLURM_SACCT,
    STG_DCGM__FIELD_PRESENCE,
    STG_DCGM__GPU_HOURLY,
    STG_DCGM__GPU_MINUTELY,
    STG_SLURM__JOBS,
)
from transforms.staging.stg_dcgm__field_presence import INSTANCE_KEY, presence_summary, stg_dcgm__field_presence
from transforms.staging.stg_dcgm__gpu_hourly import stg_dcgm__gpu_hourly
from transforms.staging.stg_dcgm__gpu_minutely import stg_dcgm__gpu_minutely_sql
from transforms.staging.stg_slurm__jobs import stg_slurm__jobs

JOBS_CHECK = "gx_stg_slurm__jobs"
STATES_CHECK = "unknown_slurm_states"
PRESENCE_COLUMNS = ", ".join([*INSTANCE_KEY, *SAMPLE_VALUE_COLUMNS])


@table_asset(
    STG_DCGM__GPU_HOURLY,
    reads=[RAW_DCGM_SAMPLES],
    kinds=["polars"],
    description="Per GPU or MIG instance, hpc_job and hour: sample counts and coverage, sums and maxima of each "
    "signal, energy.",
)
def stg_dcgm__gpu_hourly_asset(step: Step) -> pl.DataFrame:
    def hourly(cluster) -> pl.DataFrame:
        samples = step.read(RAW_DCGM_SAMPLES, cluster=cluster.name)
        return stg_dcgm__gpu_hourly(samples.lazy(), step_seconds=cluster.sample_step_seconds).collect()

    return pl.concat(step.each_cluster(hourly))


@table_asset(
    STG_DCGM__GPU_MINUTELY,
    reads=[RAW_DCGM_SAMPLES],
    description="Per GPU or MIG instance, hpc_job, pod and minute: coverage, mean and max of each signal, best signal.",
)
def stg_dcgm__gpu_minutely_asset(step: Step) -> Built:
    # SQL in DuckDB: the day's raw rows never leave the warehouse (docs/storage.md).
    minutely = pl.concat(
        step.each_cluster(lambda c: step.sql(*stg_dcgm__gpu_minutely_sql(c.name, step.day, c.sample_step_seconds)))
    )
    mean_coverage = minutely.get_column("coverage").mean()
    return Built(
        minutely,
        metadata={
            "minutes_below_full_coverage": minutely.filter(pl.col("coverage") < 1).height,
            "mean_coverage": float(mean_coverage) if mean_coverage is not None else None,
        },
    )


@table_asset(
    STG_DCGM__FIELD_PRESENCE,
    reads=[RAW_DCGM_SAMPLES],
    kinds=["polars"],
    description="Per GPU or MIG instance and DCGM field: samples present, non-zero, range, suspect flat zero.",
)
def stg_dcgm__field_presence_asset(step: Step) -> Built:
    frames = step.each_cluster(
        lambda c: stg_dcgm__field_presence(
            step.read(RAW_DCGM_SAMPLES, cluster=c.name, columns=PRESENCE_COLUMNS).lazy(), step.day
        )
    )
    presence = pl.concat(frames)
    suspects = presence.filter(pl.col("suspect_flat_zero"))
    if suspects.height:
        named = suspects.select(pl.format("{}:{}:{}", "hostname", "gpu", "field")).to_series().head(10).to_list()
        step.log.warning(f"{suspects.height} fields flat at 0 all day while another signal moved: {named}")
    by_cluster = {frame.get_column("cluster")[0]: presence_summary(frame) for frame in frames if frame.height}
    return Built(
        presence,
        metadata={"fields_by_cluster": MetadataValue.json(by_cluster), "suspect_flat_zero": suspects.height},
    )


@table_asset(
    STG_SLURM__JOBS,
    reads=[RAW_SLURM_SACCT, RAW_DCGM_SAMPLES],
    after=[MONTH_LANDED],
    kinds=["polars"],
    checks=[
        Check(JOBS_CHECK),
        Check(
            STATES_CHECK,
            blocking=False,
            description="Job states sacct printed that cardhours does not know (staged as they are).",
        ),
    ],
    description="One row per Slurm job run overlapping the month (allocation rows; steps counted, never summed).",
)
def stg_slurm__jobs_asset(step: Step) -> Built:
    weights = dict(step.config.rates.mig_profile_weights)
    capacity = node_gpu_capacity(step.config.inventory_frame())
    raw = step.read(RAW_SLURM_SACCT)
    jobs, rejects = stg_slurm__jobs(raw, step.start, step.end, mig_weights=weights, max_node_gpus=capacity)
    runaways = jobs.filter(pl.col("end_inferred_from").is_not_null())
    if runaways.height:  # bound each by its last labelled DCGM sample (raw.dcgm_samples), then stage again
        samples = last_labelled_samples(step.store.conn, runaways, step.config)
        jobs, rejects = stg_slurm__jobs(
            raw, step.start, step.end, mig_weights=weights, max_node_gpus=capacity, last_samples=samples
        )
    month = step.month.isoformat()
    rejects = rejects.with_columns(pl.lit("stg_slurm__jobs").alias("source"), pl.lit(month).alias("partition_key"))
    quarantined = step.write(
        rejects.select(list(QUARANTINE_SCHEMA)),
        table=RAW_QUARANTINE_MONTHLY,
        partition={"source": "stg_slurm__jobs", "partition_key": month},
    )
    if quarantined:
        step.log.warning(f"{quarantined} sacct rows could not be parsed; see raw.quarantine")
    states = unknown_states_check(jobs, step.key, STATES_CHECK)
    if not states.passed:
        step.log.warning(states.description)
    check = run_suite_on_frame(staged_jobs_suite(), staged_jobs_frame(jobs, capacity), step.key, JOBS_CHECK)
    runaway_count = jobs.filter(pl.col("end_inferred_from").is_not_null()).height
    return Built(
        jobs,
        metadata={"quarantined_rows": quarantined, "runaway_runs": runaway_count},
        checks=[check, states],
    )
