"""A month whose sacct file carries the dirt real clusters produce, built end to end through
`cardhours run`: a job named with `|`, a job name that is not UTF-8, a runaway CANCELLED job
with End `Unknown`, and a job that ends before it starts. Each is billed exactly as the record
policy says (transforms.helpers.slurm_policy) and the month still builds."""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from cardhours.cli import app
from contracts.schemas import SACCT_FIELDS

pytestmark = [pytest.mark.slow]

MONTH = "2026-10"
NAMES = list(SACCT_FIELDS)
TIME = "%Y-%m-%dT%H:%M:%S"


def _fields(line: bytes) -> dict[str, bytes]:
    return dict(zip(NAMES, line.split(b"|"), strict=True))


def _line(fields: dict[str, bytes]) -> bytes:
    return b"|".join(fields[name] for name in NAMES)


def _pick(lines: list[bytes], taken: set[bytes], min_hours: float) -> int:
    """An allocation line of a COMPLETED whole-GPU job inside October running at least min_hours."""
    for index, line in enumerate(lines):
        fields = _fields(line)
        if b"." in fields["JobID"] or fields["JobIDRaw"] in taken or fields["State"] != b"COMPLETED":
            continue
        start, end = (datetime.strptime(fields[k].decode(), TIME) for k in ("Start", "End"))
        if (
            start.month == end.month == 10
            and (end - start).total_seconds() >= min_hours * 3600
            and b"g.1" not in fields["AllocTRES"]
            and b"gres/gpu=" in fields["AllocTRES"]
        ):
            taken.add(fields["JobIDRaw"])
            return index
    raise AssertionError("no suitable job in the simulated sacct file")


def _gpus(fields: dict[bytes]) -> int:
    return next(int(item.split(b"=")[1]) for item in fields["AllocTRES"].split(b",") if item.startswith(b"gres/gpu="))


@pytest.fixture(scope="module")
def dirty(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("dirty")
    runner = CliRunner()
    sim = runner.invoke(
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
            "5",
            "--step",
            "300",
            "--metrics-format",
            "parquet",
        ],
    )
    assert sim.exit_code == 0, sim.output
    path = root / "sacct.txt"
    header, *lines = path.read_bytes().rstrip(b"\n").split(b"\n")
    taken: set[bytes] = set()
    chosen = {
        kind: _pick(lines, taken, hours)
        for kind, hours in (("pipe", 1), ("latin1", 1), ("runaway", 3), ("backwards", 1))
    }
    original = {kind: _fields(lines[index]) for kind, index in chosen.items()}
    edited = {kind: dict(fields) for kind, fields in original.items()}
    edited["pipe"]["JobName"] = b"a|b||c"
    edited["latin1"]["JobName"] = b"caf\xe9-train"
    edited["runaway"].update(State=b"CANCELLED by 1000", End=b"Unknown", Timelimit=b"02:00:00")
    edited["backwards"].update(Start=original["backwards"]["End"], End=original["backwards"]["Start"])
    for kind, index in chosen.items():
        lines[index] = _line(edited[kind])
    path.write_bytes(b"\n".join([header, *lines]) + b"\n")
    result = runner.invoke(app, ["run", "--config", str(root / "cardhours.toml"), "--month", MONTH])
    assert result.exit_code == 0, result.output
    conn = duckdb.connect(str(next(root.glob("*.duckdb"))), read_only=True)
    try:
        usage = conn.sql("SELECT * FROM marts.fct_chargeback_jobs").pl()
        quarantine = conn.sql("SELECT * FROM raw.quarantine WHERE source IN ('sacct', 'stg_slurm__jobs')").pl()
        staged = conn.sql("SELECT * FROM staging.stg_slurm__jobs").pl()
    finally:
        conn.close()
    review = (root / "reports" / MONTH / "review.html").read_text()
    return {
        "original": original,
        "usage": usage,
        "quarantine": quarantine,
        "staged": staged,
        "review": review,
        "output": result.output,
    }


def _billed(dirty: dict, kind: str) -> pl.DataFrame:
    """The regular charge lines of the run (a requeued job id has other runs, told apart by start)."""
    fields = dirty["original"][kind]
    start = datetime.strptime(fields["Start"].decode(), TIME)
    return dirty["usage"].filter(
        (pl.col("job_id_raw") == fields["JobIDRaw"].decode())
        & (pl.col("start_time") == start)
        & pl.col("charge_class").is_null()
    )


def _hours(fields: dict[str, bytes]) -> float:
    start, end = (datetime.strptime(fields[k].decode(), TIME) for k in ("Start", "End"))
    return _gpus(fields) * (end - start).total_seconds() / 3600


def test_a_job_named_with_pipes_is_billed_its_gpu_hours(dirty: dict) -> None:
    billed = _billed(dirty, "pipe")
    assert billed["gpu_hours"].cast(pl.Float64).sum() == pytest.approx(_hours(dirty["original"]["pipe"]), abs=1e-6)
    fields = dirty["original"]["pipe"]
    run = (pl.col("job_id_raw") == fields["JobIDRaw"].decode()) & (
        pl.col("start_time") == datetime.strptime(fields["Start"].decode(), TIME)
    )
    assert dirty["staged"].filter(run)["job_name"].to_list() == ["a|b||c"]


def test_a_job_name_that_is_not_utf8_is_billed(dirty: dict) -> None:
    billed = _billed(dirty, "latin1")
    assert billed["gpu_hours"].cast(pl.Float64).sum() == pytest.approx(_hours(dirty["original"]["latin1"]), abs=1e-6)


def test_a_runaway_cancelled_job_is_billed_no_more_than_its_time_limit_and_shown(dirty: dict) -> None:
    fields = dirty["original"]["runaway"]
    billed = _billed(dirty, "runaway")
    assert billed["gpu_hours"].cast(pl.Float64).sum() == pytest.approx(_gpus(fields) * 2.0, abs=1e-6)  # 02:00:00
    staged = dirty["staged"].filter(pl.col("job_id_raw") == fields["JobIDRaw"].decode())
    assert staged["end_inferred_from"].to_list() == ["time_limit"]
    assert "runaway" in dirty["review"] and fields["JobID"].decode() in dirty["review"]
    assert "its time limit" in dirty["review"]


def test_a_backwards_job_is_quarantined_and_the_month_still_builds(dirty: dict) -> None:
    fields = dirty["original"]["backwards"]
    job = fields["JobIDRaw"].decode()
    assert (
        dirty["usage"]
        .filter(
            (pl.col("job_id_raw") == job) & (pl.col("start_time") == datetime.strptime(fields["Start"].decode(), TIME))
        )
        .is_empty()
    )
    reasons = dirty["quarantine"].filter(pl.col("reason").str.starts_with("END_BEFORE_START"))
    assert reasons["reason"].unique().to_list() == [
        f"END_BEFORE_START: End {fields['Start'].decode()} is before Start {fields['End'].decode()}"
    ]
    assert all("sacct.txt:" in location for location in reasons["location"])
    assert "END_BEFORE_START" in dirty["output"] and "Data quality" in dirty["review"]
