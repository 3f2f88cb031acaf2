"""The steps every sender of user notices shares (``cardhours notify-users`` and the monthly asset):
``[notices]`` with its files read, the month's notices and skips as messages, and the ledger writer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from email.message import EmailMessage

import duckdb

from config import NoticesConfig
from config.notice_files import read_addresses, read_opt_out
from reports.user_notice_mail import notice_message
from reports.user_notice_select import Notice, Policy, Skipped, select_notices
from warehouse.user_notices import month_flags, read_ledger, record_notice


@dataclass(frozen=True)
class Prepared:
    flags: int  # the month's flag rows
    users: int  # users with flagged runs (runs without a user count as one)
    messages: list[tuple[Notice, EmailMessage]]
    skipped: list[Skipped]


def policy_of(notices: NoticesConfig) -> Policy:
    """``[notices]`` with its address and opt-out files read (``NoticeFileError`` naming a bad line)."""
    addresses = read_addresses(notices.addresses_file) if notices.addresses_file else {}
    opt_out = read_opt_out(notices.opt_out_file) if notices.opt_out_file else set()
    return Policy(addresses, notices.domain, frozenset(opt_out) | frozenset(notices.opt_out), notices.period_days,
                  notices.min_wasted_gpu_hours, notices.max_jobs)  # fmt: skip


def prepare(
    conn: duckdb.DuckDBPyConnection, notices: NoticesConfig, sender: str, month: date, now: datetime
) -> Prepared:
    """The month's (notice, message) pairs from ``sender`` and the skipped users, as of ``now``."""
    flags = month_flags(conn, month)
    chosen, skipped = select_notices(flags, read_ledger(conn), policy_of(notices), month, now)
    messages = [(notice, notice_message(sender, notice, notices.contact)) for notice in chosen]
    return Prepared(flags.height, len(chosen) + len(skipped), messages, skipped)


def recorder(
    conn: duckdb.DuckDBPyConnection, month: date, clock: Callable[[], datetime]
) -> Callable[[Notice, EmailMessage], None]:
    """Records a sent notice in meta.user_notices at ``clock()``, when the relay accepted it."""

    def record(notice: Notice, message: EmailMessage) -> None:
        jobs = [f"{job.cluster}:{job.job_id}" for job in notice.jobs]
        body = message.get_content()
        record_notice(conn, notice.user, month, clock(), notice.address, jobs, notice.wasted_gpu_hours, body)

    return record
