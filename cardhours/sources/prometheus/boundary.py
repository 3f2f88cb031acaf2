"""Whether a server's range selectors include their left edge, asked of the server itself.

A downsampled read aggregates each bucket ``[b, b + step)`` with ``f(sel[r])`` evaluated at
``b + step - 1 ms``; that is exact only with ``r`` chosen for the server's range semantics:
Prometheus 2.x selects ``[t - r, t]``, Prometheus 3 and VictoriaMetrics ``(t - r, t]``. The
build info's version does not tell them apart for every server (VictoriaMetrics 1.79 gives
none; Thanos and Mimir number their own releases), and a wrong guess drops or adds a sample
at each bucket edge (measured against a real VictoriaMetrics: each 5-minute average then
missed the sample at its bucket start).

:func:`probe_left_open` asks: it takes one series with samples in the read's window, one of
its sample times ``tau``, and selects that series over ``[1ms]`` at ``tau + 1 ms``: the
answer holds ``tau`` when the left edge is included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cardhours.sources.prometheus.decode import DecodeError, decode_label_sets, decode_matrix
from cardhours.sources.prometheus.promql import promql_string, seconds

if TYPE_CHECKING:
    from cardhours.sources.prometheus.client import PrometheusClient

PROBE_SPAN_MS = 3_600_000  # raw samples of one series over at most an hour: a small answer


def probe_left_open(client: PrometheusClient, match: str, start_ms: int, end_ms: int) -> bool | None:
    """True when ``(t - r, t]``, False when ``[t - r, t]``; None when it cannot be told (no
    series of ``match`` with a sample in ``[start_ms, end_ms)``). Request errors are raised."""
    end_ms = min(end_ms, start_ms + PROBE_SPAN_MS)
    window = f"[{seconds(start_ms)}, {seconds(end_ms)}) (range boundary probe)"
    body = client.get("/api/v1/series", {"match[]": match, "start": seconds(start_ms), "end": seconds(end_ms - 1)},
                      query=match, window=window)
    try:
        label_sets = decode_label_sets(body)
    except DecodeError as exc:
        raise client.undecodable("/api/v1/series", match, window, exc) from exc
    # a few series: some servers (VictoriaMetrics) list every series of the day, not only the hour's
    for labels in sorted(label_sets, key=lambda labels: sorted(labels.items()))[:3]:
        one = "{" + ",".join(f"{name}={promql_string(value)}" for name, value in sorted(labels.items())) + "}"
        samples = _times(client, f"{one}[{end_ms - start_ms}ms]", end_ms - 1, window)
        inside = [t for t in samples if start_ms <= t < end_ms]
        if inside:
            tau = inside[0]
            return tau not in _times(client, f"{one}[1ms]", tau + 1, window)
    return None


def _times(client: PrometheusClient, query: str, at_ms: int, window: str) -> list[int]:
    """The sample times (ms, ascending) of ``query``'s answer at ``at_ms``."""
    body = client.get("/api/v1/query", {"query": query, "time": seconds(at_ms)}, query=query, window=window)
    try:
        matrix = decode_matrix(body)
    except DecodeError as exc:
        raise client.undecodable("/api/v1/query", query, window, exc) from exc
    return sorted(matrix.ts_ms.tolist())
