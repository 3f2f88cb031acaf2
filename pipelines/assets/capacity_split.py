"""marts.fct_gpu_capacity_split: each GPU-hour of fct_gpu_hourly split into the capacity states
(allocated, planned down, down, reserved, idle) by the downtime intervals of every table in
``DOWNTIME_TABLES`` (transforms/marts/fct_gpu_capacity_split.py), with its blocking check."""

import polars as pl
from dagster import Failure, MetadataValue

from contracts.capacity_states import DOWNTIME_INTERVAL
from contracts.sources import KUBE
from pipelines.checks.capacity_split import CAPACITY_STATES_BALANCE, capacity_states_balance_check
from pipelines.downtime_coverage import downtime_coverage
from pipelines.step import Step
from pipelines.table_asset import Built, Check, table_asset
from pipelines.tables import DOWNTIME_TABLES, FCT_GPU_CAPACITY_SPLIT, FCT_GPU_HOURLY, STG_KUBE__PODS, STG_SLURM__JOBS
from transforms.marts.capacity_placement import host_runs
from transforms.marts.fct_gpu_capacity_split import HOURLY_COLUMNS, STATE_COLUMNS, fct_gpu_capacity_split
from warehouse.lake import written_at
from warehouse.landings import month_landings
from warehouse.migrate import migration_applied_at


def month_intervals(step: Step) -> pl.DataFrame:
    """The downtime intervals of the month's days, from every table that holds them."""
    columns = ", ".join(DOWNTIME_INTERVAL)
    frames = [step.read(table, columns=columns) for table in DOWNTIME_TABLES]
    return pl.concat([frame.cast(DOWNTIME_INTERVAL) for frame in frames])


def require_downtime_days(step: Step) -> list[str]:
    """Refuse the month when a landed day's derived downtime partition is missing or stale
    (pipelines/downtime_coverage.py): that day's downtime would read as idle capacity. Returns
    the days landed before a downtime table existed (warned about: never derived)."""
    landings = month_landings(step.store.conn, step.start.date(), step.end.date())

    def written(table, cluster: str, day):
        return written_at(step.store.lake, table.lake_table, {"cluster": cluster, "day": day})

    def introduced(version: int):
        return migration_applied_at(step.store.conn, version)

    coverage = downtime_coverage(landings, [c.name for c in step.clusters], written, introduced)
    if coverage.missing:
        raise Failure(
            description=(
                f"{step.month:%Y-%m}: the capacity split is not built: downtime was not derived for landed days, "
                "which would count their downtime as idle capacity.\n" + "\n".join(coverage.missing) + "\n"
                f"Land those days again: cardhours run --month {step.month:%Y-%m} --reingest DAY for each day "
                "named (in Dagster: the daily_ingest job for those partitions), then build the month again."
            ),
            metadata={"missing": MetadataValue.json(coverage.missing[:50])},
        )
    if coverage.never_derived:
        step.log.warning(
            f"{step.month:%Y-%m}: days landed before this warehouse derived some downtime (an upgrade from an "
            "older cardhours): their downtime from that source is not known and counts as idle; "
            f"cardhours run --month {step.month:%Y-%m} --reingest DAY derives it while the source still holds "
            "the day.\n" + "\n".join(coverage.never_derived)
        )
    return coverage.never_derived


def month_runs(step: Step) -> pl.DataFrame:
    """The GPUs each run and pod of the month held per host, and when (``capacity_placement.HELD``)."""
    jobs = step.read(STG_SLURM__JOBS, columns="cluster, hosts, gpus, start_time, end_time")
    pods = [
        step.read(STG_KUBE__PODS, cluster=c.name, columns="cluster, node, gpus, start_time, end_time")
        for c in step.clusters
        if KUBE in c.sources
    ]
    return host_runs(jobs, pl.concat(pods) if pods else None, step.start, step.end)


def unmatched_hosts(step: Step, hourly: pl.DataFrame, intervals: pl.DataFrame) -> list[str]:
    """The hosts ("cluster/host") of downtime intervals that have no GPU-hours: not counted, logged."""
    unmatched = intervals.join(hourly.select("cluster", "hostname").unique(), on=["cluster", "hostname"], how="anti")
    hosts = [f"{c}/{h}" for c, h in unmatched.select("cluster", "hostname").unique().sort(pl.all()).rows()]
    if hosts:
        step.log.warning(
            f"downtime intervals of {len(hosts)} host(s) with no GPU-hours in the month are not counted: "
            f"{', '.join(hosts[:10])}{' ...' if len(hosts) > 10 else ''}; if they are GPU hosts, make the "
            "scheduler's node names match the hostnames DCGM reports (and the inventory's hosts)"
        )
    return hosts


@table_asset(
    FCT_GPU_CAPACITY_SPLIT,
    reads=[FCT_GPU_HOURLY, STG_SLURM__JOBS, STG_KUBE__PODS, *DOWNTIME_TABLES],
    kinds=["polars"],
    checks=[Check(CAPACITY_STATES_BALANCE)],
    description="Per GPU or MIG instance and hour: capacity GPU-seconds split into allocated, planned down, "
    "down, reserved and idle (one state per GPU-second, by precedence).",
)
def fct_gpu_capacity_split_asset(step: Step) -> Built:
    never_derived = require_downtime_days(step)
    hourly = step.read(FCT_GPU_HOURLY, columns=", ".join(HOURLY_COLUMNS))
    intervals = month_intervals(step)
    unmatched = unmatched_hosts(step, hourly, intervals)
    split = fct_gpu_capacity_split(hourly, intervals, step.start, step.end, month_runs(step))
    totals = split.select([(pl.col(c).sum() / 3600).round(6).alias(c) for c in STATE_COLUMNS.values()])
    gpu_hours = {state: float(totals[column][0] or 0.0) for state, column in STATE_COLUMNS.items()}
    return Built(
        split,
        metadata={
            "gpu_hours_by_state": gpu_hours,
            "unmatched_downtime_hosts": MetadataValue.json(unmatched[:50]),
            "downtime_never_derived": MetadataValue.json(never_derived[:50]),
        },
        checks=[capacity_states_balance_check(split, step.key)],
    )
