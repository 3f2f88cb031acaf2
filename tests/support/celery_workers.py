"""Celery workers for the daily ingest, started as a site starts them (docs/scaling.md).

``with CeleryWorkers(count, env, home, logs) as workers:`` starts ``count`` processes of
``celery -A dagster_celery.app worker`` from the venv that runs the tests, each named
``cardhours-<i>@<host>``, listening on dagster_celery's queue, one step at a time (concurrency 1,
prefetch 1). ``env`` (added to this process's environment) must hold ``CELERY_BROKER_URL`` and
``CELERY_RESULT_BACKEND`` (tests/support/redis.py ``RedisServer.env``) and ``CARDHOURS_CONFIG``;
``DAGSTER_HOME`` is ``home``. The workers are ready when each answers a ping through the broker.
On exit each gets SIGTERM (a warm shutdown: a running step finishes) and then its process group
is killed, so no pool child outlives it. :meth:`report` gives every worker's status and log tail,
for a failing test's message.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections import defaultdict
from pathlib import Path

from celery import Celery
from dagster import DagsterEventType, DagsterInstance

from pipelines.celery_definitions import BACKEND_ENV, BROKER_ENV, CELERY_QUEUE
from tests.slurm_harness.procs import Daemon, HarnessError, wait_until

REPO = Path(__file__).resolve().parents[2]
APP = "dagster_celery.app"  # dagster-celery's worker app: broker and backend from the environment
WORKER_KEY = "Celery worker"  # dagster_celery's engine event before each step names the worker


def step_workers(instance: DagsterInstance, run_id: str) -> dict[str, set[str]]:
    """Per step of the run, the Celery worker(s) that executed it (from the run's event log)."""
    found: dict[str, set[str]] = defaultdict(set)
    for record in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        metadata = record.dagster_event.engine_event_data.metadata
        if WORKER_KEY in metadata:
            found[record.step_key].add(metadata[WORKER_KEY].value)
    return found


def worker_argv(name: str, concurrency: int = 1) -> list[str]:
    """The command a site runs per worker (docs/scaling.md), with this venv's ``celery``."""
    celery = Path(sys.executable).with_name("celery")
    return [
        str(celery),
        *("-A", APP, "worker", "--loglevel", "INFO", "-Q", CELERY_QUEUE, "-n", f"{name}@%h"),
        *("--concurrency", str(concurrency), "--prefetch-multiplier", "1"),
    ]


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it (from /proc/<pid>/task/*/children)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for children in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo += [int(child) for child in children.read_text().split()]
            except OSError:  # the process ended meanwhile
                continue
    return found


def _cpu_seconds(pid: int) -> float:
    """utime + stime of one process (0 when it has ended)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # fields 14 and 15 of stat


class CeleryWorkers:
    def __init__(self, count: int, env: dict[str, str], home: Path, logs: Path) -> None:
        missing = [key for key in (BROKER_ENV, BACKEND_ENV, "CARDHOURS_CONFIG") if key not in env]
        if missing:
            raise HarnessError(f"CeleryWorkers needs {', '.join(missing)} in env (see RedisServer.env)")
        self.env = {**os.environ, **env, "DAGSTER_HOME": str(home), "PYTHONPATH": str(REPO)}
        self.names = [f"cardhours-{index + 1}" for index in range(count)]
        self.logs = Path(logs)
        self.daemons: list[Daemon] = []

    @property
    def hostnames(self) -> list[str]:
        """Each worker's Celery hostname (``name@host``): what Dagster's step events name."""
        return [f"{name}@{socket.gethostname()}" for name in self.names]

    def __enter__(self) -> CeleryWorkers:
        try:
            for name in self.names:
                log = self.logs / f"{name}.log"
                self.daemons.append(Daemon(name, worker_argv(name), logs=[log], env=self.env).start())
            wait_until("every Celery worker answers a ping", self._all_answer, 120, self.daemons, 1.0)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _all_answer(self) -> bool:
        app = Celery(broker=self.env[BROKER_ENV])
        try:
            answers = app.control.ping(destination=self.hostnames, timeout=1.0)
        finally:
            app.close()
        return {name for answer in answers for name in answer} == set(self.hostnames)

    def cpu_seconds(self) -> float:
        """CPU seconds (user and system) the workers have spent so far: each worker's process
        and its pool children, read from /proc while they run."""
        return sum(_cpu_seconds(pid) for daemon in self.daemons if daemon.proc for pid in _tree(daemon.proc.pid))

    def alive(self) -> bool:
        return all(daemon.alive() for daemon in self.daemons)

    def report(self) -> str:
        return "\n\n".join(daemon.report() for daemon in self.daemons)

    def __exit__(self, *exc: object) -> None:
        for daemon in self.daemons:
            if daemon.alive():
                daemon.proc.send_signal(signal.SIGTERM)
        for daemon in self.daemons:
            daemon.stop(timeout=60)
            if daemon.proc is not None:
                try:
                    os.killpg(daemon.proc.pid, signal.SIGKILL)  # its pool children (start_new_session)
                except ProcessLookupError:
                    pass
