"""Daily ingest: DCGM samples and sacct rows of one UTC day land in the raw schema.

DCGM samples are screened on the way in (transforms.dcgm_quality): sentinels and
out-of-range values are nulled, restart duplicates dropped, whole-GPU fields on MIG
instances moved to one device row; every rejected value lands in ``raw.quarantine``
(source "dcgm") and is counted in the metadata.
"""

from datetime import date

import polars as pl
from dagster import AssetCheckResult, AssetCheckSpec, AssetExecutionContext, MaterializeResult, MetadataValue, asset

from cardhours.landings import SACCT as SACCT_SOURCE
from cardhours.schemas import QUARANTINE_SCHEMA, SAMPLE_VALUE_COLUMNS
from pipelines.checks.quarantine import CHECK_NAME as QUARANTINE_CHECK
from pipelines.checks.quarantine import ClusterQuarantine, quarantine_share_check, values_by_reason
from pipelines.checks.raw import check_raw_table
from pipelines.checks.suites import node_gpu_capacity
from pipelines.landing import DETAIL_CHARS, failure_recorded, landed
from pipelines.partitions import daily_partitions, naive_window
from pipelines.resources import CardhoursResource
from transforms.dcgm_quality import SOURCE as DCGM_SOURCE
from transforms.dcgm_quality import ScreenResult, quarantine_share, screen_samples
from transforms.slurm_rows import rejects_by_code, row_rejects
from warehouse import replace_partition
from warehouse.landings import OK, REJECTED, mark_rejected
from warehouse.partitions import Statement

SAMPLES_KEY = ["raw", "dcgm_samples"]
SACCT_KEY = ["raw", "slurm_sacct"]
SACCT_SHARE_CHECK = "sacct_quarantine_share"


def fields_present(samples: pl.DataFrame) -> list[str]:
    """The raw value columns with at least one non-null value (after screening)."""
    if samples.is_empty():
        return []
    counts = samples.select(pl.col(SAMPLE_VALUE_COLUMNS).count()).row(0, named=True)
    return [field for field in SAMPLE_VALUE_COLUMNS if counts[field] > 0]


def _share_landing(outcome: ClusterQuarantine, day: date, source: str, rows: int) -> Statement:
    """The day's landing: 'rejected' when its quarantine share is over the cluster's limit."""
    counts = outcome.counts
    detail = f"{outcome.share:.4%} of {outcome.unit} quarantined, over {outcome.limit_key} {outcome.max_share:.4%}"
    status, detail = (REJECTED, detail) if outcome.exceeded else (OK, None)
    return landed(
        outcome.cluster, day, source, rows, counts["quarantined_values"], counts["input_values"], status, detail
    )


def _reject_if_failed(
    cardhours: CardhoursResource, check: AssetCheckResult, day: date, source: str, clusters: list[str]
) -> None:
    """A blocking raw-table check that failed makes the day's landings 'rejected'."""
    if check.passed or not clusters:
        return
    detail = f"check {check.check_name} failed: {check.description or 'see the Dagster run'}"[:DETAIL_CHARS]
    with cardhours.warehouse() as conn:
        mark_rejected(conn, day, source, clusters, detail)


def screening_metadata(result: ScreenResult) -> dict:
    """One cluster's screening counts, its quarantine share and the fields it delivered."""
    return {
        **result.counts,
        "quarantine_share": round(quarantine_share(result.counts), 8),
        "fields_present": fields_present(result.clean),
    }


@asset(
    key=SAMPLES_KEY,
    partitions_def=daily_partitions,
    group_name="ingest",
    kinds={"duckdb"},
    description="Every DCGM sample of the day, per GPU or MIG instance, labels normalized and screened "
    "(docs/design.md).",
    check_specs=[
        AssetCheckSpec("gx_raw_dcgm_samples", asset=SAMPLES_KEY, blocking=True),
        AssetCheckSpec(
            QUARANTINE_CHECK,
            asset=SAMPLES_KEY,
            blocking=True,
            description="Quarantined share of the day's sample values within metrics.max_quarantine_share.",
        ),
    ],
)
def raw_dcgm_samples(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    day = start.date()
    rows: dict[str, int] = {}
    screening: dict[str, dict] = {}
    reads: dict[str, dict] = {}
    outcomes: list[ClusterQuarantine] = []
    with cardhours.warehouse() as conn:
        for cluster in cardhours.config.clusters:
            with failure_recorded(conn, cluster.name, day, DCGM_SOURCE):
                source = cardhours.metrics_source(cluster.name)
                frame = source.read_samples(cluster.name, start, end)
                if (report := getattr(source, "last_report", None)) is not None:  # an HTTP read: what it did
                    reads[cluster.name] = report.summary()
                result = screen_samples(frame, partition_key=day.isoformat())
                del frame
                outcome = ClusterQuarantine(
                    cluster.name,
                    day.isoformat(),
                    result.counts,
                    cluster.metrics.max_quarantine_share,
                    values_by_reason(result.quarantine),
                )
                replace_partition(
                    conn,
                    "raw.quarantine",
                    result.quarantine.select(list(QUARANTINE_SCHEMA)),
                    {"cluster": cluster.name, "source": DCGM_SOURCE, "partition_key": day.isoformat()},
                )
                rows[cluster.name] = replace_partition(
                    conn,
                    "raw.dcgm_samples",
                    result.clean,
                    {"cluster": cluster.name, "day": day},
                    also=[_share_landing(outcome, day, DCGM_SOURCE, result.clean.height)],
                )
            screening[cluster.name] = screening_metadata(result)
            outcomes.append(outcome)
            quarantined = result.counts["quarantined_values"]
            context.log.info(
                f"{cluster.name}: {rows[cluster.name]} samples for {day}, {quarantined} values quarantined"
            )
    gx = check_raw_table(cardhours, "raw.dcgm_samples", SAMPLES_KEY, "gx_raw_dcgm_samples", day)
    _reject_if_failed(cardhours, gx, day, DCGM_SOURCE, list(rows))
    share = quarantine_share_check(outcomes, SAMPLES_KEY)
    return MaterializeResult(
        metadata={
            "rows": sum(rows.values()),
            "rows_by_cluster": rows,
            "quarantined_values": sum(item["quarantined_values"] for item in screening.values()),
            "screening_by_cluster": MetadataValue.json(screening),
            **({"read_by_cluster": MetadataValue.json(reads)} if reads else {}),
            "window_start": str(start),
            "window_end": str(end),
        },
        check_results=[gx, share],
    )


@asset(
    key=SACCT_KEY,
    partitions_def=daily_partitions,
    group_name="ingest",
    kinds={"duckdb"},
    description="sacct rows (allocations and steps) of jobs active or pending during the day, fields as text.",
    check_specs=[
        AssetCheckSpec("gx_raw_slurm_sacct", asset=SACCT_KEY, blocking=True),
        AssetCheckSpec(
            SACCT_SHARE_CHECK,
            asset=SACCT_KEY,
            blocking=True,
            description="Quarantined share of the day's sacct rows within slurm.max_quarantine_share.",
        ),
    ],
)
def raw_slurm_sacct(context: AssetExecutionContext, cardhours: CardhoursResource) -> MaterializeResult:
    start, end = naive_window(context.partition_time_window)
    day = start.date()
    rows: dict[str, int] = {}
    quarantined: dict[str, int] = {}
    outcomes: list[ClusterQuarantine] = []
    weights = dict(cardhours.config.rates.mig_profile_weights)
    capacity = node_gpu_capacity(cardhours.config.inventory_frame())
    with cardhours.warehouse() as conn:
        for cluster in cardhours.config.clusters:
            if cluster.slurm is None:
                continue
            with failure_recorded(conn, cluster.name, day, SACCT_SOURCE):
                raw, rejects = cardhours.sacct_rows(cluster.name, day, start, end)
                outcome = sacct_day_outcome(
                    cluster.name,
                    day,
                    raw,
                    rejects,
                    cluster.slurm.max_quarantine_share,
                    row_rejects(raw, weights, capacity),
                )
                outcomes.append(outcome)
                quarantined[cluster.name] = replace_partition(
                    conn,
                    "raw.quarantine",
                    rejects.select(list(QUARANTINE_SCHEMA)),
                    {"cluster": cluster.name, "source": SACCT_SOURCE, "partition_key": day.isoformat()},
                )
                bad = outcome.counts["quarantined_values"]
                rows[cluster.name] = replace_partition(
                    conn,
                    "raw.slurm_sacct",
                    raw,
                    {"cluster": cluster.name, "day": day},
                    also=[_share_landing(outcome, day, SACCT_SOURCE, raw.height)],
                )
            if bad:
                context.log.warning(
                    f"{cluster.name}: {bad} sacct rows quarantined (by reason: {dict(outcome.reasons)})"
                )
    check = check_raw_table(cardhours, "raw.slurm_sacct", SACCT_KEY, "gx_raw_slurm_sacct", day)
    share = quarantine_share_check(outcomes, SACCT_KEY, SACCT_SHARE_CHECK)
    _reject_if_failed(cardhours, check, day, SACCT_SOURCE, list(rows))
    return MaterializeResult(
        metadata={
            "rows": sum(rows.values()),
            "rows_by_cluster": rows,
            "quarantined_lines": sum(quarantined.values()),
            "quarantined_rows_by_reason": MetadataValue.json({o.cluster: dict(o.reasons) for o in outcomes}),
            "window_start": str(start),
            "window_end": str(end),
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
