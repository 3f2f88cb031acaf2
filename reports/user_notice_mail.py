"""Notices as e-mail: the message, the dry run's files, and sending through ``[smtp]``.

A dry run writes ``<dir>/<user>.eml`` per notice (RFC 5322, opens in a mail client) and
``<dir>/summary.csv``: one line per user with flagged jobs, ``outcome`` ``notice`` or
``skipped``, the skip (reports/user_notice_select.py SKIPS) and why, the jobs and wasted GPU-hours,
the file. Sending goes one user at a time: a relay refusing one message is reported and the
others still go; ``record`` is called for each message the relay accepted.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Mapping, Sequence
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path

import polars as pl

from config import SmtpConfig
from reports.atomic import write_atomic
from reports.csv_guard import guard_text_columns
from reports.mail import MailError, send
from reports.user_notice_select import Notice, Skipped
from reports.user_notice_text import notice_body, notice_subject

DRY_RUN_FROM = "cardhours@localhost"  # the sender in a dry run without [smtp]
SUMMARY = "summary.csv"
SUMMARY_SCHEMA = {
    "user": pl.String,
    "outcome": pl.String,  # "notice" or "skipped"
    "skip": pl.String,
    "why": pl.String,
    "address": pl.String,
    "jobs": pl.Int64,
    "wasted_gpu_hours": pl.Float64,
    "file": pl.String,
}


def notice_message(from_address: str, notice: Notice, contact: str | None) -> EmailMessage:
    message = EmailMessage()
    message["From"] = Address(addr_spec=from_address)
    message["To"] = Address(addr_spec=notice.address)  # one address, parsed: never a group or a list
    message["Subject"] = notice_subject(notice)
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = make_msgid(domain=from_address.rsplit("@", 1)[1])
    message["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation replies
    if contact:
        message["Reply-To"] = Address(addr_spec=contact)
    message.set_content(notice_body(notice, contact))
    return message


def file_name(user: str, taken: set[str]) -> str:
    """``<user>.eml`` with characters outside ``A-Za-z0-9._-`` as ``_``, unique in ``taken``."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", user).lstrip(".") or "user"
    name, n = f"{base}.eml", 1
    while name in taken:
        n += 1
        name = f"{base}-{n}.eml"
    taken.add(name)
    return name


def write_dry_run(directory: Path, messages: Sequence[tuple[Notice, EmailMessage]], skipped: Sequence[Skipped]) -> Path:
    """Each message as a .eml file and the summary; returns the summary's path."""
    directory.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    rows = []
    for notice, message in messages:
        name = file_name(notice.user, taken)
        write_atomic(message.as_string(), directory / name)
        jobs = len(notice.jobs) + notice.more_jobs
        rows.append((notice.user, "notice", "", "", notice.address, jobs, notice.wasted_gpu_hours, name))
    rows += [(s.user, "skipped", s.skip, s.why, "", s.jobs, s.wasted_gpu_hours, "") for s in skipped]
    return write_atomic(_csv(sorted(rows, key=lambda r: (r[1], r[0]))), directory / SUMMARY)


def _csv(rows: list[tuple]) -> str:
    """The summary's text; user names pass the spreadsheet formula guard (reports/csv_guard.py)."""
    frame = guard_text_columns(pl.DataFrame(rows, schema=SUMMARY_SCHEMA, orient="row"))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SUMMARY_SCHEMA)
    for row in frame.iter_rows():
        writer.writerow(f"{value:.3f}" if isinstance(value, float) else value for value in row)
    return buffer.getvalue()


def send_notices(
    smtp: SmtpConfig,
    env: Mapping[str, str],
    messages: Sequence[tuple[Notice, EmailMessage]],
    record: Callable[[Notice, EmailMessage], None],
    progress: Callable[[str], None],
) -> list[str]:
    """Send each message, ``record`` the accepted ones; the failures' texts, one per user."""
    failures: list[str] = []
    for number, (notice, message) in enumerate(messages, start=1):
        try:
            send(smtp, message, env)
        except MailError as error:
            failures.append(f"{notice.user} <{notice.address}>: {error}")
            progress(f"{number}/{len(messages)} {notice.user}: NOT sent ({error})")
            continue
        record(notice, message)
        progress(f"{number}/{len(messages)} {notice.user}: sent to {notice.address}")
    return failures
