"""The scheduler's bookkeeping of one run: waiting to start, then running until its fate."""

from __future__ import annotations

from dataclasses import dataclass

from simulate.jobs import JobSpec


@dataclass
class Item:
    """A run waiting to start."""

    job: JobSpec
    run_index: int
    submit: int
    eligible: int
    state: str = "waiting"  # waiting -> queued -> started | cancelled

    def key(self) -> tuple[int, int, int, int]:
        return (self.job.qos != "high", self.submit, self.job.job_id_raw, self.run_index)


@dataclass
class Active:
    item: Item
    start: int
    end: int
    state: str
    exit_code: str
    cancelled_by: int | None
    slots: tuple[int, ...]
    expected_end: int  # start + time limit: what the scheduler plans with


def fate(job: JobSpec, run_index: int) -> tuple[int, str, str, int | None]:
    """(runtime, state, exit code, canceller) of a run: whatever ends it first."""
    options: list[tuple[int, int, str, str, int | None]] = [
        (job.duration, 0, "COMPLETED", "0:0", None),
        (job.timelimit, 1, "TIMEOUT", "0:0", None),
    ]
    if job.fail_after is not None:
        options.append((job.fail_after, 2, "FAILED", job.exit_code, None))
    if job.cancel_after is not None:
        options.append((job.cancel_after, 3, "CANCELLED", "0:15", job.canceller_uid))
    if job.node_fail_after is not None and run_index == 0:
        options.append((job.node_fail_after, 4, "NODE_FAIL", "0:0", None))
    runtime, _, state, exit_code, by = min(options)
    return runtime, state, exit_code, by
