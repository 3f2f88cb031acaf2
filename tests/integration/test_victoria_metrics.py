"""The ingest against a real VictoriaMetrics (``tests/support/victoria.py``): the same simulated
day and the real H200 trace as the Prometheus tests, loaded through its import API and read
back through its Prometheus-compatible HTTP API.

What differs from Prometheus and is covered here: range selectors are left-open (found by
``boundary.probe_left_open``: its build info has no version), ``query_range`` aligns to the
step unless asked not to (``nocache=1``), and its refusals read "cannot select more than
-search.maxSamplesPerQuery=N samples".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
import requests
from polars.testing import assert_frame_equal

from config.cluster import PrometheusConfig
from contracts.schemas import SAMPLE_VALUE_COLUMNS
from simulate.run import SimulationResult, simulate
from sources.metrics import FileMetricsSource
from sources.prometheus.source import PrometheusMetricsSource
from tests.fixtures import h200
from tests.fixtures.dcgm_openmetrics import h200_trace_om
from tests.fixtures.prom_config import prometheus_source
from tests.support.decoders import BOTH_DECODERS
from tests.support.downsampled import KEYS, assert_buckets_exact, hourly_energy
from tests.support.victoria import VictoriaServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CLUSTER = "sim"
T0 = datetime(2026, 3, 2)
T1 = T0 + timedelta(days=1)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate(
        tmp_path_factory.mktemp("sim"),
        gpus=32,
        days=1,
        start=date(2026, 3, 2),
        seed=5,
        step_seconds=15,
        metrics_format="both",
        cluster=CLUSTER,
    )


@pytest.fixture(scope="module")
def expected(sim: SimulationResult) -> pl.DataFrame:
    return FileMetricsSource(sim.out_dir).read_samples(CLUSTER, T0, T1).sort(KEYS, nulls_last=True)


@pytest.fixture(scope="module")
def url(sim: SimulationResult, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with VictoriaServer(tmp_path_factory.mktemp("victoria")) as server:
        server.load([sim.om_path])
        yield server.url


def source(url: str, decoder: str = "auto", **settings: object) -> PrometheusMetricsSource:
    return PrometheusMetricsSource(
        PrometheusConfig(url=url, scrape_interval_seconds=15, step_seconds=15, **settings), decoder=decoder
    )


@BOTH_DECODERS
def test_day_reads_back_exactly(url: str, expected: pl.DataFrame, decoder: str) -> None:
    prom = source(url, decoder)
    assert_frame_equal(prom.read_samples(CLUSTER, T0, T1).sort(KEYS, nulls_last=True), expected)
    assert prom.last_report.fetch.refused == 0 and prom.last_report.fetch.fallbacks == 0


def ms(moment: datetime) -> int:
    return int((moment - datetime(1970, 1, 1)).total_seconds() * 1000)


def test_range_selectors_are_found_left_open(url: str) -> None:
    assert source(url).left_open_ranges() is False  # the build info alone: no version, taken for 2.x
    assert source(url).left_open_ranges(ms(T0), ms(T1)) is True  # asked of the server with a real sample
    empty = source(url)
    assert empty.left_open_ranges(ms(T0 - timedelta(days=30)), ms(T0 - timedelta(days=29))) is False  # no sample


def test_downsampled_read_aggregates_each_bucket_exactly(url: str, expected: pl.DataFrame) -> None:
    assert_buckets_exact(source(url), expected, T0, T0 + timedelta(hours=6), 300)


def test_downsampled_energy_is_the_raw_energy_per_job_and_hour(url: str, expected: pl.DataFrame) -> None:
    assert_frame_equal(
        hourly_energy(source(url, downsample_seconds=300).read_samples(CLUSTER, T0, T1), 300),
        hourly_energy(expected, 15),
    )


def read_day_under(flag: str, sim: SimulationResult, expected: pl.DataFrame, workdir: Path):
    """The simulated day read back exactly from a VictoriaMetrics started with ``flag``; its read report."""
    with VictoriaServer(workdir, [flag]) as server:
        server.load([sim.om_path])
        prom = source(server.url)
        assert_frame_equal(prom.read_samples(CLUSTER, T0, T1).sort(KEYS, nulls_last=True), expected)
        return prom.last_report


def test_refusals_for_too_many_samples_are_split_by_host(
    sim: SimulationResult, expected: pl.DataFrame, tmp_path: Path
) -> None:
    # A day of one field is ~200 series x 5,760 samples; a host's are fewer than 200,000.
    report = read_day_under("-search.maxSamplesPerQuery=200000", sim, expected, tmp_path)
    assert report.fetch.refused > 0 and report.fetch.shards


def series_per_host(url: str, metric: str) -> dict[str, int]:
    """How many series ``metric`` has in the day on each host, from the uncapped server."""
    body = requests.get(
        f"{url}/api/v1/series", params={"match[]": metric, "start": ms(T0) / 1000, "end": (ms(T1) - 1) / 1000}
    ).json()
    return Counter(series.get("Hostname", "") for series in body["data"])


def test_series_listings_over_its_cap_are_taken_host_by_host(
    url: str, sim: SimulationResult, expected: pl.DataFrame, tmp_path: Path
) -> None:
    # The cap sits halfway between the busiest host's series of a profiling field (the MIG host,
    # a new series at every job change; the server refuses a count equal to its cap) and the
    # field's whole day (140 and 197 at seed 5), and above GPU_UTIL's (no MIG rows): /api/v1/series
    # refuses the profiling census ("the number of matching timeseries exceeds N").
    profiling, whole = series_per_host(url, "DCGM_FI_PROF_SM_ACTIVE"), series_per_host(url, "DCGM_FI_DEV_GPU_UTIL")
    cap = (max(profiling.values()) + sum(profiling.values())) // 2
    assert max(profiling.values()) < cap < sum(profiling.values()) and sum(whole.values()) < cap, (profiling, whole)
    report = read_day_under(f"-search.maxSeries={cap}", sim, expected, tmp_path)
    listed = {census.metric: census.listed_in for census in report.censuses}
    assert listed["DCGM_FI_PROF_SM_ACTIVE"] > 1 and listed["DCGM_FI_DEV_GPU_UTIL"] == 0


def test_h200_trace_comes_back_exactly_under_each_job(tmp_path: Path) -> None:
    om = h200_trace_om(tmp_path / "h200.om", label_style="hostname")
    ts = h200.raw_samples()["ts"]
    start = ts.min().replace(minute=0, second=0, microsecond=0)
    end = ts.max().replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    with VictoriaServer(tmp_path / "victoria") as server:
        server.load([om])
        got = prometheus_source(
            server.url, cluster=h200.CLUSTER, step_seconds=1, scrape_interval_seconds=1
        ).read_samples(h200.CLUSTER, start, end)
    compared = ["ts", "hpc_job", *SAMPLE_VALUE_COLUMNS]
    expected = h200.raw_samples()
    assert got.height == expected.height  # one row per captured second, none invented
    assert_frame_equal(got.sort("ts").select(compared), expected.select(compared))
    assert set(got["hostname"]) == {h200.HOSTNAME}
