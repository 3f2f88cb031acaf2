"""Observed inventory: DCGM's hours override the config's layout card by card, hour by hour."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import polars as pl
import pytest

from config import EXAMPLE_CONFIG, load_config
from contracts.sources import OBSERVED_BY_DCGM
from tests.unit.config_cases import FIXTURES
from transforms.intermediate.int_gpu_inventory_observed import (
    DCGM_KEY,
    OBSERVED_SQL,
    SCHEMA,
    difference_advice,
    hourly_inventory,
    int_gpu_inventory_observed,
    inventory_differences,
)
from transforms.marts.charge_idle import capacity_by_model
from transforms.marts.mart_cluster_monthly import capacity_gpu_hours

START = datetime(2026, 3, 1)
HOURS = 6


def _config():
    return load_config(FIXTURES / "minimal.toml")


def _observed(rows: list[tuple]) -> pl.DataFrame:
    """rows: (hostname, gpu, gpu_i_id, gpu_i_profile, hour index)."""
    frame = pl.DataFrame(
        [
            ("sim", host, gpu, f"GPU-{host}-{gpu}", "NVIDIA A100", gi_id, profile, START + timedelta(hours=h), 60)
            for host, gpu, gi_id, profile, h in rows
        ],
        schema={name: SCHEMA[name] for name in [*DCGM_KEY, "n_samples"]},
        orient="row",
    )
    return int_gpu_inventory_observed(frame)


def _capacity_by_hour(inventory: pl.DataFrame, host: str, gpu: int) -> list[float]:
    card = inventory.filter((pl.col("hostname") == host) & (pl.col("gpu") == gpu))
    per_hour = card.group_by("hour").agg(pl.col("gpu_fraction").sum()).sort("hour")
    return per_hour.get_column("gpu_fraction").to_list()


def test_agreeing_observation_keeps_the_config_rows() -> None:
    config = _config()
    declared = config.inventory_frame()
    host = declared.row(0, named=True)["hostname"]
    observed = _observed([(host, 0, None, None, h) for h in range(HOURS)])
    hourly = hourly_inventory(declared, observed, START, START + timedelta(hours=HOURS), config.rates.mig_weight)
    assert hourly.equals(declared)  # every hour the config's
    assert inventory_differences(declared, observed).is_empty()


def test_mig_repartition_counted_hour_by_hour_never_with_the_whole_gpu() -> None:
    config = _config()
    declared = config.inventory_frame()
    host = declared.row(0, named=True)["hostname"]
    rows = [(host, 0, None, None, 0), (host, 0, None, None, 1)]  # whole, as declared
    rows += [(host, 0, None, None, 2), (host, 0, 1, "3g.40gb", 2)]  # whole and MIG in one hour
    rows += [(host, 0, 1, "3g.40gb", 3), (host, 0, 2, "3g.40gb", 3)]  # two 3g slices
    rows += [(host, 0, 7, "1g.10gb", 4)]  # re-partitioned again; hour 5 not observed
    observed = _observed(rows)
    end = START + timedelta(hours=HOURS)
    hourly = hourly_inventory(declared, observed, START, end, config.rates.mig_weight)
    assert _capacity_by_hour(hourly, host, 0) == pytest.approx([1.0, 1.0, 3 / 7, 6 / 7, 1 / 7, 1.0])
    mig = hourly.filter(pl.col("gpu_i_profile").is_not_null())
    assert mig.get_column("gpu_model").unique().to_list() == declared.get_column("gpu_model").unique().to_list()
    assert mig.filter(pl.col("gpu_i_profile") == "3g.40gb").get_column("memory_mib").max() <= 40 * 1024
    # Other cards of the host, not observed, keep the config's capacity every hour.
    others = hourly.filter((pl.col("hostname") != host) | (pl.col("gpu") != 0))
    assert others.get_column("gpu_fraction").sum() == pytest.approx((declared["gpu_fraction"].sum() - 1) * HOURS)

    differences = inventory_differences(declared, observed)
    assert differences.select("observed", "hours").rows() == [("3g.40gb", 1), ("3g.40gb+3g.40gb", 1), ("1g.10gb", 1)]
    advice = difference_advice(differences.row(1, named=True))
    assert f"{host} GPU 0 ran as MIG 3g.40gb+3g.40gb but is declared as whole" in advice
    assert "mig_layout = ['3g.40gb', '3g.40gb']" in advice


def test_unknown_host_and_extra_gpu() -> None:
    config = _config()
    declared = config.inventory_frame()
    host = declared.row(0, named=True)["hostname"]
    extra = int(declared.filter(pl.col("hostname") == host)["gpu"].max()) + 1
    observed = _observed([("ghost-01", 0, None, None, 0), (host, extra, None, None, 0)])
    hourly = hourly_inventory(declared, observed, START, START + timedelta(hours=HOURS), config.rates.mig_weight)
    assert "ghost-01" not in hourly.get_column("hostname").to_list()
    assert _capacity_by_hour(hourly, host, extra) == [1.0]
    declared_as = inventory_differences(declared, observed).sort("hostname").get_column("declared").to_list()
    assert declared_as == ["not declared", "not declared"]
    assert "add it to a node group" in difference_advice(inventory_differences(declared, observed).row(0, named=True))


def test_capacity_of_an_hourly_inventory() -> None:
    config = _config()
    declared = config.inventory_frame()
    host = declared.row(0, named=True)["hostname"]
    end = START + timedelta(hours=HOURS)
    every_hour = declared.join(
        pl.datetime_range(START, end, "1h", closed="left", eager=True).alias("hour").to_frame(), how="cross"
    )
    # An inventory the same every hour gives exactly the config's capacity.
    assert capacity_gpu_hours(every_hour, START, end).equals(capacity_gpu_hours(declared, START, end))
    assert capacity_by_model(every_hour, START, end).equals(capacity_by_model(declared, START, end))
    observed = _observed([(host, 0, 1, "3g.40gb", h) for h in range(2)])
    hourly = hourly_inventory(declared, observed, START, end, config.rates.mig_weight)
    total = declared["gpu_fraction"].sum() * HOURS - 2 * (1 - 3 / 7)
    assert capacity_gpu_hours(hourly, START, end)["capacity_gpu_hours"].item() == pytest.approx(total)
    by_model = dict(capacity_by_model(hourly, START, end).select("gpu_model", "capacity_gpu_hours").rows())
    model = declared.row(0, named=True)["gpu_model"]
    assert by_model[f"{model} 3g.40gb"] == pytest.approx(2 * 3 / 7)
    assert sum(by_model.values()) == pytest.approx(total)


def test_the_sql_gives_the_frames_rows() -> None:
    config = _config()
    host = config.inventory_frame().row(0, named=True)["hostname"]
    rows = [(host, 0, None, None, 0), (host, 0, 1, "3g.40gb", 0), (host, 0, 2, "3g.40gb", 3), (host, 1, None, None, 9)]
    hourly = _observed(rows)
    hourly = pl.concat([hourly, hourly]).with_columns(day=pl.col("hour").dt.date(), hpc_job=pl.lit("7"))
    end = START + timedelta(hours=HOURS)
    with duckdb.connect() as conn:
        conn.execute("CREATE SCHEMA staging")
        conn.register("hourly", hourly.to_arrow())
        conn.execute("CREATE TABLE staging.stg_dcgm__gpu_hourly AS SELECT * FROM hourly")
        got = (
            conn.sql(
                OBSERVED_SQL, params=[OBSERVED_BY_DCGM, START.date(), START.date() + timedelta(days=1), START, end]
            )
            .pl()
            .cast(SCHEMA)
        )
    want = int_gpu_inventory_observed(hourly.filter(pl.col("hour") < end))
    assert got.height == 3 and got.equals(want)


def test_declared_mig_card_with_some_instances_silent_keeps_the_config() -> None:
    config = load_config(EXAMPLE_CONFIG)
    declared = config.inventory_frame()
    card = declared.filter(pl.col("gpu_i_profile").is_not_null()).row(0, named=True)
    host, cluster = card["hostname"], card["cluster"]
    seen = [(host, 0, 9, "3g.40gb", 0), (host, 0, 3, "1g.10gb", 0)]  # two of 3g+2g+1g+1g report
    seen += [(host, 0, 9, "3g.40gb", 1), (host, 0, 10, "3g.40gb", 1)]  # two 3g: not the declared layout
    seen += [(host, 0, None, None, 2)]  # whole
    observed = _observed(seen).with_columns(cluster=pl.lit(cluster))
    hourly = hourly_inventory(declared, observed, START, START + timedelta(hours=HOURS), config.rates.mig_weight)
    assert _capacity_by_hour(hourly, host, 0) == pytest.approx([1.0, 6 / 7, 1.0, 1.0, 1.0, 1.0])
    hour2 = hourly.filter(
        (pl.col("hostname") == host) & (pl.col("gpu") == 0) & (pl.col("hour") == START + timedelta(hours=2))
    )
    assert hour2["gpu_i_profile"].to_list() == [None]
    differences = inventory_differences(declared, observed)
    assert differences.select("observed", "hours").rows() == [("3g.40gb+3g.40gb", 1), ("whole", 1)]
    assert "ran whole but is declared as MIG" in difference_advice(differences.row(1, named=True))
