"""Daily landing of downtime: Slurm node events and reservations as intervals of the day
(``staging.stg_slurm__downtime``), for the clusters whose ``[clusters.slurm]`` names where they
come from (``ClusterConfig.sources``: ``slurm_downtime``). Lines and rows that cannot be read are
quarantined in ``raw.quarantine`` (source ``slurm_downtime``) and counted in the landing."""

from dagster import MaterializeResult, MetadataValue

from contracts.schemas import QUARANTINE_SCHEMA
from contracts.sources import SLURM_DOWNTIME
from pipelines.landing import failure_recorded, landed, utc_now
from pipelines.shrink_guard import guard_rows
from pipelines.step import Step
from pipelines.table_asset import table_asset
from pipelines.tables import RAW_QUARANTINE, STG_SLURM__DOWNTIME
from sources.slurm_downtime import read_downtime
from transforms.staging.stg_slurm__downtime import stg_slurm__downtime


def _land_cluster(step: Step, cluster) -> tuple[int, dict[str, int]]:
    """One cluster's day: (intervals landed, quarantined rows by reason code)."""
    events, reservations, bad_lines = read_downtime(cluster.slurm, cluster.name, step.start, step.end)
    intervals, bad_rows = stg_slurm__downtime(
        events,
        reservations,
        cluster=cluster.name,
        slurm_cluster=cluster.slurm.slurm_cluster,
        window=(step.start, step.end),
        as_of=utc_now(),
    )
    guard_rows(step, STG_SLURM__DOWNTIME, cluster.name, intervals)  # before any of the day is replaced
    bad = bad_lines.select(list(QUARANTINE_SCHEMA)).vstack(bad_rows.select(list(QUARANTINE_SCHEMA)))
    partition = {"cluster": cluster.name, "source": SLURM_DOWNTIME, "partition_key": step.day.isoformat()}
    step.write(bad, table=RAW_QUARANTINE, partition=partition)
    screened = events.height + reservations.height + bad_lines.height
    landing = landed(cluster.name, step.day, SLURM_DOWNTIME, intervals.height, bad.height, screened)
    rows = step.write(intervals, cluster=cluster.name, also=[landing])
    codes = bad.get_column("reason").str.extract(r"^([A-Z_]+)").value_counts()
    return rows, {code: n for code, n in codes.iter_rows()}


@table_asset(
    STG_SLURM__DOWNTIME,
    description="Slurm node events (down) and reservations (MAINT: planned_down, others: reserved) of the day, "
    "per node, clipped to the day (docs/slurm.md).",
)
def stg_slurm__downtime_asset(step: Step) -> MaterializeResult:
    rows: dict[str, int] = {}
    quarantined: dict[str, dict[str, int]] = {}
    for cluster in step.clusters_with(SLURM_DOWNTIME):
        with failure_recorded(step.store, cluster.name, step.day, SLURM_DOWNTIME):
            rows[cluster.name], quarantined[cluster.name] = _land_cluster(step, cluster)
        if quarantined[cluster.name]:
            step.log.warning(
                f"{cluster.name}: {sum(quarantined[cluster.name].values())} node event / reservation rows "
                f"quarantined (by reason: {quarantined[cluster.name]}); see raw.quarantine, source {SLURM_DOWNTIME}"
            )
    return MaterializeResult(
        metadata={
            "rows": sum(rows.values()),
            "rows_by_cluster": rows,
            "quarantined_rows": sum(sum(v.values()) for v in quarantined.values()),
            "quarantined_by_reason": MetadataValue.json(quarantined),
            "window_start": str(step.start),
            "window_end": str(step.end),
        }
    )
