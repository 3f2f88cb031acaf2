"""Merging decoded chunks (``sources.prometheus.fetch``) without a server."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sources.prometheus.chunks import Chunk, SeriesIndex, window_blocks
from sources.prometheus.csv_values import micros
from sources.prometheus.decode import DecodeError
from sources.prometheus.merge import Merger
from sources.prometheus.plan import Request

US = 1_000_000


def test_window_trims_each_series_without_copying() -> None:
    ts = np.array([0, 10, 20, 30, 5, 15, 25, 30, 40]) * US  # two series, both with samples outside [10, 30)
    offsets, lengths = window_blocks(ts, np.array([4, 5]), 10 * US, 30 * US)
    assert offsets.tolist() == [1, 5] and lengths.tolist() == [2, 2]
    inside = window_blocks(ts[:4], np.array([4]), 0, 31 * US)
    assert inside[0].tolist() == [0] and inside[1].tolist() == [4]


def test_window_refuses_samples_out_of_time_order() -> None:
    ts = np.array([0, 20, 10, 5]) * US  # out of order inside the first series
    assert window_blocks(ts, np.array([3, 1]), 0, 30 * US) is None
    assert window_blocks(np.array([0, 20, 5, 10]) * US, np.array([2, 2]), 0, 30 * US) is not None


def test_micros_is_exact_from_decimal_seconds() -> None:
    seconds = np.array([1772409600.0, 1772409615.123, 1772409630.001, 1772409645.999])
    assert micros(seconds).tolist() == [1772409600000000, 1772409615123000, 1772409630001000, 1772409645999000]
    assert micros(seconds[:1], shift_ms=59_999).tolist() == [1772409600000000 - 59_999_000]


def chunk(index: SeriesIndex, metric: str, start: int, series: list[dict], samples: list[list[int]]) -> Chunk:
    """A decoded answer: ``samples[i]`` are series i's timestamps (s); values = ts + 0.5."""
    ts = np.array([t for one in samples for t in one], np.int64) * US
    counts = np.array([len(one) for one in samples])
    offsets, lengths = window_blocks(ts, counts, start * US, (start + 100) * US)
    request = Request(metric, start * 1000, (start + 100) * 1000, len(series))
    return Chunk(request, index.ids(metric, series), offsets, lengths, ts, ts / US + 0.5, 0)


def test_merge_orders_series_by_label_set_and_samples_by_time_whatever_the_arrival() -> None:
    index = SeriesIndex()
    merger = Merger(index)
    b, a = {"__name__": "m", "gpu": "1"}, {"__name__": "m", "gpu": "0"}
    other = {"__name__": "k", "gpu": "0"}
    merger.add(chunk(index, "m", 100, [b, a], [[100, 150, 200], [110]]))  # the later chunk first; 200 is outside
    merger.add(chunk(index, "m", 0, [a, b], [[0, 50], [10, 60]]))
    merger.close("m")
    merger.add(chunk(index, "k", 0, [other], [[5]]))
    long = merger.result()
    assert long.series.select("series_id", "__name__", "gpu").rows() == [(0, "k", "0"), (1, "m", "0"), (2, "m", "1")]
    rows = long.samples.select("series_id", pl.col("ts").dt.epoch("s"), "value").rows()
    assert rows == [
        (0, 5, 5.5),
        (1, 0, 0.5),
        (1, 50, 50.5),
        (1, 110, 110.5),
        (2, 10, 10.5),
        (2, 60, 60.5),
        (2, 100, 100.5),
        (2, 150, 150.5),
    ]
    assert long.samples.equals(long.samples.sort("series_id", "ts"))


def test_one_answer_in_output_order_is_the_output_without_a_copy() -> None:
    index = SeriesIndex()
    merger = Merger(index)
    one = chunk(index, "m", 0, [{"__name__": "m", "gpu": "0"}, {"__name__": "m", "gpu": "1"}], [[0, 50], [10]])
    values = np.repeat(one.values, 2)[::2]  # strided, as the pyarrow decoder leaves them
    merger.add(Chunk(one.request, one.ids, one.offsets, one.lengths, one.ts_us, values, 0))
    long = merger.result()
    assert np.shares_memory(long.samples["ts"].to_numpy(), one.ts_us)
    assert long.samples.select("series_id", pl.col("ts").dt.epoch("s"), "value").rows() == [
        (0, 0, 0.5),
        (0, 50, 50.5),
        (1, 10, 10.5),
    ]


def test_one_answer_with_samples_cut_off_is_copied() -> None:
    index = SeriesIndex()
    merger = Merger(index)
    one = chunk(index, "m", 0, [{"__name__": "m", "gpu": "0"}], [[0, 50, 100]])  # 100 is outside [0, 100)
    merger.add(one)
    long = merger.result()
    assert not np.shares_memory(long.samples["ts"].to_numpy(), one.ts_us)
    assert long.samples.select(pl.col("ts").dt.epoch("s")).to_series().to_list() == [0, 50]


def test_series_without_samples_in_the_window_are_left_out() -> None:
    index = SeriesIndex()
    merger = Merger(index)
    merger.add(chunk(index, "m", 0, [{"__name__": "m", "gpu": "0"}, {"__name__": "m", "gpu": "1"}], [[5], [100]]))
    long = merger.result()
    assert long.series["gpu"].to_list() == ["0"] and long.samples.height == 1


def test_series_index_names_aggregates_and_refuses_other_metrics() -> None:
    index = SeriesIndex()
    ids = index.ids("m", [b'{"gpu":"0"}', b'{"gpu":"0"}', {"gpu": "0"}, b'{"__name__":"m","gpu":"1"}'])
    assert ids.tolist() == [0, 0, 0, 1] and index.labels[0] == {"__name__": "m", "gpu": "0"}
    with pytest.raises(DecodeError, match="asked for m"):
        index.ids("m", [b'{"__name__":"k","gpu":"0"}'])
    with pytest.raises(DecodeError):
        index.ids("m", [b'{"gpu":0}'])
