"""``cardhours config check --online``: ask each configured Prometheus how long it keeps samples,
and warn when the oldest month the site may still correct reaches back before that.

The oldest month a site may still correct is the oldest month with landed days that is not
closed (``cardhours close``); with nothing landed yet, the previous month (the next one a run
builds). Days of it older than the server's retention cannot be read again: their landed rows
are the only copy, which is why ``cardhours run`` never re-reads a landed day unless told to.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

import duckdb

from config import Config
from pipelines.store import open_lake, open_warehouse
from sources.prometheus.client import PrometheusClient, PrometheusQueryError
from sources.prometheus.retention import Retention, server_retention
from warehouse.books.ledger import closed_months
from warehouse.connection import read_frame
from warehouse.landings import OK


@dataclass(frozen=True)
class OnlineLine:
    text: str
    level: str  # "ok", "warning" or "error"


def online_lines(config: Config, now: datetime) -> list[OnlineLine]:
    """One or two lines per cluster that reads Prometheus: its retention, and a warning or error."""
    oldest, why = oldest_open_month(config, now.date())
    lines = []
    for cluster in config.clusters:
        if cluster.prometheus is None:
            continue
        client = PrometheusClient.from_config(cluster.prometheus.model_copy(update={"max_retries": 1}))
        try:
            retention = server_retention(client)
        except PrometheusQueryError as error:
            lines.append(OnlineLine(f"cluster {cluster.name!r}: retention unknown: {error}", "error"))
            continue
        finally:
            client.close()
        lines += _judged(cluster.name, client.url, retention, oldest, why, now)
    return lines


def _judged(cluster: str, url: str, retention: Retention, oldest: date, why: str, now: datetime) -> list[OnlineLine]:
    head = f"cluster {cluster!r}: {url} keeps {retention.stated} ({retention.where})"
    if retention.keeps is None:
        return [OnlineLine(f"{head}: no time limit stated, only size", "ok")]
    horizon = now - retention.keeps
    start = datetime.combine(oldest, datetime.min.time())
    if start >= horizon:
        return [OnlineLine(f"{head}: samples since {horizon:%Y-%m-%d %H:%M} UTC cover {oldest:%Y-%m} ({why})", "ok")]
    return [
        OnlineLine(head, "ok"),
        OnlineLine(
            f"cluster {cluster!r}: {oldest:%Y-%m} ({why}) starts before {horizon:%Y-%m-%d %H:%M} UTC, the oldest "
            f"sample the server keeps: its days before that cannot be read again. Their landed rows are kept "
            f"(cardhours run reads only days not landed); do not --reingest them, or raise the server's retention "
            f"above {(now - start).days + 1} days.",
            "warning",
        ),
    ]


def oldest_open_month(config: Config, today: date) -> tuple[date, str]:
    """The oldest month with landed days that is not closed, and why it is the one."""
    conn = open_lake(config)
    try:
        landed = read_frame(
            conn, "SELECT DISTINCT date_trunc('month', day)::DATE AS month FROM meta.landings WHERE status = ?", [OK]
        )["month"].to_list()
    finally:
        conn.close()
    closed = _closed(config)
    open_months = sorted(month for month in landed if month not in closed)
    if open_months:
        return open_months[0], "the oldest landed month not closed"
    previous = (today.replace(day=1) - timedelta(days=1)).replace(day=1)
    return previous, "nothing open has landed: the next month to build"


def _closed(config: Config) -> set[date]:
    if not config.warehouse.path.is_file():
        return set()
    try:
        conn = open_warehouse(config, read_only=True)
    except duckdb.IOException:
        return set()  # a monthly run holds the file: count every landed month as open (warns more, never less)
    try:
        return set(closed_months(conn))
    finally:
        conn.close()
