"""``cardhours bench marts``: build every monthly mart from landed data, timed.

Set-up (untimed, reused from ``--workdir`` when it was finished there with the same
parameters): simulate ``gpus`` GPUs for ``days`` days from ``START`` at ``step_seconds``
(Parquet metrics), then land each day through the ``daily_ingest`` Dagster job as
``cardhours run`` does (raw samples and sacct rows, minute and hour rollups, field presence).
Timed, in a fresh process per round (``marts_build.build_month``): the month's
``stg_slurm__jobs``, ``int_gpu_minutes_attributed``, ``int_gpu_inventory_observed``, ``fct_job_usage``,
``fct_gpu_hourly``, ``mart_department_monthly`` and ``mart_cluster_monthly`` through Dagster ``materialize``,
blocking checks included. Then, untimed for the target: the attribution SQL taking whole hours
from the hour sums against attributing every minute row (``marts_build.time_paths``). The marts
are left in the work directory's warehouse.

Measured (1,000 GPUs x 30 days at 15 s: 239 M samples, 65 M minute rows): docs/marts.md
"Speed" (13.8 s and 2.05 GB on an idle 2-core machine; target 15 s and 6 GB).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cardhours.bench.marts_build import BUILT, build_month, in_child, time_paths

START = date(2026, 9, 1)  # a whole past 30-day month (Dagster has partitions of complete months only)
SEED = 5
CLUSTER = "bench"
Progress = Callable[[str, int, int], None]


class BenchError(RuntimeError):
    """The bench could not land its data, or a build failed."""


@dataclass(frozen=True)
class MartsBenchResult:
    gpus: int
    days: int
    step_seconds: int
    workdir: Path
    kept: bool
    samples: int
    builds: list[dict]  # marts_build.build_month results, one per month and round
    paths: dict | None  # marts_build.time_paths of the first month
    load: tuple[float, float]  # 1-minute load average before and after the timed builds

    @property
    def seconds(self) -> float:
        """All months' build seconds, each month's fastest round."""
        return sum(min(b["seconds"] for b in builds) for builds in self.by_month().values())

    @property
    def peak_rss_gb(self) -> float:
        return max(b["peak_rss_gb"] for b in self.builds)

    def by_month(self) -> dict[str, list[dict]]:
        months: dict[str, list[dict]] = {}
        for build in self.builds:
            months.setdefault(build["month"], []).append(build)
        return months

    def summary(self) -> dict:
        return {"samples": self.samples, "seconds": round(self.seconds, 2), "peak_rss_gb": round(self.peak_rss_gb, 3)}


def months_of(first: date, days: int) -> list[str]:
    """Monthly partition keys (``YYYY-MM-01``) of the days ``first`` .. ``first + days - 1``."""
    last = first + timedelta(days=days - 1)
    keys, month = [], first.replace(day=1)
    while month <= last:
        keys.append(month.isoformat())
        month = (month + timedelta(days=32)).replace(day=1)
    return keys


def _read_marker(marker: Path, wanted: dict) -> dict:
    if marker.exists():
        state = json.loads(marker.read_text())
        if state.get("params") == wanted:
            return state
    return {"params": wanted}


def land(gpus: int, days: int, step: int, root: Path, progress: Progress) -> tuple[Path, int]:
    """Simulate and ingest every day into ``root`` (or resume/reuse); (config path, raw samples)."""
    marker = root / "bench.json"
    wanted = {
        "gpus": gpus,
        "days": days,
        "step_seconds": step,
        "start": START.isoformat(),
        "seed": SEED,
        "cluster": CLUSTER,
    }
    state = _read_marker(marker, wanted)
    sim_dir = root / "sim"
    if "samples" not in state:
        from simulate.run import simulate

        shutil.rmtree(sim_dir, ignore_errors=True)
        result = simulate(
            sim_dir,
            gpus=gpus,
            days=days,
            start=START,
            seed=SEED,
            step_seconds=step,
            metrics_format="parquet",
            cluster=CLUSTER,
            progress=lambda s, d, t: progress(f"simulate: {s}", d, t),
        )
        state = {"params": wanted, "samples": result.n_samples, "ingested": []}
        marker.write_text(json.dumps(state))
    config_path = sim_dir / "cardhours.toml"
    day_keys = [(START + timedelta(days=i)).isoformat() for i in range(days)]
    pending = [day for day in day_keys if day not in state["ingested"]]
    if pending:
        _ingest_days(config_path, day_keys, state, marker, progress)
    return config_path, state["samples"]


def _ingest_days(config_path: Path, day_keys: list[str], state: dict, marker: Path, progress: Progress) -> None:
    """The ``daily_ingest`` job per day (the marker records each finished day: a rerun resumes)."""
    from dagster import DagsterInstance

    from cardhours.runner import RunFailed, _execute
    from pipelines.definitions import build_definitions

    daily = build_definitions(str(config_path)).resolve_job_def("daily_ingest")
    with DagsterInstance.ephemeral() as instance:
        for index, day in enumerate(day_keys):
            if day in state["ingested"]:
                continue
            progress(f"ingest {day}", index, len(day_keys))
            try:
                _execute(daily, day, instance)
            except RunFailed as exc:
                raise BenchError(str(exc)) from exc
            state["ingested"].append(day)
            marker.write_text(json.dumps(state))
    progress("landed", len(day_keys), len(day_keys))


def _check_months(months: list[str]) -> None:
    """Dagster has monthly partitions for complete months only: refuse days reaching past them."""
    from pipelines.partitions import monthly_partitions

    known = set(monthly_partitions.get_partition_keys())
    missing = [m[:7] for m in months if m not in known]
    if missing:
        raise BenchError(f"--days reaches month(s) {', '.join(missing)} that are not complete yet; use fewer days")


def run_marts_bench(
    gpus: int,
    days: int,
    step_seconds: int = 15,
    workdir: Path | None = None,
    keep: bool = False,
    rounds: int = 1,
    compare_paths: bool = True,
    progress: Progress | None = None,
    say: Callable[[str], None] = print,
) -> MartsBenchResult:
    report = progress or (lambda stage, done, total: None)
    months = months_of(START, days)
    _check_months(months)
    root = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="cardhours-bench-marts-"))
    root.mkdir(parents=True, exist_ok=True)
    kept = keep or workdir is not None
    say(f"work directory: {root}" + ("" if kept else " (removed at the end; --keep keeps it)"))
    try:
        config_path, samples = land(gpus, days, step_seconds, root, report)
        load_before, builds = os.getloadavg()[0], []
        for i in range(rounds):
            for month in months:
                report(f"build {month[:7]} (timed, round {i + 1}/{rounds})", i, rounds)
                build = in_child(build_month, str(config_path), month)
                if not build["success"]:
                    raise BenchError(f"building {month[:7]} failed: {'; '.join(build['failures']) or 'see the logs'}")
                builds.append({**build, "month": month})
        load_after = os.getloadavg()[0]
        paths = None
        if compare_paths:
            report("attribution: whole hours vs every minute (untimed for the target)", rounds, rounds)
            first = datetime.fromisoformat(months[0])
            end = (first + timedelta(days=32)).replace(day=1)
            paths = in_child(time_paths, str(config_path), first, end, max(rounds, 2))
    finally:
        if not kept:
            shutil.rmtree(root, ignore_errors=True)
    return MartsBenchResult(gpus, days, step_seconds, root, kept, samples, builds, paths, (load_before, load_after))


def print_report(result: MartsBenchResult, out: Console) -> None:
    """The table, then the JSON summary as the last line."""
    table = Table(
        title=f"monthly marts of {result.gpus} GPUs x {result.days} days at {result.step_seconds} s "
        f"({result.samples:,} samples; fastest of {len(result.builds) // len(result.by_month())} "
        f"round(s); {os.cpu_count()} CPUs; load {result.load[0]:.2f} -> {result.load[1]:.2f})"
    )
    table.add_column("month / step", no_wrap=True)
    table.add_column("s", justify="right")
    for month, builds in result.by_month().items():
        best = min(builds, key=lambda b: b["seconds"])
        for key in BUILT:
            step = "__".join(key)
            table.add_row(f"{month[:7]} {key[1]}", f"{best['steps'].get(step, float('nan')):.2f}")
        table.add_row(f"{month[:7]} total (Dagster materialize)", f"{best['seconds']:.2f}")
        table.add_row(f"{month[:7]} peak RSS GB (base {best['base_rss_gb']:.2f})", f"{best['peak_rss_gb']:.2f}")
    if result.paths:
        for path, seconds in result.paths["seconds"].items():
            table.add_row(f"attribution SQL, {path}", f"{seconds:.2f}")
    out.print(table)
    if result.paths:
        same = "identical rows" if result.paths["identical"] else "DIFFERENT rows"
        out.print(f"attribution: {result.paths['rows']:,} rows, {same} (fastest of each)", highlight=False)
    out.print(f"target: <= 15 s and <= 6 GB: {result.seconds:.1f} s, {result.peak_rss_gb:.2f} GB", highlight=False)
    out.print(f"work directory: {result.workdir}" + (" (kept)" if result.kept else " (removed)"), highlight=False)
    out.print(json.dumps(result.summary()), highlight=False, soft_wrap=True)
