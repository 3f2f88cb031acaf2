"""Simulator -> promtool back-fill -> real prometheus -> PrometheusMetricsSource == the simulator's Parquet.

One simulated day (32 GPUs: three H100 nodes and an A100 node split into MIG instances,
15 s samples, jobs changing ``hpc_job`` through the day) is back-filled into a real
Prometheus 2.42 and read back through the HTTP API, with default limits, with limits
small enough to force time chunks and host shards, and from a server started with a
tiny ``--query.max-samples`` that refuses the planned queries.
"""

from __future__ import annotations

import time
from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from cardhours.bench.prometheus_server import free_port
from config.cluster import PrometheusConfig
from contracts.exporters import DCGM
from pipelines.resources import CardhoursResource
from simulate.run import SimulationResult, simulate
from sources.metrics import FileMetricsSource
from sources.prometheus.client import Backoff, PrometheusClient, PrometheusQueryError
from sources.prometheus.decode import decode_matrix
from sources.prometheus.fetch import fetch_one
from sources.prometheus.plan import Request
from sources.prometheus.source import PrometheusMetricsSource, to_ms
from tests.support.decoders import BOTH_DECODERS
from tests.support.downsampled import assert_buckets_exact, hourly_energy

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CLUSTER = "sim"
DAY = date(2026, 3, 2)
T0 = datetime(2026, 3, 2)
T1 = T0 + timedelta(days=1)
KEYS = ["hostname", "gpu", "gpu_i_id", "hpc_job", "ts"]
EDGE_OM = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus" / "edge.om"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> SimulationResult:
    return simulate(
        tmp_path_factory.mktemp("sim"),
        gpus=32,
        days=1,
        start=DAY,
        seed=5,
        step_seconds=15,
        metrics_format="both",
        cluster=CLUSTER,
    )


@pytest.fixture(scope="module")
def url(sim: SimulationResult, prometheus_with) -> str:
    return prometheus_with([sim.om_path])


@pytest.fixture(scope="module")
def expected(sim: SimulationResult) -> pl.DataFrame:
    return FileMetricsSource(sim.out_dir).read_samples(CLUSTER, T0, T1).sort(KEYS, nulls_last=True)


def source(url: str, decoder: str = "auto", **settings: object) -> PrometheusMetricsSource:
    return PrometheusMetricsSource(
        PrometheusConfig(url=url, scrape_interval_seconds=15, step_seconds=15, **settings), decoder=decoder
    )


def test_simulated_day_has_mig_instances(expected: pl.DataFrame) -> None:
    assert expected.filter(pl.col("gpu_i_id").is_not_null()).height > 0
    assert expected["hpc_job"].n_unique() > 10


@BOTH_DECODERS
def test_day_reads_back_exactly(url: str, expected: pl.DataFrame, decoder: str) -> None:
    prom = source(url, decoder)
    got = prom.read_samples(CLUSTER, T0, T1)
    assert_frame_equal(got.sort(KEYS, nulls_last=True), expected)
    report = prom.last_report
    assert prom.fields_present == tuple(DCGM.metric_signals)
    assert report.fetch.refused == 0 and report.fetch.planned == len(DCGM.metric_signals)
    assert report.fetch.decoder == decoder and report.fetch.fallbacks == 0  # numba: every answer decoded into place
    assert report.n_samples == sum(expected[c].count() for c in DCGM.metric_signals.values())


def test_dagster_resource_reads_the_configured_prometheus(
    sim: SimulationResult, url: str, expected: pl.DataFrame
) -> None:
    text = sim.config_path.read_text().replace(
        '[clusters.metrics]\nsource = "file"\npath = "metrics"\nstep_seconds = 15\n',
        f'[clusters.metrics]\nsource = "prometheus"\n\n[clusters.prometheus]\nurl = "{url}"\n'
        "scrape_interval_seconds = 15\nstep_seconds = 15\nmax_points_per_series = 2000\n",
    )
    config = sim.config_path.with_name("prometheus.toml")
    config.write_text(text)
    source = CardhoursResource(config_path=str(config)).metrics_source(CLUSTER)
    assert isinstance(source, PrometheusMetricsSource) and source.config.max_points_per_series == 2000
    got = source.read_samples(CLUSTER, T0 + timedelta(hours=20), T1)
    assert_frame_equal(got.sort(KEYS, nulls_last=True), expected.filter(pl.col("ts") >= T0 + timedelta(hours=20)))


def test_ingest_asset_reads_prometheus_and_reports_the_read(sim: SimulationResult, url: str) -> None:
    from dagster import materialize

    from pipelines.assets.ingest import raw_dcgm_samples

    text = sim.config_path.read_text().replace(
        '[clusters.metrics]\nsource = "file"\npath = "metrics"\nstep_seconds = 15\n',
        f'[clusters.metrics]\nsource = "prometheus"\n\n[clusters.prometheus]\nurl = "{url}"\n'
        "scrape_interval_seconds = 15\nstep_seconds = 15\n",
    )
    assert 'source = "prometheus"' in text
    config = sim.config_path.with_name("asset.toml")  # its warehouse: the simulation's temp directory
    config.write_text(text)
    result = materialize(
        [raw_dcgm_samples],
        partition_key=DAY.isoformat(),
        resources={"cardhours": CardhoursResource(config_path=str(config))},
    )
    assert result.success
    events = result.asset_materializations_for_node(raw_dcgm_samples.op.name)
    metadata = {name: value.value for name, value in events[0].metadata.items()}
    read = metadata["read_by_cluster"][CLUSTER]
    assert read["fields_present"] == list(DCGM.metric_signals) and read["requests_refused_and_split"] == 0
    assert read["requests_answered"] == read["requests_planned"] == len(DCGM.metric_signals)
    assert read["samples"] > metadata["rows"] > 0 and read["response_mib"] > 0  # long samples: one per field


def test_small_limits_force_time_chunks_and_host_shards(url: str, expected: pl.DataFrame) -> None:
    prom = source(url, max_points_per_series=500, max_samples_per_query=20_000)
    got = prom.read_samples(CLUSTER, T0, T1)
    assert_frame_equal(got.sort(KEYS, nulls_last=True), expected)
    fetch = prom.last_report.fetch
    assert fetch.refused == 0 and fetch.planned > 10 * len(DCGM.metric_signals) and fetch.fallbacks == 0
    assert ("Hostname", ("gpu-004",)) in fetch.shards and len(fetch.shards) >= 2


def test_a_day_read_in_shards_of_gpus_is_the_day_read_whole(url: str, expected: pl.DataFrame) -> None:
    """Seven shards of 8 GPUs or MIG instances (24 whole GPUs, 8 split in 4), each read with a
    UUID matcher; small limits also cut each shard's requests into time chunks and host shards."""
    prom = source(url, max_points_per_series=500, max_samples_per_query=20_000)
    parts = list(prom.read_shards(CLUSTER, T0, T1, gpus_per_shard=8))
    assert len(parts) == 7 and all(part.select("uuid", "gpu_i_id").unique().height <= 8 for part in parts)
    assert_frame_equal(pl.concat(parts).sort(KEYS, nulls_last=True), expected)
    report = prom.last_report
    assert report.gpu_shards == 7 and prom.fields_present == tuple(DCGM.metric_signals)
    assert report.n_samples == sum(expected[c].count() for c in DCGM.metric_signals.values())
    assert report.fetch.refused == 0 and report.fetch.planned > 10 * len(DCGM.metric_signals)


def test_a_day_of_no_more_gpus_than_a_shard_sends_the_unsharded_requests(url: str, expected: pl.DataFrame) -> None:
    whole, sharded = source(url), source(url)
    parts = list(sharded.read_shards(CLUSTER, T0, T1, 56))  # 24 whole GPUs and 32 MIG instances
    assert len(parts) == 1
    assert_frame_equal(whole.read_samples(CLUSTER, T0, T1), parts[0])
    assert sharded.last_report is not None and sharded.last_report.gpu_shards == 1
    assert sharded.last_report.fetch.planned == whole.last_report.fetch.planned == len(DCGM.metric_signals)


def test_downsampled_energy_read_in_shards_is_the_raw_energy(url: str, expected: pl.DataFrame) -> None:
    exact = hourly_energy(expected.filter(pl.col("ts") < T1), 15)
    parts = source(url, downsample_seconds=300).read_shards(CLUSTER, T0, T1, gpus_per_shard=8)
    assert_frame_equal(hourly_energy(pl.concat(list(parts)), 300), exact)


def test_chunk_edges_on_sample_times_give_each_sample_once(url: str, expected: pl.DataFrame) -> None:
    hour = timedelta(hours=1)
    prom = source(url)
    parts = [prom.read_raw(T0 + hour, T0 + 2 * hour), prom.read_raw(T0 + 2 * hour, T0 + 3 * hour)]
    whole = prom.read_raw(T0 + hour, T0 + 3 * hour)
    times = [p.samples["ts"] for p in parts]
    assert times[0].min() == T0 + hour and times[0].max() == T0 + 2 * hour - timedelta(seconds=15)
    assert times[1].min() == T0 + 2 * hour
    assert sum(p.samples.height for p in parts) == whole.samples.height
    assert whole.samples.height == sum(
        expected.filter(pl.col("ts").is_between(T0 + hour, T0 + 3 * hour, closed="left"))[c].count()
        for c in DCGM.metric_signals.values()
    )
    # Prometheus 2.42's closed range really returns the sample at the chunk end; the window drops it.
    request = Request("DCGM_FI_PROF_SM_ACTIVE", to_ms(T0 + hour), to_ms(T0 + 2 * hour), 1)
    path, params = request.http("")
    body = prom.client.get(path, params, query=params["query"], window="test")
    assert decode_matrix(body).ts_ms.max() == to_ms(T0 + 2 * hour)
    assert fetch_one(prom.client, request, "").samples()[0].max() == (to_ms(T0 + 2 * hour) - 15_000) * 1000


def test_server_refusing_too_many_samples_is_sharded_by_host(
    sim: SimulationResult, prometheus_with, expected: pl.DataFrame
) -> None:
    tiny = prometheus_with([sim.om_path], ["--query.max-samples=5000"])
    prom = source(tiny, max_parallel_requests=4)
    got = prom.read_samples(CLUSTER, T0, T1)
    assert_frame_equal(got.sort(KEYS, nulls_last=True), expected)
    fetch = prom.last_report.fetch
    assert fetch.refused > 0 and fetch.max_splits >= 3
    assert {hosts for _, hosts in fetch.shards} >= {("gpu-001",), ("gpu-004",)}


def test_unreachable_server_fails_fast_naming_url_and_query() -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    config = PrometheusConfig(url=closed, max_retries=2)
    client = PrometheusClient.from_config(config, {}, backoff=Backoff(base_seconds=0.01))
    started = time.monotonic()
    with pytest.raises(PrometheusQueryError) as caught:
        PrometheusMetricsSource(config, client=client).read_samples(CLUSTER, T0, T1)
    assert time.monotonic() - started < 10
    assert caught.value.attempts == 3 and caught.value.status is None
    assert closed in str(caught.value) and "DCGM_FI_" in caught.value.query and "DCGM_FI_" in str(caught.value)


def test_downsampled_read_aggregates_each_bucket(url: str, expected: pl.DataFrame) -> None:
    assert_buckets_exact(source(url), expected, T0, T0 + timedelta(hours=6), 300)


def test_downsampled_energy_is_the_raw_energy_per_job_and_hour(url: str, expected: pl.DataFrame) -> None:
    """Jobs change inside 5-minute steps all day; the hourly energy per GPU, job and hour from a
    downsampled read equals the raw samples' to the millijoule."""
    exact = hourly_energy(expected.filter(pl.col("ts") < T1), 15)
    assert exact.height > 500 and exact["hpc_job"].n_unique() > 10
    assert_frame_equal(hourly_energy(source(url, downsample_seconds=300).read_samples(CLUSTER, T0, T1), 300), exact)


def test_both_host_spellings_hostless_series_and_dotted_hosts_under_refusals(prometheus_with) -> None:
    start, end = datetime(2026, 3, 2), datetime(2026, 3, 2, 0, 2)
    normal = source(prometheus_with([EDGE_OM])).read_raw(start, end)
    refusing = source(prometheus_with([EDGE_OM], ["--query.max-samples=3"]))
    sharded = refusing.read_raw(start, end)
    assert_frame_equal(sharded.series, normal.series)
    assert_frame_equal(sharded.samples, normal.samples)
    assert sharded.samples.equals(sharded.samples.sort("series_id", "ts"))
    assert normal.samples.height == 20 and normal.series.height == 6
    shards = refusing.last_report.fetch.shards
    assert {("Hostname", ("node.3",)), ("hostname", ("node-2",)), (None, ())} <= shards
    assert set(refusing.fields_present) == {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE"}


def test_downsampling_buckets_are_exact_at_their_edges(prometheus_with) -> None:
    """Samples at bucket_end - 1 ms belong to their bucket: the range selector must match the
    server's boundary rule (closed on 2.42), or they would be counted twice."""
    prom = source(prometheus_with([EDGE_OM]))
    long = prom.read_downsampled(datetime(2026, 3, 2), datetime(2026, 3, 2, 0, 2), 60)
    power = long.series.filter(pl.col("__name__") == "DCGM_FI_DEV_POWER_USAGE")["series_id"]
    rows = long.samples.filter(pl.col("series_id").is_in(power.implode())).select("ts", "value").rows()
    assert rows == [(datetime(2026, 3, 2, 0, 0), 1.5), (datetime(2026, 3, 2, 0, 1), 15.0)]
    assert prom.left_open_ranges() is False
    with pytest.raises(ValueError, match="divide a day"):
        prom.read_downsampled(datetime(2026, 3, 2), datetime(2026, 3, 2, 1), 7 * 60)
