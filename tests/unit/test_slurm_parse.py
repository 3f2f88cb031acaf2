"""Parsing tables for sacct fields (transforms.helpers.slurm_parse)."""

from __future__ import annotations

from datetime import datetime

import polars as pl
import pytest

from transforms.helpers.slurm_parse import (
    GpuAlloc,
    SlurmParseError,
    job_id_parts,
    map_distinct,
    mig_profile,
    parent_job_id_raw,
    parse_gpu_tres,
    parse_hosts,
    parse_timelimit,
    slurm_time,
    slurm_time_error,
    state_detail,
    state_name,
)


@pytest.mark.parametrize(
    ("job_id", "expected"),
    [
        ("123", {"base": "123", "array_task": None, "het_offset": None, "step": None}),
        ("123_4", {"base": "123", "array_task": "4", "het_offset": None, "step": None}),
        ("123_[5-1024]", {"base": "123", "array_task": "[5-1024]", "het_offset": None, "step": None}),
        ("123_[1,3,5-7%2]", {"base": "123", "array_task": "[1,3,5-7%2]", "het_offset": None, "step": None}),
        ("123+1", {"base": "123", "array_task": None, "het_offset": "1", "step": None}),
        ("123.batch", {"base": "123", "array_task": None, "het_offset": None, "step": "batch"}),
        ("123.extern", {"base": "123", "array_task": None, "het_offset": None, "step": "extern"}),
        ("123_4.0", {"base": "123", "array_task": "4", "het_offset": None, "step": "0"}),
        ("123+0.batch", {"base": "123", "array_task": None, "het_offset": "0", "step": "batch"}),
    ],
)
def test_job_id_parts(job_id: str, expected: dict) -> None:
    parts = pl.DataFrame({"job_id": [job_id]}).select(job_id_parts("job_id")).item()
    assert parts == expected


@pytest.mark.parametrize("job_id", ["abc", "123_", "123_[]", "12.3.4", "+1", ""])
def test_job_id_parts_rejects_garbage(job_id: str) -> None:
    parts = pl.DataFrame({"job_id": [job_id]}).select(job_id_parts("job_id")).item()
    assert parts["base"] is None


def test_parent_job_id_raw_strips_the_step() -> None:
    raw = pl.DataFrame({"job_id_raw": ["130.batch", "130", "131.0"]})
    assert raw.select(parent_job_id_raw()).to_series().to_list() == ["130", "130", "131"]


@pytest.mark.parametrize(
    ("text", "state", "detail"),
    [
        ("CANCELLED by 0", "CANCELLED", "by 0"),
        ("CANCELLED by 51234", "CANCELLED", "by 51234"),
        ("COMPLETED", "COMPLETED", None),
        ("CANCELLED+", "CANCELLED", None),
        (" running ", "RUNNING", None),
        ("OUT_OF_MEMORY", "OUT_OF_MEMORY", None),
    ],
)
def test_state_normalization(text: str, state: str, detail: str | None) -> None:
    row = pl.DataFrame({"state": [text]}).select(state_name(), state_detail().alias("detail")).row(0)
    assert row == (state, detail)


@pytest.mark.parametrize(
    ("text", "value", "is_error"),
    [
        ("2024-03-01T01:02:03", datetime(2024, 3, 1, 1, 2, 3), False),
        ("Unknown", None, False),
        ("None", None, False),
        ("", None, False),
        (None, None, False),
        ("2024-13-01T00:00:00", None, True),
        ("2024-03-01 01:02:03", None, True),
        ("yesterday", None, True),
    ],
)
def test_slurm_time(text: str | None, value: datetime | None, is_error: bool) -> None:
    frame = pl.DataFrame({"start_time": [text]}, schema={"start_time": pl.String})
    parsed, error = frame.select(slurm_time("start_time"), slurm_time_error("start_time").alias("e")).row(0)
    assert parsed == value
    assert (error is not None) == is_error
    if is_error:
        assert error == f"start_time: cannot parse time '{text}'"


MIG_3G = 3 / 7


@pytest.mark.parametrize(
    ("tres", "expected"),
    [
        # untyped and typed both present: the untyped count, never their sum
        ("billing=8,cpu=8,gres/gpu:h100=8,gres/gpu=8,mem=64G,node=1", GpuAlloc(8.0, 8, "h100", False)),
        ("cpu=8,gres/gpu=4,mem=1G", GpuAlloc(4.0, 4, None, False)),
        # typed only: the typed count
        ("cpu=8,gres/gpu:a100=2", GpuAlloc(2.0, 2, "a100", False)),
        ("gres/gpu:a100=1,gres/gpu:v100=2", GpuAlloc(3.0, 3, "a100,v100", False)),
        # MIG: typed entry wins over the untyped count, as slices / 7
        ("cpu=4,gres/gpu:3g.40gb=1,gres/gpu=1", GpuAlloc(MIG_3G, 1, "3g.40gb", True)),
        ("gres/gpu:a100_3g.20gb=1", GpuAlloc(MIG_3G, 1, "3g.20gb", True)),
        ("gres/gpu:nvidia_a100_3g.40gb=2,gres/gpu=2", GpuAlloc(2 * MIG_3G, 2, "3g.40gb", True)),
        ("gres/gpu:1g.10gb=1,gres/gpu=1", GpuAlloc(1 / 7, 1, "1g.10gb", True)),
        ("gres/gpu:7g.80gb=1,gres/gpu=1", GpuAlloc(1.0, 1, "7g.80gb", True)),
        # no GPUs; other gres/gpu* TRES are not GPUs
        ("cpu=1,mem=1G,node=1", GpuAlloc(0.0, 0, None, False)),
        ("", GpuAlloc(0.0, 0, None, False)),
        (None, GpuAlloc(0.0, 0, None, False)),
        ("gres/gpumem=80G,gres/gpu=1", GpuAlloc(1.0, 1, None, False)),
    ],
)
def test_parse_gpu_tres(tres: str | None, expected: GpuAlloc) -> None:
    got = parse_gpu_tres(tres)
    assert got.gpus == pytest.approx(expected.gpus)
    assert got._replace(gpus=expected.gpus) == expected


def test_mig_weight_table_overrides_slice_fraction() -> None:
    assert parse_gpu_tres("gres/gpu:3g.40gb=2,gres/gpu=2", {"3g.40gb": 0.5}).gpus == 1.0
    assert parse_gpu_tres("gres/gpu:nvidia_a100_3g.40gb=1", {"nvidia_a100_3g.40gb": 0.25}).gpus == 0.25
    # profiles missing from the table keep slices / 7
    assert parse_gpu_tres("gres/gpu:2g.20gb=1", {"3g.40gb": 0.5}).gpus == pytest.approx(2 / 7)


@pytest.mark.parametrize("tres", ["gres/gpu=abc", "gres/gpu:h100=", "cpu=1,gres/gpu", "gres/gpu=-1"])
def test_parse_gpu_tres_rejects_bad_counts(tres: str) -> None:
    with pytest.raises(SlurmParseError, match="bad GPU count"):
        parse_gpu_tres(tres)


@pytest.mark.parametrize(
    ("gres_type", "profile"),
    [
        ("3g.40gb", "3g.40gb"),
        ("a100_3g.20gb", "3g.20gb"),
        ("nvidia_a100_1g.10gb+me", "1g.10gb+me"),
        ("h100", None),
        ("a100_80gb", None),
        ("13g.40gb", None),
    ],
)
def test_mig_profile(gres_type: str, profile: str | None) -> None:
    assert mig_profile(gres_type) == profile


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("UNLIMITED", None),
        ("Partition_Limit", None),
        (None, None),
        ("30", 1800),
        ("30:15", 1815),
        ("02:00:00", 7200),
        ("1-00:00:00", 86400),
        ("2-12", 2 * 86400 + 12 * 3600),
        ("1-02:30", 86400 + 2 * 3600 + 30 * 60),
    ],
)
def test_parse_timelimit(text: str | None, seconds: int | None) -> None:
    assert parse_timelimit(text) == seconds


@pytest.mark.parametrize("text", ["abc", "1-2-3", "1:2:3:4", "-5"])
def test_parse_timelimit_rejects_garbage(text: str) -> None:
    with pytest.raises(SlurmParseError):
        parse_timelimit(text)


def test_parse_hosts() -> None:
    assert parse_hosts("gpu-[01-02],cpu7") == ["gpu-01", "gpu-02", "cpu7"]
    assert parse_hosts("None assigned") == []
    with pytest.raises(SlurmParseError):
        parse_hosts("gpu-[01-")


def test_map_distinct_parses_each_value_once_and_names_the_field() -> None:
    calls: list[str | None] = []

    def parse(text: str | None) -> int | None:
        calls.append(text)
        return parse_timelimit(text)

    frame = pl.DataFrame({"timelimit": ["02:00:00", "02:00:00", "bad", None, "bad"]})
    out = map_distinct(frame, "timelimit", parse, pl.Int64(), "seconds")
    assert sorted(calls, key=str) == sorted(["02:00:00", "bad", None], key=str)
    assert out.get_column("seconds").to_list() == [7200, 7200, None, None, None]
    errors = out.get_column("seconds_error").to_list()
    assert errors[:2] == [None, None] and errors[3] is None
    assert errors[2] == errors[4] == "timelimit: cannot parse time limit 'bad'"
