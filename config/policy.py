"""Money and rules: rates, review flag thresholds, department quotas."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from config.base import (
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    PositiveRatio,
    Ratio,
    StrictModel,
    Text,
    raise_problems,
)
from config.rates import RatesConfig  # the rates models live there (chargeback, issue 6)

__all__ = ["FlagsConfig", "QuotasConfig", "RatesConfig"]


class FlagsConfig(StrictModel):
    """Thresholds of the monthly review: the one declaration of their names, bounds, defaults
    and units (the rules in transforms/marts/flag_rules read this model as it is). Activity values
    are ratios 0-1 (50 % = 0.50); docs/marts.md describes each rule."""

    zero_util_threshold: Ratio = Field(0.01, description="activity (ratio) at or below which a run is idle: ZERO_UTIL")
    zero_util_user_gpu_hours: PositiveFloat = Field(
        24.0, description="zero-activity GPU-hours of a user in a month above which the user is flagged"
    )
    low_util_high: PositiveRatio = Field(0.15, description="LOW_UTIL is high below this utilization (ratio)")
    low_util_medium: PositiveRatio = Field(0.25, description="LOW_UTIL is medium below this utilization (ratio)")
    min_runtime_minutes: NonNegativeFloat = Field(
        30.0, description="minutes of runtime in the month before a run's activity is judged"
    )
    memory_held_fraction: PositiveRatio = Field(
        0.10, description="MEMORY_HELD_IDLE: mean GPU memory used above this share of the card (ratio)"
    )
    busy_engine_threshold: PositiveRatio = Field(
        0.50, description="BUSY_ENGINE_IDLE_SMS: GPU_UTIL or GR_ENGINE_ACTIVE mean at or above this (ratio)"
    )
    idle_sm_threshold: PositiveRatio = Field(
        0.05, description="BUSY_ENGINE_IDLE_SMS: ... while the SM_ACTIVE mean is below this (ratio)"
    )
    idle_tail_hours: PositiveFloat = Field(2.0, description="IDLE_TAIL: hours at zero activity before the run ended")
    debug_partition: Text = Field("debug", description="DEBUG_OVER_LIMIT: the Slurm partition for short tests")
    debug_max_hours: PositiveFloat = Field(24.0, description="DEBUG_OVER_LIMIT: hours a debug run may last")
    # 3, not 2: on the demo month a limit of 2 flagged 25 short runs (23 GPU-hours, 15 of them
    # healthy work) of users with three small tests at once; none ran more (benchmarks/README.md).
    debug_max_concurrent_jobs: PositiveInt = Field(
        3, description="DEBUG_OVER_LIMIT: debug runs a user may have running at once"
    )
    low_efficiency_gpu_hours: NonNegativeFloat = Field(
        50.0, description="low efficiency: users/departments with at least these GPU-hours in the month ..."
    )
    low_efficiency_utilization: PositiveRatio = Field(
        0.25, description="... and a utilization (ratio) at or below this"
    )
    memory_held_max_activity: Ratio = Field(
        0.05, description="MEMORY_HELD_IDLE: utilization (ratio) at or below this is near zero"
    )
    low_util_exempt_memory_bound: bool = Field(
        False, description="true: no LOW_UTIL for runs at or above memory_efficiency_threshold"
    )
    memory_efficiency_threshold: PositiveRatio = Field(
        0.80, description="peak GPU memory used / the card's memory (ratio) that makes a run memory-bound"
    )
    input_bound_min_activity: Ratio = Field(
        0.02, description="INPUT_BOUND: the GR_ENGINE_ACTIVE mean band starts here (ratio) ..."
    )
    input_bound_max_activity: PositiveRatio = Field(0.50, description="... and ends below this (ratio)")
    input_bound_min_sm_per_engine: PositiveRatio = Field(
        0.50, description="INPUT_BOUND: SM_ACTIVE / GR_ENGINE_ACTIVE at least this (ratio)"
    )
    input_bound_min_steady_share: PositiveRatio = Field(
        0.75, description="INPUT_BOUND: share (ratio) of the run's measured samples in hours inside the band"
    )
    oversized_max_utilization: PositiveRatio = Field(
        0.25, description="OVERSIZED: single-GPU or single-slice runs below this utilization (ratio) ..."
    )
    oversized_headroom: Annotated[float, Field(ge=1.0)] = Field(
        1.2, description="... that fit a smaller MIG slice with this factor on memory and compute"
    )

    @model_validator(mode="after")
    def _severity_order(self) -> FlagsConfig:
        problems = []
        if self.low_util_high > self.low_util_medium:
            problems.append(
                (
                    ("low_util_high",),
                    (
                        f"must not exceed low_util_medium ({self.low_util_medium}): "
                        "high severity is the lower utilization band"
                    ),
                )
            )
        if self.input_bound_min_activity >= self.input_bound_max_activity:
            problems.append(
                (
                    ("input_bound_min_activity",),
                    (f"must be below input_bound_max_activity ({self.input_bound_max_activity})"),
                )
            )
        raise_problems(problems)
        return self


class QuotasConfig(StrictModel):
    """GPUs per department; their sum may exceed the GPU capacity of all clusters by
    ``overcommit_ratio`` (1.0: quotas never promise more than exists)."""

    overcommit_ratio: PositiveFloat = 1.0
    departments: dict[str, NonNegativeInt] = Field(default_factory=dict)
