"""A downtime scenario on the test cluster, with known times, and what Slurm recorded of it.

    with SlurmCluster() as cluster:
        run = run_scenario(cluster)          # ~60 s
        roll_up(cluster, *run.window)        # sacctmgr rollup: sreport answers at once
        outputs = collect(cluster, run)      # file name -> text, as tests/fixtures/slurm/downtime/

Steps, in order, on the one node (8 GPUs), each named in ``Run.steps`` with its UTC times:

1. ``before``: a 2-GPU job, 6 s.
2. ``drain-idle``: the idle node drained ~6 s, then resumed.
3. ``drain-busy``: a 2-GPU job runs 6 s; ~2 s into it the node is drained (DRAINING until the
   job ends, then DRAINED); resumed ~4 s after the job ended.
4. ``maint``: a maintenance reservation (``flags=maint``) on the node; once slurmctld has
   flagged the node MAINT, it is drained ~4 s and resumed; the reservation is deleted ~3 s later.
5. ``team``: an ordinary reservation (``accounts=nlp-pretrain``); a 4-GPU job runs 5 s in it
   (``--reservation=team``); then the node is drained ~3 s inside it; the reservation is
   deleted ~1 s after the resume.
6. ``after``: an 8-GPU job, 6 s.

Reservations are created ``starttime=now`` with a long duration and ended by deleting them,
because Slurm rounds a reservation's duration to whole minutes; the deletion is the end that
slurmdbd records. ``Run.window`` is the whole hours around the scenario: sreport rounds its
``start``/``end`` to the hour and reports from hourly rollups.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from contracts.schemas import SACCT_FORMAT
from tests.slurm_harness.cluster import SlurmCluster
from tests.slurm_harness.config import NODE
from tests.slurm_harness.procs import wait_until

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
RESERVATION_MINUTES = 30  # longer than the scenario; reservations end when deleted
EVENT_FORMAT = "Cluster,ClusterNodes,NodeName,Event,TimeStart,TimeEnd,State,Reason,User,TRES"
RESERVATION_FORMAT = "Cluster,Name,Id,Flags,NodeNames,TRES,TimeStart,TimeEnd,UnusedWall"
SACCT_RESV_FORMAT = "JobIDRaw,JobName,Account,Eligible,Start,End,ReqCPUS,AllocTRES,ReservationId,Reservation,State"
SINFO_FORMAT = "%N|%T|%G|%E|%H"


@dataclass
class Run:
    """What the scenario did: steps (name -> (start, end)), jobs (name -> id), snapshots."""

    began: datetime
    ended: datetime | None = None
    steps: dict[str, tuple[str, str]] = field(default_factory=dict)
    jobs: dict[str, str] = field(default_factory=dict)
    snapshots: dict[str, str] = field(default_factory=dict)  # fixture name -> output while it happened

    @property
    def window(self) -> tuple[datetime, datetime]:
        """The whole UTC hours that hold the scenario (sreport's granularity)."""
        assert self.ended is not None
        start = self.began.replace(minute=0, second=0)
        end = self.ended.replace(minute=0, second=0) + timedelta(hours=1)
        return start, end


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def _scontrol(cluster: SlurmCluster, *args: str) -> str:
    return cluster.command("scontrol", list(args)).stdout


def _node(cluster: SlurmCluster, state: str, reason: str = "") -> None:
    args = ["update", f"nodename={NODE}", f"state={state}"]
    _scontrol(cluster, *args, *([f"reason={reason}"] if reason else []))


def _job(cluster: SlurmCluster, run: Run, name: str, account: str, gpus: int, seconds: int, *extra: str) -> str:
    job = cluster.submit(
        [f"--job-name={name}", f"--account={account}", f"--gres=gpu:h200:{gpus}", *extra, f"--wrap=sleep {seconds}"]
    )
    run.jobs[name] = job
    return job


def _wait_running(cluster: SlurmCluster, job: str) -> None:
    wait_until(f"job {job} running", lambda: cluster.queue().get(job) == "RUNNING", 30, cluster.daemons)


def _snapshot(cluster: SlurmCluster, run: Run, moment: str) -> None:
    run.snapshots[f"scontrol_node_{moment}.txt"] = _scontrol(cluster, "show", "node", "--oneliner")
    run.snapshots[f"sinfo_{moment}.txt"] = cluster.command("sinfo", ["-N", "-o", SINFO_FORMAT]).stdout


def _reservation(cluster: SlurmCluster, name: str, *spec: str) -> None:
    _scontrol(
        cluster,
        "create",
        "reservation",
        f"reservationname={name}",
        "starttime=now",
        f"duration={RESERVATION_MINUTES}",
        f"nodes={NODE}",
        *spec,
    )


def _drain(cluster: SlurmCluster, run: Run, reason: str, seconds: float, moment: str | None = None) -> None:
    """Drain the node, hold it ``seconds`` (snapshot after 1 s when ``moment``), resume it."""
    _node(cluster, "drain", f"cardhours test: {reason}")
    if moment:
        time.sleep(1)
        _snapshot(cluster, run, moment)
        seconds -= 1
    time.sleep(seconds)
    _node(cluster, "resume")


def _before(cluster: SlurmCluster, run: Run) -> None:
    cluster.wait_done([_job(cluster, run, "before", "vis-train", 2, 6)], timeout=60)


def _drain_idle(cluster: SlurmCluster, run: Run) -> None:
    _drain(cluster, run, "drain idle node", 6, moment="drained")


def _drain_busy(cluster: SlurmCluster, run: Run) -> None:
    busy = _job(cluster, run, "drain-busy", "vis-train", 2, 6)
    _wait_running(cluster, busy)
    time.sleep(2)
    _node(cluster, "drain", "cardhours test: drain busy node")
    time.sleep(1)
    _snapshot(cluster, run, "draining")
    cluster.wait_done([busy], timeout=60)
    time.sleep(4)
    _node(cluster, "resume")


def _maint(cluster: SlurmCluster, run: Run) -> None:
    _reservation(cluster, "maint", "users=root", "flags=maint")
    # slurmctld flags the node MAINT a few seconds after the reservation starts; a drain before
    # that is recorded as a plain DRAIN event (then split into DRAIN$): wait, so the run repeats.

    def in_maint() -> bool:
        return "MAINTENANCE" in _scontrol(cluster, "show", "node", NODE)

    wait_until("node flagged MAINT by the maintenance reservation", in_maint, 30, cluster.daemons)
    run.snapshots["scontrol_reservation_maint.txt"] = _scontrol(cluster, "show", "reservation", "--oneliner")
    _drain(cluster, run, "drain in maintenance", 4, moment="maint_drained")
    time.sleep(3)
    _scontrol(cluster, "delete", "reservation=maint")


def _team(cluster: SlurmCluster, run: Run) -> None:
    _reservation(cluster, "team", "accounts=nlp-pretrain")
    job = _job(cluster, run, "in-resv", "nlp-pretrain", 4, 5, "--reservation=team")
    _wait_running(cluster, job)
    _snapshot(cluster, run, "reserved")
    run.snapshots["scontrol_reservation_team.txt"] = _scontrol(cluster, "show", "reservation", "--oneliner")
    cluster.wait_done([job], timeout=60)
    _drain(cluster, run, "drain in reservation", 3)
    time.sleep(1)
    _scontrol(cluster, "delete", "reservation=team")


def _after(cluster: SlurmCluster, run: Run) -> None:
    cluster.wait_done([_job(cluster, run, "after", "legacy-ml", 8, 6)], timeout=60)


STEPS: dict[str, Callable[[SlurmCluster, Run], None]] = {
    "before": _before,
    "drain-idle": _drain_idle,
    "drain-busy": _drain_busy,
    "maint": _maint,
    "team": _team,
    "after": _after,
}


def run_scenario(cluster: SlurmCluster) -> Run:
    """Every step of ``STEPS`` in order; ``Run.steps`` holds each one's UTC start and end."""
    run = Run(began=utcnow() - timedelta(seconds=1))
    _snapshot(cluster, run, "idle")
    for name, step in STEPS.items():
        began = utcnow()
        step(cluster, run)
        run.steps[name] = (began.strftime(TIME_FORMAT), utcnow().strftime(TIME_FORMAT))
    run.ended = utcnow() + timedelta(seconds=1)
    return run


def roll_up(cluster: SlurmCluster, start: datetime, end: datetime) -> None:
    """Roll the hours [start, end) up now (``sacctmgr rollup``), so that sreport has them.

    slurmdbd rolls usage up by itself only for completed hours (at start-up and hourly).
    ``sacctmgr rollup START END`` (DBD_ROLL_USAGE, operator only; in the 22.05 source, not in
    the man page) rolls the given hours at once; records still open count up to the hour's end.
    """
    cluster.sacctmgr(["rollup", start.strftime(TIME_FORMAT), end.strftime(TIME_FORMAT)])


def collect(cluster: SlurmCluster, run: Run) -> dict[str, str]:
    """Every output the comparison needs, for the scenario's window, by fixture file name."""
    start, end = (t.strftime(TIME_FORMAT) for t in run.window)
    sreport = ["-P", "cluster", "utilization", "-T", "gres/gpu,cpu", "-t", "seconds", f"start={start}", f"end={end}"]
    window = ["-S", start, "-E", end, "-M", cluster.cluster_name]
    outputs = {
        "sreport_utilization.txt": cluster.command("sreport", sreport).stdout,
        "sacctmgr_events.txt": cluster.command(
            "sacctmgr", ["-P", "show", "event", f"start={start}", f"end={end}", f"format={EVENT_FORMAT}"]
        ).stdout,
        "sacctmgr_reservations.txt": cluster.command(
            "sacctmgr", ["-P", "show", "reservation", f"start={start}", f"end={end}", f"format={RESERVATION_FORMAT}"]
        ).stdout,
        "sacct.txt": cluster.sacct(["--parsable2", "--allusers", "--duplicates", f"--format={SACCT_FORMAT}", *window]),
        "sacct_reservation.txt": cluster.sacct(["-P", "-a", "-X", f"--format={SACCT_RESV_FORMAT}", *window]),
    }
    return outputs | run.snapshots
