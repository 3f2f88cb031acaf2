"""Daily ingest: DCGM samples and sacct rows of one UTC day land in the raw schema."""


from dagster import AssetCheckSpec, AssetExecutionContext, MaterializeResult, asset

from cardhours.schemas import QUARANTINE_SCHEMA
from pipelines.checks.raw import check_raw_table
from pipelines.partitions import daily_partitions, naive_window
from pipelines.resources import CardhoursResource
from warehouse import replace_partition

SAMPLES_KEY = ["raw", "dcgm_samples"]
SACCT_KEY = ["raw", "slurm_sacct"]


@asset(
    key=SAMPLES_KEY,
    partitions_def=daily_partitions,
    group_name="ingest",
    kinds={"duckdb"},
    description="Every DCGM sample of the day, per GPU or MIG instance, labels normalized (docs/design.md).",
    check_specs=[AssetCheckSpec("gx_raw_dcgm_samples", asset=SAMPLES_KEY, blocking=True)],
)
def raw_dcgm_samples(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    rows: dict[str, int] = {}
    with cardhours.warehouse() as conn:
        for cluster in cardhours.config.clusters:
            frame = cardhours.metrics_source(cluster.name).read_samples(cluster.name, start, end)
            rows[cluster.name] = replace_partition(
                conn, "raw.dcgm_samples", frame, {"cluster": cluster.name, "day": start.date()}
            )
            context.log.info(f"{cluster.name}: {rows[cluster.name]} samples for {start.date()}")
    check = check_raw_table(cardhours, "raw.dcgm_samples", SAMPLES_KEY, "gx_raw_dcgm_samples", start.date())
    return MaterializeResult(
        metadata={"rows": sum(rows.values()), "rows_by_cluster": rows, "window_start": str(start), "window_end": str(end)},
        check_results=[check],
    )


@asset(
    key=SACCT_KEY,
    partitions_def=daily_partitions,
    group_name="ingest",
    kinds={"duckdb"},
    description="sacct rows (allocations and steps) of jobs active or pending during the day, fields as text.",
    check_specs=[AssetCheckSpec("gx_raw_slurm_sacct", asset=SACCT_KEY, blocking=True)],
)
def raw_slurm_sacct(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    day = start.date()
    rows: dict[str, int] = {}
    quarantined: dict[str, int] = {}
    with cardhours.warehouse() as conn:
        for cluster in cardhours.config.clusters:
            if cluster.slurm is None:
                continue
            raw, rejects = cardhours.sacct_rows(cluster.name, day, start, end)
            rows[cluster.name] = replace_partition(conn, "raw.slurm_sacct", raw, {"cluster": cluster.name, "day": day})
            quarantined[cluster.name] = replace_partition(
                conn,
                "raw.quarantine",
                rejects.select(list(QUARANTINE_SCHEMA)),
                {"cluster": cluster.name, "source": "sacct", "partition_key": day.isoformat()},
            )
            if quarantined[cluster.name]:
                context.log.warning(f"{cluster.name}: {quarantined[cluster.name]} sacct lines quarantined")
    check = check_raw_table(cardhours, "raw.slurm_sacct", SACCT_KEY, "gx_raw_slurm_sacct", day)
    return MaterializeResult(
        metadata={
            "rows": sum(rows.values()),
            "rows_by_cluster": rows,
            "quarantined_lines": sum(quarantined.values()),
            "window_start": str(start),
            "window_end": str(end),
        },
        check_results=[check],
    )

