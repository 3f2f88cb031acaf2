"""sources.openmetrics: OpenMetrics text -> LongSamples, and the .om branch of FileMetricsSource."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from contracts.exporters import DCGM
from contracts.schemas import RAW_SAMPLE_SCHEMA
from simulate.om_writer import OpenMetricsWriter
from simulate.samples import generate_day
from sources.metrics import FileMetricsSource, MetricsSourceError
from sources.openmetrics import OpenMetricsError, read_openmetrics
from sources.prometheus import LongSamples
from tests.fixtures import h200
from tests.fixtures.dcgm_openmetrics import h200_trace_om, wild_om
from tests.integration.test_om_promtool import allocations, inventory

T0 = datetime(2026, 3, 2)
WHOLE_DAY = (T0, T0 + timedelta(days=1))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "in.om"
    path.write_text(text)
    return path


def rows(long: LongSamples) -> list[tuple]:
    """(labels without nulls, ts, value) per sample, in the order returned."""
    joined = long.samples.join(long.series, on="series_id", how="left", maintain_order="left")
    labels = [c for c in long.series.columns if c != "series_id"]
    return [({k: r[k] for k in labels if r[k] is not None}, r["ts"], r["value"]) for r in joined.iter_rows(named=True)]


def test_small_text(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        (
            "# HELP m a gauge\n# TYPE m gauge\n"
            'm{gpu="0",Hostname="n1"} 0.5 1772409600.250\n'
            'm{Hostname="n1",gpu="0"} 7 1772409601\n'  # the same series, labels in another order
            "\n"
            'm{gpu="1",Hostname="n1",hpc_job="a\\\\b\\"c\\nd"} NaN 1772409602.000\n'
            'm{gpu="1",Hostname="n1"} 1e3 1772496000\n'  # == end: outside the half-open window
            "# EOF\n"
        ),
    )
    long = read_openmetrics(path, *WHOLE_DAY)
    assert isinstance(long, LongSamples)
    assert long.series.schema["series_id"] == pl.UInt32
    assert long.samples.schema == pl.Schema({"series_id": pl.UInt32, "ts": pl.Datetime("us"), "value": pl.Float64})
    got = rows(long)
    assert got[0] == ({"__name__": "m", "gpu": "0", "Hostname": "n1"}, T0 + timedelta(milliseconds=250), 0.5)
    assert got[1] == ({"__name__": "m", "gpu": "0", "Hostname": "n1"}, T0 + timedelta(seconds=1), 7.0)
    labels, ts, value = got[2]
    assert labels["hpc_job"] == 'a\\b"c\nd' and ts == T0 + timedelta(seconds=2) and value != value  # NaN kept
    assert len(got) == 3 and long.series.height == 2


def test_window_and_empty_result(tmp_path: Path) -> None:
    lines = "".join(f'm{{gpu="0"}} {i} {1772409600 + 15 * i}\n' for i in range(8))
    path = write(tmp_path, lines)
    long = read_openmetrics(path, T0 + timedelta(seconds=30), T0 + timedelta(seconds=90))
    assert long.samples["value"].to_list() == [2.0, 3.0, 4.0, 5.0]
    empty = read_openmetrics(path, T0 - timedelta(days=2), T0 - timedelta(days=1))
    assert empty.samples.height == 0 and empty.series.height == 0
    assert empty.samples.schema["ts"] == pl.Datetime("us")


def test_lines_the_fast_split_cannot_take(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        (
            'm{pod="a} b",gpu="0"} 1 1772409600\n'  # "} " inside a label value
            "up 1 1772409601\n"  # no labels
            'm{gpu="0"} 2 1772409602 # {trace_id="x"} 1\n'
        ),
    )  # exemplar-style trailing comment
    got = rows(read_openmetrics(path, *WHOLE_DAY))
    assert [(labels, value) for labels, _, value in got] == [
        ({"__name__": "m", "gpu": "0"}, 2.0),
        ({"__name__": "m", "gpu": "0", "pod": "a} b"}, 1.0),
        ({"__name__": "up"}, 1.0),
    ]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('m{gpu="0"} 1 1772409600000\n', "milliseconds"),
        ('m{gpu="0"} 1\n', "not samples with a value and a timestamp"),
        ('m{gpu="0"} one 1772409600\n', "one 1772409600"),
        ('m{gpu="0",gpu="1"} 1 1772409600\n', "repeats a label"),
        ('m{gpu="0"} 1 1772409600\nm{gpu="0"} 2 1772409600\n', "share a series and timestamp"),
    ],
)
def test_refuses_what_it_would_have_to_guess(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(OpenMetricsError, match=match):
        read_openmetrics(write(tmp_path, text), *WHOLE_DAY)


def test_identical_repeated_sample_is_kept_once(tmp_path: Path) -> None:
    path = write(tmp_path, 'm{gpu="0"} 1 1772409600\nm{gpu="0"} 1 1772409600\n')
    assert read_openmetrics(path, *WHOLE_DAY).samples.height == 1


@pytest.mark.parametrize("style", ["Hostname", "hostname"])
def test_h200_fixture_reads_back_exactly(tmp_path: Path, style: str) -> None:
    path = h200_trace_om(tmp_path / "h200.om", label_style=style)
    raw = h200.raw_samples()
    long = read_openmetrics(path, raw["ts"].min(), raw["ts"].max() + timedelta(seconds=1))
    assert style in long.series.columns
    joined = long.samples.join(long.series.select("series_id", "__name__", "hpc_job"), on="series_id")
    for metric, column in DCGM.metric_signals.items():
        got = joined.filter(pl.col("__name__") == metric).sort("ts")
        assert_frame_equal(
            got.select("ts", "hpc_job", pl.col("value").alias(column)), raw.select("ts", "hpc_job", column)
        )


def test_wild_fixture_reads_back_every_sample(tmp_path: Path) -> None:
    path, facts = wild_om(tmp_path / "wild.om")
    long = read_openmetrics(path, facts["start"], facts["end"])
    assert long.samples.height == facts["n_samples"]
    assert long.series.height == long.series.drop("series_id").unique().height
    for label in ("Hostname", "hostname", "GPU_I_ID", "exported_pod", "pod", "pod_name", "site_rack", "instance"):
        assert label in long.series.columns, label
    assert long.samples.select(pl.struct("series_id", "ts").is_duplicated().any()).item() is False
    assert long.samples.equals(long.samples.sort("series_id", "ts"))


def test_file_source_reads_simulator_openmetrics_like_its_parquet(tmp_path: Path) -> None:
    frame = generate_day(inventory(), allocations(), date(2026, 3, 2), 60, 3, "it")
    frame = frame.filter(pl.col("ts") < T0 + timedelta(hours=3))
    with OpenMetricsWriter(tmp_path / "metrics.om") as writer:
        writer.add_day(frame)
    start, end = T0 + timedelta(minutes=30), T0 + timedelta(hours=2)
    got = FileMetricsSource(tmp_path / "metrics.om").read_samples("it", start, end)
    keys = ["hostname", "gpu", "gpu_i_id", "hpc_job", "ts"]
    expected = frame.filter(pl.col("ts").is_between(start, end, closed="left")).select(list(RAW_SAMPLE_SCHEMA))
    assert got.schema == pl.Schema(RAW_SAMPLE_SCHEMA)
    assert_frame_equal(got.sort(keys, nulls_last=True), expected.sort(keys, nulls_last=True))


def test_file_source_names_a_broken_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 1 1772409600000\n')
    with pytest.raises(MetricsSourceError, match="in.om.*milliseconds"):
        FileMetricsSource(path).read_samples("c", *WHOLE_DAY)
