"""int_charge_idle: who carries idle capacity under each policy, exact to the micro-GPU-hour."""

from __future__ import annotations

from datetime import datetime

import polars as pl
import pytest

from tests.support.chargeback_frames import build, capacity, rates, run, usage
from transforms.marts.charge_idle import UNALLOCATED, capacity_by_model, int_charge_idle

JOBS = usage(
    run("1", datetime(2026, 10, 2), 30, department="nlp"),  # 30 GPU-h
    run("2", datetime(2026, 10, 3), 10, department="speech"),  # 10 GPU-h
    run("3", datetime(2026, 10, 4), 7, gpus=3 / 7, department="speech", gpu_model="A100 3g.40gb"),  # 3 GPU-h
)
CAPACITY = capacity(h100_gpus=1, mig_slices={"3g.40gb": 3 / 7})


def _by(idle: pl.DataFrame, column: str = "department") -> dict[str, int]:
    return dict(idle.group_by(column).agg(pl.col("gpu_hours_micro").sum()).iter_rows())


def test_none_leaves_idle_with_the_platform_owner() -> None:
    idle = build(JOBS, rates(), CAPACITY).idle
    assert set(idle["department"]) == {UNALLOCATED} and (idle["idle_share"] == 1.0).all()
    assert _by(idle, "gpu_model") == {"H100": 744_000_000 - 40_000_000, "A100 3g.40gb": 318_857_143 - 3_000_000}


@pytest.mark.parametrize(("policy", "nlp_share"), [("proportional", 30 / 43), ("even", 0.5)])
def test_spread_policies_split_every_segment_exactly(policy: str, nlp_share: float) -> None:
    idle = build(JOBS, rates(idle_capacity=policy), CAPACITY).idle
    assert set(idle["department"]) == {"nlp", "speech"}
    for _, segment in idle.group_by("gpu_model", "charge_period_start"):
        assert segment["gpu_hours_micro"].sum() == segment["idle_gpu_hours_micro"][0]
        nlp = segment.filter(pl.col("department") == "nlp")
        assert nlp["idle_share"][0] == pytest.approx(nlp_share)
        assert abs(nlp["gpu_hours_micro"][0] - segment["idle_gpu_hours_micro"][0] * nlp_share) <= 1
    assert idle["idle_policy"].unique().to_list() == [policy]


def test_idle_cost_is_quantity_times_list_price_without_multipliers() -> None:
    idle = build(JOBS, rates(idle_capacity="proportional", qos_multipliers={"normal": 2.0}), CAPACITY).idle
    for row in idle.iter_rows(named=True):
        assert row["cost_cents"] == round(row["gpu_hours_micro"] * row["unit_price_micro"] / 10**10)


def test_price_change_cuts_idle_capacity_by_seconds() -> None:
    config = rates(price_changes=[{"gpu_model": "H100", "gpu_hour": 3.0, "effective": datetime(2026, 10, 16, 12)}])
    idle = build(JOBS, config, capacity(h100_gpus=1)).idle.sort("charge_period_start")
    assert idle["capacity_gpu_hours_micro"].to_list() == [372_000_000, 372_000_000]
    assert idle["charged_gpu_hours_micro"].to_list() == [40_000_000, 0]
    assert idle["unit_price_micro"].to_list() == [2_500_000, 3_000_000]


def test_cluster_without_jobs_keeps_idle_with_the_owner_under_any_policy() -> None:
    idle = build(usage(), rates(idle_capacity="proportional"), capacity(h100_gpus=2)).idle
    assert idle["department"].to_list() == [UNALLOCATED] and idle["gpu_hours_micro"].to_list() == [1_488_000_000]


def test_overbooked_capacity_stays_negative_with_the_owner() -> None:
    idle = build(
        usage(run("1", datetime(2026, 10, 2), 10, gpus=2)), rates(idle_capacity="even"), capacity(h100_gpus=1, hours=5)
    ).idle
    assert idle["department"].to_list() == [UNALLOCATED] and idle["gpu_hours_micro"].to_list() == [-15_000_000]


def test_unknown_policy_is_rejected() -> None:
    built = build(JOBS)
    with pytest.raises(ValueError, match="unknown idle-capacity policy"):
        int_charge_idle(built.lines, CAPACITY, pl.DataFrame(), "half", datetime(2026, 10, 1), datetime(2026, 11, 1))


def test_capacity_by_model_labels_mig_profiles_like_job_usage() -> None:
    inventory = pl.DataFrame(
        {
            "cluster": ["c1"] * 4,
            "gpu_model": ["H100", "H100", "A100", "A100"],
            "gpu_i_profile": [None, None, "3g.40gb", "3g.40gb"],
            "gpu_fraction": [1.0, 1.0, 3 / 7, 3 / 7],
        }
    )
    out = capacity_by_model(inventory, datetime(2026, 10, 1), datetime(2026, 11, 1))
    assert out["gpu_model"].to_list() == ["A100 3g.40gb", "H100"]
    assert out["capacity_gpu_hours"].to_list() == pytest.approx([2 * 3 / 7 * 744, 2 * 744])
