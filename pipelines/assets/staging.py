"""Staging: DCGM rollups per GPU per hour and minute and the day's field presence (daily
partitions), and Slurm job runs (monthly partitions)."""

import polars as pl
from dagster import MaterializeResult, MetadataValue

from contracts.schemas import QUARANTINE_SCHEMA, SAMPLE_VALUE_COLUMNS
from pipelines.checks.gx_adapter import run_suite_on_frame
from pipelines.checks.slurm_records import last_labelled_samples, unknown_states_check
from pipelines.checks.suites import node_gpu_capacity, staged_jobs_frame, staged_jobs_suite
from pipelines.sharded import write_by_host_ranges
from pipelines.step import Step
from pipelines.table_asset import Built, Check, table_asset
from pipelines.tables import (
    MONTH_LANDED,
    RAW_DCGM_SAMPLES,
    RAW_QUARANTINE_MONTHLY,
    RAW_SLURM_SACCT,
    STG_DCGM__FIELD_PRESENCE,
    STG_DCGM__GPU_HOUR_SUMS,
    STG_DCGM__GPU_HOURLY,
    STG_DCGM__GPU_MINUTELY,
    STG_SLURM__JOBS,
)
from transforms.helpers.host_ranges import HostRange
from transforms.staging.stg_dcgm__field_presence import (
    INSTANCE_KEY,
    add_summaries,
    presence_summary,
    stg_dcgm__field_presence,
)
from transforms.staging.stg_dcgm__gpu_hour_sums import stg_dcgm__gpu_hour_sums_sql
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
def stg_dcgm__gpu_hourly_asset(step: Step) -> MaterializeResult:
    def hourly(cluster, hosts: HostRange) -> pl.DataFrame:
        samples = step.read(RAW_DCGM_SAMPLES, cluster=cluster.name, where=hosts.where, params=hosts.params)
        return stg_dcgm__gpu_hourly(samples.lazy(), step_seconds=cluster.sample_step_seconds).collect()

    return step.done(rows=sum(write_by_host_ranges(step, RAW_DCGM_SAMPLES, hourly).values()))


@table_asset(
    STG_DCGM__GPU_MINUTELY,
    reads=[RAW_DCGM_SAMPLES],
    description="Per GPU or MIG instance, hpc_job, pod and minute: coverage, mean and max of each signal, best signal.",
)
def stg_dcgm__gpu_minutely_asset(step: Step) -> MaterializeResult:
    coverage: list[tuple[int, float, int]] = []  # per shard: minutes below full coverage, sum, count

    def minutely(cluster, hosts: HostRange) -> pl.DataFrame:
        # SQL in DuckDB: the day's raw rows never leave the warehouse (docs/storage.md).
        frame = step.sql(*stg_dcgm__gpu_minutely_sql(cluster.name, step.day, cluster.sample_step_seconds, hosts))
        column = frame.get_column("coverage")
        coverage.append(((column < 1).sum(), column.sum(), column.count()))
        return frame

    rows = write_by_host_ranges(step, RAW_DCGM_SAMPLES, minutely)
    below, total, count = (sum(part) for part in zip(*coverage, strict=True)) if coverage else (0, 0.0, 0)
    return step.done(
        {"minutes_below_full_coverage": int(below), "mean_coverage": float(total / count) if count else None},
        rows=sum(rows.values()),
    )


@table_asset(
    STG_DCGM__GPU_HOUR_SUMS,
    reads=[STG_DCGM__GPU_MINUTELY],
    description="Per GPU or MIG instance, label and hour: the minute rows' sums in fixed point, from which the "
    "month's attribution takes the hours that go whole to one job or to idle.",
)
def stg_dcgm__gpu_hour_sums_asset(step: Step) -> MaterializeResult:
    threshold = step.config.flags.zero_util_threshold

    def hour_sums(cluster, hosts: HostRange) -> pl.DataFrame:
        weights = step.config.mig_weights(cluster.name)
        step_seconds = cluster.sample_step_seconds
        return step.sql(*stg_dcgm__gpu_hour_sums_sql(cluster.name, step.day, step_seconds, threshold, weights, hosts))

    return step.done(rows=sum(write_by_host_ranges(step, STG_DCGM__GPU_MINUTELY, hour_sums).values()))


@table_asset(
    STG_DCGM__FIELD_PRESENCE,
    reads=[RAW_DCGM_SAMPLES],
    kinds=["polars"],
    description="Per GPU or MIG instance and DCGM field: samples present, non-zero, range, suspect flat zero.",
)
def stg_dcgm__field_presence_asset(step: Step) -> MaterializeResult:
    summaries: dict[str, list[dict]] = {}
    suspects: list[pl.DataFrame] = []

    def presence(cluster, hosts: HostRange) -> pl.DataFrame:
        samples = step.read(
            RAW_DCGM_SAMPLES, cluster=cluster.name, columns=PRESENCE_COLUMNS, where=hosts.where, params=hosts.params
        )
        found = stg_dcgm__field_presence(samples.lazy(), step.day)
        if found.height:
            summaries.setdefault(cluster.name, []).append(presence_summary(found))
        suspects.append(
            found.filter(pl.col("suspect_flat_zero")).select(pl.format("{}:{}:{}", "hostname", "gpu", "field"))
        )
        return found

    rows = write_by_host_ranges(step, RAW_DCGM_SAMPLES, presence)
    named = pl.concat(suspects).to_series() if suspects else pl.Series([], dtype=pl.String)
    if named.len():
        step.log.warning(
            f"{named.len()} fields flat at 0 all day while another signal moved: {named.head(10).to_list()}"
        )
    by_cluster = {cluster: add_summaries(parts) for cluster, parts in summaries.items()}
    return step.done(
        {"fields_by_cluster": MetadataValue.json(by_cluster), "suspect_flat_zero": named.len()},
        rows=sum(rows.values()),
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
