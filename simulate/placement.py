"""Placement: a GPU request, and where it fits among a cluster's free slots."""

from __future__ import annotations

from dataclasses import dataclass

from simulate.hardware import Cluster, Node, slot_table


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
