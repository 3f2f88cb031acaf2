"""A day that fails to land: recorded in meta.landings, `cardhours run` stops before the monthly
build naming it, the monthly job's gate refuses the month, and `--accept-gaps` builds over it
with the reason recorded."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from dagster import DagsterInstance
from typer.testing import CliRunner

from cardhours.cli import app
from cardhours.runner import _failure_text
from pipelines.definitions import build_definitions
from simulate.run import simulate
from tests.support.warehouse_read import read as _read

pytestmark = [pytest.mark.slow]

BROKEN = (
    "MetricsSourceError: cannot read dcgm-exporter samples from {path}: parquet: File out of specification: "
    "A Parquet file must contain a header and footer with at least 12 bytes; replace or remove that file, then "
    "rerun the day"
)

SOURCE = "cluster 'sim' dcgm (GPU samples ([clusters.metrics])) failed for 2026-02-28: "  # the source, named


def _flat(text: str) -> str:
    """``text`` without whitespace: the terminal wraps long lines, paths included, anywhere."""
    return "".join(text.split())


def test_a_failed_day_stops_the_month_until_accepted(tmp_path: Path) -> None:
    sim = simulate(
        tmp_path, gpus=8, days=28, start=date(2026, 2, 1), seed=3, step_seconds=600, metrics_format="parquet"
    )
    (part,) = (tmp_path / "metrics" / "day=2026-02-28").glob("*.parquet")
    part.write_bytes(b"not parquet")  # the exporter's file of the last day is broken
    broken = BROKEN.format(path=part)
    runner, config, database = CliRunner(), str(sim.config_path), tmp_path / "cardhours.duckdb"

    stopped = runner.invoke(app, ["run", "--config", config, "--month", "2026-02"])
    assert stopped.exit_code == 1
    assert _flat(
        f"run failed: day 2026-02-28 failed: step raw__dcgm_samples: {SOURCE}{broken}. The monthly "
        "build of 2026-02 did not run: fix the cause and run the month again, or build over the failed day with "
        '--accept-gaps "reason"'
    ) in _flat(stopped.output)
    landings = _read(
        database,
        "SELECT source, status, count(*) AS days, sum(rows) AS rows FROM meta.landings GROUP BY ALL ORDER BY ALL",
    )
    assert landings.select("source", "status", "days").rows() == [
        ("dcgm", "failed", 1),
        ("dcgm", "ok", 27),
        ("sacct", "ok", 28),
    ]
    failed = _read(database, "SELECT day, detail FROM meta.landings WHERE status = 'failed'")
    assert failed.rows() == [(date(2026, 2, 28), broken)]
    assert _read(database, "SELECT count(*) AS n FROM meta.monthly_builds")["n"][0] == 0

    with DagsterInstance.ephemeral() as instance:  # the monthly job on its own (a schedule tick) refuses too
        monthly = build_definitions(config).resolve_job_def("monthly_review")
        result = monthly.execute_in_process(partition_key="2026-02-01", instance=instance, raise_on_error=False)
    assert not result.success
    assert _failure_text(result) == (
        "step meta__month_landed: 2026-02 is not built: not every day landed.\n"
        f"cluster 'sim' dcgm: 2026-02-28 failed ({broken})\n"
        "Land those days (the daily_ingest job for each, or cardhours run --month 2026-02), or build over them with "
        'a reason (cardhours run --accept-gaps "...", or run config accept_gaps).'
    )

    built = runner.invoke(app, ["run", "--config", config, "--month", "2026-02", "--accept-gaps", "day 28 lost"])
    assert built.exit_code == 0, built.output
    assert _flat(
        f"built over a failed day (day 28 lost): 2026-02-28: step raw__dcgm_samples: {SOURCE}{broken}"
    ) in _flat(built.output)
    build = _read(
        database, "SELECT status, accepted_gaps, landed_through <= started_at AS ordered FROM meta.monthly_builds"
    )
    assert build.rows() == [("finished", "day 28 lost", True)]
