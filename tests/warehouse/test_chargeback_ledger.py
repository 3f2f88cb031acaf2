"""Chargeback through Dagster on a temp DuckDB: the assets, `cardhours close`, late data ->
corrections in the next open month, closed rows unchanged, totals that add up, idempotent reruns."""

from __future__ import annotations

import hashlib
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import materialize
from typer.testing import CliRunner

from cardhours.cli import app
from pipelines.assets.chargeback import CHARGEBACK_ASSETS
from pipelines.assets.gate import month_landed
from pipelines.resources import CardhoursResource
from tests.support import chargeback_frames
from tests.support.chargeback_frames import usage
from tests.support.focus_conformance import csv_problems, parquet_problems
from tests.support.landings import land_month
from warehouse import connect, replace_partition

# Months of the past (Dagster has no partition for the current month): AUG closes first.
AUG, SEP, OCT = date(2026, 8, 1), date(2026, 9, 1), date(2026, 10, 1)
CONFIG = """
[warehouse]
path = "wh/cardhours.duckdb"

[reports]
dir = "reports"

[[clusters]]
name = "c1"

[clusters.metrics]
source = "file"
path = "metrics"

[[clusters.inventory.node_groups]]
hosts = "n1"
gpu_model = "H100"
model_name = "NVIDIA H100 80GB HBM3"
gpus_per_node = 4
gpu_memory_mib = 81559

[[clusters.inventory.node_groups]]
hosts = "m1"
gpu_model = "A100"
model_name = "NVIDIA A100-SXM4-80GB"
gpus_per_node = 1
gpu_memory_mib = 81920
mig_layout = ["3g.40gb", "3g.40gb", "1g.10gb"]

[org.divisions.research]
name = "Research"

[org.departments.nlp]
name = "Language Models"
division = "research"

[org.departments.speech]
name = "Speech"
division = "research"

[rates]
currency = "EUR"
idle_capacity = "proportional"

[rates.gpu_hour]
H100 = 2.5
A100 = 1.4

[rates.qos_multipliers]
high = 1.5

[[rates.price_changes]]
gpu_model = "H100"
gpu_hour = 2.8
effective = 2026-08-20T06:30:15Z
"""
LEDGER_TABLES = ["marts.chargeback_ledger", "marts.chargeback_ledger_jobs"]
FACT_TABLES = ["marts.fct_chargeback_focus", "marts.fct_chargeback_jobs", "marts.mart_chargeback_reconciliation"]
cli = CliRunner()


def run(job_id: str, start: datetime, hours: float, **kw) -> dict:
    """A fct_job_usage row of August (unless the month is given)."""
    kw.setdefault("month_start", datetime(2026, 8, 1))
    kw.setdefault("month_end", datetime(2026, 9, 1))
    return chargeback_frames.run(job_id, start, hours, **kw)


def august() -> list[dict]:
    return [
        run("100", datetime(2026, 7, 31, 20), 10, gpus=2),
        run("101", datetime(2026, 8, 20, 1), 11, gpus=4, qos="high"),
        run("102", datetime(2026, 8, 5, 3, 17, 11), 33.3, department="speech"),
        run("103", datetime(2026, 8, 7), 50, gpus=3 / 7, gpu_model="A100 3g.40gb", department="speech"),
        run("105", datetime(2026, 8, 9), 12.5, department="unmapped", division="unmapped", account="legacy"),
    ]


@pytest.fixture
def site(tmp_path: Path) -> Path:
    config = tmp_path / "cardhours.toml"
    config.write_text(CONFIG)
    return config


def _usage(site: Path, month: date, rows: list[dict]) -> None:
    """The month's fct_job_usage rows, every day of it landed (as the daily ingest records it)."""
    frame = usage(*[{**r, "month": month} for r in rows]) if rows else usage()
    with connect(site.parent / "wh" / "cardhours.duckdb") as conn:
        replace_partition(conn, "marts.fct_job_usage", frame, {"month": month})
        land_month(conn, month, {"c1": ["dcgm"]})


def _materialize(site: Path, month: date) -> dict[str, bool]:
    """The chargeback assets after the monthly job's gate (which records the build)."""
    result = materialize([month_landed, *CHARGEBACK_ASSETS], partition_key=month.isoformat(),
                         resources={"cardhours": CardhoursResource(config_path=str(site))})
    assert result.success
    return {c.check_name: c.passed for c in result.get_asset_check_evaluations()}


def _rows(site: Path, sql: str, params: list | None = None) -> pl.DataFrame:
    conn = duckdb.connect(str(site.parent / "wh" / "cardhours.duckdb"), read_only=True)
    try:
        return conn.sql(sql, params=params).pl()
    finally:
        conn.close()


def _digest(site: Path, tables: list[str]) -> dict[str, str]:
    out = {}
    for table in tables:
        frame = _rows(site, f"SELECT * FROM {table}")  # table names from the fixed lists above
        out[table] = hashlib.sha256(frame.sort(frame.columns, nulls_last=True).write_csv().encode()).hexdigest()
    return out


def _close(site: Path, month: str):
    return cli.invoke(app, ["close", "--config", str(site), "--month", month])


def test_close_late_data_corrections_and_reruns(site: Path) -> None:
    _usage(site, AUG, august())
    assert all(_materialize(site, AUG).values())
    reports = site.parent / "reports"
    assert csv_problems(reports / "2026-08" / "chargeback_focus.csv") == []
    assert parquet_problems(reports / "2026-08" / "chargeback_focus.parquet") == []
    first = _digest(site, FACT_TABLES)
    _materialize(site, AUG)  # rerunning the open month gives identical rows
    assert _digest(site, FACT_TABLES) == first
    october_total = _rows(site, "SELECT sum(BilledCost) AS c FROM marts.fct_chargeback_focus")["c"][0]
    assert _rows(site, "SELECT billed_cost FROM marts.mart_chargeback_reconciliation")["billed_cost"].to_list() == [october_total]

    closed = _close(site, "2026-08")
    assert closed.exit_code == 0, closed.output
    assert "month 2026-08 closed" in closed.output and "chargeback_focus.csv" in closed.output
    assert str(site.parent / "wh" / "cardhours.duckdb") in closed.output.replace("\n", "")
    ledger = _digest(site, LEDGER_TABLES)

    # late data: an extra sacct run and the 'legacy' account mapped to speech
    late = [r if r["account"] != "legacy" else {**r, "department": "speech", "division": "research"} for r in august()]
    late.append(run("107", datetime(2026, 8, 19, 23), 2, gpus=2))
    _usage(site, AUG, late)
    assert all(_materialize(site, AUG).values())
    assert _digest(site, LEDGER_TABLES) == ledger
    fixes = _rows(site, "SELECT * FROM marts.fct_chargeback_focus WHERE ChargeClass = 'Correction'")
    assert fixes.height > 0 and set(fixes["billing_month"]) == {SEP} and set(fixes["charge_month"]) == {AUG}
    regular = _rows(site, "SELECT * FROM marts.fct_chargeback_focus WHERE billing_month = ?", [AUG])
    frozen = _rows(site, "SELECT * EXCLUDE (closed_at, ledger_seq, row_hash) FROM marts.chargeback_ledger")
    assert regular.sort(regular.columns, nulls_last=True).equals(frozen.sort(frozen.columns, nulls_last=True))
    added = Decimal("2") * 2 * Decimal("2.5")  # 2 GPUs x 2 h before the price change
    total = _rows(site, "SELECT sum(BilledCost) AS c FROM marts.fct_chargeback_focus WHERE x_ChargeKind = 'usage'")["c"][0]
    assert total == _rows(site, "SELECT sum(cost) AS c FROM marts.fct_chargeback_jobs")["c"][0]
    assert fixes.filter(pl.col("x_ChargeKind") == "usage")["BilledCost"].sum() == added
    assert csv_problems(reports / "2026-09" / "chargeback_focus.csv") == []
    rerun = _digest(site, FACT_TABLES)
    _materialize(site, AUG)  # rerunning the closed month again: the same corrections, nothing twice
    assert _digest(site, FACT_TABLES) == rerun

    # November: built, closed with October's corrections in it
    _usage(site, SEP, [run("200", datetime(2026, 9, 3), 5, month_start=datetime(2026, 9, 1),
                           month_end=datetime(2026, 10, 1))])
    assert all(_materialize(site, SEP).values())
    assert _close(site, "2026-09").exit_code == 0
    booked = _rows(site, "SELECT count(*) AS n FROM marts.chargeback_ledger WHERE billing_month = ? AND ChargeClass = 'Correction'", [SEP])
    assert booked["n"][0] == fixes.height
    ledger = _digest(site, LEDGER_TABLES)

    # more late data for October: a correction of the correction, booked in December
    later = [*late, run("108", datetime(2026, 8, 25), 5, department="speech")]
    _usage(site, AUG, later)
    assert all(_materialize(site, AUG).values())
    assert _digest(site, LEDGER_TABLES) == ledger
    october_fixes = _rows(site, "SELECT * FROM marts.fct_chargeback_focus WHERE billing_month = ?", [OCT])
    assert set(october_fixes["ChargeClass"]) == {"Correction"}
    assert october_fixes.filter(pl.col("x_ChargeKind") == "usage")["BilledCost"].sum() == Decimal("14.00")  # 5 h x 2.8
    all_october = _rows(site, "SELECT sum(PricingQuantity) AS q FROM marts.fct_chargeback_focus WHERE charge_month = ?", [AUG])
    assert all_october["q"][0] == Decimal("3720.000000")  # capacity: (4 + 6/7 + 1/7) GPUs x 744 h
    assert (reports / "2026-10" / "chargeback_focus.csv").is_file()


def test_close_command_exit_codes_and_messages(site: Path) -> None:
    assert _close(site, "2026-13").exit_code == 2
    missing = _close(site, "2026-08")
    assert missing.exit_code == 1 and "no warehouse" in missing.output
    _usage(site, AUG, august())
    not_built = _close(site, "2026-08")
    assert not_built.exit_code == 1 and "run the month first" in not_built.output
    _materialize(site, AUG)
    with connect(site.parent / "wh" / "cardhours.duckdb") as conn:
        conn.execute("UPDATE marts.mart_chargeback_reconciliation SET jobs_balanced = false")
    failing = _close(site, "2026-08")
    assert failing.exit_code == 1 and "does not reconcile" in failing.output and "jobs_balanced" in failing.output
    assert _rows(site, "SELECT count(*) AS n FROM marts.chargeback_ledger")["n"][0] == 0
    _materialize(site, AUG)
    assert _close(site, "2026-08").exit_code == 0
    again = _close(site, "2026-08")
    assert again.exit_code == 0 and "already closed" in again.output and "ledger unchanged" in again.output


def test_migration_tables_match_the_transform_schemas(tmp_path: Path) -> None:
    from transforms import fct_chargeback_focus, fct_chargeback_jobs, mart_chargeback_reconciliation

    with connect(tmp_path / "w.duckdb") as conn:
        def columns(table: str) -> list[str]:
            schema, name = table.split(".")
            return [r[0] for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
                "ORDER BY ordinal_position", [schema, name]).fetchall()]

        assert columns("marts.fct_chargeback_focus") == list(fct_chargeback_focus.SCHEMA)
        frozen = ["closed_at", "ledger_seq", "row_hash"]  # the close's time, the row's place and hash in the chain
        assert columns("marts.chargeback_ledger") == [*fct_chargeback_focus.SCHEMA, *frozen]
        assert columns("marts.fct_chargeback_jobs") == list(fct_chargeback_jobs.SCHEMA)
        assert columns("marts.chargeback_ledger_jobs") == [*fct_chargeback_jobs.SCHEMA, *frozen]
        assert columns("marts.mart_chargeback_reconciliation") == list(mart_chargeback_reconciliation.SCHEMA)
