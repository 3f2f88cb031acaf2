"""Money and rules: rates, review flag thresholds, department quotas."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

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
from cardhours.config.inventory import MIG_SLICES_PER_GPU, MigProfile, parse_mig_profile

_CURRENCY = re.compile(r"^[A-Z]{3}$")


class RatesConfig(StrictModel):
    """Prices per GPU-hour and the share of a GPU each MIG profile counts for."""

    currency: str
    gpu_hour: dict[Text, NonNegativeFloat]
    mig_profile_weights: dict[MigProfile, PositiveRatio] = Field(default_factory=dict)

    @field_validator("currency")
    @classmethod
    def _iso_4217(cls, value: str) -> str:
        if not _CURRENCY.match(value):
            raise ValueError(f"must be a 3-letter uppercase ISO 4217 code such as 'EUR' or 'USD' (got {value!r})")
        return value

    def mig_weight(self, profile: str) -> float:
        """The configured weight, else compute slices / 7 ("3g.40gb" -> 3/7, "7g.80gb" -> 1.0)."""
        spec = parse_mig_profile(profile)
        return self.mig_profile_weights.get(profile, spec.slices / MIG_SLICES_PER_GPU)

    def gpu_hour_rate(self, gpu_model: str) -> float:
        """Price of one GPU-hour of this model (``KeyError`` if not configured)."""
        return self.gpu_hour[gpu_model]


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

    @model_validator(mode="after")
    def _severity_order(self) -> FlagsConfig:
        if self.low_util_high > self.low_util_medium:
            raise_problems([(("low_util_high",), (
                f"must not exceed low_util_medium ({self.low_util_medium}): "
                "high severity is the lower utilization band"
            ))])
        return self


class QuotasConfig(StrictModel):
    """GPUs per department; their sum may exceed the GPU capacity of all clusters by
    ``overcommit_ratio`` (1.0: quotas never promise more than exists)."""

    overcommit_ratio: PositiveFloat = 1.0
    departments: dict[str, NonNegativeInt] = Field(default_factory=dict)
