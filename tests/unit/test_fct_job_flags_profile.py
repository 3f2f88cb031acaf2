"""int_job_activity_profiled: the idle tail and steadiness of a run, from attributed GPU-hours."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
import pytest

from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA as ATTRIBUTED_SCHEMA
from transforms.marts.job_activity_profile import SCHEMA, int_job_activity_profiled

PERIOD_END = datetime(2024, 4, 1)
T0 = datetime(2024, 3, 10, 10)
RUNS_SCHEMA = {
    "cluster": pl.String,
    "job_id_raw": pl.String,
    "start_time": pl.Datetime("us"),
    "end_time": pl.Datetime("us"),
}


def hour_row(
    job: str,
    at: datetime,
    zero: bool,
    gr: float = 0.1,
    gpu: int = 0,
    start: datetime = T0,
    method: str = "hpc_job_label",
    samples: float = 60.0,
) -> dict:
    """An attribution row: ``samples`` samples of GPU ``gpu`` in the hour ``at`` (all zero or none)."""
    return {c: 0.0 if c.endswith(("_sum", "_n")) else None for c in ATTRIBUTED_SCHEMA} | {
        "cluster": "c1",
        "hostname": "n1",
        "gpu": gpu,
        "hour": at,
        "job_id_raw": job,
        "start_time": start,
        "attribution_method": method,
        "samples": samples,
        "zero_samples": samples if zero else 0.0,
        "gr_engine_active_sum": (0.0 if zero else gr) * samples,
        "gr_engine_active_n": samples,
    }


def run(job: str, end: datetime | None, start: datetime = T0) -> dict:
    return {"cluster": "c1", "job_id_raw": job, "start_time": start, "end_time": end}


def profile(hours: list[dict], runs: list[dict]) -> pl.DataFrame:
    return int_job_activity_profiled(
        pl.DataFrame(hours, schema=ATTRIBUTED_SCHEMA), pl.DataFrame(runs, schema=RUNS_SCHEMA), PERIOD_END, 0.02, 0.5
    )


def hours_at(job: str, pattern: str, gpus: int = 1, start: datetime = T0) -> list[dict]:
    """One row per GPU and hour from ``start``: 'z' zero hour, 'a' active hour, '-' no samples."""
    return [
        hour_row(job, start.replace(minute=0) + timedelta(hours=i), c == "z", gpu=g, start=start)
        for i, c in enumerate(pattern)
        for g in range(gpus)
        if c != "-"
    ]


def tail(hours: list[dict], runs: list[dict]) -> float | None:
    return profile(hours, runs).get_column("tail_zero_hours")[0]


def test_tail_from_the_first_all_zero_hour_to_the_end() -> None:
    end = T0 + timedelta(hours=5, minutes=30)  # 10:00-15:30; hours 13, 14, 15 at zero
    assert tail(hours_at("1", "aaazzz"), [run("1", end)]) == pytest.approx(2.5)


def test_no_tail_when_the_last_hour_was_active_or_unmeasured() -> None:
    end = T0 + timedelta(hours=6)
    assert tail(hours_at("1", "zzzzza"), [run("1", end)]) == 0.0
    assert tail(hours_at("1", "azzzz-"), [run("1", end)]) == 0.0


def test_the_hour_before_the_tail_adds_its_zero_share() -> None:
    """Work stopped at 12:36 and the run ended at 15:30: 3 h (13-15:30 + 0.4 of 12:00)."""
    end = T0 + timedelta(hours=5, minutes=30)
    rows = hours_at("1", "aaazzz")
    rows[2] = hour_row("1", T0 + timedelta(hours=2), zero=False) | {"zero_samples": 24.0}
    assert tail(rows, [run("1", end)]) == pytest.approx(2.5 + 0.4)


def test_the_boundary_hour_counts_only_its_part_in_the_run() -> None:
    start = T0 + timedelta(minutes=30)  # 10:30 start, the 10:00 hour half zero, then zero until 12:00
    rows = [hour_row("1", T0, zero=False, start=start) | {"zero_samples": 15.0, "samples": 30.0}]
    rows += [hour_row("1", T0 + timedelta(hours=1), zero=True, start=start)]
    assert tail(rows, [run("1", T0 + timedelta(hours=2), start)]) == pytest.approx(1.0 + 0.5 * 0.5)


def test_a_gap_breaks_the_tail() -> None:
    end = T0 + timedelta(hours=6)
    assert tail(hours_at("1", "zzz-zz"), [run("1", end)]) == pytest.approx(2.0)


def test_every_gpu_must_be_idle() -> None:
    end = T0 + timedelta(hours=4)
    rows = hours_at("1", "azzz", gpus=2)
    rows[-1] = hour_row("1", T0 + timedelta(hours=3), zero=False, gpu=1)  # GPU 1 active in the last hour
    assert tail(rows, [run("1", end)]) == 0.0
    assert tail(hours_at("1", "azzz", gpus=2), [run("1", end)]) == pytest.approx(3.0)


def test_tail_is_clipped_to_the_run_start_and_null_for_open_runs() -> None:
    start = T0 + timedelta(minutes=40)
    end = start + timedelta(hours=2)  # 10:40-12:40, all zero
    assert tail(hours_at("1", "zzz", start=start), [run("1", end, start)]) == pytest.approx(2.0)
    assert tail(hours_at("1", "zzz"), [run("1", None)]) is None
    assert tail(hours_at("1", "zzz"), [run("1", PERIOD_END + timedelta(hours=1))]) is None  # ends next month


def test_steady_share_weights_hours_by_samples() -> None:
    rows = [hour_row("1", T0 + timedelta(hours=i), zero=False, gr=gr) for i, gr in enumerate((0.1, 0.1, 0.1, 0.9))]
    got = profile(rows, [run("1", T0 + timedelta(hours=4))]).row(0, named=True)
    assert got["steady_share"] == pytest.approx(0.75) and got["measured_hours"] == 4
    rows[3] = hour_row("1", T0 + timedelta(hours=3), zero=False, gr=0.5)  # the band's upper bound is open
    assert profile(rows, [run("1", T0 + timedelta(hours=4))]).get_column("steady_share")[0] == pytest.approx(0.75)


def test_unattributed_rows_ignored_and_runs_without_samples_kept() -> None:
    rows = hours_at("1", "aa") + [hour_row("1", T0, zero=True, method="unattributed")]
    got = profile(rows, [run("1", T0 + timedelta(hours=2)), run("2", T0 + timedelta(hours=2))])
    assert got.schema == pl.Schema(SCHEMA)
    assert got.select("job_id_raw", "measured_hours", "steady_share", "tail_zero_hours").rows() == [
        ("1", 2, 1.0, 0.0),
        ("2", 0, None, 0.0),
    ]
