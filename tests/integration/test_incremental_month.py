"""A landed month reruns from what has landed: a real Prometheus serves a simulated February,
``cardhours run`` lands it, the server is stopped, and a fresh ``cardhours run`` process rebuilds
the marts without asking the server anything: identical rows, in seconds. Reading a day again
(``--reingest``) then needs the server, fails naming it, and leaves the landed day as it was.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from datetime import date, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cardhours.bench.prometheus_server import PrometheusServer, backfill
from cardhours.cli import app
from simulate.run import simulate
from tests.support.warehouse_read import read as _read
from tests.support.warehouse_read import read_lake
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
    # as promtool wrote it, 2-hour blocks: the server compacts its own copy into longer ones, which
    # a retention then drops only whole
    shutil.copytree(root / "tsdb", root / "tsdb-backfilled")
    with PrometheusServer(root / "tsdb", root) as server:
        config = _prometheus_config(sim.config_path, server.url)
        began = time.monotonic()
        first = CliRunner().invoke(app, ["run", "--config", str(config), "--month", MONTH])
        full = time.monotonic() - began
        assert first.exit_code == 0, first.output
        url = server.url
    # the server is stopped from here on: nothing listens at its address
    database = config.with_name("cardhours.duckdb")
    return {
        "config": config,
        "database": database,
        "url": url,
        "first": first.output,
        "full_seconds": full,
        "tsdb": root / "tsdb-backfilled",
    }


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


# The tests below work on copies of the landed site: the month above stays as it landed.
RETAINED_HOURS = 564  # 23.5 days back from the newest block (2026-03-01 00:00): from 2026-02-05 12:00 on
DAY5 = f"{MONTH}-05"


def _copy_site(landed: dict, into: Path) -> Path:
    """The landed site (config, warehouse, lake, saved sacct) copied; the copy's config."""
    shutil.copytree(landed["config"].parent, into / "site")
    return into / "site" / landed["config"].name


def _samples_and_marts(database: Path) -> dict[str, str]:
    """The month's digests but raw.slurm_sacct's: its rows name the saved file they were read
    from, which the copy moved (the day's sacct lands again beside the refused samples)."""
    return {table: digest for table, digest in _snapshot(database).items() if table != "raw.slurm_sacct"}


def _wait_for_the_retention(url: str, timeout: float = 60) -> None:
    """Until the server holds nothing of day 5's first six hours (it drops the blocks past its
    retention when it opens them)."""
    query = urllib.parse.urlencode(
        {"query": "count_over_time(DCGM_FI_DEV_GPU_UTIL[6h])", "time": "2026-02-05T06:00:00Z"}
    )
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=10) as answer:
            held = json.load(answer)["data"]["result"]
        if not held:
            return
        assert time.monotonic() < deadline, f"the server still holds day 5's morning after {timeout} s: {held[:2]}"
        time.sleep(1)


def _day5(config: Path, source: str) -> tuple[int, int]:
    """Day 5's landed rows of ``source`` (dcgm: samples) and its landing's rows."""
    table = {"dcgm": "raw.dcgm_samples", "sacct": "raw.slurm_sacct"}[source]
    landed = read_lake(config, f"SELECT count(*) FROM {table} WHERE day = DATE '2026-02-05'").item()
    landing = "SELECT rows FROM meta.landings WHERE day = DATE '2026-02-05' AND source = ?"
    return landed, read_lake(config, landing, [source]).item()


def test_a_re_read_past_the_server_s_retention_is_refused_unless_forced(landed: dict, tmp_path: Path) -> None:
    config = _copy_site(landed, tmp_path)
    database = config.with_name("cardhours.duckdb")
    shutil.copytree(landed["tsdb"], tmp_path / "tsdb")  # the server deletes what its retention drops
    retention = [f"--storage.tsdb.retention.time={RETAINED_HOURS}h"]
    with PrometheusServer(tmp_path / "tsdb", tmp_path, extra_args=retention) as server:
        config = _prometheus_config(config.with_name("cardhours.toml"), server.url)
        before, samples = _samples_and_marts(database), _day5(config, "dcgm")
        _wait_for_the_retention(server.url)
        done, _ = _cardhours("run", "--config", str(config), "--month", MONTH, "--reingest", DAY5)
        text = " ".join((done.stdout + done.stderr).split())
        assert done.returncode == 1, text
        found = re.search(r"the lake holds ([\d,]+) samples, the new read only ([\d,]+) \(", text)
        assert found, text
        held, new = (int(n.replace(",", "")) for n in found.groups())
        assert f"refused to replace raw.dcgm_samples of cluster 'sim', day {DAY5}" in text
        assert held == samples[0] == samples[1] and 0 < new < held, text  # half the day is past the retention
        assert "retention" in text and f"--reingest {DAY5} --force-shrink" in text
        assert _samples_and_marts(database) == before and _day5(config, "dcgm") == samples

        done, _ = _cardhours("run", "--config", str(config), "--month", MONTH, "--reingest", DAY5, "--force-shrink")
        assert done.returncode == 0, done.stdout + done.stderr
        assert _day5(config, "dcgm") == (new, new)
    print(f"day {DAY5}: {held} samples landed, {new} left within the retention; refused, then forced:\n{text}")


def _finish_a_running_job(sacct: Path, end: str) -> str:
    """Rewrite the saved sacct so that the first job still running at the month's end finished at
    ``end``: its allocation and step lines COMPLETED with that End. Returns its JobIDRaw."""
    lines = sacct.read_text().splitlines()
    header = lines[0].split("|")
    state, stop, raw_id = header.index("State"), header.index("End"), header.index("JobIDRaw")
    running = next(f for f in (line.split("|") for line in lines[1:]) if f[state] == "RUNNING" and "." not in f[raw_id])
    job = running[raw_id]
    out = [lines[0]]
    for line in lines[1:]:
        fields = line.split("|")
        if fields[raw_id].split(".")[0] == job:
            fields[state], fields[stop] = "COMPLETED", end
        out.append("|".join(fields))
    sacct.write_text("\n".join(out) + "\n")
    return job


def test_a_job_that_ended_after_its_days_landed_is_read_again_from_sacct_alone(landed: dict, tmp_path: Path) -> None:
    config = _copy_site(landed, tmp_path)
    config = _prometheus_config(config.with_name("cardhours.toml"), landed["url"])  # the stopped server
    job = _finish_a_running_job(config.with_name("sacct.txt"), "2026-03-01T02:00:00")
    days = read_lake(config, "SELECT DISTINCT day FROM raw.slurm_sacct WHERE job_id_raw = ? ORDER BY day", [job])[
        "day"
    ].to_list()

    done, seconds = _cardhours("run", "--config", str(config), "--month", MONTH)
    text = " ".join(done.stdout.split())
    assert done.returncode == 0, done.stdout + done.stderr  # Prometheus was not asked: nothing listens there
    assert f"0 days ingested, {DAYS} already landed" in text
    changed = ", ".join(day.isoformat() for day in days)
    assert f"sacct landed again for {changed} (records changed since they landed)" in text, text
    staged = _read(
        config.with_name("cardhours.duckdb"),
        "SELECT end_time, is_open, state FROM staging.stg_slurm__jobs WHERE job_id_raw = ?",
        [job],
    )
    assert staged.rows() == [(datetime(2026, 3, 1, 2), False, "COMPLETED")]  # billed once, with its final end
    print(f"job {job} ended after {len(days)} landed days: their sacct read again in a {seconds:.1f} s rerun")
