"""The day's sacct check: a few bad rows land the day (quarantined, counted); a share above
``slurm.max_quarantine_share`` blocks it with a message naming the reasons and an example, and
the runner prints that message instead of a bare check name."""

from __future__ import annotations

from pathlib import Path

from dagster import materialize

from cardhours.runner import failed_check_texts
from contracts.schemas import SACCT_FIELDS
from pipelines.assets.ingest import raw_slurm_sacct
from pipelines.resources import CardhoursResource
from tests.corpus.sacct import line
from tests.warehouse.test_ingest_assets import CONFIG, query

PARTITION = "2026-10-05"
SLURM = """
[clusters.slurm]
sacct_file = "sacct.txt"
max_quarantine_share = {limit}
"""


def site(root: Path, limit: float) -> Path:
    good = [line(JobID=str(i), JobIDRaw=str(i), NodeList="n1", AllocTRES="gres/gpu=1") for i in range(100, 109)]
    bad = line(JobID="200", JobIDRaw="200", NodeList="n1", End="2026-10-05T00:10:00")
    (root / "sacct.txt").write_bytes(b"\n".join(["|".join(SACCT_FIELDS).encode(), *good, bad]) + b"\n")
    (root / "metrics").mkdir()
    config = root / "cardhours.toml"
    base = CONFIG.format(max_share=0.01)
    inventory = base.index("[[clusters.inventory.node_groups]]")
    config.write_text(base[:inventory] + SLURM.format(limit=limit) + base[inventory:])
    return config


def run(config: Path):
    resource = CardhoursResource(config_path=str(config))
    return materialize(
        [raw_slurm_sacct], partition_key=PARTITION, resources={"cardhours": resource}, raise_on_error=False
    )


def test_one_bad_row_in_ten_lands_the_day_under_a_generous_limit(tmp_path: Path) -> None:
    result = run(site(tmp_path, limit=0.2))
    assert result.success
    assert query(tmp_path / "cardhours.toml", "SELECT count(*) FROM raw.slurm_sacct").item() == 10


def test_a_share_over_the_limit_blocks_the_day_naming_reason_and_example(tmp_path: Path) -> None:
    result = run(site(tmp_path, limit=0.05))
    assert not result.success
    texts = failed_check_texts(result.all_events)
    assert texts == [
        "check sacct_quarantine_share on raw/slurm_sacct: cluster 't1', day 2026-10-05: 10.0000% of sacct rows "
        "quarantined (1 of 10), over slurm.max_quarantine_share 5.0000%; biggest reasons: END_BEFORE_START (1 rows, "
        f"e.g. {tmp_path / 'sacct.txt'}:11: END_BEFORE_START: End 2026-10-05T00:10:00 is before Start "
        "2026-10-05T01:00:00)"
    ]
