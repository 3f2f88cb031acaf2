"""The steps ``cardhours notify-users`` shares between a dry run and a send: the policy with its
files read, the month's notices and skips with their messages, and the ledger writer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import date

import duckdb
import typer

from cardhours.cli_support import console, out
from config import Config, NoticesConfig
from config.notice_files import NoticeFileError, read_addresses, read_opt_out
from reports.user_notice_select import SKIPS, Notice, Policy, Skipped, select_notices
from warehouse.user_notices import month_built, month_flags, read_ledger, record_notice


def policy_of(notices: NoticesConfig, failed: Callable[[str], typer.Exit]) -> Policy:
    """``[notices]`` with its address and opt-out files read; a bad file exits naming its line."""
    try:
        addresses = read_addresses(notices.addresses_file) if notices.addresses_file else {}
        opt_out = read_opt_out(notices.opt_out_file) if notices.opt_out_file else set()
    except NoticeFileError as error:
        raise failed(str(error)) from None
    return Policy(addresses, notices.domain, frozenset(opt_out) | frozenset(notices.opt_out), notices.period_days,
                  notices.min_wasted_gpu_hours, notices.max_jobs)  # fmt: skip


def prepare(
    conn: duckdb.DuckDBPyConnection,
    settings: Config,
    policy: Policy,
    month: date,
    sender: str,
    unbuilt: Callable[[date, Config], typer.Exit],
) -> tuple[list, list[Skipped]]:
    """The month's (notice, message) pairs and the skipped users."""
    from pipelines.landing import utc_now
    from reports.user_notice_mail import notice_message

    if not month_built(conn, month):
        raise unbuilt(month, settings)
    flags = month_flags(conn, month)
    out.print(f"{month:%Y-%m}: {flags.height} flag(s) of {flags['user_name'].n_unique()} user(s) "
              f"in {settings.warehouse.path}", highlight=False, markup=False)  # fmt: skip
    notices, skipped = select_notices(flags, read_ledger(conn), policy, month, utc_now())
    contact = settings.notices.contact if settings.notices else None
    return [(notice, notice_message(sender, notice, contact)) for notice in notices], skipped


def print_skipped(skipped: list[Skipped]) -> None:
    counts = Counter(s.skip for s in skipped)
    if counts:
        out.print("skipped: " + ", ".join(f"{counts[k]} {k.replace('_', ' ')}" for k in SKIPS if counts[k]),
                  highlight=False, markup=False)  # fmt: skip
    for s in skipped:
        console.print(f"  {s.user}: {s.why}", highlight=False, markup=False)


def recorder(conn: duckdb.DuckDBPyConnection, month: date) -> Callable[[Notice, object], None]:
    """Records a sent notice in meta.user_notices, at the time it was accepted."""
    from pipelines.landing import utc_now

    def record(notice: Notice, message) -> None:
        jobs = [f"{job.cluster}:{job.job_id}" for job in notice.jobs]
        body = message.get_content()
        record_notice(conn, notice.user, month, utc_now(), notice.address, jobs, notice.wasted_gpu_hours, body)

    return record
