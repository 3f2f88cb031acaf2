"""Who gets a notice about a month's flagged jobs, and who does not and why (pure: frames and the clock in).

``select_notices(flags, ledger, policy, month, as_of)``: ``flags`` are the month's
marts.fct_job_flags rows (one per run and reason) with the run's ``end_time``; ``ledger`` the
rows of meta.user_notices (``user_name, month, sent_at``). Each user with flagged runs either
gets a ``Notice`` (their runs, most wasteful first, at most ``max_jobs`` listed) or is
``Skipped`` with one of ``SKIPS``, checked in that order. A run wastes the most of its
reasons' ``wasted_gpu_hours`` (they overlap: an idle GPU is idle once); its cost is that many
GPU-hours at the list price the flags priced its idle hours with (``idle_cost / idle_gpu_hours``),
none when the model has no price.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import polars as pl

from config.alerts import ATEXT_WORDS, is_address, is_dot_atom
from contracts.flags import REASON_RANK, SEVERITY_RANK, flag_reason

NO_USER = "(no user)"  # runs without a user name (Kubernetes records none)
SKIPS = {  # why a user gets no notice, in the order they are checked
    "no_user": "the runs have no user name (Kubernetes records none)",
    "opted_out": "opted out ([notices] opt_out or opt_out_file)",
    "below_threshold": "wasted less than [notices] min_wasted_gpu_hours",
    "already_notified": "already notified about this month (meta.user_notices)",
    "rate_limited": "notified within [notices] period_days",
    "unsafe_user_name": "the user name cannot be an address's local part with [notices] domain",
    "no_address": "no address: not in [notices] addresses_file, and no domain (or it makes no address of the name)",
}
RUN = ["cluster", "job_id_raw", "start_time"]


@dataclass(frozen=True)
class Policy:
    """What ``[notices]`` decides, with its files read (config/notice_files.py)."""

    addresses: Mapping[str, str]
    domain: str | None
    opt_out: frozenset[str]
    period_days: int
    min_wasted_gpu_hours: float
    max_jobs: int


@dataclass(frozen=True)
class Reason:
    code: str
    severity: str
    summary: str  # contracts/flags.py: what the code means
    detail: str  # the measured evidence
    recommendation: str


@dataclass(frozen=True)
class FlaggedJob:
    cluster: str
    job_id: str
    job_name: str | None
    start_time: datetime | None
    end_time: datetime | None
    gpus: float
    gpu_model: str | None
    gpu_hours: float
    utilization: float | None
    wasted_gpu_hours: float
    wasted_cost: float | None
    reasons: tuple[Reason, ...]


@dataclass(frozen=True)
class Notice:
    user: str
    address: str
    month: date
    jobs: tuple[FlaggedJob, ...]  # the listed ones, most wasteful first
    more_jobs: int  # flagged runs not listed (beyond max_jobs)
    wasted_gpu_hours: float  # all the user's flagged runs
    wasted_cost: float | None  # all of them; None when a run has no price
    currency: str | None


@dataclass(frozen=True)
class Skipped:
    user: str
    skip: str  # a key of SKIPS
    why: str
    jobs: int
    wasted_gpu_hours: float


def select_notices(
    flags: pl.DataFrame, ledger: pl.DataFrame, policy: Policy, month: date, as_of: datetime
) -> tuple[list[Notice], list[Skipped]]:
    """The notices to send and the users skipped, both by user name."""
    notices: list[Notice] = []
    skipped: list[Skipped] = []
    for user, jobs in _jobs_by_user(flags).items():
        wasted = sum(job.wasted_gpu_hours for job in jobs)
        why = _skip(user, wasted, ledger, policy, month, as_of)
        if why is not None:
            skipped.append(Skipped(user, why[0], why[1], len(jobs), wasted))
            continue
        costs = [job.wasted_cost for job in jobs]
        cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
        currency = flags.filter(pl.col("user_name") == user)["currency"].drop_nulls().first()
        listed = tuple(jobs[: policy.max_jobs])
        notices.append(
            Notice(user, address_of(user, policy), month, listed, len(jobs) - len(listed), wasted, cost, currency)
        )
    return notices, skipped


def address_of(user: str, policy: Policy) -> str | None:
    """The user's address: the addresses file first, else the domain pattern, else none.

    The pattern takes only a user name that is an RFC 5322 dot-atom: ``alice:bob`` in
    ``{user}@example.org`` would make a group ``alice:`` addressed to bob@example.org.
    """
    if user in policy.addresses:
        return policy.addresses[user]
    if policy.domain is None or not is_dot_atom(user):
        return None
    address = policy.domain.replace("{user}", user)
    return address if is_address(address) else None


def next_allowed(last: datetime, period_days: int) -> date:
    """The first UTC day a user told at ``last`` may be told again: whole calendar days, so the
    time of day a notice went out never holds back the next month's run."""
    return last.date() + timedelta(days=period_days)


def _skip(
    user: str, wasted: float, ledger: pl.DataFrame, policy: Policy, month: date, as_of: datetime
) -> tuple[str, str] | None:
    mine = ledger.filter(pl.col("user_name") == user)
    last = mine["sent_at"].max() if mine.height else None
    this_month = mine.filter(pl.col("month") == month)["sent_at"].max() if mine.height else None
    checks = (
        ("no_user", user == NO_USER, ""),
        ("opted_out", user in policy.opt_out, ""),
        ("below_threshold", wasted < policy.min_wasted_gpu_hours,
         f": {wasted:.1f} < {policy.min_wasted_gpu_hours:g} GPU-hours"),
        ("already_notified", this_month is not None, f": sent {this_month:%Y-%m-%d %H:%M} UTC" if this_month else ""),
        ("rate_limited", last is not None and as_of.date() < next_allowed(last, policy.period_days),
         f": last notice {last:%Y-%m-%d}, the next one from {next_allowed(last, policy.period_days):%Y-%m-%d}"
         if last else ""),
        ("unsafe_user_name", user not in policy.addresses and policy.domain is not None and not is_dot_atom(user),
         f": {user!r} is not made only of {ATEXT_WORDS}; give the user an explicit address in "
         "[notices] addresses_file"),
        ("no_address", address_of(user, policy) is None, ""),
    )  # fmt: skip
    for code, applies, extra in checks:
        if applies:
            return code, SKIPS[code] + extra
    return None


def _jobs_by_user(flags: pl.DataFrame) -> dict[str, list[FlaggedJob]]:
    ranked = flags.with_columns(
        user_name=pl.col("user_name").fill_null(NO_USER),
        _severity=pl.col("severity").replace_strict(SEVERITY_RANK, return_dtype=pl.Int32),
        _reason=pl.col("reason").replace_strict(REASON_RANK, return_dtype=pl.Int32),
    ).sort([*RUN, "_severity", "_reason"], nulls_last=False)
    by_user: dict[str, list[FlaggedJob]] = {}
    for run in ranked.partition_by(RUN, maintain_order=True):
        by_user.setdefault(run["user_name"][0], []).append(_job(run))
    for jobs in by_user.values():
        jobs.sort(key=lambda j: (-j.wasted_gpu_hours, j.cluster, j.job_id, j.start_time or datetime.min))
    return dict(sorted(by_user.items()))


def _job(run: pl.DataFrame) -> FlaggedJob:
    first = run.row(0, named=True)
    wasted = float(run["wasted_gpu_hours"].max() or 0.0)
    idle, idle_cost = first["idle_gpu_hours"], first["idle_cost"]
    cost = wasted * idle_cost / idle if idle and idle_cost is not None else (0.0 if wasted == 0 else None)
    reasons = tuple(
        Reason(r["reason"], r["severity"], flag_reason(r["reason"]).summary, r["detail"] or "", r["recommendation"])
        for r in run.iter_rows(named=True)
    )
    return FlaggedJob(first["cluster"], first["job_id"], first["job_name"], first["start_time"], first["end_time"],
                      first["gpus"], first["gpu_model"], first["gpu_hours"], first["utilization"], wasted, cost,
                      reasons)  # fmt: skip
