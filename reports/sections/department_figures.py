"""A department page's month at a glance: its GPU-hours, utilization, idle GPU-hours (with this
month's idle cost), flagged jobs and, when it used one cluster, its p95 queue wait."""

from __future__ import annotations

from datetime import date
from typing import Any

from reports.data import ReviewInputs, previous_month
from reports.html import fmt_int, fmt_pct
from reports.pricing import priced_sum
from reports.sections.key_figures import KeyFigure, figure, flagged_figure, pairs, queue_figure, ratio, single, sums

DEPARTMENT_SUMS = ("gpu_hours", "measured_gpu_hours", "active_gpu_hours", "idle_gpu_hours", "job_count")


def department_totals(mine: ReviewInputs, month: date) -> dict[str, Any] | None:
    """One department's figures of ``month`` (``mine``: the inputs narrowed to it)."""
    totals = sums(mine.departments, month, DEPARTMENT_SUMS)
    if totals is None:
        return None
    flags = sums(mine.flag_months, month, ("flagged_job_count", "wasted_gpu_hours")) or {}  # {}: no user rows
    return totals | {
        "utilization": ratio(totals["active_gpu_hours"], totals["measured_gpu_hours"]),
        "flagged": flags.get("flagged_job_count"),
        "wasted": flags.get("wasted_gpu_hours"),
        "queue_p50": single(mine.departments, month, "queue_seconds_p50"),
        "queue_p95": single(mine.departments, month, "queue_seconds_p95"),
    }


def department_figures(mine: ReviewInputs) -> list[KeyFigure]:
    """A department's tiles (``mine``: the inputs narrowed to it; empty: no rows this month)."""
    now = department_totals(mine, mine.month)
    if now is None:
        return []
    pair = pairs(now, department_totals(mine, previous_month(mine.month)))
    currency = mine.settings.currency or "currency"
    idle_cost = mine.jobs.select(priced_sum("idle_cost")).item()
    tiles = [
        figure(
            "GPU-hours used",
            fmt_int(now["gpu_hours"]),
            f"by {fmt_int(now['job_count'])} jobs",
            pair("gpu_hours"),
            "amount",
            None,
        ),
        figure(
            "Utilization",
            fmt_pct(now["utilization"]),
            f"{fmt_int(now['active_gpu_hours'])} of {fmt_int(now['measured_gpu_hours'])} measured GPU-hours active",
            pair("utilization"),
            "points",
            "up",
        ),
        figure(
            "Idle GPU-hours",
            fmt_int(now["idle_gpu_hours"]),
            f"idle cost {fmt_int(idle_cost)} {currency} this month",
            pair("idle_gpu_hours"),
            "amount",
            "down",
        ),
    ]
    if now["flagged"] is not None:
        tiles.append(flagged_figure(now, pair("flagged")))
    if now["queue_p95"] is not None:
        tiles.append(queue_figure(pair("queue_p95"), now["queue_p50"]))
    return tiles
