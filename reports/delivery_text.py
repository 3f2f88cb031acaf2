"""The plain-text bodies of the delivered mail: the month in a few lines a person reads in any
mail client (no scripts, no HTML), from the same frames and functions as the pages.

Operations read each cluster's capacity, use, utilization and idle cost, and the few flagged
jobs that wasted most; a department's managers read their department's use and its own
flagged jobs. Text from the data (job names, users, departments) is made one printable line
and cut to a readable length: a name cannot add lines, headers or markup to the message.
"""

from __future__ import annotations

import re
from functools import partial

from contracts.flags import FLAG_REASONS
from reports.data import ReviewInputs
from reports.department_page import narrow
from reports.fmt import fmt_float, fmt_int, fmt_pct
from reports.sections.departments import department_rows
from reports.sections.flags import flagged_runs
from reports.sections.headline import headline_frame

TOP_JOBS = 5
fmt_hours = partial(fmt_float, decimals=1)
fmt_money = partial(fmt_float, decimals=2)
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_SUMMARY = {reason.code: reason.summary for reason in FLAG_REASONS}


def one_line(value: object, limit: int = 60) -> str:
    """``value`` as one line of printable text, at most ``limit`` characters."""
    text = " ".join(_UNSAFE.sub(" ", "" if value is None else str(value)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _money(value: object, currency: str) -> str:
    text = fmt_money(value)
    return f"{text} {currency}".strip() if text != "n/a" else "n/a (a GPU model has no price)"


def _count(value: object, noun: str) -> str:
    return f"{fmt_int(value)} {noun}" + ("" if value == 1 else "s")


def _total(values: list) -> float | None:
    """The sum, or None when a part is unknown (never a partial total)."""
    return None if any(v is None for v in values) else sum(values)


def cluster_lines(inputs: ReviewInputs) -> list[str]:
    """Per cluster: capacity, used GPU-hours and utilization, idle GPU-hours and cost."""
    currency = inputs.settings.currency
    used = inputs.this_month(inputs.clusters).select("cluster", "allocated_gpu_hours")
    lines = []
    for row in headline_frame(inputs, inputs.month).join(used, on="cluster", how="left").iter_rows(named=True):
        idle_cost = _total([row["workload_idle_cost"], row["infra_idle_cost"]])
        lines += [
            f"Cluster {one_line(row['cluster'])}",
            f"  Capacity:     {fmt_hours(row['capacity_gpu_hours'])} GPU-hours",
            f"  Used:         {fmt_hours(row['allocated_gpu_hours'])} GPU-hours "
            f"({fmt_pct(row['allocated_share'])} of capacity allocated to jobs)",
            f"  Utilization:  {fmt_pct(row['active_share'])} of the allocated GPU-hours were active",
            f"  Idle cost:    {_money(idle_cost, currency)} in all",
            f"                {_money(row['workload_idle_cost'], currency)} for "
            f"{fmt_hours(row['workload_idle_gpu_hours'])} GPU-hours allocated to jobs but idle",
            f"                {_money(row['infra_idle_cost'], currency)} for "
            f"{fmt_hours(row['infra_idle_gpu_hours'])} GPU-hours no job allocated",
            f"  Jobs:         {fmt_int(row['job_count'])}",
            "",
        ]
    return lines or ["No cluster has rows for this month.", ""]


def flagged_lines(inputs: ReviewInputs, top: int = TOP_JOBS) -> list[str]:
    """The ``top`` flagged job runs by wasted GPU-hours, each with its reasons in words."""
    runs = flagged_runs(inputs.flags)
    if runs.is_empty():
        return ["No job was flagged this month.", ""]
    currency = inputs.settings.currency
    shown = min(top, runs.height)
    lines = [
        f"Flagged job runs: {runs.height}. {'The one' if shown == 1 else f'The {shown}'} that wasted most GPU-hours:"
    ]
    for n, row in enumerate(runs.head(top).iter_rows(named=True), 1):
        reasons = "; ".join(_SUMMARY.get(code, code) for code in row["reasons"].split(", "))
        where = f" on {one_line(row['cluster'])}" if inputs.multi_cluster else ""
        lines += [
            f"{n}. Job {one_line(row['job_id'], 40)}{where} ({one_line(row['job_name'], 40)}), "
            f"user {one_line(row['user_name'], 30)}, department {one_line(row['department'], 30)}",
            f"   {fmt_hours(row['wasted_gpu_hours'])} GPU-hours wasted of {fmt_hours(row['gpu_hours'])}, "
            f"idle cost {_money(row['idle_cost'], currency)}",
            f"   Why: {one_line(reasons, 200)} ({one_line(row['reasons'], 80)})",
            f"   What to do: {one_line(row['recommendations'], 240)}",
        ]
    return [*lines, ""]


def review_body(inputs: ReviewInputs, where: str) -> str:
    """Operations' mail: every cluster's month and the top flagged jobs; ``where``: a sentence
    saying where the full review is (attached, or its link)."""
    head = [f"GPU review for {inputs.month:%Y-%m}", ""]
    return "\n".join([*head, *cluster_lines(inputs), *flagged_lines(inputs), where, ""])


def department_lines(mine: ReviewInputs) -> list[str]:
    currency = mine.settings.currency
    rows = department_rows(mine)
    lines = []
    for row in rows.iter_rows(named=True):
        lines += [
            f"Cluster {one_line(row['cluster'])}",
            f"  Used:         {fmt_hours(row['gpu_hours'])} GPU-hours by {_count(row['job_count'], 'job')} "
            f"of {_count(row['user_count'], 'user')} ({fmt_pct(row['share_of_capacity'])} of the cluster's capacity)",
            f"  Utilization:  {fmt_pct(row['utilization'])} of the measured GPU-hours were active",
            f"  Idle:         {fmt_hours(row['idle_gpu_hours'])} GPU-hours allocated but idle, "
            f"idle cost {_money(row['idle_cost'], currency)}",
            "",
        ]
    return lines or ["The department ran no jobs this month.", ""]


def department_body(inputs: ReviewInputs, department: str, where: str) -> str:
    """A department's managers' mail: their department only."""
    mine = narrow(inputs, department)
    head = [f"GPU use of {one_line(department)} in {inputs.month:%Y-%m}", ""]
    return "\n".join([*head, *department_lines(mine), *flagged_lines(mine), where, ""])


def finance_body(month: str, files: list[str], where: str) -> str:
    """Finance's mail: which files, and where they are."""
    listed = [f"  - {one_line(name, 120)}" for name in files] or ["  (no files were written for this month)"]
    return "\n".join(
        [
            f"GPU chargeback files for {month}",
            "",
            "The month's chargeback export (FOCUS 1.2), its per-job charges and the flagged job detail:",
            *listed,
            "",
            where,
            "",
        ]
    )
