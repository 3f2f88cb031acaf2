"""sreport's ``cluster utilization`` categories, measured on a real Slurm 22.05 with accounting.

The downtime scenario (tests/slurm_harness/downtime.py: jobs, drains of an idle and a busy
node, a maintenance and an ordinary reservation with a drain and a job inside) runs once,
``sacctmgr rollup`` rolls its hours, and sreport's GPU and CPU seconds are checked against
what slurmdbd itself recorded (node events, reservations, jobs): to the second, through the
rollup rules of tests/slurm_harness/sreport_rules.py and through each definition on its own.
Every test also runs on the recorded outputs in tests/fixtures/slurm/downtime/ (fast).
docs/slurm.md "sreport's categories" states the definitions pinned here.

The last tests run cardhours' own capacity split on the same records (tests/slurm_harness/
sreport_split.py; live, the downtime is read in cardhours' command mode, through the cluster's
sacctmgr) and compare it with sreport category by category, to the second, through the
definitions docs/slurm.md says differ, each computed from Slurm's records.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from contracts.capacity_states import ALLOCATED, DOWN, IDLE, PLANNED_DOWN, RESERVED
from sources.slurm_downtime import EVENTS, RESERVATIONS, run_sacctmgr
from tests.slurm_harness import GPUS, SlurmCluster
from tests.slurm_harness import sreport_records as records
from tests.slurm_harness.config import CLUSTER_NAME, CPUS
from tests.slurm_harness.downtime import TIME_FORMAT, collect, roll_up, run_scenario
from tests.slurm_harness.sreport_rules import HOUR, utilization
from tests.slurm_harness.sreport_split import cardhours_split, sacctmgr_rows

FIXTURES = Path(__file__).parents[1] / "fixtures" / "slurm" / "downtime"
GPU = "gres/gpu"


@dataclass
class Measured:
    window: tuple[int, int]
    events: list[records.Event]
    resvs: list[records.Reservation]
    jobs: list[records.Job]
    sreport: dict[str, dict[str, int]]
    names: dict[str, str]  # job name -> job id
    sacct: str  # cardhours' sacct --parsable2 output of the window, with its header
    downtime: tuple[pl.DataFrame, pl.DataFrame, int]  # cardhours' event rows, reservation rows, rejects

    def event(self, reason: str) -> list[records.Event]:
        return [e for e in self.events if e.node and reason in e.reason]

    def job(self, name: str) -> records.Job:
        return next(j for j in self.jobs if j.id == self.names[name])

    def resv(self, name: str) -> records.Reservation:
        return next(r for r in self.resvs if r.name == name)


def _measured(
    outputs: dict[str, str], window: list[str], names: dict[str, str], downtime: tuple | None = None
) -> Measured:
    """What Slurm recorded; ``downtime``: cardhours' sacctmgr rows (None: read from the saved files)."""
    start, end = (records.epoch(t) or 0 for t in window)
    events, resvs = outputs["sacctmgr_events.txt"], outputs["sacctmgr_reservations.txt"]
    return Measured(
        window=(start, end),
        events=records.events(events),
        resvs=records.reservations(resvs),
        jobs=records.jobs(outputs["sacct_reservation.txt"]),
        sreport=records.utilization(outputs["sreport_utilization.txt"]),
        names=names,
        sacct=outputs["sacct.txt"],
        downtime=downtime or sacctmgr_rows(events, resvs, has_header=True),
    )


def _command_mode(cluster: SlurmCluster, start: datetime, end: datetime) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """cardhours' command mode: its own sacctmgr arguments, through the test cluster's sacctmgr."""
    events, resvs = (
        run_sacctmgr(cluster.sacctmgr_command, r, start, end, cluster.cluster_name).decode()
        for r in (EVENTS, RESERVATIONS)
    )
    return sacctmgr_rows(events, resvs, has_header=False)


@pytest.fixture(
    scope="module",
    params=[
        "recorded",
        pytest.param("live", marks=[pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]),
    ],
)
def measured(request: pytest.FixtureRequest) -> Iterator[Measured]:
    if request.param == "recorded":
        manifest = json.loads((FIXTURES / "manifest.json").read_text())
        outputs = {p.name: p.read_text() for p in FIXTURES.glob("*.txt")}
        yield _measured(outputs, manifest["window"], manifest["jobs"])
        return
    with SlurmCluster() as cluster:
        run = run_scenario(cluster)
        roll_up(cluster, *run.window)
        outputs = collect(cluster, run)
        downtime = _command_mode(cluster, *run.window)
        yield _measured(outputs, [t.strftime(TIME_FORMAT) for t in run.window], run.jobs, downtime)


def _seconds(job: records.Job) -> int:
    assert job.start is not None and job.end is not None
    return job.end - job.start


def _length(event: records.Event) -> int:
    assert event.end is not None, event
    return event.end - event.start


def test_sreport_equals_the_rollup_rules_applied_to_the_records(measured: Measured) -> None:
    for name in (GPU, "cpu"):
        assert (
            utilization(measured.events, measured.resvs, measured.jobs, name, *measured.window)
            == (measured.sreport[name])
        ), name


def test_gpu_capacity_counts_only_while_the_cluster_was_registered(measured: Measured) -> None:
    (registered,) = [e for e in measured.events if not e.node]
    assert registered.end is None and registered.tres[GPU] == GPUS
    start, end = measured.window
    assert start < registered.start < end
    assert measured.sreport[GPU]["reported"] == GPUS * (end - registered.start)


def test_gpu_allocated_is_jobs_outside_reservations_only(measured: Measured) -> None:
    outside = [j for j in measured.jobs if not j.resv_id]
    assert measured.sreport[GPU]["alloc"] == sum(j.tres[GPU] * _seconds(j) for j in outside)
    inside = measured.job("in-resv")
    assert inside.resv_id == measured.resv("team").id and inside.tres[GPU] * _seconds(inside) > 0


def test_reservations_carry_no_gpus_so_maintenance_is_not_gpu_planned_down(measured: Measured) -> None:
    assert all(GPU not in r.tres and r.tres["cpu"] == CPUS for r in measured.resvs)
    assert "MAINT" in measured.resv("maint").flags and "MAINT" not in measured.resv("team").flags
    assert (measured.sreport[GPU]["pdown"], measured.sreport[GPU]["plan"]) == (0, 0)


def test_drain_events_start_when_the_node_is_drained_and_maintenance_drains_are_flagged(measured: Measured) -> None:
    (idle,) = measured.event("drain idle node")
    (busy,) = measured.event("drain busy node")
    (maint,) = measured.event("drain in maintenance")
    (in_resv,) = measured.event("drain in reservation")
    assert (idle.state, busy.state, maint.state, in_resv.state) == ("DRAIN", "DRAIN", "DRAIN$", "DRAIN")
    job_end = measured.job("drain-busy").end
    assert job_end is not None and job_end <= busy.start <= job_end + 2  # DRAINING with a job is no event
    team = measured.resv("team")
    assert team.start <= in_resv.start and in_resv.end is not None and in_resv.end <= team.end


def _gaps(measured: Measured) -> int:
    """Per hour, each unflagged node event less its overlap with the hour's last reservation on
    the node, where that overlap is negative: the seconds slurmdbd adds to Down by mistake."""
    gaps = 0
    for h0 in range(*measured.window, HOUR):
        resvs = sorted((r for r in measured.resvs if r.start < h0 + HOUR and r.end > h0), key=lambda r: r.start)
        for e in (e for e in measured.events if e.node and not e.maint and e.start < h0 + HOUR):
            if resvs and e.end is not None and e.end > h0:
                last = resvs[-1]
                end, start = min(e.end, last.end, h0 + HOUR), max(e.start, last.start, h0)
                gaps += max(0, start - end)
    return gaps


def test_gpu_down_is_unflagged_node_events_plus_the_gap_to_a_later_reservation(measured: Measured) -> None:
    unflagged = [e for e in measured.events if e.node and not e.maint]
    assert len(unflagged) == 3
    down = measured.sreport[GPU]["down"]
    assert _gaps(measured) > 0
    assert down == GPUS * (sum(_length(e) for e in unflagged) + _gaps(measured))


def test_cpu_counts_the_reservations_gpus_do_not(measured: Measured) -> None:
    cpu = measured.sreport["cpu"]
    maint, team = measured.resv("maint"), measured.resv("team")
    assert cpu["pdown"] == CPUS * (maint.end - maint.start)  # the drain inside it is flagged: skipped
    (in_resv,) = measured.event("drain in reservation")
    jobs = sum(j.tres["cpu"] * _seconds(j) for j in measured.jobs if not j.resv_id)
    assert cpu["alloc"] == jobs + CPUS * (team.end - team.start - _length(in_resv))


def test_idle_is_the_rest(measured: Measured) -> None:
    for name in (GPU, "cpu"):
        row = measured.sreport[name]
        assert row["idle"] == row["reported"] - row["alloc"] - row["down"] - row["pdown"] - row["plan"], name


@dataclass
class Compared:
    cardhours: dict[str, float]  # GPU-seconds per capacity state, the window
    sreport: dict[str, int]  # the gres/gpu row
    unregistered: int  # GPU-seconds of the window before slurmctld registered the cluster
    in_reservation: int  # GPU-seconds of jobs run inside a reservation
    gap: int  # GPU-seconds slurmdbd's defect adds to Down
    maintenance: int  # GPU-seconds of maintenance reservations
    reserved: int  # GPU-seconds of other reservations that no job and no drain used


def _overlap(a0: int, a1: int | None, b0: int, b1: int) -> int:
    return max(0, min(a1 if a1 is not None else b1, b1) - max(a0, b0))


@pytest.fixture(scope="module")
def compared(measured: Measured) -> Compared:
    start, end = (datetime.fromtimestamp(t, UTC).replace(tzinfo=None) for t in measured.window)
    events, resvs, rejected = measured.downtime
    assert rejected == 0
    split, _, _ = cardhours_split(measured.sacct, events, resvs, CLUSTER_NAME, start, end)
    (registered,) = [e for e in measured.events if not e.node]
    unflagged = [e for e in measured.events if e.node and not e.maint]
    inside = [j for j in measured.jobs if j.resv_id]
    others = [r for r in measured.resvs if "MAINT" not in r.flags]
    drained = sum(_overlap(e.start, e.end, r.start, r.end) for e in unflagged for r in others)
    in_reservation = sum(j.tres[GPU] * _seconds(j) for j in inside)
    return Compared(
        cardhours=split,
        sreport=measured.sreport[GPU],
        unregistered=GPUS * max(0, registered.start - measured.window[0]),
        in_reservation=in_reservation,
        gap=GPUS * _gaps(measured),
        maintenance=GPUS * sum(r.end - r.start for r in measured.resvs if "MAINT" in r.flags),
        reserved=GPUS * (sum(r.end - r.start for r in others) - drained) - in_reservation,
    )


def test_cardhours_allocated_is_sreport_allocated_plus_the_jobs_in_reservations(compared: Compared) -> None:
    assert compared.in_reservation > 0
    assert compared.cardhours[ALLOCATED] == compared.sreport["alloc"] + compared.in_reservation


def test_cardhours_down_is_sreport_down_without_the_defects_gap(compared: Compared) -> None:
    assert compared.gap > 0
    assert compared.cardhours[DOWN] == compared.sreport["down"] - compared.gap


def test_cardhours_planned_down_is_the_maintenance_reservation_sreport_leaves_idle(compared: Compared) -> None:
    assert compared.sreport["pdown"] == 0 and compared.maintenance > 0
    assert compared.cardhours[PLANNED_DOWN] == compared.maintenance


def test_cardhours_reserved_is_the_reservation_no_job_or_drain_used(compared: Compared) -> None:
    assert compared.sreport["plan"] == 0 and compared.reserved > 0
    assert compared.cardhours[RESERVED] == compared.reserved


def test_cardhours_idle_and_capacity_differ_by_exactly_the_documented_terms(compared: Compared) -> None:
    c, s = compared.cardhours, compared.sreport
    assert sum(c.values()) == s["reported"] + compared.unregistered
    moved = compared.in_reservation - compared.gap + compared.maintenance + compared.reserved
    assert c[IDLE] == s["idle"] + compared.unregistered - moved
