"""int_gpu_minutes_attributed: a MIG GPU's power, reported once on the GPU, split over its
instances' rows by profile share; the GPU row keeps the rest, so energy is counted once."""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest

from tests.unit.test_int_gpu_minutes_attributed import MODE, T0, minute, run
from tests.unit.test_int_gpu_minutes_attributed import attribute as attribute_with

STEP = 30
WATTS = 350.0


def attribute(runs: list[dict], minutes: list[dict], whole_hours: bool, mig_weights=None) -> pl.DataFrame:
    MODE["whole_hours"] = whole_hours
    return attribute_with(runs, minutes, STEP, mig_weights=mig_weights)


def device(at=T0, watts: float | None = WATTS, n: int = 2) -> dict:
    """The GPU's row: the whole-GPU fields dcgm-exporter repeats on each instance, moved here."""
    return minute(at, None, n=n, power_w_mean=watts, sm_active_mean=None, best_signal_mean=None)


def instance(gi: int, profile: str, job: str | None, at=T0, n: int = 2) -> dict:
    return minute(at, job, n=n, gpu_i_id=gi, gpu_i_profile=profile, power_w_mean=None)


def energy(out: pl.DataFrame) -> dict[str | None, float]:
    return {job: round(j, 6) for job, j in out.group_by("job_id_raw").agg(pl.col("energy_j").sum()).rows()}


RUNS = [
    run("1", T0 - timedelta(hours=1), T0 + timedelta(hours=1), gpus=3 / 7),
    run("2", T0 - timedelta(hours=1), T0 + timedelta(hours=1), gpus=1 / 7),
]


@pytest.mark.parametrize("whole_hours", [True, False])
def test_instances_get_their_slices_of_the_gpus_power_and_the_gpu_row_the_rest(whole_hours: bool) -> None:
    out = attribute(RUNS, [device(), instance(0, "3g.40gb", "1"), instance(1, "1g.10gb", "2")], whole_hours)
    whole = WATTS * 2 * STEP  # the GPU's energy in the minute: 21,000 J
    assert energy(out) == {"1": whole * 3 / 7, "2": whole * 1 / 7, None: pytest.approx(whole * 3 / 7)}
    assert sum(energy(out).values()) == pytest.approx(whole)
    assert out.filter(pl.col("job_id_raw").is_null())["attribution_method"].to_list() == ["unallocated"]


@pytest.mark.parametrize("whole_hours", [True, False])
def test_configured_profile_weights_win_and_too_many_shares_are_scaled_to_the_gpu(whole_hours: bool) -> None:
    minutes = [device(), instance(0, "3g.40gb", "1"), instance(1, "1g.10gb", "2")]
    whole = WATTS * 2 * STEP
    out = attribute(RUNS, minutes, whole_hours, mig_weights={"3g.40gb": 0.5})
    assert energy(out) == {"1": whole * 0.5, "2": pytest.approx(whole / 7), None: pytest.approx(whole * (0.5 - 1 / 7))}
    out = attribute(RUNS, minutes, whole_hours, mig_weights={"3g.40gb": 0.9, "1g.10gb": 0.6})  # 1.5 of a GPU
    assert energy(out) == {"1": pytest.approx(whole * 0.6), "2": pytest.approx(whole * 0.4), None: 0.0}


@pytest.mark.parametrize("whole_hours", [True, False])
def test_an_instance_in_two_rows_splits_its_share_by_samples(whole_hours: bool) -> None:
    runs = [*RUNS, run("3", T0 - timedelta(hours=1), T0 + timedelta(hours=1), gpus=3 / 7)]
    minutes = [device(), instance(0, "3g.40gb", "1", n=1), instance(0, "3g.40gb", "3", n=1)]
    whole = WATTS * 2 * STEP
    assert energy(attribute(runs, minutes, whole_hours)) == {
        "1": pytest.approx(whole * 3 / 14),
        "3": pytest.approx(whole * 3 / 14),
        None: pytest.approx(whole * 4 / 7),
    }


@pytest.mark.parametrize("whole_hours", [True, False])
def test_no_gpu_row_no_invented_power_and_whole_gpus_unchanged(whole_hours: bool) -> None:
    later = T0 + timedelta(minutes=1)
    minutes = [
        instance(0, "3g.40gb", "1", at=later),  # the GPU's row is missing this minute
        minute(T0, "4", gpu=1),
    ]  # a whole GPU: its own power
    runs = [*RUNS, run("4", T0 - timedelta(hours=1), T0 + timedelta(hours=1))]
    out = energy(attribute(runs, minutes, whole_hours))
    assert out["4"] == 300.0 * 2 * STEP
    assert out["1"] is None or out["1"] == 0.0


@pytest.mark.parametrize("whole_hours", [True, False])
def test_the_gpus_power_on_two_rows_of_a_minute_counts_once(whole_hours: bool) -> None:
    # the exporter's values went to the parent GPU's row (a run held the GPU) for one sample and
    # to a device row for the other: two rows without an instance in the minute, 1 sample each
    runs = [*RUNS, run("5", T0 - timedelta(hours=1), T0 + timedelta(hours=1))]
    minutes = [
        device(n=1, watts=300.0),
        minute(T0, "5", n=1, power_w_mean=400.0),
        instance(0, "3g.40gb", "1"),
        instance(1, "1g.10gb", "2"),
    ]
    whole = (300.0 + 400.0) * STEP  # the GPU's energy in the minute
    out = energy(attribute(runs, minutes, whole_hours))
    assert out["1"] == pytest.approx(whole * 3 / 7) and out["2"] == pytest.approx(whole / 7)
    assert out["5"] == pytest.approx(400.0 * STEP * 3 / 7) and out[None] == pytest.approx(300.0 * STEP * 3 / 7)
    assert sum(out.values()) == pytest.approx(whole)
