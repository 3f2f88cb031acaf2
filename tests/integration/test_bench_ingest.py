"""`cardhours bench ingest`, small: simulate, back-fill a real Prometheus, time three reads.

Checks the command's contract (the JSON last line, samples read), not its timings.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cardhours.bench.ingest import cpu_model
from cardhours.bench.prometheus_server import PrometheusServer
from sources.prometheus.concurrency import usable_cpus

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GPUS, HOURS, STEP = 16, 2, 15
FIELDS_PER_SAMPLE_ROW = 10  # every simulated whole-GPU row carries all ten DCGM fields


def test_bench_ingest_small(tmp_path: Path) -> None:
    workdir = tmp_path / "bench"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cardhours.cli",
            "bench",
            "ingest",
            "--gpus",
            str(GPUS),
            "--hours",
            str(HOURS),
            "--step",
            str(STEP),
            "--workdir",
            str(workdir),
            "--rounds",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    result = json.loads(last)
    assert set(result) == {"ours_s", "raw_fetch_s", "client_df_s", "samples", "decoder"}
    assert all(result[key] > 0 for key in ("ours_s", "raw_fetch_s", "client_df_s"))
    assert result["decoder"] == "numba"  # auto, with cardhours[fast] installed (the test extra)
    assert (
        "decoder: numba (cardhours[fast], compiled; metrics it handed to pyarrow in the fastest read: 0)" in done.stdout
    )
    assert re.search(r"ours / raw fetch = \d+\.\d\d \(target <= 1\.25 with the numba decoder\)", done.stdout)
    # The bench fails by itself unless every back-filled sample came back; check the size too.
    assert result["samples"] == json.loads((workdir / "bench.json").read_text())["samples"]
    assert 0 < result["samples"] <= GPUS * HOURS * 3600 // STEP * FIELDS_PER_SAMPLE_ROW
    assert str(workdir) in done.stderr + done.stdout  # where the work directory is
    assert "ours" in done.stdout and "client" in done.stdout and "raw" in done.stdout  # the table
    assert "CPU model: " in done.stdout
    assert "each round's ours / the raw fetch right after it: median " in done.stdout
    # ours and raw keep the same number of requests in flight: the server runs on this machine,
    # so as many as the reader's CPUs, at most 4 (max_parallel_requests is unset)
    flight = {
        row.split("│")[1].strip(): row.split("│")[6].strip() for row in done.stdout.splitlines() if row.startswith("│ ")
    }
    assert flight == {"ours": str(min(4, usable_cpus())), "raw": str(min(4, usable_cpus())), "client": "1"}


def test_cpu_model_is_the_extra_reader_cpu_over_the_busy_cpu() -> None:
    timings = {"ours": {"cpu_s": 0.65}, "raw": {"cpu_s": 0.15, "other_cpu_s": 1.85}}
    assert cpu_model(timings) == pytest.approx(1.25)
    assert math.isnan(cpu_model({"ours": {"cpu_s": 1.0}, "raw": {"cpu_s": 0.0, "other_cpu_s": 0.0}}))


def bench_ingest(*options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cardhours.cli", "bench", "ingest", *options]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_bench_ingest_refuses_bad_options() -> None:
    done = bench_ingest("--gpus", "4")
    assert done.returncode == 2
    assert "--gpus" in done.stderr
    done = bench_ingest("--decoder", "fast")
    assert done.returncode == 1
    assert "bench failed: unknown decoder 'fast': one of auto, numba, pyarrow" in done.stdout + done.stderr


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to give the server one of its own")
def test_bench_ingest_with_the_server_on_cpus_of_its_own(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cardhours.cli",
            "bench",
            "ingest",
            "--gpus",
            "8",
            "--hours",
            "1",
            "--step",
            str(STEP),
            "--workdir",
            str(tmp_path / "bench"),
            "--rounds",
            "1",
            "--server-cpus",
            "1",
            "--decoder",
            "pyarrow",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    cpus = sorted(os.sched_getaffinity(0))
    readers = ", ".join(map(str, cpus[1:]))
    assert f"server pinned to CPU(s) {cpus[0]}, the timed readers to CPU(s) {readers}" in done.stdout
    assert "CPU model" not in done.stdout  # it models a server sharing the readers' CPUs
    flight = {
        row.split("│")[1].strip(): row.split("│")[6].strip() for row in done.stdout.splitlines() if row.startswith("│ ")
    }
    assert flight["ours"] == flight["raw"] == str(min(4, len(cpus) - 1))  # the readers' CPUs, at most 4
    assert json.loads(done.stdout.strip().splitlines()[-1])["decoder"] == "pyarrow"
    assert "decoder: pyarrow (asked for with --decoder pyarrow)" in done.stdout
    assert "(target <= 1.6 with the pyarrow decoder)" in done.stdout


def test_server_cpus_beyond_the_machine_are_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cardhours.cli",
            "bench",
            "ingest",
            "--gpus",
            "8",
            "--hours",
            "1",
            "--workdir",
            str(tmp_path / "bench"),
            "--server-cpus",
            str(len(os.sched_getaffinity(0))),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    said = " ".join((done.stdout + done.stderr).split())
    assert "--server-cpus" in said and "the reader at least one of its own" in said
    assert not (tmp_path / "bench" / "tsdb").exists()  # refused before simulating anything


def test_pinned_server_runs_on_its_cpus_only(tmp_path: Path) -> None:
    cpu = min(os.sched_getaffinity(0))
    with PrometheusServer(tmp_path / "tsdb", tmp_path / "server", cpus={cpu}) as server:
        status = (Path("/proc") / str(server._process.pid) / "status").read_text()
        allowed = re.search(r"^Cpus_allowed_list:\s+(\S+)", status, re.M).group(1)
        threads = list((Path("/proc") / str(server._process.pid) / "task").iterdir())
        assert allowed == str(cpu) and len(threads) > 1
        for task in threads:  # every thread of the Go runtime inherited it
            assert re.search(r"^Cpus_allowed_list:\s+(\S+)", (task / "status").read_text(), re.M).group(1) == str(cpu)
