"""The Kubernetes site of conftest.py read from a real Prometheus that refuses large queries
(``--query.max-samples``): the kube reader halves refused chunks and lands what it lands
from the unlimited server; a server refusing even one scrape interval fails naming it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from polars.testing import assert_frame_equal

from cardhours.config.cluster import ClusterConfig
from cardhours.simulate.run import SimulationResult
from cardhours.sources.kube.landing import land
from cardhours.sources.kube.reader import KubeReader
from cardhours.sources.prometheus.client import PrometheusQueryError
from tests.integration.kube.cases import T0

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def on_server(cluster: ClusterConfig, url: str) -> ClusterConfig:
    prometheus = cluster.prometheus.model_copy(update={"url": url, "max_retries": 0})
    return cluster.model_copy(update={"prometheus": prometheus})


def day(cluster: ClusterConfig, asked: list[str] | None = None):
    """The first day landed; the paths of the requests made into ``asked``."""
    reader = KubeReader(cluster)
    get = reader.client.get

    def recording(path: str, *args, **kwargs):
        if asked is not None:
            asked.append(path)
        return get(path, *args, **kwargs)

    reader.client.get = recording  # the real HTTP call, recorded
    return land(reader.read(T0, T0 + timedelta(days=1)), cluster.kubernetes, cluster.name, T0.date())


def test_refused_chunks_are_halved_and_land_the_same(sim: SimulationResult, cluster: ClusterConfig,
                                                     prometheus_with) -> None:
    # a day of kube_pod_status_phase is ~200 series x 720 samples: far over 20,000
    limited = on_server(cluster, prometheus_with([sim.om_path, sim.kube_state_path], ["--query.max-samples=20000"]))
    unlimited_asks, limited_asks = [], []
    want, got = day(cluster, unlimited_asks), day(limited, limited_asks)
    assert limited_asks.count("/api/v1/query") > unlimited_asks.count("/api/v1/query")  # refused chunks were halved
    for part in ("series", "queue_samples", "quarantine"):
        a, b = getattr(got, part), getattr(want, part)
        assert_frame_equal(a.sort(a.columns, nulls_last=True), b.sort(b.columns, nulls_last=True))


def test_a_server_refusing_one_interval_fails_naming_it(sim: SimulationResult, cluster: ClusterConfig,
                                                        prometheus_with) -> None:
    tiny = on_server(cluster, prometheus_with([sim.om_path, sim.kube_state_path], ["--query.max-samples=3"]))
    with pytest.raises(PrometheusQueryError, match="too many samples") as caught:
        day(tiny)
    assert "cardhours cannot make this request smaller" in "\n".join(caught.value.__notes__)
