"""The simulator's Parquet and OpenMetrics writers."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from contracts.exporters import DCGM
from contracts.schemas import RAW_SAMPLE_SCHEMA
from simulate import parquet_writer
from simulate.om_writer import OpenMetricsWriter
from simulate.parquet_writer import write_day_parquet
from simulate.samples import generate_day

DAY = date(2026, 3, 2)
T0 = datetime(2026, 3, 2)
EPOCH = datetime(1970, 1, 1)  # timestamps are naive UTC
WHOLE = {
    "hostname": 'no"de\\1',
    "gpu": 0,
    "uuid": "GPU-a",
    "model_name": "NVIDIA H100 80GB HBM3",
    "pci_bus_id": "00000000:18:00.0",
    "device": "nvidia0",
    "gpu_i_id": None,
    "gpu_i_profile": None,
}
MIG = {
    "hostname": "mig01",
    "gpu": 1,
    "uuid": "GPU-b",
    "model_name": "NVIDIA A100-SXM4-80GB",
    "pci_bus_id": "00000000:19:00.0",
    "device": "nvidia1",
    "gpu_i_id": 2,
    "gpu_i_profile": "3g.40gb",
}


def sample(instance: dict, ts: datetime, job: str | None, value: float) -> dict[str, object]:
    """One RAW_SAMPLE_SCHEMA row; MIG rows get no GPU_UTIL (power and energy repeat the GPU's)."""
    mig = instance["gpu_i_id"] is not None
    values = {column: value for column in DCGM.metric_signals.values()}
    values |= {"gpu_util": None} if mig else {}
    return {"cluster": "t", "day": ts.date(), "ts": ts, **instance, "hpc_job": job, **values}


def frame(rows: list[dict[str, object]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=RAW_SAMPLE_SCHEMA)


# ---- Parquet ----------------------------------------------------------------------------------


def small_day() -> pl.DataFrame:
    inv = pl.DataFrame(
        [
            {
                "cluster": "t",
                "hostname": "h1",
                "gpu": g,
                "uuid": f"GPU-{g}",
                "pci_bus_id": f"0:{g}",
                "device": f"nvidia{g}",
                "model_name": "NVIDIA H200",
                "gpu_model": "H200",
                "memory_mib": 143771,
                "gpu_i_id": None,
                "gpu_i_profile": None,
                "nvlink_domain": "d",
                "switch_group": "s",
            }
            for g in range(3)
        ],
        schema_overrides={"gpu": pl.Int16, "gpu_i_id": pl.Int16},
    )
    alloc = pl.DataFrame(
        [("9", 0, "h1", 1, None, T0 + timedelta(hours=2), T0 + timedelta(hours=9), "dense", 4)],
        schema={
            "job_id_raw": pl.String,
            "run_index": pl.Int64,
            "hostname": pl.String,
            "gpu": pl.Int16,
            "gpu_i_id": pl.Int16,
            "start_time": pl.Datetime("us"),
            "end_time": pl.Datetime("us"),
            "kind": pl.String,
            "seed": pl.Int64,
        },
        orient="row",
    )
    return generate_day(inv, alloc, DAY, 60, 1, "t")


def test_parquet_round_trip_and_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parquet_writer, "ROW_GROUP_ROWS", 1000)
    day = small_day()
    path = write_day_parquet(day, tmp_path, DAY)
    assert path == tmp_path / "metrics" / "day=2026-03-02" / "part-0.parquet"
    assert [p.name for p in path.parent.iterdir()] == ["part-0.parquet"]
    assert pl.read_parquet(path).equals(day)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == day.height == 3 * 1440
    assert meta.num_row_groups == 5 and all(meta.row_group(i).num_rows <= 1000 for i in range(5))
    hostname = meta.row_group(0).column(day.columns.index("hostname"))
    assert hostname.compression == "ZSTD" and "RLE_DICTIONARY" in hostname.encodings
    assert write_day_parquet(day.head(10), tmp_path, DAY) == path and pl.read_parquet(path).height == 10  # replaced


def test_parquet_rejects_other_schemas(tmp_path: Path) -> None:
    day = small_day()
    for wrong in (day.drop("cluster"), day.with_columns(pl.col("gpu").cast(pl.Int64))):
        with pytest.raises(ValueError, match="RAW_SAMPLE_SCHEMA"):
            write_day_parquet(wrong, tmp_path, DAY)
    assert not (tmp_path / "metrics").exists() or not any((tmp_path / "metrics").rglob("*"))


# ---- OpenMetrics ------------------------------------------------------------------------------

LINE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)\{(?P<labels>.*)\} (?P<value>\S+) (?P<ts>\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"(?:,|$)')


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", '"': '"', "\\": "\\"}[m.group(1)], text)


def parse(text: str) -> list[tuple[str, tuple[tuple[str, str], ...], float, float]]:
    samples = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = LINE.match(line)
        assert match, line
        labels = tuple((k, unescape(v)) for k, v in LABEL.findall(match["labels"]))
        samples.append((match["name"], labels, float(match["value"]), float(match["ts"])))
    return samples


def expected(rows: list[dict[str, object]]) -> set[tuple[str, tuple[tuple[str, str], ...], float, float]]:
    names = {
        "gpu": "gpu",
        "UUID": "uuid",
        "pci_bus_id": "pci_bus_id",
        "device": "device",
        "modelName": "model_name",
        "Hostname": "hostname",
        "GPU_I_ID": "gpu_i_id",
        "GPU_I_PROFILE": "gpu_i_profile",
        "hpc_job": "hpc_job",
    }
    out = set()
    for row in rows:
        labels = tuple((n, str(row[c])) for n, c in names.items() if row[c] is not None)
        for metric, column in DCGM.metric_signals.items():
            if row[column] is not None:
                out.add((metric, labels, float(row[column]), (row["ts"] - EPOCH) / timedelta(seconds=1)))
    return out


def two_days() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The whole GPU goes idle -> job 'a\\nb' -> idle; the MIG slice runs job j2 across the days."""
    day1 = [
        sample(WHOLE, T0, None, 0.5),
        sample(WHOLE, T0 + timedelta(seconds=30), "a\nb", 1.0),
        sample(WHOLE, T0 + timedelta(seconds=60), None, 0.25),
        sample(MIG, T0, "j2", 2e-7),
        sample(MIG, T0 + timedelta(seconds=30), "j2", 0.75),
    ]
    later = T0 + timedelta(days=1)
    day2 = [
        sample(WHOLE, later, None, 0.0),
        sample(WHOLE, later + timedelta(microseconds=250_000), None, 1e16),
        sample(MIG, later, "j2", 0.125),
    ]
    return day1, day2


def write_om(path: Path, *days: list[dict[str, object]]) -> str:
    with OpenMetricsWriter(path) as writer:
        for rows in days:
            writer.add_day(frame(rows))
    return path.read_text()


def test_om_round_trips_every_non_null_sample(tmp_path: Path) -> None:
    day1, day2 = two_days()
    text = write_om(tmp_path / "metrics.om", day1, day2)
    assert sorted(parse(text)) == sorted(expected(day1 + day2))
    assert "GPU_UTIL{" in text and not re.search(r"DCGM_FI_DEV_GPU_UTIL\{[^}]*GPU_I_ID", text)  # MIG: no util
    for device_field in ("POWER_USAGE", "TOTAL_ENERGY_CONSUMPTION"):  # MIG: the GPU's power and energy
        assert re.search(rf'DCGM_FI_DEV_{device_field}\{{[^}}]*GPU_I_ID="2"', text)


def test_om_escapes_label_values(tmp_path: Path) -> None:
    text = write_om(tmp_path / "metrics.om", two_days()[0])
    assert 'Hostname="no\\"de\\\\1"' in text and 'hpc_job="a\\nb"' in text
    assert all(LINE.match(line) for line in text.splitlines() if not line.startswith("#"))


def test_om_families_and_series_are_contiguous(tmp_path: Path) -> None:
    day1, day2 = two_days()
    text = write_om(tmp_path / "metrics.om", day1, day2)
    lines = text.splitlines()
    assert lines[-1] == "# EOF" and text.endswith("# EOF\n")
    headers = [line for line in lines if line.startswith("#")][:-1]
    assert headers == [h for m in DCGM.metric_signals for h in (f"# HELP {m} {_help(text, m)}", f"# TYPE {m} gauge")]
    family, seen_series, last = None, set(), None
    for line in lines[:-1]:
        if line.startswith("# TYPE"):
            family = line.split()[2]
            continue
        if line.startswith("#"):
            continue
        name, labels, _, ts = parse(line)[0]
        assert name == family
        series = (name, labels)
        if series != last:
            assert series not in seen_series, f"series {series} interleaved"
            seen_series.add(series)
            last, last_ts = series, ts
        else:
            assert ts > last_ts
            last_ts = ts


def _help(text: str, metric: str) -> str:
    match = re.search(rf"^# HELP {metric} (.+)$", text, re.MULTILINE)
    assert match, metric
    return match[1]


def test_om_writes_fractional_and_whole_second_timestamps(tmp_path: Path) -> None:
    text = write_om(tmp_path / "metrics.om", two_days()[1])
    stamps = {line.rsplit(" ", 1)[1] for line in text.splitlines() if line.startswith("DCGM_FI_DEV_FB_USED")}
    start = int((T0 + timedelta(days=1) - EPOCH).total_seconds())
    assert stamps == {str(start), f"{start}.250000"}


def test_om_writer_cleans_up(tmp_path: Path) -> None:
    write_om(tmp_path / "metrics.om", two_days()[0])
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.om"]
    with pytest.raises(RuntimeError, match="boom"), OpenMetricsWriter(tmp_path / "failed.om") as writer:
        writer.add_day(frame(two_days()[0]))
        raise RuntimeError("boom")
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.om"]
    closed = OpenMetricsWriter(tmp_path / "empty.om")
    assert closed.close().read_text().endswith("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION gauge\n# EOF\n")
    with pytest.raises(ValueError, match="closed"):
        closed.add_day(frame(two_days()[0]))
