"""Reading a day in shards of GPUs: the shards, and a day screened shard by shard equals the
day screened whole (restart duplicates under another host name, MIG, the exported_* rename)."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from contracts.schemas import QUARANTINE_SCHEMA
from sources.metrics import FileMetricsSource
from sources.shards import HOST, NONE, UUID, WHOLE, devices, pack
from tests.fixtures.dcgm_openmetrics import wild_om
from tests.warehouse.conftest import make_samples
from transforms.helpers.dcgm_quality import screen_samples
from transforms.helpers.dcgm_screen_totals import ScreenTotals
from transforms.helpers.host_ranges import EVERY_HOST, HostRange, host_ranges

DAY = date(2026, 3, 2)


def labels(rows: list[tuple]) -> pl.DataFrame:
    schema = {"uuid": pl.String, "hostname": pl.String, "gpu": pl.Int16, "gpu_i_id": pl.Int16}
    return pl.DataFrame([(*row, None)[:4] for row in rows], schema=schema, orient="row")


def test_devices_are_uuids_else_hosts_packed_in_host_order() -> None:
    found = devices(
        labels(
            [
                ("GPU-b", "n2", 0),
                ("GPU-a", "n1", 0),
                ("GPU-a", "exporter-pod", 0),  # a restart duplicate: the same GPU
                ("GPU-c", "n1", 1),
                ("GPU-m", "n2", 1, 1),  # a MIG GPU: each instance counts
                ("GPU-m", "n2", 1, 2),
                (None, "n3", 0),
                (None, "n3", 1),
                (None, None, 0),
            ]
        )
    )
    assert found.select("kind", "key", "gpus").rows() == [
        (UUID, "GPU-a", 1),
        (UUID, "GPU-c", 1),
        (UUID, "GPU-b", 1),
        (UUID, "GPU-m", 2),
        (HOST, "n3", 2),
        (NONE, "", 1),
    ]
    assert pack(found, 10) == [WHOLE]
    shards = pack(found, 2)
    assert [(s.kind, s.keys, s.gpus) for s in shards] == [
        (UUID, ("GPU-a", "GPU-c"), 2),
        (UUID, ("GPU-b",), 1),
        (UUID, ("GPU-m",), 2),
        (HOST, ("n3",), 2),
        (NONE, (), 1),
    ]
    assert (shards[0].first_host, shards[0].last_host) == ("exporter-pod", "n1")
    with pytest.raises(ValueError, match="gpus_per_shard must be at least 1"):
        pack(found, 0)


def test_a_device_larger_than_a_shard_is_a_shard_of_its_own() -> None:
    shards = pack(devices(labels([(None, "big", g) for g in range(16)] + [(None, "small", 0)])), 8)
    assert [(s.keys, s.gpus) for s in shards] == [(("big",), 16), (("small",), 1)]


def test_host_ranges_hold_whole_hosts_and_rows_without_a_host_first() -> None:
    instances = labels([(None, "n1", 0), (None, "n1", 1), (None, "n2", 0), (None, "n3", 0), (None, None, 0)])
    assert host_ranges(instances, 8) == [EVERY_HOST]
    ranges = host_ranges(instances, 2)
    assert ranges == [HostRange(None, None), HostRange("n1", "n1"), HostRange("n2", "n3")]
    assert [(r.where, r.params) for r in ranges[:2]] == [
        ("hostname IS NULL", []),
        ("hostname BETWEEN ? AND ?", ["n1", "n1"]),
    ]
    assert EVERY_HOST.sql() == ""


def screened_in_shards(
    source: FileMetricsSource, start, end, gpus_per_shard: int
) -> tuple[int, ScreenTotals, pl.DataFrame]:
    totals, clean, shards = ScreenTotals(), [], 0
    for frame in source.read_shards("c1", start, end, gpus_per_shard):
        result = screen_samples(frame, DAY.isoformat())
        totals.add(result)
        clean.append(result.clean)
        shards += 1
    return shards, totals, pl.concat(clean)


def same_rows(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    return a.sort(a.columns, nulls_last=True).equals(b.sort(b.columns, nulls_last=True))


def test_the_wild_day_screened_in_shards_equals_the_day_screened_whole(tmp_path: Path) -> None:
    path, facts = wild_om(tmp_path / "wild.om")
    source = FileMetricsSource(path)
    whole = screen_samples(source.read_samples("c1", facts["start"], facts["end"]), DAY.isoformat())
    shards, totals, clean = screened_in_shards(source, facts["start"], facts["end"], 1)
    assert shards == 4  # node-a's two GPUs (one with its restart duplicate), node-b's MIG GPU and whole GPU
    assert whole.counts["duplicate_rows"] == facts["duplicate_rows"] and whole.counts["mig_device_rows"] > 0
    assert totals.counts == whole.counts
    assert same_rows(clean, whole.clean)
    assert same_rows(totals.quarantine, whole.quarantine.select(list(QUARANTINE_SCHEMA)).cast(QUARANTINE_SCHEMA))
    pods = clean.filter(pl.col("hostname") == "node-b").get_column("pod").drop_nulls().unique().to_list()
    assert pods and not any(pod.startswith("dcgm-exporter") for pod in pods)  # the day's rename decision


def test_a_parquet_day_in_shards_holds_every_row_once(tmp_path: Path) -> None:
    frame = make_samples("c1", DAY, 20_000)
    folder = tmp_path / "metrics" / f"day={DAY.isoformat()}"
    folder.mkdir(parents=True)
    frame.drop("cluster", "day").write_parquet(folder / "part-0.parquet")
    source = FileMetricsSource(tmp_path)
    start = datetime(DAY.year, DAY.month, DAY.day)
    end = start + timedelta(days=1)
    whole = source.read_samples("c1", start, end)
    parts = list(source.read_shards("c1", start, end, 8))
    assert len(parts) == 16  # 64 UUIDs, each a whole GPU's rows and a MIG instance's
    assert all(part.select("uuid", "gpu_i_id").unique().height <= 8 for part in parts)
    assert same_rows(pl.concat(parts), whole)
    assert len(list(source.read_shards("c1", start, end, 128))) == 1
