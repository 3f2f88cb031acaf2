"""The simulated hardware as the outside sees it: inventory rows and the config's node groups."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from contracts import hostlist
from simulate.hardware import GPUS_PER_NODE, MIG_MEMORY_MIB, PCI_BUSES, Cluster, Node, slot_table

INVENTORY_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "uuid": pl.String(),
    "pci_bus_id": pl.String(),
    "device": pl.String(),
    "model_name": pl.String(),
    "gpu_model": pl.String(),
    "memory_mib": pl.Int64(),
    "gpu_i_id": pl.Int16(),
    "gpu_i_profile": pl.String(),
    "nvlink_domain": pl.String(),
    "switch_group": pl.String(),
}


@dataclass(frozen=True)
class NodeGroup:
    """A run of identical nodes, as the config's ``[[clusters.inventory.node_groups]]``."""

    hosts: str
    gpu_model: str
    model_name: str
    gpus_per_node: int
    gpu_memory_mib: int
    switch_group: str
    nvlink_domain: str | None
    mig_layout: tuple[str, ...] | None


def _uuid(rng: np.random.Generator) -> str:
    h = rng.integers(0, 256, size=16, dtype=np.uint8).tobytes().hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def build_inventory(cluster: Cluster, seed: int) -> pl.DataFrame:
    """One row per slot, columns as docs/design.md ``inventory.parquet``; MIG instances
    share their GPU's uuid and bus id and carry the instance's memory."""
    rng = np.random.default_rng([seed, 11])
    uuids: dict[tuple[int, int], str] = {}
    rows = []
    for slot in slot_table(cluster):
        node = cluster.nodes[slot.node]
        if (slot.node, slot.gpu) not in uuids:
            uuids[slot.node, slot.gpu] = _uuid(rng)
        memory = MIG_MEMORY_MIB[slot.profile] if slot.profile else node.model.memory_mib
        rows.append(
            (
                cluster.name,
                slot.hostname,
                slot.gpu,
                uuids[slot.node, slot.gpu],
                f"00000000:{PCI_BUSES[slot.gpu]:02X}:00.0",
                f"nvidia{slot.gpu}",
                node.model.model_name,
                node.model.gpu_model,
                memory,
                slot.gi_id,
                slot.profile,
                node.nvlink_domain,
                node.switch_group,
            )
        )
    return pl.DataFrame(rows, schema=INVENTORY_SCHEMA, orient="row")


def node_groups(cluster: Cluster) -> list[NodeGroup]:
    """Runs of consecutive identical nodes within one switch group."""
    runs: list[list[Node]] = []
    for node in cluster.nodes:
        prev = runs[-1][-1] if runs else None
        if prev and (prev.model, prev.mig_layout, prev.switch_group) == (
            node.model,
            node.mig_layout,
            node.switch_group,
        ):
            runs[-1].append(node)
        else:
            runs.append([node])
    return [_group(run) for run in runs]


def _group(nodes: list[Node]) -> NodeGroup:
    first = nodes[0]
    domains = {n.nvlink_domain for n in nodes}
    return NodeGroup(
        hosts=hostlist.compress(n.hostname for n in nodes),
        gpu_model=first.model.gpu_model,
        model_name=first.model.model_name,
        gpus_per_node=GPUS_PER_NODE,
        gpu_memory_mib=first.model.memory_mib,
        switch_group=first.switch_group,
        nvlink_domain=domains.pop() if len(domains) == 1 else None,
        mig_layout=first.mig_layout,
    )
