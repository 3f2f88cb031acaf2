"""Simulated hardware: the node layout, the inventory frame, and where a GPU request fits."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from cardhours import hostlist

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


@dataclass(frozen=True)
class Cluster:
    """The simulated cluster: a name and its nodes in hostname order."""

    name: str
    nodes: tuple[Node, ...]

    @property
    def n_gpus(self) -> int:
        return len(self.nodes) * GPUS_PER_NODE


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
        [("H100", False)] * n_h100
        + [("H200", False)] * n_h200
        + [("A100", False)] * n_a100
        + [("A100", True)] * n_mig
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
            layout = zip(MIG_GI_IDS, node.mig_layout, strict=True) if node.mig_layout else [(None, None)]
            for gi_id, profile in layout:
                out.append(Slot(node.index, node.hostname, gpu, gi_id, profile, node.model.gpu_model))
    return tuple(out)


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
        rows.append((
            cluster.name, slot.hostname, slot.gpu, uuids[slot.node, slot.gpu],
            f"00000000:{PCI_BUSES[slot.gpu]:02X}:00.0", f"nvidia{slot.gpu}", node.model.model_name,
            node.model.gpu_model, memory, slot.gi_id, slot.profile, node.nvlink_domain, node.switch_group,
        ))
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


# --- placement ---------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """What a job asks for: whole GPUs on one node, whole nodes, or one MIG instance."""

    gpus: int  # whole GPUs in total; 1 for a MIG request
    nodes: int  # whole nodes for a multi-node request, else 1
    models: tuple[str, ...]  # acceptable gpu_model values, in order of preference
    mig_profile: str | None = None


class FreeSlots:
    """The free slots of each node, and the placement rules (pack first, then topology)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.slots = slot_table(cluster)
        self.free: list[set[int]] = [set() for _ in cluster.nodes]
        for i, slot in enumerate(self.slots):
            self.free[slot.node].add(i)
        self.size = [len(f) for f in self.free]
        self.whole: dict[str, list[Node]] = {}
        for node in cluster.nodes:
            if node.mig_layout is None:
                self.whole.setdefault(node.model.gpu_model, []).append(node)
        self.mig_nodes = [n for n in cluster.nodes if n.mig_layout is not None]

    def copy(self) -> FreeSlots:
        other = object.__new__(FreeSlots)
        other.__dict__.update(self.__dict__)
        other.free = [set(f) for f in self.free]
        return other

    def take(self, ids: tuple[int, ...]) -> None:
        for i in ids:
            self.free[self.slots[i].node].remove(i)

    def release(self, ids: tuple[int, ...]) -> None:
        for i in ids:
            self.free[self.slots[i].node].add(i)

    def eligible_nodes(self, request: Request) -> frozenset[int]:
        """Indices of the nodes a request may be placed on."""
        if request.mig_profile is not None:
            return frozenset(n.index for n in self.mig_nodes)
        return frozenset(n.index for m in request.models for n in self.whole.get(m, []))

    def place(self, request: Request, blocked: frozenset[int] = frozenset()) -> tuple[int, ...] | None:
        """Slot ids for the request among free slots not in ``blocked``, or None."""
        if request.mig_profile is not None:
            return self._place_mig(request.mig_profile, blocked)
        if request.nodes > 1:
            return self._place_nodes(request, blocked)
        return self._place_gpus(request, blocked)

    def _usable(self, node: Node, blocked: frozenset[int]) -> set[int]:
        free = self.free[node.index]
        return free - blocked if blocked else free

    def _place_gpus(self, request: Request, blocked: frozenset[int]) -> tuple[int, ...] | None:
        best: set[int] | None = None  # best fit: the node with the fewest usable GPUs that suffice
        for model in request.models:
            for node in self.whole.get(model, []):
                if len(self.free[node.index]) < request.gpus:
                    continue
                usable = self._usable(node, blocked)
                if len(usable) >= request.gpus and (best is None or len(usable) < len(best)):
                    best = usable
        return tuple(sorted(best)[: request.gpus]) if best is not None else None

    def _place_nodes(self, request: Request, blocked: frozenset[int]) -> tuple[int, ...] | None:
        for model in request.models:
            idle = [n for n in self.whole.get(model, []) if len(self._usable(n, blocked)) == self.size[n.index]]
            if len(idle) < request.nodes:
                continue
            by_switch: dict[str, list[Node]] = {}
            for node in idle:
                by_switch.setdefault(node.switch_group, []).append(node)
            fitting = [g for g in by_switch.values() if len(g) >= request.nodes]
            if fitting:
                chosen = min(fitting, key=len)[: request.nodes]
            else:
                spread = sorted(by_switch.values(), key=len, reverse=True)
                chosen = [n for group in spread for n in group][: request.nodes]
            return tuple(sorted(i for n in chosen for i in self.free[n.index]))
        return None

    def _place_mig(self, profile: str, blocked: frozenset[int]) -> tuple[int, ...] | None:
        best: tuple[int, int] | None = None  # (free instances left on that GPU, slot id)
        for node in self.mig_nodes:
            candidates = [i for i in self._usable(node, blocked) if self.slots[i].profile == profile]
            if not candidates:
                continue
            free_per_gpu: dict[int, int] = {}
            for i in self.free[node.index]:
                free_per_gpu[self.slots[i].gpu] = free_per_gpu.get(self.slots[i].gpu, 0) + 1
            for i in candidates:
                key = (free_per_gpu[self.slots[i].gpu], i)
                best = key if best is None or key < best else best
        return (best[1],) if best is not None else None
