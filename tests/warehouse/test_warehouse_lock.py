"""The warehouse lock between real processes: a holder in one process, `cardhours close` or
another acquisition in another; a killed holder leaves a file that blocks nobody."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.chargeback_site import make_site
from warehouse import WarehouseBusy, connect, hold_warehouse
from warehouse.lock import held_here, lock_path, read_holder

ROOT = Path(__file__).parents[2]
HOLDER = """
import sys
from warehouse import hold_warehouse
with hold_warehouse(sys.argv[1], sys.argv[2]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, Path]]:
    """Another process holding the lock of tmp_path/wh/cardhours.duckdb as a `cardhours run` would."""
    database = tmp_path / "wh" / "cardhours.duckdb"
    with connect(database):
        pass
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(database), "cardhours run --month 2026-08"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=ROOT,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    yield process, database
    if process.poll() is None:
        process.kill()
    process.wait()


def test_a_second_process_is_refused_naming_the_holder(holder) -> None:
    process, database = holder
    with pytest.raises(WarehouseBusy) as refused:
        with hold_warehouse(database, "cardhours close --month 2026-08"):
            pass
    info = read_holder(lock_path(database))
    assert info is not None and info["pid"] == process.pid and info["host"] == socket.gethostname()
    assert str(refused.value) == (
        f"warehouse {database} is busy: cardhours run --month 2026-08 since {info['since']}, PID {process.pid} "
        f"on {socket.gethostname()}; wait for it to finish and try again (if it hangs, stop that process: "
        "the lock goes with it)"
    )
    assert not held_here(database)


def test_cardhours_close_in_another_process_gets_the_busy_message(holder, tmp_path: Path) -> None:
    process, database = holder
    config = make_site(tmp_path)  # its warehouse: tmp_path/wh/cardhours.duckdb, the holder's
    close = subprocess.run(
        [sys.executable, "-m", "cardhours.cli", "close", "--config", str(config), "--month", "2026-08"],
        capture_output=True,
        text=True,
        env={**_env(), "COLUMNS": "400"},
        cwd=ROOT,
        timeout=120,
    )
    assert close.returncode == 75, close.stderr
    assert f"not closed: warehouse {database} is busy: cardhours run --month 2026-08 since " in close.stderr
    assert f", PID {process.pid} on {socket.gethostname()}; wait for it to finish and try again" in close.stderr
    assert "IOException" not in close.stderr and "Traceback" not in close.stderr
    run = subprocess.run(
        [sys.executable, "-m", "cardhours.cli", "run", "--config", str(config), "--month", "2026-08"],
        capture_output=True,
        text=True,
        env={**_env(), "COLUMNS": "400"},
        cwd=ROOT,
        timeout=120,
    )
    assert (
        run.returncode == 75 and f"not run: warehouse {database} is busy: cardhours run --month 2026-08" in run.stderr
    )
    process.stdin.write("\n")
    process.stdin.flush()
    assert process.wait(timeout=30) == 0
    verify = subprocess.run(
        [sys.executable, "-m", "cardhours.cli", "ledger", "verify", "--config", str(config)],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        timeout=120,
    )
    assert verify.returncode == 0 and f"ledger ok: no closed months in {database}" in verify.stdout


def test_a_killed_holder_blocks_nobody(holder) -> None:
    process, database = holder
    process.send_signal(signal.SIGKILL)
    process.wait()
    stale = read_holder(lock_path(database))
    assert stale is not None and stale["pid"] == process.pid  # the dead holder's note is still there
    with hold_warehouse(database, "cardhours close --month 2026-08"):
        now = read_holder(lock_path(database))
        assert now is not None and now["pid"] == os.getpid() and now["what"] == "cardhours close --month 2026-08"
    assert lock_path(database).read_text() == ""


def test_the_lock_is_reentrant_within_a_process(tmp_path: Path) -> None:
    database = tmp_path / "cardhours.duckdb"
    with hold_warehouse(database, "cardhours run --month 2026-08"):
        with hold_warehouse(database, "a Dagster asset"):
            assert json.loads(lock_path(database).read_text())["what"] == "cardhours run --month 2026-08"
        assert held_here(database)
    assert not held_here(database)
    taken = subprocess.run(
        [sys.executable, "-c", HOLDER, str(database), "later"],
        input="\n",
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert taken.returncode == 0 and taken.stdout.strip() == "held"


def test_a_dagster_run_while_another_process_holds_the_warehouse_fails_naming_it(holder, tmp_path: Path) -> None:
    from cardhours.runner import _failure_text
    from pipelines.definitions import build_definitions

    process, database = holder
    # The monthly job writes the DuckDB file (the daily job writes only the lake and never takes
    # the lock: tests/integration/test_parallel_days.py runs two days while it is held).
    job = build_definitions(str(make_site(tmp_path))).resolve_job_def("monthly_review")
    result = job.execute_in_process(partition_key="2026-08-01", raise_on_error=False)
    assert not result.success
    assert _failure_text(result).startswith(
        f"resources: WarehouseBusy: warehouse {database} is busy: cardhours run --month 2026-08 since "
    )
    assert f"PID {process.pid} on {socket.gethostname()}" in _failure_text(result)


def test_a_reader_probes_the_lock_without_keeping_it(tmp_path: Path) -> None:
    from warehouse.lock import busy_holder

    warehouse = tmp_path / "w.duckdb"
    assert busy_holder(warehouse) is None  # no lock file yet
    with hold_warehouse(warehouse, "cardhours run --month 2026-10"):
        busy = busy_holder(warehouse)  # a separate open file: flock conflicts as between processes
    assert busy is not None and "cardhours run --month 2026-10" in str(busy)
    assert busy_holder(warehouse) is None
    with hold_warehouse(warehouse, "next writer"):  # the probe kept nothing
        pass
