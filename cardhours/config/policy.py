"""Money and rules: rates, review flag thresholds, department quotas."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from cardhours.config.base import (
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
from cardhours.config.rates import RatesConfig  # the rates models live there (chargeback, issue 6)

__all__ = ["FlagsConfig", "QuotasConfig", "RatesConfig"]


class FlagsConfig(StrictModel):
    """Thresholds of the monthly review. Activity values are ratios 0-1 (50 % = 0.50)."""

    zero_util_threshold: Ratio = 0.01
    zero_util_user_gpu_hours: PositiveFloat = 24.0
    low_util_high: PositiveRatio = 0.15
    low_util_medium: PositiveRatio = 0.25
    min_runtime_minutes: NonNegativeFloat = 30.0
    memory_held_fraction: PositiveRatio = 0.10
    busy_engine_threshold: PositiveRatio = 0.50
    idle_sm_threshold: PositiveRatio = 0.05
    idle_tail_hours: PositiveFloat = 2.0
    debug_partition: Text = "debug"
    debug_max_hours: PositiveFloat = 24.0
    debug_max_concurrent_jobs: PositiveInt = 2
    low_efficiency_gpu_hours: NonNegativeFloat = 50.0
    low_efficiency_utilization: PositiveRatio = 0.25
    memory_held_max_activity: Ratio = 0.05
    low_util_exempt_memory_bound: bool = False
    memory_efficiency_threshold: PositiveRatio = 0.80
    input_bound_min_activity: Ratio = 0.02
    input_bound_max_activity: PositiveRatio = 0.50
    input_bound_min_sm_per_engine: PositiveRatio = 0.50
    input_bound_min_steady_share: PositiveRatio = 0.75
    oversized_max_utilization: PositiveRatio = 0.25
    oversized_headroom: Annotated[float, Field(ge=1.0)] = 1.2

    @model_validator(mode="after")
    def _severity_order(self) -> FlagsConfig:
        problems = []
        if self.low_util_high > self.low_util_medium:
            problems.append((("low_util_high",), (
                f"must not exceed low_util_medium ({self.low_util_medium}): "
                "high severity is the lower utilization band"
            )))
        if self.input_bound_min_activity >= self.input_bound_max_activity:
            problems.append((("input_bound_min_activity",), (
                f"must be below input_bound_max_activity ({self.input_bound_max_activity})"
            )))
        raise_problems(problems)
        return self


class QuotasConfig(StrictModel):
    """GPUs per department; their sum may exceed the GPU capacity of all clusters by
    ``overcommit_ratio`` (1.0: quotas never promise more than exists)."""

    overcommit_ratio: PositiveFloat = 1.0
    departments: dict[str, NonNegativeInt] = Field(default_factory=dict)
