"""The closed ledger's hash chain and the export manifest: `cardhours ledger verify` names the
first changed, deleted or out-of-place row; `sha256sum -c` checks a closed month's files; months
closed before the chain are sealed by the next close."""

from __future__ import annotations

import re
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import Result

from cardhours.cli import app
from tests.support.chargeback_site import AUG, SEP, august, build, cli, close, database, make_site, put_usage, rows, run
from warehouse import connect, read_frame
from warehouse.books.ledger_chain import GENESIS, JOBS_TABLE, canonical, link

HEX = "[0-9a-f]{64}"


@pytest.fixture
def closed(tmp_path: Path) -> tuple[Path, str]:
    """A site with August closed; (config, the head hash close printed)."""
    site = make_site(tmp_path)
    put_usage(site, AUG, august())
    build(site, AUG)
    result = close(site, "2026-08")
    assert result.exit_code == 0, result.output
    head = re.search(f"head hash: ({HEX})", result.output)
    assert head is not None
    return site, head.group(1)


def _verify(site: Path) -> Result:
    return cli.invoke(app, ["ledger", "verify", "--config", str(site)])


def _sql(site: Path, sql: str, params: list | None = None) -> None:
    with connect(database(site)) as conn:
        conn.execute(sql, params or [])


def test_verify_passes_then_names_an_updated_row(closed: tuple[Path, str]) -> None:
    site, head = closed
    ok = _verify(site)
    assert (
        ok.exit_code == 0
        and ok.output.strip() == f"ledger ok: 1 closed month(s), 24 rows; head hash of 2026-08: {head}"
    )
    seq = rows(
        site,
        "SELECT ledger_seq AS s, row_hash AS h FROM marts.chargeback_ledger_jobs WHERE job_id_raw = '101' "
        "ORDER BY ledger_seq",
    )
    assert seq["s"].to_list() == [20, 21]  # 18 FOCUS rows first, then the job lines in export order
    _sql(site, "UPDATE marts.chargeback_ledger_jobs SET cost = cost + 1 WHERE ledger_seq = 20")
    failed = _verify(site)
    assert failed.exit_code == 1
    assert re.fullmatch(
        "ledger verify FAILED: marts.chargeback_ledger_jobs, billing month 2026-08, row \\(cluster 'c1', job_id_raw "
        "'101', start_time 2026-08-20 01:00:00, charge_period_start 2026-08-01 00:00:00, sku_price_id "
        f"'H100\\|gpu\\|high\\|2026-08-01T00:00:00Z'\\), ledger_seq 20: "
        f"expected hash ({HEX}) \\(from its content now\\), "
        f"found {seq['h'][0]} \\(recorded at the close\\): the row was changed after the close \\(or the row before it "
        "was\\)",
        " ".join(failed.output.split()),
    )
    _sql(site, "UPDATE marts.chargeback_ledger_jobs SET cost = cost - 1 WHERE ledger_seq = 20")
    assert _verify(site).exit_code == 0  # the hash is of the content: put back, it verifies again


def test_a_rehashed_row_breaks_the_next_link(closed: tuple[Path, str]) -> None:
    site, _ = closed
    with connect(database(site)) as conn:  # someone who knows the scheme rewrites row 20 and its hash
        conn.execute("UPDATE marts.chargeback_ledger_jobs SET cost = cost + 1 WHERE ledger_seq = 20")
        before = read_frame(conn, "SELECT row_hash FROM marts.chargeback_ledger_jobs WHERE ledger_seq = 19")[
            "row_hash"
        ][0]
        row = read_frame(conn, "SELECT * FROM marts.chargeback_ledger_jobs WHERE ledger_seq = 20")
        forged = link(before, JOBS_TABLE, canonical(row, JOBS_TABLE)[0])
        conn.execute("UPDATE marts.chargeback_ledger_jobs SET row_hash = ? WHERE ledger_seq = 20", [forged])
    failed = " ".join(_verify(site).output.split())
    assert "marts.chargeback_ledger_jobs, billing month 2026-08, row (cluster 'c1', job_id_raw '101'" in failed
    assert "ledger_seq 21: expected hash" in failed and GENESIS not in failed


def test_verify_names_a_deleted_row_and_its_table(closed: tuple[Path, str]) -> None:
    site, _ = closed
    _sql(site, "DELETE FROM marts.chargeback_ledger WHERE ledger_seq = 18")
    assert " ".join(_verify(site).output.split()) == (
        "ledger verify FAILED: marts.chargeback_ledger, billing month 2026-08: the row at ledger_seq 18 is missing "
        "(deleted after the close?); expected ledger_seq 18, found 19 next (marts.chargeback_ledger_jobs, billing "
        "month 2026-08, row (cluster 'c1', job_id_raw '100', start_time 2026-07-31 20:00:00, charge_period_start "
        "2026-08-01 00:00:00, sku_price_id 'H100|gpu|normal|2026-08-01T00:00:00Z'), ledger_seq 19)"
    )


def test_a_changed_month_record_fails(closed: tuple[Path, str]) -> None:
    site, _ = closed
    _sql(site, "UPDATE marts.chargeback_closed_months SET billed_cost = billed_cost - 100")
    failed = " ".join(_verify(site).output.split())
    assert failed.startswith(
        "ledger verify FAILED: marts.chargeback_closed_months, billing month 2026-08, the month "
        "record, ledger_seq 25: expected hash "
    )


def test_the_manifest_checks_with_sha256sum_and_survives_a_rerun(closed: tuple[Path, str]) -> None:
    site, _ = closed
    folder = site.parent / "reports" / "2026-08"
    check = subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=folder, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    assert check.stdout == "chargeback_focus.csv: OK\nchargeback_focus.parquet: OK\nchargeback_jobs.csv: OK\n"
    written = (folder / "chargeback_focus.csv").stat().st_mtime_ns
    build(site, AUG)  # a rerun of the closed month: corrections, if any, go to September; August's files stay
    assert (folder / "chargeback_focus.csv").stat().st_mtime_ns == written
    with open(folder / "chargeback_jobs.csv", "a", encoding="utf-8") as handle:
        handle.write("\n")
    tampered = subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=folder, capture_output=True, text=True)
    assert tampered.returncode == 1 and "chargeback_jobs.csv: FAILED" in tampered.stdout


def test_months_closed_before_the_chain_are_sealed_by_the_next_close(closed: tuple[Path, str]) -> None:
    site, head = closed
    _sql(site, "UPDATE marts.chargeback_ledger SET ledger_seq = NULL, row_hash = NULL")
    _sql(site, "UPDATE marts.chargeback_ledger_jobs SET ledger_seq = NULL, row_hash = NULL")
    _sql(site, "UPDATE marts.chargeback_closed_months SET ledger_seq = NULL, head_hash = NULL")
    legacy = _verify(site)
    assert legacy.exit_code == 1 and " ".join(legacy.output.split()) == (
        "ledger verify FAILED: billing month(s) 2026-08 were closed before the ledger was hash-chained and are not "
        "sealed yet: the next cardhours close seals them"
    )
    put_usage(
        site,
        SEP,
        [run("200", datetime(2026, 9, 3), 5, month_start=datetime(2026, 9, 1), month_end=datetime(2026, 10, 1))],
    )
    build(site, SEP)
    result = close(site, "2026-09")
    assert result.exit_code == 0, result.output
    assert "sealed:    2026-08 (closed before the hash chain)" in result.output
    assert rows(site, "SELECT ledger_seq AS s, head_hash AS h FROM marts.chargeback_closed_months ORDER BY 1").rows()[
        0
    ] == (25, head)  # sealed as it had been chained: same order, same hashes
    ok = _verify(site)
    assert ok.exit_code == 0 and ok.output.startswith("ledger ok: 2 closed month(s), ")


def test_files_that_could_not_be_written_are_written_by_the_next_close(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    put_usage(site, AUG, august())
    build(site, AUG)
    folder = tmp_path / "reports" / "2026-08"
    (folder / "MANIFEST.sha256").mkdir()  # something in the way of the manifest
    failed = close(site, "2026-08")
    assert failed.exit_code == 1
    assert " ".join(failed.output.split()).startswith(
        "closed, but its files are not written: 2026-08 is closed in the ledger; writing its export files, "
        f"MANIFEST.sha256 under {folder} or index.html failed ("
    )
    assert rows(site, "SELECT count(*) AS n FROM marts.chargeback_closed_months")["n"][0] == 1
    (folder / "MANIFEST.sha256").rmdir()
    again = close(site, "2026-08")
    assert again.exit_code == 0 and "was already closed at " in again.output
    check = subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=folder, capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout.count(": OK") == 3
