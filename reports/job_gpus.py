"""The per-GPU lines of a job report (reports/job_report.py): one per run, host and GPU or MIG
instance, from the run's ``intermediate.int_gpu_minutes_attributed`` sums and the inventory."""

from __future__ import annotations

import polars as pl


def per_gpu(gpus: pl.DataFrame, inventory: pl.DataFrame, step_seconds: dict[str, int]) -> pl.DataFrame:
    """One line per run, host and GPU or MIG instance: sampled GPU-hours (samples x step x the
    instance's GPU fraction), best-signal utilization and its signal, memory, energy, power."""
    if gpus.is_empty():
        return pl.DataFrame(schema=GPU_SCHEMA)
    cards = inventory.select("cluster", "hostname", "gpu", "gpu_i_profile", "gpu_fraction", "memory_mib").unique(
        ["cluster", "hostname", "gpu", "gpu_i_profile"]
    )
    step = pl.col("cluster").replace_strict(step_seconds, default=None, return_dtype=pl.Float64)
    signal = pl.when(pl.col("sm_active_n") > 0).then(pl.lit("sm_active"))
    signal = (
        signal.when(pl.col("gr_engine_active_n") > 0).then(pl.lit("gr_engine_active")).otherwise(pl.lit("gpu_util"))
    )
    keys = [pl.col("gpu").cast(pl.Int64), pl.col("gpu_i_profile").cast(pl.String)]
    gpus, cards = gpus.with_columns(keys), cards.with_columns(keys)
    lines = gpus.join(cards, on=["cluster", "hostname", "gpu", "gpu_i_profile"], how="left", nulls_equal=True)
    return lines.select(
        "job_id_raw",
        pl.col("start_time").dt.to_string("%Y-%m-%dT%H:%M:%S"),
        "hostname",
        "gpu",
        pl.col("gpu_i_profile").alias("mig_profile"),
        pl.col("gpu_fraction").fill_null(1.0).alias("gpu_fraction"),
        (pl.col("samples") * step * pl.col("gpu_fraction").fill_null(1.0) / 3600).alias("gpu_hours"),
        (pl.col("best_sum") / pl.when(pl.col("best_n") > 0).then("best_n")).alias("utilization"),
        pl.when(pl.col("best_n") > 0).then(signal).alias("utilization_signal"),
        pl.col("fb_used_mib_max").alias("peak_fb_used_mib"),
        (pl.col("fb_used_mib_sum") / pl.when(pl.col("fb_used_mib_n") > 0).then("fb_used_mib_n")).alias(
            "mean_fb_used_mib"
        ),
        pl.col("memory_mib").cast(pl.Float64).alias("card_memory_mib"),
        (pl.col("energy_j") / 3.6e6).alias("energy_kwh"),
        (pl.col("energy_j") / pl.when(pl.col("samples") > 0).then(pl.col("samples") * step)).alias("mean_power_w"),
    )


GPU_SCHEMA = {
    "job_id_raw": pl.String,
    "start_time": pl.String,
    "hostname": pl.String,
    "gpu": pl.Int64,
    "mig_profile": pl.String,
    "gpu_fraction": pl.Float64,
    "gpu_hours": pl.Float64,
    "utilization": pl.Float64,
    "utilization_signal": pl.String,
    "peak_fb_used_mib": pl.Float64,
    "mean_fb_used_mib": pl.Float64,
    "card_memory_mib": pl.Float64,
    "energy_kwh": pl.Float64,
    "mean_power_w": pl.Float64,
}  # fmt: skip (one schema, read as a table)
