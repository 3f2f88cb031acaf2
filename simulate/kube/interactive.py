"""Bare pods: notebooks left idle for days in ``debug``, and short ``sandbox`` pods.

Notebooks (one GPU, doing nothing) end four ways, one each: still running at the window
end, deleted (series stop, no completion time), completed with ``kube_pod_completion_time``,
completed without it (the end must come from the phase series). Only the first carries a
department label (``label_team``); the others, in an unmapped namespace, are ``unmapped``.

Sandbox pods have no labels at all and an unmapped namespace. When the node is full they
stay Pending until GPUs free up (queue time on a bare pod).
"""

from __future__ import annotations

import numpy as np

from simulate.kube.pods import NO_OWNER, Pod, bind, suffix
from simulate.kube.pool import SlotPool

HOUR = 3600
NOTEBOOK_ENDS = ("open", "deleted", "completed", "completed_no_time")


def notebooks(pool: SlotPool, rng: np.random.Generator, window: int, team_department: str) -> list[Pod]:
    pods = []
    for i, ending in enumerate(NOTEBOOK_ENDS):
        created = int(rng.integers(60, max(120, window // 5)))
        labels = {"label_team": team_department, "label_app": "jupyter"} if i == 0 else {"label_app": "jupyter"}
        pod = Pod(
            name=f"jupyter-{suffix(rng, 6)}",
            namespace="debug",
            owner_kind=NO_OWNER,
            owner_name=NO_OWNER,
            container="notebook",
            resource="nvidia_com_gpu",
            count=1,
            kind="idle",
            created=created,
            labels=labels,
            department=team_department if i == 0 else "unmapped",
            department_source="pod_label" if i == 0 else "unmapped",
            scenario="notebook",
        )
        run = None if ending == "open" else int((window - created) * rng.uniform(0.5, 0.9))
        slots = pool.free(created + 2)[:1]
        bind(pod, rng, created + 2, slots, run, window)
        if pod.end is not None:
            pod.phase_end = "Succeeded"
            pod.completion_time = ending == "completed"
            pod.deleted = pod.end if ending == "deleted" else pod.end + 2 * HOUR
            if pod.deleted >= window:
                pod.deleted = None
        pool.hold(pod.instances, pod.end)
        pods.append(pod)
    return pods


def sandbox(pool: SlotPool, rng: np.random.Generator, window: int) -> list[Pod]:
    pods = []
    t = int(rng.integers(600, 3 * HOUR))
    while t < window:
        size = int(rng.choice([1, 2, 4]))
        pod = Pod(
            name=f"sandbox-{suffix(rng, 6)}",
            namespace="sandbox",
            owner_kind=NO_OWNER,
            owner_name=NO_OWNER,
            container="main",
            resource="nvidia_com_gpu",
            count=size,
            kind=str(rng.choice(["dense", "dense", "dense", "hog"])),  # now and then one left asleep
            created=t,
            completion_time=True,
            scenario="sandbox",
        )
        placed = pool.earliest(t + 1, [size])
        if placed is None or placed[0] >= window:
            pods.append(pod)  # never scheduled inside the window: Pending to the end
        else:
            bind(pod, rng, placed[0], placed[1][0], int(rng.integers(HOUR, 5 * HOUR)), window)
            if pod.end is not None:
                pod.deleted = pod.end + 600 if pod.end + 600 < window else None
            pool.hold(pod.instances, pod.end)
            pods.append(pod)
        t += int(rng.exponential(3 * HOUR)) + 60
    return pods
