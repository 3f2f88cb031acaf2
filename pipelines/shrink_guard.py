"""The retention guard: a landed day is not replaced by a read that holds less of it.

Reading a landed day again (``cardhours run --reingest``, the sacct lookback, a Dagster re-run of
a day partition) replaces the day's partition. When the source has lost data since (a Prometheus
whose retention has passed the day, or that was rebuilt; a changed series selector; slurmdbd's
purge), the new read holds fewer samples or jobs, and replacing would lose them without a word.
Each raw table states what it counts (``MEASURES``). A read that counts fewer than the landed
partition, by any amount, is refused (``ShrinkRefused``) before anything of the day is written:
the landed rows, their quarantine and their landing stay as they were, and the step fails naming
both counts. The same count or more replaces the day. A run tagged ``FORCE_TAG``
(``cardhours run --force-shrink``) replaces it anyway, with a warning in its log.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
from dagster import DagsterError

from contracts.runs import FORCE_SHRINK_FLAG, FORCE_SHRINK_TAG
from pipelines.tables import (
    RAW_DCGM_SAMPLES,
    RAW_KUBE_NODE_RUNS,
    RAW_KUBE_SERIES,
    RAW_SLURM_SACCT,
    STG_DCGM__GPU_XID,
    STG_SLURM__DOWNTIME,
    Table,
)
from transforms.helpers.slurm_parse import parent_job_id_raw
from warehouse.lake import partition_file

if TYPE_CHECKING:
    from pipelines.step import Step

FORCE_TAG, FORCE_FLAG = FORCE_SHRINK_TAG, FORCE_SHRINK_FLAG  # the run tag ("true"), cardhours run's option

_PROMETHEUS_CAUSES = (
    "the server no longer holds all of the day: its retention has passed the day, or it was rebuilt or "
    "replaced; or the series selector or metric names in the config changed"
)


@dataclass(frozen=True)
class Measure:
    """What a raw table's day is counted in, and why a new read of it may hold less."""

    unit: str
    count: pl.Expr  # aggregated over the partition's rows: one number
    causes: str


MEASURES: dict[str, Measure] = {
    RAW_DCGM_SAMPLES.name: Measure("samples", pl.len(), _PROMETHEUS_CAUSES),
    RAW_SLURM_SACCT.name: Measure(
        "jobs",
        parent_job_id_raw("job_id_raw").n_unique(),
        "slurmdbd no longer holds all of the day's jobs (its PurgeJobAfter has passed the day), or "
        "slurm_cluster, the sacct command or the saved sacct file in the config changed",
    ),
    RAW_KUBE_SERIES.name: Measure("kube-state-metrics samples", pl.col("n_samples").sum(), _PROMETHEUS_CAUSES),
    RAW_KUBE_NODE_RUNS.name: Measure("node series runs", pl.len(), _PROMETHEUS_CAUSES),
    STG_SLURM__DOWNTIME.name: Measure(
        "node event and reservation intervals",
        pl.len(),
        "slurmdbd no longer holds all of the day's node events or reservations (its PurgeEventAfter or "
        "PurgeResvAfter has passed the day), or slurm_cluster, sacctmgr_command or the saved files in the config "
        "changed",
    ),
    # read from the server again whenever the day is built again (no raw table of its own); counted
    # in down time, not intervals: a re-read that splits one interval in two has lost time
    STG_DCGM__GPU_XID.name: Measure(
        "GPU-seconds down for XID errors",
        (pl.col("end_ts") - pl.col("start_ts")).dt.total_seconds().sum(),
        _PROMETHEUS_CAUSES + "; or the day before it was landed since, which shows a sticky XID on a GPU that "
        "worked before this day (then the new read is right: replace it with the option below)",
    ),
}


class ShrinkRefused(RuntimeError):
    """A new read of a landed day holds less than the day's landed partition."""


@dataclass(frozen=True)
class Shrink:
    table: str
    cluster: str
    day: date
    landed: int
    new: int

    @property
    def measure(self) -> Measure:
        return MEASURES[self.table]

    def refusal(self) -> str:
        unit = self.measure.unit
        return (
            f"refused to replace {self.table} of cluster {self.cluster!r}, day {self.day}: the lake holds "
            f"{self.landed:,} {unit}, the new read only {self.new:,} ({self.landed - self.new:,} fewer). Likely "
            f"cause: {self.measure.causes}. The landed rows and their landing are kept. To replace them anyway: "
            f"cardhours run --month {self.day:%Y-%m} --reingest {self.day} {FORCE_FLAG} (in Dagster: the daily "
            f"job's run tag {FORCE_TAG}=true)"
        )

    def forced(self) -> str:
        return (
            f"{FORCE_TAG}: replacing {self.table} of cluster {self.cluster!r}, day {self.day}: "
            f"{self.landed:,} {self.measure.unit} landed, {self.new:,} in the new read"
        )


def shrinks(landed: int | None, new: int) -> bool:
    """Whether a new read of ``new`` replaces a landed ``landed`` (None: nothing landed) with less."""
    return landed is not None and new < landed


def count(table: Table, rows: pl.DataFrame | pl.LazyFrame) -> int:
    """``rows`` counted in ``table``'s measure."""
    return int(rows.lazy().select(MEASURES[table.name].count).collect().item() or 0)


def landed_count(lake: Path, table: Table, cluster: str, day: date) -> int | None:
    """The landed partition of ``cluster`` and ``day`` counted in ``table``'s measure; None when
    there is none."""
    path = partition_file(lake, table.lake_table, {"cluster": cluster, table.period: day})
    return count(table, pl.scan_parquet(path)) if path.is_file() else None


def forced(step: Step) -> bool:
    """Whether the step's run is tagged ``FORCE_TAG=true``."""
    try:
        tags = step.context.run.tags
    except DagsterError:  # invoked directly, an asset has no run (DagsterInvalidPropertyError): the context's tags
        tags = step.context.run_tags
    return str(tags.get(FORCE_TAG, "")).lower() == "true"


def guard(step: Step, table: Table, cluster: str, new: int, day: date | None = None) -> None:
    """Refuse (``ShrinkRefused``) to replace ``cluster``'s landed ``day`` (default: the step's) of
    ``table`` with a read counting ``new``, when that is fewer than it holds, unless forced."""
    day = day or step.day
    landed = landed_count(step.store.lake, table, cluster, day)
    if not shrinks(landed, new):
        return
    assert landed is not None
    shrink = Shrink(table.name, cluster, day, landed, new)
    if not forced(step):
        raise ShrinkRefused(shrink.refusal())
    step.log.warning(shrink.forced())


def guard_rows(step: Step, table: Table, cluster: str, rows: pl.DataFrame, day: date | None = None) -> None:
    """``guard`` with the new read's rows, counted in the table's measure."""
    guard(step, table, cluster, count(table, rows), day)
