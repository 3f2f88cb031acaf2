"""mart_user_monthly: per-user totals, zero-util and low-efficiency thresholds, wasted hours once per job."""

from __future__ import annotations

from datetime import datetime

import polars as pl
import pytest

from tests.unit.fct_job_flags_cases import MONTH, PRICES, flags, thresholds, usage_row
from transforms.marts.fct_job_flags import SCHEMA as FLAGS_SCHEMA
from transforms.marts.fct_job_usage import SCHEMA as USAGE_SCHEMA
from transforms.marts.mart_user_monthly import SCHEMA, mart_user_monthly


def users(rows: list[dict], flag_rows: pl.DataFrame | None = None, **overrides) -> pl.DataFrame:
    usage = pl.DataFrame(rows, schema=USAGE_SCHEMA)
    flagged = flags(rows, **overrides) if flag_rows is None else flag_rows
    return mart_user_monthly(usage, flagged, thresholds(**overrides), PRICES, "EUR", MONTH)


def test_totals_per_user_and_department() -> None:
    rows = [
        usage_row("1", hours=10.0, util=0.5),
        usage_row("2", hours=10.0, util=0.1),
        usage_row("3", hours=5.0, util=None),  # no samples: counted in gpu_hours, not in utilization
        usage_row("4", hours=4.0, util=0.8, user_name="bob"),
        usage_row("5", hours=0.0, util=None, start_time=None, end_time=None, user_name="carol"),  # never ran
    ]
    out = users(rows)
    assert out.schema == pl.Schema(SCHEMA)
    assert out.get_column("user_name").to_list() == ["alice", "bob"]
    alice = out.row(0, named=True)
    assert alice["job_count"] == 3 and alice["gpu_hours"] == pytest.approx(25.0)
    assert alice["active_gpu_hours"] == pytest.approx(6.0)
    assert alice["utilization"] == pytest.approx(6.0 / 20.0)
    assert alice["idle_cost"] == pytest.approx(14.0 * 2.0) and alice["currency"] == "EUR"
    assert alice["flagged_job_count"] == 1  # job 2: LOW_UTIL, INPUT_BOUND, OVERSIZED
    assert out.row(1, named=True)["flagged_job_count"] == 0 and out.row(1, named=True)["wasted_gpu_hours"] == 0.0


def test_wasted_hours_count_each_job_once_at_its_largest_reason() -> None:
    out = users([usage_row("2", hours=10.0, util=0.1)])
    # LOW_UTIL and INPUT_BOUND waste the 9 idle GPU-hours, OVERSIZED 10 x 5/7: the max, not the sum
    assert out.get_column("wasted_gpu_hours")[0] == pytest.approx(9.0)


@pytest.mark.parametrize(("zero_hours", "over"), [(24.0, False), (24.5, True)])
def test_zero_util_user_threshold(zero_hours: float, over: bool) -> None:
    rows = [usage_row("1", hours=zero_hours / 2, util=0.0), usage_row("2", hours=zero_hours / 2, util=0.0)]
    got = users(rows).row(0, named=True)
    assert got["zero_util_gpu_hours"] == pytest.approx(zero_hours)
    assert got["is_zero_util_over_threshold"] is over
    assert users(rows, zero_util_user_gpu_hours=10.0).get_column("is_zero_util_over_threshold")[0] is True


@pytest.mark.parametrize(
    ("hours", "util", "low"),
    [
        (50.0, 0.25, True),
        (49.9, 0.25, False),
        (50.0, 0.2501, False),
        (80.0, 0.05, True),
    ],
)
def test_low_efficiency(hours: float, util: float, low: bool) -> None:
    got = users([usage_row("1", hours=hours, util=util)], flag_rows=pl.DataFrame(schema=FLAGS_SCHEMA))
    assert got.get_column("is_low_efficiency")[0] is low


def test_users_without_samples_are_not_low_efficiency_and_unpriced_cost_is_null() -> None:
    got = users([usage_row("1", hours=100.0, util=None, gpu_model="L40S")]).row(0, named=True)
    assert got["utilization"] is None and got["is_low_efficiency"] is False
    assert got["idle_cost"] is None


def test_row_order_of_the_input_does_not_change_the_rows() -> None:
    """Float sums in a fixed run order: a shuffled read gives bit-identical rows (an asset rerun
    reads fct_job_usage in whatever order DuckDB returns it)."""
    import random

    from transforms.marts.mart_department_monthly import mart_department_monthly

    rng = random.Random(3)
    rows = [usage_row(str(i), hours=rng.random() * 10 ** rng.randint(-3, 3), util=rng.random()) for i in range(300)]
    usage = pl.DataFrame(rows, schema=USAGE_SCHEMA)
    no_flags = pl.DataFrame(schema=FLAGS_SCHEMA)
    shuffled = [usage.sample(fraction=1.0, shuffle=True, seed=seed) for seed in range(8)]
    sums = {frame["gpu_hours"].sum() for frame in shuffled}
    assert len(sums) > 1  # the float sum depends on the order: the case this test is about
    expected = mart_user_monthly(usage, no_flags, thresholds(), PRICES, "EUR", MONTH)
    for frame in shuffled:
        assert mart_user_monthly(frame, no_flags, thresholds(), PRICES, "EUR", MONTH).equals(expected)
    start = datetime.combine(MONTH, datetime.min.time())
    capacity = pl.DataFrame({"cluster": ["alpha"], "capacity_gpu_hours": [1e6]})
    with_month = [frame.with_columns(month=pl.lit(MONTH)) for frame in [usage, *shuffled]]
    departments = [
        mart_department_monthly(frame, period_start=start, capacity_gpu_hours=capacity) for frame in with_month
    ]
    assert departments[0].height >= 2 and all(frame.equals(departments[0]) for frame in departments)
