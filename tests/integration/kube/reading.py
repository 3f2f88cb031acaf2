"""Landing the simulated Kubernetes site's days through ``KubeReader`` (shared by this directory's modules)."""

from __future__ import annotations

from datetime import datetime, timedelta

from polars.testing import assert_frame_equal

from config.cluster import ClusterConfig
from sources.kube.landing import Landing, land
from sources.kube.reader import KubeReader
from tests.integration.kube.cases import DAYS, T0

PARTS = ("series", "queue_samples", "quarantine")


def land_day(cluster: ClusterConfig, day: datetime = T0, asked: list[str] | None = None) -> Landing:
    """``day`` read over HTTP and landed; the path of every request made is added to ``asked``."""
    reader = KubeReader(cluster)
    assert reader.kube.path is None and reader.client is not None  # through the HTTP API
    if asked is not None:
        get = reader.client.get

        def recording(path: str, *args, **kwargs):
            asked.append(path)
            return get(path, *args, **kwargs)

        reader.client.get = recording  # the real HTTP call, recorded
    return land(reader.read(day, day + timedelta(days=1)), cluster.kubernetes, cluster.name, day.date())


def land_days(cluster: ClusterConfig) -> list[Landing]:
    return [land_day(cluster, T0 + timedelta(days=i)) for i in range(DAYS)]


def assert_same_landing(got: Landing, want: Landing) -> None:
    for part in PARTS:
        a, b = getattr(got, part), getattr(want, part)
        assert_frame_equal(a.sort(a.columns, nulls_last=True), b.sort(b.columns, nulls_last=True))
