"""Chargeback pricing: the rates config, exact money helpers and int_charge_lines on crafted runs."""

from __future__ import annotations

import tomllib
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import polars as pl
import pytest

from config import EXAMPLE_CONFIG, ConfigError, load_config, parse_config
from tests.support.chargeback_frames import END, START, build, rates, run, usage
from transforms.helpers.charge_money import div_half_up, largest_remainder, scaled_decimal

# ---------------------------------------------------------------- config


def _example(**rates_extra) -> dict:
    data = tomllib.loads(EXAMPLE_CONFIG.read_text())
    data["rates"].update(rates_extra)
    return data


def test_existing_table_form_still_loads_with_defaults() -> None:
    config = load_config(EXAMPLE_CONFIG)
    assert config.rates.gpu_hour_rate("H100") == 2.5
    assert config.rates.idle_capacity == "none"
    assert config.rates.price_changes == [] and config.rates.multiplier("gpu", "normal") == Decimal("1.0")
    assert config.rates.focus.billing_account_id == "cardhours"


@pytest.mark.parametrize(
    ("extra", "key", "reason"),
    [
        ({"idle_capacity": "spread"}, "rates.idle_capacity", "'none', 'proportional' or 'even'"),
        (
            {"price_changes": [{"gpu_model": "H200", "gpu_hour": 3.0, "effective": datetime(2026, 10, 15)}]},
            "rates.price_changes[0].gpu_model",
            "no base price for gpu_model 'H200'",
        ),
        (
            {"price_changes": [{"gpu_model": "H100", "gpu_hour": -1.0, "effective": datetime(2026, 10, 15)}]},
            "rates.price_changes[0].gpu_hour",
            "greater than or equal to 0",
        ),
        (
            {"price_changes": [{"gpu_model": "H100", "gpu_hour": 3.0, "effective": "2026-10-15"}]},
            "rates.price_changes[0].effective",
            "must be a TOML date-time",
        ),
        (
            {
                "price_changes": [
                    {"gpu_model": "H100", "gpu_hour": 3.0, "effective": datetime(2026, 10, 15)},
                    {"gpu_model": "H100", "gpu_hour": 3.1, "effective": datetime(2026, 10, 15)},
                ]
            },
            "rates.price_changes[1].effective",
            "already changes price",
        ),
        ({"qos_multipliers": {"high": -1.5}}, "rates.qos_multipliers.high", "greater than or equal to 0"),
        ({"focus": {"billing_acount_id": "x"}}, "rates.focus.billing_acount_id", "did you mean 'billing_account_id'"),
        ({"focus": {"service_name": " "}}, "rates.focus.service_name", "must not be empty"),
    ],
)
def test_rates_errors_name_the_key(extra: dict, key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(_example(**extra), source="site.toml")
    lines = str(error.value).splitlines()
    assert any(line.startswith(f"site.toml: {key}: ") and reason in line for line in lines), lines


def test_price_change_instants_are_utc_whole_seconds() -> None:
    cest = timezone(timedelta(hours=2))
    config = parse_config(
        _example(
            price_changes=[
                {"gpu_model": "H100", "gpu_hour": 3.0, "effective": datetime(2026, 10, 15, 14, 0, tzinfo=cest)},
                {"gpu_model": "A100", "gpu_hour": 1.0, "effective": datetime(2026, 10, 20).date()},
            ]
        )
    )
    assert config.rates.price_segments("H100", START, END) == [
        (START, datetime(2026, 10, 15, 12), Decimal("2.5")),
        (datetime(2026, 10, 15, 12), END, Decimal("3.0")),
    ]
    assert config.rates.price_segments("A100", START, END)[1] == (datetime(2026, 10, 20), END, Decimal("1.0"))
    with pytest.raises(ConfigError, match="whole seconds"):
        parse_config(
            _example(
                price_changes=[
                    {"gpu_model": "H100", "gpu_hour": 3.0, "effective": datetime(2026, 10, 15, 0, 0, 0, 500)}
                ]
            )
        )


def test_price_changes_before_and_after_the_month() -> None:
    config = rates(
        price_changes=[
            {"gpu_model": "H100", "gpu_hour": 2.0, "effective": datetime(2026, 9, 1)},
            {"gpu_model": "H100", "gpu_hour": 9.0, "effective": datetime(2026, 11, 1)},
        ]
    )
    assert config.price_segments("H100", START, END) == [(START, END, Decimal("2.0"))]


# ---------------------------------------------------------------- money helpers


def test_half_up_and_scaled_decimals() -> None:
    frame = pl.DataFrame({"n": [5, 15, -5, 14, 0]})
    assert frame.select(div_half_up(pl.col("n"), 10)).to_series().to_list() == [1, 2, -1, 1, 0]
    assert frame.select(scaled_decimal(pl.col("n") * 1001, 2)).to_series().to_list() == [
        Decimal("50.05"),
        Decimal("150.15"),
        Decimal("-50.05"),
        Decimal("140.14"),
        Decimal("0.00"),
    ]


def test_largest_remainder_sums_exactly_and_breaks_ties_by_order() -> None:
    frame = pl.DataFrame(
        {"g": ["a"] * 3 + ["b"] * 2, "k": [1, 2, 3, 1, 2], "total": [100] * 3 + [7] * 2, "w": [1, 1, 1, 0, 0]}
    )
    out = largest_remainder(frame, "total", "w", ["g"], ["k"], "share")
    assert out["share"].to_list() == [34, 33, 33, 7, 0]


# ---------------------------------------------------------------- int_charge_lines


def test_rate_change_mid_month_splits_a_run_to_the_second() -> None:
    config = rates(
        price_changes=[{"gpu_model": "H100", "gpu_hour": 3.0, "effective": datetime(2026, 10, 15, 12, 0, 1)}]
    )
    job = run("1", datetime(2026, 10, 15, 11, 0), 2, gpus=2)
    lines = build(usage(job), config).lines
    assert lines["charge_seconds"].to_list() == [3601, 3599]
    assert lines["gpu_hours_micro"].sum() == 4_000_000
    assert lines["gpu_hours_micro"].to_list() == [2_000_556, 1_999_444]
    assert lines["unit_price_micro"].to_list() == [2_500_000, 3_000_000]
    assert lines["cost_cents"].to_list() == [500, 600]  # 5.00139 -> 5.00, 5.998332 -> 6.00


def test_run_not_touching_the_change_has_one_line() -> None:
    config = rates(price_changes=[{"gpu_model": "H100", "gpu_hour": 3.0, "effective": datetime(2026, 10, 15, 12)}])
    lines = build(usage(run("1", datetime(2026, 10, 15, 10), 2)), config).lines  # ends exactly at the change
    assert lines.height == 1 and lines["unit_price_micro"][0] == 2_500_000


def test_run_crossing_the_month_boundary_is_charged_inside_the_month_only() -> None:
    jobs = usage(run("1", datetime(2026, 9, 30, 22), 4), run("2", datetime(2026, 10, 31, 23), 3))
    lines = build(jobs).lines
    assert lines["gpu_hours_micro"].to_list() == [2_000_000, 1_000_000]
    assert lines["charge_period_start"].to_list() == [START, START]
    assert lines["charge_period_end"].to_list() == [END, END]


def test_mig_slice_is_priced_at_its_weight_of_the_base_model() -> None:
    lines = build(usage(run("1", datetime(2026, 10, 2), 7, gpus=3 / 7, gpu_model="A100 3g.40gb"))).lines
    assert lines["gpu_hours_micro"].to_list() == [3_000_000]
    assert lines["list_unit_price_micro"].to_list() == [1_400_000]
    assert lines["cost_cents"].to_list() == [420]


def test_multipliers_apply_per_partition_and_qos() -> None:
    config = rates(partition_multipliers={"debug": 0.5}, qos_multipliers={"high": 1.5})
    jobs = usage(
        run("1", datetime(2026, 10, 2), 1, partition="debug", qos="high"),
        run("2", datetime(2026, 10, 2), 1, partition="debug"),
        run("3", datetime(2026, 10, 2), 1),
    )
    lines = build(jobs, config).lines.sort("job_id_raw")
    assert lines["price_multiplier_micro"].to_list() == [750_000, 500_000, 1_000_000]
    assert lines["unit_price_micro"].to_list() == [1_875_000, 1_250_000, 2_500_000]


def test_unmapped_account_is_charged_to_unmapped() -> None:
    built = build(
        usage(run("1", datetime(2026, 10, 2), 4, department="unmapped", division="unmapped", account="legacy"))
    )
    assert built.lines["department"].to_list() == ["unmapped"]
    row = built.focus.filter(pl.col("x_ChargeKind") == "usage")
    assert row["SubAccountId"].to_list() == ["unmapped"] and row["BilledCost"].to_list() == [Decimal("10.00")]


def test_run_of_unknown_model_keeps_its_quantity_unpriced() -> None:
    lines = build(usage(run("1", datetime(2026, 10, 2), 4, gpu_model=None))).lines
    assert lines["is_priced"].to_list() == [False]
    assert lines["gpu_hours_micro"].to_list() == [4_000_000] and lines["cost_cents"].to_list() == [0]


def test_zero_gpu_hour_runs_have_no_lines() -> None:
    lines = build(usage(run("1", datetime(2026, 10, 2), 4, gpus=0.0), run("2", datetime(2026, 9, 2), 4))).lines
    assert lines.is_empty()


def test_row_cents_split_over_lines_add_up_exactly() -> None:
    # three runs of 1/3 GPU-hour at 2.5: the row costs round(2.5) = 2.50, the lines 0.84 + 0.83 + 0.83
    jobs = usage(*[run(str(i), datetime(2026, 10, 2, i), 1 / 3) for i in range(3)])
    lines = build(jobs).lines
    assert sorted(lines["cost_cents"].to_list()) == [83, 83, 84]
    assert lines["cost_cents"].sum() == 250
