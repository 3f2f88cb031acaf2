"""The daily ingest on Celery workers: N days with 1 worker, then with 2, on this machine.

    .venv/bin/python benchmarks/celery_speedup.py --gpus 128 --days 7 --workers 1 2

The cluster is simulated once (15 s samples, Parquet files, the file metrics source). Each worker
count then gets a fresh lake and warehouse (tests/support/sites.py), a fresh Dagster instance
(SQLite, the repository's dagster.yaml), a real Redis and that many workers, one step at a time
each (tests/support/redis.py, tests/support/celery_workers.py). Every day is run as
``dagster job execute -m pipelines.celery_definitions -j daily_ingest_celery``, ``--runs`` days
at a time (a process per run, as the instance's run queue starts them).

Printed per worker count: the load average before it (``uptime``), the wall time from the first
run's launch to the last run's end, the CPU seconds the workers spent (their processes and pool
children, from /proc: what the steps cost whatever else the machine runs), the steps each worker
executed, each step's seconds (STEP_START to STEP_SUCCESS in the event log) summed over the days,
and per step group (ingest: ``raw/dcgm_samples``; rollups: the three daily staging assets; sacct:
``raw/slurm_sacct``) those seconds and that divided by GPU-days: the cost per GPU-day
docs/scaling.md sizes workers from. Results: benchmarks/README.md. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import date, timedelta
from pathlib import Path

from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness in tests/support starts the services

from pipelines.jobs import DAILY_CELERY_JOB  # noqa: E402 - after the repository root is put on sys.path above
from simulate.run import simulate  # noqa: E402 - after the repository root is put on sys.path above
from tests.support.celery_workers import CeleryWorkers, step_workers  # noqa: E402 - after the repository root is put on sys.path above
from tests.support.dagster_cli import execute_partition, instance_home  # noqa: E402 - after the repository root is put on sys.path above
from tests.support.redis import RedisServer  # noqa: E402 - after the repository root is put on sys.path above
from tests.support.sites import own_warehouse  # noqa: E402 - after the repository root is put on sys.path above

MODULE = "pipelines.celery_definitions"
START = date(2026, 10, 1)
STEP_SECONDS = 15


def group_of(step: str) -> str:
    """The part of the daily ingest a step belongs to: the DCGM landing ("ingest"), its rollups
    and the tables derived from them ("rollups"), Slurm ("sacct": accounting and downtime),
    Kubernetes ("kube")."""
    if step == "raw__dcgm_samples":
        return "ingest"
    if "slurm" in step:
        return "sacct"
    if "kube" in step:
        return "kube"
    return "rollups"


def run_days(config: Path, home: Path, days: list[str], env: dict[str, str], at_once: int) -> float:
    """Every day's run, ``at_once`` at a time; the wall seconds. Fails naming a failed day."""
    pending, running, began = list(days), [], time.perf_counter()
    while pending or running:
        while pending and len(running) < at_once:
            day = pending.pop(0)
            log = home / f"run-{day}.log"
            running.append((day, log, execute_partition(config, home, day, MODULE, DAILY_CELERY_JOB, env, log=log)))
        time.sleep(0.2)
        for day, log, process in [item for item in running if item[2].poll() is not None]:
            running.remove((day, log, process))
            if process.returncode != 0:
                tail = log.read_text()[-3000:]
                raise SystemExit(f"the run of {day} failed (exit {process.returncode}), {log}:\n{tail}")
    return time.perf_counter() - began


def step_seconds(instance: DagsterInstance, run_id: str) -> dict[str, float]:
    """Each step's seconds from its STEP_START to its STEP_SUCCESS."""
    started: dict[str, float] = {}
    seconds: dict[str, float] = {}
    for record in instance.all_logs(run_id):
        kind = record.dagster_event_type
        if kind == DagsterEventType.STEP_START:
            started[record.step_key] = record.timestamp
        elif kind == DagsterEventType.STEP_SUCCESS:
            seconds[record.step_key] = record.timestamp - started[record.step_key]
    return seconds


def measure(sim_config: Path, workers: int, days: list[str], gpus: int, at_once: int) -> dict:
    name = f"workers-{workers}"
    config = own_warehouse(sim_config, name)  # a lake and warehouse of its own in sim/workers-N
    home = instance_home(config.parent / name)
    load = os.getloadavg()
    with RedisServer() as redis:
        env = {**redis.env, "CARDHOURS_CONFIG": str(config)}
        with CeleryWorkers(workers, env, home, home / "worker_logs") as pool:
            idle = pool.cpu_seconds()  # starting up, before any step
            wall = run_days(config, home, days, env, at_once)
            cpu = pool.cpu_seconds() - idle
    by_step: dict[str, float] = defaultdict(float)
    by_worker: Counter[str] = Counter()
    with DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(RunsFilter(job_name=DAILY_CELERY_JOB))
        assert len(runs) == len(days) and all(run.status == DagsterRunStatus.SUCCESS for run in runs)
        for run in runs:
            for step, seconds in step_seconds(instance, run.run_id).items():
                by_step[step] += seconds
            by_worker.update(name for names in step_workers(instance, run.run_id).values() for name in names)
    by_group: dict[str, float] = defaultdict(float)
    for step, seconds in by_step.items():
        by_group[group_of(step)] += seconds
    gpu_days = gpus * len(days)
    return {
        "workers": workers,
        "load_1m_5m_15m": [round(value, 2) for value in load],
        "wall_s": round(wall, 1),
        "worker_cpu_s": round(cpu, 1),
        "worker_cpu_s_per_gpu_day": round(cpu / gpu_days, 4),
        "steps_by_worker": dict(sorted(by_worker.items())),
        "step_s": {step: round(seconds, 1) for step, seconds in sorted(by_step.items())},
        "group_s": {group: round(seconds, 1) for group, seconds in sorted(by_group.items())},
        "group_s_per_gpu_day": {group: round(seconds / gpu_days, 4) for group, seconds in sorted(by_group.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=128)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", type=int, default=2, help="day runs at once (run coordinators)")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    days = [(START + timedelta(days=offset)).isoformat() for offset in range(args.days)]
    with tempfile.TemporaryDirectory(prefix="cardhours-celery-bench-") as folder:
        root = Path(folder)
        began = time.perf_counter()
        sim = simulate(root / "sim", args.gpus, args.days, START, args.seed, step_seconds=STEP_SECONDS)
        result: dict = {"gpus": args.gpus, "days": args.days, "step_seconds": STEP_SECONDS, "runs_at_once": args.runs}
        result["simulate_s"] = round(time.perf_counter() - began, 1)
        result["by_workers"] = []
        for workers in args.workers:
            measured = measure(sim.config_path, workers, days, args.gpus, args.runs)
            print(f"{workers} worker(s): {json.dumps(measured)}", flush=True)
            result["by_workers"].append(measured)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
