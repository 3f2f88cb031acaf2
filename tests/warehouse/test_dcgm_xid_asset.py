"""The XID downtime asset through Dagster on a temp warehouse, in file mode: an OpenMetrics file
with the GPUs' samples and their DCGM_FI_DEV_XID_ERRORS lands the day, rolls it up by hour, and
the XID asset writes the intervals (ended by a reset, or by the first hour the GPU works) and
quarantines the value that is no XID."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from dagster import DagsterInstance, materialize

from contracts.xid import CRITICAL_XIDS
from pipelines.assets.dcgm_xid import stg_dcgm__gpu_xid_asset
from pipelines.assets.ingest import raw_dcgm_samples
from pipelines.assets.staging import stg_dcgm__gpu_hourly_asset
from pipelines.resources import CardhoursResource
from sources.dcgm_xid import XID_METRIC
from tests.support.warehouse_read import read_lake

pytestmark = [pytest.mark.slow]

DAY = date(2024, 3, 10)
T0 = datetime(2024, 3, 10)
STEP = 60
EPOCH = datetime(1970, 1, 1)
CONFIG = """
[warehouse]
path = "wh/cardhours.duckdb"

[reports]
dir = "reports"

[[clusters]]
name = "t1"

[clusters.metrics]
source = "file"
path = "metrics.om"
step_seconds = 60

[[clusters.inventory.node_groups]]
hosts = "n1"
gpu_model = "H100"
model_name = "NVIDIA H100 80GB HBM3"
gpus_per_node = 2
gpu_memory_mib = 81559

[rates]
currency = "USD"

[rates.gpu_hour]
H100 = 2.0
"""


def _xid(gpu: int, minute: int) -> float:
    if gpu == 0:  # fell off the bus 02:00, reset 03:00; one unreadable point at 05:00
        return 79.0 if 120 <= minute < 180 else 2.5 if minute == 300 else 0.0
    return 95.0 if minute >= 540 else 0.0  # uncontained ECC error at 09:00, sticky


def _sm_active(gpu: int, minute: int) -> float:
    return 0.6 if gpu == 1 and minute >= 14 * 60 + 30 else 0.0  # GPU 1 works again from 14:30


def write_om(path: Path, families: dict | None = None) -> None:
    families = families or {"DCGM_FI_PROF_SM_ACTIVE": _sm_active, XID_METRIC: _xid}
    lines = []
    for metric, value in families.items():
        lines.append(f"# TYPE {metric} gauge")
        for gpu in (0, 1):
            labels = f'gpu="{gpu}",UUID="GPU-{gpu}",Hostname="n1",modelName="NVIDIA H100 80GB HBM3"'
            for minute in range(24 * 60):
                ts = int((T0 + timedelta(minutes=minute) - EPOCH).total_seconds())
                lines.append(f"{metric}{{{labels}}} {value(gpu, minute):g} {ts}")
    path.write_text("\n".join([*lines, "# EOF", ""]))


def land(config: Path) -> None:
    """Run the day's landing, hourly rollup and XID asset on ``config``; check what they wrote."""
    resource = CardhoursResource(config_path=str(config))
    assets = [raw_dcgm_samples, stg_dcgm__gpu_hourly_asset, stg_dcgm__gpu_xid_asset]
    result = materialize(assets, partition_key=DAY.isoformat(), resources={"cardhours": resource})
    assert result.success
    rows = read_lake(config, "SELECT gpu, start_ts, end_ts, reason, source FROM staging.stg_dcgm__gpu_xid ORDER BY gpu")
    assert rows.rows() == [
        (0, T0 + timedelta(hours=2), T0 + timedelta(hours=3), CRITICAL_XIDS[79], "dcgm_xid"),
        # ended at the start of the first active hour (14:00; the hour's mean is 0.3): hour resolution
        (1, T0 + timedelta(hours=9), T0 + timedelta(hours=14), CRITICAL_XIDS[95], "dcgm_xid"),
    ]
    bad = read_lake(config, "SELECT reason, n_rows FROM raw.quarantine WHERE source = 'dcgm_xid'")
    assert [(reason.split(":")[0], n) for reason, n in bad.rows()] == [("XID_NOT_A_CODE", 1)]


def test_the_xid_asset_lands_intervals_and_quarantines_what_is_no_xid(tmp_path: Path) -> None:
    config = tmp_path / "cardhours.toml"
    config.write_text(CONFIG)
    write_om(tmp_path / "metrics.om")
    land(config)


def test_a_host_without_xid_series_is_counted_and_named(tmp_path: Path) -> None:
    config = tmp_path / "cardhours.toml"
    config.write_text(CONFIG)
    write_om(tmp_path / "metrics.om", {"DCGM_FI_PROF_SM_ACTIVE": _sm_active})  # the exporter does not collect XID
    resource = CardhoursResource(config_path=str(config))
    assets = [raw_dcgm_samples, stg_dcgm__gpu_hourly_asset, stg_dcgm__gpu_xid_asset]
    instance = DagsterInstance.ephemeral()
    result = materialize(assets, partition_key=DAY.isoformat(), resources={"cardhours": resource}, instance=instance)
    assert result.success
    (built,) = result.asset_materializations_for_node(stg_dcgm__gpu_xid_asset.op.name)
    assert built.metadata["hosts_without_xid_series"].value == 1 and built.metadata["intervals"].value == 0
    warned = [entry.user_message for entry in instance.all_logs(result.run_id) if XID_METRIC in entry.user_message]
    assert any(f"1 of 1 hosts reported GPU samples on {DAY} but no {XID_METRIC} series (n1)" in m for m in warned)


def _two_days_xid(gpu: int, minute: int) -> float:
    if gpu == 0:  # fell off the bus at 23:00 on day 1, never reset, never used
        return 79.0 if minute >= 23 * 60 else 0.0
    return 95.0 if minute >= 540 else 0.0  # day 1 09:00, sticky; the GPU worked from 14:30 on day 1


def _two_days_active(gpu: int, minute: int) -> float:
    return 0.6 if gpu == 1 and 14 * 60 + 30 <= minute < 16 * 60 else 0.0


def test_a_value_carried_into_the_next_day_continues_only_what_was_down_at_midnight(tmp_path: Path) -> None:
    config = tmp_path / "cardhours.toml"
    config.write_text(CONFIG)
    families = {"DCGM_FI_PROF_SM_ACTIVE": _two_days_active, XID_METRIC: _two_days_xid}
    lines = []
    for metric, value in families.items():
        lines.append(f"# TYPE {metric} gauge")
        for gpu in (0, 1):
            labels = f'gpu="{gpu}",UUID="GPU-{gpu}",Hostname="n1",modelName="NVIDIA H100 80GB HBM3"'
            for minute in range(2 * 24 * 60):
                ts = int((T0 + timedelta(minutes=minute) - EPOCH).total_seconds())
                lines.append(f"{metric}{{{labels}}} {value(gpu, minute):g} {ts}")
    (tmp_path / "metrics.om").write_text("\n".join([*lines, "# EOF", ""]))
    resource = CardhoursResource(config_path=str(config))
    assets = [raw_dcgm_samples, stg_dcgm__gpu_hourly_asset, stg_dcgm__gpu_xid_asset]
    for day in (DAY, DAY + timedelta(days=1)):
        assert materialize(assets, partition_key=day.isoformat(), resources={"cardhours": resource}).success
    sql = "SELECT day, gpu, start_ts, end_ts, reason FROM staging.stg_dcgm__gpu_xid ORDER BY day, gpu"
    day2 = T0 + timedelta(days=1)
    assert read_lake(config, sql).rows() == [
        (DAY, 0, T0 + timedelta(hours=23), day2, CRITICAL_XIDS[79]),
        (DAY, 1, T0 + timedelta(hours=9), T0 + timedelta(hours=14), CRITICAL_XIDS[95]),
        (DAY + timedelta(days=1), 0, day2, day2 + timedelta(days=1), CRITICAL_XIDS[79]),  # still down
        # GPU 1's 95 is still the last XID, but the GPU worked through it: no downtime on day 2
    ]
