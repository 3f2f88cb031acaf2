"""A landed day of Slurm downtime is not replaced by a read that holds fewer intervals (slurmdbd
purged its events, or the saved file lost lines): refused naming both counts, the day kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import build_asset_context

from pipelines.assets.downtime import stg_slurm__downtime_asset
from pipelines.landing import SourceFailed
from pipelines.resources import CardhoursResource
from tests.support.warehouse_read import read_lake
from tests.warehouse.test_capacity_split_asset import CONFIG, DAY, FIXTURES

pytestmark = [pytest.mark.slow]


def _land(config: Path):
    resource = CardhoursResource(config_path=str(config))
    with build_asset_context(partition_key=DAY.isoformat(), resources={"cardhours": resource}) as context:
        return stg_slurm__downtime_asset(context)


def test_a_read_with_fewer_intervals_is_refused_and_the_day_kept(tmp_path: Path) -> None:
    events = tmp_path / "events.txt"
    events.write_text((FIXTURES / "real_22.05_events.txt").read_text())
    config = tmp_path / "cardhours.toml"
    config.write_text(CONFIG.replace(str(FIXTURES / "real_22.05_events.txt"), str(events)))
    assert _land(config).metadata["rows_by_cluster"] == {"c1": 4}
    lines = events.read_text().splitlines()
    events.write_text("\n".join(lines[:-1]) + "\n")  # one node event fewer
    with pytest.raises(SourceFailed, match=r"ShrinkRefused: .* holds 4 node event and reservation intervals, the new"):
        _land(config)
    assert read_lake(config, "SELECT count(*) AS n FROM staging.stg_slurm__downtime").item() == 4
    status = read_lake(config, "SELECT status FROM meta.landings WHERE source = 'slurm_downtime'")
    assert status["status"].to_list() == ["ok"]  # the landed day keeps its landing
