from datetime import date, datetime

import polars as pl
import pytest

from cardhours.schemas import QUARANTINE_SCHEMA, RAW_SACCT_SCHEMA, SACCT_FIELDS
from cardhours.sources.sacct import (
    SacctError,
    overlapping_rows,
    parse_sacct_text,
    read_sacct_file,
    run_sacct,
    sacct_arguments,
)

HEADER = "|".join(SACCT_FIELDS)


def _line(job_id: str, start: str, end: str, submit: str = "2026-10-01T00:00:00") -> str:
    values = {name: "" for name in SACCT_FIELDS}
    values.update(JobID=job_id, JobIDRaw=job_id, State="COMPLETED", Submit=submit, Start=start, End=end,
                  AllocTRES="cpu=8,gres/gpu=1,node=1", Cluster="c1")
    return "|".join(values[name] for name in SACCT_FIELDS)


def test_parse_keeps_every_field_and_line_numbers() -> None:
    text = "\n".join([HEADER, _line("11", "2026-10-01T01:00:00", "2026-10-01T02:00:00"), _line("12", "Unknown", "Unknown")])
    raw, rejects = parse_sacct_text(text, source="s.txt", cluster="c1", day=date(2026, 10, 1), has_header=True)
    assert raw.schema == pl.Schema(RAW_SACCT_SCHEMA)
    assert raw["job_id"].to_list() == ["11", "12"]
    assert raw["line_no"].to_list() == [2, 3]
    assert raw["alloc_tres"][0] == "cpu=8,gres/gpu=1,node=1"
    assert rejects.height == 0


def test_wrong_field_count_is_quarantined_with_location() -> None:
    text = "\n".join([HEADER, "13|13|broken", _line("14", "2026-10-01T01:00:00", "Unknown")])
    raw, rejects = parse_sacct_text(text, source="s.txt", cluster="c1", day=date(2026, 10, 1), has_header=True)
    assert raw["job_id"].to_list() == ["14"]
    assert rejects.schema == pl.Schema(QUARANTINE_SCHEMA)
    assert rejects["location"].to_list() == ["s.txt:2"]
    assert "3 fields" in rejects["reason"][0]


def test_header_mismatch_names_the_file() -> None:
    with pytest.raises(SacctError, match="s.txt:1: header"):
        parse_sacct_text("JobID|State\n1|RUNNING", source="s.txt", cluster="c", day=date(2026, 10, 1), has_header=True)


def test_overlap_selects_what_sacct_would_report() -> None:
    lines = [
        HEADER,
        _line("1", "2026-09-30T10:00:00", "2026-10-01T03:00:00"),  # crosses into the day
        _line("2", "2026-09-29T10:00:00", "2026-09-30T03:00:00"),  # ended before
        _line("3", "2026-10-02T10:00:00", "2026-10-02T11:00:00"),  # starts after
        _line("4", "2026-09-20T10:00:00", "Unknown"),  # still running
        _line("5", "Unknown", "Unknown", submit="2026-10-01T05:00:00"),  # pending, submitted in the day
        _line("6", "garbage", "Unknown", submit="garbage"),  # kept for staging to quarantine
    ]
    raw, _ = parse_sacct_text("\n".join(lines), source="s", cluster="c1", day=date(2026, 10, 1), has_header=True)
    kept = overlapping_rows(raw, datetime(2026, 10, 1), datetime(2026, 10, 2))
    assert kept["job_id"].to_list() == ["1", "4", "5", "6"]


def test_read_sacct_file_missing(tmp_path) -> None:
    with pytest.raises(SacctError, match="not found"):
        read_sacct_file(tmp_path / "nope.txt", cluster="c", day=date(2026, 10, 1),
                        start=datetime(2026, 10, 1), end=datetime(2026, 10, 2))


def test_command_mode_runs_sacct_with_utc_and_fixed_format(tmp_path) -> None:
    script = tmp_path / "fake-sacct"
    script.write_text('#!/bin/sh\necho "TZ=$TZ ARGS=$*"\n')
    script.chmod(0o755)
    text = run_sacct(str(script), datetime(2026, 10, 1), datetime(2026, 10, 2), "alpha")
    assert text.startswith("TZ=UTC ARGS=--parsable2 --noheader --allusers --duplicates --format=JobID,JobIDRaw")
    assert "-S 2026-10-01T00:00:00 -E 2026-10-02T00:00:00 -M alpha" in text
    assert sacct_arguments(datetime(2026, 10, 1), datetime(2026, 10, 2), "a")[-2:] == ["-M", "a"]


def test_command_mode_failure_is_reported(tmp_path) -> None:
    script = tmp_path / "bad-sacct"
    script.write_text('#!/bin/sh\necho "slurmdbd down" >&2\nexit 1\n')
    script.chmod(0o755)
    with pytest.raises(SacctError, match="exited with 1: slurmdbd down"):
        run_sacct(str(script), datetime(2026, 10, 1), datetime(2026, 10, 2), "alpha")
    with pytest.raises(SacctError, match="not found"):
        run_sacct(str(tmp_path / "missing"), datetime(2026, 10, 1), datetime(2026, 10, 2), "alpha")
