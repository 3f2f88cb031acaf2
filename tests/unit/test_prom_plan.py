"""Request planning: sizes within limits, exact coverage, shards and splits (pure functions)."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from sources.prometheus.plan import (
    DAY_MS,
    Census,
    Downsample,
    HostShard,
    Limits,
    PlanError,
    Request,
    chunk_points,
    day_partitions,
    plan_metric,
    promql_string,
    quote_meta,
    seconds,
    selector,
    split_refused,
    time_chunks,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus"
DAY0 = 20514 * DAY_MS  # 2026-03-02T00:00:00Z
SCRAPE = 15_000


def census(per_host: dict[str, int], label: str = "Hostname", hostless: int = 0) -> Census:
    sets = [{label: host, "gpu": str(i)} for host, n in per_host.items() for i in range(n)]
    sets += [{"gpu": str(i)} for i in range(hostless)]
    return Census.from_label_sets("DCGM_FI_PROF_SM_ACTIVE", sets)


def estimated_points(request: Request) -> int:
    return (request.end_ms - request.start_ms + 1) // SCRAPE + 1


def assert_tiles(requests: list[Request], start: int, end: int) -> None:
    """Per shard, the chunks cover [start, end) exactly once."""
    by_shard: dict = {}
    for r in requests:
        by_shard.setdefault(r.shard, []).append((r.start_ms, r.end_ms))
    for chunks in by_shard.values():
        chunks.sort()
        assert chunks[0][0] == start and chunks[-1][1] == end
        assert all(a[1] == b[0] for a, b in pairwise(chunks))


def test_day_partitions_cut_at_utc_midnight() -> None:
    assert day_partitions(DAY0 + 5, DAY0 + 2 * DAY_MS + 7) == [
        (DAY0 + 5, DAY0 + DAY_MS),
        (DAY0 + DAY_MS, DAY0 + 2 * DAY_MS),
        (DAY0 + 2 * DAY_MS, DAY0 + 2 * DAY_MS + 7),
    ]
    assert day_partitions(DAY0, DAY0 + DAY_MS) == [(DAY0, DAY0 + DAY_MS)]
    assert day_partitions(DAY0, DAY0) == []


@pytest.mark.parametrize(
    "series, max_points, max_samples",
    [
        (1, 11_000, 50_000_000),
        (64, 11_000, 50_000_000),
        (5_000, 11_000, 50_000_000),
        (200, 500, 20_000),
        (200, 11_000, 300_000),
        (7, 100, 1_000_000),
    ],
)
def test_plans_respect_both_limits_and_tile_the_day(series: int, max_points: int, max_samples: int) -> None:
    hosts = {f"node{i:03d}": 8 for i in range(series // 8)}
    hosts.update({"last": series % 8} if series % 8 else {})
    limits = Limits(SCRAPE, max_points, max_samples)
    requests = plan_metric(census(hosts), DAY0, DAY0 + DAY_MS, limits)
    assert requests
    for r in requests:
        assert estimated_points(r) <= max_points
        assert r.series * estimated_points(r) <= max_samples or (r.shard and len(r.shard.hosts) == 1)
    assert_tiles(requests, DAY0, DAY0 + DAY_MS)
    shards = [r.shard for r in requests if r.shard]
    if shards:
        covered = sorted(h for s in set(shards) for h in s.hosts)
        assert covered == sorted(hosts)  # every host in exactly one shard


def test_soft_target_cuts_time_but_not_below_the_minimum_chunk() -> None:
    limits = Limits(SCRAPE, 11_000, 50_000_000, target_samples_per_request=100_000, min_chunk_ms=3_600_000)
    requests = plan_metric(census({"a": 64}), DAY0, DAY0 + DAY_MS, limits)
    assert len(requests) == 24 * 64 * 240 // 100_000 + 1  # ~100k samples a request
    tiny = plan_metric(census({"a": 5000}), DAY0, DAY0 + DAY_MS, limits)
    assert len(tiny) == 24  # the soft target would want 1-minute chunks; one hour is the floor


def test_chunk_points_and_time_chunks() -> None:
    limits = Limits(SCRAPE, 11_000, 50_000_000)
    assert chunk_points(1, limits) == 11_000
    assert chunk_points(10_000, limits) == 241  # the 2M-sample target (200) floored at one hour, both ends
    assert chunk_points(10_000_000, Limits(SCRAPE, 11_000, 50_000_000, min_chunk_ms=0)) == 1
    chunks = time_chunks(DAY0, DAY0 + DAY_MS, 100, 60_000, aligned=True)
    assert all((a - DAY0) % 60_000 == 0 for a, _ in chunks) and chunks[-1][1] == DAY0 + DAY_MS


def test_no_series_means_no_requests() -> None:
    assert plan_metric(Census("DCGM_FI_PROF_SM_ACTIVE", ()), DAY0, DAY0 + DAY_MS, Limits(SCRAPE, 11_000, 10)) == []


def test_census_from_recorded_series_answer() -> None:
    answer = json.loads((FIXTURES / "series.json").read_text())["data"]
    found = Census.from_label_sets("DCGM_FI_PROF_SM_ACTIVE", answer)
    assert found.groups == (
        ("Hostname", "node-1", 1),
        ("Hostname", "node.3", 1),
        ("hostname", "node-2", 1),
        (None, "", 1),
    )
    assert found.total == 4 and found.series_in(HostShard("Hostname", ("node.3",))) == 1


def test_refused_request_splits_by_label_kind_then_hosts_then_time() -> None:
    mixed = Census.from_label_sets(
        "m", [{"Hostname": "a"}, {"Hostname": "b"}, {"Hostname": "b"}, {"hostname": "c"}, {"gpu": "9"}]
    )
    whole = Request("m", DAY0, DAY0 + DAY_MS, mixed.total)
    kinds = split_refused(whole, mixed, SCRAPE)
    assert [(r.shard.label, r.shard.hosts, r.series) for r in kinds] == [
        ("Hostname", ("a", "b"), 3),
        ("hostname", ("c",), 1),
        (None, (), 1),
    ]
    halves = split_refused(kinds[0], mixed, SCRAPE)
    assert [(r.shard.hosts, r.series, r.splits) for r in halves] == [(("a",), 1, 2), (("b",), 2, 2)]
    times = split_refused(halves[1], mixed, SCRAPE)
    assert [(r.start_ms, r.end_ms, r.shard.hosts) for r in times] == [
        (DAY0, DAY0 + DAY_MS // 2, ("b",)),
        (DAY0 + DAY_MS // 2, DAY0 + DAY_MS, ("b",)),
    ]
    assert len(split_refused(kinds[2], mixed, SCRAPE)) == 2  # hostless: time only
    with pytest.raises(PlanError):
        split_refused(Request("m", DAY0, DAY0 + SCRAPE, 1, HostShard("Hostname", ("a",))), mixed, SCRAPE)


def test_host_halves_balance_series_not_hosts() -> None:
    skewed = census({"a": 1, "b": 1, "c": 1, "d": 30})
    halves = split_refused(Request("m", DAY0, DAY0 + DAY_MS, 33), skewed, SCRAPE)
    assert [r.shard.hosts for r in halves] == [("a", "b", "c"), ("d",)]


def test_downsampled_halves_stay_on_step_boundaries() -> None:
    step = Downsample(60_000, "avg_over_time", left_open=False)
    one = Census.from_label_sets("m", [{"Hostname": "a"}])
    parts = split_refused(Request("m", DAY0, DAY0 + 7 * 60_000, 1, None, step), one, 60_000)
    assert [(p.start_ms - DAY0, p.end_ms - DAY0) for p in parts] == [(0, 180_000), (180_000, 420_000)]


def test_raw_request_is_an_instant_range_query_one_ms_longer_than_the_chunk() -> None:
    request = Request("DCGM_FI_PROF_SM_ACTIVE", DAY0, DAY0 + 3_600_000, 10, HostShard("hostname", ("n.1", "n-2")))
    path, params = request.http('{job="dcgm",}')
    assert path == "/api/v1/query"
    assert params == {
        "time": "1772413200.000",
        "query": 'DCGM_FI_PROF_SM_ACTIVE{job="dcgm",Hostname="",hostname=~"n\\\\.1|n-2"}[3600001ms]',
    }
    hostless = Request("m", DAY0, DAY0 + 1000, 1, HostShard(None, ()))
    assert hostless.query("") == 'm{Hostname="",hostname=""}[1001ms]'


@pytest.mark.parametrize("left_open, range_ms", [(False, 59_999), (True, 60_000)])
def test_downsampled_request_evaluates_at_bucket_ends(left_open: bool, range_ms: int) -> None:
    request = Request(
        "DCGM_FI_DEV_FB_USED", DAY0, DAY0 + 600_000, 3, None, Downsample(60_000, "max_over_time", left_open)
    )
    path, params = request.http("")
    assert path == "/api/v1/query_range"
    assert params == {
        "query": f"max_over_time(DCGM_FI_DEV_FB_USED[{range_ms}ms])",
        "start": "1772409659.999",
        "end": "1772410199.999",
        "step": "60.000",
        "nocache": "1",
    }
    assert request.ts_shift_ms == 59_999


def test_promql_quoting() -> None:
    assert quote_meta("a.b+c(d)|e[f]{g}^$*?\\h-i j") == "a\\.b\\+c\\(d\\)\\|e\\[f\\]\\{g\\}\\^\\$\\*\\?\\\\h-i j"
    assert promql_string('say "hi"\\\n') == '"say \\"hi\\"\\\\\\n"'
    assert selector("m", "", []) == "m" and selector("m", '{a="1"}', ['b="2"']) == 'm{a="1",b="2"}'
    assert seconds(1772409615123) == "1772409615.123" and seconds(5) == "0.005"
