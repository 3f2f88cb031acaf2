"""The simulated hardware: node layout, inventory frame, placement rules, written config."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import polars as pl
import pytest

from config import FlagsConfig, load_config
from contracts import hostlist
from simulate.cluster import (
    INVENTORY_SCHEMA,
    MIG_LAYOUT,
    FreeSlots,
    Request,
    build_cluster,
    build_inventory,
    mig_fraction,
    node_groups,
    slot_table,
)
from simulate.config_writer import write_config
from simulate.jobs import UNMAPPED_ACCOUNT, build_org

UUID = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
PCI = re.compile(r"^00000000:[0-9A-F]{2}:00\.0$")


def test_gpu_count_rounds_up_to_whole_nodes() -> None:
    cluster = build_cluster("c", 20, seed=1)
    assert [n.hostname for n in cluster.nodes] == ["gpu-001", "gpu-002", "gpu-003"]
    assert cluster.n_gpus == 24
    assert all(n.mig_layout is None for n in cluster.nodes)  # fewer than 4 nodes: no MIG node


def test_inventory_rows_columns_and_mig_instances() -> None:
    cluster = build_cluster("c", 128, seed=3)
    inv = build_inventory(cluster, seed=3)
    assert inv.schema == pl.Schema(INVENTORY_SCHEMA)
    mig_nodes = [n for n in cluster.nodes if n.mig_layout]
    assert len(cluster.nodes) == 16 and 1 <= len(mig_nodes) <= 3
    assert inv.height == (16 - len(mig_nodes)) * 8 + len(mig_nodes) * 8 * len(MIG_LAYOUT)
    assert set(inv["gpu_model"]) <= {"H100", "H200", "A100"} and "H100" in set(inv["gpu_model"])
    mig = inv.filter(pl.col("gpu_i_id").is_not_null())
    per_gpu = mig.group_by("hostname", "gpu").agg(pl.col("gpu_i_profile"), pl.col("gpu_i_id").n_unique().alias("ids"))
    assert per_gpu.height == len(mig_nodes) * 8
    assert all(sorted(p) == sorted(MIG_LAYOUT) for p in per_gpu["gpu_i_profile"]) and set(per_gpu["ids"]) == {4}
    assert set(mig["gpu_model"]) == {"A100"}
    whole = inv.filter(pl.col("gpu_i_id").is_null())
    assert whole["gpu_i_profile"].null_count() == whole.height
    expected_memory = {"H100": 81559, "H200": 143771, "A100": 81920}
    assert all(expected_memory[m] == mem for m, mem in whole.select("gpu_model", "memory_mib").iter_rows())
    assert (mig["memory_mib"] < 81920).all()


def test_uuid_and_pci_unique_per_gpu() -> None:
    inv = build_inventory(build_cluster("c", 64, seed=2), seed=2)
    gpus = inv.select("hostname", "gpu", "uuid", "pci_bus_id", "device").unique()
    assert gpus.height == 64  # MIG instances share their GPU's uuid and bus id
    assert gpus["uuid"].n_unique() == 64
    assert all(UUID.match(u) for u in gpus["uuid"]) and all(PCI.match(p) for p in gpus["pci_bus_id"])
    per_node = gpus.group_by("hostname").agg(pl.col("pci_bus_id").n_unique(), pl.col("device").n_unique())
    assert set(per_node["pci_bus_id"]) == {8} and set(per_node["device"]) == {8}
    assert set(inv.group_by("hostname").agg(pl.col("nvlink_domain").n_unique())["nvlink_domain"]) == {1}
    assert inv.select("hostname", "switch_group").unique().group_by("switch_group").len()["len"].max() == 4


def test_inventory_deterministic_by_seed() -> None:
    a = build_inventory(build_cluster("c", 64, seed=7), seed=7)
    b = build_inventory(build_cluster("c", 64, seed=7), seed=7)
    c = build_inventory(build_cluster("c", 64, seed=8), seed=8)
    assert a.equals(b)
    assert not set(a["uuid"]) & set(c["uuid"])


def test_slot_table_follows_inventory_rows() -> None:
    cluster = build_cluster("c", 64, seed=4)
    inv = build_inventory(cluster, seed=4)
    assert [(s.hostname, s.gpu, s.gi_id, s.profile) for s in slot_table(cluster)] == inv.select(
        "hostname", "gpu", "gpu_i_id", "gpu_i_profile"
    ).rows()


def test_node_groups_cover_every_host_once() -> None:
    cluster = build_cluster("c", 256, seed=5)
    groups = node_groups(cluster)
    hosts = [h for g in groups for h in hostlist.expand(g.hosts)]
    assert hosts == [n.hostname for n in cluster.nodes]
    by_host = {n.hostname: n for n in cluster.nodes}
    for group in groups:
        for host in hostlist.expand(group.hosts):
            node = by_host[host]
            assert (node.model.gpu_model, node.mig_layout, node.switch_group) == (
                group.gpu_model,
                group.mig_layout,
                group.switch_group,
            )


def test_mig_fraction() -> None:
    assert mig_fraction("3g.40gb") == pytest.approx(3 / 7)
    assert mig_fraction("1g.10gb") == pytest.approx(1 / 7)


def _two_h100_nodes() -> FreeSlots:
    return FreeSlots(build_cluster("c", 16, seed=1))


def test_placement_packs_single_node_jobs() -> None:
    free = _two_h100_nodes()
    first = free.place(Request(3, 1, ("H100",)))
    assert first == (0, 1, 2)
    free.take(first)
    free.take((8,))  # one GPU busy on node 2: node 1 (5 free) is still the tighter fit for 4
    assert free.place(Request(4, 1, ("H100",))) == (3, 4, 5, 6)
    assert free.place(Request(6, 1, ("H100",))) == (9, 10, 11, 12, 13, 14)
    assert free.place(Request(8, 1, ("H100",))) is None
    assert free.place(Request(1, 1, ("H200",))) is None
    assert free.place(Request(2, 1, ("H100",)), blocked=frozenset(range(3, 16))) is None


def test_placement_multi_node_takes_whole_idle_nodes_in_one_switch_group() -> None:
    cluster = build_cluster("c", 256, seed=5)
    free = FreeSlots(cluster)
    model = cluster.nodes[0].model.gpu_model
    free.take((0,))  # gpu-001 is no longer idle
    slots = free.place(Request(16, 2, (model,)))
    assert slots is not None and len(slots) == 16
    nodes = {free.slots[i].node for i in slots}
    assert 0 not in nodes and len(nodes) == 2
    assert len({cluster.nodes[n].switch_group for n in nodes}) == 1


def test_placement_mig_one_instance_of_the_profile() -> None:
    cluster = build_cluster("c", 32, seed=1)
    free = FreeSlots(cluster)
    got = free.place(Request(1, 1, ("A100",), "2g.20gb"))
    assert got is not None and len(got) == 1 and free.slots[got[0]].profile == "2g.20gb"
    free.take(got)
    nxt = free.place(Request(1, 1, ("A100",), "1g.10gb"))
    assert nxt is not None and free.slots[nxt[0]].gpu == free.slots[got[0]].gpu  # packs onto the used GPU


def test_written_config_loads_and_leaves_one_account_unmapped(tmp_path: Path) -> None:
    cluster = build_cluster("sim", 128, seed=3)
    org = build_org(3)
    config = load_config(write_config(tmp_path / "cardhours.toml", cluster, org, metrics_path="metrics"))
    assert config.capacity_gpus("sim") == pytest.approx(128.0)
    assert config.cluster("sim").metrics.path == tmp_path / "metrics"
    assert config.cluster("sim").slurm.sacct_file == tmp_path / "sacct.txt"
    mapped = set(config.accounts_frame()["account"])
    assert UNMAPPED_ACCOUNT not in mapped
    assert mapped == {a.name for a in org.accounts} - {UNMAPPED_ACCOUNT}
    assert set(config.org.divisions) == {"research", "product"} and 4 <= len(config.org.departments) <= 6
    assert config.rates.gpu_hour == {"H100": 2.50, "H200": 3.20, "A100": 1.40}
    assert 0 < sum(config.quotas.departments.values()) <= 128
    assert config.flags == FlagsConfig()
    written = tomllib.loads((tmp_path / "cardhours.toml").read_text())["flags"]
    assert list(written) == list(FlagsConfig.model_fields)  # every threshold shown, to adjust
    hosts = set(config.cluster("sim").hostnames())
    assert hosts == {n.hostname for n in cluster.nodes}
