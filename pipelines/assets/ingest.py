"""Daily ingest: DCGM samples and sacct rows of one UTC day land in the raw schema.

DCGM samples are screened on the way in (transforms.helpers.dcgm_quality): sentinels and
out-of-range values are nulled, restart duplicates dropped, whole-GPU fields on MIG
instances moved to one device row; every rejected value lands in ``raw.quarantine``
(source "dcgm") and is counted in the metadata. A cluster's day is read, screened and
written in shards of at most ``[clusters.metrics] gpus_per_shard`` GPUs (sources/shards.py).
A read of a landed day holding fewer samples or jobs than landed is refused before it replaces
anything (pipelines/shrink_guard.py). The sacct asset also reads the days of its lookback again
and lands those whose records changed (pipelines/sacct_lookback.py).
"""

from datetime import date
from functools import partial

import polars as pl
from dagster import AssetCheckResult, MaterializeResult, MetadataValue

from contracts.schemas import QUARANTINE_SCHEMA
from contracts.sources import DCGM as DCGM_SOURCE
from contracts.sources import SACCT as SACCT_SOURCE
from pipelines.checks.quarantine import CHECK_NAME as QUARANTINE_CHECK
from pipelines.checks.quarantine import ClusterQuarantine, quarantine_share_check, values_by_reason
from pipelines.checks.raw import check_raw_table
from pipelines.checks.suites import node_gpu_capacity
from pipelines.landing import DETAIL_CHARS, Gap, empty_day, failure_recorded, gap_metadata, landed, record_gap
from pipelines.sacct_lookback import SacctRead, lookback, read_day
from pipelines.shrink_guard import guard, guard_rows
from pipelines.step import Step
from pipelines.table_asset import Check, table_asset
from pipelines.tables import RAW_DCGM_SAMPLES, RAW_QUARANTINE, RAW_SLURM_SACCT
from transforms.helpers.dcgm_quality import screen_samples
from transforms.helpers.dcgm_screen_totals import ScreenTotals
from transforms.helpers.slurm_rows import rejects_by_code, row_rejects
from warehouse.landings import OK, REJECTED, Landing, mark_rejected

SAMPLES_CHECK = "gx_raw_dcgm_samples"
SACCT_CHECK = "gx_raw_slurm_sacct"
SACCT_SHARE_CHECK = "sacct_quarantine_share"


def _share_landing(outcome: ClusterQuarantine, day: date, source: str, rows: int) -> Landing:
    """The day's landing: 'rejected' when its quarantine share is over the cluster's limit."""
    counts = outcome.counts
    detail = f"{outcome.share:.4%} of {outcome.unit} quarantined, over {outcome.limit_key} {outcome.max_share:.4%}"
    status, detail = (REJECTED, detail) if outcome.exceeded else (OK, None)
    return landed(
        outcome.cluster, day, source, rows, counts["quarantined_values"], counts["input_values"], status, detail
    )


def _reject_if_failed(step: Step, check: AssetCheckResult, day: date, source: str, clusters: list[str]) -> None:
    """A blocking raw-table check that failed makes the day's landings 'rejected'."""
    if check.passed or not clusters:
        return
    detail = f"check {check.check_name} failed: {check.description or 'see the Dagster run'}"[:DETAIL_CHARS]
    mark_rejected(step.store.conn, step.store.lake, day, source, clusters, detail)


def _quarantine_partition(step: Step, cluster, source: str) -> dict[str, str]:
    return {"cluster": cluster.name, "source": source, "partition_key": step.day.isoformat()}


def screening_metadata(totals: ScreenTotals) -> dict:
    """One cluster's screening counts, its quarantine share and the fields it delivered."""
    return {**totals.counts, "quarantine_share": round(totals.share, 8), "fields_present": totals.fields_present}


def _screen_shards(step: Step, cluster, source) -> tuple[int, ScreenTotals]:
    """The day's samples read, screened and written shard by shard (``sources.shards``): one
    shard's rows in memory at a time; the partition appears when the last shard is written."""
    totals = ScreenTotals()
    with step.writer(cluster=cluster.name) as out:
        for frame in source.read_shards(cluster.name, step.start, step.end, cluster.metrics.gpus_per_shard):
            result = screen_samples(frame, partition_key=step.day.isoformat())
            del frame
            out.append(result.clean)
            totals.add(result)
            del result  # before the next shard is read
        guard(step, RAW_DCGM_SAMPLES, cluster.name, out.rows)  # the whole day, before it replaces the landed one
    return out.rows, totals


def _land_samples(step: Step, cluster) -> tuple[int, ScreenTotals, ClusterQuarantine, dict | None] | Gap:
    """One cluster's day of DCGM samples: read, screen, quarantine, land (with the landing); a
    ``Gap`` when the source answered with no sample."""
    source = step.cardhours.metrics_source(cluster.name)
    rows, totals = _screen_shards(step, cluster, source)
    report = getattr(source, "last_report", None)  # an HTTP read: what it did
    quarantine = totals.quarantine
    if not totals.counts.get("total_rows"):
        step.write(quarantine, table=RAW_QUARANTINE, partition=_quarantine_partition(step, cluster, DCGM_SOURCE))
        return empty_day(step.store, cluster.name, step.day, DCGM_SOURCE)
    outcome = ClusterQuarantine(
        cluster.name,
        step.day.isoformat(),
        totals.counts,
        cluster.metrics.max_quarantine_share,
        values_by_reason(quarantine),
    )
    step.write(quarantine, table=RAW_QUARANTINE, partition=_quarantine_partition(step, cluster, DCGM_SOURCE))
    step.store.land(_share_landing(outcome, step.day, DCGM_SOURCE, rows))
    return rows, totals, outcome, report.summary() if report is not None else None


@table_asset(
    RAW_DCGM_SAMPLES,
    description="Every DCGM sample of the day, per GPU or MIG instance, labels normalized and screened "
    "(docs/design.md).",
    checks=[
        Check(SAMPLES_CHECK),
        Check(
            QUARANTINE_CHECK,
            description="Quarantined share of the day's sample values within metrics.max_quarantine_share.",
        ),
    ],
)
def raw_dcgm_samples(step: Step) -> MaterializeResult:
    day = step.day
    rows: dict[str, int] = {}
    screening: dict[str, dict] = {}
    reads: dict[str, dict] = {}
    outcomes: list[ClusterQuarantine] = []
    gaps: list[Gap] = []
    for cluster in step.clusters_with(DCGM_SOURCE):
        with failure_recorded(step.store, cluster.name, day, DCGM_SOURCE):
            landing = _land_samples(step, cluster)
        if isinstance(landing, Gap):
            gaps.append(record_gap(step.store, step.log, landing))
            continue
        rows[cluster.name], totals, outcome, read = landing
        if read is not None:
            reads[cluster.name] = read
        screening[cluster.name] = screening_metadata(totals)
        outcomes.append(outcome)
        quarantined = totals.counts["quarantined_values"]
        step.log.info(f"{cluster.name}: {rows[cluster.name]} samples for {day}, {quarantined} values quarantined")
    gx = check_raw_table(step.store, RAW_DCGM_SAMPLES.name, step.key.path, SAMPLES_CHECK, day, list(rows))
    _reject_if_failed(step, gx, day, DCGM_SOURCE, list(rows))
    share = quarantine_share_check(outcomes, step.key)
    return MaterializeResult(
        metadata={
            "rows": sum(rows.values()),
            "rows_by_cluster": rows,
            **gap_metadata(gaps),
            "quarantined_values": sum(item["quarantined_values"] for item in screening.values()),
            "screening_by_cluster": MetadataValue.json(screening),
            **({"read_by_cluster": MetadataValue.json(reads)} if reads else {}),
            "window_start": str(step.start),
            "window_end": str(step.end),
        },
        check_results=[gx, share],
    )


def _land_sacct(
    step: Step, cluster, weights: dict, capacity, day: date, read: SacctRead
) -> tuple[int, int, ClusterQuarantine] | Gap:
    """One cluster's day of sacct rows, as read: judge, quarantine, land (with the landing); a
    ``Gap`` when sacct answered with no job of the day and no line it could not read (refused,
    like any shrink, when the day had landed jobs)."""
    raw, rejects = read
    rejected_at = {"cluster": cluster.name, "source": SACCT_SOURCE, "partition_key": day.isoformat()}
    if raw.is_empty() and rejects.is_empty():
        guard_rows(step, RAW_SLURM_SACCT, cluster.name, raw, day)
        step.write(rejects, table=RAW_QUARANTINE, partition=rejected_at)
        step.write(raw, table=RAW_SLURM_SACCT, partition={"cluster": cluster.name, "day": day})
        return empty_day(step.store, cluster.name, day, SACCT_SOURCE)
    outcome = sacct_day_outcome(
        cluster.name, day, raw, rejects, cluster.slurm.max_quarantine_share, row_rejects(raw, weights, capacity)
    )
    guard_rows(step, RAW_SLURM_SACCT, cluster.name, raw, day)
    quarantined = step.write(
        rejects.select(list(QUARANTINE_SCHEMA)),
        table=RAW_QUARANTINE,
        partition=rejected_at,
    )
    landing = _share_landing(outcome, day, SACCT_SOURCE, raw.height)
    partition = {"cluster": cluster.name, "day": day}
    return step.write(raw, table=RAW_SLURM_SACCT, partition=partition, also=[landing]), quarantined, outcome


def _reland_sacct(step: Step, cluster, weights: dict, capacity, day: date, read: SacctRead) -> int:
    """An earlier day whose records changed (the lookback), landed and checked again; rows landed."""
    with failure_recorded(step.store, cluster.name, day, SACCT_SOURCE):
        landing = _land_sacct(step, cluster, weights, capacity, day, read)
    if isinstance(landing, Gap):
        record_gap(step.store, step.log, landing)
        return 0
    check = check_raw_table(step.store, RAW_SLURM_SACCT.name, step.key.path, SACCT_CHECK, day, [cluster.name])
    _reject_if_failed(step, check, day, SACCT_SOURCE, [cluster.name])
    return landing[0]


@table_asset(
    RAW_SLURM_SACCT,
    description="sacct rows (allocations and steps) of jobs active or pending during the day, fields as text.",
    checks=[
        Check(SACCT_CHECK),
        Check(
            SACCT_SHARE_CHECK,
            description="Quarantined share of the day's sacct rows within slurm.max_quarantine_share.",
        ),
    ],
)
def raw_slurm_sacct(step: Step) -> MaterializeResult:
    day = step.day
    rows: dict[str, int] = {}
    quarantined: dict[str, int] = {}
    outcomes: list[ClusterQuarantine] = []
    weights = dict(step.config.rates.mig_profile_weights)
    capacity = node_gpu_capacity(step.config.inventory_frame())
    gaps: list[Gap] = []
    for cluster in step.clusters_with(SACCT_SOURCE):
        with failure_recorded(step.store, cluster.name, day, SACCT_SOURCE):
            read = read_day(step.cardhours, cluster.name, day)
            landing = _land_sacct(step, cluster, weights, capacity, day, read)
        if isinstance(landing, Gap):
            gaps.append(record_gap(step.store, step.log, landing))
            continue
        rows[cluster.name], quarantined[cluster.name], outcome = landing
        outcomes.append(outcome)
        bad = outcome.counts["quarantined_values"]
        if bad:
            step.log.warning(f"{cluster.name}: {bad} sacct rows quarantined (by reason: {dict(outcome.reasons)})")
    check = check_raw_table(step.store, RAW_SLURM_SACCT.name, step.key.path, SACCT_CHECK, day, list(rows))
    share = quarantine_share_check(outcomes, step.key, SACCT_SHARE_CHECK)
    _reject_if_failed(step, check, day, SACCT_SOURCE, list(rows))
    earlier = {  # late accounting: the lookback's days read again, after the day's own checks
        c.name: lookback(step, c, partial(_reland_sacct, step, c, weights, capacity))
        for c in step.clusters_with(SACCT_SOURCE)
    }
    return MaterializeResult(
        metadata={
            "rows": sum(rows.values()),
            "rows_by_cluster": rows,
            **gap_metadata(gaps),
            "quarantined_lines": sum(quarantined.values()),
            "quarantined_rows_by_reason": MetadataValue.json({o.cluster: dict(o.reasons) for o in outcomes}),
            "lookback_by_cluster": MetadataValue.json(earlier),
            "window_start": str(step.start),
            "window_end": str(step.end),
        },
        check_results=[check, share],
    )


def sacct_day_outcome(
    cluster: str, day: date, raw: pl.DataFrame, line_rejects: pl.DataFrame, max_share: float, row_rejects: pl.DataFrame
) -> ClusterQuarantine:
    """A cluster's day of sacct: lines that did not split plus rows staging will quarantine,
    against every line read."""
    bad = pl.concat([line_rejects.select(list(QUARANTINE_SCHEMA)), row_rejects.select(list(QUARANTINE_SCHEMA))])
    counts, examples = rejects_by_code(bad)
    return ClusterQuarantine(
        cluster,
        day.isoformat(),
        {"quarantined_values": bad.height, "input_values": raw.height + line_rejects.height},
        max_share,
        counts,
        unit="sacct rows",
        limit_key="slurm.max_quarantine_share",
        examples=examples,
    )
