"""Simulated organisation and workload: who submits which jobs, when, and how they would end.

Arrivals are a Poisson process thinned for a day/night cycle and weekends, one stream for
whole-GPU jobs and one for MIG-slice jobs, each calibrated to a target load of its capacity.
A few scripted jobs make sure every sacct feature shows up in any window of a day or more.
Times are integer seconds from the window start.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

import numpy as np

from simulate.cluster import Cluster, Request
from simulate.job_spec import DAY, HOUR, KINDS, JobSpec
from simulate.org import (
    ACCOUNT_SUFFIXES,
    DEPARTMENTS,
    DIVISIONS,
    SURNAMES,
    UNMAPPED_ACCOUNT,
    Account,
    Org,
    User,
    build_org,
)
from simulate.partitions import EXIT_CODES, LIMITS, MIG_CPUS, MIG_PROFILES, PARTITIONS, WASTEFUL
from simulate.submission import draw_submission, mean_work, whole_models

__all__ = [  # re-exported: callers import the simulated workload from here
    "ACCOUNT_SUFFIXES",
    "DAY",
    "DEPARTMENTS",
    "DIVISIONS",
    "EXIT_CODES",
    "FIRST_JOB_ID",
    "HOUR",
    "KINDS",
    "LIMITS",
    "MIG_CPUS",
    "MIG_PROFILES",
    "PARTITIONS",
    "SURNAMES",
    "TARGET_LOAD",
    "UNMAPPED_ACCOUNT",
    "WASTEFUL",
    "Account",
    "JobSpec",
    "Org",
    "Submission",
    "User",
    "arrivals",
    "build_org",
    "draw_submission",
    "generate_jobs",
    "mean_work",
]

TARGET_LOAD = 0.75  # offered GPU-time / capacity; allocation lands lower (ramp-up, packing)
FIRST_JOB_ID = 1000


def _activity(t: np.ndarray, first_weekday: int) -> np.ndarray:
    """Relative submission rate at t (weekly mean 1): busy afternoons, quiet weekends."""
    hour = (t % DAY) / HOUR
    weekday = (first_weekday + t // DAY) % 7
    return (1.0 + 0.5 * np.cos(2 * np.pi * (hour - 14.0) / 24.0)) * np.where(weekday < 5, 1.2, 0.5)


def arrivals(rng: np.random.Generator, rate: float, horizon: int, first_weekday: int) -> np.ndarray:
    """Submission times (s) of a Poisson process with mean rate ``rate``/s, thinned by activity."""
    peak = rate * 1.5 * 1.2
    n = int(rng.poisson(peak * horizon))
    times = np.sort(rng.uniform(0, horizon, size=n))
    keep = rng.uniform(0, peak, size=n) < rate * _activity(times, first_weekday)
    return np.floor(times[keep]).astype(np.int64)


def _capacity(cluster: Cluster, mig: bool) -> int:
    """Whole GPUs outside MIG nodes, or MIG instances on MIG nodes."""
    return sum(8 * len(n.mig_layout or (0,)) for n in cluster.nodes if (n.mig_layout is not None) == mig)


Submission = tuple[int, list[JobSpec]]  # submit time, drafts (one, or an array's tasks)


def _stream(cluster: Cluster, org: Org, mig: bool, start: date, horizon: int, seed: int) -> list[Submission]:
    """(submit time, drafts) of one stream, its rate calibrated to TARGET_LOAD."""
    capacity = _capacity(cluster, mig)
    if capacity == 0:
        return []
    work = mean_work(np.random.default_rng([seed, 3, int(mig)]), cluster, org, mig)
    rng = np.random.default_rng([seed, 4, int(mig)])
    times = arrivals(rng, TARGET_LOAD * capacity / work, horizon, start.weekday())
    return [(int(t), draw_submission(rng, cluster, org, mig)) for t in times]


def _scripted(cluster: Cluster, org: Org, horizon: int) -> list[Submission]:
    """Jobs that exercise requeue, failure, timeout, cancels, arrays and a pending array range."""
    users = sorted(org.users, key=lambda u: -u.weight)
    base = JobSpec(
        job_id_raw=0,
        name="pretrain-ckpt",
        user=users[0],
        account=users[0].account,
        partition="train",
        qos="normal",
        submit=0,
        eligible=0,
        request=Request(1, 1, (next(iter(whole_models(cluster))),)),
        typed=True,
        cpus_per_slot=8,
        timelimit=12 * HOUR,
        duration=6 * HOUR,
        kind="dense",
    )

    def by(i: int, **changes: Any) -> JobSpec:
        return replace(base, user=users[i], account=users[i].account, **changes)

    span = min(horizon, DAY)
    sweep = [by(5, name="sweep-lr", duration=(2 + i % 3) * HOUR, timelimit=4 * HOUR) for i in range(6)]
    # Throttled to 5 at a time and submitted 5 h before the end: tasks 5-20 are still pending.
    tail = [by(6, name="hpo-trial", duration=(8 + i % 5) * HOUR, timelimit=14 * HOUR, array_limit=5) for i in range(21)]
    return [
        (int(span * 0.05), [replace(base, node_fail_after=2 * HOUR)]),
        (int(span * 0.10), [by(1, name="ddp-train", kind="starved", fail_after=40 * 60, exit_code="1:0")]),
        (int(span * 0.15), [by(2, name="vit-finetune", kind="idle_tail", duration=8 * HOUR, timelimit=4 * HOUR)]),
        (
            int(span * 0.20),
            [by(3, name="bash", partition="debug", kind="idle", cancel_after=3 * HOUR, canceller_uid=users[3].uid)],
        ),
        (
            int(span * 0.25),
            [by(4, name="nightly-eval", eligible=8 * HOUR, patience=3 * HOUR, canceller_uid=users[4].uid)],
        ),
        (int(span * 0.30), sweep),
        (max(0, horizon - 5 * HOUR), tail),
    ]


def _number(submissions: list[Submission], horizon: int) -> list[JobSpec]:
    """Ids in submission order; an array takes a master id, then one id per task."""
    specs: list[JobSpec] = []
    next_id = FIRST_JOB_ID
    for submit, drafts in sorted(submissions, key=lambda s: s[0]):
        array_id = next_id if len(drafts) > 1 else None
        next_id += array_id is not None
        for task, draft in enumerate(drafts):
            eligible = submit + draft.eligible if submit + draft.eligible < horizon else submit
            is_task = array_id is not None
            specs.append(
                replace(
                    draft,
                    job_id_raw=next_id,
                    submit=submit,
                    eligible=eligible,
                    array_id=array_id,
                    array_task=task if is_task else None,
                    array_limit=draft.array_limit if is_task else None,
                )
            )
            next_id += 1
    return specs


def generate_jobs(cluster: Cluster, org: Org, start: date, days: int, seed: int) -> list[JobSpec]:
    """Every job submitted in the window [start, start + days), in id order."""
    if days < 1:
        raise ValueError(f"days must be at least 1, got {days}")
    horizon = days * DAY
    submissions = _scripted(cluster, org, horizon)
    for mig in (False, True):
        submissions += _stream(cluster, org, mig, start, horizon, seed)
    return _number(submissions, horizon)
