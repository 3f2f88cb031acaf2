"""Slurm node records through the assets, in file mode: a saved ``scontrol show node --oneliner``
(recorded from the real test cluster, plus a line that cannot be read) landed on two days, staged
per hour, and placed in the month's observed inventory where DCGM is silent."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
from dagster import materialize

from pipelines.assets.inventory import int_gpu_inventory_observed_asset
from pipelines.assets.slurm_nodes import raw_slurm_node_snapshots, stg_slurm__node_capacity_asset
from pipelines.resources import CardhoursResource
from tests.integration.test_slurm_lookback import CONFIG
from tests.support.warehouse_read import read_lake
from warehouse import connect
from warehouse.connection import read_frame

FIXTURE = Path(__file__).parents[1] / "fixtures" / "slurm" / "downtime" / "scontrol_node_idle.txt"
DAY = datetime(2026, 11, 2)
READ_AT = DAY + timedelta(hours=6, minutes=30)
BAD = "NodeName=broken State=IDLE Gres=gpu:h200:x"


def site(root: Path, slurm_keys: str) -> Path:
    """A site with the test cluster's one node declared with 4 H200 (its GRES says 8)."""
    (root / "metrics").mkdir()
    text = CONFIG.format(cluster="it-slurm", sacct="sacct", slurm_cluster="cardhours-test")
    text = text.replace("lookback_days = 2\n", f"lookback_days = 2\n{slurm_keys}\n").replace(
        "gpus_per_node = 8", "gpus_per_node = 4"
    )
    config = root / "cardhours.toml"
    config.write_text(text)
    return config


def observed(config: Path) -> pl.DataFrame:
    conn = connect(config.parent / "cardhours.duckdb")
    try:
        return read_frame(conn, "SELECT * FROM intermediate.int_gpu_inventory_observed ORDER BY ALL")
    finally:
        conn.close()


def test_a_saved_node_file_lands_stages_and_fills_the_inventory(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.txt"
    nodes.write_text(FIXTURE.read_text() + BAD + "\n")
    config = site(tmp_path, f"nodes_file = '{nodes}'\nnodes_read_at = {READ_AT.isoformat()}")
    resource = {"cardhours": CardhoursResource(config_path=str(config))}
    for day in (DAY, DAY + timedelta(days=1)):
        daily = [raw_slurm_node_snapshots, stg_slurm__node_capacity_asset]
        assert materialize(daily, partition_key=day.date().isoformat(), resources=resource).success
    landings = read_lake(config, "SELECT status, rows, quarantined FROM meta.landings WHERE source = 'slurm_nodes'")
    assert landings.to_dicts() == [{"status": "ok", "rows": 1, "quarantined": 1}] * 2
    bad = read_lake(config, "SELECT location, reason FROM raw.quarantine WHERE source = 'slurm_nodes'")
    assert set(bad.rows()) == {(f"{nodes}:2", "GPU GRES 'gpu:h200:x' is not gpu[:type]:count")}
    capacity = read_lake(config, "SELECT hour, n_advertised FROM staging.stg_slurm__node_capacity ORDER BY hour")
    assert capacity["hour"].to_list() == [DAY + timedelta(hours=h) for h in range(6, 48)]  # none before the read
    assert set(capacity["n_advertised"]) == {8}

    month = "2026-11-01"
    assert materialize([int_gpu_inventory_observed_asset], partition_key=month, resources=resource).success
    first = observed(config)
    assert set(first["source"]) == {"slurm"} and first.height == 42 * 8
    assert sorted(first["gpu"].unique()) == list(range(8)) and first["gpu_i_profile"].is_null().all()
    assert materialize([int_gpu_inventory_observed_asset], partition_key=month, resources=resource).success
    assert observed(config).equals(first)  # a rerun gives the same rows
