"""Kubernetes node series through the real Prometheus of conftest.py: the advertised GPUs land as
runs, count per hour as the simulator wrote them, and stand for the MIG node's cards where DCGM is
silent (its config declares it whole); the node conditions give the simulator's downtime."""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest

from config import load_config
from contracts.capacity_states import DOWNTIME_INTERVAL
from contracts.sources import OBSERVED_BY_KUBE as KUBE
from simulate.cluster import GPUS_PER_NODE, MIG_LAYOUT
from simulate.kube.nodes import NODE_EVENTS
from simulate.run import SimulationResult
from sources.kube.landing import Landing
from tests.integration.kube.cases import STEP, T0, T1
from tests.integration.kube.reading import land_days
from transforms.intermediate.int_gpu_inventory_observed import SCHEMA, hourly_inventory, inventory_differences
from transforms.intermediate.inventory_counts import counts_observed
from transforms.staging.stg_kube__node_capacity import stg_kube__node_capacity
from transforms.staging.stg_kube__node_downtime import stg_kube__node_downtime

pytestmark = [pytest.mark.integration]

MIG_HOST = "kmig-001"


@pytest.fixture(scope="module")
def landings(cluster) -> list[Landing]:
    return land_days(cluster)


@pytest.fixture(scope="module")
def capacity(cluster, landings: list[Landing]) -> pl.DataFrame:
    runs = pl.concat([landing.node_runs for landing in landings])
    kube = cluster.kubernetes
    return stg_kube__node_capacity(
        runs,
        T0,
        T1,
        STEP,
        capacity_metric=kube.node_metric_names.node_capacity,
        labels_metric=kube.node_metric_names.node_labels,
        gpu_resource=kube.gpu_resource,
        mig_resource_prefix=kube.mig_resource_prefix,
    )


def test_every_pool_node_advertises_its_gpus_every_hour(capacity: pl.DataFrame) -> None:
    hours = int((T1 - T0).total_seconds() // 3600)
    per_node = capacity.group_by("hostname").agg(pl.col("hour").n_unique())
    assert per_node.height == 5 and (per_node["hour"] == hours).all()
    whole = capacity.filter(pl.col("hostname") != MIG_HOST)
    assert whole["gpu_i_profile"].is_null().all() and (whole["n_advertised"] == GPUS_PER_NODE).all()
    mig = capacity.filter(pl.col("hostname") == MIG_HOST)
    want = {p: MIG_LAYOUT.count(p) * GPUS_PER_NODE for p in set(MIG_LAYOUT)}
    assert dict(mig.group_by("gpu_i_profile").agg(pl.col("n_advertised").max()).rows()) == want
    assert mig["gpu_i_profile"].is_not_null().all()  # nvidia_com_gpu = 0 on the mixed-strategy node


def test_kube_capacity_stands_for_the_cards_dcgm_does_not_report(sim: SimulationResult, capacity: pl.DataFrame) -> None:
    config = load_config(sim.config_path)
    declared = config.inventory_frame()
    declared = declared.filter(pl.col("hostname") != MIG_HOST).vstack(  # the MIG node declared whole
        declared.filter(
            (pl.col("hostname") == MIG_HOST) & (pl.col("gpu_i_id") == pl.col("gpu_i_id").min())
        ).with_columns(gpu_i_id=None, gpu_i_profile=None, gpu_fraction=1.0)
    )
    no_dcgm = pl.DataFrame(schema=SCHEMA)
    weight = config.rates.mig_weight
    observed = counts_observed(declared, no_dcgm, capacity, T0, T1, weight, SCHEMA, KUBE)
    hourly = hourly_inventory(declared, observed, T0, T1, weight)
    mig = hourly.filter(pl.col("hostname") == MIG_HOST)
    assert mig["gpu_i_profile"].is_not_null().all()
    per_card = mig.group_by("gpu", "hour").agg(
        pl.col("gpu_fraction").sum(), pl.col("gpu_i_profile").sort().str.join("+")
    )
    assert per_card.height == GPUS_PER_NODE * 48
    assert per_card["gpu_fraction"].to_list() == pytest.approx([1.0] * per_card.height)
    assert set(per_card["gpu_i_profile"]) == {"+".join(sorted(MIG_LAYOUT))}
    differences = inventory_differences(declared, observed)
    assert set(differences["hostname"]) == {MIG_HOST} and set(differences["observed_by"]) == {"kube"}
    assert (differences["hours"] == 48).all() and differences.height == GPUS_PER_NODE


def test_node_conditions_are_the_simulated_downtime(cluster, landings: list[Landing]) -> None:
    kube = cluster.kubernetes
    days = [
        stg_kube__node_downtime(
            landing.node_runs,
            T0 + timedelta(days=i),
            T0 + timedelta(days=i + 1),
            STEP,
            condition_metric=kube.node_metric_names.node_condition,
            unschedulable_metric=kube.node_metric_names.node_unschedulable,
        )
        for i, landing in enumerate(landings)
    ]
    got = pl.concat(days)
    assert got.schema == pl.Schema(DOWNTIME_INTERVAL)
    reasons = {"not_ready": "NotReady", "cordoned": "cordoned"}
    want = [
        (node, T0 + timedelta(seconds=a), T0 + timedelta(seconds=b), reasons[kind]) for node, kind, a, b in NODE_EVENTS
    ]
    rows = got.select("hostname", "start_ts", "end_ts", "reason").rows()
    assert sorted(rows) == sorted(want)  # the events start and end on the scrape grid: exact
    assert set(got["source"]) == {"kube_node_condition"} and got["gpu"].is_null().all()
