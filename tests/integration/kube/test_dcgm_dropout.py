"""A GPU that falls off the bus, through a real Prometheus: the site of conftest.py with one
pool GPU's DCGM series cut for two hours (every other GPU of its host still reporting) is read
over the HTTP API, and the dropout table holds exactly that interval, and nothing else."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from config import load_config
from config.cluster import PrometheusConfig
from simulate.run import SimulationResult
from sources.prometheus.source import PrometheusMetricsSource
from tests.integration.kube.cases import STEP, T0
from transforms.staging.stg_dcgm__gpu_dropout import stg_dcgm__gpu_dropout

pytestmark = [pytest.mark.integration]

HOST, GPU = "kgpu-004", 3
CUT_FROM, CUT_TO = T0 + timedelta(hours=10), T0 + timedelta(hours=12)
EPOCH = datetime(1970, 1, 1)


def _cut(source: Path, target: Path) -> int:
    """Copy the OpenMetrics file without the GPU's samples in [CUT_FROM, CUT_TO); lines dropped."""
    lo, hi = (int((t - EPOCH).total_seconds()) for t in (CUT_FROM, CUT_TO))
    mark, host = f'{{gpu="{GPU}",', f'Hostname="{HOST}"'
    dropped = 0
    with source.open() as lines, target.open("w") as out:
        for line in lines:
            if line.startswith(("DCGM_", "dcgm")) and mark in line and host in line:
                if lo <= float(line.rsplit(" ", 1)[1]) < hi:
                    dropped += 1
                    continue
            out.write(line)
    return dropped


def test_a_gpu_fallen_off_the_bus_is_one_dropout(sim: SimulationResult, prometheus_with, tmp_path: Path) -> None:
    om = tmp_path / "metrics.om"
    assert _cut(sim.om_path, om) > 0
    url = prometheus_with([om])
    base = load_config(sim.config_path).clusters[0]
    cluster = base.model_copy(
        update={"prometheus": PrometheusConfig(url=url, scrape_interval_seconds=STEP, step_seconds=STEP)}
    )
    samples = PrometheusMetricsSource.from_config(cluster).read_samples(cluster.name, T0, T0 + timedelta(days=1))
    declared = load_config(sim.config_path).inventory_frame()
    got = stg_dcgm__gpu_dropout(samples, declared, cluster.name, T0, T0 + timedelta(days=1), STEP)
    assert got.select("hostname", "gpu", "start_ts", "end_ts", "source").rows() == [
        (HOST, GPU, CUT_FROM, CUT_TO, "dcgm_dropout")
    ]
