"""Node events a simulated site can have: a mid-window MIG re-partition of one node and a
drained node. Both are options (``simulate(..., repartition=True, drain=True)``), off by default.

- **Re-partition**: from ``at`` (a whole hour) every GPU of the node has the layout
  ``REPARTITION_LAYOUT`` instead of ``MIG_LAYOUT``. An instance of both layouts (the same GPU
  instance id and profile) lives through it; the others exist before or after only. Jobs on an
  instance that ends must end (by their time limit) before ``at``; DCGM reports each instance
  only while it exists.
- **Drain**: no job runs on the node during ``[start, end)`` (jobs whose time limit would reach
  into it do not start there); its GPUs keep reporting, idle. Written as Slurm records it, in
  the file that ``[clusters.slurm] events_file`` reads (docs/slurm.md, "Downtime"): ``sacctmgr
  --parsable2 show event event=node format=Cluster,NodeName,Start,End,State,User,Reason``
  with its header line (tests/fixtures/sacctmgr/show_event_22.05.txt was recorded from the
  real one).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

from contracts.slurm_downtime import EVENTS
from simulate.hardware import MIG_GI_IDS, Cluster, slot_table

# The layout the node is re-partitioned into, as (GPU instance id, profile): two 3g.40gb
# instances, as nvidia-smi numbers them on an A100 80GB (one compute slice left unused).
REPARTITION_LAYOUT: tuple[tuple[int, str], ...] = ((1, "3g.40gb"), (2, "3g.40gb"))
DRAIN_REASON = "bad GPU 3: replacing it"
DRAIN_USER = "root(0)"  # sacctmgr prints the user as name(uid)
_SLURM_TIME = "%Y-%m-%dT%H:%M:%S"
_FOREVER = 1 << 62


@dataclass(frozen=True)
class Repartition:
    hostname: str
    at: datetime  # a whole hour
    layout: tuple[tuple[int, str], ...]  # (gpu_i_id, profile) after ``at``


@dataclass(frozen=True)
class Drain:
    hostname: str
    start: datetime
    end: datetime
    reason: str = DRAIN_REASON
    user: str = DRAIN_USER


@dataclass(frozen=True)
class NodeEvents:
    repartitions: tuple[Repartition, ...] = ()
    drains: tuple[Drain, ...] = ()


def site_events(cluster: Cluster, window_start: datetime, days: int, repartition: bool, drain: bool) -> NodeEvents:
    """The events of a simulated window: the first MIG node re-partitioned at 13:00 of the
    window's middle day; the first whole-GPU node drained from a quarter into the window for
    a tenth of it (at least an hour; minutes off the hour, as operators do)."""
    repartitions: tuple[Repartition, ...] = ()
    drains: tuple[Drain, ...] = ()
    if repartition:
        mig = [n for n in cluster.nodes if n.mig_layout is not None]
        if not mig:
            raise ValueError("a MIG re-partition needs a MIG node: simulate at least 32 GPUs")
        at = window_start + timedelta(days=days // 2, hours=13)
        repartitions = (Repartition(mig[0].hostname, at, REPARTITION_LAYOUT),)
    if drain:
        whole = [n for n in cluster.nodes if n.mig_layout is None]
        if not whole:
            raise ValueError("a drain needs a whole-GPU node")
        start = window_start + timedelta(hours=days * 24 // 4 + 3, minutes=17)
        length = timedelta(hours=max(1, days * 24 // 10), minutes=26)
        drains = (Drain(whole[0].hostname, start, start + length),)
    return NodeEvents(repartitions, drains)


def with_layouts(cluster: Cluster, events: NodeEvents) -> Cluster:
    """The cluster with each re-partitioned node's later layout (its slots join the slot table)."""
    later = {r.hostname: r.layout for r in events.repartitions}
    nodes = tuple(
        dataclasses.replace(n, later_layout=later[n.hostname]) if n.hostname in later else n for n in cluster.nodes
    )
    return dataclasses.replace(cluster, nodes=nodes)


def _initial(node_layout: tuple[str, ...] | None) -> set[tuple[int, str]]:
    return set(zip(MIG_GI_IDS, node_layout or (), strict=False)) if node_layout else set()


def instance_windows(cluster: Cluster, events: NodeEvents) -> pl.DataFrame:
    """Instances that exist only part of the window: hostname, gpu_i_id, valid_from, valid_until
    (null: open); one row per instance id of each re-partitioned node (the same on every GPU)."""
    rows = []
    for r in events.repartitions:
        node = next(n for n in cluster.nodes if n.hostname == r.hostname)
        before, after = _initial(node.mig_layout), set(r.layout)
        rows += [(r.hostname, gi, None, r.at) for gi, _ in sorted(before - after)]
        rows += [(r.hostname, gi, r.at, None) for gi, _ in sorted(after - before)]
    schema = {
        "hostname": pl.String(),
        "gpu_i_id": pl.Int16(),
        "valid_from": pl.Datetime("us"),
        "valid_until": pl.Datetime("us"),
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def unavailable_slots(
    cluster: Cluster, events: NodeEvents, window_start: datetime
) -> tuple[tuple[int, int, frozenset[int]], ...]:
    """(from, to, slot ids) in seconds from the window start: slots no job may hold then."""

    def seconds(at: datetime) -> int:
        return int((at - window_start).total_seconds())

    slots = slot_table(cluster)
    out: list[tuple[int, int, frozenset[int]]] = []
    for window in instance_windows(cluster, events).iter_rows(named=True):
        ids = frozenset(
            i for i, s in enumerate(slots) if s.hostname == window["hostname"] and s.gi_id == window["gpu_i_id"]
        )
        if window["valid_until"] is not None:
            out.append((seconds(window["valid_until"]), _FOREVER, ids))
        if window["valid_from"] is not None:
            out.append((-_FOREVER, seconds(window["valid_from"]), ids))
    for d in events.drains:
        ids = frozenset(i for i, s in enumerate(slots) if s.hostname == d.hostname)
        out.append((seconds(d.start), seconds(d.end), ids))
    return tuple(out)


def drop_absent(samples: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """The samples of instances that existed at their timestamp (RAW_SAMPLE_SCHEMA rows)."""
    if windows.is_empty():
        return samples
    absent = pl.lit(False)
    for w in windows.iter_rows(named=True):
        mine = (pl.col("hostname") == w["hostname"]) & (pl.col("gpu_i_id") == w["gpu_i_id"])
        if w["valid_from"] is not None:
            absent = absent | (mine & (pl.col("ts") < w["valid_from"]))
        if w["valid_until"] is not None:
            absent = absent | (mine & (pl.col("ts") >= w["valid_until"]))
    return samples.filter(~absent.fill_null(False))


def write_sacctmgr_events(path: Path, events: NodeEvents, cluster: str) -> int:
    """The drains as ``sacctmgr --parsable2 show event event=node format=...`` prints them, header
    line first; returns the node events."""
    lines = ["|".join(EVENTS.headers)]
    for d in events.drains:
        fields = (cluster, d.hostname, d.start.strftime(_SLURM_TIME), d.end.strftime(_SLURM_TIME), "DRAIN")
        lines.append("|".join((*fields, d.user, d.reason)))
    path.write_text("\n".join(lines) + "\n")
    return len(events.drains)
