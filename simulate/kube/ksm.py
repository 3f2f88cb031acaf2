"""kube-state-metrics v2 series of the simulated pods and namespaces (as segments).

Label sets follow kube-state-metrics: ``kube_pod_info`` and the resource series carry
``node=""`` while a pod is Pending and the node once it is bound (a new series), the
timestamp metrics hold Unix seconds, ``kube_pod_status_phase`` has one 0/1 series per phase.
"""

from __future__ import annotations

from itertools import pairwise

from simulate.kube.om_text import Series
from simulate.kube.pods import Pod

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
FAMILIES: dict[str, tuple[str, str]] = {
    "kube_namespace_labels": ("gauge", "Kubernetes labels converted to Prometheus labels."),
    "kube_pod_info": ("gauge", "Information about pod."),
    "kube_pod_labels": ("gauge", "Kubernetes labels converted to Prometheus labels."),
    "kube_pod_created": ("gauge", "Unix creation timestamp"),
    "kube_pod_status_scheduled_time": ("gauge", "Unix timestamp when pod moved into scheduled status"),
    "kube_pod_start_time": ("gauge", "Start time in unix timestamp for a pod."),
    "kube_pod_completion_time": ("gauge", "Completion time in unix timestamp for a pod."),
    "kube_pod_status_phase": ("gauge", "The pods current phase."),
    "kube_pod_container_resource_requests": ("gauge", "The number of requested request resource by a container."),
    "kube_pod_container_resource_limits": ("gauge", "The number of requested limit resource by a container."),
}


def _node(pod: Pod) -> str:
    return pod.instances[0][0] if pod.instances else ""


def _split_by_node(
    pod: Pod, metric: str, labels: dict[str, str], value: float, end: int, node_key: str
) -> list[Series]:
    """One series while Pending (node="") and one once bound."""
    out = []
    bound = pod.scheduled if pod.scheduled is not None else end
    if bound > pod.created:
        out.append(Series(metric, {**labels, node_key: ""}, [(pod.created, min(bound, end), value)]))
    if pod.scheduled is not None and pod.scheduled < end:
        out.append(Series(metric, {**labels, node_key: _node(pod)}, [(pod.scheduled, end, value)]))
    return out


def pod_series(pod: Pod, window: int, origin: int) -> list[Series]:
    """Every kube-state-metrics series of one pod; ``origin`` is the window start (Unix s)."""
    end = pod.deleted if pod.deleted is not None else window
    ids = {"namespace": pod.namespace, "pod": pod.name, "uid": pod.uid}
    info = {
        **ids,
        "host_ip": "",
        "pod_ip": "",
        "created_by_kind": pod.owner_kind,
        "created_by_name": pod.owner_name,
        "priority_class": pod.priority_class,
        "host_network": "false",
    }
    out = _split_by_node(pod, "kube_pod_info", info, 1, end, "node")
    out.append(Series("kube_pod_labels", {**ids, **pod.labels}, [(pod.created, end, 1)]))
    out.append(Series("kube_pod_created", dict(ids), [(pod.created, end, origin + pod.created)]))
    if pod.scheduled is not None:
        out.append(Series("kube_pod_status_scheduled_time", dict(ids), [(pod.scheduled, end, origin + pod.scheduled)]))
    if pod.started is not None:
        out.append(Series("kube_pod_start_time", dict(ids), [(pod.started, end, origin + pod.started)]))
    if pod.completion_time and pod.end is not None:
        out.append(Series("kube_pod_completion_time", dict(ids), [(pod.end, end, origin + pod.end)]))
    out += _phase_series(pod, ids, end)
    for metric in ("kube_pod_container_resource_requests", "kube_pod_container_resource_limits"):
        for resource, unit, value in ((pod.resource, "integer", pod.count), ("cpu", "core", 4 * pod.count)):
            labels = {**ids, "container": pod.container, "resource": resource, "unit": unit}
            out += _split_by_node(pod, metric, labels, value, end, "node")
    return out


def _phase_series(pod: Pod, ids: dict[str, str], end: int) -> list[Series]:
    changes = sorted({pod.created, *(t for t in (pod.started, pod.end) if t is not None and t < end)})
    bounds = [*changes, end]
    out = []
    for phase in PHASES:
        segments = [(a, b, 1.0 if pod.phase_at(a) == phase else 0.0) for a, b in pairwise(bounds) if b > a]
        out.append(Series("kube_pod_status_phase", {**ids, "phase": phase}, segments))
    return out


def namespace_series(labels: dict[str, dict[str, str]], window: int) -> list[Series]:
    """``kube_namespace_labels`` for each namespace (label_* -> value), the whole window."""
    return [
        Series("kube_namespace_labels", {"namespace": ns, **lab}, [(0, window, 1)])
        for ns, lab in sorted(labels.items())
    ]
