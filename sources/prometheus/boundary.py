"""Whether a server's range selectors include their left edge, asked of the server itself.

A downsampled read aggregates each bucket ``[b, b + step)`` with ``f(sel[r])`` evaluated at
``b + step - 1 ms``; that is exact only with ``r`` chosen for the server's range semantics:
Prometheus 2.x selects ``[t - r, t]``, Prometheus 3 and VictoriaMetrics ``(t - r, t]``. The
build info's version does not tell them apart for every server (VictoriaMetrics 1.79 gives
none; Thanos and Mimir number their own releases), and a wrong guess drops or adds a sample
at each bucket edge (measured against a real VictoriaMetrics: each 5-minute average then
missed the sample at its bucket start).

:func:`probe_left_open` asks: it finds one series with samples in the read's window
(``topk(1, count_over_time(...))``: no listing of every series, which a server may cap),
one of its sample times ``tau``, and selects that series over ``[1ms]`` at ``tau + 1 ms``:
the answer holds ``tau`` when the left edge is included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sources.prometheus.decode import DecodeError, decode_data
from sources.prometheus.promql import promql_string, seconds, selector

if TYPE_CHECKING:
    from sources.prometheus.client import PrometheusClient

PROBE_SPAN_MS = 3_600_000  # raw samples of one series over at most an hour: a small answer


def probe_left_open(
    client: PrometheusClient, metric: str, base_selector: str, start_ms: int, end_ms: int
) -> bool | None:
    """True when ``(t - r, t]``, False when ``[t - r, t]``; None when it cannot be told (no
    series of ``metric`` with a sample in ``[start_ms, end_ms)``). Request errors are raised."""
    end_ms = min(end_ms, start_ms + PROBE_SPAN_MS)
    window = f"[{seconds(start_ms)}, {seconds(end_ms)}) (range boundary probe)"
    match = selector(metric, base_selector, [])
    # one series with samples in the window, without listing them all (a server may cap listings)
    query = f"topk(1, count_over_time({match}[{end_ms - start_ms}ms]))"
    found = _result(client, query, end_ms - 1, window, "vector")
    if not found:
        return None
    labels = {name: value for name, value in found[0]["metric"].items() if name != "__name__"}
    one = selector(metric, "", [f"{name}={promql_string(value)}" for name, value in sorted(labels.items())])
    inside = [t for t in _times(client, f"{one}[{end_ms - start_ms}ms]", end_ms - 1, window) if start_ms <= t < end_ms]
    if not inside:
        return None
    return inside[0] not in _times(client, f"{one}[1ms]", inside[0] + 1, window)


def _result(client: PrometheusClient, query: str, at_ms: int, window: str, kind: str) -> list[dict]:
    """The ``result`` list of ``query``'s answer at ``at_ms``, which must be of type ``kind``."""
    body = client.get("/api/v1/query", {"query": query, "time": seconds(at_ms)}, query=query, window=window)
    try:
        data = decode_data(body)
        if not isinstance(data, dict) or data.get("resultType") != kind or not isinstance(data.get("result"), list):
            raise DecodeError(f"expected a {kind} result, got {str(data)[:200]}")
    except DecodeError as exc:
        raise client.undecodable("/api/v1/query", query, window, exc) from exc
    return data["result"]


def _times(client: PrometheusClient, query: str, at_ms: int, window: str) -> list[int]:
    """The sample times (ms, ascending) of ``query``'s answer (a matrix) at ``at_ms``."""
    return sorted(
        round(float(t) * 1000)
        for series in _result(client, query, at_ms, window, "matrix")
        for t, _ in series.get("values") or []
    )
