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

from cardhours.config.cluster import ClusterConfig
from cardhours.simulate.run import SimulationResult
from cardhours.sources.kube.landing import Landing, land
from cardhours.sources.kube.reader import KubeReader
from cardhours.sources.prometheus.source import PrometheusMetricsSource
from tests.integration.kube.cases import DAYS, T0
from tests.support.victoria import VictoriaServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def on_victoria(sim: SimulationResult, cluster: ClusterConfig, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[ClusterConfig]:
    with VictoriaServer(Path(tmp_path_factory.mktemp("victoria"))) as server:
        server.load([sim.om_path, sim.kube_state_path])
        prometheus = cluster.prometheus.model_copy(update={"url": server.url})
        yield cluster.model_copy(update={"prometheus": prometheus})


def landings(cluster: ClusterConfig) -> list[Landing]:
    reader = KubeReader(cluster)
    days = [T0 + timedelta(days=i) for i in range(DAYS)]
    return [land(reader.read(d, d + timedelta(days=1)), cluster.kubernetes, cluster.name, d.date()) for d in days]


def ordered(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(frame.columns, nulls_last=True)


def test_pods_and_queues_land_as_from_prometheus(cluster: ClusterConfig, on_victoria: ClusterConfig) -> None:
    for day, (want, got) in enumerate(zip(landings(cluster), landings(on_victoria))):
        assert want.series.height > 0 and want.queue_samples.height > 0, day
        for part in ("series", "queue_samples", "quarantine"):
            assert_frame_equal(ordered(getattr(got, part)), ordered(getattr(want, part)))


def test_dcgm_samples_with_pod_labels_as_from_prometheus(cluster: ClusterConfig, on_victoria: ClusterConfig) -> None:
    end = T0 + timedelta(days=1)
    want = PrometheusMetricsSource(cluster.prometheus).read_samples(cluster.name, T0, end)
    got = PrometheusMetricsSource(on_victoria.prometheus).read_samples(cluster.name, T0, end)
    assert want.filter(pl.col("pod").is_not_null()).height > 0
    assert_frame_equal(ordered(got), ordered(want))


def test_capped_series_listings_are_taken_namespace_by_namespace(sim: SimulationResult, cluster: ClusterConfig,
                                                                 tmp_path: Path) -> None:
    # kube_pod_status_phase has more than 190 series a day (five phases per pod), no namespace
    # more than 180: a cap of 190 refuses its listing, not the namespaces' listings.
    with VictoriaServer(tmp_path / "capped", ["-search.maxSeries=190"]) as server:
        server.load([sim.om_path, sim.kube_state_path])
        capped = cluster.model_copy(update={"prometheus": cluster.prometheus.model_copy(update={"url": server.url})})
        reader = KubeReader(capped)
        asked: list[str] = []
        get = reader.client.get

        def recording(path: str, *args, **kwargs):
            asked.append(path)
            return get(path, *args, **kwargs)

        reader.client.get = recording  # the real HTTP call, recorded
        got = land(reader.read(T0, T0 + timedelta(days=1)), capped.kubernetes, capped.name, T0.date())
    want = landings(cluster)[0]
    assert "/api/v1/label/namespace/values" in asked
    for part in ("series", "queue_samples", "quarantine"):
        assert_frame_equal(ordered(getattr(got, part)), ordered(getattr(want, part)))
