"""The downtime landing (file mode, the outputs recorded from the real Slurm) and the month's
capacity split, as Dagster runs their assets, on a temp warehouse."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from dagster import Failure, build_asset_context

from contracts.capacity_states import STATES
from contracts.sources import DCGM
from pipelines.assets.capacity_split import fct_gpu_capacity_split_asset
from pipelines.assets.downtime import stg_slurm__downtime_asset
from pipelines.resources import CardhoursResource
from tests.support.warehouse_read import read, read_lake
from transforms.marts.fct_gpu_hourly import SCHEMA as HOURLY_SCHEMA
from warehouse import connect, replace_partition

pytestmark = [pytest.mark.slow]

FIXTURES = Path(__file__).parents[1] / "fixtures" / "slurm_downtime"
DONE = json.loads((FIXTURES / "real_22.05_downtime.json").read_text())
DAY = date.fromisoformat(DONE["began"][:10])
MONTH = DAY.replace(day=1)
GPUS = 8
CONFIG = f"""
[warehouse]
path = "wh/cardhours.duckdb"

[reports]
dir = "reports"

[[clusters]]
name = "c1"

[clusters.metrics]
source = "file"
path = "metrics"

[clusters.slurm]
sacct_file = "sacct.txt"
slurm_cluster = "{DONE["cluster"]}"
events_file = "{FIXTURES / "real_22.05_events.txt"}"
reservations_file = "{FIXTURES / "real_22.05_reservations.txt"}"

[[clusters.inventory.node_groups]]
hosts = "{DONE["node"]}"
gpu_model = "H200"
model_name = "NVIDIA H200"
gpus_per_node = {GPUS}
gpu_memory_mib = 143771

[rates]
currency = "EUR"

[rates.gpu_hour]
H200 = 3.0
"""


def _allocated(gpu: int, hour: datetime) -> float:
    """GPU 0 held 600 s an hour, except on the recorded day: no run there, so no allocation takes
    the drains' time (allocation wins over every state) however long the open drain has lasted."""
    return 600.0 if gpu == 0 and hour.date() != DAY else 0.0


def _hourly() -> pl.DataFrame:
    first = datetime.combine(MONTH, datetime.min.time())
    hours = [first + timedelta(hours=h) for h in range(24 * 31)]
    rows = [
        {"cluster": "c1", "hostname": DONE["node"], "gpu": gpu, "gpu_model": "H200", "hour": hour}
        | {"capacity_seconds": 3600.0, "allocated_seconds": _allocated(gpu, hour), "month": MONTH}
        for gpu in range(GPUS)
        for hour in hours
    ]
    return pl.DataFrame(rows, schema={k: v for k, v in HOURLY_SCHEMA.items() if k in rows[0]})


def _run(asset, partition: str, config: Path):
    resource = CardhoursResource(config_path=str(config))
    with build_asset_context(partition_key=partition, resources={"cardhours": resource}) as context:
        return asset(context)


def test_the_landed_drain_and_reservations_split_the_month(tmp_path: Path) -> None:
    config = tmp_path / "cardhours.toml"
    config.write_text(CONFIG)
    with connect(tmp_path / "wh" / "cardhours.duckdb") as conn:
        replace_partition(conn, "marts.fct_gpu_hourly", _hourly(), {"month": MONTH})
    before = datetime.now(UTC).replace(tzinfo=None)
    landed = _run(stg_slurm__downtime_asset, DAY.isoformat(), config)
    after = datetime.now(UTC).replace(tzinfo=None)
    assert landed.metadata["rows_by_cluster"] == {"c1": 4}
    assert read_lake(config, "SELECT count(*) AS n FROM staging.stg_slurm__downtime").item() == 4
    split = _run(fct_gpu_capacity_split_asset, MONTH.isoformat(), config)
    assert all(check.passed for check in split.check_results)
    assert split.metadata["unmatched_downtime_hosts"].value == []  # every interval's host has GPU-hours
    rows = read(tmp_path / "wh" / "cardhours.duckdb", "SELECT * FROM marts.fct_gpu_capacity_split")
    assert rows.height == GPUS * 24 * 31
    totals = {state: rows[f"{state}_seconds"].sum() for state in STATES}
    assert sum(totals.values()) == pytest.approx(GPUS * 24 * 31 * 3600.0)
    at = datetime.fromisoformat
    maint = (at(DONE["maint"][1]) - at(DONE["maint"][0])).total_seconds()
    drained = (at(DONE["drained"][1]) - at(DONE["drained"][0])).total_seconds()
    day_end = datetime.combine(DAY + timedelta(days=1), datetime.min.time())
    open_start = at(DONE["open_drain_start"])

    def down(now: datetime) -> float:  # the open drain lasts until the read; the maintenance minute wins
        return GPUS * (drained + (min(now, day_end) - open_start).total_seconds() - maint)

    assert totals["planned_down"] == GPUS * maint
    assert down(before) - 1e-6 <= totals["down"] <= down(after) + 1e-6
    assert totals["reserved"] == 0  # the ordinary reservation lies inside the open drain: down wins
    assert totals["allocated"] == 600.0 * 24 * 30
    _review_section_shows_it(config, drained)


def _review_section_shows_it(config: Path, drained: float) -> None:
    """The review's downtime section, from what the review asset reads of this warehouse."""
    from config import load_config
    from pipelines.assets.reports import read_downtime_frames
    from pipelines.store import open_warehouse
    from reports.sections.downtime import downtime_section

    conn = open_warehouse(load_config(config))
    try:
        states, intervals = read_downtime_frames(conn, MONTH)
    finally:
        conn.close()
    assert intervals.height == 4 and states["cluster"].to_list() == ["c1"]
    assert 0 < states["down_gpu_hours"][0] < GPUS * 24
    html = str(downtime_section(states, intervals).render())
    assert "Downtime and availability" in html and DONE["drain_reason"] in html and DONE["maint_name"] in html
    assert f"{drained / 3600:.1f}" in html  # the closed drain's node-hours


def _dcgm_landing_and_migrations_applied(config: Path, applied_at: datetime) -> None:
    """A landed DCGM day with no derived downtime partitions, and the derived tables' migrations
    recorded as applied at ``applied_at``."""
    from config import load_config
    from pipelines.tables import DERIVED_DOWNTIME
    from warehouse.landings import Landing, record_landing

    settings = load_config(config)
    with connect(settings.warehouse.path) as conn:
        replace_partition(conn, "marts.fct_gpu_hourly", _hourly(), {"month": MONTH})
        record_landing(conn, settings.warehouse.lake, Landing("c1", DAY, DCGM, datetime(2026, 1, 1), rows=1))
        versions = [derived.since_migration for derived in DERIVED_DOWNTIME.values()]
        conn.execute(
            "UPDATE main.schema_migrations SET applied_at = ? WHERE list_contains(?, version)", [applied_at, versions]
        )


def test_a_day_landed_before_the_downtime_tables_existed_builds_with_a_warning(tmp_path: Path) -> None:
    config = tmp_path / "cardhours.toml"
    config.write_text(CONFIG)
    _dcgm_landing_and_migrations_applied(config, datetime(2026, 2, 1))  # upgraded after the day landed
    split = _run(fct_gpu_capacity_split_asset, MONTH.isoformat(), config)
    never = split.metadata["downtime_never_derived"].value
    assert f"staging.stg_dcgm__gpu_xid of cluster c1: {DAY}" in never and len(never) == 2  # dropout and XID


def test_a_landed_day_without_its_derived_downtime_is_refused_naming_the_day(tmp_path: Path) -> None:
    config = tmp_path / "cardhours.toml"
    config.write_text(CONFIG)
    _dcgm_landing_and_migrations_applied(config, datetime(2025, 12, 1))  # the tables existed when it landed
    with pytest.raises(Failure) as refused:
        _run(fct_gpu_capacity_split_asset, MONTH.isoformat(), config)
    text = refused.value.description
    assert f"staging.stg_dcgm__gpu_xid of cluster c1: {DAY} (missing)" in text
    assert f"cardhours run --month {MONTH:%Y-%m} --reingest DAY" in text
