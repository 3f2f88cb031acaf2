"""The daily sacct asset through Dagster on a temp lake (file mode): the lookback lands an earlier
day again when its records changed, and the retention guard refuses a read with fewer jobs than
landed (on the day's own re-read and in the lookback) unless the run is tagged to force it."""

from __future__ import annotations

import hashlib
from datetime import date, datetime
from pathlib import Path

import polars as pl
from dagster import AssetKey, DagsterEventType, materialize

from config import load_config
from contracts.runs import FORCE_SHRINK_TAG
from contracts.schemas import SACCT_FIELDS
from pipelines.assets.ingest import raw_slurm_sacct
from pipelines.errors import asset_error
from pipelines.resources import CardhoursResource
from pipelines.tables import RAW_SLURM_SACCT
from tests.corpus.sacct import line
from tests.warehouse.test_ingest_assets import CONFIG, query
from transforms.staging.stg_slurm__jobs import stg_slurm__jobs
from warehouse.lake import partition_file

SACCT = AssetKey(["raw", "slurm_sacct"])
SLURM = """
[clusters.slurm]
sacct_file = "sacct.txt"
lookback_days = 2
"""
LANDING = "SELECT landed_at, status, rows FROM meta.landings WHERE source = 'sacct' AND day = ?"


def job(job_id: str, start: str, end: str = "", state: str = "COMPLETED") -> bytes:
    times = {"Submit": start, "Eligible": start, "Start": start, "End": end or "Unknown"}
    return line(JobID=job_id, JobIDRaw=job_id, NodeList="n1", AllocTRES="gres/gpu=1", State=state, **times)


def write_sacct(root: Path, *lines: bytes) -> None:
    (root / "sacct.txt").write_bytes(b"\n".join(["|".join(SACCT_FIELDS).encode(), *lines]) + b"\n")


def site(root: Path, *lines: bytes) -> Path:
    write_sacct(root, *lines)
    (root / "metrics").mkdir()
    config = root / "cardhours.toml"
    base = CONFIG.format(max_share=0.01)
    inventory = base.index("[[clusters.inventory.node_groups]]")
    config.write_text(base[:inventory] + SLURM + base[inventory:])
    return config


def run(config: Path, day: str, force: bool = False):
    resource = CardhoursResource(config_path=str(config))
    return materialize(
        [raw_slurm_sacct],
        partition_key=day,
        resources={"cardhours": resource},
        raise_on_error=False,
        tags={FORCE_SHRINK_TAG: "true"} if force else None,
    )


def failure(result) -> str:
    (event,) = [e for e in result.all_events if e.is_step_failure]
    return " ".join(asset_error(event.event_specific_data.error).message.split())


def digest(root: Path, day: str) -> str:
    """The landed partition's file, byte for byte."""
    lake = load_config(root / "cardhours.toml").warehouse.lake
    path = partition_file(lake, RAW_SLURM_SACCT.lake_table, {"cluster": "t1", "day": date.fromisoformat(day)})
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rows_of(config: Path, day: str) -> pl.DataFrame:
    return query(config, "SELECT * FROM raw.slurm_sacct WHERE day = ? ORDER BY job_id", [day])


def test_the_lookback_lands_a_changed_day_again_and_the_job_is_billed_once_with_its_end(tmp_path: Path) -> None:
    running = job("100", "2026-10-04T20:00:00", state="RUNNING")
    config = site(tmp_path, running, job("101", "2026-10-04T01:00:00", "2026-10-04T02:00:00"))
    assert run(config, "2026-10-04").success
    first = query(config, LANDING, ["2026-10-04"])
    # the job ended late on the 4th; slurmdbd had it only after the 4th landed
    ended = job("100", "2026-10-04T20:00:00", "2026-10-04T23:30:00")
    write_sacct(tmp_path, ended, job("101", "2026-10-04T01:00:00", "2026-10-04T02:00:00"))
    write_sacct(tmp_path, *(tmp_path / "sacct.txt").read_bytes().splitlines()[1:], job("102", "2026-10-05T08:00:00"))

    result = run(config, "2026-10-05")
    assert result.success
    meta = result.asset_materializations_for_node("raw__slurm_sacct")
    outcome = [m for m in meta if m.partition == "2026-10-05"][0].metadata["lookback_by_cluster"].value
    assert outcome == {"t1": {"2026-10-03": "not landed", "2026-10-04": "re-landed"}}
    again = [m for m in meta if m.partition == "2026-10-04"]  # the new version, recorded in Dagster
    assert len(again) == 1 and again[0].metadata["rows"].value == 2
    relanded = query(config, LANDING, ["2026-10-04"])
    assert relanded["landed_at"][0] > first["landed_at"][0] and relanded["status"][0] == "ok"
    assert rows_of(config, "2026-10-04").filter(pl.col("job_id") == "100")["state"].to_list() == ["COMPLETED"]

    landed = query(config, "SELECT * FROM raw.slurm_sacct")
    jobs, _ = stg_slurm__jobs(landed, datetime(2026, 10, 1), datetime(2026, 11, 1))
    assert jobs.filter(pl.col("job_id_raw") == "100").select("end_time", "is_open").rows() == [
        (datetime(2026, 10, 4, 23, 30), False)
    ]

    # nothing changed since: the next day's lookback leaves both days as they landed
    before = {day: (digest(tmp_path, day), query(config, LANDING, [day])) for day in ("2026-10-04", "2026-10-05")}
    write_sacct(tmp_path, *(tmp_path / "sacct.txt").read_bytes().splitlines()[1:], job("103", "2026-10-06T08:00:00"))
    result = run(config, "2026-10-06")
    assert result.success
    for day, (file_digest, landing) in before.items():
        assert digest(tmp_path, day) == file_digest and query(config, LANDING, [day]).equals(landing), day
    assert not [e for e in result.all_events if e.event_type == DagsterEventType.ASSET_MATERIALIZATION][1:]


def ten_jobs(count: int) -> list[bytes]:
    return [job(str(100 + i), "2026-10-05T01:00:00", "2026-10-05T02:00:00") for i in range(count)]


def test_a_re_read_with_fewer_jobs_is_refused_unless_forced(tmp_path: Path) -> None:
    config = site(tmp_path, *ten_jobs(10))
    assert run(config, "2026-10-05").success
    kept, landing = digest(tmp_path, "2026-10-05"), query(config, LANDING, ["2026-10-05"])
    write_sacct(tmp_path, *ten_jobs(6))  # slurmdbd purged four of them

    refused = run(config, "2026-10-05")
    assert not refused.success
    text = failure(refused)
    assert "refused to replace raw.slurm_sacct of cluster 't1', day 2026-10-05" in text
    assert "holds 10 jobs, the new read only 6 (4 fewer)" in text and "PurgeJobAfter" in text
    assert "--force-shrink" in text and f"{FORCE_SHRINK_TAG}=true" in text
    assert digest(tmp_path, "2026-10-05") == kept and query(config, LANDING, ["2026-10-05"]).equals(landing)

    assert run(config, "2026-10-05", force=True).success
    assert rows_of(config, "2026-10-05").height == 6
    assert query(config, LANDING, ["2026-10-05"])["rows"].to_list() == [6]


def test_a_lookback_day_with_fewer_jobs_is_refused_after_the_day_itself_landed(tmp_path: Path) -> None:
    config = site(tmp_path, *ten_jobs(3), job("200", "2026-10-06T01:00:00", "2026-10-06T02:00:00"))
    assert run(config, "2026-10-05").success
    kept = digest(tmp_path, "2026-10-05")
    write_sacct(tmp_path, *ten_jobs(2), job("200", "2026-10-06T01:00:00", "2026-10-06T02:00:00"))

    refused = run(config, "2026-10-06")
    assert not refused.success
    assert "day 2026-10-05: the lake holds 3 jobs, the new read only 2" in failure(refused)
    assert digest(tmp_path, "2026-10-05") == kept
    assert query(config, LANDING, ["2026-10-06"])["status"].to_list() == ["ok"]  # its own day landed
