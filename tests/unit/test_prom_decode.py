"""Decoding real Prometheus 2.42 answers (tests/fixtures/prometheus, recorded by
``benchmarks/record_prom_fixtures.py`` from the real server over ``edge.om``)."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from sources.prometheus.decode import (
    Columns,
    DecodeError,
    Matrix,
    decode_columns,
    decode_data,
    decode_label_sets,
    decode_matrix,
    decode_matrix_json,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus"
INDEX = json.loads((FIXTURES / "index.json").read_text())
LINE = re.compile(r"^(\w+)\{(.*)\} (\S+) (\S+)$")
PAIR = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def body(name: str) -> bytes:
    return (FIXTURES / f"{name}.json").read_bytes()


def openmetrics_truth(metric: str) -> dict[tuple, list[tuple[int, float]]]:
    """Label set -> [(ms, value)] straight from the back-filled OpenMetrics text."""
    out: dict[tuple, list[tuple[int, float]]] = {}
    for line in (FIXTURES / "edge.om").read_text().splitlines():
        match = LINE.match(line)
        if not match or match[1] != metric:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in PAIR.findall(match[2])}
        key = tuple(sorted({**labels, "__name__": metric}.items()))
        out.setdefault(key, []).append((int(Decimal(match[4]) * 1000), float(match[3])))
    return out


def as_dict(matrix: Matrix) -> dict[tuple, list[tuple[int, float]]]:
    ends = np.cumsum(matrix.counts)
    out = {}
    for labels, end, n in zip(matrix.labels, ends, matrix.counts, strict=True):
        rows = zip(matrix.ts_ms[end - n : end].tolist(), matrix.values[end - n : end].tolist(), strict=True)
        out[tuple(sorted(labels.items()))] = list(rows)
    return out


def same_samples(a: dict, b: dict) -> bool:
    """Equal label sets, timestamps and values, NaN equal to NaN, +0.0 vs -0.0 told apart."""
    if a.keys() != b.keys():
        return False
    for key in a:
        left, right = a[key], b[key]
        if [t for t, _ in left] != [t for t, _ in right]:
            return False
        for (_, x), (_, y) in zip(left, right, strict=True):
            if not (math.isnan(x) and math.isnan(y)) and (x != y or math.copysign(1, x) != math.copysign(1, y)):
                return False
    return True


def test_fixtures_were_recorded_with_the_statuses_the_tests_expect() -> None:
    assert INDEX["matrix_edge"]["status"] == 200
    assert INDEX["error_bad_data"]["status"] == 400
    assert INDEX["error_too_many_samples"]["status"] == 422


def test_edge_values_decode_exactly_as_written() -> None:
    decoded = decode_matrix(body("matrix_edge"))
    truth = openmetrics_truth("DCGM_FI_PROF_SM_ACTIVE")
    assert same_samples(as_dict(decoded), truth)
    a = as_dict(decoded)[next(k for k in truth if ("UUID", "GPU-a") in k)]
    assert [t for t, _ in a][1:4] == [1772409615123, 1772409630000, 1772409645500]
    assert math.isnan(a[1][1]) and a[2][1] == math.inf and a[3][1] == -math.inf
    assert a[5][1] == 1.2345678901234569e23 and a[7] == (1772409705001, 0.1)


def test_fast_path_equals_json_reference_on_every_matrix_fixture() -> None:
    for name in ("matrix_edge", "matrix_two_metrics", "range_avg", "matrix_empty"):
        fast, slow = decode_matrix(body(name)), decode_matrix_json(body(name))
        assert same_samples(as_dict(fast), as_dict(slow)), name
        assert fast.labels == slow.labels and fast.counts.tolist() == slow.counts.tolist(), name


def test_other_layouts_fall_back_to_the_reference_decoder() -> None:
    pretty = json.dumps(json.loads(body("matrix_two_metrics")), indent=2).encode()
    reordered = json.dumps({"data": json.loads(body("matrix_edge"))["data"], "status": "success"}).encode()
    for text, reference in ((pretty, "matrix_two_metrics"), (reordered, "matrix_edge")):
        assert same_samples(as_dict(decode_matrix(text)), as_dict(decode_matrix_json(body(reference))))


def test_many_series_of_many_lengths_keep_their_counts() -> None:
    """8,000 series of 1 to 100 samples in one answer: each series keeps its own samples."""
    doc = json.loads(body("matrix_edge"))
    series = doc["data"]["result"]
    result = []
    for i in range(8000):
        one = dict(series[i % len(series)])
        one["metric"] = {**one["metric"], "copy": str(i)}
        one["values"] = (one["values"] * 100)[: 1 + i % 100]
        result.append(one)
    doc["data"]["result"] = result
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    assert len(text) > 8 << 20
    fast = decode_matrix(text)
    assert fast.counts.tolist() == [len(s["values"]) for s in result]
    assert same_samples(as_dict(fast), as_dict(decode_matrix_json(text)))


def compact(*lists: str) -> bytes:
    """An answer in Prometheus' compact layout with one series (``gpu`` = its position) per values list."""
    result = ",".join(f'{{"metric":{{"gpu":"{i}"}},"values":[{values}]}}' for i, values in enumerate(lists))
    return b'{"status":"success","data":{"resultType":"matrix","result":[' + result.encode() + b"]}}"


def test_signed_numbers_and_exponents_read_as_the_reference_reads_them() -> None:
    text = compact(
        '[1700000000,"-1.5"],[1700000015.5,"+Inf"]', '[1700000000,"-0"],[1700000030,"1e+05"],[1700000045,"0.25"]'
    )
    fast = decode_matrix(text)
    assert same_samples(as_dict(fast), as_dict(decode_matrix_json(text)))
    assert fast.counts.tolist() == [2, 3] and fast.ts_ms.tolist()[:2] == [1700000000000, 1700000015500]
    assert fast.values.tolist()[:2] == [-1.5, math.inf] and math.copysign(1, fast.values[2]) == -1.0
    assert fast.values.tolist()[3:] == [100000.0, 0.25]


def test_unsigned_numbers_read_exactly() -> None:
    text = compact('[1700000000,"0.1"],[1700000015.001,"7"]', '[1700000000,"0.30000000000000004"]')
    fast = decode_matrix(text)
    assert fast.counts.tolist() == [2, 1] and fast.ts_ms.tolist() == [1700000000000, 1700000015001, 1700000000000]
    assert fast.values.tolist() == [0.1, 7.0, 0.30000000000000004]


@pytest.mark.parametrize("values", ['[1700000000,"1","2"]', '[1700000000,""]', "[1700000000]", '[1700000000,"x"]'])
def test_a_sample_not_timestamp_and_value_is_refused_naming_its_series(values: str) -> None:
    with pytest.raises(
        DecodeError, match=r"^a sample is not \[timestamp, \"value\"\] \(.+\) in series \{'gpu': '1'\}$"
    ):
        decode_matrix(compact('[1700000000,"0.5"]', values))


def test_whitespace_inside_a_values_list_goes_to_the_reference_decoder() -> None:
    text = compact('[1700000000, "0.5"],[1700000015,"2"]')
    fast = decode_matrix(text)
    assert fast.counts.tolist() == [2] and fast.values.tolist() == [0.5, 2.0]


def test_empty_result_is_an_empty_matrix() -> None:
    empty = decode_matrix(body("matrix_empty"))
    assert empty.labels == [] and len(empty.ts_ms) == 0 and len(empty.values) == 0


@pytest.mark.parametrize(
    "name, error_type, text",
    [
        ("error_bad_data", "bad_data", "unclosed left bracket"),
        ("error_too_many_samples", "execution", "too many samples"),
    ],
)
def test_error_answers_raise_with_the_servers_reason(name: str, error_type: str, text: str) -> None:
    with pytest.raises(DecodeError, match=text) as caught:
        decode_matrix(body(name))
    assert caught.value.error_type == error_type


def test_partial_or_damaged_answers_never_decode() -> None:
    good = body("matrix_edge")
    warned = good[:-1] + b',"warnings":["store unavailable"]}'
    for damaged in (good[:-2], good[:-60], good[: len(good) // 2], warned, b"", b"<html>bad gateway</html>"):
        with pytest.raises(DecodeError):
            decode_matrix(damaged)


def test_victoria_cluster_partial_answers_never_decode_complete_ones_do() -> None:
    good = body("matrix_edge")
    assert good.startswith(b'{"status":"success",')
    partial = good.replace(b'{"status":"success",', b'{"status":"success","isPartial":true,', 1)
    with pytest.raises(DecodeError, match="isPartial: true"):
        decode_matrix(partial)
    complete = good.replace(b'{"status":"success",', b'{"status":"success","isPartial":false,', 1)
    assert isinstance(decode_columns(complete), Columns)  # the fast way, not json.loads
    expected, got = decode_matrix(good), decode_matrix(complete)
    assert got.labels == expected.labels and got.ts_ms.tolist() == expected.ts_ms.tolist()
    assert np.array_equal(got.values, expected.values, equal_nan=True)


def test_native_histograms_are_refused_not_dropped() -> None:
    text = (
        b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"h"},'
        b'"histograms":[[1772409600,{"count":"1","sum":"1","buckets":[]}]]}]}}'
    )
    with pytest.raises(DecodeError, match="histogram"):
        decode_matrix(text)


def test_window_keeps_start_and_drops_end() -> None:
    matrix = decode_matrix(body("matrix_edge"))
    cut = matrix.window(1772409615123, 1772409660000)
    kept = as_dict(cut)
    assert len(kept) == 2  # GPU-a and GPU-b; GPU-c and GPU-d have nothing in the window
    assert sorted(t for rows in kept.values() for t, _ in rows) == [
        1772409615123,
        1772409630000,
        1772409630000,
        1772409645500,
    ]


def test_series_and_build_info_answers() -> None:
    label_sets = decode_label_sets(body("series"))
    assert len(label_sets) == 4 and {"Hostname", "hostname"} <= {k for s in label_sets for k in s}
    assert str(decode_data(body("buildinfo"))["version"]).startswith("2.42")
    with pytest.raises(DecodeError):
        decode_label_sets(body("matrix_edge"))
