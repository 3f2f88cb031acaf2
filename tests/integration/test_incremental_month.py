"""A landed month reruns from what has landed: a real Prometheus serves a simulated February,
``cardhours run`` lands it, the server is stopped, and a fresh ``cardhours run`` process rebuilds
the marts without asking the server anything: identical rows, in seconds. Reading a day again
(``--reingest``) then needs the server, fails naming it, and leaves the landed day as it was.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cardhours.bench.prometheus_server import PrometheusServer, backfill
from cardhours.cli import app
from simulate.run import simulate
from tests.support.warehouse_read import read as _read
from tests.support.warehouse_read import table_digests as _snapshot

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MONTH, DAYS, STEP = "2026-02", 28, 300
CARDHOURS = str(Path(sys.executable).with_name("cardhours"))


def _prometheus_config(config: Path, url: str) -> Path:
    text = re.sub(
        r"\[clusters\.metrics\]\n(?:[^\[\n][^\n]*\n)*",
        f'[clusters.metrics]\nsource = "prometheus"\nstep_seconds = {STEP}\n\n'
        f'[clusters.prometheus]\nurl = "{url}"\nscrape_interval_seconds = {STEP}\nstep_seconds = {STEP}\n\n',
        config.read_text(),
    )
    path = config.with_name("prometheus.toml")
    path.write_text(text)
    return path


def _cardhours(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    began = time.monotonic()
    done = subprocess.run(
        [CARDHOURS, *args], capture_output=True, text=True, timeout=900, env={**os.environ, "COLUMNS": "400"}
    )
    return done, time.monotonic() - began


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("incremental")
    sim = simulate(
        root / "sim", gpus=8, days=DAYS, start=date(2026, 2, 1), seed=9, step_seconds=STEP, metrics_format="both"
    )
    backfill([sim.om_path], root / "tsdb")
    with PrometheusServer(root / "tsdb", root) as server:
        config = _prometheus_config(sim.config_path, server.url)
        began = time.monotonic()
        first = CliRunner().invoke(app, ["run", "--config", str(config), "--month", MONTH])
        full = time.monotonic() - began
        assert first.exit_code == 0, first.output
        url = server.url
    # the server is stopped from here on: nothing listens at its address
    database = config.with_name("cardhours.duckdb")
    return {"config": config, "database": database, "url": url, "first": first.output, "full_seconds": full}


def test_the_first_run_reads_every_day(landed: dict) -> None:
    assert f"month {MONTH}: {DAYS} days ingested + monthly marts" in " ".join(landed["first"].split())


def test_a_rerun_with_the_server_stopped_rebuilds_identical_marts(landed: dict) -> None:
    before = _snapshot(landed["database"])
    done, seconds = _cardhours("run", "--config", str(landed["config"]), "--month", MONTH)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"0 days ingested, {DAYS} already landed (not read again" in " ".join(done.stdout.split())
    assert _snapshot(landed["database"]) == before
    print(f"full ingest and build {landed['full_seconds']:.1f} s; rerun from what landed {seconds:.1f} s")
    assert seconds < landed["full_seconds"]


def test_marts_only_reads_no_source(landed: dict) -> None:
    before = _snapshot(landed["database"])
    done, _ = _cardhours("run", "--config", str(landed["config"]), "--month", MONTH, "--marts-only")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _snapshot(landed["database"]) == before


def test_reingest_needs_the_server_and_keeps_the_landed_day(landed: dict) -> None:
    day = f"{MONTH}-05"
    landing = "SELECT status, rows, landed_at FROM meta.landings WHERE day = DATE '2026-02-05' AND source = 'dcgm'"
    before, samples = _read(landed["database"], landing), _snapshot(landed["database"])
    done, _ = _cardhours("run", "--config", str(landed["config"]), "--month", MONTH, "--reingest", day)
    text = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 1, text
    assert f"run failed: day {day} failed: step raw__dcgm_samples:" in text
    assert landed["url"].removeprefix("http://") in text.replace("http://", "")
    assert _read(landed["database"], landing).equals(before)  # the sacct file still answered: it landed again
    assert _snapshot(landed["database"]) == samples


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--reingest", "2026-03-01"], "'2026-03-01' is not a day of 2026-02"),
        (["--reingest", "yesterday"], "'yesterday' is not a day of 2026-02"),
        (["--marts-only", "--reingest", "all"], "--marts-only reads no source: leave out --reingest"),
    ],
)
def test_bad_reingest_values_are_named(tmp_path: Path, args: list[str], message: str) -> None:
    config = simulate(tmp_path, gpus=8, days=1, start=date(2026, 2, 1), seed=9, step_seconds=STEP).config_path
    done = CliRunner().invoke(app, ["run", "--config", str(config), "--month", MONTH, *args])
    flat = "".join(done.output.replace("│", "").split())  # the error box wraps anywhere
    assert done.exit_code == 2 and "".join(message.split()) in flat, done.output
