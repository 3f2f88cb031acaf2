"""No down or planned-down hour is charged to a department, under any idle-cost policy: the
platform's GPU-hours (from the capacity split) stay with the platform owner as rows of their own,
and the chargeback still reconciles with capacity."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from contracts.capacity_states import DOWN, PLANNED_DOWN
from reports.focus_export import write_chargeback_files
from tests.support.chargeback_frames import MONTH, build, capacity, rates, run, usage
from tests.support.focus_conformance import csv_problems, parquet_problems
from transforms.marts.charge_idle import POLICIES, UNALLOCATED
from transforms.marts.charge_platform import CHARGE_KINDS, IDLE_KIND, PLATFORM_HOURS
from transforms.marts.mart_chargeback_reconciliation import mart_chargeback_reconciliation

JOBS = usage(
    run("1", datetime(2026, 10, 2), 30, department="nlp"),
    run("2", datetime(2026, 10, 3), 10, department="speech"),
    run("3", datetime(2026, 10, 4), 7, gpus=3 / 7, department="speech", gpu_model="A100 3g.40gb"),
)
CAPACITY = capacity(h100_gpus=1, mig_slices={"3g.40gb": 3 / 7})


def _platform() -> pl.DataFrame:
    """The H100 down 20 h on the 10th, in maintenance 5 h on the 12th; the MIG slice 2 h in maintenance."""
    rows = [("H100", datetime(2026, 10, 10, h), DOWN, 3600.0) for h in range(20)]
    rows += [("H100", datetime(2026, 10, 12, h), PLANNED_DOWN, 3600.0) for h in range(5)]
    rows += [("A100 3g.40gb", datetime(2026, 10, 12, h), PLANNED_DOWN, 3600.0 * 3 / 7) for h in range(2)]
    return pl.DataFrame([("c1", *row) for row in rows], schema=PLATFORM_HOURS, orient="row")


def _quantity(focus: pl.DataFrame, *conditions: pl.Expr) -> float:
    return float(focus.filter(*conditions)["ConsumedQuantity"].sum())


@pytest.mark.parametrize("policy", POLICIES)
def test_no_down_hour_is_charged_under_any_idle_policy(policy: str) -> None:
    config = rates(idle_capacity=policy)
    with_downtime = build(JOBS, config, CAPACITY, platform=_platform())
    without = build(JOBS, config, CAPACITY)
    focus = with_downtime.focus
    owner = pl.col("SubAccountId") == UNALLOCATED
    platform = pl.col("x_ChargeKind").is_in([CHARGE_KINDS[DOWN], CHARGE_KINDS[PLANNED_DOWN]])
    assert focus.filter(platform, ~owner).is_empty()  # no department carries a platform row
    assert _quantity(focus, pl.col("x_ChargeKind") == CHARGE_KINDS[DOWN]) == 20.0
    assert _quantity(focus, pl.col("x_ChargeKind") == CHARGE_KINDS[PLANNED_DOWN]) == pytest.approx(5 + 2 * 3 / 7)
    departments = ~owner
    charged_before = _quantity(without.focus, departments)
    charged_after = _quantity(focus, departments)
    if policy == "none":  # departments carry only their usage either way
        assert charged_after == charged_before == 43.0
    else:  # the departments' idle share shrinks by exactly the platform's hours
        assert charged_before - charged_after == pytest.approx(20 + 5 + 2 * 3 / 7, abs=1e-5)
    total = _quantity(focus)
    assert total == pytest.approx(_quantity(without.focus), abs=1e-9)  # capacity is the same, only who carries it
    recon = mart_chargeback_reconciliation(focus, with_downtime.jobs, JOBS, CAPACITY, MONTH).row(0, named=True)
    assert recon["capacity_balanced"] and float(recon["down_gpu_hours"]) == 20.0
    assert float(recon["planned_down_gpu_hours"]) == pytest.approx(5 + 2 * 3 / 7, abs=1e-6)
    assert recon["platform_cost"] == focus.filter(platform)["BilledCost"].sum()


def test_platform_rows_are_named_by_state_and_priced_like_idle() -> None:
    focus = build(JOBS, rates(idle_capacity="even"), CAPACITY, platform=_platform()).focus
    down = focus.filter(pl.col("x_ChargeKind") == CHARGE_KINDS[DOWN]).row(0, named=True)
    assert (
        down["ResourceId"] == "c1/down/H100" and down["ChargeDescription"] == "Down H100 GPU capacity (platform owner)"
    )
    assert down["SkuPriceId"].startswith("H100|down||") and float(down["x_IdleShare"]) == 1.0
    assert float(down["BilledCost"]) == pytest.approx(20 * 2.5)
    planned = focus.filter(pl.col("x_ChargeKind") == CHARGE_KINDS[PLANNED_DOWN])
    assert set(planned["ChargeDescription"]) == {
        "Planned down H100 GPU capacity (platform owner)",
        "Planned down A100 3g.40gb GPU capacity (platform owner)",
    }
    idle = focus.filter(pl.col("x_ChargeKind") == IDLE_KIND)
    assert set(idle["SubAccountId"]) == {"nlp", "speech"} and set(idle["ResourceId"]) == {
        "c1/capacity/H100",
        "c1/capacity/A100 3g.40gb",
    }


def test_platform_hours_never_exceed_the_idle_capacity() -> None:
    busy = usage(run("1", datetime(2026, 10, 1), 24 * 31, department="nlp"))  # the H100 held all month
    platform = _platform().filter(pl.col("gpu_model") == "H100")
    built = build(busy, rates(idle_capacity="proportional"), capacity(h100_gpus=1), platform=platform)
    assert built.focus.filter(pl.col("x_ChargeKind") != "usage")["ConsumedQuantity"].sum() == 0
    recon = mart_chargeback_reconciliation(built.focus, built.jobs, busy, capacity(h100_gpus=1), MONTH)
    assert recon["capacity_balanced"][0]


def test_an_hour_cut_by_a_price_change_is_shared_by_seconds() -> None:
    change = datetime(2026, 10, 10, 5, 30)
    config = rates(price_changes=[{"gpu_model": "H100", "gpu_hour": 3.0, "effective": change}])
    focus = build(JOBS, config, capacity(h100_gpus=1), platform=_platform()).focus
    down = focus.filter(pl.col("x_ChargeKind") == CHARGE_KINDS[DOWN]).sort("ChargePeriodStart")
    assert [float(q) for q in down["ConsumedQuantity"]] == [5.5, 14.5]
    assert down["ChargePeriodStart"][1] == change


@pytest.mark.parametrize("policy", POLICIES)
def test_the_export_with_platform_rows_still_conforms_to_focus(policy: str, tmp_path: Path) -> None:
    built = build(JOBS, rates(idle_capacity=policy), CAPACITY, platform=_platform())
    paths = write_chargeback_files(built.focus, built.jobs, tmp_path, "2026-10")
    assert csv_problems(paths["focus_csv"]) == [] and parquet_problems(paths["focus_parquet"]) == []
    kinds = set(pl.read_csv(paths["focus_csv"], infer_schema=False)["x_ChargeKind"])
    assert kinds == {"usage", IDLE_KIND, CHARGE_KINDS[DOWN], CHARGE_KINDS[PLANNED_DOWN]}
