"""An event-driven Slurm-like scheduler: priority FIFO (QOS ``high`` first, then submit
time) with EASY backfill: the first job that does not fit gets a reservation at the
earliest time running jobs' time limits guarantee; later jobs may start now only if
they end (by their limit) before it or use none of the reserved devices. Devices can be
unavailable for a while (a drained node, MIG instances before or after a re-partition:
simulate/node_events.py): a job whose limit reaches into such a window does not get them.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from simulate.cluster import Cluster, FreeSlots, Request
from simulate.job_runs import Instance, Run, collapse_pending_arrays, task_ranges
from simulate.jobs import JobSpec
from simulate.queue_items import Active, Item, fate

__all__ = ["Instance", "Run", "collapse_pending_arrays", "schedule", "task_ranges"]  # re-exported: import from here


def _blocked(reservation: tuple[int, frozenset[int]] | None, ends_by: int) -> frozenset[int]:
    """Devices a job whose limit ends at ``ends_by`` may not take: the reserved ones,
    unless it is sure to be gone before the reservation starts."""
    if reservation is None or ends_by <= reservation[0]:
        return frozenset()
    return reservation[1]


@dataclass
class _Sim:
    """The simulation state: free devices, the event heap, the queue and what ran."""

    cluster: Cluster
    horizon: int
    unavailable: tuple[tuple[int, int, frozenset[int]], ...] = ()  # (from, to, device ids)
    free: FreeSlots = field(init=False)
    events: list[tuple[int, int, str, object]] = field(default_factory=list)
    queue: list[Item] = field(default_factory=list)
    running: dict[int, Active] = field(default_factory=dict)
    array_running: dict[int, int] = field(default_factory=dict)
    items: list[Item] = field(default_factory=list)
    finished: list[tuple[Item, Active | None, int]] = field(default_factory=list)
    seq: itertools.count = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        self.free = FreeSlots(self.cluster)
        for _, until, _ in self.unavailable:
            if 0 <= until < self.horizon:  # devices come back: schedule then
                self.push(until, "wake", None)

    def _on_wake(self, obj: object, now: int) -> None:
        pass

    def _unavailable(self, now: int, ends_by: int) -> frozenset[int]:
        """Devices unavailable at some time of [now, ends_by)."""
        out: frozenset[int] = frozenset()
        for since, until, ids in self.unavailable:
            if since < ends_by and now < until:
                out |= ids
        return out

    def push(self, time: int, kind: str, obj: object) -> None:
        heapq.heappush(self.events, (time, next(self.seq), kind, obj))

    def submit(self, job: JobSpec) -> None:
        item = Item(job, 0, job.submit, job.eligible)
        self.items.append(item)
        self.push(job.eligible, "eligible", item)
        if job.patience is not None:
            self.push(job.submit + job.patience, "patience", item)

    def run(self) -> None:
        while self.events and self.events[0][0] < self.horizon:
            now = self.events[0][0]
            while self.events and self.events[0][0] == now:
                _, _, kind, obj = heapq.heappop(self.events)
                getattr(self, f"_on_{kind}")(obj, now)
            self._pass(now)

    def _on_eligible(self, item: Item, now: int) -> None:
        if item.state == "waiting":
            item.state = "queued"
            self.queue.append(item)

    def _on_patience(self, item: Item, now: int) -> None:
        if item.state in ("waiting", "queued"):
            item.state = "cancelled"
            self.queue = [i for i in self.queue if i is not item]
            self.finished.append((item, None, now))

    def _on_end(self, active: Active, now: int) -> None:
        del self.running[id(active)]
        self.free.release(active.slots)
        job = active.item.job
        if job.array_id is not None:
            self.array_running[job.array_id] -= 1
        self.finished.append((active.item, active, now))
        if active.state == "NODE_FAIL":  # requeued: a new run, submitted now
            again = Item(job, active.item.run_index + 1, now, now, "queued")
            self.items.append(again)
            self.queue.append(again)

    def _throttled(self, job: JobSpec) -> bool:
        """An array task held back by its array's ``%limit``."""
        if job.array_id is None or job.array_limit is None:
            return False
        return self.array_running.get(job.array_id, 0) >= job.array_limit

    def _pass(self, now: int) -> None:
        """Start what can start, in priority order, backfilling around one reservation."""
        reservation: tuple[int, frozenset[int]] | None = None
        blocked_seen = False
        failed: dict[tuple, int] = {}  # request shape -> fewest GPUs that did not fit
        for item in sorted(self.queue, key=Item.key):
            request = item.job.request
            if self._throttled(item.job):
                continue
            blocked = _blocked(reservation, now + item.job.timelimit)
            if self.unavailable:
                blocked |= self._unavailable(now, now + item.job.timelimit)
            shape = (request.models, request.mig_profile, request.nodes > 1, blocked)
            known_misfit = failed.get(shape, 1 << 30) <= request.gpus  # free devices only shrink in a pass
            slots = None if known_misfit else self.free.place(request, blocked)
            if slots is not None:
                self._start(item, slots, now)
                continue
            failed[shape] = min(request.gpus, failed.get(shape, 1 << 30))
            if not blocked_seen:
                blocked_seen = True
                reservation = self._reserve(request, now)
        self.queue = [i for i in self.queue if i.state == "queued"]

    def _reserve(self, request: Request, now: int) -> tuple[int, frozenset[int]] | None:
        """The earliest time the request fits as running jobs reach their limits, and where."""
        projected = self.free.copy()
        eligible = projected.eligible_nodes(request)
        ordered = sorted(self.running.values(), key=lambda a: a.expected_end)
        for expected_end, group in itertools.groupby(ordered, key=lambda a: a.expected_end):
            relevant = False
            for active in group:
                projected.release(active.slots)
                relevant = relevant or projected.slots[active.slots[0]].node in eligible
            if not relevant:  # nothing freed where the request could go
                continue
            slots = projected.place(request)
            if slots is not None:
                return max(expected_end, now), frozenset(slots)
        return None

    def _start(self, item: Item, slots: tuple[int, ...], now: int) -> None:
        item.state = "started"
        self.free.take(slots)
        runtime, state, exit_code, by = fate(item.job, item.run_index)
        active = Active(item, now, now + runtime, state, exit_code, by, slots, now + item.job.timelimit)
        self.running[id(active)] = active
        if item.job.array_id is not None:
            self.array_running[item.job.array_id] = self.array_running.get(item.job.array_id, 0) + 1
        self.push(active.end, "end", active)

    def runs(self, window_start: datetime) -> list[Run]:
        """Every run as of the window end: finished, still running, still pending."""
        as_of = window_start + timedelta(seconds=self.horizon)

        def at(seconds: int) -> datetime:
            return window_start + timedelta(seconds=seconds)

        def make(item: Item, active: Active | None, state: str, end: int | None, by: int | None = None) -> Run:
            return Run(
                job=item.job,
                run_index=item.run_index,
                submit=at(item.submit),
                eligible=at(item.eligible),
                start=at(active.start) if active else None,
                end=None if end is None else at(end),
                state=state,
                exit_code=active.exit_code if active else "0:0",
                instances=self._instances(active.slots) if active else (),
                as_of=as_of,
                cancelled_by=by,
            )

        out: list[Run] = []
        for item, active, end in self.finished:
            if active is None:  # cancelled while pending
                out.append(make(item, None, "CANCELLED", end, item.job.canceller_uid))
            else:
                state = "REQUEUED" if active.state == "NODE_FAIL" else active.state
                out.append(make(item, active, state, end, active.cancelled_by))
        out += [make(a.item, a, "RUNNING", None) for a in self.running.values()]
        out += [make(i, None, "PENDING", None) for i in self.items if i.state in ("waiting", "queued")]
        return out

    def _instances(self, slots: tuple[int, ...]) -> tuple[Instance, ...]:
        table = self.free.slots
        return tuple((table[i].hostname, table[i].gpu, table[i].gi_id) for i in slots)


def schedule(
    cluster: Cluster,
    jobs: list[JobSpec],
    window_start: datetime,
    horizon: int,
    unavailable: tuple[tuple[int, int, frozenset[int]], ...] = (),
) -> list[Run]:
    """Simulate the window [window_start, +horizon s); runs sorted by job id and run index.
    ``unavailable``: (from, to, device ids) in seconds from the window start."""
    sim = _Sim(cluster, horizon, unavailable)
    for job in jobs:
        if not 0 <= job.submit <= job.eligible < horizon:
            raise ValueError(f"job {job.job_id}: submit/eligible outside the window")
        sim.submit(job)
    sim.run()
    runs = collapse_pending_arrays(sim.runs(window_start))
    return sorted(runs, key=lambda r: (int(r.job_id_raw), r.run_index))
