"""intermediate.int_charge_lines: one priced line per job run x price segment of the month.

A run's GPU-hours inside the month (``fct_job_usage.gpu_hours``, rounded half up to
1e-6 GPU-hours) are cut at the price changes of its GPU model, exact to the second: the
run holds ``[max(start_time, month start), that + elapsed_seconds)``; each segment gets
the share of the run's micro-GPU-hours its seconds hold (cumulative rounding, so the parts
add up to the run exactly). MIG slices are already weighted in ``gpus`` (3g = 3/7 unless
``rates.mig_profile_weights`` says otherwise); their price key is the base model
(``"A100 3g.40gb"`` -> ``"A100"``).

Unit price = list price x partition multiplier x QOS multiplier, rounded half up to 1e-6.
Cost: per charge row (cluster x department x GPU model x partition x QOS x segment) the cost
is round_half_up(sum of quantities x unit price) to the cent; the row's cents are split over
its lines by the largest remainder, so lines add up to their row exactly. A run whose model
has no price keeps its quantity with a null unit price and 0 cost (``is_priced`` false) and
fails the reconciliation. All amounts are integers (see transforms/helpers/charge_money.py).
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from contracts.chargeback import CHARGE_PERIOD, LINE_RUN, PRICE
from contracts.price_segments import base_model, held_interval, over_segments
from transforms.helpers.charge_money import cost_cents, div_half_up, float_micro, largest_remainder, to_scaled_int

SCHEMA: dict[str, pl.DataType] = {
    **LINE_RUN,
    "gpus": pl.Float64(),
    **CHARGE_PERIOD,
    "charge_seconds": pl.Int64(),
    "gpu_hours_micro": pl.Int64(),
    "measured_gpu_hours_micro": pl.Int64(),
    "active_gpu_hours_micro": pl.Int64(),
    "list_unit_price_micro": pl.Int64(),
    "price_multiplier_micro": pl.Int64(),
    "unit_price_micro": pl.Int64(),
    "cost_cents": pl.Int64(),
    "is_priced": pl.Boolean(),
}
ROW_GRAIN = [
    "cluster",
    "department",
    "division",
    "gpu_model",
    "partition_name",
    "qos",
    "charge_period_start",
    "charge_period_end",
    "unit_price_micro",
]
RUN = ["cluster", "job_id_raw", "start_time"]
_ORDER = [*RUN, "charge_period_start"]


def _segments(runs: pl.DataFrame, prices: pl.DataFrame, period_start: datetime, period_end: datetime) -> pl.DataFrame:
    """Runs x the price segments their held interval overlaps (priceless runs: one segment)."""
    runs = held_interval(runs, period_start)
    segments = over_segments(runs, prices, base_model(pl.col("gpu_model")), period_start, period_end)
    return segments.filter(pl.col("charge_seconds") > 0)


def _split(lines: pl.DataFrame) -> pl.DataFrame:
    """Each run's micro-GPU-hours over its segments by seconds, cumulative rounding."""
    lines = lines.sort(_ORDER).with_columns(
        pl.col("charge_seconds").cum_sum().over(RUN).alias("_cum"),
        pl.col("charge_seconds").sum().over(RUN).alias("_secs"),
    )
    totals = {"_total": "gpu_hours_micro", "_measured": "measured_gpu_hours_micro", "_active": "active_gpu_hours_micro"}
    lines = lines.with_columns(
        div_half_up(pl.col(total).cast(pl.Int128) * pl.col("_cum"), pl.col("_secs").cast(pl.Int128)).alias(
            f"{out}_upto"
        )
        for total, out in totals.items()
    )
    return lines.with_columns(
        (pl.col(f"{out}_upto") - pl.col(f"{out}_upto").shift(1, fill_value=0).over(RUN)).cast(pl.Int64).alias(out)
        for out in totals.values()
    )


def _priced(lines: pl.DataFrame, partitions: pl.DataFrame, qos: pl.DataFrame) -> pl.DataFrame:
    def factor(name):
        return to_scaled_int(pl.col(name).cast(PRICE), 6)

    lines = (
        lines.join(partitions.rename({"multiplier": "_pm"}), on="partition_name", how="left")
        .join(qos.rename({"multiplier": "_qm"}), on="qos", how="left")
        .with_columns(
            factor("list_unit_price").alias("list_unit_price_micro"),
            factor("_pm").fill_null(10**6).alias("_pm"),
            factor("_qm").fill_null(10**6).alias("_qm"),
        )
    )
    multiplier = div_half_up(pl.col("_pm").cast(pl.Int128) * pl.col("_qm"), 10**6)
    return lines.with_columns(multiplier.cast(pl.Int64).alias("price_multiplier_micro")).with_columns(
        div_half_up(pl.col("list_unit_price_micro").cast(pl.Int128) * pl.col("price_multiplier_micro"), 10**6)
        .cast(pl.Int64)
        .alias("unit_price_micro"),
        pl.col("list_unit_price_micro").is_not_null().alias("is_priced"),
    )


def int_charge_lines(
    job_usage: pl.DataFrame,
    prices: pl.DataFrame,
    partition_multipliers: pl.DataFrame,
    qos_multipliers: pl.DataFrame,
    period_start: datetime,
    period_end: datetime,
) -> pl.DataFrame:
    """Charge lines (SCHEMA) of the runs with GPU-hours in ``[period_start, period_end)``.

    ``prices``: gpu_model, charge_period_start, charge_period_end, list_unit_price (decimal
    text); the multipliers: partition_name|qos, multiplier (decimal text)."""
    measured = pl.col("utilization").is_not_null()
    runs = job_usage.filter(pl.col("gpu_hours").fill_null(0) > 0).with_columns(
        float_micro(pl.col("gpu_hours")).alias("_total"),
        float_micro(pl.when(measured).then(pl.col("gpu_hours")).otherwise(0.0)).alias("_measured"),
        float_micro(pl.col("active_gpu_hours").fill_null(0.0)).alias("_active"),
    )
    lines = _priced(_split(_segments(runs, prices, period_start, period_end)), partition_multipliers, qos_multipliers)
    lines = lines.with_columns(
        cost_cents(pl.col("gpu_hours_micro").sum().over(ROW_GRAIN), pl.col("unit_price_micro"))
        .fill_null(0)
        .alias("_row_cents")
    )
    lines = largest_remainder(lines, "_row_cents", "gpu_hours_micro", ROW_GRAIN, _ORDER, "cost_cents")
    return lines.select(pl.col(name).cast(dtype) for name, dtype in SCHEMA.items()).sort(_ORDER)
