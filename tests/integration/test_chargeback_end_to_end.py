"""Chargeback on a simulated month through `cardhours run`: FOCUS conformance of the files,
reconciliation, `cardhours close`, a fixed account mapping -> rerun -> corrections."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from tests.support.focus_conformance import csv_problems, parquet_problems

pytestmark = [pytest.mark.slow]

MONTH = "2026-10"
FLAGS = ["capacity_balanced", "cost_balanced", "departments_balanced", "jobs_balanced"]


def _read(database: Path, sql: str) -> pl.DataFrame:
    conn = duckdb.connect(str(database), read_only=True)
    try:
        return conn.sql(sql).pl()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from cardhours.cli import app

    root = tmp_path_factory.mktemp("chargeback")
    runner = CliRunner()
    result = runner.invoke(app, ["simulate", "--out", str(root), "--gpus", "16", "--days", "31", "--start",
                                 "2026-10-01", "--seed", "11", "--step", "300", "--metrics-format", "parquet"])
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
    rec = _read(sim["database"], "SELECT * FROM marts.mart_chargeback_reconciliation")
    assert rec.height == 1 and rec.select(FLAGS).row(0) == (True,) * 4
    focus = pl.read_csv(folder / "chargeback_focus.csv", infer_schema=False)
    capacity = 16 * 744
    assert sum(Decimal(q) for q in focus["PricingQuantity"]) == Decimal(capacity)
    assert "unmapped" in set(focus["SubAccountId"])  # the simulator leaves one account unmapped
    jobs = pl.read_csv(folder / "chargeback_jobs.csv", infer_schema=False)
    truth = pl.read_parquet(sim["root"] / "truth.parquet").filter(pl.col("gpu_seconds") > 0)
    assert jobs.select("job_id_raw", "start_time").unique().height == truth.height


def test_close_then_fixed_mapping_gives_corrections_in_the_next_month(sim: dict) -> None:
    runner, app, database = sim["runner"], sim["app"], sim["database"]
    closed = runner.invoke(app, ["close", "--config", str(sim["config"]), "--month", MONTH])
    assert closed.exit_code == 0, closed.output
    frozen = _read(database, "SELECT * FROM marts.chargeback_ledger ORDER BY ALL")
    unmapped = frozen.filter(pl.col("SubAccountId") == "unmapped")["BilledCost"].sum()
    config = sim["config"]
    text = config.read_text()
    account = text.split("# Account '", 1)[1].split("'", 1)[0]
    first = text.index("[[org.accounts]]")
    config.write_text(text[:first] + f'[[org.accounts]]\naccount = "{account}"\ndepartment = "nlp"\n\n' + text[first:])
    rerun = runner.invoke(app, ["run", "--config", str(config), "--month", MONTH])
    assert rerun.exit_code == 0, rerun.output
    assert _read(database, "SELECT * FROM marts.chargeback_ledger ORDER BY ALL").equals(frozen)
    fixes = pl.read_csv(sim["root"] / "reports" / "2026-11" / "chargeback_focus.csv", infer_schema=False)
    assert set(fixes["ChargeClass"]) == {"Correction"} and set(fixes["ChargePeriodStart"].str.slice(0, 7)) == {MONTH}
    moved = sum(Decimal(c) for c in fixes.filter(pl.col("SubAccountId") == "unmapped")["BilledCost"])
    assert moved == -unmapped  # usage and idle share move; the rest is rounding of merged rows:
    assert abs(sum(Decimal(c) for c in fixes["BilledCost"])) <= Decimal("0.10")
    assert csv_problems(sim["root"] / "reports" / "2026-11" / "chargeback_focus.csv") == []
    rec = _read(database, "SELECT * FROM marts.mart_chargeback_reconciliation")
    assert rec.select(FLAGS).row(0) == (True,) * 4
