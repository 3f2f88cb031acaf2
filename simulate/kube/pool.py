"""The Kubernetes node pool of a simulated cluster, next to the Slurm nodes.

Five 8-GPU nodes, each serving one workload family (so the scenarios cannot crowd each
other out and the truth stays easy to read):

| node | GPUs | runs | dcgm-exporter scraped |
|---|---|---|---|
| kgpu-001 | H100 | the `chat-api` inference Deployment | honor_labels (pod/namespace/container) |
| kgpu-002, kgpu-003 | H100 | gang training jobs (Kueue ClusterQueue / Volcano) | 002 direct, 003 renamed |
| kgpu-004 | H100 | notebooks (`debug`) and `sandbox` pods | renamed (exported_pod, ...) |
| kmig-001 | A100, MIG 3g+2g+1g+1g | MIG-slice inference Deployments | direct |

"Renamed": Prometheus scraped the exporter with ``honor_labels: false``, so the workload
labels arrive as ``exported_pod``/``exported_namespace``/``exported_container`` and the
plain ``pod``/``namespace`` are the exporter's own pod.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from simulate.cluster import MIG_LAYOUT, MODELS, Cluster, Node, build_inventory, slot_table

Slot = tuple[str, int, int | None]  # hostname, gpu, MIG GPU instance id
POOL = (  # hostname, model, MIG, switch group, scrape
    ("kgpu-001", "H100", False, "kleaf-1", "direct"),
    ("kgpu-002", "H100", False, "kleaf-1", "direct"),
    ("kgpu-003", "H100", False, "kleaf-1", "exported"),
    ("kgpu-004", "H100", False, "kleaf-1", "exported"),
    ("kmig-001", "A100", True, "kleaf-1", "direct"),
)
SCRAPE_JOB = {"direct": "gpu-metrics", "exported": "dcgm-exporter"}
EXPORTER_NAMESPACE = "gpu-operator"
INVENTORY_SEED_SALT = 0x6B75_6265  # "kube": other UUIDs than the Slurm nodes'


def kube_nodes(first_index: int) -> tuple[Node, ...]:
    """The pool's nodes, numbered after the Slurm nodes."""
    return tuple(
        Node(
            index=first_index + i,
            hostname=host,
            model=MODELS[model],
            mig_layout=MIG_LAYOUT if mig else None,
            nvlink_domain=f"knvl-{i + 1:03d}",
            switch_group=switch,
        )
        for i, (host, model, mig, switch, _) in enumerate(POOL)
    )


def scrape_style(hostname: str) -> str:
    """``direct`` or ``exported``: how this node's dcgm-exporter series carry the workload."""
    return next(style for host, *_, style in POOL if host == hostname)


def kube_inventory(cluster: str, seed: int) -> pl.DataFrame:
    """inventory.parquet rows of the pool (docs/design.md)."""
    return build_inventory(Cluster(cluster, kube_nodes(0)), seed ^ INVENTORY_SEED_SALT)


@dataclass
class SlotPool:
    """Slots of some nodes and when each becomes free (seconds from the window start)."""

    slots: dict[Slot, str | None]  # slot -> MIG profile (None for a whole GPU)
    free_at: dict[Slot, int]

    @classmethod
    def of(cls, hosts: tuple[str, ...]) -> SlotPool:
        table = slot_table(Cluster("kube", kube_nodes(0)))
        slots = {(s.hostname, s.gpu, s.gi_id): s.profile for s in table if s.hostname in hosts}
        return cls(slots, dict.fromkeys(slots, 0))

    def free(self, t: int, profile: str | None = None, host: str | None = None) -> list[Slot]:
        """Slots free at ``t`` with this profile (None: whole GPUs), optionally on one host."""
        return [
            s for s, p in self.slots.items() if p == profile and self.free_at[s] <= t and (host is None or s[0] == host)
        ]

    def hosts(self) -> list[str]:
        return sorted({s[0] for s in self.slots})

    def hold(self, slots: list[Slot], until: int | None) -> None:
        """Mark slots busy until ``until`` (None: past the window end)."""
        for slot in slots:
            self.free_at[slot] = until if until is not None else 1 << 62

    def fit(self, t: int, sizes: list[int], profile: str | None = None) -> list[list[Slot]] | None:
        """Slots for pods of these sizes, each pod on one host, all free at ``t``; or None."""
        free = {host: self.free(t, profile, host) for host in self.hosts()}
        out: list[list[Slot]] = []
        for size in sorted(sizes, reverse=True):
            fitting = [h for h in free if len(free[h]) >= size]
            if not fitting:
                return None
            host = min(fitting, key=lambda h: len(free[h]))  # best fit
            out.append(free[host][:size])
            free[host] = free[host][size:]
        return out

    def earliest(self, t: int, sizes: list[int], profile: str | None = None) -> tuple[int, list[list[Slot]]] | None:
        """The first time at or after ``t`` when ``fit`` succeeds, and its slots (None: never)."""
        for moment in sorted({t, *(f for f in self.free_at.values() if t < f < 1 << 62)}):
            placed = self.fit(moment, sizes, profile)
            if placed is not None:
                return moment, placed
        return None
