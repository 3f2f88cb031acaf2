"""Kubernetes nodes' advertised GPUs: the node series landed as runs, the per-hour counts
(mixed and single MIG strategies, a re-partition inside an hour), and the cards they stand for
in the observed inventory where DCGM is silent."""

from __future__ import annotations

import json
from datetime import timedelta

import polars as pl
import pytest

from config import EXAMPLE_CONFIG, load_config
from config.kubernetes import KubernetesConfig
from contracts.sources import OBSERVED_BY_KUBE as KUBE_SOURCE
from sources.kube.landing import land
from sources.kube.node_runs import RAW_KUBE_NODE_RUNS_SCHEMA
from tests.unit.test_kube_landing import DAY, T0, long_of
from transforms.intermediate.int_gpu_inventory_observed import SCHEMA, hourly_inventory, inventory_differences
from transforms.intermediate.inventory_counts import counts_observed, place
from transforms.staging.stg_kube__node_capacity import stg_kube__node_capacity

STEP = 60
KUBE = KubernetesConfig()


def _cap(node: str, resource: str) -> dict[str, str]:
    return {"__name__": "kube_node_status_capacity", "node": node, "resource": resource, "unit": "integer"}


def _every(index: int, start: int, end: int, value: float) -> list[tuple[int, float, float]]:
    return [(index, t, value) for t in range(start, end, STEP)]


def _capacity(runs: pl.DataFrame, hours: int = 24) -> pl.DataFrame:
    return stg_kube__node_capacity(
        runs,
        T0,
        T0 + timedelta(hours=hours),
        STEP,
        capacity_metric="kube_node_status_capacity",
        labels_metric="kube_node_labels",
        gpu_resource="nvidia_com_gpu",
        mig_resource_prefix="nvidia_com_mig_",
    )


def test_node_series_land_as_runs_gpu_resources_only() -> None:
    series = [
        _cap("n1", "nvidia_com_gpu"),
        _cap("n1", "cpu"),
        {"__name__": "kube_node_status_condition", "node": "n1", "condition": "Ready", "status": "true"},
        {"__name__": "kube_node_status_condition", "node": "n1", "condition": "DiskPressure", "status": "true"},
        {"__name__": "kube_node_labels", "node": "n1", "label_nvidia_com_mig_strategy": "mixed", "label_os": "linux"},
        {"__name__": "kube_node_spec_unschedulable", "resource": "x"},  # no node label
    ]
    samples = _every(0, 0, 600, 8) + _every(1, 0, 600, 64) + _every(2, 0, 300, 1) + _every(2, 300, 600, 0)
    samples += _every(2, 900, 1200, 1)  # a gap of 5 steps: a new run
    samples += _every(3, 0, 600, 0) + _every(4, 0, 600, 1) + _every(5, 0, 120, 0)
    landing = land(long_of(series, samples), KUBE, "c", DAY, STEP)
    runs = landing.node_runs
    assert runs.schema == pl.Schema(RAW_KUBE_NODE_RUNS_SCHEMA)
    assert sorted(runs["metric"].unique()) == [
        "kube_node_labels",
        "kube_node_status_capacity",
        "kube_node_status_condition",
    ]
    ready = runs.filter(pl.col("metric") == "kube_node_status_condition").sort("first_ts")
    assert ready.select("value", "n_samples").rows() == [(1.0, 5), (0.0, 5), (1.0, 5)]
    assert ready["last_ts"][1] == T0 + timedelta(seconds=540)
    labels = runs.filter(pl.col("metric") == "kube_node_labels")["labels"].item()
    assert json.loads(labels) == {"label_nvidia_com_mig_strategy": "mixed"}
    assert landing.series.is_empty()  # node series are not pod series
    assert landing.quarantine.select("reason", "n_rows").rows() == [("node series without a node label", 2)]


def _runs(rows: list[tuple[str, str, dict, float, int, int]]) -> pl.DataFrame:
    """(metric, node, labels, value, first s, last s) -> raw.kube_node_runs rows."""
    return pl.DataFrame(
        [
            (
                "c",
                DAY,
                metric,
                node,
                json.dumps(labels, sort_keys=True),
                value,
                T0 + timedelta(seconds=a),
                T0 + timedelta(seconds=b),
                (b - a) // STEP + 1,
            )
            for metric, node, labels, value, a, b in rows
        ],
        schema=RAW_KUBE_NODE_RUNS_SCHEMA,
        orient="row",
    )


CAP = "kube_node_status_capacity"


def test_hourly_counts_take_the_layout_the_hour_ended_with() -> None:
    # 8 whole GPUs until 01:30, then re-partitioned: nvidia_com_gpu 0, 3g.40gb x 8 and 1g.10gb_me x 16
    runs = _runs(
        [
            (CAP, "n1", {"resource": "nvidia_com_gpu"}, 8, 0, 5340),
            (CAP, "n1", {"resource": "nvidia_com_gpu"}, 0, 5400, 10740),
            (CAP, "n1", {"resource": "nvidia_com_mig_3g_40gb"}, 8, 5400, 10740),
            (CAP, "n1", {"resource": "nvidia_com_mig_1g_10gb_me"}, 16, 5400, 10740),
            (CAP, "n1", {"resource": "cpu"}, 64, 0, 10740),
        ]
    )
    got = _capacity(runs, hours=3)
    rows = got.select(pl.col("hour").dt.hour(), "gpu_i_profile", "n_advertised").rows()
    assert rows == [(0, None, 8), (1, "1g.10gb+me", 16), (1, "3g.40gb", 8), (2, "1g.10gb+me", 16), (2, "3g.40gb", 8)]


def test_single_strategy_counts_mig_instances_of_the_labelled_product() -> None:
    labels = {"label_nvidia_com_mig_strategy": "single", "label_nvidia_com_gpu_product": "A100-SXM4-80GB-MIG-1g.10gb"}
    runs = _runs(
        [
            (CAP, "n1", {"resource": "nvidia_com_gpu"}, 56, 0, 3540),
            ("kube_node_labels", "n1", labels, 1, 0, 3540),
            (CAP, "n2", {"resource": "nvidia_com_gpu"}, 0, 0, 3540),  # device plugin not serving
        ]
    )
    assert _capacity(runs, hours=1).select("hostname", "gpu_i_profile", "n_advertised").rows() == [
        ("n1", "1g.10gb", 56)
    ]


def test_a_time_sliced_node_advertises_replicas_not_gpus() -> None:
    shared = {"label_nvidia_com_mig_strategy": "none", "label_nvidia_com_gpu_product": "NVIDIA-H100-80GB-HBM3-SHARED"}
    plain = {"label_nvidia_com_mig_strategy": "none", "label_nvidia_com_gpu_product": "NVIDIA-H100-80GB-HBM3"}
    runs = _runs(
        [
            (CAP, "n1", {"resource": "nvidia_com_gpu"}, 32, 0, 3540),  # 8 GPUs x 4 replicas
            ("kube_node_labels", "n1", shared, 1, 0, 3540),
            (CAP, "n2", {"resource": "nvidia_com_gpu"}, 8, 0, 3540),
            ("kube_node_labels", "n2", plain, 1, 0, 3540),
        ]
    )
    assert _capacity(runs, hours=1).select("hostname", "gpu_i_profile", "n_advertised").rows() == [("n2", None, 8)]


def _declared() -> tuple[pl.DataFrame, object]:
    config = load_config(EXAMPLE_CONFIG)
    return config.inventory_frame(), config


def test_place_keeps_declared_cards_and_packs_the_rest() -> None:
    weight = {"3g.40gb": 3 / 7, "2g.20gb": 2 / 7, "1g.10gb": 1 / 7}.get
    declared = {0: [(None, None)], 1: [(None, None)]}
    # as declared: the config's cards
    assert place(declared, ((None, 2),), weight) == declared
    # one GPU re-partitioned 3g+3g+1g: the whole card left goes MIG
    got = place(declared, ((None, 1), ("1g.10gb", 1), ("3g.40gb", 2)), weight)
    assert got == {0: [(None, None)], 1: [(0, "1g.10gb"), (1, "3g.40gb"), (2, "3g.40gb")]}
    # counts that divide evenly: the same layout on the fewest GPUs (7 x 1g.10gb each, not 14 GPUs)
    assert place(declared, (("1g.10gb", 14),), weight) == {g: [(i, "1g.10gb") for i in range(7)] for g in (0, 1)}
    # uneven counts: first fit by decreasing weight
    assert place({}, (("2g.20gb", 3), ("3g.40gb", 1)), weight) == {
        0: [(0, "2g.20gb"), (1, "2g.20gb"), (2, "3g.40gb")],
        1: [(0, "2g.20gb")],
    }
    # more than declared: new indices after the last
    assert sorted(place(declared, ((None, 3),), weight)) == [0, 1, 2]
    # fewer than declared: the card left over is not placed (it keeps the config's rows)
    assert place(declared, ((None, 1),), weight) == {0: [(None, None)]}


def _capacity_rows(host: str, hours: range, layout: list[tuple[str | None, int]]) -> pl.DataFrame:
    rows = [("sim", host, T0 + timedelta(hours=h), p, n) for h in hours for p, n in layout]
    return pl.DataFrame(
        rows,
        schema={
            "cluster": pl.String,
            "hostname": pl.String,
            "hour": pl.Datetime("us"),
            "gpu_i_profile": pl.String,
            "n_advertised": pl.Int32,
        },
        orient="row",
    )


def test_kube_fills_the_hours_dcgm_is_silent_and_dcgm_wins_where_it_reports() -> None:
    declared, config = _declared()
    whole = declared.filter(pl.col("gpu_i_profile").is_null())
    host = whole.row(0, named=True)["hostname"]
    cluster = whole.row(0, named=True)["cluster"]
    n = whole.filter(pl.col("hostname") == host).height
    end = T0 + timedelta(hours=4)
    # The node advertises its GPUs as 7 x 1g.10gb each, hours 0-3; DCGM reports GPU 0 whole in hour 3.
    capacity = _capacity_rows(host, range(4), [("1g.10gb", 7 * n)]).with_columns(cluster=pl.lit(cluster))
    dcgm = pl.DataFrame(
        [(cluster, host, 0, "GPU-x", "m", None, None, T0 + timedelta(hours=3), 30, "dcgm")], schema=SCHEMA, orient="row"
    )
    kube = counts_observed(declared, dcgm, capacity, T0, end, config.rates.mig_weight, SCHEMA, KUBE_SOURCE)
    assert kube["hour"].max() == T0 + timedelta(hours=2) and (kube["source"] == "kube").all()
    assert kube.height == 3 * 7 * n
    observed = pl.concat([dcgm, kube])
    hourly = hourly_inventory(declared, observed, T0, end, config.rates.mig_weight).filter(pl.col("hostname") == host)
    per_hour = hourly.group_by("hour", "gpu").agg(pl.col("gpu_fraction").sum(), pl.col("gpu_i_profile").n_unique())
    assert per_hour["gpu_fraction"].to_list() == pytest.approx([1.0] * (4 * n))  # never whole and MIG together
    hour3 = hourly.filter(pl.col("hour") == T0 + timedelta(hours=3))
    assert hour3["gpu_i_profile"].is_null().all()  # DCGM reported the host: the config's rows
    differences = inventory_differences(declared, observed)
    assert set(differences["observed_by"]) == {"kube"} and set(differences["hours"]) == {3}
    assert differences.height == n and set(differences["observed"]) == {"+".join(["1g.10gb"] * 7)}
