"""Run a month through Dagster: the daily ingest partitions, then the monthly marts and reports.

Incremental: a day that already landed ('ok' or 'gap') for every cluster and source (meta.landings) is not
read again unless the caller asks for it (``reingest``: some days, or every day); with
``marts_only`` no day is read and the monthly job rebuilds from what has landed. So a rerun of a
landed month asks Prometheus nothing, and a source that has since lost the data (a Prometheus
past its retention) cannot replace the landed rows; a day read again on purpose is refused when
it holds less than landed (pipelines/shrink_guard.py) unless ``force_shrink``. One exception: a
landed day holding Slurm records that were still open (a job running) is read from sacct again,
and its sacct alone lands again when its records changed (pipelines/sacct_lookback.py).

The whole month runs under the warehouse lock (warehouse/lock.py), taken here before the first
day and held to the end; the jobs' steps run in this process and re-enter it. A failed day stops
the month before the monthly build (which would refuse it anyway: pipelines/assets/gate.py),
unless the caller accepts the gaps with a reason: then every day is tried, and the monthly job
builds over the failed ones and records the reason with the build."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from dagster import AssetKey, DagsterEventType, DagsterInstance, ExecuteInProcessResult

from cardhours.cli_support import ALL_DAYS
from config import Config
from pipelines.assets.gate import GATE_STEP
from pipelines.definitions import build_definitions
from pipelines.errors import error_text
from pipelines.partitions import days_of_month, month_key
from pipelines.sacct_lookback import month_changed_days
from pipelines.shrink_guard import FORCE_TAG
from pipelines.store import open_lake, open_warehouse
from pipelines.tables import RAW_SLURM_SACCT
from warehouse.books.landings import expected_sources, landed_days
from warehouse.landings import month_landings
from warehouse.lock import hold_warehouse

QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


class RunFailed(RuntimeError):
    """A Dagster run of the month failed; the message names the partition and the step."""


@dataclass(frozen=True)
class MonthOutputs:
    month: str
    warehouse: Path
    reports_dir: Path
    review: Path
    days: int  # days of the month
    ingested: tuple[str, ...] = ()  # the days read from the sources by this run
    failed_days: tuple[str, ...] = ()
    late_sacct: tuple[str, ...] = ()  # landed days whose sacct records changed: their sacct landed again

    @property
    def already_landed(self) -> int:
        return self.days - len(self.ingested)


def _instance() -> DagsterInstance:
    """The instance named by DAGSTER_HOME (so runs show in `dagster dev`), else a throwaway one."""
    if os.environ.get("DAGSTER_HOME"):
        return DagsterInstance.get()
    return DagsterInstance.ephemeral()


def _failure_text(result: ExecuteInProcessResult) -> str:
    """``step <key>: <the asset's own error>`` (or ``resources: ...`` when the run could not
    start, e.g. the warehouse is busy), then each failed check with what it found."""
    failed_checks = failed_check_texts(result.all_events)
    for event in result.all_events:
        error = getattr(event.event_specific_data, "error", None)
        if error is None or not (event.is_step_failure or event.is_resource_init_failure):
            continue
        text = error_text(error)
        where = f"step {event.step_key}" if event.step_key else "resources"
        return "\n".join([f"{where}: {text}", *failed_checks])
    return "\n".join(failed_checks) or "unknown failure (see the Dagster logs)"


def failed_check_texts(events) -> list[str]:
    """One line per failed asset check: its name, asset and description (what it found)."""
    texts = []
    for event in events:
        if event.event_type != DagsterEventType.ASSET_CHECK_EVALUATION:
            continue
        evaluation = event.event_specific_data
        if evaluation.passed:
            continue
        where = "/".join(evaluation.asset_key.path)
        found = evaluation.description or "no description (see the Dagster logs)"
        texts.append(f"check {evaluation.check_name} on {where}: {found}")
    return texts


def run_month(
    config_path: Path,
    config: Config,
    month: str,
    progress: Callable[[str, int, int], None] | None = None,
    accept_gaps: str | None = None,
    reingest: Sequence[str] = (),
    marts_only: bool = False,
    force_shrink: bool = False,
) -> MonthOutputs:
    """Land the month's days that have not landed (and the ``reingest`` days: ISO dates, or
    ``"all"``; and the sacct of landed days whose records changed), then build the marts and
    reports of ``month`` (``YYYY-MM``); where outputs went. ``force_shrink``: a day read again
    replaces the landed one even with fewer samples or jobs. Raises ``RunFailed`` (a day or the
    monthly build failed) or ``WarehouseBusy``."""
    definitions = build_definitions(str(config_path))
    daily = definitions.resolve_job_def("daily_ingest")
    monthly = definitions.resolve_job_def("monthly_review")
    days = days_of_month(month)
    with hold_warehouse(config.warehouse.path, f"cardhours run --month {month}"), _instance() as instance:
        _refresh(config)  # an older warehouse's day tables move to the lake before any day lands
        todo = [] if marts_only else days_to_ingest(config, days, reingest)
        late = [] if marts_only else late_sacct_days(config_path, config, [d for d in days if d not in todo])
        runs = [*((day, None) for day in todo), *((day, [RAW_SLURM_SACCT.key]) for day in late)]
        tags = {FORCE_TAG: "true"} if force_shrink else {}
        try:
            failed = _run_days(daily, runs, instance, progress, accept_gaps, month, tags)
        finally:
            _refresh(config)  # the DuckDB file's views see every day landed, even when one failed
        total = len(runs) + 1
        if progress:
            progress(f"marts and reports {month}", len(runs), total)
        gate = {"ops": {GATE_STEP: {"config": {"accept_gaps": accept_gaps}}}} if accept_gaps else {}
        problem = _attempt(monthly, month_key(month), instance, gate)
        if problem:
            raise RunFailed(f"monthly build {month} failed: {problem}")
        if progress:
            progress("done", total, total)
    reports_dir = config.reports.dir
    review = reports_dir / month / "review.html"
    return MonthOutputs(
        month, config.warehouse.path, reports_dir, review, len(days), tuple(todo), tuple(failed), tuple(late)
    )


def days_to_ingest(config: Config, days: list[str], reingest: Sequence[str]) -> list[str]:
    """``days`` minus those landed ('ok' or 'gap') for every cluster and source, plus the ``reingest`` ones."""
    if ALL_DAYS in reingest:
        return list(days)
    first, end = date.fromisoformat(days[0]), date.fromisoformat(days[-1]) + timedelta(days=1)
    conn = open_lake(config)
    try:
        landings = month_landings(conn, first, end)
    finally:
        conn.close()
    landed = {day.isoformat() for day in landed_days(landings, expected_sources(config), first, end)}
    return [day for day in days if day not in landed or day in reingest]


def late_sacct_days(config_path: Path, config: Config, landed: list[str]) -> list[str]:
    """The ``landed`` days whose sacct records changed since they landed (jobs that ended since)."""
    found = month_changed_days(str(config_path), config, [date.fromisoformat(day) for day in landed])
    return [day.isoformat() for day in found]


def _run_days(
    daily,
    runs: list[tuple[str, list[AssetKey] | None]],
    instance: DagsterInstance,
    progress,
    accept_gaps: str | None,
    month: str,
    tags: dict[str, str],
) -> list[str]:
    """Run each day's ingest (of the assets given, else all); the failed days (``RunFailed`` at
    the first without ``accept_gaps``)."""
    failed: list[str] = []
    total = len(runs) + 1
    for index, (day, selection) in enumerate(runs):
        if progress:
            progress(f"ingest {day}" if selection is None else f"sacct {day} (records changed)", index, total)
        problem = _attempt(daily, day, instance, tags=tags, selection=selection)
        if problem and not accept_gaps:
            raise RunFailed(
                f"day {day} failed: {problem}. The monthly build of {month} did not run: fix the cause and "
                f'run the month again, or build over the failed day with --accept-gaps "reason"'
            )
        if problem:
            failed.append(f"{day}: {problem}")
    return failed


def _refresh(config: Config) -> None:
    """Open the warehouse once: migrated, older day tables exported, views over the lake made anew."""
    open_warehouse(config).close()


def _attempt(
    job,
    partition_key: str,
    instance: DagsterInstance,
    run_config: dict | None = None,
    tags: dict[str, str] | None = None,
    selection: list[AssetKey] | None = None,
) -> str | None:
    """Run one partition (of the ``selection`` of its assets, else all); None when it succeeded,
    else what failed."""
    result = job.execute_in_process(
        partition_key=partition_key,
        instance=instance,
        run_config={**QUIET_RUN_CONFIG, **(run_config or {})},
        tags=tags or None,
        asset_selection=selection,
        raise_on_error=False,
    )
    return None if result.success else _failure_text(result)


def _execute(job, partition_key: str, instance: DagsterInstance, run_config: dict | None = None) -> None:
    """Run one partition; ``RunFailed`` naming the partition and the step when it fails."""
    problem = _attempt(job, partition_key, instance, run_config)
    if problem:
        raise RunFailed(f"partition {partition_key} failed: {problem}")
