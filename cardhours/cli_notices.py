"""``cardhours notify-users``: tell users about their own wasted GPU time (docs/reports.md, "Notices to users").

The month's flagged jobs (marts.fct_job_flags) become one notice per user (reports/user_notice_*).
``--dry-run DIR`` writes the messages and a summary to DIR and sends nothing (the warehouse is
read read-only, ``[smtp]`` and ``enabled`` are not needed). Without it, each notice goes through
``[smtp]`` and is recorded in meta.user_notices, which the rate limit reads; the warehouse lock is
held meanwhile.
"""

from __future__ import annotations

import os
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Annotated

import duckdb
import typer

from cardhours.cli_support import (
    BUSY_EXIT,
    console,
    fail,
    load_or_exit,
    locked,
    month_option,
    opened,
    out,
    require_warehouse,
)
from config import Config, NoticesConfig

DONT = "no notices"


def notify_users(
    month: Annotated[str, typer.Option(help="The month whose flagged jobs to tell, YYYY-MM.", callback=month_option)],
    config: Annotated[Path, typer.Option("--config", help="The TOML config file.")],
    dry_run: Annotated[
        Path | None, typer.Option("--dry-run", help="Write each message to DIR as .eml, and a summary; send nothing.")
    ] = None,
) -> None:
    """Mail each user with flagged jobs in the month what they wasted, why and what to do (the
    config's notices section). Users opted out, without an address, notified within period_days
    or below min_wasted_gpu_hours are skipped and listed with the reason. Exit 1 when a message
    could not be sent, 2 on a bad config or address file, 75 while the warehouse is written."""
    settings = load_or_exit(config)
    notices = _notices(settings, config, dry_run is not None)
    from config.notice_files import NoticeFileError
    from reports.user_notice_run import policy_of

    try:
        policy_of(notices)  # the files, before the warehouse is opened
    except NoticeFileError as error:
        raise fail(DONT, str(error), 2) from None
    first = date.fromisoformat(month + "-01")
    if dry_run is not None:
        with _read_only(settings) as conn:
            _dry_run(conn, settings, first, dry_run)
        return
    with locked(settings.warehouse.path, "cardhours notify-users", DONT), opened(settings, DONT) as conn:
        _send(conn, settings, first)


def _notices(settings: Config, config: Path, dry_run: bool) -> NoticesConfig:
    if settings.notices is None:
        raise fail(DONT, f"{config} has no [notices] section: add one (docs/reports.md, 'Notices to users')", 2)
    if not dry_run and not settings.notices.enabled:
        raise fail(DONT, f"[notices] enabled is false in {config}: set enabled = true to send, "
                   "or review the messages first with --dry-run DIR", 2)  # fmt: skip
    return settings.notices


def _read_only(settings: Config) -> duckdb.DuckDBPyConnection:
    from warehouse import connect
    from warehouse.lock import busy_holder

    path = settings.warehouse.path
    require_warehouse(path, DONT)
    busy = busy_holder(path)
    if busy is not None:
        raise fail(DONT, f"{busy} (a dry run reads the warehouse when nothing writes it)", BUSY_EXIT)
    try:
        return connect(path, read_only=True)
    except duckdb.IOException as exc:
        raise fail(DONT, f"warehouse {path} is open for writing by another program; try again when it is done: "
                   f"{str(exc).splitlines()[0]}", BUSY_EXIT) from exc  # fmt: skip


def _dry_run(conn, settings: Config, month: date, directory: Path) -> None:
    from reports.user_notice_mail import DRY_RUN_FROM, write_dry_run

    sender = settings.smtp.from_address if settings.smtp else DRY_RUN_FROM
    messages, skipped = _prepare(conn, settings, month, sender)
    summary = write_dry_run(directory, messages, skipped)
    for notice, _ in messages:
        out.print(f"would notify {notice.user} <{notice.address}>: {len(notice.jobs) + notice.more_jobs} job(s), "
                  f"{notice.wasted_gpu_hours:.1f} GPU-hours", highlight=False, markup=False)  # fmt: skip
    _print_skipped(skipped)
    out.print(f"dry run: {len(messages)} message(s) written to {directory}, summary {summary}; nothing sent",
              highlight=False, markup=False)  # fmt: skip


def _send(conn, settings: Config, month: date) -> None:
    from pipelines.landing import utc_now
    from reports.user_notice_mail import send_notices
    from reports.user_notice_run import recorder

    assert settings.smtp is not None  # config/checks.py: enabled notices need [smtp]
    messages, skipped = _prepare(conn, settings, month, settings.smtp.from_address)
    _print_skipped(skipped)

    def progress(line: str) -> None:
        out.print(line, highlight=False, markup=False)

    failures = send_notices(settings.smtp, os.environ, messages, recorder(conn, month, utc_now), progress)
    sent = len(messages) - len(failures)
    out.print(f"{sent} notice(s) sent for {month:%Y-%m} through {settings.smtp.host}:{settings.smtp.port}, "
              f"recorded in meta.user_notices of {settings.warehouse.path}", highlight=False, markup=False)  # fmt: skip
    if failures:
        raise fail(DONT, f"{len(failures)} notice(s) not sent (run again to retry them; the sent ones are "
                   "recorded and not sent twice):\n" + "\n".join(failures))  # fmt: skip


def _prepare(conn, settings: Config, month: date, sender: str) -> tuple[list, list]:
    from pipelines.landing import utc_now
    from reports.user_notice_run import prepare
    from warehouse.user_notices import month_built

    if not month_built(conn, month):
        raise fail(DONT, f"month {month:%Y-%m} is not built in {settings.warehouse.path}: run it first "
                   f"(cardhours run --month {month:%Y-%m})")  # fmt: skip
    assert settings.notices is not None
    prepared = prepare(conn, settings.notices, sender, month, utc_now())
    out.print(f"{month:%Y-%m}: {prepared.flags} flag(s) of {prepared.users} user(s) in {settings.warehouse.path}",
              highlight=False, markup=False)  # fmt: skip
    return prepared.messages, prepared.skipped


def _print_skipped(skipped: list) -> None:
    from reports.user_notice_select import SKIPS

    counts = Counter(s.skip for s in skipped)
    if counts:
        out.print("skipped: " + ", ".join(f"{counts[k]} {k.replace('_', ' ')}" for k in SKIPS if counts[k]),
                  highlight=False, markup=False)  # fmt: skip
    for s in skipped:
        console.print(f"  {s.user}: {s.why}", highlight=False, markup=False)
