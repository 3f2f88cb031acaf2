"""Downtime on the test cluster: drain the node with a reason and resume it, drain it again (left
open), and create a maintenance (MAINT) reservation and an ordinary one, each a known interval.

    .venv/bin/python -m tests.slurm_harness.downtime_fixtures tests/fixtures/slurm_downtime

records what cardhours reads of them (sources/slurm_downtime.py) into the directory:
``real_22.05_events.txt`` and ``real_22.05_reservations.txt`` (``sacctmgr --parsable2 show
event|reservation ... format=<cardhours' list>``, with the header line, as file mode reads them),
``real_22.05_scontrol_reservations.txt`` (``scontrol show reservation --oneliner`` while both
reservations exist, for reference) and ``real_22.05_downtime.json`` (what was done, and when).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sources.slurm_downtime import EVENTS, RESERVATIONS, Record, sacctmgr_arguments
from tests.slurm_harness.cluster import SlurmCluster
from tests.slurm_harness.config import NODE

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
DRAIN_REASON = "gpu 3 fell off the bus|xid 79"  # a '|' in the free text, as operators write them
OPEN_REASON = "waiting for a new PSU"
MAINT, TEAM = "maint-bios", "team-nlp"


@dataclass
class Downtime:
    """What was done to the node, as UTC times (whole seconds, as Slurm records them)."""

    began: str = ""
    drained: list[str] = field(default_factory=list)  # [start, end] of the closed drain
    open_drain_start: str = ""
    maint: list[str] = field(default_factory=list)  # [start, end]
    team: list[str] = field(default_factory=list)
    ended: str = ""


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def _node(cluster: SlurmCluster, state: str, reason: str | None = None) -> None:
    args = ["update", f"nodename={NODE}", f"state={state}", *([f"reason={reason}"] if reason else [])]
    cluster.command("scontrol", args)


def _reserve(cluster: SlurmCluster, name: str, start: datetime, minutes: int, flags: str) -> list[str]:
    cluster.command(
        "scontrol",
        [
            "create",
            "reservation",
            f"reservationname={name}",
            f"starttime={start.strftime(TIME_FORMAT)}",
            f"duration={minutes}",
            f"nodes={NODE}",
            "users=root",
            f"flags={flags}",
        ],
    )
    return [start.strftime(TIME_FORMAT), (start + timedelta(minutes=minutes)).strftime(TIME_FORMAT)]


def make_downtime(cluster: SlurmCluster, drain_seconds: float = 3) -> Downtime:
    """Drain (with a reason) and resume, reserve, then drain again and leave it drained."""
    done = Downtime(began=_now().strftime(TIME_FORMAT))
    _node(cluster, "drain", DRAIN_REASON)
    drained = _now()
    time.sleep(drain_seconds)
    _node(cluster, "resume")
    done.drained = [drained.strftime(TIME_FORMAT), _now().strftime(TIME_FORMAT)]
    start = _now() + timedelta(seconds=2)
    done.maint = _reserve(cluster, MAINT, start, 1, "maint,ignore_jobs")
    done.team = _reserve(cluster, TEAM, start + timedelta(minutes=2), 2, "ignore_jobs")
    time.sleep(2)
    _node(cluster, "drain", OPEN_REASON)
    done.open_drain_start = _now().strftime(TIME_FORMAT)
    time.sleep(2)
    done.ended = _now().strftime(TIME_FORMAT)
    return done


def sacctmgr(cluster: SlurmCluster, record: Record, start: datetime, end: datetime, header: bool) -> str:
    """What cardhours' command mode runs (with the header line when ``header``)."""
    args = sacctmgr_arguments(record, start, end, cluster.cluster_name)
    return cluster.command("sacctmgr", [a for a in args if header is False or a != "--noheader"]).stdout


def record(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with SlurmCluster() as cluster:
        done = make_downtime(cluster)
        start = datetime.strptime(done.began, TIME_FORMAT).replace(minute=0, second=0)
        end = start + timedelta(days=1)
        (out / "real_22.05_events.txt").write_text(sacctmgr(cluster, EVENTS, start, end, header=True))
        (out / "real_22.05_reservations.txt").write_text(sacctmgr(cluster, RESERVATIONS, start, end, header=True))
        scontrol = cluster.command("scontrol", ["show", "reservation", "--oneliner"]).stdout
        (out / "real_22.05_scontrol_reservations.txt").write_text(scontrol)
        version = cluster.command("sacctmgr", ["--version"]).stdout.strip()
        manifest = {"slurm_version": version, "cluster": cluster.cluster_name, "node": NODE, **asdict(done)}
        manifest |= {"drain_reason": DRAIN_REASON, "open_reason": OPEN_REASON, "maint_name": MAINT, "team_name": TEAM}
        (out / "real_22.05_downtime.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    record(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/slurm_downtime"))
