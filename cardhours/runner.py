"""Run a month through Dagster: every daily ingest partition, then the monthly marts and reports."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dagster import DagsterEventType, DagsterInstance, ExecuteInProcessResult

from cardhours.config import Config
from pipelines.definitions import build_definitions
from pipelines.partitions import days_of_month, month_key

QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


class RunFailed(RuntimeError):
    """A Dagster run of the month failed; the message names the partition and the step."""


@dataclass(frozen=True)
class MonthOutputs:
    month: str
    warehouse: Path
    reports_dir: Path
    review: Path
    days: int


def _instance() -> DagsterInstance:
    """The instance named by DAGSTER_HOME (so runs show in `dagster dev`), else a throwaway one."""
    if os.environ.get("DAGSTER_HOME"):
        return DagsterInstance.get()
    return DagsterInstance.ephemeral()


def _failure_text(result: ExecuteInProcessResult) -> str:
    """The failed checks, each with what it found, then the first failed step's error."""
    texts = failed_check_texts(result.all_events)
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            error = event.step_failure_data.error
            texts.append(f"step {event.step_key}: {error.message.strip()}")
            break
    return "\n".join(texts) or "unknown failure (see the Dagster logs)"


def failed_check_texts(events) -> list[str]:
    """One line per failed asset check: its name, asset, partition and description."""
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
) -> MonthOutputs:
    """Materialize all assets for ``month`` (``YYYY-MM``) and return where the outputs went."""
    definitions = build_definitions(str(config_path))
    daily = definitions.resolve_job_def("daily_ingest")
    monthly = definitions.resolve_job_def("monthly_review")
    days = days_of_month(month)
    total = len(days) + 1
    with _instance() as instance:
        for index, day in enumerate(days):
            if progress:
                progress(f"ingest {day}", index, total)
            _execute(daily, day, instance)
        if progress:
            progress(f"marts and reports {month}", len(days), total)
        _execute(monthly, month_key(month), instance)
        if progress:
            progress("done", total, total)
    reports_dir = config.reports.dir
    return MonthOutputs(month, config.warehouse.path, reports_dir, reports_dir / month / "review.html", len(days))


def _execute(job, partition_key: str, instance: DagsterInstance) -> None:
    result = job.execute_in_process(
        partition_key=partition_key, instance=instance, run_config=QUIET_RUN_CONFIG, raise_on_error=False
    )
    if not result.success:
        raise RunFailed(f"partition {partition_key} failed: {_failure_text(result)}")
