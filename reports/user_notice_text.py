"""A notice's subject and plain-text body, in words a user acts on (pure).

The body names the month, the total wasted GPU-hours (and their cost at list prices when every
run has a price), then each listed job: id, cluster, name, when it ran, GPUs and GPU-hours, what
it wasted, and each flag reason with its evidence and recommendation (marts.fct_job_flags, whose
texts come from contracts/flags.py). It ends with how to opt out.
"""

from __future__ import annotations

import textwrap
from datetime import datetime

from reports.user_notice_select import FlaggedJob, Notice

WIDTH = 76


def notice_subject(notice: Notice) -> str:
    return f"[cardhours] Your GPU jobs in {notice.month:%B %Y}: {notice.wasted_gpu_hours:,.0f} GPU-hours unused"


def notice_body(notice: Notice, contact: str | None) -> str:
    lines = [
        f"Hello {notice.user},",
        "",
        f"In {notice.month:%B %Y}, {len(notice.jobs) + notice.more_jobs} of your GPU jobs held GPUs "
        f"that did little or no work: {notice.wasted_gpu_hours:,.1f} GPU-hours"
        f"{_cost(notice.wasted_cost, notice.currency)} "
        "that other users could have had.",
        "Below is what each job wasted, why, and what to change next time.",
    ]
    for number, job in enumerate(notice.jobs, start=1):
        lines += ["", *_job_lines(number, job, notice.currency)]
    if notice.more_jobs:
        plural = "s" if notice.more_jobs > 1 else ""
        lines += ["", f"{notice.more_jobs} more flagged job{plural} not listed here wasted less than those above."]
    lines += ["", *_footer(contact)]
    return "\n".join(_wrap(line) for line in lines) + "\n"


def _wrap(line: str) -> str:
    """A line folded at WIDTH, its continuation indented under its text (after a "Why: " label)."""
    body = line.lstrip()
    label = next((x for x in ("Why: ", "What to do: ", "Wasted: ") if body.startswith(x)), "")
    indent = " " * (len(line) - len(body) + len(label))
    return textwrap.fill(line, WIDTH, subsequent_indent=indent, break_on_hyphens=False) if line else line


def _job_lines(number: int, job: FlaggedJob, currency: str | None) -> list[str]:
    name = f" ({job.job_name})" if job.job_name else ""
    lines = [
        f"{number}. Job {job.job_id}{name} on cluster {job.cluster}",
        f"   Ran {_when(job.start_time, job.end_time)}",
        f"   {_gpus(job.gpus, job.gpu_model)}, {job.gpu_hours:,.1f} GPU-hours, "
        f"busy {_share(job.utilization)} of the time",
        f"   Wasted: {job.wasted_gpu_hours:,.1f} GPU-hours{_cost(job.wasted_cost, currency)}",
    ]
    for reason in job.reasons:
        lines.append(
            f"   Why: {reason.summary[:1].upper()}{reason.summary[1:]} ({reason.code}). {reason.detail}".rstrip()
        )
        lines.append(f"   What to do: {reason.recommendation}")
    return lines


def _footer(contact: str | None) -> list[str]:
    ask = f"write to {contact}" if contact else "reply to your cluster's support team"
    return [
        "This notice is sent at most once a period, only when the waste is worth a message.",
        f"Questions, or you do not want these notices: {ask}.",
        "-- cardhours, GPU usage reports",
    ]


def _when(start: datetime | None, end: datetime | None) -> str:
    if start is None:
        return "at an unknown time"
    if end is None:
        return f"from {start:%Y-%m-%d %H:%M} UTC (still running)"
    return f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"


def _gpus(gpus: float, model: str | None) -> str:
    """``8 GPUs H100``; a MIG slice (a fraction of a GPU) by its model and profile alone."""
    if gpus < 1 and model:
        return f"a {model} slice"
    count = f"{gpus:g} GPU" + ("" if gpus == 1 else "s")
    return f"{count} {model}" if model else count


def _share(value: float | None) -> str:
    return "an unknown share" if value is None else f"{value:.0%}"


def _cost(cost: float | None, currency: str | None) -> str:
    return f" (about {cost:,.2f} {currency} at list prices)" if cost and currency else ""
