"""Dagster's command line as an operator types it: an instance directory, and one day's run.

``instance_home(root)`` makes ``root/dagster_home`` with the repository's dagster.yaml (runs and
events in SQLite files) and creates its storage once (``dagster instance migrate``): two
processes creating a fresh SQLite instance at the same instant race on its schema migration.
``execute_partition(...)`` starts ``dagster job execute`` of one partition of a job (by default a
day of the daily ingest) and returns the process (stdout and stderr together, as text).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def dagster_binary() -> str:
    return str(Path(sys.executable).with_name("dagster"))


def instance_home(root: Path) -> Path:
    home = root / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    subprocess.run(
        [dagster_binary(), "instance", "migrate"],
        env={**os.environ, "DAGSTER_HOME": str(home)},
        check=True,
        capture_output=True,
        timeout=300,
    )
    return home


def execute_partition(
    config: Path,
    home: Path,
    partition: str,
    module: str = "pipelines.definitions",
    job: str = "daily_ingest",
    env: dict[str, str] | None = None,
    run_config: Path | None = None,
    log: Path | None = None,
) -> subprocess.Popen:
    """``dagster job execute -m MODULE -j JOB [-c RUN_CONFIG]`` of ``partition``, with ``env`` added;
    its output to the file ``log`` when given (a long run fills no pipe nobody reads)."""
    full = {**os.environ, **(env or {}), "CARDHOURS_CONFIG": str(config), "DAGSTER_HOME": str(home)}
    full["PYTHONPATH"] = str(REPO)
    command = [dagster_binary(), "job", "execute", "-m", module, "-j", job]
    command += ["--tags", json.dumps({"dagster/partition": partition})]
    command += ["-c", str(run_config)] if run_config else []
    if log is None:
        pipe = subprocess.PIPE
        return subprocess.Popen(command, cwd=REPO, env=full, stdout=pipe, stderr=subprocess.STDOUT, text=True)
    with open(log, "w") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(command, cwd=REPO, env=full, stdout=out, stderr=subprocess.STDOUT)
