"""A simulated pod: what kube-state-metrics would say about it, and its ground truth.

Times are integer seconds from the window start. A pod's series exist from ``created``
until ``deleted`` (None: past the window end). It holds its GPUs from ``started`` until
``end`` (None: still running at the window end).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from simulate.cluster import mig_fraction
from simulate.kube.pool import Slot

NO_OWNER = "<none>"  # kube-state-metrics' created_by_kind / created_by_name of a bare pod
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' random-suffix alphabet


@dataclass
class Pod:
    name: str
    namespace: str
    owner_kind: str
    owner_name: str
    container: str
    resource: str  # nvidia_com_gpu or nvidia_com_mig_<profile>
    count: int  # devices requested (and limited) by the container
    kind: str  # allocation kind: the shape of its GPU activity
    created: int
    scheduled: int | None = None
    started: int | None = None
    end: int | None = None
    deleted: int | None = None
    phase_end: str = "Succeeded"  # phase after `end` while the object still exists
    completion_time: bool = False  # whether kube_pod_completion_time is exported for it
    labels: dict[str, str] = field(default_factory=dict)  # label_* -> value (kube_pod_labels)
    priority_class: str = ""
    instances: list[Slot] = field(default_factory=list)
    department: str = "unmapped"  # truth
    department_source: str = "unmapped"  # truth: pod_label / namespace_label / namespace_mapping / unmapped
    queue_name: str | None = None
    scheduler: str | None = None  # kueue / volcano
    submit: int | None = None  # workload submitted (Kueue: before its pods exist)
    deployment: str | None = None
    scenario: str = ""

    @property
    def uid(self) -> str:
        digest = hashlib.sha1(f"{self.namespace}/{self.name}".encode()).hexdigest()
        return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"

    @property
    def mig_profile(self) -> str | None:
        if not self.resource.startswith("nvidia_com_mig_"):
            return None
        return self.resource.removeprefix("nvidia_com_mig_").replace("_", ".", 1)

    @property
    def gpus(self) -> float:
        """Charged GPUs: MIG slices as compute-slice fractions (the default weights)."""
        profile = self.mig_profile
        return self.count * (mig_fraction(profile) if profile else 1.0)

    @property
    def job(self) -> str:
        """The job this pod counts towards (the staging rule, as truth)."""
        if self.owner_kind in (NO_OWNER, "ReplicaSet", "StatefulSet", "DaemonSet"):
            return f"{self.namespace}/{self.name}"
        return f"{self.namespace}/{self.owner_kind}/{self.owner_name}"

    def phase_at(self, t: int) -> str:
        if self.started is None or t < self.started:
            return "Pending"
        if self.end is None or t < self.end:
            return "Running"
        return self.phase_end


def suffix(rng: np.random.Generator, n: int = 5) -> str:
    return "".join(_ALPHABET[i] for i in rng.integers(0, len(_ALPHABET), n))


def bind(pod: Pod, rng: np.random.Generator, t: int, slots: list[Slot], run_seconds: int | None, window: int) -> Pod:
    """Schedule ``pod`` at ``t`` on ``slots``: started a few seconds later, running
    ``run_seconds`` (None: past the window end); end and deletion past the window become None."""
    pod.scheduled = t
    pod.started = t + int(rng.integers(1, 6))
    pod.instances = list(slots)
    if run_seconds is not None and pod.started + run_seconds < window:
        pod.end = pod.started + run_seconds
    if pod.deleted is not None and pod.deleted >= window:
        pod.deleted = None
    return pod
