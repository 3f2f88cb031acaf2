"""``cardhours simulate``: inventory -> jobs -> schedule -> per-day samples -> output files."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

from simulate.cluster import build_cluster, build_inventory
from simulate.config_writer import write_config
from simulate.jobs import DAY, build_org, generate_jobs
from simulate.kube import hook as kube_hook
from simulate.node_events import (
    drop_absent,
    instance_windows,
    site_events,
    unavailable_slots,
    with_layouts,
    write_sacctmgr_events,
)
from simulate.parquet_writer import write_day_parquet
from simulate.sacct_writer import write_sacct
from simulate.samples import generate_day
from simulate.scheduler import schedule
from simulate.truth import TruthAccumulator, allocations_frame, truth_frame
from simulate.truth_capacity import capacity_truth

METRICS_FORMATS = ("parquet", "om", "both")
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class SimulationResult:
    """Where a simulation wrote its files, and how much it simulated."""

    out_dir: Path
    sacct_path: Path
    truth_path: Path
    inventory_path: Path
    config_path: Path
    metrics_dir: Path | None  # hive-partitioned Parquet (metrics_format parquet/both)
    om_path: Path | None  # OpenMetrics text (metrics_format om/both)
    window_start: datetime
    window_end: datetime
    n_nodes: int
    n_instances: int  # inventory rows: GPUs plus MIG instances
    n_jobs: int  # submitted jobs and array tasks
    n_runs: int  # truth rows
    n_sacct_rows: int
    n_samples: int
    kube_state_path: Path | None = None  # kube-state-metrics / Kueue / Volcano series (kube=True): file or folder
    truth_pods_path: Path | None = None
    truth_capacity_path: Path | None = None
    events_path: Path | None = None  # sacctmgr show event (drain=True)

    def paths(self) -> dict[str, Path]:
        """The files and directories written, by name (absent formats left out)."""
        named = {
            "sacct": self.sacct_path,
            "truth": self.truth_path,
            "inventory": self.inventory_path,
            "config": self.config_path,
            "metrics": self.metrics_dir,
            "openmetrics": self.om_path,
            "kube_state": self.kube_state_path,
            "truth_pods": self.truth_pods_path,
            "truth_capacity": self.truth_capacity_path,
            "events": self.events_path,
        }
        return {name: path for name, path in named.items() if path is not None}


def _check(gpus: int, days: int, step_seconds: int, metrics_format: str) -> None:
    if gpus < 1 or days < 1:
        raise ValueError(f"gpus and days must be positive (got gpus={gpus}, days={days})")
    if step_seconds < 1 or DAY % step_seconds:
        raise ValueError(f"step_seconds must divide 86400 (got {step_seconds})")
    if metrics_format not in METRICS_FORMATS:
        raise ValueError(f"metrics_format must be one of {', '.join(METRICS_FORMATS)} (got {metrics_format!r})")


def simulate(
    out_dir: Path,
    gpus: int,
    days: int,
    start: date,
    seed: int,
    step_seconds: int = 30,
    metrics_format: str = "parquet",
    cluster: str = "sim",
    progress: Progress | None = None,
    kube: bool = False,
    kube_state_step: int | None = None,
    kube_state_daily: bool = False,
    repartition: bool = False,
    drain: bool = False,
) -> SimulationResult:
    """Simulate ``days`` days from ``start`` (UTC) of a ``gpus``-GPU cluster into ``out_dir``.
    ``kube``: add the Kubernetes pool, its kube-state-metrics series scraped every
    ``kube_state_step`` seconds (default ``step_seconds``), written as one file or, with
    ``kube_state_daily``, a folder of one file per day (read a day at a time in file mode).
    ``repartition``: a MIG node re-partitioned mid-window; ``drain``: a node drained for a
    while, written to ``sacctmgr_events.txt`` (simulate/node_events.py)."""
    _check(gpus, days, step_seconds, metrics_format)
    report = progress or (lambda stage, done, total: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    window_start = datetime(start.year, start.month, start.day)

    report("schedule", 0, 1)
    base = build_cluster(cluster, gpus, seed)
    events = site_events(base, window_start, days, repartition, drain)
    layout = with_layouts(base, events)
    windows = instance_windows(base, events)
    inventory = build_inventory(layout, seed)
    org = build_org(seed)
    jobs = generate_jobs(base, org, start, days, seed)
    runs = schedule(layout, jobs, window_start, days * DAY, unavailable_slots(layout, events, window_start))
    allocations = allocations_frame(runs, seed)
    report("schedule", 1, 1)

    parquet = metrics_format in ("parquet", "both")
    pool = kube_hook.start(kube, cluster, start, days, step_seconds, seed, org, kube_state_step)
    om = kube_hook.om_writer(out_dir / "metrics.om", pool) if metrics_format in ("om", "both") else None
    truth = TruthAccumulator(allocations)
    n_samples = 0
    # The Parquet write of day i (pyarrow, GIL released) overlaps generating day i + 1.
    with ThreadPoolExecutor(max_workers=1) as writer:
        pending: Future | None = None
        for i in range(days):
            day = start + timedelta(days=i)
            frame = drop_absent(generate_day(inventory, allocations, day, step_seconds, seed, cluster), windows)
            frame, om_frame = kube_hook.add_day(pool, day, frame)
            if parquet:
                if pending is not None:
                    pending.result()
                pending = writer.submit(write_day_parquet, frame, out_dir, day)
            if om is not None:
                om.add_day(om_frame)
            truth.add_day(frame)
            n_samples += frame.height
            report("samples", i + 1, days)
        if pending is not None:
            pending.result()
    if om is not None:
        om.close()

    report("write", 0, 1)
    sacct_path, truth_path = out_dir / "sacct.txt", out_dir / "truth.parquet"
    inventory_path, config_path = out_dir / "inventory.parquet", out_dir / "cardhours.toml"
    n_sacct = write_sacct(sacct_path, runs, inventory, cluster)
    truth_rows = truth_frame(runs, org, inventory, cluster, truth.totals())
    truth_rows.write_parquet(truth_path)
    truth_capacity_path = out_dir / "truth_capacity.parquet"
    capacity_truth(inventory, windows, allocations, events, cluster, window_start, days).write_parquet(
        truth_capacity_path
    )
    events_path = out_dir / "sacctmgr_events.txt" if events.drains else None
    if events_path is not None:
        write_sacctmgr_events(events_path, events, cluster)
    kube_hook.inventory(pool, inventory).write_parquet(inventory_path)
    write_config(
        config_path,
        kube_hook.layout(pool, layout),
        org,
        metrics_path="metrics" if parquet else "metrics.om",
        step_seconds=step_seconds,
        events_file=events_path.name if events_path is not None else None,
    )
    kube_paths = kube_hook.finish(pool, out_dir, config_path, kube_state_daily)
    report("write", 1, 1)
    return SimulationResult(
        out_dir=out_dir,
        sacct_path=sacct_path,
        truth_path=truth_path,
        inventory_path=inventory_path,
        config_path=config_path,
        metrics_dir=out_dir / "metrics" if parquet else None,
        om_path=out_dir / "metrics.om" if om is not None else None,
        window_start=window_start,
        window_end=window_start + timedelta(days=days),
        n_nodes=len(layout.nodes),
        n_instances=inventory.height,
        n_jobs=len(jobs),
        n_runs=truth_rows.height,
        n_sacct_rows=n_sacct,
        n_samples=n_samples,
        truth_capacity_path=truth_capacity_path,
        events_path=events_path,
        **kube_paths,
    )
