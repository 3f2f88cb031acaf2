"""Fixtures for the warehouse tests: a migrated temp DuckDB and sample frames."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date, datetime
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

from contracts.schemas import RAW_SAMPLE_SCHEMA
from warehouse import connect


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "warehouse" / "cardhours.duckdb"


@pytest.fixture
def conn(db_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to a fresh warehouse migrated with the shipped migrations."""
    connection = connect(db_path)
    yield connection
    connection.close()


@pytest.fixture
def migrations_dir(tmp_path: Path) -> Path:
    """An empty directory to write test migrations into."""
    path = tmp_path / "migrations"
    path.mkdir()
    return path


SampleFactory = Callable[..., pl.DataFrame]


def make_samples(cluster: str, day: date, n: int, seed: int = 0) -> pl.DataFrame:
    """``n`` rows in exactly RAW_SAMPLE_SCHEMA for one (cluster, day), built column-wise.

    Every fifth row is a MIG instance (gpu_i_id/gpu_i_profile set, gpu_util null).
    """
    rng = np.random.default_rng(seed)
    midnight = datetime.combine(day, datetime.min.time())
    idx = pl.int_range(0, n, dtype=pl.Int64)
    gpu = (idx % 8).cast(pl.Int16)
    mig = idx % 5 == 0
    values = {name: rng.random(n) for name, dtype in RAW_SAMPLE_SCHEMA.items() if dtype == pl.Float64()}
    frame = pl.DataFrame(values, schema={name: pl.Float64() for name in values}).select(
        pl.lit(cluster).alias("cluster"),
        pl.lit(day).alias("day"),
        (pl.lit(midnight) + pl.duration(seconds=(idx // 64) % 2880 * 30)).alias("ts"),
        pl.format("{}-gpu{}", pl.lit(cluster), (idx // 8) % 8).alias("hostname"),
        gpu.alias("gpu"),
        pl.format("GPU-{}", idx % 64).alias("uuid"),
        pl.lit("NVIDIA H100 80GB HBM3").alias("model_name"),
        pl.format("00000000:{}:00.0", gpu).alias("pci_bus_id"),
        pl.format("nvidia{}", gpu).alias("device"),
        pl.when(mig).then(pl.lit(1, pl.Int16)).alias("gpu_i_id"),
        pl.when(mig).then(pl.lit("3g.40gb")).alias("gpu_i_profile"),
        pl.format("job{}", idx % 97).alias("hpc_job"),
        pl.when(mig).then(None).otherwise(pl.col("gpu_util")).alias("gpu_util"),
        pl.exclude("gpu_util"),
        pl.when(idx % 7 == 0).then(pl.format("pod-{}", idx % 11)).alias("pod"),
        pl.when(idx % 7 == 0).then(pl.lit("team-a")).alias("namespace"),
        pl.lit(None, pl.String).alias("container"),
        pl.lit('{"instance":"10.0.0.1:9400"}').alias("extra_labels"),
    )
    return frame.select(pl.col(name).cast(dtype) for name, dtype in RAW_SAMPLE_SCHEMA.items())


@pytest.fixture
def samples() -> SampleFactory:
    return make_samples
