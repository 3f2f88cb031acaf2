"""The job mix of issue 4, submitted to a ``SlurmCluster`` in a fixed choreography.

1. Fill all 8 GPUs (these start at once): 2 typed (``--gres=gpu:h200:2``), 1 by ``--gpus=1``,
   4 untyped (``--gres=gpu:4``, under the unmapped account ``legacy-ml``), and 1 requeueable
   job (``--requeue``) whose first run sleeps until it is requeued.
2. While every GPU is busy, submit jobs that must queue: 2 typed GPUs, an array
   (``--array=1-3``, 1 GPU each), a job that exits 3, an 8-GPU job and a held job; the last
   two are cancelled while pending.
3. ``scontrol requeue`` the requeueable job: its first run ends REQUEUED, and it runs again
   (``SLURM_RESTART_COUNT`` > 0, short sleep) once ``cred_expire`` has passed.

Each ``JobSpec`` records what was asked (GPUs, account) and what sacct must show for it.
Jobs are told apart by ``--job-name``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from tests.slurm_harness.cluster import SlurmCluster
from tests.slurm_harness.config import GPUS
from tests.slurm_harness.procs import HarnessError, wait_until

FILL_SECONDS = 15  # phase 1 jobs hold all GPUs this long
RUN_SECONDS = 3  # phase 2 jobs
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


@dataclass(frozen=True)
class JobSpec:
    name: str
    account: str
    args: tuple[str, ...]  # GPU request and any other sbatch options
    gpus: int  # GPUs each task (or run) holds
    script: str
    states: tuple[str, ...]  # sacct State of each run (requeue) or task (array), in order
    waits: bool  # must queue behind busy GPUs
    cancel_pending: bool = False
    in_window: bool = True  # appears in a -S/-E window query


def _sleep(seconds: int, exit_code: int = 0) -> str:
    return f"sleep {seconds}" + (f"; exit {exit_code}" if exit_code else "")


REQUEUE_SCRIPT = 'if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then sleep 2; else sleep 120; fi'

FILL = (
    JobSpec("fill-h200x2", "vis-train", ("--gres=gpu:h200:2",), 2, _sleep(FILL_SECONDS), ("COMPLETED",), False),
    JobSpec("fill-gpus1", "nlp-pretrain", ("--gpus=1",), 1, _sleep(FILL_SECONDS), ("COMPLETED",), False),
    JobSpec("fill-untyped4", "legacy-ml", ("--gres=gpu:4",), 4, _sleep(FILL_SECONDS), ("COMPLETED",), False),
    JobSpec(
        "requeued", "vis-train", ("--gres=gpu:h200:1", "--requeue"), 1, REQUEUE_SCRIPT, ("REQUEUED", "COMPLETED"), False
    ),
)
QUEUED = (
    JobSpec("queued-h200x2", "vis-train", ("--gres=gpu:h200:2",), 2, _sleep(RUN_SECONDS), ("COMPLETED",), True),
    JobSpec("array", "nlp-pretrain", ("--gpus=1", "--array=1-3"), 1, _sleep(RUN_SECONDS), ("COMPLETED",) * 3, True),
    JobSpec("failing", "legacy-ml", ("--gpus=1",), 1, _sleep(1, exit_code=3), ("FAILED",), True),
    JobSpec(
        "cancelled-pending",
        "vis-train",
        ("--gres=gpu:h200:8",),
        8,
        _sleep(RUN_SECONDS),
        ("CANCELLED",),
        True,
        cancel_pending=True,
    ),
    JobSpec(
        "cancelled-held",
        "nlp-pretrain",
        ("--gpus=1", "--hold"),
        1,
        _sleep(RUN_SECONDS),
        ("CANCELLED",),
        True,
        cancel_pending=True,
        in_window=False,
    ),
)
MIX = FILL + QUEUED
assert sum(spec.gpus for spec in FILL) == GPUS


@dataclass
class JobMix:
    """What was submitted (job id per spec name) and the UTC window around it."""

    began: datetime  # a second before the first submission
    ids: dict[str, str] = field(default_factory=dict)
    ended: datetime | None = None  # a second after the last job ended


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def _submit(cluster: SlurmCluster, spec: JobSpec) -> str:
    return cluster.submit([f"--job-name={spec.name}", f"--account={spec.account}", *spec.args, f"--wrap={spec.script}"])


def _states(cluster: SlurmCluster, job_ids: list[str]) -> dict[str, str]:
    queue = cluster.queue()
    return {job: next((s for key, s in queue.items() if key.split("_")[0] == job), "GONE") for job in job_ids}


def _wait_states(cluster: SlurmCluster, what: str, job_ids: list[str], state: str, timeout: float = 30) -> None:
    def ready() -> bool:
        return all(s == state for s in _states(cluster, job_ids).values())

    try:
        wait_until(what, ready, timeout=timeout, daemons=cluster.daemons)
    except HarnessError as exc:
        raise HarnessError(f"{exc}\njob states: {_states(cluster, job_ids)}") from exc


def window_states(cluster: SlurmCluster, began: datetime, ended: datetime) -> dict[str, str]:
    """JobIDRaw -> State of the allocations a ``-S began -E ended`` window query returns now."""
    out = cluster.sacct(
        [
            "-n",
            "-P",
            "-a",
            "-X",
            "-o",
            "JobIDRaw,State",
            "-S",
            began.strftime(TIME_FORMAT),
            "-E",
            ended.strftime(TIME_FORMAT),
        ]
    )
    return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)


def _wait_accounted(cluster: SlurmCluster, mix: JobMix) -> None:
    """Until slurmdbd shows phase 1 running and phase 2 pending (it lags slurmctld by ~2 s)."""
    want = {mix.ids[s.name]: "RUNNING" for s in FILL} | {mix.ids[s.name]: "PENDING" for s in QUEUED if s.in_window}

    def accounted() -> bool:
        seen = window_states(cluster, mix.began, _utcnow() + timedelta(seconds=1))
        return all(seen.get(job) == state for job, state in want.items())

    wait_until("slurmdbd has the running and pending jobs", accounted, timeout=30, daemons=cluster.daemons)


def run_mix(cluster: SlurmCluster, timeout: float = 120, while_busy: Callable[[JobMix], None] | None = None) -> JobMix:
    """Submit the whole mix, drive it (cancel, requeue), wait until everything is final.

    ``while_busy(mix)`` runs once phase 2 is queued behind the 8 busy GPUs and slurmdbd
    shows it (before any cancel or requeue): the moment to read running (End=Unknown) and
    pending rows. Waiting for slurmdbd also makes the pending-cancelled row deterministic
    (Start=None, End=cancel time; cancelled before slurmdbd had it, Start=End=Submit).
    """
    mix = JobMix(began=_utcnow() - timedelta(seconds=1))
    for spec in FILL:
        mix.ids[spec.name] = _submit(cluster, spec)
    fill_ids = [mix.ids[s.name] for s in FILL]
    _wait_states(cluster, "phase 1 jobs running on all 8 GPUs", fill_ids, "RUNNING")
    for spec in QUEUED:
        mix.ids[spec.name] = _submit(cluster, spec)
    _wait_states(cluster, "phase 2 jobs pending", [mix.ids[s.name] for s in QUEUED], "PENDING")
    if any(state != "RUNNING" for state in _states(cluster, fill_ids).values()):
        raise HarnessError(f"phase 1 jobs ended before phase 2 was queued: {_states(cluster, fill_ids)}")
    _wait_accounted(cluster, mix)
    if while_busy is not None:
        while_busy(mix)
    for spec in QUEUED:
        if spec.cancel_pending:
            cluster.command("scancel", [mix.ids[spec.name]])
    time.sleep(3)  # so that jobs started on the requeued job's GPU have waited measurably
    cluster.command("scontrol", ["requeue", mix.ids["requeued"]])
    cluster.wait_done(mix.ids.values(), timeout=timeout)
    mix.ended = _utcnow() + timedelta(seconds=1)
    return mix
