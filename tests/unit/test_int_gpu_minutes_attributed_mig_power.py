"""int_gpu_minutes_attributed: a MIG GPU's power, reported once on the GPU, split over its
instances' rows by profile share; the GPU row keeps the rest, so energy is counted once."""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest

from tests.unit.test_int_gpu_minutes_attributed import HOSTS, MARCH, MODE, T0, land_minutes, minute, run
from tests.unit.test_int_gpu_minutes_attributed import attribute as attribute_with
from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA, int_gpu_minutes_attributed_sql
from transforms.staging.stg_dcgm__gpu_minutely import SCHEMA as MINUTELY_SCHEMA
from transforms.staging.stg_slurm__jobs import SCHEMA as JOBS_SCHEMA
from warehouse import connect, replace_partition

STEP = 30
WATTS = 350.0


def attribute(runs: list[dict], minutes: list[dict], whole_hours: bool, mig_weights=None) -> pl.DataFrame:
    MODE["whole_hours"] = whole_hours
    return attribute_with(runs, minutes, STEP, mig_weights=mig_weights)


def jobs_frame(runs: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(runs, schema=JOBS_SCHEMA).with_columns(month=pl.lit(MARCH[0].date()))


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


def mig_month(hours: int = 4) -> tuple[list[dict], list[dict]]:
    """A MIG GPU (two instances, jobs 1 and 2) and a whole GPU, minute by minute for ``hours``
    from T0 - 40 min; job 1 ends at T0 + 2 h 10 min, job 2 runs all along."""
    runs = [
        run("1", T0 - timedelta(minutes=30), T0 + timedelta(hours=2, minutes=10), gpus=3 / 7),
        run("2", T0 - timedelta(hours=1), T0 + timedelta(hours=hours + 1), gpus=1 / 7),
    ]
    minutes = []
    for k in range(-40, hours * 60):
        at = T0 + timedelta(minutes=k)
        minutes.append(device(at, watts=300.0 + k % 11))
        minutes.append(instance(0, "3g.40gb", "1" if k < 130 else None, at=at, n=2 if k % 3 else 1))
        minutes.append(instance(1, "1g.10gb", "2", at=at))
        minutes.append(minute(at, "2", gpu=1, power_w_mean=200.0 + k % 5))  # a whole GPU (label of job 2)
    return runs, minutes


@pytest.mark.parametrize("weights", [None, {"3g.40gb": 0.5}])
def test_a_mig_gpus_whole_hours_come_from_the_hour_sums(weights) -> None:
    """The hours where every group of the MIG GPU goes whole (T0 and T0 + 1 h) are read from the
    hour sums, power split included: the rows are the same to the bit without their minute rows."""
    runs, minutes = mig_month()
    MODE["whole_hours"] = False
    reference = attribute_with(runs, minutes, STEP, mig_weights=weights)
    MODE["whole_hours"] = True
    whole_mig_hours = [T0, T0 + timedelta(hours=1), T0 + timedelta(hours=3)]
    kept = ~pl.col("minute").dt.truncate("1h").is_in(whole_mig_hours) | (pl.col("gpu") == 1)
    out = attribute_with(runs, minutes, STEP, mig_weights=weights, kept=kept)
    assert out.equals(reference)
    assert out.filter(pl.col("gpu_i_id").is_not_null())["energy_j"].sum() > 0


def test_hour_sums_split_with_other_mig_weights_are_not_used() -> None:
    """Sums made with other MIG weights: the month splits the GPU's power again from the minute rows."""
    runs, minutes = mig_month(hours=2)
    MODE["whole_hours"] = False
    reference = attribute_with(runs, minutes, STEP, mig_weights={"3g.40gb": 0.5})
    MODE["whole_hours"] = True
    rows = pl.DataFrame(minutes, schema=MINUTELY_SCHEMA).with_columns(day=pl.col("minute").dt.date())
    with connect(":memory:") as conn:
        replace_partition(conn, "staging.stg_slurm__jobs", jobs_frame(runs), {"month": MARCH[0].date()})
        land_minutes(conn, rows, STEP, mig_weights={"3g.40gb": 0.25})  # the daily job's weights then
        text, params = int_gpu_minutes_attributed_sql(
            "c1", MARCH[0], *MARCH, STEP, list(HOSTS), list(HOSTS.values()), 0.01, {"3g.40gb": 0.5}
        )
        out = conn.sql(text, params=params).pl().cast(SCHEMA)
    assert out.equals(reference)
