"""The simulated Kubernetes site of the kube integration tests, once per session: two days at
120 s of 8 Slurm GPUs plus the Kubernetes pool (inference Deployments on whole GPUs and MIG
slices, Kueue and Volcano gangs against a 16-GPU quota, idle notebooks, unlabeled sandbox pods;
two nodes scraped with ``exported_*`` labels), back-filled into one real Prometheus
(``prometheus_with``) and its truth (``truth_pods.parquet``). Session-scoped so that the
modules of this directory share one simulation and one server.
"""

from __future__ import annotations

import polars as pl
import pytest

from config import load_config
from config.cluster import ClusterConfig, PrometheusConfig
from simulate.run import SimulationResult, simulate
from tests.integration.kube.cases import DAYS, STEP, T0


@pytest.fixture(scope="session")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate(
        tmp_path_factory.mktemp("kube"),
        gpus=8,
        days=DAYS,
        start=T0.date(),
        seed=11,
        step_seconds=STEP,
        metrics_format="om",
        kube=True,
    )


@pytest.fixture(scope="session")
def cluster(sim: SimulationResult, prometheus_with) -> ClusterConfig:
    url = prometheus_with([sim.om_path, sim.kube_state_path])
    base = load_config(sim.config_path).clusters[0]
    assert base.kubernetes is not None
    prometheus = PrometheusConfig(url=url, scrape_interval_seconds=STEP, step_seconds=STEP)
    return base.model_copy(
        update={"prometheus": prometheus, "kubernetes": base.kubernetes.model_copy(update={"path": None})}
    )


@pytest.fixture(scope="session")
def truth(sim: SimulationResult) -> pl.DataFrame:
    """The pods Prometheus can have seen (a pod living between two scrapes leaves no series)."""
    every = pl.read_parquet(sim.truth_pods_path)
    unseen = every.filter(pl.col("n_scrapes") == 0)
    assert (unseen["gpu_seconds"] <= STEP * unseen["gpus"]).all()
    return every.filter(pl.col("n_scrapes") > 0)
