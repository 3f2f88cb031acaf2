"""sreport's ``cluster utilization`` numbers, recomputed from what slurmdbd recorded.

This is slurmdbd 22.05's hourly rollup (``as_mysql_hourly_rollup`` in
src/plugins/accounting_storage/mysql/as_mysql_rollup.c), rule by rule, for one TRES, so that
a test can check that sreport says exactly this and docs/slurm.md can state the rules:

- Capacity (Reported) is the TRES count of the cluster registration events (``sacctmgr show
  event``, node ""), only while the cluster was registered.
- Allocated is each job's TRES x seconds, for jobs outside a reservation. A job in a
  reservation adds nothing to the cluster: its reservation was counted instead.
- A reservation adds its own TRES x seconds: Allocated, or PLND Down with ``MAINT``;
  ``IGNORE_JOBS`` reservations add nothing (their jobs count as Allocated). In 22.05 a
  reservation's TRES are its CPUs (and licenses, burst buffers), never GPUs.
- A node event adds the node's TRES x seconds as Down. Events with the maintenance flag
  (state ``...$``) are skipped. Where the event overlaps a reservation on the node, the
  overlap is PLND Down (maintenance) or Down (other) and is taken out of the reservation.
  The rest of the event is Down, less the overlap with the *last* reservation on the node in
  the hour (by start) -- which is negative when that reservation does not overlap the event,
  so the gap between them is added as Down as well (a slurmdbd defect, kept here as measured).
- Planned is the CPU-seconds eligible jobs outside reservations waited (``ReqCPUS``); for any
  other TRES it is 0.
- Per hour and TRES: Allocated is capped at capacity, then Down and PLND Down are cut so
  that the three fit; Idle is what is left after Planned; a negative Idle moves into Planned
  (and Over Commit).

Only node names listed literally in a reservation are matched (no host ranges).
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.slurm_harness.sreport_records import Event, Job, Reservation

HOUR = 3600
CATEGORIES = ("alloc", "down", "pdown", "idle", "plan", "reported")


@dataclass
class _Resv:
    record: Reservation
    start: int
    end: int
    total: int  # TRES x seconds left to add to the cluster

    def holds(self, node: str) -> bool:
        return node in self.record.nodes.split(",")


def _overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    return min(a1, b1) - max(a0, b0)


def _clip(start: int, end: int | None, h0: int, h1: int) -> tuple[int, int]:
    return max(start, h0), h1 if end is None or end > h1 else end


def hour(events: list[Event], resvs: list[Reservation], jobs: list[Job], name: str, h0: int) -> dict[str, int]:
    """One hour [h0, h0 + 3600) of TRES ``name``, the way the rollup computes it."""
    h1 = h0 + HOUR
    t = dict.fromkeys(("total", "alloc", "down", "pdown", "plan"), 0)
    rs = []
    for r in sorted((r for r in resvs if r.start < h1 and r.end >= h0), key=lambda r: r.start):
        s, e = _clip(r.start, r.end, h0, h1)
        if e - s >= 1:
            rs.append(_Resv(r, s, e, r.tres.get(name, 0) * (e - s)))
    registered = [
        (_clip(e.start, e.end, h0, h1), e)
        for e in sorted(events, key=lambda e: e.start)
        if e.node == "" and not e.state and e.start < h1 and (e.end is None or e.end >= h0)
    ]
    spans = [((s, e), ev) for (s, e), ev in registered if e - s >= 1]
    if not spans:
        return dict.fromkeys(CATEGORIES, 0)
    for (s, e), ev in spans:
        t["total"] += ev.tres.get(name, 0) * (e - s)
    c0, c1 = spans[0][0][0], spans[-1][0][1]
    nodes = [e for e in events if e.node and not e.maint and e.start < h1 and (e.end is None or e.end >= h0)]
    for ev in sorted(nodes, key=lambda e: (e.node, e.start)):
        s, e = _clip(ev.start, ev.end, h0, h1)
        if e - s < 1:
            continue
        count, resv_seconds = ev.tres.get(name, 0), 0
        for r in rs:
            if not r.holds(ev.node):
                continue
            resv_seconds = _overlap(s, e, r.start, r.end)
            if resv_seconds < 1:
                continue
            t["pdown" if "MAINT" in r.record.flags else "down"] += count * resv_seconds
            if name in r.record.tres:
                r.total = max(0, r.total - count * resv_seconds)
        seconds = min(e, c1) - max(s, c0)
        if seconds >= 1 and seconds - resv_seconds > 0:
            t["pdown" if ev.state.startswith("FUTURE") else "down"] += count * (seconds - resv_seconds)
    for job in jobs:
        _job(job, rs, t, name, h0, h1, c0, c1)
    for r in rs:
        if "IGNORE_JOBS" not in r.record.flags:
            t["pdown" if "MAINT" in r.record.flags else "alloc"] += r.total
    return _settle(t)


def _job(job: Job, rs: list[_Resv], t: dict[str, int], name: str, h0: int, h1: int, c0: int, c1: int) -> None:
    if not job.eligible or job.eligible >= h1 or (job.end is not None and job.end < h0):
        return
    start = max(job.start, h0) if job.start else job.start
    if not start and job.end:
        start = job.end
    end = h1 if job.end is None or job.end > h1 else job.end
    seconds = end - start if start else 0
    if job.resv_id:
        for r in rs:
            if r.record.id == job.resv_id and "IGNORE_JOBS" in r.record.flags and seconds > 0:
                t["alloc"] += job.tres.get(name, 0) * max(0, _overlap(start, end, r.start, r.end))
        return
    if start and seconds > 0:
        t["alloc"] += job.tres.get(name, 0) * seconds
    if name == "cpu" and (not start or start >= c0):
        waited = min(start or c1, c1) - max(job.eligible, c0)
        if waited > 0:
            t["plan"] += waited * job.req_cpus


def _settle(t: dict[str, int]) -> dict[str, int]:
    total = t["total"]
    alloc = min(t["alloc"], total) if total else t["alloc"]
    down, pdown, plan = t["down"], t["pdown"], t["plan"]
    if total and total < alloc + down + pdown:
        down = max(0, down + min(0, total - alloc - down))
        pdown = max(0, pdown + min(0, total - alloc - down - pdown))
    idle = total - alloc - down - pdown - plan
    if idle < 0:
        plan, idle = max(0, plan + idle), 0
    return {"alloc": alloc, "down": down, "pdown": pdown, "idle": idle, "plan": plan, "reported": total}


def utilization(
    events: list[Event], resvs: list[Reservation], jobs: list[Job], name: str, start: int, end: int
) -> dict[str, int]:
    """sreport's row for TRES ``name`` over the whole hours [start, end): the hours summed.

    Reported is Allocated + Down + PLND Down + Idle + Planned, as sreport prints it.
    """
    total = dict.fromkeys(CATEGORIES, 0)
    for h0 in range(start, end, HOUR):
        for key, value in hour(events, resvs, jobs, name, h0).items():
            total[key] += value
    total["reported"] = sum(total[k] for k in ("alloc", "down", "pdown", "idle", "plan"))
    return total
