"""Simulated hardware: the GPU models, the node layout, and its schedulable slots."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

GPUS_PER_NODE = 8
NODES_PER_SWITCH = 4
MIG_LAYOUT = ("3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb")
MIG_GI_IDS = (1, 5, 13, 14)  # GPU_I_IDs nvidia-smi gives this layout on an A100 80GB
MIG_MEMORY_MIB = {"1g.10gb": 9728, "2g.20gb": 19968, "3g.40gb": 40192}
MIG_SLICES = 7
# PCI buses of the eight GPUs on an HGX baseboard.
PCI_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


@dataclass(frozen=True)
class GpuModel:
    """A GPU model: rate key, driver name and memory."""

    gpu_model: str
    model_name: str
    memory_mib: int


MODELS = {
    "H100": GpuModel("H100", "NVIDIA H100 80GB HBM3", 81559),
    "H200": GpuModel("H200", "NVIDIA H200", 143771),
    "A100": GpuModel("A100", "NVIDIA A100-SXM4-80GB", 81920),
}


@dataclass(frozen=True)
class Node:
    """One 8-GPU node."""

    index: int
    hostname: str
    model: GpuModel
    mig_layout: tuple[str, ...] | None
    nvlink_domain: str
    switch_group: str
    # (gpu_i_id, profile) of a later MIG layout (simulate/node_events.py): its instances that
    # are not in mig_layout are slots too, after the node's first layout
    later_layout: tuple[tuple[int, str], ...] | None = None


@dataclass(frozen=True)
class Cluster:
    """The simulated cluster: a name and its nodes in hostname order."""

    name: str
    nodes: tuple[Node, ...]

    @property
    def n_gpus(self) -> int:
        return len(self.nodes) * GPUS_PER_NODE


def mig_fraction(profile: str) -> float:
    """A MIG profile's share of a GPU: its compute slices / 7 (``3g.40gb`` -> 3/7)."""
    return int(profile.split("g.", 1)[0]) / MIG_SLICES


def _model_counts(n_nodes: int, rng: np.random.Generator) -> list[tuple[str, bool]]:
    """(model, is_mig) per node: mostly H100, some H200 and A100, ~1 in 8 an A100 MIG node."""
    n_mig = max(1, round(n_nodes / 8)) if n_nodes >= 4 else 0
    rest = n_nodes - n_mig
    n_h200 = round(rest * rng.uniform(0.10, 0.22)) if rest >= 4 else 0
    n_a100 = round(rest * rng.uniform(0.08, 0.18)) if rest >= 6 else 0
    n_h100 = rest - n_h200 - n_a100
    return (
        [("H100", False)] * n_h100 + [("H200", False)] * n_h200 + [("A100", False)] * n_a100 + [("A100", True)] * n_mig
    )


def build_cluster(name: str, gpus: int, seed: int) -> Cluster:
    """Nodes ``gpu-001``.. with 8 GPUs each, enough for ``gpus`` (rounded up to whole nodes)."""
    if gpus < 1:
        raise ValueError(f"gpus must be positive, got {gpus}")
    rng = np.random.default_rng([seed, 1])
    n_nodes = math.ceil(gpus / GPUS_PER_NODE)
    nodes = tuple(
        Node(
            index=i,
            hostname=f"gpu-{i + 1:03d}",
            model=MODELS[model],
            mig_layout=MIG_LAYOUT if is_mig else None,
            nvlink_domain=f"nvl-{i + 1:03d}",
            switch_group=f"leaf-{i // NODES_PER_SWITCH + 1}",
        )
        for i, (model, is_mig) in enumerate(_model_counts(n_nodes, rng))
    )
    return Cluster(name=name, nodes=nodes)


@dataclass(frozen=True)
class Slot:
    """A schedulable device: a whole GPU or a MIG instance (same order as the inventory)."""

    node: int
    hostname: str
    gpu: int
    gi_id: int | None
    profile: str | None
    gpu_model: str


def slot_table(cluster: Cluster) -> tuple[Slot, ...]:
    """Every GPU or MIG instance, by node, GPU and instance."""
    out: list[Slot] = []
    for node in cluster.nodes:
        for gpu in range(GPUS_PER_NODE):
            layout = list(zip(MIG_GI_IDS, node.mig_layout, strict=True)) if node.mig_layout else [(None, None)]
            layout += [i for i in node.later_layout or () if i not in layout]
            for gi_id, profile in layout:
                out.append(Slot(node.index, node.hostname, gpu, gi_id, profile, node.model.gpu_model))
    return tuple(out)
