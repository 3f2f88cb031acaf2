"""`cardhours bench marts`, tiny: its JSON last line, and marts equal to those of the jobs `cardhours run` runs.

Checks the command's contract and its results, not its timings.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import DagsterInstance

from cardhours.bench.marts import CLUSTER, SEED, START
from cardhours.runner import _execute
from pipelines.assets.gate import GATE_STEP
from pipelines.definitions import build_definitions

pytestmark = [pytest.mark.slow]

GPUS, DAYS, STEP = 16, 2, 15
TABLES = [
    "staging.stg_slurm__jobs",
    "intermediate.int_gpu_minutes_attributed",
    "intermediate.int_gpu_inventory_observed",
    "marts.fct_job_usage",
    "marts.fct_gpu_hourly",
    "marts.mart_department_monthly",
    "marts.mart_cluster_monthly",
]


def cli(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "cardhours.cli", *args], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    return done


def run_normally(config: Path) -> None:
    """The jobs ``cardhours run`` executes: daily_ingest per landed day, then monthly_review
    over the days landed (``cardhours run`` itself also ingests the month's 28 days without
    data, which the raw samples' blocking check refuses)."""
    definitions = build_definitions(str(config))
    with DagsterInstance.ephemeral() as instance:
        for i in range(DAYS):
            _execute(definitions.resolve_job_def("daily_ingest"), (START + timedelta(days=i)).isoformat(), instance)
        _execute(
            definitions.resolve_job_def("monthly_review"),
            START.isoformat(),
            instance,
            {"ops": {GATE_STEP: {"config": {"accept_gaps": f"the bench lands {DAYS} days"}}}},
        )


def digests(database: Path) -> dict[str, tuple[int, str]]:
    """Rows and a digest of every built table, in a canonical order."""
    conn = duckdb.connect(str(database), read_only=True)
    try:
        out = {}
        for name in TABLES:
            frame = conn.sql(f"SELECT * FROM {name}").pl()  # names from the fixed list above
            frame = frame.with_columns(pl.col(pl.List(pl.String)).list.join(","))
            csv = frame.sort(frame.columns, nulls_last=True).write_csv()
            out[name] = (frame.height, hashlib.sha256(csv.encode()).hexdigest())
        return out
    finally:
        conn.close()


def test_bench_marts_tiny_matches_a_normal_run(tmp_path: Path) -> None:
    workdir = tmp_path / "bench"
    done = cli(
        "bench", "marts", "--gpus", str(GPUS), "--days", str(DAYS), "--step", str(STEP), "--workdir", str(workdir)
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(result) == {"samples", "seconds", "peak_rss_gb"}
    assert result["samples"] == GPUS * DAYS * 86400 // STEP  # whole GPUs only at this size
    assert result["seconds"] > 0 and 0 < result["peak_rss_gb"] < 6
    assert "fct_job_usage" in done.stdout and "identical rows" in done.stdout

    sacct = workdir / "sim" / "sacct.txt"
    simulated = sacct.stat().st_mtime_ns
    again = cli(
        "bench",
        "marts",
        "--gpus",
        str(GPUS),
        "--days",
        str(DAYS),
        "--step",
        str(STEP),
        "--workdir",
        str(workdir),
        "--no-compare-paths",
    )
    assert sacct.stat().st_mtime_ns == simulated  # the landed data is reused, not simulated again
    assert json.loads(again.stdout.strip().splitlines()[-1])["samples"] == result["samples"]

    normal = tmp_path / "normal"
    cli(
        "simulate",
        "--out",
        str(normal),
        "--gpus",
        str(GPUS),
        "--days",
        str(DAYS),
        "--start",
        START.isoformat(),
        "--seed",
        str(SEED),
        "--step",
        str(STEP),
        "--metrics-format",
        "parquet",
        "--cluster",
        CLUSTER,
    )
    run_normally(normal / "cardhours.toml")
    bench = digests(workdir / "sim" / "cardhours.duckdb")
    assert all(rows > 0 for rows, _ in bench.values())
    assert bench == digests(normal / "cardhours.duckdb")
