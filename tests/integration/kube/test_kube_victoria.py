"""The Kubernetes site of conftest.py loaded into a real VictoriaMetrics (``tests/support/victoria.py``)
lands exactly what it lands from the real Prometheus: the same pod series, queue samples and
quarantine, day by day, and the same DCGM samples with their pod labels."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from config.cluster import ClusterConfig
from simulate.run import SimulationResult
from sources.prometheus.source import PrometheusMetricsSource
from tests.integration.kube.cases import T0
from tests.integration.kube.reading import assert_same_landing, land_day, land_days
from tests.support.victoria import VictoriaServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def at(cluster: ClusterConfig, url: str) -> ClusterConfig:
    return cluster.model_copy(update={"prometheus": cluster.prometheus.model_copy(update={"url": url})})


@pytest.fixture(scope="module")
def on_victoria(
    sim: SimulationResult, cluster: ClusterConfig, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClusterConfig]:
    with VictoriaServer(Path(tmp_path_factory.mktemp("victoria"))) as server:
        server.load([sim.om_path, sim.kube_state_path])
        yield at(cluster, server.url)


def test_pods_and_queues_land_as_from_prometheus(cluster: ClusterConfig, on_victoria: ClusterConfig) -> None:
    for want, got in zip(land_days(cluster), land_days(on_victoria), strict=True):
        assert want.series.height > 0 and want.queue_samples.height > 0
        assert_same_landing(got, want)


def test_dcgm_samples_with_pod_labels_as_from_prometheus(cluster: ClusterConfig, on_victoria: ClusterConfig) -> None:
    end = T0 + timedelta(days=1)
    want = PrometheusMetricsSource(cluster.prometheus).read_samples(cluster.name, T0, end)
    got = PrometheusMetricsSource(on_victoria.prometheus).read_samples(cluster.name, T0, end)
    assert want.filter(pl.col("pod").is_not_null()).height > 0
    assert_frame_equal(got.sort(got.columns, nulls_last=True), want.sort(want.columns, nulls_last=True))


def test_capped_series_listings_are_taken_namespace_by_namespace(
    sim: SimulationResult, cluster: ClusterConfig, tmp_path: Path
) -> None:
    # kube_pod_status_phase has more than 190 series a day (five phases per pod), no namespace
    # more than 180: a cap of 190 refuses its listing, not the namespaces' listings.
    asked: list[str] = []
    with VictoriaServer(tmp_path / "capped", ["-search.maxSeries=190"]) as server:
        server.load([sim.om_path, sim.kube_state_path])
        got = land_day(at(cluster, server.url), asked=asked)
    assert "/api/v1/label/namespace/values" in asked
    assert_same_landing(got, land_day(cluster))
