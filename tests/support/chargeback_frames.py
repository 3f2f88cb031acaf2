"""Crafted inputs for the chargeback tests: fct_job_usage rows, rates, the whole pipeline in memory."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import polars as pl

from config.rates import RatesConfig, multiplier_frame, price_frame
from transforms.marts.charge_idle import int_charge_idle
from transforms.marts.charge_lines import int_charge_lines
from transforms.marts.fct_chargeback_focus import fct_chargeback_focus
from transforms.marts.fct_chargeback_jobs import fct_chargeback_jobs
from transforms.marts.fct_job_usage import SCHEMA as USAGE_SCHEMA

MONTH = date(2026, 10, 1)
START, END = datetime(2026, 10, 1), datetime(2026, 11, 1)
HOURS = 744


def run(
    job_id: str,
    start: datetime,
    hours: float,
    *,
    gpus: float = 1.0,
    department: str = "nlp",
    division: str = "research",
    gpu_model: str | None = "H100",
    partition: str = "gpu",
    qos: str = "normal",
    utilization: float | None = 0.5,
    account: str = "nlp-train",
    month_start: datetime = START,
    month_end: datetime = END,
) -> dict[str, Any]:
    """A fct_job_usage row of a run that starts at ``start`` and lasts ``hours`` (clipped to the month)."""
    end = start + timedelta(hours=hours)
    held = max(min(end, month_end) - max(start, month_start), timedelta(0))
    elapsed = int(held.total_seconds())
    row: dict[str, Any] = {c: None for c in USAGE_SCHEMA}
    gpu_hours = gpus * elapsed / 3600
    row.update(
        cluster="c1",
        scheduler="slurm",
        job_id=job_id,
        job_id_raw=job_id,
        job_name="j",
        user_name="u",
        account=account,
        department=department,
        division=division,
        partition_name=partition,
        qos=qos,
        state="COMPLETED",
        start_time=start,
        end_time=end,
        is_open=False,
        gpus=gpus,
        gpu_model=gpu_model,
        elapsed_seconds=elapsed,
        gpu_hours=gpu_hours,
        utilization=utilization,
        active_gpu_hours=None if utilization is None else gpu_hours * utilization,
        month=month_start.date(),
    )
    return row


def usage(*rows: dict[str, Any]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=USAGE_SCHEMA)


def rates(**extra: Any) -> RatesConfig:
    return RatesConfig.model_validate({"currency": "EUR", "gpu_hour": {"H100": 2.5, "A100": 1.4}, **extra})


def capacity(h100_gpus: float = 8, mig_slices: dict[str, float] | None = None, hours: float = HOURS) -> pl.DataFrame:
    """Capacity of cluster c1: ``h100_gpus`` whole H100s and MIG instance counts per A100 profile."""
    rows = [("c1", "H100", h100_gpus * hours)]
    for profile, gpus in (mig_slices or {}).items():
        rows.append(("c1", f"A100 {profile}", gpus * hours))
    return pl.DataFrame(
        rows, schema={"cluster": pl.String, "gpu_model": pl.String, "capacity_gpu_hours": pl.Float64}, orient="row"
    )


@dataclass(frozen=True)
class Built:
    lines: pl.DataFrame
    idle: pl.DataFrame
    focus: pl.DataFrame
    jobs: pl.DataFrame


IDENTITY = {
    "currency": "EUR",
    "billing_account_id": "acct",
    "billing_account_name": "GPU chargeback",
    "invoice_issuer_name": "RC",
    "provider_name": "RC",
    "publisher_name": "RC",
    "service_name": "GPU Compute",
}


def build(
    job_usage: pl.DataFrame,
    config: RatesConfig | None = None,
    cap: pl.DataFrame | None = None,
    month: date = MONTH,
    platform: pl.DataFrame | None = None,
) -> Built:
    """The chargeback transforms in order, as the assets call them."""
    config = config or rates()
    start = datetime(month.year, month.month, 1)
    end = datetime(month.year + (month.month == 12), month.month % 12 + 1, 1)
    prices = price_frame(config, start, end)
    lines = int_charge_lines(
        job_usage,
        prices,
        multiplier_frame(config.partition_multipliers, "partition_name"),
        multiplier_frame(config.qos_multipliers, "qos"),
        start,
        end,
    )
    cap = capacity() if cap is None else cap
    idle = int_charge_idle(lines, cap, prices, config.idle_capacity, start, end, platform)
    identity = {**IDENTITY, "currency": config.currency}
    return Built(
        lines,
        idle,
        fct_chargeback_focus(lines, idle, month, identity, {"nlp": "Language Models"}),
        fct_chargeback_jobs(lines, month, config.currency),
    )
