"""kube-state-metrics node series of the simulated pool: advertised GPUs, GPU feature discovery
labels, the Ready condition and the cordon flag (as segments, like the pod series).

Whole-GPU nodes advertise ``nvidia_com_gpu`` = 8. The MIG node runs the ``mixed`` strategy: it
advertises ``nvidia_com_gpu`` = 0 and one ``nvidia_com_mig_<profile>`` resource per profile of
its layout (8 GPUs x 3g+2g+1g+1g). Every node also advertises CPUs and memory (series cardhours
does not land). ``NODE_EVENTS``: the scripted downtime of the pool, in seconds from the window
start: the node NotReady for an interval (Ready true 0, false 1), and cordoned for another.
"""

from __future__ import annotations

from collections import Counter

from simulate.cluster import GPUS_PER_NODE, Node
from simulate.kube.om_text import Series

FAMILIES: dict[str, tuple[str, str]] = {
    "kube_node_status_capacity": ("gauge", "The capacity for different resources of a node."),
    "kube_node_labels": ("gauge", "Kubernetes labels converted to Prometheus labels."),
    "kube_node_status_condition": ("gauge", "The condition of a cluster node."),
    "kube_node_spec_unschedulable": ("gauge", "Whether a node can schedule new pods."),
}
# (node, kind, start, end): kind "not_ready" or "cordoned"
NODE_EVENTS: tuple[tuple[str, str, int, int], ...] = (
    ("kgpu-004", "not_ready", 30_000, 33_600),
    ("kgpu-001", "cordoned", 50_400, 57_600),
)


def _resource(node: str, resource: str, unit: str, value: float, window: int) -> Series:
    labels = {"node": node, "resource": resource, "unit": unit}
    return Series("kube_node_status_capacity", labels, [(0, window, value)])


def capacity_series(node: Node, window: int) -> list[Series]:
    """The node's capacity series: GPUs (whole or MIG per profile), CPUs, memory."""
    out = [
        _resource(node.hostname, "cpu", "core", 128, window),
        _resource(node.hostname, "memory", "byte", 2.0 * 2**40, window),
    ]
    if node.mig_layout is None:
        return [*out, _resource(node.hostname, "nvidia_com_gpu", "integer", GPUS_PER_NODE, window)]
    out.append(_resource(node.hostname, "nvidia_com_gpu", "integer", 0, window))
    for profile, per_gpu in sorted(Counter(node.mig_layout).items()):
        resource = "nvidia_com_mig_" + profile.replace(".", "_")
        out.append(_resource(node.hostname, resource, "integer", per_gpu * GPUS_PER_NODE, window))
    return out


def _flag(node: str, kind: str, window: int) -> list[tuple[int, int, float]]:
    """Segments of a 0/1 flag that is 1 during the node's events of ``kind``."""
    events = sorted((a, min(b, window)) for n, k, a, b in NODE_EVENTS if n == node and k == kind and a < window)
    segments, t = [], 0
    for a, b in events:
        segments += [(t, a, 0.0), (a, b, 1.0)]
        t = b
    return [*segments, (t, window, 0.0)]


def condition_series(node: str, window: int) -> list[Series]:
    """Ready true/false/unknown (true 0 and false 1 while not ready) and the cordon flag."""
    down = _flag(node, "not_ready", window)
    ready = {"true": [(a, b, 1.0 - v) for a, b, v in down], "false": down, "unknown": [(0, window, 0.0)]}
    out = [
        Series("kube_node_status_condition", {"node": node, "condition": "Ready", "status": s}, seg)
        for s, seg in ready.items()
    ]
    out.append(
        Series(
            "kube_node_status_condition",
            {"node": node, "condition": "MemoryPressure", "status": "true"},
            [(0, window, 0.0)],
        )
    )
    return [*out, Series("kube_node_spec_unschedulable", {"node": node}, _flag(node, "cordoned", window))]


def node_series(nodes: tuple[Node, ...], window: int) -> list[Series]:
    """Every node series of the pool."""
    out: list[Series] = []
    for node in nodes:
        out += capacity_series(node, window)
        strategy = "mixed" if node.mig_layout else "none"
        labels = {"node": node.hostname, "label_nvidia_com_mig_strategy": strategy, "label_kubernetes_io_os": "linux"}
        out.append(Series("kube_node_labels", labels, [(0, window, 1.0)]))
        out += condition_series(node.hostname, window)
    return out
