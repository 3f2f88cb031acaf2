"""Node records from a real Slurm 22.05 (tests/slurm_harness: one node ``localhost`` with
``gpu:h200:8``): today is landed in command mode (``scontrol_command``) by the daily assets, as a
run executes them, and the month's observed inventory counts the node's 8 GPUs, where the config
declares 4, for the hours from the read on (DCGM reported nothing). A past day landed again keeps
the snapshot read the first time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from dagster import build_asset_context

from pipelines.assets.inventory import int_gpu_inventory_observed_asset
from pipelines.assets.slurm_nodes import raw_slurm_node_snapshots, stg_slurm__node_capacity_asset
from pipelines.resources import CardhoursResource
from tests.integration.test_slurm_lookback import _not_across_midnight
from tests.slurm_harness import SlurmCluster
from tests.support.warehouse_read import read_lake
from tests.warehouse.test_slurm_node_assets import observed, site

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]


def test_a_day_landed_from_scontrol_puts_the_nodes_gpus_in_the_inventory(tmp_path: Path) -> None:
    with SlurmCluster() as cluster:
        _not_across_midnight()  # the read and the day landed fall on the same day
        config = site(tmp_path, f"scontrol_command = '{cluster.scontrol_command}'")
        resource = {"cardhours": CardhoursResource(config_path=str(config))}
        before = datetime.now(UTC).replace(tzinfo=None)
        today = before.date().isoformat()
        for asset in (raw_slurm_node_snapshots, stg_slurm__node_capacity_asset):
            with build_asset_context(partition_key=today, resources=resource) as context:
                asset(context)
    snapshot = read_lake(config, "SELECT hostname, gpu_type, gpus, state, read_at FROM raw.slurm_node_snapshots")
    assert snapshot.select("hostname", "gpu_type", "gpus").rows() == [("localhost", "h200", 8)]
    read_at = snapshot["read_at"][0]
    assert before <= read_at <= datetime.now(UTC).replace(tzinfo=None)
    landing = read_lake(config, "SELECT status, rows, quarantined FROM meta.landings WHERE source = 'slurm_nodes'")
    assert landing.to_dicts() == [{"status": "ok", "rows": 1, "quarantined": 0}]

    first_hour = read_at.replace(minute=0, second=0, microsecond=0)
    hours = int((datetime.fromisoformat(today) + timedelta(days=1) - first_hour) / timedelta(hours=1))
    month = today[:8] + "01"
    with build_asset_context(partition_key=month, resources=resource) as context:
        result = int_gpu_inventory_observed_asset(context)
    rows = observed(config)
    assert set(rows["source"]) == {"slurm"} and set(rows["hostname"]) == {"localhost"}
    per_hour = rows.group_by("hour").agg(pl.col("gpu").sort()).sort("hour")
    assert per_hour["hour"].to_list() == [first_hour + timedelta(hours=h) for h in range(hours)]
    assert all(gpus == list(range(8)) for gpus in per_hour["gpu"].to_list())  # the GRES's 8, not the config's 4
    assert result.metadata["slurm_rows"] == 8 * hours and result.metadata["differences"] == 4


def test_a_past_day_landed_again_keeps_its_first_snapshot(tmp_path: Path) -> None:
    with SlurmCluster() as cluster:
        config = site(tmp_path, f"scontrol_command = '{cluster.scontrol_command}'")
        resource = {"cardhours": CardhoursResource(config_path=str(config))}
        yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
        reads = []
        for _ in range(2):
            with build_asset_context(partition_key=yesterday, resources=resource) as context:
                raw_slurm_node_snapshots(context)
            reads.append(read_lake(config, "SELECT read_at FROM raw.slurm_node_snapshots")["read_at"].to_list())
    assert len(reads[0]) == 1 and reads[1] == reads[0]  # scontrol is not read again for a day that ended
    landing = read_lake(config, "SELECT status, rows FROM meta.landings WHERE source = 'slurm_nodes'")
    assert landing.to_dicts() == [{"status": "ok", "rows": 1}]
