"""staging.stg_dcgm__gpu_minutely: DCGM samples per GPU (or MIG instance), workload and minute.

The finest staging grain, used to attribute GPU time to jobs and pods. Lean on purpose:
means and maxima of the activity signals (``gpu_util`` as a 0-1 ratio), the mean of the
best signal present per sample (sm_active, else gr_engine_active, else gpu_util), memory
and power, and the sample count with its coverage (n_samples / expected_samples, at most
1). A scrape gap leaves a minute out or lowers its coverage; nothing is interpolated.

Two implementations with identical output: :func:`stg_dcgm__gpu_minutely` (polars, frames
in and out) and :func:`stg_dcgm__gpu_minutely_sql` (DuckDB SQL text over
``raw.dcgm_samples`` with ``?`` parameters). The asset runs the SQL one: it never moves the
day's raw rows out of DuckDB (measured in docs/storage.md).
"""

from __future__ import annotations

from datetime import date

import polars as pl

from transforms.helpers.host_ranges import EVERY_HOST, HostRange
from transforms.staging.stg_dcgm__gpu_hourly import SIGNALS, best_signal

GROUP_KEY = ("cluster", "hostname", "gpu", "uuid", "gpu_i_id", "gpu_i_profile", "hpc_job", "pod", "namespace")
# Output order (nulls first in every column), the same in both implementations.
SORT_KEY = ("cluster", "hostname", "gpu", "gpu_i_id", "minute", "hpc_job", "pod", "namespace", "uuid", "gpu_i_profile")

SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "hostname": pl.String(),
    "gpu": pl.Int16(),
    "uuid": pl.String(),
    "gpu_i_id": pl.Int16(),
    "gpu_i_profile": pl.String(),
    "hpc_job": pl.String(),
    "pod": pl.String(),
    "namespace": pl.String(),
    "minute": pl.Datetime("us"),
    "n_samples": pl.Int64(),
    "expected_samples": pl.Int64(),
    "coverage": pl.Float64(),
    **{f"{signal}_{stat}": pl.Float64() for signal in SIGNALS for stat in ("mean", "max")},
    "best_signal_mean": pl.Float64(),
    "fb_used_mib_mean": pl.Float64(),
    "fb_used_mib_max": pl.Float64(),
    "power_w_mean": pl.Float64(),
}


def expected_per_minute(step_seconds: int) -> int:
    """Samples a fully scraped minute holds: 60 / step, at least 1."""
    if step_seconds <= 0:
        raise ValueError(f"step_seconds must be positive, got {step_seconds}")
    return max(1, 60 // step_seconds)


def stg_dcgm__gpu_minutely(samples: pl.LazyFrame, step_seconds: int) -> pl.LazyFrame:
    """Minute rollup of RAW_SAMPLE_SCHEMA samples (``step_seconds``: the scrape interval)."""
    expected = expected_per_minute(step_seconds)
    prepared = samples.with_columns(
        (pl.col("gpu_util") / 100.0).alias("gpu_util"),
        pl.col("ts").dt.truncate("1m").alias("minute"),
    ).with_columns(best_signal().alias("_best"))
    minutely = prepared.group_by([*GROUP_KEY, "minute"]).agg(
        pl.len().alias("n_samples"),
        *(pl.col(signal).mean().alias(f"{signal}_mean") for signal in SIGNALS),
        *(pl.col(signal).max().alias(f"{signal}_max") for signal in SIGNALS),
        pl.col("_best").mean().alias("best_signal_mean"),
        pl.col("fb_used_mib").mean().alias("fb_used_mib_mean"),
        pl.col("fb_used_mib").max().alias("fb_used_mib_max"),
        pl.col("power_w").mean().alias("power_w_mean"),
    )
    return (
        minutely.with_columns(
            pl.lit(expected, pl.Int64).alias("expected_samples"),
            pl.min_horizontal(pl.col("n_samples") / expected, pl.lit(1.0)).alias("coverage"),
        )
        .select(list(SCHEMA))
        .cast(SCHEMA)
        .sort(list(SORT_KEY), nulls_last=False)
    )


def stg_dcgm__gpu_minutely_sql(
    cluster: str, day: date, step_seconds: int, hosts: HostRange = EVERY_HOST
) -> tuple[str, list[object]]:
    """The same rollup as SQL over one (cluster, day) of ``raw.dcgm_samples``, of ``hosts``
    (a shard of the day: ``transforms.helpers.host_ranges``): (text, params).

    Output columns: SCHEMA, in order. Run it with ``conn.sql(text, params=params)``.
    """
    expected = expected_per_minute(step_seconds)
    ratio = {signal: signal for signal in SIGNALS} | {"gpu_util": "gpu_util / 100.0"}
    stats = ",\n    ".join(f"avg({ratio[s]}) AS {s}_mean, max({ratio[s]}) AS {s}_max" for s in SIGNALS)
    keys = ", ".join(GROUP_KEY)
    text = f"""
SELECT
    {keys},
    date_trunc('minute', ts) AS minute,
    count(*) AS n_samples,
    CAST(? AS BIGINT) AS expected_samples,
    least(count(*) / CAST(? AS DOUBLE), 1.0) AS coverage,
    {stats},
    avg(coalesce(sm_active, gr_engine_active, gpu_util / 100.0)) AS best_signal_mean,
    avg(fb_used_mib) AS fb_used_mib_mean,
    max(fb_used_mib) AS fb_used_mib_max,
    avg(power_w) AS power_w_mean
FROM raw.dcgm_samples
WHERE cluster = ? AND day = ?{hosts.sql()}
GROUP BY ALL
ORDER BY {", ".join(f"{column} NULLS FIRST" for column in SORT_KEY)}
"""
    return text, [expected, expected, cluster, day, *hosts.params]
