"""The census of one metric and partition: its series' label sets (``/api/v1/series``), taken
host by host when the server refuses to list them all at once.

Servers cap how many series one request may match: VictoriaMetrics' ``-search.maxSeries``
(30,000 by default for ``/api/v1/series``: "the number of matching timeseries exceeds N"),
Mimir's and Thanos' series limits. A large site passes that in a day of one metric (every
``hpc_job`` change starts a new series), and the whole partition would fail. So a refused
listing is retried in host shards: the hosts come from ``/api/v1/label/<host label>/values``
(cheap: one value per host), each shard is listed with the same host matchers the data
requests use (``promql.host_shard_matchers``), and a shard still refused is halved until one
host is refused alone, which fails the partition naming it.
"""

from __future__ import annotations

from sources.prometheus.client import PrometheusClient, PrometheusQueryError
from sources.prometheus.decode import DecodeError, decode_data, decode_label_sets
from sources.prometheus.promql import HOST_LABELS, host_shard_matchers, seconds, selector


def list_series(
    client: PrometheusClient,
    metric: str,
    base_selector: str,
    start_ms: int,
    end_ms: int,
    window: str,
    shard_labels: tuple[str, ...] = HOST_LABELS,
) -> tuple[list[dict[str, str]], int]:
    """Label sets of ``metric``'s series with samples in ``[start_ms, end_ms)``, and how many
    shards (by the values of ``shard_labels``: the host labels unless given) they took (0: one
    listing)."""
    match = selector(metric, base_selector, [])
    try:
        return _series(client, match, start_ms, end_ms, window), 0
    except PrometheusQueryError as exc:
        if not exc.too_many_samples:
            raise
    shards = [
        (label, hosts) for label in shard_labels if (hosts := _hosts(client, label, match, start_ms, end_ms, window))
    ]
    shards.append((None, ()))  # series with none of the labels
    found: list[dict[str, str]] = []
    listed = 0
    while shards:
        label, hosts = shards.pop()
        shard = selector(metric, base_selector, host_shard_matchers(label, hosts, shard_labels))
        try:
            found += _series(client, shard, start_ms, end_ms, window)
            listed += 1
        except PrometheusQueryError as exc:
            if not exc.too_many_samples or len(hosts) < 2:
                raise
            half = len(hosts) // 2
            shards += [(label, hosts[:half]), (label, hosts[half:])]
    return found, listed


def _series(client: PrometheusClient, match: str, start_ms: int, end_ms: int, window: str) -> list[dict[str, str]]:
    params = {"match[]": match, "start": seconds(start_ms), "end": seconds(end_ms - 1)}
    body = client.get("/api/v1/series", params, query=match, window=window)
    try:
        return decode_label_sets(body)
    except DecodeError as exc:
        raise client.undecodable("/api/v1/series", match, window, exc) from exc


def _hosts(
    client: PrometheusClient, label: str, match: str, start_ms: int, end_ms: int, window: str
) -> tuple[str, ...]:
    """The values of ``label`` among ``match``'s series, sorted (empty ones left out)."""
    path = f"/api/v1/label/{label}/values"
    body = client.get(
        path,
        {"match[]": match, "start": seconds(start_ms), "end": seconds(end_ms - 1)},
        query=f"{label} values of {match}",
        window=window,
    )
    try:
        values = decode_data(body)
    except DecodeError as exc:
        raise client.undecodable(path, match, window, exc) from exc
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise client.undecodable(path, match, window, DecodeError(f"expected a list of strings, got {values!r:.200}"))
    return tuple(sorted(v for v in values if v))
