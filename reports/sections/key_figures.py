"""The month at a glance: a row of the few figures a manager acts on, each with its change
against the previous month, above every table. The review's are the site's (all clusters
together); a department page's are the department's (``reports.sections.department_figures``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

import polars as pl

from contracts.capacity_states import PLATFORM_STATES
from reports.change import Better, Change, Kind, change
from reports.data import ReviewInputs, previous_month
from reports.html import Section, fmt_int, fmt_minutes, fmt_pct

HOURS = ("capacity_gpu_hours", "allocated_gpu_hours", "active_gpu_hours", "idle_gpu_hours")


@dataclass(frozen=True)
class KeyFigure:
    """One tile: what (with its unit), the value, one line of context and the change."""

    label: str
    value: str
    detail: str
    change: Change


def ratio(num: Any, den: Any) -> float | None:
    return num / den if num is not None and den else None


def sums(frame: pl.DataFrame, month: date, columns: tuple[str, ...]) -> dict[str, Any] | None:
    """``columns`` summed over the month's rows; None when the month has no rows."""
    rows = frame.filter(pl.col("month") == month)
    return None if rows.is_empty() else rows.select(pl.col(c).sum() for c in columns).row(0, named=True)


def single(frame: pl.DataFrame, month: date, column: str) -> Any:
    """The month's value of a per-cluster figure that does not add up (a median): only with
    one row, else None."""
    rows = frame.filter(pl.col("month") == month)
    return rows[column][0] if rows.height == 1 else None


def figure(label: str, value: str, detail: str, pair: tuple[Any, Any], kind: Kind, better: Better) -> KeyFigure:
    now, before = pair
    return KeyFigure(label, value, detail, change(now, before, kind, better, fmt_int))


def month_totals(inputs: ReviewInputs, month: date) -> dict[str, Any] | None:
    """The site's figures of ``month`` (None: no cluster rows that month)."""
    totals = sums(inputs.clusters, month, HOURS)
    if totals is None:
        return None
    costs = sums(inputs.models, month, ("workload_idle_cost",)) or {"workload_idle_cost": None}
    flags = sums(inputs.flag_months, month, ("flagged_job_count", "wasted_gpu_hours"))
    states = sums(inputs.states, month, ("capacity_gpu_hours", *(f"{s}_gpu_hours" for s in PLATFORM_STATES)))
    down = None if states is None else sum(states[f"{s}_gpu_hours"] or 0.0 for s in PLATFORM_STATES)
    return (
        totals
        | costs
        | {
            "utilization": ratio(totals["active_gpu_hours"], totals["allocated_gpu_hours"]),
            "allocated_share": ratio(totals["allocated_gpu_hours"], totals["capacity_gpu_hours"]),
            "flagged": (flags or {}).get("flagged_job_count"),  # None: no user rows that month
            "wasted": (flags or {}).get("wasted_gpu_hours"),
            "down": down,
            "availability": None
            if states is None
            else ratio(states["capacity_gpu_hours"] - down, states["capacity_gpu_hours"]),
            "queue_p50": single(inputs.clusters, month, "queue_seconds_p50"),
            "queue_p95": single(inputs.clusters, month, "queue_seconds_p95"),
        }
    )


def pairs(now: dict[str, Any], before: dict[str, Any] | None) -> Callable[[str], tuple[Any, Any]]:
    """key -> (this month's value, the previous month's or None)."""
    return lambda key: (now[key], None if before is None else before[key])


def fmt_wait(seconds: Any) -> str:
    """A queue wait for a reader: minutes up to two hours, hours above."""
    if seconds is None:
        return "n/a"
    return f"{seconds / 3600:,.1f} h" if abs(seconds) >= 7200 else f"{fmt_minutes(seconds)} min"


def queue_figure(pair: tuple[Any, Any], p50: Any) -> KeyFigure:
    """The p95 wait: the median is often 0 (most jobs start at once), the tail is what users feel."""
    return figure("Queue wait, p95", fmt_wait(pair[0]), f"median {fmt_wait(p50)}", pair, "minutes", "down")


def flagged_figure(now: dict[str, Any], pair: tuple[Any, Any]) -> KeyFigure:
    """Runs with a flag (each once) and the GPU-hours they waste; a month whose users mart has
    rows but no flag had 0, a month without rows is no month to compare with."""
    wasted = f"wasting {fmt_int(now['wasted'])} GPU-hours"
    return figure("Flagged jobs", fmt_int(now["flagged"]), wasted, pair, "amount", "down")


def review_figures(inputs: ReviewInputs) -> list[KeyFigure]:
    """The site's tiles for the reviewed month (empty: no cluster rows)."""
    now = month_totals(inputs, inputs.month)
    if now is None:
        return []
    pair = pairs(now, month_totals(inputs, previous_month(inputs.month)))
    currency = inputs.settings.currency or "currency"
    tiles = [
        figure(
            "GPU-hours allocated",
            fmt_int(now["allocated_gpu_hours"]),
            f"{fmt_pct(now['allocated_share'])} of {fmt_int(now['capacity_gpu_hours'])} GPU-hours capacity",
            pair("allocated_gpu_hours"),
            "amount",
            "up",
        ),
        figure(
            "Utilization",
            fmt_pct(now["utilization"]),
            f"{fmt_int(now['active_gpu_hours'])} of the allocated GPU-hours active",
            pair("utilization"),
            "points",
            "up",
        ),
        figure(
            f"Idle cost ({currency})",
            fmt_int(now["workload_idle_cost"]),
            f"{fmt_int(now['idle_gpu_hours'])} GPU-hours allocated, not active",
            pair("workload_idle_cost"),
            "amount",
            "down",
        ),
    ]
    if now["flagged"] is not None:
        tiles.append(flagged_figure(now, pair("flagged")))
    if now["availability"] is not None:
        down = f"{fmt_int(now['down'])} GPU-hours down or in maintenance"
        tiles.append(figure("Availability", fmt_pct(now["availability"]), down, pair("availability"), "points", "up"))
    if now["queue_p95"] is not None:
        tiles.append(queue_figure(pair("queue_p95"), now["queue_p50"]))
    return tiles


def key_figures_section(tiles: list[KeyFigure], month: date) -> Section | None:
    if not tiles:
        return None
    values = {"figures": tiles, "previous": f"{previous_month(month):%Y-%m}"}
    return Section("key-figures", f"{month:%B %Y} at a glance", "sections/key_figures.html", values, "compact")


def review_key_figures_section(inputs: ReviewInputs) -> Section | None:
    return key_figures_section(review_figures(inputs), inputs.month)
