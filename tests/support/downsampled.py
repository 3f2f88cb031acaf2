"""Checks of a downsampled read against the raw samples it summarizes, shared by the
Prometheus and VictoriaMetrics integration tests."""

from __future__ import annotations

from datetime import datetime

import polars as pl
from polars.testing import assert_frame_equal

from contracts.schemas import SAMPLE_VALUE_COLUMNS
from sources.prometheus.source import PrometheusMetricsSource, downsample_function
from sources.series_labels import normalize_series
from sources.series_pivot import pivot_samples
from transforms.staging.stg_dcgm__gpu_hourly import stg_dcgm__gpu_hourly

KEYS = ["hostname", "gpu", "gpu_i_id", "hpc_job", "ts"]
LABELS = [
    *KEYS[:-1],
    "model_name",
    "uuid",
    "pci_bus_id",
    "device",
    "gpu_i_profile",
    "pod",
    "namespace",
    "container",
    "extra_labels",
]
AGGREGATE = {
    "avg_over_time": pl.Expr.mean,
    "max_over_time": pl.Expr.max,
    "min_over_time": pl.Expr.min,
    "last_over_time": lambda e: e.drop_nulls().last(),
}


def assert_buckets_exact(
    prom: PrometheusMetricsSource, expected: pl.DataFrame, start: datetime, end: datetime, step: int
) -> None:
    """``prom.read_downsampled(start, end, step)`` holds each bucket's aggregate of ``expected``
    (the raw samples, wide), to 1e-12."""
    long = prom.read_downsampled(start, end, step)
    got = pivot_samples(normalize_series(long.series, prom.exporter), long.samples)
    bucket = pl.col("ts").dt.truncate(f"{step}s")
    # Rows stay in their bucket. Where a bucket holds a job change they are stamped with their
    # last energy reading's time instead of the bucket start, and a series with readings on
    # both sides of another one gets a row with only an energy reading: fold them back.
    moved = got.filter(pl.col("ts") != bucket)
    assert 0 < moved.height < got.height // 10
    fields = [c for c in SAMPLE_VALUE_COLUMNS if c != "energy_mj"]
    folded = (
        got.sort("ts")
        .group_by([*LABELS, bucket], maintain_order=True)
        .agg(*(pl.col(c).drop_nulls().first() for c in fields), pl.col("energy_mj").drop_nulls().last())
    )
    want = (
        expected.filter(pl.col("ts") < end)
        .sort("ts")
        .group_by([*LABELS, bucket], maintain_order=True)
        .agg(AGGREGATE[downsample_function(c)](pl.col(c)).alias(c) for c in SAMPLE_VALUE_COLUMNS)
    )
    # The energy counter is read raw: a step row carries the step's last reading, except a GPU's
    # first row of the read, which carries its first reading (the rollup counts from there).
    first = pl.col("ts") == start
    want = want.with_columns(pl.when(~first).then(pl.col("energy_mj")))
    folded = folded.with_columns(pl.when(~first).then(pl.col("energy_mj")))
    assert_frame_equal(
        folded.sort(KEYS, nulls_last=True),
        want.select(folded.columns).sort(KEYS, nulls_last=True),
        check_exact=False,
        rel_tol=1e-12,
        abs_tol=1e-12,
    )


def hourly_energy(samples: pl.DataFrame, step: int) -> pl.DataFrame:
    """Energy (mJ) per GPU, job and hour through ``stg_dcgm__gpu_hourly``."""
    key = ["hostname", "gpu", "gpu_i_id", "hpc_job", "hour"]
    hourly = stg_dcgm__gpu_hourly(samples.lazy(), step).collect()
    return (
        hourly.filter(pl.col("energy_delta_mj").is_not_null())
        .select(*key, "energy_delta_mj")
        .sort(key, nulls_last=True)
    )
