"""Rules on how busy a job's GPUs were: ZERO_UTIL, LOW_UTIL, MEMORY_HELD_IDLE,
BUSY_ENGINE_IDLE_SMS, INPUT_BOUND. All judge only runs with samples and at least
``min_runtime_minutes`` of runtime in the month (``judged``)."""

from __future__ import annotations

import polars as pl

from transforms.marts.flag_rules import Rule, Thresholds, emit, gib, judged, pct

IDLE = pl.col("idle_gpu_hours")


def engine_busy_mean() -> pl.Expr:
    """The larger of the GPU_UTIL and GR_ENGINE_ACTIVE means (0 when neither is present)."""
    return pl.max_horizontal(pl.col("mean_gpu_util").fill_null(0.0), pl.col("mean_gr_engine_active").fill_null(0.0))


def is_zero_util(t: Thresholds) -> pl.Expr:
    """Utilization at or below ``zero_util_threshold`` and the engine not busy (a busy engine
    with idle SMs is BUSY_ENGINE_IDLE_SMS, not an idle GPU)."""
    return judged(t) & (pl.col("utilization") <= t.zero_util_threshold) & (engine_busy_mean() < t.busy_engine_threshold)


def zero_util(jobs: pl.DataFrame, t: Thresholds) -> pl.DataFrame:
    """Utilization (best signal, run mean) at or below ``zero_util_threshold`` while GPU_UTIL
    and GR_ENGINE_ACTIVE stay below ``busy_engine_threshold``: high."""
    detail = pl.format(
        "{} averaged {}% over {} GPU-hours ({} GPU-hours at zero activity)",
        pl.col("utilization_signal"),
        pct("utilization", 2),
        pl.col("gpu_hours").round(2),
        pl.col("zero_util_gpu_hours").round(2),
    )
    return emit(jobs.filter(is_zero_util(t)), "ZERO_UTIL", detail, IDLE)


def is_memory_bound(t: Thresholds) -> pl.Expr:
    """Memory efficiency (peak GPU memory used / card memory) at least the threshold."""
    return pl.col("memory_efficiency").fill_null(0.0) >= t.memory_efficiency_threshold


def low_util(jobs: pl.DataFrame, t: Thresholds) -> pl.DataFrame:
    """Utilization below ``low_util_medium`` (medium) or ``low_util_high`` (high), above zero-util.

    With ``low_util_exempt_memory_bound``, memory-bound runs (``is_memory_bound``) are exempt.
    """
    util = pl.col("utilization")
    rule = judged(t) & ~is_zero_util(t) & (util < t.low_util_medium)
    if t.low_util_exempt_memory_bound:
        rule = rule & ~is_memory_bound(t)
    high = util < t.low_util_high
    limit = pl.when(high).then(pl.lit(t.low_util_high)).otherwise(pl.lit(t.low_util_medium))
    detail = pl.format(
        "{} averaged {}% (below {}%) over {} GPU-hours; {} idle GPU-hours",
        pl.col("utilization_signal"),
        pct("utilization"),
        pct(limit, 0),
        pl.col("gpu_hours").round(2),
        IDLE.round(2),
    )
    severity = pl.when(high).then(pl.lit("high")).otherwise(pl.lit("medium"))
    return emit(jobs.filter(rule), "LOW_UTIL", detail, IDLE, severity=severity)


def memory_held_idle(jobs: pl.DataFrame, t: Thresholds) -> pl.DataFrame:
    """Mean GPU memory used above ``memory_held_fraction`` of the card while utilization is
    at most ``memory_held_max_activity``: high."""
    rule = (
        judged(t)
        & (pl.col("held_fraction") > t.memory_held_fraction)
        & (pl.col("utilization") <= t.memory_held_max_activity)
    )
    detail = pl.format(
        "held {} GiB of the card's {} GiB on average ({}%, peak {} GiB) while {} averaged {}%",
        gib("mean_fb_used_mib"),
        gib("card_memory_mib"),
        pct("held_fraction"),
        gib("peak_fb_used_mib"),
        pl.col("utilization_signal"),
        pct("utilization", 2),
    )
    return emit(jobs.filter(rule), "MEMORY_HELD_IDLE", detail, IDLE)


def is_busy_engine_idle_sms(t: Thresholds) -> pl.Expr:
    return (
        judged(t)
        & pl.col("mean_sm_active").is_not_null()
        & (engine_busy_mean() >= t.busy_engine_threshold)
        & (pl.col("mean_sm_active") < t.idle_sm_threshold)
    )


def busy_engine_idle_sms(jobs: pl.DataFrame, t: Thresholds) -> pl.DataFrame:
    """GPU_UTIL or GR_ENGINE_ACTIVE mean at least ``busy_engine_threshold`` while the SM_ACTIVE
    mean is below ``idle_sm_threshold`` (needs SM_ACTIVE): medium."""
    rule = is_busy_engine_idle_sms(t)
    detail = pl.format(
        "SM active {}% while GPU_UTIL reads {}% and GR_ENGINE_ACTIVE {}%",
        pct("mean_sm_active", 2),
        pct("mean_gpu_util"),
        pct("mean_gr_engine_active"),
    )
    return emit(jobs.filter(rule), "BUSY_ENGINE_IDLE_SMS", detail, IDLE)


def input_bound(jobs: pl.DataFrame, t: Thresholds) -> pl.DataFrame:
    """Duty cycle: the graphics engine busy only part of the time (GR_ENGINE_ACTIVE mean in
    [input_bound_min_activity, input_bound_max_activity)), its kernels filling the SMs while
    it runs (SM_ACTIVE / GR_ENGINE_ACTIVE >= input_bound_min_sm_per_engine: bursts of real
    work, not tiny kernels), and steady (at least ``input_bound_min_steady_share`` of the
    run's measured samples in hours whose mean is inside the band): medium."""
    engine, sm = pl.col("mean_gr_engine_active"), pl.col("mean_sm_active")
    sm_per_engine = pl.when(engine > 0).then(sm / engine)
    rule = (
        judged(t)
        & engine.is_not_null()
        & sm.is_not_null()
        & (engine >= t.input_bound_min_activity)
        & (engine < t.input_bound_max_activity)
        & (sm_per_engine >= t.input_bound_min_sm_per_engine)
        & (pl.col("steady_share").fill_null(0.0) >= t.input_bound_min_steady_share)
    )
    detail = pl.format(
        "graphics engine busy {}% of the time and SMs active {}% ({}% of the busy time): "
        "compute bursts between idle gaps, steady in {}% of the measured samples",
        pct(engine),
        pct(sm),
        pct(sm_per_engine, 0),
        pct("steady_share", 0),
    )
    return emit(jobs.filter(rule), "INPUT_BOUND", detail, IDLE)


RULES: tuple[Rule, ...] = (zero_util, low_util, memory_held_idle, busy_engine_idle_sms, input_bound)
