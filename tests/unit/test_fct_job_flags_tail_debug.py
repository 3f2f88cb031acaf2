"""fct_job_flags IDLE_TAIL and DEBUG_OVER_LIMIT (time limit and concurrent debug jobs)."""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest

from tests.unit.fct_job_flags_cases import START, flags, reasons, usage_row


@pytest.mark.parametrize(("tail", "flagged"), [(2.0, True), (1.99, False), (None, False)])
def test_idle_tail(tail, flagged: bool) -> None:
    row = usage_row(hours=6.0, util=0.5, gpus=2.0)
    out = flags([row], profiles={"j1": {"tail_zero_hours": tail}}).filter(pl.col("reason") == "IDLE_TAIL")
    assert (out.height == 1) is flagged
    if flagged:
        assert out.get_column("wasted_gpu_hours")[0] == pytest.approx(4.0)
        assert out.get_column("severity")[0] == "medium"


def test_idle_tail_left_to_zero_util() -> None:
    row = usage_row(hours=6.0, util=0.0)
    assert "IDLE_TAIL" not in reasons([row], profiles={"j1": {"tail_zero_hours": 6.0}})


@pytest.mark.parametrize(("tail", "flagged"), [(6.0, False), (5.99, True)])
def test_idle_tail_needs_work_before_it(tail: float, flagged: bool) -> None:
    """A run "zero" from start to end is not a tail (e.g. started last month: this month's ZERO_UTIL)."""
    row = usage_row(hours=6.0, util=0.3, mean_gr_engine_active=0.9)
    assert ("IDLE_TAIL" in reasons([row], profiles={"j1": {"tail_zero_hours": tail}})) is flagged


def test_idle_tail_not_for_busy_engine_idle_sms_runs() -> None:
    """Their hours count as zero by SM_ACTIVE while the engine spins: not an idle tail."""
    row = usage_row(hours=6.0, util=0.006, mean_gpu_util=0.9, mean_gr_engine_active=0.9)
    got = reasons([row], profiles={"j1": {"tail_zero_hours": 3.0}})
    assert "BUSY_ENGINE_IDLE_SMS" in got and "IDLE_TAIL" not in got


@pytest.mark.parametrize(("hours", "flagged"), [(24.0, False), (24.01, True)])
def test_debug_over_time_limit(hours: float, flagged: bool) -> None:
    got = reasons([usage_row(hours=hours, util=0.8, partition_name="debug")])
    assert ("DEBUG_OVER_LIMIT" in got) is flagged
    assert "DEBUG_OVER_LIMIT" not in reasons([usage_row(hours=hours, util=0.8)])


def debug_jobs(starts_h: list[float], hours: float = 1.0, user: str = "alice") -> list[dict]:
    return [
        usage_row(
            str(i + 1),
            hours=hours,
            util=0.8,
            partition_name="debug",
            user_name=user,
            start_time=START + timedelta(hours=s),
            end_time=START + timedelta(hours=s + hours),
        )
        for i, s in enumerate(starts_h)
    ]


def test_debug_concurrency_limit() -> None:
    at_once = flags(debug_jobs([0.0, 0.3, 0.6, 0.9]))  # 4 running at 0.9 h, limit 3
    assert sorted(at_once.filter(pl.col("reason") == "DEBUG_OVER_LIMIT").get_column("job_id")) == ["1", "2", "3", "4"]
    assert "alice had 4 debug jobs running at once (limit 3)" in at_once.get_column("detail")[0]
    assert flags(debug_jobs([0.0, 0.5, 0.9])).height == 0
    assert flags(debug_jobs([0.0, 1.0, 2.0, 3.0])).height == 0  # one after another (end == next start)
    strict = flags(debug_jobs([0.0, 0.5, 0.9]), debug_max_concurrent_jobs=2)
    assert "alice had 3 debug jobs running at once (limit 2)" in strict.get_column("detail")[0]
    other_users = debug_jobs([0.0]) + [
        r | {"job_id": str(9 + i), "job_id_raw": str(9 + i), "user_name": "bob"}
        for i, r in enumerate(debug_jobs([0.3, 0.6, 0.9]))
    ]
    assert flags(other_users).height == 0


def test_debug_wasted_hours_past_the_limit() -> None:
    out = flags([usage_row(hours=30.0, util=0.8, gpus=2.0, partition_name="debug")])
    assert out.get_column("wasted_gpu_hours")[0] == pytest.approx(12.0)
    assert out.get_column("detail")[0] == "ran 30.0 h in partition debug (limit 24.0 h)"
