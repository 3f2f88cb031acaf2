"""The daily DCGM assets through Dagster on a temp warehouse: screening, quarantine, its check, staging."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import AssetKey, materialize

from contracts.schemas import RAW_SAMPLE_SCHEMA
from pipelines.assets.ingest import raw_dcgm_samples
from pipelines.assets.staging import (
    stg_dcgm__field_presence_asset,
    stg_dcgm__gpu_hourly_asset,
    stg_dcgm__gpu_minutely_asset,
)
from pipelines.checks.quarantine import ClusterQuarantine, quarantine_share_check, values_by_reason
from pipelines.resources import CardhoursResource
from tests.support.warehouse_read import read_lake
from transforms.staging import stg_dcgm__field_presence, stg_dcgm__gpu_hourly, stg_dcgm__gpu_minutely
from warehouse import connect

DAY = date(2024, 3, 10)
PARTITION = DAY.isoformat()
T0 = datetime(2024, 3, 10, 0, 0)
STEP = 15
FP64_BLANK = 140737488355328.0
SAMPLES = ["raw", "dcgm_samples"]

CONFIG = """
[warehouse]
path = "wh/cardhours.duckdb"

[reports]
dir = "reports"

[[clusters]]
name = "t1"

[clusters.metrics]
source = "file"
path = "metrics"
step_seconds = 15
max_quarantine_share = {max_share}

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


def _row(seconds: int, **values) -> dict:
    row = {c: None for c in RAW_SAMPLE_SCHEMA if c not in ("cluster", "day")}
    row.update(
        ts=T0 + timedelta(seconds=seconds),
        hostname="n1",
        gpu=0,
        uuid="GPU-0",
        model_name="NVIDIA H100 80GB HBM3",
        pci_bus_id="00000000:18:00.0",
        device="nvidia0",
        hpc_job="101",
        extra_labels="{}",
    )
    row.update(values)
    return row


def metrics_rows() -> list[dict]:
    """Ten minutes at 15 s: GPU 0 whole (with a sentinel, an out-of-range value and a 2-minute
    gap), GPU 1 split in two MIG instances that both repeat the GPU's gpu_util and power."""
    rows = []
    for s in range(0, 600, STEP):
        if 120 <= s < 240:
            continue  # scrape gap on GPU 0
        rows.append(
            _row(
                s,
                sm_active=0.5,
                gr_engine_active=0.6,
                gpu_util=55.0,
                power_w=300.0,
                energy_mj=1e6 + 300_000.0 * s,
                fb_used_mib=1000.0,
            )
        )
    rows[3]["power_w"] = FP64_BLANK  # at 45 s
    rows[5]["sm_active"] = 1.7  # at 75 s
    for s in range(0, 600, STEP):
        mig = dict(
            gpu=1,
            uuid="GPU-1",
            pci_bus_id="00000000:28:00.0",
            device="nvidia1",
            gpu_util=40.0,
            power_w=250.0,
            gpu_i_profile="3g.40gb",
        )
        rows.append(_row(s, gpu_i_id=1, hpc_job="102", sm_active=0.3, gr_engine_active=0.35, **mig))
        rows.append(_row(s, gpu_i_id=2, hpc_job="103", sm_active=0.2 + (s % 60) / 600, gr_engine_active=0.0, **mig))
    return rows


def write_site(root: Path, max_share: float) -> Path:
    schema = {c: t for c, t in RAW_SAMPLE_SCHEMA.items() if c not in ("cluster", "day")}
    folder = root / "metrics" / f"day={PARTITION}"
    folder.mkdir(parents=True)
    pl.DataFrame(metrics_rows(), schema=schema).write_parquet(folder / "part-0.parquet")
    config = root / "cardhours.toml"
    config.write_text(CONFIG.format(max_share=max_share))
    return config


def run(config: Path, assets: list) -> object:
    resource = CardhoursResource(config_path=str(config))
    return materialize(assets, partition_key=PARTITION, resources={"cardhours": resource}, raise_on_error=False)


def checks(result) -> dict[str, object]:
    return {evaluation.check_name: evaluation for evaluation in result.get_asset_check_evaluations()}


def metadata(result, key: list[str]) -> dict:
    events = [e for e in result.get_asset_materialization_events() if e.asset_key == AssetKey(key)]
    assert len(events) == 1
    return {name: value.value for name, value in events[0].materialization.metadata.items()}


def query(config: Path, sql: str, params: list | None = None) -> pl.DataFrame:
    return read_lake(config, sql, params)


def test_screening_lands_clean_rows_quarantine_and_counts(tmp_path: Path) -> None:
    config = write_site(tmp_path, max_share=0.5)
    result = run(config, [raw_dcgm_samples])
    assert result.success
    evaluations = checks(result)
    assert evaluations["gx_raw_dcgm_samples"].passed  # the screened values fit the suite's ranges
    assert evaluations["quarantine_share"].passed

    screening = metadata(result, SAMPLES)["screening_by_cluster"]["t1"]
    assert (screening["sentinel_values"], screening["out_of_range_values"], screening["duplicate_rows"]) == (1, 1, 0)
    assert screening["quarantined_values"] == 2 and screening["mig_device_rows"] == 40
    assert screening["quarantine_share"] == pytest.approx(2 / screening["input_values"])
    assert screening["fields_present"] == [
        "gpu_util",
        "gr_engine_active",
        "sm_active",
        "fb_used_mib",
        "power_w",
        "energy_mj",
    ]

    quarantine = query(config, "SELECT * FROM raw.quarantine ORDER BY reason")
    assert quarantine.select("cluster", "source", "partition_key").unique().rows() == [("t1", "dcgm", PARTITION)]
    assert quarantine.get_column("n_rows").to_list() == [1, 1]
    reasons = quarantine.get_column("reason").to_list()
    assert reasons[0].startswith("DCGM blank sentinel 140737488355328") and reasons[1].startswith("sm_active above 1")

    gpu0 = query(config, "SELECT ts, sm_active, power_w FROM raw.dcgm_samples WHERE gpu = 0 ORDER BY ts")
    assert gpu0.height == 32  # nothing invented in the gap, nothing dropped
    at = {row["ts"]: row for row in gpu0.iter_rows(named=True)}
    assert at[T0 + timedelta(seconds=45)]["power_w"] is None and at[T0 + timedelta(seconds=45)]["sm_active"] == 0.5
    assert at[T0 + timedelta(seconds=75)]["sm_active"] is None and at[T0 + timedelta(seconds=75)]["power_w"] == 300.0
    mig = query(
        config,
        "SELECT gpu_i_id, count(gpu_util) AS util, count(*) AS n FROM raw.dcgm_samples "
        "WHERE gpu = 1 GROUP BY ALL ORDER BY gpu_i_id NULLS FIRST",
    )
    assert mig.rows() == [(None, 40, 40), (1, 0, 40), (2, 0, 40)]  # device fields once per GPU
    landing = query(
        config, "SELECT cluster, day, source, rows, quarantined, screened, status, detail FROM meta.landings"
    )
    assert landing.rows() == [("t1", DAY, "dcgm", 32 + 3 * 40, 2, screening["input_values"], "ok", None)]


def test_a_failed_read_is_recorded_as_a_failed_landing(tmp_path: Path) -> None:
    config = write_site(tmp_path, max_share=0.5)
    (tmp_path / "metrics" / f"day={PARTITION}" / "part-0.parquet").write_bytes(b"PAR1 broken")
    assert not run(config, [raw_dcgm_samples]).success
    landing = query(config, "SELECT source, rows, status, detail FROM meta.landings")
    broken = tmp_path / "metrics" / f"day={PARTITION}" / "part-0.parquet"
    assert landing.rows() == [
        (
            "dcgm",
            None,
            "failed",
            f"MetricsSourceError: cannot read dcgm-exporter samples from {broken}: parquet: File out of "
            "specification: A Parquet file must contain a header and footer with at least 12 bytes; "
            "replace or remove that file, then rerun the day",
        )
    ]


def test_quarantine_check_fails_over_the_limit_and_blocks_staging(tmp_path: Path) -> None:
    config = write_site(tmp_path, max_share=0.001)
    result = run(config, [raw_dcgm_samples, stg_dcgm__gpu_hourly_asset])
    evaluation = checks(result)["quarantine_share"]
    assert not evaluation.passed
    text = evaluation.description
    assert "'t1'" in text and PARTITION in text and "DCGM blank sentinel" in text and "sm_active above 1" in text
    assert evaluation.metadata["failing_clusters"].value == ["t1"]
    assert query(config, "SELECT count(*) AS n FROM raw.quarantine").item() == 2  # landed all the same
    assert query(config, "SELECT count(*) AS n FROM staging.stg_dcgm__gpu_hourly").item() == 0  # blocked
    screened = metadata(result, SAMPLES)["screening_by_cluster"]["t1"]["input_values"]
    landing = query(config, "SELECT rows, quarantined, screened, status, detail FROM meta.landings")
    assert landing.rows() == [
        (
            152,
            2,
            screened,
            "rejected",
            f"{2 / screened:.4%} of sample values quarantined, over metrics.max_quarantine_share 0.1000%",
        )
    ]


def test_rerun_replaces_samples_and_quarantine(tmp_path: Path) -> None:
    config = write_site(tmp_path, max_share=0.5)
    assert run(config, [raw_dcgm_samples]).success
    first = query(config, "SELECT * FROM raw.quarantine ORDER BY location, reason")
    assert run(config, [raw_dcgm_samples]).success
    assert query(config, "SELECT * FROM raw.quarantine ORDER BY location, reason").equals(first)
    assert query(config, "SELECT count(*) FROM raw.dcgm_samples").item() == 32 + 3 * 40


def test_daily_staging_assets(tmp_path: Path) -> None:
    config = write_site(tmp_path, max_share=0.5)
    assets = [
        raw_dcgm_samples,
        stg_dcgm__gpu_hourly_asset,
        stg_dcgm__gpu_minutely_asset,
        stg_dcgm__field_presence_asset,
    ]
    result = run(config, assets)
    assert result.success

    minutely = query(config, "SELECT * FROM staging.stg_dcgm__gpu_minutely WHERE gpu = 0 ORDER BY minute")
    assert minutely.get_column("minute").to_list() == [T0 + timedelta(minutes=m) for m in (0, 1, 4, 5, 6, 7, 8, 9)]
    assert set(minutely.get_column("coverage").to_list()) == {1.0}
    first = minutely.row(0, named=True)
    assert (first["sm_active_mean"], first["gpu_util_mean"], first["power_w_mean"]) == (0.5, 0.55, 300.0)
    second = minutely.row(1, named=True)  # 75 s: sm_active quarantined, 3 of 4 values left
    assert (second["n_samples"], second["sm_active_mean"]) == (4, 0.5)
    assert metadata(result, ["staging", "stg_dcgm__gpu_minutely"])["minutes_below_full_coverage"] == 0

    hourly = query(
        config, "SELECT n_samples, expected_samples, coverage FROM staging.stg_dcgm__gpu_hourly WHERE gpu = 0"
    )
    assert hourly.rows() == [(32, 240, pytest.approx(32 / 240))]

    presence = query(config, "SELECT * FROM staging.stg_dcgm__field_presence WHERE suspect_flat_zero")
    assert presence.select("gpu", "gpu_i_id", "field").rows() == [(1, 2, "gr_engine_active")]
    fields = metadata(result, ["staging", "stg_dcgm__field_presence"])["fields_by_cluster"]["t1"]
    assert fields["sm_active"] == {"present": 3, "suspect_flat_zero": 0}  # GPU 0 and two instances
    assert fields["gpu_util"]["present"] == 2 and fields["dram_active"]["present"] == 0
    assert fields["gr_engine_active"]["suspect_flat_zero"] == 1


@pytest.mark.parametrize(
    ("table", "schema", "partition"),
    [
        ("stg_dcgm__gpu_minutely", stg_dcgm__gpu_minutely.SCHEMA, [("day", "DATE")]),
        ("stg_dcgm__field_presence", stg_dcgm__field_presence.SCHEMA, []),
        ("stg_dcgm__gpu_hourly", stg_dcgm__gpu_hourly.SCHEMA, [("day", "DATE")]),
    ],
)
def test_staging_tables_match_their_schema(
    conn: duckdb.DuckDBPyConnection, table: str, schema: dict, partition: list
) -> None:
    types = {
        pl.String(): "VARCHAR",
        pl.Int16(): "SMALLINT",
        pl.Int64(): "BIGINT",
        pl.Float64(): "DOUBLE",
        pl.Boolean(): "BOOLEAN",
        pl.Date(): "DATE",
        pl.Datetime("us"): "TIMESTAMP",
    }
    found = conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'staging' "
        "AND table_name = ? ORDER BY ordinal_position",
        [table],
    ).fetchall()
    assert found == [(name, types[dtype]) for name, dtype in schema.items()] + partition


def test_migration_0005_keeps_hourly_rows_and_derives_their_coverage(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    old = tmp_path / "upto4"
    old.mkdir()
    shipped = Path(__file__).parents[2] / "warehouse" / "migrations"
    for sql in sorted(shipped.glob("000[1-4]_*.sql")):
        (old / sql.name).write_text(sql.read_text())
    with connect(path, migrations=old) as before:
        before.execute(
            "INSERT INTO staging.stg_dcgm__gpu_hourly (cluster, hour, n_samples, expected_samples, day) VALUES "
            "('c', TIMESTAMP '2024-03-10 00:00', 30, 120, DATE '2024-03-10'), "
            "('c', TIMESTAMP '2024-03-10 01:00', 150, 120, DATE '2024-03-10'), "
            "('c', TIMESTAMP '2024-03-10 02:00', 1, 0, DATE '2024-03-10')"
        )
    with connect(path) as after:
        rows = after.execute("SELECT n_samples, coverage FROM staging.stg_dcgm__gpu_hourly ORDER BY hour").fetchall()
    assert rows == [(30, 0.25), (150, 1.0), (1, None)]


def test_quarantine_check_is_pure_and_names_the_biggest_reasons() -> None:
    counts = {"quarantined_values": 30, "input_values": 1000}
    reasons = {"sm_active above 1": 5, "DCGM blank sentinel 4294967295 (uint32 -1)": 20, "gpu_util below 0": 5}
    at_limit = ClusterQuarantine("a", PARTITION, counts, 0.03, reasons)
    over = ClusterQuarantine("b", PARTITION, counts, 0.01, reasons)
    assert quarantine_share_check([at_limit], SAMPLES).passed
    failed = quarantine_share_check([at_limit, over], SAMPLES)
    assert not failed.passed and failed.metadata["failing_clusters"].value == ["b"]
    assert failed.description.startswith(
        f"cluster 'b', day {PARTITION}: 3.0000% of sample values quarantined (30 of 1,000)"
    )
    assert failed.description.endswith(
        "DCGM blank sentinel 4294967295 (uint32 -1) (20 values), gpu_util below 0 (5 values), "
        "sm_active above 1 (5 values)"
    )
    empty = ClusterQuarantine("c", PARTITION, {"quarantined_values": 0, "input_values": 0}, 0.0)
    assert quarantine_share_check([empty], SAMPLES).passed


def test_values_by_reason_groups_range_reasons_across_series() -> None:
    quarantine = pl.DataFrame(
        {
            "reason": [
                "sm_active above 1 (max 1.7)",
                "sm_active above 1 (max 2.5)",
                "DCGM blank sentinel 4294967295 (uint32 -1)",
            ],
            "n_rows": [3, 4, 2],
        }
    )
    assert values_by_reason(quarantine) == {"DCGM blank sentinel 4294967295 (uint32 -1)": 2, "sm_active above 1": 7}
    assert values_by_reason(quarantine.clear()) == {}
