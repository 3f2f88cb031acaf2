from datetime import date, datetime

import polars as pl
import pytest

from contracts.schemas import RAW_SAMPLE_SCHEMA
from sources.metrics import FileMetricsSource, MetricsSourceError, conform_samples


def _day_frame(day: date, cluster: str = "c1") -> pl.DataFrame:
    ts = pl.datetime_range(
        datetime(day.year, day.month, day.day), datetime(day.year, day.month, day.day, 23, 59), "1h", eager=True
    )
    return pl.DataFrame({"cluster": cluster, "ts": ts, "hostname": "n1", "gpu": 0, "uuid": "GPU-1", "sm_active": 0.5})


def _write(root, day: date, frame: pl.DataFrame) -> None:
    folder = root / "metrics" / f"day={day.isoformat()}"
    folder.mkdir(parents=True)
    frame.write_parquet(folder / "part-0.parquet")


def test_conform_adds_missing_columns_and_day() -> None:
    frame = pl.DataFrame({"ts": [datetime(2026, 10, 1, 5)], "hostname": ["n1"], "gpu": [3], "sm_active": [0.2]})
    out = conform_samples(frame, "c9").collect()
    assert out.schema == pl.Schema(RAW_SAMPLE_SCHEMA)
    assert out.row(0, named=True)["day"] == date(2026, 10, 1)
    assert out["cluster"].to_list() == ["c9"]
    assert out["gpu_util"].null_count() == 1


def test_conform_rejects_unknown_columns() -> None:
    with pytest.raises(MetricsSourceError, match="bogus"):
        conform_samples(pl.DataFrame({"ts": [datetime(2026, 1, 1)], "bogus": [1]}), "c")


def test_file_source_reads_only_the_window(tmp_path) -> None:
    for d in (date(2026, 10, 1), date(2026, 10, 2), date(2026, 10, 3)):
        _write(tmp_path, d, _day_frame(d))
    source = FileMetricsSource(tmp_path)
    out = source.read_samples("c1", datetime(2026, 10, 2), datetime(2026, 10, 3))
    assert out.height == 24
    assert out["ts"].min() == datetime(2026, 10, 2)
    assert out["ts"].max() == datetime(2026, 10, 2, 23)
    assert set(out["day"].to_list()) == {date(2026, 10, 2)}


def test_file_source_filters_cluster_and_returns_empty_schema(tmp_path) -> None:
    _write(tmp_path, date(2026, 10, 1), _day_frame(date(2026, 10, 1), cluster="other"))
    out = FileMetricsSource(tmp_path / "metrics").read_samples("c1", datetime(2026, 10, 1), datetime(2026, 10, 2))
    assert out.height == 0
    empty = FileMetricsSource(tmp_path).read_samples("c1", datetime(2026, 11, 1), datetime(2026, 11, 2))
    assert empty.schema == pl.Schema(RAW_SAMPLE_SCHEMA)


def test_file_source_bad_path(tmp_path) -> None:
    with pytest.raises(MetricsSourceError, match="not a directory"):
        FileMetricsSource(tmp_path / "missing").read_samples("c", datetime(2026, 1, 1), datetime(2026, 1, 2))
