"""The Kubernetes site of conftest.py read from a real Prometheus that refuses large queries
(``--query.max-samples``): the kube reader halves refused chunks and lands what it lands
from the unlimited server; a server refusing even one scrape interval fails naming it."""

from __future__ import annotations

import pytest

from config.cluster import ClusterConfig
from simulate.run import SimulationResult
from sources.prometheus.client import PrometheusQueryError
from tests.integration.kube.reading import assert_same_landing, land_day

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def on_server(cluster: ClusterConfig, url: str) -> ClusterConfig:
    prometheus = cluster.prometheus.model_copy(update={"url": url, "max_retries": 0})
    return cluster.model_copy(update={"prometheus": prometheus})


def test_refused_chunks_are_halved_and_land_the_same(
    sim: SimulationResult, cluster: ClusterConfig, prometheus_with
) -> None:
    # a day of kube_pod_status_phase is ~200 series x 720 samples: far over 20,000
    limited = on_server(cluster, prometheus_with([sim.om_path, sim.kube_state_path], ["--query.max-samples=20000"]))
    unlimited_asks, limited_asks = [], []
    want, got = land_day(cluster, asked=unlimited_asks), land_day(limited, asked=limited_asks)
    assert limited_asks.count("/api/v1/query") > unlimited_asks.count("/api/v1/query")  # refused chunks were halved
    assert_same_landing(got, want)


def test_a_server_refusing_one_interval_fails_naming_it(
    sim: SimulationResult, cluster: ClusterConfig, prometheus_with
) -> None:
    tiny = on_server(cluster, prometheus_with([sim.om_path, sim.kube_state_path], ["--query.max-samples=3"]))
    with pytest.raises(PrometheusQueryError, match="too many samples") as caught:
        land_day(tiny)
    assert "cardhours cannot make this request smaller" in "\n".join(caught.value.__notes__)
