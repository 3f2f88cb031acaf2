"""The simulator's node events (simulate/node_events.py): a MIG re-partition and a drained node
change where jobs go, which instances report, the capacity truth, and the saved sacctmgr events."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from cardhours.cli import app
from simulate.run import SimulationResult, simulate
from sources.slurm_downtime import EVENTS, parse_records

START = date(2026, 10, 1)
DAYS = 4
STEP = 900
FIXTURE = Path(__file__).parents[1] / "fixtures" / "sacctmgr" / "show_event_22.05.txt"
AT = datetime(2026, 10, 3, 13)  # 13:00 of the window's middle day
DRAIN = (datetime(2026, 10, 2, 3, 17), datetime(2026, 10, 2, 12, 43))  # a quarter in + 3 h, a tenth (9 h) long


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    out = tmp_path_factory.mktemp("events")
    return simulate(
        out, gpus=32, days=DAYS, start=START, seed=5, step_seconds=STEP, repartition=True, drain=True, cluster="sim"
    )


def _samples(sim: SimulationResult) -> pl.DataFrame:
    assert sim.metrics_dir is not None
    return pl.read_parquet(sim.metrics_dir / "**" / "*.parquet", hive_partitioning=False)


def test_instances_report_only_while_they_exist(sim: SimulationResult) -> None:
    mig = _samples(sim).filter(pl.col("gpu_i_id").is_not_null())
    spans = mig.group_by("hostname", "gpu", "gpu_i_id", "gpu_i_profile").agg(
        pl.col("ts").min().alias("first"), pl.col("ts").max().alias("last"), pl.len()
    )
    last_step = datetime(2026, 10, 5) - timedelta(seconds=STEP)
    by_id = {(row["gpu_i_id"], row["gpu_i_profile"]): row for row in spans.filter(pl.col("gpu") == 0).to_dicts()}
    assert set(by_id) == {(1, "3g.40gb"), (5, "2g.20gb"), (13, "1g.10gb"), (14, "1g.10gb"), (2, "3g.40gb")}
    assert (by_id[1, "3g.40gb"]["first"], by_id[1, "3g.40gb"]["last"]) == (datetime(2026, 10, 1), last_step)
    for gone in ((5, "2g.20gb"), (13, "1g.10gb"), (14, "1g.10gb")):
        assert (by_id[gone]["first"], by_id[gone]["last"]) == (datetime(2026, 10, 1), AT - timedelta(seconds=STEP))
    assert (by_id[2, "3g.40gb"]["first"], by_id[2, "3g.40gb"]["last"]) == (AT, last_step)
    assert spans["len"].to_list() == [
        int(((row["last"] - row["first"]).total_seconds()) // STEP) + 1 for row in spans.to_dicts()
    ]  # no gap while it exists


def test_jobs_hold_an_instance_only_while_it_exists_and_never_a_drained_node(sim: SimulationResult) -> None:
    truth = pl.read_parquet(sim.truth_path).filter(pl.col("start_time").is_not_null())
    held = truth.explode("gpu_instances").with_columns(
        parts=pl.col("gpu_instances").str.split(":"),
        end=pl.col("end_time").fill_null(datetime(2026, 10, 5)),
    )
    held = held.with_columns(host=pl.col("parts").list.get(0), gi=pl.col("parts").list.get(2, null_on_oob=True))
    old = held.filter(pl.col("gi").is_in(["5", "13", "14"]))
    new = held.filter(pl.col("gi") == "2")
    assert old.height > 0 and (old["end"] <= AT).all()
    assert new.height > 0 and (new["start_time"] >= AT).all()
    drained = held.filter(pl.col("host") == "gpu-001")
    overlaps = drained.filter((pl.col("start_time") < DRAIN[1]) & (pl.col("end") > DRAIN[0]))
    assert drained.height > 0 and overlaps.height == 0


def test_capacity_truth_per_host_and_hour(sim: SimulationResult) -> None:
    assert sim.truth_capacity_path is not None
    truth = pl.read_parquet(sim.truth_capacity_path)
    assert truth.height == 4 * DAYS * 24
    total = pl.col("allocated_gpu_hours") + pl.col("down_gpu_hours") + pl.col("idle_gpu_hours")
    assert (truth.select((total - pl.col("capacity_gpu_hours")).abs().max()).item()) < 1e-9
    assert truth.select(pl.col("idle_gpu_hours").min()).item() > -1e-9
    mig = truth.filter(pl.col("hostname") == "gpu-004")
    assert (mig.filter(pl.col("hour") < AT)["capacity_gpu_hours"] - 8.0).abs().max() < 1e-12
    assert (mig.filter(pl.col("hour") >= AT)["capacity_gpu_hours"] - 48 / 7).abs().max() < 1e-12
    drained = truth.filter(pl.col("hostname") == "gpu-001")
    assert drained["down_gpu_hours"].sum() == pytest.approx(8 * (DRAIN[1] - DRAIN[0]).total_seconds() / 3600)
    first = drained.filter(pl.col("hour") == datetime(2026, 10, 2, 3)).row(0, named=True)
    assert first["down_gpu_hours"] == pytest.approx(8 * 43 / 60)
    assert truth.filter(pl.col("hostname") != "gpu-001")["down_gpu_hours"].sum() == 0.0


def test_drain_written_as_sacctmgr_prints_it(sim: SimulationResult) -> None:
    assert sim.events_path is not None and sim.events_path.name == "sacctmgr_events.txt"
    assert sim.events_path.parent == sim.sacct_path.parent
    lines = sim.events_path.read_text().splitlines()
    assert lines == [
        "Cluster|NodeName|TimeStart|TimeEnd|State|User|Reason",
        "sim|gpu-001|2026-10-02T03:17:00|2026-10-02T12:43:00|DRAIN|root(0)|bad GPU 3: replacing it",
    ]
    recorded = FIXTURE.read_text().splitlines()[1].split("|")  # Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User
    ours = lines[1].split("|")
    assert [bool(f) for f in ours] == [bool(f) for f in recorded]
    assert _shape(ours[2:4]) == _shape(recorded[2:4])  # YYYY-MM-DDTHH:MM:SS, as Slurm prints them
    assert (ours[4], ours[5]) == (recorded[4], recorded[6])  # DRAIN, root(0)
    # The file is what [clusters.slurm] events_file reads: no line quarantined.
    rows, bad = parse_records(sim.events_path.read_bytes(), EVENTS, source="f", cluster="", day_key="", has_header=True)
    assert bad.is_empty() and rows.height == 1
    assert 'events_file = "sacctmgr_events.txt"' in (sim.out_dir / "cardhours.toml").read_text()


def _shape(times: list[str]) -> list[str]:
    return [re.sub(r"\d", "9", t) for t in times]


def test_without_the_options_nothing_changes(tmp_path: Path) -> None:
    plain = simulate(tmp_path / "plain", gpus=32, days=1, start=START, seed=5, step_seconds=3600)
    inventory = pl.read_parquet(plain.inventory_path)
    assert plain.events_path is None and not (tmp_path / "plain" / "sacctmgr_events.txt").exists()
    assert inventory.filter(pl.col("gpu_i_id") == 2).height == 0


def test_the_command_refuses_a_repartition_without_a_mig_node(tmp_path: Path) -> None:
    args = ["simulate", "--out", str(tmp_path / "x"), "--gpus", "24", "--days", "1", "--repartition-mig"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "--repartition-mig needs a MIG node: use --gpus 32 or more" in " ".join(result.output.split())
    assert not (tmp_path / "x").exists()
