"""The words of an alert: a subject a person can triage from an inbox, and a short plain body.

Built from plain values (the Dagster side extracts them), so the wording is tested without a
run: which job and partition failed, which step, the first line of its error, and what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

PRODUCT = "cardhours"


@dataclass(frozen=True)
class Alert:
    subject: str
    body: str

    @property
    def text(self) -> str:
        """Subject and body as one text, for a chat message."""
        return f"{self.subject}\n{self.body}"


@dataclass(frozen=True)
class FailedStep:
    step: str
    error: str  # the first line of the error that stopped it


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, trimmed to 1,000 characters (a source's error names the
    cluster, the source and the day before the file and what to do; the subject is cut shorter)."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "(no error text)")
    return line if len(line) <= 1000 else line[:997] + "..."


def run_failure(
    job: str, run_id: str, partition: str | None, steps: Sequence[FailedStep], run_error: str, run_url: str | None
) -> Alert:
    """A failed Dagster run: the job, the partition, each failed step with its first error line."""
    where = f"{job} {partition}" if partition else job
    first = steps[0] if steps else None
    subject = f"[{PRODUCT}] FAILED {where}" + (f": {first.step}: {first.error}" if first else f": {run_error}")
    lines = [f"The run {run_id} of {job} failed.", f"Partition: {partition or '(none)'}", ""]
    if steps:
        lines.append("Failed steps:")
        lines += [f"  {step.step}: {step.error}" for step in steps]
    else:
        lines.append(f"The run failed outside its steps: {run_error}")
    lines += ["", "Open the run for the full logs" + (f": {run_url}" if run_url else f" (run id {run_id})") + "."]
    lines.append("Fix the cause, then re-execute the run from the UI, or rerun the partition.")
    return Alert(subject[:250], "\n".join(lines) + "\n")


class StaleSource(Protocol):
    """A cluster's source without a recent successful landing (warehouse/books/landings.py ``Stale``)."""

    @property
    def cluster(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def newest(self) -> datetime | None: ...


def stale_landings(stale: Sequence[StaleSource], hours: int, now: datetime) -> Alert:
    """Clusters whose daily ingest has not landed a source successfully for ``hours``."""
    clusters = sorted({item.cluster for item in stale})
    subject = f"[{PRODUCT}] no successful daily ingest for {hours} h: {', '.join(clusters)}"
    lines = [f"As of {now:%Y-%m-%d %H:%M} UTC, these sources have not landed a day successfully for {hours} hours:"]
    for item in stale:
        when = f"last landed {item.newest:%Y-%m-%d %H:%M} UTC" if item.newest else "never landed"
        lines.append(f"  cluster {item.cluster!r}, {item.source}: {when}")
    lines += [
        "",
        "Check that dagster-daemon runs and that the daily_ingest schedule is on, then look at the",
        "latest daily_ingest runs of these days for their errors.",
    ]
    return Alert(subject[:250], "\n".join(lines) + "\n")
