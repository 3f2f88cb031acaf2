"""The review assets through Dagster on a temp warehouse: flags, per-user mart, flagged_jobs.csv, reruns."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest
from dagster import materialize

from pipelines.assets.review import fct_job_flags_asset, mart_user_monthly_asset
from pipelines.resources import CardhoursResource
from tests.unit.fct_job_flags_cases import MONTH, START, usage_row
from tests.unit.test_fct_job_flags_profile import hour_row
from transforms.intermediate.int_gpu_minutes_attributed import SCHEMA as ATTRIBUTED_SCHEMA
from transforms.marts.fct_job_usage import SCHEMA as USAGE_SCHEMA
from warehouse import connect, replace_partition

pytestmark = [pytest.mark.slow]  # Dagster runs: ~6 s each on 2 cores

PARTITION = MONTH.isoformat()

CONFIG = """
[warehouse]
path = "wh/cardhours.duckdb"

[reports]
dir = "reports"

[[clusters]]
name = "c1"

[clusters.metrics]
source = "file"
path = "metrics"
step_seconds = 30

[[clusters.inventory.node_groups]]
hosts = "n[1-4]"
gpu_model = "H100"
model_name = "NVIDIA H100 80GB HBM3"
gpus_per_node = 8
gpu_memory_mib = 81559

[rates]
currency = "EUR"

[rates.gpu_hour]
H100 = 2.5

[flags]
idle_tail_hours = 2.0
"""


def usage_rows() -> list[dict]:
    return [
        usage_row("1", hours=10.0, util=0.0, mean_fb_used_mib=40_000.0),  # ZERO_UTIL, MEMORY_HELD_IDLE
        usage_row("2", hours=6.0, util=0.5, gpus=2.0),  # IDLE_TAIL from the attribution rows below
        usage_row("3", hours=3.0, util=0.8, gpus=4.0, hosts="n1,n2,n3,n4"),  # MULTINODE_FRAGMENTED
        usage_row("4", hours=3.0, util=0.9, user_name="bob"),  # not flagged
        usage_row("5", hours=30.0, util=0.1, user_name='x,"y"', partition_name="debug", account="=1+1"),
    ]


def attributed_rows() -> list[dict]:
    """Job 2: active for 3 hours, then 3 hours at zero on both GPUs; the others: one hour each."""
    rows = [
        hour_row("2", START + timedelta(hours=h), zero=h >= 3, gpu=g, start=START) for h in range(6) for g in (0, 1)
    ]
    rows += [hour_row(job, START, zero=False, start=START) for job in ("1", "3", "4", "5")]
    return [row | {"cluster": "c1"} for row in rows]


def write_site(root: Path) -> Path:
    config = root / "cardhours.toml"
    config.write_text(CONFIG)
    with connect(root / "wh" / "cardhours.duckdb") as conn:
        usage = pl.DataFrame(usage_rows(), schema=USAGE_SCHEMA)
        replace_partition(conn, "marts.fct_job_usage", usage, {"month": MONTH})
        attributed = pl.DataFrame(attributed_rows(), schema=ATTRIBUTED_SCHEMA).with_columns(month=pl.lit(MONTH))
        replace_partition(conn, "intermediate.int_gpu_minutes_attributed", attributed, {"month": MONTH})
    return config


def run(config: Path):
    resource = CardhoursResource(config_path=str(config))
    return materialize(
        [fct_job_flags_asset, mart_user_monthly_asset], partition_key=PARTITION, resources={"cardhours": resource}
    )


def metadata(result, key: str) -> dict:
    events = [e.materialization for e in result.get_asset_materialization_events()]
    return next({k: v.value for k, v in m.metadata.items()} for m in events if m.asset_key.to_user_string() == key)


def test_runs_without_attribution_rows_are_counted(tmp_path: Path) -> None:
    config = write_site(tmp_path)
    with connect(tmp_path / "wh" / "cardhours.duckdb") as conn:
        conn.execute("DELETE FROM intermediate.int_gpu_minutes_attributed WHERE job_id_raw = '2'")
    result = run(config)
    meta = metadata(result, "marts/fct_job_flags")
    assert meta["runs_without_hourly_profile"] == 1 and "IDLE_TAIL" not in meta["by_reason"]


def tables(root: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    with connect(root / "wh" / "cardhours.duckdb") as conn:
        flags = conn.sql("SELECT * FROM marts.fct_job_flags ORDER BY ALL").pl()
        users = conn.sql("SELECT * FROM marts.mart_user_monthly ORDER BY ALL").pl()
    return flags, users


def test_flags_users_and_csv(tmp_path: Path) -> None:
    result = run(write_site(tmp_path))
    assert result.success
    assert all(check.passed for check in result.get_asset_check_evaluations())
    meta = metadata(result, "marts/fct_job_flags")
    assert meta["rows"] == 8 and meta["flagged_runs"] == 4 and meta["runs_without_hourly_profile"] == 0
    assert meta["by_reason"]["IDLE_TAIL"] == 1 and meta["unpriced_models"] == []
    flags, users = tables(tmp_path)
    got = set(flags.select("job_id", "reason").iter_rows())
    assert got == {
        ("1", "ZERO_UTIL"),
        ("1", "MEMORY_HELD_IDLE"),
        ("2", "IDLE_TAIL"),
        ("3", "MULTINODE_FRAGMENTED"),
        ("5", "LOW_UTIL"),
        ("5", "INPUT_BOUND"),
        ("5", "OVERSIZED"),
        ("5", "DEBUG_OVER_LIMIT"),
    }
    tail = flags.filter(pl.col("reason") == "IDLE_TAIL").row(0, named=True)
    assert tail["wasted_gpu_hours"] == 6.0 and tail["idle_cost"] == 6.0 * 2.5  # 3 h x 2 GPUs; 12 GPU-h at 50 %
    assert set(flags.get_column("month")) == {MONTH} and set(flags.get_column("currency")) == {"EUR"}
    assert users.height == 3 and users.filter(pl.col("user_name") == "bob").get_column("flagged_job_count")[0] == 0
    csv = (tmp_path / "reports" / "2024-03" / "flagged_jobs.csv").read_text()
    lines = csv.splitlines()
    assert lines[0].startswith("cluster,job_id,user,account,") and len(lines) == 1 + 4
    assert 'c1,5,"x,""y""",\'=1+1,' in csv


def test_rerun_gives_identical_rows_and_file(tmp_path: Path) -> None:
    config = write_site(tmp_path)
    assert run(config).success
    first, csv = tables(tmp_path), (tmp_path / "reports" / "2024-03" / "flagged_jobs.csv").read_bytes()
    assert run(config).success
    again = tables(tmp_path)
    assert first[0].equals(again[0]) and first[1].equals(again[1])
    assert first[0].height == 8 and first[1].height == 3
    assert (tmp_path / "reports" / "2024-03" / "flagged_jobs.csv").read_bytes() == csv
    assert [p.name for p in (tmp_path / "reports" / "2024-03").iterdir()] == ["flagged_jobs.csv"]  # no temp files
