"""Rules on the size of an allocation: OVERSIZED (a whole GPU where a MIG slice would do, or
a MIG slice where a smaller one would)."""

from __future__ import annotations

import polars as pl

from transforms.marts.flag_rules import Rule, Thresholds, emit, gib, judged, pct
from transforms.marts.flag_rules.activity import is_zero_util

MIG_COMPUTE_SLICES = 7
# NVIDIA's MIG profile shapes below the whole GPU: (compute slices of 7, memory eighths of 8).
# On an 80 GB card they are 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb (7g.80gb is the whole card);
# the memory part of the name scales with the card: H200 141 GB -> 1g.18gb, 2g.35gb,
# 3g.71gb, 4g.71gb; A100 40 GB -> 1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb; H100 NVL 94 GB -> 1g.12gb.
MIG_SHAPES = ((1, 1), (2, 2), (3, 4), (4, 4))


def nominal_card_gb() -> pl.Expr:
    """The card's marketing size from ``card_memory_mib``: GiB rounded up (H200 143771 MiB ->
    141, H100 81559 -> 80, A100 40960 -> 40, H100 NVL 95830 -> 94)."""
    return (pl.col("card_memory_mib") / 1024).ceil()


def profile_gb(eighths: int) -> pl.Expr:
    """The GB in the profile name: the nominal size x eighths/8, rounded half up (141/8 -> 18)."""
    return (nominal_card_gb() * eighths / 8 + 0.5).floor().cast(pl.Int64)


def _fits(slices: int, eighths: int, headroom: float) -> pl.Expr:
    compute_ok = pl.col("utilization") * headroom <= slices / MIG_COMPUTE_SLICES
    memory_ok = pl.col("peak_fb_used_mib") * headroom <= pl.col("card_memory_mib") * eighths / 8
    return compute_ok & memory_ok


def smallest_profile(headroom: float) -> tuple[pl.Expr, pl.Expr]:
    """(profile name, its compute slices) of the smallest MIG shape the run fits, else null."""
    name, slices = pl.lit(None, pl.String), pl.lit(None, pl.Int64)
    for shape_slices, eighths in reversed(MIG_SHAPES):
        fits = _fits(shape_slices, eighths, headroom)
        label = pl.format("{}g.{}gb", pl.lit(shape_slices), profile_gb(eighths))
        name = pl.when(fits).then(label).otherwise(name)
        slices = pl.when(fits).then(pl.lit(shape_slices, pl.Int64)).otherwise(slices)
    return name, slices


def whole_gpus() -> pl.Expr:
    return pl.col("mig_profile").is_null()


def oversized(jobs: pl.DataFrame, t: Thresholds) -> pl.DataFrame:
    """A single whole-GPU run (not ZERO_UTIL: an idle job should end, not shrink) below
    ``oversized_max_utilization`` whose peak memory and activity, times
    ``oversized_headroom``, fit a MIG slice below the whole card: low.
    Wasted: the GPU-hours the slice would have left to others (1 - slices/7)."""
    name, slices = smallest_profile(t.oversized_headroom)
    candidates = (
        jobs.filter(
            judged(t)
            & ~is_zero_util(t)
            & whole_gpus()
            & (pl.col("gpus") == 1.0)
            & (pl.col("utilization") < t.oversized_max_utilization)
            & pl.col("peak_fb_used_mib").is_not_null()
            & (pl.col("card_memory_mib") > 0)
        )
        .with_columns(_profile=name, _slices=slices)
        .filter(pl.col("_profile").is_not_null())
    )
    detail = pl.format(
        "{} {}% and peak memory {} GiB of the card's {} GiB: fits a {} MIG slice ({}/7 of the compute)",
        pl.col("utilization_signal"),
        pct("utilization"),
        gib("peak_fb_used_mib"),
        gib("card_memory_mib"),
        pl.col("_profile"),
        pl.col("_slices"),
    )
    recommendation = pl.format("Would fit a MIG slice: request {} instead of a whole GPU.", pl.col("_profile"))
    wasted = pl.col("gpu_hours") * (1.0 - pl.col("_slices") / MIG_COMPUTE_SLICES)
    return emit(candidates, "OVERSIZED", detail, wasted, recommendation=recommendation)


def _slices_of_profile() -> pl.Expr:
    """Compute slices of the run's MIG profile (``"3g.40gb"`` -> 3), null when not one."""
    return pl.col("mig_profile").str.extract(r"^(\d+)g\.", 1).cast(pl.Int64, strict=False)


def oversized_mig(jobs: pl.DataFrame, t: Thresholds) -> pl.DataFrame:
    """A run on one MIG instance (not ZERO_UTIL) below ``oversized_max_utilization`` whose
    activity and peak memory, times ``oversized_headroom``, fit a smaller MIG shape: low.
    Activity and memory are the instance's own (DCGM reports both per instance), so a shape
    of ``s`` slices and ``e`` memory eighths fits when utilization x current slices x headroom
    <= s and peak memory x headroom <= the instance's memory x e / its own eighths.
    Recommends the shape by its compute slices (the memory part of the name depends on the
    card). Wasted: the GPU-hours the smaller slice would have left (1 - s / current slices)."""
    current = _slices_of_profile()
    eighths = dict((*MIG_SHAPES, (MIG_COMPUTE_SLICES, 8)))
    current_eighths = current.replace_strict(eighths, default=None, return_dtype=pl.Int64)
    slices = pl.lit(None, pl.Int64)
    for shape_slices, shape_eighths in reversed(MIG_SHAPES):
        fits = (
            (current > shape_slices)
            & (shape_eighths <= current_eighths)
            & (pl.col("utilization") * current * t.oversized_headroom <= shape_slices)
            & (
                pl.col("peak_fb_used_mib") * t.oversized_headroom
                <= pl.col("card_memory_mib") * shape_eighths / current_eighths
            )
        )
        slices = pl.when(fits).then(pl.lit(shape_slices, pl.Int64)).otherwise(slices)
    one_instance = (pl.col("gpus") * MIG_COMPUTE_SLICES - current).abs() < 1e-6
    candidates = (
        jobs.filter(
            judged(t)
            & ~is_zero_util(t)
            & ~whole_gpus()
            & current.is_not_null()
            & current_eighths.is_not_null()
            & one_instance
            & (pl.col("utilization") < t.oversized_max_utilization)
            & pl.col("peak_fb_used_mib").is_not_null()
            & (pl.col("card_memory_mib") > 0)
        )
        .with_columns(_slices=slices, _current=current)
        .filter(pl.col("_slices").is_not_null())
    )
    detail = pl.format(
        "{} {}% and peak memory {} GiB of the {} instance's {} GiB: fits a {}g slice ({}/{} of its compute)",
        pl.col("utilization_signal"),
        pct("utilization"),
        gib("peak_fb_used_mib"),
        pl.col("mig_profile"),
        gib("card_memory_mib"),
        pl.col("_slices"),
        pl.col("_slices"),
        pl.col("_current"),
    )
    recommendation = pl.format(
        "Would fit a smaller MIG slice: request a {}g profile instead of {}.", pl.col("_slices"), pl.col("mig_profile")
    )
    wasted = pl.col("gpu_hours") * (1.0 - pl.col("_slices") / pl.col("_current"))
    return emit(candidates, "OVERSIZED", detail, wasted, recommendation=recommendation)


RULES: tuple[Rule, ...] = (oversized, oversized_mig)
