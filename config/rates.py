"""Prices: per-model GPU-hour rates with effective dates, multipliers, MIG weights, the
idle-capacity policy and the FOCUS identity of the chargeback export (docs/chargeback.md)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from config.base import (
    Loc,
    NonNegativeFloat,
    PositiveRatio,
    StrictModel,
    Text,
    did_you_mean,
    raise_problems,
)
from config.inventory import MIG_SLICES_PER_GPU, MigProfile, parse_mig_profile

if TYPE_CHECKING:
    import polars as pl

_CURRENCY = re.compile(r"^[A-Z]{3}$")
IdlePolicy = Literal["none", "proportional", "even"]


def _utc_instant(value: object) -> datetime:
    """A TOML date or datetime as a naive UTC instant, whole seconds (a date is its midnight UTC;
    a datetime without offset is read as UTC; one with an offset is converted)."""
    if not isinstance(value, date):
        raise ValueError(f"must be a TOML date-time such as 2026-10-15T00:00:00Z or a date (got {value!r})")
    if not isinstance(value, datetime):
        return datetime.combine(value, time())
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    if value.microsecond:
        raise ValueError(f"must be whole seconds (got {value.isoformat()})")
    return value


Instant = Annotated[datetime, BeforeValidator(_utc_instant)]


def price_decimal(value: float) -> Decimal:
    """A configured price (TOML float) as the decimal it was written as: 2.5 -> Decimal("2.5")."""
    return Decimal(repr(float(value)))


class PriceChange(StrictModel):
    """A new GPU-hour price of one model from ``effective`` (UTC) on."""

    gpu_model: Text
    gpu_hour: NonNegativeFloat
    effective: Instant


class FocusIdentity(StrictModel):
    """Who bills whom in the FOCUS 1.2 export (InvoiceId: docs/chargeback.md, "Invoices")."""

    billing_account_id: Text = "cardhours"
    billing_account_name: Text = "GPU cluster chargeback"
    invoice_issuer_name: Text = "Research Computing"
    provider_name: Text = "Research Computing"
    publisher_name: Text = "Research Computing"
    service_name: Text = "GPU Compute"


class RatesConfig(StrictModel):
    """Prices per GPU-hour and the share of a GPU each MIG profile counts for.

    ``gpu_hour`` holds each model's price from the beginning; ``price_changes`` later prices
    with the instant they take effect. A job's price is the model's price x the partition's
    and the QOS's multipliers (1.0 when not listed)."""

    currency: str
    gpu_hour: dict[Text, NonNegativeFloat]
    mig_profile_weights: dict[MigProfile, PositiveRatio] = Field(default_factory=dict)
    price_changes: list[PriceChange] = Field(default_factory=list)
    partition_multipliers: dict[Text, NonNegativeFloat] = Field(default_factory=dict)
    qos_multipliers: dict[Text, NonNegativeFloat] = Field(default_factory=dict)
    idle_capacity: IdlePolicy = "none"
    focus: FocusIdentity = Field(default_factory=FocusIdentity)

    @field_validator("currency")
    @classmethod
    def _iso_4217(cls, value: str) -> str:
        if not _CURRENCY.match(value):
            raise ValueError(f"must be a 3-letter uppercase ISO 4217 code such as 'EUR' or 'USD' (got {value!r})")
        return value

    @model_validator(mode="after")
    def _changes_have_models(self) -> RatesConfig:
        problems: list[tuple[Loc, str]] = []
        seen: dict[tuple[str, datetime], int] = {}
        for index, change in enumerate(self.price_changes):
            loc: Loc = ("price_changes", index)
            if change.gpu_model not in self.gpu_hour:
                problems.append(
                    (
                        (*loc, "gpu_model"),
                        (
                            f"no base price for gpu_model {change.gpu_model!r} in rates.gpu_hour"
                            f"{did_you_mean(change.gpu_model, self.gpu_hour)}"
                        ),
                    )
                )
            key = (change.gpu_model, change.effective)
            if key in seen:
                problems.append(
                    (
                        (*loc, "effective"),
                        (
                            f"{change.gpu_model!r} already changes price at {change.effective.isoformat()} "
                            f"(price_changes[{seen[key]}])"
                        ),
                    )
                )
            seen.setdefault(key, index)
        raise_problems(problems)
        return self

    def mig_weight(self, profile: str) -> float:
        """The configured weight, else compute slices / 7 ("3g.40gb" -> 3/7, "7g.80gb" -> 1.0)."""
        spec = parse_mig_profile(profile)
        return self.mig_profile_weights.get(profile, spec.slices / MIG_SLICES_PER_GPU)

    def gpu_hour_rate(self, gpu_model: str) -> float:
        """Base price of one GPU-hour of this model (``KeyError`` if not configured); price
        changes are in ``price_segments``."""
        return self.gpu_hour[gpu_model]

    def price_segments(
        self, gpu_model: str, start: datetime, end: datetime
    ) -> list[tuple[datetime, datetime, Decimal]]:
        """``[start, end)`` cut at this model's price changes: (from, to, price per GPU-hour)."""
        changes = sorted((c.effective, c.gpu_hour) for c in self.price_changes if c.gpu_model == gpu_model)
        price = price_decimal(self.gpu_hour[gpu_model])
        bounds: list[tuple[datetime, Decimal]] = [(start, price)]
        for effective, value in changes:
            if effective <= start:
                bounds[0] = (start, price_decimal(value))
            elif effective < end:
                bounds.append((effective, price_decimal(value)))
        ends = [b[0] for b in bounds[1:]] + [end]
        return [(s, e, p) for (s, p), e in zip(bounds, ends, strict=True)]

    def multiplier(self, partition: str | None, qos: str | None) -> Decimal:
        """The partition multiplier x the QOS multiplier (each 1 when not configured)."""
        part = self.partition_multipliers.get(partition or "", 1.0)
        q = self.qos_multipliers.get(qos or "", 1.0)
        return price_decimal(part) * price_decimal(q)


def price_frame(rates: RatesConfig, start: datetime, end: datetime) -> pl.DataFrame:
    """One row per configured model and price segment of ``[start, end)``: ``gpu_model``,
    ``charge_period_start``, ``charge_period_end``, ``list_unit_price`` (Decimal text, exact)."""
    import polars as pl

    rows = [
        (model, seg_start, seg_end, str(price))
        for model in sorted(rates.gpu_hour)
        for seg_start, seg_end, price in rates.price_segments(model, start, end)
    ]
    return pl.DataFrame(
        rows,
        schema={
            "gpu_model": pl.String,
            "charge_period_start": pl.Datetime("us"),
            "charge_period_end": pl.Datetime("us"),
            "list_unit_price": pl.String,
        },
        orient="row",
    )


def multiplier_frame(multipliers: dict[str, float], key: str) -> pl.DataFrame:
    """``key``, ``multiplier`` (Decimal text) for the partition or QOS multipliers."""
    import polars as pl

    rows = [(name, str(price_decimal(value))) for name, value in sorted(multipliers.items())]
    return pl.DataFrame(rows, schema={key: pl.String, "multiplier": pl.String}, orient="row")
