"""Slurm node records in the observed inventory: the recorded ``scontrol show node --oneliner``
outputs staged per hour (a snapshot holds from its read until the next; nothing before the
first), and their counts placed on cards where DCGM is silent (source ``slurm``)."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from config import EXAMPLE_CONFIG, load_config
from contracts.sources import OBSERVED_BY_DCGM as DCGM
from contracts.sources import OBSERVED_BY_KUBE as KUBE
from contracts.sources import OBSERVED_BY_SLURM as SLURM
from sources.slurm_nodes import parse_scontrol_nodes, read_scontrol_nodes_file
from transforms.intermediate.int_gpu_inventory_observed import (
    NOT_DECLARED,
    SCHEMA,
    difference_advice,
    hourly_inventory,
    inventory_differences,
)
from transforms.intermediate.inventory_counts import counts_observed
from transforms.staging.stg_slurm__node_capacity import stg_slurm__node_capacity

FIXTURES = Path(__file__).parents[1] / "fixtures" / "slurm" / "downtime"
DAY = date(2026, 12, 2)
T0 = datetime(2026, 12, 2)
T1 = T0 + timedelta(days=1)
MIG_LINE = "NodeName={host} State=MIXED Gres=gpu:a100:1,gpu:a100_3g.20gb:4 CfgTRES=cpu=8 Reason=none"


def _snapshot(moment: str, read_at: datetime, day: date = DAY, cluster: str = "c1") -> pl.DataFrame:
    rows, rejects = read_scontrol_nodes_file(FIXTURES / f"scontrol_node_{moment}.txt", cluster=cluster, read_at=read_at)
    assert rejects.is_empty()
    return rows.with_columns(day=pl.lit(day))


def _line(text: str, read_at: datetime, cluster: str = "alpha") -> pl.DataFrame:
    rows, rejects = parse_scontrol_nodes(text, source="nodes.txt", cluster=cluster, read_at=read_at)
    assert rejects.is_empty()
    return rows.with_columns(day=pl.lit(read_at.date()))


def test_a_recorded_snapshot_counts_its_gpus_from_the_hour_it_was_read() -> None:
    capacity = stg_slurm__node_capacity(_snapshot("idle", T0 + timedelta(hours=15, minutes=39)), T0, T1)
    assert capacity["hour"].to_list() == [T0 + timedelta(hours=h) for h in range(15, 24)]  # none before the read
    assert set(capacity["hostname"]) == {"localhost"} and set(capacity["n_advertised"]) == {8}
    assert capacity["gpu_i_profile"].is_null().all()


def test_a_drained_node_still_has_its_gpus_and_the_latest_snapshot_holds() -> None:
    earlier = _snapshot("idle", T0 - timedelta(hours=2), day=DAY - timedelta(days=1))
    drained = _snapshot("drained", T0 + timedelta(hours=6, minutes=30))
    mig = _line(MIG_LINE.format(host="localhost"), T0 + timedelta(hours=12)).with_columns(cluster=pl.lit("c1"))
    capacity = stg_slurm__node_capacity(pl.concat([earlier, drained, mig]), T0, T1)
    by_hour = capacity.group_by("hour").agg(pl.col("gpu_i_profile"), pl.col("n_advertised"))
    assert by_hour.height == 24  # the snapshot read the day before holds from midnight
    noon = capacity.filter(pl.col("hour") == T0 + timedelta(hours=11))
    assert noon.select("gpu_i_profile", "n_advertised").rows() == [(None, 8)]  # the drained node's GRES
    after = capacity.filter(pl.col("hour") == T0 + timedelta(hours=12)).sort("gpu_i_profile", nulls_last=False)
    assert after.select("gpu_i_profile", "n_advertised").rows() == [(None, 1), ("3g.20gb", 4)]


def test_a_saved_file_landed_on_several_days_counts_once() -> None:
    read_at = T0 - timedelta(days=3)
    same = [_snapshot("idle", read_at, day=DAY - timedelta(days=d)) for d in (0, 1, 2)]
    capacity = stg_slurm__node_capacity(pl.concat(same), T0, T1)
    assert capacity.height == 24 and set(capacity["n_advertised"]) == {8}


def test_nodes_without_gpus_or_not_yet_in_service_have_no_rows() -> None:
    text = "NodeName=cpu1 State=IDLE Gres=(null)\nNodeName=new1 State=FUTURE Gres=gpu:4\n"
    assert stg_slurm__node_capacity(_line(text, T0), T0, T1).is_empty()


def test_cloud_nodes_powered_down_have_no_gpus_and_powered_up_ones_do() -> None:
    states = ["IDLE+CLOUD+POWERED_DOWN", "IDLE+POWERING_DOWN", "IDLE*+POWER_DOWN", "IDLE+CLOUD", "MIXED+POWERING_UP"]
    text = "".join(f"NodeName=c{i} State={state} Gres=gpu:4\n" for i, state in enumerate(states))
    counted = stg_slurm__node_capacity(_line(text, T0), T0, T1)
    assert sorted(counted["hostname"].unique()) == ["c3", "c4"]


def _declared_four() -> tuple[pl.DataFrame, object, str]:
    """The example config's alpha inventory with gpu-001 declared with 4 whole GPUs."""
    config = load_config(EXAMPLE_CONFIG)
    declared = config.inventory_frame()
    declared = declared.filter((pl.col("hostname") != "gpu-001") | (pl.col("gpu") < 4))
    return declared, config, "gpu-001"


def _dcgm(host: str, hours: list[int]) -> pl.DataFrame:
    rows = [("alpha", host, 0, "GPU-0", "m", None, None, T0 + timedelta(hours=h), 30, DCGM) for h in hours]
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


def test_eight_gpus_in_the_gres_where_four_are_declared() -> None:
    declared, config, host = _declared_four()
    snapshot = _line(f"NodeName={host} State=IDLE Gres=gpu:h100:8(S:0-1)", T0)
    capacity = stg_slurm__node_capacity(snapshot, T0, T0 + timedelta(hours=2))
    dcgm = _dcgm(host, [1])  # DCGM reports the host in hour 1: it wins there
    slurm = counts_observed(
        declared, dcgm, capacity, T0, T0 + timedelta(hours=2), config.rates.mig_weight, SCHEMA, SLURM
    )
    assert set(slurm["hour"]) == {T0} and set(slurm["source"]) == {SLURM}
    assert sorted(slurm["gpu"]) == list(range(8)) and slurm["gpu_i_profile"].is_null().all()
    observed = pl.concat([dcgm, slurm])
    hourly = hourly_inventory(declared, observed, T0, T0 + timedelta(hours=2), config.rates.mig_weight)
    per_hour = hourly.filter(pl.col("hostname") == host).group_by("hour").agg(pl.col("gpu_fraction").sum())
    assert dict(per_hour.rows()) == pytest.approx({T0: 8.0, T0 + timedelta(hours=1): 4.0})
    differences = inventory_differences(declared, observed)
    assert differences.select("gpu", "declared", "observed_by", "hours").rows() == [
        (gpu, NOT_DECLARED, SLURM, 1) for gpu in range(4, 8)
    ]
    assert "is in its Slurm node's GRES" in difference_advice(differences.row(0, named=True))


def test_a_mig_gres_node_is_placed_as_whole_and_mig_cards_never_both() -> None:
    declared, config, host = _declared_four()
    capacity = stg_slurm__node_capacity(_line(MIG_LINE.format(host=host), T0), T0, T0 + timedelta(hours=1))
    slurm = counts_observed(declared, _dcgm(host, []), capacity, T0, T1, config.rates.mig_weight, SCHEMA, SLURM)
    cards = slurm.group_by("gpu").agg(pl.col("gpu_i_profile").sort(nulls_last=False)).sort("gpu").rows()
    assert cards == [(0, [None]), (1, ["3g.20gb", "3g.20gb"]), (2, ["3g.20gb", "3g.20gb"])]
    differences = inventory_differences(declared, slurm)
    assert differences.select("gpu", "observed", "observed_by").rows() == [
        (1, "3g.20gb+3g.20gb", SLURM),
        (2, "3g.20gb+3g.20gb", SLURM),
    ]


def test_kube_counts_come_before_slurm_counts_for_the_same_host_hour() -> None:
    declared, config, host = _declared_four()
    capacity = stg_slurm__node_capacity(_line(f"NodeName={host} State=IDLE Gres=gpu:8", T0), T0, T1)
    kube = counts_observed(declared, _dcgm(host, []), capacity.head(1), T0, T1, config.rates.mig_weight, SCHEMA, KUBE)
    slurm = counts_observed(declared, kube, capacity, T0, T1, config.rates.mig_weight, SCHEMA, SLURM)
    assert set(kube["hour"]) == {T0} and T0 not in set(slurm["hour"]) and slurm["hour"].n_unique() == 23
