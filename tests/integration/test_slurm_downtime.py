"""Downtime from a real Slurm 22.05 with accounting (tests/slurm_harness): the node drained with a
reason and resumed, drained again (left open), a maintenance reservation and an ordinary one;
the day is landed in command mode (``sacctmgr_command``) by the daily downtime asset, as a run
executes it, and the landed intervals are what was done."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from dagster import build_asset_context

from pipelines.assets.downtime import stg_slurm__downtime_asset
from pipelines.resources import CardhoursResource
from tests.integration.test_slurm_lookback import CONFIG, _not_across_midnight
from tests.slurm_harness import SlurmCluster
from tests.slurm_harness.downtime_fixtures import DRAIN_REASON, MAINT, OPEN_REASON, TEAM, make_downtime
from tests.support.warehouse_read import read_lake

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]

T = "%Y-%m-%dT%H:%M:%S"


def _site(root: Path, cluster: SlurmCluster) -> Path:
    (root / "metrics").mkdir()
    sacctmgr = cluster.sacctmgr_command
    text = CONFIG.format(cluster="it-slurm", sacct=cluster.sacct_command, slurm_cluster=cluster.cluster_name)
    text = text.replace("lookback_days = 2\n", f"lookback_days = 2\nsacctmgr_command = '{sacctmgr}'\n")
    config = root / "cardhours.toml"
    config.write_text(text)
    return config


def test_a_day_of_drains_and_reservations_lands_from_sacctmgr(tmp_path: Path) -> None:
    _not_across_midnight()
    with SlurmCluster() as cluster:
        done = make_downtime(cluster)
        config = _site(tmp_path, cluster)
        day = done.began[:10]
        resource = CardhoursResource(config_path=str(config))
        with build_asset_context(partition_key=day, resources={"cardhours": resource}) as context:
            result = stg_slurm__downtime_asset(context)
        read_at = datetime.now(UTC).replace(tzinfo=None)
    assert result.metadata["rows_by_cluster"] == {"it-slurm": 4}
    rows = read_lake(config, "SELECT * FROM staging.stg_slurm__downtime ORDER BY start_ts, state").to_dicts()
    got = {r["reason"]: (r["state"], r["start_ts"].strftime(T), r["end_ts"]) for r in rows}
    assert got[DRAIN_REASON] == ("down", done.drained[0], datetime.strptime(done.drained[1], T))
    assert got[MAINT] == ("planned_down", done.maint[0], datetime.strptime(done.maint[1], T))
    assert got[TEAM] == ("reserved", done.team[0], datetime.strptime(done.team[1], T))
    state, start, end = got[OPEN_REASON]  # still drained: open until the read
    assert (state, start) == ("down", done.open_drain_start) and datetime.strptime(done.ended, T) <= end <= read_at
    assert {r["hostname"] for r in rows} == {"localhost"} and {r["cluster"] for r in rows} == {"it-slurm"}
    landing = read_lake(config, "SELECT status, rows, quarantined FROM meta.landings WHERE source = 'slurm_downtime'")
    assert landing.to_dicts() == [{"status": "ok", "rows": 4, "quarantined": 0}]
