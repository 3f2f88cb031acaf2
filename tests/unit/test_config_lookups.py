"""config: cluster lookup, the accounts/namespaces/inventory frames and metric-name overrides."""

from __future__ import annotations

import polars as pl
import pytest

from config import (
    ACCOUNTS_SCHEMA,
    EXAMPLE_CONFIG,
    INVENTORY_SCHEMA,
    NAMESPACES_SCHEMA,
    Config,
    load_config,
    parse_config,
)
from contracts.exporters import get_exporter
from tests.unit.config_cases import PROM, append, example, put


def test_cluster_lookup() -> None:
    config = load_config(EXAMPLE_CONFIG)
    assert config.cluster("alpha").name == "alpha"
    with pytest.raises(KeyError, match="unknown cluster 'beta'; configured: alpha"):
        config.cluster("beta")


def _two_clusters() -> Config:
    return parse_config(example(append("clusters", lambda d: {**d["clusters"][0], "name": "beta"})))


def test_accounts_frame_one_row_per_cluster_and_applicable_mapping() -> None:
    frame = _two_clusters().accounts_frame()
    assert frame.schema == ACCOUNTS_SCHEMA
    assert frame.select("cluster", "account").rows() == [
        ("alpha", "vis-train"),
        ("alpha", "nlp-pretrain"),
        ("alpha", "search-infer"),
        ("beta", "vis-train"),
        ("beta", "nlp-pretrain"),  # search-infer is limited to alpha
    ]
    assert frame.row(2, named=True) == {
        "cluster": "alpha",
        "account": "search-infer",
        "department": "search",
        "department_name": "Search Ranking",
        "division": "product",
        "division_name": "Product",
    }


def test_namespaces_frame() -> None:
    frame = _two_clusters().namespaces_frame()
    assert frame.schema == NAMESPACES_SCHEMA
    assert frame.rows() == [
        ("alpha", "search-serving", "search", "Search Ranking", "product", "Product"),
        ("beta", "search-serving", "search", "Search Ranking", "product", "Product"),
    ]


def test_inventory_frame_whole_gpus_and_mig_instances() -> None:
    frame = load_config(EXAMPLE_CONFIG).inventory_frame()
    assert frame.schema == INVENTORY_SCHEMA
    assert frame.height == 12 * 8 + 2 * 8 * 4
    whole = frame.filter(pl.col("gpu_model") == "H100")
    assert whole["gpu_i_id"].null_count() == whole.height == 96
    assert whole["gpu_fraction"].unique().to_list() == [1.0]
    assert whole["memory_mib"].unique().to_list() == [81559]
    assert whole.filter(pl.col("hostname") == "gpu-012")["gpu"].to_list() == list(range(8))
    one_gpu = frame.filter((pl.col("hostname") == "gpu-014") & (pl.col("gpu") == 7))
    assert one_gpu.select("gpu_i_id", "gpu_i_profile", "memory_mib", "switch_group").rows() == [
        (0, "3g.40gb", 40960, "leaf-2"),
        (1, "2g.20gb", 20480, "leaf-2"),
        (2, "1g.10gb", 10240, "leaf-2"),
        (3, "1g.10gb", 10240, "leaf-2"),
    ]
    assert one_gpu["gpu_fraction"].to_list() == pytest.approx([3 / 7, 2 / 7, 1 / 7, 1 / 7])
    assert sorted(frame["hostname"].unique()) == [f"gpu-{n:03d}" for n in range(1, 15)]


def test_prometheus_metric_name_overrides() -> None:
    config = parse_config(example(put(f"{PROM}.metric_names", {"DCGM_FI_PROF_SM_ACTIVE": "site_sm_active"})))
    cluster = config.cluster("alpha")
    assert cluster.metrics.exporter == "dcgm"
    assert cluster.prometheus is not None
    site = get_exporter(cluster.metrics.exporter).renamed(cluster.prometheus.metric_names)
    assert site.metric_signals["site_sm_active"] == "sm_active"
    assert site.metric_signals["DCGM_FI_DEV_GPU_UTIL"] == "gpu_util"
    assert "DCGM_FI_PROF_SM_ACTIVE" not in site.metric_signals
    with pytest.raises(KeyError, match="DCGM_FI_NOPE"):
        site.renamed({"DCGM_FI_NOPE": "x"})
