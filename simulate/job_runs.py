"""A job run as ``sacct --duplicates`` reports it, and the pending-array rows sacct collapses."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from datetime import datetime

from simulate.jobs import JobSpec

Instance = tuple[str, int, int | None]  # (hostname, gpu, gpu_i_id)


@dataclass(frozen=True)
class Run:
    """One run of a job as ``sacct --duplicates`` reports it at the end of the window."""

    job: JobSpec
    run_index: int
    submit: datetime
    eligible: datetime
    start: datetime | None  # None: never started
    end: datetime | None  # None: still running or pending at the window end
    state: str  # COMPLETED FAILED TIMEOUT CANCELLED REQUEUED RUNNING PENDING
    exit_code: str
    instances: tuple[Instance, ...]
    as_of: datetime  # the window end, when sacct is run
    cancelled_by: int | None = None
    pending_tasks: tuple[int, ...] = ()  # array tasks a collapsed pending row stands for

    @property
    def job_id(self) -> str:
        if self.pending_tasks:
            return f"{self.job.array_id}_[{task_ranges(self.pending_tasks)}]"
        return self.job.job_id

    @property
    def job_id_raw(self) -> str:
        return str(self.job.array_id if self.pending_tasks else self.job.job_id_raw)

    @property
    def alloc_end(self) -> datetime | None:
        """End of the allocation inside the window (the window end while running)."""
        return None if self.start is None else (self.end or self.as_of)

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(host for host, _, _ in self.instances))


def task_ranges(tasks: tuple[int, ...]) -> str:
    """``(5, 6, 7, 9)`` -> ``5-7,9``."""
    parts: list[str] = []
    for _, group in itertools.groupby(enumerate(sorted(tasks)), key=lambda p: p[1] - p[0]):
        nums = [n for _, n in group]
        parts.append(str(nums[0]) if len(nums) == 1 else f"{nums[0]}-{nums[-1]}")
    return ",".join(parts)


def collapse_pending_arrays(runs: list[Run]) -> list[Run]:
    """Pending tasks of one array become one row ``123_[5-20]`` (JobIDRaw the array's id)."""
    groups: dict[int, list[Run]] = {}
    out: list[Run] = []
    for run in runs:
        if run.state == "PENDING" and run.job.array_id is not None:
            groups.setdefault(run.job.array_id, []).append(run)
        else:
            out.append(run)
    for members in groups.values():
        if len(members) == 1:
            out.extend(members)
            continue
        first = min(members, key=lambda r: r.job.array_task or 0)
        out.append(replace(first, pending_tasks=tuple(sorted(r.job.array_task or 0 for r in members))))
    return out
