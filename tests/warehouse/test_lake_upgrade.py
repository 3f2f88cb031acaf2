"""A warehouse from before the lake: its day partitions reach the lake on the first open with a
lake, none is lost, none the lake already holds is overwritten, and the tables become views."""

from __future__ import annotations

import tomllib
from datetime import date, datetime
from pathlib import Path

import polars as pl
import pytest

from config import parse_config
from config.load import EXAMPLE_CONFIG
from pipelines.store import open_warehouse
from pipelines.tables import RAW_DCGM_SAMPLES
from tests.warehouse.conftest import make_samples
from warehouse import connect, replace_partition
from warehouse.lake import partition_file, write_partition
from warehouse.landings import LANDINGS
from warehouse.migrate import default_source

DAY1, DAY2 = date(2026, 10, 1), date(2026, 10, 2)
MONTH = date(2026, 10, 1)


@pytest.fixture
def legacy(tmp_path: Path):
    """A warehouse migrated up to 0017 holding two days of samples, their landings and rejects."""
    before = tmp_path / "migrations"
    before.mkdir()
    for migration in default_source().iterdir():
        if migration.name.endswith(".sql") and migration.name < "0018":
            (before / migration.name).write_text(migration.read_text())
    path = tmp_path / "wh" / "cardhours.duckdb"
    with connect(path, migrations=before) as conn:
        for day, n in ((DAY1, 40), (DAY2, 50)):
            replace_partition(conn, "raw.dcgm_samples", make_samples("c1", day, n), {"cluster": "c1", "day": day})
            conn.execute(
                "INSERT INTO meta.landings VALUES (?, ?, 'dcgm', ?, ?, 0, ?, 'ok', NULL)",
                ["c1", day, datetime(2026, 10, 3), n, n * 10],
            )
        conn.execute("INSERT INTO raw.quarantine VALUES ('c1', 'dcgm', '2026-10-01', 'n1', 'sentinel', 'x', 3)")
        conn.execute("INSERT INTO raw.quarantine VALUES ('c1', 'stg_slurm__jobs', '2026-10-01', 'j', 'bad', 'y', 1)")
    data = tomllib.loads(EXAMPLE_CONFIG.read_text())
    data["warehouse"] = {"path": str(path)}
    return parse_config(data, base_dir=tmp_path)


def test_day_partitions_move_to_the_lake_and_the_lakes_own_are_kept(legacy) -> None:
    lake = legacy.warehouse.lake
    assert lake == legacy.warehouse.path.with_name("cardhours.lake")
    with connect(":memory:") as mem:  # day 2 landed again after the upgrade, by a daily run: newer
        write_partition(
            mem, lake, RAW_DCGM_SAMPLES.lake_table, make_samples("c1", DAY2, 7, seed=9), {"cluster": "c1", "day": DAY2}
        )
    with open_warehouse(legacy) as conn:
        per_day = conn.execute("SELECT day, count(*) FROM raw.dcgm_samples GROUP BY day ORDER BY day").fetchall()
        landings = conn.execute("SELECT day, rows, screened, status FROM meta.landings ORDER BY day").fetchall()
        quarantine = conn.execute("SELECT source, n_rows FROM raw.quarantine ORDER BY source").fetchall()
        monthly = conn.execute("SELECT source FROM raw.quarantine_monthly").fetchall()
        kinds = conn.execute(
            "SELECT table_schema || '.' || table_name, table_type FROM information_schema.tables "
            "WHERE table_name IN ('dcgm_samples', 'landings', 'quarantine', 'quarantine_monthly') ORDER BY 1"
        ).fetchall()
    assert per_day == [(DAY1, 40), (DAY2, 7)]
    assert landings == [(DAY1, 40, 400, "ok"), (DAY2, 50, 500, "ok")]
    assert quarantine == [("dcgm", 3), ("stg_slurm__jobs", 1)]
    assert monthly == [("stg_slurm__jobs",)]
    assert kinds == [
        ("meta.landings", "VIEW"),
        ("raw.dcgm_samples", "VIEW"),
        ("raw.quarantine", "VIEW"),
        ("raw.quarantine_monthly", "BASE TABLE"),
    ]
    day1 = partition_file(lake, RAW_DCGM_SAMPLES.lake_table, {"cluster": "c1", "day": DAY1})
    expected = make_samples("c1", DAY1, 40).drop("cluster", "day")
    stored = pl.read_parquet(day1).select(expected.columns)
    assert stored.sort("ts", "uuid", "hpc_job").equals(expected.sort("ts", "uuid", "hpc_job"))
    assert partition_file(lake, LANDINGS, {"source": "dcgm", "cluster": "c1", "day": DAY2}).is_file()
    with open_warehouse(legacy) as conn:  # a second open changes nothing
        assert conn.execute("SELECT count(*) FROM raw.dcgm_samples").fetchall() == [(47,)]


def test_an_interrupted_export_is_finished_by_the_next_open(legacy, monkeypatch: pytest.MonkeyPatch) -> None:
    import warehouse.lake_upgrade as upgrade

    real, calls = upgrade.write_relation, []

    def dies_on_the_second(relation, target):
        calls.append(target)
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        real(relation, target)

    monkeypatch.setattr(upgrade, "write_relation", dies_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        open_warehouse(legacy)
    monkeypatch.setattr(upgrade, "write_relation", real)
    with connect(legacy.warehouse.path, read_only=True) as conn:  # nothing dropped yet
        assert conn.execute("SELECT count(*) FROM raw.dcgm_samples").fetchall() == [(90,)]
    with open_warehouse(legacy) as conn:
        assert conn.execute("SELECT count(*) FROM raw.dcgm_samples").fetchall() == [(90,)]
        assert conn.execute("SELECT count(*) FROM meta.landings").fetchall() == [(2,)]
