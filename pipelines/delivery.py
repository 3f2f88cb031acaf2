"""The month's delivery, shared by ``cardhours deliver`` and the monthly build's delivery step:
read the month's marts as the review does, plan the messages, send what the ledger
(meta.deliveries) has not recorded, and record each as it is accepted."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path

import duckdb

from config import Config
from pipelines.assets.reports import read_review_frames, review_settings
from reports import build_inputs
from reports.data import ReviewInputs
from reports.delivery import Outcome, Sent, deliver
from reports.delivery_mail import Outgoing, plan_month
from warehouse.deliveries import Delivery, record, sent

UNUSED = ("reconciliation", "focus", "kube_queues", "closed")  # review frames the mail bodies do not read


def month_inputs(conn: duckdb.DuckDBPyConnection, config: Config, month: date, generated_from: str) -> ReviewInputs:
    """The review's inputs of ``month``, from the marts (as the review asset reads them)."""
    frames = read_review_frames(conn, month)
    for name in UNUSED:
        frames.pop(name)
    return build_inputs(month, generated_from, settings=review_settings(config, month), **frames)


def deliver_month(
    conn: duckdb.DuckDBPyConnection,
    config: Config,
    month: date,
    generated_from: str,
    *,
    resend: bool = False,
    dry_run: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Outcome:
    """Deliver ``month`` as ``[delivery]`` says (``DeliveryFailed`` naming what was not sent)."""
    if config.delivery is None or config.smtp is None:
        raise ValueError("no [delivery] section in the config: nothing to deliver")
    inputs = month_inputs(conn, config, month, generated_from)
    planned = plan_month(config.delivery, inputs, Path(config.reports.dir) / f"{month:%Y-%m}")
    before = {key: Sent(row.sent_at, row.digest) for key, row in sent(conn, month).items()}

    def recorded(message: Outgoing, at: datetime) -> None:
        record(conn, Delivery(month, message.audience, message.recipient, message.subject, message.digest, at))

    return deliver(
        planned,
        config.smtp,
        os.environ if env is None else env,
        before,
        recorded,
        resend=resend,
        dry_run=dry_run,
    )
