from datetime import date, datetime

import polars as pl
import pytest

from contracts.schemas import QUARANTINE_SCHEMA, RAW_SACCT_SCHEMA, SACCT_FIELDS
from sources.sacct import (
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
    values.update(
        JobID=job_id,
        JobIDRaw=job_id,
        State="COMPLETED",
        Submit=submit,
        Start=start,
        End=end,
        AllocTRES="cpu=8,gres/gpu=1,node=1",
        Cluster="c1",
    )
    return "|".join(values[name] for name in SACCT_FIELDS)


def test_parse_keeps_every_field_and_line_numbers() -> None:
    text = "\n".join(
        [HEADER, _line("11", "2026-10-01T01:00:00", "2026-10-01T02:00:00"), _line("12", "Unknown", "Unknown")]
    )
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


def test_header_missing_columns_are_named_with_the_file() -> None:
    header = "|".join(name for name in SACCT_FIELDS if name not in ("Start", "AllocTRES"))
    with pytest.raises(SacctError, match=r"s.txt:1: required column\(s\) Start, AllocTRES missing from the header"):
        parse_sacct_text(header + "\n", source="s.txt", cluster="c", day=date(2026, 10, 1), has_header=True)


def test_header_columns_in_any_order_extra_columns_ignored() -> None:
    names = ["Comment", *reversed(list(SACCT_FIELDS)), "WCKey"]
    values = {name: "" for name in names}
    values.update(
        JobID="21",
        JobIDRaw="21",
        JobName="x|y",
        State="COMPLETED",
        Comment="a|b",
        WCKey="w",
        Start="2026-10-01T01:00:00",
        End="2026-10-01T02:00:00",
        Cluster="c1",
    )
    line = "|".join(values[name] for name in names)
    raw, rejects = parse_sacct_text(
        "|".join(names) + "\n" + line, source="s.txt", cluster="c1", day=date(2026, 10, 1), has_header=True
    )
    # Comment may hold a '|' as well as JobName: surplus fields cannot be placed, so the line is
    # quarantined, naming why (never split into shifted fields).
    assert raw.height == 0
    assert rejects["reason"].to_list() == [
        "line has 24 fields, expected 22; a '|' cannot be placed while the file has other columns (Comment, WCKey)"
    ]
    values.update(Comment="plain", JobName="xy")
    line = "|".join(values[name] for name in names)
    raw, rejects = parse_sacct_text(
        "|".join(names) + "\n" + line, source="s.txt", cluster="c1", day=date(2026, 10, 1), has_header=True
    )
    assert rejects.height == 0
    assert raw.select("job_id", "job_name", "start_time", "slurm_cluster").row(0) == (
        "21",
        "xy",
        "2026-10-01T01:00:00",
        "c1",
    )
    assert raw["read_note"].to_list() == [None]


def test_job_name_with_pipes_is_rebuilt_from_both_ends() -> None:
    values = {name: "" for name in SACCT_FIELDS}
    values.update(JobID="31", JobIDRaw="31", JobName="a|b||c", State="COMPLETED", AllocTRES="gres/gpu=2", Cluster="c1")
    line = "|".join(values[name] for name in SACCT_FIELDS)
    raw, rejects = parse_sacct_text(line + "\n", source="sacct", cluster="c1", day=date(2026, 10, 1), has_header=False)
    assert rejects.height == 0
    assert raw.select("job_id", "job_name", "alloc_tres", "slurm_cluster").row(0) == (
        "31",
        "a|b||c",
        "gres/gpu=2",
        "c1",
    )
    assert raw["read_note"][0] == "JobName holds 3 '|'; fields counted from both ends"


def test_bytes_that_are_not_utf8_are_replaced_and_kept_as_evidence() -> None:
    line = _line("41", "2026-10-01T01:00:00", "2026-10-01T02:00:00").encode().replace(b"41|41||", b"41|41|caf\xe9|", 1)
    raw, rejects = parse_sacct_text(line + b"\n", source="sacct", cluster="c1", day=date(2026, 10, 1), has_header=False)
    assert rejects.height == 0
    assert raw["job_name"].to_list() == ["caf\ufffd"]
    assert raw["raw_line"].to_list() == [line]
    assert raw["read_note"][0] == "not UTF-8 (byte 10: e9 7c 7c 7c); undecodable bytes replaced with U+FFFD"


def test_short_line_that_is_not_utf8_keeps_its_bytes_in_quarantine() -> None:
    raw, rejects = parse_sacct_text(
        b"13|13|\xff\n", source="f.txt", cluster="c1", day=date(2026, 10, 1), has_header=False
    )
    assert raw.height == 0
    assert rejects.row(0, named=True)["location"] == "f.txt:1"
    assert '"raw_base64": "MTN8MTN8/w=="' in rejects["payload"][0]


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
        read_sacct_file(
            tmp_path / "nope.txt",
            cluster="c",
            day=date(2026, 10, 1),
            start=datetime(2026, 10, 1),
            end=datetime(2026, 10, 2),
        )


def test_command_mode_runs_sacct_with_utc_and_fixed_format(tmp_path) -> None:
    script = tmp_path / "fake-sacct"
    script.write_text('#!/bin/sh\necho "TZ=$TZ ARGS=$*"\n')
    script.chmod(0o755)
    text = run_sacct(str(script), datetime(2026, 10, 1), datetime(2026, 10, 2), "alpha").decode()
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
