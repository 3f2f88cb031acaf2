"""The real `promtool` (Debian package `prometheus`) ingests the simulator's metrics.om."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from contracts.exporters import DCGM
from simulate.om_writer import OpenMetricsWriter
from simulate.samples import generate_day

pytestmark = pytest.mark.integration

DAY = date(2026, 3, 2)
T0 = datetime(2026, 3, 2)
END = T0 + timedelta(hours=2)
MODELS = {
    "H100": ("NVIDIA H100 80GB HBM3", 81559),
    "H200": ("NVIDIA H200", 143771),
    "A100": ("NVIDIA A100-SXM4-80GB", 81920),
}
SERIES_KEYS = ["hostname", "gpu", "gpu_i_id", "hpc_job"]  # the other labels follow from the instance


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail(
            "promtool is not installed: it comes with the Debian package `prometheus` "
            "(apt-get install -y prometheus); this test needs the real binary"
        )
    return path


def inventory() -> pl.DataFrame:
    """16 GPUs: H100, H200 and A100 nodes of four, and an A100 node with two GPUs split in two."""
    rows = []
    for node, model in enumerate(["H100", "H200", "A100", "A100"]):
        name, memory = MODELS[model]
        for gpu in range(4):
            mig = node == 3 and gpu < 2
            for gi in (1, 2) if mig else (None,):
                rows.append(
                    {
                        "cluster": "it",
                        "hostname": f"node{node}",
                        "gpu": gpu,
                        "uuid": f"GPU-{node}-{gpu}",
                        "pci_bus_id": f"00000000:{0x18 + gpu:02X}:00.0",
                        "device": f"nvidia{gpu}",
                        "model_name": name,
                        "gpu_model": model,
                        "memory_mib": 40192 if mig else memory,
                        "gpu_i_id": gi,
                        "gpu_i_profile": "3g.40gb" if mig else None,
                        "nvlink_domain": f"nvl{node}",
                        "switch_group": "sw0",
                    }
                )
    return pl.DataFrame(rows, schema_overrides={"gpu": pl.Int16, "gpu_i_id": pl.Int16})


def allocations() -> pl.DataFrame:
    """Jobs of every kind; one array-job id and one id that needs escaping."""

    def job(job_id: str, host: int, gpu: int, gi: int | None, start_min: int, end_min: int, kind: str) -> tuple:
        return (
            job_id,
            0,
            f"node{host}",
            gpu,
            gi,
            T0 + timedelta(minutes=start_min),
            T0 + timedelta(minutes=end_min),
            kind,
            1000 + start_min + end_min,
        )

    rows = [job("100", 0, g, None, 10, 600, "dense") for g in range(4)]
    rows += [
        job("101_7", 1, 0, None, -60, 50, "bursty"),
        job("102", 1, 0, None, 50, 110, "starved"),
        job('odd"job\\1', 1, 1, None, 5, 95, "hog"),
        job("103", 2, 2, None, 30, 45, "tiny"),
        job("104", 2, 3, None, 0, 300, "idle_tail"),
        job("105", 3, 0, 1, 20, 80, "dense"),
        job("106", 3, 1, 2, 40, 200, "idle"),
    ]
    schema = {
        "job_id_raw": pl.String,
        "run_index": pl.Int64,
        "hostname": pl.String,
        "gpu": pl.Int16,
        "gpu_i_id": pl.Int16,
        "start_time": pl.Datetime("us"),
        "end_time": pl.Datetime("us"),
        "kind": pl.String,
        "seed": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def test_promtool_creates_blocks_with_every_series(tmp_path: Path) -> None:
    binary = promtool()
    frame = generate_day(inventory(), allocations(), DAY, 30, 3, "it").filter(pl.col("ts") < END)
    with OpenMetricsWriter(tmp_path / "metrics.om") as writer:
        writer.add_day(frame)
    series = sum(
        frame.filter(pl.col(c).is_not_null()).select(SERIES_KEYS).n_unique() for c in DCGM.metric_signals.values()
    )
    samples = sum(frame[c].count() for c in DCGM.metric_signals.values())

    created = subprocess.run(
        [binary, "tsdb", "create-blocks-from", "openmetrics", "metrics.om", "tsdb"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert created.returncode == 0, created.stderr
    blocks = list((tmp_path / "tsdb").glob("*/meta.json"))
    assert len(blocks) == 1  # two aligned hours: one block
    meta = json.loads(blocks[0].read_text())
    assert (meta["stats"]["numSeries"], meta["stats"]["numSamples"]) == (series, samples)
    assert meta["minTime"] == (T0 - datetime(1970, 1, 1)) // timedelta(milliseconds=1)

    # A max-time inside the blocks keeps promtool 2.42 from also opening a (missing) WAL.
    lo, hi = meta["minTime"], meta["maxTime"] - 1
    dump = subprocess.run(
        [binary, "tsdb", "dump", f"--min-time={lo}", f"--max-time={hi}", "tsdb"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert dump.returncode == 0, dump.stderr
    lines = dump.stdout.splitlines()
    assert len(lines) == samples
    assert len({line.rsplit(" ", 2)[0] for line in lines}) == series
    assert (
        sum('hpc_job="odd\\"job\\\\1"' in line for line in lines)
        == frame.filter(pl.col("hpc_job") == 'odd"job\\1')
        .select(pl.col(list(DCGM.metric_signals.values())).count())
        .sum_horizontal()
        .item()
    )
