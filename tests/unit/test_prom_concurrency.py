"""Requests in flight: the configured number, else 4, capped at the reader's CPUs when the
server runs on this machine."""

import socket

import pytest

from config import EXAMPLE_CONFIG
from config.cluster import PrometheusConfig
from pipelines.resources import CardhoursResource
from sources.prometheus import concurrency
from sources.prometheus.concurrency import REMOTE_DEFAULT, on_this_machine, parallel_requests
from sources.prometheus.source import PrometheusMetricsSource


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.4.5", "::1", "[::1]", "localhost", "LocalHost", "prom.localhost"])
def test_loopback_hosts_are_this_machine(host):
    assert on_this_machine(host)


def test_this_hosts_own_name_is_this_machine():
    assert on_this_machine(socket.gethostname())


@pytest.mark.parametrize("host", ["192.0.2.7", "2001:db8::1", "prometheus.invalid", ""])
def test_other_hosts_are_not(host):
    # 192.0.2.0/24 and 2001:db8::/32 are documentation ranges (never this machine); .invalid never resolves
    assert not on_this_machine(host)


def test_configured_number_wins_everywhere():
    assert parallel_requests(7, "http://127.0.0.1:9090") == 7
    assert parallel_requests(1, "https://prometheus.invalid") == 1


def test_remote_server_gets_the_default():
    assert parallel_requests(None, "https://192.0.2.7:9090") == REMOTE_DEFAULT == 4


@pytest.mark.parametrize("cpus, expected", [(1, 1), (2, 2), (3, 3), (4, 4), (64, 4)])
def test_local_server_capped_at_the_readers_cpus(monkeypatch, cpus, expected):
    monkeypatch.setattr(concurrency, "usable_cpus", lambda: cpus)
    assert parallel_requests(None, "http://127.0.0.1:9090/prometheus") == expected
    assert parallel_requests(None, "http://[::1]:9090") == expected
    assert parallel_requests(None, "http://192.0.2.7:9090") == 4


def test_usable_cpus_is_the_affinity_mask():
    assert 1 <= concurrency.usable_cpus() <= (concurrency.os.cpu_count() or 1)


def test_the_source_uses_the_resolved_number(monkeypatch):
    monkeypatch.setattr(concurrency, "usable_cpus", lambda: 2)
    local = PrometheusMetricsSource(PrometheusConfig(url="http://127.0.0.1:1"))
    remote = PrometheusMetricsSource(PrometheusConfig(url="http://192.0.2.7:9090"))
    pinned = PrometheusMetricsSource(PrometheusConfig(url="http://127.0.0.1:1", max_parallel_requests=3))
    assert (local.parallel_requests, remote.parallel_requests, pinned.parallel_requests) == (2, 4, 3)


def test_the_dagster_resource_builds_the_configured_prometheus_source(monkeypatch):
    monkeypatch.setattr(concurrency, "usable_cpus", lambda: 2)  # the configured number is not capped
    resource = CardhoursResource(config_path=str(EXAMPLE_CONFIG))
    source = resource.metrics_source("alpha")
    assert isinstance(source, PrometheusMetricsSource)
    assert source.config == resource.config.cluster("alpha").prometheus
    assert source.parallel_requests == 4  # the example's max_parallel_requests


def test_config_rejects_zero():
    with pytest.raises(ValueError, match="max_parallel_requests"):
        PrometheusConfig(url="http://127.0.0.1:1", max_parallel_requests=0)
