"""A simulated job or array task as submitted, and the time units the simulator counts in."""

from __future__ import annotations

from dataclasses import dataclass

from simulate.cluster import Request
from simulate.org import User

HOUR, DAY = 3600, 86400
KINDS = ("dense", "bursty", "starved", "hog", "tiny", "idle_tail", "idle")


@dataclass(frozen=True)
class JobSpec:
    """One submitted job or array task. In a draft, ``eligible`` is the delay after submit."""

    job_id_raw: int
    name: str
    user: User
    account: str
    partition: str
    qos: str
    submit: int
    eligible: int
    request: Request
    typed: bool  # the request names the GPU type (ReqTRES gres/gpu:<type>)
    cpus_per_slot: int
    timelimit: int
    duration: int  # runtime if nothing ends it first
    kind: str
    array_id: int | None = None
    array_task: int | None = None
    array_limit: int | None = None  # at most this many tasks of the array run at once
    patience: int | None = None  # cancelled if still pending this long after submit
    cancel_after: int | None = None  # cancelled this long after start
    fail_after: int | None = None  # FAILED with exit_code this long after start
    exit_code: str = "0:0"
    node_fail_after: int | None = None  # NODE_FAIL this long after start, then requeued
    canceller_uid: int | None = None
    srun_step: bool = False  # has a ".0" step besides .batch and .extern

    @property
    def job_id(self) -> str:
        """sacct JobID: ``123`` or ``100_7`` for an array task."""
        return str(self.job_id_raw) if self.array_id is None else f"{self.array_id}_{self.array_task}"

    @property
    def slots(self) -> int:
        """Devices or MIG instances held when running."""
        return 1 if self.request.mig_profile else self.request.gpus
