"""A simulated day through the daily DCGM assets in shards of 8 GPUs gives the same tables and
counts as in one shard (32 GPUs, one node split into MIG instances; a sentinel, a value out of
range and a restart duplicate under the exporter pod's name added)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from dagster import materialize

from pipelines.assets.ingest import raw_dcgm_samples
from pipelines.assets.staging import (
    stg_dcgm__field_presence_asset,
    stg_dcgm__gpu_hourly_asset,
    stg_dcgm__gpu_minutely_asset,
)
from pipelines.resources import CardhoursResource
from simulate.run import simulate
from tests.support.warehouse_read import read_lake

DAY = date(2026, 10, 1)
ASSETS = [raw_dcgm_samples, stg_dcgm__gpu_hourly_asset, stg_dcgm__gpu_minutely_asset, stg_dcgm__field_presence_asset]
TABLES = [
    "raw.dcgm_samples",
    "raw.quarantine",
    "staging.stg_dcgm__gpu_hourly",
    "staging.stg_dcgm__gpu_minutely",
    "staging.stg_dcgm__field_presence",
]
METADATA = {
    "raw/dcgm_samples": ["rows", "quarantined_values", "screening_by_cluster"],
    "staging/stg_dcgm__gpu_hourly": ["rows"],
    "staging/stg_dcgm__gpu_minutely": ["rows", "minutes_below_full_coverage"],
    "staging/stg_dcgm__field_presence": ["rows", "fields_by_cluster", "suspect_flat_zero"],
}


def site(sim: Path, root: Path, gpus_per_shard: int | None) -> Path:
    text = (sim / "cardhours.toml").read_text()
    text = text.replace('path = "metrics"', f'path = "{sim / "metrics"}"', 1)
    if gpus_per_shard is not None:
        text = text.replace("step_seconds = 300\n", f"step_seconds = 300\ngpus_per_shard = {gpus_per_shard}\n", 1)
        assert f"gpus_per_shard = {gpus_per_shard}" in text
    root.mkdir()
    (root / "cardhours.toml").write_text(text)
    return root / "cardhours.toml"


def day_run(config: Path) -> dict:
    result = materialize(
        ASSETS, partition_key=DAY.isoformat(), resources={"cardhours": CardhoursResource(config_path=str(config))}
    )
    assert result.success
    metadata = {}
    for event in result.get_asset_materialization_events():
        key = event.asset_key.to_user_string()
        values = event.materialization.metadata
        metadata[key] = {name: values[name].value for name in METADATA[key]}
        metadata[key]["mean_coverage"] = values["mean_coverage"].value if "mean_coverage" in values else None
    assert metadata["staging/stg_dcgm__gpu_minutely"]["mean_coverage"] is not None
    tables = {}
    for table in TABLES:
        frame = read_lake(config, f"SELECT * FROM {table}")  # table names from the fixed list above
        tables[table] = frame.sort(frame.columns, nulls_last=True)
    return {"metadata": metadata, "tables": tables}


def dirty(sim: Path) -> None:
    """Bad input the shards must screen as the whole day does: a blank sentinel, a value out of
    range, and an hour of one GPU's rows again under its exporter pod's name (a restart duplicate)."""
    path = sim / "metrics" / f"day={DAY.isoformat()}" / "part-0.parquet"
    frame = pl.read_parquet(path).with_row_index("_i")
    gpu = (pl.col("hostname") == "gpu-002") & (pl.col("gpu") == 3)
    first_hour = gpu & (pl.col("ts").dt.hour() == 0)
    frame = frame.with_columns(
        pl.when(pl.col("_i") == 100).then(140737488355328.0).otherwise(pl.col("power_w")).alias("power_w"),
        pl.when(pl.col("_i") == 200).then(1.7).otherwise(pl.col("sm_active")).alias("sm_active"),
    )
    copy = frame.filter(first_hour).with_columns(
        pl.lit("dcgm-exporter-7xk2p").alias("hostname"), pl.lit('{"instance":"10.0.0.9:9400"}').alias("extra_labels")
    )
    pl.concat([frame, copy]).drop("_i").write_parquet(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("sharded")
    sim = simulate(root / "sim", gpus=32, days=1, start=DAY, seed=11, step_seconds=300, metrics_format="parquet")
    dirty(sim.out_dir)
    return {
        "whole": day_run(site(sim.out_dir, root / "whole", None)),
        "sharded": day_run(site(sim.out_dir, root / "sharded", 8)),
        "raw_file": next((root / "sharded").rglob("dcgm_samples/*/*/part-0.parquet")),
    }


def test_the_day_has_mig_instances_bad_input_and_more_than_one_shard(runs: dict) -> None:
    raw = runs["whole"]["tables"]["raw.dcgm_samples"]
    assert raw.filter(pl.col("gpu_i_id").is_not_null()).height > 0
    screening = runs["whole"]["metadata"]["raw/dcgm_samples"]["screening_by_cluster"]["sim"]
    assert screening["duplicate_rows"] == 12 and screening["sentinel_values"] == 1
    assert screening["out_of_range_values"] == 1
    assert raw.get_column("uuid").n_unique() == 32
    assert pq.ParquetFile(runs["raw_file"]).num_row_groups >= 4  # a row group (at least) per shard


@pytest.mark.parametrize("table", TABLES)
def test_tables_are_identical(runs: dict, table: str) -> None:
    whole, sharded = runs["whole"]["tables"][table], runs["sharded"]["tables"][table]
    assert whole.height > 0
    assert sharded.equals(whole)


def test_counts_and_metadata_are_identical(runs: dict) -> None:
    whole, sharded = runs["whole"]["metadata"], runs["sharded"]["metadata"]
    for key in METADATA:
        coverage = whole[key].pop("mean_coverage"), sharded[key].pop("mean_coverage")
        assert sharded[key] == whole[key], key
        assert coverage[1] == (None if coverage[0] is None else pytest.approx(coverage[0], rel=1e-12))
