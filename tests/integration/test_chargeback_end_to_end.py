"""Chargeback on a simulated month through `cardhours run`: FOCUS conformance of the files,
reconciliation, a close refused while a real `cardhours run` holds the warehouse, `cardhours
close`, a fixed account mapping -> rerun -> corrections, `cardhours ledger verify`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from tests.support.focus_conformance import csv_problems, parquet_problems
from tests.support.warehouse_read import read
from warehouse.lock import lock_path, read_holder

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).parents[2]
MONTH = "2026-10"
FLAGS = ["capacity_balanced", "cost_balanced", "departments_balanced", "jobs_balanced"]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from cardhours.cli import app

    root = tmp_path_factory.mktemp("chargeback")
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "simulate",
            "--out",
            str(root),
            "--gpus",
            "16",
            "--days",
            "31",
            "--start",
            "2026-10-01",
            "--seed",
            "11",
            "--step",
            "300",
            "--metrics-format",
            "parquet",
        ],
    )
    assert result.exit_code == 0, result.output
    config = root / "cardhours.toml"
    text = config.read_text().replace("[rates]\n", '[rates]\nidle_capacity = "proportional"\n', 1)
    config.write_text(text)
    result = runner.invoke(app, ["run", "--config", str(config), "--month", MONTH])
    assert result.exit_code == 0, result.output
    return {"root": root, "config": config, "database": root / "cardhours.duckdb", "runner": runner, "app": app}


def test_export_conforms_and_reconciles(sim: dict) -> None:
    folder = sim["root"] / "reports" / MONTH
    assert csv_problems(folder / "chargeback_focus.csv") == []
    assert parquet_problems(folder / "chargeback_focus.parquet") == []
    rec = read(sim["database"], "SELECT * FROM marts.mart_chargeback_reconciliation")
    assert rec.height == 1 and rec.select(FLAGS).row(0) == (True,) * 4
    focus = pl.read_csv(folder / "chargeback_focus.csv", infer_schema=False)
    capacity = 16 * 744
    assert sum(Decimal(q) for q in focus["PricingQuantity"]) == Decimal(capacity)
    assert "unmapped" in set(focus["SubAccountId"])  # the simulator leaves one account unmapped
    jobs = pl.read_csv(folder / "chargeback_jobs.csv", infer_schema=False)
    truth = pl.read_parquet(sim["root"] / "truth.parquet").filter(pl.col("gpu_seconds") > 0)
    assert jobs.select("job_id_raw", "start_time").unique().height == truth.height


def test_a_close_while_a_run_holds_the_warehouse_is_refused(sim: dict) -> None:
    """Two real processes: `cardhours run` rebuilding the month, `cardhours close` of it meanwhile."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
    command = [sys.executable, "-m", "cardhours.cli"]
    config = str(sim["config"])
    run = subprocess.Popen(
        [*command, "run", "--config", config, "--month", MONTH],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        holder = _wait_for_holder(lock_path(sim["database"]), run)
        assert holder["what"] == f"cardhours run --month {MONTH}" and holder["pid"] == run.pid
        close = subprocess.run(
            [*command, "close", "--config", config, "--month", MONTH],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.poll() is None  # the run was still going when the close was refused
    finally:
        out, err = run.communicate(timeout=900)
    assert run.returncode == 0, err
    assert close.returncode == 75, close.stderr
    assert (
        f"not closed: warehouse {sim['database']} is busy: cardhours run --month {MONTH} since {holder['since']}, "
        f"PID {run.pid} on {socket.gethostname()}; wait for it to finish and try again"
    ) in close.stderr
    assert "Traceback" not in close.stderr
    assert read(sim["database"], "SELECT count(*) AS n FROM marts.chargeback_closed_months")["n"][0] == 0


def _wait_for_holder(path: Path, run: subprocess.Popen) -> dict:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and run.poll() is None:
        holder = read_holder(path) if path.is_file() else None
        if holder and str(holder.get("what", "")).startswith("cardhours run"):
            return holder
        time.sleep(0.05)
    raise AssertionError(f"cardhours run never held {path} (exit {run.poll()})")


def test_close_then_fixed_mapping_gives_corrections_in_the_next_month(sim: dict) -> None:
    runner, app, database = sim["runner"], sim["app"], sim["database"]
    closed = runner.invoke(app, ["close", "--config", str(sim["config"]), "--month", MONTH])
    assert closed.exit_code == 0, closed.output
    head = closed.output.split("head hash: ", 1)[1].split()[0]
    check = subprocess.run(
        ["sha256sum", "-c", "MANIFEST.sha256"], cwd=sim["root"] / "reports" / MONTH, capture_output=True, text=True
    )
    assert check.returncode == 0 and check.stdout.count(": OK") == 3
    index = sim["root"] / "reports" / "index.html"  # rewritten by close: the sealed files say so
    assert index.read_text().count("SHA-256 in MANIFEST.sha256") == 3
    frozen = read(database, "SELECT * FROM marts.chargeback_ledger ORDER BY ALL")
    unmapped = frozen.filter(pl.col("SubAccountId") == "unmapped")["BilledCost"].sum()
    config = sim["config"]
    text = config.read_text()
    account = text.split("# Account '", 1)[1].split("'", 1)[0]
    first = text.index("[[org.accounts]]")
    config.write_text(text[:first] + f'[[org.accounts]]\naccount = "{account}"\ndepartment = "nlp"\n\n' + text[first:])
    rerun = runner.invoke(app, ["run", "--config", str(config), "--month", MONTH])
    assert rerun.exit_code == 0, rerun.output
    assert read(database, "SELECT * FROM marts.chargeback_ledger ORDER BY ALL").equals(frozen)
    fixes = pl.read_csv(sim["root"] / "reports" / "2026-11" / "chargeback_focus.csv", infer_schema=False)
    assert 'href="2026-11/chargeback_focus.csv"' in index.read_text()  # the corrections' month, listed by the run
    assert set(fixes["ChargeClass"]) == {"Correction"} and set(fixes["ChargePeriodStart"].str.slice(0, 7)) == {MONTH}
    moved = sum(Decimal(c) for c in fixes.filter(pl.col("SubAccountId") == "unmapped")["BilledCost"])
    assert moved == -unmapped  # usage and idle share move; the rest is rounding of merged rows:
    assert abs(sum(Decimal(c) for c in fixes["BilledCost"])) <= Decimal("0.10")
    assert csv_problems(sim["root"] / "reports" / "2026-11" / "chargeback_focus.csv") == []
    rec = read(database, "SELECT * FROM marts.mart_chargeback_reconciliation")
    assert rec.select(FLAGS).row(0) == (True,) * 4
    verified = runner.invoke(app, ["ledger", "verify", "--config", str(config)])
    assert verified.exit_code == 0 and verified.output.strip().endswith(f"head hash of {MONTH}: {head}")
