"""Inference Deployments: replicas that follow a day/night curve, on whole GPUs or MIG slices.

Each hour (plus a few seconds of controller lag) the Deployment's ReplicaSet is scaled to
the curve: new pods are created and bound at once, surplus pods (the newest first) are
deleted; a deleted pod's series end with it (no ``kube_pod_completion_time``). A rollout
replaces every pod under a new ReplicaSet name (new pod-template hash).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from simulate.kube.pods import Pod, bind, suffix
from simulate.kube.pool import SlotPool

HOUR = 3600


@dataclass(frozen=True)
class Service:
    name: str
    namespace: str
    resource: str
    profile: str | None  # MIG profile of the slots it runs on (None: whole GPUs)
    kind: str
    replicas: Callable[[int], int]  # desired replicas at a time (seconds from the window start)
    labels: dict[str, str]
    department: str
    department_source: str
    rollout_at: int | None = None  # seconds from the window start


def day_night(low: int, high: int, start_hour: float) -> Callable[[int], int]:
    """Replicas between ``low`` (04:00 UTC) and ``high`` (16:00 UTC), a cosine over the day."""

    def replicas(t: int) -> int:
        hour = (start_hour + t / HOUR) % 24
        return low + round((high - low) * (1 - math.cos(2 * math.pi * (hour - 4) / 24)) / 2)

    return replicas


def run_service(service: Service, pool: SlotPool, rng: np.random.Generator, window: int) -> list[Pod]:
    """Every pod of the Deployment over the window."""
    pods: list[Pod] = []
    running: list[Pod] = []
    template = suffix(rng, 9)
    for hour in range(math.ceil(window / HOUR)):
        t = hour * HOUR + (int(rng.integers(1, 20)) if hour else 0)
        if service.rollout_at is not None and hour * HOUR <= service.rollout_at < (hour + 1) * HOUR:
            template = suffix(rng, 9)
            _scale(running, 0, t, pool)
            running = []
        _scale(running, service.replicas(hour * HOUR), t, pool)
        while len(running) < service.replicas(hour * HOUR):
            pod = _new_pod(service, template, rng, t)
            slots = pool.free(t, service.profile)
            if not slots:
                break
            bind(pod, rng, t + int(rng.integers(0, 3)), [slots[0]], None, window)
            pool.hold(pod.instances, None)
            running.append(pod)
            pods.append(pod)
    return pods


def _scale(running: list[Pod], desired: int, t: int, pool: SlotPool) -> None:
    """Delete the newest surplus pods at ``t``: their GPUs free, their series gone."""
    while len(running) > desired:
        pod = running.pop()
        pod.end = pod.deleted = max(t, (pod.started or t) + 1)
        pool.hold(pod.instances, pod.end)


def _new_pod(service: Service, template: str, rng: np.random.Generator, t: int) -> Pod:
    owner = f"{service.name}-{template}"
    return Pod(
        name=f"{owner}-{suffix(rng)}",
        namespace=service.namespace,
        owner_kind="ReplicaSet",
        owner_name=owner,
        container="server",
        resource=service.resource,
        count=1,
        kind=service.kind,
        created=t,
        labels=dict(service.labels),
        priority_class="inference",
        department=service.department,
        department_source=service.department_source,
        deployment=service.name,
        scenario="inference",
    )
