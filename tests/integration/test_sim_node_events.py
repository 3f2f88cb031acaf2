"""A simulated month with a mid-month MIG re-partition and a drained node, run end to end: the
marts' capacity, allocation, down and idle time equal the simulator's truth
(truth_capacity.parquet), hour by hour for the two nodes (marts.fct_gpu_hourly and the capacity
split, marts.fct_gpu_capacity_split, which reads the drain from the saved sacctmgr events), and
in total for the cluster and the chargeback, where no down hour is charged."""

from __future__ import annotations

import re
from datetime import datetime

import polars as pl
import pytest
from typer.testing import CliRunner

from cardhours.cli import app
from tests.support.warehouse_read import read
from transforms.intermediate.int_gpu_inventory_observed import LAYOUT_DIFFERENCE

pytestmark = [pytest.mark.slow]

MONTH = "2026-10"
REPARTITIONED, DRAINED = "gpu-004", "gpu-001"  # the first MIG node, the first whole-GPU node (seed 5)
AT = datetime(2026, 10, 16, 13)  # 13:00 of the window's middle day
DRAIN = (datetime(2026, 10, 8, 21, 17), datetime(2026, 10, 11, 23, 43))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("events")
    runner = CliRunner()
    args = ["--out", str(root / "sim"), "--gpus", "32", "--days", "31", "--start", "2026-10-01", "--seed", "5"]
    sim = runner.invoke(
        app,
        ["simulate", *args, "--step", "900", "--metrics-format", "parquet", "--repartition-mig", "--drain-node"],
    )
    assert sim.exit_code == 0, sim.output
    done = runner.invoke(app, ["run", "--config", str(root / "sim" / "cardhours.toml"), "--month", MONTH])
    assert done.exit_code == 0, done.output
    database = next((root / "sim").glob("*.duckdb"))
    truth = pl.read_parquet(root / "sim" / "truth_capacity.parquet")
    return {"root": root, "database": database, "truth": truth, "output": done.output}


def _hourly(site: dict, host: str) -> pl.DataFrame:
    """The marts' and the truth's GPU-hours of ``host``, one row per hour of the month."""
    marts = read(
        site["database"],
        "SELECT hostname, hour, sum(capacity_seconds) / 3600 AS capacity, sum(allocated_seconds) / 3600 AS allocated "
        "FROM marts.fct_gpu_hourly WHERE hostname = ? GROUP BY ALL",
        [host],
    )
    split = read(
        site["database"],
        "SELECT hostname, hour, sum(allocated_seconds) / 3600 AS split_allocated, sum(down_seconds) / 3600 AS down, "
        "sum(idle_seconds) / 3600 AS idle, sum(planned_down_seconds + reserved_seconds) / 3600 AS other "
        "FROM marts.fct_gpu_capacity_split WHERE hostname = ? GROUP BY ALL",
        [host],
    )
    marts = marts.join(split, on=["hostname", "hour"], how="full", coalesce=True)
    truth = site["truth"].filter(pl.col("hostname") == host)
    joined = truth.join(marts, on=["hostname", "hour"], how="full", coalesce=True)
    assert joined.height == truth.height == marts.height == 31 * 24
    return joined.sort("hour")


def _assert_equal(joined: pl.DataFrame) -> None:
    for marts, truth in (("capacity", "capacity_gpu_hours"), ("allocated", "allocated_gpu_hours")):
        gap = (joined[marts] - joined[truth]).abs()
        assert gap.max() < 1e-9, joined.filter(gap >= 1e-9).head(5)
    for marts, truth in (
        ("split_allocated", "allocated_gpu_hours"),
        ("down", "down_gpu_hours"),
        ("idle", "idle_gpu_hours"),
    ):
        gap = (joined[marts] - joined[truth]).abs()
        assert gap.max() < 1e-6, joined.filter(gap >= 1e-6).head(5)
    assert joined["other"].abs().max() == 0.0


def test_repartitioned_node_equals_the_truth_hour_by_hour(site: dict) -> None:
    joined = _hourly(site, REPARTITIONED)
    _assert_equal(joined)
    before = joined.filter(pl.col("hour") < AT)["capacity"]
    after = joined.filter(pl.col("hour") >= AT)["capacity"]
    assert (before - 8.0).abs().max() < 1e-12  # 3g + 2g + 1g + 1g: 7/7 of each of 8 GPUs
    assert (after - 8 * 6 / 7).abs().max() < 1e-12  # 3g + 3g: 6/7
    assert joined.filter(pl.col("hour") >= AT)["allocated"].sum() > 0  # jobs ran on the new layout


def test_drained_node_equals_the_truth_hour_by_hour(site: dict) -> None:
    joined = _hourly(site, DRAINED)
    _assert_equal(joined)
    inside = joined.filter(
        (pl.col("hour") >= datetime(2026, 10, 8, 22)) & (pl.col("hour") < datetime(2026, 10, 11, 23))
    )
    assert (inside["allocated"] == 0).all() and (inside["down_gpu_hours"] == 8.0).all()
    drained_hours = (DRAIN[1] - DRAIN[0]).total_seconds() / 3600
    assert joined["down_gpu_hours"].sum() == pytest.approx(8 * drained_hours, abs=1e-9)


def test_cluster_and_chargeback_totals_equal_the_truth(site: dict) -> None:
    truth = site["truth"].select(pl.exclude("cluster", "hostname", "hour")).sum().row(0, named=True)
    idle = truth["idle_gpu_hours"] + truth["down_gpu_hours"]  # the cluster mart's infra idle holds down time
    cluster = read(site["database"], "SELECT * FROM marts.mart_cluster_monthly").row(0, named=True)
    assert cluster["capacity_gpu_hours"] == pytest.approx(truth["capacity_gpu_hours"], abs=1e-6)
    assert cluster["allocated_gpu_hours"] == pytest.approx(truth["allocated_gpu_hours"], abs=1e-6)
    assert cluster["infra_idle_gpu_hours"] == pytest.approx(idle, abs=1e-6)
    books = read(site["database"], "SELECT * FROM marts.mart_chargeback_reconciliation").row(0, named=True)
    rows = 31 * 24 * 4  # quantities are rounded to 1e-6 per row
    assert float(books["capacity_gpu_hours"]) == pytest.approx(truth["capacity_gpu_hours"], abs=rows * 1e-6)
    assert float(books["charged_gpu_hours"]) == pytest.approx(truth["allocated_gpu_hours"], abs=rows * 1e-6)
    assert float(books["idle_gpu_hours"]) == pytest.approx(truth["idle_gpu_hours"], abs=rows * 1e-6)
    assert float(books["down_gpu_hours"]) == pytest.approx(truth["down_gpu_hours"], abs=rows * 1e-6)
    assert truth["down_gpu_hours"] > 500
    assert books["capacity_balanced"]


def test_the_review_lists_the_repartition_with_its_hours(site: dict) -> None:
    review = (site["root"] / "sim" / "reports" / MONTH / "review.html").read_text()
    quality = re.sub(r"<[^>]+>", " ", review.split("Data quality", 1)[1])
    rows = re.findall(
        rf"sim\s+{REPARTITIONED}\s+(\d)\s+{LAYOUT_DIFFERENCE}\s+\S+\s+3g\.40gb\+3g\.40gb\s+371\s+2026-10-16 13:00:00",
        quality,
    )
    assert sorted(rows) == [str(gpu) for gpu in range(8)]
