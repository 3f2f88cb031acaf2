"""The simulator's scheduler: exclusive devices, placement, queueing, EASY backfill, priority, fates."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import date, datetime, timedelta

import pytest

from simulate.cluster import Request, build_cluster, build_inventory
from simulate.jobs import JobSpec, User, build_org, generate_jobs
from simulate.scheduler import Run, schedule, task_ranges

T0 = datetime(2026, 10, 1)
H = 3600
USER = User("alice", 20001, "vision-train", 1.0, False)
TWO_NODES = build_cluster("t", 16, seed=1)  # gpu-001, gpu-002: 8 x H100 each


def job(raw: int, submit: int, gpus: int = 1, duration: int = H, limit: int = 2 * H, **changes: object) -> JobSpec:
    spec = JobSpec(
        job_id_raw=raw,
        name="j",
        user=USER,
        account="vision-train",
        partition="train",
        qos="normal",
        submit=submit,
        eligible=submit,
        request=Request(gpus, max(1, gpus // 8), ("H100",)),
        typed=True,
        cpus_per_slot=8,
        timelimit=limit,
        duration=duration,
        kind="dense",
    )
    return replace(spec, **changes)


def by_id(runs: list[Run]) -> dict[str, Run]:
    return {r.job_id if r.run_index == 0 else f"{r.job_id}#{r.run_index}": r for r in runs}


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_queueing_when_oversubscribed() -> None:
    runs = by_id(schedule(TWO_NODES, [job(1, 0, 8), job(2, 0, 8), job(3, 0, 8)], T0, 10 * H))
    assert runs["1"].start == runs["2"].start == at(0)
    assert runs["3"].start == at(H)  # waits for a node
    assert runs["3"].eligible == at(0)


def test_easy_backfill_uses_the_hole_before_the_reservation_only() -> None:
    jobs = [
        job(1, 0, 8, duration=4 * H, limit=4 * H),  # holds gpu-001 until 4h
        job(2, 60, 16, duration=H, limit=2 * H),  # needs both nodes: reserved for 4h
        job(3, 120, 1, duration=H, limit=2 * H),  # ends by its limit before 4h: backfilled now
        job(4, 120, 1, duration=H, limit=8 * H),  # would delay job 2: must wait
    ]
    runs = by_id(schedule(TWO_NODES, jobs, T0, 12 * H))
    assert runs["3"].start == at(120)
    assert runs["2"].start == at(4 * H)
    assert runs["4"].start == at(5 * H) == runs["2"].end


def test_priority_high_qos_before_earlier_normal() -> None:
    jobs = [job(1, 0, 16), job(2, 60, 16), job(3, 120, 16, qos="high")]
    runs = by_id(schedule(TWO_NODES, jobs, T0, 10 * H))
    assert runs["3"].start == at(H)
    assert runs["2"].start == at(2 * H)


def test_multi_node_job_gets_whole_nodes() -> None:
    runs = by_id(schedule(TWO_NODES, [job(1, 0, 2), job(2, 0, 16)], T0, 10 * H))
    big = runs["2"]
    assert big.start == at(H)  # not before gpu-001 is completely free
    assert big.hosts == ["gpu-001", "gpu-002"] and len(big.instances) == 16
    assert len(set(big.instances)) == 16


def test_requeue_after_node_fail_starts_a_new_run() -> None:
    runs = by_id(schedule(TWO_NODES, [job(1, 0, 1, duration=2 * H, node_fail_after=1800)], T0, 10 * H))
    first, second = runs["1"], runs["1#1"]
    assert (first.state, first.end) == ("REQUEUED", at(1800))
    assert second.submit == second.eligible == second.start == at(1800)
    assert (second.state, second.end) == ("COMPLETED", at(1800 + 2 * H))
    assert first.job_id_raw == second.job_id_raw == "1"


def test_fates_timeout_failure_cancel() -> None:
    jobs = [
        job(1, 0, 1, duration=5 * H, limit=2 * H),
        job(2, 0, 1, fail_after=600, exit_code="2:0"),
        job(3, 0, 1, cancel_after=900, canceller_uid=20001),
    ]
    runs = by_id(schedule(TWO_NODES, jobs, T0, 10 * H))
    assert (runs["1"].state, runs["1"].end) == ("TIMEOUT", at(2 * H))
    assert (runs["2"].state, runs["2"].exit_code, runs["2"].end) == ("FAILED", "2:0", at(600))
    assert (runs["3"].state, runs["3"].cancelled_by, runs["3"].end) == ("CANCELLED", 20001, at(900))


def test_cancelled_while_pending_never_starts() -> None:
    jobs = [job(1, 0, 16, duration=4 * H, limit=4 * H), job(2, 60, 1, patience=H, canceller_uid=20001)]
    run = by_id(schedule(TWO_NODES, jobs, T0, 10 * H))["2"]
    assert (run.state, run.start, run.end, run.instances) == ("CANCELLED", None, at(H + 60), ())
    assert run.cancelled_by == 20001


def test_begin_time_delays_eligibility() -> None:
    run = by_id(schedule(TWO_NODES, [job(1, 0, 1, eligible=2 * H)], T0, 10 * H))["1"]
    assert run.submit == at(0) and run.eligible == run.start == at(2 * H)


def test_running_and_pending_at_window_end() -> None:
    jobs = [job(1, 0, 16, duration=20 * H, limit=24 * H), job(2, 60, 8)]
    runs = by_id(schedule(TWO_NODES, jobs, T0, 10 * H))
    assert (runs["1"].state, runs["1"].end, runs["1"].alloc_end) == ("RUNNING", None, at(10 * H))
    assert (runs["2"].state, runs["2"].start, runs["2"].end) == ("PENDING", None, None)


def test_array_throttle_and_pending_range() -> None:
    tasks = [job(11 + t, 0, 1, duration=8 * H, limit=9 * H, array_id=10, array_task=t, array_limit=2) for t in range(5)]
    runs = schedule(TWO_NODES, tasks, T0, 12 * H)
    started = [r for r in runs if r.start is not None]
    assert sorted(r.job_id for r in started) == ["10_0", "10_1", "10_2", "10_3"]
    assert {r.start for r in started} == {at(0), at(8 * H)}  # two at a time despite free GPUs
    pending = [r for r in runs if r.state == "PENDING"]
    assert [(r.job_id, r.job_id_raw) for r in pending] == [("10_4", "15")]  # one task left: its own row
    assert task_ranges((5, 6, 7, 9, 20)) == "5-7,9,20"


def test_pending_array_tasks_collapse_into_one_row() -> None:
    tasks = [job(11 + t, 0, 1, duration=8 * H, limit=9 * H, array_id=10, array_task=t, array_limit=2) for t in range(6)]
    pending = [r for r in schedule(TWO_NODES, tasks, T0, 4 * H) if r.state == "PENDING"]
    assert [(r.job_id, r.job_id_raw, r.pending_tasks) for r in pending] == [("10_[2-5]", "10", (2, 3, 4, 5))]


@pytest.fixture(scope="module")
def workload() -> tuple[list[Run], object]:
    cluster = build_cluster("w", 64, seed=11)
    jobs = generate_jobs(cluster, build_org(11), date(2026, 10, 5), 3, seed=11)
    return schedule(cluster, jobs, T0, 3 * 86400), build_inventory(cluster, seed=11)


def test_no_device_is_double_booked(workload: tuple[list[Run], object]) -> None:
    runs, _ = workload
    busy: dict[tuple, list[tuple[datetime, datetime]]] = {}
    for run in runs:
        if run.start is not None:
            assert len(set(run.instances)) == len(run.instances)
            for instance in run.instances:
                busy.setdefault(instance, []).append((run.start, run.alloc_end))
    assert sum(len(v) for v in busy.values()) > 100
    for intervals in busy.values():
        intervals.sort()
        assert all(prev_end <= start for (_, prev_end), (start, _) in itertools.pairwise(intervals))


def test_placements_match_requests(workload: tuple[list[Run], object]) -> None:
    runs, inventory = workload
    rows = {
        (h, g, i): (m, p)
        for h, g, i, m, p in inventory.select("hostname", "gpu", "gpu_i_id", "gpu_model", "gpu_i_profile").iter_rows()
    }
    multi = 0
    for run in (r for r in runs if r.start is not None):
        request = run.job.request
        kinds = {rows[i] for i in run.instances}
        if request.mig_profile:
            assert len(run.instances) == 1 and kinds == {("A100", request.mig_profile)}
            continue
        assert len(run.instances) == request.gpus and len(run.hosts) == request.nodes
        assert len(kinds) == 1 and kinds.pop()[0] in request.models
        if request.nodes > 1:
            multi += 1
            assert all(sum(1 for h, _, _ in run.instances if h == host) == 8 for host in run.hosts)
    assert multi > 0


def test_schedule_is_deterministic() -> None:
    cluster = build_cluster("w", 32, seed=3)
    jobs = generate_jobs(cluster, build_org(3), date(2026, 10, 1), 2, seed=3)
    assert schedule(cluster, jobs, T0, 2 * 86400) == schedule(cluster, jobs, T0, 2 * 86400)
