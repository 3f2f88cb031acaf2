"""Placed decoding (``place``, ``jit_place``, ``assemble``: the numba decoder of
``cardhours[fast]``) against the pyarrow decoder's chunks, merged."""

from __future__ import annotations

import json
import random
from itertools import pairwise

import numpy as np
import pytest

pytest.importorskip("numba", reason="the compiled decoder is the cardhours[fast] extra")

from sources.prometheus.assemble import Assembly, decode_chunk  # noqa: E402 - after the numba skip above
from sources.prometheus.chunks import SeriesIndex  # noqa: E402 - after the numba skip above
from sources.prometheus.decode import DecodeError  # noqa: E402 - after the numba skip above
from sources.prometheus.merge import Merger  # noqa: E402 - after the numba skip above
from sources.prometheus.place import decode_placed, key_order, place, scan  # noqa: E402 - after the numba skip above
from sources.prometheus.plan import Request  # noqa: E402 - after the numba skip above
from sources.prometheus.scratch import Scratch  # noqa: E402 - after the numba skip above

S = 1000  # ms per second


def answer(series: list[tuple[dict[str, str], list[tuple[str, str]]]], warnings: bool = False) -> bytes:
    """A matrix answer in Prometheus' compact layout; points as (timestamp text, value text)."""
    result = ",".join(
        '{"metric":'
        + json.dumps(labels, separators=(",", ":"))
        + ',"values":['
        + ",".join(f'[{t},"{v}"]' for t, v in points)
        + "]}"
        for labels, points in series
    )
    tail = ',"warnings":["partial"]' if warnings else ""
    return ('{"status":"success","data":{"resultType":"matrix","result":[' + result + "]}" + tail + "}").encode()


def gpu(i: int, metric: str = "m") -> dict[str, str]:
    return {"__name__": metric, "Hostname": f"h{i // 8}", "gpu": str(i % 8)}


def reference(answers: list[tuple[bytes, Request]]):
    """LongSamples of the answers the pyarrow way: decoded chunks, merged."""
    merger = Merger()
    for body, request in answers:
        merger.add(decode_chunk(body, request, merger.index, merger.scratch))
    return merger.result()


def assembled(answers: list[tuple[bytes, Request]]):
    assembly = Assembly()
    for body, request in answers:
        scanned = scan(body, request, assembly.index)
        assert scanned is not None
        assembly.add(scanned)
    for metric in sorted({request.metric for _, request in answers}):
        jobs = assembly.close(metric)
        for job in jobs:
            assembly.job_done(metric, job())
    return assembly, assembly.result()


def same(a, b) -> None:
    assert a.series.equals(b.series)
    assert a.samples.equals(b.samples)


def test_scan_counts_each_list_inside_the_window_from_its_edges() -> None:
    body = answer(
        [
            (gpu(0), [("99.999", "1"), ("100", "2"), ("115", "3"), ("130", "4")]),  # 99.999 and 130 outside
            (gpu(1), [("130", "5")]),  # only at the end: nothing inside
            (gpu(2), []),  # an empty list is left out
            (gpu(3), [("100", "NaN")]),
        ]
    )
    scanned = scan(body, Request("m", 100 * S, 130 * S, 4), SeriesIndex())
    assert scanned is not None and scanned.counts.tolist() == [2, 0, 1]
    assert [body[a:b].count(b"[") for a, b in zip(scanned.starts, scanned.ends, strict=True)] == [4, 1, 1]


@pytest.mark.parametrize(
    "body",
    [
        b'{"status":"success","data":{"resultType":"matrix","result":[]}}',
        answer([(gpu(0), [("100", "1")])], warnings=True),
        answer([(gpu(0), [("100", "1")])]).replace(b'"values":[', b'"values": ['),
        answer([(gpu(0), [("100", "1")])]).replace(b'"resultType":"matrix"', b'"resultType":"vector"'),
    ],
)
def test_scan_leaves_other_layouts_and_warnings_to_the_reference_path(body: bytes) -> None:
    scanned = scan(body, Request("m", 0, 200 * S, 1), SeriesIndex())
    assert scanned is None or scanned.counts.size == 0


def test_scan_refuses_series_of_another_metric() -> None:
    with pytest.raises(DecodeError, match="asked for m"):
        scan(answer([(gpu(0, "k"), [("100", "1")])]), Request("m", 0, 200 * S, 1), SeriesIndex())


def test_scan_reads_a_body_held_in_a_scratch_buffer() -> None:
    body = answer([(gpu(0), [("100", "1"), ("115", "2.5")])])
    scratch = Scratch()
    held = scratch.take(len(body), np.uint8)
    held[:] = np.frombuffer(body, np.uint8)
    scanned = scan(held, Request("m", 0, 200 * S, 1), SeriesIndex())
    assert scanned is not None and scanned.counts.tolist() == [2]


def random_answers(rng: random.Random, metrics: tuple[str, ...] = ("a", "b")) -> list[tuple[bytes, Request]]:
    """Each metric over [0, 3600 s) in 3 time chunks; series missing from some chunks, gaps,
    edge samples outside the chunk, slow values (NaN, exponents), ms timestamps."""
    answers = []
    base = 1_772_409_600 * S
    cuts = [base, base + 1200 * S, base + 2400 * S, base + 3600 * S]
    for metric in metrics:
        series = [gpu(i, metric) for i in rng.sample(range(40), 12)]
        for a, b in pairwise(cuts):
            chunk = []
            for labels in sorted(series, key=lambda d: sorted(d.items())):
                if rng.random() < 0.2:
                    continue
                points = []
                t = a - 1 if rng.random() < 0.3 else a + rng.randrange(0, 15 * S)
                while t <= b:
                    value = rng.choice(["0", "1", str(rng.randrange(10**6)), f"{rng.random():.6f}", "NaN", "1e-7"])
                    points.append((f"{t // S}.{t % S:03d}".rstrip("0").rstrip("."), value))
                    t += rng.choice([15 * S, 15 * S, 30 * S, 15 * S + 7])
                chunk.append((labels, points))
            answers.append((answer(chunk), Request(metric, a, b, len(chunk))))
    rng.shuffle(answers)
    return answers


@pytest.mark.parametrize("seed", range(12))
def test_placed_decoding_gives_exactly_the_reference_result(seed: int) -> None:
    answers = random_answers(random.Random(seed))
    assembly, long = assembled(answers)
    same(long, reference(answers))
    assert assembly.fallbacks == 0
    assert long.samples.equals(long.samples.sort("series_id", "ts"))


def test_values_the_kernel_leaves_to_python_beyond_its_buffer_send_the_metric_the_pyarrow_way() -> None:
    body = answer([(gpu(0), [(str(100 + i), "NaN") for i in range(5000)])])
    answers = [(body, Request("m", 0, 10_000 * S, 1))]
    assembly, long = assembled(answers)
    assert assembly.fallbacks == 1 and long.samples.height == 5000
    same(long, reference(answers))


def test_timestamps_finer_than_milliseconds_are_not_scanned() -> None:
    """Such an answer is decoded the pyarrow way on arrival (``fetch.scan_answer``)."""
    body = answer([(gpu(1), [("100.0001", "1"), ("115", "2")])])
    assert scan(body, Request("m", 0, 200 * S, 1), SeriesIndex()) is None


def test_a_list_out_of_time_order_sends_its_metric_the_pyarrow_way() -> None:
    good = answer([(gpu(0), [("100", "1"), ("115", "2")])])
    shuffled = answer([(gpu(1), [("130", "3"), ("115", "4"), ("145", "5")])])  # counted 3, but not in order
    answers = [(good, Request("m", 0, 200 * S, 1)), (shuffled, Request("m", 0, 200 * S, 1))]
    assembly, long = assembled(answers)
    assert assembly.fallbacks == 1
    same(long, reference(answers))


def test_a_count_that_does_not_hold_is_caught() -> None:
    # two samples before the window: the edge rule counts one out, the decoder finds two
    body = answer([(gpu(0), [("98", "1"), ("99", "2"), ("100", "3")])])
    request = Request("m", 100 * S, 200 * S, 1)
    scanned = scan(body, request, SeriesIndex())
    assert scanned is not None and scanned.counts.tolist() == [2]
    placed = place([scanned], [("m", "x")], Scratch().take)
    assert placed is not None
    out, jobs = placed
    assert decode_placed(jobs[0], out) is False
    assembly, long = assembled([(body, request)])
    assert assembly.fallbacks == 1 and long.samples.height == 1


def test_key_order_takes_the_answers_order_only_when_it_is_sorted() -> None:
    index = SeriesIndex()
    ids = index.ids("m", [gpu(1), gpu(0), gpu(2)])  # not in label order
    body = answer([(gpu(1), [("1", "1")]), (gpu(0), [("1", "1")]), (gpu(2), [("1", "1")])])
    scanned = scan(body, Request("m", 0, 10 * S, 3), index)
    assert scanned is not None and scanned.ids.tolist() == ids.tolist()
    assert key_order([scanned], np.unique(ids), index.keys).tolist() == [ids[1], ids[0], ids[2]]


def test_metrics_without_samples_in_the_window_leave_nothing() -> None:
    answers = [(answer([(gpu(0), [("300", "1")])]), Request("m", 0, 200 * S, 1))]
    assembly, long = assembled(answers)
    assert long.samples.height == 0 and long.series.height == 0
